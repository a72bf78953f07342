/*
 * test_ktest.c - hosted tests of the KTAP runner itself (include/ksync/ktest.h): the
 * name filter, and the exact KTAP document that ktest_run_cases prints for a fixed set
 * of cases that pass, fail (EXPECT continues, ASSERT returns), skip and compare
 * values; output captured through the hosted print sink.
 */
#include <stddef.h>
#include <string.h>

#include <ksync/ktest.h>
#include <ksync/platform.h>

KTEST(ktest_filter)
{
	KT_EXPECT(ktest_filter_match(NULL, "anything"));
	KT_EXPECT(ktest_filter_match("", "anything"));
	KT_EXPECT(ktest_filter_match("abc", "abc"));
	KT_EXPECT(!ktest_filter_match("abc", "abcd"));
	KT_EXPECT(!ktest_filter_match("abcd", "abc"));
	KT_EXPECT(ktest_filter_match("*", "abc"));
	KT_EXPECT(ktest_filter_match("*", ""));
	KT_EXPECT(ktest_filter_match("a*", "abc"));
	KT_EXPECT(ktest_filter_match("*c", "abc"));
	KT_EXPECT(ktest_filter_match("a*c", "abbbc"));
	KT_EXPECT(ktest_filter_match("a*b*c", "axxbyyc"));
	KT_EXPECT(!ktest_filter_match("a*b*c", "axxcyyb"));
	KT_EXPECT(ktest_filter_match("*aab", "aaab"));	/* needs backtracking */
	KT_EXPECT(ktest_filter_match("a**", "a"));
	KT_EXPECT(!ktest_filter_match("b*", "abc"));
	/* comma-separated alternatives; empty alternatives match nothing */
	KT_EXPECT(ktest_filter_match("x,abc", "abc"));
	KT_EXPECT(ktest_filter_match("x*,a*", "abc"));
	KT_EXPECT(!ktest_filter_match("x,y", "abc"));
	KT_EXPECT(!ktest_filter_match(",", "abc"));
	KT_EXPECT(ktest_filter_match("x,,atomic_*", "atomic_cas"));
}

/* ---- a nested run over fake cases ---------------------------------------------- */

static int fake_after_assert;	/* set if KT_ASSERT failed to return */
static int fake_after_expect;	/* set once KT_EXPECT continued */

static void fake_pass(struct ktest_ctx *kt)
{
	KT_EXPECT(1 + 1 == 2);
	KT_ASSERT_EQ(3, 3);
}

static void fake_expect(struct ktest_ctx *kt)
{
	KT_EXPECT(1 == 2);
	fake_after_expect = 1;
}

static void fake_assert(struct ktest_ctx *kt)
{
	KT_ASSERT(0 > 1);
	fake_after_assert = 1;
}

static void fake_eq(struct ktest_ctx *kt)
{
	long long v = -2;

	KT_EXPECT_EQ(v, 255);
}

static void fake_skip(struct ktest_ctx *kt)
{
	KT_SKIP("no hardware");
}

static void fake_diag(struct ktest_ctx *kt)
{
	kt_diag(kt, "value %d of %s", 7, "x");
}

/* Registered out of order: the runner sorts by (file, line). */
static const struct ktest_case fakes[] = {
	{ "fake_eq", fake_eq, "b.c", 10 },
	{ "fake_pass", fake_pass, "a.c", 5 },
	{ "fake_assert", fake_assert, "a.c", 30 },
	{ "fake_expect", fake_expect, "a.c", 20 },
	{ "fake_skip", fake_skip, "b.c", 2 },
	{ "fake_diag", fake_diag, "c.c", 1 },
};

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

static int run_fakes(const char *filter)
{
	int failed;

	captured_len = 0;
	captured[0] = '\0';
	ksync_hosted_set_print_sink(capture_sink, NULL);
	failed = ktest_run_cases(fakes, sizeof(fakes) / sizeof(fakes[0]), filter);
	ksync_hosted_set_print_sink(NULL, NULL);
	return failed;
}

/* Print the captured document as diagnostics, for a failing run's log. */
static void show(struct ktest_ctx *kt)
{
	const char *s = captured;

	while (*s) {
		const char *e = strchr(s, '\n');
		int n = e ? (int)(e - s) : (int)strlen(s);

		kt_diag(kt, "| %.*s", n, s);
		s += n + (e ? 1 : 0);
	}
}

KTEST(ktest_runner_output)
{
	static const char *const want =
		"ktap: KTAP version 1\n"
		"ktap: 1..6\n"
		"ktap: ok 1 fake_pass\n"
		"ktap: # test_ktest.c:FILE: assertion failed: 1 == 2\n"
		"ktap: not ok 2 fake_expect\n"
		"ktap: # test_ktest.c:FILE: assertion failed: 0 > 1\n"
		"ktap: not ok 3 fake_assert\n"
		"ktap: ok 4 fake_skip # SKIP no hardware\n"
		"ktap: # test_ktest.c:FILE: assertion failed: v == 255\n"
		"ktap: #   v = -2 (0xfffffffffffffffe)\n"
		"ktap: #   255 = 255 (0xff)\n"
		"ktap: not ok 5 fake_eq\n"
		"ktap: # value 7 of x\n"
		"ktap: ok 6 fake_diag\n";
	char normalized[4096];
	const char *s = captured, *w;
	size_t n = 0;
	int failed;

	fake_after_assert = fake_after_expect = 0;
	failed = run_fakes(NULL);
	KT_EXPECT_EQ(failed, 3);
	KT_EXPECT_EQ(fake_after_expect, 1);
	KT_EXPECT_EQ(fake_after_assert, 0);

	/* Replace "<path>test_ktest.c:<line>:" by "test_ktest.c:FILE:" so the comparison
	 * does not depend on the build directory or on line numbers. */
	while (*s && n < sizeof(normalized) - 1) {
		w = strstr(s, "ktap: # ");
		if (w == s && strstr(s, "test_ktest.c:") && strstr(s, "test_ktest.c:") <
		    strchr(s, '\n')) {
			const char *f = strstr(s, "test_ktest.c:") + strlen("test_ktest.c:");
			const char *tag = "ktap: # test_ktest.c:FILE";

			while (*tag && n < sizeof(normalized) - 1)
				normalized[n++] = *tag++;
			while (*f >= '0' && *f <= '9')
				f++;
			s = f;
		}
		while (*s && *s != '\n' && n < sizeof(normalized) - 1)
			normalized[n++] = *s++;
		if (*s == '\n' && n < sizeof(normalized) - 1)
			normalized[n++] = *s++;
	}
	normalized[n] = '\0';
	if (strcmp(normalized, want) != 0) {
		KT_EXPECT(strcmp(normalized, want) == 0);
		show(kt);
	}
}

KTEST(ktest_runner_filter)
{
	int failed = run_fakes("fake_p*,fake_skip,nothing");

	KT_EXPECT_EQ(failed, 0);
	if (strcmp(captured, "ktap: KTAP version 1\n"
			     "ktap: 1..2\n"
			     "ktap: ok 1 fake_pass\n"
			     "ktap: ok 2 fake_skip # SKIP no hardware\n") != 0) {
		KT_EXPECT(0);
		show(kt);
	}

	failed = run_fakes("none");
	KT_EXPECT_EQ(failed, 0);
	KT_EXPECT(strcmp(captured, "ktap: KTAP version 1\nktap: 1..0\n") == 0);
}
