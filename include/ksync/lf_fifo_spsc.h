/*
 * lf_fifo_spsc.h - bounded FIFO queue, one producer and one consumer, elements of a
 * fixed size (any size >= 1 byte).
 *
 * Massalin & Pu 1991, "FIFO queues": the single-producer single-consumer case needs no
 * atomic read-modify-write at all (Lamport's ring: each index has one writer).  As in
 * FastForward/Lynx-style rings, each side keeps a private copy of the other side's
 * index and rereads the shared one only when the copy says full (producer) or empty
 * (consumer), and the two sides' words live on separate cache lines.
 *
 *   lf_fifo_enqueue_spsc   wait-free (no loop); loads and stores only - no locked
 *                          instruction on x86-64.  Precondition: at most one thread
 *                          enqueues at a time (the producer).
 *   lf_fifo_dequeue_spsc   wait-free; loads and stores only.  Precondition: at most one
 *                          thread dequeues at a time (the consumer).
 *   __lf_fifo_enqueue_spsc / __lf_fifo_dequeue_spsc
 *                          the same ring without any ordering: the caller provides
 *                          exclusion between ALL users (one thread, interrupts off, a
 *                          lock).  The "no synchronization" row of the cost table.
 * Producer and consumer may be the same thread.  Element copies are plain memory
 * copies (8-byte elements: one move): a cell belongs to one side at a time, handed over
 * by the release store of an index and the other side's acquire load of it.  The fast
 * path of each side loads its own index, its private copy of the other's, one
 * read-only word (capacity, element size, callbacks flag) and the data pointer.
 *
 * Boundary callbacks (lf_fifo.h): enqueue at position t fires nonempty if the consumer
 * index read before its store of the tail equals t, and full if the one read after
 * it equals t + 1 - capacity; dequeue at h fires nonfull if the producer index read
 * before its store of the head equals h + capacity, and empty if the one read after it
 * equals h + 1.  (A cached index suffices when it already proves the boundary.)
 *
 *   static unsigned char buf[1024] __attribute__((aligned(64)));
 *   struct lf_fifo_spsc q;
 *   // lf_fifo_storage_size_spsc(64, 16) == 1024
 *   lf_fifo_init_spsc(&q, buf, sizeof(buf), 64, 16, NULL);
 *   lf_fifo_enqueue_spsc(&q, &elem);            // KSYNC_OK or KSYNC_EFULL
 *   lf_fifo_dequeue_spsc(&q, &elem);            // KSYNC_OK or KSYNC_EEMPTY
 */
#ifndef KSYNC_LF_FIFO_SPSC_H
#define KSYNC_LF_FIFO_SPSC_H

#include <ksync/lf_fifo.h>

struct lf_fifo_spsc {
	/* The producer's cache line. */
	struct {
		/* Next position to write.  Written only by the producer (release store);
		 * read by the consumer (acquire). */
		_Alignas(LF_FIFO_CACHE_LINE) uint64_t tail;
		uint64_t head_cache;	/* producer-private copy of c.head; <= c.head */
		uint64_t shape;		/* read-only: see LF_FIFO__SHAPE */
		unsigned char *data;	/* read-only: the cells */
		const struct lf_fifo_callbacks *cb;	/* read-only; NULL: none */
	} p;
	/* The consumer's cache line. */
	struct {
		/* Next position to read.  Written only by the consumer (release store);
		 * read by the producer (acquire). */
		_Alignas(LF_FIFO_CACHE_LINE) uint64_t head;
		uint64_t tail_cache;	/* consumer-private copy of p.tail; <= p.tail */
		uint64_t shape;
		unsigned char *data;
		const struct lf_fifo_callbacks *cb;
	} c;
};

/* One read-only word per side holds capacity - 1 (bits 0-31), the element size (bits
 * 32-62) and "callbacks installed" (bit 63), so the fast path loads one word, not three:
 * on a core with two load ports the spsc pair is bound by its load count. */
#define LF_FIFO__SHAPE(mask, esize, has_cb)                                           \
	((uint64_t)(mask) | ((uint64_t)(esize) << 32) | ((uint64_t)((has_cb) != 0) << 63))
