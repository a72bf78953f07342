/*
 * test_lf_fifo.c - single-threaded behaviour of the four bounded FIFO flavours
 * (include/ksync/lf_fifo_{spsc,spmc,mpsc,mpmc}.h; Massalin & Pu 1991 "FIFO queues"):
 * storage sizes, every bad input (KSYNC_EINVAL, object untouched), FIFO order over many
 * wrap-arounds for capacities 1..64 and element sizes 1..100 bytes (guard bytes after
 * the storage stay intact), full/empty results, and the boundary callbacks, which in
 * sequential use must fire exactly once per transition (checked against a model over
 * random operation sequences).  The spsc header's unsynchronized __ variants too.
 */
#include <stdint.h>
#include <string.h>

#include <ksync/ktest.h>
#include "test_lf_fifo_flavours.h"

/* ---- one interface over the flavours (test_lf_fifo_flavours.h), plus the spsc ring
 * driven through its unsynchronized variants ---------------------------------------- */

static int enq_nosync(union anyq *q, const void *e)
{
	return __lf_fifo_enqueue_spsc(&q->spsc, e);
}
static int deq_nosync(union anyq *q, void *o)
{
	return __lf_fifo_dequeue_spsc(&q->spsc, o);
}
static int enq_raw_nosync(void *q, const void *e)
{
	return __lf_fifo_enqueue_spsc(q, e);
}
static int deq_raw_nosync(void *q, void *o)
{
	return __lf_fifo_dequeue_spsc(q, o);
}

static const struct flavour flavours[] = {
	TLF_ENTRY(spsc, 1, 1, 0),
	TLF_ENTRY(spmc, 1, 0, 0),
	TLF_ENTRY(mpsc, 0, 1, 1),
	TLF_ENTRY(mpmc, 0, 0, 1),
	{ "__spsc", lf_fifo_storage_size_spsc, tlf_init_spsc, enq_nosync, deq_nosync,
	  enq_raw_nosync, deq_raw_nosync, 1, 1, 0 },
};
#define NFLAV (sizeof(flavours) / sizeof(flavours[0]))

/* Storage for every case: the largest queue below (64 cells x 100 bytes + rings) plus
 * guard bytes. */
#define STORE_MAX (64 * 100 + 64 * 16)
#define GUARD 64
static _Alignas(64) unsigned char store[STORE_MAX + GUARD];
static union anyq the_q;

static void fill_elem(unsigned char *e, size_t esize, uint64_t seq)
{
	for (size_t i = 0; i < esize; i++)
		e[i] = (unsigned char)(seq * 131 + i * 7 + (seq >> 8));
}

static bool elem_is(const unsigned char *e, size_t esize, uint64_t seq)
{
	unsigned char want[128];

	fill_elem(want, esize, seq);
	return memcmp(e, want, esize) == 0;
}

static bool guard_ok(size_t from)
{
	for (size_t i = from; i < STORE_MAX + GUARD; i++)
		if (store[i] != 0xEE)
			return false;
	return true;
}

/* ---- storage sizes and bad input -------------------------------------------------------- */

KTEST(lf_fifo_storage_size)
{
	KT_EXPECT_EQ(lf_fifo_storage_size_spsc(4, 8), 32);
	KT_EXPECT_EQ(lf_fifo_storage_size_spmc(1, 3), 3);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpsc(4, 8), 4 * 16 + 32);
	KT_EXPECT_EQ(lf_fifo_storage_size_mpmc(64, 100), 64 * 16 + 6400);
	for (size_t f = 0; f < NFLAV; f++) {
		const struct flavour *fl = &flavours[f];

		KT_EXPECT_EQ(fl->size(0, 8), 0);			/* capacity 0 */
		KT_EXPECT_EQ(fl->size(3, 8), 0);			/* not a power of two */
		KT_EXPECT_EQ(fl->size(48, 8), 0);
		KT_EXPECT_EQ(fl->size((uint64_t)1 << 32, 8), 0);	/* too large */
		KT_EXPECT_EQ(fl->size(UINT64_MAX, 8), 0);
		KT_EXPECT_EQ(fl->size(4, 0), 0);			/* element size 0 */
		KT_EXPECT_EQ(fl->size(LF_FIFO_MAX_CAPACITY, SIZE_MAX / 1024), 0); /* overflow */
		KT_EXPECT(fl->size(LF_FIFO_MAX_CAPACITY, 1) >= LF_FIFO_MAX_CAPACITY);
		KT_EXPECT(fl->size(1, 1) >= 1);
	}
}

