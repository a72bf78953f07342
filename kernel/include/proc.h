/*
 * proc.h - processes (kernel/proc; issues 24 and 25, docs/userspace.md): a process is an
 * address space + a descriptor table + one or more ksync threads that return to ring 3.
 * As in Linux, a slot of the table is a *task* (one user thread, its tid = the slot's
 * pid) and a process is a thread group: the tasks whose `leader` is the same slot (the
 * group leader, whose pid is the process id, tgid). What the group shares lives in the
 * leader's slot (handlers, shared pending signals, parent, group, limits, names, exit
 * status); what a thread owns lives in its own (tid, mask, own pending signals,
 * alternate stack, clear_child_tid, robust list). The address space, descriptor table
 * and fs context pointers are copied into every thread's slot (CLONE_VM|CLONE_FILES|
 * CLONE_FS): they are put once, by the group's last thread.
 *
 * Papers: Massalin & Pu 1991 (Synthesis) "Address spaces" and "Memory management" (an
 * address space per process whose kernel part is shared, demand-zero pages, a page
 * fault resolved by the kernel or delivered to the process); Hartman & Ousterhout
 * (Sprite) section 2: every shared structure is protected by a named lock with
 * statistics - here the process table's lock (class "uproc-table") and each process's mm
 * lock (class "proc-mm").
 *
 * Locks (master locks, mlock.h: short, never sleep, IRQs off):
 *   proc_table_lock  (class "uproc-table") the table's slots, pids, parent/children links, state, exit status
 *                    and the vfork flag of every process;
 *   mm->lock         one address space: its VMA list, brk, and the arch_as page tables;
 *                    taken by the page-fault path (IRQs off, from a fault), so nothing
 *                    may touch user memory while holding it.
 * Fields owned by a thread (its mask, alternate stack, robust list) need no lock: only
 * that thread writes them (fork and clone copy them before the new thread runs); the
 * mask is also read by posters choosing a thread (relaxed atomics: a hint, see
 * post_locked). Group fields are written under proc_table_lock by any thread of the
 * group. comm, exe and cmdline are read by other processes (/proc), so their writers
 * take proc_table_lock.
 */
#ifndef KSYNC_PROC_H
#define KSYNC_PROC_H

#include "kernel.h"
#include "mlock.h"
#include "syscall/linux_abi.h"

#define PROC_MAX 256		/* process table slots (hackbench -g 4: 161 processes) */
/* RLIMIT_NPROC's default (soft = hard): below PROC_MAX, so that a fork bomb meets the
 * limit (EAGAIN) before the table is full and the runner can still start programs */
#define PROC_NPROC_DEFAULT 224
#define PROC_NSIG 65		/* Linux signals 1..64 */

/* ---- files: kernel/fs (vfs.h) -------------------------------------------------------
 * Each process owns a descriptor table (struct fdtable) and a file-system context (struct
 * fs_ctx: root, cwd, umask) of kernel/fs; fork clones both, execve closes the
 * close-on-exec descriptors, exit puts them. */
struct fdtable;
struct fs_ctx;

/* ---- address spaces ---------------------------------------------------------------- */
struct vma {
	uint64_t start, end;	/* page-aligned, [start, end) */
	unsigned prot;		/* ARCH_PROT_* */
	uint64_t bus;		/* 0, or the first address past a mapped file's end:
				   an access at or above it is SIGBUS (mmfile.c);
				   mm->lock, as the rest of the list */
	struct vma *next;	/* sorted by start, disjoint */
};
struct mm {
	struct mlock lock;
	struct arch_as *as;
	struct vma *vmas;
	uint64_t brk_start, brk;	/* the heap: [brk_start, ALIGN_UP(brk)) is a VMA */
	/* no thread but one uses the space: true from mm_create (a new space is nobody's or
	 * one process's), then the group's nthreads == 1, stored by proc.c under
	 * proc_table_lock at each change (relaxed atomics). Read by that one thread, it
	 * stays true until the thread clones: mm.c's steps rely on that */
	bool solo;
};
struct mm *mm_create(void);
void mm_destroy(struct mm *mm);
/* Add [start, end) with prot (replacing what was there); 0 or -LX_ENOMEM. */
long mm_map(struct mm *mm, uint64_t start, uint64_t end, unsigned prot);
/* The same, an area whose addresses from bus on (if nonzero) lie past a file's end. */
long mm_map_bus(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus);
/* VMA_SHARED_RO in a VMA's prot: a MAP_SHARED file mapping of a descriptor not open for
 * writing (mprotect cannot add PROT_WRITE: EACCES, as Linux's VM_MAYWRITE) */
