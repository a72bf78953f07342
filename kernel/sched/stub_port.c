/*
 * stub_port.c - TEMPORARY: the kernel's side of arch_if.h's thread contract
 * (kernel_ap_entry, kernel_fault_note) until kernel/sched/thread.c provides them.
 */
#include "kernel.h"

void kernel_ap_entry(void)
{
	for (;;)
		arch_wait_for_irq();
}

void kernel_fault_note(uint64_t addr, char *buf, size_t n)
{
	(void)addr;
	if (n)
		buf[0] = 0;
}
