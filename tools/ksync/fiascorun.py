"""Issue 12's runs: Hohmuth & Haertig's Table 2 (kernel/exp/fiasco.c) and Table 1
(kernel/exp/lateness.c) booted under QEMU and on the hosted port, and the Linux half of the
lateness comparison (linuxguest.py): Debian's PREEMPT_RT and standard kernels running
cyclictest in the same QEMU configuration, interleaved with ksync's boots, and cyclictest
on the host beside the hosted kernel. Everything lands in ``fiasco.json``::

    {"meta": {...},
     "plan": {"pairs", "seconds", "section_us", "smp", "icount_shift", ...},
     "runs": [one record per ksync boot: {"platform": "qemu"|"hosted", "env":
              "tcg"|"tcg-icount"|"hosted", "pair": i, "status", "reason", "log",
              "cmdline", "side": {...}, "rows": [fiasco_cost and lateness rows]}],
     "linux": [one dict per Linux run (linuxguest.run / host_cyclictest) with "pair",
               "env" and "flavour" ("rt", "std", "host")],
     "linux_missing": {"rt": reason|None, "std": reason|None, "host": reason|None},
     "other_qemu": [other QEMU processes seen on the host before the runs]}

The order of the QEMU runs is the interleaving: pair i = ksync, Linux-RT, Linux, then i+1.
"""
from __future__ import annotations

import shutil
from pathlib import Path
import subprocess
import sys
from dataclasses import dataclass

from . import hkernel, qemu, spriterun
from .util import KsyncError, display_path

from .fiascoreport import FIASCO_JSON, LAT_CONFIGS, linux_periods  # one name for each
KINDS = ("fiasco_cost", "lateness", "fiasco_skipped")


@dataclass(frozen=True)
class FiascoPlan:
    """What the Fiasco runs measure (per set)."""
    pairs: int          # interleaved (ksync, Linux-RT, Linux) rounds under QEMU
    seconds: int        # lateness per configuration per ksync boot; cyclictest -D
    section_us: int     # the load's critical sections (lat_section_us=)
    icount_pairs: int   # the same under -icount (one vCPU)
    icount_shift: int
    hosted_pairs: int   # hosted kernel + host cyclictest rounds
    timeout: float


def plans(set_name: str) -> FiascoPlan:
    if set_name == "bench":
        return FiascoPlan(pairs=5, seconds=10, section_us=100, icount_pairs=3, icount_shift=4,
                          hosted_pairs=5, timeout=900.0)
    # the default set (make run's 15 minutes): 4 tcg pairs (5 took make run to 15:09 on the
    # 2-core AMD EPYC guest once the real-program parts were added; the bench set keeps 5)
    return FiascoPlan(pairs=4, seconds=2, section_us=100, icount_pairs=3, icount_shift=4,
                      hosted_pairs=3, timeout=300.0)


def words(plan: FiascoPlan, first: bool) -> list[str]:
    """The kernel command line of one ksync boot: Table 2 only in the first of a series."""
    return [f"lat_seconds={plan.seconds}", f"lat_section_us={plan.section_us}"]


# The lateness under every interrupt scheme (issue 12 item 6: "under the interrupt schemes
# where it matters"): one -icount boot (one vCPU: instruction-counted, deterministic) of
# each scheme's kernel, with the configurations the scheme decides - helping (its locks'
# and the scheduler's critical sections) and master-scheme (master locks masked through
# the scheme); 1 s each.
SWEEP_CONFIGS = ("helping", "master-scheme")
SWEEP_SECONDS = 1


def sweep_words(plan: FiascoPlan) -> list[str]:
    return [f"lat_seconds={SWEEP_SECONDS}", f"lat_section_us={plan.section_us}",
            "lat_configs=" + ",".join(SWEEP_CONFIGS)]


def filt(first: bool) -> str:
    return "fiasco,lateness" if first else "lateness"


