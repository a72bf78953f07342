/*
 * arch/hosted/ktest_context.c - the hosted port's thread hooks tested on their own,
 * without the scheduler (arch_if.h "threads"; docs/hosted-port.md "Threads on the hosted
 * port"): a 100000-round ping-pong of two contexts on arch_stack_alloc'd stacks with
 * locals kept; the fp switch keeping xmm0 and MXCSR apart in two fp contexts; the stack
 * canary and 600 stacks; a real preemption through arch_frame_call (a clock handler
 * interrupts a spinning loop, fn switches to another context and back, the loop's
 * registers survive), and the requests that must be refused. Prints (never asserts) the
 * median TSC ticks of an integer and an fp switch pair.
 *
 * Linked into the hosted kernel through mk/hosted-kernel.mk's HK_PORT_SRCS (a port file:
 * it may include <signal.h> to check the host signal mask fn runs with).
 * Shared state: every test runs on the BSP; the handlers run there too (IRQs off), so
 * the volatile fields below need no atomics.
 */
#define _GNU_SOURCE
#include "kernel.h"
#include <ksync/ktest.h>

#include <signal.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define KT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KT_ASAN 1
#endif
#endif
#ifndef KT_ASAN
#define KT_ASAN 0
#endif
#define KT_TSAN HOSTED_TSAN_KERNEL
/* Sanitizer hooks run inside arch_context_switch*, between the caller and the asm: they
 * may use caller-saved registers (xmm0 among them), as any call may. */
#define KT_HOOKS (KT_ASAN || KT_TSAN)
#define FLAVOUR (KT_ASAN ? "asan" : KT_TSAN ? "tsan" : HOSTED_HARD_MASK ? "hard" : "plain")

#define STACK 65536u

/* context.c: the FP/SIMD save format found at boot */
extern uint8_t hosted_fp_xsave;
uint32_t hosted_fp_area_bytes(void);
#define MS (arch_tsc_hz() / 1000u)

static inline uint64_t xmm0_get(void)
{
	uint64_t v;
	__asm__ volatile("movq %%xmm0, %0" : "=r"(v));
	return v;
}

static inline void xmm0_set(uint64_t v)
{
	__asm__ volatile("movq %0, %%xmm0" : : "r"(v) : "xmm0");
}

/* MXCSR's control bits (the exception flags, bits 0-5, are sticky status: 1/3 sets PE) */
static inline uint32_t mxcsr_get(void)
{
	uint32_t v;
	__asm__ volatile("stmxcsr %0" : "=m"(v));
	return v & ~0x3fu;
}

static inline void mxcsr_set(uint32_t v)
{
	__asm__ volatile("ldmxcsr %0" : : "m"(v));
}

/* ---- (a) ping-pong ------------------------------------------------------------------- */
struct pp {
	struct arch_context main, a, b;
	unsigned n;
	volatile uint64_t sum_a, sum_b, b_rounds;
	volatile unsigned bad;
};

static void pp_a(void *arg)
{
	struct pp *p = arg;
	volatile uint64_t mark = 0xa11ceull;	/* a local in memory on this stack */
	uint64_t acc = 0;			/* one the compiler keeps in a register */

	for (unsigned i = 0; i < p->n; i++) {
		acc += i;
		arch_context_switch(&p->a, &p->b);
		if (mark != 0xa11ceull)
			p->bad++;
	}
	p->sum_a = acc;
	arch_context_switch(&p->a, &p->main);
	panic("ping-pong: context a resumed after the end");
}

static void pp_b(void *arg)
{
	struct pp *p = arg;
	volatile uint64_t mark = 0xb0bull;
	uint64_t acc = 0;

	for (uint64_t i = 0;; i++) {
		acc += 2 * i;
		p->sum_b = acc;
		p->b_rounds = i + 1;
		arch_context_switch(&p->b, &p->a);
		if (mark != 0xb0bull)
			p->bad++;
	}
}

