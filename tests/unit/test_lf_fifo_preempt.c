/*
 * test_lf_fifo_preempt.c - the strict lock-freedom of the FIFO queues (lf_fifo.h;
 * Nikolaev DISC 2019, NCQ + indirection; and lf_fifo_mpmc_word.h, the 16-byte-cell word
 * queue, as the flavour "mpmc_word", liveness only: it has no callbacks) and their
 * boundary callbacks under interleaving.
 *
 * KSYNC_ATOMIC_HOOK (include/ksync/atomic.h) is defined here so that every atomic step
 * of the queue code calls preempt_hook().  A "victim" thread runs one queue operation and
 * is stopped, blocked on a semaphore, just before its k-th atomic step, for k = 0, 1, 2
 * ... until it completes without reaching step k.  While it is stopped another thread
 * ("others") runs operations on the same queue under a deadline:
 *
 *  - lf_fifo_preempt_producer_*: the victim enqueues.  The others (other producers where
 *    the flavour has them, and consumers) must complete every operation: for 3 x capacity
 *    rounds they enqueue two elements (both must succeed) and drain the queue, getting
 *    back everything enqueued before or after the victim's operation, in order.  This is
 *    what ck_ring's MP enqueue and Vyukov's bounded queue cannot do: a producer stopped
 *    between reserving and filling a slot hides every later element from consumers.
 *  - lf_fifo_preempt_consumer_*: the same with the victim dequeuing.
 *  After the victim is resumed its operation must succeed, and over everything dequeued
 *  (by the others, the victim and a final drain) nothing is lost or duplicated and each
 *  consumer sees each producer's elements in order.
 *
 *  - lf_fifo_callbacks_interleaved_*: two operations (the stopped victim's and one other)
 *    on a capacity-2 queue with callbacks installed; the events each fires must be exactly
 *    those lf_fifo.h promises: only transitions that happened, at most once each, and,
 *    where the other operation cannot move the queue off the boundary (scenarios A, B, E,
 *    F below), exactly once.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Thread_local int tl_victim;	/* 1 in the victim thread */
static int stop_at;			/* set before the victim starts */
static int steps;			/* victim only */
static int victim_stopped;		/* victim writes, then posts ev_sem */
static sem_t ev_sem, resume_sem;

static void preempt_hook(void)
{
	if (!tl_victim)
		return;
	if (steps++ == stop_at) {
		victim_stopped = 1;
		sem_post(&ev_sem);
		while (sem_wait(&resume_sem) != 0)
			;
	}
}
#define KSYNC_ATOMIC_HOOK(op, addr) preempt_hook()

#include <ksync/ktest.h>

#include "test_lf_fifo_flavours.h"
#include <ksync/lf_fifo_mpmc_word.h>

#define DEADLINE_S 20
#define MAX_STEPS 2000

static bool wait_deadline(sem_t *s)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += DEADLINE_S;
	while (sem_timedwait(s, &ts) != 0)
		if (errno != EINTR)
			return false;
	return true;
}

static void die_stuck(const char *what)
{
	/* A thread that never completes cannot be cancelled safely: report and stop. */
	printf("ktap: # %s did not complete within %d s: an operation is blocked\n", what,
	       DEADLINE_S);
	printf("ktap: not ok - blocked\n");
	fflush(stdout);
	_exit(1);
}

static void sems_init(void)
{
	static int done;

	if (!done) {
		sem_init(&ev_sem, 0, 0);
		sem_init(&resume_sem, 0, 0);
		done = 1;
	}
}

/* ---- the victim and the others ---------------------------------------------------------- */

static _Alignas(64) unsigned char store[4096];
static union anyq q;
static const struct flavour *fl;

static uint64_t val(unsigned producer, unsigned seq)
{
	return (uint64_t)producer << 32 | seq;
}

struct vjob {
	int is_enq;
	uint64_t in, out;
	int result;
};

static void *victim_main(void *arg)
{
	struct vjob *j = arg;

	tl_victim = 1;
	j->result = j->is_enq ? fl->enq(&q, &j->in) : fl->deq(&q, &j->out);
	tl_victim = 0;
	sem_post(&ev_sem);
	return NULL;
}

static sem_t other_sem;

static void run_other(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	static int init;

	if (!init) {
		sem_init(&other_sem, 0, 0);
		init = 1;
	}
	if (pthread_create(&t, NULL, fn, arg) != 0)
		die_stuck("pthread_create");
	if (!wait_deadline(&other_sem))
		die_stuck("the other thread's operations");
	pthread_join(t, NULL);
}

