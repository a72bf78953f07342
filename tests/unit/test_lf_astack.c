/*
 * test_lf_astack.c - include/ksync/lf_astack.h (the Synthesis array stack, Massalin &
 * Pu 1991 "LIFO stacks", its CAS2 push rebuilt as one cmpxchg16b of the head plus a
 * completed slot write): the index/generation split per capacity, LIFO order and the
 * full / empty boundaries, a sequential model over random operations, bad input,
 * interference injection forcing exactly one retry of push and of pop, other operations
 * completing a push or pop whose own slot write has not happened yet (helping), the
 * generation wrapping inside its field, and 2 and 4 threads x many operations with
 * every value popped exactly once and the data its pusher wrote before the push seen by
 * its popper.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>

struct lf_astack;
static void test_hook(const char *op, struct lf_astack *s, struct ksync_u128 *exp);
#define LF_ASTACK_TEST_HOOK(op, s, exp) test_hook(#op, (s), (exp))

#include <ksync/ktest.h>
#include <ksync/lf_astack.h>

/* ---- the hook: counts attempts; runs an interference function once ------------------ */

static _Thread_local int attempts[3];	/* push, pop, finish (outer calls) */
static _Thread_local int depth;
static _Thread_local void (*interference)(struct lf_astack *s, struct ksync_u128 *exp);
static _Thread_local int interfere_on;	/* which op index triggers it */

static int op_index(const char *op)
{
	return op[1] == 'u' ? 0 : op[1] == 'o' ? 1 : 2;
}

static void test_hook(const char *op, struct lf_astack *s, struct ksync_u128 *exp)
{
	void (*f)(struct lf_astack *, struct ksync_u128 *) = interference;

	if (depth)
		return;
	attempts[op_index(op)]++;
	if (f && op_index(op) == interfere_on) {
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

static _Alignas(16) struct lf_astack_slot slots[LF_ASTACK_SLOTS(64)];

static uint64_t gen_of(const struct lf_astack *s)
{
	return s->head.hi >> s->idx_bits;
}

KTEST(lf_astack_width_per_capacity)
{
	struct lf_astack s;
	static const struct {
		uint32_t cap, bits;
	} t[] = { { 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 63, 6 }, { 64, 7 } };

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		KT_ASSERT_EQ(lf_astack_init(&s, slots, t[i].cap), KSYNC_OK);
		KT_EXPECT_EQ(s.idx_bits, t[i].bits);
		KT_EXPECT(s.idx_mask >= t[i].cap);		/* the count capacity fits */
		KT_EXPECT_EQ(s.gen_mask, ~(uint64_t)0 >> t[i].bits);
		KT_EXPECT_EQ(lf_astack_size(&s), 0);
	}
}

KTEST(lf_astack_lifo_full_and_empty)
{
	struct lf_astack s;
	uint64_t v = 7;

	reset_hook();
	KT_ASSERT_EQ(lf_astack_init(&s, slots, 3), KSYNC_OK);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), KSYNC_EEMPTY);
	KT_EXPECT_EQ(v, 0);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 10), LF_ASTACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 20), 0);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 30), 0);
	KT_EXPECT_EQ(lf_astack_size(&s), 3);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 40), KSYNC_EFULL);
	KT_EXPECT_EQ(lf_astack_size(&s), 3);			/* nothing changed */
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 30);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 20);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 25), 0);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 25);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 10);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), KSYNC_EEMPTY);
	/* the values below the top are in the array, each slot complete */
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 1), LF_ASTACK_WAS_EMPTY);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 2), 0);
	KT_EXPECT_EQ(slots[1].w.lo, 1);
	KT_EXPECT_EQ(slots[2].w.lo, 2);
	KT_EXPECT_EQ(slots[2].w.hi, gen_of(&s));
	KT_EXPECT_EQ(s.head.lo, 2);
	/* uncontended: one head CAS per operation, one slot completion each */
	KT_EXPECT_EQ(attempts[0], 6);	/* the full push and the empty pop make no CAS */
	KT_EXPECT_EQ(attempts[1], 4);
	KT_EXPECT_EQ(attempts[2], 10);
}

