/*
 * mlock.h - master locks: spin locks held with this CPU's interrupts masked (issue 11).
 *
 * Hartman & Ousterhout, Sprite, section 2: "A master lock is simply a spin lock that is
 * acquired with interrupts disabled. If a master lock is already in use when an attempt
 * is made to grab it, then the processor retries the locking operation until it
 * succeeds." Section 4 defines its statistics: at most one miss per hit.
 *
 * Three spinning algorithms a reader would compare, chosen per lock at init:
 *   MLOCK_TAS     test-and-test-and-set (one xchg uncontended; unfair, the cache line
 *                 bounces among all spinners at every release);
 *   MLOCK_TICKET  ticket lock (one xadd; FIFO; every waiter spins on the same word);
 *   MLOCK_MCS     Mellor-Crummey & Scott's queue lock (one xchg to enter, one cmpxchg to
 *                 leave; FIFO; each waiter spins on its own per-CPU node).
 * Two ways to mask, both blocking and not recursive:
 *   mlock_lock / mlock_unlock                     through the running interrupt scheme
 *       (crit_enter/crit_leave: a flag in the optimistic schemes, the controller mask or
 *       cli in the pessimistic ones - Small & Manley's choice is the kernel's choice);
 *   mlock_lock_irqsave / mlock_unlock_irqrestore  the CPU's own mask (arch_irq_save), for
 *       locks taken where interrupts are already off or by handlers that every scheme
 *       must keep out (the scheduler's sched_Mutex, the page pool, the heap; the console is
 *       a raw spin lock below the master locks: spinlock.h).
 * Master locks are for short sections that never sleep: sleeping (sched_sleep,
 * thread_yield, a monitor acquire) while one is held panics naming it (mlock_assert_none).
 * A CPU holds at most MLOCK_NEST_MAX of them at once.
 *
 * Bad input panics naming the class, the instance's init site, the holder (CPU and
 * thread) and both call sites: release by a CPU that does not hold the lock, recursion.
 *
 * Fields are written by the holder only (it is the lock that protects them) unless
 * marked. Who holds a lock is known from the per-CPU held lists (struct kcpu: the locks a
 * CPU holds, innermost last): a release checks that the lock is this CPU's innermost
 * (else the slow path looks further down the list, and panics if it is not there), the
 * recursion check (contended path only) looks for it in the list, and the messages find
 * the holding CPU in the others' lists. No holder word is written on the fast path.
 */
#ifndef KSYNC_MLOCK_H
#define KSYNC_MLOCK_H

#include "lockstat.h"
#include <ksync/atomic.h>

enum mlock_algo { MLOCK_TAS, MLOCK_TICKET, MLOCK_MCS, MLOCK_NALGOS };
#define MLOCK_NEST_MAX 8

struct mcs_node {
	struct mcs_node *next;	/* set by the successor after its xchg; read by the holder */
	uint32_t locked;	/* 1 while waiting; 0 written by the predecessor at hand-off */
} __attribute__((aligned(64)));

/* Where a master lock's statistics live (issue 27). A contended lock's word is what its
 * waiters spin on (test-and-set, ticket), so its cache line is shared with them while it
 * is held, and every line the holder touches inside the critical section that another
 * CPU wrote last is a transfer that lengthens the section of a lock that is, by being
 * contended, the bottleneck. Measured on the hosted port (AMD EPYC, 2 vCPUs, cswitch under
 * Figure 9's configuration, sched_Mutex's acquisitions that had to spin, off -> counts):
 * a contended acquisition's figures written into the lock after its spin (the previous
 * design): 24 % -> 50 %; the counters in a line of their own, 64 bytes from the word:
 * 32 % -> 47 %; the layout below: 27..33 % -> 41 % (the rest is not explained yet;
 * docs/locks.md). So:
 *   - what only the holder's CPU needs between its acquire and its release - the site,
 *     the stamps, a contended acquisition's spins and wait, whether it migrated - is in
 *     this CPU's slot for the lock's depth (struct mlock_hstat, beside the held list):
 *     local lines, never in the lock;
 *   - the instance's counters (hits, migrations, the last holder's CPU) are in the lock
 *     word's own line, read right after the acquisition (the line has just arrived) and
 *     written right before the release store, which needs that line exclusively anyway:
 *     the counters ride on the release's own transfer - unless a waiter spins on that
 *     line (a ticket taken beyond ours: mlock_waited_on). Then a store before the release
 *     pulls the line back from the spinner, a transfer inside the section, so the hit and
 *     migration go to this CPU's shard after the release instead (hosted, cswitch: the
 *     counting cost +20.6 % -> +10.2 % of time per operation; docs/locks.md).
 * Nothing is committed to a shard inside the section: a miss's figures and a time go to
 * this CPU's shard after the word is released, before the mask is lifted. */