/*
 * Run the victim's job, stopped before atomic step k; while it is stopped run
 * others(oarg) in another thread.  Returns whether the victim was stopped (false: it
 * completed in fewer than k + 1 steps).
 */
static bool run_stopped(struct vjob *vj, int k, void *(*others)(void *), void *oarg)
{
	pthread_t vt;
	bool stopped;

	sems_init();
	steps = 0;
	stop_at = k;
	victim_stopped = 0;
	if (pthread_create(&vt, NULL, victim_main, vj) != 0)
		die_stuck("pthread_create");
	if (!wait_deadline(&ev_sem))
		die_stuck("the victim (before its stop)");
	stopped = victim_stopped;
	if (stopped) {
		run_other(others, oarg);
		sem_post(&resume_sem);
		if (!wait_deadline(&ev_sem))
			die_stuck("the resumed victim");
	}
	pthread_join(vt, NULL);
	return stopped;
}

/* ---- liveness: the others complete while the victim is stopped ------------------------- */

#define CAP 4
#define ROUNDS (3 * CAP)
#define MAXV 256

struct others {
	int victim_is_producer;
	unsigned next_seq;		/* others' producer (id 2) sequence */
	uint64_t got[MAXV];		/* what the others dequeued, in order */
	int ngot;
	int enq_ok, enq_fail_bad;	/* successes; failures that must not happen */
};

static void *others_main(void *arg)
{
	struct others *o = arg;
	bool can_produce = fl->max_producers != 1 || o->victim_is_producer == 0;
	bool can_consume = fl->max_consumers != 1 || o->victim_is_producer == 1;
	uint64_t v;

	for (int r = 0; r < ROUNDS; r++) {
		if (can_consume)
			while (o->ngot < MAXV && fl->deq(&q, &v) == KSYNC_OK)
				o->got[o->ngot++] = v;
		if (can_produce)
			for (int i = 0; i < 2; i++) {
				v = val(2, o->next_seq);
				if (fl->enq(&q, &v) == KSYNC_OK) {
					o->next_seq++;
					o->enq_ok++;
				} else if (can_consume) {
					o->enq_fail_bad++;	/* the queue was just drained */
				}
			}
	}
	if (can_consume)
		while (o->ngot < MAXV && fl->deq(&q, &v) == KSYNC_OK)
			o->got[o->ngot++] = v;
	sem_post(&other_sem);
	return NULL;
}

/* Each producer's elements appear in increasing sequence order in `seq`. */
static bool per_producer_ordered(const uint64_t *seqv, int n)
{
	int64_t last[3] = { -1, -1, -1 };

	for (int i = 0; i < n; i++) {
		unsigned p = (unsigned)(seqv[i] >> 32), s = (unsigned)seqv[i];

		if (p > 2 || (int64_t)s <= last[p])
			return false;
		last[p] = s;
	}
	return true;
}

