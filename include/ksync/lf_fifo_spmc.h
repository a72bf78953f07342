/*
 * lf_fifo_spmc.h - bounded FIFO queue, one producer and many consumers, elements of a
 * fixed size (any size >= 1 byte).
 *
 * Massalin & Pu 1991, "FIFO queues": with a single producer only the consumers contend,
 * so only the consumer side synchronizes: a consumer reads the element at the head
 * speculatively and claims it with one CAS on the head (the optimistic
 * read-compute-CAS of the paper's queue delete); the producer is the single-producer
 * ring of lf_fifo_spsc.h.  (The same shape as Concurrency Kit's ck_ring spmc.)
 *
 *   lf_fifo_enqueue_spmc   wait-free; loads and stores only - no locked instruction on
 *                          x86-64.  Precondition: one producer at a time.
 *   lf_fifo_dequeue_spmc   lock-free: one CAS on the head per attempt; an attempt fails
 *                          only when another consumer's CAS succeeded.  Any number of
 *                          concurrent consumers.  A consumer preempted anywhere holds
 *                          nothing: it blocks neither the producer nor other consumers.
 *
 * Element copies: a consumer may read a cell that the producer is overwriting (it read
 * a head that other consumers have since moved past); its CAS then fails and it
 * retries.  To keep that free of data races every cell access is a relaxed atomic
 * (8-, 4- or 1-byte units, the widest dividing the element size), so elements whose
 * size is a multiple of 8 copy fastest.  On a failed attempt the output buffer has
 * been written; on KSYNC_EEMPTY its content is unspecified.
 *
 * Boundary callbacks (lf_fifo.h): the producer as in lf_fifo_spsc.h (nonempty: head read
 * before the tail store equals t; full: head read after it equals t + 1 - capacity).
 * A dequeue that claims position h fires nonfull if the tail it read before its CAS
 * equals h + capacity (the head was h until the CAS, and the producer cannot add to a
 * full queue, so the queue stayed full until the CAS), and empty if the tail read after
 * the CAS equals h + 1.
 */
#ifndef KSYNC_LF_FIFO_SPMC_H
#define KSYNC_LF_FIFO_SPMC_H

#include <ksync/lf_fifo.h>

struct lf_fifo_spmc {
	/* The producer's cache line. */
	struct {
		/* Next position to write.  Written only by the producer (release store);
		 * read by consumers (acquire). */
		_Alignas(LF_FIFO_CACHE_LINE) uint64_t tail;
		uint64_t head_cache;		/* producer-private copy of c.head */
		unsigned char *data;		/* read-only after init */
		uint64_t mask;
		size_t esize;
		const struct lf_fifo_callbacks *cb;
	} p;
	/* The consumers' cache line. */
	struct {
		/* Next position to read.  Advanced only by consumers' CAS (acq_rel); read
		 * by the producer (acquire). */
		_Alignas(LF_FIFO_CACHE_LINE) uint64_t head;
		unsigned char *data;		/* read-only after init */
		uint64_t mask;
		size_t esize;
		const struct lf_fifo_callbacks *cb;
	} c;
};

/* Bytes of storage (capacity * elem_size); 0 for bad arguments (see lf_fifo_spsc.h). */
static inline size_t lf_fifo_storage_size_spmc(uint64_t capacity, size_t elem_size)
{
	return lf_fifo__bytes(capacity, elem_size, 0);
}

