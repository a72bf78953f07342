/*
 * ata.c - ATA/IDE PIO driver, primary channel (ports 0x1f0-0x1f7, control 0x3f6, IRQ14),
 * master drive only: IDENTIFY (polled), and interrupt-driven reads of up to 256 sectors
 * with READ SECTORS (one sector per interrupt) or READ MULTIPLE (per_irq sectors per
 * interrupt, SET MULTIPLE MODE first).
 *
 * Small & Manley 1997 section 6.1: the IDE disk's PIO handler copies every word through
 * the CPU and was the longest handler they measured (1.5 ms); ata_intr is that handler
 * (`rep insw`, 256 words per sector), and per_irq sets its length. Everything here is a
 * real device (QEMU's PIIX IDE under TCG, or a PC's); nothing is modelled.
 *
 * Interrupt line: the drive asserts INTRQ when a data block is ready and drops it when
 * the status register is read (the handler's first access). The controller sees an
 * edge per block, so a PIO read of `count` sectors raises exactly ceil(count / per_irq)
 * interrupts; no interrupt follows the last block. The drive does not raise it again:
 * an edge dropped by a masked IOAPIC pin is lost, and ata_pending() tells a scheme that
 * masks there that the handler is owed a call. An interrupt that finds no block ready
 * (BSY, or neither DRQ nor ERR) is counted as stray and changes nothing, so such a
 * replay is harmless even when the real interrupt also comes.
 *
 * Shared state and what protects it:
 *   ata_active  - the running request. Claimed by ata_read_start with a CAS from NULL
 *                 (so two starters cannot both win); cleared by ata_intr when the request
 *                 ends (release), or by ata_reset. Read by ata_intr with acquire.
 *   ata_dev     - written by ata_probe only while no request runs (it refuses with
 *                 EBUSY otherwise); read-only for requests.
 *   ata_multiple- the drive's current READ MULTIPLE block size; written by ata_read_start
 *                 after winning the claim (one writer at a time).
 *   the channel's registers: programmed by the claim holder (ata_read_start) before the
 *                 command is issued; after that only ata_intr touches them until the
 *                 request ends. ata_probe runs polled with drive interrupts off (nIEN).
 *   stray_irqs  - incremented by ata_intr only (IRQ14 goes to one CPU; a replay by a
 *                 scheme runs on that CPU too, or with the line masked).
 */
#include "kernel.h"
#include "x86.h"
#include "dev.h"

#define ATA_DATA 0x1f0
#define ATA_ERR 0x1f1
#define ATA_NSECT 0x1f2
#define ATA_LBA0 0x1f3
#define ATA_LBA1 0x1f4
#define ATA_LBA2 0x1f5
#define ATA_DEV 0x1f6
#define ATA_STATUS 0x1f7	/* read: status (acks INTRQ); write: command */
#define ATA_CMD 0x1f7
#define ATA_CTRL 0x3f6		/* write: device control; read: alternate status (no ack) */

#define ST_BSY 0x80
#define ST_DRDY 0x40
#define ST_DF 0x20
#define ST_DRQ 0x08
#define ST_ERR 0x01

#define CTRL_NIEN 0x02
#define CTRL_SRST 0x04

#define CMD_READ_SECTORS 0x20
#define CMD_READ_SECTORS_EXT 0x24
#define CMD_READ_MULTIPLE 0xc4
#define CMD_READ_MULTIPLE_EXT 0x29
#define CMD_SET_MULTIPLE 0xc6
#define CMD_IDENTIFY 0xec

static struct ata_req *ata_active;
static struct ata_info ata_dev;
static unsigned ata_multiple;		/* 0: unknown */
static volatile uint64_t stray_irqs;

uint64_t ata_stray_irqs(void) { return stray_irqs; }

/* 400 ns for the drive to post status after a select or command: four alt-status reads. */
static void ata_pause(void)
{
	for (int i = 0; i < 4; i++)
		(void)inb(ATA_CTRL);
}

static uint64_t deadline_ms(unsigned ms) { return arch_cycles() + arch_tsc_hz() / 1000 * ms; }
static bool expired(uint64_t dl) { return (int64_t)(arch_cycles() - dl) >= 0; }

/* Poll the alternate status until (st & mask) == want or the deadline; returns the last
 * status read, with *ok false on timeout. */
static uint8_t ata_wait(uint8_t mask, uint8_t want, unsigned ms, bool *ok)
{
	uint64_t dl = deadline_ms(ms);
	uint8_t st;
	for (;;) {
		st = inb(ATA_CTRL);
		if ((st & mask) == want) {
			*ok = true;
			return st;
		}
		if (expired(dl)) {
			*ok = false;
			return st;
		}
		arch_cpu_relax();
	}
}

/* Copy an IDENTIFY string (words, big-endian pairs), trimming trailing spaces. */
static void ata_string(char *dst, const uint16_t *w, unsigned nwords)
{
	unsigned n = 0;
	for (unsigned i = 0; i < nwords; i++) {
		dst[n++] = (char)(w[i] >> 8);
		dst[n++] = (char)(w[i] & 0xff);
	}
	while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == 0))
		n--;
	dst[n] = 0;
}

