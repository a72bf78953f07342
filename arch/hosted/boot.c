/*
 * arch/hosted/boot.c - main() of the kernel built as a Linux process (issue 9 item 3):
 *
 *   ksync [-smp N] [-m MiB] [-disk PATH] [-watchdog S] [-append "k=v ..."]
 *
 * the options named after QEMU's. -smp: vCPUs 1..MAX_CPUS (default 2); -m: the RAM
 * arena in MiB (default 128, at most 2048); -disk: the image the platform devices serve
 * (stored for them); -append: the kernel command line; -watchdog: seconds without
 * progress before the runtime's watchdog ends a hang (default 20, 0 = off). A bad option
 * prints one line on stderr and exits 64 (EX_USAGE).
 *
 * Memory: the kernel reaches a physical address through P2V (arch_if.h "physical
 * memory"; here the identity) and the page allocator keeps frames in [1 MiB, 3 GiB). The
 * arena is therefore mapped at the fixed address 1 GiB (MAP_FIXED_NOREPLACE: never over
 * an existing mapping; ASan's and TSan's shadow layouts leave [1 GiB, 3 GiB) to the
 * application) and handed over as the one usable region; virtual == "physical" there.
 */
#define _GNU_SOURCE
#include "kernel.h"
#include "boot.h"
#include "kport.h"
#include "kdev.h"
#include "hosted.h"
#include <ksync/errors.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ARENA_BASE (1ull << 30)
#define ARENA_MAX_MIB 2048u
#define EX_USAGE 64

extern struct boot_info kport_boot;

static __attribute__((noreturn)) void usage(const char *why, const char *val)
{
	fprintf(stderr, "ksync (hosted): %s%s%s; usage: ksync [-smp 1..%u] [-m MiB] [-disk PATH] "
		"[-watchdog S] [-append \"k=v ...\"]\n", why, val ? ": " : "", val ? val : "",
		(unsigned)MAX_CPUS);
	exit(EX_USAGE);
}

static unsigned number(const char *opt, const char *s, unsigned lo, unsigned hi)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi) {
		char msg[96];
		snprintf(msg, sizeof msg, "%s wants a number in %u..%u", opt, lo, hi);
		usage(msg, s);
	}
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	unsigned smp = 2, mib = 128, watchdog = 20;
	const char *append = "";

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (i + 1 >= argc)
			usage("option without a value", o);
		const char *v = argv[++i];
		if (!strcmp(o, "-smp"))
			smp = number("-smp", v, 1, MAX_CPUS);
		else if (!strcmp(o, "-m"))
			mib = number("-m", v, 4, ARENA_MAX_MIB);
		else if (!strcmp(o, "-disk"))
			kport_disk_path = v;
		else if (!strcmp(o, "-watchdog"))
			watchdog = number("-watchdog", v, 0, 3600);
		else if (!strcmp(o, "-append"))
			append = v;
		else
			usage("unknown option", o);
	}
	if (strlen(append) >= sizeof kport_boot.cmdline)
		usage("the -append string is too long", NULL);

	size_t bytes = (size_t)mib << 20;
	void *arena = mmap((void *)(uintptr_t)ARENA_BASE, bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (arena != (void *)(uintptr_t)ARENA_BASE) {
		fprintf(stderr, "ksync (hosted): cannot map the %u MiB arena at 1 GiB: %s\n", mib,
			arena == MAP_FAILED ? strerror(errno) : "placed elsewhere");
		return 1;
	}
	struct boot_info *bi = &kport_boot;
	strcpy(bi->cmdline, append);
	bi->nregions = 1;
	bi->regions[0] = (struct boot_region){ ARENA_BASE, bytes };
	bi->mem_kib = bytes >> 10;
	bi->kernel_start = bi->kernel_end = 0;	/* the kernel's image is not in the arena */
	strcpy(bi->loader, "hosted");

	kport_init();
	/* the devices' thread before any vCPU can program a device; no -disk: no ATA disk
	 * (ata_probe says KSYNC_ENOENT). The thread ends with the process (arch_exit may
	 * run in a handler, where joining it is not allowed). */
	int drc = hosted_dev_init(*kport_disk_path ? kport_disk_path : NULL);
	if (drc != KSYNC_OK) {
		fprintf(stderr, "ksync (hosted): -disk %s: %s\n", kport_disk_path,
			drc == KSYNC_ENOENT ? "cannot open it, or it holds no whole 512-byte sector"
					    : "cannot start the device thread");
		return 64;
	}
	hosted_watchdog(watchdog);
	hosted_start(smp, kport_entry);
	/* kernel_entry never returns; reaching here means every vCPU left its entry */
	fprintf(stderr, "ksync (hosted): every vCPU returned\n");
	return 1;
}
