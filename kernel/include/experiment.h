/*
 * experiment.h - in-kernel experiments: registered like tests (section "ksync_exps"),
 * run in bench mode, one KTAP case each, their figures leaving as KSYNC lines.
 *
 *   KEXPERIMENT(prims, "default") { ... ksync_prim_emit(...); ... }
 *
 * A long body is better a named static function that the KEXPERIMENT body calls: tools
 * that read C without the preprocessor (ctags, cscope, the call graphs built on them)
 * see no function in a macro-made definition and take its locals for file-scope names,
 * so every `i` or `buf` elsewhere in the kernel would seem to use the experiment.
 *
 * The set is "default" (part of `make run`) or "all" (opt-in, longer).
 */
#ifndef KSYNC_EXPERIMENT_H
#define KSYNC_EXPERIMENT_H

#include <ksync/ktest.h>

struct kexp {
	struct ktest_case c;
	const char *set;
};

#define KEXPERIMENT(name, setname)                                                    \
	static void kexp_fn_##name(struct ktest_ctx *kt);                             \
	static const struct kexp kexp_##name                                          \
		__attribute__((used, section("ksync_exps"), aligned(8))) = {          \
			{ #name, kexp_fn_##name, __FILE__, __LINE__ }, setname        \
		};                                                                    \
	static void kexp_fn_##name(struct ktest_ctx *kt)

/* Run the experiments of `set` ("default" or "all") matching `filter`; KTAP output.
 * Returns the number that failed (1, with no KTAP, if `filter` matches none of them). */
int kexp_run_all(const char *filter, const char *set);

/* True if `filter` (NULL or "" = everything) matches one of cases[0..n).  If it matches
 * none, prints one line KSYNC {"kind":"filter_unmatched","what":what,"set":set or null,
 * "filter":...,"names":[every case's name]} (and a KTAP diagnostic) so the host can say
 * what exists, and returns false.  kfilter_matches_any_test: over the registered tests. */
bool kfilter_matches_any(const char *filter, const struct ktest_case *cases, size_t n,
			 const char *what, const char *set);
bool kfilter_matches_any_test(const char *filter);

/* Hartman & Ousterhout's benchmarks as a background load (kernel/exp/sprite.c): a mix run
 * on CPUs 0..cpus-1 at `scale` percent of their work, level 1, until stopped. Start:
 * KSYNC_OK, KSYNC_EINVAL (cpus 0 or above the CPUs / 16, scale outside 1..100),
 * KSYNC_EBUSY (running) or thread_create's error. Stop: waits for the run in progress
 * and returns the number of benchmark runs done. */
int sprite_load_start(unsigned cpus, unsigned scale);
uint64_t sprite_load_stop(void);

#endif
