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
#include "sched_hooks.h"
#include "fs/vfs.h"
#include <ksync/errors.h>

LOCK_CLASS(uproc_table_class, "uproc-table", LOCK_MASTER, LOCK_DATA);

static struct mlock proc_table_lock = MLOCK_INIT(uproc_table_class, MLOCK_TICKET);
LOCKSTAT_STATIC(proc_table_lock);	/* on its class's list of instances (lockstat.h) */

/* The group's thread count changed (proc_table_lock held): its space's solo mark (proc.h
 * struct mm) and its descriptor table's (vfs.h fdtable_set_solo: a lookup without the
 * table's monitor) follow it. nthreads counts the threads that have not ended (an exiting
 * one still writes its clear_child_tid word; it has given up the table before its
 * count goes); only the group's own threads raise it (clone), so a mark read as set by
 * that one thread stays set until it clones. */
static void mm_solo_update(struct process *g)
{
	if (g->mm)
		__atomic_store_n(&g->mm->solo, g->nthreads == 1, __ATOMIC_RELAXED);
	if (g->fdt)
		fdtable_set_solo(g->fdt, g->nthreads == 1);
}
static struct process procs[PROC_MAX];	/* slots: proc_table_lock */
static int next_pid = 1;		/* proc_table_lock */
/* proc_table_lock: the slots not PROC_FREE, and one past the highest such slot (every slot
 * at or above procs_hi is PROC_FREE). A slot is ~19 KB (its signal actions, names and
 * paths), so a scan of all PROC_MAX touched 256 pages under this master lock: the Sprite
 * user benchmarks' projection found uproc-table held for a third of fork's cycle (tcg).
 * Slots are taken lowest first, so the scans below stop at the few in use. */
static unsigned procs_used, procs_hi;

/* A slot becomes free (proc_table_lock held): the counts follow. */
static void slot_free_locked(struct process *p)
{
	if (p->state != PROC_FREE)
		procs_used--;
	p->state = PROC_FREE;
	while (procs_hi && procs[procs_hi - 1].state == PROC_FREE)
		procs_hi--;
}

extern void (*fshooks_group_signal)(int sig);	/* fshooks.c */
static struct process *find_locked(int pid);
static void tty_group_signal(int sig);
void proc_init(void)
{
	fshooks_group_signal = tty_group_signal;	/* before any process runs */
	futex_init();
}


/* Pages a kernel copy into user memory may not take: when fewer are free, its fault
 * answers "no page" (the system call fails with EFAULT or ENOMEM) and the last pages are
 * left to the processes' own faults - a read that fills memory stops before the program
 * that made it has no page left for its stack (tests/user/oom.c "kernel"). */
#define KCOPY_RESERVE_PAGES 64

/* The page-fault policy (arch_if.h kernel_user_fault): IRQs off, from the fault. */
int kernel_user_fault(uint64_t addr, bool write, bool exec, bool user)
{
	struct process *p = proc_current();
	if (!p || !p->mm)
		return -1;
	if (!user && pmm_free_pages() < KCOPY_RESERVE_PAGES)
		return KERNEL_FAULT_OOM;
	return mm_fault(p->mm, addr, write, exec);
}

/* p's parent changed to parent (NULL: none): its pid for getppid's lock-free load.
 * proc_table_lock held; relaxed: the pid is a value, not a publication of anything. */
static void set_ppid(struct process *p, const struct process *parent)
{
	__atomic_store_n(&p->ppid, parent ? parent->pid : 0, __ATOMIC_RELAXED);
}

/* The shared space changed: CPUs that run it (another thread of the group) forget what
 * they cached of it (arch_as_shootdown). */
void mm_shootdown(struct mm *mm)
{
	if (mm)
		arch_as_shootdown(mm->as);
}

/* ---- the table ----------------------------------------------------------------------- */
uint64_t proc_pages_in_use(void)
{
	uint64_t n = 0;
	mlock_lock(&proc_table_lock);
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state == PROC_LIVE && procs[i].mm && procs[i].leader == &procs[i])
			n += arch_as_npages(procs[i].mm->as);	/* a group's space once */
	mlock_unlock(&proc_table_lock);
	return n;
}

/* A free slot for a child of parent (NULL: a program the runner spawns, which no
 * limit stops: Linux's init is not limited either); NULL when the table is full or the
 * parent's RLIMIT_NPROC is reached (Linux's copy_process: EAGAIN when the new process
 * would make the user's count exceed the soft limit; every ksync process is uid 0, and
 * a zombie counts until it is reaped, as Linux's release_task drops the count). */
static struct process *proc_alloc(struct process *parent, struct process *group)
{
	mlock_lock(&proc_table_lock);
	struct process *p = NULL;
	struct arch_uctx *stale = NULL;
	if (group && (group->group_exit || group->execer || group->state != PROC_LIVE)) {
		/* the group is ending (exit_group, a fatal signal, an execve): no new thread */
		mlock_unlock(&proc_table_lock);
		return NULL;
	}
	if (parent) {
		if (procs_used >= parent->rlim_nproc[0]) {
			mlock_unlock(&proc_table_lock);
			return NULL;
		}
	}
	for (unsigned i = 0; i < PROC_MAX; i++) {	/* the lowest free: keeps procs_hi low */
		if (procs[i].state == PROC_FREE) {
			p = &procs[i];
			/* an orphan's or an orphaned zombie's: nobody reaped it (proc_exit); its
			 * thread is gone or only switching away (which names the pointer, never
			 * reads the struct) */
			stale = p->uctx;
			memset(p, 0, sizeof *p);
			p->pid = next_pid++;
			p->state = PROC_LIVE;
			procs_used++;
			if (i >= procs_hi)
				procs_hi = i + 1;
			p->parent = parent;
			set_ppid(p, parent);
			/* a spawned program leads its own session and group; a child is in
			 * its parent's */
			p->pgid = parent ? parent->pgid : p->pid;
			p->sid = parent ? parent->sid : p->pid;
			p->rlim_core_max = LX_RLIM_INFINITY;	/* fork copies the parent's */
			p->rlim_nproc[0] = parent ? parent->rlim_nproc[0] : PROC_NPROC_DEFAULT;
			p->rlim_nproc[1] = parent ? parent->rlim_nproc[1] : PROC_NPROC_DEFAULT;
			p->leader = p;
			p->nthreads = p->live = 1;
			if (group) {	/* a thread: no parent of its own, the group's fields */
				p->parent = NULL;
				set_ppid(p, NULL);
				p->leader = group;
				p->nthreads = p->live = 0;
				group->nthreads++;
				group->live++;
				mm_solo_update(group);
			}
			break;
		}
	}
	mlock_unlock(&proc_table_lock);
	if (stale)
		arch_uctx_destroy(stale);
	return p;
}

