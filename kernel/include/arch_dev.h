/*
 * arch_dev.h - part of the port contract (arch_if.h names it; dev.h includes it): the platform devices
 * the experiments and the device tests use as interrupt sources - a programmable
 * interval timer (PIT channel 0), a periodic real-time clock interrupt (CMOS RTC) and a
 * PIO disk (ATA primary master). The x86_64 port implements them in
 * arch/x86_64/dev_timers.c and arch/x86_64/ata.c (QEMU's 8254, MC146818 and PIIX IDE).
 *
 * A port without these devices returns KSYNC_ENOTSUP from the int-returning calls
 * (rtc_periodic, ata_probe, ata_read_start) and its arch_has_platform_devices() returns
 * false; the experiments and tests that need them skip with that reason.
 */
#ifndef KSYNC_ARCH_DEV_H
#define KSYNC_ARCH_DEV_H

#include <stdint.h>
#include <stdbool.h>
#include <ksync/errors.h>

/* Whether the PIT, RTC and ATA below exist on this platform. */
bool arch_has_platform_devices(void);

#define DEV_IRQ_PIT 0		/* ISA IRQ of PIT channel 0 */
#define DEV_IRQ_RTC 8
#define DEV_IRQ_ATA 14

#define PIT_HZ 1193182u		/* the 8254's input clock */

/* ---- PIT channel 0 (arch/x86_64/dev_timers.c) --------------------------------------
 * One device for the machine; the caller that programs it owns it (the tests, or the
 * serial model while it runs). Any context. */
void pit_oneshot(uint32_t pit_ticks);	/* mode 0: one interrupt after pit_ticks (1..65535; clamped) */
void pit_periodic(unsigned hz);		/* mode 2 at hz (19..1193182; clamped); 0 stops */
/* Mode 2 restarted now with divisor pit_ticks (2..65535; clamped): the first interrupt
 * after pit_ticks, then every pit_ticks until reloaded or stopped. The serial model's
 * "one-shot that keeps asking", like a UART holding its interrupt line. */
void pit_rate_restart(uint32_t pit_ticks);
/* Stop channel 0 (control word, mode 0, no count). Under QEMU's 8254 a count loaded
 * less than one period ago may still fire once; handlers ignore such strays. */
void pit_stop(void);
uint64_t pit_ticks_to_tsc(uint32_t pit_ticks);
/* TSC ticks -> PIT ticks, rounded up, clamped to [lo, hi]. */
uint32_t tsc_to_pit_ticks(uint64_t tsc_ticks, uint32_t lo, uint32_t hi);

/* The PIT calls' argument rules, one copy for every port: a count clamped to lo..65535
 * (one-shot lo = 1; mode 2 forbids 1: lo = 2), a rate clamped to 19..PIT_HZ Hz. */
static inline uint32_t pit_clamp_count(uint32_t pit_ticks, uint32_t lo)
{
	return pit_ticks < lo ? lo : pit_ticks > 65535 ? 65535 : pit_ticks;
}
static inline uint32_t pit_hz_count(unsigned hz)
{
	return PIT_HZ / (hz < 19 ? 19 : hz > PIT_HZ ? PIT_HZ : hz);
}

/* ---- CMOS RTC periodic interrupt (IRQ8) ---------------------------------------------
 * hz must be a power of two 2..8192, else KSYNC_EINVAL. rtc_ack() reads register C;
 * call it in every RTC handler or a real RTC stops interrupting. */
int rtc_periodic(unsigned hz);
void rtc_stop(void);
void rtc_ack(void);

/* ---- ATA PIO, primary master (arch/x86_64/ata.c) ---------------------------------- */
#define ATA_EIO (-32)	/* the drive reported ERR/DF or no data; not (yet) in errors.h */
#define ATA_MAX_COUNT 256	/* sectors per request (one LBA28 command) */
#define ATA_MAX_PER_IRQ 16	/* READ MULTIPLE block, QEMU's maximum */

struct ata_info {
	bool present;
	uint64_t sectors;
	char model[41];
	unsigned max_multiple;	/* IDENTIFY word 47: sectors per READ MULTIPLE block */
	bool lba48;
};
/* Probe with IDENTIFY (polled, drive interrupts off). KSYNC_ENOENT if no ATA disk
 * (empty channel, floating bus, ATAPI device); never hangs (TSC timeouts).
 * KSYNC_EBUSY while a request runs. Remembers the result for ata_read_start. */
int ata_probe(struct ata_info *out);

/* One read of `count` sectors from `lba` into buf (count * 256 words). The caller fills
 * lba, count, per_irq, buf; the driver owns the rest until done. */
struct ata_req {
	uint64_t lba;
	unsigned count;			/* 1..ATA_MAX_COUNT, lba + count <= sectors */
	unsigned per_irq;		/* sectors moved per interrupt: 1..16 (READ MULTIPLE) */
	uint16_t *buf;
	/* written by ata_intr only (after ata_read_start); read by the waiter */
	volatile unsigned done_sectors;
	volatile bool done;		/* set last, with release order: buf and counts are final */
	volatile int error;		/* 0, or ATA_EIO */
	uint64_t irqs;			/* interrupts that moved a block or ended the request */
	uint64_t handler_tsc_total;	/* TSC ticks spent in ata_intr for this request */
	uint64_t handler_tsc_max;
	uint8_t status, err_reg;	/* last status / error register seen */
};
/* Issues SET MULTIPLE (if per_irq > 1 and changed) + READ SECTORS (per_irq 1) or READ
 * MULTIPLE. KSYNC_EINVAL for bad per_irq/count/lba/buf (or per_irq above max_multiple),
 * KSYNC_ENOENT if no disk was probed, KSYNC_EBUSY if a request runs (or the drive stays
 * busy). The IRQ14 line must be routed to a handler that calls ata_intr. */
int ata_read_start(struct ata_req *r);
/* ata_read_start's argument rules against the probed disk `d`, one copy for every port:
 * KSYNC_OK, KSYNC_ENOENT (no disk) or KSYNC_EINVAL. */
static inline int ata_req_check(const struct ata_req *r, const struct ata_info *d)
{
	if (!r || !r->buf)
		return KSYNC_EINVAL;
	if (!d->present)
		return KSYNC_ENOENT;
	if (r->count < 1 || r->count > ATA_MAX_COUNT)
		return KSYNC_EINVAL;
	if (r->per_irq < 1 || r->per_irq > ATA_MAX_PER_IRQ ||
	    (r->per_irq > 1 && r->per_irq > d->max_multiple))
		return KSYNC_EINVAL;
	if (r->lba >= d->sectors || r->count > d->sectors - r->lba)
		return KSYNC_EINVAL;
	if (r->lba + r->count > (1ull << 28) && !d->lba48)
		return KSYNC_EINVAL;
	return KSYNC_OK;
}
/* The handler: reads status (acks INTRQ), moves per_irq sectors (fewer for the last
 * block) with `rep insw`. `arg` is not used (the driver knows its active request), so
 * it may be registered once with any argument. */
void ata_intr(void *arg);
/* True if a request runs and the drive is waiting for its handler (BSY clear and DRQ or
 * ERR set, read from the alternate status: nothing is acknowledged). For recovering an
 * interrupt edge lost while IRQ14 was masked at an IOAPIC. Any context. */
bool ata_pending(void);
/* Abandon the active request (if any) and soft-reset the channel. For timeouts. */
void ata_reset(void);
uint64_t ata_stray_irqs(void);		/* interrupts with no request, or no block ready */

#endif
