/*
 * monitor.c - monitor locks and Mesa condition variables (monitor.h has the contract).
 * Hartman & Ousterhout, Sprite, section 2 (monitor locks, broadcast release, condition
 * variables; "Sprite does not require any special hardware support ... other than an
 * atomic test-and-set operation", section 3), section 4 (a woken waiter that fails to get
 * the lock is a miss), Figure 9 (what a *miss* does: lock sched_Mutex, put the process on
 * the monitor's wait queue, switch, release sched_Mutex); Lampson & Redell 1980 (Mesa).
 *
 * The protocol (checked by spin/monitor.pml, tests/test_spin_monitor.py):
 *   lock    test-and-set of the monitor's lock word (MON_W_LOCKED). A hit ends there: it
 *           never touches the interlock. A miss takes the interlock, sets the waiters
 *           mark (MON_W_WAITERS), tests-and-sets again (the holder may have released
 *           since the first attempt) and only if that fails too queues itself, releases
 *           the interlock and sleeps. Woken: under hand-off it is the owner; under
 *           broadcast it starts over (a failed test-and-set is another miss).
 *   unlock  clear the lock word; only when the waiters mark was set, take the interlock
 *           and wake: broadcast (Sprite's) wakes every waiter and clears the mark;
 *           hand-off (MON_HANDOFF) never frees the word while anyone waits - it hands the
 *           lock to the first waiter, FIFO, under the interlock.
 *
 * Why no wakeup is lost. The mark, the test-and-set and the release are read-modify-writes
 * of the same word, so they have one total (modification) order, whatever the memory
 * orders say. A miss sets the mark, then tests-and-sets, holding the interlock from
 * before the mark until it is queued. Either the releasing RMW comes after the mark in
 * that order - then it sees the mark and takes the interlock, which it can only get after
 * the miss released it, i.e. with the miss on the queue (the interlock's acquire/release
 * orders the queue) - or it comes before the mark, and then the miss's test-and-set,
 * later in the same order, finds the word free (or a newer owner, whose own release comes
 * after the mark and sees it). The mark is cleared only under the interlock with the
 * queue empty (the waking release detaches the queue; a miss that got the lock on its
 * retry finds nobody queued), so a queued waiter always has it set. A wakeup that comes
 * before the waiter's sleep sets the thread's condition flag, which the sleep consumes
 * (sched_sleep/sched_wakeup, Hohmuth & Haertig Fig. 3).
 *
 * Statistics of a monitor's class: hits (acquisitions) and migrations, counted by the owner
 * in the monitor itself (struct lockstat_inst, lockstat.h: an uncontended lock and unlock
 * in counts or contested mode touch no shard and mask nothing), misses (each failed fast-path
 * test-and-set: the first attempt, and each wakeup that found the monitor taken again;
 * a retry under the interlock belongs to the same miss), sleeps, wakeups (waiters woken
 * by releases), the longest wait queue, wait time (first attempt -> acquisition) and hold
 * time in timing mode, and the sites of the misses. A condition variable's class: sleeps
 * (waits), wakeups (signalled waiters), futile wakeups (CV_WAIT_UNTIL), the longest
 * queue. An operation gathers its figures in a struct mon_ev and commits them to this
 * CPU's shard with interrupts masked, after the interlock is released (under Figure 9's
 * configuration the interlock is sched_Mutex, whose hold time must not grow by the
 * statistics).
 *
 * MON_HELPING (monitor.h; Hohmuth & Haertig 2001, sections 3.3 and 4.2, Figure 2): the
 * lock is m->hl, a helping lock; lock and unlock are hlock_lock / hlock_unlock plus the
 * owner fields, and a condition wait queues under the interlock, releases the helping lock
 * and only then sleeps (a signaller must hold the monitor, so it comes after the release
 * and finds the waiter queued; its wakeup before the sleep sets the condition flag, which
 * the sleep consumes). The word, the miss path and the instance counters are unused; in
 * timing mode the hold is timed as every monitor's (t_acq, the owner's field, stamped
 * after hlock_lock and read before hlock_unlock, committed after it).
 */
#include "monitor.h"
#include <ksync/errors.h>

LOCK_CLASS(mon_interlock_class, "mon_interlock", LOCK_MASTER, LOCK_DATA);

