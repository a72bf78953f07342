/*
 * test_lf_istack.c - include/ksync/lf_istack.h: the index/generation split chosen per
 * capacity, LIFO order and boundary results, pop_all chains, generation wrap-around
 * inside its field, bad input, and interference injection forcing exactly one retry
 * (push, the ABA pop, pop_all); with the generation defeated the ABA corrupts.
 */
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>

struct lf_istack;
static void test_hook(const char *op, struct lf_istack *s, uint64_t *exp);
#define LF_ISTACK_TEST_HOOK(op, s, exp) test_hook(#op, (s), (exp))

#include <ksync/ktest.h>
#include <ksync/lf_istack.h>

static int attempts[3];			/* push, pop, pop_all (outer calls) */
static int depth;
static void (*interference)(struct lf_istack *s, uint64_t *exp);

static int op_index(const char *op)
{
	if (op[1] == 'u')
		return 0;
	return op[3] == '_' ? 2 : 1;
}

static void test_hook(const char *op, struct lf_istack *s, uint64_t *exp)
{
	void (*f)(struct lf_istack *, uint64_t *) = interference;

	if (depth)
		return;
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

static uint32_t links[64];

KTEST(lf_istack_width_per_capacity)
{
	struct lf_istack s;
	static const struct {
		uint32_t cap, bits;
	} t[] = {
		{ 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 7, 3 }, { 8, 4 },
		{ 131072, 18 }, { (1u << 24) - 1, 24 }, { UINT32_MAX, 32 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		KT_ASSERT_EQ(lf_istack_init(&s, links, t[i].cap), KSYNC_OK);
		KT_EXPECT_EQ(s.idx_bits, t[i].bits);
		KT_EXPECT_EQ(lf_istack_gen_bits(&s), 64 - (int)t[i].bits);
		KT_EXPECT(s.nil >= (uint64_t)t[i].cap);	/* nil is never a valid index */
		KT_EXPECT_EQ(lf_istack_empty(&s), 1);
	}
	/* the largest index of the largest pool works (only links[] entries touched are
	 * the pushed index's: use an index that fits our small array) */
	KT_ASSERT_EQ(lf_istack_init(&s, links, 1), KSYNC_OK);
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, 0), LF_ISTACK_WAS_EMPTY);
	uint32_t i = 5;
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 0);
}

KTEST(lf_istack_lifo_and_boundaries)
{
	struct lf_istack s;
	uint32_t i = 0;

	reset_hook();
	KT_ASSERT_EQ(lf_istack_init(&s, links, 10), KSYNC_OK);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), KSYNC_EEMPTY);
	KT_EXPECT_EQ(i, LF_ISTACK_NONE);
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, 0), LF_ISTACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, 9), 0);
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, 4), 0);
	KT_EXPECT_EQ(lf_istack_empty(&s), 0);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), 0);
	KT_EXPECT_EQ(i, 4);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), 0);
	KT_EXPECT_EQ(i, 9);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 0);
	KT_EXPECT_EQ(lf_istack_empty(&s), 1);
	KT_EXPECT_EQ(s.top >> s.idx_bits, 3);	/* three removals */
	KT_EXPECT_EQ(attempts[0], 3);
	KT_EXPECT_EQ(attempts[1], 3);
}

KTEST(lf_istack_pop_all_chain)
{
	struct lf_istack s;
	uint32_t i, want[] = { 3, 2, 1, 0 }, k = 0;

	reset_hook();
	KT_ASSERT_EQ(lf_istack_init(&s, links, 4), KSYNC_OK);
	KT_EXPECT_EQ(lf_istack_pop_all_mpmc(&s, &i), KSYNC_EEMPTY);
	KT_EXPECT_EQ(i, LF_ISTACK_NONE);
	for (i = 0; i < 4; i++)
		lf_istack_push_mpmc(&s, i);
	KT_EXPECT_EQ(lf_istack_pop_all_mpmc(&s, &i), KSYNC_OK);
	KT_EXPECT_EQ(lf_istack_empty(&s), 1);
	for (; i != LF_ISTACK_NONE; i = lf_istack_chain_next(&s, i), k++)
		KT_EXPECT_EQ(i, want[k]);
	KT_EXPECT_EQ(k, 4);
	KT_EXPECT_EQ(s.top >> s.idx_bits, 1);
	KT_EXPECT_EQ(lf_istack_chain_next(NULL, 0), LF_ISTACK_NONE);
	KT_EXPECT_EQ(lf_istack_chain_next(&s, 4), LF_ISTACK_NONE);
}

