/*
 * stress_mwcas.c - concurrency stress of include/ksync/mwcas.h, soft and lock variants
 * (the irq variant is single-processor only; test_mwcas.c covers it).
 *
 * Threads move units between counters with 2-word MWCAS (from -= 1, to += 1).  The
 * total is invariant, and the tests check it
 *   - at every snapshot: a thread reads all counters, then confirms them with an
 *     identity MWCAS (expected == desired over all of them); a confirmed snapshot was
 *     the state at one instant, so its sum must be the total;
 *   - at every single read: a logical value is even (never a leaked descriptor
 *     reference) and at most the total;
 *   - at the end: the sum is exactly the total, no word holds a reference, and every
 *     successful move is accounted for.
 * Sized by KSYNC_STRESS_OPS (moves per case, all threads together).  Clean under TSan.
 * Hohmuth & Härtig 2001 §3.2 (MWCAS for global state; spin locks on SMP).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/atomic.h>
#include <ksync/ktest.h>
#include <ksync/mwcas.h>
#include <ksync/platform.h>
#include "stress_common.h"

#define MAX_COUNTERS 8
#define MAX_THREADS 4
#define UNITS_EACH 1000

typedef int (*mwcas_fn)(struct ksync_mwcas_op *, unsigned);
typedef uint64_t (*read_fn)(const uint64_t *);

static struct {
	uint64_t v;	/* KSYNC_MWCAS_VAL(units): only through the MWCAS API */
} __attribute__((aligned(64))) counters[MAX_COUNTERS];

struct run {
	mwcas_fn mwcas;
	read_fn read;
	unsigned ncounters;
	uint64_t total;		/* units in all counters together */
	uint64_t ops_each;	/* move attempts per thread */
	uint32_t waiting;	/* start gate */
	/* totals, added with relaxed RMWs; read after pthread_join */
	uint64_t moved, busy, snapshots, bad_snapshots, bad_reads;
};

struct targ {
	struct run *r;
	uint64_t seed;
	int exit_explicitly;
};

static void *mover(void *p)
{
	struct targ *a = p;
	struct run *r = a->r;
	uint64_t rng = a->seed, moved = 0, busy = 0, snaps = 0, bad_snaps = 0, bad_reads = 0;
	unsigned nc = r->ncounters;

	ksync_fetch_sub_acq_rel_u32(&r->waiting, 1);
	while (ksync_load_acquire_u32(&r->waiting) != 0)
		ksync_cpu_relax();

	for (uint64_t k = 0; k < r->ops_each; k++) {
		unsigned i = (unsigned)(rnd(&rng) % nc);
		unsigned j = (i + 1 + (unsigned)(rnd(&rng) % (nc - 1))) % nc;
		uint64_t f, t;

		if (k % 16 == 0) {
			struct ksync_mwcas_op ops[MAX_COUNTERS];
			uint64_t sum = 0;

			for (unsigned c = 0; c < nc; c++) {
				uint64_t v = r->read(&counters[c].v);

				ops[c] = (struct ksync_mwcas_op){ &counters[c].v, v, v };
				sum += KSYNC_MWCAS_UNVAL(v);
			}
			if (r->mwcas(ops, nc) == KSYNC_OK) {
				snaps++;
				bad_snaps += sum != r->total;
			}
		}
		f = r->read(&counters[i].v);
		t = r->read(&counters[j].v);
		bad_reads += (f & 1) || (t & 1) || KSYNC_MWCAS_UNVAL(f) > r->total ||
			     KSYNC_MWCAS_UNVAL(t) > r->total;
		if (f == 0)
			continue;
		{
			struct ksync_mwcas_op ops[2] = {
				{ &counters[i].v, f, f - KSYNC_MWCAS_VAL(1) },
				{ &counters[j].v, t, t + KSYNC_MWCAS_VAL(1) },
			};
			int rc = r->mwcas(ops, 2);

			if (rc == KSYNC_OK)
				moved++;
			else if (rc == KSYNC_EBUSY)
				busy++;
			else
				bad_reads++;	/* no other code is possible here */
		}
	}
	/* relaxed: read after pthread_join, which orders them */
	ksync_fetch_add_relaxed_u64(&r->moved, moved);
	ksync_fetch_add_relaxed_u64(&r->busy, busy);
	ksync_fetch_add_relaxed_u64(&r->snapshots, snaps);
	ksync_fetch_add_relaxed_u64(&r->bad_snapshots, bad_snaps);
	ksync_fetch_add_relaxed_u64(&r->bad_reads, bad_reads);
	/* half the threads give their soft slot back explicitly, the others through the
	 * thread-exit destructor; both must leave the slot table usable */
	if (a->exit_explicitly)
		ksync_mwcas_thread_exit();
	return NULL;
}

