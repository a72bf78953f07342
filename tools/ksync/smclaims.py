"""Small & Manley 1997: the observations of the abstract and sections 5.1-5.4 and 7.1 that
the Table 5 / Table 6 / data-loss findings (findings.py) do not judge, one finding each.

* (a) "most critical sections are very short" (section 5.1, Table 3: 0.6-4.6 µs);
* (b) "very few are ever interrupted" (section 5.2, Table 4: 0.05-0.9 %);
* (c) "the synchronization cost is often higher than the time spent in the body of the
  critical section" (section 5.3: the off-chip pair of spl-pessim against Table 3's lengths);
* (d) "under heavy load NetBSD 1.2 can spend 9% to 12% of its time in synchronization
  primitives" (abstract; Table 6's spl-pessim row, 6.5-11.9 %);
* "the other three techniques all have an overhead that is an order of magnitude less than
  that of the spl-pessim technique" (section 5.4): one finding per other scheme;
* "using our model the cost of cli-spl-pessim is identical to that of the cli-pessim
  scheme" (section 7.1).

What the run can judge. The load of kernel/exp/irq.c is synthetic: each workload's section
rate and mean section length are the paper's Table 3 figures, drawn (Poisson arrivals,
exponential lengths), and the devices' interrupt rates are parameters of the models. So
(a) and (b) are inputs of the model, and (c) and (d) are part input (the section lengths,
the section rate) and part measurement (the cost per section): those four get the verdict
"input of the model", with today's figures shown. The two claims about the cost of masking
per scheme compare each scheme's crit_enter + crit_leave (irq_prims, no interrupt arriving,
min..p99 over its batches) and are judged where that cost is a hardware cost: hosted (the
kernel's code on the real CPU) or bare metal; under tcg / kvm-pvm / kvm the emulator's ratio
is shown, not judged.

Data: irq.json (the tcg boots, irqdata.IrqIndex) and hosted.json (the hosted kernel's
timing runs, through hosteddata.irq_view). Public API: ``sm_claim_findings(ix, hosted)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import schemes

from .base import (DASH, Finding, HW_ENVS_OFFCHIP, HW_ENVS_ONCHIP, SM, Spread, T3_1997, T4_1997,
                   T6_1997, WHY_NOT_HW, cap_first, compare_greater, dig, fmt_ratio, fmt_sig,
                   fmt_spread, num, spread_of, spread_ratio, ticks_to_us)
from .irqdata import IrqIndex, WORKLOADS, interrupted_pct
from .hosteddata import irq_view, run_label, timing_runs

MODEL_INPUT = "input of the model"
NA = "not measurable here"
# the claims about the cost of masking: hosted runs the kernel's own scheme code on the
# real CPU (its off-chip mask is a pthread_sigmask system call, its cli a soft flag)
HW_10X = HW_ENVS_OFFCHIP + ("hosted",)
HW_SAME = HW_ENVS_ONCHIP
ORDER = 10.0            # "an order of magnitude" (section 5.4)
PESSIM = "spl-pessim"
OTHERS = ("spl-optim", "cli-pessim", "cli-optim")
PROPOSAL, TWIN = "cli-spl-pessim", "cli-pessim"
LOAD_WHAT = ("the synthetic load (kernel/exp/irq.c) draws each workload's sections as "
             "Poisson arrivals at the paper's Table 3 rate, with exponentially distributed "
             "lengths of the paper's Table 3 mean")


@dataclass
class View:
    """One data source: an index over irq.json-shaped data and its environment words."""
    ix: IrqIndex
    labels: dict[str, str]      # scheme -> "tcg, 2 CPUs" / "hosted, <CPU>, 2 vCPUs, ..."

    def env(self, scheme: str) -> str:
        return str(self.ix.run(scheme).get("env") or "?")

    def label(self, names: list[str]) -> str:
        out: list[str] = []
        for s in names:
            lab = self.labels.get(s) or self.ix.env_label(s)
            if lab and lab not in out:
                out.append(lab)
        return " / ".join(out) or "no data"


def _views(ix: IrqIndex, hosted: dict | None) -> tuple[View | None, View | None]:
    """(the irq.json view, the hosted view); either None without data."""
    irq = View(ix, {}) if ix.runs else None
    hv = None
    if hosted:
        view = irq_view(hosted)
        if view["schemes"]:
            cpus = view["options"]["smp"]
            labels = {str(r.get("scheme")): run_label(r) for r in timing_runs(hosted)
                      if r.get("cpus") == cpus}
            hv = View(IrqIndex(view), labels)
    return irq, hv


def _us(v: View, scheme: str, ticks: float | None) -> float | None:
    return ticks_to_us(ticks, v.ix.tsc_hz(scheme))


def _range(vals: list[float], fmt=fmt_sig, unit: str = "") -> str:
    lo, hi = min(vals), max(vals)
    return f"{fmt(lo)}{unit}" if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}{unit}"


def _loads(v: View, scheme: str) -> list[tuple[str, dict]]:
    return [(w, ld) for w in v.ix.workloads() if (ld := v.ix.load(scheme, w))]


def _first_with_loads(views: list[View | None], prefer: tuple[str, ...]) \
        -> tuple[View, str] | None:
    """The first view and scheme (in ``prefer`` order, then any) with irq_load rows."""
    for v in views:
        if v is None:
            continue
        for s in [*prefer, *v.ix.schemes_shown()]:
            if _loads(v, s):
                return v, s
    return None


def _emulated(v: View, names: list[str]) -> str:
    envs = [v.env(s) for s in names]
    bad = next((e for e in envs if e in WHY_NOT_HW), None)
    return f" The cost side is not a hardware cost: {WHY_NOT_HW[bad]}." if bad else ""


# ---------------------------------------------------------------------------------------
# (a)-(d): inputs of the model


def short_sections(views: list[View | None]) -> Finding:
    claim = "most critical sections are very short (usually under 4 µs)"
    ref = [T3_1997[w][3] for w in WORKLOADS]
    then = (f"Table 3 (cli-pessim kernel): mean section {_range(ref, unit=' µs')} over the four "
            "workloads; lengths roughly exponential (section 5.1)")
    got = _first_with_loads(views, (TWIN,))
    if got is None:
        return Finding(SM, claim, then, DASH, "no data", NA,
                       "No irq_load rows: the synthetic load did not run.")
    v, s = got
    means, medians, targets = [], [], []
    for _, ld in _loads(v, s):
        m = _us(v, s, num(dig(ld, "crit", "dur_mean")))
        if m is not None:
            means.append(m)
        md = _us(v, s, num(dig(ld, "crit", "dur_median")))
        if md is not None:
            medians.append(md)
        t = num(ld.get("target_mean_us"))
        if t is not None:
            targets.append(t)
    if not means:
        return Finding(SM, claim, then, DASH, v.label([s]), NA,
                       f"The {s} load rows carry no section length (crit.dur_mean) or no TSC "
                       "frequency.")
    today = f"{s}: mean section {_range(means, unit=' µs')} measured"
    if medians:
        today += f", median {_range(medians, unit=' µs')}"
    if targets:
        today += f" (drawn with means {_range(targets, unit=' µs')})"
    return Finding(SM, claim, then, today, v.label([s]), MODEL_INPUT,
                   f"Input of the model: {LOAD_WHAT}, so the measured lengths reproduce the "
                   "load's parameters (they check the load, not a claim about any kernel's "
                   "sections).")


def few_interrupted(views: list[View | None]) -> Finding:
    claim = "very few critical sections are ever interrupted"
    ref = [T4_1997[w][3] for w in WORKLOADS]
    then = f"Table 4 (spl-optim kernel): {_range(ref, unit='%')} of sections interrupted"
    got = _first_with_loads(views, ("spl-optim",))
    if got is None:
        return Finding(SM, claim, then, DASH, "no data", NA,
                       "No irq_load rows: the synthetic load did not run.")
    v, s = got
    pcts, preds = [], []
    for w, ld in _loads(v, s):
        p = interrupted_pct(ld)
        if p is None:
            continue
        pcts.append(p)
        rate = sum(num(r.get("per_s")) or 0.0 for r in v.ix.sources(s) if r.get("workload") == w)
        m = _us(v, s, num(dig(ld, "crit", "dur_mean")))
        if rate and m is not None:
            preds.append(100.0 * rate * m * 1e-6)
    if not pcts:
        return Finding(SM, claim, then, DASH, v.label([s]), NA,
                       f"The {s} load rows carry no interrupted count.")
    today = f"{s}: {_range(pcts, unit='%')} of sections interrupted"
    note = ("Input of the model: how often a section is interrupted follows from the section "
            "rate and lengths and from the devices' interrupt rates (the clock's frequency, "
            "the disk's PIO requests, the paced serial and network models), all parameters "
            f"of the synthetic load: {LOAD_WHAT}.")
    if preds:
        note += (f" Interrupts per second x mean section length gives "
                 f"{_range(preds, unit='%')} for the same workloads.")
    return Finding(SM, claim, then, today, v.label([s]), MODEL_INPUT, note)


def _crit(v: View, scheme: str) -> Spread | None:
    return spread_of(v.ix.prim(scheme, "crit_enter_leave"))


def sync_over_body(views: list[View | None]) -> Finding:
    claim = ("with spl-pessim, synchronizing a critical section costs more than the "
             "section's body")
    then = ("abstract: 'using the traditional synchronization technique, the synchronization "
            "cost is often higher than the time spent in the body of the critical section'; "
            "section 5.3: off-chip pair 2.5 µs vs mean sections 0.6-4.6 µs (Table 3)")
    for v in views:
        if v is None:
            continue
        c = _crit(v, PESSIM)
        bodies = [m for _, ld in _loads(v, PESSIM)
                  if (m := num(dig(ld, "crit", "dur_mean"))) is not None]
        if c is None or not bodies:
            continue
        cu = _us(v, PESSIM, c.mid)
        ratios = [c.mid / b for b in bodies if b > 0]
        today = (f"{PESSIM} crit_enter + crit_leave {fmt_spread(c)} TSC ticks"
                 + (f" = {fmt_sig(cu)} µs" if cu is not None else "")
                 + (f"; cost / mean body {_range(ratios, fmt=fmt_ratio, unit='x')}" if ratios
                    else ""))
        return Finding(SM, claim, then, today, v.label([PESSIM]), MODEL_INPUT,
                       "Input of the model (the body): the section bodies are the paper's "
                       "1997 lengths, so the ratio is today's masking cost against 1997's "
                       f"sections; only the cost side is measured. {cap_first(LOAD_WHAT)}."
                       + _emulated(v, [PESSIM]))
    return Finding(SM, claim, then, DASH, "no data", NA,
                   f"No run measured both {PESSIM}'s crit_enter_leave and its load's "
                   "section lengths.")


def pessim_share(views: list[View | None]) -> Finding:
    claim = ("under heavy load spl-pessim spends 9% to 12% of its time in synchronization "
             "primitives")
    ref = list(T6_1997[PESSIM])
    then = ("abstract: 'under heavy load NetBSD 1.2 can spend 9% to 12% of its time in "
            f"synchronization primitives'; Table 6's spl-pessim row {_range(ref, unit='%')} "
            "over the four workloads (the Table 2 model)")
    for v in views:
        if v is None:
            continue
        pcts = [p for _, ld in _loads(v, PESSIM) if (p := num(ld.get("sync_pct"))) is not None]
        if not pcts:
            continue
        return Finding(SM, claim, then,
                       f"{PESSIM}: {_range(pcts, unit='%')} of each second in crit_enter / "
                       "crit_leave, measured at the paper's section rates",
                       v.label([PESSIM]), MODEL_INPUT,
                       "Input of the model (the rate): the share is sections per second x "
                       "cost per section, and the section rate is the paper's Table 3 rate "
                       "by construction; only the cost per section is today's (judged in "
                       "the order-of-magnitude lines and Table 5b)." + _emulated(v, [PESSIM]))
    return Finding(SM, claim, then, DASH, "no data", NA,
                   f"No measured time in synchronization (sync_pct) for {PESSIM}.")


# ---------------------------------------------------------------------------------------
# the cost of masking per scheme: judged where it is a hardware cost


def _pair(views: list[View | None], a: str, b: str, hw: tuple[str, ...]) \
        -> tuple[View, Spread, Spread, bool] | None:
    """The first view in a hardware environment that measured both schemes' section, else
    the first that measured them at all (hw=False)."""
    measured = []
    for v in views:
        if v is None:
            continue
        x, y = _crit(v, a), _crit(v, b)
        if x is not None and y is not None:
            measured.append((v, x, y, v.env(a) in hw and v.env(b) in hw))
    return next((m for m in measured if m[3]), measured[0] if measured else None)


def _not_hw(v: View, names: list[str], hw: tuple[str, ...]) -> str:
    env = next((v.env(s) for s in names if v.env(s) not in hw), "?")
    why = WHY_NOT_HW.get(env, f"{env} is not a hardware environment for this claim")
    return cap_first(f"{why}; the claim is about hardware costs, the ratio is the emulator's.")


def _missing(views: list[View | None], names: list[str]) -> str:
    unbuilt = [s for s in names if not schemes.SCHEME_INFO.get(s) or
               not schemes.SCHEME_INFO[s].hosted]
    text = ("No run measured crit_enter_leave of both " + " and ".join(names) + ".")
    if unbuilt and any(v is not None and any(r.get("env") == "hosted"
                                             for r in v.ix.runs.values()) for v in views):
        text += " The hosted port does not build " + ", ".join(unbuilt) + "."
    return text


def order_of_magnitude(views: list[View | None]) -> list[Finding]:
    out = []
    for other in OTHERS:
        claim = (f"{PESSIM}'s synchronization costs an order of magnitude (10x or more) what "
                 f"{other}'s does")
        ref = [p / o for p, o in zip(T6_1997[PESSIM], T6_1997[other]) if o]
        then = (f"Table 6: {PESSIM} {_range(list(T6_1997[PESSIM]), unit='%')} vs {other} "
                f"{_range(list(T6_1997[other]), unit='%')} ({_range(ref, fmt=fmt_ratio, unit='x')}"
                "); section 5.4: 'an order of magnitude less'")
        got = _pair(views, PESSIM, other, HW_10X)
        if got is None:
            out.append(Finding(SM, claim, then, DASH, "no data", NA,
                               _missing(views, [PESSIM, other])))
            continue
        v, p, o, hw = got
        today = (f"{spread_ratio(p, o)} ({PESSIM} {fmt_spread(p)} vs {other} {fmt_spread(o)} TSC ticks per "
                 "crit_enter + crit_leave)")
        label = v.label([PESSIM, other])
        if not hw:
            out.append(Finding(SM, claim, then, today, label, NA,
                               _not_hw(v, [PESSIM, other], HW_10X)))
            continue
        ten = Spread(ORDER * o.lo, ORDER * o.mid, ORDER * o.hi, o.how)
        note = (f"Medians with their spread ({p.how}), no interrupt arriving: holds when "
                f"{PESSIM}'s spread lies above 10x {other}'s ({fmt_spread(ten)}), reversed when "
                "below it (less than an order of magnitude), within noise when they overlap. "
                "Per section, so the paper's rate cancels out of the ratio.")
        if v.env(PESSIM) == "hosted":
            note += (" Hosted: spl-pessim's off-chip mask is a pthread_sigmask system call, "
                     "the cli schemes' cli/sti the port's soft flag.")
        out.append(Finding(SM, claim, then, today, label, compare_greater(p, ten), note))
    return out


def same_cost(views: list[View | None]) -> Finding:
    claim = (f"{PROPOSAL}'s critical sections cost the same as {TWIN}'s (cli/sti; handler "
             "masking left out of the model)")
    then = (f"section 7.1: identical in the Table 2 model; Table 6 {TWIN} "
            f"{_range(list(T6_1997[TWIN]), unit='%')}")
    got = _pair(views, PROPOSAL, TWIN, HW_SAME)
    if got is None:
        return Finding(SM, claim, then, DASH, "no data", NA, _missing(views, [PROPOSAL, TWIN]))
    v, a, b, hw = got
    today = (f"{spread_ratio(a, b)} ({PROPOSAL} {fmt_spread(a)} vs {TWIN} {fmt_spread(b)} TSC ticks per "
             "crit_enter + crit_leave)")
    label = v.label([PROPOSAL, TWIN])
    if not hw:
        return Finding(SM, claim, then, today, label, NA, _not_hw(v, [PROPOSAL, TWIN], HW_SAME))
    apart = compare_greater(a, b) != "within noise"
    return Finding(SM, claim, then, today, label, "reversed" if apart else "within noise",
                   f"A claim of equality: within noise (the spreads overlap: no difference "
                   f"measured) is what it predicts; reversed when the spreads ({a.how}) are "
                   "apart. Overlapping spreads show no difference, not an equality, so this "
                   "line never reads holds.")


def sm_claim_findings(ix: IrqIndex, hosted: dict | None = None) -> list[Finding]:
    """The six claims' findings; the model-input ones from irq.json first (the paper's
    setting: every workload with its devices), the cost ones from the first source whose
    figures are hardware costs."""
    irq, hv = _views(ix, hosted)
    by_load = [irq, hv]
    by_cost = [hv, irq]
    return [short_sections(by_load), few_interrupted(by_load), sync_over_body(by_cost),
            pessim_share(by_cost), *order_of_magnitude(by_cost), same_cost(by_cost)]


__all__ = ["sm_claim_findings", "MODEL_INPUT"]