/* The test hook (monitor.h): set by tests between runs; release/acquire so the hook's
 * own data are visible to the thread that calls it. */
static void (*test_hook)(enum mon_point at, struct monitor *m);

void mon_set_test_hook(void (*fn)(enum mon_point at, struct monitor *m))
{
	__atomic_store_n(&test_hook, fn, __ATOMIC_RELEASE);
}

/* ---- the lock word ------------------------------------------------------------------------ */

/* Test-and-set (x86: lock bts). Acquire: the previous owner's section, published by the
 * release RMW (or the hand-off) that made the word free, happens-before ours. */
static inline bool tas(struct monitor *m)
{
	return !(__atomic_fetch_or(&m->word, MON_W_LOCKED, __ATOMIC_ACQUIRE) & MON_W_LOCKED);
}

/* ---- the interlock ------------------------------------------------------------------------ */

/* sched_Mutex is taken with the CPU's own mask, as the scheduler takes it (its wakeup runs
 * from handlers too); a monitor's own interlock is taken through the interrupt scheme
 * (no handler touches a monitor). */
static irqkey_t ilock(struct monitor *m, const char *site)
{
	if (m->flags & MON_QSCHED)
		return mlock_lock_irqsave_at(m->ilock, site);
	mlock_lock_at(m->ilock, site);
	return 0;
}

static void iunlock(struct monitor *m, irqkey_t k, const char *site)
{
	if (m->flags & MON_QSCHED)
		mlock_unlock_irqrestore_at(m->ilock, k, site);
	else
		mlock_unlock_at(m->ilock, site);
}

static const char *tname(const struct thread *t) { return t ? thread_name(t) : "(none)"; }

static struct thread *owner_of(const struct monitor *m)
{
	return __atomic_load_n(&m->owner, __ATOMIC_RELAXED);	/* diagnostics and checks */
}

__attribute__((noreturn)) static void recursion(const struct monitor *m, struct thread *self,
						 const char *site)
{
	panic("mon_lock: recursion: thread '%s' asks at %s for monitor of class '%s' (init %s) "
	      "that it holds since %s", tname(self), site, m->cls->name, m->init_site,
	      m->site ? m->site : "?");
}

static struct thread *self_or_panic(const char *what, const char *site, const struct lock_class *c)
{
	struct thread *t = thread_self();
	if (!t || !sched_running())
		panic("%s at %s: class '%s' needs a thread (sched_start first)", what, site, c->name);
	return t;
}

/* ---- queues (the interlock held) -------------------------------------------------------- */

static void enqueue(struct mon_waiter **head, struct mon_waiter **tail, unsigned *qlen,
		    struct mon_waiter *w)
{
	w->next = NULL;
	if (*tail)
		(*tail)->next = w;
	else
		*head = w;
	*tail = w;
	__atomic_store_n(qlen, *qlen + 1, __ATOMIC_RELAXED);	/* relaxed: read by diagnostics */
}

static struct mon_waiter *dequeue(struct mon_waiter **head, struct mon_waiter **tail, unsigned *qlen)
{
	struct mon_waiter *w = *head;
	if (w) {
		*head = w->next;
		if (!*head)
			*tail = NULL;
		__atomic_store_n(qlen, *qlen - 1, __ATOMIC_RELAXED);
		w->next = NULL;
	}
	return w;
}

/* The whole queue, detached (the interlock held). */
static struct mon_waiter *detach_all(struct mon_waiter **head, struct mon_waiter **tail,
				     unsigned *qlen, unsigned *n)
{
	struct mon_waiter *w = *head;
	*n = *qlen;
	*head = *tail = NULL;
	__atomic_store_n(qlen, 0, __ATOMIC_RELAXED);
	return w;
}

/* Wake a detached list (the interlock released). A waiter's record lives on its stack and
 * may vanish once it is woken: read next and t first. */
static void wake_list(struct mon_waiter *w, uint64_t cond)
{
	while (w) {
		struct mon_waiter *next = w->next;
		struct thread *t = w->t;
		int rc = sched_wakeup(t, cond);
		if (rc != KSYNC_OK)
			panic("monitor: waking waiter '%s' failed (%s)", tname(t), ksync_strerror(rc));
		w = next;
	}
}

/* ---- monitors ----------------------------------------------------------------------------- */

