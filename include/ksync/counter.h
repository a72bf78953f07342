/*
 * counter.h - lock-free counters and bit fields on one 64-bit word, in the two forms the
 * papers name: the CAS loop (read, compute, compare-and-swap, retry on interference) and
 * the single fetch-and-op instruction (lock xadd / lock or / lock and / lock bts).
 *
 * Papers: Massalin & Pu 1991, "Lock-free synchronization methods" (a counter increment
 * is the model CAS loop; the first row of their cost table); Hohmuth & Haertig 2001,
 * section 2.1 and 3.2 ("counters and bitfields with widths up to 8 bytes" need nothing
 * but CAS; Table 2 measures "counter, CAS").
 *
 * Every read-modify-write below exists in all five C11 orders, named in the function:
 *   <op>_relaxed  <op>_acquire  <op>_release  <op>_acq_rel  <op>_seq_cst
 * with the meanings of include/ksync/atomic.h (the order is that of the one atomic
 * instruction that performs the update; a CAS loop's first read uses the load half of
 * the order: relaxed/release -> relaxed, acquire/acq_rel -> acquire, seq_cst -> seq_cst,
 * so a call that fails without writing still has its acquire).  Loads exist as
 * relaxed / acquire / seq_cst, stores as relaxed / release / seq_cst.
 *
 * Counters (struct lf_counter, one uint64_t; arithmetic modulo 2^64):
 *   lf_counter_init(c, v)                          before the counter is shared
 *   lf_counter_load_<o>(c, &v)  lf_counter_store_<o>(c, v)             wait-free
 *   lf_counter_add_<o>(c, d, &old)   fetch-add (lock xadd)              wait-free
 *   lf_counter_sub_<o>(c, d, &old)   fetch-sub (lock xadd)              wait-free
 *   lf_counter_add_cas_<o>(c, d, &old)  the same result by a CAS loop   lock-free
 *   lf_counter_add_bounded_<o>(c, d, limit, &old)  add unless the result would exceed
 *        `limit` (or wrap): KSYNC_EFULL, counter unchanged               lock-free
 *   lf_counter_take_<o>(c, n, &old)  subtract n if the value is >= n, else
 *        KSYNC_EEMPTY (a counting semaphore's try-down)                 lock-free
 *
 * Bit fields (struct lf_bits, one uint64_t; bit 0 is the least significant):
 *   lf_bits_init(b, v)
 *   lf_bits_load_<o>(b, &v)  lf_bits_store_<o>(b, v)                   wait-free
 *   lf_bits_test_<o>(b, bit)           1 if set, 0 if clear             wait-free
 *   lf_bits_set_<o>(b, mask, &old)     word |= mask                     see below
 *   lf_bits_clear_<o>(b, mask, &old)   word &= ~mask                    see below
 *   lf_bits_test_and_set_<o>(b, bit)   set; returns the old bit (1/0)   wait-free
 *   lf_bits_test_and_clear_<o>(b, bit) clear; returns the old bit       wait-free
 *   lf_bits_update_<o>(b, clr, set, &old)  word = (word & ~clr) | set in one step
 *        (Fiasco's state word: clear some flags and set others atomically) lock-free
 *   lf_bits_set_if_clear_<o>(b, mask, &old)  set all of mask only if none of it is
 *        set, else KSYNC_EBUSY (a multi-bit test-and-set)                lock-free
 *   lf_bits_alloc_<o>(b, &bit)         find the lowest clear bit and set it; KSYNC_EFULL
 *        if all 64 are set (a lock-free slot allocator)                  lock-free
 * set/clear: wait-free (`lock or`/`lock and`) when `old` is a NULL constant, lock-free
 * (gcc emits a `lock cmpxchg` loop to return the old value) otherwise.
 * test_and_set/test_and_clear compile to `lock bts`/`lock btr` (wait-free).
 *
 * Return values: every function returns KSYNC_OK (0) or a negative KSYNC_E* code, except
 * lf_bits_test* (1 / 0 / KSYNC_EINVAL).  Out-parameters named `old` receive the value
 * before the operation (the current value when the call fails with EFULL/EEMPTY/EBUSY)
 * and may be NULL.  Bad input: a NULL counter / bit field or out-parameter that is not
 * optional -> KSYNC_EINVAL; a bit index >= 64 -> KSYNC_EINVAL.  Nothing is written then.
 *
 * Shared fields: `value` and `word` are accessed only through atomic.h wrappers.
 *
 * Interference injection (tests, benchmarks): LF_COUNTER_TEST_HOOK(op, word) runs in
 * every CAS loop after the word is read and just before each CAS attempt (`op` is the
 * bare token add_cas, add_bounded, take, update, set_if_clear or alloc; `word` the
 * uint64_t * updated).  Empty unless defined before this header is included; a test
 * defines it to count attempts or to change *word once and force exactly one retry.
 */
