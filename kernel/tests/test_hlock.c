/*
 * test_hlock.c - wait-free locks with helping (issue 12; kernel/sched/hlock.c;
 * Hohmuth & Haertig 2001 sections 3.3 and 4.3).
 *
 * What is asserted: mutual exclusion and no lost hand-off (an exact count under the lock,
 * threads of every level on every CPU, both schedulers; every locker returns within a
 * bound instead of hanging); priority inversion bounded - a low-priority owner, a
 * medium-priority CPU hog and a high-priority waiter: the waiter gets the lock after the
 * owner's section and before the hog's work is done, on one CPU (helping by a directed
 * switch) and across CPUs (owner preempted on another CPU: remote donation); a thread
 * holding two locks keeps its boost until its last release (the hog makes no progress
 * between the two releases); nested helping (A helps B who helps C) reaches C; every
 * switch-hint value; thread deletion refused while a thread holds locks; invalidation
 * returns KSYNC_EINVAL to every helper and to later lockers; synchronous messages in
 * order. Work is counted in loop iterations, never in time, so a slow or noisy host does
 * not change the verdicts. Priorities: the strict table {0} (hard priorities).
 */
#include "kernel.h"
#include "thread.h"
#include "hlock.h"
#include "sched_testutil.h"
#include "serializer.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>
#include <stdatomic.h>

LOCK_CLASS(test_hlock_class, "test_hlock", LOCK_HELPING, LOCK_DATA);
LOCK_CLASS(test_hlock2_class, "test_hlock2", LOCK_HELPING, LOCK_DATA);


/* Busy work counted in iterations (a poll point per iteration: hosted TSan builds take
 * their frame calls there). */
static volatile unsigned high_got;
static void work(uint64_t n, volatile uint64_t *progress)
{
	for (uint64_t i = 0; i < n; i++) {
		/* the hog stops once the waiter has the lock: its remaining work would only
		 * cost time (under TCG, seconds) */
		if (progress && i % 64 == 0 && __atomic_load_n(&high_got, __ATOMIC_ACQUIRE) == 2)
			break;
		if (progress)
			__atomic_store_n(progress, i + 1, __ATOMIC_RELAXED);
		arch_cpu_relax();
	}
}

/* ---- mutual exclusion, no lost hand-off ------------------------------------------------- */

static struct hlock lk, lk2;
static volatile uint64_t counter;	/* lk */
static volatile unsigned done_n;

static void ex_worker(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < n; i++) {
		if (hlock_lock(&lk) != KSYNC_OK)
			panic("ex_worker: lock failed");
		uint64_t v = counter;	/* a lost update shows as a short count */
		arch_cpu_relax();
		if (i % 7 == 0)
			thread_yield();	/* preempted inside: others must help */
		counter = v + 1;
		hlock_unlock(&lk);
	}
	__atomic_fetch_add(&done_n, 1, __ATOMIC_RELEASE);
}

