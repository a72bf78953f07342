/*
 * lf_astack.h - lock-free bounded LIFO stack of 8-byte values in a fixed array: the
 * stack of the Synthesis kernel, whose push is one CAS2 of (stack pointer, the slot it
 * moves to), rebuilt for x86-64, where the two words of a CAS2 must be adjacent.
 *
 * Paper: Massalin & Pu 1991, "LIFO stacks": pop reads SP and the element it points at
 * and moves SP by one CAS (like a counter increment); push "requires [a two-]word
 * compare-and-swap": read SP, compute SP - 1, read the old contents of that slot, and
 * CAS2 (SP, slot) from (SP, old) to (SP - 1, elem), so that no concurrent push can
 * overwrite the element (the 68030's CAS2 takes two arbitrary addresses).
 *
 *   static _Alignas(16) struct lf_astack_slot slots[LF_ASTACK_SLOTS(64)];
 *   static struct lf_astack s;
 *   lf_astack_init(&s, slots, 64);
 *   lf_astack_push_mpmc(&s, 42);                  // KSYNC_EFULL when 64 are in
 *   uint64_t v;
 *   if (lf_astack_pop_mpmc(&s, &v) >= 0) use(v);  // KSYNC_EEMPTY when empty
 *
 * Operations (all may run concurrently with all others, from any number of threads):
 *   lf_astack_init(s, slots, capacity)   before sharing; slots: LF_ASTACK_SLOTS(capacity)
 *                                 entries, 16-byte aligned, the caller's
 *   lf_astack_push_mpmc(s, v)     lock-free; LF_ASTACK_WAS_EMPTY (1) if the stack was
 *                                 empty before, 0 otherwise, KSYNC_EFULL if it holds
 *                                 capacity values (nothing changed)
 *   lf_astack_pop_mpmc(s, &v)     lock-free; LF_ASTACK_NOW_EMPTY (1) if v was the last,
 *                                 0 if values remain, KSYNC_EEMPTY if empty (v = 0)
 *   lf_astack_size(s)             wait-free snapshot of the number of values
 * Bad input returns KSYNC_EINVAL and changes nothing: NULL stack, slots or result,
 * capacity 0, slots not 16-byte aligned.
 *
 * Why not the paper's CAS2 as it is.  x86-64 has no CAS of two arbitrary words; its
 * widest CAS, cmpxchg16b, covers 16 adjacent bytes.  Two ways out: (a) a software
 * double-word CAS (include/ksync/mwcas.h with k = 2: 3 CAS for the k+1 algorithm, 7 for
 * Harris-Fraser-Pratt, and every read of SP or a slot must go through ksync_mwcas_read);
 * (b) keep the element being pushed NEXT TO the stack pointer, so that the paper's
 * atomic step "SP moves and the slot receives the element" is one cmpxchg16b of the
 * head, and write the element into its slot afterwards, in a step any thread can
 * complete.  This file does (b) - the array stack of N. Shafiei ("Non-blocking
 * array-based algorithms for stacks and queues", ICDCN 2009) - because it needs no
 * descriptor and keeps plain reads: each push and pop is two cmpxchg16b when
 * uncontended (the head's, then the slot's completion) where the 68030 did one CAS2 (push)
 * or one CAS (pop).  The array is one of 16-byte slots (value + write generation), twice
 * the paper's 8-byte words.
 *
 * The words.
 *   head = {lo: v, hi: (g << idx_bits) | i}: the stack holds i values; the top one is v
 *          (also in the head: it is the element the last push or pop placed); g is the
 *          head's generation.  Changed only by cmpxchg16b.
 *   slots[j] = {lo: value, hi: generation} for j = 0 .. capacity (slot 0 is a sentinel
 *          below the bottom: the empty stack's "top").  Changed only by cmpxchg16b.
 *   Generations are G = 64 - idx_bits bits wide (idx_bits = floor(log2(capacity)) + 1,
 *   so that i = capacity fits) and wrap modulo 2^G.
 * Invariant: when head = {v, g, i}, slots[1 .. i-1] hold the values below the top, and
 * slots[i] is either "pending" {old, g - 1} or "complete" {v, g}.  Completing it is one
 * cmpxchg16b of slots[i] from {old, g - 1} to {v, g} (finish(), below); every operation
 * completes the head it read before it moves the head, and completes its own new head
 * after (so uncontended, the next operation finds it complete and pays one load).
 *   push(x): t = head {v, g, i}; finish(t); i == capacity: full; a = slots[i+1]'s
 *            generation; cmpxchg16b head from t to {x, a + 1, i + 1}; finish the new head.
 *   pop:     t = head {v, g, i}; i == 0: empty; finish(t); b = slots[i-1] {value, gen};
 *            cmpxchg16b head from t to {b.value, b.gen + 1, i - 1}; finish it; return v.
 * Why it is right (Shafiei's argument, in these words).  (1) The head never takes the
 * same hi twice: a new head at index j gets generation slots[j].gen + 1, and slots[j]'s
 * generation grows by one at each completion at j, which happens before the head moves
 * away from j.  So hi names a head state, and a head CAS succeeds only if the head did
 * not change since it was read.  (2) When a head CAS from t succeeds, slots[t.i] is
 * complete (its operation finished it while the head was t), and slots[t.i +- 1] did not
 * change between the read and the CAS: below the top, a slot changes only by completion
 * of a head at its index, and every such head has left and been completed (a stale
 * finish() expects generation g - 1 of a head that is gone, which the slot has passed,
 * so its CAS fails).  (3) So the push's cmpxchg16b is the paper's CAS2: SP moves by one
 * and the new top is x, atomically; the slot write that follows only copies the head's
 * value into the array before anyone can need it there (a pop reads slots[i-1], which is
 * complete; a push reads slots[i+1]'s generation only).  (4) A pop returns the head's
 * value, read in one piece with the hi that its CAS validates.
 * Reading the head: hi, then lo (acquire loads), as lf_stack.h does.  A torn pair {hi of
 * head A, lo of a later head} is harmless: the head CAS fails (by (1) no head has A's hi
 * with another lo), and finish() writes t.lo into slots[A.i] only if its cmpxchg16b finds
 * that slot still pending at A's generation - which means the head is still A at that
 * moment (a head is completed before it is left), so the head was A from the read of hi
 * to the CAS (it never comes back, (1)) and lo was A's.  After a failed CAS the head
 * comes from the cmpxchg16b itself, in one piece.
 * Wrap-around: the generation of one slot repeats after 2^G completions at that index; a
 * stale CAS (head or slot) could then succeed.  G >= 32 for every capacity; the argument
 * and the figures are lf_istack.h's (>= 27 s of one thread stalled between its read and
 * its CAS while the others do nothing but operations at that one index, for G = 32;
 * hours for capacity < 2^24).
 *
 * Memory order: the head's cmpxchg16b is a full barrier: a push is a release (what the
 * pusher wrote before it, e.g. the object v points to, is visible to the popper of v), a
 * pop an acquire.  Shared fields are read with atomic.h wrappers (relaxed or acquire, as
 * marked) and written only by cmpxchg16b.
 *
 * Contention: a failed head CAS backs off (include/ksync/backoff.h) before it retries.
 *
 * Interference injection: LF_ASTACK_TEST_HOOK(op, s, exp) runs just before each CAS
 * attempt; op is the bare token push, pop (the head's cmpxchg16b; exp: struct ksync_u128 *
 * holding the expected head) or finish (a slot's completion; exp: the expected slot
 * value {old, g - 1}).  Empty unless defined before this header is included.
 */