/* Give back what a never-started or reaped process still holds. */
static void proc_free(struct process *p)
{
	if (p->uctx)
		arch_uctx_destroy(p->uctx);
	mlock_lock(&proc_table_lock);
	p->uctx = NULL;
	slot_free_locked(p);
	mlock_unlock(&proc_table_lock);
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
	mlock_lock(&proc_table_lock);
	p->thread = thread_self();
	/* a policy set after proc_start read it and before this record found no thread to
	 * move (proc_sched): its level applies here, under the same lock */
	(void)thread_set_level(p->thread, sched_level(p->sched_policy));
	mlock_unlock(&proc_table_lock);
	sched_lowered();	/* lowered by it: a higher thread that is ready runs first */
	arch_user_enter(p->uctx);
}

/* Start p's thread (p->uctx's first frame set). */
static long proc_start(struct process *p)
{
	char name[SCHED_NAME_MAX];
	ksnprintf(name, sizeof name, "pid%d", p->pid);
	struct thread *t;
	mlock_lock(&proc_table_lock);
	unsigned level = sched_level(p->sched_policy);	/* its policy's (fork, clone: inherited) */
	mlock_unlock(&proc_table_lock);
	int rc = thread_create_user(&t, user_thread_main, p, level,
				    p->affinity ? p->affinity : SCHED_AFFINITY_ANY, name, p->uctx);
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
	mlock_lock(&proc_table_lock);
	memcpy(p->comm, n->comm, sizeof p->comm);
	memcpy(p->exe, n->exe, sizeof p->exe);
	memcpy(p->cmdline, n->cmdline, sizeof p->cmdline);
	p->cmdline_len = n->cmdline_len;
	mlock_unlock(&proc_table_lock);
	kfree(n);
}

void proc_set_comm(struct process *p, const char *name)
{
	p = proc_group(p);	/* one name per process (Linux's is per thread: docs) */
	mlock_lock(&proc_table_lock);
	memcpy(p->comm, name, sizeof p->comm);
	p->comm[sizeof p->comm - 1] = 0;
	mlock_unlock(&proc_table_lock);
}

/* ---- /proc's view (kernel/proc/procfs.c formats it) ------------------------------------- */
unsigned proc_pids(int *out, unsigned max)
{
	unsigned n = 0;
	mlock_lock(&proc_table_lock);
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state != PROC_FREE && procs[i].leader == &procs[i] && n < max)
			out[n++] = procs[i].pid;	/* processes, not threads (as Linux's /proc) */
	mlock_unlock(&proc_table_lock);
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
	self = self ? proc_group(self) : NULL;
	bool found = false;
	mlock_lock(&proc_table_lock);
	for (unsigned i = 0; i < procs_hi && !found; i++) {
		struct process *p = &procs[i];
		if (p->state == PROC_FREE || p->pid != pid)
			continue;
		p = p->leader;	/* a thread's id shows its process, as Linux's /proc/<tid> */
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
		s->nthreads = p->nthreads ? p->nthreads : 1;
	}
	mlock_unlock(&proc_table_lock);
	return found;
}

long proc_spawn(const char *path, char *const argv[], char *const envp[], struct fdtable *fds,
		bool ctty)
{
	struct process *p = proc_alloc(NULL, NULL);
	if (!p)
		return -LX_EAGAIN;
	p->kernel_waited = true;
	p->mm = mm_create();
	p->fdt = fds ? fdtable_clone(fds) : fdtable_new();
	if (p->fdt)
		fdtable_set_solo(p->fdt, true);	/* the new process's one thread's */
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
		mlock_lock(&proc_table_lock);
		struct process *p = NULL;
		for (unsigned i = 0; i < procs_hi; i++)
			if (procs[i].state != PROC_FREE && procs[i].pid == pid)
				p = &procs[i];
		KASSERT(p && p->kernel_waited);
		if (p->state == PROC_ZOMBIE) {
			int st = p->wstatus;
			mlock_unlock(&proc_table_lock);
			proc_free(p);
			return st;
		}
		p->kwaiter = thread_self();
		mlock_unlock(&proc_table_lock);
		sched_sleep(PROC_COND_CHILD);
	}
}

/* ---- fork, vfork, clone ------------------------------------------------------------------ */
#define LX_CLONE_VM 0x100
#define LX_CLONE_FS 0x200
#define LX_CLONE_FILES 0x400
#define LX_CLONE_SIGHAND 0x800
#define LX_CLONE_VFORK 0x4000
#define LX_CLONE_PARENT 0x8000
#define LX_CLONE_THREAD 0x10000
#define LX_CLONE_SYSVSEM 0x40000
#define LX_CLONE_SETTLS 0x80000
#define LX_CLONE_PARENT_SETTID 0x100000
#define LX_CLONE_CHILD_CLEARTID 0x200000
#define LX_CLONE_CHILD_SETTID 0x1000000
#define LX_CSIGNAL 0xff

static struct thread *post_locked(struct process *p, int sig, const struct lx_siginfo *info);
static void wake_signalled(struct thread *t);

/* A new thread of the caller's group (clone with CLONE_THREAD): its own slot and tid,
 * the group's space, files and handlers; it starts where the caller returns, with 0 in
 * rax, on newsp, with tls as its FS base (CLONE_SETTLS). */
static long clone_thread(struct trapframe *tf, uint64_t flags, uint64_t newsp, uint64_t ptid,
			 uint64_t ctid, uint64_t tls)
{
	struct process *self = proc_current(), *g = proc_group(self);
	struct process *c = proc_alloc(g, g);
	if (!c)
		return -LX_EAGAIN;
	c->mm = self->mm;
	c->fdt = self->fdt;
	c->fs = self->fs;
	c->uctx = arch_uctx_create(c->mm->as, c);
	long rc = c->uctx ? 0 : -LX_ENOMEM;
	if (!rc && !arch_uctx_set_fs(c->uctx, (flags & LX_CLONE_SETTLS) ? tls : arch_uctx_get_fs(self->uctx)))
		rc = -LX_EPERM;	/* Linux's do_arch_prctl: a base outside user space */
	if (!rc) {
		/* the new thread's mask is the caller's; no alternate stack (Linux clears it
		 * for CLONE_VM without CLONE_VFORK) */
		c->sigmask = self->sigmask;
		c->rlim_core = self->rlim_core;
		c->rlim_core_max = self->rlim_core_max;
		c->affinity = self->affinity;	/* Linux's child and thread inherit it */
		mlock_lock(&proc_table_lock);
		c->sched_prio = self->sched_prio;	/* a new thread inherits them */
		c->sched_policy = sched_fork_policy(self->sched_policy, &c->sched_prio);
		mlock_unlock(&proc_table_lock);
		if (flags & LX_CLONE_CHILD_CLEARTID)
			c->clear_child_tid = ctid;
		uint32_t tid = (uint32_t)c->pid;
		/* Linux ignores a fault of either store */
		if (flags & LX_CLONE_PARENT_SETTID)
			(void)copy_to_user((void *)ptid, &tid, 4);
		if (flags & LX_CLONE_CHILD_SETTID)
			(void)copy_to_user((void *)ctid, &tid, 4);
		arch_uctx_start_fork(c->uctx, tf);
		if (newsp)
			arch_uctx_set_start_sp(c->uctx, newsp);
		rc = proc_start(c);
	}
	if (rc) {
		mlock_lock(&proc_table_lock);
		g->nthreads--;
		g->live--;
		mm_solo_update(g);
		c->mm = NULL;
		c->fdt = NULL;
		c->fs = NULL;
		mlock_unlock(&proc_table_lock);
		proc_free(c);
		return rc;
	}
	return c->pid;
}

