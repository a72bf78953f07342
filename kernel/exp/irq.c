/*
 * exp_irq.c - the interrupt-scheme experiments of this build's scheme (protocol.md §5):
 * Small & Manley 1997, Tables 3-7 and the data loss of section 6.4.
 *
 *   irq_prims  the scheme's crit_enter+crit_leave and splraise+splx with no interrupt,
 *              and the Table 5 primitives (off-chip, on-chip, flag, CR8) in the same boot.
 *   irq_load   a synthetic kernel load per workload of the paper (Andrew local, Andrew NFS,
 *              WebStone, Serial 115.2): critical sections entered at the paper's rate with
 *              exponentially distributed durations of the paper's mean (list insert/remove,
 *              counters, a buffer-cache-like hash lookup, then busy work to the drawn
 *              duration), Poisson arrivals, non-critical work in between; the devices of
 *              the workload interrupt meanwhile (clock 100 Hz; real IDE PIO reads; the
 *              serial and network models). Measured per section, with the TSC: time in
 *              crit_enter/crit_leave (minus handler time that ran inside them and the
 *              rdtsc cost), duration, whether an interrupt arrived inside, masked time;
 *              and that time's parts (paper section 5.4, Table 6 against the Table 2
 *              model; issue 8 item 9b): quiet vs interrupted sections, crit_enter vs
 *              crit_leave, handlers dispatched inside them per source, the rdtsc pair as
 *              timed in the load, against a calibration in the same boot (tight-loop
 *              section; one held interrupt of each source dispatched by crit_leave).
 *   irq_loss   the loss grid: the serial model at 38.4k..921.6k baud while the disk moves
 *              0/1/4/16 sectors per interrupt by PIO, with the NIC model and the load.
 * Options (command line, protocol.md section 2): irq_seconds, irq_quick, irq_clock_hz
 * (100..10000, default 100), irq_loss_repeats (1..20, default 3: each loss cell is run
 * that many times and the run with the least loss is reported), irq_rate + irq_mean_ns (an extra "custom" workload with the
 * disk, the serial line and the NIC all running), irq_serial_bits (7..12, default 10 =
 * 8N1: bits per character of the serial model; 8 is the paper's section 6.4 arithmetic,
 * 115.2 kbit/s -> 14,400 characters/s). A value out of range is refused with a message
 * naming the range, and the default is used.
 *
 * What is real: the critical sections, the scheme, the interrupts (LAPIC timer, PIT,
 * RTC, IDE), the PIO transfers. What is modelled: the load's mix (synthetic, at the
 * paper's measured rates), the UART and the NIC (dev.h). Everything runs on the BSP (the
 * paper's uniprocessor); other CPUs idle. Instrumentation lives in this file and in the
 * scheme's slow paths only - the inline fast paths of spl.h carry none, so irq_prims
 * measures them as they are.
 */
#include "kernel.h"
#include "experiment.h"
#include "spl.h"
#include "intr.h"
#include "dev.h"
#include "kstat.h"
#include <ksync/measure.h>
#include <ksync/errors.h>

/* ---- sources ---------------------------------------------------------------------- */
static struct intr_source s_clock, s_disk, s_serial, s_net, s_softnet;
static struct serial_model sm;
static struct net_model nm;
static struct ata_req areq;
static uint16_t abuf[ATA_MAX_PER_IRQ * 16 * 256];	/* 256 sectors */
static bool have_disk;
static uint64_t disk_lba;

/* Data the load's sections protect, touched by handlers too (exclusion checks). */
struct node { struct node *prev, *next; uint32_t key; };
static struct node list_head = { &list_head, &list_head, 0 };
static struct node pool[64];
static volatile uint64_t list_len, list_ops;	/* sections + clock handler */
static volatile uint64_t softnet_work, net_pkts_seen;	/* net handler and softnet */
#define NBUCKET 64
static struct node bufhash[NBUCKET];		/* "buffer cache" headers, key = block */
static volatile uint64_t check_errors;

/* A consistency check of the experiment failed: count it and say which one. */
#define CHECK_FAIL(...) do { check_errors++; kprintf("ktap: # check failed: " __VA_ARGS__); } while (0)

static void list_insert(struct node *n)
{
	n->next = list_head.next;
	n->prev = &list_head;
	list_head.next->prev = n;
	list_head.next = n;
	list_len++;
}
static struct node *list_remove_last(void)
{
	struct node *n = list_head.prev;
	if (n == &list_head)
		return NULL;
	n->prev->next = &list_head;
	list_head.prev = n->prev;
	list_len--;
	return n;
}
static uint64_t list_count(void)
{
	uint64_t k = 0;
	for (struct node *n = list_head.next; n != &list_head && k < 1000; n = n->next)
		k++;
	return k;
}

static uint64_t clock_ticks;
static void clock_h(void *a)
{
	(void)a;
	clock_ticks++;
	/* hardclock-like: move one element on the shared list (IPL_CLOCK; sections exclude it) */
	struct node *n = list_remove_last();
	if (n)
		list_insert(n);
	list_ops++;
}
static void disk_h(void *a) { (void)a; ata_intr(NULL); }
static void serial_h(void *a)
{
	serial_model_intr(a);
	s_serial.arrival = sm.running ? sm.armed_for : 0;	/* for the next latency */
}
static void net_h(void *a)
{
	uint64_t before = nm.packets;
	net_model_intr(a);
	if (nm.packets != before) {
		net_pkts_seen += nm.packets - before;
		softint_schedule(&s_softnet);	/* protocol processing later (paper §6.3) */
	}
}
static void softnet_h(void *a)
{
	(void)a;
	for (volatile unsigned i = 0; i < 200; i++)
		;
	softnet_work++;
}

