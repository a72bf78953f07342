/*
 * spl_common.h - the replay loop and the handler entry shared by the scheme files.
 * Included once by each kernel/spl/<scheme>.c after it defines:
 *
 *   static void hw_level(struct spl_cpu *c, unsigned level);
 *	make the hardware hold back what `level` holds back (no-op for soft-level schemes)
 *   static uint32_t hw_get(struct spl_cpu *c); static void hw_set(struct spl_cpu *c, uint32_t h);
 *	the hardware state as found / put back. A handler restores the state it found, not
 *	the state of the level it interrupted: it may have interrupted a raise between the
 *	hardware write and the level store (the paper's "saved_mask = cur_mask").
 *   static void replay_done(struct spl_cpu *c, struct intr_source *src);
 *	after a replayed handler ran (spl-optim: unmask the line its deferral masked)
 *   static unsigned handler_level(struct intr_source *src);
 *	level while src's handler runs (its own level; IPL_HIGH in the cli schemes)
 *   SPL_HANDLER_IF_ON   1 if handlers run with IF on (nesting of higher levels), else 0
 *
 * Replay order: highest pending bit first, i.e. highest level first (spl.h); each replayed
 * handler runs at its own level, so a higher interrupt arriving meanwhile nests, and a
 * lower one arriving meanwhile waits for the loop. The loop is never re-entered for the
 * same level: a nested handler's exit replays only what is above the level it returns to.
 */
#ifndef KSYNC_SPL_COMMON_H
#define KSYNC_SPL_COMMON_H

#include "intr.h"
#include "sched_hooks.h"

/* Run every pending bit that `lvl` lets run, then leave the CPU at lvl with the hardware
 * state `hw`. IF off in and out. */
static void spl_replay(struct spl_cpu *c, unsigned lvl, uint32_t hw)
{
	uint32_t p;
	while ((p = c->pending & SPL_RUNNABLE(lvl) & ~SPL_TPR_RAISED) != 0) {
		unsigned bit = 31u - (unsigned)__builtin_clz(p);
		c->pending &= ~(1u << bit);	/* IF off: no handler of this CPU interleaves */
		/* acquire: pairs with intr_establish's release store (NULL: removed) */
		struct intr_source *src = __atomic_load_n(&intr_by_bit[bit], __ATOMIC_ACQUIRE);
		if (!src)
			continue;
		c->replayed++;
		unsigned hl = handler_level(src);
		hw_level(c, hl);
		c->ipl = hl;
		if (SPL_HANDLER_IF_ON)
			arch_irq_enable();
		intr_run(src);
		if (SPL_HANDLER_IF_ON)
			arch_irq_disable();
		replay_done(c, src);
	}
	c->ipl = lvl;
	hw_set(c, hw);
}

/* Handle src now, from its interrupt entry (IF off): raise to its level, EOI, run, lower
 * back to the interrupted level `s` and replay what became runnable. */
__attribute__((unused)) static void spl_handle_now(struct spl_cpu *c, struct intr_source *src, unsigned s,
						   struct trapframe *tf)
{
	unsigned hl = handler_level(src);
	uint32_t saved = hw_get(c);
	hw_level(c, hl);		/* mask first, then the level (spl.h: raise order) */
	c->ipl = hl;
	intr_src_eoi(src);
	if (SPL_HANDLER_IF_ON)
		arch_irq_enable();
	intr_run(src);
	if (SPL_HANDLER_IF_ON)
		arch_irq_disable();
	if (c->pending & SPL_RUNNABLE(s))
		spl_replay(c, s, saved);
	else {
		c->ipl = s;
		hw_set(c, saved);
	}
	sched_intr_exit(tf, s);	/* preemption: the interrupted context may switch on return */
}

#endif
