/*
 * test_fs.c - the file layer of issue 24 (kernel/fs: vfs.h): the path walk, every call's
 * success and error paths with Linux's errno, getdents over a large directory in small
 * buffers, an unlinked open file, descriptor-table clones, pipes (blocking, non-blocking,
 * a checksummed two-thread stream, PIPE_BUF atomicity with several writers, interrupted
 * waits), the devices and the tty's line discipline, and the initramfs (a good archive and
 * every kind of corruption).
 *
 * Papers: Massalin & Pu 1991 "Input and output" (the tty as a state machine fed by the
 * terminal driver, the file system's read/write/seek level); Hartman & Ousterhout
 * section 2 (the monitors and condition variables the pipes block on).
 *
 * The file system is one per kernel and outlives each case: every case works under its
 * own directory "/t_<case>" and checks that the inodes it made are freed (fs_live_inodes
 * back where it started). Cases run threads, so each brackets itself with sched_start /
 * sched_stop; the thread cases run under both schedulers. In the hosted port they also
 * run under ThreadSanitizer (tests/test_hosted_kernel.py). Sizes are small: the default
 * suite runs them at -smp 1, 2 and 4 in three builds.
 *
 * Shared state of the thread cases: the pipe's fds live in the shared descriptor table
 * (its monitor), the counters below are atomics, results are read after thread_join.
 */
#include "kernel.h"
#include "thread.h"
#include "monitor.h"
#include "lockstat.h"
#include "fs/fs_internal.h"	/* -Ikernel: kernel/fs/ */
#include <ksync/ktest.h>
#include <ksync/errors.h>

static uint64_t ms_ticks(uint64_t ms) { return arch_tsc_hz() / 1000 * ms; }
#define WAIT_UNTIL(cond, ms)                                                          \
	({                                                                            \
		uint64_t w0_ = arch_cycles(), lim_ = ms_ticks(ms);                    \
		while (!(cond) && arch_cycles() - w0_ < lim_)                         \
			thread_yield();                                               \
		(bool)(cond);                                                         \
	})
static const char *const scheds[] = { "lockfree", "locked" };
#define FOR_EACH_SCHED(name) for (unsigned si_ = 0; si_ < 2 && ((name) = scheds[si_], 1); si_++)

/* The stress scale: `fs_scale=N` on the command line multiplies the thread cases' sizes
 * (make stress: tests/test_stress.py); 1 in make test. */
static unsigned fs_scale(void)
{
	char buf[16];
	return cmdline_uint(cmdline_get("fs_scale", buf, sizeof buf), 1);
}

/* One lock class's counts since the last lockstat_reset, as a diagnostic (the classes
 * are the file layer's: kernel/fs/vfs.h lists them). */
static void class_diag(struct ktest_ctx *kt, const char *tag, const char *name)
{
	const struct lock_class *c = lockstat_find(name);
	if (!c || lockstat_mode() == LOCKSTAT_OFF)
		return;
	static struct lockstat_snap sn;	/* one case at a time */
	lockstat_read(c, &sn);
	kt_diag(kt, "%s: class %s: hits %lu misses %lu sleeps %lu", tag, name,
		(unsigned long)sn.hits, (unsigned long)sn.misses, (unsigned long)sn.sleeps);
}

/* A case's world: a descriptor table and a context, in its own directory. */
struct world {
	struct fdtable *t;
	struct fs_ctx *c;
	uint64_t inodes0;
};

static bool world_open(struct ktest_ctx *kt, struct world *w, const char *dir)
{
	if (fs_init() != 0) {
		ktest_fail_(kt, __FILE__, __LINE__, "fs_init() == 0");
		return false;
	}
	w->t = fdtable_new();
	w->c = fs_ctx_new();
	w->inodes0 = fs_live_inodes();
	if (!w->t || !w->c) {
		ktest_fail_(kt, __FILE__, __LINE__, "fdtable_new/fs_ctx_new");
		return false;
	}
	if (vfs_mkdirat(w->t, w->c, LX_AT_FDCWD, dir, 0755) != 0 ||
	    vfs_chdir(w->t, w->c, dir) != 0) {
		ktest_fail_(kt, __FILE__, __LINE__, "mkdir/chdir of the case's directory");
		return false;
	}
	return true;
}

/* Remove everything under the cwd (recursively), go back to "/", rmdir the case's
 * directory, drop the world; the inodes made must all be gone. */
static void rm_tree(struct world *w, const char *path);

static void world_close(struct ktest_ctx *kt, struct world *w, const char *dir)
{
	KT_EXPECT_EQ(vfs_chdir(w->t, w->c, "/"), 0);
	rm_tree(w, dir);
	fdtable_put(w->t);
	fs_ctx_put(w->c);
	KT_EXPECT_EQ(fs_live_inodes(), w->inodes0);
}

static void rm_tree(struct world *w, const char *path)
{
	struct lx_stat st;
	if (vfs_fstatat(w->t, w->c, LX_AT_FDCWD, path, &st, LX_AT_SYMLINK_NOFOLLOW) != 0)
		return;
	if ((st.st_mode & LX_S_IFMT) != LX_S_IFDIR) {
		vfs_unlinkat(w->t, w->c, LX_AT_FDCWD, path, 0);
		return;
	}
	for (;;) {
		int fd = vfs_openat(w->t, w->c, LX_AT_FDCWD, path, LX_O_RDONLY | LX_O_DIRECTORY, 0);
		if (fd < 0)
			return;
		static char buf[1024];	/* one case at a time: not shared */
		char child[600];
		bool found = false;
		long n;
		while (!found && (n = vfs_getdents64(w->t, fd, buf, sizeof buf)) > 0) {
			for (long o = 0; o < n;) {
				struct lx_dirent64 *d = (struct lx_dirent64 *)(void *)(buf + o);
				o += d->d_reclen;
				if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
					continue;
				ksnprintf(child, sizeof child, "%s/%s", path, d->d_name);
				found = true;
				break;
			}
		}
		vfs_close(w->t, fd);
		if (!found)
			break;
		rm_tree(w, child);
	}
	vfs_unlinkat(w->t, w->c, LX_AT_FDCWD, path, LX_AT_REMOVEDIR);
}

#define T(w) (w).t
#define C(w) (w).c
#define AT LX_AT_FDCWD

static int put_file(struct world *w, const char *path, const char *text)
{
	int fd = vfs_openat(w->t, w->c, AT, path, LX_O_WRONLY | LX_O_CREAT | LX_O_TRUNC, 0644);
	if (fd < 0)
		return fd;
	long n = vfs_write(w->t, fd, text, strlen(text));
	vfs_close(w->t, fd);
	return n < 0 ? (int)n : 0;
}

static uint32_t mode_of(struct world *w, const char *path, int flags)
{
	struct lx_stat st;
	int rc = vfs_fstatat(w->t, w->c, AT, path, &st, flags);
	return rc ? 0 : st.st_mode;
}

/* ---- the path walk --------------------------------------------------------------------------- */

KTEST(fs_walk_paths_symlinks_errors)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_walk"))
		goto out;
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "a", 0755), 0);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "a/b", 0755), 0);
	KT_EXPECT_EQ(put_file(&w, "a/b/f", "hello"), 0);
	struct lx_stat st, st2;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/b/f", &st, 0), 0);
	KT_EXPECT_EQ(st.st_size, 5);
	KT_EXPECT_EQ(st.st_mode, LX_S_IFREG | 0644);	/* umask 022 */
	/* the same file by every spelling */
	static const char *const same[] = { "/t_walk/a/b/f", "./a/./b/f", "a/../a/b/f",
					     "//t_walk///a/b//f", "/../../t_walk/a/b/f",
					     "a/b/../../a/b/f" };
	for (unsigned i = 0; i < ARRAY_SIZE(same); i++) {
		KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, same[i], &st2, 0), 0);
		KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	}
	/* ".." of "/" is "/" */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/..", &st2, 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/", &st, 0), 0);
	KT_EXPECT_EQ(st.st_ino, st2.st_ino);
	/* errors */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "", &st, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "nope", &st, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "nope/x", &st, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/b/f/x", &st, 0), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/b/f/", &st, 0), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/b/", &st, 0), 0);
	char longname[300];
	memset(longname, 'n', 256);
	longname[256] = 0;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, longname, &st, 0), -LX_ENAMETOOLONG);
	longname[255] = 0;	/* 255 is allowed: just missing */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, longname, &st, 0), -LX_ENOENT);
	char *longpath = kmalloc(LX_PATH_MAX + 8);
	KT_ASSERT(longpath != NULL);
	for (unsigned i = 0; i < LX_PATH_MAX; i += 2) {
		longpath[i] = 'x';
		longpath[i + 1] = '/';
	}
	longpath[LX_PATH_MAX] = 0;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, longpath, &st, 0), -LX_ENAMETOOLONG);
	kfree(longpath);
	/* symbolic links: relative, absolute, in the middle, at the end, dangling */
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "b/f", AT, "a/rel"), 0);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "/t_walk/a/b", AT, "abs"), 0);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "missing", AT, "dangling"), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/rel", &st2, 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/b/f", &st, 0), 0);
	KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "abs/f", &st2, 0), 0);
	KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "abs/../b/f", &st2, 0), 0);	/* ".." of a/b */
	KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	KT_EXPECT_EQ(mode_of(&w, "a/rel", LX_AT_SYMLINK_NOFOLLOW) & LX_S_IFMT, LX_S_IFLNK);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "dangling", &st, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "dangling", &st, LX_AT_SYMLINK_NOFOLLOW), 0);
	KT_EXPECT_EQ(st.st_size, 7);
	/* a loop, and a chain of exactly FS_SYMLOOP_MAX links (allowed) vs one more */
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "loop2", AT, "loop1"), 0);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "loop1", AT, "loop2"), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "loop1", &st, 0), -LX_ELOOP);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "loop1/x", &st, 0), -LX_ELOOP);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "loop1", LX_O_RDONLY, 0), -LX_ELOOP);
	char name[16], target[16];
	for (unsigned i = 1; i <= FS_SYMLOOP_MAX + 1; i++) {
		ksnprintf(name, sizeof name, "c%u", i);
		if (i == 1)
			ksnprintf(target, sizeof target, "a/b/f");
		else
			ksnprintf(target, sizeof target, "c%u", i - 1);
		KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), target, AT, name), 0);
	}
	ksnprintf(name, sizeof name, "c%u", FS_SYMLOOP_MAX);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, name, &st, 0), 0);
	ksnprintf(name, sizeof name, "c%u", FS_SYMLOOP_MAX + 1);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, name, &st, 0), -LX_ELOOP);
	/* dirfd: relative to an open directory; a file as dirfd; a closed one */
	int dfd = vfs_openat(T(w), C(w), AT, "a", LX_O_RDONLY | LX_O_DIRECTORY, 0);
	KT_EXPECT(dfd >= 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), dfd, "b/f", &st2, 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a/b/f", &st, 0), 0);
	KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	int ffd = vfs_openat(T(w), C(w), dfd, "b/f", LX_O_RDONLY, 0);
	KT_EXPECT(ffd >= 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), ffd, "x", &st, 0), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), ffd, "", &st, LX_AT_EMPTY_PATH), 0);
	KT_EXPECT_EQ(st.st_ino, st2.st_ino);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), 77, "x", &st, 0), -LX_EBADF);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), dfd, "/t_walk/a/b/f", &st, 0), 0);	/* absolute: dirfd unused */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a", &st, 0x4000), -LX_EINVAL);
	vfs_close(T(w), ffd);
	vfs_close(T(w), dfd);
	world_close(kt, &w, "/t_walk");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- open, read, write, seek --------------------------------------------------------------- */

KTEST(fs_open_flags_and_errors)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_open"))
		goto out;
	fs_umask(C(w), 027);
	int fd = vfs_openat(T(w), C(w), AT, "f", LX_O_RDWR | LX_O_CREAT | LX_O_EXCL, 0777);
	KT_EXPECT(fd >= 0);
	KT_EXPECT_EQ(mode_of(&w, "f", 0), LX_S_IFREG | 0750);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "f", LX_O_RDWR | LX_O_CREAT | LX_O_EXCL, 0), -LX_EEXIST);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "missing", LX_O_RDONLY, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "nodir/x", LX_O_RDWR | LX_O_CREAT, 0644), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "new/", LX_O_RDWR | LX_O_CREAT, 0644), -LX_EISDIR);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY | LX_O_DIRECTORY, 0), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, ".", LX_O_WRONLY, 0), -LX_EISDIR);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, ".", LX_O_RDONLY | LX_O_CREAT, 0644), -LX_EISDIR);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "f", AT, "lf"), 0);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "lf", LX_O_RDONLY | LX_O_NOFOLLOW, 0), -LX_ELOOP);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "lf", LX_O_RDWR | LX_O_CREAT | LX_O_EXCL, 0), -LX_EEXIST);
	/* O_CREAT through a dangling link creates its target */
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "made", AT, "dl"), 0);
	int m = vfs_openat(T(w), C(w), AT, "dl", LX_O_WRONLY | LX_O_CREAT, 0600);
	KT_EXPECT(m >= 0);
	vfs_close(T(w), m);
	KT_EXPECT_EQ(mode_of(&w, "made", 0), LX_S_IFREG | 0600);
	/* access modes */
	KT_EXPECT_EQ(vfs_write(T(w), fd, "0123456789", 10), 10);
	int ro = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0);
	int wo = vfs_openat(T(w), C(w), AT, "f", LX_O_WRONLY | LX_O_APPEND, 0);
	KT_EXPECT(ro >= 0 && wo >= 0);
	char buf[32];
	KT_EXPECT_EQ(vfs_write(T(w), ro, "x", 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_read(T(w), wo, buf, 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_write(T(w), wo, "AB", 2), 2);		/* O_APPEND: at the end */
	KT_EXPECT_EQ(vfs_read(T(w), ro, buf, sizeof buf), 12);
	KT_EXPECT(memcmp(buf, "0123456789AB", 12) == 0);
	KT_EXPECT_EQ(vfs_read(T(w), ro, buf, sizeof buf), 0);	/* EOF */
	KT_EXPECT_EQ(vfs_fcntl(T(w), wo, LX_F_GETFL, 0), LX_O_WRONLY | LX_O_APPEND | LX_O_LARGEFILE);
	/* O_TRUNC */
	int tr = vfs_openat(T(w), C(w), AT, "f", LX_O_WRONLY | LX_O_TRUNC, 0);
	KT_EXPECT(tr >= 0);
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstat(T(w), fd, &st), 0);
	KT_EXPECT_EQ(st.st_size, 0);
	/* a directory */
	int d = vfs_openat(T(w), C(w), AT, ".", LX_O_RDONLY, 0);
	KT_EXPECT(d >= 0);
	KT_EXPECT_EQ(vfs_read(T(w), d, buf, 4), -LX_EISDIR);
	KT_EXPECT_EQ(vfs_getdents64(T(w), fd, buf, sizeof buf), -LX_ENOTDIR);
	/* O_CLOEXEC */
	int cx = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY | LX_O_CLOEXEC, 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), cx, LX_F_GETFD, 0), LX_FD_CLOEXEC);
	KT_EXPECT_EQ(vfs_fcntl(T(w), ro, LX_F_GETFD, 0), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), cx, LX_F_GETFL, 0), LX_O_RDONLY | LX_O_LARGEFILE);
	/* EBADF */
	int fds[] = { fd, ro, wo, tr, d, cx };
	for (unsigned i = 0; i < ARRAY_SIZE(fds); i++)
		KT_EXPECT_EQ(vfs_close(T(w), fds[i]), 0);
	KT_EXPECT_EQ(vfs_close(T(w), fd), -LX_EBADF);
	KT_EXPECT_EQ(vfs_close(T(w), -1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_close(T(w), FS_NOFILE), -LX_EBADF);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_write(T(w), fd, buf, 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_fstat(T(w), fd, &st), -LX_EBADF);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_SET), -LX_EBADF);
	KT_EXPECT_EQ(fdtable_count(T(w)), 0u);
	world_close(kt, &w, "/t_open");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

