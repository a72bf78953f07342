/*
 * cmp_peers.c - libksync's stack and queues side by side with today's peers, in one
 * run on one machine (hosted, real CPU): Concurrency Kit 0.7 (ck_stack, ck_ring,
 * ck_fifo) and liburcu 0.13 (lfstack, wfcqueue), as Debian 12 ships them.
 *
 * Structures and the operation pair timed for each:
 *   stack  push + pop       ksync lf_stack_*_mpmc | ksync-index lf_istack_*_mpmc (indices
 *                           into a pool, one 8-byte CAS each; no backoff) | ck_stack_*_mpmc
 *                           | urcu cds_lfs_push + cds_lfs_pop_blocking (urcu's pop needs
 *                           mutual exclusion or an RCU grace period before reuse;
 *                           _blocking is its mutex form)
 *   mpmc   enqueue + dequeue ksync lf_fifo_*_mpmc | ksync-word lf_fifo_*_mpmc_word (8-byte
 *                           words only) | ck_ring_*_mpmc | urcu cds_wfcq_enqueue +
 *                           cds_wfcq_dequeue_blocking (dequeuers mutually excluded)
 *   spsc   enqueue + dequeue ksync lf_fifo_*_spsc_word | ck_ring_*_spsc | ck_fifo_spsc
 *                           (both rings take the 8-byte entry by value; the general
 *                           lf_fifo_enqueue_spsc copies it from a pointer)
 * libksync backs off after a failed CAS (include/ksync/backoff.h) and the peers do not:
 * stack and mpmc also run as "ksync-nobackoff", the same code compiled with
 * KSYNC_BACKOFF_MAX 0 (bench/cmp_peers/ksync_nobackoff.c). spsc has no CAS to back off.
 *
 * Method (DESIGN.md, "Measurement discipline": a comparison is a ratio of medians from
 * repeated, interleaved runs in one session, printed with its spread):
 *   - every cell (structure x metric x threads x implementation) is measured in R runs
 *     of at least M ms each; the runs are interleaved round-robin over the
 *     implementations of the same metric and thread count (round r starts at
 *     implementation r mod n, so no implementation always runs first);
 *   - latency: one thread pinned, the pair uncontended; per run, batches of 256 pairs
 *     are timed (lfence;rdtsc;lfence .. rdtscp;lfence, include/ksync/measure.h) until
 *     M ms have passed; the run's value is the median batch per pair in TSC ticks, with
 *     the run's empty-loop median subtracted;
 *   - throughput: T threads (1, 2, 4 .. and the number of usable CPUs, or the list given
 *     as the third argument: ksync run --threads), thread t pinned
 *     to the t-th CPU of the affinity mask, each doing pairs on the shared object until
 *     the main thread stops them after M ms; the run's value is all threads' pairs over
 *     the span from the earliest start to the latest end, in million pairs per second.
 *     spsc: one producer and one consumer (2 CPUs), items moved per second;
 *   - each cell prints its R run values, their median (the mean of the two middle ones
 *     when R is even) and their spread lo..hi = min..max of the run values.
 *
 * Output: KSYNC {"kind":"cmp_setup",...} first (CPU model, usable CPUs, run length and
 * count, the 1-minute load average), then one KSYNC {"kind":"cmp",...} line per cell:
 * structure, impl, backoff_max (libksync only), metric, unit, threads, runs, run_ms
 * (asked), min_run_ms (the shortest run as measured), min_cpu_share (the lowest share of
 * a run's wall time its measured threads spent on a CPU: below 1, other processes took
 * the CPU during the run), values, median, lo, hi, spread ("min..max"); last KSYNC {"kind":"cmp_end",...} (elapsed seconds, load average).
 * Usage: cmp_peers [run-ms [runs]]   (defaults 200 and 5; run-ms 1..10000, runs 1..100)
 *
 * Every object starts its own cache line and is pre-filled (stack: 64 nodes per thread;
 * queues: half full) so pops and dequeues rarely find it empty; an empty or full result
 * is retried and counted. ck_stack_pop_mpmc uses cmpxchg16b on the ck_stack_t, which
 * must therefore be 16-byte aligned: declared so (64), and checked at start.
 * Nothing here is a test: no thresholds.
 */
#define _GNU_SOURCE
#define _LGPL_SOURCE	/* liburcu: the static inline versions, as its own users get */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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

#include <ksync/lf_fifo_spsc.h>
#include <ksync/lf_istack.h>
#include <ksync/measure.h>

