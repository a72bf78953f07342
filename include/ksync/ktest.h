/*
 * ktest.h - the test registry and assertion macros shared by the kernel's in-kernel
 * tests and the hosted (Linux) test binaries.  Output is KTAP v1, every line prefixed
 * with "ktap: " and written through ksync_printf (docs/protocol.md section 1).
 *
 *   #include <ksync/ktest.h>
 *
 *   KTEST(stack_push_pop)
 *   {
 *           KT_ASSERT(s != NULL);            // fail and return from the test
 *           KT_EXPECT_EQ(pop(s), 42);        // fail and continue
 *           if (!have_x2apic)
 *                   KT_SKIP("no x2APIC");
 *           kt_diag(kt, "pushed %d", n);     // "ktap: # pushed 3"
 *   }
 *
 * KTEST(name) defines `static void ktest_fn_name(struct ktest_ctx *kt)` and registers a
 * `struct ktest_case` in the linker section "ksync_tests"; the body sees the context as
 * `kt`.  Helper functions that take a `struct ktest_ctx *kt` may use the macros too
 * (KT_ASSERT/KT_SKIP then return from the helper only, so they must return void).
 *
 * The runner walks the section between the linker-provided symbols __start_ksync_tests
 * and __stop_ksync_tests (GNU ld and lld define them for any section whose name is a C
 * identifier; a kernel linker script must KEEP(*(ksync_tests)) and define both).  Cases
 * run one at a time, on the calling thread, in order of (source file name, line).
 *
 * Output of ktest_run_all("") with three cases:
 *   ktap: KTAP version 1
 *   ktap: 1..3
 *   ktap: # test_x.c:12: assertion failed: a == b
 *   ktap: not ok 1 first
 *   ktap: ok 2 second
 *   ktap: ok 3 third # SKIP no x2APIC
 */
#ifndef KSYNC_KTEST_H
#define KSYNC_KTEST_H

#include <stdbool.h>
#include <stddef.h>

/* Per-case state.  Test code reads nothing here; the macros write it. */
struct ktest_ctx {
	int failures;			/* failed assertions/expectations so far */
	const char *skip_reason;	/* non-NULL once KT_SKIP ran */
};

struct ktest_case {
	const char *name;
	void (*fn)(struct ktest_ctx *kt);
	const char *file;
	int line;
};

#define KTEST(name)                                                                   \
	static void ktest_fn_##name(struct ktest_ctx *kt);                            \
	static const struct ktest_case ktest_case_##name                              \
		__attribute__((used, section("ksync_tests"), aligned(8))) = {         \
			#name, ktest_fn_##name, __FILE__, __LINE__                    \
		};                                                                    \
	static void ktest_fn_##name(struct ktest_ctx *kt)

/* Record a failure: prints "ktap: # file:line: assertion failed: expr". */
void ktest_fail_(struct ktest_ctx *kt, const char *file, int line, const char *expr);
/* Record a failed equality: prints both expressions and values (decimal and hex). */
void ktest_fail_eq_(struct ktest_ctx *kt, const char *file, int line, const char *a_expr,
		    const char *b_expr, long long a, long long b);

#define KT_EXPECT(cond)                                                               \
	do {                                                                          \
		if (!(cond))                                                          \
			ktest_fail_(kt, __FILE__, __LINE__, #cond);                   \
	} while (0)

#define KT_ASSERT(cond)                                                               \
	do {                                                                          \
		if (!(cond)) {                                                        \
			ktest_fail_(kt, __FILE__, __LINE__, #cond);                   \
			return;                                                       \
		}                                                                     \
	} while (0)

/* a and b are integers (or pointers); each is evaluated once and compared as long long. */
#define KT_EXPECT_EQ(a, b)                                                            \
	do {                                                                          \
		long long kt_a_ = (long long)(a), kt_b_ = (long long)(b);             \
		if (kt_a_ != kt_b_)                                                   \
			ktest_fail_eq_(kt, __FILE__, __LINE__, #a, #b, kt_a_, kt_b_); \
	} while (0)

#define KT_ASSERT_EQ(a, b)                                                            \
	do {                                                                          \
		long long kt_a_ = (long long)(a), kt_b_ = (long long)(b);             \
		if (kt_a_ != kt_b_) {                                                 \
			ktest_fail_eq_(kt, __FILE__, __LINE__, #a, #b, kt_a_, kt_b_); \
			return;                                                       \
		}                                                                     \
	} while (0)

/* Mark the case skipped ("ok N name # SKIP reason") and return.  A case that failed
 * before skipping still reports "not ok". */
#define KT_SKIP(reason)                                                               \
	do {                                                                          \
		kt->skip_reason = (reason);                                           \
		return;                                                               \
	} while (0)

/* Print "ktap: # <formatted text>" (ksync_printf subset). */
void kt_diag(struct ktest_ctx *kt, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Run every registered case whose name matches `filter` and print the KTAP document.
 * filter: NULL or "" = all; otherwise comma-separated globs where '*' matches any run of
 * characters, e.g. "atomic_*,measure_stats".  Returns the number of failed cases.
 */
int ktest_run_all(const char *filter);

/* The same over an explicit array of cases (used by ktest's own tests). */
int ktest_run_cases(const struct ktest_case *cases, size_t n, const char *filter);

/* True if `name` matches `filter` as above.  Also used for the kernel's experiment
 * filter (cmdline filter=...). */
bool ktest_filter_match(const char *filter, const char *name);

#endif /* KSYNC_KTEST_H */
