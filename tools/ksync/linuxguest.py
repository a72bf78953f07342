"""Linux beside ksync: cyclictest under Debian's PREEMPT_RT and standard kernels in the
same QEMU configuration as ksync's own boot, and cyclictest on the host (issue 12, items
7 and 8: the Linux half of the lateness comparison).

Everything comes from Debian packages fetched by this module (nothing installed by hand):

- ``prepare(flavour)`` resolves ``linux-image-rt-amd64`` / ``linux-image-amd64`` to the
  versioned kernel package (its Depends in ``apt-cache show``), fetches it and the
  userland packages (``USERLAND``: rt-tests, busybox-static and the libraries cyclictest
  and hackbench load) with ``apt-get download`` into ``<cache>/debs`` (``apt-get update
  -qq`` once, as root, if a package cannot be resolved or fetched), takes
  ``/boot/vmlinuz-*`` out of the kernel package (the package's modules are not needed:
  the initramfs loads none, the console is the 8250 built into Debian's kernels) and
  builds an initramfs (cpio "newc", gzip, written here in Python: Debian 12 has no cpio
  by default) holding busybox, cyclictest, hackbench, every shared library they need
  (followed from the ELF files' DT_NEEDED entries, so a library missing from the packages
  is named), the loader, and the ``/init`` script ``INIT_SCRIPT``.  The cache under
  ``<cache>`` (default build/linux-guest) is keyed on the package versions (and on the
  init script): a second call reuses it, costing two ``apt-cache show`` calls (~1.7 s);
  versions no manifest uses are pruned.  If apt cannot resolve the packages at all
  (offline), the last image built for the flavour is reused.  Failures raise
  ``GuestMissing`` with one line naming the package or the step.
- ``run(image, qemu_args, seconds)`` boots ``qemu_args`` + ``-kernel``/``-initrd``/
  ``-append`` + the console options (``CONSOLE_OPTIONS``), streams the serial line, and
  returns cyclictest's figures as a dict (``RESULT_KEYS`` and more).  A guest that does
  not boot or does not finish gives ``ok: False`` with a one-line reason, never an
  exception.  The serial output goes to build/logs/<stamp>-linux-<flavour>.log.
- ``host_cyclictest(seconds)``: the same cyclictest options and the same load on the host
  (rt-tests from scripts/deps.sh), the same dict.
- ``ksync_qemu_base(smp, accel, icount)``: the machine/CPU/memory/SMP/accelerator options
  of ksync's own boot, taken from ``qemu.qemu_command`` itself (the options the tool owns,
  ``qemu.OWNED_OPTIONS``), plus ``-icount``; both guests get identical options.

Booting: by default ``run`` boots the kernel's ELF image (``GuestImage.vmlinux``, unpacked
from the package's bzImage by ``unpack_bzimage``) at its PVH entry, which QEMU's -kernel
loader supports: under TCG the bzImage's own xz decompressor takes ~4-5 s of every boot.
The kernel that runs is the same; what differs is that the decompressor's KASLR is not
applied.  ``boot="bzimage"`` boots the package's vmlinuz as it is.

The guest's /init reads ``kt.seconds``, ``kt.interval`` (µs), ``kt.buckets``,
``kt.spikes`` (spike nodes per CPU) and ``kt.load`` (0/1) from the kernel command line,
starts the load -- ``hackbench -l 100000 -g 2`` (80 processes passing messages through
sockets) restarted whenever it ends, and ``dd if=/dev/zero of=/dev/null bs=4M``, which
has the kernel clear a 4 MiB buffer over and over: a memory stream that evicts the caches
-- both at nice 19 (cyclictest's SCHED_FIFO threads preempt them at any nice level; at
nice 0 cyclictest's SCHED_OTHER main thread took seconds to start and to end the run),
runs ``cyclictest -m -S -p 95 -i <interval> -D <seconds> -q -h <buckets>
--spike=<buckets-1> --spike-nodes=<spikes x CPUs>`` (``cyclictest_options``; -S: one
thread per CPU, pinned) into a file, kills the load, prints the file between
``KSYNC-LINUX-STOP`` and ``KSYNC-LINUX-END`` (histogram rows whose counts are all zero
left out: the serial line is slow under TCG) and powers off (``poweroff -f``). Other
markers: ``KSYNC-LINUX-UNAME <uname -a>``, ``KSYNC-LINUX-INFO`` (guest uptime, CPUs,
/sys/kernel/realtime, clocksource), ``KSYNC-LINUX-BEGIN``, ``KSYNC-LINUX-RC <cyclictest's
exit code>``.

Percentiles come from the histogram summed over the threads: bucket ``i`` counts
latencies in ``[i, i+1)`` µs (cyclictest truncates to whole µs); pXX is the *upper edge*
``i+1`` of the first bucket where the cumulative count reaches ``ceil(XX% * samples)``.
``samples`` = histogram counts + cyclictest's overflows (latencies >= ``buckets`` µs,
counted above the last bucket).  The histogram alone censors: under TCG a tenth of the
samples passed a 2000 µs histogram, and p99 / p99.9 were only "≥ 2000".  So cyclictest
also records every sample past the histogram with its value (``--spike=<buckets - 1>``:
"record all spikes > trigger", one ``T: <thread> Spike: <us>: TS: <time>`` line each),
and ``summarize`` puts those values into ``hist_us`` (``overflow_values`` of them): the
percentiles stay exact past the histogram.  The list has room for every such sample
(``spike_nodes``: each one moves its thread's next deadline past at least buckets /
interval periods, so a thread has at most periods / (buckets / interval) of them).  Only
if it still ran out (``spikes = N`` above the lines printed) do samples remain without a
value; a percentile that falls among them is reported as ``buckets`` (a lower bound) with
``pXX_overflow`` True.  ``max_us`` is cyclictest's own maximum (exact, also above the
histogram).  ``buckets`` defaults to ``BUCKETS`` (10 ms: 40 periods of 250 µs, few spike
lines on the slow serial line).

-icount (QEMU 7.2, measured): QEMU refuses ``-icount`` with multi-threaded TCG ("No MTTCG
when icount is enabled"), so ``ksync_qemu_base(icount=...)`` selects ``-accel
tcg,thread=single``, and ``run`` rewrites ``thread=multi`` to ``thread=single`` when the
caller's arguments have both (recorded in the result's ``notes``).  With ``-smp 2`` and
any icount setting tried (shift=0/4/7/10/auto, sleep=on/off, -cpu max/Haswell/qemu64,
PVH or bzImage, rt or std) Linux 6.1 hangs bringing up CPU 1 (CPU 1 spins in cpu_init
waiting for the callout, CPU 0 loops in native_cpu_up); with ``-smp 1``, ``-icount
shift=4,align=off,sleep=on`` boots in ~6 s and runs in virtual time (host load does not
reach the figures).

CLI: ``python -m tools.ksync.linuxguest --flavour rt|std|host --seconds 5 --smp 2``
prints the result dict as JSON (``--help`` for the rest).
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import lzma
import math
import os
import re
import shutil
import stat
import struct
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable

from . import envdetect
from . import procrun
from . import qemu as qemumod
from .util import KsyncError, UsageError, find_repo

FLAVOURS = {"rt": "linux-image-rt-amd64", "std": "linux-image-amd64"}
# userland of the initramfs: the programs, and the packages of the libraries they load
# (cyclictest: libnuma.so.1, librt, libpthread, libc; hackbench: libpthread, libc; glibc
# dlopens libgcc_s.so.1 for thread cancellation, so libgcc-s1 comes too)
USERLAND = ("rt-tests", "busybox-static", "libnuma1", "libc6", "libgcc-s1")
PROGRAMS = ("usr/bin/cyclictest", "usr/bin/hackbench")
EXTRA_LIBS = ("libgcc_s.so.1",)          # dlopened, not in DT_NEEDED
BUSYBOX = "bin/busybox"
APPLETS = ("sh", "mount", "umount", "mkdir", "cat", "echo", "dd", "sleep", "uname", "kill",
           "poweroff", "sync", "nproc", "ls", "ps", "grep", "head", "tr", "true", "false",
           "taskset", "free", "dmesg", "wc", "renice")
LIB_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "lib", "usr/lib")
GUEST_LIB_DIR = "lib/x86_64-linux-gnu"
DEFAULT_CACHE = Path("build/linux-guest")
DEFAULT_LOG_DIR = Path("build/logs")
APT_TIMEOUT_S = 900

# QEMU options run() adds to the caller's: the kernel, initrd and command line, and the
# console -- the equivalent of -nographic spelled as ksync's own boot spells it (serial
# on stdio, no monitor multiplexed onto it, no display, no VGA), and -no-reboot so a
# panic or reboot ends QEMU.  No machine, CPU, memory or device options.
CONSOLE_OPTIONS = ["-display", "none", "-vga", "none", "-monitor", "none",
                   "-serial", "stdio", "-no-reboot"]
KERNEL_ARGS = "console=ttyS0 quiet"

MARK_UNAME = "KSYNC-LINUX-UNAME"
MARK_INFO = "KSYNC-LINUX-INFO"
MARK_BEGIN = "KSYNC-LINUX-BEGIN"
MARK_STOP = "KSYNC-LINUX-STOP"
MARK_RC = "KSYNC-LINUX-RC"
MARK_END = "KSYNC-LINUX-END"
PANIC_TEXT = ("Kernel panic", "BUG: kernel NULL pointer", "Attempted to kill init")
POWEROFF_GRACE_S = 15.0   # after KSYNC-LINUX-END, QEMU should exit by itself this soon
PANIC_DRAIN_S = 1.0

RESULT_KEYS = ("ok", "reason", "kernel", "flavour", "threads", "samples", "min_us", "avg_us",
               "max_us", "overflows", "hist_us", "p50_us", "p99_us", "p999_us",
               "p50_overflow", "p99_overflow", "p999_overflow", "overflow_values",
               "spikes_total", "boot_s", "wall_s", "other_qemu")
PERCENTILES = (("p50", 0.50), ("p99", 0.99), ("p999", 0.999))
BUCKETS = 10000       # cyclictest -h: 1 µs buckets up to 10 ms (40 periods of 250 µs)


def spike_nodes(seconds: float, interval_us: int, buckets: int, threads: int = 1) -> int:
    """cyclictest --spike-nodes with room for every sample past a ``buckets`` µs histogram:
    such a sample (latency >= buckets) wakes at least buckets / interval periods late, and
    cyclictest moves the thread's next deadline past all of them, so a thread has at most
    periods / (buckets // interval) such samples in ``seconds`` (+2: the run's last wakeup
    may end past its duration)."""
    periods = int(seconds * 1_000_000) // max(1, int(interval_us))
    return max(1, int(threads)) * (periods // max(1, int(buckets) // max(1, int(interval_us)))
                                   + 2)


def cyclictest_options(interval_us: int, seconds: int, buckets: int, nodes: int) -> list[str]:
    """cyclictest's options, the guest's and the host's: SCHED_FIFO 95, one pinned thread
    per CPU, memory locked, a histogram of ``buckets`` µs and every sample past it recorded
    with its value (--spike triggers on latency > buckets - 1, i.e. on the histogram's
    overflows; it must come before --spike-nodes)."""
    if int(buckets) < 2:
        raise UsageError("cyclictest histogram: at least 2 buckets (--spike=0 would be off)")
    return ["-m", "-S", "-p", "95", "-i", str(int(interval_us)), "-D", str(int(seconds)), "-q",
            "-h", str(int(buckets)), f"--spike={int(buckets) - 1}",
            f"--spike-nodes={int(nodes)}"]

# The guest's /init (busybox sh).  Parameters come from /proc/cmdline (kt.*).
INIT_SCRIPT = r"""#!/bin/sh
# ksync Linux guest (tools/ksync/linuxguest.py): cyclictest under load, then power off.
export PATH=/bin:/usr/bin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm
seconds=10 interval=250 buckets=10000 spikes=1024 load=1
for w in $(cat /proc/cmdline); do
	case "$w" in
	kt.seconds=*) seconds=${w#kt.seconds=} ;;
	kt.interval=*) interval=${w#kt.interval=} ;;
	kt.buckets=*) buckets=${w#kt.buckets=} ;;
	kt.spikes=*) spikes=${w#kt.spikes=} ;;
	kt.load=*) load=${w#kt.load=} ;;
	esac
done
up() { read u i </proc/uptime; echo $u; }
echo "KSYNC-LINUX-UNAME $(uname -a)"
rt=$(cat /sys/kernel/realtime 2>/dev/null || echo 0)
cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
# room for every sample past the histogram, per CPU (spike_nodes) times the CPUs
nodes=$((spikes * $(nproc)))
echo "KSYNC-LINUX-INFO uptime=$(up) cpus=$(nproc) realtime=$rt clocksource=$cs" \
	"seconds=$seconds interval=$interval buckets=$buckets spike_nodes=$nodes load=$load"
# the load runs at nice 19: cyclictest's measuring threads (SCHED_FIFO 95) preempt it
# at any nice level, but its main thread (SCHED_OTHER) would otherwise wait seconds
# behind 80 hackbench processes to start and to stop the run
if [ "$load" != 0 ]; then
	sh -c 'renice -n 19 -p $$ >/dev/null
		while :; do hackbench -l 100000 -g 2 >/dev/null 2>&1; done' &
	sh -c 'renice -n 19 -p $$ >/dev/null
		while :; do dd if=/dev/zero of=/dev/null bs=4M 2>/dev/null; done' &
fi
echo "KSYNC-LINUX-BEGIN uptime=$(up)"
# cyclictest_options: --spike (before --spike-nodes) records every sample past -h
cyclictest -m -S -p 95 -i "$interval" -D "$seconds" -q -h "$buckets" \
	--spike=$((buckets - 1)) --spike-nodes=$nodes >/tmp/cyclictest.out 2>&1
rc=$?
# stop the load (every process but init) before the output goes out on the serial line;
# histogram rows whose counts are all zero are left out (a missing bucket counts zero)
read l1 l5 l15 runnable last </proc/loadavg
kill -9 -1 2>/dev/null
echo "KSYNC-LINUX-STOP uptime=$(up) loadavg=$l1 runnable=$runnable"
grep -v -E '^[0-9]+([[:space:]]+0+)+[[:space:]]*$' /tmp/cyclictest.out
echo "KSYNC-LINUX-RC $rc"
echo KSYNC-LINUX-END
poweroff -f
echo o >/proc/sysrq-trigger
sleep 5
"""


class GuestMissing(Exception):
    """The Linux guest cannot be had: one line naming the package or the failing step."""


@dataclass
class GuestImage:
    flavour: str                 # rt | std
    kernel: Path                 # the vmlinuz QEMU boots with -kernel
    initramfs: Path              # gzip'd cpio newc, -initrd
    kernel_package: str          # e.g. linux-image-6.1.0-56-rt-amd64
    packages: dict[str, str] = field(default_factory=dict)   # package -> version used
    vmlinux: Path | None = None  # the same kernel unpacked (ELF with a PVH entry), or None

    @property
    def kernel_version(self) -> str:
        return self.packages.get(self.kernel_package, "?")


# ---------------------------------------------------------------------------------------
# small helpers


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _apt_error(out: str) -> str:
    """The line of apt's output that says what went wrong (E: first, then W:, then the
    last line)."""
    lines = [l.strip() for l in out.splitlines() if l.strip()]
    for prefix in ("E:", "Err:", "W:"):
        for l in lines:
            if l.startswith(prefix) and "unsandboxed" not in l:
                return _one_line(l)
    return _one_line(lines[-1]) if lines else "no output"


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = APT_TIMEOUT_S
         ) -> tuple[int, str]:
    env = dict(os.environ, LC_ALL="C", DEBIAN_FRONTEND="noninteractive")
    try:
        p = subprocess.run(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, errors="replace",
                           timeout=timeout, env=env)
    except FileNotFoundError:
        return 127, f"{cmd[0]}: command not found"
    except subprocess.TimeoutExpired:
        return 124, f"{cmd[0]}: timed out after {timeout:g}s"
    except OSError as e:
        return 126, f"{cmd[0]}: {e.strerror or e}"
    return p.returncode, p.stdout


def parse_stanzas(text: str) -> list[dict[str, str]]:
    """The stanzas of ``apt-cache show`` output / a control file, each {field: value}."""
    stanzas: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                stanzas.append(fields)
            fields, key = {}, None
            continue
        if line[0] in " \t" and key:
            fields[key] += "\n" + line.strip()
            continue
        k, sep, v = line.partition(":")
        if sep and re.fullmatch(r"[A-Za-z0-9-]+", k):
            key = k
            fields[k] = v.strip()
    if fields:
        stanzas.append(fields)
    return stanzas


def parse_control(text: str) -> dict[str, str]:
    """The first stanza of ``apt-cache show`` / a control file as {field: value}."""
    stanzas = parse_stanzas(text)
    return stanzas[0] if stanzas else {}


def first_depends(depends: str, prefix: str = "linux-image-") -> str | None:
    """The first package named in a Depends field that starts with ``prefix``
    (alternatives ``a | b`` count by their first name; version constraints dropped)."""
    for clause in depends.split(","):
        name = clause.split("|")[0].strip().split(" ")[0].split("(")[0].strip()
        if name.startswith(prefix):
            return name
    return None


def deb_filename(name: str, version: str, arch: str) -> str:
    """The file name ``apt-get download`` gives a package (``:`` of an epoch as %3a)."""
    return f"{name}_{version.replace(':', '%3a')}_{arch}.deb"


# ---------------------------------------------------------------------------------------
# apt


class _Apt:
    """apt-cache / apt-get download, with one ``apt-get update -qq`` when the lists are
    missing or stale (a lookup or a download fails)."""

    def __init__(self, log: Callable[[str], None]):
        self.log = log
        self.updated = False

    def _update(self) -> bool:
        if self.updated:
            return False
        self.updated = True
        if os.geteuid() != 0:
            return False          # apt-get update needs root; report the first failure
        self.log("linux guest: apt-get update -qq")
        rc, _ = _run(["apt-get", "update", "-qq"])
        return rc == 0

    def show(self, names: list[str]) -> dict[str, dict[str, str]]:
        """{package: its candidate version's control fields} (one ``apt-cache show`` for
        all); GuestMissing names the first package apt does not know."""
        for attempt in (0, 1):
            rc, out = _run(["apt-cache", "show", "--no-all-versions", *names])
            found = {f["Package"]: f for f in parse_stanzas(out)
                     if f.get("Package") and f.get("Version")}
            missing = [n for n in names if n not in found]
            if not missing:
                return found
            if attempt == 0 and self._update():
                continue
            why = "no candidate version in the package lists"
            if rc != 0 and "No packages found" not in out:
                why = _apt_error(out)         # apt itself failed (lists unreadable, ...)
            raise GuestMissing(f"{missing[0]}: apt-cache show failed: {why}")
        raise AssertionError("unreachable")

    def download(self, name: str, version: str, arch: str, debs: Path) -> Path:
        target = debs / deb_filename(name, version, arch)
        if target.is_file():
            return target
        debs.mkdir(parents=True, exist_ok=True)
        for attempt in (0, 1):
            self.log(f"linux guest: apt-get download {name}={version}")
            rc, out = _run(["apt-get", "download", "-q", f"{name}={version}"], cwd=debs)
            if rc == 0 and target.is_file():
                return target
            if attempt == 0 and self._update():
                continue
            why = _apt_error(out) if rc != 0 else f"{target.name} not written"
            raise GuestMissing(f"{name}: apt-get download failed: {why}")
        raise AssertionError("unreachable")


# ---------------------------------------------------------------------------------------
# ELF: the shared libraries a program needs


PT_LOAD, PT_DYNAMIC, PT_INTERP = 1, 2, 3
DT_NULL, DT_NEEDED, DT_STRTAB = 0, 1, 5


def elf_needs(path: Path) -> tuple[str | None, list[str]]:
    """(program interpreter, DT_NEEDED names) of an ELF64 little-endian file; (None, [])
    for a static program.  ValueError if it is not such a file."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not an ELF64 little-endian file")
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    loads, dynamic, interp = [], None, None
    for i in range(phnum):
        p_type, _flags, off, vaddr, _paddr, filesz, _memsz, _align = struct.unpack_from(
            "<IIQQQQQQ", data, phoff + i * phentsize)
        if p_type == PT_LOAD:
            loads.append((vaddr, off, filesz))
        elif p_type == PT_DYNAMIC:
            dynamic = (off, filesz)
        elif p_type == PT_INTERP:
            interp = data[off:off + filesz].split(b"\0", 1)[0].decode()
    if dynamic is None:
        return interp, []
    needed_offs, strtab = [], None
    off, size = dynamic
    for pos in range(off, off + size, 16):
        tag, val = struct.unpack_from("<qQ", data, pos)
        if tag == DT_NULL:
            break
        if tag == DT_NEEDED:
            needed_offs.append(val)
        elif tag == DT_STRTAB:
            strtab = val
    if strtab is None:
        return interp, []
    for vaddr, foff, filesz in loads:          # DT_STRTAB is an address: map it to the file
        if vaddr <= strtab < vaddr + filesz:
            strtab = strtab - vaddr + foff
            break
    names = []
    for o in needed_offs:
        end = data.index(b"\0", strtab + o)
        names.append(data[strtab + o:end].decode())
    return interp, names


