/* fuzz: random system calls (trinity-style) against the kernel, ksync only - never run
 * it on the host (random calls as root on the dev machine are unsafe).
 *
 * Usage: fuzz SEED CHILDREN CALLS [TRACE_FROM]. The parent makes /tmp/fz<k> for each child and forks
 * CHILDREN children; child k seeds a splitmix64 with SEED + k, moves into /tmp/fz<k>,
 * opens a few descriptors and makes CALLS raw system calls: the number one of those
 * ksync implements (9 in 16), from 0..459 (6 in 16) or out of range (1 in 16: 460..599,
 * the x32 bit, -1); each argument from a pool (0, -1,
 * small ints, random 32/64-bit values, huge lengths, kernel addresses - the direct map
 * 0xffff800000000000.., the KVA region, the image 0xffffffff80000000.. -, non-canonical
 * and low addresses, an unmapped user page, a valid 64 KiB buffer between two PROT_NONE
 * guard pages and misaligned pointers into it, a read-only page, open and closed
 * descriptors, AT_FDCWD). A path argument (the calls of PATHS) comes from a pool of
 * names relative to the child's directory (and "/nonexistent/x", "", an unterminated
 * name at a guard page, bad pointers), so nothing outside /tmp/fz<k> is touched. The run
 * is a count, not a time: the same seed makes the same calls.
 *
 * What it does not make, and why (each only ends or stalls the run, it tests nothing):
 *  - exit, exit_group (each child ends with exit_group(0) after its calls);
 *  - kill/tkill/tgkill to anyone but itself, and to itself only signals whose default
 *    action is to ignore (0, SIGCHLD, SIGCONT, SIGURG, SIGWINCH); rt_sigqueueinfo and
 *    rt_tgsigqueueinfo; prlimit64 of another process;
 *  - pause and rt_sigsuspend (ksync has no alarm or itimer to end them); rt_sigreturn
 *    (t/sig_sigreturn random has 100 random frames);
 *  - munmap/mprotect/mremap/madvise/MAP_FIXED mmap over its own image, stack or buffer.
 * Guards, so that nothing blocks for ever (no alarm): the descriptor arguments of the
 * calls that may block on a pipe (read, write, readv, writev, pread64, pwrite64,
 * sendfile) are set O_NONBLOCK first; sendfile's count is at most 1 MiB (2 GB, Linux's
 * cap, from /dev/zero takes seconds under TCG); poll's timeout is 0; ppoll's, rt_sigtimedwait's,
 * nanosleep's and clock_nanosleep's timespec, when NULL or in the buffer, is a zero one.
 * fork, vfork and clone (random flags and stack) are made: the new process makes
 * exit_group(0) at once without touching memory (the raw wrapper does it), and the child
 * reaps it (wait4 __WALL) before its next call, so at most one is alive per child.
 * arch_prctl: the FS base is put back after it (musl's TLS). Any child may die by a
 * signal (a random handler, a random fd closed under it...): reported, not a failure;
 * a kernel panic or hang is.
 *
 * The parent prints the seed, each child's end, removes /tmp/fz<k> (nftw) and "fuzz:
 * done". With TRACE_FROM, each child also prints to /dev/console (seen at once, even
 * if the run hangs) "k:i ..." every 1000 calls and its calls from that index on ("k:i
 * nr N (args)" before it, "k:i = result" after): to find the call that broke something, bisect CALLS with one
 * child (or read where the progress stops), then trace from there. */
#define _GNU_SOURCE
#include "ut.h"
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

extern char __executable_start[], _end[];

