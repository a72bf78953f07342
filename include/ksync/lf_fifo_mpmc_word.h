/*
 * lf_fifo_mpmc_word.h - bounded FIFO queue of 8-byte words (uint64_t, or pointers cast
 * to uintptr_t), many producers and many consumers, strictly lock-free, with two locked
 * instructions per operation when uncontended (the cell's CAS, then the hint's).
 *
 *   lf_fifo_storage_size_mpmc_word(capacity)              16 * capacity bytes (0: bad)
 *   lf_fifo_init_mpmc_word(q, storage, bytes, capacity)   KSYNC_OK | KSYNC_EINVAL
 *   lf_fifo_enqueue_mpmc_word(q, v)                       KSYNC_OK | KSYNC_EFULL | KSYNC_EINVAL
 *   lf_fifo_dequeue_mpmc_word(q, &v)                      KSYNC_OK | KSYNC_EEMPTY | KSYNC_EINVAL
 * Capacity: a power of two, 1 <= capacity <= LF_FIFO_MAX_CAPACITY (2^31); it is exact
 * (capacity elements fit, no slot is lost to operations in progress).  Storage: at least
 * lf_fifo_storage_size_mpmc_word(capacity) bytes, 16-byte aligned (cmpxchg16b), owned by
 * the queue while it is live (lf_fifo.h, "Storage").  No boundary callbacks and no
 * LF_FIFO_INTERFERE sites (the atomic-step hook of atomic.h still sees every step).
 *
 * ---- The algorithm -------------------------------------------------------------------
 * A ring of n = capacity cells of 16 bytes {stamp, value} and two 64-bit hints, head
 * and tail.  An enqueue writes its cell with one 16-byte CAS (lock cmpxchg16b, atomic.h's
 * ksync_cas128), a dequeue with one 8-byte CAS of the stamp alone (below).
 * Positions p = 0, 1, 2 ... are 64-bit counters; position p lives in cell p mod n.  A
 * cell's stamp says which position it belongs to and whether it holds that position's
 * element (the layout of Vyukov's bounded queue, with the state bit made explicit so
 * that capacity 1 works):
 *     stamp == 2p       free for position p: the enqueue at p may write it
 *     stamp == 2p + 1   holds the element enqueued at position p
 *   enqueue at p:  {2p, *}      -> {2p + 1, v}     16-byte CAS: reserves AND publishes
 *   dequeue at p:  stamp 2p + 1 -> 2(p + n)        8-byte CAS: claims; the value, read
 *                                                  between the stamp load and the CAS,
 *                                                  is p's: only an enqueue changes it,
 *                                                  and none can before the stamp moves
 * Stamps of a cell only grow.  The enqueue CAS of p can only race other enqueues of p
 * and the dequeue CAS of p only other dequeues of p: producers and consumers never make
 * each other's CAS fail.
 *
 * head and tail are HINTS, not owners of positions: tail = t promises that every
 * position < t has been enqueued, head = h that every position < h has been dequeued.
 * They are advanced after the cell CAS by a CAS that only moves them forward
 * (lf_fifo__word_hint: a hint is the maximum of the positions stored to it); they lag
 * by the operations between their cell CAS and their hint CAS, never move back, and no
 * operation ever waits for them.  An operation starts at its hint and walks (or jumps)
 * forward:
 *   enqueue at t (all positions < t enqueued), cell stamp s:
 *     s == 2t            CAS; success: done (linearization point).  Failure: another
 *                        enqueue took t; the CAS returned the cell, look at it again.
 *     s == 2(t - n) + 1  position t - n still holds its element: since enqueues and
 *                        dequeues each happen in position order (below), positions
 *                        t - n .. t - 1 all hold elements at the instant of this load:
 *                        FULL, linearized at the load.
 *     anything else      t was already enqueued (the stamp is of t or a later position
 *                        of the cell); jump to the first position the stamp proves is
 *                        not yet known to be enqueued: s = 2p + 1 -> p + 1;
 *                        s = 2p -> p - n + 1 (p free means p - n was dequeued).
 *   dequeue at h (all positions < h dequeued):
 *     s == 2h + 1        CAS; success: done (linearization point).  Failure: another
 *                        dequeue took h; look again.
 *     s == 2h            position h not enqueued, so (in-order enqueue) none after it
 *                        either, and all before it were dequeued: EMPTY, linearized at
 *                        the load.
 *     anything else      h was already dequeued; jump to (s >> 1) - n + 1.
 *   After each such step the operation backs off (bounded) and moves on to the hint if
 *   the hint is now ahead (lf_fifo__word_taken): a hint is a valid start whenever read.
 *   Positions are therefore enqueued in order (the CAS at t is attempted only when all
 *   positions < t are known enqueued, and it fails if t already is) and dequeued in
 *   order, the dequeue of p takes the element enqueued at p, and every FULL/EMPTY is a
 *   true instantaneous state: the queue is a linearizable FIFO with exact capacity.
 *   No other stamp can appear (stamps grow, and the hint's promise bounds them below),
 *   so the walk always moves forward.
 *
 * Progress: strictly lock-free in the sense of lf_fifo.h (issue #3): nothing is
 * reserved before the single CAS that performs the operation, so a producer or consumer
 * stopped at ANY step holds nothing that anyone else waits for, and it cannot leave a
 * hint behind: stopped before its hint CAS it has not moved the hint, and when it
 * resumes its CAS fails against the hint the others moved past it (tested:
 * test_lf_fifo_mpmc_word.c, lf_fifo_mpmc_word_late_hint: the next operation reads one
 * cell).  A hint lags only by the operations in progress between their cell CAS and
 * their hint CAS; each lagging position costs a walk step (one cell), followed by a
 * bounded backoff only when the stamp says the position was taken just now
 * (lf_fifo__word_taken).
 * Each retry follows another operation's successful CAS or a forward move that some
 * completed operation made possible: lock-free, not wait-free.  Stamps are 2p mod 2^64,
 * so ABA needs 2^63 operations during one stop.
 *
 * ---- Why this design, against the papers -----------------------------------------------
 * Nikolaev 2019 (DISC, "A Scalable, Portable, and Memory-Efficient Lock-Free FIFO
 * Queue"): NCQ, used by lf_fifo_mpmc.h, keeps cycles in its slots and CASes head and
 * tail; SCQ replaces those CASes by fetch-and-add, then needs a dequeuer that overtakes
 * a slow enqueuer to mark its slot (cycle/"unsafe" bits), a threshold counter so that
 * dequeuers on an empty queue do not livelock, and, for a bounded queue of data, either
 * indirection (two rings plus a data array, SCQD) or a count.  Morrison & Afek 2013
 * (LCRQ) is the same FAA-on-head/tail scheme over {safe|index, value} cells updated by
 * CAS2 (this header's cell shape), closing a ring that is full and chaining a new one.
 * An FAA design costs two locked instructions per operation (the FAA and the cell CAS;
 * SCQ adds a threshold reset on enqueue and a decrement on a failing dequeue), four per
 * enqueue/dequeue pair, where Concurrency Kit's ck_ring pays two - and a linearizable
 * FIFO needs at least one read-modify-write (or a store-load fence) per operation
 * (Attiya et al. 2011, "Laws of Order", POPL).  FAA wins when many CPUs
 * hammer one counter (a CAS there can fail over and over, an FAA cannot); ksync targets
 * 2-8 CPUs.  So this queue keeps NCQ/SCQ's position cycles and LCRQ's 16-byte cell CAS,
 * but lets the cell CAS itself reserve the position - the cell, not a counter, is the
 * point of contention, as in Tsigas & Zhang 2001 ("A simple, fast and scalable
 * non-blocking concurrent FIFO queue for shared memory multiprocessor systems", SPAA),
 * whose head and tail are likewise hints updated lazily - which removes the FAA, the
 * overtaking marks, the threshold and the full check (a full or empty queue is read off
 * one stamp).  Two locked instructions per operation, the cell's CAS and the hint's
 * forward-only CAS (the hint was a plain store, one locked instruction, until a thread
 * stopped between its hint load and store was seen to cost the others a walk of up to
 * a ring, one cell per step: lf_fifo__word_hint); contending enqueuers (dequeuers)
 * fight over one cell at a time and the loser moves to the next cell at once (the
 * failed CAS returned the cell).
 *
 * Cost floor: an element of 64 arbitrary bits plus the stamp that makes it ABA-safe do
 * not fit one 8-byte CAS, so the enqueue needs cmpxchg16b: on the 2-vCPU AMD EPYC KVM
 * guest this project is measured on, a loop of uncontended lock cmpxchg16b costs ~11.8
 * TSC ticks per instruction against ~6.5 for an 8-byte lock cmpxchg (ck_ring's whole MP
 * enqueue + dequeue pair is two of those, ~11 ticks in bench/cmp_peers).  The dequeue therefore
 * CASes the stamp word alone with lock cmpxchg (8 bytes), inside a cell that enqueues
 * CAS as 16 bytes (~18 ticks per pair instead of ~24 with cmpxchg16b on both sides;
 * the hints' forward-only CASes add ~5 more: 21.1-21.7 ticks per pair in cmp_peers,
 * docs/scaling.md).
 * This mixes operand sizes on one location, which the Intel SDM (vol. 3, 8.1.2.2)
 * advises against for semaphores ("identical addresses and operand lengths"); the
 * queue relies instead on what the SDM guarantees for any locked instruction on a
 * naturally aligned operand within one cache line (a 16-aligned cell never straddles
 * one): the read-modify-write is atomic with respect to all other accesses.  Should
 * that be judged too bold, dequeue can CAS the 16 bytes {2h + 1, val} -> {2(h + n),
 * val} with ksync_cas128 instead, changing nothing else.  The dequeue's CAS fails only
 * if the stamp moved, which only another dequeue of the same position can do.  Under
 * ThreadSanitizer the 8-byte CAS is an ordinary atomic and ksync_cas128 announces its
 * release/acquire on the cell's address (= the stamp's): the happens-before edges are
 * the same.
 *
 * Memory orders (x86-64: every acquire load and release store is a plain mov, and
 * cmpxchg16b is a full barrier):
 *   - the enqueue's cell CAS is the publication: the value travels in the CAS itself,
 *     and the producer's earlier writes (e.g. to the object a pointer names) are
 *     ordered before it (full barrier, so release);
 *   - the dequeue's stamp CAS is acq_rel: its release half orders the dequeuer's load
 *     of the value before the stamp says "free for p + n", i.e. before any enqueue can
 *     overwrite it;
 *   - the stamp load is acquire (pairs with the enqueue CAS that wrote it, so a
 *     dequeuer that sees 2h + 1 then loads the value written with it, and sees the
 *     producer's earlier writes); the value load after it is relaxed: for an enqueue
 *     it is only the CAS's expected value, for a dequeue it is h's value because the
 *     stamp CAS that follows succeeds only if the stamp did not move (x86 never
 *     reorders the two loads, so no test can catch a missing acquire here: the
 *     argument is the C11 one);
 *   - hint CASes are release and hint loads acquire: a thread that reads tail = t
 *     also sees the cells written by the enqueues < t (the "promise" above), so the
 *     stamps it loads are at least that new.
 */
