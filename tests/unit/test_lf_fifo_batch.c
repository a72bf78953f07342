/*
 * test_lf_fifo_batch.c - the spsc ring's batch operations (include/ksync/lf_fifo_spsc.h:
 * lf_fifo_enqueue_burst_spsc / lf_fifo_dequeue_burst_spsc, issue 13 item 2): n elements
 * published by one index store.
 *
 * What is asserted:
 *  - batch_spsc_order_and_wrap: random batch sizes on both sides, capacities 1..64,
 *    element sizes 1, 8, 12 and 100 bytes: FIFO order and contents over many
 *    wrap-arounds, partial batches exactly as much as fits / as is there, KSYNC_EFULL and
 *    KSYNC_EEMPTY with *done = 0 and the queue unchanged, single-element operations
 *    interleaved with batches on the same ring;
 *  - batch_spsc_one_publication: a batch is visible all at once - after a batch of k the
 *    shared tail moved by exactly k (one store), and a consumer that read the tail before
 *    it sees none of them;
 *  - batch_spsc_callbacks: with callbacks installed the batch fires each boundary event as
 *    the single-element path does (nonempty once, full once, nonfull, empty);
 *  - batch_spsc_bad_input: NULL queue / buffer / count, n == 0, n > capacity:
 *    KSYNC_EINVAL and nothing changes;
 *  - batch_spsc_two_threads: a producer and a consumer thread, random batch sizes, 2
 *    million tagged elements: every element arrives once, in order (run under plain,
 *    ASan+UBSan and TSan by the hosted build).
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

static uint64_t rng = 88172645463325252ull;

KTEST(batch_spsc_order_and_wrap)
{
	static const size_t sizes[] = { 1, 8, 12, 100 };
	static unsigned char in[64 * 100], out[64 * 100 + 1];
	for (unsigned si = 0; si < 4; si++) {
		size_t es = sizes[si];
		for (uint64_t cap = 1; cap <= 64; cap *= 2) {
			KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, cap, es, NULL), KSYNC_OK);
			uint64_t wseq = 0, rseq = 0;
			for (int round = 0; round < 400; round++) {
				size_t n = 1 + spsc_rand(&rng) % cap, done = 99;
				if (spsc_rand(&rng) % 4 == 0) {	/* a single element now and then */
					spsc_fill(in, es, wseq);
					int r = lf_fifo_enqueue_spsc(&q, in);
					KT_ASSERT(r == KSYNC_OK || r == KSYNC_EFULL);
					if (r == KSYNC_OK)
						wseq++;
					else
						KT_EXPECT_EQ(wseq - rseq, cap);
				} else {
					for (size_t k = 0; k < n; k++)
						spsc_fill(in + k * es, es, wseq + k);
					int r = lf_fifo_enqueue_burst_spsc(&q, in, n, &done);
					uint64_t room = cap - (wseq - rseq);
					if (room == 0) {
						KT_ASSERT_EQ(r, KSYNC_EFULL);
						KT_ASSERT_EQ(done, 0);
					} else {
						KT_ASSERT_EQ(r, KSYNC_OK);
						KT_ASSERT_EQ(done, n < room ? n : room);
					}
					wseq += done;
				}
				n = 1 + spsc_rand(&rng) % cap;
				done = 99;
				memset(out, 0xee, sizeof out);
				int r = lf_fifo_dequeue_burst_spsc(&q, out, n, &done);
				uint64_t avail = wseq - rseq;
				if (avail == 0) {
					KT_ASSERT_EQ(r, KSYNC_EEMPTY);
					KT_ASSERT_EQ(done, 0);
					KT_EXPECT_EQ(out[0], 0xee);	/* untouched */
				} else {
					KT_ASSERT_EQ(r, KSYNC_OK);
					KT_ASSERT_EQ(done, n < avail ? n : avail);
					for (size_t k = 0; k < done; k++)
						KT_ASSERT(spsc_is(out + k * es, es, rseq + k));
					KT_EXPECT_EQ(out[done * es], 0xee);	/* nothing past the batch */
				}
				rseq += done;
			}
			/* drain by single dequeues: the rest, in order, then empty */
			KT_ASSERT(spsc_drain_in_order(&q, out, es, rseq, wseq));
		}
	}
}

