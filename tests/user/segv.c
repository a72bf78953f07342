/* a crashing child: its parent's wait4 sees WIFSIGNALED with the signal */
#include "ut.h"
#include <sys/wait.h>
#include <signal.h>
int main(void);
static int crash(int how)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		volatile int *p;
		switch (how) {
		case 0: p = (int *)0; *p = 1; break;			/* NULL */
		case 1: p = (int *)0x100000; *p = 1; break;		/* low memory */
		case 2: p = (int *)0xffff800000100000ul; (void)*p; break;	/* kernel half */
		case 3: p = (int *)0x800000000000ul; (void)*p; break;	/* non-canonical */
		case 4: __asm__ volatile("ud2"); break;
		case 5: { volatile int z = 0; int a = 7; __asm__ volatile("" : "+r"(a)); printf("%d", a / z); break; }
		case 6: __asm__ volatile("hlt"); break;			/* privileged */
		case 7: p = (int *)main; *p = 0; break;			/* text is read-only */
		}
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	return st;
}
int main(void)
{
	static const char *what[] = { "null", "low", "kernel-half", "noncanonical", "ud2",
				      "divide", "hlt", "write-text" };
	for (int i = 0; i < 8; i++) {
		int st = crash(i);
		printf("%s: signaled=%d sig=%d\n", what[i], WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	}
	return 0;
}
