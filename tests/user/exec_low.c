/* exec of an ordinary static binary: t/hello-low is tests/user/hello.c built by plain
 * `musl-gcc -static` (ET_EXEC linked at 0x400000, not PIE; tools/ksync/userprogs.py).
 * The kernel lives in the upper half, so the whole low half is the process's and the
 * binary maps where it asks; the host runs the same file. */
#include "ut.h"
int main(void)
{
	char *argv[] = { "t/hello-low", NULL };
	fflush(stdout);
	execve("t/hello-low", argv, NULL);
	printf("execve t/hello-low: errno %d\n", errno);
	return 0;
}