#define VMA_SHARED_RO 0x100u
/* MAP_SHARED: the area [start, end) (SIGBUS from bus), its first n pages the kernel
 * pages given (a file's: arch_as_map_page). 0 or -LX_ENOMEM. */
long mm_map_shared(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus,
		   void *const *pages, size_t n);
/* MAP_PRIVATE: the same, the pages mapped copy-on-write (arch_as_map_page_cow). */
long mm_map_private(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus,
		    void *const *pages, size_t n);
/* One kernel page (a file's) copy-on-write at va, inside an area already mapped, with the
 * area's rights (exec's loader). 0, -LX_EFAULT (no area), -LX_ENOMEM. */
long mm_place_cow(struct mm *mm, uint64_t va, void *page);
/* mmap of a regular file (mmfile.c): MAP_PRIVATE the file's pages mapped copy-on-write
 * (copied at a file system that hands out no pages), MAP_SHARED (shared) the file's own
 * pages mapped; ro: the descriptor is not open for writing. */
struct fdtable;
long mm_mmap_file(struct mm *mm, struct fdtable *t, int fd, uint64_t addr, uint64_t len,
		  unsigned prot, uint64_t off, bool shared, bool ro);
long mm_unmap(struct mm *mm, uint64_t start, uint64_t end);
long mm_protect(struct mm *mm, uint64_t start, uint64_t end, unsigned prot);
bool mm_overlaps(struct mm *mm, uint64_t start, uint64_t end);	/* any VMA in [start, end) */
/* A free range of len bytes below the mmap top (top-down first fit) found and mapped
 * with prot in one hold of the lock (threads mmap at once); its address, or 0 when none
 * (or *rc, the map's error). */
uint64_t mm_map_free(struct mm *mm, uint64_t len, unsigned prot, long *rc);
#define MM_STACK_TOP 0x7ffffffff000ull
#define MM_STACK_SIZE (8ull << 20)
long mm_fork(struct mm *parent, struct mm *child);	/* areas + copy-on-write pages */
int mm_fault(struct mm *mm, uint64_t addr, bool write, bool exec);	/* 0: resolved */
/* Copy src into the space at va (pages mapped with the VMA's rights; exec's loader). */
long mm_write(struct mm *mm, uint64_t va, const void *src, size_t n);

