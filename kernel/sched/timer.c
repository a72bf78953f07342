/*
 * timer.c - timed sleep (issue 25 item 4; docs/sched.md "Timed sleep"): sched_sleep_until,
 * which nanosleep, clock_nanosleep, futex and poll timeouts and rt_sigtimedwait use, so
 * that a thread waiting for a time gives its CPU up instead of yielding until the
 * deadline.
 *
 * Papers: Hohmuth & Haertig 2001, Figure 3 - sleep and wakeup with condition flags in the
 * thread's state word. The timer is one more waker with a flag of its own
 * (SCHED_COND_TIMER), so no wakeup is lost whatever the order of the tick, the sleeper's
 * test and its sleep.
 *
 * Each CPU keeps a list of timers sorted by deadline (struct sched_timer, on the
 * sleeper's stack) under a master lock of class "sched-timer", taken with the CPU's own
 * mask because that CPU's clock handler takes it. A sleeper arms a timer on the list of
 * the CPU it runs on, sleeps with SCHED_COND_TIMER among its conditions and disarms the
 * timer when it returns. The CPU's scheduler clock tick (sched_tick -> sched_timers_tick)
 * takes every timer whose deadline has passed off the list and wakes its thread with
 * SCHED_COND_TIMER, all under the lock: once the sleeper's disarm holds the lock, no
 * handler touches its timer again, and the timer may go with the sleeper's frame.
 *
 * Resolution: the scheduler clock's period - 1 ms at SCHED_HZ = 1000, down to 10 us with
 * sched_set_clock_hz (user mode's hz= word). A deadline is met by the first tick of the
 * arming CPU at or after it: a sleep ends between 0 and one period (plus the wakeup's
 * dispatch) after its deadline, never before it.
 */
#include "sched_impl.h"
#include "mlock.h"
#include <ksync/errors.h>

LOCK_CLASS(sched_timer_class, "sched-timer", LOCK_MASTER, LOCK_DATA);

struct sched_timer {
	struct sched_timer *next;	/* its list's lock */
	struct thread *t;		/* constant: the sleeper */
	uint64_t deadline;		/* constant: TSC time (arch_cycles) */
	bool armed;			/* its list's lock: on the list */
};

void (*_Atomic sched_test_timer_window)(uint64_t got, uint64_t deadline);

static struct timer_q {
	struct mlock lock;		/* class sched-timer: the list and its timers' links */
	struct sched_timer *head;	/* the lock; the earliest deadline first */
	/* the head's deadline, or UINT64_MAX for an empty list: stored under the lock
	 * (relaxed), loaded without it by the tick (relaxed) so that a CPU with no timer
	 * due pays one load per tick; a stale value only makes a tick take the lock for
	 * nothing or leave a timer to the next tick, which loads the store */
	_Atomic uint64_t first;
} __attribute__((aligned(64))) timer_qs[MAX_CPUS];

/* sched_start (the boot thread, one start at a time) initialises the locks once, before
 * it starts the clocks whose ticks take them: the clocks' start orders it for them */
void sched_timers_init(void)
{
	static bool done;
	if (done)
		return;
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		mlock_init(&timer_qs[c].lock, &sched_timer_class, MLOCK_TICKET);
		atomic_store_explicit(&timer_qs[c].first, UINT64_MAX, memory_order_relaxed);
	}
	done = true;
}

static void set_first(struct timer_q *q)
{
	atomic_store_explicit(&q->first, q->head ? q->head->deadline : UINT64_MAX,
			      memory_order_relaxed);
}

uint64_t sched_tsc_of_ns(uint64_t ns)
{
	/* the smallest TSC time whose ktime_ns (floor(c * 1e9 / hz)) is >= ns */
	uint64_t hz = arch_tsc_hz(), s = ns / 1000000000ull, r = ns % 1000000000ull;
	return s * hz + (r * hz + 999999999ull) / 1000000000ull;
}

uint64_t sched_sleep_until(uint64_t cond, uint64_t deadline)
{
	if (!deadline)
		return sched_sleep(cond);
	if (arch_cycles() >= deadline)
		return SCHED_COND_TIMER;
	struct sched_timer tm = { .t = thread_self(), .deadline = deadline };
	/* the list of the CPU we run on now (if we move before the lock, the other CPU's
	 * tick fires the timer: any list is correct, ours is the cheap one) */
	struct timer_q *q = &timer_qs[arch_cpu_id()];
	irqkey_t k = mlock_lock_irqsave(&q->lock);
	struct sched_timer **pp = &q->head;
	while (*pp && (*pp)->deadline <= deadline)
		pp = &(*pp)->next;
	tm.next = *pp;
	*pp = &tm;
	tm.armed = true;
	set_first(q);
	mlock_unlock_irqrestore(&q->lock, k);

	uint64_t got = sched_sleep(cond | SCHED_COND_TIMER);
	/* acquire: what the test prepared before installing the hook */
	void (*h)(uint64_t, uint64_t) = atomic_load_explicit(&sched_test_timer_window,
							     memory_order_acquire);
	if (h)
		h(got, deadline);

	k = mlock_lock_irqsave(&q->lock);
	bool fired = !tm.armed;
	if (!fired) {
		for (pp = &q->head; *pp != &tm; pp = &(*pp)->next)
			;
		*pp = tm.next;
		set_first(q);
	}
	mlock_unlock_irqrestore(&q->lock, k);
	/* fired while another flag woke us: the tick set SCHED_COND_TIMER before our
	 * disarm took the lock; consume it now (it is set: no sleep) so that it does not
	 * end a later sleep_until early */
	if (fired && !(got & SCHED_COND_TIMER))
		got |= sched_sleep(SCHED_COND_TIMER);
	return got;
}

/* The clock tick of `cpu` (sched_tick, IRQ context): wake every sleeper due. */
void sched_timers_tick(unsigned cpu)
{
	struct timer_q *q = &timer_qs[cpu];
	uint64_t now = arch_cycles();
	/* plain comparisons of TSC times: a 64-bit TSC does not wrap in a boot, and the
	 * empty list's UINT64_MAX must compare as "later than any now" */
	if (now < atomic_load_explicit(&q->first, memory_order_relaxed))
		return;
	irqkey_t k = mlock_lock_irqsave(&q->lock);
	while (q->head && q->head->deadline <= now) {
		struct sched_timer *tm = q->head;
		q->head = tm->next;
		tm->armed = false;
		int rc = sched_wakeup(tm->t, SCHED_COND_TIMER);
		if (rc != KSYNC_OK)	/* the sleeper disarms before it can end: alive */
			panic("sched-timer: waking '%s' failed (%s)", thread_name(tm->t),
			      ksync_strerror(rc));
	}
	set_first(q);
	mlock_unlock_irqrestore(&q->lock, k);
}

unsigned sched_timers_armed(void)
{
	unsigned n = 0;
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		irqkey_t k = mlock_lock_irqsave(&timer_qs[c].lock);
		for (struct sched_timer *tm = timer_qs[c].head; tm; tm = tm->next)
			n++;
		mlock_unlock_irqrestore(&timer_qs[c].lock, k);
	}
	return n;
}
