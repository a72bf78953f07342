/*
 * pi.c - priority inversion under the helping lock and under a lock without inheritance:
 * how long a high-priority thread waits for a lock that a low-priority thread holds while
 * a medium-priority thread is running (CPU-bound).
 *
 * Paper: Hohmuth & Haertig 2001, section 3.3 ("instead of blocking and waiting for B to
 * finish, it helps B by passing the CPU to B, thereby effectively lending its priority to
 * B"; "It makes our locking mechanism an implementation of priority inheritance") and
 * section 2.1 ("During helping, A lends B its priority to ensure that no other,
 * lower-prioritized activities can interfere"). The lock with inheritance is the helping
 * lock (hlock.h, kernel/sched/hlock.c); the lock without is a monitor (monitor.h,
 * MON_HANDOFF: the waiter sleeps and the release hands it the lock, so the only
 * difference from the helping lock is that nobody lends the owner a priority).
 * kernel/tests/test_hlock.c hlock_priority_inversion_bounded checks the same scenario
 * with a bound; this experiment times it.
 *
 * One trial (hard priorities: the strict priority table {0}, the lowest non-empty level
 * runs, as the paper assumes): "low" (level 3) takes the lock and wakes the medium
 * thread, which preempts it; the medium thread wakes "high" (level 0) and then spins for
 * the medium run; high stamps the TSC, takes the lock (it waits: low holds it) and stamps
 * again. The wait is the difference. Under the helping lock high lends low its CPU (one
 * CPU) or has low's CPU run it ahead of its queues (two CPUs: remote donation), so the
 * wait is low's section plus switches; under the monitor high sleeps, the medium thread
 * runs to its end, then low ends its section, so the wait also holds the medium run.
 * Cases:
 *   1cpu  every thread bound to CPU 0 (the other CPUs, if any, idle) - the paper's case;
 *   2cpu  (at 2 or more CPUs) high on CPU 0; low bound to CPU 1; one medium thread on
 *         each of CPUs 0 and 1: no CPU is free for low while the medium threads run, so
 *         the inversion stays (low cannot run elsewhere), and helping must reach low on
 *         CPU 1 (the paper's multiprocessor future work; hlock.c's remote donation).
 * Trials of the two locks alternate (helping first in even trials, the monitor first in
 * odd ones), pi_trials of each per case.
 *
 * Inputs (command line): pi_section_us (low's section, default 100), pi_medium_us (the
 * medium thread's run, default 1000), pi_trials (default 15). Both works are counted in
 * loop iterations calibrated on this CPU at the start (so a preemption does not shorten
 * them); the row gives each alone in TSC ticks (median of 5) beside the inputs. The
 * medium thread's progress when high got the lock (percent of its iterations) is counted
 * too: a direct view of whether the medium thread ran before high (no inheritance) or
 * not. A trial where low had already released the lock when high came (high's CPU took
 * the wakeup late: a host or emulator delay) timed no inversion: it is counted
 * ("missed") and left out of the figures. Lock statistics off. One line per (case, lock):
 *   KSYNC {"kind":"pi_wait","case":"1cpu|2cpu","lock":"helping|monitor","sched":..,
 *          "scheme":..,"cpus":N,"unit":"tsc_ticks","tsc_hz":..,"section_us":..,
 *          "medium_us":..,"section_ticks":..,"medium_ticks":..,"n":..,"min":..,
 *          "median":..,"p99":..,"max":..,"missed":..,"waits":[...],"medium_done_pct":[...],
 *          "helps_local":..,"helps_remote":..}
 * Under TCG these are the emulator's times (the report labels them); hosted, the real CPU's.
 */
#include "kernel.h"
#include "experiment.h"
#include "thread.h"
#include "hlock.h"
#include "monitor.h"
#include <ksync/measure.h>
#include <ksync/errors.h>

LOCK_CLASS(pi_hlock_class, "pi_helping", LOCK_HELPING, LOCK_DATA);
LOCK_CLASS(pi_mon_class, "pi_monitor", LOCK_MONITOR, LOCK_DATA);

