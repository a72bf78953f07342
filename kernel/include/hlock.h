/*
 * hlock.h - wait-free locks with helping (priority inheritance by donation), the
 * lock-free binary semaphore, monitors on them, and synchronous messages (issue 12;
 * docs/fiasco.md).
 *
 * Paper: Hohmuth & Haertig 2001, "Pragmatic nonblocking synchronization for real-time
 * systems": section 3.3 (wait-free locking with helping: the lock knows its owner; a
 * thread that finds it taken pushes itself on the lock's helper stack and, instead of
 * blocking, passes its CPU to the owner; each time it runs again it checks whether it
 * owns the lock and otherwise helps again; the owner hands the lock - and the CPU - to
 * the top of the stack; critical sections never sleep), Figures 1-2 (the lock-free
 * binary semaphore and the wait-and-notify monitor), section 4.3 (the switch hint; each
 * thread's count of locks held, checked by thread deletion; a deleted object's lock is
 * invalidated and its helpers see the error), section 4.4 (the single server, in
 * serializer.h).
 *
 * Priorities are the scheduler's levels (0 is the highest). "Hard priorities", as the
 * paper assumes, are the priority table {0} (sched_table_set): the lowest non-empty
 * level always runs. Helping needs no priority field: a helper never sleeps, so it
 * stays runnable at its own level and each time the scheduler runs it, it runs the
 * owner instead; the owner runs at the helper's level meanwhile (its boost) and drops it
 * only when it releases its last helping lock.
 *
 * Contexts: thread context only, with the scheduler running (sched_start). Critical
 * sections are preemptible; they must not sleep (sched_sleep panics naming the lock and
 * the thread), and a thread holding a helping lock cannot be killed (KSYNC_EBUSY) or
 * exit (panic).
 */
#ifndef KSYNC_HLOCK_H
#define KSYNC_HLOCK_H

#include "kernel.h"
#include "lockstat.h"
#include "thread.h"
#include "kcpu.h"
#include <ksync/errors.h>
#include <stdatomic.h>

/* ---- the lock -------------------------------------------------------------------------
 * One word holds the whole lock: the owner and the top of the helper stack (thread id + 1
 * each, 0 = none) and the invalid bit. Every change is one CAS of that word, so the
 * owner and the stack never disagree (a release that saw no helper cannot race with a
 * push: the push changes the same word). The helper stack's links are in the helpers'
 * thread slots (each thread helps on at most one lock at a time). Only the owner pops
 * (at release), so the pop's read of the top's link cannot suffer ABA: a pusher changes
 * the word, and nobody else removes the top. */
#define HLOCK_OWNER_MASK 0xffffull
#define HLOCK_TOP_SHIFT 16
#define HLOCK_TOP_MASK (0xffffull << HLOCK_TOP_SHIFT)
#define HLOCK_INVALID (1ull << 32)

/* The switch hint (section 4.3): whom the releasing CPU runs once the lock is free. */
enum hlock_hint {
	HLOCK_HINT_PRIO = 0,	/* (3) whoever has the higher priority (default) */
	HLOCK_HINT_LOCKED,	/* (1) the previously locked thread (l->locked): IPC */
	HLOCK_HINT_LOCKER,	/* (2) the locker: the releasing thread goes on */
};

struct hlock {
	_Atomic uint64_t word;		/* owner | top << 16 | INVALID: CAS only */
	/* The thread this lock protects (a thread lock), for HLOCK_HINT_LOCKED; NULL for
	 * other objects. Set at init, constant. */
	struct thread *locked;
	const struct lock_class *cls;	/* constant after init */
	/* The hint for the next release: written by the owner only, read by it at
	 * release, reset to PRIO after it. */
	unsigned hint;
};

#define HLOCK_INIT(cls_) { .word = 0, .locked = NULL, .cls = &(cls_), .hint = HLOCK_HINT_PRIO }

/* `locked`: the thread the lock protects (or NULL). */
void hlock_init(struct hlock *l, const struct lock_class *cls, struct thread *locked);
/* Acquire, helping the owner until the lock is handed over. KSYNC_OK; KSYNC_EINVAL if the
 * lock is (or becomes, while we help) invalid: the object was deleted. Panics on
 * recursion (naming the lock and the thread). Inline: one CAS when the lock is free. */
static inline int hlock_lock(struct hlock *l);
/* One attempt: KSYNC_OK if acquired, KSYNC_EBUSY if held, KSYNC_EINVAL if invalid. */
int hlock_trylock(struct hlock *l);
/* Release: hand the lock to the top helper, if any, and the CPU by the hint. Panics if
 * the caller is not the owner (naming the lock, the caller and the owner). Inline: one
 * CAS when nobody helps, with no hint and no boost to end. */
