/*
 * arch/hosted/ucopy.c - the user copies of kernel/include/arch_if.h ("user space") for the
 * kernel running as a Linux process (issue 24 item "the system-call handlers under
 * ThreadSanitizer"; docs/hosted-port.md, docs/userspace.md "Tests").
 *
 * The hosted port has no ring 3 and no address spaces: a "user" buffer is memory of this
 * process, which lies inside [USER_VA_MIN, USER_VA_END) like x86-64 Linux user space.
 * The copies keep x86_64's contract where it can be kept: a range that is not wholly
 * inside [USER_VA_MIN, USER_VA_END) (or wraps) is -14 (EFAULT) before any byte is
 * touched; inside it they are memcpy. An address inside the range that is not mapped
 * would fault the process (x86_64 fixes such a fault up to -EFAULT): the hosted kernel
 * tests pass only their own buffers and out-of-range pointers
 * (kernel/tests/test_sysfile.c).
 *
 * Shared state: none.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "arch_if.h"

static bool user_range(uint64_t a, size_t n)
{
	return a >= USER_VA_MIN && a <= USER_VA_END && n <= USER_VA_END - a;
}

long copy_from_user(void *dst, const void *usrc, size_t n)
{
	if (!user_range((uint64_t)(uintptr_t)usrc, n))
		return -14;
	memcpy(dst, usrc, n);
	return 0;
}

long copy_to_user(void *udst, const void *src, size_t n)
{
	if (!user_range((uint64_t)(uintptr_t)udst, n))
		return -14;
	memcpy(udst, src, n);
	return 0;
}

long strncpy_from_user(char *dst, const char *usrc, size_t n)
{
	uint64_t a = (uint64_t)(uintptr_t)usrc;
	if (a < USER_VA_MIN || a >= USER_VA_END)
		return -14;
	if (n > USER_VA_END - a)
		n = USER_VA_END - a;
	size_t i = 0;
	for (; i < n; i++)
		if ((dst[i] = usrc[i]) == 0)
			return (long)i;
	return -36;	/* ENAMETOOLONG: no NUL within n bytes */
}
