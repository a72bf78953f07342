/*
 * test_spl.c - the interrupt-masking scheme of this build (spl.h) does what its file's top
 * comment says (Small & Manley 1997, sections 3 and 7.1): a section at level L holds back
 * exactly the sources the scheme's rule holds back and no other; levels and critical
 * sections nest; what was held back runs exactly once after the section (highest level
 * first where the scheme orders replay); a chain of interrupts that re-raises itself at
 * ~100 kHz never loses one; interrupts injected at random points around section
 * boundaries never run inside a section that holds them, and per-level counters shared
 * by the sections and the handlers (updated non-atomically) prove the exclusion.
 *
 * Sources (real hardware under QEMU): the PIT (ISA IRQ0) at IPL_TTY, the CMOS RTC periodic
 * interrupt (IRQ8) at IPL_NET, this CPU's LAPIC timer as the clock at IPL_CLOCK, and a
 * soft interrupt at IPL_SOFT. The same file runs in every scheme's build (make SCHEME=...).
 */
#include "kernel.h"
#include "x86.h"
#include "spl.h"
#include "intr.h"
#include "trap.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>

enum { S_CLOCK, S_PIT, S_RTC, S_SOFT, S_N };

/* The stress scale: `spl_scale=N` on the command line multiplies the three stress tests'
 * sizes (the two floods' 250 ms, the random injection's 50000 sections per CPU). make test
 * boots every scheme at 1; make stress at 20 (tests/test_stress.py). */
static unsigned spl_scale(void)
{
	char buf[16];
	unsigned n = cmdline_uint(cmdline_get("spl_scale", buf, sizeof buf), 1);
	return n ? n : 1;
}
static uint64_t flood_ms(void) { return 250ull * spl_scale(); }

/* ---- raw device programming (the tests' own; the device layer has its own) ---- */
static void pit_oneshot_raw(uint16_t ticks)
{
	outb(0x43, 0x30);			/* channel 0, lo/hi, mode 0 */
	outb(0x40, ticks & 0xff);
	outb(0x40, ticks >> 8);
}
static void pit_periodic_raw(unsigned hz)
{
	uint32_t div = 1193182u / hz;
	outb(0x43, 0x34);			/* mode 2 */
	outb(0x40, div & 0xff);
	outb(0x40, (div >> 8) & 0xff);
}
/* mode 0 with no count written: OUT stays low, the counter waits (no interrupt) */
static void pit_stop_raw(void) { outb(0x43, 0x30); }
static uint8_t cmos_read(uint8_t r) { outb(0x70, 0x80 | r); return inb(0x71); }
static void cmos_write(uint8_t r, uint8_t v) { outb(0x70, 0x80 | r); outb(0x71, v); }
/* Periodic 1024 Hz. Register C (a stale flag) is read BEFORE the periodic enable, and the
 * enable is the last access: from then on nothing but a handler's register C read lowers
 * IRQ8, so the line rises once at the first period and stays high - one edge for the
 * 8259A however long the vCPU stalls. The C read used to come after the enable: a vCPU
 * stall of one period (~1 ms) between the two let the first period raise the line and
 * the read lower it, so the next period was a second rising edge (see the replay test). */
static void rtc_start_raw(void)
{
	irqkey_t k = arch_irq_save();
	cmos_write(0x0a, (cmos_read(0x0a) & 0xf0) | 6);
	(void)cmos_read(0x0c);
	cmos_write(0x0b, cmos_read(0x0b) | 0x40);
	arch_irq_restore(k);
}
/* Stop the periodic rate (register A rate 0): no further period sets a flag or raises the
 * line, while a flag already set keeps IRQ8 asserted until register C is read - the one
 * interrupt raised stays raised, and no second one can follow. */
static void rtc_freeze_raw(void)
{
	irqkey_t k = arch_irq_save();
	cmos_write(0x0a, cmos_read(0x0a) & 0xf0);
	arch_irq_restore(k);
}
static void rtc_stop_raw(void)
{
	irqkey_t k = arch_irq_save();
	cmos_write(0x0b, cmos_read(0x0b) & ~0x40);
	(void)cmos_read(0x0c);
	arch_irq_restore(k);
}

/* ---- the test sources: counts, entry log, invariant checks ---- */
static struct intr_source srcs[S_N];
static const unsigned src_level[S_N] = { IPL_CLOCK, IPL_TTY, IPL_NET, IPL_SOFT };
static volatile uint64_t runs[INTR_MAX_CPUS][S_N];	/* per CPU, written by that CPU */
/* Level of the section the thread of each CPU is in (IPL_NONE outside); written by the
 * thread right after splraise and right before splx, read by that CPU's handlers. */
static volatile unsigned section_level[INTR_MAX_CPUS];
static volatile uint64_t bad_runs[INTR_MAX_CPUS];	/* a handler ran inside a section holding it */
/* One counter per source level and CPU, updated non-atomically by that level's handlers
 * and by the sections that hold that level: a lost update means a handler ran inside a
 * section that should have excluded it. expect[][] counts the sections' updates. */
static volatile uint64_t level_ctr[INTR_MAX_CPUS][IPL_COUNT];
static uint64_t level_expect[INTR_MAX_CPUS][IPL_COUNT];
static uint8_t order_log[64];
static volatile unsigned order_n;
static volatile bool one_shot[S_N];		/* stop the device on its first run */
static volatile bool pit_chain;			/* PIT handler re-arms the PIT */
static volatile uint64_t pit_raised;		/* one-shots programmed while chaining */
static volatile uint16_t pit_chain_ticks = 12;

/* Non-atomic read-modify-write with a gap: lost updates if a handler could interleave. */
static void bump(volatile uint64_t *p)
{
	uint64_t v = *p;
	for (volatile int i = 0; i < 20; i++)
		;
	*p = v + 1;
}

