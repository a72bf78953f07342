/* regular files through kernel/fs (issue 24): create, write, read, lseek, pread/pwrite,
 * ftruncate, O_APPEND, sendfile, stat fields both kernels agree on (type, mode, size,
 * nlink). Usage: fs_files CASE (each case makes and removes its own file in the cwd). */
#include "ut.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sendfile.h>
#include <signal.h>
#include <time.h>
#include <sys/wait.h>

static void st_show(const char *what, const char *path)
{
	struct stat st;
	errno = 0;
	if (stat(path, &st)) {
		printf("%s: stat errno %d\n", what, errno);
		return;
	}
	printf("%s: reg=%d mode=%o size=%lld nlink=%lu\n", what, S_ISREG(st.st_mode),
	       (unsigned)(st.st_mode & 07777), (long long)st.st_size, (unsigned long)st.st_nlink);
}

static void c_create(void)
{
	const char *p = "ff_create.tmp";
	SHOW("open O_CREAT|O_EXCL", open(p, O_CREAT | O_EXCL | O_WRONLY, 0640));
	SHOW("again O_EXCL", open(p, O_CREAT | O_EXCL | O_WRONLY, 0640));
	st_show("new", p);
	SHOW("creat truncates", creat(p, 0600) >= 0);
	st_show("after creat", p);	/* the mode of an existing file stays */
	SHOW("unlink", unlink(p));
	st_show("gone", p);
}

static void c_rw(void)
{
	const char *p = "ff_rw.tmp";
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	printf("fd ok=%d\n", fd >= 0);
	SHOW("write", write(fd, "hello, world\n", 13));
	SHOW("pos", lseek(fd, 0, SEEK_CUR));
	char b[64] = {0};
	SHOW("read at end", read(fd, b, sizeof b));
	SHOW("rewind", lseek(fd, 0, SEEK_SET));
	SHOW("read", read(fd, b, sizeof b - 1));
	printf("got [%s]\n", b);
	/* a big write and read (more than one bounce-buffer chunk) */
	static char big[20000], back[20000];
	for (unsigned i = 0; i < sizeof big; i++)
		big[i] = (char)('a' + i % 26);
	SHOW("big write", write(fd, big, sizeof big));
	SHOW("seek 13", lseek(fd, 13, SEEK_SET));
	SHOW("big read", read(fd, back, sizeof back));
	printf("same=%d\n", memcmp(big, back, sizeof big) == 0);
	SHOW("close", close(fd));
	st_show("file", p);
	SHOW("read-only write", (fd = open(p, O_RDONLY), write(fd, "x", 1)));
	close(fd);
	SHOW("write-only read", (fd = open(p, O_WRONLY), read(fd, b, 1)));
	close(fd);
	unlink(p);
}

static void c_lseek(void)
{
	const char *p = "ff_lseek.tmp";
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123456789", 10);
	SHOW("SEEK_SET 3", lseek(fd, 3, SEEK_SET));
	SHOW("SEEK_CUR 2", lseek(fd, 2, SEEK_CUR));
	SHOW("SEEK_END -1", lseek(fd, -1, SEEK_END));
	char c = 0;
	SHOW("read", read(fd, &c, 1));
	printf("char %c\n", c);
	SHOW("negative", lseek(fd, -20, SEEK_CUR));
	SHOW("bad whence", lseek(fd, 0, 9));
	SHOW("past end", lseek(fd, 100, SEEK_SET));
	SHOW("write past end", write(fd, "Z", 1));
	st_show("sparse", p);
	char b[101];
	SHOW("pread hole", pread(fd, b, sizeof b, 0));
	printf("hole zero=%d last=%c\n", b[10] == 0 && b[99] == 0, b[100]);
	close(fd);
	unlink(p);
}

static void c_pread(void)
{
	const char *p = "ff_pread.tmp";
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "abcdefghij", 10);
	char b[8] = {0};
	SHOW("pread 4@3", pread(fd, b, 4, 3));
	printf("got [%s]\n", b);
	SHOW("pos unchanged", lseek(fd, 0, SEEK_CUR));
	SHOW("pwrite 2@1", pwrite(fd, "XY", 2, 1));
	SHOW("pos still", lseek(fd, 0, SEEK_CUR));
	memset(b, 0, sizeof b);
	SHOW("pread 5@0", pread(fd, b, 5, 0));
	printf("got [%s]\n", b);
	SHOW("pread past end", pread(fd, b, 4, 100));
	SHOW("pread negative", pread(fd, b, 4, -1));
	SHOW("pread on pipe", pread(0, b, 1, 0) == -1 ? -errno : 0);
	close(fd);
	unlink(p);
}

