/*
 * stress_lf_fifo.c - concurrency stress of the bounded FIFO queues
 * (include/ksync/lf_fifo_{spsc,spmc,mpsc,mpmc}.h, lf_bytes_spsc.h; Massalin & Pu 1991
 * "FIFO queues", Nikolaev DISC 2019) with as many threads as each flavour allows:
 *   spsc 1 producer + 1 consumer, spmc 1 + 3, mpsc 3 + 1, mpmc 2 + 2 and 3 + 1 (and 1 + 3),
 * capacity 4 so that the full and empty paths run all the time.  KSYNC_STRESS_OPS
 * (default 400000) is the total number of operations per case: half enqueues, half
 * dequeues.  Every element carries (producer id, sequence number, a check word); the
 * consumers check:
 *   - nothing duplicated: a per-producer bitmap, set with an atomic OR, must not have
 *     the bit already set;
 *   - nothing lost: at the end every bit is set and the count matches;
 *   - FIFO per producer: each consumer sees each producer's sequence numbers increase;
 *   - no torn element: the check word matches (spmc copies speculatively).
 * The full and empty results are exercised deterministically: consumers start only
 * after a producer got KSYNC_EFULL, and every consumer's last dequeue, after all
 * elements were taken, must return KSYNC_EEMPTY.  The _cb cases install counting
 * boundary callbacks (lf_fifo.h): each event must have fired at least once (the first
 * fill, the first dequeue from full, the last dequeue are unobstructed transitions),
 * and no event can fire more often than operations succeeded.  The byte-stream case
 * moves random-sized blocks and checks every byte.  Clean under TSan without
 * suppressions.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ksync/ktest.h>
#include <ksync/lf_bytes_spsc.h>

#include "../unit/test_lf_fifo_flavours.h"
#include "stress_common.h"

#define CAP 4
#define MAXT 4

/* Spin-wait step: pause, and yield now and then so that an oversubscribed machine
 * (more runnable threads than cores) still schedules the thread that can progress. */
static void backoff(uint64_t *spins)
{
	ksync_cpu_relax();
	if ((++*spins & 63) == 0)
		sched_yield();
}

struct run {
	const struct flavour *fl;
	union anyq q;
	size_t esize;
	int np, nc;
	uint64_t per_producer;		/* elements each producer enqueues */
	uint64_t total;
	uint64_t *seen[MAXT];		/* per producer bitmap (atomic OR) */
	uint32_t go;			/* consumers may start (a producer saw EFULL) */
	uint64_t received;		/* elements taken so far (atomic add) */
	uint64_t dups, bad_order, torn, efull, eempty, final_not_empty;
	uint64_t ev[4];			/* callback counts: N E F R */
};

static _Alignas(64) unsigned char qstore[CAP * (16 + 32)];

static uint32_t check_word(uint32_t prod, uint64_t seq)
{
	return (uint32_t)(seq * 2654435761u) ^ (prod * 40503u) ^ 0x5a5a5a5au;
}

static void make_elem(unsigned char *e, size_t esize, uint32_t prod, uint64_t seq)
{
	uint32_t c = check_word(prod, seq);
	uint64_t inv = ~seq;

	memcpy(e, &prod, 4);
	memcpy(e + 4, &c, 4);
	memcpy(e + 8, &seq, 8);
	if (esize >= 24)
		memcpy(e + 16, &inv, 8);
}

static void cb_n(void *a) { ksync_fetch_add_relaxed_u64(&((struct run *)a)->ev[0], 1); }
static void cb_e(void *a) { ksync_fetch_add_relaxed_u64(&((struct run *)a)->ev[1], 1); }
static void cb_f(void *a) { ksync_fetch_add_relaxed_u64(&((struct run *)a)->ev[2], 1); }
static void cb_r(void *a) { ksync_fetch_add_relaxed_u64(&((struct run *)a)->ev[3], 1); }

struct targ {
	struct run *r;
	uint32_t id;
};

static void *producer(void *arg)
{
	struct targ *ta = arg;
	struct run *r = ta->r;
	unsigned char e[32];
	uint64_t efull = 0;

	for (uint64_t s = 0; s < r->per_producer; s++) {
		make_elem(e, r->esize, ta->id, s);
		while (r->fl->enq(&r->q, e) == KSYNC_EFULL) {
			if (efull++ == 0)
				/* release: nothing is published through it; start gate only */
				ksync_store_release_u32(&r->go, 1);
			backoff(&efull);
		}
	}
	ksync_fetch_add_relaxed_u64(&r->efull, efull);
	return NULL;
}

