/*
 * test_lf_fifo_flavours.h - one interface over the four FIFO flavours of
 * include/ksync/lf_fifo_*.h, for the tests (test_lf_fifo*.c, stress_lf_fifo.c).  A test
 * that hooks the atomics (KSYNC_ATOMIC_HOOK) or the interference points
 * (LF_FIFO_INTERFERE/LF_FIFO_RETRY) defines them before including this header.
 */
#ifndef TEST_LF_FIFO_FLAVOURS_H
#define TEST_LF_FIFO_FLAVOURS_H

#include <ksync/lf_fifo_mpmc.h>
#include <ksync/lf_fifo_mpsc.h>
#include <ksync/lf_fifo_spmc.h>
#include <ksync/lf_fifo_spsc.h>

union anyq {
	struct lf_fifo_spsc spsc;
	struct lf_fifo_spmc spmc;
	struct lf_fifo_mpsc mpsc;
	struct lf_fifo_mpmc mpmc;
};

struct flavour {
	const char *name;
	size_t (*size)(uint64_t cap, size_t esize);
	int (*init)(union anyq *q, void *st, size_t bytes, uint64_t cap, size_t esize,
		    const struct lf_fifo_callbacks *cb);
	int (*enq)(union anyq *q, const void *e);
	int (*deq)(union anyq *q, void *o);
	int (*enq_raw)(void *q, const void *e);	/* the real function, for a NULL q */
	int (*deq_raw)(void *q, void *o);
	int max_producers, max_consumers;	/* 1 = single; 0 = many */
	int indirect;				/* cells counted as in lf_fifo.h */
};

#define TLF_FLAVOUR(F)                                                                \
	static int tlf_init_##F(union anyq *q, void *st, size_t bytes, uint64_t cap,  \
				size_t esize, const struct lf_fifo_callbacks *cb)     \
	{                                                                             \
		return lf_fifo_init_##F(q ? &q->F : NULL, st, bytes, cap, esize, cb); \
	}                                                                             \
	static int tlf_enq_##F(union anyq *q, const void *e)                          \
	{                                                                             \
		return lf_fifo_enqueue_##F(&q->F, e);                                 \
	}                                                                             \
	static int tlf_deq_##F(union anyq *q, void *o)                                \
	{                                                                             \
		return lf_fifo_dequeue_##F(&q->F, o);                                 \
	}                                                                             \
	static int tlf_enq_raw_##F(void *q, const void *e)                            \
	{                                                                             \
		return lf_fifo_enqueue_##F(q, e);                                     \
	}                                                                             \
	static int tlf_deq_raw_##F(void *q, void *o)                                  \
	{                                                                             \
		return lf_fifo_dequeue_##F(q, o);                                     \
	}
TLF_FLAVOUR(spsc)
TLF_FLAVOUR(spmc)
TLF_FLAVOUR(mpsc)
TLF_FLAVOUR(mpmc)

#define TLF_ENTRY(F, np, nc, ind)                                                     \
	{ #F, lf_fifo_storage_size_##F, tlf_init_##F, tlf_enq_##F, tlf_deq_##F,       \
	  tlf_enq_raw_##F, tlf_deq_raw_##F, np, nc, ind }

static const struct flavour tlf_flavours[] __attribute__((unused)) = {
	TLF_ENTRY(spsc, 1, 1, 0),
	TLF_ENTRY(spmc, 1, 0, 0),
	TLF_ENTRY(mpsc, 0, 1, 1),
	TLF_ENTRY(mpmc, 0, 0, 1),
};
#define TLF_NFLAV 4

#endif /* TEST_LF_FIFO_FLAVOURS_H */
