/* oom: a child that touches anonymous memory until the kernel has no page left is
 * killed with SIGKILL (kernel/proc/signal.c: the out-of-memory kill of the process
 * whose allowed access found no page; console "ksync: Out of memory: Killed process
 * <pid> (oom)"); its parent's wait4 sees WIFSIGNALED/SIGKILL and the parent goes on:
 * it maps and touches memory itself afterwards. ksync only (on the host it would push
 * the dev machine into its own OOM killer). */
#include "ut.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>

int main(void)
{
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		for (;;) {
			char *m = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				_exit(3);	/* the address space, not memory, ran out */
			for (size_t i = 0; i < (64u << 20); i += 4096)
				m[i] = 1;
		}
	}
	int ws = 0;
	if (waitpid(p, &ws, 0) != p)
		printf("waitpid errno %d\n", errno);
	printf("child: signaled %d sig %d\n", WIFSIGNALED(ws), WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	size_t n = 16 << 20;
	unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned sum = 0;
	for (size_t i = 0; m != MAP_FAILED && i < n; i += 4096) {
		m[i] = (unsigned char)(i >> 12);
		sum += m[i];
	}
	printf("parent goes on: 16 MiB touched, sum %u\n", sum);
	return 0;
}
