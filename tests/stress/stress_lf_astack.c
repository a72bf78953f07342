/*
 * stress_lf_astack.c - include/ksync/lf_astack.h (Massalin & Pu 1991 "LIFO stacks": the
 * array stack, its CAS2 push rebuilt as one cmpxchg16b of the head and a slot write any
 * thread completes) under 2 and 4 threads on a small stack (full and empty often): every
 * value pushed is popped exactly once (per-value atomic flag), the data the pusher wrote
 * before the push is what the popper reads (TSan checks the happens-before), and the test
 * hook stalls every 16th head CAS between its read and its CAS and every 8th slot
 * completion between the head CAS and the slot write - the window in which the other
 * threads must complete the slot themselves.  At the end the stack is drained and
 * pushes == pops.  KSYNC_STRESS_OPS operations per case.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/atomic.h>

struct lf_astack;
static void stress_hook(const char *op, struct lf_astack *s, struct ksync_u128 *exp);
#define LF_ASTACK_TEST_HOOK(op, s, exp) stress_hook(#op, (s), (exp))

#include <ksync/ktest.h>
#include <ksync/lf_astack.h>
#include "stress_common.h"

static _Thread_local unsigned hook_tick, finish_tick;

static void stress_hook(const char *op, struct lf_astack *s, struct ksync_u128 *exp)
{
	(void)s;
	(void)exp;
	if (op[0] == 'f') {
		if ((++finish_tick & 7) == 0)
			for (int i = 0; i < 128; i++)
				ksync_cpu_relax();
		return;
	}
	if ((++hook_tick & 15) == 0)
		for (int i = 0; i < 64; i++)
			ksync_cpu_relax();
}

#define MAX_THREADS 4
#define CAP 5

static struct lf_astack stack;
static _Alignas(16) struct lf_astack_slot slots[LF_ASTACK_SLOTS(CAP)];
static uint32_t gate;

struct worker {
	pthread_t th;
	unsigned id;
	uint64_t n, pushed, popped, errors, full, empty, seed;
	uint8_t *seen;		/* [MAX_THREADS * n]: atomic exchange, 1 once popped */
	uint64_t *payload;	/* [MAX_THREADS * n]: plain, pusher then popper */
};

static struct worker w[MAX_THREADS];

static uint64_t payload_of(uint64_t v)
{
	return v * 0x9e3779b97f4a7c15ull ^ 0x5a5a5a5au;
}

static void took(struct worker *me, uint64_t v)
{
	uint64_t t = v >> 40, k = v & ((1ull << 40) - 1);

	if (t >= MAX_THREADS || k >= me->n) {
		me->errors++;
		return;
	}
	if (ksync_exchange_relaxed_u8(&me->seen[t * me->n + k], 1) != 0)
		me->errors++;
	if (me->payload[t * me->n + k] != payload_of(v))
		me->errors++;
	me->popped++;
}

static void *worker_main(void *arg)
{
	struct worker *me = arg;
	uint64_t k = 0, v;

	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	while (k < me->n) {
		uint64_t r = rnd(&me->seed);

		if (r & 1) {
			v = ((uint64_t)me->id << 40) | k;
			me->payload[me->id * me->n + k] = payload_of(v);
			int rc = lf_astack_push_mpmc(&stack, v);

			if (rc == KSYNC_EFULL)
				me->full++;
			else if (rc >= 0) {
				k++;
				me->pushed++;
			} else
				me->errors++;
		} else {
			int rc = lf_astack_pop_mpmc(&stack, &v);

			if (rc == KSYNC_EEMPTY)
				me->empty++;
			else if (rc >= 0)
				took(me, v);
			else
				me->errors++;
		}
	}
	return NULL;
}

static void run(struct ktest_ctx *kt, unsigned nthreads)
{
	uint64_t per = stress_ops() / nthreads, pushed = 0, popped = 0, errors = 0, full = 0,
		 empty = 0, v;
	uint8_t *seen = calloc((size_t)MAX_THREADS * per, 1);
	uint64_t *payload = calloc((size_t)MAX_THREADS * per, sizeof(uint64_t));
	struct worker drain = { .n = per, .seen = seen, .payload = payload };

	KT_ASSERT(seen != NULL && payload != NULL);
	KT_ASSERT_EQ(lf_astack_init(&stack, slots, CAP), KSYNC_OK);
	gate = nthreads;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .id = t, .n = per, .seen = seen, .payload = payload,
					.seed = 0x2545f4914f6cdd1dull * (t + 1) };
		KT_ASSERT_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		KT_ASSERT_EQ(pthread_join(w[t].th, NULL), 0);
		pushed += w[t].pushed;
		popped += w[t].popped;
		errors += w[t].errors;
		full += w[t].full;
		empty += w[t].empty;
	}
	while (lf_astack_pop_mpmc(&stack, &v) >= 0)
		took(&drain, v);
	KT_EXPECT_EQ(errors + drain.errors, 0);
	KT_EXPECT_EQ(pushed, per * nthreads);
	KT_EXPECT_EQ(popped + drain.popped, pushed);
	for (uint64_t i = 0; i < (uint64_t)nthreads * per; i++)
		if (seen[i] != 1) {
			KT_EXPECT_EQ(seen[i], 1);	/* lost: report the first */
			break;
		}
	kt_diag(kt, "%u threads, capacity %u, %llu pushes: %llu full, %llu empty, %llu left "
		"at the end", nthreads, CAP, (unsigned long long)pushed,
		(unsigned long long)full, (unsigned long long)empty,
		(unsigned long long)drain.popped);
	free(seen);
	free(payload);
}

KTEST(stress_lf_astack_2threads)
{
	run(kt, 2);
}

KTEST(stress_lf_astack_4threads)
{
	run(kt, 4);
}
