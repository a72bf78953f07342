/*
 * test_sched_level.c - thread_set_level (kernel/include/thread.h) under both schedulers:
 * a thread's run-queue level changed while it runs, sleeps or waits on a queue.
 *
 * The first two cases run on one CPU (affinity) under hard priorities (the strict table
 * {0}: the lowest non-empty level always runs), so who runs next is decided by the
 * levels alone and every property is an order of events, never a time: a thread raised
 * to level 0 is the only one served while it yields; one that lowers itself lets a ready
 * thread of higher priority run before the call returns; a level set while a thread
 * sleeps decides at its wakeup whether it preempts the waker; a queued thread raised
 * above the caller runs before the call returns. Same-CPU wakeups and kicks switch at
 * once (sched_kick: a reschedule taken at IPL_NONE in thread context), so nothing waits
 * for an IPI or a clock tick. The third case is a stress: levels changed at random by
 * other threads while the targets sleep, wake, yield, spin, change their own level and
 * are suspended and resumed on every CPU; it asserts that nothing panics (the lock-free
 * queues panic on an unlink from a queue the thread is not on), every thread ends, and
 * the queues' counts come back to what the queues hold.
 */
#include "kernel.h"
#include "thread.h"
#include "sched_testutil.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>

static uint64_t cpu_bit(unsigned c) { return 1ull << c; }

/* An order of events, written by the threads of one CPU (one at a time) and read after
 * the joins: relaxed atomics for the index (the joins order the rest). */
static char lv_log[32];
static unsigned lv_n;
static void lv_note(char c)
{
	unsigned i = __atomic_load_n(&lv_n, __ATOMIC_RELAXED);
	if (i + 1 < sizeof lv_log) {
		lv_log[i] = c;
		lv_log[i + 1] = 0;
		__atomic_store_n(&lv_n, i + 1, __ATOMIC_RELEASE);
	}
}
static void lv_reset(void)
{
	lv_log[0] = 0;
	__atomic_store_n(&lv_n, 0, __ATOMIC_RELEASE);
}

/* ---- the caller's own level --------------------------------------------------------- */

static volatile int lv_stop;
static uint64_t lv_yields[2];	/* each yielder's rounds (relaxed atomics) */
static volatile int lv_h_ran;
static struct {
	int rc_up, rc_down, rc_bad;
	unsigned shared_yields;	/* yields at level 3 until both yielders had run */
	uint64_t y_while_up;	/* yielder rounds while the driver, raised to 0, yielded */
	unsigned level_up, level_down;
	int h_before, h_after;	/* the level-1 thread had run: before / after the lowering */
	uint64_t y_while_down;	/* yielder rounds across the lowering to 2 */
} self_r;

static void lv_yielder_fn(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	while (!__atomic_load_n(&lv_stop, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&lv_yields[i], 1, __ATOMIC_RELAXED);
		thread_yield();
	}
}

static void lv_high_fn(void *arg)
{
	(void)arg;
	__atomic_store_n(&lv_h_ran, 1, __ATOMIC_RELEASE);
}

static uint64_t yields_sum(void)
{
	return __atomic_load_n(&lv_yields[0], __ATOMIC_RELAXED) +
	       __atomic_load_n(&lv_yields[1], __ATOMIC_RELAXED);
}