KTEST(hlock_exclusion_and_handoff)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		for (unsigned strict = 0; strict < 2; strict++) {
			if (strict)
				strict_on();
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			hlock_init(&lk, &test_hlock_class, NULL);
			hlock_stats_reset();
			counter = 0;
			done_n = 0;
			/* vCPUs outnumbering host cores (hosted -smp 4 on two cores): every switch
			 * of the locked scheduler convoys on its FIFO ticket lock (a hand-off waits
			 * for a descheduled vCPU), and helping is made of switches: a lighter load */
			unsigned nthr = (oversubscribed() ? 2 : 3) * ncpu();
			if (nthr > 12)
				nthr = 12;	/* t[] below; QEMU -smp 8 may be oversubscribed */
			/* QEMU -smp 4 and 8 on a two-core host: emulated CPUs outnumber host cores
			 * too (each is a host thread), and a helper spinning on a remote owner keeps
			 * a host core that owner's vCPU needs: the total shrinks with the CPUs */
			unsigned total = oversubscribed() || ncpu() >= 8 ? 480u : ncpu() >= 4 ? 1500u : 12000u;
			unsigned iters = total / nthr;
			struct thread *t[12];
			for (unsigned i = 0; i < nthr; i++)
				KT_ASSERT_EQ(thread_create(&t[i], ex_worker, (void *)(uintptr_t)iters,
							   strict ? 1 : 1 + i % (SCHED_LEVELS - 1),
							   (i % 3 == 2) ? SCHED_AFFINITY_ANY : 1ull << (i % ncpu()),
							   "hx", 0), KSYNC_OK);
			for (unsigned i = 0; i < nthr; i++)
				KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
			KT_EXPECT_EQ(counter, (uint64_t)nthr * iters);
			KT_EXPECT(hlock_owner(&lk) == NULL);
			KT_EXPECT_EQ(atomic_load_explicit(&lk.word, memory_order_relaxed), 0);
			struct hlock_stats st;
			hlock_stats_get(&st);
			kt_diag(kt, "%s%s: %u threads x %u: contended %lu, helps here %lu, remote %lu, "
				"not %lu, hand-offs %lu", s, strict ? " strict" : "", nthr, iters,
				(unsigned long)st.contended, (unsigned long)st.helps_local,
				(unsigned long)st.helps_remote, (unsigned long)st.helps_not,
				(unsigned long)st.handoffs);
			/* how often others met the lock taken depends on timing: reported, not
			 * asserted (the inversion, chain and hint tests construct helping) */
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
			strict_off();
		}
	}
}

/* ---- priority inversion bounded ---------------------------------------------------------- */

#define CS_ITERS 20000ull		/* the owner's section */
#define HOG_ITERS (60 * CS_ITERS)	/* the medium-priority hog's work */

static struct thread *t_low, *t_mid, *t_high;
static volatile uint64_t hog_progress, hog_at_acquire, low_cs_progress, low_cs_at_acquire;
static volatile uint64_t hog_at_attempt;	/* the hog's count when the waiter asked */
static volatile unsigned hog_ran_between;
/* The owner's view (written by the owner only): the hog's count when the owner first saw
 * itself boosted, and at its last release. Both on the owner's CPU, so their difference
 * does not depend on when the host runs the waiter's vCPU. */
static volatile uint64_t hog_at_boost, hog_at_release;
static volatile unsigned low_saw_boost;
static volatile unsigned scenario;	/* 0: one lock; 1: two locks (boost kept) */

static void inv_high(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);	/* the hog wakes us */
	hog_at_attempt = __atomic_load_n(&hog_progress, __ATOMIC_RELAXED);
	KASSERT(hlock_lock(&lk) == KSYNC_OK);
	hog_at_acquire = __atomic_load_n(&hog_progress, __ATOMIC_RELAXED);
	low_cs_at_acquire = __atomic_load_n(&low_cs_progress, __ATOMIC_RELAXED);
	__atomic_store_n(&high_got, 1, __ATOMIC_RELEASE);
	hlock_unlock(&lk);
	__atomic_store_n(&high_got, 2, __ATOMIC_RELEASE);	/* the hog may stop */
}

static void inv_mid(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);	/* the owner wakes us: we preempt it */
	sched_wakeup(t_high, SCHED_COND_USER);	/* (on one CPU: the waiter preempts us) */
	work(HOG_ITERS, &hog_progress);
}

