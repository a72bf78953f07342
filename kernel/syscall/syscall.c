/*
 * syscall.c - the Linux x86-64 system-call table and its handlers (issue 24;
 * docs/userspace.md lists what is implemented and what answers ENOSYS).
 *
 * Massalin & Pu 1991 (Synthesis) "Kernel calls": a kernel call is an indexed jump into
 * a table; here the table has LX_NR_SYSCALLS entries, every one of which is a handler -
 * an unimplemented number lands in sys_enosys, which counts it by name (the counts are
 * printed as a KSYNC line at shutdown: syscall_report) and answers -ENOSYS, as Linux
 * does for a number it does not know (glibc then falls back, e.g. from clone3 to clone
 * and from rseq to nothing).
 *
 * File calls are thin wrappers around kernel/fs (vfs.h) on the calling process's fdtable
 * and fs_ctx: user memory is copied in and out through kernel buffers (KBUF-byte chunks
 * for big reads and writes; paths with strncpy_from_user, -ENAMETOOLONG past PATH_MAX);
 * a bad user pointer is -EFAULT, never a fault in the kernel.
 *
 * Shared state: enosys_count[] (atomic adds; read at shutdown), boot_epoch (written
 * once by urun.c before any process). Everything a handler touches besides is the
 * calling process's (proc.h).
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"
#include "syscall/sysfile.h"
#include "syscall/syssched.h"
#include <ksync/errors.h>

typedef long (*sys_fn)(struct trapframe *tf, const uint64_t a[6]);

static const char *const sys_names[LX_NR_SYSCALLS] = {
#include "sysnames.h"
};
static uint64_t enosys_count[LX_NR_SYSCALLS];	/* atomic adds */
static uint64_t enosys_other;			/* numbers >= LX_NR_SYSCALLS */
uint64_t syscall_boot_epoch;			/* Unix time at boot (urun.c: epoch=) */


/* ---- helpers --------------------------------------------------------------------------- */

/* The calling process's files, for the handlers of sysfile.c (a compound literal: it
 * lives through the call it is passed to) */
#define CUR (&(struct sysf_ctx){ proc_current()->fdt, proc_current()->fs })

/* ---- the file calls: sysfile.c ------------------------------------------------------ */
KERNEL_HOT static long sys_read(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_read(CUR, a);
}

KERNEL_HOT static long sys_write(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_write(CUR, a);
}

static long sys_pread64(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_pread64(CUR, a);
}

static long sys_pwrite64(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_pwrite64(CUR, a);
}

static long sys_writev(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_writev(CUR, a);
}

static long sys_readv(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_readv(CUR, a);
}

static long sys_sendfile(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_sendfile(CUR, a);
}

static long sys_close(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_close(CUR, a);
}

static long sys_dup(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_dup(CUR, a);
}

static long sys_dup2(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_dup2(CUR, a);
}

static long sys_dup3(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_dup3(CUR, a);
}

static long sys_fcntl(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_fcntl(CUR, a);
}

static long sys_ioctl(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_ioctl(CUR, a);
}

static long sys_lseek(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_lseek(CUR, a);
}

static long sys_ftruncate(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_ftruncate(CUR, a);
}

static long sys_pipe2(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_pipe2(CUR, a);
}

static long sys_pipe(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_pipe(CUR, a);
}

static long sys_poll(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_poll(CUR, a);
}

static long sys_openat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_openat(CUR, a);
}

static long sys_open(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_open(CUR, a);
}

static long sys_newfstatat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_newfstatat(CUR, a);
}

static long sys_stat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_stat(CUR, a);
}

static long sys_lstat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_lstat(CUR, a);
}

static long sys_fstat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_fstat(CUR, a);
}

static long sys_getdents64(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_getdents64(CUR, a);
}

static long sys_mkdirat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_mkdirat(CUR, a);
}

static long sys_mkdir(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_mkdir(CUR, a);
}

static long sys_unlinkat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_unlinkat(CUR, a);
}

static long sys_unlink(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_unlink(CUR, a);
}

static long sys_rmdir(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_rmdir(CUR, a);
}

static long sys_renameat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_renameat(CUR, a);
}

static long sys_rename(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_rename(CUR, a);
}

static long sys_linkat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_linkat(CUR, a);
}

static long sys_link(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_link(CUR, a);
}

static long sys_symlinkat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_symlinkat(CUR, a);
}

static long sys_symlink(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_symlink(CUR, a);
}

static long sys_readlinkat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_readlinkat(CUR, a);
}

static long sys_readlink(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_readlink(CUR, a);
}

static long sys_fchmodat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_fchmodat(CUR, a);
}

static long sys_utimensat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_utimensat(CUR, a);
}

static long sys_chmod(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_chmod(CUR, a);
}

static long sys_fchmod(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_fchmod(CUR, a);
}

static long sys_faccessat2(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_faccessat2(CUR, a);
}

static long sys_faccessat(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_faccessat(CUR, a);
}

static long sys_access(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_access(CUR, a);
}

static long sys_getcwd(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_getcwd(CUR, a);
}

static long sys_chdir(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_chdir(CUR, a);
}

static long sys_fchdir(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_fchdir(CUR, a);
}

static long sys_umask(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return sysf_umask(CUR, a);
}

/* ppoll: the timespec as milliseconds (rounded up); the signal mask in force while it
 * waits, put back after the handler of a signal that interrupted it (as sigsuspend). */
