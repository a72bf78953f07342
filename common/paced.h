/*
 * paced.h - the arithmetic of a paced device buffer: items (serial characters, network
 * packets) arrive on a fixed TSC schedule into a buffer of `capacity` items, and a
 * handler drains it at whatever time it happens to run. Header-only, portable C11; it
 * compiles in the kernel and hosted (tests/unit/test_paced.c), and includes nothing but
 * <stdint.h>, <stdbool.h> and libksync's <ksync/errors.h> (for KSYNC_OK / KSYNC_EINVAL).
 *
 * Serves Small & Manley 1997 section 6 (Correctness) and 6.4: "if interrupts are
 * disabled for a long period of time ... data buffers can overflow with an accompanying
 * loss of data"; a 16550 holds 16 characters, so a handler that runs late loses exactly
 * the characters that arrived while its FIFO was full.
 *
 * What is real and what is modelled: everything here is a model (pure arithmetic, no
 * device). The kernel's serial and NIC models (kernel/dev/serial_model.c,
 * kernel/dev/net_model.c) drive it from real interrupts and the real TSC, so the loss it
 * computes is the loss a real device would have had given when the handler really ran.
 *
 * The model
 * ---------
 * Item i (0 <= i < n) arrives at
 *     arrival(i) = t0 + (i / burst) * burst_period + (i % burst) * item_period
 * (a serial line is burst = 1: arrival(i) = t0 + i * burst_period). The buffer is empty
 * at t0. A drain at time `now` takes a snapshot: every item that has arrived by `now`
 * (arrival <= now) and was neither consumed nor lost by an earlier drain is either
 *   - kept: the first `capacity` of them (in order) were in the buffer, or
 *   - lost: the rest arrived while the buffer was full (overrun) - as in a 16550, the
 *     FIFO keeps the oldest characters and the newcomers are dropped.
 * Items that arrive after the snapshot (while the drain runs) belong to the next drain.
 * Kept items are therefore always a run of consecutive sequence numbers, followed by the
 * lost run; a consumer that checks the sequence numbers it receives (struct paced_check)
 * must find gaps == lost once the stream is finished.
 *
 * Trigger and timeout (the 16550's receive interrupt): paced_next_trigger() is the time
 * at which the buffer will hold `trigger` items; when fewer than `trigger` items remain
 * in the stream, it is the last item's arrival plus PACED_TIMEOUT_ITEMS item times (the
 * 16550 character timeout for a final partial FIFO).
 *
 * Concurrency: a struct paced is owned by one device model. Parameters are written by
 * paced_init before the device's interrupt is enabled and are read-only afterwards; the
 * state (next, kept, lost, drains, ...) is written only by paced_drain, which the
 * model's interrupt handler calls - one CPU at a time, never nested for the same model
 * (every interrupt scheme keeps a source's own level masked while its handler runs).
 * Other contexts may read the counters for reporting after the stream is finished.
 * All times are TSC ticks (uint64_t); all arithmetic is unsigned and overflow-checked at
 * init, so no operation wraps for accepted parameters.
 */
#ifndef KSYNC_PACED_H
#define KSYNC_PACED_H

#include <stdint.h>
#include <stdbool.h>
#include <ksync/errors.h>

#define PACED_NEVER UINT64_MAX		/* next_trigger of a finished stream */
#define PACED_TIMEOUT_ITEMS 4u		/* 16550 character timeout: 4 character times */

/* What paced_init takes. */
struct paced_params {
	uint64_t t0;			/* TSC time of item 0's arrival */
	uint64_t n;			/* items in the stream, >= 1 */
	uint64_t item_period;		/* TSC ticks between items inside a burst, >= 1 */
	uint64_t burst_period;		/* TSC ticks between burst starts, >= burst * item_period */
	uint32_t burst;			/* items per burst, >= 1 (serial: 1) */
	uint32_t capacity;		/* buffer size in items, >= 1 (16550: 16) */
	uint32_t trigger;		/* interrupt when the buffer holds this many, 1..capacity */
};

struct paced {
	/* parameters: written by paced_init, read-only after */
	struct paced_params prm;
	uint64_t end;			/* arrival(n - 1) + PACED_TIMEOUT_ITEMS * item_period */
	/* state: written only by paced_drain (the owning model's handler) */
	uint64_t next;			/* first sequence number neither consumed nor lost */
	uint64_t last_now;		/* snapshot time of the last drain (0 before the first) */
	uint64_t kept;			/* items delivered by drains, total */
	uint64_t lost;			/* items overrun, total */
	uint64_t drains;		/* paced_drain calls */
	uint64_t lossy_drains;		/* drains that lost at least one item */
};

