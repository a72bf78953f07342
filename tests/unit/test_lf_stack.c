/*
 * test_lf_stack.c - include/ksync/lf_stack.h single-threaded semantics (LIFO order,
 * boundary results, pop_all and reverse, the generation), bad input, and interference
 * injection between the read and the CAS: exactly one retry for push, pop (including
 * the ABA interleaving pop A, pop B, push A, which only the generation detects) and
 * pop_all.  A last case defeats the generation from the hook to show the same ABA
 * interleaving then corrupts the stack: the generation is what the test relies on.
 */
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>

struct lf_stack;
static void test_hook(const char *op, struct lf_stack *s, void *exp);
#define LF_STACK_TEST_HOOK(op, s, exp) test_hook(#op, (s), (void *)(exp))

#include <ksync/ktest.h>
#include <ksync/lf_stack.h>

struct item {
	int id;
	struct lf_stack_node link;
};

static struct item items[8];

static struct lf_stack_node *N(int i)
{
	items[i].id = i;
	return &items[i].link;
}

static int id_of(struct lf_stack_node *n)
{
	return n ? lf_stack_entry(n, struct item, link)->id : -1;
}

/* ---- the hook --------------------------------------------------------------------- */

static int attempts[3];			/* push, pop, pop_all CAS attempts (outer calls) */
static int depth;			/* > 0 while the hook runs its interference */
static void (*interference)(struct lf_stack *s, void *exp);	/* run once, then NULL */

static int op_index(const char *op)
{
	if (op[1] == 'u')
		return 0;			/* push */
	return op[3] == '_' ? 2 : 1;	/* pop_all : pop */
}

static void test_hook(const char *op, struct lf_stack *s, void *exp)
{
	void (*f)(struct lf_stack *, void *) = interference;

	if (depth)
		return;			/* the interference's own operations */
	attempts[op_index(op)]++;
	if (f) {
		interference = NULL;
		depth++;
		f(s, exp);
		depth--;
	}
}

static void reset_hook(void)
{
	attempts[0] = attempts[1] = attempts[2] = 0;
	interference = NULL;
}

/* ---- semantics -------------------------------------------------------------------- */

KTEST(lf_stack_lifo_and_boundaries)
{
	struct lf_stack s;
	struct lf_stack_node *n = (struct lf_stack_node *)1;

	reset_hook();
	KT_ASSERT_EQ(lf_stack_init(&s), KSYNC_OK);
	KT_EXPECT_EQ((uintptr_t)&s.top % 16, 0);
	KT_EXPECT_EQ(lf_stack_empty(&s), 1);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), KSYNC_EEMPTY);
	KT_EXPECT(n == NULL);

	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, N(1)), LF_STACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, N(2)), 0);
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, N(3)), 0);
	KT_EXPECT_EQ(lf_stack_empty(&s), 0);
	KT_EXPECT_EQ(attempts[0], 3);

	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), 0);
	KT_EXPECT_EQ(id_of(n), 3);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), 0);
	KT_EXPECT_EQ(id_of(n), 2);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 1);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), KSYNC_EEMPTY);
	KT_EXPECT_EQ(lf_stack_empty(&s), 1);
	KT_EXPECT_EQ(attempts[1], 3);	/* the empty pops attempt no CAS */

	/* a popped node can be pushed again at once */
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, N(1)), LF_STACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 1);

	/* the static initializer is the same empty stack */
	static struct lf_stack s2 = LF_STACK_INITIALIZER;
	KT_EXPECT_EQ(lf_stack_empty(&s2), 1);
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s2, N(4)), LF_STACK_WAS_EMPTY);
}

KTEST(lf_stack_generation_counts_removals)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	KT_EXPECT_EQ(s.top.hi, 0);
	lf_stack_push_mpmc(&s, N(1));
	lf_stack_push_mpmc(&s, N(2));
	KT_EXPECT_EQ(s.top.hi, 0);	/* pushes leave it alone */
	lf_stack_pop_mpmc(&s, &n);
	KT_EXPECT_EQ(s.top.hi, 1);
	lf_stack_pop_all_mpmc(&s, &n);
	KT_EXPECT_EQ(s.top.hi, 2);
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(&s, &n), KSYNC_EEMPTY);
	KT_EXPECT_EQ(s.top.hi, 2);	/* an empty pop_all changes nothing */

	/* full 64-bit generation: wraps without touching the pointer half */
	s.top.hi = UINT64_MAX;
	lf_stack_push_mpmc(&s, N(3));
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 3);
	KT_EXPECT_EQ(s.top.hi, 0);
	KT_EXPECT_EQ(s.top.lo, 0);
}

