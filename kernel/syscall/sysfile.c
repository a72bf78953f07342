/*
 * sysfile.c - the file system calls' handlers (issue 24; docs/userspace.md "Processes and
 * system calls"): thin wrappers around kernel/fs (vfs.h) that copy user memory in and
 * out through kernel buffers (KBUF-byte chunks for big reads and writes; paths with
 * strncpy_from_user, -ENAMETOOLONG past PATH_MAX; a bad user pointer is -EFAULT).
 *
 * Massalin & Pu 1991 (Synthesis) "Kernel calls", "Input/output": the open file's kernel
 * calls on top of the file system.
 *
 * Portable: a handler works on the descriptor table and fs context it is given (struct
 * sysf_ctx) and reaches user memory only through arch_if.h's copy_from_user /
 * copy_to_user / strncpy_from_user. syscall.c calls them with the calling process's
 * (proc.h); the hosted port's kernel tests (kernel/tests/test_sysfile.c) call them with
 * their own tables and buffers in the process's memory, several threads at once, under
 * ThreadSanitizer. Restart codes (-ERESTARTSYS and kin) for interrupted calls are
 * syscall.c's (kernel_syscall).
 *
 * Shared state: none of its own; what the handlers touch is locked by kernel/fs.
 */
#include "kernel.h"
#include "mm.h"
#include "syscall/linux_abi.h"
#include "syscall/sysfile.h"
#include "fs/vfs.h"
#include <ksync/errors.h>

#define KBUF 4096	/* the bounce buffer of the file calls: one page, chunks of it */
/* A read or write of at most this many bytes goes through a buffer on the kernel stack
 * instead of a KBUF block from the heap (two trips through the heap's lock): the 1-byte
 * read and write rows of the OS-primitives table. */
#define SMALL_BUF 256
#define FDT() (x->fdt)
#define FSC() (x->fs)

/* A user path into a kmalloc'd buffer of LX_PATH_MAX bytes; *out NULL on error:
 * -EFAULT (bad pointer), -ENAMETOOLONG (no NUL within PATH_MAX), -ENOENT ("" unless
 * empty_ok: AT_EMPTY_PATH). */
static long get_path2(uint64_t u, char **out, bool empty_ok)
{
	*out = NULL;
	char *b = kmalloc(LX_PATH_MAX);
	if (!b)
		return -LX_ENOMEM;
	long n = strncpy_from_user(b, (const char *)u, LX_PATH_MAX);
	if (n < 0 || (n == 0 && !empty_ok)) {
		kfree(b);
		return n < 0 ? n : -LX_ENOENT;
	}
	*out = b;
	return 0;
}

long sysf_get_path(uint64_t u, char **out) { return get_path2(u, out, false); }
#define get_path sysf_get_path

/* A user int-sized directory descriptor argument (AT_FDCWD is -100 in an int). */
static int dirfd_of(uint64_t v) { return (int)(int32_t)v; }

/* ---- read and write: copied through a KBUF kernel buffer ----------------------------- */

/* A regular file may be read in more than one chunk; a pipe or a device is read once
 * (a second read could block although data were returned). */
static bool is_regular(struct fdtable *t, int fd)
{
	struct lx_stat st;
	return vfs_fstat(t, fd, &st) == 0 && (st.st_mode & LX_S_IFMT) == LX_S_IFREG;
}

/* read (off < 0) or pread (off >= 0) into user memory. */
long sysf_acc_mode(const struct sysf_ctx *x, int fd);

/* Linux's access_ok before a read or write: a buffer that does not end inside user space
 * is -EFAULT even when nothing would be copied - after the descriptor's own checks
 * (EBADF: none, or not open for that direction), which only this slow path looks up. */
KERNEL_HOT static long range_check(const struct sysf_ctx *x, int fd, uint64_t ubuf, size_t n, int want)
{
	if (ubuf <= USER_VA_END && n <= USER_VA_END - ubuf)
		return 0;
	long acc = sysf_acc_mode(x, fd);
	if (acc < 0)
		return acc;
	if (acc == want)
		return -LX_EBADF;	/* want: the mode that may not (WRONLY for a read) */
	return -LX_EFAULT;
}

