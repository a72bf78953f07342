/*
 * monitor.c - monitor locks and Mesa condition variables (issue 11; monitor.h has the
 * contract). Hartman & Ousterhout, Sprite, section 2 (monitor locks, broadcast release,
 * condition variables), section 4 (a woken waiter that fails to get the lock is a miss),
 * Figure 9 (the wait queue under sched_Mutex); Lampson & Redell 1980 (Mesa monitors).
 *
 * Statistics of a monitor's class: hits (acquisitions), misses (each failed attempt: the
 * first one, and each wakeup that found the monitor taken again), sleeps, wakeups (waiters
 * woken by releases), the longest wait queue, wait time (first attempt -> acquisition)
 * and hold time in timing mode, and the sites of the misses. A condition variable's class:
 * sleeps (waits), wakeups (signalled waiters), futile wakeups (CV_WAIT_UNTIL), the longest
 * queue. All are written under the interlock, so its CPU's shard is updated with
 * interrupts masked.
 */
#include "monitor.h"
#include <ksync/errors.h>

LOCK_CLASS(mon_interlock_class, "mon_interlock", LOCK_MASTER, LOCK_DATA);

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
	if (!m || !c || (flags & ~(MON_HANDOFF | MON_QSCHED)))
		return KSYNC_EINVAL;
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
	lockstat_note_created(c);
	return KSYNC_OK;
}

void mon_destroy_at(struct monitor *m, const char *site)
{
	irqkey_t k = ilock(m, site);
	struct thread *o = m->owner;
	unsigned q = m->qlen;
	iunlock(m, k, site);
	if (o || q)
		panic("mon_destroy at %s: monitor of class '%s' (init %s) is held by '%s' (since %s) "
		      "with %u waiters", site, m->cls->name, m->init_site, tname(o),
		      m->site ? m->site : "-", q);
	mlock_destroy(&m->own);
	lockstat_note_destroyed(m->cls);
}

/* ---- statistics: gathered under the interlock, committed after it ---------------------- */

/* One operation's statistics. Gathered under the interlock (plain stores), committed to
 * this CPU's shard after the interlock is released (interrupts masked for the commit
 * only): under Figure 9's configuration the interlock is sched_Mutex, whose hold time
 * must not grow by the statistics' own cost. */