/* ---- processes --------------------------------------------------------------------- */
enum proc_state { PROC_FREE, PROC_LIVE, PROC_ZOMBIE };
struct trapframe;
struct process {
	int pid;
	enum proc_state state;		/* proc_table_lock */
	struct process *parent;		/* proc_table_lock; NULL: the kernel's runner or
					   an orphan (reaped by nobody: freed at exit) */
	int ppid;			/* parent's pid, 0 with no parent: stored (relaxed
					   atomic) with every change of parent, under
					   proc_table_lock; getppid loads it without the lock */
	bool kernel_waited;		/* proc_table_lock: urun.c waits for it */
	int wstatus;			/* proc_table_lock: wait4's encoding, set at exit */
	bool vfork_done;		/* proc_table_lock: the vfork child exec'd or exited */
	struct thread *waiter;		/* proc_table_lock: this process's thread while it
					   sleeps for a child (wait4, vfork) */
	struct thread *kwaiter;		/* proc_table_lock: the runner sleeping for this one */
	struct thread *thread;		/* proc_table_lock: set by the thread itself first */
	struct arch_uctx *uctx;
	struct mm *mm;			/* its thread; NULL once it exited */
	struct fdtable *fdt;		/* its thread (the table has its own monitor) */
	struct fs_ctx *fs;		/* its thread: kernel/fs's root, cwd, umask */
	/* signal state (signal.c). Handlers: written by its thread under proc_table_lock
	 * (an exiting child reads the parent's SIGCHLD disposition under it), read by its
	 * thread freely; the rest of this group is its thread's alone. */
	uint64_t sig_handler[PROC_NSIG], sig_flags[PROC_NSIG], sig_restorer[PROC_NSIG],
		 sig_mask_of[PROC_NSIG];
	uint64_t sigmask;		/* bit s-1: signal s blocked */
	uint64_t saved_sigmask;		/* rt_sigsuspend's: back after its handler */
	bool restore_sigmask;		/* saved_sigmask is to be put back */
	uint64_t ss_sp, ss_size;	/* sigaltstack (ss_size 0: none) */
	uint64_t rlim_core;		/* RLIMIT_CORE's soft limit (the core bit: signal.c) */
	uint64_t rlim_core_max;		/* and its hard limit (the process's own thread) */
	uint64_t rlim_nproc[2];		/* proc_table_lock: RLIMIT_NPROC {soft, hard}: fork
					   answers EAGAIN when the processes of the caller's
					   uid (every process: all are uid 0), zombies too,
					   number rlim_nproc[0] or more (proc_alloc) */
	/* bit s-1: signal s pending. Set by any thread (kill, SIGCHLD at a child's exit:
	 * under proc_table_lock; SIGPIPE by the process itself: an atomic or without it),
	 * cleared by its thread under proc_table_lock; read atomically (relaxed: the
	 * lock orders the siginfo, nothing else hangs on the bit). */
	uint64_t sig_pending;
	uint64_t sig_info_valid;	/* proc_table_lock: bit s-1: sig_info[s] holds s's */
	struct lx_siginfo sig_info[PROC_NSIG];	/* proc_table_lock: one per pending signal
					   (standard signals do not queue) */
	int pgid, sid;			/* proc_table_lock: process group and session */
	/* job control (proc_table_lock): stopped by stop_sig; the parent's wait4 with
	 * WUNTRACED reports a stop once (stop_report), with WCONTINUED a SIGCONT once */
	bool stopped, stop_report, cont_report;
	int stop_sig;
	struct thread *stop_sleeper;	/* proc_table_lock: a thread asleep in the stop
					   (SIGCONT wakes it whatever it blocks; it wakes
					   the others) */
	/* the group stop (leader, proc_table_lock): the threads asleep in it; the parent
	 * is told (CLD_STOPPED, WUNTRACED) once all have joined (stop_notified) */
	unsigned nstopped;
	bool stop_notified;
	bool stop_joined;		/* proc_table_lock, this thread: counted in nstopped */
	struct proc_fault {		/* its thread: the fault being signalled, for the */
		int sig;		/* console line if its default action ends it */
		uint64_t addr, ip;
	} fault;
	uint64_t clear_child_tid;	/* its thread: CLONE_CHILD_CLEARTID / set_tid_address
					   (0 written and FUTEX_WAKE'd at its exit: futex.c) */
	/* ---- threads (issue 25). Group fields are the leader's. ---- */
	struct process *leader;		/* proc_table_lock: the group leader (itself when
					   single-threaded); changes only in execve's
					   de_thread, when this is the group's only thread */
	bool thread_done;		/* proc_table_lock: this task's thread ended (a leader
					   whose thread exited before the rest of its group) */
	unsigned nthreads;		/* leader, proc_table_lock: threads not yet ended */
	unsigned live;			/* leader, proc_table_lock: threads that have not
					   begun to exit (Linux's signal->live) */
	bool group_exit;		/* leader, proc_table_lock: exit_group or a fatal
					   signal: every thread ends, the status is group_status */
	int group_status;		/* leader, proc_table_lock */
	struct process *execer;		/* leader, proc_table_lock: the thread in execve that
					   is ending the others (de_thread), or NULL */
	/* this thread's own pending signals (tkill/tgkill, its faults, SIGPIPE, SIGKILL of
	 * an exit_group): the same rules as sig_pending (which is the group's: the
	 * leader's); tsig_info under proc_table_lock */
	uint64_t tsig_pending;
	uint64_t tsig_info_valid;
	struct lx_siginfo tsig_info[PROC_NSIG];
	uint64_t robust_list, robust_len;	/* its thread: set_robust_list's head */
	/* sched_setscheduler's policy and priority (kernel/syscall/syssched.c), this
	 * thread's (a task's, as Linux keeps them): proc_table_lock; fork and clone copy
	 * them (Linux's child inherits them, but SCHED_RESET_ON_FORK: sched_fork_policy).
	 * The thread's run-queue level is sched_level(sched_policy): set at its creation,
	 * changed with the policy under proc_table_lock (proc_sched; user_thread_main for a
	 * change made before the thread recorded itself) */
	int sched_policy, sched_prio;
	/* sched_setaffinity's CPU mask of this task's thread (0: every CPU): proc_table_lock;
	 * fork and clone copy it, the thread is created with it. affinity_moved (atomic): set
	 * by another task's sched_setaffinity of this one, cleared by this task's thread,
	 * which applies the mask itself at its next return to user mode
	 * (thread_set_affinity_self: only a thread moves itself) */
	uint64_t affinity;
	bool affinity_moved;
	/* the image's names, for /proc (kernel/proc/procfs.c): written by its own thread
	 * (exec, prctl's PR_SET_NAME) under proc_table_lock, or by fork before the child
	 * runs, also under it; read by its own thread freely, by others under the lock */
	char comm[16];
	char exe[256];			/* the exec'd file's absolute path, links followed */
	char cmdline[512];		/* argv, each NUL-terminated (cut at 512 bytes) */
	uint16_t cmdline_len;
};
#define PROC_COND_CHILD SCHED_COND(16)
#define PROC_COND_SIG SCHED_COND(17)	/* a signal was posted (pause, sigsuspend) */
#define PROC_COND_FUTEX SCHED_COND(18)	/* a FUTEX_WAKE took this thread's waiter (futex.c) */
/* The group leader of task p (proc_table_lock; constant while other threads of the group
 * live, so a thread reads its own leader freely). */