int mon_init_at(struct monitor *m, const struct lock_class *c, unsigned flags, const char *site)
{
	if (!m || !c || (flags & ~(MON_HANDOFF | MON_QSCHED | MON_HELPING)))
		return KSYNC_EINVAL;
	if ((flags & MON_HELPING) && (flags & (MON_HANDOFF | MON_QSCHED)))
		return KSYNC_EINVAL;	/* the helping lock hands over itself; no sched_Mutex */
	memset(m, 0, sizeof *m);
	struct mlock *sm = (flags & MON_QSCHED) ? sched_master_lock() : NULL;
	if (!sm)
		flags &= ~MON_QSCHED;
	int rc = mlock_init_at(&m->own, &mon_interlock_class, MLOCK_TICKET, site);
	if (rc)
		return rc;
	m->ilock = sm ? sm : &m->own;
	m->flags = flags;
	m->cls = c;
	m->init_site = site;
	/* the helping lock counts into the monitor's class (hlock.c's shard statistics) */
	hlock_init(&m->hl, c, NULL);
	lockstat_inst_add(c, &m->st);
	return KSYNC_OK;
}

void mon_destroy_at(struct monitor *m, const char *site)
{
	irqkey_t k = ilock(m, site);
	unsigned w = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
	unsigned q = m->qlen;
	iunlock(m, k, site);
	if ((m->flags & MON_HELPING) && hlock_owner(&m->hl))
		w |= MON_W_LOCKED;
	if ((w & MON_W_LOCKED) || q)
		panic("mon_destroy at %s: monitor of class '%s' (init %s) is held by '%s' (since %s) "
		      "with %u waiters", site, m->cls->name, m->init_site, tname(owner_of(m)),
		      m->site ? m->site : "-", q);
	mlock_destroy(&m->own);
	lockstat_inst_del(&m->st);	/* its hits and migrations fold into the class */
}

/* ---- statistics: gathered during the operation, committed at its end -------------------- */

struct mon_ev {
	uint64_t misses, sleeps, wakeups, max_queue, wait, hold;
	const char *site;
};

/* The rarer fields of an event (this CPU's shard open). */
static void commit_rest(struct lockstat_shard *s, const struct mon_ev *e)
{
	LOCKSTAT_ADD(s->misses, e->misses);
	LOCKSTAT_ADD(s->sleeps, e->sleeps);
	LOCKSTAT_ADD(s->wakeups, e->wakeups);
	LOCKSTAT_MAX(s->max_queue, e->max_queue);
	if (e->wait)
		lockstat_time_add(&s->wait, e->wait);
	if (e->hold)
		lockstat_time_add(&s->hold, e->hold);
	for (uint64_t i = 0; i < e->misses; i++)	/* one site entry per miss */
		lockstat_site_add(s, e->site, i ? 0 : e->wait);
}

static bool ev_any(const struct mon_ev *e)
{
	return (e->misses | e->sleeps | e->wakeups | e->max_queue | e->wait | e->hold) != 0;
}

/* Interrupts masked (this CPU's shard). */
static void commit(const struct lock_class *c, const struct mon_ev *e)
{
	if (!ev_any(e))
		return;
	struct lockstat_shard *s = lockstat_open(c);
	commit_rest(s, e);
	lockstat_close(s);
}

/* Commit up to two events to this CPU's shards (no interlock held). Nothing to commit
 * (an uncontended lock or unlock in counts or contested mode: its hit is in the monitor)
 * masks nothing. */
static void commit2(const struct lock_class *c1, const struct mon_ev *e1,
		    const struct lock_class *c2, const struct mon_ev *e2)
{
	if (!lockstat_on())
		return;
	if (!(e1 && ev_any(e1)) && !(e2 && ev_any(e2)))
		return;
	crit_enter();		/* the shard is this CPU's: no preemption, no migration */
	if (e1)
		commit(c1, e1);
	if (e2)
		commit(c2, e2);
	crit_leave();
}

/* We own the word: set the owner and the owner's fields, and the acquisition's part of
 * the event. owner, site, t_acq, st's counters, last_cpu are the owner's (the lock word
 * protects them); owner is stored relaxed: other threads read it for messages and checks
 * only. t0: the wait's start if we missed (a mode that times waits), else 0. */
