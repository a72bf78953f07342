/*
 * thread.h - threads and the two schedulers (issue 10; docs/sched.md). Not "sched.h":
 * that name would shadow libc's <sched.h> in every hosted build that sees kernel/include.
 *
 * Papers: Massalin & Pu 1991, "Threads", "Scheduling and dispatching", "Thread
 * operations"; Hohmuth & Haertig 2001, section 4.1-4.2 and Figure 3 (sleep and wakeup
 * with condition flags in the thread's state word), section 4.4 (single server).
 *
 * A thread is a slot of a fixed table (type-stable: never freed, so a dispatcher or an
 * operation holding a stale pointer reads a state word, never freed memory). Its state
 * word (t->state, SCHED_* bits below) is changed only by CAS in the lock-free scheduler
 * and only under the master lock in the locked one. Two schedulers implement the same
 * operations (struct sched_ops): "lockfree" (kernel/sched/rq-lockfree.c: per-CPU,
 * per-level run queues of one bit per thread slot, dispatch and every operation by
 * marking) and "locked" (kernel/sched/rq-locked.c: per-level FIFO lists under one master
 * spin lock with IRQs off, as Sprite's sched_Mutex and Mach did). The build option
 * SCHED=lockfree|locked picks the default; both are in every kernel, so an experiment
 * measures both in one boot (sched_select).
 *
 * Contexts: a thread runs kernel code on its own stack (guard page below: arch_stack_alloc).
 * Every function here is for thread context (not handlers) unless it says otherwise.
 * Errors are the KSYNC_* codes of <ksync/errors.h>.
 */
#ifndef KSYNC_THREAD_H
#define KSYNC_THREAD_H

#include "kernel.h"

#ifndef SCHED_LEVELS
#define SCHED_LEVELS 4		/* run-queue levels (Synthesis: set at system generation) */
#endif
_Static_assert(SCHED_LEVELS >= 1 && SCHED_LEVELS <= 16, "a level fits SCHED_LVL_MASK");
#define SCHED_MAX_THREADS 512	/* thread table slots, idle threads included */
#define SCHED_TABLE_MAX 64	/* longest priority table */
/* A thread's stack. Twice as large under AddressSanitizer (the hosted port's ASan build),
 * as Linux doubles its stacks under KASAN: instrumented frames carry redzones, and on the
 * hosted port a preempted thread's stack also holds the interrupting signal frames (the
 * ASan suite once overflowed 16 KiB with four nested signal frames in a spinning test). */
#if defined(__SANITIZE_ADDRESS__)
#define SCHED_STACK_BYTES 32768
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)	/* clang's spelling */
#define SCHED_STACK_BYTES 32768
#endif
#endif
/* A port whose interrupts leave large frames on the interrupted stack names its own size
 * (arch_impl.h ARCH_STACK_BYTES: the hosted port's signal frames). */
#if !defined(SCHED_STACK_BYTES) && defined(ARCH_STACK_BYTES)
#define SCHED_STACK_BYTES ARCH_STACK_BYTES
#endif
#ifndef SCHED_STACK_BYTES
#define SCHED_STACK_BYTES 16384
#endif
#define SCHED_HZ 1000		/* clock ticks per second while the scheduler runs */
#define SCHED_QUANTUM_TICKS 2	/* base quantum */
#define SCHED_NAME_MAX 16

/* The state word. COND bits are Hohmuth & Haertig's condition flags. */
#define SCHED_READY	(1ull << 0)	/* wants the CPU (H&H's ready-to-run flag) */
#define SCHED_ONCPU	(1ull << 1)	/* marked by a dispatcher: owned by CPU SCHED_CPU_OF */
#define SCHED_LINKED	(1ull << 2)	/* on exactly one run queue */
#define SCHED_SUSPEND	(1ull << 3)	/* suspend requested */
#define SCHED_STOPPED	(1ull << 4)	/* suspended: off every queue and CPU */
#define SCHED_KILL	(1ull << 5)	/* kill requested (or exit): a dispatcher removes it */
#define SCHED_DEAD	(1ull << 6)	/* final */
#define SCHED_SIGPEND	(1ull << 7)	/* its stack of pending signals is not empty */
#define SCHED_INS	(1ull << 8)	/* an insert is reserved: LINKED follows the insert */
#define SCHED_PREEMPTED	(1ull << 9)	/* switched out by preemption: resumes on SCHED_CPU_OF */
#define SCHED_CPU_SHIFT	10		/* bits 10..17: the owner (ONCPU) or binding (PREEMPTED) */
#define SCHED_CPU_MASK	(0xffull << SCHED_CPU_SHIFT)
#define SCHED_CPU_OF(s)	((unsigned)(((s) & SCHED_CPU_MASK) >> SCHED_CPU_SHIFT))
/* lockfree: thread_set_level's request, in the word so that the party that applies it
 * (whoever may move the thread between queues: rq-lockfree.c) cannot drop the thread
 * without seeing it - its CAS fails if a request came in between */
