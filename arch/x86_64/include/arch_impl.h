/*
 * arch_impl.h - x86-64 inline half of arch_if.h (the fast-path hooks).
 * Included only through arch_if.h.
 */
#ifndef KSYNC_ARCH_IMPL_H
#define KSYNC_ARCH_IMPL_H

#include "x86.h"
#include "percpu.h"

/* pushf/cli: the "memory" clobber keeps the compiler from moving accesses out of the
 * masked region; the CPU itself never reorders around cli/popf for this CPU's IRQs. */
static inline irqkey_t arch_irq_save(void)
{
	uint64_t f;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(f) :: "memory");
	return f;
}
static inline void arch_irq_restore(irqkey_t k)
{
	__asm__ volatile("pushq %0; popfq" :: "r"(k) : "memory", "cc");
}
static inline void arch_irq_enable(void) { __asm__ volatile("sti" ::: "memory"); }
static inline void arch_irq_disable(void) { __asm__ volatile("cli" ::: "memory"); }
static inline bool arch_irq_enabled(void) { return (read_rflags() & RFLAGS_IF) != 0; }
static inline bool arch_irqkey_on(irqkey_t k) { return (k & RFLAGS_IF) != 0; }
/* IF on until the local APIC holds nothing deliverable (bounded), then off: the
 * interrupts the CPU holds pending come in, by priority. lapic.c. */
void arch_irq_window(void);

static inline unsigned arch_tpr_get(void) { return (unsigned)read_cr8(); }
static inline void arch_tpr_set(unsigned cls) { write_cr8(cls); }

static inline uint64_t arch_cycles(void) { return rdtsc(); }
static inline void arch_cpu_relax(void) { cpu_pause(); }
static inline unsigned arch_cpu_id(void) { return this_cpu_index(); }

#endif
