"""Issue 11's report: Hartman & Ousterhout's Sprite measurements regenerated from the kernel's
Sprite benchmarks (kernel/exp/sprite.c), under Sprite's locking, Figure 9's fix and the
Synthesis lock-free scheduler, at 1..N CPUs; the saturation projection the paper did by
hand; the lock statistics' own cost; and the findings computed from them.

Data: ``sprite.json`` (tools/ksync/spriterun.py): ``{"meta": {...}, "runs": [record]}``, one
record per boot (``platform``, ``env``, ``status``, ``reason``, ``log``, ``side``, ``rows``).
The rows (kernel/exp/sprite.c's top comment): ``lock_cost``, ``sprite_setup``,
``sprite_bench``, ``sprite_run`` each followed by its ``lockstat`` rows (same ``run`` id),
``sprite_overhead``, ``sprite_end``. Times are TSC ticks (``side.tsc_hz`` converts them).

Rules: a run whose ``side.oversubscribed`` is true (hosted, more vCPUs than host cores) is
correctness only: shown as "not a timing", never in a finding, a bar or a projection. Under
tcg (QEMU software emulation) every figure is the emulator's: the tables say so, and a
finding about a cost (throughput, the projection's knee, the statistics' price) made from
tcg figures alone is "not measurable here". A comparison is of medians over the repeated
runs with their min..max; overlapping spreads are "within noise".

The projection (paper sections 6-7): from the 1-CPU runs, each lock class's service demand
D_c = hold ticks per unit of work, the 1-CPU cycle R1 = elapsed ticks per unit; the knee
N*_c = R1 / D_c; throughput X(N) by exact mean-value analysis (``mva``) with every class a
queueing centre and R1 - sum(D) as think time; beside it a Universal Scalability Law fit
(``usl_fit``) on the measured points. Checked against the highest measured CPU count held
out, and against runs whose kernel lengthened one class's critical sections by a known
amount (``perturb``).

Public API: ``SPRITE_JSON``, ``load_sprite``, ``sprite_tables``, ``sprite_findings``,
``sprite_figures``, ``lockstat_table``, ``lockstat_records``, ``miss_ratios``, ``mva``,
``knee``, ``usl``, ``usl_fit``, ``usl_nmax``, ``TITLES``.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from .util import KsyncError
from .base import knee, mva  # the projection's model, shared with spriteuserreport
from .base import (DASH, Figure, Finding, Spread, Table, compare_greater, fmt_hz, fmt_ratio,
                   fmt_sig, fmt_ticks, num)
from . import plots

SPRITE_JSON = "sprite.json"
HO = "Hartman & Ousterhout (Sprite)"
HO_MP = "Hartman & Ousterhout (Sprite) + Massalin & Pu 1991"
CONFIGS = ("sprite", "sprite-fix", "synthesis")
CONFIG_WORDS = {
    "sprite": "sprite: locked scheduler, monitor wait queues under sched_Mutex (Figure 9: a "
              "monitor's misses and wakeups take it, its hits do not)",
    "sprite-fix": "sprite-fix: locked scheduler, each monitor's own interlock (Figure 9's fix)",
    "synthesis": "synthesis: Massalin & Pu's lock-free scheduler, no sched_Mutex",
}
SCHED_MUTEX = "sched_Mutex"
MIN_HITS = 50                   # "highest miss ratio" ignores classes with fewer hits
BAR_PROJECTION_PCT = 15.0       # projection error at the held-out point
BAR_COUNTS_PCT = 5.0            # counts / contested-only statistics: cost of throughput
BAR_TIMING_PCT = 15.0           # timing statistics: cost of throughput
OH_MODES = ("off", "counts", "contested", "timing")     # the kernel's statistics modes
OH_BARS = {"counts": BAR_COUNTS_PCT, "contested": BAR_COUNTS_PCT, "timing": BAR_TIMING_PCT}
BAR_LOCK_FACTOR = 1.2           # uncontended lock <= 1.2 x cmpxchg + masking pair
MAX_PROJECT = 64                # the MVA curve stops here
HW_ENVS = ("hosted", "kvm", "bare-metal")
NOT_TIMING = "not a timing"
TCG_NOTE = ("tcg: QEMU software emulation; its figures are the emulator's, not hardware "
            "costs.")
OVERSUB_WHY = "oversubscribed hosted run (more vCPUs than host cores): correctness only"
FREEBSD = ("FreeBSD's LOCK_PROFILING costs about 24% profiling every lock, 2.7% profiling "
           "contested locks only")
# title prefixes of the tables (the figures are keyed by the full per-platform title)
TITLES = {
    "runs": "Sprite runs",
    "correct": "Sprite runs, correctness only",
    "elapsed": "Sprite elapsed-time ratio vs CPUs (Figures 2, 3)",
    "incr": "Sprite incremental throughput per added CPU (Figures 4, 5)",
    "miss": "Sprite lock miss ratios (Figures 6, 7, 8, 10)",
    "inputs": "Sprite workload inputs",
    "saturated": "Sprite: the most held lock of each benchmark",
    "lockstat": "Sprite lock statistics, one run",
    "projection": "Sprite saturation projection (sections 6-7)",
    "perturb": "Sprite projection check: lengthened critical sections",
    "lockfree": "Sprite vs lock-free run queues at the top CPU count",
    "overhead": "Sprite lock statistics overhead",
    "lockcost": "Sprite uncontended lock cost",
}
FIGURE_BENCHES = ("cswitch", "pdevtest", "pmake")

# kernel/exp/sprite.c's hand-set inputs, for data that predates the kernel's printing them
# (sprite_setup's "pad", "syscall_work", "pdev_copy", "compile_work"; sprite_bench's
# "takes"). tests/test_tool_sprite_report.py checks this copy against sprite.c.
PAD_BASE = {"handleTableLock": 60, "vmMonitorLock": 80, "perPCBLock": 30, "exitLock": 60,
            "pdevLock": 30, "pipeLock": 20, "fsCacheLock": 40, "fsBlockLock": 40,
            "procTableMutex": 20}
SYSCALL_WORK = 40
PDEV_COPY = 8
COMPILE_WORK = 200000
BENCH_TAKES = {
    "fork": "procTableMutex, vmMonitorLock, perPCBLock, procChildCond, exitLock; a thread "
            "created and joined per child",
    "fexec": "as fork, and the exec: vmMonitorLock (the image freed, 4 pages grown), perPCBLock",
    "mem": "vmMonitorLock (every page); perPCBLock at each exec",
    "cswitch": "handleTableLock (every pipe access), pipeLock, pipeCond; a switch when the peer "
               "sleeps",
    "pdevtest": "handleTableLock (every write), pdevLock, pdevCond, the server's perPCBLock (8 "
                "sections per copy)",
    "pdevtestInd": "as pdevtest, one pseudo-device and server per client",
    "pmake": "procTableMutex, vmMonitorLock, perPCBLock, procChildCond, exitLock (a process per "
             "job), fsCacheLock, fsBlockLock (5 file accesses per job)",
    "pmakeInd": "as pmake, one make per CPU",
    "troff": "fsCacheLock, fsBlockLock (every 4th unit)",
}
# "almost linear" (the macro-benchmark scaling claim): each added CPU brings at least this
# fraction of one processor's throughput; "adds little" (the micro-benchmarks' third
# processor): less than this many processor units
BAR_LINEAR = 0.8
BAR_LITTLE = 0.5


# ---------------------------------------------------------------------------------------
# loading


def load_sprite(path: Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KsyncError(f"{path} not found; run `ksync run sprite` first (or pass --out DIR)",
                         exit_code=2) from None
    except (OSError, ValueError) as e:
        raise KsyncError(f"cannot read {path}: {e}", exit_code=2) from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
        raise KsyncError(f"{path}: not a ksync sprite.json (no \"runs\" list)", exit_code=2)
    return data


# ---------------------------------------------------------------------------------------
# the model: exact MVA, the knee, the Universal Scalability Law


def usl(n: float, lam: float, sigma: float, kappa: float) -> float:
    """Gunther's Universal Scalability Law: X(n) = lam n / (1 + sigma (n-1) + kappa n (n-1))."""
    return lam * n / (1.0 + sigma * (n - 1) + kappa * n * (n - 1))


def usl_fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(sigma, kappa) >= 0 fitted by least squares to ``points`` (n, X(n)), with X(1) (the
    mean of the n = 1 points) as lambda: n lam / X(n) - 1 = sigma (n-1) + kappa n (n-1).
    With one other CPU count besides 1, sigma alone (kappa 0)."""
    import numpy as np
    ones = [x for n, x in points if n == 1]
    if not ones:
        raise ValueError("usl_fit needs X(1)")
    lam = sum(ones) / len(ones)
    pts = [(float(n), float(x)) for n, x in points if n > 1 and x > 0]
    if not pts or lam <= 0:
        return 0.0, 0.0
    a = np.array([[n - 1.0, n * (n - 1.0)] for n, _ in pts])
    y = np.array([n * lam / x - 1.0 for n, x in pts])

    def one(col: int) -> tuple[float, float]:
        c = a[:, col]
        v = max(0.0, float(c @ y / (c @ c)))
        return v, float(np.sum((y - c * v) ** 2))

    if len({n for n, _ in pts}) < 2:
        return one(0)[0], 0.0
    sol, *_ = np.linalg.lstsq(a, y, rcond=None)
    s, k = float(sol[0]), float(sol[1])
    if s >= 0 and k >= 0:
        return s, k
    (s1, r1), (k2, r2) = one(0), one(1)
    return (s1, 0.0) if r1 <= r2 else (0.0, k2)


def usl_nmax(sigma: float, kappa: float) -> float:
    """The CPU count of the USL's peak throughput (inf when it never peaks, 1 when adding a
    CPU never helps)."""
    if sigma >= 1:
        return 1.0
    if kappa <= 0:
        return math.inf
    return max(1.0, math.sqrt((1.0 - sigma) / kappa))


# ---------------------------------------------------------------------------------------
# small helpers


def _med(vals: Iterable[float]) -> float | None:
    v = [x for x in vals if x is not None]
    return statistics.median(v) if v else None


def _sp(vals: Iterable[float | None]) -> Spread | None:
    v = [x for x in vals if x is not None]
    if not v:
        return None
    return Spread(min(v), statistics.median(v), max(v), f"{len(v)} runs")


def _div(a: Spread | None, b: Spread | None) -> Spread | None:
    """a / b with the interval's extremes (b > 0)."""
    if a is None or b is None or b.lo <= 0:
        return None
    return Spread(a.lo / b.hi, a.mid / b.mid, a.hi / b.lo, a.how)


def _scale(s: Spread | None, f: float) -> Spread | None:
    return None if s is None else Spread(s.lo * f, s.mid * f, s.hi * f, s.how)


def _fs(s: Spread | None, fmt: Callable[[float], str] = fmt_sig, unit: str = "") -> str:
    if s is None:
        return DASH
    return f"{fmt(s.mid)}{unit} ({fmt(s.lo)}..{fmt(s.hi)})"


def _pct(v: float | None) -> str:
    return DASH if v is None else f"{fmt_sig(100.0 * v)}%"


def _pcts(s: Spread | None) -> str:
    return _fs(_scale(s, 100.0), unit="%")


