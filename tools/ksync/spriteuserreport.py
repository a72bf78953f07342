"""Sprite's benchmarks as user programs, ksync beside Debian's Linux:
the tables, Figure 2 redrawn and the findings, from spriteuser.json (``spriteuser.collect``).

Hartman & Ousterhout, section 5: n processors run n copies of each benchmark (pmake: one
fixed job, 2 compilations per processor), and Figure 2 is the ratio of the n-processor
elapsed time to the uniprocessor one (ideal: 1.0; pmake 1/n). Here every cell is the
median over the rounds with its range; a ratio's range is the extreme quotients of the
two CPU counts' runs (min over max .. max over min). The locks' table is ksync's own
statistics of its real kernel locks (/proc/ksync-lockstat read by the program around each
benchmark's timed part); Linux has no such file. Under TCG every time is what the emulator
makes the kernel's code cost: compare ratios.

Public API: ``SPRITEUSER_JSON``, ``load_spriteuser``, ``elapsed``, ``ratio``,
``user_tables``, ``user_findings``, ``user_figures``.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from .base import (ColumnSpec, Figure, Finding, Spread, Table, build_table, compare_greater,
                   fmt_ratio, fmt_sig, knee, mva)
from . import plots
from .util import load_runs_file

SPRITEUSER_JSON = "spriteuser.json"
SCHEMA = "ksync-spriteuser-1"
PAPER = "Hartman & Ousterhout (Sprite)"
BENCHES = ("fork", "fexec", "mem", "cswitch", "pdevtest", "pdevtestInd", "pmake", "pmakeInd",
           "troff")
ROWS = (*BENCHES, "hackbench")      # the table's and figure's rows: Debian's hackbench last
MACRO = ("pmake", "pmakeInd", "troff")
FIG9 = ("cswitch", "pdevtest", "pdevtestInd")     # through the pipes' monitors
FIXED = ("pmake", "hackbench")
WHAT = {"fork": "fork + exit + wait", "fexec": "fork + exec of itself + exit",
        "mem": "heap growth by brk, a write per page, exec to start over",
        "cswitch": "two processes passing a byte through two pipes",
        "pdevtest": "N clients calling one user-level server (pipes)",
        "pdevtestInd": "a server per client", "pmake": "parallel compile of a fixed tree",
        "pmakeInd": "a compile of its own tree per CPU", "troff": "a text formatter per CPU",
        "hackbench": "Debian's hackbench -p, fixed work (rt-tests: the same binary on both)"}
TITLE_TIME = "Sprite's benchmarks as user programs: elapsed time"
TITLE_LOCKS = "Sprite's benchmarks as user programs: the lock each benchmark met most"


def load_spriteuser(path: Path) -> dict:
    return load_runs_file(path, SCHEMA, "a spriteuser")


def _runs(data: dict, kernel: str, smp: int | None = None, timing: bool = False) -> list[dict]:
    """The kernel's ok runs at that CPU count: the ordinary ones (counts mode on ksync), or
    (timing) the projection's boots with lockstat=timing, whose clock reads lengthen the
    sections they time - never in the elapsed-time tables."""
    return [r for r in data.get("runs", []) if isinstance(r, dict) and r.get("ok")
            and r.get("kernel") == kernel and (smp is None or r.get("smp") == smp)
            and (r.get("lockstat") == "timing") == timing]


ORDER = ("ksync", "ksync-sprite", "ksync-sprite-fix", "ksync-synthesis", "ksync-fiasco", "linux-std",
         "linux-rt")


def kernels(data: dict) -> list[str]:
    ks = {r.get("kernel") for r in data.get("runs", []) if isinstance(r, dict)}
    return [k for k in ORDER if k in ks] + \
        sorted(k for k in ks if isinstance(k, str) and k not in ORDER)


def ksyncs(data: dict) -> list[str]:
    """The ksync kernels of the runs: the default build and each lock configuration."""
    return [k for k in kernels(data) if k.startswith("ksync")]


def smps(data: dict) -> list[int]:
    return sorted({r["smp"] for r in data.get("runs", []) if isinstance(r, dict)
                   and isinstance(r.get("smp"), int)})


def _secs(r: dict, bench: str) -> float | None:
    row = (r.get("rows") or {}).get(bench) or {}
    ns = row.get("elapsed_ns")
    return ns / 1e9 if isinstance(ns, (int, float)) and ns > 0 else None


def _all_secs(data: dict, kernel: str, smp: int, bench: str) -> list[float]:
    return [s for s in (_secs(r, bench) for r in _runs(data, kernel, smp)) if s is not None]


def elapsed(data: dict, kernel: str, smp: int, bench: str) -> Spread | None:
    xs = _all_secs(data, kernel, smp, bench)
    return Spread(min(xs), statistics.median(xs), max(xs), f"{len(xs)} runs") if xs else None


def ratio(data: dict, kernel: str, smp: int, bench: str) -> Spread | None:
    """Figure 2's ratio: elapsed at smp CPUs over elapsed at 1 CPU."""
    a, b = _all_secs(data, kernel, smp, bench), _all_secs(data, kernel, 1, bench)
    if not a or not b:
        return None
    return Spread(min(a) / max(b), statistics.median(a) / statistics.median(b),
                  max(a) / min(b), f"{len(a)}+{len(b)} runs")


