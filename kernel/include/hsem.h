/*
 * hsem.h - the lock-free binary semaphore (Hohmuth & Haertig 2001, Figure 1) and the
 * wait-and-notify monitor on a helping lock (Figure 2), issue 12; hsem.c has the
 * algorithm and its correctness argument; hlock.h the helping lock.
 *
 * Paper: section 3.3 ("it is easy to see that our construction can be used to implement
 * wait-and-notify monitors ... The wait operation would then be implemented as an
 * unlock-sleep-lock sequence. Figure 2 shows a possible monitor implementation that uses
 * a simple lock-free semaphore, shown in Figure 1"). Critical sections of a helping lock
 * must never sleep; a monitor's wait therefore releases the lock BEFORE it sleeps in the
 * semaphore and takes it again afterwards.
 *
 * ---- the semaphore ----------------------------------------------------------------------
 * down: take the semaphore, sleeping until an up hands it over if it is taken. up: give
 * it back, waking the first waiter if there is one. Waiters are served in FIFO order of
 * their enqueue (the first thing down does). Lock-free: no thread ever waits for a
 * preempted thread to finish an operation on the semaphore (the count is one atomic
 * read-modify-write, the waiter queue a lock-free MWCAS list; hsem.c). Only a down that
 * finds the semaphore taken sleeps - that is the semaphore's purpose, not a lock.
 *
 * "Binary": initialised to 0 or 1, and used as a mutex (init 1, every up by the thread
 * whose down succeeded) the count never exceeds 1. The count itself is Figure 1's
 * unbounded integer: an up with no waiter always adds one - it is NOT capped at 1 - so a
 * semaphore used for signalling counts its surplus ups (see "conditions" below; a capped
 * count would lose wakeups there). The count is 64 bits: it cannot overflow.
 *
 * Contexts: hsem_down in thread context with the scheduler running, holding NO helping
 * lock (it may sleep: sched_sleep panics in a helping critical section - hsem_down checks
 * first and panics on every call, not only on the contended ones). hsem_up in thread
 * context (it may run inside a helping critical section: it never sleeps). A thread
 * waiting in hsem_down must not be killed (its queue node would stay queued; the next
 * thread of its slot panics at its first down, naming the semaphore).
 * Memory: the semaphore must not be freed while any thread is inside one of its
 * operations or waits in it (as for any kernel object).
 *
 * ---- the monitor (Figure 2) ---------------------------------------------------------------
 * A helping lock (hlock.h) and nothing else: enter = lock (the helper stack lets the
 * highest-priority contender in first), leave = unlock, wait(c) = unlock; down(c); lock,
 * signal(c) = up(c). Conditions are hsem semaphores initialised to 0, one per condition.
 *
 * Semantics that follow from semaphores as conditions (not Mesa/Hoare condition
 * variables):
 *  - A signal with no waiter is REMEMBERED as a count: the next wait on that condition
 *    returns at once. n signals with no waiter let the next n waits through.
 *  - A signal with waiters wakes exactly one, the first in FIFO order; there is no
 *    broadcast (signal once per waiter, or per state change a waiter may need).
 *  - The woken (or passed-through) waiter re-enters the monitor only after the signaller
 *    and possibly others: any thread may enter between the signal and the waiter's
 *    re-entry, so the condition may be false again. Always wait in a loop:
 *        hmon_enter(m); while (!cond) hmon_wait(m, c); ...; hmon_leave(m);
 *    A remembered signal makes a waiter pass through with the condition false; the loop
 *    makes that harmless (it consumed one surplus count) - but a monitor that signals on
 *    every state change accumulates surplus counts, and its waiters then spin through
 *    wait (unlock, down, lock) until the surplus is used up. For Mesa behaviour (a signal
 *    with no waiter is lost, no surplus) count the waiters under the monitor and signal
 *    only a counted one - each up is then matched by exactly one down:
 *        wait:   waiters++; hmon_wait(m, c);             (inside the while loop)
 *        signal: if (waiters) { waiters--; hmon_signal(m, c); }
 *    (test_hsem.c's bounded buffer runs both ways.)
 *  - No lost wakeup: a condition made true and signalled after a waiter's check wakes
 *    it (or lets it through) whatever the order of its unlock, down and the signal:
 *    the count remembers what the waiter has not yet slept for.
 *  - signal may be called inside or outside the monitor.
 *  - A waiter holds no lock while it sleeps; it must hold no other helping lock when it
 *    waits (nested monitors must not wait: section 3.3, "nested monitor calls must not
 *    sleep"): hsem_down panics.
 *
 * Errors: KSYNC_EINVAL for a NULL object (nothing changed), for hsem_init a count other
 * than 0 or 1, for hmon_init a class that is NULL or not LOCK_HELPING. hmon_enter and
 * hmon_wait return hlock_lock's KSYNC_EINVAL if the monitor's lock was invalidated (the
 * object deleted; hlock_invalidate) - then the caller does not hold the monitor.
 */