static inline struct process *proc_group(const struct process *p) { return p->leader; }
/* The calling thread's mask (its own; read by posters: relaxed) */
static inline void proc_set_sigmask(struct process *p, uint64_t m)
{
	__atomic_store_n(&p->sigmask, m, __ATOMIC_RELAXED);
}
#define PROC_SIGBIT(s) (1ull << ((s) - 1))

/* Signal s pending for p would act now: not blocked (SIGKILL never is) and not ignored
 * (SIG_IGN, or ignored by default: SIGCHLD, SIGURG, SIGWINCH). p's own thread. */
static inline bool proc_sig_default_ignored(unsigned s)
{
	return s == LX_SIGCHLD || s == LX_SIGCONT || s == 23 /* SIGURG */ || s == 28 /* SIGWINCH */;
}
static inline bool proc_sig_acts(const struct process *p, unsigned s)
{
	if (s == LX_SIGKILL)
		return true;
	if (p->sigmask & PROC_SIGBIT(s))
		return false;
	/* relaxed: a handler word the group's threads write under proc_table_lock; a
	 * waiter only asks whether to stop waiting, the delivery re-reads it under the lock */
	uint64_t h = __atomic_load_n(&p->leader->sig_handler[s], __ATOMIC_RELAXED);
	if (h == LX_SIG_IGN)
		return false;
	return h != LX_SIG_DFL || !proc_sig_default_ignored(s);
}
/* The signals pending for thread p: its own and its group's */
static inline uint64_t proc_sig_pending(const struct process *p)
{
	/* relaxed: orders nothing (the siginfo is taken under proc_table_lock) */
	return __atomic_load_n(&p->tsig_pending, __ATOMIC_RELAXED) |
	       __atomic_load_n(&p->leader->sig_pending, __ATOMIC_RELAXED);
}
/* Any pending signal that acts (the interruptible waits ask it). p's own thread. */
static inline bool proc_sig_any_acts(const struct process *p)
{
	/* a group stop this thread has not joined: its waits end, so that it stops at its
	 * return to ring 3 (signal_user_return -> proc_stop_join). relaxed: `stopped` is
	 * written under proc_table_lock, which proc_stop_join takes to re-check it */
	if (__atomic_load_n(&p->leader->stopped, __ATOMIC_RELAXED) && !p->stop_joined)
		return true;
	/* relaxed: orders nothing; a waiter re-checks after every wakeup, and posting sets
	 * the bit before it wakes (PROC_COND_SIG, fs_interrupt) */
	uint64_t pend = proc_sig_pending(p);
	for (unsigned s = 1; pend && s < PROC_NSIG; s++)
		if ((pend & PROC_SIGBIT(s)) && proc_sig_acts(p, s))
			return true;
	return false;
}

void proc_init(void);
/* A copy of what /proc shows of process pid, taken under proc_table_lock (never held
 * while formatting or copying to user). false: no such process. */