#define PI_MAX_TRIALS 64
#define PI_CAL_ITERS 20000ull
#define PI_LEVEL_HIGH 0
#define PI_LEVEL_MEDIUM 2
#define PI_LEVEL_LOW 3

enum { PI_HELPING = 0, PI_MONITOR = 1 };
static const char *const lock_names[] = { "helping", "monitor" };

/* One trial's shared state: written by the boot thread before the trial's threads exist
 * (thread_create publishes it), then as each field says. */
static struct hlock hl;
static struct monitor mon;
static unsigned lock_kind;			/* constant during a trial */
static uint64_t section_iters, medium_iters;	/* constant during a trial */
/* Set by thread_create in the order high, other medium, own medium, low: each before the
 * thread that reads it is created (own medium reads the first two, low the own medium). */
static struct thread *t_high, *t_med_own, *t_med_other;
/* The medium thread on low's CPU counts its iterations here (relaxed: a progress gauge
 * read by high once it holds the lock; any recent value will do). */
static volatile uint64_t med_progress;
/* Written by high, read by the boot thread after thread_join(high), which orders them. */
static uint64_t wait_ticks, med_at_acquire;
static bool high_found_held;
/* 1 while low holds the lock (set after its acquire, cleared before its release); high
 * reads it before it stamps the TSC, so a trial where high came only after low's release
 * (its CPU took the wakeup late) is told apart. Atomic stores and loads of a flag that
 * publishes nothing: their release/acquire orders no other data. */
static volatile unsigned low_holds;

static uint64_t waits[2][PI_MAX_TRIALS], done_pct[2][PI_MAX_TRIALS];

/* Busy work counted in iterations; a poll point per iteration (arch_cpu_relax). */
static void spin(uint64_t n, volatile uint64_t *progress)
{
	for (uint64_t i = 0; i < n; i++) {
		if (progress)
			__atomic_store_n(progress, i + 1, __ATOMIC_RELAXED);
		arch_cpu_relax();
	}
}

static void lk_lock(void)
{
	if (lock_kind == PI_HELPING)
		KASSERT(hlock_lock(&hl) == KSYNC_OK);
	else
		mon_lock(&mon);
}

static void lk_unlock(void)
{
	if (lock_kind == PI_HELPING)
		hlock_unlock(&hl);
	else
		mon_unlock(&mon);
}

static void pi_high(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);	/* the medium thread on low's CPU wakes us */
	high_found_held = __atomic_load_n(&low_holds, __ATOMIC_ACQUIRE) != 0;
	uint64_t t0 = arch_cycles_begin();
	lk_lock();
	uint64_t t1 = arch_cycles_end();
	med_at_acquire = __atomic_load_n(&med_progress, __ATOMIC_RELAXED);
	wait_ticks = t1 - t0;
	lk_unlock();
}

static void pi_medium(void *arg)
{
	bool own = arg != NULL;		/* the one on low's CPU */
	volatile uint64_t unread = 0;	/* the other CPU's medium: its progress is not reported */
	sched_sleep(SCHED_COND_USER);	/* low (own) or the own medium thread wakes us */
	if (own) {
		if (t_med_other)
			sched_wakeup(t_med_other, SCHED_COND_USER);
		sched_wakeup(t_high, SCHED_COND_USER);	/* on one CPU: high preempts us */
	}
	spin(medium_iters, own ? &med_progress : &unread);
}

static void pi_low(void *arg)
{
	(void)arg;
	lk_lock();
	__atomic_store_n(&low_holds, 1, __ATOMIC_RELEASE);
	sched_wakeup(t_med_own, SCHED_COND_USER);	/* above us on our CPU: preempts us */
	spin(section_iters, NULL);
	__atomic_store_n(&low_holds, 0, __ATOMIC_RELEASE);
	lk_unlock();
}

/* One trial; false if a thread could not be created (the trial is left out). *held:
 * whether low still held the lock when high came (else the trial timed no inversion). */
