/*
 * arch/hosted/tests/kdev_test.c - behaviour tests of the hosted platform devices
 * (arch/hosted/kdev.c, the arch_dev.h contract), standalone: this file is the "port". Its
 * hosted_isa_raise counts raises per irq (atomics) and wakes a handler thread that plays
 * the BSP: it calls rtc_ack for irq 8 (unless a scenario says not to) and ata_intr for
 * irq 14, as the kernel's handlers do. hosted_tsc_hz is a fixed 1 GHz so the tick
 * conversions have exact expected values.
 *
 * Usage: kdev_test <scenario> [args]; prints `check <name> <got> <want> ok|FAIL` (or
 * `range <name> <got> <lo> <hi> ok|FAIL`) lines; exit 0 iff every check passed.
 *   convert | pit-oneshot | pit-periodic | pit-restart | rtc | rtc-noack
 *   ata <image> <sectors> | ata-errors <image> | nodisk | late <seconds>
 * The ata scenarios expect the image of tools/ksync/disk.py: sector n is the 8-byte
 * little-endian n repeated 64 times.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch_dev.h"
#include "../kdev.h"

static _Atomic uint64_t raised[16];		/* raises per irq (device thread writes) */
static _Atomic uint64_t handled[16];		/* handler calls per irq (handler thread) */
static _Atomic uint32_t pending;		/* irq bits raised, not yet handled */
static _Atomic bool rtc_do_ack = true;
static _Atomic bool handler_quit;
static sem_t irq_sem;
#define STAMPS 4096
static _Atomic uint64_t pit_stamp[STAMPS];	/* CLOCK_MONOTONIC ns of each irq 0 raise */
static int failures;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

void hosted_isa_raise(unsigned irq)
{
	uint64_t n = atomic_fetch_add_explicit(&raised[irq], 1, memory_order_relaxed);
	if (irq == DEV_IRQ_PIT && n < STAMPS)
		atomic_store_explicit(&pit_stamp[n], now_ns(), memory_order_relaxed);
	atomic_fetch_or_explicit(&pending, 1u << irq, memory_order_release);
	sem_post(&irq_sem);
}

uint64_t hosted_tsc_hz(void) { return 1000000000ull; }

static void *handler_main(void *arg)
{
	(void)arg;
	for (;;) {
		while (sem_wait(&irq_sem) != 0)
			;
		if (atomic_load(&handler_quit))
			return NULL;
		uint32_t p = atomic_exchange_explicit(&pending, 0, memory_order_acquire);
		for (unsigned irq = 0; irq < 16; irq++) {
			if (!(p & (1u << irq)))
				continue;
			if (irq == DEV_IRQ_RTC && atomic_load(&rtc_do_ack))
				rtc_ack();
			if (irq == DEV_IRQ_ATA)
				ata_intr(NULL);
			/* release: the handler's work before the count the scenarios wait on */
			atomic_fetch_add_explicit(&handled[irq], 1, memory_order_release);
		}
	}
}

static uint64_t count(unsigned irq) { return atomic_load(&raised[irq]); }

static void check(const char *name, long long got, long long want)
{
	bool ok = got == want;
	printf("check %s %lld %lld %s\n", name, got, want, ok ? "ok" : "FAIL");
	failures += !ok;
}

static void range(const char *name, long long got, long long lo, long long hi)
{
	bool ok = got >= lo && got <= hi;
	printf("range %s %lld %lld %lld %s\n", name, got, lo, hi, ok ? "ok" : "FAIL");
	failures += !ok;
}

/* Wait (polling, up to ms) until irq has been raised at least n times. */
static bool wait_count(unsigned irq, uint64_t n, unsigned ms)
{
	for (unsigned i = 0; i < ms; i++) {
		if (count(irq) >= n)
			return true;
		sleep_ms(1);
	}
	return count(irq) >= n;
}

static void s_convert(void)
{
	check("ticks_to_tsc_1s", (long long)pit_ticks_to_tsc(PIT_HZ), 1000000000);
	check("ticks_to_tsc_0", (long long)pit_ticks_to_tsc(0), 0);
	/* 1 ms of TSC = 1193.182 PIT ticks, rounded up */
	check("tsc_to_ticks_1ms", tsc_to_pit_ticks(1000000, 1, 65535), 1194);
	check("tsc_to_ticks_lo", tsc_to_pit_ticks(0, 7, 65535), 7);
	check("tsc_to_ticks_hi", tsc_to_pit_ticks(1000000000ull, 1, 65535), 65535);
	check("tsc_to_ticks_huge", tsc_to_pit_ticks(UINT64_MAX / 2, 1, 100), 100);
}

