/*
 * rq-lockfree.c - Synthesis's scheduler: per-CPU, per-level run queues without a lock,
 * dispatch by marking the thread's state word with CAS, and every thread operation by
 * marking (issue 10 items 3-5; docs/sched.md; spin/sched_mark.pml is this protocol).
 *
 * Papers: Massalin & Pu 1991, "Scheduling and dispatching": threads of a level sit on a
 * circular run queue and STAY there while they run; "the dispatcher acquires the new TTE
 * by marking it with compare-and-swap; if another dispatcher just acquired it, the
 * dispatcher moves on to try to mark the next TTE; the mark does not prevent other
 * dispatchers from accessing the rest of the run queue". "Thread operations": mark the
 * intended operation in the TTE, perform it, check whether the situation changed, retry
 * (suspend: a flag, the scheduler that meets the flagged thread removes it and sets
 * "stopped"; resume: re-insert only a thread that was removed; kill: marked, removed by
 * the dispatcher that meets it). Hohmuth & Haertig 2001, Figure 3: the condition flags
 * and the ready-to-run flag in one word; a sleeper clears "ready" by CAS only while its
 * condition is unset, so a wakeup between the test and the sleep is never lost.
 *
 * The run queue of (CPU, level) is one bit per thread slot (SCHED_MAX_THREADS bits):
 * insert = one fetch_or, unlink = one fetch_and, both wait-free; a dispatcher walks the
 * bits from its round-robin cursor, so the queue is circular and the running thread
 * stays on it, as in Synthesis. Why bits rather than a linked list of TTEs: a thread is
 * unlinked and re-inserted at every sleep and wakeup, and a lock-free list whose nodes
 * come back while a walker may still hold them needs a grace period (include/ksync/
 * lf_list.h's reclamation rule) or suffers ABA on the predecessor's CAS; a bit has no
 * predecessor and a stale walk only reads a state word of a type-stable slot. The spin
 * model's abstraction (an insert and an unlink are each one atomic step; inlist[i]) is
 * exactly this representation. Order within a level is round-robin by slot.
 *
 * Per-CPU queues (item 3): a thread lives on its home CPU's queue; a wakeup or resume
 * inserts it there from any CPU (remote enqueue without a lock) and sends an IPI only
 * when that CPU is idle or runs a lower level (sched_kick). An idle CPU (nothing on its
 * own queues) walks the other CPUs' queues and takes a thread by the same marking CAS
 * (a steal); the release after it ran re-homes the thread to the CPU that ran it.
 *
 * The state word (thread.h) and who may change what - the invariants the spin model
 * checks: ONCPU is set only by a marking CAS that saw it clear (no thread on two CPUs);
 * LINKED is set by the ONCPU holder, or by an inserter holding INS only after the
 * physical insert (a stale walk can never mark a thread whose bit is not set yet); exactly one party inserts (the holder of ONCPU or of INS) and
 * exactly one unlinks (the holder of ONCPU, or the holder of INS its own bit before
 * LINKED: a level change below); STOPPED and DEAD are set only once the
 * thread is off its queue and off the CPU (ONCPU dropped in the same CAS, last). Every
 * CAS is acq_rel: it orders the context saved and the queue bit changed before it with
 * the next owner's reads. The bit operations are seq_cst (they pair with the idle CPU's
 * seq_cst flag: Dekker, sched_kick).
 *
 * Levels (thread_set_level): ins and unl index the queue by t->level, so the level may
 * change only while the thread is on no queue and the changer has it to itself. The
 * request is marked in the state word (SCHED_LVLREQ and the level, by CAS: "mark the
 * intended operation in the TTE") and applied by whoever holds the right to move the
 * thread between queues: its ONCPU holder (lf_release, the running thread itself -
 * its own call or its CPU's pick - and lf_wake_take) unlinks it if LINKED, changes the
 * level, clears the request and relinks it as before; its INS holder (insert_reserved)
 * applies it before its insert, and if a request arrives between the insert and LINKED
 * takes its own bit back and inserts again. The request being in the word is what makes
 * this safe without a second protocol: the holder's last CAS (dropping ONCPU, or INS ->
 * LINKED) fails if a request came in after it looked, so none is left behind. Invariant
 * (the explorer checks it at every step): a word with LVLREQ is ONCPU, or INS, or
 * neither LINKED nor INS (asleep, stopped: the wakeup or resume applies it) - never a
 * queued thread on no CPU. For such a thread the requester sets ONCPU itself in the CAS
 * that makes the request (for the thread's home CPU, or the CPU a preemption bound it to,
 * so nothing migrates) and releases it at once, as try_mark does with a thread marked
 * only to be removed: a queued thread moves now, not at its next dispatch at the old
 * level. A thread running elsewhere is asked to pick again (sched_force).
 */