struct mlock {
	union {
		uint32_t tas;				/* MLOCK_TAS: 0 free, 1 held */
		struct { uint32_t next, serving; } tk;	/* MLOCK_TICKET: next by xadd; serving
							   written by the holder at release */
		struct mcs_node *tail;			/* MLOCK_MCS: last waiter (xchg/cmpxchg) */
	} u;
	uint8_t algo;			/* enum mlock_algo: set at init */
	uint16_t last_cpu;		/* CPU + 1 of the previous holder (the holder, before its
					   release store) */
	struct lockstat_inst st;	/* hits and migrations (the holder, before its release
					   store); its class's list (lockstat.h) */
	struct mcs_node *mcs_mine;	/* MLOCK_MCS: the holder's node */
	const struct lock_class *cls;	/* set at init */
	const char *init_site;		/* set at init */
};

/* A held master lock's statistics on its holder's CPU: slot d of the CPU's row is the
 * lock at depth d of its held list (struct kcpu); written and read by that CPU only,
 * interrupts masked (messages of other CPUs read the site, racily, for a panic). */
struct mlock_hstat {
	const char *site;		/* the acquire site (recorded while statistics are on) */
	uint64_t t_acq;			/* TSC: the hold's start (timing mode), 0 if not taken */
	uint64_t t_mask;		/* TSC: the mask's start (timing mode) */
	uint64_t spins, wait;		/* a contended acquisition's (missed) */
	uint8_t mode;			/* the statistics mode at the acquire if it was on: the
					   release uses it (and clears it) if statistics are on
					   then, so the acquire's figures are used only by its own
					   release (a lock held while the mode goes on -> off and
					   another acquired at its depth while it goes off -> on
					   may be counted with the older slot's figures) */
	uint8_t missed, migrated;
};
struct mlock_hstat_row {
	struct mlock_hstat s[MLOCK_NEST_MAX];
} __attribute__((aligned(64)));
extern struct mlock_hstat_row mlock_hstat[MAX_CPUS];

/* A static lock: list it with LOCKSTAT_STATIC(var) (lockstat.h). */
#define MLOCK_INIT(cls_, algo_) { .algo = (algo_), .cls = &(cls_), .init_site = LOCK_SITE }

const char *mlock_algo_name(unsigned algo);
int mlock_algo_parse(const char *name);	/* KSYNC_EINVAL if unknown */

/* A lock created at run time: joins its class's list of instances (counted created);
 * mlock_destroy folds its counts into the class and takes it off the list.
 * KSYNC_EINVAL for a bad algorithm or NULL. */
int mlock_init_at(struct mlock *l, const struct lock_class *c, unsigned algo, const char *site);
#define mlock_init(l, c, algo) mlock_init_at((l), (c), (algo), LOCK_SITE)
/* Panics if held. */
void mlock_destroy(struct mlock *l);

/* ---- the fast path (inline); contention, statistics and errors go out of line ---------- */

extern struct mcs_node mlock_mcs_nodes[MAX_CPUS][MLOCK_NEST_MAX];
void mlock_spin_slow(struct mlock *l, unsigned me, uint32_t ticket, struct mcs_node *mine,
		     const char *site, unsigned mode);
/* A release's rare statistics - a miss, timing - committed to this CPU's shard after the
 * lock word is released and before the mask is lifted (a saturated lock's hold time must
 * not grow by the statistics). A hit and a migration are counted in the lock: an
 * uncontended acquisition in counts or contested mode never opens a shard. */
struct mlock_ev {
	bool missed;
	bool hit, migrated;	/* the hit goes to the shard: a waiter spun on the lock's line */
	uint64_t spins, wait, hold, irqoff;
	const char *site;
};
void mlock_commit_slow(const struct lock_class *c, const struct mlock_ev *ev);
void mlock_mcs_handoff_slow(struct mlock *l, struct mcs_node *mine);
__attribute__((noreturn)) void mlock_too_deep(const struct mlock *l, const char *site);
/* Released out of order (or not held: panics): l leaves the held list, its slot's
 * statistics are copied to *hs. */
void mlock_unheld_slow(struct kcpu *kc, const struct mlock *l, const char *site,
		       struct mlock_hstat *hs);

