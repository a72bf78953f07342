/*
 * stress_optimistic.c - include/ksync/optimistic.h with 1 writer + 1 reader and with
 * 2 writers + 2 readers.  The protected state is W words that writers keep consistent:
 * w[0..W-2] all equal to k, w[W-1] = (W-1) * k, and every write raises k by exactly 1.
 * Writers alternate between the locked form (write_begin, read k inside, write k + 1,
 * write_end) and Massalin-Pu's optimistic form (read k outside, validate, commit with
 * write_begin_if only if nothing was written since, else retry), and now and then enter
 * and cancel.  Readers take snapshots (lf_opt_read, or the protocol by hand with a
 * pause in the middle of the copy; some writes pause halfway too, so that reads and
 * writes overlap often) and check that no snapshot is torn
 * and that k never goes backwards for one reader.  At the end k equals the number of
 * writes.  All data accesses are relaxed atomics: clean under TSan by construction, and
 * TSan checks it.  KSYNC_STRESS_OPS operations (reads + writes) per case.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/atomic.h>
#include <ksync/ktest.h>
#include <ksync/optimistic.h>
#include "stress_common.h"

#define W 8
#define MAX_THREADS 4

static struct lf_opt ver;
static uint64_t words[W];
static uint32_t gate;

struct worker {
	pthread_t th;
	int writer;
	uint64_t ops, seed;
	uint64_t writes, commits_refused, cancels;	/* writers */
	uint64_t reads, retries, torn, backwards;	/* readers */
};

static void fill(uint64_t *s, uint64_t k)
{
	for (int i = 0; i < W - 1; i++)
		s[i] = k;
	s[W - 1] = (W - 1) * k;
}

static int consistent(const uint64_t *s)
{
	for (int i = 1; i < W - 1; i++)
		if (s[i] != s[0])
			return 0;
	return s[W - 1] == (W - 1) * s[0];
}

static void writer_op(struct worker *w)
{
	uint64_t s[W], v, k;
	uint64_t r = rnd(&w->seed);

	if ((r & 63) == 0) {			/* enter and leave without writing */
		lf_opt_write_begin(&ver);
		lf_opt_write_cancel(&ver);
		w->cancels++;
		return;
	}
	if (r & 1) {				/* locked form */
		lf_opt_write_begin(&ver);
		k = lf_opt_load_u64(&words[0]);
		fill(s, k + 1);
		if (r & 2) {
			lf_opt_copy_in(words, s, W);
		} else {			/* half, pause, other half: a wide window */
			lf_opt_copy_in(words, s, W / 2);
			for (int i = 0; i < 8; i++)
				ksync_cpu_relax();
			lf_opt_copy_in(words + W / 2, s + W / 2, W - W / 2);
		}
		lf_opt_write_end(&ver);
	} else {				/* Massalin-Pu: read, compute, commit */
		for (;;) {
			lf_opt_read_begin(&ver, &v);
			k = lf_opt_load_u64(&words[0]);
			if (!lf_opt_read_validate(&ver, v))
				continue;
			fill(s, k + 1);		/* computed outside the section */
			if (lf_opt_write_begin_if(&ver, v) == KSYNC_OK)
				break;
			w->commits_refused++;
		}
		lf_opt_copy_in(words, s, W);
		lf_opt_write_end(&ver);
	}
	w->writes++;
}

static void reader_op(struct worker *w, uint64_t *last)
{
	uint64_t s[W], v;

	if (rnd(&w->seed) & 1) {
		w->retries += (uint64_t)lf_opt_read(&ver, s, words, W);
	} else {	/* the protocol by hand, pausing mid-copy: a wide window */
		for (;;) {
			lf_opt_read_begin(&ver, &v);
			for (int i = 0; i < W; i++) {
				s[i] = lf_opt_load_u64(&words[i]);
				if (i == W / 2)
					for (int j = 0; j < 8; j++)
						ksync_cpu_relax();
			}
			if (lf_opt_read_validate(&ver, v))
				break;
			w->retries++;
		}
	}
	w->reads++;
	if (!consistent(s))
		w->torn++;
	if (s[0] < *last)
		w->backwards++;
	*last = s[0];
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t last = 0;

	ksync_fetch_sub_acq_rel_u32(&gate, 1);
	while (ksync_load_acquire_u32(&gate))
		ksync_cpu_relax();
	for (uint64_t i = 0; i < w->ops; i++) {
		if (w->writer)
			writer_op(w);
		else
			reader_op(w, &last);
	}
	return NULL;
}

static void run(struct ktest_ctx *kt, unsigned nwriters, unsigned nreaders)
{
	struct worker w[MAX_THREADS];
	unsigned n = nwriters + nreaders;
	uint64_t total = stress_ops(), writes = 0, reads = 0, retries = 0, torn = 0;
	uint64_t backwards = 0, refused = 0, cancels = 0, s[W], zero[W] = { 0 };

	lf_opt_init(&ver);
	lf_opt_copy_in(words, zero, W);
	gate = n;
	for (unsigned t = 0; t < n; t++) {
		w[t] = (struct worker){ .writer = t < nwriters, .ops = total / n,
					.seed = 0x853c49e6748fea9bull * (t + 1) };
		KT_ASSERT_EQ(pthread_create(&w[t].th, NULL, worker_main, &w[t]), 0);
	}
	for (unsigned t = 0; t < n; t++) {
		KT_ASSERT_EQ(pthread_join(w[t].th, NULL), 0);
		writes += w[t].writes;
		reads += w[t].reads;
		retries += w[t].retries;
		torn += w[t].torn;
		backwards += w[t].backwards;
		refused += w[t].commits_refused;
		cancels += w[t].cancels;
	}
	KT_EXPECT_EQ(torn, 0);
	KT_EXPECT_EQ(backwards, 0);
	lf_opt_read(&ver, s, words, W);
	KT_EXPECT(consistent(s));
	KT_EXPECT_EQ(s[0], writes);		/* no write lost */
	KT_EXPECT_EQ(ver.version, 2 * writes);	/* cancels leave no trace */
	kt_diag(kt, "%u writers, %u readers, %llu ops: %llu writes (%llu commits refused, "
		"%llu cancels), %llu reads (%llu retries)", nwriters, nreaders,
		(unsigned long long)total, (unsigned long long)writes,
		(unsigned long long)refused, (unsigned long long)cancels,
		(unsigned long long)reads, (unsigned long long)retries);
}

KTEST(stress_optimistic_1writer_1reader)
{
	run(kt, 1, 1);
}

KTEST(stress_optimistic_2writers_2readers)
{
	run(kt, 2, 2);
}
