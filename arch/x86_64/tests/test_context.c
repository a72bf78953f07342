/*
 * test_context.c - the x86-64 thread hooks without the scheduler: integer and fp context
 * switches between contexts on arch_stack_alloc'd stacks, the stacks' canary, guard page
 * and memory accounting, and arch_frame_call at the tail of the outermost trap (also
 * switching away from there and back).
 */
#include "kernel.h"
#include "mm.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"
#include <ksync/ktest.h>

#define VEC_TEST2 (VEC_TEST + 1)	/* free: the nested self-IPI below */
#define STK 16384

void arch_x86_xmm0_set(uint64_t v);	/* switch.S */
uint64_t arch_x86_xmm0_get(void);

/* ---- (a) integer ping-pong --------------------------------------------------------- */
#define PP_ROUNDS 1000
static struct arch_context pp_main, pp_a, pp_b;
static volatile uint64_t pp_counter, pp_bad, pp_misaligned, pp_irqs_on;

/* Six values live across the switch: the compiler keeps them in callee-saved registers
 * (or its own frame), and the asm barriers stop it from recomputing them afterwards. */
static void pp_check_switch(struct arch_context *from, struct arch_context *to, uint64_t seed)
{
	uint64_t v0 = seed, v1 = seed ^ 0x1111, v2 = seed + 0x2222, v3 = seed * 3, v4 = ~seed, v5 = seed << 7;
	__asm__ volatile("" : "+r"(v0), "+r"(v1), "+r"(v2), "+r"(v3), "+r"(v4), "+r"(v5));
	arch_context_switch(from, to);
	__asm__ volatile("" : "+r"(v0), "+r"(v1), "+r"(v2), "+r"(v3), "+r"(v4), "+r"(v5));
	if (v0 != seed || v1 != (seed ^ 0x1111) || v2 != seed + 0x2222 || v3 != seed * 3 ||
	    v4 != ~seed || v5 != seed << 7)
		pp_bad++;
}

static void pp_entry_a(void *arg)
{
	if ((uint64_t)__builtin_frame_address(0) & 15)
		pp_misaligned++;
	if (arch_irq_enabled())
		pp_irqs_on++;
	uint64_t local = (uint64_t)arg;		/* kept in this frame across every switch */
	for (uint64_t i = 0;; i++) {
		if (pp_counter != 2 * i || local != 0xa)
			pp_bad++;
		pp_counter++;
		pp_check_switch(&pp_a, &pp_b, 0xa0000 + i);
	}
}

static void pp_entry_b(void *arg)
{
	if ((uint64_t)__builtin_frame_address(0) & 15)
		pp_misaligned++;
	uint64_t local = (uint64_t)arg;
	for (uint64_t i = 0; i < PP_ROUNDS; i++) {
		if (pp_counter != 2 * i + 1 || local != 0xb)
			pp_bad++;
		pp_counter++;
		pp_check_switch(&pp_b, i + 1 < PP_ROUNDS ? &pp_a : &pp_main, 0xb0000 + i);
	}
	panic("ping-pong: switched back into b after the last round");
}

KTEST(context_int_ping_pong)
{
	void *sa = arch_stack_alloc(STK), *sb = arch_stack_alloc(STK);
	KT_ASSERT(sa && sb);
	pp_counter = pp_bad = pp_misaligned = pp_irqs_on = 0;
	arch_context_init(&pp_a, sa, STK, pp_entry_a, (void *)0xa, false);
	arch_context_init(&pp_b, sb, STK, pp_entry_b, (void *)0xb, false);
	KT_EXPECT(pp_a.fxarea == NULL);
	irqkey_t k = arch_irq_save();
	arch_context_adopt(&pp_main);
	uint64_t kept = 0x1234567890abcdefull;
	__asm__ volatile("" : "+r"(kept));
	arch_context_switch(&pp_main, &pp_a);
	__asm__ volatile("" : "+r"(kept));
	arch_irq_restore(k);
	KT_EXPECT_EQ(kept, 0x1234567890abcdefull);
	KT_EXPECT_EQ(pp_counter, 2 * PP_ROUNDS);
	KT_EXPECT_EQ(pp_bad, 0);
	KT_EXPECT_EQ(pp_misaligned, 0);
	KT_EXPECT_EQ(pp_irqs_on, 0);		/* entry starts with IRQs off */
	KT_EXPECT(arch_stack_ok(sa, STK) && arch_stack_ok(sb, STK));
	arch_context_destroy(&pp_a);
	arch_context_destroy(&pp_b);
	arch_stack_free(sa, STK);
	arch_stack_free(sb, STK);
}

