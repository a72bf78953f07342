/*
 * arch/hosted/kdev.c - the hosted port's platform devices: kernel/include/arch_dev.h for
 * a Linux process (issue 9). The interrupt sources of Small & Manley 1997 section 6
 * (the clock, the paced serial/NIC models' timers, the PIO disk of 6.1) as models:
 *
 *   PIT channel 0  oneshot (mode 0) and rate generator (mode 2) at PIT_HZ ticks, the same
 *                  clamping as arch/x86_64/dev_timers.c; raises ISA irq 0.
 *   RTC            periodic interrupt, power of two 2..8192 Hz, irq 8. Like the MC146818
 *                  its line stays high until rtc_ack (register C): a period that ends
 *                  while it is still high raises nothing (counted, hosted_dev_rtc_unacked).
 *   ATA            primary master over an image file (hosted_dev_init): IDENTIFY facts from
 *                  the file size, READ SECTORS / READ MULTIPLE with a modelled delay, one
 *                  irq 14 per block; ata_intr copies the block out of the drive's sector
 *                  buffer with memcpy, the hosted analog of `rep insw`.
 *
 * Timing: ONE device thread sleeps until the earliest device event (absolute
 * CLOCK_MONOTONIC), then calls hosted_isa_raise(irq). The sleep is a futex wait
 * (FUTEX_WAIT_BITSET, whose timeout is an absolute CLOCK_MONOTONIC time - the same host
 * hrtimer as clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)) rather than clock_nanosleep
 * itself, because the deadline moves from signal context: a handler reprograms the PIT
 * (the serial model's pit_rate_restart) or takes an ATA block, and must cut the sleep
 * short. A clock_nanosleep can only be cut short by a signal, which would take one more
 * signal number from the port; a futex wake is one async-signal-safe system call. POSIX
 * timers were not used: three devices would need three timers whose expiry runs in a
 * signal handler or a helper thread anyway, and the ATA's "next block after the handler"
 * and the RTC's "no edge until acked" are state machines, not timers.
 *
 * Shared state and what protects it (no lock anywhere: every kernel call here may run in
 * a signal handler on a vCPU, so all of it is C11 atomics):
 *   pit_prog, rtc_prog - the device's programming as one word (mode/count or rate, and
 *       the low 46 bits of the CLOCK_MONOTONIC time it was written), so a reader never
 *       sees half a programming. Written by any kernel call (release: nothing else is
 *       published with it; the kick's increment is what wakes the thread), read by the
 *       device thread (acquire). The thread remembers how many periods of the word it has
 *       raised; a new word restarts the count, as a reload restarts the 8254's counter.
 *   rtc_line           - the RTC's interrupt line: set by the device thread when it raises
 *       (exchange: only a low line makes an edge), cleared by rtc_ack / rtc_periodic.
 *       Relaxed: it orders no other data.
 *   dev_wake           - the device thread's futex word: every kernel call that changes a
 *       deadline increments it (release) after its stores and wakes the futex; the thread
 *       loads it (acquire) before reading the devices, and sleeps only while it is
 *       unchanged, so no change is slept through.
 *   ata_active         - the running request, claimed with a CAS from NULL (acquire) by
 *       ata_read_start, published with release once *r is set up; cleared (release) when
 *       the request ends or by ata_reset. ata_intr loads it with acquire.
 *   ata_phase          - generation << 2 | phase (IDLE, BUSY: the drive is fetching the next
 *       block, due at ata_due_ns; DRQ: a block waits in ata_drive_buf; ERR: the read
 *       failed). The ownership of ata_drive_buf and of r's counters moves with it: the
 *       device thread writes the buffer only in BUSY and hands it over by a CAS to DRQ
 *       (release); ata_intr reads it after an acquire load of DRQ and hands it back with
 *       a release store of BUSY. A new generation (ata_read_start, ata_reset) makes the
 *       device thread drop whatever it was fetching: its CAS from the old word fails.
 *   ata_cmd_*, ata_due_ns - the command's parameters and the next block's due time;
 *       relaxed atomics written before the release store of ata_phase that publishes
 *       them, read by the device thread after its acquire load (and re-validated by its
 *       CAS, so a mixed read of two generations is never used).
 *   ata_dev            - the probe's result: written by ata_probe only while no request runs
 *       (EBUSY otherwise), read by ata_read_start. The kernel calls both from one thread.
 *   ata_fd, ata_image_sectors - written by hosted_dev_init before the device thread starts,
 *       read-only until hosted_dev_shutdown has joined it.
 *   late_ring, late_n, pit_missed, rtc_unacked, stray_irqs - statistics; each has one
 *       writer (the device thread; ata_intr for stray_irqs, which runs on one vCPU),
 *       relaxed except late_n (release: the samples before the count).
 * r->done is stored with __atomic_store_n (release) as on x86: the field is a volatile
 * bool of the shared arch_dev.h struct, the waiter loads it with acquire.
 * Async-signal-safety of the kernel calls: atomics, clock_gettime, memcpy and syscall(2)
 * (the futex wake) only - no lock, no allocation, no stdio.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arch_dev.h"
#include "kdev.h"

volatile uint32_t hosted_dev_status = 0x60;

bool arch_has_platform_devices(void) { return true; }

#define NS 1000000000ull
#define T46 ((1ull << 46) - 1)

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

/* A word's 46-bit time stamp back to a full time: it was written at most 2^46 ns
 * (19.5 h) before `now`, which was read after the word was loaded. */
