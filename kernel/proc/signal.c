/*
 * signal.c - Linux signal delivery for user processes: at each return to ring 3 a
 * pending, unblocked signal takes its action - ignored, the default (terminate, with
 * the core bit for the "core" signals when RLIMIT_CORE allows it; no core file is
 * written), or a handler entered through a Linux x86-64 rt_sigframe on the user stack
 * (or the sigaltstack) - and rt_sigreturn takes the frame back. Also: the restart rules
 * of interrupted system calls, fault signals with their siginfo, rt_sigsuspend, pause,
 * rt_sigtimedwait, sigaltstack. docs/userspace.md "Signals".
 *
 * The ABI is Linux's (arch/x86/kernel/signal.c, signal_64.c; uapi asm/sigcontext.h,
 * asm/ucontext.h): rsp at handler entry points at the frame's pretcode (sa_restorer), so
 * rsp+8 is 16-byte aligned as after a call; the frame is struct rt_sigframe { pretcode;
 * struct ucontext uc; siginfo_t info; } below a 64-byte aligned 512-byte fxsave image
 * (uc.uc_mcontext.fpstate points at it), below the 128-byte red zone of the interrupted
 * code; rdi = signo, rsi = &info, rdx = &uc, rax = 0. The handler's mask: the old one |
 * sa_mask | the signal (unless SA_NODEFER); SA_RESETHAND resets the action. A frame that
 * cannot be written (bad stack) ends the process with SIGSEGV, as Linux's force_sigsegv.
 *
 * Papers: Massalin & Pu 1991 (Synthesis), "Kernel calls" and "Memory management": a fault
 * that the kernel does not resolve is the process's, delivered to it as a signal (here to
 * its handler if it has one); Hartman & Ousterhout (Sprite) section 2: a process blocked in
 * a monitor's condition wait is interruptible by a signal - the call returns EINTR, or is
 * made again (SA_RESTART).
 *
 * Shared state: the pending sets (the thread's own and its group's) and their siginfo
 * are proc.c's (proc_table_lock; proc.h); the handlers are the group's, read here under
 * proc_table_lock (proc_sigaction_get) since any thread of the group may change them;
 * everything else here is the calling thread's own (its mask - which posters read
 * relaxed to pick a thread -, the alternate stack, the trapframe it returns through).
 */
#include "kernel.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include <stddef.h>

#define NEVER_BLOCKED (PROC_SIGBIT(LX_SIGKILL) | PROC_SIGBIT(LX_SIGSTOP))
/* synchronous signals go first (Linux's SYNCHRONOUS_MASK): SEGV BUS ILL TRAP FPE SYS */
#define SYNC_MASK (PROC_SIGBIT(11) | PROC_SIGBIT(7) | PROC_SIGBIT(4) | PROC_SIGBIT(5) | \
		   PROC_SIGBIT(8) | PROC_SIGBIT(31))
/* the default action "core" (signal(7)): QUIT ILL TRAP ABRT BUS FPE SEGV XCPU XFSZ SYS */
#define CORE_MASK (PROC_SIGBIT(3) | PROC_SIGBIT(4) | PROC_SIGBIT(5) | PROC_SIGBIT(6) | \
		   PROC_SIGBIT(7) | PROC_SIGBIT(8) | PROC_SIGBIT(11) | PROC_SIGBIT(24) | \
		   PROC_SIGBIT(25) | PROC_SIGBIT(31))
/* the default action "stop": STOP TSTP TTIN TTOU (proc_stop: until SIGCONT or SIGKILL) */
#define STOP_MASK (PROC_SIGBIT(19) | PROC_SIGBIT(20) | PROC_SIGBIT(21) | PROC_SIGBIT(22))

static struct proc_fault *note_of(struct process *p) { return &p->fault; }

