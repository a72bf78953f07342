/*
 * test_lf_fifo_ends.c - the spsc ring's ends (include/ksync/lf_fifo_spsc.h:
 * lf_fifo_open_producer_spsc / lf_fifo_put_spsc / lf_fifo_close_producer_spsc and the
 * consumer's twins, issue 13 item 2): each side's index kept by its thread, every element
 * still published by its own index store.
 *
 * What is asserted:
 *  - ends_spsc_model: random puts and gets through ends against a model (capacities
 *    1..64, element sizes 1, 8, 12 and 100 bytes): FIFO order and contents over many
 *    wrap-arounds, KSYNC_EFULL exactly when capacity elements are in, KSYNC_EEMPTY exactly
 *    when none are (nothing written then); ends closed and reopened between phases that
 *    use the single-element and batch functions on the same ring;
 *  - ends_spsc_each_published: after each put the queue's shared tail has moved by one and
 *    the plain dequeue sees the element at once; after each get the shared head has moved
 *    by one and the plain enqueue sees the room; close hands the cached index back;
 *  - ends_spsc_callbacks: with callbacks installed every boundary event fires as on the
 *    single-element path, and the ends follow the indices the slow path moved;
 *  - ends_spsc_bad_input: NULL queue / end / element: KSYNC_EINVAL, nothing changes;
 *    closing a NULL end is harmless;
 *  - ends_spsc_two_threads: a producer thread and a consumer thread, each through its end,
 *    2 million tagged elements: every one arrives once and in order (plain, ASan+UBSan
 *    and TSan builds).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ksync/ktest.h>
#include <ksync/lf_fifo_spsc.h>

#include "test_lf_fifo_spsc_util.h"

static _Alignas(64) unsigned char store[64 * 100 + 64];
static struct lf_fifo_spsc q;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

KTEST(ends_spsc_model)
{
	static const size_t sizes[] = { 1, 8, 12, 100 };
	static unsigned char in[100], out[101];
	for (unsigned si = 0; si < 4; si++) {
		size_t es = sizes[si];
		for (uint64_t cap = 1; cap <= 64; cap *= 2) {
			KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, cap, es, NULL), KSYNC_OK);
			uint64_t wseq = 0, rseq = 0;
			for (int phase = 0; phase < 6; phase++) {
				struct lf_fifo_spsc_producer p;
				struct lf_fifo_spsc_consumer c;
				KT_ASSERT_EQ(lf_fifo_open_producer_spsc(&q, &p), KSYNC_OK);
				KT_ASSERT_EQ(lf_fifo_open_consumer_spsc(&q, &c), KSYNC_OK);
				/* bias toward puts in even phases, gets in odd ones: both ends reach
				 * full and empty */
				unsigned put_pct = phase % 2 ? 35 : 65;
				for (int op = 0; op < 300; op++) {
					if (spsc_rand(&rng) % 100 < put_pct) {
						spsc_fill(in, es, wseq);
						int r = lf_fifo_put_spsc(&p, in);
						if (wseq - rseq == cap) {
							KT_ASSERT_EQ(r, KSYNC_EFULL);
						} else {
							KT_ASSERT_EQ(r, KSYNC_OK);
							wseq++;
						}
					} else {
						memset(out, 0xee, sizeof out);
						int r = lf_fifo_get_spsc(&c, out);
						if (wseq == rseq) {
							KT_ASSERT_EQ(r, KSYNC_EEMPTY);
							KT_EXPECT_EQ(out[0], 0xee);	/* untouched */
						} else {
							KT_ASSERT_EQ(r, KSYNC_OK);
							KT_ASSERT(spsc_is(out, es, rseq));
							KT_EXPECT_EQ(out[es], 0xee);	/* one element only */
							rseq++;
						}
					}
				}
				lf_fifo_close_producer_spsc(&p);
				lf_fifo_close_consumer_spsc(&c);
				KT_EXPECT_EQ(q.p.tail, wseq);
				KT_EXPECT_EQ(q.c.head, rseq);
				/* between phases: the other functions on the same ring */
				if (wseq - rseq < cap) {
					spsc_fill(in, es, wseq);
					KT_ASSERT_EQ(lf_fifo_enqueue_spsc(&q, in), KSYNC_OK);
					wseq++;
				}
				if (wseq > rseq) {
					size_t done = 0;
					KT_ASSERT_EQ(lf_fifo_dequeue_burst_spsc(&q, out, 1, &done), KSYNC_OK);
					KT_ASSERT_EQ(done, 1);
					KT_ASSERT(spsc_is(out, es, rseq));
					rseq++;
				}
			}
			/* drain by single dequeues: the rest, in order, then empty */
			KT_ASSERT(spsc_drain_in_order(&q, out, es, rseq, wseq));
		}
	}
}