/* The spin part: masked on entry. me = CPU + 1. */
#define MLOCK_INLINE static inline __attribute__((always_inline))
MLOCK_INLINE void mlock_acquire_(struct mlock *l, unsigned me, const char *site)
{
	struct kcpu *kc = &kcpus[me - 1];
	unsigned d = kc->mlock_depth;
	if (__builtin_expect(d >= MLOCK_NEST_MAX, 0))
		mlock_too_deep(l, site);
	unsigned mode = lockstat_on();
	struct mlock_hstat *hs = &mlock_hstat[me - 1].s[d];
	if (mode) {		/* off: the slot is not touched */
		hs->mode = (uint8_t)mode;
		hs->missed = 0;	/* the slow path sets it, with its figures */
	}
	switch (l->algo) {
	case MLOCK_TAS:
		/* acquire: the previous holder's section happens-before ours */
		if (__builtin_expect(__atomic_exchange_n(&l->u.tas, 1, __ATOMIC_ACQUIRE) != 0, 0))
			mlock_spin_slow(l, me, 0, NULL, site, mode);
		break;
	case MLOCK_TICKET: {
		/* relaxed: the ticket orders nothing; the acquire load of serving does */
		uint32_t t = __atomic_fetch_add(&l->u.tk.next, 1, __ATOMIC_RELAXED);
		if (__builtin_expect(__atomic_load_n(&l->u.tk.serving, __ATOMIC_ACQUIRE) != t, 0))
			mlock_spin_slow(l, me, t, NULL, site, mode);
		break;
	}
	default: {	/* MLOCK_MCS: a free node of this CPU's (interrupts masked) */
		unsigned i = (unsigned)__builtin_ctz(~kc->mcs_used);
		struct mcs_node *n = &mlock_mcs_nodes[me - 1][i];
		kc->mcs_used |= 1u << i;
		__atomic_store_n(&n->next, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&n->locked, 1, __ATOMIC_RELAXED);
		/* acq_rel: acquire the previous holder's section (when the tail was free);
		 * release our node's initialisation to the successor that links behind it */
		struct mcs_node *prev = __atomic_exchange_n(&l->u.tail, n, __ATOMIC_ACQ_REL);
		if (__builtin_expect(prev != NULL, 0)) {
			/* release: our node is initialised before prev's holder can see it */
			__atomic_store_n(&prev->next, n, __ATOMIC_RELEASE);
			mlock_spin_slow(l, me, 0, n, site, mode);
		}
		l->mcs_mine = n;
		break;
	}
	}
	if (mode) {
		hs->site = site;	/* the holder's site, for the messages */
		/* read now, while the word's line has just arrived */
		hs->migrated = lockstat_counts_migrations(mode) &&
			       (hs->missed || (l->last_cpu != me && l->last_cpu != 0));
		/* timing: the one timestamp of an uncontended acquisition - the hold's start,
		 * standing for the mask's too (the slow path stamped a contended one) */
		if (mode == LOCKSTAT_TIMING && !hs->missed)
			hs->t_mask = hs->t_acq = arch_cycles();
	}
	/* relaxed stores: other CPUs read the list only for messages and mlock_destroy */
	__atomic_store_n(&kc->mlock_held[d], l, __ATOMIC_RELAXED);
	__atomic_store_n(&kc->mlock_depth, d + 1, __ATOMIC_RELAXED);
}

/* At a release: does a waiter spin on the lock's own line? The ticket lock's waiters do
 * (a ticket taken beyond ours; relaxed: a waiter arriving after the load only costs the
 * transfer this avoids, the counts stay exact either way). The test-and-set lock's
 * waiters do too but leave no trace, and the MCS lock's spin on their own nodes: for
 * them, no. */
MLOCK_INLINE bool mlock_waited_on(const struct mlock *l)
{
	return l->algo == MLOCK_TICKET &&
	       __atomic_load_n(&l->u.tk.next, __ATOMIC_RELAXED) != l->u.tk.serving + 1;
}