struct proc_snap {
	int pid, ppid, pgid, sid;
	char state;			/* R (the caller), S, T (stopped), Z (zombie) */
	char comm[16], exe[256], cmdline[512];
	uint16_t cmdline_len;
	uint64_t rss_pages, sig_pending;
	unsigned nthreads;		/* threads not yet ended (at least 1) */
};
bool proc_snapshot(int pid, struct proc_snap *s);
unsigned proc_pids(int *out, unsigned max);	/* ascending */
/* The calling process's comm (prctl PR_SET_NAME) and, at exec, its exe path and argv,
 * under proc_table_lock. */
void proc_set_comm(struct process *p, const char *name);
void procfs_init(void);		/* kernel/proc/procfs.c: /proc's generator to kernel/fs */
/* NULL in a kernel thread: the running thread's user context's owner (set at create,
 * constant), which the scheduler keeps per CPU (kcpu.h proc_cur) */
static inline struct process *proc_current(void) { return kcpu_this()->proc_cur; }
/* A new process running path with argv/envp (kernel strings), child of nobody, with a
 * copy of the descriptor table fds (its close-on-exec descriptors closed) and cwd "/";
 * its pid or -LX_E*. The kernel's runner (urun.c) waits for it with proc_wait_kernel.
 * ctty: its group (its pid) becomes the console tty's foreground group first (the
 * interactive shell, ushell.c). */
long proc_spawn(const char *path, char *const argv[], char *const envp[], struct fdtable *fds,
		bool ctty);
int proc_wait_kernel(int pid);		/* its wait status */
/* exit_group, or a fatal signal's default action: every thread of the group ends, the
 * group's status is wstatus (the first group exit's). */
__attribute__((noreturn)) void proc_exit(int wstatus);
/* exit (SYS_exit): the calling thread ends; the group goes on while others live (its
 * status is then the last thread's, as the host's Linux reports it). */
__attribute__((noreturn)) void proc_thread_exit(int wstatus);
/* The action of signal sig of p's group, read under proc_table_lock */
void proc_sigaction_get(struct process *p, int sig, struct lx_sigaction *sa);
/* futex.c (issue 25) */
/* futex(2) for thread p (the caller); realtime_base_ns: CLOCK_REALTIME at ktime_ns 0 */
long futex_syscall(struct process *p, uint64_t uaddr, int op, uint32_t val, uint64_t utime,
		   uint64_t uaddr2, uint32_t val3, uint64_t realtime_base_ns);
void futex_init(void);	/* proc_init, before any process runs */
/* A thread's end (proc.c calls it with the thread's address space still loaded): its
 * robust list walked (FUTEX_OWNER_DIED, one waiter woken) and, when others share the
 * space, 0 written at clear_child_tid and one waiter woken there. */
void futex_thread_exit(struct process *p, bool others);
/* wake at most n waiters of (mm, uaddr) whose bitset meets bits */
long futex_wake(struct mm *mm, uint64_t uaddr, int n, uint32_t bits);
/* The shared address space changed (munmap, mprotect): other CPUs running it forget
 * their translations (arch_as_shootdown). Thread context, IRQs on, no lock held. */
void mm_shootdown(struct mm *mm);
/* fork, vfork, clone (ptid/ctid/tls: CLONE_PARENT_SETTID, CLONE_CHILD_SETTID/CLEARTID,
 * CLONE_SETTLS); CLONE_THREAD makes a thread of the caller's group */
long proc_fork(struct trapframe *tf, uint64_t flags, uint64_t newsp, uint64_t ptid, uint64_t ctid,
	       uint64_t tls);
long proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage);
long proc_kill(int pid, int sig);
long proc_tkill(int tgid, int tid, int sig);	/* tgid -1: tkill */
/* Post sig with info (NULL: SI_KERNEL) to p: pending (a standard signal already pending
 * keeps its first siginfo), its pause/sigsuspend/file wait woken. */
void proc_signal_send(struct process *p, int sig, const struct lx_siginfo *info);
/* Take signal sig off p's pending sets (p's own thread; its own set first, then the
 * group's): its siginfo (SI_USER from p itself when none was stored: SIGPIPE). false: it
 * was not pending. */
