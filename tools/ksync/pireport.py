"""Priority inversion under the helping lock and under a lock without inheritance
(Hohmuth & Härtig 2001, section 3.3: helping lends the lock owner the waiter's priority):
the table of the high-priority thread's wait, its findings and its figure.

Data (KSYNC lines of kernel/exp/pi.c, experiment ``pi``)::

    {"kind":"pi_wait","case":"1cpu"|"2cpu","lock":"helping"|"monitor","sched":..,
     "cpus":N,"unit":"tsc_ticks","tsc_hz":..,"section_us":..,"medium_us":..,
     "section_ticks":..,"medium_ticks":..,"n":..,"min":..,"median":..,"max":..,
     "missed":..,"waits":[...],"medium_done_pct":[...]}

in the hosted kernel runs of hosted.json (``runs[].rows``: the bench run of every scheme
and CPU count) and, for tcg, in prims.json under ``"sched"`` (the QEMU boot of the
scheduler experiments, filter ``sched_ops,pi``).

The wait is in TSC ticks, shown in µs at the row's TSC rate. A verdict compares the
spreads (min..max over the trials) of the two locks: ``compare_greater(monitor,
helping)``; an oversubscribed hosted run (more vCPUs than host cores) is never timed.

Public API: ``CASES``, ``sources``, ``pi_tables``, ``pi_findings``, ``pi_figures``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from . import schemes
from .base import (DASH, Figure, Finding, Spread, Table, compare_greater, fmt_ratio, fmt_sig,
                   num)
from .hosteddata import is_oversubscribed, run_label
from . import plots

HH = "Hohmuth & Härtig 2001"
TITLE = "Priority inversion: the high thread's wait, helping lock vs monitor"
LOCKS = (("helping", "helping lock (inheritance by helping)"),
         ("monitor", "monitor (no inheritance)"))
CASES = (("1cpu", "one CPU", "all threads on CPU 0"),
         ("2cpu", "two CPUs", "owner bound to CPU 1, waiter on CPU 0, a medium thread on "
                              "each CPU"))
TCG_NOTE = ("tcg: QEMU software emulation; its waits are the emulator's times, not "
            "hardware times.")
NOT_TIMING = "not a timing"


@dataclass
class Source:
    env: str                    # "hosted" / "tcg" / ...
    label: str                  # environment words for headers and findings
    timing: bool                # False: oversubscribed hosted run
    rows: dict[tuple[str, str], dict] = field(default_factory=dict)   # (case, lock) -> row
    cpus: int | None = None


def _fill(src: Source, rows) -> Source:
    for r in rows or []:
        if isinstance(r, dict) and r.get("kind") == "pi_wait":
            src.rows.setdefault((str(r.get("case")), str(r.get("lock"))), r)
    return src


def _hosted_source(hosted: dict | None) -> Source | None:
    """The hosted run whose pi rows are shown: timing runs first, then the default scheme,
    then the most CPUs (the two-CPU case needs two)."""
    runs = [r for r in (hosted or {}).get("runs") or [] if isinstance(r, dict)
            and r.get("status") == "ok"
            and any(isinstance(x, dict) and x.get("kind") == "pi_wait"
                    for x in r.get("rows") or [])]
    if not runs:
        return None
    runs.sort(key=lambda r: (is_oversubscribed(r), r.get("scheme") != schemes.DEFAULT_SCHEME,
                             -(num(r.get("cpus")) or 0)))
    rec = runs[0]
    label = run_label(rec) + f", scheme {rec.get('scheme')}"
    return _fill(Source("hosted", label, not is_oversubscribed(rec),
                        cpus=int(num(rec.get("cpus")) or 0)), rec.get("rows"))


def _kernel_source(prims: dict | None) -> Source | None:
    sched = prims.get("sched") if isinstance(prims, dict) else None
    if not isinstance(sched, dict) or sched.get("status") != "ok":
        return None
    side = sched.get("side") or {}
    env = str(side.get("env") or "?")
    cpus = int(num(side.get("cpus")) or 0)
    label = f"{env}, {cpus or '?'} CPUs, host CPU {side.get('cpu_model') or '?'}"
    src = _fill(Source(env, label, True, cpus=cpus), sched.get("rows"))
    return src if src.rows else None


def sources(prims: dict | None, hosted: dict | None) -> list[Source]:
    return [s for s in (_hosted_source(hosted), _kernel_source(prims)) if s is not None]


def _us(ticks, row: dict) -> float | None:
    t, hz = num(ticks), num(row.get("tsc_hz"))
    return t / hz * 1e6 if t is not None and hz else None


def wait_spread(row: dict | None) -> Spread | None:
    """The high thread's wait in µs: median and min..max over the trials; None if the row
    timed no trial or its TSC rate is unknown."""
    if not isinstance(row, dict) or not num(row.get("n")):
        return None
    lo, mid, hi = _us(row.get("min"), row), _us(row.get("median"), row), _us(row.get("max"), row)
    if lo is None or mid is None or hi is None:
        return None
    return Spread(lo, mid, hi, f"{int(num(row.get('n')))} trials")


def _fs(s: Spread) -> str:
    return f"{fmt_sig(s.mid)} ({fmt_sig(s.lo)}..{fmt_sig(s.hi)}) µs"


def _done(row: dict) -> str:
    vals = sorted(v for v in (num(x) for x in row.get("medium_done_pct") or []) if v is not None)
    if not vals:
        return DASH
    return f"{fmt_sig(vals[len(vals) // 2])} % ({fmt_sig(vals[0])}..{fmt_sig(vals[-1])})"


def _inputs(src: Source) -> str:
    r = next(iter(src.rows.values()), {})
    sec, med = _us(r.get("section_ticks"), r), _us(r.get("medium_ticks"), r)
    return (f"low's section {r.get('section_us', '?')} µs (alone: {fmt_sig(sec)} µs), the "
            f"medium thread's run {r.get('medium_us', '?')} µs (alone: {fmt_sig(med)} µs)")


# ---------------------------------------------------------------------------------------
# table


def pi_table(srcs: list[Source]) -> Table | None:
    srcs = [s for s in srcs if s.rows]
    if not srcs:
        return None
    rows = []
    for s in srcs:
        for case, cname, _ in CASES:
            for lock, lname in LOCKS:
                r = s.rows.get((case, lock))
                if r is None:
                    continue
                missed = int(num(r.get("missed")) or 0)
                trials = f"{int(num(r.get('n')) or 0)}" + (f" ({missed} missed)" if missed else "")
                if r.get("skipped"):
                    rows.append([s.env, cname, lname, f"skipped: {r['skipped']}", DASH, trials])
                elif not s.timing:
                    rows.append([s.env, cname, lname, NOT_TIMING, _done(r), trials])
                else:
                    sp = wait_spread(r)
                    rows.append([s.env, cname, lname, _fs(sp) if sp else DASH, _done(r), trials])
    if not rows:
        return None
    sched = next(iter(srcs[0].rows.values()), {}).get("sched") or "?"
    notes = [
        "A low-priority thread takes the lock and is preempted by a medium-priority thread "
        "that spins (CPU-bound); a high-priority thread then asks for the lock. The wait is "
        "high's, from its request to its acquisition: median (min..max) over the trials, in "
        "µs at the run's TSC rate (kernel/exp/pi.c, experiment pi; hard priorities, the "
        f"{sched} scheduler, lock statistics off). Helping lock and monitor trials "
        "alternate.",
        "Medium done: how much of the medium thread's run (on the owner's CPU) was done when "
        "high got the lock, median (min..max) over the trials - 0 % means the owner ran "
        "ahead of the medium thread (inheritance), 100 % that the medium thread ran to its "
        "end first.",
        "One CPU: every thread on CPU 0 (the paper's case). Two CPUs: the owner bound to "
        "CPU 1, the waiter on CPU 0, one medium thread on each CPU, so no CPU is free for "
        "the owner while they run; helping reaches the owner by asking CPU 1 to run it "
        "(remote donation, the paper's multiprocessor future work).",
        "Missed: trials where the owner had already released the lock when the high thread "
        "came (its CPU took the wakeup late): they timed no inversion and are left out.",
    ]
    notes += [f"{s.env}: {s.label}; inputs: {_inputs(s)}"
              + ("" if s.timing else " (correctness only: no figures shown)") for s in srcs]
    if any(s.env == "tcg" for s in srcs):
        notes.append(TCG_NOTE)
    return Table(title=TITLE,
                 headers=["environment", "case", "lock", "high's wait", "medium done",
                          "trials"],
                 rows=rows, align=["l", "l", "l", "r", "r", "r"], notes_above=notes)


def pi_tables(prims: dict | None, hosted: dict | None) -> list[Table]:
    t = pi_table(sources(prims, hosted))
    return [t] if t is not None else []


# ---------------------------------------------------------------------------------------
# findings


CLAIM = ("with helping (priority inheritance) a high-priority thread waiting for a lock "
         "waits for the low-priority owner's section, not for a medium-priority thread's "
         "run; without inheritance (a monitor) it waits for both - {case}")
THEN = ("section 3.3 argues it (the helper lends the owner its priority, so no "
        "lower-prioritized activity can interfere); the paper gives no figure for it")


CASE_NOTE = {
    "1cpu": "One CPU: the paper's case; helping runs the owner on the waiter's CPU.",
    "2cpu": ("Two CPUs: what is measured is inheritance across CPUs - the owner is bound to "
             "CPU 1, so helping must have CPU 1 run it ahead of its medium thread (remote "
             "donation, the paper's multiprocessor future work); a medium thread on each CPU "
             "leaves no CPU free for the owner, so without inheritance the wait still holds "
             "the medium run."),
}


def _case_finding(srcs: list[Source], case: str, cname: str, what: str) -> Finding:
    claim = CLAIM.format(case=f"{cname} ({what})")
    # the first source with both rows timed decides: hosted (real CPUs) before tcg
    for s in srcs:
        h, m = s.rows.get((case, "helping")), s.rows.get((case, "monitor"))
        hs, ms = wait_spread(h), wait_spread(m)
        if hs is None or ms is None:
            continue
        today = (f"helping {_fs(hs)} vs monitor {_fs(ms)} "
                 f"({fmt_ratio(ms.mid / hs.mid) if hs.mid else DASH}x); medium done when "
                 f"high got the lock: {_done(h)} vs {_done(m)}")
        if not s.timing:
            return Finding(HH, claim, THEN, today, s.label, "not measurable here",
                           "oversubscribed hosted run: correctness only, not a timing figure.")
        note = (f"Median and min..max over the trials ({hs.how} helping, {ms.how} monitor); "
                "holds when the monitor's whole range lies above the helping lock's. Inputs: "
                f"{_inputs(s)}; the monitor's wait contains the medium thread's run by "
                "construction (no inheritance), so the gap's size follows that input - what "
                "is tested is that the helping lock's wait does not contain it.")
        note += " " + CASE_NOTE[case]
        if s.env == "tcg":
            note += " Under tcg the times are the emulator's."
        return Finding(HH, claim, THEN, today, s.label, compare_greater(ms, hs), note)
    cpus = max((s.cpus or 0 for s in srcs), default=0)
    why = ("no run timed both locks in this case"
           + (" (the runs had one CPU)" if case == "2cpu" and 0 < cpus < 2 else "")
           + "; experiment pi (kernel/exp/pi.c) runs in the hosted bench runs and the "
             "tcg scheduler boot.")
    return Finding(HH, claim, THEN, DASH, srcs[0].label if srcs else DASH,
                   "not measurable here", why)


def pi_findings(prims: dict | None, hosted: dict | None) -> list[Finding]:
    srcs = [s for s in sources(prims, hosted) if s.rows]
    if not srcs:
        return []
    return [_case_finding(srcs, case, cname, what) for case, cname, what in CASES]


# ---------------------------------------------------------------------------------------
# figure


def pi_figures(prims: dict | None, hosted: dict | None, out_dir: Path) -> dict[str, list[Figure]]:
    srcs = [s for s in sources(prims, hosted) if s.rows and s.timing]
    srcs = [s for s in srcs if any(r.get("waits") for r in s.rows.values())]
    if not srcs:
        return {}
    plt = plots.plt
    with plt.rc_context(plots.RC):
        fig, axes = plt.subplots(1, len(srcs), figsize=(5.6 * len(srcs), 3.9), squeeze=False)
        for ax, s in zip(axes[0], srcs):
            ticks, labels, x = [], [], 0
            for case, cname, _ in CASES:
                for lock, mk in (("helping", "o"), ("monitor", "s")):
                    r = s.rows.get((case, lock))
                    if not r or not r.get("waits"):
                        continue
                    us = [v for v in (_us(w, r) for w in r["waits"]) if v is not None]
                    if not us:
                        continue
                    xs = [x + (i % 7 - 3) * 0.04 for i in range(len(us))]
                    ax.plot(xs, us, mk, alpha=0.6, color="C0" if lock == "helping" else "C3",
                            label=lock if x < 2 else None)
                    med = sorted(us)[len(us) // 2]
                    ax.plot([x - 0.25, x + 0.25], [med, med], "-", color="k", lw=1.5)
                    ticks.append(x)
                    labels.append(f"{cname}\n{lock}")
                    x += 1
            r0 = next(iter(s.rows.values()))
            for key, style in (("section_ticks", ":"), ("medium_ticks", "--")):
                v = _us(r0.get(key), r0)
                if v:
                    ax.axhline(v, ls=style, color="grey", lw=1,
                               label=("low's section alone" if key == "section_ticks"
                                      else "medium run alone"))
            ax.set_xticks(ticks)
            ax.set_xticklabels(labels)
            ax.set_yscale("log")
            ax.set_ylabel("high thread's wait (µs, log scale)")
            ax.set_title(s.env + (" (emulator times)" if s.env == "tcg" else ""))
            ax.grid(alpha=0.3, axis="y")
            ax.legend(fontsize=7)
        plots.suptitle(fig, "Priority inversion: the high thread's wait per trial",
                        "; ".join(s.label for s in srcs))
        fig.tight_layout()
        cap = ("Each point is one trial's wait of the high-priority thread for the lock a "
               "low-priority thread holds while a medium-priority thread spins; bars: medians; "
               "grey lines: the low thread's section and the medium thread's run, each timed "
               "alone. Hohmuth & Härtig give no figure for it.")
        return {TITLE: [plots.save_figure(fig, out_dir, "pi-wait", cap)]}


__all__ = ["CASES", "sources", "wait_spread", "pi_table", "pi_tables", "pi_findings",
           "pi_figures"]
