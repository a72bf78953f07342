/*
 * exp_lf_cost.c - the Massalin & Pu cost table in the kernel: the same rows as the hosted
 * bench/lf_stack_cost.c (common/lf_cost_rows.h: counter, stack, array stack, index stack,
 * list, optimistic section; no sync / lock-free / one forced retry), run on the BSP with
 * interrupts off. Under TCG these are emulator costs; the report says so.
 *
 * Against a lock (Massalin & Pu: lock-free costs less than locking): the nosync
 * operations under the kernel's master lock (kernel/include/mlock.h; Hartman &
 * Ousterhout's spin lock held with interrupts masked), MLOCK_TAS, taken with mlock_lock /
 * mlock_unlock (the running scheme's masking pair around an xchg and a release store),
 * lock statistics off for these rows (the cheapest configuration of the lock):
 * mp_<op>_mlock rows, measured by the same ROW in the same function as the nosync and lf
 * rows.
 *
 * Two CPUs on one object (mp_<op>_{lf,mlock}_2t, with 2 or more CPUs): this CPU and CPU 1
 * (through arch_call_post: its IPI handler, interrupts off there) each do K2_OPS
 * operations on the same object - the CAS counter increment, push + pop of the Treiber
 * stack (each CPU pushes the node it holds and holds the node it pops), push + pop of the
 * array stack - lock-free or under the master lock; started together (CPU 1 says it is
 * ready, this CPU reads the TSC and lets it go); a sample is the ticks until the later of
 * the two ends, divided by K2_OPS.  K2_RUNS samples per row, the rows interleaved run by
 * run; the same harness as bench/lf_stack_cost.c's two-thread rows.  Inputs: K2_OPS,
 * K2_RUNS, CPUs 0 and 1.
 */
#include "kernel.h"
#include "experiment.h"
#include "lockstat.h"
#include "mlock.h"

static struct mlock cost_lock;	/* the mlock rows' lock; taken by this CPU only */

#define LF_COST_LOCKS()                                                                \
	LF_COST_LOCKED_ROWS("mlock", "the master lock (MLOCK_TAS, mlock_lock/unlock, "  \
			    "statistics off)", mlock_lock(&cost_lock), mlock_unlock(&cost_lock))

#include "lf_cost_rows.h"

LOCK_CLASS(lf_cost_lock_class, "lf_cost", LOCK_MASTER, LOCK_DATA);

/* ---- two CPUs on one object ------------------------------------------------------------ */

#define K2_OPS 20000
#define K2_RUNS 11

static uint64_t k2_val[2];	/* per CPU: the popped value (discarded) */

static void k2_counter_lf(unsigned c, uint64_t n)
{
	(void)c;
	for (uint64_t k = 0; k < n; k++)
		(void)lf_counter_add_cas_relaxed(&o.counter, 1, NULL);
}
static void k2_counter_mlock(unsigned c, uint64_t n)
{
	(void)c;
	for (uint64_t k = 0; k < n; k++) {
		mlock_lock(&cost_lock);
		o.plain_counter++;
		mlock_unlock(&cost_lock);
	}
}
static void k2_stack_lf(unsigned c, uint64_t n)
{
	struct lf_stack_node *h = &snodes[c];

	for (uint64_t k = 0; k < n; k++) {
		(void)lf_stack_push_mpmc(&o.stack, h);
		(void)lf_stack_pop_mpmc(&o.stack, &h);	/* never empty: ours is in */
	}
}
static void k2_stack_mlock(unsigned c, uint64_t n)
{
	struct lf_stack_node *h = &snodes[c];

	for (uint64_t k = 0; k < n; k++) {
		mlock_lock(&cost_lock);
		plain_push(h);
		mlock_unlock(&cost_lock);
		mlock_lock(&cost_lock);
		h = plain_pop();
		mlock_unlock(&cost_lock);
	}
}
static void k2_astack_lf(unsigned c, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		(void)lf_astack_push_mpmc(&o.astack, c + 1);
		(void)lf_astack_pop_mpmc(&o.astack, &k2_val[c]);
	}
}
static void k2_astack_mlock(unsigned c, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		mlock_lock(&cost_lock);
		(void)plain_apush(c + 1);
		mlock_unlock(&cost_lock);
		mlock_lock(&cost_lock);
		(void)plain_apop(&k2_val[c]);
		mlock_unlock(&cost_lock);
	}
}