/* ---- the end ------------------------------------------------------------------------- */
void signal_die(int sig)
{
	struct process *p = proc_current(), *g = proc_group(p);
	int st = sig & 0x7f;
	/* Linux sets the core bit when it dumped a core; ksync writes none, and takes
	 * RLIMIT_CORE (0 by default, as a shell's `ulimit -c 0`) as the permission */
	if ((PROC_SIGBIT(sig) & CORE_MASK) && g->rlim_core)
		st |= 0x80;
	struct proc_fault *n = note_of(p);
	if (n->sig == sig) {
		if (sig == LX_SIGSEGV || sig == LX_SIGBUS)
			kprintf("ksync: pid %d (%s): %s at 0x%lx ip 0x%lx\n", p->pid, g->comm,
				sig == LX_SIGSEGV ? "segfault" : "bus error", n->addr, n->ip);
		else
			kprintf("ksync: pid %d (%s): signal %d at ip 0x%lx\n", p->pid, g->comm,
				sig, n->ip);
	}
	proc_exit(st);	/* the whole group ends */
}

/* ---- which signal, which action ------------------------------------------------------- */
static uint64_t deliverable(const struct process *p)
{
	/* relaxed: a set bit is only a hint; proc_signal_take re-reads it under the lock,
	 * which orders the siginfo */
	uint64_t pend = proc_sig_pending(p);
	return pend & ~(p->sigmask & ~NEVER_BLOCKED);
}

static int pick(uint64_t set)
{
	uint64_t s = set & SYNC_MASK ? set & SYNC_MASK : set;
	return __builtin_ctzll(s) + 1;
}

static bool on_altstack(const struct process *p, uint64_t sp)
{
	return p->ss_size && sp > p->ss_sp && sp - p->ss_sp <= p->ss_size;
}

/* Write the rt_sigframe for signal s and point tf at the handler. false: the frame
 * could not be written (nothing changed in tf). */
static bool setup_frame(struct process *p, struct trapframe *tf, int s, const struct lx_sigaction *sa,
			const struct lx_siginfo *info, uint64_t oldmask, uint64_t fault_addr)
{
	if (!(sa->flags & LX_SA_RESTORER))
		return false;	/* x86-64 Linux: no restorer, no frame (-EFAULT: SIGSEGV) */
	if (sa->handler >= USER_VA_END)
		return false;	/* iretq to a non-canonical rip would fault in ring 0; Linux's
				   return to it ends in SIGSEGV */
	uint64_t usp = arch_uregs_sp(tf), sp = usp;
	if ((sa->flags & LX_SA_ONSTACK) && p->ss_size && !on_altstack(p, sp))
		sp = p->ss_sp + p->ss_size;
	else
		sp -= 128;	/* the interrupted code's red zone */
	sp = (sp - sizeof(struct lx_fpstate)) & ~63ull;
	uint64_t fpu = sp;
	sp = ((sp - sizeof(struct lx_rt_sigframe)) & ~15ull) - 8;
	struct lx_rt_sigframe f;
	memset(&f, 0, sizeof f);
	f.pretcode = sa->restorer;
	f.uc.uc_flags = LX_UC_SIGCONTEXT_SS | LX_UC_STRICT_RESTORE_SS;
	f.uc.uc_stack.ss_sp = p->ss_sp;
	f.uc.uc_stack.ss_size = p->ss_size;
	f.uc.uc_stack.ss_flags = !p->ss_size ? LX_SS_DISABLE : on_altstack(p, usp) ? LX_SS_ONSTACK : 0;
	arch_uregs_to_sigcontext(tf, fault_addr, &f.uc.uc_mcontext);
	f.uc.uc_mcontext.oldmask = oldmask;
	f.uc.uc_mcontext.fpstate = fpu;
	f.uc.uc_sigmask = oldmask;
	f.info = *info;
	_Static_assert(sizeof(struct lx_fpstate) == 512, "fxsave image");
	struct lx_fpstate fx;
	arch_fpu_store(&fx);
	if (copy_to_user((void *)fpu, &fx, sizeof fx) || copy_to_user((void *)sp, &f, sizeof f))
		return false;
	arch_uregs_call(tf, sa->handler, sp, (uint64_t)s,
			sp + offsetof(struct lx_rt_sigframe, info),
			sp + offsetof(struct lx_rt_sigframe, uc));
	/* the handler starts with the initial FP state, as Linux's fpu__clear_user_states */
	arch_fpu_load(NULL);
	return true;
}

