/* ksync only (its expected output is in tests/test_user.py): t/bad-highva is t/hello-low
 * with its first PT_LOAD moved into the kernel half (p_vaddr 0xffff800000400000,
 * tools/ksync/userprogs.py); exec refuses it with ENOEXEC and a console line naming the
 * reason ("segment outside user space"). Linux fails such a file past its point of no
 * return (the process is killed), so there is no host twin to compare with. */
#include "ut.h"
int main(void)
{
	char *argv[] = { "t/bad-highva", NULL };
	execve("t/bad-highva", argv, NULL);
	printf("execve t/bad-highva: errno %d\n", errno);
	return 0;
}
