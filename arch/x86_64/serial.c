/*
 * serial.c - 16550 UART on COM1 (0x3f8), 115200 8N1, polled transmit: the console;
 * interrupt-driven receive when the interactive shell asks for it (arch_console_rx_*,
 * arch_if.h: the handler is an spl source of kernel/proc/ushell.c, IRQ 4). Also
 * arch_exit (isa-debug-exit) and arch_halt_forever.
 *
 * Shared registers: THR/LSR.THRE are used under the console lock (kwrite); RBR/LSR.DR by
 * the receive source's handler alone; IER/MCR/FCR only by arch_console_rx_enable (boot
 * thread, before and after the shell). An LSR read clears only its error bits, which
 * neither side uses, so the two sides need no common lock.
 */
#include "kernel.h"
#include "x86.h"
#include <ksync/errors.h>

#define COM1 0x3f8

void serial_init(void)
{
	outb(COM1 + 1, 0x00);	/* no UART interrupts */
	outb(COM1 + 3, 0x80);	/* DLAB */
	outb(COM1 + 0, 0x01);	/* divisor 1: 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);	/* 8N1 */
	outb(COM1 + 2, 0xc7);	/* FIFOs on, cleared, 14-byte trigger */
	outb(COM1 + 4, 0x03);	/* DTR, RTS */
}

static void serial_putc(char c)
{
	/* wait for the transmit holding register; bounded so a missing UART cannot hang us */
	for (int i = 0; i < 100000 && !(inb(COM1 + 5) & 0x20); i++)
		cpu_pause();
	outb(COM1, (uint8_t)c);
}

void arch_console_write(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			serial_putc('\r');
		serial_putc(s[i]);
	}
}

int arch_console_rx_enable(bool on)
{
	if (on) {
		outb(COM1 + 2, 0x01);	/* FIFOs on, trigger level 1 byte: each key at once */
		outb(COM1 + 4, 0x0b);	/* DTR, RTS, OUT2 (gates the IRQ line on a PC) */
		outb(COM1 + 1, 0x01);	/* IER: received data available (no THRE: polled TX) */
	} else {
		outb(COM1 + 1, 0x00);
		outb(COM1 + 4, 0x03);
	}
	return KSYNC_OK;
}

int arch_console_rx_byte(void)
{
	return (inb(COM1 + 5) & 0x01) ? inb(COM1) : -1;	/* LSR.DR, then RBR */
}

void arch_halt_forever(void)
{
	for (;;) {
		__asm__ volatile("cli; hlt");
	}
}

void arch_exit(bool pass)
{
	/* isa-debug-exit at 0xf4: QEMU exits with (value << 1) | 1: 0x10 -> 33, 0x11 -> 35 */
	outl(0xf4, pass ? 0x10 : 0x11);
	/* not under QEMU (or no debug-exit device): say so and stop */
	kprintf("ksync: %s; halting (no isa-debug-exit device)\n", pass ? "PASS" : "FAIL");
	arch_halt_forever();
}
