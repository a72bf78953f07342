/*
 * pmm.c - the physical page allocator.
 *
 * Two layers:
 *  - the frame pool: one bit per 4 KiB frame below 3 GiB (the identity-mapped write-back
 *    range), set = in the pool. First-fit from a rotating hint; serves contiguous runs
 *    and refills the freelist. The bitmap, the hint and pool_free are protected by
 *    pool_lock (a master lock in Sprite's sense: a spin lock inside the interrupt scheme's
 *    critical section, crit_enter, which the cli schemes make IRQs off).
 *  - the freelist of single frames, lock-free as in Synthesis (Massalin & Pu 1991,
 *    "Memory management": "free pages [are kept on a] linked freelist; a page is
 *    allocated by deleting [it] from the freelist ... freed by inserting [it] back at
 *    the head ... lock-free"). It is libksync's lf_stack (include/ksync/lf_stack.h),
 *    whose node is stored in the free frame itself. A pop may read the next field of a
 *    frame another CPU has just taken and is writing; that is safe because every frame
 *    stays mapped forever (type-stable memory) and the stack's generation makes such a
 *    pop's cmpxchg16b fail.
 *
 * pmm_alloc pops (refilling up to PMM_REFILL frames from the pool under pool_lock when
 * the list is empty); pmm_free pushes. Contiguous requests go to the pool; when it
 * cannot satisfy one, the freelist is drained back into the pool (pop_all) and the
 * search repeated.
 *
 * Every frame's state is also kept in `held` (one bit per frame, set = handed out),
 * changed only by atomic fetch-or / fetch-and: a double free or a free of a frame that
 * was never handed out panics whichever layer the frame is in.
 *
 * Frames are handed out and taken back by their direct-map address (arch_if.h "physical
 * memory": P2V of the frame; V2P gives the physical address for a page-table entry);
 * the bitmaps below are indexed by physical frame number.
 *
 * Reserved: everything below 1 MiB (BIOS, AP trampoline, multiboot data), the kernel and
 * the initramfs module (boot.h).
 */
#include "kernel.h"
#include "boot.h"
#include "mm.h"
#include "mlock.h"
#include <ksync/atomic.h>
#include <ksync/lf_stack.h>

#define PMM_LIMIT (3ull << 30)
#define NFRAMES (PMM_LIMIT / PAGE_SIZE)
#define PMM_REFILL 32

static uint64_t pool[NFRAMES / 64];	/* pool_lock */
static size_t hint;			/* pool_lock */
/* pool_lock for writers (relaxed atomic stores); read without it by pmm_free_pages */
static uint64_t pool_free;
LOCK_CLASS(pmm_pool_class, "pmm-pool", LOCK_MASTER, LOCK_DATA);
static struct mlock pool_lock __attribute__((aligned(64))) =
	MLOCK_INIT(pmm_pool_class, MLOCK_TICKET);
LOCKSTAT_STATIC(pool_lock);	/* on its class's list of instances (lockstat.h) */

static struct lf_stack freelist;	/* lock-free; nodes live in the free frames */
static uint64_t list_count;		/* frames on the freelist: atomic add/sub */
static uint64_t held[NFRAMES / 64];	/* set = handed out; atomic or/and only */
static size_t ntotal;			/* written once at init */
static uint64_t lowest, highest;	/* frame range with usable memory; init only */

static inline bool in_pool(size_t f) { return pool[f / 64] >> (f % 64) & 1; }
static inline void pool_put(size_t f) { pool[f / 64] |= 1ull << (f % 64); }
static inline void pool_take(size_t f) { pool[f / 64] &= ~(1ull << (f % 64)); }
/* pool_lock held: the lock orders the writers; relaxed lets pmm_free_pages read it */
static inline void pool_free_add(int64_t d)
{
	ksync_store_relaxed_u64(&pool_free, ksync_load_relaxed_u64(&pool_free) + (uint64_t)d);
}

static void mark_held(uint64_t pa)
{
	size_t f = pa / PAGE_SIZE;
	/* relaxed: the bit is a consistency check; the frame's hand-over is ordered by
	 * the freelist's release/acquire or by pool_lock */
	uint64_t old = ksync_fetch_or_relaxed_u64(&held[f / 64], 1ull << (f % 64));
	if (old & (1ull << (f % 64)))
		panic("pmm: frame 0x%lx handed out twice", pa);
}

static void mark_free(uint64_t pa)
{
	size_t f = pa / PAGE_SIZE;
	if (pa % PAGE_SIZE || f < lowest || f >= highest)
		panic("pmm: free of 0x%lx, which is not a frame this allocator manages", pa);
	uint64_t old = ksync_fetch_and_relaxed_u64(&held[f / 64], ~(1ull << (f % 64)));
	if (!(old & (1ull << (f % 64))))
		panic("pmm: double free (or free of a frame never allocated) 0x%lx", pa);
}

