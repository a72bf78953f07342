/* fork, copy-on-write, exit status through wait4 */
#include "ut.h"
#include <sys/wait.h>
static int shared = 10;
int main(void)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		shared = 99;
		printf("child sees %d\n", shared);
		fflush(stdout);
		_exit(42);
	}
	int st = 0;
	pid_t w = waitpid(c, &st, 0);
	printf("waited the child=%d exited=%d status=%d\n", w == c, WIFEXITED(st), WEXITSTATUS(st));
	printf("parent still sees %d\n", shared);
	SHOW("wait again", waitpid(c, &st, 0));
	SHOW("wait none", wait(&st));
	return 0;
}
