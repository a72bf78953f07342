/*
 * test_lf_fifo_bytes.c - the byte-stream queue (include/ksync/lf_bytes_spsc.h;
 * Massalin & Pu 1991 "FIFO queues": blocks of arbitrary size moved in one operation):
 * bad input, all-or-nothing writes and reads (KSYNC_EFULL / KSYNC_EEMPTY leave the
 * stream untouched; a block larger than the queue is KSYNC_EINVAL), wrap-around,
 * read_some, the boundary callbacks counted in bytes (exactly once per transition when
 * sequential), and a two-thread stream of random-sized blocks checked byte by byte
 * (short here; tests/stress/stress_lf_fifo.c runs it long).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include <ksync/ktest.h>
#include <ksync/lf_bytes_spsc.h>

static _Alignas(64) unsigned char store[256 + 64];
static struct lf_bytes_spsc q;

KTEST(lf_bytes_bad_input)
{
	static _Alignas(64) unsigned char pattern[sizeof(q)];
	unsigned char buf[64];
	size_t got = 7;

	KT_EXPECT_EQ(lf_bytes_storage_size_spsc(16), 16);
	KT_EXPECT_EQ(lf_bytes_storage_size_spsc(0), 0);
	KT_EXPECT_EQ(lf_bytes_storage_size_spsc(24), 0);
	KT_EXPECT_EQ(lf_bytes_storage_size_spsc((uint64_t)1 << 32), 0);

	memset(pattern, 0xA5, sizeof(pattern));
	memcpy(&q, pattern, sizeof(q));
	KT_EXPECT_EQ(lf_bytes_init_spsc(NULL, store, 16, 16, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_init_spsc(&q, store, 16, 0, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_init_spsc(&q, store, 16, 12, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_init_spsc(&q, NULL, 16, 16, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_init_spsc(&q, store + 1, 16, 16, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_init_spsc(&q, store, 15, 16, NULL), KSYNC_EINVAL);
	KT_EXPECT(memcmp(&q, pattern, sizeof(q)) == 0);

	KT_ASSERT_EQ(lf_bytes_init_spsc(&q, store, 16, 16, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_write_spsc(NULL, buf, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, NULL, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, buf, 17), KSYNC_EINVAL);	/* > capacity */
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, buf, SIZE_MAX), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, NULL, 0), KSYNC_OK);	/* nothing */
	KT_EXPECT_EQ(lf_bytes_read_spsc(NULL, buf, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, NULL, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, buf, 17), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, buf, 0), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(NULL, buf, 4, &got), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(&q, NULL, 4, &got), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(&q, buf, 4, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(&q, buf, 0, &got), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_readable_spsc(NULL), 0);
	KT_EXPECT_EQ(lf_bytes_writable_spsc(NULL), 0);
	/* none of it changed the stream */
	KT_EXPECT_EQ(lf_bytes_readable_spsc(&q), 0);
	KT_EXPECT_EQ(lf_bytes_writable_spsc(&q), 16);
}

