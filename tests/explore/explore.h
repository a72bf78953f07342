/*
 * explore.h - ksync's deterministic interleaving explorer (issue #3, item 8; hosted,
 * test-only, x86-64 Linux).
 *
 * A test runs 2-4 "threads" - plain C functions that call operations of the object
 * under test - as coroutines on ONE OS thread.  Every atomic wrapper of
 * include/ksync/atomic.h calls KSYNC_ATOMIC_HOOK(op, addr) just before its atomic step;
 * this header defines that hook to yield to the explorer, which picks the thread that
 * performs the next atomic step.  It explores every interleaving of those steps up to
 * a preemption bound (depth-first over schedules, replaying each schedule from a fresh
 * object: setup() runs before every execution), and checks each complete execution:
 *   - linearizability of the recorded history against a sequential specification
 *     (kx_spec_stack, kx_spec_queue, or the test's own): the threads record each
 *     operation's invocation and response (kx_op_begin/kx_op_end); the checker searches
 *     for a sequential order that respects real-time order (an operation that responded
 *     before another was invoked comes first) and in which every result is the one the
 *     specification gives (Wing & Gong's search; brute force, fine for <= 32 ops);
 *   - an optional invariant check(x, arg) on the final state.
 * It stops at the first violation (by default), prints the failing schedule and history
 * through kt_diag, and returns how many schedules it ran.
 *
 * Use: the test file must include THIS header before any ksync header (so the hook is
 * defined when atomic.h is read), and include "explore.c" once:
 *
 *   #include "../explore/explore.h"
 *   #include <ksync/lf_stack.h>
 *   #include <ksync/ktest.h>
 *   #include "../explore/explore.c"
 *
 * Model: sequential consistency.  The explorer interleaves atomic steps; the code
 * between two hooks runs without interruption, and no store is ever delayed in a store
 * buffer.  It therefore finds interleaving bugs (ABA, lost updates, publication before
 * initialisation, helping races) but not memory-order bugs (a missing release/acquire
 * on a weakly ordered CPU); those are TSan's and review's job.  Plain (non-atomic)
 * accesses to shared data are not scheduling points - the project rule that every
 * shared access goes through atomic.h is what makes the exploration complete.
 * Spin-waiting code (locks) works only if a spinning thread's loop contains a hook and
 * the preemption bound lets the holder run; the step bound cuts runaway executions.
 */
#ifndef KSYNC_TESTS_EXPLORE_H
#define KSYNC_TESTS_EXPLORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ktest_ctx;
struct kx;

/* The scheduling point: a no-op outside an explored thread. */
void kx_hook(const char *op, const void *addr);

#ifdef KSYNC_ATOMIC_H
#error "include explore.h before any ksync header"
#endif
#define KSYNC_ATOMIC_HOOK(op, addr) kx_hook(#op, (const void *)(addr))

#define KX_MAX_THREADS 4
#define KX_MAX_OPS 32		/* recorded operations per execution */
#define KX_DEFAULT_STEPS 20000	/* default step bound per execution */
#define KX_SPEC_STATE_MAX 1024	/* bytes of a specification's state */

/* Results the built-in specifications use. */
#define KX_OK 0
#define KX_EMPTY UINT64_MAX
#define KX_FULL (UINT64_MAX - 1)

/* Operation codes of the built-in specifications; tests may use KX_USER and up. */
enum { KX_PUSH = 1, KX_POP, KX_ENQ, KX_DEQ, KX_USER = 16 };

/* A sequential specification. */
struct kx_spec {
	const char *name;
	size_t state_size;	/* <= KX_SPEC_STATE_MAX */
	void (*init)(void *state);
	/* Apply `op(arg)` to `state`; true if the sequential object would return `result`
	 * (state updated), false if that result is impossible here. */
	bool (*apply)(void *state, int op, uint64_t arg, uint64_t result);
	const char *(*op_name)(int op);	/* for the printed history; may be NULL */
};

/* LIFO stack of up to 64 values: KX_PUSH(v) -> KX_OK (KX_FULL is accepted and changes
 * nothing: bounded stacks decide their own capacity); KX_POP -> the top value or
 * KX_EMPTY. */
