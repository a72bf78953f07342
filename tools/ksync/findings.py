"""Findings: one line per claim of a paper that a run measured (DESIGN.md, "The report";
issue 8 item 4), rendered before the tables.

Each ``report.Finding`` carries the 1990s figure, today's figure with its environment, and a
verdict COMPUTED from the data:

* ``holds`` / ``reversed``: the claim's direction (A costs more than B, A loses more than B)
  with the two spreads apart;
* ``within noise``: the spreads overlap (or the repeats disagree);
* ``not measurable here``: the data is missing, or the claim is about hardware costs and the
  only figures are an emulator's (tcg, kvm-pvm): the note says why.

The spread of one measured row is the range of its run medians when the run was repeated
(``run_medians``), else min .. p99 over its batches (``spread_of``).

Claims:

* Small & Manley 1997 §5.3, Table 5: off-chip masking costs more than on-chip (304 vs 21
  cycles, 14.5x), on-chip more than a flag (21 vs 6, 3.5x);
* Small & Manley 1997 §5.4, Table 6: the optimistic schemes spend less time in
  synchronization than their pessimistic counterparts (one finding per pair);
* Small & Manley 1997 §6.4: the cli schemes lose serial data during long PIO handlers, the
  prioritized schemes do not;
* Massalin & Pu 1991, "Lock-free synchronization overhead": a lock-free operation costs
  less than the same operation under a lock (common/lf_cost_rows.h, common/lf_fifo_rows.h
  rows ``*_lf`` against ``*_spin`` / ``*_mutex`` hosted and ``*_mlock`` in the kernel: the
  unsynchronized operation with a real lock taken and released around it, measured by the
  same harness; ``ref_2x_lock_cmpxchg`` is not a lock - a release is a plain store - and
  decides nothing); in kernel code on the real CPU (the hosted port's boot) against the
  master lock; and at two threads on one object (``*_2t`` rows, hosted).

Public API: ``table5_findings``, ``table6_findings``, ``loss_finding``, ``mp_findings``,
``mp_kernel_findings``, ``mp_2t_findings``, ``spsc_ends_finding``; the spreads and verdicts
(``Spread``, ``spread_of``, ``compare_greater``) are base.py's, and document.py puts every
finding in the papers' order (``all_findings``).
"""
from __future__ import annotations

from dataclasses import dataclass



from .base import (CYCLES_1997, DASH, Finding, HW_ENVS_OFFCHIP, HW_ENVS_ONCHIP, MP, SM, Spread,
                   T6_1997, WHY_NOT_HW, cap_first, compare_greater, fmt_count, fmt_pct,
                   fmt_ratio, fmt_sig, fmt_spread, num, spread_of, spread_ratio)
from . import schemes
from .irqdata import IrqIndex, lost_frac, prim_source, worst_case
from .hosteddata import run_label, timing_runs


# ---------------------------------------------------------------------------------------
# where a primitive's rows come from


@dataclass
class Source:
    rows: dict[str, dict]    # name -> row
    env: str                 # "tcg", "hosted", ...
    label: str               # "tcg, 2 CPUs" (the Finding's env)


def _prims_side(prims: dict | None, side: str) -> Source | None:
    if not isinstance(prims, dict):
        return None
    info = (prims.get("sides") or {}).get(side)
    if not isinstance(info, dict):
        return None
    rows: dict[str, dict] = {}
    for r in prims.get("rows") or []:
        if isinstance(r, dict) and r.get("side") == side and r.get("kind", "prim") == "prim":
            rows.setdefault(str(r.get("name")), r)
    env = str(info.get("env") or ("hosted" if side == "hosted" else "?"))
    label = f"{env}, {info.get('cpus', '?')} CPUs"
    if side == "hosted" and (info.get("cpu_model") or prims.get("host_cpu_model")):
        label += f", {info.get('cpu_model') or prims.get('host_cpu_model')}"
    return Source(rows, env, label)


_IRQ_PRIM_NAMES = {"offchip": "pic_imr_write_restore", "onchip": "cli_sti",
                   "flag": "flag_set_clear"}


