/* ksync-only (the host's core bit depends on its core_pattern and limits): a "core"
 * signal's default action sets the core bit (0x80) in the wait status only when
 * RLIMIT_CORE is not 0; ksync writes no core file either way. */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
#include <sys/resource.h>
static void run(long lim, int sig)
{
	fflush(stdout);
	pid_t k = fork();
	if (k == 0) {
		struct rlimit r = { (rlim_t)lim, RLIM_INFINITY };
		setrlimit(RLIMIT_CORE, &r);
		raise(sig);
		_exit(0);
	}
	int st;
	waitpid(k, &st, 0);
	printf("limit %ld sig %d: signaled=%d sig=%d core=%d\n", lim, sig, WIFSIGNALED(st),
	       WTERMSIG(st), WCOREDUMP(st) != 0);
}
int main(void)
{
	run(0, SIGQUIT);
	run(1 << 20, SIGQUIT);
	run(1 << 20, SIGTERM);	/* not a core signal */
	return 0;
}
