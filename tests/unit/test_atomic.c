/*
 * test_atomic.c - hosted tests of include/ksync/atomic.h: the value semantics of each
 * wrapper family (single-threaded), ksync_cas128/ksync_load128, and multi-threaded
 * stress of cas128 on a {counter, counter * 3} pair that must stay consistent and end
 * exactly at threads * iterations.  Clean under TSan without suppressions.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/ktest.h>
#include <ksync/platform.h>

KTEST(atomic_load_store)
{
	uint8_t b = 0;
	uint32_t w = 0;
	uint64_t q = 0;
	int x = 0, y = 0;
	void *ptr = NULL;

	ksync_store_relaxed_u8(&b, 0xab);
	KT_EXPECT_EQ(ksync_load_relaxed_u8(&b), 0xab);
	ksync_store_release_u8(&b, 0xcd);
	KT_EXPECT_EQ(ksync_load_acquire_u8(&b), 0xcd);
	ksync_store_seq_cst_u8(&b, 0xef);
	KT_EXPECT_EQ(ksync_load_seq_cst_u8(&b), 0xef);

	ksync_store_relaxed_u32(&w, 0x89abcdefu);
	KT_EXPECT_EQ(ksync_load_relaxed_u32(&w), 0x89abcdefu);
	ksync_store_release_u32(&w, 7);
	KT_EXPECT_EQ(ksync_load_acquire_u32(&w), 7);
	ksync_store_seq_cst_u32(&w, 8);
	KT_EXPECT_EQ(ksync_load_seq_cst_u32(&w), 8);

	ksync_store_relaxed_u64(&q, 0x0123456789abcdefull);
	KT_EXPECT_EQ(ksync_load_relaxed_u64(&q), 0x0123456789abcdefull);
	ksync_store_release_u64(&q, UINT64_MAX);
	KT_EXPECT(ksync_load_acquire_u64(&q) == UINT64_MAX);
	ksync_store_seq_cst_u64(&q, 1ull << 63);
	KT_EXPECT(ksync_load_seq_cst_u64(&q) == 1ull << 63);

	ksync_store_relaxed_ptr(&ptr, &x);
	KT_EXPECT(ksync_load_relaxed_ptr(&ptr) == &x);
	ksync_store_release_ptr(&ptr, &y);
	KT_EXPECT(ksync_load_acquire_ptr(&ptr) == &y);
	ksync_store_seq_cst_ptr(&ptr, NULL);
	KT_EXPECT(ksync_load_seq_cst_ptr(&ptr) == NULL);
}

KTEST(atomic_exchange)
{
	uint8_t b = 1;
	uint32_t w = 2;
	uint64_t q = 3;
	int x, y;
	int *ptr = &x;

	KT_EXPECT_EQ(ksync_exchange_relaxed_u8(&b, 10), 1);
	KT_EXPECT_EQ(ksync_exchange_acquire_u8(&b, 11), 10);
	KT_EXPECT_EQ(b, 11);
	KT_EXPECT_EQ(ksync_exchange_release_u32(&w, 20), 2);
	KT_EXPECT_EQ(ksync_exchange_acq_rel_u32(&w, 21), 20);
	KT_EXPECT_EQ(w, 21);
	KT_EXPECT_EQ(ksync_exchange_seq_cst_u64(&q, 1ull << 40), 3);
	KT_EXPECT(q == 1ull << 40);
	/* a typed pointer variable, passed without casts */
	KT_EXPECT(ksync_exchange_acq_rel_ptr(&ptr, &y) == &x);
	KT_EXPECT(ptr == &y);
}

