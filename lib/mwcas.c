/*
 * mwcas.c - the shared state of include/ksync/mwcas.h: the soft variant's type-stable
 * descriptor arrays (one MWCAS and one RDCSS descriptor per slot, reused with sequence
 * numbers: Arbel-Raviv & Brown, DISC 2017), the slot table, the lock variant's stripe
 * locks, the gkmz variant's per-slot descriptor pools and announcements (Guerraoui,
 * Kogan, Marathe & Zablotchi, DISC 2020), and (hosted only) the per-thread slot that
 * ksync_mwcas_soft and ksync_mwcas_gkmz use.
 * Hohmuth & Härtig 2001 §2.1, §3.2; Harris, Fraser & Pratt, DISC 2002.
 *
 * Freestanding except the block marked hosted (a pthread key gives a thread's slot
 * back when the thread exits).
 */
#ifndef KSYNC_KERNEL
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#endif

#include <ksync/mwcas.h>

_Static_assert(KSYNC_MWCAS_MAX_THREADS <= 256, "a reference has 8 bits of slot");
_Static_assert(KSYNC_MWCAS_STRIPES == 1u << KSYNC__MWCAS_STRIPE_BITS,
	       "KSYNC__MWCAS_STRIPE_BITS is log2(KSYNC_MWCAS_STRIPES)");
_Static_assert(KSYNC_MWCAS_GKMZ_POOL >= 1 && KSYNC_MWCAS_GKMZ_POOL <= 4 &&
		       (KSYNC_MWCAS_GKMZ_POOL & (KSYNC_MWCAS_GKMZ_POOL - 1)) == 0,
	       "a gkmz reference has 2 bits of pool index");
_Static_assert(KSYNC_MWCAS_CPU_SLOTS < KSYNC_MWCAS_MAX_THREADS,
	       "the kernel needs claimable slots above the CPUs'");

/* Zero: every descriptor starts at seq 0, which no reference ever carries. */
struct ksync__mwcas_desc ksync__mwcas_descs[KSYNC_MWCAS_MAX_THREADS];
struct ksync__rdcss_desc ksync__rdcss_descs[KSYNC_MWCAS_MAX_THREADS];
struct ksync__mwcas_stripe ksync__mwcas_stripes[KSYNC_MWCAS_STRIPES];
/* gkmz: the pools (seq 0: unused), the per-slot announcements, the danger count. */
struct ksync__mwcas_desc ksync__gk_descs[KSYNC_MWCAS_MAX_THREADS][KSYNC_MWCAS_GKMZ_POOL];
struct ksync__gk_slot ksync__gk_slots[KSYNC_MWCAS_MAX_THREADS];
uint64_t ksync__gk_danger __attribute__((aligned(64)));

/* 1 while a thread holds the slot: claimed by CAS 0 -> 1, released by a store of 0. */
static uint32_t slot_taken[KSYNC_MWCAS_MAX_THREADS];

#ifdef KSYNC_KERNEL
#define FIRST_CLAIMABLE KSYNC_MWCAS_CPU_SLOTS
#else
#define FIRST_CLAIMABLE 0
#endif

int ksync_mwcas_slot_claim(void)
{
	for (unsigned i = FIRST_CLAIMABLE; i < KSYNC_MWCAS_MAX_THREADS; i++) {
		uint32_t free_ = 0;

		if (ksync_load_relaxed_u32(&slot_taken[i]) != 0)
			continue;
		/* acquire: the previous holder's descriptor writes (its release below)
		 * happen before ours */
		if (ksync_cas_strong_acquire_u32(&slot_taken[i], &free_, 1))
			return (int)i;
	}
	return KSYNC_ENOMEM;
}

void ksync_mwcas_slot_release(unsigned slot)
{
	if (slot >= KSYNC_MWCAS_MAX_THREADS)
		return;
	/* gkmz: retire the slot's finished instances now (their words must still be valid
	 * memory, see mwcas.h; a pinned one stays for the next holder to retire), and drop
	 * a leftover stale-owner note: no operation of this slot is in flight */
	(void)__ksync_mwcas_gkmz_flush(slot);
	ksync_store_relaxed_u64(&ksync__gk_slots[slot].ostale, 0);
	/* release: this holder's last descriptor writes before the next holder's */
	ksync_store_release_u32(&slot_taken[slot], 0);
}

#ifndef KSYNC_KERNEL

_Thread_local int ksync__mwcas_tls_slot = -1;

static pthread_key_t slot_key;
static pthread_once_t slot_key_once = PTHREAD_ONCE_INIT;

/* Thread exit: the key's value is slot + 1 (non-NULL). */
static void slot_key_destructor(void *v)
{
	ksync_mwcas_slot_release((unsigned)((uintptr_t)v - 1));
}

static void slot_key_create(void)
{
	(void)pthread_key_create(&slot_key, slot_key_destructor);
}

int ksync__mwcas_tls_claim(void)
{
	int s;

	if (ksync__mwcas_tls_slot >= 0)
		return ksync__mwcas_tls_slot;
	s = ksync_mwcas_slot_claim();
	if (s < 0)
		return s;
	(void)pthread_once(&slot_key_once, slot_key_create);
	(void)pthread_setspecific(slot_key, (void *)((uintptr_t)s + 1));
	ksync__mwcas_tls_slot = s;
	return s;
}

void ksync_mwcas_thread_exit(void)
{
	int s = ksync__mwcas_tls_slot;

	if (s < 0)
		return;
	(void)pthread_setspecific(slot_key, NULL);
	ksync__mwcas_tls_slot = -1;
	ksync_mwcas_slot_release((unsigned)s);
}

#endif /* !KSYNC_KERNEL */