static void *consumer(void *arg)
{
	struct targ *ta = arg;
	struct run *r = ta->r;
	unsigned char e[32];
	int64_t last[MAXT];
	uint64_t dups = 0, bad_order = 0, torn = 0, eempty = 0, spins = 0;

	for (int p = 0; p < MAXT; p++)
		last[p] = -1;
	while (ksync_load_acquire_u32(&r->go) == 0)
		backoff(&spins);
	while (ksync_load_acquire_u64(&r->received) < r->total) {
		uint32_t prod, c;
		uint64_t seq, inv;

		if (r->fl->deq(&r->q, e) != KSYNC_OK) {
			eempty++;
			backoff(&spins);
			continue;
		}
		memcpy(&prod, e, 4);
		memcpy(&c, e + 4, 4);
		memcpy(&seq, e + 8, 8);
		if (prod >= (uint32_t)r->np || seq >= r->per_producer ||
		    c != check_word(prod, seq) ||
		    (r->esize >= 24 && (memcpy(&inv, e + 16, 8), inv != ~seq))) {
			torn++;
		} else {
			uint64_t bit = 1ull << (seq & 63);

			if (ksync_fetch_or_relaxed_u64(&r->seen[prod][seq >> 6], bit) & bit)
				dups++;
			if ((int64_t)seq <= last[prod])
				bad_order++;
			last[prod] = (int64_t)seq;
		}
		ksync_fetch_add_acq_rel_u64(&r->received, 1);
	}
	/* everything was taken: the queue must be empty now */
	if (r->fl->deq(&r->q, e) != KSYNC_EEMPTY)
		ksync_fetch_add_relaxed_u64(&r->final_not_empty, 1);
	ksync_fetch_add_relaxed_u64(&r->dups, dups);
	ksync_fetch_add_relaxed_u64(&r->bad_order, bad_order);
	ksync_fetch_add_relaxed_u64(&r->torn, torn);
	ksync_fetch_add_relaxed_u64(&r->eempty, eempty);
	return NULL;
}

static void run_case(struct ktest_ctx *kt, int flav, int np, int nc, size_t esize, bool cbs)
{
	static struct run r;
	static struct lf_fifo_callbacks cb;
	pthread_t th[2 * MAXT];
	struct targ ta[2 * MAXT];
	uint64_t ops = stress_ops(), missing = 0;
	int n = 0;

	memset(&r, 0, sizeof(r));
	r.fl = &tlf_flavours[flav];
	r.esize = esize;
	r.np = np;
	r.nc = nc;
	r.per_producer = ops / 2 / (uint64_t)np;
	r.total = r.per_producer * (uint64_t)np;
	cb = (struct lf_fifo_callbacks){ cb_n, cb_e, cb_f, cb_r, &r };
	for (int p = 0; p < np; p++) {
		r.seen[p] = calloc((size_t)(r.per_producer / 64 + 1), sizeof(uint64_t));
		KT_ASSERT(r.seen[p] != NULL);
	}
	KT_ASSERT_EQ(r.fl->init(&r.q, qstore, sizeof(qstore), CAP, esize, cbs ? &cb : NULL),
		     KSYNC_OK);
	for (int p = 0; p < np; p++, n++) {
		ta[n] = (struct targ){ &r, (uint32_t)p };
		KT_ASSERT_EQ(pthread_create(&th[n], NULL, producer, &ta[n]), 0);
	}
	for (int c = 0; c < nc; c++, n++) {
		ta[n] = (struct targ){ &r, (uint32_t)c };
		KT_ASSERT_EQ(pthread_create(&th[n], NULL, consumer, &ta[n]), 0);
	}
	for (int i = 0; i < n; i++)
		KT_ASSERT_EQ(pthread_join(th[i], NULL), 0);

	for (int p = 0; p < np; p++) {
		for (uint64_t s = 0; s < r.per_producer; s++)
			missing += !((r.seen[p][s >> 6] >> (s & 63)) & 1);
		free(r.seen[p]);
	}
	KT_EXPECT_EQ(r.received, r.total);
	KT_EXPECT_EQ(missing, 0);
	KT_EXPECT_EQ(r.dups, 0);
	KT_EXPECT_EQ(r.bad_order, 0);
	KT_EXPECT_EQ(r.torn, 0);
	KT_EXPECT(r.efull > 0);			/* the full path ran */
	KT_EXPECT_EQ(r.final_not_empty, 0);	/* and each consumer's last dequeue was empty */
	if (cbs) {
		for (int i = 0; i < 4; i++) {
			KT_EXPECT(r.ev[i] >= 1);
			KT_EXPECT(r.ev[i] <= r.total);
		}
	}
	kt_diag(kt, "%s %dP/%dC elem %zu%s: %llu elements, %llu EFULL, %llu EEMPTY; "
		"events N %llu E %llu F %llu R %llu", r.fl->name, np, nc, esize,
		cbs ? " callbacks" : "", (unsigned long long)r.total,
		(unsigned long long)r.efull, (unsigned long long)r.eempty,
		(unsigned long long)r.ev[0], (unsigned long long)r.ev[1],
		(unsigned long long)r.ev[2], (unsigned long long)r.ev[3]);
}

