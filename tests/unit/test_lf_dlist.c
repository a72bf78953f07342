/*
 * test_lf_dlist.c - single-threaded semantics of include/ksync/lf_dlist.h over each
 * MWCAS implementation (soft, irq, lock: the list's LF_DLIST_MWCAS/LF_DLIST_READ are
 * pointed at a test dispatcher), ring integrity after every step (forward and backward
 * walks agree, a->next->prev == a), the error returns, bad input, and interference
 * injection: a concurrent change between reading the links and the MWCAS forces
 * exactly one retry of insert and of remove.
 * Hohmuth & Härtig 2001 §3.2, §4.2 (Fiasco's ready and present lists).
 */
#include <stdint.h>

#include <ksync/mwcas.h>

/* ---- test plumbing: which MWCAS the list uses, and the interference hook --------- */

static int variant;	/* 0 soft, 1 irq, 2 lock */
static const char *const variant_name[] = { "soft", "irq", "lock" };

static int test_mwcas(struct ksync_mwcas_op *ops, unsigned n)
{
	return variant == 0 ? ksync_mwcas_soft(ops, n)
	       : variant == 1 ? ksync_mwcas_irq(ops, n)
			      : ksync_mwcas_lock(ops, n);
}

static uint64_t test_read(const uint64_t *a)
{
	return variant == 0 ? ksync_mwcas_read_soft(a)
	       : variant == 1 ? ksync_mwcas_read_irq(a)
			      : ksync_mwcas_read_lock(a);
}

static int hook_calls;
static void (*hook_fn)(void);
#define LF_DLIST_MWCAS(ops, n) test_mwcas((ops), (n))
#define LF_DLIST_READ(a) test_read(a)
#define LF_DLIST_TEST_HOOK(op, l, n)                                                  \
	do {                                                                          \
		hook_calls++;                                                         \
		if (hook_fn) {                                                        \
			void (*f_)(void) = hook_fn;                                   \
			hook_fn = 0;                                                  \
			f_();                                                         \
		}                                                                     \
	} while (0)

#include <ksync/errors.h>
#include <ksync/ktest.h>
#include <ksync/lf_dlist.h>

#define NNODES 8

static struct lf_dlist list;
static struct lf_dlist_node nodes[NNODES];

static int id(const struct lf_dlist_node *n)
{
	return (int)(n - nodes);
}

/* Walk both ways; write the ids in forward order into out (as a decimal number,
 * e.g. 3 1 2 -> 312); check a->next->prev == a everywhere and that both walks have
 * the same length.  Returns the forward length, -1 on a broken ring. */
static int walk(long *out)
{
	int fwd = 0, bwd = 0;
	long v = 0;
	struct lf_dlist_node *n;

	for (n = lf_dlist_first(&list); n; n = lf_dlist_next(&list, n)) {
		struct lf_dlist_node *nx = (struct lf_dlist_node *)(uintptr_t)test_read(&n->next);

		if (test_read(&nx->prev) != (uint64_t)(uintptr_t)n || ++fwd > NNODES)
			return -1;
		v = v * 10 + id(n);
	}
	for (n = lf_dlist_last(&list); n; n = lf_dlist_prev(&list, n))
		if (++bwd > NNODES)
			return -1;
	if (fwd != bwd)
		return -1;
	if (out)
		*out = v;
	return fwd;
}

static void reset(void)
{
	lf_dlist_init(&list);
	for (int i = 0; i < NNODES; i++)
		lf_dlist_node_init(&nodes[i]);
}

