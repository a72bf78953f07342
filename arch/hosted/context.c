/*
 * arch/hosted/context.c - threads on the hosted port (arch_if.h "threads: contexts,
 * stacks, preemption"; docs/hosted-port.md "Threads on the hosted port"): contexts whose
 * switch is arch/hosted/switch.S, thread stacks with a guard page and a canary, the
 * sanitizers' fiber annotations, and arch_frame_call (the runtime's hosted_frame_call).
 *
 * FP/SIMD policy: arch_context_switch keeps what the SysV ABI makes callee-saved (rbx,
 * rbp, r12-r15, MXCSR, x87 control word); arch_context_switch_fp also saves the full
 * FP/SIMD state (xsave of x87/SSE/AVX/AVX-512 state, or fxsave without OS xsave support)
 * of an fp context into an area at the top of its stack and loads the next one's.
 *
 * Sanitizers (Linux: one host thread per vCPU, ksync's threads multiplexed on them, a
 * context may be resumed on another vCPU than the one it was saved on):
 *   - ASan: __sanitizer_start_switch_fiber(&from->fake_stack, to's stack) right before the
 *     stack switch, __sanitizer_finish_switch_fiber(from->fake_stack) right after it in
 *     the resumed context (and with NULL in a new context's trampoline). ASan keeps the
 *     fake stack with the context (the saved pointer), not with the host thread, so
 *     migration is fine. A context destroyed while switched out leaves its fake stack
 *     (only with detect_stack_use_after_return=1, off by default) to the end of the run.
 *     A stack is unpoisoned when a context is laid out on it and when it is freed: a
 *     thread that died mid-call leaves its frames' redzones poisoned.
 *   - TSan: a fiber per context (__tsan_create_fiber at init, __tsan_destroy_fiber in
 *     arch_context_destroy; adopted: the thread's own, __tsan_get_current_fiber), and
 *     __tsan_switch_to_fiber(to, 0) right before the stack switch: the switch is a
 *     happens-before edge, as the kernel's handoff is. TSan fibers may be switched to on
 *     any thread. TSan keeps signals it deferred per fiber, so the switch first passes an
 *     interceptor (with IRQs off the handler only records the source in this vCPU's
 *     pending set): a deferred clock tick does not leave with the fiber for another vCPU.
 *
 * Thread-locals: the switch's C halves read none after the stack switch (the resumed
 * context may be on another vCPU, another host thread); only the contexts' own fields.
 */
#define _GNU_SOURCE
#include "kernel.h"
#include "hosted.h"

#include <cpuid.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#if defined(__SANITIZE_ADDRESS__)
#define HOSTED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOSTED_ASAN 1
#endif
#endif
#ifndef HOSTED_ASAN
#define HOSTED_ASAN 0
#endif
#if HOSTED_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if HOSTED_TSAN_KERNEL
#include <sanitizer/tsan_interface.h>
#endif

/* switch.S */
void hosted_switch_int(struct arch_context *from, struct arch_context *to);
void hosted_switch_fp(struct arch_context *from, struct arch_context *to);
void hosted_context_tramp(void);
__attribute__((noreturn)) void hosted_context_start(struct arch_context *ctx);
void hosted_context_boot(void);

/* The FP/SIMD save format, found once at boot (hosted_context_boot, main thread, before
 * any vCPU starts; read-only after): switch.S reads hosted_fp_xsave and
 * hosted_xsave_mask. The mask is XCR0's x87, SSE, AVX and AVX-512 components (bits 0-2,
 * 5-7): not PKRU (a protection-key register is the process's, not a thread's), MPX or
 * AMX tiles. */
uint8_t hosted_fp_xsave;
uint64_t hosted_xsave_mask;
static uint32_t fp_area_size = 512;	/* the fxsave area; the xsave size from CPUID 0xd */

#define FP_ALIGN 64u
#define FCW_DEFAULT 0x037fu		/* x87: every exception masked, double extended */
#define MXCSR_DEFAULT 0x1f80u		/* SSE: every exception masked, round to nearest */

void hosted_context_boot(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) ||
	    __get_cpuid_max(0, NULL) < 0xd)
		return;			/* fxsave64: x87 + SSE */
	uint32_t lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	__cpuid_count(0xd, 0, a, b, c, d);	/* ebx: the size XCR0's components need */
	hosted_xsave_mask = (((uint64_t)hi << 32) | lo) & 0xe7u;
	fp_area_size = (b + FP_ALIGN - 1) & ~(FP_ALIGN - 1);
	hosted_fp_xsave = 1;
}

uint32_t hosted_fp_area_bytes(void);
uint32_t hosted_fp_area_bytes(void)
{
	return fp_area_size;
}

/* ---- stacks ------------------------------------------------------------------------ */
#define GUARD 4096u
#define CANARY 0x6b73796e63537461ull	/* "ksyncSta", xor'ed with the base */

