/*
 * arch/hosted/ktest_storm.c - an interrupt storm on the hosted port (docs/hosted-port.md
 * "Interrupt storms"): one vCPU raises another vCPU's clock source every storm_us
 * microseconds (-append storm_us=N, default 50; storm_ms=N the storm's length per
 * scheduler, default 150) while threads on the target spin, yield, and take a master
 * lock and a helping lock. Every clock delivery on the target runs the kernel's tick,
 * whose end preempts the interrupted thread through a frame call (arch_frame_call) - the
 * path whose nested frame calls once overflowed a 16 KiB thread stack within
 * milliseconds at 10-200 us (runtime.c frame_call_signal: one frame call per stack).
 *
 * What it checks, each a count or a bound by construction (no timing):
 *   - every thread finishes, and the locks' counters equal the sum of the increments;
 *   - raised = delivered + coalesced for the storm's source on the target (a rate the
 *     port cannot deliver is coalesced, like a controller's IRR bit, never a crash);
 *   - at most HOSTED_SIGFRAMES_BOUND source-signal frames were ever on one stack (the
 *     hard-mask build: HOSTED_SIGFRAMES_BOUND_NESTED, its handlers' enables nest);
 *   - the deepest any storm thread's stack went (painted at creation, scanned by the
 *     thread itself at its end) left room for one more signal frame of the largest size
 *     seen; the figures are printed (KSYNC {"kind":"storm",...}).
 * Port-side (it needs the runtime's counters), like ktest_context.c.
 */
#define _GNU_SOURCE
#include "kernel.h"
#include "hosted.h"
#include "thread.h"
#include "mlock.h"
#include "hlock.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>

LOCK_CLASS(storm_master_class, "storm_master", LOCK_MASTER, LOCK_DATA);
LOCK_CLASS(storm_helping_class, "storm_helping", LOCK_HELPING, LOCK_DATA);

#define STORM_SPINNERS 2
#define KT_TSAN HOSTED_TSAN_KERNEL

static struct {
	struct mlock ml;
	struct hlock hl;
	volatile int stop;			/* the raiser's end (release/acquire) */
	uint64_t ml_count, hl_count;		/* under ml, hl */
	uint64_t mine_ml[STORM_SPINNERS], mine_hl[STORM_SPINNERS];	/* each spinner's own */
	size_t hwm[STORM_SPINNERS];		/* each spinner's own, read after its join */
	unsigned target, period_us;
	uint64_t ms;
} storm;

static unsigned long cmd_ul(const char *key, unsigned long dflt)
{
	char buf[24];
	unsigned long n = 0;

	if (!cmdline_get(key, buf, sizeof buf) || buf[0] < '0' || buf[0] > '9')
		return dflt;
	for (const char *p = buf; *p >= '0' && *p <= '9'; p++)
		n = n * 10 + (unsigned long)(*p - '0');
	return n;
}

static void storm_spinner(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	volatile uint64_t x = me;

	for (uint64_t i = 0; !__atomic_load_n(&storm.stop, __ATOMIC_ACQUIRE); i++) {
		x = x * 6364136223846793005ull + 1;	/* work the storm interrupts */
		if (i % 64 == 0) {
			irqkey_t k = mlock_lock_irqsave(&storm.ml);
			storm.ml_count++;
			mlock_unlock_irqrestore(&storm.ml, k);
			storm.mine_ml[me]++;
		}
		if (i % 256 == 0 && hlock_lock(&storm.hl) == KSYNC_OK) {
			storm.hl_count++;
			hlock_unlock(&storm.hl);
			storm.mine_hl[me]++;
		}
		if (i % 1024 == 0)
			thread_yield();
		arch_cpu_relax();	/* the TSan build's poll point (its preemption) */
	}
	storm.hwm[me] = hosted_stack_high_water();
}

/* On CPU 0: raise the target's clock source every period for storm.ms, then stop. */
static void storm_raiser(void *arg)
{
	(void)arg;
	uint64_t hz = arch_tsc_hz(), period = hz / 1000000u * storm.period_us;
	uint64_t t = arch_cycles(), end = t + hz / 1000u * storm.ms;

	if (!period)
		period = 1;
	while ((int64_t)(arch_cycles() - end) < 0) {
		hosted_source_raise(HOSTED_SRC_CLOCK, storm.target);
		t += period;
		while ((int64_t)(arch_cycles() - t) < 0)
			arch_cpu_relax();
	}
	__atomic_store_n(&storm.stop, 1, __ATOMIC_RELEASE);
}

