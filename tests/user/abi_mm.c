/* memory calls' corners (issue 24, differential): mmap's EINVAL/EBADF/ENODEV/EACCES,
 * munmap of part of a mapping (the hole faults, the rest stays), mprotect then a fault
 * (SIGSEGV, seen by a parent's wait4 and by a handler's si_code), mprotect/munmap across
 * holes, brk's refusals; big operations done in steps (steps). Usage: abi_mm CASE. */
#include "ut.h"
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))
#define PG 4096L
#define MAPE(name, ...) do { long r_ = (long)rawsys(SYS_mmap, __VA_ARGS__); \
	printf("%s %ld\n", name, r_ < 0 && r_ > -4096 ? r_ : 1L); } while (0)

/* in a child: touch p (read or write); the child's fate */
static void touch(const char *what, volatile char *p, int write)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		signal(SIGSEGV, SIG_DFL);	/* not the parent's handler */
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

static void c_mmap_err(void)
{
	long A = MAP_PRIVATE | MAP_ANONYMOUS;
	MAPE("len 0", 0, 0, PROT_READ, A, -1, 0);
	MAPE("len -1", 0, -1, PROT_READ, A, -1, 0);
	MAPE("len past user space", 0, 0x800000000000L, PROT_READ, A, -1, 0);
	MAPE("no type", 0, PG, PROT_READ, MAP_ANONYMOUS, -1, 0);
	MAPE("anon, fd ignored", 0, PG, PROT_READ, A, 77, 0);
	MAPE("anon, unaligned offset", 0, PG, PROT_READ, A, -1, 1);
	MAPE("fixed unaligned", 0x10000001, PG, PROT_READ, A | MAP_FIXED, -1, 0);
	MAPE("fixed in the kernel half", (long)0xffff800000000000ul, PG, PROT_READ, A | MAP_FIXED, -1, 0);
	MAPE("fixed ending past user space", 0x7ffffffff000L, 2 * PG, PROT_READ, A | MAP_FIXED, -1, 0);
	MAPE("hint in the kernel half (ignored)", (long)0xffff800000000000ul, PG, PROT_READ, A, -1, 0);
	MAPE("not anon, fd -1", 0, PG, PROT_READ, MAP_PRIVATE, -1, 0);
	MAPE("not anon, fd 99", 0, PG, PROT_READ, MAP_PRIVATE, 99, 0);
	int p[2];
	pipe(p);
	MAPE("a pipe", 0, PG, PROT_READ, MAP_PRIVATE, p[0], 0);
	MAPE("a pipe, shared", 0, PG, PROT_READ, MAP_SHARED, p[0], 0);
	close(p[0]);
	close(p[1]);
	int d = open(".", O_RDONLY);
	MAPE("a directory", 0, PG, PROT_READ, MAP_PRIVATE, d, 0);
	close(d);
	int w = open("amm_wo", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	MAPE("a write-only file", 0, PG, PROT_READ, MAP_PRIVATE, w, 0);
	MAPE("a write-only file, shared", 0, PG, PROT_READ, MAP_SHARED, w, 0);
	close(w);
	unlink("amm_wo");
	MAPE("bad prot bits", 0, PG, 0x100, A, -1, 0);
	RAW("munmap len 0", SYS_munmap, 0x10000000, 0, 0, 0, 0, 0);
	RAW("munmap unaligned", SYS_munmap, 0x10000001, PG, 0, 0, 0, 0);
	RAW("munmap nothing there", SYS_munmap, 0x10000000, PG, 0, 0, 0, 0);
	RAW("munmap kernel half", SYS_munmap, (long)0xffff800000000000ul, PG, 0, 0, 0, 0);
	RAW("munmap past user space", SYS_munmap, 0x7ffffffff000L, 2 * PG, 0, 0, 0, 0);
	RAW("mprotect len 0", SYS_mprotect, 0x10000000, 0, PROT_READ, 0, 0, 0);
	RAW("mprotect nothing there", SYS_mprotect, 0x10000000, PG, PROT_READ, 0, 0, 0);
	RAW("mprotect kernel half", SYS_mprotect, (long)0xffff800000000000ul, PG, PROT_READ, 0, 0, 0);
}

static void c_munmap_part(void)
{
	char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < 4; i++)
		m[i * PG] = (char)('a' + i);
	SHOW("munmap page 1", munmap(m + PG, PG));
	printf("pages 0 2 3: %c %c %c\n", m[0], m[2 * PG], m[3 * PG]);
	touch("read page 1", m + PG, 0);
	touch("write page 1", m + PG, 1);
	SHOW("munmap head", munmap(m, PG));
	touch("read page 0", m, 0);
	printf("page 2 still %c\n", m[2 * PG]);
	SHOW("munmap across the holes and page 2", munmap(m, 3 * PG));
	touch("read page 2", m + 2 * PG, 0);
	printf("page 3 still %c\n", m[3 * PG]);
	SHOW("mprotect over a hole", mprotect(m + 2 * PG, 2 * PG, PROT_READ));
	SHOW("mprotect page 3 alone", mprotect(m + 3 * PG, PG, PROT_READ));
	touch("write page 3", m + 3 * PG, 1);
	SHOW("munmap an unaligned length", munmap(m + 3 * PG, 1));
	touch("read page 3", m + 3 * PG, 0);
	/* a page mapped again where a hole was is zero */
	char *again = mmap(m + PG, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	printf("mapped again at the hole %d, zero %d\n", again == m + PG, again[0] == 0);
	munmap(again, PG);
}

static sigjmp_buf jb;
static volatile int code;
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	code = si->si_code;
	siglongjmp(jb, 1);
}