#define SCHED_LVLREQ	(1ull << 18)	/* a new level is requested: the one in bits 19..22 */
#define SCHED_LVL_SHIFT	19
#define SCHED_LVL_MASK	(0xfull << SCHED_LVL_SHIFT)
#define SCHED_LVL_OF(s)	((unsigned)(((s) & SCHED_LVL_MASK) >> SCHED_LVL_SHIFT))
#define SCHED_COND_SHIFT 32
#define SCHED_COND(k)	(1ull << (SCHED_COND_SHIFT + (k)))	/* k = 0..31 */
#define SCHED_COND_ALL	(0xffffffffull << SCHED_COND_SHIFT)
/* Conditions the kernel uses itself; tests and objects use SCHED_COND(8..31). */
#define SCHED_COND_JOIN	SCHED_COND(0)	/* a joined thread died */
#define SCHED_COND_REQ	SCHED_COND(1)	/* a serializer server has requests */
#define SCHED_COND_REPLY SCHED_COND(2)	/* a serializer request is done */
#define SCHED_COND_MON	SCHED_COND(3)	/* a monitor's release woke its waiter (monitor.c) */
#define SCHED_COND_CV	SCHED_COND(4)	/* a condition variable was signalled (monitor.c) */
#define SCHED_COND_IPC	SCHED_COND(5)	/* a synchronous message arrived (hlock.c hipc_send) */
#define SCHED_COND_SEM	SCHED_COND(6)	/* a binary semaphore's up woke us (hsem.c) */
#define SCHED_COND_TIMER SCHED_COND(7)	/* a sleep_until's deadline passed (timer.c) */
#define SCHED_COND_USER	SCHED_COND(8)

#define SCHED_AFFINITY_ANY (~0ull)

struct lf_stack;
struct thread;
struct hlock;

/* The first member of every struct thread: what the inline fast paths outside
 * kernel/sched/ read (hlock.h). All three are the thread's own (written only by the
 * thread itself) except boost, which helpers lower by CAS. */
struct thread_head {
	unsigned id1;			/* slot id + 1 (0 = none): constant while the slot lives */
	/* helping locks held (and being acquired): written by the thread itself (relaxed),
	 * read by thread_kill/suspend and by a CPU deciding whether a donation is live */
	_Atomic unsigned hl_count;
	/* the highest priority (lowest level) a helper donated, SCHED_LEVELS if none:
	 * lowered by helpers (CAS), reset by the thread once it holds no helping lock */
	_Atomic unsigned boost;
	struct hlock *hl_last;		/* the last helping lock it took (panic messages) */
};
typedef void (*thread_fn)(void *arg);
typedef void (*thread_sig_fn)(void *arg);

/* ---- the scheduler's life ------------------------------------------------------------
 * sched_start: from the BSP's boot context, which becomes thread "boot" (bound to CPU 0,
 * level 0): selects the scheduler ("lockfree" or "locked"; NULL = the build's default),
 * creates the idle threads, starts every CPU's clock at SCHED_HZ and lets the APs (in
 * kernel_ap_entry) dispatch. KSYNC_EBUSY if already started, KSYNC_EINVAL for an unknown
 * name. sched_stop: every thread but "boot" must have died and been joined (else
 * KSYNC_EBUSY); stops the clocks and the APs' dispatching. Tests and experiments bracket
 * their use of threads with the two. */
int sched_start(const char *which);
int sched_stop(void);
const char *sched_name(void);		/* "lockfree" / "locked" (the one running) */
const char *sched_default_name(void);	/* the build's SCHED= */
/* The locked scheduler's master lock, Sprite's sched_Mutex (kernel/sched/rq-locked.c), for
 * monitors whose wait queues it guards (monitor.h, MON_QSCHED); NULL while the lock-free
 * scheduler runs. */
struct mlock;
struct mlock *sched_master_lock(void);
bool sched_running(void);

/* ---- threads ---------------------------------------------------------------------------
 * level 0..SCHED_LEVELS-1 (0 is served most often); affinity a CPU bit mask (at least one
 * online CPU). KSYNC_EINVAL for a bad level, affinity or NULL fn/out/name; KSYNC_ENOMEM
 * when the table or memory is exhausted; KSYNC_EBUSY before sched_start. */
