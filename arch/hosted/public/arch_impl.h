/*
 * arch_impl.h - the hosted port's inline half of arch_if.h (arch/hosted/public/): the
 * fast-path hooks of the kernel running as a Linux process (DESIGN.md "Hosted port",
 * docs/hosted-port.md "The kernel on the hosted port"). Included only through
 * arch_if.h, after its prototypes, so the compiler checks every definition here.
 *
 * Self-contained: <stdint.h>/<stdbool.h> and a few declarations of the runtime
 * (arch/hosted/hosted.h) restated below, so kernel objects never see <signal.h>. The
 * restated struct must match hosted.h's struct hosted_irq_cpu (both assert the same
 * offsets; hosted.h skips its own definition when this header came first).
 *
 * On-chip masking (Linux UML's model, Small & Manley's cli-optim in the host): a per-vCPU
 * soft flag; a source signal arriving while it is set is recorded pending and replayed
 * when the flag is restored (runtime.c's top comment argues the signal safety: the
 * handler runs on the same thread, so compiler/signal fences order the flag against the
 * section). With -DHOSTED_HARD_MASK=1 save/restore are out-of-line pthread_sigmask calls.
 */
#ifndef KSYNC_ARCH_IMPL_H
#define KSYNC_ARCH_IMPL_H

#include <stdint.h>
#include <stdbool.h>

#define ARCH_NAME "hosted"
/* arch_if.h "user space": the user copies reach this process's own memory (ucopy.c) */
#define ARCH_UCOPY_OWN_MEMORY 1
/* The vector of the port's per-CPU clock (same number as x86's: the clock's class is
 * 0xe, above every level's class but IPL_HIGH's). */
#define ARCH_VEC_TIMER 0xef
/* The kernel's thread stacks (thread.h SCHED_STACK_BYTES): a preempted thread's stack here
 * also holds the interrupting signal frames - up to HOSTED_SIGFRAMES_BOUND of ~3.1 KB
 * (xsave state; more with AVX-512) - where an x86 interrupt frame is ~200 bytes. 16 KiB
 * held three of them beside the lock-free scheduler's paths (high-water 13064 bytes under
 * a loaded make test) but not beside the locked one's: the hard-mask build's storm
 * spinner hit its guard page once in a make test. */
#define ARCH_STACK_BYTES 32768

#ifndef HOSTED_HARD_MASK
#define HOSTED_HARD_MASK 0
#endif

/* ---- restated from arch/hosted/hosted.h (kport.c asserts the layout) ---- */
struct hosted_irq_cpu {
	volatile int masked;		/* sig_atomic_t there: the soft flag, this vCPU only */
	uint32_t pending;		/* _Atomic there: held sources (this vCPU + handlers) */
	uint32_t relax_spins;		/* spin steps since the last host yield (hosted.h) */
	_Alignas(64) uint32_t mailbox;	/* _Atomic there: IPI bits, any thread ORs */
};
extern _Thread_local struct hosted_irq_cpu *hosted_irq_self;
_Static_assert(__builtin_offsetof(struct hosted_irq_cpu, pending) == 4 &&
	       __builtin_offsetof(struct hosted_irq_cpu, relax_spins) == 8 &&
	       __builtin_offsetof(struct hosted_irq_cpu, mailbox) == 64,
	       "arch/hosted/hosted.h's struct hosted_irq_cpu has this layout");
void hosted_irq_replay(void);
void hosted_poll(void);
void hosted_idle(void);
#if HOSTED_HARD_MASK
unsigned long hosted_irq_save(void);
void hosted_irq_restore(unsigned long key);
bool hosted_irq_enabled(void);
#endif
/* kport.c: the calling vCPU's index (thread-local) and its soft priority class */
/* local-exec: the kernel is linked into the one executable, so the %fs offset is a link-time
 * constant (one load in spl_self() instead of the GOT load initial-exec adds) */
extern _Thread_local unsigned hosted_kcpu __attribute__((tls_model("local-exec")));
extern _Thread_local volatile unsigned hosted_tpr;
extern _Thread_local volatile unsigned hosted_tpr_held;	/* 1: some vector is held */
void hosted_tpr_lowered(void);		/* re-send vectors the old class held */
/* kport.c: the per-vCPU byte of the flag measurement hooks, and the device status word */
extern _Thread_local volatile uint8_t hosted_meas_flag;
extern volatile uint32_t hosted_dev_status;
void hosted_meas_sigmask_pair(void);	/* block + unblock one source's signal */
void hosted_meas_hard_pair(void);	/* pthread_sigmask of every source, and back */

