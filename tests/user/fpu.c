/* SSE/x87 state survives switches: parent and child compute at once */
#include "ut.h"
#include <math.h>
#include <sched.h>
#include <sys/wait.h>
static double work(double seed)
{
	double x = seed;
	for (int i = 0; i < 20000; i++) {
		x = x * 1.0000001 + 0.5 / (i + 1);
		if (i % 1000 == 0)
			sched_yield();
	}
	return x;
}
int main(void)
{
	fflush(stdout);
	pid_t c = fork();
	double r = work(c == 0 ? 2.0 : 3.0);
	if (c == 0) {
		printf("child %.9f\n", r);
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	printf("parent %.9f sqrt2 %.12f\n", r, sqrt(2.0));
	return 0;
}