static void inv_low(void *arg)
{
	(void)arg;
	KASSERT(hlock_lock(&lk) == KSYNC_OK);
	if (scenario == 1)
		KASSERT(hlock_lock(&lk2) == KSYNC_OK);
	sched_wakeup(t_mid, SCHED_COND_USER);	/* higher than us: preempts us at once */
	struct thread *me = thread_self();
	unsigned base = thread_level(me);
	for (uint64_t i = 0; i < CS_ITERS; i++) {
		if (!low_saw_boost && i % 64 == 0 && thread_eff_level(me) < base) {
			hog_at_boost = __atomic_load_n(&hog_progress, __ATOMIC_RELAXED);
			low_saw_boost = 1;
		}
		__atomic_store_n(&low_cs_progress, i + 1, __ATOMIC_RELAXED);
		arch_cpu_relax();
	}
	if (scenario == 1) {
		/* the first of two releases: the boost must stay, the hog must not run */
		uint64_t before = __atomic_load_n(&hog_progress, __ATOMIC_RELAXED);
		unsigned lvl_before = thread_eff_level(thread_self());
		hlock_unlock(&lk2);
		unsigned lvl_after = thread_eff_level(thread_self());
		work(CS_ITERS / 4, NULL);
		if (__atomic_load_n(&hog_progress, __ATOMIC_RELAXED) != before || lvl_after != lvl_before)
			__atomic_store_n(&hog_ran_between, 1 + (lvl_after != lvl_before), __ATOMIC_RELAXED);
	}
	hog_at_release = __atomic_load_n(&hog_progress, __ATOMIC_RELAXED);
	hlock_unlock(&lk);
}

/* cross = 0: everything on CPU 0; 1: owner and hog on CPU 1, waiter on CPU 0. */
static void run_inversion(struct ktest_ctx *kt, const char *s, unsigned cross, unsigned sc)
{
	strict_on();
	KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
	hlock_init(&lk, &test_hlock_class, NULL);
	hlock_init(&lk2, &test_hlock2_class, NULL);
	hlock_stats_reset();
	hog_progress = hog_at_acquire = hog_at_attempt = low_cs_progress = low_cs_at_acquire = 0;
	high_got = hog_ran_between = 0;
	hog_at_boost = hog_at_release = 0;
	low_saw_boost = 0;
	scenario = sc;
	uint64_t cpu_lm = cross ? 2 : 1, cpu_h = 1;
	KT_ASSERT_EQ(thread_create(&t_high, inv_high, NULL, 0, cpu_h, "high", 0), KSYNC_OK);
	KT_ASSERT_EQ(thread_create(&t_mid, inv_mid, NULL, 2, cpu_lm, "hog", 0), KSYNC_OK);
	KT_ASSERT_EQ(thread_create(&t_low, inv_low, NULL, 3, cpu_lm, "low", 0), KSYNC_OK);
	KT_EXPECT_EQ(thread_join(t_low), KSYNC_OK);
	KT_EXPECT_EQ(thread_join(t_mid), KSYNC_OK);
	KT_EXPECT_EQ(thread_join(t_high), KSYNC_OK);
	KT_EXPECT_EQ(high_got, 2u);
	/* after the owner's whole section ... */
	KT_EXPECT_EQ(low_cs_at_acquire, CS_ITERS);
	/* ... with the owner boosted above the hog (no inheritance: it would run only after
	 * the hog's whole work), and the hog idle from the moment the owner ran boosted until
	 * its release: both counts are read on the owner's CPU, so this holds however the
	 * host schedules the vCPUs (it also holds where the waiter's request is slow to
	 * arrive: a boost that comes late is still a boost the hog cannot run under). */
	KT_EXPECT_EQ(low_saw_boost, 1u);
	KT_EXPECT_EQ(hog_at_release - hog_at_boost, 0u);
	/* How far the hog got from the waiter's request to its acquisition, bounded on one
	 * CPU only: the count is read by the waiter, and across CPUs it also measures how
	 * long the host left the waiter's vCPU unscheduled before the request was posted
	 * and after the release (seen: above half of HOG_ITERS with 4 vCPUs on 2 cores, in
	 * the TSan build whose IPIs wait for TSan's safe points, and in a make test where
	 * the other xdist worker's QEMU shared the waiter's core). Reported across CPUs. */
	uint64_t hog_waited = hog_at_acquire - hog_at_attempt;
	if (!cross)
		KT_EXPECT(hog_waited < HOG_ITERS / 2);
	if (sc == 1)
		KT_EXPECT_EQ(hog_ran_between, 0u);	/* boost kept until the last release */
	struct hlock_stats st;
	hlock_stats_get(&st);
	kt_diag(kt, "%s %s%s: hog at %lu of %lu iterations when the waiter asked, %lu more "
		"until it got the lock; helps here %lu, remote %lu%s", s,
		cross ? "across CPUs" : "one CPU", sc ? ", owner holds two locks" : "",
		(unsigned long)hog_at_attempt, (unsigned long)HOG_ITERS, (unsigned long)hog_waited,
		(unsigned long)st.helps_local, (unsigned long)st.helps_remote,
		cross ? " (across CPUs: reported, not bounded)" : "");
	if (cross)
		KT_EXPECT(st.helps_remote > 0);
	else
		KT_EXPECT(st.helps_local > 0);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	strict_off();
}

