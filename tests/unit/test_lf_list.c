/*
 * test_lf_list.c - include/ksync/lf_list.h single-threaded semantics (head and tail
 * insertion, pop_head, remove by pointer and by predicate, find, iteration, the tail
 * hint and its generation), bad input, and interference injection between the read and
 * the CAS: exactly one retry of insert_head, append, mark and unlink; a pop_head stopped
 * after freezing the head, finished by other operations; a remove that beats a frozen
 * pop; a removal between an append and its tail swing, which the generation catches.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ksync/atomic.h>

struct lf_list;
static void test_hook(const char *op, struct lf_list *l);
#define LF_LIST_TEST_HOOK(op, l) test_hook(#op, (l))

#include <ksync/ktest.h>
#include <ksync/lf_list.h>

struct item {
	struct lf_list_node link;
	int key;
};

static struct item items[16];

static struct lf_list_node *N(int k)
{
	items[k].key = k;
	return &items[k].link;
}

static int key_of(const struct lf_list_node *n)
{
	return n ? lf_list_entry(n, struct item, link)->key : -1;
}

static int key_is(const struct lf_list_node *n, void *arg)
{
	return key_of(n) == *(int *)arg;
}

static int key_odd(const struct lf_list_node *n, void *arg)
{
	(void)arg;
	return key_of(n) & 1;
}

/* ---- the hook: per-op attempt counts, one interference at a chosen op -------------- */

#define NOPS 9
static const char *const op_names[NOPS] = {
	"insert_head", "append", "swing", "unlink", "mark", "freeze", "pop_mark", "frozen", "?"
};
static int attempts[NOPS];
static int depth;
static const char *interfere_at;		/* op name that triggers it */
static void (*interference)(struct lf_list *l);

static int op_index(const char *op)
{
	for (int i = 0; i < NOPS - 1; i++)
		if (strcmp(op, op_names[i]) == 0)
			return i;
	return NOPS - 1;
}

static void test_hook(const char *op, struct lf_list *l)
{
	void (*f)(struct lf_list *) = interference;

	if (depth)
		return;
	attempts[op_index(op)]++;
	if (f && strcmp(op, interfere_at) == 0) {
		interference = NULL;
		depth++;
		f(l);
		depth--;
	}
}

static void reset_hook(void)
{
	memset(attempts, 0, sizeof(attempts));
	interference = NULL;
	interfere_at = "";
}

#define ATT(op) attempts[op_index(#op)]

/* The live keys in order, as a string "1 2 3" (empty list: ""). */
static const char *keys(struct lf_list *l)
{
	static char buf[128];
	size_t n = 0;

	buf[0] = '\0';
	for (struct lf_list_node *c = lf_list_first(l); c && n + 4 < sizeof(buf); c = lf_list_next(c))
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, n ? " %d" : "%d", key_of(c));
	return buf;
}

#define KEYS_ARE(l, s) KT_EXPECT(strcmp(keys(l), (s)) == 0)

/* ---- semantics -------------------------------------------------------------------- */

KTEST(lf_list_insert_head_tail_order)
{
	struct lf_list l;
	size_t count = 99;

	reset_hook();
	KT_ASSERT_EQ(lf_list_init(&l), KSYNC_OK);
	KT_EXPECT_EQ((uintptr_t)&l.tail % 16, 0);
	KEYS_ARE(&l, "");
	KT_EXPECT(lf_list_first(&l) == NULL);
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, N(3)), KSYNC_OK);	/* empty: via head */
	KT_EXPECT_EQ(lf_list_insert_head_mpmc(&l, N(2)), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_insert_head_mpmc(&l, N(1)), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, N(4)), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, N(5)), KSYNC_OK);
	KEYS_ARE(&l, "1 2 3 4 5");
	KT_EXPECT_EQ(lf_list_count(&l, &count), KSYNC_OK);
	KT_EXPECT_EQ(count, 5);
	/* appended nodes carry TAILED, head-inserted ones do not; the hint is the last */
	KT_EXPECT_EQ(items[4].link.next & LF_LIST__TAILED, LF_LIST__TAILED);
	KT_EXPECT_EQ(items[2].link.next & LF_LIST__TAILED, 0);
	KT_EXPECT(l.tail.lo == (uintptr_t)N(5));
	KT_EXPECT_EQ(l.tail.hi, 0);
	for (int k = 1; k <= 5; k++)
		KT_EXPECT_EQ(lf_list_linked(&l, N(k)), 1);
	KT_EXPECT_EQ(lf_list_linked(&l, N(6)), 0);

	static struct lf_list l2 = LF_LIST_INITIALIZER;
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l2, N(9)), KSYNC_OK);
	KEYS_ARE(&l2, "9");
}