def _resolve_in_root(root: Path, rel: str) -> Path | None:
    """The regular file ``rel`` names inside the tree ``root``, following symlinks
    (absolute ones taken relative to ``root``); None if it is not there."""
    cur = rel.lstrip("/")
    for _ in range(40):
        p = root / cur
        if p.is_symlink():
            target = os.readlink(p)
            cur = (target.lstrip("/") if target.startswith("/")
                   else os.path.normpath(str(Path(cur).parent / target)))
            continue
        return p if p.is_file() else None
    return None


def find_library(root: Path, soname: str) -> Path | None:
    for d in LIB_DIRS:
        p = _resolve_in_root(root, f"{d}/{soname}")
        if p is not None:
            return p
    return None


def library_closure(root: Path, programs: Iterable[str], extra: Iterable[str] = ()
                    ) -> tuple[str | None, dict[str, Path]]:
    """(interpreter path, {soname: file}) of everything ``programs`` (paths inside
    ``root``) load, recursively.  GuestMissing names a program or library not found."""
    interp = None
    libs: dict[str, Path] = {}
    pending: list[tuple[str, str]] = []
    for prog in programs:
        p = _resolve_in_root(root, prog)
        if p is None:
            raise GuestMissing(f"{prog}: not in the extracted packages")
        i, needs = elf_needs(p)
        interp = interp or i
        pending += [(n, prog) for n in needs]
    pending += [(n, "glibc (dlopen)") for n in extra]
    while pending:
        name, who = pending.pop()
        if name in libs:
            continue
        p = find_library(root, name)
        if p is None:
            raise GuestMissing(f"{name} (needed by {who}): in none of the packages "
                               f"{', '.join(USERLAND)}")
        libs[name] = p
        pending += [(n, name) for n in elf_needs(p)[1]]
    if interp:
        p = _resolve_in_root(root, interp)
        if p is None:
            raise GuestMissing(f"{interp} (program interpreter): in none of the packages")
        libs.setdefault(Path(interp).name, p)
    return interp, libs


