/*
 * stress_lf_list.c - include/ksync/lf_list.h under 2 and 4 threads, with nodes from
 * malloc reclaimed through lf_epoch (so ASan reports any node freed while a thread can
 * still reach it, and a poisoned magic number any reuse).
 *
 * Keys 0 .. KEYS-1; key k belongs to thread k % nthreads, which alone inserts nodes
 * with key k (at the head or the tail, at random).  present[k] is 1 from just before
 * such an insert until the node is removed; whoever removes it (the owner by key or by
 * pointer, or any thread's pop_head) clears it and must find it set: a node removed
 * twice, or two live nodes with one key, is an error.  After every successful removal
 * the remover checks that the node is no longer reachable from the head (deleted or
 * not), then retires it.  Lookups of any key check the node they find.  In the case
 * without pop_head, only the owner changes key k, so its lookups must agree exactly
 * with present[k] although other threads keep changing the list around them.
 * At the end, the list holds exactly the keys with present[k] = 1, each once, no deleted
 * node is still linked, and the tail hint is 0 or a linked node.
 * To make rare interleavings common, the test hook stalls threads at half-done points
 * (see below), and every removal is followed by an epoch collect, so that a node is
 * freed as soon as the rule allows: a node that stays reachable after its removal (say
 * through the tail hint) is then freed while still reachable, and ASan reports the use.
 * Size: KSYNC_STRESS_OPS operations in total per case (default 400000).
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/atomic.h>

/* Every 8th time a thread reaches the tail swing, a frozen head, a mark or an unlink,
 * it stalls ~64 pauses there: other threads then run into the half-done operation far
 * more often (an append whose node is removed before its swing, a popper stopped with
 * the head frozen, ...). */
static _Thread_local unsigned hook_tick;
#define LF_LIST_TEST_HOOK(op, l)                                                      \
	do {                                                                          \
		const char *op_ = #op;                                                \
		if ((op_[0] == 's' || op_[0] == 'f' || op_[0] == 'm' || op_[0] == 'u') && \
		    (++hook_tick & 7) == 0)                                           \
			for (int i_ = 0; i_ < 64; i_++)                               \
				ksync_cpu_relax();                                    \
	} while (0)

#include <ksync/ktest.h>
#include <ksync/lf_epoch.h>
#include <ksync/lf_list.h>
#include "stress_common.h"

#define MAX_THREADS 4
#define KEYS 96
#define MAGIC 0x11517ed0u

struct item {
	struct lf_list_node link;
	struct lf_epoch_entry retire;
	uint32_t key;
	uint32_t magic;		/* atomic: readers check it, free poisons it */
};

static struct lf_list list;
static struct lf_epoch dom;
static uint32_t present[KEYS];	/* atomic */
static unsigned nthreads_live;
static unsigned nkeys_live;	/* keys in this case (<= KEYS) */
static int use_pop;
static uint32_t gate;
static uint64_t freed_items;	/* atomic */

struct worker {
	pthread_t th;
	unsigned idx;
	uint64_t ops, seed;
	uint64_t errors, inserts, removes, pops, finds, found;
};

static struct item *item_of(const struct lf_list_node *n)
{
	return lf_list_entry(n, struct item, link);
}

static int key_is(const struct lf_list_node *n, void *arg)
{
	return item_of(n)->key == *(uint32_t *)arg;
}

static void free_item(struct lf_epoch_entry *e)
{
	struct item *it = (struct item *)(void *)((char *)e - offsetof(struct item, retire));

	ksync_store_relaxed_u32(&it->magic, 0xdeadu);
	ksync_fetch_add_relaxed_u64(&freed_items, 1);
	free(it);
}

static int check_item(const struct lf_list_node *n)
{
	struct item *it = item_of(n);

	return ksync_load_relaxed_u32(&it->magic) == MAGIC && it->key < KEYS;
}

/* Bookkeeping after this thread removed n: it must have been present, must be unlinked. */
static void removed(struct worker *w, struct lf_epoch_record *r, struct lf_list_node *n)
{
	struct item *it = item_of(n);

	if (!check_item(n))
		w->errors++;
	if (ksync_exchange_acq_rel_u32(&present[it->key], 0) != 1)
		w->errors++;
	if (lf_list_linked(&list, n) != 0)
		w->errors++;
	lf_epoch_retire(r, &it->retire, free_item);
	/* free as early as the epoch rule allows, so a node still reachable from
	 * anywhere (the tail hint included) is freed while it can still be reached */
	lf_epoch_collect(r);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct lf_epoch_record *r;
	struct lf_list_node *n;
	unsigned per = nkeys_live / nthreads_live;

	if (lf_epoch_register(&dom, &r) != KSYNC_OK) {
		w->errors++;
		return NULL;
	}
	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	for (uint64_t i = 0; i < w->ops; i++) {
		uint64_t x = rnd(&w->seed);
		uint32_t mine = (uint32_t)((x >> 8) % per) * nthreads_live + w->idx;
		uint32_t any = (uint32_t)((x >> 24) % nkeys_live);
		unsigned op = (unsigned)(x & 15);

		lf_epoch_enter(r);
		if (op < 5) {				/* insert own key if absent */
			if (ksync_load_acquire_u32(&present[mine]) == 0) {
				struct item *it = malloc(sizeof(*it));

				if (!it) {
					w->errors++;
				} else {
					it->key = mine;
					ksync_store_relaxed_u32(&it->magic, MAGIC);
					if (ksync_exchange_acq_rel_u32(&present[mine], 1) != 0)
						w->errors++;
					if (x & 16)
						lf_list_insert_head_mpmc(&list, &it->link);
					else
						lf_list_insert_tail_mpmc(&list, &it->link);
					w->inserts++;
				}
			}
		} else if (op < 7) {			/* remove own key by predicate */
			if (lf_list_remove_if_mpmc(&list, key_is, &mine, &n) == KSYNC_OK) {
				if (item_of(n)->key != mine)
					w->errors++;
				removed(w, r, n);
				w->removes++;
			}
		} else if (op < 9) {			/* remove own key by pointer */
			if (lf_list_find(&list, key_is, &mine, &n) == KSYNC_OK &&
			    lf_list_remove_mpmc(&list, n) == KSYNC_OK) {
				removed(w, r, n);
				w->removes++;
			}
		} else if (op < 10 && use_pop) {	/* anybody's first node */
			if (lf_list_pop_head_mpmc(&list, &n) == KSYNC_OK) {
				removed(w, r, n);
				w->pops++;
			}
		} else if (op < 13) {			/* lookup own key */
			int f = lf_list_find(&list, key_is, &mine, &n) == KSYNC_OK;

			w->finds++;
			if (f && (!check_item(n) || item_of(n)->key != mine))
				w->errors++;
			/* only the owner changes key `mine` when nobody pops: exact */
			if (!use_pop && f != (int)ksync_load_acquire_u32(&present[mine]))
				w->errors++;
			w->found += (uint64_t)f;
		} else {				/* lookup any key, walk */
			w->finds++;
			if (lf_list_find(&list, key_is, &any, &n) == KSYNC_OK) {
				w->found++;
				if (!check_item(n) || item_of(n)->key != any)
					w->errors++;
			}
			if ((x & 0xf00) == 0) {
				size_t c;

				lf_list_count(&list, &c);
				if (c > nkeys_live)
					w->errors++;
			}
		}
		lf_epoch_exit(r);
	}
	lf_epoch_unregister(r);
	return NULL;
}

