/*
 * spl/crit-pessim.h - crit_enter/crit_leave of the pessimistic schemes (SPL_OPTIMISTIC 0),
 * included by their headers: splhigh, nestable by a depth count.
 */
#ifndef KSYNC_SPL_CRIT_PESSIM_H
#define KSYNC_SPL_CRIT_PESSIM_H

static inline spl_t splhigh(void) { return splraise(IPL_HIGH); }

/* The paper's crit_sec_enter/leave: splhigh, nestable by a depth count. */
static inline void crit_enter(void)
{
	spl_t s = splhigh();
	struct spl_cpu *c = spl_self();
	if (c->crit_depth++ == 0) {
		c->crit_saved = s;
		spl_census_open();	/* KSYNC_WINDOWS builds (spl.h); empty otherwise */
	}
}
static inline void crit_leave(void)
{
	struct spl_cpu *c = spl_self();
	KASSERT(c->crit_depth > 0);
	if (--c->crit_depth == 0) {
		spl_census_close(true);
		splx(c->crit_saved);	/* an interrupt the section held arrives here */
		spl_census_unmasked();
	}
}
static inline unsigned spl_effective(struct spl_cpu *c) { return c->ipl; }

#endif
