/*
 * vfs.c - the path walk and the file system calls of vfs.h on kernel buffers.
 *
 * Massalin & Pu 1991, "Input and output": Synthesis's file system pipeline ends in a
 * file buffer implementing "unix style ... read write seek" system calls, with the open
 * file's kernel-call code on top; here every call is generic code over struct file_ops
 * (ramfs files and directories, pipes, devices, the tty) - Synthesis's specialisation of
 * that code per open file is not attempted.
 *
 * The walk is dentry-free: components are looked up in the ramfs directories with the
 * ramfs monitor held for the whole call (ramfs.c says why one lock), so no reference is
 * taken per step and nothing can be unlinked under the walk. "." and ".." (the fs_ctx's
 * root is its own parent, as chroot's), symbolic links in the middle always followed, the
 * last one as the caller asks (a trailing '/' follows it too), at most FS_SYMLOOP_MAX of
 * them per call (-ELOOP), components of at most FS_NAME_MAX bytes and paths shorter than
 * LX_PATH_MAX (-ENAMETOOLONG), a non-directory in the middle (-ENOTDIR).
 *
 * Locks: ramfs_mon around each call's name-space work; a descriptor table's monitor only
 * inside fd.c's helpers; files taken for a dirfd are dropped after ramfs_mon is released.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

#define W_FOLLOW 1u	/* follow a symbolic link in the last component */
#define W_PARENT 2u	/* the last component may be missing: return its directory and name */

struct walk {
	struct inode *dir;	/* the directory holding the last component */
	struct inode *ino;	/* what the path names; NULL if missing (W_PARENT) */
	char last[FS_NAME_MAX + 1];
	size_t lastlen;
	bool slash;		/* the path ends with '/' */
	bool dot;		/* the last component is "." or "..", or there is none ("/") */
};

/* ramfs_mon held. */
static int walk(struct fs_ctx *c, struct inode *start, const char *path, unsigned fl, struct walk *w)
{
	size_t plen = strlen(path);
	if (plen == 0)
		return -LX_ENOENT;
	if (plen >= LX_PATH_MAX)
		return -LX_ENAMETOOLONG;
	char *buf = kmalloc(2 * LX_PATH_MAX);
	if (!buf)
		return -LX_ENOMEM;
	char *tmp = buf + LX_PATH_MAX;
	memcpy(buf, path, plen + 1);
	struct inode *root = fs_ctx_root_(c);
	struct inode *cur = buf[0] == '/' ? root : start;
	const char *p = buf;
	unsigned links = 0;
	int rc = 0;
	w->dir = w->ino = NULL;
	w->lastlen = 0;
	w->last[0] = 0;
	w->slash = w->dot = false;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == 0) {		/* nothing but slashes left: cur itself */
			w->dir = w->ino = cur;
			w->dot = true;
			w->slash = true;
			break;
		}
		const char *q = p;
		while (*q && *q != '/')
			q++;
		size_t len = (size_t)(q - p);
		const char *next = q;
		while (*next == '/')
			next++;
		bool last = *next == 0, slash = last && next != q;
		if (len > FS_NAME_MAX) {
			rc = -LX_ENAMETOOLONG;
			break;
		}
		if (!IS_DIR(cur)) {
			rc = -LX_ENOTDIR;
			break;
		}
		struct inode *child;
		bool dot = false;
		if (len == 1 && p[0] == '.') {
			child = cur;
			dot = true;
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			child = cur == root ? cur : cur->u.dir.parent;
			dot = true;
		} else if (cur->nlink == 0) {	/* a removed directory holds no names */
			rc = -LX_ENOENT;
			break;
		} else {
			if (cur->procfs)	/* /proc's entries made fresh (procfs.c) */
				procfs_lookup(cur, p, len);
			struct dentry_rec *d = ramfs_find(cur, p, len);
			child = d ? d->child : NULL;
		}
		/* a trailing '/' follows the last link for a lookup; a W_PARENT caller (create,
		 * remove, rename, link) sees the link itself, as Linux's *at calls do */
		if (child && IS_LNK(child) && (!last || (fl & W_FOLLOW) || (slash && !(fl & W_PARENT)))) {
			if (++links > FS_SYMLOOP_MAX) {
				rc = -LX_ELOOP;
				break;
			}
			size_t tl = (size_t)child->size, rl = strlen(q);
			if (tl == 0) {
				rc = -LX_ENOENT;
				break;
			}
			if (tl + rl >= LX_PATH_MAX) {
				rc = -LX_ENAMETOOLONG;
				break;
			}
			/* the target, then what followed the link (q: its slashes and the rest) */
			memcpy(tmp, child->u.lnk.target, tl);
			memcpy(tmp + tl, q, rl + 1);
			memcpy(buf, tmp, tl + rl + 1);
			p = buf;
			if (buf[0] == '/')
				cur = root;
			continue;
		}
		if (last) {
			w->dir = cur;
			w->ino = child;
			w->dot = dot;
			w->slash = slash;
			memcpy(w->last, p, len);
			w->last[len] = 0;
			w->lastlen = len;
			if (!child && !(fl & W_PARENT))
				rc = -LX_ENOENT;
			else if (child && slash && !IS_DIR(child) && !(fl & W_PARENT))
				rc = -LX_ENOTDIR;	/* W_PARENT callers decide (w->slash) */
			break;
		}
		if (!child) {
			rc = -LX_ENOENT;
			break;
		}
		if (!IS_DIR(child)) {
			rc = -LX_ENOTDIR;
			break;
		}
		cur = child;
		p = next;
	}
	kfree(buf);
	return rc;
}

