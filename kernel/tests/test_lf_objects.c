/*
 * test_lf_objects.c - libksync's lock-free objects inside the kernel, on every CPU at
 * once (issue #3 item 8: kernel tests on SMP): the Treiber stack over a static pool of
 * type-stable nodes (every node popped exactly once per round), the mpmc FIFO (nothing
 * lost or duplicated, per-producer order kept by each consumer), and the soft MWCAS
 * (units moved between counters: the sum never changes). Counting tests, no timing.
 */
#include "kernel.h"
#include <ksync/lf_fifo_mpmc.h>
#include <ksync/lf_stack.h>
#include <ksync/mwcas.h>
#include <ksync/ktest.h>

static volatile uint32_t go, done;

/* Run fn(cpu) on every online CPU at once (CPU 0 = the caller) and wait for all. */
static unsigned run_everywhere(void (*fn)(void *))
{
	unsigned n = arch_ncpus();
	go = 0;
	done = 0;
	for (unsigned c = 1; c < n; c++)
		arch_call_post(c, fn, (void *)(uintptr_t)c);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	fn((void *)0);
	for (unsigned c = 1; c < n; c++)
		arch_call_wait(c);
	return n;
}

static void wait_go(void)
{
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		arch_cpu_relax();
}

/* ---- stack ---- */
#define SNODES 256
#define SROUNDS 4000
struct snode { struct lf_stack_node link; uint32_t owner; };
static struct snode snodes[SNODES];
static struct lf_stack stk;
static volatile uint32_t stack_bad;

static void stack_worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	wait_go();
	for (int i = 0; i < SROUNDS; i++) {
		struct lf_stack_node *n;
		if (lf_stack_pop_mpmc(&stk, &n) < 0)
			continue;
		struct snode *s = lf_stack_entry(n, struct snode, link);
		/* while we hold it nobody else may: claim it, check, release */
		if (__atomic_exchange_n(&s->owner, me + 1, __ATOMIC_RELAXED) != 0)
			__atomic_fetch_add(&stack_bad, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->owner, 0, __ATOMIC_RELAXED);
		lf_stack_push_mpmc(&stk, n);
	}
	__atomic_fetch_add(&done, 1, __ATOMIC_RELEASE);
}

KTEST(lf_stack_all_cpus_nodes_conserved)
{
	lf_stack_init(&stk);
	for (int i = 0; i < SNODES; i++) {
		snodes[i].owner = 0;
		lf_stack_push_mpmc(&stk, &snodes[i].link);
	}
	stack_bad = 0;
	unsigned n = run_everywhere(stack_worker);
	KT_ASSERT_EQ(done, n);
	KT_EXPECT_EQ(stack_bad, 0);
	/* every node is back exactly once */
	static uint8_t seen[SNODES];
	memset(seen, 0, sizeof seen);
	struct lf_stack_node *node;
	int count = 0;
	while (lf_stack_pop_mpmc(&stk, &node) >= 0) {
		long idx = lf_stack_entry(node, struct snode, link) - snodes;
		KT_ASSERT(idx >= 0 && idx < SNODES);
		KT_EXPECT_EQ(seen[idx], 0);
		seen[idx] = 1;
		count++;
	}
	KT_EXPECT_EQ(count, SNODES);
}

/* ---- mpmc FIFO: each CPU produces its own sequence and consumes whatever comes ---- */
#define QCAP 16
#define ITEMS 3000
#define MAXC 16
static uint8_t qstore[QCAP * 16 + QCAP * 8] __attribute__((aligned(64)));
static struct lf_fifo_mpmc q;
static uint64_t got_count[MAXC];		/* per producer: items consumed (atomic) */
static volatile uint32_t order_bad, producers_left;

