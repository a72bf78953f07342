/*
 * lf_fifo.h - what libksync's bounded FIFO queues share: boundary callbacks, the storage
 * rules, the interference-injection test hooks, element copies, and the index ring
 * (Nikolaev's NCQ) that the multi-producer and multi-consumer flavours are built on.
 *
 * Papers:
 *   Massalin & Pu 1991, "A Lock-Free Multiprocessor OS Kernel", section "FIFO queues":
 *     array-based queues in four flavours (single/multiple producer x single/multiple
 *     consumer), each doing the minimum synchronization its case needs; elements of a
 *     fixed size or a byte stream of arbitrary blocks; callbacks on reaching and on
 *     leaving the boundary conditions (full, empty), so that blocking queues can be built
 *     by connecting them to thread suspend/resume.
 *   Nikolaev 2019, "A Scalable, Portable, and Memory-Efficient Lock-Free FIFO Queue",
 *     DISC 2019: its naive circular queue of indices (NCQ) and its construction for
 *     arbitrary data (indirection through a queue of free indices and a queue of
 *     allocated indices over a data array, as in SCQD).  Section numbers are not cited:
 *     the paper's text was not available here; names are the paper's.
 *
 * The objects (one header each):
 *   lf_fifo_spsc.h   single producer, single consumer: loads and stores only (no locked
 *                    instruction on x86-64); wait-free.
 *   lf_fifo_spmc.h   single producer (wait-free, no locked instruction), many consumers
 *                    (lock-free, one CAS on the head per dequeue).
 *   lf_fifo_mpsc.h   many producers (lock-free, CAS), single consumer (wait-free, no
 *                    locked instruction); index indirection over NCQ rings.
 *   lf_fifo_mpmc.h   many producers, many consumers, both lock-free (CAS); index
 *                    indirection over NCQ rings.
 *   lf_bytes_spsc.h  byte stream, single producer, single consumer: blocks of bytes
 *                    written and read all-or-nothing; wait-free, no locked instruction.
 *
 * ---- Storage ---------------------------------------------------------------------
 * Every queue lives in a caller-declared struct plus caller-provided storage (no
 * allocation anywhere: the headers are freestanding).  lf_fifo_storage_size_<flavour>
 * (capacity, elem_size) returns the number of bytes the storage needs (0 for bad
 * arguments); lf_fifo_init_<flavour> checks it.  The storage must be aligned to 8 bytes
 * (LF_FIFO_STORAGE_ALIGN; 64 keeps the slots off the struct's cache lines), must not
 * move while the queue is live and belongs to the queue until then.  Capacity is a
 * power of two, 1 <= capacity <= LF_FIFO_MAX_CAPACITY (2^31); 1 <= elem_size <=
 * LF_FIFO_MAX_ELEM_SIZE (2^31 - 1), any size in between.
 *
 * ---- Boundary callbacks -------------------------------------------------------------
 * An optional `const struct lf_fifo_callbacks *` given to init (NULL: none; any member
 * may be NULL).  Four events, one per boundary transition of the queue's occupancy:
 *
 *   nonempty  an enqueue took the queue from empty to one element   (leaves "empty")
 *   empty     a dequeue took the queue from one element to empty     (reaches "empty")
 *   full      an enqueue took the queue to `capacity` (reaches "full")
 *   nonfull   a dequeue took the queue from `capacity` down (leaves "full")
 *
 * Exactly when each fires, under any concurrency:
 *   1. Only the operation whose linearization point made the transition may fire it,
 *      in its own thread, after that point and before it returns.  Hence each event
 *      fires AT MOST ONCE PER TRANSITION, and never for a transition that did not
 *      happen.  An enqueue that fails with KSYNC_EFULL or a dequeue that fails with
 *      KSYNC_EEMPTY fires nothing.
 *   2. The operation fires the event when it can prove the transition from one read of
 *      the other side's state: for a transition that LEAVES a boundary (nonempty,
 *      nonfull) a read made just before its linearization point that shows the queue
 *      at the boundary; for one that REACHES a boundary (empty, full) a read made just
 *      after it that shows the queue at the boundary.  Each header says which word.
 *   3. Therefore the event is certain (exactly once) when no other operation takes
 *      effect between that read and the linearization point (whichever comes first);
 *      in particular every transition fires when the queue is used by one thread at a
 *      time.  When an operation of the other side does slip in between, the event can
 *      be missed - and then the other side's operation has just moved the queue off
 *      the boundary again (e.g. a "full" missed because a dequeue made room at once,
 *      which fires "nonfull" if its own read sees the queue full).
 * A blocking layer must therefore not rely on a callback alone to avoid a lost wakeup:
 * a sleeper announces itself, re-checks the queue (KSYNC_EEMPTY/KSYNC_EFULL), then
 * sleeps; a waker that ran the operation checks for announced sleepers after it.
 * Callbacks run with nothing held; they must not re-enter the same side of the same
 * queue (a single-producer queue's producer callback must not enqueue into it).
 * Without callbacks an operation pays one predictable branch; with callbacks it pays
 * the extra read(s) of the other side (a cache miss when the other side is active).
 *
 * For the indirect flavours (mpsc, mpmc) "full" means "no free cell": the cells that
 * operations in progress hold (an enqueue between taking a cell and publishing it, a
 * dequeue between taking an element and returning its cell) count as occupied, so
 * enqueue can return KSYNC_EFULL with fewer than `capacity` elements visible while such
 * operations are preempted.  So there are two counts: full/nonfull are transitions of
 * the cells in use (an enqueue's cell claim, a dequeue's cell return), empty/nonempty of
 * the published elements (an enqueue's publication, a dequeue's claim).  The two steps
 * of one operation are separate linearization points for the two counts.
 *
 * ---- Test hooks (interference injection) ----------------------------------------
 * LF_FIFO_INTERFERE(site, word, expected) runs between the read that a CAS depends on
 * and the CAS itself (`word`: the uint64_t the CAS targets; `expected`: the address of
 * the uint64_t value it expects, which a hook may spoil to force a failure);
 * LF_FIFO_RETRY(site) runs after that CAS failed, just before the operation retries.
 * `site` is a bare token naming the CAS:
 *   enq_slot   MP enqueue into an NCQ ring: the CAS that writes the slot (mpsc, mpmc)
 *   deq_head   MC dequeue from an NCQ ring: the CAS that advances the head (mpsc:
 *              producers taking a free cell; mpmc: both sides)
 *   spmc_head  spmc dequeue: the CAS that advances the head
 * Both are empty unless a translation unit defines them before including a queue
 * header.  tests/unit/test_lf_fifo_interfere.c defines LF_FIFO_INTERFERE to run one
 * complete conflicting operation exactly once (what another CPU would do in the
 * window) and LF_FIFO_RETRY to count, and checks that exactly one retry happened;
 * bench/lf_fifo_cost.c spoils *expected instead, to time the retry path alone.  The helping CAS on an NCQ tail has no hooks:
 * its failure means another thread already did the work, and it is never retried.
 *
 * ---- The index ring (NCQ) -------------------------------------------------------------
 * struct lf_fifo__ncq is internal (double underscore): a ring of n = 2^order 64-bit
 * slots carrying indices 0..n-1, used only in pairs (a ring of free cell indices and a
 * ring of used cell indices) so that, as Nikolaev's indirection guarantees, the n
 * indices in circulation never overfill a ring: an enqueue never finds its ring full.
 * Positions are 64-bit counters; position p lives in slot p & (n-1) and its cycle is
 * p & ~(n-1).  A slot word is `cycle(p) | index` for the last position written to it.
 *   enqueue at tail position t: the slot must hold cycle(t) - n (last written for
 *     t - n, consumed since, by the never-full argument); write `cycle(t) | index` by
 *     CAS (MP) or by a store (SP), then advance the tail (CAS, helped by anyone who
 *     sees the slot already written; SP: a private counter).
 *   dequeue at head position h: if the slot holds cycle(h) the element is there: read
 *     its index and advance the head by CAS (MC; the CAS is the linearization point and
 *     the claim) or by a store (SC).  If it holds cycle(h) - n nothing was written at h:
 *     the ring is empty.  Anything else means h was stale: retry.
 * Strict lock-freedom (what issue #3 asks of the MP enqueue): no step leaves
 * the ring in a state that only the thread which made it can undo.  An enqueue is
 * published by the single CAS that writes its slot, so no consumer ever waits for a
 * slot reserved but not yet written (the flaw of ck_ring's MP enqueue and of Vyukov's
 * bounded queue); a tail left behind by a preempted enqueuer is advanced by the next
 * enqueuer that sees the slot written; a dequeue claims by its head CAS and holds
 * nothing before it.  A producer preempted between taking a free cell and publishing it
 * holds only that cell (the queue's usable capacity is one less while it sleeps).  Every
 * failed CAS or retry means another operation's CAS succeeded: lock-free, not
 * wait-free.  Positions are 64-bit and cycles compare exactly, so ABA needs 2^64
 * operations during one preemption.
 */
