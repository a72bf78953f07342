/*
 * lf_stack_cost.c - the Massalin & Pu cost table ("Lock-free synchronization overhead":
 * each operation with no synchronization, lock-free without interference, and
 * lock-free when interference forces exactly one retry), regenerated hosted on this
 * CPU for the objects of issue #3 part 1: counter, LIFO stack (pointer and index
 * variants), linked list at the head, optimistic section.  Same method as bench/prims.c
 * (include/ksync/measure.h: 200 batches x 256 operations, lfence;rdtsc;lfence ..
 * rdtscp;lfence, empty loop of the same shape subtracted, TSC ticks per operation).
 *
 * Output (stdout):
 *   KSYNC {"kind":"hosted_boot",...}
 *   ktap: KTAP version 1 / 1..1
 *   KSYNC {"kind":"prim","name":"mp_<object>_<op>_<variant>",...}   one line per row
 *   ktap: # ratio lines (median over median)
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
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lf_cost_rows.h"
#include "hosted_env.h"

int main(void)
{
	const char *source;
	char model[64];
	uint64_t hz, t0;
	cpu_set_t set;
	int cpu = sched_getcpu();

	setvbuf(stdout, NULL, _IOLBF, 0);
	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		ksync_printf("ktap: # sched_setaffinity failed; figures may include migrations\n");
	t0 = now_ns();
	while (now_ns() - t0 < 200000000ull)
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);
	hz = tsc_hz(&source);
	cpu_model(model, sizeof(model));
	ksync_printf("KSYNC {\"kind\":\"hosted_boot\",\"tsc_hz\":%llu,\"tsc_source\":\"%s\","
		     "\"cpu_model\":\"%s\",\"cpus\":%ld}\n",
		     (unsigned long long)hz, source, model, sysconf(_SC_NPROCESSORS_ONLN));
	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	ksync_printf("ktap: # pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);

	lf_cost_rows();
	ksync_printf("ktap: ok 1 lf_stack_cost\n");
	return 0;
}