static void liveness_case(struct ktest_ctx *kt, const struct flavour *f, int victim_is_producer)
{
	int k, stops = 0;

	fl = f;
	for (k = 0; k < MAX_STEPS; k++) {
		static struct others o;
		struct vjob vj = { .is_enq = victim_is_producer, .in = val(1, 0) };
		uint64_t final[MAXV], v;
		int nfinal = 0, nprefill = victim_is_producer ? 1 : 2, count[3] = { 0 };
		bool stopped;

		KT_ASSERT_EQ(f->init(&q, store, sizeof(store), CAP, 8, NULL), KSYNC_OK);
		for (int i = 0; i < nprefill; i++) {
			v = val(0, (unsigned)i);
			KT_ASSERT_EQ(f->enq(&q, &v), KSYNC_OK);
		}
		memset(&o, 0, sizeof(o));
		o.victim_is_producer = victim_is_producer;
		stopped = run_stopped(&vj, k, others_main, &o);
		if (!stopped)
			break;
		stops++;

		/* the others were never held up */
		KT_EXPECT_EQ(o.enq_fail_bad, 0);
		if (f->max_producers != 1 || !victim_is_producer) {
			/* they could produce: at least capacity - 2 cells were free */
			KT_EXPECT(o.enq_ok >= CAP - 2);
		}
		if (victim_is_producer || f->max_consumers != 1) {
			/* they could consume: everything they enqueued came back to them */
			int mine = 0;

			for (int i = 0; i < o.ngot; i++)
				mine += (o.got[i] >> 32) == 2;
			KT_EXPECT_EQ(mine, o.enq_ok);
		}
		KT_EXPECT(per_producer_ordered(o.got, o.ngot));

		/* the victim completes */
		if (victim_is_producer)
			KT_EXPECT_EQ(vj.result, KSYNC_OK);
		else
			KT_EXPECT(vj.result == KSYNC_OK ||
				  (vj.result == KSYNC_EEMPTY && f->max_consumers != 1));

		/* nothing lost, nothing duplicated */
		while (nfinal < MAXV && f->deq(&q, &final[nfinal]) == KSYNC_OK)
			nfinal++;
		KT_EXPECT(per_producer_ordered(final, nfinal));
		for (int i = 0; i < o.ngot; i++)
			count[o.got[i] >> 32]++;
		for (int i = 0; i < nfinal; i++)
			count[final[i] >> 32]++;
		if (!victim_is_producer && vj.result == KSYNC_OK)
			count[vj.out >> 32]++;
		KT_EXPECT_EQ(count[0], nprefill);
		KT_EXPECT_EQ(count[1], victim_is_producer ? 1 : 0);
		KT_EXPECT_EQ(count[2], o.enq_ok);
		if (!victim_is_producer && vj.result == KSYNC_OK && f->max_consumers == 1)
			KT_EXPECT_EQ(vj.out, val(0, 0));	/* the only consumer: the oldest */
		if (kt->failures) {
			kt_diag(kt, "%s: victim %s stopped before atomic step %d", f->name,
				victim_is_producer ? "producer" : "consumer", k);
			return;
		}
	}
	KT_EXPECT(k < MAX_STEPS);
	KT_EXPECT(stops >= 2);
	kt_diag(kt, "%s: victim %s stopped at each of its %d atomic steps; others completed",
		f->name, victim_is_producer ? "producer" : "consumer", stops);
}

/* The word queue (lf_fifo_mpmc_word.h: 8-byte elements, no callbacks) behind the same
 * interface: its own object (the union is the other flavours'); `q` is ignored. */
static struct lf_fifo_mpmc_word wq;
static int wq_init(union anyq *q_, void *st, size_t bytes, uint64_t cap, size_t esize,
		   const struct lf_fifo_callbacks *cb)
{
	(void)q_;
	if (esize != 8 || cb)
		return KSYNC_EINVAL;
	return lf_fifo_init_mpmc_word(&wq, st, bytes, cap);
}
static int wq_enq(union anyq *q_, const void *e)
{
	uint64_t v;

	(void)q_;
	memcpy(&v, e, 8);
	return lf_fifo_enqueue_mpmc_word(&wq, v);
}
static int wq_deq(union anyq *q_, void *o)
{
	uint64_t v;
	int r;

	(void)q_;
	r = lf_fifo_dequeue_mpmc_word(&wq, &v);
	if (r == KSYNC_OK)
		memcpy(o, &v, 8);
	return r;
}
static const struct flavour wq_flavour = { "mpmc_word", NULL, wq_init, wq_enq, wq_deq,
					   NULL, NULL, 0, 0, 0 };

KTEST(lf_fifo_preempt_producer_spsc) { liveness_case(kt, &tlf_flavours[0], 1); }
KTEST(lf_fifo_preempt_producer_spmc) { liveness_case(kt, &tlf_flavours[1], 1); }
KTEST(lf_fifo_preempt_producer_mpsc) { liveness_case(kt, &tlf_flavours[2], 1); }
KTEST(lf_fifo_preempt_producer_mpmc) { liveness_case(kt, &tlf_flavours[3], 1); }
KTEST(lf_fifo_preempt_consumer_spsc) { liveness_case(kt, &tlf_flavours[0], 0); }
KTEST(lf_fifo_preempt_consumer_spmc) { liveness_case(kt, &tlf_flavours[1], 0); }
KTEST(lf_fifo_preempt_consumer_mpsc) { liveness_case(kt, &tlf_flavours[2], 0); }
KTEST(lf_fifo_preempt_consumer_mpmc) { liveness_case(kt, &tlf_flavours[3], 0); }
KTEST(lf_fifo_preempt_producer_mpmc_word) { liveness_case(kt, &wq_flavour, 1); }
KTEST(lf_fifo_preempt_consumer_mpmc_word) { liveness_case(kt, &wq_flavour, 0); }

