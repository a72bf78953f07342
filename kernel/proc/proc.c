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

void proc_init(void) {}

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

static struct process *proc_alloc(struct process *parent)
{
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *p = NULL;
	struct arch_uctx *stale = NULL;
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

static void comm_from_path(struct process *p, const char *path)
{
	const char *b = path;
	for (const char *s = path; *s; s++)
		if (*s == '/')
			b = s + 1;
	size_t i = 0;
	for (; b[i] && i + 1 < sizeof p->comm; i++)
		p->comm[i] = b[i];
	p->comm[i] = 0;
}

long proc_spawn(const char *path, char *const argv[], char *const envp[], struct fdtable *fds)
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
		comm_from_path(p, path);
		arch_uctx_start_exec(p->uctx, entry, sp);
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
		memcpy(c->comm, self->comm, sizeof c->comm);
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
	struct thread *w = NULL;
	if (p->parent)
		w = p->parent->waiter;
	else if (p->kernel_waited)
		w = p->kwaiter;
	bool orphan = !p->parent && !p->kernel_waited;
	p->state = orphan ? PROC_FREE : PROC_ZOMBIE;	/* the slot may be reused from here */
	mlock_unlock_irqrestore(&proc_table_lock, k);
	if (w)
		sched_wakeup(w, PROC_COND_CHILD);
	thread_exit();
}

void kernel_user_killed(int sig, uint64_t addr, uint64_t ip)
{
	arch_irq_enable();
	struct process *p = proc_current();
	if (sig == LX_SIGSEGV || sig == LX_SIGBUS)
		kprintf("ksync: pid %d (%s): %s at 0x%lx ip 0x%lx\n", p ? p->pid : -1,
			p ? p->comm : "?", sig == LX_SIGSEGV ? "segfault" : "bus error", addr, ip);
	else
		kprintf("ksync: pid %d (%s): signal %d at ip 0x%lx\n", p ? p->pid : -1,
			p ? p->comm : "?", sig, ip);
	proc_exit(sig & 0x7f);
}

long proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage)
{
	struct process *self = proc_current();
	if (options & ~(LX_WNOHANG | LX_WUNTRACED | 0x40000000 /* __WALL */ | 0x80000000))
		return -LX_EINVAL;
	for (;;) {
		irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
		bool any = false;
		struct process *z = NULL;
		for (unsigned i = 0; i < PROC_MAX; i++) {
			struct process *c = &procs[i];
			if (c->state == PROC_FREE || c->parent != self)
				continue;
			if (pid > 0 && c->pid != pid)
				continue;
			any = true;
			if (c->state == PROC_ZOMBIE) {
				z = c;
				break;
			}
		}
		if (!z && any && !(options & LX_WNOHANG))
			self->waiter = thread_self();
		int zpid = z ? z->pid : 0, st = z ? z->wstatus : 0;
		if (z)
			z->parent = NULL;	/* reaped: nobody else sees it */
		mlock_unlock_irqrestore(&proc_table_lock, k);
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
		sched_sleep(PROC_COND_CHILD);
	}
}

/* A signal another process sent (kill): the default action of those that terminate
 * ends this one (handlers: the signals slice). Ignored by default: SIGCHLD, SIGURG,
 * SIGWINCH, and any the process set to SIG_IGN (SIGKILL cannot be). Blocked signals
 * stay pending. */
void kernel_user_return(void)
{
	struct process *p = proc_current();
	if (!p)
		return;
	uint64_t pend = __atomic_load_n(&p->sig_pending, __ATOMIC_RELAXED);
	for (unsigned s = 1; pend && s < PROC_NSIG; s++) {
		if (!(pend >> s & 1))
			continue;
		bool blocked = s != LX_SIGKILL && (p->sigmask >> (s - 1) & 1);
		if (blocked)
			continue;
		__atomic_fetch_and(&p->sig_pending, ~(1ull << s), __ATOMIC_RELAXED);
		if (proc_sig_acts(p, s))	/* (fshooks.c's fs_signal_pending asks the same) */
			proc_exit((int)s);
	}
}

long proc_getppid(void)
{
	struct process *self = proc_current();
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	long pp = self->parent ? self->parent->pid : 0;
	mlock_unlock_irqrestore(&proc_table_lock, k);
	return pp;
}

/* kill: existence check (sig 0) or a pending signal that ends the target at its next
 * return to ring 3 from a system call (default action: terminate; handlers come with the
 * signals slice). */
long proc_kill(int pid, int sig)
{
	if (sig < 0 || sig >= PROC_NSIG)
		return -LX_EINVAL;
	struct process *self = proc_current();
	if (pid == 0 || pid == -1)
		pid = self->pid;	/* process groups: not yet; the caller's own group is itself */
	irqkey_t k = mlock_lock_irqsave(&proc_table_lock);
	struct process *t = NULL;
	for (unsigned i = 0; i < PROC_MAX; i++)
		if (procs[i].state == PROC_LIVE && procs[i].pid == (pid < 0 ? -pid : pid))
			t = &procs[i];
	struct thread *th = NULL;
	if (t && sig) {
		__atomic_fetch_or(&t->sig_pending, 1ull << sig, __ATOMIC_RELAXED);	/* read
			by its thread at the return of a system call; nothing else is ordered */
		th = t->thread;
	}
	mlock_unlock_irqrestore(&proc_table_lock, k);
	/* a file wait of th's (pipe, poll) returns -EINTR: fs_interrupt only compares th
	 * with its registered sleepers (which are alive) before it touches it */
	if (th)
		fs_interrupt(th);
	return t ? 0 : -LX_ESRCH;
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
	long rc = exec_load(nm, p->fdt, p->fs, path, argv, envp, &entry, &sp);
	if (rc) {
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
	for (unsigned s = 0; s < PROC_NSIG; s++) {	/* handlers reset; ignored stays */
		if (p->sig_handler[s] != LX_SIG_IGN)
			p->sig_handler[s] = LX_SIG_DFL;
	}
	const char *b = path;
	for (const char *s = path; *s; s++)
		if (*s == '/')
			b = s + 1;
	size_t i = 0;
	for (; b[i] && i + 1 < sizeof p->comm; i++)
		p->comm[i] = b[i];
	p->comm[i] = 0;
	arch_uregs_exec(tf, entry, sp);
	proc_vfork_release(p);
	return 0;
}