#include "hosted_env.h"

/* libksync's stack and mpmc queue as shipped: cmp_ksync[] ("ksync") */
#define CMP_KSYNC_TABLE cmp_ksync
#define CMP_KSYNC_NAME "ksync"
#include "cmp_peers_ksync.h"
/* the word queue's rows, defined by cmp_peers_ksync.h in each unit */
extern const struct cmp_impl cmp_ksync_nobackoff_word[1];

#if KSYNC_BACKOFF_MAX == 0
#error "cmp_peers.c measures libksync as shipped: do not build it with KSYNC_BACKOFF_MAX 0"
#endif

#define MAXT CMP_MAXT
#define QCAP CMP_QCAP
#define PREFILL_PER_THREAD CMP_PREFILL_PER_THREAD

struct cmp_retry cmp_retries[CMP_MAXT];

/* Usable CPUs (the affinity mask at start), written before any thread starts. */
static unsigned ncpus, cpus[MAXT];
static unsigned run_ms = 200, runs = 5;

/* ---- the peers ------------------------------------------------------------------------ */

/* libksync's index stack (lf_istack.h: index and generation in one 8-byte word, push
 * and pop one lock cmpxchg each), the stack of issue 27's 8-byte bar.  Shared: kis (its
 * own atomics) and kis_links (the pool's links, written only through lf_istack).
 * Indices: in the stack or in one thread's hand, as kst's nodes. */
static _Alignas(CMP_LINE) struct lf_istack kis;
static uint32_t *kis_links, kis_hand[MAXT];
static void kis_init(unsigned nt)
{
	uint32_t n = (PREFILL_PER_THREAD + 1) * nt;

	kis_links = aligned_alloc(CMP_LINE, sizeof *kis_links * (PREFILL_PER_THREAD + 1) * MAXT);
	if (!kis_links || lf_istack_init(&kis, kis_links, n) != 0)
		abort();
	for (uint32_t i = 0; i < n; i++) {
		if (i < nt)
			kis_hand[i] = i;
		else
			lf_istack_push_mpmc(&kis, i);
	}
}
static CMP_FN void kis_pair(unsigned t)
{
	uint32_t i;
	lf_istack_push_mpmc(&kis, kis_hand[t]);
	while (lf_istack_pop_mpmc(&kis, &i) < 0)
		cmp_retries[t].n++;
	kis_hand[t] = i;
}
static void kis_fini(void) { free(kis_links); }

/* ck stack. Shared: cks (ck's own atomics; pop is a cmpxchg16b on it: 16-byte aligned
 * at least, checked in main). Nodes: in the stack or in one thread's hand, as kst. */
static _Alignas(CMP_LINE) ck_stack_t cks;
static ck_stack_entry_t *cks_nodes, *cks_hand[MAXT];
static void cks_init(unsigned nt)
{
	ck_stack_init(&cks);
	cks_nodes = aligned_alloc(CMP_LINE, sizeof *cks_nodes * (PREFILL_PER_THREAD + 1) * MAXT);
	if (!cks_nodes)
		abort();
	for (unsigned i = 0; i < (PREFILL_PER_THREAD + 1) * nt; i++) {
		if (i < nt)
			cks_hand[i] = &cks_nodes[i];
		else
			ck_stack_push_mpmc(&cks, &cks_nodes[i]);
	}
}
static CMP_FN void cks_pair(unsigned t)
{
	ck_stack_entry_t *n;
	ck_stack_push_mpmc(&cks, cks_hand[t]);
	while (!(n = ck_stack_pop_mpmc(&cks)))
		cmp_retries[t].n++;
	cks_hand[t] = n;
}
static void cks_fini(void) { free(cks_nodes); }

/* urcu lfstack. Shared: ust (urcu's atomics; its mutex for pop_blocking). */
static _Alignas(CMP_LINE) struct cds_lfs_stack ust;
static struct cds_lfs_node *ust_nodes, *ust_hand[MAXT];
static void ust_init(unsigned nt)
{
	cds_lfs_init(&ust);
	ust_nodes = aligned_alloc(CMP_LINE, sizeof *ust_nodes * (PREFILL_PER_THREAD + 1) * MAXT);
	if (!ust_nodes)
		abort();
	for (unsigned i = 0; i < (PREFILL_PER_THREAD + 1) * nt; i++) {
		cds_lfs_node_init(&ust_nodes[i]);
		if (i < nt)
			ust_hand[i] = &ust_nodes[i];
		else
			cds_lfs_push(&ust, &ust_nodes[i]);
	}
}
static CMP_FN void ust_pair(unsigned t)
{
	struct cds_lfs_node *n;
	cds_lfs_push(&ust, ust_hand[t]);
	while (!(n = cds_lfs_pop_blocking(&ust)))
		cmp_retries[t].n++;
	ust_hand[t] = n;
}
static void ust_fini(void) { cds_lfs_destroy(&ust); free(ust_nodes); }