def _irq_side(ix: IrqIndex) -> Source | None:
    """The irq_prim rows of the boot that supplies Table 5, under the prims row names."""
    src = prim_source(ix)
    if src is None:
        return None
    rows = {}
    for p, name in _IRQ_PRIM_NAMES.items():
        r = ix.prim(src, p)
        if r is not None:
            rows[name] = r
    rec = ix.run(src)
    env = str(rec.get("env") or "?")
    return Source(rows, env, f"{env}, {rec.get('cpus') or '?'} CPUs ({src} boot)")


# ---------------------------------------------------------------------------------------
# Small & Manley 1997, Table 5


def _t5_finding(claim: str, then: str, sources: list[Source], pairs: list[tuple[str, str]],
                hw_envs: tuple[str, ...], stand_in: str = "") -> Finding:
    """The first source that measured one of ``pairs`` (num, den) in a hardware
    environment decides; else the first source that measured it at all is shown, not
    judged."""
    measured = []
    for s in sources:
        for n, d in pairs:
            a, b = spread_of(s.rows.get(n)), spread_of(s.rows.get(d))
            if a is not None and b is not None:
                measured.append((s, n, d, a, b))
                break
    for s, n, d, a, b in measured:
        if s.env in hw_envs:
            note = (f"{n} {fmt_spread(a)} vs {d} {fmt_spread(b)} TSC ticks, medians with their spread "
                    f"({a.how}); holds when the spreads are apart.")
            if stand_in and n != pairs[0][0]:
                note += " " + stand_in
            return Finding(SM, claim, then, f"{spread_ratio(a, b)} ({n} / {d})", s.label,
                           compare_greater(a, b), note)
    if measured:
        s, n, d, a, b = measured[0]
        why = WHY_NOT_HW.get(s.env, f"{s.env} is not a hardware environment for this claim")
        return Finding(SM, claim, then, f"{spread_ratio(a, b)} ({n} / {d})", s.label,
                       "not measurable here", cap_first(f"{why}; the claim is about hardware costs."))
    return Finding(SM, claim, then, DASH, "no data", "not measurable here",
                   "this run measured neither " + " nor ".join(f"{n}/{d}" for n, d in pairs)
                   + ".")


def table5_findings(prims: dict | None, ix: IrqIndex) -> list[Finding]:
    kernel, hosted, irq = _prims_side(prims, "kernel"), _prims_side(prims, "hosted"), \
        _irq_side(ix)
    ks = [s for s in (kernel, irq) if s is not None]
    c = CYCLES_1997
    off_on = _t5_finding(
        "off-chip masking (interrupt-controller write) costs more than on-chip (cli; sti)",
        f"Table 5, Pentium 120 MHz: {c['offchip']} vs {c['onchip']} cycles "
        f"({fmt_ratio(c['offchip'] / c['onchip'])}x)",
        ks, [("pic_imr_write_restore", "cli_sti")], HW_ENVS_OFFCHIP)
    on_flag = _t5_finding(
        "on-chip masking (cli; sti) costs more than setting a flag",
        f"Table 5, Pentium 120 MHz: {c['onchip']} vs {c['flag']} cycles "
        f"({fmt_ratio(c['onchip'] / c['flag'])}x)",
        ks + ([hosted] if hosted else []),
        [("cli_sti", "flag_set_clear"), ("pushf_popf", "flag_set_clear")], HW_ENVS_ONCHIP,
        stand_in="Hosted: pushf; popf stands in for cli; sti, which user mode cannot run.")
    return [off_on, on_flag]


# ---------------------------------------------------------------------------------------
# Small & Manley 1997, Table 6


PAIRS = (("spl-optim", "spl-pessim"), ("cli-optim", "cli-pessim"),
         ("tpr-optim", "tpr-pessim"))


def _pct_range(vals: list[float]) -> str:
    return (f"{fmt_pct(min(vals))}" if min(vals) == max(vals)
            else f"{fmt_sig(min(vals))}-{fmt_pct(max(vals))}")


