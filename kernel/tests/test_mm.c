/*
 * test_mm.c - the physical page allocator and the kernel heap: counts stay exact,
 * blocks do not overlap, frees are reused, contiguous runs are contiguous.
 */
#include "kernel.h"
#include "mm.h"
#include <ksync/ktest.h>

KTEST(pmm_alloc_free_counts)
{
	size_t before = pmm_free_pages();
	KT_ASSERT(before > 1000);
	uint64_t pages[64];
	for (int i = 0; i < 64; i++) {
		pages[i] = pmm_alloc();
		KT_ASSERT(pages[i] != 0);
		KT_EXPECT_EQ(pages[i] % PAGE_SIZE, 0);
		memset((void *)pages[i], i, PAGE_SIZE);
	}
	KT_EXPECT_EQ(pmm_free_pages(), before - 64);
	for (int i = 0; i < 64; i++)
		for (int j = i + 1; j < 64; j++)
			KT_EXPECT(pages[i] != pages[j]);
	for (int i = 0; i < 64; i++)
		KT_EXPECT_EQ(*(uint8_t *)(pages[i] + PAGE_SIZE - 1), i);
	for (int i = 0; i < 64; i++)
		pmm_free(pages[i]);
	KT_EXPECT_EQ(pmm_free_pages(), before);
}

KTEST(pmm_contiguous_run)
{
	size_t before = pmm_free_pages();
	uint64_t pa = pmm_alloc_contig(16);
	KT_ASSERT(pa != 0);
	memset((void *)pa, 0xab, 16 * PAGE_SIZE);
	uint64_t other = pmm_alloc();
	KT_EXPECT(other < pa || other >= pa + 16 * PAGE_SIZE);
	pmm_free(other);
	pmm_free_contig(pa, 16);
	KT_EXPECT_EQ(pmm_free_pages(), before);
	KT_EXPECT_EQ(pmm_alloc_contig(0), 0);
	KT_EXPECT_EQ(pmm_alloc_contig(pmm_total_pages() + 1), 0);
}

KTEST(heap_sizes_alignment_no_overlap)
{
	static const size_t sizes[] = { 1, 15, 16, 17, 100, 256, 1000, 2048, 2049, 5000, 20000 };
	void *p[ARRAY_SIZE(sizes)];
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		p[i] = kmalloc(sizes[i]);
		KT_ASSERT(p[i] != NULL);
		KT_EXPECT_EQ((uintptr_t)p[i] % 16, 0);
		KT_EXPECT(kmalloc_usable(p[i]) >= sizes[i]);
		memset(p[i], (int)i + 1, sizes[i]);
	}
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		const uint8_t *b = p[i];
		for (size_t j = 0; j < sizes[i]; j++)
			if (b[j] != i + 1) {
				KT_EXPECT_EQ(b[j], i + 1);
				break;
			}
	}
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++)
		kfree(p[i]);
}

KTEST(heap_reuses_freed_blocks)
{
	size_t before = pmm_free_pages();
	for (int round = 0; round < 1000; round++) {
		void *a = kmalloc(64), *b = kzalloc(3000);
		KT_ASSERT(a && b);
		KT_EXPECT_EQ(((uint8_t *)b)[2999], 0);
		kfree(b);
		kfree(a);
	}
	/* at most one page per size class stays carved */
	KT_EXPECT(before - pmm_free_pages() <= 8);
}

/* A freed block of two or three pages (a 4096-byte buffer with its header; two paths) is
 * the next one of its size handed out, not pages further on in the pool (whose next-fit
 * search would walk through all of memory: fresh guest pages, each a host fault under
 * QEMU); a one-page block comes from the freelist's hot frame. At most a few blocks of each
 * size are kept, counted as the heap's pages. */
KTEST(heap_keeps_freed_page_blocks_for_reuse)
{
	static const size_t sizes[] = { 4096, 8192, 3000 };	/* 2, 3 and 1 pages */
	for (unsigned i = 0; i < ARRAY_SIZE(sizes); i++) {
		void *a = kmalloc(sizes[i]);
		KT_ASSERT(a != NULL);
		memset(a, 0x5a, sizes[i]);
		kfree(a);
		void *b = kmalloc(sizes[i]);
		KT_ASSERT(b != NULL);
		KT_EXPECT(b == a);
		kfree(b);
	}
	/* many at once: beyond what is kept, the rest goes back to the pool */
	struct heap_stats h0, h1;
	heap_stats(&h0);
	size_t free0 = pmm_free_pages();
	void *p[40];
	for (unsigned i = 0; i < ARRAY_SIZE(p); i++)
		KT_ASSERT((p[i] = kmalloc(4096)) != NULL);
	for (unsigned i = 0; i < ARRAY_SIZE(p); i++)
		kfree(p[i]);
	heap_stats(&h1);
	size_t kept = h1.slab_pages - h0.slab_pages;
	KT_EXPECT(kept <= 16);				/* a few blocks, 2 pages each */
	KT_EXPECT_EQ(free0 - pmm_free_pages(), kept);	/* every other page returned */
	KT_EXPECT_EQ(h1.big_pages, h0.big_pages);
}

/*
 * Every CPU allocates and frees frames at once through the lock-free freelist, holding
 * up to HOLD frames each and stamping each with (cpu, sequence) while it holds it; a
 * frame handed to two CPUs would have its stamp overwritten (and mark_held would panic).
 * CPU 0 also takes contiguous runs, which drain the freelist back into the pool.
 */
#define HOLD 16
#define ROUNDS 3000
static volatile uint32_t mm_go, mm_done, mm_bad;

static void mm_worker(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	uint64_t held[HOLD] = { 0 };
	while (!__atomic_load_n(&mm_go, __ATOMIC_ACQUIRE))
		arch_cpu_relax();
	for (uint64_t i = 0; i < ROUNDS; i++) {
		unsigned slot = (unsigned)(i * 7 + me) % HOLD;
		if (held[slot]) {
			uint64_t want = ((uint64_t)me << 48) | (held[slot] & 0xffffffffull);
			if (*(volatile uint64_t *)held[slot] != want)
				__atomic_fetch_add(&mm_bad, 1, __ATOMIC_RELAXED);
			pmm_free(held[slot]);
			held[slot] = 0;
		} else {
			uint64_t pa = pmm_alloc();
			if (pa) {
				*(volatile uint64_t *)pa = ((uint64_t)me << 48) | (pa & 0xffffffffull);
				held[slot] = pa;
			}
		}
		if (me == 0 && i % 256 == 0) {
			uint64_t run = pmm_alloc_contig(8);
			if (run)
				pmm_free_contig(run, 8);
		}
	}
	for (unsigned s = 0; s < HOLD; s++)
		if (held[s])
			pmm_free(held[s]);
	__atomic_fetch_add(&mm_done, 1, __ATOMIC_RELEASE);
}

KTEST(pmm_lockfree_freelist_all_cpus)
{
	unsigned n = arch_ncpus();
	size_t before = pmm_free_pages();
	mm_go = 0;
	mm_done = 0;
	mm_bad = 0;
	for (unsigned c = 1; c < n; c++)
		arch_call_post(c, mm_worker, (void *)(uintptr_t)c);
	__atomic_store_n(&mm_go, 1, __ATOMIC_RELEASE);
	mm_worker((void *)0);
	for (unsigned c = 1; c < n; c++)
		arch_call_wait(c);
	KT_ASSERT_EQ(mm_done, n);
	KT_EXPECT_EQ(mm_bad, 0);
	KT_EXPECT_EQ(pmm_free_pages(), before);
	kt_diag(kt, "%u CPUs x %u rounds", n, ROUNDS);
}
