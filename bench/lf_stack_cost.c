/*
 * lf_stack_cost.c - the Massalin & Pu cost table ("Lock-free synchronization overhead":
 * each operation with no synchronization, lock-free without interference, and
 * lock-free when interference forces exactly one retry), regenerated hosted on this
 * CPU for the objects of issue #3 part 1: counter, LIFO stack (pointer and index
 * variants, and Synthesis's array stack, include/ksync/lf_astack.h), linked list at the
 * head, optimistic section.  Same method as bench/prims.c
 * (include/ksync/measure.h: 200 batches x 256 operations, lfence;rdtsc;lfence ..
 * rdtscp;lfence, empty loop of the same shape subtracted, TSC ticks per operation).
 *
 * Output (stdout):
 *   KSYNC {"kind":"hosted_boot",...}
 *   ktap: KTAP version 1 / 1..1
 *   KSYNC {"kind":"prim","name":"mp_<object>_<op>_<variant>",...}   one line per row
 *   ktap: # ratio lines (median over median)
 *   KSYNC {"kind":"prim","name":"mp_<object>_<op>_<variant>_2t",...} the two-thread rows
 *   ktap: ok 1 lf_stack_cost
 * Variants: nosync (plain loads and stores, what one CPU alone would do), lf (the
 * libksync operation, uncontended), retry1 (the same with exactly one failed CAS first).
 *
 * The rows themselves (and how a retry is forced without a second CPU) are in
 * common/lf_cost_rows.h, shared with the kernel's lf_cost experiment.
 *
 * Performance bar (issue #3): uncontended push+pop within 1.5x of two `lock cmpxchg`;
 * the ref_2x_lock_cmpxchg row and the ratio lines give that comparison in one run, for
 * the plain operations (which load the top first, as every Treiber stack does) and the
 * _hint operations (which do not: see "Hints" in include/ksync/lf_stack.h).
 *
 * Against real locks (Massalin & Pu: lock-free costs less than locking), the two locks of
 * bench/cost_locks.h: spin (a TTAS spin lock, inline) and mutex (pthread_mutex).
 * Uncontended: mp_<op>_spin / mp_<op>_mutex, the nosync operation under the lock, rows of
 * common/lf_cost_rows.h (same ROW, same function as the nosync and lf rows).
 * Two threads: mp_<op>_{lf,spin,mutex}_2t - this thread and one on another CPU each do
 * T2_OPS operations on the SAME object (counter increment; push + pop of the Treiber
 * stack, each thread pushing the node it holds and holding the node it pops; push + pop
 * of the array stack), started together by a spin barrier; a sample is the TSC ticks from the release of the barrier to the later
 * of the two ends, divided by T2_OPS (ticks per operation of each thread while the other
 * does the same; the "empty" field is 0).  T2_RUNS samples per row, the rows
 * interleaved run by run so that the machine's noise falls on all of them.  Inputs:
 * T2_OPS, T2_RUNS, the two CPUs (this one and the first other usable one).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>
#include <stdbool.h>

#include "cost_locks.h"

#define LF_COST_LOCKS()                                                                \
	do {                                                                           \
		LF_COST_LOCKED_ROWS("spin", COST_SPIN_WHAT, spin_lock(), spin_unlock()); \
		LF_COST_LOCKED_ROWS("mutex", COST_MUTEX_WHAT, pthread_mutex_lock(&mutex), \
				    pthread_mutex_unlock(&mutex));                     \
	} while (0)

#include "lf_cost_rows.h"
#include "hosted_env.h"

/* ---- two threads on one object ------------------------------------------------------- */

#define T2_OPS 50000
#define T2_RUNS 15

static uint64_t av2[2];		/* per thread: the popped value (discarded) */

