/*
 * fiasco.c - Hohmuth & Haertig 2001 Table 2 regenerated (issue 12 item 5): a one-word
 * counter incremented unsynchronized, by CAS, under the helping lock, under the single
 * server (one context switch to the server and one back included), and for comparison
 * under a master lock and a monitor lock, under the original (sleeping) serializer;
 * the uncontended helping lock's acquire+release alone, and its floor (two CAS on one word:
 * the acquire's and the release's locked instructions, nothing else); one context switch; one-way
 * synchronous message cost (hipc_send to a waiting receiver, the switch hint handing it
 * the CPU). Paper: section 5.2, Table 2 (P5 133 MHz / P-II 400 MHz cycles: counter 2 / 2,
 * CAS 13 / 12, Fiasco thread lock 245 / 245, Massalin-Pu-style thread lock with one
 * context switch 627 / 607, IPC 653 / 810).
 *
 * Method: KSYNC_MEASURE batches (protocol.md section 4) for the rows without a switch;
 * the rows with switches time each operation alone (a serialized TSC read before and one
 * after, or before the send and at the receiver), 400 samples, because a batch would also
 * time the other thread's loop. Every row subtracts the empty form of its own timing: a
 * batch row the median of the empty batch loop (KSYNC_MEASURE with an empty body, the
 * same loop and TSC reads), a single row the median of an empty interval (the same pair
 * of serialized TSC reads with nothing between), each per operation - so that every
 * figure, and both sides of every ratio the report makes of them (x / CAS), is the
 * operation's cost without the clock's. "empty_per_op" says what was subtracted. A
 * sample the row could not time is counted in "dropped" and left out (the IPC row: the
 * receiver did not take the message at once; its stamp is not this message's). Lock
 * statistics off (the paper's locks had none). Every thread of the switch rows is bound
 * to CPU 0; the other CPUs are idle. Both schedulers for the switch rows. One line per row:
 *   KSYNC {"kind":"fiasco_cost","row":"...","sched":"lockfree|locked|-","method":
 *          "batch|single","unit":"tsc_ticks","n":..,"min":..,"median":..,"p99":..,"max":..,
 *          "empty_subtracted":true,"empty_per_op":..,"dropped":..}
 * Under TCG these are emulator costs (the report labels them); hosted, the real CPU's.
 */
#include "kernel.h"
#include "experiment.h"
#include "thread.h"
#include "hlock.h"
#include "mlock.h"
#include "monitor.h"
#include "serializer.h"
#include <ksync/atomic.h>
#include <ksync/measure.h>
#include <ksync/errors.h>

LOCK_CLASS(fiasco_hlock_class, "fiasco_counter", LOCK_HELPING, LOCK_DATA);
LOCK_CLASS(fiasco_mlock_class, "fiasco_master", LOCK_MASTER, LOCK_DATA);
LOCK_CLASS(fiasco_mon_class, "fiasco_monitor", LOCK_MONITOR, LOCK_DATA);

#define FB 200		/* batches */
#define FO 256		/* operations per batch */
#define FS 400		/* single-operation samples */

static uint64_t fb_t[FB], fb_e[FB], fs_t[FS], fs_e[FS];
static volatile uint64_t counter;

static void emit(const char *row, const char *sched, const char *method,
		 const struct ksync_prim_result *r, unsigned n, unsigned dropped)
{
	char mn[24], md[24], p9[24], mx[24], em[24];
	ksync_fixed2_format(mn, sizeof mn, r->min_x100);
	ksync_fixed2_format(md, sizeof md, r->median_x100);
	ksync_fixed2_format(p9, sizeof p9, r->p99_x100);
	ksync_fixed2_format(mx, sizeof mx, r->max_x100);
	ksync_fixed2_format(em, sizeof em, r->empty_x100);
	kprintf("KSYNC {\"kind\":\"fiasco_cost\",\"row\":\"%s\",\"sched\":\"%s\",\"method\":\"%s\","
		"\"scheme\":\"%s\",\"cpus\":%u,\"unit\":\"tsc_ticks\",\"n\":%u,\"min\":%s,"
		"\"median\":%s,\"p99\":%s,\"max\":%s,\"empty_subtracted\":true,"
		"\"empty_per_op\":%s,\"dropped\":%u}\n", row, sched, method, spl_scheme_name(),
		arch_ncpus(), n, mn, md, p9, mx, em, dropped);
}

static void emit_batch(const char *row)
{
	struct ksync_prim_result r = ksync_prim_compute(fb_t, FB, FO, fb_e, FB);
	emit(row, "-", "batch", &r, FB, 0);
}