KTEST(lf_list_pop_head)
{
	struct lf_list l = LF_LIST_INITIALIZER;
	struct lf_list_node *n = (struct lf_list_node *)8;

	reset_hook();
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_EEMPTY);
	KT_EXPECT(n == NULL);
	lf_list_insert_tail_mpmc(&l, N(1));
	lf_list_insert_tail_mpmc(&l, N(2));
	lf_list_insert_head_mpmc(&l, N(0));
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 0);
	KT_EXPECT_EQ(lf_list_linked(&l, n), 0);
	KT_EXPECT_EQ(n->next & (LF_LIST__DEL | LF_LIST__POP), LF_LIST__DEL | LF_LIST__POP);
	KT_EXPECT_EQ(l.head & LF_LIST__FROZEN, 0);
	KT_EXPECT_EQ(l.tail.hi, 0);	/* 0 was not TAILED: no tail fix */
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 1);
	KT_EXPECT_EQ(l.tail.hi, 1);	/* 1 was TAILED: generation bumped ... */
	KT_EXPECT(l.tail.lo == (uintptr_t)N(2));	/* ... hint kept: it is 2 */
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 2);
	KT_EXPECT_EQ(l.tail.lo, 0);	/* the hint named 2: cleared */
	KT_EXPECT_EQ(l.tail.hi, 2);
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_EEMPTY);
	KT_EXPECT_EQ(ATT(freeze), 3);
	KT_EXPECT_EQ(ATT(pop_mark), 3);
	/* append after the hint was cleared: walks from the head */
	lf_list_insert_tail_mpmc(&l, N(3));
	lf_list_insert_tail_mpmc(&l, N(4));
	KEYS_ARE(&l, "3 4");
	KT_EXPECT(l.tail.lo == (uintptr_t)N(4));
}

KTEST(lf_list_remove_by_pointer)
{
	struct lf_list l = LF_LIST_INITIALIZER;

	reset_hook();
	for (int k = 1; k <= 5; k++)
		lf_list_insert_tail_mpmc(&l, N(k));
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(3)), KSYNC_OK);	/* middle */
	KEYS_ARE(&l, "1 2 4 5");
	KT_EXPECT_EQ(lf_list_linked(&l, N(3)), 0);
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(3)), KSYNC_ENOENT);	/* already gone */
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(1)), KSYNC_OK);	/* first */
	KEYS_ARE(&l, "2 4 5");
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(5)), KSYNC_OK);	/* last = the hint */
	KEYS_ARE(&l, "2 4");
	KT_EXPECT_EQ(l.tail.lo, 0);
	KT_EXPECT_EQ(l.tail.hi, 3);
	lf_list_insert_tail_mpmc(&l, N(6));			/* after 4, from the head */
	KEYS_ARE(&l, "2 4 6");
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(2)), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(4)), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(6)), KSYNC_OK);
	KEYS_ARE(&l, "");
	KT_EXPECT_EQ(l.head, 0);
	/* a removed node can be inserted again (here nothing runs concurrently, so no
	 * grace period is needed) */
	lf_list_insert_head_mpmc(&l, N(2));
	KEYS_ARE(&l, "2");
}

KTEST(lf_list_find_and_remove_if)
{
	struct lf_list l = LF_LIST_INITIALIZER;
	struct lf_list_node *n;
	int k;

	reset_hook();
	for (k = 1; k <= 6; k++)
		lf_list_insert_tail_mpmc(&l, N(k));
	k = 4;
	KT_EXPECT_EQ(lf_list_find(&l, key_is, &k, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 4);
	k = 9;
	KT_EXPECT_EQ(lf_list_find(&l, key_is, &k, &n), KSYNC_ENOENT);
	KT_EXPECT(n == NULL);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_odd, NULL, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 1);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_odd, NULL, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 3);
	KT_EXPECT_EQ(lf_list_linked(&l, n), 0);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_odd, NULL, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 5);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_odd, NULL, &n), KSYNC_ENOENT);
	KT_EXPECT(n == NULL);
	KEYS_ARE(&l, "2 4 6");
	k = 6;
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_is, &k, &n), KSYNC_OK);
	KT_EXPECT_EQ(l.tail.lo, 0);	/* 6 was the hint */
	KEYS_ARE(&l, "2 4");
}

/* A deleted node that is still linked is skipped by walks and unlinked by the next
 * walk that modifies (Harris's helping). */
