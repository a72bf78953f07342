/*
 * test_lf_fifo_spsc_word.c - the spsc ring's word forms (include/ksync/lf_fifo_spsc.h:
 * lf_fifo_enqueue_spsc_word / lf_fifo_dequeue_spsc_word: 8-byte elements by value).
 *
 * What is asserted:
 *  - spsc_word_model: random word, general and unsynchronized (__lf_fifo_*) enqueues and
 *    dequeues, mixed on one queue of 8-byte elements, against a model (capacities
 *    1..64, values over the whole 64-bit range): FIFO order and values over many
 *    wrap-arounds, KSYNC_EFULL exactly when capacity elements are in, KSYNC_EEMPTY
 *    exactly when none are (*out untouched);
 *  - spsc_word_cache_behind_head: the consumer's cached tail left behind head by the
 *    unsynchronized dequeue (which does not keep it): the word dequeue of the drained
 *    queue rereads the tail and reports KSYNC_EEMPTY (a cache test of "==" instead of
 *    "<=" would take the stale cell as an element);
 *  - spsc_word_callbacks: with callbacks installed each boundary event fires once per
 *    transition, as on the general path;
 *  - spsc_word_bad_input: NULL queue or output, and a queue whose element size is not 8:
 *    KSYNC_EINVAL, nothing changes;
 *  - spsc_word_two_threads: a producer thread and a consumer thread, 2 million values one
 *    by one: every one arrives once and in order (plain, ASan+UBSan and TSan builds: TSan
 *    checks the cell store / load against the index release / acquire).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include <ksync/ktest.h>
#include <ksync/lf_fifo_spsc.h>

#include "test_lf_fifo_spsc_util.h"

static _Alignas(64) uint64_t store[64 + 8];
static struct lf_fifo_spsc q;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

KTEST(spsc_word_model)
{
	for (uint64_t cap = 1; cap <= 64; cap *= 2) {
		uint64_t model[64], head = 0, count = 0;

		KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, cap, 8, NULL), KSYNC_OK);
		for (int op = 0; op < 40000; op++) {
			uint64_t r = spsc_rand(&rng);
			/* 0 general, 1 word, 2 unsynchronized (one thread: the exclusion) */
			int word = (int)((r >> 8) % 3), res;
			/* bias toward enqueues, then dequeues, in turns of 1000: full and empty */
			int enq = (int)(r % 100) < ((op / 1000) % 2 ? 35 : 65);

			if (enq) {
				uint64_t v = spsc_rand(&rng);

				res = word == 1 ? lf_fifo_enqueue_spsc_word(&q, v)
				    : word == 2 ? __lf_fifo_enqueue_spsc(&q, &v)
						: lf_fifo_enqueue_spsc(&q, &v);
				if (count == cap) {
					KT_EXPECT_EQ(res, KSYNC_EFULL);
				} else {
					KT_EXPECT_EQ(res, KSYNC_OK);
					model[(head + count++) % cap] = v;
				}
			} else {
				uint64_t out = 0xD00D;

				res = word == 1 ? lf_fifo_dequeue_spsc_word(&q, &out)
				    : word == 2 ? __lf_fifo_dequeue_spsc(&q, &out)
						: lf_fifo_dequeue_spsc(&q, &out);
				if (count == 0) {
					KT_EXPECT_EQ(res, KSYNC_EEMPTY);
					KT_EXPECT_EQ(out, 0xD00D);
				} else {
					KT_EXPECT_EQ(res, KSYNC_OK);
					KT_EXPECT_EQ(out, model[head]);
					head = (head + 1) % cap;
					count--;
				}
			}
			if (kt->failures) {
				kt_diag(kt, "capacity %llu, operation %d (%s)", (unsigned long long)cap,
					op, word == 1 ? "word" : word == 2 ? "unsynchronized" : "general");
				return;
			}
		}
		KT_EXPECT_EQ(q.p.tail - q.c.head, count);
	}
}

KTEST(spsc_word_cache_behind_head)
{
	uint64_t out = 0xD00D;

	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 8, 8, NULL), KSYNC_OK);
	/* the word dequeue caches tail 1 */
	KT_ASSERT_EQ(lf_fifo_enqueue_spsc_word(&q, 10), KSYNC_OK);
	KT_ASSERT_EQ(lf_fifo_dequeue_spsc_word(&q, &out), KSYNC_OK);
	KT_EXPECT_EQ(out, 10);
	/* two more in, taken by the unsynchronized dequeue: head 3, the cache still 1 */
	KT_ASSERT_EQ(lf_fifo_enqueue_spsc_word(&q, 11), KSYNC_OK);
	KT_ASSERT_EQ(lf_fifo_enqueue_spsc_word(&q, 12), KSYNC_OK);
	KT_ASSERT_EQ(__lf_fifo_dequeue_spsc(&q, &out), KSYNC_OK);
	KT_ASSERT_EQ(__lf_fifo_dequeue_spsc(&q, &out), KSYNC_OK);
	KT_EXPECT_EQ(out, 12);
	KT_EXPECT_EQ(q.c.head, 3);
	/* drained: both dequeues must say so and leave out alone */
	out = 0xD00D;
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(&q, &out), KSYNC_EEMPTY);
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc(&q, &out), KSYNC_EEMPTY);
	KT_EXPECT_EQ(out, 0xD00D);
	KT_EXPECT_EQ(q.c.head, 3);
	/* and the next element comes out as itself */
	KT_ASSERT_EQ(lf_fifo_enqueue_spsc_word(&q, 13), KSYNC_OK);
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(&q, &out), KSYNC_OK);
	KT_EXPECT_EQ(out, 13);
}

