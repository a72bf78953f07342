"""libksync next to today's peers (bench/cmp_peers.c): its tables, findings and figures.

The benchmark measures libksync's stack and queues beside Concurrency Kit and liburcu in
one process (hosted, threads pinned). Each cell (structure x metric x threads x
implementation) is R interleaved runs of at least M ms; its row carries the run values,
their median and their spread ``lo..hi`` (min..max of the run values). Rows:

    {"kind": "cmp", "structure": "stack", "impl": "ksync", "backoff_max": 64,
     "metric": "latency" | "throughput", "unit": "tsc_ticks" | "Mpairs/s", "threads": 1,
     "runs": 5, "run_ms": 200, "min_run_ms": 201.3, "values": [...], "median": 26.3,
     "lo": 25.9, "hi": 27.0, "spread": "min..max"}

and once ``{"kind": "cmp_setup", "cpu_model": ..., "cpus": 2, "run_ms": 200, "runs": 5}``.

A comparison (DESIGN.md, "The report") is libksync's median over the better peer's (the
better median), oriented so that > 1 means libksync is better (fewer ticks per pair,
more pairs per second), with the ratio's range from the two spreads. Where libksync's
spread and the better peer's overlap, the verdict is "within noise", never a winner.

Public API: ``CMP_STRUCTURES``, ``CMP_PEERS``, ``CMP_PEER_NAMES``, ``CMP_KSYNC``,
``Cell``, ``Comparison``, ``cells``, ``compare``, ``comparisons``, ``env_label``,
``thread_counts``, ``planned_seconds``, ``cmp_table``, ``cmp_tables``,
``peer_findings``, ``peer_figure``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable
from .base import DASH, Figure, Finding, Table, fmt_ratio, fmt_ticks


CMP_STRUCTURES = [("stack", "LIFO stack: push + pop"),
                  ("mpmc", "mpmc queue: enqueue + dequeue"),
                  ("spsc", "spsc queue: enqueue + dequeue")]
# libksync as shipped, its backoff compiled out, (mpmc only) the queue of 8-byte words and
# (stack only) the index stack, whose push and pop are one 8-byte CAS each (lf_istack.h)
CMP_KSYNC = ["ksync", "ksync-nobackoff", "ksync-index", "ksync-word", "ksync-nobackoff-word"]
CMP_PEERS = {"stack": ["ck", "urcu"], "mpmc": ["ck", "urcu"], "spsc": ["ck", "ck_fifo"]}
CMP_PEER_NAMES = {"ck": "Concurrency Kit", "urcu": "liburcu", "ck_fifo": "ck_fifo"}
CMP_METRICS = ("latency", "throughput")
# what each implementation is, per structure (table and figure labels)
IMPL_LABELS = {
    "ksync": "libksync",
    "ksync-nobackoff": "libksync, no backoff",
    "ksync-word": "libksync word queue (lf_fifo_mpmc_word)",
    "ksync-nobackoff-word": "libksync word queue, no backoff",
    "ksync-index": "libksync index stack (lf_istack)",
    ("stack", "ck"): "ck_stack (CK)",
    ("stack", "urcu"): "lfstack (urcu)",
    ("mpmc", "ck"): "ck_ring (CK)",
    ("mpmc", "urcu"): "wfcqueue (urcu)",
    ("spsc", "ck"): "ck_ring spsc (CK)",
    ("spsc", "ck_fifo"): "ck_fifo spsc (CK)",
}
METRIC_UNITS = {"latency": "TSC ticks per pair", "throughput": "million pairs per second"}
MIN_RUNS = 2            # a spread needs two runs at least; fewer: no verdict

# verdicts of the table, and the Finding verdict each maps to
WITHIN_NOISE, OURS_BETTER, PEER_BETTER = "within noise", "libksync better", "peer better"
NO_PEER, NO_SPREAD = "no peer measured", "no spread"
FINDING_VERDICT = {WITHIN_NOISE: "within noise", OURS_BETTER: "holds",
                   PEER_BETTER: "reversed", NO_PEER: "not measurable here",
                   NO_SPREAD: "not measurable here"}


MAX_THREADS = 64          # bench/cmp_peers.c's limits on a --threads list
MAX_THREAD_COUNTS = 8


def thread_counts(cpus: int) -> list[int]:
    """The throughput thread counts bench/cmp_peers.c runs on `cpus` usable CPUs: 1, 2,
    4 .. below cpus, and cpus (at most 64)."""
    cpus = max(1, min(cpus, 64))
    out, t = [], 1
    while t < cpus and len(out) < 7:
        out.append(t)
        t *= 2
    return out + [cpus]


def planned_seconds(run_ms: int, runs: int, cpus: int, threads: list[int] | None = None) -> float:
    """The benchmark's own estimate of its length (runs x run length x cells): latency
    for 13 implementations, throughput for 10 at each thread count (``threads``, or
    thread_counts(cpus)), spsc for 3."""
    n_mt, n_spsc = 10, 3
    counts = threads or thread_counts(cpus)
    cells_ = n_mt + n_spsc + n_mt * len(counts) + (n_spsc if cpus >= 2 else 0)
    return cells_ * runs * run_ms / 1000.0


def impl_label(structure: str, impl: str) -> str:
    return IMPL_LABELS.get(impl) or IMPL_LABELS.get((structure, impl)) or impl


def _num(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v


@dataclass
class Cell:
    """One implementation's figure in one (structure, metric, threads) cell."""
    structure: str
    metric: str
    threads: int
    impl: str
    median: float | None
    lo: float | None            # spread: min of the run values (None: not recorded)
    hi: float | None            # max of the run values
    runs: int = 0
    run_ms: int | None = None
    values: list[float] = field(default_factory=list)

    @property
    def has_spread(self) -> bool:
        return self.lo is not None and self.hi is not None and self.runs >= MIN_RUNS

    def spread_text(self) -> str:
        if self.lo is None or self.hi is None:
            return DASH
        return f"{fmt_ticks(self.lo)}..{fmt_ticks(self.hi)}"


