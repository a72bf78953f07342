/*
 * acpi.c - find the CPUs and IOAPICs: ACPI MADT first (RSDP -> RSDT/XSDT -> "APIC"),
 * the Intel MultiProcessor table as the fallback (QEMU with acpi=off, old firmware).
 * Everything runs once on the BSP before any AP starts; `platform` is read-only after.
 * Firmware memory (EBDA pointer, RSDP, tables) is read through the direct map (P2V).
 */
#include "kernel.h"
#include "x86.h"
#include "trap.h"

struct platform_info platform;

static bool checksum_ok(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t s = 0;
	while (n--)
		s += *b++;
	return s == 0;
}

static const void *scan(uint64_t from, uint64_t len, const char *sig, size_t siglen, size_t cklen)
{
	for (uint64_t a = from; a + 16 <= from + len; a += 16)
		if (!memcmp((const void *)P2V(a), sig, siglen) && checksum_ok((const void *)P2V(a), cklen))
			return (const void *)P2V(a);
	return NULL;
}

static void add_cpu(uint32_t apic_id)
{
	for (unsigned i = 0; i < platform.ncpus; i++)
		if (platform.apic_ids[i] == apic_id)
			return;
	if (platform.ncpus < ARRAY_SIZE(platform.apic_ids))
		platform.apic_ids[platform.ncpus++] = apic_id;
	else
		kprintf("ksync: more than %zu CPUs; ignoring APIC id %u\n", ARRAY_SIZE(platform.apic_ids), apic_id);
}

static void add_ioapic(uint32_t id, uint32_t phys, uint32_t gsi_base)
{
	if (platform.nioapic >= ARRAY_SIZE(platform.ioapic))
		return;
	platform.ioapic[platform.nioapic].id = id;
	platform.ioapic[platform.nioapic].phys = phys;
	platform.ioapic[platform.nioapic].gsi_base = gsi_base;
	platform.nioapic++;
}

struct sdt { char sig[4]; uint32_t len; uint8_t rev, ck; char oem[6], oemtab[8]; uint32_t oemrev, cid, crev; } __attribute__((packed));

static const struct sdt *find_sdt(const uint8_t *rsdp, const char *sig)
{
	uint8_t rev = rsdp[15];
	uint32_t rsdt = *(const uint32_t *)(rsdp + 16);
	uint64_t xsdt = rev >= 2 ? *(const uint64_t *)(rsdp + 24) : 0;
	const struct sdt *root = (const struct sdt *)P2V(xsdt ? xsdt : rsdt);
	if (!checksum_ok(root, root->len))
		return NULL;
	size_t esz = xsdt ? 8 : 4;
	size_t n = (root->len - sizeof *root) / esz;
	const uint8_t *ents = (const uint8_t *)(root + 1);
	for (size_t i = 0; i < n; i++) {
		uint64_t a = esz == 8 ? *(const uint64_t *)(ents + 8 * i) : *(const uint32_t *)(ents + 4 * i);
		const struct sdt *t = (const struct sdt *)P2V(a);
		if (!memcmp(t->sig, sig, 4) && checksum_ok(t, t->len))
			return t;
	}
	return NULL;
}