/* One drain's outcome: kept items are first .. first + kept - 1, lost items are
 * first + kept .. first + kept + lost - 1. */
struct paced_batch {
	uint64_t first;
	uint32_t kept;
	uint64_t lost;
};

/* 0 if a*b+c fits in 64 bits (stores it), else -1. */
static inline int paced_muladd_(uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
	uint64_t m;
	if (__builtin_mul_overflow(a, b, &m) || __builtin_add_overflow(m, c, out))
		return -1;
	return 0;
}

/* Arrival time of item i (i < n; no check). Cannot overflow once init accepted. */
static inline uint64_t paced_arrival(const struct paced *p, uint64_t i)
{
	const struct paced_params *q = &p->prm;
	return q->t0 + (i / q->burst) * q->burst_period + (i % q->burst) * q->item_period;
}

/*
 * Validate and set up. KSYNC_EINVAL for: p or prm NULL, n 0, item_period 0, burst 0,
 * capacity 0, trigger 0 or > capacity, burst_period < burst * item_period (a burst must
 * fit in its period), or a schedule whose end (last arrival + timeout) overflows 64 bits.
 */
static inline int paced_init(struct paced *p, const struct paced_params *prm)
{
	if (!p || !prm)
		return KSYNC_EINVAL;
	if (prm->n == 0 || prm->item_period == 0 || prm->burst == 0 || prm->capacity == 0 ||
	    prm->trigger == 0 || prm->trigger > prm->capacity)
		return KSYNC_EINVAL;
	uint64_t span, last, end;
	if (paced_muladd_(prm->burst, prm->item_period, 0, &span) || prm->burst_period < span)
		return KSYNC_EINVAL;
	uint64_t i = prm->n - 1;
	/* last = t0 + (i / burst) * burst_period + (i % burst) * item_period, checked */
	if (paced_muladd_(i / prm->burst, prm->burst_period, prm->t0, &last) ||
	    paced_muladd_(i % prm->burst, prm->item_period, last, &last) ||
	    paced_muladd_(PACED_TIMEOUT_ITEMS, prm->item_period, last, &end))
		return KSYNC_EINVAL;
	p->prm = *prm;
	p->end = end;
	p->next = 0;
	p->last_now = 0;
	p->kept = p->lost = p->drains = p->lossy_drains = 0;
	return KSYNC_OK;
}

/*
 * A serial line's character time: TSC ticks per character at `baud` with `bits` bits per
 * character on the wire, hz * bits / baud, truncated. A 16550 frame is start + data +
 * parity + stop bits: 8N1 is 10 (the kernel's default); Small & Manley's section 6.4
 * arithmetic counts 8 (115.2 kbit/s -> 14,400 characters/s). 0 if baud or bits is 0 or
 * hz * bits overflows 64 bits.
 */
static inline uint64_t paced_char_ticks(uint64_t hz, uint32_t baud, uint32_t bits)
{
	uint64_t m;
	if (baud == 0 || bits == 0 || paced_muladd_(hz, bits, 0, &m))
		return 0;
	return m / baud;
}

/*
 * The serial line's schedule as the kernel's serial model (kernel/dev/serial_model.c)
 * sets it up at time `now`: the first character is on the wire at `now`, so character i
 * arrives at now + (i + 1) * char_ticks; an empty FIFO of `capacity`. A drain at
 * now + W therefore finds floor(W / char_ticks) characters, of which all but `capacity`
 * are lost. Same errors as paced_init (and KSYNC_EINVAL if now + char_ticks overflows).
 */
static inline int paced_serial_init(struct paced *p, uint64_t now, uint64_t char_ticks,
				    uint64_t n, uint32_t capacity, uint32_t trigger)
{
	uint64_t t0;
	if (char_ticks == 0 || paced_muladd_(1, char_ticks, now, &t0))
		return KSYNC_EINVAL;
	struct paced_params q = {
		.t0 = t0, .n = n, .item_period = char_ticks, .burst_period = char_ticks,
		.burst = 1, .capacity = capacity, .trigger = trigger,
	};
	return paced_init(p, &q);
}

