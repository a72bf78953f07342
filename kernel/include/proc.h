/*
 * proc.h - processes (kernel/proc; issue 24, docs/userspace.md): a process is an address
 * space + a descriptor table + one ksync thread that returns to ring 3 (threads of one
 * process come with the next issue).
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
 * Fields owned by the process's own thread (fds, signal state, comm) need no lock while
 * processes are single-threaded: only that thread reads or writes them (fork copies
 * them in the parent's thread before the child exists).
 */
#ifndef KSYNC_PROC_H
#define KSYNC_PROC_H

#include "kernel.h"
#include "mlock.h"

#define PROC_MAX 64		/* process table slots */
#define PROC_NFD 64		/* descriptors per process (until kernel/fs's fdtable) */
#define PROC_NSIG 65		/* Linux signals 1..64 */

/* ---- user-visible files, until kernel/fs's VFS replaces them -------------------------
 * ONE function table a descriptor's file goes through: the syscall layer copies between
 * user memory and a kernel buffer and calls these on kernel buffers, so that kernel/fs's
 * vfs_read/vfs_write on an fdtable can take the place of ufile_read/ufile_write with no
 * change in the system calls. Results are a byte count or -LX_E*. */
struct ufile;
struct ufile_ops {
	const char *name;
	long (*read)(struct ufile *f, void *kbuf, size_t n);
	long (*write)(struct ufile *f, const void *kbuf, size_t n);
	long (*lseek)(struct ufile *f, int64_t off, int whence);	/* NULL: -ESPIPE */
	/* st_mode and size for fstat */
	void (*stat)(struct ufile *f, uint32_t *mode, uint64_t *size);
	void (*release)(struct ufile *f);	/* the last reference went (NULL: nothing) */
	bool tty;				/* answers the terminal ioctls */
};
struct ufile {
	const struct ufile_ops *ops;
	unsigned refs;		/* descriptors naming it: atomic add/sub */
	unsigned flags;		/* open flags (O_ACCMODE, O_APPEND, O_NONBLOCK) */
	const uint8_t *data;	/* initramfs files: the bytes, in place */
	uint64_t size, pos;	/* pos: the owner process's thread */
	uint32_t mode;		/* initramfs files: st_mode */
};
/* this slice's descriptor table; kernel/fs's struct fdtable (fdtable_clone, vfs_read on
 * an fdtable) takes its place, which is why the name differs */
struct proc_fdtable {
	struct ufile *fd[PROC_NFD];
	bool cloexec[PROC_NFD];
};
struct ufile *ufile_console(void);		/* a new reference to the console */
void ufile_get(struct ufile *f);
void ufile_put(struct ufile *f);
long ufile_open_initramfs(const char *path, int flags, struct ufile **out);
/* The console's output of the user programs while a runner captures it (urun.c): NULL
 * buf = straight to the serial line. */
void ufile_console_capture(char *buf, size_t cap, size_t *len, bool *overflow);

/* ---- the initramfs (cpio newc in the first boot module), read in place ----------------
 * kernel/fs's fs_unpack_cpio replaces this lookup with a RAM file system. */
void initramfs_init(const void *base, size_t len);
/* The file's bytes: 0, -LX_ENOENT, -LX_EISDIR (a directory), -LX_EINVAL (archive bad). */
long initramfs_lookup(const char *path, const uint8_t **data, uint64_t *size, uint32_t *mode);
bool initramfs_present(void);

/* ---- address spaces ---------------------------------------------------------------- */
struct vma {
	uint64_t start, end;	/* page-aligned, [start, end) */
	unsigned prot;		/* ARCH_PROT_* */
	struct vma *next;	/* sorted by start, disjoint */
};
struct mm {
	struct mlock lock;
	struct arch_as *as;
	struct vma *vmas;
	uint64_t brk_start, brk;	/* the heap: [brk_start, ALIGN_UP(brk)) is a VMA */
};
struct mm *mm_create(void);
void mm_destroy(struct mm *mm);
/* Add [start, end) with prot (replacing what was there); 0 or -LX_ENOMEM. */
long mm_map(struct mm *mm, uint64_t start, uint64_t end, unsigned prot);
long mm_unmap(struct mm *mm, uint64_t start, uint64_t end);
long mm_protect(struct mm *mm, uint64_t start, uint64_t end, unsigned prot);
bool mm_overlaps(struct mm *mm, uint64_t start, uint64_t end);	/* any VMA in [start, end) */
/* A free range of len bytes below the mmap top (top-down first fit); 0 if none. */
uint64_t mm_find_free(struct mm *mm, uint64_t len);
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
	bool kernel_waited;		/* proc_table_lock: urun.c waits for it */
	int wstatus;			/* proc_table_lock: wait4's encoding, set at exit */
	bool vfork_done;		/* proc_table_lock: the vfork child exec'd or exited */
	struct thread *waiter;		/* proc_table_lock: this process's thread while it
					   sleeps for a child (wait4, vfork) */
	struct thread *kwaiter;		/* proc_table_lock: the runner sleeping for this one */
	struct thread *thread;		/* set before the thread runs */
	struct arch_uctx *uctx;
	struct mm *mm;			/* its thread; NULL once it exited */
	struct proc_fdtable *fdt;		/* its thread; kernel/fs will own the type */
	struct fs_ctx *fs;		/* kernel/fs's (cwd, umask): NULL until it is merged */
	/* signal state (its thread) */
	uint64_t sig_handler[PROC_NSIG], sig_flags[PROC_NSIG], sig_restorer[PROC_NSIG],
		 sig_mask_of[PROC_NSIG];
	uint64_t sigmask;
	uint64_t sig_pending;		/* set by kill (any thread): atomic or; read atomically */
	uint64_t clear_child_tid;
	char comm[16];
};
#define PROC_COND_CHILD SCHED_COND(16)	/* a child became a zombie / a vfork child let go */

void proc_init(void);
struct process *proc_current(void);	/* NULL in a kernel thread */
/* A new process running path with argv/envp (kernel strings), child of nobody; its pid
 * or -LX_E*. The kernel's runner (urun.c) waits for it with proc_wait_kernel. */
long proc_spawn(const char *path, char *const argv[], char *const envp[]);
int proc_wait_kernel(int pid);		/* its wait status */
__attribute__((noreturn)) void proc_exit(int wstatus);
long proc_fork(struct trapframe *tf, uint64_t flags, uint64_t newsp);
long proc_wait4(int pid, uint64_t ustatus, int options, uint64_t urusage);
long proc_kill(int pid, int sig);
long proc_getppid(void);
void proc_vfork_release(struct process *p);	/* exec/exit: a vfork parent goes on */
/* exec.c: replace the calling process's image (kernel strings); 0 or -LX_E* (the old
 * image is intact on an error). tf is its syscall frame, reset to the entry. */
long proc_execve(struct trapframe *tf, const char *path, char *const argv[], char *const envp[]);
/* Load an image into a fresh mm: entry and initial stack pointer. */
long exec_load(struct mm *mm, const char *path, char *const argv[], char *const envp[],
	       uint64_t *entry, uint64_t *sp);
uint64_t proc_pages_in_use(void);	/* user pages mapped by every live process */

/* kernel/syscall/syscall.c: the counters printed at shutdown */
void syscall_report(void);
uint64_t ktime_ns(void);		/* monotonic since boot */

#endif
