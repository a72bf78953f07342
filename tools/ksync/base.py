"""The base layer of the report: what every report module shares, importing no other module
of the tool.

* the document model: ``Table``, ``Figure``, ``Finding``, ``Document``, ``ColumnSpec``,
  ``build_table``, ``VERDICTS``;
* formatting: ``fmt_ticks``, ``fmt_ratio``, ``fmt_hz``, ``fmt_sig``, ``fmt_pct``,
  ``fmt_count``, ``num``, ``dig``, ``obj``, ``ticks_to_us``;
* spreads and verdicts: ``Spread``, ``spread_of``, ``compare_greater``, ``fmt_spread``,
  ``spread_ratio``, ``cap_first``;
* the papers' printed figures (Small & Manley 1997's Tables 3 to 7) and the papers' names.

A report module (one per paper or experiment) imports this module, never another report
module; tests/test_tool_layers.py checks that.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

DASH = "—"



@dataclass
class ColumnSpec:
    header: str
    cell: Callable[[Any], str]
    align: str = "r"  # "l" or "r"



@dataclass
class Figure:
    src: str        # file name relative to the report (e.g. "lossmap.png")
    caption: str
    svg: str = ""   # the same figure as SVG (relative to the report), linked beside it



@dataclass
class Table:
    title: str
    headers: list[str]
    rows: list[list[str]]
    align: list[str]
    notes_above: list[str] = field(default_factory=list)
    notes_below: list[str] = field(default_factory=list)
    images: list[Figure] = field(default_factory=list)

    def __post_init__(self) -> None:
        # every cell a string and every row as wide as the header: a None or a short row
        # from a table builder renders as an empty cell instead of failing the report
        n = len(self.headers)
        self.rows = [[("" if c is None else str(c)) for c in row][:n]
                     + [""] * (n - len(row)) for row in self.rows]
        self.align = (list(self.align) + ["l"] * n)[:n]



# A finding (DESIGN.md, "The report"): one claim of a paper that a run measured, the
# 1990s figure, today's figure with its environment, and a verdict computed from the data.
# "input of the model": the claimed quantity is a parameter of the experiment (a synthetic
# load's rates and lengths), so the run can show it but not judge it.
VERDICTS = ("holds", "reversed", "within noise", "not measurable here", "input of the model")

UNJUDGED = ("not measurable here", "input of the model")   # the terminal says why



@dataclass
class Finding:
    paper: str          # e.g. "Small & Manley 1997"
    claim: str          # the paper's claim, one phrase
    then: str           # the 1990s figure as the paper prints it
    today: str          # today's figure (with its spread where there is one)
    env: str            # environment of today's figure: "tcg, 2 CPUs", "hosted, 1 core"
    verdict: str        # one of VERDICTS, computed from the data, never hard-coded
    note: str = ""      # optional: how the verdict was computed / why not measurable

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")



@dataclass
class Chapter:
    """One paper (or libksync against its peers): its findings, then its tables."""
    title: str
    findings: list[Finding] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


@dataclass
class Summary:
    """The report's first screen: what ran, where, when and how long; the verdict counts;
    the findings that matter most (``top``) and the rule that chose them."""
    facts: list[tuple[str, str]] = field(default_factory=list)
    counts: list[tuple[str, int]] = field(default_factory=list)
    top: list[Finding] = field(default_factory=list)
    rule: str = ""


@dataclass
class Document:
    title: str
    meta: list[tuple[str, str]] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)   # rendered before the tables
    # a document of chapters (document.py) opens with its summary; ``tables`` and
    # ``findings`` are then the chapters' own, in chapter order
    chapters: list[Chapter] = field(default_factory=list)
    summary: Summary | None = None



def build_table(title: str, items: Iterable[Any], columns: Sequence[ColumnSpec],
                notes_above: Iterable[str] = (), notes_below: Iterable[str] = ()) -> Table:
    rows = [[str(c.cell(item)) for c in columns] for item in items]
    return Table(title=title, headers=[c.header for c in columns], rows=rows,
                 align=[c.align for c in columns], notes_above=list(notes_above),
                 notes_below=list(notes_below))

TEXT_WIDTH = 120   # terminal tables and notes fit in this many columns (DESIGN.md)



def fmt_ticks(x: Any) -> str:
    """2 decimals below 100, 1 below 1000, else none."""
    if x is None:
        return "?"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "?"
    if abs(v) < 100:
        return f"{v:.2f}"
    if abs(v) < 1000:
        return f"{v:.1f}"
    return f"{v:.0f}"



def fmt_ratio(x: float) -> str:
    if abs(x) >= 100:
        s = f"{x:.0f}"
    elif abs(x) >= 10:
        s = f"{x:.1f}"
    else:
        s = f"{x:.2f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s



def fmt_hz(hz: Any) -> str:
    try:
        v = float(hz)
    except (TypeError, ValueError):
        return "unknown"
    if v <= 0:
        return "unknown"
    return f"{v / 1e9:.3f} GHz"



# --- the paper's figures (Small & Manley 1997; "ms" in the paper's text means µs) -------
MHZ_1997 = 120.0

CYCLES_1997 = {"offchip": 304, "onchip": 21, "flag": 6}        # Table 5, cycles per pair

US_1997 = {"offchip": 2.5, "onchip": 0.18, "flag": 0.05}       # Table 5, as printed



# The costs the paper's Table 6 was computed with: Table 5's printed µs (304 cycles at
# 120 MHz would be 2.53 µs and give spl-pessim 9.1 % for Andrew local, not the printed 9.0).
COSTS_1997 = {k: v * 1e-6 for k, v in US_1997.items()}          # seconds



# Table 3 (cli-pessim): mean crit/s, std %, max crit/s, mean duration µs
T3_1997 = {"andrew-local": (36048, 60, 72521, 3.1), "andrew-nfs": (25867, 68, 72940, 4.6),
           "webstone": (34468, 31, 82653, 3.3), "serial-115.2": (47762, 0.05, 47807, 0.6)}



# Table 4 (spl-optim): mean crit/s, std %, interrupted/s, interrupted %
T4_1997 = {"andrew-local": (31904, 69, 15, 0.05), "andrew-nfs": (25172, 67, 50, 0.2),
           "webstone": (33890, 33, 300, 0.9), "serial-115.2": (45269, 8, 140, 0.3)}



# Table 6: synchronization overhead %, columns as WORKLOADS. model_1997 reproduces all 16
# cells from T3/T4/US_1997 under paper_round (hundredths, then tenths, half up); two
# cells need that two-step rounding: cli-pessim Andrew local (0.649 -> 0.65 -> 0.7, once:
# 0.6) and spl-optim WebStone (0.247 -> 0.25 -> 0.3, once: 0.2). Table 6r says so.
T6_1997 = {"spl-pessim": (9.0, 6.5, 8.6, 11.9), "spl-optim": (0.2, 0.1, 0.3, 0.3),
           "cli-pessim": (0.7, 0.5, 0.6, 0.9), "cli-optim": (0.2, 0.1, 0.2, 0.2)}



# Table 7 (spl-optim): test, seconds, irqs, irqs/s, mean µs, std %, min, median, max µs
T7_1997 = [
    ("ide disk", 3.2, 1027, 321, 1519, 7, 15, 1545, 2003),
    ("scsi disk", 8.8, 553, 61, 65, 15, 16, 64, 86),
    ("scsi cd-rom", 13.4, 3931, 293, 27, 7, 20, 26, 40),
    ("floppy", 64.2, 506, 8, 169, 57, 4, 200, 271),
    ("serial-300 (8K)", 274, 8221, 30, 9, 5, 9, 9, 12),
    ("serial-38.4 (64K)", 17.4, 8195, 471, 27, 2, 19, 27, 42),
    ("serial-115 (64K)", 5.8, 8176, 1410, 27, 4, 11, 27, 54),
    ("ethernet-small", 2.4, 1003, 418, 78, 25, 44, 78, 370),
    ("ethernet-large", 3.4, 1703, 501, 487, 8, 45, 491, 1194),
]



def num(x: Any) -> float | None:
    """A finite float, or None for anything else (missing, text, bool, NaN, inf)."""
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None



def dig(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d



def obj(x: Any) -> dict:
    """``x`` if it is a dict, else an empty one (a malformed nested object reads as missing)."""
    return x if isinstance(x, dict) else {}



def fmt_sig(v: float | None, sig: int = 3) -> str:
    """About ``sig`` significant digits, no exponent for ordinary values."""
    if v is None:
        return DASH
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 10 ** sig:
        return f"{v:.0f}"
    if a < 1e-4:
        return f"{v:.1e}"
    return f"{v:.{sig}g}"



def fmt_pct(v: float | None) -> str:
    return DASH if v is None else fmt_sig(v) + "%"



def ticks_to_us(ticks: float | None, hz: float | None) -> float | None:
    if ticks is None or not hz:
        return None
    return ticks / hz * 1e6



def fmt_count(v: float | None) -> str:
    if v is None:
        return DASH
    return f"{v:.0f}" if abs(v) >= 100 or float(v).is_integer() else fmt_sig(v)

SM = "Small & Manley 1997"

MP = "Massalin & Pu 1991"



# environments whose figures are hardware costs for a claim about on-chip / off-chip costs:
# under tcg every instruction is emulated, under kvm-pvm ring-0 code is interpreted, and
# under kvm a controller access traps to the hypervisor (cli/sti stay on the CPU)
HW_ENVS_ONCHIP = ("bare-metal", "kvm", "hosted")

HW_ENVS_OFFCHIP = ("bare-metal",)

WHY_NOT_HW = {
    "tcg": "under tcg (QEMU software emulation) the kernel's costs are the emulator's, not "
           "hardware costs",
    "kvm-pvm": "under kvm-pvm guest ring-0 code is interpreted: the costs are the "
               "interpreter's",
    "kvm": "under kvm an interrupt-controller access traps to the hypervisor",
}



@dataclass(frozen=True)
class Spread:
    lo: float
    mid: float
    hi: float
    how: str            # "3 runs" / "min..p99"

    def __add__(self, other: "Spread") -> "Spread":
        how = self.how if self.how == other.how else f"{self.how} + {other.how}"
        return Spread(self.lo + other.lo, self.mid + other.mid, self.hi + other.hi, how)



def spread_of(row: dict | None) -> Spread | None:
    """The spread of one measured row (a prims or irq_prim row): the range of its run
    medians when it carries two or more, else min .. p99 of its batches; None without a
    median."""
    if not isinstance(row, dict):
        return None
    mid = num(row.get("median"))
    if mid is None:
        return None
    runs = [m for m in (num(x) for x in row.get("run_medians") or []) if m is not None]
    if len(runs) >= 2:
        return Spread(min(runs), mid, max(runs), f"{len(runs)} runs")
    lo, hi = num(row.get("min")), num(row.get("p99"))
    return Spread(min(lo, mid) if lo is not None else mid,
                  mid, max(hi, mid) if hi is not None else mid, "min..p99")



def compare_greater(a: Spread, b: Spread) -> str:
    """Verdict on the claim "a is greater than b": holds when a's whole spread lies above
    b's, reversed when below, within noise when they overlap."""
    if a.lo > b.hi:
        return "holds"
    if a.hi < b.lo:
        return "reversed"
    return "within noise"