/* ---- on-chip masking ---- */
#if HOSTED_HARD_MASK
static inline irqkey_t arch_irq_save(void) { return hosted_irq_save(); }
static inline void arch_irq_restore(irqkey_t k) { hosted_irq_restore((unsigned long)k); }
static inline bool arch_irq_enabled(void) { return hosted_irq_enabled(); }
#else
static inline irqkey_t arch_irq_save(void)
{
	struct hosted_irq_cpu *c = hosted_irq_self;
	irqkey_t key = (irqkey_t)c->masked;

	c->masked = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* flag before the section */
	return key;
}
static inline void arch_irq_restore(irqkey_t k)
{
	struct hosted_irq_cpu *c = hosted_irq_self;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* the section before the flag */
	c->masked = (int)k;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);	/* flag before the pending check */
	if (!k && __builtin_expect((__atomic_load_n(&c->pending, __ATOMIC_RELAXED) |
				    __atomic_load_n(&c->mailbox, __ATOMIC_RELAXED)) != 0, 0))
		hosted_irq_replay();
}
static inline bool arch_irq_enabled(void) { return !hosted_irq_self->masked; }
#endif
/* key: the previous flag (0 = enabled), or the hard build's 0/1 */
static inline bool arch_irqkey_on(irqkey_t k) { return k == 0; }
static inline void arch_irq_enable(void) { arch_irq_restore(0); }
static inline void arch_irq_disable(void) { (void)arch_irq_save(); }
/* enable + sigsuspend as one step (runtime.c hosted_idle); returns with IRQs on */
static inline void arch_wait_for_irq(void) { hosted_idle(); }
/* No masked-window tracker on this port (arch_if.h: x86_64 WINDOWS=1 builds only; the
 * icount bound it serves is an emulator's): the hooks are empty, arch_win_read false. */
static inline void arch_win_soft_open(unsigned bit) { (void)bit; }
static inline void arch_win_soft_close(unsigned bit) { (void)bit; }

/* ---- task priority: a per-vCPU soft class (kport.c holds the vectors it blocks) ---- */
static inline unsigned arch_tpr_get(void) { return hosted_tpr; }
static inline void arch_tpr_set(unsigned cls)
{
	unsigned old = hosted_tpr;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	hosted_tpr = cls & 15;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* a handler after the store sees the new class and holds nothing it allows */
	if ((cls & 15) < old && hosted_tpr_held)
		hosted_tpr_lowered();
}