static int establish(struct intr_source *s, const char *name, enum intr_kind kind,
		     unsigned irq, unsigned level, void (*fn)(void *), void *arg)
{
	memset(s, 0, sizeof *s);
	s->name = name;
	s->kind = kind;
	s->irq = irq;
	s->level = level;
	s->fn = fn;
	s->arg = arg;
	s->stats_on = true;
	int e = intr_establish(s);
	if (e != KSYNC_OK)
		kprintf("ksync: irq experiment: intr_establish(%s) failed: %d\n", name, e);
	return e;
}

static bool sources_up(struct ktest_ctx *kt)
{
	struct ata_info ai;
	have_disk = ata_probe(&ai) == KSYNC_OK;
	if (!have_disk)
		kt_diag(kt, "no ATA disk: the disk source is left out (attach build/disk.img)");
	bool ok = establish(&s_clock, "clock", INTR_CLOCK, 0, IPL_CLOCK, clock_h, NULL) == KSYNC_OK &&
		  establish(&s_serial, "serial", INTR_ISA, DEV_IRQ_PIT, IPL_TTY, serial_h, &sm) == KSYNC_OK &&
		  establish(&s_net, "net", INTR_ISA, DEV_IRQ_RTC, IPL_NET, net_h, &nm) == KSYNC_OK &&
		  establish(&s_softnet, "softnet", INTR_SOFT, 0, IPL_SOFT, softnet_h, NULL) == KSYNC_OK;
	if (ok && have_disk)
		ok = establish(&s_disk, "disk", INTR_ISA, DEV_IRQ_ATA, IPL_BIO, disk_h, NULL) == KSYNC_OK;
	for (unsigned i = 0; i < ARRAY_SIZE(pool); i++)
		if (i % 2 == 0)
			list_insert(&pool[i]);
	return ok;
}

static void sources_down(void)
{
	clock_stop();
	intr_disestablish(&s_clock);
	intr_disestablish(&s_serial);
	intr_disestablish(&s_net);
	intr_disestablish(&s_softnet);
	if (have_disk)
		intr_disestablish(&s_disk);
	while (list_remove_last())
		;
}

/* ---- helpers ---------------------------------------------------------------------- */
static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
/* -ln((i + 0.5) / 64) * 1024: an exponential variate with mean ~1018/1024 per entry */
static const uint16_t exp_tab[64] = {
	4968, 3844, 3320, 2976, 2719, 2513, 2342, 2195, 2067, 1953, 1851, 1758, 1672, 1594,
	1520, 1452, 1388, 1328, 1271, 1217, 1166, 1117, 1070, 1026, 983, 942, 903, 865, 828,
	793, 759, 726, 694, 663, 633, 603, 575, 547, 520, 494, 469, 444, 419, 395, 372, 349,
	327, 305, 284, 263, 243, 223, 203, 184, 165, 146, 128, 110, 92, 75, 58, 41, 24, 8,
};
static uint64_t exp_sample(uint64_t mean)
{
	uint64_t r = rnd();
	/* 64 table points, linearly spread within each by 8 more random bits */
	unsigned i = r & 63, f = (r >> 6) & 255;
	uint64_t a = exp_tab[i], b = i < 63 ? exp_tab[i + 1] : 0;
	uint64_t v = (a * (256 - f) + b * f) / 256;
	return mean * v / 1018;
}

static uint64_t ns_to_ticks(uint64_t ns) { return ns * arch_tsc_hz() / 1000000000ull; }

/* x1000 fixed point as "int.fff" */
static const char *fx3(char *b, uint64_t x1000)
{
	ksnprintf(b, 32, "%lu.%03lu", x1000 / 1000, x1000 % 1000);
	return b;
}

/* The median cost of two back-to-back TSC reads: what each timed crit_enter or
 * crit_leave carries besides itself (the median, not the minimum: under TCG a TSC read
 * is an emulator call whose cost varies, and the sections see its typical cost). */
static uint64_t rdtsc_pair_cost(void)
{
	static struct kstat k;
	kstat_reset(&k);
	for (int i = 0; i < 1001; i++) {
		uint64_t a = arch_cycles(), b = arch_cycles();
		kstat_add(&k, b - a);
	}
	return kstat_median(&k);
}

static uint64_t run_ms = 1000;		/* irq_seconds */
static bool quick;
static unsigned clock_hz = 100;		/* irq_clock_hz: 100..10000 */
static uint64_t custom_rate, custom_mean_ns;	/* irq_rate, irq_mean_ns: an extra "custom" load */
static unsigned loss_repeats = 3;	/* irq_loss_repeats: runs per loss cell, the least loss kept */
static unsigned serial_bits = SERIAL_BITS_8N1;	/* irq_serial_bits: bits per serial character */

/* A decimal unsigned option in [lo, hi]; a clear message and the default otherwise. */
static uint64_t opt_u64(const char *key, uint64_t dflt, uint64_t lo, uint64_t hi)
{
	char buf[24];
	if (!cmdline_get(key, buf, sizeof buf))
		return dflt;
	uint64_t v = 0;
	const char *p = buf;
	for (; *p >= '0' && *p <= '9' && v < (1ull << 40); p++)
		v = v * 10 + (uint64_t)(*p - '0');
	if (*p || p == buf || v < lo || v > hi) {
		kprintf("ksync: %s=%s is not a whole number in %lu..%lu; using %lu\n", key, buf, lo,
			hi, dflt);
		return dflt;
	}
	return v;
}

