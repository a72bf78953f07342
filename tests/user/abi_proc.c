/* process and time calls' corners (issue 24, differential): wait4's ECHILD (no children,
 * not a child, WNOHANG), WNOHANG 0, a status pointer that faults (the child is reaped
 * all the same), clock_gettime/clock_getres errors, nanosleep's EINVAL/EFAULT,
 * clock_nanosleep (TIMER_ABSTIME in the past returns at once, bad clocks), sched_yield,
 * prlimit64 get/set and its errors, getrandom's flags and sizes, getcpu (a CPU the
 * process may run on, node 0, NULL pointers, a faulting one).
 * Usage: abi_proc CASE. */
#include "ut.h"
#include <sched.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))

static void c_echild(void)
{
	int st;
	SHOW("wait4 -1, no children", waitpid(-1, &st, 0));
	SHOW("WNOHANG, no children", waitpid(-1, &st, WNOHANG));
	SHOW("wait4 own pid", waitpid(getpid(), &st, 0));
	SHOW("wait4 pid 1", waitpid(1, &st, WNOHANG));
	SHOW("wait4 group 0", waitpid(0, &st, 0));
	SHOW("wait4 pid 0x7ffffff0", waitpid(0x7ffffff0, &st, 0));
	SHOW("wait4 INT_MIN", waitpid(-2147483647 - 1, &st, 0));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		struct timespec t = { 0, 30 * 1000 * 1000 };
		nanosleep(&t, NULL);
		_exit(9);
	}
	SHOW("WNOHANG, running child", waitpid(c, &st, WNOHANG));
	SHOW("WNOHANG, other pid", waitpid(c + 100000, &st, WNOHANG));
	RAW("wait4 bad options", SYS_wait4, c, (long)&st, 0x100, 0, 0, 0);
	/* a status pointer that faults: EFAULT, the child is gone all the same */
	long r;
	while ((r = rawsys(SYS_wait4, c, 0x1000, 0, 0, 0, 0)) == 0)
		;
	printf("wait4 bad status pointer %ld\n", r);
	SHOW("then", waitpid(c, &st, WNOHANG));
	c = fork();
	if (c == 0)
		_exit(4);
	r = rawsys(SYS_wait4, c, 0, 0, 0, 0, 0);
	printf("wait4 NULL status: the child %d\n", r == c);
	c = fork();
	if (c == 0)
		_exit(5);
	r = rawsys(SYS_wait4, -1, (long)&st, 0, 0x1000, 0, 0);
	printf("wait4 bad rusage pointer %ld\n", r);
	SHOW("then", waitpid(-1, &st, WNOHANG));
}

static void c_clocks(void)
{
	struct timespec t;
	RAW("clock_gettime 12345", SYS_clock_gettime, 12345, (long)&t, 0, 0, 0, 0);
	RAW("clock_gettime 16", SYS_clock_gettime, 16, (long)&t, 0, 0, 0, 0);
	RAW("clock_gettime MONOTONIC bad pointer", SYS_clock_gettime, CLOCK_MONOTONIC, 0x1000, 0, 0, 0, 0);
	RAW("clock_gettime REALTIME NULL", SYS_clock_gettime, CLOCK_REALTIME, 0, 0, 0, 0, 0);
	static const int ids[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,
				   CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME };
	for (unsigned i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		t.tv_sec = -1;
		long r = rawsys(SYS_clock_gettime, ids[i], (long)&t, 0, 0, 0, 0);
		printf("clock %d: %ld nsec in range %d\n", ids[i], r, t.tv_sec >= 0 && t.tv_nsec >= 0 &&
		       t.tv_nsec < 1000000000);
	}
	t.tv_sec = 5;
	RAW("clock_getres MONOTONIC", SYS_clock_getres, CLOCK_MONOTONIC, (long)&t, 0, 0, 0, 0);
	printf("res %ld.%09ld\n", (long)t.tv_sec, t.tv_nsec);
	RAW("clock_getres REALTIME", SYS_clock_getres, CLOCK_REALTIME, (long)&t, 0, 0, 0, 0);
	printf("res %ld.%09ld\n", (long)t.tv_sec, t.tv_nsec);
	RAW("clock_getres NULL", SYS_clock_getres, CLOCK_MONOTONIC, 0, 0, 0, 0, 0);
	RAW("clock_getres 12345", SYS_clock_getres, 12345, (long)&t, 0, 0, 0, 0);
	RAW("clock_getres bad pointer", SYS_clock_getres, CLOCK_MONOTONIC, 0x1000, 0, 0, 0, 0);
	struct timeval tv;
	RAW("gettimeofday NULL NULL", SYS_gettimeofday, 0, 0, 0, 0, 0, 0);
	RAW("gettimeofday bad pointer", SYS_gettimeofday, 0x1000, 0, 0, 0, 0, 0);
	RAW("gettimeofday", SYS_gettimeofday, (long)&tv, 0, 0, 0, 0, 0);
	long a = rawsys(SYS_time, 0, 0, 0, 0, 0, 0);
	/* Linux's time() reads the coarse clock, updated at the tick: read just after a
	 * second began it can still show the second before gettimeofday's (the host printed
	 * 0 here once in a make test) */
	printf("time agrees with gettimeofday %d\n", a >= tv.tv_sec - 1 && a - tv.tv_sec < 100);
	RAW("time bad pointer", SYS_time, 0x1000, 0, 0, 0, 0, 0);
}

