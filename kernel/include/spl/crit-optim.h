/*
 * spl/crit-optim.h - crit_enter/crit_leave of the optimistic schemes (SPL_OPTIMISTIC 1:
 * spl-optim, cli-optim, tpr-optim), included by their headers. Small & Manley 1997
 * section 3.2 (crit_sec_enter/leave), Stodolsky et al. 1993.
 */
#ifndef KSYNC_SPL_CRIT_OPTIM_H
#define KSYNC_SPL_CRIT_OPTIM_H

static inline spl_t splhigh(void) { return splraise(IPL_HIGH); }

/* The paper's crit_sec_enter/leave in the optimistic schemes: the flag itself (its
 * in_crit_sec) beside the level - every source is held while it is set (the interrupt
 * entries defer as if the level were IPL_HIGH). Leave: clear the flag, then check the
 * pending bits. No deferral can fall between the two:
 * what the count held is already pending (and held by the fallback - spl-optim masked
 * its line, cli-optim cleared IF, tpr-optim raised CR8 - so it cannot arrive again), and
 * anything arriving after the clearing sees the flag clear. (Unlike splx in spl-optim,
 * a new interrupt of a level between the current one and a pending one may run first in
 * that one-instruction window; splx keeps the atomic lowering.) */
void spl_crit_slow(struct spl_cpu *c);	/* run what became runnable at the current level */
/* The flag is only stored and the nesting count only touched when sections nest: the
 * loads feed predicted branches, not the stores, so no read-modify-write chain runs
 * through memory on the common path (two stores and three loads). */
static inline void crit_enter(void)
{
	struct spl_cpu *c = spl_self();
	if (__builtin_expect(c->crit_flag != 0, 0)) {
		c->crit_nest++;
	} else {
		c->crit_flag = 1;
		arch_win_soft_open(ARCH_WIN_CRIT);	/* KSYNC_WINDOWS builds; empty otherwise */
	}
	ksync_compiler_barrier();	/* the section's accesses stay after the flag */
}
static inline void crit_leave(void)
{
	struct spl_cpu *c = spl_self();
	ksync_compiler_barrier();	/* ... and before its clearing */
	if (__builtin_expect(c->crit_nest != 0, 0)) {
		c->crit_nest--;
		return;
	}
	KASSERT(c->crit_flag);
	c->crit_flag = 0;
	ksync_compiler_barrier();	/* the check reads pending after the store */
	if (c->pending & SPL_RUNNABLE(c->ipl))
		spl_crit_slow(c);
	arch_win_soft_close(ARCH_WIN_CRIT);	/* after the replay: it ran inside the window */
}
/* The level that holds sources back now: IPL_HIGH inside crit_enter. */
static inline unsigned spl_effective(struct spl_cpu *c) { return c->crit_flag ? IPL_HIGH : c->ipl; }

#endif