/* The directory a relative path starts from: takes ramfs_mon on success (*start set; the
 * dirfd's file, if any, in *hold until path_end). */
static int path_begin(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		      struct file **hold, struct inode **start)
{
	*hold = NULL;
	if (path[0] != '/' && dirfd != LX_AT_FDCWD) {
		*hold = fdtable_file(t, dirfd);
		if (!*hold)
			return -LX_EBADF;
	}
	ramfs_lock();
	*start = *hold ? (*hold)->inode : fs_ctx_cwd_(c);
	if (*hold && path[0] && !IS_DIR(*start)) {
		ramfs_unlock();
		file_put(*hold);
		return -LX_ENOTDIR;
	}
	return 0;
}

static void path_end(struct file *hold)
{
	ramfs_unlock();
	if (hold)
		file_put(hold);
}

/* Two paths (rename, link): the new path's directory file is looked up first (under the
 * descriptor table's monitor, which comes before ramfs's), then path_begin of the old
 * path. On 0 the ramfs monitor is held, *nstart is where the new path's walk starts and
 * the caller ends with path_end(*hold) and file_put(*hold_new) if set. */
static int two_paths_begin(struct fdtable *t, struct fs_ctx *c, int olddirfd,
			   const char *oldpath, int newdirfd, const char *newpath,
			   struct file **hold, struct file **hold_new, struct inode **start,
			   struct inode **nstart)
{
	*hold_new = NULL;
	if (newpath[0] != '/' && newdirfd != LX_AT_FDCWD) {
		*hold_new = fdtable_file(t, newdirfd);
		if (!*hold_new)
			return -LX_EBADF;
	}
	int rc = path_begin(t, c, olddirfd, oldpath, hold, start);
	if (rc) {
		if (*hold_new)
			file_put(*hold_new);
		*hold_new = NULL;
		return rc;
	}
	*nstart = *hold_new ? (*hold_new)->inode : fs_ctx_cwd_(c);
	return 0;
}

/* ---- ramfs files and directories ---------------------------------------------------------- */

static long rf_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	long rc;
	ramfs_lock();
	if (IS_DIR(f->inode)) {
		rc = -LX_EISDIR;
	} else {
		rc = ramfs_read_data(f->inode, buf, n, *pos);
		if (rc > 0)
			*pos += (uint64_t)rc;
	}
	ramfs_unlock();
	return rc;
}

static long rf_write(struct file *f, const void *buf, size_t n, uint64_t *pos)
{
	long rc;
	ramfs_lock();
	if (IS_DIR(f->inode)) {
		rc = -LX_EISDIR;
	} else if (f->inode->procfs) {	/* Linux: EIO for /proc's own, EINVAL a process's */
		rc = f->inode->procfs_pid ? -LX_EINVAL : -LX_EIO;
	} else {
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & LX_O_APPEND)
			*pos = (uint64_t)f->inode->size;
		rc = ramfs_write_data(f->inode, buf, n, *pos);
		if (rc > 0)
			*pos += (uint64_t)rc;
	}
	ramfs_unlock();
	return rc;
}

static unsigned rf_poll(struct file *f)
{
	(void)f;
	return LX_POLLIN | LX_POLLOUT;
}

const struct file_ops ramfs_file_ops = {
	.read = rf_read,
	.write = rf_write,
	.poll = rf_poll,
};

static bool seekable(const struct file *f)
{
	return f->ops == &ramfs_file_ops || (IS_CHR(f->inode) && f->ops != &tty_ops);
}

/* ---- open ---------------------------------------------------------------------------------- */

int vfs_openat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, int flags,
	       unsigned mode)
{
	unsigned acc = (unsigned)flags & LX_O_ACCMODE;
	if (fdtable_count(t) >= FS_NOFILE)
		return -LX_EMFILE;
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	bool excl = (flags & (LX_O_CREAT | LX_O_EXCL)) == (LX_O_CREAT | LX_O_EXCL);
	struct walk w;
	rc = walk(c, start, path, W_PARENT | ((flags & LX_O_NOFOLLOW) || excl ? 0 : W_FOLLOW), &w);
	struct inode *i = w.ino;
	if (rc == 0 && !i) {
		if (!(flags & LX_O_CREAT))
			rc = -LX_ENOENT;
		else if (w.slash)
			rc = -LX_EISDIR;
		else if (w.dir->nlink == 0 || w.dir->procfs)
			rc = -LX_ENOENT;
		else if (!(i = ramfs_new(LX_S_IFREG | (mode & ~fs_ctx_umask_(c) & 07777))))
			rc = -LX_ENOMEM;
		else if ((rc = ramfs_add(w.dir, w.last, w.lastlen, i)) == 0)
			i->nlink = 1;
		else
			ramfs_maybe_free(i);
	} else if (rc == 0) {
		if ((flags & LX_O_CREAT) && w.slash && !w.dot)
			rc = -LX_EISDIR;	/* Linux: O_CREAT and a trailing '/' */
		else if (excl)
			rc = -LX_EEXIST;
		else if (w.slash && !IS_DIR(i))
			rc = -LX_ENOTDIR;
		else if (IS_LNK(i))
			rc = -LX_ELOOP;
		else if (IS_DIR(i) && (acc != LX_O_RDONLY || (flags & (LX_O_CREAT | LX_O_TRUNC))))
			rc = -LX_EISDIR;	/* (O_TRUNC asks for write access, as on Linux) */
		else if ((flags & LX_O_DIRECTORY) && !IS_DIR(i))
			rc = -LX_ENOTDIR;
		else if (IS_CHR(i) && !dev_ops(i->rdev))
			rc = -LX_ENXIO;
		else if ((flags & LX_O_TRUNC) && IS_REG(i) && !i->procfs)
			rc = ramfs_truncate(i, 0);	/* also O_RDONLY|O_TRUNC, as Linux does */
	}
	if (rc == 0)
		inode_ref(i);
	path_end(hold);
	if (rc)
		return rc;
	const struct file_ops *ops = IS_CHR(i) ? dev_ops(i->rdev) : &ramfs_file_ops;
	uint32_t ff = ((uint32_t)flags & ~(uint32_t)(LX_O_CREAT | LX_O_EXCL | LX_O_NOCTTY |
						     LX_O_TRUNC | LX_O_CLOEXEC)) | LX_O_LARGEFILE;
	struct file *f = file_new(i, ops, ff, NULL);
	if (!f) {
		inode_put(i);
		return -LX_ENOMEM;
	}
	return fdtable_install(t, f, 0, flags & LX_O_CLOEXEC);
}

