/*
 * arch/hosted/kport.c - the out-of-line hooks of kernel/include/arch_if.h for the kernel
 * running as a Linux process (issue 9 item 3; DESIGN.md "Hosted port"; the model of each
 * x86 name is in docs/hosted-port.md, "The kernel on the hosted port").
 *
 * The x86 names keep their contracts over the runtime (runtime.c):
 *   - vectors: arch_set_handler fills a 256-entry table; every delivery (a source signal,
 *     a mailbox IPI, a held vector released by the soft priority class) dispatches
 *     through it with a struct trapframe the kernel only hands to arch_frame_irqs_off.
 *   - ISA irqs 0..15: the lines with a runtime source (kport_isa_src: PIT 0, RTC 8,
 *     ATA 14, COM1 4, COM2 3, keyboard 1, secondary IDE 15) arrive as that source's
 *     real-time signal on the BSP (vCPU 0), where ISA lines deliver. Each line is routed
 *     "via the 8259A" (vector 0x20+irq, masked by the IMR model) or "via the IOAPIC" (a
 *     given vector, masked by intc_mask), or unrouted (masked). A masked line is its
 *     signal blocked with pthread_sigmask on the BSP, so the host holds a raise like an
 *     IRR bit (the x86 IOAPIC drops an edge on a masked pin; here it is held, which is
 *     the 8259A's behaviour). Only lines whose blocked state changes cost a system call.
 *   - the clock: runtime source 0, the per-vCPU timer_create timer; its vector is the one
 *     last armed on that vCPU. Masking it is blocking its signal (a system call, as the
 *     x86 LVT write is a controller write); an expiry in masked time is held by the host
 *     and delivered at the unmask, which reports it (the LAPIC's re-raise).
 *   - the task priority (CR8): a per-vCPU soft class; a vector whose class (vector >> 4)
 *     is <= the class is held in a per-vCPU set and released when the class drops, as a
 *     self-IPI (delivered when IRQs are on).
 *   - IPIs and cross-CPU calls: the runtime's mailbox (IPI_CALL, IPI_VEC bits) plus a
 *     per-vCPU set of pending vectors; the target takes them at its next irq enable,
 *     spin-wait step (arch_cpu_relax), or idle wake, with IRQs off like an IPI handler.
 *
 * Shared state: `vectors` is written by arch_set_handler (before the source is unmasked,
 * as the contract says) and read by dispatch on any vCPU: fn/arg with release/acquire.
 * The ISA routing (route, apic_vec, apic_masked, imr, blocked, in_service) is BSP-only,
 * changed with IRQs off (the contract: "all with IRQs off on the caller", from the BSP).
 * Per-vCPU arrays (clock_vec, held, tpr) are written by their own vCPU and its handlers
 * only; vec_pending and calls are cross-vCPU atomics with the orderings named there.
 */
#define _GNU_SOURCE
#include "kernel.h"
#include "boot.h"
#include "kport.h"
#include "hosted.h"
#include <ksync/errors.h>

#include <cpuid.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Static_assert(MAX_CPUS == HOSTED_MAX_CPUS, "one vCPU per kernel CPU slot");

_Thread_local unsigned hosted_kcpu __attribute__((tls_model("local-exec")));
_Thread_local volatile unsigned hosted_tpr;
_Thread_local volatile unsigned hosted_tpr_held;	/* owner + its handlers */
_Thread_local volatile uint8_t hosted_meas_flag;
bool arch_has_rdtscp;
volatile uint64_t vm_tables_installed, vm_tables_lost;	/* stay 0: no page tables here */
#ifdef __SANITIZE_THREAD__
unsigned long ksync__tsan_fence_word;	/* include/ksync/atomic.h: the fences TSan sees */
#endif

struct trapframe { unsigned vector, cpu; };

/* ---- time --------------------------------------------------------------------------- */
static uint64_t tsc_hz;			/* boot, main thread, before the vCPUs */
static unsigned ncores;			/* host cores allowed to the process; boot */
static const char *tsc_source = "clock_monotonic";

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* cpuid 0x15 when it names the crystal, else 50 ms against CLOCK_MONOTONIC. */
static void tsc_init(void)
{
	unsigned a, b, c, d;
	if (__get_cpuid_count(0x15, 0, &a, &b, &c, &d) && a && b && c) {
		tsc_hz = (uint64_t)c * b / a;
		tsc_source = "cpuid15";
		return;
	}
	uint64_t n0 = mono_ns(), t0 = arch_cycles_begin();
	while (mono_ns() - n0 < 50000000u)
		;
	uint64_t n1 = mono_ns(), t1 = arch_cycles_end();
	tsc_hz = (t1 - t0) * 1000000000u / (n1 - n0);
}

