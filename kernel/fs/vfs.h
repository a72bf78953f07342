/*
 * vfs.h - the file layer the Linux system-call handlers call (issue 24, "Files";
 * docs/userspace.md "## Files"). Portable C11: the same code runs in the x86-64 kernel
 * and in the hosted port's kernel, where kernel/tests/test_fs.c runs it under
 * ThreadSanitizer.
 *
 * Every call works on KERNEL buffers (the system-call layer bounces user memory through
 * kernel buffers) and returns a non-negative result or a negative Linux errno (-LX_E*,
 * kernel/syscall/linux_abi.h). Every call that may block is for thread context with the
 * scheduler running (it takes monitors: kernel/include/monitor.h), never for handlers.
 *
 * Papers. Massalin & Pu 1991, "Input and output": Synthesis's file system is a pipeline
 * (disk driver -> file mapper -> file buffer, with "unix style read write seek" at the
 * file-buffer level and the open file's kernel-call code on top) and its tty is "a finite
 * state machine [that] converts editing commands" fed by the terminal driver's interrupts;
 * here the ramfs is the file buffer (no disk), the tty is kernel/fs/tty.c. Hartman &
 * Ousterhout (Sprite) section 5: the cswitch benchmark's pipes all went through one
 * monitor around the file handle table (handleTableLock), "causing a bottleneck"; here
 * every descriptor table has its own monitor (class "fdtable"), and the file system's
 * one monitor (class "ramfs") is the lock whose statistics will say whether it is ours.
 *
 * Locks (each a lock class with statistics, lockstat.h):
 *   ramfs   (monitor, kernel/fs/ramfs.c) the whole name space and every inode of the
 *           RAM file system: directory entries, inode fields, file data, inode reference
 *           counts, each fs_ctx's root/cwd pointers, and the offset of every open file
 *           whose inode is a ramfs directory or regular file;
 *   fdtable (monitor, one per table) the table's slots and close-on-exec bits;
 *   pipe    (monitor + condition variables "pipe_readable"/"pipe_writable", per pipe);
 *   tty     (master lock, interrupts masked: tty_receive runs in the serial handler);
 *   fs_wait (master lock) the poll/tty wait channel and the interruptible-sleeper table.
 * Order: fdtable -> ramfs -> pipe; a master lock innermost, never held while sleeping.
 * A file is dropped (file_put) only after every monitor but its own is released.
 */
#ifndef KSYNC_FS_VFS_H
#define KSYNC_FS_VFS_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include "syscall/linux_abi.h"	/* -Ikernel: kernel/syscall/ */

struct inode;
struct file;
struct thread;

#define FS_NOFILE 256		/* descriptors per table (RLIMIT_NOFILE as ksync answers it) */
#define FS_NAME_MAX 255		/* longest path component */
#define FS_SYMLOOP_MAX 40	/* symbolic links followed in one walk (Linux's MAXSYMLINKS) */

/* ---- open files -------------------------------------------------------------------------
 * A struct file is an open file description: shared by dup'ed descriptors and across
 * fork, freed (ops->release) when its last reference goes. refs: atomic; flags: the access
 * mode and status flags (O_APPEND, O_NONBLOCK, ...), atomic (F_SETFL changes them while
 * other threads read); pos: the inode's lock (ramfs: the ramfs monitor; pipes and devices
 * do not use it). */
struct file_ops {
	/* *pos is the position to use (the file's, or pread's); the op advances it */
	long (*read)(struct file *f, void *buf, size_t n, uint64_t *pos);
	long (*write)(struct file *f, const void *buf, size_t n, uint64_t *pos);
	/* arg: a kernel buffer of vfs_ioctl_size(cmd) bytes (or the integer itself, cast) */
	long (*ioctl)(struct file *f, unsigned cmd, void *arg);
	/* LX_POLL* bits ready now */
	unsigned (*poll)(struct file *f);
	void (*release)(struct file *f);
};

struct file {
	uint32_t refs;			/* atomic */
	uint32_t flags;			/* atomic: LX_O_ACCMODE bits | status flags */
	uint64_t pos;			/* the inode's lock (see above) */
	struct inode *inode;		/* constant; holds one inode reference */
	const struct file_ops *ops;	/* constant */
	void *priv;			/* the ops' own (a pipe end, a device) */
};

void file_get(struct file *f);
void file_put(struct file *f);

/* ---- descriptor tables (one per process) ------------------------------------------------
 * Protected by its own monitor (class "fdtable"): fd[] and cloexec. refs (atomic): the
 * processes (threads) sharing it. */
