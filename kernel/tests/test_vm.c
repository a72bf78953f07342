/*
 * test_vm.c - lock-free page mapping (paging.c, Massalin & Pu "add mapping"):
 * semantics on one CPU, then every CPU racing to install the same tables and entries:
 * exactly one winner per entry, each missing table installed exactly once (losers free
 * theirs), no page leaked.
 */
#include "kernel.h"
#include "mm.h"
#include <ksync/errors.h>
#include <ksync/ktest.h>


/* A port without a page table of its own (the hosted port: the host's MMU maps the
 * process) answers KSYNC_ENOTSUP; the tests skip with that reason. */
#define VM_UNSUPPORTED "no lock-free page tables on this port (arch_vm_map: KSYNC_ENOTSUP)"
static bool vm_supported(void)
{
	/* a misaligned address: EINVAL where mapping exists, with nothing mapped */
	return arch_vm_map(KVA_BASE + 1, 0, true) != KSYNC_ENOTSUP;
}

KTEST(vm_map_translate_unmap)
{
	if (!vm_supported())
		KT_SKIP(VM_UNSUPPORTED);
	uint64_t va = KVA_BASE + (5ull << 30) + 7 * PAGE_SIZE;
	/* pmm hands out direct-map addresses (arch_if.h "physical memory"); map by V2P */
	uint64_t kp = pmm_alloc(), kp2 = pmm_alloc();
	KT_ASSERT(kp && kp2);
	uint64_t pa = V2P(kp), pa2 = V2P(kp2);
	*(volatile uint64_t *)kp = 0x1234abcd5678ef00ull;
	KT_ASSERT_EQ(arch_vm_map(va, pa, true), KSYNC_OK);
	KT_EXPECT_EQ(arch_vm_translate(va + 8), pa + 8);
	KT_EXPECT_EQ(*(volatile uint64_t *)va, 0x1234abcd5678ef00ull);	/* read through it */
	*(volatile uint64_t *)(va + 16) = 42;
	KT_EXPECT_EQ(*(volatile uint64_t *)(kp + 16), 42);
	KT_EXPECT_EQ(arch_vm_map(va, pa, true), KSYNC_OK);		/* identical re-add */
	KT_EXPECT_EQ(arch_vm_map(va, pa2, true), KSYNC_EBUSY);		/* conflicting mapping */
	KT_EXPECT_EQ(arch_vm_map(va, pa, false), KSYNC_EBUSY);		/* same page, other rights */
	uint64_t old = 0;
	KT_EXPECT_EQ(arch_vm_unmap(va, &old), KSYNC_OK);
	KT_EXPECT_EQ(old, pa);
	KT_EXPECT_EQ(arch_vm_translate(va), 0);
	KT_EXPECT_EQ(arch_vm_unmap(va, NULL), KSYNC_ENOENT);
	/* bad input */
	KT_EXPECT_EQ(arch_vm_map(va + 1, pa, true), KSYNC_EINVAL);
	KT_EXPECT_EQ(arch_vm_map(va, pa + 1, true), KSYNC_EINVAL);
	KT_EXPECT_EQ(arch_vm_map(0x200000, pa, true), KSYNC_EINVAL);	/* the low half: processes' */
	KT_EXPECT_EQ(arch_vm_map(P2V(0x200000), pa, true), KSYNC_EINVAL);	/* the direct map */
	KT_EXPECT_EQ(arch_vm_map(KVA_BASE + KVA_SIZE, pa, true), KSYNC_EINVAL);
	KT_EXPECT_EQ(arch_vm_unmap(KVA_BASE - PAGE_SIZE, NULL), KSYNC_EINVAL);
	pmm_free(kp);
	pmm_free(kp2);
}

/* The unmapped-access path: a fault at the unmapped address would panic, so we only
 * check translate; exceptions are tested in test_intr.c. */