/* ---- read, write, seek --------------------------------------------------------------------- */

/* read, write, pread, pwrite: the one-call lookup (vfs.h fdtable_file_light) */
KERNEL_HOT long vfs_read(struct fdtable *t, int fd, void *buf, size_t n)
{
	bool ref;
	struct file *f = fdtable_file_light(t, fd, &ref);
	if (!f)
		return -LX_EBADF;
	long rc;
	if (acc_of(f) == LX_O_WRONLY)
		rc = -LX_EBADF;
	else if (!f->ops->read)
		rc = -LX_EINVAL;
	else
		rc = f->ops->read(f, buf, n, &f->pos);
	fdtable_file_done(f, ref);
	return rc;
}

KERNEL_HOT long vfs_write(struct fdtable *t, int fd, const void *buf, size_t n)
{
	bool ref;
	struct file *f = fdtable_file_light(t, fd, &ref);
	if (!f)
		return -LX_EBADF;
	long rc;
	if (acc_of(f) == LX_O_RDONLY)
		rc = -LX_EBADF;
	else if (!f->ops->write)
		rc = -LX_EINVAL;
	else
		rc = f->ops->write(f, buf, n, &f->pos);
	fdtable_file_done(f, ref);
	return rc;
}

long vfs_pread(struct fdtable *t, int fd, void *buf, size_t n, int64_t off)
{
	bool ref;
	struct file *f = fdtable_file_light(t, fd, &ref);
	if (!f)
		return -LX_EBADF;
	long rc;
	uint64_t pos = (uint64_t)off;
	if (acc_of(f) == LX_O_WRONLY)
		rc = -LX_EBADF;
	else if (!seekable(f))
		rc = -LX_ESPIPE;
	else if (off < 0)
		rc = -LX_EINVAL;
	else
		rc = f->ops->read(f, buf, n, &pos);
	fdtable_file_done(f, ref);
	return rc;
}

long vfs_pwrite(struct fdtable *t, int fd, const void *buf, size_t n, int64_t off)
{
	bool ref;
	struct file *f = fdtable_file_light(t, fd, &ref);
	if (!f)
		return -LX_EBADF;
	long rc;
	uint64_t pos = (uint64_t)off;
	if (acc_of(f) == LX_O_RDONLY)
		rc = -LX_EBADF;
	else if (!seekable(f))
		rc = -LX_ESPIPE;
	else if (off < 0)
		rc = -LX_EINVAL;
	else
		rc = f->ops->write(f, buf, n, &pos);
	fdtable_file_done(f, ref);
	return rc;
}

int64_t vfs_lseek(struct fdtable *t, int fd, int64_t off, int whence)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	int64_t rc;
	if (whence < LX_SEEK_SET || whence > LX_SEEK_HOLE) {
		rc = -LX_EINVAL;	/* before the file's kind: Linux's ksys_lseek */
	} else if (!seekable(f)) {
		rc = -LX_ESPIPE;
	} else if (f->ops != &ramfs_file_ops) {
		rc = 0;		/* devices: null, zero, urandom (Linux answers 0) */
	} else if (whence == LX_SEEK_DATA || whence == LX_SEEK_HOLE) {
		/* a RAM file has no holes it knows of: data from off to the end, the one hole
		 * at the end (Linux's generic_file_llseek_size); not for directories */
		ramfs_lock();
		int64_t size = (int64_t)f->inode->size;
		if (IS_DIR(f->inode))
			rc = -LX_EINVAL;
		else if (off < 0 || off >= size)
			rc = -LX_ENXIO;
		else
			f->pos = (uint64_t)(rc = whence == LX_SEEK_DATA ? off : size);
		ramfs_unlock();
	} else {
		ramfs_lock();
		int64_t base = whence == LX_SEEK_SET ? 0 : whence == LX_SEEK_CUR ? (int64_t)f->pos
							  : f->inode->size;
		if (IS_DIR(f->inode) && whence == LX_SEEK_END)
			rc = -LX_EINVAL;
		else if ((off > 0 && base > INT64_MAX - off) || base + off < 0)
			rc = -LX_EINVAL;
		else
			f->pos = (uint64_t)(rc = base + off);
		ramfs_unlock();
	}
	file_put(f);
	return rc;
}

/* ---- stat ---------------------------------------------------------------------------------- */

int vfs_fstat(struct fdtable *t, int fd, struct lx_stat *st)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	ramfs_lock();
	ramfs_stat(f->inode, st);
	ramfs_unlock();
	file_put(f);
	return 0;
}

