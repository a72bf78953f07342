/*
 * thread.c - threads and the scheduler's machinery common to both schedulers (issue 10;
 * docs/sched.md): the thread table, create / exit / join, the switch and its second
 * half (releasing the thread switched away from), the per-CPU idle threads, preemption
 * by the clock (quantum) and by IPI, signal delivery, the priority table, software
 * feedback on the quantum, and the kernel's side of the port contract
 * (kernel_ap_entry, kernel_fault_note).
 *
 * Papers: Massalin & Pu 1991, "Threads" (a thread table entry per thread; the switch
 * routine in two halves, switch-out saving the context and switch-in loading it; the
 * clock interrupt ends the quantum), "Scheduling and dispatching" (the priority table
 * and its global counter; here one counter per CPU, since each CPU dispatches from its
 * own queues), "Thread operations" (signal: handlers pushed on the thread's stack of
 * pending signals, run by the thread as if it had called them), fine-grain scheduling
 * (software feedback on the quantum). The state word and the marking protocol are the
 * schedulers' (rq-lockfree.c, rq-locked.c).
 *
 * Preemption (issue 10 item 2): the clock tick (or a resched IPI) sets kcpu.resched and
 * marks the scheduler's soft interrupt pending. Every interrupt scheme already holds a
 * soft interrupt while the level is raised or a crit_enter section runs and runs it when
 * the section ends; so the switch happens exactly there: at the end of the handler when
 * the interrupted code was preemptible (sched_intr_exit -> arch_frame_call ->
 * sched_preempt), or at the end of the lowering that ran the soft interrupt
 * (sched_lowered). A thread switched out by preemption resumes on the same CPU
 * (SCHED_PREEMPTED): it may have been between computing a per-CPU pointer and using it
 * (crit_enter's `c = spl_self(); c->crit_flag = 1`), and the CPU's spl state when it
 * resumes is what it left (every switch happens at IPL_NONE outside sections). A thread
 * that gave the CPU up by a call (yield, sleep, join) may resume anywhere.
 *
 * Context: the switch runs with IRQs off (arch_irq_save), in thread context; the thread
 * switched away from is released by the one switched to (after the switch: its context
 * is saved, ONCPU may drop), as Linux's finish_task_switch.
 */
#include "sched_impl.h"
#include "intr.h"
#include "sched_hooks.h"
#include "mm.h"
#include "mlock.h"	/* mlock_assert_none: no sleeping with a master lock held */
#include <ksync/errors.h>
#include <ksync/atomic.h>

/* The resched IPI's vector (class 0xe: above every level's class but IPL_HIGH's). */
#define SCHED_VEC_RESCHED 0xe8

struct sched_cpu sched_cpus[MAX_CPUS];
struct thread sched_threads[SCHED_MAX_THREADS];
uint8_t sched_table[SCHED_TABLE_MAX];
unsigned sched_table_len;

static struct thread idle_threads[MAX_CPUS];	/* one per CPU, never in the table */
/* Slots in use, bit i = sched_threads[i]: fetch_or / fetch_and (acq_rel: a slot's
 * fields are initialised after the allocating CAS, and a freed slot's last reads happen
 * before the freeing and-not). */
static _Atomic uint64_t slot_used[SCHED_MAX_THREADS / 64];
/* Dead detached threads whose stacks wait to be freed in thread context (IRQs on; the
 * reaper may run with IRQs off, where x86's unmap cannot shoot TLBs down): bit i set by
 * the reaper (release: after its last access to the slot), taken by exchange (acquire)
 * in thread_create / sched_stop. */
static _Atomic uint64_t zombie_mask[SCHED_MAX_THREADS / 64];

static const struct sched_ops *ops = &sched_ops_lockfree;
/* between sched_start and sched_stop: the BSP stores (release), any CPU loads (acquire) */
static _Atomic bool sched_on;
/* TSC ticks per clock tick: written by sched_start before it publishes sched_on and the
 * CPUs' `active` (release), read by the CPUs it starts (after their acquire); saves a
 * 64-bit division at every switch */
static uint64_t tick_cycles;
static struct thread *boot_thread;
static _Atomic unsigned rr_home;	/* round-robin home CPU for new threads */
static void sched_tick(void *arg);
static void resched_here(void);
static void sched_softint(void *arg);
/* Initialised once, never rewritten: a clock signal already queued in the host when a
 * run's clock stopped may still run its handler on an AP (hosted) */
static struct intr_source sched_clock = { .name = "sched-clock", .kind = INTR_CLOCK,
					  .level = IPL_CLOCK, .fn = sched_tick };
static struct intr_source sched_soft = { .name = "sched-resched", .kind = INTR_SOFT,
					 .level = IPL_SOFT, .fn = sched_softint };
static _Atomic uint64_t sig_delivered, sig_discarded;

#ifndef KSYNC_SCHED_DEFAULT_LOCKED
#define KSYNC_SCHED_DEFAULT_LOCKED 0
#endif

unsigned sched_cpu_id(void) { return arch_cpu_id(); }
unsigned sched_ncpus(void) { return arch_ncpus(); }
bool sched_affine(const struct thread *t, unsigned cpu)
{
	/* relaxed atomic: a stale walker may read a slot being re-created (slot_reset) */
	return cpu < 64 && (__atomic_load_n(&t->affinity, __ATOMIC_RELAXED) >> cpu & 1);
}
static struct sched_cpu *sc_this(void) { return &sched_cpus[arch_cpu_id()]; }

const char *sched_default_name(void) { return KSYNC_SCHED_DEFAULT_LOCKED ? "locked" : "lockfree"; }
const char *sched_name(void) { return ops->name; }
struct mlock *sched_master_lock(void) { return sched_running() && ops == &sched_ops_locked ? sched_mutex() : NULL; }
bool sched_running(void) { return atomic_load_explicit(&sched_on, memory_order_acquire); }

/* ---- the priority table ------------------------------------------------------------ */

void sched_table_default(void)
{
	/* counter i (1-based): level = number of trailing zeros, the last level takes the
	 * rest: L=4 -> 0 1 0 2 0 1 0 3 (level 0 every 2nd switch, 1 every 4th, 2 every 8th) */
	unsigned n = 1u << (SCHED_LEVELS - 1);
	for (unsigned i = 0; i < n; i++) {
		unsigned c = i + 1, l = (unsigned)__builtin_ctz(c);
		__atomic_store_n(&sched_table[i], (uint8_t)(l < SCHED_LEVELS - 1 ? l : SCHED_LEVELS - 1),
				 __ATOMIC_RELAXED);
	}
	__atomic_store_n(&sched_table_len, n, __ATOMIC_RELAXED);
}

int sched_table_set(const uint8_t *levels, unsigned n)
{
	if (!levels || n == 0 || n > SCHED_TABLE_MAX)
		return KSYNC_EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (levels[i] >= SCHED_LEVELS)
			return KSYNC_EINVAL;
	for (unsigned i = 0; i < n; i++)
		__atomic_store_n(&sched_table[i], levels[i], __ATOMIC_RELAXED);
	__atomic_store_n(&sched_table_len, n, __ATOMIC_RELAXED);
	return KSYNC_OK;
}

unsigned sched_table_get(uint8_t *levels, unsigned max)
{
	unsigned n = __atomic_load_n(&sched_table_len, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < n && i < max; i++)
		levels[i] = __atomic_load_n(&sched_table[i], __ATOMIC_RELAXED);
	return n;
}

/* The levels this CPU tries at its next dispatch: the table's entry for its counter,
 * then the lower levels, then the higher ones (unused time falls to lower levels). */
unsigned sched_level_order(unsigned cpu, unsigned *order)
{
	struct sched_cpu *sc = &sched_cpus[cpu];
	unsigned len = __atomic_load_n(&sched_table_len, __ATOMIC_RELAXED);
	unsigned first = __atomic_load_n(&sched_table[sc->counter % len], __ATOMIC_RELAXED);
	unsigned k = 0;
	sc->counter++;
	for (unsigned l = first; l < SCHED_LEVELS; l++)
		order[k++] = l;
	for (unsigned l = 0; l < first; l++)
		order[k++] = l;
	return k;
}

/* ---- slots ----------------------------------------------------------------------------- */

static struct thread *slot_alloc(void)
{
	for (unsigned w = 0; w < SCHED_MAX_THREADS / 64; w++) {
		uint64_t u = atomic_load_explicit(&slot_used[w], memory_order_relaxed);
		while (~u) {
			unsigned b = (unsigned)__builtin_ctzll(~u);
			/* acq_rel: the previous owner's last accesses before our init */
			if (atomic_compare_exchange_weak_explicit(&slot_used[w], &u, u | (1ull << b),
								  memory_order_acq_rel,
								  memory_order_relaxed))
				return &sched_threads[w * 64 + b];
		}
	}
	return NULL;
}

static void wake_req_drop(struct thread *t);

static void slot_free(struct thread *t)
{
	unsigned i = t->id;
	wake_req_drop(t);	/* no handed-off wakeup outlives the thread into the slot's next */
	/* release: every access to the slot before it can be allocated again */
	atomic_fetch_and_explicit(&slot_used[i / 64], ~(1ull << (i % 64)), memory_order_release);
}

static bool slot_live(const struct thread *t)
{
	if (t < sched_threads || t >= sched_threads + SCHED_MAX_THREADS)
		return false;
	unsigned i = (unsigned)(t - sched_threads);
	return atomic_load_explicit(&slot_used[i / 64], memory_order_acquire) >> (i % 64) & 1;
}