KTEST(lf_fifo_init_bad_input)
{
	static _Alignas(64) unsigned char pattern[sizeof(union anyq)];

	memset(pattern, 0xA5, sizeof(pattern));
	for (size_t f = 0; f < NFLAV; f++) {
		const struct flavour *fl = &flavours[f];
		size_t need = fl->size(4, 8);

		memcpy(&the_q, pattern, sizeof(the_q));
		KT_EXPECT_EQ(fl->init(NULL, store, need, 4, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, need, 0, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, need, 3, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, need, 6, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, STORE_MAX, (uint64_t)1 << 32, 8, NULL),
			     KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, need, 4, 0, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, SIZE_MAX, LF_FIFO_MAX_CAPACITY,
				      SIZE_MAX / 1024, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, NULL, need, 4, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store + 4, need, 4, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, need - 1, 4, 8, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->init(&the_q, store, 0, 4, 8, NULL), KSYNC_EINVAL);
		/* none of them wrote to the object */
		KT_EXPECT(memcmp(&the_q, pattern, sizeof(the_q)) == 0);
		/* the exact size is enough */
		KT_EXPECT_EQ(fl->init(&the_q, store, need, 4, 8, NULL), KSYNC_OK);
	}
}

KTEST(lf_fifo_op_bad_input)
{
	for (size_t f = 0; f < NFLAV; f++) {
		const struct flavour *fl = &flavours[f];
		uint64_t x = 42, y = 0;

		KT_ASSERT_EQ(fl->init(&the_q, store, STORE_MAX, 2, 8, NULL), KSYNC_OK);
		KT_EXPECT_EQ(fl->enq_raw(NULL, &x), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->enq(&the_q, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->deq_raw(NULL, &y), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->deq(&the_q, NULL), KSYNC_EINVAL);	/* on an empty queue */
		KT_EXPECT_EQ(fl->enq(&the_q, &x), KSYNC_OK);
		KT_EXPECT_EQ(fl->deq(&the_q, NULL), KSYNC_EINVAL);	/* element stays */
		KT_EXPECT_EQ(fl->enq(&the_q, NULL), KSYNC_EINVAL);
		KT_EXPECT_EQ(fl->deq(&the_q, &y), KSYNC_OK);
		KT_EXPECT_EQ(y, 42);
		KT_EXPECT_EQ(fl->deq(&the_q, &y), KSYNC_EEMPTY);
	}
}

/* ---- FIFO order, full, empty, element sizes, capacities --------------------------------- */

static void sequential_case(struct ktest_ctx *kt, const struct flavour *fl, uint64_t cap,
			    size_t esize)
{
	unsigned char e[128], o[128];
	uint64_t next_in = 0, next_out = 0, i;
	size_t need = fl->size(cap, esize);

	KT_ASSERT(need > 0 && need <= STORE_MAX);
	memset(store, 0xEE, sizeof(store));
	KT_ASSERT_EQ(fl->init(&the_q, store, need, cap, esize, NULL), KSYNC_OK);

	/* empty, then exactly `cap` fit, then full */
	KT_EXPECT_EQ(fl->deq(&the_q, o), KSYNC_EEMPTY);
	for (i = 0; i < cap; i++) {
		fill_elem(e, esize, next_in);
		KT_ASSERT_EQ(fl->enq(&the_q, e), KSYNC_OK);
		next_in++;
	}
	fill_elem(e, esize, 999999);
	KT_EXPECT_EQ(fl->enq(&the_q, e), KSYNC_EFULL);
	for (i = 0; i < cap; i++) {
		KT_ASSERT_EQ(fl->deq(&the_q, o), KSYNC_OK);
		KT_EXPECT(elem_is(o, esize, next_out));
		next_out++;
	}
	KT_EXPECT_EQ(fl->deq(&the_q, o), KSYNC_EEMPTY);

	/* many wrap-arounds with a varying fill level */
	for (i = 0; i < 12 * cap + 7; i++) {
		unsigned burst = (unsigned)(1 + (i * 7) % cap);

		for (unsigned b = 0; b < burst; b++) {
			fill_elem(e, esize, next_in);
			if (fl->enq(&the_q, e) == KSYNC_OK)
				next_in++;
			else
				KT_ASSERT_EQ(next_in - next_out, cap);
		}
		burst = (unsigned)(1 + (i * 5) % cap);
		for (unsigned b = 0; b < burst; b++) {
			int r = fl->deq(&the_q, o);

			if (r == KSYNC_OK) {
				KT_ASSERT(elem_is(o, esize, next_out));
				next_out++;
			} else {
				KT_ASSERT_EQ(r, KSYNC_EEMPTY);
				KT_ASSERT_EQ(next_in, next_out);
			}
		}
	}
	while (fl->deq(&the_q, o) == KSYNC_OK) {
		KT_EXPECT(elem_is(o, esize, next_out));
		next_out++;
	}
	KT_EXPECT_EQ(next_in, next_out);
	KT_EXPECT(next_in > 6 * cap);
	KT_EXPECT(guard_ok(need));
}

KTEST(lf_fifo_sequential_sizes)
{
	static const uint64_t caps[] = { 1, 2, 4, 8, 64 };
	static const size_t sizes[] = { 1, 2, 3, 4, 5, 7, 8, 12, 16, 24, 100 };

	for (size_t f = 0; f < NFLAV; f++)
		for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++)
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				int before = kt->failures;

				sequential_case(kt, &flavours[f], caps[c], sizes[s]);
				if (kt->failures != before) {
					kt_diag(kt, "%s capacity %llu element size %zu",
						flavours[f].name, (unsigned long long)caps[c],
						sizes[s]);
					return;
				}
			}
}

