"""Issue 12's report: Hohmuth & Härtig 2001 ("Pragmatic nonblocking synchronization for
real-time systems", sections 5.1-5.2) regenerated from ``fiasco.json`` (fiascorun.py writes
it; its docstring gives the format): Table 2 (uncontended synchronization costs,
kernel/exp/fiasco.c), Table 1 (lateness of a periodic 250 µs handler under load,
kernel/exp/lateness.c) beside Linux PREEMPT_RT's and standard Linux's cyclictest in the same
QEMU configuration and the host's cyclictest beside the hosted port (linuxguest.py), the
issue's performance bars, every run with its status, and the findings computed from them.

Tables (``TITLES``):

* Table 2: one row per ``fiasco_cost`` row (and scheduler, for the rows with switches), the
  paper's P5 / P-II cycles where it has the row, then per environment the median TSC ticks
  and the ratio to the same environment's CAS row (the paper's 245 / 13 = 19x). Table 2's
  rows come from the first boot of each series only, so a cell is usually one boot's median;
  with several boots it is the median of their medians with min..max.
* Performance bars: the uncontended helping lock's acquire + release <= 2 x one CAS; the
  single-server counter <= 2 x one context switch; ksync's p99.9 and max lateness (the
  ``helping`` configuration) below Linux PREEMPT_RT's in the same QEMU configuration; under
  -icount each configuration's max within its measured-path bound (the tracker's longest
  window + isr.S + the idle entry path + the run's own measured wakeup path). MET / NOT MET
  / WITHIN NOISE / NOT MEASURABLE HERE / NO DATA with the numbers (and why). Cost bars are
  hardware bars: hosted decides, a tcg row is the emulator's cost and says so.
* Table 1: per environment and configuration (noload, helping, master-irqoff, monitor) and
  per Linux flavour: samples, missed and skipped periods, lost / expected, min / p50 / p99 /
  p99.9 / max in µs as the median over the interleaved runs with min..max; the paper's
  maxima (Fiasco 65 µs, L4/x86 541 µs, RTLinux 58 µs, 200 MHz Pentium Pro) as reference
  rows.
* Lateness runs: every ksync boot and Linux run in the interleaving order, with status,
  reason, kernel, boot time, log and the other QEMU processes seen on the host.

Rules: a comparison is of medians over the repeated, interleaved runs, with min..max, and
every verdict - the findings' and the bars' - comes from the spreads
(``findings.compare_greater``: apart, holds / reversed, MET / NOT MET; overlapping, within
noise), never from medians alone. A lateness verdict also needs its figures to describe
the periods: a censored cyclictest percentile (a lower bound, shown "≥") or a side that
lost more of its periods than ``LOST_LIMIT`` allows for the figure (p99.9: 0.1 %) make it
"not measurable here", with the reason (``unjudgeable``). Each ksync-vs-Linux verdict says
that ksync's handler is a kernel thread and cyclictest's a user process's (``ASYM``).
Under tcg every figure is the emulator's: a cost claim measured only there is "not
measurable here"; lateness under tcg includes QEMU's own scheduling noise (labelled). A
hosted run whose ``side.oversubscribed`` is true is correctness only. The paper's "average
lateness below 1 µs" is a finding too: only bare metal can decide it.

Public API: ``FIASCO_JSON``, ``load_fiasco``, ``fiasco_tables``, ``fiasco_findings``,
``fiasco_figures``, ``linux_periods`` (fiascorun's progress line); for the tests:
``TITLES``, ``environments``, ``bars``, ``Bar``, ``BAR_VERDICTS``, ``ksync_lateness``,
``linux_lateness``, ``unjudgeable``, ``LOST_LIMIT``.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from .util import KsyncError
from .base import DASH, Finding, Spread, TEXT_WIDTH, Table, compare_greater, fmt_hz
from .base import fmt_sig as _sig, num as _num
from . import plots

FIASCO_JSON = "fiasco.json"

HH = "Hohmuth & Härtig 2001"
TITLES = {
    "t2": "Table 2 (Hohmuth & Härtig) regenerated: synchronization cost, uncontended",
    "bars": "Performance bars",
    "t1": "Table 1 (Hohmuth & Härtig) regenerated: lateness of a 250 µs periodic handler",
    "runs": "Lateness runs",
    "schemes": "Table 1 under every interrupt scheme (-icount, one CPU)",
}
# kernel/exp/lateness.c's configurations (fiascorun imports them from here)
LAT_CONFIGS = ("noload", "helping", "master-irqoff", "master-scheme", "monitor",
               "helping-sprite")
CONFIG_WORDS = {
    "noload": "no load",
    "helping": "load, shared objects under helping locks",
    "master-irqoff": "load, master locks with interrupts off (L4/x86's style)",
    "master-scheme": "load, master locks masked by the build's interrupt scheme (crit_enter)",
    "monitor": "load, monitor locks without priority inheritance",
    "helping-sprite": "load as helping, plus Hartman & Ousterhout's benchmarks on every CPU",
}
KSYNC_CONFIG = "helping"        # ksync's own configuration in the Linux comparison
FLAVOUR_WORDS = {"rt": "Linux PREEMPT_RT cyclictest", "std": "Linux standard cyclictest",
                 "host": "host cyclictest"}
RUN_WORDS = {"rt": "Linux PREEMPT_RT", "std": "Linux standard", "host": "host cyclictest"}
QEMU_FLAVOURS = ("rt", "std")
HOSTED = "hosted"
HW_ENVS = ("hosted", "kvm", "bare-metal")
METRICS = (("min", "min"), ("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"), ("max", "max"))
PERIOD_US = 250

# Table 2 of the paper: (prefix of our row, the paper's row, P5 cycles, P-II cycles)
ROW_UNSYNC = "counter, unsynchronized"
ROW_CAS = "counter, CAS"
ROW_HLOCK = "counter, helping lock"
ROW_HLOCK_AR = "helping lock acquire+release, uncontended"
# its two locked instructions alone (kernel/exp/fiasco.c, issue 27 item 3): the floor
ROW_HLOCK_FLOOR = "two CAS on one word (the helping lock's floor)"
ROW_SWITCH = "context switch (thread_yield"
ROW_SERVER = "counter, single server, requester donates"
ROW_IPC = "IPC one-way"
PAPER_T2 = (
    (ROW_UNSYNC, "counter, unsynchronized", 2, 2),
    (ROW_CAS, "counter, CAS", 13, 12),
    (ROW_HLOCK, "counter, Fiasco thread lock", 245, 245),
    (ROW_SERVER, "counter, Massalin-Pu-style lock (1 switch)", 627, 607),
    (ROW_IPC, "IPC (Fiasco)", 653, 810),
)
PAPER_T2_REF = (("IPC, L4/x86", 398, 438), ("IPC, L4/x86, small address space", 184, 300))
PAPER_CAS = (13, 12)
PAPER_T1 = (("Fiasco µ-kernel / L4Linux", 65), ("L4/x86 / L4Linux", 541),
            ("RTLinux (handler in kernel mode)", 58))
PAPER_T1_MACHINE = "200 MHz Pentium Pro"
BAR_FACTOR = 2.0
LAT_BAR = "lateness {} < Linux PREEMPT_RT's"
THEN_RT = ("Table 1: maximum lateness Fiasco 65 µs vs RTLinux 58 µs (handler in kernel mode), "
           "'close to RTLinux'")
CLAIM_RT = ("helping locks keep the handler's lateness down with a real-time kernel's: ksync "
            "(configuration helping) below Linux PREEMPT_RT cyclictest, same QEMU "
            "configuration (p99.9)")
CELL_REASON = 76                # a reason longer than this is cut in a cell (whole in a note)

TCG_COST = "tcg: QEMU software emulation; its costs are the emulator's, not hardware costs."
TCG_LATE = ("tcg: QEMU software emulation; lateness under tcg includes the emulator's own "
            "scheduling noise on the host (a vCPU thread descheduled delays the guest's timer).")
ICOUNT_LATE = ("tcg-icount: QEMU software emulation whose guest clock counts instructions "
               "(-icount, one vCPU): host scheduling pauses guest time too, so the lateness "
               "is largely the emulated machine's own.")
OVERSUB = "oversubscribed (more vCPUs than host cores): correctness only, not a timing"


def load_fiasco(path: Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KsyncError(f"{path} not found; run `ksync run fiasco` first (or pass --out DIR)",
                         exit_code=2) from None
    except (OSError, ValueError) as e:
        raise KsyncError(f"cannot read {path}: {e}", exit_code=2) from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise KsyncError(f"{path}: not a ksync fiasco.json (no \"runs\" list)", exit_code=2)
    return data


# ---------------------------------------------------------------------------------------
# small helpers


def _int(x) -> int:
    v = _num(x)
    return int(v) if v is not None else 0


def _dicts(xs) -> list[dict]:
    return [x for x in xs or [] if isinstance(x, dict)] if isinstance(xs, list) else []


def _ticks(v: float | None) -> str:
    if v is None:
        return DASH
    if abs(v) < 100:
        return f"{v:.2f}"
    return f"{v:.1f}" if abs(v) < 1000 else f"{v:.0f}"


def _ratio(x: float | None) -> str:
    if x is None:
        return DASH
    s = f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s + "x"


def _div(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _spread(vals: Iterable[float | None], how: str | None = None):
    v = [x for x in vals if x is not None]
    if not v:
        return None
    return Spread(min(v), statistics.median(v), max(v), how or f"{len(v)} runs")


def _fs(s, fmt=_sig, unit: str = "") -> str:
    """``mid unit (lo..hi)``; the bracket only when the spread has width or several runs."""
    if s is None:
        return DASH
    if s.lo == s.hi == s.mid and s.how in ("1 runs", "1 run"):
        return f"{fmt(s.mid)}{unit}"
    return f"{fmt(s.mid)}{unit} ({fmt(s.lo)}..{fmt(s.hi)})"


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _kernel_short(uname: str | None) -> str:
    """``uname -a`` -> "6.1.0-28-rt-amd64, PREEMPT_RT"."""
    if not uname:
        return "kernel unknown"
    w = str(uname).split()
    rel = w[2] if len(w) > 2 and w[0] == "Linux" else (w[0] if w else "?")
    pre = next((x for x in w if x in ("PREEMPT_RT", "PREEMPT_DYNAMIC", "PREEMPT")), None)
    return f"{rel}, {pre}" if pre else rel


def _uname(uname) -> str:
    """``uname -a`` without the leading "Linux <hostname>" and the trailing machine words."""
    if not uname:
        return DASH
    w = str(uname).split()
    if len(w) > 2 and w[0] == "Linux":
        w = w[2:]
    while w and w[-1] in ("GNU/Linux", "x86_64"):
        w.pop()
    return " ".join(w)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "env"


def _one_line(text, limit: int = 160) -> str:
    t = " ".join(str(text).split())
    return t if len(t) <= limit else t[:limit - 1] + "…"


# ---------------------------------------------------------------------------------------
# the environments


def _lenv(res: dict) -> str:
    """A Linux result's environment in ksync's words: the host's cyclictest sits beside the
    hosted port ("host" -> "hosted"); a guest's is its QEMU configuration (tcg, tcg-icount)."""
    env = str(res.get("env") or "?")
    return HOSTED if env == "host" or res.get("flavour") == "host" else env


