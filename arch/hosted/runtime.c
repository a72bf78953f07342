/*
 * arch/hosted/runtime.c - the hosted port's runtime (issue 9, DESIGN.md "Hosted port").
 *
 * Model (after Linux UML arch/um/os-Linux/signal.c: a soft "signals enabled" flag and
 * pending bits replayed on unblock; NuttX sim:smp and Zephyr arch/posix for vCPUs as host
 * threads): a vCPU is a pthread; an interrupt source is a real-time signal, one number
 * per source, so a source masked with pthread_sigmask stays pending in the host like an
 * IRR bit; the clock is a timer_create(CLOCK_MONOTONIC, SIGEV_THREAD_ID) timer aimed at
 * the vCPU that armed it; an IPI is a bit in the target's mailbox plus SIGRTMIN only when
 * the target sleeps in hosted_idle.
 *
 * Signal-safety argument of the soft mask (default build). Every signal a vCPU receives
 * runs its handler ON THAT vCPU'S THREAD, between two of its instructions; so the handler
 * and the interrupted code never run at the same time and need no atomic RMW against each
 * other, only that the compiler neither caches nor reorders the accesses across the
 * possible interruption points:
 *   - vcpu->irq.masked (the soft flag): written by the thread and by the handler around a
 *     dispatch (it restores the value it found). A volatile sig_atomic_t access plus
 *     atomic_signal_fence(seq_cst) after the store in save/disable (the store is visible
 *     to a handler before any access of the critical section) and before the store in
 *     restore/enable (the section's accesses are done before a handler may run).
 *   - vcpu->irq.pending (held sources): set by the handler, taken by the thread. Taken with one
 *     atomic exchange (relaxed: it is not shared with other threads, but a read followed
 *     by a separate clear could lose a bit set by a handler running between the two).
 *   - mailbox, idle, activity, progress ARE shared with other threads: C11 atomics, each
 *     with the ordering its comment names.
 * A handler that finds masked set records the source in pending and returns; restore of
 * key 0 clears the flag, then replays every pending source (and the mailbox) with the flag
 * set during each dispatch, so each held signal is delivered exactly once. Several
 * signals of one source while masked coalesce into one (like an IRR bit; the host also
 * coalesces a blocked signal only for standard signals - these are RT signals, so with
 * HOSTED_HARD_MASK each one queued is delivered).
 *
 * -DHOSTED_HARD_MASK=1 masks for real: save/restore are pthread_sigmask of every source
 * signal and SIGRTMIN (a system call each), and the handler always dispatches.
 */
#define _GNU_SOURCE
#include "hosted.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <execinfo.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* 1 in a ThreadSanitizer build (gcc: __SANITIZE_THREAD__; clang: __has_feature) */
#if defined(__SANITIZE_THREAD__)
#define HOSTED_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HOSTED_TSAN 1
#endif
#endif
#ifndef HOSTED_TSAN
#define HOSTED_TSAN 0
#endif
/* 1: a source masked "at the controller" stays unblocked in the host and its handler
 * holds the request in the soft pending set instead (like the IRR). The TSan build only:
 * ThreadSanitizer runs a deferred signal's handler on a copy of its context and then
 * restores the signal mask it saved itself, so pthread_sigmask calls made inside a
 * handler (a handler's level change) are undone - the host's mask then disagreed with
 * ctl_mask and the device tests hung (a source left blocked for good). Same semantics,
 * no system call: the TSan build checks races, never timing. */
#define HOSTED_CTL_SOFT HOSTED_TSAN

/* irq.pending bit 31: a frame call (hosted_frame_call) waits for this vCPU; bits
 * 0..HOSTED_NSRC-1 are held sources. Keeping it in `pending` lets every enable's
 * existing check (arch_irq_restore's fast path) notice it. */
#define PEND_FRAME (1u << 31)

#define SIG_WAKE (SIGRTMIN)
#define SIG_SRC(s) (SIGRTMIN + 1 + (int)(s))
#define ALTSTACK_BYTES (64 * 1024)

struct vcpu {
	unsigned id;
	pid_t tid;			/* written before the thread runs entry; read-only after */
	pthread_t thread;
	/* masked, pending, mailbox: see struct hosted_irq_cpu in hosted.h */
	struct hosted_irq_cpu irq;
	/* 1 while in hosted_idle. seq_cst with the mailbox accesses (Dekker pattern: a
	 * sender sees idle or the sleeper sees the mail). */
	_Atomic int idle;
	/* Written by the owner at hook points, read by the watchdog: progress and halted
	 * relaxed (a report, no data depends on them), activity release/acquire (the text). */
	_Atomic(const char *) activity;
	_Atomic unsigned long progress;
	_Atomic bool halted;		/* in arch_halt_forever: a hang that uses no CPU */
	_Atomic int done;		/* entry returned (release) */
	/* Owner and its handlers: sources masked "at the controller" (hosted_source_mask),
	 * bit s = source s; the interrupted signal contexts (ucontext_t *) of the source
	 * handlers running on this thread, innermost last, so a controller mask changed in
	 * a handler is written into them and survives sigreturn; set by a handler that asks
	 * the interrupted context to resume masked (hosted_trap_resume_masked). */
	uint32_t ctl_mask;
	void *trap_uc[16];
	unsigned trap_depth;
	volatile sig_atomic_t resume_masked;
	/* Preemption (hosted_frame_call; docs/hosted-port.md "Threads on the hosted port").
	 * Owner and its handlers only, each handler restoring what it found (the handler
	 * runs on this thread between two instructions, so plain fields suffice, as for
	 * trap_depth): deliver_depth = handlers running (nested ones included); outer_on =
	 * the outermost one interrupted a context with IRQs on; sig_depth = on_source
	 * frames on this thread (0: thread context); frame_hold > 0: a thread-context
	 * replay leaves the frame call pending (hosted_idle's stretch with every source
	 * blocked). */
	unsigned deliver_depth, sig_depth, frame_hold;
	bool outer_on;
	/* Per STACK, not per vCPU: the running context's values, swapped by every context
	 * switch (hosted_stack_state_swap, called by context.c before the stack switch with
	 * IRQs off; the context switched to resumes on this thread). Owner and its handlers,
	 * each handler restoring what it found (or, for frame_fn, taking what it runs).
	 * frame_nest = 1 while a frame call (frame_call_signal or frame_call_thread) is
	 * active on this stack: no second one starts on it (the bound below);
	 * stack_sigframes = on_source frames on this stack; frame_fn = the call granted to
	 * code on this stack (hosted_frame_call), with PEND_FRAME in irq.pending, until it
	 * runs ON THIS STACK: a request recorded while this stack's frame call is active
	 * waits for its fn to return, also when fn switches threads in between (the switch
	 * takes the request along with the stack; before, it stayed with the vCPU and the
	 * next enable on the thread switched to ran it there - fn running on a stack it
	 * believed it had switched away from). */
	unsigned frame_nest, stack_sigframes;
	void (*frame_fn)(void);
	/* The storm's accounting of raises aimed at this vCPU (hosted_source_counts), per
	 * source: raised by the sender (any thread) before its tgkill; delivered / coalesced
	 * by this vCPU's handler, per host arrival of a raise (si_code SI_TKILL): delivered
	 * = dispatched, or recorded into a clear pending bit (dispatched once, later);
	 * coalesced = recorded into a bit already set (a controller's IRR takes one request
	 * per source), or a tgkill the host refused (EAGAIN: the RT signal queue is full),
	 * counted by the sender. Relaxed: counts, no data depends on them; a reader waits
	 * for raised = delivered + coalesced (the host's queue drained). */
	_Atomic unsigned long src_raised[HOSTED_NSRC], src_delivered[HOSTED_NSRC],
		src_coalesced[HOSTED_NSRC];
	/* host-core yields of this vCPU's spins (hosted_relax_yield): the owner adds,
	 * anyone reads (relaxed: a count) */
	_Atomic unsigned long relax_yields;
	timer_t clock;			/* owner only */
	bool clock_armed;		/* owner only */
	void (*entry)(unsigned);
	char *altstack;
} __attribute__((aligned(64)));