static uint64_t full_time(uint64_t now, uint64_t low46)
{
	return now - ((now - low46) & T46);
}

static _Atomic uint32_t dev_wake;	/* the device thread's futex word (see top) */
static _Atomic bool dev_stop;		/* shutdown: set before the last kick (release) */
static bool dev_running;		/* init/shutdown only (the port's boot thread) */
static pthread_t dev_thread;		/* init/shutdown only */
static bool dev_try_fifo;		/* written by init before the thread starts */
static _Atomic bool dev_fifo;		/* the device thread got SCHED_FIFO (relaxed: a label) */

const char *hosted_dev_sched_label(void)
{
	return atomic_load_explicit(&dev_fifo, memory_order_relaxed) ? "SCHED_FIFO"
								      : "best-effort scheduling";
}

static void kick(void)
{
	atomic_fetch_add_explicit(&dev_wake, 1, memory_order_release);
	syscall(SYS_futex, &dev_wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* ---- PIT channel 0 ---------------------------------------------------------------- */
enum { PIT_OFF = 0, PIT_ONESHOT = 1, PIT_RATE = 2 };
static _Atomic uint64_t pit_prog;	/* mode | count << 2 | time46 << 18 */

static void pit_load(unsigned mode, uint32_t count)
{
	uint64_t w = mode | (uint64_t)count << 2 | (mono_ns() & T46) << 18;
	atomic_store_explicit(&pit_prog, w, memory_order_release);
	kick();
}

void pit_oneshot(uint32_t pit_ticks) { pit_load(PIT_ONESHOT, pit_clamp_count(pit_ticks, 1)); }
void pit_rate_restart(uint32_t pit_ticks) { pit_load(PIT_RATE, pit_clamp_count(pit_ticks, 2)); }

void pit_periodic(unsigned hz)
{
	if (hz == 0)
		pit_stop();
	else
		pit_rate_restart(pit_hz_count(hz));
}

void pit_stop(void) { pit_load(PIT_OFF, 0); }

uint64_t pit_ticks_to_tsc(uint32_t pit_ticks)
{
	return (uint64_t)pit_ticks * hosted_tsc_hz() / PIT_HZ;
}

uint32_t tsc_to_pit_ticks(uint64_t tsc_ticks, uint32_t lo, uint32_t hi)
{
	uint64_t hz = hosted_tsc_hz();
	uint64_t cap = (uint64_t)hi * hz / PIT_HZ + 1;	/* as x86: clamp so the product fits */
	if (tsc_ticks > cap)
		tsc_ticks = cap;
	uint64_t t = (tsc_ticks * PIT_HZ + hz - 1) / hz;
	if (t < lo)
		t = lo;
	if (t > hi)
		t = hi;
	return (uint32_t)t;
}

/* ---- RTC periodic interrupt ---------------------------------------------------------- */
static _Atomic uint64_t rtc_prog;	/* hz | time46 << 14; hz 0 = stopped */
static _Atomic bool rtc_line;

static void rtc_load(unsigned hz)
{
	atomic_store_explicit(&rtc_line, false, memory_order_relaxed);
	uint64_t w = hz | (mono_ns() & T46) << 14;
	atomic_store_explicit(&rtc_prog, w, memory_order_release);
	kick();
}

int rtc_periodic(unsigned hz)
{
	if (hz < 2 || hz > 8192 || (hz & (hz - 1)))
		return KSYNC_EINVAL;
	rtc_load(hz);
	return KSYNC_OK;
}

void rtc_stop(void) { rtc_load(0); }

void rtc_ack(void) { atomic_store_explicit(&rtc_line, false, memory_order_relaxed); }

/* ---- ATA -------------------------------------------------------------------------- */
enum { PH_IDLE = 0, PH_BUSY = 1, PH_DRQ = 2, PH_ERR = 3 };
#define ST_DRDY 0x40
#define ST_DRQ 0x08
#define ST_ERR 0x01
#define SECTOR 512u

static int ata_fd = -1;
static uint64_t ata_image_sectors;
static struct ata_info ata_dev;
static struct ata_req ata_claim_marker;	/* ata_active during set-up (buf NULL) */
static struct ata_req *_Atomic ata_active;
static _Atomic uint64_t ata_phase;
static _Atomic uint64_t ata_cmd_lba, ata_due_ns;
static _Atomic unsigned ata_cmd_count, ata_cmd_per_irq;
static _Atomic uint64_t ata_command_ns = 100000, ata_sector_ns = 5000;
static unsigned char ata_drive_buf[ATA_MAX_PER_IRQ * SECTOR];
static _Atomic uint64_t stray_irqs;

uint64_t ata_stray_irqs(void) { return atomic_load_explicit(&stray_irqs, memory_order_relaxed); }

void hosted_dev_ata_timing(uint64_t command_ns, uint64_t sector_ns)
{
	atomic_store_explicit(&ata_command_ns, command_ns, memory_order_relaxed);
	atomic_store_explicit(&ata_sector_ns, sector_ns, memory_order_relaxed);
}

static void ata_string(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

int ata_probe(struct ata_info *out)
{
	if (!out)
		return KSYNC_EINVAL;
	if (atomic_load_explicit(&ata_active, memory_order_acquire))
		return KSYNC_EBUSY;
	memset(out, 0, sizeof *out);
	ata_dev.present = false;
	if (ata_fd < 0)
		return KSYNC_ENOENT;
	out->present = true;
	out->sectors = ata_image_sectors;
	ata_string(out->model, sizeof out->model, "KSYNC HOSTED IMAGE DISK");
	out->max_multiple = ATA_MAX_PER_IRQ;
	out->lba48 = false;
	ata_dev = *out;
	return KSYNC_OK;
}

static uint64_t phase_gen(uint64_t w) { return w >> 2; }
static unsigned phase_of(uint64_t w) { return (unsigned)(w & 3); }

int ata_read_start(struct ata_req *r)
{
	int rc = ata_req_check(r, &ata_dev);	/* the contract's rules (arch_dev.h) */
	if (rc != KSYNC_OK)
		return rc;

	/* acquire: the previous request's end (release in ata_finish) happens-before us */
	struct ata_req *none = NULL;
	if (!atomic_compare_exchange_strong_explicit(&ata_active, &none, &ata_claim_marker,
						     memory_order_acquire, memory_order_relaxed))
		return KSYNC_EBUSY;
	r->done_sectors = 0;
	r->error = 0;
	r->irqs = 0;
	r->handler_tsc_total = r->handler_tsc_max = 0;
	r->status = r->err_reg = 0;
	r->done = false;

	atomic_store_explicit(&ata_cmd_lba, r->lba, memory_order_relaxed);
	atomic_store_explicit(&ata_cmd_count, r->count, memory_order_relaxed);
	atomic_store_explicit(&ata_cmd_per_irq, r->per_irq, memory_order_relaxed);
	atomic_store_explicit(&ata_due_ns,
			      mono_ns() + atomic_load_explicit(&ata_command_ns, memory_order_relaxed),
			      memory_order_relaxed);
	/* release: r is set up before the handler can load it; published before the drive
	 * starts, so no block's interrupt finds the claim marker */
	atomic_store_explicit(&ata_active, r, memory_order_release);
	uint64_t gen = phase_gen(atomic_load_explicit(&ata_phase, memory_order_relaxed)) + 1;
	/* release: the command's parameters before the phase that publishes them */
	atomic_store_explicit(&ata_phase, gen << 2 | PH_BUSY, memory_order_release);
	kick();
	return KSYNC_OK;
}

/* End the request: unpublish it, then say done (release: data and counts are final). */
static void ata_finish(struct ata_req *r, int error)
{
	r->error = error;
	atomic_store_explicit(&ata_active, (struct ata_req *)NULL, memory_order_release);
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
}

void ata_intr(void *arg)
{
	(void)arg;
	uint64_t t_in = __builtin_ia32_rdtsc();
	struct ata_req *r = atomic_load_explicit(&ata_active, memory_order_acquire);
	/* acquire: the device thread's block in ata_drive_buf before its DRQ */
	uint64_t ph = atomic_load_explicit(&ata_phase, memory_order_acquire);
	unsigned p = phase_of(ph);
	if (!r || r->buf == NULL || (p != PH_DRQ && p != PH_ERR)) {
		atomic_fetch_add_explicit(&stray_irqs, 1, memory_order_relaxed);
		return;
	}
	int end = 1;				/* 1: more blocks to come; else 0 or ATA_EIO */
	if (p == PH_ERR) {
		r->status = ST_DRDY | ST_ERR;
		r->err_reg = 0x40;		/* UNC: uncorrectable data error */
		end = ATA_EIO;
	} else {
		r->status = ST_DRDY | ST_DRQ;
		unsigned left = r->count - r->done_sectors;
		unsigned n = left < r->per_irq ? left : r->per_irq;
		memcpy(r->buf + (uint64_t)r->done_sectors * 256, ata_drive_buf, (size_t)n * SECTOR);
		r->done_sectors += n;
		if (r->done_sectors == r->count) {
			end = 0;
		} else {
			left -= n;
			unsigned next = left < r->per_irq ? left : r->per_irq;
			uint64_t sns = atomic_load_explicit(&ata_sector_ns, memory_order_relaxed);
			atomic_store_explicit(&ata_due_ns, mono_ns() + next * sns, memory_order_relaxed);
			/* release: done with ata_drive_buf, and the new due time */
			atomic_store_explicit(&ata_phase, phase_gen(ph) << 2 | PH_BUSY,
					      memory_order_release);
			kick();
		}
	}
	r->irqs++;
	uint64_t d = __builtin_ia32_rdtsc() - t_in;
	r->handler_tsc_total += d;
	if (d > r->handler_tsc_max)
		r->handler_tsc_max = d;
	if (end != 1) {
		atomic_store_explicit(&ata_phase, phase_gen(ph) << 2 | PH_IDLE, memory_order_release);
		ata_finish(r, end);
	}
}

bool ata_pending(void)
{
	struct ata_req *r = atomic_load_explicit(&ata_active, memory_order_acquire);
	if (!r || r->buf == NULL)
		return false;
	unsigned p = phase_of(atomic_load_explicit(&ata_phase, memory_order_acquire));
	return p == PH_DRQ || p == PH_ERR;
}

/* As on x86: only with irq 14 masked, or on the vCPU that takes it (ata_intr not running). */
void ata_reset(void)
{
	struct ata_req *r = atomic_exchange_explicit(&ata_active, (struct ata_req *)NULL,
						     memory_order_acq_rel);
	/* a new generation: the device thread drops the block it is fetching */
	uint64_t gen = phase_gen(atomic_load_explicit(&ata_phase, memory_order_relaxed)) + 1;
	atomic_store_explicit(&ata_phase, gen << 2 | PH_IDLE, memory_order_release);
	kick();
	if (r && r->buf) {
		r->error = ATA_EIO;
		__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	}
}

/* ---- the device thread ------------------------------------------------------------ */
static _Atomic uint64_t late_ring[HOSTED_DEV_LATE_SAMPLES];
static _Atomic uint64_t late_n, pit_missed, rtc_unacked;

size_t hosted_dev_pit_lateness(uint64_t *out, size_t max)
{
	uint64_t n = atomic_load_explicit(&late_n, memory_order_acquire);
	uint64_t have = n < HOSTED_DEV_LATE_SAMPLES ? n : HOSTED_DEV_LATE_SAMPLES;
	if (have > max)
		have = max;
	for (uint64_t i = 0; i < have; i++)
		out[i] = atomic_load_explicit(&late_ring[(n - have + i) % HOSTED_DEV_LATE_SAMPLES],
					      memory_order_relaxed);
	return (size_t)have;
}
uint64_t hosted_dev_pit_missed(void) { return atomic_load_explicit(&pit_missed, memory_order_relaxed); }
uint64_t hosted_dev_rtc_unacked(void) { return atomic_load_explicit(&rtc_unacked, memory_order_relaxed); }

#define NEVER UINT64_MAX

/* A periodic or one-shot source as the device thread follows it. */
struct ticker {
	uint64_t word;		/* the programming word last seen */
	uint64_t start;		/* its full time */
	uint64_t fired;		/* periods of it accounted for (raised or missed) */
};

/* If the source is due at `now`, advance it (skipping periods that passed unseen) and
 * return true with *late set; always sets *next to its next due time (or NEVER). */
static bool ticker_step(struct ticker *t, uint64_t period, bool oneshot, uint64_t now,
			uint64_t *late, uint64_t *skipped, uint64_t *next)
{
	*next = NEVER;
	if (period == 0 || (oneshot && t->fired >= 1))
		return false;
	uint64_t due = t->start + (t->fired + 1) * period;
	bool fire = false;
	if (now >= due) {
		fire = true;
		*late = now - due;
		if (oneshot) {
			t->fired = 1;
			return true;
		}
		uint64_t passed = (now - t->start) / period;
		*skipped = passed - (t->fired + 1);
		t->fired = passed;
		due = t->start + (t->fired + 1) * period;
	}
	*next = due;
	return fire;
}

static void ticker_reload(struct ticker *t, uint64_t w, uint64_t low46, uint64_t now)
{
	if (w != t->word) {
		t->word = w;
		t->start = full_time(now, low46);
		t->fired = 0;
	}
}

/* The drive's side of ATA: fetch the due block into its sector buffer, then DRQ + irq. */
struct drive {
	uint64_t gen;		/* generation whose blocks `produced` counts */
	unsigned produced;	/* sectors of it fetched */
};

static uint64_t drive_step(struct drive *d, uint64_t now)
{
	uint64_t ph = atomic_load_explicit(&ata_phase, memory_order_acquire);
	if (phase_gen(ph) != d->gen) {
		d->gen = phase_gen(ph);
		d->produced = 0;
	}
	if (phase_of(ph) != PH_BUSY)
		return NEVER;
	uint64_t due = atomic_load_explicit(&ata_due_ns, memory_order_relaxed);
	if (now < due)
		return due;
	uint64_t lba = atomic_load_explicit(&ata_cmd_lba, memory_order_relaxed);
	unsigned count = atomic_load_explicit(&ata_cmd_count, memory_order_relaxed);
	unsigned per = atomic_load_explicit(&ata_cmd_per_irq, memory_order_relaxed);
	if (d->produced >= count || per < 1 || per > ATA_MAX_PER_IRQ)
		return NEVER;			/* a mixed read of two generations: the CAS fails */
	unsigned n = count - d->produced < per ? count - d->produced : per;
	ssize_t got = pread(ata_fd, ata_drive_buf, (size_t)n * SECTOR,
			    (off_t)((lba + d->produced) * SECTOR));
	unsigned to = got == (ssize_t)(n * SECTOR) ? PH_DRQ : PH_ERR;
	/* release: the block before DRQ; fails if a reset or a new command came */
	if (atomic_compare_exchange_strong_explicit(&ata_phase, &ph, phase_gen(ph) << 2 | to,
						    memory_order_release, memory_order_relaxed)) {
		d->produced += n;
		hosted_isa_raise(DEV_IRQ_ATA);
	}
	return NEVER;				/* the handler sets the next due time */
}

static void record_late(uint64_t late)
{
	uint64_t n = atomic_load_explicit(&late_n, memory_order_relaxed);
	atomic_store_explicit(&late_ring[n % HOSTED_DEV_LATE_SAMPLES], late, memory_order_relaxed);
	atomic_store_explicit(&late_n, n + 1, memory_order_release);
}

static void *dev_main(void *arg)
{
	(void)arg;
	sigset_t all;				/* the port's interrupt signals go to vCPUs only */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Linux lets a normal thread's timed sleeps end up to 50 us late (timer slack, so
	 * wake-ups coalesce); a device's timer must not: 1 ns, the least it takes */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	/* Above the vCPUs: with SCHED_FIFO vCPUs spinning on every core, a SCHED_OTHER
	 * device thread would get only the RT throttling's leftovers. Best effort: without
	 * the privilege it stays SCHED_OTHER and says so (hosted_dev_sched_label). */
	if (dev_try_fifo) {
		struct sched_param sp = { .sched_priority = sched_get_priority_max(SCHED_FIFO) };
		if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0)
			atomic_store_explicit(&dev_fifo, true, memory_order_relaxed);
	}
	struct ticker pit = { 0, 0, 0 }, rtc = { 0, 0, 0 };
	struct drive drv = { 0, 0 };
	for (;;) {
		/* acquire: every device change before this kick's increment is seen below */
		uint32_t seen = atomic_load_explicit(&dev_wake, memory_order_acquire);
		if (atomic_load_explicit(&dev_stop, memory_order_acquire))
			break;
		uint64_t wake = NEVER, next, late = 0, skipped = 0;

		uint64_t w = atomic_load_explicit(&pit_prog, memory_order_acquire);
		uint64_t now = mono_ns();
		ticker_reload(&pit, w, w >> 18, now);
		unsigned mode = (unsigned)(w & 3);
		uint64_t count = (w >> 2) & 0xffff;
		uint64_t period = mode == PIT_OFF ? 0 : (count * NS + PIT_HZ / 2) / PIT_HZ;
		if (ticker_step(&pit, period, mode == PIT_ONESHOT, now, &late, &skipped, &next)) {
			record_late(late);
			if (skipped)
				atomic_fetch_add_explicit(&pit_missed, skipped, memory_order_relaxed);
			hosted_isa_raise(DEV_IRQ_PIT);
		}
		if (next < wake)
			wake = next;

		w = atomic_load_explicit(&rtc_prog, memory_order_acquire);
		now = mono_ns();
		ticker_reload(&rtc, w, w >> 14, now);
		uint64_t hz = w & 0x3fff;
		if (ticker_step(&rtc, hz ? NS / hz : 0, false, now, &late, &skipped, &next)) {
			if (!atomic_exchange_explicit(&rtc_line, true, memory_order_relaxed))
				hosted_isa_raise(DEV_IRQ_RTC);
			else
				atomic_fetch_add_explicit(&rtc_unacked, 1, memory_order_relaxed);
		}
		if (next < wake)
			wake = next;

		if (ata_fd >= 0) {
			next = drive_step(&drv, mono_ns());
			if (next < wake)
				wake = next;
		}

		if (wake != NEVER && mono_ns() >= wake)
			continue;			/* due already (a raise took long) */
		struct timespec ts = { (time_t)(wake / NS), (long)(wake % NS) };
		syscall(SYS_futex, &dev_wake, FUTEX_WAIT_BITSET_PRIVATE, seen,
			wake == NEVER ? NULL : &ts, NULL, FUTEX_BITSET_MATCH_ANY);
	}
	return NULL;
}

int hosted_dev_init(const char *disk_path)
{
	if (dev_running)
		return KSYNC_EBUSY;
	ata_fd = -1;
	ata_image_sectors = 0;
	if (disk_path) {
		int fd = open(disk_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return KSYNC_ENOENT;
		struct stat st;
		if (fstat(fd, &st) != 0 || st.st_size < (off_t)SECTOR) {
			close(fd);
			return KSYNC_ENOENT;
		}
		ata_fd = fd;
		ata_image_sectors = (uint64_t)st.st_size / SECTOR;
	}
	atomic_store_explicit(&dev_stop, false, memory_order_relaxed);
	atomic_store_explicit(&dev_fifo, false, memory_order_relaxed);
	const char *fifo = getenv("KSYNC_HOSTED_FIFO");	/* as the port's vCPUs */
	dev_try_fifo = !(fifo && !strcmp(fifo, "0"));
	if (pthread_create(&dev_thread, NULL, dev_main, NULL) != 0) {
		if (ata_fd >= 0)
			close(ata_fd);
		ata_fd = -1;
		return KSYNC_ENOMEM;
	}
	dev_running = true;
	return KSYNC_OK;
}

void hosted_dev_shutdown(void)
{
	if (!dev_running)
		return;
	pit_stop();
	rtc_stop();
	ata_reset();
	atomic_store_explicit(&dev_stop, true, memory_order_release);
	kick();
	pthread_join(dev_thread, NULL);
	dev_running = false;
	if (ata_fd >= 0)
		close(ata_fd);
	ata_fd = -1;
	ata_image_sectors = 0;
	ata_dev.present = false;
}