int vfs_fstatat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		struct lx_stat *st, int flags)
{
	if (flags & ~(LX_AT_SYMLINK_NOFOLLOW | LX_AT_EMPTY_PATH | LX_AT_NO_AUTOMOUNT))
		return -LX_EINVAL;
	if (path[0] == 0 && (flags & LX_AT_EMPTY_PATH)) {
		if (dirfd != LX_AT_FDCWD)
			return vfs_fstat(t, dirfd, st);
		ramfs_lock();
		ramfs_stat(fs_ctx_cwd_(c), st);
		ramfs_unlock();
		return 0;
	}
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, (flags & LX_AT_SYMLINK_NOFOLLOW) ? 0 : W_FOLLOW, &w);
	if (rc == 0)
		ramfs_stat(w.ino, st);
	path_end(hold);
	return rc;
}

/* ---- directories --------------------------------------------------------------------------- */

static uint8_t dtype(const struct inode *i)
{
	switch (S_TYPE(i->mode)) {
	case LX_S_IFDIR: return LX_DT_DIR;
	case LX_S_IFREG: return LX_DT_REG;
	case LX_S_IFLNK: return LX_DT_LNK;
	case LX_S_IFCHR: return LX_DT_CHR;
	case LX_S_IFIFO: return LX_DT_FIFO;
	default: return LX_DT_UNKNOWN;
	}
}

#define DIRENT_NAME_OFF 19	/* offsetof(struct lx_dirent64, d_name) */

/* One record at buf + *used if it fits (cookie c: d_off = c + 1). */
static bool put_dirent(uint8_t *buf, size_t n, size_t *used, uint64_t ino, uint64_t c,
		       uint8_t type, const char *name, size_t len)
{
	size_t rec = ALIGN_UP(DIRENT_NAME_OFF + len + 1, 8);
	if (*used + rec > n)
		return false;
	struct lx_dirent64 *d = (struct lx_dirent64 *)(void *)(buf + *used);
	d->d_ino = ino;
	d->d_off = (int64_t)(c + 1);
	d->d_reclen = (uint16_t)rec;
	d->d_type = type;
	memcpy(d->d_name, name, len);
	memset(d->d_name + len, 0, rec - DIRENT_NAME_OFF - len);
	*used += rec;
	return true;
}

long vfs_getdents64(struct fdtable *t, int fd, void *buf, size_t n)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	long rc = 0;
	ramfs_lock();
	struct inode *d = f->inode;
	if (!IS_DIR(d) || f->ops != &ramfs_file_ops) {
		rc = -LX_ENOTDIR;
		goto out;
	}
	if (d->nlink == 0) {
		rc = -LX_ENOENT;	/* removed while open: Linux's IS_DEADDIR */
		goto out;
	}
	size_t used = 0;
	uint64_t pos = f->pos;
	bool full = false;
	if (pos == 0 && d->procfs == PROCFS_ROOT)
		procfs_refresh(d);	/* the live processes' directories */
	if (pos == 0) {
		if (!(full = !put_dirent(buf, n, &used, d->ino, 0, LX_DT_DIR, ".", 1)))
			pos = 1;
	}
	if (!full && pos == 1) {
		if (!(full = !put_dirent(buf, n, &used, d->u.dir.parent->ino, 1, LX_DT_DIR, "..", 2)))
			pos = 2;
	}
	for (struct dentry_rec *e = d->u.dir.head; e && !full; e = e->next) {
		if (e->cookie < pos)
			continue;
		if ((full = !put_dirent(buf, n, &used, e->child->ino, e->cookie, dtype(e->child),
					e->name, e->len)))
			break;
		pos = e->cookie + 1;
	}
	f->pos = pos;
	rc = full && used == 0 ? -LX_EINVAL : (long)used;
	d->atime = fs_now();
out:
	ramfs_unlock();
	file_put(f);
	return rc;
}

int vfs_mkdirat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, unsigned mode)
{
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, W_PARENT, &w);
	if (rc == 0) {
		struct inode *i;
		if (w.ino)
			rc = -LX_EEXIST;
		else if (w.dir->nlink == 0 || w.dir->procfs)
			rc = -LX_ENOENT;
		else if (!(i = ramfs_new(LX_S_IFDIR | (mode & ~fs_ctx_umask_(c) & 07777))))
			rc = -LX_ENOMEM;
		else
			rc = ramfs_add_new(w.dir, w.last, w.lastlen, i);
	}
	path_end(hold);
	return rc;
}

/* Is `a` the directory d or one of its ancestors? (ramfs_mon held) */
static bool is_ancestor(const struct inode *a, const struct inode *d)
{
	for (;;) {
		if (d == a)
			return true;
		if (d->u.dir.parent == d)
			return false;
		d = d->u.dir.parent;
	}
}

/* Remove the entry for w->ino from w->dir (ramfs_mon held). */
static void drop_entry(struct walk *w)
{
	struct inode *i = w->ino;
	ramfs_del(w->dir, ramfs_find(w->dir, w->last, w->lastlen));
	if (IS_DIR(i)) {
		i->nlink = 0;
		w->dir->nlink--;
	} else {
		i->nlink--;
	}
	i->ctime = fs_now();
	ramfs_maybe_free(i);
}

