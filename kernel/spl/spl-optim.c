/*
 * spl_spl_optim.c - scheme spl-optim (Small & Manley 1997, section 3.2; Stodolsky et al.
 * 1993; NetBSD 1.2 on x86, whose amd64 spl.S is the model for the lowering step).
 *
 * A per-CPU logical level only: splraise is one store. An interrupt whose level is at or
 * below the logical level is deferred: its source is masked in the controller (8259A IMR
 * bit; the clock's LVT), EOIed, and recorded as a pending bit; the section resumes at
 * once. splx lowers the level with one unlocked cmpxchg on the word that holds both the
 * level and the pending bits, only if nothing pending may run at the new level; else the
 * slow path replays the pending interrupts highest first, each through intr_run at its own
 * level with IF on (so higher ones nest), and unmasks each source after its handler ran.
 *
 * Nested handlers: a handler runs with IF on at its level; an interrupt at or below that
 * level is deferred exactly as in a critical section, one above it nests. At exit the
 * handler lowers to the interrupted level and replays what became runnable.
 * Nested critical sections: cookie = old level; only the outermost lowering can replay.
 * SMP: ISA lines reach the BSP only; deferral masks are written there. The clock is per CPU.
 *
 * Deviation from the paper's section 3.2, which on a deferral sets "the hardware interrupt
 * mask ... to be the logical mask" (every source at or below the logical level masked in
 * the controller): here only the source that arrived is masked (NetBSD's way), and each
 * other source is masked only if it, too, arrives inside. So where the paper's first
 * deferral holds every lower source off in hardware, here each further source that
 * arrives inside the same section costs its own interrupt entry, mask write and EOI.
 * docs/paper-map.md says so in the spl-optim row.
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
static void replay_done(struct spl_cpu *c, struct intr_source *src)
{
	(void)c;
	intr_src_unmask(src);		/* the deferral masked it */
}

#include "spl_common.h"

void spl_intr_entry(struct trapframe *tf, void *arg)
{
	spl_census_arrival();	/* KSYNC_WINDOWS builds (spl.h): inside a section? */
	struct intr_source *src = arg;
	struct spl_cpu *c = spl_self();
	unsigned s = c->ipl;
	if (src->level <= spl_effective(c)) {	/* optimistic case lost: fall back to the controller */
		intr_src_mask(src);
		intr_src_eoi(src);
		intr_note_pending(c, src);	/* IF off: one CPU, no interleaving */
		return;
	}
	spl_handle_now(c, src, s, tf);
}

void spl_lower_slow(struct spl_cpu *c, spl_t s)
{
	irqkey_t k = arch_irq_save();
	spl_replay(c, SPL_LEVEL(s), hw_of(SPL_LEVEL(s)));
	arch_irq_restore(k);
	/* The tracker's soft windows (KSYNC_WINDOWS builds) end here, the replay inside
	 * them: the switch sched_lowered may make is the woken thread's path, not part of
	 * the window that held the clock (splx's and crit_leave's closes are then no-ops). */
	if (c->ipl < IPL_CLOCK)
		arch_win_soft_close(ARCH_WIN_LEVEL);
	if (!c->crit_flag)
		arch_win_soft_close(ARCH_WIN_CRIT);
	spl_census_unmasked();	/* KSYNC_WINDOWS builds: what the section held was taken */
	sched_lowered();	/* a reschedule held by the section happens now */
}

void spl_scheme_attach(struct intr_source *src) { intr_attach_pic(src, arch_pic_mask_shadow() & ~(1u << src->irq)); }
void spl_scheme_detach(struct intr_source *src) { intr_detach_isa(src); }

/* crit_leave found something runnable at the current level. */
void spl_crit_slow(struct spl_cpu *c) { spl_lower_slow(c, c->ipl); }
