/*
 * test_explore_mwcas.c - the interleaving explorer over the soft MWCAS of
 * include/ksync/mwcas.h (Harris-Fraser-Pratt with reused descriptors): every
 * interleaving of 2-3 threads' MWCAS and read operations, up to a preemption bound, is
 * linearizable against a sequential multi-word register, and no execution leaves a
 * descriptor reference in a word (the reuse invariant the owner's phase 2 keeps).
 * Scenarios: overlapping operations, a cycle of three (helping must not deadlock),
 * reads racing with an operation, a failing operation racing with helpers.
 * Each coroutine uses its own slot through __ksync_mwcas_soft (they share an OS
 * thread, so the hosted per-thread slot would be the same for all).
 *
 * The same scenarios run against the gkmz variant (Guerraoui-Kogan-Marathe-Zablotchi,
 * references stay in words after an operation) with one pool descriptor per thread, so
 * that every operation retires the thread's previous one: linearizable, including
 * reads of every word after the run (recorded by the teardown), no reference to an
 * instance that is over, no helper announcement or danger count left.  A scenario
 * built for the late-install hazard (a helper preempted between its read of a plain
 * value and its install CAS while the instance is completed, overwritten and cleaned
 * back to that value) is exhaustive at 2 preemptions with the reuse guard, and with the
 * guard switched off (a seeded bug) the explorer finds the wrong value.
 */
#include "../explore/explore.h"

/* The seeded bug (see mwcas.h): switched on at run time by one test only. */
static int original_phase2;
#define KSYNC_MWCAS_TEST_ORIGINAL_PHASE2 original_phase2
/* gkmz: which variant the runner calls, how many pool descriptors it uses (1: every
 * operation retires the previous one, the most reuse), and its seeded bug. */
static int gk_mode, gk_pool = 1, gk_no_guard;
static long gk_enomem;	/* gkmz operations that found every descriptor pinned */
#define KSYNC_MWCAS_GKMZ_TEST_POOL gk_pool
#define KSYNC_MWCAS_GKMZ_TEST_NO_GUARD gk_no_guard

#include <ksync/atomic.h>
#include <ksync/ktest.h>
#include <ksync/mwcas.h>

#include "../explore/explore.c"

#define NW 4
#define V(x) KSYNC_MWCAS_VAL(x)
#define OP_MWCAS KX_USER
#define OP_READ (KX_USER + 1)

static uint64_t w[NW] __attribute__((aligned(64)));
static unsigned slots[KX_MAX_THREADS];

/* An operation of a scenario: up to 3 words (index, expected, desired). */
struct mwop {
	unsigned n;
	unsigned idx[3];
	uint64_t old[3], new_[3];
};

static const struct mwop *optab;	/* the scenario's operations, arg = index */
static uint64_t init_vals[NW];

/* ---- the sequential specification: NW words, MWCAS and READ ---------------------- */

struct regs {
	uint64_t w[NW];
};

static void regs_init(void *s)
{
	struct regs *r = s;

	for (int i = 0; i < NW; i++)
		r->w[i] = init_vals[i];
}

static bool regs_apply(void *s, int op, uint64_t arg, uint64_t result)
{
	struct regs *r = s;

	if (op == OP_READ)
		return arg < NW && r->w[arg] == result;
	if (op == OP_MWCAS) {
		const struct mwop *m = &optab[arg];
		bool match = true;

		for (unsigned i = 0; i < m->n; i++)
			match &= r->w[m->idx[i]] == m->old[i];
		if (result == (uint64_t)(int64_t)KSYNC_ENOMEM)
			return gk_mode != 0;	/* gkmz: no descriptor free, nothing written */
		if (!match)
			return result == (uint64_t)KSYNC_EBUSY;
		if (result != KSYNC_OK)
			return false;
		for (unsigned i = 0; i < m->n; i++)
			r->w[m->idx[i]] = m->new_[i];
		return true;
	}
	return false;
}

static const char *regs_op_name(int op)
{
	return op == OP_READ ? "read" : "mwcas";
}

static const struct kx_spec regs_spec = { "words", sizeof(struct regs), regs_init,
					  regs_apply, regs_op_name };

/* ---- recorded operations --------------------------------------------------------- */