static uint8_t pat(uint64_t i) { return (uint8_t)(i * 131 + (i >> 9) * 7 + 3); }

KTEST(fs_read_write_seek_holes_truncate)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_rw"))
		goto out;
	uint64_t pages0 = fs_data_pages();
	enum { N = 3 * 4096 + 123 };
	uint8_t *big = kmalloc(N), *back = kmalloc(N);
	KT_ASSERT(big && back);
	for (unsigned i = 0; i < N; i++)
		big[i] = pat(i);
	int fd = vfs_openat(T(w), C(w), AT, "f", LX_O_RDWR | LX_O_CREAT, 0644);
	KT_EXPECT(fd >= 0);
	KT_EXPECT_EQ(vfs_write(T(w), fd, big, N), N);
	KT_EXPECT_EQ(fs_data_pages() - pages0, 4u);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_CUR), N);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_SET), 0);
	/* read back in odd pieces across page boundaries */
	size_t got = 0;
	while (got < N) {
		long r = vfs_read(T(w), fd, back + got, 1000);
		KT_ASSERT(r > 0);
		got += (size_t)r;
	}
	KT_EXPECT(memcmp(big, back, N) == 0);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, -10, LX_SEEK_END), N - 10);
	KT_EXPECT_EQ(vfs_read(T(w), fd, back, 100), 10);
	KT_EXPECT(memcmp(back, big + N - 10, 10) == 0);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, -1, LX_SEEK_SET), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, -(int64_t)N - 1, LX_SEEK_END), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, 7), -LX_EINVAL);
	/* pread/pwrite leave the offset alone */
	int64_t here = vfs_lseek(T(w), fd, 5, LX_SEEK_SET);
	KT_EXPECT_EQ(vfs_pread(T(w), fd, back, 4, 4096 - 2), 4);
	KT_EXPECT(memcmp(back, big + 4096 - 2, 4) == 0);
	KT_EXPECT_EQ(vfs_pwrite(T(w), fd, "ZZ", 2, 1), 2);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_CUR), here);
	KT_EXPECT_EQ(vfs_pread(T(w), fd, back, 3, 0), 3);
	KT_EXPECT(back[0] == big[0] && back[1] == 'Z' && back[2] == 'Z');
	KT_EXPECT_EQ(vfs_pread(T(w), fd, back, 3, -1), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_pread(T(w), fd, back, 3, N + 100), 0);
	/* a hole: seek far past the end and write; the gap reads as zeros, costs no page */
	uint64_t pages1 = fs_data_pages();
	KT_EXPECT_EQ(vfs_pwrite(T(w), fd, "end", 3, 40 * 4096), 3);
	KT_EXPECT_EQ(fs_data_pages() - pages1, 1u);
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstat(T(w), fd, &st), 0);
	KT_EXPECT_EQ(st.st_size, 40 * 4096 + 3);
	KT_EXPECT_EQ(st.st_blocks, 5 * 8);
	KT_EXPECT_EQ(vfs_pread(T(w), fd, back, 8, 20 * 4096), 8);
	for (int i = 0; i < 8; i++)
		KT_EXPECT_EQ(back[i], 0);
	/* truncate: shrink frees pages and zeroes the tail; growing reads zeros */
	KT_EXPECT_EQ(vfs_ftruncate(T(w), fd, 4096 + 10), 0);
	KT_EXPECT_EQ(fs_data_pages() - pages0, 2u);
	KT_EXPECT_EQ(vfs_ftruncate(T(w), fd, 2 * 4096), 0);
	KT_EXPECT_EQ(vfs_pread(T(w), fd, back, 20, 4096 + 5), 20);
	KT_EXPECT(memcmp(back, big + 4096 + 5, 5) == 0);
	for (int i = 5; i < 20; i++)
		KT_EXPECT_EQ(back[i], 0);
	KT_EXPECT_EQ(vfs_ftruncate(T(w), fd, -1), -LX_EINVAL);
	int ro = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0);
	KT_EXPECT_EQ(vfs_ftruncate(T(w), ro, 0), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_pwrite(T(w), ro, "x", 1, 0), -LX_EBADF);
	vfs_close(T(w), ro);
	vfs_close(T(w), fd);
	kfree(big);
	kfree(back);
	world_close(kt, &w, "/t_rw");
	KT_EXPECT_EQ(fs_data_pages(), pages0);
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- directories ------------------------------------------------------------------------------- */

#define NDIR 300

KTEST(fs_getdents_large_dir_small_buffers)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_dents"))
		goto out;
	char name[32];
	for (unsigned i = 0; i < NDIR; i++) {
		ksnprintf(name, sizeof name, "file-%u-%s", i, i % 3 ? "x" : "longer-name-here");
		KT_ASSERT_EQ(put_file(&w, name, ""), 0);
	}
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "sub", 0755), 0);
	uint8_t *seen = kzalloc(NDIR);
	KT_ASSERT(seen != NULL);
	int fd = vfs_openat(T(w), C(w), AT, ".", LX_O_RDONLY | LX_O_DIRECTORY, 0);
	KT_ASSERT(fd >= 0);
	char buf[48];		/* one record at a time, sometimes none fits */
	KT_EXPECT_EQ(vfs_getdents64(T(w), fd, buf, 20), -LX_EINVAL);
	unsigned dots = 0, subs = 0, calls = 0, dup = 0, bad = 0;
	long n;
	bool removed = false;
	while ((n = vfs_getdents64(T(w), fd, buf, sizeof buf)) != 0) {
		KT_ASSERT(n > 0);
		calls++;
		for (long o = 0; o < n;) {
			struct lx_dirent64 *d = (struct lx_dirent64 *)(void *)(buf + o);
			KT_ASSERT(d->d_reclen % 8 == 0 && d->d_reclen > 19);
			o += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0) {
				dots++;
				KT_EXPECT_EQ(d->d_type, LX_DT_DIR);
			} else if (strcmp(d->d_name, "sub") == 0) {
				subs++;
				KT_EXPECT_EQ(d->d_type, LX_DT_DIR);
			} else if (strncmp(d->d_name, "file-", 5) == 0) {
				unsigned i = 0;
				for (const char *p = d->d_name + 5; *p >= '0' && *p <= '9'; p++)
					i = i * 10 + (unsigned)(*p - '0');
				KT_EXPECT_EQ(d->d_type, LX_DT_REG);
				if (i < NDIR && !seen[i])
					seen[i] = 1;
				else
					dup++;
			} else {
				bad++;
			}
		}
		/* halfway: remove entries not yet read and some already read; the cookies
		 * keep the rest coming exactly once */
		if (!removed && calls == NDIR / 2) {
			removed = true;
			for (unsigned i = 0; i < NDIR; i += 10) {
				ksnprintf(name, sizeof name, "file-%u-%s", i, i % 3 ? "x" : "longer-name-here");
				KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, name, 0), 0);
				if (!seen[i])
					seen[i] = 2;	/* gone before read: must not appear */
			}
		}
	}
	KT_EXPECT_EQ(dots, 2u);
	KT_EXPECT_EQ(subs, 1u);
	KT_EXPECT_EQ(dup, 0u);
	KT_EXPECT_EQ(bad, 0u);
	unsigned missing = 0;
	for (unsigned i = 0; i < NDIR; i++)
		missing += seen[i] == 0;
	KT_EXPECT_EQ(missing, 0u);
	kt_diag(kt, "%u entries in %u getdents64 calls of <= 48 bytes", NDIR + 3, calls);
	/* rewind: lseek(0) gives "." again */
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_SET), 0);
	KT_EXPECT(vfs_getdents64(T(w), fd, buf, sizeof buf) > 0);
	KT_EXPECT(strcmp(((struct lx_dirent64 *)(void *)buf)->d_name, ".") == 0);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_END), -LX_EINVAL);
	vfs_close(T(w), fd);
	kfree(seen);
	world_close(kt, &w, "/t_dents");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

KTEST(fs_mkdir_unlink_rename_link_symlink)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_ns"))
		goto out;
	struct lx_stat st, st2;
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "d", 0700), 0);
	KT_EXPECT_EQ(mode_of(&w, "d", 0), LX_S_IFDIR | 0700);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "d", 0700), -LX_EEXIST);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "d/.", 0700), -LX_EEXIST);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "nope/x", 0700), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "d/e/", 0700), 0);	/* trailing slash: fine */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "d", &st, 0), 0);
	KT_EXPECT_EQ(st.st_nlink, 3u);			/* ".", "d", "e/.." */
	KT_EXPECT_EQ(put_file(&w, "d/f", "data"), 0);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "d/f/x", 0700), -LX_ENOTDIR);
	/* rmdir / unlink errors */
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d", LX_AT_REMOVEDIR), -LX_ENOTEMPTY);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d", 0), -LX_EISDIR);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/f", LX_AT_REMOVEDIR), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/.", LX_AT_REMOVEDIR), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/e/..", LX_AT_REMOVEDIR), -LX_ENOTEMPTY);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/missing", 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/f/", 0), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/f", 0x1), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "/", LX_AT_REMOVEDIR), -LX_EBUSY);
	/* hard links */
	KT_EXPECT_EQ(vfs_linkat(T(w), C(w), AT, "d/f", AT, "hl", 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "hl", &st, 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "d/f", &st2, 0), 0);
	KT_EXPECT_EQ(st.st_ino, st2.st_ino);
	KT_EXPECT_EQ(st.st_nlink, 2u);
	KT_EXPECT_EQ(vfs_linkat(T(w), C(w), AT, "d/f", AT, "hl", 0), -LX_EEXIST);
	KT_EXPECT_EQ(vfs_linkat(T(w), C(w), AT, "d", AT, "dl", 0), -LX_EPERM);
	KT_EXPECT_EQ(vfs_linkat(T(w), C(w), AT, "nope", AT, "x", 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "d/f", 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "hl", &st, 0), 0);
	KT_EXPECT_EQ(st.st_nlink, 1u);
	/* symlinks */
	char buf[64];
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "hl", AT, "sl"), 0);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "x", AT, "sl"), -LX_EEXIST);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "", AT, "empty"), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "sl", buf, sizeof buf), 2);
	KT_EXPECT(memcmp(buf, "hl", 2) == 0);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "sl", buf, 1), 1);	/* truncated, no NUL */
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "hl", buf, sizeof buf), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "nope", buf, sizeof buf), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "sl", buf, 0), -LX_EINVAL);
	KT_EXPECT_EQ(mode_of(&w, "sl", LX_AT_SYMLINK_NOFOLLOW), LX_S_IFLNK | 0777);
	/* rename */
	KT_EXPECT_EQ(put_file(&w, "a", "AAA"), 0);
	KT_EXPECT_EQ(put_file(&w, "b", "B"), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a", &st, 0), 0);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "a", AT, "b"), 0);	/* replaces b */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "b", &st2, 0), 0);
	KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	KT_EXPECT_EQ(st2.st_size, 3);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "a", &st, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "a", AT, "c"), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "b", AT, "d"), -LX_EISDIR);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "d", AT, "b"), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "d", AT, "d/e/x"), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "full", 0755), 0);
	KT_EXPECT_EQ(put_file(&w, "full/x", ""), 0);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "d", AT, "full"), -LX_ENOTEMPTY);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "b", AT, "b"), 0);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "hl", AT, "b"), 0);	/* b's old inode freed */
	/* a directory moves: link counts of both parents follow */
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "empty", 0755), 0);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "d/e", AT, "full/e"), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "d", &st, 0), 0);
	KT_EXPECT_EQ(st.st_nlink, 2u);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "full", &st, 0), 0);
	KT_EXPECT_EQ(st.st_nlink, 3u);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "full/e/..", &st2, 0), 0);
	KT_EXPECT_EQ(st2.st_ino, st.st_ino);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "full/e", AT, "empty"), 0);	/* over an empty dir */
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "full", &st, 0), 0);
	KT_EXPECT_EQ(st.st_nlink, 2u);
	/* chmod keeps the type; access as root */
	KT_EXPECT_EQ(vfs_fchmodat(T(w), C(w), AT, "b", 04711), 0);
	KT_EXPECT_EQ(mode_of(&w, "b", 0), LX_S_IFREG | 04711);
	KT_EXPECT_EQ(vfs_faccessat(T(w), C(w), AT, "b", 1, 0), 0);
	KT_EXPECT_EQ(vfs_fchmodat(T(w), C(w), AT, "b", 0644), 0);
	KT_EXPECT_EQ(vfs_faccessat(T(w), C(w), AT, "b", 1, 0), -LX_EACCES);
	KT_EXPECT_EQ(vfs_faccessat(T(w), C(w), AT, "b", 6, 0), 0);
	KT_EXPECT_EQ(vfs_faccessat(T(w), C(w), AT, "nope", 0, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_faccessat(T(w), C(w), AT, "b", 8, 0), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_fchmodat(T(w), C(w), AT, "nope", 0644), -LX_ENOENT);
	world_close(kt, &w, "/t_ns");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

KTEST(fs_unlinked_open_file_stays_readable)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_unl"))
		goto out;
	uint64_t pages0 = fs_data_pages(), inodes0 = fs_live_inodes();
	KT_EXPECT_EQ(put_file(&w, "f", "still here"), 0);
	int fd = vfs_openat(T(w), C(w), AT, "f", LX_O_RDWR, 0);
	KT_ASSERT(fd >= 0);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "f", 0), 0);
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "f", &st, 0), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_fstat(T(w), fd, &st), 0);
	KT_EXPECT_EQ(st.st_nlink, 0u);
	char buf[16] = { 0 };
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 10);
	KT_EXPECT(memcmp(buf, "still here", 10) == 0);
	KT_EXPECT_EQ(vfs_write(T(w), fd, "!", 1), 1);
	KT_EXPECT_EQ(fs_live_inodes(), inodes0 + 1);
	KT_EXPECT_EQ(fs_data_pages(), pages0 + 1);
	/* a second descriptor (dup) keeps it too */
	int d2 = vfs_dup(T(w), fd);
	KT_EXPECT_EQ(vfs_close(T(w), fd), 0);
	KT_EXPECT_EQ(fs_live_inodes(), inodes0 + 1);
	KT_EXPECT_EQ(vfs_pread(T(w), d2, buf, 11, 0), 11);
	KT_EXPECT_EQ(vfs_close(T(w), d2), 0);
	KT_EXPECT_EQ(fs_live_inodes(), inodes0);
	KT_EXPECT_EQ(fs_data_pages(), pages0);
	/* a removed directory held as cwd: no names inside, getcwd ENOENT */
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "gone", 0755), 0);
	struct fs_ctx *c2 = fs_ctx_clone(C(w));
	KT_ASSERT(c2 != NULL);
	KT_EXPECT_EQ(vfs_chdir(T(w), c2, "gone"), 0);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "gone", LX_AT_REMOVEDIR), 0);
	KT_EXPECT_EQ(vfs_getcwd(c2, buf, sizeof buf), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_openat(T(w), c2, AT, "x", LX_O_RDWR | LX_O_CREAT, 0644), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_fstatat(T(w), c2, AT, ".", &st, 0), 0);
	KT_EXPECT_EQ(st.st_nlink, 0u);
	fs_ctx_put(c2);
	KT_EXPECT_EQ(fs_live_inodes(), inodes0);
	world_close(kt, &w, "/t_unl");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- descriptors ------------------------------------------------------------------------------- */

