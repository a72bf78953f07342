"""Issue 10's report: Massalin & Pu 1991's thread-operation table regenerated under both
schedulers, switch and wakeup against Linux (hosted), dispatches per second at 1..N CPUs,
and the findings computed from them.

Data (KSYNC lines of kernel/exp/sched_exp.c and bench/sched_peers.c):

* ``{"kind":"sched_op","sched":"lockfree"|"locked","op":...,"min","median","p99","n",...}``
  and ``{"kind":"sched_dispatch","sched":..,"cpus":k,"per_sec",..}``: in the hosted kernel
  runs of hosted.json (``runs[].rows``) and, for tcg, in prims.json under ``"sched"``
  (``{"status","reason","side","rows"}``: one QEMU boot, filter=sched_ops);
* ``{"kind":"sched_peer","name":...}``: Linux's own futex / pipe / sched_yield rows, in
  hosted.json under ``"sched_peers"`` (``{"status","reason","log","facts","rows"}``).

An oversubscribed hosted run (more vCPUs than host cores) is shown as "not a timing" and never
enters a finding or a bar.

Public API: ``OPS``, ``sources``, ``sched_tables``, ``sched_findings``, ``dispatch_figure``,
``BAR_SWITCH_NS``, ``BAR_WAKEUP_NS``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import schemes
from .base import (DASH, Figure, Finding, Spread, Table, compare_greater, fmt_ratio, fmt_sig,
                   fmt_ticks, num, spread_of)
from .hosteddata import is_oversubscribed, run_label
from . import plots

MP = "Massalin & Pu 1991"
SCHEDS = ("lockfree", "locked")
OPS = (
    ("create_join", "create + destroy (thread_create .. thread_join)"),
    ("create", "create alone"),
    ("suspend", "suspend (a sleeping thread)"),
    ("resume", "resume (that stopped thread)"),
    ("signal", "signal (until the handler ran in the target)"),
    ("yield", "yield: context switch, integer-only (per switch)"),
    ("yield_fp", "yield: context switch with FP/SIMD state (per switch)"),
    ("wakeup_cross", "cross-CPU wakeup (sched_wakeup -> wakee runs), wakee's CPU polling"),
    ("wakeup_cross_asleep", "cross-CPU wakeup, wakee's CPU asleep (IPI / signal)"),
)
PEERS = (
    ("sched_yield_same", "Linux sched_yield, two threads on one core (per switch)", "switch"),
    ("pipe_same", "Linux pipe ping-pong, one core (per one-way transfer)", "switch"),
    ("pipe_cross", "Linux pipe ping-pong, two cores (per one-way transfer)", "wakeup"),
    ("futex_wake_cross", "Linux FUTEX_WAKE -> wakee runs, two cores", "wakeup"),
)
BAR_SWITCH_NS = 100.0   # same-vCPU switch, median
BAR_WAKEUP_NS = 300.0   # cross-vCPU wakeup, median
LOST = ("Massalin & Pu's own figures for these operations were lost in the text conversion "
        "of the paper this project works from: the table regenerates the operations, not "
        "their 1991 numbers.")
TCG_NOTE = "tcg: QEMU software emulation; its figures are the emulator's costs, not hardware costs."
NOT_TIMING = "not a timing"


@dataclass
class Source:
    env: str                    # "hosted" / "tcg" / ...
    label: str                  # the environment words shown in headers and findings
    tsc_hz: float | None
    cpus: int | None
    timing: bool                # False: oversubscribed hosted run (correctness only)
    ops: dict[tuple[str, str], dict] = field(default_factory=dict)
    dispatch: dict[tuple[str, int], dict] = field(default_factory=dict)
    skipped: dict[tuple[str, str], str] = field(default_factory=dict)
    causes: dict[tuple[str, str], dict] = field(default_factory=dict)


def _fill(src: Source, rows) -> Source:
    for r in rows or []:
        if not isinstance(r, dict):
            continue
        if r.get("kind") == "sched_op":
            key = (str(r.get("sched")), str(r.get("op")))
            if r.get("skipped"):
                src.skipped[key] = str(r["skipped"])
            elif num(r.get("median")) is not None:
                src.ops.setdefault(key, r)
        elif r.get("kind") == "sched_dispatch" and num(r.get("per_sec")) is not None:
            src.dispatch.setdefault((str(r.get("sched")), int(num(r.get("cpus")) or 0)), r)
        elif r.get("kind") == "sched_wake_causes":
            src.causes.setdefault((str(r.get("sched")), str(r.get("op"))), r)
    return src


def _hosted_source(hosted: dict | None) -> Source | None:
    """The hosted kernel run whose sched rows the tables show: timing runs first, then the
    default scheme, then the most CPUs (the cross-vCPU wakeup needs two)."""
    runs = [r for r in (hosted or {}).get("runs") or [] if isinstance(r, dict)
            and r.get("status") == "ok"
            and any(x.get("kind") == "sched_op" for x in r.get("rows") or [])]
    if not runs:
        return None
    runs.sort(key=lambda r: (is_oversubscribed(r), r.get("scheme") != schemes.DEFAULT_SCHEME,
                             -(num(r.get("cpus")) or 0)))
    rec = runs[0]
    hz = num(rec.get("tsc_hz")) or num((rec.get("boot") or {}).get("tsc_hz"))
    label = run_label(rec) + f", scheme {rec.get('scheme')}"
    return _fill(Source("hosted", label, hz, int(num(rec.get("cpus")) or 0),
                        not is_oversubscribed(rec)), rec.get("rows"))


def _kernel_source(prims: dict | None) -> Source | None:
    sched = (prims or {}).get("sched") if isinstance(prims, dict) else None
    if not isinstance(sched, dict) or sched.get("status") != "ok":
        return None
    side = sched.get("side") or {}
    env = str(side.get("env") or "?")
    cpus = int(num(side.get("cpus")) or 0)
    label = f"{env}, {cpus or '?'} CPUs, host CPU {side.get('cpu_model') or '?'}"
    return _fill(Source(env, label, num(side.get("tsc_hz")), cpus, True), sched.get("rows"))


def sources(prims: dict | None, hosted: dict | None) -> list[Source]:
    return [s for s in (_hosted_source(hosted), _kernel_source(prims)) if s is not None]


def _peers(hosted: dict | None) -> tuple[dict[str, dict], dict, dict[str, str]]:
    p = (hosted or {}).get("sched_peers") if isinstance(hosted, dict) else None
    if not isinstance(p, dict) or p.get("status") != "ok":
        return {}, {}, {}
    rows, skipped = {}, {}
    for r in p.get("rows") or []:
        if isinstance(r, dict) and r.get("kind") == "sched_peer":
            if r.get("skipped"):
                skipped[str(r.get("name"))] = str(r["skipped"])
            elif num(r.get("median")) is not None:
                rows[str(r.get("name"))] = r
    return rows, dict(p.get("facts") or {}), skipped


def _ns(ticks, hz) -> float | None:
    t, h = num(ticks), num(hz)
    return t / h * 1e9 if t is not None and h else None


def _cell(row: dict | None, hz, timing: bool = True) -> str:
    if row is None:
        return DASH
    if not timing:
        return NOT_TIMING
    med = num(row.get("median"))
    ns = _ns(med, hz)
    return (f"{fmt_ticks(med)} ({fmt_ticks(row.get('p99'))})"
            + (f" = {fmt_sig(ns)} ns" if ns is not None else ""))


# ---------------------------------------------------------------------------------------
# tables


def ops_table(srcs: list[Source]) -> Table | None:
    if not srcs or not any(s.ops for s in srcs):
        return None
    headers = ["operation"] + [f"{sch} [{s.env}, {s.cpus or '?'} CPUs]"
                               for s in srcs for sch in SCHEDS]
    rows = []
    for op, label in OPS:
        row = [label]
        for s in srcs:
            for sch in SCHEDS:
                if (sch, op) in s.skipped:
                    row.append(f"skipped: {s.skipped[(sch, op)]}")
                else:
                    row.append(_cell(s.ops.get((sch, op)), s.tsc_hz, s.timing))
        rows.append(row)
    notes = [LOST, "Each cell: median (p99) TSC ticks per operation, the empty interval "
             "subtracted, and the median in ns at the environment's TSC rate "
             "(kernel/exp/sched_exp.c, experiment sched_ops). Environments:"]
    notes += [f"{s.env}: {s.label}" + ("" if s.timing else " (correctness only: no figures "
                                        "shown)") for s in srcs]
    if any(s.env == "tcg" for s in srcs):
        notes.append(TCG_NOTE)
    return Table(title="Massalin & Pu 1991 thread operations, regenerated",
                 headers=headers, rows=rows, align=["l"] + ["r"] * (len(headers) - 1),
                 notes_above=notes)


def _bar(what: str, bar_ns: float, rows: list[tuple[str, dict | None]], hz,
         timing: bool, causes: list[dict | None] | None = None,
         lines: list[dict | None] | None = None) -> str:
    """The bar line: each row's median against the bar, met or not met. A row with its
    sched_wake_causes (and line_cross) row also shows its spread (min..p99), how many of
    its samples were slower than the bar with their causes, and its path in one-way
    cache-line transfers of that boot (why a run that misses the bar misses it)."""
    if not timing:
        return f"{what} <= {bar_ns:g} ns median: not measurable here (oversubscribed run)."
    parts = []
    for i, (name, r) in enumerate(rows):
        ns = _ns((r or {}).get("median"), hz)
        if ns is None:
            parts.append(f"{name}: {DASH} (not measured)")
            continue
        c = (causes or [None] * len(rows))[i]
        ln = (lines or [None] * len(rows))[i]
        verdict = "met" if ns <= bar_ns else "not met"
        if not c:
            parts.append(f"{name} {fmt_sig(ns)} ns ({fmt_ticks(r.get('median'))} ticks): "
                         + verdict)
            continue
        parts.append(f"{name} {fmt_sig(ns)} ns ({fmt_ticks(r.get('median'))} ticks; min..p99 "
                     f"{fmt_sig(_ns(r.get('min'), hz))}..{fmt_sig(_ns(r.get('p99'), hz))} ns): "
                     f"{verdict}; " + _causes_text(c, ln, hz))
    return f"Bar: {what} <= {bar_ns:g} ns median - " + "; ".join(parts) + "."


CAUSE_WORDS = (
    ("path", "the path itself"),
    ("slept", "its vCPU had stopped polling (signal path)"),
    ("ipi", "an IPI raced the poll"),
    ("wakee_stalled", "the wakee's vCPU stalled (host descheduling)"),
    ("waker_stalled", "the waker's vCPU stalled (host descheduling)"),
    ("not_idle", "the wakee's CPU was not idle"),
)


def _causes_text(c: dict, line: dict | None, hz) -> str:
    """'k of n (p %) slower than 300 ns: the path itself 20 %, ...; the path: waker a ns,
    find b ns, run c ns = m one-way line transfers of x ns (line_cross)'."""
    n, slow = num(c.get("n")) or 0, num(c.get("slow")) or 0
    pct = (lambda k: f"{100.0 * k / n:.0f} %") if n else (lambda k: DASH)
    got = c.get("causes") or {}
    why = ", ".join(f"{words} {pct(num(got.get(k)) or 0)}" for k, words in CAUSE_WORDS
                    if num(got.get(k)))
    out = (f"{fmt_sig(slow)} of {fmt_sig(n)} wakeups ({pct(slow)}) slower than "
           f"{fmt_sig(num(c.get('slow_ns')))} ns" + (f": {why}" if why else ""))
    w, f, r = (_ns(c.get(k), hz) for k in ("waker", "find", "run"))
    if None not in (w, f, r):
        out += (f"; median parts: the waker's call {fmt_sig(w)} ns, until the wakee's CPU "
                f"had the thread {fmt_sig(f)} ns, its switch-in {fmt_sig(r)} ns")
    if num(c.get("handed")) is not None and n:
        out += f"; {pct(num(c.get('handed')))} handed to the polling CPU"
    lt = num((line or {}).get("median")) or num(c.get("line_cross"))
    med = f + r if None not in (f, r) else None
    if lt and hz and med is not None:
        lns = _ns(lt, hz)
        out += (f"; one-way cache-line transfer between the two vCPUs {fmt_sig(lns)} ns "
                f"(line_cross, this boot): the wakeup ~{fmt_ratio(med / lns)} transfers")
    return out


