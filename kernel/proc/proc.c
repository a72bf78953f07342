/*
 * proc.c - processes: the process table, fork/vfork/clone, execve's switch to the new
 * image, exit, wait4, kill, and the page-fault entry (the policy is mm.c's) (issue 24;
 * proc.h says which lock guards what; docs/userspace.md).
 *
 * Massalin & Pu 1991 (Synthesis), "Address spaces" / "Memory management": a process's
 * address space is a set of areas the kernel allows (mm.c), and a page fault inside one
 * is the kernel's to resolve (a zeroed page on first touch - demand-zero - or a private
 * copy of a page shared since fork - copy-on-write); a fault outside is the process's
 * error, delivered as SIGSEGV (here: the process is killed, its parent's wait4 sees it).
 * Hartman & Ousterhout (Sprite) section 2: the process table is one data lock, a master
 * lock with statistics (class "proc-table"); each address space has its own ("proc-mm").
 *
 * Sleeping: wait4 and vfork wait with Hohmuth & Haertig's condition flags
 * (sched_sleep(PROC_COND_CHILD)): the waiter records itself under proc_table_lock, then
 * sleeps; the exiting child sets the flag with sched_wakeup after its state change under
 * the same lock. A wakeup before the sleep leaves the flag set, so none is lost.
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"
#include <ksync/errors.h>

LOCK_CLASS(uproc_table_class, "uproc-table", LOCK_MASTER, LOCK_DATA);

static struct mlock proc_table_lock = MLOCK_INIT(uproc_table_class, MLOCK_TICKET);
static struct process procs[PROC_MAX];	/* slots: proc_table_lock */
static int next_pid = 1;		/* proc_table_lock */

extern void (*fshooks_group_signal)(int sig);	/* fshooks.c */
static struct process *find_locked(int pid);
static void tty_group_signal(int sig);
void proc_init(void)
{
	fshooks_group_signal = tty_group_signal;	/* before any process runs */
}

struct process *proc_current(void)
{
	struct thread *t = thread_self();
	struct arch_uctx *u = t ? thread_uctx(t) : NULL;
	return u ? arch_uctx_owner(u) : NULL;	/* set at create, constant */
}

/* The page-fault policy (arch_if.h kernel_user_fault): IRQs off, from the fault. */
int kernel_user_fault(uint64_t addr, bool write, bool exec, bool user)
{
	(void)user;
	struct process *p = proc_current();
	if (!p || !p->mm)
		return -1;
	return mm_fault(p->mm, addr, write, exec);
}

/* ---- the table ----------------------------------------------------------------------- */
uint64_t proc_pages_in_use(void)
{
	uint64_t n = 0;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	for (unsigned i = 0; i < PROC_MAX; i++)
		if (procs[i].state == PROC_LIVE && procs[i].mm)
			n += arch_as_npages(procs[i].mm->as);
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return n;
}

/* A free slot for a child of parent (NULL: a program the runner spawns, which no
 * limit stops: Linux's init is not limited either); NULL when the table is full or the
 * parent's RLIMIT_NPROC is reached (Linux's copy_process: EAGAIN when the new process
 * would make the user's count exceed the soft limit; every ksync process is uid 0, and
 * a zombie counts until it is reaped, as Linux's release_task drops the count). */
static struct process *proc_alloc(struct process *parent)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *p = NULL;
	struct arch_uctx *stale = NULL;
	if (parent) {
		uint64_t n = 0;
		for (unsigned i = 0; i < PROC_MAX; i++)
			n += procs[i].state != PROC_FREE;
		if (n >= parent->rlim_nproc[0]) {
			mlock_unlock_irqrestore(&proc_table_lock, k);
			return NULL;
		}
	}
	for (unsigned i = 0; i < PROC_MAX; i++) {
		if (procs[i].state == PROC_FREE) {
			p = &procs[i];
			/* an orphan's or an orphaned zombie's: nobody reaped it (proc_exit); its
			 * thread is gone or only switching away (which names the pointer, never
			 * reads the struct) */
			stale = p->uctx;
			memset(p, 0, sizeof *p);
			p->pid = next_pid++;
			p->state = PROC_LIVE;
			p->parent = parent;
			/* a spawned program leads its own session and group; a child is in
			 * its parent's */
			p->pgid = parent ? parent->pgid : p->pid;
			p->sid = parent ? parent->sid : p->pid;
			p->rlim_core_max = LX_RLIM_INFINITY;	/* fork copies the parent's */
			p->rlim_nproc[0] = parent ? parent->rlim_nproc[0] : PROC_NPROC_DEFAULT;
			p->rlim_nproc[1] = parent ? parent->rlim_nproc[1] : PROC_NPROC_DEFAULT;
			break;
		}
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (stale)
		arch_uctx_destroy(stale);
	return p;
}