def _g(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _int(x) -> int:
    v = num(x)
    return int(v) if v is not None else 0


def _word(verdict: str) -> str:
    """compare_greater's verdict as a table word for "a above b"."""
    return {"holds": "higher", "reversed": "lower"}.get(verdict, verdict)


# ---------------------------------------------------------------------------------------
# one platform's rows


@dataclass
class Source:
    index: int
    rec: dict
    platform: str
    env: str
    short: str                  # "hosted, 2 vCPUs" (table titles)
    label: str                  # the environment words of findings and notes
    tsc_hz: float | None
    cpus: int
    timing: bool
    benches: dict[str, dict] = field(default_factory=dict)
    base: list[dict] = field(default_factory=list)
    perturbed: list[dict] = field(default_factory=list)
    overhead: list[dict] = field(default_factory=list)
    lockstat: dict[int, list[dict]] = field(default_factory=dict)
    costs: list[dict] = field(default_factory=list)
    setup: dict = field(default_factory=dict)
    end: dict | None = None
    stem: str = ""

    @property
    def hw(self) -> bool:
        return self.env in HW_ENVS and self.timing

    def bench_names(self) -> list[str]:
        names = list(self.benches)
        for r in self.base:
            if r.get("bench") not in names:
                names.append(str(r.get("bench")))
        return names

    def kind(self, bench: str) -> str:
        b = self.benches.get(bench) or next((r for r in self.base if r.get("bench") == bench),
                                            {})
        return str(b.get("bench_kind") or "?")

    def fixed(self, bench: str) -> bool:
        b = self.benches.get(bench) or next((r for r in self.base if r.get("bench") == bench),
                                            {})
        return bool(b.get("fixed"))

    def targets(self, bench: str) -> str:
        return str((self.benches.get(bench) or {}).get("targets") or "")

    def configs(self) -> list[str]:
        have = {str(r.get("config")) for r in self.base}
        return [c for c in CONFIGS if c in have] + sorted(have - set(CONFIGS))

    def ks(self, bench: str | None = None, config: str | None = None) -> list[int]:
        return sorted({_int(r.get("cpus")) for r in self.base
                       if (bench is None or r.get("bench") == bench)
                       and (config is None or r.get("config") == config)})

    def top(self, bench: str | None = None, config: str | None = None) -> int:
        ks = self.ks(bench, config)
        return ks[-1] if ks else 0

    def runs(self, bench: str, config: str, k: int, perturbed: bool = False) -> list[dict]:
        rows = self.perturbed if perturbed else self.base
        return [r for r in rows if r.get("bench") == bench and r.get("config") == config
                and _int(r.get("cpus")) == k]

    def ls(self, run: dict) -> list[dict]:
        return self.lockstat.get(_int(run.get("run")), [])

    def cls(self, run: dict, name: str) -> dict | None:
        return next((c for c in self.ls(run) if c.get("class") == name), None)

    def us(self, ticks: float | None) -> float | None:
        return ticks / self.tsc_hz * 1e6 if ticks is not None and self.tsc_hz else None

    def per_s(self, x_per_tick: float) -> float:
        """Units per second (per 10^6 ticks without a TSC rate)."""
        return x_per_tick * (self.tsc_hz or 1e6)

    @property
    def x_unit(self) -> str:
        return "units/s" if self.tsc_hz else "units per 10^6 ticks"

    def title(self, key: str, extra: str = "") -> str:
        return f"{TITLES[key]}{extra} [{self.short}]"


def _label(rec: dict, side: dict, env: str, cpus: int, host: str | None) -> str:
    model = side.get("cpu_model") or host or "unknown CPU"
    if env == "hosted":
        cores = side.get("host_cores")
        words = f"hosted, {model}, {cpus} vCPUs" + (f" on {cores} host cores" if cores else "")
        if side.get("sched"):
            words += f", {side['sched']}"
        if side.get("oversubscribed"):
            words += " (oversubscribed: correctness only, not a timing)"
        return words
    cores = _int(side.get("host_cores"))
    more = (f" on {cores} host cores (more emulated CPUs than host cores: the emulator's "
            "scaling)" if cores and cpus > cores else "")
    if env == "tcg":
        return f"tcg (QEMU software emulation), {cpus} CPUs{more}, host CPU {model}"
    return f"{env}, {cpus} CPUs{more}, host CPU {model}"


def _source(i: int, rec: dict, meta: dict) -> Source:
    side = rec.get("side") if isinstance(rec.get("side"), dict) else {}
    rows = [r for r in rec.get("rows") or [] if isinstance(r, dict)]
    env = str(rec.get("env") or rec.get("platform") or "?")
    setup = next((r for r in rows if r.get("kind") == "sprite_setup"), {})
    cpus = _int(side.get("cpus")) or _int(setup.get("cpus"))
    over = bool(side.get("oversubscribed")) or bool(setup.get("oversubscribed"))
    short = f"{env}, {cpus} {'vCPUs' if env == 'hosted' else 'CPUs'}"
    src = Source(i, rec, str(rec.get("platform") or "?"), env, short,
                 _label(rec, side, env, cpus, meta.get("host_cpu_model")),
                 num(side.get("tsc_hz")), cpus, not over, setup=setup)
    for r in rows:
        k = r.get("kind")
        if k == "sprite_bench":
            src.benches.setdefault(str(r.get("bench")), r)
        elif k == "sprite_run":
            if r.get("oversubscribed"):
                src.timing = False
            (src.perturbed if isinstance(r.get("perturb"), dict) else src.base).append(r)
        elif k == "lockstat":
            src.lockstat.setdefault(_int(r.get("run")), []).append(r)
        elif k == "sprite_overhead":
            src.overhead.append(r)
        elif k == "lock_cost":
            src.costs.append(r)
        elif k == "sprite_end":
            src.end = r
    return src


def _order(rec: dict) -> int:
    return {"hosted": 0, "tcg": 1}.get(str(rec.get("env")), 2)


def sources(sprite: dict | None) -> list[Source]:
    """The ok runs with rows, hosted first, then tcg, then the others."""
    if not isinstance(sprite, dict):
        return []
    meta = sprite.get("meta") if isinstance(sprite.get("meta"), dict) else {}
    recs = [r for r in sprite.get("runs") or [] if isinstance(r, dict)]
    ok = [(i, r) for i, r in enumerate(recs) if r.get("status") == "ok"]
    ok.sort(key=lambda ir: (_order(ir[1]), ir[0]))
    out = [_source(i, r, meta) for i, r in ok]
    out = [s for s in out if s.base or s.costs or s.overhead]
    seen: dict[str, int] = {}
    for s in out:
        slug = re.sub(r"[^a-z0-9]+", "-", s.env.lower()).strip("-") or "run"
        seen[slug] = seen.get(slug, 0) + 1
        s.stem = slug if seen[slug] == 1 else f"{slug}{seen[slug]}"
    shorts: dict[str, int] = {}
    for s in out:
        shorts[s.short] = shorts.get(s.short, 0) + 1
        if shorts[s.short] > 1:
            s.short += f" #{shorts[s.short]}"
    return out


# ---------------------------------------------------------------------------------------
# per-run measures


def _x(run: dict) -> float | None:
    w, e = num(run.get("work")), num(run.get("elapsed_ticks"))
    return w / e if w is not None and e else None


def _xs(runs: list[dict]) -> Spread | None:
    return _sp(_x(r) for r in runs)


def _els(runs: list[dict]) -> Spread | None:
    return _sp(num(r.get("elapsed_ticks")) for r in runs)


def miss_ratios(rows: list[dict], kind: str, min_hits: int = MIN_HITS
                ) -> tuple[float | None, str | None, float | None]:
    """One run's lockstat rows: (the average miss ratio over the classes of ``kind`` with
    hits, the class with the highest ratio among those with >= min_hits hits, its ratio)."""
    ratios = [(str(r.get("class")), _int(r.get("misses")) / _int(r.get("hits")),
               _int(r.get("hits")))
              for r in rows if r.get("lock_kind") == kind and _int(r.get("hits")) > 0]
    if not ratios:
        return None, None, None
    avg = sum(x for _, x, _ in ratios) / len(ratios)
    big = [(x, c) for c, x, h in ratios if h >= min_hits]
    if not big:
        return avg, None, None
    x, c = max(big, key=lambda t: (t[0], t[1]))
    return avg, c, x


@dataclass
class Miss:
    avg: Spread | None
    top: str | None
    top_ratio: Spread | None
    per_class: dict[str, Spread]        # classes with median hits >= MIN_HITS


def _miss(src: Source, runs: list[dict], kind: str) -> Miss:
    avgs, per, hits = [], {}, {}
    for r in runs:
        rows = src.ls(r)
        avgs.append(miss_ratios(rows, kind)[0])
        for c in rows:
            if c.get("lock_kind") == kind and _int(c.get("hits")) > 0:
                name = str(c.get("class"))
                per.setdefault(name, []).append(_int(c.get("misses")) / _int(c.get("hits")))
                hits.setdefault(name, []).append(_int(c.get("hits")))
    big = {n: _sp(v) for n, v in per.items() if (_med(hits[n]) or 0) >= MIN_HITS}
    top = max(big, key=lambda n: (big[n].mid, big[n].hi, n)) if big else None
    ratio = big.get(top) if top else None
    if ratio is not None and ratio.hi == 0:
        top = None          # nothing missed: no class to name
    return Miss(_sp(avgs), top, ratio, big)


def _utils(src: Source, runs: list[dict], min_hits: int = MIN_HITS
           ) -> tuple[dict[str, Spread], dict[str, str]]:
    """hold.total / elapsed per class (the fraction of the run the class was held) for the
    classes with >= min_hits hits (median over the runs), and each class's use."""
    per, use, hits = {}, {}, {}
    for r in runs:
        el = num(r.get("elapsed_ticks"))
        for c in src.ls(r):
            h = num(_g(c, "hold", "total"))
            if el and h is not None and h > 0:
                name = str(c.get("class"))
                per.setdefault(name, []).append(h / el)
                hits.setdefault(name, []).append(_int(c.get("hits")))
                use[name] = str(c.get("use") or "?")
    return {n: _sp(v) for n, v in per.items() if (_med(hits[n]) or 0) >= min_hits}, use


def _top_apart(sp: dict[str, Spread]) -> tuple[str | None, bool]:
    """The entry with the highest median, and whether its spread lies above all others'."""
    if not sp:
        return None, False
    top = max(sp, key=lambda n: (sp[n].mid, n))
    apart = all(sp[top].lo > s.hi for n, s in sp.items() if n != top)
    return top, apart


def _majority(states: list[str], yes: str, no: str) -> str:
    n = len(states)
    if states.count(yes) * 2 > n:
        return "holds"
    if states.count(no) * 2 > n:
        return "reversed"
    return "within noise"


# ---------------------------------------------------------------------------------------
# the lock_stat table (also `ksync lockstat`)


def _t(x: dict, part: str, key: str) -> float | None:
    return num(_g(x, part, key))


def lockstat_records(rows: list[dict], tsc_hz: int | float | None, cpus: int) -> list[dict]:
    """One record per class, most total wait first: counts, miss %, utilisation % of the run's
    CPU time (hold / (elapsed x cpus)), wait and hold times in ticks and (with tsc_hz) µs,
    the call site with the most wait."""
    hz = num(tsc_hz)

    def us(t: float | None) -> float | None:
        return t / hz * 1e6 if t is not None and hz else None

    out = []
    for r in rows:
        if not isinstance(r, dict):
            continue
        hits, misses = _int(r.get("hits")), _int(r.get("misses"))
        el = num(r.get("elapsed_ticks"))
        wt, wn, wm = _t(r, "wait", "total"), _t(r, "wait", "n"), _t(r, "wait", "max")
        ht, hn, hm = _t(r, "hold", "total"), _t(r, "hold", "n"), _t(r, "hold", "max")
        mode = str(r.get("mode") or "timing")
        timing = mode == "timing" and bool(hn or wn)
        # contested-only profiling times the waits of contended acquisitions, not holds
        waits = timing or (mode == "contested" and bool(wn))
        wavg = wt / wn if waits and wn and wt is not None else None
        havg = ht / hn if timing and hn and ht is not None else None
        sites = [s for s in r.get("sites") or [] if isinstance(s, dict)]
        out.append({
            "class": str(r.get("class")), "kind": r.get("lock_kind"), "use": r.get("use"),
            "defined": r.get("defined"), "mode": r.get("mode"),
            "hits": hits, "misses": misses,
            "miss_pct": 100.0 * misses / hits if hits else None,
            "util_pct": (100.0 * ht / (el * cpus) if timing and ht is not None and el
                         and cpus else None),
            "wait_total_ticks": wt if waits else None,
            "wait_avg_ticks": wavg, "wait_max_ticks": wm if waits else None,
            "hold_total_ticks": ht if timing else None,
            "hold_avg_ticks": havg, "hold_max_ticks": hm if timing else None,
            "wait_total_us": us(wt) if waits else None, "wait_avg_us": us(wavg),
            "wait_max_us": us(wm) if waits else None,
            "hold_avg_us": us(havg), "hold_max_us": us(hm) if timing else None,
            "spins": _int(r.get("spins")), "sleeps": _int(r.get("sleeps")),
            "wakeups": _int(r.get("wakeups")), "migrations": _int(r.get("migrations")),
            "futile": _int(r.get("futile")), "max_queue": _int(r.get("max_queue")),
            "created": _int(r.get("created")), "destroyed": _int(r.get("destroyed")),
            "worst_site": str(sites[0].get("site")) if sites else None,
            "worst_site_wait_ticks": num(sites[0].get("wait")) if sites else None,
        })
    out.sort(key=lambda d: (-(d["wait_total_ticks"] or 0), -(d["hold_total_ticks"] or 0),
                            -d["hits"], d["class"]))
    return out


def lockstat_table(rows: list[dict], title: str, env: str, tsc_hz: int | float | None,
                   cpus: int) -> Table:
    """Linux lock_stat's view of one run: one row per class sorted by total wait."""
    recs = lockstat_records(rows, tsc_hz, cpus)
    hz = num(tsc_hz)
    unit = "µs" if hz else "ticks"
    key = "us" if hz else "ticks"

    def t(v: float | None) -> str:
        return DASH if v is None else fmt_sig(v)

    headers = ["class", "kind", "use", "hits", "misses", "miss %", "util %",
               f"wait total {unit}", f"wait avg {unit}", f"wait max {unit}",
               f"hold avg {unit}", f"hold max {unit}", "spins", "sleeps", "migrations",
               "futile", "max queue", "worst call site"]
    body = []
    for d in recs:
        body.append([d["class"], str(d["kind"] or "?"), str(d["use"] or "?"), str(d["hits"]),
                     str(d["misses"]), t(d["miss_pct"]), t(d["util_pct"]),
                     t(d[f"wait_total_{key}"]), t(d[f"wait_avg_{key}"]),
                     t(d[f"wait_max_{key}"]), t(d[f"hold_avg_{key}"]),
                     t(d[f"hold_max_{key}"]), str(d["spins"]), str(d["sleeps"]),
                     str(d["migrations"]), str(d["futile"]), str(d["max_queue"]),
                     d["worst_site"] or DASH])
    modes = sorted({str(r.get("mode")) for r in rows if isinstance(r, dict) and r.get("mode")})
    notes = [f"Environment: {env}." + (f" {TCG_NOTE}" if env.startswith("tcg") else ""),
             f"One row per lock class (every lock of the class summed, Sprite's per-type "
             f"totals), most total wait first. Times in {unit}"
             + (f" at the TSC's {fmt_hz(hz)}" if hz else " (TSC ticks: no TSC rate known)")
             + f"; util % = hold time / (elapsed x {cpus} CPUs of the run); miss % = misses / "
             "hits (a monitor counts a miss per woken waiter that lost the race, so it can "
             "pass 100%); migrations = acquisitions whose previous holder ran on another "
             "CPU; futile = condition-variable wakeups that found the condition still false; "
             "worst call site = the acquire with the most wait. Statistics mode: "
             + (", ".join(modes) or "?") + " (counts: no times)."]
    return Table(title=title, headers=headers, rows=body,
                 align=["l", "l", "l"] + ["r"] * 14 + ["l"], notes_above=notes)


# ---------------------------------------------------------------------------------------
# tables


def _env_notes(src: Source) -> list[str]:
    out = [f"Environment: {src.label}; TSC {fmt_hz(src.tsc_hz)}."]
    if src.env == "tcg":
        out.append(TCG_NOTE)
    return out


# ---------------------------------------------------------------------------------------
# the model's inputs (kernel/exp/sprite.c sets them by hand)


@dataclass
class Inputs:
    pad: dict[str, tuple[int, float | None]]    # class -> (cs_work iterations, TSC ticks)
    syscall_work: int
    pdev_copy: int
    compile_work: int
    takes: dict[str, str]                       # benchmark -> the locks its code takes
    printed: bool                               # True: as this run's kernel printed them


def inputs(src: Source) -> Inputs:
    """The run's inputs as its kernel printed them (sprite_setup, sprite_bench), else the
    copy of kernel/exp/sprite.c kept here (PAD_BASE, BENCH_TAKES, ...)."""
    pad_row = src.setup.get("pad") if isinstance(src.setup.get("pad"), dict) else None
    pad: dict[str, tuple[int, float | None]] = {}
    if pad_row:
        for name, v in pad_row.items():
            if isinstance(v, list) and v:
                pad[str(name)] = (_int(v[0]), num(v[1]) if len(v) > 1 else None)
    takes = {b: str(r.get("takes")) for b, r in src.benches.items() if r.get("takes")}
    printed = bool(pad) and bool(takes)
    if not printed:
        pad = {n: (it, None) for n, it in PAD_BASE.items()}
        takes = {b: BENCH_TAKES[b] for b in src.bench_names() if b in BENCH_TAKES}
    return Inputs(pad, _int(src.setup.get("syscall_work")) if printed else SYSCALL_WORK,
                  _int(src.setup.get("pdev_copy")) if printed else PDEV_COPY,
                  _int(src.setup.get("compile_work")) if printed else COMPILE_WORK,
                  takes, printed)


def _pad_word(src: Source, ip: Inputs, name: str) -> str:
    it, ticks = ip.pad.get(name, (None, None))
    if it is None:
        return ""
    us = src.us(ticks)
    return f"{name} {it}" + (f" (~{fmt_sig(us)} us)" if us is not None else "")


def _inputs_note(src: Source, bench: str, classes: Iterable[str] = ()) -> str:
    """A finding's sentence on what is built in: the benchmark's locks and the section
    lengths of the classes it names."""
    ip = inputs(src)
    pads = [w for w in (_pad_word(src, ip, c) for c in dict.fromkeys(classes)) if w]
    return (f"Inputs, not results: {bench}'s code takes {ip.takes.get(bench, '?')}"
            + (f"; its critical sections set by hand, in cs_work iterations: {', '.join(pads)}"
               if pads else "")
            + " (kernel/exp/sprite.c); which lock it saturates follows from them.")


def inputs_table(src: Source) -> Table | None:
    names = src.bench_names()
    if not names:
        return None
    ip = inputs(src)
    pads = "; ".join(_pad_word(src, ip, n) for n in ip.pad)
    where = ("as this run's kernel printed them" if ip.printed else
             "from the copy of kernel/exp/sprite.c in tools/ksync/spritereport.py (this run's "
             "kernel did not print them)")
    def secs(b: str) -> str:
        t = ip.takes.get(b, "")
        if t.startswith("as "):     # "as fork, and ...": the named benchmark's locks too
            t += " " + ip.takes.get(t[3:].split(",")[0].split(" ")[0], "")
        return ", ".join(f"{n} {ip.pad[n][0]}" for n in ip.pad if _targeted(n, t)) or DASH

    rows = [[b, src.kind(b), ip.takes.get(b, DASH), secs(b), src.targets(b) or DASH]
            for b in names]
    return Table(title=src.title("inputs"),
                 headers=["benchmark", "kind", "locks its code takes (input)",
                          "their sections (cs_work, input)", "meant to stress (section 5)"],
                 rows=rows, align=["l", "l", "l", "l", "l"],
                 notes_above=[
                     "Inputs of the model, not results. Each benchmark is a small model of "
                     "Sprite's (kernel/exp/sprite.c): which locks its code takes and how long "
                     "each critical section lasts are set by hand, so the lock a benchmark "
                     "saturates, its miss ratios and part of its scaling curve follow from "
                     "these numbers. The findings and tables below that name a lock report what "
                     "this construction does; in the paper the same answers were discoveries "
                     "about a real kernel. What is not an input: the scheduler's, the monitor "
                     "locks' and the master locks' own code (sched_Mutex's load among it).",
                     f"Critical-section work per lock class (cs_work iterations of an integer "
                     f"loop; ~us: one section at factor 1, measured by the kernel): {pads}. A "
                     f"system call's own work outside any lock: {ip.syscall_work}; a compile's "
                     f"(pmake, pmakeInd; troff an eighth per unit): {ip.compile_work}; the "
                     f"pseudo-device copy: {ip.pdev_copy} perPCBLock sections. Source: {where}."])


def runs_table(sprite: dict) -> Table | None:
    recs = [r for r in (sprite or {}).get("runs") or [] if isinstance(r, dict)]
    if not recs:
        return None
    meta = (sprite or {}).get("meta") or {}
    rows = []
    for r in sorted(recs, key=_order):
        side = r.get("side") if isinstance(r.get("side"), dict) else {}
        rr = [x for x in r.get("rows") or [] if isinstance(x, dict)]
        end = next((x for x in rr if x.get("kind") == "sprite_end"), None)
        n = lambda kind, p=None: sum(1 for x in rr if x.get("kind") == kind  # noqa: E731
                                     and (p is None or isinstance(x.get("perturb"), dict) == p))
        status = str(r.get("status") or "?")
        if status == "ok" and side.get("oversubscribed"):
            status = f"ok ({NOT_TIMING}: oversubscribed)"
        rows.append([str(r.get("platform") or "?"), str(r.get("env") or "?"), status,
                     str(side.get("cpus") or DASH), fmt_hz(side.get("tsc_hz")),
                     str(n("sprite_run", False)), str(n("sprite_run", True)),
                     str(n("sprite_overhead")),
                     str(end.get("failures")) if end else DASH,
                     "" if r.get("status") == "ok" else str(r.get("reason") or "?"),
                     str(r.get("log") or "(no log)")])
    notes = ["One boot per platform: the benchmarks x the configurations x the CPU "
             "counts, repeated (interleaved); then the perturbed runs (one lock class's "
             "critical sections lengthened) and the statistics-overhead runs "
             "(kernel/exp/sprite.c). Configurations: " + "; ".join(CONFIG_WORDS.values())
             + "."]
    if meta:
        notes.append(f"Commit {meta.get('commit', '?')}, {meta.get('timestamp', '?')}, host CPU "
                     f"{meta.get('host_cpu_model', '?')} ({meta.get('host_cpus', '?')} CPUs), "
                     f"QEMU {meta.get('qemu_version', '?')}, set {meta.get('set', '?')}.")
    return Table(title=TITLES["runs"],
                 headers=["platform", "env", "status", "CPUs", "TSC", "runs", "perturbed",
                          "overhead", "failures", "reason", "log"],
                 rows=rows, align=["l", "l", "l", "r", "r", "r", "r", "r", "r", "l", "l"],
                 notes_above=notes)


def correctness_table(src: Source) -> Table:
    rows = []
    for b in src.bench_names():
        for c in src.configs():
            for k in src.ks(b, c):
                rs = src.runs(b, c, k)
                rows.append([b, c, str(k), str(len(rs)),
                             str(sum(_int(r.get("work")) for r in rs)), NOT_TIMING])
    return Table(title=src.title("correct"),
                 headers=["benchmark", "config", "CPUs", "runs", "work done", "elapsed"],
                 rows=rows, align=["l", "l", "r", "r", "r", "l"],
                 notes_above=[f"Environment: {src.label}. {OVERSUB_WHY}: the runs completed "
                              "(correctness), their times are not shown and enter no finding, "
                              "bar or projection."])


def _ratio_row(src: Source, b: str, c: str, k: int) -> Spread | None:
    one, at = _els(src.runs(b, c, 1)), _els(src.runs(b, c, k))
    return _div(at, one)


def elapsed_table(src: Source) -> Table:
    cfgs = src.configs()
    rows = []
    for b in src.bench_names():
        for k in src.ks(b):
            ideal = f"1/{k} = {fmt_ratio(1 / k)}" if src.fixed(b) and k > 1 else "1"
            rows.append([b, src.kind(b), str(k), ideal]
                        + [_fs(_ratio_row(src, b, c, k), fmt_ratio) for c in cfgs])
    return Table(title=src.title("elapsed"),
                 headers=["benchmark", "kind", "CPUs", "ideal"] + cfgs, rows=rows,
                 align=["l", "l", "r", "r"] + ["r"] * len(cfgs),
                 notes_above=_env_notes(src) + [
                     "Median elapsed time at k CPUs over the median at 1 CPU (k instances of "
                     "the benchmark against one; pmake's workload is fixed, so its ideal is "
                     "1/k, every other's 1.0). In brackets: the lowest k-CPU run over the "
                     "highest 1-CPU run .. the highest over the lowest. Paper: Figure 2 "
                     "(macro), Figure 3 (micro); cswitch was worse than linear at five "
                     "processors."])


def _incr(src: Source, b: str, c: str, k: int, kp: int) -> Spread | None:
    x1, xk, xp = (_xs(src.runs(b, c, n)) for n in (1, k, kp))
    if x1 is None or xk is None or xp is None or x1.lo <= 0:
        return None
    lo_n, hi_n = xk.lo - xp.hi, xk.hi - xp.lo
    d = [(k - kp) * x1.lo, (k - kp) * x1.hi]
    q = [a / b_ for a in (lo_n, hi_n) for b_ in d]
    return Spread(min(q), (xk.mid - xp.mid) / ((k - kp) * x1.mid), max(q), xk.how)


def incr_table(src: Source) -> Table:
    cfgs = src.configs()
    rows = []
    for b in src.bench_names():
        ks = src.ks(b)
        for kp, k in zip(ks, ks[1:]):
            rows.append([b, src.kind(b), f"{kp} -> {k}"]
                        + [_fs(_incr(src, b, c, k, kp), fmt_ratio) for c in cfgs])
    return Table(title=src.title("incr"),
                 headers=["benchmark", "kind", "CPUs"] + cfgs, rows=rows,
                 align=["l", "l", "r"] + ["r"] * len(cfgs),
                 notes_above=_env_notes(src) + [
                     "Throughput each added CPU contributes, in processor units: (X(k) - "
                     "X(k')) / ((k - k') X(1)), X = work / elapsed, medians; the ideal is 1.0. "
                     "In brackets: the interval from the runs' extremes. Paper: Figure 4 "
                     "(macro; troff kept almost one unit at the fifth processor), Figure 5 "
                     "(micro; the third processor added little or less than nothing)."])


def _miss_cell(m: Miss, avg: bool) -> str:
    if avg:
        return _pcts(m.avg)
    if m.top is None:
        return "0% (no misses)" if m.top_ratio is not None else DASH
    return f"{_pcts(m.top_ratio)} {m.top}"


def miss_table(src: Source) -> Table:
    rows = []
    for b in src.bench_names():
        for c in src.configs():
            for k in src.ks(b, c):
                rs = src.runs(b, c, k)
                mon, mas = _miss(src, rs, "monitor"), _miss(src, rs, "master")
                rows.append([b, c, str(k), _miss_cell(mon, True),
                             _miss_cell(mon, False), _miss_cell(mas, True),
                             _miss_cell(mas, False)])
    return Table(title=src.title("miss"),
                 headers=["benchmark", "config", "CPUs", "monitor avg",
                          "monitor highest (lock)", "master avg", "master highest (lock)"],
                 rows=rows, align=["l", "l", "r", "r", "l", "r", "l"],
                 notes_above=_env_notes(src) + [
                     "Miss ratio = misses / hits of a lock class, in %; median over the runs "
                     "(min..max). avg: the mean over the classes of that kind with hits; "
                     f"highest: the class with the highest ratio among those with >= {MIN_HITS} "
                     "hits (as the paper notes, tiny counts inflate ratios: a class with a "
                     "handful of hits is left out of 'highest'). A monitor's misses can exceed "
                     "its hits (every woken waiter that loses the race is a miss). Paper: "
                     "Figures 6 (macro, monitor: below 18%, vmMonitorLock highest), 7 (micro, "
                     "monitor: pdevtest near 200% on perPCBLock, cswitch on handleTableLock), "
                     "8 (macro, master) and 10 (micro, master: 50-85% average at five "
                     "processors, all sched_Mutex)."])


def _targeted(name: str, targets: str) -> bool:
    return re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", targets) is not None


def saturated_table(src: Source) -> Table:
    rows = []
    for b in src.bench_names():
        for c in src.configs():
            k = src.top(b, c)
            rs = src.runs(b, c, k)
            ut, use = _utils(src, rs)
            top, _ = _top_apart(ut)
            code = {n: s for n, s in ut.items() if use.get(n) == "code"}
            ctop, _ = _top_apart(code)
            m = [_miss(src, rs, kd) for kd in ("monitor", "master")]
            mm = max((x for x in m if x.top), key=lambda x: x.top_ratio.mid, default=None)
            rows.append([
                b, c, str(k),
                f"{top} {_pcts(ut[top])}" + (" (data: all its locks)" if use.get(top) == "data"
                                            else "") if top else DASH,
                f"{ctop} {_pcts(code[ctop])}" if ctop else DASH,
                f"{mm.top} {_pcts(mm.top_ratio)}" if mm else DASH,
                src.targets(b) or DASH])
    return Table(title=src.title("saturated"),
                 headers=["benchmark", "config", "CPUs", "most held lock", "most held code lock",
                          "highest miss ratio", "meant to stress"],
                 rows=rows, align=["l", "l", "r", "l", "l", "l", "l"],
                 notes_above=_env_notes(src) + [
                     "At the top CPU count: the class held the largest fraction of the elapsed "
                     "time (hold time / elapsed, median over the runs, min..max; 100% = held "
                     "all the time), the code lock held longest (one lock per class, so its "
                     "fraction is one lock's), the class with the highest miss ratio "
                     f"(>= {MIN_HITS} hits), and the locks the benchmark was written to stress. "
                     "A data-lock class sums its locks (one per pipe, process, block...), so "
                     "its fraction can pass 100% without any one lock saturating. Paper "
                     "(section 6.3): cswitch, meant for the context-switch code, saturated "
                     "handleTableLock. Here which locks each benchmark takes and how long it "
                     "holds each are inputs (table 'Sprite workload inputs'): the most held "
                     "lock is the construction's answer, not an emergent one - only "
                     "sched_Mutex's share comes from the kernel's own code."])


def representative(src: Source) -> dict | None:
    """The run the report's lock_stat table shows: cswitch, config sprite, the top CPU
    count, rep 0 (else the nearest there is)."""
    if not src.base:
        return None
    names = src.bench_names()
    b = "cswitch" if "cswitch" in names else names[0]
    cfgs = src.configs()
    c = "sprite" if "sprite" in cfgs else cfgs[0]
    rs = src.runs(b, c, src.top(b, c))
    rs.sort(key=lambda r: (_int(r.get("rep")), _int(r.get("run"))))
    return rs[0] if rs else None


def one_run_table(src: Source) -> Table | None:
    r = representative(src)
    if r is None:
        return None
    k = _int(r.get("cpus"))
    t = lockstat_table(src.ls(r), src.title("lockstat", f": {r.get('bench')}, {r.get('config')}, "
                                            f"{k} CPUs, rep {r.get('rep')}"),
                       src.label, src.tsc_hz, k)
    t.notes_above.append(f"Run {r.get('run')}: {r.get('work')} units of work in "
                         f"{fmt_ticks(num(r.get('elapsed_ticks')))} ticks. `ksync lockstat` "
                         "shows any benchmark, configuration and CPU count this way.")
    return t


# ---- the projection --------------------------------------------------------------------


@dataclass
class Pert:
    cls: str
    factor: float
    pad: float
    delta: float                    # ticks added per unit of work
    ks: list[int]
    meas: dict[int, Spread]
    pred: dict[int, float]
    err: dict[int, float]
    curve: list[float]
    knee_pred: float
    first_pred: str | None
    knee_meas: float | None
    first_meas: str | None


@dataclass
class Projection:
    bench: str
    config: str
    r1: float                       # ticks per unit at 1 CPU
    demands: dict[str, float]       # ticks per unit, per class
    use: dict[str, str]
    think: float
    clamped: bool
    knees: dict[str, float]
    knee_spread: dict[str, Spread]
    first: str | None
    first_code: str | None
    ks: list[int]
    meas: dict[int, Spread]         # X per tick
    curve: list[float]              # MVA X(1..len)
    top: int
    pred_top: float | None
    err_top: float | None
    sigma: float
    kappa: float
    usl_hold: tuple[float, float] | None     # (prediction, error) from all but the top
    pert: Pert | None
    ranked: set[str] = field(default_factory=set)   # classes with >= MIN_HITS hits at 1 CPU

    @property
    def nstar(self) -> float:
        return self.knees[self.first] if self.first else math.inf


@dataclass
class Demands:
    d: dict[str, float]             # median hold ticks per unit of work, per class
    use: dict[str, str]             # code / data
    per_run: dict[str, list[float]]
    cycles: list[float]             # elapsed / work of each run
    ranked: set[str]                # classes with >= MIN_HITS hits (median): knee candidates

    def first(self, knees: dict[str, float], code: bool = False) -> str | None:
        cand = [c for c in knees if c in self.ranked] or list(knees)
        if code:
            cand = [c for c in cand if self.use.get(c) == "code"]
        return min(cand, key=lambda c: (knees[c], c)) if cand else None


def _demands(src: Source, runs: list[dict]) -> Demands:
    """Hold ticks per unit of work per class over ``runs`` (a class missing from a run
    counts 0 there) and the runs' cycles (elapsed / work)."""
    per: dict[str, list[float]] = {}
    use: dict[str, str] = {}
    hits: dict[str, list[int]] = {}
    cyc = []
    for r in runs:
        w, el = num(r.get("work")), num(r.get("elapsed_ticks"))
        if not w or not el:
            continue
        cyc.append(el / w)
        for c in src.ls(r):
            h = num(_g(c, "hold", "total"))
            if h and h > 0:
                name = str(c.get("class"))
                per.setdefault(name, []).append(h / w)
                hits.setdefault(name, []).append(_int(c.get("hits")))
                use[name] = str(c.get("use") or "?")
    n = len(cyc)
    full = {c: v + [0.0] * (n - len(v)) for c, v in per.items()}
    ranked = {c for c, h in hits.items() if statistics.median(h + [0] * (n - len(h)))
              >= MIN_HITS}
    return Demands({c: statistics.median(v) for c, v in full.items()}, use, full, cyc, ranked)


def _hits_per_work(src: Source, runs: list[dict], name: str) -> float:
    v = []
    for r in runs:
        w = num(r.get("work"))
        c = src.cls(r, name)
        if w:
            v.append(_int((c or {}).get("hits")) / w)
    return _med(v) or 0.0


def _curve_len(nstar: float, top: int) -> int:
    n = 2 * top
    if math.isfinite(nstar):
        n = max(n, math.ceil(2 * nstar))
    return max(2, min(MAX_PROJECT, n))


def projection(src: Source, bench: str, config: str) -> Projection | None:
    if not src.timing:
        return None
    r1runs = src.runs(bench, config, 1)
    dm = _demands(src, r1runs)
    dem, use, per, cyc = dm.d, dm.use, dm.per_run, dm.cycles
    if not cyc or not dem:
        return None
    r1 = statistics.median(cyc)
    knees = {c: knee(r1, d) for c, d in dem.items()}
    kspread = {c: _sp(knee(cy, d) for cy, d in zip(cyc, per[c])) for c in dem}
    first = dm.first(knees)
    first_code = dm.first(knees, code=True)
    think = r1 - sum(dem.values())
    clamped = think < 0
    think = max(0.0, think)
    ks = src.ks(bench, config)
    meas = {k: _xs(src.runs(bench, config, k)) for k in ks}
    meas = {k: v for k, v in meas.items() if v is not None}
    top = max(meas) if meas else 1
    curve = mva(list(dem.values()), think, _curve_len(knees[first], top))
    pred_top = curve[top - 1] if top <= len(curve) else None
    err_top = (abs(pred_top - meas[top].mid) / meas[top].mid
               if pred_top is not None and top > 1 and meas[top].mid else None)
    pts = [(k, meas[k].mid) for k in sorted(meas)]
    sigma, kappa = usl_fit(pts) if 1 in meas else (0.0, 0.0)
    hold = None
    if 1 in meas and len(pts) >= 3:
        s2, k2 = usl_fit(pts[:-1])
        p = usl(top, meas[1].mid, s2, k2)
        hold = (p, abs(p - meas[top].mid) / meas[top].mid)
    pr = Projection(bench, config, r1, dem, use, think, clamped, knees, kspread, first,
                    first_code, ks, meas, curve, top, pred_top, err_top, sigma, kappa, hold,
                    None)
    pr.ranked = dm.ranked
    pr.pert = _perturbation(src, pr, r1runs, dm)
    return pr


def _perturbation(src: Source, pr: Projection, base1: list[dict], dm: Demands
                  ) -> Pert | None:
    rows = [r for r in src.perturbed if r.get("bench") == pr.bench
            and r.get("config") == pr.config]
    if not rows:
        return None
    p = rows[0]["perturb"]
    cls, factor, pad = str(p.get("class")), num(p.get("factor")), num(p.get("pad_ticks"))
    if factor is None or pad is None:
        return None
    delta = _hits_per_work(src, base1, cls) * (factor - 1.0) * pad
    dem = dict(pr.demands)
    dem[cls] = dem.get(cls, 0.0) + delta
    r1 = pr.r1 + delta
    think = max(0.0, r1 - sum(dem.values()))
    knees = {c: knee(r1, d) for c, d in dem.items()}
    dm2 = Demands(dem, dm.use, {}, [], dm.ranked | {cls})
    first_pred = dm2.first(knees)
    kp = knees[first_pred] if first_pred else math.inf
    ks = sorted({_int(r.get("cpus")) for r in rows})
    meas = {k: _xs([r for r in rows if _int(r.get("cpus")) == k]) for k in ks}
    meas = {k: v for k, v in meas.items() if v is not None}
    curve = mva(list(dem.values()), think, max(len(pr.curve), max(ks, default=1)))
    pred = {k: curve[k - 1] for k in meas}
    err = {k: abs(pred[k] - meas[k].mid) / meas[k].mid for k in meas if meas[k].mid}
    knee_meas, first_meas = None, None
    one = [r for r in rows if _int(r.get("cpus")) == 1]
    if one:
        d1 = _demands(src, one)
        if d1.d and d1.cycles:
            r1m = statistics.median(d1.cycles)
            km = {c: knee(r1m, d) for c, d in d1.d.items()}
            first_meas = d1.first(km)
            knee_meas = km[first_meas] if first_meas else None
    return Pert(cls, factor, pad, delta, ks, meas, pred, err, curve, kp, first_pred,
                knee_meas, first_meas)


def projections(src: Source) -> list[Projection]:
    out = []
    for c in src.configs():
        for b in src.bench_names():
            p = projection(src, b, c)
            if p is not None:
                out.append(p)
    return out


def _n(v: float) -> str:
    return "inf" if not math.isfinite(v) else fmt_sig(v)


def _bar15(err: float | None) -> str:
    if err is None:
        return DASH
    return ("met" if 100.0 * err <= BAR_PROJECTION_PCT else "not met") + \
        f" ({fmt_sig(100.0 * err)}%)"


def projection_table(src: Source, prs: list[Projection]) -> Table | None:
    if not prs:
        return None
    us = src.us
    rows = []
    for p in prs:
        d = p.demands.get(p.first or "", 0.0)
        rows.append([
            p.config, p.bench, fmt_sig(us(p.r1) if src.tsc_hz else p.r1),
            f"{p.first} ({fmt_sig(us(d) if src.tsc_hz else d)})"
            + (" data" if p.use.get(p.first) == "data" else ""),
            f"{_n(p.nstar)} ({_n(p.knee_spread[p.first].lo)}..{_n(p.knee_spread[p.first].hi)})"
            if p.first and p.knee_spread.get(p.first) else _n(p.nstar),
            f"{fmt_ratio(p.nstar / p.top)}x" if math.isfinite(p.nstar) and p.top else DASH,
            f"{p.first_code} {_n(p.knees[p.first_code])}" if p.first_code else DASH,
            f"{fmt_sig(src.per_s(p.pred_top))} / {_fs(_scale(p.meas[p.top], src.per_s(1)))}"
            if p.pred_top is not None and p.top > 1 else DASH,
            _bar15(p.err_top),
            f"{fmt_sig(p.sigma)}, {fmt_sig(p.kappa)}",
            _n(usl_nmax(p.sigma, p.kappa)),
            f"{fmt_sig(src.per_s(p.usl_hold[0]))} ({fmt_sig(100 * p.usl_hold[1])}%)"
            if p.usl_hold else DASH])
    unit = "µs" if src.tsc_hz else "ticks"
    clamped = [f"{p.config}/{p.bench}" for p in prs if p.clamped]
    errs = [p.err_top for p in prs if p.err_top is not None]
    met = sum(1 for e in errs if 100 * e <= BAR_PROJECTION_PCT)
    below = [f"Bar: projection error at the held-out point <= {BAR_PROJECTION_PCT:g}% "
             f"(MVA from the 1-CPU runs predicting the top CPU count): met in {met} of "
             f"{len(errs)} benchmark x configuration pairs; every error is in the table."]
    if clamped:
        below.append("Nested critical sections (a lock held inside another's section) make "
                     "the classes' demands sum past the 1-CPU cycle in " + ", ".join(clamped)
                     + ": the think time is taken as 0 there.")
    if src.top() < 3:
        below.append("With two CPU counts measured the USL has one parameter (sigma; kappa 0) "
                     "and no held-out USL check is possible.")
    return Table(title=src.title("projection"),
                 headers=["config", "benchmark", f"R1 {unit}/unit", f"first to saturate "
                          f"(D {unit}/unit)", "knee N*", "N* / top k", "first code lock, N*",
                          f"MVA X(top k) / measured, {src.x_unit}", "error, bar",
                          "USL sigma, kappa", "USL N max", "USL hold-out (error)"],
                 rows=rows, align=["l", "l"] + ["r"] * 10,
                 notes_above=_env_notes(src) + [
                     "Training: the 1-CPU runs (medians over the repetitions). D_c = the class's "
                     "hold time per unit of work; R1 = elapsed per unit at 1 CPU; knee N*_c = "
                     "R1 / D_c, the CPU count at which class c would be held all the time; "
                     "'first to saturate' = the smallest N* (in brackets: N* of each run); "
                     "N* / top k = how far past the measured CPU counts the projection "
                     "reaches. X(N) by exact mean-value analysis with every class a queueing "
                     "centre and R1 - sum(D) as think time; a data-lock class (marked 'data') "
                     "sums many locks, so as one centre it is pessimistic, hence the first "
                     "code lock beside it. The USL (Gunther) is fitted to every measured point "
                     "with X(1) as lambda. Paper (sections 1, 7, 8): sched_Mutex would "
                     "saturate at about seven processors (a projection by hand)."],
                 notes_below=below)


def perturb_table(src: Source, prs: list[Projection]) -> Table | None:
    prs = [p for p in prs if p.pert is not None]
    if not prs:
        return None
    rows = []
    unit = "µs" if src.tsc_hz else "ticks"
    f = src.per_s(1)
    for p in prs:
        q = p.pert
        first = True
        for k in q.ks:
            if k not in q.meas:
                continue
            add = src.us(q.delta) if src.tsc_hz else q.delta
            rows.append([p.config, p.bench,
                         f"{q.cls} x{fmt_sig(q.factor)} (+{fmt_sig(add)})" if first else "",
                         str(k), fmt_sig(q.pred[k] * f), _fs(_scale(q.meas[k], f)),
                         f"{fmt_sig(100 * q.err[k])}%" if k in q.err else DASH,
                         f"{_n(p.nstar)} -> {_n(q.knee_pred)} ({q.first_pred})" if first
                         else "",
                         (f"{_n(p.nstar)} -> {_n(q.knee_meas)} ({q.first_meas})"
                          if q.knee_meas is not None else DASH) if first else ""])
            first = False
    return Table(title=src.title("perturb"),
                 headers=["config", "benchmark", f"lengthened lock (+{unit}/unit)", "CPUs",
                          f"predicted X', {src.x_unit}", "measured X'", "error",
                          "knee predicted (lock)", "knee measured (lock)"],
                 rows=rows, align=["l", "l", "l", "r", "r", "r", "r", "r", "l"],
                 notes_above=_env_notes(src) + [
                     "The kernel re-ran each benchmark with the critical sections of its most "
                     "held lock class made longer by a known amount (factor x its padding, "
                     "pad_ticks measured at boot). Prediction from the unperturbed 1-CPU "
                     "runs alone: D'_c = D_c + (hits of c per unit) x (factor - 1) x pad_ticks, "
                     "R1' = R1 + the same; X'(k) by the same MVA, error = |predicted - "
                     "measured median| / measured. Knee predicted = R1' / max D'; knee "
                     "measured = the same from the perturbed 1-CPU runs' own hold times."])


def lockfree_table(src: Source) -> Table | None:
    cfgs = [c for c in CONFIGS if c in src.configs()]
    if "synthesis" not in cfgs or len(cfgs) < 2:
        return None
    f = src.per_s(1)
    rows = []
    for b in src.bench_names():
        k = src.top(b)
        xs = {c: _xs(src.runs(b, c, k)) for c in cfgs}
        row = [b, src.kind(b), str(k)] + [_fs(_scale(xs[c], f)) for c in cfgs]
        for other in ("sprite", "sprite-fix"):
            a, o = xs.get("synthesis"), xs.get(other)
            if other not in cfgs or a is None or o is None:
                row.append(DASH)
                continue
            row.append(f"{_fs(_div(a, o), fmt_ratio, 'x')} {_word(compare_greater(a, o))}")
        for what in ("miss", "held"):
            cells = []
            for c in ("sprite", "sprite-fix"):
                rs = src.runs(b, c, k)
                if what == "miss":
                    m = _miss(src, rs, "master").per_class.get(SCHED_MUTEX)
                else:
                    m = _utils(src, rs)[0].get(SCHED_MUTEX)
                cells.append(_pcts(m))
            row.append(" / ".join(cells))
        rows.append(row)
    return Table(title=src.title("lockfree"),
                 headers=["benchmark", "kind", "CPUs"] + [f"X {c}" for c in cfgs]
                 + ["synthesis / sprite", "synthesis / sprite-fix",
                    "sched_Mutex miss % sprite / fix", "sched_Mutex held % sprite / fix"],
                 rows=rows, align=["l", "l", "r"] + ["r"] * (len(cfgs) + 4),
                 notes_above=_env_notes(src) + [
                     f"Throughput X = work / elapsed in {src.x_unit} at the top CPU count, "
                     "median (min..max) of the runs; the ratios are of medians, bracketed by "
                     "the runs' extremes, and read 'higher' / 'lower' only when the two "
                     "spreads are apart ('within noise' when they overlap). sched_Mutex's miss "
                     f"ratio (classes with >= {MIN_HITS} hits) and the fraction of the run it "
                     "was held, under sprite and sprite-fix (synthesis has no sched_Mutex). "
                     "The question both papers meet on: do lock-free run queues remove the "
                     "bottleneck Sprite found?"])


def _overhead(src: Source) -> dict[str, dict[str, Spread]]:
    out: dict[str, dict[str, list]] = {}
    for r in src.overhead:
        out.setdefault(str(r.get("bench")), {}).setdefault(str(r.get("lockstat")), []).append(
            _x(r))
    return {b: {m: s for m, s in ((m, _sp(v)) for m, v in d.items()) if s is not None}
            for b, d in out.items()}


def _cost(off: Spread, on: Spread) -> Spread:
    """1 - X_on / X_off with the runs' extremes."""
    r = _div(on, off) or Spread(math.nan, math.nan, math.nan, on.how)
    return Spread(1 - r.hi, 1 - r.mid, 1 - r.lo, r.how)


def _paired_costs(src: Source) -> dict[str, dict[str, list[float]]]:
    """Per benchmark and mode, 1 - X(mode) / X(off) of each repetition: the kernel runs the
    modes of one repetition back to back (off first), so each mode is paired with the off
    run just before it - a slow drift of the host (other load) cancels out of the pair."""
    out: dict[str, dict[str, list[float]]] = {}
    last_off: dict[str, tuple] = {}
    for r in src.overhead:
        b, m, x = str(r.get("bench")), str(r.get("lockstat")), _x(r)
        if x is None:
            continue
        key = (r.get("rep"), r.get("cpus"))
        if m == "off":
            last_off[b] = (key, x)
        elif b in last_off and last_off[b][0] == key and last_off[b][1] > 0:
            out.setdefault(b, {}).setdefault(m, []).append(1 - x / last_off[b][1])
    return out


def _mode_costs(src: Source) -> dict[str, dict[str, Spread]]:
    """Per benchmark and mode, the cost of throughput: median (min..max) of the paired
    repetitions; without pairs, 1 - X_on / X_off of the medians with the runs' extremes."""
    oh, pairs = _overhead(src), _paired_costs(src)
    out: dict[str, dict[str, Spread]] = {}
    for b, d in oh.items():
        for m in OH_MODES[1:]:
            v = pairs.get(b, {}).get(m)
            if v:
                out.setdefault(b, {})[m] = Spread(min(v), statistics.median(v), max(v),
                                                  f"{len(v)} paired repetitions")
            elif "off" in d and m in d:
                out.setdefault(b, {})[m] = _cost(d["off"], d[m])
    return out


def _bar_word(c: Spread | None, bar: float) -> str:
    if c is None:
        return DASH
    return ("met" if 100 * c.mid <= bar else "not met") + \
        (" (spread straddles the bar)" if 100 * c.lo <= bar < 100 * c.hi else "")


def overhead_table(src: Source) -> Table | None:
    oh = _overhead(src)
    if not oh:
        return None
    f = src.per_s(1)
    costs = _mode_costs(src)
    rows = []
    for b, d in oh.items():
        k = max((_int(r.get("cpus")) for r in src.overhead if r.get("bench") == b), default=0)
        cells = [_fs(_scale(d.get(m), f)) for m in OH_MODES]
        cost = {m: costs.get(b, {}).get(m) for m in OH_MODES[1:]}
        if not src.timing:
            bar = NOT_TIMING
        elif all(c is None for c in cost.values()):
            bar = DASH
        elif src.env == "tcg":
            bar = "emulator's cost, no verdict"
        else:
            bar = "; ".join(f"{m} {_bar_word(cost[m], OH_BARS[m])}" for m in OH_MODES[1:]
                            if cost[m] is not None)
        rows.append([b, str(k)] + cells + [_pcts(cost[m]) for m in OH_MODES[1:]] + [bar])
    return Table(title=src.title("overhead"),
                 headers=["benchmark", "CPUs", "X off", "X counts", "X contested", "X timing",
                          "counts cost", "contested cost", "timing cost",
                          f"bars: counts, contested <= {BAR_COUNTS_PCT:g}%, timing <= "
                          f"{BAR_TIMING_PCT:g}%"],
                 rows=rows, align=["l", "r", "r", "r", "r", "r", "r", "r", "r", "l"],
                 notes_above=_env_notes(src) + [
                     f"The same benchmark (config sprite, top CPU count) with the statistics "
                     f"off, counting (hits and migrations in the lock; misses, spins, sleeps, "
                     f"wakeups... in per-CPU shards), contested-only (an uncontended "
                     f"acquisition counts its hit and nothing else; a contended one its miss "
                     f"and its wait per call site) and timing (counts plus wait / hold / "
                     f"masked times from the TSC): throughput in {src.x_unit}, median "
                     "(min..max) of the runs; cost = 1 - X(mode) / X(off) of each repetition "
                     "(the modes of a repetition run back to back, each paired with the off "
                     "run before it), median (min..max) over the repetitions. Bars: counting "
                     f"and contested-only profiling cost at most {BAR_COUNTS_PCT:g}% of "
                     f"throughput, timing at most {BAR_TIMING_PCT:g}%; met / not met on the "
                     f"median, the spread said when it straddles the bar. For scale: "
                     f"{FREEBSD}; Sprite's paper does not report its counters' cost."])


def _cost_row(src: Source, algo: str, mask: str, mode: str) -> dict | None:
    return next((r for r in src.costs if r.get("algo") == algo and r.get("mask") == mask
                 and str(r.get("lockstat")) == mode), None)


def lock_cost_limit(cas: float, mask_pair: float) -> float:
    """The bar's limit for an uncontended master lock: 1.2 x one lock cmpxchg + the masking
    pair it takes."""
    return BAR_LOCK_FACTOR * cas + mask_pair


def lockcost_table(src: Source) -> Table | None:
    if not src.costs:
        return None
    hz = src.tsc_hz

    def cell(r: dict | None) -> tuple[str, str]:
        if r is None:
            return DASH, DASH
        if not src.timing:
            return NOT_TIMING, NOT_TIMING
        m = num(r.get("median"))
        return (f"{fmt_ticks(m)} ({fmt_ticks(num(r.get('min')))}..{fmt_ticks(num(r.get('p99')))})",
                fmt_sig(m / hz * 1e9) if m is not None and hz else DASH)

    cas = _cost_row(src, "cas", "-", "-")
    pairs = {"crit": _cost_row(src, "none", "crit", "-"),
             "irqsave": _cost_row(src, "none", "irqsave", "-")}
    rows = []
    for r, what in ((cas, "lock cmpxchg (baseline)"),
                    (pairs["crit"], "crit_enter + crit_leave (baseline)"),
                    (pairs["irqsave"], "arch_irq_save + restore (baseline)")):
        if r is not None:
            rows.append([what, str(r.get("mask")), "-", *cell(r), ""])
    algos = []
    for r in src.costs:
        if r.get("algo") not in ("cas", "none") and r.get("algo") not in algos:
            algos.append(r.get("algo"))
    met = []
    for a in algos:
        for mask in ("crit", "irqsave"):
            for mode in OH_MODES:
                r = _cost_row(src, a, mask, mode)
                if r is None:
                    continue
                bar = ""
                if mode == "off":
                    bar = _lock_bar(src, r, cas, pairs.get(mask))
                    met.append(bar)
                rows.append([f"{a} master lock", mask, mode, *cell(r), bar])
    scheme = next((r.get("scheme") for r in src.costs if r.get("scheme")), "?")
    return Table(title=src.title("lockcost"),
                 headers=["what", "mask", "statistics", "median ticks (min..p99)", "median ns",
                          f"bar: <= {BAR_LOCK_FACTOR:g} x cmpxchg + mask pair"],
                 rows=rows, align=["l", "l", "l", "r", "r", "l"],
                 notes_above=_env_notes(src) + [
                     f"Uncontended acquire + release of one master lock per algorithm, with "
                     f"the interrupt scheme's masking (crit_enter/leave, scheme {scheme}) or the "
                     "CPU's (irqsave), under each statistics mode; beside one successful lock "
                     "cmpxchg and the two masking pairs. TSC ticks per operation, empty loop "
                     "subtracted (median of 200 batches of 64; min..p99 in brackets). Bar "
                     f"(statistics off): median <= {BAR_LOCK_FACTOR:g} x the cmpxchg median + "
                     "the median of the masking pair the lock takes."
                     + (" Under tcg these are the emulator's costs: no verdict on hardware."
                        if src.env == "tcg" else "")])


def _lock_bar(src: Source, r: dict, cas: dict | None, pair: dict | None) -> str:
    if not src.timing:
        return NOT_TIMING
    m, c, p = num(r.get("median")), num((cas or {}).get("median")), \
        num((pair or {}).get("median"))
    if m is None or c is None or p is None:
        return DASH
    lim = lock_cost_limit(c, p)
    if src.env == "tcg":
        return f"emulator's cost, no verdict ({fmt_ticks(m)} vs {fmt_ticks(lim)})"
    return (f"met: {fmt_ticks(m)} <= {fmt_ticks(lim)}" if m <= lim
            else f"not met: {fmt_ticks(m)} > {fmt_ticks(lim)}")


def source_tables(src: Source) -> list[Table]:
    if not src.timing:
        return [correctness_table(src)] if src.base else []
    out: list[Table | None] = []
    if src.base:
        prs = projections(src)
        out += [elapsed_table(src), incr_table(src), miss_table(src), saturated_table(src),
                one_run_table(src), projection_table(src, prs), perturb_table(src, prs),
                lockfree_table(src)]
    out += [overhead_table(src), lockcost_table(src)]
    return [t for t in out if t is not None]


def sprite_tables(sprite: dict | None) -> list[Table]:
    srcs = sources(sprite)
    recs = [r for r in (sprite or {}).get("runs") or [] if isinstance(r, dict)] \
        if isinstance(sprite, dict) else []
    if not srcs and not any(r.get("status") != "ok" for r in recs):
        return []
    out = []
    t = runs_table(sprite)
    if t is not None:
        out.append(t)
    t = inputs_table(srcs[0]) if srcs else None
    if t is not None:
        out.append(t)
    for s in srcs:
        out += source_tables(s)
    return out


# ---------------------------------------------------------------------------------------
# findings


def _pick(srcs: list[Source], paper: str, claim: str, then: str, fn, hw: bool
          ) -> Finding | None:
    """``fn(src) -> (verdict, today, note) | None``. A hardware environment's timing run
    decides; for a claim that is not about costs (``hw`` False) another timing run (tcg)
    decides when no hardware one measured it, its note saying whose timings they are; a cost
    claim measured only under tcg (or only oversubscribed) is not measurable here."""
    got = [(s, fn(s)) for s in srcs if s.timing]
    got = [(s, g) for s, g in got if g is not None]
    for s, (v, today, note) in got:
        if s.hw:
            return Finding(paper, claim, then, today, s.label, v, note)
    for s, (v, today, note) in got:
        if hw:
            return Finding(paper, claim, then, today, s.label, "not measurable here",
                           f"Under {s.env} the figures are the emulator's, not hardware "
                           "costs; the claim is about costs.")
        return Finding(paper, claim, then, today, s.label, v,
                       note + f" Under {s.env} the timings are the emulator's: the verdict is "
                       "the behaviour of the emulated machine.")
    over = [s for s in srcs if not s.timing]
    if over:
        return Finding(paper, claim, then, DASH, over[0].label, "not measurable here",
                       OVERSUB_WHY + ", not a timing figure.")
    if srcs:
        return Finding(paper, claim, then, DASH, "no data", "not measurable here",
                       "The runs did not measure it (benchmark or configuration missing).")
    return None


def _micro(src: Source) -> list[str]:
    return [b for b in src.bench_names() if src.kind(b) == "micro"]


def _macro(src: Source) -> list[str]:
    return [b for b in src.bench_names() if src.kind(b) == "macro"]


def _f_master_micro(src: Source):
    states, parts, avgs = [], [], []
    for b in _micro(src):
        k = src.top(b, "sprite")
        rs = src.runs(b, "sprite", k)
        if not rs:
            continue
        m = _miss(src, rs, "master")
        if m.avg is not None:
            avgs.append(m.avg.mid)
        top, apart = _top_apart(m.per_class)
        if top is None:
            continue
        parts.append(f"{b} {top} {fmt_sig(100 * m.per_class[top].mid)}%"
                     + (" (the only master lock with enough hits)" if len(m.per_class) < 2
                        else ""))
        if len(m.per_class) < 2:
            continue        # nothing to be above: decides nothing
        states.append(("sched" if top == SCHED_MUTEX else "other") if apart else "overlap")
    if not parts:
        return None
    k = max(src.top(b, "sprite") for b in _micro(src))
    if not states:
        return ("not measurable here", f"at {k} CPUs, config sprite: " + "; ".join(parts),
                f"No micro-benchmark had two master-lock classes with >= {MIN_HITS} hits: "
                "a lock with nothing beside it is not 'the highest'.")
    n_s = states.count("sched")
    today = (f"at {k} CPUs, config sprite: sched_Mutex the top master lock in {n_s} of "
             f"{len(states)} micro-benchmarks ({'; '.join(parts)}); average master miss "
             f"ratio {fmt_sig(100 * min(avgs))}-{fmt_sig(100 * max(avgs))}%" if avgs else "")
    note = ("Holds when sched_Mutex's miss-ratio spread lies above every other master lock's "
            f"(>= {MIN_HITS} hits) in more than half of the micro-benchmarks (those with two "
            "or more such classes), reversed when another master lock's does; within noise "
            f"otherwise. The paper measured five processors; this run {k}. sched_Mutex's "
            "code is the kernel's own, not an input; the other master lock's "
            f"(procTableMutex) section is set to {PAD_BASE['procTableMutex']} cs_work "
            "iterations in kernel/exp/sprite.c.")
    return _majority(states, "sched", "other"), today, note


def _f_macro_monitor(src: Source):
    best = None
    for b in _macro(src):
        k = src.top(b, "sprite")
        m = _miss(src, src.runs(b, "sprite", k), "monitor")
        if m.top and (best is None or m.top_ratio.mid > best[2].mid):
            best = (b, m.top, m.top_ratio, k)
    if best is None:
        return None
    b, c, s, k = best
    lim = 0.18
    v = "holds" if s.hi < lim else "reversed" if s.lo > lim else "within noise"
    today = (f"highest macro-benchmark monitor miss ratio {_pcts(s)}: {c} in {b} "
             f"at {k} CPUs, config sprite")
    note = (f"Holds when the highest ratio's spread (min..max of the runs; classes with >= "
            f"{MIN_HITS} hits) stays below 18%, reversed when it lies above. "
            + _inputs_note(src, b, [c]))
    return v, today, note


def _f_pdevtest(src: Source):
    if "pdevtest" not in src.bench_names():
        return None
    k = src.top("pdevtest", "sprite")
    rs = src.runs("pdevtest", "sprite", k)
    m = _miss(src, rs, "monitor")
    if m.top is None:
        return None
    s = m.top_ratio
    v = "holds" if s.lo > 1 else "reversed" if s.hi < 1 else "within noise"
    pcb = m.per_class.get("perPCBLock")
    clients = max((_int(r.get("instances")) for r in rs), default=k) or k
    today = (f"at {k} CPUs ({clients} clients), config sprite: highest monitor miss ratio "
             f"{_pcts(s)} on {m.top}" + (f"; perPCBLock {_pcts(pcb)}" if m.top != "perPCBLock"
                                         and pcb else ""))
    note = ("Holds when the highest monitor ratio's spread lies above 100% (more misses than "
            "hits), reversed when below; the paper saw it with more than three clients"
            + (f" and on perPCBLock, here it is {m.top}" if m.top != "perPCBLock" else "")
            + ". " + _inputs_note(src, "pdevtest", [m.top, "perPCBLock", "pdevLock"]))
    return v, today, note


def _f_cswitch(src: Source):
    if "cswitch" not in src.bench_names():
        return None
    k = src.top("cswitch", "sprite")
    rs = src.runs("cswitch", "sprite", k)
    ut, use = _utils(src, rs)
    code = {n: s for n, s in ut.items() if use.get(n) == "code"}
    if not code:
        return None
    targets = src.targets("cswitch")
    tg = {n: s for n, s in code.items() if _targeted(n, targets)}
    un = {n: s for n, s in code.items() if n not in tg}
    top, _ = _top_apart(code)
    missing = None
    if not tg:
        missing = (f"no lock it was meant to stress ({targets or '?'}) is among the code locks "
                   f"with >= {MIN_HITS} hits and hold time in these runs")
    elif not un:
        missing = (f"no code lock other than the ones it was meant to stress has >= {MIN_HITS} "
                   "hits and hold time in these runs")
    if missing:
        v = "not measurable here"
    else:
        ut_, tt = max(un.values(), key=lambda s: s.mid), max(tg.values(), key=lambda s: s.mid)
        v = ("holds" if ut_.lo > max(s.hi for s in tg.values()) else
             "reversed" if tt.lo > max(s.hi for s in un.values()) else "within noise")
    m = _miss(src, rs, "monitor")
    mm = _miss(src, rs, "master")
    today = (f"at {k} CPUs, config sprite: most held code lock {top} {_pcts(code[top])} of the "
             f"run; " + ", ".join(f"{n} {_pcts(s)}" for n, s in sorted(
                 code.items(), key=lambda t: -t[1].mid) if n != top)
             + f"; highest miss ratios: monitor {m.top or DASH} {_pcts(m.top_ratio)}, master "
             f"{mm.top or DASH} {_pcts(mm.top_ratio)}; meant to stress: {targets or '?'}")
    note = ("Held fraction = hold time / elapsed, median (min..max) of the runs; code locks "
            "only (a data-lock class sums many locks, e.g. one per pipe). Holds when an "
            "unintended code lock's spread lies above every targeted one's, reversed when a "
            "targeted lock's lies above every other's, within noise otherwise"
            + (f"; not measurable: {missing}." if missing else ".") + " "
            + _inputs_note(src, "cswitch", code) + " The paper found handleTableLock by "
            "measuring Sprite; here cswitch was written to take it on every pipe access, so "
            "that it shows up is the model's construction, not a finding about the kernel.")
    return v, today, note


def _f_projection(src: Source):
    if not src.timing:
        return None
    states, parts = [], []
    for b in _macro(src):
        p = projection(src, b, "sprite")
        if p is None or not p.first_code:
            continue
        code = {c: s for c, s in p.knee_spread.items()
                if p.use.get(c) == "code" and c in p.ranked and s}
        if not code:
            continue
        # the smallest knee first: compare negated spreads
        neg = {c: Spread(-s.hi, -s.mid, -s.lo, s.how) for c, s in code.items()}
        top, apart = _top_apart(neg)
        if len(code) >= 2:      # a knee with nothing beside it is not "the first"
            states.append(("sched" if top == SCHED_MUTEX else "other") if apart else "overlap")
        parts.append(f"{b}: {top} at N* {_n(p.knees[top])} "
                     f"({fmt_ratio(p.knees[top] / p.top)}x the {p.top} CPUs measured; "
                     f"MVA error at {p.top} CPUs "
                     f"{fmt_sig(100 * p.err_top) + '%' if p.err_top is not None else DASH})")
    if not parts:
        return None
    today = "first code lock to saturate, config sprite: " + "; ".join(parts)
    if not states:
        return ("not measurable here", today, "No macro-benchmark had two code-lock classes "
                f"with a knee (>= {MIN_HITS} hits): a knee with nothing beside it is not the "
                "first to saturate.")
    note = ("Knee N* = R1 / D from the 1-CPU runs (sections 6-7's projection, by MVA); holds "
            "when sched_Mutex's knee spread lies below every other code lock's in more than "
            "half of the macro-benchmarks, reversed when another's does, within noise "
            f"otherwise (data-lock classes sum many locks and are left out, as are classes "
            f"with fewer than {MIN_HITS} hits). The demands D come from hold times, and "
            "the benchmarks' sections other than the scheduler's are set by hand "
            "(kernel/exp/sprite.c; table 'Sprite workload inputs'): the knees of those "
            "classes are inputs of the model scaled by the measured loop speed.")
    return _majority(states, "sched", "other"), today, note


def _lock_share(src: Source, runs: list[dict]) -> Spread | None:
    """Per run: every lock class's hold time summed over the elapsed time and the CPUs - the
    largest fraction of the work that the locks could serialize (data-lock classes are
    counted too, though their locks run in parallel: an upper bound)."""
    vals = []
    for r in runs:
        el, k = num(r.get("elapsed_ticks")), _int(r.get("cpus")) or 1
        if not el:
            continue
        held = sum(num(_g(c, "hold", "total")) or 0 for c in src.ls(r))
        vals.append(held / (el * k))
    return _sp(vals)


def _f_macro_linear(src: Source):
    benches = [b for b in _macro(src) if src.runs(b, "sprite", 1)]
    if not benches:
        return None
    k = max(src.top(b, "sprite") for b in benches)
    if k < 2:
        return ("not measurable here", DASH, "Only 1 CPU measured: scaling needs two CPU "
                "counts or more.")
    states, parts, built = [], [], []
    for b in benches:
        kb = src.top(b, "sprite")
        x1, xk = _xs(src.runs(b, "sprite", 1)), _xs(src.runs(b, "sprite", kb))
        e = _div(xk, _scale(x1, kb))
        if e is None or kb < 2:
            continue
        share = _lock_share(src, src.runs(b, "sprite", kb))
        # Amdahl: if every held section serialized, the efficiency at kb CPUs would still
        # be 1 / (kb f + 1 - f); at or above the bar, the locks cannot decide the claim
        floor = 1 / (kb * share.hi + 1 - share.hi) if share is not None else None
        parts.append(f"{b} {_fs(e, fmt_ratio)} at {kb} CPUs (locks held "
                     f"{_pcts(share)} of the CPU time)")
        if floor is not None and floor >= BAR_LINEAR:
            built.append(b)
            continue
        states.append("yes" if e.lo >= BAR_LINEAR else "no" if e.hi < BAR_LINEAR else "noise")
    if not parts:
        return None
    today = ("throughput per CPU relative to 1 CPU, X(k) / (k X(1)), config sprite: "
             + "; ".join(parts))
    why = (f"Efficiency = X(k) / (k X(1)), X = work / elapsed, medians with the runs' extremes; "
           f"'almost linear' read as >= {BAR_LINEAR:g} (holds when a benchmark's whole spread "
           f"is at or above it, reversed when below, within noise otherwise; majority over "
           f"the macro-benchmarks). The paper measured 1..5 processors; this run 1..{k}.")
    if not states:
        return ("not measurable here", today, why + " Not measurable: in every macro-benchmark "
                "the locks were held so small a share of the CPU time (an upper bound: all "
                "classes summed) that even a fully serialized lock would leave the efficiency "
                f"above {BAR_LINEAR:g} (Amdahl) - the model's lock-free compile loop "
                "(compile_work, an input of kernel/exp/sprite.c) makes the scaling linear by "
                "construction; " + ", ".join(built) + ".")
    return (_majority(states, "yes", "no"), today,
            why + (f" Left out as built in (locks too small a share to matter): "
                   f"{', '.join(built)}." if built else "")
            + " The critical-section lengths are inputs (kernel/exp/sprite.c), so the curve "
            "is partly built in.")


def _f_third_cpu(src: Source):
    benches = [b for b in _micro(src) if src.runs(b, "sprite", 1)]
    if not benches:
        return None
    ks = src.ks(config="sprite")
    if 2 not in ks or 3 not in ks:
        return ("not measurable here", DASH, "The claim is about the third processor; these "
                f"runs measured {', '.join(str(k) for k in ks)} CPUs (a run needs 2 and 3). "
                "The micro-benchmarks' critical-section lengths are inputs of the model "
                "(kernel/exp/sprite.c), so such a curve would be partly built in.")
    states, parts = [], []
    for b in benches:
        d = _incr(src, b, "sprite", 3, 2)
        if d is None:
            continue
        states.append("yes" if d.hi < BAR_LITTLE else "no" if d.lo >= BAR_LITTLE else "noise")
        parts.append(f"{b} {_fs(d, fmt_ratio)}")
    if not states:
        return None
    today = "throughput the third CPU adds, in processor units, config sprite: " + "; ".join(parts)
    note = ("(X(3) - X(2)) / X(1), medians with the interval from the runs' extremes; "
            f"'adds little' read as < {BAR_LITTLE:g} processor units (holds when a benchmark's "
            "whole spread is below, reversed when at or above, within noise otherwise; "
            "majority over the micro-benchmarks). The critical-section lengths are inputs "
            "(kernel/exp/sprite.c), so the curve is partly built in.")
    return _majority(states, "yes", "no"), today, note


def _f_fix(src: Source):
    states, parts = [], []
    for b in src.bench_names():
        k = src.top(b)
        a = _utils(src, src.runs(b, "sprite", k))[0].get(SCHED_MUTEX)
        f = _utils(src, src.runs(b, "sprite-fix", k))[0].get(SCHED_MUTEX)
        if a is None or f is None:
            continue
        v = compare_greater(a, f)
        states.append(v)
        parts.append(f"{b} {fmt_sig(100 * a.mid)}% -> {fmt_sig(100 * f.mid)}%")
    if not states:
        return None
    today = (f"sched_Mutex held (sprite -> sprite-fix) at the top CPU count: lower in "
             f"{states.count('holds')} of {len(states)} benchmarks, higher in "
             f"{states.count('reversed')} ({'; '.join(parts)})")
    note = ("Fraction of the run sched_Mutex was held, median (min..max) of the runs; per "
            "benchmark lower when the spreads are apart. Holds when it is lower in more than "
            "half of the benchmarks, reversed when higher in more than half.")
    return _majority(states, "holds", "reversed"), today, note


def _f_lockfree(src: Source):
    states, ratios, fix = [], [], []
    for b in src.bench_names():
        k = src.top(b)
        a, s = _xs(src.runs(b, "synthesis", k)), _xs(src.runs(b, "sprite", k))
        if a is None or s is None or k < 2:
            continue
        states.append(compare_greater(a, s))
        ratios.append((b, a.mid / s.mid))
        x = _xs(src.runs(b, "sprite-fix", k))
        if x is not None:
            fix.append(compare_greater(a, x))
    if not states:
        return None
    k = max(src.top(b) for b in src.bench_names())
    lo, hi = min(ratios, key=lambda t: t[1]), max(ratios, key=lambda t: t[1])
    sm = []
    for b in ("cswitch",) if "cswitch" in src.bench_names() else ():
        m = _miss(src, src.runs(b, "sprite", src.top(b)), "master").per_class.get(SCHED_MUTEX)
        if m:
            sm.append(f"cswitch's sched_Mutex miss ratio under sprite {_pcts(m)}")
    today = (f"throughput synthesis / sprite at {k} CPUs: higher in {states.count('holds')} of "
             f"{len(states)} benchmarks, within noise in {states.count('within noise')}, lower "
             f"in {states.count('reversed')}; from {fmt_ratio(lo[1])}x ({lo[0]}) to "
             f"{fmt_ratio(hi[1])}x ({hi[0]}); vs sprite-fix higher in {fix.count('holds')} of "
             f"{len(fix)}" + (f"; {sm[0]}" if sm else ""))
    note = ("Per benchmark: medians of the runs, higher / lower only when the spreads are "
            "apart. Holds when synthesis is higher in more than half of the benchmarks, "
            "reversed when lower in more than half, within noise otherwise.")
    return _majority(states, "holds", "reversed"), today, note


def _bar_verdict(costs: list[tuple[str, Spread]], bar: float) -> str:
    lim = bar / 100
    if all(c.hi <= lim for _, c in costs):
        return "holds"
    if any(c.lo > lim for _, c in costs):
        return "reversed"
    return "within noise"


def _f_overhead(src: Source):
    mc = _mode_costs(src)
    costs = [(f"{b} {m}", d[m]) for b, d in mc.items() for m in ("counts", "contested")
             if m in d]
    if not costs:
        return None
    v = _bar_verdict(costs, BAR_COUNTS_PCT)
    today = "cost of throughput: " + "; ".join(f"{n} {_pcts(c)}" for n, c in costs)
    note = (f"Cost = 1 - X(mode) / X(off) per repetition (paired), median with the "
            f"repetitions' extremes, counts and contested-only modes. Holds when every "
            f"benchmark's cost range stays at or below {BAR_COUNTS_PCT:g}%, reversed when one "
            "lies wholly above it, within noise otherwise.")
    return v, today, note


def _f_overhead_timing(src: Source):
    mc = _mode_costs(src)
    costs = [(b, d["timing"]) for b, d in mc.items() if "timing" in d]
    if not costs:
        return None
    v = _bar_verdict(costs, BAR_TIMING_PCT)
    today = "timing-mode cost of throughput: " + "; ".join(f"{b} {_pcts(c)}" for b, c in costs)
    note = (f"Cost = 1 - X(timing) / X(off) per repetition (paired), median with the "
            f"repetitions' extremes. Holds when every benchmark's cost range stays at or "
            f"below {BAR_TIMING_PCT:g}%, reversed when one lies wholly above it, within noise "
            "otherwise.")
    return v, today, note


def sprite_findings(sprite: dict | None) -> list[Finding]:
    srcs = sources(sprite)
    if not srcs or not any(s.base or s.overhead for s in srcs):
        return []
    spec = [
        (HO, "the micro-benchmarks pile up on the scheduler lock: sched_Mutex has the highest "
         "master-lock miss ratio", "Figure 10: at five processors the average master-lock "
         "miss ratio is 50-85% in every micro-benchmark, the highest > 80% (some > 90%), all "
         "sched_Mutex", _f_master_micro, False),
        (HO, "monitor-lock contention stays low in the macro-benchmarks (miss ratio below 18%)",
         "Figure 6: the highest macro-benchmark monitor miss ratio < 18% at five processors "
         "(vmMonitorLock)", _f_macro_monitor, False),
        (HO, "pdevtest's single server makes its busiest monitor lock miss more often than it hits",
         "Figure 7: perPCBLock (held during the client-to-server copy) near 200% with more "
         "than three clients", _f_pdevtest, False),
        (HO, "cswitch saturates a lock other than the one it was written to stress",
         "section 6.3: cswitch, meant for the context-switch code, saturated handleTableLock",
         _f_cswitch, False),
        (HO, "the macro-benchmarks scale almost linearly with the processors",
         "abstract, section 8: total system throughput increases almost linearly with the "
         "system size (1..5 processors; pmake lagged at five)", _f_macro_linear, True),
        (HO, "the third processor adds little throughput in the micro-benchmarks",
         "section 6.2, Figure 5: the third processor does not add much, if any, processing "
         "power (for some it is negative)", _f_third_cpu, True),
        (HO, "the scheduler lock is the first to saturate in the macro-benchmarks",
         "sections 1, 8: sched_Mutex, at about seven processors (projected by hand from five)",
         _f_projection, True),
        (HO, "Figure 9's fix (each monitor's wait queue under its own master lock) lowers "
         "sched_Mutex's load", "Figure 9's caption: it would shorten sched_Mutex's critical "
         "sections and reduce its utilisation (proposed, not measured)", _f_fix, False),
        (HO_MP, "lock-free run queues remove the scheduler bottleneck Sprite found (synthesis "
         "throughput above sprite's at the top CPU count)", "Sprite: sched_Mutex the biggest "
         "bottleneck; Synthesis: no scheduler lock (the papers never met)", _f_lockfree, True),
        (HO, "hit/miss statistics on every lock are cheap: counting costs at most 5% of "
         "throughput, and so does profiling contested acquisitions only", f"section 4: "
         f"counters on every lock (cost not reported); {FREEBSD}", _f_overhead, True),
        (HO, "timing every acquisition (wait, hold, masked time) costs at most 15% of "
         "throughput", f"section 4 counts only (no times); {FREEBSD}", _f_overhead_timing,
         True),
    ]
    out = []
    for paper, claim, then, fn, hw in spec:
        f = _pick(srcs, paper, claim, then, fn, hw)
        if f is not None:
            out.append(f)
    return out


# ---------------------------------------------------------------------------------------
# figures


STYLES = {"sprite": "-", "sprite-fix": "--", "synthesis": ":"}
MARKERS = {"sprite": "o", "sprite-fix": "s", "synthesis": "^"}


def _colours(names: list[str]) -> dict[str, str]:
    cyc = plots.plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cyc[i % len(cyc)] for i, n in enumerate(names)}