static bool trial(unsigned kind, bool two, uint64_t *wait, uint64_t *pct, bool *held)
{
	struct thread *t_low;
	uint64_t cpu_low = two ? 2 : 1, cpu_high = 1;
	lock_kind = kind;
	hlock_init(&hl, &pi_hlock_class, NULL);
	if (kind == PI_MONITOR && mon_init(&mon, &pi_mon_class, MON_HANDOFF) != KSYNC_OK)
		return false;
	med_progress = 0;
	wait_ticks = med_at_acquire = 0;
	high_found_held = false;
	low_holds = 0;
	t_high = t_med_own = t_med_other = NULL;
	bool ok = thread_create(&t_high, pi_high, NULL, PI_LEVEL_HIGH, cpu_high, "pi-high", 0) ==
		  KSYNC_OK;
	if (ok && two)
		ok = thread_create(&t_med_other, pi_medium, NULL, PI_LEVEL_MEDIUM, 1, "pi-med0", 0) ==
		     KSYNC_OK;
	if (ok)
		ok = thread_create(&t_med_own, pi_medium, (void *)1, PI_LEVEL_MEDIUM, cpu_low,
				   "pi-med", 0) == KSYNC_OK;
	if (ok)
		ok = thread_create(&t_low, pi_low, NULL, PI_LEVEL_LOW, cpu_low, "pi-low", 0) ==
		     KSYNC_OK;
	if (!ok) {
		/* a thread that exists sleeps for a wakeup that will not come: wake it with
		 * nothing to do (medium_iters 0, high's lock free) */
		medium_iters = 0;
		if (t_med_other)
			(void)sched_wakeup(t_med_other, SCHED_COND_USER);
		if (t_med_own)
			(void)sched_wakeup(t_med_own, SCHED_COND_USER);
		if (t_high)
			(void)sched_wakeup(t_high, SCHED_COND_USER);
	} else {
		(void)thread_join(t_low);
	}
	if (t_med_own)
		(void)thread_join(t_med_own);
	if (t_med_other)
		(void)thread_join(t_med_other);
	if (t_high)
		(void)thread_join(t_high);
	if (kind == PI_MONITOR)
		mon_destroy(&mon);
	if (!ok)
		return false;
	*wait = wait_ticks;
	*held = high_found_held;
	*pct = medium_iters ? med_at_acquire * 100 / medium_iters : 0;
	return true;
}

static void emit_list(const char *key, const uint64_t *v, unsigned n)
{
	kprintf(",\"%s\":[", key);
	for (unsigned i = 0; i < n; i++)
		kprintf("%s%lu", i ? "," : "", (unsigned long)v[i]);
	kprintf("]");
}

static uint64_t median5(uint64_t n)
{
	uint64_t t[5];
	for (unsigned i = 0; i < 5; i++) {
		uint64_t t0 = arch_cycles_begin();
		spin(n, NULL);
		t[i] = arch_cycles_end() - t0;
	}
	return ksync_stats_compute(t, 5).median;
}