static struct vcpu vcpus[HOSTED_MAX_CPUS];
static unsigned nvcpus;			/* set before any vCPU starts */
static bool oversubscribed, fifo;	/* set before any vCPU starts */
static _Thread_local struct vcpu *self;
_Thread_local struct hosted_irq_cpu *hosted_irq_self;	/* = &self->irq */
static unsigned watchdog_s = 10;	/* set before hosted_start */
static _Atomic unsigned long clock_misrouted;
/* Maxima over every stack and delivery (hosted_stack_sigframes_max): on_source frames on
 * one stack at once, and one frame's size (the interrupted stack pointer minus the
 * handler's own frame: the kernel's signal frame with the xsave area, the red zone,
 * alignment). Relaxed CAS-max: statistics. */
static _Atomic unsigned sigframes_max;
static _Atomic unsigned long sigframe_bytes_max;

struct source { hosted_handler_t handler; void *arg; };
/* Written by hosted_source_register before hosted_start (thread creation publishes them
 * to the vCPUs); read-only while vCPUs run. */
static struct source sources[HOSTED_NSRC];
static hosted_ipi_handler_t ipi_handler;

static pthread_mutex_t console_lock = PTHREAD_MUTEX_INITIALIZER;
/* The kernel's fault note (kernel_fault_note through kport.c): set before hosted_start. */
static hosted_fault_note_t fault_note;

static void die(const char *what)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "hosted: %s: %s\n", what, strerror(errno));

	if (write(2, buf, (size_t)n) < 0) { /* nothing left to report to */ }
	_exit(HOSTED_EXIT_FAIL);
}

static sigset_t src_set(void)	/* every source signal (what HOSTED_HARD_MASK masks) */
{
	sigset_t s;

	sigemptyset(&s);
	for (unsigned i = 0; i < HOSTED_NSRC; i++)
		sigaddset(&s, SIG_SRC(i));
	return s;
}

static sigset_t irq_set(void)	/* every source signal and the wake signal */
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIG_WAKE);
	for (unsigned i = 0; i < HOSTED_NSRC; i++)
		sigaddset(&s, SIG_SRC(i));
	return s;
}

/* ---- dispatch -------------------------------------------------------------------- */

static void run_source(struct vcpu *v, unsigned src)
{
	struct source *s = &sources[src];

	(void)v;
	if (s->handler)
		s->handler(src, s->arg);
}

static void run_mailbox(struct vcpu *v)
{
	uint32_t bits = atomic_exchange_explicit(&v->irq.mailbox, 0, memory_order_acquire);

	if (bits && ipi_handler)
		ipi_handler(v->id, bits);
}

/* A delivery begins/ends: the outermost records whether it interrupted IRQs-on code. */
static inline void deliver_enter(struct vcpu *v, bool interrupted_on)
{
	if (v->deliver_depth++ == 0)
		v->outer_on = interrupted_on;
}

static inline void deliver_leave(struct vcpu *v)
{
	v->deliver_depth--;
}

static void frame_call_thread(struct vcpu *v);

/* Deliver everything held, with the flag set during each dispatch; the flag is clear on
 * entry and on return. Then, in thread context, a frame call a handler asked for. */
static void replay(struct vcpu *v)
{
	for (;;) {
		uint32_t held = atomic_exchange_explicit(&v->irq.pending, 0, memory_order_relaxed);
		bool mail = atomic_load_explicit(&v->irq.mailbox, memory_order_relaxed) != 0;
		/* A source masked at the "controller" after the soft flag took it stays held:
		 * an 8259A keeps such a request in its IRR and delivers it only once it is
		 * unmasked (ctl_write's unmask replays it). Dispatching it here would be a
		 * delivery the level should have held (spl-pessim counted them as
		 * violations under the serial workload). */
		uint32_t keep = held & (v->ctl_mask | PEND_FRAME);	/* the frame call: below */
		if (keep) {
			atomic_fetch_or_explicit(&v->irq.pending, keep, memory_order_relaxed);
			held &= ~keep;
		}

		if (!held && !mail)
			break;
		v->irq.masked = 1;
		atomic_signal_fence(memory_order_seq_cst);
		deliver_enter(v, true);		/* replay runs with the flag clear on entry */
		for (unsigned s = 0; held; s++, held >>= 1)
			if (held & 1)
				run_source(v, s);
		if (mail)
			run_mailbox(v);
		deliver_leave(v);
		atomic_signal_fence(memory_order_seq_cst);
		if (v->resume_masked) {	/* a handler asked: the restorer resumes masked */
			v->resume_masked = 0;
			return;
		}
		v->irq.masked = 0;
	}
	frame_call_thread(v);
}

/* ---- preemption: the frame call ------------------------------------------------- */

/* From a handler (IRQs off): the outermost delivery of IRQs-on code asks that fn run
 * before that code resumes. arch_frame_call (context.c) is this. */
bool hosted_frame_call(void (*fn)(void))
{
	struct vcpu *v = self;

	if (!v || !fn || v->deliver_depth != 1 || !v->outer_on)
		return false;
	/* one pending per vCPU, like an IRR bit: a request while one waits (a delivery
	 * inside a frame call's window, whose call runs once fn returns; or one held for
	 * the next enable) is refused - the pending call runs, and a granted request is
	 * always run exactly once */
	if (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME)
		return false;
	v->frame_fn = fn;
	atomic_fetch_or_explicit(&v->irq.pending, PEND_FRAME, memory_order_relaxed);
	return true;
}

static void (*frame_take(struct vcpu *v))(void)
{
	void (*fn)(void) = v->frame_fn;

	v->frame_fn = NULL;
	atomic_fetch_and_explicit(&v->irq.pending, ~PEND_FRAME, memory_order_relaxed);
	return fn;
}

/* fn returns with IRQs on (the interrupted code resumes with them on); if it did not,
 * they are turned on here. */
static void frame_call_done(void)
{
	if (!hosted_irq_enabled())
		hosted_irq_enable();
}

/* Thread context, IRQs on, the enabled state's host mask: run a pending frame call (the
 * end of a replay from an enable or poll point; the TSan build's only path). fn may
 * switch threads; this thread resumes on the same vCPU (arch_if.h), so `v` stays valid. */
static void frame_call_thread(struct vcpu *v)
{
	/* A loop, not recursion: a frame call asked for by a replay at frame_call_done's
	 * enable waits (frame_hold) for this loop's next round, so a storm of requests
	 * never stacks fn calls. frame_hold is held only around frame_call_done, which does
	 * not switch threads (fn may: it is outside the hold). */
	while (!(v->sig_depth || v->deliver_depth || v->frame_hold || v->frame_nest ||
		 v->irq.masked ||
		 !(atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME))) {
		void (*fn)(void) = frame_take(v);

		if (!fn)
			break;
		v->frame_nest = 1;	/* this stack's one frame call (see frame_call_signal) */
		fn();
		v = self;	/* fn may have switched threads: re-read, never trust a cached vCPU */
		v->frame_hold++;
		frame_call_done();
		v->frame_hold--;
		v->frame_nest = 0;
	}
}

/* The tail of the outermost on_source, the interrupted code had IRQs on: run fn with
 * the flag clear and that code's host signal mask - not the handler's (sa_mask blocks
 * every source: a thread fn switched to could never be interrupted). The mask is the
 * enabled state's, computed rather than copied from uc_sigmask: an idle vCPU's
 * sigsuspend frame holds the pre-sleep mask, every source blocked. The handler then
 * finishes with the sources blocked again, and sigreturn installs the mask as fn left
 * it (controller masks other threads wrote meanwhile included), not the stale one in
 * the frame.
 *
 * The bound (one frame call per stack; docs/hosted-port.md "Interrupt storms"). From the
 * unblock below until the re-block, this stack is IRQs-on code: a source may be
 * delivered in the middle of it - inside the unblock itself, before fn has run a single
 * instruction, as a storm from another vCPU does every few microseconds. Such a
 * delivery is a normal one (its handler runs: IRQs are on), but frame_nest is set, so
 * a frame call its handler asks for is only recorded (PEND_FRAME, like an IRR bit) and
 * its on_source returns, popping its frame; this loop runs the request once fn has
 * returned, in THIS frame. Without frame_nest each such delivery started its own frame
 * call from inside the unblock, before the outer fn had run (so before the kernel's own
 * guard, in_preempt, was set): a frame call per delivery, nested without limit, and at
 * ~3.7 KB per signal frame (AVX-512 state) four filled a 16 KiB thread stack.
 * frame_nest is per stack (context.c swaps it at every switch): a thread fn switched to
 * runs with its own value, 0 unless it is itself resumed inside its frame call; so a
 * storm on the thread switched to preempts it as usual.
 * What a stack can hold at once, then: S1, the on_source frame whose frame call is
 * active (kept while fn is switched out); S2, one more dispatching on_source frame,
 * delivered while S1's frame call runs IRQs-on code (it cannot frame-call, and inside
 * it the sources are blocked by sa_mask); S3, one recording on_source frame (the flag
 * set: it only records the source), possible inside S2 when a handler unmasks a source
 * at the controller, whose held signal the host delivers at once. Three signal frames
 * (HOSTED_SIGFRAMES_BOUND), counted per stack (stack_sigframes) for the storm test. */
