/*
 * rq-locked.c - the conventional scheduler beside Synthesis's (issue 10 item 7): one set
 * of per-level FIFO run queues for the whole machine under one master spin lock taken
 * with interrupts off, as Sprite's sched_Mutex (Hartman & Ousterhout: the scheduler's
 * monitor lock, their Figure 9 bottleneck) and Mach's run queue lock. Same interface and
 * the same state word as rq-lockfree.c, but every change of a state word or a queue is
 * made while holding sched_lock, so none needs a CAS; the word is still an atomic so
 * lock-free readers (thread_state, join's DEAD test) read it whole.
 *
 * A running thread is off the queues (dequeued by the dispatcher that picked it);
 * LINKED means "on a run queue". A preempted thread goes back to the tail of its level
 * bound to the CPU it was preempted on (SCHED_PREEMPTED, as in the lock-free scheduler:
 * thread.c says why); a dispatcher skips threads bound elsewhere or not allowed on it.
 *
 * A level change (thread_set_level) is made under sched_lock: a queued thread leaves its
 * level's list and joins the new one's tail; a running, sleeping or stopped one just
 * gets the new level (a running thread competes with it at its CPU's next pick, which
 * sees prev->level under the lock; a sleeper is appended there by its wakeup).
 */
#include "sched_impl.h"
#include "mlock.h"
#include <ksync/errors.h>

/* The master lock: protects the queues below and every thread's state word changes and
 * rq_next/rq_prev links while the locked scheduler runs. */
LOCK_CLASS(sched_mutex_class, "sched_Mutex", LOCK_MASTER, LOCK_CODE);
static struct mlock sched_lock __attribute__((aligned(64))) =
	MLOCK_INIT(sched_mutex_class, MLOCK_TICKET);
LOCKSTAT_STATIC(sched_lock);	/* on its class's list of instances (lockstat.h) */
struct mlock *sched_mutex(void) { return &sched_lock; }
static struct thread *q_head[SCHED_LEVELS], *q_tail[SCHED_LEVELS];	/* sched_lock */
static inline uint64_t st(struct thread *t) { return atomic_load_explicit(&t->state, memory_order_relaxed); }
/* release: a lock-free reader (join's DEAD test) sees what the holder did before */
static inline void st_set(struct thread *t, uint64_t s) { atomic_store_explicit(&t->state, s, memory_order_release); }

/* Queued threads by where they may run: q_bound[c] those only CPU c may take (bound
 * there by a preemption, or an affinity of that CPU alone), q_free the rest. Changed
 * under sched_lock (seq_cst RMW), read without it by lk_pick's peek, so a CPU with
 * nothing it may take does not take the lock. Dekker with idle_loop: an idler stores
 * idle_waiting, then peeks (seq_cst both); a waker's q_append adds here, then kick_for
 * reads idle_waiting (seq_cst both): the idler sees the thread or the waker the idler. */
static _Atomic unsigned q_free, q_bound[MAX_CPUS];

static _Atomic unsigned *q_counter(struct thread *t)	/* sched_lock held */
{
	uint64_t s = st(t), aff = __atomic_load_n(&t->affinity, __ATOMIC_RELAXED);
	if (s & SCHED_PREEMPTED)
		return &q_bound[SCHED_CPU_OF(s)];
	if (aff && !(aff & (aff - 1)) && (unsigned)__builtin_ctzll(aff) < MAX_CPUS)
		return &q_bound[__builtin_ctzll(aff)];
	return &q_free;
}


static void q_append(struct thread *t)
{
	unsigned l = sched_level_of(t);
	t->rq_next = NULL;
	t->rq_prev = q_tail[l];
	if (q_tail[l])
		q_tail[l]->rq_next = t;
	else
		q_head[l] = t;
	q_tail[l] = t;
	t->rq_counter = q_counter(t);
	atomic_fetch_add_explicit(t->rq_counter, 1, memory_order_seq_cst);
	st_set(t, st(t) | SCHED_LINKED);
}

