/*
 * test_lf_fifo_mpmc_word.c - the bounded MPMC FIFO of 8-byte words
 * (include/ksync/lf_fifo_mpmc_word.h): storage size and every bad input; exact FIFO,
 * full and empty single-threaded against a model over many wrap-arounds for capacities
 * 1..64 (values over the whole 64-bit range); hints moved back by any amount (the
 * header's walks and jumps); each CAS made to fail once by a conflicting operation run
 * just before it (through the atomic-step hook); and a multi-producer multi-consumer
 * stress that tags every element (producer, sequence), checks that nothing is lost or
 * duplicated and that every consumer sees each producer's elements in order, and hands
 * a plainly written payload through each element (ThreadSanitizer checks the
 * happens-before); and exact capacity under concurrency (racing producers fill an
 * empty queue: exactly capacity succeed; racing consumers drain it: each value once).
 * And the interleaving explorer (tests/explore): every interleaving of the atomic steps
 * of 3 threads, up to a preemption bound, linearizable against a bounded FIFO of EXACT
 * capacity (KSYNC_EFULL only when capacity elements are present, KSYNC_EEMPTY only when
 * none), and none stalls.
 * Lock-freedom under a stopped thread: test_lf_fifo_preempt.c ("mpmc_word").
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Conflict injection: before the victim's cell CAS (the enqueue's cas128, the
 * dequeue's 8-byte cas of the stamp: the queue's only read-modify-writes), run one
 * whole conflicting operation, once. */
static int inj_armed, inj_in, inj_hits;
static void (*inj_action)(void);
static void inject(int is_cas128)
{
	if (!is_cas128 || !inj_armed || inj_in)
		return;
	inj_armed = 0;
	inj_in = 1;
	inj_hits++;
	inj_action();
	inj_in = 0;
}
#define KSYNC__WORD_IS_CAS128_cas128 1
#define KSYNC__WORD_IS_CAS128_load 0
#define KSYNC__WORD_IS_CAS128_store 0
#define KSYNC__WORD_IS_CAS128_exchange 0
#define KSYNC__WORD_IS_CAS128_cas 1
#define KSYNC__WORD_IS_CAS128_fetch_add 0
#define KSYNC__WORD_IS_CAS128_fetch_sub 0
#define KSYNC__WORD_IS_CAS128_fetch_or 0
#define KSYNC__WORD_IS_CAS128_fetch_and 0
#define KSYNC__WORD_IS_CAS128_fence 0
#define KSYNC__WORD_IS_CAS128_load128 0
/* Late hint (lf_fifo_mpmc_word_late_hint): the victim is stopped at its first write of
 * one hint word (late_addr: the store or CAS that ends its hint update, after the load
 * that decided it; the hook runs before the instruction) and one whole action (others
 * running far ahead) runs there, once; and, while late_counting, every load of a cell's
 * stamp (the first 8 bytes of a 16-byte cell in [late_lo, late_hi)) is counted: the
 * cells an operation visits. */
static const void *late_addr;
static int late_armed;
static void (*late_action)(void);
static int late_counting;
static long late_cells;
static const unsigned char *late_lo, *late_hi;
static void late_hook(const char *op, const void *addr)
{
	const unsigned char *a = addr;

	if (strcmp(op, "load") == 0) {
		if (late_counting && a >= late_lo && a < late_hi && (a - late_lo) % 16 == 0)
			late_cells++;
	} else if (late_armed && !inj_in && addr == late_addr) {
		late_armed = 0;
		inj_in = 1;
		late_action();
		inj_in = 0;
	}
}
/* The interleaving explorer's scheduling point (a no-op outside an explored thread)
 * and the injections above share the one hook. */
#include "../explore/explore.h"
#undef KSYNC_ATOMIC_HOOK
#define KSYNC_ATOMIC_HOOK(op, addr)                                                   \
	(inject(KSYNC__WORD_IS_CAS128_##op), late_hook(#op, (const void *)(addr)),      \
	 kx_hook(#op, (const void *)(addr)))

#include <ksync/ktest.h>
#include <ksync/lf_fifo_mpmc_word.h>

#include "../explore/explore.c"

#define MAXCAP 64
#define GUARD 64
static _Alignas(64) unsigned char store[MAXCAP * 16 + GUARD];
static struct lf_fifo_mpmc_word q;

static bool guard_ok(size_t from)
{
	for (size_t i = from; i < sizeof(store); i++)
		if (store[i] != 0xEE)
			return false;
	return true;
}

/* xorshift64*: deterministic values over the whole 64-bit range */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* ---- sizes and bad input ------------------------------------------------------------ */

KTEST(lf_fifo_mpmc_word_storage_size)
{
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(1), 16);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(2), 32);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(1024), 16384);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word((uint64_t)1 << 31), (uint64_t)1 << 35);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(0), 0);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(3), 0);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(6), 0);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word((uint64_t)1 << 32), 0);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc_word(UINT64_MAX), 0);
}