KTEST(hlock_priority_inversion_bounded)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		run_inversion(kt, s, 0, 0);
		run_inversion(kt, s, 0, 1);
		if (ncpu() >= 2) {
			run_inversion(kt, s, 1, 0);
			run_inversion(kt, s, 1, 1);
		}
	}
}

/* ---- nested helping: A helps B who helps C ------------------------------------------------ */

static struct thread *t_a, *t_b, *t_c;
static volatile unsigned order_seq, a_order, b_order, c_order;

static void nest_c(void *arg)
{
	(void)arg;
	KASSERT(hlock_lock(&lk2) == KSYNC_OK);
	sched_wakeup(t_b, SCHED_COND_USER);	/* B preempts us, takes lk, helps us on lk2 */
	sched_wakeup(t_a, SCHED_COND_USER);	/* A preempts us (boosted to B's level) */
	work(CS_ITERS, NULL);
	c_order = __atomic_add_fetch(&order_seq, 1, __ATOMIC_RELAXED);
	hlock_unlock(&lk2);
}

static void nest_b(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);
	KASSERT(hlock_lock(&lk) == KSYNC_OK);
	KASSERT(hlock_lock(&lk2) == KSYNC_OK);	/* helps C */
	b_order = __atomic_add_fetch(&order_seq, 1, __ATOMIC_RELAXED);
	hlock_unlock(&lk2);
	hlock_unlock(&lk);
}

static void nest_a(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);
	KASSERT(hlock_lock(&lk) == KSYNC_OK);	/* helps B, who helps C */
	a_order = __atomic_add_fetch(&order_seq, 1, __ATOMIC_RELAXED);
	hlock_unlock(&lk);
}

KTEST(hlock_nested_helping_chain)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		strict_on();
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		hlock_init(&lk, &test_hlock_class, NULL);
		hlock_init(&lk2, &test_hlock2_class, NULL);
		hlock_stats_reset();
		order_seq = a_order = b_order = c_order = 0;
		KT_ASSERT_EQ(thread_create(&t_a, nest_a, NULL, 0, 1, "A", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&t_b, nest_b, NULL, 1, 1, "B", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&t_c, nest_c, NULL, 3, 1, "C", 0), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_c), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_b), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_a), KSYNC_OK);
		KT_EXPECT_EQ(c_order, 1u);
		KT_EXPECT_EQ(b_order, 2u);
		KT_EXPECT_EQ(a_order, 3u);
		struct hlock_stats st;
		hlock_stats_get(&st);
		kt_diag(kt, "%s: chain depth %lu, helps %lu", s, (unsigned long)st.chain_max,
			(unsigned long)st.helps_local);
		KT_EXPECT(st.chain_max >= 1);	/* A donated past B, to C */
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		strict_off();
	}
}

/* ---- the switch hint ---------------------------------------------------------------------- */

static struct thread *t_locker, *t_other;
static volatile unsigned other_ran, seen_after_unlock;
static volatile unsigned hint_case;

static void hint_other(void *arg)	/* the locked thread (lower) or a helper (higher) */
{
	(void)arg;
	if (hint_case >= 2) {		/* a helper */
		sched_sleep(SCHED_COND_USER);
		KASSERT(hlock_lock(&lk) == KSYNC_OK);
		__atomic_store_n(&other_ran, 1, __ATOMIC_RELEASE);
		hlock_unlock(&lk);
		return;
	}
	sched_sleep(SCHED_COND_USER);
	__atomic_store_n(&other_ran, 1, __ATOMIC_RELEASE);
}