#include "sched_impl.h"
#include <ksync/errors.h>

#define WORDS (SCHED_MAX_THREADS / 64)
#define S_READY SCHED_READY
#define S_ONCPU SCHED_ONCPU
#define S_LINKED SCHED_LINKED
#define S_SUSPEND SCHED_SUSPEND
#define S_STOPPED SCHED_STOPPED
#define S_KILL SCHED_KILL
#define S_DEAD SCHED_DEAD
#define S_SIGPEND SCHED_SIGPEND
#define S_INS SCHED_INS
#define S_PREEMPTED SCHED_PREEMPTED
#define S_CPU SCHED_CPU_MASK
#define S_LVLREQ SCHED_LVLREQ
#define S_LVL SCHED_LVL_MASK

/* The interleaving explorer's scheduling point, just before every atomic step on shared
 * data (a queue word, a state word): tests/unit/test_explore_sched.c compiles this file
 * with KSYNC_ATOMIC_HOOK defined to yield to its explorer (docs/explorer.md). In a kernel
 * build <ksync/atomic.h> leaves KSYNC_ATOMIC_HOOK ((void)0), which does not evaluate its
 * arguments: no code. */
#ifdef KSYNC_ATOMIC_HOOK
#define SCHED_ATOMIC_HOOK(op, addr) KSYNC_ATOMIC_HOOK(op, addr)
#else
#define SCHED_ATOMIC_HOOK(op, addr) ((void)0)
#endif
/* The explorer's seeded bugs that a CAS wrapper cannot express (test_explore_sched.c
 * defines SCHED_MUTANT(bug) as "that mutant is on"): 0 in every other build, no code.
 * LEVEL_LINKED: a level change without the unlink first (the thread's bit stays on the
 * old level's queue). */
#ifndef SCHED_MUTANT
#define SCHED_MUTANT(bug) 0
#endif

/* rq[cpu][level][word]: bit i of word w = thread slot 64w + i is on that queue */
static _Atomic uint64_t rq[MAX_CPUS][SCHED_LEVELS][WORDS];

/* rq_n[c].n[l]: at least the number of bits set in rq[c][l] - ins adds 1 before its
 * fetch_or, unl takes 1 after its fetch_and (seq_cst RMWs) - so a scan that loads 0 skips
 * the queue's words (a dispatch walked every level's 8 words, empty ones too: the
 * same-CPU switch paid for it). A scan that skips so misses only a thread whose insert
 * had not added here yet, as a walk misses a bit set behind it; for an idle CPU the count
 * takes the bit's place in sched_kick's Dekker (the idler stores idle_waiting, then loads
 * this; the inserter adds here, sets the bit, then loads idle_waiting: one sees the
 * other). One cache line per CPU. */
static struct {
	_Atomic unsigned n[SCHED_LEVELS];
} __attribute__((aligned(64))) rq_n[MAX_CPUS];

static inline uint64_t bit_of(const struct thread *t) { return 1ull << (t->id % 64); }

/* By the party that inserts (unlinks) t: its home and level are its to read (struct
 * thread: nobody changes them while it may insert or unlink). */
