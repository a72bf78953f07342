/*
 * test_explore_lf_stack.c - the interleaving explorer over the real Treiber stack of
 * include/ksync/lf_stack.h (64-bit removal generation by cmpxchg16b).  Every
 * interleaving of 2-3 threads' push / pop / pop_all, up to a preemption bound, must be
 * linearizable against a sequential stack whose results include the boundary flags
 * (push: LF_STACK_WAS_EMPTY; pop: LF_STACK_NOW_EMPTY), no execution may stall, and the
 * teardown drains the stack into the history.  The scenarios include the one that
 * breaks a stack without the generation (test_explore_stack.c): pop racing with
 * pop, pop, push-back of the same node.
 * Massalin & Pu 1991 "LIFO stacks"; Treiber 1986.
 */
#include "../explore/explore.h"

#include <ksync/errors.h>
#include <ksync/ktest.h>
#include <ksync/lf_stack.h>

#include "../explore/explore.c"

#define OP_PUSH KX_USER
#define OP_POP (KX_USER + 1)
#define OP_POP_ALL (KX_USER + 2)

struct item {
	struct lf_stack_node link;
	uint64_t val;	/* 1..15; written while the item is private */
};

static struct lf_stack st;
static struct item items[6];

/* ---- sequential specification with the boundary flags ---------------------------- */

struct sstate {
	unsigned n;
	uint64_t v[16];
};

static void s_init(void *p)
{
	((struct sstate *)p)->n = 0;
}

/*
 * push(v) -> 1 if the stack was empty before, else 0.
 * pop -> KX_EMPTY, or value | (1 << 8) if it took the last node, else value.
 * pop_all -> KX_EMPTY, or the values top first, 4 bits each, count in bits 60..63.
 */
static bool s_apply(void *p, int op, uint64_t arg, uint64_t result)
{
	struct sstate *s = p;

	if (op == OP_PUSH) {
		if (s->n == 16 || result != (s->n == 0 ? 1u : 0u))
			return false;
		s->v[s->n++] = arg;
		return true;
	}
	if (op == OP_POP) {
		uint64_t expect;

		if (s->n == 0)
			return result == KX_EMPTY;
		expect = s->v[s->n - 1] | (s->n == 1 ? 1u << 8 : 0);
		if (result != expect)
			return false;
		s->n--;
		return true;
	}
	if (op == OP_POP_ALL) {
		uint64_t expect = 0;

		if (s->n == 0)
			return result == KX_EMPTY;
		for (unsigned i = 0; i < s->n; i++)
			expect |= s->v[s->n - 1 - i] << (4 * i);
		expect |= (uint64_t)s->n << 60;
		if (result != expect)
			return false;
		s->n = 0;
		return true;
	}
	return false;
}

static const char *s_name(int op)
{
	return op == OP_PUSH ? "push" : op == OP_POP ? "pop" : "pop_all";
}

static const struct kx_spec stack_spec = { "lf_stack", sizeof(struct sstate), s_init,
					   s_apply, s_name };

/* ---- recorded operations --------------------------------------------------------- */

static int bad_returns;

static void r_push(struct kx *x, struct item *it)
{
	int op = kx_op_begin(x, OP_PUSH, it->val);
	int r = lf_stack_push_mpmc(&st, &it->link);

	bad_returns += r < 0;
	kx_op_end(x, op, (uint64_t)(r == LF_STACK_WAS_EMPTY));
}

static struct item *r_pop(struct kx *x)
{
	int op = kx_op_begin(x, OP_POP, 0);
	struct lf_stack_node *n = NULL;
	int r = lf_stack_pop_mpmc(&st, &n);
	struct item *it = n ? lf_stack_entry(n, struct item, link) : NULL;

	if (r == KSYNC_EEMPTY) {
		kx_op_end(x, op, KX_EMPTY);
		return NULL;
	}
	bad_returns += r < 0 || it == NULL;
	kx_op_end(x, op, it ? it->val | (r == LF_STACK_NOW_EMPTY ? 1u << 8 : 0) : 999);
	return it;
}

/* pop_all, recording the chain; returns its first item (the old top) */
static struct item *r_pop_all(struct kx *x)
{
	int op = kx_op_begin(x, OP_POP_ALL, 0);
	struct lf_stack_node *n = NULL;
	int r = lf_stack_pop_all_mpmc(&st, &n);
	uint64_t res = 0;
	unsigned cnt = 0;

	if (r == KSYNC_EEMPTY) {
		kx_op_end(x, op, KX_EMPTY);
		return NULL;
	}
	bad_returns += r < 0;
	for (struct lf_stack_node *c = n; c && cnt < 15; c = lf_stack_next(c))
		res |= lf_stack_entry(c, struct item, link)->val << (4 * cnt++);
	kx_op_end(x, op, res | (uint64_t)cnt << 60);
	return n ? lf_stack_entry(n, struct item, link) : NULL;
}

static int preload;	/* items pushed in setup: X = items[0] on top of Y = items[1] */

static void setup(struct kx *x, void *arg)
{
	(void)arg;
	lf_stack_init(&st);
	for (int i = 0; i < 6; i++) {
		items[i].link.next = NULL;
		items[i].val = (uint64_t)i + 1;
	}
	kx_name(x, &st.top.lo, "top.lo");
	kx_name(x, &st.top.hi, "top.hi");
	kx_name(x, &items[0], "X");
	kx_name(x, &items[1], "Y");
	kx_name(x, &items[2], "Z");
	kx_name(x, &items[3], "W");
	for (int i = preload - 1; i >= 0; i--)
		r_push(x, &items[i]);
}

static void teardown(struct kx *x, void *arg)
{
	(void)arg;
	for (int i = 0; i < 8 && r_pop(x); i++)
		;
}

static void t_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_pop(x);
}

static void t_pop_pop_pushback(struct kx *x, int tid, void *arg)
{
	struct item *a;

	(void)tid;
	(void)arg;
	a = r_pop(x);
	r_pop(x);
	if (a)
		r_push(x, a);
}

static void t_push_z_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_push(x, &items[2]);
	r_pop(x);
}

static void t_push_w(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_push(x, &items[3]);
}

static void t_pop_all_pushback(struct kx *x, int tid, void *arg)
{
	struct item *a;

	(void)tid;
	(void)arg;
	a = r_pop_all(x);
	if (a)
		r_push(x, a);	/* the old top, alone (its next is rewritten by the push) */
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
		.spec = &stack_spec,
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

KTEST(explore_lf_stack_aba_scenario)
{
	preload = 2;	/* X -> Y */
	run(kt, "lf_stack-aba", 2, t_pop, t_pop_pop_pushback, NULL, 3);
}

KTEST(explore_lf_stack_three_threads)
{
	preload = 2;
	run(kt, "lf_stack-3", 3, t_pop, t_pop_pop_pushback, t_push_w, 3);
	preload = 1;
	run(kt, "lf_stack-mix", 3, t_push_z_pop, t_pop_pop_pushback, t_pop, 3);
}

KTEST(explore_lf_stack_pop_all)
{
	preload = 2;
	run(kt, "lf_stack-pop_all", 3, t_pop_all_pushback, t_pop, t_push_w, 3);
	preload = 0;	/* the empty boundary: flags on an empty stack */
	run(kt, "lf_stack-empty", 3, t_push_z_pop, t_push_w, t_pop, 3);
}
