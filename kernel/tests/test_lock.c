/*
 * test_lock.c - master locks, monitor locks, condition variables and lock statistics
 * (issue 11; kernel/lock/, Hartman & Ousterhout sections 2 and 4).
 *
 * Semantics: mutual exclusion for each master-lock algorithm and for monitors in every
 * release and queue mode under both schedulers (a plain counter under the lock, exact);
 * no lost wakeup (every waiter returns, waits are bounded so a lost one fails instead of
 * hanging); broadcast wakes every waiter, signal exactly one; hand-off is FIFO.
 * Statistics exact on constructed cases: a master lock's one miss per contended
 * acquisition; a monitor under broadcast whose misses exceed its hits (K waiters: K+1
 * hits, K(K+1)/2 misses); futile wakeups; transient instances created and destroyed in
 * their thousands whose class totals equal the sum of the instances' own counts; a reset
 * in the middle of a run; snapshots read while every CPU updates them are consistent
 * (histogram sums equal counts, one wait per miss). Bad use panics are tested by the
 * crash= options from the host (tests/test_lock_host.py).
 */
#include "kernel.h"
#include "thread.h"
#include "monitor.h"
#include "mm.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>

LOCK_CLASS(test_master_class, "test_master", LOCK_MASTER, LOCK_DATA);
LOCK_CLASS(test_monitor_class, "test_monitor", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(test_transient_class, "test_transient", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(test_cv_class, "test_cv", LOCK_CONDVAR, LOCK_DATA);
LOCK_CLASS(test_churn_class, "test_churn", LOCK_MASTER, LOCK_DATA);

static const char *const scheds[] = { "lockfree", "locked" };
#define FOR_EACH_SCHED(name) for (unsigned si_ = 0; si_ < 2 && ((name) = scheds[si_], 1); si_++)

static unsigned ncpu(void) { return arch_ncpus(); }
static uint64_t ms_ticks(uint64_t ms) { return arch_tsc_hz() / 1000 * ms; }

/* Wait (yielding: a poll point in every build) until cond holds or `ms` pass. */
#define WAIT_UNTIL(cond, ms)                                                          \
	({                                                                            \
		uint64_t w0_ = arch_cycles(), lim_ = ms_ticks(ms);                    \
		while (!(cond) && arch_cycles() - w0_ < lim_)                         \
			thread_yield();                                               \
		(bool)(cond);                                                         \
	})

static bool oversubscribed(void)
{
	struct arch_facts f;
	arch_get_facts(&f);
	return f.oversubscribed;
}

/* The hosted port oversubscribed: the skips below were made for its vCPU threads (a
 * descheduled one holds its CPU's spin lock for a host slice); QEMU -smp 4/8 on two host
 * CPUs (oversubscribed too, since the tool passes host_cpus=) has run these cases as
 * they are, and keeps running them. */
static bool hosted_oversubscribed(void)
{
	struct arch_facts f;
	arch_get_facts(&f);
	return f.oversubscribed && !strcmp(f.port, "hosted");
}

static struct lockstat_snap snap;	/* one test at a time */

static void read_class(const struct lock_class *c) { lockstat_read(c, &snap); }

/* ---- master locks: exclusion, exact counts ---------------------------------------------- */

/* Acquisitions per thread: FIFO spin locks convoy when vCPUs outnumber host cores (a
 * hosted oversubscribed run, or QEMU -smp 4/8 on a two-core host: a waiter whose ticket
 * is next may wait for a host time slice), so the total shrinks with the CPU count. */
static unsigned mx_iters(unsigned nthr)
{
	unsigned total = ncpu() >= 8 ? 320u : ncpu() >= 4 ? 1000u : 8000u;
	if (oversubscribed() && total > 1600u)
		total = 1600u;		/* never more than the CPU count alone gives */
	return total / nthr;
}
#define MX_ITERS mx_iters(nthr)
static struct mlock mx;
static volatile uint64_t mx_counter;	/* mx */
static volatile unsigned mx_done;

static void mx_worker(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < n; i++) {
		mlock_lock(&mx);
		uint64_t v = mx_counter;	/* a lost update shows as a short count */
		arch_cpu_relax();
		mx_counter = v + 1;
		mlock_unlock(&mx);
	}
	__atomic_fetch_add(&mx_done, 1, __ATOMIC_RELEASE);
}

KTEST(lock_mlock_exclusion_each_algo)
{
	const char *s;
	KT_ASSERT_EQ(lockstat_set_mode(LOCKSTAT_TIMING), KSYNC_OK);
	FOR_EACH_SCHED(s) {
		for (unsigned a = 0; a < MLOCK_NALGOS; a++) {
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			KT_ASSERT_EQ(mlock_init(&mx, &test_master_class, a), KSYNC_OK);
			mx_counter = 0;
			mx_done = 0;
			lockstat_reset();
			unsigned nthr = 2 * ncpu();
			struct thread *t[16];
			if (nthr > 16)
				nthr = 16;
			for (unsigned i = 0; i < nthr; i++)
				KT_ASSERT_EQ(thread_create(&t[i], mx_worker, (void *)(uintptr_t)MX_ITERS, 0,
							   1ull << (i % ncpu()), "mx", 0), KSYNC_OK);
			for (unsigned i = 0; i < nthr; i++)
				KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
			uint64_t want = (uint64_t)nthr * MX_ITERS;
			KT_EXPECT_EQ(mx_counter, want);
			read_class(&test_master_class);
			KT_EXPECT_EQ(snap.hits, want);
			/* in the lock, except (ticket) a release's that a waiter spun on: its
			 * hit went to the shard (mlock_waited_on) */
			if (a == MLOCK_TICKET)
				KT_EXPECT(mx.st.hits <= want);
			else
				KT_EXPECT_EQ(mx.st.hits, want);
			KT_EXPECT(snap.misses <= snap.hits);		/* at most one per hit */
			KT_EXPECT_EQ(snap.wait.n, snap.misses);		/* one wait per miss */
			KT_EXPECT_EQ(snap.hold.n, want);
			KT_EXPECT_EQ(snap.irqoff.n, want);
			uint64_t hsum = 0;
			for (unsigned i = 0; i < LOCKSTAT_HIST; i++)
				hsum += snap.hold.hist[i];
			KT_EXPECT_EQ(hsum, want);
			KT_EXPECT(snap.hold.min <= snap.hold.max);
			kt_diag(kt, "%s %s: %u threads x %u: misses %lu spins %lu migrations %lu",
				s, mlock_algo_name(a), nthr, MX_ITERS, (unsigned long)snap.misses,
				(unsigned long)snap.spins, (unsigned long)snap.migrations);
			mlock_destroy(&mx);
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		}
	}
	lockstat_set_mode(LOCKSTAT_COUNTS);
}

/* One contended acquisition, built so that it must miss: the holder waits until the
 * other CPU's thread is visibly queued (ticket taken / MCS node linked). */
static volatile unsigned mx_go;
static void mx_contender(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&mx_go, __ATOMIC_ACQUIRE))	/* the holder has it */
		thread_yield();
	mlock_lock(&mx);
	mlock_unlock(&mx);
}