long proc_fork(struct trapframe *tf, uint64_t flags, uint64_t newsp, uint64_t ptid, uint64_t ctid,
	       uint64_t tls)
{
	struct process *self = proc_current(), *g = proc_group(self);
	/* Linux's copy_process: a thread needs the handlers shared, shared handlers need
	 * the space shared */
	if ((flags & LX_CLONE_THREAD) && !(flags & LX_CLONE_SIGHAND))
		return -LX_EINVAL;
	if ((flags & LX_CLONE_SIGHAND) && !(flags & LX_CLONE_VM))
		return -LX_EINVAL;
	/* CLONE_NEWNS with CLONE_FS, CLONE_NEWUSER/CLONE_NEWPID with CLONE_THREAD: EINVAL */
	if ((flags & LX_CLONE_FS) && (flags & 0x20000))
		return -LX_EINVAL;
	if ((flags & LX_CLONE_THREAD) && (flags & (0x10000000 | 0x20000000)))
		return -LX_EINVAL;
	if (flags & LX_CLONE_THREAD) {
		if ((flags & (LX_CLONE_FS | LX_CLONE_FILES)) != (LX_CLONE_FS | LX_CLONE_FILES))
			return -LX_EINVAL;	/* ksync's threads share both (docs/userspace.md) */
		return clone_thread(tf, flags, newsp, ptid, ctid, tls);
	}
	if (flags & LX_CLONE_SIGHAND)
		return -LX_EINVAL;	/* shared handlers between processes: not built */
	bool vfork = flags & LX_CLONE_VFORK;
	struct process *c = proc_alloc(g, NULL);
	if (!c)
		return -LX_EAGAIN;
	c->mm = mm_create();
	c->fdt = fdtable_clone(self->fdt);
	if (c->fdt)
		fdtable_set_solo(c->fdt, true);	/* the child's one thread's */
	c->fs = fs_ctx_clone(self->fs);
	c->uctx = c->mm ? arch_uctx_create(c->mm->as, c) : NULL;
	long rc = c->mm && c->fdt && c->fs && c->uctx ? 0 : -LX_ENOMEM;
	if (!rc) {
		/* vfork and CLONE_VM children get a copy-on-write copy too: a correct vfork
		 * child only execs or exits, and cannot tell the difference */
		rc = mm_fork(self->mm, c->mm);
		/* the parent's writable pages are read-only now: its other threads' CPUs
		 * must stop writing through their old translations */
		mm_shootdown(self->mm);
	}
	if (!rc) {
		mlock_lock(&proc_table_lock);	/* the group's fields */
		memcpy(c->sig_handler, g->sig_handler, sizeof c->sig_handler);
		memcpy(c->sig_flags, g->sig_flags, sizeof c->sig_flags);
		memcpy(c->sig_restorer, g->sig_restorer, sizeof c->sig_restorer);
		memcpy(c->sig_mask_of, g->sig_mask_of, sizeof c->sig_mask_of);
		c->sched_prio = self->sched_prio;	/* Linux's child inherits them */
		c->sched_policy = sched_fork_policy(self->sched_policy, &c->sched_prio);
		memcpy(c->comm, g->comm, sizeof c->comm);	/* /proc reads them */
		memcpy(c->exe, g->exe, sizeof c->exe);
		memcpy(c->cmdline, g->cmdline, sizeof c->cmdline);
		c->cmdline_len = g->cmdline_len;
		mlock_unlock(&proc_table_lock);
		c->sigmask = self->sigmask;
		c->ss_sp = self->ss_sp;
		c->ss_size = self->ss_size;
		c->rlim_core = self->rlim_core;
		c->rlim_core_max = self->rlim_core_max;
		c->affinity = self->affinity;	/* Linux's child and thread inherit it */
		if (flags & LX_CLONE_CHILD_CLEARTID)
			c->clear_child_tid = ctid;
		uint32_t tid = (uint32_t)c->pid;
		if (flags & LX_CLONE_PARENT_SETTID)
			(void)copy_to_user((void *)ptid, &tid, 4);
		if ((flags & LX_CLONE_CHILD_SETTID) && ctid >= USER_VA_MIN && ctid + 4 <= USER_VA_END)
			(void)mm_write(c->mm, ctid, &tid, 4);	/* in the child's copy */
		arch_uctx_set_fs(c->uctx, (flags & LX_CLONE_SETTLS) ? tls : arch_uctx_get_fs(self->uctx));
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
			mlock_lock(&proc_table_lock);
			bool done = c->vfork_done || c->state != PROC_LIVE || c->pid != pid;
			if (!done)
				g->waiter = thread_self();
			mlock_unlock(&proc_table_lock);
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
	mlock_lock(&proc_table_lock);
	p->vfork_done = true;
	struct thread *w = p->parent ? p->parent->waiter : NULL;
	mlock_unlock(&proc_table_lock);
	if (w)
		sched_wakeup(w, PROC_COND_CHILD);
}

/* ---- exit, wait ------------------------------------------------------------------------ */
static bool stop_complete_locked(struct process *g);
static void parent_wake(struct process *p);

/* The threads of g's group that have not ended (but the caller), into out[PROC_MAX] */
static unsigned group_threads_locked(struct process *g, struct process *except, struct thread **out)
{
	unsigned n = 0;
	for (unsigned i = 0; i < procs_hi; i++) {
		struct process *t = &procs[i];
		if (t->state == PROC_LIVE && t->leader == g && !t->thread_done && t != except && t->thread)
			out[n++] = t->thread;
	}
	return n;
}

/* SIGKILL to every other thread of g (exit_group, a fatal signal, execve's de_thread):
 * their threads into wake[PROC_MAX], to wake after the unlock. A thread that has not
 * recorded its struct thread yet takes it at its first return from ring 3. */
static unsigned kill_others_locked(struct process *g, struct process *self, struct thread **wake)
{
	unsigned n = 0;
	for (unsigned i = 0; i < procs_hi; i++) {
		struct process *t = &procs[i];
		if (t->state != PROC_LIVE || t->leader != g || t->thread_done || t == self)
			continue;
		t->tsig_info_valid &= ~PROC_SIGBIT(LX_SIGKILL);
		/* relaxed: as every pending bit (proc.h) */
		__atomic_fetch_or(&t->tsig_pending, PROC_SIGBIT(LX_SIGKILL), __ATOMIC_RELAXED);
		if (t->thread)
			wake[n++] = t->thread;
	}
	return n;
}

/* The end of the calling thread; group: exit_group or a fatal signal (every other
 * thread is sent SIGKILL, the group's status is the first such wstatus), else exit. The
 * group's last thread ends the process: files, space, children, the parent's SIGCHLD. */
static __attribute__((noreturn)) void thread_end(bool group, int wstatus)
{
	struct process *p = proc_current();
	KASSERT(p);
	struct process *g = proc_group(p);
	struct thread *wake[PROC_MAX];
	unsigned nw = 0;
	mlock_lock(&proc_table_lock);
	/* a thread killed by execve's de_thread ends alone */
	if (group && !g->group_exit && !(g->execer && g->execer != p)) {
		g->group_exit = true;
		g->group_status = wstatus;
		nw = kill_others_locked(g, p, wake);
	}
	/* without a group exit the process's status is its last thread's (what the host's
	 * Linux reports: tests/user/thr_exit.c "group"); written with the decrement of the
	 * threads that have not begun to exit, before this one's clear_child_tid wakes
	 * anyone (as Linux's signal->live), so the last writer is the last thread */
	if (!group)
		g->wstatus = wstatus;
	g->live--;
	bool others = g->nthreads > 1;
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
	/* the robust list and clear_child_tid, while the space is still loaded */
	futex_thread_exit(p, others);
	/* from here a kernel thread: the switches no longer read p->uctx, which the reaper
	 * frees (a leader's) or this thread itself (another's), even before its last switch */
	thread_drop_uctx();
	struct arch_uctx *mine = NULL;
	mlock_lock(&proc_table_lock);
	p->thread_done = true;
	bool last = --g->nthreads == 0;
	mm_solo_update(g);
	if (p != g) {
		/* a thread's slot is free at once (Linux reaps threads itself) */
		mine = p->uctx;
		p->uctx = NULL;
	}
	/* a group stop waiting for this thread is complete without it */
	bool tell = !last && stop_complete_locked(g);
	if (!last) {
		struct thread *ex = g->execer && g->nthreads == 1 ? g->execer->thread : NULL;
		if (p != g) {
			p->mm = NULL;
			p->fdt = NULL;
			p->fs = NULL;
			slot_free_locked(p);
		}
		mlock_unlock(&proc_table_lock);
		if (mine)
			arch_uctx_destroy(mine);
		if (ex)
			sched_wakeup(ex, PROC_COND_CHILD);	/* de_thread waits for this */
		if (tell)
			parent_wake(g);
		thread_exit();
	}
	/* the group's last thread: the space and files go (loaded nowhere now) */
	struct mm *mm = p->mm;
	struct fdtable *fdt = p->fdt;
	struct fs_ctx *fs = p->fs;
	p->mm = g->mm = NULL;	/* /proc reads mm under this lock */
	p->fdt = g->fdt = NULL;
	p->fs = g->fs = NULL;
	mlock_unlock(&proc_table_lock);
	if (mine)
		arch_uctx_destroy(mine);
	if (fdt)
		fdtable_put(fdt);	/* may wake a pipe's other end */
	if (fs)
		fs_ctx_put(fs);
	mm_destroy(mm);
	/* the user contexts of slots freed here, whose threads ended: destroyed after the
	 * unlock (not left to the slot's reuse: a run's heap account must balance) */
	struct arch_uctx *gone[PROC_MAX + 1];
	unsigned ngone = 0;
	mlock_lock(&proc_table_lock);
	wstatus = g->group_exit ? g->group_status : g->wstatus;
	/* children: zombies nobody will wait for are freed, the living are orphaned */
	for (unsigned i = 0; i < procs_hi; i++) {
		struct process *c = &procs[i];
		if (c->state == PROC_FREE || c->parent != g)
			continue;
		c->parent = NULL;
		set_ppid(c, NULL);
		if (c->state == PROC_ZOMBIE && !c->kernel_waited) {
			slot_free_locked(c);
			if (c->uctx)
				gone[ngone++] = c->uctx;
			c->uctx = NULL;
		}
	}
	if (p != g)
		slot_free_locked(p);
	g->wstatus = wstatus;
	g->vfork_done = true;
	unsigned nwait = 0;
	struct thread *w = NULL, *sigt = NULL;
	struct process *par = g->parent;
	bool autoreap = false;
	if (par) {
		/* every thread of the parent that waits for a child (wait4, vfork) */
		nwait = group_threads_locked(par, NULL, wake);
		/* SIGCHLD (Linux's do_notify_parent): not sent when the parent ignores it;
		 * SIG_IGN or SA_NOCLDWAIT: nobody waits for the child, it is reaped here */
		uint64_t h = par->sig_handler[LX_SIGCHLD];
		autoreap = h == LX_SIG_IGN || (par->sig_flags[LX_SIGCHLD] & LX_SA_NOCLDWAIT);
		if (h != LX_SIG_IGN) {
			struct lx_siginfo si = { .si_signo = LX_SIGCHLD };
			bool sig = (wstatus & 0x7f) != 0;
			si.si_code = !sig ? LX_CLD_EXITED : (wstatus & 0x80) ? LX_CLD_DUMPED : LX_CLD_KILLED;
			si.u.k.pid = g->pid;
			si.u.k.status = sig ? (wstatus & 0x7f) : (wstatus >> 8 & 0xff);
			sigt = post_locked(par, LX_SIGCHLD, &si);
		}
	} else if (g->kernel_waited) {
		w = g->kwaiter;
	}
	bool orphan = (!par && !g->kernel_waited) || autoreap;
	if (autoreap) {
		g->parent = NULL;
		set_ppid(g, NULL);
	}
	if (orphan)	/* the slot may be reused from here */
		slot_free_locked(g);
	else
		g->state = PROC_ZOMBIE;
	if (orphan && g->uctx) {	/* nobody reaps it: its (ended) leader's context */
		gone[ngone++] = g->uctx;
		g->uctx = NULL;
	}
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < ngone; i++)
		arch_uctx_destroy(gone[i]);
	if (w)
		sched_wakeup(w, PROC_COND_CHILD);
	for (unsigned i = 0; i < nwait; i++)
		sched_wakeup(wake[i], PROC_COND_CHILD);
	if (sigt)
		wake_signalled(sigt);
	thread_exit();
}