/* Created at level 3 beside two level-3 yielders on the same CPU. */
static void lv_self_driver_fn(void *arg)
{
	unsigned c = (unsigned)(uintptr_t)arg;
	struct thread *self = thread_self(), *h;
	self_r.rc_bad = thread_set_level(self, SCHED_LEVELS);
	/* level 3: a round robin with the yielders */
	unsigned n = 0;
	while ((!__atomic_load_n(&lv_yields[0], __ATOMIC_RELAXED) ||
		!__atomic_load_n(&lv_yields[1], __ATOMIC_RELAXED)) && n < 1000) {
		thread_yield();
		n++;
	}
	self_r.shared_yields = n;
	/* raised to 0: from now on the only thread served while it is ready */
	self_r.rc_up = thread_set_level(self, 0);
	self_r.level_up = thread_level(self);
	uint64_t y0 = yields_sum();
	for (unsigned i = 0; i < 200; i++)
		thread_yield();
	self_r.y_while_up = yields_sum() - y0;
	/* a level-1 thread made ready waits while we stay at 0 ... */
	lv_h_ran = 0;
	if (thread_create(&h, lv_high_fn, NULL, 1, cpu_bit(c), "lv-high", 0) != KSYNC_OK) {
		self_r.h_before = -1;
		return;
	}
	for (unsigned i = 0; i < 50; i++)
		thread_yield();
	self_r.h_before = __atomic_load_n(&lv_h_ran, __ATOMIC_ACQUIRE);
	/* ... and has run when our lowering to 2 returns; the level-3 yielders have not */
	y0 = yields_sum();
	self_r.rc_down = thread_set_level(self, 2);
	self_r.h_after = __atomic_load_n(&lv_h_ran, __ATOMIC_ACQUIRE);
	self_r.y_while_down = yields_sum() - y0;
	self_r.level_down = thread_level(self);
	(void)thread_join(h);
	__atomic_store_n(&lv_stop, 1, __ATOMIC_RELEASE);
}

KTEST(sched_level_self_raise_and_lower)
{
	unsigned c = ncpu() - 1;
	const char *s;
	FOR_EACH_SCHED(s) {
		strict_on();
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct thread *y[2], *d;
		lv_stop = 0;
		memset(&self_r, 0, sizeof self_r);
		for (unsigned i = 0; i < 2; i++) {
			__atomic_store_n(&lv_yields[i], 0, __ATOMIC_RELAXED);
			KT_ASSERT_EQ(thread_create(&y[i], lv_yielder_fn, (void *)(uintptr_t)i, 3, cpu_bit(c),
						   "lv-yield", 0), KSYNC_OK);
		}
		KT_ASSERT_EQ(thread_create(&d, lv_self_driver_fn, (void *)(uintptr_t)c, 3, cpu_bit(c),
					   "lv-driver", 0), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(d), KSYNC_OK);
		for (unsigned i = 0; i < 2; i++)
			KT_EXPECT_EQ(thread_join(y[i]), KSYNC_OK);
		kt_diag(kt, "%s: level 3 shared after %u yields; raised to 0: yielders ran %lu times in "
			"200 yields; level-1 thread ran before/after the lowering to 2: %d/%d, yielders "
			"%lu times across it", s, self_r.shared_yields, (unsigned long)self_r.y_while_up,
			self_r.h_before, self_r.h_after, (unsigned long)self_r.y_while_down);
		KT_EXPECT_EQ(self_r.rc_bad, KSYNC_EINVAL);
		KT_EXPECT(self_r.shared_yields < 1000);		/* level 3: the CPU was shared */
		KT_EXPECT_EQ(self_r.rc_up, KSYNC_OK);
		KT_EXPECT_EQ(self_r.level_up, 0u);
		KT_EXPECT_EQ(self_r.y_while_up, 0ull);		/* level 0: served alone */
		KT_EXPECT_EQ(self_r.h_before, 0);
		KT_EXPECT_EQ(self_r.rc_down, KSYNC_OK);
		KT_EXPECT_EQ(self_r.h_after, 1);		/* ran inside the lowering */
		KT_EXPECT_EQ(self_r.y_while_down, 0ull);	/* level 3 still below us */
		KT_EXPECT_EQ(self_r.level_down, 2u);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		strict_off();
	}
}

/* ---- another thread's level: asleep, then queued ------------------------------------ */

#define LV_COND SCHED_COND(21)
static volatile int lv_z_stop;
static struct {
	int rc[5];
	int rc_dead;
} other_r;

/* The sleeper: 's' at its start, 'z' at each wakeup. */
static void lv_sleeper_fn(void *arg)
{
	(void)arg;
	lv_note('s');
	for (;;) {
		sched_sleep(LV_COND);
		lv_note('z');
		if (__atomic_load_n(&lv_z_stop, __ATOMIC_ACQUIRE))
			return;
	}
}