def code_site(elf: Path | None, addr: str) -> str | None:
    """``function (file:line)`` of a kernel code address: the first inlined frame outside
    the tracker's own header (arch_impl.h), via addr2line -f -i; None if unknown."""
    a2l = shutil.which("addr2line")
    if not a2l or elf is None or not Path(elf).is_file():
        return None
    try:
        p = subprocess.run([a2l, "-f", "-i", "-e", str(elf), addr], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
                           timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    out = p.stdout.splitlines()
    for func, loc in zip(out[0::2], out[1::2]):
        if "arch_impl.h" in loc or loc.startswith("??"):
            continue
        path, _, line = loc.split(" ")[0].rpartition(":")
        return f"{func} ({Path(path).name}:{line})"
    return None


def record(platform: str, env: str | None, res, smp: int, host_model: str, pair: int) -> dict:
    bootobj = res.boot or {}
    rows = [dict(o) for o in res.objects if o.get("kind") in KINDS]
    lat = [r for r in rows if r["kind"] == "lateness"]
    elf = getattr(getattr(res, "symbolizer", None), "elf", None)
    for r in lat:       # the tracker's longest window, by name (WINDOWS=1 kernels)
        for k in ("win_open", "win_close"):
            if isinstance(r.get(k), str):
                r[k + "_at"] = code_site(elf, r[k])
    ok = bool(res.passed and lat)
    reason = None if ok else (res.reason or "the kernel printed no lateness row")
    return {
        "platform": platform, "env": env or res.env, "pair": pair,
        "status": "ok" if ok else "failed", "reason": reason,
        "log": display_path(res.log_path), "cmdline": res.cmdline,
        "wall_s": round(res.elapsed, 2) if getattr(res, "elapsed", None) is not None else None,
        "side": spriterun.boot_side(bootobj, smp, host_model),
        "rows": rows,
    }


def failed_record(platform: str, env: str | None, reason: str, pair: int) -> dict:
    return {"platform": platform, "env": env, "pair": pair, "status": "failed",
            "reason": reason, "log": None, "cmdline": None, "side": None, "rows": []}


def boot_qemu(cfg: qemu.BootConfig, host_model: str, pair: int, env: str | None = None,
              echo=None) -> dict:
    try:
        res = qemu.boot(cfg, echo=echo)
    except KsyncError as e:
        return failed_record("qemu", env, str(e), pair)
    if not res.passed:
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    return record("qemu", env, res, cfg.smp, host_model, pair)


def boot_hosted(cfg: hkernel.HostedBootConfig, host_model: str, pair: int, echo=None) -> dict:
    try:
        res = hkernel.boot(cfg, echo=echo)
    except KsyncError as e:
        return failed_record("hosted", "hosted", str(e), pair)
    if not res.passed:
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    return record("hosted", "hosted", res, cfg.smp, host_model, pair)


def summary(rec: dict) -> str:
    if rec["status"] != "ok":
        return f"FAILED: {rec['reason']}"
    parts = []
    for r in rec["rows"]:
        if r.get("kind") == "lateness":
            parts.append(f"{r['config']} max {r['max']} us")
    return ", ".join(parts)


def linux_summary(res: dict) -> str:
    """The progress line of one Linux run: its samples against the periods it should have
    had (the lost ones are its latest: no sample of their own), its max and p99.9 - a
    p99.9 among the samples past the histogram without a value as ">=" (a lower bound)."""
    if not res.get("ok"):
        return f"FAILED: {res.get('reason')}"
    expected, lost = linux_periods(res)
    got = f"{res.get('samples')} samples"
    if expected:
        got += f" of {expected} periods ({lost} lost, {100 * lost / expected:.0f}%)"
    p999 = (f">= {res.get('p999_us')} us (censored)" if res.get("p999_overflow")
            else f"{res.get('p999_us')} us")
    return f"{got}, max {res.get('max_us')} us, p99.9 {p999}"


__all__ = ["FIASCO_JSON", "KINDS", "LAT_CONFIGS", "FiascoPlan", "plans", "words", "filt",
           "record", "failed_record", "boot_qemu", "boot_hosted", "summary", "linux_summary"]
