/*
 * test_explore_lf_fifo.c - the interleaving explorer over the real bounded FIFO queues
 * of include/ksync/lf_fifo_{spsc,spmc,mpsc,mpmc}.h: for each flavour, every
 * interleaving of the operations of 2-3 threads (as many producers and consumers as
 * the flavour allows), up to a preemption bound, must be linearizable against a FIFO
 * queue (kx_spec_queue; KSYNC_EFULL is accepted whenever it is returned - the indirect
 * flavours count cells held by operations in progress as occupied), no execution may
 * stall (lock-free: every execution within the bound finishes), and the queue is
 * drained in the teardown so that a corrupted final state shows up in the history.
 * Capacity 2, so the full and empty boundaries are both reached.
 * Massalin & Pu 1991 "FIFO queues"; Nikolaev DISC 2019 (NCQ).
 */
#include "../explore/explore.h"

#include <ksync/errors.h>
#include <ksync/lf_fifo_mpmc.h>
#include <ksync/lf_fifo_mpsc.h>
#include <ksync/lf_fifo_spmc.h>
#include <ksync/lf_fifo_spsc.h>
#include <ksync/ktest.h>

#include "../explore/explore.c"

#define CAP 2

static union {
	struct lf_fifo_spsc spsc;
	struct lf_fifo_spmc spmc;
	struct lf_fifo_mpsc mpsc;
	struct lf_fifo_mpmc mpmc;
} q;
static uint64_t storage[64] __attribute__((aligned(64)));

struct flavour {
	const char *name;
	int (*init)(void);
	int (*enq)(const uint64_t *v);
	int (*deq)(uint64_t *v);
};

static int init_spsc(void)
{
	return lf_fifo_init_spsc(&q.spsc, storage, sizeof(storage), CAP, 8, NULL);
}
static int enq_spsc(const uint64_t *v)
{
	return lf_fifo_enqueue_spsc(&q.spsc, v);
}
static int deq_spsc(uint64_t *v)
{
	return lf_fifo_dequeue_spsc(&q.spsc, v);
}
static int init_spmc(void)
{
	return lf_fifo_init_spmc(&q.spmc, storage, sizeof(storage), CAP, 8, NULL);
}
static int enq_spmc(const uint64_t *v)
{
	return lf_fifo_enqueue_spmc(&q.spmc, v);
}
static int deq_spmc(uint64_t *v)
{
	return lf_fifo_dequeue_spmc(&q.spmc, v);
}
static int init_mpsc(void)
{
	return lf_fifo_init_mpsc(&q.mpsc, storage, sizeof(storage), CAP, 8, NULL);
}
static int enq_mpsc(const uint64_t *v)
{
	return lf_fifo_enqueue_mpsc(&q.mpsc, v);
}
static int deq_mpsc(uint64_t *v)
{
	return lf_fifo_dequeue_mpsc(&q.mpsc, v);
}
static int init_mpmc(void)
{
	return lf_fifo_init_mpmc(&q.mpmc, storage, sizeof(storage), CAP, 8, NULL);
}
static int enq_mpmc(const uint64_t *v)
{
	return lf_fifo_enqueue_mpmc(&q.mpmc, v);
}
static int deq_mpmc(uint64_t *v)
{
	return lf_fifo_dequeue_mpmc(&q.mpmc, v);
}

static const struct flavour *fl;
static int setup_failed;

static void r_enq(struct kx *x, uint64_t v)
{
	int op = kx_op_begin(x, KX_ENQ, v);
	int r = fl->enq(&v);

	kx_op_end(x, op, r == KSYNC_OK ? KX_OK : r == KSYNC_EFULL ? KX_FULL : 1000 + (uint64_t)-r);
}

static uint64_t r_deq(struct kx *x)
{
	int op = kx_op_begin(x, KX_DEQ, 0);
	uint64_t v = 0;
	int r = fl->deq(&v);
	uint64_t res = r == KSYNC_OK ? v : r == KSYNC_EEMPTY ? KX_EMPTY : 1000 + (uint64_t)-r;

	kx_op_end(x, op, res);
	return res;
}

