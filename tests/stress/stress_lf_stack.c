/*
 * stress_lf_stack.c - include/ksync/lf_stack.h under 2 and 4 threads (4 oversubscribe
 * this 2-core machine, so threads are preempted between read and CAS): every node that
 * is pushed is popped exactly once.  Each node carries an atomic in_stack flag (set
 * before its push, cleared after its pop: a double pop or a pop of a node nobody pushed
 * sees it already clear), a payload written plainly by its pusher and checked by its
 * popper (ThreadSanitizer checks the push -> pop happens-before), and push/pop counts.
 * pop_all is mixed in, and about half of the pushes and pops are the _hint variants
 * (each thread keeps its own hint, which the others keep making stale).  Nodes are
 * recycled at once by the thread that popped them, with
 * few nodes for many threads: the interleaving "pop A ... (A, B popped, A pushed back)
 * ... CAS" that breaks a stack without a generation happens constantly.
 * At the end: pushes == pops + nodes left, every node is in the stack exactly once.
 * Size: KSYNC_STRESS_OPS operations in total per case (default 400000).
 *
 * The test hook (LF_STACK_TEST_HOOK) stalls every 16th pop of each thread for ~64
 * pause instructions between its read of the top and its cmpxchg16b, so that other
 * threads pop and re-push its top node inside that window far more often.
 *
 * Test-only switch: -DSTRESS_DEFEAT_GENERATION makes the hook copy the current
 * generation into pop's expected value just before the cmpxchg16b, so the CAS compares
 * the pointer only - a stack without the generation.  This test then fails (lost and
 * doubly popped nodes), which shows it detects ABA; the header has no such switch.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/atomic.h>

/* Every 16th pop of a thread stalls ~64 pauses between its read and its CAS, widening
 * the window in which other threads pop and re-push its top node (ABA). */
struct lf_stack;
static void stress_hook(const char *op, struct lf_stack *s, void *exp);
#define LF_STACK_TEST_HOOK(op, s, exp) stress_hook(#op, (s), (void *)(exp))

#include <ksync/ktest.h>
#include <ksync/lf_stack.h>
#include "stress_common.h"

static _Thread_local unsigned hook_tick;

static void stress_hook(const char *op, struct lf_stack *s, void *exp)
{
	if (op[1] != 'o' || op[3] != '\0')	/* pop only */
		return;
	if ((++hook_tick & 15) == 0)
		for (int i = 0; i < 64; i++)
			ksync_cpu_relax();
#ifdef STRESS_DEFEAT_GENERATION
	/* compare the pointer only, as a stack without a generation would */
	((struct ksync_u128 *)exp)->hi = ksync_load_acquire_u64(&s->top.hi);
#else
	(void)s;
	(void)exp;
#endif
}

#define MAX_THREADS 4
#define MAX_NODES 256

struct node {
	struct lf_stack_node link;
	uint32_t in_stack;	/* 1 while in the stack; atomic exchange */
	uint32_t id;
	uint64_t payload;	/* plain: written by the pusher, read by the popper */
	uint64_t pushes, pops;	/* atomic adds */
};

static struct lf_stack stack;
static struct node nodes[MAX_NODES];
static unsigned nnodes_live;	/* nodes in this case; read-only while threads run */
static uint32_t gate;

struct worker {
	pthread_t th;
	unsigned idx;
	uint64_t ops;
	uint64_t seed;
	struct lf_stack_hint hint;	/* this thread's, for the _hint operations */
	uint64_t errors;	/* double pops, bad payloads */
	uint64_t pop_alls, empties;
};

static uint64_t payload_of(const struct node *n, uint64_t pushes)
{
	return ((uint64_t)n->id << 40) ^ pushes ^ 0x5a5a5a5aull;
}

/* Take ownership of a node just popped: it must have been in the stack. */
static void took(struct worker *w, struct node *n)
{
	if (ksync_exchange_acq_rel_u32(&n->in_stack, 0) != 1)
		w->errors++;
	/* the pusher wrote payload before its push; we read it after our pop */
	if (n->payload != payload_of(n, ksync_load_relaxed_u64(&n->pushes)))
		w->errors++;
	ksync_fetch_add_relaxed_u64(&n->pops, 1);
}