uint64_t arch_tsc_hz(void) { return tsc_hz; }
uint64_t hosted_tsc_hz(void) { return tsc_hz; }

void arch_delay_us(uint64_t us)
{
	uint64_t end = arch_cycles() + us * tsc_hz / 1000000u;
	while ((int64_t)(arch_cycles() - end) < 0)
		arch_cpu_relax();
}

static uint64_t ticks_to_ns(uint64_t ticks)
{
	uint64_t ns = (uint64_t)((unsigned __int128)ticks * 1000000000u / tsc_hz);
	return ns ? ns : 1;
}

/* ---- vectors and dispatch ----------------------------------------------------------- */
static struct { irq_handler_t fn; void *arg; } vectors[256];
static uint64_t strays;			/* deliveries without a handler: atomic add */
/* vectors held by the soft priority class, per vCPU (owner and its handlers) */
static uint64_t held[MAX_CPUS][4];
/* vectors sent to a vCPU (arch_send_ipi, released held ones): any thread ORs (release,
 * after the sender's data), the owner takes them by exchange (acquire) */
static uint64_t vec_pending[MAX_CPUS][4];
#define IPI_CALL 1u
#define IPI_VEC 2u

void arch_set_handler(unsigned vector, irq_handler_t fn, void *arg)
{
	if (vector >= 256)
		return;
	__atomic_store_n(&vectors[vector].arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&vectors[vector].fn, fn, __ATOMIC_RELEASE);	/* arg before fn */
}

/* One delivery of `vector` on this vCPU (IRQs off: in a handler or a replay). */
static void dispatch(unsigned vector)
{
	unsigned cpu = hosted_kcpu;
	if ((vector >> 4) <= hosted_tpr) {	/* held by the priority class, like the IRR */
		held[cpu][vector / 64] |= 1ull << (vector % 64);
		hosted_tpr_held = 1;
		return;
	}
	irq_handler_t fn = __atomic_load_n(&vectors[vector].fn, __ATOMIC_ACQUIRE);
	if (!fn) {
		__atomic_fetch_add(&strays, 1, __ATOMIC_RELAXED);
		return;
	}
	struct trapframe tf = { vector, cpu };
	fn(&tf, __atomic_load_n(&vectors[vector].arg, __ATOMIC_RELAXED));
}

void arch_frame_irqs_off(struct trapframe *tf)
{
	(void)tf;
	hosted_trap_resume_masked();
}

/* The class dropped: what it held and no longer holds is re-sent to this vCPU as
 * vectors (delivered at once if IRQs are on, else at the next enable). */
void hosted_tpr_lowered(void)
{
	unsigned cpu = hosted_kcpu, cls = hosted_tpr;
	bool any = false;
	irqkey_t k = arch_irq_save();
	hosted_tpr_held = 0;
	for (unsigned w = 0; w < 4; w++) {
		uint64_t runnable = 0;
		for (uint64_t b = held[cpu][w]; b; b &= b - 1) {
			unsigned v = w * 64 + (unsigned)__builtin_ctzll(b);
			if ((v >> 4) > cls)
				runnable |= 1ull << (v % 64);
		}
		if (held[cpu][w] & ~runnable)
			hosted_tpr_held = 1;	/* still some the class holds */
		if (runnable) {
			held[cpu][w] &= ~runnable;
			__atomic_fetch_or(&vec_pending[cpu][w], runnable, __ATOMIC_RELEASE);
			any = true;
		}
	}
	if (any)
		hosted_ipi_send(cpu, IPI_VEC);
	arch_irq_restore(k);
}

/* ---- ISA lines (BSP) ------------------------------------------------------------------ */
const int8_t kport_isa_src[16] = {
	[0] = 1, [1] = 6, [2] = -1, [3] = 5, [4] = 4, [5] = -1, [6] = -1, [7] = -1,
	[8] = 2, [9] = -1, [10] = -1, [11] = -1, [12] = -1, [13] = -1, [14] = 3, [15] = 7,
};
static int8_t src_isa[HOSTED_NSRC] = { -1, -1, -1, -1, -1, -1, -1, -1 };