KERNEL_HOT static long do_read(const struct sysf_ctx *x, int fd, uint64_t ubuf, size_t n, int64_t off)
{
	long bad = range_check(x, fd, ubuf, n, LX_O_WRONLY);
	if (bad)
		return bad;
	struct fdtable *t = FDT();
	char small[SMALL_BUF];
	char *kb = n <= SMALL_BUF ? small : kmalloc(KBUF);
	if (!kb)
		return -LX_ENOMEM;
	size_t done = 0;
	long rc = 0;
	do {
		size_t c = n - done < KBUF ? n - done : KBUF;	/* (n <= SMALL_BUF: c <= n) */
		rc = off < 0 ? vfs_read(t, fd, kb, c) : vfs_pread(t, fd, kb, c, off + (int64_t)done);
		if (rc <= 0)
			break;
		if (copy_to_user((void *)(ubuf + done), kb, (size_t)rc)) {
			/* the file position goes back to where the copy failed (Linux copies
			 * before it advances) */
			if (off < 0)
				(void)vfs_lseek(t, fd, -rc, LX_SEEK_CUR);
			rc = -LX_EFAULT;
			break;
		}
		done += (size_t)rc;
		if ((size_t)rc < c || (done == c && done < n && !is_regular(t, fd)))
			break;
	} while (done < n);
	if (kb != small)
		kfree(kb);
	return done ? (long)done : rc;
}

/* write (off < 0) or pwrite (off >= 0) from user memory; a write of at most KBUF bytes
 * reaches the file as one call (PIPE_BUF atomicity for pipes). */
KERNEL_HOT static long do_write(const struct sysf_ctx *x, int fd, uint64_t ubuf, size_t n, int64_t off)
{
	long bad = range_check(x, fd, ubuf, n, LX_O_RDONLY);
	if (bad)
		return bad;
	struct fdtable *t = FDT();
	char small[SMALL_BUF];
	char *kb = n <= SMALL_BUF ? small : kmalloc(KBUF);
	if (!kb)
		return -LX_ENOMEM;
	size_t done = 0;
	long rc = 0;
	do {
		size_t c = n - done < KBUF ? n - done : KBUF;	/* (n <= SMALL_BUF: c <= n) */
		if (c && copy_from_user(kb, (const void *)(ubuf + done), c)) {
			rc = -LX_EFAULT;
			break;
		}
		rc = off < 0 ? vfs_write(t, fd, kb, c) : vfs_pwrite(t, fd, kb, c, off + (int64_t)done);
		if (rc <= 0)
			break;
		done += (size_t)rc;
		if ((size_t)rc < c)
			break;	/* a non-blocking pipe took part of it */
	} while (done < n);
	if (kb != small)
		kfree(kb);
	return done ? (long)done : rc;
}

KERNEL_HOT long sysf_read(const struct sysf_ctx *x, const uint64_t a[6])
{
	return do_read(x, (int)a[0], a[1], a[2], -1);
}

KERNEL_HOT long sysf_write(const struct sysf_ctx *x, const uint64_t a[6])
{
	return do_write(x, (int)a[0], a[1], a[2], -1);
}

long sysf_pread64(const struct sysf_ctx *x, const uint64_t a[6])
{
	if ((int64_t)a[3] < 0)
		return -LX_EINVAL;
	return do_read(x, (int)a[0], a[1], a[2], (int64_t)a[3]);
}

long sysf_pwrite64(const struct sysf_ctx *x, const uint64_t a[6])
{
	if ((int64_t)a[3] < 0)
		return -LX_EINVAL;
	return do_write(x, (int)a[0], a[1], a[2], (int64_t)a[3]);
}

static bool fd_valid(const struct sysf_ctx *x, int fd)
{
	struct file *f = fdtable_file(FDT(), fd);
	if (f)
		file_put(f);
	return f != NULL;
}