static void parse_options(void)
{
	char buf[24];
	quick = cmdline_get("irq_quick", buf, sizeof buf) && buf[0] == '1';
	clock_hz = (unsigned)opt_u64("irq_clock_hz", 100, 100, 10000);
	custom_rate = opt_u64("irq_rate", 0, 1, 1000000);
	custom_mean_ns = opt_u64("irq_mean_ns", 3000, 100, 1000000);
	loss_repeats = (unsigned)opt_u64("irq_loss_repeats", 3, 1, 20);
	serial_bits = (unsigned)opt_u64("irq_serial_bits", SERIAL_BITS_8N1, SERIAL_BITS_MIN,
					SERIAL_BITS_MAX);
	if (!cmdline_get("irq_seconds", buf, sizeof buf))
		return;
	uint64_t ms = 0, frac = 0, scale = 1000;
	const char *p = buf;
	while (*p >= '0' && *p <= '9')
		ms = ms * 10 + (uint64_t)(*p++ - '0');
	ms *= 1000;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9' && scale > 1; p++) {
			scale /= 10;
			frac += (uint64_t)(*p - '0') * scale;
		}
	if (*p || ms + frac == 0 || ms + frac > 600000) {
		kprintf("ksync: irq_seconds=%s is not a duration in (0, 600] seconds; using 1\n", buf);
		return;
	}
	run_ms = ms + frac;
}

/* ---- irq_prims -------------------------------------------------------------------- */
#define NB KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH
static uint64_t pt[NB], pe[NB];

static void emit_prim(const char *name, const char *detail)
{
	struct ksync_prim_result r = ksync_prim_compute(pt, NB, OPS, pe, NB);
	char a[24], b[24], c[24], d[24], e[24];
	ksync_fixed2_format(a, sizeof a, r.min_x100);
	ksync_fixed2_format(b, sizeof b, r.median_x100);
	ksync_fixed2_format(c, sizeof c, r.p99_x100);
	ksync_fixed2_format(d, sizeof d, r.max_x100);
	ksync_fixed2_format(e, sizeof e, r.empty_x100);
	kprintf("KSYNC {\"kind\":\"irq_prim\",\"scheme\":\"%s\",\"name\":\"%s\",\"detail\":\"%s\","
		"\"unit\":\"tsc_ticks\",\"batches\":%u,\"ops_per_batch\":%u,\"min\":%s,\"median\":%s,"
		"\"p99\":%s,\"max\":%s,\"empty\":%s}\n", KSYNC_SCHEME, name, detail, NB, OPS,
		a, b, c, d, e);
}

#define PRIM(name, detail, BODY)                                                      \
	do {                                                                          \
		KSYNC_MEASURE(pe, 16, OPS, BODY);                                     \
		KSYNC_MEASURE(pe, NB, OPS, (void)0);                                  \
		KSYNC_MEASURE(pt, NB, OPS, BODY);                                     \
		emit_prim(name, detail);                                              \
	} while (0)

KEXPERIMENT(irq_prims, "default")
{
	kprintf("KSYNC {\"kind\":\"irq_scheme\",\"scheme\":\"%s\",\"cpus\":%u}\n", KSYNC_SCHEME,
		arch_ncpus());
	/* the sources are established (their lines registered, so spl-pessim has real masks
	 * to write) but every device is quiet: no interrupt arrives during the rows */
	KT_ASSERT(sources_up(kt));
	KT_ASSERT(arch_irq_enabled());
	PRIM("crit_enter_leave", KSYNC_SCHEME " crit_enter(); crit_leave(), IF on, no interrupt",
	     ({ crit_enter(); crit_leave(); }));
	PRIM("splraise_splx", KSYNC_SCHEME " splx(splraise(IPL_BIO))",
	     ({ spl_t s = splraise(IPL_BIO); splx(s); }));
	irqkey_t k = arch_irq_save();
	uint32_t imr = arch_meas_offchip_read();
	unsigned prio = arch_tpr_get();
	PRIM("offchip", ARCH_MEAS_OFFCHIP_DETAIL, arch_meas_offchip_pair(imr));
	PRIM("onchip", ARCH_MEAS_ONCHIP_DETAIL, arch_meas_onchip_pair());
	arch_irq_disable();
	PRIM("flag", ARCH_MEAS_FLAG_DETAIL, arch_meas_flag_pair());
	PRIM("flag_incdec", ARCH_MEAS_FLAG_INCDEC_DETAIL, arch_meas_flag_incdec());
	PRIM("cr8", ARCH_MEAS_PRIO_DETAIL, ({ arch_tpr_set(15); arch_tpr_set(prio); }));
	arch_irq_restore(k);
	KT_EXPECT_EQ(spl_level(), IPL_NONE);
	sources_down();
}

/* ---- the load ------------------------------------------------------------------- */
struct workload {
	const char *name;
	unsigned rate;		/* critical sections per second (paper Table 3 mean) */
	unsigned mean_ns;	/* mean duration (paper Table 3) */
	unsigned disk_per_irq;	/* 0: no disk load */
	bool net, serial;
};
static const struct workload workloads[] = {
	{ "andrew-local", 36048, 3100, 4, false, false },
	{ "andrew-nfs", 25867, 4600, 1, true, false },
	{ "webstone", 34468, 3300, 1, true, false },
	{ "serial-115.2", 47762, 600, 0, false, true },
};

/* The parts of the measured synchronization time (Table 6d, issue 8 item 9b). Every
 * section is "quiet" (no handler ran and nothing was deferred from its crit_enter to the
 * end of its crit_leave) or "interrupted"; sync = quiet_ticks + intr_enter + intr_leave.
 * pair = the rdtsc pair cost subtracted twice per section; pair_load_* = the same pair
 * timed inside the load, once per section, just before the section (cold, as the
 * section's own reads are), so the instrumentation's misestimate is measured, not
 * guessed. handlers_enter / handlers_leave = handler runs (device and soft) dispatched
 * inside crit_enter / crit_leave, whose bodies are subtracted but whose entry, exit and
 * replay are not. clamped = what clamping a negative s_enter / s_leave to 0 added. */
