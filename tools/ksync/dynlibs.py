"""Dynamically linked programs in ksync's initramfs (docs/userspace.md "Dynamic
programs"): the host's glibc loader, the shared libraries a program needs (resolved with
the host's ``ldd``) and /etc/ld.so.cache, as cpio entries at the host's own paths.

What goes in, for a set of ELF files:

- every library ``ldd`` resolves (``libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6``), as a
  regular file with the contents of the file its path names (Debian's merged /usr: /lib
  is a symlink to usr/lib on the host; the initramfs holds the /lib path the cache and
  ldd name, as a plain directory);
- the loader at its real path (/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2) and the
  PT_INTERP path /lib64/ld-linux-x86-64.so.2 as a symlink to it (as Debian's);
- /etc/ld.so.cache, the host's (names the loader does not find in the initramfs make it
  fall back to its default directories, which hold what is here).

A library ``ldd`` reports "not found" is left out (the loader on ksync then says so
itself, as on the host).

Public API: ``have_rt_tests()``, ``RT_TESTS``, ``interp_of(path)``,
``libraries(paths) -> dict[str, Path]``, ``entries(paths) -> list[Entry]``.
"""
from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

from .cpio import Entry

LOADER = "/lib64/ld-linux-x86-64.so.2"
CACHE = Path("/etc/ld.so.cache")
# Debian's rt-tests (scripts/deps.sh installs it): dynamically linked against glibc
RT_TESTS = {"hackbench": Path("/usr/bin/hackbench"), "cyclictest": Path("/usr/bin/cyclictest")}


def have_rt_tests() -> bool:
    return all(p.is_file() for p in RT_TESTS.values())


def interp_of(path: Path) -> str | None:
    """The PT_INTERP path of an ELF file, or None (static)."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF":
        return None
    phoff, phsz, phn = (int.from_bytes(data[32:40], "little"),
                        int.from_bytes(data[54:56], "little"),
                        int.from_bytes(data[56:58], "little"))
    for i in range(phn):
        ph = phoff + i * phsz
        if int.from_bytes(data[ph:ph + 4], "little") == 3:
            off = int.from_bytes(data[ph + 8:ph + 16], "little")
            sz = int.from_bytes(data[ph + 32:ph + 40], "little")
            return data[off:off + sz].rstrip(b"\0").decode()
    return None


def libraries(paths: list[Path]) -> dict[str, Path]:
    """Initramfs path (no leading /) -> host file, for every library and the loader the
    programs need (ldd's view)."""
    out: dict[str, Path] = {}
    for p in paths:
        r = subprocess.run(["ldd", str(p)], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            m = re.match(r"\s*\S+ => (/\S+) \(0x", line) or re.match(r"\s*(/\S+) \(0x", line)
            if m:
                lib = m.group(1)
                out[lib.lstrip("/")] = Path(os.path.realpath(lib))
    return out


def entries(paths: list[Path]) -> list[Entry]:
    """cpio entries for the libraries, the loader (its real path and the /lib64 link)
    and /etc/ld.so.cache."""
    libs = libraries(paths)
    es: list[Entry] = []
    loader_real = None
    for dest, src in sorted(libs.items()):
        if "/" + dest == LOADER:
            # the PT_INTERP path: a symlink to the loader under /lib/<triplet>, as Debian's
            loader_real = "lib/x86_64-linux-gnu/" + src.name
            continue
        es.append(Entry(dest, stat.S_IFREG | 0o755, src.read_bytes()))
    if loader_real is None and any(interp_of(p) == LOADER for p in paths):
        loader_real = "lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    if loader_real is not None:
        src = Path(os.path.realpath(LOADER))
        if loader_real.lstrip("/") not in libs:
            es.append(Entry(loader_real, stat.S_IFREG | 0o755, src.read_bytes()))
        es.append(Entry(LOADER.lstrip("/"), stat.S_IFLNK | 0o777, ("/" + loader_real).encode()))
    if CACHE.is_file():
        es.append(Entry("etc/ld.so.cache", stat.S_IFREG | 0o644, CACHE.read_bytes()))
    return es


def rt_tests_entries() -> list[Entry]:
    """Debian's /usr/bin/hackbench and /usr/bin/cyclictest (rt-tests), a /bin/<name> link
    to each (busybox sh's PATH is /bin:/t), their libraries, the loader and the cache:
    what ``ksync sh`` adds to busybox's initramfs. Empty when rt-tests is not installed."""
    if not have_rt_tests():
        return []
    es = entries(list(RT_TESTS.values()))
    for name, path in RT_TESTS.items():
        es.append(Entry(f"usr/bin/{name}", stat.S_IFREG | 0o755, path.read_bytes()))
        es.append(Entry(f"bin/{name}", stat.S_IFLNK | 0o777, f"/usr/bin/{name}".encode()))
    return es
