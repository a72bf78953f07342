/* process groups and sessions (kernel/proc/proc.c): setpgid/getpgid/getpgrp,
 * setsid/getsid, kill to a group (kill(-pgrp), kill(0)), wait4 for a group; errors.
 * The program's own group differs between the host's runner and ksync's, so everything
 * happens in children and only relations are printed. Case as argv[1]. */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
static volatile int hits;
static void h(int s) { (void)s; hits++; }
static void sleeper(int p1)
{
	char b;
	read(p1, &b, 1);	/* until killed */
	_exit(0);
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "setpgid";
	int p[2], st;
	pipe(p);
	fflush(stdout);
	if (!strcmp(c, "setpgid")) {
		pid_t k = fork();
		if (k == 0) {
			SHOW("setpgid self", setpgid(0, 0));
			printf("child leads=%d\n", getpgrp() == getpid() && getpgid(0) == getpid());
			fflush(stdout);
			_exit(0);
		}
		waitpid(k, &st, 0);
		printf("parent's group unchanged=%d\n", getpgrp() == getpgid(getpid()));
		SHOW("getpgid nobody", getpgid(999999));
		SHOW("setpgid bad", setpgid(0, -1));
		SHOW("setpgid nobody", setpgid(999999, 0));
		SHOW("setpgid reaped child", setpgid(k, k));
	} else if (!strcmp(c, "setsid")) {
		pid_t k = fork();
		if (k == 0) {
			pid_t me = getpid();
			printf("setsid is me=%d\n", setsid() == me);
			printf("sid=%d pgrp=%d\n", getsid(0) == me, getpgrp() == me);
			SHOW("setsid again", setsid());
			SHOW("setpgid leader", setpgid(0, 0));
			fflush(stdout);
			_exit(0);
		}
		waitpid(k, &st, 0);
		SHOW("getsid nobody", getsid(999999));
	} else if (!strcmp(c, "killpg")) {
		pid_t a = fork();
		if (a == 0) {
			setpgid(0, 0);
			sleeper(p[0]);
		}
		setpgid(a, a);	/* both sides, as a shell does */
		pid_t b = fork();
		if (b == 0) {
			setpgid(0, a);
			sleeper(p[0]);
		}
		setpgid(b, a);
		SHOW("same group", getpgid(b) == a);
		SHOW("kill group", kill(-a, SIGTERM));
		int sa = 0, sb = 0;
		for (int i = 0; i < 2; i++) {
			pid_t w = wait(&st);
			*(w == a ? &sa : &sb) = st;
		}
		printf("a: signaled=%d sig=%d; b: signaled=%d sig=%d\n", WIFSIGNALED(sa),
		       WIFSIGNALED(sa) ? WTERMSIG(sa) : 0, WIFSIGNALED(sb), WIFSIGNALED(sb) ? WTERMSIG(sb) : 0);
		SHOW("kill empty group", kill(-a, SIGTERM));
	} else if (!strcmp(c, "kill0")) {
		pid_t k = fork();
		if (k == 0) {
			setpgid(0, 0);
			pid_t g = fork();
			if (g == 0)
				sleeper(p[0]);	/* SIGUSR1's default: terminate */
			signal(SIGUSR1, h);
			SHOW("kill 0", kill(0, SIGUSR1));
			waitpid(g, &st, 0);
			printf("self hit=%d grandchild signaled=%d sig=%d\n", hits, WIFSIGNALED(st),
			       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
			fflush(stdout);
			_exit(0);
		}
		waitpid(k, &st, 0);
		printf("child exited=%d\n", WIFEXITED(st));
	} else if (!strcmp(c, "waitpg")) {
		pid_t a = fork();
		if (a == 0) {
			setpgid(0, 0);
			_exit(3);
		}
		setpgid(a, a);
		pid_t b = fork();
		if (b == 0)
			_exit(4);	/* stays in our group */
		pid_t w = waitpid(-a, &st, 0);
		printf("wait -pgrp got a=%d status=%d\n", w == a, WEXITSTATUS(st));
		SHOW("wait -pgrp again", waitpid(-a, &st, 0));
		w = waitpid(0, &st, 0);
		printf("wait 0 got b=%d status=%d\n", w == b, WEXITSTATUS(st));
		SHOW("wait 0 again", waitpid(0, &st, 0));
	}
	return 0;
}