static void run_case(struct ktest_ctx *kt, const char *name, mwcas_fn mw, read_fn rd,
		     unsigned nthreads, unsigned ncounters)
{
	static struct run r;
	pthread_t th[MAX_THREADS];
	struct targ args[MAX_THREADS];
	uint64_t sum = 0, refs = 0;

	r = (struct run){ .mwcas = mw, .read = rd, .ncounters = ncounters };
	r.total = (uint64_t)ncounters * UNITS_EACH;
	r.ops_each = stress_ops() / nthreads;
	r.waiting = nthreads;
	for (unsigned c = 0; c < MAX_COUNTERS; c++)
		counters[c].v = KSYNC_MWCAS_VAL(c < ncounters ? UNITS_EACH : 0);
	for (unsigned t = 0; t < nthreads; t++) {
		args[t] = (struct targ){ &r, 0x9e3779b97f4a7c15ull * (t + 1), (int)(t & 1) };
		KT_ASSERT_EQ(pthread_create(&th[t], NULL, mover, &args[t]), 0);
	}
	for (unsigned t = 0; t < nthreads; t++)
		KT_ASSERT_EQ(pthread_join(th[t], NULL), 0);

	for (unsigned c = 0; c < ncounters; c++) {
		refs += counters[c].v & 1;	/* raw word: no reference may be left */
		sum += KSYNC_MWCAS_UNVAL(counters[c].v);
	}
	KT_EXPECT_EQ(refs, 0);
	KT_EXPECT_EQ(sum, r.total);
	KT_EXPECT_EQ(r.bad_snapshots, 0);
	KT_EXPECT_EQ(r.bad_reads, 0);
	KT_EXPECT(r.moved > 0);
	KT_EXPECT(r.snapshots > 0);
	kt_diag(kt, "%s: %u threads, %u counters: %llu moves, %llu failed (EBUSY), "
		    "%llu confirmed snapshots",
		name, nthreads, ncounters, (unsigned long long)r.moved,
		(unsigned long long)r.busy, (unsigned long long)r.snapshots);
}

KTEST(stress_mwcas_soft_4threads_8counters)
{
	run_case(kt, "soft", ksync_mwcas_soft, ksync_mwcas_read_soft, 4, 8);
}

/* Two counters: every operation collides with every other, so helping is constant. */
KTEST(stress_mwcas_soft_4threads_2counters)
{
	run_case(kt, "soft", ksync_mwcas_soft, ksync_mwcas_read_soft, 4, 2);
}

KTEST(stress_mwcas_soft_2threads_3counters)
{
	run_case(kt, "soft", ksync_mwcas_soft, ksync_mwcas_read_soft, 2, 3);
}

KTEST(stress_mwcas_lock_4threads_8counters)
{
	run_case(kt, "lock", ksync_mwcas_lock, ksync_mwcas_read_lock, 4, 8);
}

KTEST(stress_mwcas_lock_4threads_2counters)
{
	run_case(kt, "lock", ksync_mwcas_lock, ksync_mwcas_read_lock, 4, 2);
}

/* Slots come back: after the cases above (16 threads came and went) every slot a
 * thread took was returned, by ksync_mwcas_thread_exit or the thread-exit destructor. */
KTEST(stress_mwcas_slots_returned)
{
	int s[KSYNC_MWCAS_MAX_THREADS];
	int n = 0;

	while (n < KSYNC_MWCAS_MAX_THREADS && (s[n] = ksync_mwcas_slot_claim()) >= 0)
		n++;
	KT_EXPECT_EQ(n, KSYNC_MWCAS_MAX_THREADS);	/* this thread never took one */
	for (int i = 0; i < n; i++)
		ksync_mwcas_slot_release((unsigned)s[i]);
}