/* The access mode of an open descriptor (LX_O_RDONLY/WRONLY/RDWR), or -EBADF. */
long sysf_acc_mode(const struct sysf_ctx *x, int fd)
{
	long fl = vfs_fcntl(FDT(), fd, LX_F_GETFL, 0);
	return fl < 0 ? fl : (fl & LX_O_ACCMODE);
}

#define UIO_MAXIOV 1024
#define MAX_RW_COUNT 0x7ffff000ull	/* INT_MAX & PAGE_MASK: Linux's cap of one transfer */

/* Linux's import_iovec: the whole vector is read first (-EFAULT), at most UIO_MAXIOV
 * entries and each length below 2^63 (-EINVAL), each range inside user space (-EFAULT),
 * the lengths cut so that the total stays at most MAX_RW_COUNT. *out: a kmalloc'ed
 * copy (NULL for no entries). */
static long iov_import(uint64_t uvec, uint64_t cnt, struct lx_iovec **out)
{
	*out = NULL;
	if (cnt > UIO_MAXIOV)
		return -LX_EINVAL;
	if (!cnt)
		return 0;
	struct lx_iovec *v = kmalloc(cnt * sizeof *v);
	if (!v)
		return -LX_ENOMEM;
	if (copy_from_user(v, (const void *)uvec, cnt * sizeof *v)) {
		kfree(v);
		return -LX_EFAULT;
	}
	uint64_t total = 0;
	for (uint64_t i = 0; i < cnt; i++) {
		if ((int64_t)v[i].iov_len < 0) {
			kfree(v);
			return -LX_EINVAL;
		}
		if (v[i].iov_len > MAX_RW_COUNT - total)
			v[i].iov_len = MAX_RW_COUNT - total;
		if (v[i].iov_base > USER_VA_END || v[i].iov_len > USER_VA_END - v[i].iov_base) {
			kfree(v);
			return -LX_EFAULT;
		}
		total += v[i].iov_len;
	}
	*out = v;
	return 0;
}

/* writev: the vectors are gathered into one kernel buffer and written by one call per
 * KBUF bytes, so that a writev of at most PIPE_BUF (4096) bytes reaches the file as one
 * write, as Linux makes it for a pipe or a terminal (two processes' lines never
 * interleave; musl's stdio flushes a line as two vectors). */
long sysf_writev(const struct sysf_ctx *x, const uint64_t a[6])
{
	int fd = (int)a[0];
	struct fdtable *t = FDT();
	long acc = sysf_acc_mode(x, fd);
	if (acc < 0)
		return acc;
	if (acc == LX_O_RDONLY)
		return -LX_EBADF;
	struct lx_iovec *v;
	long rc = iov_import(a[1], a[2], &v);
	if (rc)
		return rc;
	char *kb = kmalloc(KBUF);
	if (!kb) {
		kfree(v);
		return -LX_ENOMEM;
	}
	long total = 0;
	size_t fill = 0;
	bool short_write = false;
	for (uint64_t i = 0; i < a[2] && !rc && !short_write; i++) {
		struct lx_iovec iov = v[i];
		for (uint64_t off = 0; off < iov.iov_len;) {
			size_t c = iov.iov_len - off < KBUF - fill ? iov.iov_len - off : KBUF - fill;
			if (copy_from_user(kb + fill, (const void *)(iov.iov_base + off), c)) {
				rc = -LX_EFAULT;
				break;
			}
			fill += c;
			off += c;
			if (fill == KBUF) {
				long w = vfs_write(t, fd, kb, fill);
				if (w < 0) {
					rc = w;
					fill = 0;
					break;
				}
				total += w;
				short_write = (size_t)w < fill;
				fill = 0;
				if (short_write)
					break;
			}
		}
	}
	if (!short_write && (fill || (!total && !rc)) && (!rc || rc == -LX_EFAULT)) {
		/* what was gathered before a fault (or nothing: a 0-byte write checks fd) */
		long w = vfs_write(t, fd, kb, fill);
		if (w < 0 && !rc)
			rc = w;
		else if (w > 0)
			total += w;
	}
	kfree(kb);
	kfree(v);
	return total ? total : rc;
}