static void semantics(struct ktest_ctx *kt)
{
	long order;
	struct lf_dlist_node *n = &nodes[0];

	reset();
	KT_EXPECT(lf_dlist_empty(&list));
	KT_EXPECT_EQ(walk(&order), 0);
	KT_EXPECT(lf_dlist_first(&list) == NULL && lf_dlist_last(&list) == NULL);
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, &n), KSYNC_EEMPTY);
	KT_EXPECT(n == NULL);

	/* push_back 1 2 3, push_front 4: 4 1 2 3 */
	KT_EXPECT_EQ(lf_dlist_push_back(&list, &nodes[1]), KSYNC_OK);
	KT_EXPECT_EQ(lf_dlist_push_back(&list, &nodes[2]), KSYNC_OK);
	KT_EXPECT_EQ(lf_dlist_push_back(&list, &nodes[3]), KSYNC_OK);
	KT_EXPECT_EQ(lf_dlist_push_front(&list, &nodes[4]), KSYNC_OK);
	KT_EXPECT_EQ(walk(&order), 4);
	KT_EXPECT_EQ(order, 4123);
	KT_EXPECT(!lf_dlist_empty(&list));
	KT_EXPECT(lf_dlist_on_list(&nodes[2]) && !lf_dlist_on_list(&nodes[5]));

	/* insert_after / insert_before in the middle: 4 1 5 2 6 3 */
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &nodes[1], &nodes[5]), KSYNC_OK);
	KT_EXPECT_EQ(lf_dlist_insert_before(&list, &nodes[3], &nodes[6]), KSYNC_OK);
	KT_EXPECT_EQ(walk(&order), 6);
	KT_EXPECT_EQ(order, 415263);

	/* remove from the middle, the front, the back: 1 5 6 */
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[2]), KSYNC_OK);
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[4]), KSYNC_OK);
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[3]), KSYNC_OK);
	KT_EXPECT_EQ(walk(&order), 3);
	KT_EXPECT_EQ(order, 156);
	KT_EXPECT(!lf_dlist_on_list(&nodes[2]));
	KT_EXPECT_EQ(nodes[2].next, 0);
	KT_EXPECT_EQ(nodes[2].prev, 0);

	/* errors: removing an off-list node; inserting an on-list node; inserting after
	 * or before an off-list position */
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[2]), KSYNC_ENOENT);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &nodes[1], &nodes[5]), KSYNC_EBUSY);
	KT_EXPECT_EQ(lf_dlist_push_back(&list, &nodes[6]), KSYNC_EBUSY);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &nodes[2], &nodes[7]), KSYNC_ENOENT);
	KT_EXPECT_EQ(lf_dlist_insert_before(&list, &nodes[2], &nodes[7]), KSYNC_ENOENT);
	KT_EXPECT_EQ(walk(&order), 3);
	KT_EXPECT_EQ(order, 156);

	/* pop_front in order, down to empty; popped nodes can go back in */
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, &n), KSYNC_OK);
	KT_EXPECT(n == &nodes[1]);
	KT_EXPECT_EQ(lf_dlist_push_back(&list, &nodes[1]), KSYNC_OK);	/* 5 6 1 */
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, &n), KSYNC_OK);
	KT_EXPECT(n == &nodes[5]);
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, &n), KSYNC_OK);
	KT_EXPECT(n == &nodes[6]);
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, &n), KSYNC_OK);
	KT_EXPECT(n == &nodes[1]);
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, &n), KSYNC_EEMPTY);
	KT_EXPECT_EQ(walk(&order), 0);
	/* the single-node ring: head <-> n <-> head */
	KT_EXPECT_EQ(lf_dlist_push_front(&list, &nodes[7]), KSYNC_OK);
	KT_EXPECT(lf_dlist_first(&list) == &nodes[7] && lf_dlist_last(&list) == &nodes[7]);
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[7]), KSYNC_OK);
	KT_EXPECT(lf_dlist_empty(&list));
	KT_EXPECT_EQ(list.head.next, (uint64_t)(uintptr_t)&list.head);
	KT_EXPECT_EQ(list.head.prev, (uint64_t)(uintptr_t)&list.head);
}

KTEST(lf_dlist_semantics_soft)
{
	variant = 0;
	semantics(kt);
}

KTEST(lf_dlist_semantics_irq)
{
	variant = 1;
	semantics(kt);
}

KTEST(lf_dlist_semantics_lock)
{
	variant = 2;
	semantics(kt);
}

