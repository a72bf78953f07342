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

/* Soft interrupts run at IPL_SOFT, which masks nothing in the controller; a handler's
 * level is written to the controller. */
static void hw_level(struct spl_cpu *c, unsigned level) { spl_mask_setlevel(c, level); }
static uint32_t hw_get(struct spl_cpu *c) { return c->hwlevel; }
static void hw_set(struct spl_cpu *c, uint32_t h) { spl_mask_setlevel(c, h); }
__attribute__((unused)) static uint32_t hw_of(unsigned level) { return level; }

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (src->level <= c->hwlevel) {	/* the mask should have held it */
		intr_held_arrival(c, src, true);
		return;
	}
	spl_handle_now(c, src, s, tf);
}

void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	arch_irq_disable();
	spl_replay(c, SPL_LEVEL(s), hw_get(c));	/* the handler mask stays as it is */
	if (s & SPL_COOKIE_IF)
		arch_irq_enable();
	spl_census_unmasked();	/* KSYNC_WINDOWS builds: what the section held was taken */
	sched_lowered();	/* a reschedule held by the section happens now */
}

void spl_scheme_attach(struct intr_source *src) { intr_attach_pic(src, intr_imr_at_level[kcpu_of(0)->spl.hwlevel]); }
void spl_scheme_detach(struct intr_source *src) { intr_detach_isa(src); }
