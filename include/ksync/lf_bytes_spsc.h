/*
 * lf_bytes_spsc.h - bounded byte-stream queue, one producer and one consumer: blocks of
 * bytes of any length move in one operation, all or nothing.
 *
 * Massalin & Pu 1991, "FIFO queues": besides fixed-size elements, Synthesis queues carry
 * a byte stream whose operations move arbitrarily sized blocks of data.  Only the
 * single-producer single-consumer case is provided: a stream with several writers has
 * no useful order between their blocks unless a block is an element (then use a
 * fixed-size queue of descriptors), and several readers would split blocks.  The ring
 * is lf_fifo_spsc.h's with one-byte positions: no locked instruction on x86-64.
 *
 *   lf_bytes_write_spsc      wait-free; all `len` bytes or none.  Producer only.
 *   lf_bytes_read_spsc       wait-free; exactly `len` bytes or none.  Consumer only.
 *   lf_bytes_read_some_spsc  wait-free; 1..max bytes, whatever is there.  Consumer only.
 *   lf_bytes_writable_spsc   free room now (producer only; may grow concurrently).
 *   lf_bytes_readable_spsc   bytes present now (consumer only; may grow concurrently).
 * A block longer than the capacity can never fit: KSYNC_EINVAL.  Not enough room or
 * not enough bytes: KSYNC_EFULL / KSYNC_EEMPTY, and nothing moves.  A zero-length write
 * or read does nothing and returns KSYNC_OK.
 *
 * Boundary callbacks (lf_fifo.h), counted in bytes: a write at position t of len bytes
 * fires nonempty if the head read before its tail store equals t, and full if the head
 * read after it equals t + len - capacity; a read at h of len bytes fires nonfull if the
 * tail read before its head store equals h + capacity, and empty if the tail read after
 * it equals h + len.
 */
#ifndef KSYNC_LF_BYTES_SPSC_H
#define KSYNC_LF_BYTES_SPSC_H

#include <ksync/lf_fifo.h>

struct lf_bytes_spsc {
	struct {
		/* Byte position of the next write.  Written only by the producer (release
		 * store); read by the consumer (acquire). */
		_Alignas(LF_FIFO_CACHE_LINE) uint64_t tail;
		uint64_t head_cache;		/* producer-private copy of c.head */
		unsigned char *data;		/* read-only after init */
		uint64_t mask;			/* capacity - 1 */
		const struct lf_fifo_callbacks *cb;
	} p;
	struct {
		/* Byte position of the next read.  Written only by the consumer (release
		 * store); read by the producer (acquire). */
		_Alignas(LF_FIFO_CACHE_LINE) uint64_t head;
		uint64_t tail_cache;		/* consumer-private copy of p.tail */
		unsigned char *data;
		uint64_t mask;
		const struct lf_fifo_callbacks *cb;
	} c;
};

/* Bytes of storage: capacity; 0 if capacity is not a power of two in [1, 2^31]. */
static inline size_t lf_bytes_storage_size_spsc(uint64_t capacity)
{
	return lf_fifo__bytes(capacity, 1, 0);
}

/* An empty stream of `capacity` bytes over `storage` (8-byte aligned,
 * storage_bytes >= capacity).  KSYNC_OK or KSYNC_EINVAL.  Not thread-safe. */