def gain(data: dict, kernel: str, smp: int, bench: str) -> Spread | None:
    """Figures 4 and 5: the throughput the smp-th CPU adds, in units of one CPU's
    throughput: (X(smp) - X(smp - 1)) / X(1), X = work / elapsed (n copies at n CPUs;
    pmake's work fixed). Its range from the runs' extremes."""
    def work(n: int) -> float:
        return 1.0 if bench in FIXED else float(n)
    t1, tp, tn = (_all_secs(data, kernel, n, bench) for n in (1, smp - 1, smp))
    if smp < 2 or not (t1 and tp and tn):
        return None
    x1 = (work(1) / max(t1), work(1) / statistics.median(t1), work(1) / min(t1))
    xp = (work(smp - 1) / max(tp), work(smp - 1) / statistics.median(tp), work(smp - 1) / min(tp))
    xn = (work(smp) / max(tn), work(smp) / statistics.median(tn), work(smp) / min(tn))
    return Spread((xn[0] - xp[2]) / x1[2], (xn[1] - xp[1]) / x1[1], (xn[2] - xp[0]) / x1[0],
                  f"{min(len(t1), len(tn))} runs")


def top_ratio(data: dict, kernel: str, smp: int, bench: str,
              kind: str) -> tuple[str, Spread] | None:
    """Figures 6-8 and 10: the class of that kind (monitor, master) with the highest median
    miss ratio at that CPU count, and its range."""
    rs = class_ratios(data, kernel, smp, bench, kind)
    if not rs:
        return None
    cls = max(rs, key=lambda c: rs[c].mid)
    return cls, rs[cls]


def _env(data: dict, smp: int | None = None) -> str:
    accel = (data.get("options") or {}).get("accel") or "tcg"
    return accel + (f", {smp} CPU{'s' if smp != 1 else ''}" if smp else "")


def _cell(s: Spread | None, digits: str = "") -> str:
    return f"{fmt_sig(s.mid)} ({fmt_sig(s.lo)}..{fmt_sig(s.hi)})" if s else "—"


def _release(data: dict, kernel: str) -> str:
    for r in data.get("runs", []):
        if r.get("kernel") == kernel and r.get("kernel_release"):
            words = str(r["kernel_release"]).split()
            return f"{kernel} {words[2]}" if len(words) > 2 else kernel
    return kernel


def _lock_rows(data: dict, smp: int, kernel: str = "ksync") -> list[dict]:
    """Per benchmark: the ksync kernel's class with the highest median miss ratio among the
    classes it used (at least 100 hits per run), with its median hits and misses per run."""
    out = []
    for b in BENCHES:
        per: dict[str, list[dict]] = {}
        runs = _runs(data, kernel, smp)
        for r in runs:
            for cls, d in ((r.get("locks") or {}).get(b) or {}).items():
                if isinstance(d, dict):
                    per.setdefault(cls, []).append(d)
        best = None
        for cls, ds in per.items():
            hits = statistics.median([d.get("hits", 0) for d in ds] + [0] * (len(runs) - len(ds)))
            miss = statistics.median([d.get("misses", 0) for d in ds] + [0] * (len(runs) - len(ds)))
            if hits < 100:
                continue
            row = {"kernel": kernel, "bench": b, "class": cls, "kind": ds[0].get("kind") or "", "hits": hits,
                   "misses": miss, "ratio": miss / hits if hits else 0.0,
                   "classes": len(per), "runs": len(runs)}
            if best is None or (row["ratio"], row["hits"]) > (best["ratio"], best["hits"]):
                best = row
        if best is None and runs:
            best = {"kernel": kernel, "bench": b, "class": "", "kind": "", "hits": 0, "misses": 0, "ratio": 0.0,
                    "classes": len(per), "runs": len(runs)}
        if best is not None:
            out.append(best)
    return out


def class_ratios(data: dict, kernel: str, smp: int, bench: str,
                 kind: str | None = "master", min_hits: int = 100) -> dict[str, Spread]:
    """lock class -> its miss ratio (misses / hits) over the runs, for the classes of that
    kind with at least ``min_hits`` hits in every run that used them."""
    per: dict[str, list[float]] = {}
    for r in _runs(data, kernel, smp):
        for cls, d in ((r.get("locks") or {}).get(bench) or {}).items():
            if isinstance(d, dict) and (kind is None or d.get("kind") == kind):
                per.setdefault(cls, []).append(d.get("misses", 0) / d["hits"]
                                               if d.get("hits", 0) >= min_hits else -1.0)
    return {c: Spread(min(v), statistics.median(v), max(v), f"{len(v)} runs")
            for c, v in per.items() if v and min(v) >= 0}


def sched_mutex_top(data: dict, kernel: str, smp: int) -> dict[str, str]:
    """bench -> "top" when sched_Mutex's miss-ratio range lies wholly above every other
    master lock's, "not top" when another's lies wholly above it, else "within noise";
    benchmarks without sched_Mutex figures are left out."""
    out = {}
    for b in BENCHES:
        rs = class_ratios(data, kernel, smp, b)
        sm = rs.pop("sched_Mutex", None)
        if sm is None:
            continue
        if all(compare_greater(sm, o) == "holds" for o in rs.values()):
            out[b] = "top"
        elif any(compare_greater(o, sm) == "holds" for o in rs.values()):
            out[b] = "not top"
        else:
            out[b] = "within noise"
    return out