def linux_table(hosted_src: Source | None, hosted: dict | None) -> Table | None:
    peers, facts, pskip = _peers(hosted)
    if hosted_src is None and not peers:
        return None
    hz = hosted_src.tsc_hz if hosted_src else None
    phz = num(facts.get("tsc_hz")) or hz
    rows = []
    timing = hosted_src.timing if hosted_src else True

    def add(what, r, rhz, ok=True):
        if r is None:
            rows.append([what, DASH, DASH, DASH, DASH])
        elif not ok:
            rows.append([what] + [NOT_TIMING] * 4)
        else:
            med, p99 = num(r.get("median")), num(r.get("p99"))
            rows.append([what, fmt_ticks(med), fmt_sig(_ns(med, rhz)), fmt_ticks(p99),
                         fmt_sig(_ns(p99, rhz))])

    if hosted_src:
        for sch in SCHEDS:
            add(f"ksync {sch}: same-vCPU yield (per switch)", hosted_src.ops.get((sch, "yield")),
                hz, timing)
        for op, path in (("wakeup_cross", "mailbox path: wakee's vCPU polling"),
                         ("wakeup_cross_asleep", "signal path: wakee's vCPU asleep")):
            for sch in SCHEDS:
                key = (sch, op)
                if key in hosted_src.skipped:
                    rows.append([f"ksync {sch}: cross-vCPU wakeup ({path})",
                                 f"skipped: {hosted_src.skipped[key]}", "", "", ""])
                elif op == "wakeup_cross" or key in hosted_src.ops:
                    add(f"ksync {sch}: cross-vCPU wakeup -> wakee runs ({path})",
                        hosted_src.ops.get(key), hz, timing)
    for name, what, _ in PEERS:
        if name in pskip:
            rows.append([what, f"skipped: {pskip[name]}", "", "", ""])
        elif name in peers:
            add(what, peers[name], phz)
    notes = ["Median and p99, TSC ticks and ns, measured on the same machine: the ksync rows "
             "are the hosted kernel's sched_ops experiment "
             + (f"[{hosted_src.label}]" if hosted_src else "(not run)")
             + "; the Linux rows are build/hosted/bench/sched_peers (bench/sched_peers.c), "
             f"threads under {peers and next(iter(peers.values())).get('policy') or '?'}, "
             "same statistics. The Linux wakeup rows and ksync's mailbox-path rows let the "
             "wakee's CPU idle 20 us before each wakeup (the hosted idle vCPU polls 30 us "
             "before it sleeps); ksync's signal-path rows wait 300 us, so the wakee's vCPU "
             "sleeps in sigsuspend and the wakeup is a signal to its thread."]
    below = []
    if hosted_src:
        below.append(_bar("same-vCPU switch", BAR_SWITCH_NS,
                          [(f"ksync {s}", hosted_src.ops.get((s, "yield"))) for s in SCHEDS],
                          hz, timing))
        below.append(_bar("cross-vCPU wakeup (mailbox path)", BAR_WAKEUP_NS,
                          [(f"ksync {s}", hosted_src.ops.get((s, "wakeup_cross")))
                           for s in SCHEDS], hz, timing,
                          [hosted_src.causes.get((s, "wakeup_cross")) for s in SCHEDS],
                          [hosted_src.ops.get((s, "line_cross")) for s in SCHEDS]))
    return Table(title="Switch and wakeup against Linux (hosted)",
                 headers=["what", "median ticks", "median ns", "p99 ticks", "p99 ns"],
                 rows=rows, align=["l", "r", "r", "r", "r"], notes_above=notes,
                 notes_below=below)