KTEST(fs_dup_fcntl_emfile)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_fd"))
		goto out;
	KT_EXPECT_EQ(put_file(&w, "f", "abcdef"), 0);
	int a = vfs_openat(T(w), C(w), AT, "f", LX_O_RDWR, 0);
	KT_EXPECT_EQ(a, 0);
	int b = vfs_dup(T(w), a);
	KT_EXPECT_EQ(b, 1);
	char c;
	KT_EXPECT_EQ(vfs_read(T(w), a, &c, 1), 1);
	KT_EXPECT_EQ(vfs_read(T(w), b, &c, 1), 1);	/* one offset for both */
	KT_EXPECT_EQ(c, 'b');
	KT_EXPECT_EQ(vfs_dup2(T(w), a, a), a);
	KT_EXPECT_EQ(vfs_dup2(T(w), 50, 50), -LX_EBADF);
	KT_EXPECT_EQ(vfs_dup2(T(w), a, 7), 7);
	KT_EXPECT_EQ(vfs_dup2(T(w), a, FS_NOFILE), -LX_EBADF);
	KT_EXPECT_EQ(vfs_dup2(T(w), a, -1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_dup2(T(w), 40, 7), -LX_EBADF);
	KT_EXPECT_EQ(vfs_dup3(T(w), a, a, 0), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_dup3(T(w), a, 8, LX_O_NONBLOCK), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_dup3(T(w), a, 8, LX_O_CLOEXEC), 8);
	KT_EXPECT_EQ(vfs_fcntl(T(w), 8, LX_F_GETFD, 0), LX_FD_CLOEXEC);
	/* dup2 onto an open descriptor closes what it had */
	int other = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0);
	KT_EXPECT_EQ(other, 2);
	KT_EXPECT_EQ(vfs_dup2(T(w), a, other), other);
	KT_EXPECT_EQ(vfs_read(T(w), other, &c, 1), 1);
	KT_EXPECT_EQ(c, 'c');
	KT_EXPECT_EQ(vfs_fcntl(T(w), a, LX_F_DUPFD, 20), 20);
	KT_EXPECT_EQ(vfs_fcntl(T(w), a, LX_F_DUPFD_CLOEXEC, 20), 21);
	KT_EXPECT_EQ(vfs_fcntl(T(w), 21, LX_F_GETFD, 0), LX_FD_CLOEXEC);
	KT_EXPECT_EQ(vfs_fcntl(T(w), 21, LX_F_SETFD, 0), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), 21, LX_F_GETFD, 0), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), a, LX_F_DUPFD, FS_NOFILE), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_fcntl(T(w), a, 9999, 0), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_fcntl(T(w), 99, LX_F_GETFD, 0), -LX_EBADF);
	/* F_SETFL changes O_APPEND/O_NONBLOCK only, and for every descriptor of the file */
	KT_EXPECT_EQ(vfs_fcntl(T(w), a, LX_F_SETFL, LX_O_APPEND | LX_O_NONBLOCK | LX_O_WRONLY), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), b, LX_F_GETFL, 0),
		     LX_O_RDWR | LX_O_APPEND | LX_O_NONBLOCK | LX_O_LARGEFILE);
	/* EMFILE: fill the table */
	int last = 0, n = 0;
	for (;;) {
		int d = vfs_dup(T(w), a);
		if (d < 0) {
			KT_EXPECT_EQ(d, -LX_EMFILE);
			break;
		}
		last = d;
		n++;
	}
	KT_EXPECT_EQ(last, FS_NOFILE - 1);
	KT_EXPECT_EQ(fdtable_count(T(w)), (unsigned)FS_NOFILE);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0), -LX_EMFILE);
	KT_EXPECT_EQ(vfs_fcntl(T(w), a, LX_F_DUPFD, 0), -LX_EMFILE);
	int p[2];
	KT_EXPECT_EQ(vfs_pipe2(T(w), p, 0), -LX_EMFILE);
	KT_EXPECT_EQ(vfs_close(T(w), 100), 0);
	KT_EXPECT_EQ(vfs_pipe2(T(w), p, 0), -LX_EMFILE);	/* one free: the write end fails */
	KT_EXPECT_EQ(fdtable_count(T(w)), (unsigned)FS_NOFILE - 1);
	KT_EXPECT_EQ(vfs_dup(T(w), a), 100);
	kt_diag(kt, "%d dups filled the table of %d", n, FS_NOFILE);
	for (int i = 0; i < FS_NOFILE; i++)
		vfs_close(T(w), i);
	world_close(kt, &w, "/t_fd");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

KTEST(fs_fdtable_clone_independent_and_cloexec)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_clone"))
		goto out;
	KT_EXPECT_EQ(put_file(&w, "f", "0123456789"), 0);
	int a = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0);
	int cx = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY | LX_O_CLOEXEC, 0);
	struct fdtable *child = fdtable_clone(T(w));
	KT_ASSERT(child != NULL);
	KT_EXPECT_EQ(fdtable_count(child), 2u);
	/* the open file description is shared: one offset */
	char c;
	KT_EXPECT_EQ(vfs_read(child, a, &c, 1), 1);
	KT_EXPECT_EQ(vfs_read(T(w), a, &c, 1), 1);
	KT_EXPECT_EQ(c, '1');
	/* the tables are not: closing or opening in one leaves the other */
	KT_EXPECT_EQ(vfs_close(child, a), 0);
	KT_EXPECT_EQ(vfs_read(T(w), a, &c, 1), 1);
	KT_EXPECT_EQ(c, '2');
	int n = vfs_openat(child, C(w), AT, "f", LX_O_RDONLY, 0);
	KT_EXPECT_EQ(n, a);	/* the lowest free slot in the child */
	KT_EXPECT_EQ(fdtable_count(T(w)), 2u);
	KT_EXPECT_EQ(vfs_dup2(child, cx, 5), 5);
	KT_EXPECT_EQ(vfs_fcntl(T(w), 5, LX_F_GETFD, 0), -LX_EBADF);
	/* execve in the child: the close-on-exec one goes, the others stay */
	KT_EXPECT_EQ(vfs_fcntl(child, cx, LX_F_GETFD, 0), LX_FD_CLOEXEC);
	fdtable_close_on_exec(child);
	KT_EXPECT_EQ(vfs_fcntl(child, cx, LX_F_GETFD, 0), -LX_EBADF);
	KT_EXPECT_EQ(vfs_fcntl(child, 5, LX_F_GETFD, 0), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), cx, LX_F_GETFD, 0), LX_FD_CLOEXEC);
	KT_EXPECT_EQ(fdtable_count(child), 2u);
	fdtable_put(child);
	KT_EXPECT_EQ(fdtable_count(T(w)), 2u);
	KT_EXPECT_EQ(vfs_read(T(w), cx, &c, 1), 1);
	vfs_close(T(w), a);
	vfs_close(T(w), cx);
	world_close(kt, &w, "/t_clone");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* The one-call lookup (vfs.h fdtable_file_light): a table not marked solo, or a
 * configuration that keeps every lookup locked, looks up under the monitor with a
 * reference; a solo table's lookup takes neither, and finds the same file. The reference
 * count shows which: a locked lookup holds one more until fdtable_file_done. */
KTEST(fs_fdtable_solo_lookup_without_lock_or_reference)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_solo"))
		goto out;
	KT_EXPECT_EQ(put_file(&w, "f", "ab"), 0);
	int fd = vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0);
	KT_ASSERT(fd >= 0);
	bool ref = false;
	struct file *locked = fdtable_file_light(T(w), fd, &ref);	/* new: not solo */
	KT_EXPECT(locked != NULL);
	KT_EXPECT(ref);
	KT_EXPECT_EQ(__atomic_load_n(&locked->refs, __ATOMIC_RELAXED), 2u);
	fdtable_file_done(locked, ref);
	fdtable_set_solo(T(w), true);
	struct file *light = fdtable_file_light(T(w), fd, &ref);
	KT_EXPECT(light == locked);
	KT_EXPECT(!ref);
	KT_EXPECT_EQ(__atomic_load_n(&light->refs, __ATOMIC_RELAXED), 1u);
	fdtable_file_done(light, ref);
	KT_EXPECT(fdtable_file_light(T(w), 77, &ref) == NULL);	/* an empty slot */
	KT_EXPECT(fdtable_file_light(T(w), -1, &ref) == NULL);
	KT_EXPECT(fdtable_file_light(T(w), FS_NOFILE, &ref) == NULL);
	fs_set_fd_lookup_locked(true);		/* locks=sprite, sprite-fix: no table */
	fdtable_set_solo(T(w), true);		/* is marked solo, so every lookup locks */
	struct file *sprite = fdtable_file_light(T(w), fd, &ref);
	KT_EXPECT(sprite == locked && ref);
	fdtable_file_done(sprite, ref);
	fs_set_fd_lookup_locked(false);
	fdtable_set_solo(T(w), true);
	char c;
	KT_EXPECT_EQ(vfs_read(T(w), fd, &c, 1), 1);	/* solo: read and pread through it */
	KT_EXPECT_EQ(c, 'a');
	KT_EXPECT_EQ(vfs_pread(T(w), fd, &c, 1, 1), 1);
	KT_EXPECT_EQ(c, 'b');
	KT_EXPECT_EQ(vfs_write(T(w), fd, "x", 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_read(T(w), 77, &c, 1), -LX_EBADF);
	KT_EXPECT_EQ(__atomic_load_n(&light->refs, __ATOMIC_RELAXED), 1u);
	fdtable_set_solo(T(w), false);
	vfs_close(T(w), fd);
	world_close(kt, &w, "/t_solo");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* Two threads on one table (CLONE_FILES): one dup2s onto a slot and closes it, the other
 * reads and fcntls through that slot. Every answer is the file's or EBADF, and no file
 * reference is lost or leaked (the inode goes when the last descriptor closes). Under
 * ThreadSanitizer this is the case that sees a table slot read without its monitor. */
struct dupper_arg {
	struct fdtable *t;
	unsigned iters;
	long bad;
	unsigned finished;	/* atomic */
};

static void dupper(void *arg)
{
	struct dupper_arg *a = arg;
	for (unsigned i = 0; i < a->iters; i++) {
		if (vfs_dup2(a->t, 3, 10) != 10)
			a->bad++;
		if (i % 3 == 0 && vfs_dup3(a->t, 3, 11, LX_O_CLOEXEC) != 11)
			a->bad++;
		if (vfs_close(a->t, 10) != 0)
			a->bad++;
		vfs_close(a->t, 11);
	}
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

static void slot_reader(void *arg)
{
	struct dupper_arg *a = arg;
	for (unsigned i = 0; i < a->iters; i++) {
		char c;
		long r = vfs_pread(a->t, 10, &c, 1, 0);
		if (r != 1 && r != -LX_EBADF)
			a->bad++;
		if (r == 1 && c != 'q')
			a->bad++;
		long fl = vfs_fcntl(a->t, 11, LX_F_GETFD, 0);
		if (fl != LX_FD_CLOEXEC && fl != -LX_EBADF)
			a->bad++;
		struct lx_stat st;
		int rc = vfs_fstat(a->t, 10, &st);
		if (rc != 0 && rc != -LX_EBADF)
			a->bad++;
	}
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

KTEST(fs_fdtable_shared_by_threads_dup2_close_race)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct world w;
		if (!world_open(kt, &w, "/t_fdrace")) {
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
			return;
		}
		KT_EXPECT_EQ(put_file(&w, "f", "q"), 0);
		for (int i = 0; i < 3; i++)
			KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "/dev/null", LX_O_RDONLY, 0), i);
		KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "f", LX_O_RDONLY, 0), 3);
		KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "f", 0), 0);	/* held by fds only */
		uint64_t live = fs_live_inodes();
		unsigned it = 3000 * fs_scale();
		struct dupper_arg a = { T(w), it, 0, 0 }, b = { T(w), it, 0, 0 };
		struct thread *ta, *tb;
		KT_ASSERT_EQ(thread_create(&ta, dupper, &a, 0, SCHED_AFFINITY_ANY, "dup2", 0), KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&tb, slot_reader, &b, 0, SCHED_AFFINITY_ANY, "rd", 0), KSYNC_OK);
		bool fin = WAIT_UNTIL(__atomic_load_n(&a.finished, __ATOMIC_ACQUIRE) &&
				      __atomic_load_n(&b.finished, __ATOMIC_ACQUIRE), 60000ull * fs_scale());
		KT_ASSERT(fin);
		KT_EXPECT_EQ(thread_join(ta), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(tb), KSYNC_OK);
		KT_EXPECT_EQ(a.bad, 0);
		KT_EXPECT_EQ(b.bad, 0);
		KT_EXPECT_EQ(fdtable_count(T(w)), 4u);
		KT_EXPECT_EQ(fs_live_inodes(), live);
		for (int i = 0; i < 4; i++)
			KT_EXPECT_EQ(vfs_close(T(w), i), 0);
		KT_EXPECT_EQ(fs_live_inodes(), live - 1);	/* the unlinked file went with fd 3 */
		world_close(kt, &w, "/t_fdrace");
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* /proc (procfs.c) with a stand-in for the process layer: the pid directories follow
 * the source's list, texts and links are regenerated at each lookup, and the name space
 * is read-only as Linux's /proc answers root. */
static int procfs_test_pids[4] = { 7, 9 };	/* the stand-in table: this test's only */
static unsigned procfs_test_n = 2;
static int procfs_test_gen_calls;

static int procfs_test_self(void) { return 9; }

static unsigned procfs_test_pidlist(int *out, unsigned max)
{
	unsigned n = procfs_test_n < max ? procfs_test_n : max;
	memcpy(out, procfs_test_pids, n * sizeof *out);
	return n;
}

