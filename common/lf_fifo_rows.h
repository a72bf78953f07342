/*
 * lf_fifo_rows.h - the FIFO rows of the Massalin & Pu cost table (no synchronization /
 * lock-free without interference / exactly one forced retry, for every queue flavour and
 * the byte stream), shared by the hosted bench/lf_fifo_cost.c and the kernel's lf_cost
 * experiment (kernel/exp/lf_cost.c), so both sides measure the same code. Freestanding:
 * ksync headers only, no floating point. Include before any other ksync queue header
 * (the retry hook must be defined first). lf_fifo_rows() prints one KSYNC prim line per
 * row and returns true if every forced retry happened exactly once.
 * A program may define LF_FIFO_ROWS_AFTER_SPSC_PAIR() / _BATCH() / _ENDS() to look at the spsc
 * pair's, the spsc batch row's and the ends row's ticks right after each (the hosted bench
 * converts them to ns).
 *
 * The enqueue + dequeue pairs that findings compare - the unsynchronized pair, the spsc
 * pair, the spsc pair through ends, and the unsynchronized pair under a lock - each run
 * in a noinline function of its own (LF_FIFO_PAIR_FN), so that no side of a comparison
 * gets a placement (registers, code layout) the other does not.  Locked pairs: a program
 * may define, before the include, LF_FIFO_LOCKS(X) as a list of
 *   X(id, tag, what, LOCK, UNLOCK)      -> row mp_fifo_enq_deq_<tag>
 * (the unsynchronized pair, each operation under LOCK ... UNLOCK; the kernel: its master
 * lock, the hosted bench: a spin lock and a pthread mutex).
 */
#ifndef KSYNC_BENCH_LF_FIFO_ROWS_H
#define KSYNC_BENCH_LF_FIFO_ROWS_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

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

/* ROW for a BODY that moves PER elements: OPS / PER executions per batch, the figure per
 * element (the spsc batch rows). */
#define ROW_PER(name, detail, PER, SETUP, BODY)                                       \
	do {                                                                          \
		for (int pass_ = 0; pass_ < 2; pass_++)                               \
			for (size_t b_ = 0; b_ < BATCHES; b_++) {                     \
				SETUP;                                                \
				KSYNC_MEASURE(&batch_ticks[b_], 1, OPS / (PER), BODY); \
			}                                                             \
		for (size_t b_ = 0; b_ < BATCHES; b_++) {                             \
			SETUP;                                                        \
			KSYNC_MEASURE(&empty_ticks[b_], 1, OPS / (PER), (void)0);     \
		}                                                                     \
		ksync_prim_emit(name, detail, batch_ticks, BATCHES, OPS, empty_ticks, \
				BATCHES);                                             \
	} while (0)
#define SPSC_BATCH 32
static uint64_t bvals[SPSC_BATCH], bsink[SPSC_BATCH];
static size_t bdone;

static uint64_t sink;
static uint64_t chain_word;
static uint64_t val = 1;

/* drain / fill helpers (untimed) */
#define DRAIN(deq, q) while (deq(&q, &sink) == KSYNC_OK)
#define FILL(enq, deq, q) do { DRAIN(deq, q); for (int i_ = 0; i_ < OPS; i_++) enq(&q, &val); } while (0)

#ifndef LF_FIFO_ROWS_AFTER_SPSC_PAIR
#define LF_FIFO_ROWS_AFTER_SPSC_PAIR() ((void)0)
#endif
#ifndef LF_FIFO_ROWS_AFTER_SPSC_BATCH
#define LF_FIFO_ROWS_AFTER_SPSC_BATCH() ((void)0)
#endif
#ifndef LF_FIFO_ROWS_AFTER_SPSC_ENDS
#define LF_FIFO_ROWS_AFTER_SPSC_ENDS() ((void)0)
#endif

/* One pair row in a noinline function of its own (see the top of the file). */
#define LF_FIFO_PAIR_FN(fn, name, detail, SETUP, BODY)                               \
	static __attribute__((noinline)) void fn(void)                               \
	{                                                                             \
		ROW(name, detail, SETUP, BODY);                                       \
	}

/* The unsynchronized pair under the program's lock: each operation takes it once. */
#define LF_FIFO_LOCKED_PAIR_FN(id, tag, what, LOCK, UNLOCK)                          \
	LF_FIFO_PAIR_FN(lf_fifo_rows_locked_##id, "mp_fifo_enq_deq_" tag,                                   \
			"__lf_fifo_enqueue_spsc, __lf_fifo_dequeue_spsc, each under " what, \
			DRAIN(__lf_fifo_dequeue_spsc, q_spsc),                        \
			{ LOCK; __lf_fifo_enqueue_spsc(&q_spsc, &val); UNLOCK;        \
			  LOCK; __lf_fifo_dequeue_spsc(&q_spsc, &sink); UNLOCK; })

#ifdef LF_FIFO_LOCKS
LF_FIFO_LOCKS(LF_FIFO_LOCKED_PAIR_FN)
#define LF_FIFO__CALL_LOCKED(id, ...) lf_fifo_rows_locked_##id();
#endif