static void common(unsigned id)
{
	unsigned cpu = arch_cpu_id();
	unsigned sec = section_level[cpu];
	if (sec != IPL_NONE && spl_holds(sec, src_level[id]))
		bad_runs[cpu]++;
	runs[cpu][id]++;
	bump(&level_ctr[cpu][src_level[id]]);
	unsigned n = order_n;
	if (cpu == 0 && n < sizeof order_log) {
		order_log[n] = (uint8_t)id;
		order_n = n + 1;
	}
}

static void clock_fn(void *a) { (void)a; common(S_CLOCK); if (one_shot[S_CLOCK]) clock_stop(); }
static void soft_fn(void *a) { (void)a; common(S_SOFT); }
/* Nested-handler probe: a handler that spins `hold_us` with a lower or higher source
 * armed to fire meanwhile, recording what ran inside it. */
static volatile unsigned hold_us;
static volatile int in_handler = -1;		/* source id whose handler spins now */
static volatile uint64_t ran_inside[S_N];	/* [id]: handlers of id that ran inside it */

static bool isa_raised(unsigned id);
static bool lapic_irr_has(unsigned vec);
/* The other source's interrupt was raised (waits in a controller's IRR, was deferred,
 * or already ran inside). Not the PIT's OUT pin: QEMU computes it from the clock, ahead
 * of the timer callback that raises the line. */
static bool pit_fired_or_ran(unsigned id)
{
	return ran_inside[id] || srcs[id].deferred || isa_raised(id);
}

static void hold_in_handler(unsigned id)
{
	if (!hold_us || arch_cpu_id() != 0)
		return;
	unsigned us = hold_us;
	hold_us = 0;				/* once */
	in_handler = (int)id;
	if (id == S_RTC)
		pit_oneshot_raw(200);		/* a higher source fires inside */
	else
		rtc_start_raw();		/* a lower source fires inside */
	/* until the other source has fired in hardware (bounded), then a little more so a
	 * nesting scheme has taken it */
	unsigned other = id == S_RTC ? S_PIT : S_RTC;
	uint64_t deadline = arch_cycles() + 5 * arch_tsc_hz();
	while (!pit_fired_or_ran(other) && (int64_t)(arch_cycles() - deadline) < 0)
		arch_cpu_relax();
	if (SPL_HANDLERS_NEST && id == S_RTC) {
		/* a nesting scheme must take it while we spin: wait for that (bounded; a
		 * scheme that does not nest fails the test when the bound runs out) */
		while (!ran_inside[other] && (int64_t)(arch_cycles() - deadline) < 0)
			arch_cpu_relax();
	} else {
		arch_delay_us(us);
	}
	in_handler = -1;
}

/* RTC deliveries with no periodic flag behind them, per CPU (written by that CPU's RTC
 * handler). QEMU's IOAPIC delivers every raise of an edge-triggered pin, also of a line
 * that is already high, and its RTC raises IRQ8 at every period while the flag is unread:
 * a period that falls between a delivery and the handler's register C read (a vCPU stall
 * of one period, ~1 ms) is a second delivery for the one flag, whose handler then finds
 * register C empty. A driver asks its device whether the interrupt is its own; so do the
 * tests: runs[] counts RTC interrupts (flag set), this counts the others. The 8259A does
 * not do this (it latches an edge only when the line rises). */
static volatile uint64_t rtc_empty[INTR_MAX_CPUS];

static void rtc_fn(void *a)
{
	(void)a;
	uint8_t flags = cmos_read(0x0c);	/* ack, or the RTC stops interrupting */
	if (!(flags & 0x40)) {			/* no periodic flag: not an RTC interrupt */
		unsigned cpu = arch_cpu_id(), sec = section_level[cpu];
		if (sec != IPL_NONE && spl_holds(sec, src_level[S_RTC]))
			bad_runs[cpu]++;	/* still a handler run inside a section */
		rtc_empty[cpu]++;
		return;			/* and a one-shot RTC keeps waiting for its flag */
	}
	if (one_shot[S_RTC]) {
		/* stop after the flag, then read register C again: a flag a period set in
		 * between is consumed here, and the interrupt it raised finds none */
		cmos_write(0x0b, cmos_read(0x0b) & ~0x40);
		(void)cmos_read(0x0c);
	}
	if (in_handler >= 0 && arch_cpu_id() == 0)
		ran_inside[S_RTC]++;
	common(S_RTC);
	hold_in_handler(S_RTC);
}
static void pit_fn(void *a)
{
	(void)a;
	if (in_handler >= 0 && arch_cpu_id() == 0)
		ran_inside[S_PIT]++;
	common(S_PIT);
	hold_in_handler(S_PIT);
	if (pit_chain) {
		pit_raised++;
		pit_oneshot_raw(pit_chain_ticks);
	}
}

