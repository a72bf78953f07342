/* many children at once: every status arrives exactly once */
#include "ut.h"
#include <sys/wait.h>
int main(void)
{
	enum { N = 12 };
	pid_t pids[N];
	fflush(stdout);
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			volatile long x = 0;
			for (long k = 0; k < 20000 * (i + 1); k++)
				x += k;
			_exit(i + 1);
		}
	}
	int seen[N + 1] = {0}, total = 0;
	for (int i = 0; i < N; i++) {
		int st;
		pid_t w = wait(&st);
		int mine = 0;
		for (int j = 0; j < N; j++)
			mine |= pids[j] == w;
		if (mine && WIFEXITED(st) && WEXITSTATUS(st) <= N)
			seen[WEXITSTATUS(st)]++;
		total++;
	}
	int each = 1;
	for (int i = 1; i <= N; i++)
		each &= seen[i] == 1;
	printf("waited %d, each status once=%d\n", total, each);
	SHOW("no more children", wait(NULL));
	return 0;
}
