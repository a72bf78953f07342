/*
 * context.c - the x86-64 half of arch_if.h's thread contract: FP/SIMD enable at boot,
 * building a new context's first frame, and thread stacks with an unmapped guard below.
 *
 * FP/SIMD policy: the kernel's C is -mgeneral-regs-only, so the integer switch saves no
 * FP state; only contexts initialised with fp = true own an FXSAVE area (512 bytes at the
 * top of their stack), saved and loaded by arch_context_switch_fp (switch.S).
 *
 * Stacks (Massalin & Pu map pages lock-free; the slot list here is a small locked pool,
 * stack allocation is not a fast path): a region of KVA reserved for stacks is cut into
 * STACK_SLOTS slots of STACK_STRIDE bytes. A stack of `size` bytes occupies the top of
 * its slot; the rest of the slot below it stays unmapped, so the guard is at least one
 * page (more for smaller stacks) and an overflow page-faults on the #PF IST stack
 * (trap.c). Physical pages come one at a time from pmm_alloc and go back to pmm_free;
 * the page tables of the region, once installed, stay (paging.c: type-stable).
 * A canary word at the lowest usable address is a second net (arch_stack_ok).
 */
#include "kernel.h"
#include "mm.h"
#include "spinlock.h"
#include "x86.h"
#include "trap.h"
#include <ksync/errors.h>

/* KVA_BASE + 256 GiB: clear of the ranges the paging tests use (5 GiB, 17+ GiB). */
#define STACK_VA_BASE (KVA_BASE + (256ull << 30))
#define STACK_STRIDE (256ull << 10)	/* VA per slot: the largest stack is this - 4 KiB */
#define STACK_SLOTS 16384u		/* 4 GiB of VA */
#define STACK_CANARY 0x5ca1ab1e5ca1ab1eull
#define FXAREA_SIZE 512

_Static_assert(__builtin_offsetof(struct arch_context, rsp) == 0, "switch.S CTX_RSP");
_Static_assert(__builtin_offsetof(struct arch_context, fxarea) == 8, "switch.S CTX_FXAREA");

void arch_context_start(void);		/* switch.S: first switch-in lands here */

/* ---- FP/SIMD enable (each CPU at boot, before anything switches) -------------------- */
void fpu_init_cpu(void)
{
	uint32_t a, b, c, d;
	cpuid(1, 0, &a, &b, &c, &d);
	if (!(d & (1u << 24)) || !(d & (1u << 25)))
		panic("CPU without FXSR/SSE (CPUID.1 EDX=0x%x)", d);
	uint64_t cr0 = read_cr0();
	cr0 &= ~((1ull << 2) | (1ull << 3));	/* EM=0: x87 present; TS=0: no #NM on first use */
	cr0 |= (1ull << 1) | (1ull << 5);	/* MP: wait/fwait honours TS; NE: native #MF */
	__asm__ volatile("mov %0, %%cr0" :: "r"(cr0) : "memory");
	uint64_t cr4 = read_cr4();
	cr4 |= (1ull << 9) | (1ull << 10);	/* OSFXSR: fxsave/SSE allowed; OSXMMEXCPT: #XM */
	__asm__ volatile("mov %0, %%cr4" :: "r"(cr4) : "memory");
	uint32_t mxcsr = 0x1f80;		/* all SIMD exceptions masked, round to nearest */
	__asm__ volatile("fninit; ldmxcsr %0" :: "m"(mxcsr) : "memory");
}

/* ---- contexts ----------------------------------------------------------------------- */
void arch_context_adopt(struct arch_context *ctx)
{
	ctx->rsp = 0;			/* filled by the first switch away */
	ctx->fxarea = NULL;
}

void arch_context_init(struct arch_context *ctx, void *base, size_t size,
		       void (*entry)(void *), void *arg, bool fp)
{
	KASSERT(base && size >= PAGE_SIZE && !((uint64_t)base & 15) && !(size & 15));
	uint64_t top = (uint64_t)base + size;
	ctx->fxarea = NULL;
	if (fp) {
		/* the FXSAVE area at the top of the stack: an overflow runs away from it */
		top -= FXAREA_SIZE;
		uint8_t *fx = (uint8_t *)top;
		memset(fx, 0, FXAREA_SIZE);
		*(uint16_t *)(fx + 0) = 0x37f;	/* FCW: fninit's value, all x87 exceptions masked */
		/* FSW 0, abridged FTW 0 (all registers empty), as after fninit */
		*(uint32_t *)(fx + 24) = 0x1f80;	/* MXCSR: as after reset */
		ctx->fxarea = fx;
	}
	/* The frame arch_context_switch pops (r15 r14 r13 r12 rbx rbp, then ret): its ret
	 * leaves rsp at top - 16, 16-byte aligned, for arch_context_start's call. */
	uint64_t *sp = (uint64_t *)top;
	sp[-1] = 0;				/* padding; never read */
	sp[-2] = 0;
	sp[-3] = (uint64_t)arch_context_start;	/* the switch's ret target */
	sp[-4] = 0;				/* rbp: ends the frame-pointer chain */
	sp[-5] = (uint64_t)entry;		/* rbx */
	sp[-6] = (uint64_t)arg;			/* r12 */
	sp[-7] = 0;				/* r13 */
	sp[-8] = 0;				/* r14 */
	sp[-9] = 0;				/* r15 */
	ctx->rsp = (uint64_t)&sp[-9];
}