def table6_findings(ix: IrqIndex) -> list[Finding]:
    out = []
    for opt, pess in PAIRS:
        if opt not in T6_1997 and not (ix.ok(opt) or ix.ok(pess)):
            continue    # tpr: no paper figure and not run: nothing to say
        ref_o, ref_p = T6_1997.get(opt), T6_1997.get(pess)
        then = (f"Table 6: {pess} {_pct_range(list(ref_p))} vs {opt} {_pct_range(list(ref_o))} "
                "of each second" if ref_o and ref_p else f"{DASH} (the paper had no CR8 scheme)")
        claim = f"the optimistic {opt} spends less time synchronizing than {pess}"
        po, pp, wls = [], [], []
        for w in ix.workloads():
            a = num((ix.load(opt, w) or {}).get("sync_pct"))
            b = num((ix.load(pess, w) or {}).get("sync_pct"))
            if a is not None and b is not None:
                po.append(a)
                pp.append(b)
                wls.append(w)
        if not wls:
            missing = [s for s in (opt, pess) if not ix.ok(s)] or [opt, pess]
            out.append(Finding(SM, claim, then, DASH, "no data", "not measurable here",
                               "no measured time in synchronization (sync_pct) for "
                               + " and ".join(missing) + "."))
            continue
        less = sum(1 for a, b in zip(po, pp) if a < b)
        more = sum(1 for a, b in zip(po, pp) if a > b)
        n = len(wls)
        verdict = "holds" if less == n else "reversed" if more == n else "within noise"
        today = (f"{pess} {_pct_range(pp)} vs {opt} {_pct_range(po)} measured; {opt} lower "
                 f"in {less} of {n} workloads")
        env = ix.env_of([opt, pess])
        note = ("Each workload is one measurement (no repeats): holds / reversed when every "
                "workload agrees, within noise when they disagree.")
        if "tcg" in env or "kvm-pvm" in env:
            note += (" Costs are the emulator's: the verdict is the ordering of the schemes "
                     "as run here, not hardware costs.")
        out.append(Finding(SM, claim, then, today, env, verdict, note))
    return out


# ---------------------------------------------------------------------------------------
# Small & Manley 1997, §6.4 data loss


CLI_SCHEMES = ("cli-pessim", "cli-optim")
PRIORITIZED = ("spl-pessim", "spl-optim", "cli-spl-pessim", "tpr-pessim", "tpr-optim")


def loss_finding(ix: IrqIndex) -> Finding:
    claim = ("the cli schemes lose serial characters during long PIO disk handlers; the "
             "prioritized schemes (spl, tpr, cli-spl) do not")
    then = ("§6.4: a 2 ms IDE PIO handler holds off 115.2 kbit/s serial for up to 28 "
            "characters, the FIFO holds 16: the cli schemes would lose data (argued, not "
            "measured)")

    def worst(s: str) -> tuple[float, dict] | None:
        r = worst_case(ix.losses(s))
        f = lost_frac(r) if r else None
        return (100.0 * f, r) if f is not None else None

    cli = {s: worst(s) for s in CLI_SCHEMES}
    pri = {s: worst(s) for s in PRIORITIZED}
    cli = {s: v for s, v in cli.items() if v is not None}
    pri = {s: v for s, v in pri.items() if v is not None}
    if not cli or not pri:
        return Finding(SM, claim, then, DASH, "no data", "not measurable here",
                       "the loss grid needs at least one cli scheme and one prioritized "
                       "scheme; this run has " + (", ".join(sorted(cli) + sorted(pri))
                                                  or "neither") + ".")
    cli_min, pri_max = min(v for v, _ in cli.values()), max(v for v, _ in pri.values())
    cli_max, pri_min = max(v for v, _ in cli.values()), min(v for v, _ in pri.values())
    if cli_min > pri_max:
        verdict = "holds"
    elif cli_max < pri_min:
        verdict = "reversed"
    else:
        verdict = "within noise"
    cells = {num(r.get("baud")) for _, r in list(cli.values()) + list(pri.values())}
    secs = {num(r.get("pio_sectors")) for _, r in list(cli.values()) + list(pri.values())}
    where = ("at " + "/".join(fmt_count(b) for b in sorted(x for x in cells if x))
             + " baud, " + "/".join(fmt_count(k) for k in sorted(x for x in secs
                                                                       if x is not None))
             + " sectors per PIO interrupt")
    today = ("lost: " + ", ".join(f"{s} {fmt_pct(v)}" for s, (v, _) in cli.items())
             + " vs " + ", ".join(f"{s} {fmt_pct(v)}" for s, (v, _) in pri.items())
             + f" ({where})")
    note = ("Worst case of each scheme's loss grid; each cell is the least loss of its "
            "repeated runs. Holds when every cli scheme lost more than every prioritized "
            "one, within noise when the ranges overlap.")
    base = []
    for s, (_, r) in list(cli.items()) + list(pri.items()):
        r0 = next((x for x in ix.losses(s) if num(x.get("baud")) == num(r.get("baud"))
                   and num(x.get("pio_sectors")) == 0), None)
        f0 = lost_frac(r0) if r0 else None
        if f0 is not None:
            base.append(100.0 * f0)
    if base:
        note += (f" With no disk load (0 sectors) at the same rate the schemes lost "
                 f"{fmt_sig(min(base))}-{fmt_pct(max(base))}: loss "
                 "without PIO handlers is the emulator's and the host's noise.")
    return Finding(SM, claim, then, today, ix.env_of(list(cli) + list(pri)), verdict, note)


