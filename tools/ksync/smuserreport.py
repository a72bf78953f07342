"""Small & Manley's Tables 3 and 4 and Figure 1 under real programs: the table, figure and
findings of smuser.json (``smuser.collect``): ksync's own critical sections, counted by the
kernel's census (kernel/include/spl.h) while the Andrew-like and WebStone-like loads run,
under each interrupt-masking scheme.

A row is one scheme and one part of a load (Andrew's five phases, their sum, WebStone's
run); a cell is the median over the ok rounds with their range. Rates are per second of
the part's elapsed time; durations are the census's TSC ticks in microseconds of the
emulated machine (tcg: the emulator's cost of the sections' code, not hardware's).

Table 6 under real programs (``sm_model_table``): the paper's model, a scheme's time in its
primitives = sections x the scheme's crit_enter+crit_leave cost + interrupted sections x
its fallback's (Table 2), with the counts measured here and the costs from irq.json's
``crit_enter_leave`` rows (the same build type, measured in a tight loop), against the
measured difference of the same part's elapsed time from the flag scheme's (spl-optim).

The serial line (``sm_serial_table``, ``_serial_findings``): the boots with the modelled
16550 receiving beside the loads (wall clock and -icount) - characters lost per part, the
line's interrupts, the sections interrupted with and without it, and per boot the line's
longest latency, its longest handler and the longest interrupt-holding window; section
6.4's finding is judged on the -icount boots' latency (the emulator's stalls pass no guest
time there). The quiet tables use the quiet boots only.

Public API: ``SMUSER_JSON``, ``load_smuser``, ``sm_tables``, ``sm_findings``,
``sm_figures``, ``sm_model_table``, ``sm_serial_table``.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from . import plots, schemes
from .base import ColumnSpec, Figure, Finding, Spread, Table, build_table, fmt_sig
from .irqdata import IrqIndex
from .util import load_runs_file

SMUSER_JSON = "smuser.json"
SCHEMA = "ksync-smuser-1"
PAPER = "Small & Manley 1997"
ANDREW_PHASES = ("mkdir", "copy", "stat", "read", "make")
# (load, phase) rows in order; ("andrew", "all") sums the five phases (the paper's row)
PARTS = [("andrew", "all"), *(("andrew", p) for p in ANDREW_PHASES), ("webstone", "run")]
LABEL = {"andrew": "Andrew-like", "webstone": "WebStone-like"}
# the paper's figures: Table 3 (cli-pessim) and Table 4 (spl-optim), microseconds
PAPER_T3 = {"andrew": (36048, 3.1), "webstone": (34468, 3.3)}
PAPER_T4 = {"andrew": 0.05, "webstone": 0.9}
FEW_PCT = 1.0           # "very few are interrupted": the paper's largest share is 0.9 %
SHORT_LOG2 = 14         # sections in buckets <= 14: shorter than 2^14 TSC ticks
MIN_RUNS = 2


def load_smuser(path: Path) -> dict:
    return load_runs_file(path, SCHEMA, "an smuser")


def _schemes(data: dict) -> list[str]:
    o = (data.get("options") or {}).get("schemes") or []
    seen = [r.get("scheme") for r in data.get("runs", []) if isinstance(r, dict)]
    return list(dict.fromkeys([*o, *(s for s in seen if isinstance(s, str))]))


def _ok(data: dict, scheme: str, serial: bool = False, icount: bool = False) -> list[dict]:
    """The scheme's ok runs: the quiet ones, or (serial) those with the serial line running;
    on the wall clock, or (icount) under -icount."""
    return [r for r in data.get("runs", []) if isinstance(r, dict) and r.get("ok")
            and r.get("scheme") == scheme and bool(r.get("serial_baud")) == serial
            and bool(r.get("icount")) == icount]


SERIAL_KEYS = ("arrived", "chars", "lost", "irqs", "lossy_irqs")
SERIAL_FIGS = ("arrived", "lost", "lost_pct", "irq_rate", "lossy_irqs")


def part_of(run: dict, load: str, phase: str) -> dict | None:
    """A run's part with its census, the five Andrew phases summed for ("andrew", "all");
    None when a needed part or census is missing. With the serial line running, its
    figures are summed the same way under "serial" (None when a part lacks them)."""
    ps = [p for p in run.get("parts", []) if isinstance(p, dict) and p.get("load") == load
          and (phase == "all" or p.get("phase") == phase)]
    if not ps or (phase == "all" and len(ps) != len(ANDREW_PHASES)) or \
            any(not isinstance(p.get("census"), dict) for p in ps):
        return None
    cs = [p["census"] for p in ps]
    ss = [p.get("serial") for p in ps]
    return {"elapsed_ns": sum(int(p.get("elapsed_ns") or 0) for p in ps),
            "sections": sum(c["sections"] for c in cs), "ticks": sum(c["ticks"] for c in cs),
            "interrupted": sum(c["interrupted"] for c in cs), "tsc_hz": cs[0]["tsc_hz"],
            "hist_log2": [sum(x) for x in zip(*(c["hist_log2"] for c in cs))],
            "serial": ({k: sum(int(x[k]) for x in ss) for k in SERIAL_KEYS}
                       if all(isinstance(x, dict) for x in ss) else None)}


def figures_of(p: dict) -> dict:
    n = p["sections"]
    secs = p["elapsed_ns"] / 1e9
    return {"rate": n / secs if secs > 0 else None,
            "mean_us": p["ticks"] / n / p["tsc_hz"] * 1e6 if n and p["tsc_hz"] else None,
            "intr_rate": p["interrupted"] / secs if secs > 0 else None,
            "intr_pct": 100.0 * p["interrupted"] / n if n else None,
            "short_pct": 100.0 * sum(p["hist_log2"][:SHORT_LOG2 + 1]) / n if n else None,
            "sections": n}


def serial_figures_of(p: dict) -> dict:
    """A part's serial-line figures (None each when the line did not run)."""
    sl = p.get("serial")
    secs = p["elapsed_ns"] / 1e9
    if not sl:
        return {"arrived": None, "lost": None, "lost_pct": None, "irq_rate": None,
                "lossy_irqs": None}
    return {"arrived": sl["arrived"], "lost": sl["lost"],
            "lost_pct": 100.0 * sl["lost"] / sl["arrived"] if sl["arrived"] else None,
            "irq_rate": sl["irqs"] / secs if secs > 0 else None,
            "lossy_irqs": sl["lossy_irqs"]}