/* Give back what a never-started or reaped process still holds. */
static void proc_free(struct process *p)
{
	if (p->uctx)
		arch_uctx_destroy(p->uctx);
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	p->uctx = NULL;
	p->state = PROC_FREE;
	mlock_unlock_irqrestore(&proc_table_lock, k);
}

/* What a process holds of kernel/fs: its descriptor table and fs context (either may
 * be NULL after a failed allocation). */
static void files_put(struct process *p)
{
	if (p->fdt)
		fdtable_put(p->fdt);
	if (p->fs)
		fs_ctx_put(p->fs);
	p->fdt = NULL;
	p->fs = NULL;
}

static void user_thread_main(void *arg)
{
	struct process *p = arg;
	/* recorded by the thread itself before it can wait in a file: a kill that finds it
	 * wakes that wait (fs_interrupt); a kill before this is pending before any wait */
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	p->thread = thread_self();
	mlock_unlock_irqrestore(&proc_table_lock, k);
	arch_user_enter(p->uctx);
}

/* Start p's thread (p->uctx's first frame set). */
static long proc_start(struct process *p)
{
	char name[SCHED_NAME_MAX];
	ksnprintf(name, sizeof name, "pid%d", p->pid);
	struct thread *t;
	int rc = thread_create_user(&t, user_thread_main, p, 1, SCHED_AFFINITY_ANY, name, p->uctx);
	if (rc != KSYNC_OK)
		return -LX_EAGAIN;
	return 0;
}

/* What /proc shows of a new image (exec, spawn): its file's absolute path and argv,
 * worked out before the image replaces the old one (the path resolves against the old:
 * /proc/self/exe names the running file), stored by image_commit under the table lock. */
struct image_names {
	char comm[16], exe[256], cmdline[512];
	uint16_t cmdline_len;
};

static struct image_names *image_names(struct process *p, const char *path, char *const argv[])
{
	struct image_names *n = kzalloc(sizeof *n);
	if (!n)
		return NULL;
	if (vfs_realpath(p->fdt, p->fs, path, n->exe, sizeof n->exe) < 0)
		n->exe[0] = 0;
	const char *b = path;
	for (const char *s = path; *s; s++)
		if (*s == '/')
			b = s + 1;
	size_t i = 0;
	for (; b[i] && i + 1 < sizeof n->comm; i++)
		n->comm[i] = b[i];
	n->comm[i] = 0;
	size_t at = 0;
	for (unsigned a = 0; argv && argv[a] && at < sizeof n->cmdline; a++) {
		size_t l = strlen(argv[a]) + 1;
		if (l > sizeof n->cmdline - at)
			l = sizeof n->cmdline - at;
		memcpy(n->cmdline + at, argv[a], l);
		at += l;
	}
	n->cmdline_len = (uint16_t)at;
	return n;
}

/* Store (and free) n; NULL (no memory) keeps the comm from the path alone. */
static void image_commit(struct process *p, struct image_names *n, const char *path)
{
	if (!n) {
		const char *b = path;
		for (const char *s = path; *s; s++)
			if (*s == '/')
				b = s + 1;
		char comm[16] = { 0 };
		for (size_t i = 0; b[i] && i + 1 < sizeof comm; i++)
			comm[i] = b[i];
		proc_set_comm(p, comm);
		return;
	}
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	memcpy(p->comm, n->comm, sizeof p->comm);
	memcpy(p->exe, n->exe, sizeof p->exe);
	memcpy(p->cmdline, n->cmdline, sizeof p->cmdline);
	p->cmdline_len = n->cmdline_len;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	kfree(n);
}

void proc_set_comm(struct process *p, const char *name)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	memcpy(p->comm, name, sizeof p->comm);
	p->comm[sizeof p->comm - 1] = 0;
	mlock_unlock_irqrestore(&proc_table_lock, k);
}

