/*
 * serial_load.c - the serial line as a load beside user programs (issue 26 item 3).
 *
 * Small & Manley 1997, section 5.1 (the fourth workload, "Serial 115.2": a 64 KB file
 * received by tip(1) at 115,200 bit/s, Tables 3 and 4) and section 6.4 (a 16550 holds 16
 * characters; an interrupt held off longer than 16 character times loses the rest). The
 * boot word serial_load=BAUD[:BITS] (mode=user) runs the paced 16550 receiver of
 * serial_model.c for as long as the user programs run: its interrupt (the PIT, IRQ0, at
 * IPL_TTY, through the running scheme like every other source) arrives at the trigger
 * level 8 - every ~694 us at 115.2 kbit/s and 10 bits a character - while the programs
 * take the kernel's critical sections, so the census (/proc/ksync-critsec) counts the
 * sections it arrived in, and the model counts the characters a late handler lost.
 *
 * /proc/ksync-serial (procfs.c) shows the running totals, which a program reads around
 * what it measures (bench/user/smload.c); at the end the runner asks the model to end its
 * stream where it has got to, waits for the handler to do it, and prints the totals as
 * `KSYNC {"kind":"serial_load",...}` with the driver's check (gaps seen == lost).
 *
 * Shared state: `sl_on` is written by the runner before the first program is created and
 * after the last one ended (program creation and the wait order it for the programs'
 * reads); the model's statistics are its handler's (dev.h), read here relaxed - a reading
 * is each counter's value at a slightly different moment, exact once done.
 */
#include "kernel.h"
#include "dev.h"
#include "intr.h"
#include "serial_load.h"

#define SL_TRIGGER 8			/* the 16550 trigger level the paper's tip ran with */
#define SL_SECONDS (4ull * 3600)	/* a stream long enough for any run of programs */

static struct serial_model sl_model;	/* its handler's (dev.h) */
static struct intr_source sl_src;	/* the runner's: established once, removed at the end */
static bool sl_on;			/* the runner's (top comment) */

/* A decimal number at *s (at most 9 digits), *s moved past it; false if there is none. */
static bool sl_number(const char **s, unsigned long *v)
{
	const char *p = *s;
	*v = 0;
	for (; *p >= '0' && *p <= '9' && p - *s < 9; p++)
		*v = *v * 10 + (unsigned long)(*p - '0');
	bool ok = p != *s && !(*p >= '0' && *p <= '9');
	*s = p;
	return ok;
}

int serial_load_start(const char *spec, char *why, size_t n)
{
	const char *p = spec;
	unsigned long baud, bits = SERIAL_BITS_8N1;
	bool ok = sl_number(&p, &baud);
	if (ok && *p == ':') {
		p++;
		ok = sl_number(&p, &bits);
	}
	if (!ok || *p) {
		ksnprintf(why, n, "'%s' is not BAUD or BAUD:BITS", spec);
		return KSYNC_EINVAL;
	}
	if (baud < 9600 || baud > 921600 || bits < SERIAL_BITS_MIN || bits > SERIAL_BITS_MAX) {
		ksnprintf(why, n, "baud 9600..921600 and %u..%u bits a character (got %lu:%lu)",
			  SERIAL_BITS_MIN, SERIAL_BITS_MAX, baud, bits);
		return KSYNC_EINVAL;
	}
	if (sl_on) {
		ksnprintf(why, n, "the serial load already runs");
		return KSYNC_EBUSY;
	}
	sl_src = (struct intr_source){
		.name = "serial-load", .kind = INTR_ISA, .irq = DEV_IRQ_PIT, .level = IPL_TTY,
		.fn = serial_model_intr, .arg = &sl_model,
	};
	int e = intr_establish(&sl_src);
	if (e != KSYNC_OK) {
		ksnprintf(why, n, "its interrupt (IRQ%u): %s", DEV_IRQ_PIT, ksync_strerror(e));
		return e;
	}
	uint64_t nchars = baud / bits * SL_SECONDS;
	e = serial_model_start_bits(&sl_model, (unsigned)baud, (unsigned)bits, SL_TRIGGER, nchars);
	if (e != KSYNC_OK) {
		intr_disestablish(&sl_src);
		ksnprintf(why, n, "the model refused it (its reason above): %s", ksync_strerror(e));
		return e;
	}
	sl_on = true;
	kprintf("ksync: serial_load: a 16550 receiving at %lu bit/s, %lu bits a character "
		"(%lu characters/s), trigger level %u, interrupt IRQ%u at IPL_TTY\n", baud, bits,
		baud / bits, SL_TRIGGER, DEV_IRQ_PIT);
	return KSYNC_OK;
}

