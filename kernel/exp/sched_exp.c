/*
 * sched_exp.c - issue 10's experiments: Massalin & Pu 1991's thread-operation table
 * ("Thread operations", "Scheduling and dispatching") regenerated under both schedulers,
 * and dispatches per second under contention.
 *
 * For each scheduler ("lockfree", "locked"), sched_start(name) ... sched_stop():
 *   create_join  thread_create of a thread that returns at once, through its join
 *   create       thread_create alone (the join untimed)
 *   suspend      thread_suspend of a thread sleeping in sched_sleep
 *   resume       thread_resume of that stopped thread
 *   signal       thread_signal until the handler ran in the target (a spinning thread on
 *                another CPU, forced off by the scheduler; at -smp 1 a yielding thread on
 *                this CPU, the caller yielding to it)
 *   yield        two threads pinned to one CPU alternating thread_yield: ticks per switch
 *                (integer-only context switch)
 *   yield_fp     the same pair with THREAD_FP (arch_context_switch_fp)
 *   wakeup_cross sched_wakeup from CPU 0 to a thread sleeping on CPU ncpus-1 -> the wakee's
 *                first instruction after sched_sleep, by TSC stamps (skipped at -smp 1);
 *                the wakee's CPU idles 20 us before each wakeup: on hosted it is still
 *                polling (arch_idle_poll_ticks, 30 us), so the wakeup is a store it sees -
 *                the mailbox path
 *   wakeup_cross_asleep  the same with 300 us idle: the wakee's CPU has gone to sleep
 *                (hosted: sigsuspend; x86: hlt), so the wakeup is an IPI (hosted: a signal
 *                to the vCPU's thread) - the signal path
 *   line_cross   (before the wakeup rows) one cache line from CPU 0 to the last CPU and
 *                back, two threads spinning: ticks per one-way transfer, the floor of any
 *                cross-CPU handoff, measured in the same boot because on the hosted port
 *                the host's placement of the vCPU threads sets it (~130 ticks within one
 *                core complex, ~520 across, on the AMD EPYC host)
 * Each wakeup row is followed by its breakdown and the causes of its slow samples (issue
 * 27 item 2), from the TSC stamps and the idle trace of the wakee's CPU
 * (sched_idle_trace_get, thread.h): the medians of the waker's part (sched_wakeup's own
 * time), of "find" (t0 to the moment the wakee's idle loop had the thread) and of "run"
 * (from then to the wakee's first instruction); how many were handed to the polling CPU
 * (thread.c wake_handoff); and each sample slower than WAKE_SLOW_NS (the bar, 300 ns)
 * with the first cause that applies: "slept" (its CPU had stopped polling: found after
 * an interrupt, the signal path), "ipi" (an IPI went to the polling CPU), "waker_stalled"
 * or "wakee_stalled" (a step of the waker's call, of the wakee's poll or of its switch-in
 * took more than WAKE_STALL_NS, 5 us: the host did not run that vCPU), "not_idle" (no
 * find of the idle loop: its CPU ran something), "path" (none of those: the path itself,
 * which the report sets against line_cross).
 * and for k = 1..ncpus CPUs each running two yield-looping threads pinned to it, the
 * dispatches per second (sched_stats_get) over a fixed window, three windows each.
 *
 * Statistics as the other experiments (include/ksync/measure.h): samples (one operation,
 * or a batch of switches) timed with serialized TSC reads, the empty interval's median
 * subtracted, min / median / p99 / max per operation in TSC ticks. Every wait is bounded:
 * a wait that times out is counted ("timeouts") and the row says so; the experiment then
 * fails its KTAP case instead of hanging the bench run.
 *
 * Output, one line per row:
 *   KSYNC {"kind":"sched_op","sched":"lockfree","op":"yield","detail":"...","cpus":2,
 *          "oversubscribed":false,"unit":"tsc_ticks","n":..,"ops_per_sample":..,
 *          "min":..,"median":..,"p99":..,"max":..,"timeouts":0}
 *   KSYNC {"kind":"sched_op","sched":..,"op":"wakeup_cross","cpus":1,"skipped":"reason"}
 *   KSYNC {"kind":"sched_wake_causes","sched":..,"op":"wakeup_cross","unit":"tsc_ticks",
 *          "n":..,"slow_ns":300,"stall_ns":5000,"slow":..,"line_cross":..,"parts_n":..,
 *          "waker":..,"find":..,"run":..,"handed":..,"causes":{"slept":..,"ipi":..,
 *          "waker_stalled":..,"wakee_stalled":..,"not_idle":..,"path":..}}
 *   KSYNC {"kind":"sched_dispatch","sched":..,"cpus":k,"cpus_online":n,"threads":2k,
 *          "ms":100,"runs":3,"per_sec":..,"per_sec_min":..,"per_sec_max":..,
 *          "oversubscribed":false}
 * Under TCG these are the emulator's costs; the report says so.
 */