static long procfs_test_gen(int pid, const char *name, char *buf, size_t n)
{
	procfs_test_gen_calls++;
	if (!strcmp(name, "exe"))
		return ksnprintf(buf, n, "/bin/p%d", pid);
	return ksnprintf(buf, n, "%s of %d #%d\n", name, pid, procfs_test_gen_calls);
}

static const struct procfs_source procfs_test_source = {
	.self = procfs_test_self, .pids = procfs_test_pidlist, .gen = procfs_test_gen,
};

/* The names getdents gives for path, joined by ' ' (without . and ..). */
static void dir_names(struct world *w, const char *path, char *out, size_t n)
{
	out[0] = 0;
	int fd = vfs_openat(w->t, w->c, LX_AT_FDCWD, path, LX_O_RDONLY | LX_O_DIRECTORY, 0);
	if (fd < 0)
		return;
	char buf[512];
	long got;
	size_t at = 0;
	while ((got = vfs_getdents64(w->t, fd, buf, sizeof buf)) > 0) {
		for (long off = 0; off < got;) {
			struct lx_dirent64 *d = (struct lx_dirent64 *)(void *)(buf + off);
			if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
				at += (size_t)ksnprintf(out + at, n - at, "%s%s", at ? " " : "", d->d_name);
			off += d->d_reclen;
		}
	}
	vfs_close(w->t, fd);
}

KTEST(fs_proc_follows_the_source_and_is_read_only)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_proc"))
		goto out;
	procfs_test_n = 2;
	fs_procfs_set(&procfs_test_source);
	char names[256], buf[128];
	dir_names(&w, "/proc", names, sizeof names);
	KT_EXPECT(strcmp(names, "self cpuinfo meminfo uptime ksync-lockstat ksync-critsec ksync-serial 7 9") == 0);
	dir_names(&w, "/proc/7", names, sizeof names);
	KT_EXPECT(strcmp(names, "cmdline stat status exe") == 0);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "/proc/self", buf, sizeof buf), 1);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "/proc/self/exe", buf, sizeof buf), 7);
	KT_EXPECT(memcmp(buf, "/bin/p9", 7) == 0);
	KT_EXPECT_EQ(vfs_realpath(T(w), C(w), "/proc/self/exe", buf, sizeof buf), -LX_ENOENT);
	/* a text made at the lookup: each open sees a new one */
	int fd = vfs_openat(T(w), C(w), AT, "/proc/7/stat", LX_O_RDONLY, 0);
	KT_ASSERT(fd >= 0);
	long n = vfs_read(T(w), fd, buf, sizeof buf - 1);
	KT_EXPECT(n > 0 && memcmp(buf, "stat of 7 #", 11) == 0);
	int calls = procfs_test_gen_calls;
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/proc/7/stat", &st, 0), 0);
	KT_EXPECT_EQ(procfs_test_gen_calls, calls + 1);
	/* read-only, with Linux's answers to root */
	int wfd = vfs_openat(T(w), C(w), AT, "/proc/meminfo", LX_O_WRONLY | LX_O_TRUNC, 0);
	KT_EXPECT(wfd >= 0);
	KT_EXPECT_EQ(vfs_write(T(w), wfd, "x", 1), -LX_EIO);
	KT_EXPECT_EQ(vfs_ftruncate(T(w), wfd, 0), 0);
	vfs_close(T(w), wfd);
	wfd = vfs_openat(T(w), C(w), AT, "/proc/7/status", LX_O_RDWR, 0);
	KT_EXPECT_EQ(vfs_write(T(w), wfd, "x", 1), -LX_EINVAL);
	vfs_close(T(w), wfd);
	KT_EXPECT_EQ(vfs_openat(T(w), C(w), AT, "/proc/new", LX_O_WRONLY | LX_O_CREAT, 0644), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "/proc/7/d", 0755), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "x", AT, "/proc/l"), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "/proc/meminfo", 0), -LX_EPERM);
	KT_EXPECT_EQ(vfs_unlinkat(T(w), C(w), AT, "/proc/7", LX_AT_REMOVEDIR), -LX_EPERM);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "/proc/uptime", AT, "/proc/up2"), -LX_ENOENT);
	KT_EXPECT_EQ(vfs_renameat(T(w), C(w), AT, "/proc/uptime", AT, "moved"), -LX_EXDEV);
	KT_EXPECT_EQ(vfs_linkat(T(w), C(w), AT, "/proc/uptime", AT, "hard", 0), -LX_EXDEV);
	/* a process gone: its directory goes at the next lookup; an open file stays readable */
	procfs_test_n = 1;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/proc/9", &st, 0), -LX_ENOENT);
	dir_names(&w, "/proc", names, sizeof names);
	KT_EXPECT(strcmp(names, "self cpuinfo meminfo uptime ksync-lockstat ksync-critsec ksync-serial 7") == 0);
	procfs_test_n = 0;
	dir_names(&w, "/proc", names, sizeof names);
	KT_EXPECT(strcmp(names, "self cpuinfo meminfo uptime ksync-lockstat ksync-critsec ksync-serial") == 0);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, 0), 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), n);
	vfs_close(T(w), fd);
	fs_procfs_set(NULL);
	world_close(kt, &w, "/t_proc");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

KTEST(fs_cwd_chdir_getcwd_umask)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_cwd"))
		goto out;
	char buf[64];
	KT_EXPECT_EQ(vfs_getcwd(C(w), buf, sizeof buf), 7);
	KT_EXPECT(strcmp(buf, "/t_cwd") == 0);
	KT_EXPECT_EQ(vfs_getcwd(C(w), buf, 6), -LX_ERANGE);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "x", 0755), 0);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), C(w), AT, "x/y", 0755), 0);
	KT_EXPECT_EQ(vfs_symlinkat(T(w), C(w), "x/y", AT, "ly"), 0);
	KT_EXPECT_EQ(put_file(&w, "file", ""), 0);
	struct fs_ctx *c2 = fs_ctx_clone(C(w));
	KT_ASSERT(c2 != NULL);
	KT_EXPECT_EQ(vfs_chdir(T(w), c2, "ly"), 0);	/* through the link: the real path */
	KT_EXPECT_EQ(vfs_getcwd(c2, buf, sizeof buf), 11);
	KT_EXPECT(strcmp(buf, "/t_cwd/x/y") == 0);
	KT_EXPECT_EQ(vfs_getcwd(C(w), buf, sizeof buf), 7);	/* the clone's cwd is its own */
	KT_EXPECT_EQ(put_file(&w, "x/y/rel", "r"), 0);
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstatat(T(w), c2, AT, "rel", &st, 0), 0);
	KT_EXPECT_EQ(vfs_chdir(T(w), c2, ".."), 0);
	KT_EXPECT_EQ(vfs_getcwd(c2, buf, sizeof buf), 9);
	KT_EXPECT_EQ(vfs_chdir(T(w), c2, "/"), 0);
	KT_EXPECT_EQ(vfs_getcwd(c2, buf, sizeof buf), 2);
	KT_EXPECT(strcmp(buf, "/") == 0);
	KT_EXPECT_EQ(vfs_chdir(T(w), c2, "/t_cwd/file"), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_chdir(T(w), c2, "/t_cwd/none"), -LX_ENOENT);
	int d = vfs_openat(T(w), C(w), AT, "x", LX_O_RDONLY | LX_O_DIRECTORY, 0);
	int f = vfs_openat(T(w), C(w), AT, "file", LX_O_RDONLY, 0);
	KT_EXPECT_EQ(vfs_fchdir(T(w), c2, d), 0);
	KT_EXPECT_EQ(vfs_getcwd(c2, buf, sizeof buf), 9);
	KT_EXPECT_EQ(vfs_fchdir(T(w), c2, f), -LX_ENOTDIR);
	KT_EXPECT_EQ(vfs_fchdir(T(w), c2, 90), -LX_EBADF);
	vfs_close(T(w), d);
	vfs_close(T(w), f);
	/* umask: per context, returns the old, applies to creation */
	KT_EXPECT_EQ(fs_umask(c2, 0077), 022u);
	KT_EXPECT_EQ(fs_umask(C(w), 0), 022u);
	KT_EXPECT_EQ(vfs_mkdirat(T(w), c2, AT, "m", 0777), 0);
	KT_EXPECT_EQ(mode_of(&w, "x/m", 0), LX_S_IFDIR | 0700);
	fs_ctx_put(c2);
	world_close(kt, &w, "/t_cwd");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- pipes ------------------------------------------------------------------------------------- */

KTEST(fs_pipe_semantics_nonblocking_errors)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_pipe"))
		goto out;
	int p[2];
	KT_EXPECT_EQ(vfs_pipe2(T(w), p, 0x1), -LX_EINVAL);
	KT_ASSERT_EQ(vfs_pipe2(T(w), p, LX_O_NONBLOCK | LX_O_CLOEXEC), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), p[0], LX_F_GETFL, 0), LX_O_RDONLY | LX_O_NONBLOCK);
	KT_EXPECT_EQ(vfs_fcntl(T(w), p[1], LX_F_GETFL, 0), LX_O_WRONLY | LX_O_NONBLOCK);
	KT_EXPECT_EQ(vfs_fcntl(T(w), p[1], LX_F_GETFD, 0), LX_FD_CLOEXEC);
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstat(T(w), p[0], &st), 0);
	KT_EXPECT_EQ(st.st_mode & LX_S_IFMT, LX_S_IFIFO);
	char buf[64];
	KT_EXPECT_EQ(vfs_read(T(w), p[0], buf, sizeof buf), -LX_EAGAIN);
	KT_EXPECT_EQ(vfs_write(T(w), p[0], "x", 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_read(T(w), p[1], buf, 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_lseek(T(w), p[0], 0, LX_SEEK_SET), -LX_ESPIPE);
	KT_EXPECT_EQ(vfs_pread(T(w), p[0], buf, 1, 0), -LX_ESPIPE);
	KT_EXPECT_EQ(vfs_pwrite(T(w), p[1], buf, 1, 0), -LX_ESPIPE);
	KT_EXPECT_EQ(vfs_ftruncate(T(w), p[1], 0), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_write(T(w), p[1], "hello", 5), 5);
	int32_t nread = -1;
	KT_EXPECT_EQ(vfs_ioctl(T(w), p[0], LX_FIONREAD, &nread), 0);
	KT_EXPECT_EQ(nread, 5);
	struct lx_termios tio;
	KT_EXPECT_EQ(vfs_ioctl(T(w), p[0], LX_TCGETS, &tio), -LX_ENOTTY);
	struct lx_pollfd pf[3] = { { p[0], LX_POLLIN, 0 }, { p[1], LX_POLLOUT, 0 }, { 99, LX_POLLIN, 0 } };
	KT_EXPECT_EQ(vfs_poll(T(w), pf, 3, 0), 3);
	KT_EXPECT_EQ(pf[0].revents, LX_POLLIN);
	KT_EXPECT_EQ(pf[1].revents, LX_POLLOUT);
	KT_EXPECT_EQ(pf[2].revents, LX_POLLNVAL);
	KT_EXPECT_EQ(vfs_read(T(w), p[0], buf, 3), 3);
	KT_EXPECT_EQ(vfs_read(T(w), p[0], buf, sizeof buf), 2);
	KT_EXPECT(memcmp(buf, "lo", 2) == 0);
	pf[0].revents = 7;
	KT_EXPECT_EQ(vfs_poll(T(w), pf, 1, 0), 0);
	KT_EXPECT_EQ(pf[0].revents, 0);
	/* fill it: a small write that does not fit whole is refused whole (PIPE_BUF) */
	static char blk[4096];
	memset(blk, 'b', sizeof blk);
	long total = 0, r;
	while ((r = vfs_write(T(w), p[1], blk, 4000)) > 0)
		total += r;
	KT_EXPECT_EQ(r, -LX_EAGAIN);
	KT_EXPECT_EQ(total, 16 * 4000);		/* 64 KiB holds 16, not 17 */
	KT_EXPECT_EQ(vfs_write(T(w), p[1], blk, 1536), 1536);	/* exactly full now */
	KT_EXPECT_EQ(vfs_write(T(w), p[1], blk, 1), -LX_EAGAIN);
	pf[1].revents = 0;
	KT_EXPECT_EQ(vfs_poll(T(w), &pf[1], 1, 0), 0);	/* less than PIPE_BUF free */
	KT_EXPECT_EQ(vfs_read(T(w), p[0], blk, 100), 100);
	KT_EXPECT_EQ(vfs_write(T(w), p[1], blk, 4096), -LX_EAGAIN);	/* 100 free: atomic refuses */
	KT_EXPECT_EQ(vfs_write(T(w), p[1], blk, 5000), 100);	/* > PIPE_BUF: partial */
	/* the write end closes: data first, then EOF, POLLHUP */
	KT_EXPECT_EQ(vfs_close(T(w), p[1]), 0);
	total = 0;
	while ((r = vfs_read(T(w), p[0], blk, sizeof blk)) > 0)
		total += r;
	KT_EXPECT_EQ(r, 0);
	KT_EXPECT_EQ(total, 65536);
	pf[0].revents = 0;
	KT_EXPECT_EQ(vfs_poll(T(w), pf, 1, 0), 1);
	KT_EXPECT_EQ(pf[0].revents, LX_POLLHUP);
	vfs_close(T(w), p[0]);
	/* no reader: EPIPE (blocking pipe) and POLLERR */
	KT_ASSERT_EQ(vfs_pipe2(T(w), p, 0), 0);
	KT_EXPECT_EQ(vfs_close(T(w), p[0]), 0);
	KT_EXPECT_EQ(vfs_write(T(w), p[1], "x", 1), -LX_EPIPE);
	pf[1].fd = p[1];
	KT_EXPECT_EQ(vfs_poll(T(w), &pf[1], 1, 0), 1);
	KT_EXPECT_EQ(pf[1].revents, LX_POLLOUT | LX_POLLERR);	/* as Linux's pipe_poll */
	vfs_close(T(w), p[1]);
	/* F_SETFL O_NONBLOCK on a blocking pipe */
	KT_ASSERT_EQ(vfs_pipe2(T(w), p, 0), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), p[0], LX_F_SETFL, LX_O_NONBLOCK), 0);
	KT_EXPECT_EQ(vfs_read(T(w), p[0], buf, 1), -LX_EAGAIN);
	int32_t off = 0;
	KT_EXPECT_EQ(vfs_ioctl(T(w), p[0], LX_FIONBIO, &off), 0);
	KT_EXPECT_EQ(vfs_fcntl(T(w), p[0], LX_F_GETFL, 0), LX_O_RDONLY);
	/* a finite poll timeout with nothing to read returns 0. Not under the hosted TSan
	 * build: only the clock's tick ends a timed sleep (kernel/sched/timer.c), and that
	 * build's ticks are not dependable (test_sched_timer.c says why) */
	pf[0].fd = p[0];
#if !defined(__SANITIZE_THREAD__)
	KT_EXPECT_EQ(vfs_poll(T(w), pf, 1, 5), 0);