bool serial_load_running(void) { return sl_on; }

/* One reading of the model's counters (relaxed: the handler goes on writing them). */
struct sl_reading {
	uint64_t arrived, chars, lost, irqs, lossy_irqs, gaps, seq_errors, latency_max,
		 handler_max;
};

static void sl_read(struct sl_reading *r)
{
	const struct serial_model *m = &sl_model;
	/* arrived: the schedule's count by now (its parameters are read-only after start) */
	r->arrived = paced_arrived(&m->p, arch_cycles());
	r->chars = __atomic_load_n(&m->chars, __ATOMIC_RELAXED);
	r->lost = __atomic_load_n(&m->lost, __ATOMIC_RELAXED);
	r->irqs = __atomic_load_n(&m->irqs, __ATOMIC_RELAXED);
	r->lossy_irqs = __atomic_load_n(&m->lossy_irqs, __ATOMIC_RELAXED);
	r->gaps = __atomic_load_n(&m->gaps_seen, __ATOMIC_RELAXED);
	r->seq_errors = __atomic_load_n(&m->seq_errors, __ATOMIC_RELAXED);
	r->latency_max = __atomic_load_n(&m->latency_tsc_max, __ATOMIC_RELAXED);
	r->handler_max = __atomic_load_n(&m->handler_tsc_max, __ATOMIC_RELAXED);
}

static size_t sl_json(char *buf, size_t n, const struct sl_reading *r)
{
	const struct serial_model *m = &sl_model;
	return ksnprintf(buf, n, "\"baud\":%u,\"bits\":%u,\"trigger\":%u,\"tsc_hz\":%lu,"
			 "\"arrived\":%lu,\"chars\":%lu,\"lost\":%lu,\"irqs\":%lu,\"lossy_irqs\":%lu,"
			 "\"gaps_seen\":%lu,\"seq_errors\":%lu,\"latency_max_tsc\":%lu,"
			 "\"handler_max_tsc\":%lu", m->baud, m->bits, m->trigger,
			 (unsigned long)arch_tsc_hz(), (unsigned long)r->arrived,
			 (unsigned long)r->chars, (unsigned long)r->lost, (unsigned long)r->irqs,
			 (unsigned long)r->lossy_irqs, (unsigned long)r->gaps,
			 (unsigned long)r->seq_errors, (unsigned long)r->latency_max,
			 (unsigned long)r->handler_max);
}

long serial_load_proc(char *buf, size_t n)
{
	if (!sl_on)
		return ksnprintf(buf, n, "{\"serial\":false}\n");
	struct sl_reading r;
	sl_read(&r);
	size_t at = ksnprintf(buf, n, "{\"serial\":true,");
	if (at < n)
		at += sl_json(buf + at, n - at, &r);
	if (at < n)
		at += ksnprintf(buf + at, n - at, "}\n");
	return (long)(at < n ? at : n);
}

bool serial_load_end(void)
{
	if (!sl_on)
		return true;
	serial_model_finish(&sl_model);
	/* the handler ends the stream at its next run: the PIT repeats every trigger
	 * interval until it does; bounded, the host may stall the emulator for a while */
	uint64_t dl = arch_cycles() + 5 * arch_tsc_hz();
	while (!serial_model_done(&sl_model) && (int64_t)(arch_cycles() - dl) < 0)
		arch_cpu_relax();
	bool done = serial_model_done(&sl_model);
	intr_disestablish(&sl_src);
	serial_model_stop(&sl_model);
	struct sl_reading r;
	sl_read(&r);
	r.arrived = sl_model.p.next;	/* the stream as ended: every one read or lost */
	bool ok = done && r.gaps == r.lost && !r.seq_errors && r.chars + r.lost == r.arrived;
	char b[512];
	sl_json(b, sizeof b, &r);
	kprintf("KSYNC {\"kind\":\"serial_load\",\"ended\":%s,\"check\":\"%s\",%s}\n",
		done ? "true" : "false", ok ? "ok" : "failed", b);
	if (!ok)
		kprintf("ksync: serial_load: %s: %lu read + %lu lost of %lu, %lu gaps seen, "
			"%lu sequence errors\n", done ? "the driver's count differs from the model's"
			: "the stream did not end within 5 s", (unsigned long)r.chars,
			(unsigned long)r.lost, (unsigned long)r.arrived, (unsigned long)r.gaps,
			(unsigned long)r.seq_errors);
	sl_on = false;
	return ok;
}