KTEST(lf_fifo_mpmc_word_bad_input)
{
	struct lf_fifo_mpmc_word before;
	uint64_t v = 7;

	memset(store, 0xEE, sizeof(store));
	memset(&q, 0x5A, sizeof(q));
	before = q;
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(NULL, store, sizeof(store), 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store, sizeof(store), 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store, sizeof(store), 3), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store, sizeof(store), 12), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store, sizeof(store), (uint64_t)1 << 32),
		     KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, NULL, sizeof(store), 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store + 8, sizeof(store) - 8, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store + 4, sizeof(store) - 4, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store, 4 * 16 - 1, 4), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_init_mpmc_word(&q, store, 0, 1), KSYNC_EINVAL);
	/* nothing was written by a refused init */
	KT_EXPECT(memcmp(&q, &before, sizeof(q)) == 0);
	KT_EXPECT(guard_ok(0));
	KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(NULL, v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(NULL, &v), KSYNC_EINVAL);
	/* exactly the size is enough; 16-aligned storage at an offset is fine */
	KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&q, store + 16, 4 * 16, 4), KSYNC_OK);
	KT_EXPECT(guard_ok(16 + 4 * 16));
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &v), KSYNC_EEMPTY);
	KT_EXPECT_EQ(v, 7);	/* untouched by EEMPTY */
	KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, 42), KSYNC_OK);
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &v), KSYNC_OK);	/* NULL out took nothing */
	KT_EXPECT_EQ(v, 42);
	KT_EXPECT(guard_ok(16 + 4 * 16));
}

/* ---- single-threaded semantics against a model -------------------------------------------- */

struct model {
	uint64_t v[MAXCAP];
	unsigned head, count, cap;
};

/* One random operation on the queue and the model; false on any disagreement. */
static bool step(struct model *m, int enq_bias)
{
	uint64_t v, out = 0xD00D;
	int r;

	if ((int)(rnd() % 100) < enq_bias) {
		v = rnd();
		if (rnd() % 8 == 0)
			v = (rnd() & 1) ? UINT64_MAX : 0;	/* every value is a value */
		r = lf_fifo_enqueue_mpmc_word(&q, v);
		if (m->count == m->cap)
			return r == KSYNC_EFULL;
		if (r != KSYNC_OK)
			return false;
		m->v[(m->head + m->count++) % m->cap] = v;
		return true;
	}
	r = lf_fifo_dequeue_mpmc_word(&q, &out);
	if (m->count == 0)
		return r == KSYNC_EEMPTY && out == 0xD00D;
	if (r != KSYNC_OK || out != m->v[m->head])
		return false;
	m->head = (m->head + 1) % m->cap;
	m->count--;
	return true;
}

KTEST(lf_fifo_mpmc_word_fifo_full_empty)
{
	for (uint64_t cap = 1; cap <= MAXCAP; cap *= 2) {
		uint64_t out = 0;

		memset(store, 0xEE, sizeof(store));
		KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&q, store, cap * 16, cap), KSYNC_OK);
		/* boundaries, many times over (each round wraps the ring once) */
		for (uint64_t round = 0; round < 300; round++) {
			KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_EEMPTY);
			for (uint64_t i = 0; i < cap; i++)
				KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, round << 32 | i), KSYNC_OK);
			KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, 1), KSYNC_EFULL);
			KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, 2), KSYNC_EFULL);
			for (uint64_t i = 0; i < cap; i++) {
				out = 0;
				KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_OK);
				KT_EXPECT_EQ(out, round << 32 | i);
			}
			KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_EEMPTY);
			if (kt->failures) {
				kt_diag(kt, "capacity %llu round %llu", (unsigned long long)cap,
					(unsigned long long)round);
				return;
			}
		}
		/* random operations against the model: mostly-empty, balanced, mostly-full */
		struct model m = { .cap = (unsigned)cap };
		static const int bias[] = { 30, 50, 70, 50 };
		for (int phase = 0; phase < 4; phase++)
			for (int i = 0; i < 20000; i++)
				if (!step(&m, bias[phase])) {
					KT_EXPECT(!"queue and model disagree");
					kt_diag(kt, "capacity %llu phase %d op %d",
						(unsigned long long)cap, phase, i);
					return;
				}
		KT_EXPECT(guard_ok(cap * 16));
	}
}

