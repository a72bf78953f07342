/*
 * test_paced.c - hosted tests of common/paced.h, the paced device-buffer
 * arithmetic behind the serial and NIC models (Small & Manley 1997 section 6: data loss
 * when a handler runs late). Everything here is the model itself, no device.
 *
 * Hand-computed cases: parameter validation, arrival times (serial and bursts), no loss
 * when drained at each trigger, exact loss when a drain is late by k item times, the
 * final 16550 character timeout, items arriving during a drain going to the next one,
 * and a seeded random drain schedule checked item by item against an independent
 * reference simulation, with gaps seen by the consumer == lost. The paper's section 6.4
 * arithmetic: a 2 ms masked window at 115.2 kbit/s loses 12 characters at 8 bits per
 * character (the paper's count), 7 at 10 (8N1, the kernel's default).
 *
 * Included by relative path: the hosted build's include path is only include/ (mk/lib.mk).
 */
#include <stdint.h>
#include <string.h>

#include <ksync/ktest.h>
#include "paced.h"

static struct paced_params serial_params(uint64_t t0, uint64_t n, uint64_t per,
					 uint32_t cap, uint32_t trig)
{
	struct paced_params q = { .t0 = t0, .n = n, .item_period = per, .burst_period = per,
				  .burst = 1, .capacity = cap, .trigger = trig };
	return q;
}

KTEST(paced_init_validates)
{
	struct paced p;
	struct paced_params ok = serial_params(0, 10, 10, 16, 8), q;

	KT_EXPECT_EQ(paced_init(&p, &ok), KSYNC_OK);
	KT_EXPECT_EQ(paced_init(NULL, &ok), KSYNC_EINVAL);
	KT_EXPECT_EQ(paced_init(&p, NULL), KSYNC_EINVAL);
	q = ok; q.capacity = 0;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q = ok; q.trigger = 0;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q = ok; q.trigger = 17;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q = ok; q.trigger = 16;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_OK);
	q = ok; q.item_period = 0;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q = ok; q.n = 0;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q = ok; q.burst = 0;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	/* a burst of 4 items 10 apart needs a period of at least 40 */
	q = ok; q.burst = 4; q.item_period = 10; q.burst_period = 39;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q.burst_period = 40;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_OK);
	/* the serial case too: burst_period below item_period is refused */
	q = ok; q.burst_period = 9;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	/* end of the schedule overflows 64 bits */
	q = ok; q.t0 = UINT64_MAX - 100;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);	/* 9*10 + 4*10 > 100 */
	q = ok; q.t0 = UINT64_MAX - 130;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_OK);	/* exactly fits */
	q = ok; q.n = UINT64_MAX; q.item_period = 2; q.burst_period = 2;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);
	q = ok; q.burst = UINT32_MAX; q.item_period = UINT64_MAX / 2; q.burst_period = UINT64_MAX;
	KT_EXPECT_EQ(paced_init(&p, &q), KSYNC_EINVAL);	/* burst * item_period overflows */
}

KTEST(paced_arrivals_serial)
{
	struct paced p;
	struct paced_params q = serial_params(100, 6, 10, 16, 8);

	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	KT_EXPECT_EQ(paced_arrival(&p, 0), 100);
	KT_EXPECT_EQ(paced_arrival(&p, 5), 150);
	KT_EXPECT_EQ(paced_arrived(&p, 0), 0);
	KT_EXPECT_EQ(paced_arrived(&p, 99), 0);
	KT_EXPECT_EQ(paced_arrived(&p, 100), 1);
	KT_EXPECT_EQ(paced_arrived(&p, 109), 1);
	KT_EXPECT_EQ(paced_arrived(&p, 110), 2);
	KT_EXPECT_EQ(paced_arrived(&p, 149), 5);
	KT_EXPECT_EQ(paced_arrived(&p, 150), 6);
	KT_EXPECT_EQ(paced_arrived(&p, 10000), 6);
	KT_EXPECT_EQ(paced_arrived(&p, UINT64_MAX), 6);
	KT_EXPECT_EQ(p.end, 150 + 4 * 10);
}