bool proc_signal_take(struct process *p, int sig, struct lx_siginfo *info);
void proc_sigaction_set(struct process *p, int sig, const struct lx_sigaction *sa);
/* The default action of a stop signal: p's group stops (every thread, each at its next
 * return to ring 3) until SIGCONT or SIGKILL; p (the caller) sleeps at once. */
void proc_stop(struct process *p, int sig);
/* p's group is stopping and p has not joined: p sleeps with it (signal_user_return) */
void proc_stop_join(struct process *p);
long proc_setpgid(int pid, int pgid);
long proc_getpgid(int pid);
long proc_setsid(void);
long proc_getsid(int pid);
/* sched_*'s state of process pid (0: the caller) under proc_table_lock: *policy and
 * *prio out, then, if set, set to set_policy / set_prio (set_policy -1: keep the
 * policy) and the task's thread moved to the policy's level (sched_level,
 * thread_set_level) under the same lock. 0, or -LX_ESRCH. */
long proc_sched(int pid, int *policy, int *prio, bool set, int set_policy, int set_prio);
/* sched_getaffinity / sched_setaffinity of task pid (0: the caller): *old = its mask (the
 * online CPUs if it never set one); then, if set is not NULL, its mask becomes *set
 * (which has an online CPU: the caller checks) - the caller's own thread moves before
 * this returns, another task's at its next return to user mode. 0 or -LX_ESRCH. */
long proc_affinity(int pid, uint64_t *old, const uint64_t *set);
/* The caller's thread applies a mask another task set for it (signal.c, at the return) */
void proc_affinity_apply(struct process *p);
/* The run-queue level (0..SCHED_LEVELS-1) a Linux scheduling policy maps onto
 * (syssched.c's comment: SCHED_FIFO/RR 0, OTHER 1, BATCH 2, IDLE 3). */
unsigned sched_level(int policy);
/* The policy (returned) and *prio a new task - fork's child, clone's thread - gets from
 * its creator's policy and *prio (Linux's sched_fork: SCHED_RESET_ON_FORK is not
 * inherited, and with it a real-time policy becomes SCHED_OTHER, priority 0). */
int sched_fork_policy(int policy, int *prio);
/* signal.c: at each return to ring 3 (kernel_user_return), nr the system call whose
 * result tf holds when it may be restarted (a restart code, -512..-516); -1 otherwise
 * and at an interrupt or exception return */
void signal_user_return(struct trapframe *tf, long nr);
void signal_force(int sig, const struct lx_siginfo *info);	/* a fault's: unblocked, not ignored */
__attribute__((noreturn)) void signal_die(int sig);	/* the default action: terminate */
long sys_rt_sigreturn_impl(struct trapframe *tf);
long signal_sigaltstack(uint64_t uss, uint64_t uoss, uint64_t sp);
long signal_suspend(uint64_t newmask, bool set);	/* rt_sigsuspend (set) and pause */
/* rt_sigtimedwait's step: a pending signal of set taken (its number, info filled), or 0 */
int signal_take_of(uint64_t set, struct lx_siginfo *info);
long proc_getppid(void);
/* prlimit64's RLIMIT_NPROC of process pid (0: the caller): the old limit into old (if
 * not NULL), then the new one set (if not NULL); 0, -LX_ESRCH or -LX_EINVAL */
long proc_rlimit_nproc(int pid, const struct lx_rlimit *nw, struct lx_rlimit *old);
void proc_vfork_release(struct process *p);	/* exec/exit: a vfork parent goes on */
/* exec.c: replace the calling process's image (kernel strings); 0 or -LX_E* (the old
 * image is intact on an error). tf is its syscall frame, reset to the entry. */
long proc_execve(struct trapframe *tf, const char *path, char *const argv[], char *const envp[]);
/* Load an image into a fresh mm: entry and initial stack pointer. The file is read
 * through kernel/fs (path relative to c's cwd; a descriptor of t is used meanwhile). */
long exec_load(struct mm *mm, struct fdtable *t, struct fs_ctx *c, const char *path, char *const argv[], char *const envp[],
	       uint64_t *entry, uint64_t *sp);
uint64_t proc_pages_in_use(void);	/* user pages mapped by every live process */

/* kernel/syscall/syscall.c: the counters printed at shutdown */
void syscall_report(void);
uint64_t ktime_ns(void);		/* monotonic since boot */

#endif