void proc_exit(int wstatus) { thread_end(true, wstatus); }
void proc_thread_exit(int wstatus) { thread_end(false, wstatus); }

long proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage)
{
	struct process *self = proc_current(), *g = proc_group(self);
	if (options & ~(LX_WNOHANG | LX_WUNTRACED | LX_WCONTINUED | 0x40000000 /* __WALL */ |
			0x80000000))
		return -LX_EINVAL;
	if (pid == INT32_MIN)
		return -LX_ESRCH;	/* -INT_MIN is no group: Linux's kernel_wait4 */
	for (;;) {
		mlock_lock(&proc_table_lock);
		bool any = false;
		struct process *z = NULL, *rep = NULL;
		int rst = 0;
		for (unsigned i = 0; i < procs_hi; i++) {
			struct process *c = &procs[i];
			if (c->state == PROC_FREE || c->parent != g)
				continue;
			if (pid > 0 && c->pid != pid)
				continue;
			if (pid == 0 && c->pgid != g->pgid)
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
			g->waiter = thread_self();
		int zpid = z ? z->pid : 0, st = z ? z->wstatus : 0;
		if (z) {
			z->parent = NULL;	/* reaped: nobody else sees it */
			set_ppid(z, NULL);
		}
		mlock_unlock(&proc_table_lock);
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
			mlock_lock(&proc_table_lock);
			if (g->waiter == thread_self())
				g->waiter = NULL;
			mlock_unlock(&proc_table_lock);
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
	mlock_lock(&proc_table_lock);
	struct process *t = pid ? find_locked(pid) : proc_group(proc_current());
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
	mlock_unlock(&proc_table_lock);
	return rc;
}

/* The parent's pid as it was at some moment of the call (it may change right after, as
 * on Linux): one load, no lock - the null system call of the OS-primitives table, which
 * took proc_table_lock (interrupts masked, the lock's statistics) until then. */
KERNEL_HOT long proc_getppid(void)
{
	return __atomic_load_n(&proc_group(proc_current())->ppid, __ATOMIC_RELAXED);
}

/* ---- signals: posting (under proc_table_lock), process groups ---------------------------
 * A process-directed signal (kill, SIGCHLD, the tty's) is pending in the group's set (the
 * leader's sig_pending) and wakes one thread that does not block it (Linux's
 * complete_signal); a thread-directed one (tkill/tgkill, a fault, SIGPIPE, exit_group's
 * SIGKILL) in that thread's own set. A pending standard signal keeps its first siginfo
 * (no queueing: Linux keeps the first). */
static void notify_parent_locked(struct process *p, int code, int status);

/* Linux's prepare_signal for the group g: SIGCONT discards pending stop signals and
 * continues a stopped process - its stopped thread is returned, to be woken whatever it
 * blocks (the mask of a thread stopped inside musl's fork blocks everything); a stop
 * signal discards a pending SIGCONT */
static struct thread *prepare_locked(struct process *g, int sig)
{
	struct thread *cont = NULL;
	uint64_t b = PROC_SIGBIT(sig);
	uint64_t stops = PROC_SIGBIT(LX_SIGSTOP) | PROC_SIGBIT(LX_SIGTSTP) |
			 PROC_SIGBIT(LX_SIGTTIN) | PROC_SIGBIT(LX_SIGTTOU);
	/* relaxed, both: a pending bit orders nothing (its siginfo is under this lock) */
	if (sig == LX_SIGCONT) {
		__atomic_fetch_and(&g->sig_pending, ~stops, __ATOMIC_RELAXED);
		if (g->stopped) {
			/* the stopped thread wakes its parent itself when it leaves proc_stop
			 * (no wakeup under this lock) */
			__atomic_store_n(&g->stopped, false, __ATOMIC_RELAXED);	/* as proc_stop */
			g->stop_report = false;
			g->cont_report = true;
			notify_parent_locked(g, LX_CLD_CONTINUED, LX_SIGCONT);
			cont = g->stop_sleeper;
		}
	} else if (b & stops) {
		__atomic_fetch_and(&g->sig_pending, ~PROC_SIGBIT(LX_SIGCONT), __ATOMIC_RELAXED);
	}
	return cont;
}

/* sig into a pending set and its siginfo slot (the first one stays) */
static void pend_locked(uint64_t *pending, uint64_t *valid, struct lx_siginfo *infos, int sig,
			const struct lx_siginfo *info)
{
	uint64_t b = PROC_SIGBIT(sig);
	/* relaxed: the bit's readers take the siginfo under this lock */
	if (!(__atomic_load_n(pending, __ATOMIC_RELAXED) & b)) {
		if (info) {
			infos[sig] = *info;
			*valid |= b;
		} else {
			*valid &= ~b;
		}
	}
	__atomic_fetch_or(pending, b, __ATOMIC_RELAXED);
}

/* The thread of group g to wake for sig: the leader's if it does not block sig, else the
 * first other thread that does not; NULL when all block it (it stays pending for the
 * first to unblock it, which finds it at its return to ring 3). */
static struct thread *target_locked(struct process *g, int sig)
{
	uint64_t b = sig == LX_SIGKILL ? 0 : PROC_SIGBIT(sig);
	/* relaxed: each thread writes its own mask without this lock; a thread that
	 * unblocks sig after this read finds it pending at its return to ring 3 */
	if (!g->thread_done && g->thread && !(__atomic_load_n(&g->sigmask, __ATOMIC_RELAXED) & b))
		return g->thread;
	for (unsigned i = 0; i < procs_hi; i++) {
		struct process *t = &procs[i];
		if (t->state != PROC_LIVE || t->leader != g || t->thread_done || !t->thread)
			continue;
		if (!(__atomic_load_n(&t->sigmask, __ATOMIC_RELAXED) & b))
			return t->thread;
	}
	return NULL;
}

/* A process-directed signal to the group of p (a task of it). Returns the thread to
 * wake (after the unlock: wake_signalled). p LIVE. */
static struct thread *post_locked(struct process *p, int sig, const struct lx_siginfo *info)
{
	struct process *g = p->leader;
	struct thread *cont = prepare_locked(g, sig);
	pend_locked(&g->sig_pending, &g->sig_info_valid, g->sig_info, sig, info);
	return cont ? cont : target_locked(g, sig);	/* the stopped thread first */
}

/* A thread-directed signal to task t (LIVE, its thread not ended) */
static struct thread *tpost_locked(struct process *t, int sig, const struct lx_siginfo *info)
{
	struct thread *cont = prepare_locked(t->leader, sig);
	pend_locked(&t->tsig_pending, &t->tsig_info_valid, t->tsig_info, sig, info);
	return cont ? cont : t->thread;	/* t takes it at its return to ring 3 anyway */
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
 * set SA_NOCLDSTOP); the caller wakes the parent after the unlock (parent_wake). p is a
 * group leader. */
static void notify_parent_locked(struct process *p, int code, int status)
{
	struct process *par = p->parent;
	if (!par || par->sig_handler[LX_SIGCHLD] == LX_SIG_IGN ||
	    (par->sig_flags[LX_SIGCHLD] & LX_SA_NOCLDSTOP))
		return;
	struct lx_siginfo si = { .si_signo = LX_SIGCHLD, .si_code = code };
	si.u.k.pid = p->pid;
	si.u.k.status = status;
	pend_locked(&par->sig_pending, &par->sig_info_valid, par->sig_info, LX_SIGCHLD, &si);
}

/* p's parent's wait4 (PROC_COND_CHILD) and signal waits; no lock held. p a leader. */
static void parent_wake(struct process *p)
{
	struct thread *w[PROC_MAX];
	mlock_lock(&proc_table_lock);
	struct process *par = p->parent;
	unsigned n = par ? group_threads_locked(par, NULL, w) : 0;
	struct thread *t = par ? target_locked(par, LX_SIGCHLD) : NULL;
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < n; i++)
		sched_wakeup(w[i], PROC_COND_CHILD);
	if (t)
		wake_signalled(t);
}

/* The group stop is complete (every thread not ended has joined): the parent is told
 * once (wait4's WUNTRACED report, SIGCHLD CLD_STOPPED); the caller wakes it after the
 * unlock (parent_wake) when this says true. */
static bool stop_complete_locked(struct process *g)
{
	if (!g->stopped || g->stop_notified || g->nstopped < g->nthreads)
		return false;
	g->stop_notified = true;
	g->stop_report = true;
	notify_parent_locked(g, LX_CLD_STOPPED, g->stop_sig);
	return true;
}

/* Thread p joins its group's stop and sleeps until SIGCONT or SIGKILL. The first thread
 * to leave after SIGCONT (which wakes one: prepare_locked) wakes the others. */
static void stop_wait(struct process *p)
{
	struct process *g = p->leader;
	struct thread *wake[PROC_MAX];
	mlock_lock(&proc_table_lock);
	bool tell = false;
	if (g->stopped && !p->stop_joined) {
		p->stop_joined = true;
		g->nstopped++;
		g->stop_sleeper = thread_self();
		tell = stop_complete_locked(g);
	}
	mlock_unlock(&proc_table_lock);
	if (tell)
		parent_wake(g);
	for (;;) {
		unsigned nw = 0;
		mlock_lock(&proc_table_lock);
		/* relaxed: SIGKILL's bit is set under this lock */
		bool killed = proc_sig_pending(p) & PROC_SIGBIT(LX_SIGKILL);
		bool go = !g->stopped || killed;
		if (go) {
			if (p->stop_joined) {
				p->stop_joined = false;
				g->nstopped--;
			}
			if (g->stop_sleeper == thread_self())
				g->stop_sleeper = NULL;
			if (!killed)
				nw = group_threads_locked(g, p, wake);
		}
		mlock_unlock(&proc_table_lock);
		if (go) {
			for (unsigned i = 0; i < nw; i++)
				sched_wakeup(wake[i], PROC_COND_SIG);	/* the other sleepers */
			if (!killed)
				parent_wake(g);	/* SIGCONT's report (prepare_locked) */
			return;
		}
		sched_sleep(PROC_COND_SIG);	/* SIGCONT and SIGKILL post with this flag */
	}
}

/* The default action of a stop signal, taken by thread p: the group is marked stopped,
 * its other threads are woken so that their waits end (proc_sig_any_acts) and each
 * joins at its return to ring 3 (a thread running in ring 3: at its next interrupt);
 * the parent hears of the stop once all have joined, as Linux's group stop. */
void proc_stop(struct process *p, int sig)
{
	struct process *g = p->leader;
	struct thread *wake[PROC_MAX];
	unsigned nw = 0;
	mlock_lock(&proc_table_lock);
	if (!g->stopped) {
		/* relaxed: proc_sig_any_acts's hint; everything else reads it under here */
		__atomic_store_n(&g->stopped, true, __ATOMIC_RELAXED);
		g->stop_sig = sig;
		g->stop_report = false;
		g->cont_report = false;
		g->stop_notified = false;
		nw = group_threads_locked(g, p, wake);
	}
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
	stop_wait(p);
}

void proc_stop_join(struct process *p)
{
	stop_wait(p);
}

void proc_signal_send(struct process *p, int sig, const struct lx_siginfo *info)
{
	mlock_lock(&proc_table_lock);
	struct thread *t = p->state == PROC_LIVE && !p->thread_done ? tpost_locked(p, sig, info) : NULL;
	mlock_unlock(&proc_table_lock);
	if (t)
		wake_signalled(t);
}

/* take sig off one pending set under proc_table_lock; false: it was not there */
static bool take_locked(struct process *p, uint64_t *pending, uint64_t *valid,
			const struct lx_siginfo *infos, int sig, struct lx_siginfo *info)
{
	uint64_t b = PROC_SIGBIT(sig);
	/* relaxed: the siginfo it guards is read under this lock */
	uint64_t old = __atomic_fetch_and(pending, ~b, __ATOMIC_RELAXED);
	bool had = old & b;
	if (had && (*valid & b)) {
		*info = infos[sig];
	} else if (had) {
		/* set without a siginfo: SIGPIPE from the process's own write (Linux's
		 * send_sig(SIGPIPE, current, 0): SI_USER from itself) */
		memset(info, 0, sizeof *info);
		info->si_signo = sig;
		info->si_code = LX_SI_USER;
		info->u.k.pid = p->leader->pid;
	}
	if (had)
		*valid &= ~b;
	return had;
}

bool proc_signal_take(struct process *p, int sig, struct lx_siginfo *info)
{
	struct process *g = p->leader;
	mlock_lock(&proc_table_lock);
	bool had = take_locked(p, &p->tsig_pending, &p->tsig_info_valid, p->tsig_info, sig, info) ||
		   take_locked(p, &g->sig_pending, &g->sig_info_valid, g->sig_info, sig, info);
	mlock_unlock(&proc_table_lock);
	return had;
}

KERNEL_HOT void proc_sigaction_set(struct process *p, int sig, const struct lx_sigaction *sa)
{
	struct process *g = p->leader;
	mlock_lock(&proc_table_lock);
	/* relaxed stores: proc_sig_acts reads them without the lock */
	__atomic_store_n(&g->sig_handler[sig], sa->handler, __ATOMIC_RELAXED);
	g->sig_flags[sig] = sa->flags;
	g->sig_restorer[sig] = sa->restorer;
	g->sig_mask_of[sig] = sa->mask;
	mlock_unlock(&proc_table_lock);
}

void proc_sigaction_get(struct process *p, int sig, struct lx_sigaction *sa)
{
	struct process *g = p->leader;
	mlock_lock(&proc_table_lock);
	sa->handler = g->sig_handler[sig];
	sa->flags = g->sig_flags[sig];
	sa->restorer = g->sig_restorer[sig];
	sa->mask = g->sig_mask_of[sig];
	mlock_unlock(&proc_table_lock);
}

/* kill (Linux's kill_something_info): pid > 0 the process with that id (a thread's id
 * names its process, as Linux's); 0 the caller's group; -1 every process but pid 1 and
 * the caller; < -1 the group -pid. sig 0: existence only. A zombie exists (0) but takes
 * no signal. */
long proc_kill(int pid, int sig)
{
	if (sig < 0 || sig >= PROC_NSIG)
		return -LX_EINVAL;
	if (pid == INT32_MIN)
		return -LX_ESRCH;
	struct process *self = proc_group(proc_current());
	struct lx_siginfo si = { .si_signo = sig, .si_code = LX_SI_USER };
	si.u.k.pid = self->pid;
	struct thread *wake[PROC_MAX];
	unsigned nw = 0, found = 0;
	mlock_lock(&proc_table_lock);
	for (unsigned i = 0; i < procs_hi; i++) {
		struct process *t = &procs[i];
		if (t->state == PROC_FREE)
			continue;
		if (pid > 0 ? t->pid != pid : t->leader != t)
			continue;	/* groups: each process once, by its leader */
		t = t->leader;
		bool match = pid > 0 ? true : pid == 0 ? t->pgid == self->pgid :
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
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
	return found ? 0 : -LX_ESRCH;
}

/* tkill/tgkill: the thread tid (of the process tgid, for tgkill) */
long proc_tkill(int tgid, int tid, int sig)
{
	if (sig < 0 || sig >= PROC_NSIG || tid <= 0 || (tgid != -1 && tgid <= 0))
		return -LX_EINVAL;
	struct process *self = proc_group(proc_current());
	struct lx_siginfo si = { .si_signo = sig, .si_code = LX_SI_TKILL };
	si.u.k.pid = self->pid;
	struct thread *th = NULL;
	bool found = false;
	mlock_lock(&proc_table_lock);
	for (unsigned i = 0; i < procs_hi; i++) {
		struct process *t = &procs[i];
		if (t->state != PROC_LIVE || t->thread_done || t->pid != tid)
			continue;
		if (tgid != -1 && t->leader->pid != tgid)
			continue;
		found = true;
		if (sig)
			th = tpost_locked(t, sig, &si);
	}
	mlock_unlock(&proc_table_lock);
	if (th)
		wake_signalled(th);
	return found ? 0 : -LX_ESRCH;
}

/* The process (group leader) whose id, or one of whose threads' ids, is pid */
static struct process *find_locked(int pid)
{
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state != PROC_FREE && procs[i].pid == pid)
			return procs[i].leader;
	return NULL;
}

/* setpgid (Linux's rules, without the "child has exec'd" EACCES): the caller or a child
 * of it, in the caller's session, not a session leader; into its own new group or an
 * existing group of the same session. */
long proc_setpgid(int pid, int pgid)
{
	struct process *self = proc_group(proc_current());
	if (pgid < 0)
		return -LX_EINVAL;
	long rc = 0;
	mlock_lock(&proc_table_lock);
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
		for (unsigned i = 0; i < procs_hi; i++)
			if (procs[i].state != PROC_FREE && procs[i].leader == &procs[i] &&
			    procs[i].pgid == pgid && procs[i].sid == self->sid)
				ok = true;
		if (!ok) {
			rc = -LX_EPERM;
			goto out;
		}
	}
	t->pgid = pgid;
out:
	mlock_unlock(&proc_table_lock);
	return rc;
}