/* A sequential model: an array and a count; random operations on both must agree. */
KTEST(lf_astack_sequential_model)
{
	struct lf_astack s;
	uint64_t model[64], x = 0x9e3779b97f4a7c15ull, v;
	uint32_t n = 0, caps[] = { 1, 2, 5, 64 };

	reset_hook();
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		uint32_t cap = caps[c];

		n = 0;
		KT_ASSERT_EQ(lf_astack_init(&s, slots, cap), KSYNC_OK);
		for (int k = 0; k < 20000; k++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (x & 1) {
				int r = lf_astack_push_mpmc(&s, x);

				if (n == cap) {
					KT_ASSERT_EQ(r, KSYNC_EFULL);
				} else {
					KT_ASSERT_EQ(r, n == 0 ? LF_ASTACK_WAS_EMPTY : 0);
					model[n++] = x;
				}
			} else {
				int r = lf_astack_pop_mpmc(&s, &v);

				if (n == 0) {
					KT_ASSERT_EQ(r, KSYNC_EEMPTY);
				} else {
					KT_ASSERT_EQ(r, n == 1 ? LF_ASTACK_NOW_EMPTY : 0);
					KT_ASSERT_EQ(v, model[--n]);
				}
			}
			KT_ASSERT_EQ(lf_astack_size(&s), n);
		}
	}
}

KTEST(lf_astack_bad_input)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	KT_EXPECT_EQ(lf_astack_init(NULL, slots, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_astack_init(&s, NULL, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_astack_init(&s, slots, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_astack_init(&s, (struct lf_astack_slot *)(void *)((char *)slots + 8), 4),
		     KSYNC_EINVAL);
	KT_ASSERT_EQ(lf_astack_init(&s, slots, 4), KSYNC_OK);
	KT_EXPECT_EQ(lf_astack_push_mpmc(NULL, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_astack_size(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(s.head.hi, 0);	/* untouched: empty, generation 0 */
	KT_EXPECT_EQ(attempts[0] + attempts[1] + attempts[2], 0);
}

/* ---- interference: exactly one retry ------------------------------------------------ */

static void push_99(struct lf_astack *s, struct ksync_u128 *exp)
{
	(void)exp;
	lf_astack_push_mpmc(s, 99);
}

static void pop_then_push_77(struct lf_astack *s, struct ksync_u128 *exp)
{
	uint64_t v;

	(void)exp;
	lf_astack_pop_mpmc(s, &v);	/* the head returns to the same count ... */
	lf_astack_push_mpmc(s, 77);	/* ... with another value and generation */
}

/* Pops both values and pushes 5, 77: the count is 2 again, and the slot below the top
 * (which the stalled pop read as 1) now holds 5. */
static void pop2_push_5_77(struct lf_astack *s, struct ksync_u128 *exp)
{
	uint64_t v;

	(void)exp;
	lf_astack_pop_mpmc(s, &v);
	lf_astack_pop_mpmc(s, &v);
	lf_astack_push_mpmc(s, 5);
	lf_astack_push_mpmc(s, 77);
}

KTEST(lf_astack_push_one_forced_retry)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	lf_astack_init(&s, slots, 8);
	lf_astack_push_mpmc(&s, 1);
	attempts[0] = 0;
	interfere_on = 0;
	interference = push_99;
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 2), 0);
	KT_EXPECT_EQ(attempts[0], 2);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 2);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 99);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 1);
}

/* The pop's ABA: between its read of {v=2, count 2} and its CAS, another thread pops 2
 * and pushes 77 - the count is 2 again.  The head's generation differs, so the CAS fails
 * once and the pop takes 77; 2 is not popped twice. */
KTEST(lf_astack_pop_aba_one_forced_retry)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	lf_astack_init(&s, slots, 8);
	lf_astack_push_mpmc(&s, 1);
	lf_astack_push_mpmc(&s, 2);
	attempts[1] = 0;
	interfere_on = 1;
	interference = pop_then_push_77;
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(attempts[1], 2);
	KT_EXPECT_EQ(v, 77);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 1);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), KSYNC_EEMPTY);
}

/* The pop's ABA with the slot below changed: between its read of {2, count 2} (and of
 * slot 1 = 1) and its CAS, another thread pops 2 and 1 and pushes 5 and 77.  The CAS
 * fails once (generation); the pop takes 77 and leaves 5 - not the stale 1. */
KTEST(lf_astack_pop_stale_below_one_forced_retry)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	lf_astack_init(&s, slots, 8);
	lf_astack_push_mpmc(&s, 1);
	lf_astack_push_mpmc(&s, 2);
	interfere_on = 1;
	interference = pop2_push_5_77;
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(attempts[1], 2);
	KT_EXPECT_EQ(v, 77);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 5);
}

