/*
 * sprite.c - the nine benchmarks of Hartman & Ousterhout, "Performance Measurements of a
 * Multiprocessor Sprite Kernel" (sections 5.1-5.2; the project's shared/papers/
 * hartman-ousterhout-sprite-mp-locks.md), as one static binary run unchanged on ksync and on Linux: the three
 * macro-benchmarks (pmakeInd, pmake, troff) and the six micro-benchmarks (fork, fexec, mem,
 * cswitch, pdevtest, pdevtestInd) the paper discusses.
 *
 * Usage: sprite run BENCH COPIES SCALE DIR   one benchmark, one line
 *        sprite all COPIES SCALE DIR         the nine in the paper's order, then KSYNC-SPRITE-END
 *        sprite --exit                       exit 0 at once (fexec's exec target)
 *        sprite --cc SRC OUT                 one compile (pmake's job; internal)
 *        sprite --mem REMAINING PAGES        mem's exec-restart loop (internal)
 *        sprite --troff-to OUT DIR           one troff pass of the generated text into OUT
 *                                            (internal: the test checks the output)
 * COPIES 1..64 (instances; pmake: job slots), SCALE 1..1000000 (iterations or passes), DIR
 * a writable directory (created if missing) under which every file the benchmarks make is
 * kept and from which it is removed at the end. fexec, mem, pmake and pmakeInd exec this
 * program by argv[0], which must then be an absolute path.
 *
 * Every benchmark forks its instances, which do their set-up (a partner process, a server,
 * pipes), report ready through a pipe and block on a start pipe; the time runs (CLOCK_MONOTONIC)
 * from the start signal (the start pipe's write end closed: every instance's read sees EOF
 * at once) until the last instance is reaped. Per benchmark one line:
 *   KSYNC-SPRITE {"bench":"fork","copies":2,"scale":100,"ops":200,"elapsed_ns":123456789}
 * ops summed over the instances, in the benchmark's unit:
 *   fork         forks: each instance SCALE times fork, the child _exits, waitpid (5.2.1)
 *   fexec        execs: as fork, the child execve's this program with --exit (5.2.2)
 *   mem          pages: the instance execs --mem SCALE 256; each round grows the heap by brk
 *                in 16-page steps to 256 pages and writes a byte to every new page, then
 *                execs itself to start over in a fresh address space (5.2.3; Sprite's mem
 *                left the pages untouched, which on Linux would map nothing: here each is
 *                faulted in, so that the page tables are built and torn down)
 *   cswitch      round trips: two processes pass a byte back and forth through two pipes
 *   pdevtest     requests: ONE server, COPIES clients; a client writes its index to the
 *                shared request pipe, the server answers on that client's reply pipe.
 *                Sprite's pseudo-device (a device served by a user-level process, 5.2.5) is
 *                stood in for by pipes: ksync has no pseudo-devices, and the kernel path a
 *                request takes - a write that wakes the server, a write that wakes the
 *                client - is the same shape
 *   pdevtestInd  requests: COPIES independent (server, client) pairs, pipes of their own
 *   pmake        files compiled: a fixed tree of 32 generated C files and 4 headers
 *                (DIR/pmake-src, made before the timing), up to COPIES jobs at once (a new
 *                one as soon as one ends, like make -j COPIES), each a fork+execve of
 *                `sprite --cc SRC OUT`; SCALE passes, each pass a make of the whole tree
 *                (5.1.2: the workload does not grow with COPIES)
 *   pmakeInd     files compiled: COPIES independent makes, each over its own copy of the
 *                tree (DIR/pmakeInd-K) with 2 jobs at once, SCALE passes (5.1.1)
 *   troff        passes: each instance formats a generated ~64 KiB man page (DIR/troff.txt;
 *                .TH .SH .PP .B .I .br .sp, \f and \- escapes) into filled, justified
 *                65-column lines written to /dev/null, SCALE passes (5.1.3)
 * The paper's lock statistics (section 4: "new system calls to clear the lock information
 * and to copy the information to user-level"): where /proc/ksync-lockstat exists (ksync's
 * cumulative counts per lock class, one line of JSON), it is read just before the timed
 * part and again after it, and after the benchmark's line both texts are printed as
 *   KSYNC-SPRITE-LOCKS {"bench":"fork","copies":2,"before":<text>,"after":<text>}
 * for the reader to take the difference (no reset: the file is read-only, as /proc is).
 * Absent (ENOENT, as on Linux): no line. Any other failure is one.
 *
 * Errors: bad arguments: a reason on stderr, exit 2. A failing system call: "sprite: BENCH:
 * what: strerror(errno)" on stderr, exit 1; a child's failure (a nonzero status or a signal)
 * is reported by its parent with the child's status and fails the benchmark (the other
 * instances are killed, and the files made so far removed where possible).
 *
 * System calls used (strace -f -c of `sprite all 2 3 DIR` on Linux, musl 1.2.3): fork,
 * execve, wait4, exit_group, pipe, read, write, writev (stdio's), open, close, stat, fstat,
 * mkdir, rmdir, unlink, brk, getpid, gettid and rt_sigprocmask (musl's fork), ioctl
 * (musl's stdout: TIOCGWINSZ), arch_prctl and set_tid_address (musl's start-up),
 * clock_gettime (Linux answers it in the vDSO; a kernel without one gets the system
 * call), and kill (SIGKILL to the other instances, on a failure only). No threads,
 * sockets, poll/select, signal handlers or affinity; no /proc read but the optional
 * lockstat file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXCOPIES	64
#define MAXSCALE	1000000L
#define PATHMAX		4096
#define DIRMAX		(PATHMAX - 64)	/* room for the names the benchmarks add */
#define PAGE		4096
#define MEM_PAGES	256		/* mem: the heap's maximum, in pages */
#define MEM_STEP	16		/* mem: pages per brk */
#define NSRC		32		/* pmake: C files in the tree */
#define NHDR		4		/* pmake: headers */
#define SRC_BYTES	4096		/* pmake: a C file's size, about */
#define OBJ_BYTES	2048		/* pmake: an object file's size */
#define CC_PASSES	600		/* pmake: the compile's optimisation passes (~2 ms natively) */
#define TROFF_COLS	65
#define TROFF_BYTES	65536		/* troff: the input's size, about */
#define LOCKSTAT	"/proc/ksync-lockstat"
#define LOCKSTAT_MAX	(256 * 1024)