def _rate(r: dict | None) -> str:
    if r is None:
        return DASH
    return (f"{fmt_sig(num(r.get('per_sec')))} ({fmt_sig(num(r.get('per_sec_min')))}.."
            f"{fmt_sig(num(r.get('per_sec_max')))})")


def dispatch_table(srcs: list[Source]) -> Table | None:
    srcs = [s for s in srcs if s.dispatch]
    if not srcs:
        return None
    rows = []
    for s in srcs:
        ks = sorted({k for _, k in s.dispatch})
        for k in ks:
            a, b = s.dispatch.get(("lockfree", k)), s.dispatch.get(("locked", k))
            if not s.timing:
                rows.append([s.env, str(k), NOT_TIMING, NOT_TIMING, DASH])
                continue
            ra, rb = num((a or {}).get("per_sec")), num((b or {}).get("per_sec"))
            rows.append([s.env, str(k), _rate(a), _rate(b),
                         f"{fmt_ratio(ra / rb)}x" if ra and rb else DASH])
    ms = {f"{s.env}: {next(iter(s.dispatch.values())).get('ms', '?')} ms" for s in srcs}
    notes = ["Dispatches per second (sched_stats dispatches over a fixed window; median of "
             "the windows, min..max in brackets) with k CPUs each running two threads pinned "
             "to it that loop on thread_yield. Windows: " + ", ".join(sorted(ms)) + "."]
    notes += [f"{s.env}: {s.label}" for s in srcs]
    if any(s.env == "tcg" for s in srcs):
        notes.append(TCG_NOTE)
    return Table(title="Dispatches per second at 1..N CPUs, lockfree vs locked",
                 headers=["environment", "CPUs busy", "lockfree per s", "locked per s",
                          "lockfree / locked"],
                 rows=rows, align=["l", "r", "r", "r", "r"], notes_above=notes)