void arch_context_destroy(struct arch_context *ctx)
{
	/* Nothing is held outside the struct and the thread's stack (which the kernel frees). */
	ctx->rsp = 0;
	ctx->fxarea = NULL;
}

/* ---- stacks ------------------------------------------------------------------------- */
/* Slot pool: slot_next links free slots (index + 1; 0 ends the list), slot_bump is the
 * first never-used slot. All three are protected by slot_lock. */
static struct spinlock slot_lock = SPINLOCK_INIT("stack slots");
static uint32_t slot_next[STACK_SLOTS];
static uint32_t slot_free_head;
static uint32_t slot_bump;
/* Live stacks, for the tests (written under slot_lock). */
volatile uint64_t stack_slots_live;

static bool slot_take(uint32_t *slot)
{
	irqkey_t k = spin_lock_irqsave(&slot_lock);
	bool ok = true;
	if (slot_free_head) {
		*slot = slot_free_head - 1;
		slot_free_head = slot_next[*slot];
	} else if (slot_bump < STACK_SLOTS) {
		*slot = slot_bump++;
	} else {
		ok = false;
	}
	if (ok)
		stack_slots_live++;
	spin_unlock_irqrestore(&slot_lock, k);
	return ok;
}

static void slot_give(uint32_t slot)
{
	irqkey_t k = spin_lock_irqsave(&slot_lock);
	slot_next[slot] = slot_free_head;
	slot_free_head = slot + 1;
	stack_slots_live--;
	spin_unlock_irqrestore(&slot_lock, k);
}

static uint64_t slot_top(uint32_t slot) { return STACK_VA_BASE + (uint64_t)(slot + 1) * STACK_STRIDE; }

/* Unmap [va, va + n pages) and return the frames (TLB shot down: IRQs on, paging.c). */
static void unmap_pages(uint64_t va, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t pa;
		if (arch_vm_unmap(va + i * PAGE_SIZE, &pa) == KSYNC_OK)
			pmm_free(P2V(pa));
		else
			panic("stack page 0x%lx was not mapped", va + i * PAGE_SIZE);
	}
}

void *arch_stack_alloc(size_t size)
{
	size = ALIGN_UP(size, PAGE_SIZE);
	if (!size || size > STACK_STRIDE - PAGE_SIZE)
		return NULL;
	uint32_t slot;
	if (!slot_take(&slot))
		return NULL;
	uint64_t base = slot_top(slot) - size;
	size_t n = size / PAGE_SIZE;
	for (size_t i = 0; i < n; i++) {
		uint64_t pa = pmm_alloc();
		int rc = pa ? arch_vm_map(base + i * PAGE_SIZE, V2P(pa), true) : KSYNC_ENOMEM;
		if (rc != KSYNC_OK) {
			/* a slot's pages are unmapped while it is free, so only ENOMEM gets here */
			if (pa)
				pmm_free(pa);
			unmap_pages(base, i);
			slot_give(slot);
			return NULL;
		}
	}
	*(volatile uint64_t *)base = STACK_CANARY;
	return (void *)base;
}

void arch_stack_free(void *base, size_t size)
{
	if (!base)
		return;
	size = ALIGN_UP(size, PAGE_SIZE);
	uint64_t b = (uint64_t)base;
	KASSERT(b >= STACK_VA_BASE && b < STACK_VA_BASE + STACK_SLOTS * STACK_STRIDE);
	uint32_t slot = (uint32_t)((b - STACK_VA_BASE) / STACK_STRIDE);
	KASSERT(b + size == slot_top(slot));
	unmap_pages(b, size / PAGE_SIZE);
	slot_give(slot);
}

bool arch_stack_ok(void *base, size_t size)
{
	(void)size;
	return *(volatile uint64_t *)base == STACK_CANARY;
}

/* For the fault path (trap.c): addr lies in the stack region where no stack page is
 * mapped, i.e. in the guard area below some slot's stack. IRQs off; walks the tables
 * read-only. */
bool stack_guard_hit(uint64_t addr, unsigned *slot)
{
	if (addr < STACK_VA_BASE || addr >= STACK_VA_BASE + STACK_SLOTS * STACK_STRIDE)
		return false;
	*slot = (unsigned)((addr - STACK_VA_BASE) / STACK_STRIDE);
	return arch_vm_translate(addr) == 0;
}
