/*
 * fs_internal.h - what the files of kernel/fs share: the inode, the ramfs monitor, the
 * wait channel of poll and the tty, and the file operations of each kind of file. Not for
 * use outside kernel/fs (vfs.h is the interface).
 */
#ifndef KSYNC_FS_INTERNAL_H
#define KSYNC_FS_INTERNAL_H

#include "vfs.h"
#include "kernel.h"
#include "monitor.h"
#include "mm.h"

/* A condition flag of the thread state word (thread.h: objects use 8..31) for the fs
 * wait channel below. */
#define FS_COND_WAIT SCHED_COND(26)

/* A directory entry. */
struct dentry_rec {
	struct dentry_rec *next;	/* ramfs: the directory's entries, cookie order */
	struct inode *child;		/* ramfs */
	uint64_t cookie;		/* constant: getdents' position of this entry */
	uint16_t len;			/* constant */
	char name[];			/* constant, NUL-terminated */
};

/* An inode. Every field is protected by the ramfs monitor (ramfs_mon), whatever the
 * type: pipes' inodes too (their data are the pipe's, under the pipe's monitor). */
struct inode {
	uint64_t ino;			/* constant */
	uint32_t mode;			/* LX_S_IF* type | permission bits as stored */
	uint32_t nlink;			/* directory entries naming it (+1 for a dir's ".") */
	uint32_t uid, gid;
	uint32_t refs;			/* open files, fs_ctx root/cwd */
	uint64_t rdev;			/* character devices: Linux's encoding */
	int64_t size;
	struct lx_timespec atime, mtime, ctime;
	uint8_t procfs;			/* constant: PROCFS_* (procfs.c), 0 elsewhere */
	int32_t procfs_pid;		/* constant: the process a /proc entry is of (0:
					   /proc's own, -1: self) */
	union {
		struct {
			struct dentry_rec *head, *tail;
			uint64_t next_cookie;	/* the next entry's cookie (first: 2) */
			struct inode *parent;	/* ".."; itself for "/" */
			uint32_t nent;		/* entries (without "." and "..") */
		} dir;
		struct {
			uint8_t **pages;	/* page i holds bytes [i*4096, (i+1)*4096); NULL: zeros */
			size_t cap;		/* slots in pages[] */
		} reg;
		struct {
			char *target;		/* NUL-terminated, size bytes */
		} lnk;
		void *pipe;			/* LX_S_IFIFO: struct pipe (pipe.c) */
	} u;
};

#define S_TYPE(m) ((m) & LX_S_IFMT)
#define IS_DIR(i) (S_TYPE((i)->mode) == LX_S_IFDIR)
#define IS_REG(i) (S_TYPE((i)->mode) == LX_S_IFREG)
#define IS_LNK(i) (S_TYPE((i)->mode) == LX_S_IFLNK)
#define IS_CHR(i) (S_TYPE((i)->mode) == LX_S_IFCHR)
#define IS_FIFO(i) (S_TYPE((i)->mode) == LX_S_IFIFO)

/* ---- ramfs (ramfs.c): every call with ramfs_mon held unless it says otherwise ---------- */
extern struct monitor ramfs_mon;
void ramfs_lock(void);			/* mon_lock(&ramfs_mon) (after ramfs_ensure) */
void ramfs_unlock(void);
int ramfs_ensure(void);			/* the monitor and "/" exist (no lock held) */
struct inode *ramfs_root(void);
/* A new inode (nlink 0, refs 0, size 0), or NULL. */
struct inode *ramfs_new(uint32_t mode);
/* Free it if nothing names or holds it any more. */
void ramfs_maybe_free(struct inode *i);
void inode_ref(struct inode *i);
void inode_unref(struct inode *i);	/* refs--, then ramfs_maybe_free */
/* Drop a reference without holding the monitor (takes it). */
void inode_put(struct inode *i);
struct dentry_rec *ramfs_find(struct inode *dir, const char *name, size_t len);
/* Add an entry (the caller adjusts link counts). -LX_ENOMEM. */
int ramfs_add(struct inode *dir, const char *name, size_t len, struct inode *child);
/* Name a new inode (ramfs_new's, nothing names it yet) in dir and set the link counts
 * (a directory: 2 and its parent's +1; else 1); out of memory: i freed, -LX_ENOMEM. */
int ramfs_add_new(struct inode *dir, const char *name, size_t len, struct inode *i);
void ramfs_del(struct inode *dir, struct dentry_rec *d);
long ramfs_read_data(struct inode *i, void *buf, size_t n, uint64_t off);
long ramfs_write_data(struct inode *i, const void *buf, size_t n, uint64_t off);
int ramfs_truncate(struct inode *i, uint64_t len);
/* n data pages from index first (holes filled with zeroed pages), a reference taken on
 * each for the caller (fs_page_release): MAP_SHARED (fmap.c). -LX_ENOSPC. */
