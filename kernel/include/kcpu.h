/*
 * kcpu.h - the kernel's one per-CPU structure (issue 9 item 2): every field that belongs
 * to one CPU hangs from struct kcpu, indexed by arch_cpu_id(). The scheduler (issue 10:
 * the reschedule request and the current thread; its cursors and counters are in
 * kernel/sched/'s struct sched_cpu) and the lock statistics (issue 11) add their fields here.
 *
 * Included by spl.h after struct spl_cpu (which sits at offset 0, so spl_self() costs
 * what it did). The structure is exactly KCPU_BYTES bytes, a power of two, so indexing
 * by CPU id stays one shift on the measured fast paths; the static assert says when a new
 * field needs KCPU_BYTES doubled.
 *
 * Who writes what: every field is written by its own CPU only (with IRQs off where a
 * handler of that CPU also writes it, as each comment says); other CPUs read the
 * counters for reports after the CPU stopped its work, or, in intr_disestablish, clear a
 * pending bit of a source that is quiet.
 */
#ifndef KSYNC_KCPU_H
#define KSYNC_KCPU_H

#include "cpu.h"

struct lockstat_shard;
struct mlock;

#define KCPU_BYTES 256

struct kcpu {
	union {
		struct {
			/* the spl layer's state of this CPU (spl.h): level, pending, nesting,
			 * counters; written by this CPU and its handlers (spl.h says how) */
			struct spl_cpu spl;
			/* intr.c: TSC time of this CPU's next clock tick, 0 = stopped; written
			 * by this CPU with IRQs off (clock_start/stop) or in its clock handler */
			uint64_t clock_deadline;
			/* intr.c: the deadline of the tick being handled (the ideal boundary
			 * of its period), set before its handler runs; this CPU, IRQs off */
			uint64_t clock_fired;
			/* cli-optim.c: a deferral cleared IF in the interrupted section; the
			 * replaying splx turns IF back on. This CPU, IRQs off. */
			bool if_cleared;
			/* kernel/sched/: a switch is wanted at this CPU's next preemption
			 * point (set by this CPU's clock tick and resched IPI handlers, or by
			 * this CPU with IRQs off; cleared by this CPU with IRQs off in
			 * sched_preempt); the thread running here (written by this CPU with
			 * IRQs off at a switch; read by any CPU only for reports). */
			volatile uint32_t resched;
			struct thread *sched_cur;
			/* kernel/sched/: the running thread's process - its user context's
			 * owner (arch_uctx_owner), NULL for a kernel thread; written with
			 * sched_cur at a switch and by thread_drop_uctx, this CPU with IRQs
			 * off; read by this CPU (proc_current: one load on the system-call
			 * path instead of three calls) */
			void *proc_cur;
			/* kernel/lock/: this CPU's lock-statistics shards, one per class
			 * (lockstat.h; set once by lockstat_init before the mode is on);
			 * the master locks this CPU holds, innermost last, and the MCS queue
			 * nodes in use (bit i = mlock.c's node i): this CPU with its
			 * interrupts masked (mlock.h) */
			struct lockstat_shard *lockstat;
			struct mlock *mlock_held[8];
			uint32_t mlock_depth;
			uint32_t mcs_used;
		};
		char bytes[KCPU_BYTES];
	};
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct kcpu) == KCPU_BYTES, "struct kcpu outgrew KCPU_BYTES: double it");
_Static_assert(KCPU_BYTES % 64 == 0 && (KCPU_BYTES & (KCPU_BYTES - 1)) == 0,
	       "a power of two of whole cache lines");
_Static_assert(__builtin_offsetof(struct kcpu, spl) == 0, "spl_self() is the kcpu address");

extern struct kcpu kcpus[MAX_CPUS];

static inline struct kcpu *kcpu_this(void) { return &kcpus[arch_cpu_id()]; }
static inline struct kcpu *kcpu_of(unsigned cpu) { return &kcpus[cpu]; }
static inline struct spl_cpu *spl_self(void) { return &kcpu_this()->spl; }

#endif
