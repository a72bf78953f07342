/*
 * ap_tramp.S - application-processor start-up code, copied to 0x8000 (SIPI vector 0x08).
 *
 * An AP wakes from the start-up IPI in 16-bit real mode at 0x8000. It loads the small GDT
 * below, enters protected mode, turns on PAE, loads the BSP's page tables (ap_cr3),
 * enables long mode and paging, and jumps to ap_entry64(struct cpu *) on the stack the
 * BSP left in ap_stack. The BSP fills the three slots in the copy before each SIPI and
 * starts one AP at a time, so the slots need no further protection.
 */
#define TRAMP_BASE 0x8000
#define REL(x) ((x) - ap_tramp_start + TRAMP_BASE)

	.section .rodata
	.globl ap_tramp_start, ap_tramp_end, ap_slot_cr3, ap_slot_stack, ap_slot_cpu
	.align 16
	.code16
ap_tramp_start:
	cli
	cld
	xor %ax, %ax
	mov %ax, %ds
	lgdtl REL(ap_gdt_ptr)
	mov %cr0, %eax
	or $1, %eax
	mov %eax, %cr0
	ljmpl $0x08, $REL(ap_pm32)

	.code32
ap_pm32:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov %cr4, %eax
	or $0xa0, %eax			/* PAE | PGE */
	mov %eax, %cr4
	mov REL(ap_slot_cr3), %eax
	mov %eax, %cr3
	mov $0xC0000080, %ecx
	rdmsr
	or $0x100, %eax			/* EFER.LME */
	wrmsr
	mov %cr0, %eax
	and $0x9fffffff, %eax
	or $0x80010001, %eax		/* PG | WP | PE, caches on */
	mov %eax, %cr0
	ljmp $0x18, $REL(ap_lm64)

	.code64
ap_lm64:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov REL(ap_slot_stack), %rsp
	mov REL(ap_slot_cpu), %rdi
	xor %rbp, %rbp
	movabs $ap_entry64, %rax
	call *%rax
1:	cli
	hlt
	jmp 1b

	.align 16
ap_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
	.quad 0x00af9a000000ffff	/* 0x18: 64-bit code */
ap_gdt_end:
	.align 4
	.word 0
ap_gdt_ptr:
	.word ap_gdt_end - ap_gdt - 1
	.long REL(ap_gdt)
	.align 8
ap_slot_cr3:	.quad 0
ap_slot_stack:	.quad 0
ap_slot_cpu:	.quad 0
ap_tramp_end:

	.section .note.GNU-stack, "", @progbits