#else
	kt_diag(kt, "TSan build: the finite poll timeout is not checked (its clock ticks are "
		"not dependable); plain/asan/hard and QEMU check it");
#endif
	vfs_close(T(w), p[0]);
	vfs_close(T(w), p[1]);
	world_close(kt, &w, "/t_pipe");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* A stream with a known content: byte i of the stream of writer `id`. */
static uint8_t sbyte(unsigned id, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)id << 56);
	x ^= x >> 29;
	return (uint8_t)(x * 0xbf58476d1ce4e5b9ull >> 56);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct stream_arg {
	struct fdtable *t;
	int fd;
	unsigned id;
	uint64_t bytes;		/* to write / read */
	uint64_t seed;
	long result;		/* 0, or the first error / the first bad offset + 1 */
	uint64_t done;
	unsigned finished;	/* atomic */
};

static void stream_writer(void *arg)
{
	struct stream_arg *a = arg;
	static uint8_t buf[9000];	/* one writer thread: not on its 16 KiB stack */
	uint64_t s = a->seed;
	while (a->done < a->bytes) {
		size_t n = 1 + (size_t)(xs(&s) % sizeof buf);
		if (n > a->bytes - a->done)
			n = (size_t)(a->bytes - a->done);
		for (size_t i = 0; i < n; i++)
			buf[i] = sbyte(a->id, a->done + i);
		long w = vfs_write(a->t, a->fd, buf, n);
		if (w <= 0) {
			a->result = w ? w : -1000;
			break;
		}
		a->done += (uint64_t)w;
	}
	vfs_close(a->t, a->fd);
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

static void stream_reader(void *arg)
{
	struct stream_arg *a = arg;
	static uint8_t buf[7000];	/* one reader thread */
	uint64_t s = a->seed;
	for (;;) {
		size_t n = 1 + (size_t)(xs(&s) % sizeof buf);
		long r = vfs_read(a->t, a->fd, buf, n);
		if (r < 0) {
			a->result = r;
			break;
		}
		if (r == 0)
			break;
		for (long i = 0; i < r && a->result == 0; i++)
			if (buf[i] != sbyte(0, a->done + (uint64_t)i))
				a->result = (long)(a->done + (uint64_t)i) + 1;
		a->done += (uint64_t)r;
	}
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

KTEST(fs_pipe_two_thread_stream_checksummed)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		KT_ASSERT_EQ(fs_init(), 0);
		struct fdtable *t = fdtable_new();
		KT_ASSERT(t != NULL);
		int p[2];
		KT_ASSERT_EQ(vfs_pipe2(t, p, 0), 0);
		struct stream_arg wa = { t, p[1], 0, 600000ull * fs_scale(), 0x1234567ull, 0, 0, 0 };
		struct stream_arg ra = { t, p[0], 0, 0, 0x7654321ull, 0, 0, 0 };
		struct thread *tw, *tr;
		lockstat_reset();
		uint64_t t0 = arch_cycles();
		KT_ASSERT_EQ(thread_create(&tr, stream_reader, &ra, 0, SCHED_AFFINITY_ANY, "prd", 0),
			     KSYNC_OK);
		KT_ASSERT_EQ(thread_create(&tw, stream_writer, &wa, 0, SCHED_AFFINITY_ANY, "pwr", 0),
			     KSYNC_OK);
		bool fin = WAIT_UNTIL(__atomic_load_n(&ra.finished, __ATOMIC_ACQUIRE) &&
				      __atomic_load_n(&wa.finished, __ATOMIC_ACQUIRE), 60000ull * fs_scale());
		KT_ASSERT(fin);
		KT_EXPECT_EQ(thread_join(tr), KSYNC_OK);
		KT_EXPECT_EQ(thread_join(tw), KSYNC_OK);
		KT_EXPECT_EQ(wa.result, 0);
		KT_EXPECT_EQ(ra.result, 0);
		KT_EXPECT_EQ(wa.done, wa.bytes);
		KT_EXPECT_EQ(ra.done, wa.bytes);	/* every byte, in order, then EOF */
		uint64_t us = (arch_cycles() - t0) / (arch_tsc_hz() / 1000000);
		kt_diag(kt, "%s: %lu bytes through a pipe, writes of 1..9000, reads of 1..7000, in %lu us "
			"(to the last thread's end, polled)", s, (unsigned long)ra.done, (unsigned long)us);
		class_diag(kt, s, "pipe");
		class_diag(kt, s, "pipe_readable");
		class_diag(kt, s, "pipe_writable");
		class_diag(kt, s, "fdtable");
		vfs_close(t, p[0]);
		fdtable_put(t);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* Several writers, records of 8..4096 bytes: [id][seq:4][len:2] then bytes of (id, seq).
 * PIPE_BUF atomicity: the reader finds every record whole and each writer's in order. */
#define AW_WRITERS 3
#define AW_RECORDS (150u * fs_scale())

static void record_writer(void *arg)
{
	struct stream_arg *a = arg;
	uint8_t rec[4096];
	uint64_t s = a->seed;
	for (uint32_t seq = 0; seq < AW_RECORDS; seq++) {
		size_t len = 8 + (size_t)(xs(&s) % (4096 - 8 + 1));
		if (seq % 10 == 0)
			len = 4096;	/* the largest atomic size, often */
		rec[0] = (uint8_t)a->id;
		memcpy(rec + 1, &seq, 4);
		uint16_t l16 = (uint16_t)(len - 1);
		memcpy(rec + 5, &l16, 2);
		for (size_t i = 7; i < len; i++)
			rec[i] = sbyte(a->id, seq * 4096ull + i);
		long w = vfs_write(a->t, a->fd, rec, len);
		if (w != (long)len) {
			a->result = w < 0 ? w : -2000;
			break;
		}
		a->done++;
	}
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

KTEST(fs_pipe_buf_atomic_several_writers)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		KT_ASSERT_EQ(fs_init(), 0);
		struct fdtable *t = fdtable_new();
		KT_ASSERT(t != NULL);
		int p[2];
		KT_ASSERT_EQ(vfs_pipe2(t, p, 0), 0);
		struct stream_arg wa[AW_WRITERS];
		struct thread *tw[AW_WRITERS];
		for (unsigned i = 0; i < AW_WRITERS; i++) {
			wa[i] = (struct stream_arg){ t, p[1], i + 1, 0, 0x1000 + i * 77, 0, 0, 0 };
			KT_ASSERT_EQ(thread_create(&tw[i], record_writer, &wa[i], 0, SCHED_AFFINITY_ANY,
						   "aw", 0), KSYNC_OK);
		}
		/* the reader is this thread: records parsed from a byte stream read in pieces */
		static uint8_t rb[8192 + 4096];
		unsigned total = AW_WRITERS * AW_RECORDS;
		size_t have = 0;
		uint32_t next[AW_WRITERS + 1] = { 0 };
		unsigned records = 0, torn = 0, order = 0;
		uint64_t t0 = arch_cycles();
		while (records < total && arch_cycles() - t0 < ms_ticks(60000ull * fs_scale())) {
			long r = vfs_read(t, p[0], rb + have, 8192);
			if (r <= 0) {
				torn++;		/* cannot happen while writers hold the write end */
				break;
			}
			have += (size_t)r;
			size_t at = 0;
			while (have - at >= 7) {
				uint8_t id = rb[at];
				uint32_t seq;
				uint16_t l16;
				memcpy(&seq, rb + at + 1, 4);
				memcpy(&l16, rb + at + 5, 2);
				size_t len = (size_t)l16 + 1;
				if (id < 1 || id > AW_WRITERS || len < 8) {
					torn++;		/* a header that is not one: interleaving */
					at = have;
					break;
				}
				if (have - at < len)
					break;
				for (size_t i = 7; i < len; i++)
					if (rb[at + i] != sbyte(id, seq * 4096ull + i)) {
						torn++;
						break;
					}
				if (seq != next[id])
					order++;
				next[id] = seq + 1;
				records++;
				at += len;
			}
			memmove(rb, rb + at, have - at);
			have -= at;
			if (torn)
				break;
		}
		/* a failed parse stops reading: close the read end so that blocked writers
		 * return (EPIPE) instead of hanging the case */
		if (torn || records < total) {
			vfs_close(t, p[0]);
			p[0] = -1;
		}
		bool fin = true;
		for (unsigned i = 0; i < AW_WRITERS; i++)
			fin &= WAIT_UNTIL(__atomic_load_n(&wa[i].finished, __ATOMIC_ACQUIRE), 10000);
		KT_ASSERT(fin);
		for (unsigned i = 0; i < AW_WRITERS; i++) {
			KT_EXPECT_EQ(thread_join(tw[i]), KSYNC_OK);
			KT_EXPECT_EQ(wa[i].result, 0);
		}
		KT_EXPECT_EQ(torn, 0u);
		KT_EXPECT_EQ(order, 0u);
		KT_EXPECT_EQ(records, total);
		KT_EXPECT_EQ(have, 0u);
		kt_diag(kt, "%s: %u records of 8..4096 bytes from %d writers, %u torn", s, records,
			AW_WRITERS, torn);
		if (p[0] >= 0)
			vfs_close(t, p[0]);
		vfs_close(t, p[1]);
		fdtable_put(t);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* Blocking: a reader waits for a writer, a writer for a reader, EOF and EPIPE wake the
 * waiting side, and a signal (the test hook) interrupts each kind of wait. */
static struct thread *sig_target;	/* atomic */
static unsigned sig_flag;		/* atomic */

static bool test_sig_pending(void)
{
	return __atomic_load_n(&sig_flag, __ATOMIC_ACQUIRE) &&
	       thread_self() == __atomic_load_n(&sig_target, __ATOMIC_ACQUIRE);
}

struct op_arg {
	struct fdtable *t;
	int fd;
	int kind;		/* 0 read, 1 write of `n`, 2 poll POLLIN forever */
	size_t n;
	long result;
	unsigned started, finished;	/* atomic */
};

static void op_thread(void *arg)
{
	struct op_arg *a = arg;
	static uint8_t big[70000];	/* writers only read it */
	char small[16];
	__atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
	if (a->kind == 0) {
		a->result = vfs_read(a->t, a->fd, small, sizeof small);
	} else if (a->kind == 1) {
		a->result = vfs_write(a->t, a->fd, big, a->n);
	} else {
		struct lx_pollfd pf = { a->fd, LX_POLLIN, 0 };
		a->result = vfs_poll(a->t, &pf, 1, -1);
		if (a->result == 1)
			a->result = pf.revents;
	}
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

/* Start op in a thread and check that it is still blocked after a while (a liveness
 * wait, not a verdict on time: a thread that returned is a failure whatever the time). */
static struct thread *start_op(struct ktest_ctx *kt, struct op_arg *a)
{
	struct thread *th = NULL;
	a->started = a->finished = 0;
	a->result = 12345;
	if (thread_create(&th, op_thread, a, 0, SCHED_AFFINITY_ANY, "op", 0) != KSYNC_OK) {
		ktest_fail_(kt, __FILE__, __LINE__, "thread_create");
		return NULL;
	}
	WAIT_UNTIL(__atomic_load_n(&a->started, __ATOMIC_ACQUIRE), 5000);
	for (int i = 0; i < 200; i++)
		thread_yield();
	if (__atomic_load_n(&a->finished, __ATOMIC_ACQUIRE))
		ktest_fail_(kt, __FILE__, __LINE__, "the operation should block");
	return th;
}

static long finish_op(struct ktest_ctx *kt, struct thread *th, struct op_arg *a)
{
	if (!th)
		return 99999;
	if (!WAIT_UNTIL(__atomic_load_n(&a->finished, __ATOMIC_ACQUIRE), 10000)) {
		ktest_fail_(kt, __FILE__, __LINE__, "the operation should have returned");
		return 99999;	/* leave it: the case fails */
	}
	thread_join(th);
	return a->result;
}

KTEST(fs_pipe_blocking_wakeups_and_interrupts)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		KT_ASSERT_EQ(fs_init(), 0);
		struct fdtable *t = fdtable_new();
		KT_ASSERT(t != NULL);
		int p[2];
		KT_ASSERT_EQ(vfs_pipe2(t, p, 0), 0);
		struct op_arg a = { .t = t };
		struct thread *th;
		/* a reader waits for data */
		a.fd = p[0], a.kind = 0;
		th = start_op(kt, &a);
		KT_EXPECT_EQ(vfs_write(t, p[1], "abc", 3), 3);
		KT_EXPECT_EQ(finish_op(kt, th, &a), 3);
		/* a writer of more than fits waits for the reader */
		static char sink[65536];
		a.fd = p[1], a.kind = 1, a.n = 70000;
		th = start_op(kt, &a);
		long got = 0, r;
		while (got < 70000 && (r = vfs_read(t, p[0], sink, sizeof sink)) > 0)
			got += r;
		KT_EXPECT_EQ(got, 70000);
		KT_EXPECT_EQ(finish_op(kt, th, &a), 70000);
		/* poll forever, woken by a write */
		a.fd = p[0], a.kind = 2;
		th = start_op(kt, &a);
		KT_EXPECT_EQ(vfs_write(t, p[1], "z", 1), 1);
		KT_EXPECT_EQ(finish_op(kt, th, &a), LX_POLLIN);
		KT_EXPECT_EQ(vfs_read(t, p[0], sink, 1), 1);
		/* signals: a blocked read, a blocked write, a poll return -EINTR */
		fs_test_hooks(test_sig_pending, NULL);
		for (int kind = 0; kind < 3; kind++) {
			__atomic_store_n(&sig_flag, 0, __ATOMIC_RELEASE);
			if (kind == 1)	/* fill the (empty) pipe first: 16 x 4096 */
				for (int i = 0; i < 16; i++)
					KT_EXPECT_EQ(vfs_write(t, p[1], sink, 4096), 4096);
			a.fd = kind == 1 ? p[1] : p[0], a.kind = kind, a.n = 4096;
			th = start_op(kt, &a);
			__atomic_store_n(&sig_target, th, __ATOMIC_RELEASE);
			__atomic_store_n(&sig_flag, 1, __ATOMIC_RELEASE);
			fs_interrupt(th);
			KT_EXPECT_EQ(finish_op(kt, th, &a), -LX_EINTR);
			__atomic_store_n(&sig_flag, 0, __ATOMIC_RELEASE);
			if (kind == 1)	/* drain it */
				KT_EXPECT_EQ(vfs_read(t, p[0], sink, sizeof sink), 65536);
		}
		fs_test_hooks(NULL, NULL);
		/* EOF wakes a blocked reader; losing the reader wakes a blocked writer */
		int q[2];
		KT_ASSERT_EQ(vfs_pipe2(t, q, 0), 0);
		a.fd = q[0], a.kind = 0;
		th = start_op(kt, &a);
		vfs_close(t, q[1]);
		KT_EXPECT_EQ(finish_op(kt, th, &a), 0);
		vfs_close(t, q[0]);
		KT_ASSERT_EQ(vfs_pipe2(t, q, 0), 0);
		a.fd = q[1], a.kind = 1, a.n = 70000;
		th = start_op(kt, &a);
		/* the reader leaves only once the writer has filled the pipe: start_op's yields
		 * do not promise that it wrote (seen in the ASan build beside another suite: the
		 * reader left first, the write found no reader, -EPIPE instead of 65536) */
		int32_t queued = 0;
		KT_EXPECT(WAIT_UNTIL((vfs_ioctl(t, q[0], LX_FIONREAD, &queued), queued == 65536), 10000));
		vfs_close(t, q[0]);
		KT_EXPECT_EQ(finish_op(kt, th, &a), 65536);	/* what fitted before the reader left */
		vfs_close(t, q[1]);
		vfs_close(t, p[0]);
		vfs_close(t, p[1]);
		fdtable_put(t);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* ---- devices and the tty ----------------------------------------------------------------------- */

KTEST(fs_dev_null_zero_urandom)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_dev"))
		goto out;
	struct lx_stat st;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/dev/null", &st, 0), 0);
	KT_EXPECT_EQ(st.st_mode, LX_S_IFCHR | 0666);
	KT_EXPECT_EQ(st.st_rdev, 0x103u);
	KT_EXPECT_EQ(mode_of(&w, "/tmp", 0), LX_S_IFDIR | 01777);
	int n = vfs_openat(T(w), C(w), AT, "/dev/null", LX_O_RDWR, 0);
	int z = vfs_openat(T(w), C(w), AT, "/dev/zero", LX_O_RDONLY, 0);
	int u = vfs_openat(T(w), C(w), AT, "/dev/urandom", LX_O_RDONLY, 0);
	KT_ASSERT(n >= 0 && z >= 0 && u >= 0);
	uint8_t buf[300], buf2[300];
	KT_EXPECT_EQ(vfs_read(T(w), n, buf, sizeof buf), 0);
	KT_EXPECT_EQ(vfs_write(T(w), n, buf, sizeof buf), (long)sizeof buf);
	KT_EXPECT_EQ(vfs_lseek(T(w), n, 100, LX_SEEK_SET), 0);
	memset(buf, 0xaa, sizeof buf);
	KT_EXPECT_EQ(vfs_read(T(w), z, buf, sizeof buf), (long)sizeof buf);
	unsigned nz = 0;
	for (unsigned i = 0; i < sizeof buf; i++)
		nz += buf[i] != 0;
	KT_EXPECT_EQ(nz, 0u);
	KT_EXPECT_EQ(vfs_read(T(w), u, buf, sizeof buf), (long)sizeof buf);
	KT_EXPECT_EQ(vfs_read(T(w), u, buf2, sizeof buf2), (long)sizeof buf2);
	KT_EXPECT(memcmp(buf, buf2, sizeof buf) != 0);	/* 2^-2400 to fail by chance */
	unsigned ones = 0;
	for (unsigned i = 0; i < sizeof buf; i++)
		for (unsigned b = 0; b < 8; b++)	/* no __builtin_popcount: libgcc in the kernel */
			ones += (buf[i] >> b) & 1u;
	KT_EXPECT(ones > 600 && ones < 1800);	/* 2400 bits, about half set */
	int32_t x;
	KT_EXPECT_EQ(vfs_ioctl(T(w), n, LX_TCGETS, &x), -LX_ENOTTY);
	KT_EXPECT_EQ(vfs_ioctl(T(w), 40, LX_TCGETS, &x), -LX_EBADF);
	KT_EXPECT_EQ(vfs_ioctl_size(LX_TCGETS), (int)sizeof(struct lx_termios));
	KT_EXPECT_EQ(vfs_ioctl_size(0x1234), -LX_ENOTTY);
	vfs_close(T(w), n);
	vfs_close(T(w), z);
	vfs_close(T(w), u);
	world_close(kt, &w, "/t_dev");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

static char echo_buf[512];	/* the tty's output in the case below (tty_receive runs here) */
static unsigned echo_len;	/* atomic */
static int last_sig;		/* atomic */

static void capture(const char *s, size_t n)
{
	unsigned at = __atomic_load_n(&echo_len, __ATOMIC_RELAXED);
	for (size_t i = 0; i < n && at < sizeof echo_buf - 1; i++)
		echo_buf[at++] = s[i];
	echo_buf[at] = 0;
	__atomic_store_n(&echo_len, at, __ATOMIC_RELEASE);
}

static void test_tty_sig(int sig) { __atomic_store_n(&last_sig, sig, __ATOMIC_RELEASE); }

static void feed(const char *s)
{
	for (; *s; s++)
		tty_receive(*s);
}

static void echo_reset(void)
{
	__atomic_store_n(&echo_len, 0, __ATOMIC_RELEASE);
	echo_buf[0] = 0;
}

KTEST(fs_tty_line_discipline)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_tty"))
		goto out;
	tty_reset();
	tty_set_output(capture);
	fs_test_hooks(NULL, test_tty_sig);
	echo_reset();
	int fd = vfs_openat(T(w), C(w), AT, "/dev/console", LX_O_RDWR, 0);
	KT_ASSERT(fd >= 0);
	char buf[64];
	struct lx_termios tio;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCGETS, &tio), 0);
	KT_EXPECT(tio.c_lflag & LX_ICANON);
	KT_EXPECT(tio.c_lflag & LX_ECHO);
	KT_EXPECT_EQ(tio.c_cc[LX_VERASE], 0177);
	struct lx_winsize ws;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TIOCGWINSZ, &ws), 0);
	KT_EXPECT_EQ(ws.ws_row, 24);
	KT_EXPECT_EQ(ws.ws_col, 80);
	KT_EXPECT_EQ(vfs_lseek(T(w), fd, 0, LX_SEEK_SET), -LX_ESPIPE);
	/* output: ONLCR */
	KT_EXPECT_EQ(vfs_write(T(w), fd, "hi\n", 3), 3);
	KT_EXPECT(strcmp(echo_buf, "hi\r\n") == 0);
	echo_reset();
	/* erase, with echo */
	feed("abc\177\177d\r");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 3);
	KT_EXPECT(memcmp(buf, "ad\n", 3) == 0);
	KT_EXPECT(strcmp(echo_buf, "abc\b \b\b \bd\r\n") == 0);
	/* kill, then a line read in two pieces; one line per read */
	feed("xyz\025okay\nnext\n");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, 2), 2);
	KT_EXPECT(memcmp(buf, "ok", 2) == 0);
	int32_t avail = 0;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_FIONREAD, &avail), 0);
	KT_EXPECT_EQ(avail, 8);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 3);
	KT_EXPECT(memcmp(buf, "ay\n", 3) == 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 5);
	/* EOF: ^D on an empty line reads 0; after text it ends the line without '\n' */
	feed("part\004\004");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 4);
	KT_EXPECT(memcmp(buf, "part", 4) == 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 0);
	/* ^C: the signal hook, the line flushed, "^C" echoed */
	echo_reset();
	feed("lost\003kept\n");
	KT_EXPECT_EQ(__atomic_load_n(&last_sig, __ATOMIC_ACQUIRE), LX_SIGINT);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 5);
	KT_EXPECT(memcmp(buf, "kept\n", 5) == 0);
	KT_EXPECT(strcmp(echo_buf, "lost^Ckept\r\n") == 0);
	/* ^C drops the complete lines not yet read too (Linux's isig); with NOFLSH the
	 * queue and the line being edited stay */
	feed("queued\nlost\003kept\n");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 5);
	KT_EXPECT(memcmp(buf, "kept\n", 5) == 0);
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCGETS, &tio), 0);
	tio.c_lflag |= LX_NOFLSH;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCSETS, &tio), 0);
	feed("queued\npart\003more\n");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 7);
	KT_EXPECT(memcmp(buf, "queued\n", 7) == 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 9);
	KT_EXPECT(memcmp(buf, "partmore\n", 9) == 0);
	tio.c_lflag &= ~(uint32_t)LX_NOFLSH;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCSETS, &tio), 0);
	/* ^\ and ^Z: SIGQUIT, SIGTSTP, echoed */
	echo_reset();
	feed("\034");
	KT_EXPECT_EQ(__atomic_load_n(&last_sig, __ATOMIC_ACQUIRE), LX_SIGQUIT);
	feed("\032");
	KT_EXPECT_EQ(__atomic_load_n(&last_sig, __ATOMIC_ACQUIRE), LX_SIGTSTP);
	KT_EXPECT(strcmp(echo_buf, "^\\^Z") == 0);
	/* a mode switch keeps what is queued (a shell's line editor reads raw at each
	 * prompt, commands read canonical): into raw mode complete lines and the line being
	 * edited are bytes; into canonical mode the unread bytes are one line */
	feed("one\npar");
	tio.c_lflag &= ~(uint32_t)LX_ICANON;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCSETS, &tio), 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 7);
	KT_EXPECT(memcmp(buf, "one\npar", 7) == 0);
	feed("xy");
	tio.c_lflag |= LX_ICANON;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCSETS, &tio), 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 2);
	KT_EXPECT(memcmp(buf, "xy", 2) == 0);
	feed("z\n");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 2);
	KT_EXPECT(memcmp(buf, "z\n", 2) == 0);
	/* no echo, raw mode: bytes as they come, no editing */
	tio.c_lflag &= ~(uint32_t)(LX_ICANON | LX_ECHO | LX_ISIG);
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCSETS, &tio), 0);
	echo_reset();
	feed("r\177\003");
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, 2), 2);
	KT_EXPECT(buf[0] == 'r' && buf[1] == '\177');
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 1);
	KT_EXPECT_EQ(buf[0], 3);
	KT_EXPECT_EQ(echo_len, 0u);
	/* TCSETSF flushes pending input */
	feed("junk");
	tio.c_lflag |= LX_ICANON | LX_ECHO | LX_ISIG;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TCSETSF, &tio), 0);
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_FIONREAD, &avail), 0);
	KT_EXPECT_EQ(avail, 0);
	/* a non-blocking read with nothing: EAGAIN; the process group */
	int nb = vfs_openat(T(w), C(w), AT, "/dev/tty", LX_O_RDWR | LX_O_NONBLOCK, 0);
	KT_EXPECT_EQ(vfs_read(T(w), nb, buf, sizeof buf), -LX_EAGAIN);
	int32_t pg = 42;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TIOCSPGRP, &pg), 0);
	pg = 0;
	KT_EXPECT_EQ(vfs_ioctl(T(w), nb, LX_TIOCGPGRP, &pg), 0);
	KT_EXPECT_EQ(pg, 42);
	KT_EXPECT_EQ(tty_fg_pgrp(), 42);
	pg = -1;
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, LX_TIOCSPGRP, &pg), -LX_EINVAL);
	KT_EXPECT_EQ(vfs_ioctl(T(w), fd, 0x5499, &pg), -LX_ENOTTY);
	/* a blocked reader is woken by input from another thread; poll sees it */
	struct op_arg a = { .t = T(w), .fd = fd, .kind = 0 };
	struct thread *th = start_op(kt, &a);
	feed("wake\n");
	KT_EXPECT_EQ(finish_op(kt, th, &a), 5);
	a.kind = 2;
	th = start_op(kt, &a);
	feed("p\n");
	KT_EXPECT_EQ(finish_op(kt, th, &a), LX_POLLIN);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 2);
	/* and a signal interrupts it */
	fs_test_hooks(test_sig_pending, test_tty_sig);
	__atomic_store_n(&sig_flag, 0, __ATOMIC_RELEASE);
	a.kind = 0;
	th = start_op(kt, &a);
	__atomic_store_n(&sig_target, th, __ATOMIC_RELEASE);
	__atomic_store_n(&sig_flag, 1, __ATOMIC_RELEASE);
	fs_interrupt(th);
	KT_EXPECT_EQ(finish_op(kt, th, &a), -LX_EINTR);
	__atomic_store_n(&sig_flag, 0, __ATOMIC_RELEASE);
	fs_test_hooks(NULL, NULL);
	tty_set_output(NULL);
	tty_reset();
	vfs_close(T(w), nb);
	vfs_close(T(w), fd);
	world_close(kt, &w, "/t_tty");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- sendfile ---------------------------------------------------------------------------------- */