static bool queued_behind(const struct mlock *l)
{
	if (l->algo == MLOCK_TICKET)
		return __atomic_load_n(&l->u.tk.next, __ATOMIC_ACQUIRE) -
		       __atomic_load_n(&l->u.tk.serving, __ATOMIC_ACQUIRE) >= 2;
	return __atomic_load_n(&l->u.tail, __ATOMIC_ACQUIRE) != l->mcs_mine;
}

KTEST(lock_mlock_one_miss_per_contended_hit)
{
	if (ncpu() < 2)
		KT_SKIP("needs two CPUs");
	if (hosted_oversubscribed())
		KT_SKIP("hosted with more vCPUs than host cores: the spinning CPU may not run");
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	unsigned algos[2] = { MLOCK_TICKET, MLOCK_MCS };
	for (unsigned i = 0; i < 2; i++) {
		KT_ASSERT_EQ(mlock_init(&mx, &test_master_class, algos[i]), KSYNC_OK);
		lockstat_reset();
		mx_go = 0;
		struct thread *t;
		KT_ASSERT_EQ(thread_create(&t, mx_contender, NULL, 0, 1ull << 1, "contender", 0), KSYNC_OK);
		mlock_lock(&mx);
		__atomic_store_n(&mx_go, 1, __ATOMIC_RELEASE);
		/* interrupts are masked here (the master lock): a bounded spin, no yield */
		uint64_t t0 = arch_cycles();
		while (!queued_behind(&mx) && arch_cycles() - t0 < ms_ticks(5000))
			arch_cpu_relax();
		bool queued = queued_behind(&mx);
		mlock_unlock(&mx);
		KT_EXPECT(queued);
		KT_EXPECT_EQ(thread_join(t), KSYNC_OK);
		read_class(&test_master_class);
		KT_EXPECT_EQ(snap.hits, 2u);
		KT_EXPECT_EQ(snap.misses, 1u);
		KT_EXPECT_EQ(snap.migrations, 1u);	/* CPU 0 then CPU 1 */
		/* where the hits were counted: the ticket lock's first release had the
		 * contender spinning on its line, so that hit went to the shard and only the
		 * contender's (released with nobody waiting) is in the lock; the MCS lock's
		 * waiter spins on its own node, so both are in the lock */
		KT_EXPECT_EQ(mx.st.hits, algos[i] == MLOCK_TICKET ? 1u : 2u);
		/* the site of the miss is mx_contender's acquire */
		KT_EXPECT(snap.sites[0].site && snap.sites[0].n == 1);
		mlock_destroy(&mx);
	}
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- monitors: exclusion and no lost wakeup, every mode, both schedulers ---------------- */

/* Oversubscribed hosted vCPUs (more than host cores) spin on a ticket whose next holder
 * waits for a host time slice (a convoy, worst under TSan): fewer rounds there. */
#define MON_ITERS (oversubscribed() ? 60u : ncpu() >= 4 ? 100u : 400u)
static struct monitor mon;
static volatile uint64_t mon_counter;	/* mon */

static void mon_worker(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < n; i++) {
		mon_lock(&mon);
		uint64_t v = mon_counter;
		if (i % 8 == 0)
			thread_yield();		/* hold it across a switch now and then */
		mon_counter = v + 1;
		mon_unlock(&mon);
	}
}

KTEST(lock_monitor_exclusion_every_mode)
{
	const char *s;
	static const unsigned modes[5] = { 0, MON_HANDOFF, MON_QSCHED, MON_QSCHED | MON_HANDOFF,
					   MON_HELPING };
	FOR_EACH_SCHED(s) {
		for (unsigned mi = 0; mi < 5; mi++) {
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, modes[mi]), KSYNC_OK);
			bool helping = modes[mi] & MON_HELPING;
			/* the scheduler's lock protects the queue only under the locked scheduler */
			bool qs = !strcmp(s, "locked") && (modes[mi] & MON_QSCHED);
			KT_EXPECT_EQ(!!(mon_flags(&mon) & MON_QSCHED), qs);
			KT_EXPECT(qs ? mon.ilock != &mon.own : mon.ilock == &mon.own);
			lockstat_reset();
			mon_counter = 0;
			unsigned nthr = oversubscribed() ? 6 : ncpu() * 3 > 12 ? 12 : ncpu() * 3;
			struct thread *t[12];
			for (unsigned i = 0; i < nthr; i++)
				KT_ASSERT_EQ(thread_create(&t[i], mon_worker, (void *)(uintptr_t)MON_ITERS,
							   0, SCHED_AFFINITY_ANY, "monw", 0), KSYNC_OK);
			for (unsigned i = 0; i < nthr; i++)
				KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
			uint64_t want = (uint64_t)nthr * MON_ITERS;
			KT_EXPECT_EQ(mon_counter, want);
			read_class(&test_monitor_class);
			KT_EXPECT_EQ(snap.hits, want);
			/* a helping monitor's lock counts in the class's shards, and its contenders
			 * help instead of sleeping */
			KT_EXPECT_EQ(mon.st.hits, helping ? 0 : want);
			KT_EXPECT_EQ(snap.misses, helping ? snap.misses : mon.misses);
			if (helping) {
				KT_EXPECT_EQ(snap.sleeps, 0u);
				KT_EXPECT(hlock_owner(&mon.hl) == NULL);
			}
			if (modes[mi] & MON_HANDOFF)	/* hand-off: a waiter misses once, never again */
				KT_EXPECT(snap.misses <= snap.hits);
			kt_diag(kt, "%s flags %u: %u threads: hits %lu misses %lu sleeps %lu max queue %lu",
				s, mon_flags(&mon), nthr, (unsigned long)snap.hits,
				(unsigned long)snap.misses, (unsigned long)snap.sleeps,
				(unsigned long)snap.max_queue);
			mon_destroy(&mon);
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		}
	}
}