/* getpgid / getsid: process `pid`'s (0: the caller's) group or session, read under
 * proc_table_lock (setpgid and setsid write them there) */
static long group_of(int pid, bool session)
{
	mlock_lock(&proc_table_lock);
	struct process *t = pid ? find_locked(pid) : proc_group(proc_current());
	long rc = !t ? -LX_ESRCH : session ? t->sid : t->pgid;
	mlock_unlock(&proc_table_lock);
	return rc;
}

long proc_getpgid(int pid) { return group_of(pid, false); }
long proc_getsid(int pid) { return group_of(pid, true); }

unsigned sched_level(int policy)
{
	switch (policy & ~LX_SCHED_RESET_ON_FORK) {
	case LX_SCHED_FIFO: case LX_SCHED_RR: return 0;
	case LX_SCHED_BATCH: return SCHED_LEVELS > 2 ? 2 : SCHED_LEVELS - 1;
	case LX_SCHED_IDLE: return SCHED_LEVELS - 1;
	default: return 1;
	}
}

int sched_fork_policy(int policy, int *prio)
{
	if (!(policy & LX_SCHED_RESET_ON_FORK))
		return policy;
	policy &= ~LX_SCHED_RESET_ON_FORK;
	if (policy == LX_SCHED_FIFO || policy == LX_SCHED_RR || policy == LX_SCHED_DEADLINE) {
		*prio = 0;
		return LX_SCHED_OTHER;
	}
	return policy;
}

