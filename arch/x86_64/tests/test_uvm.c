/*
 * test_uvm.c - the port's user address spaces (arch/x86_64/uvm.c) directly, without a
 * process: what the differential user programs cannot reach.
 *
 * A page that many mappings share (a file's page mapped copy-on-write by exec and
 * MAP_PRIVATE, or MAP_SHARED) has a 16-bit reference count: mapping it once more near
 * the count's limit is refused (the call returns 0, the system call ENOMEM, as Linux's
 * vm.max_map_count) instead of wrapping the count (a panic, or a page freed while
 * mapped). Massalin & Pu 1991 "Memory management" (the spaces share pages by count).
 */
#include "kernel.h"
#include "mm.h"
#include <ksync/ktest.h>

KTEST(uvm_shared_page_mapping_refused_at_the_count_limit)
{
	/* a space copies the kernel's KVA slot, which exists once a thread stack does (as it
	 * always does before a process): a stack allocated and freed here makes it */
	void *stk = arch_stack_alloc(PAGE_SIZE);
	KT_ASSERT(stk != NULL);
	arch_stack_free(stk, PAGE_SIZE);
	uint64_t page = pmm_alloc();
	KT_ASSERT(page != 0);
	memset((void *)page, 0x5a, PAGE_SIZE);
	arch_page_hold((void *)page);			/* the file's reference */
	struct arch_as *as = arch_as_create();
	KT_ASSERT(as != NULL);
	size_t free0 = pmm_free_pages();	/* the page, the root and the heap's part taken */
	const uint64_t base = 0x10000000ull;
	unsigned mapped = 0;
	while (mapped < 70000) {
		uint64_t va = base + (uint64_t)mapped * PAGE_SIZE;
		unsigned prot = ARCH_PROT_READ | (mapped & 1 ? ARCH_PROT_WRITE : 0);
		uint64_t pa = (mapped & 2) ? arch_as_map_page(as, va, (void *)page, prot)
					   : arch_as_map_page_cow(as, va, (void *)page, prot);
		if (!pa)
			break;
		KT_ASSERT_EQ(pa, V2P(page));
		mapped++;
	}
	/* refused before the count (with the file's reference) could reach 65535 */
	KT_EXPECT(mapped >= 65000 && mapped < 65535);
	KT_EXPECT_EQ(arch_as_npages(as), mapped);
	KT_EXPECT(arch_as_mapped(as, base, ARCH_PROT_READ));
	kt_diag(kt, "one page mapped %u times, the next refused", mapped);
	arch_as_destroy(as);			/* every table, the root, every mapping's reference */
	KT_EXPECT_EQ(pmm_free_pages(), free0 + 1);		/* + the root: the page stays */
	KT_EXPECT_EQ(*(volatile uint8_t *)page, 0x5a);	/* still the file's, not freed */
	arch_page_release((void *)page);		/* the last: freed */
	KT_EXPECT_EQ(pmm_free_pages(), free0 + 2);
}
