/*
 * intr.c - the scheme-independent half of the spl layer: levels, the source table,
 * routing bookkeeping, the handler runner with its statistics, soft interrupts, the
 * one-shot clock, and the panics for bad levels (spl.h, intr.h).
 *
 * Small & Manley 1997 section 3: "every interrupt source has a level". The per-level
 * 8259A masks (intr_imr_at_level) and the LAPIC class per level (spl_tpr_class) are
 * computed here, once per intr_establish; the scheme file decides when to write them.
 *
 * Shared state: the source table (intr_by_bit, isa_src, clock_src) and the mask tables are
 * written by intr_establish/disestablish on the BSP with IRQs off while the affected source
 * is quiet, and read by the interrupt entries; sources are established before their
 * device is started and removed after it stopped, so no handler reads a half-made entry.
 */
#include "kernel.h"
#include "intr.h"
#include <ksync/errors.h>
#include <ksync/mwcas.h>

_Static_assert(INTR_MAX_CPUS == MAX_CPUS, "intr.h's per-CPU arrays cover every CPU");
_Static_assert(KSYNC_MWCAS_CPU_SLOTS >= MAX_CPUS, "libksync's mwcas has a slot per kernel CPU");

struct kcpu kcpus[MAX_CPUS];
#if SPL_CENSUS
struct spl_census spl_census_cpu[MAX_CPUS];	/* each CPU's own (spl.h, the census) */
#endif
struct intr_source *intr_by_bit[32];
static struct intr_source *isa_src[16];
static struct intr_source *clock_src;
uint16_t intr_imr_at_level[IPL_COUNT] = {
	INTR_IMR_BASE, INTR_IMR_BASE, INTR_IMR_BASE, INTR_IMR_BASE,
	INTR_IMR_BASE, INTR_IMR_BASE, INTR_IMR_BASE,
};
bool intr_clock_at_or_below[IPL_COUNT];
/* CR8 class of each level; a level's sources use vectors of that class (tpr-* schemes,
 * and the clock's vector in every scheme). IPL_HIGH = 15 holds back every vector. */
const uint8_t spl_tpr_class[IPL_COUNT] = { 0, 4, 5, 6, 7, 8, 15 };

/* TSC ticks; set by clock_start on each CPU that starts the clock (the same value),
 * read by every CPU's clock handler: relaxed atomics */
static uint64_t clock_period;

static const char *const ipl_names[IPL_COUNT] = { "none", "soft", "net", "bio", "tty", "clock", "high" };

const char *ipl_name(unsigned level) { return level < IPL_COUNT ? ipl_names[level] : "?"; }
const char *spl_scheme_name(void) { return KSYNC_SCHEME; }

void spl_bad_level(unsigned level)
{
	panic("spl: level %u is out of range (0..%u = none, soft, net, bio, tty, clock, high)",
	      level, IPL_COUNT - 1);
}

void spl_bad_splx(spl_t s, unsigned cur)
{
	panic("splx: cookie level %u (%s) is above the current level %u (%s); splx only lowers "
	      "(use splraise to raise)", SPL_LEVEL(s), ipl_name(SPL_LEVEL(s)), cur, ipl_name(cur));
}

static void recompute_masks(void)
{
	uint16_t lines = 0;
	for (unsigned irq = 0; irq < 16; irq++)
		if (isa_src[irq])
			lines |= 1u << irq;
	for (unsigned l = 0; l < IPL_COUNT; l++) {
		uint16_t m = INTR_IMR_BASE & ~lines;
		for (unsigned irq = 0; irq < 16; irq++)
			if (isa_src[irq] && isa_src[irq]->level <= l)
				m |= 1u << irq;
		intr_imr_at_level[l] = m;
		intr_clock_at_or_below[l] = clock_src && clock_src->level <= l;
	}
}

