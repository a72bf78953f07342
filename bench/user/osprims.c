/*
 * osprims.c - operating-system primitives in the manner of lmbench (McVoy & Staelin 1996),
 * one static binary run unchanged on ksync and on Linux in the same QEMU configuration
 * (tools/ksync/osprims.py): the OS-primitives table of ksync against Linux.
 *
 * Usage: osprims [BATCHES [SCALE]]   (default 5 1; SCALE multiplies every row's count)
 *        osprims --exit               (exit 0 at once: the image fork+execve runs)
 *
 * Each row is BATCHES batches of N operations; a batch's time is CLOCK_MONOTONIC's
 * (the same clock on both kernels), printed per operation in ns (pipe_bw: MB/s). One line
 * per row:
 *   OSPRIM {"name":"getppid","unit":"ns","n":2000,"batches":[812.5,...]}
 *   OSPRIM {"name":"sh_c_true","error":"no /bin/sh"}     (a row that could not run)
 * then "OSPRIM-END". Rows: getppid (the null system call), read_zero / write_null (1 byte),
 * open_close, stat, fork_exit (fork, the child _exits, waitpid), fork_execve (the child
 * execs this file with --exit), sh_c_true (fork + exec of /bin/sh -c true), pipe_rtt (one
 * byte there and back between two processes), ctx_yield (two processes on CPU 0 yielding
 * to each other: per switch; an error where the kernel left them on other CPUs), pipe_bw (8 MiB in 64 KiB writes to a child), page_fault
 * (a write to each page of fresh anonymous memory), sig_install (sigaction), sig_deliver
 * (kill of the process itself, the handler runs).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXB 32

static const char *self;
static int batches = 5, scale = 1;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void emit(const char *name, const char *unit, long n, const double *v)
{
	printf("OSPRIM {\"name\":\"%s\",\"unit\":\"%s\",\"n\":%ld,\"batches\":[", name, unit, n);
	for (int b = 0; b < batches; b++)
		printf("%s%.1f", b ? "," : "", v[b]);
	printf("]}\n");
	fflush(stdout);
}

static void fail(const char *name, const char *what)
{
	printf("OSPRIM {\"name\":\"%s\",\"error\":\"%s: errno %d\"}\n", name, what, errno);
	fflush(stdout);
}

/* one row: fn(n) does n operations and returns 0, or -1 (errno says why) */
static void row(const char *name, long n, int (*fn)(long))
{
	double v[MAXB];
	n *= scale;
	for (int b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();
		if (fn(n)) {
			fail(name, "failed");
			return;
		}
		v[b] = (double)(now_ns() - t0) / (double)n;
	}
	emit(name, "ns", n, v);
}

static int fd_zero = -1, fd_null = -1;
static const char *file = "osprims.tmp";

static int op_getppid(long n)
{
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}

static int op_read(long n)
{
	char c;
	for (long i = 0; i < n; i++)
		if (read(fd_zero, &c, 1) != 1)
			return -1;
	return 0;
}

static int op_write(long n)
{
	char c = 0;
	for (long i = 0; i < n; i++)
		if (write(fd_null, &c, 1) != 1)
			return -1;
	return 0;
}

static int op_open_close(long n)
{
	for (long i = 0; i < n; i++) {
		int fd = open(file, O_RDONLY);
		if (fd < 0 || close(fd))
			return -1;
	}
	return 0;
}

static int op_stat(long n)
{
	struct stat st;
	for (long i = 0; i < n; i++)
		if (stat(file, &st))
			return -1;
	return 0;
}

static int wait_ok(pid_t p)
{
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : (errno = ECHILD, -1);
}

static int op_fork(long n)
{
	for (long i = 0; i < n; i++) {
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (wait_ok(p))
			return -1;
	}
	return 0;
}

static int spawn(const char *path, char *const argv[])
{
	pid_t p = fork();
	if (p == 0) {
		char *envp[] = { "PATH=/bin:/usr/bin", NULL };
		execve(path, argv, envp);
		_exit(127);
	}
	return wait_ok(p);
}

static int op_execve(long n)
{
	char *argv[] = { (char *)self, "--exit", NULL };
	for (long i = 0; i < n; i++)
		if (spawn(self, argv))
			return -1;
	return 0;
}

static int op_sh(long n)
{
	char *argv[] = { "sh", "-c", "true", NULL };
	for (long i = 0; i < n; i++)
		if (spawn("/bin/sh", argv))
			return -1;
	return 0;
}

