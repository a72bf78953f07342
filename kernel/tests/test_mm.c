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