KTEST(lf_stack_pop_all_and_reverse)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n = (struct lf_stack_node *)1, *c;
	int want_lifo[] = { 5, 4, 3, 2, 1 }, k;

	reset_hook();
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(&s, &n), KSYNC_EEMPTY);
	KT_EXPECT(n == NULL);
	for (int i = 1; i <= 5; i++)
		lf_stack_push_mpmc(&s, N(i));
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(&s, &n), KSYNC_OK);
	KT_EXPECT_EQ(lf_stack_empty(&s), 1);
	for (k = 0, c = n; c; c = lf_stack_next(c), k++)
		KT_EXPECT_EQ(id_of(c), want_lifo[k]);
	KT_EXPECT_EQ(k, 5);
	n = lf_stack_reverse(n);
	for (k = 0, c = n; c; c = lf_stack_next(c), k++)
		KT_EXPECT_EQ(id_of(c), k + 1);
	KT_EXPECT_EQ(k, 5);
	KT_EXPECT(lf_stack_reverse(NULL) == NULL);
	KT_EXPECT(lf_stack_next(NULL) == NULL);
}

KTEST(lf_stack_bad_input)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n;
	_Alignas(16) char buf[32];

	reset_hook();
	KT_EXPECT_EQ(lf_stack_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_push_mpmc(NULL, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, NULL), KSYNC_EINVAL);
	/* misaligned node: rejected before it is touched */
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, (struct lf_stack_node *)(void *)(buf + 4)),
		     KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(NULL, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(NULL, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(&s, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_empty(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(s.top.lo, 0);
	KT_EXPECT_EQ(s.top.hi, 0);
	KT_EXPECT_EQ(attempts[0] + attempts[1] + attempts[2], 0);
}

/* ---- interference injection ------------------------------------------------------- */

/* Between the push's read of top and its CAS, another CPU pushes D. */
static void push_d(struct lf_stack *s, void *exp)
{
	(void)exp;
	lf_stack_push_mpmc(s, N(7));
}

KTEST(lf_stack_push_one_forced_retry)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	lf_stack_push_mpmc(&s, N(1));
	attempts[0] = 0;
	interference = push_d;
	KT_EXPECT_EQ(lf_stack_push_mpmc(&s, N(2)), 0);
	KT_EXPECT_EQ(attempts[0], 2);	/* exactly one retry */
	/* order: 2 on top of the interfering 7, on top of 1 */
	lf_stack_pop_mpmc(&s, &n);
	KT_EXPECT_EQ(id_of(n), 2);
	lf_stack_pop_mpmc(&s, &n);
	KT_EXPECT_EQ(id_of(n), 7);
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 1);
}

/* The ABA interleaving: the pop has read top = A and A->next = B; meanwhile another
 * CPU pops A, pops B and pushes A back.  Top is A again, but B is gone. */
static void aba(struct lf_stack *s, void *exp)
{
	struct lf_stack_node *a, *b;

	(void)exp;
	lf_stack_pop_mpmc(s, &a);
	lf_stack_pop_mpmc(s, &b);
	lf_stack_push_mpmc(s, a);
}

KTEST(lf_stack_pop_aba_one_forced_retry)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	lf_stack_push_mpmc(&s, N(3));	/* C */
	lf_stack_push_mpmc(&s, N(2));	/* B */
	lf_stack_push_mpmc(&s, N(1));	/* A: stack A B C */
	attempts[1] = 0;
	interference = aba;
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), 0);
	KT_EXPECT_EQ(attempts[1], 2);	/* the generation failed the first CAS */
	KT_EXPECT_EQ(id_of(n), 1);	/* A, popped properly the second time */
	KT_EXPECT_EQ(s.top.hi, 3);	/* two pops by the interference, one by us */
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 3);	/* C: B stayed popped */
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), KSYNC_EEMPTY);
}

/* Between pop_all's read and its CAS, another CPU pushes D: the retry takes it too. */
KTEST(lf_stack_pop_all_one_forced_retry)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	lf_stack_push_mpmc(&s, N(1));
	interference = push_d;
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(&s, &n), KSYNC_OK);
	KT_EXPECT_EQ(attempts[2], 2);
	KT_EXPECT_EQ(id_of(n), 7);
	KT_EXPECT_EQ(id_of(lf_stack_next(n)), 1);
	KT_EXPECT(lf_stack_next(lf_stack_next(n)) == NULL);
	KT_EXPECT_EQ(lf_stack_empty(&s), 1);
}

/* The same ABA interleaving with the generation defeated (the hook copies the current
 * generation into the expected value, so the cmpxchg16b compares the pointer only, as
 * a stack without a generation would): the CAS succeeds and installs B, which another
 * CPU had already popped.  This is the bug the generation exists for. */