KTEST(atomic_cas)
{
	uint64_t q = 5, e;
	uint32_t w = 9, ew;
	uint8_t b = 200, eb;
	int x, y, z;
	int *ptr = &x, *ep;

	/* success: stores desired, leaves expected alone */
	e = 5;
	KT_EXPECT(ksync_cas_strong_seq_cst_u64(&q, &e, 6));
	KT_EXPECT_EQ(q, 6);
	KT_EXPECT_EQ(e, 5);
	/* failure: leaves *p alone, copies it into expected */
	e = 5;
	KT_EXPECT(!ksync_cas_strong_acq_rel_u64(&q, &e, 7));
	KT_EXPECT_EQ(q, 6);
	KT_EXPECT_EQ(e, 6);
	/* each order compiles and behaves the same single-threaded */
	KT_EXPECT(ksync_cas_strong_relaxed_u64(&q, &e, 7));
	e = 7;
	KT_EXPECT(ksync_cas_strong_acquire_u64(&q, &e, 8));
	e = 8;
	KT_EXPECT(ksync_cas_strong_release_u64(&q, &e, 9));
	KT_EXPECT_EQ(q, 9);

	/* weak: may fail spuriously, so loop; must end with the swap done */
	e = ksync_load_relaxed_u64(&q);
	while (!ksync_cas_weak_acq_rel_u64(&q, &e, e + 100))
		;
	KT_EXPECT_EQ(q, 109);
	e = 0;
	KT_EXPECT(!ksync_cas_weak_relaxed_u64(&q, &e, 1));	/* q != 0: must fail */
	KT_EXPECT_EQ(e, 109);

	ew = 9;
	KT_EXPECT(ksync_cas_strong_release_u32(&w, &ew, 10));
	ew = 9;
	KT_EXPECT(!ksync_cas_weak_seq_cst_u32(&w, &ew, 11));
	KT_EXPECT_EQ(ew, 10);
	eb = 200;
	KT_EXPECT(ksync_cas_strong_acquire_u8(&b, &eb, 201));
	KT_EXPECT_EQ(b, 201);

	ep = &x;
	KT_EXPECT(ksync_cas_strong_acq_rel_ptr(&ptr, &ep, &y));
	KT_EXPECT(ptr == &y && ep == &x);
	ep = &z;
	KT_EXPECT(!ksync_cas_strong_seq_cst_ptr(&ptr, &ep, &x));
	KT_EXPECT(ptr == &y && ep == &y);
	ep = &y;
	while (!ksync_cas_weak_release_ptr(&ptr, &ep, &z))
		;
	KT_EXPECT(ptr == &z);
}

KTEST(atomic_fetch_ops)
{
	uint64_t q = 10;
	uint32_t w = 0xf0;
	uint8_t b = 255;

	KT_EXPECT_EQ(ksync_fetch_add_relaxed_u64(&q, 5), 10);
	KT_EXPECT_EQ(ksync_fetch_sub_acquire_u64(&q, 3), 15);
	KT_EXPECT_EQ(ksync_fetch_or_release_u64(&q, 0x100), 12);
	KT_EXPECT_EQ(ksync_fetch_and_acq_rel_u64(&q, 0x10c), 0x10c);
	KT_EXPECT_EQ(ksync_fetch_add_seq_cst_u64(&q, 0), 0x10c);
	KT_EXPECT_EQ(q, 0x10c);

	KT_EXPECT_EQ(ksync_fetch_or_seq_cst_u32(&w, 0x0f), 0xf0);
	KT_EXPECT_EQ(ksync_fetch_and_relaxed_u32(&w, 0x3c), 0xff);
	KT_EXPECT_EQ(w, 0x3c);
	/* wraps modulo 2^8 */
	KT_EXPECT_EQ(ksync_fetch_add_acq_rel_u8(&b, 2), 255);
	KT_EXPECT_EQ(b, 1);
	KT_EXPECT_EQ(ksync_fetch_sub_release_u8(&b, 2), 1);
	KT_EXPECT_EQ(b, 255);
}

KTEST(atomic_fences)
{
	/* They only need to compile to the documented instructions and return. */
	ksync_fence_acquire();
	ksync_fence_release();
	ksync_fence_acq_rel();
	ksync_fence_seq_cst();
	ksync_compiler_barrier();
	KT_EXPECT(1);
}

KTEST(atomic_cas128_single)
{
	struct ksync_u128 v = { 1, 2 }, e, d = { 3, 4 }, r;

	KT_ASSERT_EQ((uintptr_t)&v % 16, 0);
	e = (struct ksync_u128){ 1, 2 };
	KT_EXPECT(ksync_cas128(&v, &e, d));
	KT_EXPECT(v.lo == 3 && v.hi == 4);
	KT_EXPECT(e.lo == 1 && e.hi == 2);	/* untouched on success */

	/* failure when only one half differs, in either half: expected <- current */
	e = (struct ksync_u128){ 3, 5 };
	KT_EXPECT(!ksync_cas128(&v, &e, (struct ksync_u128){ 7, 7 }));
	KT_EXPECT(e.lo == 3 && e.hi == 4);
	e = (struct ksync_u128){ 0, 4 };
	KT_EXPECT(!ksync_cas128(&v, &e, (struct ksync_u128){ 7, 7 }));
	KT_EXPECT(e.lo == 3 && e.hi == 4);
	KT_EXPECT(v.lo == 3 && v.hi == 4);

	/* full 64-bit halves */
	e = v;
	KT_EXPECT(ksync_cas128(&v, &e, (struct ksync_u128){ UINT64_MAX, 1ull << 63 }));
	r = ksync_load128(&v);
	KT_EXPECT(r.lo == UINT64_MAX && r.hi == 1ull << 63);

	/* load128 of zero leaves zero; of non-zero leaves the value unchanged */
	v = (struct ksync_u128){ 0, 0 };
	r = ksync_load128(&v);
	KT_EXPECT(r.lo == 0 && r.hi == 0 && v.lo == 0 && v.hi == 0);
	v = (struct ksync_u128){ 0, 9 };
	r = ksync_load128(&v);
	KT_EXPECT(r.lo == 0 && r.hi == 9 && v.lo == 0 && v.hi == 9);
}