#ifndef KSYNC_LF_FIFO_H
#define KSYNC_LF_FIFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/backoff.h>
#include <ksync/errors.h>

#define LF_FIFO_CACHE_LINE 64
#define LF_FIFO_STORAGE_ALIGN 8
#define LF_FIFO_MAX_CAPACITY ((uint64_t)1 << 31)
#define LF_FIFO_MAX_ELEM_SIZE (((size_t)1 << 31) - 1)

/* Fast paths are forced inline (as Concurrency Kit's CK_CC_INLINE does): the queue
 * operations are a handful of instructions whose cost a call would double.  The
 * callback paths are kept out of line so the fast paths stay small. */
#define LF_FIFO__HOT static inline __attribute__((always_inline))
#define LF_FIFO__SLOW static __attribute__((noinline, unused))

#ifndef LF_FIFO_INTERFERE
#define LF_FIFO_INTERFERE(site, word, expected) ((void)0)
#endif
#ifndef LF_FIFO_RETRY
#define LF_FIFO_RETRY(site) ((void)0)
#endif

/* Boundary callbacks (see the top of this file).  Read-only while the queue is live. */
struct lf_fifo_callbacks {
	void (*nonempty)(void *arg);	/* an enqueue made the queue non-empty */
	void (*empty)(void *arg);	/* a dequeue made the queue empty */
	void (*full)(void *arg);	/* an enqueue made the queue full */
	void (*nonfull)(void *arg);	/* a dequeue made the queue non-full */
	void *arg;			/* passed to each */
};

