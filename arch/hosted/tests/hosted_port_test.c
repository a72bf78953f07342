/*
 * arch/hosted/tests/hosted_port_test.c - behaviour tests of the hosted port's runtime,
 * one scenario per run: `hosted_port_test <scenario> [n]`. Driven by
 * tests/test_hosted_port.py. Each scenario prints "check <name> <got> <want>" lines and
 * ends with hosted_exit(all checks held); fault and deadlock end in the panic / watchdog.
 */
#define _GNU_SOURCE
#include "../hosted.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static bool all_ok = true;
static const char *scenario;
static unsigned long arg_n;

static void check(const char *name, unsigned long got, unsigned long want)
{
	hosted_printf("check %s %lu %lu %s\n", name, got, want, got == want ? "ok" : "FAIL");
	if (got != want)
		all_ok = false;
}

/* Deliveries per vCPU and source: each handler runs on its own vCPU's thread, but the
 * main thread reads them after the join, so they are atomics (relaxed: the join orders). */
static _Atomic unsigned long hits[HOSTED_MAX_CPUS][HOSTED_NSRC];
static _Atomic unsigned long ipis[HOSTED_MAX_CPUS];

static void count(unsigned src, void *arg)
{
	(void)arg;
	atomic_fetch_add_explicit(&hits[hosted_cpu_id()][src], 1, memory_order_relaxed);
}

static unsigned long hit(unsigned cpu, unsigned src)
{
	return atomic_load_explicit(&hits[cpu][src], memory_order_relaxed);
}

/* soft masking: a source raised while masked is held, then replayed exactly once */
static void run_mask(unsigned cpu)
{
	unsigned long k = hosted_irq_save();
	check("mask.key_was_enabled", k, 0);
	hosted_source_raise(1, cpu);	/* to self: arrives before tgkill returns */
	/* A second raise: the soft mask coalesces it with the first (one pending bit, like
	 * an IRR bit); the hard mask leaves both queued in the host (RT signals queue). */
	hosted_source_raise(1, cpu);
	const unsigned long held = HOSTED_HARD_MASK ? 2 : 1;
	check("mask.held", hit(cpu, 1), 0);
	check("mask.enabled_inside", hosted_irq_enabled(), 0);
	hosted_irq_restore(k);
	check("mask.replayed_once", hit(cpu, 1), held);
	hosted_source_raise(1, cpu);
	check("mask.unmasked_direct", hit(cpu, 1), held + 1);
	hosted_irq_restore(0);
	check("mask.no_extra_replay", hit(cpu, 1), held + 1);
}

static void run_nest(unsigned cpu)
{
	unsigned long k1 = hosted_irq_save();
	unsigned long k2 = hosted_irq_save();
	check("nest.inner_key", k2 != 0, 1);
	hosted_source_raise(2, cpu);
	hosted_irq_restore(k2);
	check("nest.held_after_inner", hit(cpu, 2), 0);
	check("nest.still_disabled", hosted_irq_enabled(), 0);
	hosted_irq_restore(k1);
	check("nest.replayed_after_outer", hit(cpu, 2), 1);
	check("nest.enabled", hosted_irq_enabled(), 1);
}

/* masking at the controller: the host holds the signal, unmask delivers it */
static void run_controller(unsigned cpu)
{
	hosted_source_mask(3);
	hosted_source_raise(3, cpu);
	check("ctl.held", hit(cpu, 3), 0);
	hosted_source_unmask(3);
	check("ctl.delivered_once", hit(cpu, 3), 1);

	/* held by the on-chip mask, then masked at the controller before the enable: an
	 * 8259A keeps it in its IRR until unmasked; the enable must not deliver it */
	unsigned long k = hosted_irq_save();
	hosted_source_raise(3, cpu);
	hosted_source_mask(3);
	hosted_irq_restore(k);
	check("ctl.held_across_enable", hit(cpu, 3), 1);
	hosted_source_unmask(3);
	check("ctl.delivered_at_unmask", hit(cpu, 3), 2);

	/* a handler unmasks a source whose request waits: it is taken when the handler
	 * returns to this enabled context (x86 iret), with no enable of this code after */
	hosted_source_mask(5);
	hosted_source_raise(5, cpu);
	check("ctl.held5", hit(cpu, 5), 0);
	hosted_source_raise(4, cpu);	/* its handler unmasks 5 */
	/* read both before check(): its console write saves and restores the mask */
	unsigned long ran4 = hit(cpu, 4), took5 = hit(cpu, 5);
	check("ctl.handler_ran", ran4, 1);
	check("ctl.taken_at_handler_return", took5, 1);
}

static void count_and_unmask5(unsigned src, void *arg)
{
	count(src, arg);
	hosted_source_unmask(5);
}

static const unsigned clock_ticks = 20;

static void run_clock(unsigned cpu)
{
	hosted_clock_start(1000000, true);	/* 1 ms */
	while (hit(cpu, HOSTED_SRC_CLOCK) < clock_ticks) {
		hosted_activity("waiting for clock ticks");
		hosted_idle();
	}
	hosted_clock_stop();
	/* one-shot: exactly one tick */
	unsigned long before = hit(cpu, HOSTED_SRC_CLOCK);
	hosted_clock_start(2000000, false);
	while (hit(cpu, HOSTED_SRC_CLOCK) == before)
		hosted_idle();
	struct timespec ts = { 0, 20000000 };	/* 10 periods of nothing */
	nanosleep(&ts, NULL);
	hosted_poll();
	check("clock.oneshot_once", hit(cpu, HOSTED_SRC_CLOCK) - before, 1);
	hosted_clock_stop();
}