/* ---- cycle counter (the real TSC), CPU identity ---- */
static inline uint64_t arch_cycles(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
static inline uint64_t arch_cycles_begin(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}
extern bool arch_has_rdtscp;	/* set once at boot (kport.c, from cpuid) */
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
/* A spin-wait step is also a preemption point: mail (IPIs, cross-CPU calls) waiting for
 * this vCPU is taken here when IRQs are on, as a LAPIC would interrupt the spin.
 * The ThreadSanitizer build (HOSTED_TSAN_KERNEL) calls out of line instead: TSan runs an
 * asynchronous signal's handler only at its next interceptor, so the step passes through
 * one (the clock's handler runs there) and then takes a pending frame call
 * (arch_frame_call) or mail - docs/hosted-port.md "Threads on the hosted port". */
#if defined(__SANITIZE_THREAD__)
#define HOSTED_TSAN_KERNEL 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOSTED_TSAN_KERNEL 1
#endif
#endif
#ifndef HOSTED_TSAN_KERNEL
#define HOSTED_TSAN_KERNEL 0
#endif
void hosted_relax_tsan(void);
/* Every HOSTED_RELAX_YIELD_STEPS (256) steps: hosted_relax_yield, which gives an
 * oversubscribed host core back (hosted.h) - so every spinning wait of the kernel (master
 * locks of each algorithm, hence the locked scheduler's sched_Mutex; spin locks; MWCAS
 * stripes; the helping lock's watch) yields after a bounded count of steps. */
#define HOSTED_RELAX_YIELD_STEPS 256u
void hosted_relax_yield(void);
static inline void arch_cpu_relax(void)
{
	if (HOSTED_TSAN_KERNEL) {
		hosted_relax_tsan();
		return;
	}
	__asm__ volatile("pause" ::: "memory");
	struct hosted_irq_cpu *c = hosted_irq_self;
	if (!c)
		return;
	if (__builtin_expect(++c->relax_spins >= HOSTED_RELAX_YIELD_STEPS, 0))
		hosted_relax_yield();
	if (__builtin_expect(__atomic_load_n(&c->mailbox, __ATOMIC_RELAXED) != 0, 0))
		hosted_poll();
}
static inline unsigned arch_cpu_id(void) { return hosted_kcpu; }

/* One instruction each, no lock prefix: the word is this vCPU's, and the only other
 * code touching it is this thread's own signal handlers (which run between
 * instructions), exactly the x86 port's argument. */
static inline void arch_cpu_local_xor64(volatile uint64_t *p, uint64_t x)
{
	__asm__ volatile("xorq %1, %0" : "+m"(*p) : "r"(x) : "memory", "cc");
}
static inline uint64_t arch_cpu_local_cas64(volatile uint64_t *p, uint64_t old, uint64_t want)
{
	__asm__ volatile("cmpxchgq %2, %1" : "+a"(old), "+m"(*p) : "r"(want) : "memory", "cc");
	return old;
}

/* ---- measurement hooks (Small & Manley Table 5 rows, as the host can show them) ---- */
#define ARCH_MEAS_OFFCHIP_DETAIL "pthread_sigmask block + unblock of one source signal (2 system calls; the hosted analog of an 8259A IMR write)"
static inline uint32_t arch_meas_offchip_read(void) { return 0; }
static inline void arch_meas_offchip_pair(uint32_t saved) { (void)saved; hosted_meas_sigmask_pair(); }
#if HOSTED_HARD_MASK
#define ARCH_MEAS_ONCHIP_DETAIL "pthread_sigmask of every source signal, and back (hard-mask build: 2 system calls)"
static inline void arch_meas_onchip_pair(void) { hosted_meas_hard_pair(); }
#else
#define ARCH_MEAS_ONCHIP_DETAIL "soft flag set + restore with the pending check (no system call)"
static inline void arch_meas_onchip_pair(void) { arch_irq_restore(arch_irq_save()); }
#endif
#define ARCH_MEAS_FLAG_DETAIL "movb $1 / movb $0 to a thread-local byte"
static inline void arch_meas_flag_pair(void)
{
	hosted_meas_flag = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	hosted_meas_flag = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
#define ARCH_MEAS_FLAG_INCDEC_DETAIL "increment + decrement of a thread-local byte (the floor of a nestable flag)"
static inline void arch_meas_flag_incdec(void)
{
	hosted_meas_flag = (uint8_t)(hosted_meas_flag + 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	hosted_meas_flag = (uint8_t)(hosted_meas_flag - 1);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}
#define ARCH_MEAS_PRIO_DETAIL "soft priority class (thread-local) <- 15, <- old, with the held-vector check"
/* A device register read: a volatile load of a status word in memory (no port I/O). */
static inline uint32_t arch_dev_status_read(void) { return hosted_dev_status; }

/* The runtime's per-stack state (runtime.c; hosted.h restates it): what belongs to the
 * stack that runs, not to the vCPU, kept in its struct arch_context while it is switched
 * out and swapped by every context switch (hosted_stack_state_swap). frame_nest: a frame
 * call is active on this stack; sigframes: its on_source frames; frame_fn: the frame call
 * granted to code on this stack and not yet run (NULL: none) - it runs on this stack when
 * it resumes, never on a stack switched to meanwhile. Zero for a new context. */
struct hosted_stack_state {
	uint32_t frame_nest, sigframes;
	void (*frame_fn)(void);
};

/* ---- threads: struct arch_context (arch_if.h "threads"; arch/hosted/context.c,
 * arch/hosted/switch.S, docs/hosted-port.md "Threads on the hosted port") ----
 * One per kernel thread (embedded in struct thread) and one per adopted execution (a
 * vCPU's boot/idle stack: its pthread stack). switch.S knows the offsets of sp and fpu.
 * Protection: the fields belong to the context's owner - whoever runs it, or the CPU
 * switching into or out of it. The asm stores `sp` (and the FP area) of `from` before it
 * loads `to`'s; the kernel's handoff (the thread's state CAS or its master lock, released
 * after the switch by the next thread) orders that store before another CPU's switch into
 * it. After the stack switch the port touches only the resumed context, never `from`.
 * The sanitizer fields are written only by the switch of their own context. */
struct arch_context {
	void *sp;		/* 0: saved stack pointer (the switch frame is below it, switch.S) */
	void *fpu;		/* 8: FP/SIMD save area (xsave or fxsave layout, 64-byte aligned, at
				   the top of the thread's stack); NULL: not an fp context */
	void *stack_lo;		/* the stack [stack_lo, stack_lo + stack_size): ASan's fiber */
	uint64_t stack_size;	/*   bounds (adopted: the pthread's stack) */
	void *fake_stack;	/* ASan: this context's fake stack while it is switched out */
	void *fiber;		/* TSan: this context's fiber (adopted: the thread's own) */
	void (*entry)(void *);	/* arch_context_init's entry and argument, read once by the */
	void *arg;		/*   trampoline (hosted_context_start) at the first switch-in */
	bool adopted;		/* arch_context_adopt: no fiber of ours to destroy */
	/* the runtime's per-stack state while switched out (hosted_stack_state_swap: the
	 * frame call in progress on this stack, its signal frames, the frame call granted
	 * to it and not yet run); zero for a new one */
	struct hosted_stack_state stack_state;
	bool painted;		/* its stack was painted at init (hosted_stack_high_water) */
};
_Static_assert(__builtin_offsetof(struct arch_context, sp) == 0 &&
	       __builtin_offsetof(struct arch_context, fpu) == 8,
	       "arch/hosted/switch.S uses these offsets");
/* the direct map (arch_if.h "physical memory"): one address space, so the identity */
static inline uint64_t P2V(uint64_t pa) { return pa; }
static inline uint64_t V2P(uint64_t va) { return va; }
#endif
