/* the error paths of the file calls (issue 24): EBADF, ENOENT, EEXIST, ENOTDIR, EISDIR,
 * ENOTEMPTY, EFAULT on a bad buffer, ENAMETOOLONG; the raw calls' -errno is printed.
 * Usage: fs_errors CASE. */
#include "ut.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/mman.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))

static void c_ebadf(void)
{
	char b[4];
	RAW("read 99", SYS_read, 99, (long)b, 4, 0, 0, 0);
	RAW("write -1", SYS_write, -1, (long)b, 4, 0, 0, 0);
	RAW("close 99", SYS_close, 99, 0, 0, 0, 0, 0);
	RAW("lseek 99", SYS_lseek, 99, 0, 0, 0, 0, 0);
	RAW("fstat 99", SYS_fstat, 99, (long)b, 0, 0, 0, 0);
	RAW("dup 99", SYS_dup, 99, 0, 0, 0, 0, 0);
	RAW("ioctl 99", SYS_ioctl, 99, 0x5401, (long)b, 0, 0, 0);
	RAW("ftruncate 99", SYS_ftruncate, 99, 0, 0, 0, 0, 0);
	RAW("fchdir 99", SYS_fchdir, 99, 0, 0, 0, 0, 0);
	RAW("fchmod 99", SYS_fchmod, 99, 0644, 0, 0, 0, 0);
	RAW("readv 99", SYS_readv, 99, 0, 0, 0, 0, 0);
	RAW("writev 99", SYS_writev, 99, 0, 0, 0, 0, 0);
	RAW("read 0 bytes 99", SYS_read, 99, (long)b, 0, 0, 0, 0);
	RAW("pread 99", SYS_pread64, 99, (long)b, 1, 0, 0, 0);
	RAW("openat dirfd 99", SYS_openat, 99, (long)"rel", O_RDONLY, 0, 0, 0);
	RAW("fcntl 99", SYS_fcntl, 99, F_GETFD, 0, 0, 0, 0);
	int fd = open("fe_badf", O_CREAT | O_WRONLY, 0644);
	close(fd);
	RAW("write closed", SYS_write, fd, (long)"x", 1, 0, 0, 0);
	unlink("fe_badf");
}

static void c_enoent(void)
{
	struct stat st;
	RAW("open", SYS_open, (long)"fe_missing", O_RDONLY, 0, 0, 0, 0);
	RAW("stat", SYS_stat, (long)"fe_missing", (long)&st, 0, 0, 0, 0);
	RAW("stat in missing dir", SYS_stat, (long)"fe_nodir/x", (long)&st, 0, 0, 0, 0);
	RAW("unlink", SYS_unlink, (long)"fe_missing", 0, 0, 0, 0, 0);
	RAW("rmdir", SYS_rmdir, (long)"fe_missing", 0, 0, 0, 0, 0);
	RAW("chdir", SYS_chdir, (long)"fe_missing", 0, 0, 0, 0, 0);
	RAW("open empty", SYS_open, (long)"", O_RDONLY, 0, 0, 0, 0);
	RAW("stat empty", SYS_stat, (long)"", (long)&st, 0, 0, 0, 0);
	RAW("readlink", SYS_readlink, (long)"fe_missing", (long)&st, 10, 0, 0, 0);
	RAW("execve", SYS_execve, (long)"fe_missing", 0, 0, 0, 0, 0);
	RAW("creat in missing dir", SYS_open, (long)"fe_nodir/f", O_CREAT | O_WRONLY, 0644, 0, 0, 0);
}

static void c_eexist(void)
{
	mkdir("fe_ex", 0755);
	close(open("fe_exf", O_CREAT | O_WRONLY, 0644));
	RAW("mkdir existing dir", SYS_mkdir, (long)"fe_ex", 0755, 0, 0, 0, 0);
	RAW("mkdir existing file", SYS_mkdir, (long)"fe_exf", 0755, 0, 0, 0, 0);
	RAW("O_EXCL", SYS_open, (long)"fe_exf", O_CREAT | O_EXCL | O_WRONLY, 0644, 0, 0, 0);
	RAW("O_EXCL dir", SYS_open, (long)"fe_ex", O_CREAT | O_EXCL | O_RDONLY, 0644, 0, 0, 0);
	RAW("symlink over", SYS_symlink, (long)"t", (long)"fe_exf", 0, 0, 0, 0);
	RAW("link over", SYS_link, (long)"fe_exf", (long)"fe_ex", 0, 0, 0, 0);
	RAW("mkdir root", SYS_mkdir, (long)"/", 0755, 0, 0, 0, 0);
	unlink("fe_exf");
	rmdir("fe_ex");
}