enum route { ROUTE_NONE, ROUTE_PIC, ROUTE_APIC };
static enum route route[16];		/* BSP, IRQs off */
static uint8_t apic_vec[16];
static uint16_t apic_masked = 0xffff;	/* intc_mask state per line */
static uint16_t imr = 0xffff;		/* the 8259A model's IMR */
static uint16_t blocked;		/* lines whose signal is blocked on the BSP */
static uint16_t in_service;		/* ISR bits of the 8259A model */
static uint64_t isa_strays;

static bool line_masked(unsigned irq)
{
	switch (route[irq]) {
	case ROUTE_PIC: return imr >> irq & 1;
	case ROUTE_APIC: return apic_masked >> irq & 1;
	default: return true;
	}
}

/* Make the BSP's signal mask match the routing in one "IMR write": the changed lines'
 * signals are blocked with one pthread_sigmask and unblocked with another (none when
 * nothing changed), as the 8259A takes one OCW1 for all its lines. Called on the BSP (the
 * contract's callers are); elsewhere only the model changes and the BSP applies it at its
 * next routing change. */
static void lines_apply(void)
{
	if (hosted_kcpu != 0)
		return;
	uint32_t on = 0, off = 0;
	for (unsigned irq = 0; irq < 16; irq++) {
		int src = kport_isa_src[irq];
		if (src < 0)
			continue;
		bool want = line_masked(irq), is = blocked >> irq & 1;
		if (want == is)
			continue;
		if (want) {
			on |= 1u << src;
			blocked |= (uint16_t)(1u << irq);
		} else {
			off |= 1u << src;
			blocked &= (uint16_t)~(1u << irq);
		}
	}
	hosted_source_mask_set(on, off);
}

static void on_isa(unsigned src, void *arg)
{
	(void)arg;
	int irq = src < HOSTED_NSRC ? src_isa[src] : -1;
	if (irq < 0 || route[irq] == ROUTE_NONE) {
		__atomic_fetch_add(&isa_strays, 1, __ATOMIC_RELAXED);
		return;
	}
	if (route[irq] == ROUTE_PIC) {
		in_service |= (uint16_t)(1u << irq);
		dispatch(0x20 + (unsigned)irq);
	} else {
		dispatch(apic_vec[irq]);
	}
}

void hosted_isa_raise(unsigned irq)
{
	if (irq < 16 && kport_isa_src[irq] >= 0)
		hosted_source_raise((unsigned)kport_isa_src[irq], 0);
}

void arch_isa_route_pic(unsigned irq)
{
	if (irq >= 16)
		return;
	route[irq] = ROUTE_PIC;
	imr |= (uint16_t)(1u << irq);	/* masked in the IMR until arch_pic_write_mask */
	lines_apply();
}

void arch_isa_route_apic(unsigned irq, unsigned vector)
{
	if (irq >= 16)
		return;
	route[irq] = ROUTE_APIC;
	apic_vec[irq] = (uint8_t)vector;
	apic_masked &= (uint16_t)~(1u << irq);
	imr |= (uint16_t)(1u << irq);
	lines_apply();
}

void arch_isa_unroute(unsigned irq)
{
	if (irq >= 16)
		return;
	route[irq] = ROUTE_NONE;
	apic_masked |= (uint16_t)(1u << irq);
	imr |= (uint16_t)(1u << irq);
	lines_apply();
}

void arch_pic_write_mask(uint16_t m)
{
	imr = m;
	lines_apply();
}

uint16_t arch_pic_mask_shadow(void) { return imr; }
void arch_pic_eoi(unsigned irq) { if (irq < 16) in_service &= (uint16_t)~(1u << irq); }
bool arch_pic_in_service(unsigned irq) { return irq < 16 && (in_service >> irq & 1); }
void arch_lapic_eoi(void) { }	/* a signal has no in-service state */

/* The "IOAPIC" view (intc_*): lines routed to vector 0x20 + irq. */
unsigned intc_vector(unsigned irq) { return 0x20 + irq; }

void intc_mask(unsigned irq)
{
	if (irq >= 16)
		return;
	irqkey_t k = arch_irq_save();
	apic_masked |= (uint16_t)(1u << irq);
	lines_apply();
	arch_irq_restore(k);
}

void intc_unmask(unsigned irq)
{
	if (irq >= 16)
		return;
	irqkey_t k = arch_irq_save();
	if (route[irq] != ROUTE_APIC) {
		route[irq] = ROUTE_APIC;
		apic_vec[irq] = (uint8_t)intc_vector(irq);
	}
	apic_masked &= (uint16_t)~(1u << irq);
	lines_apply();
	arch_irq_restore(k);
}