def user_tables(data: dict | None) -> list[Table]:
    if not data:
        return []
    ns = smps(data)
    ks = kernels(data)
    items = [(b, k) for b in ROWS for k in ks
             if any(elapsed(data, k, n, b) for n in ns)]
    cols = [ColumnSpec("benchmark", lambda it: it[0], "l"),
            ColumnSpec("kernel", lambda it: _release(data, it[1]), "l")]
    for n in ns:
        cols.append(ColumnSpec(f"{n} CPU{'s' if n != 1 else ''}: s",
                               lambda it, n=n: _cell(elapsed(data, it[1], n, it[0]))))
    for n in ns:
        if n > 1:
            cols.append(ColumnSpec(f"ratio {n}/1",
                                   lambda it, n=n: _cell(ratio(data, it[1], n, it[0]))))
    failed = [f"{r.get('kernel')} smp={r.get('smp')} round {r.get('round', 0) + 1}: "
              f"{r.get('reason')}" for r in data.get("runs", []) if not r.get("ok")]
    opts = data.get("options") or {}
    scales = opts.get("scales") or {}
    tables = [build_table(
        f"{TITLE_TIME} [{_env(data)}]", items, cols,
        notes_above=["The same static binary (bench/user/sprite.c, musl) on every kernel, the "
                     "same QEMU options, rounds interleaved. At n CPUs each benchmark runs n "
                     "copies (pmake: one fixed tree, 2n job slots), as Hartman & Ousterhout's "
                     "section 5; a cell: the median elapsed seconds over the ok runs (their "
                     "range). ratio n/1 is Figure 2's: ideal 1.0, pmake 1/n. Emulator costs: "
                     "compare ratios."],
        notes_below=["Benchmarks: " + "; ".join(f"{b}: {WHAT[b]}" for b in ROWS) + "."]
        + ([f"Inputs of the workload: per-copy scales {', '.join(f'{b} {s}' for b, s in scales.items())}"
            f" (x{opts.get('mult', 1)}); the compile step's work and the formatter's text are "
            "the program's own."] if scales else [])
        + (["Failed runs: " + "; ".join(failed)] if failed else []))]
    top = max(ns) if ns else None
    if top and ksyncs(data):
        rows = [r for k in ksyncs(data) for r in _lock_rows(data, top, k)]
        mode = next((str((r.get("locks") or {}).get(b, {}).get("_mode"))
                     for k in ksyncs(data) for r in _runs(data, k, top) for b in BENCHES
                     if (r.get("locks") or {}).get(b, {}).get("_mode")), "counts")
        lcols = [ColumnSpec("kernel", lambda r: r["kernel"], "l"),
                 ColumnSpec("benchmark", lambda r: r["bench"], "l"),
                 ColumnSpec("lock class", lambda r: r["class"] or "—", "l"),
                 ColumnSpec("kind", lambda r: r["kind"], "l"),
                 ColumnSpec("hits", lambda r: fmt_sig(r["hits"])),
                 ColumnSpec("misses", lambda r: fmt_sig(r["misses"])),
                 ColumnSpec("miss ratio", lambda r: f"{r['ratio'] * 100:.1f} %"),
                 ColumnSpec("classes used", lambda r: str(r["classes"]))]
        tables.append(build_table(
            f"{TITLE_LOCKS} [{_env(data, top)}, ksync]", rows, lcols,
            notes_above=[f"ksync's own statistics ({mode} mode) of its real kernel locks while "
                         "the benchmark's timed part ran, at the top CPU count: the class with "
                         "the highest miss ratio among those with at least 100 hits per run "
                         "(medians over the runs). Sprite's Figures 6-7 name the lock each "
                         "benchmark saturated the same way. ksync-CONFIG: the kernel's locks "
                         "built one paper's way (docs/locks.md); ksync: the build's default."]))
    proj = _projection_table(data)
    if proj:
        tables.append(proj)
    return tables


MIN_RUNS = 2     # runs on each side before two ranges can be compared


def _runs_in(sp: Spread | None) -> int:
    try:
        return int(sp.how.split()[0]) if sp else 0
    except (ValueError, IndexError):
        return 0


def _enough(*sps: Spread | None) -> bool:
    return all(_runs_in(x) >= MIN_RUNS for x in sps)


def _bench_verdicts(data: dict, linux: str, smp: int,
                    ks: str = "ksync") -> list[tuple[str, str, float]]:
    out = []
    for b in BENCHES:
        k, l = elapsed(data, ks, smp, b), elapsed(data, linux, smp, b)
        if k and l and _enough(k, l):
            v = compare_greater(l, k)
            out.append((b, {"holds": "met", "reversed": "not met"}.get(v, "within noise"),
                        k.mid / l.mid))
    return out


def _too_few(claim: str, data: dict, smp: int) -> Finding:
    return Finding(PAPER, claim, "-", f"fewer than {MIN_RUNS} runs on a side", _env(data, smp),
                   "not measurable here", f"a verdict needs at least {MIN_RUNS} runs of each "
                   "side (a range to compare); run more rounds (--rounds, --repeat)")