#include "kernel.h"
#include <ksync/atomic.h>
#include "experiment.h"
#include "thread.h"
#include <ksync/errors.h>
#include <ksync/measure.h>

#define MAX_SAMPLES 400
#define YIELD_BATCH 32		/* yields of the measuring thread per sample (2x switches) */
#define WAKE_GAP_US 20		/* wakeup_cross: the wakee's CPU idles this long first */
#define WAKE_SLEEP_GAP_US 300	/* wakeup_cross_asleep: past hosted's 30 us idle poll */

static uint64_t samp[MAX_SAMPLES], empt[MAX_SAMPLES];
static struct arch_facts facts;
static uint64_t budget_ticks;	/* per operation row */
static unsigned dispatch_ms;
static unsigned failures;

static uint64_t us_ticks(uint64_t us) { return arch_tsc_hz() / 1000000 * us; }
static uint64_t ms_ticks(uint64_t ms) { return arch_tsc_hz() / 1000 * ms; }
static unsigned ncpu(void) { return arch_ncpus(); }
static uint64_t cpu_bit(unsigned c) { return 1ull << c; }
static unsigned far_cpu(void) { return ncpu() - 1; }

/* the empty interval: what a begin/end pair costs with nothing between */
static void measure_empty(size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = arch_cycles_begin();
		ksync_compiler_barrier();
		empt[i] = arch_cycles_end() - t0;
	}
}

static const char *yn(bool b) { return b ? "true" : "false"; }

static void emit_op(const char *sched, const char *op, const char *detail, size_t n,
		    uint64_t ops_per_sample, unsigned timeouts)
{
	char mn[24], md[24], p9[24], mx[24];
	if (n == 0) {
		kprintf("KSYNC {\"kind\":\"sched_op\",\"sched\":\"%s\",\"op\":\"%s\",\"detail\":\"%s\","
			"\"cpus\":%u,\"oversubscribed\":%s,\"unit\":\"tsc_ticks\",\"n\":0,"
			"\"timeouts\":%u,\"skipped\":\"no sample completed (every wait timed out)\"}\n",
			sched, op, detail, ncpu(), yn(facts.oversubscribed), timeouts);
		failures++;
		return;
	}
	measure_empty(n);
	struct ksync_prim_result r = ksync_prim_compute(samp, n, ops_per_sample, empt, n);
	ksync_fixed2_format(mn, sizeof mn, r.min_x100);
	ksync_fixed2_format(md, sizeof md, r.median_x100);
	ksync_fixed2_format(p9, sizeof p9, r.p99_x100);
	ksync_fixed2_format(mx, sizeof mx, r.max_x100);
	kprintf("KSYNC {\"kind\":\"sched_op\",\"sched\":\"%s\",\"op\":\"%s\",\"detail\":\"%s\","
		"\"cpus\":%u,\"oversubscribed\":%s,\"unit\":\"tsc_ticks\",\"n\":%lu,"
		"\"ops_per_sample\":%lu,\"min\":%s,\"median\":%s,\"p99\":%s,\"max\":%s,"
		"\"timeouts\":%u}\n",
		sched, op, detail, ncpu(), yn(facts.oversubscribed), (unsigned long)n,
		(unsigned long)ops_per_sample, mn, md, p9, mx, timeouts);
	if (timeouts)
		failures++;
}