#define LF_FIFO__SHAPE_MASK(shape) ((shape) & 0xffffffffu)
#define LF_FIFO__SHAPE_ESIZE(shape) ((size_t)(((shape) >> 32) & 0x7fffffffu))
#define LF_FIFO__SHAPE_CB(shape) ((shape) >> 63)

/* The two halves of a shape word, read separately by the word forms (below): the upper
 * half (element size and callbacks flag) is compared with 8 by one cmp with a memory
 * operand, and the lower half (the mask) is a load of its own; together one fused
 * compare-and-branch fewer than loading the word and shifting it.  Little-endian
 * (x86-64): the mask is the first half. */
typedef uint32_t lf_fifo__u32 __attribute__((may_alias));
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shape halves assume little-endian");
#define LF_FIFO__SHAPE_LO(p) (((const lf_fifo__u32 *)(const void *)(p))[0])
#define LF_FIFO__SHAPE_HI(p) (((const lf_fifo__u32 *)(const void *)(p))[1])

/* Bytes of storage a queue of `capacity` elements of `elem_size` bytes needs
 * (capacity * elem_size); 0 if capacity is not a power of two in [1, 2^31], elem_size is
 * not in [1, 2^31 - 1], or the product overflows. */
static inline size_t lf_fifo_storage_size_spsc(uint64_t capacity, size_t elem_size)
{
	return lf_fifo__bytes(capacity, elem_size, 0);
}

/*
 * Make *q an empty queue over `storage` (storage_bytes >= lf_fifo_storage_size_spsc(),
 * 8-byte aligned).  `cb` may be NULL.  Not thread-safe: no other operation on q may run
 * concurrently; publish q to the other threads afterwards (thread creation, a release).
 * Returns KSYNC_OK, or KSYNC_EINVAL for a NULL q or storage, a bad capacity or element
 * size, too little or misaligned storage (q is then left untouched).
 */
static inline int lf_fifo_init_spsc(struct lf_fifo_spsc *q, void *storage,
				    size_t storage_bytes, uint64_t capacity, size_t elem_size,
				    const struct lf_fifo_callbacks *cb)
{
	uint64_t shape;

	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	if (!lf_fifo__capacity_ok(capacity))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity not a power of two in [1, 2^31]");
	if (elem_size == 0 || elem_size > LF_FIFO_MAX_ELEM_SIZE)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "element size 0 or above 2^31 - 1");
	if (lf_fifo_storage_size_spsc(capacity, elem_size) == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "capacity * element size overflows");
	if (!storage)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL storage");
	if ((uintptr_t)storage % LF_FIFO_STORAGE_ALIGN)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage not 8-byte aligned");
	if (storage_bytes < lf_fifo_storage_size_spsc(capacity, elem_size))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "storage smaller than lf_fifo_storage_size_spsc()");
	shape = LF_FIFO__SHAPE(capacity - 1, elem_size, cb != NULL);
	q->p.tail = 0;
	q->p.head_cache = 0;
	q->p.shape = shape;
	q->p.data = storage;
	q->p.cb = cb;
	q->c.head = 0;
	q->c.tail_cache = 0;
	q->c.shape = shape;
	q->c.data = storage;
	q->c.cb = cb;
	return KSYNC_OK;
}

/* lf_fifo_enqueue_spsc with callbacks installed (out of line). */
LF_FIFO__SLOW int lf_fifo__enqueue_spsc_cb(struct lf_fifo_spsc *q, const void *elem)
{
	uint64_t mask = LF_FIFO__SHAPE_MASK(q->p.shape);
	uint64_t t = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	unsigned ev = 0;

	if (t - q->p.head_cache > mask) {
		/* acquire: as in the fast path */
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t - q->p.head_cache > mask)
			return KSYNC_EFULL;
	}
	/* nonempty proof: the consumer index equals t before our store (it cannot pass
	 * t, and cannot move while the queue is empty) */
	if (q->p.head_cache != t)
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
	if (q->p.head_cache == t)
		ev |= LF_FIFO__EV_NONEMPTY;
	lf_fifo__copy(q->p.data + (t & mask) * LF_FIFO__SHAPE_ESIZE(q->p.shape), elem,
		      LF_FIFO__SHAPE_ESIZE(q->p.shape));
	/* release: as in the fast path (linearization point) */
	ksync_store_release_u64(&q->p.tail, t + 1);
	/* full proof: the consumer index read after our store still makes the queue
	 * full, so it was full right after the store */
	q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
	if (t + 1 - q->p.head_cache == mask + 1)
		ev |= LF_FIFO__EV_FULL;
	if (ev)
		lf_fifo__fire(q->p.cb, ev);
	return KSYNC_OK;
}

