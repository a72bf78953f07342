/*
 * kstat.c - sample statistics for the interrupt experiments (kstat.h).
 */
#include "kernel.h"
#include "kstat.h"

void kstat_reset(struct kstat *k)
{
	memset(k, 0, sizeof *k);
	k->min = UINT64_MAX;
}

void kstat_add(struct kstat *k, uint64_t v)
{
	k->n++;
	k->sum += v;
	k->sumsq += (unsigned __int128)v * v;
	if (v < k->min)
		k->min = v;
	if (v > k->max)
		k->max = v;
	unsigned b = v ? 63 - (unsigned)__builtin_clzll(v) : 0;
	k->hist[b < KSTAT_BINS ? b : KSTAT_BINS - 1]++;
	if (k->nsamples < KSTAT_SAMPLES)
		k->samples[k->nsamples++] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

uint64_t kstat_mean(const struct kstat *k) { return k->n ? k->sum / k->n : 0; }

uint64_t isqrt64(uint64_t v)
{
	if (v < 2)
		return v;
	uint64_t x = (uint64_t)1 << ((64 - (unsigned)__builtin_clzll(v)) / 2 + 1);	/* >= sqrt(v) */
	for (;;) {			/* Newton from above */
		uint64_t y = (x + v / x) / 2;
		if (y >= x)
			return x;
		x = y;
	}
}

/* 128 / 64 bit division (no libgcc in the kernel), by binary long division: portable C,
 * off every fast path. The caller guarantees the quotient fits in 64 bits. */
static uint64_t div128(unsigned __int128 a, uint64_t d)
{
	unsigned __int128 r = 0;
	uint64_t q = 0;
	for (int i = 127; i >= 0; i--) {
		r = (r << 1) | (uint64_t)((a >> i) & 1);
		if (r >= d) {
			r -= d;
			if (i < 64)
				q |= 1ull << i;
		}
	}
	return q;
}

/* Population standard deviation: sqrt(E[v^2] - mean^2); E[v^2] <= max^2 fits 64 bits
 * for values below 2^32 ticks. */
uint64_t kstat_std(const struct kstat *k)
{
	if (k->n < 2 || k->max > UINT32_MAX)
		return 0;
	uint64_t ev2 = div128(k->sumsq, k->n);
	uint64_t mean = k->sum / k->n;
	uint64_t m2 = mean * mean;
	return ev2 > m2 ? isqrt64(ev2 - m2) : 0;
}

static void sort32(uint32_t *a, uint32_t n)
{
	/* shell sort: small, in place, fine for 4096 values */
	for (uint32_t gap = n / 2; gap; gap /= 2)
		for (uint32_t i = gap; i < n; i++) {
			uint32_t v = a[i], j = i;
			for (; j >= gap && a[j - gap] > v; j -= gap)
				a[j] = a[j - gap];
			a[j] = v;
		}
}

uint64_t kstat_median(struct kstat *k)
{
	if (!k->nsamples)
		return 0;
	sort32(k->samples, k->nsamples);
	return k->samples[k->nsamples / 2];
}

#define PUT(...) do { if (*pos < n) *pos += (size_t)ksnprintf(buf + *pos, n - *pos, __VA_ARGS__); } while (0)

void kstat_json_hist(const struct kstat *k, char *buf, size_t n, size_t *pos)
{
	unsigned last = 0;
	for (unsigned i = 0; i < KSTAT_BINS; i++)
		if (k->hist[i])
			last = i;
	PUT("\"hist_edges\":[");
	for (unsigned i = 0; i <= last + 1; i++)
		PUT("%s%lu", i ? "," : "", i ? (uint64_t)1 << i : (uint64_t)0);
	PUT("],\"hist\":[");
	for (unsigned i = 0; i <= last; i++)
		PUT("%s%u", i ? "," : "", k->hist[i]);
	PUT("]");
}

void kstat_json(struct kstat *k, const char *name, bool hist, char *buf, size_t n, size_t *pos)
{
	PUT("\"%s\":{\"n\":%lu,\"min\":%lu,\"mean\":%lu,\"median\":%lu,\"max\":%lu,\"std\":%lu",
	    name, k->n, k->n ? k->min : 0, kstat_mean(k), kstat_median(k), k->max, kstat_std(k));
	if (hist) {
		PUT(",");
		kstat_json_hist(k, buf, n, pos);
	}
	PUT("}");
}