/* ---- misses above hits: Sprite's broadcast release with K queued waiters --------------- */

#define BK 4
static volatile unsigned bk_got;	/* mon: acquisitions by waiters so far */
static volatile unsigned bk_order[BK + 1];
static volatile unsigned bk_fail;

static void bk_waiter(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	mon_lock(&mon);
	unsigned k = bk_got++;
	bk_order[k] = id;
	/* hold it until every other woken waiter has queued again: each of them misses */
	unsigned left = BK - 1 - k;
	if (!WAIT_UNTIL(__atomic_load_n(&mon.qlen, __ATOMIC_RELAXED) == left, 5000))
		bk_fail++;
	mon_unlock(&mon);
}

static void run_queued_waiters(struct ktest_ctx *kt, unsigned flags, struct thread **t)
{
	KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, flags), KSYNC_OK);
	lockstat_reset();
	bk_got = 0;
	bk_fail = 0;
	mon_lock(&mon);
	for (unsigned i = 0; i < BK; i++) {
		KT_ASSERT_EQ(thread_create(&t[i], bk_waiter, (void *)(uintptr_t)(i + 1), 0,
					   SCHED_AFFINITY_ANY, "bk", 0), KSYNC_OK);
		/* queue them one by one, in order */
		KT_ASSERT(WAIT_UNTIL(__atomic_load_n(&mon.qlen, __ATOMIC_RELAXED) == i + 1, 5000));
	}
	mon_unlock(&mon);
	for (unsigned i = 0; i < BK; i++)
		KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
	KT_EXPECT_EQ(bk_got, (unsigned)BK);
	KT_EXPECT_EQ(bk_fail, 0u);
	read_class(&test_monitor_class);
}

KTEST(lock_monitor_broadcast_misses_exceed_hits)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct thread *t[BK];
		run_queued_waiters(kt, 0, t);
		/* hits: the owner + K waiters; misses: K first attempts, then after each release
		 * every woken waiter but the winner misses again: K + (K-1) + ... + 1 */
		KT_EXPECT_EQ(snap.hits, (uint64_t)BK + 1);
		KT_EXPECT_EQ(snap.misses, (uint64_t)BK * (BK + 1) / 2);
		KT_EXPECT(snap.misses > snap.hits);
		KT_EXPECT_EQ(snap.wakeups, (uint64_t)BK * (BK + 1) / 2);
		KT_EXPECT_EQ(snap.max_queue, (uint64_t)BK);
		mon_destroy(&mon);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

KTEST(lock_monitor_handoff_fifo)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct thread *t[BK];
		run_queued_waiters(kt, MON_HANDOFF, t);
		for (unsigned i = 0; i < BK; i++)
			KT_EXPECT_EQ(bk_order[i], i + 1);	/* in the order they queued */
		KT_EXPECT_EQ(snap.hits, (uint64_t)BK + 1);
		KT_EXPECT_EQ(snap.misses, (uint64_t)BK);	/* one each: the lock was handed over */
		KT_EXPECT_EQ(snap.wakeups, (uint64_t)BK);
		mon_destroy(&mon);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* ---- a helping monitor (the fiasco configuration): a contender runs the owner -------------
 * Hohmuth & Haertig 3.3: a thread that finds the lock taken pushes itself on the helper
 * stack and passes its CPU to the owner instead of blocking. One CPU, strict priorities: a
 * higher-priority contender created by the owner inside its section preempts it, misses,
 * and must run the owner (a helps_local) - a sleeping monitor would queue it instead
 * (qlen 1, a sleep in the class). */
static struct thread *hm_contender;
static volatile unsigned hm_got, hm_waited, hm_created;

static void hm_contend(void *arg)
{
	(void)arg;
	mon_lock(&mon);
	__atomic_store_n(&hm_got, 1, __ATOMIC_RELAXED);
	mon_unlock(&mon);
}

static bool hm_someone_waits(void)
{
	return (atomic_load_explicit(&mon.hl.word, memory_order_relaxed) & HLOCK_TOP_MASK) ||
	       __atomic_load_n(&mon.qlen, __ATOMIC_RELAXED);
}

static void hm_owner(void *arg)
{
	(void)arg;
	mon_lock(&mon);
	hm_created = thread_create(&hm_contender, hm_contend, NULL, 0, 1, "hm-contender", 0) ==
		     KSYNC_OK;
	if (hm_created)
		hm_waited = WAIT_UNTIL(hm_someone_waits(), 5000);
	mon_unlock(&mon);
}

/* A helping-lock monitor's hold is timed in timing mode as any monitor's (the saturation
 * projection of the fiasco configuration needs it: a class used but never timed cannot be
 * ranked), and not in counts mode. One thread, no contention: 4 holds of >= 20 us each. */
KTEST(lock_monitor_helping_hold_timed)
{
	const char *s;
	unsigned mode0 = lockstat_mode();
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, MON_HELPING), KSYNC_OK);
		const uint64_t us = 20, least = us * arch_tsc_hz() / 1000000;
		for (unsigned timing = 0; timing < 2; timing++) {
			KT_ASSERT_EQ(lockstat_set_mode(timing ? LOCKSTAT_TIMING : LOCKSTAT_COUNTS),
				     KSYNC_OK);
			lockstat_reset();
			for (unsigned i = 0; i < 4; i++) {
				mon_lock(&mon);
				arch_delay_us(us);
				mon_unlock(&mon);
			}
			read_class(&test_monitor_class);
			KT_EXPECT_EQ(snap.hits, 4u);
			KT_EXPECT_EQ(snap.hold.n, timing ? 4u : 0u);
			if (timing) {
				KT_EXPECT(snap.hold.min >= least);
				KT_EXPECT(snap.hold.total >= 4 * least);
			}
		}
		mon_destroy(&mon);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
	KT_EXPECT_EQ(lockstat_set_mode(mode0), KSYNC_OK);
}

