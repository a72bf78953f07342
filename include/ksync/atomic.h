/*
 * atomic.h - libksync's atomic operations and fences: thin wrappers over the compiler's
 * __atomic builtins (freestanding, no libatomic) with the memory order in the name,
 * plus a 16-byte compare-and-swap and load by inline `lock cmpxchg16b`.
 *
 * Naming: ksync_<op>_<order>_<type>
 *   op     load | store | exchange | cas_strong | cas_weak |
 *          fetch_add | fetch_sub | fetch_or | fetch_and
 *   order  relaxed | acquire | release | acq_rel | seq_cst   (C11 meanings)
 *   type   u8 | u32 | u64 | ptr
 * e.g. ksync_load_acquire_u64(p), ksync_store_release_ptr(&head, n),
 *      ksync_cas_strong_acq_rel_u64(p, &expected, desired), ksync_fetch_add_relaxed_u32(p, 1).
 *
 * Which combinations exist (every one listed is defined; nothing else is):
 *   load                                  relaxed acquire seq_cst          u8 u32 u64 ptr
 *   store                                 relaxed release seq_cst          u8 u32 u64 ptr
 *   exchange, cas_strong, cas_weak        all five orders                  u8 u32 u64 ptr
 *   fetch_add, fetch_sub, fetch_or,
 *   fetch_and                             all five orders                  u8 u32 u64
 *
 * What each order orders (for the operation it is attached to):
 *   relaxed  atomicity only; no ordering with other memory accesses.
 *   acquire  no later load or store (in program order) is performed before this load.
 *            Pairs with a release on the same object: everything before the release is
 *            visible after the acquire that reads its value.
 *   release  no earlier load or store is performed after this store.
 *   acq_rel  both, for a read-modify-write.
 *   seq_cst  acq_rel plus a single total order over all seq_cst operations.
 * A CAS's failure order is derived from its success order: relaxed->relaxed,
 * acquire->acquire, release->relaxed, acq_rel->acquire, seq_cst->seq_cst.
 * On x86-64 every locked read-modify-write is a full barrier in hardware whatever order
 * is named, and plain loads/stores already have acquire/release semantics; the order
 * still constrains the compiler, and the weakest correct order documents intent.
 *
 * Pointer operations: `p` is the address of a pointer object of any object-pointer type
 * (struct node **, void **...), passed as void * so callers need no casts:
 *   struct node *head;  struct node *n = ksync_load_acquire_ptr(&head);
 * CAS: `expected` points to a pointer variable holding the expected value.
 *
 * CAS: returns true and stores `desired` if *p == *expected; otherwise returns false and
 * writes the current value of *p into *expected.  cas_weak may also fail spuriously (it
 * never does on x86-64, but portable callers must loop).
 *
 * Progress: every operation here is a single instruction (mov, xchg, lock cmpxchg,
 * lock xadd, lock cmpxchg16b, mfence or lock or) and so wait-free, except fetch_or and
 * fetch_and, which the compiler emits as a `lock cmpxchg` retry loop when the old value
 * is used (`lock or`/`lock and` when it is discarded): lock-free.  Retry loops that
 * callers build from CAS are lock-free, not wait-free.
 *
 * Alignment: every object must be naturally aligned (struct ksync_u128 is 16-aligned by
 * declaration); a misaligned locked operation is either split-locked (slow, and may trap)
 * or, for cmpxchg16b, raises #GP.
 *
 * Test hook: every wrapper calls KSYNC_ATOMIC_HOOK(op, addr) just before its atomic
 * operation, where `op` is one of the bare tokens load, store, exchange, cas, fetch_add,
 * fetch_sub, fetch_or, fetch_and, fence, cas128, load128 and `addr` is the object's
 * address (NULL for fences).  It is empty unless defined before this header is included;
 * a deterministic interleaving explorer defines it to yield to its scheduler.
 */
#ifndef KSYNC_ATOMIC_H
#define KSYNC_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef KSYNC_ATOMIC_HOOK
#define KSYNC_ATOMIC_HOOK(op, addr) ((void)0)
#endif