KTEST(fs_sendfile_file_to_file_and_pipe)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_sendfile"))
		goto out;
	enum { N = 40000 };
	uint8_t *src = kmalloc(N), *dst = kmalloc(N);
	KT_ASSERT(src && dst);
	for (unsigned i = 0; i < N; i++)
		src[i] = pat(i);
	int in = vfs_openat(T(w), C(w), AT, "in", LX_O_RDWR | LX_O_CREAT, 0644);
	KT_EXPECT_EQ(vfs_write(T(w), in, src, N), N);
	int out = vfs_openat(T(w), C(w), AT, "out", LX_O_RDWR | LX_O_CREAT, 0644);
	KT_EXPECT_EQ(vfs_lseek(T(w), in, 0, LX_SEEK_SET), 0);
	KT_EXPECT_EQ(vfs_sendfile(T(w), out, in, NULL, N + 100), N);	/* stops at EOF */
	KT_EXPECT_EQ(vfs_lseek(T(w), in, 0, LX_SEEK_CUR), N);
	KT_EXPECT_EQ(vfs_pread(T(w), out, dst, N, 0), N);
	KT_EXPECT(memcmp(src, dst, N) == 0);
	int64_t off = 1000;
	KT_EXPECT_EQ(vfs_sendfile(T(w), out, in, &off, 10), 10);	/* offset: in's pos stays */
	KT_EXPECT_EQ(off, 1010);
	KT_EXPECT_EQ(vfs_lseek(T(w), in, 0, LX_SEEK_CUR), N);
	int p[2];
	KT_ASSERT_EQ(vfs_pipe2(T(w), p, LX_O_NONBLOCK), 0);
	off = 0;
	KT_EXPECT_EQ(vfs_sendfile(T(w), p[1], in, &off, 100), 100);
	KT_EXPECT_EQ(vfs_read(T(w), p[0], dst, N), 100);
	KT_EXPECT(memcmp(src, dst, 100) == 0);
	KT_EXPECT_EQ(vfs_sendfile(T(w), out, p[0], &off, 1), -LX_ESPIPE);
	KT_EXPECT_EQ(vfs_sendfile(T(w), out, 77, NULL, 1), -LX_EBADF);
	KT_EXPECT_EQ(vfs_sendfile(T(w), p[0], in, NULL, 1), -LX_EBADF);
	off = -1;
	KT_EXPECT_EQ(vfs_sendfile(T(w), out, in, &off, 1), -LX_EINVAL);
	vfs_close(T(w), p[0]);
	vfs_close(T(w), p[1]);
	vfs_close(T(w), in);
	vfs_close(T(w), out);
	kfree(src);
	kfree(dst);
	world_close(kt, &w, "/t_sendfile");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- the name space under concurrency ---------------------------------------------------------- */

struct ns_arg {
	unsigned id;
	unsigned ops;
	long errors;		/* unexpected results */
	unsigned finished;	/* atomic */
};

