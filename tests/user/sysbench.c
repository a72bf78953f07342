/* Not a differential case (its numbers differ by kernel): the cost of a null system call
 * (getppid) and of fork+exit+wait4, in TSC ticks, min and median of 11 runs. Run on the
 * host and on ksync (docs/userspace.md "Costs"). */
#include "ut.h"
#include <sys/wait.h>
#include "tsc.h"
int main(void)
{
	enum { RUNS = 11, N = 20000, F = 50 };
	double sys[RUNS], frk[RUNS];
	for (int r = 0; r < RUNS; r++) {
		unsigned long long t0 = tsc();
		for (int i = 0; i < N; i++)
			rawsys(SYS_getppid, 0, 0, 0, 0, 0, 0);
		sys[r] = (double)(tsc() - t0) / N;
	}
	for (int r = 0; r < RUNS; r++) {
		unsigned long long t0 = tsc();
		for (int i = 0; i < F; i++) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			waitpid(c, NULL, 0);
		}
		frk[r] = (double)(tsc() - t0) / F;
	}
	qsort(sys, RUNS, sizeof sys[0], cmp);
	qsort(frk, RUNS, sizeof frk[0], cmp);
	printf("getppid: min %.0f median %.0f max %.0f TSC ticks/call (%d runs of %d)\n",
	       sys[0], sys[RUNS / 2], sys[RUNS - 1], RUNS, N);
	printf("fork+exit+wait4: min %.0f median %.0f max %.0f TSC ticks (%d runs of %d)\n",
	       frk[0], frk[RUNS / 2], frk[RUNS - 1], RUNS, F);
	return 0;
}