def spread(data: dict, scheme: str, load: str, phase: str, key: str,
           serial: bool = False, icount: bool = False) -> Spread | None:
    """A figure's median and range over the scheme's ok rounds (quiet, or serial; on the
    wall clock, or under -icount)."""
    xs = []
    for r in _ok(data, scheme, serial, icount):
        p = part_of(r, load, phase)
        v = None
        if p:
            v = serial_figures_of(p)[key] if key in SERIAL_FIGS else figures_of(p)[key]
        if v is not None:
            xs.append(float(v))
    if not xs:
        return None
    return Spread(min(xs), statistics.median(xs), max(xs), f"{len(xs)} rounds")


def _cell(s: Spread | None, digits: int = 3) -> str:
    if s is None:
        return "—"
    f = lambda x: fmt_sig(x, digits)
    return f"{f(s.mid)} ({f(s.lo)}..{f(s.hi)})" if s.lo != s.hi else f(s.mid)


def _env(data: dict) -> str:
    o = data.get("options") or {}
    n = o.get("smp") or 1
    return f"{o.get('accel') or 'tcg'}, {n} CPU{'s' if n != 1 else ''}"


def _short_us(data: dict) -> str:
    hz = next((p["census"]["tsc_hz"] for r in data.get("runs", []) if r.get("ok")
               for p in r.get("parts", []) if isinstance(p.get("census"), dict)), None)
    return f"{(1 << SHORT_LOG2) / hz * 1e6:.1f} us" if hz else f"2^{SHORT_LOG2} TSC ticks"


def sm_tables(data: dict | None, irq: dict | None = None) -> list[Table]:
    if not data:
        return []
    model = sm_model_table(data, irq)
    serial = sm_serial_table(data)
    return _census_tables(data) + ([serial] if serial else []) + ([model] if model else [])


# ---- Table 6 under real programs ------------------------------------------------------
REF = "spl-optim"       # the flag scheme the measured differences are taken from
# the mechanism an interrupted optimistic section falls back to -> the scheme whose every
# section pays it (kernel/spl/schemes.txt's interrupted and enter columns)
_FALLBACK = {"offchip": "spl-pessim", "onchip": "cli-pessim", "cr8": "tpr-pessim"}