KTEST(lock_monitor_helping_contender_runs_the_owner)
{
	const char *s;
	static const uint8_t strict[1] = { 0 };
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		(void)sched_table_set(strict, 1);
		KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, MON_HELPING), KSYNC_OK);
		KT_EXPECT_EQ(mon_flags(&mon), MON_HELPING);
		lockstat_reset();
		hlock_stats_reset();
		hm_got = hm_waited = hm_created = 0;
		struct thread *o;
		KT_ASSERT_EQ(thread_create(&o, hm_owner, NULL, 3, 1, "hm-owner", 0), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(o), KSYNC_OK);
		KT_ASSERT(hm_created);
		KT_EXPECT_EQ(thread_join(hm_contender), KSYNC_OK);
		KT_EXPECT(hm_waited);
		KT_EXPECT_EQ(hm_got, 1u);
		read_class(&test_monitor_class);
		struct hlock_stats hs;
		hlock_stats_get(&hs);
		kt_diag(kt, "%s: hits %lu misses %lu sleeps %lu helps here %lu remote %lu", s,
			(unsigned long)snap.hits, (unsigned long)snap.misses,
			(unsigned long)snap.sleeps, (unsigned long)hs.helps_local,
			(unsigned long)hs.helps_remote);
		KT_EXPECT_EQ(snap.hits, 2u);
		KT_EXPECT_EQ(snap.misses, 1u);
		KT_EXPECT_EQ(snap.sleeps, 0u);
		KT_EXPECT(hs.helps_local > 0);
		KT_EXPECT(hlock_owner(&mon.hl) == NULL);
		/* a helping monitor takes neither sched_Mutex nor hand-off */
		struct monitor bad;
		KT_EXPECT_EQ(mon_init(&bad, &test_monitor_class, MON_HELPING | MON_QSCHED), KSYNC_EINVAL);
		KT_EXPECT_EQ(mon_init(&bad, &test_monitor_class, MON_HELPING | MON_HANDOFF), KSYNC_EINVAL);
		mon_destroy(&mon);
		sched_table_default();
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* ---- a hit never touches the interlock (Sprite Figure 9: only a miss takes sched_Mutex) -- */

/* This CPU's holds of class c in timing mode (its own shard: the caller masks interrupts,
 * so no tick or other thread of this CPU adds to it meanwhile; every master lock's release
 * commits its hold there). A shard of an older epoch counts 0. */
static uint64_t my_holds(const struct lock_class *c)
{
	struct lockstat_shard *s = kcpu_this()->lockstat + (c - __start_ksync_lockcls);
	if (__atomic_load_n(&s->epoch, __ATOMIC_RELAXED) != __atomic_load_n(&lockstat_epoch_, __ATOMIC_RELAXED))
		return 0;
	return __atomic_load_n(&s->hold.n, __ATOMIC_RELAXED);
}

/* This CPU's shard of class c, whole: an uncontended hit in counts mode must leave it as
 * it was (the hit is counted in the lock, issue 27). */
static bool my_shard_same(const struct lock_class *c, const struct lockstat_shard *was)
{
	const struct lockstat_shard *s = kcpu_this()->lockstat + (c - __start_ksync_lockcls);
	return !memcmp(s, was, sizeof *s);
}

#define HIT_N 200
KTEST(lock_monitor_hit_skips_interlock)
{
	if (lockstat_set_mode(LOCKSTAT_TIMING) != KSYNC_OK)
		KT_SKIP("lock statistics compiled out (LOCKSTAT=0)");
	const struct lock_class *sm = lockstat_find("sched_Mutex"), *own = lockstat_find("mon_interlock");
	KT_ASSERT(sm != NULL && own != NULL);
	static const unsigned modes[3] = { 0, MON_QSCHED, MON_QSCHED | MON_HANDOFF };
	KT_ASSERT_EQ(sched_start("locked"), KSYNC_OK);
	for (unsigned mi = 0; mi < 3; mi++) {
		KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, modes[mi]), KSYNC_OK);
		KT_EXPECT_EQ(!!(mon_flags(&mon) & MON_QSCHED), !!(modes[mi] & MON_QSCHED));
		lockstat_set_mode(LOCKSTAT_TIMING);
		lockstat_reset();
		/* masked: this CPU's shards change only by what the loop does */
		irqkey_t k = arch_irq_save();
		uint64_t sm0 = my_holds(sm), own0 = my_holds(own), ih0 = mon.ilock->st.hits;
		uint64_t mh0 = mon.st.hits;
		for (unsigned i = 0; i < HIT_N; i++) {
			mon_lock(&mon);
			mon_unlock(&mon);
		}
		uint64_t sm1 = my_holds(sm), own1 = my_holds(own), ih1 = mon.ilock->st.hits;
		uint64_t mh1 = mon.st.hits;
		/* counts mode: the hits go to the monitor's own counter and no shard changes */
		lockstat_set_mode(LOCKSTAT_COUNTS);
		static struct lockstat_shard was_m, was_sm, was_own;
		mon_lock(&mon);		/* a first hit: the mode's first release may commit */
		mon_unlock(&mon);
		was_m = kcpu_this()->lockstat[&test_monitor_class - __start_ksync_lockcls];
		was_sm = kcpu_this()->lockstat[sm - __start_ksync_lockcls];
		was_own = kcpu_this()->lockstat[own - __start_ksync_lockcls];
		uint64_t ch0 = mon.st.hits;
		for (unsigned i = 0; i < HIT_N; i++) {
			mon_lock(&mon);
			mon_unlock(&mon);
		}
		uint64_t ch1 = mon.st.hits;
		bool same = my_shard_same(&test_monitor_class, &was_m) && my_shard_same(sm, &was_sm) &&
			    my_shard_same(own, &was_own);
		arch_irq_restore(k);
		KT_EXPECT_EQ(mh1 - mh0, (uint64_t)HIT_N);	/* every pair a hit */
		KT_EXPECT_EQ(sm1 - sm0, 0u);			/* sched_Mutex untouched */
		KT_EXPECT_EQ(own1 - own0, 0u);			/* so is the own interlock */
		if (!(modes[mi] & MON_QSCHED))
			KT_EXPECT_EQ(ih1 - ih0, 0u);		/* the instance's own count */
		KT_EXPECT_EQ(ch1 - ch0, (uint64_t)HIT_N);
		KT_EXPECT(same);	/* counts mode: an uncontended hit touches no shard */
		read_class(&test_monitor_class);
		KT_EXPECT_EQ(snap.misses, 0u);
		KT_EXPECT_EQ(snap.hits, 2u * HIT_N + 1);
		kt_diag(kt, "flags %u: %u uncontended pairs: interlock holds %lu (sched_Mutex %lu, own %lu)",
			mon_flags(&mon), HIT_N, (unsigned long)(ih1 - ih0), (unsigned long)(sm1 - sm0),
			(unsigned long)(own1 - own0));
		mon_destroy(&mon);
	}
	lockstat_set_mode(LOCKSTAT_COUNTS);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- the miss's retry: a release between the first attempt and the mark ------------------
 * B misses on the monitor the boot thread holds; at the miss (before B takes the interlock
 * and marks the word) the hook waits until the boot thread has released it. The release
 * saw no mark and woke nobody: only B's retry under the interlock can get it the lock. A
 * miss that queued without the retry would sleep with the lock free (a lost wakeup). */

