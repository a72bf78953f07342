"""irq.json (the interrupt-scheme runs) and Small & Manley's cost model (Table 2): the lookup
every module that reads the runs shares (``IrqIndex``), the worst-case and loss helpers,
and ``model_pct``. Base layer: imports no report module."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from . import schemes
from .schemes import SCHEME_INFO
from .util import KsyncError, display_path
from .base import COSTS_1997, DASH, dig, fmt_hz, num

SCHEMA = "ksync-irq/1"

IRQ_JSON = "irq.json"

PRIMS_JSON = "prims.json"

WORKLOADS = ("andrew-local", "andrew-nfs", "webstone", "serial-115.2")

WORKLOAD_LABELS = {"andrew-local": "Andrew local", "andrew-nfs": "Andrew NFS",
                   "webstone": "WebStone", "serial-115.2": "Serial 115.2"}

SOURCES = ("clock", "disk", "serial", "net")

PRIMS = ("offchip", "onchip", "flag", "cr8")



# --- Table 2: the cost model ----------------------------------------------------------
# scheme -> (cost paid per critical section entered, cost paid per interrupted section)
# (kernel/spl/schemes.txt's enter / interrupted columns; cli-spl-pessim is identical to
# cli-pessim in the model, paper 7.1)
MODEL: dict[str, tuple[str, str | None]] = {
    name: (info.enter, info.interrupted) for name, info in SCHEME_INFO.items()}

_MODEL_SHORT = {"offchip": "off", "onchip": "on", "flag": "flag", "cr8": "cr8"}

MODEL_TEXT = {
    name: f"E x {_MODEL_SHORT[e]}" + (f" + I x {_MODEL_SHORT[i]}" if i else "")
    for name, (e, i) in MODEL.items()}

ENV_WHAT = {"tcg": "QEMU TCG (software emulation)",
            "kvm": "QEMU/KVM (hardware virtualization)",
            "kvm-pvm": "QEMU/KVM-PVM (guest ring-0 code interpreted)",
            "bare-metal": "bare metal"}



def model_pct(scheme: str, entered_per_s: float | None, interrupted_per_s: float | None,
              costs_s: dict[str, float | None]) -> float | None:
    """Table 2: percent of each second spent synchronizing, for ``scheme``.

    ``costs_s`` maps offchip / onchip / flag / cr8 to seconds per set+unset pair.
    None when an input the scheme's formula needs is missing."""
    if scheme not in MODEL:
        return None
    per_entered, per_interrupted = MODEL[scheme]
    c1 = num(costs_s.get(per_entered))
    e = num(entered_per_s)
    if c1 is None or e is None:
        return None
    total = e * c1
    if per_interrupted is not None:
        c2 = num(costs_s.get(per_interrupted))
        i = num(interrupted_per_s)
        if c2 is None or i is None:
            return None
        total += i * c2
    return 100.0 * total



def make_irq_data(runs: list[dict], meta: dict, options: dict) -> dict:
    """The ``irq.json`` document: ``meta`` (timestamp, commit, host_cpu_model, host_cpus,
    qemu_version), run ``options`` (smp, irq_seconds, irq_quick, accel) and one record per
    scheme (``scheme``, ``status`` ok|failed, ``reason``, ``log``, ``env``, ``cpus``,
    ``tsc_hz``, ``tsc_source``, ``boot``, ``rows``)."""
    return {"schema": SCHEMA, **meta, "options": dict(options), "schemes": list(runs)}



