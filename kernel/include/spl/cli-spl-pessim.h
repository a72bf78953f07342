/*
 * spl/cli-spl-pessim.h - scheme cli-spl-pessim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=cli-spl-pessim -> -DKSYNC_SPL_HEADER="spl/cli-spl-pessim.h"). Small & Manley 1997 section 7.1 (their proposal).
 * Slow paths and interrupt entry: kernel/spl/cli-spl-pessim.c.
 */
#ifndef KSYNC_SPL_CLI_SPL_PESSIM_H
#define KSYNC_SPL_CLI_SPL_PESSIM_H

#define KSYNC_SCHEME "cli-spl-pessim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 0
#define SPL_REPLAY_ORDERED 0
#define SPL_HANDLERS_NEST 1
#define SPL_HOLDS_ALL 1
#define SPL_RUN_AT_NONE_ONLY 0
#define SPL_USES_TPR 0

/* Critical sections: cli/sti (the cookie carries IF); handlers: the controller mask. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	if (level == IPL_NONE)			/* holds nothing: no cli */
		return c->ipl | (arch_irq_enabled() ? SPL_COOKIE_IF : 0);
	irqkey_t k = arch_irq_save();
	spl_t s = c->ipl | (arch_irqkey_on(k) ? SPL_COOKIE_IF : 0);
	if (level > c->ipl)
		c->ipl = level;
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	c->ipl = SPL_LEVEL(s);
	if (c->pending & SPL_RUNNABLE(SPL_LEVEL(s))) {
		spl_lower_slow(c, s);
		return;
	}
	if (s & SPL_COOKIE_IF)
		arch_irq_enable();
}


#include "spl/crit-pessim.h"

#endif
