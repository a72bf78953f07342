/*
 * exp_lf_cost.c - the Massalin & Pu cost table in the kernel: the same rows as the hosted
 * bench/lf_stack_cost.c (common/lf_cost_rows.h: counter, stack, array stack, index stack,
 * list, optimistic section; no sync / lock-free / one forced retry), run on the BSP with
 * interrupts off. Under TCG these are emulator costs; the report says so.
 *
 * Against a lock (Massalin & Pu: lock-free costs less than locking): the nosync
 * operations under the kernel's master lock (kernel/include/mlock.h; Hartman &
 * Ousterhout's spin lock held with interrupts masked), MLOCK_TAS, taken with mlock_lock /
 * mlock_unlock (the running scheme's masking pair around an xchg and a release store),
 * lock statistics off for these rows (the cheapest configuration of the lock):
 * mp_<op>_mlock rows, measured by the same ROW in the same function as the nosync and lf
 * rows. Uncontended only: two CPUs on one object are measured hosted (bench/).
 */
#include "kernel.h"
#include "experiment.h"
#include "lockstat.h"
#include "mlock.h"

static struct mlock cost_lock;	/* the mlock rows' lock; taken by this CPU only */

#define LF_COST_LOCKS()                                                                \
	LF_COST_LOCKED_ROWS("mlock", "the master lock (MLOCK_TAS, mlock_lock/unlock, "  \
			    "statistics off)", mlock_lock(&cost_lock), mlock_unlock(&cost_lock))

#include "lf_cost_rows.h"

LOCK_CLASS(lf_cost_lock_class, "lf_cost", LOCK_MASTER, LOCK_DATA);

KEXPERIMENT(lf_cost, "default")
{
	unsigned mode = lockstat_on();
	int rc = mlock_init(&cost_lock, &lf_cost_lock_class, MLOCK_TAS);

	KT_ASSERT_EQ(rc, KSYNC_OK);
	(void)lockstat_set_mode(LOCKSTAT_OFF);	/* KSYNC_ENOTSUP when compiled out: off */
	irqkey_t k = arch_irq_save();
	lf_cost_rows();
	arch_irq_restore(k);
	(void)lockstat_set_mode(mode);
	mlock_destroy(&cost_lock);
}