static void acquired(struct monitor *m, struct thread *self, const char *site, unsigned mode,
		     uint64_t t0, struct mon_ev *e)
{
	__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
	m->site = site;
	unsigned me = arch_cpu_id() + 1;
	if (!mode) {
		m->t_acq = 0;
		m->last_cpu = me;
		return;
	}
	bool migrated = false;
	if (lockstat_counts_migrations(mode)) {
		migrated = m->last_cpu && m->last_cpu != me;
		m->last_cpu = me;
	}
	lockstat_inst_hit(&m->st, migrated);
	/* timing: one stamp - the hold's start, and the wait's end if we missed */
	uint64_t now = mode == LOCKSTAT_TIMING || (e->misses && t0) ? arch_cycles() : 0;
	m->t_acq = mode == LOCKSTAT_TIMING ? now : 0;
	if (e->misses && t0)
		e->wait = now - t0;
}

/* The miss path (Figure 9): returns once the word is ours - by our own test-and-set, or
 * handed to us (MON_HANDOFF). */
static void lock_missed(struct monitor *m, struct thread *self, const char *site,
			unsigned mode, uint64_t *t0, struct mon_ev *e)
{
	e->site = site;
	/* the wait's start: the failed test-and-set was a few instructions ago */
	*t0 = lockstat_times_waits(mode) ? arch_cycles() : 0;
	for (;;) {
		/* owner == self only if we stored it: a recursive acquire */
		if (owner_of(m) == self)
			recursion(m, self, site);
		void (*hook)(enum mon_point, struct monitor *) =
			__atomic_load_n(&test_hook, __ATOMIC_ACQUIRE);
		if (__builtin_expect(hook != NULL, 0))
			hook(MON_AT_MISSED, m);
		irqkey_t k = ilock(m, site);
		if (mode) {		/* a miss: the first attempt, or a wakeup beaten to it */
			e->misses++;
			m->misses++;
		}
		/* The mark, then the retry: two RMWs of the word in this order (the top
		 * comment's argument; relaxed: the word's modification order is all it needs,
		 * the queue is ordered by the interlock). */
		__atomic_fetch_or(&m->word, MON_W_WAITERS, __ATOMIC_RELAXED);
		if (tas(m)) {
			/* released since our first attempt. Nobody queued: the mark is ours to
			 * clear (every marker holds the interlock until it is queued). */
			if (!m->head)
				__atomic_fetch_and(&m->word, ~MON_W_WAITERS, __ATOMIC_RELAXED);
			iunlock(m, k, site);
			return;
		}
		struct mon_waiter w = { NULL, self, false };
		enqueue(&m->head, &m->tail, &m->qlen, &w);
		if (mode && m->qlen > e->max_queue)
			e->max_queue = m->qlen;
		iunlock(m, k, site);
		sched_sleep(SCHED_COND_MON);
		e->sleeps++;
		/* acquire: pairs with the hand-off's release store - the previous owner's
		 * section happens-before ours */
		if (__atomic_load_n(&w.granted, __ATOMIC_ACQUIRE))
			return;
		if (tas(m))	/* broadcast: woken with the others; the winner is a hit */
			return;
		/* beaten to it: Sprite's second kind of miss */
	}
}

void mon_lock_at(struct monitor *m, const char *site)
{
	struct thread *self = self_or_panic("mon_lock", site, m->cls);
	mlock_assert_none("mon_lock", site);
	if (m->flags & MON_HELPING) {
		if (owner_of(m) == self)
			recursion(m, self, site);
		/* helps the owner until the lock is handed over; never invalidated (only
		 * hlock_invalidate does that, and monitors do not call it) */
		int rc = hlock_lock(&m->hl);
		if (rc != KSYNC_OK)
			panic("mon_lock at %s: helping lock of monitor of class '%s' (init %s): %s",
			      site, m->cls->name, m->init_site, ksync_strerror(rc));
		/* the owner's fields, protected by the helping lock */
		__atomic_store_n(&m->owner, self, __ATOMIC_RELAXED);
		m->site = site;
		/* timing mode: the hold's start (the helping lock counts the hit and the miss) */
		m->t_acq = __builtin_expect(lockstat_on() == LOCKSTAT_TIMING, 0) ? arch_cycles() : 0;
		return;
	}
	unsigned mode = lockstat_on();
	uint64_t t0 = 0;
	struct mon_ev e = { 0 };
	if (__builtin_expect(!tas(m), 0))
		lock_missed(m, self, site, mode, &t0, &e);
	acquired(m, self, site, mode, t0, &e);
	if (__builtin_expect(e.misses != 0, 0))
		commit2(m->cls, &e, NULL, NULL);
}

