/*
 * hlock.c - wait-free locking with helping: priority inheritance by donation, on one CPU
 * and across CPUs; the switch hint; the count of locks held; invalidation; synchronous
 * messages on thread locks (issue 12 items 1-3; hlock.h is the interface; docs/fiasco.md;
 * spin/hlock.pml models the word protocol).
 *
 * Paper: Hohmuth & Haertig 2001, section 3.3 ("When a thread A wants to acquire a lock
 * that is in use by a different thread B, it puts itself on top of the lock's helper
 * stack. Then, instead of blocking and waiting for B to finish, it helps B by passing
 * the CPU to B ... Every time A is reactivated ... it checks whether it now owns the
 * lock; if it does not, it continues to help B until it does. When B finishes its
 * critical section, it will find a helping thread on top of the lock's stack ... and
 * passes the lock (and the CPU) to that thread"), section 4.3 (the switch hint with its
 * three values; the count of locks held, checked by thread deletion; invalidation of a
 * deleted object's lock, which Fiasco's Switch_lock returns as "Invalid" to its
 * lockers). It lives in kernel/sched/ because helping is a scheduling operation: the
 * helper's directed switch is the scheduler's (thread.c sched_help, ops->take).
 *
 * The lock word (hlock.h): owner | top-of-helper-stack << 16 | INVALID, all changed by
 * one CAS, so the owner and the stack are one atomic state: a release that sees an empty
 * stack and a helper's push cannot both succeed on the same word (spin/hlock.pml's first
 * mutant releases by a plain store and loses a helper). Uncontended: one CAS to lock, one
 * to unlock (Fiasco's Switch_lock does the same two; its 245 cycles were the helping
 * machinery around them).
 *
 * Helping on SMP (the paper's future work). The helper finds the owner:
 *  - runnable and allowed on the helper's CPU (not bound elsewhere by a preemption): the
 *    helper takes it by the dispatcher's marking CAS and switches to it, on its own time
 *    (Fiasco.OC's choice: the lock owner migrates to the helper's CPU and runs there). Its
 *    release afterwards re-homes it there, as any steal does.
 *  - running on another CPU: it is making progress in a section that never sleeps; the
 *    helper spins (checking the word) - it cannot run the owner faster than it runs.
 *  - preempted on another CPU (hosted: the preempted thread's stack holds that vCPU's
 *    signal frame, so it resumes only there; thread.c SCHED_PREEMPTED) or not allowed on
 *    the helper's CPU: the helper asks that CPU to run it ahead of its queues (a per-CPU
 *    donation request, sched_cpu.donee, with the owner boosted to the helper's level) and
 *    IPIs it - Linux proxy execution's remote donation with the donor staying home.
 * Why pull rather than always donate remotely: on one CPU the pull is the paper's
 * mechanism exactly and costs one switch; the remote request is needed only where the
 * owner cannot move, and there the remote CPU's own switch is the cheapest way to run
 * it. Why the helper spins instead of sleeping while the owner runs elsewhere: the
 * section is wait-free (never sleeps) and short by design; sleeping would need a wakeup
 * from the release, which helping exists to avoid.
 *
 * The boost: a helper sets the owner's boost to its level (thread.c boost_to) before it
 * donates; the owner runs at min(level, boost) (the CPU's cur_level, which decides
 * preemption by wakeups) and drops the boost only at the release of its LAST helping lock
 * (sched_unboost), so a thread holding several locks keeps the highest boost any of their
 * helpers gave until it holds none (the Zephyr #47942 / FreeRTOS #1168 failure: a boost
 * dropped at the first of several releases). Between two switches a stale boost can only
 * be too high, never too low, and ends when the thread leaves the CPU holding no lock.
 *
 * Nested helping: a helper follows the chain - the owner helps on another lock, whose
 * owner helps on another... (owner.hl_helping) - and donates to its end (Linux rt_mutex's
 * chain walk, bounded at HLOCK_CHAIN_MAX). A chain that comes back to the helper is a
 * deadlock of lock order: reported after it persists (panic naming the locks).
 */
#include "sched_impl.h"
#include "hlock.h"
#include <ksync/errors.h>

#define HLOCK_CHAIN_MAX 8
/* Spin steps a helper watches the word after a request that did not run the owner here
 * before it asks again (was ~2 us of TSC; 64 pause steps is 1-9 us on current cores) */