KTEST(spsc_word_callbacks)
{
	uint64_t out;

	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 4, 8, &spsc_counting_cb), KSYNC_OK);
	ev_nonempty = ev_full = ev_nonfull = ev_empty = 0;
	for (uint64_t v = 0; v < 2; v++) {	/* two rounds of fill and drain */
		for (uint64_t k = 0; k < 4; k++)
			KT_ASSERT_EQ(lf_fifo_enqueue_spsc_word(&q, 10 * v + k), KSYNC_OK);
		KT_EXPECT_EQ(lf_fifo_enqueue_spsc_word(&q, 99), KSYNC_EFULL);
		for (uint64_t k = 0; k < 4; k++) {
			KT_ASSERT_EQ(lf_fifo_dequeue_spsc_word(&q, &out), KSYNC_OK);
			KT_EXPECT_EQ(out, 10 * v + k);
		}
		KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(&q, &out), KSYNC_EEMPTY);
	}
	KT_EXPECT_EQ(ev_nonempty, 2);
	KT_EXPECT_EQ(ev_full, 2);
	KT_EXPECT_EQ(ev_nonfull, 2);
	KT_EXPECT_EQ(ev_empty, 2);
}

KTEST(spsc_word_bad_input)
{
	uint64_t v = 1;

	KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 8, 8, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_fifo_enqueue_spsc_word(NULL, 5), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(&q, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(q.p.tail, 0);
	KT_EXPECT_EQ(v, 1);
	/* element sizes other than 8, with and without callbacks: refused, untouched */
	static const size_t sizes[] = { 1, 4, 12, 16 };
	for (unsigned i = 0; i < 4; i++)
		for (int cb = 0; cb < 2; cb++) {
			KT_ASSERT_EQ(lf_fifo_init_spsc(&q, store, sizeof store, 4, sizes[i],
						       cb ? &spsc_counting_cb : NULL), KSYNC_OK);
			KT_EXPECT_EQ(lf_fifo_enqueue_spsc_word(&q, 5), KSYNC_EINVAL);
			KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(&q, &v), KSYNC_EINVAL);
			KT_EXPECT_EQ(q.p.tail, 0);
			KT_EXPECT_EQ(q.c.head, 0);
			KT_EXPECT_EQ(v, 1);
		}
}

/* ---- two threads ------------------------------------------------------------------------ */
#define TOTAL 2000000ull
#define CAP 256
static _Alignas(64) uint64_t store2[CAP];
static struct lf_fifo_spsc q2;

static void *producer(void *arg)
{
	(void)arg;
	for (uint64_t seq = 0, full = 0; seq < TOTAL;)
		if (lf_fifo_enqueue_spsc_word(&q2, seq * 0x9E3779B97F4A7C15ull) == KSYNC_OK)
			seq++;
		else if (++full % 64 == 0)
			sched_yield();	/* a busy host: let the consumer run */
	return NULL;
}

KTEST(spsc_word_two_threads)
{
	pthread_t t;
	uint64_t want = 0, bad = 0, v, empties = 0;

	KT_ASSERT_EQ(lf_fifo_init_spsc(&q2, store2, sizeof store2, CAP, 8, NULL), KSYNC_OK);
	KT_ASSERT_EQ(pthread_create(&t, NULL, producer, NULL), 0);
	while (want < TOTAL) {
		if (lf_fifo_dequeue_spsc_word(&q2, &v) != KSYNC_OK) {
			if (++empties % 64 == 0)
				sched_yield();	/* a busy host: let the producer run */
			continue;
		}
		bad += v != want * 0x9E3779B97F4A7C15ull;
		want++;
	}
	pthread_join(t, NULL);
	KT_EXPECT_EQ(bad, 0);
	KT_EXPECT_EQ(want, TOTAL);
	KT_EXPECT_EQ(lf_fifo_dequeue_spsc_word(&q2, &v), KSYNC_EEMPTY);
	kt_diag(kt, "%llu words one by one, in order (%llu empty dequeues)",
		(unsigned long long)TOTAL, (unsigned long long)empties);
}