/*
 * Copy the element at `elem` (esize bytes) to the tail.  Returns KSYNC_OK, KSYNC_EFULL
 * (queue full: nothing changed), or KSYNC_EINVAL (NULL q or elem).  Producer only.
 * Wait-free; loads and stores only.
 */
LF_FIFO__HOT int lf_fifo_enqueue_spsc(struct lf_fifo_spsc *q, const void *elem)
{
	uint64_t t, mask, shape;

	if (!q || !elem)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or element");
	shape = q->p.shape;
	if (LF_FIFO__SHAPE_CB(shape))
		return lf_fifo__enqueue_spsc_cb(q, elem);
	mask = LF_FIFO__SHAPE_MASK(shape);
	t = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	if (t - q->p.head_cache > mask) {
		/* full by the cached head: reread.  acquire: pairs with the consumer's
		 * release store of head, so its reads of the cell we are about to
		 * overwrite happen before our writes */
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t - q->p.head_cache > mask)
			return KSYNC_EFULL;
	}
	lf_fifo__copy(q->p.data + (t & mask) * LF_FIFO__SHAPE_ESIZE(shape), elem,
		      LF_FIFO__SHAPE_ESIZE(shape));
	/* release: the element copy above is visible to the consumer that reads the new
	 * tail with acquire (linearization point) */
	ksync_store_release_u64(&q->p.tail, t + 1);
	return KSYNC_OK;
}

/* lf_fifo_dequeue_spsc with callbacks installed (out of line). */
LF_FIFO__SLOW int lf_fifo__dequeue_spsc_cb(struct lf_fifo_spsc *q, void *out)
{
	uint64_t mask = LF_FIFO__SHAPE_MASK(q->c.shape);
	uint64_t h = ksync_load_relaxed_u64(&q->c.head);	/* only this thread writes it */
	unsigned ev = 0;

	if ((int64_t)(q->c.tail_cache - h) <= 0) {
		/* acquire: as in the fast path */
		q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
		if (h == q->c.tail_cache)
			return KSYNC_EEMPTY;
	}
	/* nonfull proof: the producer index equals h + capacity before our store (the
	 * producer cannot add to a full queue) */
	if (q->c.tail_cache - h != mask + 1)
		q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
	if (q->c.tail_cache - h == mask + 1)
		ev |= LF_FIFO__EV_NONFULL;
	lf_fifo__copy(out, q->c.data + (h & mask) * LF_FIFO__SHAPE_ESIZE(q->c.shape),
		      LF_FIFO__SHAPE_ESIZE(q->c.shape));
	/* release: as in the fast path (linearization point) */
	ksync_store_release_u64(&q->c.head, h + 1);
	/* empty proof: the producer index read after our store is h + 1 */
	q->c.tail_cache = ksync_load_acquire_u64(&q->p.tail);
	if (q->c.tail_cache == h + 1)
		ev |= LF_FIFO__EV_EMPTY;
	if (ev)
		lf_fifo__fire(q->c.cb, ev);
	return KSYNC_OK;
}

/*
 * Copy the element at the head to `out` (esize bytes) and remove it.  Returns KSYNC_OK,
 * KSYNC_EEMPTY (nothing changed, *out untouched), or KSYNC_EINVAL (NULL q or out).
 * Consumer only.  Wait-free; loads and stores only.
 */