#define HLOCK_WATCH_STEPS 64u
#define HLOCK_CYCLE_PANIC 200000	/* consecutive sightings of a cycle before the panic */

LOCK_CLASS(hlock_thread_class, "thread_lock", LOCK_HELPING, LOCK_DATA);

/* Statistics, per CPU: written by a thread on that CPU (relaxed load + store; a thread
 * migrated between the two loses one count, never corrupts), read by anyone. Slow paths
 * only: the uncontended acquire and release touch none of them. */
static struct {
	uint64_t contended, helps_local, helps_remote, helps_not, handoffs, chain_max, invalid,
		host_yields;
} __attribute__((aligned(64))) hst[MAX_CPUS];
#define HST_INC(f) SCHED_STAT_INC(hst[arch_cpu_id()].f)

static inline struct thread *cur(void) { return kcpu_this()->sched_cur; }
static inline uint64_t owner_of(uint64_t w) { return w & HLOCK_OWNER_MASK; }
static inline uint64_t top_of(uint64_t w) { return (w & HLOCK_TOP_MASK) >> HLOCK_TOP_SHIFT; }
static inline struct thread *thread_of(uint64_t id1) { return &sched_threads[id1 - 1]; }
static inline const char *cls_name(const struct hlock *l) { return l && l->cls ? l->cls->name : "?"; }

void hlock_init(struct hlock *l, const struct lock_class *cls, struct thread *locked)
{
	atomic_store_explicit(&l->word, 0, memory_order_relaxed);
	l->locked = locked;
	l->cls = cls;
	l->hint = HLOCK_HINT_PRIO;
}

struct thread *hlock_owner(const struct hlock *l)
{
	uint64_t o = owner_of(atomic_load_explicit(&((struct hlock *)l)->word, memory_order_relaxed));
	return o ? thread_of(o) : NULL;
}

bool hlock_valid(const struct hlock *l)
{
	return !(atomic_load_explicit(&((struct hlock *)l)->word, memory_order_relaxed) & HLOCK_INVALID);
}

unsigned thread_locks_held(const struct thread *t)
{
	return atomic_load_explicit(&((struct thread *)t)->head.hl_count, memory_order_relaxed);
}

struct hlock *thread_lock(struct thread *t) { return &t->own_lock; }

void hlock_set_hint(struct hlock *l, enum hlock_hint h)
{
	l->hint = (unsigned)h;
}

/* The caller's count (its own field; relaxed atomics: killers read it). */
static inline void count_add(struct thread *self, int d)
{
	hlock_count_add_(&self->head, d);
}

static void stat_acquire(struct hlock *l, bool missed, uint64_t helps, uint64_t wait)
{
	irqkey_t k = arch_irq_save();
	struct lockstat_shard *sh = lockstat_open(l->cls);
	/* every acquisition is a hit (lockstat.h: hits are successful acquisitions, as a
	 * master lock's miss is followed by its hit); a contended one is also a miss */
	LOCKSTAT_ADD(sh->hits, 1);
	if (missed) {
		LOCKSTAT_ADD(sh->misses, 1);
		LOCKSTAT_ADD(sh->spins, helps);
		if (wait)
			lockstat_time_add(&sh->wait, wait);
	}
	lockstat_close(sh);
	arch_irq_restore(k);
}

/* The thread to donate to: the owner, or the end of its chain of helping. */
static struct thread *chain_end(struct thread *o, uint64_t me, bool *cycle)
{
	unsigned depth = 0;
	*cycle = false;
	while (depth < HLOCK_CHAIN_MAX) {
		struct hlock *h = atomic_load_explicit(&o->hl_helping, memory_order_acquire);
		if (!h)
			break;
		uint64_t w = atomic_load_explicit(&h->word, memory_order_acquire);
		uint64_t o2 = owner_of(w);
		if (!o2 || (w & HLOCK_INVALID) || thread_of(o2) == o)
			break;
		if (o2 == me) {
			*cycle = true;
			break;
		}
		o = thread_of(o2);
		depth++;
	}
	if (depth > __atomic_load_n(&hst[arch_cpu_id()].chain_max, __ATOMIC_RELAXED))
		__atomic_store_n(&hst[arch_cpu_id()].chain_max, depth, __ATOMIC_RELAXED);
	return o;
}

