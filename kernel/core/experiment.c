/*
 * experiment.c - the bench-mode runner: picks the experiments of a set and hands them
 * to libksync's KTAP runner (ktest_run_cases).  Also the check that a filter= matches
 * something, for tests and experiments alike (docs/protocol.md section 1,
 * "filter_unmatched").
 */
#include "kernel.h"
#include "mm.h"
#include "experiment.h"

extern const struct kexp __start_ksync_exps[], __stop_ksync_exps[];
extern const struct ktest_case __start_ksync_tests[], __stop_ksync_tests[];

/* A JSON string of s (filter words come from the command line: quote " and \). */
static void json_str(const char *s)
{
	kprintf("\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			kprintf("\\%c", *s);
		else if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f)
			kprintf("%c", *s);
	}
	kprintf("\"");
}

bool kfilter_matches_any(const char *filter, const struct ktest_case *cases, size_t n,
			 const char *what, const char *set)
{
	if (!filter || !*filter)
		return true;
	for (size_t i = 0; i < n; i++)
		if (ktest_filter_match(filter, cases[i].name))
			return true;
	/* One line, printed by the BSP alone before anything else runs. */
	kprintf("KSYNC {\"kind\":\"filter_unmatched\",\"what\":");
	json_str(what);
	kprintf(",\"set\":");
	if (set)
		json_str(set);
	else
		kprintf("null");
	kprintf(",\"filter\":");
	json_str(filter);
	kprintf(",\"names\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			kprintf(",");
		json_str(cases[i].name);
	}
	kprintf("]}\n");
	kprintf("ktap: # filter=%s matches none of the %lu %s\n", filter, (unsigned long)n, what);
	return false;
}

bool kfilter_matches_any_test(const char *filter)
{
	return kfilter_matches_any(filter, __start_ksync_tests,
				   (size_t)(__stop_ksync_tests - __start_ksync_tests), "tests",
				   NULL);
}

int kexp_run_all(const char *filter, const char *set)
{
	bool all = !strcmp(set, "all");
	if (!all && strcmp(set, "default")) {
		kprintf("ksync: unknown experiment set '%s' (default, all)\n", set);
		return 1;
	}
	size_t n = (size_t)(__stop_ksync_exps - __start_ksync_exps), k = 0;
	struct ktest_case *cases = kmalloc((n ? n : 1) * sizeof *cases);
	KASSERT(cases);
	for (size_t i = 0; i < n; i++)
		if (all || !strcmp(__start_ksync_exps[i].set, "default"))
			cases[k++] = __start_ksync_exps[i].c;
	if (!kfilter_matches_any(filter, cases, k, "experiments", set)) {
		kfree(cases);
		return 1;
	}
	int failed = ktest_run_cases(cases, k, filter);
	kfree(cases);
	return failed;
}
