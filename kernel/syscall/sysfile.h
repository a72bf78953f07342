/* sysfile.h - the file system calls' handlers (sysfile.c), portable: each takes the
 * descriptor table and fs context to work on and the call's six arguments as the user
 * passed them (user pointers, reached through arch_if.h's user copies); returns the
 * call's result or a negative Linux errno (-EINTR where kernel/fs was interrupted: the
 * caller turns it into its restart code). */
#ifndef KSYNC_SYSCALL_SYSFILE_H
#define KSYNC_SYSCALL_SYSFILE_H

#include <stdint.h>

struct fdtable;
struct fs_ctx;
/* The caller's: constant during a call (a process's own thread holds its pointers). */
struct sysf_ctx {
	struct fdtable *fdt;
	struct fs_ctx *fs;
};

long sysf_read(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_write(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_pread64(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_pwrite64(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_writev(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_readv(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_sendfile(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_close(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_dup(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_dup2(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_dup3(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_fcntl(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_ioctl(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_lseek(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_ftruncate(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_pipe2(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_pipe(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_poll(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_openat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_open(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_newfstatat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_stat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_lstat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_fstat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_getdents64(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_mkdirat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_mkdir(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_unlinkat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_unlink(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_rmdir(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_renameat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_rename(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_linkat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_link(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_symlinkat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_symlink(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_readlinkat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_readlink(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_fchmodat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_utimensat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_chmod(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_fchmod(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_faccessat2(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_faccessat(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_access(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_getcwd(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_chdir(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_fchdir(const struct sysf_ctx *x, const uint64_t a[6]);
long sysf_umask(const struct sysf_ctx *x, const uint64_t a[6]);
/* A user path into a kmalloc'd buffer of LX_PATH_MAX bytes (kfree it); *out NULL on
 * error: -EFAULT, -ENAMETOOLONG (no NUL within PATH_MAX), -ENOENT (""). */
long sysf_get_path(uint64_t u, char **out);
/* The access mode of an open descriptor (LX_O_RDONLY/WRONLY/RDWR), or -EBADF. */
long sysf_acc_mode(const struct sysf_ctx *x, int fd);
/* poll's work without the restart code: ufds, nfds, a timeout in ms (-1: none) */
long sysf_do_poll(const struct sysf_ctx *x, uint64_t ufds, uint64_t n, int timeout_ms);

#endif