def costs(irq: dict | None) -> dict[str, float]:
    """Each scheme's crit_enter+crit_leave in seconds (irq.json, the median of its boot)."""
    if not irq:
        return {}
    ix = IrqIndex(irq)
    out = {}
    for s in schemes.SCHEMES:
        ticks, hz = ix.prim_median(s, "crit_enter_leave"), ix.tsc_hz(s)
        if ticks and hz:
            out[s] = ticks / hz
    return out


def model_s(data: dict, run: dict, load: str, phase: str, cost: dict[str, float]
            ) -> float | None:
    """Table 2's model for one run's part: sections x E + interrupted x X, in seconds."""
    s = run.get("scheme")
    p = part_of(run, load, phase)
    if not p or s not in cost:
        return None
    info = schemes.SCHEME_INFO.get(s)
    x = 0.0
    if info and info.optimistic and info.interrupted:
        fb = _FALLBACK.get(info.interrupted)
        if fb not in cost:
            return None
        x = cost[fb]
    return p["sections"] * cost[s] + p["interrupted"] * x


def _spread(xs: list[float]) -> Spread | None:
    return Spread(min(xs), statistics.median(xs), max(xs), f"{len(xs)} rounds") if xs else None


def model_rows(data: dict, irq: dict | None, load: str, phase: str, scheme: str) -> dict:
    cost = costs(irq)
    runs = _ok(data, scheme)
    el = [part_of(r, load, phase)["elapsed_ns"] / 1e9 for r in runs if part_of(r, load, phase)]
    ref = [part_of(r, load, phase)["elapsed_ns"] / 1e9 for r in _ok(data, REF)
           if part_of(r, load, phase)]
    mod = [m for r in runs if (m := model_s(data, r, load, phase, cost)) is not None]
    mref = [m for r in _ok(data, REF) if (m := model_s(data, r, load, phase, cost)) is not None]
    out = {"model_ms": _spread([1e3 * m for m in mod]),
           "model_pct": _spread([100 * m / e for m, e in zip(mod, el) if e > 0]),
           "elapsed_ms": _spread([1e3 * e for e in el]), "delta_ms": None, "model_delta_ms": None}
    if el and ref and scheme != REF:
        out["delta_ms"] = Spread(1e3 * (min(el) - max(ref)),
                                 1e3 * (statistics.median(el) - statistics.median(ref)),
                                 1e3 * (max(el) - min(ref)), "ranges")
    if mod and mref and scheme != REF:
        out["model_delta_ms"] = 1e3 * (statistics.median(mod) - statistics.median(mref))
    return out


def sm_model_table(data: dict | None, irq: dict | None) -> Table | None:
    if not data:
        return None
    cost = costs(irq)
    if not cost:
        return None
    items = [(s, l, p) for s in _schemes(data) for l, p in (("andrew", "all"), ("webstone", "run"))]
    rows = {i: model_rows(data, irq, i[1], i[2], i[0]) for i in items}
    f = lambda x: fmt_sig(x, 3) if x is not None else "—"
    cols = [ColumnSpec("scheme", lambda i: i[0], "l"),
            ColumnSpec("load", lambda i: LABEL[i[1]], "l"),
            ColumnSpec("E+L ticks", lambda i: f(cost[i[0]] * _hz(irq, i[0])) if i[0] in cost else "—"),
            ColumnSpec("model ms", lambda i: _cell(rows[i]["model_ms"])),
            ColumnSpec("model % of elapsed", lambda i: _cell(rows[i]["model_pct"], 2)),
            ColumnSpec("elapsed ms", lambda i: _cell(rows[i]["elapsed_ms"])),
            ColumnSpec(f"model - {REF}'s, ms", lambda i: f(rows[i]["model_delta_ms"])),
            ColumnSpec(f"measured - {REF}'s, ms", lambda i: _cell(rows[i]["delta_ms"]))]
    return build_table(
        f"Table 6 under real programs: the model against the measured time [{_env(data)}]",
        items, cols,
        notes_above=[
            "Table 2's model with this run's counts: a scheme's time in its primitives = its "
            "sections x its crit_enter+crit_leave cost (E+L: irq.json's tight-loop median, "
            "TSC ticks, the same emulator) + for an optimistic scheme its interrupted "
            "sections x its fallback's cost (offchip: spl-pessim's, onchip: cli-pessim's, "
            "cr8: tpr-pessim's). 'model - spl-optim's' is what the model says a scheme costs "
            "beyond the flag scheme; 'measured' is the same part's elapsed time beyond "
            "spl-optim's (medians; the range: the extreme pairs of rounds).",
            f"The costs: irq.json of commit {irq.get('commit') or '?'} "
            f"({irq.get('timestamp') or 'no date'}). "
            "Both sides run the census kernels (their rdtsc pair per section is in every "
            "scheme alike). Under tcg a device access (the 8259A's or the local APIC's "
            "registers, CR8) costs what the emulator makes it cost: compare schemes, not "
            "the paper's percentages."])


