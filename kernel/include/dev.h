/*
 * dev.h - the interrupt sources of the interrupt-scheme experiments (issue #4, Small &
 * Manley 1997 section 6 "Correctness": long PIO disk handlers vs. fast serial lines and
 * network bursts), scheme-agnostic.
 *
 * What is real and what is modelled:
 *   - PIT channel 0, the CMOS RTC periodic interrupt and the ATA/IDE PIO disk are real
 *     devices (QEMU's 8254, MC146818 and PIIX IDE; real hardware alike). The ATA handler
 *     really moves every sector with `rep insw` - the paper's long PIO handler (6.1).
 *   - The serial line and the NIC are models (kernel/dev/serial_model.c,
 *     kernel/dev/net_model.c over common/paced.h): their data arrive on a TSC
 *     schedule into a modelled FIFO / ring; their interrupts are real (PIT on IRQ0 for
 *     the UART, RTC on IRQ8 for the NIC's moderation timer), so a handler that runs late
 *     because interrupts were masked loses exactly what the device would have lost.
 *
 * Handlers (`<device>_intr(void *arg)`) do the device work and return. They never EOI the
 * interrupt controller and never enable interrupts; the caller (the scheme layer's
 * intr_establish, or a test's raw wrapper) does the EOI. The short port sequences inside
 * (PIT reload, CMOS index/data) are protected by a ticket lock taken with IRQs saved and
 * restored as found (spinlock.h), so they are safe from nested handlers and other CPUs.
 * A handler must not be nested inside itself (every scheme masks a source's own level
 * while its handler runs); different devices' handlers may nest.
 *
 * Interrupt-controller note for the scheme layer: QEMU's IOAPIC drops an edge that
 * arrives while its pin is masked (as the 82093AA specifies); the 8259A latches it in
 * its IRR, and IF=0 or a raised CR8 leave it pending in the LAPIC. Two sources re-assert
 * until served, so masking them at the IOAPIC only delays them: the RTC fires every
 * period, and the serial model runs the PIT as a rate generator (mode 2) that repeats
 * until the handler reloads it. The ATA drive does not: it raises INTRQ once per block
 * and holds it until its status register is read, so an edge dropped by a masked IOAPIC
 * pin is gone for good. A scheme that masks IRQ14 at the IOAPIC must, after unmasking,
 * call ata_pending() and run the handler itself if it says so (test_dev.c shows it).
 */
#ifndef KSYNC_DEV_H
#define KSYNC_DEV_H

#include <stdint.h>
#include <stdbool.h>
#include <ksync/errors.h>
#include "paced.h"
#include "arch_dev.h"	/* the platform devices (part of the port contract) */

/* The PIT, the RTC and the ATA disk are the port's (kernel/include/arch_dev.h). */


/* ---- serial model: a 16550 receiver fed on a TSC schedule (kernel/dev/serial_model.c)
 * Characters of `bits` bits each (default 10 = 8N1: start, 8 data, stop; the paper's
 * section 6.4 arithmetic counts 8) arrive at baud/bits per second into a 16-byte FIFO;
 * the interrupt is the PIT (IRQ0) programmed for the FIFO's trigger time (or the
 * character timeout for the last partial FIFO). One model runs at a time. */
#define SERIAL_FIFO 16
#define SERIAL_BITS_8N1 10		/* the default: start + 8 data + stop */
#define SERIAL_BITS_MIN 7		/* 5 data bits, no parity, 1 stop */
#define SERIAL_BITS_MAX 12		/* 8 data bits, parity, 2 stop */

struct serial_model {
	/* parameters: written by serial_model_start before the PIT is armed, read-only after */
	unsigned baud, trigger;
	unsigned bits;			/* bits per character on the wire */
	uint64_t nchars;
	uint64_t char_tsc;		/* TSC ticks per character */
	/* model state: written only by serial_model_intr (IRQ0's CPU) */
	struct paced p;
	struct paced_check chk;		/* what the "driver" saw: sequence numbers of chars read */
	uint64_t armed_for;		/* TSC time the PIT was last armed for */
	uint64_t deadline;		/* TSC time the FIFO overflows unless drained (or NEVER) */
	/* statistics: written only by serial_model_intr; others read them after done */
	volatile uint64_t chars;	/* characters read */
	volatile uint64_t lost;		/* overrun characters (the model's count) */
	volatile uint64_t irqs;		/* handler calls while running */
	volatile uint64_t gaps_seen;	/* holes in the received sequence (the driver's count) */
	volatile uint64_t seq_errors;	/* received sequence numbers not increasing */
	volatile uint64_t strays;	/* handler calls after done */
	uint64_t lossy_irqs;		/* drains that found the FIFO overrun */
	uint64_t arm_errors;		/* PIT programmed to fire after the deadline: a driver
					   bug, as opposed to an interrupt delivered late */
	uint64_t handler_tsc_total, handler_tsc_max;
	uint64_t latency_tsc_max;	/* handler entry - armed_for, max */
	volatile bool done;		/* set last (release): all of the above are final */
	volatile bool running;		/* set by start once all is set up (release), cleared
					   first by start and by stop: the handler ignores
					   interrupts that come while it is clear */
	volatile bool finish_req;	/* serial_model_finish's (release), the handler reads
					   it (acquire): end the stream where it has got to */
};
/* baud 9600..921600, trigger 1/4/8/14, nchars >= 1; KSYNC_EINVAL with a kprintf
 * reason otherwise (also when a character time is under 2 PIT ticks); KSYNC_EBUSY
 * while another serial model runs. Arms the PIT; the caller routes IRQ0 to a handler
 * that calls serial_model_intr(m) and unmasks it. */