static void frame_call_signal(struct vcpu *v, ucontext_t *uc)
{
	sigset_t run = uc->uc_sigmask, all = irq_set(), cur;

	if (!(atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME))
		return;
	for (unsigned i = 0; i < HOSTED_NSRC; i++) {
		if (v->ctl_mask & (1u << i))
			sigaddset(&run, SIG_SRC(i));
		else
			sigdelset(&run, SIG_SRC(i));
	}
	sigaddset(&run, SIG_WAKE);
	v->frame_nest = 1;	/* before the unblock: a delivery inside it sees it */
	atomic_signal_fence(memory_order_seq_cst);
	pthread_sigmask(SIG_SETMASK, &run, NULL);
	for (;;) {
		/* a request made while a delivery left the flag set (it asked the interrupted
		 * code to resume masked) waits for the next enable (replay's frame_call_thread) */
		void (*fn)(void) = v->irq.masked ? NULL : frame_take(v);

		if (fn) {
			fn();
			v = self;	/* fn may have switched threads and back: re-read */
			frame_call_done();
			continue;
		}
		pthread_sigmask(SIG_BLOCK, &all, &cur);
		/* a delivery between the last frame_take and the block asked for another:
		 * run it here too (the sources unblocked again), never leave it behind */
		if (v->irq.masked ||
		    !(atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME))
			break;
		pthread_sigmask(SIG_SETMASK, &cur, NULL);
	}
	uc->uc_sigmask = cur;
	atomic_signal_fence(memory_order_seq_cst);
	v->frame_nest = 0;
}

/* Count one more on_source frame on this stack, and the maxima. */
static void sigframe_enter(struct vcpu *v, void *uc, void *here)
{
	unsigned n = ++v->stack_sigframes;
	unsigned m = atomic_load_explicit(&sigframes_max, memory_order_relaxed);

	while (n > m && !atomic_compare_exchange_weak_explicit(&sigframes_max, &m, n,
							       memory_order_relaxed,
							       memory_order_relaxed))
		;
	/* the interrupted stack pointer minus this frame: the kernel's signal frame. Not in
	 * the TSan build: TSan's own handler takes the signal and returns (its frame gone),
	 * and runs ours later from an interceptor with a copy of the context, so the
	 * distance there is TSan's interceptor frames, not a signal frame */
	uintptr_t sp = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
	uintptr_t at = (uintptr_t)here;
	if (!HOSTED_TSAN && sp > at && sp - at < 65536) {
		unsigned long b = (unsigned long)(sp - at);
		unsigned long bm = atomic_load_explicit(&sigframe_bytes_max, memory_order_relaxed);

		while (b > bm && !atomic_compare_exchange_weak_explicit(&sigframe_bytes_max, &bm, b,
									memory_order_relaxed,
									memory_order_relaxed))
			;
	}
}

static void on_source(int sig, siginfo_t *si, void *uc)
{
	struct vcpu *v = self;
	int saved_errno = errno;

	if (!v)
		return;		/* not a vCPU (main or watchdog thread): dropped */
	sigframe_enter(v, uc, __builtin_frame_address(0));
	if (sig == SIG_WAKE) {
		/* only ends a sleep; the mailbox is read by the interrupted hosted_idle */
		v->stack_sigframes--;
		errno = saved_errno;
		return;
	}
	unsigned src = (unsigned)(sig - SIGRTMIN - 1);
	bool raised = si->si_code == SI_TKILL;	/* hosted_source_raise's (the storm's count) */

	if (si->si_code == SI_TIMER && (unsigned)si->si_value.sival_int != v->id)
		atomic_fetch_add_explicit(&clock_misrouted, 1, memory_order_relaxed);
	if ((!HOSTED_HARD_MASK && v->irq.masked) || (HOSTED_CTL_SOFT && (v->ctl_mask & (1u << src)))) {
		/* held: one bit per source, so a request that finds its bit set coalesces with
		 * the one already held (a controller's IRR) */
		uint32_t was = atomic_fetch_or_explicit(&v->irq.pending, 1u << src,
							memory_order_relaxed);
		if (raised)
			atomic_fetch_add_explicit((was & (1u << src)) ? &v->src_coalesced[src] :
						  &v->src_delivered[src], 1, memory_order_relaxed);
	} else {
		if (raised)
			atomic_fetch_add_explicit(&v->src_delivered[src], 1, memory_order_relaxed);
		sig_atomic_t was = v->irq.masked;
		bool pushed = v->trap_depth < sizeof(v->trap_uc) / sizeof(v->trap_uc[0]);

		if (pushed)
			v->trap_uc[v->trap_depth++] = uc;
		v->sig_depth++;
		v->irq.masked = 1;
		atomic_signal_fence(memory_order_seq_cst);
		deliver_enter(v, !was);
		run_source(v, src);
		deliver_leave(v);
		atomic_signal_fence(memory_order_seq_cst);
		if (v->resume_masked) {
			v->resume_masked = 0;
			was = 1;
			if (HOSTED_HARD_MASK) {	/* the interrupted context's mask: sources off */
				sigset_t all = src_set();
				sigorset(&((ucontext_t *)uc)->uc_sigmask,
					 &((ucontext_t *)uc)->uc_sigmask, &all);
			}
		}
		if (!HOSTED_HARD_MASK && !was) {
			/* Back to an enabled context: deliver what arrived during the handler
			 * (a source the handler unmasked, mail), as x86's iret to IF=1 takes a
			 * pending request at once. Without this a request held in the soft set
			 * waited for the interrupted code's next enable - never, for code
			 * spinning on a flag (spl-pessim's disk blocks waited for an unrelated
			 * clock tick each, and a request missed its 2 s bound). Still inside
			 * this frame (pushed), so controller masks the replay writes reach the
			 * interrupted context's signal mask. */
			v->irq.masked = 0;
			atomic_signal_fence(memory_order_seq_cst);
			if ((atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & ~v->ctl_mask) |
			    atomic_load_explicit(&v->irq.mailbox, memory_order_relaxed))
				replay(v);
			was = v->irq.masked;	/* 1 if a replayed handler asked to resume masked */
		}
		if (pushed)
			v->trap_depth--;
		v->sig_depth--;
		v->irq.masked = was;
		/* The outermost delivery is over and returns to IRQs-on code: a frame call a
		 * handler asked for runs now, in this frame (not in the TSan build: its
		 * handler runs on a copy of the context with every signal blocked; the next
		 * poll point in thread context takes it there). */
		if (!HOSTED_TSAN && !was && v->sig_depth == 0 && v->deliver_depth == 0 &&
		    v->frame_nest == 0 &&
		    (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME))
			frame_call_signal(v, uc);
		v = self;	/* a frame call may have switched threads and back */
	}
	v->stack_sigframes--;
	errno = saved_errno;
}

/* ---- 2. on-chip masking ---------------------------------------------------------- */

#if HOSTED_HARD_MASK
/* The sources not masked at the controller (ctl_mask): what an on-chip enable unblocks. */
static sigset_t src_set_enabled(struct vcpu *v)
{
	sigset_t s;

	sigemptyset(&s);
	for (unsigned i = 0; i < HOSTED_NSRC; i++)
		if (!(v->ctl_mask & (1u << i)))
			sigaddset(&s, SIG_SRC(i));
	return s;
}