int vfs_unlinkat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, int flags)
{
	if (flags & ~LX_AT_REMOVEDIR)
		return -LX_EINVAL;
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, W_PARENT, &w);
	if (rc == 0 && !w.ino)
		rc = -LX_ENOENT;
	if (rc == 0) {
		struct inode *i = w.ino;
		if (flags & LX_AT_REMOVEDIR) {
			if (w.dot)
				rc = w.lastlen == 1 ? -LX_EINVAL : w.lastlen == 2 ? -LX_ENOTEMPTY : -LX_EBUSY;
			else if (!IS_DIR(i))
				rc = -LX_ENOTDIR;
			else if (w.dir->procfs)
				rc = -LX_EPERM;		/* Linux: before the emptiness */
			else if (i->u.dir.nent)
				rc = -LX_ENOTEMPTY;
			else if (i == fs_ctx_root_(c) || i == ramfs_root())
				rc = -LX_EBUSY;
			else
				drop_entry(&w);
		} else {
			if (IS_DIR(i) || w.dot)
				rc = -LX_EISDIR;
			else if (w.slash)
				rc = -LX_ENOTDIR;
			else if (w.dir->procfs)
				rc = -LX_EPERM;
			else
				drop_entry(&w);
		}
	}
	path_end(hold);
	return rc;
}

int vfs_renameat(struct fdtable *t, struct fs_ctx *c, int olddirfd, const char *oldpath,
		 int newdirfd, const char *newpath)
{
	struct file *hold, *hold_new;
	struct inode *start, *nstart;
	int rc = two_paths_begin(t, c, olddirfd, oldpath, newdirfd, newpath, &hold, &hold_new,
				 &start, &nstart);
	if (rc)
		return rc;
	struct walk o, n;
	rc = walk(c, start, oldpath, W_PARENT, &o);
	if (rc == 0 && !o.ino)
		rc = -LX_ENOENT;
	if (rc == 0 && hold_new && newpath[0] != '/' && !IS_DIR(nstart))
		rc = -LX_ENOTDIR;
	if (rc == 0)
		rc = walk(c, nstart, newpath, W_PARENT, &n);
	if (rc == 0) {
		struct inode *i = o.ino, *victim = n.ino;
		if (o.dot || n.dot)
			rc = -LX_EBUSY;
		else if (!o.dir->procfs != !n.dir->procfs)
			rc = -LX_EXDEV;		/* /proc is another file system on Linux */
		else if (o.dir->procfs)
			rc = victim ? -LX_EPERM : -LX_ENOENT;
		else if (victim == i)
			rc = 0;		/* the same file: nothing to do (Linux) */
		else if (!IS_DIR(i) && o.slash)
			rc = -LX_ENOTDIR;
		else if (!IS_DIR(i) && n.slash)
			rc = -LX_ENOTDIR;
		else if (victim && n.slash && !IS_DIR(victim))
			rc = -LX_ENOTDIR;
		else if (IS_DIR(i) && is_ancestor(i, n.dir))
			rc = -LX_EINVAL;
		else if (victim && IS_DIR(i) && !IS_DIR(victim))
			rc = -LX_ENOTDIR;
		else if (victim && !IS_DIR(i) && IS_DIR(victim))
			rc = -LX_EISDIR;
		else if (victim && IS_DIR(victim) && victim->u.dir.nent)
			rc = -LX_ENOTEMPTY;
		else if (victim && (victim == fs_ctx_root_(c) || victim == ramfs_root()))
			rc = -LX_EBUSY;
		else if (n.dir->nlink == 0)
			rc = -LX_ENOENT;
		else {
			/* add the new name first: the only step that can fail */
			struct dentry_rec *vd = victim ? ramfs_find(n.dir, n.last, n.lastlen) : NULL;
			if (vd) {
				vd->child = i;		/* replace in place: the victim loses its name */
				n.dir->mtime = n.dir->ctime = fs_now();
			} else {
				rc = ramfs_add(n.dir, n.last, n.lastlen, i);
			}
			if (rc == 0) {
				ramfs_del(o.dir, ramfs_find(o.dir, o.last, o.lastlen));
				if (IS_DIR(i) && o.dir != n.dir) {
					o.dir->nlink--;
					n.dir->nlink++;
					i->u.dir.parent = n.dir;
				}
				i->ctime = fs_now();
				if (victim) {
					if (IS_DIR(victim)) {
						victim->nlink = 0;
						n.dir->nlink--;
					} else {
						victim->nlink--;
					}
					victim->ctime = fs_now();
					ramfs_maybe_free(victim);
				}
			}
		}
	}
	path_end(hold);
	if (hold_new)
		file_put(hold_new);
	return rc;
}

int vfs_linkat(struct fdtable *t, struct fs_ctx *c, int olddirfd, const char *oldpath,
	       int newdirfd, const char *newpath, int flags)
{
	if (flags & ~(LX_AT_SYMLINK_FOLLOW | LX_AT_EMPTY_PATH))
		return -LX_EINVAL;
	struct file *hold, *hold_new;
	struct inode *start, *nstart;
	int rc = two_paths_begin(t, c, olddirfd, oldpath, newdirfd, newpath, &hold, &hold_new,
				 &start, &nstart);
	if (rc)
		return rc;
	struct walk o, n;
	rc = walk(c, start, oldpath, (flags & LX_AT_SYMLINK_FOLLOW) ? W_FOLLOW : 0, &o);
	if (rc == 0 && hold_new && newpath[0] != '/' && !IS_DIR(nstart))
		rc = -LX_ENOTDIR;
	if (rc == 0)
		rc = walk(c, nstart, newpath, W_PARENT, &n);
	if (rc == 0) {
		if (IS_DIR(o.ino))
			rc = -LX_EPERM;
		else if (n.ino)
			rc = -LX_EEXIST;
		else if (n.dir->procfs)
			rc = -LX_ENOENT;
		else if (o.ino->procfs)
			rc = -LX_EXDEV;
		else if (n.slash)
			rc = -LX_ENOENT;
		else if (n.dir->nlink == 0 || o.ino->nlink == 0)
			rc = -LX_ENOENT;
		else if ((rc = ramfs_add(n.dir, n.last, n.lastlen, o.ino)) == 0) {
			o.ino->nlink++;
			o.ino->ctime = fs_now();
		}
	}
	path_end(hold);
	if (hold_new)
		file_put(hold_new);
	return rc;
}