static void emit_skip(const char *sched, const char *op, const char *why)
{
	kprintf("KSYNC {\"kind\":\"sched_op\",\"sched\":\"%s\",\"op\":\"%s\",\"cpus\":%u,"
		"\"oversubscribed\":%s,\"skipped\":\"%s\"}\n", sched, op, ncpu(),
		yn(facts.oversubscribed), why);
}

/* a bounded wait: true once cond holds, false after `ms` (the caller counts it) */
#define WAIT_UNTIL(cond, ms, step)                                                    \
	({                                                                            \
		uint64_t w0_ = arch_cycles(), lim_ = ms_ticks(ms);                    \
		bool ok_ = true;                                                      \
		while (!(cond)) {                                                     \
			if (arch_cycles() - w0_ > lim_) {                             \
				ok_ = false;                                          \
				break;                                                \
			}                                                             \
			step;                                                         \
		}                                                                     \
		ok_;                                                                  \
	})

/* ---- create ------------------------------------------------------------------------ */

static void nop_fn(void *arg) { (void)arg; }

static void op_create(const char *s)
{
	size_t n = 0;
	uint64_t end = arch_cycles() + budget_ticks;
	/* warm-up: a few untimed */
	for (unsigned i = 0; i < 4; i++) {
		struct thread *t;
		if (thread_create(&t, nop_fn, NULL, 1, cpu_bit(0), "exp-nop", 0) == KSYNC_OK)
			thread_join(t);
	}
	while (n < MAX_SAMPLES && arch_cycles() < end) {
		struct thread *t;
		uint64_t t0 = arch_cycles_begin();
		int rc = thread_create(&t, nop_fn, NULL, 1, cpu_bit(0), "exp-nop", 0);
		if (rc == KSYNC_OK)
			rc = thread_join(t);
		samp[n] = arch_cycles_end() - t0;
		if (rc != KSYNC_OK)
			break;
		n++;
	}
	emit_op(s, "create_join", "thread_create + the thread's exit + thread_join, same CPU",
		n, 1, 0);
	n = 0;
	end = arch_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && arch_cycles() < end) {
		struct thread *t;
		uint64_t t0 = arch_cycles_begin();
		int rc = thread_create(&t, nop_fn, NULL, 1, cpu_bit(0), "exp-nop", 0);
		samp[n] = arch_cycles_end() - t0;
		if (rc != KSYNC_OK)
			break;
		thread_join(t);
		n++;
	}
	emit_op(s, "create", "thread_create alone (the join untimed)", n, 1, 0);
}

/* ---- suspend / resume of a sleeping thread -------------------------------------------- */

static void sleeper_fn(void *arg)
{
	(void)arg;
	for (;;)
		sched_sleep(SCHED_COND(21));	/* nobody sets it: a kill ends it */
}

static bool asleep(struct thread *t)
{
	uint64_t st = thread_state(t);
	return !(st & (SCHED_READY | SCHED_ONCPU));
}

static size_t n_res;
static uint64_t res_samp[MAX_SAMPLES];

static void op_suspend_resume(const char *s)
{
	struct thread *t;
	unsigned timeouts = 0;
	size_t n = 0;
	n_res = 0;
	if (thread_create(&t, sleeper_fn, NULL, 1, cpu_bit(far_cpu()), "exp-sleeper", 0) != KSYNC_OK) {
		emit_skip(s, "suspend", "thread_create failed");
		failures++;
		return;
	}
	if (!WAIT_UNTIL(asleep(t), 2000, thread_yield()))
		timeouts++;
	uint64_t end = arch_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && arch_cycles() < end && timeouts < 4) {
		uint64_t t0 = arch_cycles_begin();
		int rc = thread_suspend(t);
		samp[n] = arch_cycles_end() - t0;
		if (rc != KSYNC_OK)
			break;
		n++;
		/* it is stopped (the mark is all a sleeping thread needs) */
		if (!WAIT_UNTIL(thread_state(t) & SCHED_STOPPED, 100, arch_cpu_relax()))
			timeouts++;
		t0 = arch_cycles_begin();
		rc = thread_resume(t);
		res_samp[n_res] = arch_cycles_end() - t0;
		if (rc != KSYNC_OK)
			break;
		n_res++;
		if (!WAIT_UNTIL(asleep(t) && !(thread_state(t) & SCHED_STOPPED), 100,
				thread_yield()))
			timeouts++;
	}
	emit_op(s, "suspend", "thread_suspend of a thread sleeping in sched_sleep", n, 1, timeouts);
	for (size_t i = 0; i < n_res; i++)
		samp[i] = res_samp[i];
	emit_op(s, "resume", "thread_resume of that stopped thread (it sleeps on)", n_res, 1,
		timeouts);
	thread_kill(t);
	thread_join(t);
}

