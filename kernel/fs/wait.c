/*
 * wait.c - how file waits sleep and how a signal interrupts them.
 *
 * Two kinds of wait:
 *   the wait channel   poll and the tty's readers. The tty's input arrives in the serial
 *                      interrupt handler (tty_receive), which cannot take a monitor, so
 *                      these waits sleep on a condition flag of the thread's state word
 *                      (Hohmuth & Haertig 2001, Figure 3: sched_sleep/sched_wakeup, no
 *                      wakeup lost whatever the order) with a generation count: a waiter
 *                      reads the generation, tests its condition, and sleeps only if no
 *                      notification came since (the test under the object's own lock).
 *   condition variables pipes (pipe.c): Sprite's monitors and Mesa condition variables
 *                      (Hartman & Ousterhout section 2), registered here while they wait
 *                      so that fs_interrupt can broadcast on them.
 *
 * Shared state, all under fs_wait_lock (a master lock, class "fs_wait"; taken inside the
 * interrupt scheme's critical section, which holds back the tty's handler, a scheme source
 * that notifies): chan_gen, chan_head (the sleepers'
 * records, on their stacks), cv_head (the registered condition-variable waits).
 * npollers: atomic - the threads between fs_wait_begin and fs_wait_end; a notifier reads
 * it under the object's lock (fs_wait_wanted), which orders it against a waiter's test
 * under the same lock, so a notification nobody waits for costs one load.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

LOCK_CLASS(fs_wait_class, "fs_wait", LOCK_MASTER, LOCK_DATA);

static struct mlock fs_wait_lock = MLOCK_INIT(fs_wait_class, MLOCK_TICKET);
LOCKSTAT_STATIC(fs_wait_lock);	/* on its class's list of instances (lockstat.h) */

struct chan_waiter {
	struct chan_waiter *next;
	struct thread *t;
};

static uint64_t chan_gen;		/* fs_wait_lock */
static struct chan_waiter *chan_head;	/* fs_wait_lock */
static struct fs_cvwait *cv_head;	/* fs_wait_lock */
static unsigned npollers;		/* atomic */

/* ---- hooks the process layer overrides ---------------------------------------------------- */
__attribute__((weak)) bool fs_signal_pending(void) { return false; }
__attribute__((weak)) void fs_tty_signal(int sig) { (void)sig; }
__attribute__((weak)) void fs_sigpipe(void) {}
__attribute__((weak)) void fs_page_hold(void *page) { (void)page; }
__attribute__((weak)) void fs_page_release(void *page) { pmm_free((uint64_t)(uintptr_t)page); }

/* Test hooks (fs_internal.h): consulted instead of / besides the process layer's.
 * Stored with release, loaded with acquire: the test's data the hook reads are set before. */
static bool (*sig_hook)(void);		/* atomic */
static void (*ttysig_hook)(int);	/* atomic */

void fs_test_hooks(bool (*sig)(void), void (*ttysig)(int))
{
	__atomic_store_n(&sig_hook, sig, __ATOMIC_RELEASE);
	__atomic_store_n(&ttysig_hook, ttysig, __ATOMIC_RELEASE);
}

bool fs_sig_pending(void)
{
	bool (*h)(void) = __atomic_load_n(&sig_hook, __ATOMIC_ACQUIRE);
	return h ? h() : fs_signal_pending();
}

void fs_tty_sig(int sig)
{
	void (*h)(int) = __atomic_load_n(&ttysig_hook, __ATOMIC_ACQUIRE);
	if (h)
		h(sig);
	fs_tty_signal(sig);
}

/* ---- the wait channel ------------------------------------------------------------------- */

static uint64_t gen_now(void);

uint64_t fs_wait_begin(void)
{
	/* seq_cst: counted before the caller tests any object's state (under its lock) */
	__atomic_fetch_add(&npollers, 1, __ATOMIC_SEQ_CST);
	return gen_now();
}

void fs_wait_end(void)
{
	__atomic_fetch_sub(&npollers, 1, __ATOMIC_SEQ_CST);
}

bool fs_wait_wanted(void)
{
	/* relaxed: the caller holds the object's lock, which a waiter's test also takes */
	return __atomic_load_n(&npollers, __ATOMIC_RELAXED) != 0;
}

/* Remove t's record w if it is still queued (fs_wait_lock held). */
static bool chan_remove(struct chan_waiter *w)
{
	for (struct chan_waiter **pp = &chan_head; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return true;
		}
	return false;
}