def cap_first(text: str) -> str:
    """A sentence's first letter capitalised, unless it starts with an identifier."""
    first = text.split(" ", 1)[0]
    if "_" in first or any(c.isupper() for c in first[1:]):
        return text
    return text[:1].upper() + text[1:]



def fmt_spread(s: Spread) -> str:
    return f"{fmt_ticks(s.mid)} ({fmt_ticks(s.lo)}..{fmt_ticks(s.hi)})"



def spread_ratio(a: Spread, b: Spread) -> str:
    return f"{fmt_ratio(a.mid / b.mid)}x" if b.mid > 0 else f"{DASH} (divisor 0)"


# ---- Sprite's saturation projection (spritereport, spriteuserreport) ----------------
def mva(demands: list[float], think: float, n: int) -> list[float]:
    """Exact mean-value analysis of a closed network: one queueing centre per demand (ticks
    per unit of work), a delay of ``think``; the throughputs (units per tick) for 1..n
    customers."""
    d = [float(x) for x in demands]
    if think < 0 or any(x < 0 for x in d):
        raise ValueError("demands and think time must be >= 0")
    q = [0.0] * len(d)
    out: list[float] = []
    for m in range(1, n + 1):
        r = [di * (1.0 + qi) for di, qi in zip(d, q)]
        total = think + sum(r)
        if total <= 0:
            raise ValueError("no demand and no think time")
        x = m / total
        q = [x * ri for ri in r]
        out.append(x)
    return out


def knee(cycle: float, demand: float) -> float:
    """N* = the 1-CPU cycle time over the lock's service demand: the CPU count at which the
    lock would be busy all the time."""
    return cycle / demand if demand > 0 else math.inf