/* Pointers travel as words. */
KTEST(lf_fifo_mpmc_word_pointers)
{
	static int objs[8];
	uint64_t out = 0;

	KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&q, store, 8 * 16, 8), KSYNC_OK);
	for (int i = 0; i < 8; i++)
		KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, (uintptr_t)&objs[i]), KSYNC_OK);
	for (int i = 0; i < 8; i++) {
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_OK);
		KT_EXPECT((int *)(uintptr_t)out == &objs[i]);
	}
}

/*
 * The hints are promises only (every position below tail enqueued, below head
 * dequeued): moving them back by any amount must change nothing but the walk.  Moves
 * of less than a ring exercise the walk, of a ring or more the jump.
 */
KTEST(lf_fifo_mpmc_word_stale_hints)
{
	for (uint64_t cap = 1; cap <= MAXCAP; cap *= 4) {
		struct model m = { .cap = (unsigned)cap };

		KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&q, store, cap * 16, cap), KSYNC_OK);
		for (int i = 0; i < 40000; i++) {
			if (rnd() % 16 == 0) {
				/* back by up to 3 rings, never below 0 */
				uint64_t bt = rnd() % (3 * cap + 2), bh = rnd() % (3 * cap + 2);

				q.tail -= bt < q.tail ? bt : q.tail;
				q.head -= bh < q.head ? bh : q.head;
			}
			if (!step(&m, 50)) {
				KT_EXPECT(!"queue and model disagree after a hint moved back");
				kt_diag(kt, "capacity %llu op %d", (unsigned long long)cap, i);
				return;
			}
		}
		/* and the hints catch up again: one enqueue and dequeue after a reset to 0 */
		while (m.count) {
			KT_ASSERT(step(&m, 0));
		}
		q.tail = q.head = 0;
		KT_ASSERT(step(&m, 100));
		KT_ASSERT(step(&m, 0));
		KT_EXPECT(q.tail == q.head && q.tail > 0);
	}
}

/* ---- each CAS made to fail once (single thread, conflicting operation injected) ----------- */

static uint64_t nested_out;
static int nested_result;
static void nested_enq(void)
{
	nested_result = lf_fifo_enqueue_mpmc_word(&q, 0xBB);
}
static void nested_deq(void)
{
	nested_result = lf_fifo_dequeue_mpmc_word(&q, &nested_out);
}

