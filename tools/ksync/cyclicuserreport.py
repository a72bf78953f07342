"""Hohmuth & Härtig's Table 1 with a user-mode handler: the table and
findings of cyclicuser.json (``cyclicuser.collect``): Debian's cyclictest under the same load
on ksync (each lock configuration) and on Debian's Linux guests, the same QEMU options.

A cell is the median over the ok runs with their range; a percentile past the histogram
without a value (the run's ``p999_overflow``) is censored: the cell says so and no verdict
is drawn from it. "late" counts the samples at least one period late. Under TCG the
latencies are what the emulator makes both kernels' code cost, and ksync's include up to
one tick of its periodic clock (``hz``, an input): compare with care.

Public API: ``CYCLICUSER_JSON``, ``load_cyclicuser``, ``cyc_tables``, ``cyc_findings``.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from .base import ColumnSpec, Finding, Spread, Table, build_table, compare_greater, fmt_sig
from .util import load_runs_file

CYCLICUSER_JSON = "cyclicuser.json"
SCHEMA = "ksync-cyclicuser-1"
PAPER = "Hohmuth & Härtig 2001"
TITLE = "Table 1 with a user-mode handler: cyclictest under load"
ORDER = ("ksync", "ksync-sprite", "ksync-sprite-fix", "ksync-synthesis", "ksync-fiasco", "linux-std",
         "linux-rt")
BAR_KERNEL = "ksync-fiasco"	# the bar names the fiasco configuration
FIGS = (("p50", "p50_us", "p50_overflow"), ("p99", "p99_us", "p99_overflow"),
        ("p99.9", "p999_us", "p999_overflow"), ("max", "max_us", None))
MIN_RUNS = 2


def load_cyclicuser(path: Path) -> dict:
    return load_runs_file(path, SCHEMA, "a cyclicuser")


def kernels(data: dict) -> list[str]:
    ks = {r.get("flavour") for r in data.get("runs", []) if isinstance(r, dict)}
    return [k for k in ORDER if k in ks] + sorted(k for k in ks if isinstance(k, str)
                                                  and k not in ORDER)


def _ok(data: dict, kernel: str) -> list[dict]:
    return [r for r in data.get("runs", []) if isinstance(r, dict) and r.get("ok")
            and r.get("flavour") == kernel]


def figure(data: dict, kernel: str, key: str, over: str | None) -> tuple[Spread | None, bool]:
    """(the figure's spread over the ok runs, whether any run's value is censored)."""
    runs = _ok(data, kernel)
    xs = [float(r[key]) for r in runs if isinstance(r.get(key), (int, float))]
    censored = bool(over) and any(r.get(over) for r in runs)
    if not xs:
        return None, censored
    return Spread(min(xs), statistics.median(xs), max(xs), f"{len(xs)} runs"), censored


def _env(data: dict) -> str:
    o = data.get("options") or {}
    n = o.get("smp")
    return f"{o.get('accel') or 'tcg'}, {n} CPU{'s' if n != 1 else ''}" if n else \
        (o.get("accel") or "tcg")


def _label(data: dict, kernel: str) -> str:
    for r in _ok(data, kernel):
        if kernel.startswith("ksync"):
            return f"{kernel} (hz={r.get('hz')})"
        words = str(r.get("kernel") or "").split()
        return f"{kernel} {words[2]}" if len(words) > 2 else kernel
    return kernel


def _icount(data: dict) -> str:
    specs = sorted({str(r.get("icount")) for r in data.get("runs", []) if r.get("icount")})
    return ", ".join(specs) or "?"


def _cell(s: Spread | None, censored: bool) -> str:
    if censored:
        return "censored (past the histogram)"
    return f"{fmt_sig(s.mid)} ({fmt_sig(s.lo)}..{fmt_sig(s.hi)})" if s else "—"


def _key(data: dict, r: dict) -> tuple:
    o = data.get("options") or {}
    return (r.get("env") or o.get("accel") or "tcg", r.get("smp") or o.get("smp"))


def groups(data: dict) -> list[dict]:
    """The record split by QEMU configuration (a run's env - tcg, tcg-icount - and CPU
    count; cyclicuser.merge joins such records), in the order the runs appear: each part is
    the record with only its runs and its configuration in the options. One part: the
    record itself."""
    keys: list[tuple] = []
    for r in data.get("runs", []):
        if isinstance(r, dict) and _key(data, r) not in keys:
            keys.append(_key(data, r))
    if len(keys) <= 1:
        return [data]
    o = data.get("options") or {}
    return [dict(data, options=dict(o, accel=env, smp=smp),
                 runs=[r for r in data["runs"] if isinstance(r, dict) and _key(data, r) == (env, smp)])
            for env, smp in keys]


def cyc_tables(data: dict | None) -> list[Table]:
    if not data:
        return []
    parts = groups(data)
    return [t for g in parts for t in _tables_one(g)]


def _tables_one(data: dict) -> list[Table]:
    o = data.get("options") or {}
    cols = [ColumnSpec("kernel", lambda k: _label(data, k), "l"),
            ColumnSpec("ok runs", lambda k: str(len(_ok(data, k))))]
    for name, key, over in FIGS:
        cols.append(ColumnSpec(f"{name} us", lambda k, key=key, over=over:
                               _cell(*figure(data, k, key, over))))
    cols.append(ColumnSpec("late >= 1 period", lambda k: _cell(figure(data, k, "late_periods",
                                                                      None)[0], False)))
    cols.append(ColumnSpec("samples", lambda k: _cell(figure(data, k, "samples", None)[0],
                                                      False)))
    failed = [f"{r.get('flavour')} round {r.get('round', 0) + 1}: {r.get('reason')}"
              for r in data.get("runs", []) if not r.get("ok")]
    return [build_table(
        f"{TITLE} [{_env(data)}]", kernels(data), cols,
        notes_above=[f"Debian's cyclictest -m -S -p 95 -i {o.get('interval_us')} -D "
                     f"{o.get('seconds')} (the same binary) on every kernel, the same load "
                     "(hackbench and dd loops at nice 19) and QEMU options, rounds interleaved; "
                     "a cell: the median over the ok runs (their range), latencies in us."
                     + (f" ksync's timed sleep wakes at its clock tick (hz={o['hz']}: up to "
                        f"{1e6 / o['hz']:.0f} us of each latency is the tick's)."
                        if o.get("hz") else ""),
                     *([f"tcg-icount: QEMU -icount {_icount(data)} (the guest clock counts "
                        "instructions, so host load and the host's scheduling of QEMU do not "
                        "reach these figures), one CPU on both kernels. ksync's rounds replay "
                        "one run (nothing in its boot varies), so its ranges show no "
                        "run-to-run spread; any change of its code moves every event's phase "
                        "and can move its tail figures by tens of us."]
                       if str(o.get("accel")).endswith("-icount") else []),
                     "Hohmuth & Härtig's Table 1 measured a kernel-mode handler; this is its "
                     "user-mode counterpart (the kernel-thread handler's rows are in the "
                     "lateness table)."],
        notes_below=(["Failed runs: " + "; ".join(failed)] if failed else [])
        + ["cyclictest's -S pins one thread per CPU; ksync accepts the affinity and does not "
           "apply it to a live thread, so on ksync the threads may share a CPU."])]


def cyc_findings(data: dict | None) -> list[Finding]:
    if not data:
        return []
    return [f for g in groups(data) for f in _findings_one(g)]


def _findings_one(data: dict) -> list[Finding]:
    out: list[Finding] = []
    rt = "linux-rt" if _ok(data, "linux-rt") else None
    env = _env(data)
    for ks in (k for k in kernels(data) if k.startswith("ksync")):
        if not rt or not _ok(data, ks):
            continue
        claim = ("Bar for real programs: " if ks == BAR_KERNEL else "") + \
            (f"cyclictest under load: {_label(data, ks)}'s p99.9 and maximum below "
             f"{_label(data, rt)}'s")
        pk, ck = figure(data, ks, "p999_us", "p999_overflow")
        pl, cl = figure(data, rt, "p999_us", "p999_overflow")
        mk, _ = figure(data, ks, "max_us", None)
        ml, _ = figure(data, rt, "max_us", None)
        if ck or cl:
            out.append(Finding(PAPER, claim, "-", "a p99.9 past the histogram (censored)", env,
                               "not measurable here", "a censored percentile gives no verdict"))
            continue
        if not (pk and pl and mk and ml) or min(len(_ok(data, ks)), len(_ok(data, rt))) < MIN_RUNS:
            out.append(Finding(PAPER, claim, "-", f"fewer than {MIN_RUNS} runs a side", env,
                               "not measurable here", f"a verdict needs {MIN_RUNS} runs a side"))
            continue
        vs = [compare_greater(pl, pk), compare_greater(ml, mk)]
        verdict = "holds" if vs == ["holds", "holds"] else \
            "reversed" if vs == ["reversed", "reversed"] else "within noise"
        out.append(Finding(PAPER, claim, "Table 1: the helping-lock kernel's handler lateness "
                           "bounded (a kernel-mode handler)",
                           f"p99.9 {_cell(pk, False)} vs {_cell(pl, False)} us; max "
                           f"{_cell(mk, False)} vs {_cell(ml, False)} us", env, verdict,
                           "holds when both of ksync's ranges lie below Linux's, reversed when "
                           "both lie above, else within noise. ksync's latencies include its "
                           "clock tick (an input)."))
    if rt and not _ok(data, BAR_KERNEL):
        why = ("every ksync-fiasco run failed (the table names why)"
               if any(r["flavour"] == BAR_KERNEL for r in data["runs"])
               else "the fiasco configuration did not run (--locks)")
        out.append(Finding(PAPER, "Bar for real programs: the fiasco configuration's p99.9 and maximum "
                           "below Linux PREEMPT_RT's", "-", why, env, "not measurable here",
                           "the other configurations' rows are above"))
    return out