KTEST(context_switch_pingpong)
{
	static struct pp p;
	void *sa = arch_stack_alloc(STACK), *sb = arch_stack_alloc(STACK);

	KT_ASSERT(sa && sb);
	p.n = 100000;
	p.bad = 0;
	irqkey_t k = arch_irq_save();
	arch_context_adopt(&p.main);
	arch_context_init(&p.a, sa, STACK, pp_a, &p, false);
	arch_context_init(&p.b, sb, STACK, pp_b, &p, false);
	unsigned cpu0 = arch_cpu_id();
	arch_context_switch(&p.main, &p.a);
	arch_irq_restore(k);
	KT_EXPECT_EQ(arch_cpu_id(), cpu0);
	uint64_t n = p.n;
	KT_EXPECT_EQ(p.sum_a, n * (n - 1) / 2);
	KT_EXPECT_EQ(p.b_rounds, n);
	KT_EXPECT_EQ(p.sum_b, n * (n - 1));
	KT_EXPECT_EQ(p.bad, 0);
	KT_EXPECT(arch_stack_ok(sa, STACK) && arch_stack_ok(sb, STACK));
	arch_context_destroy(&p.a);
	arch_context_destroy(&p.b);
	arch_context_destroy(&p.main);
	arch_stack_free(sa, STACK);
	arch_stack_free(sb, STACK);
}

/* ---- (b) fp contexts ------------------------------------------------------------------ */
#define MXCSR_RD 0x3f80u	/* round down, exceptions masked */
#define MXCSR_RU 0x5f80u	/* round up */
struct fpt {
	struct arch_context main, a, b;
	unsigned n;
	volatile unsigned xmm_bad, mxcsr_bad, rounds;
};

static void fp_a(void *arg)
{
	struct fpt *t = arg;
	const uint64_t va = 0x4141414141414141ull;

	mxcsr_set(MXCSR_RD);
	for (unsigned i = 0; i < t->n; i++) {
		xmm0_set(va + i);
		arch_context_switch_fp(&t->a, &t->b);
		if (!KT_HOOKS && xmm0_get() != va + i)
			t->xmm_bad++;
		if (mxcsr_get() != MXCSR_RD)
			t->mxcsr_bad++;
		/* the rounding mode is the one in force: 1/3 rounded down < rounded up */
		volatile double one = 1.0, three = 3.0;
		volatile double q = one / three;
		t->rounds++;
		(void)q;
	}
	arch_context_switch_fp(&t->a, &t->main);
	panic("fp test: context a resumed after the end");
}

static void fp_b(void *arg)
{
	struct fpt *t = arg;
	const uint64_t vb = 0x4242424242424242ull;

	mxcsr_set(MXCSR_RU);
	for (uint64_t i = 0;; i++) {
		xmm0_set(vb + i);
		arch_context_switch_fp(&t->b, &t->a);
		if (!KT_HOOKS && xmm0_get() != vb + i)
			t->xmm_bad++;
		if (mxcsr_get() != MXCSR_RU)
			t->mxcsr_bad++;
	}
}

KTEST(context_switch_fp_state)
{
	static struct fpt t;
	void *sa = arch_stack_alloc(STACK), *sb = arch_stack_alloc(STACK);

	KT_ASSERT(sa && sb);
	t.n = 1000;
	t.xmm_bad = t.mxcsr_bad = t.rounds = 0;
	uint32_t m0 = mxcsr_get();
	irqkey_t k = arch_irq_save();
	arch_context_adopt(&t.main);	/* not an fp context: its side is skipped */
	arch_context_init(&t.a, sa, STACK, fp_a, &t, true);
	arch_context_init(&t.b, sb, STACK, fp_b, &t, true);
	arch_context_switch_fp(&t.main, &t.a);
	arch_irq_restore(k);
	KT_EXPECT_EQ(t.rounds, t.n);
	KT_EXPECT_EQ(t.xmm_bad, 0);
	KT_EXPECT_EQ(t.mxcsr_bad, 0);
	KT_EXPECT_EQ(mxcsr_get(), m0);	/* main's MXCSR: callee-saved, from its frame */
	if (KT_HOOKS)
		kt_diag(kt, "xmm0 not compared in the %s build: its fiber hooks run inside the "
			"switch call, where xmm0 is caller-saved", FLAVOUR);
	arch_context_destroy(&t.a);
	arch_context_destroy(&t.b);
	arch_stack_free(sa, STACK);
	arch_stack_free(sb, STACK);
}