#define NSRC_MAX 5	/* clock, disk, serial, net, soft (the calibration's order) */
struct sync_parts {
	uint64_t pair, pair_load_sum, pair_load_n;
	struct kstat pair_load;		/* for its median: the mean carries host preemptions */
	uint64_t quiet_n, quiet_ticks, intr_n, intr_enter, intr_leave;
	uint64_t handlers_enter, handlers_leave, clamped;
	uint64_t by_src[NSRC_MAX];	/* handlers in crit_enter/crit_leave, per source */
};

struct load_result {
	uint64_t n, sync, busy, interrupted, deferred, replayed, windows;
	uint64_t win_sum, win_sumsq, win_max;	/* sections per window */
	struct kstat dur, masked;
	struct sync_parts sp;
};
static struct load_result lr;

/* Calibration of the parts, before the loads (same boot, same timing code as a load
 * section, sections 2 µs long):
 *   cal_quiet (cal_enter, cal_leave) = median crit_enter + crit_leave (and each half)
 *	with nothing pending, in a tight loop;
 *   cal[src] = median extra cost per handler run of a section during which interrupts of
 *	src (one, or a chain) arrived and were dispatched by its crit_leave, the handler
 *	bodies subtracted: what a held interrupt of that source costs there (spl-pessim:
 *	taken at the unmask, with its mask writes and EOIs; optimistic schemes: replayed,
 *	its line unmasked). Sources:
 *	soft (s_softnet scheduled inside the section: the software path), serial (the
 *	PIT, IRQ 0), net (the RTC, IRQ 8 behind the slave 8259A; its softnet run is charged
 *	at the soft cost and taken out), disk (IDE, IRQ 14, one sector per interrupt).
 *	The clock has no calibration of its own (100 Hz: too few in 0.3 s); Table 6d charges
 *	it at the serial cost. A sample during which another source ran is dropped. */
static void stats_reset_all(void);
static void disk_kick(unsigned per_irq);
static void disk_quiesce(void);
static bool devices_start(struct ktest_ctx *kt, bool serial, unsigned baud, bool net, uint64_t ms);
static void devices_stop(bool serial, bool net);

enum { SRC_CLOCK, SRC_DISK, SRC_SERIAL, SRC_NET, SRC_SOFT, NSRC };
static const char *const src_names[NSRC] = { "clock", "disk", "serial", "net", "soft" };
static struct intr_source *const src_of[NSRC] = { &s_clock, &s_disk, &s_serial, &s_net, &s_softnet };
_Static_assert(NSRC == NSRC_MAX, "struct sync_parts counts every calibrated source");
/* Written and read only by the experiment's thread on the BSP (handlers never touch
 * them); the per-source counts read through src_of[] are written by handlers on this CPU
 * and read here whole (aligned 64-bit loads). */
static uint64_t cal_quiet, cal_enter, cal_leave, cal[NSRC], cal_n[NSRC];
static struct kstat cal_k, cal_ke, cal_kl;

static void src_counts(uint64_t *out)
{
	for (unsigned i = 0; i < NSRC; i++)
		out[i] = src_of[i]->count;
}

struct timed { int64_t enter, leave; uint64_t handlers, deferred; };

static struct timed timed_section(struct spl_cpu *c, uint64_t pair, uint64_t body, bool soft)
{
	uint64_t h0 = c->handler_ticks, n0 = c->handlers, f0 = c->deferred;
	uint64_t ta = arch_cycles();
	crit_enter();
	uint64_t tb = arch_cycles();
	uint64_t h1 = c->handler_ticks;
	if (soft)
		softint_schedule(&s_softnet);	/* held: the section is at IPL_HIGH */
	while (arch_cycles() - tb < body)
		;
	uint64_t tc = arch_cycles();
	uint64_t h2 = c->handler_ticks;
	crit_leave();
	uint64_t td = arch_cycles();
	struct timed t = {
		.enter = (int64_t)(tb - ta) - (int64_t)(h1 - h0) - (int64_t)pair,
		.leave = (int64_t)(td - tc) - (int64_t)(c->handler_ticks - h2) - (int64_t)pair,
		.handlers = c->handlers - n0, .deferred = c->deferred - f0,
	};
	return t;
}

static uint64_t pos_or_0(int64_t v) { return v > 0 ? (uint64_t)v : 0; }

/* Sections while one device runs; cal[src] = the median, over sections into which only
 * `src` interrupted (k >= 1 runs, plus the net's softnet runs), of the extra cost / k. */
static void cal_device(struct ktest_ctx *kt, unsigned src, uint64_t pair)
{
	struct spl_cpu *c = spl_self();
	uint64_t ms = 300, body = ns_to_ticks(2000), before[NSRC], after[NSRC];
	if (src == SRC_DISK && !have_disk)
		return;
	if (src != SRC_DISK && !arch_has_platform_devices())
		return;		/* the models need the PIT/RTC: no calibration for them */
	if (src != SRC_DISK && !devices_start(kt, src == SRC_SERIAL, 115200, src == SRC_NET, ms))
		return;
	kstat_reset(&cal_k);
	uint64_t end = arch_cycles() + ms * arch_tsc_hz() / 1000;
	while ((int64_t)(arch_cycles() - end) < 0) {
		if (src == SRC_DISK)
			disk_kick(1);
		src_counts(before);
		struct timed t = timed_section(c, pair, body, false);
		src_counts(after);
		uint64_t soft = after[SRC_SOFT] - before[SRC_SOFT], k = after[src] - before[src];
		/* k runs of src (a chain: the disk's next sector interrupts as soon as the
		 * handler read one), nothing else but the net's softnet runs */
		if (k && t.handlers == k + (src == SRC_NET ? soft : 0)) {
			int64_t v = t.enter + t.leave - (int64_t)cal_quiet - (int64_t)(soft * cal[SRC_SOFT]);
			kstat_add(&cal_k, pos_or_0(v) / k);
		}
		for (volatile unsigned i = 0; i < 200; i++)
			;
	}
	if (src == SRC_DISK)
		disk_quiesce();
	else
		devices_stop(src == SRC_SERIAL, src == SRC_NET);
	cal[src] = kstat_median(&cal_k);
	cal_n[src] = cal_k.n;
}