#ifndef KSYNC_LF_FIFO_MPMC_WORD_H
#define KSYNC_LF_FIFO_MPMC_WORD_H

#include <ksync/lf_fifo.h>

#define LF_FIFO_MPMC_WORD_ALIGN 16	/* storage alignment (cmpxchg16b) */

struct lf_fifo_mpmc_word {
	/* Dequeue hint: every position < head has been dequeued.  Written by any consumer
	 * with a release CAS after its claim CAS, only forward (lf_fifo__word_hint: it
	 * never moves back; it lags by the claims not yet followed by their hint CAS);
	 * read (acquire) by consumers only. */
	_Alignas(LF_FIFO_CACHE_LINE) uint64_t head;
	/* Enqueue hint: every position < tail has been enqueued.  Written by any producer
	 * with a release CAS after its publishing CAS, as head; read by producers only. */
	_Alignas(LF_FIFO_CACHE_LINE) uint64_t tail;
	/* Read-only after init. */
	_Alignas(LF_FIFO_CACHE_LINE) struct ksync_u128 *cell;	/* n cells in the storage:
							 * lo = stamp, hi = value; changed only
							 * by the enqueue's ksync_cas128 and the
							 * dequeue's CAS of lo */
	uint64_t mask;						/* n - 1 */
};