long sysf_readv(const struct sysf_ctx *x, const uint64_t a[6])
{
	int fd = (int)a[0];
	long acc = sysf_acc_mode(x, fd);
	if (acc < 0)
		return acc;
	if (acc == LX_O_WRONLY)
		return -LX_EBADF;	/* before the vector is looked at, as Linux's vfs_readv */
	struct lx_iovec *v;
	long rc = iov_import(a[1], a[2], &v);
	if (rc)
		return rc;
	long total = 0;
	if (a[2] && !is_regular(FDT(), fd)) {
		/* a pipe or device: one read of the whole vector's length (as one read(2) of
		 * it: at most KBUF bytes; a second read could block with data in hand), then
		 * scattered over the segments */
		uint64_t want = 0;
		for (uint64_t i = 0; i < a[2]; i++)
			want += v[i].iov_len;
		char *kb = kmalloc(KBUF);
		if (!kb) {
			kfree(v);
			return -LX_ENOMEM;
		}
		long got = vfs_read(FDT(), fd, kb, want < KBUF ? want : KBUF);
		rc = got < 0 ? got : 0;
		for (uint64_t i = 0; i < a[2] && total < got; i++) {
			size_t c = v[i].iov_len < (uint64_t)(got - total) ? v[i].iov_len : (size_t)(got - total);
			if (copy_to_user((void *)v[i].iov_base, kb + total, c)) {
				rc = -LX_EFAULT;	/* what was copied before counts */
				break;
			}
			total += (long)c;
		}
		kfree(kb);
		kfree(v);
		return total ? total : rc;
	}
	for (uint64_t i = 0; i < a[2]; i++) {
		if (!v[i].iov_len)
			continue;
		long got = do_read(x, fd, v[i].iov_base, v[i].iov_len, -1);
		if (got < 0) {
			rc = got;
			break;
		}
		total += got;
		if ((uint64_t)got < v[i].iov_len)
			break;	/* the end of the file */
	}
	kfree(v);
	return total ? total : rc;
}

long sysf_sendfile(const struct sysf_ctx *x, const uint64_t a[6])
{
	int64_t off;
	if (a[2] && copy_from_user(&off, (const void *)a[2], sizeof off))
		return -LX_EFAULT;
	long rc = vfs_sendfile(FDT(), (int)a[0], (int)a[1], a[2] ? &off : NULL, a[3]);
	if (a[2] && copy_to_user((void *)a[2], &off, sizeof off))
		return -LX_EFAULT;
	return rc;
}

/* ---- descriptors -------------------------------------------------------------------- */
long sysf_close(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_close(FDT(), (int)a[0]);
}

long sysf_dup(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_dup(FDT(), (int)a[0]);
}

long sysf_dup2(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_dup2(FDT(), (int)a[0], (int)a[1]);
}

long sysf_dup3(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_dup3(FDT(), (int)a[0], (int)a[1], (int)a[2]);
}

long sysf_fcntl(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_fcntl(FDT(), (int)a[0], (int)a[1], a[2]);
}

/* ioctl: vfs_ioctl_size says how much of the argument to copy in and back out. The
 * "get" commands are copied out only (a file that does not know them - a pipe asked
 * TCGETS - answers ENOTTY before the pointer is looked at, as on Linux). */
static bool ioctl_out_only(unsigned cmd)
{
	return cmd == LX_TCGETS || cmd == LX_TIOCGWINSZ || cmd == LX_TIOCGPGRP ||
	       cmd == LX_FIONREAD;
}

