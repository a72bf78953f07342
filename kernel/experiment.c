/*
 * experiment.c - the bench-mode runner: picks the experiments of a set and hands them
 * to libksync's KTAP runner (ktest_run_cases).
 */
#include "kernel.h"
#include "mm.h"
#include "experiment.h"

extern const struct kexp __start_ksync_exps[], __stop_ksync_exps[];

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
	int failed = ktest_run_cases(cases, k, filter);
	kfree(cases);
	return failed;
}
