/* SIGCHLD (kernel/proc/proc.c's exit): its siginfo for a child that exits and one that
 * is killed; SIG_IGN and SA_NOCLDWAIT reap children at once (wait gives ECHILD); the
 * default disposition does not interrupt. Case as argv[1]. */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
static volatile int hits;
static siginfo_t last;
static void h(int s, siginfo_t *si, void *uc) { (void)s; (void)uc; hits++; last = *si; }
static void install(int flags)
{
	struct sigaction sa = {0};
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "exit";
	sigset_t b, e;
	sigemptyset(&b);
	sigaddset(&b, SIGCHLD);
	sigemptyset(&e);
	if (!strcmp(c, "exit") || !strcmp(c, "killed")) {
		install(0);
		sigprocmask(SIG_BLOCK, &b, NULL);
		fflush(stdout);
		pid_t k = fork();
		if (k == 0) {
			if (!strcmp(c, "killed"))
				pause();
			_exit(7);
		}
		if (!strcmp(c, "killed"))
			kill(k, SIGTERM);
		while (!hits)
			sigsuspend(&e);
		printf("signo=%d code=%d status=%d from child=%d\n", last.si_signo, last.si_code,
		       last.si_status, last.si_pid == k);
		int st;
		SHOW("waitpid", waitpid(k, &st, 0) == k);
		printf("exited=%d signaled=%d\n", WIFEXITED(st), WIFSIGNALED(st));
	} else if (!strcmp(c, "ign") || !strcmp(c, "nocldwait")) {
		if (!strcmp(c, "ign"))
			signal(SIGCHLD, SIG_IGN);
		else
			install(SA_NOCLDWAIT | SA_RESTART);	/* the wait is not cut short */
		fflush(stdout);
		for (int i = 0; i < 3; i++)
			if (fork() == 0)
				_exit(i);
		int st;
		SHOW("wait", wait(&st));	/* blocks until all are gone, then ECHILD */
		SHOW("wait again", wait(&st));
	}
	return 0;
}