/* ---- (b) fp: xmm0 per context ------------------------------------------------------ */
#define FP_ROUNDS 200
static struct arch_context fp_main, fp_x, fp_y;
static volatile uint64_t fp_bad, fp_rounds, fp_first_x;

static void fp_entry_x(void *arg)
{
	(void)arg;
	fp_first_x = arch_x86_xmm0_get();	/* a fresh fp context starts with xmm0 = 0 */
	for (uint64_t i = 0;; i++) {
		uint64_t mine = 0x1111111100000000ull + i;
		arch_x86_xmm0_set(mine);
		arch_context_switch_fp(&fp_x, &fp_y);
		if (arch_x86_xmm0_get() != mine)
			fp_bad++;
	}
}

static void fp_entry_y(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < FP_ROUNDS; i++) {
		uint64_t mine = 0x2222222200000000ull + i;
		arch_x86_xmm0_set(mine);
		/* the last round goes to the integer-only main context: y's side is saved, main's
		 * skipped */
		arch_context_switch_fp(&fp_y, i + 1 < FP_ROUNDS ? &fp_x : &fp_main);
		if (arch_x86_xmm0_get() != mine)
			fp_bad++;
		fp_rounds++;
	}
	panic("fp test: switched back into y after the last round");
}

KTEST(context_fp_keeps_xmm0)
{
	void *sx = arch_stack_alloc(STK), *sy = arch_stack_alloc(STK);
	KT_ASSERT(sx && sy);
	fp_bad = fp_rounds = 0;
	fp_first_x = ~0ull;
	arch_context_init(&fp_x, sx, STK, fp_entry_x, NULL, true);
	arch_context_init(&fp_y, sy, STK, fp_entry_y, NULL, true);
	KT_EXPECT(fp_x.fxarea && !((uint64_t)fp_x.fxarea & 15));
	KT_EXPECT((uint64_t)fp_x.fxarea >= (uint64_t)sx && (uint64_t)fp_x.fxarea + 512 <= (uint64_t)sx + STK);
	irqkey_t k = arch_irq_save();
	arch_x86_xmm0_set(0x5555);		/* main is integer-only: this is not kept */
	arch_context_adopt(&fp_main);
	arch_context_switch_fp(&fp_main, &fp_x);
	arch_irq_restore(k);
	KT_EXPECT_EQ(fp_first_x, 0);
	KT_EXPECT_EQ(fp_bad, 0);
	KT_EXPECT_EQ(fp_rounds, FP_ROUNDS - 1);
	/* y's area holds its last xmm0 (FXSAVE64 layout: xmm0 at byte 160) */
	KT_EXPECT_EQ(*(uint64_t *)((uint8_t *)fp_y.fxarea + 160), 0x2222222200000000ull + FP_ROUNDS - 1);
	/* and its MXCSR (byte 24) and FCW (byte 0) are still the defaults */
	KT_EXPECT_EQ(*(uint32_t *)((uint8_t *)fp_y.fxarea + 24), 0x1f80);
	KT_EXPECT_EQ(*(uint16_t *)((uint8_t *)fp_y.fxarea + 0), 0x37f);
	arch_stack_free(sx, STK);
	arch_stack_free(sy, STK);
}

/* ---- (c) stacks: canary, guard page, memory ---------------------------------------- */
KTEST(context_stack_canary_and_guard)
{
	void *s = arch_stack_alloc(STK);
	KT_ASSERT(s);
	KT_EXPECT(!((uint64_t)s & (PAGE_SIZE - 1)));
	KT_EXPECT(arch_stack_ok(s, STK));
	volatile uint64_t *w = (volatile uint64_t *)s;
	uint64_t saved = *w;
	*w = 0;					/* an overflow that did not reach the guard */
	KT_EXPECT(!arch_stack_ok(s, STK));
	*w = saved;
	KT_EXPECT(arch_stack_ok(s, STK));
	/* the whole stack is writable; the page below it is not mapped */
	((volatile uint8_t *)s)[STK - 1] = 1;
	KT_EXPECT(arch_vm_translate((uint64_t)s) != 0);
	KT_EXPECT_EQ(arch_vm_translate((uint64_t)s - 8), 0);
	unsigned slot;
	KT_EXPECT(stack_guard_hit((uint64_t)s - 8, &slot));
	KT_EXPECT(!stack_guard_hit((uint64_t)s, &slot));
	uint64_t hits = trap_expected_hits;
	uint64_t *rip = trap_expect(14);
	uint64_t below = (uint64_t)s - 8;
	__asm__ volatile("leaq 1f(%%rip), %%rax; movq %%rax, (%0); movq $1, (%1); 1:"
			 :: "r"(rip), "r"(below) : "rax", "memory");
	KT_EXPECT_EQ(trap_expected_hits, hits + 1);	/* the guard faulted */
	arch_stack_free(s, STK);
	KT_EXPECT(arch_stack_alloc(0) == NULL);
	KT_EXPECT(arch_stack_alloc(1ull << 30) == NULL);
}

