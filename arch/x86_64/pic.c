/*
 * pic.c - the 8259A pair: remapped to vectors 0x20..0x2f, every line masked at start.
 *
 * The PICs stay initialised even in APIC mode: Small & Manley's spl-pessim masks through
 * the 8259A's IMR (OCW1), and the primitive-cost table measures an IMR write. Their output
 * reaches the BSP through LAPIC LINT0 in ExtINT mode (virtual-wire), so an unmasked PIC
 * line really interrupts. The IMR shadow is written only with IRQs off by its caller.
 */
#include "kernel.h"
#include "x86.h"
#include "trap.h"
#include "percpu.h"

#define PIC1_CMD 0x20
#define PIC1_DATA 0x21
#define PIC2_CMD 0xa0
#define PIC2_DATA 0xa1

/* Spurious IRQ7/IRQ15: the 8259A raised INTR for a line that was masked (or dropped)
 * before the CPU's acknowledge - which happens when an spl scheme writes the IMR while a
 * line is asserting. The acknowledge then reports IRQ7 (master) or IRQ15 (slave, and the
 * master's cascade line IRQ2 IS in service). A spurious IRQ7 gets no EOI; a spurious
 * IRQ15 gets the master's EOI only - without it the master would hold IRQ2 in service
 * and every slave line (RTC, IDE) would stop for good. */
volatile uint64_t pic_spurious;

static void pic_spurious_handler(struct trapframe *tf, void *arg)
{
	(void)tf;
	unsigned irq = (unsigned)(uintptr_t)arg;
	uint16_t port = irq >= 8 ? PIC2_CMD : PIC1_CMD;
	outb(port, 0x0b);			/* OCW3: read ISR */
	bool real = (inb(port) >> 7) & 1;
	outb(port, 0x0a);
	if (real) {				/* a genuine IRQ7/15 nobody handles */
		pic_eoi(irq);
		return;
	}
	pic_spurious++;
	if (irq >= 8)
		outb(PIC1_CMD, 0x20);		/* the master's IRQ2 was acknowledged */
}

void pic_init(void)
{
	arch_set_handler(VEC_IRQ_BASE + 7, pic_spurious_handler, (void *)7);
	arch_set_handler(VEC_IRQ_BASE + 15, pic_spurious_handler, (void *)15);
	outb(PIC1_DATA, 0xff);
	outb(PIC2_DATA, 0xff);
	outb(PIC1_CMD, 0x11); io_wait();	/* ICW1: edge, cascade, ICW4 follows */
	outb(PIC2_CMD, 0x11); io_wait();
	outb(PIC1_DATA, VEC_IRQ_BASE); io_wait();	/* ICW2: vector base */
	outb(PIC2_DATA, VEC_IRQ_BASE + 8); io_wait();
	outb(PIC1_DATA, 0x04); io_wait();	/* ICW3: slave on IRQ2 */
	outb(PIC2_DATA, 0x02); io_wait();
	outb(PIC1_DATA, 0x01); io_wait();	/* ICW4: 8086 mode, normal EOI */
	outb(PIC2_DATA, 0x01); io_wait();
	pic_set_imr(0xffff & ~(1u << 2));	/* all masked but the cascade line */
}

/* Last value written to the IMR pair. Written by the BSP with IRQs off (the 8259A sits
 * behind the BSP only), or by a test that saves and restores it with IRQs off. */
static uint16_t imr_shadow = 0xffff;

void pic_set_imr(uint16_t mask)
{
	outb(PIC1_DATA, mask & 0xff);
	outb(PIC2_DATA, mask >> 8);
	imr_shadow = mask;
}

void arch_pic_write_mask(uint16_t mask)
{
	uint16_t diff = mask ^ imr_shadow;
	if (diff & 0xff)
		outb(PIC1_DATA, mask & 0xff);
	if (diff >> 8)
		outb(PIC2_DATA, mask >> 8);
	imr_shadow = mask;
}

uint16_t arch_pic_mask_shadow(void) { return imr_shadow; }

void arch_pic_eoi(unsigned irq) { pic_eoi(irq); }

/* OCW3 "read ISR": a line whose bit is clear was a spurious IRQ7/IRQ15. */
bool arch_pic_in_service(unsigned irq)
{
	uint16_t port = irq >= 8 ? PIC2_CMD : PIC1_CMD;
	outb(port, 0x0b);
	bool in = (inb(port) >> (irq & 7)) & 1;
	outb(port, 0x0a);			/* back to reading the IRR */
	return in;
}

void arch_isa_route_pic(unsigned irq)
{
	if (ioapic_count()) {
		bool l, a;
		ioapic_set_masked(ioapic_gsi_of_irq(irq, &l, &a), true);
	}
}

void arch_isa_route_apic(unsigned irq, unsigned vector)
{
	KASSERT(ioapic_count() > 0);
	arch_pic_write_mask(imr_shadow | (1u << irq));
	bool level, low;
	unsigned gsi = ioapic_gsi_of_irq(irq, &level, &low);
	ioapic_route(gsi, vector, cpus[0].apic_id, level, low);
	ioapic_set_masked(gsi, false);
}

void arch_isa_unroute(unsigned irq)
{
	arch_pic_write_mask(imr_shadow | (1u << irq));
	if (ioapic_count()) {
		bool level, low;
		unsigned gsi = ioapic_gsi_of_irq(irq, &level, &low);
		ioapic_route(gsi, VEC_IRQ_BASE + irq, cpus[0].apic_id, level, low);	/* masked */
	}
}

uint16_t pic_get_imr(void)
{
	return (uint16_t)(inb(PIC1_DATA) | (inb(PIC2_DATA) << 8));
}

void pic_eoi(unsigned irq)
{
	if (irq >= 8)
		outb(PIC2_CMD, 0x20);
	outb(PIC1_CMD, 0x20);
}