static void c_nanosleep(void)
{
	struct timespec z = { 0, 0 }, rem = { 7, 7 };
	RAW("nanosleep 0", SYS_nanosleep, (long)&z, (long)&rem, 0, 0, 0, 0);
	printf("rem untouched %ld %ld\n", (long)rem.tv_sec, rem.tv_nsec);
	struct timespec neg = { -1, 0 }, negn = { 0, -1 }, big = { 0, 1000000000 };
	RAW("nanosleep sec -1", SYS_nanosleep, (long)&neg, 0, 0, 0, 0, 0);
	RAW("nanosleep nsec -1", SYS_nanosleep, (long)&negn, 0, 0, 0, 0, 0);
	RAW("nanosleep nsec 1e9", SYS_nanosleep, (long)&big, 0, 0, 0, 0, 0);
	RAW("nanosleep NULL", SYS_nanosleep, 0, 0, 0, 0, 0, 0);
	RAW("nanosleep bad pointer", SYS_nanosleep, 0x1000, 0, 0, 0, 0, 0);
	struct timespec one = { 0, 1000000 };
	RAW("nanosleep 1ms bad rem (not written)", SYS_nanosleep, (long)&one, 0x1000, 0, 0, 0, 0);
	struct timespec now, past, t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	past = now;
	past.tv_sec -= 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	RAW("clock_nanosleep ABSTIME past", SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, (long)&past, 0, 0, 0);
	struct timespec zero = { 0, 0 };
	RAW("clock_nanosleep ABSTIME 0", SYS_clock_nanosleep, CLOCK_REALTIME, TIMER_ABSTIME, (long)&zero, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long long dt = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
	printf("returned at once (under 500ms) %d\n", dt < 500000000LL);
	RAW("clock_nanosleep ABSTIME bad nsec", SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME, (long)&big, 0, 0, 0);
	RAW("clock_nanosleep relative 0", SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&zero, 0, 0, 0);
	RAW("clock_nanosleep relative neg", SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, (long)&neg, 0, 0, 0);
	RAW("clock_nanosleep clock 12345", SYS_clock_nanosleep, 12345, 0, (long)&one, 0, 0, 0);
	RAW("clock_nanosleep THREAD_CPUTIME", SYS_clock_nanosleep, CLOCK_THREAD_CPUTIME_ID, 0, (long)&one, 0, 0, 0);
	RAW("clock_nanosleep MONOTONIC_RAW", SYS_clock_nanosleep, CLOCK_MONOTONIC_RAW, 0, (long)&one, 0, 0, 0);
	RAW("clock_nanosleep bad pointer", SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, 0x1000, 0, 0, 0);
	RAW("clock_nanosleep BOOTTIME 1ms", SYS_clock_nanosleep, CLOCK_BOOTTIME, 0, (long)&one, 0, 0, 0);
	RAW("clock_nanosleep unknown flag bits", SYS_clock_nanosleep, CLOCK_MONOTONIC, 2, (long)&one, 0, 0, 0);
}

static void c_yield(void)
{
	long bad = 0;
	for (int i = 0; i < 200; i++)
		bad += sched_yield() != 0;
	printf("200 sched_yield, failed %ld\n", bad);
	RAW("raw sched_yield", SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	/* a yielding child and parent both finish */
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		for (int i = 0; i < 500; i++)
			sched_yield();
		_exit(6);
	}
	for (int i = 0; i < 500; i++)
		sched_yield();
	int st;
	waitpid(c, &st, 0);
	printf("child exited %d\n", WEXITSTATUS(st));
}

static void c_prlimit(void)
{
	struct rlimit r, o;
	SHOW("prlimit64 get CORE", prlimit(0, RLIMIT_CORE, NULL, &r));
	struct rlimit set = { 4096, 8192 };
	SHOW("set CORE 4096/8192", prlimit(0, RLIMIT_CORE, &set, &o));
	SHOW("get", prlimit(0, RLIMIT_CORE, NULL, &r));
	printf("now %lu %lu\n", (unsigned long)r.rlim_cur, (unsigned long)r.rlim_max);
	struct rlimit inv = { 9000, 8192 };
	SHOW("soft above hard", prlimit(0, RLIMIT_CORE, &inv, NULL));
	struct rlimit low = { 0, 8192 };
	SHOW("soft 0", setrlimit(RLIMIT_CORE, &low));
	SHOW("getrlimit", getrlimit(RLIMIT_CORE, &r));
	printf("now %lu %lu\n", (unsigned long)r.rlim_cur, (unsigned long)r.rlim_max);
	SHOW("get own pid", prlimit(getpid(), RLIMIT_CORE, NULL, &r));
	RAW("resource 100", SYS_prlimit64, 0, 100, 0, (long)&r, 0, 0);
	RAW("resource -1", SYS_prlimit64, 0, -1, 0, (long)&r, 0, 0);
	RAW("no such pid", SYS_prlimit64, 0x7ffffff0, RLIMIT_CORE, 0, (long)&r, 0, 0);
	RAW("bad old pointer", SYS_prlimit64, 0, RLIMIT_CORE, 0, 0x1000, 0, 0);
	RAW("bad new pointer", SYS_prlimit64, 0, RLIMIT_CORE, 0x1000, 0, 0, 0);
	RAW("both NULL", SYS_prlimit64, 0, RLIMIT_NOFILE, 0, 0, 0, 0);
	RAW("getrlimit bad pointer", SYS_getrlimit, RLIMIT_CORE, 0x1000, 0, 0, 0, 0);
	RAW("getrlimit 100", SYS_getrlimit, 100, (long)&r, 0, 0, 0, 0);
	/* a child inherits the limit */
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		getrlimit(RLIMIT_CORE, &r);
		_exit(r.rlim_max == 8192 ? 1 : 2);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child inherited %d\n", WEXITSTATUS(st) == 1);
	prlimit(0, RLIMIT_NOFILE, NULL, &r);
	printf("NOFILE soft <= hard %d\n", r.rlim_cur <= r.rlim_max);
}

static void c_getrandom(void)
{
	static unsigned char b[100000];
	RAW("GRND_NONBLOCK", SYS_getrandom, (long)b, 16, GRND_NONBLOCK, 0, 0, 0);
	RAW("GRND_RANDOM", SYS_getrandom, (long)b, 16, GRND_RANDOM, 0, 0, 0);
	RAW("GRND_RANDOM|NONBLOCK", SYS_getrandom, (long)b, 16, GRND_RANDOM | GRND_NONBLOCK, 0, 0, 0);
	RAW("GRND_INSECURE", SYS_getrandom, (long)b, 16, 4, 0, 0, 0);
	RAW("GRND_INSECURE|GRND_RANDOM", SYS_getrandom, (long)b, 16, 4 | GRND_RANDOM, 0, 0, 0);
	RAW("flag 8", SYS_getrandom, (long)b, 16, 8, 0, 0, 0);
	RAW("NULL 0 bytes", SYS_getrandom, 0, 0, 0, 0, 0, 0);
	RAW("NULL 1 byte", SYS_getrandom, 0, 1, 0, 0, 0, 0);
	RAW("kernel pointer", SYS_getrandom, (long)0xffffffff81000000ul, 8, 0, 0, 0, 0);
	memset(b, 0, sizeof b);
	RAW("100000 bytes", SYS_getrandom, (long)b, sizeof b, 0, 0, 0, 0);
	int zeros = 0;
	for (unsigned i = sizeof b - 4096; i < sizeof b; i++)
		zeros += b[i] == 0;
	printf("tail filled %d\n", zeros < 100);
}

static void on_usr(int s) { (void)s; }

/* execve and signals: caught -> SIG_DFL, ignored stays ignored, the mask and pending
 * signals stay (the program execs itself as "sigexec-child" to look) */
static void c_sigexec(const char *self)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGCHLD, &sa, NULL);
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGTERM);
	sigaddset(&m, SIGHUP);
	sigprocmask(SIG_BLOCK, &m, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		raise(SIGHUP);		/* pending across exec (fork does not pass it on) */
		char *av[] = { (char *)self, "sigexec-child", NULL };
		execv(self, av);
		_exit(100);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child: exited %d status %d, signaled %d sig %d\n", WIFEXITED(st),
	       WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void sigexec_child(void)
{
	struct sigaction sa;
	static const int sigs[] = { SIGUSR1, SIGUSR2, SIGCHLD, SIGTERM };
	for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
		sigaction(sigs[i], NULL, &sa);
		printf("after exec, signal %d: %s\n", sigs[i], sa.sa_handler == SIG_DFL ? "default" :
		       sa.sa_handler == SIG_IGN ? "ignored" : "a handler?");
	}
	sigset_t m, p;
	sigprocmask(SIG_BLOCK, NULL, &m);
	sigpending(&p);
	printf("blocked TERM %d HUP %d USR1 %d; pending HUP %d\n", sigismember(&m, SIGTERM),
	       sigismember(&m, SIGHUP), sigismember(&m, SIGUSR1), sigismember(&p, SIGHUP));
	kill(getpid(), SIGUSR2);	/* ignored */
	printf("USR2 ignored\n");
	fflush(stdout);
	sigprocmask(SIG_UNBLOCK, &m, NULL);	/* the pending SIGHUP ends it */
	printf("not reached\n");
	exit(0);
}

static void c_getcpu(void)
{
	unsigned cpu = 12345, node = 12345;
	RAW("getcpu", SYS_getcpu, (long)&cpu, (long)&node, 0, 0, 0, 0);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	printf("cpu below the online count %d, node %u\n", (long)cpu < n, node);
	RAW("getcpu NULL NULL", SYS_getcpu, 0, 0, 0, 0, 0, 0);
	RAW("getcpu cpu only", SYS_getcpu, (long)&cpu, 0, 0, 0, 0, 0);
	RAW("getcpu bad cpu pointer", SYS_getcpu, 1, 0, 0, 0, 0, 0);
	RAW("getcpu bad node pointer", SYS_getcpu, (long)&cpu, 1, 0, 0, 0, 0);
	printf("sched_getcpu below the online count %d\n", sched_getcpu() >= 0 && sched_getcpu() < n);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "sigexec-child"))
		sigexec_child();
	if (argc < 2 || !strcmp(argv[1], "sigexec"))
		c_sigexec(argv[0]);
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"echild", c_echild}, {"clocks", c_clocks}, {"nanosleep", c_nanosleep},
		{"yield", c_yield}, {"prlimit", c_prlimit}, {"getrandom", c_getrandom},
		{"getcpu", c_getcpu},
	};
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
