/* exit statuses: only the low 8 bits reach the parent; exit_group ends the process */
#include "ut.h"
#include <sys/wait.h>
int main(void)
{
	int codes[] = { 0, 1, 127, 255, 256, 257, -1 };
	for (unsigned i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0)
			syscall(SYS_exit_group, codes[i]);
		int st;
		waitpid(c, &st, 0);
		printf("exit(%d) -> exited=%d status=%d raw=0x%x\n", codes[i], WIFEXITED(st), WEXITSTATUS(st), st);
	}
	return 256 + 9;
}