static uint64_t st;
static uint64_t rnd(void)
{
	uint64_t z = (st += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A raw call; in a process that fork/vfork/clone made (rax 0 for 56..58), exit_group(0)
 * at once: it may run on a random stack, so it touches no memory. */
static long sys6(long nr, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	if (nr >= 56 && nr <= 58) {
		__asm__ volatile("syscall\n\t"
				 "test %%rax, %%rax\n\t"
				 "jnz 1f\n\t"
				 "mov $231, %%eax\n\t"
				 "xor %%edi, %%edi\n\t"
				 "syscall\n\t"
				 "ud2\n"
				 "1:"
				 : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
				 : "rcx", "r11", "memory");
		return r;
	}
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10),
			 "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	return r;
}

#define BUF (64 << 10)
static char *region;	/* guard page, BUF bytes, guard page */
static char *buf;	/* region + 4096 */
static char *ro;	/* a read-only page */
static char *hole;	/* an unmapped page */
static char *unterm;	/* a page of 'a' with a guard after it: an unterminated name */
static int fds[8], nfds;
static int closed_fd;
static uint64_t fsbase;
static uint64_t stack_lo;

/* the numbers kernel/syscall/syscall.c's table implements (the rest answer ENOSYS):
 * drawn half the time, so that most calls get past the table */
static const short impl[] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 24,
	32, 33, 34, 35, 39, 40, 56, 57, 58, 59, 60, 61, 62, 63, 72, 77, 79, 80, 81, 82, 83,
	84, 86, 87, 88, 89, 90, 91, 95, 96, 97, 102, 104, 107, 108, 109, 110, 111, 112, 121,
	124, 127, 128, 130, 131, 157, 158, 160, 186, 200, 201, 217, 218, 228, 229, 230, 231,
	234, 257, 258, 262, 263, 264, 265, 266, 267, 268, 269, 271, 273, 292, 293, 302, 318,
	439 };

static const char *const names[] = { "a", "b", "c", "d/e", "a/b", "f", ".", "",
				     "/nonexistent/x", "d", "e/f/g", "g" };

static int in_buf(uint64_t p, uint64_t n)
{
	return p >= (uint64_t)buf && p < (uint64_t)buf + BUF && n <= (uint64_t)buf + BUF - p;
}

static long arg(void)
{
	switch (rnd() % 24) {
	case 0: return 0;
	case 1: return -1;
	case 2: return (long)(rnd() % 16);
	case 3: return (long)(rnd() % 4096);
	case 4: return (long)(uint32_t)rnd();
	case 5: return (long)rnd();
	case 6: { static const long huge[] = { 0x7fffffff, 0xffffffff, 0x80000000, 1l << 40,
					     0x7fffffffffffffff, -4096, 1l << 62, 0x10000 };
		  return huge[rnd() % 8]; }
	case 7: return (long)(0xffff800000000000ull + (rnd() % (1ull << 30) & ~7ull));
	case 8: return (long)(0xffffffff80000000ull + (rnd() % (16u << 20)));
	case 9: return (long)(0xffff808000000000ull + (rnd() % (1ull << 30)));
	case 10: return (long)(rnd() & 1 ? 0x0000800000000000ull : 0x8000000000000000ull);
	case 11: return (long)(rnd() % 0x10000);	/* below user space */
	case 12: return (long)hole + (long)(rnd() % 4096);
	case 13: case 14: return (long)buf;
	case 15: return (long)buf + (long)(rnd() % BUF);
	case 16: return (long)buf + 1 + (long)(rnd() % 7);	/* misaligned */
	case 17: return (long)buf + BUF - (long)(rnd() % 64);	/* runs into the guard */
	case 18: return (long)ro + (long)(rnd() % 64);
	case 19: case 20: return nfds ? fds[rnd() % nfds] : 3;
	case 21: return closed_fd;
	case 22: { static const long bad[] = { 100, 255, 256, 1023, -100 /* AT_FDCWD */, 1 << 20 };
		   return bad[rnd() % 6]; }
	default: return (long)(rnd() & 0xff);
	}
}

static long path_arg(void)
{
	switch (rnd() % 8) {
	case 0: return (long)unterm;
	case 1: {	/* a bad pointer - never the buffer, whose random bytes could name
			   anything ("/..."): a path must stay in the child's directory */
		long v[] = { 0, -1, (long)hole, (long)(rnd() % 0x10000),
			     (long)(0xffff800000000000ull + (rnd() % (1ull << 30))),
			     (long)(0xffffffff80000000ull + (rnd() % (16u << 20))),
			     (long)0x0000800000000000ull, (long)0x8000000000000000ull };
		return v[rnd() % 8];
	}
	default: return (long)names[rnd() % (sizeof names / sizeof names[0])];
	}
}

