/*
 * arch/hosted/costs.c - what the hosted port's mechanisms cost on the real CPU
 * (build/hosted-port/costs and costs-hard, the -DHOSTED_HARD_MASK=1 build), in the row
 * format of bench/prims.c (include/ksync/measure.h: TSC ticks per op, empty loop
 * subtracted, min/median/p99/max):
 *   KSYNC {"kind":"hosted_boot",...}                the machine (common/hosted_env.h)
 *   KSYNC {"kind":"prim","name":"hosted_sigmask_pair",...}    pthread_sigmask block+restore
 *   KSYNC {"kind":"prim","name":"hosted_soft_irq_pair",...}   save+restore, pending check
 *         (hosted_hard_irq_pair in the hard-mask build: pthread_sigmask of every source)
 *   KSYNC {"kind":"prim","name":"hosted_signal_self",...}     raise -> handler, same vCPU
 *   KSYNC {"kind":"prim","name":"hosted_signal_cross",...}    raise -> handler, other vCPU
 *   KSYNC {"kind":"prim","name":"hosted_ipi_round_trip",...}  mailbox IPI to an idle vCPU
 *                                                             and its answer
 * Latency rows are one sample per "batch" (ops_per_batch 1), the empty figure being a
 * back-to-back TSC pair. Environment: hosted (a Linux process, vCPUs pinned to real
 * cores); the ktap comment lines give the ns figures from the TSC rate.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ksync/measure.h>
#include <ksync/platform.h>

#include "hosted_env.h"	/* common/, shared with bench/ */
#include "hosted.h"

#define BATCHES KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH
#define SAMPLES 2000

static uint64_t batch_ticks[SAMPLES], empty_ticks[SAMPLES];
static uint64_t hz;

/* Handler timestamp: written by the handler (on whichever vCPU), read by vCPU 0 after
 * it sees `seen` change (release/acquire). */
static _Atomic uint64_t t_handler;
static _Atomic unsigned long seen;
static _Atomic int phase;	/* 0 measuring, 1 cross-vCPU receiver spins, 2 done */
static _Atomic unsigned long answers;

static void on_src(unsigned src, void *arg)
{
	(void)src;
	(void)arg;
	atomic_store_explicit(&t_handler, ksync_cycles_end(), memory_order_relaxed);
	atomic_fetch_add_explicit(&seen, 1, memory_order_release);
}

static void on_ipi(unsigned cpu, uint32_t bits)
{
	(void)bits;
	if (cpu == 1)
		hosted_ipi_send(0, 1);	/* the answer */
	else
		atomic_fetch_add_explicit(&answers, 1, memory_order_release);
}

static void note_ns(const char *name)
{
	/* medians again in ns, for the reader; batch_ticks is sorted by the emit */
	ksync_printf("ktap: # %s: median %.1f ns, p99 %.1f ns (TSC %.3f GHz)\n", name,
		     (double)batch_ticks[SAMPLES / 2] * 1e9 / (double)hz,
		     (double)batch_ticks[SAMPLES * 99 / 100] * 1e9 / (double)hz, (double)hz / 1e9);
}

#define ROW(name, detail, ...)                                                        \
	do {                                                                          \
		KSYNC_MEASURE(batch_ticks, BATCHES, OPS, __VA_ARGS__);                \
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);                    \
		KSYNC_MEASURE(batch_ticks, BATCHES, OPS, __VA_ARGS__);                \
		ksync_prim_emit(name, detail, batch_ticks, BATCHES, OPS, empty_ticks, \
				BATCHES);                                             \
	} while (0)

static void empty_pairs(void)
{
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t t0 = ksync_cycles_begin();

		empty_ticks[i] = ksync_cycles_end() - t0;
	}
}

