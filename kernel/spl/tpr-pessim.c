/*
 * spl_tpr_pessim.c - scheme tpr-pessim (not in the paper; illumos pcplusmp and Windows
 * x64 use the task priority this way): every level is written to CR8, the local APIC's
 * task-priority class. Prioritised masking like spl-pessim, at on-chip cost.
 *
 * Each level owns a priority class (spl_tpr_class: soft 4, net 5, bio 6, tty 7, clock 8,
 * high 15) and its sources arrive on vectors of that class: ISA lines through the IOAPIC,
 * the clock from the LAPIC timer. CR8 = class(L) holds back every vector of class <= L;
 * the local APIC keeps a held interrupt in its IRR and delivers it when CR8 drops, so
 * nothing is lost and nothing is deferred in software.
 * Nested handlers: a handler runs with IF on at its level (CR8 raised to its class before
 * the EOI, so the processor priority never drops below it); higher classes nest.
 * Nested critical sections: cookie = old level. Replay: soft interrupts only, highest
 * first, when the level drops below IPL_SOFT, after the hardware ones CR8 held (an IF
 * window lets the local APIC deliver those first).
 */
#include "kernel.h"
#include "spl.h"
#include "intr.h"

#define SPL_HANDLER_IF_ON 1
static unsigned handler_level(struct intr_source *src) { return src->level; }
static void hw_level(struct spl_cpu *c, unsigned level) { (void)c; arch_tpr_set(spl_tpr_class[level]); }
static uint32_t hw_get(struct spl_cpu *c) { (void)c; return arch_tpr_get(); }
static void hw_set(struct spl_cpu *c, uint32_t h) { (void)c; arch_tpr_set(h); }
static uint32_t hw_of(unsigned level) { return spl_tpr_class[level]; }
static void replay_done(struct spl_cpu *c, struct intr_source *src) { (void)c; (void)src; }

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (src->level <= s) {		/* CR8 should have held it */
		intr_held_arrival(c, src, false);
		return;
	}
	spl_handle_now(c, src, s, tf);
}

/* Soft interrupts pending at a splx: let the local APIC deliver what CR8 held first
 * (higher levels), then run the soft ones. */
void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	irqkey_t k = arch_irq_save();
	hw_level(c, SPL_LEVEL(s));
	if (arch_irqkey_on(k))
		arch_irq_window();
	spl_replay(c, SPL_LEVEL(s), hw_of(SPL_LEVEL(s)));
	arch_irq_restore(k);
	spl_census_unmasked();	/* KSYNC_WINDOWS builds: what the section held was taken */
	sched_lowered();	/* a reschedule held by the section happens now */
}

void spl_scheme_attach(struct intr_source *src)
{
	if (src->kind == INTR_ISA)
		arch_isa_route_apic(src->irq, src->vector);
}
void spl_scheme_detach(struct intr_source *src) { intr_detach_isa(src); }
