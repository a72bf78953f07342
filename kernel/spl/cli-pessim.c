/*
 * spl_cli_pessim.c - scheme cli-pessim (Small & Manley 1997, section 3.3; Linux 1.3.0):
 * cli/sti around critical sections and around whole handlers.
 *
 * Any level above IPL_NONE means IF off: splraise from IPL_NONE executes cli, the splx
 * that returns to IPL_NONE executes sti if IF was on at that raise (the cookie's
 * SPL_COOKIE_IF: a section entered where the caller had masked already leaves IF off).
 * Handlers run entirely with IF off at IPL_HIGH: nothing nests, a higher-priority
 * interrupt waits for a lower one's handler to finish (the data-loss case of section 6:
 * fast serial behind a long PIO handler). Nested critical sections: cookie = old level.
 * Priorities still order what is pending in the controllers when IF comes back on (the
 * 8259A's fixed priority). Replay: only soft interrupts are pending bits; they run, with
 * IF off like every handler, when the level returns to IPL_NONE. An interrupt that
 * arrives with the level above IPL_NONE is impossible; one is counted in `violations`.
 */
#include "kernel.h"
#include "spl.h"
#include "intr.h"

#define SPL_HANDLER_IF_ON 0
static unsigned handler_level(struct intr_source *src) { (void)src; return IPL_HIGH; }
static void hw_level(struct spl_cpu *c, unsigned level) { (void)c; (void)level; }
static uint32_t hw_get(struct spl_cpu *c) { (void)c; return 0; }
static void hw_set(struct spl_cpu *c, uint32_t h) { (void)c; (void)h; }
static uint32_t hw_of(unsigned level) { (void)level; return 0; }
static void replay_done(struct spl_cpu *c, struct intr_source *src) { (void)c; (void)src; }

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (s != IPL_NONE)
		c->violations++;
	spl_handle_now(c, src, s, tf);
}

/* splx to IPL_NONE with soft interrupts pending: IF is off here (level was above NONE);
 * on only if it was on at the section's raise (the cookie). */
void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	arch_irq_disable();
	spl_replay(c, SPL_LEVEL(s), hw_of(SPL_LEVEL(s)));
	if (SPL_LEVEL(s) == IPL_NONE && (s & SPL_COOKIE_IF))
		arch_irq_enable();
	spl_census_unmasked();	/* KSYNC_WINDOWS builds: what the section held was taken */
	sched_lowered();	/* a reschedule held by the section happens now */
}

void spl_scheme_attach(struct intr_source *src) { intr_attach_pic(src, arch_pic_mask_shadow() & ~(1u << src->irq)); }
void spl_scheme_detach(struct intr_source *src) { intr_detach_isa(src); }