/* Which events one operation observed (bit set = fire). */
enum {
	LF_FIFO__EV_NONEMPTY = 1,
	LF_FIFO__EV_EMPTY = 2,
	LF_FIFO__EV_FULL = 4,
	LF_FIFO__EV_NONFULL = 8,
};

/* Call the callbacks of the events in `ev`.  Order: full, empty, nonempty, nonfull -
 * an enqueue can fire full then nonempty (the indirect flavours take the last free cell
 * before publishing the element), a dequeue empty then nonfull; with capacity 1 both
 * of a direct queue's events come from the same instant. */
static inline void lf_fifo__fire(const struct lf_fifo_callbacks *cb, unsigned ev)
{
	if ((ev & LF_FIFO__EV_FULL) && cb->full)
		cb->full(cb->arg);
	if ((ev & LF_FIFO__EV_EMPTY) && cb->empty)
		cb->empty(cb->arg);
	if ((ev & LF_FIFO__EV_NONEMPTY) && cb->nonempty)
		cb->nonempty(cb->arg);
	if ((ev & LF_FIFO__EV_NONFULL) && cb->nonfull)
		cb->nonfull(cb->arg);
}

/* True if capacity is a power of two within the supported range. */
static inline bool lf_fifo__capacity_ok(uint64_t capacity)
{
	return capacity != 0 && capacity <= LF_FIFO_MAX_CAPACITY &&
	       (capacity & (capacity - 1)) == 0;
}

/* capacity * elem_size + extra, or 0 if it overflows size_t / arguments are bad. */
static inline size_t lf_fifo__bytes(uint64_t capacity, size_t elem_size, size_t extra)
{
	size_t data;

	if (!lf_fifo__capacity_ok(capacity) || elem_size == 0 ||
	    elem_size > LF_FIFO_MAX_ELEM_SIZE)
		return 0;
	if (elem_size > SIZE_MAX / (size_t)capacity)
		return 0;
	data = (size_t)capacity * elem_size;
	if (data > SIZE_MAX - extra)
		return 0;
	return data + extra;
}