static void c_enotdir(void)
{
	close(open("fe_nd", O_CREAT | O_WRONLY, 0644));
	struct stat st;
	RAW("open file/x", SYS_open, (long)"fe_nd/x", O_RDONLY, 0, 0, 0, 0);
	RAW("stat file/x", SYS_stat, (long)"fe_nd/x", (long)&st, 0, 0, 0, 0);
	RAW("mkdir file/x", SYS_mkdir, (long)"fe_nd/x", 0755, 0, 0, 0, 0);
	RAW("rmdir file", SYS_rmdir, (long)"fe_nd", 0, 0, 0, 0, 0);
	RAW("chdir file", SYS_chdir, (long)"fe_nd", 0, 0, 0, 0, 0);
	RAW("O_DIRECTORY file", SYS_open, (long)"fe_nd", O_RDONLY | O_DIRECTORY, 0, 0, 0, 0);
	RAW("stat file/", SYS_stat, (long)"fe_nd/", (long)&st, 0, 0, 0, 0);
	int fd = open("fe_nd", O_RDONLY);
	RAW("fchdir file", SYS_fchdir, fd, 0, 0, 0, 0, 0);
	RAW("openat file dirfd", SYS_openat, fd, (long)"x", O_RDONLY, 0, 0, 0);
	close(fd);
	unlink("fe_nd");
}

static void c_eisdir(void)
{
	mkdir("fe_isd", 0755);
	RAW("open dir O_WRONLY", SYS_open, (long)"fe_isd", O_WRONLY, 0, 0, 0, 0);
	RAW("open dir O_RDWR", SYS_open, (long)"fe_isd", O_RDWR, 0, 0, 0, 0);
	RAW("open dir O_CREAT", SYS_open, (long)"fe_isd", O_CREAT | O_WRONLY, 0644, 0, 0, 0);
	int fd = open("fe_isd", O_RDONLY);
	char b[8];
	RAW("read dir", SYS_read, fd, (long)b, 8, 0, 0, 0);
	RAW("pread dir", SYS_pread64, fd, (long)b, 8, 0, 0, 0);
	RAW("write dir fd", SYS_write, fd, (long)b, 8, 0, 0, 0);
	RAW("ftruncate dir", SYS_ftruncate, fd, 0, 0, 0, 0, 0);
	close(fd);
	RAW("unlink dir", SYS_unlink, (long)"fe_isd", 0, 0, 0, 0, 0);
	close(open("fe_isf", O_CREAT | O_WRONLY, 0644));
	RAW("rename file over dir", SYS_rename, (long)"fe_isf", (long)"fe_isd", 0, 0, 0, 0);
	unlink("fe_isf");
	rmdir("fe_isd");
}

static void c_enotempty(void)
{
	mkdir("fe_ne", 0755);
	mkdir("fe_ne/sub", 0755);
	mkdir("fe_ne2", 0755);
	close(open("fe_ne2/f", O_CREAT | O_WRONLY, 0644));
	RAW("rmdir with subdir", SYS_rmdir, (long)"fe_ne", 0, 0, 0, 0, 0);
	RAW("rmdir with file", SYS_rmdir, (long)"fe_ne2", 0, 0, 0, 0, 0);
	RAW("rename over non-empty", SYS_rename, (long)"fe_ne", (long)"fe_ne2", 0, 0, 0, 0);
	RAW("unlinkat REMOVEDIR", SYS_unlinkat, AT_FDCWD, (long)"fe_ne", AT_REMOVEDIR, 0, 0, 0);
	rmdir("fe_ne/sub");
	RAW("rmdir now empty", SYS_rmdir, (long)"fe_ne", 0, 0, 0, 0, 0);
	unlink("fe_ne2/f");
	rmdir("fe_ne2");
}

