/*
 * test_lf_fifo_spsc_util.h - what the spsc batch and ends tests (test_lf_fifo_batch.c,
 * test_lf_fifo_ends.c) share: a seeded xorshift generator, tagged elements of any size
 * (fill / is: byte i of element seq is a function of both, so a misplaced, stale or
 * torn element is seen), the final in-order drain, and boundary callbacks that count
 * their events.
 */
#ifndef TEST_LF_FIFO_SPSC_UTIL_H
#define TEST_LF_FIFO_SPSC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/lf_fifo_spsc.h>

/* xorshift64; *s must start nonzero */
static inline uint64_t spsc_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline void spsc_fill(unsigned char *e, size_t esize, uint64_t seq)
{
	for (size_t i = 0; i < esize; i++)
		e[i] = (unsigned char)(seq * 131 + i * 7 + (seq >> 8));
}

static inline bool spsc_is(const unsigned char *e, size_t esize, uint64_t seq)
{
	for (size_t i = 0; i < esize; i++)
		if (e[i] != (unsigned char)(seq * 131 + i * 7 + (seq >> 8)))
			return false;
	return true;
}

/* Dequeue the elements tagged from .. to - 1 one by one, each checked, then expect
 * KSYNC_EEMPTY: true if all of it held. */
static inline bool spsc_drain_in_order(struct lf_fifo_spsc *q, unsigned char *out,
				       size_t esize, uint64_t from, uint64_t to)
{
	for (uint64_t seq = from; seq < to; seq++)
		if (lf_fifo_dequeue_spsc(q, out) != KSYNC_OK || !spsc_is(out, esize, seq))
			return false;
	return lf_fifo_dequeue_spsc(q, out) == KSYNC_EEMPTY;
}

/* Boundary events counted by the callbacks of spsc_counting_cb (one test at a time). */
static int ev_nonempty, ev_full, ev_nonfull, ev_empty;
static inline void spsc_on_nonempty(void *a) { (void)a; ev_nonempty++; }
static inline void spsc_on_full(void *a) { (void)a; ev_full++; }
static inline void spsc_on_nonfull(void *a) { (void)a; ev_nonfull++; }
static inline void spsc_on_empty(void *a) { (void)a; ev_empty++; }
static const struct lf_fifo_callbacks spsc_counting_cb = {
	.nonempty = spsc_on_nonempty, .full = spsc_on_full, .nonfull = spsc_on_nonfull,
	.empty = spsc_on_empty, .arg = NULL,
};

#endif