#ifndef KSYNC_COUNTER_H
#define KSYNC_COUNTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/errors.h>

#ifndef LF_COUNTER_TEST_HOOK
#define LF_COUNTER_TEST_HOOK(op, word) ((void)0)
#endif

/* A 64-bit counter.  value: atomic.h wrappers only. */
struct lf_counter {
	uint64_t value;
};

/* 64 one-bit flags.  word: atomic.h wrappers only. */
struct lf_bits {
	uint64_t word;
};

#define LF_COUNTER_INITIALIZER(v) { (v) }
#define LF_BITS_INITIALIZER(v) { (v) }

/* Initialize before the object is shared (a plain relaxed store; publish the object
 * itself with a release store or a thread start). */
static inline int lf_counter_init(struct lf_counter *c, uint64_t v)
{
	if (!c)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");
	ksync_store_relaxed_u64(&c->value, v);
	return KSYNC_OK;
}

static inline int lf_bits_init(struct lf_bits *b, uint64_t v)
{
	if (!b)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field");
	ksync_store_relaxed_u64(&b->word, v);
	return KSYNC_OK;
}

/* ---- loads and stores -------------------------------------------------------------- */

#define LF_COUNTER__LOAD(ord)                                                          \
	static inline int lf_counter_load_##ord(const struct lf_counter *c, uint64_t *v)  \
	{                                                                              \
		if (!c || !v)                                                          \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter or result");       \
		*v = ksync_load_##ord##_u64(&c->value);                                \
		return KSYNC_OK;                                                       \
	}                                                                              \
	static inline int lf_bits_load_##ord(const struct lf_bits *b, uint64_t *v)      \
	{                                                                              \
		if (!b || !v)                                                          \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field or result");     \
		*v = ksync_load_##ord##_u64(&b->word);                                 \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* 1 if `bit` is set, 0 if clear. */                                           \
	static inline int lf_bits_test_##ord(const struct lf_bits *b, unsigned bit)     \
	{                                                                              \
		if (!b || bit >= 64)                                                   \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field or bit >= 64");  \
		return (int)((ksync_load_##ord##_u64(&b->word) >> bit) & 1);           \
	}

#define LF_COUNTER__STORE(ord)                                                         \
	static inline int lf_counter_store_##ord(struct lf_counter *c, uint64_t v)       \
	{                                                                              \
		if (!c)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");                 \
		ksync_store_##ord##_u64(&c->value, v);                                 \
		return KSYNC_OK;                                                       \
	}                                                                              \
	static inline int lf_bits_store_##ord(struct lf_bits *b, uint64_t v)             \
	{                                                                              \
		if (!b)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field");               \
		ksync_store_##ord##_u64(&b->word, v);                                  \
		return KSYNC_OK;                                                       \
	}

LF_COUNTER__LOAD(relaxed)
LF_COUNTER__LOAD(acquire)
LF_COUNTER__LOAD(seq_cst)
LF_COUNTER__STORE(relaxed)
LF_COUNTER__STORE(release)
LF_COUNTER__STORE(seq_cst)

/* ---- read-modify-writes, one set per order ------------------------------------------ */

/*
 * ord:  the order of the updating instruction (and of a CAS's success).
 * lord: the order of a CAS loop's first read (see the top of the file).
 */