static atomic_bool stop;

static void on_ipi(unsigned cpu, uint32_t bits)
{
	atomic_fetch_add_explicit(&ipis[cpu], bits & 1, memory_order_release);	/* bit 1: a send */
}

/* vCPU 0 sends arg_n IPIs to vCPU n-1, one at a time (each waits for its delivery);
 * the others idle until told to stop. */
static void run_ipi(unsigned cpu)
{
	unsigned last = hosted_ncpus() - 1;

	if (cpu == 0) {
		for (unsigned long i = 0; i < arg_n; i++) {
			hosted_ipi_send(last, 1);
			while (atomic_load_explicit(&ipis[last], memory_order_acquire) != i + 1)
				hosted_activity("waiting for IPI delivery");
		}
		atomic_store(&stop, true);
		for (unsigned c = 1; c < hosted_ncpus(); c++)
			hosted_ipi_send(c, 2);	/* a wake-up for whoever sleeps */
	} else {
		while (!atomic_load(&stop))
			hosted_idle();
	}
}

static _Atomic unsigned ran;

static void run_oversub(unsigned cpu)
{
	(void)cpu;
	atomic_fetch_add(&ran, 1);
	while (atomic_load(&ran) < hosted_ncpus())
		hosted_activity("waiting for the others");	/* all must be scheduled */
}

static volatile char *bad_page;

__attribute__((noinline)) void fault_here(void)
{
	bad_page[16] = 1;
}

static void run_fault(unsigned cpu)
{
	if (cpu == hosted_ncpus() - 1)
		fault_here();
}

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;

static void run_deadlock(unsigned cpu)
{
	pthread_mutex_t *first = cpu ? &lock_b : &lock_a, *second = cpu ? &lock_a : &lock_b;

	pthread_mutex_lock(first);
	pthread_barrier_wait(&both);
	hosted_activity(cpu ? "vCPU 1 waits for lock A holding B" :
			      "vCPU 0 waits for lock B holding A");
	pthread_mutex_lock(second);	/* never returns */
	pthread_mutex_unlock(second);
	pthread_mutex_unlock(first);
}

static void run_arena(unsigned cpu)
{
	(void)cpu;
	void *p[8];

	check("arena.init", hosted_arena_init(8 * 4096), 0);
	for (int i = 0; i < 8; i++) {
		p[i] = hosted_page_alloc();
		memset(p[i], i, 4096);
		check("arena.aligned", (uintptr_t)p[i] % 4096, 0);
	}
	check("arena.exhausted", hosted_page_alloc() == NULL, 1);
	for (int i = 0; i < 8; i++)
		hosted_page_free(p[i]);
	check("arena.all_free", hosted_pages_free(), 8);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(unsigned); unsigned cpus; } s[] = {
		{ "mask", run_mask, 1 }, { "nest", run_nest, 1 },
		{ "controller", run_controller, 1 }, { "clock", run_clock, 0 },
		{ "ipi", run_ipi, 0 }, { "oversub", run_oversub, 0 },
		{ "fault", run_fault, 2 }, { "deadlock", run_deadlock, 2 },
		{ "arena", run_arena, 1 },
	};

	if (argc < 2)
		goto usage;
	scenario = argv[1];
	arg_n = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		if (strcmp(s[i].name, scenario))
			continue;
		unsigned n = s[i].cpus;
		if (!strcmp(scenario, "clock"))
			n = (unsigned)arg_n;
		if (!strcmp(scenario, "ipi")) {
			n = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 2;
		}
		if (!strcmp(scenario, "oversub")) {
			cpu_set_t set;
			sched_getaffinity(0, sizeof(set), &set);
			n = (unsigned)CPU_COUNT(&set) + 2;	/* 4 on a 2-core machine */
		}
		if (!strcmp(scenario, "fault")) {
			bad_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			hosted_printf("fault address will be %p\n", (void *)(bad_page + 16));
		}
		if (!strcmp(scenario, "deadlock")) {
			pthread_barrier_init(&both, NULL, 2);
			hosted_watchdog(1);
		}
		/* registered before any vCPU runs: the runtime's contract (sources[] is
		 * published to the vCPUs by their creation) */
		for (unsigned src = 0; src < HOSTED_NSRC; src++)
			hosted_source_register(src, src == 4 ? count_and_unmask5 : count, NULL);
		hosted_ipi_set_handler(on_ipi);
		hosted_start(n, s[i].fn);
		if (!strcmp(scenario, "clock")) {
			for (unsigned c = 0; c < n; c++)
				check("clock.ticks_reached",
				      hit(c, HOSTED_SRC_CLOCK) >= clock_ticks + 1, 1);
			check("clock.misrouted", hosted_clock_misrouted(), 0);
		}
		if (!strcmp(scenario, "ipi"))
			check("ipi.delivered_once_per_send",
			      atomic_load(&ipis[n - 1]), arg_n);
		if (!strcmp(scenario, "oversub")) {
			check("oversub.flag", hosted_oversubscribed(), 1);
			check("oversub.all_ran", atomic_load(&ran), n);
		}
		hosted_exit(all_ok);
	}
usage:
	fprintf(stderr, "usage: hosted_port_test mask|nest|controller|clock N|ipi COUNT [CPUS]|"
		"oversub|fault|deadlock|arena\n");
	return 2;
}
