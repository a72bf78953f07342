/*
 * string.c - memset and memcpy for the kernel (arch_if.h, "string primitives"): the
 * compiler emits calls to them. Short runs are rep stosb / rep movsb (fast on every CPU
 * with ERMS); from 64 bytes on, the bulk goes 8 bytes a step (rep stosq / rep movsq) and
 * the tail by bytes. On hardware the two forms cost about the same; under QEMU's TCG a
 * rep step costs about the same whatever its width, so the quadword form is ~8x faster
 * there - and exec copies whole programs (busybox: 2 MB into the file buffer and 2 MB
 * into user pages), which with byte steps took most of a busybox exec's ~70 ms (tcg).
 */
#include "kernel.h"

#define STRING_QWORDS_FROM 64

void *memset(void *d, int c, size_t n)
{
	void *r = d;
	if (n >= STRING_QWORDS_FROM) {
		uint64_t q = (uint64_t)(uint8_t)c * 0x0101010101010101ull;
		size_t w = n / 8;
		__asm__ volatile("rep stosq" : "+D"(d), "+c"(w) : "a"(q) : "memory");
		n &= 7;
	}
	__asm__ volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
	return r;
}

void *memcpy(void *d, const void *s, size_t n)
{
	void *r = d;
	if (n >= STRING_QWORDS_FROM) {
		size_t w = n / 8;
		__asm__ volatile("rep movsq" : "+D"(d), "+S"(s), "+c"(w) :: "memory");
		n &= 7;
	}
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