/* The task (a thread's slot) whose id is pid, the caller's for 0; proc_table_lock held */
static struct process *task_locked(int pid)
{
	if (!pid)
		return proc_current();
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state != PROC_FREE && procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

long proc_affinity(int pid, uint64_t *old, const uint64_t *set)
{
	struct process *self = proc_current();
	mlock_lock(&proc_table_lock);
	struct process *t = task_locked(pid);
	uint64_t online = sched_online_mask();
	if (t) {
		*old = t->affinity ? t->affinity & online : online;
		if (set) {
			t->affinity = *set & online;
			if (t != self)	/* its thread moves itself (thread_set_affinity_self) */
				__atomic_store_n(&t->affinity_moved, true, __ATOMIC_RELEASE);
		}
	}
	mlock_unlock(&proc_table_lock);
	if (!t)
		return -LX_ESRCH;
	if (set && t == self)
		(void)thread_set_affinity_self(*set & online);	/* checked: online CPUs */
	return 0;
}

void proc_affinity_apply(struct process *p)
{
	/* acquire: the mask stored before the flag */
	if (!__atomic_exchange_n(&p->affinity_moved, false, __ATOMIC_ACQUIRE))
		return;
	mlock_lock(&proc_table_lock);
	uint64_t m = p->affinity;
	mlock_unlock(&proc_table_lock);
	if (m)
		(void)thread_set_affinity_self(m);
}

/* sched_*'s pid is a task's id, as Linux's: a thread's tid, or a process's pid (its
 * main thread); each task keeps its own policy. */
long proc_sched(int pid, int *policy, int *prio, bool set, int set_policy, int set_prio)
{
	mlock_lock(&proc_table_lock);
	struct process *t = task_locked(pid);
	if (t) {
		*policy = t->sched_policy;
		*prio = t->sched_prio;
		if (set) {
			if (set_policy >= 0)
				t->sched_policy = set_policy;
			t->sched_prio = set_prio;
			/* its thread at the policy's level, under this lock: two callers leave
			 * the policy and the level of the same one, and the thread lives (it sets
			 * thread_done here before it exits). Not recorded yet: it applies the
			 * policy itself when it records itself (user_thread_main). */
			if (t->thread && !t->thread_done)
				(void)thread_set_level(t->thread, sched_level(t->sched_policy));
		}
	}
	mlock_unlock(&proc_table_lock);
	if (set)
		sched_lowered();	/* the caller lowered itself: a higher ready thread first */
	return t ? 0 : -LX_ESRCH;
}

/* setsid: EPERM for a group leader (some process has the caller's pid as its group) */
long proc_setsid(void)
{
	struct process *self = proc_group(proc_current());
	long rc;
	mlock_lock(&proc_table_lock);
	bool leader = false;
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state != PROC_FREE && procs[i].leader == &procs[i] &&
		    procs[i].pgid == self->pid)
			leader = true;
	if (leader) {
		rc = -LX_EPERM;
	} else {
		self->sid = self->pgid = self->pid;
		rc = self->pid;
	}
	mlock_unlock(&proc_table_lock);
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
	mlock_lock(&proc_table_lock);
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state == PROC_LIVE && procs[i].leader == &procs[i] && procs[i].pgid == pgrp) {
			struct thread *th = post_locked(&procs[i], sig, &si);
			if (th)
				wake[nw++] = th;
		}
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
}