# ---------------------------------------------------------------------------------------
# initramfs: cpio "newc"


@dataclass
class CpioEntry:
    name: str                    # path inside the archive, no leading /
    mode: int                    # full st_mode (type bits included)
    data: bytes = b""            # file contents, or a symlink's target
    rdev: tuple[int, int] = (0, 0)


def cpio_dir(name: str, perm: int = 0o755) -> CpioEntry:
    return CpioEntry(name, stat.S_IFDIR | perm)


def cpio_file(name: str, data: bytes, perm: int = 0o644) -> CpioEntry:
    return CpioEntry(name, stat.S_IFREG | perm, data)


def cpio_symlink(name: str, target: str) -> CpioEntry:
    return CpioEntry(name, stat.S_IFLNK | 0o777, target.encode())


def cpio_chardev(name: str, major: int, minor: int, perm: int = 0o600) -> CpioEntry:
    return CpioEntry(name, stat.S_IFCHR | perm, b"", (major, minor))


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


def write_newc(entries: Iterable[CpioEntry]) -> bytes:
    """A cpio archive in the "newc" format (the kernel's initramfs format): for each entry
    a 110-byte ASCII header ("070701" and 13 8-digit hex fields), the NUL-terminated name
    padded to 4 bytes, the data padded to 4 bytes; then the TRAILER!!! entry.  Owner root,
    mtime 0, so the same inputs give the same bytes."""
    out = bytearray()

    def put(name: str, mode: int, data: bytes, ino: int, rdev=(0, 0)) -> None:
        nameb = name.encode() + b"\0"
        nlink = 2 if stat.S_ISDIR(mode) else 1
        fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1],
                  len(nameb), 0)
        hdr = b"070701" + b"".join(b"%08X" % f for f in fields)
        out.extend(hdr + nameb + _pad4(len(hdr) + len(nameb)))
        out.extend(data + _pad4(len(data)))

    ino = 1
    for e in entries:
        put(e.name.lstrip("/"), e.mode, e.data, ino, e.rdev)
        ino += 1
    put("TRAILER!!!", 0, b"", 0)
    out.extend(_pad4(len(out)))
    return bytes(out)