/* Release, then look whether the other thread ran, and whether a clock tick on this CPU
 * fell between the two. The hint decides only the release's own switch: a tick may rightly
 * hand the CPU to a higher helper right after it (case 3), and the look would take that
 * for the hint's doing. Such a round is not judged; the test repeats it. (Masking IRQs
 * instead would hide the bug too: a masked release may not switch at all.) */
static volatile unsigned tick_in_window;
static void release_and_look(struct hlock *l)
{
	uint64_t t0 = sched_cpu_ticks(arch_cpu_id());
	hlock_unlock(l);
	seen_after_unlock = __atomic_load_n(&other_ran, __ATOMIC_ACQUIRE);
	tick_in_window = sched_cpu_ticks(arch_cpu_id()) != t0;	/* pinned: one CPU's count */
}

static void hint_locker(void *arg)
{
	(void)arg;
	if (hint_case < 2) {
		/* lock the lower-priority thread's own lock, wake it, release with the hint */
		struct hlock *tl = thread_lock(t_other);
		KASSERT(hlock_lock(tl) == KSYNC_OK);
		sched_wakeup(t_other, SCHED_COND_USER);
		hlock_set_hint(tl, hint_case == 0 ? HLOCK_HINT_LOCKED : HLOCK_HINT_LOCKER);
		release_and_look(tl);
	} else {
		/* a higher-priority helper waits on the stack when we release */
		KASSERT(hlock_lock(&lk) == KSYNC_OK);
		sched_wakeup(t_other, SCHED_COND_USER);	/* it preempts us and helps */
		hlock_set_hint(&lk, hint_case == 2 ? HLOCK_HINT_PRIO : HLOCK_HINT_LOCKER);
		release_and_look(&lk);
	}
}

KTEST(hlock_switch_hints)
{
	/* case: 0 LOCKED (the locked, lower thread runs first), 1 LOCKER (we go on),
	 * 2 PRIO with a higher helper (it runs first), 3 LOCKER with a higher helper (we go
	 * on although it is higher) */
	static const unsigned want_seen[4] = { 1, 0, 1, 0 };
	static const char *const names[4] = { "locked", "locker", "prio", "locker+helper" };
	const char *s;
	FOR_EACH_SCHED(s) {
		for (unsigned c = 0, tries = 0; c < 4; c++) {
			strict_on();
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			hlock_init(&lk, &test_hlock_class, NULL);
			hint_case = c;
			other_ran = seen_after_unlock = tick_in_window = 0;
			unsigned other_level = c < 2 ? 2 : 0;
			KT_ASSERT_EQ(thread_create(&t_other, hint_other, NULL, other_level, 1, "other", 0), KSYNC_OK);
			KT_ASSERT_EQ(thread_create(&t_locker, hint_locker, NULL, 1, 1, "locker", 0), KSYNC_OK);
			KT_EXPECT_EQ(thread_join(t_locker), KSYNC_OK);
			KT_EXPECT_EQ(thread_join(t_other), KSYNC_OK);
			KT_EXPECT_EQ(other_ran, 1u);
			/* where the locker goes on, a round with a tick in the window is not judged:
			 * run the case again (where the release switches, a tick cannot undo that) */
			if (!want_seen[c] && tick_in_window && ++tries < 8) {
				KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
				strict_off();
				c--;
				continue;
			}
			if (tries)
				kt_diag(kt, "%s hint %s: %u round(s) had a clock tick between the release and "
					"the look, repeated", s, names[c], tries);
			tries = 0;
			if (seen_after_unlock != want_seen[c])
				kt_diag(kt, "%s hint %s: the other thread %s before the locker went on", s,
					names[c], seen_after_unlock ? "ran" : "had not run");
			KT_EXPECT_EQ(seen_after_unlock, want_seen[c]);
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
			strict_off();
		}
	}
}