/* A slot's fields for a new thread. Not memset: a dispatcher walking a stale bit may
 * still load this slot's state word and affinity (it then fails its CAS), so those two
 * are written with atomics; the rest nobody reads before the thread is published.
 *
 * The state stays DEAD until insert_new publishes the thread (its store of READY): a
 * holder of a stale pointer to the slot's previous thread may still call an operation
 * on it - wait4's waker reads the parent's `waiter` under the process-table lock and
 * wakes it after the unlock, when the parent may have exited and its slot been taken by
 * a fork's new thread. With state 0 here, such a wakeup found a live, sleeping-looking
 * thread and queued it before arch_context_init had built its context: an idle CPU then
 * switched to a saved rsp of 0 (seen: a #PF at CR2 0 in arch_context_switch_fp, thread
 * 'pid441' being created, test_user smp2-locked; likely also the hosted ASan build's
 * rare SIGSEGV at 0 in hosted_switch_int). DEAD makes every operation answer ESRCH until
 * the thread is whole; after the publication a stale wakeup is a spurious one, which
 * every sleep loop tolerates (it checks its condition again). Test:
 * sched_slot_dead_until_published. */
static void slot_reset(struct thread *t, unsigned id)
{
	/* relaxed: nothing is published by this store; DEAD was the slot's state already
	 * when it was last freed (or 0 for a never-used slot, unknown to every pointer) */
	atomic_store_explicit(&t->state, SCHED_DEAD, memory_order_relaxed);
	__atomic_store_n(&t->affinity, 0, __ATOMIC_RELAXED);
	t->id = id;
	t->head.id1 = id + 1;
	sched_level_store(t, 0);	/* sleep_to_ok reads it racily */
	t->flags = 0;
	t->fn = NULL;
	t->arg = NULL;
	t->stack = NULL;
	t->name[0] = 0;
	__atomic_store_n(&t->home, 0, __ATOMIC_RELAXED);	/* wake_handoff reads it racily */
	atomic_store_explicit(&t->joiner, NULL, memory_order_relaxed);
	atomic_store_explicit(&t->reaped, 0, memory_order_relaxed);
	t->sig_chain = NULL;
	t->sig_running = false;
	t->rq_next = t->rq_prev = NULL;
	__atomic_store_n(&t->dispatches, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->run_ticks, 0, __ATOMIC_RELAXED);
	t->t_in = 0;
	__atomic_store_n(&t->fill_pct, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&t->fill_arg, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&t->quantum, 0, __ATOMIC_RELAXED);
	t->idle = false;
	t->in_preempt = false;
	atomic_store_explicit(&t->head.hl_count, 0, memory_order_relaxed);
	atomic_store_explicit(&t->hl_helping, NULL, memory_order_relaxed);
	atomic_store_explicit(&t->hl_next, 0, memory_order_relaxed);
	atomic_store_explicit(&t->head.boost, SCHED_LEVELS, memory_order_relaxed);
	t->head.hl_last = NULL;
	hlock_init(&t->own_lock, &hlock_thread_class, t);
	t->ipc_msg = 0;
	t->ipc_waiting = false;
	memset(&t->ctx, 0, sizeof t->ctx);
}

static void thread_free(struct thread *t)
{
	if (t->stack) {
		arch_context_destroy(&t->ctx);
		arch_stack_free(t->stack, SCHED_STACK_BYTES);
		t->stack = NULL;
	}
	slot_free(t);
}

/* Free the stacks of dead detached threads (thread context, IRQs on). */
static void zombies_free(void)
{
	for (unsigned w = 0; w < SCHED_MAX_THREADS / 64; w++) {
		uint64_t z = atomic_exchange_explicit(&zombie_mask[w], 0, memory_order_acquire);
		for (; z; z &= z - 1)
			thread_free(&sched_threads[w * 64 + (unsigned)__builtin_ctzll(z)]);
	}
}

void thread_reclaim(void) { zombies_free(); }

/* ---- signals ------------------------------------------------------------------------------ */

/* Drop the pending signals of a dead thread (counted: nothing lost silently). */
static void sigs_discard(struct thread *t)
{
	struct lf_stack_node *n = t->sig_chain;	/* taken by a delivery the kill ended */
	t->sig_chain = NULL;
	if (!n && lf_stack_pop_all_mpmc(&t->sigs, &n) != KSYNC_OK)
		return;
	for (;;) {
		if (!n && lf_stack_pop_all_mpmc(&t->sigs, &n) != KSYNC_OK)
			return;
		struct lf_stack_node *next = lf_stack_next(n);
		kfree(lf_stack_entry(n, struct sched_sig, link));
		atomic_fetch_add_explicit(&sig_discarded, 1, memory_order_relaxed);
		n = next;
	}
}

/* The running thread runs its pending signals (Massalin & Pu: the scheduler builds the
 * call frames; here the thread calls them on its own stack at its switch-in, IRQs on). */
static void sigs_deliver(void)
{
	struct thread *t = kcpu_this()->sched_cur;
	if (!t || t->idle || t->sig_running)
		return;	/* a delivery further down this stack (preempted in a handler) goes on */
	t->sig_running = true;
	while (atomic_load_explicit(&t->state, memory_order_acquire) & SCHED_SIGPEND) {
		/* acq_rel: clear the flag before taking the stack, so a push after the take
		 * sets it again (a record is pushed before its flag) */
		atomic_fetch_and_explicit(&t->state, ~SCHED_SIGPEND, memory_order_acq_rel);
		struct lf_stack_node *n;
		if (lf_stack_pop_all_mpmc(&t->sigs, &n) != KSYNC_OK)
			continue;
		/* in the order they were sent; kept in the thread while they run, so a kill
		 * that ends the thread between two handlers leaves the rest to sigs_discard */
		t->sig_chain = lf_stack_reverse(n);
		while ((n = t->sig_chain) != NULL) {
			t->sig_chain = lf_stack_next(n);
			struct sched_sig *s = lf_stack_entry(n, struct sched_sig, link);
			thread_sig_fn fn = s->fn;
			void *arg = s->arg;
			kfree(s);
			atomic_fetch_add_explicit(&sig_delivered, 1, memory_order_relaxed);	/* begun */
			fn(arg);
		}
	}
	t->sig_running = false;
}

uint64_t sched_signals_delivered(void) { return atomic_load_explicit(&sig_delivered, memory_order_relaxed); }
uint64_t sched_signals_discarded(void) { return atomic_load_explicit(&sig_discarded, memory_order_relaxed); }

/* ---- reaping -------------------------------------------------------------------------------- */

/* t became DEAD (by a release or a kill of a thread off every CPU). IRQs off or on. */
void sched_reap(struct thread *t)
{
	/* a kill racing with the thread's own acquire (the count was 0 at thread_kill) */
	if (atomic_load_explicit(&t->head.hl_count, memory_order_relaxed))
		panic("thread '%s' died holding %u helping lock(s) (last: '%s'): killed while it "
		      "acquired one", t->name, atomic_load_explicit(&t->head.hl_count, memory_order_relaxed),
		      t->head.hl_last && t->head.hl_last->cls ? t->head.hl_last->cls->name : "?");
	sigs_discard(t);
	bool detached = t->flags & THREAD_DETACHED;
	/* Dekker with thread_join (joiner store, then DEAD load, both seq_cst): DEAD was
	 * stored before this by a release store (locked scheduler, under sched_lock) or an
	 * acq_rel CAS (lock-free), neither of which orders a later load. The fence orders
	 * that store before the joiner load: either we see the joiner or it sees DEAD.
	 * Without it the locked scheduler lost a joiner's wakeup about once in 200 boots of
	 * sched_ops_pairs on hosted (x86 store buffer: the DEAD store still buffered while
	 * both loads read the old values). */
	atomic_thread_fence(memory_order_seq_cst);
	struct thread *j = atomic_load_explicit(&t->joiner, memory_order_seq_cst);
	if (j)
		sched_wakeup(j, SCHED_COND_JOIN);	/* it waits for `reaped`: its slot lives */
	/* Our last access to t: after it the slot may be freed and reused (join frees it
	 * once it sees `reaped`; a detached one is freed from the zombie mask). release:
	 * every access above happens before the freeing. */
	if (detached)
		atomic_fetch_or_explicit(&zombie_mask[t->id / 64], 1ull << (t->id % 64),
					 memory_order_release);
	else
		atomic_store_explicit(&t->reaped, 1, memory_order_release);
}

/* ---- the switch ---------------------------------------------------------------------------- */

static void quantum_start(struct sched_cpu *sc, struct thread *t)
{
	unsigned q = __atomic_load_n(&t->quantum, __ATOMIC_RELAXED);
	if (!q)
		q = SCHED_QUANTUM_TICKS;
	unsigned (*fill_pct)(void *) = __atomic_load_n(&t->fill_pct, __ATOMIC_ACQUIRE);
	if (fill_pct) {	/* software feedback: a full input queue earns a longer quantum */
		unsigned f = fill_pct(__atomic_load_n(&t->fill_arg, __ATOMIC_RELAXED));
		if (f > 75 && q < 8 * SCHED_QUANTUM_TICKS)
			q *= 2;
		else if (f < 25 && q > SCHED_QUANTUM_TICKS)
			q /= 2;
	}
	__atomic_store_n(&t->quantum, q, __ATOMIC_RELAXED);
	/* the quantum is time, not a count of ticks: ticks held by a section still end it */
	sc->quantum_end = arch_cycles() + q * tick_cycles;
}

/* The second half of a switch, on the thread switched to (IRQs off): give back the
 * thread switched away from. */
static void switch_finish(void)
{
	unsigned cpu = arch_cpu_id();
	struct sched_cpu *sc = &sched_cpus[cpu];
	struct thread *p = sc->prev, *cur = kcpu_this()->sched_cur;
	cur->t_in = arch_cycles();
	if (p && !p->idle && ops->release(p, cpu, sc->prev_preempted))
		sched_reap(p);
	sc->prev = NULL;
}

/* Switch from the running thread to `next` (marked ONCPU for this CPU, or this CPU's
 * idle thread). IRQs off. Returns when something switches back to the caller. */