static void setup(struct kx *x, void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < sizeof(storage) / sizeof(storage[0]); i++)
		storage[i] = 0;
	setup_failed |= fl->init() != KSYNC_OK;
	kx_name(x, &q, "queue");
	kx_name(x, storage, "storage");
}

static void teardown(struct kx *x, void *arg)
{
	(void)arg;
	for (int i = 0; i < 2 * CAP + 2 && r_deq(x) != KX_EMPTY; i++)
		;
}

/* Scripts: positive = enqueue that value, 0 = dequeue, -1 = end. */
static const int *script[KX_MAX_THREADS];

static void runner(struct kx *x, int tid, void *arg)
{
	(void)arg;
	for (const int *p = script[tid]; *p >= 0; p++) {
		if (*p > 0)
			r_enq(x, (uint64_t)*p);
		else
			r_deq(x);
	}
}

#define BUDGET (KX_TSAN ? 30000 : 300000)

static void explore_flavour(struct ktest_ctx *kt, const struct flavour *f, int nthreads,
			    int bound)
{
	struct kx_config cfg = {
		.name = f->name,
		.nthreads = nthreads,
		.thread = { runner, runner, runner },
		.setup = setup,
		.teardown = teardown,
		.spec = &kx_spec_queue,
		.preemption_bound = bound,
		.max_schedules = BUDGET,
		.max_steps = 5000,
		.step_limit_is_violation = true,
	};
	struct kx_result r;

	fl = f;
	setup_failed = 0;
	KT_EXPECT_EQ(kx_explore(&cfg, &r, kt), 0);
	KT_EXPECT_EQ(setup_failed, 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.schedules > 1);
}

static const struct flavour f_spsc = { "lf_fifo_spsc", init_spsc, enq_spsc,
					    deq_spsc };
static const struct flavour f_spmc = { "lf_fifo_spmc", init_spmc, enq_spmc,
					    deq_spmc };
static const struct flavour f_mpsc = { "lf_fifo_mpsc", init_mpsc, enq_mpsc,
					    deq_mpsc };
static const struct flavour f_mpmc = { "lf_fifo_mpmc", init_mpmc, enq_mpmc,
					    deq_mpmc };

/* one producer enqueues past the capacity while one consumer dequeues */
static const int sp_prod[] = { 1, 2, 3, -1 }, sc_cons[] = { 0, 0, -1 };
/* two producers, one of them twice */
static const int mp_a[] = { 1, -1 }, mp_b[] = { 2, 3, -1 };
/* consumers */
static const int mc_a[] = { 0, -1 }, mc_b[] = { 0, 0, -1 };
/* threads that both produce and consume (mpmc) */
static const int mix_a[] = { 1, 0, -1 }, mix_b[] = { 2, 0, -1 }, mix_c[] = { 0, 3, -1 };

KTEST(explore_lf_fifo_spsc)
{
	script[0] = sp_prod;
	script[1] = sc_cons;
	explore_flavour(kt, &f_spsc, 2, -1);	/* small enough for every interleaving */
}

KTEST(explore_lf_fifo_spmc)
{
	script[0] = sp_prod;
	script[1] = mc_a;
	script[2] = mc_b;
	explore_flavour(kt, &f_spmc, 3, 3);
}

KTEST(explore_lf_fifo_mpsc)
{
	script[0] = mp_a;
	script[1] = mp_b;
	script[2] = sc_cons;
	explore_flavour(kt, &f_mpsc, 3, 3);
}

KTEST(explore_lf_fifo_mpmc)
{
	script[0] = mp_a;
	script[1] = mp_b;
	script[2] = mc_b;
	explore_flavour(kt, &f_mpmc, 3, 3);
}

KTEST(explore_lf_fifo_mpmc_mixed)
{
	script[0] = mix_a;
	script[1] = mix_b;
	script[2] = mix_c;
	explore_flavour(kt, &f_mpmc, 3, 3);
}
