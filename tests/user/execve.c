/* execve: a new image with argv/envp, the errors, and a refused ELF */
#include "ut.h"
#include <sys/wait.h>
static int run(const char *path, char *const argv[])
{
	char *envp[] = { "FROM=execve", NULL };
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		execve(path, argv, envp);
		printf("execve %s: errno %d\n", path, errno);
		fflush(stdout);
		_exit(100);
	}
	int st;
	waitpid(c, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
}
int main(void)
{
	char *a1[] = { "t/args", "one", "two", NULL };
	printf("args exited %d\n", run("t/args", a1));
	char *a2[] = { "t/hello", NULL };
	printf("hello exited %d\n", run("t/hello", a2));
	printf("missing exited %d\n", run("t/no-such-file", a2));
	printf("bad machine exited %d\n", run("t/bad-machine", a2));
	printf("truncated exited %d\n", run("t/bad-truncated", a2));
	printf("not elf exited %d\n", run("t/data.txt", a2));
	SHOW("execve empty path", execve("", a2, NULL));
	return 0;
}