/* ---- (c) stacks ------------------------------------------------------------------------ */
KTEST(context_stack_canary)
{
	void *s = arch_stack_alloc(STACK);

	KT_ASSERT(s);
	KT_EXPECT(arch_stack_ok(s, STACK));
	((volatile char *)s)[STACK - 1] = 1;	/* the whole range is usable */
	((volatile char *)s)[8] = 1;
	KT_EXPECT(arch_stack_ok(s, STACK));
	*(volatile uint64_t *)s = 0;		/* an overflow reached the bottom word */
	KT_EXPECT(!arch_stack_ok(s, STACK));
	arch_stack_free(s, STACK);
	KT_EXPECT(arch_stack_alloc(STACK + 1) == NULL);	/* not a multiple of 4096 */
	KT_EXPECT(arch_stack_alloc(0) == NULL);
}

KTEST(context_stack_many)
{
	enum { N = 600, SZ = 16384 };
	static void *st[N];
	unsigned got = 0, bad = 0;

	for (unsigned i = 0; i < N; i++) {
		st[i] = arch_stack_alloc(SZ);
		if (!st[i])
			break;
		got++;
		((volatile char *)st[i])[SZ - 1] = (char)i;
	}
	KT_EXPECT_EQ(got, N);
	for (unsigned i = 0; i < got; i++) {
		if (!arch_stack_ok(st[i], SZ) || ((volatile char *)st[i])[SZ - 1] != (char)i)
			bad++;
		if (i && st[i] == st[i - 1])
			bad++;
	}
	KT_EXPECT_EQ(bad, 0);
	for (unsigned i = 0; i < got; i++)
		arch_stack_free(st[i], SZ);
}

/* ---- (d) preemption through arch_frame_call ------------------------------------------ */
#define PRE_VEC 0xd0
#define PRE_CALLS 20u
#define M_XMM 0x0123456789abcdefull
#define M_R12 0xfedcba9876543210ull
static struct {
	struct arch_context main, b;
	volatile int stop;
	volatile int want;		/* the handler asks for frame calls */
	volatile unsigned ticks, requested, calls, b_runs, b_ticks, bad_irq, bad_mask;
	volatile uint64_t x, t_end;
} pre;

/* The host signal mask fn runs with: the clock source's signal (SIGRTMIN+1) must not be
 * blocked, or a thread fn switched to could never be interrupted. */
static bool clock_signal_blocked(void)
{
	sigset_t cur;

	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	return sigismember(&cur, SIGRTMIN + 1) == 1;
}

static void pre_fn(void)
{
	pre.calls++;
	if (!arch_irq_enabled())
		pre.bad_irq++;
	if (!KT_TSAN && clock_signal_blocked())
		pre.bad_mask++;
	irqkey_t k = arch_irq_save();
	arch_context_switch(&pre.main, &pre.b);
	arch_irq_restore(k);
	if (pre.calls >= PRE_CALLS)
		pre.stop = 1;
	else
		pre.want = 1;
}

static void pre_handler(struct trapframe *tf, void *arg)
{
	(void)arg;
	pre.ticks++;
	if (arch_cycles() > pre.t_end)
		pre.stop = 1;		/* liveness bound, not a verdict */
	/* want is cleared with the grant, not by pre_fn: fn runs with IRQs on, and a tick
	 * the host delivered late (a loaded machine) can land before its first line - its
	 * request would be one more than PRE_CALLS (it runs once fn returns, on main's
	 * stack: context_frame_call_stays_on_its_stack) */
	if (pre.want && arch_frame_call(tf, pre_fn)) {
		pre.requested++;
		pre.want = 0;
	}
}

/* Runs inside fn (a preemption): clobbers what the interrupted loop keeps in registers,
 * then takes one clock tick with IRQs on (it can be interrupted), and switches back. */
static void pre_b(void *arg)
{
	(void)arg;
	for (;;) {
		pre.b_runs++;
		__asm__ volatile("movq %0, %%xmm0\n\tmovq %0, %%r12" : : "r"(~0ull) : "xmm0", "r12");
		unsigned t = pre.ticks;
		uint64_t end = arch_cycles() + 200 * MS;
		arch_irq_enable();
		while (pre.ticks == t && arch_cycles() < end)
			arch_cpu_relax();
		arch_irq_disable();
		if (pre.ticks != t)
			pre.b_ticks++;
		arch_context_switch(&pre.b, &pre.main);
	}
}