static volatile unsigned rt_armed, rt_missed, rt_released, rt_got;	/* atomics */

static void rt_hook(enum mon_point at, struct monitor *m)
{
	if (at != MON_AT_MISSED || m != &mon || !__atomic_exchange_n(&rt_armed, 0, __ATOMIC_ACQ_REL))
		return;
	__atomic_store_n(&rt_missed, 1, __ATOMIC_RELEASE);
	(void)WAIT_UNTIL(__atomic_load_n(&rt_released, __ATOMIC_ACQUIRE), 5000);
}

static void rt_locker(void *arg)
{
	(void)arg;
	mon_lock(&mon);
	__atomic_store_n(&rt_got, 1, __ATOMIC_RELEASE);
	mon_unlock(&mon);
}

KTEST(lock_monitor_miss_retries_after_release)
{
	const char *s;
	static const unsigned modes[4] = { 0, MON_HANDOFF, MON_QSCHED, MON_QSCHED | MON_HANDOFF };
	KT_ASSERT_EQ(lockstat_set_mode(LOCKSTAT_COUNTS), KSYNC_OK);
	FOR_EACH_SCHED(s) {
		for (unsigned mi = 0; mi < 4; mi++) {
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, modes[mi]), KSYNC_OK);
			lockstat_reset();
			rt_missed = rt_released = rt_got = 0;
			__atomic_store_n(&rt_armed, 1, __ATOMIC_RELEASE);
			mon_set_test_hook(rt_hook);
			mon_lock(&mon);
			struct thread *t;
			KT_ASSERT_EQ(thread_create(&t, rt_locker, NULL, 0, SCHED_AFFINITY_ANY, "rt", 0),
				     KSYNC_OK);
			bool missed = WAIT_UNTIL(__atomic_load_n(&rt_missed, __ATOMIC_ACQUIRE), 5000);
			mon_unlock(&mon);	/* no mark yet: the fast release wakes nobody */
			__atomic_store_n(&rt_released, 1, __ATOMIC_RELEASE);
			bool got = WAIT_UNTIL(__atomic_load_n(&rt_got, __ATOMIC_ACQUIRE), 5000);
			if (!got) {	/* a stranded waiter: take and release to wake it, then fail */
				mon_lock(&mon);
				mon_unlock(&mon);
			}
			KT_EXPECT_EQ(thread_join(t), KSYNC_OK);
			mon_set_test_hook(NULL);
			KT_EXPECT(missed);
			KT_EXPECT(got);
			read_class(&test_monitor_class);
			KT_EXPECT_EQ(snap.misses, 1u);		/* B's one miss */
			KT_EXPECT_EQ(snap.sleeps, 0u);		/* the retry got it: no sleep */
			KT_EXPECT_EQ(__atomic_load_n(&mon.word, __ATOMIC_RELAXED), 0u);
			mon_destroy(&mon);
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		}
	}
}

/* ---- stress: monitor + condition variables, exact counts, every mode, both schedulers ----
 * Producers and consumers through a 2-slot buffer under one monitor (Mesa waits on
 * "not full" and "not empty"), and every thread also bumps a counter under the monitor.
 * Exact: items produced = consumed, their sum, the counter. At the end every queued waiter
 * was woken exactly once (the monitor's sleeps = its wakeups, each condition variable's
 * waits = its wakeups) and the monitor's hits = the explicit acquisitions + the waits
 * (each wait reacquires). A lost wakeup leaves a thread asleep: the bounded wait fails.
 * The race windows are short, so this is a net, not a proof: with the miss's retry removed
 * it passed 3 runs of 3 (hosted, 2 vCPUs); lock_monitor_miss_retries_after_release opens
 * that window on purpose and spin/monitor.pml checks every interleaving. */

#define ST_SLOTS 2
#define ST_ITEMS (oversubscribed() ? 60u : 300u)
static struct condvar st_notfull, st_notempty;
static volatile unsigned st_buf[ST_SLOTS], st_n, st_head;	/* mon */
static volatile uint64_t st_count, st_sum, st_locks;		/* mon */
static volatile unsigned st_done;				/* atomic */

static void st_producer(void *arg)
{
	unsigned base = (unsigned)(uintptr_t)arg;
	for (unsigned i = 1; i <= ST_ITEMS; i++) {
		mon_lock(&mon);
		st_locks++;
		CV_WAIT_UNTIL(&st_notfull, st_n < ST_SLOTS);
		st_buf[(st_head + st_n) % ST_SLOTS] = base + i;
		st_n++;
		st_count++;
		if (i % 2)
			cv_signal(&st_notempty);
		else
			cv_broadcast(&st_notempty);
		mon_unlock(&mon);
	}
	__atomic_fetch_add(&st_done, 1, __ATOMIC_RELEASE);
}

static void st_consumer(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < n; i++) {
		mon_lock(&mon);
		st_locks++;
		CV_WAIT_UNTIL(&st_notempty, st_n > 0);
		st_sum += st_buf[st_head];
		st_head = (st_head + 1) % ST_SLOTS;
		st_n--;
		st_count++;
		cv_signal(&st_notfull);
		mon_unlock(&mon);
		if (i % 16 == 0)
			thread_yield();
	}
	__atomic_fetch_add(&st_done, 1, __ATOMIC_RELEASE);
}