static long sys_ppoll(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	int ms = -1;
	uint64_t mask = 0;
	if (a[3]) {
		if (a[4] != 8)
			return -LX_EINVAL;
		if (copy_from_user(&mask, (const void *)a[3], 8))
			return -LX_EFAULT;
	}
	if (a[2]) {
		struct lx_timespec ts;
		if (copy_from_user(&ts, (const void *)a[2], sizeof ts))
			return -LX_EFAULT;
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
			return -LX_EINVAL;
		uint64_t m = (uint64_t)ts.tv_sec * 1000 + ((uint64_t)ts.tv_nsec + 999999) / 1000000;
		ms = m > 0x7fffffff ? 0x7fffffff : (int)m;
	}
	struct process *p = proc_current();
	if (a[3]) {
		p->saved_sigmask = p->sigmask;
		p->restore_sigmask = true;
		proc_set_sigmask(p, mask & ~(PROC_SIGBIT(LX_SIGKILL) | PROC_SIGBIT(LX_SIGSTOP)));
	}
	long rc = sysf_do_poll(CUR, a[0], a[1], ms);
	if (rc == -LX_EINTR)
		return -LX_ERESTARTNOHAND;	/* signal.c puts the mask back */
	if (a[3]) {
		proc_set_sigmask(p, p->saved_sigmask);
		p->restore_sigmask = false;
	}
	return rc;
}

/* ---- processes ------------------------------------------------------------------------ */
/* exit: the calling thread; exit_group: every thread of the process (proc.c) */
static long sys_exit(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	proc_thread_exit(LX_W_EXITCODE((int)(a[0] & 0xff), 0));
}

static long sys_exit_group(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	proc_exit(LX_W_EXITCODE((int)(a[0] & 0xff), 0));
}

static long sys_getpid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return proc_group(proc_current())->pid;	/* the thread group's id */
}

static long sys_gettid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return proc_current()->pid;
}

/* getcpu(cpu, node, tcache): the CPU the caller runs on at the call (it may move right
 * after, as on Linux), node 0 (one NUMA node); either pointer may be NULL, tcache is
 * ignored (as Linux since 2.6.24). */
static long sys_getcpu(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	unsigned cpu = arch_cpu_id(), node = 0;
	if (a[0] && copy_to_user((void *)a[0], &cpu, sizeof cpu))
		return -LX_EFAULT;
	if (a[1] && copy_to_user((void *)a[1], &node, sizeof node))
		return -LX_EFAULT;
	return 0;
}

/* futex(uaddr, op, val, timeout or val2, uaddr2, val3): kernel/proc/futex.c */
static long sys_futex(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return futex_syscall(proc_current(), a[0], (int)a[1], (uint32_t)a[2], a[3], a[4],
			     (uint32_t)a[5], syscall_boot_epoch * 1000000000ull);
}

/* set_robust_list(head, len): the thread's list, walked at its end (futex.c); len must
 * be sizeof(struct robust_list_head), 24 */
static long sys_set_robust_list(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (a[1] != 24)
		return -LX_EINVAL;
	struct process *p = proc_current();
	p->robust_list = a[0];
	p->robust_len = a[1];
	return 0;
}

/* get_robust_list(tid, &head, &len): the caller's (tid 0 or its own) - another thread's
 * needs ptrace rights on Linux; ksync answers for the caller only (EPERM otherwise,
 * ESRCH... not distinguished: a known difference, not reached by the tests) */
static long sys_get_robust_list(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	if (a[0] && (int)a[0] != p->pid)
		return -LX_EPERM;
	uint64_t len = 24;
	if (copy_to_user((void *)a[2], &len, 8) || copy_to_user((void *)a[1], &p->robust_list, 8))
		return -LX_EFAULT;
	return 0;
}

KERNEL_HOT static long sys_getppid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return proc_getppid();
}

static long sys_zero(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return 0;	/* getuid, geteuid, getgid, getegid: root, as the host runs the twins */
}

static long sys_fork(struct trapframe *tf, const uint64_t a[6])
{
	(void)a;
	return proc_fork(tf, LX_SIGCHLD, 0, 0, 0, 0);
}

static long sys_vfork(struct trapframe *tf, const uint64_t a[6])
{
	(void)a;
	return proc_fork(tf, 0x4000 | 0x100 | LX_SIGCHLD, 0, 0, 0, 0);	/* CLONE_VFORK|CLONE_VM */
}

static long sys_clone(struct trapframe *tf, const uint64_t a[6])
{
	/* clone(flags, newsp, parent_tid, child_tid, tls): x86-64's order */
	return proc_fork(tf, a[0], a[1], a[2], a[3], a[4]);
}

static long sys_wait4(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_wait4((int)a[0], a[1], (int)a[2], a[3]);
}

static long sys_kill(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_kill((int)a[0], (int)a[1]);
}

static void free_strv(char **v)
{
	for (unsigned i = 0; v && v[i]; i++)
		kfree(v[i]);
	kfree(v);
}

/* A user string vector into kernel strings (NULL-terminated); -E2BIG over 256 entries. */
static long get_strv(uint64_t u, char ***out)
{
	char **v = kzalloc(257 * sizeof *v);
	if (!v)
		return -LX_ENOMEM;
	*out = v;
	for (unsigned i = 0; u; i++) {
		if (i == 256)
			return -LX_E2BIG;
		uint64_t p;
		if (copy_from_user(&p, (const void *)(u + i * 8), 8))
			return -LX_EFAULT;
		if (!p)
			break;
		v[i] = kmalloc(4096);
		if (!v[i])
			return -LX_ENOMEM;
		long n = strncpy_from_user(v[i], (const char *)p, 4096);
		if (n < 0)
			return n == -36 ? -LX_E2BIG : n;
	}
	return 0;
}

static long sys_execve(struct trapframe *tf, const uint64_t a[6])
{
	char *path;
	long rc = sysf_get_path(a[0], &path);
	if (rc)
		return rc;
	char **argv = NULL, **envp = NULL;
	rc = get_strv(a[1], &argv);
	if (!rc)
		rc = get_strv(a[2], &envp);
	if (!rc)
		rc = proc_execve(tf, path, argv, envp);
	free_strv(argv);
	free_strv(envp);
	kfree(path);
	return rc;
}