extern const struct kx_spec kx_spec_stack;
/* FIFO queue of up to 64 values: KX_ENQ(v) -> KX_OK; KX_DEQ -> the oldest or KX_EMPTY.
 * KX_ENQ may also return KX_FULL: accepted (state unchanged) - bounded queues under
 * test decide their own capacity; check it separately if it matters. */
extern const struct kx_spec kx_spec_queue;

typedef void (*kx_thread_fn)(struct kx *x, int tid, void *arg);

struct kx_config {
	const char *name;
	int nthreads;				/* 1..KX_MAX_THREADS */
	kx_thread_fn thread[KX_MAX_THREADS];	/* thread[i] runs as thread i */
	void *arg;				/* passed to every callback */
	/* Before every execution: re-initialise the object.  May record operations (they
	 * run atomically, before any thread).  Required. */
	void (*setup)(struct kx *x, void *arg);
	/* After every complete execution: e.g. drain the object, recording the pops, so
	 * that a corrupted final state shows up in the history.  Optional. */
	void (*teardown)(struct kx *x, void *arg);
	/* After teardown: false marks the execution a violation.  Optional. */
	bool (*check)(struct kx *x, void *arg);
	const struct kx_spec *spec;	/* NULL: no linearizability check */
	int preemption_bound;		/* < 0: unbounded */
	long max_schedules;		/* 0: no limit */
	int max_steps;			/* per execution; 0: KX_DEFAULT_STEPS */
	bool keep_going;		/* don't stop at the first violation */
	/* An execution cut at max_steps counts as a violation ("no progress"): right for
	 * lock-free code, where within a preemption bound every thread ends up running
	 * alone, so an execution that does not finish is a livelock or a lost wake-up. */
	bool step_limit_is_violation;
	bool quiet;			/* don't print the failing schedule */
	/* > 0: instead of the depth-first search, run this many random schedules (PCT
	 * style: up to preemption_bound preemptions at points drawn uniformly over the
	 * longest execution seen, each to a random other thread; a thread that ends hands
	 * over to a random one).  For spaces too large to exhaust at the bound wanted. */
	long random_schedules;
	uint64_t seed;			/* random mode: the generator's seed (0: fixed default) */
};

struct kx_result {
	long schedules;		/* executions run */
	long violations;	/* executions that failed the check */
	long step_limit_hits;	/* executions cut at max_steps (not checked) */
	bool exhausted;		/* every schedule within the bounds was explored */
	int max_points;		/* most scheduling points in one execution */
	long max_steps_seen;	/* most atomic steps in one execution */
	int preemptions;	/* preemptions in the first failing schedule */
};

/* Record an operation's invocation (returns its index) and its response.  From thread
 * functions, setup or teardown. */
int kx_op_begin(struct kx *x, int op, uint64_t arg);
void kx_op_end(struct kx *x, int idx, uint64_t result);

/* The calling thread's number (0..nthreads-1), -1 in setup/teardown. */
int kx_tid(const struct kx *x);

/* Name an address for the printed schedule (up to 64 names; call from setup). */
void kx_name(struct kx *x, const void *addr, const char *name);

/*
 * Explore.  Returns 0 if no violation was found (res->exhausted says whether the
 * bounds, not the schedule budget, ended it), 1 if one was, -1 on a configuration or
 * determinism error.  With kt non-NULL prints a summary line and the first failing
 * schedule with its history through kt_diag.
 */
int kx_explore(const struct kx_config *cfg, struct kx_result *res, struct ktest_ctx *kt);

/* True in a ThreadSanitizer build. make test builds no explorer test with TSan (mk/lib.mk:
 * on one OS thread with synchronizing fiber switches it can report nothing); a test built
 * so by hand runs with the smaller budgets below. */
#if defined(__SANITIZE_THREAD__)
#define KX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KX_TSAN 1
#endif
#endif
#ifndef KX_TSAN
#define KX_TSAN 0
#endif

#endif /* KSYNC_TESTS_EXPLORE_H */