KTEST(paced_arrivals_bursts)
{
	struct paced p;
	/* bursts of 4, 10 apart, every 100: 0 10 20 30 | 100 110 120 130 | 200 210 */
	struct paced_params q = { .t0 = 0, .n = 10, .item_period = 10, .burst_period = 100,
				  .burst = 4, .capacity = 8, .trigger = 1 };

	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	KT_EXPECT_EQ(paced_arrival(&p, 3), 30);
	KT_EXPECT_EQ(paced_arrival(&p, 4), 100);
	KT_EXPECT_EQ(paced_arrival(&p, 9), 210);
	KT_EXPECT_EQ(paced_arrived(&p, 0), 1);
	KT_EXPECT_EQ(paced_arrived(&p, 35), 4);
	KT_EXPECT_EQ(paced_arrived(&p, 99), 4);
	KT_EXPECT_EQ(paced_arrived(&p, 100), 5);
	KT_EXPECT_EQ(paced_arrived(&p, 131), 8);
	KT_EXPECT_EQ(paced_arrived(&p, 209), 9);
	KT_EXPECT_EQ(paced_arrived(&p, 210), 10);
	KT_EXPECT_EQ(paced_arrived(&p, 299), 10);	/* n caps the partial third burst */
	KT_EXPECT_EQ(p.end, 210 + 40);

	/* one drain at 131 with a ring of 8: 8 kept, none lost; a second ring of 3 loses 5 */
	struct paced_batch b;
	KT_EXPECT_EQ(paced_drain(&p, 131, NULL, &b), 8);
	KT_EXPECT_EQ(b.first, 0);
	KT_EXPECT_EQ(b.lost, 0);
	q.capacity = 3;
	q.trigger = 3;
	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	KT_EXPECT_EQ(paced_drain(&p, 131, NULL, &b), 3);
	KT_EXPECT_EQ(b.first, 0);
	KT_EXPECT_EQ(b.lost, 5);
	/* the next drain starts after the lost ones: items 8, 9 */
	KT_EXPECT_EQ(paced_drain(&p, 1000, NULL, &b), 2);
	KT_EXPECT_EQ(b.first, 8);
	KT_EXPECT_EQ(b.lost, 0);
	KT_EXPECT(paced_finished(&p));
	KT_EXPECT_EQ(p.kept, 5);
	KT_EXPECT_EQ(p.lost, 5);
	KT_EXPECT_EQ(p.lossy_drains, 1);
}

/* 16550 at trigger 8: interrupts at items 7, 15, 23, ... drained on time lose nothing. */
KTEST(paced_no_loss_when_drained_at_trigger)
{
	struct paced p;
	struct paced_params q = serial_params(1000, 64, 10, 16, 8);
	uint64_t seqs[16];
	struct paced_batch b;
	struct paced_check c;

	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	paced_check_init(&c);
	for (unsigned d = 0; d < 8; d++) {
		uint64_t t = paced_next_trigger(&p, 0);
		KT_EXPECT_EQ(t, 1000 + (8 * d + 7) * 10);
		KT_EXPECT_EQ(paced_pending(&p, t), 8);
		KT_EXPECT_EQ(paced_pending(&p, t - 1), 7);
		KT_EXPECT_EQ(paced_drain(&p, t, seqs, &b), 8);
		KT_EXPECT_EQ(b.first, 8 * d);
		KT_EXPECT_EQ(b.lost, 0);
		for (unsigned k = 0; k < b.kept; k++) {
			KT_EXPECT_EQ(seqs[k], 8 * d + k);
			paced_check_seq(&c, seqs[k]);
		}
	}
	KT_EXPECT(paced_finished(&p));
	KT_EXPECT_EQ(paced_next_trigger(&p, 0), PACED_NEVER);
	paced_check_finish(&c, 64);
	KT_EXPECT_EQ(c.received, 64);
	KT_EXPECT_EQ(c.gaps, 0);
	KT_EXPECT_EQ(c.seq_errors, 0);
	KT_EXPECT_EQ(p.lost, 0);
	KT_EXPECT_EQ(p.drains, 8);
}

