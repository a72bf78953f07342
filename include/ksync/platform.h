/*
 * platform.h - the per-platform hooks libksync uses (docs/protocol.md section 6).
 *
 * libksync itself uses only <stdint.h>, <stddef.h>, <stdbool.h>, <stdarg.h> and the
 * hooks below:
 *
 *   uint64_t ksync_cycles(void);        TSC, not serialized                  (inline)
 *   uint64_t ksync_cycles_begin(void);  lfence; rdtsc; lfence                (inline)
 *   uint64_t ksync_cycles_end(void);    rdtscp; lfence                       (inline)
 *   void     ksync_cpu_relax(void);     pause                                (inline)
 *   unsigned ksync_cpu_id(void);        index of the CPU running the caller
 *   ksync_irq_key_t ksync_irq_save(void); void ksync_irq_restore(ksync_irq_key_t k);
 *                                       kernel only: on-chip masking (mwcas.h's irq variant)
 *   void     ksync_printf(const char *fmt, ...);
 *   void     ksync_vprintf(const char *fmt, va_list ap);
 *
 * The printf subset both platforms implement, and the only one libksync may use:
 * %s %c %d %i %u %x %X %p %%, length modifiers l, ll, z, flags 0 and -, a field width.
 *
 * With KSYNC_KERNEL defined this header includes <ksync_platform_kernel.h> (provided by
 * the kernel in kernel/include/), which must define or declare the hooks above.
 * Otherwise it provides the hosted (Linux user-mode) versions: the cycle counter and
 * pause are inline asm here; ksync_cpu_id (sched_getcpu) and the printf pair
 * (vprintf + fflush(stdout)) live in lib/hosted/platform.c.
 */
#ifndef KSYNC_PLATFORM_H
#define KSYNC_PLATFORM_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#ifdef KSYNC_KERNEL

#include <ksync_platform_kernel.h>

#else /* hosted: Linux user mode on x86-64 */

/*
 * TSC, not serialized: may be reordered with the instructions around it.
 * For interval timing use ksync_cycles_begin()/ksync_cycles_end().
 */
static inline uint64_t ksync_cycles(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/*
 * Start of a timed interval: lfence; rdtsc; lfence.  The first lfence keeps rdtsc from
 * starting before earlier instructions complete; the second keeps later instructions
 * from starting before rdtsc has read the counter.  The "memory" clobber keeps the
 * compiler from moving memory accesses across it.
 */
static inline uint64_t ksync_cycles_begin(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

/*
 * End of a timed interval: rdtscp; lfence.  rdtscp waits until all earlier instructions
 * have executed and earlier loads are globally visible (earlier stores need not be);
 * the lfence keeps later instructions from starting before the counter is read.
 * "memory" as above.
 */
static inline uint64_t ksync_cycles_end(void)
{
	uint32_t lo, hi, aux;

	__asm__ __volatile__("rdtscp\n\tlfence" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
	(void)aux;
	return ((uint64_t)hi << 32) | lo;
}

/* Spin-wait hint (pause).  Orders nothing; the "memory" clobber forces spin loops to
 * reload what they poll. */
static inline void ksync_cpu_relax(void)
{
	__asm__ __volatile__("pause" : : : "memory");
}

/* Index of the CPU the caller runs on (sched_getcpu(); 0 if that fails).  The answer
 * may be stale by the time the caller uses it unless the thread is pinned. */
unsigned ksync_cpu_id(void);

/*
 * Hosted test hook: while a sink is installed, ksync_printf/ksync_vprintf format each
 * call (up to 1023 bytes) and hand the text to sink(text, len, arg) instead of stdout.
 * Pass NULL to restore stdout.  Install and remove it only while no other thread
 * prints.  Not part of the kernel platform.
 */
typedef void (*ksync_print_sink_fn)(const char *text, size_t len, void *arg);
void ksync_hosted_set_print_sink(ksync_print_sink_fn sink, void *arg);

#endif /* KSYNC_KERNEL */

/* Console output (both platforms); the format subset is listed at the top. */
void ksync_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ksync_vprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif /* KSYNC_PLATFORM_H */
