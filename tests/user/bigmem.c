/* demand-zero stack and heap pages, and copy-on-write of a large area */
#include "ut.h"
#include <sys/wait.h>
static unsigned long sum(const unsigned char *p, size_t n)
{
	unsigned long s = 0;
	for (size_t i = 0; i < n; i++)
		s += p[i] * (i % 7 + 1);
	return s;
}
static int deep(int n)
{
	volatile char pad[4096];
	pad[0] = (char)n;
	return n ? deep(n - 1) + pad[0] : 0;
}
int main(void)
{
	printf("stack recursion %d\n", deep(500));	/* ~2 MB of stack */
	size_t n = 4u << 20;
	unsigned char *p = malloc(n);
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 31);
	unsigned long s0 = sum(p, n);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		for (size_t i = 0; i < n; i += 2)
			p[i] = 0;
		printf("child sum %lu\n", sum(p, n));
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	printf("parent sum unchanged=%d %lu\n", sum(p, n) == s0, s0);
	return 0;
}
