/*
 * lapic.c - the local APIC: xAPIC through MMIO (uncached, 3..4 GiB mapping), x2APIC
 * through MSRs when CPUID reports it; IPIs; the LAPIC timer, calibrated against the TSC.
 */
#include "kernel.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"

static bool x2apic;			/* set once by the BSP before any AP starts */
static volatile uint32_t *xapic;	/* MMIO base; same on every CPU */
static uint64_t timer_hz;		/* LAPIC timer ticks per second at divide-by-16 */

bool lapic_is_x2apic(void) { return x2apic; }
uint64_t lapic_base_phys(void) { return xapic ? V2P((uint64_t)xapic) : 0; }
uint64_t arch_timer_hz(void) { return timer_hz; }

uint32_t lapic_read(uint32_t reg)
{
	if (x2apic)
		return (uint32_t)rdmsr(MSR_X2APIC_BASE + (reg >> 4));
	return xapic[reg / 4];
}

void lapic_write(uint32_t reg, uint32_t v)
{
	if (x2apic)
		wrmsr(MSR_X2APIC_BASE + (reg >> 4), v);
	else
		xapic[reg / 4] = v;
}

void lapic_eoi(void) { lapic_write(LAPIC_EOI, 0); }

uint32_t lapic_id(void)
{
	uint32_t id = lapic_read(LAPIC_ID);
	return x2apic ? id : id >> 24;
}

void lapic_send(uint32_t apic_id, uint32_t icr_lo)
{
	if (x2apic) {
		wrmsr(MSR_X2APIC_BASE + (LAPIC_ICR_LO >> 4), ((uint64_t)apic_id << 32) | icr_lo);
		return;
	}
	irqkey_t k = arch_irq_save();	/* ICR_HI then ICR_LO must not be split by a handler */
	lapic_write(LAPIC_ICR_HI, apic_id << 24);
	lapic_write(LAPIC_ICR_LO, icr_lo);
	while (lapic_read(LAPIC_ICR_LO) & (1u << 12))	/* delivery pending */
		cpu_pause();
	arch_irq_restore(k);
}

void lapic_init_cpu(void)
{
	uint32_t a, b, c, d;
	uint64_t base = rdmsr(MSR_APIC_BASE);
	if (this_cpu_index() == 0) {
		cpuid(1, 0, &a, &b, &c, &d);
		x2apic = (c >> 21) & 1;
		xapic = (volatile uint32_t *)P2V(base & ~0xfffull);	/* the direct map */
	}
	base |= 1ull << 11;			/* global enable */
	if (x2apic)
		base |= 1ull << 10;		/* x2APIC mode */
	wrmsr(MSR_APIC_BASE, base);

	lapic_write(LAPIC_TPR, 0);
	lapic_write(LAPIC_LVT_TIMER, 1u << 16);	/* masked */
	lapic_write(LAPIC_LVT_ERR, 1u << 16);
	if (this_cpu_index() == 0)
		lapic_write(LAPIC_LVT_LINT0, 0x700);	/* ExtINT: the 8259A's output (virtual wire) */
	else
		lapic_write(LAPIC_LVT_LINT0, 1u << 16);
	lapic_write(LAPIC_LVT_LINT1, 0x400);		/* NMI */
	lapic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS);	/* software enable */
	lapic_write(LAPIC_ESR, 0);
	lapic_write(LAPIC_ESR, 0);
	lapic_eoi();
}

/* Count the LAPIC timer against the TSC for 10 ms (the TSC was calibrated first). */
void lapic_timer_calibrate(void)
{
	lapic_write(LAPIC_TIMER_DCR, 0x3);		/* divide by 16 */
	lapic_write(LAPIC_LVT_TIMER, 1u << 16);		/* masked, one-shot */
	lapic_write(LAPIC_TIMER_ICR, 0xffffffff);
	uint64_t t0 = rdtsc();
	arch_delay_us(10000);
	uint32_t left = lapic_read(LAPIC_TIMER_CCR);
	uint64_t t1 = rdtsc();
	lapic_write(LAPIC_TIMER_ICR, 0);
	uint64_t counted = 0xffffffffull - left;
	uint64_t ticks = t1 - t0;
	timer_hz = ticks ? counted * arch_tsc_hz() / ticks : 0;
}