/* The generation now (for the caller's next test). */
static uint64_t gen_now(void)
{
	mlock_lock(&fs_wait_lock);
	uint64_t g = chan_gen;
	mlock_unlock(&fs_wait_lock);
	return g;
}

int fs_wait_sleep(uint64_t *gen)
{
	return fs_wait_sleep_until(gen, 0);
}

int fs_wait_sleep_until(uint64_t *gen, uint64_t deadline)
{
	struct chan_waiter w = { NULL, thread_self() };
	mlock_lock(&fs_wait_lock);
	if (chan_gen != *gen) {		/* notified since the caller's test: test again */
		*gen = chan_gen;
		mlock_unlock(&fs_wait_lock);
		return 0;
	}
	w.next = chan_head;
	chan_head = &w;
	mlock_unlock(&fs_wait_lock);
	/* a signal posted before we were queued found nobody to wake: test it now */
	bool intr = fs_sig_pending();
	/* every wakeup with FS_COND_WAIT follows the removal of our record by the waker;
	 * a deadline (kernel/sched/timer.c) or a signal may end the sleep with the record
	 * still queued */
	uint64_t got = intr ? 0 : sched_sleep_until(FS_COND_WAIT, deadline);
	if (!(got & FS_COND_WAIT)) {
		mlock_lock(&fs_wait_lock);
		bool mine = chan_remove(&w);
		mlock_unlock(&fs_wait_lock);
		if (!mine)	/* a waker took the record: its flag is (being) set, consume it */
			sched_sleep(FS_COND_WAIT);
	}
	*gen = gen_now();
	return intr || fs_sig_pending() ? -LX_EINTR : 0;
}

void fs_wait_notify(void)
{
	mlock_lock(&fs_wait_lock);
	chan_gen++;
	struct chan_waiter *w = chan_head;
	chan_head = NULL;
	mlock_unlock(&fs_wait_lock);
	while (w) {	/* a record lives on its sleeper's stack: read next first */
		struct chan_waiter *next = w->next;
		struct thread *t = w->t;
		int rc = sched_wakeup(t, FS_COND_WAIT);
		if (rc != KSYNC_OK)
			panic("fs_wait: waking '%s' failed (%s)", thread_name(t), ksync_strerror(rc));
		w = next;
	}
}

/* ---- interruptible condition-variable waits ----------------------------------------------- */

int fs_cv_wait(struct fs_cvwait *w)
{
	w->t = thread_self();
	mlock_lock(&fs_wait_lock);
	w->next = cv_head;
	cv_head = w;
	mlock_unlock(&fs_wait_lock);
	/* after registering: a signal posted earlier is seen here, a later one finds us */
	bool intr = fs_sig_pending();
	if (!intr)
		cv_wait(w->cv[0]);
	mlock_lock(&fs_wait_lock);
	for (struct fs_cvwait **pp = &cv_head; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	mlock_unlock(&fs_wait_lock);
	return intr || fs_sig_pending() ? -LX_EINTR : 0;
}

void fs_interrupt(struct thread *t)
{
	/* the wait channel: take t's records off, then wake it */
	bool wake = false;
	struct fs_cvwait *cw = NULL;
	mlock_lock(&fs_wait_lock);
	for (struct chan_waiter **pp = &chan_head; *pp;) {
		if ((*pp)->t == t) {
			*pp = (*pp)->next;
			wake = true;
		} else {
			pp = &(*pp)->next;
		}
	}
	for (struct fs_cvwait *c = cv_head; c; c = c->next)
		if (c->t == t) {
			cw = c;
			/* the object outlives our broadcast: its waiter holds it until it
			 * unregisters, which needs this lock */
			cw->get(cw->obj);
			break;
		}
	struct monitor *mon = cw ? cw->mon : NULL;
	struct condvar *cv0 = cw ? cw->cv[0] : NULL, *cv1 = cw ? cw->cv[1] : NULL;
	void *obj = cw ? cw->obj : NULL;
	void (*put)(void *) = cw ? cw->put : NULL;
	mlock_unlock(&fs_wait_lock);
	if (wake)
		(void)sched_wakeup(t, FS_COND_WAIT);
	if (mon) {
		/* the waiter is queued on cv0 by now or sees the signal: it registered, then
		 * tested, holding mon until cv_wait queued it */
		mon_lock(mon);
		cv_broadcast(cv0);
		if (cv1)
			cv_broadcast(cv1);
		mon_unlock(mon);
		put(obj);
	}
}
