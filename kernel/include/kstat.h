/*
 * kstat.h - a sample statistic for the interrupt experiments: count, sum, sum of squares,
 * min, max, a log2 histogram and the first KSTAT_SAMPLES values (for an exact median of
 * those). Integer only (the kernel has no floating point). Not synchronised: one writer
 * (the CPU that owns the statistic), read after the writer has stopped.
 */
#ifndef KSYNC_KSTAT_H
#define KSYNC_KSTAT_H

#include <stdint.h>

#define KSTAT_SAMPLES 4096
#define KSTAT_BINS 40		/* bin i: values in [2^i, 2^(i+1)); bin 0 also holds 0 */

struct kstat {
	uint64_t n, sum, min, max;
	unsigned __int128 sumsq;
	uint32_t nsamples;
	uint32_t hist[KSTAT_BINS];
	uint32_t samples[KSTAT_SAMPLES];
};

void kstat_reset(struct kstat *k);
void kstat_add(struct kstat *k, uint64_t v);
uint64_t kstat_mean(const struct kstat *k);
uint64_t kstat_std(const struct kstat *k);
uint64_t kstat_median(struct kstat *k);	/* sorts the kept samples in place */
/* Append  "name":{"n":..,"min":..,"mean":..,"median":..,"max":..,"std":..[,"hist_edges":[..],"hist":[..]]}
 * to buf at *pos (bounded by n). */
void kstat_json(struct kstat *k, const char *name, bool hist, char *buf, size_t n, size_t *pos);
/* Append only  "hist_edges":[..],"hist":[..]  (hist[i] counts edges[i] <= v < edges[i+1]). */
void kstat_json_hist(const struct kstat *k, char *buf, size_t n, size_t *pos);
uint64_t isqrt64(uint64_t v);

#endif