/* while (!stop) x++, with values in xmm0 and r12 the preemption must give back; the
 * TSan build's loop passes arch_cpu_relax (TSan runs a signal handler only there). */
static void pre_spin(uint64_t *xmm_out, uint64_t *r12_out)
{
	if (KT_TSAN) {
		while (!pre.stop) {
			pre.x++;
			arch_cpu_relax();
		}
		*xmm_out = M_XMM;
		*r12_out = M_R12;
		return;
	}
	uint64_t xo, ro;
	__asm__ volatile("movq %[m1], %%xmm0\n\t"
			 "movq %[m2], %%r12\n"
			 "1:\n\t"
			 "incq %[x]\n\t"
			 "cmpl $0, %[stop]\n\t"
			 "je 1b\n\t"
			 "movq %%xmm0, %[xo]\n\t"
			 "movq %%r12, %[ro]"
			 : [x] "+m"(pre.x), [xo] "=&r"(xo), [ro] "=&r"(ro)
			 : [stop] "m"(pre.stop), [m1] "r"(M_XMM), [m2] "r"(M_R12)
			 : "xmm0", "r12", "cc", "memory");
	*xmm_out = xo;
	*r12_out = ro;
}

KTEST(context_frame_call_preempts)
{
	void *sb = arch_stack_alloc(STACK);
	uint64_t xo = 0, ro = 0;
	const uint32_t mxcsr_rz = 0x7f80;	/* round toward zero: the loop's own */

	KT_ASSERT(sb);
	KT_ASSERT(arch_irq_enabled());
	memset((void *)&pre, 0, sizeof pre);
	arch_context_adopt(&pre.main);
	arch_context_init(&pre.b, sb, STACK, pre_b, NULL, false);
	pre.t_end = arch_cycles() + 5000 * MS;
	arch_set_handler(PRE_VEC, pre_handler, NULL);
	pre.want = 1;
	uint32_t m0 = mxcsr_get();
	mxcsr_set(mxcsr_rz);
	arch_timer_periodic(PRE_VEC, 1000);
	pre_spin(&xo, &ro);
	arch_timer_periodic(PRE_VEC, 0);
	uint32_t m1 = mxcsr_get();
	mxcsr_set(m0);
	arch_set_handler(PRE_VEC, NULL, NULL);
	kt_diag(kt, "%s: %u ticks, %u frame calls, loop at %llu, b ran %u times and took %u ticks "
		"with IRQs on", FLAVOUR, pre.ticks, pre.calls, (unsigned long long)pre.x, pre.b_runs,
		pre.b_ticks);
	KT_EXPECT_EQ(pre.calls, PRE_CALLS);
	KT_EXPECT_EQ(pre.requested, PRE_CALLS);
	KT_EXPECT_EQ(pre.b_runs, PRE_CALLS);
	KT_EXPECT_EQ(pre.b_ticks, PRE_CALLS);
	KT_EXPECT_EQ(pre.bad_irq, 0);
	KT_EXPECT_EQ(pre.bad_mask, 0);
	KT_EXPECT(pre.x > 0);
	KT_EXPECT_EQ(xo, M_XMM);	/* every register of the interrupted code kept */
	KT_EXPECT_EQ(ro, M_R12);
	KT_EXPECT_EQ(m1, mxcsr_rz);
	KT_EXPECT(arch_irq_enabled());
	arch_context_destroy(&pre.b);
	arch_stack_free(sb, STACK);
}

/* Requests that must be refused: outside any delivery (IRQs on or off), and from a
 * handler nested in another (not the outermost); the outermost one of a delivery in
 * thread context (a self-IPI taken at once) is granted and fn runs when it returns. */
#define NEST_OUTER 0xd1
#define NEST_INNER 0xd2
static struct {
	volatile int outer_ret, inner_ret, fn_runs, fn_irq_on, after_outer;
} nest;

static void nest_fn(void)
{
	nest.fn_runs++;
	nest.fn_irq_on = arch_irq_enabled();
}