/* At level 1, with the sleeper Z created at level 2 on the same CPU. */
static void lv_other_driver_fn(void *arg)
{
	unsigned c = (unsigned)(uintptr_t)arg;
	struct thread *self = thread_self(), *z;
	lv_z_stop = 0;
	if (thread_create(&z, lv_sleeper_fn, NULL, 2, cpu_bit(c), "lv-sleeper", 0) != KSYNC_OK)
		return;
	/* Z (2) waits below us; we lower ourselves under it: it runs to its sleep ("s") */
	other_r.rc[0] = thread_set_level(self, 3);
	other_r.rc[1] = thread_set_level(self, 1);
	/* raised to 0 while asleep: its wakeup makes it run before ours returns ("z", "D") */
	other_r.rc[2] = thread_set_level(z, 0);
	(void)sched_wakeup(z, LV_COND);
	lv_note('D');
	/* lowered to 3 while asleep: woken, it waits below us ("E") and stays queued */
	other_r.rc[3] = thread_set_level(z, 3);
	(void)sched_wakeup(z, LV_COND);
	lv_note('E');
	/* queued at 3 and raised to 0: it runs before the call returns ("z", "F") */
	other_r.rc[4] = thread_set_level(z, 0);
	lv_note('F');
	__atomic_store_n(&lv_z_stop, 1, __ATOMIC_RELEASE);
	(void)sched_wakeup(z, LV_COND);	/* at 0: it runs now, and ends ("z") */
	(void)thread_join(z);
	other_r.rc_dead = thread_set_level(z, 1);	/* joined: a free slot */
}

KTEST(sched_level_sleeper_and_queued)
{
	unsigned c = ncpu() - 1;
	const char *s;
	FOR_EACH_SCHED(s) {
		strict_on();
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct thread *d;
		lv_reset();
		memset(&other_r, 0x55, sizeof other_r);
		KT_ASSERT_EQ(thread_create(&d, lv_other_driver_fn, (void *)(uintptr_t)c, 1, cpu_bit(c),
					   "lv-driver", 0), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(d), KSYNC_OK);
		kt_diag(kt, "%s: order of events %s (expected szDEzFz)", s, lv_log);
		/* s: the lowering let Z run; z before D: the raise applied at the wakeup; E
		 * before z: the lowering applied at the wakeup; z before F: the queued thread
		 * moved at once */
		KT_EXPECT(!strcmp(lv_log, "szDEzFz"));
		for (unsigned i = 0; i < 5; i++)
			KT_EXPECT_EQ(other_r.rc[i], KSYNC_OK);
		KT_EXPECT_EQ(other_r.rc_dead, KSYNC_ESRCH);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		strict_off();
	}
}

/* ---- a thread running on another CPU ---------------------------------------------------
 * R (level 0) yields in a loop on the last CPU, where H (level 1) waits; this thread, on
 * CPU 0, lowers R to 2. The change applies at R's next pick on its CPU (asked for by IPI,
 * or R's own next yield, whichever comes first): H runs there, R having counted at most
 * one more round after the call returned. */
static volatile int lr_stop, lr_h_ran;
static uint64_t lr_rounds, lr_rounds_at_h;

static void lr_runner_fn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&lr_stop, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&lr_rounds, 1, __ATOMIC_RELAXED);
		thread_yield();
	}
}

