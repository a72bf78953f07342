/*
 * mm.c - a process's address space as the kernel sees it: the list of areas (VMAs) it
 * allows, with their rights, over the port's page tables (arch_if.h "user space"); the
 * page-fault policy (an access inside an area with the right is the kernel's to resolve:
 * demand-zero or copy-on-write, by arch_as_page; anything else is the process's error).
 *
 * Massalin & Pu 1991 (Synthesis) "Address spaces", "Memory management", "Page fault".
 * Lock (proc.h): mm->lock, a master lock of class "proc-mm" (Hartman & Ousterhout §2:
 * a data lock with statistics), guards the VMA list, brk and the page tables. It is taken
 * inside the interrupt scheme's critical section (mlock_lock: crit_enter; no handler takes
 * it), the fault path with IRQs off as well, so no holder touches user memory.
 *
 * Steps (a held mm->lock is a window no thread of that CPU can be
 * preempted in; under -icount one CPU, a libc mmap's page mapping held it 1.56 ms and a
 * fork's page-table copy 0.99 ms while cyclictest waited). Where the caller is its
 * space's only thread (mm->solo, proc.h: no other thread can fault in the space or
 * change its areas meanwhile; exec's new space is nobody's yet), a file mapping maps, an unmap or a replaced area unmaps, an
 * mprotect changes and a fork copies MM_STEP pages per hold of the lock (with a bounded
 * walk of empty tables), the lock (and the scheme's critical section) given back between steps. With other threads in the space both stay one hold, as Linux makes them one
 * step for the space's faults (mmap_lock): a fork's copy must be one instant of memory
 * that other threads write, and a fault between the steps would find the area half
 * mapped. Every page lies inside an area (the fault path, exec's loader and the
 * mappings map only inside one; vma_remove unmaps an area's pages), so a fork that
 * walks the areas copies every page.
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "syscall/linux_abi.h"
#include <ksync/errors.h>

LOCK_CLASS(proc_mm_class, "proc-mm", LOCK_MASTER, LOCK_DATA);

struct mm *mm_create(void)
{
	struct mm *mm = kzalloc(sizeof *mm);
	if (!mm)
		return NULL;
	mlock_init(&mm->lock, &proc_mm_class, MLOCK_TICKET);
	mm->solo = true;
	mm->as = arch_as_create();
	if (!mm->as) {
		kfree(mm);
		return NULL;
	}
	return mm;
}

void mm_destroy(struct mm *mm)
{
	if (!mm)
		return;
	for (struct vma *v = mm->vmas, *n; v; v = n) {
		n = v->next;
		kfree(v);
	}
	arch_as_destroy(mm->as);
	mlock_destroy(&mm->lock);
	kfree(mm);
}

/* Split so that no VMA straddles addr. mm->lock held. */
static long vma_split_at(struct mm *mm, uint64_t addr)
{
	for (struct vma *v = mm->vmas; v; v = v->next) {
		if (v->start < addr && addr < v->end) {
			struct vma *n = kmalloc(sizeof *n);
			if (!n)
				return -LX_ENOMEM;
			*n = *v;
			n->start = addr;
			v->end = addr;
			v->next = n;
			/* the SIGBUS boundary stays where it was: in one part, or none */
			if (v->bus >= addr)
				v->bus = 0;
			if (n->bus && n->bus < addr)
				n->bus = addr;
			return 0;
		}
	}
	return 0;
}

/* Pages mapped, copied or unmapped per hold of mm->lock where the steps apply (the top
 * comment) */
#define MM_STEP 32u

/* The steps apply: the caller is the space's only thread (proc.h struct mm solo) */
static bool mm_solo(const struct mm *mm)
{
	return __atomic_load_n(&mm->solo, __ATOMIC_RELAXED);
}

/* Between two steps: the lock (and the scheme's critical section) given back, so that a tick - and a
 * preemption - may come in, then taken again. */
static void mm_between_steps(struct mlock *l)
{
	mlock_unlock(l);
	mlock_lock(l);
}

/* Remove every VMA inside [start, end) (after splitting), unmapping its pages. mm->lock
 * held (*k its key). steps: the caller is the space's only thread (mm->solo): the
 * areas leave the list first, then their pages go MM_STEP at a time, the lock given back
 * between the steps (a fault there finds no area, as after the whole removal). */
static long vma_remove(struct mm *mm, uint64_t start, uint64_t end, bool steps)
{
	long rc = vma_split_at(mm, start);
	if (!rc)
		rc = vma_split_at(mm, end);
	if (rc)
		return rc;
	struct vma **pp = &mm->vmas, *gone = NULL;
	while (*pp) {
		struct vma *v = *pp;
		if (v->start >= start && v->end <= end) {
			*pp = v->next;
			if (steps) {
				v->next = gone;
				gone = v;
				continue;
			}
			arch_as_unmap(mm->as, v->start, v->end - v->start);
			kfree(v);
		} else {
			pp = &v->next;
		}
	}
	while (gone) {
		struct vma *v = gone;
		gone = v->next;
		for (uint64_t a = v->start; a < v->end;) {
			a = arch_as_unmap_some(mm->as, a, v->end, MM_STEP);
			mm_between_steps(&mm->lock);
		}
		kfree(v);
	}
	return 0;
}