static void c_efault(void)
{
	char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m + 4096, 4096);	/* a hole */
	mprotect(m + 2 * 4096, 4096, PROT_READ);
	int fd = open("fe_fault", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123456789", 10);
	lseek(fd, 0, SEEK_SET);
	RAW("read into hole", SYS_read, fd, (long)(m + 4096), 10, 0, 0, 0);
	printf("pos after %ld\n", (long)lseek(fd, 0, SEEK_CUR));
	RAW("read into read-only", SYS_read, fd, (long)(m + 2 * 4096), 10, 0, 0, 0);
	printf("pos after %ld\n", (long)lseek(fd, 0, SEEK_CUR));
	RAW("read into kernel", SYS_read, fd, (long)0xffffffff81000000ul, 10, 0, 0, 0);
	RAW("pread into hole", SYS_pread64, fd, (long)(m + 4096), 10, 0, 0, 0);
	RAW("write from hole", SYS_write, fd, (long)(m + 4096), 10, 0, 0, 0);
	RAW("pwrite from hole", SYS_pwrite64, fd, (long)(m + 4096), 10, 0, 0, 0);
	struct stat st;
	fstat(fd, &st);
	printf("size still %lld\n", (long long)st.st_size);
	RAW("fstat into hole", SYS_fstat, fd, (long)(m + 4096), 0, 0, 0, 0);
	RAW("stat path in hole", SYS_stat, (long)(m + 4096), (long)&st, 0, 0, 0, 0);
	RAW("stat into read-only", SYS_stat, (long)"fe_fault", (long)(m + 2 * 4096), 0, 0, 0, 0);
	RAW("mkdir path in hole", SYS_mkdir, (long)(m + 4096), 0755, 0, 0, 0, 0);
	RAW("pipe into hole", SYS_pipe, (long)(m + 4096), 0, 0, 0, 0, 0);
	RAW("getcwd into hole", SYS_getcwd, (long)(m + 4096), 100, 0, 0, 0, 0);
	symlink("somewhere", "fe_flink");
	RAW("readlink into hole", SYS_readlink, (long)"fe_flink", (long)(m + 4096), 10, 0, 0, 0);
	unlink("fe_flink");
	RAW("rename bad new", SYS_rename, (long)"fe_fault", (long)(m + 4096), 0, 0, 0, 0);
	RAW("poll bad fds", SYS_poll, (long)(m + 4096), 1, 0, 0, 0, 0);
	RAW("ioctl TCGETS bad arg", SYS_ioctl, 1, 0x5401, (long)(m + 4096), 0, 0, 0);
	/* a path whose NUL is just past the end of a mapping */
	char *end = m + 4096 - 3;
	memcpy(end, "abc", 3);
	RAW("path runs into hole", SYS_open, (long)end, O_RDONLY, 0, 0, 0, 0);
	close(fd);
	unlink("fe_fault");
	printf("still alive\n");
}

static void c_toolong(void)
{
	static char p[5000];
	memset(p, 'a', sizeof p - 1);
	RAW("open 4999", SYS_open, (long)p, O_RDONLY, 0, 0, 0, 0);
	RAW("mkdir 4999", SYS_mkdir, (long)p, 0755, 0, 0, 0, 0);
	p[4096] = 0;
	RAW("open 4096", SYS_open, (long)p, O_RDONLY, 0, 0, 0, 0);
	p[300] = 0;
	RAW("open component 300", SYS_open, (long)p, O_CREAT | O_WRONLY, 0644, 0, 0, 0);
	RAW("stat component 300", SYS_stat, (long)p, (long)p + 400, 0, 0, 0, 0);
	p[255] = 0;
	long fd = rawsys(SYS_open, (long)p, O_CREAT | O_WRONLY, 0644, 0, 0, 0);
	printf("component 255 ok=%d\n", fd >= 0);
	close((int)fd);
	RAW("unlink 255", SYS_unlink, (long)p, 0, 0, 0, 0, 0);
	p[256] = 0;
	p[255] = 'a';
	RAW("unlink 256", SYS_unlink, (long)p, 0, 0, 0, 0, 0);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"ebadf", c_ebadf}, {"enoent", c_enoent}, {"eexist", c_eexist},
		{"enotdir", c_enotdir}, {"eisdir", c_eisdir}, {"enotempty", c_enotempty},
		{"efault", c_efault}, {"toolong", c_toolong},
	};
	umask(022);
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