KTEST(hosted_storm_bounded_frames)
{
	static const char *const names[] = { "lockfree", "locked" };
	unsigned n = arch_ncpus();
	/* hosted.h: the soft build's 3, the hard build's nested chain (one frame per level a
	 * handler running with IRQs on can be interrupted at: IPL_SOFT..IPL_CLOCK) */
	const unsigned bound = HOSTED_HARD_MASK ?
		HOSTED_SIGFRAMES_BOUND_NESTED(IPL_HIGH - IPL_SOFT) : HOSTED_SIGFRAMES_BOUND;

	storm.period_us = (unsigned)cmd_ul("storm_us", 50);
	storm.ms = cmd_ul("storm_ms", 150);
	storm.target = n - 1;
	mlock_init(&storm.ml, &storm_master_class, MLOCK_TICKET);
	hlock_init(&storm.hl, &storm_helping_class, NULL);
	hosted_stack_paint(true);
	for (unsigned si = 0; si < 2; si++) {
		struct hosted_src_counts c0, c;
		struct thread *sp[STORM_SPINNERS], *r;

		KT_ASSERT_EQ(sched_start(names[si]), KSYNC_OK);
		hosted_source_counts(storm.target, HOSTED_SRC_CLOCK, &c0);
		storm.stop = 0;
		storm.ml_count = storm.hl_count = 0;
		for (unsigned i = 0; i < STORM_SPINNERS; i++) {
			storm.mine_ml[i] = storm.mine_hl[i] = 0;
			storm.hwm[i] = 0;
			KT_ASSERT_EQ(thread_create(&sp[i], storm_spinner, (void *)(uintptr_t)i, 1,
						   1ull << storm.target, "storm-spinner", 0), KSYNC_OK);
		}
		KT_ASSERT_EQ(thread_create(&r, storm_raiser, NULL, 1, 1ull, "storm-raiser", 0),
			     KSYNC_OK);
		KT_EXPECT_EQ(thread_join(r), KSYNC_OK);
		uint64_t ml = 0, hl = 0;
		size_t hwm = 0;
		for (unsigned i = 0; i < STORM_SPINNERS; i++) {
			KT_EXPECT_EQ(thread_join(sp[i]), KSYNC_OK);
			ml += storm.mine_ml[i];
			hl += storm.mine_hl[i];
			if (storm.hwm[i] > hwm)
				hwm = storm.hwm[i];
		}
		KT_EXPECT_EQ(storm.ml_count, ml);
		KT_EXPECT_EQ(storm.hl_count, hl);
		/* the host's queue drains: every raise arrives, or was refused and counted
		 * (a bounded wait for liveness, not a timing claim). TSan: its runtime defers
		 * a signal to its next interceptor and keeps ONE pending entry per signal
		 * number (compiler-rt tsan_interceptors_posix.cpp, pending_signals[sig]), so
		 * a raise arriving while one is deferred is coalesced before any handler of
		 * ours runs; there the counts settle (no new arrival over 2000 yields) and
		 * the rest is the sanitizer's coalescing, by difference. */
		uint64_t until = arch_cycles() + arch_tsc_hz() * 10;
		unsigned long seen = ~0ul;
		unsigned still = 0;
		do {
			hosted_source_counts(storm.target, HOSTED_SRC_CLOCK, &c);
			c.raised -= c0.raised;
			c.delivered -= c0.delivered;
			c.coalesced -= c0.coalesced;
			if (c.raised == c.delivered + c.coalesced)
				break;
			if (KT_TSAN && c.delivered + c.coalesced == seen && ++still >= 2000)
				break;
			if (c.delivered + c.coalesced != seen)
				still = 0;
			seen = c.delivered + c.coalesced;
			thread_yield();
		} while ((int64_t)(arch_cycles() - until) < 0);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
		unsigned long san = c.raised >= c.delivered + c.coalesced ?
			c.raised - c.delivered - c.coalesced : 0;

		unsigned frames = hosted_stack_sigframes_max();
		unsigned long fbytes = hosted_sigframe_bytes_max();
		kt_diag(kt, "%s: storm every %u us for %lu ms on CPU %u: raised %lu = delivered %lu + "
			"coalesced %lu (+ %lu by TSan's deferral)", names[si], storm.period_us,
			(unsigned long)storm.ms, storm.target, c.raised, c.delivered, c.coalesced,
			KT_TSAN ? san : 0ul);
		kt_diag(kt, "%s: spinner stack high-water %lu of %u bytes; at most %u signal frame(s) "
			"on one stack (bound %u), largest frame %lu bytes", names[si],
			(unsigned long)hwm, SCHED_STACK_BYTES, frames, bound, fbytes);
		kprintf("KSYNC {\"kind\":\"storm\",\"sched\":\"%s\",\"cpus\":%u,\"period_us\":%u,"
			"\"ms\":%lu,\"raised\":%lu,\"delivered\":%lu,\"coalesced\":%lu,"
			"\"sanitizer_coalesced\":%lu,"
			"\"stack_hwm\":%lu,\"stack_bytes\":%u,\"sigframes_max\":%u,"
			"\"sigframes_bound\":%u,\"sigframe_bytes_max\":%lu}\n",
			names[si], n, storm.period_us, (unsigned long)storm.ms, c.raised, c.delivered,
			c.coalesced, KT_TSAN ? san : 0ul, (unsigned long)hwm, SCHED_STACK_BYTES, frames,
			bound, fbytes);
		KT_EXPECT(c.raised > 0);
		KT_EXPECT(c.raised >= c.delivered + c.coalesced);	/* never more out than in */
		if (!KT_TSAN)
			KT_EXPECT_EQ(c.raised, c.delivered + c.coalesced);
		KT_EXPECT(frames <= bound);
		/* painted and scanned (0: not painted - a failure of the measurement itself) */
		KT_EXPECT(hwm > 0);
		KT_EXPECT(hwm + fbytes <= SCHED_STACK_BYTES);
	}
	hosted_stack_paint(false);
	mlock_destroy(&storm.ml);
}

