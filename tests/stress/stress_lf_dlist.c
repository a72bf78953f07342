/*
 * stress_lf_dlist.c - concurrency stress of include/ksync/lf_dlist.h on the soft and
 * lock MWCAS (one binary: the list's LF_DLIST_MWCAS/LF_DLIST_READ point at a test
 * dispatcher).
 *
 * A pool of nodes; a node is either on the list or "held" by exactly one thread (the
 * one whose remove or pop_front took it off).  Worker threads repeatedly
 *   - insert a held node after or before a random node of the pool, or at either end
 *     (falling back to the head when the chosen position is off the list),
 *   - remove a random node of the pool (KSYNC_OK makes it theirs; KSYNC_ENOENT if it
 *     was off the list), or pop the first node,
 * and a reader thread walks the ring forward and backward meanwhile (every node it
 * meets must be the head or a pool node; a walk ends within the pool size).
 * At the end, single-threaded: forward and backward traversals agree node by node,
 * a->next->prev == a everywhere, every pool node is on the ring exactly once or held by
 * exactly one thread (count exact), and inserts - removals == the ring's length.
 * Sized by KSYNC_STRESS_OPS (operations per case, all workers together).  Clean under
 * TSan.  Hohmuth & Härtig 2001 §4.2 (Fiasco's ready and present lists).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/mwcas.h>

static int use_lock;	/* set before the threads start; read-only while they run */

static int stress_mwcas(struct ksync_mwcas_op *ops, unsigned n)
{
	return use_lock ? ksync_mwcas_lock(ops, n) : ksync_mwcas_soft(ops, n);
}

static uint64_t stress_read(const uint64_t *a)
{
	return use_lock ? ksync_mwcas_read_lock(a) : ksync_mwcas_read_soft(a);
}

#define LF_DLIST_MWCAS(ops, n) stress_mwcas((ops), (n))
#define LF_DLIST_READ(a) stress_read(a)

#include <ksync/atomic.h>
#include <ksync/ktest.h>
#include <ksync/lf_dlist.h>
#include <ksync/platform.h>
#include "stress_common.h"

#define WORKERS 3
#define PER_WORKER 16
#define POOL (WORKERS * PER_WORKER)

static struct lf_dlist list;
static struct lf_dlist_node pool[POOL];

struct worker {
	int held[POOL];		/* pool indices this thread holds (off the list) */
	int nheld;
	uint64_t inserts, removes, enoent, fallback;
	uint64_t seed, ops;
	uint64_t bad;		/* unexpected return codes */
} __attribute__((aligned(64)));

static struct worker workers[WORKERS];
static uint32_t waiting;	/* start gate */
static uint32_t stop_reader;	/* set once the workers are done */
static uint64_t reader_walks, reader_bad;

static int pool_index(const struct lf_dlist_node *n)
{
	return n >= pool && n < pool + POOL ? (int)(n - pool) : -1;
}

static void gate(void)
{
	ksync_fetch_sub_acq_rel_u32(&waiting, 1);
	while (ksync_load_acquire_u32(&waiting) != 0)
		ksync_cpu_relax();
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	gate();
	for (uint64_t k = 0; k < w->ops; k++) {
		uint64_t r = rnd(&w->seed);
		int rc;

		if (w->nheld > 0 && (r & 1)) {
			/* insert one of ours somewhere */
			int h = (int)((r >> 8) % (uint64_t)w->nheld);
			struct lf_dlist_node *n = &pool[w->held[h]];
			struct lf_dlist_node *pos = &pool[(r >> 24) % POOL];

			switch ((r >> 4) & 3) {
			case 0: rc = lf_dlist_insert_after(&list, pos, n); break;
			case 1: rc = lf_dlist_insert_before(&list, pos, n); break;
			case 2: rc = lf_dlist_push_front(&list, n); break;
			default: rc = lf_dlist_push_back(&list, n); break;
			}
			if (rc == KSYNC_ENOENT || (rc == KSYNC_EINVAL && pos == n)) {
				w->fallback++;	/* pos was off the list (or ours) */
				rc = lf_dlist_push_back(&list, n);
			}
			if (rc == KSYNC_OK) {
				w->inserts++;
				w->held[h] = w->held[--w->nheld];
			} else {
				w->bad++;	/* a held node must always go in */
			}
		} else if ((r >> 2) & 1) {
			struct lf_dlist_node *n = &pool[(r >> 24) % POOL];

			rc = lf_dlist_remove(&list, n);
			if (rc == KSYNC_OK) {
				w->removes++;
				w->held[w->nheld++] = pool_index(n);
			} else if (rc == KSYNC_ENOENT) {
				w->enoent++;	/* off the list: held by someone */
			} else {
				w->bad++;
			}
		} else {
			struct lf_dlist_node *n;

			rc = lf_dlist_pop_front(&list, &n);
			if (rc == KSYNC_OK) {
				w->removes++;
				w->held[w->nheld++] = pool_index(n);
				if (pool_index(n) < 0)
					w->bad++;
			} else if (rc != KSYNC_EEMPTY) {
				w->bad++;
			}
		}
	}
	ksync_mwcas_thread_exit();
	return NULL;
}