static bool parse_madt(void)
{
	uint64_t ebda = (uint64_t)(*(volatile uint16_t *)P2V(0x40e)) << 4;
	const uint8_t *rsdp = NULL;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		rsdp = scan(ebda, 1024, "RSD PTR ", 8, 20);
	if (!rsdp)
		rsdp = scan(0xe0000, 0x20000, "RSD PTR ", 8, 20);
	if (!rsdp)
		return false;
	const struct sdt *madt = find_sdt(rsdp, "APIC");
	if (!madt)
		return false;
	const uint8_t *p = (const uint8_t *)madt + 44, *end = (const uint8_t *)madt + madt->len;
	platform.lapic_phys = *(const uint32_t *)((const uint8_t *)madt + 36);
	while (p + 2 <= end && p[1] >= 2) {
		switch (p[0]) {
		case 0:		/* processor local APIC: enabled, or online-capable */
			if (*(const uint32_t *)(p + 4) & 3)
				add_cpu(p[3]);
			break;
		case 1:		/* I/O APIC */
			add_ioapic(p[2], *(const uint32_t *)(p + 4), *(const uint32_t *)(p + 8));
			break;
		case 2: {	/* interrupt source override (bus 0 = ISA) */
			unsigned src = p[3];
			uint16_t fl = *(const uint16_t *)(p + 8);
			if (src < 16) {
				platform.isa[src].gsi = *(const uint32_t *)(p + 4);
				platform.isa[src].overridden = true;
				platform.isa[src].active_low = (fl & 3) == 3;
				platform.isa[src].level = ((fl >> 2) & 3) == 3;
			}
			break;
		}
		case 5:
			platform.lapic_phys = *(const uint64_t *)(p + 4);
			break;
		case 9:		/* processor local x2APIC */
			if (*(const uint32_t *)(p + 8) & 3)
				add_cpu(*(const uint32_t *)(p + 4));
			break;
		}
		p += p[1];
	}
	platform.source = "acpi-madt";
	return platform.ncpus > 0;
}

static bool parse_mptable(void)
{
	uint64_t ebda = (uint64_t)(*(volatile uint16_t *)P2V(0x40e)) << 4;
	const uint8_t *fp = NULL;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		fp = scan(ebda, 1024, "_MP_", 4, 16);
	if (!fp)
		fp = scan(0x9fc00, 1024, "_MP_", 4, 16);
	if (!fp)
		fp = scan(0xf0000, 0x10000, "_MP_", 4, 16);
	if (!fp)
		return false;
	uint32_t ct_pa = *(const uint32_t *)(fp + 4);
	const uint8_t *ct = (const uint8_t *)P2V(ct_pa);
	if (!ct_pa || memcmp(ct, "PCMP", 4) || !checksum_ok(ct, *(const uint16_t *)(ct + 4)))
		return false;
	platform.lapic_phys = *(const uint32_t *)(ct + 36);
	unsigned n = *(const uint16_t *)(ct + 34);
	const uint8_t *p = ct + 44;
	int isa_bus = -1;
	for (unsigned i = 0; i < n; i++) {
		switch (p[0]) {
		case 0:
			if (p[3] & 1)
				add_cpu(p[1]);
			p += 20;
			break;
		case 1:
			if (!memcmp(p + 2, "ISA", 3))
				isa_bus = p[1];
			p += 8;
			break;
		case 2:
			if (p[3] & 1)
				add_ioapic(p[1], *(const uint32_t *)(p + 4), 0);
			p += 8;
			break;
		case 3: {	/* I/O interrupt assignment: ISA irq -> IOAPIC pin */
			uint16_t fl = *(const uint16_t *)(p + 2);
			if (p[1] == 0 && p[4] == isa_bus && p[5] < 16) {
				platform.isa[p[5]].gsi = p[7];
				platform.isa[p[5]].overridden = p[7] != p[5];
				platform.isa[p[5]].active_low = (fl & 3) == 3;
				platform.isa[p[5]].level = ((fl >> 2) & 3) == 3;
			}
			p += 8;
			break;
		}
		default:
			p += 8;
			break;
		}
	}
	platform.source = "mp-table";
	return platform.ncpus > 0;
}

void acpi_init(void)
{
	for (unsigned i = 0; i < 16; i++)
		platform.isa[i].gsi = i;
	if (!parse_madt()) {
		memset(&platform, 0, sizeof platform);
		for (unsigned i = 0; i < 16; i++)
			platform.isa[i].gsi = i;
		if (!parse_mptable()) {
			kprintf("ksync: no ACPI MADT and no MP table: running on the boot CPU only\n");
			platform.source = "none";
			platform.ncpus = 0;
		}
	}
	if (platform.nioapic == 0)
		kprintf("ksync: warning: no IOAPIC found\n");
}
