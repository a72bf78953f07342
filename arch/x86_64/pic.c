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

#define PIC1_CMD 0x20
#define PIC1_DATA 0x21
#define PIC2_CMD 0xa0
#define PIC2_DATA 0xa1

void pic_init(void)
{
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

void pic_set_imr(uint16_t mask)
{
	outb(PIC1_DATA, mask & 0xff);
	outb(PIC2_DATA, mask >> 8);
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