def _cell(r: dict) -> Cell:
    values = [v for v in (_num(x) for x in r.get("values") or []) if v is not None]
    lo, hi = _num(r.get("lo")), _num(r.get("hi"))
    if values and (lo is None or hi is None):
        lo, hi = min(values), max(values)
    runs = int(_num(r.get("runs")) or len(values))
    return Cell(structure=str(r.get("structure")), metric=str(r.get("metric")),
                threads=int(_num(r.get("threads")) or 1), impl=str(r.get("impl")),
                median=_num(r.get("median")), lo=lo, hi=hi, runs=runs,
                run_ms=int(_num(r.get("run_ms"))) if _num(r.get("run_ms")) else None,
                values=values)


def cells(rows: Iterable[dict]) -> dict[tuple[str, str, int, str], Cell]:
    """(structure, metric, threads, impl) -> Cell, from the "cmp" rows (other kinds are
    skipped). Rows of the old format (no run values, no lo/hi) give cells without a
    spread, hence no verdict."""
    out: dict[tuple[str, str, int, str], Cell] = {}
    for r in rows:
        if r.get("kind", "cmp") != "cmp":
            continue
        c = _cell(r)
        out[(c.structure, c.metric, c.threads, c.impl)] = c
    return out


@dataclass
class Comparison:
    """A libksync cell against the better peer of the same (structure, metric, threads)."""
    ours: Cell
    peer: Cell | None           # the peer with the better median (None: none measured)
    ratio: float | None         # > 1: libksync better (speed ratio)
    ratio_lo: float | None      # the ratio's range from the two spreads
    ratio_hi: float | None
    verdict: str                # WITHIN_NOISE, OURS_BETTER, PEER_BETTER, NO_PEER, NO_SPREAD

    def ratio_text(self, with_peer: bool = True) -> str:
        if self.ratio is None:
            return DASH
        s = fmt_ratio(self.ratio)
        if self.ratio_lo is not None and self.ratio_hi is not None:
            s += f" ({fmt_ratio(self.ratio_lo)}..{fmt_ratio(self.ratio_hi)})"
        if with_peer and self.peer is not None:
            s += f" vs {self.peer.impl}"
        return s