static int hlock_lock_slow(struct hlock *l, struct thread *self, uint64_t w)
{
	uint64_t me = self->head.id1;
	if (owner_of(w) == me)
		panic("hlock: thread '%s' locks '%s' (%p) again: helping locks do not nest on "
		      "themselves", self->name, cls_name(l), (void *)l);
	unsigned mode = lockstat_on();
	uint64_t t0 = lockstat_times_waits(mode) ? arch_cycles() : 0, helps = 0;
	unsigned cycles_seen = 0, spins_since_yield = 0;
	bool pushed = false;
	HST_INC(contended);
	for (;;) {
		if (w & HLOCK_INVALID) {
			atomic_store_explicit(&self->hl_helping, NULL, memory_order_relaxed);
			count_add(self, -1);
			HST_INC(invalid);
			return KSYNC_EINVAL;
		}
		uint64_t o = owner_of(w);
		if (o == me)
			break;	/* handed over by the releaser (we were on top of the stack) */
		if (!o) {
			/* free: only a thread not on the stack sees this (a release with helpers
			 * hands the lock to the top, it never frees it) */
			KASSERT(!pushed);
			if (atomic_compare_exchange_strong_explicit(&l->word, &w, w | me,
								    memory_order_acquire,
								    memory_order_acquire))
				break;
			continue;
		}
		if (!pushed) {
			/* our link first: the push CAS (release) publishes it to the popper */
			atomic_store_explicit(&self->hl_next, top_of(w), memory_order_relaxed);
			atomic_store_explicit(&self->hl_helping, l, memory_order_release);
			uint64_t want = (w & ~HLOCK_TOP_MASK) | (me << HLOCK_TOP_SHIFT);
			if (atomic_compare_exchange_strong_explicit(&l->word, &w, want,
								    memory_order_release,
								    memory_order_acquire)) {
				pushed = true;
				w = want;
			}
			continue;
		}
		/* on the stack, not the owner: help */
		bool cycle;
		struct thread *to = chain_end(thread_of(o), me, &cycle);
		if (cycle && ++cycles_seen > HLOCK_CYCLE_PANIC)
			panic("hlock: deadlock: thread '%s' waits for '%s' (owner '%s'), whose owner "
			      "waits (through helping) for a lock '%s' holds", self->name, cls_name(l),
			      thread_of(o)->name, self->name);
		if (!cycle)
			cycles_seen = 0;
		helps++;
		int r = sched_help(to);
		if (r == SCHED_HELP_RAN) {
			HST_INC(helps_local);
		} else {
			if (r == SCHED_HELP_REMOTE)
				HST_INC(helps_remote);
			else
				HST_INC(helps_not);
			/* the owner runs elsewhere (or will in a moment): watch the word a while
			 * before asking again (each request may cost the other CPU an IPI): a
			 * bounded count of steps, never a time (a spin's bound is what it
			 * does, not what the clock says while the host deschedules it) */
			for (unsigned i = 0; i < HLOCK_WATCH_STEPS &&
			     atomic_load_explicit(&l->word, memory_order_relaxed) == w; i++)
				arch_cpu_relax();
			/* spin, then give the vCPU back: with more vCPUs than host cores the
			 * owner's vCPU may be waiting for this one's core (arch_if.h) */
			if (atomic_load_explicit(&l->word, memory_order_relaxed) == w &&
			    arch_spin_yield_host())
				HST_INC(host_yields);
			/* still waiting after ~50 us (the owner's CPU may itself wait for a host
			 * time slice: hosted vCPUs outnumbering cores): let this CPU's others run
			 * meanwhile - we stay ready and come back at our level's turn */
			if (++spins_since_yield >= 25) {
				spins_since_yield = 0;
				thread_yield();
			}
		}
		w = atomic_load_explicit(&l->word, memory_order_acquire);
	}
	atomic_store_explicit(&self->hl_helping, NULL, memory_order_relaxed);
	self->head.hl_last = l;
	if (mode)
		stat_acquire(l, true, helps, t0 ? arch_cycles() - t0 : 0);
	return KSYNC_OK;
}

/* hlock.h's inline hlock_lock found the word taken (the count is already raised). */
int hlock_lock_slow_(struct hlock *l, uint64_t w)
{
	return hlock_lock_slow(l, cur(), w);
}

void hlock_stat_hit_(struct hlock *l)
{
	stat_acquire(l, false, 0, 0);
}

