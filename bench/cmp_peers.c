/*
 * cmp_peers.c - libksync's stack and queues side by side with today's peers, in one
 * run on one machine (hosted, real CPU): Concurrency Kit 0.7 (ck_stack, ck_ring,
 * ck_fifo) and liburcu 0.13 (lfstack, wfcqueue), as Debian 12 ships them.
 *
 * Structures and the operation pair timed for each:
 *   stack  push + pop       ksync lf_stack_*_mpmc | ck_stack_*_mpmc | urcu cds_lfs_push +
 *                           cds_lfs_pop_blocking (urcu's pop needs mutual exclusion or an
 *                           RCU grace period before reuse; _blocking is its mutex form)
 *   mpmc   enqueue + dequeue ksync lf_fifo_*_mpmc | ck_ring_*_mpmc | urcu cds_wfcq_enqueue +
 *                           cds_wfcq_dequeue_blocking (dequeuers mutually excluded)
 *   spsc   enqueue + dequeue ksync lf_fifo_*_spsc | ck_ring_*_spsc | ck_fifo_spsc
 *
 * Metrics (KSYNC {"kind":"cmp",...} lines, one per structure x implementation x metric):
 *   latency     one thread, the pair uncontended: TSC ticks per pair, min/median/p99
 *               over 200 batches of 256 pairs, empty loop subtracted (measure.h).
 *   throughput  stack/mpmc: T threads (1..CPUs) each doing P pairs on the shared object;
 *               spsc: one producer and one consumer moving P items. Million pairs (or
 *               items) per second of wall time, min/median/max over R runs.
 * Usage: cmp_peers [pairs-per-thread [runs]]   (defaults 400000 and 5)
 *
 * Every object is pre-filled (stack: 64 nodes per thread; queues: half full) so pops
 * and dequeues rarely find it empty; an empty or full result is retried and counted.
 * Threads are pinned to CPU (i mod CPUs). Nothing here is a test: no thresholds.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE	/* liburcu: the static inline versions, as its own users get */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ck_fifo.h>
#include <ck_ring.h>
#include <ck_stack.h>
#include <urcu/lfstack.h>
#include <urcu/wfcqueue.h>

#include <ksync/lf_fifo_mpmc.h>
#include <ksync/lf_fifo_spsc.h>
#include <ksync/lf_stack.h>
#include <ksync/measure.h>

#define MAXT 64
#define QCAP 1024		/* queue capacity (power of two for every implementation) */
#define PREFILL_PER_THREAD 64

static unsigned ncpus;
static unsigned long pairs = 400000;
static unsigned runs = 5;

/* ---- one implementation = init + per-thread pair + fini ------------------------------ */

struct impl {
	const char *structure, *name;
	void (*init)(unsigned nthreads);
	void (*pair)(unsigned tid);		/* one push+pop / enqueue+dequeue */
	void (*fini)(void);
};

static volatile unsigned long retries;	/* empty/full retries, for the record (racy count) */

/* ksync stack */
struct kst_node { struct lf_stack_node link; };
static struct lf_stack kst;
static struct kst_node *kst_nodes;
static struct kst_node *kst_hand[MAXT];
static void kst_init(unsigned nt)
{
	lf_stack_init(&kst);
	kst_nodes = aligned_alloc(64, sizeof *kst_nodes * (PREFILL_PER_THREAD + 1) * MAXT);
	for (unsigned i = 0; i < (PREFILL_PER_THREAD + 1) * nt; i++) {
		if (i < nt)
			kst_hand[i] = &kst_nodes[i];
		else
			lf_stack_push_mpmc(&kst, &kst_nodes[i].link);
	}
}
static void kst_pair(unsigned t)
{
	struct lf_stack_node *n;
	lf_stack_push_mpmc(&kst, &kst_hand[t]->link);
	while (lf_stack_pop_mpmc(&kst, &n) < 0)
		retries++;
	kst_hand[t] = lf_stack_entry(n, struct kst_node, link);
}
static void kst_fini(void) { free(kst_nodes); }