/* ---- signal ----------------------------------------------------------------------------- */

static volatile uint64_t sig_stamp;
static volatile int sig_stop;

static void sig_handler(void *arg)
{
	(void)arg;
	__atomic_store_n(&sig_stamp, arch_cycles_end(), __ATOMIC_RELEASE);
}

static void sig_target_fn(void *arg)
{
	bool yielder = arg != NULL;
	while (!__atomic_load_n(&sig_stop, __ATOMIC_ACQUIRE)) {
		if (yielder)
			thread_yield();
		else
			arch_cpu_relax();
	}
}

static void op_signal(const char *s)
{
	bool one = ncpu() == 1;
	struct thread *t;
	unsigned timeouts = 0;
	size_t n = 0;
	sig_stop = 0;
	if (thread_create(&t, sig_target_fn, one ? (void *)1 : NULL, 1, cpu_bit(far_cpu()),
			  "exp-sigtarget", 0) != KSYNC_OK) {
		emit_skip(s, "signal", "thread_create failed");
		failures++;
		return;
	}
	/* it runs */
	if (!one)
		WAIT_UNTIL(thread_dispatches(t) > 0, 2000, arch_cpu_relax());
	uint64_t end = arch_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && arch_cycles() < end && timeouts < 4) {
		__atomic_store_n(&sig_stamp, 0, __ATOMIC_RELEASE);
		uint64_t t0 = arch_cycles_begin();
		if (thread_signal(t, sig_handler, NULL) != KSYNC_OK)
			break;
		if (!WAIT_UNTIL(__atomic_load_n(&sig_stamp, __ATOMIC_ACQUIRE) != 0, 200,
				one ? thread_yield() : arch_cpu_relax())) {
			timeouts++;
			continue;
		}
		uint64_t st = __atomic_load_n(&sig_stamp, __ATOMIC_ACQUIRE);
		samp[n++] = st > t0 ? st - t0 : 0;
	}
	emit_op(s, "signal", one ? "thread_signal -> the handler ran in a yielding thread on "
		"this CPU (the caller yields to it)" : "thread_signal -> the handler ran in a "
		"thread spinning on another CPU (forced off, the signal run at its switch-in)",
		n, 1, timeouts);
	__atomic_store_n(&sig_stop, 1, __ATOMIC_RELEASE);
	thread_join(t);
}

/* ---- yield pair: ticks per switch ---------------------------------------------------- */

static volatile int pair_stop, pair_go;
static volatile size_t pair_n;
static volatile unsigned pair_timeouts;

static void pair_measure_fn(void *arg)
{
	(void)arg;
	size_t n = 0;
	while (!__atomic_load_n(&pair_go, __ATOMIC_ACQUIRE))
		thread_yield();
	for (unsigned i = 0; i < 64; i++)	/* warm-up */
		thread_yield();
	uint64_t end = arch_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && arch_cycles() < end) {
		uint64_t t0 = arch_cycles_begin();
		for (unsigned i = 0; i < YIELD_BATCH; i++)
			thread_yield();
		samp[n++] = arch_cycles_end() - t0;
	}
	pair_n = n;
	__atomic_store_n(&pair_stop, 1, __ATOMIC_RELEASE);
}

static void pair_partner_fn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&pair_stop, __ATOMIC_ACQUIRE))
		thread_yield();
}

