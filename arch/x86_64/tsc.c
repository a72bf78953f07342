/*
 * tsc.c - the TSC's frequency: CPUID 0x15 (crystal ratio) or 0x16 (base MHz) when they
 * give non-zero values, else calibrated against PIT channel 2 (1.193182 MHz), the
 * median of seven 10 ms windows (an emulator's vCPU thread can be descheduled inside a
 * window on a loaded host; the median discards such windows). Runs once on the BSP;
 * tsc_hz is read-only after.
 */
#include "kernel.h"
#include "x86.h"
#include "trap.h"

static uint64_t tsc_hz;
bool arch_has_rdtscp;
const char *tsc_source = "none";

uint64_t arch_tsc_hz(void) { return tsc_hz; }

void arch_delay_us(uint64_t us)
{
	uint64_t end = rdtsc() + us * (tsc_hz / 1000000);
	while ((int64_t)(rdtsc() - end) < 0)
		cpu_pause();
}

#define PIT_HZ 1193182ull

/* TSC ticks that elapse while PIT channel 2 counts down pit_ticks (mode 0, gate via 0x61). */
uint64_t pit_delay_ticks(uint32_t pit_ticks)
{
	uint8_t g = inb(0x61);
	outb(0x61, (g & ~0x02) & ~0x01);	/* speaker off, gate low */
	outb(0x43, 0xb0);			/* ch2, lo/hi byte, mode 0, binary */
	outb(0x42, pit_ticks & 0xff);
	outb(0x42, (pit_ticks >> 8) & 0xff);
	g = inb(0x61);
	outb(0x61, g | 0x01);			/* gate high: counting starts */
	uint64_t t0 = rdtsc();
	uint64_t spins = 0;
	while (!(inb(0x61) & 0x20)) {		/* OUT2 goes high at terminal count */
		if (++spins > 100000000ull)
			return 0;
	}
	uint64_t t1 = rdtsc();
	outb(0x61, g & ~0x01);
	return t1 - t0;
}

void tsc_init(void)
{
	uint32_t a, b, c, d, max;
	/* the measurement method ends a timed batch with rdtscp where it exists (protocol §4) */
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	arch_has_rdtscp = (d >> 27) & 1;
	cpuid(0, 0, &max, &b, &c, &d);
	if (max >= 0x15) {
		cpuid(0x15, 0, &a, &b, &c, &d);
		if (a && b && c) {
			tsc_hz = (uint64_t)c * b / a;
			tsc_source = "cpuid15";
			return;
		}
	}
	if (max >= 0x16) {
		cpuid(0x16, 0, &a, &b, &c, &d);
		if (a) {
			tsc_hz = (uint64_t)a * 1000000;
			tsc_source = "cpuid16";
			return;
		}
	}
	enum { WINDOWS = 7 };
	uint64_t s[WINDOWS];
	uint32_t pit = (uint32_t)(PIT_HZ / 100);	/* 10 ms */
	for (int i = 0; i < WINDOWS; i++)
		s[i] = pit_delay_ticks(pit);
	for (int i = 1; i < WINDOWS; i++)		/* insertion sort, 7 elements */
		for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
			uint64_t t = s[j];
			s[j] = s[j - 1];
			s[j - 1] = t;
		}
	uint64_t med = s[WINDOWS / 2];
	if (!s[0])
		panic("tsc: PIT channel 2 never reached terminal count; cannot calibrate the TSC");
	tsc_hz = med * PIT_HZ / pit;
	tsc_source = "pit";
}