/* A drain late by k item times after the FIFO filled (item 15) loses exactly k. */
KTEST(paced_late_by_k_items_loses_k)
{
	static const unsigned ks[] = { 0, 1, 5, 30 };
	for (unsigned j = 0; j < sizeof ks / sizeof ks[0]; j++) {
		unsigned k = ks[j];
		struct paced p;
		struct paced_params q = serial_params(0, 100, 10, 16, 8);
		struct paced_batch b;
		struct paced_check c;

		KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
		paced_check_init(&c);
		uint64_t t = 150 + 10 * k;		/* item 15 arrives at 150 */
		KT_EXPECT_EQ(paced_overrun(&p, t), k);
		KT_EXPECT_EQ(paced_pending(&p, t), 16);
		KT_EXPECT_EQ(paced_drain(&p, t, NULL, &b), 16);
		KT_EXPECT_EQ(b.first, 0);
		KT_EXPECT_EQ(b.lost, k);
		for (unsigned i = 0; i < b.kept; i++)
			paced_check_seq(&c, b.first + i);
		/* the next trigger counts from the first item after the lost run */
		KT_EXPECT_EQ(paced_next_trigger(&p, t), (16 + k + 7) * 10);
		/* drain the rest late enough, in one go per 16 */
		while (!paced_finished(&p)) {
			uint64_t tt = paced_next_trigger(&p, 0);
			paced_drain(&p, tt, NULL, &b);
			KT_EXPECT_EQ(b.lost, 0);
			for (unsigned i = 0; i < b.kept; i++)
				paced_check_seq(&c, b.first + i);
		}
		paced_check_finish(&c, 100);
		KT_EXPECT_EQ(p.lost, k);
		KT_EXPECT_EQ(c.gaps, k);
		KT_EXPECT_EQ(c.received + c.gaps, 100);
		KT_EXPECT_EQ(c.seq_errors, 0);
	}
}

/* 20 characters at trigger 8: interrupts at items 7 and 15, then 4 are left: the
 * character timeout fires 4 character times after the last one. */
KTEST(paced_final_timeout)
{
	struct paced p;
	struct paced_params q = serial_params(0, 20, 10, 16, 8);
	struct paced_batch b;

	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	KT_EXPECT_EQ(paced_next_trigger(&p, 0), 70);
	paced_drain(&p, 70, NULL, &b);
	KT_EXPECT_EQ(paced_next_trigger(&p, 70), 150);
	paced_drain(&p, 150, NULL, &b);
	KT_EXPECT_EQ(b.first, 8);
	KT_EXPECT_EQ(b.kept, 8);
	KT_EXPECT_EQ(paced_next_trigger(&p, 150), 190 + 40);
	KT_EXPECT_EQ(paced_next_trigger(&p, 500), 500);	/* already due: at once */
	paced_drain(&p, 230, NULL, &b);
	KT_EXPECT_EQ(b.first, 16);
	KT_EXPECT_EQ(b.kept, 4);
	KT_EXPECT_EQ(b.lost, 0);
	KT_EXPECT(paced_finished(&p));
	KT_EXPECT_EQ(paced_next_trigger(&p, 230), PACED_NEVER);
	/* a drain after the end finds nothing */
	KT_EXPECT_EQ(paced_drain(&p, 10000, NULL, &b), 0);
	KT_EXPECT_EQ(b.lost, 0);
	KT_EXPECT_EQ(p.kept, 20);

	/* trigger 1: one interrupt per character, the timeout never needed */
	q.trigger = 1;
	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	for (unsigned i = 0; i < 20; i++) {
		KT_EXPECT_EQ(paced_next_trigger(&p, 0), 10 * i);
		paced_drain(&p, 10 * i, NULL, &b);
		KT_EXPECT_EQ(b.kept, 1);
	}
	KT_EXPECT(paced_finished(&p));
}

/* The snapshot: items that arrive while a drain runs belong to the next one, and time
 * never runs backwards for the buffer. */