static long vma_insert(struct mm *mm, uint64_t start, uint64_t end, unsigned prot,
		       uint64_t bus)
{
	struct vma *n = kmalloc(sizeof *n);
	if (!n)
		return -LX_ENOMEM;
	n->start = start;
	n->end = end;
	n->prot = prot;
	n->bus = bus > start && bus < end ? bus : bus && bus <= start ? start : 0;
	struct vma **pp = &mm->vmas;
	while (*pp && (*pp)->start < start)
		pp = &(*pp)->next;
	n->next = *pp;
	*pp = n;
	return 0;
}

static struct vma *vma_find(struct mm *mm, uint64_t addr)
{
	for (struct vma *v = mm->vmas; v; v = v->next)
		if (v->start <= addr && addr < v->end)
			return v;
	return NULL;
}

long mm_map_bus(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus)
{
	bool steps = mm_solo(mm);
	mlock_lock(&mm->lock);
	long rc = vma_remove(mm, start, end, steps);
	if (!rc)
		rc = vma_insert(mm, start, end, prot, bus);
	mlock_unlock(&mm->lock);
	return rc;
}

static long map_pages(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus,
		      void *const *pages, size_t n, bool cow)
{
	bool steps = mm_solo(mm);
	mlock_lock(&mm->lock);
	long rc = vma_remove(mm, start, end, steps);
	if (!rc)
		rc = vma_insert(mm, start, end, prot, bus);
	for (size_t i = 0; i < n && !rc; i++) {
		if (steps && i && i % MM_STEP == 0)
			mm_between_steps(&mm->lock);
		uint64_t va = start + i * PAGE_SIZE;
		if (!(cow ? arch_as_map_page_cow(mm->as, va, pages[i], prot)
			  : arch_as_map_page(mm->as, va, pages[i], prot)))
			rc = -LX_ENOMEM;
	}
	mlock_unlock(&mm->lock);
	return rc;
}

long mm_map_shared(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus,
		   void *const *pages, size_t n)
{
	return map_pages(mm, start, end, prot, bus, pages, n, false);
}

long mm_map_private(struct mm *mm, uint64_t start, uint64_t end, unsigned prot, uint64_t bus,
		    void *const *pages, size_t n)
{
	return map_pages(mm, start, end, prot, bus, pages, n, true);
}

long mm_place_cow(struct mm *mm, uint64_t va, void *page)
{
	mlock_lock(&mm->lock);
	struct vma *v = vma_find(mm, va);
	long rc = !v ? -LX_EFAULT
		     : arch_as_map_page_cow(mm->as, va, page, v->prot) ? 0 : -LX_ENOMEM;
	mlock_unlock(&mm->lock);
	return rc;
}

long mm_map(struct mm *mm, uint64_t start, uint64_t end, unsigned prot)
{
	return mm_map_bus(mm, start, end, prot, 0);
}

long mm_unmap(struct mm *mm, uint64_t start, uint64_t end)
{
	bool steps = mm_solo(mm);
	mlock_lock(&mm->lock);
	long rc = vma_remove(mm, start, end, steps);
	mlock_unlock(&mm->lock);
	return rc;
}

long mm_protect(struct mm *mm, uint64_t start, uint64_t end, unsigned prot)
{
	bool steps = mm_solo(mm);
	mlock_lock(&mm->lock);
	/* Linux: ENOMEM when part of the range is not mapped - after the areas from start
	 * up to the first hole were changed (do_mprotect_pkey goes area by area); nothing
	 * changes when start itself is not mapped */
	uint64_t a = start;
	for (struct vma *v = mm->vmas; v && a < end; v = v->next) {
		if (v->end <= a)
			continue;
		if (v->start > a)
			break;
		a = v->end;
	}
	long rc = a >= end ? 0 : -LX_ENOMEM;
	uint64_t upto = a < end ? a : end;
	/* a shared mapping of a file not open for writing stays unwritable (Linux checks
	 * every area before it changes one) */
	for (struct vma *v = mm->vmas; v && (prot & ARCH_PROT_WRITE); v = v->next)
		if (v->start < upto && start < v->end && (v->prot & VMA_SHARED_RO)) {
			mlock_unlock(&mm->lock);
			return -LX_EACCES;
		}
	long rc2 = 0;
	if (upto > start)
		rc2 = vma_split_at(mm, start);
	if (!rc2 && upto > start)
		rc2 = vma_split_at(mm, upto);
	if (!rc2 && upto > start) {
		for (struct vma *v = mm->vmas; v; v = v->next)
			if (v->start >= start && v->end <= upto)
				v->prot = prot | (v->prot & VMA_SHARED_RO);
		/* the areas first, then the pages (in steps: the top comment) */
		for (uint64_t a2 = start; a2 < upto;) {
			a2 = arch_as_protect_some(mm->as, a2, upto, prot, steps ? MM_STEP : 0);
			if (steps && a2 < upto)
				mm_between_steps(&mm->lock);
		}
	}
	mlock_unlock(&mm->lock);
	return rc2 ? rc2 : rc;
}

