/*
 * arch/hosted/switch.S - the hosted port's context switch (x86-64 SysV, Linux process):
 * arch_if.h "threads", struct arch_context in arch/hosted/public/arch_impl.h, the C side
 * (sanitizer fibers, stacks, the trampoline's C half) in arch/hosted/context.c.
 *
 * hosted_switch_int(from = %rdi, to = %rsi):
 *   SAVES on from's stack what the ABI makes callee-saved and nothing else: rbx, rbp,
 *   r12-r15, MXCSR (control/status) and the x87 control word; then from->sp = %rsp.
 *   LOADS %rsp = to->sp and pops the same frame; `ret` resumes to where it called a
 *   switch (or, at a new context's first switch-in, hosted_context_tramp).
 *   Every other register is caller-saved at a call, so the switch - a call - need not
 *   keep it. IRQs (the soft flag, or the hard build's signal mask) are off on entry and
 *   stay off; the flag and the host signal mask belong to the vCPU, not to the context.
 *
 * hosted_switch_fp(from, to): the same, plus the full FP/SIMD state: if from->fpu is set,
 *   xsave64 (every enabled x87/SSE/AVX/AVX-512 component, mask hosted_xsave_mask) or
 *   fxsave64 (no OS xsave) into it before the stack switch; if to->fpu is set, xrstor64 /
 *   fxrstor64 from it after. A side without an area is skipped. MXCSR and the x87
 *   control word are then loaded from the switch frame as in the integer switch (the same
 *   values for a context last saved by this routine; the frame's are the truth for one
 *   last saved by hosted_switch_int, whose area is stale but only for caller-saved state).
 *
 * Frame (8 words, from->sp points at the first):
 *   +0 MXCSR (4 bytes), x87 control word (2), pad   +8 r15  +16 r14  +24 r13  +32 r12
 *   +40 rbx  +48 rbp  +56 return address
 * context.c builds the same frame for a new context, with r12 = the context and the
 * return address = hosted_context_tramp.
 *
 * Thread-locals: none here. A context saved on one vCPU may be resumed on another (another
 * host pthread, other %fs): nothing in this file or its C callers reads a thread-local
 * across the stack switch.
 */
	.text

	.globl	hosted_switch_int
	.type	hosted_switch_int, @function
	.p2align 4
hosted_switch_int:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r15, 0
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	%rsp, (%rdi)		/* from->sp */
	movq	(%rsi), %rsp		/* to->sp: the same frame layout from here on */
	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	hosted_switch_int, . - hosted_switch_int

	.globl	hosted_switch_fp
	.type	hosted_switch_fp, @function
	.p2align 4
hosted_switch_fp:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r15, 0
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	movq	8(%rdi), %r8		/* from->fpu */
	testq	%r8, %r8
	jz	2f
	cmpb	$0, hosted_fp_xsave(%rip)
	je	1f
	movl	hosted_xsave_mask(%rip), %eax
	movl	hosted_xsave_mask+4(%rip), %edx
	xsave64	(%r8)
	jmp	2f
1:	fxsave64 (%r8)
2:	movq	%rsp, (%rdi)		/* from->sp */
	movq	(%rsi), %rsp		/* to->sp */
	movq	8(%rsi), %r8		/* to->fpu */
	testq	%r8, %r8
	jz	4f
	cmpb	$0, hosted_fp_xsave(%rip)
	je	3f
	movl	hosted_xsave_mask(%rip), %eax
	movl	hosted_xsave_mask+4(%rip), %edx
	xrstor64 (%r8)
	jmp	4f
3:	fxrstor64 (%r8)
4:	ldmxcsr	(%rsp)
	fldcw	4(%rsp)
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_endproc
	.size	hosted_switch_fp, . - hosted_switch_fp

/* A new context's first switch-in returns here with %r12 = its struct arch_context and
 * %rsp 16-byte aligned (context.c lays the frame out so): call hosted_context_start(ctx)
 * with the ABI's alignment. It never returns (it panics if entry does). The return
 * address column is undefined: unwinders (backtrace(), the panic report) stop here. */
	.globl	hosted_context_tramp
	.type	hosted_context_tramp, @function
	.p2align 4
hosted_context_tramp:
	.cfi_startproc
	.cfi_undefined rip
	xorl	%ebp, %ebp
	movq	%r12, %rdi
	call	hosted_context_start
	ud2
	.cfi_endproc
	.size	hosted_context_tramp, . - hosted_context_tramp

	.section .note.GNU-stack, "", @progbits