KTEST(ends_spsc_each_published)
{
	struct lf_fifo_spsc_producer p;
	struct lf_fifo_spsc_consumer c;
	uint64_t v, out = 0;
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 4, 8, NULL), KSYNC_OK);
	KT_ASSERT_EQ(lf_fifo_open_producer_spsc(&q, &p), KSYNC_OK);
	for (v = 0; v < 4; v++) {
		KT_ASSERT_EQ(lf_fifo_put_spsc(&p, &(uint64_t){ 500 + v }), KSYNC_OK);
		KT_EXPECT_EQ(q.p.tail, v + 1);	/* published by this put */
	}
	KT_EXPECT_EQ(lf_fifo_put_spsc(&p, &v), KSYNC_EFULL);
	KT_EXPECT_EQ(q.p.tail, 4);
	/* the plain consumer sees each element at once */
	KT_ASSERT_EQ(lf_fifo_dequeue_spsc(&q, &out), KSYNC_OK);
	KT_EXPECT_EQ(out, 500);
	/* the producer end sees the room the plain dequeue made */
	KT_ASSERT_EQ(lf_fifo_put_spsc(&p, &(uint64_t){ 504 }), KSYNC_OK);
	KT_EXPECT_EQ(p.head_cache, 1);
	lf_fifo_close_producer_spsc(&p);
	KT_EXPECT_EQ(q.p.head_cache, 1);	/* handed back */
	KT_ASSERT_EQ(lf_fifo_open_consumer_spsc(&q, &c), KSYNC_OK);
	for (v = 1; v <= 4; v++) {
		KT_ASSERT_EQ(lf_fifo_get_spsc(&c, &out), KSYNC_OK);
		KT_EXPECT_EQ(out, 500 + v);
		KT_EXPECT_EQ(q.c.head, v + 1);	/* released by this get */
	}
	KT_EXPECT_EQ(lf_fifo_get_spsc(&c, &out), KSYNC_EEMPTY);
	KT_ASSERT_EQ(lf_fifo_enqueue_spsc(&q, &(uint64_t){ 505 }), KSYNC_OK);
	KT_ASSERT_EQ(lf_fifo_get_spsc(&c, &out), KSYNC_OK);
	KT_EXPECT_EQ(out, 505);
	lf_fifo_close_consumer_spsc(&c);
	KT_EXPECT_EQ(q.c.tail_cache, 6);	/* handed back */
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc(&q, &out), KSYNC_EEMPTY);
}