static void op_yield(const char *s, bool fp)
{
	struct thread *a, *b;
	unsigned c = far_cpu(), flags = fp ? THREAD_FP : 0;
	pair_stop = pair_go = 0;
	pair_n = 0;
	if (thread_create(&a, pair_measure_fn, NULL, 1, cpu_bit(c), "exp-yield-a", flags) != KSYNC_OK)
		goto fail;
	if (thread_create(&b, pair_partner_fn, NULL, 1, cpu_bit(c), "exp-yield-b", flags) != KSYNC_OK) {
		pair_stop = pair_go = 1;
		thread_join(a);
		goto fail;
	}
	__atomic_store_n(&pair_go, 1, __ATOMIC_RELEASE);
	thread_join(a);
	thread_join(b);
	/* each sample: YIELD_BATCH yields of one thread = 2 x YIELD_BATCH switches */
	emit_op(s, fp ? "yield_fp" : "yield",
		fp ? "two THREAD_FP threads pinned to one CPU alternating thread_yield: ticks per "
		     "switch (arch_context_switch_fp)"
		   : "two threads pinned to one CPU alternating thread_yield: ticks per switch "
		     "(integer-only context)",
		pair_n, 2 * YIELD_BATCH, 0);
	return;
fail:
	emit_skip(s, fp ? "yield_fp" : "yield", "thread_create failed");
	failures++;
}

/* ---- a cache line between two CPUs ------------------------------------------------------ */

/* line_cross: what one cache line costs to go from CPU 0 to the last CPU and back, two
 * threads spinning (each waits for the other's store, then stores): per one-way transfer.
 * The floor of any cross-CPU handoff: a wakeup moves at least one line (the waker's
 * writes) to the wakee's CPU. Measured before each wakeup row, in the same boot: on a
 * hosted run the host places the vCPU threads, and where it places them (one core
 * complex or two) sets this figure - 60 to 170 ns on the AMD EPYC host - and with it the
 * wakeup's. */
#define LINE_TRIPS 8
#define LINE_MIN 50
static _Alignas(64) volatile uint64_t line_a;
static _Alignas(64) volatile uint64_t line_b;
static volatile int line_stop;

static void line_echo_fn(void *arg)
{
	(void)arg;
	uint64_t seen = 0;
	while (!__atomic_load_n(&line_stop, __ATOMIC_ACQUIRE)) {
		uint64_t a = __atomic_load_n(&line_a, __ATOMIC_ACQUIRE);
		if (a != seen) {
			seen = a;
			__atomic_store_n(&line_b, a, __ATOMIC_RELEASE);	/* the echo */
		} else {
			arch_cpu_relax();
		}
	}
}

static uint64_t op_line_cross(const char *s)
{
	if (ncpu() < 2) {
		emit_skip(s, "line_cross", "-smp 1: no second CPU");
		return 0;
	}
	struct thread *t;
	unsigned timeouts = 0;
	size_t n = 0;
	line_stop = 0;
	line_a = line_b = 0;
	if (thread_create(&t, line_echo_fn, NULL, 1, cpu_bit(far_cpu()), "exp-line", 0) != KSYNC_OK) {
		emit_skip(s, "line_cross", "thread_create failed");
		failures++;
		return 0;
	}
	uint64_t v = 0;
	/* it runs (its first echo) */
	__atomic_store_n(&line_a, ++v, __ATOMIC_RELEASE);
	if (!WAIT_UNTIL(__atomic_load_n(&line_b, __ATOMIC_ACQUIRE) == v, 2000, arch_cpu_relax()))
		timeouts++;
	/* at least LINE_MIN samples (a host that deschedules a vCPU for milliseconds
	 * would leave one), at most the row's budget beyond them */
	uint64_t end = arch_cycles() + budget_ticks / 4;
	while (!timeouts && n < MAX_SAMPLES && (n < LINE_MIN || arch_cycles() < end)) {
		uint64_t t0 = arch_cycles_begin();
		bool ok = true;
		for (unsigned i = 0; i < LINE_TRIPS && ok; i++) {
			__atomic_store_n(&line_a, ++v, __ATOMIC_RELEASE);
			ok = WAIT_UNTIL(__atomic_load_n(&line_b, __ATOMIC_ACQUIRE) == v, 100,
					arch_cpu_relax());
		}
		uint64_t t1 = arch_cycles_end();
		if (!ok) {
			timeouts++;
			break;
		}
		samp[n++] = t1 - t0;
	}
	__atomic_store_n(&line_stop, 1, __ATOMIC_RELEASE);
	thread_join(t);
	uint64_t med = 0;
	if (n) {
		for (size_t i = 0; i < n; i++)
			empt[i] = samp[i];
		ksync_sort_u64(empt, n);
		med = empt[(n - 1) / 2] / (2 * LINE_TRIPS);
	}
	emit_op(s, "line_cross", "a cache line from CPU 0 to the last CPU and back, two threads "
		"spinning: ticks per one-way transfer (the floor of a cross-CPU handoff)",
		n, 2 * LINE_TRIPS, timeouts);
	return med;
}