KTEST(paced_snapshot_and_monotonic_time)
{
	struct paced p;
	struct paced_params q = serial_params(0, 50, 10, 16, 8);
	struct paced_batch b;

	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	KT_EXPECT_EQ(paced_drain(&p, 75, NULL, &b), 8);		/* items 0..7 */
	KT_EXPECT_EQ(paced_drain(&p, 75, NULL, &b), 0);		/* same instant: nothing */
	KT_EXPECT_EQ(paced_drain(&p, 20, NULL, &b), 0);		/* earlier: counts as 75 */
	KT_EXPECT_EQ(paced_pending(&p, 20), 0);
	KT_EXPECT_EQ(paced_drain(&p, 80, NULL, &b), 1);		/* item 8 arrived at 80 */
	KT_EXPECT_EQ(b.first, 8);
	/* before t0 nothing has arrived */
	q.t0 = 1000;
	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	KT_EXPECT_EQ(paced_drain(&p, 999, NULL, &b), 0);
	KT_EXPECT_EQ(paced_drain(&p, 1000, NULL, &b), 1);
	KT_EXPECT_EQ(p.drains, 2);
}

KTEST(paced_check_counts_gaps_and_errors)
{
	struct paced_check c;

	paced_check_init(&c);
	paced_check_seq(&c, 0);
	paced_check_seq(&c, 1);
	paced_check_seq(&c, 5);		/* 2, 3, 4 missing */
	paced_check_seq(&c, 5);		/* duplicate */
	paced_check_seq(&c, 3);		/* backwards */
	paced_check_seq(&c, 6);
	paced_check_finish(&c, 10);	/* 7, 8, 9 missing at the end */
	KT_EXPECT_EQ(c.received, 4);
	KT_EXPECT_EQ(c.gaps, 6);
	KT_EXPECT_EQ(c.seq_errors, 2);
	paced_check_init(&c);
	paced_check_finish(&c, 3);	/* nothing received at all */
	KT_EXPECT_EQ(c.gaps, 3);
}

/* ---- Small & Manley 1997 section 6.4: the serial arithmetic -------------------------
 * "115.2 kbit/s -> 14,400 characters/s -> a 2 ms masked window loses 12 characters with
 * a 16-byte FIFO" counts 8 bits per character; 8N1 (the kernel's default) counts 10:
 * 11,520 characters/s -> 23.04 in 2 ms -> 7 lost. The schedule is the kernel serial
 * model's own (paced_serial_init, paced_char_ticks): started at `now` with an empty
 * FIFO, the handler held off until now + 2 ms, then one drain. The TSC rates are
 * arbitrary: the count must not depend on them. */
static void masked_2ms(struct ktest_ctx *kt, uint64_t hz, uint32_t bits, uint64_t want_lost)
{
	struct paced p;
	struct paced_batch b;
	struct paced_check c;
	uint64_t now = 1000003;				/* any start time */
	uint64_t ch = paced_char_ticks(hz, 115200, bits);

	KT_ASSERT(ch > 0);
	KT_ASSERT(paced_serial_init(&p, now, ch, 1000, 16, 8) == KSYNC_OK);
	paced_check_init(&c);
	uint64_t window = hz * 2 / 1000;		/* 2 ms in ticks */
	KT_EXPECT_EQ(paced_arrived(&p, now + window), 16 + want_lost);
	KT_EXPECT_EQ(paced_overrun(&p, now + window), want_lost);
	KT_EXPECT_EQ(paced_drain(&p, now + window, NULL, &b), 16);
	KT_EXPECT_EQ(b.first, 0);
	KT_EXPECT_EQ(b.lost, want_lost);
	for (uint32_t k = 0; k < b.kept; k++)
		paced_check_seq(&c, b.first + k);
	/* the driver sees the loss as a hole once the next character comes in */
	paced_drain(&p, paced_arrival(&p, b.first + b.kept + b.lost), NULL, &b);
	KT_EXPECT_EQ(b.first, 16 + want_lost);
	KT_EXPECT_EQ(b.kept, 1);
	paced_check_seq(&c, b.first);
	KT_EXPECT_EQ(c.gaps, want_lost);
	KT_EXPECT_EQ(p.lost, want_lost);
}