KTEST(ends_spsc_callbacks)
{
	struct lf_fifo_spsc_producer p;
	struct lf_fifo_spsc_consumer c;
	uint64_t out;
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 4, 8, &spsc_counting_cb), KSYNC_OK);
	ev_nonempty = ev_full = ev_nonfull = ev_empty = 0;
	KT_ASSERT_EQ(lf_fifo_open_producer_spsc(&q, &p), KSYNC_OK);
	KT_ASSERT_EQ(lf_fifo_open_consumer_spsc(&q, &c), KSYNC_OK);
	for (uint64_t v = 0; v < 2; v++) {	/* two rounds of fill and drain */
		for (uint64_t k = 0; k < 4; k++)
			KT_ASSERT_EQ(lf_fifo_put_spsc(&p, &(uint64_t){ 10 * v + k }), KSYNC_OK);
		KT_EXPECT_EQ(lf_fifo_put_spsc(&p, &out), KSYNC_EFULL);
		KT_EXPECT_EQ(p.tail, 4 * v + 4);	/* the end follows the slow path */
		for (uint64_t k = 0; k < 4; k++) {
			KT_ASSERT_EQ(lf_fifo_get_spsc(&c, &out), KSYNC_OK);
			KT_EXPECT_EQ(out, 10 * v + k);
		}
		KT_EXPECT_EQ(lf_fifo_get_spsc(&c, &out), KSYNC_EEMPTY);
		KT_EXPECT_EQ(c.head, 4 * v + 4);
	}
	KT_EXPECT_EQ(ev_nonempty, 2);
	KT_EXPECT_EQ(ev_full, 2);
	KT_EXPECT_EQ(ev_nonfull, 2);
	KT_EXPECT_EQ(ev_empty, 2);
	lf_fifo_close_producer_spsc(&p);
	lf_fifo_close_consumer_spsc(&c);
}

KTEST(ends_spsc_bad_input)
{
	struct lf_fifo_spsc_producer p;
	struct lf_fifo_spsc_consumer c;
	uint64_t v = 1;
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 8, 8, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_fifo_open_producer_spsc(NULL, &p), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_open_producer_spsc(&q, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_open_consumer_spsc(NULL, &c), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_open_consumer_spsc(&q, NULL), KSYNC_EINVAL);
	KT_ASSERT_EQ(lf_fifo_open_producer_spsc(&q, &p), KSYNC_OK);
	KT_ASSERT_EQ(lf_fifo_open_consumer_spsc(&q, &c), KSYNC_OK);
	KT_EXPECT_EQ(lf_fifo_put_spsc(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_put_spsc(&p, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_get_spsc(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_get_spsc(&c, NULL), KSYNC_EINVAL);
	lf_fifo_close_producer_spsc(NULL);
	lf_fifo_close_consumer_spsc(NULL);
	KT_EXPECT_EQ(q.p.tail, 0);		/* nothing changed */
	KT_EXPECT_EQ(q.c.head, 0);
	KT_EXPECT_EQ(p.tail, 0);
	KT_EXPECT_EQ(c.head, 0);
	KT_EXPECT_EQ(v, 1);
}

/* ---- two threads ------------------------------------------------------------------------ */
#define TOTAL 2000000ull
#define CAP 256
static _Alignas(64) unsigned char store2[CAP * 8];
static struct lf_fifo_spsc q2;

static void *producer(void *arg)
{
	(void)arg;
	struct lf_fifo_spsc_producer p;
	if (lf_fifo_open_producer_spsc(&q2, &p) != KSYNC_OK)
		return NULL;
	for (uint64_t seq = 0; seq < TOTAL;)
		if (lf_fifo_put_spsc(&p, &seq) == KSYNC_OK)
			seq++;
	lf_fifo_close_producer_spsc(&p);
	return NULL;
}

KTEST(ends_spsc_two_threads)
{
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q2, store2, sizeof store2, CAP, 8, NULL), KSYNC_OK);
	pthread_t t;
	KT_ASSERT_EQ(pthread_create(&t, NULL, producer, NULL), 0);
	struct lf_fifo_spsc_consumer c;
	KT_ASSERT_EQ(lf_fifo_open_consumer_spsc(&q2, &c), KSYNC_OK);
	uint64_t want = 0, bad = 0, v, empties = 0;
	while (want < TOTAL) {
		if (lf_fifo_get_spsc(&c, &v) != KSYNC_OK) {
			empties++;
			continue;
		}
		bad += v != want;
		want++;
	}
	pthread_join(t, NULL);
	KT_EXPECT_EQ(bad, 0);
	KT_EXPECT_EQ(want, TOTAL);
	KT_EXPECT_EQ(lf_fifo_get_spsc(&c, &v), KSYNC_EEMPTY);
	lf_fifo_close_consumer_spsc(&c);
	kt_diag(kt, "%llu elements one by one through ends, in order (%llu empty gets)",
		(unsigned long long)TOTAL, (unsigned long long)empties);
}
