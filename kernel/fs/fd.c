/*
 * fd.c - open file descriptions (struct file), descriptor tables (struct fdtable) and
 * the per-process file-system context (struct fs_ctx): vfs.h has the contract.
 *
 * Hartman & Ousterhout (Sprite) section 5: "Each time a pipe is accessed a monitor lock
 * around the file handle table (handleTableLock) in the kernel is grabbed. Although
 * different pairs of processes use different pipes, they all need to grab the handle
 * table monitor lock, causing a bottleneck." Here a descriptor table belongs to one
 * process (shared only by CLONE_FILES), with its own monitor (class "fdtable"), and a
 * lookup holds it only to take a reference on the file: two processes' pipes share no
 * lock.
 *
 * Shared state: struct fdtable's fd[] and cloexec[] - its monitor; its refs and every
 * file's refs and flags - atomic. A file is never released (file_put -> ops->release)
 * with a table's monitor held: release takes the ramfs or a pipe monitor.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

LOCK_CLASS(fs_fdtable_class, "fdtable", LOCK_MONITOR, LOCK_DATA);

struct fdtable {
	struct monitor mon;
	unsigned refs;				/* atomic */
	bool solo;				/* atomic: one thread uses the table
						   (fdtable_set_solo, vfs.h) */
	struct file *fd[FS_NOFILE];		/* mon */
	uint64_t cloexec[FS_NOFILE / 64];	/* mon */
};

struct fs_ctx {
	struct inode *root, *cwd;	/* ramfs_mon; each holds an inode reference */
	unsigned umask;			/* atomic */
	unsigned refs;			/* atomic */
};

/* ---- files ------------------------------------------------------------------------------- */

struct file *file_new(struct inode *i, const struct file_ops *ops, uint32_t flags, void *priv)
{
	struct file *f = kzalloc(sizeof *f);
	if (!f)
		return NULL;
	f->refs = 1;
	f->flags = flags;
	f->inode = i;
	f->ops = ops;
	f->priv = priv;
	return f;
}

void file_get(struct file *f)
{
	/* relaxed: the caller already holds a reference (or the table's monitor, which
	 * holds one), so the count cannot reach 0 meanwhile; the drop orders the uses */
	__atomic_fetch_add(&f->refs, 1, __ATOMIC_RELAXED);
}

void file_put(struct file *f)
{
	/* acq_rel: every holder's use of f happens-before its release */
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (f->ops->release)
		f->ops->release(f);
	else
		inode_put(f->inode);
	kfree(f);
}

/* ---- descriptor tables -------------------------------------------------------------------- */

struct fdtable *fdtable_new(void)
{
	struct fdtable *t = kzalloc(sizeof *t);
	if (!t)
		return NULL;
	if (mon_init(&t->mon, &fs_fdtable_class, fs_monitor_flags()) != KSYNC_OK) {
		kfree(t);
		return NULL;
	}
	t->refs = 1;
	return t;
}

struct fdtable *fdtable_clone(struct fdtable *src)
{
	struct fdtable *t = fdtable_new();
	if (!t)
		return NULL;
	mon_lock(&src->mon);
	for (unsigned i = 0; i < FS_NOFILE; i++)
		if (src->fd[i]) {
			file_get(src->fd[i]);
			t->fd[i] = src->fd[i];
		}
	memcpy(t->cloexec, src->cloexec, sizeof t->cloexec);
	mon_unlock(&src->mon);
	return t;
}

/* The only lock-free reader of fd[] is the table's one user (solo): every writer is that
 * user too, so the plain read sees its own writes; a writer that used the table before
 * the mark was set is ordered by the mark's release and acquire. */
KERNEL_HOT struct file *fdtable_file_light(struct fdtable *t, int fd, bool *ref)
{
	if (fd < 0 || fd >= FS_NOFILE) {
		*ref = false;
		return NULL;
	}
	if (__atomic_load_n(&t->solo, __ATOMIC_ACQUIRE)) {
		*ref = false;
		return t->fd[fd];
	}
	*ref = true;
	return fdtable_file(t, fd);
}

/* A configuration that locks every lookup never marks a table (the flag is set before any
 * process exists: vfs.h), so the lookup reads one word. */