static void ins(struct thread *t)
{
	unsigned h = t->home, l = sched_level_of(t);
	SCHED_ATOMIC_HOOK(fetch_add, &rq_n[h].n[l]);
	atomic_fetch_add_explicit(&rq_n[h].n[l], 1, memory_order_seq_cst);
	SCHED_ATOMIC_HOOK(fetch_or, &rq[h][l][t->id / 64]);
	atomic_fetch_or_explicit(&rq[h][l][t->id / 64], bit_of(t), memory_order_seq_cst);
}

static void unl(struct thread *t)
{
	unsigned h = t->home, l = sched_level_of(t);
	SCHED_ATOMIC_HOOK(fetch_and, &rq[h][l][t->id / 64]);
	uint64_t old = atomic_fetch_and_explicit(&rq[h][l][t->id / 64], ~bit_of(t),
						 memory_order_seq_cst);
	if (!(old & bit_of(t)))
		panic("lockfree rq: thread '%s' unlinked from cpu %u level %u where it was not",
		      t->name, h, l);
	SCHED_ATOMIC_HOOK(fetch_sub, &rq_n[h].n[l]);
	atomic_fetch_sub_explicit(&rq_n[h].n[l], 1, memory_order_seq_cst);
}

static inline bool cas(struct thread *t, uint64_t *s, uint64_t want)
{
	SCHED_ATOMIC_HOOK(cas, &t->state);
	return atomic_compare_exchange_strong_explicit(&t->state, s, want, memory_order_acq_rel,
						       memory_order_acquire);
}

static inline uint64_t load(struct thread *t)
{
	SCHED_ATOMIC_HOOK(load, &t->state);
	return atomic_load_explicit(&t->state, memory_order_acquire);
}

/* A holder with t on no queue - ONCPU with t not LINKED and its bit clear, or INS before
 * its bit is set - applies a requested level: t->level first, then the request cleared
 * by CAS (acq_rel: the level before the word, for the next holder); a newer request
 * meanwhile fails the CAS and is applied in its turn. *s is t's word, on return without a
 * request. */
static void level_apply(struct thread *t, uint64_t *s)
{
	while (*s & S_LVLREQ) {
		sched_level_store(t, SCHED_LVL_OF(*s));
		uint64_t want = *s & ~(S_LVLREQ | S_LVL);
		if (cas(t, s, want))
			*s = want;
	}
}

/* The inserter that reserved the insert with INS (create, wakeup, resume): a requested
 * level applied, set the bit, then LINKED (model: finish_ins), then tell the home CPU. A
 * level requested between the insert and LINKED stops the LINKED CAS: the bit is still
 * ours alone (not LINKED: no dispatcher marks it, nobody else unlinks), so we take it
 * back and insert at the new level. home, level and id are read before LINKED: after it
 * a releaser may re-home t, and t may run, exit and be joined, and its slot be reused by
 * thread_create (ThreadSanitizer saw the kick read the level of a slot being reset, under
 * the Sprite fork benchmark). */
static void insert_reserved(struct thread *t)
{
	unsigned h, level, id = t->id;
	uint64_t s = load(t);
	for (;;) {
		level_apply(t, &s);
		h = t->home;
		level = sched_level_of(t);
		ins(t);
		do
			KASSERT(s & S_INS);
		while (!(s & S_LVLREQ) && !cas(t, &s, (s & ~S_INS) | S_LINKED));
		if (!(s & S_LVLREQ))
			break;		/* LINKED */
		if (!SCHED_MUTANT(LEVEL_LINKED))
			unl(t);
	}
	sched_kick(h, level, id);
}

/* The thread running on this CPU (the caller itself, or its CPU's pick with it as prev;
 * IRQs off) holds ONCPU: a requested level applies now - off its queue, the level, back
 * on the new level's queue if it was on one (a running thread stays on its queue, as in
 * Synthesis; one woken by lf_wake_take is on none until its release). */
static void level_self(struct thread *t)
{
	uint64_t s = load(t);
	bool relink = false;
	for (;;) {
		if (s & S_LVLREQ) {
			if ((s & S_LINKED) && !SCHED_MUTANT(LEVEL_LINKED)) {
				if (cas(t, &s, s & ~S_LINKED)) {
					unl(t);
					relink = true;
					s = load(t);
				}
				continue;
			}
			level_apply(t, &s);
			continue;
		}
		if (relink) {
			if (cas(t, &s, s | S_LINKED)) {
				ins(t);
				relink = false;
				s = load(t);
			}
			continue;
		}
		return;
	}
}

