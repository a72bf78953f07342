/*
 * spl/cli-pessim.h - scheme cli-pessim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=cli-pessim -> -DKSYNC_SPL_HEADER="spl/cli-pessim.h"). Small & Manley 1997 section 3.3.
 * Slow paths and interrupt entry: kernel/spl/cli-pessim.c.
 */
#ifndef KSYNC_SPL_CLI_PESSIM_H
#define KSYNC_SPL_CLI_PESSIM_H

#define KSYNC_SCHEME "cli-pessim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 0
#define SPL_REPLAY_ORDERED 0
#define SPL_HANDLERS_NEST 0
#define SPL_HOLDS_ALL 1
#define SPL_RUN_AT_NONE_ONLY 1
#define SPL_USES_TPR 0

/* IF is off whenever the level is above IPL_NONE (handlers run at IPL_HIGH with IF off),
 * so a raise from a level above IPL_NONE needs no pushf. A raise from IPL_NONE reads IF
 * first (pushf; cli) and the cookie carries it (SPL_COOKIE_IF): the caller may have masked
 * already (arch_irq_save, a trap's entry), and the kernel's master locks take a critical
 * section inside such regions (the heap from the scheduler, an address space from the
 * page fault) - an unconditional sti at the matching splx would turn interrupts, and
 * preemption, back on inside them. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		if (s == IPL_NONE && arch_irqkey_on(arch_irq_save()))
			s |= SPL_COOKIE_IF;
		c->ipl = level;
	}
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	unsigned l = SPL_LEVEL(s);
	if (l < c->ipl) {
		if (c->pending & SPL_RUNNABLE(l)) {
			spl_lower_slow(c, s);
			return;
		}
		c->ipl = l;
		if (s & SPL_COOKIE_IF)
			arch_irq_enable();
	}
}


#include "spl/crit-pessim.h"

#endif
