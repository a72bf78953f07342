/*
 * pmm.c - the physical page allocator: one bit per 4 KiB frame below 3 GiB (the
 * identity-mapped write-back range), set = free. First-fit from a rotating hint.
 * Reserved: everything below 1 MiB (BIOS, trampoline, multiboot data) and the kernel
 * image. The bitmap, the hint and the counters are protected by pmm_lock.
 * (The lock-free freelist of Synthesis replaces this in the lock-free objects issue.)
 */
#include "kernel.h"
#include "boot.h"
#include "mm.h"
#include "spinlock.h"

#define PMM_LIMIT (3ull << 30)
#define NFRAMES (PMM_LIMIT / PAGE_SIZE)

static uint64_t bitmap[NFRAMES / 64];	/* pmm_lock */
static size_t hint, nfree, ntotal;	/* pmm_lock */
static struct spinlock pmm_lock = SPINLOCK_INIT("pmm");

static inline bool is_free(size_t f) { return bitmap[f / 64] >> (f % 64) & 1; }
static inline void set_free(size_t f) { bitmap[f / 64] |= 1ull << (f % 64); }
static inline void set_used(size_t f) { bitmap[f / 64] &= ~(1ull << (f % 64)); }

void pmm_init(struct boot_info *bi)
{
	for (unsigned i = 0; i < bi->nregions; i++) {
		uint64_t b = ALIGN_UP(bi->regions[i].base, PAGE_SIZE);
		uint64_t e = ALIGN_DOWN(bi->regions[i].base + bi->regions[i].len, PAGE_SIZE);
		if (e > PMM_LIMIT)
			e = PMM_LIMIT;
		for (uint64_t a = b; a < e; a += PAGE_SIZE) {
			if (a < 0x100000 || (a >= bi->kernel_start && a < bi->kernel_end))
				continue;
			set_free(a / PAGE_SIZE);
			nfree++;
		}
	}
	ntotal = nfree;
	if (!nfree)
		panic("pmm: no usable memory above 1 MiB outside the kernel");
}

uint64_t pmm_alloc_contig(size_t n)
{
	if (!n)
		return 0;
	irqkey_t k = spin_lock_irqsave(&pmm_lock);
	for (size_t pass = 0; pass < 2; pass++) {
		size_t from = pass ? 0 : hint, to = pass ? hint : NFRAMES;
		size_t run = 0;
		for (size_t f = from; f < to; f++) {
			if (!run && !(f % 64) && !bitmap[f / 64]) {
				f += 63;
				continue;
			}
			run = is_free(f) ? run + 1 : 0;
			if (run == n) {
				size_t first = f + 1 - n;
				for (size_t g = first; g <= f; g++)
					set_used(g);
				nfree -= n;
				hint = f + 1;
				spin_unlock_irqrestore(&pmm_lock, k);
				return first * PAGE_SIZE;
			}
		}
	}
	spin_unlock_irqrestore(&pmm_lock, k);
	return 0;
}

uint64_t pmm_alloc(void) { return pmm_alloc_contig(1); }

void pmm_free_contig(uint64_t pa, size_t n)
{
	KASSERT(pa % PAGE_SIZE == 0 && pa >= 0x100000 && pa + n * PAGE_SIZE <= PMM_LIMIT);
	irqkey_t k = spin_lock_irqsave(&pmm_lock);
	for (size_t f = pa / PAGE_SIZE; f < pa / PAGE_SIZE + n; f++) {
		if (is_free(f))
			panic("pmm: double free of page 0x%lx", (uint64_t)f * PAGE_SIZE);
		set_free(f);
	}
	nfree += n;
	spin_unlock_irqrestore(&pmm_lock, k);
}

void pmm_free(uint64_t pa) { pmm_free_contig(pa, 1); }
size_t pmm_free_pages(void) { return __atomic_load_n(&nfree, __ATOMIC_RELAXED); }
size_t pmm_total_pages(void) { return ntotal; }