int vfs_symlinkat(struct fdtable *t, struct fs_ctx *c, const char *target, int dirfd,
		  const char *path)
{
	size_t tl = strlen(target);
	if (tl == 0)
		return -LX_ENOENT;
	if (tl >= LX_PATH_MAX)
		return -LX_ENAMETOOLONG;
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, W_PARENT, &w);
	if (rc == 0) {
		struct inode *i = NULL;
		char *copy = NULL;
		if (w.ino)
			rc = -LX_EEXIST;
		else if (w.slash || w.dir->nlink == 0 || w.dir->procfs)
			rc = -LX_ENOENT;
		else if (!(copy = kmalloc(tl + 1)) || !(i = ramfs_new(LX_S_IFLNK | 0777)))
			rc = -LX_ENOMEM;
		if (rc == 0) {
			memcpy(copy, target, tl + 1);
			i->u.lnk.target = copy;
			i->size = (int64_t)tl;
			if ((rc = ramfs_add(w.dir, w.last, w.lastlen, i)) == 0)
				i->nlink = 1;
			else
				ramfs_maybe_free(i);	/* frees copy too */
		} else {
			kfree(copy);
		}
	}
	path_end(hold);
	return rc;
}

long vfs_readlinkat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		    char *buf, size_t n)
{
	if ((long)n <= 0)
		return -LX_EINVAL;
	struct file *hold;
	struct inode *start;
	long rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, 0, &w);
	if (rc == 0) {
		if (!IS_LNK(w.ino)) {
			rc = -LX_EINVAL;
		} else {
			size_t k = (size_t)w.ino->size < n ? (size_t)w.ino->size : n;
			memcpy(buf, w.ino->u.lnk.target, k);
			rc = (long)k;
		}
	}
	path_end(hold);
	return rc;
}

int vfs_fchmodat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, unsigned mode)
{
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, W_FOLLOW, &w);
	if (rc == 0) {
		w.ino->mode = S_TYPE(w.ino->mode) | (mode & 07777);
		w.ino->ctime = fs_now();
	}
	path_end(hold);
	return rc;
}

static void set_times(struct inode *i, const struct lx_timespec ts[2])
{
	struct lx_timespec now = fs_now();
	for (int k = 0; k < 2; k++) {
		long ns = ts ? (long)ts[k].tv_nsec : FS_UTIME_NOW;
		if (ns == FS_UTIME_OMIT)
			continue;
		*(k ? &i->mtime : &i->atime) = ns == FS_UTIME_NOW ? now : ts[k];
	}
	i->ctime = now;
}

int vfs_utimensat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path,
		  const struct lx_timespec ts[2], int flags)
{
	if (flags & ~LX_AT_SYMLINK_NOFOLLOW)
		return -LX_EINVAL;
	for (int k = 0; ts && k < 2; k++)
		if ((ts[k].tv_nsec < 0 || ts[k].tv_nsec >= 1000000000) &&
		    ts[k].tv_nsec != FS_UTIME_NOW && ts[k].tv_nsec != FS_UTIME_OMIT)
			return -LX_EINVAL;
	if (!path) {
		struct file *f = fdtable_file(t, dirfd);
		if (!f)
			return -LX_EBADF;
		ramfs_lock();
		set_times(f->inode, ts);
		ramfs_unlock();
		file_put(f);
		return 0;
	}
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, (flags & LX_AT_SYMLINK_NOFOLLOW) ? 0 : W_FOLLOW, &w);
	if (rc == 0)
		set_times(w.ino, ts);
	path_end(hold);
	return rc;
}

int vfs_fchmod(struct fdtable *t, int fd, unsigned mode)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	ramfs_lock();
	f->inode->mode = S_TYPE(f->inode->mode) | (mode & 07777);
	f->inode->ctime = fs_now();
	ramfs_unlock();
	file_put(f);
	return 0;
}

#define X_OK_ 1
#define W_OK_ 2
#define R_OK_ 4

int vfs_faccessat(struct fdtable *t, struct fs_ctx *c, int dirfd, const char *path, int amode,
		  int flags)
{
	if (amode & ~(R_OK_ | W_OK_ | X_OK_))
		return -LX_EINVAL;
	if (flags & ~(LX_AT_SYMLINK_NOFOLLOW | LX_AT_EACCESS | LX_AT_EMPTY_PATH))
		return -LX_EINVAL;
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, dirfd, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, (flags & LX_AT_SYMLINK_NOFOLLOW) ? 0 : W_FOLLOW, &w);
	/* the caller is root: read and write always; execute if any x bit or a directory */
	if (rc == 0 && (amode & X_OK_) && !IS_DIR(w.ino) && !(w.ino->mode & 0111))
		rc = -LX_EACCES;
	path_end(hold);
	return rc;
}

/* ---- cwd ----------------------------------------------------------------------------------- */

/* The path of directory i from root, built backwards into tmp[*at..] (tmp[*at] on entry
 * is the NUL or what follows). ramfs_mon held. */