static long sys_brk(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct mm *mm = proc_current()->mm;
	uint64_t want = a[0], cur = mm->brk;
	/* never a negative errno: the current break on failure (Linux's sys_brk) */
	if (want < mm->brk_start || want >= MM_STACK_TOP - MM_STACK_SIZE - (1ull << 30))
		return (long)cur;
	uint64_t old_end = ALIGN_UP(cur, PAGE_SIZE), new_end = ALIGN_UP(want, PAGE_SIZE);
	long rc = 0;
	if (new_end > old_end) {
		/* refuse to grow over another mapping */
		if (mm_overlaps(mm, old_end, new_end))
			return (long)cur;
		rc = mm_map(mm, old_end, new_end, ARCH_PROT_READ | ARCH_PROT_WRITE);
	} else if (new_end < old_end) {
		rc = mm_unmap(mm, new_end, old_end);
		mm_shootdown(mm);
	}
	if (rc)
		return (long)cur;
	mm->brk = want;
	return (long)want;
}

static unsigned prot_from(uint64_t p)
{
	return (p & LX_PROT_READ ? ARCH_PROT_READ : 0) | (p & LX_PROT_WRITE ? ARCH_PROT_WRITE : 0) |
	       (p & LX_PROT_EXEC ? ARCH_PROT_EXEC : 0);
}

static long sys_mmap(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	uint64_t addr = a[0], len = a[1], prot = a[2], flags = a[3];
	struct mm *mm = proc_current()->mm;
	if (!len || (addr & (PAGE_SIZE - 1)) || (a[5] & (PAGE_SIZE - 1)))
		return -LX_EINVAL;
	if (!(flags & (LX_MAP_PRIVATE | LX_MAP_SHARED)))
		return -LX_EINVAL;
	if (!(flags & LX_MAP_ANONYMOUS)) {
		long acc = sysf_acc_mode(CUR, (int)a[4]);
		if (acc < 0)
			return acc;
		/* Linux's do_mmap: a private mapping needs a readable file, a shared writable
		 * one a writable file (EACCES), before the file is asked (ENODEV) */
		if (acc == LX_O_WRONLY || ((flags & LX_MAP_SHARED) && (prot & LX_PROT_WRITE) &&
					   acc == LX_O_RDONLY))
			return -LX_EACCES;
	}
	if (len > USER_VA_END)
		return -LX_ENOMEM;
	/* a file's pages: MAP_PRIVATE (a copy) or MAP_SHARED (the file's pages) of a regular
	 * file (kernel/proc/mmfile.c, docs/userspace.md "Dynamic programs") */
	bool file = !(flags & LX_MAP_ANONYMOUS), ro = false;
	if (file) {
		ro = sysf_acc_mode(CUR, (int)a[4]) == LX_O_RDONLY;
		struct lx_stat st;
		long rc = vfs_fstat(proc_current()->fdt, (int)a[4], &st);
		if (rc)
			return rc;
		bool zero = (st.st_mode & LX_S_IFMT) == LX_S_IFCHR && st.st_rdev == 0x105;
		if (zero)
			file = false;	/* /dev/zero: anonymous memory, as Linux's */
		else if ((st.st_mode & LX_S_IFMT) != LX_S_IFREG)
			return -LX_ENODEV;
		if (a[5] + ALIGN_UP(len, PAGE_SIZE) < a[5])
			return -LX_EOVERFLOW;
	}
	len = ALIGN_UP(len, PAGE_SIZE);
	if (flags & (LX_MAP_FIXED | LX_MAP_FIXED_NOREPLACE)) {
		if (addr < USER_VA_MIN || addr >= USER_VA_END || len > USER_VA_END - addr)
			return -LX_ENOMEM;
		if ((flags & LX_MAP_FIXED_NOREPLACE) && mm_overlaps(mm, addr, addr + len))
			return -LX_EEXIST;
	} else {
		/* found and mapped under one hold of the mm lock: another thread's mmap
		 * must not be given the same gap */
		long rc = 0;
		addr = mm_map_free(mm, len, prot_from(prot), &rc);
		if (!addr)
			return rc ? rc : -LX_ENOMEM;
		if (!file)
			return (long)addr;
		/* a file's mapping replaces that reservation, as MAP_FIXED would (nothing
		 * touched it yet: no other CPU holds a translation of it) */
		rc = mm_mmap_file(mm, proc_current()->fdt, (int)a[4], addr, len, prot_from(prot),
				  a[5], flags & LX_MAP_SHARED, ro);
		if (rc)
			(void)mm_unmap(mm, addr, addr + len);
		return rc ? rc : (long)addr;
	}
	long rc = file ? mm_mmap_file(mm, proc_current()->fdt, (int)a[4], addr, len,
				      prot_from(prot), a[5], flags & LX_MAP_SHARED, ro)
		       : mm_map(mm, addr, addr + len, prot_from(prot));
	if (flags & LX_MAP_FIXED)
		mm_shootdown(mm);	/* what it replaced: other threads' CPUs */
	return rc ? rc : (long)addr;
}

static long sys_munmap(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	uint64_t addr = a[0], len = ALIGN_UP(a[1], PAGE_SIZE);
	if ((addr & (PAGE_SIZE - 1)) || !a[1])
		return -LX_EINVAL;
	if (addr < USER_VA_MIN || addr >= USER_VA_END || len > USER_VA_END - addr)
		return addr + len <= USER_VA_MIN ? 0 : -LX_EINVAL;
	long rc = mm_unmap(proc_current()->mm, addr, addr + len);
	mm_shootdown(proc_current()->mm);	/* other threads' CPUs */
	return rc;
}

static long sys_mprotect(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	uint64_t addr = a[0], len = ALIGN_UP(a[1], PAGE_SIZE);
	if (addr & (PAGE_SIZE - 1))
		return -LX_EINVAL;
	if (a[2] & ~(uint64_t)7)
		return -LX_EINVAL;
	if (!len)
		return 0;
	if (addr < USER_VA_MIN || addr >= USER_VA_END || len > USER_VA_END - addr)
		return -LX_ENOMEM;
	long rc = mm_protect(proc_current()->mm, addr, addr + len, prot_from(a[2]));
	mm_shootdown(proc_current()->mm);	/* other threads' CPUs */
	return rc;
}