/* ck_ring mpmc. Shared: ckr (ck's atomics; it pads its producer and consumer words
 * apart itself) and the buffer slots it hands out. */
static _Alignas(CMP_LINE) ck_ring_t ckr;
static ck_ring_buffer_t *ckr_buf;
static void ckr_init(unsigned nt)
{
	(void)nt;
	ckr_buf = aligned_alloc(CMP_LINE, sizeof *ckr_buf * QCAP);
	if (!ckr_buf)
		abort();
	ck_ring_init(&ckr, QCAP);
	for (uintptr_t i = 0; i < QCAP / 2; i++)
		ck_ring_enqueue_mpmc(&ckr, ckr_buf, (void *)(i + 1));
}
static CMP_FN void ckr_pair(unsigned t)
{
	void *out;
	while (!ck_ring_enqueue_mpmc(&ckr, ckr_buf, (void *)(uintptr_t)(t + 1)))
		cmp_retries[t].n++;
	while (!ck_ring_dequeue_mpmc(&ckr, ckr_buf, &out))
		cmp_retries[t].n++;
}
static void ckr_fini(void) { free(ckr_buf); }

/* urcu wfcqueue (intrusive: each thread keeps one node in hand). Shared: head (urcu's
 * atomics, its dequeue mutex) and tail, each on a line of its own as urcu advises. */
static _Alignas(CMP_LINE) struct cds_wfcq_head uwq_head;
static _Alignas(CMP_LINE) struct cds_wfcq_tail uwq_tail;
static struct cds_wfcq_node *uwq_nodes, *uwq_hand[MAXT];
static void uwq_init(unsigned nt)
{
	cds_wfcq_init(&uwq_head, &uwq_tail);
	uwq_nodes = aligned_alloc(CMP_LINE, sizeof *uwq_nodes * (QCAP / 2 + MAXT));
	if (!uwq_nodes)
		abort();
	for (unsigned i = 0; i < QCAP / 2 + nt; i++) {
		cds_wfcq_node_init(&uwq_nodes[i]);
		if (i < nt)
			uwq_hand[i] = &uwq_nodes[i];
		else
			cds_wfcq_enqueue(&uwq_head, &uwq_tail, &uwq_nodes[i]);
	}
}
static CMP_FN void uwq_pair(unsigned t)
{
	struct cds_wfcq_node *n;
	cds_wfcq_node_init(uwq_hand[t]);
	cds_wfcq_enqueue(&uwq_head, &uwq_tail, uwq_hand[t]);
	while (!(n = cds_wfcq_dequeue_blocking(&uwq_head, &uwq_tail)))
		cmp_retries[t].n++;
	uwq_hand[t] = n;
}
static void uwq_fini(void) { cds_wfcq_destroy(&uwq_head, &uwq_tail); free(uwq_nodes); }

/* ---- spsc: one producer, one consumer -------------------------------------------------- */

struct spsc_impl {
	const char *name;
	void (*init)(void);
	int (*put)(uint64_t);		/* producer only; 0: full */
	int (*get)(uint64_t *);		/* consumer only; 0: empty */
	void (*fini)(void);
};

/* ksync spsc (the queue's own release/acquire protocol) */
static _Alignas(CMP_LINE) struct lf_fifo_spsc ksq;
static void *ksq_mem;
static void ksq_init(void)
{
	size_t bytes = lf_fifo_storage_size_spsc(QCAP, 8);
	ksq_mem = aligned_alloc(CMP_LINE, (bytes + CMP_LINE - 1) & ~(size_t)(CMP_LINE - 1));
	if (!ksq_mem || lf_fifo_init_spsc(&ksq, ksq_mem, bytes, QCAP, 8, NULL) != 0)
		abort();
}
/* The word forms: the element by value, as ck_ring's entry (the general
 * lf_fifo_enqueue_spsc takes it through a pointer: a stack round trip per put). */
