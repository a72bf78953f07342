/*
 * dev_serial_model.c - a paced 16550 receiver: characters arrive on a TSC schedule at
 * baud/bits per second into a 16-byte FIFO (bits per character: 10 = 8N1 by default;
 * 8 reproduces the paper's section 6.4 arithmetic, 115.2 kbit/s -> 14,400 characters/s,
 * so a 2 ms masked window loses 28 - 16 = 12); the receive interrupt is a real PIT (IRQ0)
 * interrupt, programmed for the moment the FIFO reaches its trigger level (1, 4, 8, 14)
 * or, for the last partial FIFO, the 16550's character timeout (4 character times).
 *
 * Small & Manley 1997 section 6.2 and 6.4: serial-115.2 interrupts every ~700 us, and
 * "the buffer only holds 16 characters ... characters could easily be lost on the serial
 * line while processing an IDE interrupt". This model makes that loss countable: when
 * the handler runs late (interrupts masked, a long handler in front of it), characters
 * are lost exactly as in a 16550 (paced.h), and the "driver" proves it by sequence
 * numbers: gaps in what it received == what the model says it lost.
 *
 * Real: the interrupt (PIT channel 0 through the interrupt controller), its latency, and
 * the per-character I/O cost (one device register read per character,
 * arch_dev_status_read: on x86 an `inb` of COM1's line status register, port 0x3fd - the
 * console's real UART, whose LSR read has no side effect that matters here). Modelled: the UART's arrival schedule and FIFO (the characters' values
 * are their sequence numbers).
 *
 * The PIT runs as a rate generator (mode 2) loaded with the time to the next trigger:
 * if that interrupt is not taken (masked at an IOAPIC, which drops edges), it repeats
 * every trigger interval until the handler reloads it - the way a 16550 keeps its
 * interrupt line asserted until the FIFO is read.
 *
 * Shared state: `owner` (the running model) is claimed by CAS in serial_model_start and
 * released by serial_model_stop. A model's parameters are written before the PIT is
 * armed (the PIT write is the publication: the handler can only run after it); its
 * state and statistics are written only by serial_model_intr on IRQ0's CPU, never
 * nested; `done` is stored last with release order and read with acquire. `finish_req`
 * (serial_model_finish: end the stream early) is stored by any CPU with release order and
 * read by the handler with acquire.
 */
#include "kernel.h"
#include "dev.h"


static struct serial_model *owner;

/* Program the PIT for `when` (the next trigger) and remember when the FIFO would
 * overflow; a programmed time past that deadline (while there was time to meet it)
 * would be the driver's own fault, and is counted. */
static void arm(struct serial_model *m, uint64_t now, uint64_t when)
{
	uint64_t dt = when > now ? when - now : 0;
	uint64_t full = m->p.next + SERIAL_FIFO;
	m->armed_for = when > now ? when : now;
	m->deadline = full < m->nchars ? paced_arrival(&m->p, full) : PACED_NEVER;
	uint32_t ticks = tsc_to_pit_ticks(dt, 2, 65535);
	uint64_t fire = now + pit_ticks_to_tsc(ticks);
	if (fire >= m->deadline && now + pit_ticks_to_tsc(2) < m->deadline)
		m->arm_errors++;
	pit_rate_restart(ticks);
}

int serial_model_start(struct serial_model *m, unsigned baud, unsigned trigger, uint64_t nchars)
{
	return serial_model_start_bits(m, baud, SERIAL_BITS_8N1, trigger, nchars);
}

