/*
 * smp.c - application-processor start-up (INIT-SIPI-SIPI), per-CPU data through GS,
 * and cross-CPU calls by IPI.
 *
 * The BSP starts the APs one at a time through the trampoline at 0x8000 (ap_tramp.S).
 * Each AP loads its own GDT/TSS, the shared IDT, its LAPIC and FPU set-up, marks itself
 * online, enables IRQs and enters the kernel's kernel_ap_entry (its idle loop), which
 * serves VEC_CALL (run a function) and VEC_PING (count) from handlers while it waits.
 */
#include "kernel.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"

struct cpu cpus[MAX_CPUS];
static unsigned ncpus_found;
static uint8_t ap_stacks[MAX_CPUS][16384] __attribute__((aligned(16)));

extern const uint8_t ap_tramp_start[], ap_tramp_end[];
extern uint8_t ap_slot_cr3[], ap_slot_stack[], ap_slot_cpu[];
#define TRAMP_BASE 0x8000ul
/* the trampoline's copy, written through the direct map */
#define SLOT(sym) ((volatile uint64_t *)P2V(TRAMP_BASE + ((uintptr_t)(sym) - (uintptr_t)ap_tramp_start)))
extern uint64_t boot_pml4[512];

unsigned arch_ncpus(void)
{
	unsigned n = 0;
	for (unsigned i = 0; i < ncpus_found; i++)
		if (__atomic_load_n(&cpus[i].online, __ATOMIC_ACQUIRE))
			n++;
	return n;
}

unsigned arch_cpus_found(void) { return ncpus_found; }

void percpu_init(struct cpu *c, unsigned index)
{
	c->self = c;
	c->index = index;
	wrmsr(MSR_GS_BASE, (uint64_t)c);
}

static void call_handler(struct trapframe *tf, void *arg)
{
	(void)tf; (void)arg;
	struct cpu *c = this_cpu();
	lapic_eoi();
	/* acquire: pairs with the caller's release of call_pending=2; fn/arg are visible */
	if (__atomic_load_n(&c->call_pending, __ATOMIC_ACQUIRE) == 2) {
		c->call_fn(c->call_arg);
		/* release: fn's effects are visible to the waiting caller */
		__atomic_store_n(&c->call_pending, 0, __ATOMIC_RELEASE);
	}
}

static void ping_handler(struct trapframe *tf, void *arg)
{
	(void)tf; (void)arg;
	this_cpu()->ipi_count++;
	lapic_eoi();
}

static void timer_handler(struct trapframe *tf, void *arg)
{
	(void)tf; (void)arg;
	this_cpu()->timer_ticks++;
	lapic_eoi();
}

