/* ksync only (its expected output is in tests/test_user.py): an ET_EXEC linked at the
 * default 0x400000 lies where ksync's kernel is mapped, so exec refuses it (ENOEXEC) with
 * a console line naming the reason; the host runs it. */
#include "ut.h"
int main(void)
{
	char *argv[] = { "t/hello-low", NULL };
	execve("t/hello-low", argv, NULL);
	printf("execve t/hello-low: errno %d\n", errno);
	return 0;
}