struct fdtable;
struct fdtable *fdtable_new(void);			/* NULL if out of memory */
struct fdtable *fdtable_clone(struct fdtable *t);	/* fork: a copy; NULL if no memory */
void fdtable_get(struct fdtable *t);			/* one more sharer (CLONE_FILES) */
void fdtable_put(struct fdtable *t);			/* last put closes every descriptor */
void fdtable_close_on_exec(struct fdtable *t);		/* execve */
/* The open file behind fd with a reference (file_put when done), or NULL. */
struct file *fdtable_file(struct fdtable *t, int fd);
/* Linux's fdget/fdput (__fget_light): the same lookup for the duration of one system
 * call of the table's user. A table marked solo (fdtable_set_solo: one thread uses it)
 * is changed by nobody but its caller, so the file stays open until the caller's own
 * close: the lookup takes neither the monitor nor a reference (*ref = false); otherwise
 * it is fdtable_file (*ref = true). Release with fdtable_file_done(f, *ref). The file
 * layer's configuration may keep every lookup locked (fs_set_fd_lookup_locked). */
struct file *fdtable_file_light(struct fdtable *t, int fd, bool *ref);
static inline void fdtable_file_done(struct file *f, bool ref)
{
	if (ref)
		file_put(f);
}
/* Whether one thread alone uses the table (kernel/proc: the group's thread count is 1,
 * set under its table lock at each change, as mm's solo mark). A new table is not solo.
 * Release: the table's changes by threads that used it before happen-before a lookup
 * that reads the mark (acquire). Only the one user's clone can end a solo period. */
void fdtable_set_solo(struct fdtable *t, bool solo);
/* Install f (the caller's reference moves to the table) at the lowest free fd >= min.
 * -LX_EMFILE if none (the reference is then dropped). */
int fdtable_install(struct fdtable *t, struct file *f, int min, bool cloexec);
unsigned fdtable_count(struct fdtable *t);		/* open descriptors (tests) */

/* ---- per-process file-system context: root, cwd, umask ----------------------------------
 * root and cwd hold inode references, changed under the ramfs monitor; umask atomic. */
struct fs_ctx;
struct fs_ctx *fs_ctx_new(void);			/* root = cwd = "/", umask 022 */
struct fs_ctx *fs_ctx_clone(struct fs_ctx *c);		/* fork */
void fs_ctx_put(struct fs_ctx *c);
unsigned fs_umask(struct fs_ctx *c, unsigned mask);	/* sets, returns the old */

/* ---- the calls (Linux semantics; the caller is root: uid 0) ------------------------------
 * dirfd: LX_AT_FDCWD or an open directory. path: NUL-terminated kernel string. */
int vfs_openat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, int flags,
	       unsigned mode);
int vfs_close(struct fdtable *t, int fd);
long vfs_read(struct fdtable *t, int fd, void *buf, size_t n);
long vfs_write(struct fdtable *t, int fd, const void *buf, size_t n);
long vfs_pread(struct fdtable *t, int fd, void *buf, size_t n, int64_t off);
long vfs_pwrite(struct fdtable *t, int fd, const void *buf, size_t n, int64_t off);
int64_t vfs_lseek(struct fdtable *t, int fd, int64_t off, int whence);
int vfs_fstat(struct fdtable *t, int fd, struct lx_stat *st);
int vfs_fstatat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		struct lx_stat *st, int flags);	/* AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH */
/* struct lx_dirent64 records into buf; bytes written, 0 at the end, -LX_EINVAL if the
 * next record does not fit. d_off: a cookie (stable while entries come and go). */
long vfs_getdents64(struct fdtable *t, int fd, void *buf, size_t n);
int vfs_mkdirat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, unsigned mode);
int vfs_unlinkat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, int flags);
int vfs_renameat(struct fdtable *t, struct fs_ctx *c, int olddirfd, const char *oldpath,
		 int newdirfd, const char *newpath);
int vfs_linkat(struct fdtable *t, struct fs_ctx *c, int olddirfd, const char *oldpath,
	       int newdirfd, const char *newpath, int flags);	/* AT_SYMLINK_FOLLOW */
int vfs_symlinkat(struct fdtable *t, struct fs_ctx *c, const char *target, int dirfd,
		  const char *path);