static CMP_FN int ksq_put(uint64_t v) { return lf_fifo_enqueue_spsc_word(&ksq, v) == 0; }
static CMP_FN int ksq_get(uint64_t *v) { return lf_fifo_dequeue_spsc_word(&ksq, v) == 0; }
static void ksq_fini(void) { free(ksq_mem); }

/* ck_ring spsc */
static _Alignas(CMP_LINE) ck_ring_t cksr;
static ck_ring_buffer_t *cksr_buf;
static void cksr_init(void)
{
	cksr_buf = aligned_alloc(CMP_LINE, sizeof *cksr_buf * QCAP);
	if (!cksr_buf)
		abort();
	ck_ring_init(&cksr, QCAP);
}
/* The entry is the value itself (ck_ring stores any pointer-sized entry, NULL too), as
 * ksync's word form: no arithmetic in either wrapper.  (Until issue 27 the ck wrappers
 * added 1 on put and took it off on get, work the ksync side did not do: with that and
 * without CMP_FN, ck_ring's pair measured 6.91 TSC ticks, without either 5.69.) */
static CMP_FN int cksr_put(uint64_t v) { return ck_ring_enqueue_spsc(&cksr, cksr_buf, (void *)(uintptr_t)v); }
static CMP_FN int cksr_get(uint64_t *v)
{
	void *p;
	if (!ck_ring_dequeue_spsc(&cksr, cksr_buf, &p))
		return 0;
	*v = (uint64_t)(uintptr_t)p;
	return 1;
}
static void cksr_fini(void) { free(cksr_buf); }

/* ck_fifo spsc (the entry is the value itself, as for ck_ring): unbounded and node-based. Entries come from a pool of QCAP + 1 (the
 * stub included) and are recycled through ck_fifo_spsc_recycle; with the pool used up
 * and nothing to recycle the put reports "full", so the queue holds at most ~QCAP items
 * like the others (a time-bounded producer would otherwise outrun the consumer by
 * millions of allocations). ckf_used is private to the producer. */
static _Alignas(CMP_LINE) ck_fifo_spsc_t ckf;
static ck_fifo_spsc_entry_t *ckf_pool;
static unsigned ckf_used;
static void ckf_init(void)
{
	ckf_pool = aligned_alloc(CMP_LINE, sizeof *ckf_pool * (QCAP + 1));
	if (!ckf_pool)
		abort();
	ck_fifo_spsc_init(&ckf, &ckf_pool[0]);
	ckf_used = 1;
}
static CMP_FN int ckf_put(uint64_t v)
{
	ck_fifo_spsc_entry_t *e = ck_fifo_spsc_recycle(&ckf);
	if (!e) {
		if (ckf_used > QCAP)
			return 0;
		e = &ckf_pool[ckf_used++];
	}
	ck_fifo_spsc_enqueue(&ckf, e, (void *)(uintptr_t)v);
	return 1;
}
static CMP_FN int ckf_get(uint64_t *v)
{
	void *p;
	if (!ck_fifo_spsc_dequeue(&ckf, &p))
		return 0;
	*v = (uint64_t)(uintptr_t)p;
	return 1;
}
static void ckf_fini(void)
{
	ck_fifo_spsc_entry_t *garbage = NULL;
	ck_fifo_spsc_deinit(&ckf, &garbage);	/* every entry is in the pool */
	free(ckf_pool);
}

/* ---- drivers ----------------------------------------------------------------------- */

static void pin(unsigned t)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpus[t % ncpus], &s);
	if (sched_setaffinity(0, sizeof s, &s) != 0)
		ksync_printf("ktap: # sched_setaffinity(cpu %u) failed; figures may include migrations\n",
			     cpus[t % ncpus]);
}

static double now_s(void)
{
	return (double)now_ns() * 1e-9;
}

/* CPU time of the calling thread: against the wall time it tells how long the thread was
 * off its CPU (preempted by other processes), the main source of run-to-run spread on a
 * shared machine. */
static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What one run measured besides its value. */
struct run_info {
	double secs;		/* wall span */
	double share;		/* the measured threads' CPU time / (threads x span), 0..1 */
	unsigned long batches;	/* latency: batches timed */
};

/* The stop flag of a throughput run: set by the main thread after run_ms, polled by the
 * workers every CHUNK pairs. It orders nothing else (the results travel through the
 * joins); release/acquire only keeps the pattern obvious, and costs nothing on x86. */
static atomic_int stop;
#define CHUNK 64