int serial_model_start(struct serial_model *m, unsigned baud, unsigned trigger, uint64_t nchars);
/* The same with `bits` per character, SERIAL_BITS_MIN..SERIAL_BITS_MAX (KSYNC_EINVAL with
 * a kprintf reason otherwise); serial_model_start is this with SERIAL_BITS_8N1. */
int serial_model_start_bits(struct serial_model *m, unsigned baud, unsigned bits,
			    unsigned trigger, uint64_t nchars);
/* The handler: drain (one real `inb` of COM1's LSR, port 0x3fd, per kept character,
 * the per-character I/O cost), check sequence numbers, re-arm the PIT for the next
 * trigger; at the end stop the PIT and set done. */
void serial_model_intr(void *m);
bool serial_model_done(const struct serial_model *m);
/* Ask the running model to end its stream early: the handler's next run drains what has
 * arrived and ends there (the characters not yet sent never are), so that after done the
 * driver's gaps equal the model's lost exactly, as at a stream's natural end. The PIT
 * repeats until then, so done follows within one trigger interval unless IRQ0 is held. */
void serial_model_finish(struct serial_model *m);
void serial_model_stop(struct serial_model *m);	/* stop the PIT, release the model */

/* ---- network model: NIC receive ring fed in bursts (kernel/dev/net_model.c) --------
 * `burst` packets of `bytes` bytes every `burst_period_us`, back to back at a modelled
 * 1 Gbit/s inside a burst, into a ring of `ring` slots; interrupt source: the RTC
 * periodic interrupt at irq_hz (the NIC's interrupt-moderation timer). The handler
 * drains every arrived packet (memcpy from its ring slot into a host buffer, sequence
 * number checked in the first 8 bytes); overflow drops are counted by paced.h. */
#define NET_MAX_BYTES 9000
#define NET_MAX_RING 4096
#define NET_LINK_BPS 1000000000ull	/* modelled link rate inside a burst */
#define NET_WIRE_OVERHEAD 20		/* preamble + inter-frame gap, bytes */

struct net_model {
	/* parameters: written by net_model_start before the RTC is started, read-only after */
	unsigned burst, bytes, burst_period_us, ring, irq_hz;
	uint64_t npackets;
	uint8_t *slots;			/* ring * bytes: the NIC's receive buffers */
	uint8_t *host;			/* ring * bytes: where the driver copies packets to */
	/* model state: written only by net_model_intr (IRQ8's CPU) */
	struct paced p;
	struct paced_check chk;
	uint64_t ring_head;		/* packets placed in the ring so far (slot = head % ring) */
	/* statistics: written only by net_model_intr; others read them after done */
	volatile uint64_t packets;	/* packets copied out */
	volatile uint64_t dropped;	/* ring overflows (the model's count) */
	volatile uint64_t irqs;
	volatile uint64_t gaps_seen;	/* holes in the sequence numbers read from the copies */
	volatile uint64_t seq_errors;
	volatile uint64_t data_errors;	/* copied payload differs from the pattern */
	volatile uint64_t strays;
	uint64_t lossy_irqs;
	uint64_t handler_tsc_total, handler_tsc_max;
	uint64_t last_in;		/* TSC at the last handler entry */
	uint64_t gap_tsc_max;		/* longest time between two drains */
	volatile bool done;		/* set last (release) */
	volatile bool running;		/* as in struct serial_model */
};
/* KSYNC_EINVAL with a kprintf reason for impossible parameters: burst 0, bytes < 8 or
 * > NET_MAX_BYTES, ring 0 or > NET_MAX_RING, irq_hz not a power of two 2..8192,
 * burst_period_us 0 or too short for the burst at NET_LINK_BPS, npackets 0; KSYNC_ENOMEM if the buffers cannot be allocated; KSYNC_EBUSY while
 * another net model runs. Starts the RTC; the caller routes IRQ8 to a handler that
 * calls net_model_intr(m) and unmasks it. */
int net_model_start(struct net_model *m, unsigned burst, unsigned bytes, unsigned burst_period_us,
		    unsigned ring, unsigned irq_hz, uint64_t npackets);
/* The handler: rtc_ack, drain, copy and check each packet; at the end stop the RTC. */
void net_model_intr(void *m);
bool net_model_done(const struct net_model *m);
void net_model_stop(struct net_model *m);	/* stop the RTC, free the buffers, release */

#endif /* KSYNC_DEV_H */