#define THREAD_FP 1u		/* uses FP/SIMD: switched with arch_context_switch_fp */
#define THREAD_DETACHED 2u	/* reaped at death, never joined */
int thread_create(struct thread **out, thread_fn fn, void *arg, unsigned level,
		  uint64_t affinity, const char *name, unsigned flags);
_Noreturn void thread_exit(void);
/* A user thread (kernel/proc): as thread_create, FP state switched (the user's SSE
 * registers), detached, with the port's user context uctx (arch_if.h "user space"),
 * which the scheduler switches with it; fn enters ring 3 through arch_user_enter. */
struct arch_uctx;
int thread_create_user(struct thread **out, thread_fn fn, void *arg, unsigned level,
		       uint64_t affinity, const char *name, struct arch_uctx *uctx);
struct arch_uctx *thread_uctx(const struct thread *t);	/* NULL: a kernel thread */
/* The calling user thread becomes a kernel thread (its uctx is no longer switched, the
 * kernel's address space is loaded): an exiting process calls it before its uctx may be
 * freed by whoever reaps it. */
void thread_drop_uctx(void);
/* Wait until t died, free its slot. KSYNC_EDEADLK for itself, KSYNC_EINVAL for a
 * detached or free slot. */
int thread_join(struct thread *t);
void thread_yield(void);
/* The calling thread's CPU mask becomes mask & the online CPUs (sched_setaffinity): when
 * this CPU is not in it, the thread yields until a CPU of the mask runs it (each
 * scheduler's release puts it on such a CPU's queue and kicks that CPU), so it returns
 * on a CPU of the mask. KSYNC_EINVAL (nothing changed) for a mask without an online
 * CPU; KSYNC_EBUSY from a context that may not switch (no thread, a master lock held
 * panics as thread_yield does). Only the thread itself changes its mask: a thread
 * preempted on a CPU outside a new mask could not be resumed there (sched_may_run). */
int thread_set_affinity_self(uint64_t mask);
uint64_t thread_affinity(const struct thread *t);
/* The online CPUs as a mask (bit c: CPU c; all 64 bits from 64 CPUs on) */
uint64_t sched_online_mask(void);
/* Free now the stacks of dead detached threads (otherwise freed at the next
 * thread_create); thread context, IRQs on. urun.c's page accounting uses it. */
void thread_reclaim(void);
struct thread *thread_self(void);
const char *thread_name(const struct thread *t);
unsigned thread_id(const struct thread *t);
uint64_t thread_state(const struct thread *t);	/* the state word, for tests */
/* Tests: the run queues' counts summed over CPUs and levels (lockfree: rq_n; locked:
 * q_free and q_bound), and in *entries what the queues hold (lockfree: the bits set;
 * locked: the lists' entries, walked under the master lock). Exact only while no thread
 * is being queued or unqueued (the caller's own thread: lockfree keeps the running
 * thread on its queue - it is counted when LINKED). */
unsigned sched_queued(unsigned *entries);
/* Tests only: called by thread_create with the new thread between its slot's reset and
 * its publication (a stale handle's operations must find it DEAD there); NULL otherwise. */
extern void (*sched_test_create_window)(struct thread *t);
uint64_t thread_dispatches(const struct thread *t);	/* times it was switched in */
uint64_t thread_run_ticks(const struct thread *t);	/* TSC ticks it ran (at switches) */

/* ---- thread operations by marking (Massalin & Pu, "Thread operations") -----------------
 * KSYNC_ESRCH for a dead (or free) thread. suspend: a running target on another CPU is
 * forced off by IPI; the caller returns once the mark is made (the target stops at its
 * next preemption point). kill: marked; the dispatcher that meets it removes it (its
 * joiner is woken). A thread may suspend or kill itself. signal: fn(arg) pushed on the
 * thread's lock-free stack of pending signals; the thread runs it at its next switch-in,
 * as if it had called it there (KSYNC_ENOMEM if no record). */
