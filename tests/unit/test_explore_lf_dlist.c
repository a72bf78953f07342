/*
 * test_explore_lf_dlist.c - the interleaving explorer over include/ksync/lf_dlist.h on
 * the soft MWCAS: every interleaving of 3 threads' inserts, removals and pops on a
 * small ring, up to a preemption bound, must be linearizable against a sequential
 * doubly linked list (a sequence of node ids), every execution must finish, and the
 * final ring must be consistent (a->next->prev == a, forward and backward walks agree,
 * no descriptor reference left in a link).  The teardown records a forward walk as one
 * operation so that the final order is checked against the specification too.
 * Hohmuth & Härtig 2001 §3.2, §4.2.
 */
#include "../explore/explore.h"

#include <stdint.h>

#include <ksync/mwcas.h>

/* each coroutine's MWCAS descriptor slot (defined below, after explore.c) */
static unsigned dl_slot(void);
#define LF_DLIST_MWCAS(ops, n) __ksync_mwcas_soft(dl_slot(), (ops), (n))
#define LF_DLIST_READ(a) ksync_mwcas_read_soft(a)

#include <ksync/errors.h>
#include <ksync/ktest.h>
#include <ksync/lf_dlist.h>

#include "../explore/explore.c"

#define NN 5	/* nodes 1..4 are pool nodes; 0 stands for the head */
#define OP_INS_AFTER KX_USER
#define OP_INS_BEFORE (KX_USER + 1)
#define OP_REMOVE (KX_USER + 2)
#define OP_POP (KX_USER + 3)
#define OP_WALK (KX_USER + 4)

static struct lf_dlist list;
static struct lf_dlist_node nodes[NN];	/* nodes[0] unused: id 0 is the head */
static unsigned slots[KX_MAX_THREADS + 1];

static unsigned dl_slot(void)
{
	int t = kx_cur ? kx_tid(kx_cur) : -1;

	return slots[t < 0 ? KX_MAX_THREADS : t];
}

static struct lf_dlist_node *node(unsigned id)
{
	return id == 0 ? &list.head : &nodes[id];
}

static unsigned id_of(const struct lf_dlist_node *n)
{
	return n == &list.head ? 0 : (unsigned)(n - nodes);
}

/* ---- the sequential specification ------------------------------------------------ */

struct seq {
	unsigned n;
	uint8_t id[NN];	/* the ring after the head, in order */
};

static uint8_t init_ids[NN];
static unsigned init_n;

static void seq_init(void *p)
{
	struct seq *s = p;

	s->n = init_n;
	for (unsigned i = 0; i < init_n; i++)
		s->id[i] = init_ids[i];
}

static int seq_find(const struct seq *s, unsigned id)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return (int)i;
	return -1;
}

static void seq_insert_at(struct seq *s, unsigned at, unsigned id)
{
	for (unsigned i = s->n; i > at; i--)
		s->id[i] = s->id[i - 1];
	s->id[at] = (uint8_t)id;
	s->n++;
}

static void seq_remove_at(struct seq *s, unsigned at)
{
	for (unsigned i = at; i + 1 < s->n; i++)
		s->id[i] = s->id[i + 1];
	s->n--;
}

