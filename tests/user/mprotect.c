/* mprotect: a read-only page written by a child is a SIGSEGV its parent sees */
#include "ut.h"
#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>
int main(void)
{
	char *p = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	p[0] = 'a';
	SHOW("mprotect ro", mprotect(p, 4096, PROT_READ));
	printf("read after ro: %c\n", p[0]);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		p[0] = 'b';		/* must fault */
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	SHOW("mprotect rw", mprotect(p, 4096, PROT_READ | PROT_WRITE));
	p[0] = 'c';
	printf("written after rw: %c\n", p[0]);
	SHOW("mprotect unaligned", mprotect(p + 1, 4096, PROT_READ));
	SHOW("mprotect bad prot", mprotect(p, 4096, 0x100));
	munmap(p, 2 * 4096);
	SHOW("mprotect unmapped", mprotect(p, 4096, PROT_READ));
	return 0;
}