/* ---- deletion: the count, invalidation ---------------------------------------------------- */

static volatile unsigned holder_go, holder_has, inval_rc_n;
static volatile int inval_rc[4];

static void holder(void *arg)
{
	(void)arg;
	KASSERT(hlock_lock(&lk) == KSYNC_OK);
	KASSERT(hlock_lock(&lk2) == KSYNC_OK);
	__atomic_store_n(&holder_has, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&holder_go, __ATOMIC_ACQUIRE))
		thread_yield();		/* not sleeping: that is forbidden here */
	hlock_unlock(&lk2);
	/* delete the object: its helpers get KSYNC_EINVAL */
	hlock_invalidate(&lk);
	__atomic_store_n(&holder_has, 2, __ATOMIC_RELEASE);
	while (__atomic_load_n(&holder_go, __ATOMIC_ACQUIRE) != 2)
		thread_yield();
}

static void inval_helper(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	inval_rc[i] = hlock_lock(&lk);
	__atomic_fetch_add(&inval_rc_n, 1, __ATOMIC_RELEASE);
}

KTEST(hlock_delete_refused_and_invalidation)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		hlock_init(&lk, &test_hlock_class, NULL);
		hlock_init(&lk2, &test_hlock2_class, NULL);
		hlock_stats_reset();
		holder_go = holder_has = inval_rc_n = 0;
		struct thread *h, *w[3];
		KT_ASSERT_EQ(thread_create(&h, holder, NULL, 2, SCHED_AFFINITY_ANY, "holder", 0), KSYNC_OK);
		uint64_t t0 = arch_cycles();
		while (!__atomic_load_n(&holder_has, __ATOMIC_ACQUIRE) && arch_cycles() - t0 < ms_ticks(20000))
			thread_yield();
		KT_ASSERT_EQ(holder_has, 1u);
		KT_EXPECT_EQ(thread_locks_held(h), 2u);
		KT_EXPECT_EQ(thread_kill(h), KSYNC_EBUSY);	/* Fiasco's count check */
		KT_EXPECT_EQ(thread_suspend(h), KSYNC_EBUSY);
		for (unsigned i = 0; i < 3; i++)
			KT_ASSERT_EQ(thread_create(&w[i], inval_helper, (void *)(uintptr_t)i, i % 2 ? 1 : 3,
						   i == 2 ? SCHED_AFFINITY_ANY : 1ull << (i % ncpu()), "inv", 0),
				     KSYNC_OK);
		/* the helpers push themselves (the word's top becomes non-zero) */
		t0 = arch_cycles();
		while ((atomic_load_explicit(&lk.word, memory_order_acquire) & HLOCK_TOP_MASK) == 0 &&
		       arch_cycles() - t0 < ms_ticks(20000))
			thread_yield();
		__atomic_store_n(&holder_go, 1, __ATOMIC_RELEASE);
		t0 = arch_cycles();
		while (__atomic_load_n(&inval_rc_n, __ATOMIC_ACQUIRE) < 3 && arch_cycles() - t0 < ms_ticks(20000))
			thread_yield();
		KT_EXPECT_EQ(inval_rc_n, 3u);
		for (unsigned i = 0; i < 3; i++)
			KT_EXPECT_EQ(inval_rc[i], KSYNC_EINVAL);
		KT_EXPECT(!hlock_valid(&lk));
		KT_EXPECT_EQ(hlock_lock(&lk), KSYNC_EINVAL);	/* later lockers too */
		KT_EXPECT_EQ(hlock_trylock(&lk), KSYNC_EINVAL);
		KT_EXPECT_EQ(thread_locks_held(thread_self()), 0u);
		KT_EXPECT_EQ(thread_locks_held(h), 0u);
		struct hlock_stats st;
		hlock_stats_get(&st);
		KT_EXPECT(st.invalid_returns >= 3);
		/* holding nothing now: it may be deleted */
		KT_EXPECT_EQ(thread_kill(h), KSYNC_OK);
		__atomic_store_n(&holder_go, 2, __ATOMIC_RELEASE);
		KT_EXPECT_EQ(thread_join(h), KSYNC_OK);
		for (unsigned i = 0; i < 3; i++)
			KT_EXPECT_EQ(thread_join(w[i]), KSYNC_OK);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* ---- synchronous messages ------------------------------------------------------------------ */