/* On a non-vCPU thread (main, watchdog) there is no flag: the signal mask only. */
unsigned long hosted_irq_save(void)
{
	struct vcpu *v = self;
	sigset_t all = src_set(), old;

	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (!v)
		return sigismember(&old, SIG_SRC(0)) ? 1 : 0;
	unsigned long key = (unsigned long)v->irq.masked;
	v->irq.masked = 1;	/* after the block: a handler never sees masked == 0 with
				   the sources blocked by this save */
	atomic_signal_fence(memory_order_seq_cst);
	return key;
}

void hosted_irq_restore(unsigned long key)
{
	struct vcpu *v = self;

	if (key)
		return;
	if (!v) {
		sigset_t all = src_set();
		pthread_sigmask(SIG_UNBLOCK, &all, NULL);
		return;
	}
	atomic_signal_fence(memory_order_seq_cst);
	v->irq.masked = 0;
	sigset_t on = src_set_enabled(v);

	pthread_sigmask(SIG_UNBLOCK, &on, NULL);	/* held signals are delivered here */
	if (atomic_load_explicit(&v->irq.mailbox, memory_order_relaxed) ||
	    (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME))
		hosted_poll();	/* blocks, runs the mailbox, unblocks: no recursion; then
				   a pending frame call */
}

bool hosted_irq_enabled(void)
{
	if (self)
		return !self->irq.masked;
	sigset_t cur;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	return !sigismember(&cur, SIG_SRC(0));
}
#else
/* hosted_irq_save/restore/enabled are inline in hosted.h; this is restore's slow path. */
void hosted_irq_replay(void)
{
	replay(self);
}
#endif

void hosted_irq_disable(void)
{
	(void)hosted_irq_save();
}

void hosted_irq_enable(void)
{
	hosted_irq_restore(0);
}

/* ---- 3. sources, clock, IPIs ------------------------------------------------------ */

void hosted_source_register(unsigned src, hosted_handler_t handler, void *arg)
{
	if (src >= HOSTED_NSRC)
		return;
	sources[src] = (struct source){ handler, arg };
}

void hosted_source_raise(unsigned src, unsigned cpu)
{
	if (src >= HOSTED_NSRC || cpu >= nvcpus)
		return;
	atomic_fetch_add_explicit(&vcpus[cpu].src_raised[src], 1, memory_order_relaxed);
	/* a raise the host cannot queue (EAGAIN: the RT signal queue is full, a storm
	 * faster than the target takes them) is coalesced, as a request into a set IRR
	 * bit - never an error */
	if (syscall(SYS_tgkill, getpid(), vcpus[cpu].tid, SIG_SRC(src)) != 0)
		atomic_fetch_add_explicit(&vcpus[cpu].src_coalesced[src], 1, memory_order_relaxed);
}

void hosted_source_counts(unsigned cpu, unsigned src, struct hosted_src_counts *c)
{
	*c = (struct hosted_src_counts){ 0 };
	if (src >= HOSTED_NSRC || cpu >= nvcpus)
		return;
	/* relaxed: counts; raises still queued in the host are in raised only, so a reader
	 * that wants the identity waits for the queue to drain */
	c->delivered = atomic_load_explicit(&vcpus[cpu].src_delivered[src], memory_order_relaxed);
	c->coalesced = atomic_load_explicit(&vcpus[cpu].src_coalesced[src], memory_order_relaxed);
	c->raised = atomic_load_explicit(&vcpus[cpu].src_raised[src], memory_order_relaxed);
}

/* IRQs off (the switch's contract), so no handler dispatches meanwhile: none grants a
 * frame call or reads frame_nest; one arriving here only records a source in
 * irq.pending, so the PEND_FRAME bit moves with atomic RMWs (relaxed, like every access
 * of pending: the handler runs on this thread, nothing else is ordered by it) that
 * never lose such a bit. */
void hosted_stack_state_swap(struct hosted_stack_state *save,
			     const struct hosted_stack_state *load)
{
	struct vcpu *v = self;

	if (!v)
		return;
	save->frame_nest = v->frame_nest;
	save->sigframes = v->stack_sigframes;
	save->frame_fn = (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME) ?
			 frame_take(v) : NULL;
	v->frame_nest = load->frame_nest;
	v->stack_sigframes = load->sigframes;
	if (load->frame_fn) {
		v->frame_fn = load->frame_fn;
		atomic_fetch_or_explicit(&v->irq.pending, PEND_FRAME, memory_order_relaxed);
	}
}

unsigned hosted_stack_sigframes_max(void)
{
	return atomic_load_explicit(&sigframes_max, memory_order_relaxed);
}

unsigned long hosted_sigframe_bytes_max(void)
{
	return atomic_load_explicit(&sigframe_bytes_max, memory_order_relaxed);
}

/* The hosted analog of a write to the interrupt controller: a system call. Inside a
 * source handler the change is also written into the interrupted contexts' saved masks,
 * which sigreturn would otherwise put back. In the hard build an unmask while on-chip
 * masking is on changes only ctl_mask: the restore unblocks the source. */
/* Mask the sources in `on` and unmask those in `off` at the "controller" of the calling
 * vCPU: at most one pthread_sigmask per direction, as an 8259A takes one IMR write for
 * every line it changes. */
static void ctl_write_set(uint32_t on, uint32_t off)
{
	struct vcpu *v = self;
	sigset_t son, soff;

	on &= (1u << HOSTED_NSRC) - 1;
	off &= ((1u << HOSTED_NSRC) - 1) & ~on;
	if (!on && !off)
		return;
	sigemptyset(&son);
	sigemptyset(&soff);
	for (unsigned src = 0; src < HOSTED_NSRC; src++) {
		if (on & (1u << src))
			sigaddset(&son, SIG_SRC(src));
		if (off & (1u << src))
			sigaddset(&soff, SIG_SRC(src));
	}
	if (v) {
		v->ctl_mask = (v->ctl_mask | on) & ~off;
		for (unsigned i = 0; !HOSTED_CTL_SOFT && i < v->trap_depth; i++) {
			ucontext_t *uc = v->trap_uc[i];

			for (unsigned src = 0; src < HOSTED_NSRC; src++) {
				if (on & (1u << src))
					sigaddset(&uc->uc_sigmask, SIG_SRC(src));
				if (off & (1u << src))
					sigdelset(&uc->uc_sigmask, SIG_SRC(src));
			}
		}
	}
	if (on && !(HOSTED_CTL_SOFT && v))
		pthread_sigmask(SIG_BLOCK, &son, NULL);
	if (off && !(HOSTED_HARD_MASK && v && v->irq.masked) && !(HOSTED_CTL_SOFT && v))
		pthread_sigmask(SIG_UNBLOCK, &soff, NULL);
	/* unmasked with a request held in the soft pending set (replay kept it): deliver it
	 * now if interrupts are on, else the next enable/restore does */
	if (off && v && !HOSTED_HARD_MASK && !v->irq.masked &&
	    (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & off))
		replay(v);
}

static void ctl_write(unsigned src, bool masked)
{
	if (src < HOSTED_NSRC)
		ctl_write_set(masked ? 1u << src : 0, masked ? 0 : 1u << src);
}

bool hosted_source_held(unsigned src)
{
	struct vcpu *v = self;
	sigset_t p;

	if (src >= HOSTED_NSRC)
		return false;
	sigpending(&p);
	return sigismember(&p, SIG_SRC(src)) ||
	       (v && (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & (1u << src)));
}

void hosted_source_mask_set(uint32_t mask, uint32_t unmask)
{
	ctl_write_set(mask, unmask);
}

void hosted_source_mask(unsigned src)
{
	ctl_write(src, true);
}

void hosted_source_unmask(unsigned src)
{
	ctl_write(src, false);
}

void hosted_trap_resume_masked(void)
{
	if (self)
		self->resume_masked = 1;
}

