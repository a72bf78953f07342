/* rt_sigreturn with a bad frame (kernel/proc/signal.c): an unmapped one, a non-canonical
 * rip, and (argv[1] "random") 100 frames of random bytes, each in a child: the kernel
 * never panics and the child dies by SIGSEGV (Linux's signal_fault). */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
#include <stdint.h>
static uint64_t frame[128];
static void sigret_at(uint64_t sp)
{
	__asm__ volatile("movq %0, %%rsp; movl $15, %%eax; syscall" :: "r"(sp) : "memory");
	__builtin_unreachable();
}
static int in_child(int how, uint64_t seed)
{
	fflush(stdout);
	pid_t k = fork();
	if (k == 0) {
		if (how == 0)
			sigret_at(0x10);		/* nothing mapped there */
		for (int i = 0; i < 128; i++) {	/* splitmix64 */
			uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
			z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
			z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
			frame[i] = z ^ (z >> 31);
		}
		if (how == 1) {
			/* a plausible frame but for rip: non-canonical; fpstate 0 */
			for (int i = 0; i < 128; i++)
				frame[i] = 0;
			frame[1 + 5 + 16] = 0x8000000000000000ull;	/* uc_mcontext.rip */
		}
		sigret_at((uint64_t)&frame[1]);	/* the restorer's ret popped frame[0] */
	}
	int st;
	waitpid(k, &st, 0);
	return st;
}
int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "random")) {
		int segv = 0, other = 0;
		for (int i = 0; i < 100; i++) {
			int st = in_child(2, (uint64_t)i * 7919 + 1);
			if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV)
				segv++;
			else
				other++;
		}
		printf("random frames: segv=%d other=%d\n", segv, other);
		return 0;
	}
	int st = in_child(0, 0);
	printf("unmapped frame: signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	st = in_child(1, 0);
	printf("non-canonical rip: signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return 0;
}
