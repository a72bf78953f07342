/*
 * bench/spl_shim/arch_impl.h - a user-mode stand-in for the x86-64 port's arch_impl.h, so
 * the kernel's own spl.h (optimistic schemes only) compiles into a hosted benchmark
 * (bench/spl_fast.h). The optimistic fast paths touch no privileged state: a store of
 * the level, a check of the pending word (spl-optim: an unlocked cmpxchg). The CPU index
 * is a thread-local load through %fs, the user-mode twin of the kernel's %gs:8 load.
 * Privileged hooks exist only so the header compiles; the benchmark never reaches them
 * (nothing is ever pending), and they abort if it does. It defines every inline hook of
 * arch_if.h, so it is also the second public port header tests/test_layout.py compiles
 * the whole of kernel/ against (syntax only): proof that kernel/ needs nothing else of a
 * port.
 */
#ifndef KSYNC_ARCH_IMPL_H
#define KSYNC_ARCH_IMPL_H
#include <stdint.h>
#include <stdbool.h>

extern _Thread_local unsigned shim_cpu_index __attribute__((tls_model("local-exec")));
void shim_unreachable(const char *what) __attribute__((noreturn));

/* The threads' saved context (arch_if.h): the kernel embeds one per thread and never
 * looks inside; the stand-in only needs a size. */
struct arch_context { uint64_t sp; };

static inline irqkey_t arch_irq_save(void) { shim_unreachable("arch_irq_save"); }
static inline void arch_irq_restore(irqkey_t k) { (void)k; shim_unreachable("arch_irq_restore"); }
static inline void arch_irq_enable(void) { shim_unreachable("arch_irq_enable"); }
static inline void arch_irq_disable(void) { shim_unreachable("arch_irq_disable"); }
static inline bool arch_irq_enabled(void) { return true; }
static inline bool arch_irqkey_on(irqkey_t k) { return k != 0; }
static inline void arch_wait_for_irq(void) { shim_unreachable("arch_wait_for_irq"); }
static inline unsigned arch_tpr_get(void) { return 0; }
static inline void arch_tpr_set(unsigned cls) { (void)cls; shim_unreachable("arch_tpr_set"); }
static inline uint64_t arch_cycles(void) { uint32_t lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return ((uint64_t)hi << 32) | lo; }
static inline void arch_cpu_relax(void) { __asm__ volatile("pause"); }
/* No masked-window tracker here (arch_if.h: x86_64 WINDOWS=1 kernels only). */
static inline void arch_win_soft_open(unsigned bit) { (void)bit; }
static inline void arch_win_soft_close(unsigned bit) { (void)bit; }
static inline unsigned arch_cpu_id(void) { return shim_cpu_index; }
static inline uint64_t arch_cycles_begin(void) { return arch_cycles(); }
static inline uint64_t arch_cycles_end(void) { return arch_cycles(); }
/* The same single instructions as the port's (no lock prefix): atomic against signals
 * on this thread, as the kernel's are against this CPU's interrupts. */
static inline void arch_cpu_local_xor64(volatile uint64_t *p, uint64_t x)
{
	__asm__ volatile("xorq %1, %0" : "+m"(*p) : "r"(x) : "memory", "cc");
}
static inline uint64_t arch_cpu_local_cas64(volatile uint64_t *p, uint64_t old, uint64_t want)
{
	__asm__ volatile("cmpxchgq %2, %1" : "+a"(old), "+m"(*p) : "r"(want) : "memory", "cc");
	return old;
}
#define ARCH_NAME "spl_shim"
/* Measurement hook details: nothing is measured through this shim. */
#define ARCH_MEAS_OFFCHIP_DETAIL "spl_shim: none"
#define ARCH_MEAS_ONCHIP_DETAIL "spl_shim: none"
#define ARCH_MEAS_FLAG_DETAIL "spl_shim: none"
#define ARCH_MEAS_FLAG_INCDEC_DETAIL "spl_shim: none"
#define ARCH_MEAS_PRIO_DETAIL "spl_shim: none"
#define ARCH_VEC_TIMER 0
static inline uint32_t arch_meas_offchip_read(void) { shim_unreachable("arch_meas_offchip_read"); }
static inline void arch_meas_offchip_pair(uint32_t saved) { (void)saved; shim_unreachable("arch_meas_offchip_pair"); }
static inline void arch_meas_onchip_pair(void) { shim_unreachable("arch_meas_onchip_pair"); }
static inline void arch_meas_flag_pair(void) { shim_unreachable("arch_meas_flag_pair"); }
static inline void arch_meas_flag_incdec(void) { shim_unreachable("arch_meas_flag_incdec"); }
static inline uint32_t arch_dev_status_read(void) { shim_unreachable("arch_dev_status_read"); }
/* the direct map (arch_if.h "physical memory"): one address space, so the identity */
static inline uint64_t P2V(uint64_t pa) { return pa; }
static inline uint64_t V2P(uint64_t va) { return va; }
#endif
