/* bad user pointers answer EFAULT, never crash the kernel */
#include "ut.h"
#include <time.h>
#include <sys/utsname.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/mman.h>
int main(void)
{
	void *low = (void *)1, *kern = (void *)0x100000, *hi = (void *)0xffff800000000000ul,
	     *nc = (void *)0x800000000000ul;
	printf("write low %ld\n", rawsys(SYS_write, 1, (long)low, 10, 0, 0, 0));
	printf("write kernel %ld\n", rawsys(SYS_write, 1, (long)kern, 10, 0, 0, 0));
	printf("write high %ld\n", rawsys(SYS_write, 1, (long)hi, 10, 0, 0, 0));
	printf("write noncanonical %ld\n", rawsys(SYS_write, 1, (long)nc, 10, 0, 0, 0));
	printf("clock_gettime bad %ld\n", rawsys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)kern, 0, 0, 0, 0));
	printf("uname bad %ld\n", rawsys(SYS_uname, (long)low, 0, 0, 0, 0, 0));
	printf("open bad path %ld\n", rawsys(SYS_openat, AT_FDCWD, (long)kern, O_RDONLY, 0, 0, 0));
	printf("execve bad path %ld\n", rawsys(SYS_execve, (long)hi, 0, 0, 0, 0, 0));
	printf("wait4 bad status %ld\n", rawsys(SYS_wait4, -1, (long)kern, 0, 0, 0, 0));
	printf("getrandom bad %ld\n", rawsys(SYS_getrandom, (long)kern, 16, 0, 0, 0, 0));
	printf("arch_prctl get bad %ld\n", rawsys(SYS_arch_prctl, 0x1003, (long)kern, 0, 0, 0, 0));
	printf("nanosleep bad %ld\n", rawsys(SYS_nanosleep, (long)kern, 0, 0, 0, 0, 0));
	printf("rt_sigaction bad %ld\n", rawsys(SYS_rt_sigaction, 10, (long)kern, 0, 8, 0, 0));
	/* user addresses the process does not own: an unmapped page, a read-only page, a
	 * PROT_NONE page (the kernel's copy faults; the exception table answers EFAULT) */
	char *m = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m + 4096, 4096);
	mprotect(m + 2 * 4096, 4096, PROT_READ);
	printf("write from unmapped %ld\n", rawsys(SYS_write, 1, (long)(m + 4096), 10, 0, 0, 0));
	printf("clock_gettime into unmapped %ld\n", rawsys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)(m + 4096), 0, 0, 0, 0));
	printf("clock_gettime into read-only %ld\n", rawsys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)(m + 2 * 4096), 0, 0, 0, 0));
	printf("getrandom into read-only %ld\n", rawsys(SYS_getrandom, (long)(m + 2 * 4096), 16, 0, 0, 0, 0));
	mprotect(m, 4096, PROT_NONE);
	printf("write from PROT_NONE %ld\n", rawsys(SYS_write, 1, (long)m, 10, 0, 0, 0));
	printf("open path in PROT_NONE %ld\n", rawsys(SYS_openat, AT_FDCWD, (long)m, O_RDONLY, 0, 0, 0));
	printf("uname into read-only %ld\n", rawsys(SYS_uname, (long)(m + 2 * 4096), 0, 0, 0, 0, 0));
	/* a buffer whose first bytes are mapped */
	char buf[64] = "partly";
	printf("write ok %ld\n", rawsys(SYS_write, 1, (long)buf, 7, 0, 0, 0));
	printf("\nstill alive\n");
	return 0;
}