def _env_line(src: Source) -> str:
    text = f"environment: {src.label}"
    if src.env == "tcg":
        text += " (tcg: the emulator's costs, not hardware costs)"
    return text


def _suptitle(fig, title: str, src: Source) -> None:
    """The title and the environment, the environment wrapped to the figure's width."""
    import textwrap
    width = max(60, int(fig.get_figwidth() * 10.5))
    fig.suptitle(title + "\n" + "\n".join(textwrap.wrap(_env_line(src), width)), fontsize=11)


def _err(sps: list[Spread]) -> list[list[float]]:
    return [[s.mid - s.lo for s in sps], [s.hi - s.mid for s in sps]]


def _grid_fig(src: Source, out_dir: Path, key: str, stem: str, ylabel: str, value, ideal,
              caption: str, ks_of) -> Figure | None:
    plt = plots.plt
    kinds = [k for k in ("micro", "macro") if any(src.kind(b) == k for b in src.bench_names())]
    cfgs = src.configs()
    if not kinds or not cfgs:
        return None
    col = _colours(src.bench_names())
    drawn = False
    with plt.rc_context(plots.RC):
        fig, axes = plt.subplots(len(kinds), len(cfgs), figsize=(4.0 * len(cfgs),
                                 3.3 * len(kinds) + 1.2), squeeze=False, sharey="row",
                                 constrained_layout=True)
        for i, kd in enumerate(kinds):
            top = 0.0
            for j, c in enumerate(cfgs):
                ax = axes[i][j]
                names = [b for b in src.bench_names() if src.kind(b) == kd]
                for bi, b in enumerate(names):
                    pts = [(k, value(b, c, k)) for k in ks_of(b, c)]
                    pts = [(k, s) for k, s in pts if s is not None]
                    if not pts:
                        continue
                    drawn = True
                    dx = 0.03 * (bi - (len(names) - 1) / 2)     # keep the bars apart
                    top = max([top] + [s.hi for _, s in pts])
                    ax.errorbar([k + dx for k, _ in pts], [s.mid for _, s in pts],
                                yerr=_err([s for _, s in pts]), fmt="o-", capsize=3,
                                color=col[b], label=b, ms=4)
                    if ideal is not None:
                        iv = [(k, ideal(b, k)) for k, _ in pts]
                        if src.fixed(b):
                            ax.plot([k for k, _ in iv], [v for _, v in iv], "--", lw=1,
                                    color=col[b])
                if ideal is not None:
                    ax.axhline(1.0, ls="--", color="#888", lw=1)
                ax.set_title(f"{kd}, {c}")
                ax.set_xlabel("CPUs (k)")
                ax.set_xticks(src.ks())
                ax.tick_params(labelleft=True)
                if j == 0:
                    ax.set_ylabel(ylabel)
                ax.grid(alpha=0.3)
                if j == len(cfgs) - 1:
                    ax.legend(fontsize=7)
            if top > 30 and key == "elapsed":    # ratios of tens: a log scale keeps 1.0 visible
                axes[i][0].set_yscale("log")
                axes[i][0].set_ylabel(ylabel + " (log scale)")
        if not drawn:
            plt.close(fig)
            return None
        _suptitle(fig, src.title(key), src)
        return plots.save_figure(fig, out_dir, stem, caption)