static void lr_high_fn(void *arg)
{
	(void)arg;
	__atomic_store_n(&lr_rounds_at_h, __atomic_load_n(&lr_rounds, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&lr_h_ran, 1, __ATOMIC_RELEASE);
}

KTEST(sched_level_running_elsewhere)
{
	if (ncpu() < 2)
		KT_SKIP("-smp 1: the thread changed runs on another CPU than the caller");
	unsigned c = ncpu() - 1;
	const char *s;
	FOR_EACH_SCHED(s) {
		strict_on();
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct thread *r, *h;
		lr_stop = lr_h_ran = 0;
		lr_rounds = lr_rounds_at_h = 0;
		KT_ASSERT_EQ(thread_create(&r, lr_runner_fn, NULL, 0, cpu_bit(c), "lr-runner", 0), KSYNC_OK);
		uint64_t t0 = arch_cycles();
		while (__atomic_load_n(&lr_rounds, __ATOMIC_RELAXED) < 10 && arch_cycles() - t0 < ms_ticks(2000))
			arch_cpu_relax();
		KT_ASSERT_EQ(thread_create(&h, lr_high_fn, NULL, 1, cpu_bit(c), "lr-high", 0), KSYNC_OK);
		/* R alone at level 0 there: H waits while R goes round 100 more times */
		uint64_t r0 = __atomic_load_n(&lr_rounds, __ATOMIC_RELAXED);
		while (__atomic_load_n(&lr_rounds, __ATOMIC_RELAXED) < r0 + 100 && arch_cycles() - t0 < ms_ticks(4000))
			arch_cpu_relax();
		int before = __atomic_load_n(&lr_h_ran, __ATOMIC_ACQUIRE);
		KT_EXPECT_EQ(thread_set_level(r, 2), KSYNC_OK);
		uint64_t r1 = __atomic_load_n(&lr_rounds, __ATOMIC_RELAXED);
		t0 = arch_cycles();
		while (!__atomic_load_n(&lr_h_ran, __ATOMIC_ACQUIRE) && arch_cycles() - t0 < ms_ticks(2000))
			arch_cpu_relax();
		int after = __atomic_load_n(&lr_h_ran, __ATOMIC_ACQUIRE);
		uint64_t at = __atomic_load_n(&lr_rounds_at_h, __ATOMIC_RELAXED);
		__atomic_store_n(&lr_stop, 1, __ATOMIC_RELEASE);
		KT_EXPECT_EQ(thread_join(h), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(r), KSYNC_OK);
		/* at - r1 is negative where H ran before this CPU read r1 (R counted on after H) */
		kt_diag(kt, "%s: H waited %lu rounds of R at level 0; lowered to 2, R went %ld "
			"round(s) past the call's return before H ran", s, (unsigned long)(r1 - r0),
			(long)(at - r1));
		KT_EXPECT_EQ(before, 0);
		KT_EXPECT_EQ(after, 1);
		KT_EXPECT(at <= r1 + 1);	/* at R's next pick */
		KT_EXPECT_EQ(thread_level(r), 2u);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		strict_off();
	}
}

/* ---- stress: levels changed under sleeps, wakeups, yields and preemption ------------- */

#define LVS_WORKERS 6
#define LVS_COND SCHED_COND(22)
static struct thread *lvs_w[LVS_WORKERS];
static unsigned lvs_left;		/* workers not finished (atomic) */
static uint64_t lvs_sets, lvs_esrch, lvs_bad;	/* set_level calls by the changers (atomic) */
static unsigned lvs_iters;

static uint64_t xs(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void lvs_worker_fn(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 7;
	for (unsigned i = 0; i < lvs_iters; i++) {
		switch (xs(&x) % 5) {
		case 0:
			thread_yield();
			break;
		case 1:
			sched_sleep(LVS_COND);	/* the waker comes round */
			break;
		case 2:
			if (thread_set_level(thread_self(), (unsigned)(x >> 8) % SCHED_LEVELS) != KSYNC_OK)
				__atomic_fetch_add(&lvs_bad, 1, __ATOMIC_RELAXED);
			break;
		default:
			/* spin a little: the clock may preempt it here (bound to this CPU) */
			for (unsigned k = 0; k < 200; k++)
				arch_cpu_relax();
		}
	}
	__atomic_fetch_sub(&lvs_left, 1, __ATOMIC_RELEASE);
}

/* At most 4 x lvs_iters changes each (the workers mostly end first), a yield after each:
 * a changer looping as fast as it could for as long as the workers ran took the locked
 * scheduler's master lock so often that, under TSan on a loaded host, the workers
 * convoyed behind it (once, 20 s without a line: the hosted watchdog's hang). */
static void lvs_changer_fn(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg * 0x2545f4914f6cdd1dull + 3;
	for (unsigned i = 0; i < 4 * lvs_iters && __atomic_load_n(&lvs_left, __ATOMIC_ACQUIRE); i++) {
		struct thread *t = lvs_w[xs(&x) % LVS_WORKERS];
		int rc = thread_set_level(t, (unsigned)(x >> 16) % SCHED_LEVELS);
		__atomic_fetch_add(rc == KSYNC_OK ? &lvs_sets : rc == KSYNC_ESRCH ? &lvs_esrch : &lvs_bad,
				   1, __ATOMIC_RELAXED);
		if ((x >> 24) % 16 == 0) {	/* now and then a suspend and its resume */
			int a = thread_suspend(t);
			int b = thread_resume(t);
			if ((a != KSYNC_OK && a != KSYNC_ESRCH) || (b != KSYNC_OK && b != KSYNC_ESRCH))
				__atomic_fetch_add(&lvs_bad, 1, __ATOMIC_RELAXED);
		}
		thread_yield();
	}
}

static void lvs_waker_fn(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&lvs_left, __ATOMIC_ACQUIRE)) {
		for (unsigned i = 0; i < LVS_WORKERS; i++)
			(void)sched_wakeup(lvs_w[i], LVS_COND);	/* ESRCH once it ended */
		thread_yield();
	}
}