static const char *self = "";		/* argv[0]: the exec benchmarks' target */
static const char *bench = "sprite";	/* the benchmark running, for messages */
static pid_t main_pid;			/* the process that prints the lines */
static void (*on_failure)(void);	/* the main process's tidy-up when it fails */
static char dir[PATHMAX];		/* DIR */
static int copies;			/* COPIES */
static long scale;			/* SCALE */
static bool lockstat_on;		/* /proc/ksync-lockstat was read before this run */

#define UBENCH_PROG "sprite"	/* ubench_io.h: the messages' prefix ... */
#define UBENCH_PART bench	/* ... and the part running */

static noreturn void usage(const char *why)
{
	if (why)
		fprintf(stderr, "sprite: %s\n", why);
	fprintf(stderr,
		"usage: sprite run BENCH COPIES SCALE DIR\n"
		"       sprite all COPIES SCALE DIR\n"
		"BENCH: fork fexec mem cswitch pdevtest pdevtestInd pmake pmakeInd troff\n"
		"COPIES 1..%d, SCALE 1..%ld, DIR a writable directory (created if missing)\n",
		MAXCOPIES, MAXSCALE);
	exit(2);
}

#include "ubench_io.h"	/* the wrappers shared with the other program */

static void reap(pid_t pid, const char *who)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid %s (pid %d)", who, (int)pid);
	if (!status_ok(st))
		status_fail(who, pid, st);
}


/* ---- the lock statistics (/proc/ksync-lockstat on ksync; absent on Linux) ---- */

static char ls_before[LOCKSTAT_MAX + 1], ls_after[LOCKSTAT_MAX + 1];
static size_t ls_before_n;

/* The file's one line (ubench_io.h read_one_line); -1 if there is no such file. */
static long lockstat_read(char *buf)
{
	return read_one_line(LOCKSTAT, buf, LOCKSTAT_MAX);
}

/* before the timed part: whether there is a file (its text kept) */
static bool lockstat_before(void)
{
	long n = lockstat_read(ls_before);
	ls_before_n = n > 0 ? (size_t)n : 0;
	return n >= 0;
}

/* after it: both texts as a KSYNC-SPRITE-LOCKS line */
static void lockstat_print(const char *name)
{
	long n = lockstat_read(ls_after);
	if (n < 0)
		fail("%s: gone since the benchmark started", LOCKSTAT);
	printf("KSYNC-SPRITE-LOCKS {\"bench\":\"%s\",\"copies\":%d,\"before\":%.*s,"
	       "\"after\":%.*s}\n", name, copies, (int)ls_before_n, ls_before, (int)n, ls_after);
	fflush(stdout);
}

static void report(const char *name, long ops, uint64_t ns)
{
	printf("KSYNC-SPRITE {\"bench\":\"%s\",\"copies\":%d,\"scale\":%ld,\"ops\":%ld,"
	       "\"elapsed_ns\":%llu}\n", name, copies, scale, ops, (unsigned long long)ns);
	if (fflush(stdout))
		die("write stdout");
}

/* ---- instances: fork them, let them set up, start them together, reap them ---- */

static int start_rd = -1, ready_wr = -1;	/* in an instance: its ends of the group's pipes */

/* in an instance: ready, then wait for the start (the write end's close: EOF) */
static void await_start(void)
{
	put1(ready_wr, 'r', "ready pipe");
	xclose(ready_wr, "ready pipe");
	ready_wr = -1;
	if (get1(start_rd, "start pipe") != -1)
		fail("start pipe: a byte where the start's EOF was expected");
	xclose(start_rd, "start pipe");
	start_rd = -1;
}

/* in a helper an instance forks before the start (a partner, a server): not its business */
static void drop_group_fds(void)
{
	if (ready_wr >= 0)
		close(ready_wr);
	if (start_rd >= 0)
		close(start_rd);
	ready_wr = start_rd = -1;
}

/* Reap the n instances (pid[i] > 0). The first that fails has the others killed and, once
 * all are reaped, fails the benchmark. aborting: an instance ended before it was ready
 * while the others wait for the start: the first one reaped (that one) has the others
 * killed, whatever its status. */
static void group_reap(pid_t *pid, int n, bool aborting)
{
	pid_t bad = 0;
	int bad_st = 0, left = 0;
	for (int i = 0; i < n; i++)
		left += pid[i] > 0;
	while (left) {
		int st;
		pid_t p = waitpid(-1, &st, 0);
		if (p < 0)
			die("waitpid (instances)");
		int i = 0;
		while (i < n && pid[i] != p)
			i++;
		if (i == n)
			continue;		/* not an instance (none expected) */
		pid[i] = 0;
		left--;
		if (!bad && (!status_ok(st) || aborting)) {
			bad = p;
			bad_st = st;
			for (int j = 0; j < n; j++)
				if (pid[j] > 0)
					kill(pid[j], SIGKILL);
		}
	}
	if (bad && !status_ok(bad_st))
		status_fail("instance", bad, bad_st);
	if (aborting)
		fail("an instance ended before it was ready");
}

/* Run n instances of fn(k, arg), k = 0..n-1 (in their own processes); after_fork(arg) in
 * the parent once all are forked (it closes what only the instances use). The time from
 * the start signal to the last instance reaped, in ns. */
