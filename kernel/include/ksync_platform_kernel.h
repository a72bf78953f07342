/*
 * ksync_platform_kernel.h - libksync's platform hooks (protocol.md §6) in the kernel.
 * Included by include/ksync/platform.h when KSYNC_KERNEL is defined.
 */
#ifndef KSYNC_PLATFORM_KERNEL_H
#define KSYNC_PLATFORM_KERNEL_H

#include <stdint.h>
#include <stdarg.h>
#include "arch_if.h"

static inline uint64_t ksync_cycles(void) { return arch_cycles(); }

/* lfence before: earlier instructions have completed; lfence after: later ones wait. */
static inline uint64_t ksync_cycles_begin(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* rdtscp waits for earlier instructions; lfence keeps later ones after the read. CPUs
 * (or VMMs) without RDTSCP get lfence; rdtsc; lfence, which orders the same way. The
 * branch sits outside every timed loop, and the empty loop pays it too. */
extern bool arch_has_rdtscp;	/* set once at boot (tsc.c) */
static inline uint64_t ksync_cycles_end(void)
{
	uint32_t lo, hi, aux;
	if (arch_has_rdtscp) {
		__asm__ volatile("rdtscp; lfence" : "=a"(lo), "=d"(hi), "=c"(aux) :: "memory");
		(void)aux;
	} else {
		__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	}
	return ((uint64_t)hi << 32) | lo;
}

static inline void ksync_cpu_relax(void) { arch_cpu_relax(); }
static inline unsigned ksync_cpu_id(void) { return arch_cpu_id(); }

void ksync_printf(const char *fmt, ...);
void ksync_vprintf(const char *fmt, va_list ap);

#endif