/* ck stack */
static ck_stack_t cks;
static ck_stack_entry_t *cks_nodes, *cks_hand[MAXT];
static void cks_init(unsigned nt)
{
	ck_stack_init(&cks);
	cks_nodes = aligned_alloc(64, sizeof *cks_nodes * (PREFILL_PER_THREAD + 1) * MAXT);
	for (unsigned i = 0; i < (PREFILL_PER_THREAD + 1) * nt; i++) {
		if (i < nt)
			cks_hand[i] = &cks_nodes[i];
		else
			ck_stack_push_mpmc(&cks, &cks_nodes[i]);
	}
}
static void cks_pair(unsigned t)
{
	ck_stack_entry_t *n;
	ck_stack_push_mpmc(&cks, cks_hand[t]);
	while (!(n = ck_stack_pop_mpmc(&cks)))
		retries++;
	cks_hand[t] = n;
}
static void cks_fini(void) { free(cks_nodes); }

/* urcu lfstack */
static struct cds_lfs_stack ust;
static struct cds_lfs_node *ust_nodes, *ust_hand[MAXT];
static void ust_init(unsigned nt)
{
	cds_lfs_init(&ust);
	ust_nodes = aligned_alloc(64, sizeof *ust_nodes * (PREFILL_PER_THREAD + 1) * MAXT);
	for (unsigned i = 0; i < (PREFILL_PER_THREAD + 1) * nt; i++) {
		cds_lfs_node_init(&ust_nodes[i]);
		if (i < nt)
			ust_hand[i] = &ust_nodes[i];
		else
			cds_lfs_push(&ust, &ust_nodes[i]);
	}
}
static void ust_pair(unsigned t)
{
	struct cds_lfs_node *n;
	cds_lfs_push(&ust, ust_hand[t]);
	while (!(n = cds_lfs_pop_blocking(&ust)))
		retries++;
	ust_hand[t] = n;
}
static void ust_fini(void) { cds_lfs_destroy(&ust); free(ust_nodes); }

/* ksync mpmc queue of 8-byte elements */
static struct lf_fifo_mpmc kmq;
static void *kmq_mem;
static void kmq_init(unsigned nt)
{
	(void)nt;
	size_t bytes = lf_fifo_storage_size_mpmc(QCAP, 8);
	kmq_mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (lf_fifo_init_mpmc(&kmq, kmq_mem, bytes, QCAP, 8, NULL) != 0)
		abort();
	for (uint64_t i = 0; i < QCAP / 2; i++)
		lf_fifo_enqueue_mpmc(&kmq, &i);
}
static void kmq_pair(unsigned t)
{
	uint64_t v = t, out;
	while (lf_fifo_enqueue_mpmc(&kmq, &v) < 0)
		retries++;
	while (lf_fifo_dequeue_mpmc(&kmq, &out) < 0)
		retries++;
}
static void kmq_fini(void) { free(kmq_mem); }

/* ck_ring mpmc */
static ck_ring_t ckr;
static ck_ring_buffer_t *ckr_buf;
static void ckr_init(unsigned nt)
{
	(void)nt;
	ckr_buf = aligned_alloc(64, sizeof *ckr_buf * QCAP);
	ck_ring_init(&ckr, QCAP);
	for (uintptr_t i = 0; i < QCAP / 2; i++)
		ck_ring_enqueue_mpmc(&ckr, ckr_buf, (void *)(i + 1));
}
static void ckr_pair(unsigned t)
{
	void *out;
	while (!ck_ring_enqueue_mpmc(&ckr, ckr_buf, (void *)(uintptr_t)(t + 1)))
		retries++;
	while (!ck_ring_dequeue_mpmc(&ckr, ckr_buf, &out))
		retries++;
}
static void ckr_fini(void) { free(ckr_buf); }