#ifndef KSYNC_LF_ASTACK_H
#define KSYNC_LF_ASTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/backoff.h>
#include <ksync/errors.h>

#ifndef LF_ASTACK_TEST_HOOK
#define LF_ASTACK_TEST_HOOK(op, s, exp) ((void)0)
#endif

#define LF_ASTACK_WAS_EMPTY 1	/* push: the stack was empty before this value */
#define LF_ASTACK_NOW_EMPTY 1	/* pop: this value was the last one */

/* Slots a stack of `capacity` values needs: one per value and the sentinel below. */
#define LF_ASTACK_SLOTS(capacity) ((size_t)(capacity) + 1)

/* {lo: value, hi: generation}; changed only by cmpxchg16b (finish()). */
struct lf_astack_slot {
	struct ksync_u128 w;
};

struct lf_astack {
	struct ksync_u128 head;	/* {top value, (gen << idx_bits) | count}; cmpxchg16b only */
	/* Read-only after init: */
	struct lf_astack_slot *slots;	/* the caller's, capacity + 1 entries */
	uint32_t capacity;
	uint32_t idx_bits;		/* 1 .. 32 */
	uint64_t idx_mask;		/* (1 << idx_bits) - 1 */
	uint64_t gen_mask;		/* 2^G - 1, G = 64 - idx_bits */
};

static inline int lf_astack_init(struct lf_astack *s, struct lf_astack_slot *slots,
				 uint32_t capacity)
{
	uint32_t bits;

	if (!s || !slots || capacity == 0 || ((uintptr_t)slots & 15))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack or slots, capacity 0, or slots not "
				"16-byte aligned");
	bits = 32 - (uint32_t)__builtin_clz(capacity);	/* holds 0 .. capacity */
	s->slots = slots;
	s->capacity = capacity;
	s->idx_bits = bits;
	s->idx_mask = ((uint64_t)1 << bits) - 1;
	s->gen_mask = ~(uint64_t)0 >> bits;
	for (uint64_t j = 0; j < LF_ASTACK_SLOTS(capacity); j++) {
		ksync_store_relaxed_u64(&slots[j].w.lo, 0);
		ksync_store_relaxed_u64(&slots[j].w.hi, 0);
	}
	/* count 0, generation 0, slot 0 complete (generation 0): empty */
	ksync_store_relaxed_u64(&s->head.lo, 0);
	ksync_store_relaxed_u64(&s->head.hi, 0);
	return KSYNC_OK;
}