def _speed_ratio(metric: str, ours: float, peer: float) -> float | None:
    """libksync's speed over the peer's: > 1 means libksync is better."""
    if ours <= 0 or peer <= 0:
        return None
    return peer / ours if metric == "latency" else ours / peer


def compare(ours: Cell, peers: Iterable[Cell | None]) -> Comparison:
    """libksync's cell against the better of the peers (by median). The verdict:
    within noise where the two spreads overlap, else who is better; no peer / no
    spread when there is nothing to compare with."""
    known = [p for p in peers if p is not None and p.median is not None and p.median > 0]
    if ours.median is None or ours.median <= 0 or not known:
        return Comparison(ours, None, None, None, None, NO_PEER)
    lower_better = ours.metric == "latency"
    best = min(known, key=lambda p: p.median) if lower_better else \
        max(known, key=lambda p: p.median)
    ratio = _speed_ratio(ours.metric, ours.median, best.median)
    if not (ours.has_spread and best.has_spread):
        return Comparison(ours, best, ratio, None, None, NO_SPREAD)
    if lower_better:   # fewer ticks is better: worst case our hi vs their lo
        r_lo, r_hi = _speed_ratio("latency", ours.hi, best.lo), \
            _speed_ratio("latency", ours.lo, best.hi)
    else:
        r_lo, r_hi = _speed_ratio("throughput", ours.lo, best.hi), \
            _speed_ratio("throughput", ours.hi, best.lo)
    if ours.lo <= best.hi and best.lo <= ours.hi:
        verdict = WITHIN_NOISE
    else:
        verdict = OURS_BETTER if ratio is not None and ratio > 1 else PEER_BETTER
    return Comparison(ours, best, ratio, r_lo, r_hi, verdict)


def _ordered_keys(idx: dict) -> list[tuple[str, str, int]]:
    order = {s: i for i, (s, _) in enumerate(CMP_STRUCTURES)}
    keys = sorted({k[:3] for k in idx},
                  key=lambda k: (order.get(k[0], 99), k[0], CMP_METRICS.index(k[1])
                                 if k[1] in CMP_METRICS else 9, k[1], k[2]))
    return keys


def _impls(idx: dict, key: tuple[str, str, int]) -> list[str]:
    """The implementations of one cell, libksync first, then the known peers, then any
    other name the rows carry."""
    st = key[0]
    present = [k[3] for k in idx if k[:3] == key]
    known = CMP_KSYNC + CMP_PEERS.get(st, [])
    return [i for i in known if i in present] + sorted(i for i in present if i not in known)


def comparisons(rows: Iterable[dict]) -> list[Comparison]:
    """One Comparison per libksync cell (ksync and ksync-nobackoff), in table order."""
    idx = cells(rows)
    out = []
    for key in _ordered_keys(idx):
        peers = [idx.get(key + (p,)) for p in CMP_PEERS.get(key[0], [])]
        for impl in CMP_KSYNC:
            ours = idx.get(key + (impl,))
            if ours is not None:
                out.append(compare(ours, peers))
    return out


def _setup(rows: Iterable[dict], kind: str = "cmp_setup") -> dict:
    for r in rows:
        if r.get("kind") == kind:
            return r
    return {}


def _load_note(rows: list[dict]) -> str:
    """The 1-minute load average before and after the benchmark, when it recorded them:
    how much the CPUs were shared with other processes (the spreads' main source)."""
    loads = [_num(_setup(rows, k).get("loadavg_1min")) for k in ("cmp_setup", "cmp_end")]
    loads = [x for x in loads if x is not None and x >= 0]
    if not loads:
        return ""
    cpus = _setup(rows).get("cpus")
    on = f" on {cpus} CPUs" if cpus else ""
    elapsed = _num(_setup(rows, "cmp_end").get("elapsed_s"))
    took = f"; the comparison took {elapsed:.0f} s" if elapsed is not None else ""
    return (f"1-minute load average {' -> '.join(f'{x:.1f}' for x in loads)}{on} while it "
            f"ran (other processes shared the CPUs{took}).")