/* urcu wfcqueue (intrusive: each thread keeps one node in hand) */
static struct cds_wfcq_head uwq_head;
static struct cds_wfcq_tail uwq_tail;
static struct cds_wfcq_node *uwq_nodes, *uwq_hand[MAXT];
static void uwq_init(unsigned nt)
{
	cds_wfcq_init(&uwq_head, &uwq_tail);
	uwq_nodes = aligned_alloc(64, sizeof *uwq_nodes * (QCAP / 2 + MAXT));
	for (unsigned i = 0; i < QCAP / 2 + nt; i++) {
		cds_wfcq_node_init(&uwq_nodes[i]);
		if (i < nt)
			uwq_hand[i] = &uwq_nodes[i];
		else
			cds_wfcq_enqueue(&uwq_head, &uwq_tail, &uwq_nodes[i]);
	}
}
static void uwq_pair(unsigned t)
{
	struct cds_wfcq_node *n;
	cds_wfcq_node_init(uwq_hand[t]);
	cds_wfcq_enqueue(&uwq_head, &uwq_tail, uwq_hand[t]);
	while (!(n = cds_wfcq_dequeue_blocking(&uwq_head, &uwq_tail)))
		retries++;
	uwq_hand[t] = n;
}
static void uwq_fini(void) { cds_wfcq_destroy(&uwq_head, &uwq_tail); free(uwq_nodes); }

/* ksync spsc */
static struct lf_fifo_spsc ksq;
static void *ksq_mem;
static void ksq_init(unsigned nt)
{
	(void)nt;
	size_t bytes = lf_fifo_storage_size_spsc(QCAP, 8);
	ksq_mem = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (lf_fifo_init_spsc(&ksq, ksq_mem, bytes, QCAP, 8, NULL) != 0)
		abort();
}
static int ksq_put(uint64_t v) { return lf_fifo_enqueue_spsc(&ksq, &v) == 0; }
static int ksq_get(uint64_t *v) { return lf_fifo_dequeue_spsc(&ksq, v) == 0; }
static void ksq_fini(void) { free(ksq_mem); }

/* ck_ring spsc */
static ck_ring_t cksr;
static ck_ring_buffer_t *cksr_buf;
static void cksr_init(unsigned nt)
{
	(void)nt;
	cksr_buf = aligned_alloc(64, sizeof *cksr_buf * QCAP);
	ck_ring_init(&cksr, QCAP);
}
static int cksr_put(uint64_t v) { return ck_ring_enqueue_spsc(&cksr, cksr_buf, (void *)(uintptr_t)(v + 1)); }
static int cksr_get(uint64_t *v)
{
	void *p;
	if (!ck_ring_dequeue_spsc(&cksr, cksr_buf, &p))
		return 0;
	*v = (uint64_t)(uintptr_t)p - 1;
	return 1;
}
static void cksr_fini(void) { free(cksr_buf); }

/* ck_fifo spsc (unbounded, node-based: entries recycled through ck_fifo_spsc_recycle) */
static ck_fifo_spsc_t ckf;
static void ckf_init(unsigned nt)
{
	(void)nt;
	ck_fifo_spsc_init(&ckf, malloc(sizeof(ck_fifo_spsc_entry_t)));
}
static int ckf_put(uint64_t v)
{
	ck_fifo_spsc_entry_t *e = ck_fifo_spsc_recycle(&ckf);
	if (!e)
		e = malloc(sizeof *e);
	ck_fifo_spsc_enqueue(&ckf, e, (void *)(uintptr_t)(v + 1));
	return 1;
}
static int ckf_get(uint64_t *v)
{
	void *p;
	if (!ck_fifo_spsc_dequeue(&ckf, &p))
		return 0;
	*v = (uint64_t)(uintptr_t)p - 1;
	return 1;
}
static void ckf_fini(void)
{
	ck_fifo_spsc_entry_t *garbage = NULL, *e;
	ck_fifo_spsc_deinit(&ckf, &garbage);
	while (garbage) {
		e = garbage->next;
		free(garbage);
		garbage = e;
	}
}

/* ---- drivers ----------------------------------------------------------------------- */

static void pin(unsigned cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu % ncpus, &s);
	sched_setaffinity(0, sizeof s, &s);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const struct impl *cur;
