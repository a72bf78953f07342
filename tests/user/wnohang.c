/* WNOHANG on a running child, then a blocking wait */
#include "ut.h"
#include <sys/wait.h>
#include <time.h>
int main(void)
{
	int p[1];
	(void)p;
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		_exit(5);
	}
	int st = -1;
	SHOW("wnohang while running", waitpid(c, &st, WNOHANG));
	pid_t w = waitpid(c, &st, 0);
	printf("then waited=%d status=%d\n", w == c, WEXITSTATUS(st));
	SHOW("bad options", waitpid(-1, &st, 0x1000));
	return 0;
}