KTEST(lf_fifo_mpmc_word_cas_conflict)
{
	for (uint64_t cap = 1; cap <= 4; cap *= 2) {
		uint64_t out = 0;

		/* two producers: the injected one wins the cell, the victim takes the next
		 * (or finds the queue full: capacity 1) */
		KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&q, store, cap * 16, cap), KSYNC_OK);
		inj_hits = 0;
		inj_action = nested_enq;
		inj_armed = 1;
		int r = lf_fifo_enqueue_mpmc_word(&q, 0xAA);
		KT_EXPECT_EQ(inj_hits, 1);
		KT_EXPECT_EQ(nested_result, KSYNC_OK);
		KT_EXPECT_EQ(r, cap == 1 ? KSYNC_EFULL : KSYNC_OK);
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_OK);
		KT_EXPECT_EQ(out, 0xBB);
		if (cap > 1) {
			KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_OK);
			KT_EXPECT_EQ(out, 0xAA);
		}
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_EEMPTY);

		/* two consumers of two elements (one for capacity 1): the injected one takes
		 * the oldest, the victim the next (or finds the queue empty) */
		KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, 1), KSYNC_OK);
		if (cap > 1)
			KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, 2), KSYNC_OK);
		inj_hits = 0;
		inj_action = nested_deq;
		inj_armed = 1;
		out = 0;
		r = lf_fifo_dequeue_mpmc_word(&q, &out);
		KT_EXPECT_EQ(inj_hits, 1);
		KT_EXPECT_EQ(nested_result, KSYNC_OK);
		KT_EXPECT_EQ(nested_out, 1);
		KT_EXPECT_EQ(r, cap == 1 ? KSYNC_EEMPTY : KSYNC_OK);
		if (cap > 1)
			KT_EXPECT_EQ(out, 2);
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_EEMPTY);

		/* a consumer in the enqueue's window and a producer in the dequeue's window:
		 * neither makes the other's CAS fail (they never race for one cell state) */
		inj_action = nested_deq;
		inj_armed = 1;
		KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&q, 5), KSYNC_OK);
		KT_EXPECT_EQ(nested_result, KSYNC_EEMPTY);	/* ran before the publication */
		inj_action = nested_enq;
		inj_armed = 1;
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_OK);
		KT_EXPECT_EQ(out, 5);
		/* the injected enqueue ran before the claim: with capacity 1 the only cell
		 * still held 5, so the queue was full */
		KT_EXPECT_EQ(nested_result, cap == 1 ? KSYNC_EFULL : KSYNC_OK);
		out = 0;
		r = lf_fifo_dequeue_mpmc_word(&q, &out);
		KT_EXPECT_EQ(r, cap == 1 ? KSYNC_EEMPTY : KSYNC_OK);
		KT_EXPECT_EQ(out, cap == 1 ? 0 : 0xBB);
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&q, &out), KSYNC_EEMPTY);
		if (kt->failures) {
			kt_diag(kt, "capacity %llu", (unsigned long long)cap);
			return;
		}
	}
}

/* ---- multi-producer multi-consumer stress ------------------------------------------------- */

#define NPROD 3
#define NCONS 3
#if defined(__SANITIZE_THREAD__)
#define PER_PROD 20000	/* ThreadSanitizer is ~20x slower */
#else
#define PER_PROD 60000
#endif
#define SCAP 8

static _Alignas(64) unsigned char sstore[1024 * 16];
static struct lf_fifo_mpmc_word sq;
/* payload[p][s]: written plainly by producer p before it enqueues (p, s), read plainly
 * by the consumer that dequeues it: the queue's release/acquire must order them. */
static uint64_t (*payload)[PER_PROD];
/* seen[p][s]: how many times (p, s) was dequeued; each slot written by the one consumer
 * that dequeued it (a duplicate would be a race, which TSan would also report). */
static unsigned char (*seen)[PER_PROD];
static int consumed_total;	/* atomic */

struct cons_res {
	int got, order_bad, payload_bad, bad_tag;
};

static uint64_t pay(unsigned p, unsigned s)
{
	return (uint64_t)p * 0x100000001b3ull ^ (uint64_t)s * 0x9E3779B97F4A7C15ull;
}

static void *producer(void *arg)
{
	unsigned p = (unsigned)(uintptr_t)arg;

	for (unsigned s = 0; s < PER_PROD; s++) {
		payload[p][s] = pay(p, s);
		while (lf_fifo_enqueue_mpmc_word(&sq, (uint64_t)p << 32 | s) != KSYNC_OK)
			sched_yield();	/* full: let a consumer make room (6 threads, 2 CPUs) */
	}
	return NULL;
}

static void *consumer(void *arg)
{
	struct cons_res *r = arg;
	int64_t last[NPROD];

	for (int i = 0; i < NPROD; i++)
		last[i] = -1;
	while (__atomic_load_n(&consumed_total, __ATOMIC_RELAXED) < NPROD * PER_PROD) {
		uint64_t v;

		if (lf_fifo_dequeue_mpmc_word(&sq, &v) != KSYNC_OK) {
			sched_yield();	/* empty: let a producer run */
			continue;
		}
		__atomic_fetch_add(&consumed_total, 1, __ATOMIC_RELAXED);
		unsigned p = (unsigned)(v >> 32), s = (unsigned)v;

		r->got++;
		if (p >= NPROD || s >= PER_PROD) {
			r->bad_tag++;
			continue;
		}
		if ((int64_t)s <= last[p])
			r->order_bad++;
		last[p] = s;
		if (payload[p][s] != pay(p, s))
			r->payload_bad++;
		seen[p][s]++;
	}
	return NULL;
}