KTEST(lock_monitor_stress_condvar_exact)
{
	const char *s;
	static const unsigned modes[5] = { 0, MON_HANDOFF, MON_QSCHED, MON_QSCHED | MON_HANDOFF,
					   MON_HELPING };
	unsigned np = ncpu() > 4 ? 4 : ncpu(), nc = np;
	FOR_EACH_SCHED(s) {
		for (unsigned mi = 0; mi < 5; mi++) {
			bool helping = modes[mi] & MON_HELPING;
			KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
			KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, modes[mi]), KSYNC_OK);
			KT_ASSERT_EQ(cv_init(&st_notfull, &test_cv_class, &mon), KSYNC_OK);
			KT_ASSERT_EQ(cv_init(&st_notempty, &test_cv_class, &mon), KSYNC_OK);
			lockstat_reset();
			st_n = st_head = 0;
			st_count = st_sum = st_locks = 0;
			st_done = 0;
			struct thread *t[8];
			unsigned nt = 0;
			uint64_t want_sum = 0;
			for (unsigned p = 0; p < np; p++) {
				unsigned base = (p + 1) * 100000u;
				want_sum += (uint64_t)base * ST_ITEMS + (uint64_t)ST_ITEMS * (ST_ITEMS + 1) / 2;
				KT_ASSERT_EQ(thread_create(&t[nt++], st_producer, (void *)(uintptr_t)base, 0,
							   SCHED_AFFINITY_ANY, "stp", 0), KSYNC_OK);
			}
			for (unsigned c = 0; c < nc; c++)
				KT_ASSERT_EQ(thread_create(&t[nt++], st_consumer, (void *)(uintptr_t)ST_ITEMS,
							   0, SCHED_AFFINITY_ANY, "stc", 0), KSYNC_OK);
			/* bounded: a lost wakeup shows as threads that never finish */
			bool all = WAIT_UNTIL(__atomic_load_n(&st_done, __ATOMIC_ACQUIRE) == nt, 120000);
			KT_ASSERT(all);
			for (unsigned i = 0; i < nt; i++)
				KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
			uint64_t items = (uint64_t)np * ST_ITEMS;
			KT_EXPECT_EQ(st_count, 2 * items);
			KT_EXPECT_EQ(st_sum, want_sum);
			KT_EXPECT_EQ(st_n, 0u);
			KT_EXPECT_EQ(st_locks, 2 * items);
			struct lockstat_snap cvs;
			lockstat_read(&test_cv_class, &cvs);
			read_class(&test_monitor_class);
			KT_EXPECT_EQ(cvs.sleeps, cvs.wakeups);		/* every wait was woken */
			KT_EXPECT_EQ(snap.hits, st_locks + cvs.sleeps);	/* each wait reacquires */
			KT_EXPECT_EQ(mon.st.hits, helping ? 0 : snap.hits);
			KT_EXPECT_EQ(mon.misses, helping ? 0 : snap.misses);
			if (helping)	/* only the condition waits sleep: the monitor's contenders help */
				KT_EXPECT_EQ(snap.sleeps, 0u);
			KT_EXPECT_EQ(snap.sleeps, snap.wakeups);	/* every queued waiter woken once */
			KT_EXPECT(snap.sleeps <= snap.misses);		/* a sleep follows a miss */
			if (modes[mi] & MON_HANDOFF)
				KT_EXPECT(snap.misses <= snap.hits);
			KT_EXPECT_EQ(mon.qlen, 0u);
			KT_EXPECT_EQ(__atomic_load_n(&mon.word, __ATOMIC_RELAXED), 0u);
			kt_diag(kt, "%s flags %u: %u+%u threads x %u items: hits %lu misses %lu sleeps %lu "
				"cv waits %lu", s, mon_flags(&mon), np, nc, ST_ITEMS, (unsigned long)snap.hits,
				(unsigned long)snap.misses, (unsigned long)snap.sleeps,
				(unsigned long)cvs.sleeps);
			cv_destroy(&st_notfull);
			cv_destroy(&st_notempty);
			mon_destroy(&mon);
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		}
	}
}

/* ---- condition variables ------------------------------------------------------------------ */

static struct condvar cv;
static volatile unsigned cv_tokens, cv_returned;	/* mon */

static void cv_waiter(void *arg)
{
	(void)arg;
	mon_lock(&mon);
	CV_WAIT_UNTIL(&cv, cv_tokens > 0);
	cv_tokens--;
	__atomic_fetch_add(&cv_returned, 1, __ATOMIC_RELAXED);	/* read without mon */
	mon_unlock(&mon);
}

static unsigned cv_queued(void)
{
	mon_lock(&mon);
	unsigned q = cv.qlen;
	mon_unlock(&mon);
	return q;
}

KTEST(lock_condvar_signal_broadcast_futile)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		KT_ASSERT_EQ(mon_init(&mon, &test_monitor_class, MON_QSCHED), KSYNC_OK);
		KT_ASSERT_EQ(cv_init(&cv, &test_cv_class, &mon), KSYNC_OK);
		lockstat_reset();
		cv_tokens = cv_returned = 0;
		struct thread *t[BK];
		for (unsigned i = 0; i < BK; i++)
			KT_ASSERT_EQ(thread_create(&t[i], cv_waiter, NULL, 0, SCHED_AFFINITY_ANY, "cvw", 0),
				     KSYNC_OK);
		KT_ASSERT(WAIT_UNTIL(cv_queued() == BK, 5000));
		/* signal: exactly one waiter leaves the queue */
		mon_lock(&mon);
		cv_tokens = 1;
		KT_EXPECT_EQ(cv_signal(&cv), 1u);
		KT_EXPECT_EQ(cv.qlen, (unsigned)BK - 1);
		mon_unlock(&mon);
		KT_EXPECT(WAIT_UNTIL(__atomic_load_n(&cv_returned, __ATOMIC_RELAXED) == 1, 5000));
		/* broadcast with one token for K-1 waiters: all wake, one returns, K-2 futile */
		mon_lock(&mon);
		cv_tokens = 1;
		KT_EXPECT_EQ(cv_broadcast(&cv), (unsigned)BK - 1);
		mon_unlock(&mon);
		KT_EXPECT(WAIT_UNTIL(cv_queued() == BK - 2 && __atomic_load_n(&cv_returned, __ATOMIC_RELAXED) == 2, 5000));
		/* broadcast with enough tokens: every waiter returns */
		mon_lock(&mon);
		cv_tokens = BK;
		KT_EXPECT_EQ(cv_broadcast(&cv), (unsigned)BK - 2);
		mon_unlock(&mon);
		for (unsigned i = 0; i < BK; i++)
			KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
		KT_EXPECT_EQ(cv_returned, (unsigned)BK);
		read_class(&test_cv_class);
		KT_EXPECT_EQ(snap.futile, (uint64_t)BK - 2);
		KT_EXPECT_EQ(snap.wakeups, (uint64_t)(1 + (BK - 1) + (BK - 2)));
		KT_EXPECT_EQ(snap.sleeps, (uint64_t)(BK + (BK - 2)));	/* waits */
		KT_EXPECT_EQ(snap.max_queue, (uint64_t)BK);
		cv_destroy(&cv);
		mon_destroy(&mon);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* ---- transient instances fold into their class ------------------------------------------ */

#define TR_N 2000
static struct monitor *tr_mons;
static volatile uint64_t tr_sum;	/* under each monitor in turn: written by one at a time */