LF_FIFO_PAIR_FN(lf_fifo_rows_nosync_pair, "mp_fifo_enq_deq_nosync",
		"__lf_fifo_enqueue_spsc + __lf_fifo_dequeue_spsc",
		DRAIN(__lf_fifo_dequeue_spsc, q_spsc),
		{ __lf_fifo_enqueue_spsc(&q_spsc, &val); __lf_fifo_dequeue_spsc(&q_spsc, &sink); })

LF_FIFO_PAIR_FN(lf_fifo_rows_spsc_pair, "mp_fifo_spsc_enq_deq_lf",
		"lf_fifo_enqueue_spsc + lf_fifo_dequeue_spsc (no locked instruction)",
		DRAIN(lf_fifo_dequeue_spsc, q_spsc),
		{ lf_fifo_enqueue_spsc(&q_spsc, &val); lf_fifo_dequeue_spsc(&q_spsc, &sink); })

/* The spsc pair through ends: each side's index in a local of the loop's own function,
 * as a caller's loop would keep it (in registers: no store-to-load chain through the
 * queue's index words); a noinline function of its own like the pairs above. */
static __attribute__((noinline)) void lf_fifo_rows_ends(void)
{
	struct lf_fifo_spsc_producer pe;
	struct lf_fifo_spsc_consumer ce;

	ROW("mp_fifo_spsc_ends_put_get_lf", "lf_fifo_put_spsc + lf_fifo_get_spsc through open "
	    "ends (index in the caller's variable; one element, one publication each)",
	    { DRAIN(lf_fifo_dequeue_spsc, q_spsc); lf_fifo_open_producer_spsc(&q_spsc, &pe);
	      lf_fifo_open_consumer_spsc(&q_spsc, &ce); },
	    { lf_fifo_put_spsc(&pe, &val); lf_fifo_get_spsc(&ce, &sink); });
	lf_fifo_close_producer_spsc(&pe);
	lf_fifo_close_consumer_spsc(&ce);
}

static bool lf_fifo_rows(void)
{
	unsigned long r0;
	bool ok;

	init_all();
	/* -- the floor: one index through memory ------------------------------------------ */
	ROW("ref_index_chain", "load, add 1, store of one 64-bit word (store-to-load chain)",
	    (void)0, {
		    uint64_t v_ = ksync_load_relaxed_u64(&chain_word);

		    ksync_store_release_u64(&chain_word, v_ + 1);
	    });

	/* -- no synchronization ------------------------------------------------------- */
	lf_fifo_rows_nosync_pair();
	ROW("mp_fifo_enq_nosync", "__lf_fifo_enqueue_spsc into an empty queue",
	    DRAIN(__lf_fifo_dequeue_spsc, q_spsc), __lf_fifo_enqueue_spsc(&q_spsc, &val));
	ROW("mp_fifo_deq_nosync", "__lf_fifo_dequeue_spsc from a filled queue",
	    FILL(__lf_fifo_enqueue_spsc, __lf_fifo_dequeue_spsc, q_spsc),
	    __lf_fifo_dequeue_spsc(&q_spsc, &sink));

	/* -- lock-free / wait-free, no interference ------------------------------------ */
	lf_fifo_rows_spsc_pair();
	LF_FIFO_ROWS_AFTER_SPSC_PAIR();
	/* the batch API (issue 13 item 2): 32 elements per index publication, per element */
	ROW_PER("mp_fifo_spsc_burst32_enq_deq_lf", "lf_fifo_enqueue_burst_spsc + "
		"lf_fifo_dequeue_burst_spsc of 32 elements, per element", SPSC_BATCH,
		DRAIN(lf_fifo_dequeue_spsc, q_spsc),
		{ lf_fifo_enqueue_burst_spsc(&q_spsc, bvals, SPSC_BATCH, &bdone);
		  lf_fifo_dequeue_burst_spsc(&q_spsc, bsink, SPSC_BATCH, &bdone); });
	LF_FIFO_ROWS_AFTER_SPSC_BATCH();
	lf_fifo_rows_ends();
	LF_FIFO_ROWS_AFTER_SPSC_ENDS();
#ifdef LF_FIFO_LOCKS
	LF_FIFO_LOCKS(LF_FIFO__CALL_LOCKED)	/* the unsynchronized pair under locks */
#endif
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
	ok = retries - r0 == 2ul * BATCHES * OPS * 6;

	/* -- byte stream ------------------------------------------------------------------ */
	ROW("mp_bytes_write_read_1_lf", "lf_bytes_write_spsc + lf_bytes_read_spsc of 1 byte", (void)0,
	    { lf_bytes_write_spsc(&q_bytes, bbuf_in, 1); lf_bytes_read_spsc(&q_bytes, bbuf_out, 1); });
	ROW("mp_bytes_write_read_64_lf", "lf_bytes_write_spsc + lf_bytes_read_spsc of 64 bytes", (void)0,
	    { lf_bytes_write_spsc(&q_bytes, bbuf_in, 64); lf_bytes_read_spsc(&q_bytes, bbuf_out, 64); });
	ROW("mp_bytes_write_read_256_lf", "lf_bytes_write_spsc + lf_bytes_read_spsc of 256 bytes", (void)0,
	    { lf_bytes_write_spsc(&q_bytes, bbuf_in, 256); lf_bytes_read_spsc(&q_bytes, bbuf_out, 256); });

	return ok;
}

#endif /* KSYNC_BENCH_LF_FIFO_ROWS_H */