static bool setup(struct ktest_ctx *kt)
{
	static void (*const fns[S_N])(void *) = { clock_fn, pit_fn, rtc_fn, soft_fn };
	static const enum intr_kind kinds[S_N] = { INTR_CLOCK, INTR_ISA, INTR_ISA, INTR_SOFT };
	static const unsigned irqs[S_N] = { 0, 0, 8, 0 };
	static const char *const names[S_N] = { "clock", "pit", "rtc", "soft" };
	/* quiet devices first: an RTC left asserting, or an edge latched in the 8259A by an
	 * earlier test, must not count in this one */
	pit_stop_raw();
	rtc_stop_raw();
	memset((void *)runs, 0, sizeof runs);
	memset((void *)bad_runs, 0, sizeof bad_runs);
	memset((void *)rtc_empty, 0, sizeof rtc_empty);
	memset((void *)level_ctr, 0, sizeof level_ctr);
	memset(level_expect, 0, sizeof level_expect);
	memset((void *)one_shot, 0, sizeof one_shot);
	order_n = 0;
	pit_chain = false;
	for (unsigned i = 0; i < INTR_MAX_CPUS; i++) {
		section_level[i] = IPL_NONE;
		kcpu_of(i)->spl.violations = 0;
	}
	for (unsigned i = 0; i < S_N; i++) {
		memset(&srcs[i], 0, sizeof srcs[i]);
		srcs[i].name = names[i];
		srcs[i].kind = kinds[i];
		srcs[i].level = src_level[i];
		srcs[i].irq = irqs[i];
		srcs[i].fn = fns[i];
		int e = intr_establish(&srcs[i]);
		if (e != KSYNC_OK) {
			kt_diag(kt, "intr_establish(%s) = %d", names[i], e);
			return false;
		}
	}
	/* What a controller still holds from before (an edge latched while the line was
	 * masked, a vector left in the IRR) is delivered now: at least 2 ms, then until no
	 * source of ours waits in a controller (bounded); then start counting. A fixed 2 ms
	 * was not always enough on a busy host: a latched RTC edge delivered after a test
	 * had started its RTC counted as that test's interrupt. */
	uint64_t t0 = arch_cycles(), hz = arch_tsc_hz();
	for (;;) {
		uint64_t el = arch_cycles() - t0;
		bool quiet = !isa_raised(S_PIT) && !isa_raised(S_RTC) &&
			     !lapic_irr_has(srcs[S_CLOCK].vector);
		if (quiet && el >= hz / 500)
			break;
		if (el >= 5 * hz) {
			kt_diag(kt, "a source stays raised: pit %d rtc %d clock %d", isa_raised(S_PIT),
				isa_raised(S_RTC), lapic_irr_has(srcs[S_CLOCK].vector));
			return false;
		}
		arch_cpu_relax();
	}
	memset((void *)runs, 0, sizeof runs);
	memset((void *)rtc_empty, 0, sizeof rtc_empty);
	memset((void *)level_ctr, 0, sizeof level_ctr);
	order_n = 0;
	for (unsigned i = 0; i < S_N; i++)
		intr_stats_reset(&srcs[i]);
	return true;
}

static void teardown(void)
{
	pit_chain = false;
	clock_stop();
	pit_stop_raw();
	rtc_stop_raw();
	arch_delay_us(2000);
	for (unsigned i = 0; i < S_N; i++)
		intr_disestablish(&srcs[i]);
}

static bool wait_runs(unsigned cpu, unsigned id, uint64_t want)
{
	uint64_t deadline = arch_cycles() + 5 * arch_tsc_hz();	/* liveness bound only */
	while (runs[cpu][id] < want && (int64_t)(arch_cycles() - deadline) < 0)
		arch_cpu_relax();
	return runs[cpu][id] >= want;
}

/* Inside a section at `level`: update every counter the level protects. */
static void section_work(unsigned cpu, unsigned level)
{
	for (unsigned i = 0; i < S_N; i++)
		if (spl_holds(level, src_level[i])) {
			bump(&level_ctr[cpu][src_level[i]]);
			level_expect[cpu][src_level[i]]++;
		}
}

static bool counters_ok(struct ktest_ctx *kt, unsigned cpu)
{
	bool ok = true;
	for (unsigned i = 0; i < S_N; i++) {
		unsigned l = src_level[i];
		uint64_t want = level_expect[cpu][l] + runs[cpu][i];
		if (level_ctr[cpu][l] != want) {
			kt_diag(kt, "cpu %u level %s: counter %lu, sections %lu + handler runs %lu",
				cpu, ipl_name(l), level_ctr[cpu][l], level_expect[cpu][l], runs[cpu][i]);
			ok = false;
		}
	}
	return ok;
}

/* ---- waiting on events, not on time: under an emulator on a busy host the device
 * timers can stall for many ms, so every "it has happened" is a bounded wait for it ---- */
static bool lapic_irr_has(unsigned vec)
{
	return vec && ((lapic_read(0x200 + (vec / 32) * 0x10) >> (vec % 32)) & 1);
}
static bool pic_irr_has(unsigned irq)
{
	uint16_t port = irq >= 8 ? 0xa0 : 0x20;
	irqkey_t k = arch_irq_save();
	outb(port, 0x0a);			/* OCW3: read the IRR */
	bool on = (inb(port) >> (irq & 7)) & 1;
	arch_irq_restore(k);
	return on;
}
/* An ISA source's interrupt waits in the controller its line is routed through: the
 * local APIC's IRR (IOAPIC routing, tpr-*), else the 8259A's. Never the 8259A's IRR under
 * IOAPIC routing: the line is masked there, yet the 8259A latches its edges in the IRR
 * (the IRR comes before the mask), and an IRR bit clears only on the acknowledge a masked
 * line never gets - the first PIT or RTC edge of the boot stays in that IRR for good, so
 * it said "fired" of a device that had not fired yet (found: tpr-optim's replay test
 * ended its wait before the PIT and the RTC had fired; they ran after the soft interrupt,
 * not held by the section at all). */
static bool isa_raised(unsigned id)
{
	struct intr_source *s = &srcs[id];
	return INTR_ISA_VIA_IOAPIC ? lapic_irr_has(s->vector) : pic_irr_has(s->irq);
}
/* The device has raised its interrupt (it ran, was deferred, or waits in a controller). */
static bool fired(unsigned id)
{
	struct intr_source *s = &srcs[id];
	if (runs[0][id] || s->deferred)
		return true;
	if (s->kind == INTR_CLOCK)	/* held in the IRR, or dropped under a masked LVT */
		return lapic_irr_has(s->vector) ||
		       (cpus[0].clock_masked && lapic_read(LAPIC_TIMER_CCR) == 0);
	if (s->kind == INTR_ISA)
		return isa_raised(id);
	return true;
}
/* At least min_us, then until every source in `want` has run more than base[] (or, with
 * by_fire, has fired), for at most 5 s (a liveness bound). */