def env_label(rows: Iterable[dict], hosted_info: dict | None, threads: str | None = None
              ) -> str:
    """'hosted, <CPU model>, <n> CPUs' (or '<threads>' in place of the CPU count)."""
    rows = list(rows)
    setup = _setup(rows)
    model = setup.get("cpu_model") or (hosted_info or {}).get("cpu_model") \
        or "this machine's CPU"
    if threads is None:
        n = setup.get("cpus") or (hosted_info or {}).get("cpus")
        threads = f"{n} CPUs" if n else "CPUs unknown"
    return f"hosted, {model}, {threads}"


def _share_note(rows: list[dict], metric: str | None) -> str:
    """How much of their runs' wall time the measured threads spent on a CPU (the
    benchmark's min_cpu_share per cell: CPU time over threads x wall time, lowest run)."""
    shares = [_num(r.get("min_cpu_share")) for r in rows if r.get("kind", "cmp") == "cmp"
              and (metric is None or r.get("metric") == metric)]
    shares = [x for x in shares if x is not None]
    if not shares:
        return ""
    lo, hi = min(shares), max(shares)
    text = (f"The measured threads were on a CPU for {lo:.0%}..{hi:.0%} of their runs' wall "
            "time (each cell's lowest run; thread CPU time over wall time)")
    if lo < 0.9:
        text += ": other processes took the CPUs for the rest, and the spreads include that"
    return text + "."


def _method(rows: list[dict]) -> str:
    cs = list(cells(rows).values())
    runs = sorted({c.runs for c in cs if c.runs})
    ms = sorted({c.run_ms for c in cs if c.run_ms})
    if not runs:
        return "medians of one run each (rows without run values: no spread, no verdict)"
    r = str(runs[0]) if len(runs) == 1 else f"{runs[0]}-{runs[-1]}"
    m = f" of at least {ms[0]} ms" if ms else ""
    return (f"each cell is the median of {r} interleaved runs{m}; spread = min..max of "
            "the run values")


def _table_rows(rows: list[dict], metric: str | None) -> list[list[str]]:
    idx = cells(rows)
    comps = {(c.ours.structure, c.ours.metric, c.ours.threads, c.ours.impl): c
             for c in comparisons(rows)}
    out = []
    for key in _ordered_keys(idx):
        if metric is not None and key[1] != metric:
            continue
        first = True
        for impl in _impls(idx, key):
            c = idx[key + (impl,)]
            comp = comps.get(key + (impl,))
            ratio = comp.ratio_text() if comp else ""
            verdict = (DASH if comp.verdict == NO_PEER else comp.verdict) if comp else ""
            lead = [key[0] if first else ""]
            if metric is None:
                lead.append(key[1] if first else "")
            if metric != "latency":
                lead.append(str(key[2]) if first else "")
            out.append(lead + [impl_label(key[0], impl),
                               fmt_ticks(c.median) if c.median is not None else DASH,
                               c.spread_text(), ratio, verdict])
            first = False
    return out