/* results: 0 ok, else -KSYNC_E*; pop: id or KX_EMPTY; walk: ids as decimal digits */
static bool seq_apply(void *p, int op, uint64_t arg, uint64_t result)
{
	struct seq *s = p;

	if (op == OP_INS_AFTER || op == OP_INS_BEFORE) {
		unsigned pos = (unsigned)(arg >> 8), id = (unsigned)(arg & 0xff);
		int pi = pos == 0 ? -1 : seq_find(s, pos);
		bool pos_on = pos == 0 || pi >= 0, id_on = seq_find(s, id) >= 0;

		if (!pos_on && id_on)	/* both wrong: either error may be reported */
			return result == (uint64_t)-KSYNC_ENOENT || result == (uint64_t)-KSYNC_EBUSY;
		if (!pos_on)
			return result == (uint64_t)-KSYNC_ENOENT;
		if (id_on)
			return result == (uint64_t)-KSYNC_EBUSY;
		if (result != 0)
			return false;
		if (op == OP_INS_AFTER)
			seq_insert_at(s, pos == 0 ? 0 : (unsigned)pi + 1, id);
		else
			seq_insert_at(s, pos == 0 ? s->n : (unsigned)pi, id);
		return true;
	}
	if (op == OP_REMOVE) {
		int i = seq_find(s, (unsigned)arg);

		if (i < 0)
			return result == (uint64_t)-KSYNC_ENOENT;
		if (result != 0)
			return false;
		seq_remove_at(s, (unsigned)i);
		return true;
	}
	if (op == OP_POP) {
		if (s->n == 0)
			return result == KX_EMPTY;
		if (result != s->id[0])
			return false;
		seq_remove_at(s, 0);
		return true;
	}
	if (op == OP_WALK) {
		uint64_t v = 0;

		for (unsigned i = 0; i < s->n; i++)
			v = v * 10 + s->id[i];
		return result == v;
	}
	return false;
}

static const char *seq_op_name(int op)
{
	switch (op) {
	case OP_INS_AFTER: return "insert_after(pos<<8|n)";
	case OP_INS_BEFORE: return "insert_before(pos<<8|n)";
	case OP_REMOVE: return "remove";
	case OP_POP: return "pop_front";
	default: return "walk";
	}
}

static const struct kx_spec dlist_spec = { "dlist", sizeof(struct seq), seq_init, seq_apply,
					   seq_op_name };

/* ---- recorded operations --------------------------------------------------------- */

static void r_ins(struct kx *x, bool after, unsigned pos, unsigned id)
{
	int op = kx_op_begin(x, after ? OP_INS_AFTER : OP_INS_BEFORE, (uint64_t)pos << 8 | id);
	int r = after ? lf_dlist_insert_after(&list, node(pos), node(id))
		      : lf_dlist_insert_before(&list, node(pos), node(id));

	kx_op_end(x, op, (uint64_t)-r);
}

static void r_remove(struct kx *x, unsigned id)
{
	int op = kx_op_begin(x, OP_REMOVE, id);

	kx_op_end(x, op, (uint64_t)-lf_dlist_remove(&list, node(id)));
}

static void r_pop(struct kx *x)
{
	int op = kx_op_begin(x, OP_POP, 0);
	struct lf_dlist_node *n = NULL;
	int r = lf_dlist_pop_front(&list, &n);

	kx_op_end(x, op, r == KSYNC_OK ? id_of(n) : r == KSYNC_EEMPTY ? KX_EMPTY : 900);
}

static void setup(struct kx *x, void *arg)
{
	(void)arg;
	lf_dlist_init(&list);
	for (unsigned i = 0; i < NN; i++)
		lf_dlist_node_init(&nodes[i]);
	kx_name(x, &list.head, "head");
	kx_name(x, &nodes[1], "n1");
	kx_name(x, &nodes[2], "n2");
	kx_name(x, &nodes[3], "n3");
	kx_name(x, &nodes[4], "n4");
	/* the initial ring, built single-threaded (setup runs straight through) */
	for (unsigned i = 0; i < init_n; i++)
		lf_dlist_push_back(&list, node(init_ids[i]));
}

static void teardown(struct kx *x, void *arg)
{
	int op = kx_op_begin(x, OP_WALK, 0);
	uint64_t v = 0;
	unsigned steps = 0;

	(void)arg;
	for (struct lf_dlist_node *n = lf_dlist_first(&list); n && steps++ < NN;
	     n = lf_dlist_next(&list, n))
		v = v * 10 + id_of(n);
	kx_op_end(x, op, v);
}

/* a->next->prev == a around the ring, backward walk as long as forward, no reference
 * (odd word) in any link, off-list nodes fully unlinked */