def read_newc(blob: bytes) -> list[CpioEntry]:
    """The entries of a newc archive (gzip'd or not), trailer excluded."""
    if blob[:2] == b"\x1f\x8b":
        blob = gzip.decompress(blob)
    entries, pos = [], 0
    while pos + 110 <= len(blob):
        hdr = blob[pos:pos + 110]
        if hdr[:6] not in (b"070701", b"070702"):
            raise ValueError(f"bad cpio magic at offset {pos}: {hdr[:6]!r}")
        f = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, size, namesize = f[1], f[6], f[11]
        pos += 110
        name = blob[pos:pos + namesize - 1].decode()
        pos += namesize + (-(110 + namesize) % 4)
        data = blob[pos:pos + size]
        pos += size + (-size % 4)
        if name == "TRAILER!!!":
            break
        entries.append(CpioEntry(name, mode, data, (f[9], f[10])))
    return entries


def initramfs_entries(root: Path, init_script: str = INIT_SCRIPT) -> list[CpioEntry]:
    """The initramfs's files from the extracted userland tree ``root``: busybox and its
    applet links, cyclictest, hackbench, their libraries and loader, /init, /dev/console."""
    busybox = _resolve_in_root(root, BUSYBOX)
    if busybox is None:
        raise GuestMissing(f"busybox-static: {BUSYBOX} not in the extracted package")
    interp, libs = library_closure(root, PROGRAMS, EXTRA_LIBS)
    ents = [cpio_dir(d) for d in ("bin", "dev", "etc", "lib", GUEST_LIB_DIR, "lib64", "proc",
                                  "root", "sys", "tmp", "usr", "usr/bin")]
    ents.append(cpio_chardev("dev/console", 5, 1))
    ents.append(cpio_chardev("dev/null", 1, 3, 0o666))
    ents.append(cpio_file(BUSYBOX, busybox.read_bytes(), 0o755))
    ents += [cpio_symlink(f"bin/{a}", "busybox") for a in APPLETS]
    for prog in PROGRAMS:
        ents.append(cpio_file(prog, _resolve_in_root(root, prog).read_bytes(), 0o755))
    for soname in sorted(libs):
        ents.append(cpio_file(f"{GUEST_LIB_DIR}/{soname}", libs[soname].read_bytes(), 0o755))
    if interp:
        guest_interp = interp.lstrip("/")
        real = f"{GUEST_LIB_DIR}/{Path(interp).name}"
        if guest_interp != real:
            ents.append(cpio_symlink(guest_interp, "/" + real))
    ents.append(cpio_file("init", init_script.encode(), 0o755))
    return ents


def write_initramfs(root: Path, out: Path, init_script: str = INIT_SCRIPT) -> Path:
    blob = write_newc(initramfs_entries(root, init_script))
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=6) as gz:
            gz.write(blob)
    tmp.replace(out)
    return out


# ---------------------------------------------------------------------------------------
# prepare


def _extract_deb(deb: Path, dest: Path) -> None:
    rc, out = _run(["dpkg-deb", "-x", str(deb), str(dest)])
    if rc != 0:
        raise GuestMissing(f"{deb.name}: dpkg-deb -x failed: {_apt_error(out)}")


def _extract_vmlinuz(deb: Path, dest: Path) -> Path:
    """Only /boot/vmlinuz-* and /boot/config-* of a kernel package (``dpkg-deb
    --fsys-tarfile`` streamed through tarfile): the package's ~400 MB of modules are not
    needed, the initramfs loads none."""
    dest.mkdir(parents=True, exist_ok=True)
    # its own process group: dpkg-deb forks a decompressor, and stopping early (below)
    # must stop both; stderr to a file, so that nothing waits on a pipe a child holds
    errf = (dest / "dpkg-deb.err").open("w+b")
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE,
                            stderr=errf, stdin=subprocess.DEVNULL, start_new_session=True)
    vmlinuz = None
    found: set[str] = set()
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for m in tar:
                name = m.name.lstrip("./")
                if m.isfile() and re.fullmatch(r"boot/(vmlinuz|config)-.*", name):
                    kind = Path(name).name.split("-", 1)[0]
                    (dest / kind).write_bytes(tar.extractfile(m).read())
                    found.add(kind)
                    if kind == "vmlinuz":
                        vmlinuz = dest / kind
                    if found == {"vmlinuz", "config"}:
                        break           # /boot comes first: skip the modules
    except tarfile.TarError as e:
        proc.kill()
        raise GuestMissing(f"{deb.name}: cannot read the package's files: {e}") from None
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            procrun.kill_group(proc)
        proc.wait()
        errf.seek(0)
        err = errf.read().decode(errors="replace")
        errf.close()
        (dest / "dpkg-deb.err").unlink()
    if proc.returncode != 0 and vmlinuz is None:
        raise GuestMissing(f"{deb.name}: dpkg-deb --fsys-tarfile failed: {_apt_error(err)}")
    if vmlinuz is None:
        raise GuestMissing(f"{deb.name}: no /boot/vmlinuz-* in the package")
    return vmlinuz


