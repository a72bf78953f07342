/*
 * exp_lf_fifo_cost.c - the FIFO rows of the Massalin & Pu cost table in the kernel: the
 * same source as the hosted bench/lf_fifo_cost.c (common/lf_fifo_rows.h), run on the BSP
 * with interrupts off. Under TCG these are emulator costs; the report says so.
 * mp_fifo_enq_deq_mlock: the unsynchronized pair, each operation under the kernel's
 * master lock (MLOCK_TAS, mlock_lock/unlock, statistics off), as in lf_cost.c.
 */
#include "kernel.h"
#include "experiment.h"
#include "lockstat.h"
#include "mlock.h"

static struct mlock fifo_cost_lock;	/* taken by this CPU only */
#define LF_FIFO_LOCKS(X)                                                              \
	X(mlock, "mlock", "the master lock (MLOCK_TAS, mlock_lock/unlock, statistics off)", \
	  mlock_lock(&fifo_cost_lock), mlock_unlock(&fifo_cost_lock))
#include "lf_fifo_rows.h"

LOCK_CLASS(lf_fifo_cost_lock_class, "lf_fifo_cost", LOCK_MASTER, LOCK_DATA);

KEXPERIMENT(lf_fifo_cost, "default")
{
	unsigned mode = lockstat_on();

	KT_ASSERT_EQ(mlock_init(&fifo_cost_lock, &lf_fifo_cost_lock_class, MLOCK_TAS), KSYNC_OK);
	(void)lockstat_set_mode(LOCKSTAT_OFF);	/* KSYNC_ENOTSUP when compiled out: off */
	irqkey_t k = arch_irq_save();
	bool ok = lf_fifo_rows();
	arch_irq_restore(k);
	(void)lockstat_set_mode(mode);
	mlock_destroy(&fifo_cost_lock);
	KT_EXPECT(ok);		/* every forced retry happened exactly once */
}