#define LF_COUNTER__RMW(ord, lord)                                                     \
	/* fetch-add: one lock xadd.  Wait-free. */                                    \
	static inline int lf_counter_add_##ord(struct lf_counter *c, uint64_t delta,    \
					       uint64_t *old)                          \
	{                                                                              \
		uint64_t o;                                                            \
		if (!c)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");                 \
		o = ksync_fetch_add_##ord##_u64(&c->value, delta);                     \
		if (old)                                                               \
			*old = o;                                                      \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* fetch-sub: one lock xadd.  Wait-free. */                                    \
	static inline int lf_counter_sub_##ord(struct lf_counter *c, uint64_t delta,    \
					       uint64_t *old)                          \
	{                                                                              \
		uint64_t o;                                                            \
		if (!c)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");                 \
		o = ksync_fetch_sub_##ord##_u64(&c->value, delta);                     \
		if (old)                                                               \
			*old = o;                                                      \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* The Massalin-Pu form: read, add, CAS, retry if another CPU interfered.      \
	 * Same result as lf_counter_add_<o>.  Lock-free (a failed CAS means another    \
	 * update succeeded). */                                                       \
	static inline int lf_counter_add_cas_##ord(struct lf_counter *c, uint64_t delta, \
						   uint64_t *old)                      \
	{                                                                              \
		uint64_t o;                                                            \
		if (!c)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");                 \
		o = ksync_load_##lord##_u64(&c->value);                                \
		for (;;) {                                                             \
			LF_COUNTER_TEST_HOOK(add_cas, &c->value);                      \
			/* on failure o receives the current value: no re-read */      \
			if (ksync_cas_strong_##ord##_u64(&c->value, &o, o + delta))    \
				break;                                                 \
		}                                                                      \
		if (old)                                                               \
			*old = o;                                                      \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* Add unless old + delta > limit or wraps: then KSYNC_EFULL, no change.        \
	 * Lock-free. */                                                               \
	static inline int lf_counter_add_bounded_##ord(struct lf_counter *c,            \
						       uint64_t delta, uint64_t limit, \
						       uint64_t *old)                  \
	{                                                                              \
		uint64_t o;                                                            \
		int rc = KSYNC_OK;                                                     \
		if (!c)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");                 \
		o = ksync_load_##lord##_u64(&c->value);                                \
		for (;;) {                                                             \
			if (o + delta < o || o + delta > limit) {                      \
				rc = KSYNC_EFULL;                                      \
				break;                                                 \
			}                                                              \
			LF_COUNTER_TEST_HOOK(add_bounded, &c->value);                  \
			if (ksync_cas_strong_##ord##_u64(&c->value, &o, o + delta))    \
				break;                                                 \
		}                                                                      \
		if (old)                                                               \
			*old = o;                                                      \
		return rc;                                                             \
	}                                                                              \
	/* Subtract n if value >= n, else KSYNC_EEMPTY, no change.  Lock-free. */      \
	static inline int lf_counter_take_##ord(struct lf_counter *c, uint64_t n,        \
						uint64_t *old)                         \
	{                                                                              \
		uint64_t o;                                                            \
		int rc = KSYNC_OK;                                                     \
		if (!c)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL counter");                 \
		o = ksync_load_##lord##_u64(&c->value);                                \
		for (;;) {                                                             \
			if (o < n) {                                                   \
				rc = KSYNC_EEMPTY;                                     \
				break;                                                 \
			}                                                              \
			LF_COUNTER_TEST_HOOK(take, &c->value);                         \
			if (ksync_cas_strong_##ord##_u64(&c->value, &o, o - n))        \
				break;                                                 \
		}                                                                      \
		if (old)                                                               \
			*old = o;                                                      \
		return rc;                                                             \
	}                                                                              \
	/* word |= mask.  Wait-free (lock or) if old is a NULL constant. */            \
	static inline int lf_bits_set_##ord(struct lf_bits *b, uint64_t mask,           \
					    uint64_t *old)                             \
	{                                                                              \
		if (!b)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field");               \
		if (old)                                                               \
			*old = ksync_fetch_or_##ord##_u64(&b->word, mask);             \
		else                                                                   \
			(void)ksync_fetch_or_##ord##_u64(&b->word, mask);              \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* word &= ~mask.  Wait-free (lock and) if old is a NULL constant. */          \
	static inline int lf_bits_clear_##ord(struct lf_bits *b, uint64_t mask,         \
					      uint64_t *old)                           \
	{                                                                              \
		if (!b)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field");               \
		if (old)                                                               \
			*old = ksync_fetch_and_##ord##_u64(&b->word, ~mask);           \
		else                                                                   \
			(void)ksync_fetch_and_##ord##_u64(&b->word, ~mask);            \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* Set `bit`; return its old value (1/0).  lock bts: wait-free. */             \
	static inline int lf_bits_test_and_set_##ord(struct lf_bits *b, unsigned bit)   \
	{                                                                              \
		uint64_t m;                                                            \
		if (!b || bit >= 64)                                                   \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field or bit >= 64");  \
		m = (uint64_t)1 << bit;                                                \
		return (ksync_fetch_or_##ord##_u64(&b->word, m) & m) != 0;             \
	}                                                                              \
	/* Clear `bit`; return its old value (1/0).  lock btr: wait-free. */           \
	static inline int lf_bits_test_and_clear_##ord(struct lf_bits *b, unsigned bit) \
	{                                                                              \
		uint64_t m;                                                            \
		if (!b || bit >= 64)                                                   \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field or bit >= 64");  \
		m = (uint64_t)1 << bit;                                                \
		return (ksync_fetch_and_##ord##_u64(&b->word, ~m) & m) != 0;           \
	}                                                                              \
	/* word = (word & ~clr) | set, atomically (set wins where both name a bit).     \
	 * Lock-free. */                                                               \
	static inline int lf_bits_update_##ord(struct lf_bits *b, uint64_t clr,          \
					       uint64_t set, uint64_t *old)            \
	{                                                                              \
		uint64_t o;                                                            \
		if (!b)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field");               \
		o = ksync_load_##lord##_u64(&b->word);                                 \
		for (;;) {                                                             \
			LF_COUNTER_TEST_HOOK(update, &b->word);                        \
			if (ksync_cas_strong_##ord##_u64(&b->word, &o,                 \
							 (o & ~clr) | set))            \
				break;                                                 \
		}                                                                      \
		if (old)                                                               \
			*old = o;                                                      \
		return KSYNC_OK;                                                       \
	}                                                                              \
	/* Set every bit of mask if none of them is set; else KSYNC_EBUSY, no change.  \
	 * mask 0 always succeeds.  Lock-free. */                                      \
	static inline int lf_bits_set_if_clear_##ord(struct lf_bits *b, uint64_t mask,  \
						     uint64_t *old)                    \
	{                                                                              \
		uint64_t o;                                                            \
		int rc = KSYNC_OK;                                                     \
		if (!b)                                                                \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field");               \
		o = ksync_load_##lord##_u64(&b->word);                                 \
		for (;;) {                                                             \
			if (o & mask) {                                                \
				rc = KSYNC_EBUSY;                                      \
				break;                                                 \
			}                                                              \
			LF_COUNTER_TEST_HOOK(set_if_clear, &b->word);                  \
			if (ksync_cas_strong_##ord##_u64(&b->word, &o, o | mask))      \
				break;                                                 \
		}                                                                      \
		if (old)                                                               \
			*old = o;                                                      \
		return rc;                                                             \
	}                                                                              \
	/* Set the lowest clear bit and store its index in *bit; KSYNC_EFULL if every  \
	 * bit is set.  Lock-free. */                                                  \
	static inline int lf_bits_alloc_##ord(struct lf_bits *b, unsigned *bit)         \
	{                                                                              \
		uint64_t o;                                                            \
		unsigned i;                                                            \
		if (!b || !bit)                                                        \
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL bit field or result");     \
		o = ksync_load_##lord##_u64(&b->word);                                 \
		for (;;) {                                                             \
			if (o == UINT64_MAX)                                           \
				return KSYNC_EFULL;                                    \
			i = (unsigned)__builtin_ctzll(~o);                             \
			LF_COUNTER_TEST_HOOK(alloc, &b->word);                         \
			if (ksync_cas_strong_##ord##_u64(&b->word, &o,                 \
							 o | ((uint64_t)1 << i)))      \
				break;                                                 \
		}                                                                      \
		*bit = i;                                                              \
		return KSYNC_OK;                                                       \
	}

LF_COUNTER__RMW(relaxed, relaxed)
LF_COUNTER__RMW(acquire, acquire)
LF_COUNTER__RMW(release, relaxed)
LF_COUNTER__RMW(acq_rel, acquire)
LF_COUNTER__RMW(seq_cst, seq_cst)

#endif /* KSYNC_COUNTER_H */