def _hz(irq: dict | None, scheme: str) -> float:
    return float(IrqIndex(irq).tsc_hz(scheme) or 0)


def _census_tables(data: dict) -> list[Table]:
    o = data.get("options") or {}
    items = [(s, l, p) for s in _schemes(data) for l, p in PARTS]
    cols = [ColumnSpec("scheme", lambda i: i[0], "l"),
            ColumnSpec("load", lambda i: LABEL.get(i[1], i[1]), "l"),
            ColumnSpec("part", lambda i: "all 5 phases" if i[2] == "all" else i[2], "l"),
            ColumnSpec("ok rounds", lambda i: str(len(_ok(data, i[0])))),
            ColumnSpec("sections/s", lambda i: _cell(spread(data, *i, "rate"))),
            ColumnSpec("mean us", lambda i: _cell(spread(data, *i, "mean_us"))),
            ColumnSpec("interrupted/s", lambda i: _cell(spread(data, *i, "intr_rate"))),
            ColumnSpec("% interrupted", lambda i: _cell(spread(data, *i, "intr_pct"), 2)),
            ColumnSpec(f"% < {_short_us(data)}", lambda i: _cell(spread(data, *i, "short_pct"))),
            ]
    failed = [f"{r.get('scheme')} round {r.get('round', 0) + 1}"
              + (f" (serial line {r['serial_baud']} bit/s)" if r.get("serial_baud") else "")
              + f": {r.get('reason')}"
              for r in data.get("runs", []) if isinstance(r, dict) and not r.get("ok")]
    return [build_table(
        f"Tables 3-4 under real programs: ksync's critical sections [{_env(data)}]", items, cols,
        notes_above=[
            "bench/user/smload.c (one static musl binary): andrew "
            f"{o.get('andrew_scale')} (five phases over a generated tree) and webstone "
            f"{o.get('web_clients')} clients x {o.get('web_requests')} requests, on ksync's "
            "census kernels (make WINDOWS=1); a section is an outermost crit_enter..crit_leave "
            "of the kernel's own code (its master locks of the process, memory, file and tty "
            "layers, the monitors' interlocks), counted on every CPU; 'interrupted': a scheme "
            "source's interrupt arrived inside (deferred by an optimistic section, held by a "
            "pessimistic one); a cell: the median over the ok rounds (their range).",
            f"The paper (NetBSD 1.2, a 100 MHz Pentium): Table 3 (cli-pessim) Andrew local "
            f"{PAPER_T3['andrew'][0]} sections/s, mean {PAPER_T3['andrew'][1]} us; WebStone "
            f"{PAPER_T3['webstone'][0]}/s, {PAPER_T3['webstone'][1]} us. Table 4 (spl-optim): "
            f"{PAPER_T4['andrew']} % and {PAPER_T4['webstone']} % interrupted.",
            "Inputs: the loads' sizes, one CPU (the paper's uniprocessor), ksync's 1000 Hz "
            "clock (the only periodic interrupt in these quiet boots; the serial line's "
            "boots are in the next table). Under "
            "tcg the durations are what the emulator makes the sections' code cost (the "
            "census's two rdtsc included), and the rates follow the emulated speed."],
        notes_below=(["Failed rounds: " + "; ".join(failed)] if failed else []))]


# ---- the serial line during the loads (the paper's fourth workload; section 6.4) -------
SERIAL_PARTS = [("andrew", "all"), ("andrew", "make"), ("webstone", "run")]
FIFO = 16               # the 16550's receive FIFO: 16 characters


