/* vfork: the parent resumes after the child's _exit or execve */
#include "ut.h"
#include <sys/wait.h>
int main(void)
{
	fflush(stdout);
	pid_t c = vfork();
	if (c == 0)
		_exit(7);
	int st;
	waitpid(c, &st, 0);
	printf("vfork child exited %d\n", WEXITSTATUS(st));
	char *argv[] = { "t/hello", NULL };
	c = vfork();
	if (c == 0) {
		execve("t/hello", argv, NULL);
		_exit(127);
	}
	waitpid(c, &st, 0);
	printf("vfork+exec exited %d\n", WEXITSTATUS(st));
	return 0;
}
