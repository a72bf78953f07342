/*
 * fshooks.c - the process layer's side of kernel/fs's hooks (vfs.h "hooks the process
 * layer overrides"; weak defaults in kernel/fs/wait.c): whether the calling process has
 * a signal pending that makes a file wait return -EINTR, and SIGPIPE for a write to a
 * pipe with no reader.
 *
 * A leaf on purpose: it reaches the calling process through proc.h's inline
 * proc_current (the CPU's proc_cur, kcpu.h), never proc.c, so kernel/fs -> these hooks -> kernel/fs is no
 * circle of files (tests/test_layout.py). That is also why fs_tty_signal reaches the
 * process table (proc.c, which calls kernel/fs) through a pointer proc_init sets: ^C
 * goes to the foreground process group (in mode=user no serial input reaches the tty
 * yet, so only a shell mode will exercise it: docs/userspace.md).
 *
 * Shared state: the calling thread's own pending set (tsig_pending: atomic or by any
 * poster, proc.h says which lock orders its siginfo; fs_sigpipe's bit carries none:
 * SI_USER from the process itself) and its group's; its sigmask, read here by the
 * thread itself, its only writer; the group's handlers (relaxed reads: proc_sig_acts). fshooks_group_signal: written
 * once by proc_init before any process runs.
 *
 * Hartman & Ousterhout (Sprite) section 2: a process blocked in a monitor's condition
 * wait must be interruptible by a signal; the wait returns, the call answers EINTR.
 */
#include "kernel.h"
#include "proc.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"


/* A pending signal that kernel_user_return would act on (proc_sig_acts: not blocked, not
 * ignored) interrupts a file wait; SIGCHLD (ignored by default) does not, or a parent
 * reading a pipe would see EINTR when its child exits. */
bool fs_signal_pending(void)
{
	struct process *p = proc_current();
	if (!p)
		return false;	/* a kernel thread (the runner draining its pipe) */
	/* relaxed: kill's atomic or; the wait re-checks after every wakeup */
	return proc_sig_any_acts(p);
}

/* A write to a pipe with no reader: SIGPIPE to the writer, whose default action ends it
 * at the return of this system call (after -EPIPE), as Linux's pipe_write does; with
 * SIGPIPE ignored the writer sees only -EPIPE. */
void fs_sigpipe(void)
{
	struct process *p = proc_current();
	if (p)	/* relaxed: read by p's own thread at its return to ring 3 */
		/* thread-directed, as Linux's send_sig(SIGPIPE, current): the writer's own set */
		__atomic_fetch_or(&p->tsig_pending, PROC_SIGBIT(LX_SIGPIPE), __ATOMIC_RELAXED);
}

/* The console's ISIG characters (^C: SIGINT, ^\: SIGQUIT) go to the foreground process
 * group (TIOCSPGRP's, tty_fg_pgrp). The posting is proc.c's, reached through a pointer
 * proc_init sets before any process runs (a call would make kernel/fs -> hooks -> proc
 * -> kernel/fs a circle of files); read once here, relaxed: written before any tty
 * input can reach a process. May run in the serial handler (proc.c takes only its
 * master lock). */
void (*fshooks_group_signal)(int sig);

void fs_tty_signal(int sig)
{
	void (*fn)(int) = __atomic_load_n(&fshooks_group_signal, __ATOMIC_RELAXED);
	if (fn)
		fn(sig);
}
