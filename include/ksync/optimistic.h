/*
 * optimistic.h - Massalin & Pu's optimistic critical section as a version word (the
 * shape later called a seqlock): readers read the version, read the data, and validate
 * that the version did not change, retrying otherwise; writers are serialized by a CAS
 * that makes the version odd for the length of their update.  Usable for state of any
 * number of words.  Readers never write shared memory.
 *
 * Papers: Massalin & Pu 1991, "Lock-free synchronization methods" ("encode the system
 * state in a local word; enter the critical section; at its end check whether the state
 * encoding changed; if it did, interference happened: retry"), and "Optimistic
 * synchronization"; Hohmuth & Haertig 2001, section 2.1 (optimistic concurrency
 * control).  C11 form after H.-J. Boehm, "Can seqlocks get along with programming
 * language memory models?", MSPC 2012.
 *
 *   struct pos { struct lf_opt v; uint64_t w[3]; } p;        // w: written under v
 *   uint64_t mine[3];
 *   lf_opt_read(&p.v, mine, p.w, 3);                          // consistent snapshot
 *   lf_opt_write(&p.v, p.w, (uint64_t[3]){ 1, 2, 3 }, 3);     // serialized update
 *
 *   // the Massalin-Pu read-compute-commit cycle:
 *   for (;;) {
 *           uint64_t v, x;
 *           lf_opt_read_begin(&p.v, &v);
 *           x = lf_opt_load_u64(&p.w[0]);                     // read, compute out of line
 *           if (!lf_opt_read_validate(&p.v, v)) continue;     // interference: retry
 *           if (lf_opt_write_begin_if(&p.v, v) != KSYNC_OK) continue;  // someone wrote
 *           lf_opt_store_u64(&p.w[0], x + 1);                 // commit
 *           lf_opt_write_end(&p.v);
 *           break;
 *   }
 *
 * The version: even = no writer inside; odd = a writer is inside.  Every completed
 * write adds 2; a cancelled one leaves it as it was.
 *
 * Operations and progress:
 *   lf_opt_init(o)                      before sharing
 *   lf_opt_read_begin(o, &v)            spins while a writer is inside: blocking with
 *                                       respect to a stalled writer, wait-free otherwise
 *   lf_opt_read_try_begin(o, &v)        KSYNC_EBUSY instead of spinning; wait-free
 *   lf_opt_read_validate(o, v)          1 if nothing was written since read_begin
 *                                       returned v (the data read is consistent), 0 if
 *                                       the reader must retry; wait-free
 *   lf_opt_write_begin(o)               CAS even v -> v + 1, spinning while odd or lost:
 *                                       blocking (a test-and-set lock on the version)
 *   lf_opt_write_try_begin(o)           one attempt: KSYNC_EBUSY if a writer is inside
 *                                       or the CAS was lost; wait-free
 *   lf_opt_write_begin_if(o, v)         enter only if the version is still v (nothing
 *                                       written since the caller's read): the commit
 *                                       step of Massalin-Pu; KSYNC_EBUSY if it changed;
 *                                       wait-free (one CAS)
 *   lf_opt_write_end(o)                 leave, version + 1 (even again); wait-free
 *   lf_opt_write_cancel(o)              leave without having written anything, version
 *                                       - 1 (readers that overlapped need not retry)
 *   lf_opt_read(o, dst, src, n)         read_begin + copy_out + validate until
 *                                       consistent; returns the number of retries (>= 0)
 *   lf_opt_write(o, dst, src, n)        write_begin + copy_in + write_end
 * Data helpers (the protected words must be read and written only through these, or
 * other atomic.h wrappers, so that readers racing with a writer are data-race-free
 * under C11 and clean under ThreadSanitizer):
 *   lf_opt_load_u64(p) / lf_opt_load_ptr(p)       relaxed atomic loads (any side)
 *   lf_opt_store_u64(p, x) / lf_opt_store_ptr(p, x)  relaxed atomic stores (writer)
 *   lf_opt_copy_out(dst, src, n)   n words shared -> private, relaxed loads (reader)
 *   lf_opt_copy_in(dst, src, n)    n words private -> shared, relaxed stores (writer)
 * Preconditions: write_end / write_cancel only by the writer inside; a writer must not
 * call read_begin on its own version (it would spin for ever); sections are short, and
 * in the kernel a writer runs with preemption disabled (a preempted writer stalls every
 * reader and writer of the object).  A reader must not act on the data it read (follow
 * a pointer it read, divide by it) before read_validate says it is consistent, unless
 * every value it could see is safe to use.
 * Bad input: NULL version word, NULL data pointer with n > 0 -> KSYNC_EINVAL.
 *
 * Memory order (Boehm's recipe): reader: version load acquire; data loads relaxed;
 * acquire fence; version load relaxed.  Writer: CAS acq_rel (acquire: the previous
 * writer's data is before ours); release fence (the odd version is ordered before our
 * data stores); data stores relaxed; version store release.  On x86 only the CAS is an
 * instruction with a cost; the fences and orders constrain the compiler.
 *
 * Shared fields: version is read and written only through atomic.h wrappers; the data
 * is protected by it as above.
 *
 * Interference injection: LF_OPT_TEST_HOOK(op, o) runs in lf_opt_read after the data
 * is copied and before validation (op = read), and in lf_opt_write_begin_if and
 * lf_opt_write_try_begin just before the CAS (op = commit).  Empty unless defined before
 * this header is included; a test writes once from it to force exactly one retry.
 */
