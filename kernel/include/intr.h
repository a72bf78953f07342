/*
 * intr.h - interrupt sources for the spl layer (spl.h): every source has a level, as in
 * NetBSD; the scheme decides how a source is held back while its level is blocked.
 *
 * Kinds of source:
 *   INTR_ISA    an ISA line (PIT IRQ0, RTC IRQ8, IDE IRQ14, ...): through the 8259A for
 *               the PIC schemes (spl-*, cli-*), through the IOAPIC at a vector of the
 *               level's priority class for the tpr-* schemes. Delivered to the BSP only.
 *   INTR_CLOCK  the calling CPU's LAPIC timer as a one-shot clock (one per CPU).
 *   INTR_SOFT   a software interrupt: softint_schedule() marks it pending on this CPU; it
 *               runs when the level drops below IPL_SOFT.
 * A handler is `void fn(void *arg)`: it does the device's work and returns. It never
 * EOIs and never touches the interrupt flag: the scheme's entry does that.
 *
 * Statistics per source (for the experiments): handler time and arrival-to-entry latency
 * (kstat.h), counted on the CPU that runs the handler; a clock source keeps statistics of
 * CPU 0 only and counts every CPU's interrupts in per_cpu[].
 */
#ifndef KSYNC_INTR_H
#define KSYNC_INTR_H

#include "spl.h"
#include "kstat.h"

enum intr_kind { INTR_ISA, INTR_CLOCK, INTR_SOFT };

#define INTR_MAX_CPUS MAX_CPUS

/* Where an ISA line reaches the CPU: through the IOAPIC, at a vector of its level's class,
 * in the tpr-* schemes (the line stays masked in the 8259A); through the 8259A (vector
 * 0x20 + irq, virtual wire) in the others. */
#define INTR_ISA_VIA_IOAPIC SPL_USES_TPR	/* the scheme header's 0/1 property (spl.h) */

struct intr_source {
	/* set by the caller before intr_establish, constant while established */
	const char *name;
	enum intr_kind kind;
	unsigned level;			/* IPL_SOFT .. IPL_CLOCK */
	unsigned irq;			/* INTR_ISA: the ISA line */
	void (*fn)(void *arg);
	void *arg;
	/* set by intr_establish */
	unsigned slot, bit, vector;
	bool established;
	/* device side: TSC time the next interrupt is due (0: unknown); written by whoever
	 * arms the device, read and cleared by the handler's CPU (single 8-byte accesses). */
	volatile uint64_t arrival;
	/* statistics: written by the handler's CPU only */
	volatile uint64_t count;	/* handler runs (all CPUs for ISA; CPU 0 for clock) */
	uint64_t per_cpu[INTR_MAX_CPUS];	/* handler runs per CPU */
	uint64_t deferred;		/* times this source was recorded pending (CPU 0) */
	bool stats_on;			/* collect handler/latency kstats */
	struct kstat handler;		/* TSC ticks in fn */
	struct kstat latency;		/* TSC ticks from arrival to handler entry */
};

/* Register / remove a source. Errors: KSYNC_EINVAL (level out of IPL_SOFT..IPL_CLOCK,
 * kind unknown, irq > 15), KSYNC_EBUSY (level has no free slot, or the irq is taken),
 * KSYNC_ENOENT (tpr-* scheme without an IOAPIC). Call from the BSP with the source's
 * device quiet; an INTR_CLOCK source serves every CPU that calls clock_start. */
int intr_establish(struct intr_source *src);
void intr_disestablish(struct intr_source *src);

/* Mark a soft interrupt pending on this CPU; it runs as soon as the level allows (at once
 * if the CPU is below IPL_SOFT and not in a handler). */
void softint_schedule(struct intr_source *src);

/* The clock: this CPU's LAPIC timer re-armed by the clock source's entry every
 * 1/hz seconds (100..100000 Hz, else KSYNC_EINVAL). clock_stop stops this CPU's clock. */
int clock_start(struct intr_source *clock, unsigned hz);
void clock_stop(void);
uint64_t clock_period_ticks(void);

/* Reset a source's statistics (count, per_cpu, deferred, kstats). */
void intr_stats_reset(struct intr_source *src);

/* ---- for the scheme files (kernel/spl/<scheme>.c) ---- */
extern struct intr_source *intr_by_bit[32];
/* Run the handler of src on this CPU with statistics; IF and level are the caller's. */
void intr_run(struct intr_source *src);
/* The scheme's interrupt entry (one per scheme file), installed for every source vector. */
void spl_intr_entry(struct trapframe *tf, void *src);
/* Controller operations on one source (8259A line or this CPU's LVT timer). */
void intr_src_mask(struct intr_source *src);
void intr_src_unmask(struct intr_source *src);
void intr_src_eoi(struct intr_source *src);
/* Called by intr_establish/disestablish so the scheme can route the line and update
 * its per-level masks. */
void spl_scheme_attach(struct intr_source *src);
void spl_scheme_detach(struct intr_source *src);
/* kernel/spl/intr_hw.c, shared by the scheme files (IF off): */
void intr_note_pending(struct spl_cpu *c, struct intr_source *src);	/* pending bit + counts */
void intr_held_arrival(struct spl_cpu *c, struct intr_source *src, bool clock_by_lvt);
void intr_attach_pic(struct intr_source *src, uint16_t imr);
void intr_detach_isa(struct intr_source *src);
/* Bits that set (u16) ISA lines of established sources at or below each level. */
extern uint16_t intr_imr_at_level[IPL_COUNT];
extern bool intr_clock_at_or_below[IPL_COUNT];	/* the clock's level <= level */
#define INTR_IMR_BASE 0xfffbu	/* lines without a source stay masked; 2 = cascade */

#endif
