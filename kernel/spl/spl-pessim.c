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

static void hw_level(struct spl_cpu *c, unsigned level) { spl_mask_setlevel(c, level); }
static uint32_t hw_get(struct spl_cpu *c) { return c->hwlevel; }
static void hw_set(struct spl_cpu *c, uint32_t h) { spl_mask_setlevel(c, h); }
static uint32_t hw_of(unsigned level) { return level; }

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (src->level <= s) {	/* the mask should have held it */
		intr_held_arrival(c, src, true);
		return;
	}
	spl_handle_now(c, src, s, tf);
}

void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	irqkey_t k = arch_irq_save();
	spl_replay(c, SPL_LEVEL(s), hw_of(SPL_LEVEL(s)));
	arch_irq_restore(k);
	spl_census_unmasked();	/* KSYNC_WINDOWS builds: what the section held was taken */
	sched_lowered();	/* a reschedule held by the section happens now */
}

void spl_scheme_attach(struct intr_source *src) { intr_attach_pic(src, intr_imr_at_level[kcpu_of(0)->spl.hwlevel]); }
void spl_scheme_detach(struct intr_source *src) { intr_detach_isa(src); }