static void s_pit_oneshot(void)
{
	pit_oneshot(1193);			/* 1 ms */
	check("oneshot_fired", wait_count(DEV_IRQ_PIT, 1, 5000), 1);
	sleep_ms(50);				/* 50 periods: a second raise would show */
	check("oneshot_raises", (long long)count(DEV_IRQ_PIT), 1);
	pit_oneshot(0);				/* clamped to 1 tick: still exactly one */
	check("oneshot_clamped_fired", wait_count(DEV_IRQ_PIT, 2, 5000), 1);
	sleep_ms(20);
	check("oneshot_clamped_raises", (long long)count(DEV_IRQ_PIT), 2);
	pit_oneshot(65535);			/* 55 ms, stopped before it fires */
	pit_stop();
	sleep_ms(100);
	check("oneshot_stopped_raises", (long long)count(DEV_IRQ_PIT), 2);
}

static void s_pit_periodic(void)
{
	uint64_t t0 = now_ns();
	pit_periodic(1000);
	sleep_ms(300);
	pit_stop();
	uint64_t ms = (now_ns() - t0) / 1000000;
	uint64_t c = count(DEV_IRQ_PIT);
	/* sanity bound only: at most one per elapsed period (the model never fires early;
	 * late periods coalesce), at least a tenth of them on a loaded machine */
	range("periodic_1khz_raises", (long long)c, (long long)ms / 10, (long long)ms + 1);
	sleep_ms(50);
	/* a raise already under way when pit_stop ran may still land: at most one */
	range("periodic_after_stop", (long long)(count(DEV_IRQ_PIT) - c), 0, 1);
	uint64_t before = count(DEV_IRQ_PIT);
	pit_periodic(0);			/* 0 stops */
	sleep_ms(30);
	check("periodic_zero_raises", (long long)(count(DEV_IRQ_PIT) - before), 0);
	pit_periodic(1);			/* clamped to 19 Hz: 52.6 ms */
	check("periodic_19hz_fires", wait_count(DEV_IRQ_PIT, before + 2, 5000), 1);
	pit_stop();
}

static void s_pit_restart(void)
{
	pit_rate_restart(PIT_HZ / 1000);	/* 1 ms */
	check("restart_runs", wait_count(DEV_IRQ_PIT, 5, 5000), 1);
	uint64_t t0 = now_ns();
	uint64_t c0 = count(DEV_IRQ_PIT);
	pit_rate_restart(65535);		/* 54.9 ms: the count starts again now */
	check("restart_fires", wait_count(DEV_IRQ_PIT, c0 + 2, 5000), 1);
	pit_stop();
	/* the model never fires early: after the restart, no raise before 54.9 ms except
	 * one already under way (raised by the 1 ms programming) */
	uint64_t early = 0, first_new = 0;
	for (uint64_t i = c0; i < count(DEV_IRQ_PIT) && i < STAMPS; i++) {
		uint64_t t = atomic_load(&pit_stamp[i]);
		if (t < t0 + 54925000ull)
			early++;
		else if (!first_new)
			first_new = t;
	}
	range("restart_early_raises", (long long)early, 0, 1);
	check("restart_new_period_seen", first_new != 0, 1);
}

static void s_rtc(void)
{
	const unsigned bad[] = { 0, 1, 3, 6, 100, 1000, 8193, 16384 };
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		char name[48];
		snprintf(name, sizeof name, "rtc_einval_%u", bad[i]);
		check(name, rtc_periodic(bad[i]), KSYNC_EINVAL);
	}
	check("rtc_bad_raises", (long long)count(DEV_IRQ_RTC), 0);
	check("rtc_2hz_ok", rtc_periodic(2), KSYNC_OK);
	check("rtc_8192hz_ok", rtc_periodic(8192), KSYNC_OK);
	rtc_stop();
	sleep_ms(10);
	uint64_t base = count(DEV_IRQ_RTC);
	uint64_t t0 = now_ns();
	check("rtc_1024hz_ok", rtc_periodic(1024), KSYNC_OK);
	check("rtc_runs", wait_count(DEV_IRQ_RTC, base + 20, 5000), 1);
	rtc_stop();
	uint64_t ms = (now_ns() - t0) / 1000000;
	uint64_t c = count(DEV_IRQ_RTC) - base;
	range("rtc_raises_bound", (long long)c, 20, (long long)(ms * 1024 / 1000) + 1);
	sleep_ms(30);
	range("rtc_after_stop", (long long)(count(DEV_IRQ_RTC) - base - c), 0, 1);
}

