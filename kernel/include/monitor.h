/*
 * monitor.h - monitor locks and Mesa condition variables.
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
 * The lock is a word of its own (Sprite needs only "an atomic test-and-set", section 3):
 * an acquire is a test-and-set of MON_W_LOCKED, and a hit is nothing more - it touches no
 * other lock. Figure 9 is what a *miss* does ("Miss on monitor lock. Lock sched_Mutex. Put
 * process on wait queue for monitor lock. ..."): the missing thread takes the monitor's
 * interlock, sets MON_W_WAITERS, tests-and-sets once more (the holder may have released
 * meanwhile) and only then queues itself and sleeps. A release clears the word and takes
 * the interlock only when MON_W_WAITERS is set. kernel/lock/monitor.c argues why no
 * wakeup is lost; spin/monitor.pml checks it.
 *
 * Release: broadcast, the default (Sprite's: every waiter is woken, one wins, the others miss and
 * sleep again) or MON_HANDOFF (the lock passes to the first waiter, FIFO, without the word
 * being freed: no barging past a queued waiter).
 *
 * The wait queues (the monitor's and its condition variables') and the waiters mark's
 * changes are protected by the monitor's interlock, a master lock:
 *   MON_QSCHED   the locked scheduler's master lock, Sprite's sched_Mutex (Figure 9:
 *                "sched_Mutex is used to synchronize access to the queue of processes
 *                waiting for the monitor lock, as well as the ready queue") - so every
 *                monitor miss (and every release that finds waiters, every condition
 *                variable operation) adds to the scheduler lock's load, the paper's
 *                bottleneck; hits do not;
 *   otherwise    the monitor's own master lock (class "mon_interlock"), the improvement
 *                Figure 9's caption asks for. Under the lock-free scheduler there is no
 *                sched_Mutex and every monitor uses its own interlock.
 * Sleeping and waking are the scheduler's sched_sleep/sched_wakeup with condition flags
 * (Hohmuth & Haertig Fig. 3): a waiter queues itself under the interlock, releases it and
 * sleeps; the releaser takes it off the queue under the interlock and wakes it after
 * releasing - a wakeup that comes before the sleep sets the flag, which the sleep then
 * consumes, so none is lost.
 *
 * MON_HELPING (the kernel's `fiasco` configuration; Hohmuth & Haertig 2001, sections 3.2-3.3
 * and 4.2: local state under wait-free locks with helping): the monitor's lock is a helping
 * lock (hlock.h) instead of the word. A contender never sleeps on the monitor: it pushes
 * itself on the lock's helper stack and runs the owner on its own CPU (priority
 * inheritance by donation) until the lock is handed to it, the highest-priority helper
 * first. Critical sections must then not sleep: a wait on a condition variable releases
 * the monitor before it sleeps (Figure 2's unlock-sleep-lock; the paper's "nested monitor
 * calls must not sleep": sched_sleep panics if another helping lock is held). The
 * condition variables keep Mesa semantics (the queues under the monitor's own interlock,
 * as above). Statistics: the helping lock counts its hits, misses (contended
 * acquisitions), helps (as `spins`) and wait times in the class's shards (hlock.c); the
 * instance counters (st, misses) stay 0. Refused with MON_QSCHED or MON_HANDOFF (the
 * helping lock already passes the lock to its top helper).
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
#include "hlock.h"

#define MON_HANDOFF 1u	/* release hands the lock to the first waiter (default: broadcast) */
#define MON_QSCHED 2u	/* wait queue under the locked scheduler's sched_Mutex (Figure 9) */
#define MON_HELPING 4u	/* the lock is a helping lock (Hohmuth & Haertig 3.3): below */

/* The lock word's bits (struct monitor.word) */
#define MON_W_LOCKED 1u		/* held: set by test-and-set, cleared by the release */
#define MON_W_WAITERS 2u	/* a miss is queued or queueing: set and cleared under the interlock */

struct mon_waiter {
	struct mon_waiter *next;	/* the interlock */
	struct thread *t;		/* set before queueing */
	bool granted;			/* handed the monitor (MON_HANDOFF): stored (release) under
					   the interlock before the wake, loaded (acquire) by its
					   waiter after waking */
};

/* What an uncontended lock and unlock touch comes first (the word, the owner's fields,
 * the hit and migration counters): one cache line when the monitor is 64-byte aligned. */
struct monitor {
	/* MON_W_LOCKED | MON_W_WAITERS, atomic RMWs only: LOCKED set by test-and-set and
	 * cleared by the owner's release; WAITERS changed only with ilock held */
	unsigned word;
	unsigned last_cpu;		/* the owner's: CPU + 1 of the previous owner */
	/* the word's holder (relaxed atomic: others read it for checks and messages): set
	 * by the thread that won the word, or under ilock by the hand-off that passes it */
	struct thread *owner;
	const char *site;		/* the owner's: its acquire site */
	uint64_t t_acq;			/* the owner's: TSC at acquisition (timing mode), 0 if none */
	struct lockstat_inst st;	/* hits, migrations: the owner's; its class's list */
	struct mlock *ilock;		/* the interlock: &own or sched_Mutex (set at init) */
	unsigned flags;			/* MON_HANDOFF, MON_QSCHED as resolved at init */
	unsigned qlen;			/* ilock (relaxed atomic stores: read by diagnostics) */
	struct mon_waiter *head, *tail;	/* ilock: waiters, FIFO */
	uint64_t misses;		/* ilock: this instance's misses */
	const struct lock_class *cls;	/* set at init */
	const char *init_site;		/* set at init */
	struct mlock own;
	struct hlock hl;		/* MON_HELPING: the lock (its word: CAS only, hlock.h) */
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

/* Interference injection (tests only): the hook runs in the locking thread at each miss,
 * after the failed test-and-set and before the interlock is taken, with nothing held (it
 * may yield, sleep, wake). NULL (the default) for none. */
enum mon_point { MON_AT_MISSED };
void mon_set_test_hook(void (*fn)(enum mon_point at, struct monitor *m));

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