static void c_counter_lf(unsigned t, uint64_t n)
{
	(void)t;
	for (uint64_t k = 0; k < n; k++)
		(void)lf_counter_add_cas_relaxed(&o.counter, 1, NULL);
}
static void c_counter_spin(unsigned t, uint64_t n)
{
	(void)t;
	for (uint64_t k = 0; k < n; k++) {
		spin_lock();
		o.plain_counter++;
		spin_unlock();
	}
}
static void c_counter_mutex(unsigned t, uint64_t n)
{
	(void)t;
	for (uint64_t k = 0; k < n; k++) {
		pthread_mutex_lock(&mutex);
		o.plain_counter++;
		pthread_mutex_unlock(&mutex);
	}
}
/* The stack cases: each thread owns one node at a time - it pushes the node it holds
 * and holds the node it pops (maybe the other thread's), so no node is pushed twice. */
static void c_stack_lf(unsigned t, uint64_t n)
{
	struct lf_stack_node *h = &snodes[t];

	for (uint64_t k = 0; k < n; k++) {
		(void)lf_stack_push_mpmc(&o.stack, h);
		(void)lf_stack_pop_mpmc(&o.stack, &h);	/* never empty: ours is in */
	}
}
static void c_stack_spin(unsigned t, uint64_t n)
{
	struct lf_stack_node *h = &snodes[t];

	for (uint64_t k = 0; k < n; k++) {
		spin_lock();
		plain_push(h);
		spin_unlock();
		spin_lock();
		h = plain_pop();
		spin_unlock();
	}
}
static void c_stack_mutex(unsigned t, uint64_t n)
{
	struct lf_stack_node *h = &snodes[t];

	for (uint64_t k = 0; k < n; k++) {
		pthread_mutex_lock(&mutex);
		plain_push(h);
		pthread_mutex_unlock(&mutex);
		pthread_mutex_lock(&mutex);
		h = plain_pop();
		pthread_mutex_unlock(&mutex);
	}
}
static void c_astack_lf(unsigned t, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		(void)lf_astack_push_mpmc(&o.astack, t + 1);
		(void)lf_astack_pop_mpmc(&o.astack, &av2[t]);
	}
}
static void c_astack_spin(unsigned t, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		spin_lock();
		(void)plain_apush(t + 1);
		spin_unlock();
		spin_lock();
		(void)plain_apop(&av2[t]);
		spin_unlock();
	}
}
static void c_astack_mutex(unsigned t, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		pthread_mutex_lock(&mutex);
		(void)plain_apush(t + 1);
		pthread_mutex_unlock(&mutex);
		pthread_mutex_lock(&mutex);
		(void)plain_apop(&av2[t]);
		pthread_mutex_unlock(&mutex);
	}
}

static const struct t2_case {
	const char *name, *detail;
	void (*fn)(unsigned t, uint64_t n);
} t2_cases[] = {
	{ "mp_counter_inc_lf_2t", "2 threads: lf_counter_add_cas_relaxed", c_counter_lf },
	{ "mp_counter_inc_spin_2t", "2 threads: increment under a TTAS spin lock", c_counter_spin },
	{ "mp_counter_inc_mutex_2t", "2 threads: increment under a pthread mutex", c_counter_mutex },
	{ "mp_stack_push_pop_lf_2t", "2 threads: lf_stack push + pop", c_stack_lf },
	{ "mp_stack_push_pop_spin_2t", "2 threads: plain push, pop, each under a TTAS spin lock",
	  c_stack_spin },
	{ "mp_stack_push_pop_mutex_2t", "2 threads: plain push, pop, each under a pthread mutex",
	  c_stack_mutex },
	{ "mp_astack_push_pop_lf_2t", "2 threads: lf_astack push + pop", c_astack_lf },
	{ "mp_astack_push_pop_spin_2t", "2 threads: array push, pop, each under a TTAS spin lock",
	  c_astack_spin },
	{ "mp_astack_push_pop_mutex_2t", "2 threads: array push, pop, each under a pthread mutex",
	  c_astack_mutex },
};
#define T2_NCASES (sizeof(t2_cases) / sizeof(t2_cases[0]))

/* Run protocol: the main thread sets t2_case, bumps t2_round (release); the helper sees
 * the new round (acquire), both wait for t2_start, run, store their end TSC and bump
 * t2_done. */
