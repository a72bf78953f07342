/*
 * start.c - the BSP's C entry from boot.S: read the multiboot information, bring up the
 * descriptor tables, the console, TSC, ACPI, interrupt controllers and the APs, then
 * hand over to the portable kernel_entry() (arch_if.h), which owns the kernel's boot
 * order from there (memory first).
 */
#include "kernel.h"
#include "boot.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"

void serial_init(void);
void percpu_init(struct cpu *c, unsigned index);

extern char __kernel_start[], __kernel_end[];
static struct boot_info bootinfo;

struct mb_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length, mmap_addr;
	uint32_t drives_length, drives_addr, config_table, boot_loader_name;
} __attribute__((packed));

static void read_multiboot(uint32_t magic, const struct mb_info *mb)
{
	if (magic != 0x2BADB002)
		panic("not started by a multiboot loader (EAX=0x%x)", magic);
	if ((mb->flags & (1u << 2)) && mb->cmdline) {
		const char *s = (const char *)P2V(mb->cmdline);
		size_t n = strlen(s);
		if (n >= sizeof bootinfo.cmdline)
			n = sizeof bootinfo.cmdline - 1;
		memcpy(bootinfo.cmdline, s, n);
		bootinfo.cmdline[n] = 0;
	}
	if ((mb->flags & (1u << 9)) && mb->boot_loader_name) {
		const char *s = (const char *)P2V(mb->boot_loader_name);
		size_t n = strlen(s);
		if (n >= sizeof bootinfo.loader)
			n = sizeof bootinfo.loader - 1;
		memcpy(bootinfo.loader, s, n);
	}
	/* modules (flag bit 3): the first is the initramfs (unpacked by kernel/fs/cpio.c: urun.c) */
	if ((mb->flags & (1u << 3)) && mb->mods_count) {
		const uint32_t *m = (const uint32_t *)P2V(mb->mods_addr);
		bootinfo.initrd_start = m[0];
		bootinfo.initrd_end = m[1];
	}
	if (!(mb->flags & (1u << 6)))
		panic("multiboot loader gave no memory map");
	uint64_t p = mb->mmap_addr, end = p + mb->mmap_length;
	while (p < end && bootinfo.nregions < BOOT_MAX_REGIONS) {
		const uint8_t *e = (const uint8_t *)P2V(p);
		uint32_t size = *(const uint32_t *)e;
		uint64_t base = *(const uint64_t *)(e + 4), len = *(const uint64_t *)(e + 12);
		uint32_t type = *(const uint32_t *)(e + 20);
		if (type == 1 && len) {
			bootinfo.regions[bootinfo.nregions].base = base;
			bootinfo.regions[bootinfo.nregions].len = len;
			bootinfo.nregions++;
			bootinfo.mem_kib += len >> 10;
		}
		p += size + 4;
	}
	/* kernel.ld defines both as physical addresses */
	bootinfo.kernel_start = ALIGN_DOWN((uint64_t)__kernel_start, PAGE_SIZE);
	bootinfo.kernel_end = ALIGN_UP((uint64_t)__kernel_end, PAGE_SIZE);
}

void kmain(uint32_t magic, uint32_t mbinfo)
{
	percpu_init(&cpus[0], 0);	/* GS first: everything below may ask for the CPU id */
	serial_init();
	gdt_init_cpu(&cpus[0]);
	fpu_init_cpu();			/* x87/SSE/FXSAVE usable: fp thread contexts (context.c) */
	idt_init();
	idt_load();
	read_multiboot(magic, (const struct mb_info *)P2V(mbinfo));
	kprintf("\nksync: booting (loader: %s, cmdline: \"%s\")\n",
		bootinfo.loader[0] ? bootinfo.loader : "multiboot", bootinfo.cmdline);

	/* RAM must be write-back: PAT entry 0 must be WB (6) and caching on in CR0 */
	if ((rdmsr(MSR_PAT) & 0x7) != 6 || (read_cr0() & (3ul << 29)))
		panic("memory is not write-back (PAT=0x%lx CR0=0x%lx)", rdmsr(MSR_PAT), read_cr0());

	tsc_init();
	acpi_init();
	pic_init();
	lapic_init_cpu();
	ioapic_init();
	lapic_timer_calibrate();
	smp_init();
	arch_irq_enable();
	smp_drop_boot_identity();	/* the low half is the processes' from here (smp.c) */
	kernel_entry(&bootinfo);
}

unsigned arch_cpus_found(void);

void arch_get_facts(struct arch_facts *f)
{
	uint32_t a, b, c, d;
	memset(f, 0, sizeof *f);
	f->cpus_found = arch_cpus_found();
	f->cpus_online = arch_ncpus();
	f->tsc_hz = arch_tsc_hz();
	f->tsc_source = tsc_source;
	cpuid(1, 0, &a, &b, &c, &d);
	if (c & (1u << 31)) {
		cpuid(0x40000000, 0, &a, &b, &c, &d);
		memcpy(f->hypervisor + 0, &b, 4);
		memcpy(f->hypervisor + 4, &c, 4);
		memcpy(f->hypervisor + 8, &d, 4);
	}
	cpuid(0, 0, &a, &b, &c, &d);
	memcpy(f->cpu_vendor + 0, &b, 4);
	memcpy(f->cpu_vendor + 4, &d, 4);
	memcpy(f->cpu_vendor + 8, &c, 4);
	cpuid(0x80000000, 0, &a, &b, &c, &d);
	if (a >= 0x80000004) {
		for (uint32_t l = 0; l < 3; l++) {
			uint32_t r[4];
			cpuid(0x80000002 + l, 0, &r[0], &r[1], &r[2], &r[3]);
			memcpy(f->cpu_model + 16 * l, r, 16);
		}
	}
	/* trim the brand string's padding */
	char *m = f->cpu_model;
	while (*m == ' ')
		memmove(m, m + 1, strlen(m));
	for (size_t n = strlen(m); n && m[n - 1] == ' '; n--)
		m[n - 1] = 0;
	f->apic_mode = lapic_is_x2apic() ? "x2apic" : "xapic";
	f->platform_source = platform.source;
	f->lapic_timer_hz = arch_timer_hz();
	f->nioapic = platform.nioapic;
	f->rdtscp = arch_has_rdtscp;
	f->port = ARCH_NAME;
	f->sched = "";
	/* The guest cannot see the host: the host tool passes host_cpus=M (the host CPUs
	 * QEMU may run on) when -smp asks for more vCPUs than that - each vCPU is a host
	 * thread, so vCPUs then wait for host time slices (kernel/include/arch_if.h). Without
	 * the option (bare metal, or a boot that did not pass it) nothing is known: false. */
	char hc[16];
	unsigned host = cmdline_uint(cmdline_get("host_cpus", hc, sizeof hc), 0);
	f->oversubscribed = host != 0 && f->cpus_online > host;
	f->host_cores = host;
}