long sysf_ioctl(const struct sysf_ctx *x, const uint64_t a[6])
{
	int fd = (int)a[0];
	unsigned cmd = (unsigned)a[1];
	if (!fd_valid(x, fd))
		return -LX_EBADF;
	int size = vfs_ioctl_size(cmd);
	if (size < 0)
		return size;	/* no file knows it: -ENOTTY */
	if (size == 0)
		return vfs_ioctl(FDT(), fd, cmd, (void *)(uintptr_t)a[2]);
	uint8_t kb[256];
	if ((size_t)size > sizeof kb)
		return -LX_EINVAL;
	memset(kb, 0, (size_t)size);
	if (!ioctl_out_only(cmd) && copy_from_user(kb, (const void *)a[2], (size_t)size))
		return -LX_EFAULT;
	long rc = vfs_ioctl(FDT(), fd, cmd, kb);
	if (rc >= 0 && ioctl_out_only(cmd) && copy_to_user((void *)a[2], kb, (size_t)size))
		return -LX_EFAULT;
	return rc;
}

long sysf_lseek(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_lseek(FDT(), (int)a[0], (int64_t)a[1], (int)a[2]);
}

long sysf_ftruncate(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_ftruncate(FDT(), (int)a[0], (int64_t)a[1]);
}

long sysf_pipe2(const struct sysf_ctx *x, const uint64_t a[6])
{
	int fds[2];
	long rc = vfs_pipe2(FDT(), fds, (int)a[1]);
	if (rc)
		return rc;
	if (copy_to_user((void *)a[0], fds, sizeof fds)) {
		vfs_close(FDT(), fds[0]);
		vfs_close(FDT(), fds[1]);
		return -LX_EFAULT;
	}
	return 0;
}

long sysf_pipe(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { a[0], 0 };
	return sysf_pipe2(x, b);
}

long sysf_do_poll(const struct sysf_ctx *x, uint64_t ufds, uint64_t n, int timeout_ms)
{
	if (n > FS_NOFILE)
		return -LX_EINVAL;
	struct lx_pollfd *k = kmalloc(n ? n * sizeof *k : 1);
	if (!k)
		return -LX_ENOMEM;
	long rc = 0;
	if (n && copy_from_user(k, (const void *)ufds, n * sizeof *k))
		rc = -LX_EFAULT;
	if (!rc)
		rc = vfs_poll(FDT(), k, (unsigned)n, timeout_ms);
	if (rc >= 0 && n && copy_to_user((void *)ufds, k, n * sizeof *k))
		rc = -LX_EFAULT;
	kfree(k);
	return rc;
}

long sysf_poll(const struct sysf_ctx *x, const uint64_t a[6])
{
	long rc = sysf_do_poll(x, a[0], a[1], (int)a[2]);
	return rc == -LX_EINTR ? -LX_ERESTARTNOHAND : rc;	/* EINTR after a handler */
}

/* ---- names ---------------------------------------------------------------------------- */
long sysf_openat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *path;
	long rc = get_path(a[1], &path);
	if (rc)
		return rc;
	rc = vfs_openat(FDT(), FSC(), dirfd_of(a[0]), path, (int)a[2], (unsigned)a[3]);
	kfree(path);
	return rc;
}

long sysf_open(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], a[1], a[2] };
	return sysf_openat(x, b);
}

static long stat_at(const struct sysf_ctx *x, int dirfd, uint64_t upath, uint64_t ust, int flags)
{
	char *path;
	long rc = get_path2(upath, &path, flags & LX_AT_EMPTY_PATH);
	if (rc)
		return rc;
	struct lx_stat st;
	rc = vfs_fstatat(FDT(), FSC(), dirfd, path, &st, flags);
	kfree(path);
	if (!rc && copy_to_user((void *)ust, &st, sizeof st))
		rc = -LX_EFAULT;
	return rc;
}

long sysf_newfstatat(const struct sysf_ctx *x, const uint64_t a[6])
{
	return stat_at(x, dirfd_of(a[0]), a[1], a[2], (int)a[3]);
}

