/*
 * exp_lf_cost.c - the Massalin & Pu cost table in the kernel: the same rows as the hosted
 * bench/lf_stack_cost.c (common/lf_cost_rows.h: counter, stack, index stack, list,
 * optimistic section; no sync / lock-free / one forced retry), run on the BSP with
 * interrupts off. Under TCG these are emulator costs; the report says so.
 */
#include "kernel.h"
#include "experiment.h"
#include "lf_cost_rows.h"

KEXPERIMENT(lf_cost, "default")
{
	(void)kt;
	irqkey_t k = arch_irq_save();
	lf_cost_rows();
	arch_irq_restore(k);
}