void fdtable_set_solo(struct fdtable *t, bool solo)
{
	__atomic_store_n(&t->solo, solo && !fs_fd_lookup_locked(), __ATOMIC_RELEASE);
}

void fdtable_get(struct fdtable *t)
{
	__atomic_fetch_add(&t->refs, 1, __ATOMIC_RELAXED);	/* as file_get */
}

void fdtable_put(struct fdtable *t)
{
	/* acq_rel: every sharer's use of the table happens-before its teardown */
	if (__atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	/* the last sharer: nobody else can reach the table */
	for (unsigned i = 0; i < FS_NOFILE; i++)
		if (t->fd[i])
			file_put(t->fd[i]);
	mon_destroy(&t->mon);
	kfree(t);
}

static bool cloexec_of(const struct fdtable *t, unsigned fd)
{
	return (t->cloexec[fd / 64] >> (fd % 64)) & 1;
}

static void set_cloexec(struct fdtable *t, unsigned fd, bool on)
{
	if (on)
		t->cloexec[fd / 64] |= 1ull << (fd % 64);
	else
		t->cloexec[fd / 64] &= ~(1ull << (fd % 64));
}

void fdtable_close_on_exec(struct fdtable *t)
{
	struct file *drop[FS_NOFILE];
	unsigned n = 0;
	mon_lock(&t->mon);
	for (unsigned i = 0; i < FS_NOFILE; i++)
		if (t->fd[i] && cloexec_of(t, i)) {
			drop[n++] = t->fd[i];
			t->fd[i] = NULL;
			set_cloexec(t, i, false);
		}
	mon_unlock(&t->mon);
	for (unsigned i = 0; i < n; i++)
		file_put(drop[i]);
}

struct file *fdtable_file(struct fdtable *t, int fd)
{
	if (fd < 0 || fd >= FS_NOFILE)
		return NULL;
	mon_lock(&t->mon);
	struct file *f = t->fd[fd];
	if (f)
		file_get(f);
	mon_unlock(&t->mon);
	return f;
}

int fdtable_install(struct fdtable *t, struct file *f, int min, bool cloexec)
{
	if (min < 0)
		min = 0;
	mon_lock(&t->mon);
	for (int i = min; i < FS_NOFILE; i++)
		if (!t->fd[i]) {
			t->fd[i] = f;
			set_cloexec(t, (unsigned)i, cloexec);
			mon_unlock(&t->mon);
			return i;
		}
	mon_unlock(&t->mon);
	file_put(f);
	return -LX_EMFILE;
}

unsigned fdtable_count(struct fdtable *t)
{
	unsigned n = 0;
	mon_lock(&t->mon);
	for (unsigned i = 0; i < FS_NOFILE; i++)
		n += t->fd[i] != NULL;
	mon_unlock(&t->mon);
	return n;
}

int vfs_close(struct fdtable *t, int fd)
{
	if (fd < 0 || fd >= FS_NOFILE)
		return -LX_EBADF;
	mon_lock(&t->mon);
	struct file *f = t->fd[fd];
	t->fd[fd] = NULL;
	set_cloexec(t, (unsigned)fd, false);
	mon_unlock(&t->mon);
	if (!f)
		return -LX_EBADF;
	file_put(f);
	return 0;
}

int vfs_dup(struct fdtable *t, int fd)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	return fdtable_install(t, f, 0, false);
}

/* newfd := fd's file (cloexec as given); the file newfd had is closed. */
static int dup_to(struct fdtable *t, int fd, int newfd, bool cloexec)
{
	if (newfd < 0 || newfd >= FS_NOFILE)
		return -LX_EBADF;
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	mon_lock(&t->mon);
	struct file *old = t->fd[newfd];
	t->fd[newfd] = f;
	set_cloexec(t, (unsigned)newfd, cloexec);
	mon_unlock(&t->mon);
	if (old)
		file_put(old);
	return newfd;
}

int vfs_dup2(struct fdtable *t, int fd, int newfd)
{
	if (fd == newfd) {
		struct file *f = fdtable_file(t, fd);
		if (!f)
			return -LX_EBADF;
		file_put(f);
		return newfd;
	}
	return dup_to(t, fd, newfd, false);
}