int hlock_trylock(struct hlock *l)
{
	struct thread *self = cur();
	KASSERT(self && !self->idle);
	uint64_t me = self->head.id1, w = 0;
	count_add(self, 1);
	if (atomic_compare_exchange_strong_explicit(&l->word, &w, me, memory_order_acquire,
						    memory_order_acquire)) {
		self->head.hl_last = l;
		return KSYNC_OK;
	}
	count_add(self, -1);
	if (w & HLOCK_INVALID)
		return KSYNC_EINVAL;
	if (owner_of(w) == me)
		panic("hlock: thread '%s' trylocks '%s' (%p), which it holds", self->name,
		      cls_name(l), (void *)l);
	return KSYNC_EBUSY;
}

static void misuse(const char *op, struct hlock *l, struct thread *self, uint64_t w)
{
	uint64_t o = owner_of(w);
	panic("hlock: thread '%s' %s lock '%s' (%p) %s%s%s", self->name, op, cls_name(l), (void *)l,
	      (w & HLOCK_INVALID) ? "which is invalid" : o ? "owned by '" : "which nobody holds",
	      o && !(w & HLOCK_INVALID) ? thread_of(o)->name : "",
	      o && !(w & HLOCK_INVALID) ? "'" : "");
}

/* After the word changed: the count, the boost, and whom this CPU runs (the hint). */
static void after_release(struct hlock *l, struct thread *self, struct thread *next_owner,
			  unsigned hint, bool count)
{
	/* the lock may be someone else's already: only its constant `locked` is read */
	if (count)
		count_add(self, -1);
	bool last = atomic_load_explicit(&self->head.hl_count, memory_order_relaxed) == 0;
	bool boosted = atomic_load_explicit(&self->head.boost, memory_order_relaxed) < SCHED_LEVELS;
	struct thread *locked = l->locked;
	if (hint == HLOCK_HINT_LOCKER) {
		if (last && boosted) {	/* the boost ends; the locker keeps the CPU this time */
			atomic_store_explicit(&self->head.boost, SCHED_LEVELS, memory_order_relaxed);
			atomic_store_explicit(&sched_cpus[arch_cpu_id()].cur_level,
					      sched_level_of(self), memory_order_relaxed);
		}
		return;
	}
	if (hint == HLOCK_HINT_LOCKED) {
		if (last && boosted) {
			atomic_store_explicit(&self->head.boost, SCHED_LEVELS, memory_order_relaxed);
			atomic_store_explicit(&sched_cpus[arch_cpu_id()].cur_level,
					      sched_level_of(self), memory_order_relaxed);
		}
		struct thread *t = locked ? locked : next_owner;
		if (t && t != self)
			(void)sched_switch_to(t);
		return;
	}
	/* PRIO: the highest of the releaser (now unboosted if this was its last lock), the
	 * new owner and the locked thread; a higher one that is ready anywhere else is
	 * found by the scheduler at the reschedule the unboost asks for */
	if (last && boosted)
		sched_unboost();
	unsigned mine = sched_eff_level(self);
	struct thread *best = NULL;
	unsigned bl = mine;
	if (next_owner && next_owner != self && sched_eff_level(next_owner) < bl) {
		best = next_owner;
		bl = sched_eff_level(next_owner);
	}
	if (locked && locked != self && sched_eff_level(locked) < bl)
		best = locked;
	if (best)
		(void)sched_switch_to(best);
}

/* hlock.h's inline hlock_unlock released the word (count lowered) and needs the rest:
 * a hint, a locked thread, or the end of a boost. */
void hlock_released_(struct hlock *l, unsigned hint)
{
	after_release(l, cur(), NULL, hint, false);
}

/* hlock.h's inline hlock_unlock did not release: helpers on the stack, a hint or a locked
 * thread, or misuse. */
void hlock_unlock_slow_(struct hlock *l)
{
	struct thread *self = cur();
	uint64_t me = self->head.id1;
	uint64_t w = atomic_load_explicit(&l->word, memory_order_acquire);
	/* the hint is the owner's: read and reset while we still own the lock (after the
	 * release CAS the next owner may set its own) */
	unsigned hint = l->hint;
	if (owner_of(w) == me && !(w & HLOCK_INVALID) && hint != HLOCK_HINT_PRIO)
		l->hint = HLOCK_HINT_PRIO;
	/* helpers on the stack (or misuse) */
	for (;;) {
		if (owner_of(w) != me || (w & HLOCK_INVALID))
			misuse("releases", l, self, w);
		uint64_t top = top_of(w);
		uint64_t want;
		if (!top) {
			want = 0;
		} else {
			/* only the owner pops: the top's link is stable while it is on top (a
			 * push changes the word; nobody else removes it). Acquire load of the word
			 * that showed it on top orders its link's store (its push, release). */
			uint64_t below = atomic_load_explicit(&thread_of(top)->hl_next, memory_order_relaxed);
			want = top | (below << HLOCK_TOP_SHIFT);
		}
		if (atomic_compare_exchange_strong_explicit(&l->word, &w, want, memory_order_acq_rel,
							    memory_order_acquire)) {
			if (top)
				HST_INC(handoffs);
			after_release(l, self, top ? thread_of(top) : NULL, hint, true);
			return;
		}
	}
}