int ramfs_pages_hold(struct inode *i, size_t first, size_t n, void **out);
void ramfs_stat(const struct inode *i, struct lx_stat *st);
struct lx_timespec fs_now(void);
/* The name of child in dir, or NULL. */
const struct dentry_rec *ramfs_name_of(const struct inode *dir, const struct inode *child);

extern const struct file_ops ramfs_file_ops;	/* regular files and directories */

/* ---- devices (dev.c, tty.c) -------------------------------------------------------------- */
#define FS_MKDEV(ma, mi) ((uint64_t)(((mi) & 0xff) | ((ma) << 8) | (((uint64_t)(mi) & ~0xffu) << 12)))
/* The operations of character device rdev, or NULL (-> ENXIO at open). */
const struct file_ops *dev_ops(uint64_t rdev);
extern const struct file_ops tty_ops;

/* ---- /proc (procfs.c): ramfs_mon held ------------------------------------------------------ */
#define PROCFS_ROOT 1		/* /proc */
#define PROCFS_PIDDIR 2		/* /proc/<pid> */
#define PROCFS_FILE 3		/* text regenerated at each lookup */
#define PROCFS_LINK 4		/* self, exe: target set at each lookup */
/* Make /proc in "/" (fs_init). */
int procfs_make(struct inode *root);
/* The walk is about to look name up in dir (dir->procfs != 0): bring it up to date. */
void procfs_lookup(struct inode *dir, const char *name, size_t len);
/* /proc's pid directories in line with the process table (getdents from the start). */
void procfs_refresh(struct inode *proc);

/* ---- pipes (pipe.c) ---------------------------------------------------------------------- */
/* Create a pipe: two files (read end, write end), each holding one reference. No lock. */
int pipe_create(struct file **rd, struct file **wr, int flags);

/* ---- the wait channel (wait.c): poll and the tty's readers -------------------------------
 * A waiter: fs_wait_begin() (returns a generation), test its condition, then
 * fs_wait_sleep(&gen) (sleeps only if nothing was notified since begin), loop; finally
 * fs_wait_end(). A notifier changes the state under the object's lock, reads
 * fs_wait_wanted() under that same lock, and if true calls fs_wait_notify() (no lock
 * held, or a master lock that is not fs_wait's). */
uint64_t fs_wait_begin(void);
/* *gen: the generation the caller's test saw; updated to the one its next test sees */
int fs_wait_sleep(uint64_t *gen);	/* -LX_EINTR if a signal is pending */
/* the same, ended also by the scheduler's timer at TSC time deadline (0: none; thread.h
 * sched_sleep_until): returns 0 then - the caller tests its deadline */
int fs_wait_sleep_until(uint64_t *gen, uint64_t deadline);
void fs_wait_end(void);
bool fs_wait_wanted(void);
void fs_wait_notify(void);

/* Interruptible condition-variable waits (pipes): the object's monitor held; `get`/`put`
 * keep the object alive while fs_interrupt broadcasts on it. */
struct fs_cvwait {
	struct fs_cvwait *next;		/* fs_wait_lock */
	struct thread *t;		/* constant while registered */
	struct monitor *mon;
	struct condvar *cv[2];
	void *obj;
	void (*get)(void *obj), (*put)(void *obj);
};
/* Returns 0 after a wakeup, -LX_EINTR if a signal is (or becomes) pending. */
int fs_cv_wait(struct fs_cvwait *w);

/* The hooks as the file system calls them: fs_sig_pending() (a test hook if set, else
 * fs_signal_pending), fs_tty_sig(sig) (the test hook if set, and fs_tty_signal). Tests set
 * their hooks with fs_test_hooks (NULL removes), so they hold whatever the process layer
 * overrides. */
bool fs_sig_pending(void);
void fs_tty_sig(int sig);
void fs_test_hooks(bool (*sig)(void), void (*ttysig)(int));

/* A file's access mode (LX_O_RDONLY/WRONLY/RDWR): constant, but its word is changed by
 * F_SETFL (a CAS) while others read it, so every read is atomic (relaxed). */
static inline uint32_t acc_of(const struct file *f)
{
	return __atomic_load_n(&f->flags, __ATOMIC_RELAXED) & LX_O_ACCMODE;
}

/* ---- the fd layer (vfs.c) ------------------------------------------------------------------ */
struct file *file_new(struct inode *i, const struct file_ops *ops, uint32_t flags, void *priv);
/* fs_ctx's fields (fd.c), ramfs_mon held */
struct inode *fs_ctx_root_(struct fs_ctx *c);
struct inode *fs_ctx_cwd_(struct fs_ctx *c);
void fs_ctx_set_cwd_(struct fs_ctx *c, struct inode *i);
unsigned fs_ctx_umask_(struct fs_ctx *c);

#endif