static long dir_path(struct inode *i, struct inode *root, char *tmp, size_t *at)
{
	if (i->nlink == 0)
		return -LX_ENOENT;
	while (i != root && i->u.dir.parent != i) {
		const struct dentry_rec *d = ramfs_name_of(i->u.dir.parent, i);
		if (!d || *at < (size_t)d->len + 1)
			return d ? -LX_ENAMETOOLONG : -LX_ENOENT;
		*at -= d->len;
		memcpy(tmp + *at, d->name, d->len);
		tmp[--*at] = '/';
		i = i->u.dir.parent;
	}
	return 0;
}

long vfs_realpath(struct fdtable *t, struct fs_ctx *c, const char *path, char *buf, size_t n)
{
	char *tmp = kmalloc(LX_PATH_MAX);
	if (!tmp)
		return -LX_ENOMEM;
	struct file *hold;
	struct inode *start;
	long rc = path_begin(t, c, LX_AT_FDCWD, path, &hold, &start);
	if (rc) {
		kfree(tmp);
		return rc;
	}
	struct walk w;
	size_t at = LX_PATH_MAX - 1;
	tmp[at] = 0;
	rc = walk(c, start, path, W_FOLLOW, &w);
	if (rc == 0 && !w.dot && at > w.lastlen) {	/* the last name, then its directory's */
		at -= w.lastlen;
		memcpy(tmp + at, w.last, w.lastlen);
		tmp[--at] = '/';
	}
	if (rc == 0)
		rc = dir_path(w.dot ? w.ino : w.dir, fs_ctx_root_(c), tmp, &at);
	path_end(hold);
	if (rc == 0) {
		if (at == LX_PATH_MAX - 1)
			tmp[--at] = '/';
		size_t len = LX_PATH_MAX - 1 - at;
		if (len + 1 > n)
			rc = -LX_ENAMETOOLONG;
		else {
			memcpy(buf, tmp + at, len + 1);
			rc = (long)len;
		}
	}
	kfree(tmp);
	return rc;
}

long vfs_getcwd(struct fs_ctx *c, char *buf, size_t n)
{
	char *tmp = kmalloc(LX_PATH_MAX);
	if (!tmp)
		return -LX_ENOMEM;
	size_t at = LX_PATH_MAX - 1;	/* build backwards: tmp[at..] */
	tmp[at] = 0;
	ramfs_lock();
	long rc = dir_path(fs_ctx_cwd_(c), fs_ctx_root_(c), tmp, &at);
	ramfs_unlock();
	if (rc == 0) {
		if (at == LX_PATH_MAX - 1)
			tmp[--at] = '/';
		size_t len = LX_PATH_MAX - at;	/* with the NUL */
		if (len > n)
			rc = -LX_ERANGE;
		else {
			memcpy(buf, tmp + at, len);
			rc = (long)len;
		}
	}
	kfree(tmp);
	return rc;
}

int vfs_chdir(struct fdtable *t, struct fs_ctx *c, const char *path)
{
	struct file *hold;
	struct inode *start;
	int rc = path_begin(t, c, LX_AT_FDCWD, path, &hold, &start);
	if (rc)
		return rc;
	struct walk w;
	rc = walk(c, start, path, W_FOLLOW, &w);
	if (rc == 0 && !IS_DIR(w.ino))
		rc = -LX_ENOTDIR;
	if (rc == 0)
		fs_ctx_set_cwd_(c, w.ino);
	path_end(hold);
	return rc;
}

int vfs_fchdir(struct fdtable *t, struct fs_ctx *c, int fd)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	int rc = 0;
	ramfs_lock();
	if (!IS_DIR(f->inode))
		rc = -LX_ENOTDIR;
	else
		fs_ctx_set_cwd_(c, f->inode);
	ramfs_unlock();
	file_put(f);
	return rc;
}

int vfs_ftruncate(struct fdtable *t, int fd, int64_t len)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	int rc;
	if (len < 0 || acc_of(f) == LX_O_RDONLY || f->ops != &ramfs_file_ops)
		rc = -LX_EINVAL;
	else {
		ramfs_lock();
		rc = !IS_REG(f->inode) ? -LX_EINVAL :
		     f->inode->procfs ? 0 :	/* Linux: nothing happens */
		     ramfs_truncate(f->inode, (uint64_t)len);
		ramfs_unlock();
	}
	file_put(f);
	return rc;
}

/* ---- ioctl, sendfile, poll, pipe2 ---------------------------------------------------------- */

int vfs_ioctl_size(unsigned cmd)
{
	switch (cmd) {
	case LX_TCGETS: case LX_TCSETS: case LX_TCSETSW: case LX_TCSETSF:
		return (int)sizeof(struct lx_termios);
	case LX_TIOCGWINSZ: case LX_TIOCSWINSZ:
		return (int)sizeof(struct lx_winsize);
	case LX_TIOCGPGRP: case LX_TIOCSPGRP: case LX_FIONREAD: case LX_FIONBIO:
		return 4;
	default:
		return -LX_ENOTTY;
	}
}

long vfs_ioctl(struct fdtable *t, int fd, unsigned cmd, void *arg)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	long rc;
	if (cmd == LX_FIONBIO) {	/* every file: the O_NONBLOCK status flag */
		uint32_t old = __atomic_load_n(&f->flags, __ATOMIC_RELAXED), want;
		do	/* relaxed: as F_SETFL */
			want = *(int32_t *)arg ? old | LX_O_NONBLOCK : old & ~(uint32_t)LX_O_NONBLOCK;
		while (!__atomic_compare_exchange_n(&f->flags, &old, want, false, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED));
		rc = 0;
	} else if (cmd == LX_FIONREAD && f->ops == &ramfs_file_ops && IS_REG(f->inode)) {
		/* a regular file: the bytes after the position (Linux's do_vfs_ioctl) */
		ramfs_lock();
		*(int32_t *)arg = (int32_t)(f->inode->size - f->pos);
		ramfs_unlock();
		rc = 0;
	} else {
		rc = f->ops->ioctl ? f->ops->ioctl(f, cmd, arg) : -LX_ENOTTY;
	}
	file_put(f);
	return rc;
}