def _serial_runs(data: dict) -> list[dict]:
    return [r for s in _schemes(data) for r in _ok(data, s, True)]


def _serial_opts(data: dict) -> tuple[int, int] | None:
    """The serial line's baud and bits a character (from the runs' totals)."""
    for r in _serial_runs(data):
        t = r.get("serial_total") or {}
        if t.get("baud") and t.get("bits"):
            return int(t["baud"]), int(t["bits"])
    return None


def window_us(run: dict) -> float | None:
    """The boot's longest window that held the BSP's interrupts back (urun.c), in us."""
    w = run.get("windows") or {}
    hz = (run.get("serial_total") or {}).get("tsc_hz") or next(
        (p["census"].get("tsc_hz") for p in run.get("parts", [])
         if isinstance(p, dict) and isinstance(p.get("census"), dict)), None)
    try:
        return int(w["max"]) / int(hz) * 1e6
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def _tsc_us(run: dict, key: str) -> float | None:
    t = run.get("serial_total") or {}
    try:
        return int(t[key]) / int(t["tsc_hz"]) * 1e6
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def handler_us(run: dict) -> float | None:
    """The boot's longest serial handler run, in us."""
    return _tsc_us(run, "handler_max_tsc")


def latency_us(run: dict) -> float | None:
    """The boot's longest serial-interrupt latency (arrival of the trigger to the handler)."""
    return _tsc_us(run, "latency_max_tsc")


def _boot_spread(data: dict, scheme: str, fn, icount: bool = False) -> Spread | None:
    return _spread([v for r in _ok(data, scheme, True, icount) if (v := fn(r)) is not None])


CLOCKS = {False: "tcg", True: "tcg -icount"}


def _icount_value(data: dict) -> str | None:
    return next((r.get("icount") for r in data.get("runs", []) if isinstance(r, dict)
                 and r.get("icount")), None)


def sm_serial_table(data: dict | None) -> Table | None:
    """The serial line at its rate during the loads: characters lost, its interrupts, and
    the census beside the quiet boots' (the same scheme, the same rounds), on the wall
    clock and under -icount."""
    if not data or not _serial_runs(data) and not any(
            _ok(data, s, True, True) for s in _schemes(data)):
        return None
    so = _serial_opts(data)
    items = [(s, ic, l, p) for s in _schemes(data) for ic in (False, True)
             if _ok(data, s, True, ic) for l, p in SERIAL_PARTS]
    sp = lambda i, key, serial=True: spread(data, i[0], i[2], i[3], key, serial, i[1])
    cols = [ColumnSpec("scheme", lambda i: i[0], "l"),
            ColumnSpec("clock", lambda i: CLOCKS[i[1]], "l"),
            ColumnSpec("load", lambda i: LABEL.get(i[2], i[2]), "l"),
            ColumnSpec("part", lambda i: "all 5 phases" if i[3] == "all" else i[3], "l"),
            ColumnSpec("ok rounds", lambda i: str(len(_ok(data, i[0], True, i[1])))),
            ColumnSpec("characters", lambda i: _cell(sp(i, "arrived"))),
            ColumnSpec("lost", lambda i: _cell(sp(i, "lost"))),
            ColumnSpec("% lost", lambda i: _cell(sp(i, "lost_pct"), 2)),
            ColumnSpec("serial intr/s", lambda i: _cell(sp(i, "irq_rate"))),
            ColumnSpec("sections/s", lambda i: _cell(sp(i, "rate"))),
            ColumnSpec("% interrupted", lambda i: _cell(sp(i, "intr_pct"), 2)),
            ColumnSpec("quiet: % interrupted",
                       lambda i: "—" if i[1] else _cell(spread(data, i[0], i[2], i[3],
                                                               "intr_pct"), 2)),
            ]
    boots = [f"{s} ({CLOCKS[ic]}): latency {_cell(_boot_spread(data, s, latency_us, ic))} us, "
             f"handler {_cell(_boot_spread(data, s, handler_us, ic))} us, window "
             f"{_cell(_boot_spread(data, s, window_us, ic))} us"
             + ("" if ic else " (quiet boots: "
                f"{_cell(_spread([v for r in _ok(data, s) if (v := window_us(r)) is not None]))}"
                " us)")
             for s in _schemes(data) for ic in (False, True) if _ok(data, s, True, ic)]
    rate = f"{so[0] / 1000:g} kbit/s, {so[1]} bits a character" if so else "?"
    ic = _icount_value(data)
    return build_table(
        f"The serial line at {rate} during the loads: characters lost and the sections "
        f"interrupted [{_env(data)}]", items, cols,
        notes_above=[
            "The paper's fourth workload (section 5.1, 'Serial 115.2': a 64 KB file received "
            "by tip at 115,200 bit/s) run beside the two loads: each round boots every scheme "
            "once quiet and once with serial_load (kernel/dev/serial_load.c), interleaved"
            + (f", and the serial boot once more under -icount {ic}" if ic else "") + ". "
            "The 16550 is modelled (characters arrive on the TSC's schedule into a 16-byte "
            "FIFO, trigger level 8); its interrupt is the real PIT (IRQ0) at IPL_TTY through "
            "the scheme, and each kept character costs a real UART register read. A "
            f"character is lost when the handler runs more than {FIFO} character times "
            + (f"({FIFO * so[1] / so[0] * 1e6:.0f} us here) " if so else "")
            + "after the FIFO began to fill: section 6.4's loss.",
            "'characters': arrived during the part; 'lost': overrun (the model's count; the "
            "driver's sequence-number check agrees at the end of every boot, or the boot "
            "fails); '% interrupted': sections a scheme source's interrupt arrived in, with "
            "the serial line (this boot) and without it (the quiet boots of the same rounds).",
            "Per boot (median and range over the rounds): the longest serial-interrupt "
            "latency (the trigger's time to the handler's entry), the longest handler (at most "
            "16 characters read), and the longest window that held the BSP's interrupts back "
            "(interrupts off, or an optimistic scheme's crit_enter section or raised level; "
            "spl-pessim's 8259A masks and tpr-pessim's CR8 raises are not tracked): "
            + "; ".join(boots) + ".",
            "Clocks: 'tcg' is wall-clock time, where the host stalls the emulator now and then "
            "for milliseconds - an interrupt is then late by the stall, and characters are "
            "lost that a real machine would keep. Under -icount guest time is the "
            "instructions run (shift=4: 16 ns an instruction, 62.5 M a second, about half "
            "the paper's 120 MHz Pentium), so a stall passes no guest time: a loss or a long "
            "window there is the kernel's own code."])


