/*
 * test_lf_fifo_interfere.c - interference injection between a read and the CAS that
 * depends on it (lf_fifo.h: LF_FIFO_INTERFERE / LF_FIFO_RETRY), forcing exactly one
 * retry of each CAS site of the FIFO queues, and counting it.
 *
 * The hook runs one complete conflicting operation - what another CPU would do in that
 * window (Massalin & Pu 1991: the optimistic read-compute-CAS retries when the word
 * changed) - exactly once; LF_FIFO_RETRY counts the retries.  Each case checks that
 * exactly one retry happened, that both operations succeeded, and that the queue's
 * contents and order are what the two operations in that order must leave.  A baseline
 * with a do-nothing interference must see no retry at all.
 */
#include <stdint.h>
#include <string.h>

static int armed, in_action, hits, retries;
static const char *target;
static void (*action)(void);

static void interfere(const char *site)
{
	if (!armed || in_action || strcmp(site, target) != 0)
		return;
	armed = 0;
	hits++;
	in_action = 1;
	action();
	in_action = 0;
}
#define LF_FIFO_INTERFERE(site, word, expected) interfere(#site)
#define LF_FIFO_RETRY(site) ((void)retries++)

#include <ksync/ktest.h>

#include "test_lf_fifo_flavours.h"

static _Alignas(64) unsigned char store[4096];
static union anyq q;
static const struct flavour *fl;
static uint64_t nested_out;
static int nested_result;

static void nested_enq(void)
{
	uint64_t v = 0xb;

	nested_result = fl->enq(&q, &v);
}
static void nested_deq(void)
{
	nested_result = fl->deq(&q, &nested_out);
}
static void nothing(void)
{
	nested_result = KSYNC_OK;
}

static void arm(const char *site, void (*fn)(void))
{
	target = site;
	action = fn;
	armed = 1;
	hits = 0;
	retries = 0;
	nested_result = -99;
}

static void setup(struct ktest_ctx *kt, const struct flavour *f, const uint64_t *pre, int n)
{
	fl = f;
	KT_ASSERT_EQ(f->init(&q, store, sizeof(store), 4, 8, NULL), KSYNC_OK);
	for (int i = 0; i < n; i++)
		KT_ASSERT_EQ(f->enq(&q, &pre[i]), KSYNC_OK);
}

/* Drain and compare with want[0..n). */
static void expect_contents(struct ktest_ctx *kt, const uint64_t *want, int n)
{
	uint64_t v;

	for (int i = 0; i < n; i++) {
		KT_ASSERT_EQ(fl->deq(&q, &v), KSYNC_OK);
		KT_EXPECT_EQ(v, want[i]);
	}
	KT_EXPECT_EQ(fl->deq(&q, &v), KSYNC_EEMPTY);
	/* every cell is free again: exactly `capacity` enqueues fit */
	for (int i = 0; i < 4; i++)
		KT_EXPECT_EQ(fl->enq(&q, &v), KSYNC_OK);
	KT_EXPECT_EQ(fl->enq(&q, &v), KSYNC_EFULL);
}

/* An enqueue of 0xe interfered with at `site` by a complete enqueue of 0xb. */
static void enqueue_case(struct ktest_ctx *kt, const struct flavour *f, const char *site)
{
	static const uint64_t pre[] = { 0xa }, want[] = { 0xa, 0xb, 0xe };
	uint64_t x = 0xe;

	setup(kt, f, pre, 1);
	arm(site, nested_enq);
	KT_EXPECT_EQ(fl->enq(&q, &x), KSYNC_OK);
	KT_EXPECT_EQ(hits, 1);
	KT_EXPECT_EQ(nested_result, KSYNC_OK);
	KT_EXPECT_EQ(retries, 1);	/* exactly one forced retry */
	expect_contents(kt, want, 3);
}

/* A dequeue interfered with at `site` by a complete dequeue: the nested one takes 0xa,
 * the outer one 0xb (the nested one ran first: FIFO order). */