static long sys_arch_prctl(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	switch (a[0]) {
	case LX_ARCH_SET_FS:
		return arch_uctx_set_fs(p->uctx, a[1]) ? 0 : -LX_EPERM;
	case LX_ARCH_GET_FS: {
		uint64_t v = arch_uctx_get_fs(p->uctx);
		return copy_to_user((void *)a[1], &v, 8);
	}
	}
	return -LX_EINVAL;	/* ARCH_SET_GS (unsupported here), 0x3001 CET probe, ... */
}

static long sys_set_tid_address(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	p->clear_child_tid = a[0];
	return p->pid;
}

/* sysinfo (busybox's free and uptime read it): memory from the page allocator as
 * /proc/meminfo says it (kernel/proc/procfs.c), mem_unit 1; no swap, no load average
 * (ksync keeps none: 0), procs the process table's entries. The layout is the x86-64
 * struct sysinfo (asserted below). */
struct lx_sysinfo {
	int64_t uptime;
	uint64_t loads[3];
	uint64_t totalram, freeram, sharedram, bufferram, totalswap, freeswap;
	uint16_t procs, pad;
	uint64_t totalhigh, freehigh;
	uint32_t mem_unit;
	char f[4];
};
_Static_assert(offsetof(struct lx_sysinfo, procs) == 80 && offsetof(struct lx_sysinfo, totalhigh) == 88 &&
	       offsetof(struct lx_sysinfo, mem_unit) == 104 && sizeof(struct lx_sysinfo) == 112,
	       "struct sysinfo (x86-64)");

static long sys_sysinfo(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct lx_sysinfo si;
	memset(&si, 0, sizeof si);
	si.uptime = (int64_t)(ktime_ns() / 1000000000u);
	si.totalram = (uint64_t)pmm_total_pages() * PAGE_SIZE;
	si.freeram = (uint64_t)pmm_free_pages() * PAGE_SIZE;
	si.sharedram = fs_data_pages() * PAGE_SIZE;	/* the RAM file system's (tmpfs's on Linux) */
	int pids[PROC_MAX];
	si.procs = (uint16_t)proc_pids(pids, PROC_MAX);
	si.mem_unit = 1;
	return copy_to_user((void *)a[0], &si, sizeof si);
}

/* sched_getaffinity (busybox's nproc, glibc's get_nprocs fallback): the task's mask as
 * sched_setaffinity left it, every online CPU if it never set one. Linux answers the
 * size of its cpumask (8 bytes here: at most 64 CPUs), EINVAL for a shorter buffer; pid
 * 0 or a live task's id, ESRCH for another. */
static long sys_sched_getaffinity(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (a[1] < sizeof(uint64_t))
		return -LX_EINVAL;
	uint64_t mask;
	long rc = (int)a[0] < 0 ? -LX_ESRCH : proc_affinity((int)a[0], &mask, NULL);
	if (rc)
		return rc;
	rc = copy_to_user((void *)a[2], &mask, sizeof mask);
	return rc ? rc : (long)sizeof mask;
}

static long sys_uname(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	static const struct lx_utsname u = {
		.sysname = "Linux", .nodename = "ksync", .release = "6.1.0-ksync",
		.version = "#1 SMP ksync", .machine = "x86_64", .domainname = "(none)",
	};
	return copy_to_user((void *)a[0], &u, sizeof u);
}

/* prctl: the process's name (PR_SET_NAME/PR_GET_NAME: 16 bytes with the NUL, a longer
 * name cut silently, as Linux's TASK_COMM_LEN); every other option -EINVAL. comm is
 * written by the process's own thread (exec and this call) under the table lock (/proc
 * reads it). glibc's busybox asks for its name and sets the applet's at every start. */
static long sys_prctl(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	char name[sizeof p->comm];
	switch ((int)a[0]) {
	case LX_PR_SET_NAME: {
		long n = strncpy_from_user(name, (const char *)a[1], sizeof name);
		if (n == -LX_EFAULT)
			return n;
		name[sizeof name - 1] = 0;	/* -ENAMETOOLONG: the first 15 bytes */
		proc_set_comm(p, name);		/* under the table lock: /proc reads it */
		return 0;
	}
	case LX_PR_GET_NAME:
		memcpy(name, proc_group(p)->comm, sizeof name);
		name[sizeof name - 1] = 0;
		return copy_to_user((void *)a[1], name, sizeof name);
	}
	return -LX_EINVAL;
}

static long clock_read(uint64_t clk, struct lx_timespec *ts);

/* time(2): CLOCK_REALTIME's seconds, also stored at tloc when it is not NULL */
static long sys_time(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct lx_timespec ts;
	clock_read(LX_CLOCK_REALTIME, &ts);
	if (a[0] && copy_to_user((void *)a[0], &ts.tv_sec, sizeof ts.tv_sec))
		return -LX_EFAULT;
	return ts.tv_sec;
}

static long sys_prlimit64(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (a[1] >= 16)
		return -LX_EINVAL;
	if (a[1] == LX_RLIMIT_NPROC) {
		/* kept per process (proc.c: fork's EAGAIN); settable, for another process
		 * too (every ksync process has the caller's uid, 0) */
		struct lx_rlimit nw, old;
		if (a[2] && copy_from_user(&nw, (const void *)a[2], sizeof nw))
			return -LX_EFAULT;
		long rc = proc_rlimit_nproc((int)a[0], a[2] ? &nw : NULL, &old);
		if (!rc && a[3] && copy_to_user((void *)a[3], &old, sizeof old))
			return -LX_EFAULT;
		return rc;
	}
	struct process *g = proc_group(proc_current());
	if (a[0] && (int)a[0] != g->pid)
		return -LX_ESRCH;
	if (a[3]) {
		struct lx_rlimit r = { LX_RLIM_INFINITY, LX_RLIM_INFINITY };
		if (a[1] == LX_RLIMIT_STACK)
			r.rlim_cur = MM_STACK_SIZE;
		else if (a[1] == LX_RLIMIT_NOFILE)
			r.rlim_cur = r.rlim_max = FS_NOFILE;
		else if (a[1] == LX_RLIMIT_CORE) {
			r.rlim_cur = g->rlim_core;
			r.rlim_max = g->rlim_core_max;
		}
		if (copy_to_user((void *)a[3], &r, sizeof r))
			return -LX_EFAULT;
	}
	if (a[2]) {
		struct lx_rlimit r;
		if (copy_from_user(&r, (const void *)a[2], sizeof r))
			return -LX_EFAULT;
		if (a[1] == LX_RLIMIT_CORE) {	/* only the permission of the core bit */
			if (r.rlim_cur > r.rlim_max)
				return -LX_EINVAL;
			/* the caller is root: raising the hard limit is allowed too */
			g->rlim_core = r.rlim_cur;	/* the group's (a thread writes it) */
			g->rlim_core_max = r.rlim_max;
			return 0;
		}
		return -LX_EPERM;	/* the other limits are fixed in this slice */
	}
	return 0;
}