void hlock_invalidate(struct hlock *l)
{
	struct thread *self = cur();
	uint64_t me = self->head.id1;
	uint64_t w = atomic_load_explicit(&l->word, memory_order_acquire);
	if (owner_of(w) == me && !(w & HLOCK_INVALID))
		l->hint = HLOCK_HINT_PRIO;	/* ours until the CAS below */
	for (;;) {
		if (owner_of(w) != me || (w & HLOCK_INVALID))
			misuse("invalidates", l, self, w);
		/* the stack is dropped whole: each helper sees INVALID at its next look and
		 * returns KSYNC_EINVAL (they never slept: nothing to wake but their turn) */
		if (atomic_compare_exchange_strong_explicit(&l->word, &w, HLOCK_INVALID,
							    memory_order_acq_rel, memory_order_acquire))
			break;
	}
	count_add(self, -1);
	if (atomic_load_explicit(&self->head.hl_count, memory_order_relaxed) == 0)
		sched_unboost();
}

void hlock_stats_get(struct hlock_stats *st)
{
	memset(st, 0, sizeof *st);
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		st->contended += __atomic_load_n(&hst[c].contended, __ATOMIC_RELAXED);
		st->helps_local += __atomic_load_n(&hst[c].helps_local, __ATOMIC_RELAXED);
		st->helps_remote += __atomic_load_n(&hst[c].helps_remote, __ATOMIC_RELAXED);
		st->helps_not += __atomic_load_n(&hst[c].helps_not, __ATOMIC_RELAXED);
		st->handoffs += __atomic_load_n(&hst[c].handoffs, __ATOMIC_RELAXED);
		uint64_t m = __atomic_load_n(&hst[c].chain_max, __ATOMIC_RELAXED);
		if (m > st->chain_max)
			st->chain_max = m;
		st->invalid_returns += __atomic_load_n(&hst[c].invalid, __ATOMIC_RELAXED);
		st->host_yields += __atomic_load_n(&hst[c].host_yields, __ATOMIC_RELAXED);
	}
}

void hlock_stats_reset(void)
{
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		__atomic_store_n(&hst[c].contended, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].helps_local, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].helps_remote, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].helps_not, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].handoffs, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].chain_max, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].invalid, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&hst[c].host_yields, 0, __ATOMIC_RELAXED);
	}
}

/* ---- synchronous messages (section 4.3: "the sender locks the receiver, wakes it up,
 * and sets the hint to Value 1 before releasing the lock") ---------------------------------- */

int hipc_send(struct thread *rcv, uint64_t msg)
{
	if (!rcv)
		return KSYNC_EINVAL;
	if (rcv == cur())
		return KSYNC_EDEADLK;
	if (hlock_lock(&rcv->own_lock) != KSYNC_OK)
		return KSYNC_ESRCH;
	/* under the receiver's lock: its waiting flag and message slot */
	if (!rcv->ipc_waiting) {
		hlock_unlock(&rcv->own_lock);
		return KSYNC_EBUSY;
	}
	rcv->ipc_waiting = false;
	rcv->ipc_msg = msg;
	/* the wakeup's CAS orders the message before the receiver's consuming sleep */
	int rc = sched_wakeup(rcv, SCHED_COND_IPC);
	hlock_set_hint(&rcv->own_lock, HLOCK_HINT_LOCKED);
	hlock_unlock(&rcv->own_lock);
	return rc;
}

uint64_t hipc_recv(void)
{
	struct thread *self = cur();
	(void)hlock_lock(&self->own_lock);
	self->ipc_waiting = true;
	hlock_unlock(&self->own_lock);
	(void)sched_sleep(SCHED_COND_IPC);
	/* written by the sender before its wakeup CAS, which our sleep's CAS consumed */
	return self->ipc_msg;
}