void intc_eoi(unsigned irq) { (void)irq; }

/* ---- the per-vCPU clock --------------------------------------------------------------- */
static unsigned clock_vec[MAX_CPUS];	/* owner vCPU */
static bool clock_used[MAX_CPUS];
/* The clock is armed (owner vCPU and its handlers): a tick that arrives after a stop is
 * dropped, as a stopped LAPIC timer raises nothing. The plain builds see such a tick only
 * when it was already queued at the stop; the TSan build also when ThreadSanitizer kept
 * the signal with a fiber and delivers it whenever that fiber runs again - arbitrarily
 * late, into a clock source since disestablished (the scheduler tests' TSan reports). */
static bool clock_live[MAX_CPUS];

static void on_clock(unsigned src, void *arg)
{
	(void)src; (void)arg;
	unsigned v = clock_vec[hosted_kcpu];
	if (v && clock_live[hosted_kcpu])
		dispatch(v);
}

static void clock_set(unsigned vector, uint64_t ns, bool periodic)
{
	unsigned cpu = hosted_kcpu;
	clock_vec[cpu] = vector;
	clock_live[cpu] = ns != 0;
	if (!ns && !clock_used[cpu])
		return;
	clock_used[cpu] = true;
	hosted_clock_start(ns, periodic);	/* ns == 0 disarms */
}

void arch_clock_arm(unsigned vector, uint64_t ticks) { clock_set(vector, ticks_to_ns(ticks), false); }
void arch_clock_stop(void) { clock_set(clock_vec[hosted_kcpu], 0, false); }
void arch_clock_mask(void) { hosted_source_mask(HOSTED_SRC_CLOCK); }

/* The host held an expiry that fell in masked time (a pending signal): the unmask
 * delivers it (when IRQs are on), which is the LAPIC port's re-raise. */
bool arch_clock_unmask(void)
{
	bool held_exp = hosted_source_held(HOSTED_SRC_CLOCK);
	hosted_source_unmask(HOSTED_SRC_CLOCK);
	return held_exp;
}

void arch_timer_periodic(unsigned vector, unsigned hz)
{
	clock_set(vector, hz ? 1000000000u / hz : 0, true);
}

void arch_timer_oneshot(unsigned vector, uint64_t us)
{
	clock_set(vector, us * 1000u, false);
}

uint64_t arch_timer_hz(void) { return 1000000000u; }	/* the POSIX timer counts ns */

/* ---- CPUs, IPIs, calls ---------------------------------------------------------------- */
struct call_box {
	/* 0 free, 1 being filled, 2 ready: CAS 0->1 by the caller (acquire), store 2 after
	 * fn/arg (release); the callee acquires 2, runs fn, stores 0 (release) */
	int state;
	void (*fn)(void *);
	void *arg;
} __attribute__((aligned(64)));
static struct call_box calls[MAX_CPUS];

unsigned arch_ncpus(void) { return hosted_ncpus(); }

static void on_ipi(unsigned cpu, uint32_t bits)
{
	if (bits & IPI_CALL) {
		struct call_box *b = &calls[cpu];
		if (__atomic_load_n(&b->state, __ATOMIC_ACQUIRE) == 2) {
			b->fn(b->arg);
			__atomic_store_n(&b->state, 0, __ATOMIC_RELEASE);
		}
	}
	if (bits & IPI_VEC) {
		for (unsigned w = 0; w < 4; w++) {
			uint64_t x = __atomic_exchange_n(&vec_pending[cpu][w], 0, __ATOMIC_ACQUIRE);
			for (; x; x &= x - 1)
				dispatch(w * 64 + (unsigned)__builtin_ctzll(x));
		}
	}
}

void arch_send_ipi(unsigned cpu, unsigned vector)
{
	if (cpu >= hosted_ncpus() || vector >= 256)
		return;
	__atomic_fetch_or(&vec_pending[cpu][vector / 64], 1ull << (vector % 64), __ATOMIC_RELEASE);
	hosted_ipi_send(cpu, IPI_VEC);
	if (cpu == hosted_kcpu && arch_irq_enabled())
		hosted_poll();		/* a self-IPI with IRQs on is taken at once */
}

void arch_self_ipi(unsigned vector) { arch_send_ipi(hosted_kcpu, vector); }