LF_FIFO__HOT int lf_fifo_dequeue_spsc(struct lf_fifo_spsc *q, void *out)
{
	uint64_t h, t, shape;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output buffer");
	shape = q->c.shape;
	if (LF_FIFO__SHAPE_CB(shape))
		return lf_fifo__dequeue_spsc_cb(q, out);
	h = ksync_load_relaxed_u64(&q->c.head);	/* only this thread writes it */
	/* Empty by the cached tail: reread.  The reread is laid out inline (expected):
	 * it is the path of a queue the consumer keeps drained, where every dequeue
	 * rereads; a consumer that lags jumps over it.  "<=", not "==": the
	 * unsynchronized __lf_fifo_dequeue_spsc advances head without the cache, so the
	 * cache may lag behind head (it is only a hint).  A plain unsigned compare (one
	 * cmp with a memory operand, where a wrap-safe difference needs three
	 * instructions) is exact because positions count from 0 and never wrap: 2^64
	 * elements at one per nanosecond take 584 years. */
	if (__builtin_expect(q->c.tail_cache <= h, 1)) {
		/* acquire: pairs with the producer's release store of tail, so the
		 * element copy is visible */
		t = ksync_load_acquire_u64(&q->p.tail);
		if (t == h)
			return KSYNC_EEMPTY;
		/* kept unconditionally: a store to this side's own line, which the
		 * head store below writes anyway.  The former "only if t - h > 1" cost
		 * a compare and a taken branch on every dequeue of a drained queue.
		 * bench/cmp_peers spsc latency (word forms, hosted AMD EPYC, medians of
		 * 15 runs, 3 invocations each): 7.72 -> 7.11 TSC ticks per pair with
		 * the harness of bc3c63a, 7.11 -> 7.01 once the harness placed every
		 * implementation's functions alike (CMP_FN): most of the first step
		 * was code placement.  ck_ring 5.69 there; what the difference is
		 * made of: docs/paper-map.md, the spsc word forms' row. */
		q->c.tail_cache = t;
	}
	lf_fifo__copy(out,
		      q->c.data + (h & LF_FIFO__SHAPE_MASK(shape)) * LF_FIFO__SHAPE_ESIZE(shape),
		      LF_FIFO__SHAPE_ESIZE(shape));
	/* release: our read of the cell completes before the producer, reading the new
	 * head with acquire, may overwrite it (linearization point) */
	ksync_store_release_u64(&q->c.head, h + 1);
	return KSYNC_OK;
}

/*
 * 8-byte elements by value: the same queue, protocol and results as
 * lf_fifo_enqueue_spsc / lf_fifo_dequeue_spsc on a queue made with elem_size 8, with
 * the word passed in a register instead of through a pointer.  The general functions
 * copy from the caller's buffer after hiding its address from the optimizer
 * (lf_fifo__copy), so a word the caller holds in a register is stored to the stack and
 * loaded back, and the cell address is computed with a multiply by the element size;
 * here the word is stored to (loaded from) its cell directly at (position & mask) * 8.
 * Concurrency Kit's ck_ring_enqueue_spsc / _dequeue_spsc take a pointer-sized entry by
 * value the same way.  KSYNC_EINVAL also when the queue's element size is not 8 (q
 * unchanged).  With callbacks installed these go through the general functions (the
 * same events).  Producer only / consumer only, as the general ones; wait-free.
 */
/* Not size 8 or callbacks installed (out of line: taking v's address here would keep
 * it in memory on the fast path too). */
LF_FIFO__SLOW int lf_fifo__enqueue_spsc_word_slow(struct lf_fifo_spsc *q, uint64_t v)
{
	if (LF_FIFO__SHAPE_ESIZE(q->p.shape) != 8)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "element size is not 8");
	return lf_fifo__enqueue_spsc_cb(q, &v);
}

LF_FIFO__HOT int lf_fifo_enqueue_spsc_word(struct lf_fifo_spsc *q, uint64_t v)
{
	uint64_t t, mask;

	if (!q)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue");
	/* bits 32-63: the element size and the callbacks flag; 8 = size 8, no callbacks */
	if (__builtin_expect(LF_FIFO__SHAPE_HI(&q->p.shape) != 8, 0))
		return lf_fifo__enqueue_spsc_word_slow(q, v);
	mask = LF_FIFO__SHAPE_LO(&q->p.shape);
	t = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	if (t - q->p.head_cache > mask) {
		/* acquire: as in lf_fifo_enqueue_spsc */
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		if (t - q->p.head_cache > mask)
			return KSYNC_EFULL;
	}
	/* plain: the cell is the producer's until the release store below */
	*(lf_fifo__u64 *)(q->p.data + (t & mask) * 8) = v;
	/* release: the cell store above is visible to the consumer that reads the new
	 * tail with acquire (linearization point) */
	ksync_store_release_u64(&q->p.tail, t + 1);
	return KSYNC_OK;
}

