/*
 * spl/cli-optim.h - scheme cli-optim: its properties and inline fast path, included by spl.h
 * only (make SCHEME=cli-optim -> -DKSYNC_SPL_HEADER="spl/cli-optim.h"). Small & Manley 1997 section 3.4.
 * Slow paths and interrupt entry: kernel/spl/cli-optim.c.
 */
#ifndef KSYNC_SPL_CLI_OPTIM_H
#define KSYNC_SPL_CLI_OPTIM_H

#define KSYNC_SCHEME "cli-optim"
/* SPL_REPLAY_ORDERED: the soft-level schemes replay in software from the pending bits
 * (highest bit first) and the tpr schemes let the local APIC deliver by priority class;
 * the 8259A schemes leave the order to the controllers (the 8259A's fixed line priority
 * against the LAPIC timer), which the kernel does not choose. SPL_HANDLERS_NEST: every
 * scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#define SPL_OPTIMISTIC 1
#define SPL_REPLAY_ORDERED 0
#define SPL_HANDLERS_NEST 0
#define SPL_HOLDS_ALL 1
#define SPL_RUN_AT_NONE_ONLY 1
#define SPL_USES_TPR 0

/* Raise: one store of the logical level. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s)
		c->ipl = level;
	return s;
}
/* Store, then check. Safe here without the cmpxchg: once something is pending, nothing
 * at or below the level that deferred it can arrive (cli-optim resumed the section with
 * IF clear; tpr-optim raised CR8), so no deferral can fall between the store and the
 * check, and an interrupt that arrives after the store sees the new level. */
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	c->ipl = s;
	ksync_compiler_barrier();	/* the check reads pending after the store */
	if (c->pending & SPL_RUNNABLE(s))
		spl_lower_slow(c, s);
}

#include "spl/crit-optim.h"

#endif