static bool wait_sources(const uint64_t *base, const bool *want, bool by_fire, uint64_t min_us)
{
	uint64_t t0 = arch_cycles(), hz = arch_tsc_hz();
	uint64_t min_t = t0 + min_us * hz / 1000000, deadline = t0 + 5 * hz;
	for (;;) {
		uint64_t now = arch_cycles();
		bool all = (int64_t)(now - min_t) >= 0;
		for (unsigned i = 0; all && i < S_N; i++)
			if (want[i] && !(by_fire ? fired(i) : runs[0][i] > base[i]))
				all = false;
		if (all)
			return true;
		if ((int64_t)(now - deadline) >= 0)
			return false;
		arch_cpu_relax();
	}
}

static void enter(unsigned cpu, unsigned level, spl_t *s)
{
	*s = splraise(level);
	section_level[cpu] = level;
}
static void leave(unsigned cpu, spl_t s)
{
	section_level[cpu] = SPL_LEVEL(s);
	splx(s);
}

KTEST(spl_scheme_reports_itself)
{
	kt_diag(kt, "scheme %s", spl_scheme_name());
	KT_EXPECT(strlen(spl_scheme_name()) > 0);
	KT_EXPECT_EQ(spl_level(), IPL_NONE);
	KT_EXPECT(arch_irq_enabled());
}

/* intr_source holds its statistics' samples (tens of KiB): never on the stack */
static struct intr_source bad_s, bad_c1, bad_c2;

KTEST(spl_bad_sources_refused)
{
#define s bad_s
#define c1 bad_c1
#define c2 bad_c2
	memset(&s, 0, sizeof s);
	s.name = "bad"; s.kind = INTR_ISA; s.irq = 3; s.fn = soft_fn;
	s.level = IPL_HIGH;
	KT_EXPECT_EQ(intr_establish(&s), KSYNC_EINVAL);
	s.level = IPL_NONE;
	KT_EXPECT_EQ(intr_establish(&s), KSYNC_EINVAL);
	s.level = IPL_TTY; s.irq = 16;
	KT_EXPECT_EQ(intr_establish(&s), KSYNC_EINVAL);
	s.irq = 2;
	KT_EXPECT_EQ(intr_establish(&s), KSYNC_EBUSY);	/* the cascade line */
	s.kind = INTR_SOFT; s.level = IPL_NET;
	KT_EXPECT_EQ(intr_establish(&s), KSYNC_EINVAL);
	memset(&c1, 0, sizeof c1);
	c1.name = "c1"; c1.kind = INTR_CLOCK; c1.level = IPL_CLOCK; c1.fn = soft_fn;
	c2 = c1;
	KT_ASSERT_EQ(intr_establish(&c1), KSYNC_OK);
	KT_EXPECT_EQ(intr_establish(&c2), KSYNC_EBUSY);	/* one clock */
	KT_EXPECT_EQ(clock_start(&c1, 50), KSYNC_EINVAL);
	KT_EXPECT_EQ(clock_start(&c1, 200000), KSYNC_EINVAL);
	intr_disestablish(&c1);
#undef s
#undef c1
#undef c2
}

/* For each level: the sources it holds do not run inside, and run (exactly as often as
 * they were held: at least once) after splx; the others keep running inside. */
KTEST(spl_levels_hold_exactly_the_right_sources)
{
	KT_ASSERT(setup(kt));
	KT_ASSERT_EQ(clock_start(&srcs[S_CLOCK], 2000), KSYNC_OK);
	pit_periodic_raw(2000);
	rtc_start_raw();
	bool started = wait_runs(0, S_CLOCK, 3) && wait_runs(0, S_PIT, 3) && wait_runs(0, S_RTC, 3);
	if (!started)
		kt_diag(kt, "sources not running: clock %lu pit %lu rtc %lu, level %u, imr 0x%x, IF %d",
			runs[0][S_CLOCK], runs[0][S_PIT], runs[0][S_RTC], spl_level(),
			arch_pic_mask_shadow(), arch_irq_enabled());
	KT_ASSERT(started);
	for (unsigned level = IPL_NONE; level <= IPL_HIGH; level++) {
		uint64_t before[S_N], inside[S_N];
		spl_t s;
		enter(0, level, &s);
		for (unsigned i = 0; i < S_N; i++)
			before[i] = runs[0][i];
		softint_schedule(&srcs[S_SOFT]);
		bool free_[S_N], held_[S_N];
		for (unsigned i = 0; i < S_N; i++) {
			held_[i] = spl_holds(level, src_level[i]);
			free_[i] = !held_[i];
		}
		/* >= 8 periods of every device, and until each source not held ran */
		wait_sources(before, free_, false, 8000);
		for (unsigned i = 0; i < S_N; i++)
			inside[i] = runs[0][i];
		KT_EXPECT_EQ(spl_level(), level);
		leave(0, s);
		wait_sources(inside, held_, false, 0);	/* until each held source ran */
		for (unsigned i = 0; i < S_N; i++) {
			bool held = spl_holds(level, src_level[i]);
			if (held) {
				KT_EXPECT_EQ(inside[i], before[i]);
				KT_EXPECT(runs[0][i] > inside[i]);	/* ran after: not lost */
			} else {
				KT_EXPECT(inside[i] > before[i]);
			}
			if (held ? inside[i] != before[i] || runs[0][i] == inside[i] : inside[i] == before[i])
				kt_diag(kt, "level %s source %s: held=%d before %lu inside %lu after %lu "
					"(clock armed %d masked %d lvt 0x%x ccr %u)",
					ipl_name(level), srcs[i].name, held, before[i], inside[i], runs[0][i],
					cpus[0].clock_armed, cpus[0].clock_masked,
					lapic_read(LAPIC_LVT_TIMER), lapic_read(LAPIC_TIMER_CCR));
		}
	}
	teardown();
	KT_EXPECT_EQ(bad_runs[0], 0);
	KT_EXPECT_EQ(kcpu_of(0)->spl.violations, 0);
	kt_diag(kt, "deferred %lu replayed %lu clock recovered %lu, 8259A spurious so far %lu, "
		"RTC deliveries without a flag %lu", kcpu_of(0)->spl.deferred, kcpu_of(0)->spl.replayed,
		kcpu_of(0)->spl.clock_recovered, pic_spurious, rtc_empty[0]);
}