/* The result of an interrupted system call, once it is known whether a handler runs
 * (Linux's handle_signal / arch_do_signal_or_restart). */
KERNEL_HOT static void restart_syscall(struct trapframe *tf, long nr, bool handler, uint64_t flags)
{
	if (nr < 0)
		return;
	long rc = (long)arch_sys_result(tf);
	switch (rc) {
	case -LX_ERESTART_RESTARTBLOCK:
	case -LX_ERESTARTNOHAND:
		if (handler) {
			arch_sys_set_result(tf, -LX_EINTR);
			return;
		}
		break;
	case -LX_ERESTARTSYS:
		if (handler && !(flags & LX_SA_RESTART)) {
			arch_sys_set_result(tf, -LX_EINTR);
			return;
		}
		break;
	case -LX_ERESTARTNOINTR:
		break;
	default:
		return;
	}
	arch_sys_restart(tf, (uint64_t)nr);
}

KERNEL_HOT void signal_user_return(struct trapframe *tf, long nr)
{
	struct process *p = proc_current();
	if (!p)
		return;
	/* relaxed: a hint, proc_affinity_apply takes it with acquire */
	if (__builtin_expect(__atomic_load_n(&p->affinity_moved, __ATOMIC_RELAXED), 0))
		proc_affinity_apply(p);
	for (;;) {
		/* relaxed: a hint, proc_stop_join re-checks under proc_table_lock */
		if (__atomic_load_n(&proc_group(p)->stopped, __ATOMIC_RELAXED) && !p->stop_joined)
			proc_stop_join(p);	/* the group is stopping: this thread too */
		uint64_t set = deliverable(p);
		if (!set)
			break;
		int s = pick(set);
		struct lx_siginfo info;
		if (!proc_signal_take(p, s, &info))
			continue;
		struct lx_sigaction sa;
		proc_sigaction_get(p, s, &sa);
		uint64_t h = sa.handler;
		if (s == LX_SIGKILL)
			signal_die(s);
		if (h == LX_SIG_IGN)
			continue;
		if (h == LX_SIG_DFL || s == LX_SIGSTOP) {
			if (proc_sig_default_ignored((unsigned)s))
				continue;
			if (PROC_SIGBIT(s) & STOP_MASK) {
				proc_stop(p, s);
				continue;
			}
			signal_die(s);
		}
		/* a handler */
		uint64_t flags = sa.flags;
		restart_syscall(tf, nr, true, flags);
		uint64_t oldmask = p->restore_sigmask ? p->saved_sigmask : p->sigmask;
		uint64_t fault_addr = arch_uregs_trapno(tf) == 14 ? note_of(p)->addr : 0;
		if (!setup_frame(p, tf, s, &sa, &info, oldmask, fault_addr))
			signal_die(LX_SIGSEGV);	/* force_sigsegv: a bad stack */
		p->restore_sigmask = false;
		uint64_t m = oldmask | sa.mask;
		if (!(flags & LX_SA_NODEFER))
			m |= PROC_SIGBIT(s);
		proc_set_sigmask(p, m & ~NEVER_BLOCKED);
		if (flags & LX_SA_RESETHAND) {
			struct lx_sigaction dfl = { LX_SIG_DFL, flags & ~LX_SA_SIGINFO,
						    sa.restorer, sa.mask };
			proc_sigaction_set(p, s, &dfl);
		}
		return;	/* one frame per return; the next at rt_sigreturn */
	}
	if (nr >= 0)
		restart_syscall(tf, nr, false, 0);
	if (p->restore_sigmask) {
		proc_set_sigmask(p, p->saved_sigmask);
		p->restore_sigmask = false;
	}
}