static void run(struct ktest_ctx *kt, unsigned nthreads, int with_pop, unsigned nkeys)
{
	struct worker w[MAX_THREADS];
	uint64_t total = stress_ops(), errors = 0, ins = 0, rem = 0, pops = 0, finds = 0;
	uint64_t found = 0, live = 0;
	unsigned seen[KEYS] = { 0 };
	struct lf_epoch_record *r;
	struct lf_list_node *n;
	size_t count = 0;

	lf_list_init(&list);
	lf_epoch_init(&dom);
	for (unsigned k = 0; k < KEYS; k++)
		present[k] = 0;
	nthreads_live = nthreads;
	nkeys_live = nkeys;
	use_pop = with_pop;
	freed_items = 0;
	gate = nthreads;
	for (unsigned t = 0; t < nthreads; t++) {
		w[t] = (struct worker){ .idx = t, .ops = total / nthreads,
					.seed = 0x9e3779b97f4a7c15ull ^ (0x1234567ull * (t + 1)) };
		KT_ASSERT_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		KT_ASSERT_EQ(pthread_join(w[t].th, NULL), 0);
		errors += w[t].errors;
		ins += w[t].inserts;
		rem += w[t].removes;
		pops += w[t].pops;
		finds += w[t].finds;
		found += w[t].found;
	}
	KT_EXPECT_EQ(errors, 0);

	/* Final contents = the expected set; nothing deleted is still linked. */
	uint64_t w0 = ksync_load_acquire_u64(&list.head);
	for (n = lf_list__node(w0); n && count <= KEYS; n = lf_list__node(n->next), count++) {
		struct item *it = item_of(n);

		KT_EXPECT_EQ(n->next & LF_LIST__DEL, 0);
		KT_ASSERT(it->key < KEYS);
		seen[it->key]++;
	}
	for (unsigned k = 0; k < KEYS; k++) {
		KT_EXPECT_EQ(seen[k], present[k]);
		live += present[k];
	}
	KT_EXPECT_EQ(count, live);
	KT_EXPECT_EQ(ins, rem + pops + live);
	if (list.tail.lo)
		KT_EXPECT_EQ(lf_list_linked(&list, lf_list__node(list.tail.lo)), 1);

	/* Empty the list and reclaim everything (ASan checks for leaks). */
	KT_ASSERT_EQ(lf_epoch_register(&dom, &r), KSYNC_OK);
	lf_epoch_enter(r);
	while (lf_list_pop_head_mpmc(&list, &n) == KSYNC_OK)
		lf_epoch_retire(r, &item_of(n)->retire, free_item);
	lf_epoch_exit(r);
	lf_epoch_barrier(r);
	lf_epoch_unregister(r);
	KT_EXPECT_EQ(lf_epoch_destroy(&dom), KSYNC_OK);
	KT_EXPECT_EQ(freed_items, ins);
	kt_diag(kt, "%u threads%s, %u keys, %llu ops: %llu inserts, %llu removes, %llu pops, "
		"%llu lookups (%llu hits), %llu live at the end", nthreads,
		with_pop ? " with pop_head" : "", nkeys, (unsigned long long)total,
		(unsigned long long)ins, (unsigned long long)rem, (unsigned long long)pops,
		(unsigned long long)finds, (unsigned long long)found, (unsigned long long)live);
}

KTEST(stress_lf_list_2threads)
{
	run(kt, 2, 1, KEYS);
}

KTEST(stress_lf_list_4threads)
{
	run(kt, 4, 1, KEYS);
}

/* Few keys: the list is often empty or one node long, so the node just appended is
 * also the first (popped during its append's swing) and the hint names the first. */
KTEST(stress_lf_list_4threads_8keys)
{
	run(kt, 4, 1, 8);
}

KTEST(stress_lf_list_4threads_exact_lookups)
{
	run(kt, 4, 0, KEYS);
}