KTEST(spl_levels_and_sections_nest)
{
	KT_ASSERT(setup(kt));
	pit_periodic_raw(2000);
	rtc_start_raw();
	KT_ASSERT(wait_runs(0, S_PIT, 2) && wait_runs(0, S_RTC, 2));
	spl_t s1 = splraise(IPL_NET);
	spl_t s2 = splraise(IPL_TTY);
	spl_t s3 = splraise(IPL_BIO);		/* lower than current: no change */
	KT_EXPECT_EQ(spl_level(), IPL_TTY);
	section_level[0] = IPL_TTY;
	uint64_t pit0 = runs[0][S_PIT], rtc0 = runs[0][S_RTC];
	uint64_t base[S_N];
	memcpy(base, (const void *)runs[0], sizeof base);
	static const bool want_pit[S_N] = { [S_PIT] = true }, want_rtc[S_N] = { [S_RTC] = true };
	arch_delay_us(4000);
	KT_EXPECT_EQ(runs[0][S_PIT], pit0);
	KT_EXPECT_EQ(runs[0][S_RTC], rtc0);
	splx(s3);
	KT_EXPECT_EQ(spl_level(), IPL_TTY);
	section_level[0] = IPL_NET;
	splx(s2);
	KT_EXPECT_EQ(spl_level(), IPL_NET);
	bool cli = spl_holds(IPL_NET, IPL_TTY);	/* the cli schemes hold everything */
	if (cli)
		arch_delay_us(4000);
	else
		wait_sources(base, want_pit, false, 0);
	KT_EXPECT(cli ? runs[0][S_PIT] == pit0 : runs[0][S_PIT] > pit0);
	KT_EXPECT_EQ(runs[0][S_RTC], rtc0);
	section_level[0] = IPL_NONE;
	splx(s1);
	KT_EXPECT_EQ(spl_level(), IPL_NONE);
	wait_sources(base, want_rtc, false, 0);
	KT_EXPECT(runs[0][S_RTC] > rtc0);

	/* crit_enter nests by depth: only the last crit_leave lets anything run */
	crit_enter();
	crit_enter();
	section_level[0] = IPL_HIGH;
	pit0 = runs[0][S_PIT];
	crit_leave();
	KT_EXPECT_EQ(spl_level(), IPL_HIGH);
	arch_delay_us(3000);
	KT_EXPECT_EQ(runs[0][S_PIT], pit0);
	section_level[0] = IPL_NONE;
	crit_leave();
	KT_EXPECT_EQ(spl_level(), IPL_NONE);
	KT_EXPECT(arch_irq_enabled());
	base[S_PIT] = pit0;
	wait_sources(base, want_pit, false, 0);
	KT_EXPECT(runs[0][S_PIT] > pit0);
	teardown();
	KT_EXPECT_EQ(bad_runs[0], 0);
	KT_EXPECT_EQ(kcpu_of(0)->spl.violations, 0);
}

/* A section entered where the caller has masked already (arch_irq_save: the scheduler's
 * paths, a trap's entry) leaves IF as it found it: the kernel's master locks take crit
 * sections inside such regions, and an sti at their end would let interrupts and
 * preemption in. cli-pessim's splx once turned IF on unconditionally at IPL_NONE. */
KTEST(spl_sections_inside_masked_region_keep_if_off)
{
	irqkey_t k = arch_irq_save();
	crit_enter();
	crit_leave();
	KT_EXPECT(!arch_irq_enabled());
	spl_t s = splraise(IPL_BIO);
	splx(s);
	KT_EXPECT(!arch_irq_enabled());
	crit_enter();
	crit_enter();
	crit_leave();
	crit_leave();
	KT_EXPECT(!arch_irq_enabled());
	KT_EXPECT_EQ(spl_level(), IPL_NONE);
	arch_irq_restore(k);
	KT_EXPECT(arch_irq_enabled());
	crit_enter();		/* and with IF on, on again after */
	crit_leave();
	KT_EXPECT(arch_irq_enabled());
}

/* Everything held in one critical section runs exactly once afterwards; where the scheme
 * orders replay (spl.h SPL_REPLAY_ORDERED) the order is highest level first.
 *
 * Every device raises exactly one interrupt, and only inside the section:
 * - the clock is armed inside the section. Armed before crit_enter (as it was), its 1 ms
 *   one-shot expired before the section began whenever the vCPU stalled for 1 ms between
 *   clock_start and crit_enter (a busy host): it ran at once, legitimately, and the test
 *   counted it as a run inside ("inside = 1", order clock,pit,rtc,soft - the tpr-optim
 *   failure of issue 8; nothing was wrong with the scheme);
 * - "has fired" looks at the controller the line is routed through (isa_raised);
 * - the RTC is periodic: its rate is stopped inside the section once it has fired. QEMU's
 *   IOAPIC delivers every raise of an edge-triggered pin, even of a line that is already
 *   high, and the RTC raises IRQ8 each period while its flag is unread: left running, a
 *   period falling between the replayed delivery and the handler's stop (a 1 ms vCPU
 *   stall) was a second RTC interrupt after the section. Raises inside the section fold
 *   into the one held (same IRR bit, or a line the 8259A saw rise once);
 * - the line the 8259A sees rises exactly once: rtc_start_raw enables the periodic
 *   interrupt as its last access (register C read before), and nothing reads register C
 *   again before the replayed handler, so IRQ8 goes high at the first period and stays
 *   high. It used to read C after the enable: a 1 ms vCPU stall between the two (IF off)
 *   let period 1 raise IRQ8 and the read lower it; with IF back on, spl-optim took that
 *   edge (8259A acknowledge: IRR bit cleared), deferred it and masked IRQ8; period 2 rose
 *   again, and the 8259A latches an edge in its IRR under the mask. The replay ran the
 *   RTC once (flag of period 2), its unmask then delivered the latched edge, and rtc_fn
 *   found register C empty (rtc_empty 1, every run count 1; once in ~150 loaded boots;
 *   every time with a 1.5 ms delay put between the enable and the read). The schemes
 *   that do not acknowledge IRQ8 inside the section folded both edges into one IRR bit. */