static bool ring_ok(struct kx *x, void *arg)
{
	unsigned fwd = 0, bwd = 0;
	struct lf_dlist_node *a = &list.head;

	(void)x;
	(void)arg;
	for (unsigned i = 0; i < NN; i++)
		if ((nodes[i].next | nodes[i].prev) & 1 || (list.head.next | list.head.prev) & 1)
			return false;
	do {
		struct lf_dlist_node *b = (struct lf_dlist_node *)(uintptr_t)a->next;

		if (b == NULL || b->prev != (uint64_t)(uintptr_t)a || fwd++ > NN)
			return false;
		a = b;
	} while (a != &list.head);
	for (a = lf_dlist_last(&list); a; a = lf_dlist_prev(&list, a))
		if (bwd++ > NN)
			return false;
	for (unsigned i = 1; i < NN; i++)
		if ((nodes[i].next == 0) != (nodes[i].prev == 0))
			return false;
	return fwd == bwd + 1;	/* fwd counted the step back to the head */
}

/* ---- scenarios ------------------------------------------------------------------- */

static void t_remove1(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_remove(x, 1);
}

static void t_insert3_after1(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_ins(x, true, 1, 3);
}

static void t_remove2(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_remove(x, 2);
}

static void t_pop(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_pop(x);
}

static void t_push_back4(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_ins(x, false, 0, 4);
}

static void t_insert3_before2(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_ins(x, false, 2, 3);
}

#define BUDGET (KX_TSAN ? 15000 : 150000)
#define RANDOM (KX_TSAN ? 2000 : 20000)

/* Exhaustive at `bound`, then a random sample of schedules with up to 3 preemptions
 * (each operation is ~90 atomic steps: bound 2 is already ~10^6 schedules). */
static void run(struct ktest_ctx *kt, const char *name, kx_thread_fn a, kx_thread_fn b,
		kx_thread_fn c, int bound)
{
	struct kx_config cfg = {
		.name = name,
		.nthreads = 3,
		.thread = { a, b, c },
		.setup = setup,
		.teardown = teardown,
		.check = ring_ok,
		.spec = &dlist_spec,
		.preemption_bound = bound,
		.max_schedules = BUDGET,
		.max_steps = 5000,
		.step_limit_is_violation = true,
	};
	struct kx_result r;

	for (int i = 0; i <= KX_MAX_THREADS; i++) {
		int s = ksync_mwcas_slot_claim();

		KT_ASSERT(s >= 0);
		slots[i] = (unsigned)s;
	}
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT(r.exhausted);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.schedules > 1);
	cfg.preemption_bound = 3;
	cfg.random_schedules = RANDOM;
	cfg.seed = 0x5eed0000u + (uint64_t)bound;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT_EQ(r.schedules, RANDOM);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	for (int i = 0; i <= KX_MAX_THREADS; i++)
		ksync_mwcas_slot_release(slots[i]);
}

/* Neighbours changing at once: remove 1, insert after 1, remove 2 on head,1,2. */
KTEST(explore_lf_dlist_neighbours)
{
	init_n = 2;
	init_ids[0] = 1;
	init_ids[1] = 2;
	run(kt, "dlist-neighbours", t_remove1, t_insert3_after1, t_remove2, 1);
}

/* Two pops race with an append and an insert before the second node. */
KTEST(explore_lf_dlist_pops_and_appends)
{
	init_n = 2;
	init_ids[0] = 1;
	init_ids[1] = 2;
	run(kt, "dlist-pops", t_pop, t_pop, t_push_back4, 1);
	run(kt, "dlist-pop-insert", t_pop, t_insert3_before2, t_remove2, 1);
}

/* From one node down to empty and back: the single-node ring. */
KTEST(explore_lf_dlist_single_node_ring)
{
	init_n = 1;
	init_ids[0] = 1;
	run(kt, "dlist-single", t_remove1, t_pop, t_push_back4, 1);
}
