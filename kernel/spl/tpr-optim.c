/*
 * spl_tpr_optim.c - scheme tpr-optim (no system we know does this): a soft level like
 * spl-optim, but the fallback when an interrupt hits a section that holds it back is
 * on-chip: raise CR8 to the class of the current logical level instead of touching the
 * 8259A/IOAPIC, and replay by self-IPI when the level drops.
 *
 * Sources arrive on vectors of their level's class (as tpr-pessim). Deferral: EOI, record
 * the pending bit and the marker SPL_TPR_RAISED, raise CR8 to class(level) - from then on
 * the local APIC itself holds back everything the section holds back, so the section runs
 * undisturbed. Lowering (splx or a handler's exit) with the marker or a runnable bit set:
 * every runnable hardware bit is cleared and re-raised as a self-IPI of its vector (the
 * local APIC then delivers them by priority: highest first), CR8 goes back to 0, and
 * pending soft interrupts run highest first at IPL_SOFT.
 * Why splx needs no cmpxchg: once something is deferred CR8 holds everything at or below
 * the deferring level in hardware (spl.h).
 * Nested handlers: by level, IF on, as spl-optim. Nested critical sections: cookies nest.
 */
#include "kernel.h"
#include "spl.h"
#include "intr.h"

#define SPL_HANDLER_IF_ON 1
static unsigned handler_level(struct intr_source *src) { return src->level; }
static void hw_level(struct spl_cpu *c, unsigned level) { (void)c; (void)level; }
static uint32_t hw_get(struct spl_cpu *c) { (void)c; return 0; }
static void hw_set(struct spl_cpu *c, uint32_t h) { (void)c; (void)h; }
static uint32_t hw_of(unsigned level) { (void)level; return 0; }
static void replay_done(struct spl_cpu *c, struct intr_source *src) { (void)c; (void)src; }

#include "spl_common.h"

/* Re-raise the runnable hardware bits by self-IPI, drop CR8, run soft ones. IF off. */
static void tpr_lower(struct spl_cpu *c, unsigned lvl)
{
	uint32_t p = c->pending & SPL_ABOVE(lvl) & ~SPL_TPR_RAISED;
	bool sent = false;
	while (p) {
		unsigned bit = 31u - (unsigned)__builtin_clz(p);
		p &= ~(1u << bit);
		/* acquire: pairs with intr_establish's release store */
		struct intr_source *src = __atomic_load_n(&intr_by_bit[bit], __ATOMIC_ACQUIRE);
		if (!src || src->kind == INTR_SOFT)
			continue;
		c->pending &= ~(1u << bit);
		c->replayed++;
		arch_self_ipi(src->vector);
		sent = true;
	}
	c->ipl = lvl;
	if (c->pending & SPL_TPR_RAISED) {
		/* hardware bits still pending are held by the level in software */
		c->pending &= ~SPL_TPR_RAISED;
		arch_tpr_set(0);
	}
	if (c->pending & SPL_ABOVE(lvl)) {	/* soft interrupts, after the re-raised ones */
		if (sent)
			arch_irq_window();
		spl_replay(c, lvl, hw_of(lvl));
	}
}

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl, eff = spl_effective(c);
	if (src->level <= eff) {
		unsigned cls = spl_tpr_class[eff];
		if (arch_tpr_get() < cls)
			arch_tpr_set(cls);	/* before the EOI: priority never drops below */
		intr_src_eoi(src);
		intr_note_pending(c, src);
		c->pending |= SPL_TPR_RAISED;
		return;
	}
	c->ipl = src->level;
	intr_src_eoi(src);
	arch_irq_enable();
	intr_run(src);
	arch_irq_disable();
	if (c->pending & SPL_RUNNABLE(s))
		tpr_lower(c, s);
	else
		c->ipl = s;
	sched_intr_exit(tf, s);	/* preemption: the interrupted context may switch on return */
}

void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	irqkey_t k = arch_irq_save();
	tpr_lower(c, SPL_LEVEL(s));
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

/* crit_leave found something runnable at the current level. */
void spl_crit_slow(struct spl_cpu *c) { spl_lower_slow(c, c->ipl); }
