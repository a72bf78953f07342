/* Not a differential case (its numbers differ by kernel): the cost of a signal's round
 * trip - kill(getpid(), SIGUSR1) as a raw system call, the rt_sigframe built at its
 * return, the handler, rt_sigreturn - in TSC ticks, min / median / max of 11 runs. Run on
 * the host and on ksync (docs/userspace.md "Costs"). */
#include "ut.h"
#include <signal.h>
#include "tsc.h"
static volatile unsigned long hits;
static void h(int s) { (void)s; hits++; }
int main(void)
{
	enum { RUNS = 11, N = 5000 };
	double t[RUNS];
	struct sigaction sa = {0};
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	long me = getpid();
	for (int r = 0; r < RUNS; r++) {
		unsigned long long t0 = tsc();
		for (int i = 0; i < N; i++)
			rawsys(SYS_kill, me, SIGUSR1, 0, 0, 0, 0);
		t[r] = (double)(tsc() - t0) / N;
	}
	qsort(t, RUNS, sizeof t[0], cmp);
	printf("kill+handler+rt_sigreturn: min %.0f median %.0f max %.0f TSC ticks (%d runs of %d, %lu handled)\n",
	       t[0], t[RUNS / 2], t[RUNS - 1], RUNS, N, hits);
	return 0;
}