static inline unsigned lf_fifo__log2(uint64_t pow2)
{
	return (unsigned)__builtin_ctzll(pow2);
}

/* Unaligned, aliasing-safe views for the fixed-size moves below. */
typedef uint16_t lf_fifo__u16 __attribute__((may_alias, aligned(1)));
typedef uint32_t lf_fifo__u32 __attribute__((may_alias, aligned(1)));
typedef uint64_t lf_fifo__u64 __attribute__((may_alias, aligned(1)));

/*
 * Copy one element between a cell and the caller's buffer, where exactly one thread
 * accesses the cell (the queue's protocol hands it over with release/acquire): a plain
 * copy, with the common sizes as single moves (no call to memcpy; gcc would fold
 * per-size __builtin_memcpy cases back into one variable-size call).
 */
LF_FIFO__HOT void lf_fifo__copy(void *dst, const void *src, size_t n)
{
	/* Hide the pointers' provenance from the optimizer (no instruction): the caller's
	 * object may be smaller than a case below that is never taken for it, which gcc's
	 * -Warray-bounds would otherwise flag after inlining. */
	__asm__("" : "+r"(dst), "+r"(src));
	if (__builtin_expect(n == 8, 1)) {	/* the common case: straight-line code */
		*(lf_fifo__u64 *)dst = *(const lf_fifo__u64 *)src;
		return;
	}
	switch (n) {
	case 1: *(unsigned char *)dst = *(const unsigned char *)src; return;
	case 2: *(lf_fifo__u16 *)dst = *(const lf_fifo__u16 *)src; return;
	case 4: *(lf_fifo__u32 *)dst = *(const lf_fifo__u32 *)src; return;
	case 8: *(lf_fifo__u64 *)dst = *(const lf_fifo__u64 *)src; return;
	case 16: {
		uint64_t a = ((const lf_fifo__u64 *)src)[0], b = ((const lf_fifo__u64 *)src)[1];

		((lf_fifo__u64 *)dst)[0] = a;
		((lf_fifo__u64 *)dst)[1] = b;
		return;
	}
	default: __builtin_memcpy(dst, src, n); return;
	}
}

/*
 * Copies for cells that a stale reader may read while the owner writes them (spmc):
 * every access is a relaxed atomic, so a torn value is possible (and discarded by the
 * reader's failing CAS) but no data race is.  The unit is the widest of 8/4/1 bytes
 * dividing elem_size; cells are then aligned to it (storage is 8-aligned).  The caller's
 * buffer has any alignment: it is reached through __builtin_memcpy of one unit.
 */
static inline void lf_fifo__store_cell(unsigned char *cell, const unsigned char *src,
				       size_t n)
{
	size_t i;

	if ((n & 7) == 0) {
		for (i = 0; i < n; i += 8) {
			uint64_t w;

			__builtin_memcpy(&w, src + i, 8);
			/* relaxed: published later by the release store of the tail */
			ksync_store_relaxed_u64((uint64_t *)(void *)(cell + i), w);
		}
	} else if ((n & 3) == 0) {
		for (i = 0; i < n; i += 4) {
			uint32_t w;

			__builtin_memcpy(&w, src + i, 4);
			ksync_store_relaxed_u32((uint32_t *)(void *)(cell + i), w);
		}
	} else {
		for (i = 0; i < n; i++)
			ksync_store_relaxed_u8(cell + i, src[i]);
	}
}

static inline void lf_fifo__load_cell(unsigned char *dst, const unsigned char *cell,
				      size_t n)
{
	size_t i;

	if ((n & 7) == 0) {
		for (i = 0; i < n; i += 8) {
			/* relaxed: ordered after the acquire load of the tail; validated by
			 * the head CAS that follows (acq_rel: these loads precede it) */
			uint64_t w = ksync_load_relaxed_u64((const uint64_t *)(const void *)(cell + i));

			__builtin_memcpy(dst + i, &w, 8);
		}
	} else if ((n & 3) == 0) {
		for (i = 0; i < n; i += 4) {
			uint32_t w = ksync_load_relaxed_u32((const uint32_t *)(const void *)(cell + i));

			__builtin_memcpy(dst + i, &w, 4);
		}
	} else {
		for (i = 0; i < n; i++)
			dst[i] = ksync_load_relaxed_u8(cell + i);
	}
}