def sched_tables(prims: dict | None, hosted: dict | None) -> list[Table]:
    srcs = sources(prims, hosted)
    hsrc = next((s for s in srcs if s.env == "hosted"), None)
    return [t for t in (ops_table(srcs), linux_table(hsrc, hosted), dispatch_table(srcs))
            if t is not None]


# ---------------------------------------------------------------------------------------
# findings


def _dspread(r: dict | None) -> Spread | None:
    mid = num((r or {}).get("per_sec"))
    if mid is None:
        return None
    lo, hi = num(r.get("per_sec_min")), num(r.get("per_sec_max"))
    return Spread(lo if lo is not None else mid, mid, hi if hi is not None else mid,
                  f"{r.get('runs', '?')} windows")


def _f(s: Spread, unit: str = "") -> str:
    return f"{fmt_sig(s.mid)} ({fmt_sig(s.lo)}..{fmt_sig(s.hi)}){unit}"


def _judge(srcs: list[Source], claim: str, then: str, pick) -> Finding | None:
    """``pick(src) -> (a, b, today, note) | None`` for "a > b"; the first timing source in a
    hardware environment (hosted) decides, else the first that measured it is shown with
    'not measurable here'."""
    got = [(s, pick(s)) for s in srcs]
    got = [(s, g) for s, g in got if g is not None]
    for s, (a, b, today, note) in got:
        if s.env == "hosted" and s.timing:
            return Finding(MP, claim, then, today, s.label, compare_greater(a, b), note)
    for s, (a, b, today, note) in got:
        why = ("oversubscribed hosted run: correctness only, not a timing figure" if not s.timing
               else f"under {s.env} the figures are the emulator's costs, not hardware costs")
        return Finding(MP, claim, then, today, s.label, "not measurable here", why + ".")
    return None