LF_FIFO__HOT int lf_fifo_dequeue_spsc_word(struct lf_fifo_spsc *q, uint64_t *out)
{
	uint64_t h, t;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output");
	if (__builtin_expect(LF_FIFO__SHAPE_HI(&q->c.shape) != 8, 0)) {
		if (LF_FIFO__SHAPE_ESIZE(q->c.shape) != 8)
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "element size is not 8");
		return lf_fifo__dequeue_spsc_cb(q, out);
	}
	h = ksync_load_relaxed_u64(&q->c.head);	/* only this thread writes it */
	/* as in lf_fifo_dequeue_spsc: the reread inline, the cache kept always */
	if (__builtin_expect(q->c.tail_cache <= h, 1)) {
		/* acquire: as in lf_fifo_dequeue_spsc */
		t = ksync_load_acquire_u64(&q->p.tail);
		if (t == h)
			return KSYNC_EEMPTY;
		q->c.tail_cache = t;
	}
	/* plain: the cell is the consumer's until the release store below */
	*out = *(const lf_fifo__u64 *)(q->c.data + (h & LF_FIFO__SHAPE_LO(&q->c.shape)) * 8);
	/* release: our read of the cell completes before the producer may overwrite it */
	ksync_store_release_u64(&q->c.head, h + 1);
	return KSYNC_OK;
}


/*
 * The same operations with no synchronization at all: plain accesses, no ordering, for
 * a caller that provides exclusion between every user of q (e.g. one thread, or a
 * kernel path with interrupts disabled on a uniprocessor).  Callbacks fire exactly once
 * per transition.  Same results as above.  They may be mixed with the synchronized
 * functions on the same queue as long as the caller's exclusion covers those calls too.
 */
LF_FIFO__HOT int __lf_fifo_enqueue_spsc(struct lf_fifo_spsc *q, const void *elem)
{
	uint64_t t, h, mask, shape;

	if (!q || !elem)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or element");
	shape = q->p.shape;
	mask = LF_FIFO__SHAPE_MASK(shape);
	t = q->p.tail;
	h = q->c.head;
	if (t - h > mask)
		return KSYNC_EFULL;
	lf_fifo__copy(q->p.data + (t & mask) * LF_FIFO__SHAPE_ESIZE(shape), elem,
		      LF_FIFO__SHAPE_ESIZE(shape));
	q->p.tail = t + 1;
	if (LF_FIFO__SHAPE_CB(shape))
		lf_fifo__fire(q->p.cb, (t == h ? LF_FIFO__EV_NONEMPTY : 0) |
					       (t + 1 - h == mask + 1 ? LF_FIFO__EV_FULL : 0));
	return KSYNC_OK;
}