/* the path arguments: bit i = argument i is a path */
static unsigned paths(long nr)
{
	switch (nr) {
	case 2: case 4: case 6: case 21: case 59: case 76: case 80: case 83: case 84: case 85:
	case 87: case 89: case 90: case 92: case 94: case 132: case 133: case 137: case 161:
	case 188: case 189: case 191: case 192: case 194: case 195: case 197: case 198:
		return 1;
	case 82: case 86: case 88:
		return 3;
	case 257: case 258: case 259: case 260: case 261: case 262: case 263: case 267:
	case 268: case 269: case 280: case 322: case 332: case 437: case 439:
		return 2;
	case 264: case 265: case 316:
		return 2 | 8;
	case 266:
		return 1 | 4;
	default:
		return 0;
	}
}

static int overlaps(uint64_t a, uint64_t n, uint64_t lo, uint64_t hi)
{
	uint64_t e = a + n;
	if (e < a)
		e = ~0ull;
	return a < hi && lo < e;
}

/* the run would only be ended or stalled: see the top comment */
static int skip(long nr, long *a)
{
	uint64_t img0 = (uint64_t)__executable_start & ~4095ull, img1 = ((uint64_t)_end + 4095) & ~4095ull;
	uint64_t len = (uint64_t)a[1];
	switch (nr) {
	case 60: case 231: case 34: case 130: case 15: case 129: case 297:
		return 1;
	case 62: case 200: case 234: {	/* to itself, a signal ignored by default */
		static const long sigs[] = { 0, SIGCHLD, SIGCONT, SIGURG, SIGWINCH };
		long self = sys6(39, 0, 0, 0, 0, 0, 0);
		a[0] = self;
		a[1] = nr == 62 || nr == 200 ? sigs[rnd() % 5] : self;
		if (nr == 234)
			a[2] = sigs[rnd() % 5];
		return 0;
	}
	case 302: case 160: case 97:
		if (nr == 302 && a[0] != 0 && a[0] != sys6(39, 0, 0, 0, 0, 0, 0))
			return 1;
		return 0;
	case 9:
		if (!(a[3] & (MAP_FIXED | 0x100000 /* MAP_FIXED_NOREPLACE */)))
			return 0;
		break;
	case 10: case 11: case 25: case 28: case 26: case 149: case 150:
		break;
	default:
		return 0;
	}
	/* an address range: never over the image, the stack or the buffer region */
	if (nr == 25 && len < 4096)
		len = 4096;
	uint64_t ad = (uint64_t)a[0];
	if (nr == 25)	/* mremap: the old range, and the new place if MREMAP_FIXED */
		if (overlaps((uint64_t)a[4], (uint64_t)a[2], img0, img1) ||
		    overlaps((uint64_t)a[4], (uint64_t)a[2], stack_lo, 0x800000000000ull) ||
		    overlaps((uint64_t)a[4], (uint64_t)a[2], (uint64_t)region, (uint64_t)region + BUF + 8192))
			return 1;
	return overlaps(ad, len, img0, img1) || overlaps(ad, len, stack_lo, 0x800000000000ull) ||
	       overlaps(ad, len, (uint64_t)region, (uint64_t)region + BUF + 8192) ||
	       overlaps(ad, len, (uint64_t)ro, (uint64_t)ro + 4096) || len >= (1ull << 47);
}

static void nonblock(long fd)
{
	long fl = sys6(72, fd, F_GETFL, 0, 0, 0, 0);
	if (fl >= 0 && !(fl & O_NONBLOCK))
		sys6(72, fd, F_SETFL, fl | O_NONBLOCK, 0, 0, 0);
}

static const uint64_t zero_ts[2];
static void short_ts(long *p)
{
	if (!*p)
		*p = (long)zero_ts;
	else if (in_buf((uint64_t)*p, 16)) {
		((uint64_t *)*p)[0] = 0;
		((uint64_t *)*p)[1] = rnd() % 1000;
	}
}

