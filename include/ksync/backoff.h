/*
 * backoff.h - bounded exponential backoff for CAS retry loops.
 *
 * After a failed CAS the CPU waits 1, 2, 4 .. KSYNC_BACKOFF_MAX pause instructions
 * before it retries, so contending CPUs stop taking the same cache line from each other
 * on every attempt (on the 2-vCPU VM this project is measured on, it multiplies the
 * stack's 2-thread throughput ~6x; see the README). The wait is bounded, so a loop that
 * was lock-free stays lock-free. Define KSYNC_BACKOFF_MAX as 0 before including any
 * ksync header to turn it off (e.g. to measure without it). Wait-free; thread-private.
 */
#ifndef KSYNC_BACKOFF_H
#define KSYNC_BACKOFF_H

#include <ksync/platform.h>

#ifndef KSYNC_BACKOFF_MAX
#define KSYNC_BACKOFF_MAX 64
#endif

struct ksync_backoff {
	unsigned spins;		/* private to the calling thread */
};

#define KSYNC_BACKOFF_INIT { 1 }

#if KSYNC_BACKOFF_MAX == 0
/* Off: a preprocessor switch, not an `if`, so that -Wextra's "comparison is always
 * false" (spins < 0) cannot stop a -Werror build that turns the backoff off. */
static inline void ksync_backoff(struct ksync_backoff *b)
{
	(void)b;
}
#else
static inline void ksync_backoff(struct ksync_backoff *b)
{
	for (unsigned i = 0; i < b->spins; i++)
		ksync_cpu_relax();
	if (b->spins < KSYNC_BACKOFF_MAX)
		b->spins <<= 1;
}
#endif

#endif /* KSYNC_BACKOFF_H */