static void ns_worker(void *arg)
{
	struct ns_arg *a = arg;
	struct fdtable *t = fdtable_new();
	struct fs_ctx *c = fs_ctx_new();
	char mine[32], other[32], tmp[40];
	uint64_t s = 0x51ed + a->id;
	ksnprintf(mine, sizeof mine, "/t_conc/w%u", a->id);
	if (!t || !c || vfs_mkdirat(t, c, AT, mine, 0755) != 0)
		a->errors++;
	for (unsigned i = 0; i < a->ops && t && c; i++) {
		unsigned k = (unsigned)(xs(&s) % 6);
		ksnprintf(other, sizeof other, "/t_conc/shared%u", (unsigned)(xs(&s) % 4));
		ksnprintf(tmp, sizeof tmp, "%s/f%u", mine, (unsigned)(xs(&s) % 8));
		int rc;
		switch (k) {
		case 0:	/* create in my own directory: must work */
			rc = vfs_openat(t, c, AT, tmp, LX_O_WRONLY | LX_O_CREAT, 0644);
			if (rc < 0)
				a->errors++;
			else {
				vfs_write(t, rc, "data", 4);
				vfs_close(t, rc);
			}
			break;
		case 1:	/* link my file to a shared name: EEXIST and ENOENT are races */
			rc = vfs_linkat(t, c, AT, tmp, AT, other, 0);
			if (rc && rc != -LX_EEXIST && rc != -LX_ENOENT)
				a->errors++;
			break;
		case 2:	/* rename a shared name onto another */
			rc = vfs_renameat(t, c, AT, other, AT, "/t_conc/shared0");
			if (rc && rc != -LX_ENOENT)
				a->errors++;
			break;
		case 3:
			rc = vfs_unlinkat(t, c, AT, other, 0);
			if (rc && rc != -LX_ENOENT)
				a->errors++;
			break;
		case 4: {	/* read a shared file through an fd while others unlink it */
			rc = vfs_openat(t, c, AT, other, LX_O_RDONLY, 0);
			if (rc >= 0) {
				char b[8];
				long r = vfs_read(t, rc, b, sizeof b);
				if (r != 4 && r != 0)
					a->errors++;
				vfs_close(t, rc);
			} else if (rc != -LX_ENOENT) {
				a->errors++;
			}
			break;
		}
		default:
			rc = vfs_unlinkat(t, c, AT, tmp, 0);
			if (rc && rc != -LX_ENOENT)
				a->errors++;
		}
	}
	if (t)
		fdtable_put(t);
	if (c)
		fs_ctx_put(c);
	__atomic_store_n(&a->finished, 1, __ATOMIC_RELEASE);
}

KTEST(fs_namespace_concurrent_threads_consistent)
{
	const char *s;
	FOR_EACH_SCHED(s) {
		KT_ASSERT_EQ(sched_start(s), KSYNC_OK);
		struct world w;
		if (!world_open(kt, &w, "/t_conc")) {
			KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
			return;
		}
		enum { NW = 3 };
		struct ns_arg a[NW];
		struct thread *th[NW];
		lockstat_reset();
		for (unsigned i = 0; i < NW; i++) {
			a[i] = (struct ns_arg){ i, 400 * fs_scale(), 0, 0 };
			KT_ASSERT_EQ(thread_create(&th[i], ns_worker, &a[i], 0, SCHED_AFFINITY_ANY, "ns", 0),
				     KSYNC_OK);
		}
		bool fin = true;
		for (unsigned i = 0; i < NW; i++)
			fin &= WAIT_UNTIL(__atomic_load_n(&a[i].finished, __ATOMIC_ACQUIRE),
					  60000ull * fs_scale());
		class_diag(kt, s, "ramfs");
		KT_ASSERT(fin);
		for (unsigned i = 0; i < NW; i++) {
			KT_EXPECT_EQ(thread_join(th[i]), KSYNC_OK);
			KT_EXPECT_EQ(a[i].errors, 0);
		}
		/* consistency: each regular file's nlink equals the names found for its ino */
		struct lx_stat st;
		unsigned checked = 0, badlinks = 0;
		for (unsigned d = 0; d < NW + 1; d++) {
			for (unsigned f = 0; f < 8; f++) {
				char p[40];
				if (d < NW)
					ksnprintf(p, sizeof p, "w%u/f%u", d, f);
				else if (f < 4)
					ksnprintf(p, sizeof p, "shared%u", f);
				else
					continue;
				if (vfs_fstatat(T(w), C(w), AT, p, &st, 0) != 0)
					continue;
				unsigned names = 0;
				for (unsigned d2 = 0; d2 < NW + 1; d2++)
					for (unsigned f2 = 0; f2 < 8; f2++) {
						char q[40];
						struct lx_stat st2;
						if (d2 < NW)
							ksnprintf(q, sizeof q, "w%u/f%u", d2, f2);
						else if (f2 < 4)
							ksnprintf(q, sizeof q, "shared%u", f2);
						else
							continue;
						if (vfs_fstatat(T(w), C(w), AT, q, &st2, 0) == 0 &&
						    st2.st_ino == st.st_ino)
							names++;
					}
				badlinks += names != st.st_nlink;
				checked++;
			}
		}
		KT_EXPECT_EQ(badlinks, 0u);
		kt_diag(kt, "%s: %d threads x %u operations; %u files' link counts checked", s, NW,
			400 * fs_scale(), checked);
		world_close(kt, &w, "/t_conc");
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}

/* ---- the initramfs ------------------------------------------------------------------------------- */

struct cpio_b {
	uint8_t *buf;
	size_t len, cap;
};

static void cb_put(struct cpio_b *b, const void *p, size_t n)
{
	if (n && b->len + n <= b->cap)
		memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void cb_pad(struct cpio_b *b)
{
	static const uint8_t z[4];
	cb_put(b, z, (4 - b->len % 4) % 4);
}

/* Append one newc entry. */
static void cb_entry(struct cpio_b *b, const char *name, uint32_t ino, uint32_t mode,
		     uint32_t nlink, const void *data, size_t size)
{
	char h[111];
	size_t ns = strlen(name) + 1;
	ksnprintf(h, sizeof h, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x", ino, mode,
		  0u, 0u, nlink, 0u, (unsigned)size, 0u, 0u, 0u, 0u, (unsigned)ns, 0u);
	cb_put(b, h, 110);
	cb_put(b, name, ns);
	cb_pad(b);
	cb_put(b, data, size);
	cb_pad(b);
}

static size_t build_good(struct cpio_b *b)
{
	b->len = 0;
	cb_entry(b, ".", 1, LX_S_IFDIR | 0755, 2, NULL, 0);
	cb_entry(b, "t_cpio", 2, LX_S_IFDIR | 0750, 2, NULL, 0);
	cb_entry(b, "t_cpio/bin", 3, LX_S_IFDIR | 0755, 2, NULL, 0);
	cb_entry(b, "t_cpio/bin/prog", 4, LX_S_IFREG | 0755, 1, "#!/bin/sh\necho hi\n", 18);
	cb_entry(b, "t_cpio/bin/sh", 5, LX_S_IFLNK | 0777, 1, "prog", 4);
	/* hard links, GNU cpio style: the data comes with the last name */
	cb_entry(b, "t_cpio/h1", 6, LX_S_IFREG | 0644, 2, NULL, 0);
	cb_entry(b, "./t_cpio/h2", 6, LX_S_IFREG | 0644, 2, "linked", 6);
	cb_entry(b, "t_cpio/fifo", 7, LX_S_IFIFO | 0644, 1, NULL, 0);	/* skipped */
	cb_entry(b, "TRAILER!!!", 0, 0, 1, NULL, 0);
	return b->len;
}

KTEST(fs_cpio_newc_unpacks)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	KT_ASSERT_EQ(fs_init(), 0);
	struct cpio_b b = { kmalloc(4096), 0, 4096 };
	KT_ASSERT(b.buf != NULL);
	size_t len = build_good(&b);
	KT_ASSERT(len <= b.cap);
	char err[200];
	KT_EXPECT_EQ(fs_unpack_cpio_msg(b.buf, len, err, sizeof err), 0);
	KT_EXPECT_EQ(err[0], 0);
	struct world w = { fdtable_new(), fs_ctx_new(), 0 };
	KT_ASSERT(w.t && w.c);
	KT_EXPECT_EQ(mode_of(&w, "/t_cpio", 0), LX_S_IFDIR | 0750);
	KT_EXPECT_EQ(mode_of(&w, "/t_cpio/bin/prog", 0), LX_S_IFREG | 0755);
	KT_EXPECT_EQ(mode_of(&w, "/t_cpio/bin/sh", LX_AT_SYMLINK_NOFOLLOW), LX_S_IFLNK | 0777);
	KT_EXPECT_EQ(mode_of(&w, "/t_cpio/fifo", 0), 0u);
	char buf[64];
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "/t_cpio/bin/sh", buf, sizeof buf), 4);
	int fd = vfs_openat(T(w), C(w), AT, "/t_cpio/bin/sh", LX_O_RDONLY, 0);
	KT_EXPECT_EQ(vfs_read(T(w), fd, buf, sizeof buf), 18);
	KT_EXPECT(memcmp(buf, "#!/bin/sh\necho hi\n", 18) == 0);
	vfs_close(T(w), fd);
	struct lx_stat s1, s2;
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/t_cpio/h1", &s1, 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/t_cpio/h2", &s2, 0), 0);
	KT_EXPECT_EQ(s1.st_ino, s2.st_ino);
	KT_EXPECT_EQ(s1.st_nlink, 2u);
	KT_EXPECT_EQ(s1.st_size, 6);
	/* unpacking again over it is fine: existing names are replaced (Linux's clean_path) */
	KT_EXPECT_EQ(fs_unpack_cpio(b.buf, len), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/t_cpio/h1", &s1, 0), 0);
	KT_EXPECT_EQ(vfs_fstatat(T(w), C(w), AT, "/t_cpio/h2", &s2, 0), 0);
	KT_EXPECT_EQ(s1.st_ino, s2.st_ino);
	KT_EXPECT_EQ(s1.st_nlink, 2u);
	KT_EXPECT_EQ(s1.st_size, 6);
	KT_EXPECT_EQ(vfs_readlinkat(T(w), C(w), AT, "/t_cpio/bin/sh", buf, sizeof buf), 4);
	rm_tree(&w, "/t_cpio");
	fdtable_put(w.t);
	fs_ctx_put(w.c);
	kfree(b.buf);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* Does err contain want? */
static bool has(const char *err, const char *want)
{
	size_t n = strlen(want);
	for (; *err; err++)
		if (strncmp(err, want, n) == 0)
			return true;
	return false;
}

KTEST(fs_cpio_corrupt_archives_refused_with_reason)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	KT_ASSERT_EQ(fs_init(), 0);
	struct cpio_b b = { kmalloc(4096), 0, 4096 };
	uint8_t *bad = kmalloc(4096);
	KT_ASSERT(b.buf && bad);
	char err[200];
	struct world w = { fdtable_new(), fs_ctx_new(), 0 };
	KT_ASSERT(w.t && w.c);
	size_t len = build_good(&b);
	/* the first entry alone is "." (110 + 2 -> 112, no data) */
	struct { const char *what; size_t cut; size_t at; char ch; const char *want; } cases[] = {
		{ "bad magic", len, 0, 'X', "bad magic 'X70701' at offset 0" },
		{ "bad magic later", len, 112 + 5, '7', "bad magic '070707' at offset 112" },
		{ "non-hex digit", len, 6 + 8 + 3, 'g', "non-hex digit in field mode at offset 17" },
		{ "non-hex namesize", len, 112 + 6 + 11 * 8, 'z', "non-hex digit in field namesize at offset 206" },
		{ "truncated header", 50, 0, 0, "truncated header at offset 0" },
		{ "truncated 2nd header", 112 + 60, 0, 0, "truncated header at offset 112" },
		{ "no trailer", 112, 0, 0, "no TRAILER!!! entry: the archive ends at offset 112" },
		{ "empty", 0, 0, 0, "no TRAILER!!!" },
		{ "name past the end", 112 + 110 + 3, 0, 0, "runs past the end of the archive" },
	};
	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		memcpy(bad, b.buf, len);
		if (cases[i].ch)
			bad[cases[i].at] = (uint8_t)cases[i].ch;
		err[0] = 0;
		int rc = fs_unpack_cpio_msg(bad, cases[i].cut, err, sizeof err);
		KT_EXPECT_EQ(rc, -LX_EINVAL);
		if (!has(err, cases[i].want))
			kt_diag(kt, "%s: got '%s', want '%s'", cases[i].what, err, cases[i].want);
		KT_EXPECT(has(err, cases[i].want));
		rm_tree(&w, "/t_cpio");
	}
	/* data truncated: the file prog's data cut short */
	b.len = 0;
	cb_entry(&b, "t_cpio", 2, LX_S_IFDIR | 0750, 2, NULL, 0);
	size_t at = b.len;
	cb_entry(&b, "t_cpio/x", 4, LX_S_IFREG | 0644, 1, "0123456789abcdef", 16);
	KT_EXPECT_EQ(fs_unpack_cpio_msg(b.buf, b.len - 10, err, sizeof err), -LX_EINVAL);
	char want[120];
	ksnprintf(want, sizeof want, "data of 't_cpio/x' (16 bytes at offset %lu) is truncated",
		  (unsigned long)(at + 120));
	KT_EXPECT(has(err, want));
	/* a name size larger than the archive; a zero name size; no NUL at its end */
	b.len = 0;
	cb_entry(&b, "abc", 9, LX_S_IFREG | 0644, 1, NULL, 0);
	memcpy(bad, b.buf, b.len);
	memcpy(bad + 6 + 11 * 8, "00000fff", 8);
	KT_EXPECT_EQ(fs_unpack_cpio_msg(bad, b.len, err, sizeof err), -LX_EINVAL);
	KT_EXPECT(has(err, "name of 4095 bytes at offset 110 runs past the end"));
	memcpy(bad + 6 + 11 * 8, "00000000", 8);
	KT_EXPECT_EQ(fs_unpack_cpio_msg(bad, b.len, err, sizeof err), -LX_EINVAL);
	KT_EXPECT(has(err, "name size 0 at offset 0"));
	memcpy(bad + 6 + 11 * 8, "00000003", 8);
	KT_EXPECT_EQ(fs_unpack_cpio_msg(bad, b.len, err, sizeof err), -LX_EINVAL);
	KT_EXPECT(has(err, "not one NUL-terminated string"));
	/* a symlink without a target */
	b.len = 0;
	cb_entry(&b, "t_cpio_l", 9, LX_S_IFLNK | 0777, 1, NULL, 0);
	KT_EXPECT_EQ(fs_unpack_cpio_msg(b.buf, b.len, err, sizeof err), -LX_EINVAL);
	KT_EXPECT(has(err, "symbolic link 't_cpio_l' at offset 0"));
	/* garbage of every length never crashes and is refused */
	uint64_t s = 99;
	for (unsigned trial = 0; trial < 40; trial++) {
		size_t n = (size_t)(xs(&s) % 600);
		for (size_t i = 0; i < n; i++)
			bad[i] = (uint8_t)xs(&s);
		if (trial % 2 && n >= 6)
			memcpy(bad, "070701", 6);	/* a good magic, garbage after it */
		KT_EXPECT_EQ(fs_unpack_cpio_msg(bad, n, err, sizeof err), -LX_EINVAL);
	}
	/* NULL */
	KT_EXPECT_EQ(fs_unpack_cpio_msg(NULL, 10, err, sizeof err), -LX_EINVAL);
	rm_tree(&w, "/t_cpio");
	fdtable_put(w.t);
	fs_ctx_put(w.c);
	kfree(b.buf);
	kfree(bad);
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}