/* ---- /proc's view (kernel/proc/procfs.c formats it) ------------------------------------- */
unsigned proc_pids(int *out, unsigned max)
{
	unsigned n = 0;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	for (unsigned i = 0; i < PROC_MAX; i++)
		if (procs[i].state != PROC_FREE && n < max)
			out[n++] = procs[i].pid;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	for (unsigned i = 1; i < n; i++)	/* slots are reused: sort (at most PROC_MAX) */
		for (unsigned j = i; j > 0 && out[j - 1] > out[j]; j--) {
			int t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

bool proc_snapshot(int pid, struct proc_snap *s)
{
	struct process *self = proc_current();
	bool found = false;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	for (unsigned i = 0; i < PROC_MAX && !found; i++) {
		struct process *p = &procs[i];
		if (p->state == PROC_FREE || p->pid != pid)
			continue;
		found = true;
		s->pid = p->pid;
		s->ppid = p->parent ? p->parent->pid : 0;
		s->pgid = p->pgid;
		s->sid = p->sid;
		s->state = p->state == PROC_ZOMBIE ? 'Z' : p->stopped ? 'T' : p == self ? 'R' : 'S';
		memcpy(s->comm, p->comm, sizeof s->comm);
		memcpy(s->exe, p->exe, sizeof s->exe);
		memcpy(s->cmdline, p->cmdline, sizeof s->cmdline);
		s->cmdline_len = p->cmdline_len;
		s->rss_pages = p->state == PROC_LIVE && p->mm ? arch_as_npages(p->mm->as) : 0;
		/* relaxed: a snapshot; the lock orders nothing else here */
		s->sig_pending = __atomic_load_n(&p->sig_pending, __ATOMIC_RELAXED);
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return found;
}

long proc_spawn(const char *path, char *const argv[], char *const envp[], struct fdtable *fds,
		bool ctty)
{
	struct process *p = proc_alloc(NULL);
	if (!p)
		return -LX_EAGAIN;
	p->kernel_waited = true;
	p->mm = mm_create();
	p->fdt = fds ? fdtable_clone(fds) : fdtable_new();
	p->fs = fs_ctx_new();
	p->uctx = p->mm ? arch_uctx_create(p->mm->as, p) : NULL;
	long rc = -LX_ENOMEM;
	uint64_t entry, sp;
	if (p->mm && p->fdt && p->fs && p->uctx) {
		fdtable_close_on_exec(p->fdt);	/* the runner's own end of the output pipe */
		rc = exec_load(p->mm, p->fdt, p->fs, path, argv, envp, &entry, &sp);
	}
	if (!rc) {
		image_commit(p, image_names(p, path, argv), path);
		arch_uctx_start_exec(p->uctx, entry, sp);
		/* the console's foreground group before the first instruction: a job-control
		 * shell compares tcgetpgrp with its own group at once (and stops itself with
		 * SIGTTIN while they differ) */
		if (ctty)
			tty_set_fg_pgrp(p->pid);
		rc = proc_start(p);
	}
	if (rc) {
		mm_destroy(p->mm);
		files_put(p);
		p->mm = NULL;
		proc_free(p);
		return rc;
	}
	return p->pid;
}

int proc_wait_kernel(int pid)
{
	for (;;) {
		irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
		struct process *p = NULL;
		for (unsigned i = 0; i < PROC_MAX; i++)
			if (procs[i].state != PROC_FREE && procs[i].pid == pid)
				p = &procs[i];
		KASSERT(p && p->kernel_waited);
		if (p->state == PROC_ZOMBIE) {
			int st = p->wstatus;
			mlock_unlock_irqrestore(&proc_table_lock, k);
			proc_free(p);
			return st;
		}
		p->kwaiter = thread_self();
		mlock_unlock_irqrestore(&proc_table_lock, k);
		sched_sleep(PROC_COND_CHILD);
	}
}

/* ---- fork, vfork, clone ------------------------------------------------------------------ */
#define LX_CLONE_VM 0x100
#define LX_CLONE_VFORK 0x4000
#define LX_CLONE_THREAD 0x10000
#define LX_CSIGNAL 0xff

long proc_fork(struct trapframe *tf, uint64_t flags, uint64_t newsp)
{
	struct process *self = proc_current();
	if (flags & LX_CLONE_THREAD)
		return -LX_ENOSYS;	/* threads: the next issue */
	bool vfork = flags & LX_CLONE_VFORK;
	struct process *c = proc_alloc(self);
	if (!c)
		return -LX_EAGAIN;
	c->mm = mm_create();
	c->fdt = fdtable_clone(self->fdt);
	c->fs = fs_ctx_clone(self->fs);
	c->uctx = c->mm ? arch_uctx_create(c->mm->as, c) : NULL;
	long rc = c->mm && c->fdt && c->fs && c->uctx ? 0 : -LX_ENOMEM;
	if (!rc) {
		/* vfork and CLONE_VM children get a copy-on-write copy too: a correct vfork
		 * child only execs or exits, and cannot tell the difference */
		rc = mm_fork(self->mm, c->mm);
	}
	if (!rc) {
		memcpy(c->sig_handler, self->sig_handler, sizeof c->sig_handler);
		memcpy(c->sig_flags, self->sig_flags, sizeof c->sig_flags);
		memcpy(c->sig_restorer, self->sig_restorer, sizeof c->sig_restorer);
		memcpy(c->sig_mask_of, self->sig_mask_of, sizeof c->sig_mask_of);
		c->sigmask = self->sigmask;
		c->ss_sp = self->ss_sp;
		c->ss_size = self->ss_size;
		c->rlim_core = self->rlim_core;
		c->rlim_core_max = self->rlim_core_max;
		irqkey_t k = mlock_lock_irqsave(&proc_table_lock);	/* /proc reads them */
		c->sched_policy = self->sched_policy;
		c->sched_prio = self->sched_prio;
		memcpy(c->comm, self->comm, sizeof c->comm);
		memcpy(c->exe, self->exe, sizeof c->exe);
		memcpy(c->cmdline, self->cmdline, sizeof c->cmdline);
		c->cmdline_len = self->cmdline_len;
		mlock_unlock_irqrestore(&proc_table_lock, k);
		arch_uctx_set_fs(c->uctx, arch_uctx_get_fs(self->uctx));
		arch_uctx_start_fork(c->uctx, tf);
		if (newsp)
			arch_uctx_set_start_sp(c->uctx, newsp);
		rc = proc_start(c);
	}
	if (rc) {
		mm_destroy(c->mm);
		files_put(c);
		c->mm = NULL;
		proc_free(c);
		return rc;
	}
	int pid = c->pid;
	if (vfork) {
		/* the parent waits until the child exec'd or exited */
		for (;;) {
			irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
			bool done = c->vfork_done || c->state != PROC_LIVE || c->pid != pid;
			if (!done)
				self->waiter = thread_self();
			mlock_unlock_irqrestore(&proc_table_lock, k);
			if (done)
				break;
			sched_sleep(PROC_COND_CHILD);
		}
	}
	return pid;
}

/* The vfork parent (if any) may go on: exec and exit call it. */
void proc_vfork_release(struct process *p)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	p->vfork_done = true;
	struct thread *w = p->parent ? p->parent->waiter : NULL;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (w)
		sched_wakeup(w, PROC_COND_CHILD);
}

static struct thread *post_locked(struct process *p, int sig, const struct lx_siginfo *info);
static void wake_signalled(struct thread *t);

/* ---- exit, wait ------------------------------------------------------------------------ */
void proc_exit(int wstatus)
{
	struct process *p = proc_current();
	KASSERT(p);
	/* what only this thread uses: its files and its address space (loaded here only) */
	files_put(p);	/* may wake a pipe's other end */
	struct mm *mm = p->mm;
	/* from here a kernel thread: the switches no longer read p->uctx, which the reaper
	 * frees (even before this thread's last switch) */
	thread_drop_uctx();
	p->mm = NULL;
	mm_destroy(mm);

	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	/* children: zombies nobody will wait for are freed, the living are orphaned */
	for (unsigned i = 0; i < PROC_MAX; i++) {
		struct process *c = &procs[i];
		if (c->state == PROC_FREE || c->parent != p)
			continue;
		c->parent = NULL;
		if (c->state == PROC_ZOMBIE && !c->kernel_waited)
			c->state = PROC_FREE;	/* its uctx: freed when the slot is reused */
	}
	p->wstatus = wstatus;
	p->vfork_done = true;
	struct thread *w = NULL, *sigt = NULL;
	struct process *par = p->parent;
	bool autoreap = false;
	if (par) {
		w = par->waiter;
		/* SIGCHLD (Linux's do_notify_parent): not sent when the parent ignores it;
		 * SIG_IGN or SA_NOCLDWAIT: nobody waits for the child, it is reaped here */
		uint64_t h = par->sig_handler[LX_SIGCHLD];
		autoreap = h == LX_SIG_IGN || (par->sig_flags[LX_SIGCHLD] & LX_SA_NOCLDWAIT);
		if (h != LX_SIG_IGN) {
			struct lx_siginfo si = { .si_signo = LX_SIGCHLD };
			bool sig = (wstatus & 0x7f) != 0;
			si.si_code = !sig ? LX_CLD_EXITED : (wstatus & 0x80) ? LX_CLD_DUMPED : LX_CLD_KILLED;
			si.u.k.pid = p->pid;
			si.u.k.status = sig ? (wstatus & 0x7f) : (wstatus >> 8 & 0xff);
			sigt = post_locked(par, LX_SIGCHLD, &si);
		}
	} else if (p->kernel_waited) {
		w = p->kwaiter;
	}
	bool orphan = (!par && !p->kernel_waited) || autoreap;
	if (autoreap)
		p->parent = NULL;
	p->state = orphan ? PROC_FREE : PROC_ZOMBIE;	/* the slot may be reused from here */
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (w)
		sched_wakeup(w, PROC_COND_CHILD);
	if (sigt)
		wake_signalled(sigt);
	thread_exit();
}

long proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage)
{
	struct process *self = proc_current();
	if (options & ~(LX_WNOHANG | LX_WUNTRACED | LX_WCONTINUED | 0x40000000 /* __WALL */ |
			0x80000000))
		return -LX_EINVAL;
	if (pid == INT32_MIN)
		return -LX_ESRCH;	/* -INT_MIN is no group: Linux's kernel_wait4 */
	for (;;) {
		irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
		bool any = false;
		struct process *z = NULL, *rep = NULL;
		int rst = 0;
		for (unsigned i = 0; i < PROC_MAX; i++) {
			struct process *c = &procs[i];
			if (c->state == PROC_FREE || c->parent != self)
				continue;
			if (pid > 0 && c->pid != pid)
				continue;
			if (pid == 0 && c->pgid != self->pgid)
				continue;
			if (pid < -1 && c->pgid != -pid)
				continue;
			any = true;
			if (c->state == PROC_ZOMBIE) {
				z = c;
				break;
			}
			if ((options & LX_WUNTRACED) && c->stop_report) {
				c->stop_report = false;
				rep = c;
				rst = c->stop_sig << 8 | 0x7f;
				break;
			}
			if ((options & LX_WCONTINUED) && c->cont_report) {
				c->cont_report = false;
				rep = c;
				rst = 0xffff;
				break;
			}
		}
		int rpid = rep ? rep->pid : 0;
		if (!z && !rep && any && !(options & LX_WNOHANG))
			self->waiter = thread_self();
		int zpid = z ? z->pid : 0, st = z ? z->wstatus : 0;
		if (z)
			z->parent = NULL;	/* reaped: nobody else sees it */
		mlock_unlock_irqrestore(&proc_table_lock, k);
		if (rep) {	/* a stop or a continue: the child stays */
			if (ustatus && copy_to_user((void *)ustatus, &rst, sizeof rst))
				return -LX_EFAULT;
			return rpid;
		}
		if (z) {
			proc_free(z);
			if (ustatus && copy_to_user((void *)ustatus, &st, sizeof st))
				return -LX_EFAULT;
			if (urusage) {
				static const uint8_t zero[144];
				if (copy_to_user((void *)urusage, zero, sizeof zero))
					return -LX_EFAULT;
			}
			return zpid;
		}
		if (!any)
			return -LX_ECHILD;
		if (options & LX_WNOHANG)
			return 0;
		if (proc_sig_any_acts(self)) {
			irqkey_t k2 = mlock_lock_irqsave(&proc_table_lock);
			self->waiter = NULL;
			mlock_unlock_irqrestore(&proc_table_lock, k2);
			return -LX_ERESTARTSYS;	/* EINTR, or made again after SA_RESTART */
		}
		sched_sleep(PROC_COND_CHILD | PROC_COND_SIG);
	}
}

long proc_rlimit_nproc(int pid, const struct lx_rlimit *nw, struct lx_rlimit *old)
{
	if (nw && nw->rlim_cur > nw->rlim_max)
		return -LX_EINVAL;
	long rc = 0;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *t = pid ? find_locked(pid) : proc_current();
	if (!t || t->state != PROC_LIVE) {
		rc = -LX_ESRCH;
	} else {
		if (old) {
			old->rlim_cur = t->rlim_nproc[0];
			old->rlim_max = t->rlim_nproc[1];
		}
		/* raising the hard limit needs CAP_SYS_RESOURCE on Linux: every ksync
		 * process is root and has it */
		if (nw) {
			t->rlim_nproc[0] = nw->rlim_cur;
			t->rlim_nproc[1] = nw->rlim_max;
		}
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return rc;
}

long proc_getppid(void)
{
	struct process *self = proc_current();
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	long pp = self->parent ? self->parent->pid : 0;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return pp;
}

/* ---- signals: posting (under proc_table_lock), process groups ---------------------------
 * A posted signal: its pending bit and, if it was not pending already, its siginfo (a
 * standard signal does not queue: Linux keeps the first). Returns the thread to wake
 * (after the unlock: wake_signalled). p LIVE. */
static void notify_parent_locked(struct process *p, int code, int status);

static struct thread *post_locked(struct process *p, int sig, const struct lx_siginfo *info)
{
	uint64_t b = PROC_SIGBIT(sig);
	/* Linux's prepare_signal: SIGCONT discards pending stop signals and continues a
	 * stopped process; a stop signal discards a pending SIGCONT */
	uint64_t stops = PROC_SIGBIT(LX_SIGSTOP) | PROC_SIGBIT(LX_SIGTSTP) |
			 PROC_SIGBIT(LX_SIGTTIN) | PROC_SIGBIT(LX_SIGTTOU);
	if (sig == LX_SIGCONT) {
		__atomic_fetch_and(&p->sig_pending, ~stops, __ATOMIC_RELAXED);
		if (p->stopped) {
			/* p wakes its parent itself when it leaves proc_stop (no wakeup
			 * under this lock) */
			p->stopped = false;
			p->stop_report = false;
			p->cont_report = true;
			notify_parent_locked(p, LX_CLD_CONTINUED, LX_SIGCONT);
		}
	} else if (b & stops) {
		__atomic_fetch_and(&p->sig_pending, ~PROC_SIGBIT(LX_SIGCONT), __ATOMIC_RELAXED);
	}
	/* relaxed: the bit's readers take the siginfo under this lock */
	if (!(__atomic_load_n(&p->sig_pending, __ATOMIC_RELAXED) & b)) {
		if (info) {
			p->sig_info[sig] = *info;
			p->sig_info_valid |= b;
		} else {
			p->sig_info_valid &= ~b;
		}
	}
	__atomic_fetch_or(&p->sig_pending, b, __ATOMIC_RELAXED);
	return p->thread;
}

/* pause/sigsuspend (PROC_COND_SIG), wait4 (the same flag) and a file wait (fs_interrupt)
 * of t notice the signal. t may have exited meanwhile: sched_wakeup answers ESRCH for a
 * dead slot, a reused slot gets a flag nobody sleeps on (every sleeper re-checks), and
 * fs_interrupt compares t with its registered sleepers before touching it. */
static void wake_signalled(struct thread *t)
{
	sched_wakeup(t, PROC_COND_SIG);
	fs_interrupt(t);
}

/* SIGCHLD with CLD_STOPPED/CLD_CONTINUED to p's parent (not when it ignores SIGCHLD or
 * set SA_NOCLDSTOP); the caller wakes the parent after the unlock (parent_wake). */
static void notify_parent_locked(struct process *p, int code, int status)
{
	struct process *par = p->parent;
	if (!par || par->sig_handler[LX_SIGCHLD] == LX_SIG_IGN ||
	    (par->sig_flags[LX_SIGCHLD] & LX_SA_NOCLDSTOP))
		return;
	struct lx_siginfo si = { .si_signo = LX_SIGCHLD, .si_code = code };
	si.u.k.pid = p->pid;
	si.u.k.status = status;
	uint64_t b = PROC_SIGBIT(LX_SIGCHLD);
	if (!(__atomic_load_n(&par->sig_pending, __ATOMIC_RELAXED) & b)) {
		par->sig_info[LX_SIGCHLD] = si;
		par->sig_info_valid |= b;
	}
	__atomic_fetch_or(&par->sig_pending, b, __ATOMIC_RELAXED);
}

/* p's parent's wait4 (PROC_COND_CHILD) and signal waits; p's own thread, no lock held */
static void parent_wake(struct process *p)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *par = p->parent;
	struct thread *w = par ? par->waiter : NULL, *t = par ? par->thread : NULL;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (w)
		sched_wakeup(w, PROC_COND_CHILD);
	if (t)
		wake_signalled(t);
}

void proc_stop(struct process *p, int sig)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	p->stopped = true;
	p->stop_sig = sig;
	p->stop_report = true;
	p->cont_report = false;
	notify_parent_locked(p, LX_CLD_STOPPED, sig);
	mlock_unlock_irqrestore(&proc_table_lock, k);
	parent_wake(p);
	for (;;) {
		k = mlock_lock_irqsave(&proc_table_lock);
		/* relaxed: SIGKILL's bit is set under this lock */
		bool killed = __atomic_load_n(&p->sig_pending, __ATOMIC_RELAXED) & PROC_SIGBIT(LX_SIGKILL);
		bool go = !p->stopped || killed;
		mlock_unlock_irqrestore(&proc_table_lock, k);
		if (go) {
			if (!killed)
				parent_wake(p);	/* SIGCONT's report (post_locked) */
			return;
		}
		sched_sleep(PROC_COND_SIG);	/* SIGCONT and SIGKILL post with this flag */
	}
}

