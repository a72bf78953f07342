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
	(void)bench_start(NULL);
	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	ksync_printf("ktap: # pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);

	lf_cost_rows();
	ksync_printf("ktap: ok 1 lf_stack_cost\n");
	return 0;
}
