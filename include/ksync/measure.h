/*
 * measure.h - the shared primitive-cost method (docs/protocol.md section 4), used by the
 * kernel's `prims` experiment and the hosted bench/prims: time batches of one operation
 * with serialized TSC reads, subtract an empty loop of the same shape, reduce to
 * min / median / p99 / max per operation and print one `KSYNC {"kind":"prim",...}` line.
 * Integer only (no floating point in the kernel); per-op figures are fixed point with
 * two decimals.
 *
 *   uint64_t t[200], e[200];
 *   KSYNC_MEASURE(e, 200, 256, (void)0);                          // empty loop
 *   KSYNC_MEASURE(t, 200, 256, __asm__ __volatile__("mfence"));
 *   ksync_prim_emit("mfence", "user mode", t, 200, 256, e, 200);
 */
#ifndef KSYNC_MEASURE_H
#define KSYNC_MEASURE_H

#include <stddef.h>
#include <stdint.h>

#include <ksync/platform.h>

/* Default shape of a primitive-cost run (protocol.md section 4). */
#define KSYNC_PRIM_BATCHES 200
#define KSYNC_PRIM_OPS_PER_BATCH 256

/*
 * Order statistics of n samples, nearest-rank method on the ascending order a[0..n):
 *   min    = a[0]
 *   median = a[ceil(n/2) - 1]      = a[(n - 1) / 2]   (the lower median when n is even)
 *   p99    = a[ceil(99n/100) - 1]  = a[(99n + 99) / 100 - 1]
 *   max    = a[n - 1]
 * e.g. n = 200: median = a[99], p99 = a[197];  n = 100: a[49], a[98];  n = 1: all a[0].
 * n = 0 gives all zeros.
 */
struct ksync_stats {
	uint64_t min, median, p99, max;
};

/* Sort a[0..n) ascending, in place (heapsort: O(n log n), no recursion, no libc). */
void ksync_sort_u64(uint64_t *a, size_t n);

/* Sort samples[0..n) in place and return their statistics as above. */
struct ksync_stats ksync_stats_compute(uint64_t *samples, size_t n);

/*
 * KSYNC_MEASURE(ticks, nbatches, ops_per_batch, BODY...): time `nbatches` batches of
 * `ops_per_batch` executions of BODY (a statement or a { block }, usually inline asm;
 * variadic so that commas in it need no parentheses) and store each batch's TSC ticks in ticks[0..nbatches).  Each batch is
 * bracketed by ksync_cycles_begin() (lfence; rdtsc; lfence) and ksync_cycles_end()
 * (rdtscp; lfence).  The loop counter passes through an empty asm each iteration so the
 * compiler can neither delete nor unroll the loop: the empty loop (BODY = (void)0) has
 * exactly the shape of the measured one, and its cost is what ksync_prim_emit subtracts.
 */
#define KSYNC_MEASURE(ticks, nbatches, ops_per_batch, ...)                            \
	do {                                                                          \
		size_t ksync_nb_ = (size_t)(nbatches);                                \
		uint64_t ksync_ops_ = (uint64_t)(ops_per_batch);                      \
		for (size_t ksync_b_ = 0; ksync_b_ < ksync_nb_; ksync_b_++) {         \
			uint64_t ksync_t0_ = ksync_cycles_begin();                    \
			for (uint64_t ksync_i_ = 0; ksync_i_ < ksync_ops_; ksync_i_++) { \
				__VA_ARGS__;                                          \
				__asm__ __volatile__("" : "+r"(ksync_i_) : : "memory"); \
			}                                                             \
			(ticks)[ksync_b_] = ksync_cycles_end() - ksync_t0_;           \
		}                                                                     \
	} while (0)

/* One reduced row, figures in hundredths of a TSC tick per operation. */
struct ksync_prim_result {
	uint64_t batches, ops_per_batch;
	uint64_t min_x100, median_x100, p99_x100, max_x100;
	uint64_t empty_x100;	/* empty loop's median per iteration */
};

/*
 * Reduce a measurement: E = median of empty_ticks[0..nempty) (a per-batch figure);
 * each batch's net = max(batch - E, 0); the stats of the nets divided by ops_per_batch,
 * rounded half up to hundredths.  Sorts both arrays in place.  ops_per_batch 0 is
 * treated as 1.
 */
struct ksync_prim_result ksync_prim_compute(uint64_t *batch_ticks, size_t nbatches,
					    uint64_t ops_per_batch, uint64_t *empty_ticks,
					    size_t nempty);

/*
 * Format a row as the protocol line without the trailing newline:
 *   KSYNC {"kind":"prim","name":"…","detail":"…","unit":"tsc_ticks","batches":200,
 *          "ops_per_batch":256,"min":1.23,"median":1.50,"p99":2.00,"max":9.00,"empty":0.52}
 * name and detail are JSON-escaped and cut to at most 96 output bytes each.  Writes at
 * most cap bytes including the NUL (cap >= KSYNC_PRIM_LINE_MAX never truncates) and
 * returns the length written.
 */
#define KSYNC_PRIM_LINE_MAX 512
size_t ksync_prim_format(char *buf, size_t cap, const char *name, const char *detail,
			 const struct ksync_prim_result *r);

/* ksync_prim_compute + ksync_prim_format, then one ksync_printf of the line + "\n". */
void ksync_prim_emit(const char *name, const char *detail, uint64_t *batch_ticks,
		     size_t nbatches, uint64_t ops_per_batch, uint64_t *empty_ticks,
		     size_t nempty);

/* Write x100 / 100 with exactly two decimals ("0.05", "12.50", "1234.00") into buf
 * (cap bytes including the NUL; 24 always suffices); returns the length. */
size_t ksync_fixed2_format(char *buf, size_t cap, uint64_t x100);

#endif /* KSYNC_MEASURE_H */
