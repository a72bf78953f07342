/*
 * test_explore_basic.c - tests of the interleaving explorer itself (tests/explore/):
 * it enumerates exactly the expected number of schedules, the preemption bound prunes
 * as defined, a lost update (load; store) is found and an atomic increment is not,
 * replay is deterministic, and hooks outside explored threads are ignored.
 */
#include "../explore/explore.h"

#include <ksync/atomic.h>
#include <ksync/ktest.h>

#include "../explore/explore.c"

/* ---- schedule counting ----------------------------------------------------------- */

static uint64_t cells[KX_MAX_THREADS];
static int steps_per_thread;

static void stepper(struct kx *x, int tid, void *arg)
{
	(void)x;
	(void)arg;
	for (int i = 0; i < steps_per_thread; i++)
		ksync_store_relaxed_u64(&cells[tid], (uint64_t)i);
}

static void nothing_setup(struct kx *x, void *arg)
{
	(void)x;
	(void)arg;
	for (int i = 0; i < KX_MAX_THREADS; i++)
		cells[i] = 0;
}

static long count_schedules(int nthreads, int steps, int bound)
{
	struct kx_config cfg = {
		.name = "count",
		.nthreads = nthreads,
		.thread = { stepper, stepper, stepper, stepper },
		.setup = nothing_setup,
		.preemption_bound = bound,
	};
	struct kx_result r;

	steps_per_thread = steps;
	if (kx_explore(&cfg, &r, NULL) != 0 || !r.exhausted)
		return -1;
	return r.schedules;
}

static long binom(int n, int k)
{
	long v = 1;

	for (int i = 1; i <= k; i++)
		v = v * (n - k + i) / i;
	return v;
}

KTEST(explore_counts_all_interleavings)
{
	/* A thread with k atomic steps is resumed k + 1 times (its start, then once per
	 * step); two such threads interleave in C(2k + 2, k + 1) ways. */
	for (int k = 0; k <= 4; k++)
		KT_EXPECT_EQ(count_schedules(2, k, -1), binom(2 * k + 2, k + 1));
	/* three threads of one step each: 6! / (2! 2! 2!) = 90 */
	KT_EXPECT_EQ(count_schedules(3, 1, -1), 90);
	/* bound 0: only the order in which whole threads run, n! */
	KT_EXPECT_EQ(count_schedules(2, 3, 0), 2);
	KT_EXPECT_EQ(count_schedules(3, 3, 0), 6);
	/* bound 1: more than the non-preemptive orders, fewer than all */
	KT_EXPECT(count_schedules(2, 3, 1) > 2);
	KT_EXPECT(count_schedules(2, 3, 1) < binom(8, 4));
	/* the bound is monotone */
	KT_EXPECT(count_schedules(2, 3, 2) >= count_schedules(2, 3, 1));
}

/* ---- a lost update is found; an atomic increment is not -------------------------- */

static uint64_t counter;
static bool use_fetch_add;

static void incrementer(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	(void)x;
	if (use_fetch_add) {
		ksync_fetch_add_relaxed_u64(&counter, 1);
	} else {
		uint64_t v = ksync_load_relaxed_u64(&counter);

		ksync_store_relaxed_u64(&counter, v + 1);
	}
}

static void counter_setup(struct kx *x, void *arg)
{
	(void)arg;
	counter = 0;
	kx_name(x, &counter, "counter");
}

static bool counter_check(struct kx *x, void *arg)
{
	(void)x;
	(void)arg;
	return counter == 2;
}

KTEST(explore_finds_lost_update)
{
	struct kx_config cfg = {
		.name = "lost-update",
		.nthreads = 2,
		.thread = { incrementer, incrementer },
		.setup = counter_setup,
		.check = counter_check,
		.preemption_bound = 1,
	};
	struct kx_result r;

	use_fetch_add = false;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);
	KT_EXPECT_EQ(r.violations, 1);
	KT_EXPECT_EQ(r.preemptions, 1);

	use_fetch_add = true;
	cfg.name = "fetch-add";
	cfg.quiet = true;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT(r.exhausted);
	KT_EXPECT_EQ(r.violations, 0);
}

/* keep_going counts every failing schedule.  Each thread is resumed three times: its
 * start (runs to the load's hook), the load (runs to the store's hook), the store.
 * Two such threads interleave in C(6,3) = 20 ways; the update is lost exactly when
 * each thread's load runs before the other's store: 12 of them. */
KTEST(explore_keep_going_counts_violations)
{
	struct kx_config cfg = {
		.name = "lost-update-all",
		.nthreads = 2,
		.thread = { incrementer, incrementer },
		.setup = counter_setup,
		.check = counter_check,
		.preemption_bound = -1,
		.keep_going = true,
		.quiet = true,
	};
	struct kx_result r;

	use_fetch_add = false;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);
	KT_EXPECT(r.exhausted);
	KT_EXPECT_EQ(r.schedules, 20);
	KT_EXPECT_EQ(r.violations, 12);
}