static void do_mwcas(struct kx *x, unsigned k)
{
	const struct mwop *m = &optab[k];
	struct ksync_mwcas_op ops[3];
	int op, r;

	for (unsigned i = 0; i < m->n; i++)
		ops[i] = (struct ksync_mwcas_op){ &w[m->idx[i]], m->old[i], m->new_[i] };
	op = kx_op_begin(x, OP_MWCAS, k);
	r = gk_mode ? __ksync_mwcas_gkmz(slots[kx_tid(x)], ops, m->n)
		    : __ksync_mwcas_soft(slots[kx_tid(x)], ops, m->n);
	gk_enomem += r == KSYNC_ENOMEM;
	kx_op_end(x, op, (uint64_t)r);
}

static void do_read(struct kx *x, unsigned i)
{
	int op = kx_op_begin(x, OP_READ, i);

	kx_op_end(x, op, gk_mode ? ksync_mwcas_read_gkmz(&w[i]) : ksync_mwcas_read_soft(&w[i]));
}

static void setup(struct kx *x, void *arg)
{
	(void)arg;
	for (int i = 0; i < NW; i++)
		w[i] = init_vals[i];
	/* gkmz: fresh pools (no word holds a reference now), no announcements */
	for (int s = 0; s < KX_MAX_THREADS; s++) {
		for (int p = 0; p < KSYNC_MWCAS_GKMZ_POOL; p++) {
			ksync__gk_descs[slots[s]][p].state = 0;
			ksync__gk_descs[slots[s]][p].n = 0;
		}
		ksync__gk_slots[slots[s]].help = 0;
		ksync__gk_slots[slots[s]].ostale = 0;
		ksync__gk_slots[slots[s]].next = 0;
		kx_name(x, &ksync__gk_descs[slots[s]][0], s == 0 ? "gk0" : s == 1 ? "gk1"
							   : s == 2 ? "gk2" : "gk3");
	}
	ksync__gk_danger = 0;
	kx_name(x, &ksync__gk_danger, "danger");
	kx_name(x, &w[0], "w0");
	kx_name(x, &w[1], "w1");
	kx_name(x, &w[2], "w2");
	kx_name(x, &w[3], "w3");
	for (int s = 0; s < KX_MAX_THREADS; s++) {
		kx_name(x, &ksync__mwcas_descs[slots[s]], s == 0 ? "desc0" : s == 1 ? "desc1"
							  : s == 2 ? "desc2" : "desc3");
		kx_name(x, &ksync__rdcss_descs[slots[s]], s == 0 ? "rdcss0" : s == 1 ? "rdcss1"
							   : s == 2 ? "rdcss2" : "rdcss3");
	}
}

/* No reference may be left in any word once every operation has returned. */
static bool no_refs_left(struct kx *x, void *arg)
{
	(void)x;
	(void)arg;
	for (int i = 0; i < NW; i++)
		if (w[i] & KSYNC_MWCAS_RESERVED)
			return false;
	return true;
}

/* Threads: thread t runs script[t], a list of operations (MWCAS index, or READ of a word
 * as 100 + i), ended by -1. */
static const int *script[KX_MAX_THREADS];

/* A scenario: its operations, every word at V(0), and up to three threads' scripts
 * (NULL: no such thread). */
static void scenario(const struct mwop *ops, const int *t0, const int *t1, const int *t2)
{
	optab = ops;
	for (int i = 0; i < NW; i++)
		init_vals[i] = V(0);
	script[0] = t0;
	script[1] = t1;
	script[2] = t2;
}

static void runner(struct kx *x, int tid, void *arg)
{
	(void)arg;
	for (const int *p = script[tid]; *p >= 0; p++) {
		if (*p >= 100)
			do_read(x, (unsigned)(*p - 100));
		else
			do_mwcas(x, (unsigned)*p);
	}
}

static int explore(struct ktest_ctx *kt, const char *name, int nthreads, int bound,
		   long max_schedules, struct kx_result *r)
{
	struct kx_config cfg = {
		.name = name,
		.nthreads = nthreads,
		.thread = { runner, runner, runner, runner },
		.setup = setup,
		.check = no_refs_left,
		.spec = &regs_spec,
		.preemption_bound = bound,
		.max_schedules = max_schedules,
		.max_steps = 3000,	/* an operation takes < 100 steps; more is a livelock */
		.step_limit_is_violation = true,
	};

	return kx_explore(&cfg, r, kt);
}

static bool claim_slots(void)
{
	for (int i = 0; i < KX_MAX_THREADS; i++) {
		int s = ksync_mwcas_slot_claim();

		if (s < 0)
			return false;
		slots[i] = (unsigned)s;
	}
	return true;
}