def _fig_elapsed(src: Source, out_dir: Path) -> Figure | None:
    return _grid_fig(
        src, out_dir, "elapsed", f"sprite-elapsed-{src.stem}", "elapsed(k) / elapsed(1)",
        lambda b, c, k: _ratio_row(src, b, c, k), lambda b, k: 1.0 / k if src.fixed(b) else 1.0,
        f"Elapsed-time ratio vs CPUs ({src.short}): median elapsed at k CPUs over the median "
        "at 1 (bars: the runs' extremes); grey dashed: the ideal 1.0; a bench-coloured dashed "
        "line: pmake's ideal 1/k (fixed workload). Paper Figures 2 (macro) and 3 (micro)."
        + (" tcg: the emulator's timings." if src.env == "tcg" else ""),
        lambda b, c: src.ks(b, c))


def _fig_incr(src: Source, out_dir: Path) -> Figure | None:
    def value(b, c, k):
        ks = src.ks(b, c)
        i = ks.index(k)
        return _incr(src, b, c, k, ks[i - 1]) if i > 0 else None
    return _grid_fig(
        src, out_dir, "incr", f"sprite-incr-{src.stem}", "processor units added per CPU",
        value, lambda b, k: 1.0,
        f"Incremental throughput per added CPU in processor units ({src.short}): (X(k) - "
        "X(k')) / ((k - k') X(1)), medians, bars from the runs' extremes; dashed: the ideal "
        "1.0. Paper Figures 4 (macro) and 5 (micro)."
        + (" tcg: the emulator's timings." if src.env == "tcg" else ""),
        lambda b, c: src.ks(b, c)[1:])