/* The canary word is read and written where a thread that overflowed has left ASan's
 * stack poison: not instrumented. */
__attribute__((no_sanitize_address)) static void canary_set(void *base)
{
	*(volatile uint64_t *)base = CANARY ^ (uint64_t)(uintptr_t)base;
}

__attribute__((no_sanitize_address)) bool arch_stack_ok(void *base, size_t size)
{
	(void)size;
	return *(volatile uint64_t *)base == (CANARY ^ (uint64_t)(uintptr_t)base);
}

/* Freed stacks are kept for the next thread (up to STACK_CACHE of each size in use):
 * mmap + mprotect per thread and munmap per exit cost host system calls, and munmap a
 * TLB shootdown to every core the process runs on - the Sprite fork benchmark at two
 * vCPUs ran 7x longer than at one for that alone, behind no lock of the kernel's. The
 * guard page stays PROT_NONE while cached; the canary is set anew. */
#define STACK_CACHE 64
static pthread_mutex_t stack_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { void *base; size_t size; } stack_cache[STACK_CACHE];	/* stack_cache_lock */
static unsigned stack_cached;						/* stack_cache_lock */

void *arch_stack_alloc(size_t size)
{
	if (!size || size % GUARD)
		return NULL;
	void *hit = NULL;
	pthread_mutex_lock(&stack_cache_lock);
	for (unsigned i = stack_cached; i-- > 0;)
		if (stack_cache[i].size == size) {
			hit = stack_cache[i].base;
			stack_cache[i] = stack_cache[--stack_cached];
			break;
		}
	pthread_mutex_unlock(&stack_cache_lock);
	if (hit) {
		canary_set(hit);
		return hit;
	}
	char *p = mmap(NULL, size + GUARD, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p, GUARD, PROT_NONE) != 0) {	/* the guard page: SIGSEGV on overflow */
		munmap(p, size + GUARD);
		return NULL;
	}
	canary_set(p + GUARD);
	return p + GUARD;
}

void arch_stack_free(void *base, size_t size)
{
	if (!base)
		return;
#if HOSTED_ASAN
	__asan_unpoison_memory_region(base, size);
#endif
	pthread_mutex_lock(&stack_cache_lock);
	if (stack_cached < STACK_CACHE) {
		stack_cache[stack_cached].base = base;
		stack_cache[stack_cached++].size = size;
		base = NULL;
	}
	pthread_mutex_unlock(&stack_cache_lock);
	if (base)
		munmap((char *)base - GUARD, size + GUARD);
}

/* ---- stack high-water mark (the storm test, arch/hosted/ktest_storm.c) ---------------
 * While painting is on, arch_context_init fills a new context's stack (above the canary
 * word, below its first frame) with PAINT; a context later scans its own stack for the
 * lowest word no longer PAINT: the deepest its stack has been, frames of signals and
 * frame calls included. Off by default (16 KiB of stores per thread creation).
 * paint_on: written by the test's thread between runs (no context is being created then
 * on another CPU), read by arch_context_init. cur_ctx: the context this host thread runs,
 * written by the switch before its stack switch (the context switched to resumes on this
 * thread), read only by that context. */
#define PAINT 0x7061696e74656421ull	/* "painted!" */
static volatile bool paint_on;
static _Thread_local struct arch_context *cur_ctx;

void hosted_stack_paint(bool on)
{
	paint_on = on;
}

/* Bytes of the running context's stack ever used (from its top), or 0 if its stack was
 * not painted (an adopted one, or created with painting off). The scan reads below the
 * live frames, where ASan's redzones of dead frames may still be poisoned. */
__attribute__((no_sanitize_address)) size_t hosted_stack_high_water(void)
{
	struct arch_context *c = cur_ctx;

	if (!c || !c->painted)
		return 0;
	const volatile uint64_t *w = (const volatile uint64_t *)c->stack_lo + 1;	/* canary */
	const volatile uint64_t *end = (const volatile uint64_t *)((char *)c->stack_lo + c->stack_size);

	while (w < end && *w == PAINT)
		w++;
	return (size_t)((const char *)end - (const char *)w);
}

/* ---- contexts ---------------------------------------------------------------------- */
void arch_context_adopt(struct arch_context *ctx)
{
	pthread_attr_t attr;

	memset(ctx, 0, sizeof *ctx);
	ctx->adopted = true;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		void *lo;
		size_t size;

		if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
			ctx->stack_lo = lo;
			ctx->stack_size = size;
		}
		pthread_attr_destroy(&attr);
	}
#if HOSTED_TSAN_KERNEL
	ctx->fiber = __tsan_get_current_fiber();
#endif
}