static _Alignas(64) uint32_t t2_round, t2_start, t2_done;
static _Alignas(64) uint64_t t2_end[2];
static const struct t2_case *t2_cur;	/* written before the round's release */

static void *t2_helper(void *arg)
{
	int cpu = *(int *)arg;
	uint32_t seen = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	for (;;) {
		while (ksync_load_acquire_u32(&t2_round) == seen)
			ksync_cpu_relax();
		seen = ksync_load_acquire_u32(&t2_round);
		if (!t2_cur)
			return NULL;
		ksync_fetch_add_acq_rel_u32(&t2_start, 1);
		while (ksync_load_acquire_u32(&t2_start) < 2)
			ksync_cpu_relax();
		t2_cur->fn(1, T2_OPS);
		t2_end[1] = ksync_cycles_end();
		ksync_fetch_add_acq_rel_u32(&t2_done, 1);
	}
}

static uint64_t t2_run(const struct t2_case *c)
{
	uint64_t t0, e0, e1;

	t2_cur = c;
	ksync_store_relaxed_u32(&t2_start, 0);
	ksync_store_relaxed_u32(&t2_done, 0);
	ksync_fetch_add_acq_rel_u32(&t2_round, 1);	/* release: t2_cur, the resets */
	while (ksync_load_acquire_u32(&t2_start) < 1)	/* the helper is at the barrier */
		ksync_cpu_relax();
	t0 = ksync_cycles_begin();
	ksync_fetch_add_acq_rel_u32(&t2_start, 1);
	c->fn(0, T2_OPS);
	e0 = ksync_cycles_end();
	while (ksync_load_acquire_u32(&t2_done) < 1)
		ksync_cpu_relax();
	e1 = t2_end[1];
	return (e0 > e1 ? e0 : e1) - t0;
}

static bool two_threads(void)
{
	static uint64_t samples[T2_NCASES][T2_RUNS], zero[1];
	int here = sched_getcpu(), other = -1;
	cpu_set_t set;
	pthread_t th;
	uint64_t v;
	struct lf_stack_node *sn;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (c != here && CPU_ISSET(c, &set)) {
				other = c;
				break;
			}
	/* bench_start pinned this thread to `here`: the affinity above is that one CPU;
	 * take any other online CPU */
	if (other < 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		for (int c = 0; c < n; c++)
			if (c != here) {
				other = c;
				break;
			}
	}
	if (other < 0) {
		ksync_printf("ktap: # two-thread rows: no second CPU\n");
		return true;
	}
	if (pthread_create(&th, NULL, t2_helper, &other) != 0)
		return false;
	for (unsigned r = 0; r < T2_RUNS; r++)
		for (unsigned c = 0; c < T2_NCASES; c++) {
			/* each case starts from an empty object */
			while (lf_stack_pop_mpmc(&o.stack, &sn) >= 0)
				;
			while (lf_astack_pop_mpmc(&o.astack, &v) >= 0)
				;
			o.plain_top = NULL;
			o.plain_sp = 0;
			samples[c][r] = t2_run(&t2_cases[c]);
		}
	t2_cur = NULL;
	ksync_fetch_add_acq_rel_u32(&t2_round, 1);
	pthread_join(th, NULL);
	ksync_printf("ktap: # two threads on cpus %d and %d: %d runs x %d operations per "
		     "thread, unit: TSC ticks per operation of each thread\n", here, other,
		     T2_RUNS, T2_OPS);
	for (unsigned c = 0; c < T2_NCASES; c++)
		ksync_prim_emit(t2_cases[c].name, t2_cases[c].detail, samples[c], T2_RUNS,
				T2_OPS, zero, 1);
	return true;
}

int main(void)
{
	(void)bench_start(NULL);
	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	ksync_printf("ktap: # pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);

	lf_cost_rows();
	bool ok = two_threads();
	ksync_printf("ktap: %sok 1 lf_stack_cost\n", ok ? "" : "not ");
	return 0;
}
