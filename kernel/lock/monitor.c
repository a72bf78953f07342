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

/* The owner is set; statistics of an acquisition (the interlock held). */
static void acquired(struct monitor *m, struct thread *self, const char *site, unsigned mode,
		     uint64_t t0, uint64_t misses, uint64_t sleeps)
{
	m->site = site;
	unsigned me = arch_cpu_id() + 1;
	if (!mode) {
		m->t_acq = 0;
		m->last_cpu = me;
		return;
	}
	(void)self;
	struct lockstat_shard *s = lockstat_open(m->cls);
	LOCKSTAT_ADD(s->hits, 1);
	m->hits++;
	if (m->last_cpu && m->last_cpu != me)
		LOCKSTAT_ADD(s->migrations, 1);
	m->last_cpu = me;
	uint64_t now = mode == LOCKSTAT_TIMING ? arch_cycles() : 0;
	m->t_acq = now;
	if (misses) {
		LOCKSTAT_ADD(s->sleeps, sleeps);
		if (now)
			lockstat_time_add(&s->wait, now - t0);
	}
	lockstat_close(s);
}

/* A miss (the interlock held): counted, with the waiter's site. */
static void missed(struct monitor *m, const char *site, unsigned mode)
{
	if (!mode)
		return;
	struct lockstat_shard *s = lockstat_open(m->cls);
	LOCKSTAT_ADD(s->misses, 1);
	m->misses++;
	lockstat_site_add(s, site, 0);
	LOCKSTAT_MAX(s->max_queue, m->qlen);
	lockstat_close(s);
}

/* Sleep in m's queue until the monitor is ours (the interlock held on entry and exit). */
static irqkey_t wait_for(struct monitor *m, struct thread *self, const char *site, irqkey_t k,
			 unsigned mode, uint64_t t0)
{
	struct mon_waiter w = { NULL, self, false };
	uint64_t misses = 0, sleeps = 0;
	for (;;) {
		misses++;
		enqueue(&m->head, &m->tail, &m->qlen, &w);
		missed(m, site, mode);
		iunlock(m, k, site);
		sched_sleep(SCHED_COND_MON);
		sleeps++;
		k = ilock(m, site);
		if (w.granted)		/* MON_HANDOFF: the releaser made us the owner */
			break;
		if (!m->owner) {
			m->owner = self;
			break;
		}
		/* woken with the others and beaten to it: Sprite's second kind of miss */
	}
	acquired(m, self, site, mode, t0, misses, sleeps);
	return k;
}

void mon_lock_at(struct monitor *m, const char *site)
{
	struct thread *self = self_or_panic("mon_lock", site, m->cls);
	mlock_assert_none("mon_lock", site);
	unsigned mode = lockstat_on();
	uint64_t t0 = mode == LOCKSTAT_TIMING ? arch_cycles() : 0;
	irqkey_t k = ilock(m, site);
	if (m->owner == self)
		panic("mon_lock: recursion: thread '%s' asks at %s for monitor of class '%s' "
		      "(init %s) that it holds since %s", tname(self), site, m->cls->name,
		      m->init_site, m->site ? m->site : "?");
	if (!m->owner) {
		m->owner = self;
		acquired(m, self, site, mode, t0, 0, 0);
	} else {
		k = wait_for(m, self, site, k, mode, t0);
	}
	iunlock(m, k, site);
}

/* Give up ownership (the interlock held, the caller the owner): returns the waiters to
 * wake after the interlock is released. */
static struct mon_waiter *release(struct monitor *m, const char *site)
{
	unsigned mode = lockstat_on();
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
	if (mode) {
		struct lockstat_shard *s = lockstat_open(m->cls);
		LOCKSTAT_ADD(s->wakeups, n);
		if (mode == LOCKSTAT_TIMING && m->t_acq)
			lockstat_time_add(&s->hold, arch_cycles() - m->t_acq);
		lockstat_close(s);
	}
	m->t_acq = 0;
	(void)site;
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
	struct mon_waiter *wake = release(m, site);
	iunlock(m, k, site);
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
	if (lockstat_on()) {
		struct lockstat_shard *s = lockstat_open(cv->cls);
		LOCKSTAT_ADD(s->sleeps, 1);
		LOCKSTAT_MAX(s->max_queue, cv->qlen);
		lockstat_close(s);
	}
	struct mon_waiter *wake = release(m, site);
	iunlock(m, k, site);
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
	if (n && lockstat_on()) {
		struct lockstat_shard *s = lockstat_open(cv->cls);
		LOCKSTAT_ADD(s->wakeups, n);
		lockstat_close(s);
	}
	iunlock(m, k, site);
	wake_list(wake, SCHED_COND_CV);
	return n;
}

unsigned cv_signal_at(struct condvar *cv, const char *site) { return cv_wake(cv, false, site); }
unsigned cv_broadcast_at(struct condvar *cv, const char *site) { return cv_wake(cv, true, site); }