long vfs_readlinkat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		    char *buf, size_t n);	/* not NUL-terminated, as Linux */
int vfs_fchmodat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, unsigned mode);
int vfs_fchmod(struct fdtable *t, int fd, unsigned mode);
/* utimensat: ts NULL sets both to now; a tv_nsec of FS_UTIME_NOW / FS_UTIME_OMIT
 * (Linux's UTIME_NOW, UTIME_OMIT) sets that one to now / leaves it. path NULL: the file
 * dirfd itself (futimens). flags: AT_SYMLINK_NOFOLLOW. */
#define FS_UTIME_NOW ((1l << 30) - 1)
#define FS_UTIME_OMIT ((1l << 30) - 2)
int vfs_utimensat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		  const struct lx_timespec ts[2], int flags);
int vfs_faccessat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, int amode,
		  int flags);
int vfs_dup(struct fdtable *t, int fd);
int vfs_dup2(struct fdtable *t, int fd, int newfd);
int vfs_dup3(struct fdtable *t, int fd, int newfd, int flags);	/* O_CLOEXEC */
long vfs_fcntl(struct fdtable *t, int fd, int cmd, unsigned long arg);
/* arg: see file_ops.ioctl; -LX_ENOTTY if the file has no ioctl (or not this cmd) */
long vfs_ioctl(struct fdtable *t, int fd, unsigned cmd, void *arg);
/* The bytes an ioctl's argument takes in kernel memory (the syscall layer copies that
 * much in and out), 0 if the argument is a plain integer, -LX_ENOTTY if unknown. */
int vfs_ioctl_size(unsigned cmd);
long vfs_getcwd(struct fs_ctx *c, char *buf, size_t n);	/* length incl. the NUL */
int vfs_chdir(struct fdtable *t, struct fs_ctx *c, const char *path);
int vfs_fchdir(struct fdtable *t, struct fs_ctx *c, int fd);
int vfs_ftruncate(struct fdtable *t, int fd, int64_t len);
/* sendfile(out, in, offset or NULL, count): through a kernel bounce buffer */
long vfs_sendfile(struct fdtable *t, int out_fd, int in_fd, int64_t *offset, size_t count);
/* fds[0..n): revents filled; returns how many have revents != 0. timeout_ms < 0 waits
 * forever, 0 not at all. Waits are interruptible (-LX_EINTR). A finite timeout sleeps
 * with the scheduler's timer (thread.h sched_sleep_until: 1 ms resolution at SCHED_HZ). */
int vfs_poll(struct fdtable *t, struct lx_pollfd *fds, unsigned n, int timeout_ms);
/* pipe2: fds[0] the read end, fds[1] the write end; flags O_NONBLOCK | O_CLOEXEC */
int vfs_pipe2(struct fdtable *t, int fds[2], int flags);
/* socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0): socket.c */
int vfs_socketpair(struct fdtable *t, int domain, int type, int protocol, int fds[2]);

/* ---- set-up ---------------------------------------------------------------------------
 * fs_init: once, from a thread (the scheduler running): creates "/", /dev with null,
 * zero, urandom, console, tty; /tmp (mode 1777); /proc (procfs.c). Idempotent. */
int fs_init(void);
/* The monitor flags (monitor.h: 0 or MON_QSCHED) every monitor of the file layer is made
 * with - the RAM file system's, each descriptor table's, each pipe's: the kernel's lock
 * configuration (urun.c `locks=`: Sprite's Figure 9 queues a monitor's waiters under
 * sched_Mutex, its fix under the monitor's own interlock). Set once before fs_init and
 * before any process runs; read at each monitor's creation. */
void fs_set_monitor_flags(unsigned flags);
unsigned fs_monitor_flags(void);
/* Every descriptor lookup takes its table's monitor, solo or not (Sprite's handle table
 * monitor, grabbed on each access - the locks=sprite and sprite-fix configurations); by
 * default a solo table's lookup takes none (fdtable_file_light). Set as the flags. */
void fs_set_fd_lookup_locked(bool locked);
bool fs_fd_lookup_locked(void);
/* Unpack a cpio newc archive ("070701") into "/": directories, regular files, symlinks,
 * modes, hard links (by ino), TRAILER!!!. A corrupt archive is refused (-LX_EINVAL) with
 * a message naming what is wrong and at which offset; `err`, if not NULL, receives it. */
int fs_unpack_cpio(const void *buf, size_t len);
int fs_unpack_cpio_msg(const void *buf, size_t len, char *err, size_t errlen);