/* As lf_fifo_init_spsc: KSYNC_OK or KSYNC_EINVAL.  Not thread-safe. */
static inline int lf_fifo_init_spmc(struct lf_fifo_spmc *q, void *storage,
				    size_t storage_bytes, uint64_t capacity, size_t elem_size,
				    const struct lf_fifo_callbacks *cb)
{
	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	if (!lf_fifo__capacity_ok(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity not a power of two in [1, 2^31]");
	if (elem_size == 0 || elem_size > LF_FIFO_MAX_ELEM_SIZE)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "element size 0 or above 2^31 - 1");
	if (lf_fifo_storage_size_spmc(capacity, elem_size) == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity * element size overflows");
	if (!storage)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL storage");
	if ((uintptr_t)storage % LF_FIFO_STORAGE_ALIGN)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage not 8-byte aligned");
	if (storage_bytes < lf_fifo_storage_size_spmc(capacity, elem_size))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage smaller than lf_fifo_storage_size_spmc()");
	q->p.tail = 0;
	q->p.head_cache = 0;
	q->p.data = storage;
	q->p.mask = capacity - 1;
	q->p.esize = elem_size;
	q->p.cb = cb;
	q->c.head = 0;
	q->c.data = storage;
	q->c.mask = capacity - 1;
	q->c.esize = elem_size;
	q->c.cb = cb;
	return KSYNC_OK;
}

/*
 * Copy `elem` to the tail.  KSYNC_OK, KSYNC_EFULL (nothing changed) or KSYNC_EINVAL.
 * Producer only; wait-free; loads and stores only.
 */
LF_FIFO__HOT int lf_fifo_enqueue_spmc(struct lf_fifo_spmc *q, const void *elem)
{
	uint64_t t, mask;
	unsigned ev = 0;

	if (!q || !elem)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or element");
	mask = q->p.mask;
	t = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	if (t - q->p.head_cache > mask) {
		/* acquire: pairs with the claiming consumer's CAS (acq_rel), so its reads
		 * of the cell happen before our overwrite */
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t - q->p.head_cache > mask)
			return KSYNC_EFULL;
	}
	if (q->p.cb) {
		if (q->p.head_cache != t)
			q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (q->p.head_cache == t)
			ev |= LF_FIFO__EV_NONEMPTY;
	}
	lf_fifo__store_cell(q->p.data + (t & mask) * q->p.esize, elem, q->p.esize);
	/* release: publishes the cell stores to consumers that acquire the tail
	 * (linearization point) */
	ksync_store_release_u64(&q->p.tail, t + 1);
	if (q->p.cb) {
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t + 1 - q->p.head_cache == mask + 1)
			ev |= LF_FIFO__EV_FULL;
		if (ev)
			lf_fifo__fire(q->p.cb, ev);
	}
	return KSYNC_OK;
}

/*
 * Copy the element at the head to `out` and remove it.  KSYNC_OK, KSYNC_EEMPTY (queue
 * unchanged; *out unspecified) or KSYNC_EINVAL.  Any number of concurrent consumers;
 * lock-free.
 */
LF_FIFO__HOT int lf_fifo_dequeue_spmc(struct lf_fifo_spmc *q, void *out)
{
	uint64_t h, t, mask;
	unsigned ev = 0;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output buffer");
	mask = q->c.mask;
	/* acquire: pairs with the previous claimer's CAS (not needed for the data, which
	 * the tail publishes; keeps the head monotonic for this thread's view) */
	h = ksync_load_acquire_u64(&q->c.head);
	for (;;) {
		/* acquire: pairs with the producer's release store, so cells below t are
		 * visible */
		t = ksync_load_acquire_u64(&q->p.tail);
		if (t == h)
			return KSYNC_EEMPTY;	/* head was h and tail h at this read */
		lf_fifo__load_cell(out, q->c.data + (h & mask) * q->c.esize, q->c.esize);
		LF_FIFO_INTERFERE(spmc_head, &q->c.head, &h);
		/* acq_rel: the claim (linearization point).  Release orders the cell reads
		 * above before the producer may see the new head and overwrite the cell.
		 * Failure: h <- the current head; retry. */
		if (ksync_cas_strong_acq_rel_u64(&q->c.head, &h, h + 1))
			break;
		LF_FIFO_RETRY(spmc_head);
	}
	if (q->c.cb) {
		if (t - h == mask + 1)
			ev |= LF_FIFO__EV_NONFULL;
		if (ksync_load_acquire_u64(&q->p.tail) == h + 1)
			ev |= LF_FIFO__EV_EMPTY;
		if (ev)
			lf_fifo__fire(q->c.cb, ev);
	}
	return KSYNC_OK;
}

#endif /* KSYNC_LF_FIFO_SPMC_H */