static void *reader_main(void *arg)
{
	uint64_t walks = 0, bad = 0;

	(void)arg;
	gate();
	while (!ksync_load_acquire_u32(&stop_reader)) {
		int steps = 0;

		for (struct lf_dlist_node *n = lf_dlist_first(&list); n;
		     n = lf_dlist_next(&list, n))
			if (pool_index(n) < 0 || ++steps > 4 * POOL) {
				bad++;
				break;
			}
		steps = 0;
		for (struct lf_dlist_node *n = lf_dlist_last(&list); n;
		     n = lf_dlist_prev(&list, n))
			if (pool_index(n) < 0 || ++steps > 4 * POOL) {
				bad++;
				break;
			}
		walks++;
	}
	/* relaxed: read after pthread_join */
	ksync_store_relaxed_u64(&reader_walks, walks);
	ksync_store_relaxed_u64(&reader_bad, bad);
	return NULL;
}

static void run_case(struct ktest_ctx *kt, int lock)
{
	pthread_t th[WORKERS + 1];
	int seen[POOL] = { 0 };
	int64_t net = 0;
	uint64_t ins = 0, rem = 0, fb = 0, enoent = 0, bad = 0;
	int fwd = 0, bwd = 0, held = 0;
	struct lf_dlist_node *n, *p;

	use_lock = lock;
	lf_dlist_init(&list);
	for (int i = 0; i < POOL; i++)
		lf_dlist_node_init(&pool[i]);
	/* every node starts held by its worker; half of them go in first */
	for (int t = 0; t < WORKERS; t++) {
		workers[t] = (struct worker){ .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 7),
					      .ops = stress_ops() / WORKERS };
		for (int i = 0; i < PER_WORKER; i++)
			workers[t].held[workers[t].nheld++] = t * PER_WORKER + i;
	}
	waiting = WORKERS + 1;
	stop_reader = 0;
	for (int t = 0; t < WORKERS; t++)
		KT_ASSERT_EQ(pthread_create(&th[t], NULL, worker_main, &workers[t]), 0);
	KT_ASSERT_EQ(pthread_create(&th[WORKERS], NULL, reader_main, NULL), 0);
	for (int t = 0; t < WORKERS; t++)
		KT_ASSERT_EQ(pthread_join(th[t], NULL), 0);
	ksync_store_release_u32(&stop_reader, 1);
	KT_ASSERT_EQ(pthread_join(th[WORKERS], NULL), 0);

	/* forward walk: links consistent, each node once */
	p = &list.head;
	for (n = lf_dlist_first(&list); n; p = n, n = lf_dlist_next(&list, n)) {
		int i = pool_index(n);

		KT_ASSERT(i >= 0);
		KT_ASSERT(fwd++ < POOL);
		KT_EXPECT_EQ(seen[i]++, 0);
		KT_EXPECT_EQ(stress_read(&n->prev), (uint64_t)(uintptr_t)p);
	}
	KT_EXPECT_EQ(stress_read(&list.head.prev), (uint64_t)(uintptr_t)p);
	/* backward walk: the same nodes in reverse */
	for (n = lf_dlist_last(&list); n; n = lf_dlist_prev(&list, n)) {
		KT_ASSERT(bwd++ < POOL);
		KT_EXPECT_EQ(seen[pool_index(n)], 1);
	}
	KT_EXPECT_EQ(fwd, bwd);
	/* every node: on the ring exactly once, or held by exactly one worker */
	for (int t = 0; t < WORKERS; t++) {
		for (int h = 0; h < workers[t].nheld; h++) {
			int i = workers[t].held[h];

			KT_EXPECT_EQ(seen[i]++, 0);
			KT_EXPECT(!lf_dlist_on_list(&pool[i]));
			held++;
		}
		ins += workers[t].inserts;
		rem += workers[t].removes;
		fb += workers[t].fallback;
		enoent += workers[t].enoent;
		bad += workers[t].bad;
	}
	for (int i = 0; i < POOL; i++)
		KT_EXPECT_EQ(seen[i], 1);
	KT_EXPECT_EQ(fwd + held, POOL);
	net = (int64_t)ins - (int64_t)rem;
	KT_EXPECT_EQ(net, fwd);
	KT_EXPECT_EQ(bad, 0);
	KT_EXPECT_EQ(reader_bad, 0);
	KT_EXPECT(ins > 0 && rem > 0);
	kt_diag(kt, "%s: %d workers: %llu inserts, %llu removals, %llu ENOENT, %llu "
		    "position fallbacks; %d on the ring at the end, %d held; reader walked "
		    "%llu times",
		lock ? "lock" : "soft", WORKERS, (unsigned long long)ins,
		(unsigned long long)rem, (unsigned long long)enoent, (unsigned long long)fb,
		fwd, held, (unsigned long long)reader_walks);
}

KTEST(stress_lf_dlist_soft)
{
	run_case(kt, 0);
}

KTEST(stress_lf_dlist_lock)
{
	run_case(kt, 1);
}
