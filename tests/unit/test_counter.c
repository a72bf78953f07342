/*
 * test_counter.c - include/ksync/counter.h: value semantics of every counter and bit
 * field operation (in several orders), bounded add / take / set_if_clear / alloc at
 * their limits, bad input, interference injection forcing exactly one CAS retry, and a
 * pthread run of the CAS-loop and fetch-add forms that must end at the exact total
 * (clean under TSan).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>

/* Interference injection: count CAS attempts; when `interfere` is armed, perform one
 * real concurrent update (as if from another CPU) between the read and the CAS. */
static int hook_on = 1;		/* 0 while threads run (read-only then) */
static int hook_attempts;
static int interfere;
static uint64_t interfere_add;	/* what the "other CPU" adds (counters) or ORs (bits) */
#define LF_COUNTER_TEST_HOOK(op, word)                                                \
	do {                                                                          \
		if (!hook_on)                                                         \
			break;                                                        \
		hook_attempts++;                                                      \
		if (interfere) {                                                      \
			interfere = 0;                                                \
			(void)ksync_fetch_add_seq_cst_u64((word), interfere_add);      \
		}                                                                     \
	} while (0)

#include <ksync/counter.h>
#include <ksync/ktest.h>

KTEST(counter_fetch_add_forms)
{
	struct lf_counter c = LF_COUNTER_INITIALIZER(5);
	uint64_t old = 0, v = 0;

	KT_EXPECT_EQ(lf_counter_add_relaxed(&c, 3, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 5);
	KT_EXPECT_EQ(lf_counter_add_acquire(&c, 1, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_add_release(&c, 1, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 9);
	KT_EXPECT_EQ(lf_counter_sub_acq_rel(&c, 4, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 10);
	KT_EXPECT_EQ(lf_counter_sub_seq_cst(&c, 6, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 6);
	KT_EXPECT_EQ(lf_counter_load_acquire(&c, &v), KSYNC_OK);
	KT_EXPECT_EQ(v, 0);
	/* wraps modulo 2^64 */
	KT_EXPECT_EQ(lf_counter_sub_relaxed(&c, 1, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_load_relaxed(&c, &v), KSYNC_OK);
	KT_EXPECT(v == UINT64_MAX);
	KT_EXPECT_EQ(lf_counter_store_release(&c, 42), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_load_seq_cst(&c, &v), KSYNC_OK);
	KT_EXPECT_EQ(v, 42);
	KT_EXPECT_EQ(lf_counter_store_relaxed(&c, 1), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_store_seq_cst(&c, 2), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_init(&c, 7), KSYNC_OK);
	KT_EXPECT_EQ(c.value, 7);
}

KTEST(counter_cas_forms)
{
	struct lf_counter c = LF_COUNTER_INITIALIZER(0);
	uint64_t old = 99;

	KT_EXPECT_EQ(lf_counter_add_cas_relaxed(&c, 2, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 0);
	KT_EXPECT_EQ(lf_counter_add_cas_acquire(&c, 2, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_add_cas_release(&c, 2, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 4);
	KT_EXPECT_EQ(lf_counter_add_cas_acq_rel(&c, 2, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_add_cas_seq_cst(&c, UINT64_MAX, &old), KSYNC_OK); /* -1 */
	KT_EXPECT_EQ(old, 8);
	KT_EXPECT_EQ(c.value, 7);
}

KTEST(counter_bounded_and_take)
{
	struct lf_counter c = LF_COUNTER_INITIALIZER(8);
	uint64_t old = 0;

	/* bounded add: up to and including the limit, never past it */
	KT_EXPECT_EQ(lf_counter_add_bounded_acq_rel(&c, 2, 10, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 8);
	KT_EXPECT_EQ(lf_counter_add_bounded_acq_rel(&c, 1, 10, &old), KSYNC_EFULL);
	KT_EXPECT_EQ(old, 10);	/* the current value on failure */
	KT_EXPECT_EQ(c.value, 10);
	KT_EXPECT_EQ(lf_counter_add_bounded_relaxed(&c, 0, 10, NULL), KSYNC_OK);
	/* wrap-around counts as exceeding */
	KT_EXPECT_EQ(lf_counter_store_relaxed(&c, UINT64_MAX - 1), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_add_bounded_seq_cst(&c, 2, UINT64_MAX, NULL), KSYNC_EFULL);
	KT_EXPECT_EQ(lf_counter_add_bounded_release(&c, 1, UINT64_MAX, NULL), KSYNC_OK);
	KT_EXPECT(c.value == UINT64_MAX);

	/* take: a counting semaphore's try-down */
	KT_EXPECT_EQ(lf_counter_store_relaxed(&c, 3), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_take_acquire(&c, 2, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 3);
	KT_EXPECT_EQ(lf_counter_take_acquire(&c, 2, &old), KSYNC_EEMPTY);
	KT_EXPECT_EQ(old, 1);
	KT_EXPECT_EQ(lf_counter_take_relaxed(&c, 1, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_take_seq_cst(&c, 1, NULL), KSYNC_EEMPTY);
	KT_EXPECT_EQ(lf_counter_take_release(&c, 0, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_counter_take_acq_rel(&c, 0, NULL), KSYNC_OK);
	KT_EXPECT_EQ(c.value, 0);
}

KTEST(bits_single_bit_ops)
{
	struct lf_bits b = LF_BITS_INITIALIZER(0);
	uint64_t old = 1, v;

	KT_EXPECT_EQ(lf_bits_test_and_set_acq_rel(&b, 0), 0);
	KT_EXPECT_EQ(lf_bits_test_and_set_acq_rel(&b, 0), 1);
	KT_EXPECT_EQ(lf_bits_test_and_set_relaxed(&b, 63), 0);
	KT_EXPECT_EQ(lf_bits_test_acquire(&b, 63), 1);
	KT_EXPECT_EQ(lf_bits_test_relaxed(&b, 62), 0);
	KT_EXPECT_EQ(lf_bits_test_and_clear_release(&b, 63), 1);
	KT_EXPECT_EQ(lf_bits_test_and_clear_seq_cst(&b, 63), 0);
	KT_EXPECT_EQ(lf_bits_test_seq_cst(&b, 63), 0);
	KT_EXPECT_EQ(b.word, 1);

	KT_EXPECT_EQ(lf_bits_set_release(&b, 0xf0, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 1);
	KT_EXPECT_EQ(lf_bits_set_relaxed(&b, 0x100, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_clear_acquire(&b, 0x30, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 0x1f1);
	KT_EXPECT_EQ(lf_bits_clear_seq_cst(&b, 0x1, NULL), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_load_acquire(&b, &v), KSYNC_OK);
	KT_EXPECT_EQ(v, 0x1c0);
	KT_EXPECT_EQ(lf_bits_store_release(&b, 5), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_load_relaxed(&b, &v), KSYNC_OK);
	KT_EXPECT_EQ(v, 5);
	KT_EXPECT_EQ(lf_bits_store_seq_cst(&b, 6), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_store_relaxed(&b, 7), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_load_seq_cst(&b, &v), KSYNC_OK);
	KT_EXPECT_EQ(v, 7);
	KT_EXPECT_EQ(lf_bits_init(&b, 0), KSYNC_OK);
	KT_EXPECT_EQ(b.word, 0);
}

KTEST(bits_multi_bit_ops)
{
	struct lf_bits b = LF_BITS_INITIALIZER(0x0f);
	uint64_t old = 0;
	unsigned bit = 99;

	/* update: clear some, set others, in one step; set wins on overlap */
	KT_EXPECT_EQ(lf_bits_update_acq_rel(&b, 0x03, 0x30, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, 0x0f);
	KT_EXPECT_EQ(b.word, 0x3c);
	KT_EXPECT_EQ(lf_bits_update_relaxed(&b, 0x04, 0x04, NULL), KSYNC_OK);
	KT_EXPECT_EQ(b.word, 0x3c);

	/* set_if_clear: all or nothing */
	KT_EXPECT_EQ(lf_bits_set_if_clear_acquire(&b, 0x41, &old), KSYNC_OK);
	KT_EXPECT_EQ(b.word, 0x7d);
	KT_EXPECT_EQ(lf_bits_set_if_clear_acquire(&b, 0x82, &old), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_set_if_clear_seq_cst(&b, 0x101, &old), KSYNC_EBUSY);
	KT_EXPECT_EQ(old, 0xff);
	KT_EXPECT_EQ(b.word, 0xff);	/* unchanged: 0x100 not set either */
	KT_EXPECT_EQ(lf_bits_set_if_clear_relaxed(&b, 0, NULL), KSYNC_OK);

	/* alloc: lowest clear bit, until full */
	KT_EXPECT_EQ(lf_bits_alloc_acq_rel(&b, &bit), KSYNC_OK);
	KT_EXPECT_EQ(bit, 8);
	KT_EXPECT_EQ(lf_bits_store_relaxed(&b, UINT64_MAX & ~((uint64_t)1 << 63)), KSYNC_OK);
	KT_EXPECT_EQ(lf_bits_alloc_relaxed(&b, &bit), KSYNC_OK);
	KT_EXPECT_EQ(bit, 63);
	KT_EXPECT_EQ(lf_bits_alloc_seq_cst(&b, &bit), KSYNC_EFULL);
	KT_EXPECT(b.word == UINT64_MAX);
}

KTEST(counter_bad_input)
{
	struct lf_counter c = LF_COUNTER_INITIALIZER(1);
	struct lf_bits b = LF_BITS_INITIALIZER(1);
	uint64_t v;
	unsigned bit;

	KT_EXPECT_EQ(lf_counter_init(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_load_relaxed(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_load_acquire(&c, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_store_release(NULL, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_add_relaxed(NULL, 1, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_sub_relaxed(NULL, 1, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_add_cas_acq_rel(NULL, 1, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_add_bounded_acq_rel(NULL, 1, 5, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_counter_take_acq_rel(NULL, 1, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(c.value, 1);

	KT_EXPECT_EQ(lf_bits_init(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_load_relaxed(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_load_relaxed(&b, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_store_relaxed(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_test_relaxed(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_test_relaxed(&b, 64), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_test_and_set_relaxed(&b, 64), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_test_and_set_relaxed(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_test_and_clear_relaxed(&b, 1000), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_set_relaxed(NULL, 1, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_clear_relaxed(NULL, 1, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_update_relaxed(NULL, 1, 1, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_set_if_clear_relaxed(NULL, 1, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_alloc_relaxed(NULL, &bit), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_bits_alloc_relaxed(&b, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(b.word, 1);
}

/* One interfering update between the read and the CAS: exactly two attempts, and both
 * updates are in the result. */
KTEST(counter_interference_one_retry)
{
	struct lf_counter c = LF_COUNTER_INITIALIZER(10);
	struct lf_bits b = LF_BITS_INITIALIZER(0);
	uint64_t old = 0;
	unsigned bit = 0;

	hook_attempts = 0;
	interfere_add = 100;
	interfere = 1;
	KT_EXPECT_EQ(lf_counter_add_cas_acq_rel(&c, 1, &old), KSYNC_OK);
	KT_EXPECT_EQ(hook_attempts, 2);
	KT_EXPECT_EQ(old, 110);		/* the value the successful CAS replaced */
	KT_EXPECT_EQ(c.value, 111);

	/* without interference: one attempt */
	hook_attempts = 0;
	KT_EXPECT_EQ(lf_counter_add_cas_relaxed(&c, 1, NULL), KSYNC_OK);
	KT_EXPECT_EQ(hook_attempts, 1);

	/* bounded add: the interference pushes the value over the limit -> EFULL after
	 * one failed CAS, and nothing of ours is added */
	hook_attempts = 0;
	interfere_add = 5;
	interfere = 1;
	KT_EXPECT_EQ(lf_counter_add_bounded_acq_rel(&c, 1, 115, &old), KSYNC_EFULL);
	KT_EXPECT_EQ(hook_attempts, 1);
	KT_EXPECT_EQ(old, 117);
	KT_EXPECT_EQ(c.value, 117);

	/* take: one retry, then success */
	hook_attempts = 0;
	interfere_add = 1;
	interfere = 1;
	KT_EXPECT_EQ(lf_counter_take_acq_rel(&c, 17, &old), KSYNC_OK);
	KT_EXPECT_EQ(hook_attempts, 2);
	KT_EXPECT_EQ(c.value, 101);

	/* bit alloc: the "other CPU" takes bit 0 (adds 1 to an all-zero word) between
	 * our choice of bit 0 and our CAS: we retry once and get bit 1 */
	hook_attempts = 0;
	interfere_add = 1;
	interfere = 1;
	KT_EXPECT_EQ(lf_bits_alloc_acq_rel(&b, &bit), KSYNC_OK);
	KT_EXPECT_EQ(hook_attempts, 2);
	KT_EXPECT_EQ(bit, 1);
	KT_EXPECT_EQ(b.word, 3);

	/* update and set_if_clear retry the same way */
	hook_attempts = 0;
	interfere_add = 4;	/* sets bit 2 */
	interfere = 1;
	KT_EXPECT_EQ(lf_bits_update_acq_rel(&b, 1, 8, &old), KSYNC_OK);
	KT_EXPECT_EQ(hook_attempts, 2);
	KT_EXPECT_EQ(old, 7);
	KT_EXPECT_EQ(b.word, 0xe);
	hook_attempts = 0;
	interfere_add = 0x10;
	interfere = 1;
	KT_EXPECT_EQ(lf_bits_set_if_clear_acq_rel(&b, 0x10, &old), KSYNC_EBUSY);
	KT_EXPECT_EQ(hook_attempts, 1);
	KT_EXPECT_EQ(b.word, 0x1e);
}

/* ---- threads: exact totals -------------------------------------------------------- */

#define THREADS 2
#define ITERS 100000

static struct lf_counter shared_faa, shared_cas, shared_sem;
static struct lf_bits shared_bits;
static uint32_t gate;

static void *counter_thread(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg, bit;
	uint64_t taken = 0;

	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	for (int i = 0; i < ITERS; i++) {
		(void)lf_counter_add_relaxed(&shared_faa, 1, NULL);
		(void)lf_counter_add_cas_relaxed(&shared_cas, 1, NULL);
		/* semaphore: give one, take one back (never below zero) */
		(void)lf_counter_add_release(&shared_sem, 1, NULL);
		if (lf_counter_take_acquire(&shared_sem, 1, NULL) == KSYNC_OK)
			taken++;
		/* bit slots: take a free bit, give it back */
		if (lf_bits_alloc_acq_rel(&shared_bits, &bit) == KSYNC_OK)
			(void)lf_bits_clear_release(&shared_bits, (uint64_t)1 << bit, NULL);
	}
	(void)me;
	return (void *)(uintptr_t)taken;
}

KTEST(counter_threads_exact_totals)
{
	pthread_t th[THREADS];
	uint64_t taken = 0, v;
	void *ret;

	hook_on = 0;	/* before pthread_create: the threads only read it */
	lf_counter_init(&shared_faa, 0);
	lf_counter_init(&shared_cas, 0);
	lf_counter_init(&shared_sem, 0);
	lf_bits_init(&shared_bits, 0);
	gate = THREADS;
	for (int i = 0; i < THREADS; i++)
		KT_ASSERT_EQ(pthread_create(&th[i], NULL, counter_thread, (void *)(uintptr_t)i), 0);
	for (int i = 0; i < THREADS; i++) {
		KT_ASSERT_EQ(pthread_join(th[i], &ret), 0);
		taken += (uint64_t)(uintptr_t)ret;
	}
	lf_counter_load_relaxed(&shared_faa, &v);
	KT_EXPECT_EQ(v, (uint64_t)THREADS * ITERS);
	lf_counter_load_relaxed(&shared_cas, &v);
	KT_EXPECT_EQ(v, (uint64_t)THREADS * ITERS);
	lf_counter_load_relaxed(&shared_sem, &v);
	KT_EXPECT_EQ(v + taken, (uint64_t)THREADS * ITERS);	/* nothing lost or invented */
	KT_EXPECT_EQ(shared_bits.word, 0);
	hook_on = 1;
	kt_diag(kt, "%d threads x %d: %llu takes succeeded", THREADS, ITERS,
		(unsigned long long)taken);
}
