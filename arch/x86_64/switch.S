/*
 * switch.S - thread context switch (arch_if.h "threads"), Massalin & Pu's two kinds:
 * the integer-only switch and the floating-point switch.
 *
 * A switched-out context's stack holds, from its saved rsp upwards:
 *   r15, r14, r13, r12, rbx, rbp, return address
 * (the SysV callee-saved registers; the caller-saved ones are dead across the call by
 * the ABI). struct arch_context (arch_impl.h): rsp at offset 0, fxarea at offset 8.
 * IRQs are off on entry and stay off (the kernel's rule), so no interrupt frame can land
 * between the saves and the stack change. RFLAGS is not saved: IF is 0 on both sides and
 * DF is 0 by the ABI. GS (the per-CPU base) belongs to the CPU, not to the context.
 *
 * Ordering: the store of `from`'s rsp is the last access to from's stack and area; the
 * kernel publishes `from` as runnable elsewhere only after this returns in the next
 * context (x86 TSO keeps the stores in order for the CPU that later acquires it).
 */
#define CTX_RSP 0
#define CTX_FXAREA 8

	.section .text
	.code64

/* void arch_context_switch(struct arch_context *from [rdi], struct arch_context *to [rsi])
 * Saves: rbx, rbp, r12-r15 and rsp of from. Loads the same of to. Clobbers rax (caller-saved). */
	.globl arch_context_switch
	.type arch_context_switch, @function
	.align 16
arch_context_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, CTX_RSP(%rdi)	/* from is complete from here on */
	movq CTX_RSP(%rsi), %rsp	/* on to's stack */
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret				/* into to's caller, or arch_context_start the first time */
	.size arch_context_switch, . - arch_context_switch

/* void arch_context_switch_fp(from [rdi], to [rsi]): as above, plus the x87/MMX/SSE state
 * (FXSAVE64: x87 registers and control words, xmm0-15, MXCSR) of from saved into its
 * fxarea before from's rsp is published, and to's loaded from its fxarea after the
 * stack change. A side whose fxarea is NULL (integer-only) is skipped: the FP registers
 * then keep whatever the last fp context left in them. */
	.globl arch_context_switch_fp
	.type arch_context_switch_fp, @function
	.align 16
arch_context_switch_fp:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq CTX_FXAREA(%rdi), %rax
	testq %rax, %rax
	jz 1f
	fxsave64 (%rax)			/* before the rsp store: from's state is whole when published */
1:	movq %rsp, CTX_RSP(%rdi)
	movq CTX_RSP(%rsi), %rsp
	movq CTX_FXAREA(%rsi), %rax
	testq %rax, %rax
	jz 2f
	fxrstor64 (%rax)
2:	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
	.size arch_context_switch_fp, . - arch_context_switch_fp

/* First switch-in of a context built by arch_context_init: the switch's `ret` lands here
 * with rbx = entry, r12 = arg, rbp = 0 (ends the backtrace's frame chain) and rsp 16-byte
 * aligned, so the call below enters entry(arg) with rsp+8 aligned as the ABI wants.
 * IRQs are still off (entry enables them). entry must not return: if it does, panic. */
	.globl arch_context_start
	.type arch_context_start, @function
	.align 16
arch_context_start:
	movq %r12, %rdi
	call *%rbx
	leaq entry_returned_msg(%rip), %rdi
	xorl %eax, %eax			/* variadic call: no vector registers used */
	call panic
	ud2
	.size arch_context_start, . - arch_context_start

/* fp test helpers (tests/test_context.c): the kernel's C is -mgeneral-regs-only, so the
 * one vector register the test uses is reached from here. Clobber xmm0 only. */
	.globl arch_x86_xmm0_set
	.type arch_x86_xmm0_set, @function
arch_x86_xmm0_set:			/* void arch_x86_xmm0_set(uint64_t v [rdi]) */
	movq %rdi, %xmm0
	ret
	.size arch_x86_xmm0_set, . - arch_x86_xmm0_set

	.globl arch_x86_xmm0_get
	.type arch_x86_xmm0_get, @function
arch_x86_xmm0_get:			/* uint64_t arch_x86_xmm0_get(void) */
	movq %xmm0, %rax
	ret
	.size arch_x86_xmm0_get, . - arch_x86_xmm0_get

	.section .rodata
entry_returned_msg:
	.asciz "thread entry returned"

	.section .note.GNU-stack, "", @progbits
