/*
 * stress_common.h - what every hosted stress program shares: its size and a cheap
 * per-thread random generator. Included by tests/stress/stress_*.c (hosted only).
 */
#ifndef KSYNC_STRESS_COMMON_H
#define KSYNC_STRESS_COMMON_H

#include <stdint.h>
#include <stdlib.h>

/* Operations per case from KSYNC_STRESS_OPS (tests/test_stress.py sets it: short in
 * `make test`, >= 10^8 in `make stress`); 400000 when unset or below 100. */
static inline uint64_t stress_ops(void)
{
	const char *s = getenv("KSYNC_STRESS_OPS");
	uint64_t n = s ? strtoull(s, NULL, 10) : 0;

	return n >= 100 ? n : 400000;
}

/* xorshift64: thread-private state, never 0. */
static inline uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

#endif /* KSYNC_STRESS_COMMON_H */