/* ---- replay must be deterministic: setup that forgets to reset is caught --------- */

static int leak;

static void leaky_thread(struct kx *x, int tid, void *arg)
{
	(void)x;
	(void)arg;
	/* thread 0 takes an extra step in odd executions only: state leaks across runs */
	if (tid == 0 && leak % 2 == 1)
		ksync_store_relaxed_u64(&cells[0], 1);
	ksync_store_relaxed_u64(&cells[tid], 2);
}

static void leaky_setup(struct kx *x, void *arg)
{
	(void)x;
	(void)arg;
	leak++;
}

KTEST(explore_detects_nondeterminism)
{
	struct kx_config cfg = {
		.name = "leaky",
		.nthreads = 2,
		.thread = { leaky_thread, leaky_thread },
		.setup = leaky_setup,
		.preemption_bound = -1,
	};
	struct kx_result r;

	leak = 0;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), -1);
}

KTEST(explore_bad_config)
{
	struct kx_config cfg = { .name = "bad", .nthreads = 0 };

	KT_EXPECT_EQ(kx_explore(&cfg, NULL, NULL), -1);
	cfg.nthreads = 2;
	cfg.setup = nothing_setup;
	cfg.thread[0] = stepper;	/* thread[1] missing */
	KT_EXPECT_EQ(kx_explore(&cfg, NULL, NULL), -1);
	/* outside kx_explore the hook does nothing */
	ksync_store_relaxed_u64(&cells[0], 5);
	KT_EXPECT_EQ(cells[0], 5);
}

/* ---- linearizability checker on hand-made histories ------------------------------ */

static int lin_case;

static void lin_setup(struct kx *x, void *arg)
{
	int a, b;

	(void)arg;
	/* histories recorded sequentially in setup: real-time order is total */
	switch (lin_case) {
	case 0:	/* push 1, push 2, pop -> 2, pop -> 1, pop -> EMPTY: legal */
		kx_op_end(x, kx_op_begin(x, KX_PUSH, 1), KX_OK);
		kx_op_end(x, kx_op_begin(x, KX_PUSH, 2), KX_OK);
		kx_op_end(x, kx_op_begin(x, KX_POP, 0), 2);
		kx_op_end(x, kx_op_begin(x, KX_POP, 0), 1);
		kx_op_end(x, kx_op_begin(x, KX_POP, 0), KX_EMPTY);
		break;
	case 1:	/* push 1, push 2, pop -> 1: not a stack */
		kx_op_end(x, kx_op_begin(x, KX_PUSH, 1), KX_OK);
		kx_op_end(x, kx_op_begin(x, KX_PUSH, 2), KX_OK);
		kx_op_end(x, kx_op_begin(x, KX_POP, 0), 1);
		break;
	case 2:	/* overlapping push 1 and pop -> 1: legal (push first) */
		a = kx_op_begin(x, KX_PUSH, 1);
		b = kx_op_begin(x, KX_POP, 0);
		kx_op_end(x, b, 1);
		kx_op_end(x, a, KX_OK);
		break;
	case 3:	/* pop -> 1 strictly before push 1: illegal */
		kx_op_end(x, kx_op_begin(x, KX_POP, 0), 1);
		kx_op_end(x, kx_op_begin(x, KX_PUSH, 1), KX_OK);
		break;
	}
}

static void idle(struct kx *x, int tid, void *arg)
{
	(void)x;
	(void)tid;
	(void)arg;
}

KTEST(explore_linearizability_checker)
{
	static const int expect[] = { 0, 1, 0, 1 };
	struct kx_config cfg = {
		.name = "lin",
		.nthreads = 1,
		.thread = { idle },
		.setup = lin_setup,
		.spec = &kx_spec_stack,
		.preemption_bound = -1,
		.quiet = true,
	};

	for (lin_case = 0; lin_case < 4; lin_case++)
		KT_EXPECT_EQ(kx_explore(&cfg, NULL, NULL), expect[lin_case]);
}

/* ---- random mode ----------------------------------------------------------------- */

KTEST(explore_random_mode)
{
	struct kx_config cfg = {
		.name = "lost-update-random",
		.nthreads = 2,
		.thread = { incrementer, incrementer },
		.setup = counter_setup,
		.check = counter_check,
		.preemption_bound = 1,
		.random_schedules = 200,
		.seed = 42,
		.quiet = true,
	};
	struct kx_result r;

	use_fetch_add = false;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);	/* found within 200 samples */
	KT_EXPECT(r.schedules <= 200);
	use_fetch_add = true;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT_EQ(r.schedules, 200);
	KT_EXPECT(!r.exhausted);
}