void arch_timer_periodic(unsigned vector, unsigned hz)
{
	if (!hz || !timer_hz) {
		lapic_write(LAPIC_TIMER_ICR, 0);
		lapic_write(LAPIC_LVT_TIMER, 1u << 16);
		return;
	}
	lapic_write(LAPIC_TIMER_DCR, 0x3);
	lapic_write(LAPIC_LVT_TIMER, (1u << 17) | vector);	/* periodic */
	uint64_t count = timer_hz / hz;
	lapic_write(LAPIC_TIMER_ICR, count ? (uint32_t)count : 1);
}

void arch_timer_oneshot(unsigned vector, uint64_t us)
{
	if (!us || !timer_hz) {
		lapic_write(LAPIC_TIMER_ICR, 0);
		return;
	}
	lapic_write(LAPIC_TIMER_DCR, 0x3);
	lapic_write(LAPIC_LVT_TIMER, vector);
	uint64_t count = timer_hz * us / 1000000;
	lapic_write(LAPIC_TIMER_ICR, count ? (uint32_t)count : 1);
}

void arch_send_ipi(unsigned cpu, unsigned vector)
{
	lapic_send(cpus[cpu].apic_id, vector);	/* fixed delivery, physical destination */
}

/* ---- the one-shot clock of the spl layer (arch_if.h) ---- */
void arch_clock_arm(unsigned vector, uint64_t tsc_ticks)
{
	struct cpu *c = this_cpu();
	uint64_t count = timer_hz && arch_tsc_hz() ? tsc_ticks * timer_hz / arch_tsc_hz() : 0;
	if (count == 0)
		count = 1;
	if (count > 0xffffffffull)
		count = 0xffffffffull;
	c->clock_lvt = vector;				/* one-shot */
	lapic_write(LAPIC_TIMER_DCR, 0x3);
	lapic_write(LAPIC_LVT_TIMER, c->clock_lvt | (c->clock_masked ? 1u << 16 : 0));
	c->clock_armed = true;
	lapic_write(LAPIC_TIMER_ICR, (uint32_t)count);
}

void arch_clock_stop(void)
{
	struct cpu *c = this_cpu();
	c->clock_armed = false;
	lapic_write(LAPIC_TIMER_ICR, 0);
	lapic_write(LAPIC_LVT_TIMER, 1u << 16);
	c->clock_masked = false;
}

void arch_clock_mask(void)
{
	struct cpu *c = this_cpu();
	lapic_write(LAPIC_LVT_TIMER, c->clock_lvt | (1u << 16));
	c->clock_masked = true;
}

bool arch_clock_unmask(void)
{
	struct cpu *c = this_cpu();
	/* never armed on this CPU: keep the entry masked rather than unmask vector 0 */
	lapic_write(LAPIC_LVT_TIMER, c->clock_lvt ? c->clock_lvt : 1u << 16);
	c->clock_masked = false;
	/* Unmask first, then look (the caller has IF off). An armed count at 0 has expired
	 * and its handler has not run yet (the handler re-arms or stops the clock first
	 * thing). If it expired while masked, the LAPIC dropped it: raise it again. If it
	 * expired after the unmask, it waits in the IRR and the self-IPI sets the same IRR
	 * bit: one delivery either way. (Looking before the unmask leaves a window in which
	 * an expiry is dropped and not seen.) */
	bool lost = c->clock_armed && lapic_read(LAPIC_TIMER_CCR) == 0;
	if (lost)
		lapic_send(c->apic_id, c->clock_lvt & 0xff);
	return lost;
}

void arch_lapic_eoi(void) { lapic_eoi(); }

void arch_self_ipi(unsigned vector) { lapic_send(this_cpu()->apic_id, vector); }

/* arch_if.h: arch_irq_window. On hardware one instruction after sti would do; under an
 * emulator the interrupt may be taken a few instructions later (QEMU ends its block on
 * sti), so wait - bounded - until no IRR vector is above the processor priority. */
void arch_irq_window(void)
{
	if (ARCH_WINDOWS)
		ARCH_WIN_CLOSE(ARCH_WIN_IF);
	__asm__ volatile("sti" ::: "memory");
	for (int tries = 0; tries < 1000; tries++) {
		unsigned ppr_class = (lapic_read(0x0a0) >> 4) & 0xf;	/* PPR */
		bool pending = false;
		for (int r = 7; r >= 0 && !pending; r--) {
			uint32_t irr = lapic_read(0x200 + r * 0x10);
			if (irr && (unsigned)(r * 32 + 31 - __builtin_clz(irr)) >> 4 > ppr_class)
				pending = true;
		}
		if (!pending)
			break;
		cpu_pause();
	}
	__asm__ volatile("cli" ::: "memory");
	if (ARCH_WINDOWS)
		ARCH_WIN_OPEN(ARCH_WIN_IF);
}