/* Bytes of storage for `capacity` words: 16 * capacity; 0 for a bad capacity. */
static inline size_t lf_fifo_storage_size_mpmc_word(uint64_t capacity)
{
	return lf_fifo__bytes(capacity, sizeof(struct ksync_u128), 0);
}

/* Set up an empty queue over `storage` (16-byte aligned, storage_bytes >=
 * lf_fifo_storage_size_mpmc_word(capacity)).  KSYNC_OK or KSYNC_EINVAL (nothing
 * written).  Not thread-safe. */
static inline int lf_fifo_init_mpmc_word(struct lf_fifo_mpmc_word *q, void *storage,
					 size_t storage_bytes, uint64_t capacity)
{
	struct ksync_u128 *c = storage;

	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	if (!lf_fifo__capacity_ok(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity not a power of two in [1, 2^31]");
	if (lf_fifo_storage_size_mpmc_word(capacity) == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "16 * capacity overflows");
	if (!storage)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL storage");
	if ((uintptr_t)storage % LF_FIFO_MPMC_WORD_ALIGN)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage not 16-byte aligned");
	if (storage_bytes < lf_fifo_storage_size_mpmc_word(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL,
				"storage smaller than lf_fifo_storage_size_mpmc_word()");
	for (uint64_t i = 0; i < capacity; i++) {
		c[i].lo = 2 * i;	/* free for position i */
		c[i].hi = 0;
	}
	q->cell = c;
	q->mask = capacity - 1;
	q->head = 0;
	q->tail = 0;
	return KSYNC_OK;
}

/* Move a hint forward to `pos` unless it is already there or beyond (compared modulo
 * 2^64), and never back: a CAS from the value last read, retried while that value is
 * still behind.  A plain store after the load would let a thread stopped between the
 * two store, much later, a position far behind what others stored meanwhile; every
 * operation after it would then walk the lagging positions one cell at a time (each
 * stamp proves only its own position taken, so short of a whole ring there is no
 * jump).  With the CAS the stale thread's update fails and it re-reads a hint already
 * past it: the hint is the maximum of the positions stored, so a stopped thread costs
 * the others nothing.  Relaxed load: only the CAS's expected value.  The CAS is release
 * (on x86 a lock cmpxchg, a full barrier): see the top ("hint").  It is weak: besides
 * failing spuriously (never on x86), it fails only when another operation moved the
 * hint, and only forward, so the loop ends (lock-free).  This is the
 * operation's second locked instruction when the hint is behind (always, uncontended):
 * the price of a hint that cannot move back, measured in docs/scaling.md. */
LF_FIFO__HOT void lf_fifo__word_hint(uint64_t *hint, uint64_t pos)
{
	uint64_t h = ksync_load_relaxed_u64(hint);

	while ((int64_t)(pos - h) > 0)
		if (ksync_cas_weak_release_u64(hint, &h, pos))
			break;
}

/* After a walk step (the position *pos was found taken): back off if the stamp says
 * another operation took it just now, then go on from the hint if it is ahead of the
 * walk.  A position taken just now (the enqueue finds its element still there, stamp
 * 2t + 1; the dequeue finds its cell freed for the next ring and not yet refilled,
 * stamp 2(h + n)) is interference, as a failed CAS is - another thread enqueued
 * (dequeued) there since this one read the hint - so the same bounded exponential
 * backoff (backoff.h) follows it: under contention one thread then runs on with its
 * cache lines while the other waits, instead of both taking every line from each other
 * on every step (hosted, 2 threads: 4-8 M pairs/s before it; after it 18-30 in most
 * processes and still 3-7 in some, docs/scaling.md).  A stamp past that (the enqueue's
 * position was dequeued too, the dequeue's refilled) says the walk started from a hint
 * that lags, not that someone is contending: `contended` is false and the walk moves on
 * at once.  The reload then skips what was done meanwhile.  Only forward: the hint is a
 * valid promise whatever value it holds (every value ever stored was one, and promises
 * never expire), so max(walk, hint) is one; taking the hint even when behind would be
 * spin model mutant 7's livelock (the walk undone while the producer that took the
 * position has not stored the hint).  acquire: as the operation's first hint load.
 * The hint never moves back (lf_fifo__word_hint), so it lags only by the operations in
 * progress between their cell CAS and their hint CAS: a walk is as long as that. */
LF_FIFO__HOT void lf_fifo__word_taken(uint64_t *hint, uint64_t *pos, struct ksync_backoff *b,
				      bool contended)
{
	uint64_t h;

	if (contended)
		ksync_backoff(b);	/* bounded: still lock-free */
	h = ksync_load_acquire_u64(hint);
	if ((int64_t)(h - *pos) > 0)
		*pos = h;
}

/*
 * Append v.  KSYNC_OK, KSYNC_EFULL (capacity elements present at the linearization
 * point; nothing changed) or KSYNC_EINVAL (NULL queue).  Any number of concurrent
 * producers and consumers; lock-free.
 */
LF_FIFO__HOT int lf_fifo_enqueue_mpmc_word(struct lf_fifo_mpmc_word *q, uint64_t v)
{
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;
	uint64_t mask, n, t;

	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	mask = q->mask;
	n = mask + 1;
	/* acquire: pairs with the release store of the producer that wrote it, so the
	 * stamps of positions < t read below are at least as new as its CAS left them */
	t = ksync_load_acquire_u64(&q->tail);
	for (;;) {
		struct ksync_u128 *c = &q->cell[t & mask];
		struct ksync_u128 cur;
		uint64_t d;

		/* acquire: pairs with the CAS that wrote this stamp */
		cur.lo = ksync_load_acquire_u64(&c->lo);
		/* relaxed: only the CAS's expected value, validated by it */
		cur.hi = ksync_load_relaxed_u64(&c->hi);
		for (;;) {
			d = cur.lo - 2 * t;	/* the stamp relative to position t */
			if (d != 0)
				break;
			/* free for t: publish (full barrier: our earlier writes precede the
			 * value's visibility; the linearization point) */
			if (ksync_cas128(c, &cur, (struct ksync_u128){ .lo = 2 * t + 1, .hi = v })) {
				lf_fifo__word_hint(&q->tail, t + 1);
				return KSYNC_OK;
			}
			/* another producer enqueued at t; cur is the cell now */
			ksync_backoff(&b);	/* bounded: still lock-free */
		}
		if (d == 1 - 2 * n)
			return KSYNC_EFULL;	/* position t - n still holds its element */
		/* t is taken: stamp 2p + 1 (p enqueued) -> p + 1; stamp 2p (p free, so p - n
		 * dequeued) -> p - n + 1.  d / 2 = p - t, computed modulo 2^64. */
		t += (d >> 1) + ((d & 1) ? 1 : 1 - n);
		/* d == 1: t's element is still there, t was taken just now */
		lf_fifo__word_taken(&q->tail, &t, &b, d == 1);
	}
}

/*
 * Remove the oldest word into *out.  KSYNC_OK, KSYNC_EEMPTY (the queue was empty at
 * the linearization point; nothing changed, *out untouched) or KSYNC_EINVAL (NULL queue
 * or out).  Any number of concurrent producers and consumers; lock-free.
 */
LF_FIFO__HOT int lf_fifo_dequeue_mpmc_word(struct lf_fifo_mpmc_word *q, uint64_t *out)
{
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;
	uint64_t mask, n, h;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output");
	mask = q->mask;
	n = mask + 1;
	/* acquire: pairs with the release store of the consumer that wrote it */
	h = ksync_load_acquire_u64(&q->head);
	for (;;) {
		struct ksync_u128 *c = &q->cell[h & mask];
		uint64_t d, stamp, val;

		/* acquire: pairs with the enqueue CAS that wrote the stamp (and the value) */
		stamp = ksync_load_acquire_u64(&c->lo);
		/* relaxed, after the acquire above; it is position h's value if the CAS
		 * below succeeds (the stamp did not move, so no enqueue wrote the cell) */
		val = ksync_load_relaxed_u64(&c->hi);
		d = stamp - 2 * h;
		if (d == 1) {
			/* holds position h's element: claim it (the linearization point;
			 * release: the value load above precedes "free for h + n") */
			if (ksync_cas_strong_acq_rel_u64(&c->lo, &stamp, 2 * (h + n))) {
				*out = val;
				lf_fifo__word_hint(&q->head, h + 1);
				return KSYNC_OK;
			}
			/* another consumer took h: stamp is the cell's now, past 2h + 1 */
			ksync_backoff(&b);	/* bounded: still lock-free */
			d = stamp - 2 * h;
		}
		if (d == 0)
			return KSYNC_EEMPTY;	/* position h not enqueued */
		/* h was dequeued: stamp 2p or 2p + 1 with p >= h + n, so p - n was dequeued
		 * -> p - n + 1.  d / 2 = p - h, computed modulo 2^64. */
		h += (d >> 1) + 1 - n;
		/* d == 2n: h's cell is free for h + n, h was taken just now */
		lf_fifo__word_taken(&q->head, &h, &b, d == 2 * n);
	}
}

#endif /* KSYNC_LF_FIFO_MPMC_WORD_H */