#define SENDFILE_CHUNK 16384
#define FS_MAX_RW_COUNT 0x7ffff000ull	/* Linux's MAX_RW_COUNT: INT_MAX & PAGE_MASK */

long vfs_sendfile(struct fdtable *t, int out_fd, int in_fd, int64_t *offset, size_t count)
{
	struct file *in = fdtable_file(t, in_fd);
	if (!in)
		return -LX_EBADF;
	struct file *out = fdtable_file(t, out_fd);
	if (!out) {
		file_put(in);
		return -LX_EBADF;
	}
	long rc = 0;
	uint8_t *bounce = NULL;
	if (acc_of(in) == LX_O_WRONLY || acc_of(out) == LX_O_RDONLY)
		rc = -LX_EBADF;
	else if (!in->ops->read || !out->ops->write)
		rc = -LX_EINVAL;
	else if (offset && (*offset < 0 || !seekable(in)))
		rc = *offset < 0 ? -LX_EINVAL : -LX_ESPIPE;
	else if (!(bounce = kmalloc(SENDFILE_CHUNK)))
		rc = -LX_ENOMEM;
	size_t total = 0;
	if (count > FS_MAX_RW_COUNT)
		count = FS_MAX_RW_COUNT;	/* Linux's do_sendfile caps it (MAX_RW_COUNT) */
	while (rc == 0 && total < count) {
		/* a pending signal ends the copy (Linux's splice loop checks it): what was
		 * copied, or -EINTR; /dev/zero to /dev/null never ends by itself */
		if (fs_signal_pending()) {
			if (total == 0)
				rc = -LX_EINTR;
			break;
		}
		size_t want = count - total < SENDFILE_CHUNK ? count - total : SENDFILE_CHUNK;
		uint64_t pos = offset ? (uint64_t)*offset : 0;
		long got = offset ? in->ops->read(in, bounce, want, &pos) : in->ops->read(in, bounce, want, &in->pos);
		if (got <= 0) {
			if (got < 0 && total == 0)
				rc = got;
			break;
		}
		long put = out->ops->write(out, bounce, (size_t)got, &out->pos);
		if (put < 0) {
			if (total == 0)
				rc = put;
			put = 0;
		}
		if (offset)
			*offset += put;
		else if (put < got && in->ops == &ramfs_file_ops) {
			ramfs_lock();	/* give back what was read but not written */
			in->pos -= (uint64_t)(got - put);
			ramfs_unlock();
		}
		total += (size_t)put;
		if (put < got)
			break;
		/* a short read of a pipe or a device is what it had: return it rather than wait
		 * for more, which could take an end of file (a tty's ^D) that the next call must
		 * see (busybox cat copies a terminal with sendfile) */
		if ((size_t)got < want && in->ops != &ramfs_file_ops)
			break;
	}
	kfree(bounce);
	file_put(out);
	file_put(in);
	return rc < 0 ? rc : (long)total;
}

int vfs_poll(struct fdtable *t, struct lx_pollfd *fds, unsigned n, int timeout_ms)
{
	if (n > FS_NOFILE)
		return -LX_EINVAL;
	uint64_t deadline = timeout_ms > 0
		? arch_cycles() + (uint64_t)timeout_ms * (arch_tsc_hz() / 1000) : 0;
	uint64_t gen = fs_wait_begin();
	int rc;
	for (;;) {
		int ready = 0;
		for (unsigned k = 0; k < n; k++) {
			fds[k].revents = 0;
			if (fds[k].fd < 0)
				continue;
			struct file *f = fdtable_file(t, fds[k].fd);
			unsigned r;
			if (!f) {
				r = LX_POLLNVAL;
			} else {
				r = f->ops->poll ? f->ops->poll(f) : (LX_POLLIN | LX_POLLOUT);
				file_put(f);
			}
			r &= (unsigned)(uint16_t)fds[k].events | LX_POLLERR | LX_POLLHUP | LX_POLLNVAL;
			fds[k].revents = (int16_t)r;
			ready += r != 0;
		}
		if (ready || timeout_ms == 0) {
			rc = ready;
			break;
		}
		if (timeout_ms > 0 && arch_cycles() >= deadline) {
			rc = 0;
			break;
		}
		int w = fs_wait_sleep_until(&gen, timeout_ms > 0 ? deadline : 0);
		if (w < 0) {
			rc = w;
			break;
		}
	}
	fs_wait_end();
	return rc;
}

int vfs_pipe2(struct fdtable *t, int fds[2], int flags)
{
	if (flags & ~(LX_O_NONBLOCK | LX_O_CLOEXEC))
		return -LX_EINVAL;
	struct file *rd, *wr;
	int rc = pipe_create(&rd, &wr, flags);
	if (rc)
		return rc;
	bool cx = flags & LX_O_CLOEXEC;
	int a = fdtable_install(t, rd, 0, cx);
	if (a < 0) {
		file_put(wr);
		return a;
	}
	int b = fdtable_install(t, wr, 0, cx);
	if (b < 0) {
		vfs_close(t, a);
		return b;
	}
	fds[0] = a;
	fds[1] = b;
	return 0;
}