def _fig_miss(src: Source, out_dir: Path) -> Figure | None:
    plt = plots.plt
    panels = [(kd, lk, fig_no) for lk, kd, fig_no in (
        ("monitor", "macro", "Figure 6"), ("monitor", "micro", "Figure 7"),
        ("master", "macro", "Figure 8"), ("master", "micro", "Figure 10"))
        if any(src.kind(b) == kd for b in src.bench_names())]
    if not panels:
        return None
    col = _colours(src.bench_names())
    cfgs = src.configs()
    with plt.rc_context(plots.RC):
        fig, axes = plt.subplots(len(panels), 2, figsize=(10, 2.9 * len(panels) + 1.4),
                                 squeeze=False, constrained_layout=True)
        for i, (kd, lk, fig_no) in enumerate(panels):
            for j, what in enumerate(("average", "highest")):
                ax = axes[i][j]
                for b in [b for b in src.bench_names() if src.kind(b) == kd]:
                    for c in cfgs:
                        pts = []
                        for k in src.ks(b, c):
                            m = _miss(src, src.runs(b, c, k), lk)
                            s = m.avg if what == "average" else m.top_ratio
                            if s is not None:
                                pts.append((k, _scale(s, 100.0)))
                        if pts:
                            ax.errorbar([k for k, _ in pts], [s.mid for _, s in pts],
                                        yerr=_err([s for _, s in pts]), ls=STYLES.get(c, "-"),
                                        marker=MARKERS.get(c, "o"), ms=3, capsize=2,
                                        color=col[b])
                ax.set_title(f"{fig_no}: {kd}, {lk} locks, {what} miss ratio")
                ax.set_xlabel("CPUs (k)")
                ax.set_ylabel("misses / hits (%)")
                ax.set_xticks(src.ks())
                ax.grid(alpha=0.3)
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color=col[b], lw=2, label=b) for b in src.bench_names()]
        handles += [Line2D([], [], color="#444", ls=STYLES.get(c, "-"),
                           marker=MARKERS.get(c, "o"), ms=4, label=c) for c in cfgs]
        fig.legend(handles=handles, loc="outside lower center", fontsize=7,
                   ncols=min(len(handles), 6))
        _suptitle(fig, src.title("miss"), src)
        cap = (f"Lock miss ratios (misses / hits, %) vs CPUs ({src.short}), median of the runs, "
               "bars min..max; colour = benchmark, line style = configuration (solid sprite, "
               f"dashed sprite-fix, dotted synthesis). 'Highest' ignores classes with fewer "
               f"than {MIN_HITS} hits (tiny counts inflate ratios). Paper Figures 6, 7, 8, 10.")
        return plots.save_figure(fig, out_dir, f"sprite-miss-{src.stem}", cap)