/* ---- oversubscribed: a spinning waiter gives the host core back -------------------------
 * The holder H (CPU 0) takes a master lock and keeps it until the waiter's vCPU has
 * yielded its host core at least once since the waiter W (the last CPU) announced its
 * acquire; H polls with plain loads (no arch_cpu_relax: it never yields itself), and W's
 * only spin steps after its announcement are the lock's. So H releases only because W,
 * spinning on the lock, gave the core back - with the vCPUs sharing host cores, the core
 * H needs to notice it. Bounded: H gives up after YIELD_WAIT_LOADS loads (a count) and the
 * case fails (without the yield W spins out every host slice and H never sees one). Each
 * algorithm (TAS, ticket, MCS) in turn. Oversubscribed runs only (else no vCPU yields:
 * each has a core) - make test runs it with 4 vCPUs pinned to one core. */
#define YIELD_WAIT_LOADS 500000000ull

LOCK_CLASS(storm_yield_class, "storm_yield", LOCK_MASTER, LOCK_DATA);

static struct {
	struct mlock ml;
	volatile int held, announced, w_done;
	unsigned w_cpu;
	unsigned long y0;
	int released_by_yield;		/* H saw W's yield (1) or gave up (0) */
	uint64_t inside;		/* under ml */
} sy;

static void sy_holder(void *arg)
{
	(void)arg;
	irqkey_t k = mlock_lock_irqsave(&sy.ml);
	sy.inside++;
	__atomic_store_n(&sy.held, 1, __ATOMIC_RELEASE);
	uint64_t i = 0;
	/* W announces, then spins on the lock; its vCPU's count moves only by that spin */
	while (!__atomic_load_n(&sy.announced, __ATOMIC_ACQUIRE) && i < YIELD_WAIT_LOADS)
		i++;
	while (hosted_relax_yields(sy.w_cpu) == __atomic_load_n(&sy.y0, __ATOMIC_ACQUIRE) &&
	       i < YIELD_WAIT_LOADS)
		i++;
	sy.released_by_yield = i < YIELD_WAIT_LOADS;
	mlock_unlock_irqrestore(&sy.ml, k);
}

static void sy_waiter(void *arg)
{
	(void)arg;
	/* plain loads: no spin step (no yield) before the announcement */
	while (!__atomic_load_n(&sy.held, __ATOMIC_ACQUIRE))
		;
	__atomic_store_n(&sy.y0, hosted_relax_yields(sy.w_cpu), __ATOMIC_RELEASE);
	__atomic_store_n(&sy.announced, 1, __ATOMIC_RELEASE);
	irqkey_t k = mlock_lock_irqsave(&sy.ml);
	sy.inside++;
	mlock_unlock_irqrestore(&sy.ml, k);
	__atomic_store_n(&sy.w_done, 1, __ATOMIC_RELEASE);
}

KTEST(hosted_spin_waiter_yields_host_core)
{
	struct arch_facts f;

	arch_get_facts(&f);
	if (!f.oversubscribed)
		KT_SKIP("every vCPU has a host core of its own: no spin yields (run with more "
			"vCPUs than cores, e.g. taskset -c 0 and -smp 2)");
	if (arch_ncpus() < 2)
		KT_SKIP("needs two vCPUs");
	KT_ASSERT_EQ(sched_start(NULL), KSYNC_OK);
	for (unsigned algo = 0; algo < MLOCK_NALGOS; algo++) {
		struct thread *h, *w;

		memset(&sy, 0, sizeof sy);
		sy.w_cpu = arch_ncpus() - 1;
		KT_ASSERT_EQ(mlock_init(&sy.ml, &storm_yield_class, algo), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&h, sy_holder, NULL, 1, 1ull, "sy-holder", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&w, sy_waiter, NULL, 1, 1ull << sy.w_cpu, "sy-waiter", 0),
			     KSYNC_OK);
		KT_EXPECT_EQ(thread_join(h), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(w), KSYNC_OK);
		kt_diag(kt, "%s: the holder %s", mlock_algo_name(algo),
			sy.released_by_yield ? "saw the spinning waiter's vCPU yield its host core"
					     : "never saw the waiter's vCPU yield (gave up after a bound)");
		KT_EXPECT_EQ(sy.released_by_yield, 1);
		KT_EXPECT_EQ(sy.inside, 2ull);
		KT_EXPECT_EQ(sy.w_done, 1);
		mlock_destroy(&sy.ml);
	}
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}