void hosted_clock_start(uint64_t period_ns, bool periodic)
{
	struct vcpu *v = self;
	struct itimerspec its = { 0 };

	if (!v->clock_armed) {
		struct sigevent ev = { 0 };

		ev.sigev_notify = SIGEV_THREAD_ID;
		ev.sigev_signo = SIG_SRC(HOSTED_SRC_CLOCK);
		ev.sigev_value.sival_int = (int)v->id;
		ev._sigev_un._tid = v->tid;
		if (timer_create(CLOCK_MONOTONIC, &ev, &v->clock) != 0)
			die("timer_create");
		v->clock_armed = true;
	}
	its.it_value.tv_sec = (time_t)(period_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(period_ns % 1000000000u);
	if (periodic)
		its.it_interval = its.it_value;
	if (timer_settime(v->clock, 0, &its, NULL) != 0)
		die("timer_settime");
}

void hosted_clock_stop(void)
{
	struct vcpu *v = self;

	if (v->clock_armed) {
		timer_delete(v->clock);
		v->clock_armed = false;
	}
}

unsigned long hosted_clock_misrouted(void)
{
	return atomic_load_explicit(&clock_misrouted, memory_order_relaxed);
}

void hosted_ipi_set_handler(hosted_ipi_handler_t handler)
{
	ipi_handler = handler;
}

void hosted_ipi_send(unsigned cpu, uint32_t bits)
{
	struct vcpu *t = &vcpus[cpu];

	if (cpu >= nvcpus || !bits)
		return;
	atomic_fetch_or_explicit(&t->irq.mailbox, bits, memory_order_seq_cst);
	if (atomic_load_explicit(&t->idle, memory_order_seq_cst))
		syscall(SYS_tgkill, getpid(), t->tid, SIG_WAKE);
}

/* arch_cpu_relax of the TSan build (arch_impl.h): pass one interceptor so TSan runs a
 * signal it deferred (clock_gettime: vDSO, no system call; only with IRQs on - masked, the
 * handler would only record it), then take a frame call or mail as a poll point. */
void hosted_relax_tsan(void)
{
	struct vcpu *v = self;

	__asm__ volatile("pause" ::: "memory");
	if (!v)
		return;
	if (++v->irq.relax_spins >= HOSTED_RELAX_YIELD_STEPS)
		hosted_relax_yield();
	if (HOSTED_TSAN && !v->irq.masked) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
	}
	if ((atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & PEND_FRAME) |
	    atomic_load_explicit(&v->irq.mailbox, memory_order_relaxed))
		hosted_poll();
}

/* arch_cpu_relax's every HOSTED_RELAX_YIELD_STEPS-th step (hosted.h): with more vCPUs
 * than host cores, this vCPU thread goes to the back of its host run queue, so the vCPU
 * a spinner waits for (a lock holder, the next ticket, an MCS successor about to link
 * itself - any of them descheduled by the host, perhaps onto this core) gets it. A ticket
 * waiter keeps its ticket across the yield: FIFO order is unchanged, and the chain of
 * waits ends because each waiter spins at most a bounded count of steps between yields.
 * Without oversubscription nothing (each vCPU has a core; the spin is the cheapest
 * wait). Any context: sched_yield is a system call with no lock. */
void hosted_relax_yield(void)
{
	struct vcpu *v = self;

	if (!v)
		return;
	v->irq.relax_spins = 0;
	if (!oversubscribed)
		return;
	sched_yield();
	atomic_fetch_add_explicit(&v->relax_yields, 1, memory_order_relaxed);
}

unsigned long hosted_relax_yields(unsigned cpu)
{
	return cpu < nvcpus ? atomic_load_explicit(&vcpus[cpu].relax_yields,
						   memory_order_relaxed) : 0;
}

void hosted_poll(void)
{
	struct vcpu *v = self;

	if (!hosted_irq_enabled())
		return;
	if (HOSTED_HARD_MASK) {
		/* held signals were delivered when the mask was lifted; only mail is left */
		sigset_t all = src_set(), old;

		pthread_sigmask(SIG_BLOCK, &all, &old);
		/* the IPI handler runs with IRQs off, like every handler (masked also for
		 * arch_irq_enabled; an enable/disable pair inside it leaves it off) */
		v->irq.masked = 1;
		atomic_signal_fence(memory_order_seq_cst);
		deliver_enter(v, true);
		run_mailbox(v);
		deliver_leave(v);
		atomic_signal_fence(memory_order_seq_cst);
		if (v->resume_masked) {	/* a handler asked: resume masked, sources blocked */
			v->resume_masked = 0;
			return;
		}
		v->irq.masked = 0;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		frame_call_thread(v);
		return;
	}
	if (atomic_load_explicit(&v->irq.pending, memory_order_relaxed) |
	    atomic_load_explicit(&v->irq.mailbox, memory_order_relaxed))
		replay(v);
}

/* Sleep until a signal (a source or SIG_WAKE) or mail. SIG_WAKE is blocked outside this
 * function, so one sent between the check and sigsuspend stays pending and ends it. */
/* Enabling and sleeping are one step, like x86 sti; hlt: the sources are blocked in the
 * host first, so one arriving after the enable waits in the host and ends the sigsuspend
 * (which unblocks them atomically) instead of being handled just before the sleep. If
 * the enable itself delivered something (held by the soft mask, or mail), there is no
 * sleep. On return the sources not masked at the controller are unblocked again. */
#if HOSTED_TSAN
/* The TSan build's idle: no signal-mask changes at all (TSan runs a signal that arrives
 * inside its pthread_sigmask interceptor in a way that hung the vCPU there: seen in
 * 1 of ~20 device-test runs, always in the post-idle unblock). The sources are never
 * blocked in this build (HOSTED_CTL_SOFT); SIG_WAKE stays blocked outside the wait and
 * ppoll unblocks it atomically; the 1 ms timeout bounds a wakeup TSan delivered at the
 * wait's own entry (it defers signals to its interceptors). Races, not timing. */
void hosted_idle(void)
{
	struct vcpu *v = self;
	sigset_t during;

	hosted_irq_enable();	/* replays what the soft flag held */
	if (v->irq.masked)	/* a handler made the enable resume masked */
		return;
	atomic_store_explicit(&v->activity, "idle", memory_order_relaxed);
	atomic_store_explicit(&v->idle, 1, memory_order_seq_cst);
	if (!((atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & ~v->ctl_mask) |
	      atomic_load_explicit(&v->irq.mailbox, memory_order_seq_cst))) {
		struct timespec ts = { 0, 1000000 };

		sigemptyset(&during);
		sigaddset(&during, SIGQUIT);	/* the watchdog's alone */
		ppoll(NULL, 0, &ts, &during);
	}
	atomic_store_explicit(&v->idle, 0, memory_order_relaxed);
	hosted_poll();
}
#else
void hosted_idle(void)
{
	struct vcpu *v = self;
	sigset_t all = src_set(), during, ctl;
	bool ran;

	sigemptyset(&ctl);
	pthread_sigmask(SIG_BLOCK, &all, &during);
	/* requests held for sources masked at the controller do not end an idle wait */
	ran = !HOSTED_HARD_MASK &&
	      ((atomic_load_explicit(&v->irq.pending, memory_order_relaxed) & ~v->ctl_mask) |
	       atomic_load_explicit(&v->irq.mailbox, memory_order_relaxed));
	/* a frame call asked for by the replay below waits for the final hosted_poll, when
	 * the sources are unblocked again (fn must not run with them blocked) */
	v->frame_hold++;
	if (HOSTED_HARD_MASK) {	/* the flag only: the sources stay blocked until sigsuspend */
		atomic_signal_fence(memory_order_seq_cst);
		v->irq.masked = 0;
	} else {
		hosted_irq_enable();	/* replays what the soft flag held */
	}
	v->frame_hold--;
	if (v->irq.masked)	/* a handler made the enable resume masked */
		ran = true;
	atomic_store_explicit(&v->activity, "idle", memory_order_relaxed);
	atomic_store_explicit(&v->idle, 1, memory_order_seq_cst);
	if (!ran && !atomic_load_explicit(&v->irq.mailbox, memory_order_seq_cst)) {
		sigdelset(&during, SIG_WAKE);
		for (unsigned i = 0; i < HOSTED_NSRC; i++) {
			if ((v->ctl_mask & (1u << i)))
				sigaddset(&during, SIG_SRC(i));
			else
				sigdelset(&during, SIG_SRC(i));
		}
		sigsuspend(&during);
	}
	atomic_store_explicit(&v->idle, 0, memory_order_relaxed);
	/* back to the enabled state's host mask: the sources not masked at the controller */
	for (unsigned i = 0; i < HOSTED_NSRC; i++)
		if (!(v->ctl_mask & (1u << i)))
			sigaddset(&ctl, SIG_SRC(i));
	if (!v->irq.masked)
		pthread_sigmask(SIG_UNBLOCK, &ctl, NULL);
	hosted_poll();
}
#endif