static void stress(struct ktest_ctx *kt, uint64_t cap)
{
	pthread_t pt[NPROD], ct[NCONS];
	struct cons_res res[NCONS];
	int got = 0, dup = 0, lost = 0;
	uint64_t v;

	payload = calloc(NPROD, sizeof(*payload));
	seen = calloc(NPROD, sizeof(*seen));
	KT_ASSERT(payload && seen);
	memset(res, 0, sizeof(res));
	consumed_total = 0;
	KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&sq, sstore, sizeof(sstore), cap), KSYNC_OK);
	for (int i = 0; i < NCONS; i++)
		KT_ASSERT_EQ(pthread_create(&ct[i], NULL, consumer, &res[i]), 0);
	for (int i = 0; i < NPROD; i++)
		KT_ASSERT_EQ(pthread_create(&pt[i], NULL, producer, (void *)(uintptr_t)i), 0);
	for (int i = 0; i < NPROD; i++)
		pthread_join(pt[i], NULL);
	for (int i = 0; i < NCONS; i++)
		pthread_join(ct[i], NULL);
	for (int i = 0; i < NCONS; i++) {
		got += res[i].got;
		KT_EXPECT_EQ(res[i].order_bad, 0);
		KT_EXPECT_EQ(res[i].payload_bad, 0);
		KT_EXPECT_EQ(res[i].bad_tag, 0);
	}
	for (int p = 0; p < NPROD; p++)
		for (int s = 0; s < PER_PROD; s++) {
			dup += seen[p][s] > 1;
			lost += seen[p][s] == 0;
		}
	KT_EXPECT_EQ(got, NPROD * PER_PROD);
	KT_EXPECT_EQ(dup, 0);
	KT_EXPECT_EQ(lost, 0);
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&sq, &v), KSYNC_EEMPTY);
	kt_diag(kt, "capacity %llu: %d producers x %d elements, %d consumers: %d dequeued, "
		"%d lost, %d duplicated", (unsigned long long)cap, NPROD, PER_PROD, NCONS, got,
		lost, dup);
	free(payload);
	free(seen);
}

KTEST(lf_fifo_mpmc_word_stress_cap1) { stress(kt, 1); }
KTEST(lf_fifo_mpmc_word_stress_cap8) { stress(kt, SCAP); }
KTEST(lf_fifo_mpmc_word_stress_cap1024) { stress(kt, 1024); }

/* ---- a late hint update: a thread stopped inside it, the others far ahead ---------------- *
 * The victim's enqueue (dequeue) succeeds at position p and is stopped just before it
 * writes the hint, having loaded it; meanwhile the others do `lag` enqueue + dequeue pairs (the
 * queue holding `fill` elements throughout), so the hint goes to p + 1 + lag; then the
 * victim finishes.  A hint update that could move the hint back (a plain store after
 * the load) would leave it at p + 1, lag positions behind, and the others' next enqueue
 * (dequeue) would walk from there, one cell per position once the first stamp's jump is
 * spent (up to n - 1 cells at capacity n).  The bound: that next operation reads at
 * most 2 cells' stamps (1 when nothing races it, as here), and every element comes out
 * once, in order. */
#define LCAP 1024
static uint64_t late_next_in, late_next_out;
static unsigned late_lag;
static int late_bad;
static void late_others(void)
{
	for (unsigned i = 0; i < late_lag; i++) {
		uint64_t v = ~0ull;

		late_bad |= lf_fifo_enqueue_mpmc_word(&sq, late_next_in++) != KSYNC_OK;
		late_bad |= lf_fifo_dequeue_mpmc_word(&sq, &v) != KSYNC_OK || v != late_next_out++;
	}
}