LF_FIFO__HOT int __lf_fifo_dequeue_spsc(struct lf_fifo_spsc *q, void *out)
{
	uint64_t t, h, mask, shape;

	if (!q || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or output buffer");
	shape = q->c.shape;
	mask = LF_FIFO__SHAPE_MASK(shape);
	h = q->c.head;
	t = q->p.tail;
	if (t == h)
		return KSYNC_EEMPTY;
	lf_fifo__copy(out, q->c.data + (h & mask) * LF_FIFO__SHAPE_ESIZE(shape),
		      LF_FIFO__SHAPE_ESIZE(shape));
	q->c.head = h + 1;
	if (LF_FIFO__SHAPE_CB(shape))
		lf_fifo__fire(q->c.cb, (t - h == mask + 1 ? LF_FIFO__EV_NONFULL : 0) |
					       (t == h + 1 ? LF_FIFO__EV_EMPTY : 0));
	return KSYNC_OK;
}

/* ---- batches: n elements with one index publication (issue 13 item 2) ----------------
 *
 * int lf_fifo_enqueue_burst_spsc(q, elems, n, *done)
 *     Copy up to n elements (elems: n * elem_size bytes, in order) into the queue, as many
 *     as fit, and publish them with ONE release store of the tail: the consumer sees all
 *     of them or none. *done = the number enqueued. KSYNC_OK if at least one was,
 *     KSYNC_EFULL (nothing changed, *done = 0) if none fit. Bad input - q, elems or done
 *     NULL, n == 0 or n > capacity (a batch that can never be published at once) -
 *     returns KSYNC_EINVAL and changes nothing. Producer side; wait-free.
 * int lf_fifo_dequeue_burst_spsc(q, out, n, *done)
 *     The consumer's twin: up to n of the oldest elements into out (n * elem_size bytes),
 *     released with ONE store of the head. KSYNC_OK (at least one) or KSYNC_EEMPTY
 *     (*done = 0, *out untouched); the same bad input gives KSYNC_EINVAL.
 * With callbacks installed the batch runs element by element through the single-element
 * path (each boundary event fires as it would there). Per element the fast path is the
 * copy: the index loads, the full/empty check and the publishing store are paid once per
 * batch. The copies run as at most two memcpy (the ring wraps at most once).
 */
LF_FIFO__HOT void lf_fifo__spsc_copy_run(unsigned char *ring, uint64_t mask, size_t esize,
					 uint64_t pos, unsigned char *buf, size_t k, bool into_ring)
{
	uint64_t at = pos & mask;
	size_t first = (size_t)(mask + 1 - at) < k ? (size_t)(mask + 1 - at) : k;

	if (into_ring) {
		__builtin_memcpy(ring + at * esize, buf, first * esize);
		if (k > first)
			__builtin_memcpy(ring, buf + first * esize, (k - first) * esize);
	} else {
		__builtin_memcpy(buf, ring + at * esize, first * esize);
		if (k > first)
			__builtin_memcpy(buf + first * esize, ring, (k - first) * esize);
	}
}

static inline int lf_fifo_enqueue_burst_spsc(struct lf_fifo_spsc *q, const void *elems,
					     size_t n, size_t *done)
{
	uint64_t t, mask, shape, room;
	size_t k;

	if (!q || !elems || !done)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue, elements or count");
	shape = q->p.shape;
	mask = LF_FIFO__SHAPE_MASK(shape);
	if (n == 0 || n > mask + 1)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "batch size 0 or above the capacity");
	if (LF_FIFO__SHAPE_CB(shape)) {
		size_t esize = LF_FIFO__SHAPE_ESIZE(shape);
		for (k = 0; k < n; k++)
			if (lf_fifo_enqueue_spsc(q, (const unsigned char *)elems + k * esize) != KSYNC_OK)
				break;
		*done = k;
		return k ? KSYNC_OK : KSYNC_EFULL;
	}
	t = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	room = mask + 1 - (t - q->p.head_cache);
	if (room < n) {
		/* acquire: pairs with the consumer's release store of head (its reads of the
		 * cells we overwrite happen before our writes) */
		q->p.head_cache = ksync_load_acquire_u64(&q->c.head);
		room = mask + 1 - (t - q->p.head_cache);
		if (room == 0) {
			*done = 0;
			return KSYNC_EFULL;
		}
	}
	k = room < n ? (size_t)room : n;
	lf_fifo__spsc_copy_run(q->p.data, mask, LF_FIFO__SHAPE_ESIZE(shape), t,
			       (unsigned char *)(uintptr_t)elems, k, true);
	/* release: every copy above is visible to the consumer that reads the new tail
	 * with acquire (the batch's one linearization point) */
	ksync_store_release_u64(&q->p.tail, t + k);
	*done = k;
	return KSYNC_OK;
}