/* ---- cross-CPU wakeup ------------------------------------------------------------------ */

/* A wakeup slower than this is "slow" and gets a cause (the wakeup bar: 300 ns). */
#define WAKE_SLOW_NS 300
/* A gap this long in a path that takes ~100 ns a step means the vCPU did not run: the
 * host descheduled it (or, rarely, an interrupt handler ran that long). */
#define WAKE_STALL_NS 5000

enum wake_cause {
	WC_WAKER,	/* the waker's own part (sched_wakeup) stalled */
	WC_WAKEE,	/* the wakee's CPU stalled: poll step or switch-in past WAKE_STALL_NS */
	WC_SLEPT,	/* its CPU had stopped polling: found after an interrupt (signal path) */
	WC_IPI,		/* an IPI went to the polling CPU during the wakeup */
	WC_NOIDLE,	/* no find of the idle loop recorded: its CPU ran something else */
	WC_PATH,	/* none of those: the path itself (cache-line transfers and the switch) */
	WC_N
};
static const char *const wake_cause_name[WC_N] = {
	"waker_stalled", "wakee_stalled", "slept", "ipi", "not_idle", "path",
};

static volatile uint64_t wake_stamp;
static volatile int wake_stop;
static uint64_t part_waker[MAX_SAMPLES], part_find[MAX_SAMPLES], part_run[MAX_SAMPLES];

static void wakee_fn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&wake_stop, __ATOMIC_ACQUIRE)) {
		sched_sleep(SCHED_COND_USER);
		uint64_t t = arch_cycles_end();	/* the wakee's first instruction */
		__atomic_store_n(&wake_stamp, t, __ATOMIC_RELEASE);
	}
}

static uint64_t median_of(uint64_t *a, size_t n)
{
	if (!n)
		return 0;
	ksync_sort_u64(a, n);
	return a[(n - 1) / 2];
}

/* The cause of one slow wakeup, from the idle trace of the wakee's CPU before (b) and
 * after (a) it and the sample's stamps: the first that applies. */
static enum wake_cause wake_cause_of(const struct sched_idle_trace *b, const struct sched_idle_trace *a,
				     uint64_t t0, uint64_t tw, uint64_t st, uint64_t stall)
{
	bool found = a->seq != b->seq;
	/* the interrupt path first: its own cost (a signal: a system call to send, the
	 * host's delivery) would otherwise read as a stall of the waker or the wakee */
	if (a->idle_wakeups != b->idle_wakeups ||
	    (found && (a->how == SCHED_FOUND_LAST || a->how == SCHED_FOUND_PICK)))
		return WC_SLEPT;
	if (a->ipis != b->ipis)
		return WC_IPI;
	if (tw - t0 > stall)
		return WC_WAKER;
	if (!found)
		return WC_NOIDLE;
	if (a->step_gap > stall || (st > a->found_at && st - a->found_at > stall))
		return WC_WAKEE;
	return WC_PATH;
}