def _serial_findings(data: dict) -> list[Finding]:
    """Section 6.4 under real programs: does the kernel hold the serial line back longer
    than its FIFO lasts (judged on the -icount boots where they ran: the kernel's own code,
    not the emulator's stalls), and Table 4's serial row: do the serial line's interrupts
    still interrupt very few sections?"""
    out: list[Finding] = []
    so = _serial_opts(data)
    if not so:
        return out
    rate = f"{so[0] / 1000:g} kbit/s"
    fifo_us = FIFO * so[1] / so[0] * 1e6
    loads = (("andrew", "all"), ("webstone", "run"))
    for s in _schemes(data):
        ic = len(_ok(data, s, True, True)) >= MIN_RUNS
        if len(_ok(data, s, True, ic)) < MIN_RUNS:
            continue
        # the measure: under -icount the line's own interrupt latency (every cause of delay
        # that is the kernel's: the emulator's stalls pass no guest time); on the wall clock
        # only the window tracker's longest window (a latency there includes the stalls)
        lat = _boot_spread(data, s, latency_us, ic)
        win = _boot_spread(data, s, window_us, ic)
        meas = lat if ic else win
        if meas is None:
            continue

        def losses(icount: bool) -> str:
            parts = [f"{_cell(spread(data, s, l, p, 'lost', True, icount))} of "
                     f"{_cell(spread(data, s, l, p, 'arrived', True, icount))} characters "
                     f"({LABEL[l]})" for l, p in loads]
            return f"lost per run ({CLOCKS[icount]}): " + ", ".join(parts)
        today = ((f"longest interrupt latency {_cell(lat)} us per boot (tcg -icount; longest "
                  f"window {_cell(win)} us)" if ic else
                  f"longest window {_cell(win)} us per boot (tcg)")
                 + f" against the FIFO's {fifo_us:.0f} us; " + losses(ic)
                 + (f"; {losses(False)}, longest interrupt latency "
                    f"{_cell(_boot_spread(data, s, latency_us))} us per boot"
                    if ic and _ok(data, s, True) else ""))
        verdict = "holds" if meas.lo > fifo_us else "reversed" if meas.hi < fifo_us \
            else "within noise"
        out.append(Finding(
            PAPER, f"the kernel holds a {rate} serial line's interrupt back longer than its "
            f"16-character FIFO lasts (Andrew-like and WebStone-like loads, real programs, {s})",
            "section 6.4: 'up to 28 characters could arrive' in a 2 ms IDE handler, 'the "
            "buffer only holds 16 characters ... characters could easily be lost'",
            today, _env(data) + (" -icount" if ic else ""), verdict,
            "judged on the -icount boots where they ran (guest time = instructions: the "
            "emulator's host stalls pass none): the serial interrupt's longest latency (the "
            "trigger's time to its handler, every delay the kernel adds); without them on "
            "the wall clock's longest window (interrupts off, an optimistic scheme's "
            "crit_enter section or raised level: the tracker does not see spl-pessim's 8259A "
            "masks or tpr-pessim's CR8). Holds when every boot's "
            "is longer than the FIFO lasts, reversed when every boot's is shorter. The "
            "wall-clock losses are reported beside it: a loss with no window that long is "
            "the emulator's stall, not the kernel's."))
    scheme = "spl-optim" if len(_ok(data, "spl-optim", True)) >= MIN_RUNS else None
    if scheme:
        for load, phase in loads:
            sp = spread(data, scheme, load, phase, "intr_pct", True)
            q = spread(data, scheme, load, phase, "intr_pct")
            if sp is None:
                continue
            out.append(Finding(
                PAPER, f"very few critical sections are interrupted with the serial line's "
                f"interrupts too ({LABEL[load]} load and serial {rate}, real programs)",
                "Table 4: Serial 115.2, 140 of 45269 sections a second interrupted (0.3 %)",
                f"{scheme}: {_cell(sp, 2)} % of the kernel's sections (quiet boots: "
                f"{_cell(q, 2)} %)", _env(data), _verdict_below(sp, FEW_PCT),
                f"holds when every round's share lies below {FEW_PCT:g} %, reversed when every "
                "round's lies above (as Table 4's finding above). The paper's serial test ran "
                "alone; here the line runs beside the loads."))
    return out