void arch_call_post(unsigned cpu, void (*fn)(void *), void *arg)
{
	KASSERT(cpu < hosted_ncpus() && cpu != hosted_kcpu);
	struct call_box *b = &calls[cpu];
	int exp = 0;
	while (!__atomic_compare_exchange_n(&b->state, &exp, 1, false, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		exp = 0;
		arch_cpu_relax();
	}
	b->fn = fn;
	b->arg = arg;
	__atomic_store_n(&b->state, 2, __ATOMIC_RELEASE);
	hosted_ipi_send(cpu, IPI_CALL);
}

void arch_call_wait(unsigned cpu)
{
	while (__atomic_load_n(&calls[cpu].state, __ATOMIC_ACQUIRE) != 0)
		arch_cpu_relax();
}

void arch_call_on(unsigned cpu, void (*fn)(void *), void *arg)
{
	KASSERT(cpu < hosted_ncpus());
	if (cpu == hosted_kcpu) {
		irqkey_t k = arch_irq_save();
		fn(arg);
		arch_irq_restore(k);
		return;
	}
	KASSERT(arch_irq_enabled());	/* we keep serving calls aimed at us while we wait */
	arch_call_post(cpu, fn, arg);
	arch_call_wait(cpu);
}

/* IRQs on until nothing the soft flag or the mailbox holds is left, then off. Signals
 * the host holds for unblocked sources arrive as soon as IRQs are on. */
void arch_irq_window(void)
{
	arch_irq_enable();
	hosted_poll();
	arch_irq_disable();
}

/* ---- facts ------------------------------------------------------------------------------ */
static unsigned host_cores(void)
{
	cpu_set_t s;
	return sched_getaffinity(0, sizeof s, &s) == 0 ? (unsigned)CPU_COUNT(&s) : 0;
}

void arch_get_facts(struct arch_facts *f)
{
	unsigned a, b, c, d;
	memset(f, 0, sizeof *f);
	f->cpus_found = f->cpus_online = hosted_ncpus();
	f->tsc_hz = tsc_hz;
	f->tsc_source = tsc_source;
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 31))) {
		__cpuid(0x40000000, a, b, c, d);
		memcpy(f->hypervisor + 0, &b, 4);
		memcpy(f->hypervisor + 4, &c, 4);
		memcpy(f->hypervisor + 8, &d, 4);
	}
	if (__get_cpuid_max(0x80000000, NULL) >= 0x80000004) {
		for (unsigned l = 0; l < 3; l++) {
			unsigned r[4];
			__cpuid(0x80000002 + l, r[0], r[1], r[2], r[3]);
			memcpy(f->cpu_model + 16 * l, r, 16);
		}
	}
	char *m = f->cpu_model;
	while (*m == ' ')
		memmove(m, m + 1, strlen(m));
	for (size_t n = strlen(m); n && m[n - 1] == ' '; n--)
		m[n - 1] = 0;
	f->apic_mode = "none";
	f->platform_source = "hosted";
	f->lapic_timer_hz = arch_timer_hz();
	f->nioapic = 0;
	f->rdtscp = arch_has_rdtscp;
	f->port = ARCH_NAME;
	f->sched = hosted_sched_label();
	f->oversubscribed = hosted_oversubscribed();
	f->host_cores = ncores;
}