/* ---- 4. console, verdict, panic, watchdog ---------------------------------------- */

void hosted_printf(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	/* interrupts off while holding the lock: a handler that prints cannot deadlock */
	unsigned long k = self ? hosted_irq_save() : 1;
	pthread_mutex_lock(&console_lock);
	for (size_t off = 0; off < (size_t)n;) {
		ssize_t w = write(1, buf + off, (size_t)n - off);
		if (w <= 0 && errno != EINTR)
			break;
		if (w > 0)
			off += (size_t)w;
	}
	pthread_mutex_unlock(&console_lock);
	if (self)
		hosted_irq_restore(k);
}

/* One context-switch count of a vCPU thread from /proc (the kernel's own count for that
 * thread); -1 if it cannot be read. open/read, no stdio: hosted_exit may run in a
 * handler (a kernel panic). */
/* /proc/self/task/<tid>/<file> into buf (NUL-terminated); false if it cannot be read. */
static bool proc_task_read(pid_t tid, const char *file, char *buf, size_t size)
{
	char path[64];

	snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, file);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, size - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return true;
}

static long proc_switches(pid_t tid, const char *key)
{
	char buf[4096];
	size_t klen = strlen(key);

	if (!proc_task_read(tid, "status", buf, sizeof buf))
		return -1;
	for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, key, klen) && l[klen] == ':')
			return strtol(l + klen + 1, NULL, 10);
	return -1;
}

/* DESIGN.md "Hosted port": the host can take a vCPU's core away (also while it holds a
 * lock or is inside a measured section); every timing run says how often it did. One
 * KSYNC line per run with each vCPU's involuntary and voluntary switches since it
 * started (the tool prints them beside the hosted tables and flags preempted runs). */
static void print_host_switches(void)
{
	char inv[HOSTED_MAX_CPUS * 12 + 8], vol[HOSTED_MAX_CPUS * 12 + 8];
	size_t a = 0, b = 0;

	for (unsigned i = 0; i < nvcpus; i++) {
		a += (size_t)snprintf(inv + a, sizeof inv - a, "%s%ld", i ? "," : "",
				      proc_switches(vcpus[i].tid, "nonvoluntary_ctxt_switches"));
		b += (size_t)snprintf(vol + b, sizeof vol - b, "%s%ld", i ? "," : "",
				      proc_switches(vcpus[i].tid, "voluntary_ctxt_switches"));
	}
	hosted_printf("KSYNC {\"kind\":\"host_switches\",\"vcpus\":%u,\"involuntary\":[%s],"
		      "\"voluntary\":[%s]}\n", nvcpus, inv, vol);
}

_Noreturn void hosted_exit(bool pass)
{
	if (nvcpus)
		print_host_switches();
	hosted_printf("hosted: verdict %s\n", pass ? "PASS" : "FAIL");
	_exit(pass ? HOSTED_EXIT_PASS : HOSTED_EXIT_FAIL);
}

void hosted_activity(const char *what)
{
	struct vcpu *v = self;

	if (!v)
		return;
	/* release: the text `what` points at (kport.c's rotating buffer) is written before
	 * the watchdog, loading the pointer with acquire, reads it */
	atomic_store_explicit(&v->activity, what, memory_order_release);
	atomic_fetch_add_explicit(&v->progress, 1, memory_order_relaxed);
}

void hosted_halted(void)
{
	if (self)
		atomic_store_explicit(&self->halted, true, memory_order_relaxed);
}

void hosted_watchdog(unsigned seconds)
{
	watchdog_s = seconds;
}

void hosted_fault_note_hook(hosted_fault_note_t fn)
{
	fault_note = fn;
}

/* async-signal-safe formatting for the panic path */
static void put(const char *s)
{
	if (write(2, s, strlen(s)) < 0) { /* stderr gone: nothing to do */ }
}

static void put_hex(uintptr_t x)
{
	char b[19] = "0x";
	int i = 18;

	b[i] = '\0';
	do {
		b[--i] = "0123456789abcdef"[x & 15];
		x >>= 4;
	} while (x && i > 2);
	put("0x");
	put(b + i);
}

static void put_dec(unsigned long x)
{
	char b[24];
	int i = 23;

	b[i] = '\0';
	do {
		b[--i] = (char)('0' + x % 10);
		x /= 10;
	} while (x);
	put(b + i);
}

static void *exe_base;	/* load address of the executable, set in hosted_start */
static char exe_path[4096];	/* its path, set in hosted_start */

/* addr2line's arguments: the executable's code addresses named in the panic */
static char a2l_hex[40][20];
static char *a2l_argv[44];
static int a2l_argc;

/* Prints code address a (and, in the executable, its offset and symbol); queues an
 * executable address for addr2line. `ret`: a return address (the call is the byte
 * before). Signal context only (no allocation). */
static void put_code(uintptr_t a, bool ret)
{
	Dl_info info = { 0 };

	put_hex(a);
	if (!dladdr((void *)a, &info) || !info.dli_fname)
		return;
	put(" ");
	put(info.dli_fname);
	put("+");
	put_hex(a - (uintptr_t)info.dli_fbase);
	if (info.dli_sname) {
		put(" ");
		put(info.dli_sname);
	}
	if (info.dli_fbase == exe_base && a2l_argc < 39) {
		uintptr_t off = a - (uintptr_t)exe_base - (ret ? 1 : 0);
		char *h = a2l_hex[a2l_argc];
		int k = 19;

		h[k] = '\0';
		do {
			h[--k] = "0123456789abcdef"[off & 15];
			off >>= 4;
		} while (off && k > 2);
		h[--k] = 'x';
		h[--k] = '0';
		a2l_argv[a2l_argc++] = h + k;
	}
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	void *frames[32];

	put("\nPANIC: vCPU ");
	if (self)
		put_dec(self->id);
	else
		put("-");
	put(": signal SIG");
	put(sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
	put(" (");
	put(sigdescr_np(sig) ? sigdescr_np(sig) : "?");
	put(") at fault address ");
	put_hex((uintptr_t)si->si_addr);
	if (fault_note) {	/* the kernel names the thread and a stack guard page hit */
		static char note[256];	/* one fault panics the process: not reentered */

		note[0] = '\0';
		if (self)
			self->irq.masked = 1;	/* the note's contract: IRQs off */
		fault_note((uint64_t)(uintptr_t)si->si_addr, note, sizeof note);
		note[sizeof note - 1] = '\0';
		if (note[0]) {
			put(" ");
			put(note);
		}
	}
	a2l_argc = 0;
	a2l_argv[a2l_argc++] = "addr2line";
	a2l_argv[a2l_argc++] = "-f";
	a2l_argv[a2l_argc++] = "-p";
	a2l_argv[a2l_argc++] = "-e";
	a2l_argv[a2l_argc++] = exe_path;	/* not /proc/self/exe: that is addr2line after exec */
	/* the interrupted context: a jump to address 0 leaves backtrace() nothing past the
	 * handler, so the faulting rip, and the words at rsp (the caller's return address
	 * when a call went to a bad pointer), read with process_vm_readv (a bad rsp gives
	 * EFAULT, not a second fault) */
	if (uc) {
		const greg_t *g = ((const ucontext_t *)uc)->uc_mcontext.gregs;
		uint64_t w[4];
		struct iovec local = { w, sizeof w }, remote = { (void *)(uintptr_t)g[REG_RSP], sizeof w };

		put("\ninterrupted at rip ");
		put_code((uintptr_t)g[REG_RIP], false);
		put(", rsp ");
		put_hex((uintptr_t)g[REG_RSP]);
		put(", rbp ");
		put_hex((uintptr_t)g[REG_RBP]);
		if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)sizeof w) {
			for (int i = 0; i < 4; i++) {
				put("\n  [rsp+");
				put_dec((unsigned long)i * 8);
				put("] ");
				put_code((uintptr_t)w[i], true);
			}
		}
	}
	put("\nbacktrace:\n");
	/* backtrace() may allocate on first use; it was warmed up in hosted_start */
	int n = backtrace(frames, 32);

	for (int i = 0; i < n; i++) {
		put("  ");
		put_code((uintptr_t)frames[i], true);
		put("\n");
	}
	char **argv = a2l_argv;
	int argc = a2l_argc;
	argv[argc] = NULL;
	/* symbolize the executable's frames (static functions too) with addr2line */
	if (argc > 5 && exe_path[0]) {
		pid_t pid = fork();

		if (pid == 0) {
			dup2(2, 1);
			execvp("addr2line", argv);
			_exit(127);
		}
		if (pid > 0) {
			put("source lines (addr2line):\n");
			waitpid(pid, NULL, 0);
		}
	}
	_exit(HOSTED_EXIT_PANIC);
}