static void s_rtc_noack(void)
{
	atomic_store(&rtc_do_ack, false);
	check("rtc_1024hz_ok", rtc_periodic(1024), KSYNC_OK);
	check("rtc_first", wait_count(DEV_IRQ_RTC, 1, 5000), 1);
	sleep_ms(50);				/* ~50 periods with the line held high */
	check("rtc_noack_raises", (long long)count(DEV_IRQ_RTC), 1);
	range("rtc_unacked_counted", (long long)hosted_dev_rtc_unacked(), 1, 1000000);
	rtc_ack();				/* the line drops: the next period raises */
	check("rtc_after_ack", wait_count(DEV_IRQ_RTC, 2, 5000), 1);
	rtc_stop();
}

static uint64_t pattern_word(uint64_t sector) { return sector; }

/* Bytes of buf (count sectors from lba) that differ from the image's pattern. */
static long long pattern_errors(const uint16_t *buf, uint64_t lba, unsigned n)
{
	long long bad = 0;
	for (unsigned s = 0; s < n; s++)
		for (unsigned w = 0; w < 64; w++) {
			uint64_t v;
			memcpy(&v, (const char *)buf + (size_t)s * 512 + w * 8, 8);
			bad += v != pattern_word(lba + s);
		}
	return bad;
}

static bool wait_done(struct ata_req *r, unsigned ms)
{
	for (unsigned i = 0; i < ms * 10; i++) {
		if (__atomic_load_n(&r->done, __ATOMIC_ACQUIRE))
			return true;
		struct timespec ts = { 0, 100000 };
		nanosleep(&ts, NULL);
	}
	return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
}

static uint16_t bigbuf[ATA_MAX_COUNT * 256];

static void read_case(const char *tag, uint64_t lba, unsigned n, unsigned per_irq)
{
	char name[64];
	memset(bigbuf, 0xa5, sizeof bigbuf);
	struct ata_req r = { .lba = lba, .count = n, .per_irq = per_irq, .buf = bigbuf };
	uint64_t irq0 = count(DEV_IRQ_ATA), stray0 = ata_stray_irqs();
	snprintf(name, sizeof name, "%s_start", tag);
	check(name, ata_read_start(&r), KSYNC_OK);
	snprintf(name, sizeof name, "%s_done", tag);
	check(name, wait_done(&r, 10000), 1);
	snprintf(name, sizeof name, "%s_error", tag);
	check(name, r.error, 0);
	snprintf(name, sizeof name, "%s_sectors", tag);
	check(name, r.done_sectors, n);
	snprintf(name, sizeof name, "%s_pattern_errors", tag);
	check(name, pattern_errors(bigbuf, lba, n), 0);
	/* nothing written past the request */
	unsigned char *tail = (unsigned char *)bigbuf + (size_t)n * 512;
	long long over = 0;
	for (size_t i = 0; i < sizeof bigbuf - (size_t)n * 512; i++)
		over += tail[i] != 0xa5;
	snprintf(name, sizeof name, "%s_overrun_bytes", tag);
	check(name, over, 0);
	long long want = (n + per_irq - 1) / per_irq;
	snprintf(name, sizeof name, "%s_req_irqs", tag);
	check(name, (long long)r.irqs, want);
	snprintf(name, sizeof name, "%s_raised_irqs", tag);
	check(name, (long long)(count(DEV_IRQ_ATA) - irq0), want);
	snprintf(name, sizeof name, "%s_stray", tag);
	check(name, (long long)(ata_stray_irqs() - stray0), 0);
	snprintf(name, sizeof name, "%s_pending_after", tag);
	check(name, ata_pending(), 0);
	/* reported, never checked: TSC ticks in ata_intr (the memcpy of a block) */
	printf("info %s_handler_tsc_mean %llu max %llu\n", tag,
	       (unsigned long long)(r.irqs ? r.handler_tsc_total / r.irqs : 0),
	       (unsigned long long)r.handler_tsc_max);
}

