/*
 * uentry.S - the ring-3 boundary of the x86-64 port (issue 24): the `syscall` entry with
 * the Linux register convention, its `sysretq` return, the first entry of a new user
 * thread, and the user-memory copy primitives with their exception-table entries.
 *
 * Massalin & Pu 1991 (Synthesis), "Kernel calls" and "Address spaces": a kernel call
 * enters on the calling thread's own kernel stack and returns straight to it; this is
 * that path for the Linux ABI: rax = number, rdi rsi rdx r10 r8 r9 = arguments, rcx and
 * r11 are clobbered (the CPU puts the user rip and rflags there), the result in rax.
 *
 * Entry: IA32_FMASK clears IF, DF, TF and AC, so until the `sti` nothing can interrupt
 * the stack switch. GS still holds the user's base: swapgs gives the kernel's per-CPU
 * struct cpu (percpu.h), whose scratch_rsp keeps the user rsp while rsp moves to
 * kstack_sys (the running user thread's kernel stack top, written at each switch by
 * uvm.c with IRQs off). The frame built is a struct trapframe (trap.h) with vector
 * UENTRY_VEC_SYSCALL, so that a syscall frame, an interrupt frame from ring 3 and a new
 * thread's first frame are the same thing and leave through the same code.
 *
 * Exit: sysretq when the frame still returns to the 64-bit user code segment at a
 * canonical lower-half rip (sysret with a non-canonical rcx faults in ring 0 on Intel:
 * those frames leave through iretq); otherwise, and for every frame a handler changed
 * (execve, a signal), isr_return (isr.S) pops the frame and iretq's.
 */
#define UENTRY_VEC_SYSCALL 0x100
#define USER_CS 0x23
#define USER_SS 0x1b
#define TF_SIZE (22 * 8)
#define TF_VEC (15 * 8)
#define TF_RIP (17 * 8)
#define TF_CS (18 * 8)
#define TF_RFLAGS (19 * 8)
#define TF_RSP (20 * 8)

	.section .text
	.code64

	.pushsection .text.hot, "ax"	/* kernel.h KERNEL_HOT */
	.globl syscall_entry
	.type syscall_entry, @function
	/* 256-aligned, shorter than 256 bytes: never across a page boundary. Under TCG a
	 * jump to another guest page is not chained (a lookup each time), and the entry's
	 * blocks split at the boundary: a layout change elsewhere moved it across one and
	 * made every system call ~40 % slower there (getppid, tcg). */
	.p2align 8
syscall_entry:
	swapgs
	movq %rsp, %gs:24		/* scratch_rsp */
	movq %gs:32, %rsp		/* kstack_sys */
	pushq $USER_SS
	pushq %gs:24			/* user rsp */
	pushq %r11			/* user rflags */
	pushq $USER_CS
	pushq %rcx			/* user rip */
	pushq $0			/* error */
	pushq $UENTRY_VEC_SYSCALL	/* vector */
	pushq %rax
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
	movq %rsp, %rdi			/* struct trapframe * */
	pushq TF_RIP(%rsp)		/* a call frame for backtraces, as isr_common's */
	pushq %rbp
	movq %rsp, %rbp
	sti
	call syscall_entry_c		/* uvm.c: the portable dispatch, then pending work */
	cli
	addq $16, %rsp
	/* sysret-able? still a system call's frame (rt_sigreturn's needs rcx and r11
	 * back: UENTRY_VEC_SIGRETURN), CS unchanged and rip canonical in the lower half */
	cmpq $UENTRY_VEC_SYSCALL, TF_VEC(%rsp)
	jne 9f
	cmpq $USER_CS, TF_CS(%rsp)
	jne 9f
	movq TF_RIP(%rsp), %rax
	shrq $47, %rax
	jnz 9f
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11			/* overwritten below: the ABI clobbers it */
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rcx			/* overwritten below */
	popq %rbx
	popq %rax
	/* rsp -> vector, error, rip, cs, rflags, rsp, ss */
	movq 16(%rsp), %rcx		/* rip */
	movq 32(%rsp), %r11		/* rflags */
	movq 40(%rsp), %rsp		/* user rsp: the kernel stack is done with */
	swapgs
	sysretq
9:	jmp isr_return
	.size syscall_entry, . - syscall_entry
	.popsection

/* void uentry_iret(uint64_t kstack_top [rdi], const struct trapframe *tf [rsi]):
 * the first entry of a user thread (and a fresh image): copy *tf to just below
 * kstack_top (the stack everything above is abandoned on), then leave through
 * isr_return. IRQs off on entry. Never returns. */
	.globl uentry_iret
	.type uentry_iret, @function
uentry_iret:
	movq %rdi, %rsp
	subq $TF_SIZE, %rsp
	movq %rsp, %rdi
	movl $(TF_SIZE / 8), %ecx
	cld
	rep movsq
	jmp isr_return
	.size uentry_iret, . - uentry_iret

/* size_t uaccess_copy(void *dst [rdi], const void *src [rsi], size_t n [rdx]): the bytes
 * NOT copied (0: all). Whole quadwords first (rep movsq), then the 0..7 bytes left (rep
 * movsb): the two instructions that touch user memory; their exception-table entries
 * resume with rcx = what that instruction had left (a fault in the first leaves all the
 * tail too, rdx). By quadwords because a rep string instruction repeats once per element
 * and an emulator (QEMU's TCG) runs each repetition as a translation block of its own:
 * a 32-byte struct sigaction was 33 blocks by bytes, 4 by quadwords. */
	.pushsection .text.hot, "ax"
	.globl uaccess_copy
	.type uaccess_copy, @function
uaccess_copy:
	movq %rdx, %rcx
	shrq $3, %rcx
	andl $7, %edx
	cld
1:	rep movsq
	movq %rdx, %rcx
3:	rep movsb
	xorl %eax, %eax
	ret
2:	leaq (%rdx,%rcx,8), %rax	/* quadwords left, and the tail */
	ret
4:	movq %rcx, %rax
	ret
	.size uaccess_copy, . - uaccess_copy
	.popsection
	.section __ex_table, "a"
	.quad 1b, 2b
	.quad 3b, 4b
	.previous

/* long uaccess_strncpy(char *dst [rdi], const char *src [rsi], size_t n [rdx]): copies
 * up to n bytes including the NUL; the string's length if a NUL came within n, n if
 * none did (dst then unterminated), -1 on a fault (exception-table entry at 3b). */
	.globl uaccess_strncpy
	.type uaccess_strncpy, @function
uaccess_strncpy:
	xorl %eax, %eax
1:	cmpq %rdx, %rax
	jae 2f
3:	movb (%rsi,%rax), %cl
	movb %cl, (%rdi,%rax)
	testb %cl, %cl
	jz 2f
	incq %rax
	jmp 1b
2:	ret
4:	movq $-1, %rax
	ret
	.size uaccess_strncpy, . - uaccess_strncpy
	.section __ex_table, "a"
	.quad 3b, 4b
	.previous

	.section .note.GNU-stack, "", @progbits