int vfs_dup3(struct fdtable *t, int fd, int newfd, int flags)
{
	if (flags & ~LX_O_CLOEXEC)
		return -LX_EINVAL;
	if (fd == newfd)
		return -LX_EINVAL;
	return dup_to(t, fd, newfd, flags & LX_O_CLOEXEC);
}

#define SETFL_MASK (LX_O_APPEND | LX_O_NONBLOCK)

long vfs_fcntl(struct fdtable *t, int fd, int cmd, unsigned long arg)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	long rc;
	switch (cmd) {
	case LX_F_DUPFD:
	case LX_F_DUPFD_CLOEXEC:
		if (arg >= FS_NOFILE) {
			rc = -LX_EINVAL;
			break;
		}
		file_get(f);
		rc = fdtable_install(t, f, (int)arg, cmd == LX_F_DUPFD_CLOEXEC);
		break;
	case LX_F_GETFD:
		mon_lock(&t->mon);
		rc = t->fd[fd] ? (cloexec_of(t, (unsigned)fd) ? LX_FD_CLOEXEC : 0) : -LX_EBADF;
		mon_unlock(&t->mon);
		break;
	case LX_F_SETFD:
		mon_lock(&t->mon);
		if (t->fd[fd]) {
			set_cloexec(t, (unsigned)fd, arg & LX_FD_CLOEXEC);
			rc = 0;
		} else {
			rc = -LX_EBADF;
		}
		mon_unlock(&t->mon);
		break;
	case LX_F_GETFL:
		rc = __atomic_load_n(&f->flags, __ATOMIC_RELAXED);
		break;
	case LX_F_SETFL: {
		uint32_t old = __atomic_load_n(&f->flags, __ATOMIC_RELAXED), want;
		do	/* relaxed CAS: the flags are one word, read by the ops without order */
			want = (old & ~(uint32_t)SETFL_MASK) | ((uint32_t)arg & SETFL_MASK);
		while (!__atomic_compare_exchange_n(&f->flags, &old, want, false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED));
		rc = 0;
		break;
	}
	default:
		rc = -LX_EINVAL;
	}
	file_put(f);
	return rc;
}

/* ---- fs_ctx ------------------------------------------------------------------------------- */

struct fs_ctx *fs_ctx_new(void)
{
	if (ramfs_ensure() < 0)
		return NULL;
	struct fs_ctx *c = kzalloc(sizeof *c);
	if (!c)
		return NULL;
	c->umask = 022;
	c->refs = 1;
	ramfs_lock();
	c->root = c->cwd = ramfs_root();
	inode_ref(c->root);
	inode_ref(c->cwd);
	ramfs_unlock();
	return c;
}

struct fs_ctx *fs_ctx_clone(struct fs_ctx *src)
{
	struct fs_ctx *c = kzalloc(sizeof *c);
	if (!c)
		return NULL;
	c->umask = __atomic_load_n(&src->umask, __ATOMIC_RELAXED);	/* as fs_umask */
	c->refs = 1;
	ramfs_lock();
	c->root = src->root;
	c->cwd = src->cwd;
	inode_ref(c->root);
	inode_ref(c->cwd);
	ramfs_unlock();
	return c;
}

void fs_ctx_put(struct fs_ctx *c)
{
	/* acq_rel: as fdtable_put */
	if (__atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	ramfs_lock();
	inode_unref(c->root);
	inode_unref(c->cwd);
	ramfs_unlock();
	kfree(c);
}

unsigned fs_umask(struct fs_ctx *c, unsigned mask)
{
	/* relaxed: one word that orders nothing else (a creation reads it once) */
	return __atomic_exchange_n(&c->umask, mask & 0777, __ATOMIC_RELAXED);
}

/* For vfs.c (ramfs_mon held). */
struct inode *fs_ctx_root_(struct fs_ctx *c) { return c->root; }
struct inode *fs_ctx_cwd_(struct fs_ctx *c) { return c->cwd; }
void fs_ctx_set_cwd_(struct fs_ctx *c, struct inode *i)
{
	inode_ref(i);
	inode_unref(c->cwd);
	c->cwd = i;
}
unsigned fs_ctx_umask_(struct fs_ctx *c)
{
	return __atomic_load_n(&c->umask, __ATOMIC_RELAXED);	/* as fs_umask */
}
