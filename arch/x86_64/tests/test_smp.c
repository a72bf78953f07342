/*
 * test_smp.c - every CPU the firmware lists is online, reaches its own per-CPU data
 * through GS, runs cross-CPU calls, and sends and receives IPIs that are all counted.
 */
#include "kernel.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"
#include <ksync/ktest.h>

unsigned arch_cpus_found(void);

KTEST(smp_all_cpus_online)
{
	KT_ASSERT_EQ(arch_ncpus(), arch_cpus_found());
	KT_ASSERT(arch_ncpus() >= 1);
	for (unsigned i = 0; i < arch_cpus_found(); i++)
		KT_EXPECT(cpus[i].online);
	kt_diag(kt, "%u CPUs online", arch_ncpus());
}

struct who { unsigned index; struct cpu *self; uint32_t apic; };

static void whoami(void *arg)
{
	struct who *w = arg;
	w->index = this_cpu_index();
	w->self = this_cpu();
	w->apic = lapic_id();
}

KTEST(smp_percpu_through_gs)
{
	for (unsigned i = 0; i < arch_ncpus(); i++) {
		struct who w = { 999, NULL, 0 };
		arch_call_on(i, whoami, &w);
		KT_EXPECT_EQ(w.index, i);
		KT_EXPECT(w.self == &cpus[i]);
		KT_EXPECT_EQ(w.apic, cpus[i].apic_id);
	}
}

static uint64_t wait_count(volatile uint64_t *c, uint64_t want)
{
	uint64_t deadline = arch_cycles() + 10 * arch_tsc_hz();	/* liveness bound, not a timing check */
	while (*c < want && (int64_t)(arch_cycles() - deadline) < 0)
		arch_cpu_relax();
	return *c;
}

#define PINGS 200

KTEST(smp_ipi_bsp_to_each_cpu_counted)
{
	if (arch_ncpus() < 2)
		KT_SKIP("needs 2 CPUs");
	for (unsigned i = 1; i < arch_ncpus(); i++) {
		uint64_t before = cpus[i].ipi_count;
		for (int n = 0; n < PINGS; n++) {
			arch_send_ipi(i, VEC_PING);
			/* one in flight at a time: a fixed IPI to a CPU whose IRR bit is
			 * already set merges with it, so wait for each to be counted */
			KT_ASSERT_EQ(wait_count(&cpus[i].ipi_count, before + n + 1), before + n + 1);
		}
	}
}

static void ping_bsp(void *arg)
{
	unsigned n = *(unsigned *)arg;
	for (unsigned k = 0; k < n; k++) {
		uint64_t want = cpus[0].ipi_count + 1;
		arch_send_ipi(0, VEC_PING);
		while (cpus[0].ipi_count < want)
			arch_cpu_relax();
	}
}

KTEST(smp_ipi_each_cpu_to_bsp_counted)
{
	if (arch_ncpus() < 2)
		KT_SKIP("needs 2 CPUs");
	unsigned n = 50;
	for (unsigned i = 1; i < arch_ncpus(); i++) {
		uint64_t before = cpus[0].ipi_count;
		arch_call_on(i, ping_bsp, &n);
		KT_EXPECT_EQ(cpus[0].ipi_count - before, n);
	}
}

static volatile uint64_t shared_counter;
static void bump(void *arg) { (void)arg; __atomic_fetch_add(&shared_counter, 1, __ATOMIC_RELAXED); }

KTEST(smp_cross_call_runs_on_every_cpu)
{
	shared_counter = 0;
	for (int round = 0; round < 20; round++)
		for (unsigned i = 0; i < arch_ncpus(); i++)
			arch_call_on(i, bump, NULL);
	KT_EXPECT_EQ(shared_counter, 20ull * arch_ncpus());
}

/* All CPUs hammer one counter with lock xadd: nothing lost. */
static volatile uint32_t go;
static volatile uint64_t hammered;
static volatile uint32_t finished;
static void hammer(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg;
	while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
		arch_cpu_relax();
	for (uint64_t i = 0; i < n; i++)
		__atomic_fetch_add(&hammered, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELEASE);
}

KTEST(smp_atomic_counter_all_cpus)
{
	if (arch_ncpus() < 2)
		KT_SKIP("needs 2 CPUs");
	/* Each AP runs hammer() from its call handler (IRQs off there) while the BSP runs
	 * it too: post every call, then release everyone at once. */
	const uint64_t per = 20000;
	hammered = 0;
	finished = 0;
	go = 0;
	unsigned n = arch_ncpus();
	for (unsigned i = 1; i < n; i++)
		arch_call_post(i, hammer, (void *)(uintptr_t)per);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	hammer((void *)(uintptr_t)per);
	uint64_t deadline = arch_cycles() + 30 * arch_tsc_hz();
	while (__atomic_load_n(&finished, __ATOMIC_ACQUIRE) < n && (int64_t)(arch_cycles() - deadline) < 0)
		arch_cpu_relax();
	KT_ASSERT_EQ(finished, n);
	KT_EXPECT_EQ(hammered, per * n);
	for (unsigned i = 1; i < n; i++)
		arch_call_wait(i);
}