static inline int lf_fifo_dequeue_burst_spsc(struct lf_fifo_spsc *q, void *out, size_t n,
					     size_t *done)
{
	uint64_t h, t, mask, shape, avail;
	size_t k;

	if (!q || !out || !done)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue, output buffer or count");
	shape = q->c.shape;
	mask = LF_FIFO__SHAPE_MASK(shape);
	if (n == 0 || n > mask + 1)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "batch size 0 or above the capacity");
	if (LF_FIFO__SHAPE_CB(shape)) {
		size_t esize = LF_FIFO__SHAPE_ESIZE(shape);
		for (k = 0; k < n; k++)
			if (lf_fifo_dequeue_spsc(q, (unsigned char *)out + k * esize) != KSYNC_OK)
				break;
		*done = k;
		return k ? KSYNC_OK : KSYNC_EEMPTY;
	}
	h = ksync_load_relaxed_u64(&q->c.head);	/* only this thread writes it */
	t = q->c.tail_cache;
	avail = (int64_t)(t - h) > 0 ? t - h : 0;
	if (avail < n) {
		/* acquire: pairs with the producer's release store of tail (its copies are
		 * visible to ours) */
		t = ksync_load_acquire_u64(&q->p.tail);
		q->c.tail_cache = t;
		avail = t - h;
		if (avail == 0) {
			*done = 0;
			return KSYNC_EEMPTY;
		}
	}
	k = avail < n ? (size_t)avail : n;
	lf_fifo__spsc_copy_run(q->c.data, mask, LF_FIFO__SHAPE_ESIZE(shape), h, out, k, false);
	/* release: our reads of the cells complete before the producer, reading the new
	 * head with acquire, may overwrite them (the batch's one linearization point) */
	ksync_store_release_u64(&q->c.head, h + k);
	*done = k;
	return KSYNC_OK;
}

/* ---- ends: the producer's and the consumer's index kept by the caller (issue 13 item 2) --
 *
 * The single-element functions above keep each side's index in the queue, so a call
 * loads the index its side stored in the previous call: every enqueue (and every
 * dequeue) waits for one store-to-load forwarding through memory, a loop-carried chain
 * (the cost table's ref_index_chain row) that bounds the pair whatever the rest costs.
 * Since each side has exactly one thread, that thread may just as well keep its index in
 * a variable of its own: an END holds a copy of its side's index and of the cached
 * other index, every put/get still publishes its one element with its own release store
 * of the shared index (nothing is batched: the other side sees each element as soon as
 * the single-element path would show it), but nothing reloads what this thread stored.
 * Declared as a local variable whose address does not escape, an end lives in registers.
 *
 *   struct lf_fifo_spsc_producer p;                 struct lf_fifo_spsc_consumer c;
 *   lf_fifo_open_producer_spsc(q, &p);              lf_fifo_open_consumer_spsc(q, &c);
 *   lf_fifo_put_spsc(&p, &elem);   // OK | EFULL    lf_fifo_get_spsc(&c, &elem);  // OK | EEMPTY
 *   lf_fifo_close_producer_spsc(&p);                lf_fifo_close_consumer_spsc(&c);
 *
 * open: KSYNC_OK, or KSYNC_EINVAL for a NULL queue or end.  put/get: the results of
 * lf_fifo_enqueue_spsc / lf_fifo_dequeue_spsc (KSYNC_EINVAL: NULL end or element), the
 * same linearization points and boundary callbacks (with callbacks installed put/get go
 * through the single-element path and take the index back from the queue).  close hands
 * the cached other index back to the queue (a hint; the index itself is in the queue
 * already) and may be omitted.  Precondition, beside the side's single thread: while an
 * end is open its side's operations on q go through that end only (an enqueue by another
 * route moves the tail behind the end's back: open a new end after it).
 */
struct lf_fifo_spsc_producer {
	struct lf_fifo_spsc *q;
	uint64_t tail;		/* == q->p.tail: this end is its only writer while open */
	uint64_t head_cache;	/* <= q->c.head, as q->p.head_cache */
	uint64_t mask;		/* capacity - 1, from q->p.shape */
	size_t esize;		/* element size, from q->p.shape */
	unsigned char *data;	/* q->p.data; NULL: callbacks installed (the slow path) */
};
struct lf_fifo_spsc_consumer {
	struct lf_fifo_spsc *q;
	uint64_t head;		/* == q->c.head: this end is its only writer while open */
	uint64_t tail_cache;	/* <= q->p.tail, as q->c.tail_cache */
	uint64_t mask;		/* capacity - 1, from q->c.shape */
	size_t esize;		/* element size, from q->c.shape */
	unsigned char *data;	/* q->c.data; NULL: callbacks installed (the slow path) */
};