/* CPU time (user + system, ms) a vCPU thread has used, from /proc; -1 if unreadable. */
static long proc_cpu_ms(pid_t tid)
{
	char buf[1024];

	if (!proc_task_read(tid, "stat", buf, sizeof buf))
		return -1;
	/* fields after the command's closing parenthesis: state is field 3, utime 14 */
	char *p = strrchr(buf, ')');
	unsigned long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
			 &st) != 2)
		return -1;
	long hz = sysconf(_SC_CLK_TCK);
	return hz > 0 ? (long)((ut + st) * 1000 / (unsigned long)hz) : -1;
}

/* Print what each vCPU was last doing and leave with the hang status. `stuck` marks the
 * vCPUs that made no progress (NULL: none known). `cpu_then` is each vCPU thread's CPU
 * time when its progress last changed: a hang that kept the thread on the CPU (a loop)
 * used about the whole interval since, one where the host starved it (the CI machine
 * busy elsewhere) almost none - the report says which, with the host's load. */
static _Noreturn void report_vcpus(const char *why, const unsigned *stuck, unsigned limit,
				   const unsigned long *last, const long *cpu_then)
{
	char load[64] = "?";
	int lfd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);

	if (lfd >= 0) {
		ssize_t n = read(lfd, load, sizeof load - 1);
		load[n > 0 ? n : 0] = 0;
		if (strchr(load, '\n'))
			*strchr(load, '\n') = 0;
		close(lfd);
	}
	pthread_mutex_lock(&console_lock);
	fprintf(stderr, "\n%s; host load average %s; vCPU state:\n", why, load);
	for (unsigned i = 0; i < nvcpus; i++) {
		long now_ms = proc_cpu_ms(vcpus[i].tid);
		if (now_ms >= 0 && cpu_then[i] >= 0)
			fprintf(stderr, "  vCPU %u used %ld ms of host CPU since its last progress\n",
				i, now_ms - cpu_then[i]);
		/* acquire: pairs with hosted_activity's release (the text behind it) */
		const char *a = atomic_load_explicit(&vcpus[i].activity, memory_order_acquire);
		fprintf(stderr, "  vCPU %u: %s, last activity: %s (progress %lu)\n", i,
			atomic_load_explicit(&vcpus[i].done, memory_order_acquire) ?
			/* half the limit: in a deadlock the second vCPU may reach its wait a
			 * tick after the first, and is stuck as surely (it was reported
			 * "running" now and then, the test flaked) */
			"finished" : stuck && 2 * stuck[i] >= limit ? "STUCK" :
			atomic_load_explicit(&vcpus[i].idle, memory_order_relaxed) ?
			"idle" : "running",
			a ? a : "(none)", last[i]);
	}
	fflush(stderr);
	_exit(HOSTED_EXIT_HANG);
}

/* The watchdog thread: every 100 ms it looks for vCPUs without progress (when a watchdog
 * limit is set: no progress for the limit while using at least a quarter of it in host
 * CPU time, or for 4 times the limit) and it is the one thread that takes SIGQUIT - the tool's timeout sends
 * it, and the answer is the same per-vCPU report (every other thread blocks SIGQUIT). */
static void *watchdog_main(void *arg)
{
	unsigned long last[HOSTED_MAX_CPUS];
	long cpu_then[HOSTED_MAX_CPUS];
	unsigned stuck[HOSTED_MAX_CPUS] = { 0 };
	const unsigned tick_ms = 100, limit = watchdog_s * 1000 / tick_ms;
	sigset_t quit;
	char why[96];
	(void)arg;

	sigemptyset(&quit);
	sigaddset(&quit, SIGQUIT);
	for (unsigned i = 0; i < nvcpus; i++) {
		last[i] = atomic_load_explicit(&vcpus[i].progress, memory_order_relaxed);
		cpu_then[i] = proc_cpu_ms(vcpus[i].tid);
	}
	for (;;) {
		struct timespec ts = { 0, (long)tick_ms * 1000000L };
		bool hang = false;

		if (sigtimedwait(&quit, NULL, &ts) == SIGQUIT)
			report_vcpus("SIGQUIT (the tool's timeout)", NULL, 0, last, cpu_then);
		for (unsigned i = 0; i < nvcpus; i++) {
			unsigned long p = atomic_load_explicit(&vcpus[i].progress,
							       memory_order_relaxed);
			/* finished, or asleep in hosted_idle waiting for work: not a hang */
			bool quiet = atomic_load_explicit(&vcpus[i].done, memory_order_acquire) ||
				     atomic_load_explicit(&vcpus[i].idle, memory_order_relaxed);

			stuck[i] = (p == last[i] && !quiet) ? stuck[i] + 1 : 0;
			if (p != last[i] || quiet)
				cpu_then[i] = proc_cpu_ms(vcpus[i].tid);
			last[i] = p;
			/* A hang is a vCPU that ran without progress: one the host starved (the
			 * machine busy elsewhere, the RT throttle) used little CPU meanwhile, and
			 * gets 4 times the limit before it counts (the report says which) */
			if (watchdog_s && stuck[i] >= limit) {
				long used = proc_cpu_ms(vcpus[i].tid) - cpu_then[i];
				if (used < 0 || used * 4 >= (long)watchdog_s * 1000 ||
				    stuck[i] >= 4 * limit ||
				    atomic_load_explicit(&vcpus[i].halted, memory_order_relaxed))
					hang = true;
			}
		}
		if (hang) {
			snprintf(why, sizeof why, "WATCHDOG: no progress for %u s", watchdog_s);
			report_vcpus(why, stuck, limit, last, cpu_then);
		}
	}
	return NULL;
}

/* ---- 1. vCPUs -------------------------------------------------------------------- */

unsigned hosted_cpu_id(void)
{
	return self ? self->id : ~0u;
}

unsigned hosted_ncpus(void)
{
	return nvcpus;
}

bool hosted_oversubscribed(void)
{
	return oversubscribed;
}

const char *hosted_sched_label(void)
{
	return fifo ? "SCHED_FIFO" : "best-effort scheduling";
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa = { 0 };

	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | flags;
	sa.sa_mask = irq_set();		/* sources do not nest inside a handler */
	if (sigaction(sig, &sa, NULL) != 0)
		die("sigaction");
}

/* Runs first on a vCPU thread; returns the alternate stack it replaced (a sanitizer
 * runtime's own, which it unmaps at thread exit: it gets it back first). */
static stack_t vcpu_main(struct vcpu *v)
{
	stack_t ss = { .ss_sp = v->altstack, .ss_size = ALTSTACK_BYTES }, old;
	sigset_t wake;

	self = v;
	hosted_irq_self = &v->irq;
	v->tid = (pid_t)syscall(SYS_gettid);
	if (sigaltstack(&ss, &old) != 0)
		die("sigaltstack");
	sigemptyset(&wake);
	sigaddset(&wake, SIG_WAKE);
	pthread_sigmask(SIG_BLOCK, &wake, NULL);
	return old;
}

struct start_arg { struct vcpu *v; pthread_barrier_t *ready; };