static void release_slots(void)
{
	for (int i = 0; i < KX_MAX_THREADS; i++)
		ksync_mwcas_slot_release(slots[i]);
}

/* Budget: the TSan build is ~10x slower per step; keep each case to a few seconds. */
#define BUDGET (KX_TSAN ? 10000 : 200000)

/* Two operations sharing w1: at most one of them can succeed from the initial state. */
static const struct mwop overlap_ops[] = {
	{ 2, { 0, 1 }, { V(0), V(0) }, { V(1), V(1) } },
	{ 2, { 1, 2 }, { V(0), V(0) }, { V(2), V(2) } },
};
static const int overlap_t0[] = { 0, -1 }, overlap_t1[] = { 1, 102, -1 };

KTEST(explore_mwcas_overlapping_pair)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(overlap_ops, overlap_t0, overlap_t1, NULL);
	KT_EXPECT_EQ(explore(kt, "mwcas-overlap", 2, 2, BUDGET, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.schedules > 100);
	release_slots();
}

/* Both succeed in some order (the second expects the first's result or the initial
 * value, so every order has a legal outcome), plus readers of both words. */
static const struct mwop chain_ops[] = {
	{ 2, { 0, 1 }, { V(0), V(0) }, { V(1), V(1) } },
	{ 2, { 1, 2 }, { V(1), V(0) }, { V(2), V(2) } },
};
static const int chain_t0[] = { 0, -1 }, chain_t1[] = { 1, -1 },
		 chain_t2[] = { 101, 100, -1 };