# ---------------------------------------------------------------------------------------
# Massalin & Pu 1991, lock-free cost next to no synchronization


# (operation, nosync row, lf row, prefix of its locked rows: <prefix>_<lock>)
MP_PAIRS = (
    ("stack push + pop", "mp_stack_push_pop_nosync", "mp_stack_push_pop_lf",
     "mp_stack_push_pop"),
    ("array stack push + pop", "mp_astack_push_pop_nosync", "mp_astack_push_pop_lf",
     "mp_astack_push_pop"),
    ("counter increment", "mp_counter_inc_nosync", "mp_counter_inc_lf", "mp_counter_inc"),
    ("list insert + delete", "mp_list_insert_delete_nosync", "mp_list_insert_delete_lf",
     "mp_list_insert_delete"),
    ("spsc queue enqueue + dequeue", "mp_fifo_enq_deq_nosync", "mp_fifo_spsc_enq_deq_lf",
     "mp_fifo_enq_deq"),
)
# the locks the cost programs put around the nosync operations (bench/cost_locks.h, the
# kernel's kernel/exp/lf_cost.c), and what each is
MP_LOCKS = {
    "spin": "a TTAS spin lock (xchg to take, release store to give back; inline)",
    "mutex": "pthread_mutex_lock/unlock",
    "mlock": "the kernel's master lock (MLOCK_TAS: the scheme's masking pair around xchg and "
             "a release store; statistics off)",
}
LOCK_PAIR = "ref_2x_lock_cmpxchg"     # two lock cmpxchg: a reference, no verdict rests on it
# two threads on one object (bench/lf_stack_cost.c): <prefix>_<variant>_2t
MP_2T = (("counter increment", "mp_counter_inc"), ("stack push + pop", "mp_stack_push_pop"),
         ("array stack push + pop", "mp_astack_push_pop"))


def _locked(rows: dict, prefix: str, suffix: str = "") -> list[tuple[str, str, Spread]]:
    """(lock, row name, spread) of each lock measured for ``prefix``, cheapest median first."""
    out = []
    for lock in MP_LOCKS:
        name = f"{prefix}_{lock}{suffix}"
        sp = spread_of(rows.get(name))
        if sp is not None:
            out.append((lock, name, sp))
    return sorted(out, key=lambda x: x[2].mid)