def cmp_table(rows: Iterable[dict], hosted_info: dict | None, metric: str | None = None
              ) -> Table:
    """The comparison as one table (metric None: every metric, with a metric column; the
    report uses cmp_tables, one table per metric, which fit 120 terminal columns).
    One line per implementation; on libksync's lines the speed ratio to the better peer
    with its range, and the verdict."""
    rows = list(rows)
    lead = ["structure"] + (["metric"] if metric is None else []) + \
        (["threads"] if metric != "latency" else [])
    headers = lead + ["implementation", "median", "spread (min..max)",
                      "libksync vs better peer", "verdict"]
    align = ["l"] * len(lead) + ["l", "r", "r", "r", "l"]
    if metric == "latency":
        what = "latency, one thread, uncontended (TSC ticks per pair; lower is better)"
        env = env_label(rows, hosted_info, "1 thread pinned")
    elif metric == "throughput":
        what = "throughput, threads pinned (million pairs per second; higher is better)"
        env = env_label(rows, hosted_info)
    else:
        what = "latency (TSC ticks per pair) and throughput (million pairs per second)"
        env = env_label(rows, hosted_info)
    notes = [
        f"{env}. {_method(rows)[0].upper()}{_method(rows)[1:]}. Ratio = libksync's speed "
        "over the better peer's (> 1: libksync better), in brackets its range from the two "
        "spreads; verdict \"within noise\" where libksync's spread and the better peer's "
        "overlap.",
        "libksync, no backoff: the same code compiled with KSYNC_BACKOFF_MAX 0 (the peers do "
        "not back off after a failed CAS; libksync waits 1..64 pause instructions, "
        "include/ksync/backoff.h); the spsc queue has no CAS. Peers as Debian 12 ships them: "
        "Concurrency Kit 0.7.1, liburcu 0.13 (lfstack pop_blocking and wfcqueue "
        "dequeue_blocking take a mutex).",
    ]
    extra = " ".join(x for x in (_share_note(rows, metric), _load_note(rows)) if x)
    if extra:
        notes.append(extra)
    return Table(title=f"libksync vs Concurrency Kit and liburcu: {what}", headers=headers,
                 rows=_table_rows(rows, metric), align=align, notes_above=notes)


def cmp_tables(rows: Iterable[dict], hosted_info: dict | None) -> list[Table]:
    """One table per metric present (latency, throughput)."""
    rows = list(rows)
    present = {c.metric for c in cells(rows).values()}
    return [cmp_table(rows, hosted_info, m) for m in CMP_METRICS if m in present]


# ---- findings --------------------------------------------------------------------------

def peer_findings(rows: Iterable[dict], hosted_info: dict | None) -> list[Finding]:
    """Per structure: uncontended latency and throughput at the most threads measured,
    libksync (as shipped) against the better peer; the verdict computed from the spreads
    (holds: libksync better beyond them; reversed: a peer better beyond them; within
    noise: they overlap)."""
    rows = list(rows)
    by_key = {(c.ours.structure, c.ours.metric, c.ours.threads, c.ours.impl): c
              for c in comparisons(rows)}
    out = []
    for st, label in CMP_STRUCTURES:
        for metric in CMP_METRICS:
            threads = sorted(k[2] for k in by_key if k[:2] == (st, metric) and k[3] == "ksync")
            if not threads:
                continue
            t = threads[-1]
            comp = by_key[(st, metric, t, "ksync")]
            nb = by_key.get((st, metric, t, "ksync-nobackoff"))
            if comp.peer is not None:
                today = (f"{comp.ratio_text(with_peer=False)} x the speed of "
                         f"{impl_label(st, comp.peer.impl)}")
            else:
                today = DASH
            if nb is not None and nb.ratio is not None:
                today += f"; no backoff: {nb.ratio_text(with_peer=False)}"
            what = "latency, 1 thread" if metric == "latency" else \
                f"throughput, {t} thread{'s' if t != 1 else ''}"
            env = env_label(rows, hosted_info,
                            f"{t} thread{'s' if t != 1 else ''} pinned")
            note = (f"{_method(rows)}; speed ratio > 1: libksync better; the range comes "
                    "from the two spreads, and overlapping spreads read \"within noise\". "
                    + _share_note(rows, metric)).strip()
            if comp.verdict == NO_PEER:
                note = "no peer was measured for this cell"
            elif comp.verdict == NO_SPREAD:
                note = f"fewer than {MIN_RUNS} runs per cell: no spread, no verdict"
            out.append(Finding(
                paper="Massalin & Pu 1991",
                claim=f"{label} ({what}): libksync next to Concurrency Kit and liburcu",
                then=DASH, today=today, env=env,
                verdict=FINDING_VERDICT[comp.verdict], note=note))
            index = by_key.get((st, metric, t, "ksync-index"))
            if index is not None:   # the 8-byte-CAS index stack (issue 27), its own line
                itoday = (f"{index.ratio_text(with_peer=False)} x the speed of "
                          f"{impl_label(st, index.peer.impl)}" if index.peer is not None
                          else DASH)
                inote = note if index.verdict not in (NO_PEER, NO_SPREAD) else (
                    "no peer was measured for this cell" if index.verdict == NO_PEER else
                    f"fewer than {MIN_RUNS} runs per cell: no spread, no verdict")
                out.append(Finding(
                    paper="Massalin & Pu 1991",
                    claim=f"{label} ({what}): libksync's index stack (lf_istack: one 8-byte "
                          "CAS per push and per pop) next to Concurrency Kit and liburcu",
                    then=DASH, today=itoday, env=env,
                    verdict=FINDING_VERDICT[index.verdict], note=inote))
            word = by_key.get((st, metric, t, "ksync-word"))
            if word is not None:    # the 8-byte word queue (issue 13 item 1), its own line
                wtoday = (f"{word.ratio_text(with_peer=False)} x the speed of "
                          f"{impl_label(st, word.peer.impl)}" if word.peer is not None
                          else DASH)
                wnote = note if word.verdict not in (NO_PEER, NO_SPREAD) else (
                    "no peer was measured for this cell" if word.verdict == NO_PEER else
                    f"fewer than {MIN_RUNS} runs per cell: no spread, no verdict")
                out.append(Finding(
                    paper="Massalin & Pu 1991",
                    claim=f"{label} ({what}): libksync's queue of 8-byte words "
                          "(lf_fifo_mpmc_word) next to Concurrency Kit and liburcu",
                    then=DASH, today=wtoday, env=env,
                    verdict=FINDING_VERDICT[word.verdict], note=wnote))
    return out


