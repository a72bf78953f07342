/*
 * main.c - the portable kernel's entry (kernel_entry, called once by the port): set up
 * memory, report the machine, then run the mode the
 * command line asks for (protocol.md §2): the registered tests (KTAP), the experiments
 * (KTAP + KSYNC lines), or idle (for gdb). Deliberate crashes (crash=...) exist so the
 * host's tests can prove that panics, hangs and triple faults are reported.
 */
#include "kernel.h"
#include "boot.h"
#include "mm.h"
#include "monitor.h"
#include "hlock.h"
#include "experiment.h"
#include "spl.h"
#include "thread.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>

void cmdline_set(const char *s);
/* kernel/proc/urun.c on ports with a user space; the hosted port has none (weak: absent) */
__attribute__((noreturn, weak)) void urun_main(struct boot_info *bi);

/* Copy s into a JSON string body: quotes, backslashes and control bytes become '?'. */
static const char *json_safe(const char *s, char *buf, size_t n)
{
	size_t i = 0;
	for (; s[i] && i + 1 < n; i++)
		buf[i] = (s[i] == '"' || s[i] == '\\' || (unsigned char)s[i] < 0x20) ? '?' : s[i];
	buf[i] = 0;
	return buf;
}

static void report_boot(struct boot_info *bi)
{
	struct arch_facts f;
	char model[64], cmd[256];
	arch_get_facts(&f);
	kprintf("ksync: %u of %u CPUs online (%s), %s, %u IOAPIC(s), TSC %lu.%03lu MHz (%s), "
		"LAPIC timer %lu kHz, %lu MiB RAM\n",
		f.cpus_online, f.cpus_found, f.platform_source, f.apic_mode, f.nioapic,
		f.tsc_hz / 1000000, f.tsc_hz / 1000 % 1000, f.tsc_source,
		f.lapic_timer_hz / 1000, bi->mem_kib >> 10);
	/* "cpus" means CPUs online everywhere in the results (irq_scheme too) */
	kprintf("KSYNC {\"kind\":\"boot\",\"cpus\":%u,\"cpus_online\":%u,\"cpus_found\":%u,\"tsc_hz\":%lu,"
		"\"tsc_source\":\"%s\",\"hypervisor\":\"%s\",\"cpu_model\":\"%s\",\"x2apic\":%s,"
		"\"apic\":\"%s\",\"platform\":\"%s\",\"ioapics\":%u,\"lapic_timer_hz\":%lu,\"rdtscp\":%s,"
		"\"mem_kib\":%lu,\"port\":\"%s\",\"sched\":\"%s\",\"oversubscribed\":%s,"
		"\"host_cores\":%u,\"cmdline\":\"%s\"}\n",
		f.cpus_online, f.cpus_online, f.cpus_found, f.tsc_hz, f.tsc_source, f.hypervisor,
		json_safe(f.cpu_model, model, sizeof model),
		f.apic_mode[0] == 'x' && f.apic_mode[1] == '2' ? "true" : "false",
		f.apic_mode, f.platform_source, f.nioapic, f.lapic_timer_hz,
		f.rdtscp ? "true" : "false", bi->mem_kib, f.port, f.sched,
		f.oversubscribed ? "true" : "false", f.host_cores,
		json_safe(bi->cmdline, cmd, sizeof cmd));
}

static volatile int crash_sink;

/* crash=stack: a thread recurses until it runs into its stack's guard page (x86_64: an
 * unmapped page; hosted: PROT_NONE); the fault's panic must name the thread. */
static volatile int recurse_on = 1;	/* always 1: hides the recursion's end from gcc */
static int recurse(int depth)
{
	volatile char pad[512];
	pad[0] = (char)depth;
	if (!recurse_on)
		return 0;
	return recurse(depth + 1) + pad[0];	/* not a tail call: every frame stays */
}

static void overflow_fn(void *arg)
{
	(void)arg;
	crash_sink = recurse(0);
}

static void crash_stack(void)
{
	struct thread *t;
	int rc = sched_start(NULL);
	if (rc == KSYNC_OK)
		rc = thread_create(&t, overflow_fn, NULL, 0, SCHED_AFFINITY_ANY, "overflow", 0);
	if (rc == KSYNC_OK)
		rc = thread_join(t);	/* never returns: the panic ends the kernel */
	kprintf("ksync: crash=stack: the overflowing thread did not fault (%s)\n", ksync_strerror(rc));
	arch_exit(false);
}

