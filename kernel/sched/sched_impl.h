/*
 * sched_impl.h - what kernel/sched/'s files share: struct thread, the per-CPU scheduler
 * state, and struct sched_ops, the interface both schedulers implement (rq-lockfree.c,
 * rq-locked.c). Not for use outside kernel/sched/ (tests read threads through thread.h).
 */
#ifndef KSYNC_SCHED_IMPL_H
#define KSYNC_SCHED_IMPL_H

#include "thread.h"
#include "hlock.h"
#include "spl.h"
#include <ksync/lf_stack.h>
#include <stdatomic.h>

struct thread {
	struct thread_head head;	/* first: thread.h (hlock.h's inline paths) */
	/* The state word (thread.h SCHED_*). lockfree: changed only by CAS (acq_rel: it
	 * orders what the changer wrote before it - a context saved, queue bits set - with
	 * what the next changer reads after); locked: under sched_lock. */
	_Atomic uint64_t state;
	/* The saved context: written by the CPU switching away from the thread, read by
	 * the CPU switching to it; the marking CAS (or the master lock) orders the two. */
	struct arch_context ctx;
	/* Set at create, before the thread is published (the insert's CAS/lock), constant
	 * until the slot is freed. */
	unsigned id, flags;
	/* The run-queue level: the queue the thread is on, or goes on, is indexed by it.
	 * Set at create before the thread is published; changed by thread_set_level.
	 * lockfree: written only by a party that has the thread off every queue to itself -
	 * its ONCPU holder while it is not LINKED and its bit is clear (lf_release, the
	 * running thread itself, lf_wake_take), or its INS holder before its bit is set
	 * (insert_reserved) - so an insert and the unlink that undoes it index the same
	 * queue (rq-lockfree.c). locked: under sched_lock. Written and read with relaxed
	 * atomics (sched_level_of): the other readers (sched_eff_level for cur_level and
	 * donations, sleep_to_ok, hlock.c's unboost, a stale slot's reader) take a value
	 * that may change just after as a hint, and a running thread's own read is exact in
	 * the lock-free scheduler (only it, as the holder, changes it). */
	unsigned level;
	/* a CPU's idle thread: never queued. Constant; read by every waker (thread
	 * operations check it), so it lives with the other constants and not in the line the
	 * running CPU writes at every switch (dispatches, t_in, quantum): a waker's read of it
	 * there made each of those stores wait for the line to come back (issue 27 item 2) */
	bool idle;
	uint64_t affinity;
	thread_fn fn;
	void *arg;
	void *stack;			/* NULL for adopted contexts (boot, AP idle) */
	/* A user thread's port state (arch_if.h "user space"), NULL for kernel threads: set
	 * at create before the thread is published, constant while the slot lives; read by
	 * the switches to and from it. */
	struct arch_uctx *uctx;
	char name[SCHED_NAME_MAX];
	/* lockfree: the CPU whose queue holds (or will hold) the thread; written only while
	 * the thread is neither LINKED nor being inserted, by its ONCPU holder (re-homing at
	 * release) or its creator. locked: under sched_lock. */
	volatile unsigned home;
	/* The thread waiting in thread_join: set by the joiner (seq_cst store) before it
	 * looks for DEAD; read by the reaper after it set DEAD (seq_cst): one of them sees
	 * the other. */
	struct thread *_Atomic joiner;
	/* 1 once the reaper is done with the slot (its last access, release): join frees
	 * the slot only after it sees this (acquire). */
	_Atomic int reaped;
	/* Pending signals (Massalin & Pu "signal"): lock-free stack of struct sched_sig. */
	struct lf_stack sigs;
	/* signals taken off `sigs` and not yet run: the thread itself while it runs them;
	 * its reaper once it is DEAD */
	struct lf_stack_node *sig_chain;
	bool sig_running;		/* the thread is in sigs_deliver (itself only) */
	/* locked scheduler: the run-queue links, under sched_lock */
	struct thread *rq_next, *rq_prev;
	_Atomic unsigned *rq_counter;	/* the queue count it was added to (rq-locked.c) */
	/* Written by the CPU running the thread (at switches, IRQs off); read relaxed by
	 * reports. */
	uint64_t dispatches, run_ticks, t_in;
	/* software feedback: set by thread_set_input before use; quantum written by the
	 * dispatching CPU, read by anyone (relaxed atomics). */
	unsigned (*fill_pct)(void *);
	void *fill_arg;
	unsigned quantum;
	/* inside its preemption loop (thread.c): written by the thread itself with IRQs
	 * off, read by its CPU's handlers */
	volatile bool in_preempt;
	/* Helping locks (kernel/sched/hlock.c); the count, the boost and the last lock are in
	 * `head`. hl_helping: the lock it helps on (NULL if none), written by itself, read
	 * by helpers walking a chain (A helps B who helps C). hl_next: the helper below it
	 * on that lock's helper stack (id + 1), written by itself before its push CAS
	 * (which publishes it, release) and read by the owner after the acquire load that
	 * saw it on top. */
	struct hlock *_Atomic hl_helping;
	_Atomic unsigned hl_next;
	/* Fiasco's thread lock (hlock.h thread_lock): IPC locks the receiver by it. The
	 * message slot and the receiver's "waiting" flag are under it. */
	struct hlock own_lock;
	uint64_t ipc_msg;
	bool ipc_waiting;
};

