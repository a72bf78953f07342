/*
 * spl/spl-optim.h - scheme spl-optim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=spl-optim -> -DKSYNC_SPL_HEADER="spl/spl-optim.h"). Small & Manley 1997 section 3.2; NetBSD's lazy spl.
 * Slow paths and interrupt entry: kernel/spl/spl-optim.c.
 */
#ifndef KSYNC_SPL_SPL_OPTIM_H
#define KSYNC_SPL_SPL_OPTIM_H

#define KSYNC_SCHEME "spl-optim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 1
#define SPL_REPLAY_ORDERED 1
#define SPL_HANDLERS_NEST 1
#define SPL_HOLDS_ALL 0
#define SPL_RUN_AT_NONE_ONLY 0
#define SPL_USES_TPR 0

/* Raise: one xor of the level field, 8 bytes wide like the splx below that reads the
 * whole word (a 4-byte store followed by an 8-byte load would miss store forwarding and
 * stall). A single instruction, so this CPU's interrupts see the word before or after;
 * a handler leaves the level as it found it, so the field is still s at the xor, and
 * pending bits a deferral set meanwhile are kept. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		arch_cpu_local_xor64(&c->istate, (uint64_t)(s ^ level) << 32);
		/* the tracker's soft window (KSYNC_WINDOWS builds; empty otherwise) */
		if (s < IPL_CLOCK && level >= IPL_CLOCK)
			arch_win_soft_open(ARCH_WIN_LEVEL);
	}
	return s;
}
/* Lower only if nothing pending above the new level, in one step (NetBSD's cmpxchg8b on
 * ci_istate): an unlocked cmpxchg is atomic with respect to this CPU's interrupts, so a
 * deferral cannot slip in between the check and the store. Otherwise the slow path. */
static inline void splx_lower(struct spl_cpu *c, spl_t s);
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
#ifdef KSYNC_WINDOWS
	/* the tracker's soft window closes once the clock's level is released (what the
	 * lowering replays is inside it) */
	bool clock_held = c->ipl >= IPL_CLOCK && SPL_LEVEL(s) < IPL_CLOCK;
	splx_lower(c, s);
	if (clock_held)
		arch_win_soft_close(ARCH_WIN_LEVEL);
#else
	splx_lower(c, s);
#endif
}
static inline void splx_lower(struct spl_cpu *c, spl_t s)
{
	uint64_t old = c->istate;
	for (;;) {
		if ((uint32_t)old & SPL_RUNNABLE(s)) {
			spl_lower_slow(c, s);
			return;
		}
		uint64_t want = ((uint64_t)s << 32) | (uint32_t)old;
		/* CPU-local (no lock prefix): only this CPU (and its interrupts) writes istate */
		uint64_t seen = arch_cpu_local_cas64(&c->istate, old, want);
		if (seen == old)
			return;
		old = seen;
	}
}

#include "spl/crit-optim.h"

#endif
