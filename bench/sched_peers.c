/*
 * sched_peers.c - Linux's own switch and wakeup costs on the same machine, the peers of the
 * hosted kernel's sched_ops rows (kernel/exp/sched_exp.c; issue 10): build/hosted/bench/
 * sched_peers.
 *
 * Rows (KSYNC {"kind":"sched_peer",...}, TSC ticks per operation):
 *   futex_wake_cross    FUTEX_WAKE on core A -> the wakee's first instruction after
 *                       FUTEX_WAIT returns on core B (TSC stamps of two cores; the wakee
 *                       has waited ~20 us, as the kernel's wakeup_cross row)
 *   pipe_same           one byte each way between two threads pinned to one core:
 *                       ticks per one-way transfer (= per switch), round trip / 2
 *   pipe_cross          the same, the two threads on two cores
 *   sched_yield_same    two threads pinned to one core alternating sched_yield(): ticks
 *                       per switch (the switches counted from both threads' yields)
 * Each row: samples timed with serialized TSC reads (lfence; rdtsc / rdtscp; lfence), the
 * empty interval's median subtracted, min / median / p99 / max by the nearest-rank method
 * of include/ksync/measure.h, n samples. The threads run under the default Linux policy
 * (SCHED_OTHER) unless argv[1] is "fifo" and SCHED_FIFO is permitted; the line
 * {"kind":"sched_peer_setup"} says which. With one core the cross rows are skipped with a
 * reason.
 *
 * Output (stdout): hosted_boot facts, KTAP, one KSYNC line per row.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ksync/measure.h>

#include "hosted_env.h"
#include <ksync/platform.h>

#define MAX_SAMPLES 400
#define PIPE_BATCH 16		/* round trips per sample */
#define YIELD_BATCH 32		/* yields of the measuring thread per sample */
#define WAKE_GAP_NS 20000

static uint64_t hz;
static uint64_t budget_ticks;
static double samples[MAX_SAMPLES];
static int cpu_a, cpu_b;	/* the two cores used */
static int policy = SCHED_OTHER;

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double empty_median(void)
{
	uint64_t e[MAX_SAMPLES];

	for (int i = 0; i < MAX_SAMPLES; i++) {
		uint64_t t0 = ksync_cycles_begin();
		__asm__ __volatile__("" ::: "memory");
		e[i] = ksync_cycles_end() - t0;
	}
	struct ksync_stats s = ksync_stats_compute(e, MAX_SAMPLES);
	return (double)s.median;
}