/* the guards: nothing may block for ever */
static void guard(long nr, long *a)
{
	switch (nr) {
	case 0: case 1: case 17: case 18: case 19: case 20: case 16:
		nonblock(a[0]);
		break;
	case 40:
		nonblock(a[0]);
		nonblock(a[1]);
		if ((uint64_t)a[3] > (1u << 20))
			a[3] = 1 << 20;	/* 2 GB (Linux's cap) from /dev/zero: seconds under TCG */
		break;
	case 7:
		a[2] = 0;
		break;
	case 271: case 128:
		short_ts(&a[2]);
		break;
	case 35:
		short_ts(&a[0]);
		break;
	case 230:
		short_ts(&a[2]);
		break;
	case 61:
		a[2] |= WNOHANG;	/* a grandchild is gone at once, but nothing else waits */
		break;
	}
}

static void reap(void)
{
	while (sys6(61, -1, 0, WNOHANG | __WALL, 0, 0, 0) > 0)
		;
}

static long trace_from = -1;	/* argv[4]: print the calls from this index on */
static int trace_fd = -1;

static int child(uint64_t seed, int k, long calls)
{
	st = seed;
	char dir[32];
	snprintf(dir, sizeof dir, "/tmp/fz%d", k);
	if (chdir(dir))
		return 2;
	signal(SIGPIPE, SIG_IGN);	/* a write to a pipe it closed: EPIPE, not the end */
	int nul = open("/dev/null", O_RDWR);
	if (trace_from >= 0) {	/* the console: seen at once, even if the run hangs */
		int con = open("/dev/console", O_WRONLY);
		trace_fd = fcntl(con >= 0 ? con : 1, F_DUPFD, 200);
		close(con);
	}
	dup2(nul, 1);
	dup2(nul, 2);
	close(nul);
	region = mmap(NULL, BUF + 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unterm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED || ro == MAP_FAILED || hole == MAP_FAILED || unterm == MAP_FAILED)
		return 3;
	buf = region + 4096;
	mprotect(buf, BUF, PROT_READ | PROT_WRITE);
	for (int i = 0; i < BUF; i++)
		buf[i] = (char)rnd();
	memset(ro, 0, 4096);	/* zeros: a timespec read from it is 0, not a long sleep */
	mprotect(ro, 4096, PROT_READ);
	munmap(hole, 4096);
	memset(unterm, 'a', 4096);
	mprotect(unterm + 4096, 4096, PROT_NONE);
	int p[2];
	fds[nfds++] = open("/dev/zero", O_RDWR);
	fds[nfds++] = open("/dev/urandom", O_RDONLY);
	fds[nfds++] = open("f", O_RDWR | O_CREAT, 0644);
	fds[nfds++] = open(".", O_RDONLY | O_DIRECTORY);
	if (!pipe2(p, O_NONBLOCK)) {
		fds[nfds++] = p[0];
		fds[nfds++] = p[1];
	}
	fds[nfds++] = 0;
	closed_fd = open("/dev/null", O_RDONLY);
	close(closed_fd);
	sys6(158, 0x1003 /* ARCH_GET_FS */, (long)&fsbase, 0, 0, 0, 0);
	if (trace_fd >= 0)
		dprintf(trace_fd, "%d: buf %p ro %p hole %p unterm %p\n", k, buf, ro, hole, unterm);
	uint64_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	stack_lo = (sp & ~4095ull) - (256u << 10);
	for (long i = 0; i < calls; i++) {
		long nr;
		uint64_t pick = rnd();
		if (pick % 16 == 0) {
			static const long odd[] = { 460, 511, 512, 599, 0x40000000 + 1, 0x40000000 + 39,
						    -1, 0xffffffff };
			nr = odd[(pick >> 8) % 8] + ((pick >> 8) % 8 < 4 ? (long)((pick >> 16) % 8) : 0);
		} else if (pick % 16 < 9) {	/* half the time one ksync implements */
			nr = impl[(pick >> 8) % (sizeof impl / sizeof impl[0])];
		} else {
			nr = (long)((pick >> 8) % 460);
		}
		long a[6];
		unsigned pa = nr >= 0 && nr < 512 ? paths(nr) : 0;
		for (int j = 0; j < 6; j++)
			a[j] = pa & (1u << j) ? path_arg() : arg();
		if (nr >= 0 && nr < 512 && skip(nr, a))
			continue;
		if (nr >= 0 && nr < 512)
			guard(nr, a);
		if (trace_from >= 0 && i % 1000 == 0)
			dprintf(trace_fd, "%d:%ld ...\n", k, i);
		if (trace_from >= 0 && i >= trace_from) {	/* before: a call may not return */
			char line[200];
			int n = snprintf(line, sizeof line, "%d:%ld nr %ld (%lx, %lx, %lx, %lx, %lx, %lx)\n",
					 k, i, nr, a[0], a[1], a[2], a[3], a[4], a[5]);
			sys6(1, trace_fd, (long)line, n, 0, 0, 0);
		}
		long r = sys6(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (trace_from >= 0 && i >= trace_from)
			dprintf(trace_fd, "%d:%ld = %ld\n", k, i, r);
		if (nr == 158)
			sys6(158, 0x1002 /* ARCH_SET_FS */, (long)fsbase, 0, 0, 0, 0);
		if (nr >= 56 && nr <= 58)
			while (sys6(61, -1, 0, __WALL, 0, 0, 0) > 0)
				;
		reap();
	}
	while (sys6(61, -1, 0, __WALL, 0, 0, 0) > 0)
		;
	sys6(231, 0, 0, 0, 0, 0, 0);
	return 0;
}

static int show_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)ftw;
	printf("  left: %s type %d mode %o nlink %ld\n", path, type, sb->st_mode, (long)sb->st_nlink);
	return 0;
}

