/*
 * dev_net_model.c - a paced NIC receive ring: bursts of `burst` packets of `bytes` bytes
 * every `burst_period_us` (back to back inside a burst at a modelled 1 Gbit/s) land in a
 * ring of `ring` slots; the NIC's interrupt-moderation timer is the real CMOS RTC
 * periodic interrupt (IRQ8) at irq_hz, and its handler drains every packet that arrived.
 * When the ring is full, arriving packets are dropped (paced.h counts them).
 *
 * Small & Manley 1997 section 6.3 (network interrupts: 10 Mbps Ethernet then, "faster
 * network technologies ... would generate interrupts much more frequently") and 3.5
 * ("data buffers can overflow with an accompanying loss of data").
 *
 * Real: the interrupt (RTC through the interrupt controller) and the handler's work - a
 * memcpy of every packet from its ring slot into a host buffer and a check of the
 * sequence number read back from the copy (first 8 bytes, little-endian) and of the
 * payload's last byte. Modelled: the NIC's arrival schedule and its DMA (the handler
 * stamps the sequence number into the slot just before copying, standing in for the
 * NIC having written it; the rest of each slot holds a fixed pattern written at start).
 *
 * Shared state: `owner` (the running model) is claimed by CAS in net_model_start and
 * released by net_model_stop. Parameters and buffers are written before the RTC is
 * started (that port write is the publication); model state and statistics are written
 * only by net_model_intr on IRQ8's CPU, never nested; `done` is stored last (release).
 */
#include "kernel.h"
#include "mm.h"
#include "dev.h"

static struct net_model *owner;

static uint8_t pattern(uint64_t slot, uint64_t i) { return (uint8_t)(slot * 131 + i * 7 + 1); }

static int bad(const char *why, unsigned v)
{
	kprintf("net_model: %s (%u)\n", why, v);
	return KSYNC_EINVAL;
}

