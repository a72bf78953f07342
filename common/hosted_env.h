/*
 * hosted_env.h - facts every hosted benchmark reports about its machine, and pinning:
 * now_ns (CLOCK_MONOTONIC_RAW), tsc_hz (CPUID 0x15 when it names the crystal, else
 * calibrated against the clock), cpu_model (CPUID brand string, JSON-safe) and
 * pin_to_current_cpu. Shared by the hosted benchmarks (the C programs of bench/) and
 * the hosted port's cost programs (arch/hosted/costs.c) so their "hosted_boot" records
 * agree; it lives in common/ so that neither reaches into the other's folder. Hosted only
 * (Linux, <cpuid.h>): nothing under kernel/ includes it (tests/test_layout.py).
 */
#ifndef KSYNC_COMMON_HOSTED_ENV_H
#define KSYNC_COMMON_HOSTED_ENV_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cpuid.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ksync/platform.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* TSC frequency: CPUID 0x15 when it names the crystal, else calibrated against
 * CLOCK_MONOTONIC_RAW over ~100 ms (best of three). */
static inline uint64_t tsc_hz(const char **source)
{
	unsigned a, b, c, d;

	if ((unsigned)__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid_count(0x15, 0, a, b, c, d);
		if (a && b && c) {
			*source = "cpuid15";
			return (uint64_t)c * b / a;
		}
	}
	*source = "calibrated";
	double best = 0;
	for (int round = 0; round < 3; round++) {
		uint64_t n0 = now_ns(), c0 = ksync_cycles_begin(), n1, c1;

		do {
			n1 = now_ns();
		} while (n1 - n0 < 100000000ull);
		c1 = ksync_cycles_end();
		double hz = (double)(c1 - c0) * 1e9 / (double)(n1 - n0);
		if (round == 0 || hz < best)	/* interruptions only ever add ticks */
			best = hz;
	}
	return (uint64_t)(best / 1000.0 + 0.5) * 1000;	/* to the kHz */
}

/* CPUID brand string, trimmed, with JSON-special characters replaced. */
static inline void cpu_model(char *out, size_t cap)
{
	unsigned r[12];
	char raw[49], *s = raw;
	size_t n;

	if ((unsigned)__get_cpuid_max(0x80000000, NULL) < 0x80000004) {
		snprintf(out, cap, "unknown");
		return;
	}
	for (unsigned i = 0; i < 3; i++)
		__cpuid(0x80000002 + i, r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
	memcpy(raw, r, 48);
	raw[48] = '\0';
	while (*s == ' ')
		s++;
	n = strlen(s);
	while (n && s[n - 1] == ' ')
		s[--n] = '\0';
	for (char *p = s; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '?';
	snprintf(out, cap, "%s", s);
}

static inline void pin_to_current_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		ksync_printf("ktap: # sched_setaffinity failed; figures may include migrations\n");
}

/* The start of every hosted cost program: stdout line-buffered, pinned to the CPU it
 * runs on, ~200 ms of spinning (the core leaves its idle frequency), then the KSYNC
 * hosted_boot line (TSC rate and its source, CPU model, CPUs online). Returns the TSC
 * rate; *source (if not NULL) gets how it was found. */
static inline uint64_t bench_start(const char **source)
{
	const char *src;
	char model[64];
	uint64_t hz, t0;
	volatile uint64_t spin = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	pin_to_current_cpu();
	t0 = now_ns();
	while (now_ns() - t0 < 200000000ull)
		spin++;
	hz = tsc_hz(&src);
	cpu_model(model, sizeof(model));
	ksync_printf("KSYNC {\"kind\":\"hosted_boot\",\"tsc_hz\":%llu,\"tsc_source\":\"%s\","
		     "\"cpu_model\":\"%s\",\"cpus\":%ld}\n",
		     (unsigned long long)hz, src, model, sysconf(_SC_NPROCESSORS_ONLN));
	if (source)
		*source = src;
	return hz;
}

#endif /* KSYNC_BENCH_HOSTED_ENV_H */