static void s_ata(const char *image, long long sectors)
{
	check("init", hosted_dev_init(image), KSYNC_OK);
	hosted_dev_ata_timing(20000, 1000);
	struct ata_info info;
	check("probe", ata_probe(&info), KSYNC_OK);
	check("probe_present", info.present, 1);
	check("probe_sectors", (long long)info.sectors, sectors);
	check("probe_max_multiple", info.max_multiple, 16);
	check("probe_lba48", info.lba48, 0);
	check("probe_model_named", info.model[0] != 0, 1);
	read_case("pi1", 5, 37, 1);
	read_case("pi4", 5, 37, 4);
	read_case("pi16", 5, 37, 16);
	read_case("pi16_full", 0, ATA_MAX_COUNT, 16);
	read_case("pi4_last", (uint64_t)sectors - 3, 3, 4);
	read_case("pi1_one", (uint64_t)sectors / 2, 1, 1);
}

static void s_ata_errors(const char *image)
{
	check("init", hosted_dev_init(image), KSYNC_OK);
	uint16_t buf[ATA_MAX_COUNT * 256];
	struct ata_req r = { .lba = 0, .count = 1, .per_irq = 1, .buf = buf };
	check("read_before_probe", ata_read_start(&r), KSYNC_ENOENT);
	struct ata_info info;
	check("probe", ata_probe(&info), KSYNC_OK);
	check("probe_null", ata_probe(NULL), KSYNC_EINVAL);
	check("null_req", ata_read_start(NULL), KSYNC_EINVAL);
	struct ata_req b;
	b = r; b.buf = NULL;			check("null_buf", ata_read_start(&b), KSYNC_EINVAL);
	b = r; b.count = 0;			check("count_0", ata_read_start(&b), KSYNC_EINVAL);
	b = r; b.count = ATA_MAX_COUNT + 1;	check("count_257", ata_read_start(&b), KSYNC_EINVAL);
	b = r; b.per_irq = 0;			check("per_irq_0", ata_read_start(&b), KSYNC_EINVAL);
	b = r; b.per_irq = 17;			check("per_irq_17", ata_read_start(&b), KSYNC_EINVAL);
	b = r; b.lba = info.sectors;		check("lba_end", ata_read_start(&b), KSYNC_EINVAL);
	b = r; b.lba = info.sectors - 1; b.count = 2;
	check("lba_past_end", ata_read_start(&b), KSYNC_EINVAL);
	check("bad_raises", (long long)count(DEV_IRQ_ATA), 0);

	/* busy: a request whose first block is a second away */
	hosted_dev_ata_timing(1000000000ull, 1000);
	struct ata_req slow = { .lba = 0, .count = 8, .per_irq = 4, .buf = buf };
	check("slow_start", ata_read_start(&slow), KSYNC_OK);
	struct ata_req other = { .lba = 1, .count = 1, .per_irq = 1, .buf = buf + 8 * 256 };
	check("busy_read", ata_read_start(&other), KSYNC_EBUSY);
	check("busy_probe", ata_probe(&info), KSYNC_EBUSY);
	check("slow_pending", ata_pending(), 0);
	ata_reset();				/* ends it */
	check("reset_done", __atomic_load_n(&slow.done, __ATOMIC_ACQUIRE), 1);
	check("reset_error", slow.error, ATA_EIO);
	check("reset_raises", (long long)count(DEV_IRQ_ATA), 0);
	ata_reset();				/* nothing running: harmless */
	/* the channel works again after a reset */
	hosted_dev_ata_timing(20000, 1000);
	check("probe_again", ata_probe(&info), KSYNC_OK);
	read_case("after_reset", 2, 9, 4);
	/* an interrupt with no request is counted as stray and changes nothing */
	uint64_t s0 = ata_stray_irqs();
	ata_intr(NULL);
	check("stray_counted", (long long)(ata_stray_irqs() - s0), 1);
	/* reset in the middle of a multi-block read: ends with EIO, next read is exact */
	/* the second block is a second after the first: the reset comes after the handler
	 * took block 1 and long before block 2, so it never runs beside ata_intr (the
	 * contract: irq 14 masked, or on the vCPU that takes it) */
	hosted_dev_ata_timing(1000, 1000000000ull);
	struct ata_req mid = { .lba = 0, .count = 64, .per_irq = 1, .buf = buf };
	uint64_t h0 = atomic_load(&handled[DEV_IRQ_ATA]);
	check("mid_start", ata_read_start(&mid), KSYNC_OK);
	bool took = false;
	for (unsigned i = 0; i < 5000 && !took; i++) {
		took = atomic_load(&handled[DEV_IRQ_ATA]) > h0;
		if (!took)
			sleep_ms(1);
	}
	check("mid_first_block_handled", took, 1);
	check("mid_one_sector", mid.done_sectors, 1);
	ata_reset();
	check("mid_done", __atomic_load_n(&mid.done, __ATOMIC_ACQUIRE), 1);
	check("mid_error", mid.error, ATA_EIO);
	hosted_dev_ata_timing(20000, 1000);
	read_case("after_mid_reset", 7, 20, 16);
}