static void lf_reset(void)
{
	for (unsigned c = 0; c < MAX_CPUS; c++)
		for (unsigned l = 0; l < SCHED_LEVELS; l++) {
			SCHED_ATOMIC_HOOK(store, &rq_n[c].n[l]);
			atomic_store_explicit(&rq_n[c].n[l], 0, memory_order_relaxed);
			for (unsigned w = 0; w < WORDS; w++) {
				SCHED_ATOMIC_HOOK(store, &rq[c][l][w]);
				atomic_store_explicit(&rq[c][l][w], 0, memory_order_relaxed);
			}
		}
}

static void lf_adopt(struct thread *t, unsigned cpu)
{
	SCHED_ATOMIC_HOOK(store, &t->state);
	atomic_store_explicit(&t->state, S_READY | S_ONCPU | ((uint64_t)cpu << SCHED_CPU_SHIFT),
			      memory_order_release);
}

static void lf_insert_new(struct thread *t)
{
	/* release: the thread's fields before its state (nobody else holds it yet) */
	SCHED_ATOMIC_HOOK(store, &t->state);
	atomic_store_explicit(&t->state, S_READY | S_INS, memory_order_release);
	insert_reserved(t);
}

/* The ONCPU holder gives t back (model: release): off its queue if killed, suspended or
 * not ready, else on the queue of this CPU; ONCPU dropped last. Returns true if t is DEAD
 * now (the caller reaps). IRQs off. */
static bool lf_release(struct thread *t, unsigned cpu, bool preempted)
{
	uint64_t s = load(t);
	for (;;) {
		if (!(s & S_ONCPU) || SCHED_CPU_OF(s) != cpu)
			panic("lockfree release: thread '%s' not owned by cpu %u (state 0x%lx)",
			      t->name, cpu, (unsigned long)s);
		/* a thread switched out by preemption (now, or earlier and marked only to be
		 * removed) stays bound to this CPU, wherever it goes next (stopped, ...) */
		uint64_t bind = (preempted || (s & S_PREEMPTED)) ?
					(S_PREEMPTED | ((uint64_t)cpu << SCHED_CPU_SHIFT)) : 0;
		if (s & S_KILL) {
			if (s & S_LINKED) {
				if (cas(t, &s, s & ~S_LINKED)) {
					unl(t);
					s = load(t);
				}
				continue;
			}
			if (cas(t, &s, (s & ~(S_ONCPU | S_CPU | S_READY | S_SUSPEND | S_STOPPED |
					      S_PREEMPTED)) | S_DEAD))
				return true;
			continue;
		}
		/* a level requested (thread_set_level): off the old level's queue, the new
		 * level, then on as below (it is not LINKED now). Before ONCPU is dropped: the
		 * dropping CAS fails if a request came after this look. */
		if (s & S_LVLREQ) {
			if ((s & S_LINKED) && !SCHED_MUTANT(LEVEL_LINKED)) {
				if (cas(t, &s, s & ~S_LINKED)) {
					unl(t);
					s = load(t);
				}
				continue;
			}
			level_apply(t, &s);
			continue;
		}
		if ((s & S_SUSPEND) || !(s & S_READY)) {
			if (s & S_LINKED) {
				if (cas(t, &s, s & ~S_LINKED)) {
					unl(t);
					s = load(t);
				}
				continue;
			}
			/* a preempted thread stays bound to its CPU while stopped; resume
			 * inserts it where that CPU looks first (ONCPU, not linked: ours) */
			if (bind && sched_affine(t, cpu))
				__atomic_store_n(&t->home, cpu, __ATOMIC_RELAXED);
			if (cas(t, &s, (s & ~(S_ONCPU | S_CPU | S_PREEMPTED)) | bind |
				       ((s & S_SUSPEND) ? S_STOPPED : 0)))
				return false;
			continue;
		}
		/* runnable: it stays (or goes) on this CPU's queue; one that left this CPU's
		 * affinity (thread_set_affinity_self: it yields) goes to the queue of the
		 * first CPU of its affinity, which is kicked once ONCPU is dropped. A
		 * preempted one stays here whatever its affinity (sched_may_run). */
		bool here = sched_affine(t, cpu) || preempted;
		if ((s & S_LINKED) && ((t->home != cpu && here) ||
				       (t->home == cpu && !here && !SCHED_MUTANT(AFFINITY_HOME)))) {
			if (cas(t, &s, s & ~S_LINKED)) {	/* re-home: off the old CPU's queue */
				unl(t);
				s = load(t);
			}
			continue;
		}
		if (!(s & S_LINKED)) {
			/* ONCPU, not linked, no INS: home is ours alone */
			__atomic_store_n(&t->home, here ? cpu : sched_first_affine(t), __ATOMIC_RELAXED);
			if (cas(t, &s, s | S_LINKED)) {
				ins(t);
				s = load(t);
			}
			continue;
		}
		uint64_t keep = preempted ? (S_PREEMPTED | ((uint64_t)cpu << SCHED_CPU_SHIFT)) : 0;
		/* read while ONCPU is ours: once dropped, another CPU may own t */
		unsigned dest = __atomic_load_n(&t->home, __ATOMIC_RELAXED), lvl = sched_level_of(t),
			 id = t->id;
		if (cas(t, &s, (s & ~(S_ONCPU | S_CPU | S_PREEMPTED)) | keep)) {
			if (!here)	/* moved: its CPU may be idle, or run a lower level */
				sched_kick(dest, lvl, id);
			return false;
		}
	}
}