struct sched_sig {
	struct lf_stack_node link;
	thread_sig_fn fn;
	void *arg;
};

/* One CPU's scheduler state: written by that CPU with IRQs off unless a field says. */
struct sched_cpu {
	/* ---- first cache line: what OTHER CPUs read on a wakeup (sched_kick) or a remote
	 * help, written rarely by this CPU (idle entry and exit, a switch). Nothing this CPU
	 * writes at every pick lives here: the idle poller's pick bumped `counter` in this
	 * line at every step, so each of a waker's loads here (active, idle_waiting,
	 * cur_level, idle_polling) and its CAS missed - issue 27 item 2. */
	struct thread *idle;		/* constant after sched_start */
	_Atomic bool active;		/* dispatching (sched_start .. sched_stop): the BSP
					   stores (release), every CPU loads (acquire) */
	/* 1 while the idle thread is about to wait: seq_cst store, read (seq_cst) by a
	 * waker after its insert (Dekker: the waker sees it or the idler sees the bit). */
	_Atomic int idle_waiting;
	/* While the idle thread polls the queues (arch_idle_poll_ticks): SCHED_POLL_ON, or
	 * 2 + id once a waker relied on the poll to find thread `id` instead of sending an
	 * IPI (SCHED_POLL_MANY: several did); SCHED_POLL_NONE otherwise. Dekker with the
	 * waker (seq_cst RMWs on this word): the idler takes it back by exchange, then picks
	 * once more before it sleeps; a waker inserts, then marks it by CAS. The poller reads
	 * it at every step and takes thread `id` at once when it names one (idle_loop). */
	_Atomic unsigned idle_polling;
	/* level of the running thread (SCHED_LEVELS for idle): relaxed, read by wakers */
	_Atomic unsigned cur_level;
	/* A helper on another CPU asks this CPU to run `donee` (a helping-lock owner bound
	 * or allowed only here) ahead of its queues: set by helpers (CAS from NULL, or over
	 * a donee that holds no helping lock any more), cleared by this CPU's schedule when
	 * the donee holds none. Acquire/release: the donee's boost before the request. */
	struct thread *_Atomic donee;
	/* A wakeup handed to this CPU while it polls idle (sched_wakeup -> wake_handoff):
	 * 0, or SCHED_WAKE_REQ(id, k) (thread slot id, condition SCHED_COND(k)), or that
	 * with SCHED_WAKE_BUSY while the idler performs it. Set by a waker (CAS from 0), taken
	 * by the idler (CAS to BUSY, then 0 once done) or back by the waker (CAS to 0, when the
	 * poll ended before it looked), dropped by the slot's freer (CAS to 0). seq_cst:
	 * Dekker with idle_polling (wake_handoff, idle_loop). */
	_Atomic unsigned wake_req;
	/* ---- this CPU's own state, written at every pick and switch ---------------------- */
	_Alignas(64) struct thread *prev;	/* the thread this CPU just switched away from */
	bool prev_preempted;
	uint64_t counter;		/* switches: indexes the priority table */
	unsigned cursor[SCHED_LEVELS];	/* lockfree: round-robin position per level */
	uint64_t quantum_end;		/* TSC time the running thread's quantum ends */
	/* statistics: written by this CPU (SCHED_STAT_INC: relaxed atomic load + store,
	 * no locked instruction), read and reset by any CPU with relaxed atomics */
	uint64_t dispatches, steals, mark_lost, preemptions, ipis, idle_wakeups, ticks;
	uint64_t donations;	/* donee_pick ran a helping-lock owner for a remote helper */
	uint64_t poll_hints;	/* the idle poll took the thread a waker named (idle_loop) */
	uint64_t wake_handoffs;	/* wakeups handed to this CPU and performed by its idler */
	/* The idle loop's last find (struct sched_idle_trace, thread.h): written by this CPU
	 * (relaxed), `found_seq` last (release); readers check it before and after. */
	uint64_t found_at, found_step_gap, found_seq;
	unsigned found_how;
} __attribute__((aligned(64)));