/* a child that echoes bytes from one pipe to the other until EOF */
static int echo_pair(int to[2], int from[2], pid_t *child)
{
	if (pipe(to) || pipe(from))
		return -1;
	*child = fork();
	if (*child < 0)
		return -1;
	if (*child == 0) {
		char c;
		close(to[1]);
		close(from[0]);
		while (read(to[0], &c, 1) == 1)
			if (write(from[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	return 0;
}

static int op_pipe_rtt(long n)
{
	int to[2], from[2];
	pid_t child;
	if (echo_pair(to, from, &child))
		return -1;
	char c = 'x';
	int rc = 0;
	for (long i = 0; i < n && !rc; i++)
		if (write(to[1], &c, 1) != 1 || read(from[0], &c, 1) != 1)
			rc = -1;
	close(to[1]);
	close(from[0]);
	return wait_ok(child) || rc ? -1 : 0;
}

/* the CPU the caller runs on (getcpu), or -1 */
static int cpu_now(void)
{
	unsigned cpu;
	return syscall(SYS_getcpu, &cpu, NULL, NULL) ? -1 : (int)cpu;
}

static const char *yield_error;

/* two processes on CPU 0, each yielding n times: 2n switches when both stay runnable. A
 * kernel that does not apply the affinity (the processes seen on another CPU before or
 * after their loops) makes the row an error, not a figure: its yields switched nothing. */
static int op_yield(long n)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	if (sched_setaffinity(0, sizeof one, &one))
		return -1;
	pid_t p = fork();
	if (p == 0) {
		int c0 = cpu_now();
		for (long i = 0; i < n; i++)
			sched_yield();
		_exit(c0 == 0 && cpu_now() == 0 ? 0 : 3);
	}
	int c0 = cpu_now();
	for (long i = 0; i < n; i++)
		sched_yield();
	int c1 = cpu_now();
	int st;
	int rc = p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) ? 0 : -1;
	if (!rc && (WEXITSTATUS(st) == 3 || c0 != 0 || c1 != 0))
		yield_error = "the two processes did not stay on CPU 0 (affinity not applied)";
	else if (!rc && WEXITSTATUS(st) != 0)
		rc = -1;
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int c = 0; c < 64; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof all, &all);
	return rc;
}

static void row_yield(void)
{
	double v[MAXB];
	long n = 500L * scale;
	for (int b = 0; b < batches; b++) {
		uint64_t t0 = now_ns();
		yield_error = NULL;
		if (op_yield(n)) {
			fail("ctx_yield", "failed");
			return;
		}
		if (yield_error) {
			printf("OSPRIM {\"name\":\"ctx_yield\",\"error\":\"%s\"}\n", yield_error);
			fflush(stdout);
			return;
		}
		v[b] = (double)(now_ns() - t0) / (double)(2 * n);	/* per switch */
	}
	emit("ctx_yield", "ns", 2 * n, v);
}

static char bw_buf[65536];

static void row_pipe_bw(void)
{
	double v[MAXB];
	const long total = 8L << 20;
	for (int b = 0; b < batches; b++) {
		int p[2];
		if (pipe(p)) {
			fail("pipe_bw", "pipe");
			return;
		}
		uint64_t t0 = now_ns();
		pid_t c = fork();
		if (c == 0) {
			close(p[1]);
			long got = 0;
			ssize_t k;
			while ((k = read(p[0], bw_buf, sizeof bw_buf)) > 0)
				got += k;
			_exit(got == total ? 0 : 1);
		}
		close(p[0]);
		long sent = 0;
		while (sent < total) {
			ssize_t k = write(p[1], bw_buf, sizeof bw_buf);
			if (k <= 0)
				break;
			sent += k;
		}
		close(p[1]);
		if (wait_ok(c) || sent != total) {
			fail("pipe_bw", "short transfer");
			return;
		}
		double s = (double)(now_ns() - t0) / 1e9;
		v[b] = (double)total / (1 << 20) / s;
	}
	emit("pipe_bw", "MB/s", 8 << 20, v);
}

static int op_fault(long n)
{
	size_t len = (size_t)n * 4096;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	for (long i = 0; i < n; i++)
		m[i * 4096] = 1;
	return munmap(m, len);
}

static volatile sig_atomic_t caught;
static void on_usr1(int s) { (void)s; caught++; }

static int op_sig_install(long n)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	for (long i = 0; i < n; i++)
		if (sigaction(SIGUSR1, &sa, NULL))
			return -1;
	return 0;
}

static int op_sig_deliver(long n)
{
	caught = 0;
	for (long i = 0; i < n; i++)
		if (kill(getpid(), SIGUSR1))
			return -1;
	return caught == n ? 0 : (errno = EINTR, -1);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--exit"))
		return 0;
	self = argv[0];
	if (argc > 1)
		batches = atoi(argv[1]);
	if (argc > 2)
		scale = atoi(argv[2]);
	if (batches < 1 || batches > MAXB || scale < 1 || scale > 1000) {
		fprintf(stderr, "osprims: BATCHES 1..%d, SCALE 1..1000\n", MAXB);
		return 2;
	}
	fd_zero = open("/dev/zero", O_RDONLY);
	fd_null = open("/dev/null", O_WRONLY);
	int f = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd_zero < 0 || fd_null < 0 || f < 0 || write(f, "osprims\n", 8) != 8 || close(f)) {
		perror("osprims: set-up");
		return 1;
	}
	row("getppid", 2000, op_getppid);
	row("read_zero", 1000, op_read);
	row("write_null", 1000, op_write);
	row("open_close", 300, op_open_close);
	row("stat", 500, op_stat);
	row("fork_exit", 20, op_fork);
	row("fork_execve", 10, op_execve);
	if (access("/bin/sh", X_OK) == 0)
		row("sh_c_true", 5, op_sh);
	else
		printf("OSPRIM {\"name\":\"sh_c_true\",\"error\":\"no /bin/sh\"}\n");
	row("pipe_rtt", 300, op_pipe_rtt);
	row_yield();
	row_pipe_bw();
	row("page_fault", 256, op_fault);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	row("sig_install", 1000, op_sig_install);
	row("sig_deliver", 1000, op_sig_deliver);
	unlink(file);
	printf("OSPRIM-END\n");
	return 0;
}
