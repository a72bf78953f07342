/*
 * stress_lf_istack.c - include/ksync/lf_istack.h under 2 and 4 threads over a fixed
 * pool of indices, the shape of a page-frame freelist: every index pushed is popped
 * exactly once (per-index atomic in_stack flag; about half of the pushes and pops use
 * each thread's own hint), the per-index payload written by the
 * pusher is what the popper reads (TSan checks the happens-before), pop_all is mixed
 * in, indices are recycled at once to provoke ABA, and the test hook stalls every 16th
 * pop between its read and its CAS to widen the ABA window.  At the end every index is
 * in the stack exactly once and pushes == pops.  KSYNC_STRESS_OPS operations per case.
 *
 * Test-only switches (the header has neither):
 *  -DSTRESS_DEFEAT_GENERATION makes the hook replace the generation in pop's expected
 *   word by the current one just before the CAS (index-only compare): the test then
 *   fails, which shows it detects ABA;
 *  -DSTRESS_GEN_BITS=k models a generation of only k bits: the hook does that replacement
 *   only when the current generation differs from the expected one by a multiple of 2^k
 *   (exactly when a k-bit field would have wrapped back to the same value), so the CAS
 *   succeeds where a k-bit generation's would.  It shows how narrow a generation the
 *   stress breaks (issue 27: "an ABA test that would catch a too-small generation"):
 *   see tests/test_stress.py::test_stress_istack_catches_a_narrow_generation.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/atomic.h>

struct lf_istack;
static void stress_hook(const char *op, struct lf_istack *s, uint64_t *exp);
#define LF_ISTACK_TEST_HOOK(op, s, exp) stress_hook(#op, (s), (exp))

#include <ksync/ktest.h>
#include <ksync/lf_istack.h>
#include "stress_common.h"

static _Thread_local unsigned hook_tick;

static void stress_hook(const char *op, struct lf_istack *s, uint64_t *exp)
{
	if (op[1] != 'o' || op[3] != '\0')	/* pop only */
		return;
	if ((++hook_tick & 15) == 0)
		for (int i = 0; i < 64; i++)
			ksync_cpu_relax();
#if defined(STRESS_DEFEAT_GENERATION)
	*exp = (ksync_load_acquire_u64(&s->top) & ~s->nil) | (*exp & s->nil);
#elif defined(STRESS_GEN_BITS)
	{
		uint64_t cur = ksync_load_acquire_u64(&s->top);
		uint64_t diff = (cur >> s->idx_bits) - (*exp >> s->idx_bits);

		_Static_assert(STRESS_GEN_BITS >= 1 && STRESS_GEN_BITS < 32, "1..31 bits");
		if ((diff & ((UINT64_C(1) << STRESS_GEN_BITS) - 1)) == 0)
			*exp = (cur & ~s->nil) | (*exp & s->nil);
	}
#else
	(void)s;
	(void)exp;
#endif
}

#define MAX_THREADS 4
#define MAX_NODES 4096

static struct lf_istack stack;
static uint32_t links[MAX_NODES];
static uint32_t in_stack[MAX_NODES];	/* atomic exchange */
static uint64_t payload[MAX_NODES];	/* plain: pusher writes, popper reads */
static uint64_t pushes[MAX_NODES], pops[MAX_NODES];	/* atomic adds */
static uint32_t nnodes_live;
static uint32_t gate;

struct worker {
	pthread_t th;
	uint64_t ops, seed, errors, pop_alls, empties;
	struct lf_istack_hint hint;	/* this thread's, for the _hint operations */
};

static uint64_t payload_of(uint32_t i, uint64_t p)
{
	return ((uint64_t)i << 40) ^ p ^ 0xa5a5a5a5ull;
}

static void took(struct worker *w, uint32_t i)
{
	if (i >= nnodes_live) {
		w->errors++;
		return;
	}
	if (ksync_exchange_acq_rel_u32(&in_stack[i], 0) != 1)
		w->errors++;
	if (payload[i] != payload_of(i, ksync_load_relaxed_u64(&pushes[i])))
		w->errors++;
	ksync_fetch_add_relaxed_u64(&pops[i], 1);
}