def sched_findings(prims: dict | None, hosted: dict | None) -> list[Finding]:
    srcs = sources(prims, hosted)
    if not srcs:
        return []
    out = []

    def dispatch(s: Source):
        k = max((k for _, k in s.dispatch), default=0)
        a, b = _dspread(s.dispatch.get(("lockfree", k))), _dspread(s.dispatch.get(("locked", k)))
        if a is None or b is None or k < 2:
            return None
        return (a, b, f"lockfree {_f(a, '/s')} vs locked {_f(b, '/s')} at {k} CPUs "
                      f"({fmt_ratio(a.mid / b.mid)}x)" if b.mid else "",
                f"Medians of the windows with min..max ({a.how}); holds when the lockfree "
                "range lies above the locked one.")
    f = _judge(srcs, "a lock-free dispatcher keeps dispatching as CPUs are added; a master "
               "lock does not (lockfree dispatches/s above locked at N CPUs)",
               "Synthesis: lock-free run queues, no global scheduler lock (figures lost in "
               "the stored text)", dispatch)
    if f:
        out.append(f)

    def op_pair(op_a: str, sch_a: str, op_b: str, sch_b: str, what: str):
        def pick(s: Source):
            a, b = spread_of(s.ops.get((sch_a, op_a))), spread_of(s.ops.get((sch_b, op_b)))
            if a is None or b is None:
                return None
            return (a, b, f"{what}: {fmt_ticks(a.mid)} ({fmt_ticks(a.lo)}..{fmt_ticks(a.hi)}) "
                          f"vs {fmt_ticks(b.mid)} ({fmt_ticks(b.lo)}..{fmt_ticks(b.hi)}) TSC "
                          f"ticks ({fmt_ratio(a.mid / b.mid) if b.mid else DASH}x)",
                    f"Medians with min..p99 ({a.how}); holds when the spreads are apart.")
        return pick

    f = _judge(srcs, "switching FP/SIMD state costs more than an integer-only switch, so "
               "it is done only for threads that use it", "Synthesis switches the "
               "floating-point context only for threads that use it (figures lost in the "
               "stored text)", op_pair("yield_fp", "lockfree", "yield", "lockfree",
                                       "lockfree FP switch vs integer switch"))
    if f:
        out.append(f)
    f = _judge(srcs, "a dispatch with a lock costs more than a lock-free one (same-CPU "
               "switch, locked vs lockfree)", "Synthesis: context switch without locks "
               "(figures lost in the stored text)",
               op_pair("yield", "locked", "yield", "lockfree", "locked vs lockfree switch"))
    if f:
        out.append(f)
    f = _linux_switch_finding(srcs, hosted)
    if f:
        out.append(f)
    return out