/* samples[] hold ticks per operation already divided; `empty_per_op` is subtracted */
static void emit(const char *name, const char *detail, size_t n, unsigned ops_per_sample,
		 double empty, unsigned timeouts)
{
	if (n == 0) {
		printf("KSYNC {\"kind\":\"sched_peer\",\"name\":\"%s\",\"detail\":\"%s\",\"n\":0,"
		       "\"skipped\":\"no sample completed\",\"timeouts\":%u}\n", name, detail,
		       timeouts);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		samples[i] -= empty / ops_per_sample;
		if (samples[i] < 0)
			samples[i] = 0;
	}
	qsort(samples, n, sizeof samples[0], cmp_double);
	double mn = samples[0], md = samples[(n - 1) / 2], p99 = samples[(99 * n + 99) / 100 - 1],
	       mx = samples[n - 1];
	printf("KSYNC {\"kind\":\"sched_peer\",\"name\":\"%s\",\"detail\":\"%s\",\"unit\":"
	       "\"tsc_ticks\",\"n\":%zu,\"ops_per_sample\":%u,\"min\":%.2f,\"median\":%.2f,"
	       "\"p99\":%.2f,\"max\":%.2f,\"timeouts\":%u,\"policy\":\"%s\",\"cpus\":[%d,%d]}\n",
	       name, detail, n, ops_per_sample, mn, md, p99, mx, timeouts,
	       policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER", cpu_a, cpu_b);
}

static void skip(const char *name, const char *why)
{
	printf("KSYNC {\"kind\":\"sched_peer\",\"name\":\"%s\",\"skipped\":\"%s\"}\n", name, why);
}

static pthread_t spawn(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	pthread_attr_t a;

	pthread_attr_init(&a);
	if (policy == SCHED_FIFO) {
		struct sched_param p = { .sched_priority = 1 };
		pthread_attr_setinheritsched(&a, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&a, SCHED_FIFO);
		pthread_attr_setschedparam(&a, &p);
	}
	if (pthread_create(&t, &a, fn, arg) != 0) {
		perror("pthread_create");
		exit(1);
	}
	pthread_attr_destroy(&a);
	return t;
}

static long futex(uint32_t *w, int op, uint32_t v)
{
	return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

/* ---- futex wake -> the wakee runs, two cores -------------------------------------------- */

static _Alignas(64) uint32_t fword;
static _Alignas(64) volatile uint64_t fstamp;
static _Alignas(64) volatile int fwaiting, fstop;

static void *futex_wakee(void *arg)
{
	(void)arg;
	pin(cpu_b);
	while (!__atomic_load_n(&fstop, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&fwaiting, 1, __ATOMIC_RELEASE);
		while (__atomic_load_n(&fword, __ATOMIC_ACQUIRE) == 0)
			futex(&fword, FUTEX_WAIT_PRIVATE, 0);
		uint64_t t = ksync_cycles_end();	/* the wakee's first instruction */
		__atomic_store_n(&fword, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fstamp, t, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void row_futex(void)
{
	size_t n = 0;
	unsigned timeouts = 0;

	pin(cpu_a);
	fword = 0;
	fstop = 0;
	fwaiting = 0;
	pthread_t t = spawn(futex_wakee, NULL);
	uint64_t end = ksync_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && ksync_cycles() < end) {
		uint64_t w0 = now_ns();
		while (!__atomic_load_n(&fwaiting, __ATOMIC_ACQUIRE) && now_ns() - w0 < 200000000ull)
			ksync_cpu_relax();
		/* it said it waits; give it time to be in FUTEX_WAIT, its core to idle */
		uint64_t g0 = now_ns();
		while (now_ns() - g0 < WAKE_GAP_NS)
			ksync_cpu_relax();
		__atomic_store_n(&fwaiting, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&fstamp, 0, __ATOMIC_RELEASE);
		uint64_t t0 = ksync_cycles_begin();
		__atomic_store_n(&fword, 1, __ATOMIC_RELEASE);
		futex(&fword, FUTEX_WAKE_PRIVATE, 1);
		uint64_t s0 = now_ns();
		while (__atomic_load_n(&fstamp, __ATOMIC_ACQUIRE) == 0 && now_ns() - s0 < 200000000ull)
			ksync_cpu_relax();
		uint64_t st = __atomic_load_n(&fstamp, __ATOMIC_ACQUIRE);
		if (st == 0) {
			timeouts++;
			if (timeouts > 4)
				break;
			continue;
		}
		samples[n++] = st > t0 ? (double)(st - t0) : 0;
	}
	__atomic_store_n(&fstop, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&fword, 1, __ATOMIC_RELEASE);
	futex(&fword, FUTEX_WAKE_PRIVATE, 1);
	pthread_join(t, NULL);
	emit("futex_wake_cross", "FUTEX_WAKE on one core -> the wakee's first instruction after "
	     "FUTEX_WAIT on another (waited 20 us)", n, 1, empty_median(), timeouts);
}

/* ---- pipe ping-pong ------------------------------------------------------------------------ */

static int p1[2], p2[2];
static int echo_cpu;

static void *pipe_echo(void *arg)
{
	(void)arg;
	char c;

	pin(echo_cpu);
	for (;;) {
		if (read(p1[0], &c, 1) != 1 || c == 'q')
			break;
		if (write(p2[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

static void row_pipe(const char *name, int other_cpu)
{
	size_t n = 0;
	char c = 'x';

	pin(cpu_a);
	echo_cpu = other_cpu;
	if (pipe(p1) || pipe(p2)) {
		perror("pipe");
		exit(1);
	}
	pthread_t t = spawn(pipe_echo, NULL);
	for (int i = 0; i < 64; i++)	/* warm-up */
		if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1)
			break;
	uint64_t end = ksync_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && ksync_cycles() < end) {
		uint64_t t0 = ksync_cycles_begin();
		for (int i = 0; i < PIPE_BATCH; i++)
			if (write(p1[1], &c, 1) != 1 || read(p2[0], &c, 1) != 1)
				goto out;
		samples[n++] = (double)(ksync_cycles_end() - t0) / (2 * PIPE_BATCH);
	}
out:
	c = 'q';
	if (write(p1[1], &c, 1) != 1)
		perror("write");
	pthread_join(t, NULL);
	close(p1[0]), close(p1[1]), close(p2[0]), close(p2[1]);
	emit(name, other_cpu == cpu_a
		     ? "one byte each way between two threads pinned to one core: ticks per "
		       "one-way transfer (round trip / 2)"
		     : "one byte each way between threads on two cores: ticks per one-way "
		       "transfer (round trip / 2)",
	     n, 2 * PIPE_BATCH, empty_median(), 0);
}

/* ---- sched_yield pair ---------------------------------------------------------------------- */

static _Alignas(64) volatile uint64_t partner_yields;
static _Alignas(64) volatile int ystop;

static void *yield_partner(void *arg)
{
	(void)arg;
	pin(cpu_a);
	while (!__atomic_load_n(&ystop, __ATOMIC_ACQUIRE)) {
		sched_yield();
		__atomic_store_n(&partner_yields, partner_yields + 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void row_yield(void)
{
	size_t n = 0;
	uint64_t lone = 0;

	pin(cpu_a);
	ystop = 0;
	partner_yields = 0;
	pthread_t t = spawn(yield_partner, NULL);
	for (int i = 0; i < 256; i++)
		sched_yield();
	uint64_t end = ksync_cycles() + budget_ticks;
	while (n < MAX_SAMPLES && ksync_cycles() < end) {
		uint64_t b0 = __atomic_load_n(&partner_yields, __ATOMIC_RELAXED);
		uint64_t t0 = ksync_cycles_begin();
		for (int i = 0; i < YIELD_BATCH; i++)
			sched_yield();
		uint64_t dt = ksync_cycles_end() - t0;
		uint64_t b = __atomic_load_n(&partner_yields, __ATOMIC_RELAXED) - b0;
		if (b == 0) {	/* the partner never ran: no switch happened */
			lone++;
			continue;
		}
		/* switches: each of our yields that let the partner run, and each of its */
		uint64_t sw = (b < YIELD_BATCH ? b : YIELD_BATCH) + b;
		samples[n++] = (double)dt / (double)sw;
	}
	__atomic_store_n(&ystop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	emit("sched_yield_same", "two threads pinned to one core alternating sched_yield(): "
	     "ticks per switch", n, 2 * YIELD_BATCH, empty_median(), 0);
	if (lone)
		printf("ktap: # sched_yield_same: %llu samples had no switch (left out)\n",
		       (unsigned long long)lone);
}

int main(int argc, char **argv)
{
	const char *source;
	char model[64];
	cpu_set_t set;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "fifo") == 0) {
		struct sched_param p = { .sched_priority = 1 };
		if (sched_setscheduler(0, SCHED_FIFO, &p) == 0)
			policy = SCHED_FIFO;
	}
	/* the first two cores this process may use */
	sched_getaffinity(0, sizeof set, &set);
	cpu_a = cpu_b = -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set)) {
			if (cpu_a < 0)
				cpu_a = c;
			else if (cpu_b < 0)
				cpu_b = c;
		}
	if (cpu_a < 0)
		cpu_a = 0;
	pin(cpu_a);
	uint64_t w0 = now_ns();	/* leave the idle frequency */
	while (now_ns() - w0 < 100000000ull)
		ksync_cpu_relax();
	hz = tsc_hz(&source);
	budget_ticks = hz / 1000 * 100;	/* 100 ms per row */
	cpu_model(model, sizeof model);
	printf("KSYNC {\"kind\":\"hosted_boot\",\"tsc_hz\":%llu,\"tsc_source\":\"%s\","
	       "\"cpu_model\":\"%s\",\"cpus\":%ld}\n",
	       (unsigned long long)hz, source, model, sysconf(_SC_NPROCESSORS_ONLN));
	printf("KSYNC {\"kind\":\"sched_peer_setup\",\"policy\":\"%s\",\"cpu_a\":%d,\"cpu_b\":%d}\n",
	       policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER", cpu_a, cpu_b);
	printf("ktap: KTAP version 1\nktap: 1..1\n");
	if (cpu_b >= 0)
		row_futex();
	else
		skip("futex_wake_cross", "one core: no second core to wake a thread on");
	row_pipe("pipe_same", cpu_a);
	if (cpu_b >= 0)
		row_pipe("pipe_cross", cpu_b);
	else
		skip("pipe_cross", "one core");
	row_yield();
	printf("ktap: ok 1 sched_peers\n");
	return 0;
}