KTEST(explore_mwcas_reads_race_with_operations)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(chain_ops, chain_t0, chain_t1, chain_t2);
	KT_EXPECT_EQ(explore(kt, "mwcas-reads", 3, 2, BUDGET, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

/* A cycle: each operation's words overlap the next one's; helping must terminate. */
static const struct mwop cycle_ops[] = {
	{ 2, { 0, 1 }, { V(0), V(0) }, { V(1), V(1) } },
	{ 2, { 1, 2 }, { V(0), V(0) }, { V(2), V(2) } },
	{ 2, { 2, 0 }, { V(0), V(0) }, { V(3), V(3) } },
};
static const int cycle_t0[] = { 0, -1 }, cycle_t1[] = { 1, -1 }, cycle_t2[] = { 2, -1 };

KTEST(explore_mwcas_cycle_of_three)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(cycle_ops, cycle_t0, cycle_t1, cycle_t2);
	KT_EXPECT_EQ(explore(kt, "mwcas-cycle", 3, 2, BUDGET, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

/*
 * A failing operation, a helper, and descriptor reuse.  w1 starts at 5.  Thread 0 runs
 * {w0, w1, w2: 0 -> 1} (it can fail at w1) and then {w3: 0 -> 2}, which reuses its
 * descriptor; thread 1 sets w1 back to 0; thread 2 runs {w0: 0 -> 7}, meets thread 0's
 * reference in w0 and helps it - and, once w1 is 0, gets further than thread 0 did.
 * With Harris-Fraser-Pratt's original phase 2 (which relies on a garbage collector)
 * one schedule leaves a stale reference in w2: thread 2's RDCSS on w2 reads UNDECIDED,
 * thread 0 decides FAILED, cleans up with one CAS per word (w2 holds thread 2's RDCSS
 * reference, so that CAS fails), returns and reuses its descriptor; thread 2 then
 * completes its RDCSS, installing a reference to a descriptor that now describes
 * another operation.  Two preemptions suffice.  mwcas.h's owner phase 2 finishes such
 * an RDCSS before it returns.
 */
static const struct mwop reuse_ops[] = {
	{ 3, { 0, 1, 2 }, { V(0), V(0), V(0) }, { V(1), V(1), V(1) } },
	{ 1, { 3 }, { V(0) }, { V(2) } },
	{ 1, { 1 }, { V(5) }, { V(0) } },
	{ 1, { 0 }, { V(0) }, { V(7) } },
};
static const int reuse_t0[] = { 0, 1, -1 }, reuse_t1[] = { 2, -1 }, reuse_t2[] = { 3, -1 };

static void reuse_scenario(void)
{
	scenario(reuse_ops, reuse_t0, reuse_t1, reuse_t2);
	init_vals[1] = V(5);
}

KTEST(explore_mwcas_failure_helper_reuse)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	reuse_scenario();
	original_phase2 = 0;
	KT_EXPECT_EQ(explore(kt, "mwcas-reuse", 3, 2, BUDGET, &r), 0);
	KT_EXPECT(r.exhausted || KX_TSAN);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

KTEST(explore_mwcas_finds_stale_reference_with_original_phase2)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	reuse_scenario();
	original_phase2 = 1;	/* the seeded bug */
	KT_EXPECT_EQ(explore(kt, "mwcas-original-phase2", 3, 2, BUDGET, &r), 1);
	KT_EXPECT(r.violations >= 1);
	original_phase2 = 0;
	release_slots();
}

/* A longer mix at bound 2: a failing 3-word operation, a thread that flips w1, and a
 * thread with two operations that both meet the first one. */
static const struct mwop mix_ops[] = {
	{ 3, { 0, 1, 2 }, { V(0), V(0), V(0) }, { V(1), V(1), V(1) } },
	{ 1, { 1 }, { V(0) }, { V(5) } },
	{ 1, { 1 }, { V(5) }, { V(0) } },
	{ 1, { 0 }, { V(0) }, { V(7) } },
	{ 1, { 2 }, { V(0) }, { V(9) } },
	{ 1, { 3 }, { V(0) }, { V(2) } },
};
static const int mix_t0[] = { 0, 5, -1 }, mix_t1[] = { 1, 2, -1 }, mix_t2[] = { 3, 4, -1 };

KTEST(explore_mwcas_failure_with_helpers)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(mix_ops, mix_t0, mix_t1, mix_t2);
	KT_EXPECT_EQ(explore(kt, "mwcas-mix", 3, 2, BUDGET, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

/* The mix once more as a random sample with up to 4 preemptions (beyond what the
 * depth-first search can exhaust), and the seeded bug must show up in such a sample. */
KTEST(explore_mwcas_random_deeper)
{
	struct kx_config cfg = {
		.name = "mwcas-mix-random",
		.nthreads = 3,
		.thread = { runner, runner, runner },
		.setup = setup,
		.check = no_refs_left,
		.spec = &regs_spec,
		.preemption_bound = 4,
		.random_schedules = KX_TSAN ? 2000 : 30000,
		.seed = 7,
		.max_steps = 3000,
		.step_limit_is_violation = true,
	};
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(mix_ops, mix_t0, mix_t1, mix_t2);
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);

	if (KX_TSAN) {
		/* the seeded bug takes ~15000 random schedules: too slow under TSan, and the
		 * depth-first test above already finds it there */
		release_slots();
		return;
	}
	reuse_scenario();
	cfg.name = "mwcas-original-phase2-random";
	cfg.preemption_bound = 2;
	cfg.random_schedules = 200000;	/* stops at the first violation (~15000 here) */
	cfg.quiet = true;
	original_phase2 = 1;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);
	original_phase2 = 0;
	release_slots();
}

/* ---- gkmz ------------------------------------------------------------------------ */

/* After the run: every word's value, as reads recorded in the history (so that the
 * final state is checked against the specification too).  Bounded: teardown runs
 * outside the step limit, and a word holding a reference to an instance that is over
 * would make ksync_mwcas_read_gkmz loop; such a word is recorded as an odd value,
 * which no specification state has. */
static void gk_teardown(struct kx *x, void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < NW; i++) {
		struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
		unsigned n;
		uint64_t st, v = w[i];
		int op = kx_op_begin(x, OP_READ, i);

		if ((v & KSYNC_MWCAS_RESERVED) && !ksync__gk_snapshot(v, e, &n, &st))
			kx_op_end(x, op, v);	/* stale: fails the check */
		else
			kx_op_end(x, op, ksync_mwcas_read_gkmz(&w[i]));
	}
}

/* No word holds a reference to an instance that is over (a reader would loop on it),
 * and every announcement and danger count was undone. */
static bool gk_check(struct kx *x, void *arg)
{
	(void)x;
	(void)arg;
	for (int i = 0; i < NW; i++) {
		struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
		unsigned n;
		uint64_t st;

		if ((w[i] & KSYNC_MWCAS_RESERVED) && !ksync__gk_snapshot(w[i], e, &n, &st))
			return false;
	}
	for (int s = 0; s < KX_MAX_THREADS; s++)
		if (ksync__gk_slots[slots[s]].help != 0)
			return false;
	return ksync__gk_danger == 0;
}

static int gk_explore(struct ktest_ctx *kt, const char *name, int nthreads, int bound,
		      long max_schedules, long random, struct kx_result *r)
{
	struct kx_config cfg = {
		.name = name,
		.nthreads = nthreads,
		.thread = { runner, runner, runner, runner },
		.setup = setup,
		.teardown = gk_teardown,
		.check = gk_check,
		.spec = &regs_spec,
		.preemption_bound = bound,
		.max_schedules = max_schedules,
		.random_schedules = random,
		.seed = 11,
		.max_steps = 3000,
		.step_limit_is_violation = true,
	};
	int rc;

	gk_mode = 1;
	rc = kx_explore(&cfg, r, kt);
	gk_mode = 0;
	return rc;
}

KTEST(explore_gkmz_overlapping_pair)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(overlap_ops, overlap_t0, overlap_t1, NULL);
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-overlap", 2, 2, BUDGET, 0, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.schedules > 100);
	release_slots();
}

KTEST(explore_gkmz_reads_race_with_operations)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(chain_ops, chain_t0, chain_t1, chain_t2);
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-reads", 3, 2, BUDGET, 0, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

KTEST(explore_gkmz_cycle_of_three)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(cycle_ops, cycle_t0, cycle_t1, cycle_t2);
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-cycle", 3, 2, BUDGET, 0, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

KTEST(explore_gkmz_failure_helper_reuse)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	reuse_scenario();
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-reuse", 3, 2, BUDGET, 0, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

KTEST(explore_gkmz_mix_random_deeper)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	scenario(mix_ops, mix_t0, mix_t1, mix_t2);
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-mix", 3, 2, BUDGET, 0, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-mix-random", 3, 4, 0, KX_TSAN ? 2000 : 30000, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	release_slots();
}

