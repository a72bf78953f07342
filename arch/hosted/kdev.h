/*
 * arch/hosted/kdev.h - the hosted port's platform devices (kdev.c): PIT channel 0, the
 * RTC periodic interrupt and an ATA PIO disk over an image file, implementing
 * kernel/include/arch_dev.h for a Linux process. docs/hosted-port.md, "Platform devices
 * on the hosted port", says what each is and what it cannot represent.
 *
 * What the devices need from the port (the port implements these two):
 */
#ifndef KSYNC_ARCH_HOSTED_KDEV_H
#define KSYNC_ARCH_HOSTED_KDEV_H

#include <stddef.h>
#include <stdint.h>

/* Any thread, async-signal-safe: deliver ISA irq `irq` (DEV_IRQ_PIT, _RTC, _ATA) to the
 * vCPU its line is routed to. Called by kdev.c's device thread. */
void hosted_isa_raise(unsigned irq);
/* TSC ticks per second (pit_ticks_to_tsc, tsc_to_pit_ticks). */
uint64_t hosted_tsc_hz(void);

/* What the port's boot calls. disk_path: a raw image (sector n at byte n * 512; its size
 * gives the sector count, a partial last sector is ignored), or NULL for no disk
 * (ata_probe then returns KSYNC_ENOENT). Starts the device thread. Returns KSYNC_OK,
 * KSYNC_ENOENT if the image cannot be opened or holds no whole sector, KSYNC_EBUSY if
 * already initialised, KSYNC_ENOMEM if the thread cannot be created. Call once, before
 * any vCPU programs a device. */
int hosted_dev_init(const char *disk_path);
/* Stops the PIT and RTC, ends an ATA request (as ata_reset), joins the device thread and
 * closes the image. After it hosted_dev_init may be called again. */
void hosted_dev_shutdown(void);

/* The device status word arch_dev_status_read() returns on the hosted port (on x86 an
 * `inb` of COM1's line status register): 0x60, "transmitter empty", and never written. */
extern volatile uint32_t hosted_dev_status;

/* The modelled ATA timing (docs/hosted-port.md): the first block of a request is ready
 * `command_ns` after ata_read_start, each later block `sector_ns` per sector after the
 * handler took the previous one. Defaults 100 us and 5 us. Only while no request runs. */
void hosted_dev_ata_timing(uint64_t command_ns, uint64_t sector_ns);

/* The device thread's PIT lateness (event time of the interrupt it raised - the time it
 * was due, ns, CLOCK_MONOTONIC): copies up to `max` of the most recent samples (at most
 * HOSTED_DEV_LATE_SAMPLES) into out and returns how many. Also counts PIT periods that
 * passed unseen while the thread was late (their edges coalesce into one raise, as a
 * controller's request bit would) and RTC periods dropped because rtc_ack was not called. */
/* "SCHED_FIFO" if the device thread got the highest SCHED_FIFO priority (tried unless
 * KSYNC_HOSTED_FIFO=0, like the port's vCPUs), else "best-effort scheduling". */
const char *hosted_dev_sched_label(void);

#define HOSTED_DEV_LATE_SAMPLES 16384
size_t hosted_dev_pit_lateness(uint64_t *out, size_t max);
uint64_t hosted_dev_pit_missed(void);
uint64_t hosted_dev_rtc_unacked(void);

#endif