static void late_case(struct ktest_ctx *kt, int victim_enqueues, unsigned fill, unsigned lag)
{
	uint64_t v = ~0ull;
	uint64_t *hint = victim_enqueues ? &sq.tail : &sq.head;
	uint64_t before;
	int r;

	KT_ASSERT(sizeof(sstore) >= LCAP * 16);
	KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&sq, sstore, LCAP * 16, LCAP), KSYNC_OK);
	late_next_in = late_next_out = 0;
	late_bad = 0;
	/* after a wrap: fill elements (+2 for the victim dequeue and the next to take) */
	for (unsigned i = 0; i < LCAP + 7; i++) {
		KT_ASSERT_EQ(lf_fifo_enqueue_mpmc_word(&sq, late_next_in++), KSYNC_OK);
		KT_ASSERT_EQ(lf_fifo_dequeue_mpmc_word(&sq, &v), KSYNC_OK);
		KT_ASSERT_EQ(v, late_next_out++);
	}
	for (unsigned i = 0; i < fill + 2 * !victim_enqueues; i++)
		KT_ASSERT_EQ(lf_fifo_enqueue_mpmc_word(&sq, late_next_in++), KSYNC_OK);

	/* the victim: stopped at its write of its hint, after its cell CAS and the load
	 * that found the hint behind */
	late_lag = lag;
	late_action = late_others;
	late_addr = hint;
	late_armed = 1;
	before = *hint;
	if (victim_enqueues) {
		r = lf_fifo_enqueue_mpmc_word(&sq, late_next_in++);
	} else {
		uint64_t want = late_next_out++;	/* the others dequeue after it */

		r = lf_fifo_dequeue_mpmc_word(&sq, &v);
		KT_EXPECT_EQ(v, want);
	}
	KT_EXPECT_EQ(r, KSYNC_OK);
	KT_EXPECT_EQ(late_armed, 0);	/* the stop happened */
	KT_EXPECT_EQ(late_bad, 0);	/* the others' operations all succeeded, in order */
	/* the others moved the hint past the victim's position: it stays there */
	KT_EXPECT_EQ(*hint, before + 1 + lag);

	/* the others' next operation on the victim's side: cells read */
	late_lo = sstore;
	late_hi = sstore + LCAP * 16;
	late_cells = 0;
	late_counting = 1;
	if (victim_enqueues) {
		r = lf_fifo_enqueue_mpmc_word(&sq, late_next_in++);
	} else {
		r = lf_fifo_dequeue_mpmc_word(&sq, &v);
		KT_EXPECT_EQ(v, late_next_out++);
	}
	late_counting = 0;
	KT_EXPECT_EQ(r, KSYNC_OK);
	KT_EXPECT(late_cells >= 1 && late_cells <= 2);
	/* everything left comes out once, in order */
	while (lf_fifo_dequeue_mpmc_word(&sq, &v) == KSYNC_OK)
		KT_EXPECT_EQ(v, late_next_out++);
	KT_EXPECT_EQ(late_next_out, late_next_in);
	kt_diag(kt, "capacity %u, victim %s, %u elements, others ran %u pairs: the next "
		"%s read %ld cell(s)", LCAP, victim_enqueues ? "enqueue" : "dequeue", fill, lag,
		victim_enqueues ? "enqueue" : "dequeue", late_cells);
}

KTEST(lf_fifo_mpmc_word_late_hint)
{
	static const unsigned fills[] = { 0, LCAP / 2, LCAP - 2 };
	static const unsigned lags[] = { 5, LCAP - 3, 3 * LCAP + 5 };

	for (int side = 0; side < 2; side++)
		for (unsigned f = 0; f < 3; f++)
			for (unsigned l = 0; l < 3; l++) {
				late_case(kt, side, fills[f], lags[l]);
				if (kt->failures)
					return;
			}
}

/* ---- exact capacity under concurrency ------------------------------------------------------
 * Producers race to fill an empty queue until each sees KSYNC_EFULL: exactly capacity
 * enqueues succeed (an enqueue in progress reserves nothing).  Then consumers race to
 * drain it until each sees KSYNC_EEMPTY: exactly capacity dequeues succeed, each value
 * once.  Repeated, so the races land on different positions of the ring. */

#define XCAP 64
static int x_pok[NPROD], x_cok[NCONS];	/* each written by its thread, read after joins */
static uint64_t x_got[NCONS][XCAP];
static pthread_barrier_t x_bar;

static void *x_producer(void *arg)
{
	unsigned p = (unsigned)(uintptr_t)arg;
	unsigned s = 0;

	pthread_barrier_wait(&x_bar);
	while (lf_fifo_enqueue_mpmc_word(&sq, (uint64_t)p << 32 | s) == KSYNC_OK)
		s++;
	x_pok[p] = (int)s;
	return NULL;
}

static void *x_consumer(void *arg)
{
	unsigned c = (unsigned)(uintptr_t)arg;
	int k = 0;
	uint64_t v;

	pthread_barrier_wait(&x_bar);
	while (k < XCAP && lf_fifo_dequeue_mpmc_word(&sq, &v) == KSYNC_OK)
		x_got[c][k++] = v;
	x_cok[c] = k;
	return NULL;
}