def _fig_projection(src: Source, out_dir: Path, prs: list[Projection]) -> Figure | None:
    from matplotlib import ticker
    plt = plots.plt
    benches = [b for b in FIGURE_BENCHES if any(p.bench == b for p in prs)]
    if not benches:
        benches = list(dict.fromkeys(p.bench for p in prs))[:3]
    cfgs = [c for c in src.configs() if any(p.config == c for p in prs)]
    if not benches or not cfgs:
        return None
    f = src.per_s(1)
    with plt.rc_context(plots.RC):
        fig, axes = plt.subplots(len(cfgs), len(benches), figsize=(4.3 * len(benches),
                                 3.2 * len(cfgs) + 1.3), squeeze=False,
                                 constrained_layout=True)
        for i, c in enumerate(cfgs):
            for j, b in enumerate(benches):
                ax = axes[i][j]
                p = next((p for p in prs if p.bench == b and p.config == c), None)
                ax.set_title(f"{b}, {c}")
                if p is None:
                    ax.set_visible(False)
                    continue
                n = list(range(1, len(p.curve) + 1))
                ks = sorted(p.meas)
                ax.errorbar(ks, [p.meas[k].mid * f for k in ks],
                            yerr=_err([_scale(p.meas[k], f) for k in ks]), fmt="o", capsize=3,
                            color="C0", label="measured", zorder=3)
                ax.plot(n, [x * f for x in p.curve], "-", color="C0", lw=1.2,
                        label="MVA from 1 CPU")
                if 1 in p.meas:
                    ax.plot(n, [usl(x, p.meas[1].mid, p.sigma, p.kappa) * f for x in n], "--",
                            color="C2", lw=1, label="USL fit")
                if p.pert is not None:
                    q = p.pert
                    qk = sorted(q.meas)
                    ax.errorbar(qk, [q.meas[k].mid * f for k in qk],
                                yerr=_err([_scale(q.meas[k], f) for k in qk]), fmt="x",
                                capsize=3, color="C3", label=f"{q.cls} x{fmt_sig(q.factor)}: "
                                "measured", zorder=3)
                    ax.plot(n, [x * f for x in q.curve[:len(n)]], ":", color="C3", lw=1.2,
                            label="its MVA")
                if math.isfinite(p.nstar) and p.nstar <= len(p.curve):
                    ax.axvline(p.nstar, color="#888", ls="-.", lw=1)
                    ax.text(p.nstar, ax.get_ylim()[1] * 0.95, f" N* {_n(p.nstar)}\n {p.first}"
                            + (" (data)" if p.use.get(p.first or "") == "data" else ""),
                            fontsize=7, va="top")
                else:
                    ax.text(0.98, 0.04, f"N* {_n(p.nstar)} ({p.first}): beyond the plot",
                            transform=ax.transAxes, ha="right", fontsize=7)
                ax.set_xlabel("CPUs (N)")
                if len(p.curve) > 16:       # far past the measured counts: log-log
                    ax.set_xscale("log", base=2)
                    ax.set_yscale("log")
                    ax.xaxis.set_major_formatter(ticker.FuncFormatter(
                        lambda v, _: f"{v:g}"))
                    ax.xaxis.set_minor_locator(ticker.NullLocator())
                    ax.yaxis.set_minor_formatter(ticker.NullFormatter())
                    ax.set_xlabel("CPUs (N, log scale)")
                    ax.set_ylabel(f"throughput ({src.x_unit}, log scale)")
                else:
                    ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
                    ax.set_ylabel(f"throughput ({src.x_unit})")
                    ax.set_ylim(bottom=0)
                ax.grid(alpha=0.3)
                if i == 0 and j == 0:
                    ax.legend(fontsize=6)
        _suptitle(fig, src.title("projection"), src)
        cap = (f"Saturation projection ({src.short}): measured throughput ({src.x_unit}, median, "
               "bars min..max), the exact MVA curve from the 1-CPU runs' hold times (every lock "
               "class a queueing centre), the USL fitted to the measured points, the runs with "
               "one class's critical sections lengthened (x) and their MVA prediction "
               f"(dotted); the knee N* of the first lock to saturate marked; curves up to "
               f"max(2 N*, 2 x top k), at most {MAX_PROJECT} CPUs."
               + (" tcg: the emulator's timings." if src.env == "tcg" else ""))
        return plots.save_figure(fig, out_dir, f"sprite-projection-{src.stem}", cap)