void proc_signal_send(struct process *p, int sig, const struct lx_siginfo *info)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct thread *t = p->state == PROC_LIVE ? post_locked(p, sig, info) : NULL;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (t)
		wake_signalled(t);
}

bool proc_signal_take(struct process *p, int sig, struct lx_siginfo *info)
{
	uint64_t b = PROC_SIGBIT(sig);
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	uint64_t old = __atomic_fetch_and(&p->sig_pending, ~b, __ATOMIC_RELAXED);
	bool had = old & b;
	if (had && (p->sig_info_valid & b)) {
		*info = p->sig_info[sig];
	} else if (had) {
		/* set without a siginfo: SIGPIPE from the process's own write (Linux's
		 * send_sig(SIGPIPE, current, 0): SI_USER from itself) */
		memset(info, 0, sizeof *info);
		info->si_signo = sig;
		info->si_code = LX_SI_USER;
		info->u.k.pid = p->pid;
	}
	p->sig_info_valid &= ~b;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return had;
}

void proc_sigaction_set(struct process *p, int sig, const struct lx_sigaction *sa)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	p->sig_handler[sig] = sa->handler;
	p->sig_flags[sig] = sa->flags;
	p->sig_restorer[sig] = sa->restorer;
	p->sig_mask_of[sig] = sa->mask;
	mlock_unlock_irqrestore(&proc_table_lock, k);
}

