/*
 * prims.c - hosted primitive-cost benchmark (build/hosted/bench/prims): the hosted rows
 * of docs/protocol.md section 4 measured on the real CPU in user mode, with the shared
 * method of include/ksync/measure.h (200 batches x 256 ops, serialized TSC reads, empty
 * loop subtracted, min/median/p99/max per op in TSC ticks).
 *
 * Output (stdout):
 *   KSYNC {"kind":"hosted_boot","tsc_hz":...,"tsc_source":"cpuid15|calibrated",
 *          "cpu_model":"...","cpus":N}
 *   ktap: KTAP version 1
 *   ktap: 1..1
 *   KSYNC {"kind":"prim","name":"flag_set_clear",...}      one line per row
 *   ktap: ok 1 prims
 *
 * The process pins itself to the CPU it starts on and spins ~200 ms before measuring so
 * the core leaves its idle frequency.  Built with -mno-red-zone (mk/lib.mk): the
 * pushfq/popfq row pushes below %rsp, where the red zone would be.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ksync/atomic.h>
#include <ksync/measure.h>

#include "hosted_env.h"
#include <ksync/platform.h>

#define BATCHES KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH

/* Targets of the measured operations, each on its own cache line. */
static struct {
	_Alignas(64) uint64_t cmpxchg_word;	/* stays 0: every lock cmpxchg succeeds */
	_Alignas(64) uint64_t xadd_word;
	_Alignas(64) struct ksync_u128 dword;	/* stays {0, 0}: every cmpxchg16b succeeds */
} target;

/* The flag byte: thread-local, addressed %fs-relative (local-exec TLS) - the user-mode
 * analogue of the kernel row's per-CPU byte via %gs. */
static _Thread_local uint8_t flag __attribute__((tls_model("local-exec")));

static uint64_t batch_ticks[BATCHES], empty_ticks[BATCHES];

static bool invariant_tsc(void)
{
	unsigned a, b, c, d;

	if ((unsigned)__get_cpuid_max(0x80000000, NULL) < 0x80000007)
		return false;
	__cpuid(0x80000007, a, b, c, d);
	return (d >> 8) & 1;
}

/* Warm up on the body (dropped), measure the empty loop, then the body; emit the row. */
#define ROW(name, detail, ...)                                                        \
	do {                                                                          \
		KSYNC_MEASURE(batch_ticks, BATCHES, OPS, __VA_ARGS__); /* warm-up */  \
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);                    \
		KSYNC_MEASURE(batch_ticks, BATCHES, OPS, __VA_ARGS__);                \
		ksync_prim_emit(name, detail, batch_ticks, BATCHES, OPS, empty_ticks, \
				BATCHES);                                             \
	} while (0)

int main(void)
{
	(void)bench_start(NULL);

	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	if (!invariant_tsc())
		ksync_printf("ktap: # CPUID does not report an invariant TSC\n");
	ksync_printf("ktap: # pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);

	ROW("flag_set_clear", "movb $1 then movb $0 to a thread-local byte via %fs",
	    __asm__ __volatile__("movb $1, %0\n\tmovb $0, %0" : "+m"(flag)));

	ROW("pushf_popf", "pushfq; popfq in user mode (IF unchanged): on-chip stand-in",
	    __asm__ __volatile__("pushfq\n\tpopfq" : : : "cc"));

	ROW("lock_cmpxchg", "lock cmpxchgq, uncontended, succeeds", {
		uint64_t expect = 0;

		__asm__ __volatile__("lock cmpxchgq %[n], %[m]"
				     : [m] "+m"(target.cmpxchg_word), "+a"(expect)
				     : [n] "r"((uint64_t)0)
				     : "cc");
	});

	ROW("lock_xadd", "lock xaddq, uncontended", {
		uint64_t v = 1;

		__asm__ __volatile__("lock xaddq %[v], %[m]"
				     : [m] "+m"(target.xadd_word), [v] "+r"(v)
				     :
				     : "cc");
	});

	ROW("cmpxchg16b", "lock cmpxchg16b (ksync_cas128), uncontended, succeeds", {
		struct ksync_u128 e = { 0, 0 };

		(void)ksync_cas128(&target.dword, &e, e);
	});

	ROW("mfence", "mfence", __asm__ __volatile__("mfence" : : : "memory"));

	ksync_printf("ktap: ok 1 prims\n");
	return 0;
}
