/*
 * lf_fifo_mpmc.h - bounded FIFO queue, many producers and many consumers, elements of
 * a fixed size (any size >= 1 byte).
 *
 * Massalin & Pu 1991, "FIFO queues" (multiple producers, multiple consumers), made
 * strictly lock-free with Nikolaev 2019 (DISC, "A Scalable, Portable, and Memory-
 * Efficient Lock-Free FIFO Queue"): its NCQ ring of indices, used twice as in its
 * construction for arbitrary data - a ring of free cell indices and a ring of used
 * cell indices over a data array of `capacity` cells - so that an element is published
 * by ONE single-width CAS and no operation ever waits for another thread's unfinished
 * step.
 *   free  unused cell indices, starts full: producers take (CAS on its head),
 *         consumers return (CAS on the slot, helped CAS on the tail).
 *   used  cells holding elements in FIFO order, starts empty: producers publish (CAS on
 *         the slot, helped CAS on the tail), consumers take (CAS on its head).
 * enqueue = take a free cell, copy the element in, publish the index;
 * dequeue = take the oldest index, copy the cell out, return the cell.
 * (SCQ, the paper's main algorithm, replaces NCQ's CAS on head and tail with
 * fetch-and-add for scalability on many cores, at the cost of more locked operations
 * per operation when uncontended; NCQ has the same strict lock-freedom, is simpler to
 * model-check - spin/lf_fifo_mpmc.pml - and suits the 2-8 cores ksync targets.)
 *
 *   lf_fifo_enqueue_mpmc   lock-free.  A producer preempted at any point stops neither
 *                          other producers nor consumers: before its publishing CAS it
 *                          holds at most one free cell (nothing is reserved in the
 *                          used ring), after it the element is fully visible and a
 *                          lagging tail is advanced by whoever sees it.
 *   lf_fifo_dequeue_mpmc   lock-free.  A consumer preempted at any point holds at most
 *                          the one cell it took; the head it claimed is already past.
 * Every retry of either operation follows another operation's successful CAS.
 * Element copies are plain: a cell belongs to one thread between the ring operations
 * that hand it over (release/acquire on the slot words).
 *
 * Capacity counts cells, including those held by operations in progress: enqueue
 * returns KSYNC_EFULL when no cell is free (see lf_fifo.h).
 *
 * Boundary callbacks (lf_fifo.h): enqueue fires full if the free ring's next slot, read
 * after its claim of a cell, is unwritten (it took the last free cell), and nonempty if
 * the used ring's head, read before its publishing CAS, equals its position; dequeue
 * fires empty if the used ring's next slot, read after its claim, is unwritten, and
 * nonfull if the free ring's head, read before the CAS returning its cell, equals that
 * cell's position (no cell was free).
 *
 * Storage: lf_fifo_storage_size_mpmc(capacity, elem_size) =
 *   16 * capacity (two rings of 8-byte slots) + capacity * elem_size.
 */
#ifndef KSYNC_LF_FIFO_MPMC_H
#define KSYNC_LF_FIFO_MPMC_H

#include <ksync/lf_fifo.h>

struct lf_fifo_mpmc {
	/* Free cells: MC dequeue by producers, MP enqueue by consumers (all CAS). */
	struct lf_fifo__ncq free;
	/* Published cells: MP enqueue by producers, MC dequeue by consumers (all CAS). */
	struct lf_fifo__ncq used;
	/* Read-only after init. */
	_Alignas(LF_FIFO_CACHE_LINE) unsigned char *data;	/* capacity cells */
	size_t esize;
	const struct lf_fifo_callbacks *cb;
};

/* Bytes of storage: 16 * capacity + capacity * elem_size; 0 for bad arguments. */
static inline size_t lf_fifo_storage_size_mpmc(uint64_t capacity, size_t elem_size)
{
	if (!lf_fifo__capacity_ok(capacity))
		return 0;
	return lf_fifo__bytes(capacity, elem_size, (size_t)capacity * 16);
}

/* As lf_fifo_init_spsc: KSYNC_OK or KSYNC_EINVAL.  Not thread-safe. */
static inline int lf_fifo_init_mpmc(struct lf_fifo_mpmc *q, void *storage,
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
	if (lf_fifo_storage_size_mpmc(capacity, elem_size) == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity * element size overflows");
	if (!storage)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL storage");
	if ((uintptr_t)storage % LF_FIFO_STORAGE_ALIGN)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage not 8-byte aligned");
	if (storage_bytes < lf_fifo_storage_size_mpmc(capacity, elem_size))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage smaller than lf_fifo_storage_size_mpmc()");
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
LF_FIFO__HOT int lf_fifo_enqueue_mpmc(struct lf_fifo_mpmc *q, const void *elem)
{
	bool full = false, nonempty = false;
	uint64_t i;

	if (!q || !elem)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or element");
	/* claim a free cell (acq_rel head CAS; the slot's acquire load hands the cell
	 * over from the consumer that returned it) */
	i = lf_fifo__ncq_deq_mc(&q->free, q->cb ? &full : NULL);
	if (i == LF_FIFO__NCQ_EMPTY)
		return KSYNC_EFULL;
	lf_fifo__copy(q->data + i * q->esize, elem, q->esize);
	/* publish (release CAS on the used slot): the linearization point */
	lf_fifo__ncq_enq_mp(&q->used, i, q->cb ? &nonempty : NULL);
	if (q->cb && (full || nonempty))
		lf_fifo__fire(q->cb, (full ? LF_FIFO__EV_FULL : 0) |
					     (nonempty ? LF_FIFO__EV_NONEMPTY : 0));
	return KSYNC_OK;
}

/*
 * Copy the oldest element to `out` and remove it.  KSYNC_OK, KSYNC_EEMPTY (nothing
 * changed, *out untouched) or KSYNC_EINVAL.  Any number of concurrent consumers;
 * lock-free.
 */
LF_FIFO__HOT int lf_fifo_dequeue_mpmc(struct lf_fifo_mpmc *q, void *out)
{
	bool empty = false, nonfull = false;
	uint64_t i;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output buffer");
	/* claim the oldest element (acq_rel head CAS: the linearization point; the
	 * slot's acquire load made the producer's copy visible) */
	i = lf_fifo__ncq_deq_mc(&q->used, q->cb ? &empty : NULL);
	if (i == LF_FIFO__NCQ_EMPTY)
		return KSYNC_EEMPTY;
	lf_fifo__copy(out, q->data + i * q->esize, q->esize);
	/* return the cell (release CAS on the free slot: our read precedes its reuse) */
	lf_fifo__ncq_enq_mp(&q->free, i, q->cb ? &nonfull : NULL);
	if (q->cb && (empty || nonfull))
		lf_fifo__fire(q->cb, (empty ? LF_FIFO__EV_EMPTY : 0) |
					     (nonfull ? LF_FIFO__EV_NONFULL : 0));
	return KSYNC_OK;
}

#endif /* KSYNC_LF_FIFO_MPMC_H */