int serial_model_start_bits(struct serial_model *m, unsigned baud, unsigned bits,
			    unsigned trigger, uint64_t nchars)
{
	if (!m) {
		kprintf("serial_model: NULL model\n");
		return KSYNC_EINVAL;
	}
	if (baud < 9600 || baud > 921600) {
		kprintf("serial_model: baud %u outside 9600..921600\n", baud);
		return KSYNC_EINVAL;
	}
	if (bits < SERIAL_BITS_MIN || bits > SERIAL_BITS_MAX) {
		kprintf("serial_model: %u bits per character outside %u..%u\n", bits,
			SERIAL_BITS_MIN, SERIAL_BITS_MAX);
		return KSYNC_EINVAL;
	}
	if (trigger != 1 && trigger != 4 && trigger != 8 && trigger != 14) {
		kprintf("serial_model: trigger %u is not a 16550 level (1, 4, 8, 14)\n", trigger);
		return KSYNC_EINVAL;
	}
	if (nchars == 0) {
		kprintf("serial_model: no characters to send\n");
		return KSYNC_EINVAL;
	}
	/* the PIT must be able to pace one character */
	uint64_t char_pit = paced_char_ticks(PIT_HZ, baud, bits);
	if (char_pit < 2) {
		kprintf("serial_model: a character at %u baud is %lu PIT ticks, under 2\n", baud,
			char_pit);
		return KSYNC_EINVAL;
	}
	uint64_t tsc_hz = arch_tsc_hz();
	uint64_t char_tsc = paced_char_ticks(tsc_hz, baud, bits);
	if (char_tsc == 0) {
		kprintf("serial_model: TSC too slow for %u baud\n", baud);
		return KSYNC_EINVAL;
	}
	struct serial_model *none = NULL;
	/* acquire: the previous owner's handler work happens-before our reuse of the PIT */
	if (!__atomic_compare_exchange_n(&owner, &none, m, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		kprintf("serial_model: another serial model runs\n");
		return KSYNC_EBUSY;
	}
	/* a handler registered once may see this model between runs: keep it out first */
	__atomic_store_n(&m->running, false, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memset(m, 0, sizeof *m);
	m->baud = baud;
	m->bits = bits;
	m->trigger = trigger;
	m->nchars = nchars;
	m->char_tsc = char_tsc;
	uint64_t now = arch_cycles();
	/* the first character is on the wire now: it arrives at now + char_tsc */
	if (paced_serial_init(&m->p, now, char_tsc, nchars, SERIAL_FIFO, trigger) != KSYNC_OK) {
		kprintf("serial_model: %lu characters at %u baud overflow the TSC schedule\n",
			nchars, baud);
		__atomic_store_n(&owner, (struct serial_model *)NULL, __ATOMIC_RELEASE);
		return KSYNC_EINVAL;
	}
	paced_check_init(&m->chk);
	/* release: the set-up above is visible to the handler that sees running */
	__atomic_store_n(&m->running, true, __ATOMIC_RELEASE);
	arm(m, arch_cycles(), paced_next_trigger(&m->p, now));
	return KSYNC_OK;
}

void serial_model_intr(void *arg)
{
	struct serial_model *m = arg;
	uint64_t t_in = arch_cycles();
	if (!__atomic_load_n(&m->running, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&m->done, __ATOMIC_RELAXED)) {
		m->strays++;
		return;
	}
	m->irqs++;
	uint64_t late = t_in > m->armed_for ? t_in - m->armed_for : 0;
	if (late > m->latency_tsc_max)
		m->latency_tsc_max = late;

	struct paced_batch b;
	paced_drain(&m->p, t_in, NULL, &b);
	for (uint32_t k = 0; k < b.kept; k++) {
		(void)arch_dev_status_read();	/* the per-character device read */
		paced_check_seq(&m->chk, b.first + k);
	}
	if (b.lost)
		m->lossy_irqs++;
	/* acquire: pairs with serial_model_finish's release (nothing else is passed) */
	bool fin = paced_finished(&m->p) || __atomic_load_n(&m->finish_req, __ATOMIC_ACQUIRE);
	if (fin) {
		pit_stop();
		/* the stream ends at p.next: every character before it was read or lost
		 * (all of them, m->nchars, at a natural end) */
		paced_check_finish(&m->chk, m->p.next);
	} else {
		uint64_t now = arch_cycles();
		arm(m, now, paced_next_trigger(&m->p, now));
	}
	m->chars = m->chk.received;
	m->lost = m->p.lost;
	m->gaps_seen = m->chk.gaps;
	m->seq_errors = m->chk.seq_errors;
	uint64_t d = arch_cycles() - t_in;
	m->handler_tsc_total += d;
	if (d > m->handler_tsc_max)
		m->handler_tsc_max = d;
	if (fin)	/* release: every statistic above is final for a reader that sees done */
		__atomic_store_n(&m->done, true, __ATOMIC_RELEASE);
}

void serial_model_finish(struct serial_model *m)
{
	/* release: nothing to publish but the request itself (see the handler) */
	__atomic_store_n(&m->finish_req, true, __ATOMIC_RELEASE);
}

bool serial_model_done(const struct serial_model *m)
{
	return __atomic_load_n(&m->done, __ATOMIC_ACQUIRE);
}

/* Call with IRQ0 masked or after done (the handler must not be running). */
void serial_model_stop(struct serial_model *m)
{
	pit_stop();
	__atomic_store_n(&m->running, false, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
		__atomic_store_n(&m->done, true, __ATOMIC_RELEASE);
	struct serial_model *me = m;
	/* release: our last writes to the model happen-before the next owner's start */
	__atomic_compare_exchange_n(&owner, &me, (struct serial_model *)NULL, false,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}
