/*
 * lf_fifo_mpsc.h - bounded FIFO queue, many producers and one consumer, elements of a
 * fixed size (any size >= 1 byte).
 *
 * Massalin & Pu 1991, "FIFO queues" (multiple producers, single consumer: only the
 * producers synchronize) built the way Nikolaev 2019 (DISC; NCQ + indirection) makes a
 * multi-producer array queue strictly lock-free: indirection through two rings of cell
 * indices over a data array of `capacity` cells.
 *   free  ring of unused cell indices; starts full.  Producers take from it (NCQ
 *         multi-consumer dequeue: a CAS on its head); the consumer returns cells to it
 *         (single-producer enqueue: a store).
 *   used  ring of cells holding elements, in FIFO order; starts empty.  Producers
 *         publish to it (NCQ multi-producer enqueue: a CAS that writes the slot, then a
 *         helped CAS on the tail); the consumer takes from it (single-consumer dequeue:
 *         a store of the head).
 * enqueue = take a free cell, copy the element into it, publish its index;
 * dequeue = take the oldest index, copy the cell out, return the cell.
 *
 *   lf_fifo_enqueue_mpsc   lock-free (CAS loops; see lf_fifo.h for the argument).  Any
 *                          number of concurrent producers.  A producer preempted at any
 *                          point - even after taking a cell and before publishing it -
 *                          stops neither the other producers nor the consumer: every
 *                          element published before or after it can be dequeued (it
 *                          only holds its one cell).  Contrast ck_ring's MP enqueue
 *                          and Vyukov's bounded queue, where a producer that reserved a
 *                          slot and was preempted before filling it makes the consumer
 *                          see "empty" for everything queued behind it.
 *   lf_fifo_dequeue_mpsc   wait-free; loads and stores only - no locked instruction on
 *                          x86-64.  Precondition: one consumer at a time.
 * Element copies are plain: a cell belongs to exactly one thread between the ring
 * operations that hand it over (release/acquire on the slot words).
 *
 * Capacity counts cells, including cells held by operations in progress: enqueue
 * returns KSYNC_EFULL when no cell is free, which can happen with fewer than `capacity`
 * elements visible while such operations are preempted (see lf_fifo.h).
 *
 * Boundary callbacks (lf_fifo.h): an enqueue fires full if the free ring was left empty
 * by its taking a cell (the next free slot read after its claim is unwritten) and
 * nonempty if the used ring's head read before its publishing CAS equals its position;
 * the dequeue fires empty if the used ring's next slot, read after its head store, is
 * unwritten, and nonfull if the free ring's head read before returning the cell equals
 * the free ring's tail (no cell was free).
 *
 * Storage: lf_fifo_storage_size_mpsc(capacity, elem_size) =
 *   16 * capacity (two rings of 8-byte slots) + capacity * elem_size.
 */
#ifndef KSYNC_LF_FIFO_MPSC_H
#define KSYNC_LF_FIFO_MPSC_H

#include <ksync/lf_fifo.h>

struct lf_fifo_mpsc {
	/* Free cells: MC dequeue by producers (head: CAS), SP enqueue by the consumer
	 * (tail: consumer-private). */
	struct lf_fifo__ncq free;
	/* Published cells: MP enqueue by producers (slots and tail: CAS), SC dequeue by
	 * the consumer (head: consumer's release store). */
	struct lf_fifo__ncq used;
	/* Read-only after init. */
	_Alignas(LF_FIFO_CACHE_LINE) unsigned char *data;	/* capacity cells */
	size_t esize;
	const struct lf_fifo_callbacks *cb;
};

/* Bytes of storage: 16 * capacity + capacity * elem_size; 0 for bad arguments. */
static inline size_t lf_fifo_storage_size_mpsc(uint64_t capacity, size_t elem_size)
{
	if (!lf_fifo__capacity_ok(capacity))
		return 0;
	return lf_fifo__bytes(capacity, elem_size, (size_t)capacity * 16);
}