static void pi_experiment(struct ktest_ctx *kt)
{
	(void)kt;
	char buf[16];
	unsigned section_us = cmdline_uint(cmdline_get("pi_section_us", buf, sizeof buf), 100);
	unsigned medium_us = cmdline_uint(cmdline_get("pi_medium_us", buf, sizeof buf), 1000);
	unsigned trials = cmdline_uint(cmdline_get("pi_trials", buf, sizeof buf), 15);
	if (trials == 0 || trials > PI_MAX_TRIALS)
		trials = 15;
	if (section_us == 0)
		section_us = 100;
	unsigned mode = lockstat_mode();
	(void)lockstat_set_mode(LOCKSTAT_OFF);
	static const uint8_t strict_table[1] = { 0 };
	const char *sched = sched_default_name();
	if (sched_start(NULL) != KSYNC_OK) {
		kprintf("ksync: pi: cannot start the %s scheduler\n", sched);
		(void)lockstat_set_mode(mode);
		KT_ASSERT(0);
	}
	(void)sched_table_set(strict_table, 1);

	/* calibration: iterations per TSC tick on the boot thread (CPU 0); the fastest of
	 * five (the least disturbed) */
	uint64_t cal = UINT64_MAX;
	for (unsigned i = 0; i < 5; i++) {
		uint64_t t0 = arch_cycles_begin();
		spin(PI_CAL_ITERS, NULL);
		uint64_t d = arch_cycles_end() - t0;
		if (d && d < cal)
			cal = d;
	}
	uint64_t us = arch_tsc_hz() / 1000000;
	section_iters = (uint64_t)section_us * us * PI_CAL_ITERS / cal;
	uint64_t med_iters_set = (uint64_t)medium_us * us * PI_CAL_ITERS / cal;
	if (!section_iters)
		section_iters = 1;
	uint64_t section_ticks = median5(section_iters), medium_ticks = median5(med_iters_set);

	unsigned ncases = arch_ncpus() >= 2 ? 2 : 1, failed = 0;
	for (unsigned c = 0; c < ncases; c++) {
		bool two = c == 1;
		unsigned n[2] = { 0, 0 }, missed[2] = { 0, 0 };
		uint64_t helps_local = 0, helps_remote = 0;
		for (unsigned i = 0; i < trials; i++) {
			for (unsigned j = 0; j < 2; j++) {
				unsigned kind = (i + j) % 2;	/* alternate which lock goes first */
				uint64_t w, p;
				bool held;
				medium_iters = med_iters_set;
				hlock_stats_reset();
				if (!trial(kind, two, &w, &p, &held)) {
					failed++;	/* a thread could not be created */
					continue;
				}
				if (!held) {	/* counted and shown, not timed */
					missed[kind]++;
					continue;
				}
				if (kind == PI_HELPING) {
					struct hlock_stats st;
					hlock_stats_get(&st);
					helps_local += st.helps_local;
					helps_remote += st.helps_remote;
				}
				waits[kind][n[kind]] = w;
				done_pct[kind][n[kind]] = p;
				n[kind]++;
			}
		}
		for (unsigned kind = 0; kind < 2; kind++) {
			if (!n[kind]) {
				kprintf("KSYNC {\"kind\":\"pi_wait\",\"case\":\"%s\",\"lock\":\"%s\","
					"\"cpus\":%u,\"n\":0,\"missed\":%u,\"skipped\":\"no trial "
					"timed an inversion\"}\n", two ? "2cpu" : "1cpu",
					lock_names[kind], arch_ncpus(), missed[kind]);
				continue;
			}
			uint64_t sorted[PI_MAX_TRIALS];
			for (unsigned i = 0; i < n[kind]; i++)
				sorted[i] = waits[kind][i];
			struct ksync_stats st = ksync_stats_compute(sorted, n[kind]);
			kprintf("KSYNC {\"kind\":\"pi_wait\",\"case\":\"%s\",\"lock\":\"%s\","
				"\"sched\":\"%s\",\"scheme\":\"%s\",\"cpus\":%u,\"unit\":\"tsc_ticks\","
				"\"tsc_hz\":%lu,\"section_us\":%u,\"medium_us\":%u,"
				"\"section_ticks\":%lu,\"medium_ticks\":%lu,\"n\":%u,\"min\":%lu,"
				"\"median\":%lu,\"p99\":%lu,\"max\":%lu,\"missed\":%u",
				two ? "2cpu" : "1cpu", lock_names[kind], sched, spl_scheme_name(),
				arch_ncpus(), (unsigned long)arch_tsc_hz(), section_us, medium_us,
				(unsigned long)section_ticks, (unsigned long)medium_ticks, n[kind],
				(unsigned long)st.min, (unsigned long)st.median,
				(unsigned long)st.p99, (unsigned long)st.max, missed[kind]);
			emit_list("waits", waits[kind], n[kind]);
			emit_list("medium_done_pct", done_pct[kind], n[kind]);
			if (kind == PI_HELPING)
				kprintf(",\"helps_local\":%lu,\"helps_remote\":%lu",
					(unsigned long)helps_local, (unsigned long)helps_remote);
			kprintf("}\n");
		}
	}
	sched_table_default();
	(void)sched_stop();
	(void)lockstat_set_mode(mode);
	KT_EXPECT_EQ(failed, 0u);
}

/* the priority-inversion runs; the body is a named function (experiment.h says why) */
KEXPERIMENT(pi, "default")
{
	pi_experiment(kt);
}