def elf_has_pvh_note(data: bytes) -> bool:
    """True if an ELF64 has the Xen PVH entry note (owner "Xen", type 18,
    XEN_ELFNOTE_PHYS32_ENTRY), which QEMU's -kernel loader boots directly."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return False
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _f, off, _v, _p, filesz = struct.unpack_from("<IIQQQQ", data,
                                                             phoff + i * phentsize)
        if p_type != 4:                       # PT_NOTE
            continue
        pos, end = off, off + filesz
        while pos + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == 18:
                return True
            pos += 12 + namesz + (-namesz % 4) + descsz + (-descsz % 4)
    return False


def unpack_bzimage(bz: bytes) -> bytes | None:
    """The ELF vmlinux inside a bzImage (x86 boot protocol >= 2.08: the payload at
    ``payload_offset`` past the setup sectors), if it is xz- or gzip-compressed; None if
    not (other compressions, or not a bzImage)."""
    if len(bz) < 0x250 or bz[0x202:0x206] != b"HdrS":
        return None
    version, = struct.unpack_from("<H", bz, 0x206)
    if version < 0x208:
        return None
    setup_sects = bz[0x1f1] or 4
    off, length = struct.unpack_from("<II", bz, 0x248)
    start = (setup_sects + 1) * 512 + off
    payload = bz[start:start + length]
    try:
        if payload[:6] == b"\xfd7zXZ\x00":
            out = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
        elif payload[:2] == b"\x1f\x8b":
            out = gzip.GzipFile(fileobj=io.BytesIO(payload)).read()
        else:
            return None
    except (lzma.LZMAError, OSError, EOFError):
        return None
    return out if out[:4] == b"\x7fELF" else None


def _write_vmlinux(vmlinuz: Path, dest: Path) -> Path | None:
    """Unpack ``vmlinuz`` to ``dest`` if it holds an ELF kernel with a PVH entry."""
    elf = unpack_bzimage(vmlinuz.read_bytes())
    if elf is None or not elf_has_pvh_note(elf):
        return None
    dest.write_bytes(elf)
    return dest


def _key(items: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:12]


def _image_from_manifest(path: Path) -> GuestImage | None:
    try:
        m = json.loads(path.read_text())
        img = GuestImage(flavour=m["flavour"], kernel=Path(m["kernel"]),
                         initramfs=Path(m["initramfs"]), kernel_package=m["kernel_package"],
                         packages=dict(m["packages"]),
                         vmlinux=Path(m["vmlinux"]) if m.get("vmlinux") else None)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return img if img.kernel.is_file() and img.initramfs.is_file() else None


def prepare_each(flavours: Iterable[str], cache_dir: Path = DEFAULT_CACHE,
                 log: Callable[[str], None] = print,
                 who: str = "ksync") -> tuple[dict[str, "GuestImage"], dict[str, str]]:
    """``prepare`` for each flavour: (flavour -> image, flavour -> why it is missing). A
    guest that cannot be had is logged ("<who>: Linux guest (...) not available: ...") and
    left out; the experiment runs without its column."""
    images: dict[str, GuestImage] = {}
    missing: dict[str, str] = {}
    for flavour in flavours:
        try:
            images[flavour] = prepare(flavour, cache_dir, log=log)
        except GuestMissing as e:
            missing[flavour] = str(e)
            log(f"{who}: Linux guest ({flavour}) not available: {e}")
    return images, missing


def prepare(flavour: str, cache_dir: Path = DEFAULT_CACHE,
            log: Callable[[str], None] = print) -> GuestImage:
    """The kernel and initramfs of a Linux guest (``rt``: PREEMPT_RT, ``std``: Debian's
    standard kernel), fetched and built on first use, cached in ``cache_dir``.  Raises
    GuestMissing with a one-line reason naming the package or step that failed."""
    if flavour not in FLAVOURS:
        raise GuestMissing(f"flavour {flavour!r}: must be one of {', '.join(FLAVOURS)}")
    cache_dir = Path(cache_dir).resolve()
    last = cache_dir / f"{flavour}.json"
    for tool in ("apt-get", "apt-cache", "dpkg-deb"):
        if not shutil.which(tool):
            raise GuestMissing(f"{tool}: not found (a Debian host is needed to fetch the "
                               "Linux guest's packages)")
    apt = _Apt(log)
    meta = FLAVOURS[flavour]
    try:
        shown = apt.show([meta, *USERLAND])
        kpkg = first_depends(shown[meta].get("Depends", ""))
        if not kpkg:
            raise GuestMissing(f"{meta}: its Depends names no linux-image-* package")
        wanted = {kpkg: apt.show([kpkg])[kpkg]}
        wanted.update((n, shown[n]) for n in USERLAND)
    except GuestMissing as e:
        cached = _image_from_manifest(last)
        if cached is None:
            raise
        log(f"linux guest: {e}; reusing the cached {flavour} image "
            f"({cached.kernel_package} {cached.kernel_version})")
        return cached
    versions = {n: f["Version"] for n, f in wanted.items()}
    debs_dir = cache_dir / "debs"
    ukey = _key([f"{n}={versions[n]}" for n in USERLAND] + [INIT_SCRIPT, " ".join(APPLETS)])
    udir = cache_dir / f"userland-{ukey}"
    initramfs = udir / "initramfs.cpio.gz"
    kdir = cache_dir / f"kernel-{kpkg}_{versions[kpkg].replace(':', '%3a')}"
    vmlinuz = kdir / "vmlinuz"
    vmlinux = kdir / "vmlinux"

    def deb(name: str) -> Path:
        return apt.download(name, versions[name], wanted[name].get("Architecture", "amd64"),
                            debs_dir)

    if not vmlinuz.is_file():
        kdeb = deb(kpkg)
        log(f"linux guest: extracting the kernel from {kdeb.name}")
        tmp = kdir.with_name(kdir.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        _write_vmlinux(_extract_vmlinuz(kdeb, tmp), tmp / "vmlinux")
        shutil.rmtree(kdir, ignore_errors=True)
        tmp.replace(kdir)
        kdeb.unlink()           # 70 MB; the cache keeps what is booted (kdir)
    if not initramfs.is_file():
        files = [deb(n) for n in USERLAND]
        root = udir / "root"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        for f in files:
            _extract_deb(f, root)
        log(f"linux guest: writing {initramfs}")
        write_initramfs(root, initramfs)
        shutil.rmtree(root, ignore_errors=True)      # the archive holds what is needed
    img = GuestImage(flavour=flavour, kernel=vmlinuz, initramfs=initramfs,
                     kernel_package=kpkg, packages={meta: versions[kpkg], **versions},
                     vmlinux=vmlinux if vmlinux.is_file() else None)
    manifest = {"flavour": flavour, "kernel": str(vmlinuz), "initramfs": str(initramfs),
                "kernel_package": kpkg, "packages": img.packages,
                "vmlinux": str(img.vmlinux) if img.vmlinux else None}
    tmp = last.with_name(last.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(last)
    _prune(cache_dir, {n: versions[n] for n in USERLAND})
    return img


def _prune(cache_dir: Path, userland: dict[str, str]) -> None:
    """Remove what no flavour's manifest (``<flavour>.json``) uses any more: kernel and
    userland directories of older package versions, userland .debs of other versions."""
    keep: set[str] = set()
    for f in FLAVOURS:
        img = _image_from_manifest(cache_dir / f"{f}.json")
        if img:
            keep |= {img.kernel.parent.name, img.initramfs.parent.name}
    for d in cache_dir.glob("*-*"):
        if d.is_dir() and d.name.startswith(("kernel-", "userland-")) and d.name not in keep:
            shutil.rmtree(d, ignore_errors=True)
    wanted = {deb_filename(n, v, "x").rsplit("_", 1)[0] for n, v in userland.items()}
    for deb in (cache_dir / "debs").glob("*.deb"):
        if not deb.name.startswith("linux-image-") and deb.name.rsplit("_", 1)[0] not in wanted:
            deb.unlink()


# ---------------------------------------------------------------------------------------
# cyclictest's output


_HIST_LINE = re.compile(r"^(\d{6,})((?:\s+\d+)+)\s*$")
_SUMMARY = re.compile(r"^#\s*(Total|Min Latencies|Avg Latencies|Max Latencies|"
                      r"Histogram Overflows):((?:\s+\d+)*)\s*$")
_SUMMARY_KEYS = {"Total": "total", "Min Latencies": "min", "Avg Latencies": "avg",
                 "Max Latencies": "max", "Histogram Overflows": "overflows"}
_SPIKE = re.compile(r"^T:\s*(\d+)\s+Spike:\s*(-?\d+):\s*TS:\s*(-?\d+)\s*$")
_SPIKES = re.compile(r"^spikes\s*=\s*(\d+)\s*$")


def parse_cyclictest(lines: Iterable[str]) -> dict:
    """cyclictest ``-q -h N [--spike=T]`` output -> {"threads", "hist": [per-thread {bucket:
    count}], "total", "min", "avg", "max", "overflows": per-thread lists, "spikes": [(thread,
    µs)] as printed, "spikes_total": the count cyclictest saw (None without the line)}.
    Lines that are none of these (kernel messages on the console) are ignored."""
    per_thread: list[dict[int, int]] = []
    summary: dict[str, list[int]] = {}
    spikes: list[tuple[int, int]] = []
    spikes_total = None
    for raw in lines:
        line = raw.strip().replace("\r", "")
        m = _SPIKE.match(line)
        if m:
            spikes.append((int(m.group(1)), int(m.group(2))))
            continue
        m = _SPIKES.match(line)
        if m:
            spikes_total = int(m.group(1))
            continue
        m = _HIST_LINE.match(line)
        if m:
            counts = [int(x) for x in m.group(2).split()]
            while len(per_thread) < len(counts):
                per_thread.append({})
            b = int(m.group(1))
            for j, c in enumerate(counts):
                if c:
                    per_thread[j][b] = per_thread[j].get(b, 0) + c
            continue
        m = _SUMMARY.match(line)
        if m:
            summary[_SUMMARY_KEYS[m.group(1)]] = [int(x) for x in m.group(2).split()]
    threads = max([len(per_thread)] + [len(v) for v in summary.values()])
    while len(per_thread) < threads:
        per_thread.append({})
    return {"threads": threads, "hist": per_thread, "spikes": spikes,
            "spikes_total": spikes_total, **summary}


def percentile(hist: dict[int, int], overflows: int, buckets: int, fraction: float
               ) -> tuple[int | None, bool]:
    """(upper bucket edge in µs, censored) of ``fraction`` of the samples: the first bucket
    ``i`` (covering [i, i+1) µs) where the cumulative count reaches ``ceil(fraction *
    total)`` gives ``i + 1``.  ``hist`` may hold buckets past ``buckets`` (the overflow
    samples whose values the spike list gave); ``overflows`` are the samples past the
    histogram without a value.  While there are any, the order past ``buckets`` is
    unknown, so a percentile that falls there gives ``(buckets, True)``: a lower bound.
    (None, False) without samples."""
    total = sum(hist.values()) + overflows
    if total <= 0:
        return None, False
    target = max(1, math.ceil(fraction * total - 1e-9))
    cum = 0
    for b in sorted(hist):
        if overflows and b >= buckets:
            break
        cum += hist[b]
        if cum >= target:
            return b + 1, False
    return buckets, True


def summarize(parsed: dict, buckets: int) -> dict:
    """The result-dict figures from ``parse_cyclictest``'s output: ``hist_us`` is the
    histogram summed over the threads plus the spike list's samples past ``buckets`` (at
    their own µs), ``overflow_values`` how many of the ``overflows`` that gave a value."""
    hist: dict[int, int] = {}
    for h in parsed["hist"]:
        for b, c in h.items():
            hist[b] = hist.get(b, 0) + c
    per_over = parsed.get("overflows") or []
    overflows = sum(per_over)
    samples = sum(hist.values()) + overflows      # cyclictest's "# Total" leaves out overflows
    past = sorted(v for _, v in parsed.get("spikes") or [] if v >= buckets)[:overflows]
    for v in past:          # the overflows the spike list gave a value: now in the histogram
        hist[v] = hist.get(v, 0) + 1
    mins, avgs, maxs = parsed.get("min"), parsed.get("avg"), parsed.get("max")
    per_samples = [sum(h.values()) + (per_over[j] if j < len(per_over) else 0)
                   for j, h in enumerate(parsed["hist"])]
    if avgs and sum(per_samples) > 0 and len(avgs) == len(per_samples):
        avg = sum(a * n for a, n in zip(avgs, per_samples)) / sum(per_samples)
    elif avgs:
        avg = sum(avgs) / len(avgs)
    else:
        avg = None
    out = {"threads": parsed["threads"], "samples": samples,
           "min_us": min(mins) if mins else (min(hist) if hist else None),
           "avg_us": round(avg, 2) if avg is not None else None,
           "max_us": max(maxs) if maxs else None,
           "overflows": overflows, "overflow_values": len(past),
           "spikes_total": parsed.get("spikes_total"), "hist_us": dict(sorted(hist.items()))}
    for name, frac in PERCENTILES:
        v, over = percentile(hist, overflows - len(past), buckets, frac)
        out[f"{name}_us"] = v
        out[f"{name}_overflow"] = over
    out["per_thread"] = {"samples": per_samples, "min_us": mins, "avg_us": avgs,
                         "max_us": maxs, "overflows": parsed.get("overflows"),
                         "total_line": parsed.get("total")}
    return out


def empty_result(flavour: str, **kw) -> dict:
    r = {k: None for k in RESULT_KEYS}
    r.update(ok=False, flavour=flavour, hist_us={}, other_qemu=[])
    r.update(kw)
    return r


# ---------------------------------------------------------------------------------------
# QEMU options


def ksync_qemu_base(smp: int, accel: str = "tcg", icount: str | int | None = None, *,
                    machine: str = "pc", memory: str | None = None,
                    allow_pvm: bool = False) -> list[str]:
    """The -machine/-m/-smp/-cpu/-accel options ksync's own boot uses (taken from
    ``qemu.qemu_command`` for a ``BootConfig`` with these settings: the options listed in
    ``qemu.OWNED_OPTIONS``), plus ``-icount`` if asked.  ``icount``: an int N (``shift=N``)
    or QEMU's option value (``shift=4,align=off,sleep=on``).  QEMU 7.2 has no icount with
    multi-threaded TCG, so with icount the accelerator becomes ``tcg,thread=single``
    (ksync's own boot needs the same change to use icount)."""
    qaccel, _env = qemumod.resolve_accel(accel, allow_pvm)
    cfg = qemumod.BootConfig(repo=Path("."), smp=smp, accel=accel, machine=machine)
    if memory:
        cfg.memory = memory
    full = qemumod.qemu_command(cfg, "qemu-system-x86_64", qaccel)
    base: list[str] = []
    i = 1
    while i < len(full):
        opt = full[i]
        if opt in qemumod.OWNED_OPTIONS:
            if i + 1 < len(full) and not full[i + 1].startswith("-"):
                base += [opt, full[i + 1]]
                i += 2
                continue
            base.append(opt)
        i += 1
    if icount is not None:
        if qaccel != "tcg":
            raise UsageError("-icount needs the tcg accelerator")
        base = _single_threaded(base)[0]
        spec = f"shift={icount}" if str(icount).isdigit() else str(icount)
        base += ["-icount", spec]
    return base


def _single_threaded(args: list[str]) -> tuple[list[str], bool]:
    """``args`` with ``-accel tcg,thread=multi`` made ``thread=single``; (args, changed)."""
    out, changed = list(args), False
    for i, a in enumerate(out[:-1]):
        if a in ("-accel", "--accel") and out[i + 1].startswith("tcg"):
            opts = out[i + 1].split(",")
            new = ["thread=single" if o == "thread=multi" else o for o in opts]
            if not any(o.startswith("thread=") for o in new):
                new.append("thread=single")
            changed |= new != opts
            out[i + 1] = ",".join(new)
    return out, changed


def _loadavg() -> list[float] | None:
    """The host's 1, 5 and 15 minute load averages (other work on the host slows TCG)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def other_qemu(exclude: Iterable[int] = ()) -> list[str]:
    """``pid args`` of every qemu-system process on the host but ``exclude``."""
    skip = {os.getpid(), *exclude}
    rc, out = _run(["ps", "-eo", "pid,args"], timeout=10)
    found = []
    for line in out.splitlines()[1:] if rc == 0 else []:
        pid, _, args = line.strip().partition(" ")
        if "qemu-system" in args and pid.isdigit() and int(pid) not in skip:
            found.append(_one_line(f"{pid} {args.strip()}", 200))
    return found


# ---------------------------------------------------------------------------------------
# run


def kernel_append(seconds: int, interval_us: int, buckets: int, load: bool) -> str:
    """The guest's command line: console, and /init's kt.* parameters (kt.spikes: the spike
    list's room per CPU, which /init multiplies by its CPU count)."""
    return (f"{KERNEL_ARGS} kt.seconds={int(seconds)} kt.interval={int(interval_us)} "
            f"kt.buckets={int(buckets)} "
            f"kt.spikes={spike_nodes(seconds, interval_us, buckets)} "
            f"kt.load={1 if load else 0}")


def default_timeout(seconds: float, qemu_args: list[str]) -> float:
    """Boot (a few seconds under TCG, more under icount), the run, the histogram, slack."""
    slow = 3 if any(a in ("-icount", "--icount") for a in qemu_args) else 1
    return 60 * slow + 2 * seconds + 30


# the serial reader thread and the process-group kill are procrun.py's (one copy)


def _log_file(log_dir: Path | None, name: str):
    if log_dir is None:
        return None, None
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for i in range(100):
        p = log_dir / (f"{stamp}-{name}.log" if i == 0 else f"{stamp}-{name}-{i}.log")
        try:
            return p, open(p, "x", encoding="utf-8", errors="replace")
        except FileExistsError:
            continue
    return None, None


def run(image: GuestImage, qemu_args: list[str], seconds: int, interval_us: int = 250,
        buckets: int = BUCKETS, load: bool = True, timeout: float | None = None,
        qemu: str | None = None, log_dir: Path | None = DEFAULT_LOG_DIR,
        echo: Callable[[str], None] | None = None, boot: str = "auto",
        append: str = "") -> dict:
    """Boot the guest with the caller's machine options and return cyclictest's figures
    (``RESULT_KEYS`` plus ``per_thread``, ``cyclictest_rc``, ``info``, ``command``,
    ``notes``, ``log``, ``boot_protocol``, ``host_load``).  Never raises for a guest that
    fails: ``ok`` False, ``reason``.

    ``boot``: ``pvh`` boots the unpacked kernel (``image.vmlinux``) at its PVH entry,
    ``bzimage`` the package's vmlinuz through its decompressor (the same kernel; under
    TCG the decompressor alone takes ~5 s, and it applies KASLR, which PVH does not);
    ``auto``: pvh when the image has a vmlinux.  ``append``: extra kernel command-line
    words (an experiment's, e.g. ``tsc=reliable``; none by default)."""
    qemu = qemu or shutil.which(envdetect.QEMU_BINARY)
    if boot == "auto":
        boot = "pvh" if image.vmlinux else "bzimage"
    res = empty_result(image.flavour, seconds=seconds, interval_us=interval_us,
                        buckets=buckets, load=bool(load), notes=[],
                        packages=dict(image.packages), boot_protocol=boot,
                        host_load={"start": _loadavg()})
    if boot not in ("pvh", "bzimage") or (boot == "pvh" and not image.vmlinux):
        res["reason"] = f"boot={boot!r}: must be pvh (needs image.vmlinux), bzimage or auto"
        return res
    if not qemu:
        res["reason"] = envdetect.QEMU_INSTALL_HINT
        return res
    try:
        cyclictest_options(interval_us, seconds, buckets, 1)
    except UsageError as e:
        res["reason"] = str(e)
        return res
    args = list(qemu_args)
    if any(a in ("-icount", "--icount") for a in args):
        args, changed = _single_threaded(args)
        if changed:
            res["notes"].append("-icount: -accel tcg,thread=multi changed to thread=single "
                                "(QEMU has no icount with multi-threaded TCG)")
    append = kernel_append(seconds, interval_us, buckets, load) + (f" {append}" if append else "")
    kernel = image.vmlinux if boot == "pvh" else image.kernel
    cmd = [qemu, *args, "-kernel", str(kernel), "-initrd", str(image.initramfs),
           "-append", append, *CONSOLE_OPTIONS]
    res["command"] = cmd
    timeout = timeout if timeout is not None else default_timeout(seconds, args)
    log_path, log = _log_file(Path(log_dir) if log_dir else None,
                              f"linux-{image.flavour}")
    res["log"] = str(log_path) if log_path else None

    def logw(text: str) -> None:
        if log:
            log.write(text + "\n")
            log.flush()

    logw("# ksync linux guest: " + " ".join(procrun.shquote(c) for c in cmd))
    before = other_qemu()
    lines: list[str] = []
    stderr_lines: list[str] = []
    marks: dict[str, float] = {}
    panic = None
    start = time.monotonic()

    def handle(tag: str, text: str) -> None:
        nonlocal panic
        line = text.rstrip("\r\n").replace("\r", "")
        if tag == "err":
            stderr_lines.append(line)
            logw(f"[qemu stderr] {line}")
            return
        lines.append(line)
        logw(line)
        if echo:
            echo(line)
        t = time.monotonic() - start
        for mark in (MARK_UNAME, MARK_BEGIN, MARK_STOP, MARK_END):
            if line.startswith(mark) and mark not in marks:
                marks[mark] = t
        if panic is None and any(p in line for p in PANIC_TEXT):
            panic = line.strip()

    def stop_after() -> float | None:
        """Seconds to read on once the run is over: the power-off grace after the end
        marker, the panic's drain after a panic (the earlier one wins)."""
        drains = ([POWEROFF_GRACE_S] if MARK_END in marks else []) + \
            ([PANIC_DRAIN_S] if panic is not None else [])
        return min(drains) if drains else None

    def close_log() -> None:
        if log:
            log.close()

    # the closures come first: between Popen and the stream's try (which kills the group
    # on an interrupt) only the call's arguments are evaluated
    try:
        proc = procrun.spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    except OSError as e:
        res["reason"] = f"cannot start {qemu}: {e.strerror or e}"
        if log:
            log.close()
        return res

    st = procrun.stream(proc, handle, start=start, timeout=timeout, exit_grace=2.0, poll=0.2,
                        fatal=stop_after, on_interrupt=close_log, close_wait=2.0)
    timed_out, still_running = st.timed_out, st.killed
    wall = time.monotonic() - start
    res["other_qemu"] = sorted(set(before) | set(other_qemu(exclude=[proc.pid])))
    res["host_load"]["end"] = _loadavg()
    res["wall_s"] = round(wall, 2)
    res["boot_s"] = round(marks[MARK_UNAME], 2) if MARK_UNAME in marks else None
    # when each step was seen, in seconds since QEMU started: /init's first line, the
    # start of cyclictest, its end (load stopped), the end of its output
    res["timeline_s"] = {name: round(marks[m], 2) for name, m in
                         (("init", MARK_UNAME), ("begin", MARK_BEGIN), ("stop", MARK_STOP),
                          ("end", MARK_END)) if m in marks}
    res["timeline_s"]["exit"] = round(wall, 2)
    for line in lines:
        if line.startswith(MARK_UNAME + " "):
            res["kernel"] = line[len(MARK_UNAME) + 1:].strip()
        elif line.startswith(MARK_INFO + " "):
            res["info"] = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
        elif line.startswith((MARK_BEGIN + " ", MARK_STOP + " ")):
            m = re.search(r"uptime=([0-9.]+)", line)
            if m:
                key = "begin" if line.startswith(MARK_BEGIN) else "stop"
                res.setdefault("guest_uptime_s", {})[key] = float(m.group(1))
            m = re.search(r"loadavg=([0-9.]+) runnable=(\d+)/(\d+)", line)
            if m:       # the guest's load at the end of the run: proof the load ran
                res["guest_load"] = {"loadavg_1m": float(m.group(1)),
                                     "runnable": int(m.group(2)), "tasks": int(m.group(3))}
        elif line.startswith(MARK_RC + " "):
            try:
                res["cyclictest_rc"] = int(line.split()[1])
            except (IndexError, ValueError):
                pass
    body = between(lines, MARK_BEGIN, MARK_END)
    if body:    # the histogram's size as /init gave it to cyclictest (its INFO line)
        used = (res.get("info") or {}).get("buckets", "")
        res["buckets"] = int(used) if str(used).isdigit() else buckets
        res.update(summarize(parse_cyclictest(body), res["buckets"]))
    res["reason"] = _run_reason(res, marks, panic, timed_out, timeout, still_running,
                                proc.returncode, stderr_lines, lines, body)
    res["ok"] = res["reason"] is None
    logw(f"# exit {proc.returncode} after {wall:.1f}s; "
         + ("ok" if res["ok"] else f"FAIL: {res['reason']}"))
    if log:
        log.close()
    return res


def between(lines: list[str], begin: str, end: str) -> list[str]:
    try:
        i = next(k for k, l in enumerate(lines) if l.startswith(begin))
    except StopIteration:
        return []
    out = []
    for l in lines[i + 1:]:
        if l.startswith(end) or l.startswith(MARK_RC):
            break
        out.append(l)
    return out


def _last_text(lines: list[str]) -> str:
    for l in reversed(lines):
        if l.strip():
            return _one_line(l, 160)
    return "no serial output"


def _run_reason(res: dict, marks: dict, panic: str | None, timed_out: bool, timeout: float,
                still_running: bool, rc: int | None, stderr_lines: list[str],
                lines: list[str], body: list[str]) -> str | None:
    if panic:
        where = "boot failed" if MARK_UNAME not in marks else "guest failed"
        return f"{where}: {_one_line(panic, 200)}"
    if MARK_UNAME not in marks:
        if timed_out:
            return f"boot failed: no /init output within {timeout:g}s (last: {_last_text(lines)})"
        err = next((l for l in stderr_lines if l.strip()), None)
        if err:
            return f"QEMU exited with code {rc}: {_one_line(err, 200)}"
        return (f"boot failed: QEMU exited with code {rc} before /init ran "
                f"(last: {_last_text(lines)})")
    if MARK_END not in marks:
        if timed_out:
            return (f"timeout after {timeout:g}s: cyclictest did not finish "
                    f"(last: {_last_text(lines)})")
        return (f"guest stopped before cyclictest finished (QEMU exit {rc}; "
                f"last: {_last_text(lines)})")
    if res.get("cyclictest_rc") not in (0, None):
        msg = next((l for l in body if l.strip() and not _HIST_LINE.match(l.strip())
                    and not l.startswith("KSYNC-LINUX")), "no message")
        return f"cyclictest exited with {res['cyclictest_rc']}: {_one_line(msg, 200)}"
    if not res.get("threads") or not res.get("samples"):
        return f"no cyclictest histogram in the output ({len(body)} lines between the markers)"
    if still_running:
        res["notes"].append(f"QEMU did not power off within {POWEROFF_GRACE_S:g}s of the end "
                            "marker; killed")
    return None


# ---------------------------------------------------------------------------------------
# the host


HOST_LOADS = (     # the guest's load, at nice 19 as there (see INIT_SCRIPT)
    "renice -n 19 -p $$ >/dev/null; "
    "while :; do hackbench -l 100000 -g 2 >/dev/null 2>&1; done",
    "renice -n 19 -p $$ >/dev/null; "
    "while :; do dd if=/dev/zero of=/dev/null bs=4M 2>/dev/null; done",
)


def host_cyclictest(seconds: int, interval_us: int = 250, buckets: int = BUCKETS,
                    load: bool = True, timeout: float | None = None) -> dict:
    """cyclictest on the host with the guest's options and load (hackbench and the memory
    stream in their own process groups, killed at the end).  Needs rt-tests and root (for
    -m and SCHED_FIFO); otherwise ``ok`` False with the one-line reason."""
    res = empty_result("host", seconds=seconds, interval_us=interval_us, buckets=buckets,
                        load=bool(load), notes=[], boot_s=0.0,
                        host_load={"start": _loadavg()})
    res["kernel"] = _one_line(_run(["uname", "-a"], timeout=10)[1])
    cyclictest = shutil.which("cyclictest")
    hackbench = shutil.which("hackbench")
    if not cyclictest or (load and not hackbench):
        missing = "cyclictest" if not cyclictest else "hackbench"
        res["reason"] = (f"{missing}: not found on the host; install rt-tests "
                         "(scripts/deps.sh does as root)")
        return res
    res["other_qemu"] = other_qemu()
    loads: list[subprocess.Popen] = []
    nodes = spike_nodes(seconds, interval_us, buckets, os.cpu_count() or 1)
    res["spike_nodes"] = nodes
    cmd = [cyclictest, *cyclictest_options(interval_us, seconds, buckets, nodes)]
    res["command"] = cmd
    start = time.monotonic()
    out, err, rc = "", "", None
    p = None
    try:
        if load:
            env = dict(os.environ, PATH=f"{Path(hackbench).parent}:{os.environ.get('PATH', '')}")
            for script in HOST_LOADS:
                loads.append(subprocess.Popen(["sh", "-c", script], stdin=subprocess.DEVNULL,
                                              stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, env=env,
                                              start_new_session=True))
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, errors="replace",
                             start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout or seconds + 60)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            procrun.kill_group(p)
            out, err = p.communicate()
            res["reason"] = f"timeout: cyclictest still running after {timeout or seconds + 60:g}s"
    finally:                # the load always ends with the run (and cyclictest if interrupted)
        for lp in [*loads, *([p] if p is not None and p.poll() is None else [])]:
            procrun.kill_group(lp)
        for lp in loads:
            try:
                lp.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
    res["wall_s"] = round(time.monotonic() - start, 2)
    res["host_load"]["end"] = _loadavg()
    res["other_qemu"] = sorted(set(res["other_qemu"]) | set(other_qemu()))
    res["cyclictest_rc"] = rc
    if res["reason"]:
        return res
    lines = out.splitlines()
    res.update(summarize(parse_cyclictest(lines), buckets))
    if rc != 0:
        msg = next((l for l in (err + "\n" + out).splitlines() if l.strip()), "no message")
        why = " (needs root for -m and SCHED_FIFO)" if os.geteuid() != 0 else ""
        res["reason"] = f"cyclictest exited with {rc}: {_one_line(msg, 200)}{why}"
    elif not res.get("samples"):
        res["reason"] = "no cyclictest histogram in the output"
    res["ok"] = res["reason"] is None
    return res


# ---------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tools.ksync.linuxguest",
        description="cyclictest in a Linux guest booted with ksync's QEMU options (or on "
                    "the host); prints the result as JSON")
    ap.add_argument("--flavour", choices=[*FLAVOURS, "host"], default="rt")
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--accel", default="tcg", help="tcg | kvm | auto (as ksync's --accel)")
    ap.add_argument("--icount", default=None,
                    help="QEMU -icount value, e.g. shift=4,align=off,sleep=on")
    ap.add_argument("--interval", type=int, default=250, help="period in µs")
    ap.add_argument("--buckets", type=int, default=BUCKETS,
                    help="histogram buckets (µs); later samples keep their value (--spike)")
    ap.add_argument("--no-load", action="store_true", help="no hackbench / memory stream")
    ap.add_argument("--timeout", type=float, default=None)
    ap.add_argument("--cache-dir", type=Path, default=None,
                    help="default <repo>/build/linux-guest")
    ap.add_argument("--boot", choices=("auto", "pvh", "bzimage"), default="auto",
                    help="pvh: the unpacked kernel at its PVH entry (default when "
                         "available); bzimage: the package's vmlinuz as is")
    ap.add_argument("--append", default="", help="extra kernel command-line words")
    ap.add_argument("--echo", action="store_true", help="copy the serial output to stderr")
    ap.add_argument("--full-hist", action="store_true",
                    help="print hist_us too (omitted by default: one key per µs bucket)")
    a = ap.parse_args(argv)
    repo = find_repo()

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    if a.flavour == "host":
        res = host_cyclictest(a.seconds, a.interval, a.buckets, not a.no_load, a.timeout)
    else:
        try:
            image = prepare(a.flavour, a.cache_dir or repo / DEFAULT_CACHE, log=log)
        except GuestMissing as e:
            log(f"linux guest {a.flavour}: {e}")
            return 1
        try:
            base = ksync_qemu_base(a.smp, a.accel, a.icount)
        except KsyncError as e:
            log(f"linux guest {a.flavour}: {e}")
            return 2
        log(f"booting {image.kernel_package} {image.kernel_version}: "
            + " ".join(base) + f", {a.seconds}s of cyclictest")
        res = run(image, base, a.seconds, a.interval, a.buckets, not a.no_load, a.timeout,
                  log_dir=repo / DEFAULT_LOG_DIR,
                  echo=(lambda l: print(l, file=sys.stderr, flush=True)) if a.echo else None,
                  boot=a.boot, append=a.append)
    shown = dict(res)
    if not a.full_hist:
        shown["hist_us"] = f"<{len(res.get('hist_us') or {})} non-empty buckets; --full-hist>"
    print(json.dumps(shown, indent=1, default=str))
    return 0 if res.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