def _env_key(name: str) -> tuple:
    return ({"hosted": 0, "tcg": 1, "tcg-icount": 2}.get(name, 3), name)


def _lat_key(e: "Env") -> tuple:
    """Lateness tables: the QEMU comparison first (tcg, tcg-icount, the others), hosted last."""
    return ({"tcg": 0, "tcg-icount": 1, "hosted": 3}.get(e.name, 2), e.name)


@dataclass
class Env:
    name: str
    recs: list[dict] = field(default_factory=list)     # ksync boots (any status)
    linux: list[dict] = field(default_factory=list)    # Linux results (any status)
    meta: dict = field(default_factory=dict)
    plan: dict = field(default_factory=dict)

    @property
    def hosted(self) -> bool:
        return self.name == HOSTED

    @property
    def qemu(self) -> bool:
        return not self.hosted

    @property
    def hw(self) -> bool:
        return self.name in HW_ENVS

    @property
    def tcg(self) -> bool:
        return self.name.startswith("tcg")

    @property
    def icount(self) -> bool:
        return self.name.endswith("-icount")

    def timing(self, rec: dict) -> bool:
        side = rec.get("side") if isinstance(rec.get("side"), dict) else {}
        return rec.get("status") == "ok" and not side.get("oversubscribed")

    @property
    def ok(self) -> list[dict]:
        return [r for r in self.recs if self.timing(r)]

    def side(self) -> dict:
        for r in self.ok + self.recs:
            if isinstance(r.get("side"), dict):
                return r["side"]
        return {}

    @property
    def cpus(self) -> int | None:
        c = _int(self.side().get("cpus"))
        if c:
            return c
        th = [_int(x.get("threads")) for x in self.linux if x.get("ok")]
        return max(th) if th and max(th) else None

    @property
    def tsc_hz(self) -> float | None:
        return _num(self.side().get("tsc_hz"))

    @property
    def short(self) -> str:
        c = self.cpus
        unit = "vCPU" if self.hosted else "CPU"
        return self.name + (f", {c} {unit}{'s' if c != 1 else ''}" if c else "")

    @property
    def what(self) -> str:
        """The environment column of a table: its name, CPUs and what its figures are."""
        if self.hosted:
            return f"{self.short} (real CPU)"
        if self.tcg:
            return f"{self.short} (emulator)"
        return self.short

    @property
    def label(self) -> str:
        """The environment words of findings and notes."""
        side = self.side()
        model = side.get("cpu_model") or self.meta.get("host_cpu_model") or "unknown CPU"
        c = self.cpus
        if self.hosted:
            words = f"hosted (the real CPU: {model})"
            if c:
                words += f", {c} vCPUs"
                cores = _int(side.get("host_cores"))
                if cores:
                    words += f" on {cores} host cores"
            if side.get("sched"):
                words += f", {side['sched']}"
            return words
        cw = f", {c} CPU{'s' if c != 1 else ''}" if c else ""
        if self.icount:
            shift = self.plan.get("icount_shift")
            return (f"{self.name} (QEMU software emulation, -icount"
                    + (f" shift={shift}" if shift is not None else "") + f"){cw}, host CPU "
                    f"{model}")
        if self.tcg:
            return f"tcg (QEMU software emulation){cw}, host CPU {model}"
        return f"{self.name}{cw}, host CPU {model}"

    # -- rows --
    def rows(self, kind: str) -> list[tuple[dict, dict]]:
        return [(rec, r) for rec in self.ok for r in _dicts(rec.get("rows"))
                if r.get("kind") == kind]

    def cost_keys(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for _, r in self.rows("fiasco_cost"):
            k = (str(r.get("row")), str(r.get("sched") or "-"))
            if k not in out:
                out.append(k)
        return out

    def cost(self, prefix: str, sched: str | None = None) -> list[dict]:
        """The fiasco_cost rows (one per boot) whose name starts with ``prefix`` (and of
        ``sched`` when given)."""
        return [r for _, r in self.rows("fiasco_cost")
                if str(r.get("row", "")).startswith(prefix)
                and (sched is None or str(r.get("sched") or "-") == sched)]

    def scheds(self, prefix: str) -> list[str]:
        out = []
        for r in self.cost(prefix):
            s = str(r.get("sched") or "-")
            if s not in out:
                out.append(s)
        return out

    def lat_rows(self, config: str) -> list[dict]:
        return [r for _, r in self.rows("lateness") if r.get("config") == config]

    def failed_words(self) -> str | None:
        bad = [r for r in self.recs if r.get("status") != "ok"]
        if not bad:
            over = [r for r in self.recs if r.get("status") == "ok" and not self.timing(r)]
            return f"{len(over)} of {len(self.recs)} boots {OVERSUB}" if over else None
        reasons = list(dict.fromkeys(_one_line(r.get("reason") or "no reason", 140)
                                     for r in bad))
        return (f"{len(bad)} of {len(self.recs)} ksync boots failed: " + "; ".join(reasons[:2])
                + (f" (+{len(reasons) - 2} more)" if len(reasons) > 2 else ""))


def environments(data: dict | None) -> list[Env]:
    """The environments of the ksync boots and the Linux runs, hosted first, then tcg, then
    tcg-icount, then the others."""
    if not isinstance(data, dict):
        return []
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
    envs: dict[str, Env] = {}
    for rec in _dicts(data.get("runs")):
        name = str(rec.get("env") or rec.get("platform") or "?")
        envs.setdefault(name, Env(name, meta=meta, plan=plan)).recs.append(rec)
    for res in _dicts(data.get("linux")):
        name = _lenv(res)
        envs.setdefault(name, Env(name, meta=meta, plan=plan)).linux.append(res)
    return sorted(envs.values(), key=lambda e: _env_key(e.name))


def _missing(data: dict, flavour: str) -> str | None:
    m = data.get("linux_missing") if isinstance(data.get("linux_missing"), dict) else {}
    r = m.get(flavour)
    return str(r) if r else None


# ---------------------------------------------------------------------------------------
# lateness: per configuration (ksync) and per flavour (Linux)


@dataclass
class Lat:
    who: str                          # "helping" / "Linux PREEMPT_RT cyclictest" ...
    runs: int = 0
    samples: int = 0
    missed: int | None = None         # ksync only: a tick while the handler still worked
    skipped: int | None = None        # periods with no sample of their own (both sides)
    expected: int | None = None       # periods the runs should have had (both sides)
    m: dict = field(default_factory=dict)            # metric -> Spread | None
    lower_bound: dict = field(default_factory=dict)  # metric -> True (cyclictest overflow)
    mean: Spread | None = None        # the mean lateness per run (ksync: from the histogram)
    hist: dict = field(default_factory=dict)         # whole µs bucket -> count (summed)
    over: int = 0                     # samples above the histogram's range (no value)
    over_at: int = 0                  # where that range ends (µs)
    incomplete: bool = False          # histogram counts short of the samples
    reason: str | None = None         # why no data

    @property
    def lost(self) -> int:
        return (self.missed or 0) + (self.skipped or 0)

    @property
    def lost_frac(self) -> float | None:
        """The share of the expected periods that have no sample (None: unknown)."""
        return self.lost / self.expected if self.expected else None

    def lost_cell(self) -> str:
        if not self.expected:
            return DASH
        return f"{self.lost} / {self.expected} ({_pct(self.lost_frac)})"


def _pct(x: float | None) -> str:
    if x is None:
        return DASH
    p = 100 * x
    return f"{p:.2f} %" if p < 1 else f"{p:.1f} %" if p < 10 else f"{p:.0f} %"


def _skipped(r: dict) -> int:
    return max(0, _int(r.get("expected")) - _int(r.get("samples")) - _int(r.get("missed")))


# kernel/exp/lateness.c's histogram: lower bucket edges, 1 µs wide below 100 µs, 10 µs below
# 1 ms, 100 µs above, then the overflow count past HIST_US (100 ms); its rows say
# "hist_truncated". Rows without that key are the first kernel's: 1 µs buckets to 5 ms.
KSYNC_HIST_US, KSYNC_HIST_US_V1 = 100000, 5000


def _khist_end(r: dict) -> int:
    return KSYNC_HIST_US if "hist_truncated" in r else KSYNC_HIST_US_V1


def _kbucket_width(r: dict, lo: int) -> int:
    if "hist_truncated" not in r:
        return 1
    return 1 if lo < 100 else 10 if lo < 1000 else 100


def _ksync_mean(r: dict) -> tuple[float, float] | None:
    """(lowest, highest) mean lateness of one ksync row: its exact "mean" (the kernel's sum
    of the samples over their count), or for rows without it what the histogram allows:
    every sample at its bucket's lower edge, then at its upper edge (an overflow sample
    between the histogram's end and the row's max). None when the histogram does not hold
    every sample."""
    mean = _num(r.get("mean"))
    if mean is not None:
        return mean, mean
    n, lo, hi = 0, 0.0, 0.0
    for pair in r.get("hist") or []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            b, c = _int(pair[0]), _int(pair[1])
            n += c
            lo += b * c
            hi += (b + _kbucket_width(r, b)) * c
    over, end = _int(r.get("overflow")), _khist_end(r)
    if over:
        n += over
        lo += end * over
        hi += max(end, _num(r.get("max")) or end) * over
    if not n or n != _int(r.get("samples")):
        return None
    return lo / n, hi / n


def ksync_lateness(env: Env, config: str) -> Lat:
    rows = env.lat_rows(config)
    lat = Lat(config)
    if not rows:
        why = env.failed_words()
        if not env.recs:
            lat.reason = f"no ksync boot under {env.name}"
        elif why and not env.ok:
            lat.reason = why
        else:
            lat.reason = f"no {config} row in the {len(env.ok)} ok boots"
        return lat
    lat.runs = len(rows)
    lat.samples = sum(_int(r.get("samples")) for r in rows)
    lat.missed = sum(_int(r.get("missed")) for r in rows)
    lat.skipped = sum(_skipped(r) for r in rows)
    lat.expected = sum(_int(r.get("expected")) for r in rows) or None
    for key, _ in METRICS:
        lat.m[key] = _spread((_num(r.get(key)) for r in rows), _runs(len(rows)))
    means = [_ksync_mean(r) for r in rows]
    if means and all(x is not None for x in means):
        lat.mean = Spread(min(x[0] for x in means),
                          statistics.median((x[0] + x[1]) / 2 for x in means),
                          max(x[1] for x in means), _runs(len(rows)))
    lat.over_at = max(_khist_end(r) for r in rows)
    for r in rows:
        got = 0
        for pair in r.get("hist") or []:
            if isinstance(pair, (list, tuple)) and len(pair) == 2:
                b, c = _int(pair[0]), _int(pair[1])
                lat.hist[b] = lat.hist.get(b, 0) + c
                got += c
        lat.over += _int(r.get("overflow"))
        if got + _int(r.get("overflow")) < _int(r.get("samples")):
            lat.incomplete = True
    return lat


def linux_periods(x: dict, plan: dict | None = None) -> tuple[int | None, int | None]:
    """(expected, lost) periods of one cyclictest run: its duration over its interval per
    thread (cyclictest's -D and -i; the plan's seconds and Table 1's period for a result
    that does not carry them), and per thread the expected periods its samples fall short
    of. cyclictest, like ksync's clock, moves its next deadline past "now" after a late
    wakeup (``next += interval`` until ahead): the periods in between have no sample. A
    thread that started late loses its first periods too (a few on an idle host).
    (None, None) when the duration or the thread count is unknown."""
    seconds = _num(x.get("seconds")) or _num((plan or {}).get("seconds"))
    interval = _num(x.get("interval_us")) or PERIOD_US
    threads = _int(x.get("threads"))
    if not seconds or not threads:
        return None, None
    per = int(round(seconds * 1e6 / interval))
    pt = x.get("per_thread") if isinstance(x.get("per_thread"), dict) else {}
    got = [_int(n) for n in pt.get("samples") or []]
    if len(got) != threads:          # no per-thread counts: the run's total
        return per * threads, max(0, per * threads - _int(x.get("samples")))
    return per * threads, sum(max(0, per - n) for n in got)


def linux_lateness(data: dict, env: Env, flavour: str) -> Lat:
    lat = Lat(FLAVOUR_WORDS.get(flavour, flavour))
    mine = [x for x in env.linux if x.get("flavour") == flavour]
    ok = [x for x in mine if x.get("ok")]
    if not ok:
        miss = _missing(data, flavour)
        if mine:
            reasons = list(dict.fromkeys(_one_line(x.get("reason") or "no reason", 140)
                                         for x in mine))
            lat.reason = (f"{len(mine)} of {len(mine)} runs failed: " + "; ".join(reasons[:2]))
        elif miss:
            lat.reason = f"missing: {_one_line(miss, 200)}"
        else:
            lat.reason = f"no {FLAVOUR_WORDS.get(flavour, flavour)} run under {env.name}"
        return lat
    lat.runs = len(ok)
    lat.samples = sum(_int(x.get("samples")) for x in ok)
    periods = [linux_periods(x, env.plan) for x in ok]
    if all(e is not None for e, _ in periods):
        lat.expected = sum(e for e, _ in periods)
        lat.skipped = sum(n for _, n in periods)
    for key, _ in METRICS:
        lat.m[key] = _spread((_num(x.get(f"{key}_us")) for x in ok), _runs(len(ok)))
        if key not in ("min", "max") and any(x.get(f"{key}_overflow") for x in ok):
            lat.lower_bound[key] = True
    lat.mean = _spread((_num(x.get("avg_us")) for x in ok), _runs(len(ok)))
    lat.over_at = max(_int(x.get("buckets")) for x in ok) or 2000   # cyclictest -h
    for x in ok:
        h = x.get("hist_us") if isinstance(x.get("hist_us"), dict) else {}
        got = 0
        for b, c in h.items():
            try:
                bi = int(b)
            except (TypeError, ValueError):
                continue
            lat.hist[bi] = lat.hist.get(bi, 0) + _int(c)
            got += _int(c)
        # overflows without a value (cyclictest's --spike list gives the others theirs,
        # and linuxguest.summarize puts those in hist_us)
        without = _int(x.get("overflows")) - _int(x.get("overflow_values"))
        lat.over += max(0, without)
        if got + max(0, without) < _int(x.get("samples")):
            lat.incomplete = True
    return lat


# A lateness verdict needs the periods its figure describes. Both sides lose periods the
# same way: a wakeup late past the next deadline moves the deadline on (ksync's clock keeps
# the phase; cyclictest adds its interval until it is ahead), and ksync also loses a tick
# that comes while the handler still works. A period is lost only behind a late one, so a
# side that lost more than 1 - q of its periods may have lost exactly its worst 1 - q: its
# q-quantile then describes a better-behaved subset, and no verdict on it stands. The max
# itself survives a loss (each lost period is behind a sample at least as late), but a side
# that lost more than 1 % of its periods spent that share of the run overrunning (under tcg:
# the emulator's vCPU thread descheduled), and its maximum is that overload's: 1 %, p99's
# limit. (The reviewed tcg run lost 62 % of ksync's periods and 78 % of Linux's.)
LOST_LIMIT = {"p50": 0.5, "p99": 0.01, "p999": 0.001, "max": 0.01}
METRIC_WORDS = dict(METRICS)
ASYM = ("Not like with like: ksync's handler is a kernel thread, cyclictest's a thread of a "
        "user process (Fiasco's handler was a user task): ksync's side skips the return to "
        "user mode and its address-space switch.")


def unjudgeable(key: str, *sides: tuple[str, Lat]) -> list[str]:
    """Why no verdict on metric ``key`` between ``sides`` ((name, Lat) pairs) can stand:
    a figure missing, a censored percentile (cyclictest's histogram overflowed: only a lower
    bound is known), an unknown period count, or more periods lost than ``LOST_LIMIT``
    allows, or a side measured once (no spread). Empty: the verdict stands."""
    out = []
    limit = LOST_LIMIT[key]
    words = METRIC_WORDS[key]
    for name, lat in sides:
        if lat.m.get(key) is None:
            out.append(f"{name}: no {words} ({lat.reason or 'no figure'})")
            continue
        if lat.runs < 2:
            out.append(f"{name}: one run, so no spread to judge from (a verdict needs "
                       "repeated runs)")
        if lat.lower_bound.get(key):
            out.append(f"{name}'s {words} is censored: it lies among samples past "
                       f"cyclictest's {lat.over_at} µs histogram that have no value (only "
                       f"≥ {lat.over_at} µs is known)")
        if lat.lost_frac is None:
            out.append(f"{name}: the expected period count is unknown")
        elif lat.lost_frac > limit:
            out.append(f"{name} lost {_pct(lat.lost_frac)} of its periods, more than the "
                       f"{words}'s limit ({_pct(limit)})")
    return out


def _lost_words(*sides: tuple[str, Lat]) -> str:
    """"ksync lost 0 of 8000 periods (0.00 %), Linux 12 of 16000 (0.08 %)"."""
    parts = []
    for i, (name, lat) in enumerate(sides):
        what = (f"{lat.lost} of {lat.expected} periods ({_pct(lat.lost_frac)})"
                if lat.expected else "an unknown number of periods")
        parts.append(f"{name} {'lost ' if i == 0 else ''}{what}")
    return ", ".join(parts)


def _flavours(env: Env) -> tuple[str, ...]:
    return ("host",) if env.hosted else QEMU_FLAVOURS


def _lat_cell(lat: Lat, key: str, unit: str = "") -> str:
    s = lat.m.get(key)
    if s is None:
        return DASH
    return ("≥" if lat.lower_bound.get(key) else "") + _fs(s, unit=unit)


# ---------------------------------------------------------------------------------------
# Table 2


def _paper_t2(row: str) -> tuple[str, int, int] | None:
    for prefix, label, p5, p2 in PAPER_T2:
        if row.startswith(prefix):
            return label, p5, p2
    return None


def _cost_spread(rows: list[dict]):
    """Several boots: the range of their medians; one: min..p99 of its batches/samples."""
    meds = [_num(r.get("median")) for r in rows]
    meds = [m for m in meds if m is not None]
    if not meds:
        return None
    if len(meds) >= 2:
        return _spread(meds)
    r = rows[0]
    mid = meds[0]
    lo, hi = _num(r.get("min")), _num(r.get("p99"))
    return Spread(min(lo, mid) if lo is not None else mid, mid,
                  max(hi, mid) if hi is not None else mid, "min..p99")


def _cost_median(rows: list[dict]) -> float | None:
    meds = [m for m in (_num(r.get("median")) for r in rows) if m is not None]
    return statistics.median(meds) if meds else None


def _cost_cell(rows: list[dict]) -> str:
    meds = [m for m in (_num(r.get("median")) for r in rows) if m is not None]
    if not meds:
        return DASH
    if len(meds) == 1:
        return _ticks(meds[0])
    return f"{_ticks(statistics.median(meds))} ({_ticks(min(meds))}..{_ticks(max(meds))})"


def t2_key(row: str, sched: str) -> str:
    """Table 2's first column: the kernel's row name, and its scheduler when it has one."""
    return row if sched in ("-", "", "None") else f"{row} [{sched}]"


def table2(data: dict, envs: list[Env]) -> Table | None:
    cost_envs = [e for e in envs if e.cost_keys()]
    if not cost_envs:
        return None
    keys: list[tuple[str, str]] = []
    for e in cost_envs:
        for k in e.cost_keys():
            if k not in keys:
                keys.append(k)
    cas = {e.name: _cost_median(e.cost(ROW_CAS)) for e in cost_envs}
    rows = []
    for row, sched in keys:
        p = _paper_t2(row)
        cells = [t2_key(row, sched), p[0] if p else "", f"{p[1]} / {p[2]}" if p else "",
                 f"{_ratio(p[1] / PAPER_CAS[0])} / {_ratio(p[2] / PAPER_CAS[1])}" if p else ""]
        for e in cost_envs:
            rs = e.cost(row, sched)
            rs = [r for r in rs if str(r.get("row")) == row]
            drop = sum(_int(r.get("dropped")) for r in rs)
            cells += [_cost_cell(rs) + (f"; {drop} of {drop + sum(_int(r.get('n')) for r in rs)}"
                                        " samples dropped" if drop else ""),
                      _ratio(_div(_cost_median(rs), cas[e.name]))]
        rows.append(cells)
    for label, p5, p2 in PAPER_T2_REF:          # the paper's reference lines, last
        rows.append([f"(paper only) {label}", label, f"{p5} / {p2}",
                     f"{_ratio(p5 / PAPER_CAS[0])} / {_ratio(p2 / PAPER_CAS[1])}"]
                    + [DASH, DASH] * len(cost_envs))
    headers = ["row (ksync) [scheduler]", "paper's row (Table 2)", "paper cycles P5 / P-II",
               "paper / CAS"]
    for e in cost_envs:
        what = "real CPU" if e.hosted else "emulator" if e.tcg else e.name
        headers += [f"{e.name} ({what}): median TSC ticks", f"{e.name}: / CAS"]
    notes = [
        "Uncontended cost of one operation (kernel/exp/fiasco.c, lock statistics off): rows "
        "without a switch are batches of 256 operations (200 batches, the empty loop's median "
        "subtracted), rows with switches time each operation alone (400 samples, the empty "
        "interval's median subtracted, every thread on CPU 0; samples a row could not time "
        "are dropped and counted in its cell), under each scheduler ([lockfree] / "
        "[locked]). A cell is "
        "the boot's median; Table 2 runs only in the first boot of each series, so with "
        "several boots a cell is the median of their medians (min..max).",
        "Units: ksync's columns are TSC ticks, not core cycles; the paper counted cycles on a "
        "133 MHz Pentium (P5) and a 400 MHz Pentium II. Compare the ratios to the CAS row of "
        "the same column (the paper's thread lock: 245 / 13 = 18.8x), not raw numbers.",
        "Mapping: 'counter, helping lock' is the paper's Fiasco thread lock (a wait-free "
        "helping lock); the single server with donating requesters is its old Massalin-Pu-"
        "style thread lock, but ksync's call includes one switch each way (two switches) "
        "where the paper's row includes one; 'IPC one-way' is a kernel-internal synchronous "
        "message (no address-space crossing), the paper's an L4 short IPC between tasks.",
    ]
    for e in cost_envs:
        notes.append(f"{e.name}: {e.label}; TSC {fmt_hz(e.tsc_hz)}."
                     + (" " + TCG_COST if e.tcg else ""))
    return Table(title=TITLES["t2"], headers=headers, rows=rows,
                 align=["l", "l", "r", "r"] + ["r", "r"] * len(cost_envs),
                 notes_above=notes)


# ---------------------------------------------------------------------------------------
# the bars


@dataclass
class Bar:
    bar: str
    env: str
    measured: str
    limit: str
    verdict: str                      # BAR_VERDICTS (+ " (emulator)")
    note: str = ""
    where: str = ""                   # "hosted", "tcg, locked": the key's bracket

    @property
    def key(self) -> str:
        return f"{self.bar} [{self.where}]" if self.where else self.bar


# A bar's verdict comes from the spreads, as a finding's does (findings.compare_greater):
# MET / NOT MET only when the measured spread lies wholly on one side of the bar's;
# overlapping spreads are WITHIN NOISE, never MET. NOT MEASURABLE HERE: the figures exist
# but cannot decide (a censored percentile, a side that lost too many periods); NO DATA: a
# figure is missing.
MET, NOT_MET, NOISE, UNMEASURABLE, NO_DATA = ("MET", "NOT MET", "WITHIN NOISE",
                                              "NOT MEASURABLE HERE", "NO DATA")
BAR_VERDICTS = (MET, NOT_MET, NOISE, UNMEASURABLE, NO_DATA)


def _tag(verdict: str, emulator: bool) -> str:
    return verdict + (" (emulator)" if emulator else "")


def _bar_le(a: Spread, b: Spread) -> str:
    """The bar "a <= b": MET when a's whole spread is at or below b's, NOT MET when wholly
    above, WITHIN NOISE when they overlap."""
    if a.hi <= b.lo:
        return MET
    if a.lo > b.hi:
        return NOT_MET
    return NOISE


def _scale(s: Spread, k: float) -> Spread:
    return Spread(k * s.lo, k * s.mid, k * s.hi, s.how)


def _cost_bar(env: Env, bar: str, num_prefix: str, den_prefix: str, sched: str | None,
              num_words: str, den_words: str) -> Bar:
    where = env.what
    tag = env.name + (f", {sched}" if sched and sched != "-" else "")
    n = _cost_spread(env.cost(num_prefix, sched))
    d = _cost_spread(env.cost(den_prefix, sched))
    if n is None or d is None:
        missing = num_words if n is None else den_words
        why = env.failed_words() if not env.ok else None
        return Bar(bar, where, DASH, DASH, NO_DATA,
                   why or f"no '{missing}' row under {env.name} (Table 2: first boot only)",
                   tag)
    lim = _scale(d, BAR_FACTOR)
    note = f"ratio {_ratio(n.mid / d.mid) if d.mid else DASH}"
    if n.lo != n.hi or d.lo != d.hi:
        note += f"; spreads: {n.how}" if n.how == d.how else f"; spreads: {n.how} / {d.how}"
    if not env.hw:          # tcg: emulated; kvm-pvm: ring-0 code interpreted
        note += "; the emulator's costs: the hardware bar is hosted's"
    return Bar(bar, where, f"{_fs(n, _ticks)} TSC ticks",
               f"{BAR_FACTOR:g} x {_ticks(d.mid)} = {_fs(lim, _ticks)}",
               _tag(_bar_le(n, lim), not env.hw), note, tag)


def _floor_note(env: Env, b: Bar) -> Bar:
    """With the run's floor row (two CAS on one word: the lock's acquire and release
    instructions and nothing else), the helping-lock bar's note says what the lock adds
    to them and whether two locked instructions alone fit under the bar on this host."""
    f = _cost_median(env.cost(ROW_HLOCK_FLOOR))
    c = _cost_median(env.cost(ROW_CAS))
    h = _cost_median(env.cost(ROW_HLOCK_AR))
    if f is None or not c or h is None:
        return b
    fr = f / c
    words = (f"the floor, two CAS on one word and nothing else, is {_ticks(f)} ticks = "
             f"{_ratio(fr)} a CAS; the lock adds {_ticks(h - f)} ticks to it")
    if fr > BAR_FACTOR:
        words += (f": above the {BAR_FACTOR:g}x bar on this host by itself, so no lock "
                  "with a locked acquire and a locked release meets it here")
    return Bar(b.bar, b.env, b.measured, b.limit, b.verdict,
               (b.note + "; " if b.note else "") + words, b.where)


def _lat_bar(data: dict, env: Env, key: str, words: str) -> Bar:
    bar = LAT_BAR.format(words)
    k = ksync_lateness(env, KSYNC_CONFIG)
    lx = linux_lateness(data, env, "rt")
    measured = (DASH if k.m.get(key) is None else
                f"ksync ({KSYNC_CONFIG}) {_fs(k.m[key], unit=' µs')}")
    limit = (DASH if lx.m.get(key) is None else
             f"Linux PREEMPT_RT {_lat_cell(lx, key, ' µs')}")
    if k.m.get(key) is None or lx.m.get(key) is None:
        why = []
        if k.m.get(key) is None:
            why.append(f"ksync half: {k.reason or 'no figure'}")
        if lx.m.get(key) is None:
            why.append(f"Linux PREEMPT_RT half: {lx.reason or 'no figure'}")
        return Bar(bar, env.what, measured, limit, NO_DATA, "; ".join(why), env.name)
    sides = (("ksync", k), ("Linux", lx))
    notes = [f"{_runs(k.runs)} vs {_runs(lx.runs)}", _lost_words(*sides)]
    why = unjudgeable(key, *sides)
    if why:
        verdict = UNMEASURABLE
        notes.append("no verdict: " + "; ".join(why))
    else:
        verdict = {"holds": MET, "reversed": NOT_MET}.get(
            compare_greater(lx.m[key], k.m[key]), NOISE)
        if verdict == NOISE:
            notes.append("spreads overlap")
    notes.append(ASYM)
    return Bar(bar, env.what, measured, limit, verdict, "; ".join(notes), env.name)


# The -icount bound (issue 12 item 7). isr.S runs 26 instructions before trap_entry's
# first line and 19 after its last: a trap's IF=0 window is up to ISR_INSNS instructions
# longer than the tracker's record of it (trap.c).
#
# It is a measured-path bound, not an analytic one: of its four terms only isr.S's is an
# instruction count; the window is the tracker's measurement, the idle entry path that
# boot's noload irq_min, and the wakeup + switch path the SAME row's path_max (tick hook ->
# handler, the largest of the run). Every sample's lateness is its delivery (deadline ->
# tick hook) plus its path, so what the bar can catch is a delivery later than the longest
# tracked window + isr.S + the idle entry path: a masked region the tracker does not see,
# chained windows, a tick deferred past its window. The note gives that part alone.
BOUND_BAR = "icount max <= measured-path bound"
ISR_INSNS = 45


def bound_parts(env: Env, rec: dict, row: dict) -> dict | None:
    """One boot's measured-path bound for one configuration's row (µs): the tracker's
    longest window on CPU 0, plus isr.S's entry and exit instructions, the entry path of an
    idle CPU (that boot's noload irq_min) and the wakeup + switch path as this row measured
    it (its path_max). ``delivery`` is the first three (the bound on irq_max, the row's
    longest deadline -> tick hook). None without the tracker's figures."""
    shift = _num((env.plan or {}).get("icount_shift"))
    noload = [r for r in rec.get("rows") or [] if r.get("kind") == "lateness"
              and r.get("config") == "noload"]
    win, path = _num(row.get("win_max")), _num(row.get("path_max"))
    entry = _num(noload[0].get("irq_min")) if noload else None
    if shift is None or win is None or path is None or entry is None:
        return None
    isr = ISR_INSNS * (2 ** shift) / 1000.0
    return {"win": win, "isr": isr, "entry": entry, "path": path,
            "delivery": win + isr + entry, "irq_max": _num(row.get("irq_max")),
            "bound": win + isr + entry + path, "max": _num(row.get("max")),
            "open": row.get("win_open_at") or row.get("win_open"),
            "close": row.get("win_close_at") or row.get("win_close")}


def _bound_bars(env: Env) -> list[Bar]:
    out = []
    for cfg in LAT_CONFIGS:
        parts = [p for rec in env.ok for row in rec.get("rows") or []
                 if row.get("kind") == "lateness" and row.get("config") == cfg
                 for p in [bound_parts(env, rec, row)] if p is not None]
        if not parts:
            if env.lat_rows(cfg):
                out.append(Bar(BOUND_BAR, env.what, DASH, DASH, NO_DATA,
                               "no win_max (kernel without WINDOWS=1) or no noload row",
                               cfg))
            continue
        if any(p["max"] is None for p in parts):
            out.append(Bar(BOUND_BAR, env.what, DASH, DASH, NO_DATA,
                           "a row without its max", cfg))
            continue
        # per run, not a spread: -icount runs are the emulated machine's own time
        worst = max(parts, key=lambda p: p["max"] - p["bound"])
        ok = all(p["max"] <= p["bound"] for p in parts)
        note = (f"{_runs(len(parts))}, worst shown; bound = longest masked window "
                f"{_sig(worst['win'])} µs ({worst['open']} -> {worst['close']}) + isr.S "
                f"entry/exit {_sig(worst['isr'])} + idle entry path {_sig(worst['entry'])} "
                f"+ this run's measured wakeup/switch path (path_max) {_sig(worst['path'])}")
        if worst["irq_max"] is not None:
            note += (f"; the delivery alone: irq_max {_sig(worst['irq_max'])} µs vs "
                     f"{_sig(worst['delivery'])} (window + isr.S + entry)")
        out.append(Bar(BOUND_BAR, env.what, f"max {_sig(worst['max'])} µs",
                       f"bound {_sig(worst['bound'])} µs", MET if ok else NOT_MET, note,
                       cfg))
    return out


def bars(data: dict | None) -> list[Bar]:
    if not isinstance(data, dict):
        return []
    envs = environments(data)
    out: list[Bar] = []
    b1 = f"helping lock acquire+release <= {BAR_FACTOR:g} x CAS"
    b2 = f"single server <= {BAR_FACTOR:g} x context switch"
    cost_envs = [e for e in envs if e.cost_keys()]
    hosted = next((e for e in envs if e.hosted), None)
    if hosted is None or not hosted.cost_keys():
        # the hardware bar's environment: always a line, with why it has no data
        h = hosted or Env(HOSTED, meta=data.get("meta") or {})
        why = (h.failed_words() if h.recs else None) or (
            "no hosted boot in this fiasco.json" if not h.recs else
            "no hosted boot printed Table 2 (the first boot of the series)")
        out.append(Bar(b1, h.what, DASH, DASH, NO_DATA, why, HOSTED))
        out.append(Bar(b2, h.what, DASH, DASH, NO_DATA, why, HOSTED))
    for e in cost_envs:
        out.append(_floor_note(e, _cost_bar(e, b1, ROW_HLOCK_AR, ROW_CAS, None,
                                            "helping lock acquire+release", "CAS")))
    for e in cost_envs:
        for s in e.scheds(ROW_SERVER) or ["-"]:
            out.append(_cost_bar(e, b2, ROW_SERVER, ROW_SWITCH, s, "single server",
                                 "context switch"))
    qenvs = [e for e in envs if e.qemu]
    if not qenvs:
        why = ("no QEMU lateness runs in this fiasco.json (hosted only)"
               + (f"; Linux PREEMPT_RT: {_missing(data, 'rt')}" if _missing(data, "rt") else ""))
        for words in ("p99.9", "max"):
            out.append(Bar(LAT_BAR.format(words), "tcg / tcg-icount", DASH, DASH, NO_DATA,
                           why, "QEMU"))
    for e in sorted(qenvs, key=_lat_key):
        out.append(_lat_bar(data, e, "p999", "p99.9"))
        out.append(_lat_bar(data, e, "max", "max"))
    for e in sorted(qenvs, key=_lat_key):
        if e.icount:
            out.extend(_bound_bars(e))
    return out


def bars_table(data: dict) -> Table:
    rows, below = [], []
    got = bars(data)
    # a note cell fits beside the key column in a terminal's column group
    cut = min(CELL_REASON, TEXT_WIDTH - 2 - max((len(b.key) for b in got), default=0))
    for b in got:
        note = b.note
        if len(note) > cut:
            below.append(f"{b.key}: {b.verdict}: {note}")
            note = _one_line(note, cut - 12) + " (see below)"
        rows.append([b.key, b.env, b.measured, b.limit, b.verdict, note])
    return Table(title=TITLES["bars"],
                 headers=["bar [environment]", "environment", "measured",
                          "bar / compared with", "verdict", "note"],
                 rows=rows, align=["l", "l", "r", "r", "l", "l"],
                 notes_above=[
                     "The performance bars: the uncontended helping lock's acquire + release "
                     f"costs at most {BAR_FACTOR:g} x one CAS (rows 'helping lock acquire+"
                     "release, uncontended' and 'counter, CAS'); the single-server counter at most "
                     f"{BAR_FACTOR:g} x one context switch (per scheduler); ksync's lateness "
                     f"(configuration {KSYNC_CONFIG}) p99.9 and max below Linux PREEMPT_RT "
                     "cyclictest's in the same QEMU configuration; under -icount each "
                     "configuration's max within its measured-path bound.",
                     "Verdicts come from the spreads, never from medians alone (costs: TSC "
                     "ticks, the range of the boots' medians, or one boot's min..p99; lateness: "
                     "µs, median over the interleaved runs with min..max): MET or NOT MET only "
                     "when the spreads lie apart, WITHIN NOISE when they overlap. NOT "
                     "MEASURABLE HERE: a figure that cannot decide - a censored cyclictest "
                     "percentile (≥: a lower bound), or a side that lost more of its periods "
                     f"than the figure allows (p99.9: {_pct(LOST_LIMIT['p999'])} of the expected "
                     f"periods, max: {_pct(LOST_LIMIT['max'])}; the lost periods are the late "
                     "ones). NO DATA "
                     "says why a figure is missing. A bar not met is shown, never hidden.",
                     "The cost bars are about hardware: hosted (the real CPU) decides them; a "
                     "tcg row is the emulator's cost, marked (emulator); lateness under tcg "
                     "includes QEMU's own scheduling noise. The lateness bars compare a kernel "
                     "thread (ksync's handler) with a user process's thread (cyclictest): "
                     "each says so in its note, with both sides' run counts and lost "
                     "periods."],
                 notes_below=below)


# ---------------------------------------------------------------------------------------
# Table 1


def t1_key(env: str, who: str) -> str:
    """Table 1's first column: "tcg: ksync helping", "tcg: Linux PREEMPT_RT cyclictest"."""
    return f"{env}: {who}"


def table1(data: dict, envs: list[Env]) -> Table | None:
    lenvs = sorted([e for e in envs if e.recs or e.linux], key=_lat_key)
    if not lenvs:
        return None
    rows, below = [], []

    def why(e: Env, who: str, reason: str | None) -> str:
        text = f"no data: {reason or '?'}"
        if len(text) <= CELL_REASON:
            return text
        below.append(f"{e.short}, {who}: {text}")
        return _one_line(text, CELL_REASON - 12) + " (see below)"

    for label, us in PAPER_T1:      # the paper gives the maximum only
        rows.append([f"paper: {label}", PAPER_T1_MACHINE] + [DASH] * 9
                    + [f"{us}", "the paper's maximum only (average < 1 µs)"])
    for e in lenvs:
        for c in LAT_CONFIGS:
            lat = ksync_lateness(e, c)
            key = t1_key(e.name, f"ksync {c}")
            if not lat.runs:
                rows.append([key, e.what, "0", DASH, DASH, DASH, DASH] + [DASH] * 5
                            + [why(e, f"ksync {c}", lat.reason)])
                continue
            rows.append([key, e.what, str(lat.runs), str(lat.samples),
                         str(lat.missed), str(lat.skipped), lat.lost_cell()]
                        + [_lat_cell(lat, k) for k, _ in METRICS]
                        + [("histogram incomplete (kernel line cut)" if lat.incomplete
                            else "")])
        for fl in _flavours(e):
            lat = linux_lateness(data, e, fl)
            kern = next((_kernel_short(x.get("kernel")) for x in e.linux
                         if x.get("flavour") == fl and x.get("kernel")), None)
            key = t1_key(e.name, FLAVOUR_WORDS[fl])
            if not lat.runs:
                rows.append([key, e.what, "0", DASH, "n/a", DASH, DASH] + [DASH] * 5
                            + [why(e, FLAVOUR_WORDS[fl], lat.reason)])
                continue
            extra = [f"kernel {kern}"] if kern else []
            if lat.lower_bound:
                extra.append("≥: a lower bound (censored)")
            if lat.incomplete:
                extra.append("histogram incomplete")
            rows.append([key, e.what, str(lat.runs), str(lat.samples), "n/a",
                         str(lat.skipped) if lat.skipped is not None else DASH,
                         lat.lost_cell()]
                        + [_lat_cell(lat, k) for k, _ in METRICS] + ["; ".join(extra)])
    headers = ["environment: system", "environment", "runs", "samples", "missed",
               "skipped", "lost / expected", "min (µs)", "p50 (µs)", "p99 (µs)", "p99.9 (µs)",
               "max (µs)", "note"]
    notes = [
        f"Lateness of a periodic {PERIOD_US} µs handler under load, in µs: for ksync the "
        "handler thread's first instruction after its wakeup minus its period's deadline "
        "(kernel/exp/lateness.c: CPU 0's clock at 4000 Hz, the handler a level-0 thread on "
        "CPU 0; load: on every CPU a thread taking the shared object X in bursts, on CPU 0 a "
        "cache-flooding thread; the handler takes its own object Y every period and X every "
        "8th); for Linux cyclictest's thread latency (cyclictest -m -S -p 95 -i 250 -h "
        "<buckets> --spike under hackbench and a 4 MiB memory stream; linuxguest.py). In "
        "both a thread woken by the timer, but not like with like: ksync's is a kernel "
        "thread, cyclictest's a user process's (Fiasco's handler was a user task).",
        "Configurations: " + "; ".join(f"{c}: {w}" for c, w in CONFIG_WORDS.items()) + ".",
        "Each figure is the median over the interleaved runs (one row per configuration per "
        "boot; one cyclictest per Linux run) with min..max in brackets; samples, missed, "
        "skipped and lost are sums over the runs. Both sides skip a period whose deadline "
        "passed before the late wakeup of an earlier one: ksync's clock keeps its phase, "
        "cyclictest adds its interval to the next deadline until it is ahead. ksync: missed, "
        "a tick arrived while the handler still worked on the previous period; skipped, "
        "expected - samples - missed, periods whose tick never came (held back past the next "
        "deadline). cyclictest: skipped, per thread its duration / interval - samples (n/a "
        "missed: its thread does nothing between wakeups; a thread that starts late loses "
        "its first few periods too). lost = missed + skipped of the expected periods; no "
        "side's percentiles contain its lost periods, which are the late ones.",
        "cyclictest truncates to whole µs and its percentiles are bucket upper edges of its "
        "histogram, exact also past the histogram's end when cyclictest's --spike list gave "
        "those samples their values; ≥ marks a censored percentile (a sample past the "
        "histogram without a value: a lower bound, never compared as a figure). ksync's "
        "percentiles are of its sorted samples, exact.",
        f"The paper ({HH}, section 5.1, Table 1) gives only the maximum lateness, on a "
        f"{PAPER_T1_MACHINE} with the local APIC timer, with L4Linux running multi-user "
        "benchmarks and a cache-flooding application; its average lateness was under 1 µs.",
    ]
    for e in lenvs:
        line = f"{e.name}: {e.label}."
        if e.icount:
            line += " " + ICOUNT_LATE
        elif e.tcg:
            line += " " + TCG_LATE
        elif e.hosted:
            line += (" The hosted port's vCPUs are host threads: its lateness includes the "
                     "host kernel's scheduling; the host's cyclictest runs on the same CPUs.")
        notes.append(line)
    return Table(title=TITLES["t1"], headers=headers, rows=rows,
                 align=["l", "l", "r", "r", "r", "r", "r", "r", "r", "r", "r", "r", "l"],
                 notes_above=notes, notes_below=below)


# ---------------------------------------------------------------------------------------
# the runs


def _pids(lines) -> str:
    items = [str(x) for x in lines or []]
    if not items:
        return "none"
    pids = [s.split()[0] for s in items if s.split()]
    return f"{len(items)}: pid " + ", ".join(pids[:4]) + ("…" if len(pids) > 4 else "")


def runs_table(data: dict) -> Table | None:
    recs = _dicts(data.get("runs"))
    lin = _dicts(data.get("linux"))
    if not recs and not lin:
        return None
    order: dict[str, int] = {}
    for x in recs:
        order.setdefault(str(x.get("env") or x.get("platform") or "?"), len(order))
    for x in lin:
        order.setdefault(_lenv(x), len(order))
    items = []
    for i, x in enumerate(recs):
        env = str(x.get("env") or x.get("platform") or "?")
        items.append(((order[env], _int(x.get("pair")), 0, i), "ksync", env, x))
    fl_order = {"rt": 1, "std": 2, "host": 3}
    for i, x in enumerate(lin):
        items.append(((order[_lenv(x)], _int(x.get("pair")), fl_order.get(x.get("flavour"), 4),
                       i), "linux", _lenv(x), x))
    items.sort(key=lambda t: t[0])
    rows, below = [], []

    def cut(n: int, reason) -> str:
        text = str(reason or "?")
        if len(text) <= CELL_REASON:
            return text
        below.append(f"#{n}: {text}")
        return _one_line(text, CELL_REASON - 12) + " (see below)"

    for n, (_, kind, env, x) in enumerate(items, 1):
        if kind == "ksync":
            side = x.get("side") if isinstance(x.get("side"), dict) else {}
            lrows = [r for r in _dicts(x.get("rows")) if r.get("kind") == "lateness"]
            first = next(iter(lrows), {})
            status = str(x.get("status") or "?")
            if status == "ok" and side.get("oversubscribed"):
                status = "ok (oversubscribed: not a timing)"
            what = "ksync" + (" + Table 2" if any(r.get("kind") == "fiasco_cost"
                                                  for r in _dicts(x.get("rows"))) else "")
            kern = (f"ksync, scheme {first.get('scheme') or side.get('scheme') or '?'}, "
                    f"sched {first.get('sched') or '?'}" if lrows else "ksync")
            rows.append([f"#{n} {what} ({env}, pair {x.get('pair', '?')})", status,
                         "" if x.get("status") == "ok" else cut(n, x.get("reason")),
                         kern, DASH, DASH, str(x.get("log") or "(no log)"), DASH])
        else:
            fl = str(x.get("flavour") or "?")
            rows.append([f"#{n} {RUN_WORDS.get(fl, fl)} ({env}, pair {x.get('pair', '?')})",
                         "ok" if x.get("ok") else "failed",
                         "" if x.get("ok") else cut(n, x.get("reason")),
                         _uname(x.get("kernel")),
                         _sig(_num(x.get("boot_s"))) if fl != "host" else "n/a",
                         _sig(_num(x.get("wall_s"))),
                         str(x.get("log") or ("(no log: on the host)" if fl == "host"
                                              else "(no log)")),
                         _pids(x.get("other_qemu"))])
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
    notes = ["The runs in the interleaving order: under QEMU pair i is ksync's boot, then "
             "Linux PREEMPT_RT's and standard Linux's in the same QEMU configuration; on the "
             "hosted port the hosted kernel, then cyclictest on the host. boot: seconds from "
             "QEMU's start to the guest's /init; wall: the whole run."]
    if plan:
        notes.append(f"Plan: {plan.get('pairs', '?')} QEMU pairs, {plan.get('icount_pairs', '?')} "
                     f"under -icount shift={plan.get('icount_shift', '?')}, "
                     f"{plan.get('hosted_pairs', '?')} hosted; {plan.get('seconds', '?')} s per "
                     f"configuration and per cyclictest; load sections of "
                     f"{plan.get('section_us', '?')} µs.")
    if meta:
        notes.append(f"Commit {meta.get('commit', '?')}, {meta.get('timestamp', '?')}, host CPU "
                     f"{meta.get('host_cpu_model', '?')} ({meta.get('host_cpus', '?')} CPUs), "
                     f"QEMU {meta.get('qemu_version', '?')}, set {meta.get('set', '?')}.")
    miss = {k: v for k, v in (data.get("linux_missing") or {}).items() if v} \
        if isinstance(data.get("linux_missing"), dict) else {}
    for fl, why in miss.items():
        notes.append(f"{FLAVOUR_WORDS.get(fl, fl)} missing: {_one_line(why, 300)}")
    before = [str(x) for x in data.get("other_qemu") or []]
    during = []
    for x in lin:
        for q in x.get("other_qemu") or []:
            if str(q) not in before and str(q) not in during:
                during.append(str(q))
    if before:
        notes.append(f"Other QEMU processes on the host before the runs ({len(before)}): "
                     + " | ".join(_one_line(q, 150) for q in before))
    else:
        notes.append("No other QEMU process on the host before the runs.")
    if during:
        notes.append(f"Other QEMU processes seen during the Linux runs ({len(during)}): "
                     + " | ".join(_one_line(q, 150) for q in during))
    return Table(title=TITLES["runs"],
                 headers=["run (environment, pair)", "status", "reason", "kernel", "boot (s)",
                          "wall (s)", "log", "other QEMU seen"],
                 rows=rows, align=["l", "l", "l", "l", "r", "r", "l", "l"],
                 notes_above=notes, notes_below=[f"Reason of run {b}" for b in below])


def schemes_table(data: dict) -> Table | None:
    """The lateness under every interrupt scheme (one -icount boot per scheme's kernel,
    data["scheme_sweep"]): per scheme the p50 / p99.9 / max of each swept configuration."""
    recs = _dicts(data.get("scheme_sweep"))
    if not recs:
        return None
    cfgs: list[str] = []
    for x in recs:
        for r in _dicts(x.get("rows")):
            if r.get("kind") == "lateness" and r.get("config") not in cfgs:
                cfgs.append(str(r.get("config")))
    rows, below = [], []
    for x in recs:
        lat = {str(r.get("config")): r for r in _dicts(x.get("rows"))
               if r.get("kind") == "lateness"}
        cells = []
        for c in cfgs:
            r = lat.get(c)
            cells += ([_sig(_num(r.get(k))) if _num(r.get(k)) is not None else DASH
                       for k in ("p50", "p999", "max")] if r else [DASH] * 3)
        status = str(x.get("status") or "?")
        if status != "ok":
            why = str(x.get("reason") or "?")
            below.append(f"{x.get('scheme', '?')}: {why}")
            status = f"{status}: " + _one_line(why, CELL_REASON - 20)
        rows.append([str(x.get("scheme") or "?"), *cells, status])
    plan = data.get("plan") if isinstance(data.get("plan"), dict) else {}
    headers = ["scheme"] + [f"{c} {k} (µs)" for c in cfgs for k in ("p50", "p99.9", "max")] \
        + ["status"]
    return Table(title=TITLES["schemes"], headers=headers, rows=rows,
                 align=["l"] + ["r"] * (3 * len(cfgs)) + ["l"],
                 notes_above=[
                     "The lateness of the 250 µs handler under each interrupt scheme's kernel "
                     "(one kernel per scheme), in the configurations the scheme decides: "
                     "helping (the helping locks' and the scheduler's own critical sections) "
                     "and master-scheme (the load's master locks masked through the scheme: "
                     f"{plan.get('section_us', '?')} µs sections). One boot per scheme under "
                     f"QEMU -icount shift={plan.get('icount_shift', '?')} with one CPU: the "
                     "guest clock counts instructions, so the figures are the emulated "
                     "machine's and repeat from run to run (µs of guest time; not hardware "
                     "costs)."],
                 notes_below=[f"Reason: {b}" for b in below])


def fiasco_tables(data: dict | None) -> list:
    if not isinstance(data, dict) or (not _dicts(data.get("runs"))
                                      and not _dicts(data.get("linux"))):
        return []
    envs = environments(data)
    out = [table2(data, envs), bars_table(data), table1(data, envs), schemes_table(data),
           runs_table(data)]
    return [t for t in out if t is not None]


# ---------------------------------------------------------------------------------------
# findings


def _cost_finding(envs: list[Env], claim: str, then: str, fn):
    """``fn(env) -> (verdict, today, note) | None``: the first hardware environment with data
    decides; an emulator's figures alone make the claim (about costs) not measurable here."""
    got = [(e, fn(e)) for e in envs]
    got = [(e, g) for e, g in got if g is not None]
    for e, (v, today, note) in got:
        if e.hw:
            return Finding(HH, claim, then, today, e.label, v, note)
    for e, (v, today, note) in got:
        return Finding(HH, claim, then, today, e.label, "not measurable here",
                       f"Under {e.name} the figures are the emulator's costs, not hardware "
                       f"costs; the claim is about costs (computed there: {v}). " + note)
    hosted = next((e for e in envs if e.hosted), None)
    why = (hosted.failed_words() if hosted and hosted.recs else None) or \
        "no boot printed Table 2's rows"
    return Finding(HH, claim, then, DASH, "no data", "not measurable here", why + ".")


def _f_hlock_cas(e: Env):
    h, c = _cost_spread(e.cost(ROW_HLOCK)), _cost_spread(e.cost(ROW_CAS))
    if h is None or c is None:
        return None
    ar = _cost_median(e.cost(ROW_HLOCK_AR))
    today = (f"counter under the helping lock {_fs(h, _ticks)} vs CAS {_fs(c, _ticks)} TSC "
             f"ticks: {_ratio(_div(h.mid, c.mid))} (paper {_ratio(245 / 13)} P5, "
             f"{_ratio(245 / 12)} P-II)")
    note = (f"Ratio of medians; spreads {h.how}; holds when the helping lock's spread lies "
            "wholly above CAS's.")
    if ar is not None and c.mid:
        note += (f" The helping lock's acquire+release alone: {_ticks(ar)} ticks = "
                 f"{_ratio(ar / c.mid)} one CAS (bar: <= {BAR_FACTOR:g}x).")
    return compare_greater(h, c), today, note


def _f_server(sched: str):
    def fn(e: Env):
        s, h = _cost_spread(e.cost(ROW_SERVER, sched)), _cost_spread(e.cost(ROW_HLOCK))
        if s is None or h is None:
            return None
        h2 = Spread(2 * h.lo, 2 * h.mid, 2 * h.hi, h.how)
        sw = _cost_median(e.cost(ROW_SWITCH, sched))
        today = (f"single server {_fs(s, _ticks)} vs helping lock {_fs(h, _ticks)} TSC ticks: "
                 f"{_ratio(_div(s.mid, h.mid))} (paper {_ratio(627 / 245)} P5, "
                 f"{_ratio(607 / 245)} P-II)")
        note = ("Holds when the single server's spread lies wholly above twice the helping "
                "lock's (the paper: 'a more-than-twofold improvement'). ksync's single-server "
                "call includes two switches (to the server and back), the paper's one")
        note += (f"; one context switch here: {_ticks(sw)} ticks." if sw is not None else ".")
        return compare_greater(s, h2), today, note
    return fn


def _lat_note(e: Env) -> str:
    if e.icount:
        return (" Under tcg-icount the timings are the emulated machine's (instruction-counted "
                "clock).")
    if e.tcg:
        return (" Under tcg the timings are the emulated machine's and include QEMU's own "
                "scheduling noise on the host.")
    if e.hosted:
        return " Hosted: the real CPU, the vCPUs host threads scheduled by the host kernel."
    return ""


def _max_words(sides: tuple, a: Spread | None, b: Spread | None) -> str:
    """The note's sentence on the maximum: its verdict, or why it has none."""
    if a is None or b is None:
        return ""
    why = unjudgeable("max", *sides)
    if why:
        return "; the maximum: no verdict (" + "; ".join(why) + ")"
    return f"; the maximum compares: {compare_greater(a, b)}"


def _f_irqoff(e: Env):
    lats = {c: ksync_lateness(e, c) for c in LAT_CONFIGS}
    m, h = lats["master-irqoff"], lats["helping"]
    claim = ("interrupt-disabling locks make the handler's lateness worse than helping locks "
             "(configuration master-irqoff vs helping, p99.9)")
    then = ("Table 1: maximum lateness L4/x86 (interrupts disabled liberally) 541 µs vs "
            f"Fiasco (helping locks) 65 µs, {_ratio(541 / 65)}: 'an order of magnitude'")
    if m.m.get("p999") is None or h.m.get("p999") is None:
        return Finding(HH, claim, then, DASH, e.label, "not measurable here",
                       f"No data under {e.name}: " + (m.reason or h.reason or "?") + ".")
    loaded = [c for c in LAT_CONFIGS if c != "noload" and lats[c].m.get("p999")]
    a, b = m.m["p999"], h.m["p999"]
    today = (f"p99.9 {_fs(a, unit=' µs')} vs {_fs(b, unit=' µs')}: "
             f"{_ratio(_div(a.mid, b.mid))}")
    amax, bmax = m.m.get("max"), h.m.get("max")
    if amax is not None and bmax is not None:
        today += (f"; max {_fs(amax, unit=' µs')} vs {_fs(bmax, unit=' µs')}: "
                  f"{_ratio(_div(amax.mid, bmax.mid))}")

    def largest(key: str, base: float) -> str:
        have = [c for c in loaded if lats[c].m.get(key)]
        top = max(have, key=lambda c: lats[c].m[key].mid)
        if top == "helping":
            return "helping itself"
        return f"{top} ({_ratio(_div(lats[top].m[key].mid, base))} helping's)"

    today += f". Largest p99.9 under load: {largest('p999', b.mid)}"
    if bmax is not None:
        today += f"; largest max: {largest('max', bmax.mid)}"
    if m.runs >= 2 and h.runs >= 2:
        note = f"Medians over {_runs(m.runs)} with min..max"
    else:
        note = "One run: no spread"
    sides = (("master-irqoff", m), ("helping", h))
    note += ("; the verdict is on p99.9 (holds when master-irqoff's spread lies wholly above "
             f"helping's); {_lost_words(*sides)}")
    note += _max_words(sides, amax, bmax)
    note += "."
    why = unjudgeable("p999", *sides)
    verdict = compare_greater(a, b)
    if why:
        note = f"No verdict ({verdict} on the figures): " + "; ".join(why) + ". " + note
        verdict = "not measurable here"
    return Finding(HH, claim, then, today, e.label, verdict, note + _lat_note(e))


def _f_linux(data: dict, e: Env, flavour: str):
    lx = linux_lateness(data, e, flavour)
    k = ksync_lateness(e, KSYNC_CONFIG)
    if flavour == "rt":
        claim = CLAIM_RT
    else:
        claim = ("helping locks keep the handler's lateness down with a real-time kernel's: "
                 "ksync on the hosted port (configuration helping) below the host's "
                 "cyclictest on the same CPUs (p99.9)")
    then = THEN_RT
    if k.m.get("p999") is None or lx.m.get("p999") is None:
        why = []
        if k.m.get("p999") is None:
            why.append(f"ksync half: {k.reason}")
        if lx.m.get("p999") is None:
            why.append(f"{FLAVOUR_WORDS[flavour]}: {lx.reason}")
        return Finding(HH, claim, then, DASH, e.label, "not measurable here",
                       "No data: " + "; ".join(why) + ". " + ASYM)
    a, b = lx.m["p999"], k.m["p999"]
    amax, bmax = lx.m.get("max"), k.m.get("max")
    today = (f"p99.9 ksync {_fs(b, unit=' µs')} vs Linux {_lat_cell(lx, 'p999', ' µs')}"
             + (" (a lower bound)" if lx.lower_bound.get("p999") else "")
             + f": {_ratio(_div(b.mid, a.mid))}")
    sides = (("ksync", k), ("Linux", lx))
    note = (f"Medians over {_runs(k.runs)} (ksync) and {_runs(lx.runs)} (Linux) with "
            "min..max; holds when Linux's p99.9 spread lies wholly above ksync's; "
            + _lost_words(*sides) + " (lost periods are the late ones, in neither side's "
            "percentiles)")
    if amax is not None and bmax is not None:
        today += (f"; max {_fs(bmax, unit=' µs')} vs {_fs(amax, unit=' µs')}: "
                  f"{_ratio(_div(bmax.mid, amax.mid))}")
        note += _max_words(sides, amax, bmax)
    note += "."
    if k.runs < 2 or lx.runs < 2:
        note += " One run on a side: no spread there."
    kern = next((_kernel_short(x.get("kernel")) for x in e.linux
                 if x.get("flavour") == flavour and x.get("ok")), None)
    if kern:
        note += f" Linux: {kern}."
    note += " " + ASYM
    why = unjudgeable("p999", *sides)
    if why:
        return Finding(HH, claim, then, today, e.label, "not measurable here",
                       "No verdict: " + "; ".join(why) + ". " + note + _lat_note(e))
    return Finding(HH, claim, then, today, e.label, compare_greater(a, b), note + _lat_note(e))


CLAIM_AVG = ("the handler's average lateness stays below 1 µs under load (configuration "
             "helping: its mean lateness)")
THEN_AVG = (f"§5.1: 'The average lateness was very small--smaller than 1 µs on all systems' "
            f"(Fiasco, L4/x86, RTLinux; {PAPER_T1_MACHINE}, local APIC timer)")
AVG_ONE = Spread(1.0, 1.0, 1.0, "the paper's bound")
# why an environment's lateness cannot speak for the paper's hardware figure
AVG_WHY = {
    "tcg": "under tcg every instruction is the emulator's, and its timer and vCPU threads the "
           "host's: a microsecond there is not a hardware microsecond",
    "tcg-icount": "under -icount guest time counts instructions (each 2^shift ns, whatever "
                  "it is), so the mean is an instruction count of the emulated path, not a "
                  "hardware time",
    "hosted": "on the hosted port the clock is a POSIX timer signal from the host kernel to a "
              "vCPU thread: the host's signal delivery is inside every sample",
    "kvm": "under kvm the local APIC timer is the hypervisor's emulation: its delivery is "
           "inside every sample",
}
AVG_DEFS = ("The paper measured the time between interrupt occurrences; if its lateness is "
            "each interval's excess over 250 µs, the intervals sum to the run's length and "
            "the average tends to 0 whatever the kernel - ksync measures each sample against "
            "its own period's deadline (no such cancellation), so a microsecond here is not "
            "the paper's quantity either.")


def _f_average(data: dict, envs: list[Env]):
    """Hohmuth & Härtig's average lateness (< 1 µs): only a hardware clock on a real CPU
    (bare metal) can decide it; elsewhere the mean is shown, not judged."""
    got = []
    for e in sorted(envs, key=_lat_key):
        k = ksync_lateness(e, KSYNC_CONFIG)
        if k.mean is None:
            continue
        lin = [linux_lateness(data, e, fl) for fl in _flavours(e)]
        words = f"{e.name}: ksync {_fs(k.mean, unit=' µs')}"
        words += "".join(f", {lx.who} {_fs(lx.mean, unit=' µs')}" for lx in lin
                         if lx.mean is not None)
        got.append((e, k, words))
    note_k = ("ksync's mean per run is the kernel's own (the row's mean), or for a row "
              "without it the range its histogram allows (lower to upper bucket edges, 1, 10, "
              "100 µs wide), shown as the median over the runs with the lowest and highest; "
              "cyclictest's is its own average (whole µs). Lost periods are in neither.")
    if not got:
        return Finding(HH, CLAIM_AVG, THEN_AVG, DASH, "no data", "not measurable here",
                       "No ksync lateness row with a complete histogram in this fiasco.json. "
                       + AVG_DEFS)
    today = "mean lateness " + "; ".join(w for _, _, w in got)
    for e, k, _ in got:
        if e.name == "bare-metal":
            why = unjudgeable("p50", ("ksync", k))     # the mean: p50's loss limit
            if why:
                return Finding(HH, CLAIM_AVG, THEN_AVG, today, e.label, "not measurable here",
                               "No verdict: " + "; ".join(why) + ". " + note_k + " "
                               + AVG_DEFS)
            return Finding(HH, CLAIM_AVG, THEN_AVG, today, e.label,
                           compare_greater(AVG_ONE, k.mean),
                           "Holds when ksync's mean spread lies wholly below 1 µs. " + note_k
                           + " ksync's handler is a kernel thread, the paper's a user task "
                           "(RTLinux's in the kernel). " + AVG_DEFS)
    why = "; ".join(dict.fromkeys(
        AVG_WHY.get(e.name, f"{e.name} is not a hardware clock on a real CPU")
        for e, _, _ in got))
    return Finding(HH, CLAIM_AVG, THEN_AVG, today, "; ".join(e.short for e, _, _ in got),
                   "not measurable here",
                   f"A hardware claim (a 200 MHz Pentium Pro's timer interrupt and switch): "
                   f"{why}; only bare metal decides it. Even there it would not be like with "
                   "like: ksync's handler is a kernel thread, the paper's a user task. "
                   + note_k + " " + AVG_DEFS)


def fiasco_findings(data: dict | None) -> list:
    if not isinstance(data, dict) or (not _dicts(data.get("runs"))
                                      and not _dicts(data.get("linux"))):
        return []
    envs = environments(data)
    out = [_cost_finding(
        envs, "a counter under the helping lock costs more than a CAS-protected one",
        "Table 2: counter, Fiasco thread lock 245 cycles vs CAS 13 (P5) / 12 (P-II): "
        f"{_ratio(245 / 13)}", _f_hlock_cas)]
    scheds: list[str] = []
    for e in envs:
        for s in e.scheds(ROW_SERVER):
            if s not in scheds:
                scheds.append(s)
    for s in scheds or ["lockfree"]:
        out.append(_cost_finding(
            envs, "the helping lock is more than twice as fast as the Massalin-Pu-style "
            f"single server (scheduler {s})",
            "Table 2: counter, old Massalin-Pu-style thread lock 627 (P5) / 607 (P-II) cycles "
            f"vs Fiasco thread lock 245: {_ratio(627 / 245)} ('a more-than-twofold "
            "improvement')", _f_server(s)))
    lenvs = [e for e in envs if e.recs]
    got = [_f_irqoff(e) for e in lenvs]
    measured = [f for f in got if f.today != DASH]
    out += measured or got[:1] or [Finding(
        HH, "interrupt-disabling locks make the handler's lateness worse than helping locks",
        "Table 1: L4/x86 541 µs vs Fiasco 65 µs", DASH, "no data", "not measurable here",
        "No ksync lateness boot in this fiasco.json.")]
    qenvs = [e for e in envs if e.qemu]
    if qenvs:
        out += [_f_linux(data, e, "rt") for e in qenvs]
    else:
        why = "no QEMU lateness runs in this fiasco.json"
        if _missing(data, "rt"):
            why += f"; Linux PREEMPT_RT: {_missing(data, 'rt')}"
        out.append(Finding(HH, CLAIM_RT, THEN_RT, DASH, "no data", "not measurable here", f"No data: {why}."))
    hosted = next((e for e in envs if e.hosted), None)
    if hosted is not None:
        out.append(_f_linux(data, hosted, "host"))
    out.append(_f_average(data, lenvs))
    return out


# ---------------------------------------------------------------------------------------
# figures


def _log_bins(hist: dict[int, int], over: int, over_at: int, per_decade: int = 20
              ) -> tuple[list[float], list[float]]:
    """Whole-µs buckets (bucket b = [b, b+1) µs) re-binned on a log scale from 1 µs; the
    samples above the histogram's range are counted at its edge."""
    pts = dict(hist)
    if over:
        pts[over_at] = pts.get(over_at, 0) + over
    if not pts:
        return [], []
    top = max(pts) + 1
    n = max(1, math.ceil(per_decade * math.log10(max(top, 2))))
    edges = [10 ** (i / per_decade) for i in range(n + 1)]
    edges[0] = 1.0
    counts = [0.0] * n
    for b, c in pts.items():
        x = max(1.0, b + 0.5)
        i = min(n - 1, max(0, int(per_decade * math.log10(x))))
        counts[i] += c
    return edges, counts


def _ccdf(hist: dict[int, int], over: int, over_at: int) -> tuple[list[float], list[float]]:
    """Steps (x µs, fraction of the samples later than x), x = each bucket's upper edge,
    for ``step(where="post")``; the last level runs on to the last sample's bucket."""
    pts = dict(hist)
    if over:
        pts[over_at] = pts.get(over_at, 0) + over
    total = sum(pts.values())
    if total <= 0:
        return [], []
    order = sorted(pts)
    xs, ys, cum = [max(1.0, float(order[0]))], [1.0], 0
    for b in order:
        cum += pts[b]
        left = (total - cum) / total
        if left <= 0:            # the last samples: the line runs on to their bucket
            xs.append(b + 1.0)
            ys.append(ys[-1])
            break
        xs.append(b + 1.0)
        ys.append(left)
    return xs, ys


def _lat_figure(data: dict, e: Env, out_dir: Path):
    from matplotlib import ticker
    plt = plots.plt
    series = []
    for c in LAT_CONFIGS:
        lat = ksync_lateness(e, c)
        if lat.runs and (lat.hist or lat.over):
            series.append((f"ksync {c} ({_runs(lat.runs)})", lat, "-", None))
    styles = {"rt": ("-", "black"), "std": ("--", "#666666"), "host": ("-", "black")}
    absent = []
    for fl in _flavours(e):
        lat = linux_lateness(data, e, fl)
        if lat.runs and (lat.hist or lat.over):
            ls, col = styles[fl]
            series.append((f"{FLAVOUR_WORDS[fl]} ({_runs(lat.runs)})", lat, ls, col))
        else:
            absent.append(f"{FLAVOUR_WORDS[fl]} ({_one_line(lat.reason or 'no histogram', 120)})")
    if not series:
        return None
    import textwrap
    with plt.rc_context(plots.RC):
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11.5, 4.8), constrained_layout=True)
        lo = math.inf
        for i, (label, lat, ls, col) in enumerate(series):
            colour = col or f"C{i}"
            edges, counts = _log_bins(lat.hist, lat.over, lat.over_at)
            if edges:
                ax1.stairs(counts, edges, label=label, color=colour, ls=ls, lw=1.4)
                first = next(j for j, c in enumerate(counts) if c > 0)
                lo = min(lo, edges[first])
            xs, ys = _ccdf(lat.hist, lat.over, lat.over_at)
            if xs:
                ax2.step(xs, ys, where="post", color=colour, ls=ls, lw=1.4, label=label)
        if math.isfinite(lo):
            ax1.set_xlim(left=lo / 1.5)
        for n, (name, us) in enumerate(PAPER_T1):
            for ax in (ax1, ax2):
                ax.axvline(us, color="#999999", ls=":", lw=1)
            short = {0: "Fiasco", 1: "L4/x86", 2: "RTLinux"}[n]
            ax2.text(us, 0.01, f" {short} {us} " if n != 2 else f"{short} {us} ",
                     transform=ax2.get_xaxis_transform(), rotation=90, va="bottom",
                     ha="left" if n != 2 else "right", fontsize=6, color="#666666")
        for y, name in ((1e-2, "p99"), (1e-3, "p99.9")):
            ax2.axhline(y, color="#bbbbbb", ls="--", lw=0.8)
            ax2.text(0.995, y, name, transform=ax2.get_yaxis_transform(), fontsize=7,
                     va="bottom", ha="right", color="#666666")
        ax1.set_xscale("log")
        ax1.set_yscale("log")
        for ax in (ax1, ax2):       # plain numbers: µs read as 100, 1000 (and no mathtext)
            ax.set_xscale("log")
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
                axis.set_minor_formatter(ticker.NullFormatter())
        ax1.set_xlabel("lateness (µs, log scale; bins 1/20 decade)")
        ax1.set_ylabel("periods per bin (count, log scale)")
        ax1.set_title("histogram, summed over the runs")
        ax1.grid(alpha=0.3)
        ax2.set_xlabel("lateness x (µs, log scale)")
        ax2.set_ylabel("fraction of periods later than x (log scale)")
        ax2.set_title("tail: 1 - CDF (dotted: the paper's maxima, µs)")
        ax2.grid(alpha=0.3)
        ax2.legend(fontsize=7, loc="upper right")
        title = f"Lateness of a 250 µs periodic handler under load [{e.short}]"
        lat_end = _sig(max((lat.over_at for _, lat, _, col in series if col is None),
                           default=KSYNC_HIST_US) / 1000)
        env_line = f"environment: {e.label}"
        if e.icount:
            env_line += " (emulated machine, instruction-counted clock)"
        elif e.tcg:
            env_line += " (tcg: includes QEMU's own scheduling noise)"
        fig.suptitle(title + "\n" + "\n".join(textwrap.wrap(env_line, 120)), fontsize=11)
        cap = (f"Lateness ({e.short}) of ksync's handler thread per configuration and of "
               "cyclictest's thread under Linux, in µs: left, the histograms summed over the "
               "runs (log-spaced bins, counts on a log scale); right, the fraction of periods "
               "later than x (dashed: the p99 and p99.9 levels). Dotted verticals: the paper's "
               f"maximum latenesses (Table 1, {PAPER_T1_MACHINE}). Samples beyond a "
               f"histogram's range without a value (ksync {lat_end} ms, cyclictest its bucket "
               "count unless its --spike list gave them one) are drawn at its edge; neither "
               "side's lost periods (missed, skipped) are samples."
               + (" " + TCG_LATE if e.tcg and not e.icount else "")
               + (" Not drawn, no data: " + "; ".join(absent) + "." if absent else ""))
        return plots.save_figure(fig, out_dir, f"fiasco-lateness-{_slug(e.name)}", cap)


