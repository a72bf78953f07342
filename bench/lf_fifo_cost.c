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
 *   mp_bytes_write_read_<n>_lf           lf_bytes_write_spsc + lf_bytes_read_spsc, n bytes
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

/* ---- forced retry: spoil the expected value once ------------------------------------ */
static int force;		/* 1: the next CAS of the measured operation must fail */
static unsigned long retries;	/* LF_FIFO_RETRY: failed CASes followed by a retry */

#define LF_FIFO_INTERFERE(site, word, expected)                                       \
	do {                                                                          \
		if (__builtin_expect(force, 0)) {                                     \
			force = 0;                                                    \
			*(expected) ^= 1ull << 63;                                    \
		}                                                                     \
	} while (0)
#define LF_FIFO_RETRY(site) ((void)retries++)

#include "hosted_env.h"
#include <ksync/lf_bytes_spsc.h>
#include <ksync/lf_fifo_mpmc.h>
#include <ksync/lf_fifo_mpsc.h>
#include <ksync/lf_fifo_spmc.h>
#include <ksync/lf_fifo_spsc.h>
#include <ksync/measure.h>
#include <ksync/platform.h>

#define BATCHES KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH
#define CAP 512

static uint64_t batch_ticks[BATCHES], empty_ticks[BATCHES];

static struct lf_fifo_spsc q_spsc;
static struct lf_fifo_spmc q_spmc;
static struct lf_fifo_mpsc q_mpsc;
static struct lf_fifo_mpmc q_mpmc;
static struct lf_bytes_spsc q_bytes;
static _Alignas(64) unsigned char st_spsc[CAP * 8], st_spmc[CAP * 8];
static _Alignas(64) unsigned char st_mpsc[CAP * 24], st_mpmc[CAP * 24], st_bytes[4096];
static unsigned char bbuf_in[256], bbuf_out[256];

static void init_all(void)
{
	lf_fifo_init_spsc(&q_spsc, st_spsc, sizeof(st_spsc), CAP, 8, NULL);
	lf_fifo_init_spmc(&q_spmc, st_spmc, sizeof(st_spmc), CAP, 8, NULL);
	lf_fifo_init_mpsc(&q_mpsc, st_mpsc, sizeof(st_mpsc), CAP, 8, NULL);
	lf_fifo_init_mpmc(&q_mpmc, st_mpmc, sizeof(st_mpmc), CAP, 8, NULL);
	lf_bytes_init_spsc(&q_bytes, st_bytes, sizeof(st_bytes), 4096, NULL);
}

/*
 * Each batch: SETUP (untimed), then OPS timed executions of BODY; the empty loop is
 * measured the same way (after the same SETUP).  A warm-up pass first.
 */
#define ROW(name, detail, SETUP, BODY)                                                \
	do {                                                                          \
		for (int pass_ = 0; pass_ < 2; pass_++)                               \
			for (size_t b_ = 0; b_ < BATCHES; b_++) {                     \
				SETUP;                                                \
				KSYNC_MEASURE(&batch_ticks[b_], 1, OPS, BODY);        \
			}                                                             \
		for (size_t b_ = 0; b_ < BATCHES; b_++) {                             \
			SETUP;                                                        \
			KSYNC_MEASURE(&empty_ticks[b_], 1, OPS, (void)0);             \
		}                                                                     \
		ksync_prim_emit(name, detail, batch_ticks, BATCHES, OPS, empty_ticks, \
				BATCHES);                                             \
	} while (0)

static uint64_t sink;
static double spsc_pair_ticks;
static int retries_ok;
static uint64_t chain_word;
static uint64_t val = 1;

