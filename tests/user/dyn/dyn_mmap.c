/* dyn_mmap: file-backed mmap (MAP_PRIVATE of a RAM-file-system file on ksync, of a tmpfs or
 * disk file on the host): the file's bytes read through the mapping, offsets, MAP_FIXED
 * over a mapping, mprotect of a mapped range, a write to the copy that never reaches the
 * file, fork's copy, a later write() seen by an unwritten page only, SIGBUS past the end
 * of the file, /dev/zero. Usage: dyn_mmap CASE.
 * Prints relations and values, never addresses. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

/* a file of n bytes: byte i is (i * 7 + i / 4096) & 0xff */
static int make_file(const char *name, size_t n)
{
	unlink(name);
	int fd = open(name, O_CREAT | O_RDWR | O_TRUNC, 0644);
	unsigned char *b = malloc(n);
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(i * 7 + i / 4096);
	if (write(fd, b, n) != (ssize_t)n)
		printf("short write\n");
	free(b);
	return fd;
}

static int check(const unsigned char *p, size_t off, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)((off + i) * 7 + (off + i) / 4096))
			return 0;
	return 1;
}

/* in a child: touch p; how the child ended */
static void touch(const char *what, volatile unsigned char *p, int write)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		signal(SIGBUS, SIG_DFL);	/* not the parent's handler */
		signal(SIGSEGV, SIG_DFL);
		if (write)
			*p = 1;
		else
			(void)*p;
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	if (WIFSIGNALED(st))
		printf("%s: signal %d\n", what, WTERMSIG(st));
	else
		printf("%s: exited %d\n", what, WEXITSTATUS(st));
}