static void sync_calibrate(struct ktest_ctx *kt)
{
	struct spl_cpu *c = spl_self();
	uint64_t pair = rdtsc_pair_cost();
	kstat_reset(&cal_k);
	kstat_reset(&cal_ke);
	kstat_reset(&cal_kl);
	for (unsigned i = 0; i < 2000; i++) {
		struct timed t = timed_section(c, pair, 0, false);
		if (t.handlers)
			continue;
		kstat_add(&cal_k, pos_or_0(t.enter) + pos_or_0(t.leave));
		kstat_add(&cal_ke, pos_or_0(t.enter));
		kstat_add(&cal_kl, pos_or_0(t.leave));
	}
	cal_quiet = kstat_median(&cal_k);
	cal_enter = kstat_median(&cal_ke);
	cal_leave = kstat_median(&cal_kl);
	kstat_reset(&cal_k);
	for (unsigned i = 0; i < 2000; i++) {
		struct timed t = timed_section(c, pair, 0, true);
		if (t.handlers != 1)
			continue;
		kstat_add(&cal_k, pos_or_0(t.enter + t.leave - (int64_t)cal_quiet));
	}
	cal[SRC_SOFT] = kstat_median(&cal_k);
	cal_n[SRC_SOFT] = cal_k.n;
	stats_reset_all();
	cal_device(kt, SRC_SERIAL, pair);
	cal_device(kt, SRC_NET, pair);
	cal_device(kt, SRC_DISK, pair);
}

static void disk_kick(unsigned per_irq)
{
	if (!have_disk || !per_irq)
		return;
	if (areq.count && !areq.done)
		return;				/* one request at a time */
	memset(&areq, 0, sizeof areq);
	areq.count = 64;
	areq.per_irq = per_irq;
	areq.lba = disk_lba;
	areq.buf = abuf;
	disk_lba = (disk_lba + 64) % 8192;
	int rc = ata_read_start(&areq);
	if (rc != KSYNC_OK)
		CHECK_FAIL("ata_read_start: %s\n", ksync_strerror(rc));
}

static void disk_quiesce(void)
{
	if (!have_disk || !areq.count)
		return;
	uint64_t dl = arch_cycles() + 2 * arch_tsc_hz();
	while (!areq.done && (int64_t)(arch_cycles() - dl) < 0)
		arch_cpu_relax();
	if (!areq.done) {
		CHECK_FAIL("disk request not done 2 s after the load (%u of %u sectors)\n",
			   areq.done_sectors, areq.count);
		ata_reset();
	}
	areq.count = 0;
}