def user_findings(data: dict | None) -> list[Finding]:
    if not data:
        return []
    out: list[Finding] = []
    ns = smps(data)
    if not ns:
        return out
    top = max(ns)
    linuxes = [k for k in kernels(data) if k.startswith("linux")]
    for ks, linux in ((ks, linux) for ks in ksyncs(data) for linux in linuxes[:1]):
        vs = _bench_verdicts(data, linux, top, ks)
        if not vs:
            if elapsed(data, ks, top, "fork") and elapsed(data, linux, top, "fork"):
                out.append(_too_few(f"Sprite's benchmarks as real programs: {ks}'s elapsed "
                                    f"time at most {_release(data, linux)}'s", data, top))
            continue
        met = [b for b, v, _ in vs if v == "met"]
        not_met = [b for b, v, _ in vs if v == "not met"]
        noise = [b for b, v, _ in vs if v == "within noise"]
        verdict = "reversed" if not_met else "within noise" if noise else "holds"
        today = (f"{len(met)} of {len(vs)} benchmarks faster on {ks}, {len(not_met)} slower"
                 + (f" ({', '.join(f'{b} {fmt_ratio(x)}x' for b, v, x in vs if v == 'not met')})"
                    if not_met else "")
                 + f", {len(noise)} within noise; median time ratio "
                 f"{fmt_ratio(statistics.median(x for _, _, x in vs))}x")
        out.append(Finding(PAPER, f"Sprite's benchmarks as real programs: {ks}'s elapsed time "
                           f"at most {_release(data, linux)}'s", "(the paper measured Sprite "
                           "alone)", today, _env(data, top), verdict,
                           "per benchmark: ksync's range of runs wholly below Linux's (faster), "
                           "above (slower) or overlapping (within noise); the claim holds only "
                           "if every benchmark is faster. The same binary and QEMU options."))
    # the bar names the synthesis configuration: judged on it where it ran
    bar_ks = "ksync-synthesis" if "ksync-synthesis" in ksyncs(data) else \
        ("ksync" if "ksync" in ksyncs(data) else None)
    for linux, bench in ((lx, b) for lx in (linuxes if bar_ks else [])
                         for b in ("pmake", "hackbench")):
        k, l = elapsed(data, bar_ks, top, bench), elapsed(data, linux, top, bench)
        claim = (f"Bar for real programs: {bench} at the top CPU count on {bar_ks} at or above "
                 f"{_release(data, linux)}'s throughput")
        if k and l and top > 1 and not _enough(k, l):
            out.append(_too_few(claim, data, top))
        elif k and l and top > 1:
            out.append(Finding(PAPER, claim, "-", f"{bar_ks} {_cell(k)} s, Linux {_cell(l)} s",
                               _env(data, top), compare_greater(l, k),
                               "throughput = the fixed work over the elapsed time; verdict from "
                               "the two ranges. The bar names the synthesis configuration: "
                               "lock-free run queues, the file layer's monitors with their own "
                               "interlocks (docs/locks.md)."))
    # Figure 4: the second CPU's gain in the scaled macro-benchmarks
    for kernel in kernels(data):
        gs = [(b, gain(data, kernel, top, b)) for b in ("pmakeInd", "troff")]
        gs = [(b, g) for b, g in gs if g]
        if top < 2 or not gs:
            continue
        claim = (f"Figure 4 on {_release(data, kernel)}: CPU {top} adds at least one CPU's "
                 "throughput to the scaled macro-benchmarks (pmakeInd, troff)")
        if any(_runs_in(g) < MIN_RUNS for _, g in gs):
            out.append(_too_few(claim, data, top))
            continue
        verdict = "holds" if all(g.lo >= 1.0 for _, g in gs) else \
            "reversed" if all(g.hi < 1.0 for _, g in gs) else "within noise"
        out.append(Finding(PAPER, claim, "more than one CPU unit for the second processor "
                           "(background work amortized)",
                           "; ".join(f"{b} {_cell(g)}" for b, g in gs), _env(data, top),
                           verdict, "gain = (X(n) - X(n-1)) / X(1), X = copies / elapsed; its "
                           "range from the runs' extremes; holds when every range lies at or "
                           "above 1.0, reversed when every one lies below"))
    # Figures 8 and 10 on real programs: sched_Mutex the most contended master lock
    for ks in (k for k in ksyncs(data) if k in ("ksync-sprite", "ksync-sprite-fix")):
        claim = (f"Figures 8 and 10 on {ks}: sched_Mutex has the highest master-lock miss ratio "
                 "for almost all benchmarks")
        if 0 < len(_runs(data, ks, top)) < MIN_RUNS:
            out.append(_too_few(claim, data, top))
            continue
        tops = sched_mutex_top(data, ks, top)
        if not tops:
            continue
        n_top = sum(v == "top" for v in tops.values())
        n_not = sum(v == "not top" for v in tops.values())
        verdict = "holds" if 3 * n_top >= 2 * len(tops) else \
            "reversed" if 3 * n_not >= 2 * len(tops) else "within noise"
        out.append(Finding(PAPER, claim,
                           "sched_Mutex highest for almost all; ~70 % miss ratio at 5 CPUs",
                           f"highest in {n_top} of {len(tops)} benchmarks"
                           + (f" ({', '.join(b for b, v in tops.items() if v == 'top')})"
                              if n_top else "")
                           + f", another lock above it in {n_not}"
                           + (f" ({', '.join(b for b, v in tops.items() if v == 'not top')})"
                              if n_not else ""),
                           _env(data, top), verdict,
                           "per benchmark: sched_Mutex's range of miss ratios over the runs "
                           "wholly above every other master lock's (with >= 100 hits), or "
                           "another's wholly above it; holds when it is highest in at least "
                           "two thirds of the benchmarks, reversed when another is in at "
                           "least two thirds, else within noise"))
    # Figure 9 on real programs: sprite (monitor waiters queued under sched_Mutex) against
    # sprite-fix (their own interlocks), on the benchmarks whose kernel path is monitors
    if {"ksync-sprite", "ksync-sprite-fix"} <= set(ksyncs(data)):
        pairs = [(b, elapsed(data, "ksync-sprite", top, b),
                  elapsed(data, "ksync-sprite-fix", top, b)) for b in FIG9]
        pairs = [(b, a, c) for b, a, c in pairs if a and c]
        if pairs and not _enough(*(x for _, a, c in pairs for x in (a, c))):
            out.append(_too_few("Figure 9: queueing monitor waiters under sched_Mutex slows the "
                                "monitor-bound benchmarks (sprite slower than sprite-fix)",
                                data, top))
        elif pairs:
            vs = [compare_greater(a, c) for _, a, c in pairs]
            verdict = "holds" if all(v == "holds" for v in vs) else \
                "reversed" if all(v == "reversed" for v in vs) else "within noise"
            out.append(Finding(PAPER, "Figure 9: queueing monitor waiters under sched_Mutex "
                               "slows the monitor-bound benchmarks (sprite slower than "
                               "sprite-fix)", "Figure 9's caption: a master lock per monitor's wait queue would "
                               "shorten sched_Mutex's sections",
                               "; ".join(f"{b} {_cell(a)} vs {_cell(c)} s" for b, a, c in pairs),
                               _env(data, top), verdict,
                               "each benchmark's ranges of runs under the two configurations; "
                               "holds when every one is slower under sprite, reversed when every "
                               "one is faster, else within noise"))
    if top > 1:
        for kernel in kernels(data):
            if any(0 < len(_runs(data, kernel, n)) < MIN_RUNS for n in (1, top)):
                out.append(_too_few(f"Figure 2 on {_release(data, kernel)}: the scaled "
                                    "macro-benchmarks keep a lower elapsed-time ratio than "
                                    "every micro-benchmark", data, top))
                continue
            macro = [r for r in (ratio(data, kernel, top, b) for b in MACRO if b not in FIXED) if r]
            micro = [r for r in (ratio(data, kernel, top, b) for b in BENCHES if b not in MACRO) if r]
            if not macro or not micro:
                continue
            ma = Spread(min(r.mid for r in macro), statistics.median(r.mid for r in macro),
                        max(r.mid for r in macro), "benchmarks")
            mi = Spread(min(r.mid for r in micro), statistics.median(r.mid for r in micro),
                        max(r.mid for r in micro), "benchmarks")
            out.append(Finding(PAPER, f"Figure 2 on {_release(data, kernel)}: the scaled "
                               "macro-benchmarks (pmakeInd, troff) keep a lower elapsed-time "
                               "ratio than every micro-benchmark",
                               "macro near 1.0 (troff, pmakeInd below it); micro rising "
                               "steadily from 3 CPUs",
                               f"macro {fmt_ratio(ma.lo)}..{fmt_ratio(ma.hi)}, micro "
                               f"{fmt_ratio(mi.lo)}..{fmt_ratio(mi.hi)} at {top} CPUs "
                               "(medians of each benchmark's ratio)",
                               _env(data, top), compare_greater(mi, ma),
                               "holds when every micro-benchmark's median ratio lies above every "
                               "macro one's, reversed when every one lies below, else within "
                               "noise. The macro programs are the project's own stand-ins for "
                               "cc and troff: their compute/system-call mix is an input."))
    return out + _projection_findings(data)


