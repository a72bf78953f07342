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
/* crit_flag is the paper's in_crit_sec and the nesting count in one word: 0 outside,
 * 1 in the outermost section, 1 + k with k sections nested inside it (every reader asks
 * only "nonzero?"). The outermost enter stores 1 and the outermost leave stores 0 - values
 * that do not depend on the load before them, so the common path runs no
 * read-modify-write chain through memory; only a nested enter or leave adds or subtracts.
 * The leave's check of what became runnable reads the pending bits first and computes
 * what may run only when some are set (the common case has none): one load and a
 * predicted branch. Per path: enter one load and one store, leave two loads and one
 * store. */
static inline void crit_enter(void)
{
	struct spl_cpu *c = spl_self();
	uint32_t f = c->crit_flag;
	if (__builtin_expect(f != 0, 0)) {
		c->crit_flag = f + 1;	/* nested: only this CPU writes it (spl.h) */
	} else {
		c->crit_flag = 1;
		arch_win_soft_open(ARCH_WIN_CRIT);	/* KSYNC_WINDOWS builds; empty otherwise */
		spl_census_open();	/* the same builds (spl.h) */
	}
	ksync_compiler_barrier();	/* the section's accesses stay after the flag */
}
static inline void crit_leave(void)
{
	struct spl_cpu *c = spl_self();
	ksync_compiler_barrier();	/* ... and before its clearing */
	uint32_t f = c->crit_flag;
	if (__builtin_expect(f != 1, 0)) {
		KASSERT(f != 0);	/* a leave without an enter */
		c->crit_flag = f - 1;	/* nested: the outer section goes on */
		return;
	}
	spl_census_close(false);	/* still flagged: a deferral has marked it; the replay is not in it */
	c->crit_flag = 0;
	ksync_compiler_barrier();	/* the check reads pending after the store */
	uint32_t p = c->pending;
	if (__builtin_expect(p != 0, 0) && (p & SPL_RUNNABLE(c->ipl)))
		spl_crit_slow(c);
	arch_win_soft_close(ARCH_WIN_CRIT);	/* after the replay: it ran inside the window */
}
/* The level that holds sources back now: IPL_HIGH inside crit_enter. */
static inline unsigned spl_effective(struct spl_cpu *c) { return c->crit_flag ? IPL_HIGH : c->ipl; }

#endif
