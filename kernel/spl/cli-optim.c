/*
 * spl_cli_optim.c - scheme cli-optim (Small & Manley 1997, section 3.4).
 *
 * A per-CPU flag: the level, one store; any level above IPL_NONE is "in a critical
 * section" and holds back every source. An interrupt that arrives in a critical section
 * is EOIed, recorded as a pending bit, and the section resumes with IF off (the
 * interrupted frame's IF is cleared: the on-chip fallback, the paper's "interrupts are
 * only then disabled"), so nothing else arrives until the section ends. The splx that
 * returns to IPL_NONE finds the pending bits and runs them highest first with IF off (the
 * paper: "handled at crit_leave with interrupts disabled"), then turns IF back on.
 *
 * Replay order: the queued interrupts highest first; but only the first arrival in a
 * section is queued (IF is off after it), so whatever arrives later waits in the
 * controllers and is delivered in their order when IF comes back on - replay is not
 * highest-first overall (spl.h SPL_REPLAY_ORDERED 0; the tests show e.g. pit,soft,rtc,clock).
 * Nested handlers: none; a handler runs at IPL_HIGH with IF off, like cli-pessim.
 * Nested critical sections: cookie = old level; only the return to IPL_NONE replays.
 * Why splx needs no cmpxchg here: see spl.h (once something is pending IF is off).
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

/* struct kcpu's if_cleared: set when a deferral cleared IF in the interrupted section;
 * the replaying splx turns IF back on. Per CPU, this CPU only. */

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (spl_effective(c) != IPL_NONE) {
		intr_src_eoi(src);
		intr_note_pending(c, src);
		arch_frame_irqs_off(tf);
		kcpu_this()->if_cleared = true;
		return;
	}
	spl_handle_now(c, src, s, tf);
}

void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	irqkey_t k = arch_irq_save();
	spl_replay(c, SPL_LEVEL(s), hw_of(SPL_LEVEL(s)));
	bool *cleared = &kcpu_this()->if_cleared;
	if (*cleared && SPL_LEVEL(s) == IPL_NONE) {
		*cleared = false;
		arch_irq_enable();	/* IF was on when the deferred interrupt arrived */
	} else {
		arch_irq_restore(k);
	}
	spl_census_unmasked();	/* KSYNC_WINDOWS builds: what the section held was taken */
	sched_lowered();	/* a reschedule held by the section happens now */
}

void spl_scheme_attach(struct intr_source *src) { intr_attach_pic(src, arch_pic_mask_shadow() & ~(1u << src->irq)); }
void spl_scheme_detach(struct intr_source *src) { intr_detach_isa(src); }

/* crit_leave found something runnable at the current level. */
void spl_crit_slow(struct spl_cpu *c) { spl_lower_slow(c, c->ipl); }