long sysf_stat(const struct sysf_ctx *x, const uint64_t a[6])
{
	return stat_at(x, LX_AT_FDCWD, a[0], a[1], 0);
}

long sysf_lstat(const struct sysf_ctx *x, const uint64_t a[6])
{
	return stat_at(x, LX_AT_FDCWD, a[0], a[1], LX_AT_SYMLINK_NOFOLLOW);
}

long sysf_fstat(const struct sysf_ctx *x, const uint64_t a[6])
{
	struct lx_stat st;
	long rc = vfs_fstat(FDT(), (int)a[0], &st);
	if (!rc && copy_to_user((void *)a[1], &st, sizeof st))
		rc = -LX_EFAULT;
	return rc;
}

long sysf_getdents64(const struct sysf_ctx *x, const uint64_t a[6])
{
	size_t n = a[2] < KBUF ? a[2] : KBUF;
	char *kb = kmalloc(KBUF);
	if (!kb)
		return -LX_ENOMEM;
	long rc = vfs_getdents64(FDT(), (int)a[0], kb, n);
	if (rc > 0 && copy_to_user((void *)a[1], kb, (size_t)rc))
		rc = -LX_EFAULT;
	kfree(kb);
	return rc;
}

long sysf_mkdirat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *path;
	long rc = get_path(a[1], &path);
	if (rc)
		return rc;
	rc = vfs_mkdirat(FDT(), FSC(), dirfd_of(a[0]), path, (unsigned)a[2]);
	kfree(path);
	return rc;
}

long sysf_mkdir(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], a[1] };
	return sysf_mkdirat(x, b);
}

long sysf_unlinkat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *path;
	long rc = get_path(a[1], &path);
	if (rc)
		return rc;
	rc = vfs_unlinkat(FDT(), FSC(), dirfd_of(a[0]), path, (int)a[2]);
	kfree(path);
	return rc;
}

long sysf_unlink(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], 0 };
	return sysf_unlinkat(x, b);
}

long sysf_rmdir(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], LX_AT_REMOVEDIR };
	return sysf_unlinkat(x, b);
}

/* Two user paths (rename, link, symlink's target and name). */
static long get_two(uint64_t u1, uint64_t u2, char **p1, char **p2)
{
	long rc = get_path(u1, p1);
	if (rc)
		return rc;
	rc = get_path(u2, p2);
	if (rc) {
		kfree(*p1);
		*p1 = NULL;
	}
	return rc;
}

long sysf_renameat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *o, *n;
	long rc = get_two(a[1], a[3], &o, &n);
	if (rc)
		return rc;
	rc = vfs_renameat(FDT(), FSC(), dirfd_of(a[0]), o, dirfd_of(a[2]), n);
	kfree(o);
	kfree(n);
	return rc;
}

long sysf_rename(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], (uint64_t)(int64_t)LX_AT_FDCWD,
			  a[1] };
	return sysf_renameat(x, b);
}

long sysf_linkat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *o, *n;
	long rc = get_two(a[1], a[3], &o, &n);
	if (rc)
		return rc;
	rc = vfs_linkat(FDT(), FSC(), dirfd_of(a[0]), o, dirfd_of(a[2]), n, (int)a[4]);
	kfree(o);
	kfree(n);
	return rc;
}

long sysf_link(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], (uint64_t)(int64_t)LX_AT_FDCWD,
			  a[1], 0 };
	return sysf_linkat(x, b);
}

long sysf_symlinkat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *target, *path;
	long rc = get_two(a[0], a[2], &target, &path);
	if (rc)
		return rc;
	rc = vfs_symlinkat(FDT(), FSC(), target, dirfd_of(a[1]), path);
	kfree(target);
	kfree(path);
	return rc;
}

long sysf_symlink(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { a[0], (uint64_t)(int64_t)LX_AT_FDCWD, a[1] };
	return sysf_symlinkat(x, b);
}