# ---- the saturation projection from the real locks (sections 6-7) ----------------------
TITLE_PROJ = "Sprite's benchmarks as user programs: the saturation projection"
PROJ_MIN_HITS = 100       # a class with fewer hits per run is not ranked as a centre
BAR_PROJECTION_PCT = 15.0  # as spritereport's: the prediction's error at the top CPU count
PROJ_CURVE = 16           # the projection's curve stops here (CPUs)


def _timing_kernels(data: dict) -> list[str]:
    return [k for k in ksyncs(data) if _runs(data, k, 1, True)]


def _unit_figures(r: dict, bench: str) -> tuple[float, float, dict[str, dict]] | None:
    """One timing run's (seconds per unit of work, units, class -> its deltas) for bench."""
    row = (r.get("rows") or {}).get(bench) or {}
    locks = (r.get("locks") or {}).get(bench) or {}
    ops, ns, hz = row.get("ops"), row.get("elapsed_ns"), locks.get("_tsc_hz")
    if not (isinstance(ops, int) and ops > 0 and isinstance(ns, (int, float)) and ns > 0
            and isinstance(hz, int) and hz > 0):
        return None
    cls = {c: {**d, "_hold_s": (d.get("hold_ticks") or 0) / hz}    # a copy: data untouched
           for c, d in locks.items() if isinstance(d, dict)}
    return ns / 1e9 / ops, float(ops), cls