static void switch_to(struct thread *prev, struct thread *next, bool preempted)
{
	unsigned cpu = arch_cpu_id();
	struct sched_cpu *sc = &sched_cpus[cpu];
	uint64_t now = arch_cycles();
	/* A thread giving the CPU up by its own call (a sleep, a yield, an exit, a helping
	 * lock's directed switch) answers every reschedule asked of it before: the flag is
	 * not handed to `next`, whose start (or return) takes a pending one (thread_start).
	 * Seen otherwise: a reschedule left from the locker's run preempted the lower thread
	 * its LOCKED hint had just switched to (hlock_switch_hints, TSan build). The idle
	 * thread keeps it: its end-of-poll look asks for one on purpose (idle_loop). A
	 * preemption cleared it already (preempt_loop). */
	if (!prev->idle && !preempted)
		kcpu_this()->resched = 0;
	if (prev->stack && !arch_stack_ok(prev->stack, SCHED_STACK_BYTES))
		panic("stack overflow: thread '%s' wrote below its stack (canary gone)", prev->name);
	SCHED_STAT_ADD(prev->run_ticks, now - prev->t_in);
	SCHED_STAT_INC(next->dispatches);
	SCHED_STAT_INC(sc->dispatches);
	if (!next->idle)
		quantum_start(sc, next);
	/* a boost left after the last helping lock's release (a helper donated just after
	 * the unboost) ends when the thread leaves the CPU: its own field, it is running */
	if (!prev->idle && atomic_load_explicit(&prev->head.hl_count, memory_order_relaxed) == 0 &&
	    atomic_load_explicit(&prev->head.boost, memory_order_relaxed) < SCHED_LEVELS)
		atomic_store_explicit(&prev->head.boost, SCHED_LEVELS, memory_order_relaxed);
	atomic_store_explicit(&sc->cur_level, next->idle ? SCHED_LEVELS : sched_eff_level(next),
			      memory_order_relaxed);
	sc->prev = prev;
	sc->prev_preempted = preempted;
	kcpu_this()->sched_cur = next;
	kcpu_this()->proc_cur = next->uctx ? arch_uctx_owner(next->uctx) : NULL;
	if (prev->uctx || next->uctx)	/* a user thread: its address space, FS, kernel stack */
		arch_uctx_switch(prev->uctx, next->uctx);
	if ((prev->flags | next->flags) & THREAD_FP)
		arch_context_switch_fp(&prev->ctx, &next->ctx);
	else
		arch_context_switch(&prev->ctx, &next->ctx);
	switch_finish();	/* we are `prev` again, perhaps on another CPU */
}

/* A helper on another CPU asked this CPU to run a helping-lock owner (sched_help): the
 * picks offer it at its boosted level, ahead of that level's queue, while it still holds
 * a helping lock (the donation ends with its last release). IRQs off. */
struct thread *sched_donee(unsigned cpu, unsigned level)
{
	struct sched_cpu *sc = &sched_cpus[cpu];
	struct thread *d = atomic_load_explicit(&sc->donee, memory_order_acquire);
	if (!d)
		return NULL;
	if (atomic_load_explicit(&d->head.hl_count, memory_order_relaxed) == 0 ||
	    (atomic_load_explicit(&d->state, memory_order_acquire) & (SCHED_DEAD | SCHED_KILL))) {
		atomic_compare_exchange_strong_explicit(&sc->donee, &d, NULL, memory_order_acq_rel,
							memory_order_relaxed);
		return NULL;
	}
	if (sched_eff_level(d) != level)
		return NULL;
	SCHED_STAT_INC(sc->donations);
	return d;
}

/* Give this CPU to the next thread, or keep the running one if it may run and nothing
 * else is ready. IRQs off, in thread context. */
static void schedule(bool preempted)
{
	KASSERT(!arch_irq_enabled());
	unsigned cpu = arch_cpu_id();
	struct sched_cpu *sc = &sched_cpus[cpu];
	struct thread *prev = kcpu_this()->sched_cur;
	bool stolen = false;
	struct thread *next = ops->pick(cpu, prev->idle ? NULL : prev, &stolen);
	if (stolen)
		SCHED_STAT_INC(sc->steals);
	if (next == prev) {	/* its level's turn and its own: it goes on */
		SCHED_STAT_INC(prev->dispatches);
		SCHED_STAT_INC(sc->dispatches);
		quantum_start(sc, prev);
		atomic_store_explicit(&sc->cur_level, sched_eff_level(prev), memory_order_relaxed);
		return;
	}
	if (!next) {
		next = sc->idle;
		if (prev == next)
			return;
	}
	if (preempted)
		SCHED_STAT_INC(sc->preemptions);
	switch_to(prev, next, preempted);
}

/* Preemption (the clock or an IPI asked for a switch; the interrupted code is
 * preemptible). A thread inside its preemption loop is never preempted again from a
 * handler (in_preempt): an interrupt arriving while the loop runs with IRQs on (a signal
 * handler, or a resched IPI storm from thread operations) only leaves kcpu.resched set
 * for the loop to see, so the thread's stack holds at most one interrupted frame. */
static void preempt_loop(void)
{
	/* IRQs off in and out; the thread is the one running, which stays on this CPU
	 * while it is preempted (SCHED_PREEMPTED), so kcpu_this() is the same each round */
	for (;;) {
		struct kcpu *kc = kcpu_this();
		if (!kc->resched || !atomic_load_explicit(&sched_cpus[arch_cpu_id()].active, memory_order_acquire))
			return;
		kc->resched = 0;
		schedule(true);
		struct thread *self = kcpu_this()->sched_cur;
		if (atomic_load_explicit(&self->state, memory_order_relaxed) & SCHED_SIGPEND) {
			arch_irq_enable();
			sigs_deliver();
			arch_irq_disable();
		}
	}
}

/* From arch_frame_call, at the end of an interrupt (IRQs on): returns with IRQs OFF, so
 * the port's return to the interrupted code (x86 iretq's RFLAGS; hosted: the signal
 * frame) turns them back on only once the handler's frame is gone. */
void sched_preempt_frame(void);
void sched_preempt_frame(void)
{
	arch_irq_disable();
	struct thread *self = kcpu_this()->sched_cur;
	if (!self || self->idle || self->in_preempt)
		return;
	struct spl_cpu *c = spl_self();
	if (spl_effective(c) != IPL_NONE || c->intr_depth != 0) {
		/* Posted when the interrupted code was preemptible, taken later inside a
		 * section: the hosted TSan build runs frame calls at its poll points
		 * (arch_cpu_relax), and a thread that spun there on a master lock's ticket
		 * was switched out holding the ticket - every later taker spun forever.
		 * Ask again, if a switch is still wanted: the section's end runs it. */
		if (kcpu_this()->resched &&
		    atomic_load_explicit(&sched_cpus[arch_cpu_id()].active, memory_order_acquire))
			resched_here();
		return;
	}
	self->in_preempt = true;
	preempt_loop();
	self->in_preempt = false;
}

/* From thread context at the end of a lowering (IRQs on); returns with IRQs on. */
static void sched_preempt(void)
{
	irqkey_t k = arch_irq_save();
	struct thread *self = kcpu_this()->sched_cur;
	if (self && !self->idle && !self->in_preempt) {
		self->in_preempt = true;
		preempt_loop();
		self->in_preempt = false;
	}
	arch_irq_restore(k);
}

void sched_intr_exit_slow(struct trapframe *tf, unsigned s)
{
	struct spl_cpu *c = spl_self();
	struct thread *cur = kcpu_this()->sched_cur;
	if (s != IPL_NONE || c->intr_depth != 0 || spl_effective(c) != IPL_NONE || !cur || cur->idle ||
	    cur->in_preempt || !atomic_load_explicit(&sched_cpus[arch_cpu_id()].active, memory_order_acquire))
		return;
	(void)arch_frame_call(tf, sched_preempt_frame);	/* false: the soft interrupt waits */
}

void sched_lowered_slow(void)
{
	struct spl_cpu *c = spl_self();
	struct thread *cur = kcpu_this()->sched_cur;
	if (c->intr_depth != 0 || spl_effective(c) != IPL_NONE || !arch_irq_enabled() || !cur ||
	    cur->idle || cur->in_preempt || !atomic_load_explicit(&sched_cpus[arch_cpu_id()].active, memory_order_acquire))
		return;
	sched_preempt();
}

/* Ask this CPU to switch at its next preemption point (IRQs off, any context): the flag
 * and the soft interrupt that every scheme holds until the section ends. */
static void resched_here(void);
static void resched_here(void)
{
	kcpu_this()->resched = 1;
	spl_self()->pending |= 1u << sched_soft.bit;	/* IRQs off: no handler interleaves */
}

static void sched_softint(void *arg) { (void)arg; }	/* its running is the point */

/* The clock's rate for the next sched_start (0: SCHED_HZ) and CPU 0's tick hook. */
static unsigned clock_hz;
static void (*_Atomic tick_hook)(uint64_t deadline);

int sched_set_clock_hz(unsigned hz)
{
	if (sched_running())
		return KSYNC_EBUSY;
	if (hz && (hz < 100 || hz > 100000))
		return KSYNC_EINVAL;
	__atomic_store_n(&clock_hz, hz, __ATOMIC_RELAXED);
	return KSYNC_OK;
}

void sched_set_tick_hook(void (*fn)(uint64_t deadline))
{
	atomic_store_explicit(&tick_hook, fn, memory_order_release);
}

static void sched_tick(void *arg)
{
	(void)arg;
	if (arch_cpu_id() == 0) {
		/* acquire: what the installer prepared before the hook */
		void (*h)(uint64_t) = atomic_load_explicit(&tick_hook, memory_order_acquire);
		if (h)
			h(kcpu_this()->clock_fired);
	}
	struct sched_cpu *sc = sc_this();
	struct thread *cur = kcpu_this()->sched_cur;
	SCHED_STAT_INC(sc->ticks);
	sched_timers_tick(arch_cpu_id());	/* sleepers due wake first: they may preempt */
	if (cur && !cur->idle && (int64_t)(arch_cycles() - sc->quantum_end) >= 0)
		resched_here();
}