#ifndef KSYNC_OPTIMISTIC_H
#define KSYNC_OPTIMISTIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/errors.h>
#include <ksync/platform.h>

#ifndef LF_OPT_TEST_HOOK
#define LF_OPT_TEST_HOOK(op, o) ((void)0)
#endif

struct lf_opt {
	uint64_t version;	/* even: quiet; odd: a writer inside.  atomic.h only */
};

#define LF_OPT_INITIALIZER { 0 }

static inline int lf_opt_init(struct lf_opt *o)
{
	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	ksync_store_relaxed_u64(&o->version, 0);
	return KSYNC_OK;
}

/* ---- data access ------------------------------------------------------------------- */

/* relaxed: ordering comes from the version protocol around these accesses */
static inline uint64_t lf_opt_load_u64(const uint64_t *p)
{
	return ksync_load_relaxed_u64(p);
}

static inline void lf_opt_store_u64(uint64_t *p, uint64_t x)
{
	ksync_store_relaxed_u64(p, x);
}

static inline void *lf_opt_load_ptr(const void *p)
{
	return ksync_load_relaxed_ptr(p);
}

static inline void lf_opt_store_ptr(void *p, void *x)
{
	ksync_store_relaxed_ptr(p, x);
}

/* Reader: copy n shared words to private dst (relaxed loads, one per word). */
static inline int lf_opt_copy_out(uint64_t *dst, const uint64_t *src, size_t n)
{
	if (n && (!dst || !src))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL buffer");
	for (size_t i = 0; i < n; i++)
		dst[i] = ksync_load_relaxed_u64(&src[i]);
	return KSYNC_OK;
}

/* Writer (inside): copy n private words to shared dst (relaxed stores). */
static inline int lf_opt_copy_in(uint64_t *dst, const uint64_t *src, size_t n)
{
	if (n && (!dst || !src))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL buffer");
	for (size_t i = 0; i < n; i++)
		ksync_store_relaxed_u64(&dst[i], src[i]);
	return KSYNC_OK;
}

/* ---- readers ----------------------------------------------------------------------- */

/* Wait until no writer is inside and return the (even) version in *v. */
static inline int lf_opt_read_begin(const struct lf_opt *o, uint64_t *v)
{
	uint64_t x;

	if (!o || !v)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word or result");
	/* acquire: the data loads that follow are not performed before this load, and
	 * they see at least what the writer that released this version wrote */
	while ((x = ksync_load_acquire_u64(&o->version)) & 1)
		ksync_cpu_relax();
	*v = x;
	return KSYNC_OK;
}

/* As read_begin, but KSYNC_EBUSY (and *v = the odd version) if a writer is inside. */
static inline int lf_opt_read_try_begin(const struct lf_opt *o, uint64_t *v)
{
	if (!o || !v)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word or result");
	*v = ksync_load_acquire_u64(&o->version);
	return (*v & 1) ? KSYNC_EBUSY : KSYNC_OK;
}

/* 1 if the version is still v (even), so the data read since read_begin is a
 * consistent snapshot; 0 if a writer entered meanwhile (retry). */