def _bars(src: Source, out_dir: Path, key: str, stem: str, groups: list[str],
          series: list[tuple[str, list[Spread | None]]], ylabel: str, ref: float | None,
          caption: str) -> Figure | None:
    plt = plots.plt
    np = plots.np
    if not groups or not any(s for _, vals in series for s in vals):
        return None
    with plt.rc_context(plots.RC):
        fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(groups) + 2), 4.6),
                               layout="constrained")
        x = np.arange(len(groups))
        w = 0.8 / len(series)
        for i, (lab, vals) in enumerate(series):
            pos = x - 0.4 + w * (i + 0.5)
            mids = [s.mid if s else np.nan for s in vals]
            err = [[s.mid - s.lo if s else 0 for s in vals], [s.hi - s.mid if s else 0
                                                              for s in vals]]
            ax.bar(pos, mids, w, yerr=err, capsize=2, label=lab)
        if ref is not None:
            ax.axhline(ref, color="#888", ls="--", lw=1)
        ax.set_xticks(x, groups, rotation=30 if len(groups) > 5 else 0, ha="right"
                      if len(groups) > 5 else "center")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=7)
        _suptitle(fig, src.title(key), src)
        return plots.save_figure(fig, out_dir, stem, caption)


def _fig_lockfree(src: Source, out_dir: Path) -> Figure | None:
    cfgs = [c for c in CONFIGS if c in src.configs()]
    if "sprite" not in cfgs or len(cfgs) < 2:
        return None
    benches = src.bench_names()
    series = []
    for c in cfgs:
        vals = []
        for b in benches:
            k = src.top(b)
            vals.append(_div(_xs(src.runs(b, c, k)), _xs(src.runs(b, "sprite", k))))
        series.append((c, vals))
    return _bars(src, out_dir, "lockfree", f"sprite-lockfree-{src.stem}", benches, series,
                 "throughput / sprite's (medians)", 1.0,
                 f"Throughput at the top CPU count relative to config sprite ({src.short}): "
                 "ratio of medians, bars from the runs' extremes; above 1 = more work per "
                 "second than Sprite's locking." + (" tcg: the emulator's timings."
                                                   if src.env == "tcg" else ""))