struct mon_ev {
	uint64_t hits, misses, sleeps, wakeups, migrations, max_queue, wait, hold;
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

/* Interrupts masked (the caller's interlock mask, after the interlock's release). */
static void commit(const struct lock_class *c, const struct mon_ev *e)
{
	if (!(e->hits | e->migrations | e->misses | e->sleeps | e->wakeups | e->max_queue |
	      e->wait | e->hold))
		return;		/* e.g. an unlock with nobody waiting, counts mode */
	struct lockstat_shard *s = lockstat_open(c);
	LOCKSTAT_ADD(s->hits, e->hits);
	if (e->migrations)
		LOCKSTAT_ADD(s->migrations, e->migrations);
	if (__builtin_expect((e->misses | e->sleeps | e->wakeups | e->max_queue | e->wait |
			      e->hold) != 0, 0))
		commit_rest(s, e);
	lockstat_close(s);
}

/* Release the interlock, commit up to two events while the mask is still on, then lift
 * the mask (mlock_unlock's two halves with the statistics between them). */
static void iunlock_commit(struct monitor *m, irqkey_t k, const char *site,
			   const struct lock_class *c1, const struct mon_ev *e1,
			   const struct lock_class *c2, const struct mon_ev *e2)
{
	mlock_release_(m->ilock, arch_cpu_id() + 1, site);
	if (lockstat_on()) {
		if (e1)
			commit(c1, e1);
		if (e2)
			commit(c2, e2);
	}
	if (m->flags & MON_QSCHED)
		arch_irq_restore(k);
	else
		crit_leave();
}

/* The owner is set (the interlock held): an acquisition's part of the event. */
static void acquired(struct monitor *m, const char *site, unsigned mode, uint64_t t0,
		     struct mon_ev *e)
{
	m->site = site;
	unsigned me = arch_cpu_id() + 1;
	if (!mode) {
		m->t_acq = 0;
		m->last_cpu = me;
		return;
	}
	e->hits = 1;
	m->hits++;
	e->migrations = m->last_cpu && m->last_cpu != me;
	m->last_cpu = me;
	uint64_t now = mode == LOCKSTAT_TIMING ? arch_cycles() : 0;
	m->t_acq = now;
	if (e->misses && now)
		e->wait = now - t0;
}

/* Sleep in m's queue until the monitor is ours (the interlock held on entry and exit). */
static irqkey_t wait_for(struct monitor *m, struct thread *self, const char *site, irqkey_t k,
			 unsigned mode, uint64_t t0, struct mon_ev *e)
{
	struct mon_waiter w = { NULL, self, false };
	e->site = site;
	for (;;) {
		enqueue(&m->head, &m->tail, &m->qlen, &w);
		if (mode) {		/* a miss: the first attempt, or a wakeup beaten to it */
			e->misses++;
			m->misses++;
			if (m->qlen > e->max_queue)
				e->max_queue = m->qlen;
		}
		iunlock(m, k, site);
		sched_sleep(SCHED_COND_MON);
		e->sleeps++;
		k = ilock(m, site);
		if (w.granted)		/* MON_HANDOFF: the releaser made us the owner */
			break;
		if (!m->owner) {
			m->owner = self;
			break;
		}
		/* woken with the others and beaten to it: Sprite's second kind of miss */
	}
	acquired(m, site, mode, t0, e);
	return k;
}

void mon_lock_at(struct monitor *m, const char *site)
{
	struct thread *self = self_or_panic("mon_lock", site, m->cls);
	mlock_assert_none("mon_lock", site);
	unsigned mode = lockstat_on();
	uint64_t t0 = mode == LOCKSTAT_TIMING ? arch_cycles() : 0;
	struct mon_ev e = { 0 };
	irqkey_t k = ilock(m, site);
	if (m->owner == self)
		panic("mon_lock: recursion: thread '%s' asks at %s for monitor of class '%s' "
		      "(init %s) that it holds since %s", tname(self), site, m->cls->name,
		      m->init_site, m->site ? m->site : "?");
	if (!m->owner) {
		m->owner = self;
		acquired(m, site, mode, t0, &e);
	} else {
		k = wait_for(m, self, site, k, mode, t0, &e);
	}
	iunlock_commit(m, k, site, m->cls, mode ? &e : NULL, NULL, NULL);
}

/* Give up ownership (the interlock held, the caller the owner): returns the waiters to
 * wake after the interlock is released. */
static struct mon_waiter *release(struct monitor *m, struct mon_ev *e)
{
	struct mon_waiter *wake;
	unsigned n;
	if ((m->flags & MON_HANDOFF) && m->head) {
		wake = dequeue(&m->head, &m->tail, &m->qlen);
		wake->granted = true;
		m->owner = wake->t;
		n = 1;
	} else {
		m->owner = NULL;
		wake = m->head;
		n = m->qlen;
		m->head = m->tail = NULL;
		__atomic_store_n(&m->qlen, 0, __ATOMIC_RELAXED);
	}
	m->site = NULL;
	e->wakeups = n;
	if (m->t_acq)
		e->hold = arch_cycles() - m->t_acq;
	m->t_acq = 0;
	return wake;
}

__attribute__((noreturn)) static void not_owner(const struct monitor *m, const char *what,
						const char *site)
{
	panic("%s at %s: thread '%s' does not hold monitor of class '%s' (init %s); owner: '%s'%s%s",
	      what, site, tname(thread_self()), m->cls->name, m->init_site, tname(m->owner),
	      m->site ? ", acquired at " : "", m->site ? m->site : "");
}

void mon_unlock_at(struct monitor *m, const char *site)
{
	struct thread *self = thread_self();
	irqkey_t k = ilock(m, site);
	if (!self || m->owner != self)
		not_owner(m, "mon_unlock", site);
	struct mon_ev e = { 0 };
	struct mon_waiter *wake = release(m, &e);
	iunlock_commit(m, k, site, m->cls, &e, NULL, NULL);
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

void cv_wait_at(struct condvar *cv, const char *site)
{
	struct monitor *m = cv->mon;
	struct thread *self = self_or_panic("cv_wait", site, cv->cls);
	mlock_assert_none("cv_wait", site);
	irqkey_t k = ilock(m, site);
	if (m->owner != self)
		not_owner(m, "cv_wait (waiting on a condition variable without its monitor)", site);
	struct mon_waiter w = { NULL, self, false };
	enqueue(&cv->head, &cv->tail, &cv->qlen, &w);
	cv->waits++;
	struct mon_ev ce = { .sleeps = 1, .max_queue = cv->qlen }, me = { 0 };
	struct mon_waiter *wake = release(m, &me);
	iunlock_commit(m, k, site, cv->cls, &ce, m->cls, &me);
	wake_list(wake, SCHED_COND_MON);
	sched_sleep(SCHED_COND_CV);
	mon_lock_at(m, site);
}

static unsigned cv_wake(struct condvar *cv, bool all, const char *site)
{
	struct monitor *m = cv->mon;
	irqkey_t k = ilock(m, site);
	if (!thread_self() || m->owner != thread_self())
		not_owner(m, all ? "cv_broadcast" : "cv_signal", site);
	struct mon_waiter *wake;
	unsigned n = 0;
	if (all) {
		wake = cv->head;
		n = cv->qlen;
		cv->head = cv->tail = NULL;
		__atomic_store_n(&cv->qlen, 0, __ATOMIC_RELAXED);
	} else {
		wake = dequeue(&cv->head, &cv->tail, &cv->qlen);
		n = wake ? 1 : 0;
	}
	cv->wakeups += n;
	struct mon_ev e = { .wakeups = n };
	iunlock_commit(m, k, site, cv->cls, n ? &e : NULL, NULL, NULL);
	wake_list(wake, SCHED_COND_CV);
	return n;
}

unsigned cv_signal_at(struct condvar *cv, const char *site) { return cv_wake(cv, false, site); }
unsigned cv_broadcast_at(struct condvar *cv, const char *site) { return cv_wake(cv, true, site); }
