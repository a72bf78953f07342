/* job control (kernel/proc/proc.c proc_stop): SIGSTOP and SIGTSTP stop a child, wait4
 * with WUNTRACED reports it once, SIGCONT continues it (WCONTINUED reports that), the
 * parent's SIGCHLD says CLD_STOPPED / CLD_CONTINUED (not with SA_NOCLDSTOP), SIGKILL
 * ends a stopped child. */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
static volatile int hits;
static siginfo_t last;
static void h(int s, siginfo_t *si, void *uc) { (void)s; (void)uc; hits++; last = *si; }
static void show(const char *what, pid_t k, int st, pid_t w)
{
	printf("%s: got=%d stopped=%d stopsig=%d continued=%d signaled=%d sig=%d exited=%d code=%d\n",
	       what, w == k, WIFSTOPPED(st), WIFSTOPPED(st) ? WSTOPSIG(st) : 0, WIFCONTINUED(st),
	       WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0, WIFEXITED(st),
	       WIFEXITED(st) ? WEXITSTATUS(st) : 0);
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "stop";
	int p[2], st = 0;
	pipe(p);
	struct sigaction sa = {0};
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | (!strcmp(c, "nocldstop") ? SA_NOCLDSTOP : 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	fflush(stdout);
	/* the child in a process group of its own, set on both sides as a shell does: a
	 * group whose members' parents are all outside the session or inside the group is
	 * orphaned, and Linux discards SIGTSTP sent to it - which group this program runs in
	 * is the caller's (setsid'd under pytest-xdist's workers: the tstp case then hung on
	 * the host), the child's own group with its parent here is never orphaned */
	pid_t k = fork();
	if (k == 0) {
		char b;
		setpgid(0, 0);
		read(p[0], &b, 1);	/* stopped and continued in here (restarted) */
		_exit(9);
	}
	setpgid(k, k);
	int stopsig = !strcmp(c, "tstp") ? SIGTSTP : SIGSTOP;
	/* the stop's SIGCHLD before the wait: Linux builds its siginfo after the child is
	 * stopped, reading the stop code that a wait4 collecting the stop clears - a parent
	 * whose wait4 came first saw si_status 0 (one run of the host in a make test) */
	sigset_t e, b;
	sigemptyset(&e);
	sigemptyset(&b);
	sigaddset(&b, SIGCHLD);
	sigprocmask(SIG_BLOCK, &b, NULL);
	SHOW("stop", kill(k, stopsig));
	if (strcmp(c, "nocldstop"))
		while (!hits)
			sigsuspend(&e);
	sigprocmask(SIG_UNBLOCK, &b, NULL);
	pid_t w = waitpid(k, &st, WUNTRACED);
	show("wait stopped", k, st, w);
	SHOW("wait again nohang", waitpid(k, &st, WUNTRACED | WNOHANG));
	if (!strcmp(c, "kill")) {
		SHOW("kill", kill(k, SIGKILL));
		w = waitpid(k, &st, 0);
		show("wait killed", k, st, w);
		return 0;
	}
	printf("sigchld on stop: %d code=%d status=%d\n", hits > 0, hits ? last.si_code : 0,
	       hits ? last.si_status : 0);
	hits = 0;
	SHOW("cont", kill(k, SIGCONT));
	w = waitpid(k, &st, WCONTINUED);
	show("wait continued", k, st, w);
	/* the SIGCHLD of the continue may come after wait4 saw it: wait for it */
	if (strcmp(c, "nocldstop")) {
		sigprocmask(SIG_BLOCK, &b, NULL);
		while (!hits)
			sigsuspend(&e);
		sigprocmask(SIG_UNBLOCK, &b, NULL);
	}
	printf("sigchld on continue: %d code=%d status=%d\n", hits > 0, hits ? last.si_code : 0,
	       hits ? last.si_status : 0);
	write(p[1], "x", 1);
	w = waitpid(k, &st, 0);
	show("wait exited", k, st, w);
	return 0;
}
