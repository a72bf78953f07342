/*
 * arch_impl.h - x86-64 inline half of arch_if.h (the fast-path hooks), the port's only
 * public header (arch/x86_64/public/): kernel objects see this directory and no other of
 * the port's. Included only through arch_if.h, after its prototypes, so the compiler
 * checks every definition here against the contract. Self-contained: the port's private
 * headers (x86.h, percpu.h, trap.h in arch/x86_64/include/) stay out of kernel objects.
 */
#ifndef KSYNC_ARCH_IMPL_H
#define KSYNC_ARCH_IMPL_H

#include <stdint.h>
#include <stdbool.h>

#define ARCH_NAME "x86_64"
#define ARCH_RFLAGS_IF (1ul << 9)
/* The vector of the port's per-CPU clock (trap.h's VEC_TIMER; lapic.c asserts equality). */
#define ARCH_VEC_TIMER 0xef

/* ---- the masked-window tracker (KSYNC_WINDOWS builds only: make kernel WINDOWS=1 ->
 * build/kernel-windows) ---------------------------------------------------------------
 * Hohmuth & Haertig's lateness under -icount (issue 12 item 7): there time is
 * instructions, and a clock interrupt can only be late by the window that held it back.
 * Each CPU tracks the union of the windows in which it holds its clock back - IF=0
 * (ARCH_WIN_IF: arch_irq_save/disable up to restore/enable, a trap from its entry to its
 * iretq, arch_irq_window's cli) and the soft ones a scheme reports through
 * arch_win_soft_open/close (spl-optim's level at or above IPL_CLOCK, an optimistic
 * crit_enter section) - and keeps the longest, in TSC ticks, with the code addresses
 * that opened and closed it. Every update runs with IF=0 (the soft hooks clear it
 * themselves), so the CPU's own interrupts never see a half-updated record; only its own
 * CPU writes a record, and it is read after that CPU's run (lateness.c: the handler
 * thread on the same CPU). In other builds every hook is empty and costs nothing. */
#ifdef KSYNC_WINDOWS
#define ARCH_WIN_CPUS 256
extern struct arch_win arch_win_cpu[ARCH_WIN_CPUS];
static inline uint64_t arch_win_rip(void)
{
	uint64_t r;
	__asm__ volatile("leaq 0(%%rip), %0" : "=r"(r));
	return r;
}
static inline struct arch_win *arch_win_self(void)
{
	uint32_t i;
	__asm__ volatile("movl %%gs:8, %0" : "=r"(i));
	return &arch_win_cpu[i % ARCH_WIN_CPUS];
}
/* IF=0 (every caller) */
static inline void arch_win_open_at(unsigned bit, uint64_t site)
{
	struct arch_win *w = arch_win_self();
	if (!w->held) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		w->since = ((uint64_t)hi << 32) | lo;
		w->open_site = site;
	}
	w->held |= bit;
}
static inline void arch_win_close_at(unsigned bit, uint64_t site)
{
	struct arch_win *w = arch_win_self();
	if (!(w->held & bit))
		return;
	w->held &= ~bit;
	if (w->held)
		return;
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	uint64_t d = (((uint64_t)hi << 32) | lo) - w->since;
	w->windows++;
	if (d > w->max) {
		w->max = d;
		w->max_open = w->open_site;
		w->max_close = site;
	}
}
static inline void arch_win_soft_open(unsigned bit)
{
	uint64_t f;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(f) :: "memory");
	arch_win_open_at(bit, arch_win_rip());
	__asm__ volatile("pushq %0; popfq" :: "r"(f) : "memory", "cc");
}
static inline void arch_win_soft_close(unsigned bit)
{
	uint64_t f;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(f) :: "memory");
	arch_win_close_at(bit, arch_win_rip());
	__asm__ volatile("pushq %0; popfq" :: "r"(f) : "memory", "cc");
}
#define ARCH_WIN_OPEN(bit) arch_win_open_at((bit), arch_win_rip())
#define ARCH_WIN_CLOSE(bit) arch_win_close_at((bit), arch_win_rip())
#define ARCH_WINDOWS 1
#else
static inline void arch_win_soft_open(unsigned bit) { (void)bit; }
static inline void arch_win_soft_close(unsigned bit) { (void)bit; }
#define ARCH_WIN_OPEN(bit) ((void)0)
#define ARCH_WIN_CLOSE(bit) ((void)0)
#define ARCH_WINDOWS 0
#endif