static const struct k2_case {
	const char *name, *detail;
	void (*fn)(unsigned c, uint64_t n);
} k2_cases[] = {
	{ "mp_counter_inc_lf_2t", "2 CPUs: lf_counter_add_cas_relaxed", k2_counter_lf },
	{ "mp_counter_inc_mlock_2t", "2 CPUs: increment under the master lock", k2_counter_mlock },
	{ "mp_stack_push_pop_lf_2t", "2 CPUs: lf_stack push + pop", k2_stack_lf },
	{ "mp_stack_push_pop_mlock_2t", "2 CPUs: plain push, pop, each under the master lock",
	  k2_stack_mlock },
	{ "mp_astack_push_pop_lf_2t", "2 CPUs: lf_astack push + pop", k2_astack_lf },
	{ "mp_astack_push_pop_mlock_2t", "2 CPUs: array push, pop, each under the master lock",
	  k2_astack_mlock },
};
#define K2_NCASES (sizeof(k2_cases) / sizeof(k2_cases[0]))

/* The run's protocol words: CPU 1 sets ready, this CPU sets go; CPU 1's end TSC is read
 * after arch_call_wait (which orders it). */
static uint32_t k2_ready, k2_go;
static uint64_t k2_end1;
static const struct k2_case *k2_cur;	/* written before arch_call_post */

static void k2_remote(void *arg)
{
	(void)arg;
	__atomic_store_n(&k2_ready, 1, __ATOMIC_RELEASE);	/* we are at the start */
	while (!__atomic_load_n(&k2_go, __ATOMIC_ACQUIRE))
		arch_cpu_relax();
	k2_cur->fn(1, K2_OPS);
	k2_end1 = ksync_cycles_end();
}

static uint64_t k2_run(const struct k2_case *c)
{
	uint64_t t0, e0;

	k2_cur = c;
	__atomic_store_n(&k2_ready, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&k2_go, 0, __ATOMIC_RELAXED);
	arch_call_post(1, k2_remote, NULL);	/* publishes the stores above */
	while (!__atomic_load_n(&k2_ready, __ATOMIC_ACQUIRE))
		arch_cpu_relax();
	t0 = ksync_cycles_begin();
	__atomic_store_n(&k2_go, 1, __ATOMIC_RELEASE);
	c->fn(0, K2_OPS);
	e0 = ksync_cycles_end();
	arch_call_wait(1);
	return (e0 > k2_end1 ? e0 : k2_end1) - t0;
}

static void two_cpus(void)
{
	static uint64_t samples[K2_NCASES][K2_RUNS], zero[1];
	struct lf_stack_node *sn;
	uint64_t v;

	if (arch_ncpus() < 2) {
		ksync_printf("ktap: # two-CPU rows: one CPU online\n");
		return;
	}
	for (unsigned r = 0; r < K2_RUNS; r++)
		for (unsigned c = 0; c < K2_NCASES; c++) {
			while (lf_stack_pop_mpmc(&o.stack, &sn) >= 0)
				;
			while (lf_astack_pop_mpmc(&o.astack, &v) >= 0)
				;
			o.plain_top = NULL;
			o.plain_sp = 0;
			samples[c][r] = k2_run(&k2_cases[c]);
		}
	ksync_printf("ktap: # two CPUs (0 and 1): %d runs x %d operations per CPU, unit: TSC "
		     "ticks per operation of each CPU\n", K2_RUNS, K2_OPS);
	for (unsigned c = 0; c < K2_NCASES; c++)
		ksync_prim_emit(k2_cases[c].name, k2_cases[c].detail, samples[c], K2_RUNS, K2_OPS,
				zero, 1);
}

KEXPERIMENT(lf_cost, "default")
{
	unsigned mode = lockstat_on();
	int rc = mlock_init(&cost_lock, &lf_cost_lock_class, MLOCK_TAS);

	KT_ASSERT_EQ(rc, KSYNC_OK);
	(void)lockstat_set_mode(LOCKSTAT_OFF);	/* KSYNC_ENOTSUP when compiled out: off */
	irqkey_t k = arch_irq_save();
	lf_cost_rows();
	two_cpus();
	arch_irq_restore(k);
	(void)lockstat_set_mode(mode);
	mlock_destroy(&cost_lock);
}
