/*
 * test_explore_queue.c - the interleaving explorer against a FIFO specification: a
 * bounded single-producer/single-consumer ring (Massalin & Pu 1991, "FIFO queues": the
 * one-producer one-consumer queue needs no CAS, only the order of its stores), correct
 * and with a seeded bug - the enqueue publishes the new tail BEFORE writing the element,
 * so a consumer can take a slot that does not hold the element yet.  The explorer must
 * find the bug (a dequeue returns a value never enqueued: not linearizable) and must
 * find nothing in the correct ring, including at the full and empty boundaries.
 * test_explore_lf_fifo.c explores the real include/ksync/lf_fifo*.h.
 */
#include "../explore/explore.h"

#include <ksync/atomic.h>
#include <ksync/ktest.h>

#include "../explore/explore.c"

#define RING 2	/* tiny, so the full boundary is reached */

static struct {
	uint64_t head;		/* written by the consumer only */
	uint64_t tail;		/* written by the producer only */
	uint64_t slot[RING];	/* relaxed atomics: ordered by tail/head */
} q;

static bool seeded_bug;

static uint64_t enq(uint64_t v)
{
	uint64_t t = ksync_load_relaxed_u64(&q.tail);
	uint64_t h = ksync_load_acquire_u64(&q.head);	/* pairs with the consumer's release */

	if (t - h == RING)
		return KX_FULL;
	if (seeded_bug) {
		ksync_store_release_u64(&q.tail, t + 1);	/* BUG: published first */
		ksync_store_relaxed_u64(&q.slot[t % RING], v);
	} else {
		ksync_store_relaxed_u64(&q.slot[t % RING], v);
		ksync_store_release_u64(&q.tail, t + 1);	/* publishes the slot */
	}
	return KX_OK;
}

static uint64_t deq(void)
{
	uint64_t h = ksync_load_relaxed_u64(&q.head);
	uint64_t t = ksync_load_acquire_u64(&q.tail);	/* pairs with the producer's release */
	uint64_t v;

	if (h == t)
		return KX_EMPTY;
	v = ksync_load_relaxed_u64(&q.slot[h % RING]);
	ksync_store_release_u64(&q.head, h + 1);	/* frees the slot */
	return v;
}

static uint64_t r_enq(struct kx *x, uint64_t v)
{
	int op = kx_op_begin(x, KX_ENQ, v);
	uint64_t r = enq(v);

	kx_op_end(x, op, r);
	return r;
}

static uint64_t r_deq(struct kx *x)
{
	int op = kx_op_begin(x, KX_DEQ, 0);
	uint64_t r = deq();

	kx_op_end(x, op, r);
	return r;
}

static int full_results;	/* enqueues that found the ring full (boundary reached) */

static void setup(struct kx *x, void *arg)
{
	(void)arg;
	q.head = q.tail = 0;
	for (int i = 0; i < RING; i++)
		q.slot[i] = 0;	/* 0 is never enqueued: a premature read shows up */
	kx_name(x, &q.head, "head");
	kx_name(x, &q.tail, "tail");
	kx_name(x, &q.slot[0], "slot");
}

static void teardown(struct kx *x, void *arg)
{
	(void)arg;
	while (r_deq(x) != KX_EMPTY)
		;
}

static void producer(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	for (uint64_t v = 1; v <= 3; v++)
		if (r_enq(x, v) == KX_FULL)
			full_results++;
}

static void consumer(struct kx *x, int tid, void *arg)
{
	(void)tid;
	(void)arg;
	r_deq(x);
	r_deq(x);
}

static struct kx_config config(const char *name)
{
	return (struct kx_config){
		.name = name,
		.nthreads = 2,
		.thread = { producer, consumer },
		.setup = setup,
		.teardown = teardown,
		.spec = &kx_spec_queue,
		.preemption_bound = 3,
	};
}

KTEST(explore_queue_finds_publication_before_write)
{
	struct kx_config cfg = config("spsc-publish-first");
	struct kx_result r;

	seeded_bug = true;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 1);
	KT_EXPECT(r.violations >= 1);
}

KTEST(explore_queue_correct_ring_is_clean)
{
	struct kx_config cfg = config("spsc-ring");
	struct kx_result r;

	seeded_bug = false;
	full_results = 0;
	/* small enough to explore every interleaving (142206); bound 6 under TSan */
	cfg.preemption_bound = KX_TSAN ? 6 : -1;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT(r.exhausted);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(full_results > 0);	/* the full boundary was exercised */
}