static volatile unsigned tr_started, tr_go;

static void tr_worker(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&tr_started, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&tr_go, __ATOMIC_ACQUIRE))
		thread_yield();
	for (unsigned i = 0; i < TR_N; i++) {
		mon_lock(&tr_mons[i]);
		if (i % 64 == 0)
			thread_yield();		/* the other worker meets it held: misses */
		__atomic_fetch_add(&tr_sum, 1, __ATOMIC_RELAXED);
		mon_unlock(&tr_mons[i]);
	}
}

KTEST(lock_transient_instances_fold_into_class)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	tr_mons = kzalloc(sizeof(struct monitor) * TR_N);
	KT_ASSERT(tr_mons != NULL);
	lockstat_reset();
	for (unsigned i = 0; i < TR_N; i++)
		KT_ASSERT_EQ(mon_init(&tr_mons[i], &test_transient_class, 0), KSYNC_OK);
	read_class(&test_transient_class);
	KT_EXPECT_EQ(snap.created, (uint64_t)TR_N);
	KT_EXPECT_EQ(snap.destroyed, 0u);
	tr_sum = 0;
	tr_started = tr_go = 0;
	struct thread *t[2];
	/* both on one CPU: the one that yields holding a monitor lets the other miss on it */
	for (unsigned i = 0; i < 2; i++)
		KT_ASSERT_EQ(thread_create(&t[i], tr_worker, NULL, 0, 1ull << (ncpu() - 1), "tr", 0), KSYNC_OK);
	/* both waiting at the start: the first to hold monitor 0 yields to the other */
	KT_EXPECT(WAIT_UNTIL(__atomic_load_n(&tr_started, __ATOMIC_ACQUIRE) == 2, 5000));
	__atomic_store_n(&tr_go, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < 2; i++)
		KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
	uint64_t hits = 0, misses = 0;
	for (unsigned i = 0; i < TR_N; i++) {
		hits += tr_mons[i].st.hits;
		misses += tr_mons[i].misses;
		mon_destroy(&tr_mons[i]);
	}
	read_class(&test_transient_class);
	KT_EXPECT_EQ(hits, 2u * TR_N);
	KT_EXPECT(misses > 0);
	KT_EXPECT_EQ(snap.hits, hits);
	KT_EXPECT_EQ(snap.misses, misses);
	KT_EXPECT_EQ(snap.created, (uint64_t)TR_N);
	KT_EXPECT_EQ(snap.destroyed, (uint64_t)TR_N);
	kt_diag(kt, "%u transient monitors: hits %lu misses %lu", TR_N, (unsigned long)hits,
		(unsigned long)misses);
	kfree(tr_mons);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- the instance list under churn (issue 27) ---------------------------------------------
 * Every CPU runs a worker that acquires long-lived locks of class test_churn and a churner
 * that creates a lock of the class, acquires it a few times and destroys it (its counts
 * fold into the class), while a reader on CPU 0 sums the class again and again: the sum
 * never goes back (a fold moves an instance's hits from the live sum to the class under the
 * list lock, in one step), and once everyone stops it is exact - every acquisition, live
 * or destroyed, counted once. Run under ThreadSanitizer by the tsan flavour of the hosted
 * kernel suite (the list, the folds, the counters read while their holders write them). */

#define CH_LONG 4	/* long-lived locks */
#define CH_ROUNDS 300	/* per churner: create, CH_K acquisitions, destroy */
#define CH_K 5
#define CH_ITERS 2000	/* per worker */
static struct mlock ch_long[CH_LONG];
static volatile unsigned ch_stop;
static uint64_t ch_done;	/* acquisitions made (atomic) */
static volatile unsigned ch_bad, ch_reads;

static void ch_worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < CH_ITERS; i++) {
		struct mlock *l = &ch_long[(id + i) % CH_LONG];
		mlock_lock(l);
		mlock_unlock(l);
		__atomic_fetch_add(&ch_done, 1, __ATOMIC_RELAXED);
		if (i % 64 == 0)
			thread_yield();
	}
}

static void ch_churner(void *arg)
{
	(void)arg;
	for (unsigned r = 0; r < CH_ROUNDS; r++) {
		struct mlock *l = kzalloc(sizeof *l);
		if (!l || mlock_init(l, &test_churn_class, r % MLOCK_NALGOS) != KSYNC_OK) {
			__atomic_fetch_add(&ch_bad, 1, __ATOMIC_RELAXED);
			kfree(l);
			return;
		}
		for (unsigned k = 0; k < CH_K; k++) {
			mlock_lock(l);
			mlock_unlock(l);
			__atomic_fetch_add(&ch_done, 1, __ATOMIC_RELAXED);
		}
		mlock_destroy(l);
		kfree(l);
		if (r % 16 == 0)
			thread_yield();
	}
}

static void ch_reader(void *arg)
{
	(void)arg;
	static struct lockstat_snap sn;
	uint64_t last = 0;
	while (!__atomic_load_n(&ch_stop, __ATOMIC_ACQUIRE)) {
		lockstat_read(&test_churn_class, &sn);
		if (sn.hits < last || sn.live < CH_LONG)
			__atomic_fetch_add(&ch_bad, 1, __ATOMIC_RELAXED);
		last = sn.hits;
		__atomic_fetch_add(&ch_reads, 1, __ATOMIC_RELAXED);
		thread_yield();
	}
}