# ---- figures ---------------------------------------------------------------------------

IMPL_COLOURS = {"ksync": "#1f5fa8", "ksync-nobackoff": "#8fb8e0", "ck": "#e07b1f",
                "urcu": "#3a9a3a", "ck_fifo": "#b8860b", "ksync-word": "#6a3d9a",
                "ksync-nobackoff-word": "#cab2d6", "ksync-index": "#17becf"}


def _whiskers(cs: list[Cell]) -> list[list[float]]:
    return [[c.median - c.lo if c.lo is not None else 0.0 for c in cs],
            [c.hi - c.median if c.hi is not None else 0.0 for c in cs]]


def _bar_style(impl: str) -> dict:
    return {"color": IMPL_COLOURS.get(impl, "#888888"), "edgecolor": "#333333",
            "linewidth": 0.5, "hatch": "//" if impl.startswith("ksync-nobackoff") else None,
            "capsize": 3, "error_kw": {"elinewidth": 1, "ecolor": "#222222"}}


def _top(cs: Iterable[Cell]) -> float:
    tops = [c.hi if c.hi is not None else c.median for c in cs if c.median is not None]
    return max(tops) if tops else 1.0


def _latency_panel(ax, idx: dict, st: str) -> None:
    """One bar per implementation: the median; whiskers min..max of the run values."""
    key = (st, "latency", min(k[2] for k in idx if k[:2] == (st, "latency")))
    impls = [i for i in _impls(idx, key) if idx[key + (i,)].median is not None]
    cs = [idx[key + (i,)] for i in impls]
    for x, (impl, c) in enumerate(zip(impls, cs)):
        ax.bar([x], [c.median], 0.7, yerr=_whiskers([c]), **_bar_style(impl))
    ax.set_xticks(range(len(impls)))
    ax.set_xticklabels([impl_label(st, i) for i in impls], rotation=25, ha="right",
                       fontsize=8)
    ax.set_ylim(0, _top(cs) * 1.1)