static long sys_getrlimit(struct trapframe *tf, const uint64_t a[6])
{
	uint64_t b[6] = { 0, a[0], 0, a[1] };
	return sys_prlimit64(tf, b);
}

static long sys_setrlimit(struct trapframe *tf, const uint64_t a[6])
{
	uint64_t b[6] = { 0, a[0], a[1], 0 };
	return sys_prlimit64(tf, b);
}

static uint64_t rnd;

static long sys_getrandom(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	/* GRND_NONBLOCK 1, GRND_RANDOM 2, GRND_INSECURE 4 (not with GRND_RANDOM) */
	if ((a[2] & ~(uint64_t)7) || (a[2] & 6) == 6)
		return -LX_EINVAL;
	uint8_t kb[256];
	/* every byte asked for (Linux's cap is MAX_RW_COUNT), 256 at a time; a fault after
	 * some bytes returns those */
	size_t n = a[1] > 0x7ffff000ull ? 0x7ffff000ull : a[1], done = 0;
	while (done < n) {
		size_t c = n - done < sizeof kb ? n - done : sizeof kb;
		for (size_t i = 0; i < c; i += 8) {
			/* relaxed: a counter, nothing else is ordered by it */
			uint64_t z = __atomic_add_fetch(&rnd, 0x9e3779b97f4a7c15ull + arch_cycles(),
							__ATOMIC_RELAXED);
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
			z ^= z >> 31;
			memcpy(kb + i, &z, c - i < 8 ? c - i : 8);
		}
		if (copy_to_user((void *)(a[0] + done), kb, c))
			return done ? (long)done : -LX_EFAULT;
		done += c;
	}
	return (long)done;
}

uint64_t ktime_ns(void)
{
	uint64_t c = arch_cycles(), hz = arch_tsc_hz();
	return c / hz * 1000000000ull + c % hz * 1000000000ull / hz;
}

static long clock_read(uint64_t clk, struct lx_timespec *ts)
{
	uint64_t ns = ktime_ns();
	switch (clk) {
	case LX_CLOCK_REALTIME:
	case LX_CLOCK_REALTIME_COARSE:
		ns += syscall_boot_epoch * 1000000000ull;
		break;
	case LX_CLOCK_MONOTONIC:
	case LX_CLOCK_MONOTONIC_COARSE:
	case LX_CLOCK_MONOTONIC_RAW:
	case LX_CLOCK_BOOTTIME:
	case LX_CLOCK_PROCESS_CPUTIME_ID:	/* approximations: the whole machine's time */
	case LX_CLOCK_THREAD_CPUTIME_ID:
		break;
	default:
		return -LX_EINVAL;
	}
	ts->tv_sec = (int64_t)(ns / 1000000000ull);
	ts->tv_nsec = (int64_t)(ns % 1000000000ull);
	return 0;
}

static long sys_clock_gettime(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct lx_timespec ts;
	long rc = clock_read(a[0], &ts);
	if (rc)
		return rc;
	return copy_to_user((void *)a[1], &ts, sizeof ts);
}

static long sys_clock_getres(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct lx_timespec ts;
	long rc = clock_read(a[0], &ts);
	if (rc || !a[1])
		return rc;
	ts.tv_sec = 0;
	ts.tv_nsec = 1;
	return copy_to_user((void *)a[1], &ts, sizeof ts);
}

static long sys_gettimeofday(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (!a[0])
		return 0;
	struct lx_timespec ts;
	clock_read(LX_CLOCK_REALTIME, &ts);
	struct lx_timeval tv = { ts.tv_sec, ts.tv_nsec / 1000 };
	return copy_to_user((void *)a[0], &tv, sizeof tv);
}

/* Sleep until the monotonic deadline (kernel/sched/timer.c: woken by the clock tick at
 * or after it, 1 ms resolution at SCHED_HZ). A signal that acts ends it early (its post
 * sets PROC_COND_SIG): the nanoseconds left, else 0. */
static uint64_t sleep_until(uint64_t deadline_ns)
{
	struct process *p = proc_current();
	uint64_t deadline = sched_tsc_of_ns(deadline_ns);
	for (;;) {
		uint64_t now = ktime_ns();
		if (now >= deadline_ns)
			return 0;
		if (proc_sig_any_acts(p))
			return deadline_ns - now;
		sched_sleep_until(PROC_COND_SIG, deadline);
	}
}

/* An interrupted relative sleep: the time left into *rem (if given), and the restart
 * code Linux uses (EINTR after a handler; a restart otherwise). */
static long sleep_interrupted(uint64_t left, uint64_t urem)
{
	struct lx_timespec r = { (int64_t)(left / 1000000000ull), (int64_t)(left % 1000000000ull) };
	if (urem && copy_to_user((void *)urem, &r, sizeof r))
		return -LX_EFAULT;
	return -LX_ERESTART_RESTARTBLOCK;
}

