/* argv and envp as execve/the runner passed them */
#include "ut.h"
extern char **environ;
int main(int argc, char **argv)
{
	printf("argc=%d\n", argc);
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	for (char **e = environ; *e; e++)
		printf("env %s\n", *e);
	printf("argv[argc]=%s\n", argv[argc] ? "non-null" : "null");
	return argc;
}
