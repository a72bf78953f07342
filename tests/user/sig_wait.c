/* interrupted system calls (kernel/proc/signal.c): a pipe read interrupted by a signal
 * from a child returns EINTR, or goes on under SA_RESTART; wait4, nanosleep (with the
 * time left), pause, sigsuspend (its mask back after the handler), sigtimedwait. The
 * child keeps signalling until the parent says it saw the interruption, so the result
 * does not depend on timing. Case as argv[1]. */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
static volatile int hits;
static void h(int s) { (void)s; hits++; }
static void install(int flags)
{
	struct sigaction sa = {0};
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}
static void nap(long ms)
{
	struct timespec t = { 0, ms * 1000000L };
	nanosleep(&t, NULL);
}
/* a child that sends SIGUSR1 to the parent every 20 ms until fd ack is readable (or
 * for n rounds, then writes "x" to fd out if out >= 0) */
static pid_t pester(int ack, int n, int out)
{
	pid_t parent = getpid();
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		for (int i = 0; n < 0 || i < n; i++) {
			kill(parent, SIGUSR1);
			nap(20);
			if (ack >= 0) {
				struct timespec z = { 0, 0 };
				(void)z;
				char b;
				if (read(ack, &b, 1) == 1)
					break;
			}
		}
		if (out >= 0)
			write(out, "x", 1);
		_exit(0);
	}
	return c;
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "eintr";
	int p[2], a[2];
	pipe(p);
	pipe2(a, O_NONBLOCK);
	if (!strcmp(c, "eintr")) {
		install(0);
		pid_t k = pester(a[0], -1, -1);
		char b;
		SHOW("read", read(p[0], &b, 1));
		write(a[1], "k", 1);
		waitpid(k, NULL, 0);
		printf("handler ran=%d\n", hits > 0);
	} else if (!strcmp(c, "restart")) {
		install(SA_RESTART);
		pid_t k = pester(-1, 5, p[1]);
		char b = 0;
		SHOW("read", read(p[0], &b, 1));
		printf("got=%c handler ran=%d\n", b, hits > 0);
		waitpid(k, NULL, 0);
	} else if (!strcmp(c, "wait")) {
		install(0);
		fflush(stdout);
		pid_t w = fork();
		if (w == 0) {
			char b;
			read(p[0], &b, 1);	/* until the parent lets it go */
			_exit(5);
		}
		pid_t k = pester(a[0], -1, -1);
		int st;
		SHOW("waitpid", waitpid(w, &st, 0));
		write(a[1], "k", 1);
		waitpid(k, NULL, 0);
		write(p[1], "g", 1);
		printf("again = %d\n", waitpid(w, &st, 0) == w);
		printf("status=%d handler ran=%d\n", WEXITSTATUS(st), hits > 0);
	} else if (!strcmp(c, "nanosleep")) {
		install(SA_RESTART);	/* nanosleep is never restarted after a handler */
		pid_t k = pester(a[0], -1, -1);
		struct timespec t = { 100, 0 }, rem = { 0, 0 };
		SHOW("nanosleep", nanosleep(&t, &rem));
		write(a[1], "k", 1);
		printf("rem at most 100 s=%d rem above 0=%d\n", rem.tv_sec <= 100, rem.tv_sec > 0 || rem.tv_nsec > 0);
		waitpid(k, NULL, 0);
	} else if (!strcmp(c, "pause")) {
		install(SA_RESTART);	/* pause is never restarted either */
		pid_t k = pester(a[0], -1, -1);
		SHOW("pause", pause());
		write(a[1], "k", 1);
		waitpid(k, NULL, 0);
		printf("handler ran=%d\n", hits > 0);
	} else if (!strcmp(c, "sigsuspend")) {
		install(0);
		sigset_t b, e, now;
		sigemptyset(&b);
		sigaddset(&b, SIGUSR1);
		sigprocmask(SIG_BLOCK, &b, NULL);
		pid_t k = pester(a[0], -1, -1);
		sigemptyset(&e);
		SHOW("sigsuspend", sigsuspend(&e));
		sigprocmask(SIG_BLOCK, NULL, &now);
		printf("handler ran=%d usr1 blocked again=%d\n", hits > 0, sigismember(&now, SIGUSR1));
		write(a[1], "k", 1);
		waitpid(k, NULL, 0);
	} else if (!strcmp(c, "timedwait")) {
		sigset_t b;
		sigemptyset(&b);
		sigaddset(&b, SIGUSR1);
		sigprocmask(SIG_BLOCK, &b, NULL);
		struct timespec t = { 0, 10 * 1000000L };
		SHOW("sigtimedwait nothing", sigtimedwait(&b, NULL, &t));
		pid_t k = pester(a[0], -1, -1);
		siginfo_t si;
		SHOW("sigwaitinfo", sigwaitinfo(&b, &si));
		write(a[1], "k", 1);
		printf("signo=%d code=%d from child=%d\n", si.si_signo, si.si_code, si.si_pid == k);
		waitpid(k, NULL, 0);
	}
	return 0;
}