static sigjmp_buf jb;
static volatile int got_code;
static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_code = si->si_code * 100 + sig;
	siglongjmp(jb, 1);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "private";
	const char *name = "w_dmm";
	if (!strcmp(c, "private")) {
		int fd = make_file(name, 3 * PG + 100);
		unsigned char *p = mmap(NULL, 3 * PG + 100, PROT_READ, MAP_PRIVATE, fd, 0);
		printf("mmap ok %d\n", p != MAP_FAILED);
		printf("data equal %d\n", check(p, 0, 3 * PG + 100));
		printf("tail of last page zero %d\n", p[3 * PG + 100] == 0 && p[4 * PG - 1] == 0);
		close(fd);
		printf("after close still equal %d\n", check(p, 0, 3 * PG + 100));
		touch("write to a read-only mapping", p, 1);
		printf("munmap %d\n", munmap(p, 3 * PG + 100));
	} else if (!strcmp(c, "offset")) {
		int fd = make_file(name, 5 * PG);
		unsigned char *p = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE, fd, 2 * PG);
		printf("offset 2 pages equal %d\n", check(p, 2 * PG, 2 * PG));
		unsigned char *q = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 4 * PG);
		printf("last page equal %d\n", check(q, 4 * PG, PG));
		errno = 0;
		void *r = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 100);
		printf("unaligned offset: %s errno %d\n", r == MAP_FAILED ? "failed" : "mapped", errno);
		close(fd);
	} else if (!strcmp(c, "fixed")) {
		int fd = make_file(name, 4 * PG);
		unsigned char *a = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		memset(a, 0xee, 4 * PG);
		unsigned char *b = mmap(a + PG, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, PG);
		printf("fixed at the address %d\n", b == a + PG);
		printf("replaced pages hold the file %d\n", check(a + PG, PG, 2 * PG));
		printf("the rest kept %d %d\n", a[0] == 0xee && a[PG - 1] == 0xee, a[3 * PG] == 0xee);
		/* a file mapping over a file mapping, as the loader does over its reservation */
		unsigned char *d = mmap(a, 4 * PG, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
		printf("whole file over it %d %d\n", d == a, check(a, 0, 4 * PG));
		errno = 0;
		void *e = mmap(a, PG, PROT_READ, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
		printf("noreplace: %s errno %d\n", e == MAP_FAILED ? "failed" : "mapped", errno);
		close(fd);
	} else if (!strcmp(c, "mprotect")) {
		int fd = make_file(name, 4 * PG);
		unsigned char *p = mmap(NULL, 4 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
		printf("mprotect rw %d\n", mprotect(p + PG, 2 * PG, PROT_READ | PROT_WRITE));
		p[PG] = 0x55;
		p[3 * PG - 1] = 0x66;
		printf("written %d %d, neighbours intact %d\n", p[PG] == 0x55, p[3 * PG - 1] == 0x66,
		       check(p, 0, PG) && check(p + 3 * PG, 3 * PG, PG));
		touch("page 0 still read-only", p, 1);
		touch("page 3 still read-only", p + 3 * PG, 1);
		printf("mprotect none %d\n", mprotect(p, PG, PROT_NONE));
		touch("read of PROT_NONE", p, 0);
		int back = mprotect(p, PG, PROT_READ);
		printf("mprotect back %d, data kept %d\n", back, check(p, 0, PG));
		printf("mprotect exec %d\n", mprotect(p + 3 * PG, PG, PROT_READ | PROT_EXEC));
		close(fd);
	} else if (!strcmp(c, "cow")) {
		int fd = make_file(name, 2 * PG);
		unsigned char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		p[10] = 0xab;
		memset(p + PG, 0, 16);
		unsigned char b[16];
		pread(fd, b, 16, 0);
		printf("the file unchanged by the write %d\n", check(b, 0, 16));
		printf("the copy changed %d\n", p[10] == 0xab);
		unsigned char *q = mmap(NULL, 2 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
		printf("a second mapping sees the file %d\n", check(q, 0, 2 * PG));
		fflush(stdout);
		pid_t k = fork();
		if (k == 0) {
			p[11] = 0xcd;
			printf("child sees parent's write %d, its own %d\n", p[10] == 0xab, p[11] == 0xcd);
			_exit(0);
		}
		waitpid(k, NULL, 0);
		printf("parent does not see the child's write %d\n", p[11] == (unsigned char)(11 * 7));
		/* a write() to the file after the mapping: a page nobody wrote is still the
		 * file's and shows it (q), a written one is the mapping's copy (p's page 0) */
		pwrite(fd, "\x5a", 1, 100);
		printf("an unwritten page shows a later write() %d, a written one keeps its copy %d\n",
		       q[100] == 0x5a, p[100] == (unsigned char)(100 * 7));
		close(fd);
	} else if (!strcmp(c, "sigbus")) {
		int fd = make_file(name, PG + 10);
		unsigned char *p = mmap(NULL, 4 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
		printf("mapped past the end %d\n", p != MAP_FAILED);
		printf("inside the last page %d, zero past the end %d\n", p[PG + 9] == (unsigned char)((PG + 9) * 7 + 1),
		       p[PG + 10] == 0 && p[2 * PG - 1] == 0);
		touch("a page past the end", p + 2 * PG, 0);
		touch("the last page past the end", p + 4 * PG - 1, 0);
		struct sigaction sa = { 0 };
		sa.sa_sigaction = on_bus;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGBUS, &sa, NULL);
		if (!sigsetjmp(jb, 1))
			(void)*(volatile unsigned char *)(p + 3 * PG);
		printf("handler: code*100+sig = %d\n", got_code);
		signal(SIGBUS, SIG_DFL);
		/* read() into the hole: EFAULT, as Linux */
		int z = open("/dev/zero", O_RDONLY);
		errno = 0;
		long r = read(z, p + 2 * PG, 16);
		printf("read into it: %ld errno %d\n", r, errno);
		close(z);
		unsigned char *q = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 4 * PG);
		printf("offset past the end maps %d\n", q != MAP_FAILED);
		touch("access there", q, 0);
		close(fd);
	} else if (!strcmp(c, "shared")) {
		/* MAP_SHARED: one copy - the mapping's writes reach the file, the file's the
		 * mapping, a fork child's the parent; a second mapping sees the first */
		int fd = make_file(name, 2 * PG + 50);
		unsigned char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		printf("mapped %d, data equal %d\n", p != MAP_FAILED, check(p, 0, 2 * PG + 50));
		p[5] = 0xa5;
		unsigned char b[8];
		pread(fd, b, 8, 0);
		printf("pread sees the mapping's write %d\n", b[5] == 0xa5);
		pwrite(fd, "\x11\x22", 2, PG + 1);
		printf("the mapping sees pwrite %d %d\n", p[PG + 1] == 0x11, p[PG + 2] == 0x22);
		unsigned char *q = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, PG);
		p[PG + 3] = 0x33;
		printf("a second mapping at an offset sees it %d\n", q[3] == 0x33);
		fflush(stdout);
		pid_t k = fork();
		if (k == 0) {
			p[7] = 0x77;
			_exit(0);
		}
		waitpid(k, NULL, 0);
		printf("the parent sees the child's write %d\n", p[7] == 0x77);
		touch("past the end of the file", p + 2 * PG + 100, 0);
		touch("a whole page past the end", p + 3 * PG + 8, 0);
		printf("munmap %d\n", munmap(p, 4 * PG));
		pread(fd, b, 8, 0);
		printf("the file keeps the writes %d %d\n", b[5] == 0xa5, b[7] == 0x77);
		/* a read-only descriptor: no PROT_WRITE, now or by mprotect */
		int ro = open(name, O_RDONLY);
		errno = 0;
		void *w = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
		printf("rw map of a read-only fd: %s errno %d\n", w == MAP_FAILED ? "failed" : "mapped", errno);
		unsigned char *r = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
		printf("read-only map %d\n", r != MAP_FAILED && r[5] == 0xa5);
		errno = 0;
		int m = mprotect(r, PG, PROT_READ | PROT_WRITE);
		printf("mprotect to write: %d errno %d\n", m, errno);
		printf("a private map of it may write %d\n", mprotect(mmap(NULL, PG, PROT_READ, MAP_PRIVATE, ro, 0), PG, PROT_READ | PROT_WRITE));
		/* truncate while mapped, then unlink: the kernel goes on (what the old pages
		 * show differs: Linux SIGBUS past the new end) */
		ftruncate(fd, 10);
		close(fd);
		close(ro);
		unlink(name);
		printf("still running\n");
		return 0;
	} else if (!strcmp(c, "devzero")) {
		int z = open("/dev/zero", O_RDWR);
		unsigned char *p = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, z, 0);
		printf("mapped %d zero %d\n", p != MAP_FAILED, p[0] == 0 && p[2 * PG - 1] == 0);
		p[5] = 9;
		printf("writable %d\n", p[5] == 9);
		int pp[2];
		pipe(pp);
		errno = 0;
		void *q = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, pp[0], 0);
		printf("a pipe: %s errno %d\n", q == MAP_FAILED ? "failed" : "mapped", errno);
		int w = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
		errno = 0;
		q = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, w, 0);
		printf("write-only file: %s errno %d\n", q == MAP_FAILED ? "failed" : "mapped", errno);
		close(z);
		close(w);
	} else {
		printf("unknown case\n");
		return 2;
	}
	unlink(name);
	return 0;
}