static void nest_inner(struct trapframe *tf, void *arg)
{
	(void)arg;
	nest.inner_ret = arch_frame_call(tf, nest_fn) ? 1 : 2;
}

static void nest_outer(struct trapframe *tf, void *arg)
{
	(void)arg;
	arch_irq_enable();		/* a handler that nests (the spl schemes' do) */
	arch_self_ipi(NEST_INNER);	/* taken at once: IRQs are on */
	arch_irq_disable();
	nest.outer_ret = arch_frame_call(tf, nest_fn) ? 1 : 2;
	nest.after_outer = nest.fn_runs;	/* fn has not run yet */
}

KTEST(context_frame_call_refused)
{
	memset((void *)&nest, 0, sizeof nest);
	KT_ASSERT(arch_irq_enabled());
	KT_EXPECT(!arch_frame_call(NULL, nest_fn));	/* thread context, IRQs on */
	irqkey_t k = arch_irq_save();
	KT_EXPECT(!arch_frame_call(NULL, nest_fn));	/* thread context, IRQs off */
	arch_irq_restore(k);
	KT_EXPECT_EQ(nest.fn_runs, 0);

	arch_set_handler(NEST_OUTER, nest_outer, NULL);
	arch_set_handler(NEST_INNER, nest_inner, NULL);
	arch_self_ipi(NEST_OUTER);
	for (unsigned i = 0; i < 1000 && !nest.outer_ret; i++)
		arch_cpu_relax();
	arch_set_handler(NEST_OUTER, NULL, NULL);
	arch_set_handler(NEST_INNER, NULL, NULL);
	KT_EXPECT_EQ(nest.inner_ret, 2);	/* nested: refused */
	KT_EXPECT_EQ(nest.outer_ret, 1);	/* outermost, IRQs were on: granted */
	KT_EXPECT_EQ(nest.after_outer, 0);
	KT_EXPECT_EQ(nest.fn_runs, 1);		/* once, after the delivery returned */
	KT_EXPECT_EQ(nest.fn_irq_on, 1);
	KT_EXPECT(arch_irq_enabled());
}

/* A request made while a frame call runs on a stack belongs to that stack: it runs there
 * once fn returns, never on a context fn switched to. fn (a frame call on main's stack)
 * takes a self-IPI with IRQs on, whose handler asks for a second call (recorded: one frame
 * call per stack), then switches to b, which enables IRQs. Before the fix the request was
 * the vCPU's, and b's enable ran it on b's stack: context_frame_call_preempts' pre_fn,
 * run there, switched "from main" to b while on b and the vCPU died in pre_b (a tick that
 * a loaded host delivered late, between the frame call's unblock and pre.want = 0). */
#define ESC_VEC 0xd3
static struct {
	struct arch_context main, b;
	volatile int requests, runs, runs_on_b, b_running, b_enabled;
} esc;

static void esc_fn(void)
{
	if (esc.b_running) {		/* the defect: b's enable ran main's request */
		esc.runs_on_b++;
		return;
	}
	if (++esc.runs != 1)
		return;			/* the second request, after the first call returned */
	arch_self_ipi(ESC_VEC);		/* IRQs on: taken at once, its request recorded */
	irqkey_t k = arch_irq_save();
	arch_context_switch(&esc.main, &esc.b);
	arch_irq_restore(k);
}

static void esc_handler(struct trapframe *tf, void *arg)
{
	(void)arg;
	if (esc.requests < 2 && arch_frame_call(tf, esc_fn))
		esc.requests++;
}

static void esc_b(void *arg)
{
	(void)arg;
	for (;;) {
		esc.b_running = 1;
		arch_irq_enable();	/* the enable's replay: where the escaped call ran */
		esc.b_enabled++;
		arch_irq_disable();
		esc.b_running = 0;
		arch_context_switch(&esc.b, &esc.main);
	}
}