def _linux_switch_finding(srcs: list[Source], hosted: dict | None) -> Finding | None:
    """Massalin & Pu set SunOS's figures beside Synthesis's thread operations: the
    conventional kernel's switch costs many times a Synthesis one. The run has Linux's
    sched_yield between two threads on one core and ksync's same-vCPU yield on the hosted
    port, both shown; no verdict: the two are not alike (see NOT_LIKE_SWITCH)."""
    peers, facts, _ = _peers(hosted)
    src = next((s for s in srcs if s.env == "hosted"), None)
    lin = spread_of(peers.get("sched_yield_same"))
    ks = spread_of(src.ops.get(("lockfree", "yield"))) if src else None
    if src is None or lin is None or ks is None:
        return None
    claim = ("a kernel thread switch built as Synthesis builds it costs a fraction of a "
             "conventional kernel's (Linux sched_yield, two threads on one core, vs ksync's "
             "lock-free same-vCPU yield)")
    then = ("the paper's table set SunOS's figures beside Synthesis's thread operations "
            "(the figures are lost in the stored text)")
    lhz, khz = num(facts.get("tsc_hz")) or src.tsc_hz, src.tsc_hz
    scale = (khz / lhz) if lhz and khz else 1.0   # Linux ticks in the kernel's TSC ticks
    lin = Spread(lin.lo * scale, lin.mid * scale, lin.hi * scale, lin.how)
    today = (f"Linux {fmt_ticks(lin.mid)} ({fmt_ticks(lin.lo)}..{fmt_ticks(lin.hi)}) vs ksync "
             f"{fmt_ticks(ks.mid)} ({fmt_ticks(ks.lo)}..{fmt_ticks(ks.hi)}) TSC ticks per switch")
    if not src.timing:
        return Finding(MP, claim, then, today, src.label, "not measurable here",
                       "oversubscribed hosted run: correctness only, not a timing figure.")
    return Finding(MP, claim, then, today, src.label, "not measurable here", NOT_LIKE_SWITCH)


