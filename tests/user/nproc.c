/* nproc: a fork bomb meets RLIMIT_NPROC (kernel/proc/proc.c proc_alloc), ksync only.
 * Linux does not apply RLIMIT_NPROC to root (uid 0 with CAP_SYS_RESOURCE/ADMIN), and
 * every ksync process is uid 0 (no setuid), so the host cannot be the twin: this
 * program prints what ksync must do and test_user_bad.py compares it with the text.
 *
 * 1. fork until fork fails: it must fail with EAGAIN before the table (PROC_MAX 256) is
 *    full, i.e. after fewer than RLIMIT_NPROC children (the count itself depends on what
 *    else runs, so only the relations are printed); vfork and clone answer EAGAIN too;
 *    the children (sleeping in pause) are killed with SIGKILL and every one is reaped.
 * 2. setrlimit(RLIMIT_NPROC, 5): with nothing else running, exactly 4 children (the
 *    count includes the caller, as Linux's), then EAGAIN; prlimit64 reads it back; a
 *    soft limit above the hard one is EINVAL.
 * 3. after the kills, a fork works again. */
#include "ut.h"
#include <signal.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define TABLE 256	/* PROC_MAX */
static pid_t kids[TABLE];

static int bomb(int *err)
{
	int n = 0;
	for (;;) {
		pid_t p = fork();
		if (p == 0) {
			for (;;)
				pause();
		}
		if (p < 0) {
			*err = errno;
			return n;
		}
		if (n < TABLE)
			kids[n] = p;
		n++;
	}
}

static int killall(int n)
{
	int reaped = 0;
	for (int i = 0; i < n && i < TABLE; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n && i < TABLE; i++) {
		int ws;
		if (waitpid(kids[i], &ws, 0) == kids[i] && WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL)
			reaped++;
	}
	return reaped;
}

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NPROC, &rl);
	printf("default limit %llu/%llu, below the table (256): %d\n", (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max, rl.rlim_cur < TABLE);
	fflush(stdout);
	int err = 0;
	int n = bomb(&err);
	printf("bomb: stopped with errno %d (EAGAIN %d), children > 0: %d, children < limit: %d\n",
	       err, EAGAIN, n > 0, (unsigned long long)n < rl.rlim_cur);
	errno = 0;
	pid_t v = vfork();
	if (v == 0)
		_exit(0);
	printf("vfork at the limit: %d errno %d\n", v < 0 ? -1 : 0, v < 0 ? errno : 0);
	long c = rawsys(SYS_clone, SIGCHLD, 0, 0, 0, 0, 0);
	if (c == 0)
		_exit(0);
	printf("clone at the limit: %ld\n", c < 0 ? c : 0);
	printf("killed and reaped all: %d\n", killall(n) == n);
	struct rlimit five = { 5, 5 }, back, bad = { 6, 5 };
	printf("setrlimit 5: %d\n", setrlimit(RLIMIT_NPROC, &five));
	printf("prlimit64 reads back: %d\n", prlimit(0, RLIMIT_NPROC, NULL, &back) == 0 &&
	       back.rlim_cur == 5 && back.rlim_max == 5);
	errno = 0;
	int r = setrlimit(RLIMIT_NPROC, &bad);
	printf("soft above hard: %d errno %d\n", r, errno);
	fflush(stdout);
	n = bomb(&err);
	printf("limit 5: %d children, then errno %d\n", n, err);
	printf("killed and reaped all: %d\n", killall(n) == n);
	fflush(stdout);
	pid_t p = fork();
	if (p == 0)
		_exit(7);
	int ws = 0;
	waitpid(p, &ws, 0);
	printf("fork after the kills: exit %d\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
	return 0;
}