static void *vcpu_thread(void *p)
{
	struct start_arg *a = p;
	struct vcpu *v = a->v;

	stack_t prev = vcpu_main(v);
	pthread_barrier_wait(a->ready);	/* every tid known before any entry runs */
	hosted_activity("entry");
	v->entry(v->id);
	atomic_store_explicit(&v->done, 1, memory_order_release);
	hosted_clock_stop();
	if (!(prev.ss_flags & SS_DISABLE))
		sigaltstack(&prev, NULL);
	else {
		stack_t off = { .ss_flags = SS_DISABLE };
		sigaltstack(&off, NULL);
	}
	return NULL;
}

/* The machine's SCHED_FIFO hosted kernel (hosted_start): an exclusive flock on a file
 * shared by every user, kept open (so held) until this process exits. Returns false, having
 * said so, when another process holds it; true when taken or when the file cannot be
 * opened at all (nothing to coordinate with). */
static bool fifo_lock_take(void)
{
	static const char path[] = "/tmp/ksync-hosted-fifo.lock";
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);

	if (fd < 0)
		return true;
	(void)fchmod(fd, 0666);		/* another user's kernel must be able to lock it too */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return true;		/* fd stays open: the lock lives as long as we do */
	int e = errno;
	close(fd);
	if (e != EWOULDBLOCK)
		return true;
	hosted_printf("hosted: another hosted kernel runs with SCHED_FIFO vCPUs (%s is locked): "
		      "this one uses best-effort scheduling, since FIFO spinners of two kernels "
		      "on the same cores starve each other\n", path);
	return false;
}

void hosted_start(unsigned ncpus, void (*entry)(unsigned cpu))
{
	cpu_set_t allowed;
	unsigned cores[CPU_SETSIZE], ncores = 0;
	const char *env = getenv("KSYNC_HOSTED_FIFO");
	bool try_fifo = !(env && env[0] == '0');
	struct rlimit nocore = { 0, 0 };
	void *warm[2];

	if (ncpus == 0 || ncpus > HOSTED_MAX_CPUS) {
		fprintf(stderr, "hosted: %u vCPUs: 1..%d supported\n", ncpus, HOSTED_MAX_CPUS);
		_exit(HOSTED_EXIT_FAIL);
	}
	setrlimit(RLIMIT_CORE, &nocore);	/* a panic never leaves a core file */
	(void)backtrace(warm, 2);		/* load libgcc now, not in the fault handler */
	Dl_info self_info;
	if (dladdr((void *)hosted_start, &self_info))
		exe_base = self_info.dli_fbase;
	ssize_t plen = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
	exe_path[plen > 0 ? plen : 0] = '\0';
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		die("sched_getaffinity");
	for (unsigned c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cores[ncores++] = c;
	nvcpus = ncpus;
	oversubscribed = ncpus > ncores;
	/* SCHED_FIFO only when every vCPU has a core of its own: spinning FIFO threads
	 * sharing a core would starve each other. The same holds across processes: two
	 * hosted kernels started side by side with FIFO each pin vCPU i to core i, and a
	 * spinner of each, waiting for its own other vCPU queued behind the other kernel's
	 * spinner, holds its core for ever (seen: two suites, 4 FIFO threads on 2 cores,
	 * no progress for minutes). So one FIFO kernel per machine at a time, by an advisory
	 * lock held until exit; a second one runs best-effort and says why. */
	fifo = false;
	if (try_fifo && !oversubscribed && !fifo_lock_take())
		try_fifo = false;
	if (try_fifo && !oversubscribed) {
		struct sched_param sp = { .sched_priority = 1 };

		if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0) {
			if (mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
				fifo = true;
			} else {
				sp.sched_priority = 0;
				pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
			}
		}
	}
	install(SIG_WAKE, on_source, 0);
	for (unsigned i = 0; i < HOSTED_NSRC; i++)
		install(SIG_SRC(i), on_source, SA_RESTART);
	install(SIGSEGV, on_fault, SA_ONSTACK);
	install(SIGBUS, on_fault, SA_ONSTACK);
	install(SIGILL, on_fault, SA_ONSTACK);
	install(SIGFPE, on_fault, SA_ONSTACK);
	/* SIGQUIT goes to the watchdog thread alone (sigtimedwait there): blocked here before
	 * any thread starts, so every thread inherits the block */
	sigset_t quitset;
	sigemptyset(&quitset);
	sigaddset(&quitset, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &quitset, NULL);

	hosted_printf("hosted: %u vCPUs on %u host cores%s, %s\n", ncpus, ncores,
		      oversubscribed ? " (oversubscribed)" : ", pinned",
		      hosted_sched_label());

	pthread_barrier_t ready;
	struct start_arg args[HOSTED_MAX_CPUS];

	/* the vCPUs and this thread: the watchdog, started after it, reads every tid */
	pthread_barrier_init(&ready, NULL, ncpus + 1);
	for (unsigned i = 0; i < ncpus; i++) {
		struct vcpu *v = &vcpus[i];
		pthread_attr_t attr;

		v->id = i;
		v->entry = entry;
		v->altstack = malloc(ALTSTACK_BYTES);
		if (!v->altstack)
			die("malloc");
		args[i] = (struct start_arg){ v, &ready };
		pthread_attr_init(&attr);	/* inherits the policy of this thread */
		if (!oversubscribed) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(cores[i], &one);
			pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
		}
		if (pthread_create(&v->thread, &attr, vcpu_thread, &args[i]) != 0)
			die("pthread_create");
		pthread_attr_destroy(&attr);
	}
	pthread_barrier_wait(&ready);
	{	/* also without a hang limit (watchdog 0): it answers SIGQUIT */
		pthread_t wd;
		sigset_t all = irq_set(), old;

		pthread_sigmask(SIG_BLOCK, &all, &old);	/* the watchdog takes no sources */
		if (pthread_create(&wd, NULL, watchdog_main, NULL) != 0)
			die("pthread_create");
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_detach(wd);
	}
	for (unsigned i = 0; i < ncpus; i++)
		pthread_join(vcpus[i].thread, NULL);
	pthread_barrier_destroy(&ready);
	for (unsigned i = 0; i < ncpus; i++) {
		/* the vCPU exited, so its alternate stack is no longer in use */
		free(vcpus[i].altstack);
		vcpus[i].altstack = NULL;
	}
}

/* ---- 5. memory ------------------------------------------------------------------- */

#define PAGE 4096u
static char *arena;
static size_t arena_pages;
/* Free pages as a stack of indices; protected by arena_lock, taken with interrupts
 * (soft-)disabled so a handler on the same vCPU cannot deadlock on it. */
static uint32_t *free_stack;
static size_t free_top;
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

int hosted_arena_init(size_t bytes)
{
	size_t pages = bytes / PAGE;

	if (!pages || pages > UINT32_MAX)
		return -1;
	arena = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (arena == MAP_FAILED) {
		arena = NULL;
		return -1;
	}
	free_stack = malloc(pages * sizeof(*free_stack));
	if (!free_stack)
		return -1;
	arena_pages = pages;
	for (size_t i = 0; i < pages; i++)
		free_stack[i] = (uint32_t)(pages - 1 - i);
	free_top = pages;
	return 0;
}

static unsigned long arena_enter(void)
{
	unsigned long k = self ? hosted_irq_save() : 1;

	pthread_mutex_lock(&arena_lock);
	return k;
}

static void arena_leave(unsigned long k)
{
	pthread_mutex_unlock(&arena_lock);
	if (self)
		hosted_irq_restore(k);
}

void *hosted_page_alloc(void)
{
	void *p = NULL;
	unsigned long k = arena_enter();

	if (free_top)
		p = arena + (size_t)free_stack[--free_top] * PAGE;
	arena_leave(k);
	return p;
}

void hosted_page_free(void *page)
{
	char *p = page;

	if (!p || p < arena || p >= arena + arena_pages * PAGE || (p - arena) % PAGE)
		return;
	unsigned long k = arena_enter();
	free_stack[free_top++] = (uint32_t)((p - arena) / PAGE);
	arena_leave(k);
}

size_t hosted_pages_free(void)
{
	unsigned long k = arena_enter();
	size_t n = free_top;

	arena_leave(k);
	return n;
}