KTEST(lf_bytes_all_or_nothing)
{
	unsigned char in[64], out[64];
	size_t got;

	for (int i = 0; i < 64; i++)
		in[i] = (unsigned char)(i + 1);
	memset(store, 0xEE, sizeof(store));
	KT_ASSERT_EQ(lf_bytes_init_spsc(&q, store, 16, 16, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in, 10), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in + 10, 7), KSYNC_EFULL);	/* 6 free */
	KT_EXPECT_EQ(lf_bytes_readable_spsc(&q), 10);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in + 10, 6), KSYNC_OK);	/* now full */
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in, 1), KSYNC_EFULL);
	KT_EXPECT_EQ(lf_bytes_writable_spsc(&q), 0);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, out, 17), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, out, 16), KSYNC_OK);
	KT_EXPECT(memcmp(out, in, 16) == 0);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, out, 1), KSYNC_EEMPTY);

	/* wrap-around: a 12-byte block from position 16 + 10 crosses the end */
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in, 10), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, out, 10), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in + 20, 12), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, out, 13), KSYNC_EEMPTY);	/* only 12 */
	KT_EXPECT_EQ(lf_bytes_readable_spsc(&q), 12);
	KT_EXPECT_EQ(lf_bytes_read_spsc(&q, out, 12), KSYNC_OK);
	KT_EXPECT(memcmp(out, in + 20, 12) == 0);

	/* read_some: whatever is there, up to max */
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(&q, out, 8, &got), KSYNC_EEMPTY);
	KT_EXPECT_EQ(got, 0);
	KT_EXPECT_EQ(lf_bytes_write_spsc(&q, in + 40, 5), KSYNC_OK);
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(&q, out, 3, &got), KSYNC_OK);
	KT_EXPECT_EQ(got, 3);
	KT_EXPECT_EQ(lf_bytes_read_some_spsc(&q, out + 3, 60, &got), KSYNC_OK);
	KT_EXPECT_EQ(got, 2);
	KT_EXPECT(memcmp(out, in + 40, 5) == 0);

	/* the storage beyond the capacity was never written */
	for (size_t i = 16; i < sizeof(store); i++)
		KT_ASSERT_EQ(store[i], 0xEE);
}

KTEST(lf_bytes_capacity_one_and_full_blocks)
{
	unsigned char b = 0x5a, o = 0;

	KT_ASSERT_EQ(lf_bytes_init_spsc(&q, store, 1, 1, NULL), KSYNC_OK);
	for (int i = 0; i < 10; i++) {
		b = (unsigned char)i;
		KT_EXPECT_EQ(lf_bytes_write_spsc(&q, &b, 1), KSYNC_OK);
		KT_EXPECT_EQ(lf_bytes_write_spsc(&q, &b, 1), KSYNC_EFULL);
		KT_EXPECT_EQ(lf_bytes_read_spsc(&q, &o, 1), KSYNC_OK);
		KT_EXPECT_EQ(o, i);
	}
	/* blocks of exactly the capacity, many times around */
	KT_ASSERT_EQ(lf_bytes_init_spsc(&q, store, 256, 256, NULL), KSYNC_OK);
	for (int r = 0; r < 20; r++) {
		unsigned char in[256], out[256];

		for (int i = 0; i < 256; i++)
			in[i] = (unsigned char)(i * 3 + r);
		KT_ASSERT_EQ(lf_bytes_write_spsc(&q, in, 7), KSYNC_OK);	/* shift the phase */
		KT_ASSERT_EQ(lf_bytes_read_spsc(&q, out, 7), KSYNC_OK);
		KT_ASSERT_EQ(lf_bytes_write_spsc(&q, in, 256), KSYNC_OK);
		KT_ASSERT_EQ(lf_bytes_read_spsc(&q, out, 256), KSYNC_OK);
		KT_ASSERT(memcmp(in, out, 256) == 0);
	}
}

/* ---- callbacks, sequential: exactly once per transition, counted in bytes ----------- */

static char evlog[4096];
static int nev;
static void e_n(void *a) { (void)a; if (nev < 4096) evlog[nev++] = 'N'; }
static void e_e(void *a) { (void)a; if (nev < 4096) evlog[nev++] = 'E'; }
static void e_f(void *a) { (void)a; if (nev < 4096) evlog[nev++] = 'F'; }
static void e_r(void *a) { (void)a; if (nev < 4096) evlog[nev++] = 'R'; }
static const struct lf_fifo_callbacks cbs = { e_n, e_e, e_f, e_r, NULL };