static pthread_barrier_t bar;
/* Each worker stamps its own start and end, so a descheduled main thread cannot shrink
 * the interval: a run lasts from the earliest start to the latest end. */
static double t_start[MAXT], t_end[MAXT];

static void *mt_worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	pin(t);
	pthread_barrier_wait(&bar);
	t_start[t] = now();
	for (unsigned long i = 0; i < pairs; i++)
		cur->pair(t);
	t_end[t] = now();
	return NULL;
}

static double span(unsigned n)
{
	double a = t_start[0], b = t_end[0];
	for (unsigned i = 1; i < n; i++) {
		a = t_start[i] < a ? t_start[i] : a;
		b = t_end[i] > b ? t_end[i] : b;
	}
	return b - a;
}

static double run_mt(const struct impl *im, unsigned nt)
{
	pthread_t th[MAXT];
	cur = im;
	im->init(nt);
	pthread_barrier_init(&bar, NULL, nt);
	for (unsigned t = 0; t < nt; t++)
		pthread_create(&th[t], NULL, mt_worker, (void *)(uintptr_t)t);
	for (unsigned t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	double dt = span(nt);
	pthread_barrier_destroy(&bar);
	im->fini();
	return (double)pairs * nt / dt / 1e6;
}

struct spsc_impl {
	const char *name;
	void (*init)(unsigned);
	int (*put)(uint64_t);
	int (*get)(uint64_t *);
	void (*fini)(void);
};
static const struct spsc_impl *scur;
static volatile int spsc_order_ok;

static void *spsc_consumer(void *arg)
{
	(void)arg;
	pin(1);
	pthread_barrier_wait(&bar);
	t_start[1] = now();
	uint64_t v, expect = 0;
	int ok = 1;
	while (expect < pairs) {
		if (!scur->get(&v)) {
			retries++;
			continue;
		}
		ok &= v == expect;
		expect++;
	}
	spsc_order_ok = ok;
	t_end[1] = now();
	return NULL;
}

static double run_spsc(const struct spsc_impl *im)
{
	pthread_t c;
	scur = im;
	im->init(2);
	pthread_barrier_init(&bar, NULL, 2);
	pthread_create(&c, NULL, spsc_consumer, NULL);
	pin(0);
	pthread_barrier_wait(&bar);
	t_start[0] = now();
	for (uint64_t i = 0; i < pairs; i++)
		while (!im->put(i))
			retries++;
	t_end[0] = now();
	pthread_join(c, NULL);
	double dt = span(2);
	pthread_barrier_destroy(&bar);
	im->fini();
	if (!spsc_order_ok) {
		fprintf(stderr, "cmp_peers: %s spsc delivered items out of order\n", im->name);
		exit(1);
	}
	return (double)pairs / dt / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void emit_tput(const char *structure, const char *name, unsigned threads, double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	printf("KSYNC {\"kind\":\"cmp\",\"structure\":\"%s\",\"impl\":\"%s\",\"metric\":\"throughput\","
	       "\"unit\":\"Mops/s\",\"threads\":%u,\"runs\":%u,\"pairs_per_thread\":%lu,"
	       "\"min\":%.3f,\"median\":%.3f,\"max\":%.3f}\n",
	       structure, name, threads, n, pairs, v[0], v[(n - 1) / 2], v[n - 1]);
	fflush(stdout);
}

static void emit_lat(const char *structure, const char *name, uint64_t *t, uint64_t *e)
{
	struct ksync_prim_result r = ksync_prim_compute(t, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH,
							e, KSYNC_PRIM_BATCHES);
	char mn[24], md[24], p99[24];
	ksync_fixed2_format(mn, sizeof mn, r.min_x100);
	ksync_fixed2_format(md, sizeof md, r.median_x100);
	ksync_fixed2_format(p99, sizeof p99, r.p99_x100);
	printf("KSYNC {\"kind\":\"cmp\",\"structure\":\"%s\",\"impl\":\"%s\",\"metric\":\"latency\","
	       "\"unit\":\"tsc_ticks\",\"threads\":1,\"batches\":%d,\"ops_per_batch\":%d,"
	       "\"min\":%s,\"median\":%s,\"p99\":%s}\n",
	       structure, name, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, mn, md, p99);
	fflush(stdout);
}

static uint64_t lt[KSYNC_PRIM_BATCHES], le[KSYNC_PRIM_BATCHES];

int main(int argc, char **argv)
{
	if (argc > 1)
		pairs = strtoul(argv[1], NULL, 10);
	if (argc > 2)
		runs = (unsigned)strtoul(argv[2], NULL, 10);
	if (!pairs || !runs || runs > 100) {
		fprintf(stderr, "usage: cmp_peers [pairs-per-thread >= 1 [runs 1..100]]\n");
		return 2;
	}
	ncpus = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpus > MAXT)
		ncpus = MAXT;
	static const struct impl mt[] = {
		{ "stack", "ksync", kst_init, kst_pair, kst_fini },
		{ "stack", "ck", cks_init, cks_pair, cks_fini },
		{ "stack", "urcu", ust_init, ust_pair, ust_fini },
		{ "mpmc", "ksync", kmq_init, kmq_pair, kmq_fini },
		{ "mpmc", "ck", ckr_init, ckr_pair, ckr_fini },
		{ "mpmc", "urcu", uwq_init, uwq_pair, uwq_fini },
	};
	static const struct spsc_impl sp[] = {
		{ "ksync", ksq_init, ksq_put, ksq_get, ksq_fini },
		{ "ck", cksr_init, cksr_put, cksr_get, cksr_fini },
		{ "ck_fifo", ckf_init, ckf_put, ckf_get, ckf_fini },
	};
	printf("ktap: KTAP version 1\nktap: 1..3\n");
	printf("ktap: # %u CPUs, %lu pairs per thread, %u runs\n", ncpus, pairs, runs);

	/* uncontended latency, one thread pinned to CPU 0 */
	pin(0);
	for (size_t i = 0; i < sizeof mt / sizeof mt[0]; i++) {
		mt[i].init(1);
		KSYNC_MEASURE(le, 16, KSYNC_PRIM_OPS_PER_BATCH, mt[i].pair(0));	/* warm-up */
		KSYNC_MEASURE(le, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, (void)0);
		KSYNC_MEASURE(lt, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, mt[i].pair(0));
		emit_lat(mt[i].structure, mt[i].name, lt, le);
		mt[i].fini();
	}
	for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
		uint64_t v;
		sp[i].init(1);
		KSYNC_MEASURE(le, 16, KSYNC_PRIM_OPS_PER_BATCH, (sp[i].put(1), sp[i].get(&v)));
		KSYNC_MEASURE(le, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, (void)0);
		KSYNC_MEASURE(lt, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, (sp[i].put(1), sp[i].get(&v)));
		emit_lat("spsc", sp[i].name, lt, le);
		sp[i].fini();
	}
	printf("ktap: ok 1 latency\n");

	/* contended throughput at 1..ncpus threads, runs interleaved across implementations */
	double v[sizeof mt / sizeof mt[0]][100];
	for (unsigned nt = 1; nt <= ncpus; nt++) {
		for (unsigned r = 0; r < runs; r++)
			for (size_t i = 0; i < sizeof mt / sizeof mt[0]; i++)
				v[i][r] = run_mt(&mt[i], nt);
		for (size_t i = 0; i < sizeof mt / sizeof mt[0]; i++)
			emit_tput(mt[i].structure, mt[i].name, nt, v[i], runs);
	}
	printf("ktap: ok 2 throughput\n");
	double s[sizeof sp / sizeof sp[0]][100];
	if (ncpus >= 2) {
		for (unsigned r = 0; r < runs; r++)
			for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
				s[i][r] = run_spsc(&sp[i]);
		for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++)
			emit_tput("spsc", sp[i].name, 2, s[i], runs);
		printf("ktap: ok 3 spsc\n");
	} else {
		printf("ktap: ok 3 spsc # SKIP needs 2 CPUs\n");
	}
	printf("ktap: # empty/full retries (racy count): %lu\n", retries);
	return 0;
}