/* ---- loads and stores ------------------------------------------------------------ */

#define KSYNC__LOAD(T, ty, ord, ORD)                                                  \
	static inline T ksync_load_##ord##_##ty(const T *p)                           \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(load, p);                                           \
		return __atomic_load_n(p, ORD);                                       \
	}
#define KSYNC__STORE(T, ty, ord, ORD)                                                 \
	static inline void ksync_store_##ord##_##ty(T *p, T v)                        \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(store, p);                                          \
		__atomic_store_n(p, v, ORD);                                          \
	}

/* ---- read-modify-write ----------------------------------------------------------- */

#define KSYNC__EXCHANGE(T, ty, ord, ORD)                                              \
	static inline T ksync_exchange_##ord##_##ty(T *p, T v)                        \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(exchange, p);                                       \
		return __atomic_exchange_n(p, v, ORD);                                \
	}
#define KSYNC__CAS(T, ty, ord, ORD, FAIL, strength, WEAK)                             \
	static inline bool ksync_cas_##strength##_##ord##_##ty(T *p, T *expected,     \
							       T desired)             \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(cas, p);                                            \
		return __atomic_compare_exchange_n(p, expected, desired, WEAK, ORD,   \
						   FAIL);                             \
	}
#define KSYNC__FETCH(T, ty, ord, ORD, op)                                             \
	static inline T ksync_fetch_##op##_##ord##_##ty(T *p, T v)                    \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(fetch_##op, p);                                     \
		return __atomic_fetch_##op(p, v, ORD);                                \
	}

/* Every read-modify-write of one type in one order. */
#define KSYNC__RMW_ORDER(T, ty, ord, ORD, FAIL)                                       \
	KSYNC__EXCHANGE(T, ty, ord, ORD)                                              \
	KSYNC__CAS(T, ty, ord, ORD, FAIL, strong, 0)                                  \
	KSYNC__CAS(T, ty, ord, ORD, FAIL, weak, 1)                                    \
	KSYNC__FETCH(T, ty, ord, ORD, add)                                            \
	KSYNC__FETCH(T, ty, ord, ORD, sub)                                            \
	KSYNC__FETCH(T, ty, ord, ORD, or)                                             \
	KSYNC__FETCH(T, ty, ord, ORD, and)

/* All operations on one unsigned integer type. */
#define KSYNC__INT_OPS(T, ty)                                                         \
	KSYNC__LOAD(T, ty, relaxed, __ATOMIC_RELAXED)                                 \
	KSYNC__LOAD(T, ty, acquire, __ATOMIC_ACQUIRE)                                 \
	KSYNC__LOAD(T, ty, seq_cst, __ATOMIC_SEQ_CST)                                 \
	KSYNC__STORE(T, ty, relaxed, __ATOMIC_RELAXED)                                \
	KSYNC__STORE(T, ty, release, __ATOMIC_RELEASE)                                \
	KSYNC__STORE(T, ty, seq_cst, __ATOMIC_SEQ_CST)                                \
	KSYNC__RMW_ORDER(T, ty, relaxed, __ATOMIC_RELAXED, __ATOMIC_RELAXED)          \
	KSYNC__RMW_ORDER(T, ty, acquire, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)          \
	KSYNC__RMW_ORDER(T, ty, release, __ATOMIC_RELEASE, __ATOMIC_RELAXED)          \
	KSYNC__RMW_ORDER(T, ty, acq_rel, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)          \
	KSYNC__RMW_ORDER(T, ty, seq_cst, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

KSYNC__INT_OPS(uint8_t, u8)
KSYNC__INT_OPS(uint32_t, u32)
KSYNC__INT_OPS(uint64_t, u64)

/* ---- pointers: p is the address of a pointer object, see the top ------------------- */

#define KSYNC__PTR_LOAD(ord, ORD)                                                     \
	static inline void *ksync_load_##ord##_ptr(const void *p)                     \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(load, p);                                           \
		return __atomic_load_n((void *const *)p, ORD);                        \
	}