#define MANY 600
static void *many[MANY];

static bool alloc_many(struct ktest_ctx *kt)
{
	for (unsigned i = 0; i < MANY; i++) {
		many[i] = arch_stack_alloc(STK);
		if (!many[i]) {
			kt_diag(kt, "arch_stack_alloc failed at stack %u", i);
			for (unsigned j = 0; j < i; j++)
				arch_stack_free(many[j], STK);
			return false;
		}
		((volatile uint64_t *)many[i])[STK / 8 - 1] = i;	/* touch the top */
	}
	return true;
}

KTEST(context_stack_600_alloc_free_returns_memory)
{
	uint64_t live0 = stack_slots_live;
	/* warm-up: the page tables of the slots are installed once and stay (paging.c) */
	KT_ASSERT(alloc_many(kt));
	for (unsigned i = 0; i < MANY; i++)
		arch_stack_free(many[i], STK);
	size_t before = pmm_free_pages();
	KT_ASSERT(alloc_many(kt));
	size_t during = pmm_free_pages();
	bool distinct = true, ok = true;
	for (unsigned i = 0; i < MANY; i++) {
		ok &= arch_stack_ok(many[i], STK) && ((volatile uint64_t *)many[i])[STK / 8 - 1] == i;
		if (i && many[i] == many[i - 1])
			distinct = false;
	}
	KT_EXPECT(ok);
	KT_EXPECT(distinct);
	KT_EXPECT_EQ(stack_slots_live, live0 + MANY);
	for (unsigned i = 0; i < MANY; i++)
		arch_stack_free(many[i], STK);
	size_t after = pmm_free_pages();
	KT_EXPECT(before - during >= MANY * (STK / PAGE_SIZE));
	KT_EXPECT_EQ(after, before);
	KT_EXPECT_EQ(stack_slots_live, live0);
	kt_diag(kt, "%u stacks of %u bytes: %zu pages while live, %zu free before and after",
		MANY, STK, before - during, after);
}

/* ---- (d) arch_frame_call ------------------------------------------------------------- */
static volatile uint64_t fc_calls, fc_irqs_off_in_fn, fc_depth_bad, fc_granted, fc_refused;
static volatile uint64_t fc_masked_refused, fc_nested_refused, fc_nested_seen;
/* 0: request; 1: also try a masked copy; 2: nest; 3: switch away; 4: software int, no EOI */
static volatile int fc_mode;

static void fc_fn(void)
{
	if (!arch_irq_enabled())
		fc_irqs_off_in_fn++;
	if (this_cpu()->trap_depth != 0)
		fc_depth_bad++;
	fc_calls++;
}

static void fc_nested(struct trapframe *tf, void *arg)
{
	(void)arg;
	lapic_eoi();
	fc_nested_seen++;
	/* IF=1 in this frame (the outer handler enabled IRQs), but this trap is nested */
	if (!arch_frame_call(tf, fc_fn))
		fc_nested_refused++;
}

/* switch-away test: fn leaves for another context and comes back */
static struct arch_context sw_pre, sw_t;
static volatile uint64_t sw_t_runs, sw_t_irqs_on_at_entry, sw_t_ticks;
static void sw_fn(void)
{
	fc_fn();
	irqkey_t k = arch_irq_save();
	arch_context_switch(&sw_pre, &sw_t);	/* the interrupted code waits under its frame */
	arch_irq_restore(k);
}
static void sw_entry(void *arg)
{
	(void)arg;
	if (arch_irq_enabled())
		sw_t_irqs_on_at_entry++;
	for (;;) {
		sw_t_runs++;
		arch_irq_enable();
		arch_delay_us(200);	/* IRQs on a while: an interrupt here is outermost again */
		arch_irq_disable();
		arch_context_switch(&sw_t, &sw_pre);
	}
}

static void fc_handler(struct trapframe *tf, void *arg)
{
	(void)arg;
	if (fc_mode != 4)
		lapic_eoi();
	if (fc_mode == 1) {
		struct trapframe masked = *tf;
		masked.rflags &= ~RFLAGS_IF;	/* as if the interrupted code had IRQs off */
		if (!arch_frame_call(&masked, fc_fn))
			fc_masked_refused++;
	}
	if (fc_mode == 2) {
		uint64_t seen = fc_nested_seen;
		arch_irq_enable();
		arch_self_ipi(VEC_TEST2);
		for (int i = 0; i < 100000 && fc_nested_seen == seen; i++)
			arch_cpu_relax();
		arch_irq_disable();
	}
	if (arch_frame_call(tf, fc_mode == 3 ? sw_fn : fc_fn))
		fc_granted++;
	else
		fc_refused++;
}