KTEST(paced_paper_6_4_masked_2ms_loses_12_at_8_bits_7_at_10)
{
	/* 8 bits: 14,400 characters/s, a character every 69.4 us */
	KT_EXPECT_EQ(paced_char_ticks(115200 * 100, 115200, 8), 800);	/* 1e-2 s / 14400 */
	KT_EXPECT_EQ(paced_char_ticks(14400 * 1000, 115200, 8), 1000);	/* 1 ms / 1000 */
	KT_EXPECT_EQ(paced_char_ticks(11520 * 1000, 115200, 10), 1000);
	static const uint64_t hzs[] = { 14400000, 1000000000, 2495999000ull, 3600000000ull };
	for (unsigned i = 0; i < sizeof hzs / sizeof hzs[0]; i++) {
		masked_2ms(kt, hzs[i], 8, 12);		/* 28.8 arrive: 28 by 2 ms, 16 kept */
		masked_2ms(kt, hzs[i], 10, 7);		/* 23.04 arrive: 23 by 2 ms */
	}
}

/* A 2 ms window that starts anywhere between two characters (the FIFO empty at its
 * start) sees 28 or 29 arrivals at 8 bits (28.8 on average), so loses 12 or 13, never
 * fewer than the paper's 12; at 10 bits 23 or 24 (23.04 on average): 7 or 8. */
KTEST(paced_paper_6_4_any_phase)
{
	const uint64_t hz = 14400ull * 1000;	/* 8 bits: 1000 ticks per character */
	const uint32_t bitss[] = { 8, 10 };
	const uint64_t lo[] = { 12, 7 };
	for (unsigned j = 0; j < 2; j++) {
		uint64_t ch = paced_char_ticks(hz, 115200, bitss[j]);
		uint64_t n_lo = 0, n_hi = 0, other = 0;
		for (uint64_t phase = 0; phase < ch; phase++) {
			struct paced p;
			struct paced_batch b;
			KT_ASSERT(paced_serial_init(&p, 0, ch, 1000, 16, 8) == KSYNC_OK);
			/* drained (empty) at `start`, then held off for 2 ms */
			uint64_t start = 5 * ch + phase;
			paced_drain(&p, start, NULL, &b);
			KT_ASSERT(b.lost == 0);
			paced_drain(&p, start + hz * 2 / 1000, NULL, &b);
			if (b.lost == lo[j])
				n_lo++;
			else if (b.lost == lo[j] + 1)
				n_hi++;
			else
				other++;
		}
		KT_EXPECT_EQ(other, 0);
		KT_EXPECT(n_lo > 0);
		KT_EXPECT(n_hi > 0);
		kt_diag(kt, "%u bits: %lu phases lose %lu, %lu lose %lu", bitss[j],
			(unsigned long)n_lo, (unsigned long)lo[j], (unsigned long)n_hi,
			(unsigned long)(lo[j] + 1));
	}
}

KTEST(paced_char_ticks_and_serial_init_edges)
{
	struct paced p;
	KT_EXPECT_EQ(paced_char_ticks(1000, 0, 8), 0);
	KT_EXPECT_EQ(paced_char_ticks(1000, 115200, 0), 0);
	KT_EXPECT_EQ(paced_char_ticks(UINT64_MAX / 4, 9600, 8), 0);	/* hz * bits overflows */
	KT_EXPECT_EQ(paced_char_ticks(1000000, 115200, 10), 86);		/* truncated */
	KT_EXPECT_EQ(paced_serial_init(&p, 0, 0, 10, 16, 8), KSYNC_EINVAL);
	KT_EXPECT_EQ(paced_serial_init(&p, UINT64_MAX - 5, 10, 10, 16, 8), KSYNC_EINVAL);
	KT_EXPECT_EQ(paced_serial_init(&p, 0, 10, 10, 16, 17), KSYNC_EINVAL);
	KT_ASSERT(paced_serial_init(&p, 100, 10, 10, 16, 8) == KSYNC_OK);
	KT_EXPECT_EQ(paced_arrival(&p, 0), 110);	/* on the wire at 100, in at 110 */
	KT_EXPECT_EQ(paced_arrival(&p, 9), 200);
}

/* ---- random drain schedules against an item-by-item reference ----------------------- */