static void dequeue_case(struct ktest_ctx *kt, const struct flavour *f, const char *site)
{
	static const uint64_t pre[] = { 0xa, 0xb, 0xc }, want[] = { 0xc };
	uint64_t x = 0;

	setup(kt, f, pre, 3);
	arm(site, nested_deq);
	KT_EXPECT_EQ(fl->deq(&q, &x), KSYNC_OK);
	KT_EXPECT_EQ(hits, 1);
	KT_EXPECT_EQ(nested_result, KSYNC_OK);
	KT_EXPECT_EQ(retries, 1);
	KT_EXPECT_EQ(nested_out, 0xa);
	KT_EXPECT_EQ(x, 0xb);
	expect_contents(kt, want, 1);
}

/* A dequeue interfered with when it returns its cell (the free ring's MP enqueue): the
 * outer dequeue already took 0xa; the nested one takes 0xb and returns its cell first. */
static void return_cell_case(struct ktest_ctx *kt, const struct flavour *f)
{
	static const uint64_t pre[] = { 0xa, 0xb, 0xc }, want[] = { 0xc };
	uint64_t x = 0;

	setup(kt, f, pre, 3);
	arm("enq_slot", nested_deq);
	KT_EXPECT_EQ(fl->deq(&q, &x), KSYNC_OK);
	KT_EXPECT_EQ(hits, 1);
	KT_EXPECT_EQ(nested_result, KSYNC_OK);
	KT_EXPECT_EQ(retries, 1);
	KT_EXPECT_EQ(x, 0xa);
	KT_EXPECT_EQ(nested_out, 0xb);
	expect_contents(kt, want, 1);
}

KTEST(lf_fifo_interfere_baseline_no_retry)
{
	for (int f = 0; f < TLF_NFLAV; f++) {
		static const uint64_t pre[] = { 1, 2 };
		uint64_t x = 3;

		setup(kt, &tlf_flavours[f], pre, 2);
		arm(f == 1 ? "spmc_head" : "enq_slot", nothing);
		KT_EXPECT_EQ(fl->enq(&q, &x), KSYNC_OK);
		arm(f == 1 ? "spmc_head" : "deq_head", nothing);
		KT_EXPECT_EQ(fl->deq(&q, &x), KSYNC_OK);
		KT_EXPECT_EQ(retries, 0);
	}
}

KTEST(lf_fifo_interfere_mpmc_enq_publish)
{
	enqueue_case(kt, &tlf_flavours[3], "enq_slot");
}

KTEST(lf_fifo_interfere_mpmc_enq_claim_cell)
{
	enqueue_case(kt, &tlf_flavours[3], "deq_head");
}

KTEST(lf_fifo_interfere_mpmc_deq_claim)
{
	dequeue_case(kt, &tlf_flavours[3], "deq_head");
}

KTEST(lf_fifo_interfere_mpmc_deq_return_cell)
{
	return_cell_case(kt, &tlf_flavours[3]);
}

KTEST(lf_fifo_interfere_mpsc_enq_publish)
{
	enqueue_case(kt, &tlf_flavours[2], "enq_slot");
}

KTEST(lf_fifo_interfere_mpsc_enq_claim_cell)
{
	enqueue_case(kt, &tlf_flavours[2], "deq_head");
}

KTEST(lf_fifo_interfere_spmc_deq_claim)
{
	dequeue_case(kt, &tlf_flavours[1], "spmc_head");
}

/* The spsc flavour and the single-consumer side of mpsc have no CAS: nothing to
 * interfere with, so the hooks never run. */
KTEST(lf_fifo_interfere_no_cas_sites)
{
	static const uint64_t pre[] = { 1 };
	uint64_t x = 2;

	setup(kt, &tlf_flavours[0], pre, 1);
	arm("enq_slot", nested_enq);
	armed = 1;
	KT_EXPECT_EQ(fl->enq(&q, &x), KSYNC_OK);
	KT_EXPECT_EQ(fl->deq(&q, &x), KSYNC_OK);
	KT_EXPECT_EQ(hits, 0);
	setup(kt, &tlf_flavours[2], pre, 1);
	arm("deq_head", nested_deq);
	KT_EXPECT_EQ(fl->deq(&q, &x), KSYNC_OK);	/* mpsc dequeue: no CAS */
	KT_EXPECT_EQ(hits, 0);
	KT_EXPECT_EQ(retries, 0);
}