static inline int lf_bytes_init_spsc(struct lf_bytes_spsc *q, void *storage,
				     size_t storage_bytes, uint64_t capacity,
				     const struct lf_fifo_callbacks *cb)
{
	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	if (!lf_fifo__capacity_ok(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity not a power of two in [1, 2^31]");
	if (!storage)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL storage");
	if ((uintptr_t)storage % LF_FIFO_STORAGE_ALIGN)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage not 8-byte aligned");
	if (storage_bytes < lf_bytes_storage_size_spsc(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage smaller than the capacity");
	q->p.tail = 0;
	q->p.head_cache = 0;
	q->p.data = storage;
	q->p.mask = capacity - 1;
	q->p.cb = cb;
	q->c.head = 0;
	q->c.tail_cache = 0;
	q->c.data = storage;
	q->c.mask = capacity - 1;
	q->c.cb = cb;
	return KSYNC_OK;
}

/* Free room in bytes (producer only; a lower bound while the consumer runs; 0 for NULL). */
static inline uint64_t lf_bytes_writable_spsc(struct lf_bytes_spsc *q)
{
	uint64_t t;

	if (!q)
		return 0;
	t = ksync_load_relaxed_u64(&q->p.tail);	/* own index */

	/* acquire: pairs with the consumer's release store of head */
	q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
	return q->p.mask + 1 - (t - q->p.head_cache);
}

/* Bytes present (consumer only; a lower bound while the producer runs; 0 for NULL). */
static inline uint64_t lf_bytes_readable_spsc(struct lf_bytes_spsc *q)
{
	uint64_t h;

	if (!q)
		return 0;
	h = ksync_load_relaxed_u64(&q->c.head);	/* own index */

	/* acquire: pairs with the producer's release store of tail */
	q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
	return q->c.tail_cache - h;
}

/*
 * Append the `len` bytes at `src` as one block.  KSYNC_OK; KSYNC_EFULL if fewer than
 * len bytes are free (nothing written); KSYNC_EINVAL for a NULL q, a NULL src with
 * len > 0, or len > capacity.  Producer only; wait-free.
 */
LF_FIFO__HOT int lf_bytes_write_spsc(struct lf_bytes_spsc *q, const void *src, size_t len)
{
	uint64_t t, mask, off, first;
	unsigned ev = 0;

	if (!q || (!src && len))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or source");
	mask = q->p.mask;
	if (len > mask + 1)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "block larger than the queue");
	if (len == 0)
		return KSYNC_OK;
	t = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	if (t + len - q->p.head_cache > mask + 1) {
		/* acquire: the consumer's reads of the bytes we overwrite precede us */
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t + len - q->p.head_cache > mask + 1)
			return KSYNC_EFULL;
	}
	if (q->p.cb) {
		if (q->p.head_cache != t)
			q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (q->p.head_cache == t)
			ev |= LF_FIFO__EV_NONEMPTY;
	}
	off = t & mask;
	first = mask + 1 - off;
	if (first > len)
		first = len;
	__builtin_memcpy(q->p.data + off, src, first);
	if (len > first)
		__builtin_memcpy(q->p.data, (const unsigned char *)src + first, len - first);
	/* release: the block is visible to the consumer that acquires the new tail
	 * (linearization point: all len bytes appear at once) */
	ksync_store_release_u64(&q->p.tail, t + len);
	if (q->p.cb) {
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t + len - q->p.head_cache == mask + 1)
			ev |= LF_FIFO__EV_FULL;
		if (ev)
			lf_fifo__fire(q->p.cb, ev);
	}
	return KSYNC_OK;
}

/* Copy `len` bytes from position h out and release them (consumer side, after the
 * caller checked that they are present). */
static inline int lf_bytes__take(struct lf_bytes_spsc *q, void *dst, uint64_t h, size_t len)
{
	uint64_t mask = q->c.mask, off = h & mask, first = mask + 1 - off;
	unsigned ev = 0;

	if (q->c.cb) {
		if (q->c.tail_cache - h != mask + 1)
			q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
		if (q->c.tail_cache - h == mask + 1)
			ev |= LF_FIFO__EV_NONFULL;
	}
	if (first > len)
		first = len;
	__builtin_memcpy(dst, q->c.data + off, first);
	if (len > first)
		__builtin_memcpy((unsigned char *)dst + first, q->c.data, len - first);
	/* release: our reads complete before the producer, acquiring the new head, may
	 * overwrite the bytes (linearization point) */
	ksync_store_release_u64(&q->c.head, h + len);
	if (q->c.cb) {
		q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
		if (q->c.tail_cache == h + len)
			ev |= LF_FIFO__EV_EMPTY;
		if (ev)
			lf_fifo__fire(q->c.cb, ev);
	}
	return KSYNC_OK;
}

/*
 * Remove exactly `len` bytes into `dst`.  KSYNC_OK; KSYNC_EEMPTY if fewer than len bytes
 * are present (nothing read); KSYNC_EINVAL for a NULL q, a NULL dst with len > 0, or
 * len > capacity.  Consumer only; wait-free.
 */
LF_FIFO__HOT int lf_bytes_read_spsc(struct lf_bytes_spsc *q, void *dst, size_t len)
{
	uint64_t h;

	if (!q || (!dst && len))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or destination");
	if (len > q->c.mask + 1)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "block larger than the queue");
	if (len == 0)
		return KSYNC_OK;
	h = ksync_load_relaxed_u64(&q->c.head);	/* only this thread writes it */
	if (q->c.tail_cache - h < len) {
		/* acquire: the producer's writes of these bytes are visible */
		q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
		if (q->c.tail_cache - h < len)
			return KSYNC_EEMPTY;
	}
	return lf_bytes__take(q, dst, h, len);
}

/*
 * Remove up to `max` bytes (at least one) into `dst`; *got = the number removed.
 * KSYNC_OK; KSYNC_EEMPTY if no byte is present (*got = 0); KSYNC_EINVAL for a NULL q,
 * dst or got, or max == 0.  Consumer only; wait-free.
 */
LF_FIFO__HOT int lf_bytes_read_some_spsc(struct lf_bytes_spsc *q, void *dst, size_t max,
					  size_t *got)
{
	uint64_t h, avail;

	if (!q || !dst || !got || max == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL argument or max 0");
	*got = 0;
	h = ksync_load_relaxed_u64(&q->c.head);
	if (q->c.tail_cache - h < max)
		q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);	/* as above */
	avail = q->c.tail_cache - h;
	if (avail == 0)
		return KSYNC_EEMPTY;
	if (avail < max)
		max = (size_t)avail;
	*got = max;
	return lf_bytes__take(q, dst, h, max);
}

#endif /* KSYNC_LF_BYTES_SPSC_H */