def _verdict_below(s: Spread, bound: float) -> str:
    return "holds" if s.hi < bound else "reversed" if s.lo > bound else "within noise"


def sm_findings(data: dict | None, irq: dict | None = None) -> list[Finding]:
    if not data:
        return []
    return _census_findings(data) + _serial_findings(data) + _model_findings(data, irq)


def _model_findings(data: dict, irq: dict | None) -> list[Finding]:
    """Does Table 2's model account for what spl-pessim's sections cost a real program?
    The model's extra time over spl-optim against the measured extra elapsed time."""
    out: list[Finding] = []
    cost = costs(irq)
    if "spl-pessim" not in cost or REF not in cost or not _ok(data, "spl-pessim"):
        return out
    for load, phase in (("andrew", "all"), ("webstone", "run")):
        m = model_rows(data, irq, load, phase, "spl-pessim")
        d, md = m["delta_ms"], m["model_delta_ms"]
        if d is None or md is None or min(len(_ok(data, "spl-pessim")), len(_ok(data, REF))) < MIN_RUNS:
            continue
        verdict = "holds" if d.lo <= md <= d.hi else "reversed"
        out.append(Finding(
            PAPER, f"Table 6's model gives spl-pessim's synchronization time ({LABEL[load]} "
            "load, real programs)",
            "Table 6: spl-pessim 9.0 % (Andrew local), 8.6 % (WebStone), computed from the model",
            f"model {fmt_sig(md, 3)} ms beyond spl-optim's, measured {_cell(d)} ms"
            + (f" ({100 * md / d.mid:.0f} % of it)" if d.mid > 0 else ""), _env(data),
            verdict,
            "holds when the model's extra time lies inside the measured difference's range "
            "(the extreme pairs of rounds), reversed when outside: then the scheme costs a "
            "real program something the model's two terms do not count (under tcg, the "
            "emulator's device accesses in the handlers and the clock's re-raise as well)."))
    return out