static void fifo_worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t last[MAXC];
	for (int p = 0; p < MAXC; p++)
		last[p] = 0;
	uint64_t next = 1;
	wait_go();
	while (next <= ITEMS || __atomic_load_n(&producers_left, __ATOMIC_ACQUIRE)) {
		if (next <= ITEMS) {
			uint64_t v = ((uint64_t)me << 32) | next;
			if (lf_fifo_enqueue_mpmc(&q, &v) == KSYNC_OK && ++next > ITEMS)
				__atomic_fetch_sub(&producers_left, 1, __ATOMIC_RELEASE);
		}
		uint64_t out;
		if (lf_fifo_dequeue_mpmc(&q, &out) == KSYNC_OK) {
			unsigned p = (unsigned)(out >> 32);
			uint64_t seq = out & 0xffffffffu;
			if (p >= MAXC || seq <= last[p])	/* per-producer order, no duplicates */
				__atomic_fetch_add(&order_bad, 1, __ATOMIC_RELAXED);
			else
				last[p] = seq;
			if (p < MAXC)
				__atomic_fetch_add(&got_count[p], 1, __ATOMIC_RELAXED);
		}
	}
	__atomic_fetch_add(&done, 1, __ATOMIC_RELEASE);
}

KTEST(lf_fifo_mpmc_all_cpus_nothing_lost)
{
	unsigned ncpu = arch_ncpus() < MAXC ? arch_ncpus() : MAXC;
	if (arch_ncpus() > MAXC)
		KT_SKIP("more CPUs than the test's producer table");
	KT_ASSERT_EQ(lf_fifo_init_mpmc(&q, qstore, sizeof qstore, QCAP, 8, NULL), KSYNC_OK);
	for (int p = 0; p < MAXC; p++)
		got_count[p] = 0;
	order_bad = 0;
	producers_left = ncpu;
	unsigned n = run_everywhere(fifo_worker);
	KT_ASSERT_EQ(done, n);
	uint64_t out;
	while (lf_fifo_dequeue_mpmc(&q, &out) == KSYNC_OK)	/* leftovers (none expected) */
		__atomic_fetch_add(&got_count[out >> 32], 1, __ATOMIC_RELAXED);
	KT_EXPECT_EQ(order_bad, 0);
	for (unsigned p = 0; p < ncpu; p++)
		KT_EXPECT_EQ(got_count[p], ITEMS);
}

/* ---- soft MWCAS: move one unit between two of four counters ---- */
#define NCTR 4
#define MOVES 2000
static uint64_t ctr[NCTR];
static volatile uint32_t sum_bad;

static void mwcas_worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t r = me * 2654435761u + 1;
	wait_go();
	for (int i = 0; i < MOVES; ) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		unsigned a = (unsigned)(r >> 33) % NCTR, b = (a + 1 + (unsigned)(r >> 40) % (NCTR - 1)) % NCTR;
		uint64_t va = ksync_mwcas_read(&ctr[a]), vb = ksync_mwcas_read(&ctr[b]);
		if (va == 0)
			continue;
		struct ksync_mwcas_op ops[2] = {
			{ &ctr[a], va, va - KSYNC_MWCAS_VAL(1) },
			{ &ctr[b], vb, vb + KSYNC_MWCAS_VAL(1) },
		};
		if (ksync_mwcas(ops, 2) == KSYNC_OK)
			i++;
		if (i % 64 == 0) {	/* a confirmed snapshot must sum to the total */
			uint64_t s[NCTR];
			struct ksync_mwcas_op snap[NCTR];
			for (int k = 0; k < NCTR; k++) {
				s[k] = ksync_mwcas_read(&ctr[k]);
				snap[k] = (struct ksync_mwcas_op){ &ctr[k], s[k], s[k] };
			}
			if (ksync_mwcas(snap, NCTR) == KSYNC_OK) {
				uint64_t sum = 0;
				for (int k = 0; k < NCTR; k++)
					sum += KSYNC_MWCAS_UNVAL(s[k]);
				if (sum != 1000ull * NCTR)
					__atomic_fetch_add(&sum_bad, 1, __ATOMIC_RELAXED);
			}
		}
	}
	__atomic_fetch_add(&done, 1, __ATOMIC_RELEASE);
}

KTEST(mwcas_soft_all_cpus_sum_invariant)
{
	for (int k = 0; k < NCTR; k++)
		ctr[k] = KSYNC_MWCAS_VAL(1000);
	sum_bad = 0;
	unsigned n = run_everywhere(mwcas_worker);
	KT_ASSERT_EQ(done, n);
	KT_EXPECT_EQ(sum_bad, 0);
	uint64_t sum = 0;
	for (int k = 0; k < NCTR; k++)
		sum += KSYNC_MWCAS_UNVAL(ksync_mwcas_read(&ctr[k]));
	KT_EXPECT_EQ(sum, 1000ull * NCTR);
}