/* ---- the NCQ index ring (internal) --------------------------------------------------- */

struct lf_fifo__ncq {
	/* Dequeue position.  MC rings: advanced only by CAS (acq_rel); SC rings: written
	 * only by the consumer (release store).  Read by enqueuers for the nonempty
	 * callback proof. */
	_Alignas(LF_FIFO_CACHE_LINE) uint64_t head;
	/* Enqueue position.  MP rings: advanced only by CAS (acq_rel), by the enqueuer or
	 * a helper that saw the slot written.  SP rings: private to the producer. */
	_Alignas(LF_FIFO_CACHE_LINE) uint64_t tail;
	/* Read-only after init. */
	_Alignas(LF_FIFO_CACHE_LINE) uint64_t *slot;	/* n words, in the storage */
	uint64_t mask;					/* n - 1 */
};

#define LF_FIFO__NCQ_EMPTY UINT64_MAX	/* dequeue result: ring empty */

/* Empty ring: head = tail = n; every slot holds cycle 0 = cycle(n) - n ("written for
 * position slot - n and consumed"). */
static inline void lf_fifo__ncq_init_empty(struct lf_fifo__ncq *r, uint64_t *slots,
					   uint64_t n)
{
	r->slot = slots;
	r->mask = n - 1;
	for (uint64_t i = 0; i < n; i++)
		slots[i] = 0;
	r->head = n;
	r->tail = n;
}

/* Full ring of indices 0..n-1 in order: head = n, tail = 2n, slot i = cycle(n) | i. */
static inline void lf_fifo__ncq_init_full(struct lf_fifo__ncq *r, uint64_t *slots,
					  uint64_t n)
{
	r->slot = slots;
	r->mask = n - 1;
	for (uint64_t i = 0; i < n; i++)
		slots[i] = n | i;
	r->head = n;
	r->tail = 2 * n;
}

/*
 * Multi-producer enqueue of idx (never finds the ring full: see the top).  If
 * `was_empty` is non-NULL, *was_empty is set to whether the ring was empty right before
 * this enqueue's linearization point (its slot CAS), proved by reading head == t before
 * the CAS: the head cannot pass t before position t is written, and a successful CAS
 * means nobody else wrote t.  Lock-free.
 */
LF_FIFO__HOT void lf_fifo__ncq_enq_mp(struct lf_fifo__ncq *r, uint64_t idx, bool *was_empty)
{
	uint64_t mask = r->mask, n = mask + 1;
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;

	for (;;) {
		/* acquire: pairs with the acq_rel CAS that advanced the tail, so the slot
		 * read below sees at least the write that CAS's thread saw */
		uint64_t t = ksync_load_acquire_u64(&r->tail);
		uint64_t *s = &r->slot[t & mask];
		/* acquire: pairs with the acq_rel slot CAS of position t - n / t */
		uint64_t w = ksync_load_acquire_u64(s);
		uint64_t cyc = t & ~mask;

		if ((w & ~mask) == cyc) {
			/* position t already written by another enqueuer whose tail CAS is
			 * pending: help it (failure: someone else did) */
			ksync_cas_strong_acq_rel_u64(&r->tail, &t, t + 1);
			continue;
		}
		if ((w & ~mask) != cyc - n)
			continue;	/* t is stale (the slot is ahead): reread the tail */
		if (was_empty)
			/* acquire: pairs with the dequeuers' head CAS/store */
			*was_empty = ksync_load_acquire_u64(&r->head) == t;
		LF_FIFO_INTERFERE(enq_slot, s, &w);
		/* acq_rel: release publishes the caller's writes to the cell `idx` (and
		 * everything before) to the dequeuer that reads this slot with acquire */
		if (ksync_cas_strong_acq_rel_u64(s, &w, cyc | idx)) {
			/* advance the tail past our position (failure: a helper did it) */
			ksync_cas_strong_acq_rel_u64(&r->tail, &t, t + 1);
			return;
		}
		LF_FIFO_RETRY(enq_slot);
		ksync_backoff(&b);	/* bounded: still lock-free */
	}
}