/* ---- the differential script (kernel/tests/fs_diff_ops.inc; tests/test_fs_diff.py) -------------
 * Each operation's result as one diagnostic line "fsdiff <n> <op> => <result>"; the pytest
 * runs the same script with the host's system calls and compares the transcripts. This
 * case itself checks only that every line is understood. */
static const char *const diff_ops[] = {
#include "fs_diff_ops.inc"
};

struct reg {
	char name[8];
	int fd;
};

static int *reg_fd(struct reg *r, unsigned nr, const char *name, bool make)
{
	for (unsigned i = 0; i < nr; i++)
		if (r[i].name[0] && strcmp(r[i].name, name) == 0)
			return &r[i].fd;
	if (!make)
		return NULL;
	for (unsigned i = 0; i < nr; i++)
		if (!r[i].name[0]) {
			size_t n = strlen(name);
			if (n >= sizeof r[i].name)
				return NULL;
			memcpy(r[i].name, name, n + 1);
			r[i].fd = -1;
			return &r[i].fd;
		}
	return NULL;
}

static long num(const char *s)
{
	long v = 0, sign = 1;
	if (*s == '-') {
		sign = -1;
		s++;
	}
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (*s - '0');
	return sign * v;
}

static unsigned octal(const char *s)
{
	unsigned v = 0;
	for (; *s >= '0' && *s <= '7'; s++)
		v = v * 8 + (unsigned)(*s - '0');
	return v;
}

static int oflags(const char *s)
{
	static const struct { const char *n; int v; } names[] = {
		{ "RDONLY", LX_O_RDONLY }, { "WRONLY", LX_O_WRONLY }, { "RDWR", LX_O_RDWR },
		{ "CREAT", LX_O_CREAT }, { "EXCL", LX_O_EXCL }, { "TRUNC", LX_O_TRUNC },
		{ "APPEND", LX_O_APPEND }, { "DIRECTORY", LX_O_DIRECTORY },
		{ "NOFOLLOW", LX_O_NOFOLLOW }, { "NONBLOCK", LX_O_NONBLOCK },
		{ "CLOEXEC", LX_O_CLOEXEC },
	};
	int v = 0;
	while (*s) {
		const char *e = s;
		while (*e && *e != '|')
			e++;
		for (unsigned i = 0; i < ARRAY_SIZE(names); i++)
			if (strlen(names[i].n) == (size_t)(e - s) && !strncmp(names[i].n, s, (size_t)(e - s)))
				v |= names[i].v;
		s = *e ? e + 1 : e;
	}
	return v;
}

/* The transcript's spelling of data: printable ASCII as is (but '\'), else \xNN. */
static void esc(char *out, size_t n, const uint8_t *d, long len)
{
	size_t k = 0;
	for (long i = 0; i < len && k + 5 < n; i++) {
		if (d[i] >= 32 && d[i] < 127 && d[i] != '\\')
			out[k++] = (char)d[i];
		else
			k += (size_t)ksnprintf(out + k, n - k, "\\x%02x", d[i]);
	}
	out[k] = 0;
}

static void stat_str(char *out, size_t n, const struct lx_stat *st)
{
	const char *ty;
	bool size = false;
	switch (st->st_mode & LX_S_IFMT) {
	case LX_S_IFREG: ty = "reg"; size = true; break;
	case LX_S_IFDIR: ty = "dir"; break;
	case LX_S_IFLNK: ty = "lnk"; size = true; break;
	case LX_S_IFIFO: ty = "fifo"; break;
	case LX_S_IFCHR: ty = "chr"; break;
	default: ty = "?";
	}
	char mode[5];	/* %04o by hand: ksnprintf has no %o */
	for (int i = 0; i < 4; i++)
		mode[i] = (char)('0' + ((st->st_mode & 07777) >> (3 * (3 - i)) & 7));
	mode[4] = 0;
	if (size)
		ksnprintf(out, n, "%s %s nlink=%lu size=%ld", ty, mode, (unsigned long)st->st_nlink,
			  (long)st->st_size);
	else
		ksnprintf(out, n, "%s %s nlink=%lu", ty, mode, (unsigned long)st->st_nlink);
}

/* Names of directory p, sorted, comma-separated ("." and ".." left out). */
static long ls_str(struct world *w, const char *p, char *out, size_t n)
{
	int fd = vfs_openat(w->t, w->c, AT, p, LX_O_RDONLY | LX_O_DIRECTORY, 0);
	if (fd < 0)
		return fd;
	char names[64][40];
	unsigned nn = 0;
	static char buf[2048];
	long r;
	while ((r = vfs_getdents64(w->t, fd, buf, sizeof buf)) > 0)
		for (long o = 0; o < r;) {
			struct lx_dirent64 *d = (struct lx_dirent64 *)(void *)(buf + o);
			o += d->d_reclen;
			if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") && nn < 64)
				ksnprintf(names[nn++], sizeof names[0], "%s", d->d_name);
		}
	vfs_close(w->t, fd);
	for (unsigned i = 1; i < nn; i++)	/* insertion sort, byte order (as Python's) */
		for (unsigned j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
			char tmp[40];
			memcpy(tmp, names[j], sizeof tmp);
			memcpy(names[j], names[j - 1], sizeof tmp);
			memcpy(names[j - 1], tmp, sizeof tmp);
		}
	size_t k = 0;
	out[0] = 0;
	for (unsigned i = 0; i < nn; i++)
		k += (size_t)ksnprintf(out + k, n - k, "%s%s", i ? "," : "", names[i]);
	return r < 0 ? r : 0;
}

/* Run one operation; its result into res. False if the line is not understood. */
static bool diff_op(struct world *w, struct reg *regs, unsigned nr, const char *line, char *res,
		    size_t rn)
{
	char tok[6][48];
	unsigned nt = 0;
	for (const char *p = line; *p && nt < 6;) {
		size_t k = 0;
		while (*p && *p != ' ' && k < sizeof tok[0] - 1)
			tok[nt][k++] = *p++;
		tok[nt++][k] = 0;
		while (*p == ' ')
			p++;
	}
	const char *op = tok[0];
	long rc = 0;
	bool printed = false;
	int *fd = nt > 1 ? reg_fd(regs, nr, tok[1], false) : NULL;
	int f = fd ? *fd : 1000;	/* an unknown register: a closed descriptor */
	static uint8_t data[256];
	char text[48];
	struct lx_stat st;
	if (!strcmp(op, "mkdir") && nt == 3)
		rc = vfs_mkdirat(w->t, w->c, AT, tok[1], octal(tok[2]));
	else if (!strcmp(op, "rmdir") && nt == 2)
		rc = vfs_unlinkat(w->t, w->c, AT, tok[1], LX_AT_REMOVEDIR);
	else if (!strcmp(op, "unlink") && nt == 2)
		rc = vfs_unlinkat(w->t, w->c, AT, tok[1], 0);
	else if (!strcmp(op, "open") && nt == 5) {
		rc = vfs_openat(w->t, w->c, AT, tok[2], oflags(tok[3]), octal(tok[4]));
		if (rc >= 0) {
			*reg_fd(regs, nr, tok[1], true) = (int)rc;
			ksnprintf(res, rn, "fd");
			printed = true;
		}
	} else if (!strcmp(op, "close") && nt == 2) {
		rc = vfs_close(w->t, f);
		if (fd)
			*fd = -1;
	} else if ((!strcmp(op, "write") || !strcmp(op, "pwrite")) && nt >= 3) {
		size_t k = 0;
		for (const char *p = tok[2]; *p; p++)
			text[k++] = *p == '_' ? ' ' : *p == '~' ? '\n' : *p;
		rc = op[0] == 'p' ? vfs_pwrite(w->t, f, text, k, num(tok[3])) : vfs_write(w->t, f, text, k);
	} else if ((!strcmp(op, "read") || !strcmp(op, "pread")) && nt >= 3) {
		size_t n = (size_t)num(tok[2]);
		rc = op[0] == 'p' ? vfs_pread(w->t, f, data, n, num(tok[3])) : vfs_read(w->t, f, data, n);
		if (rc >= 0) {
			char e[200];
			esc(e, sizeof e, data, rc);
			ksnprintf(res, rn, "%ld:%s", rc, e);
			printed = true;
		}
	} else if (!strcmp(op, "lseek") && nt == 4)
		rc = vfs_lseek(w->t, f, num(tok[2]), !strcmp(tok[3], "SET") ? LX_SEEK_SET
					   : !strcmp(tok[3], "CUR") ? LX_SEEK_CUR : LX_SEEK_END);
	else if (!strcmp(op, "ftruncate") && nt == 3)
		rc = vfs_ftruncate(w->t, f, num(tok[2]));
	else if ((!strcmp(op, "stat") || !strcmp(op, "lstat") || !strcmp(op, "fstat")) && nt == 2) {
		rc = op[0] == 'f' ? vfs_fstat(w->t, f, &st)
				  : vfs_fstatat(w->t, w->c, AT, tok[1], &st,
						op[0] == 'l' ? LX_AT_SYMLINK_NOFOLLOW : 0);
		if (rc == 0) {
			stat_str(res, rn, &st);
			printed = true;
		}
	} else if (!strcmp(op, "rename") && nt == 3)
		rc = vfs_renameat(w->t, w->c, AT, tok[1], AT, tok[2]);
	else if (!strcmp(op, "link") && nt == 3)
		rc = vfs_linkat(w->t, w->c, AT, tok[1], AT, tok[2], 0);
	else if (!strcmp(op, "symlink") && nt == 3)
		rc = vfs_symlinkat(w->t, w->c, tok[1], AT, tok[2]);
	else if (!strcmp(op, "readlink") && nt == 2) {
		rc = vfs_readlinkat(w->t, w->c, AT, tok[1], (char *)data, sizeof data);
		if (rc >= 0) {
			esc(res, rn, data, rc);
			printed = true;
		}
	} else if (!strcmp(op, "chmod") && nt == 3)
		rc = vfs_fchmodat(w->t, w->c, AT, tok[1], octal(tok[2]));
	else if (!strcmp(op, "ls") && nt == 2) {
		rc = ls_str(w, tok[1], res, rn);
		printed = rc == 0;
	} else if (!strcmp(op, "getfl") && nt == 2) {
		rc = vfs_fcntl(w->t, f, LX_F_GETFL, 0);
		if (rc >= 0) {
			ksnprintf(res, rn, "0x%lx", rc);
			printed = true;
		}
	} else if (!strcmp(op, "dup") && nt == 3) {
		rc = vfs_dup(w->t, f);
		if (rc >= 0) {
			*reg_fd(regs, nr, tok[2], true) = (int)rc;
			ksnprintf(res, rn, "fd");
			printed = true;
		}
	} else if (!strcmp(op, "dup2") && nt == 3) {
		int *to = reg_fd(regs, nr, tok[2], false);
		rc = vfs_dup2(w->t, f, to ? *to : 1001);
		if (rc >= 0)
			rc = 0;
	} else if (!strcmp(op, "openat") && nt == 6) {
		rc = vfs_openat(w->t, w->c, f, tok[3], oflags(tok[4]), octal(tok[5]));
		if (rc >= 0) {
			*reg_fd(regs, nr, tok[2], true) = (int)rc;
			ksnprintf(res, rn, "fd");
			printed = true;
		}
	} else if (!strcmp(op, "statat") && nt == 3) {
		rc = vfs_fstatat(w->t, w->c, f, tok[2], &st, LX_AT_SYMLINK_NOFOLLOW);
		if (rc == 0) {
			stat_str(res, rn, &st);
			printed = true;
		}
	} else if (!strcmp(op, "mkdirat") && nt == 4)
		rc = vfs_mkdirat(w->t, w->c, f, tok[2], octal(tok[3]));
	else if (!strcmp(op, "unlinkat") && nt == 4)
		rc = vfs_unlinkat(w->t, w->c, f, tok[2], !strcmp(tok[3], "REMOVEDIR") ? LX_AT_REMOVEDIR : 0);
	else if (!strcmp(op, "setfl") && nt == 3)
		rc = vfs_fcntl(w->t, f, LX_F_SETFL, (unsigned long)oflags(tok[2]));
	else if (!strcmp(op, "getfd") && nt == 2)
		rc = vfs_fcntl(w->t, f, LX_F_GETFD, 0);
	else if (!strcmp(op, "chdir") && nt == 2)
		rc = vfs_chdir(w->t, w->c, tok[1]);
	else if (!strcmp(op, "getcwd") && nt == 1) {
		char cwd[128];
		rc = vfs_getcwd(w->c, cwd, sizeof cwd);
		if (rc > 0) {	/* relative to the script's root, /t_diff */
			ksnprintf(res, rn, "ROOT%s", cwd + 7);
			printed = true;
		}
	} else if (!strcmp(op, "pipe") && nt == 4) {
		int p[2];
		rc = vfs_pipe2(w->t, p, oflags(tok[3]));
		if (rc == 0) {
			*reg_fd(regs, nr, tok[1], true) = p[0];
			*reg_fd(regs, nr, tok[2], true) = p[1];
		}
	} else
		return false;
	if (!printed) {
		if (rc < 0)
			ksnprintf(res, rn, "E%ld", -rc);
		else if (rc == 0)
			ksnprintf(res, rn, "ok");
		else
			ksnprintf(res, rn, "%ld", rc);
	}
	return true;
}

KTEST(fs_diff_script)
{
	KT_ASSERT_EQ(sched_start("lockfree"), KSYNC_OK);
	struct world w;
	if (!world_open(kt, &w, "/t_diff"))
		goto out;
	struct reg regs[24];
	memset(regs, 0, sizeof regs);
	char res[240];
	for (unsigned i = 0; i < ARRAY_SIZE(diff_ops); i++) {
		bool ok = diff_op(&w, regs, ARRAY_SIZE(regs), diff_ops[i], res, sizeof res);
		if (!ok)
			kt_diag(kt, "fsdiff: line not understood: %s", diff_ops[i]);
		KT_EXPECT(ok);
		kt_diag(kt, "fsdiff %u %s => %s", i, diff_ops[i], res);
	}
	for (unsigned i = 0; i < ARRAY_SIZE(regs); i++)
		if (regs[i].name[0] && regs[i].fd >= 0)
			vfs_close(w.t, regs[i].fd);
	world_close(kt, &w, "/t_diff");
out:
	KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
}