static void latency(unsigned target, const char *name, const char *detail)
{
	for (int i = -100; i < SAMPLES; i++) {	/* 100 warm-up samples dropped */
		unsigned long before = atomic_load_explicit(&seen, memory_order_relaxed);
		uint64_t t0 = ksync_cycles_begin();

		hosted_source_raise(1, target);
		while (atomic_load_explicit(&seen, memory_order_acquire) == before)
			;
		uint64_t t1 = atomic_load_explicit(&t_handler, memory_order_relaxed);
		if (i >= 0)
			batch_ticks[i] = t1 > t0 ? t1 - t0 : 0;
	}
	empty_pairs();
	ksync_prim_emit(name, detail, batch_ticks, SAMPLES, 1, empty_ticks, SAMPLES);
	note_ns(name);
}

static void vcpu(unsigned cpu)
{
	if (cpu == 1) {
		/* busy (not idle) while the cross-vCPU signals come, then idle for IPIs */
		while (atomic_load(&phase) == 0)
			;
		while (atomic_load(&phase) == 1)
			hosted_idle();
		return;
	}
	sigset_t blk, old;
	uint64_t t0 = now_ns();

	while (now_ns() - t0 < 200000000ull)	/* leave the idle frequency */
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);
	sigemptyset(&blk);
	sigaddset(&blk, SIGRTMIN + 2);

	ROW("hosted_sigmask_pair", "pthread_sigmask block one signal + restore (2 syscalls)", {
		pthread_sigmask(SIG_BLOCK, &blk, &old);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	});
	ROW(HOSTED_HARD_MASK ? "hosted_hard_irq_pair" : "hosted_soft_irq_pair",
	    HOSTED_HARD_MASK ? "hosted_irq_save + restore: pthread_sigmask of all sources" :
			       "hosted_irq_save + restore: soft flag, pending check", {
		unsigned long k = hosted_irq_save();
		hosted_irq_restore(k);
	});
	hosted_source_register(1, on_src, NULL);
	latency(0, "hosted_signal_self", "tgkill -> handler entry, same vCPU (TSC ticks)");
	latency(1, "hosted_signal_cross", "tgkill -> handler entry on a busy other vCPU");

	atomic_store(&phase, 1);
	for (int i = -100; i < SAMPLES; i++) {
		unsigned long before = atomic_load_explicit(&answers, memory_order_relaxed);
		struct timespec ts = { 0, 50000 };

		nanosleep(&ts, NULL);	/* let vCPU 1 fall asleep: the wake path is measured */
		uint64_t s = ksync_cycles_begin();
		hosted_ipi_send(1, 1);
		while (atomic_load_explicit(&answers, memory_order_acquire) == before)
			hosted_poll();
		if (i >= 0)
			batch_ticks[i] = ksync_cycles_end() - s;
	}
	empty_pairs();
	ksync_prim_emit("hosted_ipi_round_trip",
			"mailbox IPI to an idle vCPU (signal wake) and its mailbox answer",
			batch_ticks, SAMPLES, 1, empty_ticks, SAMPLES);
	note_ns("hosted_ipi_round_trip");
	atomic_store(&phase, 2);
	hosted_ipi_send(1, 2);
}

int main(void)
{
	const char *source;
	char model[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	hz = tsc_hz(&source);
	cpu_model(model, sizeof(model));
	ksync_printf("KSYNC {\"kind\":\"hosted_boot\",\"tsc_hz\":%llu,\"tsc_source\":\"%s\","
		     "\"cpu_model\":\"%s\",\"cpus\":%ld}\n",
		     (unsigned long long)hz, source, model, sysconf(_SC_NPROCESSORS_ONLN));
	ksync_printf("ktap: KTAP version 1\n");
	ksync_printf("ktap: 1..1\n");
	hosted_ipi_set_handler(on_ipi);
	hosted_start(2, vcpu);
	ksync_printf("ktap: # environment: hosted, %s, %s%s; unit: TSC ticks\n", model,
		     hosted_sched_label(), hosted_oversubscribed() ? ", oversubscribed" : "");
	ksync_printf("ktap: ok 1 hosted_port_costs\n");
	return 0;
}
