/*
 * test_sched_timer.c - timed sleep (kernel/sched/timer.c; thread.h sched_sleep_until;
 * docs/sched.md "Timed sleep"), under both schedulers:
 *   - never early: sleepers on every CPU with deadlines spread over a few clock periods
 *     each return with SCHED_COND_TIMER alone (nothing else sets their flag) and at or
 *     after their deadline; no timer is left armed;
 *   - a flag ends the sleep first: the timer is disarmed (a later sleep_until still
 *     lasts until its own deadline: no stale SCHED_COND_TIMER ends it early), also when
 *     the waker's flag and the tick race (deadlines placed at the wakeup's moment);
 *   - the tick fires the timer after a flag ended the sleep and before the disarm (a
 *     test hook holds the sleeper in that window until the tick came): the timer's flag
 *     is consumed there, and the next sleep_until lasts until its deadline;
 *   - a deadline passed already returns at once.
 * Properties of order, not durations: "at or after the deadline" is the contract; how
 * late (the resolution, one clock period) is measured by cyclictest, not asserted.
 *
 * Papers: Hohmuth & Haertig 2001, Figure 3 (sleep and wakeup with condition flags).
 */
#include "kernel.h"
#include "thread.h"
#include "sched_testutil.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>
#include <stdatomic.h>

/* The hosted TSan build defers signals to its own safe points and may strand a clock tick
 * with the fiber that was current, leaving that vCPU's one-shot clock unarmed (see
 * test_sched.c's SKIP_UNDER_TSAN): a timed sleeper is woken only by ticks, so both vCPUs
 * idled for good (seen: 2 hangs in 6 runs). The plain, ASan and hard hosted builds and
 * QEMU run these cases. */
#if defined(__SANITIZE_THREAD__)
#define SKIP_UNDER_TSAN() KT_SKIP("TSan build: its clock ticks are not dependable (a deferred clock signal stays with its fiber) and only ticks end a timed sleep; tested in plain/asan/hard and under QEMU")
#else
#define SKIP_UNDER_TSAN() do { } while (0)
#endif

#define T_COND SCHED_COND(22)
#define SLEEPERS 6
#define ROUNDS 8

static struct {
	_Atomic unsigned early, not_timer, done;
} st;

static void sleeper_fn(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	for (unsigned r = 0; r < ROUNDS; r++) {
		/* 0.25 .. 3 ms: within and across clock periods, different per thread */
		uint64_t d = arch_cycles() + arch_tsc_hz() / 4000 * (1 + (me * 7 + r * 3) % 12);
		uint64_t got = sched_sleep_until(T_COND, d);
		if (arch_cycles() < d)
			atomic_fetch_add(&st.early, 1);
		if (got != SCHED_COND_TIMER)
			atomic_fetch_add(&st.not_timer, 1);
	}
	atomic_fetch_add(&st.done, 1);
}