#ifndef KSYNC_HSEM_H
#define KSYNC_HSEM_H

#include "kernel.h"
#include "hlock.h"

/* The waiter queue's words hold encoded slot numbers (hsem.c); these are part of the
 * static initializer. */
#define HSEM_Q_NONE 2ull	/* the queue's end (empty queue: first = last = NONE) */

struct hsem {
	/* Figure 1's d_count: > 0 free, <= 0 taken, -count = waiters owed a wakeup. Atomic
	 * RMW only (acq_rel, hsem.c says what it orders). */
	_Atomic int64_t count;
	/* Figure 1's d_q: the FIFO of waiting threads, as the first and the last queued
	 * thread slot (encoded). MWCAS words: changed only by ksync_mwcas_soft, read only
	 * by ksync_mwcas_read_soft, together with the per-slot links in hsem.c. */
	uint64_t first, last;
	/* Statistics (relaxed; tests): downs that found themselves dequeued by an up meant
	 * for a sleeper and passed the wakeup on (hsem.c "the race"); downs that slept. */
	_Atomic uint64_t passes, sleeps;
	const char *name;	/* constant after init */
};

#define HSEM_INIT(count_, name_)                                                      \
	{ .count = (count_), .first = HSEM_Q_NONE, .last = HSEM_Q_NONE, .passes = 0,   \
	  .sleeps = 0, .name = (name_) }

/* count: 0 (taken / a condition) or 1 (free). name may be NULL. Before the semaphore is
 * shared. */
int hsem_init(struct hsem *s, int count, const char *name);
/* Take it (sleep until an up hands it over). KSYNC_OK, KSYNC_EINVAL for NULL. */
int hsem_down(struct hsem *s);
/* Give it back (wake the first waiter). KSYNC_OK, KSYNC_EINVAL for NULL. */
int hsem_up(struct hsem *s);
/* The count now (relaxed; tests): 1 free, 0 taken, -n taken with n waiters owed a
 * wakeup; > 1 after surplus signals. 0 for NULL. */
int64_t hsem_count(const struct hsem *s);
/* Threads on the waiter queue now (a walk; meaningful when the semaphore is quiet:
 * tests). 0 for NULL. */
unsigned hsem_queued(const struct hsem *s);
uint64_t hsem_passes(const struct hsem *s);	/* relaxed, tests */
uint64_t hsem_sleeps(const struct hsem *s);	/* relaxed, tests */

/* Interference injection (tests only): the hook runs at these points of every
 * operation, in the operating thread, with nothing held (it may wake, sleep, yield).
 * NULL (the default) for none. */
enum hsem_point {
	HSEM_AT_ENQUEUED,	/* down: queued, before the decrement */
	HSEM_AT_DECREMENTED,	/* down: after the decrement, before self-removal or sleep */
	HSEM_AT_INCREMENTED,	/* up: after the increment, before the dequeue */
};
void hsem_set_test_hook(void (*fn)(enum hsem_point at, struct hsem *s));

/* ---- the monitor ---------------------------------------------------------------------- */
struct hmon {
	struct hlock lock;	/* Figure 2's d_lock: the monitor's helping lock */
};

/* cls: a LOCK_HELPING class (the lock's statistics and name). Before sharing. */
int hmon_init(struct hmon *m, const struct lock_class *cls);
int hmon_enter(struct hmon *m);		/* KSYNC_OK; KSYNC_EINVAL (NULL, invalidated) */
int hmon_leave(struct hmon *m);		/* KSYNC_OK; KSYNC_EINVAL for NULL. Holder only
					   (else hlock_unlock panics) */
/* The caller holds the monitor: release it, down(cond), enter again. KSYNC_OK (holding
 * the monitor again); KSYNC_EINVAL for NULL (nothing done) or if the monitor's lock was
 * invalidated meanwhile (not holding it). */
int hmon_wait(struct hmon *m, struct hsem *cond);
int hmon_signal(struct hmon *m, struct hsem *cond);	/* up(cond); KSYNC_EINVAL for NULL */

#endif