static void aba_and_defeat_generation(struct lf_stack *s, void *exp)
{
	aba(s, exp);
	((struct ksync_u128 *)exp)->hi = s->top.hi;
}

KTEST(lf_stack_without_generation_aba_corrupts)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	lf_stack_push_mpmc(&s, N(3));
	lf_stack_push_mpmc(&s, N(2));
	lf_stack_push_mpmc(&s, N(1));
	interference = aba_and_defeat_generation;
	KT_EXPECT_EQ(lf_stack_pop_mpmc(&s, &n), 0);
	KT_EXPECT_EQ(attempts[1], 1);	/* no retry: the ABA went unnoticed */
	KT_EXPECT_EQ(id_of(n), 1);
	/* top is now B - a node the interference popped and still owns */
	KT_EXPECT_EQ(id_of((struct lf_stack_node *)(uintptr_t)s.top.lo), 2);
}

/* ---- hints ------------------------------------------------------------------------ */

KTEST(lf_stack_hint_semantics)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_hint h = LF_STACK_HINT_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), KSYNC_EEMPTY);
	KT_EXPECT(n == NULL);
	KT_EXPECT_EQ(lf_stack_push_hint_mpmc(&s, &h, N(1)), LF_STACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_stack_push_hint_mpmc(&s, &h, N(2)), 0);
	KT_EXPECT_EQ(attempts[0], 2);		/* the hint was right: one CAS each */
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), 0);
	KT_EXPECT_EQ(id_of(n), 2);
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 1);
	KT_EXPECT_EQ(attempts[1], 2);
	KT_EXPECT_EQ(s.top.hi, 2);
	KT_EXPECT(h.seen.lo == 0 && h.seen.hi == 2);	/* the state it left */

	/* a hint that says "empty" is checked against the stack */
	lf_stack_push_mpmc(&s, N(3));
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 3);

	/* plain and hinted operations mix */
	lf_stack_push_hint_mpmc(&s, &h, N(4));
	lf_stack_push_mpmc(&s, N(5));
	lf_stack_pop_mpmc(&s, &n);
	KT_EXPECT_EQ(id_of(n), 5);
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 4);

	KT_EXPECT_EQ(lf_stack_hint_init(&h), KSYNC_OK);
	KT_EXPECT_EQ(lf_stack_hint_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_push_hint_mpmc(NULL, &h, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_push_hint_mpmc(&s, NULL, N(1)), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_push_hint_mpmc(&s, &h, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(NULL, &h, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, NULL, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, NULL), KSYNC_EINVAL);
}

/* A hint made stale by other CPUs costs exactly one failed CAS, and the ABA
 * interleaving (pop A, pop B, push A) is caught through a hint as through a load. */
KTEST(lf_stack_hint_stale_one_retry)
{
	struct lf_stack s = LF_STACK_INITIALIZER;
	struct lf_stack_hint h = LF_STACK_HINT_INITIALIZER;
	struct lf_stack_node *n;

	reset_hook();
	lf_stack_push_hint_mpmc(&s, &h, N(1));
	lf_stack_push_mpmc(&s, N(2));		/* another CPU: the hint still says 1 */
	attempts[0] = 0;
	KT_EXPECT_EQ(lf_stack_push_hint_mpmc(&s, &h, N(3)), 0);
	KT_EXPECT_EQ(attempts[0], 2);
	lf_stack_pop_mpmc(&s, &n);
	KT_EXPECT_EQ(id_of(n), 3);
	lf_stack_pop_mpmc(&s, &n);
	KT_EXPECT_EQ(id_of(n), 2);

	/* hint = {1, g}; stack 1 (2 3 below after these pushes): A=1, B=2 */
	lf_stack_pop_mpmc(&s, &n);		/* empty it */
	lf_stack_push_mpmc(&s, N(3));
	lf_stack_push_mpmc(&s, N(2));
	lf_stack_push_hint_mpmc(&s, &h, N(1));	/* h = {1, g}, 1->next = 2 */
	lf_stack_pop_mpmc(&s, &n);		/* another CPU: pop A */
	lf_stack_pop_mpmc(&s, &n);		/* pop B */
	lf_stack_push_mpmc(&s, N(1));		/* push A: top is 1 again, next = 3 */
	attempts[1] = 0;
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), 0);
	KT_EXPECT_EQ(attempts[1], 2);		/* the generation failed the guess */
	KT_EXPECT_EQ(id_of(n), 1);
	KT_EXPECT_EQ(lf_stack_pop_hint_mpmc(&s, &h, &n), LF_STACK_NOW_EMPTY);
	KT_EXPECT_EQ(id_of(n), 3);		/* not 2: B stayed popped */
}
