/*
 * test_intr.c - the interrupt hardware works as later issues need it: the 8259A's IMR
 * reads back and its lines really interrupt (PIT IRQ0 through LINT0/ExtINT), the IOAPIC
 * routes and masks the same source, the LAPIC timer is calibrated and ticks, CR8 holds
 * back a self-IPI until lowered, and exceptions can be caught and resumed.
 */
#include "kernel.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"
#include <ksync/ktest.h>

static bool wait_until(volatile uint64_t *c, uint64_t want)
{
	uint64_t deadline = arch_cycles() + 10 * arch_tsc_hz();	/* liveness bound only */
	while (*c < want && (int64_t)(arch_cycles() - deadline) < 0)
		arch_cpu_relax();
	return *c >= want;
}

KTEST(pic_imr_reads_back)
{
	irqkey_t k = arch_irq_save();
	uint16_t saved = pic_get_imr();
	static const uint16_t pats[] = { 0xffff, 0xfffb, 0xaaaa & 0xfffb, 0x5555 | 0x4, 0xfffe };
	for (unsigned i = 0; i < ARRAY_SIZE(pats); i++) {
		pic_set_imr(pats[i]);
		KT_EXPECT_EQ(pic_get_imr(), pats[i]);
	}
	pic_set_imr(saved);
	arch_irq_restore(k);
	KT_EXPECT_EQ(pic_get_imr(), saved);
}

/* PIT channel 0, mode 2 (rate generator), at hz. */
static void pit_periodic(unsigned hz)
{
	uint32_t div = 1193182u / hz;
	outb(0x43, 0x34);
	outb(0x40, div & 0xff);
	outb(0x40, (div >> 8) & 0xff);
}

static volatile uint64_t irq0_count;
static void irq0_pic(struct trapframe *tf, void *arg) { (void)tf; (void)arg; irq0_count++; pic_eoi(0); }
static void irq0_ioapic(struct trapframe *tf, void *arg) { (void)tf; (void)arg; irq0_count++; lapic_eoi(); }

KTEST(pic_line_interrupts_through_extint)
{
	irq0_count = 0;
	arch_set_handler(VEC_IRQ_BASE + 0, irq0_pic, NULL);
	pit_periodic(1000);
	irqkey_t k = arch_irq_save();
	uint16_t saved = pic_get_imr();
	pic_set_imr(saved & ~1u);		/* unmask IRQ0 at the 8259A */
	arch_irq_restore(k);
	bool got = wait_until(&irq0_count, 5);
	k = arch_irq_save();
	pic_set_imr(saved);
	arch_irq_restore(k);
	KT_EXPECT(got);
	/* masked again: no more arrive once the last in-flight one is taken */
	arch_delay_us(2000);
	uint64_t c = irq0_count;
	arch_delay_us(20000);
	KT_EXPECT_EQ(irq0_count, c);
	kt_diag(kt, "%lu PIT interrupts through the 8259A", c);
}

KTEST(ioapic_routes_and_masks_isa_irq0)
{
	if (!ioapic_count())
		KT_SKIP("no IOAPIC");
	irq0_count = 0;
	arch_set_handler(intc_vector(0), irq0_ioapic, NULL);
	pit_periodic(1000);
	intc_unmask(0);
	bool got = wait_until(&irq0_count, 5);
	intc_mask(0);
	KT_EXPECT(got);
	arch_delay_us(2000);
	uint64_t c = irq0_count;
	arch_delay_us(20000);
	KT_EXPECT_EQ(irq0_count, c);
	bool l, a;
	unsigned gsi = ioapic_gsi_of_irq(0, &l, &a);
	kt_diag(kt, "ISA IRQ0 -> GSI %u: %lu interrupts", gsi, c);
	outb(0x43, 0x30);			/* PIT ch0 back to one-shot, stopped */
}

KTEST(ioapic_entry_mask_reads_back)
{
	if (!ioapic_count())
		KT_SKIP("no IOAPIC");
	unsigned pin = platform.ioapic[0].nredir - 1;
	uint32_t lo0 = ioapic_read(0, 0x10 + 2 * pin);
	KT_EXPECT(lo0 & (1u << 16));		/* masked since boot */
	ioapic_set_masked(platform.ioapic[0].gsi_base + pin, false);
	KT_EXPECT(!(ioapic_read(0, 0x10 + 2 * pin) & (1u << 16)));
	ioapic_set_masked(platform.ioapic[0].gsi_base + pin, true);
	KT_EXPECT_EQ(ioapic_read(0, 0x10 + 2 * pin), lo0);
}

KTEST(lapic_timer_calibrated_and_ticks)
{
	KT_ASSERT(arch_timer_hz() > 0);
	uint64_t before = this_cpu()->timer_ticks;
	arch_timer_periodic(VEC_TIMER, 1000);
	bool got = wait_until(&this_cpu()->timer_ticks, before + 10);
	arch_timer_periodic(VEC_TIMER, 0);
	KT_EXPECT(got);
	kt_diag(kt, "LAPIC timer input %lu Hz (divide by 16)", arch_timer_hz());
}

KTEST(lapic_timer_oneshot_fires_once)
{
	uint64_t before = this_cpu()->timer_ticks;
	arch_timer_oneshot(VEC_TIMER, 1000);
	KT_EXPECT(wait_until(&this_cpu()->timer_ticks, before + 1));
	arch_delay_us(20000);
	KT_EXPECT_EQ(this_cpu()->timer_ticks, before + 1);
}

static volatile uint64_t test_vec_count;
static void test_vec(struct trapframe *tf, void *arg) { (void)tf; (void)arg; test_vec_count++; lapic_eoi(); }

KTEST(tpr_holds_back_lower_class_until_lowered)
{
	arch_set_handler(VEC_TEST, test_vec, NULL);	/* vector 0xe0: class 14 */
	test_vec_count = 0;
	arch_tpr_set(14);				/* blocks classes <= 14 */
	lapic_send(cpus[this_cpu_index()].apic_id, VEC_TEST);
	arch_delay_us(5000);
	KT_EXPECT_EQ(test_vec_count, 0);		/* pending in the IRR, not delivered */
	arch_tpr_set(0);
	KT_EXPECT(wait_until(&test_vec_count, 1));
	KT_EXPECT_EQ(test_vec_count, 1);
}

KTEST(exception_ud_caught_and_resumed)
{
	uint64_t hits = trap_expected_hits;
	uint64_t *slot = trap_expect(6);
	__asm__ volatile("leaq 1f(%%rip), %%rax; movq %%rax, (%0); ud2; 1:" :: "r"(slot) : "rax", "memory");
	KT_EXPECT_EQ(trap_expected_hits, hits + 1);
	KT_EXPECT_EQ(*slot, 0);		/* one-shot: consumed */
}

KTEST(exception_pf_caught_and_resumed)
{
	uint64_t hits = trap_expected_hits;
	uint64_t *slot = trap_expect(14);
	uint64_t bad = 0x7ff000000000ull;	/* not mapped */
	__asm__ volatile("leaq 1f(%%rip), %%rax; movq %%rax, (%0); movl (%1), %%eax; 1:"
			 :: "r"(slot), "r"(bad) : "rax", "memory");
	KT_EXPECT_EQ(trap_expected_hits, hits + 1);
}

KTEST(tsc_frequency_found)
{
	uint64_t hz = arch_tsc_hz();
	KT_EXPECT(hz > 100000000ull && hz < 20000000000ull);
	uint64_t a = arch_cycles(), b = arch_cycles();
	KT_EXPECT(b > a);
	kt_diag(kt, "TSC %lu Hz", hz);
}
