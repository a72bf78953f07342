/* a grandchild: fork in a child, each waits for its own */
#include "ut.h"
#include <sys/wait.h>
int main(void)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		pid_t g = fork();
		if (g == 0)
			_exit(3);
		int st;
		waitpid(g, &st, 0);
		printf("child saw grandchild %d\n", WEXITSTATUS(st));
		fflush(stdout);
		_exit(WEXITSTATUS(st) + 10);
	}
	int st;
	waitpid(c, &st, 0);
	printf("parent saw child %d\n", WEXITSTATUS(st));
	/* an orphan: its parent exits first; nobody waits for it */
	c = fork();
	if (c == 0) {
		if (fork() == 0)
			_exit(0);
		_exit(1);
	}
	waitpid(c, &st, 0);
	printf("orphan's parent %d\n", WEXITSTATUS(st));
	return 0;
}
