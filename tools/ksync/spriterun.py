"""Issue 11's runs: the Sprite benchmarks (kernel/exp/sprite.c) booted under QEMU and on the
hosted port, their KSYNC rows kept in ``sprite.json`` for the report (spritereport.py).

One record per boot::

    {"platform": "qemu"|"hosted", "env": "tcg"|"hosted"|..., "status": "ok"|"failed",
     "reason": null|str, "log": path, "cmdline": str,
     "side": {"cpus", "cpu_model", "guest_cpu_model", "tsc_hz", "oversubscribed",
              "host_cores", "scheme", "sched"},
     "rows": [every lock_cost / sprite_* / lockstat row of the boot]}

The CPU counts of a boot are 1..its -smp (sprite_cpus=); under TCG the emulated CPUs are
host threads (more of them than host cores is the emulator's scaling, labelled so); on the
hosted port more vCPUs than host cores is "oversubscribed" (correctness only).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from . import envdetect, hkernel, qemu
from .util import KsyncError, display_path

from .spritereport import SPRITE_JSON  # noqa: E402  (one name for the file)
KINDS = ("lock_cost", "sprite_setup", "sprite_bench", "sprite_run", "lockstat",
         "sprite_overhead", "sprite_end", "sprite_skipped")
CONFIGS = ("sprite", "sprite-fix", "synthesis")
LOCKSTAT_MODES = ("off", "counts", "contested", "timing")     # kernel/include/lockstat.h
BENCHES = ("fork", "fexec", "mem", "cswitch", "pdevtest", "pdevtestInd", "pmake", "pmakeInd",
           "troff")


@dataclass(frozen=True)
class SpritePlan:
    """What one platform's boot measures."""
    smp: int
    scale: int          # sprite_scale= (percent of the kernel's default iterations)
    reps: int           # sprite_reps=
    timeout: float


def plans(set_name: str, host_cores: int) -> dict[str, SpritePlan]:
    """The default set (make run) and the bench set (make bench), per platform."""
    hosted_smp = max(1, min(host_cores, 16))
    # Under TCG each emulated CPU is a host thread: with more of them than host cores a
    # master-lock holder's thread waits for a host time slice while the others spin (on a
    # 2-core host the 4-CPU runs took 90 % of a 6-minute boot). make run keeps the QEMU
    # sweep within the host's cores; make bench (and --sprite-smp) go further, labelled.
    qemu_smp = max(1, min(host_cores, 2))
    if set_name == "bench":
        # make bench: 1, 2, 4 (and 8 from 4 host cores up). 8 emulated CPUs on a 2-core
        # host convoy on every spin lock whose next holder's thread the host descheduled:
        # at 2 % scale cswitch (sprite-fix) ran 130 s there against 0.0 s lock-free, and
        # a whole boot would take hours; --sprite-smp 8 still asks for it
        bench_smp = min(8, max(2, 2 * host_cores))
        return {"qemu": SpritePlan(bench_smp, 10, 3, 3600.0),
                "hosted": SpritePlan(hosted_smp, 400, 5, 900.0)}
    return {"qemu": SpritePlan(qemu_smp, 25, 2, 900.0), "hosted": SpritePlan(hosted_smp, 200, 3, 300.0)}


def cpu_words(smp: int) -> list[str]:
    """1, 2, 4, ... up to smp, and smp itself."""
    ks, k = [], 1
    while k < smp:
        ks.append(k)
        k *= 2
    ks.append(smp)
    return [f"sprite_cpus={','.join(str(x) for x in ks)}"]


def words(plan: SpritePlan, extra: list[str] | None = None) -> list[str]:
    return [f"sprite_scale={plan.scale}", f"sprite_reps={plan.reps}", *cpu_words(plan.smp),
            *(extra or [])]


def boot_side(bootobj: dict, smp: int, host_model: str) -> dict:
    """What a record says of the machine a boot ran on (its boot object's facts); the
    Fiasco records (fiascorun.py) use it too."""
    return {"cpus": bootobj.get("cpus_online") or smp, "cpu_model": host_model,
            "guest_cpu_model": bootobj.get("cpu_model"), "tsc_hz": bootobj.get("tsc_hz"),
            "oversubscribed": bool(bootobj.get("oversubscribed")),
            "host_cores": bootobj.get("host_cores") or envdetect.cpu_count(),
            "scheme": bootobj.get("scheme"), "sched": bootobj.get("sched")}


def record(platform: str, res, smp: int, host_model: str) -> dict:
    """A boot's result as a sprite.json record."""
    bootobj = res.boot or {}
    rows = [dict(o) for o in res.objects if o.get("kind") in KINDS]
    end = next((o for o in rows if o["kind"] == "sprite_end"), None)
    ok = bool(res.passed and end is not None)
    reason = None if ok else (res.reason or "the kernel printed no sprite_end row")
    # a statistics mode the kernel refused (lockstat=, sprite_lockstat=): its own words
    said = [l.strip() for l in getattr(res, "lines", None) or []
            if "lockstat=" in l and l.lstrip().startswith("ksync:")]
    if not ok and said:
        reason = f"{reason}: {said[-1]}"

    return {
        "platform": platform, "env": res.env, "status": "ok" if ok else "failed",
        "reason": reason, "log": display_path(res.log_path), "cmdline": res.cmdline,
        "side": boot_side(bootobj, smp, host_model),
        "rows": rows,
    }


def failed_record(platform: str, env: str | None, reason: str) -> dict:
    return {"platform": platform, "env": env, "status": "failed", "reason": reason, "log": None,
            "cmdline": None, "side": None, "rows": []}


def summary(rec: dict) -> str:
    runs = sum(1 for r in rec["rows"] if r.get("kind") == "sprite_run")
    return f"{runs} runs" if rec["status"] == "ok" else f"FAILED: {rec['reason']}"


def boot_qemu(cfg: qemu.BootConfig, host_model: str, echo=None) -> dict:
    try:
        res = qemu.boot(cfg, echo=echo)
    except KsyncError as e:
        return failed_record("qemu", None, str(e))
    if not res.passed:
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    return record("qemu", res, cfg.smp, host_model)


def boot_hosted(cfg: hkernel.HostedBootConfig, host_model: str, echo=None) -> dict:
    try:
        res = hkernel.boot(cfg, echo=echo)
    except KsyncError as e:
        return failed_record("hosted", "hosted", str(e))
    if not res.passed:
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    return record("hosted", res, cfg.smp, host_model)


def make_data(records: list[dict], meta: dict) -> dict:
    return {"meta": meta, "runs": records}


def env_label(rec: dict) -> str:
    """e.g. "hosted, AMD EPYC, 2 vCPUs, SCHED_FIFO" or "tcg, 4 CPUs, host CPU AMD EPYC"."""
    side = rec.get("side") or {}
    env, cpus, model = rec.get("env") or "?", side.get("cpus"), side.get("cpu_model") or "?"
    if rec.get("platform") == "hosted":
        extra = ", oversubscribed" if side.get("oversubscribed") else ""
        sched = f", {side['sched']}" if side.get("sched") else ""
        return f"hosted, {model}, {cpus} vCPUs{sched}{extra}"
    return f"{env}, {cpus} CPUs, host CPU {model}"


def log_name(rec: dict) -> str:
    return rec["log"] or "(no log)"


__all__ = ["SPRITE_JSON", "KINDS", "BENCHES", "CONFIGS", "LOCKSTAT_MODES", "env_label", "SpritePlan", "boot_side", "plans", "cpu_words", "words",
           "record", "failed_record", "summary", "boot_qemu", "boot_hosted", "make_data",
           "Path"]