KTEST(lock_stat_instance_list_churn)
{
	if (lockstat_set_mode(LOCKSTAT_COUNTS) != KSYNC_OK)
		KT_SKIP("lock statistics compiled out (LOCKSTAT=0)");
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	for (unsigned i = 0; i < CH_LONG; i++)
		KT_ASSERT_EQ(mlock_init(&ch_long[i], &test_churn_class, i % MLOCK_NALGOS), KSYNC_OK);
	lockstat_reset();
	ch_stop = 0;
	ch_bad = ch_reads = 0;
	__atomic_store_n(&ch_done, 0, __ATOMIC_RELAXED);
	unsigned n = ncpu() > 4 ? 4 : ncpu();
	struct thread *t[8], *rd;
	for (unsigned i = 0; i < n; i++) {
		KT_ASSERT_EQ(thread_create(&t[2 * i], ch_worker, (void *)(uintptr_t)i, 0, 1ull << i,
					   "chw", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&t[2 * i + 1], ch_churner, NULL, 0, 1ull << i, "chc", 0),
			     KSYNC_OK);
	}
	KT_ASSERT_EQ(thread_create(&rd, ch_reader, NULL, 0, 1ull, "chr", 0), KSYNC_OK);
	for (unsigned i = 0; i < 2 * n; i++)
		KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
	__atomic_store_n(&ch_stop, 1, __ATOMIC_RELEASE);
	KT_EXPECT_EQ(thread_join(rd), KSYNC_OK);
	read_class(&test_churn_class);
	uint64_t done = __atomic_load_n(&ch_done, __ATOMIC_RELAXED);
	KT_EXPECT_EQ(done, (uint64_t)n * (CH_ITERS + CH_ROUNDS * CH_K));
	KT_EXPECT_EQ(snap.hits, done);			/* exact: live + folded */
	KT_EXPECT_EQ(snap.live, (uint64_t)CH_LONG);
	KT_EXPECT_EQ(snap.created, (uint64_t)n * CH_ROUNDS);
	KT_EXPECT_EQ(snap.destroyed, (uint64_t)n * CH_ROUNDS);
	KT_EXPECT_EQ(ch_bad, 0u);
	KT_EXPECT(ch_reads > 0);
	kt_diag(kt, "%u CPUs: %lu acquisitions, %u instances churned, %u reads", n,
		(unsigned long)done, n * CH_ROUNDS, ch_reads);
	for (unsigned i = 0; i < CH_LONG; i++)
		mlock_destroy(&ch_long[i]);
	read_class(&test_churn_class);
	KT_EXPECT_EQ(snap.hits, done);			/* and after every destruction */
	KT_EXPECT_EQ(snap.live, 0u);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- reset in the middle of a run; snapshots while every CPU updates -------------------- */

static volatile int rs_stop;

static void rs_worker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&rs_stop, __ATOMIC_ACQUIRE)) {
		mlock_lock(&mx);
		/* relaxed store: the boot thread peeks at it without the lock */
		__atomic_store_n(&mx_counter, mx_counter + 1, __ATOMIC_RELAXED);
		mlock_unlock(&mx);
		thread_yield();
	}
}

KTEST(lock_stat_reset_midrun_and_consistent_snapshots)
{
	if (hosted_oversubscribed())
		KT_SKIP("hosted with more vCPUs than host cores: a master-lock holder's vCPU may be descheduled for a host slice");
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	KT_ASSERT_EQ(lockstat_set_mode(LOCKSTAT_TIMING), KSYNC_OK);
	KT_ASSERT_EQ(mlock_init(&mx, &test_master_class, MLOCK_TICKET), KSYNC_OK);
	rs_stop = 0;
	mx_counter = 0;
	unsigned nthr = ncpu() > 8 ? 8 : ncpu();
	struct thread *t[8];
	for (unsigned i = 0; i < nthr; i++)
		KT_ASSERT_EQ(thread_create(&t[i], rs_worker, NULL, 0, 1ull << i, "rs", 0), KSYNC_OK);
	KT_ASSERT(WAIT_UNTIL(__atomic_load_n(&mx_counter, __ATOMIC_RELAXED) > 1000, 5000));
	/* the reset under the lock: no acquisition is between the counter's value and it */
	mlock_lock(&mx);
	uint64_t c0 = mx_counter;
	lockstat_reset();
	mlock_unlock(&mx);
	/* read while the workers run: every snapshot is a state the counters had */
	unsigned bad = 0, reads = 0;
	uint64_t last_hits = 0;
	uint64_t t0 = arch_cycles();
	while (arch_cycles() - t0 < ms_ticks(50) || reads < 20) {
		read_class(&test_master_class);
		reads++;
		uint64_t hs = 0, ws = 0;
		for (unsigned i = 0; i < LOCKSTAT_HIST; i++) {
			hs += snap.hold.hist[i];
			ws += snap.wait.hist[i];
		}
		/* a master lock's miss, wait and hold are committed together at its release
		 * (one shard, consistent); its hit is counted in the lock before them and read
		 * after them (lockstat.h), so the hits are at least the holds - but for the
		 * acquisitions that straddled the reset, at most one per CPU */
		if (hs != snap.hold.n || ws != snap.wait.n || snap.wait.n != snap.misses ||
		    snap.hits + nthr + 1 < snap.hold.n || snap.hits < last_hits ||
		    snap.misses > snap.hits + nthr + 1)
			bad++;
		last_hits = snap.hits;
		thread_yield();
	}
	__atomic_store_n(&rs_stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < nthr; i++)
		KT_EXPECT_EQ(thread_join(t[i]), KSYNC_OK);
	read_class(&test_master_class);
	/* exact: the acquisitions released after the reset - the workers' increments, and
	 * the boot thread's own acquisition under which the reset happened */
	KT_EXPECT_EQ(snap.hits, mx_counter - c0 + 1);
	KT_EXPECT_EQ(bad, 0u);
	kt_diag(kt, "%u snapshots while %u CPUs updated: %u shard re-reads in the last", reads, nthr,
		snap.retries);
	mlock_destroy(&mx);
	lockstat_set_mode(LOCKSTAT_COUNTS);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

KTEST(lock_stat_bad_input_and_classes)
{
	KT_EXPECT_EQ(lockstat_set_mode(7), KSYNC_EINVAL);
	KT_EXPECT_EQ(mlock_init(&mx, &test_master_class, MLOCK_NALGOS), KSYNC_EINVAL);
	KT_EXPECT_EQ(mlock_init(NULL, &test_master_class, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(mon_init(&mon, &test_monitor_class, 0x80), KSYNC_EINVAL);
	KT_EXPECT_EQ(mlock_algo_parse("mcs"), (int)MLOCK_MCS);
	KT_EXPECT_EQ(mlock_algo_parse("spinny"), KSYNC_EINVAL);
	/* the kernel's own locks are classes; the console's is a raw spin lock below the
	 * locks (core/printf.c), so it has none */
	KT_EXPECT(lockstat_find("console") == NULL);
	KT_EXPECT(lockstat_find("heap") != NULL);
	KT_EXPECT(lockstat_find("pmm-pool") != NULL);
	KT_EXPECT(lockstat_find("sched_Mutex") != NULL);
	KT_EXPECT(lockstat_find("mon_interlock") != NULL);
	KT_EXPECT(lockstat_find("no such class") == NULL);
	/* the heap's lock counts: an allocation is a hit of class "heap" */
	lockstat_reset();
	void *p = kmalloc(32);
	kfree(p);
	read_class(lockstat_find("heap"));
	KT_EXPECT(snap.hits >= 2);
}
