/*
 * percpu.h - per-CPU data of the x86-64 port, reached through the GS base.
 *
 * Each CPU's IA32_GS_BASE points at its own struct cpu; %gs:0 holds the struct's own
 * address, so this_cpu() is one load. A struct cpu is written only by its own CPU
 * (fields marked otherwise say who else writes them and how).
 */
#ifndef KSYNC_PERCPU_H
#define KSYNC_PERCPU_H

#include <stdint.h>
#include <stdbool.h>

#include "cpu.h"		/* MAX_CPUS (kernel/include) */

struct tss {
	uint32_t rsvd0;
	uint64_t rsp[3];
	uint64_t rsvd1;
	uint64_t ist[7];
	uint64_t rsvd2;
	uint16_t rsvd3;
	uint16_t iomap_base;
} __attribute__((packed));

struct cpu {
	struct cpu *self;		/* offset 0: this struct (read as %gs:0) */
	uint32_t index;			/* offset 8: dense CPU index; set before GS is loaded */
	uint32_t apic_id;		/* set by the BSP from the MADT before start-up */
	volatile uint8_t flag;		/* offset 16: scratch flag for the flag-cost benchmark */
	uint8_t in_panic;
	uint8_t pad[6];
	/* user space (uentry.S, uvm.c): written only by this CPU. scratch_rsp: the user rsp
	 * between `syscall` and the push onto the kernel stack (IRQs off there by FMASK);
	 * kstack_sys: the running user thread's kernel stack top, the same value as
	 * tss.rsp[0], written at each switch to a user thread with IRQs off. */
	uint64_t scratch_rsp;		/* offset 24 */
	uint64_t kstack_sys;		/* offset 32 */
	uint64_t gdt[7];		/* null, kcode, kdata, udata, ucode64, tss lo, tss hi */
	struct tss tss;
	uint64_t nmi_stack_top, df_stack_top, mc_stack_top, kstack_top;
	/* IPI / cross-call mailbox: written by the calling CPU under call_lock (smp.c),
	 * handed over by the release store to call_pending; read here after an acquire. */
	void (*call_fn)(void *);
	void *call_arg;
	volatile uint32_t call_pending;	/* 1 while a call waits; cleared (release) when done */
	volatile uint64_t ipi_count;	/* IPIs handled on this CPU; written only here */
	volatile uint64_t timer_ticks;	/* LAPIC timer interrupts on this CPU; written only here */
	volatile bool online;		/* set (release) by this CPU when it has booted */
	/* arch_clock_*: this CPU's one-shot clock (lapic.c); written only here, IRQs off */
	uint32_t clock_lvt;		/* LVT timer value without the mask bit */
	bool clock_armed;		/* a one-shot count was started and not stopped */
	bool clock_masked;
	/* trap nesting and preemption requests (trap.c): written only by this CPU with IRQs
	 * off (inside a trap, or at its tail before sti) */
	uint32_t trap_depth;		/* traps (interrupts, exceptions) being handled here */
	void (*frame_call)(void);	/* arch_frame_call's fn for the outermost trap's tail */
	uint64_t frame_calls, frame_calls_dropped;	/* calls made; requests cancelled
					   because the handler masked the frame (arch_frame_irqs_off) */
	uint64_t pf_stack_top;		/* IST 4: #PF runs here, off a possibly overflowed stack */
	struct arch_uctx *cur_uctx;	/* the running thread's user context (NULL: a kernel
					   thread); written by uvm.c's switch hook, IRQs off */
} __attribute__((aligned(64)));

#define CPU_OFF_INDEX 8
#define CPU_OFF_FLAG 16
#define CPU_OFF_SCRATCH_RSP 24
#define CPU_OFF_KSTACK_SYS 32
/* arch_impl.h's arch_cpu_id (%gs:8) and measurement hooks (%gs:16) rely on these. */
_Static_assert(__builtin_offsetof(struct cpu, index) == CPU_OFF_INDEX, "struct cpu index offset");
_Static_assert(__builtin_offsetof(struct cpu, flag) == CPU_OFF_FLAG, "struct cpu flag offset");
_Static_assert(__builtin_offsetof(struct cpu, scratch_rsp) == CPU_OFF_SCRATCH_RSP, "uentry.S scratch_rsp");
_Static_assert(__builtin_offsetof(struct cpu, kstack_sys) == CPU_OFF_KSTACK_SYS, "uentry.S kstack_sys");

extern struct cpu cpus[MAX_CPUS];

static inline struct cpu *this_cpu(void)
{
	struct cpu *c;
	__asm__ volatile("movq %%gs:0, %0" : "=r"(c));
	return c;
}
static inline unsigned this_cpu_index(void)
{
	uint32_t i;
	__asm__ volatile("movl %%gs:8, %0" : "=r"(i));
	return i;
}

#endif