#define IPC_N 2000u
static volatile uint64_t ipc_sum, ipc_bad;

static void ipc_receiver(void *arg)
{
	(void)arg;
	for (uint64_t i = 1; i <= IPC_N; i++) {
		uint64_t m = hipc_recv();
		if (m != i)
			ipc_bad++;
		ipc_sum += m;
	}
}

static void ipc_sender(void *arg)
{
	struct thread *r = arg;
	for (uint64_t i = 1; i <= IPC_N; i++) {
		int rc;
		while ((rc = hipc_send(r, i)) == KSYNC_EBUSY)
			thread_yield();	/* the receiver is not waiting yet */
		KASSERT(rc == KSYNC_OK);
	}
}

KTEST(hlock_ipc_in_order)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		for (unsigned cross = 0; cross < (ncpu() >= 2 ? 2u : 1u); cross++) {
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			ipc_sum = ipc_bad = 0;
			struct thread *r, *snd;
			KT_ASSERT_EQ(thread_create(&r, ipc_receiver, NULL, 1, 1, "rcv", 0), KSYNC_OK);
			KT_ASSERT_EQ(thread_create(&snd, ipc_sender, r, 1, cross ? 2 : 1, "snd", 0), KSYNC_OK);
			KT_EXPECT_EQ(thread_join(snd), KSYNC_OK);
			KT_EXPECT_EQ(thread_join(r), KSYNC_OK);
			KT_EXPECT_EQ(ipc_bad, 0u);
			KT_EXPECT_EQ(ipc_sum, (uint64_t)IPC_N * (IPC_N + 1) / 2);
			KT_EXPECT_EQ(hipc_send(NULL, 1), KSYNC_EINVAL);
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		}
	}
}

/* ---- the single server revisited (section 4.4): requesters donate to the server --------- */

static struct serializer ssrv;
static volatile uint64_t ssrv_counter;	/* the server's alone */

static long ssrv_inc(void *obj, void *arg)
{
	(void)obj;
	(void)arg;
	work(CS_ITERS, NULL);	/* a long operation: the hog would run meanwhile without donation */
	return (long)++ssrv_counter;
}

static void ssrv_high(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);	/* the hog wakes us */
	struct ser_req r;
	KASSERT(ser_call(&ssrv, &r, ssrv_inc, NULL, true) == KSYNC_OK);
	hog_at_acquire = __atomic_load_n(&hog_progress, __ATOMIC_RELAXED);
	__atomic_store_n(&high_got, 2, __ATOMIC_RELEASE);
}

static void ssrv_hog(void *arg)
{
	(void)arg;
	sched_wakeup(t_high, SCHED_COND_USER);	/* preempts us on one CPU */
	work(HOG_ITERS, &hog_progress);
}

KTEST(hlock_single_server_donation)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		strict_on();
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		hog_progress = hog_at_acquire = 0;
		high_got = 0;
		ssrv_counter = 0;
		/* the server below the hog: only the requester's donation runs it first */
		KT_ASSERT_EQ(ser_init(&ssrv, SER_DONATE, NULL, 3, "server"), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&t_high, ssrv_high, NULL, 0, 1, "high", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&t_mid, ssrv_hog, NULL, 2, 1, "hog", 0), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_mid), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_high), KSYNC_OK);
		KT_EXPECT_EQ(ser_destroy(&ssrv), KSYNC_OK);
		KT_EXPECT_EQ(ssrv_counter, 1u);
		KT_EXPECT_EQ(high_got, 2u);
		KT_EXPECT(hog_at_acquire < HOG_ITERS / 2);
		kt_diag(kt, "%s: hog at %lu of %lu iterations when the request was done", s,
			(unsigned long)hog_at_acquire, (unsigned long)HOG_ITERS);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		strict_off();
	}
}