int net_model_start(struct net_model *m, unsigned burst, unsigned bytes, unsigned burst_period_us,
		    unsigned ring, unsigned irq_hz, uint64_t npackets)
{
	if (!m)
		return bad("NULL model", 0);
	if (burst == 0)
		return bad("burst of 0 packets", burst);
	if (bytes < 8 || bytes > NET_MAX_BYTES)
		return bad("packet size outside 8..9000 bytes (8 hold the sequence number)", bytes);
	if (ring == 0 || ring > NET_MAX_RING)
		return bad("ring size outside 1..4096 slots", ring);
	if (irq_hz < 2 || irq_hz > 8192 || (irq_hz & (irq_hz - 1)))
		return bad("interrupt rate is not an RTC rate (power of two 2..8192 Hz)", irq_hz);
	if (burst_period_us == 0)
		return bad("burst period of 0 us", burst_period_us);
	if (npackets == 0)
		return bad("no packets to send", 0);
	uint64_t tsc_hz = arch_tsc_hz();
	/* one packet on the wire: (bytes + overhead) * 8 bits at NET_LINK_BPS */
	uint64_t item_tsc = ((uint64_t)bytes + NET_WIRE_OVERHEAD) * 8 * tsc_hz / NET_LINK_BPS;
	if (item_tsc == 0)
		item_tsc = 1;
	/* us * hz / 1e6 without overflowing 64 bits for any unsigned us */
	uint64_t period_tsc = (uint64_t)(burst_period_us / 1000000u) * tsc_hz +
			      (uint64_t)(burst_period_us % 1000000u) * tsc_hz / 1000000;
	if (period_tsc < (uint64_t)burst * item_tsc) {
		kprintf("net_model: %u packets of %u bytes take %lu us at 1 Gbit/s, more than the "
			"burst period of %u us\n", burst, bytes,
			(uint64_t)burst * (bytes + NET_WIRE_OVERHEAD) * 8 / 1000, burst_period_us);
		return KSYNC_EINVAL;
	}
	struct net_model *none = NULL;
	/* acquire: the previous owner's handler work happens-before our reuse of the RTC */
	if (!__atomic_compare_exchange_n(&owner, &none, m, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		kprintf("net_model: another net model runs\n");
		return KSYNC_EBUSY;
	}
	/* a handler registered once may see this model between runs: keep it out first */
	__atomic_store_n(&m->running, false, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	memset(m, 0, sizeof *m);
	m->burst = burst;
	m->bytes = bytes;
	m->burst_period_us = burst_period_us;
	m->ring = ring;
	m->irq_hz = irq_hz;
	m->npackets = npackets;
	size_t sz = (size_t)ring * bytes;
	m->slots = kmalloc(sz);
	m->host = kmalloc(sz);
	if (!m->slots || !m->host) {
		kprintf("net_model: cannot allocate 2 x %zu bytes of ring\n", sz);
		kfree(m->slots);
		kfree(m->host);
		m->slots = m->host = NULL;
		__atomic_store_n(&owner, (struct net_model *)NULL, __ATOMIC_RELEASE);
		return KSYNC_ENOMEM;
	}
	for (uint64_t s = 0; s < ring; s++)
		for (uint64_t i = 0; i < bytes; i++)
			m->slots[s * bytes + i] = pattern(s, i);
	memset(m->host, 0, sz);
	uint64_t now = arch_cycles();
	struct paced_params q = {
		.t0 = now + period_tsc / 2,	/* the first burst half a period from now */
		.n = npackets,
		.item_period = item_tsc,
		.burst_period = period_tsc,
		.burst = burst,
		.capacity = ring,
		.trigger = 1,			/* unused: the RTC paces the drains */
	};
	if (paced_init(&m->p, &q) != KSYNC_OK) {
		kprintf("net_model: %lu packets overflow the TSC schedule\n", npackets);
		net_model_stop(m);
		return KSYNC_EINVAL;
	}
	paced_check_init(&m->chk);
	/* release: the set-up above is visible to the handler that sees running */
	__atomic_store_n(&m->running, true, __ATOMIC_RELEASE);
	int e = rtc_periodic(irq_hz);
	if (e) {
		net_model_stop(m);
		return e;
	}
	return KSYNC_OK;
}

void net_model_intr(void *arg)
{
	struct net_model *m = arg;
	uint64_t t_in = arch_cycles();
	rtc_ack();
	if (!__atomic_load_n(&m->running, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&m->done, __ATOMIC_RELAXED)) {
		m->strays++;
		return;
	}
	m->irqs++;
	uint64_t since = t_in - (m->last_in ? m->last_in : m->p.prm.t0);
	if (t_in > m->p.prm.t0 && since > m->gap_tsc_max)
		m->gap_tsc_max = since;
	m->last_in = t_in;
	struct paced_batch b;
	paced_drain(&m->p, t_in, NULL, &b);
	const unsigned bytes = m->bytes;
	for (uint32_t k = 0; k < b.kept; k++) {
		uint64_t seq = b.first + k;
		uint64_t slot = m->ring_head++ % m->ring;
		uint8_t *src = m->slots + slot * bytes, *dst = m->host + slot * bytes;
		memcpy(src, &seq, 8);			/* the NIC's DMA, modelled */
		memcpy(dst, src, bytes);		/* the driver's copy, real */
		uint64_t got;
		memcpy(&got, dst, 8);
		paced_check_seq(&m->chk, got);
		if (bytes > 8 && dst[bytes - 1] != pattern(slot, bytes - 1))
			m->data_errors++;
	}
	if (b.lost)
		m->lossy_irqs++;
	bool fin = paced_finished(&m->p);
	if (fin) {
		rtc_stop();
		paced_check_finish(&m->chk, m->npackets);
	}
	m->packets = m->chk.received;
	m->dropped = m->p.lost;
	m->gaps_seen = m->chk.gaps;
	m->seq_errors = m->chk.seq_errors;
	uint64_t d = arch_cycles() - t_in;
	m->handler_tsc_total += d;
	if (d > m->handler_tsc_max)
		m->handler_tsc_max = d;
	if (fin)	/* release: every statistic above is final for a reader that sees done */
		__atomic_store_n(&m->done, true, __ATOMIC_RELEASE);
}

bool net_model_done(const struct net_model *m)
{
	return __atomic_load_n(&m->done, __ATOMIC_ACQUIRE);
}

/* Call with IRQ8 masked or after done (the handler must not be running). */
void net_model_stop(struct net_model *m)
{
	rtc_stop();
	__atomic_store_n(&m->running, false, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE))
		__atomic_store_n(&m->done, true, __ATOMIC_RELEASE);
	kfree(m->slots);
	kfree(m->host);
	m->slots = m->host = NULL;
	struct net_model *me = m;
	/* release: our last writes to the model happen-before the next owner's start */
	__atomic_compare_exchange_n(&owner, &me, (struct net_model *)NULL, false,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}
