/*
 * spl/spl-pessim.h - scheme spl-pessim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=spl-pessim -> -DKSYNC_SPL_HEADER="spl/spl-pessim.h"). Small & Manley 1997 section 3.1.
 * Slow paths and interrupt entry: kernel/spl/spl-pessim.c.
 */
#ifndef KSYNC_SPL_SPL_PESSIM_H
#define KSYNC_SPL_SPL_PESSIM_H

#define KSYNC_SCHEME "spl-pessim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 0
#define SPL_REPLAY_ORDERED 0
#define SPL_HANDLERS_NEST 1
#define SPL_HOLDS_ALL 0
#define SPL_RUN_AT_NONE_ONLY 0
#define SPL_USES_TPR 0

/* Every raise and every lower writes the off-chip controller's mask (with IF off around
 * the update, as the BSD spl implementations did: the mask is several registers). */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		/* IF off while the mask and the level change, so a handler never sees (or
		 * restores) one without the other; mask first, then the level */
		irqkey_t k = arch_irq_save();
		spl_mask_setlevel(c, level);
		c->ipl = level;
		arch_irq_restore(k);
	}
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	if (s < c->ipl) {
		irqkey_t k = arch_irq_save();
		c->ipl = s;
		spl_mask_setlevel(c, s);
		arch_irq_restore(k);		/* what the mask held arrives here */
		if (c->pending & SPL_RUNNABLE(s))
			spl_lower_slow(c, s);
	}
}


#include "spl/crit-pessim.h"

#endif