/* As lf_fifo_init_spsc: KSYNC_OK or KSYNC_EINVAL.  Not thread-safe. */
static inline int lf_fifo_init_mpsc(struct lf_fifo_mpsc *q, void *storage,
				    size_t storage_bytes, uint64_t capacity, size_t elem_size,
				    const struct lf_fifo_callbacks *cb)
{
	uint64_t *slots = storage;

	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	if (!lf_fifo__capacity_ok(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity not a power of two in [1, 2^31]");
	if (elem_size == 0 || elem_size > LF_FIFO_MAX_ELEM_SIZE)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "element size 0 or above 2^31 - 1");
	if (lf_fifo_storage_size_mpsc(capacity, elem_size) == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity * element size overflows");
	if (!storage)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL storage");
	if ((uintptr_t)storage % LF_FIFO_STORAGE_ALIGN)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage not 8-byte aligned");
	if (storage_bytes < lf_fifo_storage_size_mpsc(capacity, elem_size))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage smaller than lf_fifo_storage_size_mpsc()");
	lf_fifo__ncq_init_full(&q->free, slots, capacity);
	lf_fifo__ncq_init_empty(&q->used, slots + capacity, capacity);
	q->data = (unsigned char *)(slots + 2 * capacity);
	q->esize = elem_size;
	q->cb = cb;
	return KSYNC_OK;
}

/*
 * Copy `elem` into a free cell and append it.  KSYNC_OK, KSYNC_EFULL (no free cell:
 * nothing changed) or KSYNC_EINVAL.  Any number of concurrent producers; lock-free.
 */
LF_FIFO__HOT int lf_fifo_enqueue_mpsc(struct lf_fifo_mpsc *q, const void *elem)
{
	bool full = false, nonempty = false;
	uint64_t i;

	if (!q || !elem)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or element");
	i = lf_fifo__ncq_deq_mc(&q->free, q->cb ? &full : NULL);
	if (i == LF_FIFO__NCQ_EMPTY)
		return KSYNC_EFULL;
	/* cell i is ours: the free ring's acquire/acq_rel handed it over from the
	 * consumer that returned it */
	lf_fifo__copy(q->data + i * q->esize, elem, q->esize);
	/* publishes the copy (release CAS on the slot); linearization point */
	lf_fifo__ncq_enq_mp(&q->used, i, q->cb ? &nonempty : NULL);
	if (q->cb && (full || nonempty))
		lf_fifo__fire(q->cb, (full ? LF_FIFO__EV_FULL : 0) |
					     (nonempty ? LF_FIFO__EV_NONEMPTY : 0));
	return KSYNC_OK;
}

/*
 * Copy the oldest element to `out` and remove it.  KSYNC_OK, KSYNC_EEMPTY (nothing
 * changed, *out untouched) or KSYNC_EINVAL.  Consumer only; wait-free; loads and
 * stores only.
 */
LF_FIFO__HOT int lf_fifo_dequeue_mpsc(struct lf_fifo_mpsc *q, void *out)
{
	bool empty = false, nonfull = false;
	uint64_t i;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output buffer");
	/* acquire load of the slot makes the producer's copy visible; the head store is
	 * the linearization point */
	i = lf_fifo__ncq_deq_sc(&q->used, q->cb ? &empty : NULL);
	if (i == LF_FIFO__NCQ_EMPTY)
		return KSYNC_EEMPTY;
	lf_fifo__copy(out, q->data + i * q->esize, q->esize);
	/* release store of the free slot: our read of the cell precedes its reuse */
	lf_fifo__ncq_enq_sp(&q->free, i, q->cb ? &nonfull : NULL);
	if (q->cb && (empty || nonfull))
		lf_fifo__fire(q->cb, (empty ? LF_FIFO__EV_EMPTY : 0) |
					     (nonfull ? LF_FIFO__EV_NONFULL : 0));
	return KSYNC_OK;
}

#endif /* KSYNC_LF_FIFO_MPSC_H */