/* ---- /proc (kernel/fs/procfs.c) ---------------------------------------------------------
 * The process layer's side, set once (fs_procfs_set) before any process runs; until then
 * /proc holds its fixed names with empty text. Called with the ramfs monitor held (so
 * they may take only master locks, and must not touch user memory):
 *   self()  the calling process's pid, 0 in a kernel thread;
 *   pids()  the pids in the table (live and zombie), ascending, at most max;
 *   gen()   the text of file `name` of process pid ("stat", "status", "cmdline", "exe":
 *           the link's target) or of /proc itself (pid 0: "meminfo", "cpuinfo",
 *           "uptime") into buf (n bytes, no NUL needed): its length, or -LX_ENOENT
 *           (the process is gone). */
struct procfs_source {
	int (*self)(void);
	unsigned (*pids)(int *out, unsigned max);
	long (*gen)(int pid, const char *name, char *buf, size_t n);
};
void fs_procfs_set(const struct procfs_source *s);
/* The absolute path (from the fs_ctx's root) of the file path names, symbolic links
 * followed: its length without the NUL, or -LX_E*. (execve records it for /proc/<pid>/exe.) */
long vfs_realpath(struct fdtable *t, struct fs_ctx *c, const char *path, char *buf, size_t n);

/* ---- hooks the process layer overrides (weak defaults here) -----------------------------
 * fs_signal_pending: a signal is pending for the calling thread (a blocking wait then
 * returns -LX_EINTR). Default: false.
 * fs_tty_signal: the tty's ISIG character arrived (^C: LX_SIGINT, ^\: LX_SIGQUIT, ^Z:
 * LX_SIGTSTP) for the foreground process group (tty_fg_pgrp()). May run in the serial
 * interrupt handler.
 * Default: nothing.
 * fs_sigpipe: a write found no reader (-LX_EPIPE follows); the syscall layer raises
 * SIGPIPE here. Default: nothing. */
bool fs_signal_pending(void);
void fs_tty_signal(int sig);
void fs_sigpipe(void);
/* fs_page_hold / fs_page_release: a reference on a regular file's data page (a pmm page)
 * taken and dropped; the last drop frees it. The file holds one per page; a mapping
 * (MAP_SHARED, or a copy-on-write one of MAP_PRIVATE or exec: kernel/proc/mmfile.c and
 * exec.c, through the port's page counts) holds its own, so the page outlives a truncate
 * or unlink while mapped. Default (no mappings: the hosted
 * port): hold nothing, release frees. Any context. */
void fs_page_hold(void *page);
void fs_page_release(void *page);
/* mmap or exec of the regular file open at fd: n data pages from page index first (bytes
 * [first*4096, (first+n)*4096)), holes filled with zeroed pages (as a write would), each
 * with a reference taken for the caller (fs_page_release each when mapped). 0, -LX_EBADF,
 * -LX_ENODEV (not a regular file), -LX_ENOSPC (no memory). */
int vfs_mmap_pages(struct fdtable *t, int fd, uint64_t first, size_t n, void **pages);
/* The process layer posted a signal to t: wake it if it sleeps in a file wait, so that
 * the wait returns -LX_EINTR. Thread context. */
void fs_interrupt(struct thread *t);

/* ---- the console tty (kernel/fs/tty.c) ------------------------------------------------
 * tty_receive: one input character from the serial line; handler or thread context.
 * tty_set_output: where output and echo go (default: kwrite, the kernel console); NULL
 * restores the default. For tests. tty_reset: termios to the defaults, queues emptied. */
void tty_receive(char c);
void tty_set_output(void (*fn)(const char *s, size_t n));
void tty_reset(void);
int tty_fg_pgrp(void);		/* TIOCSPGRP's value (0 until set) */
void tty_set_fg_pgrp(int pgrp);	/* as TIOCSPGRP: the kernel's, for the shell it starts */
/* Flow control for the driver (tty.c "Flow control"): fn(true) when the input queue is
 * nearly full - the driver stops taking bytes (and must not call tty_receive while
 * tty_throttled() is true) -, fn(false) when a read emptied it to half. fn runs with the
 * tty's master lock held (from tty_receive or from a reader): it may only touch the
 * device. NULL: no flow control (bytes past a full queue are dropped). */
void tty_set_flow(void (*fn)(bool stop));
bool tty_throttled(void);

/* ---- statistics for tests ------------------------------------------------------------ */
/* Live ramfs inodes (directories, files, symlinks, devices, pipes) and file data pages. */
uint64_t fs_live_inodes(void);
uint64_t fs_data_pages(void);

#endif /* KSYNC_FS_VFS_H */