KTEST(lf_list_walks_skip_and_unlink_marked)
{
	struct lf_list l = LF_LIST_INITIALIZER;
	size_t count;
	int k = 3;
	struct lf_list_node *n;

	reset_hook();
	for (int i = 1; i <= 4; i++)
		lf_list_insert_tail_mpmc(&l, N(i));
	items[2].link.next |= LF_LIST__DEL;	/* 2 marked by a remover that stopped */
	KEYS_ARE(&l, "1 3 4");
	lf_list_count(&l, &count);
	KT_EXPECT_EQ(count, 3);
	KT_EXPECT_EQ(lf_list_linked(&l, N(2)), 1);	/* still physically there */
	KT_EXPECT_EQ(lf_list_find(&l, key_is, &k, &n), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_linked(&l, N(2)), 1);	/* find is read-only */
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_is, &k, &n), KSYNC_OK);
	KT_EXPECT_EQ(lf_list_linked(&l, N(2)), 0);	/* unlinked on the way */
	KT_EXPECT_EQ(ATT(unlink), 2);			/* 2's unlink, then 3's */
	KEYS_ARE(&l, "1 4");
	/* marked first node: pop_head unlinks it and pops the next */
	items[1].link.next |= LF_LIST__DEL;
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 4);
	KT_EXPECT_EQ(lf_list_linked(&l, N(1)), 0);
	KEYS_ARE(&l, "");
}

