/*
 * arch/hosted/hosted.h - the hosted port's runtime: vCPUs as pinned pthreads, on-chip
 * interrupt masking as a per-vCPU soft flag (or real pthread_sigmask with
 * -DHOSTED_HARD_MASK=1), interrupt sources as POSIX real-time signals, a per-vCPU clock,
 * mailbox IPIs, a serialized console, a fault panic, a hang watchdog and a page arena.
 * See runtime.c for the design and docs/hosted-port.md for the contract.
 * Hosted only (Linux, glibc, x86-64).
 */
#ifndef KSYNC_ARCH_HOSTED_H
#define KSYNC_ARCH_HOSTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 1: on-chip masking is pthread_sigmask (real, a system call); 0: the soft flag. */
#ifndef HOSTED_HARD_MASK
#define HOSTED_HARD_MASK 0
#endif

#define HOSTED_MAX_CPUS 64
/* Interrupt sources 0..HOSTED_NSRC-1, source s on signal SIGRTMIN+1+s (SIGRTMIN itself
 * wakes an idle vCPU for the mailbox). Source 0 is the per-vCPU clock. */
#define HOSTED_NSRC 8
#define HOSTED_SRC_CLOCK 0

/* Exit statuses: the verdict of hosted_exit, a fault panic, the watchdog. */
enum { HOSTED_EXIT_PASS = 0, HOSTED_EXIT_FAIL = 1, HOSTED_EXIT_PANIC = 2,
       HOSTED_EXIT_HANG = 3 };

/* 1. vCPUs. Runs entry(cpu) on ncpus threads and returns when every entry returned.
 * Pinned one per allowed host core when ncpus <= cores, else oversubscribed. SCHED_FIFO
 * + mlockall are tried unless KSYNC_HOSTED_FIFO=0 is in the environment. */
void hosted_start(unsigned ncpus, void (*entry)(unsigned cpu));
unsigned hosted_cpu_id(void);		/* current vCPU; ~0u on a non-vCPU thread */
unsigned hosted_ncpus(void);
bool hosted_oversubscribed(void);
const char *hosted_sched_label(void);	/* "SCHED_FIFO" or "best-effort scheduling" */
static inline uint64_t hosted_cycles(void)	/* the real TSC */
{
	return __builtin_ia32_rdtsc();
}

/* 2. On-chip masking. key: the previous state (0 = enabled).
 * The per-vCPU masking state; the signal-safety argument is in runtime.c's top comment. */
#include <signal.h>
#include <stdatomic.h>
/* The kernel's port files (kport.c, boot.c) include arch_if.h first, whose
 * arch/hosted/public/arch_impl.h restates this struct and the inline save/restore without
 * <stdatomic.h>/<signal.h>; the layout is asserted on both sides. */
#ifndef KSYNC_ARCH_IMPL_H
struct hosted_irq_cpu {
	/* Soft flag: this vCPU's thread and its own signal handlers only. */
	volatile sig_atomic_t masked;
	/* Held sources, bit s = source s: this thread and its handlers; taken by exchange. */
	_Atomic uint32_t pending;
	/* Spin-wait steps (arch_cpu_relax) since this vCPU last gave its host core back
	 * (hosted_relax_yield): this thread and its handlers, plain ++; a handler's step
	 * racing the thread's can lose one count, which only moves the next yield by one
	 * step. */
	uint32_t relax_spins;
	/* IPI bits: any thread ORs (seq_cst: the sender's data before the bit, and the
	 * Dekker handshake with idle); the owner takes them by exchange (acquire). */
	_Alignas(64) _Atomic uint32_t mailbox;
};
extern _Thread_local struct hosted_irq_cpu *hosted_irq_self;	/* NULL off the vCPUs */
_Static_assert(sizeof(sig_atomic_t) == sizeof(int) &&
	       __builtin_offsetof(struct hosted_irq_cpu, pending) == 4 &&
	       __builtin_offsetof(struct hosted_irq_cpu, relax_spins) == 8 &&
	       __builtin_offsetof(struct hosted_irq_cpu, mailbox) == 64,
	       "arch/hosted/public/arch_impl.h restates this layout");
#endif

#if HOSTED_HARD_MASK
/* The hard build keeps `masked` as the on-chip state too (set with the signals blocked),
 * so a restore unblocks only the sources not masked at the "controller". */
unsigned long hosted_irq_save(void);
void hosted_irq_restore(unsigned long key);
bool hosted_irq_enabled(void);
#elif !defined(KSYNC_ARCH_IMPL_H)
void hosted_irq_replay(void);	/* restore's slow path: something is pending */