def _throughput_panel(ax, idx: dict, st: str) -> None:
    """Grouped bars (one group per thread count, one bar per implementation): height the
    median, whiskers min..max of the run values."""
    threads = sorted({k[2] for k in idx if k[:2] == (st, "throughput")})
    impls: list[str] = []
    for t in threads:
        impls += [i for i in _impls(idx, (st, "throughput", t)) if i not in impls]
    width = 0.8 / max(len(impls), 1)
    shown: list[Cell] = []
    for j, impl in enumerate(impls):
        xs, cs = [], []
        for g, t in enumerate(threads):
            c = idx.get((st, "throughput", t, impl))
            if c is not None and c.median is not None:
                xs.append(g - 0.4 + width * (j + 0.5))
                cs.append(c)
        if cs:
            ax.bar(xs, [c.median for c in cs], width * 0.92, yerr=_whiskers(cs),
                   label=impl_label(st, impl), **_bar_style(impl))
            shown += cs
    ax.set_xticks(range(len(threads)))
    ax.set_xticklabels([str(t) for t in threads])
    ax.set_xlabel("threads (pinned)")
    ax.set_ylim(0, _top(shown) * 1.35)      # room for the legend above the whiskers
    ax.legend(fontsize=7, loc="upper center", ncol=2)


def peer_figure(rows: Iterable[dict], hosted_info: dict | None, out_dir: Path
                ) -> list[Figure]:
    """peers-latency.{png,svg} and peers-throughput.{png,svg} in out_dir: one panel per
    structure, bars = medians, whiskers = min..max of the runs. Returns the Figures (src
    = the PNG, relative to out_dir); none when there are no rows."""
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    rows = list(rows)
    idx = cells(rows)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    method = _method(rows)
    figures = []
    for metric in CMP_METRICS:
        structs = [s for s, _ in CMP_STRUCTURES if any(k[:2] == (s, metric) for k in idx)]
        structs += sorted({k[0] for k in idx if k[1] == metric} - set(structs))
        if not structs:
            continue
        all_threads = sorted({k[2] for k in idx if k[1] == metric})
        tdesc = (f"{all_threads[0]} thread" if all_threads == [1] else
                 f"{all_threads[0]}-{all_threads[-1]} threads") + " pinned"
        env = env_label(rows, hosted_info, tdesc)
        fig, axes = plt.subplots(1, len(structs), figsize=(4.2 * len(structs) + 0.6, 4.6),
                                 squeeze=False)
        for ax, st in zip(axes[0], structs):
            if metric == "latency":
                _latency_panel(ax, idx, st)
            else:
                _throughput_panel(ax, idx, st)
            ax.set_title(dict(CMP_STRUCTURES).get(st, st), fontsize=10)
            ax.grid(axis="y", linewidth=0.4, alpha=0.5)
            ax.set_axisbelow(True)
        unit = METRIC_UNITS[metric] if metric in METRIC_UNITS else metric
        better = "lower is better" if metric == "latency" else "higher is better"
        axes[0][0].set_ylabel(f"{unit} ({better})")
        name = "uncontended latency" if metric == "latency" else "throughput"
        fig.suptitle(f"libksync vs Concurrency Kit and liburcu: {name}\n({env})", fontsize=11)
        fig.text(0.01, 0.01, f"Bars: medians; whiskers: min..max of the runs ({method}).",
                 fontsize=7, color="#444444")
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        stem = f"peers-{metric}"
        # the same deterministic output as plots.py's figures (no dates, fixed SVG ids)
        with matplotlib.rc_context({"svg.hashsalt": "ksync"}):
            fig.savefig(out_dir / f"{stem}.png", dpi=110, metadata={"Software": None})
            fig.savefig(out_dir / f"{stem}.svg", dpi=110,
                        metadata={"Date": None, "Creator": None})
        plt.close(fig)
        figures.append(Figure(
            src=f"{stem}.png",
            caption=f"libksync vs Concurrency Kit and liburcu, {name} ({unit}, {better}); "
                    f"{env}; bars are medians, whiskers min..max of the runs.",
            svg=f"{stem}.svg"))
    return figures