/*
 * Single-producer enqueue (the caller is the only enqueuer of this ring; dequeuers may
 * run concurrently).  No locked instruction: the slot is published by a release store;
 * the tail is private.  *was_empty as for the MP enqueue (read of head == t before the
 * store).  Wait-free.
 */
LF_FIFO__HOT void lf_fifo__ncq_enq_sp(struct lf_fifo__ncq *r, uint64_t idx, bool *was_empty)
{
	uint64_t t = r->tail;	/* private to the single enqueuer */

	if (was_empty)
		*was_empty = ksync_load_acquire_u64(&r->head) == t;
	/* release: publishes the cell `idx` (the caller's earlier accesses to it) to the
	 * dequeuer that reads this slot with acquire */
	ksync_store_release_u64(&r->slot[t & r->mask], (t & ~r->mask) | idx);
	r->tail = t + 1;
}

/* After a dequeue at position h: is the ring empty, i.e. was position h + 1 never
 * written (its slot still holds cycle(h + 1) - n)?  If so it was empty at the
 * dequeue's linearization point too (a written position stays written). */
LF_FIFO__HOT bool lf_fifo__ncq_empty_after(struct lf_fifo__ncq *r, uint64_t h)
{
	uint64_t mask = r->mask, p = h + 1;
	/* acquire: orders this read after the dequeue's own CAS/store */
	uint64_t w = ksync_load_acquire_u64(&r->slot[p & mask]);

	return (w & ~mask) == (p & ~mask) - (mask + 1);
}

/*
 * Multi-consumer dequeue: the index at the head, or LF_FIFO__NCQ_EMPTY.  If
 * `now_empty` is non-NULL and an index was taken, *now_empty says whether the ring was
 * left empty (lf_fifo__ncq_empty_after).  Lock-free.
 */
LF_FIFO__HOT uint64_t lf_fifo__ncq_deq_mc(struct lf_fifo__ncq *r, bool *now_empty)
{
	uint64_t mask = r->mask, n = mask + 1;
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;
	/* acquire: pairs with the head CAS of earlier dequeuers */
	uint64_t h = ksync_load_acquire_u64(&r->head);

	for (;;) {
		/* acquire: pairs with the release of the enqueue that wrote the slot, so the
		 * cell it names is visible to the caller after a successful claim */
		uint64_t w = ksync_load_acquire_u64(&r->slot[h & mask]);
		uint64_t cyc = h & ~mask;

		if ((w & ~mask) == cyc) {
			LF_FIFO_INTERFERE(deq_head, &r->head, &h);
			/* acq_rel: the claim.  Success: position h is ours, and our reads
			 * above precede it.  Failure: h <- the current head. */
			if (ksync_cas_strong_acq_rel_u64(&r->head, &h, h + 1)) {
				if (now_empty)
					*now_empty = lf_fifo__ncq_empty_after(r, h);
				return w & mask;
			}
			LF_FIFO_RETRY(deq_head);
			ksync_backoff(&b);	/* bounded: still lock-free */
			continue;
		}
		if ((w & ~mask) == cyc - n)
			return LF_FIFO__NCQ_EMPTY;	/* position h never written */
		/* h is stale (the slot is ahead): reread the head */
		h = ksync_load_acquire_u64(&r->head);
	}
}

/*
 * Single-consumer dequeue (the caller is the only dequeuer; enqueuers may run
 * concurrently).  No locked instruction: the head is advanced by a release store (read
 * only by enqueuers' callback proofs).  Wait-free.
 */
LF_FIFO__HOT uint64_t lf_fifo__ncq_deq_sc(struct lf_fifo__ncq *r, bool *now_empty)
{
	uint64_t mask = r->mask;
	uint64_t h = ksync_load_relaxed_u64(&r->head);	/* only this thread writes it */
	/* acquire: pairs with the slot write (release) of the enqueue at h */
	uint64_t w = ksync_load_acquire_u64(&r->slot[h & mask]);

	if ((w & ~mask) != (h & ~mask))
		return LF_FIFO__NCQ_EMPTY;	/* position h not written yet */
	/* release: orders our reads of the slot before enqueuers see the head move */
	ksync_store_release_u64(&r->head, h + 1);
	if (now_empty)
		*now_empty = lf_fifo__ncq_empty_after(r, h);
	return w & mask;
}

#endif /* KSYNC_LF_FIFO_H */