NOT_LIKE_SWITCH = (
    "not comparable: on the hosted port ksync's yield is a user-mode switch inside one Linux "
    "process (its scheduler and a register switch, no system call, no privilege change), "
    "while Linux's sched_yield is a system call (kernel entry and exit) plus the kernel's "
    "scheduler and switch; their ratio would charge the system call's entry, exit and "
    "privilege change to Linux's switch design. Both figures are in the table 'Switch and wakeup against Linux "
    "(hosted)'; a like comparison needs both kernels' switches in one environment.")


# ---------------------------------------------------------------------------------------
# figure


def dispatch_figure(prims: dict | None, hosted: dict | None, out_dir: Path) -> list[Figure]:
    srcs = [s for s in sources(prims, hosted) if s.dispatch and s.timing]
    if not srcs:
        return []
    plt = plots.plt
    with plt.rc_context(plots.RC):
        fig, axes = plt.subplots(1, len(srcs), figsize=(5.2 * len(srcs), 3.8), squeeze=False)
        for ax, s in zip(axes[0], srcs):
            for sch, mk in (("lockfree", "o-"), ("locked", "s--")):
                ks = sorted(k for x, k in s.dispatch if x == sch)
                if not ks:
                    continue
                mids = [num(s.dispatch[(sch, k)].get("per_sec")) or 0 for k in ks]
                lo = [m - (num(s.dispatch[(sch, k)].get("per_sec_min")) or m)
                      for m, k in zip(mids, ks)]
                hi = [(num(s.dispatch[(sch, k)].get("per_sec_max")) or m) - m
                      for m, k in zip(mids, ks)]
                ax.errorbar(ks, [m / 1e6 for m in mids],
                            yerr=[[x / 1e6 for x in lo], [x / 1e6 for x in hi]], fmt=mk,
                            capsize=3, label=sch)
            ax.set_title(f"{s.env}" + (" (emulator costs)" if s.env == "tcg" else ""))
            ax.set_xlabel("CPUs busy (two yielding threads each)")
            ax.set_ylabel("dispatches per second (millions)")
            ax.set_xticks(sorted({k for _, k in s.dispatch}))
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            ax.legend()
        env = "; ".join(s.label for s in srcs)
        plots.suptitle(fig, "Dispatches per second at 1..N CPUs, lockfree vs locked", env)
        fig.tight_layout()
        cap = ("Dispatches per second with k CPUs each running two threads that loop on "
               "thread_yield, lock-free (Synthesis) vs master-lock scheduler; bars: min..max of "
               "the windows. Massalin & Pu's figure is lost in the stored text.")
        return [plots.save_figure(fig, out_dir, "sched-dispatch", cap)]
