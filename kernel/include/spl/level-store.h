/*
 * spl/level-store.h - splraise/splx of cli-optim and tpr-optim, included by their headers:
 * the logical level is one stored word; raise stores it, lower stores then checks the
 * pending bits (Small & Manley 1997 section 3.4's soft level). spl-optim lowers with a
 * cmpxchg instead (spl/spl-optim.h).
 */
#ifndef KSYNC_SPL_LEVEL_STORE_H
#define KSYNC_SPL_LEVEL_STORE_H

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

#endif