KTEST(lf_dlist_default_mwcas)
{
	/* this file does not set KSYNC_MWCAS_IMPL: the list's default would be soft */
	KT_EXPECT(KSYNC_MWCAS_IMPL_NAME[0] == 's');
	kt_diag(kt, "variants exercised: %s, %s, %s", variant_name[0], variant_name[1],
		variant_name[2]);
}

KTEST(lf_dlist_bad_input)
{
	struct lf_dlist_node *n = NULL;
	struct lf_dlist_node *odd = (struct lf_dlist_node *)((char *)&nodes[3] + 4);
	long order;

	variant = 0;
	reset();
	lf_dlist_push_back(&list, &nodes[1]);
	KT_EXPECT_EQ(lf_dlist_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_node_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_node_init(odd), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_after(NULL, &list.head, &nodes[2]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, NULL, &nodes[2]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &list.head, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &list.head, odd), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &nodes[1], &nodes[1]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_after(&list, &nodes[1], &list.head), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_before(&list, &nodes[1], &nodes[1]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_insert_before(NULL, &nodes[1], &nodes[2]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_push_front(NULL, &nodes[2]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_push_back(NULL, &nodes[2]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_remove(&list, &list.head), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_remove(NULL, &nodes[1]), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_remove(&list, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_pop_front(NULL, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_dlist_pop_front(&list, NULL), KSYNC_EINVAL);
	/* nothing changed */
	KT_EXPECT_EQ(walk(&order), 1);
	KT_EXPECT_EQ(order, 1);
	KT_EXPECT_EQ(nodes[2].next, 0);
}

/* ---- interference: exactly one retry --------------------------------------------- */

static void interfere_insert(void)
{
	/* another thread puts node 6 at the front between our read and our MWCAS */
	lf_dlist_push_front(&list, &nodes[6]);
}

static void interfere_remove(void)
{
	/* another thread removes our node's predecessor meanwhile */
	lf_dlist_remove(&list, &nodes[1]);
}

static void forced_retry(struct ktest_ctx *kt)
{
	long order;

	reset();
	lf_dlist_push_back(&list, &nodes[1]);
	lf_dlist_push_back(&list, &nodes[2]);

	/* no interference: one attempt */
	hook_calls = 0;
	KT_EXPECT_EQ(lf_dlist_push_front(&list, &nodes[3]), KSYNC_OK);
	KT_EXPECT_EQ(hook_calls, 1);
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[3]), KSYNC_OK);

	/* insert: head.next changes under us -> the MWCAS fails -> one retry */
	hook_calls = 0;
	hook_fn = interfere_insert;
	KT_EXPECT_EQ(lf_dlist_push_front(&list, &nodes[3]), KSYNC_OK);
	KT_EXPECT_EQ(hook_calls, 2 + 1);	/* 2 attempts + the interferer's own */
	KT_EXPECT_EQ(walk(&order), 4);
	KT_EXPECT_EQ(order, 3612);

	/* remove node 2: its predecessor 1 is removed meanwhile -> one retry */
	hook_calls = 0;
	hook_fn = interfere_remove;
	KT_EXPECT_EQ(lf_dlist_remove(&list, &nodes[2]), KSYNC_OK);
	KT_EXPECT_EQ(hook_calls, 2 + 1);
	KT_EXPECT_EQ(walk(&order), 2);
	KT_EXPECT_EQ(order, 36);
	KT_EXPECT(hook_fn == NULL);
}

KTEST(lf_dlist_forced_retry_soft)
{
	variant = 0;
	forced_retry(kt);
}

KTEST(lf_dlist_forced_retry_lock)
{
	variant = 2;
	forced_retry(kt);
}

KTEST(lf_dlist_entry_macro)
{
	struct item {
		int payload;
		struct lf_dlist_node link;
	} it = { 42, { 0, 0 } };

	KT_EXPECT(lf_dlist_entry(&it.link, struct item, link) == &it);
	KT_EXPECT_EQ(lf_dlist_entry(&it.link, struct item, link)->payload, 42);
}