/* fs_t[0..n): whole intervals of `ops` operations each (the context switch: a yield is
 * two switches); the empty interval's median is subtracted, then divided by `ops`, as a
 * batch row's empty loop */
static void emit_single(const char *row, const char *sched, unsigned n, unsigned ops,
			unsigned dropped)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = arch_cycles_begin();
		ksync_compiler_barrier();
		fs_e[i] = arch_cycles_end() - t0;
	}
	struct ksync_prim_result r = ksync_prim_compute(fs_t, n, ops, fs_e, n);
	emit(row, sched, "single", &r, n, dropped);
}

/* ---- the rows without a switch -------------------------------------------------------------- */

static void lock_rows(void)
{
	static struct hlock hl;
	static struct mlock ml;
	static struct monitor mon;
	hlock_init(&hl, &fiasco_hlock_class, NULL);
	mlock_init(&ml, &fiasco_mlock_class, MLOCK_TICKET);
	mon_init(&mon, &fiasco_mon_class, MON_HANDOFF);
	KSYNC_MEASURE(fb_e, FB, FO, (void)0);
	KSYNC_MEASURE(fb_t, FB, FO, { counter++; });
	emit_batch("counter, unsynchronized");
	KSYNC_MEASURE(fb_t, FB, FO, {
		uint64_t e = __atomic_load_n(&counter, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(&counter, &e, e + 1, false, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED))
			;
	});
	emit_batch("counter, CAS");
	KSYNC_MEASURE(fb_t, FB, FO, { hlock_lock(&hl); hlock_unlock(&hl); });
	emit_batch("helping lock acquire+release, uncontended");
	/* the helping lock's floor (issue 27 item 3): its two locked instructions alone, an
	 * acquire CAS 0 -> id and a release CAS id -> 0 on one word, with the lock's orders
	 * and nothing else (no count, no owner's thread, no hint): what acquire+release
	 * costs beyond this is the lock's own work; this against one CAS is the lowest ratio
	 * any lock with a locked acquire and a locked release can reach on the host */
	static uint64_t floor_word;
	KSYNC_MEASURE(fb_t, FB, FO, {
		uint64_t z = 0, me = 1;
		(void)__atomic_compare_exchange_n(&floor_word, &z, 1, false, __ATOMIC_ACQUIRE,
						  __ATOMIC_ACQUIRE);
		(void)__atomic_compare_exchange_n(&floor_word, &me, 0, false, __ATOMIC_RELEASE,
						  __ATOMIC_RELAXED);
	});
	emit_batch("two CAS on one word (the helping lock's floor)");
	KSYNC_MEASURE(fb_t, FB, FO, { hlock_lock(&hl); counter++; hlock_unlock(&hl); });
	emit_batch("counter, helping lock");
	KSYNC_MEASURE(fb_t, FB, FO, { mlock_lock(&ml); counter++; mlock_unlock(&ml); });
	emit_batch("counter, master lock (ticket, scheme mask)");
	KSYNC_MEASURE(fb_t, FB, FO, {
		irqkey_t k = mlock_lock_irqsave(&ml);
		counter++;
		mlock_unlock_irqrestore(&ml, k);
	});
	emit_batch("counter, master lock (ticket, interrupts off)");
	KSYNC_MEASURE(fb_t, FB, FO, { mon_lock(&mon); counter++; mon_unlock(&mon); });
	emit_batch("counter, monitor lock");
	mon_destroy(&mon);
	mlock_destroy(&ml);
}

/* ---- the rows with switches ----------------------------------------------------------------- */

static long srv_inc(void *obj, void *arg)
{
	(void)obj;
	(void)arg;
	return (long)++counter;
}

static volatile unsigned yield_stop;
static void yielder(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&yield_stop, __ATOMIC_ACQUIRE))
		thread_yield();
}

static volatile uint64_t ipc_t1;
static struct thread *receiver;
static void ipc_rcv(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg;
	for (unsigned i = 0; i < n; i++) {
		(void)hipc_recv();
		/* serialized, as the empty interval's closing read */
		__atomic_store_n(&ipc_t1, arch_cycles_end(), __ATOMIC_RELEASE);
	}
}