static void resched_ipi(struct trapframe *tf, void *arg)
{
	(void)arg;
	struct spl_cpu *c = spl_self();
	arch_lapic_eoi();	/* a raw vector: its handler ends it (x86: else the LAPIC
				   holds every vector of its class and below for good) */
	resched_here();
	/* an IPI is no spl source: the interrupted level is the CPU's current one */
	sched_intr_exit(tf, spl_effective(c));
}

/* A thread of `level` became ready on `cpu`'s queue: wake or preempt that CPU if it is
 * idle or runs a lower level (a higher number). IRQs either way. */
void sched_kick(unsigned cpu, unsigned level, unsigned id)
{
	struct sched_cpu *sc = &sched_cpus[cpu];
	if (!atomic_load_explicit(&sc->active, memory_order_acquire))
		return;
	/* Dekker with idle_loop (idle_waiting store, then the queue scan), no fence needed:
	 * the lock-free insert is a seq_cst RMW (so seq_cst before this seq_cst load); the
	 * locked insert and the idler's scan both hold sched_lock, whose order decides. */
	bool idle = atomic_load_explicit(&sc->idle_waiting, memory_order_seq_cst);
	unsigned cl = atomic_load_explicit(&sc->cur_level, memory_order_relaxed);
	if (!idle && cl <= level)
		return;
	/* an idle CPU still polling finds the thread by its next pick: an IPI would only make
	 * it run the handler first (the polled wakeup took ~2,250 TSC ticks instead of ~700
	 * on hosted when the IPI won that race). Mark the poll as relied on (idle_loop looks
	 * again if what it found was another thread). */
	if (idle) {
		unsigned p = atomic_load_explicit(&sc->idle_polling, memory_order_seq_cst);
		while (p != SCHED_POLL_NONE) {
			unsigned want = p == SCHED_POLL_ON ? 2 + id : SCHED_POLL_MANY;
			if (p == SCHED_POLL_MANY ||
			    atomic_compare_exchange_weak_explicit(&sc->idle_polling, &p, want,
								  memory_order_seq_cst,
								  memory_order_seq_cst))
				return;
		}
	}
	if (cpu == arch_cpu_id()) {
		irqkey_t k = arch_irq_save();
		resched_here();
		arch_irq_restore(k);
		/* in thread context at IPL_NONE the soft interrupt runs at once (softint rules) */
		if (arch_irq_enabled() && spl_self()->intr_depth == 0 && spl_effective(spl_self()) == IPL_NONE)
			sched_lowered_slow();
		return;
	}
	__atomic_fetch_add(&sc->ipis, 1, __ATOMIC_RELAXED);	/* any CPU sends */
	arch_send_ipi(cpu, SCHED_VEC_RESCHED);
}

/* Make `cpu` switch at its next preemption point whatever it runs (suspend, kill and
 * signal of a running thread: "forced off by IPI"). */
void sched_force(unsigned cpu)
{
	if (cpu == arch_cpu_id()) {
		irqkey_t k = arch_irq_save();
		resched_here();
		arch_irq_restore(k);
		return;
	}
	__atomic_fetch_add(&sched_cpus[cpu].ipis, 1, __ATOMIC_RELAXED);	/* any CPU sends */
	arch_send_ipi(cpu, SCHED_VEC_RESCHED);
}

/* ---- idle --------------------------------------------------------------------------------- */

/* The idle thread found t (marked for this CPU): note the find (sched_idle_trace) and
 * run it; returns when this CPU comes back to idle. IRQs off. */
