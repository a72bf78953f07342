/* tsc.h - the timing helpers of the cost programs (sysbench.c, sigbench.c): a fenced TSC
 * read and a qsort comparator for doubles (their min / median / max). */
#ifndef KSYNC_USER_TSC_H
#define KSYNC_USER_TSC_H
static inline unsigned long long tsc(void)
{
	unsigned lo, hi;
	__asm__ volatile("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi));
	return ((unsigned long long)hi << 32) | lo;
}
static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
#endif