/* Try to mark t for cpu (model: the marking CAS). Returns t if it is now ours to run;
 * NULL if it was marked already, stale, bound elsewhere, not allowed here, or marked
 * only to be removed (done here). */
static struct thread *try_mark(struct thread *t, unsigned cpu, struct thread *prev)
{
	struct sched_cpu *sc = &sched_cpus[cpu];
	uint64_t s = load(t);
	for (;;) {
		if (t == prev) {	/* the running thread, on its queue as in Synthesis */
			bool runnable = (s & S_READY) && !(s & (S_KILL | S_SUSPEND));
			/* not again here once it left this CPU's affinity: its release moves it */
			return runnable && sched_affine(t, cpu) ? t : NULL;
		}
		if (s & S_ONCPU) {
			SCHED_STAT_INC(sc->mark_lost);	/* another dispatcher has it: move on */
			return NULL;
		}
		if (!(s & S_LINKED))
			return NULL;	/* stale bit (unlinked meanwhile) or insert not finished */
		if (!sched_may_run(t, s, cpu))
			return NULL;	/* preempted elsewhere (resumes there), or not allowed here */
		bool runnable = (s & S_READY) && !(s & (S_KILL | S_SUSPEND));
		uint64_t want = (s & ~S_CPU) | S_ONCPU | ((uint64_t)cpu << SCHED_CPU_SHIFT);
		if (runnable)
			want &= ~S_PREEMPTED;
		if (cas(t, &s, want)) {
			if (runnable)
				return t;
			/* marked to remove it (killed, suspended): as its owner, release it */
			if (lf_release(t, cpu, false))
				sched_reap(t);
			return NULL;
		}
	}
}

