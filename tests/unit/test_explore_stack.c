/*
 * test_explore_stack.c - the interleaving explorer finds the seeded ABA bug of a
 * Treiber stack without a generation counter, and finds nothing in the same stack with
 * a 64-bit generation updated by cmpxchg16b (issue #3 item 8: "it must find a seeded
 * bug (e.g., a stack without the generation counter)").  Both stacks are written here;
 * test_explore_lf_stack.c explores the real include/ksync/lf_stack.h.
 *
 * The scenario (Massalin & Pu 1991, "LIFO stacks"; the classic ABA): the stack holds
 * X -> Y.  Thread 0 pops once; thread 1 pops X, pops Y and pushes X back (node reuse,
 * as a type-stable free list does).  Without a generation, thread 0 can read top = X
 * and X->next = Y, be preempted while thread 1 runs, then CAS top from X to Y - which
 * succeeds, reinstalling Y, a node thread 1 owns.  The history alone (setup pushes,
 * the pops, teardown draining the stack) is then not linearizable: Y comes out twice.
 */
#include "../explore/explore.h"

#include <ksync/atomic.h>
#include <ksync/ktest.h>

#include "../explore/explore.c"

struct node {
	struct node *next;	/* atomic.h only: a stale pop may read it */
	uint64_t val;		/* written while the node is private */
};

static struct node nodes[4];

/* ---- the buggy stack: top pointer only ------------------------------------------- */

static struct node *btop;

static void bpush(struct node *n)
{
	struct node *old = ksync_load_acquire_ptr(&btop);

	for (;;) {
		ksync_store_relaxed_ptr(&n->next, old);
		if (ksync_cas_strong_acq_rel_ptr(&btop, &old, n))
			return;
	}
}

static struct node *bpop(void)
{
	struct node *old = ksync_load_acquire_ptr(&btop);

	for (;;) {
		struct node *next;

		if (old == NULL)
			return NULL;
		next = ksync_load_relaxed_ptr(&old->next);
		if (ksync_cas_strong_acq_rel_ptr(&btop, &old, next))
			return old;
	}
}

/* ---- the correct stack: {top, generation} by cmpxchg16b -------------------------- */

static struct ksync_u128 gtop;	/* lo = top node, hi = generation (bumped by pops) */

static void gpush(struct node *n)
{
	struct ksync_u128 old = ksync_load128(&gtop);

	for (;;) {
		ksync_store_relaxed_ptr(&n->next, (void *)(uintptr_t)old.lo);
		if (ksync_cas128(&gtop, &old,
				 (struct ksync_u128){ (uint64_t)(uintptr_t)n, old.hi }))
			return;
	}
}

static struct node *gpop(void)
{
	struct ksync_u128 old = ksync_load128(&gtop);

	for (;;) {
		struct node *t = (struct node *)(uintptr_t)old.lo, *next;

		if (t == NULL)
			return NULL;
		next = ksync_load_relaxed_ptr(&t->next);
		if (ksync_cas128(&gtop, &old,
				 (struct ksync_u128){ (uint64_t)(uintptr_t)next, old.hi + 1 }))
			return t;
	}
}

/* ---- recorded operations, for either stack --------------------------------------- */

static bool use_gen;

static void push(struct kx *x, struct node *n)
{
	int op = kx_op_begin(x, KX_PUSH, n->val);

	if (use_gen)
		gpush(n);
	else
		bpush(n);
	kx_op_end(x, op, KX_OK);
}

static struct node *pop(struct kx *x)
{
	int op = kx_op_begin(x, KX_POP, 0);
	struct node *n = use_gen ? gpop() : bpop();

	kx_op_end(x, op, n ? n->val : KX_EMPTY);
	return n;
}

static void setup_xy(struct kx *x, void *arg)
{
	(void)arg;
	btop = NULL;
	gtop = (struct ksync_u128){ 0, 0 };
	for (int i = 0; i < 4; i++)
		nodes[i] = (struct node){ NULL, (uint64_t)i + 1 };
	kx_name(x, &btop, "top");
	kx_name(x, &gtop, "top");
	kx_name(x, &nodes[0], "X");
	kx_name(x, &nodes[1], "Y");
	kx_name(x, &nodes[2], "Z");
	kx_name(x, &nodes[3], "W");
	push(x, &nodes[1]);	/* Y */
	push(x, &nodes[0]);	/* X on top */
}

/* Drain into the history: a corrupted final state shows up as an illegal pop. */
static void teardown_drain(struct kx *x, void *arg)
{
	(void)arg;
	for (int i = 0; i < 8; i++)
		if (pop(x) == NULL)
			break;
}

static void t_pop_once(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	pop(x);
}

static void t_pop_pop_push(struct kx *x, int tid, void *arg)
{
	struct node *a, *b;

	(void)tid;
	(void)arg;
	a = pop(x);
	b = pop(x);
	(void)b;
	if (a)
		push(x, a);	/* reuse the node at once */
}

static void t_push_z_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	push(x, &nodes[2]);
	pop(x);
}

static void t_push_w(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	push(x, &nodes[3]);
}

static struct kx_config aba_config(const char *name)
{
	return (struct kx_config){
		.name = name,
		.nthreads = 2,
		.thread = { t_pop_once, t_pop_pop_push },
		.setup = setup_xy,
		.teardown = teardown_drain,
		.spec = &kx_spec_stack,
		.preemption_bound = 2,
	};
}

KTEST(explore_stack_finds_aba_without_generation)
{
	struct kx_config cfg = aba_config("treiber-no-gen");
	struct kx_result r;

	use_gen = false;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);
	KT_EXPECT(r.violations >= 1);
	KT_EXPECT_EQ(r.preemptions, 1);	/* one preemption suffices: the classic ABA */
}

KTEST(explore_stack_generation_is_clean)
{
	struct kx_config cfg = aba_config("treiber-gen");
	struct kx_result r;

	use_gen = true;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT(r.exhausted);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.schedules > 10);
}

/* Without a generation, the explorer also finds it with more threads around. */
KTEST(explore_stack_three_threads)
{
	struct kx_config cfg = aba_config("treiber-3");
	struct kx_result r;

	cfg.nthreads = 3;
	cfg.thread[2] = t_push_w;
	cfg.preemption_bound = 2;
	use_gen = true;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT(r.exhausted);
	cfg.quiet = true;
	use_gen = false;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);

	/* push/pop mixes, all threads touching the top */
	cfg = aba_config("treiber-mix");
	cfg.nthreads = 3;
	cfg.thread[0] = t_push_z_pop;
	cfg.thread[1] = t_pop_pop_push;
	cfg.thread[2] = t_pop_once;
	use_gen = true;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT(r.exhausted);
}
