/*
 * test_explore_lf_astack.c - the interleaving explorer over the array stack of
 * include/ksync/lf_astack.h (Massalin & Pu 1991 "LIFO stacks": the CAS2 push of SP and
 * its slot, here one cmpxchg16b of the head and a slot write any thread completes).
 * Every interleaving of 2-3 threads' push / pop, up to a preemption bound, must be
 * linearizable against a sequential bounded stack whose results include the boundary
 * flags and the full / empty errors; no execution may stall; the teardown drains the
 * stack into the history.  The scenarios put an operation between another's head CAS
 * and its slot write (helping), the pop-pop-push ABA on the count, and the full boundary
 * (capacity 2).
 */
#include "../explore/explore.h"

#include <ksync/errors.h>
#include <ksync/ktest.h>
#include <ksync/lf_astack.h>

#include "../explore/explore.c"

#define OP_PUSH KX_USER
#define OP_POP (KX_USER + 1)
#define CAP 2
#define FULL (UINT64_MAX - 1)

static struct lf_astack st;
static _Alignas(16) struct lf_astack_slot st_slots[LF_ASTACK_SLOTS(CAP)];

/* ---- sequential specification: a bounded stack with the boundary results ------------ */

struct sstate {
	unsigned n;
	uint64_t v[CAP];
};

static void s_init(void *p)
{
	((struct sstate *)p)->n = 0;
}

/* push(v) -> FULL, or 1 if the stack was empty before, else 0.
 * pop -> KX_EMPTY, or value | (1 << 8) if it was the last, else value. */
static bool s_apply(void *p, int op, uint64_t arg, uint64_t result)
{
	struct sstate *s = p;

	if (op == OP_PUSH) {
		if (s->n == CAP)
			return result == FULL;
		if (result != (s->n == 0 ? 1u : 0u))
			return false;
		s->v[s->n++] = arg;
		return true;
	}
	if (op == OP_POP) {
		if (s->n == 0)
			return result == KX_EMPTY;
		if (result != (s->v[s->n - 1] | (s->n == 1 ? 1u << 8 : 0)))
			return false;
		s->n--;
		return true;
	}
	return false;
}

static const char *s_name(int op)
{
	return op == OP_PUSH ? "push" : "pop";
}

static const struct kx_spec astack_spec = { "lf_astack", sizeof(struct sstate), s_init,
					    s_apply, s_name };

/* ---- recorded operations --------------------------------------------------------- */

static int bad_returns;

static void r_push(struct kx *x, uint64_t v)
{
	int op = kx_op_begin(x, OP_PUSH, v);
	int r = lf_astack_push_mpmc(&st, v);

	bad_returns += r < 0 && r != KSYNC_EFULL;
	kx_op_end(x, op, r == KSYNC_EFULL ? FULL : (uint64_t)(r == LF_ASTACK_WAS_EMPTY));
}

static uint64_t r_pop(struct kx *x)
{
	int op = kx_op_begin(x, OP_POP, 0);
	uint64_t v = 0;
	int r = lf_astack_pop_mpmc(&st, &v);

	if (r == KSYNC_EEMPTY) {
		kx_op_end(x, op, KX_EMPTY);
		return 0;
	}
	bad_returns += r < 0;
	kx_op_end(x, op, v | (r == LF_ASTACK_NOW_EMPTY ? 1u << 8 : 0));
	return v;
}

static int preload;	/* values pushed in setup: 1, then 2 */

static void setup(struct kx *x, void *arg)
{
	(void)arg;
	lf_astack_init(&st, st_slots, CAP);
	kx_name(x, &st.head.lo, "head.v");
	kx_name(x, &st.head.hi, "head.gen|n");
	for (int j = 0; j < CAP + 1; j++) {
		static const char *lo[] = { "slot0.v", "slot1.v", "slot2.v" };
		static const char *hi[] = { "slot0.gen", "slot1.gen", "slot2.gen" };

		kx_name(x, &st_slots[j].w.lo, lo[j]);
		kx_name(x, &st_slots[j].w.hi, hi[j]);	/* w itself: the cmpxchg16b's, = .lo */
	}
	for (int i = 0; i < preload; i++)
		r_push(x, (uint64_t)i + 1);
}

static void teardown(struct kx *x, void *arg)
{
	(void)arg;
	for (int i = 0; i < CAP + 1; i++)
		if (r_pop(x) == 0)
			break;
}

static void t_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_pop(x);
}

static void t_push_3(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_push(x, 3);
}

static void t_pop_pop_push_4(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_pop(x);
	r_pop(x);
	r_push(x, 4);
}

static void t_push_5_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_push(x, 5);
	r_pop(x);
}

static void t_push_6_push_7(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_push(x, 6);
	r_push(x, 7);
}

/* pop, then fill to the top and empty again: with a push stalled between its head CAS
 * and its slot write before the pop, a pop that moved the head without completing the
 * slot would let the stalled write land later over the next value at that index */
static void t_pop_push_6_7_pop_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_pop(x);
	r_push(x, 6);
	r_push(x, 7);
	r_pop(x);
	r_pop(x);
}

#define BUDGET (KX_TSAN ? 30000 : 300000)

static void run(struct ktest_ctx *kt, const char *name, int n, kx_thread_fn a,
		kx_thread_fn b, kx_thread_fn c, int bound)
{
	struct kx_config cfg = {
		.name = name,
		.nthreads = n,
		.thread = { a, b, c },
		.setup = setup,
		.teardown = teardown,
		.spec = &astack_spec,
		.preemption_bound = bound,
		.max_schedules = BUDGET,
		.max_steps = 5000,
		.step_limit_is_violation = true,
	};
	struct kx_result r;

	bad_returns = 0;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT_EQ(bad_returns, 0);
	KT_EXPECT(r.schedules > 1);
}

KTEST(explore_lf_astack_push_pop_helping)
{
	preload = 1;
	run(kt, "lf_astack-push-pop", 2, t_push_5_pop, t_pop, NULL, 3);
	preload = 0;
	run(kt, "lf_astack-empty", 3, t_push_5_pop, t_push_3, t_pop, 3);
}

KTEST(explore_lf_astack_aba_on_the_count)
{
	preload = 2;	/* 1 under 2 */
	run(kt, "lf_astack-aba", 2, t_pop, t_pop_pop_push_4, NULL, 3);
	preload = 1;
	run(kt, "lf_astack-aba-3", 3, t_pop, t_pop_pop_push_4, t_push_3, 2);
}

KTEST(explore_lf_astack_late_slot_write)
{
	preload = 0;
	run(kt, "lf_astack-late-write", 2, t_push_3, t_pop_push_6_7_pop_pop, NULL, 3);
}

KTEST(explore_lf_astack_full_boundary)
{
	preload = 1;	/* capacity 2: one push fits */
	run(kt, "lf_astack-full", 3, t_push_6_push_7, t_push_3, t_pop, 2);
}