int thread_suspend(struct thread *t);
int thread_resume(struct thread *t);
int thread_kill(struct thread *t);
int thread_signal(struct thread *t, thread_sig_fn fn, void *arg);
/* set_level: t's run-queue level becomes `level` (what thread_create's argument set), in
 * either scheduler. A queued thread moves to the new level's queue at once (the locked
 * scheduler: its tail); a running one competes at the new level from its CPU's next
 * pick (asked for at once, by IPI, when a thread of higher priority than the new level
 * waits there); a sleeping or stopped one is queued at the new level by its wakeup or
 * resume. The caller's own change applies before the call returns: raised, it keeps the
 * CPU; lowered, a ready thread of higher priority runs first (as after a yield). A boost
 * from helping still counts: the thread runs at min(boost, level). KSYNC_EINVAL for a
 * level >= SCHED_LEVELS, KSYNC_ESRCH for a dead or free slot (or one being set up by
 * thread_create). Thread context; IRQs may be off (a switch it asks for - the caller
 * lowered, a queued thread raised above it - then waits for the next preemption point:
 * sched_lowered once IRQs are on, or an interrupt's end).
 * thread_level: the level t's queue is indexed by now (lockfree: a change requested of a
 * thread off every CPU and queue shows from its wakeup on). */
int thread_set_level(struct thread *t, unsigned level);
unsigned thread_level(const struct thread *t);

/* ---- sleep and wakeup with condition flags (Hohmuth & Haertig, Figure 3) ----------------
 * sched_sleep(cond): returns at once, consuming the flags, if any of `cond` is set in the
 * caller's state word; else clears READY by CAS only while none is set and gives up the
 * CPU; returns (the flags consumed) once a wakeup set one. Returns the flags it consumed.
 * sched_wakeup(t, cond): sets the flags and READY; no wakeup is lost whatever the order.
 * Callable from handlers too (IRQs off is fine). KSYNC_ESRCH for a dead thread. */
uint64_t sched_sleep(uint64_t cond);
int sched_wakeup(struct thread *t, uint64_t cond);
/* sched_sleep that gives the CPU to `to` rather than to the scheduler's pick when `to`
 * may run here now (queued, runnable, allowed here): section 4.3's switch hint applied
 * to a sleep - the single server (serializer.c) going back to the client that lent it
 * the CPU. The pick's walk is skipped, not its rules: a thread of higher priority woken
 * meanwhile preempts as it would (sched_kick). `to` NULL: sched_sleep. */
uint64_t sched_sleep_to(uint64_t cond, struct thread *to);

/* ---- timed sleep (kernel/sched/timer.c) ------------------------------------------------
 * sched_sleep_until(cond, deadline): sched_sleep(cond | SCHED_COND_TIMER) that the clock
 * tick of the CPU the caller armed on also ends once arch_cycles() >= deadline (a TSC
 * time; 0: no deadline, plain sched_sleep). Returns the flags consumed: SCHED_COND_TIMER
 * among them when the deadline ended it (at once, without sleeping, for a deadline
 * passed already). Never ends before the deadline but for a flag of `cond`; ends at the
 * first tick at or after it - the resolution is the scheduler clock's period, 1 ms at
 * SCHED_HZ (sched_set_clock_hz). A spurious return is possible (as for sched_sleep):
 * callers test their condition and the time again. Thread context, preemptible.
 * sched_tsc_of_ns(ns): the first TSC time whose ktime_ns (proc.h) is >= ns.
 * sched_timers_armed: timers on the CPUs' lists now (tests: 0 once every sleeper left). */
uint64_t sched_sleep_until(uint64_t cond, uint64_t deadline);
uint64_t sched_tsc_of_ns(uint64_t ns);
unsigned sched_timers_armed(void);
/* Tests only: called by sched_sleep_until between the sleep's end and the timer's
 * disarm, with the flags the sleep consumed and the deadline; NULL otherwise. */
extern void (*_Atomic sched_test_timer_window)(uint64_t got, uint64_t deadline);

/* ---- helping (kernel/lock/hlock.c; Hohmuth & Haertig 3.3; the SMP design is hlock.c's) -----
 * sched_help(owner): the caller gives its CPU to `owner`, which holds a helping lock the
 * caller waits for, boosting it to the caller's level. SCHED_HELP_RAN: the owner ran here
 * on the caller's time and something switched back to the caller (it checks the lock
 * again). SCHED_HELP_REMOTE: the owner runs on another CPU, or may run only there; that
 * CPU was asked to run it ahead of its queues; the caller checks again (spinning: the
 * owner is in a wait-free section). SCHED_HELP_NOT: it cannot run now (being inserted,
 * stopped); the caller checks again. Thread context, preemptible. */
#define SCHED_HELP_RAN 0
#define SCHED_HELP_REMOTE 1
#define SCHED_HELP_NOT 2
int sched_help(struct thread *owner);
/* sched_wake_help(t, cond): t sleeps; wake it with `cond` and give it the caller's CPU at
 * once, as sched_help does for a ready owner (boosted to the caller's level), in one step
 * of the scheduler without queueing it (the single server's donating client: section
 * 4.4). SCHED_HELP_RAN: it ran here and something switched back to the caller;
 * SCHED_HELP_NOT: nothing done (t not asleep, or not allowed here) - the caller wakes
 * and helps as before. */
