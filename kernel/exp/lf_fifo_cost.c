/*
 * exp_lf_fifo_cost.c - the FIFO rows of the Massalin & Pu cost table in the kernel: the
 * same source as the hosted bench/lf_fifo_cost.c (common/lf_fifo_rows.h), run on the BSP
 * with interrupts off. Under TCG these are emulator costs; the report says so.
 */
#include "kernel.h"
#include "experiment.h"
#include "lf_fifo_rows.h"

KEXPERIMENT(lf_fifo_cost, "default")
{
	irqkey_t k = arch_irq_save();
	bool ok = lf_fifo_rows();
	arch_irq_restore(k);
	KT_EXPECT(ok);		/* every forced retry happened exactly once */
}
