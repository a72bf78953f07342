/*
 * spl/tpr-pessim.h - scheme tpr-pessim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=tpr-pessim -> -DKSYNC_SPL_HEADER="spl/tpr-pessim.h"). Not in the paper: the x86 task priority (CR8) as the level.
 * Slow paths and interrupt entry: kernel/spl/tpr-pessim.c.
 */
#ifndef KSYNC_SPL_TPR_PESSIM_H
#define KSYNC_SPL_TPR_PESSIM_H

#define KSYNC_SCHEME "tpr-pessim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 0
#define SPL_REPLAY_ORDERED 1
#define SPL_HANDLERS_NEST 1
#define SPL_HOLDS_ALL 0
#define SPL_RUN_AT_NONE_ONLY 0
#define SPL_USES_TPR 1

/* The level is the x86 task priority (CR8): prioritised masking at on-chip cost. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		arch_tpr_set(spl_tpr_class[level]);
		c->ipl = level;
	}
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	if (s < c->ipl) {
		c->ipl = s;
		if (c->pending & SPL_RUNNABLE(s)) {
			spl_lower_slow(c, s);
			return;
		}
		arch_tpr_set(spl_tpr_class[s]);
	}
}


#include "spl/crit-pessim.h"

#endif
