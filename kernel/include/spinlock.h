/*
 * spinlock.h - a raw ticket spin lock: no lock class, no statistics, no held list, no
 * checks. For what sits below the master locks (mlock.h) - the console (core/printf.c),
 * which the locks, their statistics and their panics print through - and for a port's
 * private structures (x86 stack slots, IOAPIC, PIT, CMOS). Blocking; FIFO among waiters.
 * Interrupts are disabled while held (the _irqsave form), so a handler on the same CPU
 * can never spin on its own lock. Not recursive: a CPU that asks again waits for ever.
 */
#ifndef KSYNC_SPINLOCK_H
#define KSYNC_SPINLOCK_H

#include <stdint.h>
#include "arch_if.h"

struct spinlock {
	uint32_t next;		/* ticket dispenser: fetch_add by each acquirer */
	uint32_t owner;		/* ticket being served: written only by the holder on release */
	const char *name;
};

#define SPINLOCK_INIT(n) { 0, 0, (n) }

static inline irqkey_t spin_lock_irqsave(struct spinlock *l)
{
	irqkey_t k = arch_irq_save();
	/* relaxed: the ticket itself orders nothing; the acquire load below does */
	uint32_t t = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);
	/* acquire: the holder's critical section happens-before ours */
	while (__atomic_load_n(&l->owner, __ATOMIC_ACQUIRE) != t)
		arch_cpu_relax();
	return k;
}

/* Release without touching the mask (after spin_trylock_bounded, whose caller masked). */
static inline void spin_unlock(struct spinlock *l)
{
	/* release: our critical section happens-before the next holder's. The plain read
	 * of owner is the holder's: only holders write it. */
	__atomic_store_n(&l->owner, l->owner + 1, __ATOMIC_RELEASE);
}

static inline void spin_unlock_irqrestore(struct spinlock *l, irqkey_t k)
{
	spin_unlock(l);
	arch_irq_restore(k);
}

/* Try for at most `spins` iterations (used by panic, which must not deadlock on a lock
 * its own CPU may hold). Returns true if acquired (then spin_unlock). The caller masks. */
static inline bool spin_trylock_bounded(struct spinlock *l, uint64_t spins)
{
	uint32_t own = __atomic_load_n(&l->owner, __ATOMIC_ACQUIRE);
	while (spins--) {
		uint32_t exp = own;
		/* acquire on success: as in spin_lock_irqsave */
		if (__atomic_compare_exchange_n(&l->next, &exp, own + 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return true;
		arch_cpu_relax();
		own = __atomic_load_n(&l->owner, __ATOMIC_ACQUIRE);
	}
	return false;
}

#endif