def _fig_overhead(src: Source, out_dir: Path) -> Figure | None:
    oh = _overhead(src)
    benches = [b for b in oh if "off" in oh[b]]
    series = [(m, [_div(oh[b].get(m), oh[b]["off"]) for b in benches])
              for m in OH_MODES[1:] if any(m in oh[b] for b in benches)]
    return _bars(src, out_dir, "overhead", f"sprite-overhead-{src.stem}", benches, series,
                 "throughput / throughput with statistics off", 1 - BAR_COUNTS_PCT / 100,
                 f"Lock statistics' cost ({src.short}): throughput with counting, contested-"
                 "only profiling and timing over throughput with the statistics off (medians, "
                 "bars from the runs' extremes); dashed: the "
                 f"{BAR_COUNTS_PCT:g}% bar for counting and contested-only (timing's is "
                 f"{BAR_TIMING_PCT:g}%). {FREEBSD}."
                 + (" tcg: the emulator's costs." if src.env == "tcg" else ""))


def _fig_lockcost(src: Source, out_dir: Path) -> Figure | None:
    algos = []
    for r in src.costs:
        if r.get("algo") not in ("cas", "none") and r.get("algo") not in algos:
            algos.append(r.get("algo"))
    groups = [f"{a} {m}" for a in algos for m in ("crit", "irqsave")]
    series = []
    for mode in OH_MODES:
        if not any(_cost_row(src, a, m, mode) for a in algos for m in ("crit", "irqsave")):
            continue        # a mode the kernel did not measure (older results)
        vals = []
        for a in algos:
            for m in ("crit", "irqsave"):
                r = _cost_row(src, a, m, mode)
                md = num((r or {}).get("median"))
                vals.append(Spread(num(r.get("min")) or md, md, num(r.get("p99")) or md, "")
                            if md is not None else None)
        series.append((f"statistics {mode}", vals))
    cas = num((_cost_row(src, "cas", "-", "-") or {}).get("median"))
    crit = num((_cost_row(src, "none", "crit", "-") or {}).get("median"))
    ref = lock_cost_limit(cas, crit) if cas is not None and crit is not None else None
    return _bars(src, out_dir, "lockcost", f"sprite-lockcost-{src.stem}", groups, series,
                 "TSC ticks per acquire + release", ref,
                 f"Uncontended master lock acquire + release ({src.short}), median TSC ticks, "
                 "bars min..p99; dashed: the bar for crit masking, "
                 f"{BAR_LOCK_FACTOR:g} x lock cmpxchg + crit_enter/leave."
                 + (" tcg: the emulator's costs, not hardware costs." if src.env == "tcg"
                    else ""))


def sprite_figures(sprite: dict | None, out_dir: Path) -> dict[str, list[Figure]]:
    """Every figure the timing runs support, keyed by the title of the table each belongs
    under (one set per platform)."""
    out: dict[str, list[Figure]] = {}
    for src in sources(sprite):
        if not src.timing:
            continue
        figs: list[tuple[str, Figure | None]] = []
        if src.base:
            prs = projections(src)
            figs += [("elapsed", _fig_elapsed(src, out_dir)), ("incr", _fig_incr(src, out_dir)),
                     ("miss", _fig_miss(src, out_dir)),
                     ("projection", _fig_projection(src, out_dir, prs) if prs else None),
                     ("lockfree", _fig_lockfree(src, out_dir))]
        figs += [("overhead", _fig_overhead(src, out_dir) if src.overhead else None),
                 ("lockcost", _fig_lockcost(src, out_dir) if src.costs else None)]
        for key, f in figs:
            if f is not None:
                out.setdefault(src.title(key), []).append(f)
    return out


__all__ = ["SPRITE_JSON", "TITLES", "load_sprite", "sprite_tables", "sprite_findings",
           "sprite_figures", "lockstat_table", "lockstat_records", "miss_ratios", "mva", "knee",
           "usl", "usl_fit", "usl_nmax", "sources", "projection", "lock_cost_limit"]