/* ---- callbacks under interleaving --------------------------------------------------------- */

static _Thread_local int tl_role;	/* 1 victim, 2 other, 0 main (not logged) */
static char vlog[16], olog[16];		/* each written by one thread only */
static int nvlog, nolog;

static void log_ev(char c)
{
	if (tl_role == 1 && nvlog < 15)
		vlog[nvlog++] = c;
	else if (tl_role == 2 && nolog < 15)
		olog[nolog++] = c;
}
static void ev_nonempty(void *a) { (void)a; log_ev('N'); }
static void ev_empty(void *a) { (void)a; log_ev('E'); }
static void ev_full(void *a) { (void)a; log_ev('F'); }
static void ev_nonfull(void *a) { (void)a; log_ev('R'); }
static const struct lf_fifo_callbacks cbs = { ev_nonempty, ev_empty, ev_full, ev_nonfull,
					      NULL };

struct other1 {
	int is_enq;
	uint64_t in, out;
	int result;
};

static void *other1_main(void *arg)
{
	struct other1 *o = arg;

	tl_role = 2;
	o->result = o->is_enq ? fl->enq(&q, &o->in) : fl->deq(&q, &o->out);
	sem_post(&other_sem);
	return NULL;
}

static void *victim_role_main(void *arg)
{
	tl_role = 1;
	return victim_main(arg);
}

static int count_of(const char *log, int n, char c)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += log[i] == c;
	return k;
}

/* Scenarios (capacity 2; V = stopped victim, O = the other operation):
 *   A  empty;  V enqueues, O dequeues.  V fires exactly N.  O fires exactly E if it took
 *      V's element, else nothing.
 *   B  full;   V dequeues, O enqueues.  V fires exactly R.  O fires exactly F if its
 *      enqueue succeeded, else nothing.
 *   C  one element; V enqueues, O dequeues.  Soundness: V fires at most one of F (V's
 *      enqueue came first: 1->2) or N (O's dequeue came first: 0->1); O at most one of R
 *      (2->1) or E (1->0); and the two agree on the order ({F,E} or {N,R} impossible).
 *      Indirect flavours (mpsc, mpmc) count cells for F/R and published elements for
 *      N/E, which change at different steps (an enqueue claims a cell, later publishes;
 *      a dequeue takes an element, later returns its cell), so the two orders can
 *      differ: V fires at most one F and one N, O at most one E and one R.
 *   D  one element; V dequeues, O enqueues: the mirror of C.
 *   E  empty, two producers (mp flavours): exactly one N and exactly one F in total.
 *   F  full, two consumers (mc flavours): exactly one R and exactly one E in total. */
enum scen { SA, SB, SC, SD, SE, SF };

static void check_scenario(struct ktest_ctx *kt, enum scen s, const struct vjob *vj,
			   const struct other1 *o)
{
	int vN = count_of(vlog, nvlog, 'N'), vE = count_of(vlog, nvlog, 'E');
	int vF = count_of(vlog, nvlog, 'F'), vR = count_of(vlog, nvlog, 'R');
	int oN = count_of(olog, nolog, 'N'), oE = count_of(olog, nolog, 'E');
	int oF = count_of(olog, nolog, 'F'), oR = count_of(olog, nolog, 'R');

	switch (s) {
	case SA:
		KT_EXPECT_EQ(vj->result, KSYNC_OK);
		KT_EXPECT(nvlog == 1 && vN == 1);
		if (o->result == KSYNC_OK) {
			KT_EXPECT_EQ(o->out, vj->in);
			KT_EXPECT(nolog == 1 && oE == 1);
		} else {
			KT_EXPECT_EQ(o->result, KSYNC_EEMPTY);
			KT_EXPECT_EQ(nolog, 0);
		}
		break;
	case SB:
		KT_EXPECT_EQ(vj->result, KSYNC_OK);
		KT_EXPECT(nvlog == 1 && vR == 1);
		if (o->result == KSYNC_OK) {
			KT_EXPECT(nolog == 1 && oF == 1);
		} else {
			KT_EXPECT_EQ(o->result, KSYNC_EFULL);
			KT_EXPECT_EQ(nolog, 0);
		}
		break;
	case SC:
		KT_EXPECT(vj->result == KSYNC_OK && o->result == KSYNC_OK);
		KT_EXPECT(vE + vR == 0 && oN + oF == 0);
		KT_EXPECT(vN <= 1 && vF <= 1 && oE <= 1 && oR <= 1);
		if (!fl->indirect)
			KT_EXPECT(nvlog <= 1 && nolog <= 1 && !(vF && oE) && !(vN && oR));
		break;
	case SD:
		KT_EXPECT(vj->result == KSYNC_OK && o->result == KSYNC_OK);
		KT_EXPECT(vN + vF == 0 && oE + oR == 0);
		KT_EXPECT(vE <= 1 && vR <= 1 && oN <= 1 && oF <= 1);
		if (!fl->indirect)
			KT_EXPECT(nvlog <= 1 && nolog <= 1 && !(vE && oF) && !(vR && oN));
		break;
	case SE:
		KT_EXPECT(vj->result == KSYNC_OK && o->result == KSYNC_OK);
		KT_EXPECT_EQ(vN + oN, 1);
		KT_EXPECT_EQ(vF + oF, 1);
		KT_EXPECT_EQ(nvlog + nolog, 2);
		break;
	case SF:
		KT_EXPECT(vj->result == KSYNC_OK && o->result == KSYNC_OK);
		KT_EXPECT_EQ(vR + oR, 1);
		KT_EXPECT_EQ(vE + oE, 1);
		KT_EXPECT_EQ(nvlog + nolog, 2);
		break;
	}
}