KTEST(lf_bytes_callbacks_sequential_exact)
{
	static char want[4096];
	int nwant = 0;
	uint64_t count = 0, rng = 12345, cap = 32;
	unsigned char in[32] = { 0 }, out[32];

	KT_ASSERT_EQ(lf_bytes_init_spsc(&q, store, cap, cap, &cbs), KSYNC_OK);
	nev = 0;
	for (int op = 0; op < 2000; op++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = 1 + (rng >> 40) % 16;
		bool wr = ((rng >> 20) % 100) < ((op / 100) % 2 ? 35u : 65u);

		if (wr) {
			int r = lf_bytes_write_spsc(&q, in, len);

			if (count + len > cap) {
				KT_ASSERT_EQ(r, KSYNC_EFULL);
				continue;
			}
			KT_ASSERT_EQ(r, KSYNC_OK);
			if (count + len == cap)
				want[nwant++] = 'F';
			if (count == 0)
				want[nwant++] = 'N';
			count += len;
		} else if (rng & 1) {
			int r = lf_bytes_read_spsc(&q, out, len);

			if (count < len) {
				KT_ASSERT_EQ(r, KSYNC_EEMPTY);
				continue;
			}
			KT_ASSERT_EQ(r, KSYNC_OK);
			if (count == len)
				want[nwant++] = 'E';
			if (count == cap)
				want[nwant++] = 'R';
			count -= len;
		} else {
			size_t got;
			int r = lf_bytes_read_some_spsc(&q, out, len, &got);

			if (count == 0) {
				KT_ASSERT_EQ(r, KSYNC_EEMPTY);
				continue;
			}
			KT_ASSERT_EQ(r, KSYNC_OK);
			KT_ASSERT_EQ(got, count < len ? count : len);
			if (count == got)
				want[nwant++] = 'E';
			if (count == cap)
				want[nwant++] = 'R';
			count -= got;
		}
		KT_ASSERT(nwant < 4090);
	}
	KT_EXPECT(nwant > 20);
	KT_EXPECT_EQ(nev, nwant);
	KT_EXPECT(memcmp(evlog, want, (size_t)nwant) == 0);
}

/* ---- two threads: a stream of random-sized blocks, checked byte by byte -------------- */

#define STREAM_BYTES 200000

static void *writer(void *arg)
{
	uint64_t pos = 0, rng = 777, spins = 0;
	unsigned char blk[64];

	(void)arg;
	while (pos < STREAM_BYTES) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = 1 + (rng >> 33) % 64;

		if (len > STREAM_BYTES - pos)
			len = STREAM_BYTES - pos;
		for (size_t i = 0; i < len; i++)
			blk[i] = (unsigned char)((pos + i) * 7 + ((pos + i) >> 9));
		while (lf_bytes_write_spsc(&q, blk, len) == KSYNC_EFULL)
			if ((++spins & 63) == 0)	/* oversubscribed machines */
				sched_yield();
		pos += len;
	}
	return NULL;
}

KTEST(lf_bytes_two_threads_stream)
{
	pthread_t w;
	uint64_t pos = 0, rng = 99, bad = 0, partial = 0, spins = 0;
	unsigned char blk[64];

	KT_ASSERT_EQ(lf_bytes_init_spsc(&q, store, 128, 128, NULL), KSYNC_OK);
	KT_ASSERT_EQ(pthread_create(&w, NULL, writer, NULL), 0);
	while (pos < STREAM_BYTES) {
		size_t got = 0;

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		size_t len = 1 + (rng >> 33) % 64;

		if (len > STREAM_BYTES - pos)
			len = STREAM_BYTES - pos;
		if (rng & 1) {
			if (lf_bytes_read_spsc(&q, blk, len) != KSYNC_OK) {
				if ((++spins & 63) == 0)
					sched_yield();
				continue;
			}
			got = len;
		} else if (lf_bytes_read_some_spsc(&q, blk, len, &got) != KSYNC_OK) {
			if ((++spins & 63) == 0)
				sched_yield();
			continue;
		} else if (got < len) {
			partial++;
		}
		for (size_t i = 0; i < got; i++)
			bad += blk[i] != (unsigned char)((pos + i) * 7 + ((pos + i) >> 9));
		pos += got;
	}
	KT_ASSERT_EQ(pthread_join(w, NULL), 0);
	KT_EXPECT_EQ(bad, 0);
	KT_EXPECT_EQ(pos, STREAM_BYTES);
	KT_EXPECT_EQ(lf_bytes_readable_spsc(&q), 0);
	kt_diag(kt, "%d bytes in random blocks; %llu partial read_some", STREAM_BYTES,
		(unsigned long long)partial);
}