static long sys_nanosleep(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct lx_timespec ts;
	if (copy_from_user(&ts, (const void *)a[0], sizeof ts))
		return -LX_EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
		return -LX_EINVAL;
	uint64_t left = sleep_until(ktime_ns() + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	return left ? sleep_interrupted(left, a[1]) : 0;
}

static long sys_clock_nanosleep(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct lx_timespec ts, now = { 0, 0 };
	if (a[0] != LX_CLOCK_REALTIME && a[0] != LX_CLOCK_MONOTONIC && a[0] != LX_CLOCK_BOOTTIME) {
		struct lx_timespec t;	/* a clock that exists but has no sleep: Linux's */
		return clock_read(a[0], &t) ? -LX_EINVAL : -LX_EOPNOTSUPP;	/* kc->nsleep */
	}
	if (copy_from_user(&ts, (const void *)a[2], sizeof ts))
		return -LX_EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
		return -LX_EINVAL;
	uint64_t want = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	if (a[1] & LX_TIMER_ABSTIME) {
		clock_read(a[0], &now);
		uint64_t n = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		if (sleep_until(ktime_ns() + (want > n ? want - n : 0)))
			return -LX_ERESTARTNOHAND;	/* absolute: no time left to report */
	} else {
		uint64_t left = sleep_until(ktime_ns() + want);
		if (left)
			return sleep_interrupted(left, a[3]);
	}
	return 0;
}

static long sys_sched_yield(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	thread_yield();
	return 0;
}

/* ---- signals (kernel/proc/signal.c delivers them) ------------------------------------- */
KERNEL_HOT static long sys_rt_sigaction(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	uint64_t sig = a[0];
	if (sig < 1 || sig >= PROC_NSIG || a[3] != 8)
		return -LX_EINVAL;
	struct lx_sigaction n;
	if (a[1]) {
		if (copy_from_user(&n, (const void *)a[1], sizeof n))
			return -LX_EFAULT;
		if (sig == LX_SIGKILL || sig == LX_SIGSTOP)
			return -LX_EINVAL;
	}
	if (a[2]) {
		struct lx_sigaction old;
		proc_sigaction_get(p, (int)sig, &old);
		if (copy_to_user((void *)a[2], &old, sizeof old))
			return -LX_EFAULT;
	}
	if (a[1]) {
		n.mask &= ~(PROC_SIGBIT(LX_SIGKILL) | PROC_SIGBIT(LX_SIGSTOP));
		proc_sigaction_set(p, (int)sig, &n);
		/* POSIX: a pending signal whose action becomes "ignore" is discarded */
		if (n.handler == LX_SIG_IGN || (n.handler == LX_SIG_DFL && proc_sig_default_ignored((unsigned)sig))) {
			struct lx_siginfo drop;
			(void)proc_signal_take(p, (int)sig, &drop);
		}
	}
	return 0;
}

static long sys_rt_sigprocmask(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	struct process *p = proc_current();
	if (a[3] != 8)
		return -LX_EINVAL;
	uint64_t old = p->sigmask;
	if (a[1]) {
		uint64_t set;
		if (copy_from_user(&set, (const void *)a[1], 8))
			return -LX_EFAULT;
		uint64_t never = PROC_SIGBIT(LX_SIGKILL) | PROC_SIGBIT(LX_SIGSTOP), m;
		switch (a[0]) {
		case LX_SIG_BLOCK: m = old | set; break;
		case LX_SIG_UNBLOCK: m = old & ~set; break;
		case LX_SIG_SETMASK: m = set; break;
		default: return -LX_EINVAL;
		}
		proc_set_sigmask(p, m & ~never);	/* the thread's own */
	}
	if (a[2] && copy_to_user((void *)a[2], &old, 8))
		return -LX_EFAULT;
	return 0;
}

static long sys_rt_sigreturn(struct trapframe *tf, const uint64_t a[6])
{
	(void)a;
	return sys_rt_sigreturn_impl(tf);
}

static long sys_rt_sigsuspend(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (a[1] != 8)
		return -LX_EINVAL;
	uint64_t m;
	if (copy_from_user(&m, (const void *)a[0], 8))
		return -LX_EFAULT;
	return signal_suspend(m, true);
}

static long sys_pause(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return signal_suspend(0, false);
}

static long sys_rt_sigpending(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (a[1] > 8)
		return -LX_EINVAL;
	struct process *p = proc_current();
	uint64_t v = proc_sig_pending(p) & p->sigmask;	/* the thread's and the group's */
	return copy_to_user((void *)a[0], &v, a[1]);
}

static long sys_rt_sigtimedwait(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	if (a[3] != 8)
		return -LX_EINVAL;
	uint64_t set;
	if (copy_from_user(&set, (const void *)a[0], 8))
		return -LX_EFAULT;
	int64_t ns = -1;
	if (a[2]) {
		struct lx_timespec ts;
		if (copy_from_user(&ts, (const void *)a[2], sizeof ts))
			return -LX_EFAULT;
		if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
			return -LX_EINVAL;
		ns = ts.tv_sec * 1000000000ll + ts.tv_nsec;
	}
	struct process *p = proc_current();
	uint64_t deadline = ns >= 0 ? ktime_ns() + (uint64_t)ns : 0;
	uint64_t mask = p->sigmask;
	set &= ~(PROC_SIGBIT(LX_SIGKILL) | PROC_SIGBIT(LX_SIGSTOP));
	for (;;) {
		struct lx_siginfo info;
		int s = signal_take_of(set, &info);
		if (s) {
			if (a[1] && copy_to_user((void *)a[1], &info, sizeof info))
				return -LX_EFAULT;
			return s;
		}
		if (proc_sig_any_acts(p))
			return -LX_EINTR;	/* another signal's handler or action */
		if (ns >= 0 && ktime_ns() >= deadline)
			return -LX_EAGAIN;
		/* while asleep the set is unblocked (Linux's real_blocked): a process-directed
		 * signal of the set picks this thread to wake when the others block it;
		 * re-checked after the widening, so a post that saw the old mask is found
		 * here. A timeout sleeps with the deadline's timer (kernel/sched/timer.c). */
		proc_set_sigmask(p, mask & ~set);
		if (!(proc_sig_pending(p) & set))
			sched_sleep_until(PROC_COND_SIG, ns >= 0 ? sched_tsc_of_ns(deadline) : 0);
		proc_set_sigmask(p, mask);
	}
}

static long sys_sigaltstack(struct trapframe *tf, const uint64_t a[6])
{
	return signal_sigaltstack(a[0], a[1], arch_uregs_sp(tf));
}

static long sys_tkill(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_tkill(-1, (int)a[0], (int)a[1]);
}

static long sys_tgkill(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_tkill((int)a[0], (int)a[1], (int)a[2]);
}

static long sys_setpgid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_setpgid((int)a[0], (int)a[1]);
}