/* The same with the head's generation compared away (the expected head replaced by the
 * current one just before the CAS): the CAS succeeds with the stale slot value, so 1,
 * already popped, comes back and 5 is lost - the generation is what the test above
 * relies on. */
static void stale_below_and_defeat_generation(struct lf_astack *s, struct ksync_u128 *exp)
{
	pop2_push_5_77(s, exp);
	exp->hi = s->head.hi;
	exp->lo = s->head.lo;
}

KTEST(lf_astack_without_generation_pop_duplicates)
{
	struct lf_astack s;
	uint64_t v = 0;

	reset_hook();
	lf_astack_init(&s, slots, 8);
	lf_astack_push_mpmc(&s, 1);
	lf_astack_push_mpmc(&s, 2);
	interfere_on = 1;
	interference = stale_below_and_defeat_generation;
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(attempts[1], 1);
	KT_EXPECT_EQ(v, 77);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 1);	/* a duplicate: 1 was popped by the interference */
}

/* ---- helping: a push or pop stalled before its own slot write ----------------------- */

static int helped_ok;

/* Runs inside the stalled push's own completion (before its slot CAS): a whole sequence
 * of operations by "other threads", which must complete the stalled slot themselves. */
static void others_run(struct lf_astack *s, struct ksync_u128 *exp)
{
	uint64_t a = 0, b = 0, c = 0;

	(void)exp;
	helped_ok = lf_astack_push_mpmc(s, 30) == 0 &&	/* completes slot 2 (= 20) first */
		    lf_astack_pop_mpmc(s, &a) == 0 && a == 30 &&
		    lf_astack_pop_mpmc(s, &b) == 0 && b == 20 &&	/* the stalled push's */
		    lf_astack_pop_mpmc(s, &c) == LF_ASTACK_NOW_EMPTY && c == 10 &&
		    lf_astack_push_mpmc(s, 40) == LF_ASTACK_WAS_EMPTY;
}

KTEST(lf_astack_stalled_push_is_completed_by_others)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	lf_astack_init(&s, slots, 8);
	lf_astack_push_mpmc(&s, 10);
	helped_ok = 0;
	attempts[2] = 0;
	interfere_on = 2;	/* the push's own finish(), after its head CAS */
	interference = others_run;
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 20), 0);
	KT_EXPECT(helped_ok);
	/* the stalled finish's CAS then failed (the slot had moved on): no write of 20
	 * over the slot that now belongs to 40's generation */
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 40);
	KT_EXPECT_EQ(lf_astack_size(&s), 0);
}

static void others_after_pop(struct lf_astack *s, struct ksync_u128 *exp)
{
	uint64_t a = 0;

	(void)exp;
	/* the stalled pop left {count 1, value 10}; slot 1's generation is not bumped yet:
	 * this push must complete it before reading slot 2's generation and moving */
	helped_ok = lf_astack_push_mpmc(s, 50) == 0 && lf_astack_pop_mpmc(s, &a) == 0 &&
		    a == 50;
}

KTEST(lf_astack_stalled_pop_is_completed_by_others)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	lf_astack_init(&s, slots, 8);
	lf_astack_push_mpmc(&s, 10);
	lf_astack_push_mpmc(&s, 20);
	helped_ok = 0;
	interfere_on = 2;
	interference = NULL;
	/* the pop's own finish is its second finish() call (the first completes the head
	 * it read, already complete here: no CAS, no hook) */
	interference = others_after_pop;
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 20);
	KT_EXPECT(helped_ok);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 10);
}

KTEST(lf_astack_generation_wraps_in_its_field)
{
	struct lf_astack s;
	uint64_t v;

	reset_hook();
	KT_ASSERT_EQ(lf_astack_init(&s, slots, 4), KSYNC_OK);	/* idx_bits 3, G 61 */
	/* slot 1 at the largest generation: the next head at count 1 wraps to 0 */
	slots[1].w.hi = s.gen_mask;
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 5), LF_ASTACK_WAS_EMPTY);
	KT_EXPECT_EQ(gen_of(&s), 0);
	KT_EXPECT_EQ(s.head.hi & s.idx_mask, 1);	/* the count untouched by the carry */
	KT_EXPECT_EQ(slots[1].w.hi, 0);
	KT_EXPECT_EQ(slots[1].w.lo, 5);
	KT_EXPECT_EQ(lf_astack_push_mpmc(&s, 6), 0);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), 0);
	KT_EXPECT_EQ(v, 6);
	KT_EXPECT_EQ(lf_astack_pop_mpmc(&s, &v), LF_ASTACK_NOW_EMPTY);
	KT_EXPECT_EQ(v, 5);
}