/* Run sections at `rate` with mean duration `mean_ns` for `ms`, kicking the disk. */
static void run_load(unsigned rate, unsigned mean_ns, unsigned disk_per_irq, uint64_t ms)
{
	struct spl_cpu *c = spl_self();
	memset(&lr, 0, sizeof lr);
	kstat_reset(&lr.dur);
	kstat_reset(&lr.masked);
	kstat_reset(&lr.sp.pair_load);
	uint64_t pair = rdtsc_pair_cost();
	lr.sp.pair = pair;
	uint64_t mean_ticks = ns_to_ticks(mean_ns), gap_mean = arch_tsc_hz() / rate;
	uint64_t window = arch_tsc_hz() / 10, t0 = arch_cycles(), end = t0 + ms * arch_tsc_hz() / 1000;
	uint64_t win_end = t0 + window, win_n = 0, next = t0;
	uint64_t def0 = c->deferred, rep0 = c->replayed;
	bool pess = !SPL_OPTIMISTIC;	/* spl.h */
	for (;;) {
		uint64_t now = arch_cycles();
		if ((int64_t)(now - end) >= 0)
			break;
		if ((int64_t)(now - win_end) >= 0) {
			lr.win_sum += win_n;
			lr.win_sumsq += win_n * win_n;
			if (win_n > lr.win_max)
				lr.win_max = win_n;
			lr.windows++;
			win_n = 0;
			win_end += window;
		}
		disk_kick(disk_per_irq);
		/* non-critical work until the next arrival */
		while ((int64_t)(arch_cycles() - next) < 0)
			for (volatile unsigned i = 0; i < 20; i++)
				;
		next += exp_sample(gap_mean);
		if ((int64_t)(arch_cycles() - next) > (int64_t)(100 * gap_mean))
			next = arch_cycles();	/* far behind (a long handler): do not burst */
		uint64_t d = exp_sample(mean_ticks), op = rnd();
		/* the instrumentation as the section will see it: one pair, timed here */
		uint64_t e_n = c->handlers, e0 = arch_cycles(), e1 = arch_cycles();
		if (c->handlers == e_n) {
			lr.sp.pair_load_sum += e1 - e0;
			lr.sp.pair_load_n++;
			kstat_add(&lr.sp.pair_load, e1 - e0);
		}
		uint64_t cnt0[NSRC], cnt1[NSRC];
		src_counts(cnt0);
		uint64_t h0 = c->handler_ticks, n0 = c->handlers, f0 = c->deferred;
		uint64_t ta = arch_cycles();
		crit_enter();
		uint64_t tb = arch_cycles();
		uint64_t h1 = c->handler_ticks, n1 = c->handlers;
		/* the protected operation */
		switch (op & 3) {
		case 0: {				/* list insert or remove */
			struct node *n = list_remove_last();
			if (n)
				list_insert(n);
			list_ops++;
			break;
		}
		case 1:					/* counters */
			list_ops++;
			break;
		default: {				/* buffer-cache-like hash lookup */
			unsigned key = (unsigned)(op >> 8) % 4096;
			struct node *b = &bufhash[key % NBUCKET];
			if (b->key != key)
				b->key = key;
			break;
		}
		}
		while (arch_cycles() - tb < d)
			;
		uint64_t tc = arch_cycles();
		uint64_t h2 = c->handler_ticks, n2 = c->handlers;
		crit_leave();
		uint64_t td = arch_cycles();
		uint64_t h3 = c->handler_ticks, n3 = c->handlers, f3 = c->deferred;
		int64_t s_enter = (int64_t)(tb - ta) - (int64_t)(h1 - h0) - (int64_t)pair;
		int64_t s_leave = (int64_t)(td - tc) - (int64_t)(h3 - h2) - (int64_t)pair;
		uint64_t se = (uint64_t)(s_enter > 0 ? s_enter : 0), sl = (uint64_t)(s_leave > 0 ? s_leave : 0);
		lr.sync += se + sl;
		/* unsigned wrap: adds -s when s < 0, nothing otherwise */
		lr.sp.clamped += (se - (uint64_t)s_enter) + (sl - (uint64_t)s_leave);
		if (n3 == n0 && f3 == f0) {
			lr.sp.quiet_n++;
			lr.sp.quiet_ticks += se + sl;
		} else {
			lr.sp.intr_n++;
			lr.sp.intr_enter += se;
			lr.sp.intr_leave += sl;
			lr.sp.handlers_enter += n1 - n0;
			lr.sp.handlers_leave += n3 - n2;
			/* per source: what ran from crit_enter to the end of crit_leave minus what
			 * ran in the body (nothing in the body runs, in every scheme: the section
			 * holds every source) */
			src_counts(cnt1);
			for (unsigned k = 0; k < NSRC; k++)
				lr.sp.by_src[k] += cnt1[k] - cnt0[k];
		}
		bool interrupted = pess ? n3 != n1 : f3 != f0;
		lr.interrupted += interrupted;
		lr.n++;
		win_n++;
		kstat_add(&lr.dur, tc - tb);
		kstat_add(&lr.masked, pess ? td - ta : interrupted ? td - tb : 0);
	}
	lr.busy = arch_cycles() - t0;
	lr.deferred = c->deferred - def0;
	lr.replayed = c->replayed - rep0;
	disk_quiesce();
}

/* kprintf formats into 1024 bytes: a longer row (an irq_load row with two long histograms
 * and its sync parts) went out cut, without its newline, and the tool dropped it (issue 8:
 * spl-pessim's Andrew local row was missing). Whole rows, in pieces. */
static void print_long(const char *s, size_t len, size_t cap)
{
	char piece[513];
	if (len > cap - 1)
		len = cap - 1;			/* PUTJ stopped at the buffer's end */
	for (size_t o = 0; o < len; o += 512) {
		size_t k = len - o < 512 ? len - o : 512;
		memcpy(piece, s + o, k);
		piece[k] = 0;
		kprintf("%s", piece);
	}
}

#define PUTJ(...) do { if (pos < sizeof out) pos += (size_t)ksnprintf(out + pos, sizeof out - pos, __VA_ARGS__); } while (0)
static char out[4096];