/* pushf/cli: the "memory" clobber keeps the compiler from moving accesses out of the
 * masked region; the CPU itself never reorders around cli/popf for this CPU's IRQs. */
static inline irqkey_t arch_irq_save(void)
{
	uint64_t f;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(f) :: "memory");
	if (ARCH_WINDOWS && (f & ARCH_RFLAGS_IF))
		ARCH_WIN_OPEN(ARCH_WIN_IF);
	return f;
}
static inline void arch_irq_restore(irqkey_t k)
{
	if (ARCH_WINDOWS && (k & ARCH_RFLAGS_IF))
		ARCH_WIN_CLOSE(ARCH_WIN_IF);
	__asm__ volatile("pushq %0; popfq" :: "r"(k) : "memory", "cc");
}
static inline void arch_irq_enable(void)
{
	if (ARCH_WINDOWS)
		ARCH_WIN_CLOSE(ARCH_WIN_IF);
	__asm__ volatile("sti" ::: "memory");
}
static inline void arch_irq_disable(void)
{
#ifdef KSYNC_WINDOWS
	uint64_t f;
	__asm__ volatile("pushfq; popq %0; cli" : "=r"(f) :: "memory");
	if (f & ARCH_RFLAGS_IF)
		ARCH_WIN_OPEN(ARCH_WIN_IF);
#else
	__asm__ volatile("cli" ::: "memory");
#endif
}
static inline bool arch_irq_enabled(void)
{
	uint64_t f;
	__asm__ volatile("pushfq; popq %0" : "=r"(f) :: "memory");
	return (f & ARCH_RFLAGS_IF) != 0;
}
static inline bool arch_irqkey_on(irqkey_t k) { return (k & ARCH_RFLAGS_IF) != 0; }
/* sti; hlt: sti's one-instruction shadow makes enable-and-wait atomic. */
static inline void arch_wait_for_irq(void)
{
	if (ARCH_WINDOWS)
		ARCH_WIN_CLOSE(ARCH_WIN_IF);
	__asm__ volatile("sti; hlt" ::: "memory");
}

static inline unsigned arch_tpr_get(void)
{
	uint64_t v;
	__asm__ volatile("mov %%cr8, %0" : "=r"(v));
	return (unsigned)v;
}
static inline void arch_tpr_set(unsigned cls) { __asm__ volatile("mov %0, %%cr8" :: "r"((uint64_t)cls) : "memory"); }

static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
/* lfence before: earlier instructions have completed; lfence after: later ones wait. */
static inline uint64_t arch_cycles_begin(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}
/* rdtscp waits for earlier instructions; lfence keeps later ones after the read. CPUs
 * (or VMMs) without RDTSCP get lfence; rdtsc; lfence, which orders the same way. The
 * branch sits outside every timed loop, and the empty loop pays it too. */
extern bool arch_has_rdtscp;	/* set once at boot (tsc.c) */
static inline uint64_t arch_cycles_end(void)
{
	uint32_t lo, hi, aux;
	if (arch_has_rdtscp) {
		__asm__ volatile("rdtscp; lfence" : "=a"(lo), "=d"(hi), "=c"(aux) :: "memory");
		(void)aux;
	} else {
		__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	}
	return ((uint64_t)hi << 32) | lo;
}
static inline void arch_cpu_relax(void) { __asm__ volatile("pause" ::: "memory"); }
/* struct cpu's index field at %gs:8 (percpu.h asserts the offset). */
static inline unsigned arch_cpu_id(void)
{
	uint32_t i;
	__asm__ volatile("movl %%gs:8, %0" : "=r"(i));
	return i;
}