/* Walk queue (qcpu, lvl) from cpu's cursor; returns a marked runnable thread or NULL. */
static struct thread *scan(unsigned qcpu, unsigned lvl, unsigned cpu, struct thread *prev)
{
	struct sched_cpu *sc = &sched_cpus[cpu];
	SCHED_ATOMIC_HOOK(load, &rq_n[qcpu].n[lvl]);
	if (atomic_load_explicit(&rq_n[qcpu].n[lvl], memory_order_seq_cst) == 0)
		return NULL;	/* nothing linked there (rq_n) */
	unsigned start = qcpu == cpu ? sc->cursor[lvl] : 0;
	unsigned sw = start / 64, sb = start % 64;
	for (unsigned step = 0; step <= WORDS; step++) {
		unsigned w = (sw + step) % WORDS;
		SCHED_ATOMIC_HOOK(load, &rq[qcpu][lvl][w]);
		uint64_t bits = atomic_load_explicit(&rq[qcpu][lvl][w], memory_order_seq_cst);
		if (step == 0)
			bits &= sb == 63 ? 0 : ~0ull << (sb + 1);	/* after the cursor */
		else if (step == WORDS)
			bits &= ~0ull >> (63 - sb);	/* wrapped: up to the cursor itself */
		for (; bits; bits &= bits - 1) {
			unsigned idx = w * 64 + (unsigned)__builtin_ctzll(bits);
			struct thread *t = try_mark(&sched_threads[idx], cpu, prev);
			if (t) {
				if (qcpu == cpu)
					sc->cursor[lvl] = idx;
				return t;
			}
		}
	}
	return NULL;
}

static struct thread *lf_pick(unsigned cpu, struct thread *prev, bool *stolen)
{
	/* the running thread's requested level applies before the walk (this CPU holds it:
	 * it is asked to pick again by the requester's sched_force) */
	if (prev && (load(prev) & S_LVLREQ))
		level_self(prev);
	unsigned order[SCHED_LEVELS];
	unsigned n = sched_level_order(cpu, order);
	for (unsigned i = 0; i < n; i++) {
		/* a helping-lock owner a remote helper donated to competes at its boost */
		struct thread *d = sched_donee(cpu, order[i]);
		if (d && try_mark(d, cpu, prev))
			return d;
		struct thread *t = scan(cpu, order[i], cpu, prev);
		if (t)
			return t;
	}
	/* nothing of our own: take work from the others by the same CAS */
	unsigned ncpu = sched_ncpus();
	for (unsigned k = 1; k < ncpu; k++) {
		unsigned q = (cpu + k) % ncpu;
		for (unsigned i = 0; i < n; i++) {
			struct thread *t = scan(q, order[i], cpu, prev);
			if (t) {
				*stolen = true;
				return t;
			}
		}
	}
	return NULL;
}

static int lf_suspend(struct thread *t)
{
	uint64_t s = load(t);
	for (;;) {
		if (s & S_DEAD)
			return KSYNC_ESRCH;
		if (s & S_SUSPEND)
			return KSYNC_OK;
		/* off the queue and off every CPU (a sleeper): stopped at once */
		uint64_t want = s | S_SUSPEND | (!(s & (S_ONCPU | S_LINKED | S_INS)) ? S_STOPPED : 0);
		if (cas(t, &s, want))
			break;
	}
	if ((s & S_ONCPU) && SCHED_CPU_OF(s) != sched_cpu_id())
		sched_force(SCHED_CPU_OF(s));	/* a running target is forced off by IPI */
	return KSYNC_OK;
}

static int lf_resume(struct thread *t)
{
	uint64_t s = load(t);
	bool doins;
	for (;;) {
		if (s & S_DEAD)
			return KSYNC_ESRCH;
		if (!(s & S_SUSPEND))
			return KSYNC_OK;
		doins = (s & S_STOPPED) && (s & S_READY);	/* only a removed, ready thread */
		if (cas(t, &s, (s & ~(S_SUSPEND | S_STOPPED)) | (doins ? S_INS : 0)))
			break;
	}
	if (doins)
		insert_reserved(t);
	return KSYNC_OK;
}

static int lf_kill(struct thread *t)
{
	uint64_t s = load(t);
	for (;;) {
		if (s & S_DEAD)
			return KSYNC_ESRCH;
		if (s & S_KILL)
			return KSYNC_OK;
		if (!(s & (S_ONCPU | S_LINKED | S_INS))) {	/* stopped or asleep: finish it */
			if (cas(t, &s, (s & ~(S_READY | S_SUSPEND | S_STOPPED | S_PREEMPTED | S_CPU)) |
				       S_KILL | S_DEAD))
				return 1;
			continue;
		}
		if (cas(t, &s, s | S_KILL))	/* queued, running or being inserted */
			break;
	}
	if ((s & S_ONCPU) && SCHED_CPU_OF(s) != sched_cpu_id())
		sched_force(SCHED_CPU_OF(s));
	return KSYNC_OK;
}