int ata_probe(struct ata_info *out)
{
	if (!out)
		return KSYNC_EINVAL;
	if (__atomic_load_n(&ata_active, __ATOMIC_ACQUIRE))
		return KSYNC_EBUSY;
	memset(out, 0, sizeof *out);
	ata_dev.present = false;

	outb(ATA_CTRL, CTRL_NIEN);		/* polled: no INTRQ while probing */
	uint8_t st = inb(ATA_CTRL);
	if (st == 0xff)				/* floating bus: no controller or no drives */
		return KSYNC_ENOENT;
	outb(ATA_DEV, 0xa0);			/* master, CHS bits (IDENTIFY ignores them) */
	ata_pause();
	/* do the task-file registers hold what we write? (an empty channel reads 0) */
	outb(ATA_NSECT, 0x55);
	outb(ATA_LBA0, 0xaa);
	if (inb(ATA_NSECT) != 0x55 || inb(ATA_LBA0) != 0xaa)
		return KSYNC_ENOENT;
	bool ok;
	(void)ata_wait(ST_BSY, 0, 500, &ok);
	if (!ok)
		return KSYNC_ENOENT;
	outb(ATA_NSECT, 0);
	outb(ATA_LBA0, 0);
	outb(ATA_LBA1, 0);
	outb(ATA_LBA2, 0);
	outb(ATA_CMD, CMD_IDENTIFY);
	ata_pause();
	if (inb(ATA_CTRL) == 0)			/* no drive answered */
		return KSYNC_ENOENT;
	(void)ata_wait(ST_BSY, 0, 1000, &ok);
	if (!ok)
		return KSYNC_ENOENT;
	uint8_t m = inb(ATA_LBA1), h = inb(ATA_LBA2);
	if ((m == 0x14 && h == 0xeb) || (m == 0x69 && h == 0x96))
		return KSYNC_ENOENT;		/* ATAPI / SATAPI (a CD drive), not a disk */
	st = ata_wait(ST_DRQ | ST_ERR, ST_DRQ, 1000, &ok);
	if (!ok || (st & ST_ERR)) {
		(void)inb(ATA_STATUS);
		return KSYNC_ENOENT;
	}
	uint16_t id[256];
	insw(ATA_DATA, id, 256);
	(void)inb(ATA_STATUS);			/* clear any pending INTRQ state */

	if (!(id[49] & (1u << 9)))		/* no LBA: not a drive we drive */
		return KSYNC_ENOENT;
	out->present = true;
	ata_string(out->model, &id[27], 20);
	out->lba48 = (id[83] & (1u << 10)) != 0;
	uint64_t s28 = id[60] | ((uint64_t)id[61] << 16);
	uint64_t s48 = id[100] | ((uint64_t)id[101] << 16) | ((uint64_t)id[102] << 32) |
		       ((uint64_t)id[103] << 48);
	out->sectors = out->lba48 && s48 ? s48 : s28;
	out->max_multiple = id[47] & 0xff;
	if (out->max_multiple > ATA_MAX_PER_IRQ)
		out->max_multiple = ATA_MAX_PER_IRQ;
	ata_multiple = (id[59] & 0x100) ? (id[59] & 0xff) : 0;
	ata_dev = *out;
	return KSYNC_OK;
}

/* SET MULTIPLE MODE, polled with INTRQ off. Caller holds the claim. */
static int ata_set_multiple(unsigned n)
{
	bool ok;
	outb(ATA_CTRL, CTRL_NIEN);
	outb(ATA_DEV, 0xe0);
	ata_pause();
	outb(ATA_NSECT, (uint8_t)n);
	outb(ATA_CMD, CMD_SET_MULTIPLE);
	ata_pause();
	uint8_t st = ata_wait(ST_BSY, 0, 1000, &ok);
	(void)inb(ATA_STATUS);
	if (!ok || (st & (ST_ERR | ST_DF)))
		return KSYNC_EINVAL;
	ata_multiple = n;
	return KSYNC_OK;
}