void pmm_init(struct boot_info *bi)
{
	lowest = NFRAMES;
	for (unsigned i = 0; i < bi->nregions; i++) {
		uint64_t b = ALIGN_UP(bi->regions[i].base, PAGE_SIZE);
		uint64_t e = ALIGN_DOWN(bi->regions[i].base + bi->regions[i].len, PAGE_SIZE);
		if (e > PMM_LIMIT)
			e = PMM_LIMIT;
		for (uint64_t a = b; a < e; a += PAGE_SIZE) {
			if (a < 0x100000 || (a >= bi->kernel_start && a < bi->kernel_end))
				continue;
			if (a + PAGE_SIZE > bi->initrd_start && a < bi->initrd_end)
				continue;	/* the initramfs, read in place */
			pool_put(a / PAGE_SIZE);
			pool_free_add(1);
			if (a / PAGE_SIZE < lowest)
				lowest = a / PAGE_SIZE;
			if (a / PAGE_SIZE + 1 > highest)
				highest = a / PAGE_SIZE + 1;
		}
	}
	ntotal = ksync_load_relaxed_u64(&pool_free);
	lf_stack_init(&freelist);
	if (!ntotal)
		panic("pmm: no usable memory above 1 MiB outside the kernel");
}

/* pool_lock held: first run of n frames in the pool, taken out of it; 0 if none. */
static uint64_t pool_take_run(size_t n)
{
	for (size_t pass = 0; pass < 2; pass++) {
		size_t from = pass ? 0 : hint, to = pass ? hint : NFRAMES;
		size_t run = 0;
		for (size_t f = from; f < to; f++) {
			if (!run && !(f % 64) && !pool[f / 64]) {
				f += 63;
				continue;
			}
			run = in_pool(f) ? run + 1 : 0;
			if (run == n) {
				size_t first = f + 1 - n;
				for (size_t g = first; g <= f; g++)
					pool_take(g);
				pool_free_add(-(int64_t)n);
				hint = f + 1;
				return first * PAGE_SIZE;
			}
		}
	}
	return 0;
}

/* pool_lock held: move every frame on the freelist back into the pool. */
static void drain_freelist(void)
{
	struct lf_stack_node *n;
	if (lf_stack_pop_all_mpmc(&freelist, &n) < 0)
		return;
	for (; n; ) {
		struct lf_stack_node *next = lf_stack_next(n);
		pool_put(V2P((uint64_t)n) / PAGE_SIZE);
		pool_free_add(1);
		ksync_fetch_sub_relaxed_u64(&list_count, 1);
		n = next;
	}
}

uint64_t pmm_alloc_contig(size_t n)
{
	if (!n || n > ntotal)
		return 0;
	if (n == 1)
		return pmm_alloc();	/* the free list's hot frame, as pmm_free_contig(1) frees */
	mlock_lock(&pool_lock);
	uint64_t pa = pool_take_run(n);
	if (!pa) {
		drain_freelist();
		pa = pool_take_run(n);
	}
	mlock_unlock(&pool_lock);
	for (size_t i = 0; pa && i < n; i++)
		mark_held(pa + i * PAGE_SIZE);
	return pa ? P2V(pa) : 0;
}

uint64_t pmm_alloc(void)
{
	struct lf_stack_node *node;
	for (;;) {
		if (lf_stack_pop_mpmc(&freelist, &node) >= 0) {
			ksync_fetch_sub_relaxed_u64(&list_count, 1);
			mark_held(V2P((uint64_t)node));
			return (uint64_t)node;
		}
		/* empty: refill a batch from the pool (the only locked step) */
		mlock_lock(&pool_lock);
		uint64_t got[PMM_REFILL];
		size_t ngot = 0;
		while (ngot < PMM_REFILL) {
			uint64_t pa = pool_take_run(1);
			if (!pa)
				break;
			got[ngot++] = pa;
		}
		mlock_unlock(&pool_lock);
		if (!ngot) {
			if (lf_stack_empty(&freelist))
				return 0;	/* out of memory */
			continue;		/* another CPU freed frames meanwhile */
		}
		for (size_t i = 1; i < ngot; i++) {
			ksync_fetch_add_relaxed_u64(&list_count, 1);
			/* release (inside push): the frame's next field is written before it is
			 * visible on the list */
			lf_stack_push_mpmc(&freelist, (struct lf_stack_node *)P2V(got[i]));
		}
		mark_held(got[0]);
		return P2V(got[0]);
	}
}

void pmm_free(uint64_t va)
{
	mark_free(V2P(va));
	ksync_fetch_add_relaxed_u64(&list_count, 1);
	lf_stack_push_mpmc(&freelist, (struct lf_stack_node *)va);
}

void pmm_free_contig(uint64_t va, size_t n)
{
	if (n == 1) {
		pmm_free(va);
		return;
	}
	uint64_t pa = V2P(va);
	for (size_t i = 0; i < n; i++)
		mark_free(pa + i * PAGE_SIZE);
	mlock_lock(&pool_lock);
	for (size_t f = pa / PAGE_SIZE; f < pa / PAGE_SIZE + n; f++)
		pool_put(f);
	pool_free_add((int64_t)n);
	mlock_unlock(&pool_lock);
}

size_t pmm_free_pages(void)
{
	/* exact when no allocation or free is in flight; a moment's snapshot otherwise */
	return ksync_load_relaxed_u64(&pool_free) + ksync_load_relaxed_u64(&list_count);
}

size_t pmm_total_pages(void) { return ntotal; }
