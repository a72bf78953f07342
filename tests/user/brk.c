/* brk: the current break, growth, shrink, and failure returning the old break */
#include "ut.h"
int main(void)
{
	long b0 = rawsys(SYS_brk, 0, 0, 0, 0, 0, 0);
	printf("brk(0)>0=%d\n", b0 > 0);
	long b1 = rawsys(SYS_brk, b0 + 100000, 0, 0, 0, 0, 0);
	printf("grow: moved by %ld\n", b1 - b0);
	char *p = (char *)b0;
	memset(p, 0x5a, 100000);
	long sum = 0;
	for (int i = 0; i < 100000; i += 4096)
		sum += p[i];
	printf("touched sum=%ld\n", sum);
	long b2 = rawsys(SYS_brk, b0 + 4096, 0, 0, 0, 0, 0);
	printf("shrink: at +%ld\n", b2 - b0);
	long b3 = rawsys(SYS_brk, b0 - 0x100000000L, 0, 0, 0, 0, 0);
	printf("below start: unchanged=%d\n", b3 == b2);
	long b4 = rawsys(SYS_brk, 0x7ffffffff000L, 0, 0, 0, 0, 0);
	printf("into the stack: unchanged=%d\n", b4 == b2);
	long b5 = rawsys(SYS_brk, 0, 0, 0, 0, 0, 0);
	printf("brk(0) after=+%ld\n", b5 - b0);
	void *m = malloc(300000);	/* musl: brk or mmap, either must work */
	memset(m, 1, 300000);
	free(m);
	printf("malloc ok\n");
	return 0;
}