/* The head: hi, then lo (acquire: pairs with the head's cmpxchg16b, a release, of the
 * operation that wrote it).  The pair may be torn (lo of a later head); see "Reading the
 * head" at the top for why that is harmless. */
static inline struct ksync_u128 lf_astack__read_head(struct lf_astack *s)
{
	struct ksync_u128 t;

	t.hi = ksync_load_acquire_u64(&s->head.hi);
	t.lo = ksync_load_acquire_u64(&s->head.lo);
	return t;
}

/* Complete head t: slots[t.i] from {old, g - 1} to {t.lo, g}.  Does nothing if the slot
 * is already complete or t is no longer the head (then the slot has passed g - 1). */
static inline void lf_astack__finish(struct lf_astack *s, const struct ksync_u128 *t)
{
	struct lf_astack_slot *sl = &s->slots[t->hi & s->idx_mask];
	uint64_t pend = ((t->hi >> s->idx_bits) - 1) & s->gen_mask;
	struct ksync_u128 exp, des;

	/* relaxed: a hint only; the cmpxchg16b decides (full barrier) */
	exp.hi = ksync_load_relaxed_u64(&sl->w.hi);
	if (exp.hi != pend)
		return;
	exp.lo = ksync_load_relaxed_u64(&sl->w.lo);
	des.lo = t->lo;
	des.hi = t->hi >> s->idx_bits;
	for (;;) {
		LF_ASTACK_TEST_HOOK(finish, s, &exp);
		if (ksync_cas128(&sl->w, &exp, des))
			return;
		/* failed: exp = the slot now, in one piece; still pending means only our
		 * read of its value was stale: try again with the value the CPU gave us */
		if (exp.hi != pend)
			return;
	}
}

/* Push v.  Lock-free.  LF_ASTACK_WAS_EMPTY if the stack was empty before, 0 otherwise,
 * KSYNC_EFULL (nothing changed) if it holds capacity values. */
static inline int lf_astack_push_mpmc(struct lf_astack *s, uint64_t v)
{
	struct ksync_u128 t, des;
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;
	uint64_t i, a;

	if (!s)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack");
	t = lf_astack__read_head(s);
	for (;;) {
		i = t.hi & s->idx_mask;
		lf_astack__finish(s, &t);
		if (i == s->capacity)
			return KSYNC_EFULL;
		/* relaxed: slots[i+1] is complete and unchanging while the head is t, and
		 * the CAS below fails if the head moved (see the top comment, (2)) */
		a = ksync_load_relaxed_u64(&s->slots[i + 1].w.hi);
		des.lo = v;
		des.hi = (((a + 1) & s->gen_mask) << s->idx_bits) | (i + 1);
		LF_ASTACK_TEST_HOOK(push, s, &t);
		/* full barrier (release of what we wrote before the push); on failure t =
		 * the current head, in one piece */
		if (ksync_cas128(&s->head, &t, des)) {
			lf_astack__finish(s, &des);
			return i == 0 ? LF_ASTACK_WAS_EMPTY : 0;
		}
		ksync_backoff(&b);	/* bounded: still lock-free */
	}
}

/* Pop the top value into *out.  Lock-free.  LF_ASTACK_NOW_EMPTY if it was the last, 0 if
 * values remain, KSYNC_EEMPTY (*out = 0) if the stack was empty. */
static inline int lf_astack_pop_mpmc(struct lf_astack *s, uint64_t *out)
{
	struct ksync_u128 t, des;
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;
	uint64_t i;

	if (!s || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack or result");
	t = lf_astack__read_head(s);
	for (;;) {
		i = t.hi & s->idx_mask;
		if (i == 0) {
			*out = 0;
			return KSYNC_EEMPTY;
		}
		lf_astack__finish(s, &t);
		/* relaxed: slots[i-1] is complete and unchanging while the head is t; a torn
		 * or stale read is caught by the CAS failing ((2) in the top comment) */
		des.lo = ksync_load_relaxed_u64(&s->slots[i - 1].w.lo);
		des.hi = ksync_load_relaxed_u64(&s->slots[i - 1].w.hi);
		des.hi = (((des.hi + 1) & s->gen_mask) << s->idx_bits) | (i - 1);
		LF_ASTACK_TEST_HOOK(pop, s, &t);
		/* full barrier (acquire for us); on failure t = the current head */
		if (ksync_cas128(&s->head, &t, des)) {
			*out = t.lo;
			lf_astack__finish(s, &des);
			return i == 1 ? LF_ASTACK_NOW_EMPTY : 0;
		}
		ksync_backoff(&b);	/* bounded: still lock-free */
	}
}

/* Number of values when read (0 .. capacity), or KSYNC_EINVAL.  Wait-free. */
static inline int64_t lf_astack_size(struct lf_astack *s)
{
	if (!s)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack");
	return (int64_t)(ksync_load_acquire_u64(&s->head.hi) & s->idx_mask);
}

#endif /* KSYNC_LF_ASTACK_H */