/* Items that have arrived by time t (arrival <= t), 0..n. */
static inline uint64_t paced_arrived(const struct paced *p, uint64_t t)
{
	const struct paced_params *q = &p->prm;
	if (t < q->t0)
		return 0;
	uint64_t d = t - q->t0;
	uint64_t b = d / q->burst_period;
	uint64_t in_burst = (d - b * q->burst_period) / q->item_period + 1;
	if (in_burst > q->burst)
		in_burst = q->burst;
	if (b >= q->n / q->burst + 1)		/* past the stream: avoid b * burst overflowing */
		return q->n;
	uint64_t a = b * q->burst + in_burst;
	return a < q->n ? a : q->n;
}

static inline bool paced_finished(const struct paced *p) { return p->next >= p->prm.n; }

/* What a drain at `now` would find in the buffer (<= capacity), and would lose. */
static inline uint64_t paced_pending(const struct paced *p, uint64_t now)
{
	uint64_t a = paced_arrived(p, now < p->last_now ? p->last_now : now);
	uint64_t w = a > p->next ? a - p->next : 0;
	return w < p->prm.capacity ? w : p->prm.capacity;
}

static inline uint64_t paced_overrun(const struct paced *p, uint64_t now)
{
	uint64_t a = paced_arrived(p, now < p->last_now ? p->last_now : now);
	uint64_t w = a > p->next ? a - p->next : 0;
	return w > p->prm.capacity ? w - p->prm.capacity : 0;
}

/*
 * The drain: snapshot at `now` (a `now` earlier than the previous drain's counts as the
 * previous drain's time: time never runs backwards for the buffer). Fills *out, adds the
 * lost items to the totals, and if seqs != NULL writes the kept sequence numbers to
 * seqs[0 .. kept-1] (room for `capacity` entries). Returns the number kept.
 */
static inline uint32_t paced_drain(struct paced *p, uint64_t now, uint64_t *seqs,
				   struct paced_batch *out)
{
	if (now < p->last_now)
		now = p->last_now;
	uint64_t a = paced_arrived(p, now);
	uint64_t w = a > p->next ? a - p->next : 0;
	uint32_t kept = (uint32_t)(w < p->prm.capacity ? w : p->prm.capacity);
	struct paced_batch b = { p->next, kept, w - kept };
	if (seqs)
		for (uint32_t k = 0; k < kept; k++)
			seqs[k] = b.first + k;
	p->next += w;
	p->last_now = now;
	p->kept += b.kept;
	p->lost += b.lost;
	p->drains++;
	if (b.lost)
		p->lossy_drains++;
	if (out)
		*out = b;
	return kept;
}

/*
 * When the device interrupts next: the arrival of the `trigger`-th item not yet drained,
 * or, when fewer than `trigger` items remain, the stream's end plus the character
 * timeout. Never earlier than `now` (a trigger already reached fires at once);
 * PACED_NEVER once the stream is finished.
 */
static inline uint64_t paced_next_trigger(const struct paced *p, uint64_t now)
{
	if (paced_finished(p))
		return PACED_NEVER;
	uint64_t k = p->next + p->prm.trigger - 1;
	uint64_t t = k < p->prm.n ? paced_arrival(p, k) : p->end;
	return t < now ? now : t;
}

/*
 * The consumer's side: it sees only the sequence numbers it receives, and must find
 * them strictly increasing; the holes between them are the gaps. After
 * paced_check_finish(c, n) (which counts a hole at the end of the stream), a correct
 * device model gives gaps == its lost count and received + gaps == n.
 * Owned by the same handler as the struct paced it checks.
 */
struct paced_check {
	uint64_t expect;		/* next sequence number expected */
	uint64_t received;
	uint64_t gaps;			/* items skipped over */
	uint64_t seq_errors;		/* a sequence number <= one already received */
};

static inline void paced_check_init(struct paced_check *c)
{
	c->expect = c->received = c->gaps = c->seq_errors = 0;
}

static inline void paced_check_seq(struct paced_check *c, uint64_t seq)
{
	if (seq < c->expect) {
		c->seq_errors++;
		return;
	}
	c->gaps += seq - c->expect;
	c->received++;
	c->expect = seq + 1;
}

static inline void paced_check_finish(struct paced_check *c, uint64_t n)
{
	if (n > c->expect) {
		c->gaps += n - c->expect;
		c->expect = n;
	}
}

#endif /* KSYNC_PACED_H */
