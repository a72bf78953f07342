/*
 * sched_testutil.h - what the thread-level kernel tests share (test_hlock.c, test_hsem.c):
 * both schedulers in turn, the CPU count, milliseconds in TSC ticks, whether the hosted
 * port's vCPUs outnumber the host's cores, and the strict priority table (hard
 * priorities: the lowest non-empty level always runs).
 */
#ifndef KSYNC_SCHED_TESTUTIL_H
#define KSYNC_SCHED_TESTUTIL_H

#include "kernel.h"
#include "thread.h"

static const char *const sched_test_names[] = { "lockfree", "locked" };
#define FOR_EACH_SCHED(name) \
	for (unsigned si_ = 0; si_ < 2 && ((name) = sched_test_names[si_], 1); si_++)

static inline unsigned ncpu(void) { return arch_ncpus(); }
static inline uint64_t ms_ticks(uint64_t ms) { return arch_tsc_hz() / 1000 * ms; }

static inline bool oversubscribed(void)
{
	struct arch_facts f;
	arch_get_facts(&f);
	return f.oversubscribed;
}

static inline void strict_on(void)
{
	static const uint8_t strict_table[1] = { 0 };
	(void)sched_table_set(strict_table, 1);
}
static inline void strict_off(void) { sched_table_default(); }

#endif