KTEST(batch_spsc_one_publication)
{
	uint64_t in[16], out[16];
	size_t done;
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 16, 8, NULL), KSYNC_OK);
	for (int i = 0; i < 16; i++)
		in[i] = 1000 + (uint64_t)i;
	uint64_t t0 = q.p.tail;
	KT_ASSERT_EQ(lf_fifo_enqueue_burst_spsc(&q, in, 5, &done), KSYNC_OK);
	KT_EXPECT_EQ(done, 5);
	KT_EXPECT_EQ(q.p.tail - t0, 5);		/* one store moved it by the whole batch */
	KT_ASSERT_EQ(lf_fifo_enqueue_burst_spsc(&q, in + 5, 16, &done), KSYNC_OK);
	KT_EXPECT_EQ(done, 11);			/* as much as fits */
	KT_EXPECT_EQ(lf_fifo_enqueue_burst_spsc(&q, in, 1, &done), KSYNC_EFULL);
	KT_EXPECT_EQ(done, 0);
	uint64_t h0 = q.c.head;
	KT_ASSERT_EQ(lf_fifo_dequeue_burst_spsc(&q, out, 16, &done), KSYNC_OK);
	KT_EXPECT_EQ(done, 16);
	KT_EXPECT_EQ(q.c.head - h0, 16);
	for (int i = 0; i < 16; i++)
		KT_EXPECT_EQ(out[i], 1000 + (uint64_t)i);
}

KTEST(batch_spsc_callbacks)
{
	uint64_t in[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, out[8];
	size_t done;
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 8, 8, &spsc_counting_cb), KSYNC_OK);
	ev_nonempty = ev_full = ev_nonfull = ev_empty = 0;
	KT_ASSERT_EQ(lf_fifo_enqueue_burst_spsc(&q, in, 8, &done), KSYNC_OK);
	KT_EXPECT_EQ(done, 8);
	KT_EXPECT_EQ(ev_nonempty, 1);
	KT_EXPECT_EQ(ev_full, 1);
	KT_ASSERT_EQ(lf_fifo_dequeue_burst_spsc(&q, out, 8, &done), KSYNC_OK);
	KT_EXPECT_EQ(done, 8);
	KT_EXPECT_EQ(ev_nonfull, 1);
	KT_EXPECT_EQ(ev_empty, 1);
	for (int i = 0; i < 8; i++)
		KT_EXPECT_EQ(out[i], in[i]);
}

KTEST(batch_spsc_bad_input)
{
	uint64_t buf[8] = { 0 };
	size_t done = 7;
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 8, 8, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_fifo_enqueue_burst_spsc(NULL, buf, 1, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_enqueue_burst_spsc(&q, NULL, 1, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_enqueue_burst_spsc(&q, buf, 1, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_enqueue_burst_spsc(&q, buf, 0, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_enqueue_burst_spsc(&q, buf, 9, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_burst_spsc(NULL, buf, 1, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_burst_spsc(&q, NULL, 1, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_burst_spsc(&q, buf, 1, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_burst_spsc(&q, buf, 0, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_burst_spsc(&q, buf, 9, &done), KSYNC_EINVAL);
	KT_EXPECT_EQ(done, 7);				/* untouched by bad input */
	KT_EXPECT_EQ(q.p.tail, 0);
	KT_EXPECT_EQ(q.c.head, 0);
}

/* ---- two threads ------------------------------------------------------------------------ */
#define TOTAL 2000000ull
#define CAP 256
static _Alignas(64) unsigned char store2[CAP * 8];
static struct lf_fifo_spsc q2;

static void *producer(void *arg)
{
	(void)arg;
	uint64_t seq = 0, s = 12345, buf[64];
	while (seq < TOTAL) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = 1 + (size_t)((s >> 33) % 64), done = 0;
		if (n > TOTAL - seq)
			n = (size_t)(TOTAL - seq);
		for (size_t k = 0; k < n; k++)
			buf[k] = seq + k;
		if (lf_fifo_enqueue_burst_spsc(&q2, buf, n, &done) == KSYNC_OK)
			seq += done;
	}
	return NULL;
}

KTEST(batch_spsc_two_threads)
{
	KT_ASSERT_EQ(lf_fifo_init_spsc(&q2, store2, sizeof store2, CAP, 8, NULL), KSYNC_OK);
	pthread_t p;
	KT_ASSERT_EQ(pthread_create(&p, NULL, producer, NULL), 0);
	uint64_t want = 0, bad = 0, s = 999, buf[64];
	while (want < TOTAL) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		size_t n = 1 + (size_t)((s >> 33) % 64), done = 0;
		if (lf_fifo_dequeue_burst_spsc(&q2, buf, n, &done) != KSYNC_OK)
			continue;
		for (size_t k = 0; k < done; k++)
			bad += buf[k] != want + k;
		want += done;
	}
	pthread_join(p, NULL);
	KT_EXPECT_EQ(bad, 0);
	KT_EXPECT_EQ(want, TOTAL);
	size_t done = 9;
	KT_EXPECT_EQ(lf_fifo_dequeue_burst_spsc(&q2, buf, 1, &done), KSYNC_EEMPTY);
	kt_diag(kt, "%llu elements in random batches of 1..64, in order", (unsigned long long)TOTAL);
}