void arch_backtrace(void)
{
	void *frames[32];
	int n = backtrace(frames, 32);
	for (int i = 1; i < n; i++) {
		Dl_info info = { 0 };
		char line[256];
		int len;
		if (dladdr(frames[i], &info) && info.dli_sname)
			len = snprintf(line, sizeof line, "  bt: %p %s+0x%lx\n", frames[i], info.dli_sname,
				       (unsigned long)((char *)frames[i] - (char *)info.dli_saddr));
		else
			len = snprintf(line, sizeof line, "  bt: %p\n", frames[i]);
		if (len > 0)
			arch_console_write(line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
	}
}

/* ---- console, exit, crash, vm ------------------------------------------------------------ */
/* The watchdog's "last activity" of each vCPU: the start of its last console line, in
 * one of 4 rotating buffers (the watchdog reads the newest; it only reports once a
 * vCPU has stopped writing). */
static char activity[MAX_CPUS][4][80];
static unsigned activity_slot[MAX_CPUS];

void arch_console_write(const char *s, size_t n)
{
	unsigned cpu = hosted_kcpu;
	for (size_t off = 0; off < n;) {
		ssize_t w = write(1, s + off, n - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (cpu < MAX_CPUS && n > 1) {
		unsigned slot = (activity_slot[cpu] + 1) % 4;
		char *a = activity[cpu][slot];
		size_t k = 0;
		memcpy(a, "console: ", 9);
		for (; k < n && k < sizeof activity[0][0] - 10 && s[k] != '\n'; k++)
			a[9 + k] = s[k];
		a[9 + k] = 0;
		activity_slot[cpu] = slot;
		hosted_activity(a);
	}
}

/* An idle vCPU polls for 30 us before it sleeps in the host (arch_if.h): a wakeup in that
 * window is a store the poller sees instead of a signal that must wake a sleeping host
 * thread (15-25 us measured). Only when every vCPU has a core of its own: oversubscribed,
 * a polling vCPU would take the core from one with work. */
bool arch_spin_yield_host(void)
{
	if (!hosted_oversubscribed())
		return false;
	sched_yield();	/* this vCPU thread to the back of its host run queue */
	return true;
}

uint64_t arch_idle_poll_ticks(void)
{
	return hosted_oversubscribed() ? 0 : tsc_hz / 1000000u * 30u;
}

void arch_exit(bool pass)
{
	hosted_exit(pass);
}

void arch_win_reset(void) {}
bool arch_win_read(struct arch_win *out) { (void)out; return false; }

void arch_halt_forever(void)
{
	hosted_activity("halted (arch_halt_forever)");
	hosted_halted();
	for (;;)
		pause();	/* a signal the soft flag holds ends one pause; no progress */
}

int arch_crash_undefined_insn(void)
{
	__asm__ volatile("ud2");	/* SIGILL -> the runtime's panic */
	return KSYNC_ENOTSUP;
}

int arch_crash_triple(void) { return KSYNC_ENOTSUP; }	/* no machine to reset */
/* no console UART: the hosted port has no user space, so no interactive shell */
int arch_console_rx_enable(bool on) { (void)on; return KSYNC_ENOTSUP; }
int arch_console_rx_byte(void) { return -1; }

int arch_vm_map(uint64_t va, uint64_t pa, bool writable)
{
	(void)va; (void)pa; (void)writable;
	return KSYNC_ENOTSUP;
}

int arch_vm_unmap(uint64_t va, uint64_t *old_pa)
{
	(void)va; (void)old_pa;
	return KSYNC_ENOTSUP;
}

uint64_t arch_vm_translate(uint64_t va) { (void)va; return 0; }

/* ---- measurement helpers (arch_impl.h) ------------------------------------------------- */
void hosted_meas_sigmask_pair(void)
{
	sigset_t s, old;
	sigemptyset(&s);
	sigaddset(&s, SIGRTMIN + 1 + HOSTED_NSRC - 1);	/* ISA 15's source */
	pthread_sigmask(SIG_BLOCK, &s, &old);		/* "all masked" */
	pthread_sigmask(SIG_SETMASK, &old, NULL);	/* back to the saved mask */
}

void hosted_meas_hard_pair(void)
{
#if HOSTED_HARD_MASK
	hosted_irq_restore(hosted_irq_save());
#endif
}

/* ---- boot ------------------------------------------------------------------------------ */
struct boot_info kport_boot;		/* boot.c fills it before hosted_start */
const char *kport_disk_path = "";

void hosted_context_boot(void);	/* context.c: the FP/SIMD save format */

void kport_init(void)
{
	unsigned a, b, c, d;
	tsc_init();
	hosted_context_boot();
	hosted_fault_note_hook(kernel_fault_note);	/* the panic names thread + guard page */
	ncores = host_cores();
	arch_has_rdtscp = __get_cpuid(0x80000001, &a, &b, &c, &d) && (d & (1u << 27));
	for (unsigned irq = 0; irq < 16; irq++)
		if (kport_isa_src[irq] >= 0)
			src_isa[kport_isa_src[irq]] = (int8_t)irq;
	hosted_source_register(HOSTED_SRC_CLOCK, on_clock, NULL);
	for (unsigned s = 1; s < HOSTED_NSRC; s++)
		hosted_source_register(s, on_isa, NULL);
	hosted_ipi_set_handler(on_ipi);
}

void kport_entry(unsigned cpu)
{
	hosted_kcpu = cpu;
	if (cpu != 0)		/* an AP, IRQs on: the kernel's idle thread (it serves IPIs) */
		kernel_ap_entry();
	/* the BSP: every ISA line starts masked (unrouted), then the kernel's boot order */
	for (unsigned irq = 0; irq < 16; irq++)
		if (kport_isa_src[irq] >= 0) {
			hosted_source_mask((unsigned)kport_isa_src[irq]);
			blocked |= (uint16_t)(1u << irq);
		}
	kernel_entry(&kport_boot);
}