static long sys_getpgid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_getpgid((int)a[0]);
}

static long sys_getpgrp(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return proc_getpgid(0);
}

static long sys_setsid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	(void)a;
	return proc_setsid();
}

static long sys_getsid(struct trapframe *tf, const uint64_t a[6])
{
	(void)tf;
	return proc_getsid((int)a[0]);
}

static long sys_enosys(struct trapframe *tf, const uint64_t a[6])
{
	(void)a;
	uint64_t nr = arch_sys_nr(tf);
	if (nr < LX_NR_SYSCALLS)
		__atomic_add_fetch(&enosys_count[nr], 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&enosys_other, 1, __ATOMIC_RELAXED);
	return -LX_ENOSYS;
}

/* ---- the table ------------------------------------------------------------------------- */
static const sys_fn table[LX_NR_SYSCALLS] = {
	[LX_SYS_read] = sys_read,
	[LX_SYS_write] = sys_write,
	[LX_SYS_open] = sys_open,
	[LX_SYS_close] = sys_close,
	[LX_SYS_stat] = sys_stat,
	[LX_SYS_fstat] = sys_fstat,
	[LX_SYS_lstat] = sys_lstat,
	[LX_SYS_lseek] = sys_lseek,
	[LX_SYS_mmap] = sys_mmap,
	[LX_SYS_mprotect] = sys_mprotect,
	[LX_SYS_munmap] = sys_munmap,
	[LX_SYS_brk] = sys_brk,
	[LX_SYS_rt_sigaction] = sys_rt_sigaction,
	[LX_SYS_rt_sigprocmask] = sys_rt_sigprocmask,
	[LX_SYS_ioctl] = sys_ioctl,
	[LX_SYS_readv] = sys_readv,
	[LX_SYS_writev] = sys_writev,
	[LX_SYS_sched_yield] = sys_sched_yield,
	[LX_SYS_dup] = sys_dup,
	[LX_SYS_dup2] = sys_dup2,
	[LX_SYS_nanosleep] = sys_nanosleep,
	[LX_SYS_getpid] = sys_getpid,
	[LX_SYS_clone] = sys_clone,
	[LX_SYS_fork] = sys_fork,
	[LX_SYS_vfork] = sys_vfork,
	[LX_SYS_execve] = sys_execve,
	[LX_SYS_exit] = sys_exit,
	[LX_SYS_wait4] = sys_wait4,
	[LX_SYS_kill] = sys_kill,
	[LX_SYS_uname] = sys_uname,
	[LX_SYS_utimensat] = sys_utimensat,
	[LX_SYS_sysinfo] = sys_sysinfo,
	[LX_SYS_sched_getaffinity] = sys_sched_getaffinity,
	[LX_SYS_fcntl] = sys_fcntl,
	[LX_SYS_gettimeofday] = sys_gettimeofday,
	[LX_SYS_getrlimit] = sys_getrlimit,
	[LX_SYS_setrlimit] = sys_setrlimit,
	[LX_SYS_getuid] = sys_zero,
	[LX_SYS_getgid] = sys_zero,
	[LX_SYS_geteuid] = sys_zero,
	[LX_SYS_getegid] = sys_zero,
	[LX_SYS_getppid] = sys_getppid,
	[LX_SYS_arch_prctl] = sys_arch_prctl,
	[LX_SYS_prctl] = sys_prctl,
	[LX_SYS_time] = sys_time,
	[LX_SYS_gettid] = sys_gettid,
	[LX_SYS_getcpu] = sys_getcpu,
	[LX_SYS_futex] = sys_futex,
	[LX_SYS_get_robust_list] = sys_get_robust_list,
	[LX_SYS_set_tid_address] = sys_set_tid_address,
	[LX_SYS_clock_gettime] = sys_clock_gettime,
	[LX_SYS_clock_getres] = sys_clock_getres,
	[LX_SYS_clock_nanosleep] = sys_clock_nanosleep,
	[LX_SYS_exit_group] = sys_exit_group,
	[LX_SYS_openat] = sys_openat,
	[LX_SYS_newfstatat] = sys_newfstatat,
	[LX_SYS_set_robust_list] = sys_set_robust_list,
	[LX_SYS_dup3] = sys_dup3,
	[LX_SYS_prlimit64] = sys_prlimit64,
	[LX_SYS_getrandom] = sys_getrandom,
	[LX_SYS_pread64] = sys_pread64,
	[LX_SYS_pwrite64] = sys_pwrite64,
	[LX_SYS_poll] = sys_poll,
	[LX_SYS_ppoll] = sys_ppoll,
	[LX_SYS_access] = sys_access,
	[LX_SYS_faccessat] = sys_faccessat,
	[LX_SYS_faccessat2] = sys_faccessat2,
	[LX_SYS_pipe] = sys_pipe,
	[LX_SYS_pipe2] = sys_pipe2,
	[LX_SYS_sendfile] = sys_sendfile,
	[LX_SYS_ftruncate] = sys_ftruncate,
	[LX_SYS_getdents64] = sys_getdents64,
	[LX_SYS_getcwd] = sys_getcwd,
	[LX_SYS_chdir] = sys_chdir,
	[LX_SYS_fchdir] = sys_fchdir,
	[LX_SYS_rename] = sys_rename,
	[LX_SYS_renameat] = sys_renameat,
	[LX_SYS_mkdir] = sys_mkdir,
	[LX_SYS_mkdirat] = sys_mkdirat,
	[LX_SYS_rmdir] = sys_rmdir,
	[LX_SYS_link] = sys_link,
	[LX_SYS_linkat] = sys_linkat,
	[LX_SYS_unlink] = sys_unlink,
	[LX_SYS_unlinkat] = sys_unlinkat,
	[LX_SYS_symlink] = sys_symlink,
	[LX_SYS_symlinkat] = sys_symlinkat,
	[LX_SYS_readlink] = sys_readlink,
	[LX_SYS_readlinkat] = sys_readlinkat,
	[LX_SYS_chmod] = sys_chmod,
	[LX_SYS_fchmod] = sys_fchmod,
	[LX_SYS_fchmodat] = sys_fchmodat,
	[LX_SYS_umask] = sys_umask,
	[LX_SYS_rt_sigreturn] = sys_rt_sigreturn,
	[LX_SYS_rt_sigsuspend] = sys_rt_sigsuspend,
	[LX_SYS_rt_sigpending] = sys_rt_sigpending,
	[LX_SYS_rt_sigtimedwait] = sys_rt_sigtimedwait,
	[LX_SYS_pause] = sys_pause,
	[LX_SYS_sigaltstack] = sys_sigaltstack,
	[LX_SYS_tkill] = sys_tkill,
	[LX_SYS_tgkill] = sys_tgkill,
	[LX_SYS_setpgid] = sys_setpgid,
	[LX_SYS_getpgid] = sys_getpgid,
	[LX_SYS_getpgrp] = sys_getpgrp,
	[LX_SYS_setsid] = sys_setsid,
	[LX_SYS_getsid] = sys_getsid,
	/* syssched.c: scheduling policies, affinity, memory locking, socketpair */
	[LX_SYS_sched_setscheduler] = sys_sched_setscheduler,
	[LX_SYS_sched_setparam] = sys_sched_setparam,
	[LX_SYS_sched_getscheduler] = sys_sched_getscheduler,
	[LX_SYS_sched_getparam] = sys_sched_getparam,
	[LX_SYS_sched_get_priority_max] = sys_sched_get_priority_max,
	[LX_SYS_sched_get_priority_min] = sys_sched_get_priority_min,
	[LX_SYS_sched_rr_get_interval] = sys_sched_rr_get_interval,
	[LX_SYS_sched_setattr] = sys_sched_setattr,
	[LX_SYS_sched_getattr] = sys_sched_getattr,
	[LX_SYS_sched_setaffinity] = sys_sched_setaffinity,
	[LX_SYS_mlock] = sys_mlock,
	[LX_SYS_munlock] = sys_mlock,
	[LX_SYS_mlock2] = sys_mlock2,
	[LX_SYS_mlockall] = sys_mlockall,
	[LX_SYS_munlockall] = sys_munlockall,
	[LX_SYS_socketpair] = sys_socketpair,
	/* rseq, clone3 and every other number: sys_enosys (filled in below) */
};