/* A crash trigger returned: the port does not have it. */
static void crash_unsupported(const char *how, int rc)
{
	kprintf("ksync: crash=%s: %s on this port (%s)\n", how, ksync_strerror(rc), ARCH_NAME);
	arch_exit(false);
}

/* Bad uses of the locks (issue 11): each panics naming the class, the holder and the
 * call sites. */
LOCK_CLASS(crash_master_class, "crash_master", LOCK_MASTER, LOCK_DATA);
LOCK_CLASS(crash_monitor_class, "crash_monitor", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(crash_cv_class, "crash_cv", LOCK_CONDVAR, LOCK_DATA);
static struct mlock crash_ml;
static struct monitor crash_mon;
static struct condvar crash_cv;

static void crash_mon_holder(void *arg)
{
	(void)arg;
	mon_lock(&crash_mon);
	for (;;)
		sched_sleep(SCHED_COND(22));	/* holds it for ever */
}

/* helping locks (issue 12): releasing one held by another thread, sleeping inside one,
 * exiting holding one */
LOCK_CLASS(crash_helping_class, "crash_helping", LOCK_HELPING, LOCK_DATA);
static struct hlock crash_hl;

static void crash_hl_holder(void *arg)
{
	(void)arg;
	(void)hlock_lock(&crash_hl);
	for (;;)
		thread_yield();	/* holds it for ever (yielding, never sleeping) */
}

static void crash_hl_exiter(void *arg)
{
	(void)arg;
	(void)hlock_lock(&crash_hl);
	thread_exit();
}

static bool crash_helping(const char *how)
{
	sched_start(NULL);
	hlock_init(&crash_hl, &crash_helping_class, NULL);
	struct thread *t;
	if (!strcmp(how, "hlock-release")) {
		thread_create(&t, crash_hl_holder, NULL, 1, SCHED_AFFINITY_ANY, "holder", 0);
		while (!hlock_owner(&crash_hl))
			thread_yield();
		hlock_unlock(&crash_hl);		/* the holder is the other thread */
	} else if (!strcmp(how, "hlock-sleep")) {
		(void)hlock_lock(&crash_hl);
		sched_sleep(SCHED_COND(22));		/* wait-freedom forbids it */
	} else if (!strcmp(how, "hlock-exit")) {
		thread_create(&t, crash_hl_exiter, NULL, 1, SCHED_AFFINITY_ANY, "exiter", 0);
		(void)thread_join(t);
	}
	return false;
}

static bool crash_lock(const char *how)
{
	if (!strncmp(how, "hlock-", 6))
		return crash_helping(how);
	if (!strncmp(how, "mlock-", 6)) {
		mlock_init(&crash_ml, &crash_master_class, MLOCK_TICKET);
		if (!strcmp(how, "mlock-release")) {
			mlock_unlock(&crash_ml);		/* nobody holds it */
		} else if (!strcmp(how, "mlock-recursion")) {
			mlock_lock(&crash_ml);
			mlock_lock(&crash_ml);
		} else if (!strcmp(how, "mlock-sleep")) {
			sched_start(NULL);
			mlock_lock(&crash_ml);
			sched_sleep(SCHED_COND(22));
		}
		return false;
	}
	if (strncmp(how, "mon-", 4) && strncmp(how, "cv-", 3))
		return false;
	sched_start(NULL);
	mon_init(&crash_mon, &crash_monitor_class, 0);
	cv_init(&crash_cv, &crash_cv_class, &crash_mon);
	if (!strcmp(how, "mon-release")) {
		struct thread *t;
		thread_create(&t, crash_mon_holder, NULL, 0, 1, "holder", 0);
		while (!__atomic_load_n(&crash_mon.owner, __ATOMIC_ACQUIRE))
			thread_yield();
		mon_unlock(&crash_mon);			/* the holder is the other thread */
	} else if (!strcmp(how, "mon-recursion")) {
		mon_lock(&crash_mon);
		mon_lock(&crash_mon);
	} else if (!strcmp(how, "cv-nolock")) {
		cv_wait(&crash_cv);			/* without its monitor */
	}
	return false;
}

static void crash(const char *how)
{
	kprintf("ksync: deliberate crash requested: %s\n", how);
	if (!strcmp(how, "pf"))
		crash_sink = *(volatile int *)0xdeadbeef000ull;	/* beyond the 4 GiB mapping */
	else if (!strcmp(how, "ud"))
		crash_unsupported(how, arch_crash_undefined_insn());
	else if (!strcmp(how, "null")) {	/* a call through a null function pointer */
		void (*volatile fn)(void) = NULL;
		fn();
	}
	else if (!strcmp(how, "assert"))
		KASSERT(crash_sink == 12345);
	else if (!strcmp(how, "stack"))
		crash_stack();
	else if (!strcmp(how, "triple"))
		crash_unsupported(how, arch_crash_triple());
	else if (!strcmp(how, "splx")) {	/* splx to a level above the current one */
		spl_t s = splraise(IPL_BIO);
		splx(s);
		splx(IPL_TTY);
	} else if (!strcmp(how, "spl-level")) {	/* a level out of range */
		volatile unsigned bad = IPL_COUNT + 2;
		(void)splraise(bad);
	} else if (!strcmp(how, "hang")) {
		arch_irq_disable();
		arch_halt_forever();
	} else if (crash_lock(how)) {
		return;
	}
	kprintf("ksync: unknown crash kind '%s' (pf, ud, null, assert, triple, hang, splx, spl-level, "
		"stack, mlock-release, mlock-recursion, mlock-sleep, mon-release, mon-recursion, "
		"cv-nolock, hlock-release, hlock-sleep, hlock-exit)\n", how);
	arch_exit(false);
}

/* Memory is up: report the machine and run the mode the command line asks for. */
__attribute__((noreturn)) void kernel_main(struct boot_info *bi);
void kernel_main(struct boot_info *bi)
{
	char mode[16], filter[128], set[16], how[16];
	cmdline_set(bi->cmdline);
	report_boot(bi);

	if (cmdline_get("crash", how, sizeof how))
		crash(how);
	/* lockstat=MODE: the statistics' mode from boot on (lockstat.h); a mode this build
	 * compiled out (LOCKSTAT=0), or an unknown one, stops the boot naming why */
	char lsm[16], why[200];
	if (cmdline_get("lockstat", lsm, sizeof lsm) &&
	    lockstat_set_mode_name(lsm, why, sizeof why) != KSYNC_OK) {
		kprintf("ksync: lockstat=%s: %s\n", lsm, why);
		arch_exit(false);
	}
	if (!cmdline_get("mode", mode, sizeof mode))
		memcpy(mode, "test", 5);
	const char *flt = cmdline_get("filter", filter, sizeof filter);
	if (!strcmp(mode, "test")) {
		if (!kfilter_matches_any_test(flt))
			arch_exit(false);
		int failed = ktest_run_all(flt);
		arch_exit(failed == 0);
	} else if (!strcmp(mode, "bench")) {
		if (!cmdline_get("set", set, sizeof set))
			memcpy(set, "default", 8);
		int failed = kexp_run_all(flt, set);
		kprintf("KSYNC {\"kind\":\"done\",\"mode\":\"bench\"}\n");
		arch_exit(failed == 0);
	} else if (!strcmp(mode, "user")) {
		if (urun_main)
			urun_main(bi);	/* kernel/proc/urun.c: user programs, KTAP */
		kprintf("ksync: mode=user: this port (%s) has no user space\n", ARCH_NAME);
		arch_exit(false);
	} else if (!strcmp(mode, "idle")) {
		kprintf("ksync: idle (mode=idle): attach gdb, or stop QEMU\n");
		for (;;)
			arch_wait_for_irq();
	}
	kprintf("ksync: unknown mode '%s' (test, bench, user, idle)\n", mode);
	arch_exit(false);
}

/* The kernel's boot order after the port's bring-up (arch_if.h, "boot hand-over"). */
void kernel_entry(struct boot_info *bi)
{
	pmm_init(bi);
	heap_init();
	/* the lock statistics' shards: whole pages of the pool, taken once, here (lockstat.c
	 * calls no allocator: the pool's and the heap's locks are counted by it) */
	size_t ls = lockstat_bytes(arch_ncpus());
	uint64_t ls_pa = ls ? pmm_alloc_contig((ls + PAGE_SIZE - 1) / PAGE_SIZE) : 0;
	if (ls && !ls_pa)
		panic("kernel_entry: no %lu contiguous bytes for the lock statistics", (unsigned long)ls);
	lockstat_init((void *)(uintptr_t)ls_pa, ls);
	kernel_main(bi);
}