KTEST(stress_lf_fifo_spsc) { run_case(kt, 0, 1, 1, 16, false); }
KTEST(stress_lf_fifo_spmc_1p3c) { run_case(kt, 1, 1, 3, 16, false); }
KTEST(stress_lf_fifo_spmc_1p3c_elem24) { run_case(kt, 1, 1, 3, 24, false); }
KTEST(stress_lf_fifo_mpsc_3p1c) { run_case(kt, 2, 3, 1, 16, false); }
KTEST(stress_lf_fifo_mpmc_2p2c) { run_case(kt, 3, 2, 2, 16, false); }
KTEST(stress_lf_fifo_mpmc_3p1c) { run_case(kt, 3, 3, 1, 16, false); }
KTEST(stress_lf_fifo_mpmc_1p3c) { run_case(kt, 3, 1, 3, 24, false); }
KTEST(stress_lf_fifo_spsc_cb) { run_case(kt, 0, 1, 1, 16, true); }
KTEST(stress_lf_fifo_spmc_cb) { run_case(kt, 1, 1, 3, 16, true); }
KTEST(stress_lf_fifo_mpsc_cb) { run_case(kt, 2, 3, 1, 16, true); }
KTEST(stress_lf_fifo_mpmc_cb) { run_case(kt, 3, 2, 2, 16, true); }

/* ---- byte stream: random-sized blocks, every byte checked ------------------------------ */

static struct lf_bytes_spsc bq;
static _Alignas(64) unsigned char bstore[256];
static uint64_t stream_bytes;

static unsigned char byte_at(uint64_t pos)
{
	return (unsigned char)(pos * 7 + (pos >> 9) + (pos >> 17));
}

static void *byte_writer(void *arg)
{
	uint64_t pos = 0, rng = 777, *efull = arg;
	unsigned char blk[128];

	while (pos < stream_bytes) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = 1 + (rng >> 33) % 128;

		if (len > stream_bytes - pos)
			len = stream_bytes - pos;
		for (size_t i = 0; i < len; i++)
			blk[i] = byte_at(pos + i);
		while (lf_bytes_write_spsc(&bq, blk, len) == KSYNC_EFULL) {
			++*efull;
			backoff(efull);
		}
		pos += len;
	}
	return NULL;
}

KTEST(stress_lf_bytes_spsc)
{
	pthread_t w;
	uint64_t pos = 0, rng = 99, bad = 0, efull = 0, eempty = 0, blocks = 0;
	unsigned char blk[128];

	stream_bytes = stress_ops() / 2 * 32;	/* ops/2 blocks of 32 bytes on average */
	KT_ASSERT_EQ(lf_bytes_init_spsc(&bq, bstore, sizeof(bstore), 256, NULL), KSYNC_OK);
	KT_ASSERT_EQ(pthread_create(&w, NULL, byte_writer, &efull), 0);
	while (pos < stream_bytes) {
		size_t got = 0;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = 1 + (rng >> 33) % 128;

		if (len > stream_bytes - pos)
			len = stream_bytes - pos;
		if (rng & 1) {
			if (lf_bytes_read_spsc(&bq, blk, len) == KSYNC_OK)
				got = len;
		} else if (lf_bytes_read_some_spsc(&bq, blk, len, &got) != KSYNC_OK) {
			got = 0;
		}
		if (got == 0) {
			eempty++;
			backoff(&eempty);
			continue;
		}
		for (size_t i = 0; i < got; i++)
			bad += blk[i] != byte_at(pos + i);
		pos += got;
		blocks++;
	}
	KT_ASSERT_EQ(pthread_join(w, NULL), 0);
	KT_EXPECT_EQ(bad, 0);
	KT_EXPECT_EQ(pos, stream_bytes);
	KT_EXPECT_EQ(lf_bytes_readable_spsc(&bq), 0);
	kt_diag(kt, "%llu bytes in %llu reads; %llu EFULL, %llu EEMPTY",
		(unsigned long long)stream_bytes, (unsigned long long)blocks,
		(unsigned long long)efull, (unsigned long long)eempty);
}
