/*
 * dev_timers.c - PIT channel 0 and the CMOS RTC periodic interrupt as interrupt sources
 * for the interrupt-scheme experiments (dev.h; Small & Manley 1997 section 6: the clock
 * and the paced serial/NIC models are driven by these).
 *
 * Real: both are the PC's own devices (QEMU's 8254 and MC146818 under TCG). Nothing is
 * modelled here. The PIT's channel 2 belongs to tsc.c (TSC calibration at boot); this
 * file touches channel 0 only (the mode/command port 0x43 is shared, but each write
 * there names its channel).
 *
 * Shared state: the PIT's channel-0 programming sequence (command, low byte, high byte)
 * and the CMOS index/data pair (0x70/0x71) must not interleave. pit_lock and cmos_lock
 * (ticket locks, taken with IRQs saved and restored as found) protect them against
 * other CPUs and against a nested handler on this CPU. The handlers that call in here
 * (serial model: pit_rate_restart; net model: rtc_ack) hold them for a few port I/Os.
 */
#include "kernel.h"
#include "x86.h"
#include "spinlock.h"
#include "dev.h"

#define PIT_CH0 0x40
#define PIT_CMD 0x43
#define PIT_CMD_CH0_LOHI 0x30	/* channel 0, access lo/hi byte */
#define PIT_MODE0 (0 << 1)	/* interrupt on terminal count */
#define PIT_MODE2 (2 << 1)	/* rate generator */

static struct spinlock pit_lock = SPINLOCK_INIT("pit");
static struct spinlock cmos_lock = SPINLOCK_INIT("cmos");

static void pit_load(uint8_t mode, uint32_t count)
{
	irqkey_t k = spin_lock_irqsave(&pit_lock);
	outb(PIT_CMD, PIT_CMD_CH0_LOHI | mode);
	outb(PIT_CH0, count & 0xff);
	outb(PIT_CH0, (count >> 8) & 0xff);
	spin_unlock_irqrestore(&pit_lock, k);
}

void pit_oneshot(uint32_t pit_ticks) { pit_load(PIT_MODE0, pit_clamp_count(pit_ticks, 1)); }
void pit_rate_restart(uint32_t pit_ticks) { pit_load(PIT_MODE2, pit_clamp_count(pit_ticks, 2)); }

void pit_periodic(unsigned hz)
{
	if (hz == 0)
		pit_stop();
	else
		pit_rate_restart(pit_hz_count(hz));
}

void pit_stop(void)
{
	irqkey_t k = spin_lock_irqsave(&pit_lock);
	outb(PIT_CMD, PIT_CMD_CH0_LOHI | PIT_MODE0);	/* mode 0, no count: OUT stays put */
	spin_unlock_irqrestore(&pit_lock, k);
}

uint64_t pit_ticks_to_tsc(uint32_t pit_ticks)
{
	return (uint64_t)pit_ticks * arch_tsc_hz() / PIT_HZ;
}

uint32_t tsc_to_pit_ticks(uint64_t tsc_ticks, uint32_t lo, uint32_t hi)
{
	uint64_t hz = arch_tsc_hz();
	/* hi <= 65535 PIT ticks is at most ~55 ms of TSC: clamp first so the product fits */
	uint64_t cap = (uint64_t)hi * hz / PIT_HZ + 1;
	if (tsc_ticks > cap)
		tsc_ticks = cap;
	uint64_t t = (tsc_ticks * PIT_HZ + hz - 1) / hz;
	if (t < lo)
		t = lo;
	if (t > hi)
		t = hi;
	return (uint32_t)t;
}

/* ---- CMOS RTC -------------------------------------------------------------------- */
#define CMOS_INDEX 0x70
#define CMOS_DATA 0x71
#define CMOS_NMI_OFF 0x80	/* bit 7 of the index: NMI masked while we program */
#define RTC_A 0x0a
#define RTC_B 0x0b
#define RTC_C 0x0c
#define RTC_D 0x0d
#define RTC_B_PIE 0x40		/* periodic interrupt enable */

/* Callers hold cmos_lock. */
static uint8_t cmos_read(uint8_t reg)
{
	outb(CMOS_INDEX, CMOS_NMI_OFF | reg);
	return inb(CMOS_DATA);
}

static void cmos_write(uint8_t reg, uint8_t v)
{
	outb(CMOS_INDEX, CMOS_NMI_OFF | reg);
	outb(CMOS_DATA, v);
}

static void cmos_nmi_on(void)
{
	outb(CMOS_INDEX, RTC_D);	/* bit 7 clear: NMI unmasked again */
	(void)inb(CMOS_DATA);
}

int rtc_periodic(unsigned hz)
{
	if (hz < 2 || hz > 8192 || (hz & (hz - 1)))
		return KSYNC_EINVAL;
	unsigned log2 = 0;
	while ((1u << log2) < hz)
		log2++;
	uint8_t rate = (uint8_t)(16 - log2);	/* f = 32768 >> (rate - 1): 8192 Hz = 3, 2 Hz = 15 */
	irqkey_t k = spin_lock_irqsave(&cmos_lock);
	uint8_t a = cmos_read(RTC_A);
	cmos_write(RTC_A, (a & 0xf0) | rate);
	uint8_t b = cmos_read(RTC_B);
	cmos_write(RTC_B, b | RTC_B_PIE);
	(void)cmos_read(RTC_C);		/* clear a stale flag so the line can rise again */
	cmos_nmi_on();
	spin_unlock_irqrestore(&cmos_lock, k);
	return KSYNC_OK;
}

void rtc_stop(void)
{
	irqkey_t k = spin_lock_irqsave(&cmos_lock);
	uint8_t b = cmos_read(RTC_B);
	cmos_write(RTC_B, b & ~RTC_B_PIE);
	(void)cmos_read(RTC_C);
	cmos_nmi_on();
	spin_unlock_irqrestore(&cmos_lock, k);
}

void rtc_ack(void)
{
	irqkey_t k = spin_lock_irqsave(&cmos_lock);
	outb(CMOS_INDEX, RTC_C);	/* NMI stays unmasked */
	(void)inb(CMOS_DATA);
	spin_unlock_irqrestore(&cmos_lock, k);
}

/* arch_dev.h: this port has the PIT, the RTC and the ATA disk (ata.c). */
bool arch_has_platform_devices(void) { return true; }