static int lf_wakeup(struct thread *t, uint64_t cond)
{
	uint64_t s = load(t);
	bool doins;
	for (;;) {
		if (s & S_DEAD)
			return KSYNC_ESRCH;
		if (s & S_KILL)
			return KSYNC_OK;	/* dies anyway */
		doins = !(s & (S_ONCPU | S_LINKED | S_INS | S_STOPPED));
		if (cas(t, &s, s | S_READY | cond | (doins ? S_INS : 0)))
			break;
	}
	if (doins)
		insert_reserved(t);
	return KSYNC_OK;
}

static uint64_t lf_sleep_prepare(struct thread *self, uint64_t cond)
{
	uint64_t s = load(self);
	for (;;) {
		if (s & cond) {		/* occurred: consume */
			if (cas(self, &s, s & ~(s & cond)))
				return s & cond;
			continue;
		}
		if (cas(self, &s, s & ~S_READY))	/* only while the condition is unset */
			return 0;
	}
}

static int lf_sigpend(struct thread *t)
{
	uint64_t s = load(t);
	for (;;) {
		if (s & S_DEAD)
			return KSYNC_ESRCH;
		if (cas(t, &s, s | S_SIGPEND))
			break;
	}
	if ((s & S_ONCPU) && SCHED_CPU_OF(s) != sched_cpu_id())
		sched_force(SCHED_CPU_OF(s));	/* it runs them at its next switch-in */
	return KSYNC_OK;
}

static void lf_exit_mark(struct thread *self)
{
	SCHED_ATOMIC_HOOK(fetch_or, &self->state);
	atomic_fetch_or_explicit(&self->state, S_KILL, memory_order_acq_rel);
}

/* A helper's directed switch (hlock.c): the same marking CAS as a dispatcher's pick, on
 * the one thread it names (try_mark: not if running, not linked, bound elsewhere or not
 * allowed here). Taken from another CPU's queue it is a steal: the release after it ran
 * re-homes it here, as for any steal. */
static struct thread *lf_take(struct thread *t, unsigned cpu)
{
	return try_mark(t, cpu, NULL);
}

/* sched_wake_help's one step (sched_impl.h): a sleeper woken and marked for this CPU by
 * one CAS, skipping the queue - the wakeup's insert (INS, the queue counter and bit,
 * LINKED) and, when it sleeps again, the release's unlink - a single server's request
 * paid both (issue 27 item 2). The invariants hold: ONCPU is set by a CAS that saw it
 * clear; the thread is not LINKED and not on a queue (a dispatcher walking a stale bit or
 * a helper's take skips an unlinked thread); nobody inserts it until its ONCPU holder
 * releases it (a runnable thread released unlinked is inserted there, as after a
 * re-home); a waker racing with us sees ONCPU and only sets its flag; a suspend, kill or
 * signal racing with us changes the word and our CAS fails or retries. */
static struct thread *lf_wake_take(struct thread *t, uint64_t cond, unsigned cpu)
{
	uint64_t s = load(t);
	for (;;) {
		if (s & (S_READY | S_ONCPU | S_LINKED | S_INS | S_SUSPEND | S_STOPPED | S_KILL |
			 S_DEAD))
			return NULL;
		if (!sched_may_run(t, s, cpu))
			return NULL;
		uint64_t want = (s & ~(S_CPU | S_PREEMPTED)) | S_READY | cond | S_ONCPU |
				((uint64_t)cpu << SCHED_CPU_SHIFT);
		if (cas(t, &s, want)) {
			s = want;
			level_apply(t, &s);	/* ONCPU ours, not LINKED: a level asked while it slept */
			return t;
		}
	}
}

/* Something waits on cpu's own queues at a level above (a lower number than) `level`. */
static bool waits_above(unsigned cpu, unsigned level)
{
	for (unsigned l = 0; l < level; l++) {
		SCHED_ATOMIC_HOOK(load, &rq_n[cpu].n[l]);
		if (atomic_load_explicit(&rq_n[cpu].n[l], memory_order_seq_cst))
			return true;
	}
	return false;
}