void arch_call_post(unsigned cpu, void (*fn)(void *), void *arg)
{
	KASSERT(cpu < ncpus_found && cpus[cpu].online && cpu != arch_cpu_id());
	struct cpu *t = &cpus[cpu];
	uint32_t exp = 0;
	/* acquire: we own the mailbox; the previous call's completion happened-before */
	while (!__atomic_compare_exchange_n(&t->call_pending, &exp, 1, false,
					    __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		exp = 0;
		arch_cpu_relax();
	}
	t->call_fn = fn;
	t->call_arg = arg;
	/* release: fn/arg before the "ready" state the handler acquires */
	__atomic_store_n(&t->call_pending, 2, __ATOMIC_RELEASE);
	arch_send_ipi(cpu, VEC_CALL);
}

void arch_call_wait(unsigned cpu)
{
	/* acquire: the handler's effects happen-before our return */
	while (__atomic_load_n(&cpus[cpu].call_pending, __ATOMIC_ACQUIRE) != 0)
		arch_cpu_relax();
}

void arch_call_on(unsigned cpu, void (*fn)(void *), void *arg)
{
	KASSERT(cpu < ncpus_found && cpus[cpu].online);
	if (cpu == arch_cpu_id()) {
		irqkey_t k = arch_irq_save();
		fn(arg);
		arch_irq_restore(k);
		return;
	}
	KASSERT(arch_irq_enabled());	/* we must keep serving calls aimed at us while we wait */
	arch_call_post(cpu, fn, arg);
	arch_call_wait(cpu);
}

void ap_entry64(struct cpu *c)
{
	percpu_init(c, c->index);
	gdt_init_cpu(c);
	idt_load();
	lapic_init_cpu();
	fpu_init_cpu();
	/* release: everything above is done before the BSP sees us online */
	__atomic_store_n(&c->online, true, __ATOMIC_RELEASE);
	/* The kernel's side from here (arch_if.h): this CPU's idle loop, later its idle
	 * thread. IRQs on first: VEC_CALL/VEC_PING are served by handlers while it waits. */
	arch_irq_enable();
	kernel_ap_entry();
}

static bool start_ap(unsigned i)
{
	struct cpu *c = &cpus[i];
	c->index = i;
	*SLOT(ap_slot_cr3) = read_cr3();
	*SLOT(ap_slot_stack) = (uint64_t)&ap_stacks[i][sizeof ap_stacks[i]];
	*SLOT(ap_slot_cpu) = (uint64_t)c;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* slots written before the IPIs go out */

	lapic_send(c->apic_id, 0x00004500);		/* INIT, assert */
	arch_delay_us(10000);
	for (int attempt = 0; attempt < 2; attempt++) {
		lapic_send(c->apic_id, 0x00004600 | (TRAMP_BASE >> 12));	/* STARTUP */
		uint64_t deadline = rdtsc() + arch_tsc_hz() / (attempt ? 1 : 5000);
		while ((int64_t)(rdtsc() - deadline) < 0)
			if (__atomic_load_n(&c->online, __ATOMIC_ACQUIRE))
				return true;
	}
	/* slow emulators: give it one more second */
	uint64_t deadline = rdtsc() + arch_tsc_hz();
	while ((int64_t)(rdtsc() - deadline) < 0)
		if (__atomic_load_n(&c->online, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

void smp_init(void)
{
	arch_set_handler(VEC_CALL, call_handler, NULL);
	arch_set_handler(VEC_PING, ping_handler, NULL);
	arch_set_handler(VEC_TIMER, timer_handler, NULL);

	uint32_t bsp = lapic_id();
	cpus[0].apic_id = bsp;
	cpus[0].online = true;
	ncpus_found = 1;
	for (unsigned i = 0; i < platform.ncpus && ncpus_found < MAX_CPUS; i++)
		if (platform.apic_ids[i] != bsp)
			cpus[ncpus_found++].apic_id = platform.apic_ids[i];

	size_t len = (size_t)(ap_tramp_end - ap_tramp_start);
	memcpy((void *)P2V(TRAMP_BASE), ap_tramp_start, len);
	for (unsigned i = 1; i < ncpus_found; i++)
		if (!start_ap(i))
			kprintf("ksync: CPU %u (APIC id %u) did not start\n", i, cpus[i].apic_id);
}

static void reload_cr3(void *arg)
{
	(void)arg;
	__asm__ volatile("mov %%cr3, %%rax; mov %%rax, %%cr3" ::: "rax", "memory");
}

/* Every AP is in the upper half now (start.c calls this after smp_init, IRQs on): the
 * boot identity map (PML4 slot 0, boot.S) served only boot.S and the trampolines, and
 * the low half belongs to processes. Removing it from the kernel's root makes a stray
 * low-address access fault in a kernel thread too, not only under a process's root.
 * Its entries were never global, so a CR3 write drops them from a TLB: every online CPU
 * reloads its CR3 (a cross-CPU call; each runs on the kernel's root at this point). */
void smp_drop_boot_identity(void)
{
	/* release: ordered before the calls below; the walker reads the entry itself */
	__atomic_store_n(&boot_pml4[0], 0, __ATOMIC_RELEASE);
	for (unsigned c = 0; c < ncpus_found; c++)
		if (__atomic_load_n(&cpus[c].online, __ATOMIC_ACQUIRE))
			arch_call_on(c, reload_cr3, NULL);
}

/* Idle CPUs wait at once (arch_if.h): under QEMU a polling vCPU takes host time from the
 * vCPUs that have work; on hardware the LAPIC IPI to a halted CPU is cheap enough. */
uint64_t arch_idle_poll_ticks(void) { return 0; }
/* the pause in the spin is the hint KVM's pause-loop exiting sees */
bool arch_spin_yield_host(void) { return false; }
