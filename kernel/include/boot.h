/*
 * boot.h - what the port hands the portable kernel after arch start-up.
 */
#ifndef KSYNC_BOOT_H
#define KSYNC_BOOT_H

#include <stdint.h>

#define BOOT_MAX_REGIONS 32

struct boot_region { uint64_t base, len; };	/* usable RAM */

struct boot_info {
	char cmdline[512];
	unsigned nregions;
	struct boot_region regions[BOOT_MAX_REGIONS];
	uint64_t mem_kib;		/* usable RAM in KiB */
	uint64_t kernel_start, kernel_end;	/* physical, page-aligned */
	char loader[64];		/* multiboot loader name or "" */
	/* the first boot module (QEMU -initrd, GRUB `module`): the initramfs, physical,
	 * [initrd_start, initrd_end); 0, 0 when none. pmm_init keeps its pages out of the
	 * pool for the kernel's lifetime. */
	uint64_t initrd_start, initrd_end;
};

/* The port calls kernel_entry(bi) (arch_if.h) once the BSP is fully up (APs started,
 * IRQs enabled); bi stays valid for the kernel's lifetime. */

#endif