/* ---- threads: every value pushed is popped exactly once ----------------------------- */

#define MAXT 4
#define PER_THREAD 200000
static struct lf_astack shared;
static _Alignas(16) struct lf_astack_slot shared_slots[LF_ASTACK_SLOTS(6)];
static uint8_t seen[MAXT][PER_THREAD];	/* atomic exchange: 1 when popped */
/* plain: written by the pusher before the push, read by the popper after the pop - the
 * push's release and the pop's acquire must order them (TSan checks) */
static uint64_t payload[MAXT][PER_THREAD];

static uint64_t payload_of(uint64_t t, uint64_t k)
{
	return (t << 40) ^ (k * 0x9e3779b97f4a7c15ull) ^ 0xa5a5u;
}
static uint32_t gate;

struct worker {
	pthread_t th;
	unsigned id, n;
	uint64_t pushed, popped, dups, bad, full, empty;
};

static void took(struct worker *w, uint64_t v)
{
	uint64_t t = v >> 32, k = v & 0xffffffffu;

	if (t >= MAXT || k >= PER_THREAD) {
		w->bad++;
		return;
	}
	if (ksync_exchange_relaxed_u8(&seen[t][k], 1) != 0)
		w->dups++;
	if (payload[t][k] != payload_of(t, k))
		w->bad++;
	w->popped++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t x = 0x2545f4914f6cdd1dull * (w->id + 1), k = 0, v;

	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	while (k < w->n) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x & 3) {	/* push 3 times in 4: the small stack is often full */
			int r;

			payload[w->id][k] = payload_of(w->id, k);
			r = lf_astack_push_mpmc(&shared, ((uint64_t)w->id << 32) | k);

			if (r == KSYNC_EFULL) {
				w->full++;
			} else if (r >= 0) {
				k++;
				w->pushed++;
			} else {
				w->bad++;
			}
		} else {
			int r = lf_astack_pop_mpmc(&shared, &v);

			if (r == KSYNC_EEMPTY)
				w->empty++;
			else if (r >= 0)
				took(w, v);
			else
				w->bad++;
		}
		if (w->full > 0 && (x & 0x30) == 0 && lf_astack_pop_mpmc(&shared, &v) >= 0)
			took(w, v);	/* keep the stack moving when it is full */
	}
	return NULL;
}

static void run_threads(struct ktest_ctx *kt, unsigned nthreads, uint32_t cap)
{
	struct worker w[MAXT];
	uint64_t pushed = 0, popped = 0, dups = 0, bad = 0, full = 0, empty = 0, v;
	struct worker drain = { 0 };

	KT_ASSERT_EQ(lf_astack_init(&shared, shared_slots, cap), KSYNC_OK);
	for (unsigned t = 0; t < MAXT; t++)
		for (unsigned k = 0; k < PER_THREAD; k++) {
			seen[t][k] = 0;
			payload[t][k] = 0;
		}
	gate = nthreads;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .id = t, .n = PER_THREAD };
		KT_ASSERT_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		KT_ASSERT_EQ(pthread_join(w[t].th, NULL), 0);
		pushed += w[t].pushed;
		popped += w[t].popped;
		dups += w[t].dups;
		bad += w[t].bad;
		full += w[t].full;
		empty += w[t].empty;
	}
	while (lf_astack_pop_mpmc(&shared, &v) >= 0)
		took(&drain, v);
	popped += drain.popped;
	KT_EXPECT_EQ(dups + drain.dups, 0);
	KT_EXPECT_EQ(bad + drain.bad, 0);
	KT_EXPECT_EQ(pushed, (uint64_t)nthreads * PER_THREAD);
	KT_EXPECT_EQ(popped, pushed);
	for (unsigned t = 0; t < nthreads; t++)
		for (unsigned k = 0; k < PER_THREAD; k++)
			if (!seen[t][k]) {
				KT_EXPECT_EQ(seen[t][k], 1);	/* lost: report the first */
				return;
			}
	kt_diag(kt, "%u threads, capacity %u: %llu pushed, %llu popped, %llu full, "
		"%llu empty", nthreads, cap, (unsigned long long)pushed,
		(unsigned long long)popped, (unsigned long long)full,
		(unsigned long long)empty);
}

KTEST(lf_astack_2threads_capacity_2)
{
	run_threads(kt, 2, 2);
}

KTEST(lf_astack_4threads_capacity_6)
{
	run_threads(kt, 4, 6);
}