static void callbacks_case(struct ktest_ctx *kt, const struct flavour *f, enum scen s)
{
	static const int prefill[] = { 0, 2, 1, 1, 0, 2 };
	static const int v_enq[] = { 1, 0, 1, 0, 1, 0 };
	static const int o_enq[] = { 0, 1, 0, 1, 1, 0 };
	int k, stops = 0, failures0 = kt->failures;

	fl = f;
	for (k = 0; k < MAX_STEPS; k++) {
		struct vjob vj = { .is_enq = v_enq[s], .in = val(1, 0) };
		struct other1 o = { .is_enq = o_enq[s], .in = val(2, 0) };
		pthread_t vt;
		uint64_t v;

		KT_ASSERT_EQ(f->init(&q, store, sizeof(store), 2, 8, &cbs), KSYNC_OK);
		for (int i = 0; i < prefill[s]; i++) {
			v = val(0, (unsigned)i);
			KT_ASSERT_EQ(f->enq(&q, &v), KSYNC_OK);
		}
		nvlog = nolog = 0;
		/* run_stopped with role-setting thread bodies */
		sems_init();
		steps = 0;
		stop_at = k;
		victim_stopped = 0;
		KT_ASSERT_EQ(pthread_create(&vt, NULL, victim_role_main, &vj), 0);
		if (!wait_deadline(&ev_sem))
			die_stuck("the victim (before its stop)");
		if (!victim_stopped) {
			pthread_join(vt, NULL);
			break;
		}
		stops++;
		run_other(other1_main, &o);
		sem_post(&resume_sem);
		if (!wait_deadline(&ev_sem))
			die_stuck("the resumed victim");
		pthread_join(vt, NULL);
		check_scenario(kt, s, &vj, &o);
		if (kt->failures != failures0) {
			kt_diag(kt, "%s scenario %c: victim stopped before atomic step %d; "
				"victim events \"%.*s\", other events \"%.*s\"", f->name,
				"ABCDEF"[s], k, nvlog, vlog, nolog, olog);
			return;
		}
	}
	KT_EXPECT(k < MAX_STEPS);
	KT_EXPECT(stops >= 2);
}

static void callbacks_all(struct ktest_ctx *kt, const struct flavour *f)
{
	callbacks_case(kt, f, SA);
	callbacks_case(kt, f, SB);
	callbacks_case(kt, f, SC);
	callbacks_case(kt, f, SD);
	if (f->max_producers != 1)
		callbacks_case(kt, f, SE);
	if (f->max_consumers != 1)
		callbacks_case(kt, f, SF);
}

KTEST(lf_fifo_callbacks_interleaved_spsc) { callbacks_all(kt, &tlf_flavours[0]); }
KTEST(lf_fifo_callbacks_interleaved_spmc) { callbacks_all(kt, &tlf_flavours[1]); }
KTEST(lf_fifo_callbacks_interleaved_mpsc) { callbacks_all(kt, &tlf_flavours[2]); }
KTEST(lf_fifo_callbacks_interleaved_mpmc) { callbacks_all(kt, &tlf_flavours[3]); }