static void c_trunc(void)
{
	const char *p = "ff_trunc.tmp";
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123456789", 10);
	SHOW("ftruncate 4", ftruncate(fd, 4));
	st_show("shrunk", p);
	SHOW("ftruncate 8192", ftruncate(fd, 8192));
	st_show("grown", p);
	char b[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	SHOW("pread grown", pread(fd, b, 8, 2));
	printf("bytes %d %d %d %d\n", b[0], b[1], b[2], b[7]);
	SHOW("ftruncate negative", ftruncate(fd, -1));
	SHOW("O_TRUNC", close(open(p, O_WRONLY | O_TRUNC)));
	st_show("truncated", p);
	int ro = open(p, O_RDONLY);
	SHOW("ftruncate read-only", ftruncate(ro, 0));
	close(ro);
	close(fd);
	unlink(p);
}

static void c_append(void)
{
	const char *p = "ff_append.tmp";
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "abc", 3);
	close(fd);
	fd = open(p, O_WRONLY | O_APPEND);
	SHOW("seek 0", lseek(fd, 0, SEEK_SET));
	SHOW("append", write(fd, "def", 3));
	SHOW("pos", lseek(fd, 0, SEEK_CUR));
	close(fd);
	st_show("appended", p);
	char b[8] = {0};
	fd = open(p, O_RDONLY);
	read(fd, b, 7);
	printf("got [%s]\n", b);
	close(fd);
	unlink(p);
}

static void c_sendfile(void)
{
	const char *p = "ff_send_in.tmp", *q = "ff_send_out.tmp";
	int in = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	static char big[10000];
	for (unsigned i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 7);
	write(in, big, sizeof big);
	int out = open(q, O_CREAT | O_RDWR | O_TRUNC, 0644);
	off_t off = 100;
	SHOW("sendfile offset", sendfile(out, in, &off, 5000));
	printf("off now %lld\n", (long long)off);
	SHOW("in pos unchanged", lseek(in, 0, SEEK_CUR));
	lseek(in, 9000, SEEK_SET);
	SHOW("sendfile pos", sendfile(out, in, NULL, 5000));
	SHOW("in pos", lseek(in, 0, SEEK_CUR));
	st_show("out", q);
	static char back[6000];
	pread(out, back, 6000, 0);
	printf("same=%d\n", !memcmp(back, big + 100, 5000) && !memcmp(back + 5000, big + 9000, 1000));
	SHOW("sendfile bad in", sendfile(out, 77, NULL, 10));
	close(in);
	close(out);
	unlink(p);
	unlink(q);
}

static void c_stat(void)
{
	const char *p = "ff_stat.tmp";
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0751);
	write(fd, "12345", 5);
	struct stat a, b;
	SHOW("fstat", fstat(fd, &a));
	SHOW("stat", stat(p, &b));
	printf("same ino=%d dev=%d\n", a.st_ino == b.st_ino, a.st_dev == b.st_dev);
	printf("mode=%o size=%lld nlink=%lu\n", (unsigned)a.st_mode, (long long)a.st_size,
	       (unsigned long)a.st_nlink);
	SHOW("fchmod 600", fchmod(fd, 0600));
	SHOW("chmod 4755", chmod(p, 04755));
	st_show("chmod", p);
	SHOW("fstatat", fstatat(AT_FDCWD, p, &b, 0));
	printf("mode=%o\n", (unsigned)b.st_mode);
	SHOW("fstatat empty path", fstatat(fd, "", &b, AT_EMPTY_PATH));
	printf("size=%lld\n", (long long)b.st_size);
	SHOW("fstatat empty no flag", fstatat(fd, "", &b, 0));
	SHOW("fstatat bad flag", fstatat(AT_FDCWD, p, &b, 0x4000000));
	SHOW("access F_OK", access(p, F_OK));
	SHOW("access missing", access("ff_nope", F_OK));
	SHOW("faccessat R_OK", faccessat(AT_FDCWD, p, R_OK, 0));
	SHOW("fstat bad fd", fstat(99, &a));
	SHOW("fstat stdin", fstat(0, &a));
	printf("stdin chr=%d\n", S_ISCHR(a.st_mode));
	SHOW("fstat stdout", fstat(1, &a));
	printf("stdout fifo=%d\n", S_ISFIFO(a.st_mode));
	struct stat e;
	fstat(2, &e);
	printf("stderr is stdout's pipe=%d\n", S_ISFIFO(e.st_mode) && e.st_ino == a.st_ino);
	fflush(stdout);
	SHOW("write stderr", write(2, "to stderr\n", 10));
	SHOW("isatty 0", isatty(0));
	SHOW("isatty 1", isatty(1));
	close(fd);
	unlink(p);
}

/* sendfile from /dev/zero to /dev/null with a huge count (Linux caps it at 0x7ffff000
 * bytes a call) in a child, killed with SIGKILL meanwhile: the copy ends at the signal
 * (ksync once copied until the count was done: 128 TiB, a hang the fuzz found). */
static void c_sendfile_kill(void)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		int z = open("/dev/zero", O_RDONLY), n = open("/dev/null", O_WRONLY);
		for (;;)
			sendfile(n, z, NULL, 0x7ffff7ffdff6ul);
	}
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	kill(p, SIGKILL);
	int st = 0;
	waitpid(p, &st, 0);
	printf("sendfile child: signaled %d sig %d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	int z = open("/dev/zero", O_RDONLY), n = open("/dev/null", O_WRONLY);
	printf("sendfile 1 MiB: %ld\n", (long)sendfile(n, z, NULL, 1 << 20));
	close(z);
	close(n);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"create", c_create}, {"rw", c_rw}, {"lseek", c_lseek}, {"pread", c_pread},
		{"trunc", c_trunc}, {"append", c_append}, {"sendfile", c_sendfile},
		{"stat", c_stat}, {"sendfile_kill", c_sendfile_kill},
	};
	umask(022);
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
