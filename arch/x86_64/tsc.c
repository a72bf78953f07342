/*
 * tsc.c - the TSC's frequency: CPUID 0x15 (crystal ratio) or 0x16 (base MHz) when they
 * give non-zero values, else calibrated against PIT channel 2 (1.193182 MHz), the
 * median of three 20 ms windows. Runs once on the BSP; tsc_hz is read-only after.
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
	uint64_t s[3];
	uint32_t pit = (uint32_t)(PIT_HZ / 50);	/* 20 ms */
	for (int i = 0; i < 3; i++)
		s[i] = pit_delay_ticks(pit);
	/* median of three */
	uint64_t lo = s[0] < s[1] ? s[0] : s[1], hi = s[0] < s[1] ? s[1] : s[0];
	uint64_t med = s[2] < lo ? lo : s[2] > hi ? hi : s[2];
	if (!med)
		panic("tsc: PIT channel 2 never reached terminal count; cannot calibrate the TSC");
	tsc_hz = med * PIT_HZ / pit;
	tsc_source = "pit";
}