static bool restartable(uint64_t nr)
{
	switch (nr) {
	case LX_SYS_read: case LX_SYS_write: case LX_SYS_readv: case LX_SYS_writev:
	case LX_SYS_pread64: case LX_SYS_pwrite64: case LX_SYS_ioctl: case LX_SYS_sendfile:
	case LX_SYS_open: case LX_SYS_openat:
		return true;
	}
	return false;
}

KERNEL_HOT long kernel_syscall(struct trapframe *tf)
{
	uint64_t a[6];
	uint64_t nr = arch_sys_args(tf, a);
	sys_fn fn = nr < LX_NR_SYSCALLS && table[nr] ? table[nr] : sys_enosys;
	long rc = fn(tf, a);
	if (fn == sys_rt_sigreturn) {
		/* tf is the restored frame, rax included: no restart applies */
		arch_sys_set_result(tf, rc);
		signal_user_return(tf, -1);
		return (long)arch_sys_result(tf);
	}
	/* a blocking file call interrupted by a signal (kernel/fs answers -EINTR) is made
	 * again after a handler with SA_RESTART, or when no handler runs (Linux's
	 * -ERESTARTSYS); wait4 and the sleeps say so themselves */
	if (rc == -LX_EINTR && restartable(nr))
		rc = -LX_ERESTARTSYS;
	arch_sys_set_result(tf, rc);
	/* signal.c: a signal sent to this process. The number goes along only with a
	 * restart code (-512..-516), the one result the return may rewrite (restart_syscall):
	 * with -1 the return skips that step */
	bool restart = (unsigned long)(-rc - LX_ERESTARTSYS) <= LX_ERESTART_RESTARTBLOCK - LX_ERESTARTSYS;
	signal_user_return(tf, restart ? (long)nr : -1);
	return (long)arch_sys_result(tf);
}

void syscall_report(void)
{
	char buf[1024];
	size_t n = 0;
	n += (size_t)ksnprintf(buf + n, sizeof buf - n, "KSYNC {\"kind\":\"user_enosys\",\"counts\":{");
	bool first = true;
	for (unsigned i = 0; i < LX_NR_SYSCALLS && n < sizeof buf - 64; i++) {
		uint64_t c = __atomic_load_n(&enosys_count[i], __ATOMIC_RELAXED);
		if (!c)
			continue;
		char nm[16];
		const char *name = sys_names[i];
		if (!name) {
			ksnprintf(nm, sizeof nm, "nr_%u", i);
			name = nm;
		}
		n += (size_t)ksnprintf(buf + n, sizeof buf - n, "%s\"%s\":%lu", first ? "" : ",", name, c);
		first = false;
	}
	ksnprintf(buf + n, sizeof buf - n, "},\"other\":%lu}\n",
		  __atomic_load_n(&enosys_other, __ATOMIC_RELAXED));
	kprintf("%s", buf);
}
