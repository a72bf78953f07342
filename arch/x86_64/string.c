/*
 * string.c - memset and memcpy for the kernel (arch_if.h, "string primitives"): the
 * compiler emits calls to them; rep stosb / rep movsb are fast on every CPU with ERMS.
 */
#include "kernel.h"

void *memset(void *d, int c, size_t n)
{
	void *r = d;
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return r;
}

void *memcpy(void *d, const void *s, size_t n)
{
	void *r = d;
	__asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) :: "memory");
	return r;
}

/* Crash triggers (arch_if.h): the fault handler panics; these never return. */
int arch_crash_undefined_insn(void)
{
	__asm__ volatile("ud2");
	return 0;
}

int arch_crash_triple(void)
{
	struct { uint16_t lim; uint64_t base; } __attribute__((packed)) z = { 0, 0 };
	__asm__ volatile("lidt %0; int3" :: "m"(z));
	return 0;
}