static void idle_run(struct sched_cpu *sc, struct thread *t, bool stolen, unsigned how,
		     uint64_t at, uint64_t gap)
{
	atomic_store_explicit(&sc->idle_waiting, 0, memory_order_relaxed);
	if (stolen)
		SCHED_STAT_INC(sc->steals);
	/* this CPU's own fields (relaxed), the sequence last (release): a reader that sees
	 * it changed reads the fields of this find or a later one (it checks again) */
	__atomic_store_n(&sc->found_at, at, __ATOMIC_RELAXED);
	__atomic_store_n(&sc->found_step_gap, gap, __ATOMIC_RELAXED);
	__atomic_store_n(&sc->found_how, how, __ATOMIC_RELAXED);
	__atomic_store_n(&sc->found_seq, __atomic_load_n(&sc->found_seq, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	switch_to(sc->idle, t, false);
}

/* ---- wakeups handed to a polling idle CPU (issue 27 item 2) ----------------------------------
 *
 * (Lock-free scheduler only: see wake_handoff.) A cross-CPU wakeup done by the waker writes the sleeper's state word and its home CPU's
 * queue counter and bit (lines the idle CPU last held: its sleep and its polls), then
 * the idle CPU's poll reads them back: measured ~4.5 one-way cache-line transfers per
 * wakeup on the hosted port (the line_cross row of sched_ops), 2,200 TSC ticks (850 ns)
 * when the host put the two vCPUs in different core complexes. Handed off, the waker
 * writes one word the idler polls (wake_req, on the line of idle_polling that it reads
 * anyway) and the idler performs the same ops->wakeup on its own cache: the state word
 * and its queues are local there. The waker reads the state word once (only a sleeper
 * is handed off: a DEAD thread still returns KSYNC_ESRCH, a running one just gets its
 * flag) and the home CPU.
 *
 * Dekker with the end of the poll (seq_cst, all on wake_req and idle_polling): the waker
 * sets wake_req (CAS from 0), then loads idle_polling; the idler exchanges idle_polling
 * to NONE, then looks at wake_req. If the waker's load comes first it sees the poll on
 * and leaves the request: the idler's later look takes it. If the exchange comes first
 * the waker sees NONE and takes its request back by CAS - or finds it taken (the idler
 * looked at a poll step before), which is done. Either way the wakeup happens once.
 * The idler takes a request by CAS to request | BUSY and clears the word after
 * ops->wakeup returned, so a freer of the slot (wake_req_drop) waits for a wakeup in
 * progress and drops one not started: none reaches the slot's next thread. */

/* Performs a wakeup handed to this CPU, if there is one. IRQs off, idle thread. The look
 * is a read-modify-write (fetch_or of BUSY) rather than a load: a load would bring the
 * line shared and the CAS that takes the request would then wait for the waker's copy to
 * be invalidated, a second transfer; the RMW holds the line exclusive, so the waker's CAS
 * takes it once and our next step takes it back once, with the request in it. */
static void wake_take(struct sched_cpu *sc)
{
	/* seq_cst: the waker's request (and what it wrote before) before our wakeup */
	unsigned r = atomic_fetch_or_explicit(&sc->wake_req, SCHED_WAKE_BUSY, memory_order_seq_cst);
	if (r & SCHED_WAKE_BUSY)
		return;		/* never: only this CPU sets BUSY, and clears it below */
	if (r) {
		(void)ops->wakeup(&sched_threads[SCHED_WAKE_ID(r)], SCHED_COND(SCHED_WAKE_K(r)));
		SCHED_STAT_INC(sc->wake_handoffs);
	}
	/* release: the wakeup done before a freer waiting in wake_req_drop goes on; and the
	 * word free for the next request */
	atomic_store_explicit(&sc->wake_req, 0, memory_order_release);
}

/* The waker's side: true if the wakeup was handed to t's home CPU, which polls idle. */
static bool wake_handoff(struct thread *t, uint64_t cond)
{
	if (cond & (cond - 1))
		return false;	/* one condition flag per request */
	if (!arch_idle_poll_ticks())
		return false;	/* this port's idle CPUs never poll (x86: hlt, an IPI wakes) */
	/* the lock-free scheduler's only: the locked one's wakeup takes the master lock
	 * wherever it runs, and handed off it measured no faster with the vCPUs in two core
	 * complexes (1,807-1,911 vs 1,821-1,925 ticks) and slower within one (703-768 vs
	 * 599-690), hosted AMD EPYC */
	if (ops != &sched_ops_lockfree)
		return false;
	/* only a sleeper: neither ready, running, queued nor being inserted, not stopped,
	 * dying or dead (acquire: the home its last release stored before dropping ONCPU) */
	uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
	if (s & (SCHED_READY | SCHED_ONCPU | SCHED_LINKED | SCHED_INS | SCHED_SUSPEND |
		 SCHED_STOPPED | SCHED_KILL | SCHED_DEAD | SCHED_PREEMPTED))
		return false;
	/* stable while it sleeps; if it changed meanwhile (another waker, it ran and was
	 * re-homed) the request merely goes to another CPU, whose ops->wakeup is the same */
	unsigned h = __atomic_load_n(&t->home, __ATOMIC_RELAXED);
	if (h >= arch_ncpus() || h == arch_cpu_id())
		return false;
	struct sched_cpu *sc = &sched_cpus[h];
	/* the CAS first, then idle_polling from the same line: loading it first would
	 * bring the line shared and make the CAS wait for a second transfer */
	unsigned req = SCHED_WAKE_REQ(t->id, (unsigned)__builtin_ctzll(cond) - SCHED_COND_SHIFT), z = 0;
	if (!atomic_compare_exchange_strong_explicit(&sc->wake_req, &z, req, memory_order_seq_cst,
						     memory_order_relaxed))
		return false;	/* the word holds another request, or BUSY: the usual path */
	if (atomic_load_explicit(&sc->idle_polling, memory_order_seq_cst) != SCHED_POLL_NONE &&
	    atomic_load_explicit(&sc->active, memory_order_acquire))
		return true;	/* the poll is on: its step or its end takes it */
	/* the poll ended before our load: take the request back, unless the idler took it */
	return !atomic_compare_exchange_strong_explicit(&sc->wake_req, &req, 0, memory_order_seq_cst,
							memory_order_relaxed);
}

/* Before t's slot is freed: no CPU may still perform a wakeup handed over for it. */
static void wake_req_drop(struct thread *t)
{
	for (unsigned c = 0; c < arch_ncpus() && c < MAX_CPUS; c++) {
		struct sched_cpu *sc = &sched_cpus[c];
		unsigned r = atomic_load_explicit(&sc->wake_req, memory_order_acquire);
		while (r && SCHED_WAKE_ID(r) == t->id) {
			if (r & SCHED_WAKE_BUSY) {	/* in progress: wait for its end */
				arch_cpu_relax();
				r = atomic_load_explicit(&sc->wake_req, memory_order_acquire);
				continue;
			}
			if (atomic_compare_exchange_weak_explicit(&sc->wake_req, &r, 0,
								  memory_order_seq_cst,
								  memory_order_acquire))
				break;
		}
	}
}

/* A waker relied on this poll to find thread `id` (sched_kick wrote 2 + id into
 * idle_polling): take that thread by the scheduler's marking (ops->take, a helper's
 * directed switch) instead of walking the queues. The walk read the queue counter, the
 * queue word and the state word one after the other - three lines the waker had just
 * written, each a cross-CPU transfer (~60-170 ns on the AMD EPYC host) - and, running
 * while the waker inserted, pulled those lines away from it; this reads the one word the
 * waker's kick wrote and the thread's state. `*tried` is the hint that failed last (not
 * tried again: the locked scheduler's take holds its master lock). NULL: no hint, or the
 * thread cannot run here now (the pick then looks as before). IRQs off. */
static struct thread *poll_hinted(struct sched_cpu *sc, unsigned cpu, unsigned *tried)
{
	/* acquire: the waker's insert (its CAS on the state word, LINKED) came before its
	 * CAS of this word */
	unsigned p = atomic_load_explicit(&sc->idle_polling, memory_order_acquire);
	if (p < 2 || p == SCHED_POLL_MANY || p == *tried || p - 2 >= SCHED_MAX_THREADS)
		return NULL;
	struct thread *t = ops->take(&sched_threads[p - 2], cpu);
	if (!t) {
		*tried = p;
		return NULL;
	}
	/* as the pick that would have found it: the round robin of its level on this CPU
	 * continues after it (without this a thread sharing its level ran twice in a row
	 * before the other: spl_sched_resched_waits_for_section_end in the ASan suite) */
	if (t->home == cpu)	/* ours now (ONCPU): home and level stay while we hold it */
		sc->cursor[sched_level_of(t)] = t->id;
	SCHED_STAT_INC(sc->poll_hints);
	return t;
}

static _Noreturn void idle_loop(void)
{
	for (;;) {
		unsigned cpu = arch_cpu_id();
		struct sched_cpu *sc = &sched_cpus[cpu];
		if (!atomic_load_explicit(&sc->active, memory_order_acquire)) {
			arch_wait_for_irq();
			continue;
		}
		irqkey_t k = arch_irq_save();
		kcpu_this()->resched = 0;
		/* seq_cst: the flag before the queue scan (a waker inserts, then reads it) */
		atomic_store_explicit(&sc->idle_waiting, 1, memory_order_seq_cst);
		bool stolen = false;
		struct thread *t = ops->pick(cpu, NULL, &stolen);
		if (t) {
			idle_run(sc, t, stolen, SCHED_FOUND_PICK, arch_cycles(), 0);
			arch_irq_restore(k);
			continue;
		}
		/* poll a while first (arch_idle_poll_ticks: hosted only): a wakeup that
		 * inserts meanwhile is found by the next pick, no interrupt needed */
		uint64_t poll = arch_idle_poll_ticks();
		if (poll) {
			uint64_t step = arch_cycles(), prev = step, until = step + poll;
			unsigned how = SCHED_FOUND_POLL, tried = 0;
			atomic_store_explicit(&sc->idle_polling, SCHED_POLL_ON, memory_order_seq_cst);
			/* A waker that inserted after the pick above but loaded idle_polling before
			 * this store saw no poll: it left no hint (it sent an IPI). Its thread is
			 * queued, and a later waker that sees the poll on names only its own: taking
			 * that one by its hint would skip the first, whatever their levels (seen: a
			 * level-3 thread ran its whole section while a level-2 one that should
			 * have preempted it sat queued, hlock_priority_inversion_bounded, about 1
			 * boot in 10 after hlock_exclusion_and_handoff). So one pick after the store
			 * (seq_cst, Dekker with sched_kick's insert-then-load): it finds every
			 * such thread; from here on each queued thread was named, or made MANY. */
			t = ops->pick(cpu, NULL, &stolen);
			while (!t && (int64_t)(step - until) < 0) {
				arch_irq_restore(k);	/* handlers and IPIs run meanwhile */
				arch_cpu_relax();
				k = arch_irq_save();
				prev = step;
				step = arch_cycles();
				if (!atomic_load_explicit(&sc->active, memory_order_acquire))
					break;
				wake_take(sc);
				t = poll_hinted(sc, cpu, &tried);
				if (t)
					how = SCHED_FOUND_HINT;
				else
					t = ops->pick(cpu, NULL, &stolen);
			}
			/* no longer polling: a waker from now on kicks; one more look covers the
			 * ones that relied on the poll (Dekker, seq_cst RMWs) */
			unsigned was = atomic_exchange_explicit(&sc->idle_polling, SCHED_POLL_NONE,
								memory_order_seq_cst);
			/* a wakeup handed over before the exchange is ours (wake_handoff's Dekker):
			 * performed now, before the last look finds its thread */
			wake_take(sc);
			if (!t && atomic_load_explicit(&sc->active, memory_order_acquire)) {
				t = ops->pick(cpu, NULL, &stolen);
				how = SCHED_FOUND_LAST;
				prev = step;
				step = arch_cycles();
			}
			/* a waker relied on the poll for another thread than the one found: look
			 * again at the first chance, as the IPI it did not send would have made us */
			if (t && was != SCHED_POLL_ON && was != SCHED_POLL_NONE && was != 2 + t->id)
				resched_here();
			if (t) {
				idle_run(sc, t, stolen, how, arch_cycles(), step - prev);
				arch_irq_restore(k);
				continue;
			}
		}
		arch_wait_for_irq();	/* IRQs on and wait, atomically; returns IRQs on */
		atomic_store_explicit(&sc->idle_waiting, 0, memory_order_relaxed);
		SCHED_STAT_INC(sc->idle_wakeups);
		(void)k;
	}
}

static void idle_entry(void *arg)
{
	(void)arg;
	switch_finish();
	idle_loop();
}

void kernel_ap_entry(void)
{
	unsigned cpu = arch_cpu_id();
	struct thread *t = &idle_threads[cpu];
	t->idle = true;
	t->id = SCHED_MAX_THREADS + cpu;
	ksnprintf(t->name, sizeof t->name, "idle/%u", cpu);
	arch_context_adopt(&t->ctx);
	panic_set_thread_namer(thread_name);	/* messages below us name threads through it */
	kcpu_this()->sched_cur = t;
	/* release: the idle thread's fields before sched_start sees it */
	__atomic_store_n(&sched_cpus[cpu].idle, t, __ATOMIC_RELEASE);
	idle_loop();
}

/* ---- threads ------------------------------------------------------------------------------- */

/* A thread switched in by a voluntary switch (its start here, the return of a sleep or a
 * yield) may find a reschedule asked meanwhile: the idle loop's "look again" (a waker
 * named another thread than the one its poll found), or a waker whose thread became
 * ready above us while the pick that chose us scanned the levels (a lock-free pick is
 * no snapshot: it read level 1 empty, then a level-1 and a level-2 thread were
 * inserted, and it found the level-2 one). Nothing would take that reschedule before
 * the next interrupt - a clock tick, up to a quantum later - so each of those paths
 * takes it once IRQs are on again (sched_lowered: at IPL_NONE outside handlers only).
 * Seen without it: a level-2 thread ran its whole critical section while the level-1
 * thread it had just woken waited (sched_idle_poll_keeps_level_order,
 * hlock_priority_inversion_bounded). */
static void thread_start(void *arg)
{
	struct thread *t = arg;
	switch_finish();
	arch_irq_enable();
	sched_lowered();	/* a reschedule asked while we were switched in */
	sigs_deliver();
	t->fn(t->arg);
	thread_exit();
}

/* Tests only (kernel/tests/test_sched.c): called by thread_create_ with the new thread
 * after its slot is set up and before insert_new publishes it - the window in which a
 * stale handle's operations must find it DEAD. NULL otherwise; written by the test's
 * thread (release) before it creates threads, read (acquire) here. */
void (*sched_test_create_window)(struct thread *t);

static int thread_create_(struct thread **out, thread_fn fn, void *arg, unsigned level,
			  uint64_t affinity, const char *name, unsigned flags, struct arch_uctx *uctx);

int thread_create(struct thread **out, thread_fn fn, void *arg, unsigned level,
		  uint64_t affinity, const char *name, unsigned flags)
{
	return thread_create_(out, fn, arg, level, affinity, name, flags, NULL);
}

int thread_create_user(struct thread **out, thread_fn fn, void *arg, unsigned level,
		       uint64_t affinity, const char *name, struct arch_uctx *uctx)
{
	if (!uctx)
		return KSYNC_EINVAL;
	return thread_create_(out, fn, arg, level, affinity, name, THREAD_FP | THREAD_DETACHED, uctx);
}

struct arch_uctx *thread_uctx(const struct thread *t) { return t->uctx; }

void thread_drop_uctx(void)
{
	irqkey_t k = arch_irq_save();	/* no switch between the field and the port's state */
	struct thread *self = kcpu_this()->sched_cur;
	struct arch_uctx *u = self->uctx;
	self->uctx = NULL;
	kcpu_this()->proc_cur = NULL;
	if (u)
		arch_uctx_switch(u, NULL);
	arch_irq_restore(k);
}

static int thread_create_(struct thread **out, thread_fn fn, void *arg, unsigned level,
			  uint64_t affinity, const char *name, unsigned flags, struct arch_uctx *uctx)
{
	if (!out || !fn || !name || level >= SCHED_LEVELS || (flags & ~(THREAD_FP | THREAD_DETACHED)))
		return KSYNC_EINVAL;
	uint64_t online = sched_online_mask();
	if (!(affinity & online))
		return KSYNC_EINVAL;
	if (!sched_running())
		return KSYNC_EBUSY;
	zombies_free();
	struct thread *t = slot_alloc();
	if (!t)
		return KSYNC_ENOMEM;
	void *stack = arch_stack_alloc(SCHED_STACK_BYTES);
	if (!stack) {
		slot_free(t);
		return KSYNC_ENOMEM;
	}
	unsigned id = (unsigned)(t - sched_threads);
	slot_reset(t, id);
	sched_level_store(t, level);	/* sleep_to_ok: racy reader */
	t->flags = flags;
	__atomic_store_n(&t->affinity, affinity & online, __ATOMIC_RELAXED);
	t->fn = fn;
	t->arg = arg;
	t->stack = stack;
	t->uctx = uctx;
	size_t i = 0;
	for (; name[i] && i + 1 < sizeof t->name; i++)
		t->name[i] = name[i];
	t->name[i] = 0;
	lf_stack_init(&t->sigs);
	/* home: round-robin over the CPUs it may use */
	unsigned h = atomic_fetch_add_explicit(&rr_home, 1, memory_order_relaxed), n = arch_ncpus();
	for (unsigned k = 0; k < n; k++) {
		unsigned c = (h + k) % n;
		if (sched_affine(t, c)) {
			__atomic_store_n(&t->home, c, __ATOMIC_RELAXED);
			break;
		}
	}
	arch_context_init(&t->ctx, stack, SCHED_STACK_BYTES, thread_start, t, flags & THREAD_FP);
	void (*hook)(struct thread *) = __atomic_load_n(&sched_test_create_window, __ATOMIC_ACQUIRE);
	if (hook)
		hook(t);
	*out = t;
	ops->insert_new(t);	/* publishes the thread (CAS / lock): everything above first */
	return KSYNC_OK;
}

void thread_exit(void)
{
	arch_irq_disable();
	struct thread *self = kcpu_this()->sched_cur;
	KASSERT(self && !self->idle && self != boot_thread);
	if (atomic_load_explicit(&self->head.hl_count, memory_order_relaxed))
		panic("thread '%s' exits holding %u helping lock(s) (last: '%s')", self->name,
		      atomic_load_explicit(&self->head.hl_count, memory_order_relaxed),
		      self->head.hl_last && self->head.hl_last->cls ? self->head.hl_last->cls->name : "?");
	ops->exit_mark(self);
	schedule(false);
	panic("thread '%s' ran after its exit", self->name);
}

int thread_join(struct thread *t)
{
	struct thread *self = thread_self();
	if (!slot_live(t) || (t->flags & THREAD_DETACHED))
		return KSYNC_EINVAL;
	if (t == self)
		return KSYNC_EDEADLK;
	atomic_store_explicit(&t->joiner, self, memory_order_seq_cst);
	while (!(atomic_load_explicit(&t->state, memory_order_seq_cst) & SCHED_DEAD))
		sched_sleep(SCHED_COND_JOIN);
	/* DEAD is published before its reaper is done with the slot (its signals, its
	 * joiner's wakeup): wait for the reaper's last access (acquire) */
	while (!atomic_load_explicit(&t->reaped, memory_order_acquire))
		thread_yield();
	/* DEAD is set by the release after the switch away from t completed, or by a
	 * killer while t was off every CPU: its stack is no longer in use */
	thread_free(t);
	return KSYNC_OK;
}

uint64_t sched_online_mask(void)
{
	unsigned n = arch_ncpus();
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

int thread_set_affinity_self(uint64_t mask)
{
	uint64_t online = sched_online_mask();
	if (!(mask & online))
		return KSYNC_EINVAL;
	struct thread *self = sched_running() ? kcpu_this()->sched_cur : NULL;
	if (!self || self->idle)
		return KSYNC_EBUSY;
	/* relaxed: every reader loads it relaxed (sched_affine); the yields below order it
	 * for this thread's own dispatch */
	__atomic_store_n(&self->affinity, mask & online, __ATOMIC_RELAXED);
	while (!sched_affine(self, arch_cpu_id()))
		thread_yield();		/* its release moves it (rq-lockfree/rq-locked) */
	return KSYNC_OK;
}

uint64_t thread_affinity(const struct thread *t)
{
	return __atomic_load_n(&t->affinity, __ATOMIC_RELAXED);
}

void thread_yield(void)
{
	mlock_assert_none("thread_yield", "(see the backtrace)");
	irqkey_t k = arch_irq_save();
	schedule(false);
	arch_irq_restore(k);
	sched_lowered();	/* see thread_start */
	sigs_deliver();
}

/* ---- helping (hlock.c is the lock; this is the scheduler's part) --------------------------- */

static bool preemptible_here(void)
{
	struct spl_cpu *c = spl_self();
	return arch_irq_enabled() && c->intr_depth == 0 && spl_effective(c) == IPL_NONE;
}

/* Lower t's boost to lvl if that is higher priority (helpers on several CPUs: CAS). */
static void boost_to(struct thread *t, unsigned lvl)
{
	unsigned b = atomic_load_explicit(&t->head.boost, memory_order_relaxed);
	while (lvl < b && !atomic_compare_exchange_weak_explicit(&t->head.boost, &b, lvl, memory_order_relaxed,
								 memory_order_relaxed))
		;
}

unsigned sched_first_affine(const struct thread *t)
{
	for (unsigned c = 0; c < arch_ncpus(); c++)
		if (sched_affine(t, c))
			return c;
	return 0;
}

int sched_help(struct thread *t)
{
	struct thread *self = kcpu_this()->sched_cur;
	KASSERT(self && !self->idle && t != self);
	if (!preemptible_here())
		panic("sched_help: thread '%s' helps from a masked section (IRQs off or IPL raised): "
		      "helping switches", self->name);
	boost_to(t, sched_eff_level(self));
	irqkey_t k = arch_irq_save();
	unsigned cpu = arch_cpu_id();
	/* Same CPU, or pulled here (Fiasco.OC: the owner migrates to its helper and runs on
	 * the helper's time): we go back to our queue, still ready, and run again when our
	 * level's turn comes - the owner's preemption or its hand-off brings us back. The
	 * look at the state word first spares the locked scheduler's sched_lock while the
	 * owner runs elsewhere (a spinning helper asks every ~2 us). */
	uint64_t s0 = atomic_load_explicit(&t->state, memory_order_acquire);
	bool may = !(s0 & SCHED_ONCPU) && (s0 & SCHED_LINKED) && (s0 & SCHED_READY) &&
		   sched_may_run(t, s0, cpu);
	if (may && ops->take(t, cpu)) {
		switch_to(self, t, false);
		arch_irq_restore(k);
		sigs_deliver();
		return SCHED_HELP_RAN;
	}
	uint64_t s = atomic_load_explicit(&t->state, memory_order_acquire);
	arch_irq_restore(k);
	if ((s & (SCHED_DEAD | SCHED_STOPPED | SCHED_SUSPEND)) || !(s & SCHED_READY))
		return SCHED_HELP_NOT;
	/* It runs elsewhere, or may run only elsewhere (preempted there: bound; or not
	 * allowed here): ask that CPU to run it first (remote donation). */
	unsigned c;
	if (s & (SCHED_ONCPU | SCHED_PREEMPTED))
		c = SCHED_CPU_OF(s);
	else if (!sched_affine(t, cpu))
		c = sched_first_affine(t);
	else
		return SCHED_HELP_NOT;	/* being inserted (INS): a moment */
	if (c == cpu || c >= arch_ncpus())
		return SCHED_HELP_NOT;
	struct sched_cpu *sc = &sched_cpus[c];
	struct thread *d = atomic_load_explicit(&sc->donee, memory_order_acquire);
	bool posted = false;
	if (d != t) {
		/* The slot holds another request: replace it if that one is over (its thread
		 * holds nothing), needs no donation (it runs: a waiter that is itself spinning
		 * counts as holding while it acquires), or is for a lower priority than ours;
		 * else it goes first and we ask again. */
		if (d && atomic_load_explicit(&d->head.hl_count, memory_order_relaxed) &&
		    !(atomic_load_explicit(&d->state, memory_order_relaxed) & SCHED_ONCPU) &&
		    sched_eff_level(d) <= sched_eff_level(self))
			return SCHED_HELP_REMOTE;
		/* release: t's boost (above) before the request */
		if (!atomic_compare_exchange_strong_explicit(&sc->donee, &d, t, memory_order_acq_rel,
							     memory_order_acquire))
			return SCHED_HELP_REMOTE;
		posted = true;
	}
	/* Not running there: make that CPU look now - once per posting. Asking again while
	 * the request stands only floods it with IPIs (its pick offers the donee at every
	 * switch anyway): QEMU -smp 8 on two host cores sent millions, and the nested
	 * interrupt frames overflowed a thread's stack. */
	if (!(s & SCHED_ONCPU) && posted)
		sched_force(c);
	return SCHED_HELP_REMOTE;
}

static bool op_target_ok(struct thread *t);

int sched_wake_help(struct thread *t, uint64_t cond)
{
	struct thread *self = kcpu_this()->sched_cur;
	KASSERT(self && !self->idle && t != self);
	if (!ops->wake_take || !(cond & SCHED_COND_ALL) || !op_target_ok(t) || !preemptible_here())
		return SCHED_HELP_NOT;
	boost_to(t, sched_eff_level(self));
	irqkey_t k = arch_irq_save();
	if (!ops->wake_take(t, cond, arch_cpu_id())) {
		arch_irq_restore(k);
		return SCHED_HELP_NOT;
	}
	switch_to(self, t, false);
	arch_irq_restore(k);
	sigs_deliver();
	return SCHED_HELP_RAN;
}

unsigned thread_eff_level(const struct thread *t) { return sched_eff_level(t); }

bool sched_switch_to(struct thread *t)
{
	struct thread *self = kcpu_this()->sched_cur;
	if (!self || self->idle || t == self || !preemptible_here())
		return false;
	irqkey_t k = arch_irq_save();
	if (!ops->take(t, arch_cpu_id())) {
		arch_irq_restore(k);
		return false;
	}
	switch_to(self, t, false);
	arch_irq_restore(k);
	sigs_deliver();
	return true;
}

void sched_unboost(void)
{
	struct thread *self = kcpu_this()->sched_cur;
	if (!self || atomic_load_explicit(&self->head.boost, memory_order_relaxed) >= SCHED_LEVELS)
		return;
	irqkey_t k = arch_irq_save();
	atomic_store_explicit(&self->head.boost, SCHED_LEVELS, memory_order_relaxed);
	/* relaxed: the locked scheduler may change our level meanwhile (thread_set_level):
	 * cur_level is a waker's hint, and the next pick reads the level again */
	atomic_store_explicit(&sched_cpus[arch_cpu_id()].cur_level, sched_level_of(self),
			      memory_order_relaxed);
	resched_here();		/* whoever is ready at a higher priority than ours runs now */
	arch_irq_restore(k);
	if (preemptible_here())
		sched_lowered_slow();
}

KERNEL_HOT struct thread *thread_self(void) { return kcpu_this()->sched_cur; }
const char *thread_name(const struct thread *t) { return t ? t->name : "?"; }
unsigned thread_id(const struct thread *t) { return t->id; }
uint64_t thread_state(const struct thread *t) { return atomic_load_explicit(&((struct thread *)t)->state, memory_order_acquire); }
unsigned thread_level(const struct thread *t) { return sched_level_of(t); }
unsigned sched_queued(unsigned *entries) { return ops->queued(entries); }
uint64_t thread_dispatches(const struct thread *t) { return __atomic_load_n(&t->dispatches, __ATOMIC_RELAXED); }
uint64_t thread_run_ticks(const struct thread *t) { return __atomic_load_n(&t->run_ticks, __ATOMIC_RELAXED); }
unsigned thread_quantum(const struct thread *t) { return __atomic_load_n(&t->quantum, __ATOMIC_RELAXED); }

void thread_set_input(struct thread *t, unsigned (*fill_pct)(void *), void *arg)
{
	/* the thread may be running: arg before fn (release), read fn then arg (acquire) */
	__atomic_store_n(&t->fill_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&t->fill_pct, fill_pct, __ATOMIC_RELEASE);
}

/* ---- operations (the schedulers do the marking) -------------------------------------------- */

static bool op_target_ok(struct thread *t)
{
	return slot_live(t) && !t->idle;
}

int thread_suspend(struct thread *t)
{
	if (!op_target_ok(t))
		return KSYNC_ESRCH;
	/* a suspended lock owner would stop its helpers: refused while it holds any */
	if (atomic_load_explicit(&t->head.hl_count, memory_order_acquire))
		return KSYNC_EBUSY;
	int rc = ops->suspend(t);
	if (rc == KSYNC_OK && t == thread_self())
		thread_yield();		/* the release finds SUSPEND and stops it */
	return rc;
}

int thread_resume(struct thread *t)
{
	if (!op_target_ok(t))
		return KSYNC_ESRCH;
	return ops->resume(t);
}

int thread_kill(struct thread *t)
{
	if (!op_target_ok(t) || t == boot_thread)
		return op_target_ok(t) ? KSYNC_EINVAL : KSYNC_ESRCH;
	/* Fiasco's check (section 4.3): a thread holding helping locks is not deleted */
	if (atomic_load_explicit(&t->head.hl_count, memory_order_acquire))
		return KSYNC_EBUSY;
	if (t == thread_self())
		thread_exit();
	int rc = ops->kill(t);
	if (rc == 1) {		/* it was off every CPU: DEAD now */
		sched_reap(t);
		rc = KSYNC_OK;
	}
	return rc;
}

/* The scheduler moves t (sched_ops set_level, IRQs off so that `self` stays true: the
 * caller is not switched out between the test and the change). The caller's own change
 * then names its CPU's level for wakers (cur_level) and, if it lowered itself, asks for a
 * switch, which it takes once IRQs are on and nothing holds it back (as sched_unboost);
 * the same look takes a same-CPU kick for a queued thread raised above the caller. */
int thread_set_level(struct thread *t, unsigned level)
{
	if (level >= SCHED_LEVELS)
		return KSYNC_EINVAL;
	if (!op_target_ok(t))
		return KSYNC_ESRCH;
	irqkey_t k = arch_irq_save();
	struct thread *self = kcpu_this()->sched_cur;
	unsigned cpu = arch_cpu_id();
	bool me = t == self;
	unsigned was = me ? sched_eff_level(self) : 0;
	int rc = ops->set_level(t, level, cpu, me);
	if (rc == KSYNC_OK && me) {
		unsigned now = sched_eff_level(self);
		atomic_store_explicit(&sched_cpus[cpu].cur_level, now, memory_order_relaxed);
		if (now > was)
			resched_here();	/* whoever is ready above our new level runs now */
	}
	arch_irq_restore(k);
	if (preemptible_here())
		sched_lowered();
	return rc;
}

int thread_signal(struct thread *t, thread_sig_fn fn, void *arg)
{
	if (!fn)
		return KSYNC_EINVAL;
	if (!op_target_ok(t))
		return KSYNC_ESRCH;
	if (atomic_load_explicit(&t->state, memory_order_acquire) & (SCHED_DEAD | SCHED_KILL))
		return KSYNC_ESRCH;
	struct sched_sig *s = kmalloc(sizeof *s);
	if (!s)
		return KSYNC_ENOMEM;
	s->fn = fn;
	s->arg = arg;
	lf_stack_push_mpmc(&t->sigs, &s->link);	/* the record before its flag */
	int rc = ops->sigpend(t);
	if (rc != KSYNC_OK) {
		/* it died meanwhile, perhaps after its reaping emptied the stack: empty it
		 * again (counted as discarded; pop_all races only with other pop_alls) */
		struct lf_stack_node *n;
		if (lf_stack_pop_all_mpmc(&t->sigs, &n) == KSYNC_OK)
			for (; n; ) {
				struct lf_stack_node *next = lf_stack_next(n);
				kfree(lf_stack_entry(n, struct sched_sig, link));
				atomic_fetch_add_explicit(&sig_discarded, 1, memory_order_relaxed);
				n = next;
			}
		return rc;
	}
	if (t == thread_self())
		sigs_deliver();
	return KSYNC_OK;
}

/* ---- sleep and wakeup (Hohmuth & Haertig Fig. 3; the marking is the scheduler's) ----------- */

/* May the sleeper hand its CPU straight to `to` without breaking priorities? Only if `to`
 * runs at least as high as the sleeper did: with hard priorities nothing ready here was
 * above the running thread, so nothing ready is above `to` either (a thread of the same
 * level may wait one turn, as in a round robin). A thread of higher priority that became
 * ready meanwhile has asked for a reschedule (sched_kick): it runs at `to`'s first
 * preemption point, as it would have preempted the sleeper. `to`'s level is read
 * atomically: it may be a stale slot being reset (slot_reset). IRQs off. */
static bool sleep_to_ok(struct thread *self, struct thread *to)
{
	unsigned b = atomic_load_explicit(&to->head.boost, memory_order_relaxed);
	unsigned l = sched_level_of(to);
	return (b < l ? b : l) <= sched_eff_level(self);
}

/* sched_sleep, and sched_sleep_to: the first switch away goes to `to` when it may run
 * here now (the scheduler's own marking, ops->take) and sleep_to_ok, else to the
 * scheduler's pick. */
static uint64_t sleep_common(uint64_t cond, struct thread *to)
{
	mlock_assert_none("sched_sleep", "(see the backtrace)");
	struct thread *me = thread_self();
	if (me && atomic_load_explicit(&me->head.hl_count, memory_order_relaxed))
		panic("thread '%s' sleeps inside a helping-lock critical section (lock '%s', %u held): "
		      "critical sections with helping must be wait-free (Hohmuth & Haertig 3.3)",
		      me->name, me->head.hl_last && me->head.hl_last->cls ? me->head.hl_last->cls->name : "?",
		      atomic_load_explicit(&me->head.hl_count, memory_order_relaxed));
	for (;;) {
		irqkey_t k = arch_irq_save();
		struct thread *self = kcpu_this()->sched_cur;
		uint64_t got = ops->sleep_prepare(self, cond);
		if (!got) {
			/* READY is clear: the release takes it off. `to` may be a stale slot
			 * (its thread gone meanwhile): take reads only what a dispatcher walking
			 * a stale queue bit reads, and marks only a queued runnable thread */
			if (to && to != self && sleep_to_ok(self, to) && ops->take(to, arch_cpu_id()))
				switch_to(self, to, false);
			else
				schedule(false);
			to = NULL;	/* once: a spurious switch-in asks the scheduler */
		}
		arch_irq_restore(k);
		sched_lowered();	/* see thread_start */
		sigs_deliver();
		if (got)
			return got;
		/* woken (or a spurious switch-in): consume the flag on the next round */
	}
}

uint64_t sched_sleep(uint64_t cond)
{
	return sleep_common(cond, NULL);
}

uint64_t sched_sleep_to(uint64_t cond, struct thread *to)
{
	return sleep_common(cond, to);
}

int sched_wakeup(struct thread *t, uint64_t cond)
{
	if (!op_target_ok(t) || !(cond & SCHED_COND_ALL))
		return op_target_ok(t) ? KSYNC_EINVAL : KSYNC_ESRCH;
	if (wake_handoff(t, cond))
		return KSYNC_OK;
	return ops->wakeup(t, cond);
}

/* ---- start / stop -------------------------------------------------------------------------- */

static void clock_on(void *arg)
{
	(void)arg;
	sched_cpus[arch_cpu_id()].quantum_end = arch_cycles() + SCHED_QUANTUM_TICKS * tick_cycles;
	unsigned hz = __atomic_load_n(&clock_hz, __ATOMIC_RELAXED);
	(void)clock_start(&sched_clock, hz ? hz : SCHED_HZ);
}

static void clock_off(void *arg)
{
	(void)arg;
	clock_stop();
}

int sched_start(const char *which)
{
	if (sched_running())
		return KSYNC_EBUSY;
	char arg[16];
	if (!which)	/* the command line's sched= overrides the build's SCHED= */
		which = cmdline_get("sched", arg, sizeof arg) ? arg : sched_default_name();
	if (!strcmp(which, "lockfree"))
		ops = &sched_ops_lockfree;
	else if (!strcmp(which, "locked"))
		ops = &sched_ops_locked;
	else
		return KSYNC_EINVAL;
	KASSERT(arch_cpu_id() == 0);
	tick_cycles = arch_tsc_hz() / SCHED_HZ;
	if (!__atomic_load_n(&sched_table_len, __ATOMIC_RELAXED))
		sched_table_default();
	unsigned n = arch_ncpus();
	/* CPU 0's idle thread needs a stack of its own (the boot context becomes "boot") */
	struct thread *idle0 = &idle_threads[0];
	if (!idle0->stack) {
		void *st = arch_stack_alloc(SCHED_STACK_BYTES);
		if (!st)
			return KSYNC_ENOMEM;
		idle0->stack = st;
	}
	idle0->idle = true;
	idle0->id = SCHED_MAX_THREADS;
	ksnprintf(idle0->name, sizeof idle0->name, "idle/0");
	arch_context_init(&idle0->ctx, idle0->stack, SCHED_STACK_BYTES, idle_entry, NULL, false);
	sched_cpus[0].idle = idle0;
	/* every AP must have entered kernel_ap_entry (its idle thread); right after boot an
	 * AP may still be on its way there */
	uint64_t t0 = arch_cycles();
	for (unsigned c = 1; c < n; c++)
		while (!__atomic_load_n(&sched_cpus[c].idle, __ATOMIC_ACQUIRE)) {
			if (arch_cycles() - t0 > 5 * arch_tsc_hz()) {
				kprintf("sched_start: cpu %u never entered kernel_ap_entry\n", c);
				return KSYNC_EBUSY;
			}
			arch_cpu_relax();
		}
	zombies_free();
	for (unsigned c = 0; c < n; c++) {
		struct sched_cpu *sc = &sched_cpus[c];
		sc->prev = NULL;
		sc->counter = 0;
		for (unsigned l = 0; l < SCHED_LEVELS; l++)
			sc->cursor[l] = 0;
		atomic_store_explicit(&sc->cur_level, SCHED_LEVELS, memory_order_relaxed);
	}
	sched_stats_reset();
	ops->reset();
	sched_timers_init();

	struct thread *b = slot_alloc();
	KASSERT(b);
	slot_reset(b, (unsigned)(b - sched_threads));
	sched_level_store(b, 0);
	__atomic_store_n(&b->affinity, 1, __ATOMIC_RELAXED);	/* the boot context stays on the BSP */
	b->home = 0;
	ksnprintf(b->name, sizeof b->name, "boot");
	lf_stack_init(&b->sigs);
	arch_context_adopt(&b->ctx);
	boot_thread = b;
	b->t_in = arch_cycles();

	int rc = intr_establish(&sched_clock);
	if (rc == KSYNC_OK && (rc = intr_establish(&sched_soft)) != KSYNC_OK)
		intr_disestablish(&sched_clock);
	if (rc != KSYNC_OK) {
		slot_free(b);
		return rc;
	}
	arch_set_handler(SCHED_VEC_RESCHED, resched_ipi, NULL);

	panic_set_thread_namer(thread_name);	/* messages below us name threads through it */
	irqkey_t k = arch_irq_save();
	ops->adopt(b, 0);
	kcpu_this()->sched_cur = b;
	atomic_store_explicit(&sched_cpus[0].cur_level, 0, memory_order_relaxed);
	atomic_store_explicit(&sched_on, true, memory_order_release);
	for (unsigned c = 0; c < n; c++)
		atomic_store_explicit(&sched_cpus[c].active, true, memory_order_release);
	arch_irq_restore(k);
	clock_on(NULL);
	for (unsigned c = 1; c < n; c++) {
		arch_call_on(c, clock_on, NULL);
		arch_send_ipi(c, SCHED_VEC_RESCHED);	/* out of their idle wait */
	}
	return KSYNC_OK;
}

int sched_stop(void)
{
	if (!sched_running())
		return KSYNC_EINVAL;
	if (thread_self() != boot_thread)
		return KSYNC_EINVAL;
	zombies_free();
	for (unsigned w = 0; w < SCHED_MAX_THREADS / 64; w++) {
		uint64_t u = atomic_load_explicit(&slot_used[w], memory_order_acquire);
		if (w == boot_thread->id / 64)
			u &= ~(1ull << (boot_thread->id % 64));
		if (u)
			return KSYNC_EBUSY;
	}
	unsigned n = arch_ncpus();
	irqkey_t k = arch_irq_save();
	for (unsigned c = 0; c < n; c++)
		atomic_store_explicit(&sched_cpus[c].active, false, memory_order_release);
	atomic_store_explicit(&sched_on, false, memory_order_release);
	kcpu_this()->resched = 0;
	arch_irq_restore(k);
	clock_off(NULL);
	for (unsigned c = 1; c < n; c++)
		arch_call_on(c, clock_off, NULL);
	/* intr_disestablish clears the sources' pending bits on every CPU and wants the
	 * sources quiet: a tick already raised when an AP stopped its clock is handled when
	 * that AP re-enables IRQs after the call; one more call on each AP returns after it */
	for (unsigned c = 1; c < n; c++)
		arch_call_on(c, clock_off, NULL);
	intr_disestablish(&sched_soft);
	intr_disestablish(&sched_clock);
	k = arch_irq_save();
	kcpu_this()->sched_cur = NULL;
	slot_free(boot_thread);
	boot_thread = NULL;
	arch_irq_restore(k);
	return KSYNC_OK;
}

uint64_t sched_cpu_ticks(unsigned cpu)
{
	return cpu < MAX_CPUS ? __atomic_load_n(&sched_cpus[cpu].ticks, __ATOMIC_RELAXED) : 0;
}

void sched_stats_get(struct sched_stats *st)
{
	memset(st, 0, sizeof *st);
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		struct sched_cpu *sc = &sched_cpus[c];
		st->dispatches += __atomic_load_n(&sc->dispatches, __ATOMIC_RELAXED);
		st->steals += __atomic_load_n(&sc->steals, __ATOMIC_RELAXED);
		st->mark_lost += __atomic_load_n(&sc->mark_lost, __ATOMIC_RELAXED);
		st->preemptions += __atomic_load_n(&sc->preemptions, __ATOMIC_RELAXED);
		st->ipis += __atomic_load_n(&sc->ipis, __ATOMIC_RELAXED);
		st->idle_wakeups += __atomic_load_n(&sc->idle_wakeups, __ATOMIC_RELAXED);
		st->wake_handoffs += __atomic_load_n(&sc->wake_handoffs, __ATOMIC_RELAXED);
		st->poll_hints += __atomic_load_n(&sc->poll_hints, __ATOMIC_RELAXED);
	}
}

void sched_idle_trace_get(unsigned cpu, struct sched_idle_trace *tr)
{
	memset(tr, 0, sizeof *tr);
	if (cpu >= MAX_CPUS)
		return;
	struct sched_cpu *sc = &sched_cpus[cpu];
	/* acquire: the fields idle_run stored before this sequence */
	tr->seq = __atomic_load_n(&sc->found_seq, __ATOMIC_ACQUIRE);
	tr->found_at = __atomic_load_n(&sc->found_at, __ATOMIC_RELAXED);
	tr->step_gap = __atomic_load_n(&sc->found_step_gap, __ATOMIC_RELAXED);
	tr->how = __atomic_load_n(&sc->found_how, __ATOMIC_RELAXED);
	tr->ipis = __atomic_load_n(&sc->ipis, __ATOMIC_RELAXED);
	tr->idle_wakeups = __atomic_load_n(&sc->idle_wakeups, __ATOMIC_RELAXED);
	tr->poll_hints = __atomic_load_n(&sc->poll_hints, __ATOMIC_RELAXED);
	tr->wake_handoffs = __atomic_load_n(&sc->wake_handoffs, __ATOMIC_RELAXED);
}

void sched_stats_reset(void)
{
	for (unsigned c = 0; c < MAX_CPUS; c++) {
		struct sched_cpu *sc = &sched_cpus[c];
		__atomic_store_n(&sc->dispatches, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->steals, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->mark_lost, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->preemptions, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->ipis, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->idle_wakeups, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->wake_handoffs, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sc->poll_hints, 0, __ATOMIC_RELAXED);
	}
}

/* ---- faults name the thread ------------------------------------------------------------------ */

void kernel_fault_note(uint64_t addr, char *buf, size_t n)
{
	struct thread *cur = kcpu_this()->sched_cur;
	const char *guard_of = NULL;
	for (unsigned i = 0; i < SCHED_MAX_THREADS + MAX_CPUS && !guard_of; i++) {
		struct thread *t = i < SCHED_MAX_THREADS ? &sched_threads[i] : &idle_threads[i - SCHED_MAX_THREADS];
		uint64_t base = (uint64_t)(uintptr_t)t->stack;
		if (base && addr >= base - 4096 && addr < base)
			guard_of = t->name;
	}
	if (guard_of)
		ksnprintf(buf, n, "in thread '%s' (stack guard page of thread '%s' hit: stack overflow)",
			  cur ? cur->name : "none", guard_of);
	else
		ksnprintf(buf, n, "in thread '%s'", cur ? cur->name : "none (scheduler not started)");
}