int intr_establish(struct intr_source *src)
{
	if (!src || !src->fn || src->kind > INTR_SOFT)
		return KSYNC_EINVAL;
	if (src->level < IPL_SOFT || src->level > IPL_CLOCK)
		return KSYNC_EINVAL;
	if (src->kind == INTR_SOFT && src->level != IPL_SOFT)
		return KSYNC_EINVAL;
	if (src->kind == INTR_ISA && src->irq > 15)
		return KSYNC_EINVAL;
	if (src->kind == INTR_ISA && (src->irq == 2 || isa_src[src->irq]))
		return KSYNC_EBUSY;
	if (src->kind == INTR_CLOCK && clock_src)
		return KSYNC_EBUSY;
	unsigned k = 0;
	while (k < SPL_SLOTS_PER_LEVEL && intr_by_bit[SPL_BIT(src->level, k)])
		k++;
	if (k == SPL_SLOTS_PER_LEVEL)
		return KSYNC_EBUSY;
	irqkey_t key = arch_irq_save();
	src->slot = k;
	src->bit = SPL_BIT(src->level, k);
	if (src->kind == INTR_ISA && !INTR_ISA_VIA_IOAPIC)
		src->vector = 0x20 + src->irq;
	else if (src->kind == INTR_SOFT)
		src->vector = 0;
	else
		src->vector = (spl_tpr_class[src->level] << 4) | (k + 1);
	intr_stats_reset(src);
	src->arrival = 0;
	/* release: the source is set up before a replay on another CPU finds it */
	__atomic_store_n(&intr_by_bit[src->bit], src, __ATOMIC_RELEASE);
	if (src->kind == INTR_ISA)
		isa_src[src->irq] = src;
	if (src->kind == INTR_CLOCK)
		clock_src = src;
	recompute_masks();
	if (src->vector)
		arch_set_handler(src->vector, spl_intr_entry, src);
	src->established = true;
	spl_scheme_attach(src);
	arch_irq_restore(key);
	return KSYNC_OK;
}

/* On the CPU that runs it, IRQs off (a cross call, or intr_disestablish's own CPU). */
static void clear_pending_here(void *arg)
{
	const struct intr_source *src = arg;
	spl_self()->pending &= ~(1u << src->bit);
}

void intr_disestablish(struct intr_source *src)
{
	if (!src || !src->established)
		return;
	irqkey_t key = arch_irq_save();
	spl_scheme_detach(src);
	src->established = false;
	/* a replay racing the removal on another CPU reads the source or NULL (and skips
	 * it); its pending bit is cleared on every CPU below */
	__atomic_store_n(&intr_by_bit[src->bit], NULL, __ATOMIC_RELEASE);
	if (src->kind == INTR_ISA)
		isa_src[src->irq] = NULL;
	if (src->kind == INTR_CLOCK)
		clock_src = NULL;
	recompute_masks();
	clear_pending_here((void *)src);
	arch_irq_restore(key);
	/* Each CPU clears the bit in its own pending word (a cross call, IRQs off there):
	 * that word is written by its CPU's handlers with a plain read-modify-write, so a
	 * clear from here could lose another source's bit set meanwhile on that CPU (and
	 * the hosted TSan build reported the race: a tick still being replayed on an AP). */
	unsigned self = arch_cpu_id(), online = arch_ncpus();
	for (unsigned i = 0; i < INTR_MAX_CPUS; i++) {
		if (i == self)
			continue;
		if (i < online)
			arch_call_on(i, clear_pending_here, (void *)src);
		else
			kcpu_of(i)->spl.pending &= ~(1u << src->bit);	/* no CPU runs there */
	}
}

void intr_stats_reset(struct intr_source *src)
{
	src->count = 0;
	src->deferred = 0;
	memset(src->per_cpu, 0, sizeof src->per_cpu);
	kstat_reset(&src->handler);
	kstat_reset(&src->latency);
}

