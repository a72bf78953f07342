"""The IDE disk image every boot attaches (issue 4: a real ATA PIO source for Table 7 and
the data-loss experiment of Small & Manley 1997, sections 6.1 and 6.4).

What is real: a raw disk image that QEMU presents as an IDE hard disk
(``-drive if=ide,file=...,format=raw,index=0,media=disk``); the kernel's ATA driver moves
its sectors with PIO (``insw``), as the paper's IDE disk did.  Nothing is modelled here.

Content, so the kernel can verify every sector it reads without a second copy: sector ``n``
(512 bytes) is the 8-byte little-endian value ``n`` repeated 64 times.  docs/protocol.md
section 5 fixes this pattern; the kernel's ATA test checks it.

Public API: ``SECTOR``, ``DEFAULT_MIB``, ``sector_bytes(n)``, ``ensure_disk(path, mib=8)``,
``check_disk(path, mib, full=False)``.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

from .util import SetupError, UsageError, display_path

SECTOR = 512
DEFAULT_MIB = 8
MAX_MIB = 4096       # LBA28 reaches 128 GiB; nothing here needs more than a few MiB
_CHUNK_SECTORS = 2048


def sector_bytes(n: int) -> bytes:
    """The 512 bytes of sector ``n``."""
    return struct.pack("<Q", n) * (SECTOR // 8)


def _check_mib(mib: int) -> int:
    if not isinstance(mib, int) or not 1 <= mib <= MAX_MIB:
        raise UsageError(f"disk size must be 1..{MAX_MIB} MiB (got {mib!r})")
    return mib


def check_disk(path: Path, mib: int = DEFAULT_MIB, full: bool = False) -> bool:
    """True if ``path`` has the right size and the pattern: every sector when ``full``,
    else sectors 0, 1, the middle one and the last one."""
    path = Path(path)
    size = _check_mib(mib) * 1024 * 1024
    sectors = size // SECTOR
    try:
        if path.stat().st_size != size:
            return False
        with open(path, "rb") as f:
            if full:
                for base in range(0, sectors, _CHUNK_SECTORS):
                    n = min(_CHUNK_SECTORS, sectors - base)
                    want = b"".join(sector_bytes(base + i) for i in range(n))
                    if f.read(n * SECTOR) != want:
                        return False
                return True
            for s in sorted({0, 1, sectors // 2, sectors - 1}):
                f.seek(s * SECTOR)
                if f.read(SECTOR) != sector_bytes(s):
                    return False
    except OSError:
        return False
    return True


def ensure_disk(path: Path, mib: int = DEFAULT_MIB, full_check: bool = False) -> bool:
    """Create ``path`` (and its directory) unless it already has the right size and pattern.

    Returns True if the image was (re)written.  The new image is written next to the old
    one and renamed over it, so a reader never sees half a disk.
    """
    path = Path(path)
    mib = _check_mib(mib)
    if check_disk(path, mib, full=full_check):
        return False
    sectors = mib * 1024 * 1024 // SECTOR
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            for base in range(0, sectors, _CHUNK_SECTORS):
                n = min(_CHUNK_SECTORS, sectors - base)
                f.write(b"".join(sector_bytes(base + i) for i in range(n)))
        os.replace(tmp, path)
    except OSError as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise SetupError(f"cannot write the disk image {display_path(path)}: "
                         f"{e.strerror or e}") from None
    return True
