/*
 * arch/hosted/kdev_none.c - the hosted port without platform devices (arch_dev.h): the
 * stand-in linked until arch/hosted/kdev.c (the PIT, RTC and ATA models of the device
 * helper) is merged; mk/hosted-kernel.mk's HK_DEV_SRC chooses between them.
 * arch_has_platform_devices() is false, the int calls return KSYNC_ENOTSUP, the void
 * calls do nothing; the device tests and experiments skip or refuse with that reason.
 */
#include "kernel.h"
#include "dev.h"
#include <ksync/errors.h>

bool arch_has_platform_devices(void) { return false; }

void pit_oneshot(uint32_t pit_ticks) { (void)pit_ticks; }
void pit_periodic(unsigned hz) { (void)hz; }
void pit_rate_restart(uint32_t pit_ticks) { (void)pit_ticks; }
void pit_stop(void) { }
uint64_t pit_ticks_to_tsc(uint32_t pit_ticks) { return (uint64_t)pit_ticks * arch_tsc_hz() / PIT_HZ; }
uint32_t tsc_to_pit_ticks(uint64_t tsc_ticks, uint32_t lo, uint32_t hi)
{
	uint64_t hz = arch_tsc_hz();
	uint64_t t = hz ? (tsc_ticks * PIT_HZ + hz - 1) / hz : lo;
	return t < lo ? lo : t > hi ? hi : (uint32_t)t;
}

int rtc_periodic(unsigned hz) { (void)hz; return KSYNC_ENOTSUP; }
void rtc_stop(void) { }
void rtc_ack(void) { }

int ata_probe(struct ata_info *out) { (void)out; return KSYNC_ENOTSUP; }
int ata_read_start(struct ata_req *r) { (void)r; return KSYNC_ENOTSUP; }
void ata_intr(void *arg) { (void)arg; }
bool ata_pending(void) { return false; }
void ata_reset(void) { }
uint64_t ata_stray_irqs(void) { return 0; }