static uint64_t group_run(int n, void (*fn)(int k, void *arg), void (*after_fork)(void *arg),
			  void *arg)
{
	int start[2], ready[2];
	pid_t pid[MAXCOPIES + 1];
	xpipe(start, "start");
	xpipe(ready, "ready");
	fflush(stdout);
	for (int k = 0; k < n; k++) {
		pid_t p = fork();
		if (p < 0) {
			int err = errno;
			for (int j = 0; j < k; j++) {	/* the forked ones wait for the start */
				int st;
				kill(pid[j], SIGKILL);
				waitpid(pid[j], &st, 0);
			}
			errno = err;
			die("fork (instance %d of %d)", k, n);
		}
		if (p == 0) {
			on_failure = NULL;
			close(start[1]);
			close(ready[0]);
			start_rd = start[0];
			ready_wr = ready[1];
			fn(k, arg);
			_exit(0);
		}
		pid[k] = p;
	}
	if (after_fork)
		after_fork(arg);
	xclose(start[0], "start pipe");
	xclose(ready[1], "ready pipe");
	char buf[MAXCOPIES + 1];
	size_t got = read_all(ready[0], buf, (size_t)n, "ready pipe");
	xclose(ready[0], "ready pipe");
	if (got < (size_t)n)
		group_reap(pid, n, true);	/* the start pipe still closed to them */
	lockstat_on = lockstat_before();
	uint64_t t0 = now_ns();
	xclose(start[1], "start pipe");		/* the start signal */
	group_reap(pid, n, false);
	uint64_t t = now_ns() - t0;
	if (lockstat_on)	/* read at once, before the benchmark's line is printed */
		lockstat_print(bench);
	lockstat_on = false;
	return t;
}

/* ---- fork, fexec (5.2.1, 5.2.2) ---- */

static void inst_fork(int k, void *arg)
{
	bool exec = arg != NULL;
	(void)k;
	await_start();
	for (long i = 0; i < scale; i++) {
		pid_t p = fork();
		if (p < 0)
			die("fork");
		if (p == 0) {
			if (exec)
				exec_self("--exit", NULL, NULL);
			_exit(0);
		}
		reap(p, "child");
	}
}

static void bench_fork(void)
{
	uint64_t ns = group_run(copies, inst_fork, NULL, NULL);
	report("fork", copies * scale, ns);
}

static void bench_fexec(void)
{
	static int exec_flag;
	uint64_t ns = group_run(copies, inst_fork, NULL, &exec_flag);
	report("fexec", copies * scale, ns);
}

/* ---- mem (5.2.3) ---- */

/* one round: grow the heap by brk, MEM_STEP pages at a time, to pages pages, each new
 * page written once */