/* drain / fill helpers (untimed) */
#define DRAIN(deq, q) while (deq(&q, &sink) == KSYNC_OK)
#define FILL(enq, deq, q) do { DRAIN(deq, q); for (int i_ = 0; i_ < OPS; i_++) enq(&q, &val); } while (0)

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
	char model[64];
	uint64_t hz, t0;
	unsigned long r0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pin_to_current_cpu();
	init_all();
	t0 = now_ns();
	while (now_ns() - t0 < 200000000ull)	/* leave the idle frequency */
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);
	hz = tsc_hz(&source);
	cpu_model(model, sizeof(model));
	ksync_printf("KSYNC {\"kind\":\"hosted_boot\",\"tsc_hz\":%llu,\"tsc_source\":\"%s\","
		     "\"cpu_model\":\"%s\",\"cpus\":%ld}\n",
		     (unsigned long long)hz, source, model, sysconf(_SC_NPROCESSORS_ONLN));
	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	ksync_printf("ktap: # hosted; pinned to cpu %u; %d batches x %d ops; unit: TSC ticks per op\n",
		     ksync_cpu_id(), BATCHES, OPS);

	/* -- the floor: one index through memory ------------------------------------------ */
	ROW("ref_index_chain", "load, add 1, store of one 64-bit word (store-to-load chain)",
	    (void)0, {
		    uint64_t v_ = ksync_load_relaxed_u64(&chain_word);

		    ksync_store_release_u64(&chain_word, v_ + 1);
	    });

	/* -- no synchronization ------------------------------------------------------- */
	ROW("mp_fifo_enq_deq_nosync", "__lf_fifo_enqueue_spsc + __lf_fifo_dequeue_spsc",
	    DRAIN(__lf_fifo_dequeue_spsc, q_spsc),
	    { __lf_fifo_enqueue_spsc(&q_spsc, &val); __lf_fifo_dequeue_spsc(&q_spsc, &sink); });
	ROW("mp_fifo_enq_nosync", "__lf_fifo_enqueue_spsc into an empty queue",
	    DRAIN(__lf_fifo_dequeue_spsc, q_spsc), __lf_fifo_enqueue_spsc(&q_spsc, &val));
	ROW("mp_fifo_deq_nosync", "__lf_fifo_dequeue_spsc from a filled queue",
	    FILL(__lf_fifo_enqueue_spsc, __lf_fifo_dequeue_spsc, q_spsc),
	    __lf_fifo_dequeue_spsc(&q_spsc, &sink));

	/* -- lock-free / wait-free, no interference ------------------------------------ */
	ROW("mp_fifo_spsc_enq_deq_lf", "lf_fifo_enqueue_spsc + lf_fifo_dequeue_spsc (no locked instruction)",
	    DRAIN(lf_fifo_dequeue_spsc, q_spsc),
	    { lf_fifo_enqueue_spsc(&q_spsc, &val); lf_fifo_dequeue_spsc(&q_spsc, &sink); });
	spsc_pair_ticks = median_per_op();
	ROW("mp_fifo_spsc_enq_lf", "lf_fifo_enqueue_spsc into an empty queue",
	    DRAIN(lf_fifo_dequeue_spsc, q_spsc), lf_fifo_enqueue_spsc(&q_spsc, &val));
	ROW("mp_fifo_spsc_deq_lf", "lf_fifo_dequeue_spsc from a filled queue",
	    FILL(lf_fifo_enqueue_spsc, lf_fifo_dequeue_spsc, q_spsc),
	    lf_fifo_dequeue_spsc(&q_spsc, &sink));

	ROW("mp_fifo_spmc_enq_deq_lf", "lf_fifo_enqueue_spmc + lf_fifo_dequeue_spmc (one lock cmpxchg)",
	    DRAIN(lf_fifo_dequeue_spmc, q_spmc),
	    { lf_fifo_enqueue_spmc(&q_spmc, &val); lf_fifo_dequeue_spmc(&q_spmc, &sink); });
	ROW("mp_fifo_spmc_enq_lf", "lf_fifo_enqueue_spmc into an empty queue",
	    DRAIN(lf_fifo_dequeue_spmc, q_spmc), lf_fifo_enqueue_spmc(&q_spmc, &val));
	ROW("mp_fifo_spmc_deq_lf", "lf_fifo_dequeue_spmc from a filled queue",
	    FILL(lf_fifo_enqueue_spmc, lf_fifo_dequeue_spmc, q_spmc),
	    lf_fifo_dequeue_spmc(&q_spmc, &sink));

	ROW("mp_fifo_mpsc_enq_deq_lf", "lf_fifo_enqueue_mpsc (3 lock cmpxchg) + lf_fifo_dequeue_mpsc (none)",
	    DRAIN(lf_fifo_dequeue_mpsc, q_mpsc),
	    { lf_fifo_enqueue_mpsc(&q_mpsc, &val); lf_fifo_dequeue_mpsc(&q_mpsc, &sink); });
	ROW("mp_fifo_mpsc_enq_lf", "lf_fifo_enqueue_mpsc into an empty queue",
	    DRAIN(lf_fifo_dequeue_mpsc, q_mpsc), lf_fifo_enqueue_mpsc(&q_mpsc, &val));
	ROW("mp_fifo_mpsc_deq_lf", "lf_fifo_dequeue_mpsc from a filled queue",
	    FILL(lf_fifo_enqueue_mpsc, lf_fifo_dequeue_mpsc, q_mpsc),
	    lf_fifo_dequeue_mpsc(&q_mpsc, &sink));

	ROW("mp_fifo_mpmc_enq_deq_lf", "lf_fifo_enqueue_mpmc + lf_fifo_dequeue_mpmc (3 + 3 lock cmpxchg)",
	    DRAIN(lf_fifo_dequeue_mpmc, q_mpmc),
	    { lf_fifo_enqueue_mpmc(&q_mpmc, &val); lf_fifo_dequeue_mpmc(&q_mpmc, &sink); });
	ROW("mp_fifo_mpmc_enq_lf", "lf_fifo_enqueue_mpmc into an empty queue",
	    DRAIN(lf_fifo_dequeue_mpmc, q_mpmc), lf_fifo_enqueue_mpmc(&q_mpmc, &val));
	ROW("mp_fifo_mpmc_deq_lf", "lf_fifo_dequeue_mpmc from a filled queue",
	    FILL(lf_fifo_enqueue_mpmc, lf_fifo_dequeue_mpmc, q_mpmc),
	    lf_fifo_dequeue_mpmc(&q_mpmc, &sink));

	/* -- exactly one forced retry --------------------------------------------------- */
	r0 = retries;
	ROW("mp_fifo_spmc_deq_retry1", "lf_fifo_dequeue_spmc, its head CAS failing once",
	    FILL(lf_fifo_enqueue_spmc, lf_fifo_dequeue_spmc, q_spmc),
	    { force = 1; lf_fifo_dequeue_spmc(&q_spmc, &sink); });
	ROW("mp_fifo_mpsc_enq_retry1", "lf_fifo_enqueue_mpsc, its cell-claim CAS failing once",
	    DRAIN(lf_fifo_dequeue_mpsc, q_mpsc),
	    { force = 1; lf_fifo_enqueue_mpsc(&q_mpsc, &val); });
	ROW("mp_fifo_mpmc_enq_retry1", "lf_fifo_enqueue_mpmc, its cell-claim CAS failing once",
	    DRAIN(lf_fifo_dequeue_mpmc, q_mpmc),
	    { force = 1; lf_fifo_enqueue_mpmc(&q_mpmc, &val); });
	ROW("mp_fifo_mpmc_deq_retry1", "lf_fifo_dequeue_mpmc, its claiming CAS failing once",
	    FILL(lf_fifo_enqueue_mpmc, lf_fifo_dequeue_mpmc, q_mpmc),
	    { force = 1; lf_fifo_dequeue_mpmc(&q_mpmc, &sink); });
	ROW("mp_fifo_mpmc_enq_deq_retry1", "lf_fifo_enqueue_mpmc + lf_fifo_dequeue_mpmc, one failed CAS each",
	    DRAIN(lf_fifo_dequeue_mpmc, q_mpmc),
	    { force = 1; lf_fifo_enqueue_mpmc(&q_mpmc, &val);
	      force = 1; lf_fifo_dequeue_mpmc(&q_mpmc, &sink); });
	/* two timed passes per row; 6 forced retries per batch position */
	ksync_printf("ktap: # forced retries: %lu (expected %lu)\n", retries - r0,
		     (unsigned long)(2ul * BATCHES * OPS * 6));
	retries_ok = retries - r0 == 2ul * BATCHES * OPS * 6;

	/* -- byte stream ------------------------------------------------------------------ */
	ROW("mp_bytes_write_read_1_lf", "lf_bytes_write_spsc + lf_bytes_read_spsc of 1 byte", (void)0,
	    { lf_bytes_write_spsc(&q_bytes, bbuf_in, 1); lf_bytes_read_spsc(&q_bytes, bbuf_out, 1); });
	ROW("mp_bytes_write_read_64_lf", "lf_bytes_write_spsc + lf_bytes_read_spsc of 64 bytes", (void)0,
	    { lf_bytes_write_spsc(&q_bytes, bbuf_in, 64); lf_bytes_read_spsc(&q_bytes, bbuf_out, 64); });
	ROW("mp_bytes_write_read_256_lf", "lf_bytes_write_spsc + lf_bytes_read_spsc of 256 bytes", (void)0,
	    { lf_bytes_write_spsc(&q_bytes, bbuf_in, 256); lf_bytes_read_spsc(&q_bytes, bbuf_out, 256); });

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
	ksync_printf("ktap: %sok 1 lf_fifo_cost\n", retries_ok ? "" : "not ");
	return 0;
}