static inline unsigned long hosted_irq_save(void)
{
	struct hosted_irq_cpu *c = hosted_irq_self;
	unsigned long key = (unsigned long)c->masked;

	c->masked = 1;
	atomic_signal_fence(memory_order_seq_cst);	/* flag before the section */
	return key;
}

static inline void hosted_irq_restore(unsigned long key)
{
	struct hosted_irq_cpu *c = hosted_irq_self;

	atomic_signal_fence(memory_order_seq_cst);	/* the section before the flag */
	c->masked = (sig_atomic_t)key;
	atomic_signal_fence(memory_order_seq_cst);	/* flag before the pending check */
	if (!key && __builtin_expect((atomic_load_explicit(&c->pending, memory_order_relaxed) |
				      atomic_load_explicit(&c->mailbox, memory_order_relaxed)) != 0, 0))
		hosted_irq_replay();
}

static inline bool hosted_irq_enabled(void)
{
	return !hosted_irq_self->masked;
}
#endif
void hosted_irq_disable(void);
void hosted_irq_enable(void);
bool hosted_irq_enabled(void);

/* 3. Interrupt sources. handler runs on the vCPU the signal was sent to, with
 * interrupts (soft-)disabled, in signal context. */
typedef void (*hosted_handler_t)(unsigned src, void *arg);
/* Before hosted_start (read-only while vCPUs run). */
void hosted_source_register(unsigned src, hosted_handler_t handler, void *arg);
void hosted_source_raise(unsigned src, unsigned cpu);	/* tgkill to that vCPU */
void hosted_source_mask(unsigned src);	/* at the "controller": pthread_sigmask, this vCPU */
void hosted_source_unmask(unsigned src);
/* Both at once (bit s = source s): one pthread_sigmask per direction, like one IMR write
 * for every line it changes. `unmask` bits also in `mask` stay masked. */
void hosted_source_mask_set(uint32_t mask, uint32_t unmask);
/* Whether a request of `src` waits for the calling vCPU (in the host or the soft set). */
bool hosted_source_held(unsigned src);
/* Inside a source handler (or an IPI handler): the interrupted context resumes with
 * on-chip interrupts disabled (x86: IF cleared in the interrupt frame). A controller
 * mask changed inside a handler (hosted_source_mask/unmask) also survives the handler's
 * return: the runtime writes it into every interrupted signal context it holds. */
void hosted_trap_resume_masked(void);
/* The calling vCPU's clock (source 0): periodic when periodic, else one-shot. */
void hosted_clock_start(uint64_t period_ns, bool periodic);
void hosted_clock_stop(void);
/* Clock signals that arrived on a vCPU other than the one that armed the clock. */
unsigned long hosted_clock_misrouted(void);

/* IPIs: bits ORed into the target's mailbox; delivered to the IPI handler (with the bits
 * taken) at the target's next irq enable/restore, hosted_poll or idle wake. */
typedef void (*hosted_ipi_handler_t)(unsigned cpu, uint32_t bits);
void hosted_ipi_set_handler(hosted_ipi_handler_t handler);	/* before hosted_start */
void hosted_ipi_send(unsigned cpu, uint32_t bits);
void hosted_poll(void);		/* deliver whatever is pending (if enabled) */
void hosted_relax_tsan(void);	/* the TSan build's arch_cpu_relax (arch_impl.h) */
/* Every spinning wait in the kernel steps through arch_cpu_relax; every
 * HOSTED_RELAX_YIELD_STEPS steps of a vCPU, arch_cpu_relax calls hosted_relax_yield,
 * which - only when the vCPUs outnumber the host's cores - gives the host core back
 * (sched_yield): a spinner waits for a lock holder, a ticket's next holder or an MCS
 * successor whose vCPU thread the host has descheduled, maybe onto this very core. The
 * bound is a count of steps (~256 pause instructions, 5-35 us on current cores), never
 * a time. hosted_relax_yields: vCPU cpu's yields so far (relaxed). */
#define HOSTED_RELAX_YIELD_STEPS 256u
void hosted_relax_yield(void);
unsigned long hosted_relax_yields(unsigned cpu);

/* Preemption (arch_frame_call; docs/hosted-port.md "Threads on the hosted port"). From a
 * handler (IRQs off): if it is the outermost delivery and interrupted code with IRQs on,
 * fn() will run before that code resumes - with IRQs on and the code's host signal mask
 * (the tail of the signal handler), or, for deliveries in thread context (a replay at an
 * enable, hosted_poll, idle; every delivery of the TSan build), when that replay returns.
 * fn may switch threads; the interrupted one must resume on this vCPU. fn returns with
 * IRQs on. Returns false, nothing requested, otherwise - and while a granted call is
 * still pending on this stack (that one runs; one pending at a time, like an IRR bit).
 * A granted call belongs to the stack of the code it interrupted: if that code (or fn
 * running on it) switches threads first, the call goes with its stack
 * (hosted_stack_state_swap) and runs when that stack resumes. */