static void op_wakeup_cross(const char *s, const char *op, unsigned gap_us, uint64_t line_tick)
{
	if (ncpu() < 2) {
		emit_skip(s, op, "-smp 1: no second CPU to wake a thread on");
		return;
	}
	/* the caller (boot thread) is bound to CPU 0; the wakee lives on the last CPU */
	struct thread *t;
	unsigned timeouts = 0, causes[WC_N] = { 0 }, slow = 0, handed = 0;
	size_t n = 0, np = 0;
	uint64_t slow_ticks = arch_tsc_hz() / 1000000 * WAKE_SLOW_NS / 1000;
	uint64_t stall = arch_tsc_hz() / 1000000 * WAKE_STALL_NS / 1000;
	wake_stop = 0;
	wake_stamp = 0;
	if (thread_create(&t, wakee_fn, NULL, 1, cpu_bit(far_cpu()), "exp-wakee", 0) != KSYNC_OK) {
		emit_skip(s, op, "thread_create failed");
		failures++;
		return;
	}
	uint64_t end = arch_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && arch_cycles() < end && timeouts < 4) {
		if (!WAIT_UNTIL(asleep(t), 200, arch_cpu_relax())) {
			timeouts++;
			sched_wakeup(t, SCHED_COND_USER);
			continue;
		}
		uint64_t g0 = arch_cycles();
		while (arch_cycles() - g0 < us_ticks(gap_us))
			arch_cpu_relax();
		__atomic_store_n(&wake_stamp, 0, __ATOMIC_RELEASE);
		struct sched_idle_trace tb, ta;
		sched_idle_trace_get(far_cpu(), &tb);
		uint64_t t0 = arch_cycles_begin();
		sched_wakeup(t, SCHED_COND_USER);
		uint64_t tw = arch_cycles();
		if (!WAIT_UNTIL(__atomic_load_n(&wake_stamp, __ATOMIC_ACQUIRE) != 0, 200,
				arch_cpu_relax())) {
			timeouts++;
			continue;
		}
		uint64_t st = __atomic_load_n(&wake_stamp, __ATOMIC_ACQUIRE);
		sched_idle_trace_get(far_cpu(), &ta);
		samp[n++] = st > t0 ? st - t0 : 0;
		/* the parts, when exactly one find of the idle loop lies between */
		if (ta.seq == tb.seq + 1 && ta.found_at >= t0 && ta.found_at <= st) {
			part_waker[np] = tw - t0;
			part_find[np] = ta.found_at - t0;
			part_run[np] = st - ta.found_at;
			np++;
		}
		if (ta.wake_handoffs != tb.wake_handoffs)
			handed++;
		if (st - t0 > slow_ticks) {
			slow++;
			causes[wake_cause_of(&tb, &ta, t0, tw, st, stall)]++;
		}
	}
	char detail[160];
	ksnprintf(detail, sizeof detail, "sched_wakeup on CPU 0 -> the wakee's first instruction "
		  "on the last CPU (idle %u us before each wakeup; TSC stamps of two CPUs)", gap_us);
	emit_op(s, op, detail, n, 1, timeouts);
	/* the breakdown and the causes (raw TSC, the empty interval not subtracted) */
	uint64_t mw = median_of(part_waker, np), mf = median_of(part_find, np),
		 mr = median_of(part_run, np);
	kprintf("KSYNC {\"kind\":\"sched_wake_causes\",\"sched\":\"%s\",\"op\":\"%s\",\"cpus\":%u,"
		"\"unit\":\"tsc_ticks\",\"n\":%lu,\"slow_ns\":%u,\"stall_ns\":%u,\"slow\":%u,"
		"\"line_cross\":%lu,\"parts_n\":%lu,\"waker\":%lu,\"find\":%lu,\"run\":%lu,"
		"\"handed\":%u,\"causes\":{", s, op, ncpu(), (unsigned long)n, WAKE_SLOW_NS,
		WAKE_STALL_NS, slow, (unsigned long)line_tick, (unsigned long)np, (unsigned long)mw,
		(unsigned long)mf, (unsigned long)mr, handed);
	for (unsigned c = 0; c < WC_N; c++)
		kprintf("%s\"%s\":%u", c ? "," : "", wake_cause_name[c], causes[c]);
	kprintf("}}\n");
	__atomic_store_n(&wake_stop, 1, __ATOMIC_RELEASE);
	sched_wakeup(t, SCHED_COND_USER);
	thread_join(t);
}

/* ---- dispatches per second under contention ----------------------------------------- */

#define DISPATCH_RUNS 3
static volatile int disp_go, disp_stop;
static volatile uint64_t disp_deadline, disp_t1, disp_d1;