extern struct sched_cpu sched_cpus[MAX_CPUS];
extern struct thread sched_threads[SCHED_MAX_THREADS];
extern uint8_t sched_table[SCHED_TABLE_MAX];
extern unsigned sched_table_len;	/* written by sched_table_set between runs */

struct sched_ops {
	const char *name;
	void (*reset)(void);				/* sched_start: empty queues */
	/* t runs on cpu now (the boot thread at start): READY|ONCPU. */
	void (*adopt)(struct thread *t, unsigned cpu);
	void (*insert_new)(struct thread *t);		/* a created thread: READY, queued */
	/* IRQs off. A thread marked ONCPU for cpu, or `prev` (running here, not idle,
	 * runnable) when the walk comes round to it first, or NULL. Sets *stolen when the
	 * thread came from another CPU's queue. */
	struct thread *(*pick)(unsigned cpu, struct thread *prev, bool *stolen);
	/* IRQs off, on cpu, after the switch away from t completed. Returns true if t
	 * became DEAD here (the caller reaps it). */
	bool (*release)(struct thread *t, unsigned cpu, bool preempted);
	int (*suspend)(struct thread *t);
	int (*resume)(struct thread *t);
	/* Returns 1 if the kill made t DEAD at once (caller reaps), 0 if marked, or an
	 * error. */
	int (*kill)(struct thread *t);
	int (*wakeup)(struct thread *t, uint64_t cond);
	/* The caller, ONCPU: consume cond if set (returns the flags, no switch) or clear
	 * READY (returns 0: the caller switches away). IRQs off. */
	uint64_t (*sleep_prepare)(struct thread *self, uint64_t cond);
	/* Mark SIGPEND; KSYNC_ESRCH if dead. */
	int (*sigpend)(struct thread *t);
	/* The caller marks itself KILL (exit). IRQs off. */
	void (*exit_mark)(struct thread *self);
	/* IRQs off, on cpu: mark t (runnable, queued, not running, allowed and not bound
	 * elsewhere) ONCPU for cpu, as a dispatcher's pick would. Returns t, or NULL if it
	 * cannot run here now. For a helper's directed switch (hlock.c). */
	struct thread *(*take)(struct thread *t, unsigned cpu);
	/* IRQs off, on cpu: wake a SLEEPING t (not ready, not on a CPU, not queued nor being
	 * inserted, not stopped, suspended, killed or dead; allowed here, not bound
	 * elsewhere) with `cond` and mark it ONCPU for cpu in the same step, never queued:
	 * sched_wake_help. Returns t, or NULL (the caller wakes and helps as before). */
	struct thread *(*wake_take)(struct thread *t, uint64_t cond, unsigned cpu);
	/* IRQs off, on cpu: thread_set_level (level checked). `self`: t is the thread
	 * running here (the caller), whose change applies before this returns. A same-CPU
	 * kick (a queued thread raised above the caller) leaves the reschedule pending: the
	 * caller takes it once IRQs are on. KSYNC_OK, or KSYNC_ESRCH if t is DEAD. */
	int (*set_level)(struct thread *t, unsigned level, unsigned cpu, bool self);
	unsigned (*queued)(unsigned *entries);		/* sched_queued */
};