/* ---- execve ------------------------------------------------------------------------
 * execve from a thread of a multi-threaded process (Linux's de_thread): the other threads
 * are sent SIGKILL and the caller waits until they ended; a caller that is not the leader
 * then takes the leader's place - its id (getpid = gettid after the exec, as on Linux),
 * the group's fields - and the leader's slot is freed. */
static void become_leader(struct process *p)
{
	struct process *g = p->leader;
	struct process *tmp = kmalloc(sizeof *tmp);
	if (!tmp)
		return;	/* it goes on as a thread of its own id: getpid still answers */
	mlock_lock(&proc_table_lock);
	*tmp = *g;	/* the group's fields */
	tmp->thread = p->thread;	/* the thread's own */
	tmp->sched_policy = p->sched_policy;	/* the task's, as its level */
	tmp->sched_prio = p->sched_prio;
	tmp->affinity = p->affinity;	/* the thread's mask, kept across exec */
	tmp->affinity_moved = p->affinity_moved;
	tmp->uctx = p->uctx;
	tmp->sigmask = p->sigmask;
	tmp->saved_sigmask = p->saved_sigmask;
	tmp->restore_sigmask = p->restore_sigmask;
	tmp->ss_sp = p->ss_sp;
	tmp->ss_size = p->ss_size;
	tmp->fault = p->fault;
	tmp->clear_child_tid = p->clear_child_tid;
	tmp->robust_list = p->robust_list;
	tmp->robust_len = p->robust_len;
	tmp->tsig_pending = p->tsig_pending;
	tmp->tsig_info_valid = p->tsig_info_valid;
	memcpy(tmp->tsig_info, p->tsig_info, sizeof tmp->tsig_info);
	tmp->mm = p->mm;
	tmp->fdt = p->fdt;
	tmp->fs = p->fs;
	tmp->leader = p;
	tmp->thread_done = false;
	tmp->nthreads = tmp->live = 1;
	tmp->execer = NULL;
	struct arch_uctx *old = g->uctx;
	*p = *tmp;
	for (unsigned i = 0; i < procs_hi; i++)
		if (procs[i].state != PROC_FREE && procs[i].parent == g) {
			procs[i].parent = p;
			set_ppid(&procs[i], p);
		}
	g->uctx = NULL;		/* the old leader's: its thread ended, freed below */
	g->mm = NULL;
	g->fdt = NULL;
	g->fs = NULL;
	g->leader = g;
	slot_free_locked(g);
	mlock_unlock(&proc_table_lock);
	kfree(tmp);
	if (old)
		arch_uctx_destroy(old);
}