def _t2_figure(envs: list[Env], out_dir: Path):
    plt = plots.plt
    np = plots.np
    cost_envs = [e for e in envs if e.cost_keys()]
    groups = [(ROW_HLOCK, None, "helping lock\n(paper: thread lock)", 245, 245),
              (ROW_SERVER, "lockfree", "single server, lockfree\n(paper: Massalin-Pu)", 627,
               607),
              (ROW_IPC, "lockfree", "IPC one-way, lockfree\n(paper: IPC)", 653, 810)]
    series = [("paper P5", [p5 / PAPER_CAS[0] for *_, p5, _ in groups]),
              ("paper P-II", [p2 / PAPER_CAS[1] for *_, p2 in groups])]
    for e in cost_envs:
        cas = _cost_median(e.cost(ROW_CAS))
        vals = [_div(_cost_median(e.cost(pre, s)), cas) for pre, s, *_ in groups]
        if any(v is not None for v in vals):
            what = "real CPU" if e.hosted else "emulator" if e.tcg else e.name
            series.append((f"ksync {e.name} ({what})", vals))
    if len(series) <= 2:
        return None
    with plt.rc_context(plots.RC):
        fig, ax = plt.subplots(figsize=(8.5, 4.6), layout="constrained")
        x = np.arange(len(groups))
        w = 0.8 / len(series)
        for i, (lab, vals) in enumerate(series):
            pos = x - 0.4 + w * (i + 0.5)
            ax.bar(pos, [v if v is not None else np.nan for v in vals], w, label=lab,
                   color=["#bbbbbb", "#888888"][i] if i < 2 else f"C{i - 2}")
        ax.axhline(1.0, color="#444444", ls="--", lw=1)
        ax.set_yscale("log")
        ax.set_xticks(x, [g[2] for g in groups])
        ax.set_ylabel("cost / one CAS in the same column (log scale)")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7)
        import textwrap
        env_line = "environments: " + "; ".join(e.label for e in cost_envs) + \
            (" (tcg: the emulator's costs, not hardware costs)" if any(e.tcg for e in cost_envs)
             else "")
        fig.suptitle("Table 2 (Hohmuth & Härtig): uncontended cost relative to one CAS\n"
                     + "\n".join(textwrap.wrap(env_line, 110)), fontsize=11)
        cap = ("Uncontended cost over one CAS in the same column: the paper's cycles on a P5 "
               "and a P-II (grey), ksync's TSC ticks per environment (medians; ratios are "
               "unit-free). ksync's single-server call includes two switches, the paper's "
               "one." + (" tcg: the emulator's costs." if any(e.tcg for e in cost_envs)
                         else ""))
        return plots.save_figure(fig, out_dir, "fiasco-table2-ratios", cap)


def fiasco_figures(data: dict | None, out_dir: Path) -> dict:
    """The lateness figures (one per environment, under Table 1) and Table 2's ratios to CAS
    beside the paper's, keyed by the title of the table each belongs under."""
    if not isinstance(data, dict):
        return {}
    envs = environments(data)
    out: dict[str, list] = {}
    f = _t2_figure(envs, out_dir)
    if f is not None:
        out.setdefault(TITLES["t2"], []).append(f)
    for e in sorted(envs, key=_lat_key):
        f = _lat_figure(data, e, out_dir)
        if f is not None:
            out.setdefault(TITLES["t1"], []).append(f)
    return out


__all__ = ["FIASCO_JSON", "TITLES", "LAT_CONFIGS", "load_fiasco", "fiasco_tables",
           "fiasco_findings", "fiasco_figures", "environments", "bars", "Bar", "BAR_VERDICTS",
           "ksync_lateness", "linux_lateness", "linux_periods", "unjudgeable", "LOST_LIMIT"]