static inline int lf_fifo_open_producer_spsc(struct lf_fifo_spsc *q, struct lf_fifo_spsc_producer *p)
{
	if (!q || !p)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or producer end");
	p->q = q;
	p->tail = ksync_load_relaxed_u64(&q->p.tail);	/* only this thread writes it */
	p->head_cache = q->p.head_cache;
	p->mask = LF_FIFO__SHAPE_MASK(q->p.shape);
	p->esize = LF_FIFO__SHAPE_ESIZE(q->p.shape);
	p->data = LF_FIFO__SHAPE_CB(q->p.shape) ? NULL : q->p.data;
	return KSYNC_OK;
}

static inline void lf_fifo_close_producer_spsc(struct lf_fifo_spsc_producer *p)
{
	if (p && p->q)
		p->q->p.head_cache = p->head_cache;
}

static inline int lf_fifo_open_consumer_spsc(struct lf_fifo_spsc *q, struct lf_fifo_spsc_consumer *c)
{
	if (!q || !c)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL queue or consumer end");
	c->q = q;
	c->head = ksync_load_relaxed_u64(&q->c.head);	/* only this thread writes it */
	c->tail_cache = q->c.tail_cache;
	c->mask = LF_FIFO__SHAPE_MASK(q->c.shape);
	c->esize = LF_FIFO__SHAPE_ESIZE(q->c.shape);
	c->data = LF_FIFO__SHAPE_CB(q->c.shape) ? NULL : q->c.data;
	return KSYNC_OK;
}

static inline void lf_fifo_close_consumer_spsc(struct lf_fifo_spsc_consumer *c)
{
	if (c && c->q)
		c->q->c.tail_cache = c->tail_cache;
}

/* lf_fifo_enqueue_spsc through a producer end: the same steps with t in p->tail. */
LF_FIFO__HOT int lf_fifo_put_spsc(struct lf_fifo_spsc_producer *p, const void *elem)
{
	uint64_t t;

	if (!p || !elem)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL producer end or element");
	if (__builtin_expect(!p->data, 0)) {	/* callbacks installed */
		int r = lf_fifo__enqueue_spsc_cb(p->q, elem);

		p->tail = ksync_load_relaxed_u64(&p->q->p.tail);	/* ours */
		p->head_cache = p->q->p.head_cache;
		return r;
	}
	t = p->tail;
	if (__builtin_expect(t - p->head_cache > p->mask, 0)) {
		/* acquire: as in lf_fifo_enqueue_spsc */
		p->head_cache = ksync_load_acquire_u64(&p->q->c.head);
		if (t - p->head_cache > p->mask)
			return KSYNC_EFULL;
	}
	lf_fifo__copy(p->data + (t & p->mask) * p->esize, elem, p->esize);
	/* release: as in lf_fifo_enqueue_spsc (linearization point) */
	ksync_store_release_u64(&p->q->p.tail, t + 1);
	p->tail = t + 1;
	return KSYNC_OK;
}

/* lf_fifo_dequeue_spsc through a consumer end: the same steps with h in c->head. */
LF_FIFO__HOT int lf_fifo_get_spsc(struct lf_fifo_spsc_consumer *c, void *out)
{
	uint64_t h, t;

	if (!c || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL consumer end or output buffer");
	if (__builtin_expect(!c->data, 0)) {	/* callbacks installed */
		int r = lf_fifo__dequeue_spsc_cb(c->q, out);

		c->head = ksync_load_relaxed_u64(&c->q->c.head);	/* ours */
		c->tail_cache = c->q->c.tail_cache;
		return r;
	}
	h = c->head;
	if ((int64_t)(c->tail_cache - h) <= 0) {
		/* acquire: as in lf_fifo_dequeue_spsc */
		t = ksync_load_acquire_u64(&c->q->p.tail);
		if (t == h)
			return KSYNC_EEMPTY;
		c->tail_cache = t;	/* a register here: keeping it costs nothing */
	}
	lf_fifo__copy(out, c->data + (h & c->mask) * c->esize, c->esize);
	/* release: as in lf_fifo_dequeue_spsc (linearization point) */
	ksync_store_release_u64(&c->q->c.head, h + 1);
	c->head = h + 1;
	return KSYNC_OK;
}

#endif /* KSYNC_LF_FIFO_SPSC_H */