static void switch_rows(const char *sched)
{
	/* one context switch: two threads of one level on CPU 0 yield to each other; a
	 * yield's time is one switch away and (for the other) one back: per switch = the
	 * batch of yields over their count */
	struct thread *y;
	yield_stop = 0;
	if (thread_create(&y, yielder, NULL, 0, 1, "yielder", 0) == KSYNC_OK) {
		for (unsigned i = 0; i < FS; i++) {
			uint64_t t0 = arch_cycles_begin();
			thread_yield();		/* to the yielder, and back: two switches */
			fs_t[i] = arch_cycles_end() - t0;
		}
		__atomic_store_n(&yield_stop, 1, __ATOMIC_RELEASE);
		(void)thread_join(y);
		emit_single("context switch (thread_yield, two threads, one CPU)", sched, FS, 2, 0);
	}

	/* the single server, requesters donating (section 4.4): the server at our level
	 * and CPU; a call is one switch to it, the increment, one switch back */
	static struct serializer srv;
	struct ser_req r;
	if (ser_init_affine(&srv, SER_DONATE, NULL, 0, 1, "fiasco-srv") == KSYNC_OK) {
		for (unsigned i = 0; i < 8; i++)
			(void)ser_call(&srv, &r, srv_inc, NULL, true);	/* warm */
		for (unsigned i = 0; i < FS; i++) {
			uint64_t t0 = arch_cycles_begin();
			(void)ser_call(&srv, &r, srv_inc, NULL, true);
			fs_t[i] = arch_cycles_end() - t0;
		}
		(void)ser_destroy(&srv);
		emit_single("counter, single server, requester donates (one switch each way)", sched,
			    FS, 1, 0);
	}
	/* Massalin & Pu's original: a queue, the requester sleeps until woken */
	if (ser_init_affine(&srv, SER_QUEUE, NULL, 0, 1, "fiasco-srvq") == KSYNC_OK) {
		for (unsigned i = 0; i < 8; i++)
			(void)ser_call(&srv, &r, srv_inc, NULL, true);
		for (unsigned i = 0; i < FS; i++) {
			uint64_t t0 = arch_cycles_begin();
			(void)ser_call(&srv, &r, srv_inc, NULL, true);
			fs_t[i] = arch_cycles_end() - t0;
		}
		(void)ser_destroy(&srv);
		emit_single("counter, single server, requester sleeps (queue)", sched, FS, 1, 0);
	}

	/* one-way synchronous message: the receiver waits on CPU 0 at our level; the send
	 * locks it, wakes it and hands it the CPU by the switch hint; timed from before the
	 * send to the receiver's return from hipc_recv */
	if (thread_create(&receiver, ipc_rcv, (void *)(uintptr_t)(FS + 8), 0, 1, "fiasco-rcv", 0) ==
	    KSYNC_OK) {
		unsigned got = 0, dropped = 0;
		for (unsigned i = 0; i < FS + 8; i++) {
			int rc;
			uint64_t t0;
			/* wait until it waits (it runs when we yield) */
			for (;;) {
				t0 = arch_cycles_begin();
				rc = hipc_send(receiver, i);
				if (rc != KSYNC_EBUSY)
					break;
				thread_yield();
			}
			uint64_t t1 = __atomic_load_n(&ipc_t1, __ATOMIC_ACQUIRE);
			if (i < 8)
				continue;	/* warm-up */
			if (rc == KSYNC_OK && t1 > t0)
				fs_t[got++] = t1 - t0;
			else
				dropped++;
			/* the receiver ran at once (hint): t1 is this message's; if it did not,
			 * (another CPU took it) the sample is left out and counted */
		}
		(void)thread_join(receiver);
		static const char ipc_row[] = "IPC one-way (hipc_send to a waiting receiver, switch hint)";
		if (got)
			emit_single(ipc_row, sched, got, 1, dropped);
		else
			kprintf("KSYNC {\"kind\":\"fiasco_cost\",\"row\":\"%s\",\"sched\":\"%s\","
				"\"method\":\"single\",\"scheme\":\"%s\",\"cpus\":%u,\"n\":0,"
				"\"dropped\":%u,\"skipped\":\"every sample dropped\"}\n", ipc_row, sched,
				spl_scheme_name(), arch_ncpus(), dropped);
	}
}

KEXPERIMENT(fiasco, "default")
{
	(void)kt;
	char buf[16];
	if (cmdline_get("fiasco", buf, sizeof buf) && !strcmp(buf, "off")) {
		kprintf("KSYNC {\"kind\":\"fiasco_skipped\",\"reason\":\"fiasco=off\"}\n");
		return;	/* the hosted column's per-scheme runs: the Fiasco boot is its own */
	}
	unsigned mode = lockstat_mode();
	(void)lockstat_set_mode(LOCKSTAT_OFF);
	static const char *const scheds[] = { "lockfree", "locked" };
	for (unsigned s = 0; s < 2; s++) {
		if (sched_start(scheds[s]) != KSYNC_OK) {
			kprintf("ksync: fiasco: cannot start the %s scheduler\n", scheds[s]);
			continue;
		}
		if (s == 0)
			lock_rows();	/* the lock rows do not depend on the scheduler */
		switch_rows(scheds[s]);
		(void)sched_stop();
	}
	(void)lockstat_set_mode(mode);
}