/* ---- cas128 stress ------------------------------------------------------------------ */

#define STRESS_THREADS 4
#define STRESS_ITERS 200000

struct stress {
	struct ksync_u128 pair;		/* {n, 3n}: written only by ksync_cas128 */
	uint32_t waiting;		/* threads not yet started; all spin until 0 */
	uint64_t bad;			/* observations breaking hi == 3 * lo (atomic add) */
	uint64_t retries;		/* failed CASes (atomic add) */
};

static void *stress_thread(void *arg)
{
	struct stress *s = arg;
	uint64_t bad = 0, retries = 0;

	/* Start gate, so the threads really overlap.  acq_rel/acquire: nothing is
	 * published through it; the order is only for form (relaxed would do). */
	ksync_fetch_sub_acq_rel_u32(&s->waiting, 1);
	while (ksync_load_acquire_u32(&s->waiting) != 0)
		ksync_cpu_relax();

	for (int i = 0; i < STRESS_ITERS; i++) {
		struct ksync_u128 old = ksync_load128(&s->pair), next;

		for (;;) {
			if (old.hi != old.lo * 3)
				bad++;
			next.lo = old.lo + 1;
			next.hi = next.lo * 3;
			if (ksync_cas128(&s->pair, &old, next))
				break;
			retries++;	/* old now holds the current value */
		}
	}
	/* relaxed: the totals are read after pthread_join, which orders them */
	ksync_fetch_add_relaxed_u64(&s->bad, bad);
	ksync_fetch_add_relaxed_u64(&s->retries, retries);
	return NULL;
}

static void run_stress(struct ktest_ctx *kt, int nthreads)
{
	static struct stress s;
	pthread_t th[STRESS_THREADS];
	int i;

	s.pair = (struct ksync_u128){ 0, 0 };
	s.bad = 0;
	s.retries = 0;
	s.waiting = (uint32_t)nthreads;
	for (i = 0; i < nthreads; i++)
		KT_ASSERT_EQ(pthread_create(&th[i], NULL, stress_thread, &s), 0);
	for (i = 0; i < nthreads; i++)
		KT_ASSERT_EQ(pthread_join(th[i], NULL), 0);
	KT_EXPECT_EQ(s.bad, 0);
	KT_EXPECT_EQ(s.pair.lo, (uint64_t)nthreads * STRESS_ITERS);
	KT_EXPECT_EQ(s.pair.hi, 3 * (uint64_t)nthreads * STRESS_ITERS);
	kt_diag(kt, "%d threads x %d increments: %llu failed CAS", nthreads, STRESS_ITERS,
		(unsigned long long)s.retries);
}

KTEST(atomic_cas128_stress_2threads)
{
	run_stress(kt, 2);
}

KTEST(atomic_cas128_stress_4threads)
{
	run_stress(kt, STRESS_THREADS);
}

/*
 * Publication through cas128: plain data written before a successful cas128 is seen by
 * a thread whose load128 returns the new value (lock cmpxchg16b is a full barrier).
 * Under TSan this checks the annotations in atomic.h: without them the plain accesses
 * to `payload` would be reported as a race.
 */
static struct {
	struct ksync_u128 flag;	/* {1, 0} once payload is written */
	uint64_t payload;	/* plain; published by the cas128 on flag */
} pub;

static void *publisher(void *arg)
{
	struct ksync_u128 e = { 0, 0 };

	(void)arg;
	pub.payload = 0x5eed;
	return ksync_cas128(&pub.flag, &e, (struct ksync_u128){ 1, 0 }) ? NULL : &pub;
}

KTEST(atomic_cas128_publishes)
{
	pthread_t th;
	void *ret;
	struct ksync_u128 v;

	pub.flag = (struct ksync_u128){ 0, 0 };
	pub.payload = 0;
	KT_ASSERT_EQ(pthread_create(&th, NULL, publisher, NULL), 0);
	for (v = ksync_load128(&pub.flag); v.lo == 0; v = ksync_load128(&pub.flag))
		ksync_cpu_relax();
	KT_EXPECT_EQ(pub.payload, 0x5eed);
	KT_ASSERT_EQ(pthread_join(th, &ret), 0);
	KT_EXPECT(ret == NULL);
}