/* The element copy must not depend on the caller's buffer alignment. */
KTEST(lf_fifo_unaligned_user_buffers)
{
	for (size_t f = 0; f < NFLAV; f++) {
		_Alignas(16) unsigned char in[40], out[40];

		KT_ASSERT_EQ(flavours[f].init(&the_q, store, STORE_MAX, 4, 16, NULL), KSYNC_OK);
		for (unsigned k = 0; k < 16; k++)
			in[1 + k] = (unsigned char)(k * 17 + 3);
		KT_ASSERT_EQ(flavours[f].enq(&the_q, in + 1), KSYNC_OK);
		KT_ASSERT_EQ(flavours[f].deq(&the_q, out + 3), KSYNC_OK);
		KT_EXPECT(memcmp(in + 1, out + 3, 16) == 0);
	}
}

/* ---- boundary callbacks, sequential: exactly once per transition ------------------------ */

#define LOG_MAX 8192
static struct {
	char ev[LOG_MAX];	/* 'N' nonempty, 'E' empty, 'F' full, 'R' nonfull (room) */
	int n;
} cblog;

static void cb_nonempty(void *arg)
{
	(void)arg;
	if (cblog.n < LOG_MAX)
		cblog.ev[cblog.n++] = 'N';
}
static void cb_empty(void *arg)
{
	(void)arg;
	if (cblog.n < LOG_MAX)
		cblog.ev[cblog.n++] = 'E';
}
static void cb_full(void *arg)
{
	(void)arg;
	if (cblog.n < LOG_MAX)
		cblog.ev[cblog.n++] = 'F';
}
static void cb_nonfull(void *arg)
{
	(void)arg;
	if (cblog.n < LOG_MAX)
		cblog.ev[cblog.n++] = 'R';
}

static const struct lf_fifo_callbacks all_cbs = { cb_nonempty, cb_empty, cb_full,
						  cb_nonfull, NULL };

static void callbacks_case(struct ktest_ctx *kt, const struct flavour *fl, uint64_t cap)
{
	static char want[LOG_MAX];
	int nwant = 0;
	uint64_t count = 0, seq = 0, rng = 0x9e3779b97f4a7c15ull ^ cap;
	uint64_t x, y;

	KT_ASSERT_EQ(fl->init(&the_q, store, STORE_MAX, cap, 8, &all_cbs), KSYNC_OK);
	cblog.n = 0;
	for (int op = 0; op < 3000; op++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		/* drift towards full for a while, then towards empty */
		bool enq = ((rng >> 33) % 100) < ((op / 200) % 2 ? 30u : 70u);

		if (enq) {
			x = seq;
			int r = fl->enq(&the_q, &x);

			if (count == cap) {
				KT_ASSERT_EQ(r, KSYNC_EFULL);
				continue;
			}
			KT_ASSERT_EQ(r, KSYNC_OK);
			seq++;
			count++;
			if (count == cap)
				want[nwant++] = 'F';
			if (count == 1)
				want[nwant++] = 'N';
		} else {
			int r = fl->deq(&the_q, &y);

			if (count == 0) {
				KT_ASSERT_EQ(r, KSYNC_EEMPTY);
				continue;
			}
			KT_ASSERT_EQ(r, KSYNC_OK);
			KT_ASSERT_EQ(y, seq - count);
			count--;
			if (count == 0)
				want[nwant++] = 'E';
			if (count == cap - 1)
				want[nwant++] = 'R';
		}
		KT_ASSERT(nwant < LOG_MAX - 4);
	}
	KT_EXPECT(nwant > 10);
	KT_EXPECT_EQ(cblog.n, nwant);
	KT_EXPECT(memcmp(cblog.ev, want, (size_t)nwant) == 0);
}