#define MMAP_TOP 0x7ffff7fff000ull	/* below the stack (exec.c) and its gap */

bool mm_overlaps(struct mm *mm, uint64_t start, uint64_t end)
{
	mlock_lock(&mm->lock);
	bool any = false;
	for (struct vma *v = mm->vmas; v && !any; v = v->next)
		any = v->start < end && start < v->end;
	mlock_unlock(&mm->lock);
	return any;
}

/* The highest gap below MMAP_TOP that holds len (top-down first fit), or 0. mm->lock held. */
static uint64_t gap_locked(struct mm *mm, uint64_t len)
{
	uint64_t best = 0, lo = USER_VA_MIN;
	for (struct vma *v = mm->vmas;; v = v->next) {
		uint64_t hi = v ? v->start : MMAP_TOP;
		if (hi > MMAP_TOP)
			hi = MMAP_TOP;
		if (hi > lo && hi - lo >= len)
			best = hi - len;
		if (!v || v->end >= MMAP_TOP)
			break;
		if (v->end > lo)
			lo = v->end;
	}
	return best;
}

long mm_write(struct mm *mm, uint64_t va, const void *src, size_t n)
{
	const uint8_t *s = src;
	while (n) {
		size_t off = va & (PAGE_SIZE - 1), chunk = PAGE_SIZE - off;
		if (chunk > n)
			chunk = n;
		mlock_lock(&mm->lock);
		struct vma *v = vma_find(mm, va);
		uint64_t pa = v ? arch_as_page(mm->as, va, v->prot, true) : 0;
		/* copied under the lock: nothing can unmap the page meanwhile (a page, inside
		 * the critical section for its copy) */
		if (pa)
			memcpy((uint8_t *)(uintptr_t)P2V(pa) + off, s, chunk);	/* the direct map */
		mlock_unlock(&mm->lock);
		if (!pa)
			return v ? -LX_ENOMEM : -LX_EFAULT;
		s += chunk;
		va += chunk;
		n -= chunk;
	}
	return 0;
}

/* kernel_user_fault's policy for mm: 0 when the access is now valid, KERNEL_FAULT_OOM
 * when it is allowed but no page (or page table) was left, -1 when it is not allowed.
 * IRQs off. */
int mm_fault(struct mm *mm, uint64_t addr, bool write, bool exec)
{
	mlock_lock(&mm->lock);
	struct vma *v = vma_find(mm, addr);
	int rc = -1;
	if (v && (v->prot & (write ? ARCH_PROT_WRITE : exec ? ARCH_PROT_EXEC : ARCH_PROT_READ)))
		rc = v->bus && addr >= v->bus ? KERNEL_FAULT_BUS	/* past the file's end */
		     : arch_as_page(mm->as, addr, v->prot, write) ? 0 : KERNEL_FAULT_OOM;
	mlock_unlock(&mm->lock);
	return rc;
}

/* child (new, empty, nobody else's yet) gets parent's areas and a copy-on-write copy of
 * its pages; 0 or -LX_ENOMEM. */
long mm_fork(struct mm *parent, struct mm *child)
{
	long rc = 0;
	bool steps = mm_solo(parent);
	mlock_lock(&parent->lock);
	child->brk_start = parent->brk_start;
	child->brk = parent->brk;
	if (!steps) {
		for (struct vma *v = parent->vmas; v && !rc; v = v->next)
			rc = vma_insert(child, v->start, v->end, v->prot, v->bus);
		if (!rc && arch_as_fork(parent->as, child->as) != KSYNC_OK)
			rc = -LX_ENOMEM;
	}
	/* in steps (the top comment): the caller is the parent's only thread, so its
	 * areas stay as they are between the steps; the child is nobody's yet. An area,
	 * then its pages MM_STEP at a time (an allocation for the area is a step too). */
	for (struct vma *v = parent->vmas; v && !rc && steps; v = v->next) {
		rc = vma_insert(child, v->start, v->end, v->prot, v->bus);
		for (uint64_t a = v->start; a < v->end && !rc;) {
			mm_between_steps(&parent->lock);
			if (arch_as_fork_range(parent->as, child->as, a, v->end, MM_STEP, &a) != KSYNC_OK)
				rc = -LX_ENOMEM;
		}
		mm_between_steps(&parent->lock);
	}
	mlock_unlock(&parent->lock);
	return rc;
}

/* A gap found and mapped in one hold of the lock: two threads of a process that mmap
 * at once must not both be given the same gap (a find, then a map, did that). The
 * address, or 0 (no gap: the caller answers ENOMEM) with *rc the map's error if the gap
 * could not be mapped. */
uint64_t mm_map_free(struct mm *mm, uint64_t len, unsigned prot, long *rc)
{
	mlock_lock(&mm->lock);
	uint64_t best = gap_locked(mm, len);
	*rc = best ? vma_insert(mm, best, best + len, prot, 0) : 0;
	mlock_unlock(&mm->lock);
	return *rc ? 0 : best;
}
