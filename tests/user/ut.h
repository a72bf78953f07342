/* ut.h - helpers of the differential user programs (tests/user/, issue 24): each program
 * runs on the host Linux and on ksync; stdout and the exit status must be identical. So
 * print only what both kernels must agree on: results and errno values, never
 * addresses, pids or times themselves (print comparisons of them instead). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

/* the result of a call: "name = value" or "name = -1 errno N" */
#define SHOW(name, expr) do { errno = 0; long r_ = (long)(expr); \
	if (r_ == -1) printf("%s = -1 errno %d\n", name, errno); \
	else printf("%s = %ld\n", name, r_); fflush(stdout); } while (0)
/* a raw system call's result: -errno on error */
static inline long rawsys(long nr, long a, long b, long c, long d, long e, long f)
{
	long r;
	register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10),
			 "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	return r;
}
