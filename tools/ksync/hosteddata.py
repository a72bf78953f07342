"""hosted.json (the kernel on the hosted port): the record of one run and the lookups every
module that reads the runs shares (timing runs, labels, oversubscription, the irq.json view
of the hosted kernel's interrupt rows). Base layer: imports no report module."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .util import KsyncError, display_path

HOSTED_JSON = "hosted.json"

SCHEMA = "ksync-hosted/1"

BEST_EFFORT = "best-effort scheduling"



# DESIGN.md "Hosted port": what the port does not represent, said under every timing table
NOT_FAITHFUL = ("Not represented on the hosted port: privileged instructions, interrupt-"
                "controller MMIO, IDT entry/iret, TLB shootdowns, NMIs; host interrupts still "
                "run while ksync masks, and the host can preempt a vCPU (also one holding a "
                "lock).")



def run_record(scheme: str, cpus: int, flavour: str = "plain",
               host_cores: int | None = None) -> dict:
    """An empty record of one hosted kernel run, keyed by (platform, scheme, cpus)."""
    return {"platform": "hosted", "scheme": scheme, "cpus": cpus, "flavour": flavour,
            "env": "hosted", "status": "failed", "reason": None, "log": None, "elapsed": None,
            "boot": None, "sched": BEST_EFFORT,
            "oversubscribed": None if host_cores is None else cpus > host_cores,
            "host_cores": host_cores,
            "cpu_model": None, "tsc_hz": None, "refused": [], "rows": []}



def make_hosted_data(runs: list[dict], costs: list[dict], meta: dict) -> dict:
    return {"schema": SCHEMA, **meta, "runs": runs, "costs": costs}



def load_hosted(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise KsyncError(f"{display_path(path)}: cannot read: {e}", exit_code=2) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise KsyncError(f"{display_path(path)}: not a {SCHEMA} file", exit_code=2)
    return data



def all_runs(data: dict | None) -> list[dict]:
    return [r for r in (data or {}).get("runs") or [] if isinstance(r, dict)]



def is_oversubscribed(rec: dict) -> bool:
    """A run is a timing figure only when it says it was not oversubscribed."""
    return rec.get("oversubscribed") is not False



def run_label(rec: dict) -> str:
    """The environment words of a hosted run: hosted, CPU model, vCPUs, scheduling; or the
    oversubscribed label."""
    cpus = rec.get("cpus") or "?"
    if rec.get("status") != "ok" and not rec.get("boot"):
        return f"hosted, {cpus} vCPUs: did not run"
    if is_oversubscribed(rec):
        cores = rec.get("host_cores") or "?"
        return (f"hosted, oversubscribed ({cpus} vCPUs on {cores} cores): correctness only, "
                "not a timing figure")
    model = rec.get("cpu_model") or "unknown CPU"
    return f"hosted, {model}, {cpus} vCPUs, {rec.get('sched') or BEST_EFFORT}"



def timing_runs(data: dict | None) -> list[dict]:
    """The ok runs whose figures are timings (not oversubscribed)."""
    return [r for r in all_runs(data) if r.get("status") == "ok" and not is_oversubscribed(r)]



def irq_view(data: dict | None) -> dict:
    """The hosted timing runs of the first CPU count as an irq.json-shaped dict, so the
    Small & Manley tables render from the hosted kernel's rows with the same code."""
    runs = timing_runs(data)
    cpus = runs[0].get("cpus") if runs else None
    recs = []
    for r in runs:
        if r.get("cpus") != cpus:
            continue
        boot = r.get("boot") or {}
        recs.append({"scheme": r.get("scheme"), "status": "ok", "env": "hosted",
                     "cpus": r.get("cpus"), "tsc_hz": r.get("tsc_hz") or boot.get("tsc_hz"),
                     "tsc_source": boot.get("tsc_source"), "boot": boot,
                     "rows": r.get("rows") or []})
    return {"options": {"smp": cpus}, "schemes": recs}

KEEP_OUT = ("boot", "done")          # KSYNC objects not stored as rows



def fill_record(rec: dict, res: Any, labels: dict) -> dict:
    """Fill ``rec`` from a hkernel BootResult and its ``boot_labels``."""
    boot = res.boot or {}
    rec.update(status="ok" if res.passed else "failed", reason=res.reason,
               log=display_path(res.log_path), elapsed=round(res.elapsed, 2),
               boot=boot or None, sched=labels["sched"], oversubscribed=labels["oversubscribed"],
               host_cores=labels["host_cores"], cpu_model=labels["cpu_model"],
               tsc_hz=boot.get("tsc_hz"),
               refused=[{"name": c.name, "reason": c.directive} for c in res.ktap.skipped],
               rows=[dict(o) for o in res.objects if o.get("kind") not in KEEP_OUT])
    for r in rec["rows"]:
        r.setdefault("scheme", rec["scheme"])
        r["env"] = "hosted"
    if res.passed and not rec["rows"]:
        rec["status"], rec["reason"] = "failed", "the hosted kernel printed no KSYNC rows"
    return rec



def placement_sched(lines: list[str]) -> str | None:
    """The scheduling label of a cost program's placement line ("hosted: 2 vCPUs on 2 host
    cores, pinned, SCHED_FIFO"), or None."""
    for line in lines:
        if line.startswith("hosted: ") and " vCPUs on " in line:
            last = line.rsplit(",", 1)[-1].strip()
            return last if last in ("SCHED_FIFO", BEST_EFFORT) else None
    return None