/* thread_set_level (sched_impl.h: IRQs off, on cpu). The request goes into t's word by
 * CAS; what that CAS saw decides who applies it (the top comment): t itself (self) does
 * at once as its ONCPU holder; a queued t on no CPU is marked ONCPU in the same CAS, for
 * its home CPU or the CPU it is bound to, and released here (try_mark's removal path),
 * then that CPU is kicked for its new level; a t running elsewhere is applied by that CPU
 * at its next pick or its release - asked to pick now (IPI) when a thread of higher
 * priority than the new level waits there, once per request (a request already pending
 * had its chance: no IPI flood from repeated calls); a t being inserted (INS) by its
 * inserter; an asleep or stopped t by the wakeup or resume that inserts it. */
static int lf_set_level(struct thread *t, unsigned level, unsigned cpu, bool self)
{
	uint64_t s = load(t), req = S_LVLREQ | ((uint64_t)level << SCHED_LVL_SHIFT), want;
	unsigned mcpu = 0, id = t->id;
	bool mark;
	for (;;) {
		if (s & S_DEAD)
			return KSYNC_ESRCH;
		if (!(s & S_LVLREQ) && sched_level_of(t) == level)
			return KSYNC_OK;	/* nothing pending, and there already */
		want = (s & ~S_LVL) | req;
		mark = !self && (s & S_LINKED) && !(s & S_ONCPU);
		if (mark) {
			/* relaxed: a stale home (t dispatched and released between this read
			 * and the CAS, the word alike) only moves t to a CPU it ran on */
			mcpu = (s & S_PREEMPTED) ? SCHED_CPU_OF(s) : __atomic_load_n(&t->home, __ATOMIC_RELAXED);
			want = (want & ~S_CPU) | S_ONCPU | ((uint64_t)mcpu << SCHED_CPU_SHIFT);
		}
		if (cas(t, &s, want))
			break;
	}
	if (self) {
		level_self(t);
	} else if (mark) {
		/* its owner now, as a dispatcher that marked it: the release moves it (or
		 * removes it, if it was marked to be killed or suspended meanwhile) */
		if (lf_release(t, mcpu, (s & S_PREEMPTED) != 0))
			sched_reap(t);
		else
			sched_kick(mcpu, level, id);
	} else if ((s & S_ONCPU) && SCHED_CPU_OF(s) != cpu && !(s & S_LVLREQ) &&
		   waits_above(SCHED_CPU_OF(s), level)) {
		sched_force(SCHED_CPU_OF(s));	/* its pick there applies it */
	}
	return KSYNC_OK;
}

static unsigned lf_queued(unsigned *entries)
{
	unsigned n = 0, e = 0;
	for (unsigned c = 0; c < MAX_CPUS; c++)
		for (unsigned l = 0; l < SCHED_LEVELS; l++) {
			n += atomic_load_explicit(&rq_n[c].n[l], memory_order_relaxed);
			for (unsigned w = 0; w < WORDS; w++)	/* (no popcount in the kernel's libgcc) */
				for (uint64_t b = atomic_load_explicit(&rq[c][l][w], memory_order_relaxed);
				     b; b &= b - 1)
					e++;
		}
	*entries = e;
	return n;
}

const struct sched_ops sched_ops_lockfree = {
	.name = "lockfree",
	.reset = lf_reset,
	.adopt = lf_adopt,
	.insert_new = lf_insert_new,
	.pick = lf_pick,
	.release = lf_release,
	.suspend = lf_suspend,
	.resume = lf_resume,
	.kill = lf_kill,
	.wakeup = lf_wakeup,
	.sleep_prepare = lf_sleep_prepare,
	.sigpend = lf_sigpend,
	.exit_mark = lf_exit_mark,
	.take = lf_take,
	.wake_take = lf_wake_take,
	.set_level = lf_set_level,
	.queued = lf_queued,
};