MLOCK_INLINE void mlock_release_(struct mlock *l, unsigned me, const char *site)
{
	struct kcpu *kc = &kcpus[me - 1];
	unsigned d = kc->mlock_depth;
	struct mlock_hstat *hs, moved;
	if (__builtin_expect(d != 0 && kc->mlock_held[d - 1] == l, 1)) {
		__atomic_store_n(&kc->mlock_depth, d - 1, __ATOMIC_RELAXED);
		hs = &mlock_hstat[me - 1].s[d - 1];
	} else {
		mlock_unheld_slow(kc, l, site, &moved);	/* out of order, or not held: panics */
		hs = &moved;
	}
	unsigned mode = lockstat_on();
	if (mode) {		/* the acquire's mode (0 if it was off), then none */
		mode = hs->mode;
		hs->mode = 0;
	}
	struct mlock_ev ev;
	bool rare = false;
	if (mode) {		/* this CPU's slot: local */
		ev.missed = hs->missed;
		ev.hit = false;
		ev.hold = 0;
		if (__builtin_expect(ev.missed, 0)) {
			ev.spins = hs->spins;
			ev.wait = hs->wait;
			ev.site = hs->site;
			rare = true;
		}
		if (mode == LOCKSTAT_TIMING) {
			uint64_t now = arch_cycles();	/* the hold's end */
			ev.hold = now - hs->t_acq;
			ev.irqoff = now - hs->t_mask;
			rare = true;
		}
		if (__builtin_expect(mlock_waited_on(l), 0)) {
			/* a waiter spins on the line: a store to it now would pull the line away
			 * from the spinner and back before the release store can - a transfer
			 * inside the section of a lock that is, being waited on, the
			 * bottleneck. The hit goes to this CPU's shard after the release; the
			 * next holder is that waiter (FIFO), which missed, so it knows it
			 * migrated without last_cpu */
			ev.hit = true;
			ev.migrated = hs->migrated;
			rare = true;
		} else {
			/* the lock's counters, right before the release store (its line) */
			if (lockstat_counts_migrations(mode))
				l->last_cpu = (uint16_t)me;
			lockstat_inst_hit(&l->st, hs->migrated);
		}
	}
	const struct lock_class *cls = l->cls;	/* constant: readable after the release */
	switch (l->algo) {
	case MLOCK_TAS:
		/* release: our section happens-before the next holder's */
		__atomic_store_n(&l->u.tas, 0, __ATOMIC_RELEASE);
		break;
	case MLOCK_TICKET:
		/* release: as above; only the holder writes serving */
		__atomic_store_n(&l->u.tk.serving, l->u.tk.serving + 1, __ATOMIC_RELEASE);
		break;
	default: {
		struct mcs_node *n = l->mcs_mine, *want = n;
		/* release on success: our section happens-before the next acquirer's xchg */
		if (__atomic_load_n(&n->next, __ATOMIC_ACQUIRE) != NULL ||
		    !__atomic_compare_exchange_n(&l->u.tail, &want, NULL, false,
						 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			mlock_mcs_handoff_slow(l, n);
		kc->mcs_used &= ~(1u << (unsigned)(n - mlock_mcs_nodes[me - 1]));
		break;
	}
	}
	/* still masked: this CPU's shard, outside the lock's section - only for a miss or a
	 * time (the hit and the migration are already in the lock) */
	if (__builtin_expect(rare, 0))
		mlock_commit_slow(cls, &ev);
}

MLOCK_INLINE void mlock_lock_at(struct mlock *l, const char *site)
{
	crit_enter();
	mlock_acquire_(l, arch_cpu_id() + 1, site);
}
MLOCK_INLINE void mlock_unlock_at(struct mlock *l, const char *site)
{
	mlock_release_(l, arch_cpu_id() + 1, site);
	crit_leave();
}
MLOCK_INLINE irqkey_t mlock_lock_irqsave_at(struct mlock *l, const char *site)
{
	irqkey_t k = arch_irq_save();
	mlock_acquire_(l, arch_cpu_id() + 1, site);
	return k;
}
MLOCK_INLINE void mlock_unlock_irqrestore_at(struct mlock *l, irqkey_t k, const char *site)
{
	mlock_release_(l, arch_cpu_id() + 1, site);
	arch_irq_restore(k);
}

#define mlock_lock(l) mlock_lock_at((l), LOCK_SITE)
#define mlock_unlock(l) mlock_unlock_at((l), LOCK_SITE)
#define mlock_lock_irqsave(l) mlock_lock_irqsave_at((l), LOCK_SITE)
#define mlock_unlock_irqrestore(l, k) mlock_unlock_irqrestore_at((l), (k), LOCK_SITE)

/* True if this CPU holds l (for assertions). */
bool mlock_held(const struct mlock *l);
/* Panic naming the master lock held, if this CPU holds any: `what` is about to sleep. */
void mlock_assert_none_slow(const char *what, const char *site);
static inline void mlock_assert_none(const char *what, const char *site)
{
	if (__builtin_expect(kcpu_this()->mlock_depth != 0, 0))
		mlock_assert_none_slow(what, site);
}

#endif
