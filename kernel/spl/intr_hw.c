/*
 * intr_hw.c - controller operations the scheme files share (kernel/spl/<scheme>.c): the
 * off-chip mask written by level (spl-pessim, cli-spl-pessim), the bookkeeping of an
 * interrupt recorded pending, the handling of an arrival the hardware should have held,
 * and routing an ISA source through the 8259A. Small & Manley 1997 section 3.1 (the
 * off-chip mask) and 7.1.
 *
 * Every function here runs on the CPU whose state it changes, with IF off (interrupt
 * entries, or a raise/lower that turned IF off around the update): struct spl_cpu, the
 * IMR shadow (BSP only) and the LVT change together with respect to this CPU's handlers.
 */
#include "kernel.h"
#include "spl.h"
#include "intr.h"

/* The 8259A IMR for `level` (BSP only: the 8259A delivers to the BSP) and this CPU's
 * clock LVT mask when the clock's level crosses; hwlevel remembers what is written. */
void spl_mask_setlevel(struct spl_cpu *c, unsigned level)
{
	unsigned old = c->hwlevel;
	if (old == level)
		return;
	if (arch_cpu_id() == 0)
		arch_pic_write_mask(intr_imr_at_level[level]);
	bool was = intr_clock_at_or_below[old], now = intr_clock_at_or_below[level];
	c->hwlevel = level;
	if (now && !was)
		arch_clock_mask();
	else if (was && !now && arch_clock_unmask())
		c->clock_recovered++;
}

void intr_note_pending(struct spl_cpu *c, struct intr_source *src)
{
	c->pending |= 1u << src->bit;
	c->deferred++;
	/* a clock source is deferred on every CPU that runs it: an atomic add (slow path) */
	__atomic_fetch_add(&src->deferred, 1, __ATOMIC_RELAXED);
}

/* An arrival the hardware should have held. The clock under an LVT mask is expected now
 * and then: it expired just before the mask and the local APIC had accepted it (masking
 * the LVT does not retract the IRR); it is not made pending - the unmask re-raises the
 * expired count. Anything else is a violation: counted (the tests assert none) and
 * deferred, never lost. */
void intr_held_arrival(struct spl_cpu *c, struct intr_source *src, bool clock_by_lvt)
{
	if (clock_by_lvt && src->kind == INTR_CLOCK)
		c->clock_late++;
	else {
		c->violations++;
		intr_note_pending(c, src);
	}
	intr_src_eoi(src);
}

/* Route an ISA source through the 8259A and write the IMR the BSP's state asks for
 * (`imr`); 8259A schemes only. */
void intr_attach_pic(struct intr_source *src, uint16_t imr)
{
	if (src->kind != INTR_ISA)
		return;
	arch_isa_route_pic(src->irq);
	arch_pic_write_mask(imr);
}

void intr_detach_isa(struct intr_source *src)
{
	if (src->kind == INTR_ISA)
		arch_isa_unroute(src->irq);
}