static void q_remove(struct thread *t)
{
	unsigned l = sched_level_of(t);
	if (t->rq_prev)
		t->rq_prev->rq_next = t->rq_next;
	else
		q_head[l] = t->rq_next;
	if (t->rq_next)
		t->rq_next->rq_prev = t->rq_prev;
	else
		q_tail[l] = t->rq_prev;
	t->rq_next = t->rq_prev = NULL;
	atomic_fetch_sub_explicit(t->rq_counter, 1, memory_order_seq_cst);
	st_set(t, st(t) & ~SCHED_LINKED);
}

/* Who should notice a thread that became ready: read under sched_lock by the caller
 * (after the unlock the thread may run and be re-homed), used after it. */
struct kick { int bound; unsigned home, level, id; uint64_t affinity; };

static struct kick kick_of(struct thread *t)	/* sched_lock held */
{
	uint64_t s = st(t);
	return (struct kick){ (s & SCHED_PREEMPTED) ? (int)SCHED_CPU_OF(s) : -1, t->home,
			      sched_level_of(t), t->id, __atomic_load_n(&t->affinity, __ATOMIC_RELAXED) };
}

/* Its binding, else any allowed CPU that is idle or runs a lower level (sched_kick
 * decides), starting at its last home. */
static void kick_for(struct kick k)
{
	if (k.bound >= 0) {
		sched_kick((unsigned)k.bound, k.level, k.id);
		return;
	}
	unsigned n = sched_ncpus();
	for (unsigned i = 0; i < n; i++) {
		unsigned c = (k.home + i) % n;
		if (c >= 64 || !(k.affinity >> c & 1))
			continue;
		struct sched_cpu *sc = &sched_cpus[c];
		if (atomic_load_explicit(&sc->idle_waiting, memory_order_seq_cst) ||
		    atomic_load_explicit(&sc->cur_level, memory_order_relaxed) > k.level) {
			sched_kick(c, k.level, k.id);
			return;
		}
	}
}

static void lk_reset(void)
{
	for (unsigned l = 0; l < SCHED_LEVELS; l++)
		q_head[l] = q_tail[l] = NULL;
	atomic_store_explicit(&q_free, 0, memory_order_relaxed);
	for (unsigned c = 0; c < MAX_CPUS; c++)
		atomic_store_explicit(&q_bound[c], 0, memory_order_relaxed);
}

static void lk_adopt(struct thread *t, unsigned cpu)
{
	st_set(t, SCHED_READY | SCHED_ONCPU | ((uint64_t)cpu << SCHED_CPU_SHIFT));
}

static void lk_insert_new(struct thread *t)
{
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	st_set(t, SCHED_READY);
	q_append(t);
	struct kick kk = kick_of(t);
	mlock_unlock_irqrestore(&sched_lock, k);
	kick_for(kk);
}

/* sched_lock held: take t off its queue for cpu if it may run there now. */
static struct thread *take_locked(struct thread *t, unsigned cpu)
{
	uint64_t s = st(t);
	if (!(s & SCHED_LINKED) || !(s & SCHED_READY) || (s & (SCHED_KILL | SCHED_SUSPEND)) ||
	    !sched_may_run(t, s, cpu))
		return NULL;
	q_remove(t);
	st_set(t, (st(t) & ~(SCHED_PREEMPTED | SCHED_CPU_MASK)) | SCHED_ONCPU |
			  ((uint64_t)cpu << SCHED_CPU_SHIFT));
	return t;
}