/* The owner's part of a release (before the word changes hands): the hold time. */
static void releasing(struct monitor *m, struct mon_ev *e)
{
	__atomic_store_n(&m->owner, NULL, __ATOMIC_RELAXED);
	m->site = NULL;
	if (m->t_acq)
		e->hold = arch_cycles() - m->t_acq;
	m->t_acq = 0;
}

/* Pass the word on, the interlock held and the owner's fields released: hand it to the
 * first waiter (MON_HANDOFF), or free it and take every waiter (broadcast, or nobody
 * queued). Returns the waiters to wake after the interlock is released; *n how many. */
static struct mon_waiter *pass_ilocked(struct monitor *m, unsigned *n)
{
	struct mon_waiter *wake;
	if ((m->flags & MON_HANDOFF) && m->head) {
		wake = dequeue(&m->head, &m->tail, &m->qlen);
		*n = 1;
		if (!m->head)	/* the interlock held: no marker in flight */
			__atomic_fetch_and(&m->word, ~MON_W_WAITERS, __ATOMIC_RELAXED);
		/* the word stays locked: ownership passes without a release (no barging) */
		__atomic_store_n(&m->owner, wake->t, __ATOMIC_RELAXED);
		/* release: our section happens-before the waiter's (its acquire load) */
		__atomic_store_n(&wake->granted, true, __ATOMIC_RELEASE);
	} else {
		wake = detach_all(&m->head, &m->tail, &m->qlen, n);
		/* release: our section happens-before the next test-and-set's acquire. The
		 * mark goes with it: the queue is empty and the interlock held. */
		__atomic_fetch_and(&m->word, ~(MON_W_LOCKED | MON_W_WAITERS), __ATOMIC_RELEASE);
	}
	return wake;
}

/* MON_HELPING: the owner's fields cleared, then the helping lock released (to the top
 * helper, if any; release order: our section before the next owner's); in timing mode
 * the hold (its stamp is the owner's, read before the release) committed after it. */
static void helping_release(struct monitor *m)
{
	struct mon_ev e = { 0 };
	if (m->t_acq)
		e.hold = arch_cycles() - m->t_acq;
	m->t_acq = 0;
	__atomic_store_n(&m->owner, NULL, __ATOMIC_RELAXED);
	m->site = NULL;
	hlock_unlock(&m->hl);
	if (e.hold)
		commit2(m->cls, &e, NULL, NULL);
}

__attribute__((noreturn)) static void not_owner(const struct monitor *m, const char *what,
						const char *site)
{
	panic("%s at %s: thread '%s' does not hold monitor of class '%s' (init %s); owner: '%s'%s%s",
	      what, site, tname(thread_self()), m->cls->name, m->init_site, tname(owner_of(m)),
	      m->site ? ", acquired at " : "", m->site ? m->site : "");
}

void mon_unlock_at(struct monitor *m, const char *site)
{
	struct thread *self = thread_self();
	if (!self || owner_of(m) != self)
		not_owner(m, "mon_unlock", site);
	if (m->flags & MON_HELPING) {
		helping_release(m);
		return;
	}
	struct mon_ev e = { 0 };
	struct mon_waiter *wake = NULL;
	releasing(m, &e);
	unsigned w = MON_W_LOCKED;
	/* The fast path: locked without the waiters mark -> free. Release: our section
	 * happens-before the next test-and-set's acquire. A failed CAS: the mark is set. */
	if (__builtin_expect(!__atomic_compare_exchange_n(&m->word, &w, 0, false, __ATOMIC_RELEASE,
							   __ATOMIC_RELAXED), 0)) {
		unsigned n = 0;
		irqkey_t k;
		if (m->flags & MON_HANDOFF) {
			/* the word stays locked until, under the interlock, we know who gets it */
			k = ilock(m, site);
			wake = pass_ilocked(m, &n);
		} else {
			/* broadcast (Sprite's): free the word first, then wake whoever marked it.
			 * Release as above; the RMW returns the mark as it is now - clear if a
			 * previous owner's waking release, still under way, took the queue since
			 * our CAS (then it wakes them, not us). */
			unsigned old = __atomic_fetch_and(&m->word, ~MON_W_LOCKED, __ATOMIC_RELEASE);
			if (!(old & MON_W_WAITERS))
				goto done;
			k = ilock(m, site);
			wake = detach_all(&m->head, &m->tail, &m->qlen, &n);
			/* the interlock held, the queue empty: no queued waiter needs the mark */
			__atomic_fetch_and(&m->word, ~MON_W_WAITERS, __ATOMIC_RELAXED);
		}
		iunlock(m, k, site);
		e.wakeups = n;
	}
done:
	commit2(m->cls, &e, NULL, NULL);
	wake_list(wake, SCHED_COND_MON);
}