def projection(data: dict, kernel: str, bench: str) -> dict | None:
    """Sprite's projection from one kernel's timing boots: at 1 CPU each lock class's
    demand D_c (seconds held per unit of work) and the cycle R1 (elapsed per unit); the
    knee N*_c = R1 / D_c; the classes of one instance (the kernel created at most one at
    run time) are the queueing centres, a lock per object (more than one created: each
    copy has its own) counts as think time; exact MVA over the centres with R1 - sum(D)
    as think time predicts X(top) / X(1), checked against the timing boots at the top."""
    one = [f for r in _runs(data, kernel, 1, True) if (f := _unit_figures(r, bench))]
    if not one:
        return None
    names = sorted({c for _, _, cl in one for c in cl})
    per_obj = {c for c in names if any((cl.get(c) or {}).get("created") not in (None, 0, 1)
                                       for _, _, cl in one)}
    dem = {c: statistics.median([(cl[c]["_hold_s"] / units) if c in cl else 0.0
                                 for _, units, cl in one]) for c in names}
    hits = {c: statistics.median([(cl.get(c) or {}).get("hits", 0) for _, _, cl in one])
            for c in names}
    cyc = [cy for cy, _, _ in one]
    r1 = statistics.median(cyc)
    centres = [c for c in names if c not in per_obj and dem[c] > 0]
    # a single-instance class used often but never timed (a helping-lock monitor's hold is
    # not timed): its demand is unknown, so no ranking can say it is not first
    untimed = [c for c in names if c not in per_obj and dem[c] == 0
               and hits[c] >= PROJ_MIN_HITS]
    ranked = [c for c in centres if hits[c] >= PROJ_MIN_HITS]
    knees = {c: knee(r1, dem[c]) for c in centres}
    first = min(ranked or centres, key=lambda c: (knees[c], c)) if centres else None
    # each run's own first: the class with the lowest knee in that run
    firsts = []
    for cy, units, cl in one:
        ks = {c: cy / (cl[c]["_hold_s"] / units) for c in (ranked or centres)
              if c in cl and cl[c]["_hold_s"] > 0}
        firsts.append(min(ks, key=lambda c: (ks[c], c)) if ks else None)
    kspread = None
    if first:
        kv = [cy / (cl[first]["_hold_s"] / units) for cy, units, cl in one
              if first in cl and cl[first]["_hold_s"] > 0]
        kspread = Spread(min(kv), statistics.median(kv), max(kv), f"{len(kv)} runs") if kv \
            else None
    think = max(0.0, r1 - sum(dem[c] for c in centres))
    curve = mva([dem[c] for c in centres], think, PROJ_CURVE) if centres else \
        [n / r1 for n in range(1, PROJ_CURVE + 1)]
    top = max(smps(data))
    meas = None
    tops = [f for r in _runs(data, kernel, top, True) if (f := _unit_figures(r, bench))]
    if top > 1 and tops:
        x1 = [1 / cy for cy in cyc]
        xt = [1 / cy for cy, _, _ in tops]
        meas = Spread(min(xt) / max(x1), statistics.median(xt) / statistics.median(x1),
                      max(xt) / min(x1), f"{len(tops)}+{len(x1)} runs")
    pred = curve[top - 1] / curve[0] if top <= len(curve) else None
    err = abs(pred - meas.mid) / meas.mid if pred is not None and meas and meas.mid else None
    return {"kernel": kernel, "bench": bench, "r1_us": r1 * 1e6, "first": first,
            "firsts": firsts, "knee": kspread, "share": dem[first] / r1 if first else 0.0,
            "per_object": sorted(per_obj), "obj_share": sum(dem[c] for c in per_obj) / r1,
            "curve": [x / curve[0] for x in curve], "top": top, "pred": pred, "meas": meas,
            "err": err, "runs": len(one), "untimed": untimed}


def projections(data: dict) -> list[dict]:
    return [p for k in _timing_kernels(data) for b in BENCHES
            if (p := projection(data, k, b)) is not None]


def _projection_table(data: dict) -> Table | None:
    prs = projections(data)
    if not prs:
        return None
    top = prs[0]["top"]
    f = lambda x: fmt_sig(x) if x is not None else "—"
    cols = [ColumnSpec("kernel", lambda p: p["kernel"], "l"),
            ColumnSpec("benchmark", lambda p: p["bench"], "l"),
            ColumnSpec("1 CPU: us per unit", lambda p: f(p["r1_us"])),
            ColumnSpec("saturates first", lambda p: (p["first"] or "—") + (
                f" (untimed: {', '.join(p['untimed'])})" if p["untimed"] else ""), "l"),
            ColumnSpec("its % of the cycle", lambda p: f"{100 * p['share']:.1f}"),
            ColumnSpec("knee N*", lambda p: _cell(p["knee"])),
            ColumnSpec("per-object locks, % of the cycle", lambda p: f"{100 * p['obj_share']:.1f}"),
            ColumnSpec(f"X({top})/X(1) projected", lambda p: f(p["pred"])),
            ColumnSpec(f"X({top})/X(1) measured", lambda p: _cell(p["meas"])),
            ColumnSpec("error", lambda p: f"{100 * p['err']:.0f} % "
                       + ("met" if 100 * p["err"] <= BAR_PROJECTION_PCT else "not met")
                       if p["err"] is not None else "—")]
    return build_table(
        f"{TITLE_PROJ} [{_env(data)}, ksync, lockstat=timing]", prs, cols,
        notes_above=[
            "Hartman & Ousterhout sections 6-7 from ksync's real kernel locks: boots of their "
            "own with lockstat=timing (its clock reads lengthen the sections it times, so "
            "these boots feed no other table). From the 1-CPU boots: each class's demand "
            "D = seconds held per unit of the benchmark's work, the cycle R1 = elapsed per "
            "unit, the knee N* = R1 / D (the CPU count at which that lock would be busy all "
            "the time; its range over the runs). A class the kernel created more than one "
            "instance of (a lock per process, file table or pipe) is not a single queue: "
            "its hold time counts as think time. Exact mean-value analysis over the other "
            "classes predicts the throughput at the top CPU count, checked against the "
            f"timing boots there (bar: within {BAR_PROJECTION_PCT:g} %). 'untimed': a "
            "single-instance class with hits but no hold time (a helping-lock monitor's "
            "hold is not timed): its demand is unknown, so the first lock is not known "
            "either.",
            "Under tcg the hold times and cycles are what the emulator makes the code cost: "
            "the knee is the emulated machine's, not a hardware figure."])