KTEST(lf_fifo_callbacks_sequential_exact)
{
	static const uint64_t caps[] = { 1, 2, 4, 8 };

	for (size_t f = 0; f < NFLAV; f++)
		for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
			int before = kt->failures;

			callbacks_case(kt, &flavours[f], caps[c]);
			if (kt->failures != before) {
				kt_diag(kt, "%s capacity %llu", flavours[f].name,
					(unsigned long long)caps[c]);
				return;
			}
		}
}

/* Any callback member may be NULL; failing operations fire nothing. */
KTEST(lf_fifo_callbacks_partial)
{
	static const struct lf_fifo_callbacks only_full = { NULL, NULL, cb_full, NULL, NULL };

	for (size_t f = 0; f < NFLAV; f++) {
		uint64_t x = 1;

		KT_ASSERT_EQ(flavours[f].init(&the_q, store, STORE_MAX, 2, 8, &only_full),
			     KSYNC_OK);
		cblog.n = 0;
		KT_EXPECT_EQ(flavours[f].deq(&the_q, &x), KSYNC_EEMPTY);
		KT_EXPECT_EQ(flavours[f].enq(&the_q, &x), KSYNC_OK);
		KT_EXPECT_EQ(cblog.n, 0);
		KT_EXPECT_EQ(flavours[f].enq(&the_q, &x), KSYNC_OK);
		KT_EXPECT_EQ(cblog.n, 1);
		KT_EXPECT_EQ(flavours[f].enq(&the_q, &x), KSYNC_EFULL);
		KT_EXPECT_EQ(flavours[f].deq(&the_q, &x), KSYNC_OK);
		KT_EXPECT_EQ(flavours[f].deq(&the_q, &x), KSYNC_OK);
		KT_EXPECT_EQ(cblog.n, 1);
		KT_EXPECT(cblog.ev[0] == 'F');
	}
}

/* The callback's argument is passed through. */
static int arg_hits;
static void cb_arg(void *arg)
{
	if (arg == &arg_hits)
		arg_hits++;
}

KTEST(lf_fifo_callbacks_arg)
{
	static const struct lf_fifo_callbacks cbs = { cb_arg, cb_arg, cb_arg, cb_arg, &arg_hits };
	uint64_t x = 5;

	KT_ASSERT_EQ(lf_fifo_init_mpmc(&the_q.mpmc, store, STORE_MAX, 1, 8, &cbs), KSYNC_OK);
	arg_hits = 0;
	KT_EXPECT_EQ(lf_fifo_enqueue_mpmc(&the_q.mpmc, &x), KSYNC_OK);	/* full, nonempty */
	KT_EXPECT_EQ(lf_fifo_dequeue_mpmc(&the_q.mpmc, &x), KSYNC_OK);	/* empty, nonfull */
	KT_EXPECT_EQ(arg_hits, 4);
}

/* The unsynchronized spsc variants mixed with the synchronized ones on one queue (under
 * the caller's exclusion: here, one thread): the private index copies stay valid. */
KTEST(lf_fifo_spsc_nosync_mix)
{
	struct lf_fifo_spsc *q = &the_q.spsc;
	uint64_t in = 0, out = 0, x;

	KT_ASSERT_EQ(lf_fifo_init_spsc(q, store, STORE_MAX, 4, 8, NULL), KSYNC_OK);
	for (int round = 0; round < 50; round++) {
		for (int k = 0; k < round % 5; k++) {
			x = in;
			int r = (round & 1) ? __lf_fifo_enqueue_spsc(q, &x) : lf_fifo_enqueue_spsc(q, &x);

			if (r == KSYNC_OK)
				in++;
			else
				KT_ASSERT(r == KSYNC_EFULL && in - out == 4);
		}
		for (int k = 0; k < (round * 3) % 5; k++) {
			int r = (round & 2) ? __lf_fifo_dequeue_spsc(q, &x) : lf_fifo_dequeue_spsc(q, &x);

			if (r == KSYNC_OK) {
				KT_ASSERT_EQ(x, out);
				out++;
			} else {
				KT_ASSERT(r == KSYNC_EEMPTY && in == out);
			}
		}
	}
	KT_EXPECT(in > 20);
}
