/*
 * isr.S - the 256 interrupt/exception entry stubs and the common trap path.
 *
 * Each stub pushes a zero error code where the CPU pushes none, then its vector, and
 * jumps to isr_common, which saves every general register into a struct trapframe
 * (trap.h) and calls trap_entry(tf). A trap from ring 3 (the frame's CS has RPL 3) swaps
 * GS to the kernel's per-CPU base first thing, and the return swaps back when the frame
 * it returns through is a ring-3 one (uvm.c may turn a user frame into a kernel one to
 * kill a faulting process: then the kernel's GS stays, as it must). The CPU entered on
 * the TSS's rsp0 (the user thread's kernel stack) or an IST stack.
 *
 * Known gap (as Linux's "paranoid" entries handle): an NMI or #MC taken between
 * `syscall` and its swapgs, or between the exit's swapgs and sysretq/iretq, sees a
 * kernel CS with the user GS. No NMI source is used with user processes yet.
 */
	.section .text
	.code64

.macro STUB n
	.align 16
isr_\n:
	.if (\n == 8) || ((\n >= 10) && (\n <= 14)) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp isr_common
.endm

	.globl isr_stubs_start
isr_stubs_start:
	.altmacro
.macro STUBS from=0, to=255
	STUB %(\from)
	.if \to-\from
	STUBS %(\from+1),\to
	.endif
.endm
	STUBS 0, 63
	STUBS 64, 127
	STUBS 128, 191
	STUBS 192, 255

isr_common:
	testb $3, 24(%rsp)		/* CS (after vector, error, rip): from ring 3? */
	jz 1f
	swapgs
1:	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	cld
	mov %rsp, %rdi
	/* frame link for the backtrace: the interrupted RIP and RBP look like a call frame */
	pushq 17*8(%rsp)		/* tf->rip (15 regs, vector, error code, then rip) */
	pushq %rbp
	mov %rsp, %rbp
	mov %rsp, %rbx			/* callee-saved: remember the unaligned rsp */
	and $-16, %rsp
	call trap_entry
	mov %rbx, %rsp
	add $16, %rsp
	.globl isr_return
isr_return:				/* rsp = a struct trapframe (uentry.S enters here too) */
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx
	popq %rbx
	popq %rax
	add $16, %rsp			/* vector, error code */
	testb $3, 8(%rsp)		/* returning to ring 3? */
	jz 2f
	swapgs
2:	iretq

	.section .rodata
	.align 8
	.globl isr_table
isr_table:
.macro ENTRY n
	.quad isr_\n
.endm
.macro ENTRIES from=0, to=255
	ENTRY %(\from)
	.if \to-\from
	ENTRIES %(\from+1),\to
	.endif
.endm
	ENTRIES 0, 63
	ENTRIES 64, 127
	ENTRIES 128, 191
	ENTRIES 192, 255

	.section .note.GNU-stack, "", @progbits