bool hosted_frame_call(void (*fn)(void));
/* One frame call per stack (runtime.c, frame_call_signal): a request made while one is
 * active on the running stack waits for it to return. So a stack holds at most this
 * many source-signal frames at once: the one whose frame call is active, one delivery
 * in that frame call's IRQs-on code, and one that only records a source (a handler's
 * controller unmask delivering a held signal with the flag set). */
#define HOSTED_SIGFRAMES_BOUND 3
/* The hard-mask build (-DHOSTED_HARD_MASK=1) with a scheme whose handlers run with IRQs on
 * (spl-optim and the other SPL_HANDLER_IF_ON schemes, kernel/spl/spl_common.h): there an
 * enable inside a handler is a real unblock, so a source of a higher level nests a signal
 * frame of its own inside the handler, as a higher interrupt nests on x86 - the middle
 * frame above is then a chain. Each nested dispatch interrupted a level strictly above the
 * one its outer frame interrupted (a source runs only above the level it finds), so the
 * chain has at most one frame per level a source can interrupt below its own (`levels`:
 * IPL_SOFT..IPL_CLOCK in spl.h, 5), on top of the frame call's frame, the first
 * delivery into it and one recording frame. Seen: 4 frames (the storm test beside two
 * CPU hogs: a clock tick nested in a replayed handler's IRQs-on window, then a recording
 * frame), where the bound above had said 3. */
#define HOSTED_SIGFRAMES_BOUND_NESTED(levels) (HOSTED_SIGFRAMES_BOUND + (levels))
/* The per-stack half of the above, swapped by every context switch before its stack
 * switch, IRQs off (context.c): *save gets the running context's state, *load is the
 * state of the context switched to (zeros for a new one). A granted frame call not yet
 * run is part of it: it belongs to the code it interrupted, so it leaves the vCPU with
 * that code's stack and comes back with it (a thread fn switched to never runs it).
 * arch/hosted/public/arch_impl.h restates the struct (context.c sees both headers). */
#ifndef KSYNC_ARCH_IMPL_H
struct hosted_stack_state {
	uint32_t frame_nest, sigframes;
	void (*frame_fn)(void);
};
#endif
void hosted_stack_state_swap(struct hosted_stack_state *save,
			     const struct hosted_stack_state *load);
/* Maxima since start: source-signal frames on one stack at once; bytes of one signal
 * frame (interrupted stack pointer minus the handler's frame: the host's frame with the
 * FP/SIMD state, the red zone, alignment). */
unsigned hosted_stack_sigframes_max(void);
unsigned long hosted_sigframe_bytes_max(void);
/* Raises of `src` aimed at vCPU `cpu` (hosted_source_raise): raised = delivered +
 * coalesced once the host's signal queue has drained. delivered: dispatched, or held
 * in a clear pending bit (dispatched once later); coalesced: held in a bit already set
 * (an IRR takes one request per source), or refused by the host's full queue. */
struct hosted_src_counts { unsigned long raised, delivered, coalesced; };
void hosted_source_counts(unsigned cpu, unsigned src, struct hosted_src_counts *c);
/* context.c: paint the stacks of contexts created from now on (on = true) and scan the
 * running context's: bytes ever used from its top, 0 if not painted. */
void hosted_stack_paint(bool on);
size_t hosted_stack_high_water(void);
void hosted_idle(void);		/* enable, sleep until a signal or the mailbox, return */

/* 4. Console, verdict, watchdog. */
void hosted_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void hosted_exit(bool pass);
void hosted_activity(const char *what);	/* hook point: "last activity" + progress */
void hosted_halted(void);	/* the calling vCPU halts for good (the watchdog: a hang) */
void hosted_watchdog(unsigned seconds);	/* 0 = off (default 10, before hosted_start) */
/* The fault panic asks fn (before hosted_start; the kernel's kernel_fault_note) to name
 * what faulted at addr; its text (at most n bytes, NUL-terminated) follows the fault
 * address in the panic line. Called on the alternate signal stack, IRQs off. */
typedef void (*hosted_fault_note_t)(uint64_t addr, char *buf, size_t n);
void hosted_fault_note_hook(hosted_fault_note_t fn);

/* 5. Memory. */
int hosted_arena_init(size_t bytes);
void *hosted_page_alloc(void);
void hosted_page_free(void *page);
size_t hosted_pages_free(void);

#endif /* KSYNC_ARCH_HOSTED_H */