static void mem_round(long pages)
{
	uintptr_t cur = (uintptr_t)syscall(SYS_brk, 0);
	uintptr_t base = (cur + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
	for (long done = 0; done < pages;) {
		long step = pages - done < MEM_STEP ? pages - done : MEM_STEP;
		uintptr_t want = base + (uintptr_t)(done + step) * PAGE;
		uintptr_t got = (uintptr_t)syscall(SYS_brk, want);
		if (got < want) {
			errno = ENOMEM;
			die("brk to %ld pages (the break stayed at %#lx)", done + step,
			    (unsigned long)got);
		}
		for (long i = done; i < done + step; i++)
			((volatile char *)base)[i * PAGE] = 1;
		done += step;
	}
}

/* --mem REMAINING PAGES: a round, then exec again while rounds remain */
static int mem_main(long remaining, long pages)
{
	bench = "mem";
	mem_round(pages);
	if (remaining > 1) {
		char r[24], p[24];
		snprintf(r, sizeof r, "%ld", remaining - 1);
		snprintf(p, sizeof p, "%ld", pages);
		exec_self("--mem", r, p);
	}
	return 0;
}

static void inst_mem(int k, void *arg)
{
	char r[24], p[24];
	(void)k;
	(void)arg;
	snprintf(r, sizeof r, "%ld", scale);
	snprintf(p, sizeof p, "%d", MEM_PAGES);
	await_start();
	exec_self("--mem", r, p);
}

static void bench_mem(void)
{
	uint64_t ns = group_run(copies, inst_mem, NULL, NULL);
	report("mem", copies * scale * MEM_PAGES, ns);
}

/* ---- cswitch (5.2.4) ---- */

static void inst_cswitch(int k, void *arg)
{
	int to[2], back[2];
	(void)k;
	(void)arg;
	xpipe(to, "cswitch");
	xpipe(back, "cswitch");
	pid_t p = fork();
	if (p < 0)
		die("fork (partner)");
	if (p == 0) {			/* the partner: each byte back until EOF */
		int c;
		drop_group_fds();
		close(to[1]);
		close(back[0]);
		while ((c = get1(to[0], "pipe")) >= 0)
			put1(back[1], c, "pipe");
		_exit(0);
	}
	xclose(to[0], "pipe");
	xclose(back[1], "pipe");
	await_start();
	for (long i = 0; i < scale; i++) {
		put1(to[1], (int)(i & 0xff), "pipe");
		int c = get1(back[0], "pipe");
		if (c != (int)(i & 0xff))
			fail("round trip %ld: %s", i, c < 0 ? "the partner closed its pipe" :
			     "a different byte came back");
	}
	xclose(to[1], "pipe");
	reap(p, "partner");
}

static void bench_cswitch(void)
{
	uint64_t ns = group_run(copies, inst_cswitch, NULL, NULL);
	report("cswitch", copies * scale, ns);
}

/* ---- pdevtest, pdevtestInd (5.2.5, 5.2.6): pipes for the pseudo-device ---- */

/* the server: a request (the client's index) read, a byte back to that client, until all
 * request pipes' writers have closed; it must have served expect requests */
static void pdev_server(int req_rd, const int *reply_wr, int clients, long expect)
{
	long served = 0;
	int c;
	while ((c = get1(req_rd, "request pipe")) >= 0) {
		if (c >= clients)
			fail("server: a request from client %d of %d", c, clients);
		put1(reply_wr[c], c, "reply pipe");
		served++;
	}
	if (served != expect)
		fail("server: served %ld requests, expected %ld", served, expect);
}

static void pdev_client(int req_wr, int reply_rd, int idx)
{
	for (long i = 0; i < scale; i++) {
		put1(req_wr, idx, "request pipe");
		int c = get1(reply_rd, "reply pipe");
		if (c != idx)
			fail("client %d, request %ld: %s", idx, i, c < 0 ?
			     "the server closed the reply pipe" : "another client's reply");
	}
}

struct pdev {
	int req[2];
	int reply[MAXCOPIES][2];
};

/* instances 0..copies-1 the clients, instance copies the server */
static void inst_pdev(int k, void *arg)
{
	struct pdev *d = arg;
	if (k == copies) {
		int wr[MAXCOPIES];
		xclose(d->req[1], "request pipe");
		for (int j = 0; j < copies; j++) {
			xclose(d->reply[j][0], "reply pipe");
			wr[j] = d->reply[j][1];
		}
		await_start();
		pdev_server(d->req[0], wr, copies, copies * scale);
		return;
	}
	xclose(d->req[0], "request pipe");
	for (int j = 0; j < copies; j++) {
		xclose(d->reply[j][1], "reply pipe");
		if (j != k)
			xclose(d->reply[j][0], "reply pipe");
	}
	await_start();
	pdev_client(d->req[1], d->reply[k][0], k);
}

static void pdev_parent_close(void *arg)
{
	struct pdev *d = arg;
	xclose(d->req[0], "request pipe");
	xclose(d->req[1], "request pipe");
	for (int j = 0; j < copies; j++) {
		xclose(d->reply[j][0], "reply pipe");
		xclose(d->reply[j][1], "reply pipe");
	}
}

static void bench_pdevtest(void)
{
	static struct pdev d;
	xpipe(d.req, "requests");
	for (int j = 0; j < copies; j++)
		xpipe(d.reply[j], "replies");
	uint64_t ns = group_run(copies + 1, inst_pdev, pdev_parent_close, &d);
	report("pdevtest", copies * scale, ns);
}

static void inst_pdev_ind(int k, void *arg)
{
	int req[2], rep[2];
	(void)k;
	(void)arg;
	xpipe(req, "requests");
	xpipe(rep, "replies");
	pid_t p = fork();
	if (p < 0)
		die("fork (server)");
	if (p == 0) {
		drop_group_fds();
		xclose(req[1], "request pipe");
		xclose(rep[0], "reply pipe");
		pdev_server(req[0], &rep[1], 1, scale);
		_exit(0);
	}
	xclose(req[0], "request pipe");
	xclose(rep[1], "reply pipe");
	await_start();
	pdev_client(req[1], rep[0], 0);
	xclose(req[1], "request pipe");
	reap(p, "server");
}

static void bench_pdevtest_ind(void)
{
	uint64_t ns = group_run(copies, inst_pdev_ind, NULL, NULL);
	report("pdevtestInd", copies * scale, ns);
}

/* generated text (deterministic): rnd, struct text, tprintf, text_write - ubench_io.h */

/* ---- pmake, pmakeInd (5.1.1, 5.1.2) ---- */

static const char *const cw[] = {
	"proc", "job", "list", "node", "hist", "alias", "var", "word", "glob", "lex", "parse",
	"exec", "dir", "path", "sig", "time", "buf", "str", "arg", "cmd", "set", "wait", "pipe",
	"file", "err", "char", "line", "eval", "expr", "hash",
};
#define NCW (sizeof cw / sizeof cw[0])

static void c_ident(struct text *t, uint32_t a, uint32_t b)
{
	text_ident(t, cw, NCW, a, b);
}

/* header h: macros and prototypes */
static void gen_header(struct text *t, int h)
{
	rng = 0x9e3779b9u ^ (uint32_t)(h + 1) * 2654435761u;
	tprintf(t, "/* h%d.h - generated header for the pmake benchmark */\n", h);
	tprintf(t, "#ifndef H%d_H\n#define H%d_H\n\n", h, h);
	for (int i = 0; i < 16; i++)
		tprintf(t, "#define %s_%s_%d %u\n", cw[rnd(NCW)], cw[rnd(NCW)], h, rnd(4096));
	tprintf(t, "\n");
	for (int i = 0; i < 12; i++) {
		tprintf(t, "extern int ");
		c_ident(t, (uint32_t)(h * 7 + i), (uint32_t)i * 3 + (uint32_t)h);
		tprintf(t, "(int a, int b);\n");
	}
	tprintf(t, "struct %s_%d { int %s; int %s; char *%s; };\n\n#endif\n", cw[h], h,
		cw[rnd(NCW)], cw[rnd(NCW)], cw[rnd(NCW)]);
}

/* C file i: two or three includes, a table, functions up to SRC_BYTES */
static void gen_source(struct text *t, int i)
{
	rng = 0x85ebca6bu ^ (uint32_t)(i + 1) * 2246822519u;
	tprintf(t, "/* c%02d.c - generated source for the pmake benchmark */\n", i);
	tprintf(t, "#include \"h%d.h\"\n#include \"h%d.h\"\n", i % NHDR, (i + 1) % NHDR);
	if (i % 3 == 0)
		tprintf(t, "#include \"h%d.h\"\n", (i + 2) % NHDR);
	tprintf(t, "\nstatic int tbl_%02d[16] = {", i);
	for (int k = 0; k < 16; k++)
		tprintf(t, "%s%u", k ? ", " : " ", rnd(1000));
	tprintf(t, " };\n\n");
	for (int f = 0; t->len < SRC_BYTES - 200; f++) {
		tprintf(t, "int ");
		c_ident(t, rnd(NCW), rnd(NCW));
		tprintf(t, "_%02d_%d(int a, int b)\n{\n\tint x = a * %u + b, y = %u;\n", i, f,
			rnd(97), rnd(50));
		int stmts = 4 + (int)rnd(5);
		for (int s = 0; s < stmts; s++) {
			switch (rnd(5)) {
			case 0:
				tprintf(t, "\tx = x * %u + ", rnd(31) + 1);
				c_ident(t, (uint32_t)(((i + s) % NHDR) * 7 + (int)rnd(12)),
					(uint32_t)rnd(12) * 3 + (uint32_t)((i + s) % NHDR));
				tprintf(t, "(a, y);\n");
				break;
			case 1:
				tprintf(t, "\tif (x > %u) {\n\t\ty = x - tbl_%02d[%u];\n\t\tx >>= 1;\n"
					"\t}\n", rnd(1000), i, rnd(16));
				break;
			case 2:
				tprintf(t, "\twhile (y-- > 0)\n\t\tx ^= y << %u;\n", rnd(8));
				break;
			case 3:
				tprintf(t, "\ty += (x & 0x%x) != 0 ? a : b;\n", rnd(256));
				break;
			default:
				tprintf(t, "\tfor (int i = 0; i < %u; i++)\n\t\ttbl_%02d[i & 15] += "
					"x + i;\n", rnd(20) + 1, i);
				break;
			}
		}
		tprintf(t, "\treturn x ^ y;\n}\n\n");
	}
}

static char gen_buf[4 * SRC_BYTES];

/* a tree: src (NSRC C files, NHDR headers) and obj (empty, for the objects) */
static void tree_make(const char *src, const char *obj)
{
	char path[PATHMAX];
	struct text t = { gen_buf, 0, sizeof gen_buf };
	xmkdir(src);
	xmkdir(obj);
	for (int h = 0; h < NHDR; h++) {
		t.len = 0;
		gen_header(&t, h);
		mkpath(path, "%s/h%d.h", src, h);
		text_write(path, &t, O_TRUNC);
	}
	for (int i = 0; i < NSRC; i++) {
		t.len = 0;
		gen_source(&t, i);
		mkpath(path, "%s/c%02d.c", src, i);
		text_write(path, &t, O_TRUNC);
	}
}

static void tree_remove(const char *src, const char *obj, bool strict)
{
	char path[PATHMAX];
	for (int i = 0; i < NSRC; i++) {
		mkpath(path, "%s/c%02d.o", obj, i);
		rm(path, false, strict);
		mkpath(path, "%s/c%02d.c", src, i);
		rm(path, false, strict);
	}
	for (int h = 0; h < NHDR; h++) {
		mkpath(path, "%s/h%d.h", src, h);
		rm(path, false, strict);
	}
	rm(obj, true, strict);
	rm(src, true, strict);
}

/* a make of the tree, passes times: jobs compiles at once, each pass ending before the
 * next begins (a make of the whole tree each) */
static void make_tree(const char *src, const char *obj, int jobs, long passes)
{
	pid_t job[MAXCOPIES];
	int file[MAXCOPIES];
	char s[PATHMAX], o[PATHMAX], who[64];
	for (long pass = 0; pass < passes; pass++) {
		int next = 0, running = 0, done = 0;
		while (done < NSRC) {
			while (running < jobs && next < NSRC) {
				mkpath(s, "%s/c%02d.c", src, next);
				mkpath(o, "%s/c%02d.o", obj, next);
				pid_t p = fork();
				if (p < 0)
					die("fork (job)");
				if (p == 0)
					exec_self("--cc", s, o);
				job[running] = p;
				file[running++] = next++;
			}
			int st;
			pid_t p = waitpid(-1, &st, 0);
			if (p < 0)
				die("waitpid (jobs)");
			int j = 0;
			while (j < running && job[j] != p)
				j++;
			if (j == running)
				continue;
			if (!status_ok(st)) {
				snprintf(who, sizeof who, "the compile of c%02d.c", file[j]);
				for (int r = 0; r < running; r++)	/* the others finish first */
					if (r != j)
						waitpid(job[r], &(int){ 0 }, 0);
				status_fail(who, p, st);
			}
			job[j] = job[--running];
			file[j] = file[running];
			done++;
		}
	}
}

struct make_arg {
	int jobs;
	bool ind;		/* pmakeInd: instance k's own tree */
};

static void pmake_paths(int k, char *src, char *obj)
{
	if (k < 0) {
		mkpath(src, "%s/pmake-src", dir);
		mkpath(obj, "%s/pmake-obj", dir);
	} else {
		mkpath(src, "%s/pmakeInd-%d/src", dir, k);
		mkpath(obj, "%s/pmakeInd-%d/obj", dir, k);
	}
}

/* pmake: the one instance, tree -1; pmakeInd: instance k, tree k */
static void inst_make(int k, void *arg)
{
	const struct make_arg *m = arg;
	char src[PATHMAX], obj[PATHMAX];
	pmake_paths(m->ind ? k : -1, src, obj);
	await_start();
	make_tree(src, obj, m->jobs, scale);
}

static int trees_made;		/* pmakeInd: trees made so far (pmake: -1 when made) */

static void trees_remove(bool strict)
{
	char src[PATHMAX], obj[PATHMAX], root[PATHMAX];
	if (trees_made < 0) {
		pmake_paths(-1, src, obj);
		tree_remove(src, obj, strict);
	}
	for (int k = 0; k < trees_made; k++) {
		pmake_paths(k, src, obj);
		tree_remove(src, obj, strict);
		mkpath(root, "%s/pmakeInd-%d", dir, k);
		rm(root, true, strict);
	}
	trees_made = 0;
}

static void trees_tidy(void)
{
	trees_remove(false);
}

static void bench_pmake(void)
{
	char src[PATHMAX], obj[PATHMAX];
	struct make_arg m = { copies, false };
	on_failure = trees_tidy;
	pmake_paths(-1, src, obj);
	trees_made = -1;
	tree_make(src, obj);
	uint64_t ns = group_run(1, inst_make, NULL, &m);
	trees_remove(true);
	on_failure = NULL;
	report("pmake", NSRC * scale, ns);
}

static void bench_pmake_ind(void)
{
	char src[PATHMAX], obj[PATHMAX], root[PATHMAX];
	struct make_arg m = { 2, true };
	on_failure = trees_tidy;
	trees_made = 0;
	for (int k = 0; k < copies; k++) {
		mkpath(root, "%s/pmakeInd-%d", dir, k);
		xmkdir(root);
		trees_made = k + 1;
		pmake_paths(k, src, obj);
		tree_make(src, obj);
	}
	uint64_t ns = group_run(copies, inst_make, NULL, &m);
	trees_remove(true);
	on_failure = NULL;
	report("pmakeInd", copies * NSRC * scale, ns);
}

/* ---- --cc SRC OUT: the compiler-shaped job ---- */

#include "cc_front.h"	/* the compile's front end, shared with the other program */

/* --cc SRC OUT: the compile (cc_front.h cc_compile), its object written to OUT */
static int cc_main(const char *src, const char *out)
{
	static unsigned char obj[OBJ_BYTES];
	bench = "cc";
	cc_compile(src, obj);
	int fd = xopen(out, O_WRONLY | O_CREAT | O_TRUNC);
	write_all(fd, obj, sizeof obj, out);
	xclose(fd, out);
	return 0;
}

/* ---- troff (5.1.3) ---- */

static const char *const tw[] = {
	"the", "shell", "command", "is", "a", "of", "and", "to", "in", "which", "variable",
	"job", "history", "list", "when", "input", "output", "file", "name", "directory",
	"alias", "substitution", "process", "terminal", "control", "argument", "word", "may",
	"be", "with", "each", "are", "by", "this", "if", "not", "status", "background",
	"foreground", "signal", "expression", "character", "quoted", "login", "path", "set",
	"value", "first", "last", "event", "pipeline", "standard", "error", "environment",
	"interrupt", "following", "given", "then", "otherwise", "executed", "reads", "from",
	"or", "its", "that", "as", "for", "on", "all", "one", "new", "user", "number",
};
#define NTW (sizeof tw / sizeof tw[0])

static const char *const sections[] = {
	"DESCRIPTION", "OPTIONS", "LEXICAL STRUCTURE", "COMMANDS", "JOBS", "STATUS REPORTING",
	"SUBSTITUTIONS", "HISTORY SUBSTITUTION", "ALIAS SUBSTITUTION", "VARIABLE SUBSTITUTION",
	"COMMAND SUBSTITUTION", "FILENAME SUBSTITUTION", "EXPRESSIONS", "CONTROL FLOW",
	"BUILTIN COMMANDS", "PREDEFINED VARIABLES", "SIGNAL HANDLING", "ENVIRONMENT", "FILES",
	"LIMITATIONS", "SEE ALSO", "BUGS",
};
#define NSECT (sizeof sections / sizeof sections[0])

/* a sentence as input lines of up to ~70 characters (the man-page convention: a sentence
 * starts a line); now and then a word in \fB...\fR or \fI...\fR or an option like \-x */
static void gen_sentence(struct text *t)
{
	int words = 6 + (int)rnd(12), col = 0;
	for (int w = 0; w < words; w++) {
		char word[64];
		const char *s = tw[rnd(NTW)];
		uint32_t kind = rnd(24);
		if (kind == 0)
			snprintf(word, sizeof word, "\\fB%s\\fR", s);
		else if (kind == 1)
			snprintf(word, sizeof word, "\\fI%s\\fP", s);
		else if (kind == 2)
			snprintf(word, sizeof word, "\\-%c", 'a' + (int)rnd(26));
		else
			snprintf(word, sizeof word, "%s", s);
		if (w == 0 && word[0] >= 'a' && word[0] <= 'z')
			word[0] = (char)(word[0] - 'a' + 'A');
		int n = (int)strlen(word);
		if (col && col + 1 + n > 70) {
			tprintf(t, "\n");
			col = 0;
		}
		tprintf(t, "%s%s", col ? " " : "", word);
		col += (col ? 1 : 0) + n;
	}
	tprintf(t, "%s\n", rnd(8) == 0 ? "?" : ".");
}

/* the man page: .TH, NAME, SYNOPSIS, then sections of paragraphs up to TROFF_BYTES */
static void gen_manpage(struct text *t)
{
	rng = 0x2545f491u;
	tprintf(t, ".TH CSH 1 \"User Commands\"\n.SH NAME\ncsh \\- a shell (command interpreter)"
		" with C-like syntax\n.SH SYNOPSIS\n.B csh\n[ \\-bcefinstvVxX ] [ argument ... ]\n");
	for (int s = 0; t->len < TROFF_BYTES; s++) {
		tprintf(t, ".SH %s\n", sections[s % NSECT]);
		int paras = 2 + (int)rnd(4);
		for (int p = 0; p < paras && t->len < TROFF_BYTES; p++) {
			if (p)
				tprintf(t, "%s", rnd(6) ? ".PP\n" : "\n");
			int sents = 3 + (int)rnd(5);
			for (int k = 0; k < sents; k++) {
				gen_sentence(t);
				uint32_t m = rnd(10);
				if (m == 0)
					tprintf(t, ".B %s %s\n", tw[rnd(NTW)], tw[rnd(NTW)]);
				else if (m == 1)
					tprintf(t, ".I %s\n", tw[rnd(NTW)]);
				else if (m == 2)
					tprintf(t, ".br\n");
			}
			if (rnd(12) == 0)
				tprintf(t, ".sp\n");
		}
	}
}

struct fmt {
	int fd;
	size_t olen;
	char out[16384];		/* pending output */
	char words[1024];		/* the line being filled: its words' text */
	size_t wlen;
	uint16_t woff[TROFF_COLS], wl[TROFF_COLS];
	bool wsent[TROFF_COLS];		/* a sentence ends with the word: two spaces after */
	int nw, width;			/* words, and their width with the minimal gaps */
	int indent;
	bool right;			/* spread the extra spaces from the right this time */
	bool blank;			/* the last line out was blank (or none yet) */
	char font;			/* 'R', 'B' (upper case on this device) or 'I' */
};

static void fmt_flush_out(struct fmt *f)
{
	write_all(f->fd, f->out, f->olen, "troff output");
	f->olen = 0;
}

static void fmt_emit(struct fmt *f, const char *s, size_t n)
{
	if (f->olen + n + 1 > sizeof f->out)
		fmt_flush_out(f);
	memcpy(f->out + f->olen, s, n);
	f->olen += n;
	f->out[f->olen++] = '\n';
	f->blank = n == 0;
}

static void fmt_blank(struct fmt *f)
{
	if (!f->blank)
		fmt_emit(f, "", 0);
}

/* the filled line out: justified (extra spaces spread over the gaps, from the left and
 * from the right on alternate lines) or, at a break, as it is */
static void fmt_line(struct fmt *f, bool justify)
{
	char line[2 * TROFF_COLS];
	if (f->nw == 0)
		return;
	int gaps = f->nw - 1, extra = justify && gaps ? TROFF_COLS - f->indent - f->width : 0;
	int q = gaps ? extra / gaps : 0, r = gaps ? extra % gaps : 0, n = 0;
	memset(line, ' ', (size_t)f->indent);
	n = f->indent;
	for (int i = 0; i < f->nw; i++) {
		memcpy(line + n, f->words + f->woff[i], f->wl[i]);
		n += f->wl[i];
		if (i < gaps) {
			int sp = (f->wsent[i] ? 2 : 1) + q;
			if (f->right ? i >= gaps - r : i < r)
				sp++;
			memset(line + n, ' ', (size_t)sp);
			n += sp;
		}
	}
	if (justify && gaps)
		f->right = !f->right;
	fmt_emit(f, line, (size_t)n);
	f->nw = f->width = 0;
	f->wlen = 0;
}

static void fmt_word(struct fmt *f, const char *w, int n, bool sent)
{
	int avail = TROFF_COLS - f->indent;
	while (n > avail) {		/* longer than a line: cut */
		fmt_line(f, false);
		fmt_word(f, w, avail, false);
		w += avail;
		n -= avail;
	}
	if (n == 0)
		return;
	int gap = f->nw ? (f->wsent[f->nw - 1] ? 2 : 1) : 0;
	if (f->nw && f->width + gap + n > avail) {
		fmt_line(f, true);
		gap = 0;
	}
	memcpy(f->words + f->wlen, w, (size_t)n);
	f->woff[f->nw] = (uint16_t)f->wlen;
	f->wl[f->nw] = (uint16_t)n;
	f->wsent[f->nw++] = sent;
	f->wlen += (size_t)n;
	f->width += gap + n;
}

/* the words of text (escapes interpreted: \f fonts, \- \e \&), filled; force: the font
 * for this text only (.B, .I) */
static void fmt_text(struct fmt *f, const char *s, size_t n, char force)
{
	char word[256];
	size_t i = 0;
	while (i < n) {
		while (i < n && (s[i] == ' ' || s[i] == '\t'))
			i++;
		int wn = 0;
		while (i < n && s[i] != ' ' && s[i] != '\t') {
			char c = s[i++];
			if (c == '\\' && i < n) {
				char e = s[i++];
				if (e == 'f' && i < n) {
					char ft = s[i++];
					f->font = ft == 'P' ? 'R' : ft;
					continue;
				}
				if (e == '&')
					continue;
				c = e == 'e' ? '\\' : e;	/* \- and the rest: the character */
			}
			char font = force ? force : f->font;
			if (font == 'B' && c >= 'a' && c <= 'z')
				c = (char)(c - 'a' + 'A');
			if (wn < (int)sizeof word)
				word[wn++] = c;
		}
		if (wn) {
			size_t k = i;
			while (k < n && (s[k] == ' ' || s[k] == '\t'))
				k++;
			int e = wn;
			while (e > 0 && (word[e - 1] == ')' || word[e - 1] == '"'))
				e--;
			bool sent = k == n && e > 0 && (word[e - 1] == '.' || word[e - 1] == '?' ||
						       word[e - 1] == '!');
			fmt_word(f, word, wn, sent);
		}
	}
}

/* a request's arguments: words, "quoted" ones whole; up to max */
static int fmt_args(const char *s, size_t n, const char **arg, int *len, int max)
{
	int k = 0;
	size_t i = 0;
	while (i < n && k < max) {
		while (i < n && s[i] == ' ')
			i++;
		if (i == n)
			break;
		bool q = s[i] == '"';
		size_t b = q ? ++i : i;
		while (i < n && (q ? s[i] != '"' : s[i] != ' '))
			i++;
		arg[k] = s + b;
		len[k++] = (int)(i - b);
		if (q && i < n)
			i++;
	}
	return k;
}

/* one pass: the text formatted into f->fd */
static void troff_format(struct fmt *f, const char *in, size_t n)
{
	bool heading_next = false;
	f->olen = f->wlen = 0;
	f->nw = f->width = 0;
	f->indent = 0;
	f->right = false;
	f->blank = true;
	f->font = 'R';
	for (size_t i = 0; i < n;) {
		size_t e = i;
		while (e < n && in[e] != '\n')
			e++;
		const char *l = in + i;
		size_t len = e - i;
		i = e + 1;
		if (len && l[0] == '.') {
			const char *arg[8];
			int alen[8];
			size_t r = 1;
			while (r < len && r < 3 && l[r] != ' ')
				r++;
			int na = fmt_args(l + r, len - r, arg, alen, 8);
			if (r == 3 && !memcmp(l, ".TH", 3)) {
				char hd[TROFF_COLS + 1], side[32];
				fmt_line(f, false);
				int sn = snprintf(side, sizeof side, "%.*s(%.*s)", na > 0 ? alen[0] : 0,
						  na > 0 ? arg[0] : "", na > 1 ? alen[1] : 0,
						  na > 1 ? arg[1] : "");
				sn = sn < 20 ? sn : 20;
				int mid = na > 2 ? (alen[2] < TROFF_COLS - 2 * sn - 2 ? alen[2] :
						    TROFF_COLS - 2 * sn - 2) : 0;
				memset(hd, ' ', TROFF_COLS);
				memcpy(hd, side, (size_t)sn);
				if (mid > 0)
					memcpy(hd + (TROFF_COLS - mid) / 2, arg[2], (size_t)mid);
				memcpy(hd + TROFF_COLS - sn, side, (size_t)sn);
				fmt_emit(f, hd, TROFF_COLS);
				fmt_emit(f, "", 0);
			} else if (r == 3 && !memcmp(l, ".SH", 3)) {
				fmt_line(f, false);
				fmt_blank(f);
				f->indent = 0;
				if (na == 0)
					heading_next = true;
				else
					fmt_text(f, l + r, len - r, 'B');
				fmt_line(f, false);
				f->indent = 7;
			} else if ((r == 3 && (!memcmp(l, ".PP", 3) || !memcmp(l, ".LP", 3) ||
					       !memcmp(l, ".sp", 3))) || (r == 2 && l[1] == 'P')) {
				fmt_line(f, false);
				fmt_blank(f);
			} else if (r == 3 && !memcmp(l, ".br", 3)) {
				fmt_line(f, false);
			} else if (r == 2 && (l[1] == 'B' || l[1] == 'I')) {
				fmt_text(f, l + r, len - r, l[1]);
			}
			/* other requests: ignored, as troff ignores undefined ones */
			continue;
		}
		if (heading_next) {
			f->indent = 0;
			fmt_text(f, l, len, 'B');
			fmt_line(f, false);
			f->indent = 7;
			heading_next = false;
			continue;
		}
		if (len == 0) {			/* a blank input line: break, blank line */
			fmt_line(f, false);
			fmt_emit(f, "", 0);
			continue;
		}
		if (l[0] == ' ' || l[0] == '\t')	/* leading space: a break */
			fmt_line(f, false);
		fmt_text(f, l, len, 0);
	}
	fmt_line(f, false);
	fmt_flush_out(f);
}

static char troff_in[4 * TROFF_BYTES];
static char troff_path[PATHMAX];
static struct fmt troff_fmt;

/* one pass: the input read from its file, formatted into out (a path) */
static void troff_pass(const char *out, int oflags)
{
	int fd = xopen(troff_path, O_RDONLY);
	size_t n = read_all(fd, troff_in, sizeof troff_in, troff_path);
	xclose(fd, troff_path);
	if (n == sizeof troff_in)
		fail("%s: larger than %zu bytes", troff_path, sizeof troff_in - 1);
	troff_fmt.fd = xopen(out, oflags);
	troff_format(&troff_fmt, troff_in, n);
	xclose(troff_fmt.fd, out);
}

static void troff_input(void)
{
	struct text t = { troff_in, 0, sizeof troff_in };
	mkpath(troff_path, "%s/troff.txt", dir);
	gen_manpage(&t);
	text_write(troff_path, &t, O_TRUNC);
}

static void troff_tidy(void)
{
	rm(troff_path, false, false);
}

static void inst_troff(int k, void *arg)
{
	(void)k;
	(void)arg;
	await_start();
	for (long p = 0; p < scale; p++)
		troff_pass("/dev/null", O_WRONLY);
}

static void bench_troff(void)
{
	on_failure = troff_tidy;
	troff_input();
	uint64_t ns = group_run(copies, inst_troff, NULL, NULL);
	rm(troff_path, false, true);
	on_failure = NULL;
	report("troff", copies * scale, ns);
}

/* --troff-to OUT DIR: one pass into OUT (the test reads it) */
static int troff_to_main(const char *out)
{
	bench = "troff";
	main_pid = getpid();
	prepare_dir();
	on_failure = troff_tidy;
	troff_input();
	troff_pass(out, O_WRONLY | O_CREAT | O_TRUNC);
	rm(troff_path, false, true);
	on_failure = NULL;
	return 0;
}

/* ---- the command line ---- */

static const struct {
	const char *name;
	void (*run)(void);
	bool execs;		/* execs argv[0] */
} benches[] = {
	{ "fork", bench_fork, false },
	{ "fexec", bench_fexec, true },
	{ "mem", bench_mem, true },
	{ "cswitch", bench_cswitch, false },
	{ "pdevtest", bench_pdevtest, false },
	{ "pdevtestInd", bench_pdevtest_ind, false },
	{ "pmake", bench_pmake, true },
	{ "pmakeInd", bench_pmake_ind, true },
	{ "troff", bench_troff, false },
};
#define NBENCH ((int)(sizeof benches / sizeof benches[0]))

static long number(const char *name, const char *s, long lo, long hi)
{
	long v = 0;
	bool ok = *s != '\0';
	for (const char *p = s; *p && ok; p++) {
		ok = *p >= '0' && *p <= '9';
		if (ok && v <= hi)
			v = v * 10 + (*p - '0');
	}
	if (!ok || v < lo || v > hi)
		bad_arg("%s must be %ld..%ld, not '%s'", name, lo, hi, s);
	return v;
}

static void set_dir(const char *d)
{
	if (!*d)
		bad_arg("DIR must not be empty");
	if (strlen(d) > DIRMAX)
		bad_arg("DIR is longer than %d characters", DIRMAX);
	strcpy(dir, d);
}

static void need_absolute_self(const char *name)
{
	if (self[0] != '/')
		bad_arg("%s execs this program by argv[0], which is not an absolute path: '%s'",
			name, self);
}

static void run_one(int b)
{
	bench = benches[b].name;
	lockstat_on = false;
	benches[b].run();
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--exit"))
		return 0;
	if (argc > 0 && argv[0])
		self = argv[0];
	if (argc < 2)
		usage(NULL);
	const char *mode = argv[1];
	if (!strcmp(mode, "--cc")) {
		if (argc != 4)
			usage("--cc takes SRC OUT");
		return cc_main(argv[2], argv[3]);
	}
	if (!strcmp(mode, "--mem")) {
		if (argc != 4)
			usage("--mem takes REMAINING PAGES");
		long r = number("REMAINING", argv[2], 1, MAXSCALE);
		long p = number("PAGES", argv[3], 1, 65536);
		need_absolute_self("mem");
		return mem_main(r, p);
	}
	if (!strcmp(mode, "--troff-to")) {
		if (argc != 4)
			usage("--troff-to takes OUT DIR");
		set_dir(argv[3]);
		return troff_to_main(argv[2]);
	}
	int first = 0, last = NBENCH - 1, arg = 2;
	if (!strcmp(mode, "run")) {
		if (argc != 6)
			usage("run takes BENCH COPIES SCALE DIR");
		while (first < NBENCH && strcmp(benches[first].name, argv[2]))
			first++;
		if (first == NBENCH)
			bad_arg("unknown benchmark '%s'", argv[2]);
		last = first;
		arg = 3;
	} else if (!strcmp(mode, "all")) {
		if (argc != 5)
			usage("all takes COPIES SCALE DIR");
	} else {
		bad_arg("unknown command '%s'", mode);
	}
	copies = (int)number("COPIES", argv[arg], 1, MAXCOPIES);
	scale = number("SCALE", argv[arg + 1], 1, MAXSCALE);
	set_dir(argv[arg + 2]);
	main_pid = getpid();		/* the process that tidies up on a failure */
	for (int b = first; b <= last; b++)
		if (benches[b].execs)
			need_absolute_self(benches[b].name);
	bench = first == last ? benches[first].name : "all";
	prepare_dir();
	for (int b = first; b <= last; b++)
		run_one(b);
	if (first != last) {
		printf("KSYNC-SPRITE-END\n");
		if (fflush(stdout))
			die("write stdout");
	}
	return 0;
}