def load_irq(path: Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KsyncError(f"{path} not found; run `ksync run irq` first (or pass --out DIR)",
                         exit_code=2) from None
    except (OSError, ValueError) as e:
        raise KsyncError(f"cannot read {path}: {e}", exit_code=2) from None
    if not isinstance(data, dict) or not isinstance(data.get("schemes"), list):
        raise KsyncError(f"{path}: not a ksync irq.json (no \"schemes\" list)", exit_code=2)
    return data



class IrqIndex:
    """Lookup over irq.json: only schemes whose run succeeded contribute rows."""

    def __init__(self, data: dict | None):
        self.data = data or {}
        self.runs: dict[str, dict] = {}
        self.order: list[str] = []
        # an --smp sweep (issue 9) stores every (platform, scheme, cpus); the tables index
        # the first CPU count's runs, sweep_table shows the others
        primary = (self.data.get("options") or {}).get("smp")
        for rec in self.data.get("schemes") or []:
            if not isinstance(rec, dict) or not isinstance(rec.get("scheme"), str):
                continue
            if rec.get("requested_cpus") not in (None, primary):
                continue
            name = rec["scheme"]
            if name not in self.runs:
                self.order.append(name)
            self.runs[name] = rec
        known = [s for s in schemes.SCHEMES if s in self.runs]
        self.order = known + [s for s in self.order if s not in known]

    def ok(self, scheme: str) -> bool:
        return (self.runs.get(scheme) or {}).get("status") == "ok"

    def run(self, scheme: str) -> dict:
        return self.runs.get(scheme) or {}

    def rows(self, scheme: str, kind: str) -> list[dict]:
        if not self.ok(scheme):
            return []
        return [r for r in self.run(scheme).get("rows") or []
                if isinstance(r, dict) and r.get("kind") == kind]

    def tsc_hz(self, scheme: str) -> float | None:
        rec = self.run(scheme)
        hz = num(rec.get("tsc_hz")) or num(dig(rec, "boot", "tsc_hz"))
        return hz if hz and hz > 0 else None

    def prim(self, scheme: str, name: str) -> dict | None:
        return next((r for r in self.rows(scheme, "irq_prim") if r.get("name") == name), None)

    def prim_median(self, scheme: str, name: str) -> float | None:
        return num((self.prim(scheme, name) or {}).get("median"))

    def costs_s(self, scheme: str) -> dict[str, float | None]:
        """Primitive medians of this scheme's boot, in seconds."""
        hz = self.tsc_hz(scheme)
        out: dict[str, float | None] = {}
        for p in PRIMS:
            m = self.prim_median(scheme, p)
            out[p] = m / hz if m is not None and hz else None
        return out

    def load(self, scheme: str, workload: str) -> dict | None:
        return next((r for r in self.rows(scheme, "irq_load") if r.get("workload") == workload),
                    None)

    def sources(self, scheme: str) -> list[dict]:
        return self.rows(scheme, "irq_source")

    def losses(self, scheme: str) -> list[dict]:
        return self.rows(scheme, "irq_loss")

    def workloads(self) -> list[str]:
        seen = list(WORKLOADS)
        for s in self.order:
            for r in self.rows(s, "irq_load") + self.rows(s, "irq_source"):
                w = r.get("workload")
                if isinstance(w, str) and w not in seen:
                    seen.append(w)
        return seen

    def schemes_shown(self) -> list[str]:
        """Every scheme in the paper's order plus any unknown ones the data names."""
        return list(schemes.SCHEMES) + [s for s in self.order if s not in schemes.SCHEMES]

    # ---- environment labels
    def env_label(self, scheme: str) -> str | None:
        rec = self.run(scheme)
        if not rec:
            return None
        return f"{rec.get('env') or '?'}, {rec.get('cpus') or '?'} CPUs"

    def env_of(self, names: Iterable[str]) -> str:
        labels = []
        for s in names:
            lab = self.env_label(s) if self.ok(s) else None
            if lab and lab not in labels:
                labels.append(lab)
        return " / ".join(labels) if labels else "no data"

    def env_note(self, names: Iterable[str]) -> str:
        asked = [s for s in names if s]
        names = [s for s in asked if self.ok(s)]
        if not names:
            return ("Environment: no successful run of " + (", ".join(asked) or "any scheme")
                    + f" ({DASH} cells).")
        groups: dict[tuple, list[str]] = {}
        envs = set()
        for s in names:
            rec = self.run(s)
            env = rec.get("env") or "?"
            envs.add(env)
            key = (ENV_WHAT.get(env, env), rec.get("cpus") or "?", fmt_hz(self.tsc_hz(s)),
                   rec.get("tsc_source") or "unknown")
            groups.setdefault(key, []).append(s)
        parts = []
        for (what, cpus, hz, src), members in groups.items():
            who = (f"all {len(members)} schemes" if len(members) == len(names) > 2
                   else ", ".join(members))
            parts.append(f"{who}: {what}, {cpus} CPUs, TSC {hz} ({src})")
        qv = self.data.get("qemu_version")
        text = "Environment: " + "; ".join(parts) + (f"; QEMU {qv}." if qv else ".")
        if "tcg" in envs:
            text += (" Note: under tcg the absolute costs are the emulator's (QEMU TCG), not "
                     "hardware costs; compare ratios and rankings, not absolute figures.")
        if "kvm-pvm" in envs:
            text += (" Note: under kvm-pvm guest ring-0 code is interpreted; costs are the "
                     "interpreter's.")
        return text



def interrupted_pct(ld: dict | None) -> float | None:
    if not ld:
        return None
    pct = num(ld.get("interrupted_pct"))
    if pct is None:
        i, n = num(ld.get("interrupted")), num(dig(ld, "crit", "n"))
        if i is not None and n:
            pct = 100.0 * i / n
    return pct



def prim_source(ix: IrqIndex) -> str | None:
    """The scheme whose boot supplies the hardware-primitive rows of Table 5."""
    for s in [schemes.DEFAULT_SCHEME, *ix.schemes_shown()]:
        if any(ix.prim(s, p) for p in PRIMS):
            return s
    return None



def overheads(ix: IrqIndex, costs: str) -> dict[tuple[str, str], float | None]:
    out = {}
    for s in ix.schemes_shown():
        c = ix.costs_s(s) if costs == "today" else dict(COSTS_1997)
        for w in ix.workloads():
            ld = ix.load(s, w)
            out[(s, w)] = model_pct(s, num(dig(ld, "crit", "per_s_mean")),
                                    num((ld or {}).get("interrupted_per_s")), c) if ld else None
    return out



def lost_frac(r: dict) -> float | None:
    # "chars" counts the characters read, "lost" the overrun ones: the stream is their sum
    chars, lost = num(r.get("chars")), num(r.get("lost"))
    if chars is None or lost is None:
        return None
    if chars + lost <= 0:
        return None
    return lost / (chars + lost)



def worst_case(rows: list[dict]) -> dict | None:
    """The highest baud with the largest PIO handler (most sectors per interrupt, then the
    largest measured handler time)."""
    cand = [r for r in rows if num(r.get("baud")) is not None]
    if not cand:
        return None
    return max(cand, key=lambda r: (num(r.get("baud")), num(r.get("pio_sectors")) or 0,
                                    num(r.get("pio_handler_mean")) or 0))



def loss_grid(rows: list[dict]) -> tuple[list[float], list[float], list[list[float | None]]]:
    """(bauds ascending, pio_sectors ascending, grid[baud][sectors] of lost fractions)."""
    bauds = sorted({num(r.get("baud")) for r in rows if num(r.get("baud")) is not None})
    secs = sorted({num(r.get("pio_sectors")) for r in rows
                   if num(r.get("pio_sectors")) is not None})
    grid: list[list[float | None]] = [[None] * len(secs) for _ in bauds]
    for r in rows:
        b, k = num(r.get("baud")), num(r.get("pio_sectors"))
        if b is None or k is None:
            continue
        grid[bauds.index(b)][secs.index(k)] = lost_frac(r)
    return bauds, secs, grid