static inline void hlock_unlock(struct hlock *l);
/* The owner sets the hint for its next release. */
void hlock_set_hint(struct hlock *l, enum hlock_hint h);
/* Delete the object: the owner (the caller) releases the lock invalid; every helper,
 * present or future, returns KSYNC_EINVAL from hlock_lock. The lock's memory must stay
 * readable until its helpers have returned (type-stable objects, as the thread table). */
void hlock_invalidate(struct hlock *l);
struct thread *hlock_owner(const struct hlock *l);	/* NULL if free; relaxed, for tests */
bool hlock_valid(const struct hlock *l);
/* Helping locks the thread holds now (Fiasco's count, checked by thread deletion). */
unsigned thread_locks_held(const struct thread *t);
/* The thread's own lock (Fiasco's thread lock: IPC locks the receiver by it). */
struct hlock *thread_lock(struct thread *t);
LOCK_CLASS_DECLARE(hlock_thread_class);	/* every thread's own lock */

/* Statistics of helping, summed over CPUs, for tests and experiments (relaxed). */
struct hlock_stats {
	uint64_t contended, helps_local, helps_remote, helps_not, handoffs,
		chain_max, invalid_returns;
	uint64_t host_yields;	/* spinning helpers that gave the host core back (hosted,
				   oversubscribed: arch_spin_yield_host) */
};
void hlock_stats_get(struct hlock_stats *st);
void hlock_stats_reset(void);

/* The lock-free binary semaphore (Figure 1) and the monitor on a helping lock (Figure 2)
 * are in hsem.h. */

/* ---- synchronous messages (section 4.3's IPC use of the switch hint) --------------------
 * hipc_send locks the receiver's thread lock, checks that it waits in hipc_recv, deposits
 * the message, wakes it, sets the hint to the locked thread and unlocks: the CPU goes to
 * the receiver. KSYNC_EBUSY if the receiver does not wait (the caller retries or gives
 * up), KSYNC_ESRCH for a dead receiver. hipc_recv: wait for one message. */
int hipc_send(struct thread *rcv, uint64_t msg);
uint64_t hipc_recv(void);

/* ---- the inline fast paths (the slow paths are kernel/sched/hlock.c) ------------------- */

int hlock_lock_slow_(struct hlock *l, uint64_t w);
void hlock_stat_hit_(struct hlock *l);
void hlock_unlock_slow_(struct hlock *l);
void hlock_released_(struct hlock *l, unsigned hint);

static inline struct thread_head *hlock_self_(void)
{
	return (struct thread_head *)kcpu_this()->sched_cur;	/* head is struct thread's first */
}

/* The caller's own count (relaxed atomics: killers read it; no lock prefix). */
static inline void hlock_count_add_(struct thread_head *h, int d)
{
	atomic_store_explicit(&h->hl_count,
			      atomic_load_explicit(&h->hl_count, memory_order_relaxed) + (unsigned)d,
			      memory_order_relaxed);
}

static inline int hlock_lock(struct hlock *l)
{
	struct thread_head *h = hlock_self_();
	uint64_t w = 0;
	/* counted before the CAS: thread_kill's check sees a thread that is acquiring (after
	 * it, a kill between the CAS and the count would take an owner away; measured on
	 * hosted, the order costs nothing visible: 12.44 vs 12.54 ticks median) */
	hlock_count_add_(h, 1);
	/* acquire: our section after the previous owner's (its release CAS) */
	if (__builtin_expect(atomic_compare_exchange_strong_explicit(&l->word, &w, h->id1,
								     memory_order_acquire,
								     memory_order_acquire), 1)) {
		h->hl_last = l;
		if (__builtin_expect(lockstat_on() != 0, 0))
			hlock_stat_hit_(l);
		return KSYNC_OK;
	}
	return hlock_lock_slow_(l, w);
}

static inline void hlock_unlock(struct hlock *l)
{
	struct thread_head *h = hlock_self_();
	uint64_t w = h->id1;
	/* the plain case: no hint, not a thread lock; the hint is ours to read while we own */
	if (__builtin_expect(l->hint == HLOCK_HINT_PRIO && !l->locked, 1) &&
	    /* release: our section before the next owner's acquire */
	    __builtin_expect(atomic_compare_exchange_strong_explicit(&l->word, &w, 0,
								     memory_order_release,
								     memory_order_relaxed), 1)) {
		hlock_count_add_(h, -1);
		if (__builtin_expect(atomic_load_explicit(&h->boost, memory_order_relaxed) >= SCHED_LEVELS, 1))
			return;
		hlock_released_(l, HLOCK_HINT_PRIO);	/* a boost may end */
		return;
	}
	hlock_unlock_slow_(l);
}

#endif