void intr_run(struct intr_source *src)
{
	struct spl_cpu *c = spl_self();
	unsigned cpu = arch_cpu_id();
	KASSERT(cpu < INTR_MAX_CPUS);	/* was: CPU 64+ silently counted as CPU 0 */
	uint64_t t0 = arch_cycles();
	bool stats = src->stats_on && (src->kind != INTR_CLOCK || cpu == 0);
	uint64_t arrival = src->kind == INTR_CLOCK ? kcpu_of(cpu)->clock_deadline : src->arrival;
	if (stats && arrival && t0 > arrival)
		kstat_add(&src->latency, t0 - arrival);
	if (src->kind != INTR_CLOCK) {
		if (arrival)
			src->arrival = 0;	/* only when set: a soft source runs on every CPU */
	} else if (kcpu_of(cpu)->clock_deadline) {	/* this CPU's clock runs (clock_stop clears it) */
		uint64_t period = __atomic_load_n(&clock_period, __ATOMIC_RELAXED);
		if ((int64_t)(kcpu_of(cpu)->clock_deadline - t0) > (int64_t)(period / 2))
			c->clock_early++;	/* a second delivery of a tick already handled */
		/* re-arm before the body: the next deadline keeps the period's phase;
		 * periods that passed while the tick was held are skipped (one tick late) */
		kcpu_of(cpu)->clock_fired = kcpu_of(cpu)->clock_deadline;
		uint64_t next = kcpu_of(cpu)->clock_deadline + period;
		if ((int64_t)(next - t0) <= 0)
			next = t0 + period;
		kcpu_of(cpu)->clock_deadline = next;
		arch_clock_arm(src->vector, next - t0);
	} else {
		/* A tick of a stopped clock: its expiry was latched (the LAPIC's IRR, a signal
		 * queued in the host) before clock_stop ran - e.g. the vCPU stalled for a period
		 * between the re-arm above and a handler that stops the clock. A stopped clock
		 * does not tick: the body does not run, the tick is counted. */
		c->clock_stale++;
		return;
	}
	c->intr_depth++;
	src->fn(src->arg);
	c->intr_depth--;
	uint64_t t1 = arch_cycles();
	if (c->intr_depth == 0)
		c->handler_ticks += t1 - t0;	/* outermost only: nested time is inside */
	c->handlers++;
	src->per_cpu[cpu]++;		/* cpu < INTR_MAX_CPUS: checked on entry */
	__atomic_fetch_add(&src->count, 1, __ATOMIC_RELAXED);	/* soft sources run on any CPU */
	if (stats)
		kstat_add(&src->handler, t1 - t0);
}

void softint_schedule(struct intr_source *src)
{
	KASSERT(src->kind == INTR_SOFT && src->established);
	struct spl_cpu *c = spl_self();
	irqkey_t k = arch_irq_save();
	c->pending |= 1u << src->bit;
	arch_irq_restore(k);
	if (c->intr_depth == 0 && spl_effective(c) < IPL_SOFT) {
		spl_t s = splraise(IPL_SOFT);	/* the lowering finds it pending and runs it */
		splx(s);
	}
}

int clock_start(struct intr_source *clock, unsigned hz)
{
	if (!clock || clock->kind != INTR_CLOCK || !clock->established)
		return KSYNC_EINVAL;
	if (hz < 100 || hz > 100000)
		return KSYNC_EINVAL;
	unsigned cpu = arch_cpu_id();
	irqkey_t k = arch_irq_save();
	uint64_t period = arch_tsc_hz() / hz;
	__atomic_store_n(&clock_period, period, __ATOMIC_RELAXED);
	kcpu_of(cpu)->clock_deadline = arch_cycles() + period;
	arch_clock_arm(clock->vector, period);
	arch_irq_restore(k);
	return KSYNC_OK;
}

void clock_stop(void)
{
	irqkey_t k = arch_irq_save();
	kcpu_this()->clock_deadline = 0;
	arch_clock_stop();
	arch_irq_restore(k);
}

uint64_t clock_period_ticks(void) { return __atomic_load_n(&clock_period, __ATOMIC_RELAXED); }

/* ---- controller operations on one source ---- */
void intr_src_mask(struct intr_source *src)
{
	if (src->kind == INTR_ISA && !INTR_ISA_VIA_IOAPIC)
		arch_pic_write_mask(arch_pic_mask_shadow() | (1u << src->irq));
	else if (src->kind == INTR_CLOCK)
		arch_clock_mask();
}

void intr_src_unmask(struct intr_source *src)
{
	if (src->kind == INTR_ISA && !INTR_ISA_VIA_IOAPIC)
		arch_pic_write_mask(arch_pic_mask_shadow() & ~(1u << src->irq));
	else if (src->kind == INTR_CLOCK && arch_clock_unmask())
		spl_self()->clock_recovered++;
}

void intr_src_eoi(struct intr_source *src)
{
	if (src->kind == INTR_ISA && !INTR_ISA_VIA_IOAPIC)
		arch_pic_eoi(src->irq);
	else if (src->kind != INTR_SOFT)
		arch_lapic_eoi();
}