KTEST(sched_timer_sleep_until_never_early)
{
	SKIP_UNDER_TSAN();
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		atomic_store(&st.early, 0);
		atomic_store(&st.not_timer, 0);
		atomic_store(&st.done, 0);
		struct thread *t[SLEEPERS];
		for (unsigned i = 0; i < SLEEPERS; i++)
			KT_ASSERT_EQ(thread_create(&t[i], sleeper_fn, (void *)(uintptr_t)i, i % SCHED_LEVELS,
						   SCHED_AFFINITY_ANY, "tsleep", 0), KSYNC_OK);
		for (unsigned i = 0; i < SLEEPERS; i++)
			KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
		KT_EXPECT_EQ(atomic_load(&st.done), SLEEPERS);
		KT_EXPECT_EQ(atomic_load(&st.early), 0u);
		KT_EXPECT_EQ(atomic_load(&st.not_timer), 0u);
		KT_EXPECT_EQ(sched_timers_armed(), 0u);
		/* a deadline passed already: at once, with the timer's flag */
		KT_EXPECT_EQ(sched_sleep_until(T_COND, arch_cycles() - 1), SCHED_COND_TIMER);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* The racing waker: thread `w` sleeps until a deadline near the moment main wakes it
 * with T_COND (0.8 ms before to 0.8 ms after); whichever comes first ends the sleep, and the next sleep_until (deadline
 * ~1 ms on) must still last until its deadline. */
#define RACES 24
static struct {
	_Atomic unsigned round;		/* main: the round whose wakeup may come (release) */
	_Atomic unsigned asleep;	/* w: the round it entered (release) */
	_Atomic unsigned early, bad_flags, by_flag, by_timer, done;
	_Atomic uint64_t wake_at;	/* main: the TSC time it will wake w at */
} rc;

static void racer_fn(void *arg)
{
	(void)arg;
	for (unsigned r = 1; r <= RACES; r++) {
		while (atomic_load_explicit(&rc.round, memory_order_acquire) != r)
			thread_yield();
		/* the deadline 0.8 ms before .. 0.8 ms after the wakeup: either may come first */
		uint64_t d = atomic_load(&rc.wake_at) + (r % 5) * (arch_tsc_hz() / 2500) -
			     2 * (arch_tsc_hz() / 2500);
		atomic_store_explicit(&rc.asleep, r, memory_order_release);
		uint64_t got = sched_sleep_until(T_COND, d);
		if (!(got & (T_COND | SCHED_COND_TIMER)) || (got & ~(T_COND | SCHED_COND_TIMER)))
			atomic_fetch_add(&rc.bad_flags, 1);
		if ((got & SCHED_COND_TIMER) && arch_cycles() < d)
			atomic_fetch_add(&rc.early, 1);
		atomic_fetch_add(got & T_COND ? &rc.by_flag : &rc.by_timer, 1);
		if (!(got & T_COND))	/* the waker's flag may still come: take it */
			(void)sched_sleep(T_COND);
		/* no stale timer flag: this one lasts until its own deadline */
		uint64_t d2 = arch_cycles() + arch_tsc_hz() / 1000;
		got = sched_sleep_until(SCHED_COND(23), d2);
		if (got != SCHED_COND_TIMER || arch_cycles() < d2)
			atomic_fetch_add(&rc.early, 1);
	}
	atomic_fetch_add(&rc.done, 1);
}

KTEST(sched_timer_flag_first_disarms)
{
	SKIP_UNDER_TSAN();
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		memset((void *)&rc, 0, sizeof rc);
		struct thread *w;
		KT_ASSERT_EQ(thread_create(&w, racer_fn, NULL, 1, SCHED_AFFINITY_ANY, "racer", 0), KSYNC_OK);
		for (unsigned r = 1; r <= RACES; r++) {
			uint64_t at = arch_cycles() + arch_tsc_hz() / 500;	/* 2 ms on */
			atomic_store(&rc.wake_at, at);
			atomic_store_explicit(&rc.round, r, memory_order_release);
			while (atomic_load_explicit(&rc.asleep, memory_order_acquire) != r)
				thread_yield();
			/* a spin, not yields: a yield may return only at the next tick, the
			 * one that fires the timer (the flag would never come first) */
			while (arch_cycles() < at)
				arch_cpu_relax();
			KT_ASSERT_EQ(sched_wakeup(w, T_COND), KSYNC_OK);
		}
		KT_EXPECT_EQ(thread_join(w), KSYNC_OK);
		KT_EXPECT_EQ(atomic_load(&rc.done), 1u);
		KT_EXPECT_EQ(atomic_load(&rc.bad_flags), 0u);
		KT_EXPECT_EQ(atomic_load(&rc.early), 0u);
		KT_EXPECT_EQ(atomic_load(&rc.by_flag) + atomic_load(&rc.by_timer), RACES);
		KT_EXPECT_EQ(sched_timers_armed(), 0u);
		kt_diag(kt, "%s: %u ended by the flag, %u by the timer", s,
			atomic_load(&rc.by_flag), atomic_load(&rc.by_timer));
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* The window between a flag's end of the sleep and the disarm, made wide: the hook spins
 * (IRQs on) until the deadline is 2 ms past, so a tick of every CPU fired the timer. */
#define WINDOW_ROUNDS 8
static struct {
	_Atomic unsigned asleep, woken, windows, early, done;
} wn;

static void window_hook(uint64_t got, uint64_t deadline)
{
	if (got & SCHED_COND_TIMER)
		return;
	while (arch_cycles() < deadline + arch_tsc_hz() / 500)
		arch_cpu_relax();
	if (sched_timers_armed() == 0)	/* ours is the only timer: it fired */
		atomic_fetch_add(&wn.windows, 1);
}

static void windowed_fn(void *arg)
{
	(void)arg;
	for (unsigned r = 1; r <= WINDOW_ROUNDS; r++) {
		uint64_t d = arch_cycles() + arch_tsc_hz() / 200;	/* 5 ms on */
		atomic_store_explicit(&wn.asleep, r, memory_order_release);
		uint64_t got = sched_sleep_until(T_COND, d);
		if (!(got & T_COND))	/* the timer came first (a 5 ms stall): the flag follows */
			(void)sched_sleep(T_COND);
		uint64_t d2 = arch_cycles() + arch_tsc_hz() / 1000;
		got = sched_sleep_until(SCHED_COND(23), d2);
		if (got != SCHED_COND_TIMER || arch_cycles() < d2)
			atomic_fetch_add(&wn.early, 1);
	}
	atomic_fetch_add(&wn.done, 1);
}

KTEST(sched_timer_fired_in_the_window_is_consumed)
{
	SKIP_UNDER_TSAN();
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		memset((void *)&wn, 0, sizeof wn);
		atomic_store_explicit(&sched_test_timer_window, window_hook, memory_order_release);
		struct thread *w;
		KT_ASSERT_EQ(thread_create(&w, windowed_fn, NULL, 1, SCHED_AFFINITY_ANY, "windowed", 0), KSYNC_OK);
		for (unsigned r = 1; r <= WINDOW_ROUNDS; r++) {
			while (atomic_load_explicit(&wn.asleep, memory_order_acquire) != r)
				thread_yield();
			KT_ASSERT_EQ(sched_wakeup(w, T_COND), KSYNC_OK);
		}
		KT_EXPECT_EQ(thread_join(w), KSYNC_OK);
		atomic_store_explicit(&sched_test_timer_window, NULL, memory_order_release);
		KT_EXPECT_EQ(atomic_load(&wn.done), 1u);
		KT_EXPECT_EQ(atomic_load(&wn.early), 0u);
		/* the construction: a wakeup 5 ms before the deadline ends the sleep first
		 * unless the host stalled the guest that long; once is enough */
		KT_EXPECT(atomic_load(&wn.windows) > 0);
		KT_EXPECT_EQ(sched_timers_armed(), 0u);
		kt_diag(kt, "%s: %u of %u rounds had the timer fire in the window", s,
			atomic_load(&wn.windows), WINDOW_ROUNDS);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}