/* ---- spinning helpers give the host core back (oversubscribed hosted vCPUs) ------------
 * The owner runs on CPU 1 and holds the lock until the helper on CPU 0 has pushed itself
 * (the word shows a helper) and has helped: finding the owner running elsewhere it asks
 * CPU 1 to run the owner first (a remote donation, helps_remote) - the owner waits for
 * HELP_ASKS of those, every one followed by the helper's decision whether to give its
 * host core back, and, on a port that yields (the hosted port with more vCPUs than host
 * cores), for a yield (arch_spin_yield_host); a liveness bound of 10 s. The helper must
 * have helped on every port; it must yield exactly where the port yields (a no-op
 * elsewhere: x86_64, whose spin the hypervisor's pause-loop exiting sees, or a host with
 * a core per vCPU). No other thread takes an hlock meanwhile, so the global statistics
 * are this pair's. */
#define HELP_ASKS 8
static struct thread *t_yo, *t_yh;
static volatile unsigned yo_done, yh_done;

static void yield_owner(void *arg)
{
	bool yields = arg != NULL;
	KASSERT(hlock_lock(&lk) == KSYNC_OK);
	sched_wakeup(t_yh, SCHED_COND_USER);
	uint64_t dl = arch_cycles() + 10 * arch_tsc_hz();
	while (!(atomic_load_explicit(&lk.word, memory_order_acquire) & HLOCK_TOP_MASK) &&
	       (int64_t)(arch_cycles() - dl) < 0)
		arch_cpu_relax();		/* until the helper is on the stack */
	struct hlock_stats st;
	do {
		arch_cpu_relax();
		hlock_stats_get(&st);
	} while ((st.helps_remote < HELP_ASKS || (yields && !st.host_yields)) &&
		 (int64_t)(arch_cycles() - dl) < 0);
	hlock_unlock(&lk);
	yo_done = 1;
}

static void yield_helper(void *arg)
{
	(void)arg;
	sched_sleep(SCHED_COND_USER);
	KASSERT(hlock_lock(&lk) == KSYNC_OK);
	hlock_unlock(&lk);
	yh_done = 1;
}

KTEST(hlock_spinning_helper_yields_host_core)
{
	if (ncpu() < 2)
		KT_SKIP("needs 2 CPUs (the owner runs on the other one)");
	/* Does this port give the host core back? Ask it once (a yield is harmless here);
	 * the contract (arch_if.h): the hosted port exactly when oversubscribed, x86_64
	 * never. */
	struct arch_facts f;
	arch_get_facts(&f);
	bool yields = arch_spin_yield_host();
	KT_EXPECT_EQ(yields, !strcmp(f.port, "hosted") && f.oversubscribed);
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		hlock_init(&lk, &test_hlock_class, NULL);
		hlock_stats_reset();
		yo_done = yh_done = 0;
		KT_ASSERT_EQ(thread_create(&t_yh, yield_helper, NULL, 1, 1ull << 0, "helper", 0),
			     KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&t_yo, yield_owner, yields ? (void *)1 : NULL, 1,
					   1ull << 1, "owner", 0), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_yo), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(t_yh), KSYNC_OK);
		KT_EXPECT(yo_done && yh_done);
		struct hlock_stats st;
		hlock_stats_get(&st);
		kt_diag(kt, "%s: %s, helps remote %lu, not %lu, host yields %lu", s,
			oversubscribed() ? "oversubscribed" : "a core per vCPU",
			(unsigned long)st.helps_remote, (unsigned long)st.helps_not,
			(unsigned long)st.host_yields);
		/* the helper met the lock taken and helped: it asked the owner's CPU to run it */
		KT_EXPECT(st.contended >= 1);
		KT_EXPECT(st.helps_remote >= HELP_ASKS);
		if (yields)
			KT_EXPECT(st.host_yields > 0);
		else
			KT_EXPECT_EQ(st.host_yields, 0);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}