extern const struct sched_ops sched_ops_lockfree, sched_ops_locked;

/* t->level, read (relaxed) by anyone: see struct thread. */
static inline unsigned sched_level_of(const struct thread *t)
{
	return __atomic_load_n(&t->level, __ATOMIC_RELAXED);
}
static inline void sched_level_store(struct thread *t, unsigned level)
{
	__atomic_store_n(&t->level, level, __ATOMIC_RELAXED);
}

/* The level a thread runs at: its own, or a helper's higher one while it is boosted. */
static inline unsigned sched_eff_level(const struct thread *t)
{
	unsigned b = atomic_load_explicit(&((struct thread *)t)->head.boost, memory_order_relaxed);
	unsigned l = sched_level_of(t);
	return b < l ? b : l;
}
struct mlock *sched_mutex(void);	/* rq-locked.c's master lock (Sprite's sched_Mutex) */

/* A counter written by one CPU only and read by others: relaxed atomic load and store
 * (no lock prefix on the fast path; TSan sees the accesses as atomic). */
#define SCHED_STAT_INC(x) __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)
#define SCHED_STAT_ADD(x, v) __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

/* thread.c, for the schedulers */
unsigned sched_cpu_id(void);
#define SCHED_POLL_NONE 0u
#define SCHED_POLL_ON 1u
#define SCHED_POLL_MANY 0xffffffffu
#define SCHED_WAKE_REQ(id, k) ((((unsigned)(k) + 1u) << 16) | (unsigned)(id))
#define SCHED_WAKE_ID(r) ((r) & 0xffffu)
#define SCHED_WAKE_K(r) ((((r) >> 16) & 0x3fu) - 1u)
#define SCHED_WAKE_BUSY (1u << 31)
/* thread `id` of `level` became ready on cpu's queue */
void sched_kick(unsigned cpu, unsigned level, unsigned id);
bool sched_affine(const struct thread *t, unsigned cpu);
/* Whether cpu may run t now (state word s): a thread switched out by preemption resumes
 * only where it was preempted, whatever its affinity (a thread that narrows its own
 * affinity may be preempted before it moves: thread_set_affinity_self); any other only on
 * a CPU of its affinity. */
static inline bool sched_may_run(const struct thread *t, uint64_t s, unsigned cpu)
{
	return (s & SCHED_PREEMPTED) ? SCHED_CPU_OF(s) == cpu : sched_affine(t, cpu);
}
/* The lowest CPU of t's affinity (0 if none is online) */
unsigned sched_first_affine(const struct thread *t);
unsigned sched_ncpus(void);
unsigned sched_level_order(unsigned cpu, unsigned *order);	/* levels to try, in order */
void sched_reap(struct thread *t);	/* t became DEAD: wake its joiner, free if detached */
void sched_force(unsigned cpu);
/* timer.c: the locks once (sched_start, before the clocks); cpu's tick (IRQ context) */
void sched_timers_init(void);
void sched_timers_tick(unsigned cpu);		/* make cpu switch at its next preemption point */
/* The thread a remote helper asked cpu to run, if it competes at `level` now (its boosted
 * level); the picks try it ahead of that level's queue. IRQs off. */
struct thread *sched_donee(unsigned cpu, unsigned level);

#endif