#define NPAGES 64
#define MAX_CPUS_TEST 8
static uint64_t race_pa[MAX_CPUS_TEST][NPAGES];
static int race_rc[MAX_CPUS_TEST][NPAGES];
static volatile uint32_t race_go, race_done;
static uint64_t race_base;

static void racer(void *arg)
{
	unsigned me = (unsigned)(uintptr_t)arg;
	while (!__atomic_load_n(&race_go, __ATOMIC_ACQUIRE))
		arch_cpu_relax();
	for (int i = 0; i < NPAGES; i++)
		race_rc[me][i] = arch_vm_map(race_base + (uint64_t)i * PAGE_SIZE, V2P(race_pa[me][i]), true);
	__atomic_fetch_add(&race_done, 1, __ATOMIC_RELEASE);
}

/* One round in a fresh 1 GiB slot (PD and PT both missing). */
static void race_round(struct ktest_ctx *kt, unsigned n, unsigned round)
{
	race_base = KVA_BASE + ((17ull + round) << 30);
	size_t free_before = pmm_free_pages();
	uint64_t inst0 = vm_tables_installed;
	for (unsigned c = 0; c < n; c++)
		for (int i = 0; i < NPAGES; i++) {
			race_pa[c][i] = pmm_alloc();
			KT_ASSERT(race_pa[c][i]);
			*(volatile uint64_t *)race_pa[c][i] = ((uint64_t)c << 32) | (uint64_t)i;
		}
	race_go = 0;
	race_done = 0;
	for (unsigned c = 1; c < n; c++)
		arch_call_post(c, racer, (void *)(uintptr_t)c);
	__atomic_store_n(&race_go, 1, __ATOMIC_RELEASE);
	racer((void *)0);
	for (unsigned c = 1; c < n; c++)
		arch_call_wait(c);
	KT_ASSERT_EQ(race_done, n);

	/* exactly one winner per entry; the mapping is the winner's page */
	for (int i = 0; i < NPAGES; i++) {
		int winners = 0;
		unsigned w = 0;
		for (unsigned c = 0; c < n; c++) {
			KT_EXPECT(race_rc[c][i] == KSYNC_OK || race_rc[c][i] == KSYNC_EBUSY);
			if (race_rc[c][i] == KSYNC_OK) {
				winners++;
				w = c;
			}
		}
		KT_EXPECT_EQ(winners, 1);
		uint64_t va = race_base + (uint64_t)i * PAGE_SIZE;
		KT_EXPECT_EQ(arch_vm_translate(va), V2P(race_pa[w][i]));
		KT_EXPECT_EQ(*(volatile uint64_t *)va, ((uint64_t)w << 32) | (uint64_t)i);
	}
	/* the slot needed one PD and one PT: installed exactly once each, losers freed theirs */
	KT_EXPECT_EQ(vm_tables_installed - inst0, 2);
	for (int i = 0; i < NPAGES; i++)
		KT_EXPECT_EQ(arch_vm_unmap(race_base + (uint64_t)i * PAGE_SIZE, NULL), KSYNC_OK);
	for (unsigned c = 0; c < n; c++)
		for (int i = 0; i < NPAGES; i++)
			pmm_free(race_pa[c][i]);
	KT_EXPECT_EQ(pmm_free_pages(), free_before - 2);	/* only the two tables remain */
}

KTEST(vm_map_races_one_winner_per_entry)
{
	unsigned n = arch_ncpus() < MAX_CPUS_TEST ? arch_ncpus() : MAX_CPUS_TEST;
	if (!vm_supported())
		KT_SKIP(VM_UNSUPPORTED);
	if (n < 2)
		KT_SKIP("needs 2 CPUs");
	uint64_t lost0 = vm_tables_lost;
	for (unsigned r = 0; r < 16; r++)
		race_round(kt, n, r);
	kt_diag(kt, "%u CPUs, 16 rounds: %lu table installs lost a race and were freed",
		n, vm_tables_lost - lost0);
}