/* arch_if.h: before an interrupt's return to ring 3 */
void kernel_user_return(struct trapframe *tf)
{
	signal_user_return(tf, -1);
}

/* A fault's signal (Linux's force_sig_fault): blocked or ignored, it is unblocked and
 * its action reset to the default, so that it is taken now. */
void signal_force(int sig, const struct lx_siginfo *info)
{
	struct process *p = proc_current();
	bool blocked = p->sigmask & PROC_SIGBIT(sig);
	struct lx_sigaction sa;
	proc_sigaction_get(p, sig, &sa);
	if (blocked || sa.handler == LX_SIG_IGN) {
		struct lx_sigaction dfl = { LX_SIG_DFL, 0, 0, 0 };
		proc_sigaction_set(p, sig, &dfl);
		proc_set_sigmask(p, p->sigmask & ~PROC_SIGBIT(sig));
	}
	proc_signal_send(p, sig, info);
}

/* arch_if.h: an exception from ring 3 the port could not resolve */
void kernel_user_trap(struct trapframe *tf, int sig, uint64_t addr)
{
	struct process *p = proc_current();
	if (sig == LX_SIGKILL) {
		/* the out-of-memory kill (arch_if.h KERNEL_FAULT_OOM): the process whose
		 * allowed access found no page left. Not Linux's choice (the largest by
		 * oom_badness): the fault path holds the mm lock with IRQs off and cannot
		 * wait for another process to give pages back; the faulting process is the
		 * one asking. Its pages go back at its exit; its parent sees SIGKILL. */
		kprintf("ksync: Out of memory: Killed process %d (%s)\n", proc_group(p)->pid,
			proc_group(p)->comm);
		signal_die(LX_SIGKILL);
	}
	int trapno = arch_uregs_trapno(tf);
	struct lx_siginfo si = { .si_signo = sig, .si_code = LX_SI_KERNEL };
	switch (trapno) {
	case 14:	/* #PF: inside an area is a protection fault, outside a missing map;
			   SIGBUS: past a mapped file's end (Linux's BUS_ADRERR) */
		si.si_code = sig == LX_SIGBUS ? LX_BUS_ADRERR : p->mm && mm_overlaps(p->mm, addr & ~4095ull, (addr & ~4095ull) + 4096)
			     ? LX_SEGV_ACCERR : LX_SEGV_MAPERR;
		si.u.addr = addr;
		break;
	case 6:		/* #UD */
		si.si_code = LX_ILL_ILLOPN;
		si.u.addr = addr;
		break;
	case 0:		/* #DE */
		si.si_code = LX_FPE_INTDIV;
		si.u.addr = addr;
		break;
	case 17:	/* #AC */
		si.si_code = LX_BUS_ADRALN;
		si.u.addr = addr;
		break;
	default:	/* #GP (a privileged instruction, a non-canonical address), #BP:
			   SI_KERNEL, no address (Linux's do_general_protection, do_int3) */
		break;
	}
	struct proc_fault *n = note_of(p);
	n->sig = sig;
	n->addr = trapno == 14 ? addr : 0;
	n->ip = arch_uregs_ip(tf);
	signal_force(sig, &si);
	signal_user_return(tf, -1);
	n->sig = 0;
}