static void emit_load(const char *wl, const struct workload *w)
{
	size_t pos = 0;
	char a[32], b[32], e[32], f[32], g[32], h[32];
	uint64_t hz = arch_tsc_hz();
	uint64_t nw = lr.windows ? lr.windows : 1;
	uint64_t mean_w = lr.win_sum / nw;		/* per 0.1 s */
	uint64_t var = lr.win_sumsq / nw > mean_w * mean_w ? lr.win_sumsq / nw - mean_w * mean_w : 0;
	uint64_t secs1000 = lr.busy * 1000 / hz;
	uint64_t intr_ps1000 = secs1000 ? lr.interrupted * 1000000 / secs1000 : 0;
	uint64_t intr_pct1000 = lr.n ? lr.interrupted * 100000 / lr.n : 0;
	uint64_t sync_pct1000 = lr.busy ? lr.sync * 100000 / lr.busy : 0;
	PUTJ("KSYNC {\"kind\":\"irq_load\",\"scheme\":\"%s\",\"workload\":\"%s\",\"seconds\":%s,"
	     "\"window_s\":0.1,\"target_per_s\":%u,\"target_mean_us\":%s,\"crit\":{\"n\":%lu,"
	     "\"per_s_mean\":%lu,\"per_s_std\":%lu,\"per_s_max\":%lu,",
	     KSYNC_SCHEME, wl, fx3(a, secs1000), w->rate, fx3(b, w->mean_ns), lr.n,
	     mean_w * 10, isqrt64(var) * 10, lr.win_max * 10);
	PUTJ("\"dur_mean\":%lu,\"dur_median\":%lu,\"dur_max\":%lu,",
	     kstat_mean(&lr.dur), kstat_median(&lr.dur), lr.dur.max);
	kstat_json_hist(&lr.dur, out, sizeof out, &pos);	/* the durations' log2 bins */
	PUTJ("},\"interrupted\":%lu,\"interrupted_per_s\":%s,\"interrupted_pct\":%s,"
	     "\"sync_ticks\":%lu,\"busy_ticks\":%lu,\"sync_pct\":%s,\"deferred\":%lu,\"replayed\":%lu,",
	     lr.interrupted, fx3(e, intr_ps1000), fx3(f, intr_pct1000), lr.sync, lr.busy,
	     fx3(g, sync_pct1000), lr.deferred, lr.replayed);
	kstat_json(&lr.masked, "masked", true, out, sizeof out, &pos);
	struct sync_parts *p = &lr.sp;
	PUTJ(",\"sync_parts\":{\"pair\":%lu,\"pair_load_sum\":%lu,\"pair_load_n\":%lu,"
	     "\"pair_load_median\":%lu,\"quiet_n\":%lu,\"quiet_ticks\":%lu,\"intr_n\":%lu,"
	     "\"intr_enter_ticks\":%lu,\"intr_leave_ticks\":%lu,\"handlers_in_enter\":%lu,"
	     "\"handlers_in_leave\":%lu,\"clamped_ticks\":%lu,\"cal_quiet\":%lu,"
	     "\"cal_enter\":%lu,\"cal_leave\":%lu",
	     p->pair, p->pair_load_sum, p->pair_load_n, kstat_median(&p->pair_load), p->quiet_n,
	     p->quiet_ticks, p->intr_n, p->intr_enter, p->intr_leave, p->handlers_enter,
	     p->handlers_leave, p->clamped, cal_quiet, cal_enter, cal_leave);
	PUTJ(",\"handlers_by_source\":{");
	for (unsigned k = 0; k < NSRC; k++)
		PUTJ("%s\"%s\":%lu", k ? "," : "", src_names[k], p->by_src[k]);
	PUTJ("},\"cal_by_source\":{");
	for (unsigned k = 0; k < NSRC; k++)
		PUTJ("%s\"%s\":%lu", k ? "," : "", src_names[k], cal[k]);
	PUTJ("},\"cal_n_by_source\":{");
	for (unsigned k = 0; k < NSRC; k++)
		PUTJ("%s\"%s\":%lu", k ? "," : "", src_names[k], cal_n[k]);
	PUTJ("}}");
	PUTJ(",\"check_errors\":%lu}\n", check_errors);
	(void)h;
	print_long(out, pos, sizeof out);
}

static void emit_source(const char *wl, struct intr_source *s, const char *src_name, uint64_t busy)
{
	if (!s->established)
		return;
	size_t pos = 0;
	char a[32];
	uint64_t secs1000 = busy * 1000 / arch_tsc_hz();
	uint64_t ps1000 = secs1000 ? s->count * 1000000 / secs1000 : 0;
	PUTJ("KSYNC {\"kind\":\"irq_source\",\"scheme\":\"%s\",\"workload\":\"%s\",\"source\":\"%s\","
	     "\"level\":\"%s\",\"irqs\":%lu,\"per_s\":%s,", KSYNC_SCHEME, wl, src_name,
	     ipl_name(s->level), s->count, fx3(a, ps1000));
	kstat_json(&s->handler, "handler", false, out, sizeof out, &pos);
	PUTJ(",");
	kstat_json(&s->latency, "latency", true, out, sizeof out, &pos);
	PUTJ(",\"deferred\":%lu}\n", s->deferred);
	print_long(out, pos, sizeof out);
}

static void stats_reset_all(void)
{
	intr_stats_reset(&s_clock);
	intr_stats_reset(&s_serial);
	intr_stats_reset(&s_net);
	intr_stats_reset(&s_softnet);
	if (have_disk)
		intr_stats_reset(&s_disk);
}

/* Start the devices of a case; false (with a diagnostic) if a model refused. */
static bool devices_start(struct ktest_ctx *kt, bool serial, unsigned baud, bool net, uint64_t ms)
{
	if (serial) {
		uint64_t nchars = (uint64_t)baud / serial_bits * ms / 1000 + 1;
		int e = serial_model_start_bits(&sm, baud, serial_bits, 8, nchars);
		if (e != KSYNC_OK) {
			kt_diag(kt, "serial_model_start(%u baud) = %d", baud, e);
			return false;
		}
		s_serial.arrival = sm.armed_for;
	}
	if (net) {
		/* 8 packets of 1024 bytes every 2 ms (32 Mbit/s in bursts), ring 32, 1024 Hz */
		uint64_t npk = 8 * (ms / 2 + 1);
		int e = net_model_start(&nm, 8, 1024, 2000, 32, 1024, npk);
		if (e != KSYNC_OK) {
			kt_diag(kt, "net_model_start = %d", e);
			if (serial)
				serial_model_stop(&sm);
			return false;
		}
	}
	return true;
}

static void devices_stop(bool serial, bool net)
{
	/* let the streams finish (their own schedule), bounded */
	uint64_t dl = arch_cycles() + 3 * arch_tsc_hz();
	while (((serial && !sm.done) || (net && !nm.done)) && (int64_t)(arch_cycles() - dl) < 0)
		arch_cpu_relax();
	if (serial) {
		if (!sm.done)
			CHECK_FAIL("serial stream not done 3 s after its schedule\n");
		if (sm.gaps_seen != sm.lost || sm.seq_errors)
			CHECK_FAIL("serial: %lu gaps seen, %lu lost, %lu sequence errors\n",
				   (unsigned long)sm.gaps_seen, (unsigned long)sm.lost,
				   (unsigned long)sm.seq_errors);
		serial_model_stop(&sm);
	}
	if (net) {
		if (!nm.done)
			CHECK_FAIL("net stream not done 3 s after its schedule\n");
		if (nm.gaps_seen != nm.dropped || nm.seq_errors || nm.data_errors)
			CHECK_FAIL("net: %lu gaps seen, %lu dropped, %lu sequence, %lu data errors\n",
				   (unsigned long)nm.gaps_seen, (unsigned long)nm.dropped,
				   (unsigned long)nm.seq_errors, (unsigned long)nm.data_errors);
		net_model_stop(&nm);
	}
}