KTEST(lf_fifo_mpmc_word_exact_capacity_concurrent)
{
	pthread_t th[NPROD > NCONS ? NPROD : NCONS];

	KT_ASSERT_EQ(lf_fifo_init_mpmc_word(&sq, sstore, sizeof(sstore), XCAP), KSYNC_OK);
	for (int round = 0; round < 200; round++) {
		int total = 0;
		uint64_t v;

		pthread_barrier_init(&x_bar, NULL, NPROD);
		for (int i = 0; i < NPROD; i++)
			KT_ASSERT_EQ(pthread_create(&th[i], NULL, x_producer, (void *)(uintptr_t)i), 0);
		for (int i = 0; i < NPROD; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&x_bar);
		for (int i = 0; i < NPROD; i++)
			total += x_pok[i];
		KT_EXPECT_EQ(total, XCAP);
		KT_EXPECT_EQ(lf_fifo_enqueue_mpmc_word(&sq, 1), KSYNC_EFULL);

		pthread_barrier_init(&x_bar, NULL, NCONS);
		for (int i = 0; i < NCONS; i++)
			KT_ASSERT_EQ(pthread_create(&th[i], NULL, x_consumer, (void *)(uintptr_t)i), 0);
		for (int i = 0; i < NCONS; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&x_bar);
		unsigned char seen1[NPROD][XCAP] = { { 0 } };

		total = 0;
		for (int c = 0; c < NCONS; c++) {
			int64_t last[NPROD] = { -1, -1, -1 };

			total += x_cok[c];
			for (int k = 0; k < x_cok[c]; k++) {
				unsigned p = (unsigned)(x_got[c][k] >> 32), s = (unsigned)x_got[c][k];

				KT_EXPECT(p < NPROD && (int)s < x_pok[p] && (int64_t)s > last[p]);
				if (p < NPROD && (int)s < x_pok[p]) {
					last[p] = s;
					seen1[p][s]++;
				}
			}
		}
		/* every value enqueued came out exactly once */
		for (int p = 0; p < NPROD; p++)
			for (int k = 0; k < x_pok[p]; k++)
				KT_EXPECT_EQ(seen1[p][k], 1);
		KT_EXPECT_EQ(total, XCAP);
		KT_EXPECT_EQ(lf_fifo_dequeue_mpmc_word(&sq, &v), KSYNC_EEMPTY);
		if (kt->failures) {
			kt_diag(kt, "round %d", round);
			return;
		}
	}
}

/* ---- the interleaving explorer: linearizable against an exact-capacity FIFO ---------------- */

/* A FIFO of exactly xcap values: enq -> KX_OK, or KX_FULL only when xcap are present;
 * deq -> the oldest, or KX_EMPTY only when none is. */
static unsigned xcap;
struct xq_state {
	unsigned n;
	uint64_t v[8];
};
static void xq_init(void *st)
{
	memset(st, 0, sizeof(struct xq_state));
}
static bool xq_apply(void *st, int op, uint64_t arg, uint64_t result)
{
	struct xq_state *s = st;

	if (op == KX_ENQ) {
		if (s->n == xcap)
			return result == KX_FULL;
		if (result != KX_OK)
			return false;
		s->v[s->n++] = arg;
		return true;
	}
	if (s->n == 0)
		return result == KX_EMPTY;
	if (result != s->v[0])
		return false;
	memmove(s->v, s->v + 1, --s->n * sizeof(s->v[0]));
	return true;
}
static const char *xq_op_name(int op)
{
	return op == KX_ENQ ? "enq" : "deq";
}
static const struct kx_spec xq_spec = { "bounded_fifo", sizeof(struct xq_state), xq_init,
					xq_apply, xq_op_name };

static _Alignas(64) struct ksync_u128 xstore[4];
static struct lf_fifo_mpmc_word xq;
static int xsetup_failed;
static const int *xscript[KX_MAX_THREADS];

static void x_enq(struct kx *x, uint64_t v)
{
	int op = kx_op_begin(x, KX_ENQ, v);
	int r = lf_fifo_enqueue_mpmc_word(&xq, v);

	kx_op_end(x, op, r == KSYNC_OK ? KX_OK : r == KSYNC_EFULL ? KX_FULL : 1000 + (uint64_t)-r);
}