int sched_wake_help(struct thread *t, uint64_t cond);
/* Switch to t now if it is runnable and may run here (the switch hint); false if not. */
bool sched_switch_to(struct thread *t);
/* The caller released its last helping lock: its boost ends (a higher-priority thread
 * that is ready runs now). */
void sched_unboost(void);
/* The level t runs at now: its own, or a helper's higher one while boosted. */
unsigned thread_eff_level(const struct thread *t);

/* ---- the clock, for the lateness experiment (Hohmuth & Haertig Table 1) -----------------
 * sched_set_clock_hz: the scheduler clock's rate from the next sched_start on (0 = SCHED_HZ;
 * 100..100000, else KSYNC_EINVAL; KSYNC_EBUSY while running); quanta stay in time.
 * sched_set_tick_hook: fn(deadline) runs in CPU 0's clock handler each tick (IRQ context),
 * deadline = the TSC time the tick was due (its period's ideal boundary); NULL removes. */
int sched_set_clock_hz(unsigned hz);
void sched_set_tick_hook(void (*fn)(uint64_t deadline));

/* ---- the priority table (Massalin & Pu "Scheduling and dispatching") ---------------------
 * A per-CPU switch counter indexes the table; the entry names the level served first
 * (an empty level passes its turn to the next lower level, then wraps). The default, for
 * L levels, serves level 0 every 2nd switch, level 1 every 4th, ..., level L-1 the rest.
 * KSYNC_EINVAL for n = 0, n > SCHED_TABLE_MAX or a level out of range. */
int sched_table_set(const uint8_t *levels, unsigned n);
void sched_table_default(void);
unsigned sched_table_get(uint8_t *levels, unsigned max);

/* ---- software feedback on the quantum (Massalin & Pu, fine-grain scheduling) -------------
 * A thread may name its input queue's fill level (0..100 %, read at each dispatch); the
 * policy: above 75 % the quantum doubles (up to 8x the base), below 25 % it halves back. */
void thread_set_input(struct thread *t, unsigned (*fill_pct)(void *arg), void *arg);
unsigned thread_quantum(const struct thread *t);	/* ticks of its current quantum */

/* ---- statistics (for tests and experiments; any CPU, relaxed reads) --------------------- */
struct sched_stats {
	uint64_t dispatches, steals, mark_lost, preemptions, ipis, idle_wakeups;
	uint64_t wake_handoffs;	/* wakeups handed to a polling idle CPU and done there */
	uint64_t poll_hints;	/* idle polls that took the thread a waker named */
};
void sched_stats_get(struct sched_stats *st);	/* summed over CPUs */
void sched_stats_reset(void);
uint64_t sched_cpu_ticks(unsigned cpu);	/* the scheduler's clock ticks handled on cpu */

/* What one CPU's idle loop did when it last found a thread, and its counters: for the
 * wakeup experiment's breakdown and the causes of its slow wakeups (sched_exp.c). Relaxed
 * reads of fields that CPU writes; `seq` changes at every find (compare two reads to know
 * whether a find happened between them and whether the fields are of one find). */
enum sched_found_how {
	SCHED_FOUND_PICK = 1,	/* the idle loop's first pick, before any poll */
	SCHED_FOUND_POLL,	/* a pick of the poll (arch_idle_poll_ticks) */
	SCHED_FOUND_HINT,	/* the poll took the thread a waker named (idle_polling) */
	SCHED_FOUND_LAST,	/* the pick after the poll ended */
};
struct sched_idle_trace {
	uint64_t seq;		/* finds so far */
	uint64_t found_at;	/* TSC when the idle loop had the thread (marked for it) */
	uint64_t step_gap;	/* TSC from the poll step before the find to the find's step:
				   one step is ~100 ns; microseconds mean the vCPU did not run
				   (the host descheduled it) or an interrupt handler ran */
	unsigned how;		/* enum sched_found_how */
	uint64_t ipis;		/* IPIs sent to the CPU (sched_kick, sched_force) */
	uint64_t idle_wakeups;	/* its returns from waiting for an interrupt */
	uint64_t poll_hints;	/* finds by SCHED_FOUND_HINT */
	uint64_t wake_handoffs;	/* wakeups handed to this CPU while it polled, done there */
};
void sched_idle_trace_get(unsigned cpu, struct sched_idle_trace *tr);

#endif
