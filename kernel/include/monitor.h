/*
 * monitor.h - monitor locks and Mesa condition variables (issue 11).
 *
 * Hartman & Ousterhout, Sprite, section 2: "If a process tries to lock a monitor lock and
 * another process has it locked already, then the process is put to sleep. The release of
 * a monitor lock causes all processes that are waiting on the lock to be awakened and
 * simultaneously try to reacquire the lock." Condition variables have Mesa semantics
 * (Lampson & Redell 1980): wait releases the monitor and sleeps; signal wakes one waiter,
 * broadcast every waiter; a woken waiter reacquires the monitor and must test its
 * condition again (CV_WAIT_UNTIL). Section 4: a woken waiter that fails to get the lock
 * counts a miss, so a monitor's misses can exceed its hits.
 *
 * Release: MON_BROADCAST (Sprite's: every waiter is woken, one wins, the others miss and
 * sleep again) or MON_HANDOFF (the lock passes to the first waiter, FIFO; no barging).
 *
 * The wait queues (the monitor's and its condition variables') are protected by the
 * monitor's interlock, a master lock:
 *   MON_QSCHED   the locked scheduler's master lock, Sprite's sched_Mutex (Figure 9:
 *                "sched_Mutex is used to synchronize access to the queue of processes
 *                waiting for the monitor lock, as well as the ready queue") - so every
 *                monitor miss adds to the scheduler lock's load, the paper's bottleneck;
 *   otherwise    the monitor's own master lock (class "mon_interlock"), the improvement
 *                Figure 9's caption asks for. Under the lock-free scheduler there is no
 *                sched_Mutex and every monitor uses its own interlock.
 * Sleeping and waking are the scheduler's sched_sleep/sched_wakeup with condition flags
 * (Hohmuth & Haertig Fig. 3): a waiter queues itself under the interlock, releases it and
 * sleeps; the releaser takes it off the queue under the interlock and wakes it after
 * releasing - a wakeup that comes before the sleep sets the flag, which the sleep then
 * consumes, so none is lost.
 *
 * Contexts: threads only (never handlers), never while holding a master lock. Blocking.
 * Bad use panics naming the class, the owner and the call sites: unlock by a thread that
 * is not the owner, recursion, waiting or signalling a condition variable without its
 * monitor, destroying a monitor that is held or has waiters.
 */
#ifndef KSYNC_MONITOR_H
#define KSYNC_MONITOR_H

#include "mlock.h"
#include "thread.h"

#define MON_HANDOFF 1u	/* release hands the lock to the first waiter (default: broadcast) */
#define MON_QSCHED 2u	/* wait queue under the locked scheduler's sched_Mutex (Figure 9) */

struct mon_waiter {
	struct mon_waiter *next;	/* the interlock */
	struct thread *t;		/* set before queueing */
	bool granted;			/* the interlock: handed the monitor (MON_HANDOFF) */
};

struct monitor {
	struct mlock *ilock;		/* the interlock: &own or sched_Mutex (set at init) */
	struct mlock own;
	struct thread *owner;		/* ilock; read without it only by its own thread */
	const char *site;		/* ilock: the owner's acquire site */
	struct mon_waiter *head, *tail;	/* ilock: waiters, FIFO */
	unsigned qlen;			/* ilock (relaxed atomic stores: read by diagnostics) */
	unsigned flags;			/* MON_HANDOFF, MON_QSCHED as resolved at init */
	uint64_t t_acq;			/* ilock: TSC at acquisition (timing mode), 0 if none */
	uint64_t hits, misses;		/* ilock: this instance's counts */
	unsigned last_cpu;		/* ilock: CPU + 1 of the previous owner */
	const struct lock_class *cls;	/* set at init */
	const char *init_site;		/* set at init */
};

struct condvar {
	struct monitor *mon;		/* set at init: its waits and signals hold mon */
	struct mon_waiter *head, *tail;	/* mon->ilock */
	unsigned qlen;			/* mon->ilock (relaxed atomic stores, as above) */
	uint64_t waits, wakeups;	/* mon->ilock: this instance's counts */
	const struct lock_class *cls;	/* set at init */
	const char *init_site;
};

/* KSYNC_EINVAL for NULL or unknown flags. MON_QSCHED falls back to the monitor's own
 * interlock when the locked scheduler is not running (mon_flags says what was chosen). */
int mon_init_at(struct monitor *m, const struct lock_class *c, unsigned flags, const char *site);
void mon_destroy_at(struct monitor *m, const char *site);
void mon_lock_at(struct monitor *m, const char *site);
void mon_unlock_at(struct monitor *m, const char *site);
static inline bool mon_held(const struct monitor *m)
{
	return __atomic_load_n(&m->owner, __ATOMIC_RELAXED) == thread_self();
}
static inline unsigned mon_flags(const struct monitor *m) { return m->flags; }

int cv_init_at(struct condvar *cv, const struct lock_class *c, struct monitor *m, const char *site);
void cv_destroy_at(struct condvar *cv, const char *site);
/* The caller holds cv->mon: releases it, sleeps until signalled, reacquires it. */
void cv_wait_at(struct condvar *cv, const char *site);
/* The caller holds cv->mon. Wake the longest waiter / every waiter. Return how many. */
unsigned cv_signal_at(struct condvar *cv, const char *site);
unsigned cv_broadcast_at(struct condvar *cv, const char *site);

#define mon_init(m, c, flags) mon_init_at((m), (c), (flags), LOCK_SITE)
#define mon_destroy(m) mon_destroy_at((m), LOCK_SITE)
#define mon_lock(m) mon_lock_at((m), LOCK_SITE)
#define mon_unlock(m) mon_unlock_at((m), LOCK_SITE)
#define cv_init(cv, c, m) cv_init_at((cv), (c), (m), LOCK_SITE)
#define cv_destroy(cv) cv_destroy_at((cv), LOCK_SITE)
#define cv_wait(cv) cv_wait_at((cv), LOCK_SITE)
#define cv_signal(cv) cv_signal_at((cv), LOCK_SITE)
#define cv_broadcast(cv) cv_broadcast_at((cv), LOCK_SITE)

/* Mesa's loop: wait on cv until `cond` holds (the caller holds cv->mon). Each return from
 * a wait that finds `cond` still false is a futile wakeup of cv's class. */
#define CV_WAIT_UNTIL(cv, cond)                                                       \
	do {                                                                          \
		bool cv_woke_ = false;                                                \
		while (!(cond)) {                                                     \
			if (cv_woke_)                                                 \
				lockstat_note_futile((cv)->cls);                      \
			cv_wait_at((cv), LOCK_SITE);                                  \
			cv_woke_ = true;                                              \
		}                                                                     \
	} while (0)

#endif