static int rm_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb; (void)type; (void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		printf("usage: fuzz SEED CHILDREN CALLS\n");
		return 2;
	}
	uint64_t seed = strtoull(argv[1], NULL, 0);
	int kids = atoi(argv[2]);
	long calls = atol(argv[3]);
	if (argc > 4)
		trace_from = atol(argv[4]);
	if (kids < 1 || kids > 16)
		kids = 4;
	printf("fuzz: seed %llu, %d children x %ld calls\n", (unsigned long long)seed, kids, calls);
	fflush(stdout);
	pid_t pid[16];
	for (int k = 0; k < kids; k++) {
		char dir[32];
		snprintf(dir, sizeof dir, "/tmp/fz%d", k);
		mkdir(dir, 0755);
	}
	for (int k = 0; k < kids; k++) {
		pid[k] = fork();
		if (pid[k] == 0)
			_exit(child(seed + (uint64_t)k, k, calls));
		if (pid[k] < 0)
			printf("fork: errno %d\n", errno);
	}
	int bad = 0;
	for (int k = 0; k < kids; k++) {
		if (pid[k] <= 0)
			continue;
		int ws;
		if (waitpid(pid[k], &ws, 0) != pid[k]) {
			printf("child %d: waitpid errno %d\n", k, errno);
			bad++;
		} else if (WIFSIGNALED(ws)) {
			printf("child %d: killed by signal %d\n", k, WTERMSIG(ws));
		} else {
			printf("child %d: exit %d\n", k, WEXITSTATUS(ws));
			bad += WEXITSTATUS(ws) != 0;
		}
	}
	/* musl's nftw descends only as deep as its descriptor limit: the children chdir
	 * into the directories they make, so a tree may be deep */
	int left = 0;
	for (int k = 0; k < kids; k++) {
		char dir[32];
		snprintf(dir, sizeof dir, "/tmp/fz%d", k);
		if (nftw(dir, rm_one, 200, FTW_DEPTH | FTW_PHYS) || access(dir, F_OK) == 0) {
			printf("rm -r %s: errno %d\n", dir, errno);
			nftw(dir, show_one, 200, FTW_PHYS);
			left++;
		}
	}
	printf("fuzz: done%s\n", bad || left ? " (with errors)" : "");
	return bad || left;
}