KTEST(lf_istack_generation_wraps_in_its_field)
{
	struct lf_istack s;
	uint32_t i;
	uint64_t genmax;

	reset_hook();
	KT_ASSERT_EQ(lf_istack_init(&s, links, 16), KSYNC_OK);	/* idx_bits 5, gen 59 */
	genmax = (~(uint64_t)0) >> s.idx_bits;
	lf_istack_push_mpmc(&s, 15);
	lf_istack_push_mpmc(&s, 3);
	s.top = (genmax << s.idx_bits) | (s.top & s.nil);	/* generation at its maximum */
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), 0);
	KT_EXPECT_EQ(i, 3);
	KT_EXPECT_EQ(s.top >> s.idx_bits, 0);		/* wrapped to 0 ... */
	KT_EXPECT_EQ(s.top & s.nil, 15);		/* ... without touching the index */
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 15);
	KT_EXPECT_EQ(s.top, ((uint64_t)1 << s.idx_bits) | s.nil);
}

KTEST(lf_istack_bad_input)
{
	struct lf_istack s;
	uint32_t i;

	reset_hook();
	KT_EXPECT_EQ(lf_istack_init(NULL, links, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_init(&s, NULL, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_init(&s, links, 0), KSYNC_EINVAL);
	KT_ASSERT_EQ(lf_istack_init(&s, links, 4), KSYNC_OK);
	KT_EXPECT_EQ(lf_istack_push_mpmc(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, UINT32_MAX), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(NULL, &i), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_all_mpmc(NULL, &i), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_all_mpmc(&s, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_empty(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_gen_bits(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(s.top, s.nil);	/* untouched: empty, generation 0 */
	KT_EXPECT_EQ(attempts[0] + attempts[1] + attempts[2], 0);
}

static void push_7(struct lf_istack *s, uint64_t *exp)
{
	(void)exp;
	lf_istack_push_mpmc(s, 7);
}

static void aba(struct lf_istack *s, uint64_t *exp)
{
	uint32_t a, b;

	(void)exp;
	lf_istack_pop_mpmc(s, &a);
	lf_istack_pop_mpmc(s, &b);
	lf_istack_push_mpmc(s, a);
}

static void aba_and_defeat_generation(struct lf_istack *s, uint64_t *exp)
{
	aba(s, exp);
	*exp = (s->top & ~s->nil) | (*exp & s->nil);	/* current generation, old index */
}

KTEST(lf_istack_push_one_forced_retry)
{
	struct lf_istack s;
	uint32_t i;

	reset_hook();
	lf_istack_init(&s, links, 8);
	lf_istack_push_mpmc(&s, 1);
	attempts[0] = 0;
	interference = push_7;
	KT_EXPECT_EQ(lf_istack_push_mpmc(&s, 2), 0);
	KT_EXPECT_EQ(attempts[0], 2);
	lf_istack_pop_mpmc(&s, &i);
	KT_EXPECT_EQ(i, 2);
	lf_istack_pop_mpmc(&s, &i);
	KT_EXPECT_EQ(i, 7);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 1);
}

KTEST(lf_istack_pop_aba_one_forced_retry)
{
	struct lf_istack s;
	uint32_t i;

	reset_hook();
	lf_istack_init(&s, links, 8);
	lf_istack_push_mpmc(&s, 3);
	lf_istack_push_mpmc(&s, 2);
	lf_istack_push_mpmc(&s, 1);	/* 1 2 3 */
	interference = aba;
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), 0);
	KT_EXPECT_EQ(attempts[1], 2);
	KT_EXPECT_EQ(i, 1);
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 3);
}

KTEST(lf_istack_pop_all_one_forced_retry)
{
	struct lf_istack s;
	uint32_t i;

	reset_hook();
	lf_istack_init(&s, links, 8);
	lf_istack_push_mpmc(&s, 1);
	interference = push_7;
	KT_EXPECT_EQ(lf_istack_pop_all_mpmc(&s, &i), KSYNC_OK);
	KT_EXPECT_EQ(attempts[2], 2);
	KT_EXPECT_EQ(i, 7);
	KT_EXPECT_EQ(lf_istack_chain_next(&s, 7), 1);
	KT_EXPECT_EQ(lf_istack_chain_next(&s, 1), LF_ISTACK_NONE);
}

KTEST(lf_istack_without_generation_aba_corrupts)
{
	struct lf_istack s;
	uint32_t i;

	reset_hook();
	lf_istack_init(&s, links, 8);
	lf_istack_push_mpmc(&s, 3);
	lf_istack_push_mpmc(&s, 2);
	lf_istack_push_mpmc(&s, 1);
	interference = aba_and_defeat_generation;
	KT_EXPECT_EQ(lf_istack_pop_mpmc(&s, &i), 0);
	KT_EXPECT_EQ(attempts[1], 1);
	KT_EXPECT_EQ(i, 1);
	KT_EXPECT_EQ(s.top & s.nil, 2);	/* index 2 is back on top although popped */
}

/* ---- hints ------------------------------------------------------------------------ */

KTEST(lf_istack_hint_semantics)
{
	struct lf_istack s;
	struct lf_istack_hint h = LF_ISTACK_HINT_INITIALIZER;
	uint32_t i;

	reset_hook();
	lf_istack_init(&s, links, 8);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, &i), KSYNC_EEMPTY);
	KT_EXPECT_EQ(lf_istack_push_hint_mpmc(&s, &h, 5), LF_ISTACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_istack_push_hint_mpmc(&s, &h, 6), 0);
	KT_EXPECT_EQ(attempts[0], 2);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, &i), 0);
	KT_EXPECT_EQ(i, 6);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 5);
	KT_EXPECT_EQ(attempts[1], 2);
	KT_EXPECT_EQ(h.seen, s.top);

	/* stale: another CPU pushed; then an ABA on the hinted top */
	lf_istack_push_hint_mpmc(&s, &h, 1);
	lf_istack_push_mpmc(&s, 2);
	attempts[0] = 0;
	KT_EXPECT_EQ(lf_istack_push_hint_mpmc(&s, &h, 3), 0);	/* 3 2 1 */
	KT_EXPECT_EQ(attempts[0], 2);
	lf_istack_pop_mpmc(&s, &i);		/* 3: h still names 3 */
	lf_istack_pop_mpmc(&s, &i);		/* 2 */
	lf_istack_push_mpmc(&s, 3);		/* 3 1: top index 3 again, generation moved */
	attempts[1] = 0;
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, &i), 0);
	KT_EXPECT_EQ(attempts[1], 2);
	KT_EXPECT_EQ(i, 3);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 1);

	/* a garbage hint (index out of range) is ignored, never used as an index */
	lf_istack_push_mpmc(&s, 4);
	h.seen = 12;			/* index 12 >= capacity 8: ignored */
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, &i), LF_ISTACK_NOW_EMPTY);
	KT_EXPECT_EQ(i, 4);

	KT_EXPECT_EQ(lf_istack_hint_init(&h), KSYNC_OK);
	KT_EXPECT_EQ(lf_istack_hint_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_push_hint_mpmc(NULL, &h, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_push_hint_mpmc(&s, NULL, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_push_hint_mpmc(&s, &h, 8), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(NULL, &h, &i), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, NULL, &i), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_istack_pop_hint_mpmc(&s, &h, NULL), KSYNC_EINVAL);
}