KTEST(context_frame_call_stays_on_its_stack)
{
	void *sb = arch_stack_alloc(STACK);

	KT_ASSERT(sb);
	KT_ASSERT(arch_irq_enabled());
	memset((void *)&esc, 0, sizeof esc);
	arch_context_adopt(&esc.main);
	arch_context_init(&esc.b, sb, STACK, esc_b, NULL, false);
	arch_set_handler(ESC_VEC, esc_handler, NULL);
	arch_self_ipi(ESC_VEC);		/* the first request: fn runs when the poll returns */
	for (unsigned i = 0; i < 1000 && esc.runs < 2; i++)
		arch_cpu_relax();
	arch_set_handler(ESC_VEC, NULL, NULL);
	KT_EXPECT_EQ(esc.requests, 2);
	KT_EXPECT_EQ(esc.b_enabled, 1);
	KT_EXPECT_EQ(esc.runs_on_b, 0);	/* never on the stack fn switched to */
	KT_EXPECT_EQ(esc.runs, 2);	/* both on main: the second once the first returned */
	KT_EXPECT(arch_irq_enabled());
	arch_context_destroy(&esc.b);
	arch_stack_free(sb, STACK);
}

/* ---- switch costs (printed, not asserted) --------------------------------------------- */
#define COST_N 20001u
struct cost {
	struct arch_context main, a, b;
	bool fp;
	uint64_t *s;
	uint64_t empty;
};

static void cost_sw(struct cost *c, struct arch_context *from, struct arch_context *to)
{
	if (c->fp)
		arch_context_switch_fp(from, to);
	else
		arch_context_switch(from, to);
}

static void cost_a(void *arg)
{
	struct cost *c = arg;

	for (unsigned i = 0; i < COST_N; i++) {
		uint64_t t0 = arch_cycles_begin();
		cost_sw(c, &c->a, &c->b);
		c->s[i] = arch_cycles_end() - t0;
	}
	for (unsigned i = 0; i < COST_N; i++) {
		uint64_t t0 = arch_cycles_begin();
		c->s[COST_N + i] = arch_cycles_end() - t0;
	}
	cost_sw(c, &c->a, &c->main);
	panic("cost: context a resumed after the end");
}

static void cost_b(void *arg)
{
	struct cost *c = arg;

	for (;;)
		cost_sw(c, &c->b, &c->a);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t cost_run(bool fp, uint64_t *p99)
{
	static struct cost c;
	static uint64_t s[2 * COST_N];
	void *sa = arch_stack_alloc(STACK), *sb = arch_stack_alloc(STACK);

	if (!sa || !sb)
		return 0;
	c.fp = fp;
	c.s = s;
	irqkey_t k = arch_irq_save();
	arch_context_adopt(&c.main);
	arch_context_init(&c.a, sa, STACK, cost_a, &c, fp);
	arch_context_init(&c.b, sb, STACK, cost_b, &c, fp);
	arch_context_switch(&c.main, &c.a);
	arch_irq_restore(k);
	qsort(s, COST_N, sizeof s[0], cmp_u64);
	qsort(s + COST_N, COST_N, sizeof s[0], cmp_u64);
	uint64_t empty = s[COST_N + COST_N / 2], med = s[COST_N / 2];
	*p99 = s[COST_N * 99 / 100] - empty;
	arch_context_destroy(&c.a);
	arch_context_destroy(&c.b);
	arch_stack_free(sa, STACK);
	arch_stack_free(sb, STACK);
	return med > empty ? med - empty : 0;
}

KTEST(context_switch_cost)
{
	struct arch_facts f;
	uint64_t p99i, p99f;

	arch_get_facts(&f);
	uint64_t ti = cost_run(false, &p99i), tf = cost_run(true, &p99f);
	KT_ASSERT(ti && tf);
	kt_diag(kt, "switch pair (a->b->a), %u samples, TSC ticks, empty interval subtracted, "
		"hosted %s build, %s, TSC %llu Hz:", COST_N, FLAVOUR, f.cpu_model,
		(unsigned long long)f.tsc_hz);
	kt_diag(kt, "  integer (arch_context_switch): median %llu, p99 %llu",
		(unsigned long long)ti, (unsigned long long)p99i);
	kt_diag(kt, "  fp (arch_context_switch_fp, both fp contexts, %s of %u bytes each way): "
		"median %llu, p99 %llu", hosted_fp_xsave ? "xsave64/xrstor64" : "fxsave64/fxrstor64",
		hosted_fp_area_bytes(), (unsigned long long)tf, (unsigned long long)p99f);
}