static void give(struct worker *w, uint32_t i)
{
	uint64_t p = ksync_fetch_add_relaxed_u64(&pushes[i], 1) + 1;

	payload[i] = payload_of(i, p);
	if (ksync_exchange_acq_rel_u32(&in_stack[i], 1) != 0)
		w->errors++;
	if (p & 1)
		(void)lf_istack_push_hint_mpmc(&stack, &w->hint, i);
	else
		(void)lf_istack_push_mpmc(&stack, i);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint32_t held[2], nheld = 0, i;

	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	for (uint64_t k = 0; k < w->ops; k++) {
		uint64_t r = rnd(&w->seed);

		if ((r & 127) == 0) {
			if (lf_istack_pop_all_mpmc(&stack, &i) == KSYNC_OK) {
				uint32_t walked = 0;

				w->pop_alls++;
				while (i != LF_ISTACK_NONE) {
					uint32_t next = lf_istack_chain_next(&stack, i);

					if (++walked > nnodes_live) {	/* a cycle: corrupt */
						w->errors++;
						break;
					}
					took(w, i);
					if (i < nnodes_live)
						give(w, i);
					i = next;
				}
			}
			continue;
		}
		if (nheld && (r & 0x300) == 0) {
			give(w, held[--nheld]);
			continue;
		}
		if (((r & 0x1000) ? lf_istack_pop_hint_mpmc(&stack, &w->hint, &i)
				  : lf_istack_pop_mpmc(&stack, &i)) < 0) {
			w->empties++;
			continue;
		}
		took(w, i);
		if (i >= nnodes_live)
			continue;
		if (nheld < 2 && (r & 0xc00) == 0)
			held[nheld++] = i;
		else
			give(w, i);
	}
	while (nheld)
		give(w, held[--nheld]);
	return NULL;
}

static void run(struct ktest_ctx *kt, unsigned nthreads, uint32_t nnodes)
{
	struct worker w[MAX_THREADS];
	uint64_t total = stress_ops(), errors = 0, npush = 0, npop = 0, count = 0;
	uint64_t pop_alls = 0, empties = 0;
	uint32_t i;

	KT_ASSERT_EQ(lf_istack_init(&stack, links, nnodes), KSYNC_OK);
	nnodes_live = nnodes;
	for (i = 0; i < nnodes; i++) {
		pushes[i] = pops[i] = 0;
		payload[i] = payload_of(i, 0);
		in_stack[i] = 1;
		lf_istack_push_mpmc(&stack, i);
	}
	gate = nthreads;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .ops = total / nthreads,
					.seed = 0x2545f4914f6cdd1dull * (t + 1),
					.hint = LF_ISTACK_HINT_INITIALIZER };
		KT_ASSERT_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		KT_ASSERT_EQ(pthread_join(w[t].th, NULL), 0);
		errors += w[t].errors;
		pop_alls += w[t].pop_alls;
		empties += w[t].empties;
	}
	KT_EXPECT_EQ(errors, 0);
	for (i = 0; i < nnodes; i++) {
		npush += pushes[i];
		npop += pops[i];
	}
	KT_EXPECT_EQ(npush, npop);
	KT_EXPECT_EQ(lf_istack_pop_all_mpmc(&stack, &i), KSYNC_OK);
	for (; i != LF_ISTACK_NONE && count <= nnodes; i = lf_istack_chain_next(&stack, i), count++)
		KT_EXPECT_EQ(ksync_exchange_relaxed_u32(&in_stack[i], 2), 1);
	KT_EXPECT_EQ(count, nnodes);
	for (i = 0; i < nnodes; i++)
		KT_EXPECT_EQ(in_stack[i], 2);
	kt_diag(kt, "%u threads, %u indices (%d generation bits), %llu ops: %llu pops, "
		"%llu pop_all, %llu empty", nthreads, nnodes, lf_istack_gen_bits(&stack),
		(unsigned long long)total, (unsigned long long)npop,
		(unsigned long long)pop_alls, (unsigned long long)empties);
}

KTEST(stress_lf_istack_2threads_4indices)
{
	run(kt, 2, 4);
}

KTEST(stress_lf_istack_4threads_6indices)
{
	run(kt, 4, 6);
}

KTEST(stress_lf_istack_4threads_4096indices)
{
	run(kt, 4, MAX_NODES);
}