KTEST(spl_replay_exactly_once_highest_first)
{
	KT_ASSERT(setup(kt));
	for (unsigned i = 0; i < S_N; i++)
		one_shot[i] = true;
	crit_enter();
	section_level[0] = IPL_HIGH;
	uint64_t before = order_n;			/* nothing armed yet: 0 */
	KT_ASSERT_EQ(clock_start(&srcs[S_CLOCK], 1000), KSYNC_OK);	/* stops after one */
	pit_oneshot_raw(200);
	rtc_start_raw();
	softint_schedule(&srcs[S_SOFT]);
	static const bool all[S_N] = { true, true, true, true };
	static const uint64_t zero[S_N];
	bool fired_all = wait_sources(zero, all, true, 2000);	/* every device has fired */
	KT_EXPECT(fired_all);
	rtc_freeze_raw();				/* the RTC raised its one interrupt */
	uint64_t inside = order_n;
	/* one RTC edge: acknowledged and deferred, or waiting in the 8259A's IRR (8259A
	 * routing; IF off so the two agree) - both at once was the two-edge start */
	irqkey_t k = arch_irq_save();
	uint64_t rtc_deferred = srcs[S_RTC].deferred;
	bool rtc_irr = !INTR_ISA_VIA_IOAPIC && pic_irr_has(srcs[S_RTC].irq);
	arch_irq_restore(k);
	bool seen[S_N];
	for (unsigned i = 0; i < S_N; i++)
		seen[i] = fired(i);
	section_level[0] = IPL_NONE;
	crit_leave();
	wait_sources(zero, all, false, 0);		/* each ran (at least) once */
	arch_delay_us(5000);				/* ... and nothing twice */
	KT_EXPECT_EQ(before, 0);
	KT_EXPECT_EQ(inside, 0);
	KT_EXPECT_EQ(bad_runs[0], 0);
	/* the RTC's rate stopped inside the section: no raise after it, so an RTC handler
	 * run with no flag here would be the kernel running a held interrupt twice */
	KT_EXPECT_EQ(rtc_empty[0], 0);
	if (rtc_empty[0])
		kt_diag(kt, "at the section's end: rtc deferred %lu, IRQ8 in the 8259A's IRR %d",
			rtc_deferred, rtc_irr);
	if (!fired_all || inside)
		kt_diag(kt, "in the section: fired clock %d pit %d rtc %d soft %d; deferred clock %lu "
			"pit %lu rtc %lu", seen[S_CLOCK], seen[S_PIT], seen[S_RTC], seen[S_SOFT],
			srcs[S_CLOCK].deferred, srcs[S_PIT].deferred, srcs[S_RTC].deferred);
	for (unsigned i = 0; i < S_N; i++)
		KT_EXPECT_EQ(runs[0][i], 1);
	KT_EXPECT_EQ(order_n, S_N);
	char buf[64];
	size_t p = 0;
	for (unsigned i = 0; i < order_n && p < sizeof buf - 8; i++)
		p += (size_t)ksnprintf(buf + p, sizeof buf - p, "%s%s", i ? "," : "", srcs[order_log[i]].name);
	kt_diag(kt, "replay order: %s", buf);
	if (SPL_REPLAY_ORDERED) {
		/* clock (clock) > pit (tty) > rtc (net) > soft */
		static const uint8_t want[S_N] = { S_CLOCK, S_PIT, S_RTC, S_SOFT };
		for (unsigned i = 0; i < S_N && i < order_n; i++)
			KT_EXPECT_EQ(order_log[i], want[i]);
	}
	teardown();
	KT_EXPECT_EQ(kcpu_of(0)->spl.violations, 0);
}

/* A clock stopped while its expiry waits in the LAPIC's IRR does not tick: the latched
 * delivery is counted in clock_stale and the body does not run. On a busy host the replay
 * test above met this case as a second clock run ("clock,clock,pit,rtc,soft"): the vCPU
 * stalled for a whole period between intr_run's re-arm and the one-shot handler's
 * clock_stop, so the re-armed expiry was already latched when the clock stopped. Here the
 * latch is made on purpose: the clock expires with interrupts off, then stops. */
KTEST(spl_stopped_clock_does_not_tick)
{
	KT_ASSERT(setup(kt));
	uint64_t stale0 = kcpu_of(0)->spl.clock_stale;
	irqkey_t k = arch_irq_save();
	KT_ASSERT_EQ(clock_start(&srcs[S_CLOCK], 100000), KSYNC_OK);	/* 10 us */
	bool latched = false;
	for (unsigned i = 0; i < 100 && !latched; i++) {	/* liveness bound: 100 ms */
		arch_delay_us(1000);
		latched = lapic_irr_has(srcs[S_CLOCK].vector);
	}
	clock_stop();
	arch_irq_restore(k);
	arch_delay_us(2000);				/* the latched vector is delivered */
	KT_EXPECT(latched);
	KT_EXPECT_EQ(runs[0][S_CLOCK], 0);
	KT_EXPECT_EQ(kcpu_of(0)->spl.clock_stale - stale0, 1);
	teardown();
	KT_EXPECT_EQ(kcpu_of(0)->spl.violations, 0);
}

/* A PIT one-shot chain re-armed by its own handler (~100 kHz asked) for 250 ms (times
 * spl_scale) while the thread enters and leaves critical sections: every raised interrupt
 * ran exactly once (a lost one would stop the chain: raised == handled + 1 forever). */
