/*
 * cost_locks.h - the locks the hosted cost programs (bench/lf_stack_cost.c,
 * bench/lf_fifo_cost.c) put around the unsynchronized operations, so that Massalin &
 * Pu's claim (lock-free costs less than locking) is judged against real locks:
 *   spin   a test-and-test-and-set spin lock, inline: xchg to take it, a release store to
 *          give it back - the kernel's MLOCK_TAS (kernel/include/mlock.h) without the
 *          interrupt mask, which user mode cannot take;
 *   mutex  pthread_mutex_lock / pthread_mutex_unlock (glibc, default type: uncontended, one
 *          lock cmpxchg to take it and one locked instruction to give it back, in calls).
 * Hosted only.
 */
#ifndef KSYNC_BENCH_COST_LOCKS_H
#define KSYNC_BENCH_COST_LOCKS_H

#include <pthread.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/platform.h>

static _Alignas(64) uint32_t spin_word;	/* 0 free, 1 held: xchg / release store */
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static inline void spin_lock(void)
{
	/* acquire: the previous holder's section happens-before ours */
	while (ksync_exchange_acquire_u32(&spin_word, 1) != 0)
		while (ksync_load_relaxed_u32(&spin_word) != 0)
			ksync_cpu_relax();
}

static inline void spin_unlock(void)
{
	ksync_store_release_u32(&spin_word, 0);	/* release: our section before the next */
}

#define COST_SPIN_WHAT "a TTAS spin lock (xchg; release store)"
#define COST_MUTEX_WHAT "pthread_mutex_lock/unlock"

#endif /* KSYNC_BENCH_COST_LOCKS_H */
