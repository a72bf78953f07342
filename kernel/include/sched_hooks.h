/*
 * sched_hooks.h - the two places where the interrupt layer (kernel/spl/) hands the CPU to
 * the scheduler (kernel/sched/), for issue 10 item 2 "preemption honours the interrupt
 * scheme": a reschedule asked for inside a critical section or at a raised level happens
 * when the section ends, never inside it.
 *
 *   sched_intr_exit(tf, s)  end of a handler that ran at once (every scheme's entry):
 *                           s = the level the interrupted code ran at. If a switch is
 *                           wanted and the interrupted code was preemptible (level
 *                           IPL_NONE, no crit_enter section, IRQs on, not inside another
 *                           handler), the port makes it call sched_preempt() before it
 *                           resumes (arch_frame_call).
 *   sched_lowered()         end of every scheme's spl_lower_slow (splx/crit_leave's slow
 *                           path, which the reschedule soft interrupt forces): if the
 *                           level is now IPL_NONE outside any section and handler, switch.
 * Both cost one load of this CPU's kcpu.resched when no switch is wanted.
 */
#ifndef KSYNC_SCHED_HOOKS_H
#define KSYNC_SCHED_HOOKS_H

#include "spl.h"	/* struct kcpu (after struct spl_cpu) */

struct trapframe;
void sched_intr_exit_slow(struct trapframe *tf, unsigned s);
void sched_lowered_slow(void);

static inline void sched_intr_exit(struct trapframe *tf, unsigned s)
{
	if (__builtin_expect(kcpu_this()->resched != 0, 0))
		sched_intr_exit_slow(tf, s);
}

static inline void sched_lowered(void)
{
	if (__builtin_expect(kcpu_this()->resched != 0, 0))
		sched_lowered_slow();
}

#endif