def _projection_findings(data: dict) -> list[Finding]:
    """Section 6's finding on the real locks: sched_Mutex is the lock the macro-benchmarks
    saturate first (each 1-CPU timing run's lowest knee)."""
    out = []
    for k in _timing_kernels(data):
        prs = [p for b in MACRO if (p := projection(data, k, b))]
        firsts = [(p["bench"], f) for p in prs for f in p["firsts"]]
        if not firsts:
            continue
        n_sm = sum(1 for _, f in firsts if f == "sched_Mutex")
        if min(p["runs"] for p in prs) < MIN_RUNS:
            out.append(_too_few(f"sched_Mutex is the lock the macro-benchmarks saturate first "
                                f"({k}, real programs)", data, 1))
            continue
        untimed = sorted({c for p in prs for c in p["untimed"]})
        if untimed:
            out.append(Finding(
                PAPER, f"sched_Mutex is the lock the macro-benchmarks saturate first ({k}, "
                "real programs)", "section 6: sched_Mutex, about seven processors",
                f"{', '.join(untimed)} used but not timed (hold ticks 0)",
                _env(data, 1) + ", lockstat=timing", "not measurable here",
                "a class used at least "
                f"{PROJ_MIN_HITS} times per run without a hold time (this configuration's "
                "helping-lock monitors do not time their holds) could be the first: no "
                "ranking without its demand"))
            continue
        verdict = "holds" if n_sm == len(firsts) else "reversed" if n_sm == 0 else \
            "within noise"
        out.append(Finding(
            PAPER, f"sched_Mutex is the lock the macro-benchmarks saturate first ({k}, real "
            "programs)", "section 6: 'a single master lock was the biggest kernel "
            "bottleneck' (sched_Mutex); saturation projected at about seven processors",
            "; ".join(f"{p['bench']}: {p['first'] or '—'}, knee {_cell(p['knee'])} CPUs "
                      f"({100 * p['share']:.1f} % of the cycle)" for p in prs)
            + f"; sched_Mutex first in {n_sm} of {len(firsts)} runs",
            _env(data, 1) + ", lockstat=timing", verdict,
            "each 1-CPU timing run's first lock is the single-instance class with the lowest "
            "knee (R1 / its demand) among those with at least "
            f"{PROJ_MIN_HITS} hits; holds when sched_Mutex is first in every run of pmake, "
            "pmakeInd and troff, reversed when in none. Under tcg the demands are the "
            "emulator's costs of the sections' code: which lock comes first is a ratio of "
            "such costs, the knee's value is the emulated machine's."))
    return out


def user_projection_figure(data: dict | None, out_dir: Path) -> Figure | None:
    """The projection's curves: X(n) / X(1) by MVA for each benchmark of each timing
    kernel, the measured top point with its range, the ideal dashed."""
    prs = projections(data) if data else []
    if not prs:
        return None
    plt = plots.plt
    ks = list(dict.fromkeys(p["kernel"] for p in prs))
    fig, axes = plt.subplots(1, len(ks), figsize=(5.5 * len(ks), 4.2), squeeze=False)
    for ax, k in zip(axes[0], ks):
        ns = list(range(1, PROJ_CURVE + 1))
        for i, p in enumerate(q for q in prs if q["kernel"] == k):
            line, = ax.plot(ns, p["curve"], lw=1, label=p["bench"])
            m = p["meas"]
            if m:
                ax.errorbar([p["top"]], [m.mid], yerr=[[m.mid - m.lo], [m.hi - m.mid]],
                            marker="o", color=line.get_color(), capsize=3)
        ax.plot(ns, ns, "k--", lw=0.8, label="ideal")
        ax.set_xlabel("CPUs")
        ax.set_ylabel("throughput X(n) / X(1)")
        ax.set_title(k)
        ax.legend(fontsize=6, ncol=2)
    plots.suptitle(fig, "Saturation projection from the real locks (MVA; points: measured)",
                   f"{_env(data)}, lockstat=timing")
    fig.tight_layout()
    return plots.save_figure(fig, out_dir, "spriteuser_projection",
                             "Hartman & Ousterhout's saturation projection from ksync's real "
                             "kernel locks: each benchmark's throughput ratio by mean-value "
                             "analysis over its single-instance locks' demands at 1 CPU, the "
                             f"measured top point with its range [{_env(data)}; emulator costs]")


