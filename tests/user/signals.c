/* the signal state libc sets up, kill's existence check, and kill of a child */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
static void h(int s) { (void)s; }
int main(void)
{
	struct sigaction sa = {0}, old = {0};
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	SHOW("sigaction set", sigaction(SIGUSR1, &sa, NULL));
	SHOW("sigaction get", sigaction(SIGUSR1, NULL, &old));
	printf("handler back=%d\n", old.sa_handler == h);
	SHOW("sigaction SIGKILL", sigaction(SIGKILL, &sa, NULL));
	SHOW("sigaction bad signal", sigaction(100, &sa, NULL));
	sigset_t s, o;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	SHOW("block", sigprocmask(SIG_BLOCK, &s, NULL));
	SHOW("query", sigprocmask(SIG_BLOCK, NULL, &o));
	printf("usr2 blocked=%d usr1 blocked=%d\n", sigismember(&o, SIGUSR2), sigismember(&o, SIGUSR1));
	SHOW("kill self 0", kill(getpid(), 0));
	SHOW("kill nobody", kill(999999, 0));
	SHOW("kill bad signal", kill(getpid(), 1000));
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			getppid();	/* system calls: where ksync delivers for now */
	}
	SHOW("kill child", kill(c, SIGTERM));
	int st;
	waitpid(c, &st, 0);
	printf("child signaled=%d sig=%d\n", WIFSIGNALED(st), WTERMSIG(st));
	/* a child that makes no system call: the signal arrives at an interrupt's return */
	fflush(stdout);
	c = fork();
	if (c == 0)
		for (;;)
			__asm__ volatile("" ::: "memory");
	struct timespec ts = { 0, 50 * 1000 * 1000 };	/* let it reach the loop: after fork
							   musl's child makes system calls */
	nanosleep(&ts, NULL);
	SHOW("kill spinning child", kill(c, SIGKILL));
	waitpid(c, &st, 0);
	printf("spinning child signaled=%d sig=%d\n", WIFSIGNALED(st), WTERMSIG(st));
	/* a blocked signal stays pending: the child lives until it unblocks */
	c = fork();
	if (c == 0) {
		sigset_t b;
		sigemptyset(&b);
		sigaddset(&b, SIGTERM);
		sigprocmask(SIG_BLOCK, &b, NULL);
		for (int i = 0; i < 3; i++)
			kill(getpid(), SIGTERM);
		printf("child still alive with SIGTERM blocked\n");
		fflush(stdout);
		sigprocmask(SIG_UNBLOCK, &b, NULL);
		printf("not reached\n");
		_exit(0);
	}
	waitpid(c, &st, 0);
	printf("blocked child signaled=%d sig=%d\n", WIFSIGNALED(st), WTERMSIG(st));
	return 0;
}
