/*
 * lf_fifo_cost.c - hosted cost of libksync's bounded FIFO queues (build/hosted/bench/
 * lf_fifo_cost): one thread, uncontended, with the shared primitive-cost method of
 * include/ksync/measure.h (batches of 256 operations between serialized TSC reads, an
 * empty loop of the same shape subtracted; min/median/p99/max per operation in TSC
 * ticks).  Regenerates the FIFO rows of Massalin & Pu 1991's cost table ("lock-free
 * synchronization overhead": each operation with no synchronization, lock-free without
 * interference, lock-free with exactly one retry) on today's CPU:
 *
 *   mp_fifo_{enq,deq,enq_deq}_nosync     __lf_fifo_{enqueue,dequeue}_spsc: the ring with
 *                                        no synchronization (caller provides exclusion)
 *   mp_fifo_<fl>_{enq,deq,enq_deq}_lf    lf_fifo_*_<fl>, fl = spsc spmc mpsc mpmc: the
 *                                        libksync operation, uncontended
 *   mp_fifo_<fl>_<op>_retry1             the same with exactly one failed CAS first
 *   mp_fifo_spsc_burst32_enq_deq_lf      the spsc batch functions, 32 elements, per element
 *   mp_fifo_spsc_ends_put_get_lf         lf_fifo_put_spsc + lf_fifo_get_spsc through ends
 *                                        (each side's index in a local: one element and
 *                                        one publication per call, no index reload)
 *   mp_bytes_write_read_<n>_lf           lf_bytes_write_spsc + lf_bytes_read_spsc, n bytes
 *   mp_fifo_enq_deq_{spin,mutex}         the nosync pair, each operation under a lock
 *                                        (bench/cost_locks.h): what lock-free is judged
 *                                        against
 *   ref_index_chain                      load, add 1, store of one 64-bit word: the
 *                                        store-to-load chain through its own index that
 *                                        every ring operation carries (the floor of a
 *                                        one-thread enqueue+dequeue pair on this CPU)
 * Elements are 8 bytes.  "enq" rows time 256 enqueues into an empty queue of capacity
 * 512 (drained outside the timed batch), "deq" rows 256 dequeues from a filled one,
 * "enq_deq" rows an enqueue followed by a dequeue.  Issue #3's bar: the spsc pair
 * (mp_fifo_spsc_enq_deq_lf) <= 1.5 ns on the target CPU; the last diagnostic line gives
 * it in ns with the TSC frequency.
 *
 * How a retry is forced without a second CPU (as bench/lf_stack_cost.c does): the
 * queues' interference hook (LF_FIFO_INTERFERE, lf_fifo.h) runs between the read and
 * the CAS; when `force` is set it flips the top bit of the value the CAS expects, so the
 * CAS fails exactly as if another CPU had changed the word, and the operation goes round
 * its loop once more (LF_FIFO_RETRY counts it; the count is checked).  The figure is the
 * retry path itself - failed locked CAS, rereads, second CAS - without the interfering
 * CPU's own work: Massalin & Pu's "retry" column.  In the other rows `force` stays 0; the
 * hook then costs the CAS flavours one load and a predicted branch per CAS site.
 *
 * Output: a KSYNC hosted_boot line, KTAP (one case), one KSYNC prim line per row, and
 * diagnostics.  Environment label: hosted (Linux user mode, this machine's CPU).
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double spsc_pair_ticks, spsc_batch_ticks, spsc_ends_ticks;
static double median_per_op(void);
#define LF_FIFO_ROWS_AFTER_SPSC_PAIR() (spsc_pair_ticks = median_per_op())
#define LF_FIFO_ROWS_AFTER_SPSC_BATCH() (spsc_batch_ticks = median_per_op())
#define LF_FIFO_ROWS_AFTER_SPSC_ENDS() (spsc_ends_ticks = median_per_op())
#include "cost_locks.h"
#define LF_FIFO_LOCKS(X)                                                              \
	X(spin, "spin", COST_SPIN_WHAT, spin_lock(), spin_unlock())                   \
	X(mutex, "mutex", COST_MUTEX_WHAT, pthread_mutex_lock(&mutex), pthread_mutex_unlock(&mutex))
#include "lf_fifo_rows.h"
#include "hosted_env.h"

/* ---- two threads: producer on another CPU, consumer here ------------------------------- */
#define STREAM_N 20000000ull
static struct lf_fifo_spsc q_stream;
static _Alignas(64) unsigned char st_stream[1024 * 8];