/* The sanitizer builds run a quarter of the rounds: under TSan on a host busy with four
 * other CPU-bound processes the full size kept a vCPU 6-8 s without a line per scheduler
 * (the hosted watchdog ends a run at 20 s). `sched_level_rounds=N` on the command line
 * sets the rounds (a longer run by hand). */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define LVS_SCALE 4
#else
#define LVS_SCALE 1
#endif

KTEST(sched_level_stress)
{
	unsigned n = ncpu();
	char buf[24];
	lvs_iters = (n > 2 ? 1000 : 2000) / LVS_SCALE;	/* QEMU -smp 4/8 on two host cores is slow */
	if (cmdline_get("sched_level_rounds", buf, sizeof buf)) {
		lvs_iters = 0;
		for (const char *p = buf; *p >= '0' && *p <= '9'; p++)
			lvs_iters = lvs_iters * 10 + (unsigned)(*p - '0');
	}
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct thread *ch[2], *wk;
		lvs_sets = lvs_esrch = lvs_bad = 0;
		__atomic_store_n(&lvs_left, LVS_WORKERS, __ATOMIC_RELEASE);
		for (unsigned i = 0; i < LVS_WORKERS; i++)	/* every other one bound to a CPU */
			KT_ASSERT_EQ(thread_create(&lvs_w[i], lvs_worker_fn, (void *)(uintptr_t)(i + 1),
						   i % SCHED_LEVELS, (i & 1) ? cpu_bit(i % n) : SCHED_AFFINITY_ANY,
						   "lvs-worker", 0), KSYNC_OK);
		for (unsigned i = 0; i < 2; i++)
			KT_ASSERT_EQ(thread_create(&ch[i], lvs_changer_fn, (void *)(uintptr_t)(i + 1), 1,
						   cpu_bit(i % n), "lvs-changer", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&wk, lvs_waker_fn, NULL, 1, SCHED_AFFINITY_ANY, "lvs-waker", 0),
			     KSYNC_OK);
		KT_EXPECT_EQ(thread_join(wk), KSYNC_OK);
		for (unsigned i = 0; i < 2; i++)
			KT_EXPECT_EQ(thread_join(ch[i]), KSYNC_OK);
		for (unsigned i = 0; i < LVS_WORKERS; i++) {	/* every worker ends */
			KT_EXPECT(thread_level(lvs_w[i]) < SCHED_LEVELS);
			KT_EXPECT_EQ(thread_join(lvs_w[i]), KSYNC_OK);
		}
		/* only this thread is left: on its queue (lockfree keeps a running thread there)
		 * exactly when its word says LINKED; the counts are what the queues hold */
		unsigned entries, counted = sched_queued(&entries);
		unsigned mine = (thread_state(thread_self()) & SCHED_LINKED) ? 1 : 0;
		kt_diag(kt, "%s: %u workers x %u rounds on %u CPUs; %lu level changes by others, %lu "
			"refused (the target had ended); queues: count %u, entries %u (this thread: %u)", s,
			LVS_WORKERS, lvs_iters, n, (unsigned long)lvs_sets, (unsigned long)lvs_esrch,
			counted, entries, mine);
		KT_EXPECT_EQ(lvs_bad, 0ull);
		KT_EXPECT(lvs_sets > 0);
		KT_EXPECT_EQ(counted, entries);
		KT_EXPECT_EQ(entries, mine);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}