def mp_findings(prims: dict | None) -> list[Finding]:
    claim_of = "lock-free {op} costs less than the same operation under a lock"
    then = ("cost table: lock-free overhead small next to locking (the figures are lost "
            "in the stored text)")
    sources = [s for s in (_prims_side(prims, "hosted"), _prims_side(prims, "kernel"))
               if s is not None]
    out = []
    for op, nosync, lf, prefix in MP_PAIRS:
        claim = claim_of.format(op=op)
        got = None
        for s in sources:
            a, locks = spread_of(s.rows.get(lf)), _locked(s.rows, prefix)
            if a is not None and locks:
                got = (s, a, locks)
                if s.env in HW_ENVS_ONCHIP:
                    break
        if got is None:
            if any(spread_of(s.rows.get(lf)) for s in sources):
                out.append(Finding(MP, claim, then, DASH, "no data", "not measurable here",
                                   f"{lf} was measured but no locked row ({prefix}_"
                                   f"{'/'.join(MP_LOCKS)}) on the same side."))
            continue    # the cost table did not run: no line
        s, a, locks = got
        b = spread_of(s.rows.get(nosync))
        today = f"{lf} {fmt_spread(a)} vs under " + ", ".join(
            f"{lock} {fmt_spread(sp)} ({spread_ratio(a, sp)})" for lock, _, sp in locks) + " TSC ticks"
        if b is not None:
            today += f"; nosync {fmt_spread(b)}"
        if s.env not in HW_ENVS_ONCHIP:
            out.append(Finding(MP, claim, then, today, s.label, "not measurable here",
                               cap_first(WHY_NOT_HW.get(s.env, s.env) + "; the claim is about "
                                    "hardware costs and no hosted row measured it.")))
            continue
        lock, name, best = locks[0]
        verdict = compare_greater(best, a)
        out.append(Finding(MP, claim, then, today, s.label, verdict,
                           f"Under a lock = the unsynchronized operation with the lock taken "
                           f"before and released after it (a push + pop pair takes it twice, "
                           f"as the lock-free pair does two CAS), uncontended, timed by the "
                           f"same loop in the same function as {lf}. Judged against the "
                           f"cheapest lock measured, {lock} ({name}: {MP_LOCKS[lock]}): holds "
                           f"when the lock-free spread lies below it, reversed when above; "
                           f"spreads: {a.how}. Two lock cmpxchg ({LOCK_PAIR}) is no lock - "
                           f"a release is a plain store - and decides nothing."))
    return out


def mp_2t_findings(prims: dict | None) -> list[Finding]:
    """Two threads hammering one object (hosted, bench/lf_stack_cost.c): lock-free against
    the same operation under each lock, per operation of each thread."""
    s = _prims_side(prims, "hosted")
    if s is None:
        return []
    out = []
    for op, prefix in MP_2T:
        a, locks = spread_of(s.rows.get(f"{prefix}_lf_2t")), _locked(s.rows, prefix, "_2t")
        if a is None or not locks:
            continue
        lock, name, best = locks[0]
        today = (f"{prefix}_lf_2t {fmt_spread(a)} vs under " + ", ".join(
            f"{k} {fmt_spread(sp)} ({spread_ratio(a, sp)})" for k, _, sp in locks)
            + " TSC ticks per operation of each thread")
        out.append(Finding(
            MP, f"at two threads on one object, lock-free {op} costs less per operation "
            "than under a lock", f"{DASH} (the paper's cost table is uncontended)", today,
            s.label, compare_greater(best, a),
            f"Two threads on two CPUs each do a fixed number of operations on the same "
            f"object, started together; a sample is the time until both are done, per "
            f"operation (bench/lf_stack_cost.c; inputs: the operation count, the runs, the "
            f"two CPUs). Judged against the cheapest lock, {lock} ({name}: "
            f"{MP_LOCKS[lock]}); holds when the spreads are apart ({a.how}). On a shared "
            f"machine a descheduled lock holder stalls the other thread: the spreads are "
            f"wide."))
    return out