static void try_(const char *what, volatile char *p, int write)
{
	code = -1;
	if (sigsetjmp(jb, 1) == 0) {
		if (write)
			*p = 2;
		else
			(void)*p;
		printf("%s: ok\n", what);
	} else {
		printf("%s: SIGSEGV code %d\n", what, code);
	}
}

static void c_mprotect_segv(void)
{
	char *m = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	m[0] = 'x';
	m[PG] = 'y';
	SHOW("mprotect NONE", mprotect(m, PG, PROT_NONE));
	touch("child reads", m, 0);
	SHOW("mprotect READ", mprotect(m, 2 * PG, PROT_READ));
	touch("child writes", m + PG, 1);
	touch("child reads", m + PG, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	try_("write read-only", m, 1);
	try_("read read-only", m, 0);
	mprotect(m, PG, PROT_NONE);
	try_("read PROT_NONE", m, 0);
	try_("write PROT_NONE", m, 1);
	mprotect(m, PG, PROT_WRITE);
	try_("write PROT_WRITE (implies read)", m, 1);
	try_("read PROT_WRITE", m, 0);
	mprotect(m, 3 * PG, PROT_READ | PROT_WRITE);
	try_("write after RW", m + PG, 1);
	printf("kept: %d %d\n", m[PG], m[0]);
	/* a read-only page after fork: both copies read-only, neither can write */
	mprotect(m + 2 * PG, PG, PROT_READ);
	touch("child writes the read-only page", m + 2 * PG, 1);
	try_("parent writes it", m + 2 * PG, 1);
	/* a read-only page shared by fork and made writable in the child: the child's
	 * writes are its own (the parent reads it first: a page is there to share) */
	printf("parent reads it: %d\n", *(volatile char *)(m + 2 * PG));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		signal(SIGSEGV, SIG_DFL);
		mprotect(m + 2 * PG, PG, PROT_READ | PROT_WRITE);
		m[2 * PG] = 'C';
		_exit(m[2 * PG] == 'C' ? 0 : 1);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child made it writable and wrote: exited %d; parent still sees %d\n",
	       WIFEXITED(st) ? WEXITSTATUS(st) : -1, m[2 * PG]);
	munmap(m + PG, PG);
	try_("read the unmapped middle", m + PG, 0);
	SHOW("mprotect spanning the hole", mprotect(m, 3 * PG, PROT_READ));
	try_("write page 0 after the failed mprotect", m, 1);
	signal(SIGSEGV, SIG_DFL);
}