static uint64_t rng_state;
static uint64_t rng(void)
{
	/* xorshift64*: fixed seed per run, reproducible */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* The reference keeps its own arrival clock (adding periods item by item) and a buffer
 * fill count: an arrival finds room (kept) or a full buffer (lost). */
struct ref {
	uint64_t i, t, n, per, bper;
	uint32_t burst, cap;
	uint64_t burst_start;
};

static void ref_drain(struct ref *r, uint64_t now, uint64_t *kept, uint64_t *lost,
		      uint64_t *first)
{
	uint64_t fill = 0;
	*kept = *lost = 0;
	*first = r->i;
	while (r->i < r->n && r->t <= now) {
		if (fill < r->cap) {
			fill++;
			(*kept)++;
		} else {
			(*lost)++;
		}
		r->i++;
		if (r->i % r->burst == 0) {
			r->burst_start += r->bper;
			r->t = r->burst_start;
		} else {
			r->t += r->per;
		}
	}
}

static void random_schedule(struct ktest_ctx *kt, uint64_t seed, uint32_t burst,
			    uint64_t per, uint64_t bper, uint32_t cap, uint32_t trig, uint64_t n)
{
	struct paced p;
	struct paced_params q = { .t0 = 12345, .n = n, .item_period = per, .burst_period = bper,
				  .burst = burst, .capacity = cap, .trigger = trig };
	struct ref r = { .i = 0, .t = 12345, .n = n, .per = per, .bper = bper, .burst = burst,
			 .cap = cap, .burst_start = 12345 };
	struct paced_check c;
	static uint64_t seqs[4096];
	uint64_t now = 0, mismatches = 0, drains = 0;
	uint64_t unit = bper / burst;		/* mean item time */

	KT_ASSERT(cap <= 4096);
	KT_ASSERT(paced_init(&p, &q) == KSYNC_OK);
	paced_check_init(&c);
	rng_state = seed;
	while (!paced_finished(&p)) {
		/* mostly on time (at the trigger, a little late), sometimes very late,
		 * sometimes early (an interrupt from another cause) */
		uint64_t x = rng() % 100;
		uint64_t trig_t = paced_next_trigger(&p, now);
		if (x < 60)
			now = trig_t + rng() % (2 * unit);
		else if (x < 80)
			now = trig_t + rng() % (40 * unit);
		else
			now = now + rng() % (3 * unit);
		struct paced_batch b;
		uint64_t rk, rl, rf;
		paced_drain(&p, now, seqs, &b);
		ref_drain(&r, now, &rk, &rl, &rf);
		drains++;
		if (b.kept != rk || b.lost != rl || b.first != rf)
			mismatches++;
		for (uint32_t k = 0; k < b.kept; k++)
			paced_check_seq(&c, seqs[k]);
	}
	paced_check_finish(&c, n);
	KT_EXPECT_EQ(mismatches, 0);
	KT_EXPECT_EQ(r.i, n);
	KT_EXPECT_EQ(c.seq_errors, 0);
	KT_EXPECT_EQ(c.gaps, p.lost);
	KT_EXPECT_EQ(c.received, p.kept);
	KT_EXPECT_EQ(p.kept + p.lost, n);
	KT_EXPECT(p.lost > 0);		/* the schedule includes very late drains */
	kt_diag(kt, "seed %lu burst %u cap %u trig %u: %lu drains, %lu kept, %lu lost",
		(unsigned long)seed, burst, cap, trig, (unsigned long)drains,
		(unsigned long)p.kept, (unsigned long)p.lost);
}

KTEST(paced_random_schedule_matches_reference)
{
	random_schedule(kt, 0x5eed0001, 1, 10, 10, 16, 8, 20000);	/* 16550, trigger 8 */
	random_schedule(kt, 0x5eed0002, 1, 7, 9, 16, 14, 20000);	/* idle gap between chars */
	random_schedule(kt, 0x5eed0003, 1, 10, 10, 16, 1, 5000);
	random_schedule(kt, 0x5eed0004, 8, 5, 100, 32, 1, 20000);	/* NIC ring, bursts */
	random_schedule(kt, 0x5eed0005, 3, 1, 3, 4, 4, 20000);	/* back-to-back bursts */
	random_schedule(kt, 0x5eed0006, 64, 3, 1000, 8, 2, 20000);	/* burst > ring */
}
