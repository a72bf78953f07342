/*
 * test_measure.c - hosted tests of include/ksync/measure.h: the heapsort, the
 * nearest-rank statistics (median = a[(n-1)/2], p99 = a[(99n+99)/100 - 1]), the
 * fixed-point formatting, the reduction of batch/empty ticks, the exact KSYNC prim line
 * (captured through the hosted print sink) and the KSYNC_MEASURE loop.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ksync/ktest.h>
#include <ksync/measure.h>
#include <ksync/platform.h>

static uint64_t lcg_state = 12345;

static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
	return lcg_state >> 17;
}

/* Fill a[0..n) with 1..n in a pseudo-random order (Fisher-Yates). */
static void shuffled_range(uint64_t *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		a[i] = i + 1;
	for (size_t i = n; i > 1; i--) {
		size_t j = (size_t)(lcg() % i);
		uint64_t t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

KTEST(measure_sort)
{
	static uint64_t a[3000];
	static const size_t sizes[] = { 0, 1, 2, 3, 7, 64, 255, 256, 1000, 3000 };

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		uint64_t sum = 0, sum2 = 0;

		for (size_t i = 0; i < n; i++) {
			a[i] = lcg() % 50;	/* many duplicates */
			sum += a[i];
			sum2 += a[i] * a[i];
		}
		ksync_sort_u64(a, n);
		for (size_t i = 1; i < n; i++)
			KT_ASSERT(a[i - 1] <= a[i]);
		for (size_t i = 0; i < n; i++) {
			sum -= a[i];
			sum2 -= a[i] * a[i];
		}
		KT_EXPECT_EQ(sum, 0);	/* same multiset (checksums) */
		KT_EXPECT_EQ(sum2, 0);
	}

	/* extremes and already-sorted / reverse-sorted input */
	a[0] = UINT64_MAX;
	a[1] = 0;
	a[2] = UINT64_MAX - 1;
	ksync_sort_u64(a, 3);
	KT_EXPECT(a[0] == 0 && a[1] == UINT64_MAX - 1 && a[2] == UINT64_MAX);
	for (size_t i = 0; i < 100; i++)
		a[i] = 100 - i;
	ksync_sort_u64(a, 100);
	for (size_t i = 0; i < 100; i++)
		KT_ASSERT_EQ(a[i], i + 1);
	ksync_sort_u64(a, 100);
	for (size_t i = 0; i < 100; i++)
		KT_ASSERT_EQ(a[i], i + 1);
}

KTEST(measure_stats_known)
{
	static uint64_t a[200];
	struct ksync_stats s;

	s = ksync_stats_compute(a, 0);
	KT_EXPECT(s.min == 0 && s.median == 0 && s.p99 == 0 && s.max == 0);

	a[0] = 42;
	s = ksync_stats_compute(a, 1);
	KT_EXPECT(s.min == 42 && s.median == 42 && s.p99 == 42 && s.max == 42);

	/* n = 2: lower median, p99 = a[1] */
	a[0] = 9;
	a[1] = 3;
	s = ksync_stats_compute(a, 2);
	KT_EXPECT_EQ(s.min, 3);
	KT_EXPECT_EQ(s.median, 3);
	KT_EXPECT_EQ(s.p99, 9);
	KT_EXPECT_EQ(s.max, 9);

	/* n = 5 (odd): the middle one */
	a[0] = 50; a[1] = 10; a[2] = 40; a[3] = 20; a[4] = 30;
	s = ksync_stats_compute(a, 5);
	KT_EXPECT_EQ(s.median, 30);
	KT_EXPECT_EQ(s.p99, 50);

	/* n = 100, values 1..100: median = a[49] = 50, p99 = a[98] = 99 */
	shuffled_range(a, 100);
	s = ksync_stats_compute(a, 100);
	KT_EXPECT_EQ(s.min, 1);
	KT_EXPECT_EQ(s.median, 50);
	KT_EXPECT_EQ(s.p99, 99);
	KT_EXPECT_EQ(s.max, 100);

	/* n = 200, values 1..200: median = a[99] = 100, p99 = a[197] = 198 */
	shuffled_range(a, 200);
	s = ksync_stats_compute(a, 200);
	KT_EXPECT_EQ(s.min, 1);
	KT_EXPECT_EQ(s.median, 100);
	KT_EXPECT_EQ(s.p99, 198);
	KT_EXPECT_EQ(s.max, 200);

	/* n = 101: median = a[50] = 51, p99 = a[ceil(99.99) - 1] = a[99] = 100 */
	shuffled_range(a, 101);
	s = ksync_stats_compute(a, 101);
	KT_EXPECT_EQ(s.median, 51);
	KT_EXPECT_EQ(s.p99, 100);

	/* one outlier in 200 does not move p99; three do */
	for (size_t i = 0; i < 200; i++)
		a[i] = 10;
	a[17] = 1000000;
	s = ksync_stats_compute(a, 200);
	KT_EXPECT_EQ(s.p99, 10);
	KT_EXPECT_EQ(s.max, 1000000);
	a[0] = a[1] = 1000000;
	s = ksync_stats_compute(a, 200);
	KT_EXPECT_EQ(s.p99, 1000000);
}

static int fixed2_is(uint64_t x100, const char *want)
{
	char buf[24];
	size_t n = ksync_fixed2_format(buf, sizeof(buf), x100);

	return n == strlen(want) && strcmp(buf, want) == 0;
}

KTEST(measure_fixed2)
{
	char small[4];

	KT_EXPECT(fixed2_is(0, "0.00"));
	KT_EXPECT(fixed2_is(5, "0.05"));
	KT_EXPECT(fixed2_is(10, "0.10"));
	KT_EXPECT(fixed2_is(99, "0.99"));
	KT_EXPECT(fixed2_is(100, "1.00"));
	KT_EXPECT(fixed2_is(150, "1.50"));
	KT_EXPECT(fixed2_is(123456, "1234.56"));
	KT_EXPECT(fixed2_is(UINT64_MAX, "184467440737095516.15"));
	/* truncates safely and stays NUL-terminated */
	KT_EXPECT_EQ(ksync_fixed2_format(small, sizeof(small), 123456), 3);
	KT_EXPECT(strcmp(small, "123") == 0);
	KT_EXPECT_EQ(ksync_fixed2_format(small, 0, 1), 0);
}

KTEST(measure_prim_compute)
{
	static uint64_t batch[200], empty[200];
	struct ksync_prim_result r;

	/* empty loop: 100..299 ticks (median a[99] = 199), per iteration 199/256 = 0.78 */
	for (size_t i = 0; i < 200; i++)
		empty[i] = 299 - i;
	/* batches: empty median + k * 256 for k = 1..200 in scrambled order */
	shuffled_range(batch, 200);
	for (size_t i = 0; i < 200; i++)
		batch[i] = 199 + batch[i] * 256;
	r = ksync_prim_compute(batch, 200, 256, empty, 200);
	KT_EXPECT_EQ(r.batches, 200);
	KT_EXPECT_EQ(r.ops_per_batch, 256);
	KT_EXPECT_EQ(r.min_x100, 100);
	KT_EXPECT_EQ(r.median_x100, 10000);
	KT_EXPECT_EQ(r.p99_x100, 19800);
	KT_EXPECT_EQ(r.max_x100, 20000);
	KT_EXPECT_EQ(r.empty_x100, 78);		/* 19900 / 256 = 77.7 -> 78 */

	/* clamping at 0 and rounding half up: nets -5, 0, 1, 2, 128 ticks over 256 ops */
	for (size_t i = 0; i < 5; i++)
		empty[i] = 1000;
	batch[0] = 995;
	batch[1] = 1000;
	batch[2] = 1001;	/* 100/256 = 0.39 -> 0 */
	batch[3] = 1002;	/* 200/256 = 0.78 -> 1 */
	batch[4] = 1128;	/* 12800/256 = 50 */
	r = ksync_prim_compute(batch, 5, 256, empty, 5);
	KT_EXPECT_EQ(r.min_x100, 0);
	KT_EXPECT_EQ(r.median_x100, 0);	/* a[2] of {0,0,1,2,128} = 1 tick -> 0.00 */
	KT_EXPECT_EQ(r.p99_x100, 50);
	KT_EXPECT_EQ(r.max_x100, 50);
	KT_EXPECT_EQ(r.empty_x100, 391);	/* 100000 / 256 = 390.6 -> 391 */

	/* ops_per_batch 0 is treated as 1; no empty samples subtract nothing */
	batch[0] = 7;
	r = ksync_prim_compute(batch, 1, 0, empty, 0);
	KT_EXPECT_EQ(r.median_x100, 700);
	KT_EXPECT_EQ(r.empty_x100, 0);
}

/* ---- emitted line, captured ------------------------------------------------------ */

static char captured[4096];
static size_t captured_len;

static void capture_sink(const char *text, size_t len, void *arg)
{
	(void)arg;
	if (captured_len + len >= sizeof(captured))
		len = sizeof(captured) - 1 - captured_len;
	memcpy(captured + captured_len, text, len);
	captured_len += len;
	captured[captured_len] = '\0';
}

static void capture_begin(void)
{
	captured_len = 0;
	captured[0] = '\0';
	ksync_hosted_set_print_sink(capture_sink, NULL);
}

static void capture_end(void)
{
	ksync_hosted_set_print_sink(NULL, NULL);
}

KTEST(measure_prim_emit_line)
{
	static uint64_t batch[4] = { 1000 + 384, 1000 + 256, 1000 + 2560, 1000 + 320 };
	static uint64_t empty[3] = { 1000, 990, 1100 };

	/* E = 1000; nets {384, 256, 2560, 320} / 256 -> {1.50, 1.00, 10.00, 1.25};
	 * sorted {1.00, 1.25, 1.50, 10.00}: median a[1], p99 a[3] */
	capture_begin();
	ksync_prim_emit("lock_cmpxchg", "uncontended, succeeds", batch, 4, 256, empty, 3);
	capture_end();
	KT_EXPECT(strcmp(captured,
			 "KSYNC {\"kind\":\"prim\",\"name\":\"lock_cmpxchg\","
			 "\"detail\":\"uncontended, succeeds\",\"unit\":\"tsc_ticks\","
			 "\"batches\":4,\"ops_per_batch\":256,\"min\":1.00,\"median\":1.25,"
			 "\"p99\":10.00,\"max\":10.00,\"empty\":3.91}\n") == 0);
	if (strchr(captured, '\n') != captured + captured_len - 1)
		KT_EXPECT(0);	/* exactly one line */
	kt_diag(kt, "%.*s", (int)captured_len - 1, captured);
}

KTEST(measure_prim_format_escapes)
{
	static char line[KSYNC_PRIM_LINE_MAX];
	static char longname[300];
	struct ksync_prim_result r = { 200, 256, 1, 2, 3, 4, 5 };
	const char *d;
	size_t n;

	n = ksync_prim_format(line, sizeof(line), "q\"b\\s", "a\nb\tc", &r);
	KT_EXPECT_EQ(n, strlen(line));
	KT_EXPECT(strstr(line, "\"name\":\"q\\\"b\\\\s\"") != NULL);
	KT_EXPECT(strstr(line, "\"detail\":\"a\\u000ab\\u0009c\"") != NULL);
	KT_EXPECT(strstr(line, "\"min\":0.01,\"median\":0.02,\"p99\":0.03,\"max\":0.04,"
			       "\"empty\":0.05}") != NULL);

	/* long strings are cut to 96 bytes, the line stays well-formed */
	memset(longname, 'x', sizeof(longname) - 1);
	n = ksync_prim_format(line, sizeof(line), longname, longname, &r);
	KT_EXPECT(n < sizeof(line));
	KT_EXPECT(line[n - 1] == '}');
	d = strstr(line, "\"detail\":\"");
	KT_ASSERT(d != NULL);
	d += strlen("\"detail\":\"");
	KT_EXPECT(strspn(d, "x") == 96);
	KT_EXPECT(d[96] == '"');
	/* an escape is never split: 95 x's then a quote that needs 2 bytes */
	memset(longname, 'x', 95);
	longname[95] = '"';
	longname[96] = '\0';
	n = ksync_prim_format(line, sizeof(line), "n", longname, &r);
	KT_EXPECT(strstr(line, "xxx\",\"unit\"") != NULL);
	/* tiny buffers: truncated but terminated */
	KT_EXPECT_EQ(ksync_prim_format(line, 6, "n", "d", &r), 5);
	KT_EXPECT(strcmp(line, "KSYNC") == 0);
}

/* ---- the measuring loop ---------------------------------------------------------- */

KTEST(measure_loop_runs_body)
{
	static uint64_t t[50], e[50];
	volatile uint64_t count = 0;
	struct ksync_prim_result r;

	KSYNC_MEASURE(t, 50, 100, count = count + 1);
	KT_EXPECT_EQ(count, 5000);
	KSYNC_MEASURE(e, 50, 100, (void)0);
	for (size_t i = 0; i < 50; i++)
		KT_EXPECT(t[i] > 0 && e[i] > 0);
	r = ksync_prim_compute(t, 50, 100, e, 50);
	kt_diag(kt, "volatile increment: median %llu.%02llu ticks/op, empty %llu.%02llu",
		(unsigned long long)(r.median_x100 / 100),
		(unsigned long long)(r.median_x100 % 100),
		(unsigned long long)(r.empty_x100 / 100),
		(unsigned long long)(r.empty_x100 % 100));
}