KTEST(lf_list_bad_input)
{
	struct lf_list l = LF_LIST_INITIALIZER;
	struct lf_list_node *n;
	_Alignas(16) char buf[32];
	struct lf_list_node *odd = (struct lf_list_node *)(void *)(buf + 4);
	size_t c;
	int k = 1;

	reset_hook();
	KT_EXPECT_EQ(lf_list_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_insert_head_mpmc(NULL, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_insert_head_mpmc(&l, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_insert_head_mpmc(&l, odd), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(NULL, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, odd), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(NULL, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_remove_mpmc(NULL, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, odd), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(NULL, key_is, &k, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, NULL, &k, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_remove_if_mpmc(&l, key_is, &k, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_find(NULL, key_is, &k, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_find(&l, NULL, &k, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_find(&l, key_is, &k, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_count(NULL, &c), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_count(&l, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_linked(NULL, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_list_linked(&l, NULL), KSYNC_EINVAL);
	KT_EXPECT(lf_list_first(NULL) == NULL);
	KT_EXPECT(lf_list_next(NULL) == NULL);
	KT_EXPECT_EQ(l.head, 0);
	KT_EXPECT_EQ(l.tail.lo, 0);
	KT_EXPECT_EQ(l.tail.hi, 0);
}

/* ---- interference injection ------------------------------------------------------- */

static void ins_head_9(struct lf_list *l)
{
	lf_list_insert_head_mpmc(l, N(9));
}

static void append_9(struct lf_list *l)
{
	lf_list_insert_tail_mpmc(l, N(9));
}

KTEST(lf_list_insert_head_one_forced_retry)
{
	struct lf_list l = LF_LIST_INITIALIZER;

	reset_hook();
	lf_list_insert_head_mpmc(&l, N(1));
	ATT(insert_head) = 0;
	interfere_at = "insert_head";
	interference = ins_head_9;
	KT_EXPECT_EQ(lf_list_insert_head_mpmc(&l, N(2)), KSYNC_OK);
	KT_EXPECT_EQ(ATT(insert_head), 2);
	KEYS_ARE(&l, "2 9 1");
}

KTEST(lf_list_append_one_forced_retry)
{
	struct lf_list l = LF_LIST_INITIALIZER;

	reset_hook();
	lf_list_insert_tail_mpmc(&l, N(1));
	ATT(append) = 0;
	interfere_at = "append";
	interference = append_9;
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, N(2)), KSYNC_OK);
	KT_EXPECT_EQ(ATT(append), 2);	/* the CAS on 1's next failed once, then 9's */
	KEYS_ARE(&l, "1 9 2");
	KT_EXPECT(l.tail.lo == (uintptr_t)N(9));	/* our swing lost to 9's: a stale hint */
	lf_list_insert_tail_mpmc(&l, N(3));		/* walks on from 9 */
	KEYS_ARE(&l, "1 9 2 3");
}

/* Remove X whose predecessor is the head; the unlink CAS on the head fails once
 * because another CPU inserted in front; the retry unlinks through the new node. */
KTEST(lf_list_unlink_one_forced_retry)
{
	struct lf_list l = LF_LIST_INITIALIZER;

	reset_hook();
	lf_list_insert_tail_mpmc(&l, N(1));
	lf_list_insert_tail_mpmc(&l, N(2));
	interfere_at = "unlink";
	interference = ins_head_9;
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(1)), KSYNC_OK);
	KT_EXPECT_EQ(ATT(mark), 1);
	KT_EXPECT_EQ(ATT(unlink), 2);
	KT_EXPECT_EQ(lf_list_linked(&l, N(1)), 0);
	KEYS_ARE(&l, "9 2");
}

/* Between reading X's next and marking it, another CPU appends after X: one retry. */
KTEST(lf_list_mark_one_forced_retry)
{
	struct lf_list l = LF_LIST_INITIALIZER;

	reset_hook();
	lf_list_insert_tail_mpmc(&l, N(1));
	interfere_at = "mark";
	interference = append_9;
	KT_EXPECT_EQ(lf_list_remove_mpmc(&l, N(1)), KSYNC_OK);
	KT_EXPECT_EQ(ATT(mark), 2);
	KEYS_ARE(&l, "9");
	KT_EXPECT(l.tail.lo == (uintptr_t)N(9));
}

/* A popper stops right after freezing the head.  Another CPU's insert_head must not
 * wait: it finishes the pop (marks X POP, moves the head on), then inserts.  The popper
 * resumes, finds the work done, and returns X. */
KTEST(lf_list_frozen_pop_finished_by_others)
{
	struct lf_list l = LF_LIST_INITIALIZER;
	struct lf_list_node *n;

	reset_hook();
	lf_list_insert_tail_mpmc(&l, N(1));
	lf_list_insert_tail_mpmc(&l, N(2));
	interfere_at = "frozen";
	interference = ins_head_9;
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 1);
	KT_EXPECT_EQ(ATT(freeze), 1);
	KT_EXPECT_EQ(ATT(pop_mark), 0);	/* the helper marked it, not the popper */
	KT_EXPECT_EQ(lf_list_linked(&l, N(1)), 0);
	KEYS_ARE(&l, "9 2");
}

/* While the head is frozen on X, a remove marks X first (DEL without POP): the pop
 * must not claim X; it unfreezes, retries, and takes the next node. */
static void remove_1(struct lf_list *l)
{
	lf_list_remove_mpmc(l, N(1));
}

KTEST(lf_list_remove_beats_frozen_pop)
{
	struct lf_list l = LF_LIST_INITIALIZER;
	struct lf_list_node *n;

	reset_hook();
	lf_list_insert_tail_mpmc(&l, N(1));
	lf_list_insert_tail_mpmc(&l, N(2));
	lf_list_insert_tail_mpmc(&l, N(3));
	interfere_at = "frozen";
	interference = remove_1;
	KT_EXPECT_EQ(lf_list_pop_head_mpmc(&l, &n), KSYNC_OK);
	KT_EXPECT_EQ(key_of(n), 2);
	KT_EXPECT_EQ(ATT(freeze), 2);	/* frozen on 1 (lost to remove), then on 2 */
	KT_EXPECT_EQ(items[1].link.next & LF_LIST__POP, 0);
	KT_EXPECT_EQ(lf_list_linked(&l, N(1)), 0);
	KT_EXPECT_EQ(lf_list_linked(&l, N(2)), 0);
	KEYS_ARE(&l, "3");
}

/* Between an append and its tail swing, another CPU removes the node just appended.
 * The removal bumped the generation, so the swing must fail: the hint never names a
 * node whose remover has returned (it could be freed). */
static void remove_5(struct lf_list *l)
{
	lf_list_remove_mpmc(l, N(5));
}

KTEST(lf_list_swing_after_removal_fails)
{
	struct lf_list l = LF_LIST_INITIALIZER;

	reset_hook();
	lf_list_insert_tail_mpmc(&l, N(4));
	KT_EXPECT(l.tail.lo == (uintptr_t)N(4));
	interfere_at = "swing";
	interference = remove_5;
	KT_EXPECT_EQ(lf_list_insert_tail_mpmc(&l, N(5)), KSYNC_OK);
	KT_EXPECT(l.tail.lo == (uintptr_t)N(4));	/* not 5 */
	KT_EXPECT_EQ(l.tail.hi, 1);
	KEYS_ARE(&l, "4");
	lf_list_insert_tail_mpmc(&l, N(6));
	KEYS_ARE(&l, "4 6");
	KT_EXPECT(l.tail.lo == (uintptr_t)N(6));
}