void arch_context_init(struct arch_context *ctx, void *base, size_t size,
		       void (*entry)(void *), void *arg, bool fp)
{
	uintptr_t top = (uintptr_t)base + size;

	KASSERT(base && size >= (fp ? fp_area_size : 0) + 512);
	memset(ctx, 0, sizeof *ctx);
	ctx->stack_lo = base;
	ctx->stack_size = size;
	ctx->entry = entry;
	ctx->arg = arg;
#if HOSTED_ASAN
	__asan_unpoison_memory_region(base, size);
#endif
	if (fp) {	/* the area: at the top, in its initial state (FINIT, MXCSR default) */
		top = (top - fp_area_size) & ~(uintptr_t)(FP_ALIGN - 1);
		memset((void *)top, 0, fp_area_size);	/* xsave header: XSTATE_BV = 0 */
		*(uint16_t *)top = FCW_DEFAULT;
		*(uint32_t *)(top + 24) = MXCSR_DEFAULT;
		ctx->fpu = (void *)top;
	}
	top &= ~(uintptr_t)15;
	if (paint_on) {
		for (uint64_t *w = (uint64_t *)base + 1; (uintptr_t)(w + 1) <= top - 128; w++)
			*w = PAINT;
		ctx->painted = true;
	}
	/* switch.S's frame; after its `ret` %rsp = top - 16 (16-byte aligned), above it two
	 * zero words (the end of the frame chain) */
	uint64_t *sp = (uint64_t *)top;
	*--sp = 0;
	*--sp = 0;
	*--sp = (uint64_t)(uintptr_t)hosted_context_tramp;	/* return address */
	*--sp = 0;					/* rbp */
	*--sp = 0;					/* rbx */
	*--sp = (uint64_t)(uintptr_t)ctx;		/* r12: the trampoline's argument */
	*--sp = 0;					/* r13 */
	*--sp = 0;					/* r14 */
	*--sp = 0;					/* r15 */
	*--sp = (uint64_t)FCW_DEFAULT << 32 | MXCSR_DEFAULT;
	ctx->sp = sp;
#if HOSTED_TSAN_KERNEL
	ctx->fiber = __tsan_create_fiber(0);
#endif
}

void arch_context_destroy(struct arch_context *ctx)
{
#if HOSTED_TSAN_KERNEL
	if (!ctx->adopted && ctx->fiber)
		__tsan_destroy_fiber(ctx->fiber);
#endif
	ctx->fiber = NULL;
}

/* The C half of hosted_context_tramp: the first code of a new context. */
void hosted_context_start(struct arch_context *ctx)
{
#if HOSTED_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
	ctx->entry(ctx->arg);
	panic("thread entry returned");
}

static inline void switch_begin(struct arch_context *from, struct arch_context *to)
{
#if HOSTED_ASAN
	__sanitizer_start_switch_fiber(&from->fake_stack, to->stack_lo, to->stack_size);
#endif
#if HOSTED_TSAN_KERNEL
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* an interceptor: TSan runs what it deferred */
	__tsan_switch_to_fiber(to->fiber, 0);
#endif
	/* after the interceptor above (IRQs are off: a handler it runs only records) and
	 * before the stack switch: `to` resumes on this thread, with its own frame-call
	 * state (runtime.c frame_call_signal: one frame call per stack) and the frame
	 * call granted to it, if one waits */
	hosted_stack_state_swap(&from->stack_state, &to->stack_state);
	cur_ctx = to;
}

/* In the resumed context: `from` is its own context (the one it saved into). */
static inline void switch_end(struct arch_context *from)
{
#if HOSTED_ASAN
	__sanitizer_finish_switch_fiber(from->fake_stack, NULL, NULL);
#endif
	(void)from;
}

void arch_context_switch(struct arch_context *from, struct arch_context *to)
{
	switch_begin(from, to);
	hosted_switch_int(from, to);
	switch_end(from);
}

void arch_context_switch_fp(struct arch_context *from, struct arch_context *to)
{
	switch_begin(from, to);
	hosted_switch_fp(from, to);
	switch_end(from);
}

/* ---- preemption --------------------------------------------------------------------- */
bool arch_frame_call(struct trapframe *tf, void (*fn)(void))
{
	(void)tf;	/* the runtime knows the delivery it is in */
	return hosted_frame_call(fn);
}

/* The hosted port has no user space (mk/hosted-kernel.mk): no thread ever has a user
 * context, so the scheduler never calls this. */
void arch_uctx_switch(struct arch_uctx *prev, struct arch_uctx *next)
{
	(void)prev;
	(void)next;
	panic("arch_uctx_switch: the hosted port has no user threads");
}

/* Likewise (the scheduler's per-CPU current process, kcpu.h proc_cur). */
void *arch_uctx_owner(const struct arch_uctx *u)
{
	(void)u;
	panic("arch_uctx_owner: the hosted port has no user threads");
}