/*
 * The late install.  Thread 0 runs A = {w0, w1: 0 -> 2}, then Q = {w1: 2 -> 0}, then
 * R = {w3: 0 -> 2}, whose start retires Q (one descriptor per thread): Q's reference in
 * w1 is cleaned back to the plain value 0.  Thread 1 runs B = {w0: 0 -> 4}: it meets
 * A's ACTIVE reference in w0 and helps A - reads w1 = 0 (plain) and is preempted before
 * its install CAS.  If thread 0 now completes A, Q and the clean-up, thread 1's CAS
 * (expecting 0) succeeds long after A was decided, and w1 reads as A's new value 2
 * instead of 0 (or, as the explorer finds first, A's descriptor is reused too and w1
 * keeps a reference to an instance that is over).  The guard (ksync__gk_reusable) sees
 * thread 1's announcement of A and does not retire what it pins (A itself, or Q: a
 * SUCCEEDED A expects at w1 the value Q's clean-up would write back): thread 0's next
 * operation returns KSYNC_ENOMEM with one descriptor per thread (with the default pool
 * it takes another descriptor).
 */
static const struct mwop late_ops[] = {
	{ 2, { 0, 1 }, { V(0), V(0) }, { V(2), V(2) } },
	{ 1, { 1 }, { V(2) }, { V(0) } },
	{ 1, { 3 }, { V(0) }, { V(2) } },
	{ 1, { 0 }, { V(0) }, { V(4) } },
};
static const int late_t0[] = { 0, 1, 2, -1 }, late_t1[] = { 3, -1 };

static void late_scenario(void)
{
	scenario(late_ops, late_t0, late_t1, NULL);
}

KTEST(explore_gkmz_late_install_guarded)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	late_scenario();
	gk_enomem = 0;
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-late", 2, 2, KX_TSAN ? 20000 : 400000, 0, &r), 0);
	KT_EXPECT(r.exhausted || KX_TSAN);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	/* the guard did act: in some schedules the pinned descriptor was not reused */
	kt_diag(kt, "gkmz-late: %ld operations returned KSYNC_ENOMEM (guard)", gk_enomem);
	KT_EXPECT(gk_enomem > 0);
	release_slots();
}

KTEST(explore_gkmz_finds_late_install_without_guard)
{
	struct kx_result r;

	KT_ASSERT(claim_slots());
	late_scenario();
	gk_no_guard = 1;	/* the seeded bug */
	KT_EXPECT_EQ(gk_explore(kt, "gkmz-no-guard", 2, 2, KX_TSAN ? 20000 : 400000, 0, &r), 1);
	KT_EXPECT(r.violations >= 1);
	gk_no_guard = 0;
	release_slots();
}