static void give(struct worker *w, struct node *n)
{
	uint64_t p = ksync_fetch_add_relaxed_u64(&n->pushes, 1) + 1;

	n->payload = payload_of(n, p);
	if (ksync_exchange_acq_rel_u32(&n->in_stack, 1) != 0)
		w->errors++;
	if (p & 1)
		(void)lf_stack_push_hint_mpmc(&stack, &w->hint, &n->link);
	else
		(void)lf_stack_push_mpmc(&stack, &n->link);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct lf_stack_node *ln;
	struct node *held[2];
	unsigned nheld = 0;

	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	for (uint64_t i = 0; i < w->ops; i++) {
		uint64_t r = rnd(&w->seed);

		if ((r & 127) == 0) {
			/* pop_all, then push everything back one by one */
			if (lf_stack_pop_all_mpmc(&stack, &ln) == KSYNC_OK) {
				unsigned walked = 0;

				w->pop_alls++;
				while (ln) {
					if (++walked > nnodes_live) {	/* a cycle: corrupt */
						w->errors++;
						break;
					}
					struct lf_stack_node *next = lf_stack_next(ln);
					struct node *n = lf_stack_entry(ln, struct node, link);

					took(w, n);
					give(w, n);
					ln = next;
				}
			}
			continue;
		}
		if (nheld && (r & 0x300) == 0) {	/* sometimes return a held node */
			give(w, held[--nheld]);
			continue;
		}
		if (((r & 0x1000) ? lf_stack_pop_hint_mpmc(&stack, &w->hint, &ln)
				  : lf_stack_pop_mpmc(&stack, &ln)) < 0) {
			w->empties++;
			continue;
		}
		struct node *n = lf_stack_entry(ln, struct node, link);

		took(w, n);
		if (nheld < 2 && (r & 0xc00) == 0)
			held[nheld++] = n;	/* keep it a while */
		else
			give(w, n);		/* recycle at once: ABA pressure */
	}
	while (nheld)
		give(w, held[--nheld]);
	return NULL;
}

static void run(struct ktest_ctx *kt, unsigned nthreads, unsigned nnodes)
{
	struct worker w[MAX_THREADS];
	uint64_t total = stress_ops(), errors = 0, pushes = 0, pops = 0, count = 0;
	uint64_t pop_alls = 0, empties = 0;
	struct lf_stack_node *ln;

	lf_stack_init(&stack);
	nnodes_live = nnodes;
	for (unsigned i = 0; i < nnodes; i++) {
		nodes[i] = (struct node){ .id = i };
		nodes[i].payload = payload_of(&nodes[i], 0);
		nodes[i].in_stack = 1;
		lf_stack_push_mpmc(&stack, &nodes[i].link);
	}
	gate = nthreads;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .idx = t, .ops = total / nthreads,
					.seed = 0x9e3779b97f4a7c15ull * (t + 1),
					.hint = LF_STACK_HINT_INITIALIZER };
		KT_ASSERT_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		KT_ASSERT_EQ(pthread_join(w[t].th, NULL), 0);
		errors += w[t].errors;
		pop_alls += w[t].pop_alls;
		empties += w[t].empties;
	}
	KT_EXPECT_EQ(errors, 0);

	/* every node exactly once in the final stack */
	for (unsigned i = 0; i < nnodes; i++) {
		pushes += nodes[i].pushes;
		pops += nodes[i].pops;
	}
	KT_EXPECT_EQ(pushes, pops);	/* each node: initial push not counted, all back */
	KT_EXPECT_EQ(lf_stack_pop_all_mpmc(&stack, &ln), KSYNC_OK);
	for (; ln && count <= nnodes; ln = lf_stack_next(ln), count++) {
		struct node *n = lf_stack_entry(ln, struct node, link);

		KT_EXPECT_EQ(ksync_exchange_relaxed_u32(&n->in_stack, 2), 1);	/* once */
	}
	KT_EXPECT_EQ(count, nnodes);
	for (unsigned i = 0; i < nnodes; i++)
		KT_EXPECT_EQ(nodes[i].in_stack, 2);
	kt_diag(kt, "%u threads, %u nodes, %llu ops: %llu pops, %llu pop_all, %llu empty",
		nthreads, nnodes, (unsigned long long)total, (unsigned long long)pops,
		(unsigned long long)pop_alls, (unsigned long long)empties);
}

KTEST(stress_lf_stack_2threads_4nodes)
{
	run(kt, 2, 4);
}

KTEST(stress_lf_stack_4threads_6nodes)
{
	run(kt, 4, 6);
}

KTEST(stress_lf_stack_4threads_256nodes)
{
	run(kt, 4, 256);
}