static void *stream_producer(void *arg)
{
	cpu_set_t set;
	int cpu = *(int *)arg;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
	for (uint64_t i = 1; i <= STREAM_N; i++)
		while (lf_fifo_enqueue_spsc(&q_stream, &i) != KSYNC_OK)
			ksync_cpu_relax();
	return NULL;
}

/* TSC ticks per element moved from one core to the other (best of 3 runs), or 0 if
 * there is no second CPU.  8-byte elements, capacity 1024. */
static double spsc_stream_ticks(void)
{
	int here = sched_getcpu(), other = -1;
	double best = 0;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	for (int c = 0; c < n; c++)
		if (c != here) {
			other = c;
			break;
		}
	if (other < 0)
		return 0;
	for (int run = 0; run < 3; run++) {
		pthread_t th;
		uint64_t v = 0, expect = 1, bad = 0, t0, t1;

		lf_fifo_init_spsc(&q_stream, st_stream, sizeof(st_stream), 1024, 8, NULL);
		t0 = ksync_cycles_begin();
		if (pthread_create(&th, NULL, stream_producer, &other) != 0)
			return 0;
		while (expect <= STREAM_N) {
			if (lf_fifo_dequeue_spsc(&q_stream, &v) != KSYNC_OK) {
				ksync_cpu_relax();
				continue;
			}
			bad += v != expect++;
		}
		t1 = ksync_cycles_end();
		pthread_join(th, NULL);
		if (bad)
			return -1;
		if (run == 0 || (double)(t1 - t0) / STREAM_N < best)
			best = (double)(t1 - t0) / STREAM_N;
	}
	return best;
}

/* Median per-op figure of the row just emitted: ksync_prim_emit left batch_ticks as the
 * sorted per-batch nets (empty-loop median already subtracted). */
static double median_per_op(void)
{
	return (double)batch_ticks[(BATCHES - 1) / 2] / OPS;
}

int main(void)
{
	const char *source;
	uint64_t hz = bench_start(&source);

	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	ksync_printf("ktap: # hosted; pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);

	int retries_ok = lf_fifo_rows();

	{
		double st = spsc_stream_ticks();

		if (st > 0)
			ksync_printf("ktap: # spsc two threads (producer on another CPU): %.2f ticks = "
				     "%.2f ns per element, best of 3 x %llu (hosted, shared machine)\n",
				     st, st * 1e9 / (double)hz, (unsigned long long)STREAM_N);
		else
			ksync_printf("ktap: # spsc two threads: %s\n",
				     st < 0 ? "ORDER VIOLATION" : "no second CPU");
		if (st < 0)
			retries_ok = 0;
	}
	ksync_printf("ktap: # tsc_hz %llu (%s); mp_fifo_spsc_enq_deq_lf median %.2f ticks = "
		     "%.2f ns (bar: 1.5 ns)\n", (unsigned long long)hz, source, spsc_pair_ticks,
		     spsc_pair_ticks * 1e9 / (double)hz);
	ksync_printf("ktap: # mp_fifo_spsc_burst32_enq_deq_lf median %.2f ticks = %.2f ns per "
		     "element (bar: 1.5 ns)\n", spsc_batch_ticks, spsc_batch_ticks * 1e9 / (double)hz);
	ksync_printf("ktap: # mp_fifo_spsc_ends_put_get_lf median %.2f ticks = %.2f ns per pair "
		     "(bar: 1.5 ns)\n", spsc_ends_ticks, spsc_ends_ticks * 1e9 / (double)hz);
	ksync_printf("ktap: %sok 1 lf_fifo_cost\n", retries_ok ? "" : "not ");
	return 0;
}