long sysf_readlinkat(const struct sysf_ctx *x, const uint64_t a[6])
{
	if ((int64_t)a[3] <= 0)
		return -LX_EINVAL;
	char *path;
	long rc = get_path(a[1], &path);
	if (rc)
		return rc;
	size_t n = a[3] < LX_PATH_MAX ? a[3] : LX_PATH_MAX;
	char *kb = kmalloc(LX_PATH_MAX);
	rc = kb ? vfs_readlinkat(FDT(), FSC(), dirfd_of(a[0]), path, kb, n) : -LX_ENOMEM;
	if (rc > 0 && copy_to_user((void *)a[2], kb, (size_t)rc))
		rc = -LX_EFAULT;
	kfree(kb);
	kfree(path);
	return rc;
}

long sysf_readlink(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], a[1], a[2] };
	return sysf_readlinkat(x, b);
}

long sysf_fchmodat(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *path;
	long rc = get_path(a[1], &path);
	if (rc)
		return rc;
	rc = vfs_fchmodat(FDT(), FSC(), dirfd_of(a[0]), path, (unsigned)a[2]);
	kfree(path);
	return rc;
}

/* utimensat (touch): a NULL path is futimens on the dirfd (Linux's do_utimes) */
long sysf_utimensat(const struct sysf_ctx *x, const uint64_t a[6])
{
	struct lx_timespec ts[2];
	if (a[2] && copy_from_user(ts, (const void *)a[2], sizeof ts))
		return -LX_EFAULT;
	char *path = NULL;
	if (a[1]) {
		long rc = get_path(a[1], &path);
		if (rc)
			return rc;
	}
	long rc = vfs_utimensat(FDT(), FSC(), dirfd_of(a[0]), path, a[2] ? ts : NULL, (int)a[3]);
	kfree(path);
	return rc;
}

long sysf_chmod(const struct sysf_ctx *x, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)(int64_t)LX_AT_FDCWD, a[0], a[1] };
	return sysf_fchmodat(x, b);
}

long sysf_fchmod(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_fchmod(FDT(), (int)a[0], (unsigned)a[1]);
}

static long faccess(const struct sysf_ctx *x, int dirfd, uint64_t upath, int amode, int flags)
{
	char *path;
	long rc = get_path2(upath, &path, flags & LX_AT_EMPTY_PATH);
	if (rc)
		return rc;
	rc = vfs_faccessat(FDT(), FSC(), dirfd, path, amode, flags);
	kfree(path);
	return rc;
}

long sysf_faccessat2(const struct sysf_ctx *x, const uint64_t a[6])
{
	return faccess(x, dirfd_of(a[0]), a[1], (int)a[2], (int)a[3]);
}

long sysf_faccessat(const struct sysf_ctx *x, const uint64_t a[6])
{
	return faccess(x, dirfd_of(a[0]), a[1], (int)a[2], 0);
}

long sysf_access(const struct sysf_ctx *x, const uint64_t a[6])
{
	return faccess(x, LX_AT_FDCWD, a[0], (int)a[1], 0);
}

long sysf_getcwd(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *kb = kmalloc(LX_PATH_MAX);
	if (!kb)
		return -LX_ENOMEM;
	long rc = vfs_getcwd(FSC(), kb, a[1] < LX_PATH_MAX ? a[1] : LX_PATH_MAX);
	if (rc > 0 && copy_to_user((void *)a[0], kb, (size_t)rc))
		rc = -LX_EFAULT;
	kfree(kb);
	return rc;
}

long sysf_chdir(const struct sysf_ctx *x, const uint64_t a[6])
{
	char *path;
	long rc = get_path(a[0], &path);
	if (rc)
		return rc;
	rc = vfs_chdir(FDT(), FSC(), path);
	kfree(path);
	return rc;
}

long sysf_fchdir(const struct sysf_ctx *x, const uint64_t a[6])
{
	return vfs_fchdir(FDT(), FSC(), (int)a[0]);
}

long sysf_umask(const struct sysf_ctx *x, const uint64_t a[6])
{
	return fs_umask(FSC(), (unsigned)a[0] & 0777);
}

