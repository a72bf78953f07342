/*
 * mm.h - physical pages and the kernel heap.
 *
 * Physical memory is identity-mapped (virtual == physical) below 3 GiB, so a page's
 * physical address is also a pointer to it.
 */
#ifndef KSYNC_MM_H
#define KSYNC_MM_H

#include <stdint.h>
#include <stddef.h>

struct boot_info;
/* Called once by kernel_entry, in this order, before anything allocates. */
void pmm_init(struct boot_info *bi);
void heap_init(void);

/* pmm.c - page frames. Blocking (a spin lock with IRQs off); callable from any context.
 * A frame is named by its direct-map address (a kernel pointer, arch_if.h "physical
 * memory"); V2P of it is the physical address a page-table entry wants. */
uint64_t pmm_alloc(void);			/* one page (not zeroed); 0 if none */
uint64_t pmm_alloc_contig(size_t npages);	/* physically contiguous; 0 if none */
void pmm_free(uint64_t va);
void pmm_free_contig(uint64_t va, size_t npages);
size_t pmm_free_pages(void);
size_t pmm_total_pages(void);

/* heap.c - kmalloc: 16-byte aligned blocks; size classes 16..2048 bytes from pages,
 * larger requests as whole contiguous pages. NULL on exhaustion. */
void *kmalloc(size_t n);
void *kzalloc(size_t n);
void kfree(void *p);
size_t kmalloc_usable(const void *p);
/* What the heap holds: pages carved into size classes (never given back), size-class
 * blocks handed out and not freed, pages of the large blocks handed out. */
struct heap_stats { size_t slab_pages, blocks_live, big_pages; };
void heap_stats(struct heap_stats *st);

#endif