static struct thread *lk_pick(unsigned cpu, struct thread *prev, bool *stolen)
{
	(void)stolen;
	/* prev runs here and is off the queues: it competes at the tail of its level */
	bool prev_ok = prev && !prev->idle && (st(prev) & SCHED_READY) &&
		       !(st(prev) & (SCHED_KILL | SCHED_SUSPEND)) && sched_affine(prev, cpu);
	unsigned order[SCHED_LEVELS];
	unsigned n = sched_level_order(cpu, order);
	/* Nothing queued that this CPU may take: no need for the lock. Idle CPUs look at
	 * every tick and IPI; under QEMU -smp 8 on two host cores their lock rounds
	 * convoyed the FIFO ticket lock (each hand-off waited for a descheduled vCPU) while
	 * the only queued threads were bound to one busy CPU, and the serializer test ran
	 * out of time. */
	if (atomic_load_explicit(&q_free, memory_order_seq_cst) == 0 &&
	    (cpu >= MAX_CPUS || atomic_load_explicit(&q_bound[cpu], memory_order_seq_cst) == 0))
		return prev_ok ? prev : NULL;
	struct thread *found = NULL;
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	for (unsigned i = 0; i < n && !found; i++) {
		/* a helping-lock owner a remote helper donated to competes at its boost */
		struct thread *d = sched_donee(cpu, order[i]);
		if (d && d == prev && prev_ok) {
			found = prev;
			break;
		}
		if (d && d != prev && (found = take_locked(d, cpu)))
			break;
		for (struct thread *t = q_head[order[i]]; t; t = t->rq_next) {
			uint64_t s = st(t);
			if (!sched_may_run(t, s, cpu))
				continue;
			q_remove(t);
			st_set(t, (st(t) & ~(SCHED_PREEMPTED | SCHED_CPU_MASK)) | SCHED_ONCPU |
					  ((uint64_t)cpu << SCHED_CPU_SHIFT));
			found = t;
			break;
		}
		if (!found && prev_ok && sched_level_of(prev) == order[i])
			found = prev;
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	return found;
}

static bool lk_release(struct thread *t, unsigned cpu, bool preempted)
{
	bool dead = false;
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	uint64_t s = st(t);
	if (!(s & SCHED_ONCPU) || SCHED_CPU_OF(s) != cpu)
		panic("locked release: thread '%s' not owned by cpu %u", t->name, cpu);
	s &= ~(SCHED_ONCPU | SCHED_CPU_MASK | SCHED_PREEMPTED);
	if (s & SCHED_KILL) {
		st_set(t, (s & ~(SCHED_READY | SCHED_SUSPEND)) | SCHED_DEAD);
		dead = true;
	} else if (s & SCHED_SUSPEND) {
		/* a preempted thread stays bound to this CPU while stopped (thread.c) */
		bool bound = preempted || (st(t) & SCHED_PREEMPTED);
		st_set(t, s | SCHED_STOPPED | (bound ? SCHED_PREEMPTED | ((uint64_t)cpu << SCHED_CPU_SHIFT) : 0));
	} else if (!(s & SCHED_READY)) {
		st_set(t, s);		/* asleep: a wakeup queues it */
	} else {
		if (preempted)
			s |= SCHED_PREEMPTED | ((uint64_t)cpu << SCHED_CPU_SHIFT);
		st_set(t, s);
		__atomic_store_n(&t->home, cpu, __ATOMIC_RELAXED);
		q_append(t);	/* no kick: this CPU just switched, others will look */
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	return dead;
}

/* Take sched_lock for an operation on t: false (lock not held) if t is DEAD; else the
 * lock is held (*k to give back) and *s is t's state word. */
static bool lock_live(struct thread *t, irqkey_t *k, uint64_t *s)
{
	*k = mlock_lock_irqsave(&sched_lock);
	*s = st(t);
	if (*s & SCHED_DEAD) {
		mlock_unlock_irqrestore(&sched_lock, *k);
		return false;
	}
	return true;
}

static int lk_suspend(struct thread *t)
{
	int force = -1;
	irqkey_t k;
	uint64_t s;
	if (!lock_live(t, &k, &s))
		return KSYNC_ESRCH;
	if (!(s & SCHED_SUSPEND)) {
		if (s & SCHED_LINKED) {
			q_remove(t);
			st_set(t, st(t) | SCHED_SUSPEND | SCHED_STOPPED);
		} else if (s & SCHED_ONCPU) {
			st_set(t, s | SCHED_SUSPEND);
			if (SCHED_CPU_OF(s) != sched_cpu_id())
				force = (int)SCHED_CPU_OF(s);
		} else {
			st_set(t, s | SCHED_SUSPEND | SCHED_STOPPED);	/* asleep */
		}
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	if (force >= 0)
		sched_force((unsigned)force);
	return KSYNC_OK;
}

static int lk_resume(struct thread *t)
{
	bool queued = false;
	struct kick kk = { -1, 0, 0, 0, 0 };
	irqkey_t k;
	uint64_t s;
	if (!lock_live(t, &k, &s))
		return KSYNC_ESRCH;
	if (s & SCHED_SUSPEND) {
		st_set(t, s & ~(SCHED_SUSPEND | SCHED_STOPPED));
		if ((s & SCHED_STOPPED) && (s & SCHED_READY)) {
			q_append(t);
			kk = kick_of(t);
			queued = true;
		}
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	if (queued)
		kick_for(kk);
	return KSYNC_OK;
}

static int lk_kill(struct thread *t)
{
	int rc = KSYNC_OK, force = -1;
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	uint64_t s = st(t);
	if (s & SCHED_DEAD)
		rc = KSYNC_ESRCH;
	else if (!(s & SCHED_KILL)) {
		if (s & SCHED_ONCPU) {
			st_set(t, s | SCHED_KILL);
			if (SCHED_CPU_OF(s) != sched_cpu_id())
				force = (int)SCHED_CPU_OF(s);
		} else {
			if (s & SCHED_LINKED)
				q_remove(t);
			st_set(t, (st(t) & ~(SCHED_READY | SCHED_SUSPEND | SCHED_STOPPED |
					     SCHED_PREEMPTED | SCHED_CPU_MASK)) | SCHED_KILL | SCHED_DEAD);
			rc = 1;
		}
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	if (force >= 0)
		sched_force((unsigned)force);
	return rc;
}

static int lk_wakeup(struct thread *t, uint64_t cond)
{
	bool queued = false;
	struct kick kk = { -1, 0, 0, 0, 0 };
	irqkey_t k;
	uint64_t s;
	if (!lock_live(t, &k, &s))
		return KSYNC_ESRCH;
	if (!(s & SCHED_KILL)) {
		st_set(t, s | SCHED_READY | cond);
		if (!(s & (SCHED_ONCPU | SCHED_LINKED | SCHED_STOPPED))) {
			q_append(t);
			kk = kick_of(t);
			queued = true;
		}
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	if (queued)
		kick_for(kk);
	return KSYNC_OK;
}

static uint64_t lk_sleep_prepare(struct thread *self, uint64_t cond)
{
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	uint64_t s = st(self), got = s & cond;
	if (got)
		st_set(self, s & ~got);
	else
		st_set(self, s & ~SCHED_READY);
	mlock_unlock_irqrestore(&sched_lock, k);
	return got;
}

static int lk_sigpend(struct thread *t)
{
	int force = -1;
	irqkey_t k;
	uint64_t s;
	if (!lock_live(t, &k, &s))
		return KSYNC_ESRCH;
	st_set(t, s | SCHED_SIGPEND);
	if ((s & SCHED_ONCPU) && SCHED_CPU_OF(s) != sched_cpu_id())
		force = (int)SCHED_CPU_OF(s);
	mlock_unlock_irqrestore(&sched_lock, k);
	if (force >= 0)
		sched_force((unsigned)force);
	return KSYNC_OK;
}

static void lk_exit_mark(struct thread *self)
{
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	st_set(self, st(self) | SCHED_KILL);
	mlock_unlock_irqrestore(&sched_lock, k);
}

/* A helper's directed switch (hlock.c): take t off its queue for cpu, as lk_pick would. */
static struct thread *lk_take(struct thread *t, unsigned cpu)
{
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	struct thread *got = take_locked(t, cpu);
	mlock_unlock_irqrestore(&sched_lock, k);
	return got;
}

/* sched_wake_help's step (sched_impl.h), under one round of sched_lock: a sleeper woken
 * and made this CPU's running thread at once - what lk_wakeup's append followed by
 * take_locked's removal would leave, without the queue round trip or the kick. */
static struct thread *lk_wake_take(struct thread *t, uint64_t cond, unsigned cpu)
{
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	uint64_t s = st(t);
	struct thread *got = NULL;
	if (!(s & (SCHED_READY | SCHED_ONCPU | SCHED_LINKED | SCHED_SUSPEND | SCHED_STOPPED |
		   SCHED_KILL | SCHED_DEAD)) &&
	    sched_may_run(t, s, cpu)) {
		st_set(t, (s & ~(SCHED_PREEMPTED | SCHED_CPU_MASK)) | SCHED_READY | cond |
				  SCHED_ONCPU | ((uint64_t)cpu << SCHED_CPU_SHIFT));
		got = t;
	}
	mlock_unlock_irqrestore(&sched_lock, k);
	return got;
}

/* thread_set_level (sched_impl.h), under sched_lock. A queued thread raised kicks a CPU
 * that runs a lower level (after the unlock, as a wakeup's); a thread running on another
 * CPU and lowered below a queued thread makes that CPU pick again (IPI). The caller's
 * own change needs nothing more here: its CPU's next pick reads the new level. */
static int lk_set_level(struct thread *t, unsigned level, unsigned cpu, bool self)
{
	(void)self;
	irqkey_t k;
	uint64_t s;
	if (!lock_live(t, &k, &s))
		return KSYNC_ESRCH;
	unsigned old = sched_level_of(t);
	bool queued = (s & SCHED_LINKED) && level != old;
	int force = -1;
	struct kick kk = { -1, 0, 0, 0, 0 };
	if (queued)
		q_remove(t);
	sched_level_store(t, level);
	if (queued) {
		q_append(t);
		kk = kick_of(t);
	}
	for (unsigned l = old; (s & SCHED_ONCPU) && SCHED_CPU_OF(s) != cpu && l < level; l++)
		if (q_head[l])
			force = (int)SCHED_CPU_OF(s);
	mlock_unlock_irqrestore(&sched_lock, k);
	if (queued && level < old)
		kick_for(kk);
	if (force >= 0)
		sched_force((unsigned)force);
	return KSYNC_OK;
}

/* sched_lock held while the lists are walked; the counts are read with it too. */
static unsigned lk_queued(unsigned *entries)
{
	unsigned e = 0;
	irqkey_t k = mlock_lock_irqsave(&sched_lock);
	for (unsigned l = 0; l < SCHED_LEVELS; l++)
		for (struct thread *t = q_head[l]; t; t = t->rq_next)
			e++;
	unsigned n = atomic_load_explicit(&q_free, memory_order_relaxed);
	for (unsigned c = 0; c < MAX_CPUS; c++)
		n += atomic_load_explicit(&q_bound[c], memory_order_relaxed);
	mlock_unlock_irqrestore(&sched_lock, k);
	*entries = e;
	return n;
}

const struct sched_ops sched_ops_locked = {
	.name = "locked",
	.reset = lk_reset,
	.adopt = lk_adopt,
	.insert_new = lk_insert_new,
	.pick = lk_pick,
	.release = lk_release,
	.suspend = lk_suspend,
	.resume = lk_resume,
	.kill = lk_kill,
	.wakeup = lk_wakeup,
	.sleep_prepare = lk_sleep_prepare,
	.sigpend = lk_sigpend,
	.exit_mark = lk_exit_mark,
	.take = lk_take,
	.wake_take = lk_wake_take,
	.set_level = lk_set_level,
	.queued = lk_queued,
};