static void disp_fn(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&disp_go, __ATOMIC_ACQUIRE))
		thread_yield();
	while (!__atomic_load_n(&disp_stop, __ATOMIC_ACQUIRE)) {
		thread_yield();
		if (arch_cycles() >= disp_deadline) {
			int z = 0;
			if (__atomic_compare_exchange_n(&disp_stop, &z, 1, false, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE)) {
				struct sched_stats st;
				sched_stats_get(&st);
				disp_t1 = arch_cycles();
				disp_d1 = st.dispatches;
			}
		}
	}
}

static void dispatch_rate(const char *s)
{
	unsigned n = ncpu();
	for (unsigned k = 1; k <= n; k++) {
		uint64_t rate[DISPATCH_RUNS];
		unsigned runs = 0;
		for (unsigned r = 0; r < DISPATCH_RUNS; r++) {
			struct thread *t[2 * 64];
			unsigned made = 0;
			disp_go = disp_stop = 0;
			disp_deadline = ~0ull;
			/* the busy CPUs are the last k: CPU 0 (where this boot thread lives) only
			 * when k = n */
			for (unsigned c = n - k; c < n; c++)
				for (unsigned j = 0; j < 2; j++)
					if (thread_create(&t[made], disp_fn, NULL, 1, cpu_bit(c),
							  "exp-disp", 0) == KSYNC_OK)
						made++;
			struct sched_stats st;
			sched_stats_get(&st);
			uint64_t t0 = arch_cycles(), d0 = st.dispatches;
			disp_deadline = t0 + ms_ticks(dispatch_ms);
			__atomic_store_n(&disp_go, 1, __ATOMIC_RELEASE);
			for (unsigned i = 0; i < made; i++)
				thread_join(t[i]);
			if (made == 2 * k && disp_t1 > t0) {
				uint64_t d = disp_d1 - d0;
				rate[runs++] = d * arch_tsc_hz() / (disp_t1 - t0);
			} else {
				failures++;
			}
		}
		if (!runs)
			continue;
		ksync_sort_u64(rate, runs);
		kprintf("KSYNC {\"kind\":\"sched_dispatch\",\"sched\":\"%s\",\"cpus\":%u,"
			"\"cpus_online\":%u,\"threads\":%u,\"ms\":%u,\"runs\":%u,\"per_sec\":%lu,"
			"\"per_sec_min\":%lu,\"per_sec_max\":%lu,\"oversubscribed\":%s}\n",
			s, k, n, 2 * k, dispatch_ms, runs, (unsigned long)rate[(runs - 1) / 2],
			(unsigned long)rate[0], (unsigned long)rate[runs - 1],
			yn(facts.oversubscribed));
	}
}

KEXPERIMENT(sched_ops, "default")
{
	static const char *const scheds[] = { "lockfree", "locked" };
	arch_get_facts(&facts);
	bool hosted = facts.port && strcmp(facts.port, "hosted") == 0;
	/* hosted: ~3 s in all at -smp 2; tcg: ~10 s */
	budget_ticks = ms_ticks(hosted ? 50 : 250);
	dispatch_ms = hosted ? 100 : 300;
	failures = 0;
	for (unsigned i = 0; i < 2; i++) {
		const char *s = scheds[i];
		int rc = sched_start(s);
		if (rc != KSYNC_OK) {
			kt_diag(kt, "sched_start(%s) failed: %d", s, rc);
			failures++;
			continue;
		}
		op_create(s);
		op_suspend_resume(s);
		op_signal(s);
		op_yield(s, false);
		op_yield(s, true);
		uint64_t line = op_line_cross(s);
		op_wakeup_cross(s, "wakeup_cross", WAKE_GAP_US, line);
		op_wakeup_cross(s, "wakeup_cross_asleep", WAKE_SLEEP_GAP_US, line);
		dispatch_rate(s);
		rc = sched_stop();
		if (rc != KSYNC_OK) {
			kt_diag(kt, "sched_stop (%s): %d", s, rc);
			failures++;
		}
	}
	if (failures)
		kt_diag(kt, "%u rows timed out or failed (see the KSYNC lines)", failures);
	KT_EXPECT_EQ(failures, 0u);
}
