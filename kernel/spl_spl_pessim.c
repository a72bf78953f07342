/*
 * spl_spl_pessim.c - scheme spl-pessim (Small & Manley 1997, section 3.1; BSD/OS 2.1):
 * every critical section and every handler writes the off-chip controller's mask.
 *
 * Hardware: the 8259A IMR (ISA lines, BSP only) and, for the clock, the LAPIC timer's
 * LVT mask bit. The mask for level L holds back every established source with level <= L
 * (intr_imr_at_level). splraise writes the mask before storing the level, splx stores the
 * level before writing the mask, so nothing the level holds back ever arrives (an arrival
 * anyway is counted in `violations` and deferred, never lost). Only the bytes of the IMR
 * that change are written; the LVT is written when the clock's bit changes. The 8259A
 * latches an edge that arrives on a masked line (IRR) and delivers it at unmask; the LAPIC
 * does not latch a masked timer expiry, so arch_clock_unmask re-raises one by self-IPI.
 *
 * Nested handlers: a handler runs with IF on at its source's level, its mask written at
 * entry (after the EOI the 8259A's own priority plays no part), so only higher levels
 * interrupt it; at exit the interrupted level's mask is written back.
 * Nested critical sections: splraise only raises, splx only lowers (cookie = old level).
 * Replay: nothing is deferred in normal operation; soft interrupts (and a violating
 * arrival) are pending bits run highest first when the level drops below theirs.
 * SMP: the 8259A is one device for the machine and delivers to the BSP; only the BSP
 * writes it. Other CPUs' levels mask only their own clock.
 */
#include "kernel.h"
#include "spl.h"
#include "intr.h"

#define SPL_HANDLER_IF_ON 1
static unsigned handler_level(struct intr_source *src) { return src->level; }
static void replay_done(struct spl_cpu *c, struct intr_source *src) { (void)c; (void)src; }

/* Caller has IF off: hwlevel, the IMR shadow, the LVT and the level must change together
 * with respect to this CPU's handlers, which write them too (a handler that ran in the
 * middle would restore its interrupted level's mask over ours). */
void spl_hw_setlevel(struct spl_cpu *c, unsigned level)
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

static void hw_level(struct spl_cpu *c, unsigned level) { spl_hw_setlevel(c, level); }
static uint32_t hw_get(struct spl_cpu *c) { return c->hwlevel; }
static void hw_set(struct spl_cpu *c, uint32_t h) { spl_hw_setlevel(c, h); }
static uint32_t hw_of(unsigned level) { return level; }

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	(void)tf;
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (src->level <= s) {
		if (src->kind == INTR_CLOCK) {
			/* the timer expired just before its LVT was masked and the local APIC
			 * had already accepted it (masking the LVT does not retract the IRR):
			 * not pending in software - the unmask re-raises the expired count */
			c->clock_late++;
			intr_src_eoi(src);
			return;
		}
		c->violations++;	/* the mask should have held it: count, defer */
		c->deferred++;
		src->deferred++;
		c->pending |= 1u << src->bit;
		intr_src_eoi(src);
		return;
	}
	spl_handle_now(c, src, s);
}

void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	irqkey_t k = arch_irq_save();
	spl_replay(c, SPL_LEVEL(s), hw_of(SPL_LEVEL(s)));
	arch_irq_restore(k);
}

void spl_scheme_attach(struct intr_source *src)
{
	if (src->kind == INTR_ISA) {
		arch_isa_route_pic(src->irq);
		arch_pic_write_mask(intr_imr_at_level[spl_cpus[0].hwlevel]);
	}
}

void spl_scheme_detach(struct intr_source *src)
{
	if (src->kind == INTR_ISA)
		arch_isa_unroute(src->irq);
}