static const struct cmp_impl *cur;
static pthread_barrier_t bar;
/* Per worker, written by that worker only, read by main after the joins: its own start
 * and end (so a descheduled main thread cannot shrink the interval: a run lasts from the
 * earliest start to the latest end) and its pair count. */
static struct {
	_Alignas(CMP_LINE) double start, end;
	double cpu;		/* thread CPU seconds between start and end */
	unsigned long pairs;
} w[MAXT];

static void *mt_worker(void *arg)
{
	unsigned t = (unsigned)(uintptr_t)arg;
	unsigned long n = 0;
	pin(t);
	pthread_barrier_wait(&bar);
	w[t].start = now_s();
	w[t].cpu = thread_cpu_s();
	do {
		for (unsigned i = 0; i < CHUNK; i++)
			cur->pair(t);
		n += CHUNK;
	} while (!atomic_load_explicit(&stop, memory_order_acquire));
	w[t].end = now_s();
	w[t].cpu = thread_cpu_s() - w[t].cpu;
	w[t].pairs = n;
	return NULL;
}

/* Workers 0..n-1: ri->secs = their span, ri->share = their CPU time over n x span;
 * returns their pairs. */
static unsigned long span(unsigned n, struct run_info *ri)
{
	double a = w[0].start, b = w[0].end, cpu = 0;
	unsigned long items = 0;
	for (unsigned i = 0; i < n; i++) {
		a = w[i].start < a ? w[i].start : a;
		b = w[i].end > b ? w[i].end : b;
		items += w[i].pairs;
		cpu += w[i].cpu;
	}
	ri->secs = b - a;
	ri->share = cpu / (n * ri->secs);
	ri->batches = 0;
	return items;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* One throughput run: M pairs/s. */
static double run_mt(const struct cmp_impl *im, unsigned nt, struct run_info *ri)
{
	pthread_t th[MAXT];
	cur = im;
	im->init(nt);
	atomic_store_explicit(&stop, 0, memory_order_relaxed);
	pthread_barrier_init(&bar, NULL, nt + 1);
	for (unsigned t = 0; t < nt; t++)
		if (pthread_create(&th[t], NULL, mt_worker, (void *)(uintptr_t)t) != 0)
			abort();
	pthread_barrier_wait(&bar);
	sleep_ms(run_ms);
	atomic_store_explicit(&stop, 1, memory_order_release);
	for (unsigned t = 0; t < nt; t++)
		pthread_join(th[t], NULL);
	unsigned long items = span(nt, ri);
	pthread_barrier_destroy(&bar);
	im->fini();
	return (double)items / ri->secs / 1e6;
}

/* spsc: the producer puts 0, 1, 2 .. until stopped, then publishes how many
 * (spsc_total, release; spsc_done last); the consumer takes until it has them all and
 * checks the order. */
static const struct spsc_impl *scur;
static atomic_ulong spsc_total;
static atomic_int spsc_done;
static int spsc_order_ok;	/* written by the consumer, read by main after the join */

static void *spsc_consumer(void *arg)
{
	(void)arg;
	pin(1);
	pthread_barrier_wait(&bar);
	w[1].start = now_s();
	w[1].cpu = thread_cpu_s();
	uint64_t v, expect = 0;
	int ok = 1;
	for (;;) {
		if (scur->get(&v)) {
			ok &= v == expect;
			expect++;
			continue;
		}
		cmp_retries[1].n++;
		/* acquire: pairs with the producer's release of spsc_done, so spsc_total is
		 * its final count (every item before it was published before it) */
		if (atomic_load_explicit(&spsc_done, memory_order_acquire) &&
		    expect == atomic_load_explicit(&spsc_total, memory_order_relaxed))
			break;
	}
	w[1].end = now_s();
	w[1].cpu = thread_cpu_s() - w[1].cpu;
	w[1].pairs = expect;
	spsc_order_ok = ok;
	return NULL;
}

static void *spsc_producer(void *arg)
{
	(void)arg;
	pin(0);
	pthread_barrier_wait(&bar);
	w[0].start = now_s();
	w[0].cpu = thread_cpu_s();
	uint64_t i = 0;
	do {
		for (unsigned k = 0; k < CHUNK; k++, i++)
			while (!scur->put(i))
				cmp_retries[0].n++;
	} while (!atomic_load_explicit(&stop, memory_order_acquire));
	w[0].end = now_s();
	w[0].cpu = thread_cpu_s() - w[0].cpu;
	w[0].pairs = 0;	/* items are counted once, by the consumer */
	atomic_store_explicit(&spsc_total, i, memory_order_relaxed);
	atomic_store_explicit(&spsc_done, 1, memory_order_release);
	return NULL;
}

static double run_spsc(const struct spsc_impl *im, struct run_info *ri)
{
	pthread_t p, c;
	scur = im;
	im->init();
	atomic_store_explicit(&stop, 0, memory_order_relaxed);
	atomic_store_explicit(&spsc_done, 0, memory_order_relaxed);
	spsc_order_ok = 0;
	pthread_barrier_init(&bar, NULL, 3);
	if (pthread_create(&c, NULL, spsc_consumer, NULL) != 0 ||
	    pthread_create(&p, NULL, spsc_producer, NULL) != 0)
		abort();
	pthread_barrier_wait(&bar);
	sleep_ms(run_ms);
	atomic_store_explicit(&stop, 1, memory_order_release);
	pthread_join(p, NULL);
	pthread_join(c, NULL);
	unsigned long items = span(2, ri);
	pthread_barrier_destroy(&bar);
	im->fini();
	if (!spsc_order_ok) {
		fprintf(stderr, "cmp_peers: %s spsc delivered items out of order\n", im->name);
		exit(1);
	}
	return (double)items / ri->secs / 1e6;
}

/* One latency run on the calling (pinned) thread: batches of KSYNC_PRIM_OPS_PER_BATCH
 * pairs until run_ms have passed; the median batch per pair in TSC ticks, the run's
 * empty-loop median subtracted (ksync_prim_compute). *ri: the run's length, CPU share and
 * batches. Exactly one of m, s is non-NULL; the pair is called through the table as in
 * every other run (the call is part of every implementation's figure alike). */
#define LAT_MAX_BATCHES (1u << 20)
static uint64_t lt[LAT_MAX_BATCHES], le[KSYNC_PRIM_BATCHES];

#define LAT_BATCHES(nb, t0, t1, BODY)                                                    \
	do {                                                                             \
		KSYNC_MEASURE(le, 16, KSYNC_PRIM_OPS_PER_BATCH, BODY);	/* warm-up */   \
		KSYNC_MEASURE(le, KSYNC_PRIM_BATCHES, KSYNC_PRIM_OPS_PER_BATCH, (void)0); \
		cpu0 = thread_cpu_s();                                                   \
		(t0) = now_s();                                                          \
		do {                                                                     \
			KSYNC_MEASURE(lt + (nb), 64, KSYNC_PRIM_OPS_PER_BATCH, BODY);     \
			(nb) += 64;                                                      \
			(t1) = now_s();                                                  \
		} while ((t1) - (t0) < run_ms * 1e-3 && (nb) + 64 <= LAT_MAX_BATCHES);   \
	} while (0)

static double lat_run(const struct cmp_impl *m, const struct spsc_impl *s,
		      struct run_info *ri)
{
	size_t n = 0;
	double t0, t1, cpu0;
	uint64_t v;

	if (m) {
		m->init(1);
		LAT_BATCHES(n, t0, t1, m->pair(0));
		m->fini();
	} else {
		s->init();
		LAT_BATCHES(n, t0, t1, (s->put(1), s->get(&v)));
		s->fini();
	}
	ri->secs = t1 - t0;
	ri->share = (thread_cpu_s() - cpu0) / ri->secs;	/* fini's few µs included */
	ri->batches = n;
	return (double)ksync_prim_compute(lt, n, KSYNC_PRIM_OPS_PER_BATCH, le,
					  KSYNC_PRIM_BATCHES).median_x100 / 100.0;
}

/* ---- cells and their rows ------------------------------------------------------------ */

struct cell {
	const char *structure, *impl;
	int backoff_max;
	double v[100];			/* run values, in run order */
	double min_secs;		/* the shortest run */
	double min_share;		/* the lowest CPU share of a run */
	unsigned long min_batches;	/* latency: the fewest batches in a run */
};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void emit(const struct cell *c, const char *metric, unsigned threads)
{
	double s[100];
	int lat = !strcmp(metric, "latency");
	memcpy(s, c->v, sizeof s[0] * runs);
	qsort(s, runs, sizeof s[0], cmp_double);
	double med = runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2;
	printf("KSYNC {\"kind\":\"cmp\",\"structure\":\"%s\",\"impl\":\"%s\",", c->structure, c->impl);
	if (c->backoff_max >= 0)
		printf("\"backoff_max\":%d,", c->backoff_max);
	printf("\"metric\":\"%s\",\"unit\":\"%s\",\"threads\":%u,\"runs\":%u,\"run_ms\":%u,"
	       "\"min_run_ms\":%.1f,\"min_cpu_share\":%.3f,",
	       metric, lat ? "tsc_ticks" : "Mpairs/s", threads, runs, run_ms, c->min_secs * 1e3,
	       c->min_share);
	if (lat)
		printf("\"ops_per_batch\":%d,\"min_batches\":%lu,", KSYNC_PRIM_OPS_PER_BATCH,
		       c->min_batches);
	printf("\"values\":[");
	for (unsigned r = 0; r < runs; r++)	/* in run order */
		printf("%s%.3f", r ? "," : "", c->v[r]);
	printf("],\"median\":%.3f,\"lo\":%.3f,\"hi\":%.3f,\"spread\":\"min..max\"}\n",
	       med, s[0], s[runs - 1]);
	fflush(stdout);
}

static void note_run(struct cell *c, unsigned r, const struct run_info *ri)
{
	if (r == 0 || ri->secs < c->min_secs)
		c->min_secs = ri->secs;
	if (r == 0 || ri->share < c->min_share)
		c->min_share = ri->share;
	if (r == 0 || ri->batches < c->min_batches)
		c->min_batches = ri->batches;
}

/* "1,2,4,8": ascending, distinct, each 1..max, at most 8 (ksync run --threads). Returns
 * the count, 0 for a malformed list. */
static unsigned parse_threads(const char *s, unsigned *out, unsigned max)
{
	unsigned n = 0;
	while (*s) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (end == s || v < 1 || v > max || n == 8 || (n && v <= out[n - 1]))
			return 0;
		out[n++] = (unsigned)v;
		if (*end == ',')
			end++;
		else if (*end)
			return 0;
		s = end;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *tlist = NULL;
	if (argc > 1)
		run_ms = (unsigned)strtoul(argv[1], NULL, 10);
	if (argc > 2)
		runs = (unsigned)strtoul(argv[2], NULL, 10);
	if (argc > 3)
		tlist = argv[3];
	if (argc > 4 || run_ms < 1 || run_ms > 10000 || runs < 1 || runs > 100) {
		fprintf(stderr, "usage: cmp_peers [run-ms 1..10000 [runs 1..100 [threads "
			"1,2,4,..]]]  (default 200 5, threads 1, 2, 4 .. and the usable CPUs)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	/* ck_stack_pop_mpmc is a cmpxchg16b on cks: #GP unless 16-byte aligned */
	if ((uintptr_t)&cks % 16) {
		fprintf(stderr, "cmp_peers: ck_stack_t at %p is not 16-byte aligned\n", (void *)&cks);
		return 1;
	}

	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		CPU_ZERO(&set);
	for (unsigned c = 0; c < CPU_SETSIZE && ncpus < MAXT; c++)
		if (CPU_ISSET(c, &set))
			cpus[ncpus++] = c;
	if (!ncpus)
		cpus[ncpus++] = 0;

	const struct cmp_impl mt[] = {
		cmp_ksync[0], cmp_ksync_nobackoff[0],
		{ "stack", "ksync-index", -1, kis_init, kis_pair, kis_fini },
		{ "stack", "ck", -1, cks_init, cks_pair, cks_fini },
		{ "stack", "urcu", -1, ust_init, ust_pair, ust_fini },
		cmp_ksync[1], cmp_ksync_nobackoff[1],
		cmp_ksync_word[0], cmp_ksync_nobackoff_word[0],
		{ "mpmc", "ck", -1, ckr_init, ckr_pair, ckr_fini },
		{ "mpmc", "urcu", -1, uwq_init, uwq_pair, uwq_fini },
	};
	static const struct spsc_impl sp[] = {
		{ "ksync", ksq_init, ksq_put, ksq_get, ksq_fini },
		{ "ck", cksr_init, cksr_put, cksr_get, cksr_fini },
		{ "ck_fifo", ckf_init, ckf_put, ckf_get, ckf_fini },
	};
	enum { NMT = sizeof mt / sizeof mt[0], NSP = sizeof sp / sizeof sp[0] };
	unsigned nthreads[8], nnt = 0;
	if (tlist) {		/* each thread pinned to a CPU of its own: at most ncpus */
		nnt = parse_threads(tlist, nthreads, ncpus);
		if (!nnt) {
			fprintf(stderr, "cmp_peers: threads '%s': a comma list of at most 8 ascending "
				"counts from 1 to the %u usable CPUs\n", tlist, ncpus);
			return 2;
		}
	} else {
		for (unsigned t = 1; t < ncpus && nnt < 7; t *= 2)
			nthreads[nnt++] = t;
		nthreads[nnt++] = ncpus;
	}

	char model[64], cpulist[256] = "";
	cpu_model(model, sizeof model);
	for (unsigned i = 0, n = 0; i < ncpus && n + 8 < sizeof cpulist; i++)
		n += (unsigned)snprintf(cpulist + n, sizeof cpulist - n, "%s%u", i ? "," : "", cpus[i]);
	unsigned cells_runs = (NMT + NSP) + NMT * nnt + (ncpus >= 2 ? NSP : 0);
	double load[1] = { -1 }, t_begin = now_s();
	getloadavg(load, 1);	/* other processes on these CPUs: the reader's noise gauge */
	printf("KSYNC {\"kind\":\"cmp_setup\",\"cpu_model\":\"%s\",\"cpus\":%u,\"cpu_list\":\"%s\","
	       "\"run_ms\":%u,\"runs\":%u,\"backoff_max\":%d,\"planned_s\":%.1f,"
	       "\"loadavg_1min\":%.2f}\n",
	       model, ncpus, cpulist, run_ms, runs, KSYNC_BACKOFF_MAX,
	       cells_runs * runs * run_ms * 1e-3, load[0]);
	printf("ktap: KTAP version 1\nktap: 1..3\n");
	printf("ktap: # %u CPUs, %u interleaved runs of %u ms per cell, about %.0f s\n", ncpus,
	       runs, run_ms, cells_runs * runs * run_ms * 1e-3);

	static struct cell c[NMT + NSP];
	struct run_info ri;

	/* uncontended latency, one thread pinned to the first usable CPU */
	pin(0);
	for (unsigned i = 0; i < NMT; i++)
		c[i] = (struct cell){ .structure = mt[i].structure, .impl = mt[i].name,
				      .backoff_max = mt[i].backoff_max };
	for (unsigned i = 0; i < NSP; i++)	/* spsc: no CAS, so no backoff to report */
		c[NMT + i] = (struct cell){ .structure = "spsc", .impl = sp[i].name,
					    .backoff_max = -1 };
	for (unsigned r = 0; r < runs; r++)
		for (unsigned k = 0; k < NMT + NSP; k++) {
			unsigned i = (r + k) % (NMT + NSP);
			c[i].v[r] = i < NMT ? lat_run(&mt[i], NULL, &ri)
					    : lat_run(NULL, &sp[i - NMT], &ri);
			note_run(&c[i], r, &ri);
		}
	for (unsigned i = 0; i < NMT + NSP; i++)
		emit(&c[i], "latency", 1);
	printf("ktap: ok 1 latency\n");

	/* contended throughput */
	for (unsigned n = 0; n < nnt; n++) {
		for (unsigned r = 0; r < runs; r++)
			for (unsigned k = 0; k < NMT; k++) {
				unsigned i = (r + k) % NMT;
				c[i].v[r] = run_mt(&mt[i], nthreads[n], &ri);
				note_run(&c[i], r, &ri);
			}
		for (unsigned i = 0; i < NMT; i++)
			emit(&c[i], "throughput", nthreads[n]);
	}
	printf("ktap: ok 2 throughput\n");

	if (ncpus >= 2) {
		for (unsigned r = 0; r < runs; r++)
			for (unsigned k = 0; k < NSP; k++) {
				unsigned i = (r + k) % NSP;
				c[NMT + i].v[r] = run_spsc(&sp[i], &ri);
				note_run(&c[NMT + i], r, &ri);
			}
		for (unsigned i = 0; i < NSP; i++)
			emit(&c[NMT + i], "throughput", 2);
		printf("ktap: ok 3 spsc\n");
	} else {
		printf("ktap: ok 3 spsc # SKIP needs 2 CPUs\n");
	}
	unsigned long retries = 0;
	for (unsigned t = 0; t < MAXT; t++)
		retries += cmp_retries[t].n;
	printf("ktap: # empty/full retries: %lu\n", retries);
	getloadavg(load, 1);
	printf("KSYNC {\"kind\":\"cmp_end\",\"elapsed_s\":%.1f,\"loadavg_1min\":%.2f}\n",
	       now_s() - t_begin, load[0]);
	return 0;
}