static uint64_t x_deq(struct kx *x)
{
	int op = kx_op_begin(x, KX_DEQ, 0);
	uint64_t v = 0;
	int r = lf_fifo_dequeue_mpmc_word(&xq, &v);
	uint64_t res = r == KSYNC_OK ? v : r == KSYNC_EEMPTY ? KX_EMPTY : 1000 + (uint64_t)-r;

	kx_op_end(x, op, res);
	return res;
}

/* Before each execution: a fresh queue of xcap cells, with its hints and stamps as a
 * long-running queue would have them (xpre enqueue/dequeue pairs first, so positions
 * are past a wrap and the stamps are not the initial ones). */
static unsigned xpre;
static void x_setup(struct kx *x, void *arg)
{
	uint64_t v;

	(void)arg;
	memset(xstore, 0, sizeof(xstore));
	xsetup_failed |= lf_fifo_init_mpmc_word(&xq, xstore, sizeof(xstore), xcap) != KSYNC_OK;
	for (unsigned i = 0; i < xpre; i++)
		xsetup_failed |= lf_fifo_enqueue_mpmc_word(&xq, 100 + i) != KSYNC_OK ||
				 lf_fifo_dequeue_mpmc_word(&xq, &v) != KSYNC_OK;
	kx_name(x, &xq, "queue");
	kx_name(x, xstore, "cells");
}

static void x_teardown(struct kx *x, void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < 2 * xcap + 2 && x_deq(x) != KX_EMPTY; i++)
		;
}

/* scripts: positive = enqueue that value, 0 = dequeue, -1 = end */
static void x_runner(struct kx *x, int tid, void *arg)
{
	(void)arg;
	for (const int *p = xscript[tid]; *p >= 0; p++) {
		if (*p > 0)
			x_enq(x, (uint64_t)*p);
		else
			x_deq(x);
	}
}

static void x_explore(struct ktest_ctx *kt, const char *name, unsigned cap, unsigned pre,
		      const int *a, const int *b, const int *c)
{
	struct kx_config cfg = {
		.name = name,
		.nthreads = 3,
		.thread = { x_runner, x_runner, x_runner },
		.setup = x_setup,
		.teardown = x_teardown,
		.spec = &xq_spec,
		.preemption_bound = 3,
		.max_schedules = KX_TSAN ? 3000 : 200000,
		.max_steps = 5000,
		.step_limit_is_violation = true,
	};
	struct kx_result r;

	xcap = cap;
	xpre = pre;
	xscript[0] = a;
	xscript[1] = b;
	xscript[2] = c;
	xsetup_failed = 0;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT_EQ(xsetup_failed, 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.schedules > 1);
}

static const int xs_p1[] = { 1, -1 }, xs_p23[] = { 2, 3, -1 }, xs_c1[] = { 0, -1 },
		 xs_c2[] = { 0, 0, -1 }, xs_p123[] = { 1, 2, 3, -1 };
static const int xs_mix_a[] = { 1, 0, -1 }, xs_mix_b[] = { 2, 0, -1 },
		 xs_mix_c[] = { 0, 3, -1 };

KTEST(lf_fifo_mpmc_word_explore_2p1c)
{
	x_explore(kt, "2 producers, 1 consumer, capacity 2", 2, 0, xs_p1, xs_p23, xs_c2);
	x_explore(kt, "2 producers, 1 consumer, capacity 1, wrapped", 1, 3, xs_p1, xs_p23,
		  xs_c2);
}

KTEST(lf_fifo_mpmc_word_explore_1p2c)
{
	x_explore(kt, "1 producer, 2 consumers, capacity 2", 2, 1, xs_p123, xs_c1, xs_c2);
	x_explore(kt, "1 producer, 2 consumers, capacity 1", 1, 0, xs_p123, xs_c1, xs_c2);
}

KTEST(lf_fifo_mpmc_word_explore_mixed)
{
	x_explore(kt, "3 threads enqueue and dequeue, capacity 2", 2, 3, xs_mix_a, xs_mix_b,
		  xs_mix_c);
	x_explore(kt, "3 threads enqueue and dequeue, capacity 1", 1, 0, xs_mix_a, xs_mix_b,
		  xs_mix_c);
}