static void s_nodisk(void)
{
	check("init_missing_file", hosted_dev_init("/nonexistent/ksync-disk.img"), KSYNC_ENOENT);
	check("init_null", hosted_dev_init(NULL), KSYNC_OK);
	check("init_twice", hosted_dev_init(NULL), KSYNC_EBUSY);
	check("has_devices", arch_has_platform_devices(), 1);
	struct ata_info info;
	check("probe_nodisk", ata_probe(&info), KSYNC_ENOENT);
	check("probe_nodisk_present", info.present, 0);
	uint16_t buf[256];
	struct ata_req r = { .lba = 0, .count = 1, .per_irq = 1, .buf = buf };
	check("read_nodisk", ata_read_start(&r), KSYNC_ENOENT);
	check("status_word", (long long)hosted_dev_status, 0x60);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void s_late(unsigned seconds)
{
	pit_periodic(1000);
	sleep_ms(seconds * 1000);
	pit_stop();
	static uint64_t s[HOSTED_DEV_LATE_SAMPLES];
	size_t n = hosted_dev_pit_lateness(s, HOSTED_DEV_LATE_SAMPLES);
	qsort(s, n, sizeof s[0], cmp_u64);
	check("late_samples_nonzero", n > 0, 1);
	if (n) {
		printf("KSYNC {\"kind\":\"hosted_dev_late\",\"device\":\"pit\",\"hz\":1000,"
		       "\"seconds\":%u,\"samples\":%zu,\"median_ns\":%llu,\"p99_ns\":%llu,"
		       "\"max_ns\":%llu,\"missed_periods\":%llu,\"sched\":\"%s\"}\n",
		       seconds, n, (unsigned long long)s[n / 2],
		       (unsigned long long)s[n * 99 / 100], (unsigned long long)s[n - 1],
		       (unsigned long long)hosted_dev_pit_missed(), hosted_dev_sched_label());
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2) {
		fprintf(stderr, "usage: %s scenario [args]\n", argv[0]);
		return 2;
	}
	sem_init(&irq_sem, 0, 0);
	pthread_t h;
	pthread_create(&h, NULL, handler_main, NULL);
	const char *s = argv[1];
	bool own_init = strcmp(s, "ata") && strcmp(s, "ata-errors") && strcmp(s, "nodisk");
	if (own_init && hosted_dev_init(NULL) != KSYNC_OK) {
		fprintf(stderr, "hosted_dev_init failed\n");
		return 2;
	}
	if (!strcmp(s, "convert"))
		s_convert();
	else if (!strcmp(s, "pit-oneshot"))
		s_pit_oneshot();
	else if (!strcmp(s, "pit-periodic"))
		s_pit_periodic();
	else if (!strcmp(s, "pit-restart"))
		s_pit_restart();
	else if (!strcmp(s, "rtc"))
		s_rtc();
	else if (!strcmp(s, "rtc-noack"))
		s_rtc_noack();
	else if (!strcmp(s, "ata") && argc == 4)
		s_ata(argv[2], atoll(argv[3]));
	else if (!strcmp(s, "ata-errors") && argc == 3)
		s_ata_errors(argv[2]);
	else if (!strcmp(s, "nodisk"))
		s_nodisk();
	else if (!strcmp(s, "late") && argc == 3)
		s_late((unsigned)atoi(argv[2]));
	else {
		fprintf(stderr, "unknown scenario or arguments: %s\n", s);
		return 2;
	}
	hosted_dev_shutdown();
	atomic_store(&handler_quit, true);
	sem_post(&irq_sem);
	pthread_join(h, NULL);
	sem_destroy(&irq_sem);
	printf("result %s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
