"""cpio "newc" archives: the initramfs the kernel reads as its first boot module.

Format (cpio(5), "New ASCII Format", as Linux's initramfs and gen_init_cpio write it):
each record is the magic ``070701``, thirteen 8-digit hex fields (ino, mode, uid, gid,
nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize, check), the
NUL-terminated name padded to a multiple of 4 (counting the 110-byte header), then the
data padded to 4; the archive ends with a record named ``TRAILER!!!``.

Public API: ``Entry``, ``write_newc(entries) -> bytes``, ``read_newc(data) -> list[Entry]``
(the reader is for tests and for checking what was written).
"""
from __future__ import annotations

import stat
from dataclasses import dataclass

MAGIC = b"070701"
TRAILER = "TRAILER!!!"


@dataclass
class Entry:
    name: str            # path inside the archive, without a leading "/"
    mode: int            # st_mode: type and permission bits
    data: bytes = b""


def _pad4(n: int) -> int:
    return (4 - n % 4) % 4


def _record(ino: int, name: str, mode: int, data: bytes, nlink: int = 1) -> bytes:
    nb = name.encode() + b"\0"
    fields = [ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(nb), 0]
    head = MAGIC + b"".join(b"%08x" % f for f in fields)
    out = head + nb + b"\0" * _pad4(len(head) + len(nb))
    return out + data + b"\0" * _pad4(len(data))


def write_newc(entries: list[Entry]) -> bytes:
    """The archive of ``entries`` (directories before what they hold are the caller's
    order; a missing parent directory is added before its first child)."""
    out, seen, ino = [], set(), 1
    for e in entries:
        name = e.name.strip("/")
        parts = name.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in seen:
                seen.add(d)
                out.append(_record(ino, d, stat.S_IFDIR | 0o755, b"", 2))
                ino += 1
        if name in seen:
            continue
        seen.add(name)
        out.append(_record(ino, name, e.mode, e.data, 2 if stat.S_ISDIR(e.mode) else 1))
        ino += 1
    out.append(_record(0, TRAILER, 0, b""))
    return b"".join(out)


def read_newc(data: bytes) -> list[Entry]:
    """Parse an archive; raises ValueError naming the offset of a bad record."""
    out, off = [], 0
    while True:
        if off + 110 > len(data):
            raise ValueError(f"truncated header at offset {off}")
        if data[off:off + 6] != MAGIC:
            raise ValueError(f"bad magic at offset {off}")
        f = [int(data[off + 6 + 8 * i: off + 14 + 8 * i], 16) for i in range(13)]
        mode, size, nsize = f[1], f[6], f[11]
        name_off = off + 110
        data_off = name_off + nsize + _pad4(110 + nsize)
        if data_off + size > len(data):
            raise ValueError(f"record at offset {off} runs past the end")
        name = data[name_off:name_off + nsize - 1].decode()
        if name == TRAILER:
            return out
        out.append(Entry(name, mode, data[data_off:data_off + size]))
        off = data_off + size + _pad4(size)
