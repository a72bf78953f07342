/*
 * paging.c - lock-free installation of page mappings, as in Synthesis.
 *
 * Massalin & Pu 1991, "Memory management" ("add mapping"): walk the page tables from the
 * root; where a table pointer is null, allocate a zeroed table and install it with
 * compare-and-swap against null — if the CAS fails another CPU installed one first, so
 * free ours and use theirs. At the leaf, store the mapping by CAS against an empty entry;
 * if it fails, a mapping exists: re-adding the identical mapping succeeds, a different
 * one is a conflict (the paper: a programming error) and returns KSYNC_EBUSY.
 *
 * The region managed this way is KVA_BASE .. +512 GiB (PML4 slot 257), 4 KiB pages; the
 * direct map (slot 256) and the image (slot 511) stay boot.S's 2 MiB pages. Tables are
 * reached through the direct map (P2V of an entry's address, V2P for a new entry). Page-table entries are the shared
 * fields here: written only by CAS (install) or exchange (unmap), read with acquire
 * loads. A table installed by CAS was zeroed before the CAS (release), so a walker that
 * acquires the entry sees a zeroed table. Tables are never freed while the region lives
 * (type-stable), so a walker never follows a pointer into a freed page.
 *
 * Unmapping exchanges the entry with 0 and shoots the TLB entry down on every online CPU
 * (invlpg locally, a cross-CPU call elsewhere); installing into an empty entry needs no
 * shootdown, because x86 does not cache not-present translations.
 */
#include "kernel.h"
#include "mm.h"
#include "x86.h"
#include <ksync/atomic.h>
#include <ksync/errors.h>

extern uint64_t boot_pml4[512];

#define PTE_P 0x1ull
#define PTE_RW 0x2ull
#define PTE_A 0x20ull	/* accessed: set by the CPU */
#define PTE_D 0x40ull	/* dirty: set by the CPU */
#define PTE_ADDR 0x000ffffffffff000ull

/* statistics for tests: tables this CPU allocated and then freed after losing a race */
volatile uint64_t vm_tables_installed, vm_tables_lost;

static bool in_region(uint64_t va)
{
	return va >= KVA_BASE && va < KVA_BASE + KVA_SIZE && !(va & (PAGE_SIZE - 1));
}

/* Entry index of va at level (3 = PML4 .. 0 = PT). */
static inline unsigned idx(uint64_t va, int level) { return (va >> (12 + 9 * level)) & 511; }

/* Find or install the table below entry *e. Returns the table, or NULL on no memory. */
static uint64_t *descend(uint64_t *e)
{
	/* acquire: the table behind a present entry was zeroed before it was installed */
	uint64_t v = ksync_load_acquire_u64(e);
	if (v & PTE_P)
		return (uint64_t *)P2V(v & PTE_ADDR);
	uint64_t fresh = pmm_alloc();
	if (!fresh)
		return NULL;
	memset((void *)fresh, 0, PAGE_SIZE);
	uint64_t expected = 0;
	/* release: the zeroed table is visible to whoever acquires the new entry */
	if (ksync_cas_strong_acq_rel_u64(e, &expected, V2P(fresh) | PTE_P | PTE_RW)) {
		__atomic_fetch_add(&vm_tables_installed, 1, __ATOMIC_RELAXED);
		return (uint64_t *)fresh;
	}
	/* another CPU installed a table first: free ours, use theirs (expected holds it) */
	pmm_free(fresh);
	__atomic_fetch_add(&vm_tables_lost, 1, __ATOMIC_RELAXED);
	return (uint64_t *)P2V(expected & PTE_ADDR);
}

static uint64_t *leaf_entry(uint64_t va, bool create)
{
	uint64_t *t = boot_pml4;
	for (int level = 3; level > 0; level--) {
		uint64_t *e = &t[idx(va, level)];
		if (!create) {
			uint64_t v = ksync_load_acquire_u64(e);
			if (!(v & PTE_P))
				return NULL;
			t = (uint64_t *)P2V(v & PTE_ADDR);
			continue;
		}
		t = descend(e);
		if (!t)
			return NULL;
	}
	return &t[idx(va, 0)];
}

int arch_vm_map(uint64_t va, uint64_t pa, bool writable)
{
	if (!in_region(va) || (pa & (PAGE_SIZE - 1)) || (pa & ~PTE_ADDR))
		return KSYNC_EINVAL;
	uint64_t *pte = leaf_entry(va, true);
	if (!pte)
		return KSYNC_ENOMEM;
	uint64_t want = pa | PTE_P | (writable ? PTE_RW : 0), expected = 0;
	/* release: the caller's writes to the page before mapping it are visible through it */
	if (ksync_cas_strong_acq_rel_u64(pte, &expected, want))
		return KSYNC_OK;
	/* identical re-add, or a conflict; the CPU's accessed/dirty bits do not count */
	return (expected & ~(PTE_A | PTE_D)) == want ? KSYNC_OK : KSYNC_EBUSY;
}

static void invlpg_here(void *va)
{
	__asm__ volatile("invlpg (%0)" :: "r"(va) : "memory");
}

int arch_vm_unmap(uint64_t va, uint64_t *old_pa)
{
	if (!in_region(va))
		return KSYNC_EINVAL;
	uint64_t *pte = leaf_entry(va, false);
	if (!pte)
		return KSYNC_ENOENT;
	/* acq_rel: accesses through the old mapping on this CPU happen before it goes */
	uint64_t old = ksync_exchange_acq_rel_u64(pte, 0);
	if (!(old & PTE_P))
		return KSYNC_ENOENT;
	for (unsigned c = 0; c < arch_ncpus(); c++)
		arch_call_on(c, invlpg_here, (void *)va);
	if (old_pa)
		*old_pa = old & PTE_ADDR;
	return KSYNC_OK;
}

uint64_t arch_vm_translate(uint64_t va)
{
	if (va >= DIRECT_MAP_BASE && va < DIRECT_MAP_BASE + DIRECT_MAP_SIZE)
		return va - DIRECT_MAP_BASE;	/* the direct map (boot.S) */
	if (va >= KERNEL_VMA)
		return va - KERNEL_VMA;		/* the image (boot.S) */
	if (va < KVA_BASE || va >= KVA_BASE + KVA_SIZE)
		return 0;
	uint64_t *pte = leaf_entry(va & ~(PAGE_SIZE - 1), false);
	if (!pte)
		return 0;
	uint64_t v = ksync_load_acquire_u64(pte);
	return (v & PTE_P) ? (v & PTE_ADDR) | (va & (PAGE_SIZE - 1)) : 0;
}