#define KSYNC__PTR_STORE(ord, ORD)                                                    \
	static inline void ksync_store_##ord##_ptr(void *p, void *v)                  \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(store, p);                                          \
		__atomic_store_n((void **)p, v, ORD);                                 \
	}
#define KSYNC__PTR_RMW(ord, ORD, FAIL)                                                \
	static inline void *ksync_exchange_##ord##_ptr(void *p, void *v)              \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(exchange, p);                                       \
		return __atomic_exchange_n((void **)p, v, ORD);                       \
	}                                                                             \
	static inline bool ksync_cas_strong_##ord##_ptr(void *p, void *expected,      \
							void *desired)                \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(cas, p);                                            \
		return __atomic_compare_exchange_n((void **)p, (void **)expected,     \
						   desired, 0, ORD, FAIL);            \
	}                                                                             \
	static inline bool ksync_cas_weak_##ord##_ptr(void *p, void *expected,        \
						      void *desired)                  \
	{                                                                             \
		KSYNC_ATOMIC_HOOK(cas, p);                                            \
		return __atomic_compare_exchange_n((void **)p, (void **)expected,     \
						   desired, 1, ORD, FAIL);            \
	}

KSYNC__PTR_LOAD(relaxed, __ATOMIC_RELAXED)
KSYNC__PTR_LOAD(acquire, __ATOMIC_ACQUIRE)
KSYNC__PTR_LOAD(seq_cst, __ATOMIC_SEQ_CST)
KSYNC__PTR_STORE(relaxed, __ATOMIC_RELAXED)
KSYNC__PTR_STORE(release, __ATOMIC_RELEASE)
KSYNC__PTR_STORE(seq_cst, __ATOMIC_SEQ_CST)
KSYNC__PTR_RMW(relaxed, __ATOMIC_RELAXED, __ATOMIC_RELAXED)
KSYNC__PTR_RMW(acquire, __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)
KSYNC__PTR_RMW(release, __ATOMIC_RELEASE, __ATOMIC_RELAXED)
KSYNC__PTR_RMW(acq_rel, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)
KSYNC__PTR_RMW(seq_cst, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

/* ---- ThreadSanitizer support (hosted TSan builds only) ------------------------------ */

/*
 * TSan does not see inline asm and does not model standalone fences (gcc warns that
 * __atomic_thread_fence is unsupported under -fsanitize=thread).  In TSan builds:
 *  - the 16-byte operations tell it about the synchronization they perform: a release
 *    on `p` before every CAS (attempted, so a failed CAS over-approximates: it may hide
 *    a race, never report a false one) and an acquire after every CAS and load;
 *  - every fence becomes an acq_rel (seq_cst for ksync_fence_seq_cst) read-modify-write
 *    of one global word, ksync__tsan_fence_word (lib/hosted/platform.c; the hosted
 *    kernel's arch/hosted/kport.c), so all fences
 *    synchronize with each other: stronger than real fences (may hide a race, never
 *    reports a false one), and what TSan can reason about.
 * Elsewhere these macros are the plain operations.
 */
#if defined(__SANITIZE_THREAD__)	/* hosted code, and the kernel's hosted-port TSan build */
#define KSYNC__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KSYNC__TSAN 1
#endif
#endif
#ifdef KSYNC__TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern unsigned long ksync__tsan_fence_word;
#define KSYNC__TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define KSYNC__TSAN_RELEASE(p) __tsan_release((void *)(p))
#define KSYNC__FENCE(ORD)                                                             \
	((void)__atomic_fetch_add(&ksync__tsan_fence_word, 0,                         \
				  (ORD) == __ATOMIC_SEQ_CST ? __ATOMIC_SEQ_CST         \
							    : __ATOMIC_ACQ_REL))
#else
#define KSYNC__TSAN_ACQUIRE(p) ((void)0)
#define KSYNC__TSAN_RELEASE(p) ((void)0)
#define KSYNC__FENCE(ORD) __atomic_thread_fence(ORD)
#endif

/* ---- fences ------------------------------------------------------------------------ */

/* Acquire fence: loads before it are ordered before every load and store after it.
 * x86-64: compiler barrier only (no instruction). */
static inline void ksync_fence_acquire(void)
{
	KSYNC_ATOMIC_HOOK(fence, NULL);
	KSYNC__FENCE(__ATOMIC_ACQUIRE);
}

/* Release fence: every load and store before it is ordered before stores after it.
 * x86-64: compiler barrier only. */
static inline void ksync_fence_release(void)
{
	KSYNC_ATOMIC_HOOK(fence, NULL);
	KSYNC__FENCE(__ATOMIC_RELEASE);
}

/* Acquire and release fence.  x86-64: compiler barrier only. */
static inline void ksync_fence_acq_rel(void)
{
	KSYNC_ATOMIC_HOOK(fence, NULL);
	KSYNC__FENCE(__ATOMIC_ACQ_REL);
}

/* Full fence: orders every earlier load and store before every later one, including
 * store -> load (the one reordering x86-TSO allows).  x86-64: mfence, or the
 * equivalent-for-ordinary-memory `lock orq $0, (%rsp)` that gcc emits.  Code that needs
 * the mfence instruction itself (non-temporal stores, measurement) writes the asm. */
static inline void ksync_fence_seq_cst(void)
{
	KSYNC_ATOMIC_HOOK(fence, NULL);
	KSYNC__FENCE(__ATOMIC_SEQ_CST);
}

/* Compiler barrier: the compiler does not move memory accesses across it; the CPU may.
 * Orders against code on the same CPU only (an interrupt handler, a signal handler). */
static inline void ksync_compiler_barrier(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* ---- 16-byte compare-and-swap (lock cmpxchg16b) ------------------------------------ */

/* A 16-byte value for ksync_cas128/ksync_load128; `lo` is the lower-addressed word. */
struct ksync_u128 {
	uint64_t lo;
	uint64_t hi;
} __attribute__((aligned(16)));

/*
 * If *p == *expected, store `desired` into *p and return true; otherwise copy the
 * current *p into *expected and return false.  One `lock cmpxchg16b`: atomic over all
 * 16 bytes, and a full barrier (orders every earlier load and store before every later
 * one, success or failure).  Wait-free.  p must be 16-byte aligned (#GP otherwise).
 * Needs the CX16 CPUID feature (every x86-64 CPU since ~2006; QEMU -cpu max has it).
 */
static inline bool ksync_cas128(struct ksync_u128 *p, struct ksync_u128 *expected,
				struct ksync_u128 desired)
{
	bool ok;

	KSYNC_ATOMIC_HOOK(cas128, p);
	KSYNC__TSAN_RELEASE(p);
	/* rdx:rax = expected (hi:lo), rcx:rbx = desired.  On failure the CPU loads the
	 * current value into rdx:rax, which the "+a"/"+d" outputs copy to *expected. */
	__asm__ __volatile__("lock cmpxchg16b %[m]"
			     : "=@ccz"(ok), [m] "+m"(*p), "+a"(expected->lo), "+d"(expected->hi)
			     : "b"(desired.lo), "c"(desired.hi)
			     : "memory");
	KSYNC__TSAN_ACQUIRE(p);
	return ok;
}

/*
 * Atomic 16-byte load: `lock cmpxchg16b` with expected = desired = 0, which stores 0
 * over 0 (no change) or fails and returns the current value.  It therefore needs *p to
 * be writable, takes the cache line exclusive (contends like a write) and is a full
 * barrier.  Wait-free.
 */
static inline struct ksync_u128 ksync_load128(struct ksync_u128 *p)
{
	uint64_t lo = 0, hi = 0;

	KSYNC_ATOMIC_HOOK(load128, p);
	__asm__ __volatile__("lock cmpxchg16b %[m]"
			     : [m] "+m"(*p), "+a"(lo), "+d"(hi)
			     : "b"((uint64_t)0), "c"((uint64_t)0)
			     : "memory", "cc");
	KSYNC__TSAN_ACQUIRE(p);
	return (struct ksync_u128){ .lo = lo, .hi = hi };
}

#endif /* KSYNC_ATOMIC_H */