static void c_brk(void)
{
	long b0 = rawsys(SYS_brk, 0, 0, 0, 0, 0, 0);
	long r = rawsys(SYS_brk, b0 + 3 * PG, 0, 0, 0, 0, 0);
	printf("grow 3 pages %d\n", r == b0 + 3 * PG);
	((char *)b0)[3 * PG - 1] = 1;
	r = rawsys(SYS_brk, b0 + PG, 0, 0, 0, 0, 0);
	printf("shrink to 1 page %d\n", r == b0 + PG);
	touch("touch the released page", (char *)b0 + 2 * PG, 0);
	r = rawsys(SYS_brk, b0 - 0x100000000L, 0, 0, 0, 0, 0);
	printf("below the start refused (brk unchanged) %d\n", r == b0 + PG);
	r = rawsys(SYS_brk, (long)0xffff800000000000ul, 0, 0, 0, 0, 0);
	printf("into the kernel half refused %d\n", r == b0 + PG);
	r = rawsys(SYS_brk, b0 + PG + 5, 0, 0, 0, 0, 0);
	printf("unaligned: returned as asked %d\n", r == b0 + PG + 5);
	r = rawsys(SYS_brk, b0 + 2 * PG, 0, 0, 0, 0, 0);
	printf("regrown page zero %d\n", r == b0 + 2 * PG && ((char *)b0)[PG + 100] == 0);
	rawsys(SYS_brk, b0, 0, 0, 0, 0, 0);
}

/* Big operations of a one-thread process, which ksync does in steps with its space's lock
 * given back between them (kernel/proc/mm.c "Steps"): a 300-page private file mapping,
 * an area replaced inside it, an mprotect and a munmap across hundreds of pages, a fork
 * of all of it (copy-on-write both ways). Every page's content is checked. */
#define SN 300
static unsigned long page_sum(volatile unsigned long *p, int from, int to)
{
	unsigned long s = 0;
	for (int i = from; i < to; i++)
		s += p[i * (PG / 8)];
	return s;
}

static void c_steps(void)
{
	int fd = open("mmsteps.tmp", O_RDWR | O_CREAT | O_TRUNC, 0600);
	static unsigned long buf[PG / 8];
	for (int i = 0; i < SN; i++) {
		buf[0] = 1000 + (unsigned long)i;
		if (write(fd, buf, PG) != PG)
			printf("write %d failed\n", i);
	}
	volatile unsigned long *p = mmap(NULL, SN * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	printf("mapped %d, sum %lu\n", p != MAP_FAILED, page_sum(p, 0, SN));
	/* an anonymous area over pages 100..199 (the file's there are unmapped) */
	void *q = mmap((char *)p + 100 * PG, 100 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	printf("replaced %d, sum %lu\n", q == (char *)p + 100 * PG, page_sum(p, 0, SN));
	for (int i = 100; i < 200; i++)
		p[i * (PG / 8)] = 5000 + (unsigned long)i;
	printf("mprotect ro %d\n", mprotect((void *)p, SN * PG, PROT_READ));
	touch("write after ro", (volatile char *)p + 250 * PG, 1);
	printf("mprotect rw %d\n", mprotect((void *)p, SN * PG, PROT_READ | PROT_WRITE));
	p[250 * (PG / 8)] = 7;
	unsigned long before = page_sum(p, 0, SN);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		/* the child's copy: all of it, then its writes stay its own */
		unsigned long s = page_sum(p, 0, SN);
		for (int i = 0; i < SN; i++)
			p[i * (PG / 8)] += 1;
		printf("child: sum %s, after its writes %lu\n", s == before ? "same" : "differs",
		       page_sum(p, 0, SN));
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	printf("parent: child exited %d, sum %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	       page_sum(p, 0, SN) == before ? "unchanged" : "changed");
	printf("munmap %d\n", munmap((void *)p, SN * PG));
	touch("read after munmap", (volatile char *)p + 150 * PG, 0);
	close(fd);
	unlink("mmsteps.tmp");
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"mmap_err", c_mmap_err}, {"munmap_part", c_munmap_part},
		{"mprotect_segv", c_mprotect_segv}, {"brk", c_brk}, {"steps", c_steps},
	};
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