def user_figures(data: dict | None, out_dir: Path) -> dict[str, list[Figure]]:
    """Figure 2 redrawn: each benchmark's elapsed-time ratio against the CPU count, one
    line per kernel, the ideal dashed."""
    if not data or len(smps(data)) < 2:
        return {}
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ns = smps(data)
    fig, axes = plt.subplots(4, 3, figsize=(10, 11), sharex=True)
    for ax in axes.flat[len(ROWS):]:
        ax.set_visible(False)
    for ax, b in zip(axes.flat, ROWS):
        for kernel in kernels(data):
            pts = [(n, ratio(data, kernel, n, b)) for n in ns]
            pts = [(n, r) for n, r in pts if r]
            if not pts:
                continue
            xs = [n for n, _ in pts]
            ax.errorbar(xs, [r.mid for _, r in pts],
                        yerr=[[r.mid - r.lo for _, r in pts], [r.hi - r.mid for _, r in pts]],
                        marker="o", capsize=3, label=_release(data, kernel))
        ax.plot(ns, [1 / n if b in FIXED else 1.0 for n in ns], "k--", lw=0.8, label="ideal")
        ax.set_title(b)
        ax.set_xticks(ns)
    for ax in axes.flat[len(ROWS) - 3:len(ROWS)]:
        ax.set_xlabel("CPUs")
        ax.xaxis.set_tick_params(labelbottom=True)
    for ax in axes[:, 0]:
        ax.set_ylabel("elapsed n / elapsed 1")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(f"Figure 2 redrawn: elapsed-time ratio, real programs [{_env(data)}]")
    fig.tight_layout()
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / "spriteuser_fig2.png", out_dir / "spriteuser_fig2.svg"
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    plt.close(fig)
    figs = [Figure(png.name, "Hartman & Ousterhout's Figure 2 from real programs: ksync beside "
                   "Linux, each point the median ratio with its range "
                   f"[{_env(data)}; emulator costs]", svg.name)]
    for f in (_fig_gain(data, out_dir), _fig_miss(data, out_dir)):
        if f:
            figs.append(f)
    out = {TITLE_TIME: figs}
    proj = user_projection_figure(data, out_dir)
    if proj:
        out[TITLE_PROJ] = [proj]
    return out


def _fig_gain(data: dict, out_dir: Path) -> Figure | None:
    """Figures 4 and 5: the throughput each added CPU brings, per benchmark and kernel."""
    import matplotlib.pyplot as plt
    ns = [n for n in smps(data) if n > 1]
    ks = kernels(data)
    rows = [(b, k, n, gain(data, k, n, b)) for b in ROWS for k in ks for n in ns]
    rows = [r for r in rows if r[3]]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(11, 4.2))
    width = 0.8 / max(1, len(ks) * len(ns))
    for j, (k, n) in enumerate((k, n) for k in ks for n in ns):
        pts = [(i, g) for i, b in enumerate(ROWS) for (bb, kk, nn, g) in rows
               if bb == b and kk == k and nn == n]
        if not pts:
            continue
        xs = [i + (j - (len(ks) * len(ns) - 1) / 2) * width for i, _ in pts]
        ax.bar(xs, [g.mid for _, g in pts], width,
               yerr=[[g.mid - g.lo for _, g in pts], [g.hi - g.mid for _, g in pts]],
               capsize=2, label=f"{_release(data, k)}, CPU {n}")
    ax.axhline(1.0, color="k", ls="--", lw=0.8)
    ax.set_xticks(range(len(ROWS)))
    ax.set_xticklabels(ROWS, rotation=20)
    ax.set_ylabel("throughput added / one CPU's")
    ax.legend(fontsize=7, ncol=2)
    ax.set_title(f"Figures 4 and 5 redrawn: incremental throughput per CPU, real programs "
                 f"[{_env(data)}]")
    fig.tight_layout()
    png, svg = out_dir / "spriteuser_fig4.png", out_dir / "spriteuser_fig4.svg"
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    plt.close(fig)
    return Figure(png.name, "Hartman & Ousterhout's Figures 4 and 5 from real programs: the "
                  "throughput each added CPU brings, in units of one CPU's (ideal 1.0), "
                  f"medians with the runs' extremes [{_env(data)}; emulator costs]", svg.name)


def _fig_miss(data: dict, out_dir: Path) -> Figure | None:
    """Figures 6-8 and 10: each ksync configuration's highest monitor and master miss
    ratio against the CPU count, per benchmark."""
    import matplotlib.pyplot as plt
    ns = smps(data)
    ks = ksyncs(data)
    if not ks or not any(top_ratio(data, k, n, b, "master") for k in ks for n in ns
                         for b in BENCHES):
        return None
    fig, axes = plt.subplots(2, len(ks), figsize=(4.2 * len(ks), 7), squeeze=False,
                             sharey="row")
    for col, k in enumerate(ks):
        for row, kind in enumerate(("monitor", "master")):
            ax = axes[row][col]
            for b in BENCHES:
                pts = [(n, top_ratio(data, k, n, b, kind)) for n in ns]
                pts = [(n, t) for n, t in pts if t]
                if not pts:
                    continue
                ax.errorbar([n for n, _ in pts], [100 * t[1].mid for _, t in pts],
                            yerr=[[100 * (t[1].mid - t[1].lo) for _, t in pts],
                                  [100 * (t[1].hi - t[1].mid) for _, t in pts]],
                            marker="o", capsize=2,
                            label=f"{b} ({pts[-1][1][0]})")
            ax.set_title(f"{k}: highest {kind} miss ratio", fontsize=9)
            ax.set_xticks(ns)
            ax.set_xlabel("CPUs")
            ax.set_ylabel("% of hits")
            ax.legend(fontsize=6)
    fig.suptitle(f"Figures 6-8 and 10 redrawn: miss ratios of ksync's real locks [{_env(data)}]")
    fig.tight_layout()
    png, svg = out_dir / "spriteuser_fig6.png", out_dir / "spriteuser_fig6.svg"
    fig.savefig(png, dpi=110)
    fig.savefig(svg)
    plt.close(fig)
    return Figure(png.name, "Hartman & Ousterhout's Figures 6-8 and 10 from real programs: per "
                  "lock configuration, each benchmark's highest monitor (top) and master "
                  "(bottom) miss ratio against the CPUs, the class at the top CPU count in the "
                  f"legend; medians with the runs' extremes [{_env(data)}; emulator costs]",
                  svg.name)