/* Spin with IRQs on and values held in registers until fc_calls reaches want. */
static bool fc_spin(uint64_t want, uint64_t *bad)
{
	uint64_t a = 0x1111, b = 0x2222, c = 0x3333, d = 0x4444, e = 0x5555, f = 0x6666;
	uint64_t deadline = arch_cycles() + 10 * arch_tsc_hz();
	while (fc_calls < want && (int64_t)(arch_cycles() - deadline) < 0) {
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d), "+r"(e), "+r"(f));
		arch_cpu_relax();
	}
	*bad += (a != 0x1111) + (b != 0x2222) + (c != 0x3333) + (d != 0x4444) + (e != 0x5555) + (f != 0x6666);
	return fc_calls >= want;
}

KTEST(context_frame_call)
{
	fc_calls = fc_irqs_off_in_fn = fc_depth_bad = fc_granted = fc_refused = 0;
	fc_masked_refused = fc_nested_refused = fc_nested_seen = 0;
	arch_set_handler(VEC_TEST, fc_handler, NULL);
	arch_set_handler(VEC_TEST2, fc_nested, NULL);
	KT_ASSERT(arch_irq_enabled());
	uint64_t regs_bad = 0;

	/* plain: the interrupted loop had IRQs on, outermost trap: fn runs at the tail */
	fc_mode = 0;
	for (unsigned i = 1; i <= 20; i++) {
		arch_self_ipi(VEC_TEST);
		KT_EXPECT(fc_spin(i, &regs_bad));
	}
	KT_EXPECT_EQ(fc_granted, 20);
	KT_EXPECT_EQ(fc_calls, 20);

	/* a frame with IF=0 is refused, and the real request still works */
	fc_mode = 1;
	arch_self_ipi(VEC_TEST);
	KT_EXPECT(fc_spin(21, &regs_bad));
	KT_EXPECT_EQ(fc_masked_refused, 1);

	/* nested: the inner handler is refused, the outer one granted */
	fc_mode = 2;
	arch_self_ipi(VEC_TEST);
	KT_EXPECT(fc_spin(22, &regs_bad));
	KT_EXPECT_EQ(fc_nested_seen, 1);
	KT_EXPECT_EQ(fc_nested_refused, 1);
	KT_EXPECT_EQ(fc_calls, 22);		/* the refused nested request ran nothing */

	/* fn switches to another context and back: the interrupted loop resumes intact */
	void *st = arch_stack_alloc(STK);
	KT_ASSERT(st);
	sw_t_runs = sw_t_irqs_on_at_entry = 0;
	arch_context_init(&sw_t, st, STK, sw_entry, NULL, false);
	fc_mode = 3;
	for (unsigned i = 0; i < 5; i++) {
		arch_self_ipi(VEC_TEST);
		KT_EXPECT(fc_spin(23 + i, &regs_bad));
	}
	KT_EXPECT_EQ(sw_t_runs, 5);
	KT_EXPECT_EQ(sw_t_irqs_on_at_entry, 0);

	KT_EXPECT_EQ(fc_refused, 0);
	/* a trap taken while the code had IRQs off is refused. A self-IPI would wait in the
	 * IRR until the sti (its frame then has IF=1), so a software interrupt makes the
	 * frame: int $0xe0 with IF=0 (TCG; kvm_pvm cannot emulate int $n in ring 0). */
	fc_mode = 4;
	irqkey_t k = arch_irq_save();
	__asm__ volatile("int %0" :: "i"(VEC_TEST) : "memory");
	arch_irq_restore(k);
	KT_EXPECT_EQ(fc_refused, 1);
	arch_delay_us(2000);				/* and nothing ran */
	KT_EXPECT_EQ(fc_calls, 27);
	fc_mode = 0;
	KT_EXPECT_EQ(fc_irqs_off_in_fn, 0);
	KT_EXPECT_EQ(fc_depth_bad, 0);
	KT_EXPECT_EQ(regs_bad, 0);
	arch_set_handler(VEC_TEST, NULL, NULL);
	arch_set_handler(VEC_TEST2, NULL, NULL);
	arch_stack_free(st, STK);
	kt_diag(kt, "%lu frame calls, %lu refused (masked %lu, nested %lu)", fc_calls,
		fc_refused + fc_masked_refused + fc_nested_refused, fc_masked_refused, fc_nested_refused);
}