def _census_findings(data: dict) -> list[Finding]:
    out: list[Finding] = []
    env = _env(data)
    # Table 4's claim on the paper's Table 4 kernel (spl-optim) where it ran, else the first
    scheme = "spl-optim" if _ok(data, "spl-optim") else next(
        (s for s in _schemes(data) if _ok(data, s)), None)
    for load, phase in (("andrew", "all"), ("webstone", "run")):
        claim = (f"very few critical sections are interrupted ({LABEL[load]} load, real "
                 f"programs)")
        then = f"Table 4: {PAPER_T4[load]} % ({'Andrew local' if load == 'andrew' else 'WebStone'})"
        s = spread(data, scheme, load, phase, "intr_pct") if scheme else None
        n = len(_ok(data, scheme)) if scheme else 0
        if s is None or n < MIN_RUNS:
            out.append(Finding(PAPER, claim, then, f"fewer than {MIN_RUNS} ok rounds", env,
                               "not measurable here", f"a verdict needs {MIN_RUNS} rounds"))
            continue
        out.append(Finding(
            PAPER, claim, then, f"{scheme}: {_cell(s, 2)} % of the kernel's sections", env,
            _verdict_below(s, FEW_PCT),
            f"holds when every round's share lies below {FEW_PCT:g} % (the paper's largest, "
            "0.9 %, read as its bound of 'very few'), reversed when every round's lies above. "
            "Under tcg a section's code runs slower than on hardware while the clock keeps "
            "real time: the share is the emulated machine's, not a hardware figure."))
        short = spread(data, scheme, load, phase, "short_pct")
        claim2 = f"most critical sections are very short ({LABEL[load]} load, real programs)"
        then2 = (f"Table 3: mean {PAPER_T3[load][1]} us; 'most critical sections take less "
                 "than 10 us'")
        out.append(Finding(
            PAPER, claim2, then2,
            f"{scheme}: {_cell(short)} % shorter than {_short_us(data)}, mean "
            f"{_cell(spread(data, scheme, load, phase, 'mean_us'))} us", env,
            "holds" if short and short.lo > 50 else "reversed" if short and short.hi < 50
            else "within noise",
            "holds when every round has more than half its sections below the bound (a "
            "log2 bucket edge under 10 us), reversed when every round has less. Under tcg "
            "the durations are what the emulator makes the code cost, not hardware's."))
    return out


def sm_figures(data: dict | None, out_dir: Path) -> dict[str, list[Figure]]:
    """Figure 1 redrawn: the distribution of the sections' durations (log2 buckets), one
    line per scheme, for each load (all rounds' sections together)."""
    if not data or not any(_ok(data, s) for s in _schemes(data)):
        return {}
    plt = plots.plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (load, phase) in zip(axes, (("andrew", "all"), ("webstone", "run"))):
        for s in _schemes(data):
            hist, hz = None, None
            for r in _ok(data, s):
                p = part_of(r, load, phase)
                if p:
                    hz = p["tsc_hz"]
                    hist = p["hist_log2"] if hist is None else [a + b for a, b in
                                                                 zip(hist, p["hist_log2"])]
            if not hist or not sum(hist) or not hz:
                continue
            tot = sum(hist)
            used = [b for b, h in enumerate(hist) if h and b > 0]
            if not used:
                continue
            # bucket b holds [2^(b-1), 2^b) ticks: a step from its lower edge
            bs = list(range(used[0], used[-1] + 1))
            xs = [(1 << (b - 1)) / hz * 1e6 for b in bs] + [(1 << bs[-1]) / hz * 1e6]
            ys = [100.0 * hist[b] / tot for b in bs]
            ax.step(xs, ys + ys[-1:], where="post", label=s)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("section duration, us (log2 buckets; emulated machine)")
        ax.set_title(f"{LABEL[load]}" + (" (all 5 phases)" if phase == "all" else ""))
        ax.legend(fontsize=7)
    axes[0].set_ylabel("% of sections")
    plots.suptitle(fig, "Figure 1 redrawn: critical-section durations under real programs",
                   _env(data))
    fig.tight_layout()
    f = plots.save_figure(fig, out_dir, "smuser_fig1",
                          "Small & Manley's Figure 1 from ksync's own sections under the "
                          f"Andrew-like and WebStone-like loads, each scheme a line [{_env(data)}; "
                          "emulator costs]")
    return {"Tables 3-4 under real programs": [f]}