/* ---- condition variables ------------------------------------------------------------------ */

int cv_init_at(struct condvar *cv, const struct lock_class *c, struct monitor *m, const char *site)
{
	if (!cv || !c || !m)
		return KSYNC_EINVAL;
	memset(cv, 0, sizeof *cv);
	cv->mon = m;
	cv->cls = c;
	cv->init_site = site;
	lockstat_note_created(c);
	return KSYNC_OK;
}

void cv_destroy_at(struct condvar *cv, const char *site)
{
	irqkey_t k = ilock(cv->mon, site);
	unsigned q = cv->qlen;
	iunlock(cv->mon, k, site);
	if (q)
		panic("cv_destroy at %s: condition variable of class '%s' (init %s) has %u waiters",
		      site, cv->cls->name, cv->init_site, q);
	lockstat_note_destroyed(cv->cls);
}

/* Queue on cv and release the monitor in one interlock section: a signaller holds the
 * monitor, so it comes after our release and finds us queued. */
void cv_wait_at(struct condvar *cv, const char *site)
{
	struct monitor *m = cv->mon;
	struct thread *self = self_or_panic("cv_wait", site, cv->cls);
	mlock_assert_none("cv_wait", site);
	if (owner_of(m) != self)
		not_owner(m, "cv_wait (waiting on a condition variable without its monitor)", site);
	irqkey_t k = ilock(m, site);
	struct mon_waiter w = { NULL, self, false };
	enqueue(&cv->head, &cv->tail, &cv->qlen, &w);
	cv->waits++;
	struct mon_ev ce = { .sleeps = 1, .max_queue = cv->qlen }, me = { 0 };
	if (m->flags & MON_HELPING) {
		/* queued; now release the helping lock, then sleep (Figure 2) */
		iunlock(m, k, site);
		helping_release(m);
		commit2(cv->cls, &ce, NULL, NULL);
		sched_sleep(SCHED_COND_CV);
		mon_lock_at(m, site);
		return;
	}
	releasing(m, &me);
	unsigned n;
	struct mon_waiter *wake = pass_ilocked(m, &n);
	me.wakeups = n;
	iunlock(m, k, site);
	commit2(cv->cls, &ce, m->cls, &me);
	wake_list(wake, SCHED_COND_MON);
	sched_sleep(SCHED_COND_CV);
	mon_lock_at(m, site);
}

static unsigned cv_wake(struct condvar *cv, bool all, const char *site)
{
	struct monitor *m = cv->mon;
	if (!thread_self() || owner_of(m) != thread_self())
		not_owner(m, all ? "cv_broadcast" : "cv_signal", site);
	irqkey_t k = ilock(m, site);
	struct mon_waiter *wake;
	unsigned n = 0;
	if (all) {
		wake = detach_all(&cv->head, &cv->tail, &cv->qlen, &n);
	} else {
		wake = dequeue(&cv->head, &cv->tail, &cv->qlen);
		n = wake ? 1 : 0;
	}
	cv->wakeups += n;
	iunlock(m, k, site);
	struct mon_ev e = { .wakeups = n };
	if (n)
		commit2(cv->cls, &e, NULL, NULL);
	wake_list(wake, SCHED_COND_CV);
	return n;
}

unsigned cv_signal_at(struct condvar *cv, const char *site) { return cv_wake(cv, false, site); }
unsigned cv_broadcast_at(struct condvar *cv, const char *site) { return cv_wake(cv, true, site); }
