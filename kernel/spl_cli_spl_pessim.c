/*
 * spl_cli_spl_pessim.c - scheme cli-spl-pessim, Small & Manley's proposal (1997, section
 * 7.1): cli/sti for critical sections; handlers run with IF on and the equal and lower
 * levels masked in the off-chip controller, so a higher-priority interrupt preempts a
 * lower-priority handler (a fast serial line is served during a long PIO handler).
 *
 * splraise: pushf; cli; the cookie keeps the old level and IF. splx: restore the level,
 * sti if the cookie had IF on. The level inside a critical section is logical only (IF off
 * holds everything). The controller mask (8259A IMR + the clock's LVT, as spl-pessim) is
 * written only at handler entry and exit: entry masks the levels <= the source's, exit
 * writes back the interrupted handler's mask (hwlevel tracks it).
 * Nested handlers: by level, as spl-pessim. Nested critical sections: cookies nest.
 * Replay: soft interrupts only (pending bits), highest first, when the level drops
 * below IPL_SOFT with IF coming back on.
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

/* Soft interrupts run at IPL_SOFT, which masks nothing in the controller; a handler's
 * level is written to the controller. */
static void hw_level(struct spl_cpu *c, unsigned level) { spl_hw_setlevel(c, level); }
static uint32_t hw_get(struct spl_cpu *c) { return c->hwlevel; }
static void hw_set(struct spl_cpu *c, uint32_t h) { spl_hw_setlevel(c, h); }
__attribute__((unused)) static uint32_t hw_of(unsigned level) { return level; }

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	(void)tf;
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (src->level <= c->hwlevel) {
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
	arch_irq_disable();
	spl_replay(c, SPL_LEVEL(s), hw_get(c));	/* the handler mask stays as it is */
	if (s & SPL_COOKIE_IF)
		arch_irq_enable();
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