/* ---- rt_sigreturn --------------------------------------------------------------------- */
long sys_rt_sigreturn_impl(struct trapframe *tf)
{
	struct process *p = proc_current();
	/* the restorer's `ret` popped pretcode: the frame starts 8 bytes below rsp */
	uint64_t fa = arch_uregs_sp(tf) - 8;
	struct lx_rt_sigframe f;
	struct lx_fpstate fx;
	bool ok = !copy_from_user(&f, (const void *)fa, sizeof f);
	if (ok)
		proc_set_sigmask(p, f.uc.uc_sigmask & ~NEVER_BLOCKED);
	uint64_t fp = ok ? f.uc.uc_mcontext.fpstate : 0;
	if (ok && fp && ((fp & 63) || copy_from_user(&fx, (const void *)fp, sizeof fx)))
		ok = false;	/* Linux: an fpstate that is not 64-byte aligned is refused */
	if (ok && !arch_uregs_from_sigcontext(tf, &f.uc.uc_mcontext))
		ok = false;
	if (!ok) {
		/* Linux's signal_fault: SIGSEGV (to its handler, if it has a good one) */
		struct lx_siginfo si = { .si_signo = LX_SIGSEGV, .si_code = LX_SI_KERNEL };
		signal_force(LX_SIGSEGV, &si);
		return (long)arch_sys_result(tf);
	}
	arch_fpu_load(fp ? &fx : NULL);
	/* uc_stack: the alternate stack as it was (errors ignored, as Linux's
	 * restore_altstack; not while on it) */
	const struct lx_stack *st = &f.uc.uc_stack;
	if (!on_altstack(p, arch_uregs_sp(tf))) {
		if (st->ss_flags & LX_SS_DISABLE)
			p->ss_sp = p->ss_size = 0;
		else if (st->ss_size >= LX_MINSIGSTKSZ && !(st->ss_flags & ~LX_SS_ONSTACK))
			p->ss_sp = st->ss_sp, p->ss_size = st->ss_size;
	}
	return (long)f.uc.uc_mcontext.rax;
}

/* ---- the calls ----------------------------------------------------------------------- */
long signal_sigaltstack(uint64_t uss, uint64_t uoss, uint64_t sp)
{
	struct process *p = proc_current();
	bool on = on_altstack(p, sp);
	if (uss) {
		struct lx_stack ns;
		if (copy_from_user(&ns, (const void *)uss, sizeof ns))
			return -LX_EFAULT;
		if (on)
			return -LX_EPERM;
		int fl = ns.ss_flags & ~(1 << 31);	/* SS_AUTODISARM: accepted, not honoured */
		if (fl != 0 && fl != LX_SS_DISABLE && fl != LX_SS_ONSTACK)
			return -LX_EINVAL;
		uint64_t osp = p->ss_sp, osz = p->ss_size;
		if (fl == LX_SS_DISABLE) {
			p->ss_sp = p->ss_size = 0;
		} else {
			if (ns.ss_size < LX_MINSIGSTKSZ)
				return -LX_ENOMEM;
			p->ss_sp = ns.ss_sp;
			p->ss_size = ns.ss_size;
		}
		if (uoss) {
			struct lx_stack os = { osp, !osz ? LX_SS_DISABLE : 0, 0, osz };
			if (copy_to_user((void *)uoss, &os, sizeof os))
				return -LX_EFAULT;
		}
		return 0;
	}
	if (uoss) {
		struct lx_stack os = { p->ss_sp, !p->ss_size ? LX_SS_DISABLE : on ? LX_SS_ONSTACK : 0,
				       0, p->ss_size };
		if (copy_to_user((void *)uoss, &os, sizeof os))
			return -LX_EFAULT;
	}
	return 0;
}

/* Sleep until a signal that acts is pending: posting wakes PROC_COND_SIG. */
static void wait_signal(struct process *p)
{
	while (!proc_sig_any_acts(p))
		sched_sleep(PROC_COND_SIG);
}

long signal_suspend(uint64_t newmask, bool set)
{
	struct process *p = proc_current();
	if (set) {
		p->saved_sigmask = p->sigmask;
		p->restore_sigmask = true;
		proc_set_sigmask(p, newmask & ~NEVER_BLOCKED);
	}
	wait_signal(p);
	return -LX_ERESTARTNOHAND;	/* EINTR once the handler ran */
}

int signal_take_of(uint64_t set, struct lx_siginfo *info)
{
	struct process *p = proc_current();
	set &= ~NEVER_BLOCKED;
	for (;;) {
		uint64_t pend = proc_sig_pending(p) & set;
		if (!pend)
			return 0;
		int s = pick(pend);
		if (proc_signal_take(p, s, info))
			return s;
	}
}