int ata_read_start(struct ata_req *r)
{
	int rc = ata_req_check(r, &ata_dev);
	if (rc != KSYNC_OK)
		return rc;
	bool ext = r->lba + r->count > (1ull << 28);

	/* Claim the channel with a marker (buf == NULL: the handler treats an interrupt
	 * during set-up as stray); r is published only once it is initialised.
	 * acquire: the previous request's end (its release in ata_finish) happens-before us. */
	static struct ata_req claim_marker;
	struct ata_req *none = NULL;
	if (!__atomic_compare_exchange_n(&ata_active, &none, &claim_marker, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return KSYNC_EBUSY;

	r->done_sectors = 0;
	r->error = 0;
	r->irqs = 0;
	r->handler_tsc_total = r->handler_tsc_max = 0;
	r->status = r->err_reg = 0;
	r->done = false;

	bool ok;
	(void)ata_wait(ST_BSY, 0, 1000, &ok);
	int e = KSYNC_OK;
	if (!ok)
		e = KSYNC_EBUSY;
	else if (r->per_irq > 1 && r->per_irq != ata_multiple)
		e = ata_set_multiple(r->per_irq);
	if (e) {
		__atomic_store_n(&ata_active, (struct ata_req *)NULL, __ATOMIC_RELEASE);
		return e;
	}
	outb(ATA_CTRL, 0);			/* INTRQ on */
	if (ext) {
		outb(ATA_DEV, 0x40);
		ata_pause();
		outb(ATA_NSECT, (uint8_t)(r->count >> 8));
		outb(ATA_LBA0, (uint8_t)(r->lba >> 24));
		outb(ATA_LBA1, (uint8_t)(r->lba >> 32));
		outb(ATA_LBA2, (uint8_t)(r->lba >> 40));
	} else {
		outb(ATA_DEV, (uint8_t)(0xe0 | ((r->lba >> 24) & 0x0f)));
		ata_pause();
	}
	outb(ATA_NSECT, (uint8_t)r->count);	/* 256 -> 0, which means 256 */
	outb(ATA_LBA0, (uint8_t)r->lba);
	outb(ATA_LBA1, (uint8_t)(r->lba >> 8));
	outb(ATA_LBA2, (uint8_t)(r->lba >> 16));
	/* release: r's fields are visible to the handler that loads ata_active */
	__atomic_store_n(&ata_active, r, __ATOMIC_RELEASE);
	uint8_t cmd = r->per_irq == 1 ? (ext ? CMD_READ_SECTORS_EXT : CMD_READ_SECTORS)
				      : (ext ? CMD_READ_MULTIPLE_EXT : CMD_READ_MULTIPLE);
	outb(ATA_CMD, cmd);
	return KSYNC_OK;
}

/* End the request: unpublish it, then say done (release: data and counts are final). */
static void ata_finish(struct ata_req *r, int error)
{
	r->error = error;
	__atomic_store_n(&ata_active, (struct ata_req *)NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
}

void ata_intr(void *arg)
{
	(void)arg;
	uint64_t t_in = arch_cycles();
	uint8_t st = inb(ATA_STATUS);		/* acknowledges INTRQ */
	struct ata_req *r = __atomic_load_n(&ata_active, __ATOMIC_ACQUIRE);
	if (!r || r->buf == NULL) {		/* none, or the claim marker during set-up */
		stray_irqs++;
		return;
	}
	r->status = st;
	int end = 1;				/* 1: more blocks to come; else 0 or ATA_EIO */
	if (st & ST_BSY) {
		stray_irqs++;			/* not ready: a replayed or duplicate interrupt */
		return;
	} else if (st & (ST_ERR | ST_DF)) {
		r->err_reg = inb(ATA_ERR);
		end = ATA_EIO;
	} else if (!(st & ST_DRQ)) {
		stray_irqs++;			/* no block waiting: the drive did not ask */
		return;
	} else {
		unsigned left = r->count - r->done_sectors;
		unsigned n = left < r->per_irq ? left : r->per_irq;
		insw(ATA_DATA, r->buf + (uint64_t)r->done_sectors * 256, n * 256);
		r->done_sectors += n;
		if (r->done_sectors == r->count)
			end = 0;
	}
	r->irqs++;
	/* statistics before ata_finish: after it the waiter owns r again */
	uint64_t d = arch_cycles() - t_in;
	r->handler_tsc_total += d;
	if (d > r->handler_tsc_max)
		r->handler_tsc_max = d;
	if (end != 1)
		ata_finish(r, end);
}

bool ata_pending(void)
{
	struct ata_req *r = __atomic_load_n(&ata_active, __ATOMIC_ACQUIRE);
	if (!r || r->buf == NULL)
		return false;
	uint8_t st = inb(ATA_CTRL);		/* alternate status: no acknowledge */
	return !(st & ST_BSY) && (st & (ST_DRQ | ST_ERR | ST_DF));
}

/* Only with IRQ14 masked, or on the CPU that takes it (so ata_intr is not running). */
void ata_reset(void)
{
	struct ata_req *r = __atomic_exchange_n(&ata_active, (struct ata_req *)NULL, __ATOMIC_ACQ_REL);
	outb(ATA_CTRL, CTRL_NIEN | CTRL_SRST);
	arch_delay_us(10);
	outb(ATA_CTRL, CTRL_NIEN);
	arch_delay_us(2000);
	bool ok;
	(void)ata_wait(ST_BSY, 0, 1000, &ok);
	(void)inb(ATA_STATUS);
	ata_multiple = 0;			/* a reset may restore the default block size */
	if (r && r->buf) {
		r->error = ATA_EIO;
		__atomic_store_n(&r->done, true, __ATOMIC_RELEASE);
	}
}