static inline int lf_opt_read_validate(const struct lf_opt *o, uint64_t v)
{
	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	/* acquire fence: the relaxed data loads before it are ordered before the
	 * version load after it (a load cannot see a writer's data store without this
	 * load seeing at least the odd version that preceded that store) */
	ksync_fence_acquire();
	return !(v & 1) && ksync_load_relaxed_u64(&o->version) == v;
}

/* ---- writers ----------------------------------------------------------------------- */

static inline int lf_opt__enter(struct lf_opt *o, uint64_t *v)
{
	/* acq_rel: acquire orders the previous writer's data before ours; on failure
	 * *v = the current version */
	if (!ksync_cas_strong_acq_rel_u64(&o->version, v, *v + 1))
		return KSYNC_EBUSY;
	/* release fence: the odd version is visible before any data store that follows
	 * (a reader that sees one of our stores then fails its validation) */
	ksync_fence_release();
	return KSYNC_OK;
}

/* Enter as the only writer; spins while another writer is inside. */
static inline int lf_opt_write_begin(struct lf_opt *o)
{
	uint64_t v;

	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	v = ksync_load_relaxed_u64(&o->version);
	for (;;) {
		if (v & 1) {
			ksync_cpu_relax();
			v = ksync_load_relaxed_u64(&o->version);
			continue;
		}
		if (lf_opt__enter(o, &v) == KSYNC_OK)
			return KSYNC_OK;
	}
}

/* One attempt to enter: KSYNC_EBUSY if a writer is inside or the CAS was lost. */
static inline int lf_opt_write_try_begin(struct lf_opt *o)
{
	uint64_t v;

	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	v = ksync_load_relaxed_u64(&o->version);
	if (v & 1)
		return KSYNC_EBUSY;
	LF_OPT_TEST_HOOK(commit, o);
	return lf_opt__enter(o, &v);
}

/* Enter only if the version is still v (a value read_begin returned): Massalin-Pu's
 * commit.  KSYNC_EBUSY if anything was written since (or v is odd). */
static inline int lf_opt_write_begin_if(struct lf_opt *o, uint64_t v)
{
	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	if (v & 1)
		return KSYNC_EBUSY;
	LF_OPT_TEST_HOOK(commit, o);
	return lf_opt__enter(o, &v);
}

/* Leave after writing: version + 1 (even).  Precondition: the caller is inside. */
static inline int lf_opt_write_end(struct lf_opt *o)
{
	uint64_t v;

	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	v = ksync_load_relaxed_u64(&o->version);	/* ours: only we change it now */
	if (!(v & 1))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "no writer inside");
	/* release: our data stores happen before the even version is seen */
	ksync_store_release_u64(&o->version, v + 1);
	return KSYNC_OK;
}

/* Leave without having written: version - 1, as it was before write_begin. */
static inline int lf_opt_write_cancel(struct lf_opt *o)
{
	uint64_t v;

	if (!o)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word");
	v = ksync_load_relaxed_u64(&o->version);
	if (!(v & 1))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "no writer inside");
	/* release: pairs with the next writer's acquire CAS */
	ksync_store_release_u64(&o->version, v - 1);
	return KSYNC_OK;
}

/* ---- whole-section helpers --------------------------------------------------------- */

/* Copy n protected words to dst as one consistent snapshot.  Returns the number of
 * retries it took (>= 0) or KSYNC_EINVAL. */
static inline int lf_opt_read(const struct lf_opt *o, uint64_t *dst, const uint64_t *src,
			      size_t n)
{
	uint64_t v;
	int retries = 0;

	if (!o || (n && (!dst || !src)))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word or buffer");
	for (;;) {
		(void)lf_opt_read_begin(o, &v);
		(void)lf_opt_copy_out(dst, src, n);
		LF_OPT_TEST_HOOK(read, o);
		if (lf_opt_read_validate(o, v))
			return retries;
		if (retries < INT32_MAX)
			retries++;
	}
}

/* Replace n protected words with src[0..n) as one update. */
static inline int lf_opt_write(struct lf_opt *o, uint64_t *dst, const uint64_t *src, size_t n)
{
	if (!o || (n && (!dst || !src)))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL version word or buffer");
	(void)lf_opt_write_begin(o);
	(void)lf_opt_copy_in(dst, src, n);
	return lf_opt_write_end(o);
}

#endif /* KSYNC_OPTIMISTIC_H */