/* kill (Linux's kill_something_info): pid > 0 that process; 0 the caller's group; -1
 * every process but pid 1 and the caller; < -1 the group -pid. sig 0: existence only.
 * A zombie exists (0) but takes no signal. */
long proc_kill(int pid, int sig)
{
	if (sig < 0 || sig >= PROC_NSIG)
		return -LX_EINVAL;
	if (pid == INT32_MIN)
		return -LX_ESRCH;
	struct process *self = proc_current();
	struct lx_siginfo si = { .si_signo = sig, .si_code = LX_SI_USER };
	si.u.k.pid = self->pid;
	struct thread *wake[PROC_MAX];
	unsigned nw = 0, found = 0;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	for (unsigned i = 0; i < PROC_MAX; i++) {
		struct process *t = &procs[i];
		if (t->state == PROC_FREE)
			continue;
		bool match = pid > 0 ? t->pid == pid : pid == 0 ? t->pgid == self->pgid :
			     pid == -1 ? t->pid != 1 && t != self : t->pgid == -pid;
		if (!match)
			continue;
		found++;
		if (sig && t->state == PROC_LIVE) {
			struct thread *th = post_locked(t, sig, &si);
			if (th)
				wake[nw++] = th;
		}
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
	return found ? 0 : -LX_ESRCH;
}

/* tkill/tgkill: one thread per process, so tid is a pid (and tgid, if given, the same) */
long proc_tkill(int tgid, int tid, int sig)
{
	if (sig < 0 || sig >= PROC_NSIG || tid <= 0 || (tgid != -1 && tgid <= 0))
		return -LX_EINVAL;
	if (tgid != -1 && tgid != tid)
		return -LX_ESRCH;
	struct process *self = proc_current();
	struct lx_siginfo si = { .si_signo = sig, .si_code = LX_SI_TKILL };
	si.u.k.pid = self->pid;
	struct thread *th = NULL;
	bool found = false;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	for (unsigned i = 0; i < PROC_MAX; i++) {
		struct process *t = &procs[i];
		if (t->state != PROC_LIVE || t->pid != tid)
			continue;
		found = true;
		if (sig)
			th = post_locked(t, sig, &si);
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (th)
		wake_signalled(th);
	return found ? 0 : -LX_ESRCH;
}

static struct process *find_locked(int pid)
{
	for (unsigned i = 0; i < PROC_MAX; i++)
		if (procs[i].state != PROC_FREE && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

/* setpgid (Linux's rules, without the "child has exec'd" EACCES): the caller or a child
 * of it, in the caller's session, not a session leader; into its own new group or an
 * existing group of the same session. */
long proc_setpgid(int pid, int pgid)
{
	struct process *self = proc_current();
	if (pgid < 0)
		return -LX_EINVAL;
	long rc = 0;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *t = pid ? find_locked(pid) : self;
	if (!t || (t != self && t->parent != self)) {
		rc = -LX_ESRCH;
		goto out;
	}
	if (!pgid)
		pgid = t->pid;
	if (t->sid != self->sid || t->sid == t->pid) {
		rc = -LX_EPERM;
		goto out;
	}
	if (pgid != t->pid) {
		bool ok = false;
		for (unsigned i = 0; i < PROC_MAX; i++)
			if (procs[i].state != PROC_FREE && procs[i].pgid == pgid &&
			    procs[i].sid == self->sid)
				ok = true;
		if (!ok) {
			rc = -LX_EPERM;
			goto out;
		}
	}
	t->pgid = pgid;
out:
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return rc;
}

/* getpgid / getsid: process `pid`'s (0: the caller's) group or session, read under
 * proc_table_lock (setpgid and setsid write them there) */
static long group_of(int pid, bool session)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *t = pid ? find_locked(pid) : proc_current();
	long rc = !t ? -LX_ESRCH : session ? t->sid : t->pgid;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return rc;
}

long proc_getpgid(int pid) { return group_of(pid, false); }
long proc_getsid(int pid) { return group_of(pid, true); }

long proc_sched(int pid, int *policy, int *prio, bool set, int set_policy, int set_prio)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *t = pid ? find_locked(pid) : proc_current();
	if (t) {
		*policy = t->sched_policy;
		*prio = t->sched_prio;
		if (set) {
			if (set_policy >= 0)
				t->sched_policy = set_policy;
			t->sched_prio = set_prio;
		}
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return t ? 0 : -LX_ESRCH;
}

/* setsid: EPERM for a group leader (some process has the caller's pid as its group) */
long proc_setsid(void)
{
	struct process *self = proc_current();
	long rc;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	bool leader = false;
	for (unsigned i = 0; i < PROC_MAX; i++)
		if (procs[i].state != PROC_FREE && procs[i].pgid == self->pid)
			leader = true;
	if (leader) {
		rc = -LX_EPERM;
	} else {
		self->sid = self->pgid = self->pid;
		rc = self->pid;
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return rc;
}

/* The console's ^C / ^\ / ^Z (kernel/fs's fs_tty_signal, via fshooks.c): the foreground
 * group. May run in the serial handler: master lock only, no sleep. */
static void tty_group_signal(int sig)
{
	int pgrp = tty_fg_pgrp();
	if (pgrp <= 0)
		return;
	struct lx_siginfo si = { .si_signo = sig, .si_code = LX_SI_KERNEL };
	struct thread *wake[PROC_MAX];
	unsigned nw = 0;
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	for (unsigned i = 0; i < PROC_MAX; i++)
		if (procs[i].state == PROC_LIVE && procs[i].pgid == pgrp) {
			struct thread *th = post_locked(&procs[i], sig, &si);
			if (th)
				wake[nw++] = th;
		}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
}

/* ---- execve ------------------------------------------------------------------------
 * The image is built by exec.c in a fresh mm; from the point of no return the new space
 * replaces the old, close-on-exec descriptors go, caught signals reset to default. */
long proc_execve(struct trapframe *tf, const char *path, char *const argv[], char *const envp[])
{
	struct process *p = proc_current();
	struct mm *nm = mm_create();
	if (!nm)
		return -LX_ENOMEM;
	uint64_t entry, sp;
	struct image_names *names = image_names(p, path, argv);	/* before: /proc/self/exe */
	long rc = exec_load(nm, p->fdt, p->fs, path, argv, envp, &entry, &sp);
	if (rc) {
		kfree(names);
		mm_destroy(nm);
		return rc;
	}
	/* the point of no return: the new space replaces the old */
	struct mm *old = p->mm;
	p->mm = nm;
	arch_uctx_set_as(p->uctx, nm->as);
	mm_destroy(old);
	arch_uctx_set_fs(p->uctx, 0);
	fdtable_close_on_exec(p->fdt);
	for (unsigned s = 1; s < PROC_NSIG; s++) {	/* handlers reset; ignored stays */
		struct lx_sigaction sa = { p->sig_handler[s] == LX_SIG_IGN ? LX_SIG_IGN : LX_SIG_DFL,
					   0, 0, 0 };
		proc_sigaction_set(p, (int)s, &sa);
	}
	p->ss_sp = p->ss_size = 0;	/* no alternate stack in the new image */
	image_commit(p, names, path);
	arch_uregs_exec(tf, entry, sp);
	proc_vfork_release(p);
	return 0;
}