static long de_thread(struct process *p)
{
	struct process *g = p->leader;
	struct thread *wake[PROC_MAX];
	mlock_lock(&proc_table_lock);
	if (g->group_exit || g->execer) {
		mlock_unlock(&proc_table_lock);
		return -LX_EAGAIN;	/* the group is ending, or another thread execs */
	}
	if (g->nthreads == 1 && p == g) {
		mlock_unlock(&proc_table_lock);
		return 0;
	}
	g->execer = p;
	unsigned nw = kill_others_locked(g, p, wake);
	mlock_unlock(&proc_table_lock);
	for (unsigned i = 0; i < nw; i++)
		wake_signalled(wake[i]);
	for (;;) {
		mlock_lock(&proc_table_lock);
		bool done = g->nthreads == 1;
		mlock_unlock(&proc_table_lock);
		if (done)
			break;
		sched_sleep(PROC_COND_CHILD);	/* the next to last thread's end wakes it */
	}
	if (p != g)
		become_leader(p);
	mlock_lock(&proc_table_lock);
	p->leader->execer = NULL;
	mlock_unlock(&proc_table_lock);
	return 0;
}

/* The image is built by exec.c in a fresh mm; from the point of no return the new space
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
	if (!rc)
		rc = de_thread(p);	/* the other threads end first */
	if (rc) {
		kfree(names);
		mm_destroy(nm);
		return rc;
	}
	/* the point of no return: the new space replaces the old */
	struct mm *old = p->mm;
	struct process *g = proc_group(p);	/* p itself, unless become_leader had no memory */
	mlock_lock(&proc_table_lock);	/* /proc reads mm under it */
	p->mm = nm;
	g->mm = nm;
	mlock_unlock(&proc_table_lock);
	arch_uctx_set_as(p->uctx, nm->as);
	mm_destroy(old);
	arch_uctx_set_fs(p->uctx, 0);
	fdtable_close_on_exec(p->fdt);
	for (unsigned s = 1; s < PROC_NSIG; s++) {	/* handlers reset; ignored stays */
		struct lx_sigaction sa = { g->sig_handler[s] == LX_SIG_IGN ? LX_SIG_IGN : LX_SIG_DFL,
					   0, 0, 0 };
		proc_sigaction_set(p, (int)s, &sa);
	}
	p->ss_sp = p->ss_size = 0;	/* no alternate stack in the new image */
	p->clear_child_tid = 0;		/* Linux's exec_mm_release */
	p->robust_list = p->robust_len = 0;
	image_commit(g, names, path);
	arch_uregs_exec(tf, entry, sp);
	proc_vfork_release(g);
	return 0;
}