def mp_kernel_findings(hosted: dict | None) -> list[Finding]:
    """Kernel code on the real CPU (the hosted port's lf_cost / lf_fifo_cost boot of the
    default scheme at its smallest timing CPU count, as the hosted report's Massalin & Pu
    table): lock-free against the same operation under the kernel's master lock."""
    recs = sorted(timing_runs(hosted),
                  key=lambda r: (r.get("scheme") != schemes.DEFAULT_SCHEME,
                                 num(r.get("cpus")) or 0))
    rec = next((r for r in recs if any(x.get("kind") == "prim" for x in r.get("rows") or [])),
               None)
    if rec is None:
        return []
    rows = {str(x.get("name")): x for x in rec.get("rows") or [] if x.get("kind") == "prim"}
    env = f"{run_label(rec)}, scheme {rec.get('scheme')}"
    out = []
    for op, nosync, lf, prefix in MP_PAIRS:
        a, m = spread_of(rows.get(lf)), spread_of(rows.get(f"{prefix}_mlock"))
        if a is None or m is None:
            continue
        today = f"{lf} {fmt_spread(a)} vs under the master lock {fmt_spread(m)} TSC ticks ({spread_ratio(a, m)})"
        b = spread_of(rows.get(nosync))
        if b is not None:
            today += f"; nosync {fmt_spread(b)}"
        out.append(Finding(
            MP, f"in kernel code, lock-free {op} costs less than the same operation under "
            "the master lock", "cost table: lock-free overhead small next to locking (the "
            "figures are lost in the stored text)", today, env, compare_greater(m, a),
            f"The kernel's lf_cost / lf_fifo_cost experiments as a Linux process (the hosted "
            f"port: kernel code on the real CPU): {prefix}_mlock is the unsynchronized "
            f"operation under {MP_LOCKS['mlock']}, uncontended, timed by the same loop in the "
            f"same function as {lf}. One boot: spreads are min..p99 over its batches; holds "
            f"when they are apart."))
    for op, prefix in MP_2T:
        a, m = spread_of(rows.get(f"{prefix}_lf_2t")), spread_of(rows.get(f"{prefix}_mlock_2t"))
        if a is None or m is None:
            continue
        out.append(Finding(
            MP, f"in kernel code at two CPUs on one object, lock-free {op} costs less per "
            "operation than under the master lock", f"{DASH} (the paper's cost table is "
            "uncontended)", f"{prefix}_lf_2t {fmt_spread(a)} vs {prefix}_mlock_2t {fmt_spread(m)} TSC ticks "
            f"per operation of each CPU ({spread_ratio(a, m)})", env, compare_greater(m, a),
            "The kernel's lf_cost experiment on the hosted port: CPU 0 and CPU 1 (its "
            "interrupt handler, through arch_call_post) each do a fixed number of operations "
            "on the same object, started together; a sample is the time until both are "
            "done, per operation (inputs: the operation count, the runs). One boot: spreads "
            "are min..p99 over its runs; holds when they are apart."))
    return out


SPSC_ROWS = {"plain": "mp_fifo_spsc_enq_deq_lf", "ends": "mp_fifo_spsc_ends_put_get_lf",
             "batch": "mp_fifo_spsc_burst32_enq_deq_lf", "chain": "ref_index_chain"}


def spsc_ends_finding(prims: dict | None) -> list[Finding]:
    """The spsc pair through ends (each side's index in its thread's variable) against the
    plain pair that reloads it from the queue (issue 13 item 2), on the real CPU only;
    with the batch row and the store-to-load chain beside them, in ns when the side's TSC
    frequency is known."""
    s = _prims_side(prims, "hosted")
    if s is None:
        return []
    sp = {k: spread_of(s.rows.get(n)) for k, n in SPSC_ROWS.items()}
    if sp["plain"] is None or sp["ends"] is None:
        return []
    hz = num(((prims or {}).get("sides") or {}).get("hosted", {}).get("tsc_hz"))

    def ns(x: Spread) -> str:
        return f" = {x.mid * 1e9 / hz:.2f} ns" if hz else ""
    today = (f"TSC ticks per pair: through ends {fmt_spread(sp['ends'])}{ns(sp['ends'])} vs plain "
             f"{fmt_spread(sp['plain'])}{ns(sp['plain'])} ({spread_ratio(sp['ends'], sp['plain'])})")
    if sp["batch"] is not None:
        today += f"; batches of 32: {fmt_spread(sp['batch'])}{ns(sp['batch'])} per element"
    if sp["chain"] is not None:
        today += f"; one index's store-to-load chain {fmt_spread(sp['chain'])}"
    return [Finding(
        MP, "spsc queue: a side that keeps its own index (lf_fifo_put_spsc / "
        "lf_fifo_get_spsc through ends) pays less per enqueue + dequeue than the plain "
        "call, which reloads the index it stored", DASH, today, s.label,
        compare_greater(sp["plain"], sp["ends"]),
        f"Each element is still published by its own index store; the plain pair waits for "
        f"the store-to-load forwarding of its index on every call (the chain row). The bar "
        f"is 1.5 ns per pair. Both pairs are timed in functions of their own "
        f"(common/lf_fifo_rows.h). Holds when the spreads do not overlap; spreads: "
        f"{sp['ends'].how}.")]


# ---------------------------------------------------------------------------------------




__all__ = ["table5_findings",
           "table6_findings", "loss_finding", "mp_findings", "mp_kernel_findings",
           "mp_2t_findings",
           "spsc_ends_finding"]