/* One instruction each, no lock prefix: atomic against this CPU's interrupts only. */
static inline void arch_cpu_local_xor64(volatile uint64_t *p, uint64_t x)
{
	__asm__ volatile("xorq %1, %0" : "+m"(*p) : "r"(x) : "memory", "cc");
}
static inline uint64_t arch_cpu_local_cas64(volatile uint64_t *p, uint64_t old, uint64_t want)
{
	__asm__ volatile("cmpxchgq %2, %1" : "+a"(old), "+m"(*p) : "r"(want) : "memory", "cc");
	return old;
}

/* ---- threads: the saved context (arch_if.h "threads"; switch.S, context.c) ----------
 * 16 bytes for every context. The callee-saved registers (rbx, rbp, r12-r15) and the
 * return address live on the context's own stack, below the saved rsp. An fp context
 * keeps its 512-byte FXSAVE area at the top of its own stack (arch_context_init carves
 * it out, 16-byte aligned), so the struct stays small and nothing needs freeing.
 * Both fields are written only by the CPU running the context (rsp at switch-out, fxarea
 * at init/adopt) and read by the CPU switching to it: the kernel's hand-over of the
 * context (its run-queue release/acquire) orders those accesses. */
struct arch_context {
	uint64_t rsp;		/* offset 0: stack pointer saved at switch-out (switch.S) */
	void *fxarea;		/* offset 8: FXSAVE64 area (512 bytes, 16-aligned), NULL: integer-only */
};

/* ---- measurement hooks (Small & Manley Table 5 rows) ------------------------------- */
static inline uint8_t arch_x86_inb(uint16_t port)
{
	uint8_t v;
	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory");
	return v;
}
static inline void arch_x86_outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" :: "a"(v), "Nd"(port) : "memory");
}
#define ARCH_MEAS_OFFCHIP_DETAIL "8259A master OCW1: outb 0x21 all-masked, restore"
static inline uint32_t arch_meas_offchip_read(void) { return arch_x86_inb(0x21); }
static inline void arch_meas_offchip_pair(uint32_t saved)
{
	arch_x86_outb(0x21, 0xff);
	arch_x86_outb(0x21, (uint8_t)saved);
}
#define ARCH_MEAS_ONCHIP_DETAIL "cli; sti"
static inline void arch_meas_onchip_pair(void) { __asm__ volatile("cli; sti" ::: "memory"); }
#define ARCH_MEAS_FLAG_DETAIL "movb $1,%gs:flag; movb $0,%gs:flag"
static inline void arch_meas_flag_pair(void)
{
	__asm__ volatile("movb $1, %%gs:16; movb $0, %%gs:16" ::: "memory");
}
#define ARCH_MEAS_FLAG_INCDEC_DETAIL "incb %gs:flag; decb %gs:flag (the floor of a nestable flag)"
static inline void arch_meas_flag_incdec(void)
{
	__asm__ volatile("incb %%gs:16; decb %%gs:16" ::: "memory", "cc");
}
#define ARCH_MEAS_PRIO_DETAIL "mov cr8<-15; mov cr8<-old"
/* The serial model's per-character device read: COM1's line status register. */
static inline uint32_t arch_dev_status_read(void) { return arch_x86_inb(0x3fd); }

/* ---- the direct map (arch_if.h "physical memory"; boot.S builds it) ---------------- */
#define DIRECT_MAP_BASE 0xffff800000000000ull	/* PML4 slot 256: physical 0..4 GiB */
#define DIRECT_MAP_SIZE (4ull << 30)
#define KERNEL_VMA 0xffffffff80000000ull	/* the image: KERNEL_VMA + physical (kernel.ld) */
static inline uint64_t P2V(uint64_t pa) { return pa + DIRECT_MAP_BASE; }
static inline uint64_t V2P(uint64_t va)
{
	return va >= KERNEL_VMA ? va - KERNEL_VMA : va - DIRECT_MAP_BASE;
}

#endif
