/*
 * cmp_peers_ksync.h - libksync's stack and mpmc queues as bench/cmp_peers.c drives them,
 * included by two translation units so the comparison can show what the backoff adds:
 *   bench/cmp_peers.c                  as shipped (include/ksync/backoff.h's default);
 *                                      CMP_KSYNC_TABLE = cmp_ksync, rows "ksync"
 *   bench/cmp_peers/ksync_nobackoff.c  KSYNC_BACKOFF_MAX 0 defined before any ksync
 *                                      header; cmp_ksync_nobackoff, "ksync-nobackoff"
 * libksync's objects are header-only (static inline), so each unit compiles its own copy
 * with its own KSYNC_BACKOFF_MAX. The includer defines CMP_KSYNC_TABLE and
 * CMP_KSYNC_NAME. The spsc queue has no CAS and no backoff: it is in cmp_peers.c only.
 * Two mpmc queues: lf_fifo_mpmc.h (any element size, NCQ index rings; rows "ksync...")
 * in CMP_KSYNC_TABLE[1], and lf_fifo_mpmc_word.h (8-byte words in 16-byte cells; rows
 * "ksync...-word") in CMP_KSYNC_TABLE##_word[0], declared here (cmp_peers.h declares the
 * two-entry tables only).
 *
 * Papers: Massalin & Pu 1991, "LIFO stacks" and "FIFO queues" (the objects); the
 * backoff is ksync's addition (include/ksync/backoff.h), not the paper's.
 */
#ifndef CMP_KSYNC_TABLE
#error "define CMP_KSYNC_TABLE and CMP_KSYNC_NAME before including cmp_peers_ksync.h"
#endif

#include <stdint.h>
#include <stdlib.h>

#include <ksync/lf_fifo_mpmc.h>
#include <ksync/lf_fifo_mpmc_word.h>
#include <ksync/lf_stack.h>

#include "cmp_peers.h"

/* stack: each thread keeps one node in hand, pushes it and pops one back */
struct kst_node {
	struct lf_stack_node link;
};
/* Shared by all threads: the stack (lf_stack's own atomics). */
static _Alignas(CMP_LINE) struct lf_stack kst;
/* Nodes: each is in the stack or in exactly one thread's hand (kst_hand[t], private to
 * thread t between pairs); written before the threads start. */
static struct kst_node *kst_nodes;
static struct kst_node *kst_hand[CMP_MAXT];

static void kst_init(unsigned nt)
{
	lf_stack_init(&kst);
	kst_nodes = aligned_alloc(CMP_LINE, sizeof *kst_nodes * (CMP_PREFILL_PER_THREAD + 1) * CMP_MAXT);
	if (!kst_nodes)
		abort();
	for (unsigned i = 0; i < (CMP_PREFILL_PER_THREAD + 1) * nt; i++) {
		if (i < nt)
			kst_hand[i] = &kst_nodes[i];
		else
			lf_stack_push_mpmc(&kst, &kst_nodes[i].link);
	}
}

static CMP_FN void kst_pair(unsigned t)
{
	struct lf_stack_node *n;

	lf_stack_push_mpmc(&kst, &kst_hand[t]->link);
	while (lf_stack_pop_mpmc(&kst, &n) < 0)
		cmp_retries[t].n++;
	kst_hand[t] = lf_stack_entry(n, struct kst_node, link);
}

static void kst_fini(void)
{
	free(kst_nodes);
}

/* mpmc queue of 8-byte elements, pre-filled half full. Shared: the queue (its own
 * atomics); the storage is the queue's. */
static _Alignas(CMP_LINE) struct lf_fifo_mpmc kmq;
static void *kmq_mem;

static void kmq_init(unsigned nt)
{
	(void)nt;
	size_t bytes = lf_fifo_storage_size_mpmc(CMP_QCAP, 8);

	kmq_mem = aligned_alloc(CMP_LINE, (bytes + CMP_LINE - 1) & ~(size_t)(CMP_LINE - 1));
	if (!kmq_mem || lf_fifo_init_mpmc(&kmq, kmq_mem, bytes, CMP_QCAP, 8, NULL) != 0)
		abort();
	for (uint64_t i = 0; i < CMP_QCAP / 2; i++)
		lf_fifo_enqueue_mpmc(&kmq, &i);
}

static CMP_FN void kmq_pair(unsigned t)
{
	uint64_t v = t, out;

	while (lf_fifo_enqueue_mpmc(&kmq, &v) < 0)
		cmp_retries[t].n++;
	while (lf_fifo_dequeue_mpmc(&kmq, &out) < 0)
		cmp_retries[t].n++;
}

static void kmq_fini(void)
{
	free(kmq_mem);
}

/* mpmc queue of words (lf_fifo_mpmc_word.h), pre-filled half full like kmq. Shared: the
 * queue (its own atomics); the storage is the queue's. */
static _Alignas(CMP_LINE) struct lf_fifo_mpmc_word kwq;
static void *kwq_mem;

static void kwq_init(unsigned nt)
{
	(void)nt;
	size_t bytes = lf_fifo_storage_size_mpmc_word(CMP_QCAP);

	kwq_mem = aligned_alloc(CMP_LINE, (bytes + CMP_LINE - 1) & ~(size_t)(CMP_LINE - 1));
	if (!kwq_mem || lf_fifo_init_mpmc_word(&kwq, kwq_mem, bytes, CMP_QCAP) != 0)
		abort();
	for (uint64_t i = 0; i < CMP_QCAP / 2; i++)
		lf_fifo_enqueue_mpmc_word(&kwq, i);
}

static CMP_FN void kwq_pair(unsigned t)
{
	uint64_t out;

	while (lf_fifo_enqueue_mpmc_word(&kwq, t) < 0)
		cmp_retries[t].n++;
	while (lf_fifo_dequeue_mpmc_word(&kwq, &out) < 0)
		cmp_retries[t].n++;
}

static void kwq_fini(void)
{
	free(kwq_mem);
}

#define CMP__CAT2(a, b) a##b
#define CMP__CAT(a, b) CMP__CAT2(a, b)
extern const struct cmp_impl CMP__CAT(CMP_KSYNC_TABLE, _word)[1];
const struct cmp_impl CMP__CAT(CMP_KSYNC_TABLE, _word)[1] = {
	{ "mpmc", CMP_KSYNC_NAME "-word", KSYNC_BACKOFF_MAX, kwq_init, kwq_pair, kwq_fini },
};

const struct cmp_impl CMP_KSYNC_TABLE[2] = {
	{ "stack", CMP_KSYNC_NAME, KSYNC_BACKOFF_MAX, kst_init, kst_pair, kst_fini },
	{ "mpmc", CMP_KSYNC_NAME, KSYNC_BACKOFF_MAX, kmq_init, kmq_pair, kmq_fini },
};