KTEST(spl_flood_loses_nothing)
{
	KT_ASSERT(setup(kt));
	KT_ASSERT_EQ(clock_start(&srcs[S_CLOCK], 1000), KSYNC_OK);
	pit_chain_ticks = 2;			/* 1.7 us: as fast as the emulator goes */
	pit_raised = 1;
	pit_chain = true;
	pit_oneshot_raw(pit_chain_ticks);
	uint64_t t0 = arch_cycles(), end = t0 + arch_tsc_hz() * flood_ms() / 1000;
	uint64_t sections = 0, x = 88172645463325252ull;
	while ((int64_t)(arch_cycles() - end) < 0) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		unsigned level = 1 + (unsigned)(x % IPL_HIGH);	/* soft..high */
		spl_t s;
		enter(0, level, &s);
		section_work(0, level);
		arch_delay_us((x >> 8) % 8);
		leave(0, s);
		sections++;
		arch_delay_us((x >> 16) % 12);
	}
	pit_chain = false;
	uint64_t secs_tsc = arch_cycles() - t0;
	KT_EXPECT(wait_runs(0, S_CLOCK, runs[0][S_CLOCK] + 2));	/* a lost tick stops the clock */
	wait_runs(0, S_PIT, pit_raised);		/* the last one raised (bounded) */
	arch_delay_us(5000);				/* ... and no extra one */
	uint64_t handled = runs[0][S_PIT];
	KT_EXPECT_EQ(handled, pit_raised);
	KT_EXPECT_EQ(bad_runs[0], 0);
	KT_EXPECT(counters_ok(kt, 0));
	KT_EXPECT_EQ(kcpu_of(0)->spl.violations, 0);
	kt_diag(kt, "%lu PIT interrupts in %lu ms (%lu per second), %lu sections, deferred %lu "
		"(pit %lu clock %lu)", handled, secs_tsc * 1000 / arch_tsc_hz(),
		handled * arch_tsc_hz() / secs_tsc, sections, kcpu_of(0)->spl.deferred,
		srcs[S_PIT].deferred, srcs[S_CLOCK].deferred);
	teardown();
}

/* Random injection around section boundaries, on every CPU at once: the BSP arms PIT
 * one-shots and soft interrupts at random delays; every CPU runs its clock fast and
 * random sections. Invariants: no handler inside a section that holds it; every per-level
 * counter equals its sections' updates + its handler runs (no lost update); every PIT
 * arm ran once. */
static volatile bool rnd_go;
static volatile uint64_t rnd_sections[INTR_MAX_CPUS], rnd_pit_armed;
static volatile bool clock_alive[INTR_MAX_CPUS];	/* the one-shot chain still ticks */
static volatile uint32_t dead_lvt[INTR_MAX_CPUS], dead_ccr[INTR_MAX_CPUS], dead_irr[INTR_MAX_CPUS], dead_isr[INTR_MAX_CPUS];

static void rnd_body(unsigned cpu, uint64_t iters)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (cpu + 1);
	for (uint64_t n = 0; n < iters; n++) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		if (cpu == 0 && (x & 3) == 0) {
			uint64_t h = runs[0][S_PIT];
			if (h == rnd_pit_armed) {	/* previous one ran: arm the next */
				rnd_pit_armed++;
				pit_oneshot_raw((uint16_t)(1 + (x >> 20) % 40));
			}
		}
		if ((x & 7) == 1)
			softint_schedule(&srcs[S_SOFT]);
		unsigned level = (unsigned)((x >> 3) % IPL_COUNT);	/* none..high */
		spl_t s;
		enter(cpu, level, &s);
		section_work(cpu, level);
		for (volatile unsigned i = 0; i < (x >> 32) % 300; i++)
			;
		leave(cpu, s);
		rnd_sections[cpu]++;
		for (volatile unsigned i = 0; i < (x >> 40) % 300; i++)
			;
	}
}

static void rnd_ap(void *arg)
{
	unsigned cpu = arch_cpu_id();
	(void)arg;
	arch_irq_enable();			/* the call IPI was EOIed before we ran */
	clock_start(&srcs[S_CLOCK], 5000);
	rnd_body(cpu, 50000ull * spl_scale());
	clock_alive[cpu] = wait_runs(cpu, S_CLOCK, runs[cpu][S_CLOCK] + 2);
	dead_lvt[cpu] = lapic_read(LAPIC_LVT_TIMER); dead_ccr[cpu] = lapic_read(LAPIC_TIMER_CCR);
	dead_irr[cpu] = lapic_read(0x200 + 0x80); dead_isr[cpu] = lapic_read(0x100 + 0x80);
	clock_stop();
	arch_irq_disable();
}

KTEST(spl_random_injection_keeps_invariants)
{
	KT_ASSERT(setup(kt));
	memset((void *)rnd_sections, 0, sizeof rnd_sections);
	rnd_pit_armed = 0;
	unsigned n = arch_ncpus();
	for (unsigned c = 1; c < n; c++)
		arch_call_post(c, rnd_ap, NULL);
	KT_ASSERT_EQ(clock_start(&srcs[S_CLOCK], 5000), KSYNC_OK);
	rnd_body(0, 50000ull * spl_scale());
	clock_alive[0] = wait_runs(0, S_CLOCK, runs[0][S_CLOCK] + 2);
	clock_stop();
	for (unsigned c = 1; c < n; c++)
		arch_call_wait(c);
	wait_runs(0, S_PIT, rnd_pit_armed);		/* the last one armed (bounded) */
	arch_delay_us(5000);				/* ... and no extra one */
	KT_EXPECT_EQ(runs[0][S_PIT], rnd_pit_armed);
	for (unsigned c = 0; c < n; c++) {
		KT_EXPECT_EQ(bad_runs[c], 0);
		KT_EXPECT(counters_ok(kt, c));
		KT_EXPECT(clock_alive[c]);
		if (!clock_alive[c])
			kt_diag(kt, "cpu %u clock dead: armed %d masked %d lvt 0x%x ccr %u irr80 0x%x isr80 0x%x ipl %u pending 0x%x depth %u",
				c, cpus[c].clock_armed, cpus[c].clock_masked, dead_lvt[c], dead_ccr[c],
				dead_irr[c], dead_isr[c], kcpu_of(c)->spl.ipl, kcpu_of(c)->spl.pending, kcpu_of(c)->spl.intr_depth);
		KT_EXPECT_EQ(kcpu_of(c)->spl.violations, 0);
		kt_diag(kt, "cpu %u: %lu sections, clock %lu pit %lu soft %lu, deferred %lu replayed %lu "
			"(pit %lu clock %lu), clock late %lu recovered %lu",
			c, rnd_sections[c], runs[c][S_CLOCK], runs[c][S_PIT], runs[c][S_SOFT],
			kcpu_of(c)->spl.deferred, kcpu_of(c)->spl.replayed, srcs[S_PIT].deferred,
			srcs[S_CLOCK].deferred, kcpu_of(c)->spl.clock_late, kcpu_of(c)->spl.clock_recovered);
	}
	teardown();
}

