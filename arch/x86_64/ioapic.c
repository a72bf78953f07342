/*
 * ioapic.c - I/O APICs found in the MADT, and the arch_if interrupt-controller hooks.
 *
 * At boot every redirection entry is masked; ISA IRQ n (after the MADT's source
 * overrides) is routed to vector 0x20 + n on the BSP, edge/level and polarity as the
 * firmware says. intc_* act on the IOAPIC (APIC mode); the 8259A stays initialised and
 * masked beside it (pic.c). An entry is changed by one CPU at a time: the caller holds
 * ioapic_lock (the index/data register pair is shared state).
 */
#include "kernel.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"
#include "spinlock.h"

static struct spinlock ioapic_lock = SPINLOCK_INIT("ioapic");

/* the registers through the direct map (arch_if.h "physical memory") */
volatile uint32_t *ioapic_mmio(unsigned idx) { return (volatile uint32_t *)P2V(platform.ioapic[idx].phys); }
unsigned ioapic_count(void) { return platform.nioapic; }

uint32_t ioapic_read(unsigned idx, uint32_t reg)
{
	volatile uint32_t *m = ioapic_mmio(idx);
	m[0] = reg;
	return m[4];
}

void ioapic_write(unsigned idx, uint32_t reg, uint32_t v)
{
	volatile uint32_t *m = ioapic_mmio(idx);
	m[0] = reg;
	m[4] = v;
}

static bool find(unsigned gsi, unsigned *idx, unsigned *pin)
{
	for (unsigned i = 0; i < platform.nioapic; i++) {
		if (gsi >= platform.ioapic[i].gsi_base &&
		    gsi < platform.ioapic[i].gsi_base + platform.ioapic[i].nredir) {
			*idx = i;
			*pin = gsi - platform.ioapic[i].gsi_base;
			return true;
		}
	}
	return false;
}

void ioapic_route(unsigned gsi, unsigned vector, unsigned dest_apic, bool level, bool active_low)
{
	unsigned idx, pin;
	if (!find(gsi, &idx, &pin))
		panic("ioapic: no IOAPIC serves GSI %u", gsi);
	uint32_t lo = vector | (1u << 16) | (level ? 1u << 15 : 0) | (active_low ? 1u << 13 : 0);
	irqkey_t k = spin_lock_irqsave(&ioapic_lock);
	ioapic_write(idx, 0x10 + 2 * pin, 1u << 16);	/* mask first, then change */
	ioapic_write(idx, 0x11 + 2 * pin, dest_apic << 24);
	ioapic_write(idx, 0x10 + 2 * pin, lo);
	spin_unlock_irqrestore(&ioapic_lock, k);
}

void ioapic_set_masked(unsigned gsi, bool masked)
{
	unsigned idx, pin;
	if (!find(gsi, &idx, &pin))
		panic("ioapic: no IOAPIC serves GSI %u", gsi);
	irqkey_t k = spin_lock_irqsave(&ioapic_lock);
	uint32_t lo = ioapic_read(idx, 0x10 + 2 * pin);
	lo = masked ? lo | (1u << 16) : lo & ~(1u << 16);
	ioapic_write(idx, 0x10 + 2 * pin, lo);
	spin_unlock_irqrestore(&ioapic_lock, k);
}

unsigned ioapic_gsi_of_irq(unsigned irq, bool *level, bool *active_low)
{
	KASSERT(irq < 16);
	*level = platform.isa[irq].level;
	*active_low = platform.isa[irq].active_low;
	return platform.isa[irq].gsi;
}

void ioapic_init(void)
{
	for (unsigned i = 0; i < platform.nioapic; i++) {
		uint32_t ver = ioapic_read(i, 1);
		platform.ioapic[i].nredir = ((ver >> 16) & 0xff) + 1;
		for (unsigned p = 0; p < platform.ioapic[i].nredir; p++) {
			ioapic_write(i, 0x10 + 2 * p, (1u << 16) | (VEC_IRQ_BASE + 16 + p));
			ioapic_write(i, 0x11 + 2 * p, 0);
		}
	}
	for (unsigned irq = 0; irq < 16; irq++) {
		bool level, low, taken = false;
		unsigned gsi = ioapic_gsi_of_irq(irq, &level, &low);
		/* an override elsewhere may claim this pin (IRQ0 -> GSI 2 takes IRQ2's pin) */
		for (unsigned j = 0; j < 16; j++)
			if (j != irq && platform.isa[j].gsi == gsi && platform.isa[j].overridden)
				taken = true;
		if (taken && !platform.isa[irq].overridden)
			continue;
		unsigned idx, pin;
		if (find(gsi, &idx, &pin))
			ioapic_route(gsi, VEC_IRQ_BASE + irq, cpus[0].apic_id, level, low);
	}
}

/* ---- arch_if.h: the off-chip controller (APIC mode: the IOAPIC) ---- */
void intc_mask(unsigned irq)
{
	bool l, a;
	ioapic_set_masked(ioapic_gsi_of_irq(irq, &l, &a), true);
}

void intc_unmask(unsigned irq)
{
	bool l, a;
	ioapic_set_masked(ioapic_gsi_of_irq(irq, &l, &a), false);
}

void intc_eoi(unsigned irq)
{
	(void)irq;
	lapic_eoi();	/* the IOAPIC's edge-triggered ISA sources need only the LAPIC's EOI */
}

unsigned intc_vector(unsigned irq) { return VEC_IRQ_BASE + irq; }
