"""Host environment detection: KVM flavour, CPU model/count, TSC frequency, git commit, QEMU.

Every figure ksync prints is labelled with the environment it came from (DESIGN.md,
"Measurement discipline"); this module finds the facts.  Nothing here raises for an
ordinary "not available" answer: it returns None / "unknown".
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

QEMU_BINARY = "qemu-system-x86_64"
QEMU_INSTALL_HINT = (f"{QEMU_BINARY} not found; install it: apt-get install qemu-system-x86")

# Overridable roots so tests can point detection at a fake tree.
SYS_MODULE = Path("/sys/module")
DEV_KVM = Path("/dev/kvm")
PROC_CPUINFO = Path("/proc/cpuinfo")


def kvm_module_kind(sys_module: Path | None = None) -> str | None:
    """Which KVM vendor module is loaded: "kvm-pvm", "kvm" (kvm_intel/kvm_amd) or None.

    kvm_pvm is checked first: if it is loaded, guests may be run by it, and assuming
    hardware virtualization there would make the guest fail in confusing ways.
    """
    base = sys_module or SYS_MODULE
    if (base / "kvm_pvm").exists():
        return "kvm-pvm"
    if (base / "kvm_intel").exists() or (base / "kvm_amd").exists():
        return "kvm"
    return None


def dev_kvm_usable(dev: Path | None = None) -> bool:
    dev = dev or DEV_KVM
    return dev.exists() and os.access(dev, os.R_OK | os.W_OK)


def kvm_kind(sys_module: Path | None = None, dev: Path | None = None) -> str | None:
    """"kvm", "kvm-pvm", or None if /dev/kvm is absent or not read/writable by us."""
    if not dev_kvm_usable(dev):
        return None
    kind = kvm_module_kind(sys_module)
    # /dev/kvm usable but no known vendor module (e.g. built into the kernel without a
    # /sys/module entry): treat it as hardware virtualization.
    return kind or "kvm"


def kvm_status(sys_module: Path | None = None, dev: Path | None = None) -> str:
    """A short human description of the host's KVM, for `ksync env`."""
    dev = dev or DEV_KVM
    mod = kvm_module_kind(sys_module)
    if not dev.exists():
        return f"none ({dev} absent)" + (f"; module {mod} loaded" if mod else "")
    if not dev_kvm_usable(dev):
        return f"{mod or 'kvm'} ({dev} not read/writable by this user)"
    if mod == "kvm-pvm":
        return "kvm-pvm (paravirtual: guest ring-0 code is interpreted, cmpxchg16b faults)"
    return mod or "kvm"


def auto_accel(sys_module: Path | None = None, dev: Path | None = None) -> str:
    """The accelerator `--accel auto` picks: kvm only for real hardware virtualization."""
    return "kvm" if kvm_kind(sys_module, dev) == "kvm" else "tcg"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def cpu_model(cpuinfo: Path | None = None) -> str:
    text = _read(cpuinfo or PROC_CPUINFO) or ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return re.sub(r"\s+", " ", value.strip())
    return "unknown"


def cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_tsc_hz(cpuinfo: Path | None = None) -> tuple[int | None, str]:
    """Best guess of the host TSC frequency: (hz or None, where it came from).

    Sources, in order: /sys/devices/system/cpu/cpu0/tsc_freq_khz (some kernels export
    it), then the nominal "@ X.XXGHz" in the CPU model name (the TSC runs at the nominal
    frequency on CPUs with constant_tsc).  Linux does not otherwise publish it.
    """
    khz = _read(Path("/sys/devices/system/cpu/cpu0/tsc_freq_khz"))
    if khz and khz.strip().isdigit():
        return int(khz.strip()) * 1000, "sysfs tsc_freq_khz"
    model = cpu_model(cpuinfo)
    m = re.search(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*([GM])Hz", model)
    if m:
        scale = 1e9 if m.group(2) == "G" else 1e6
        return int(round(float(m.group(1)) * scale)), "cpu model name (nominal)"
    return None, "unknown"


def _run(cmd: list[str], cwd: Path | None = None, timeout: float = 10) -> str | None:
    try:
        p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return p.stdout


def git_commit(repo: Path | str) -> str:
    """Short commit of HEAD (12 hex digits), "-dirty" if the tree has changes, else "unknown"."""
    if shutil.which("git") is None:
        return "unknown"
    head = _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=Path(repo))
    if not head or not head.strip():
        return "unknown"
    commit = head.strip()
    status = _run(["git", "status", "--porcelain"], cwd=Path(repo))
    if status is None or status.strip():
        commit += "-dirty"
    return commit


def find_qemu(explicit: str | None = None) -> str | None:
    """Path of the QEMU binary to use, or None if it cannot be found/executed."""
    if explicit:
        p = Path(explicit)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
        found = shutil.which(explicit) if os.sep not in explicit else None
        return found
    return shutil.which(QEMU_BINARY)


def qemu_version(qemu: str | None = None) -> str:
    """e.g. "7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)", or "unknown"."""
    qemu = qemu or find_qemu()
    if not qemu:
        return "unknown"
    out = _run([qemu, "--version"])
    if not out or not out.strip():
        return "unknown"
    first = out.strip().splitlines()[0].strip()
    m = re.match(r"QEMU emulator version\s+(.*)", first)
    return m.group(1).strip() if m else first


def describe(repo: Path | str, qemu: str | None = None) -> dict:
    """All detected facts as one dict (what `ksync env` prints)."""
    tsc_hz, tsc_src = host_tsc_hz()
    return {
        "host_cpu_model": cpu_model(),
        "host_cpus": cpu_count(),
        "host_tsc_hz": tsc_hz,
        "host_tsc_source": tsc_src,
        "kvm": kvm_kind(),
        "kvm_status": kvm_status(),
        "auto_accel": auto_accel(),
        "qemu": find_qemu(qemu),
        "qemu_version": qemu_version(qemu),
        "commit": git_commit(repo),
    }
