/*
 * boot.S - multiboot v1 entry: 32-bit protected mode -> long mode -> kmain().
 *
 * The loader (QEMU -kernel or GRUB) enters _start in 32-bit protected mode with paging
 * off, EAX = 0x2BADB002 and EBX = the multiboot info. This file's .text.boot runs at
 * its physical address (kernel.ld); the rest of the kernel is linked at KERNEL_VMA +
 * its physical address, so this code names kernel symbols by PA(sym). We zero .bss and
 * build one set of 2 MiB-page tables for the first 4 GiB (RAM write-back through PAT
 * entry 0; 3..4 GiB, where the IOAPIC, LAPIC and PCI holes live, uncached with
 * PCD|PWT), linked three times (docs/design.md "User space", kernel/include/arch_if.h
 * "physical memory"):
 *   PML4[0]   the identity map: this code and the AP trampoline (smp.c) run there while
 *             paging comes on; smp.c removes it once every AP is up;
 *   PML4[256] the direct map at DIRECT_MAP_BASE (0xffff800000000000): how the kernel
 *             reaches every physical frame, MMIO and firmware table (P2V/V2P);
 *   PML4[511] PDPT[510] -> the first 1 GiB at KERNEL_VMA (0xffffffff80000000): the image.
 * Then PAE + long mode + paging, a 64-bit GDT, a jump to the upper half and
 * kmain(magic, info) on the boot stack.
 */
#define KERNEL_VMA 0xffffffff80000000
#define PA(x) ((x) - KERNEL_VMA)
#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00000003	/* page-align modules, give memory info */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.section .text.boot, "ax"
	.code32
	.globl _start
_start:
	cli
	cld
	mov %eax, %esi			/* multiboot magic */
	mov %ebx, %ebp			/* multiboot info */

	/* zero .bss (page tables and the boot stack live there) */
	mov $PA(__bss_start), %edi
	mov $PA(__bss_end), %ecx
	sub %edi, %ecx
	xor %eax, %eax
	rep stosb

	mov $PA(boot_stack_top), %esp

	/* long mode available? CPUID 0x80000001 EDX bit 29 */
	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb no_long_mode
	mov $0x80000001, %eax
	cpuid
	bt $29, %edx
	jnc no_long_mode

	/* PML4[0] = PML4[256] -> PDPT; PDPT[0..3] -> PD0..PD3 */
	mov $PA(boot_pdpt), %eax
	or $0x3, %eax
	mov %eax, PA(boot_pml4)
	mov %eax, PA(boot_pml4) + 256 * 8
	/* PML4[511] -> PDPT_HI; PDPT_HI[510] -> PD0: KERNEL_VMA + x -> x for x < 1 GiB */
	mov $PA(boot_pdpt_hi), %eax
	or $0x3, %eax
	mov %eax, PA(boot_pml4) + 511 * 8
	mov $PA(boot_pd), %eax
	or $0x3, %eax
	mov %eax, PA(boot_pdpt_hi) + 510 * 8
	xor %ecx, %ecx
1:	mov %eax, PA(boot_pdpt)(,%ecx,8)
	add $4096, %eax
	inc %ecx
	cmp $4, %ecx
	jb 1b

	/* PD entries: 2048 x 2 MiB, P|RW|PS; PCD|PWT from 3 GiB up */
	xor %ecx, %ecx
2:	mov %ecx, %eax
	shl $21, %eax
	or $0x83, %eax
	cmp $1536, %ecx
	jb 3f
	or $0x18, %eax
3:	mov %eax, PA(boot_pd)(,%ecx,8)
	movl $0, PA(boot_pd)+4(,%ecx,8)
	inc %ecx
	cmp $2048, %ecx
	jb 2b

	/* CR4.PAE | CR4.PGE */
	mov %cr4, %eax
	or $0xa0, %eax
	mov %eax, %cr4
	mov $PA(boot_pml4), %eax
	mov %eax, %cr3
	/* EFER.LME */
	mov $0xC0000080, %ecx
	rdmsr
	or $0x100, %eax
	wrmsr
	/* CR0.PG | CR0.WP | CR0.PE; CR0.CD and NW clear: caches on */
	mov %cr0, %eax
	and $0x9fffffff, %eax
	or $0x80010001, %eax
	mov %eax, %cr0

	lgdt PA(gdt64_ptr)
	ljmp $0x08, $long_entry

no_long_mode:
	/* say why on COM1 (polled, no init: QEMU's UART works at reset values) and halt */
	mov $PA(msg_no_lm), %ebx
4:	movb (%ebx), %al
	test %al, %al
	jz 5f
	mov $0x3f8, %dx
	outb %al, %dx
	inc %ebx
	jmp 4b
5:	hlt
	jmp 5b

	.code64
long_entry:
	/* still at the physical address (identity map): up to the image's link address */
	movabs $high_entry, %rax
	jmp *%rax

	.text
high_entry:
	lgdt gdt64_ptr_hi(%rip)	/* the GDT through its upper-half address */
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %ax, %ax
	mov %ax, %fs
	mov %ax, %gs
	lea boot_stack_top(%rip), %rsp
	mov %esi, %edi			/* arg0: magic */
	mov %ebp, %esi			/* arg1: info (physical: start.c reads it by P2V) */
	xor %ebp, %ebp			/* ends the frame-pointer chain for backtraces */
	call kmain
6:	cli
	hlt
	jmp 6b

	.section .rodata
msg_no_lm:
	.asciz "ksync: this CPU has no long mode (x86-64); cannot boot\r\n"

	.align 16
gdt64:
	.quad 0
	.quad 0x00af9a000000ffff	/* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
gdt64_end:
	.align 4
	.word 0
gdt64_ptr:				/* for lgdt in 32-bit mode: the physical base */
	.word gdt64_end - gdt64 - 1
	.quad PA(gdt64)
	.align 4
	.word 0
gdt64_ptr_hi:
	.word gdt64_end - gdt64 - 1
	.quad gdt64

	.section .bss
	.align 4096
	.globl boot_pml4
boot_pml4:	.skip 4096
boot_pdpt:	.skip 4096
boot_pdpt_hi:	.skip 4096
boot_pd:	.skip 4096 * 4
	.align 16
boot_stack:	.skip 32768
	.globl boot_stack_top
boot_stack_top:

	.section .note.GNU-stack, "", @progbits