/* Nested handlers: a higher source (the PIT at tty) arriving during a lower handler (the
 * RTC's, at net) runs inside it exactly where the scheme lets handlers nest
 * (SPL_HANDLERS_NEST; the cli schemes run handlers with IF off); a lower one arriving
 * during a higher handler never does; both run exactly once in the end. */
KTEST(spl_nested_handlers_by_level)
{
	KT_ASSERT(setup(kt));
	one_shot[S_RTC] = true;
	memset((void *)ran_inside, 0, sizeof ran_inside);
	/* lower handler, higher arrival (held until the PIT fired, then 1 ms) */
	hold_us = 1000;
	rtc_start_raw();
	KT_ASSERT(wait_runs(0, S_PIT, 1));
	arch_delay_us(2000);
	KT_EXPECT_EQ(runs[0][S_RTC], 1);
	KT_EXPECT_EQ(runs[0][S_PIT], 1);
	KT_EXPECT_EQ(ran_inside[S_PIT], SPL_HANDLERS_NEST ? 1 : 0);
	/* higher handler, lower arrival */
	memset((void *)ran_inside, 0, sizeof ran_inside);
	hold_us = 5000;
	pit_oneshot_raw(200);
	KT_ASSERT(wait_runs(0, S_RTC, 2));
	arch_delay_us(2000);
	KT_EXPECT_EQ(runs[0][S_PIT], 2);
	KT_EXPECT_EQ(runs[0][S_RTC], 2);
	KT_EXPECT_EQ(ran_inside[S_RTC], 0);
	KT_EXPECT_EQ(bad_runs[0], 0);
	KT_EXPECT_EQ(kcpu_of(0)->spl.violations, 0);
	kt_diag(kt, "a tty interrupt %s a net handler; RTC deliveries without a flag %lu",
		SPL_HANDLERS_NEST ? "preempts" : "waits for", rtc_empty[0]);
	teardown();
}

/* The clock as a flood on every CPU at once: each CPU's LAPIC timer asked for 100 kHz
 * (one-shot, re-armed by its handler, masked by its LVT and re-raised by software where
 * the scheme masks it) while the CPU runs random sections for 250 ms (times spl_scale). A
 * lost tick stops the chain for good (liveness checked after); a tick delivered twice would
 * run early (counted in clock_early and reported); the per-level counters prove the
 * exclusion. The rate is the emulator's and is reported, not asserted. */
static volatile uint64_t cf_sections[INTR_MAX_CPUS], cf_ticks[INTR_MAX_CPUS];

static void clock_flood_body(unsigned cpu)
{
	uint64_t x = 0x51ed27f1a3c4d5e7ull * (cpu + 3);
	uint64_t r0 = runs[cpu][S_CLOCK];
	uint64_t end = arch_cycles() + arch_tsc_hz() * flood_ms() / 1000;
	clock_start(&srcs[S_CLOCK], 100000);
	while ((int64_t)(arch_cycles() - end) < 0) {
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		unsigned level = (unsigned)(x % IPL_COUNT);
		spl_t s;
		enter(cpu, level, &s);
		section_work(cpu, level);
		for (volatile unsigned i = 0; i < (x >> 32) % 200; i++)
			;
		leave(cpu, s);
		cf_sections[cpu]++;
	}
	cf_ticks[cpu] = runs[cpu][S_CLOCK] - r0;
	clock_alive[cpu] = wait_runs(cpu, S_CLOCK, runs[cpu][S_CLOCK] + 2);
	clock_stop();
}

static void clock_flood_ap(void *arg)
{
	(void)arg;
	arch_irq_enable();
	clock_flood_body(arch_cpu_id());
	arch_irq_disable();
}

KTEST(spl_clock_flood_every_cpu)
{
	KT_ASSERT(setup(kt));
	unsigned n = arch_ncpus();
	for (unsigned c = 0; c < n; c++)
		kcpu_of(c)->spl.clock_early = 0;
	for (unsigned c = 1; c < n; c++)
		arch_call_post(c, clock_flood_ap, NULL);
	clock_flood_body(0);
	for (unsigned c = 1; c < n; c++)
		arch_call_wait(c);
	for (unsigned c = 0; c < n; c++) {
		KT_EXPECT(clock_alive[c]);
		KT_EXPECT_EQ(bad_runs[c], 0);
		KT_EXPECT(counters_ok(kt, c));
		KT_EXPECT_EQ(kcpu_of(c)->spl.violations, 0);
		/* early runs are reported, not asserted: spl-optim shows a few per second at
		 * this period under TCG, cause not yet found (docs/irq-schemes.md, Limits) */
		kt_diag(kt, "cpu %u: %lu clock interrupts in %lu ms (100 per ms asked), %lu sections, "
			"recovered %lu, late %lu, early %lu", c, cf_ticks[c], (unsigned long)flood_ms(), cf_sections[c],
			kcpu_of(c)->spl.clock_recovered, kcpu_of(c)->spl.clock_late, kcpu_of(c)->spl.clock_early);
	}
	teardown();
}