static bool list_consistent(void)
{
	crit_enter();
	bool ok = list_count() == list_len;
	crit_leave();
	return ok;
}

KEXPERIMENT(irq_load, "default")
{
	parse_options();
	KT_ASSERT(sources_up(kt));
	check_errors = 0;
	KT_ASSERT_EQ(clock_start(&s_clock, clock_hz), KSYNC_OK);
	sync_calibrate(kt);
	struct workload custom = { "custom", (unsigned)custom_rate, (unsigned)custom_mean_ns, 4, true, true };
	unsigned nw = ARRAY_SIZE(workloads) + (custom_rate ? 1 : 0);
	for (unsigned i = 0; i < nw; i++) {
		const struct workload *w = i < ARRAY_SIZE(workloads) ? &workloads[i] : &custom;
		if ((w->serial || w->net) && !arch_has_platform_devices()) {
			kt_diag(kt, "%s: left out: no platform devices on this port (%s) for "
				"its serial/NIC model", w->name, ARCH_NAME);
			continue;
		}
		stats_reset_all();
		if (!devices_start(kt, w->serial, 115200, w->net, run_ms)) {
			KT_EXPECT(false);
			continue;
		}
		run_load(w->rate, w->mean_ns, w->disk_per_irq, run_ms);
		devices_stop(w->serial, w->net);
		if (!list_consistent())
			CHECK_FAIL("the workload's list is inconsistent after %s\n", w->name);
		emit_load(w->name, w);
		emit_source(w->name, &s_clock, "clock", lr.busy);
		if (w->disk_per_irq)
			emit_source(w->name, &s_disk, "disk", lr.busy);
		if (w->serial)
			emit_source(w->name, &s_serial, "serial", lr.busy);
		if (w->net)
			emit_source(w->name, &s_net, "net", lr.busy);
		kt_diag(kt, "%s: %lu sections, %lu interrupted, deferred %lu, sync %lu of %lu ticks",
			w->name, lr.n, lr.interrupted, lr.deferred, lr.sync, lr.busy);
	}
	KT_EXPECT_EQ(check_errors, 0);
	KT_EXPECT_EQ(spl_self()->violations, 0);
	sources_down();
}

/* ---- data loss: fast serial during long PIO handlers (paper §6.4) ----------------- */
KEXPERIMENT(irq_loss, "default")
{
	parse_options();
	static const unsigned bauds_full[] = { 38400, 115200, 230400, 460800, 921600 };
	static const unsigned bauds_quick[] = { 115200, 921600 };
	static const unsigned pio_full[] = { 0, 1, 4, 16 };
	static const unsigned pio_quick[] = { 0, 16 };
	const unsigned *bauds = quick ? bauds_quick : bauds_full;
	const unsigned *pios = quick ? pio_quick : pio_full;
	unsigned nb = quick ? ARRAY_SIZE(bauds_quick) : ARRAY_SIZE(bauds_full);
	unsigned np = quick ? ARRAY_SIZE(pio_quick) : ARRAY_SIZE(pio_full);
	uint64_t ms = run_ms / 4 < 100 ? 100 : run_ms / 4;
	if (!arch_has_platform_devices())
		KT_SKIP("no platform devices on this port (arch_has_platform_devices() is false): "
			"the serial and NIC models need the PIT and RTC");
	KT_ASSERT(sources_up(kt));
	check_errors = 0;
	KT_ASSERT_EQ(clock_start(&s_clock, clock_hz), KSYNC_OK);
	for (unsigned b = 0; b < nb; b++)
		for (unsigned p = 0; p < np; p++) {
			unsigned pio = have_disk ? pios[p] : 0;
			if (!have_disk && pios[p])
				continue;
			/* the least loss of `repeats` runs: under an emulator the host's
			 * scheduling only ever adds loss (a vCPU held off for ms) */
			uint64_t best_lost = UINT64_MAX, chars = 0, pk = 0, dr = 0, hmean = 0, busy = 0;
			for (unsigned rep = 0; rep < loss_repeats; rep++) {
				stats_reset_all();
				if (!devices_start(kt, true, bauds[b], true, ms)) {
					KT_EXPECT(false);
					break;
				}
				run_load(36048, 3100, pio, ms);
				devices_stop(true, true);
				if (sm.lost < best_lost) {
					best_lost = sm.lost;
					chars = sm.chars;
					pk = nm.packets;
					dr = nm.dropped;
					hmean = have_disk ? kstat_mean(&s_disk.handler) : 0;
					busy = lr.busy;
				}
			}
			if (best_lost == UINT64_MAX)
				continue;
			char a[32];
			kprintf("KSYNC {\"kind\":\"irq_loss\",\"scheme\":\"%s\",\"baud\":%u,\"trigger\":8,"
				"\"pio_sectors\":%u,\"pio_handler_mean\":%lu,\"chars\":%lu,\"lost\":%lu,"
				"\"packets\":%lu,\"dropped\":%lu,\"seconds\":%s,\"repeats\":%u,"
				"\"serial_bits\":%u}\n", KSYNC_SCHEME,
				bauds[b], pio, hmean, chars, best_lost, pk, dr,
				fx3(a, busy * 1000 / arch_tsc_hz()), loss_repeats, serial_bits);
		}
	KT_EXPECT_EQ(check_errors, 0);
	KT_EXPECT_EQ(spl_self()->violations, 0);
	sources_down();
}
