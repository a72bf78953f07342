/*
 * ktest.c - the KTAP v1 test runner behind include/ksync/ktest.h: walks the
 * "ksync_tests" linker section, filters cases by name, runs them one at a time and
 * prints "ktap: "-prefixed KTAP through ksync_printf.  Freestanding; single-threaded
 * (the caller runs it on one CPU/thread).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <ksync/ktest.h>
#include <ksync/platform.h>

/*
 * Bounds of the "ksync_tests" section, defined by the linker (or the kernel's linker
 * script).  Weak, so that a program with no test cases links and runs zero cases.
 */
extern const struct ktest_case __start_ksync_tests[] __attribute__((weak));
extern const struct ktest_case __stop_ksync_tests[] __attribute__((weak));

void ktest_fail_(struct ktest_ctx *kt, const char *file, int line, const char *expr)
{
	kt->failures++;
	ksync_printf("ktap: # %s:%d: assertion failed: %s\n", file, line, expr);
}

void ktest_fail_eq_(struct ktest_ctx *kt, const char *file, int line, const char *a_expr,
		    const char *b_expr, long long a, long long b)
{
	kt->failures++;
	ksync_printf("ktap: # %s:%d: assertion failed: %s == %s\n", file, line, a_expr,
		     b_expr);
	ksync_printf("ktap: #   %s = %lld (0x%llx)\n", a_expr, a, (unsigned long long)a);
	ksync_printf("ktap: #   %s = %lld (0x%llx)\n", b_expr, b, (unsigned long long)b);
}

void kt_diag(struct ktest_ctx *kt, const char *fmt, ...)
{
	va_list ap;

	(void)kt;
	ksync_printf("ktap: # ");
	va_start(ap, fmt);
	ksync_vprintf(fmt, ap);
	va_end(ap);
	ksync_printf("\n");
}

/* Glob match of name[0..] against pat[0..plen): '*' matches any run of characters,
 * every other character matches itself.  Iterative with one backtrack point. */
static bool glob_match(const char *pat, size_t plen, const char *name)
{
	size_t p = 0, star = (size_t)-1;
	const char *mark = name;

	while (*name) {
		if (p < plen && pat[p] == '*') {
			star = p++;
			mark = name;
		} else if (p < plen && pat[p] == *name) {
			p++;
			name++;
		} else if (star != (size_t)-1) {
			p = star + 1;
			name = ++mark;
		} else {
			return false;
		}
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}

bool ktest_filter_match(const char *filter, const char *name)
{
	const char *s;

	if (!filter || !*filter)
		return true;
	for (s = filter;;) {
		const char *e = s;

		while (*e && *e != ',')
			e++;
		if (e > s && glob_match(s, (size_t)(e - s), name))
			return true;
		if (!*e)
			return false;
		s = e + 1;
	}
}

static int str_cmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (int)(unsigned char)*a - (int)(unsigned char)*b;
}

/* Run order: by (file, line, index).  Returns <0, 0, >0. */
static int case_cmp(const struct ktest_case *cases, size_t i, size_t j)
{
	int c = str_cmp(cases[i].file, cases[j].file);

	if (c)
		return c;
	if (cases[i].line != cases[j].line)
		return cases[i].line < cases[j].line ? -1 : 1;
	return i < j ? -1 : (i > j ? 1 : 0);
}

int ktest_run_cases(const struct ktest_case *cases, size_t n, const char *filter)
{
	size_t i, planned = 0, prev = (size_t)-1;
	int number = 0, failed = 0;

	for (i = 0; i < n; i++)
		if (ktest_filter_match(filter, cases[i].name))
			planned++;

	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..%zu\n", planned);

	/* Selection in (file, line) order without moving the (read-only) cases: each round
	 * picks the smallest matching case greater than the previous one.  O(n^2), n is
	 * at most a few hundred. */
	for (size_t round = 0; round < planned; round++) {
		size_t next = (size_t)-1;
		struct ktest_ctx ctx;

		for (i = 0; i < n; i++) {
			if (!ktest_filter_match(filter, cases[i].name))
				continue;
			if (prev != (size_t)-1 && case_cmp(cases, i, prev) <= 0)
				continue;
			if (next == (size_t)-1 || case_cmp(cases, i, next) < 0)
				next = i;
		}
		if (next == (size_t)-1)
			break;
		prev = next;
		number++;

		ctx.failures = 0;
		ctx.skip_reason = NULL;
		cases[next].fn(&ctx);

		if (ctx.failures) {
			failed++;
			ksync_printf("ktap: not ok %d %s\n", number, cases[next].name);
		} else if (ctx.skip_reason) {
			ksync_printf("ktap: ok %d %s # SKIP %s\n", number, cases[next].name,
				     ctx.skip_reason);
		} else {
			ksync_printf("ktap: ok %d %s\n", number, cases[next].name);
		}
	}
	return failed;
}

int ktest_run_all(const char *filter)
{
	const struct ktest_case *start = __start_ksync_tests, *stop = __stop_ksync_tests;
	size_t n = 0;

	if (start && stop && stop > start)
		n = (size_t)(stop - start);
	return ktest_run_cases(start, n, filter);
}
