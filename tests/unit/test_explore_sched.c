/*
 * test_explore_sched.c - the interleaving explorer over the lock-free scheduler's state
 * word and run-queue bits (kernel/sched/rq-lockfree.c, compiled into this test; issue 10:
 * "the in-tree interleaving explorer on the state-word transitions"; spin/sched_mark.pml
 * is the model of the same protocol, this is the C code itself).
 *
 * The explorer's coroutines are CPUs: coroutine c calls lf_pick(c) and lf_release(t, c)
 * as CPU c's dispatcher, and the thread operations (suspend, resume, kill, wakeup) with
 * sched_cpu_id() = c. They act on one or two kernel threads, slots 0 and 1 of the
 * sched_threads table defined here (level 0, any CPU), reset before every execution.
 * rq-lockfree.c's SCHED_ATOMIC_HOOK puts a scheduling point before each of its atomic
 * steps (queue-bit fetch_or / fetch_and / load, state-word load / CAS / store); a
 * dispatched thread "runs" for one more scheduling point ("run") before its CPU releases
 * it, so other CPUs' steps fall inside its time on the CPU. A sleeper thread's code is
 * sched_sleep's loop: each time it is dispatched it calls sleep_prepare, until that
 * returns the condition.
 *
 * Checked before every atomic step (the state the previous step left) and at the end:
 * a thread is DEAD only off every queue and CPU and never changes after; STOPPED only off
 * every queue and CPU, with SUSPEND; an inserter's INS only while the thread is neither
 * ONCPU nor LINKED; a thread on no CPU and with no insert pending has a queue bit exactly
 * when it is LINKED, on its home CPU's queue; a thread owned by CPU c (a pick there
 * returned it, its release has not returned) is ONCPU for c. When pick returns a thread:
 * no other CPU owns it (never on two CPUs), it is marked for this CPU, runnable, not
 * reaped, and if it had gone to sleep a wakeup set its condition. After the coroutines,
 * the teardown drains the queues (up to three picks, each run and released, on each CPU)
 * and the check requires: nothing on a CPU or being inserted, DEAD <-> reaped exactly
 * once, a killed thread DEAD, a suspended one STOPPED, and a thread that is READY and
 * neither suspended nor killed dispatchable (the drain picked it: nothing lost); plus
 * each scenario's own outcome. A panic of rq-lockfree.c (unlinking a bit that is not set,
 * releasing a thread another CPU owns) ends its coroutine (longjmp to the coroutine's
 * start, on the same stack) and is a violation.
 *
 * Level changes (thread_set_level: lf_set_level): an operator requests a level for T0
 * (level 0 at the start; LVL_B) while it sleeps, is woken, is queued, runs, is killed;
 * a running T0 may change its own level (the self path). Checked besides: a thread off
 * every CPU and insert has its bit on the queue of its home CPU AT ITS LEVEL (t->level),
 * and a word with a level request is ONCPU, or INS, or neither LINKED nor INS (never a
 * queued thread on no CPU: nobody would apply it); after the drain, the level requested
 * last is the one applied.
 *
 * Seeded bugs (as spin/sched_mark.pml's MUTANT 1, a lost wakeup, a level moved under a
 * queued bit): this file wraps the CAS rq-lockfree.c uses; with `mutant` set, one kind of
 * CAS becomes a plain store of the value the caller computed from its earlier load - the
 * dispatcher's marking CAS (two CPUs can mark the thread), or sleep_prepare's
 * READY-clearing CAS (Hohmuth & Haertig's test-and-sleep no longer atomic). The third
 * cannot be said as a CAS: rq-lockfree.c's SCHED_MUTANT(LEVEL_LINKED), defined here as
 * "that mutant is on" (0 in the kernel: no code), changes the level without the unlink
 * first (release, the running thread's own change, the inserter's retry). A fourth,
 * SCHED_MUTANT(AFFINITY_HOME), is the release as it was before a thread could leave its
 * CPU's mask (thread_set_affinity_self): it leaves such a thread on that CPU's queue.
 * The explorer must find all four. With T0 narrowing its mask to the other CPU whenever
 * it runs (sc_affinity), checked besides: a queued thread off every CPU is on the queue
 * of a CPU of its mask unless a preempted release bound it, and a pick never returns a
 * thread outside its mask on a CPU it is not bound to.
 *
 * Reduction: loads of run-queue words no coroutine ever writes (levels 1 and 3, CPUs
 * 2-63, slots 64-511) are not scheduling points (their value is 0 in every interleaving;
 * the check verifies that those words stayed 0). Everything else is.
 */
#include "../explore/explore.h"

/* Every atomic step of rq-lockfree.c (SCHED_ATOMIC_HOOK) goes through sched_hook: the
 * per-step check, then the explorer's scheduling point. */
#undef KSYNC_ATOMIC_HOOK
#define KSYNC_ATOMIC_HOOK(op, addr) sched_hook(#op, (const void *)(addr))
static void sched_hook(const char *op, const void *addr);

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ksync/errors.h>
#include <ksync/ktest.h>

#include "../../kernel/sched/sched_impl.h"

#include "../explore/explore.c"

/* ---- the seeded bugs: a CAS rq-lockfree.c calls through this wrapper ------------------ */

enum { MUTANT_NONE, MUTANT_PLAIN_MARK, MUTANT_SLEEP_STORE, MUTANT_LEVEL_LINKED,
       MUTANT_AFFINITY_HOME };

/* Set by the mutant tests between explorations only. */
static int mutant;

static bool mutant_cas(_Atomic uint64_t *p, uint64_t *expected, uint64_t want,
		       memory_order succ, memory_order fail_order)
{
	uint64_t old = *expected;

	/* the marking CAS (try_mark: the only CAS that sets ONCPU) or sleep_prepare's CAS
	 * that clears READY alone: a plain store of what the caller computed from its
	 * earlier load, whatever happened since */
	if ((mutant == MUTANT_PLAIN_MARK && !(old & SCHED_ONCPU) && (want & SCHED_ONCPU)) ||
	    (mutant == MUTANT_SLEEP_STORE && (old & SCHED_READY) &&
	     want == (old & ~SCHED_READY))) {
		atomic_store_explicit(p, want, memory_order_release);
		return true;
	}
	return atomic_compare_exchange_strong_explicit(p, expected, want, succ, fail_order);
}

/* rq-lockfree.c's cas() calls this name; only that file is compiled below it. */
#undef atomic_compare_exchange_strong_explicit
#define atomic_compare_exchange_strong_explicit(p, e, d, s, f) mutant_cas(p, e, d, s, f)
/* rq-lockfree.c's seeded bugs that are no CAS (LEVEL_LINKED) */
#define SCHED_MUTANT(bug) (mutant == MUTANT_##bug)

#include "../../kernel/sched/rq-lockfree.c"

/* ---- what rq-lockfree.c calls from thread.c --------------------------------------------
 * All state below is the test's own, on one OS thread: coroutines switch only at hooks,
 * so nothing here needs an atomic. Reset by setup() before every execution. */

#define NCPU 2		/* CPUs 0 and 1 (coroutines 0 and 1; a third coroutine is an operator) */
#define NTHR 2		/* thread slots the scenarios may use */
#define COND SCHED_COND_USER
#define LVL_B 2		/* the other level the level scenarios use (threads start at 0) */
#define NLVL 2		/* watched levels: 0 and LVL_B */
static const unsigned lvls[NLVL] = { 0, LVL_B };

struct sched_cpu sched_cpus[MAX_CPUS];
struct thread sched_threads[SCHED_MAX_THREADS];

static struct kx *cur_x;	/* the exploration running (setup sets it), for the stubs */
static unsigned nthr;		/* slots in use in this scenario */
static int owner[NTHR];		/* CPU that owns the thread (from the pick that returned it
				   until its release returned), -1 */
static unsigned reaps[NTHR];	/* sched_reap calls */
static unsigned drained[NTHR];	/* picks of the teardown's drain */
static bool dead_seen[NTHR];	/* a hook saw DEAD: the word may not change after */
static uint64_t dead_word[NTHR];
static bool slept[NTHR];	/* sleep_prepare cleared READY; not dispatched since */
static unsigned picks;		/* picks that returned a thread (coroutines) */
static bool sleeper;		/* T0's program: sched_sleep(COND) (else it just runs) */
static bool sleep_done;		/* T0's sched_sleep returned ... */
static uint64_t got_sleep;	/* ... with these flags (sleep_prepare consumed them) */
static int rc_suspend, rc_resume, rc_kill, rc_wakeup, rc_level;
static bool self_level;		/* T0's program: each time it runs, it changes its own level */
static bool self_affinity;	/* T0's program: each time it runs, its mask becomes the other
				   CPU alone (thread_set_affinity_self's store; the release moves it) */
static int bound_cpu[NTHR];	/* the CPU a preempted release bound it to (-1: none) */
static int level_want;		/* the level last requested of T0 (-1: none): the end state */
static bool violated;		/* a per-step or pick check failed: why */
static char why[256];
static bool panicked;		/* rq-lockfree.c called panic: its message */
static char panic_msg[256];
static bool in_teardown;
static jmp_buf teardown_jb;	/* a panic in the teardown's drain returns here */
static jmp_buf coro_jb[KX_MAX_THREADS];	/* ... and in coroutine c, to its end (coro) */

__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
	va_list ap;

	if (violated)
		return;
	violated = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
}

void panic(const char *fmt, ...)
{
	va_list ap;

	if (!panicked) {
		panicked = true;
		va_start(ap, fmt);
		vsnprintf(panic_msg, sizeof(panic_msg), fmt, ap);
		va_end(ap);
	}
	if (in_teardown)
		longjmp(teardown_jb, 1);
	if (cur_x && kx_tid(cur_x) >= 0)
		longjmp(coro_jb[kx_tid(cur_x)], 1);	/* the coroutine ends there */
	fprintf(stderr, "test_explore_sched: panic outside an explored thread: %s\n", panic_msg);
	abort();
}

unsigned sched_cpu_id(void)
{
	int t = cur_x ? kx_tid(cur_x) : -1;

	return t < 0 ? 0 : (unsigned)t;
}

/* No IPIs to send: every coroutine keeps running until its program ends. */
void sched_kick(unsigned cpu, unsigned level, unsigned id)
{
	(void)cpu;
	(void)level;
	(void)id;
}

void sched_force(unsigned cpu)
{
	(void)cpu;
}

bool sched_affine(const struct thread *t, unsigned cpu)
{
	return cpu < NCPU && (t->affinity >> cpu & 1);
}

unsigned sched_first_affine(const struct thread *t)
{
	for (unsigned c = 0; c < NCPU; c++)
		if (sched_affine(t, c))
			return c;
	return 0;
}

unsigned sched_ncpus(void)
{
	return NCPU;
}

/* Levels 0, 1, ... in turn; in the level scenarios as thread.c's with the default
 * table's effect: the level served first turns with a per-CPU counter, then the lower
 * levels, then the higher (reset by setup), so a thread at the lower priority is
 * dispatched too (the drain's three picks per CPU reach it). */
static unsigned order_ctr[NCPU];
static const struct scenario *cur_sc;
static bool levels_on(void);

unsigned sched_level_order(unsigned cpu, unsigned *order)
{
	unsigned first = levels_on() && cpu < NCPU ? order_ctr[cpu]++ % SCHED_LEVELS : 0, k = 0;

	for (unsigned l = first; l < SCHED_LEVELS; l++)
		order[k++] = l;
	for (unsigned l = 0; l < first; l++)
		order[k++] = l;
	return k;
}

/* No helping-lock owners in the explored programs: no donation requests. */
struct thread *sched_donee(unsigned cpu, unsigned level)
{
	(void)cpu;
	(void)level;
	return NULL;
}

void sched_reap(struct thread *t)
{
	uint64_t s = atomic_load_explicit(&t->state, memory_order_relaxed);

	if (t->id >= nthr)
		return;
	if (!(s & SCHED_DEAD))
		fail("T%u reaped while not DEAD (state 0x%llx)", t->id, (unsigned long long)s);
	if (++reaps[t->id] > 1)
		fail("T%u reaped %u times (DEAD set more than once)", t->id, reaps[t->id]);
}

/* ---- the invariants ----------------------------------------------------------------- */

static uint64_t word(unsigned i)
{
	return atomic_load_explicit(&sched_threads[i].state, memory_order_relaxed);
}

/* Queue (c, l), word w is one the scenarios' threads can be on: CPU 0 and 1, level 0
 * (and LVL_B in the level scenarios), slots 0-63 (word 0). */
static bool watched_at(unsigned c, unsigned l, unsigned w)
{
	return c < NCPU && w == 0 && (l == 0 || (l == LVL_B && levels_on()));
}

/* The same for the address an atomic step names. */
static bool watched(const void *addr)
{
	for (unsigned c = 0; c < NCPU; c++)
		for (unsigned k = 0; k < (levels_on() ? NLVL : 1u); k++)
			if (addr == (const void *)&rq[c][lvls[k]][0] ||
			    addr == (const void *)&rq_n[c].n[lvls[k]])
				return true;
	return false;
}

static void check_state(const char *where)
{
	const unsigned nlv = levels_on() ? NLVL : 1;	/* the others stay 0 (check()) */

	/* a queue's count is never below its number of bits (ins adds before the bit, unl
	 * takes after it: a scan that reads 0 may skip the queue) */
	for (unsigned c = 0; c < NCPU; c++)
		for (unsigned k = 0; k < nlv; k++) {
			unsigned l = lvls[k];
			unsigned n = atomic_load_explicit(&rq_n[c].n[l], memory_order_relaxed);
			unsigned bits = (unsigned)__builtin_popcountll(
				atomic_load_explicit(&rq[c][l][0], memory_order_relaxed));
			if (n < bits || n > bits + nthr)
				fail("%s: rq%u level %u has %u bits but a count of %u", where, c, l,
				     bits, n);
		}
	for (unsigned i = 0; i < nthr; i++) {
		uint64_t s = word(i), bit = 1ull << i;
		unsigned nb = 0, on = 0, on_l = 0;

		for (unsigned c = 0; c < NCPU; c++)
			for (unsigned k = 0; k < nlv; k++)
				if (atomic_load_explicit(&rq[c][lvls[k]][0], memory_order_relaxed) & bit) {
					nb++;
					on = c;
					on_l = lvls[k];
				}
		if (dead_seen[i] && s != dead_word[i])
			fail("%s: T%u changed after DEAD (0x%llx -> 0x%llx)", where, i,
			     (unsigned long long)dead_word[i], (unsigned long long)s);
		if ((s & SCHED_DEAD) && !dead_seen[i]) {
			dead_seen[i] = true;
			dead_word[i] = s;
		}
		if ((s & SCHED_DEAD) && ((s & (SCHED_ONCPU | SCHED_LINKED | SCHED_INS)) || nb))
			fail("%s: T%u DEAD but on a CPU or queue (0x%llx, %u bits)", where, i,
			     (unsigned long long)s, nb);
		if ((s & SCHED_STOPPED) &&
		    ((s & (SCHED_ONCPU | SCHED_LINKED | SCHED_INS)) || nb || !(s & SCHED_SUSPEND)))
			fail("%s: T%u STOPPED but on a CPU or queue, or not SUSPEND (0x%llx, "
			     "%u bits)", where, i, (unsigned long long)s, nb);
		if ((s & SCHED_INS) && ((s & (SCHED_ONCPU | SCHED_LINKED)) || nb > 1))
			fail("%s: T%u INS while ONCPU or LINKED (0x%llx, %u bits)", where, i,
			     (unsigned long long)s, nb);
		if (!(s & (SCHED_ONCPU | SCHED_INS)) &&
		    (nb != ((s & SCHED_LINKED) ? 1u : 0u) ||
		     (nb && (on != sched_threads[i].home || on_l != sched_threads[i].level))))
			fail("%s: T%u off every CPU: LINKED %d but %u queue bits (on CPU %u level "
			     "%u, home %u level %u; 0x%llx)", where, i, !!(s & SCHED_LINKED), nb,
			     on, on_l, sched_threads[i].home, sched_threads[i].level,
			     (unsigned long long)s);
		if (!(s & (SCHED_ONCPU | SCHED_INS)) && nb && !(s & SCHED_PREEMPTED) &&
		    !sched_affine(&sched_threads[i], on))
			fail("%s: T%u queued on CPU %u, outside its mask 0x%llx (0x%llx)", where, i,
			     on, (unsigned long long)sched_threads[i].affinity,
			     (unsigned long long)s);
		if ((s & SCHED_LVLREQ) && !(s & (SCHED_ONCPU | SCHED_INS)) && (s & SCHED_LINKED))
			fail("%s: T%u queued on no CPU with a level request nobody applies "
			     "(0x%llx)", where, i, (unsigned long long)s);
		if ((s & SCHED_ONCPU) && nb > 1)
			fail("%s: T%u on two queues (0x%llx)", where, i, (unsigned long long)s);
		if (owner[i] >= 0 &&
		    (!(s & SCHED_ONCPU) || SCHED_CPU_OF(s) != (unsigned)owner[i]))
			fail("%s: T%u owned by CPU %d but its word says ONCPU %d for CPU %u "
			     "(0x%llx)", where, i, owner[i], !!(s & SCHED_ONCPU),
			     SCHED_CPU_OF(s), (unsigned long long)s);
	}
}

static void sched_hook(const char *op, const void *addr)
{
	const char *a = addr;

	if (cur_x == NULL || kx_tid(cur_x) < 0)
		return;		/* setup and teardown run straight through */
	/* a queue word or queue count nobody writes: no scheduling point (see the top
	 * comment) */
	if (strcmp(op, "load") == 0 && !watched(addr) &&
	    ((a >= (const char *)rq && a < (const char *)rq + sizeof(rq)) ||
	     (a >= (const char *)rq_n && a < (const char *)rq_n + sizeof(rq_n))))
		return;
	check_state(op);
	kx_hook(op, addr);
}

/* ---- recorded operations (for the printed history; no sequential specification) ---- */

enum { OP_PICK = KX_USER, OP_RELEASE, OP_PREEMPT, OP_SUSPEND, OP_RESUME, OP_KILL,
       OP_WAKEUP, OP_SLEEP, OP_LEVEL, OP_LEVEL_SELF };

static const char *op_name(int op)
{
	/* pick_on(cpu) -> slot or EMPTY; release_on(cpu) -> 1 if DEAD; the operations
	 * (slot) -> their KSYNC_* code (kill: 1 = DEAD at once); sleep_prepare(slot) -> the
	 * condition flags it consumed, >> 32; set_level(level) -> its KSYNC_* code */
	static const char *const n[] = { "pick_on", "release_on", "release_preempted_on",
					 "suspend", "resume", "kill", "wakeup",
					 "sleep_prepare", "set_level", "set_own_level" };

	return op >= OP_PICK && op <= OP_LEVEL_SELF ? n[op - OP_PICK] : "op";
}

static void names_init(void *s)
{
	(void)s;
}

/* Accepts every history: the checks are the invariants above; this only names the ops. */
static bool names_apply(void *s, int op, uint64_t arg, uint64_t result)
{
	(void)s;
	(void)op;
	(void)arg;
	(void)result;
	return true;
}

static const struct kx_spec op_names = { "sched-ops", 1, names_init, names_apply, op_name };

/* A pick returned t for cpu: it may run there now. */
static void claim(struct thread *t, unsigned cpu)
{
	unsigned i = t->id;
	uint64_t s = word(i);

	if (owner[i] >= 0)
		fail("T%u picked on CPU %u while CPU %d owns it (on two CPUs)", i, cpu, owner[i]);
	if (!(s & SCHED_ONCPU) || SCHED_CPU_OF(s) != cpu)
		fail("T%u picked on CPU %u but not marked for it (0x%llx)", i, cpu,
		     (unsigned long long)s);
	if (!(s & SCHED_READY) || (s & (SCHED_KILL | SCHED_SUSPEND | SCHED_STOPPED | SCHED_DEAD)))
		fail("T%u picked on CPU %u but not runnable (0x%llx)", i, cpu,
		     (unsigned long long)s);
	if (reaps[i])
		fail("T%u picked on CPU %u after it was reaped", i, cpu);
	if (slept[i] && !(s & COND))
		fail("T%u dispatched after sleeping without its wakeup's condition (0x%llx)", i,
		     (unsigned long long)s);
	slept[i] = false;
	owner[i] = (int)cpu;
}

static struct thread *pick(struct kx *x, unsigned cpu)
{
	bool stolen = false;
	int op = kx_op_begin(x, OP_PICK, cpu);
	struct thread *t = lf_pick(cpu, NULL, &stolen);

	kx_op_end(x, op, t ? t->id : KX_EMPTY);
	if (t && t->id >= nthr)
		fail("pick on CPU %u returned slot %u, not a thread of the scenario", cpu, t->id);
	else if (t && !sched_affine(t, cpu) && bound_cpu[t->id] != (int)cpu)
		fail("pick on CPU %u returned T%u outside its mask 0x%llx", cpu, t->id,
		     (unsigned long long)t->affinity);
	else if (t)
		claim(t, cpu);
	return t && t->id < nthr ? t : NULL;
}

static void release(struct kx *x, struct thread *t, unsigned cpu, bool preempted)
{
	int op;
	bool dead;

	op = kx_op_begin(x, preempted ? OP_PREEMPT : OP_RELEASE, cpu);
	dead = lf_release(t, cpu, preempted);
	kx_op_end(x, op, dead);
	owner[t->id] = -1;	/* its last step dropped ONCPU: the CPU gave it back */
	bound_cpu[t->id] = preempted ? (int)cpu : -1;
	if (dead)
		sched_reap(t);
}

/* The picked thread runs on cpu: one scheduling point; a sleeper T0 takes one round of
 * sched_sleep(COND) (thread.c: sleep_prepare; 0 = READY is clear, it switches away and
 * takes the next round when it is dispatched again; else it returns the flags). */
static void run_thread(struct kx *x, struct thread *t)
{
	int op;
	uint64_t got;

	kx_hook("run", &t->state);
	if (self_affinity && t->id == 0)	/* the store; its release is the yield */
		__atomic_store_n(&t->affinity, 1ull << (owner[0] == 0 ? 1 : 0), __ATOMIC_RELAXED);
	if (self_level && t->id == 0) {	/* it changes its own level (holding ONCPU here) */
		unsigned want = t->level == 0 ? LVL_B : 0;

		op = kx_op_begin(x, OP_LEVEL_SELF, want);
		rc_level = lf_set_level(t, want, (unsigned)owner[0], true);
		kx_op_end(x, op, (uint64_t)(int64_t)rc_level);
		if (level_want != -2)	/* -2: another requester too; no "last" to check */
			level_want = (int)want;
	}
	if (!sleeper || t->id != 0 || sleep_done)
		return;
	op = kx_op_begin(x, OP_SLEEP, t->id);
	got = lf_sleep_prepare(t, COND);
	kx_op_end(x, op, got >> SCHED_COND_SHIFT);
	if (got) {
		sleep_done = true;
		got_sleep = got;
	} else {
		slept[t->id] = true;	/* READY clear: the release takes it off */
	}
}

/* One dispatch on cpu: pick, run, release. */
static void dispatch(struct kx *x, unsigned cpu, bool preempted)
{
	struct thread *t = pick(x, cpu);

	if (!t)
		return;
	picks++;
	run_thread(x, t);
	release(x, t, cpu, preempted);
}

/* ---- setup, teardown, check ------------------------------------------------------------ */

struct scenario {
	const char *name;
	int ncoro;			/* coroutines: CPU 0, CPU 1, [operator] */
	void (*prog[3])(struct kx *x, unsigned cpu);	/* coroutine c's program, as CPU c */
	unsigned nthr;			/* kernel threads: slots 0 .. nthr-1 */
	unsigned home[NTHR];		/* the CPU whose queue each starts on */
	bool sleeper;			/* T0 calls sched_sleep(COND) */
	bool self_level;		/* T0 changes its own level each time it runs */
	bool levels;			/* level LVL_B is used: its queue words are watched */
	bool self_affinity;		/* T0 narrows its mask to the other CPU when it runs */
	void (*check)(void);		/* the scenario's outcome, after the drain: fail() */
	int bound;
	long random;			/* > 0: a random sample of this many schedules */
	/* T0 at the start: READY and queued; asleep (READY clear, off the queues, as a
	 * sleep's release leaves it); suspended and stopped */
	enum { QUEUED, ASLEEP, STOPPED } start;
};

static bool levels_on(void) { return cur_sc && cur_sc->levels; }

static void setup(struct kx *x, void *arg)
{
	static const char *const tn[NTHR] = { "T0.state", "T1.state" };
	static const char *const qn[NCPU] = { "rq0", "rq1" };

	(void)arg;
	cur_x = x;
	nthr = cur_sc->nthr;
	memset(sched_cpus, 0, sizeof(sched_cpus));
	memset(sched_threads, 0, sizeof(struct thread) * NTHR);
	lf_reset();
	for (unsigned i = 0; i < NTHR; i++) {
		owner[i] = -1;
		reaps[i] = drained[i] = 0;
		bound_cpu[i] = -1;
		dead_seen[i] = slept[i] = false;
		dead_word[i] = 0;
	}
	picks = 0;
	memset(order_ctr, 0, sizeof(order_ctr));
	sleeper = cur_sc->sleeper;
	self_level = cur_sc->self_level;
	self_affinity = cur_sc->self_affinity;
	level_want = -1;
	rc_level = 1000;
	sleep_done = false;
	got_sleep = 0;
	rc_suspend = rc_resume = rc_kill = rc_wakeup = 1000;
	violated = panicked = in_teardown = false;
	why[0] = panic_msg[0] = 0;
	for (unsigned i = 0; i < nthr; i++) {
		struct thread *t = &sched_threads[i];

		t->id = i;
		t->level = 0;
		t->affinity = SCHED_AFFINITY_ANY;
		t->home = cur_sc->home[i];
		snprintf(t->name, sizeof(t->name), "T%u", i);
		if (i > 0 || cur_sc->start == QUEUED) {
			lf_insert_new(t);	/* READY, LINKED, on rq[home] (no hooks here) */
		} else if (cur_sc->start == ASLEEP) {
			atomic_store_explicit(&t->state, 0, memory_order_relaxed);
			slept[i] = true;
		} else {
			atomic_store_explicit(&t->state, SCHED_READY | SCHED_SUSPEND |
					  SCHED_STOPPED, memory_order_relaxed);
		}
		kx_name(x, &t->state, tn[i]);
	}
	static const char *const cn[NCPU] = { "rq0.count", "rq1.count" };
	for (unsigned c = 0; c < NCPU; c++) {
		kx_name(x, &rq[c][0][0], qn[c]);
		kx_name(x, &rq_n[c].n[0], cn[c]);
	}
}

/* After the coroutines: the quiescent state, then a drain - up to three picks on each
 * CPU (a runnable thread is picked and put back; a killed or suspended one is removed). */
static void teardown(struct kx *x, void *arg)
{
	(void)arg;
	check_state("end");
	in_teardown = true;
	if (setjmp(teardown_jb) == 0) {
		for (unsigned c = 0; c < NCPU; c++)
			for (int k = 0; k < 3; k++) {
				struct thread *t = pick(x, c);

				if (!t)
					break;
				drained[t->id]++;
				run_thread(x, t);
				release(x, t, c, false);
			}
	}
	in_teardown = false;
}

static bool check(struct kx *x, void *arg)
{
	(void)x;
	(void)arg;
	check_state("after the drain");
	if (panicked)
		fail("rq-lockfree.c panicked: %s", panic_msg);
	for (unsigned c = 0; c < MAX_CPUS; c++)
		for (unsigned l = 0; l < SCHED_LEVELS; l++) {
			for (unsigned w = 0; w < WORDS; w++)
				if (!watched_at(c, l, w) &&
				    atomic_load_explicit(&rq[c][l][w], memory_order_relaxed))
					fail("queue word rq[%u][%u][%u] written", c, l, w);
			if (!watched_at(c, l, 0) &&
			    atomic_load_explicit(&rq_n[c].n[l], memory_order_relaxed))
				fail("queue count rq_n[%u][%u] written", c, l);
		}
	/* quiescent: each count is exactly its queue's bits */
	const unsigned nlv = levels_on() ? NLVL : 1;
	for (unsigned c = 0; c < NCPU; c++)
		for (unsigned k = 0; k < nlv; k++) {
			unsigned l = lvls[k];

			if (atomic_load_explicit(&rq_n[c].n[l], memory_order_relaxed) !=
			    (unsigned)__builtin_popcountll(atomic_load_explicit(&rq[c][l][0], memory_order_relaxed)))
				fail("rq%u level %u: count %u but %d bits after the drain", c, l,
				     atomic_load_explicit(&rq_n[c].n[l], memory_order_relaxed),
				     __builtin_popcountll(atomic_load_explicit(&rq[c][l][0],
									  memory_order_relaxed)));
		}
	for (unsigned i = 0; i < nthr; i++) {
		uint64_t s = word(i);

		if (owner[i] >= 0 || (s & (SCHED_ONCPU | SCHED_INS)))
			fail("T%u still on a CPU or being inserted (0x%llx)", i,
			     (unsigned long long)s);
		if (reaps[i] != ((s & SCHED_DEAD) ? 1u : 0u))
			fail("T%u: DEAD %d but reaped %u times", i, !!(s & SCHED_DEAD), reaps[i]);
		if ((s & SCHED_KILL) && !(s & SCHED_DEAD))
			fail("T%u killed but not DEAD after the drain (0x%llx)", i,
			     (unsigned long long)s);
		if ((s & SCHED_SUSPEND) && !(s & (SCHED_STOPPED | SCHED_DEAD)))
			fail("T%u suspended but not STOPPED after the drain (0x%llx)", i,
			     (unsigned long long)s);
		if ((s & SCHED_READY) && !(s & (SCHED_SUSPEND | SCHED_KILL | SCHED_DEAD)) &&
		    (!(s & SCHED_LINKED) || drained[i] == 0))
			fail("T%u READY but lost: not dispatchable (LINKED %d, drained %u; "
			     "0x%llx)", i, !!(s & SCHED_LINKED), drained[i],
			     (unsigned long long)s);
		/* the level requested last is applied once the thread was queued again (a
		 * sleeper or a stopped thread keeps it requested: its wakeup applies it) */
		if (i == 0 && level_want >= 0 && !(s & SCHED_DEAD) &&
		    ((s & SCHED_LVLREQ) ? SCHED_LVL_OF(s) : sched_threads[0].level) != (unsigned)level_want)
			fail("T0: level %u%s, but %d was requested last (0x%llx)",
			     (s & SCHED_LVLREQ) ? SCHED_LVL_OF(s) : sched_threads[0].level,
			     (s & SCHED_LVLREQ) ? " requested" : "", level_want, (unsigned long long)s);
		if (i == 0 && (s & SCHED_LINKED) && (s & SCHED_LVLREQ))
			fail("T0 queued with its level request not applied (0x%llx)",
			     (unsigned long long)s);
	}
	if (!violated && cur_sc->check)
		cur_sc->check();
	return !violated;
}

/* ---- the scenarios --------------------------------------------------------------------- */

/* Coroutine c runs cur_sc->prog[c] as CPU c; a panic of rq-lockfree.c ends it here. */
static void coro(struct kx *x, int tid, void *arg)
{
	(void)arg;
	if (setjmp(coro_jb[tid]) == 0)
		cur_sc->prog[tid](x, (unsigned)tid);
}

static void cpu_twice(struct kx *x, unsigned cpu)
{
	dispatch(x, cpu, false);
	dispatch(x, cpu, false);
}

static void cpu_twice_preempted(struct kx *x, unsigned cpu)
{
	dispatch(x, cpu, true);	/* switched out by preemption: stays bound to this CPU */
	dispatch(x, cpu, false);
}

static void op_suspend_resume(struct kx *x, unsigned cpu)
{
	int op;

	(void)cpu;
	op = kx_op_begin(x, OP_SUSPEND, 0);
	rc_suspend = lf_suspend(&sched_threads[0]);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_suspend);
	op = kx_op_begin(x, OP_RESUME, 0);
	rc_resume = lf_resume(&sched_threads[0]);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_resume);
}

static void op_kill(struct kx *x, unsigned cpu)
{
	int op;

	(void)cpu;
	op = kx_op_begin(x, OP_KILL, 0);
	rc_kill = lf_kill(&sched_threads[0]);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_kill);
	if (rc_kill == 1)	/* off every CPU: DEAD at once, the killer reaps (thread_kill) */
		sched_reap(&sched_threads[0]);
}

static void op_wakeup(struct kx *x, unsigned cpu)
{
	int op;

	(void)cpu;
	op = kx_op_begin(x, OP_WAKEUP, 0);
	rc_wakeup = lf_wakeup(&sched_threads[0], COND);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_wakeup);
}

/* CPU 1: an interrupt handler or thread wakes T0, then the CPU dispatches. */
static void cpu_wakeup_dispatch(struct kx *x, unsigned cpu)
{
	op_wakeup(x, cpu);
	dispatch(x, cpu, false);
}

static void op_resume(struct kx *x, unsigned cpu)
{
	int op;

	(void)cpu;
	op = kx_op_begin(x, OP_RESUME, 0);
	rc_resume = lf_resume(&sched_threads[0]);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_resume);
}

static void cpu_resume_dispatch(struct kx *x, unsigned cpu)
{
	op_resume(x, cpu);
	dispatch(x, cpu, false);
}

/* The operator asks for T0's level LVL_B (thread_set_level from another CPU: coroutine
 * 2's id is no CPU's, so it never takes the self path). */
static void op_level(struct kx *x, unsigned cpu)
{
	int op;

	op = kx_op_begin(x, OP_LEVEL, LVL_B);
	rc_level = lf_set_level(&sched_threads[0], LVL_B, cpu, false);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_level);
	level_want = self_level ? -2 : LVL_B;
}

/* level LVL_B asked, then the kill */
static void op_level_kill(struct kx *x, unsigned cpu)
{
	op_level(x, cpu);
	op_kill(x, cpu);
}

/* the sleeper woken, its level changed, suspended and resumed, its level changed back */
static void op_wakeup_level_suspend_resume(struct kx *x, unsigned cpu)
{
	int op;

	op_wakeup(x, cpu);
	op_level(x, cpu);
	op_suspend_resume(x, cpu);
	op = kx_op_begin(x, OP_LEVEL, 0);
	rc_level = lf_set_level(&sched_threads[0], 0, cpu, false);
	kx_op_end(x, op, (uint64_t)(int64_t)rc_level);
	level_want = 0;
}

/* everything at once: wakeup, suspend, resume, kill of the sleeper */
static void op_wakeup_suspend_resume_kill(struct kx *x, unsigned cpu)
{
	op_wakeup(x, cpu);
	op_suspend_resume(x, cpu);
	op_kill(x, cpu);
}

/* The scenarios' outcomes, after the drain (the general checks have passed). */

/* a: someone dispatched it (the general checks: queued, dispatchable, never on two CPUs) */
static void outcome_race(void)
{
	if (picks == 0)
		fail("no dispatcher got the thread");
}

/* b: resumed after the suspend: runnable again, queued, dispatchable. */
static void outcome_suspend_resume(void)
{
	uint64_t s = word(0);

	if (rc_suspend != KSYNC_OK || rc_resume != KSYNC_OK)
		fail("suspend -> %d, resume -> %d", rc_suspend, rc_resume);
	else if ((s & (SCHED_SUSPEND | SCHED_STOPPED)) || !(s & SCHED_READY) ||
		 !(s & SCHED_LINKED) || drained[0] == 0)
		fail("T0 not runnable and queued after its resume (0x%llx, drained %u)",
		     (unsigned long long)s, drained[0]);
}

/* c: killed: DEAD, off every queue, reaped once, whoever finished it; a wakeup or resume
 * racing the kill did what it does or found the thread dead. */
static void outcome_kill(void)
{
	if (rc_kill != KSYNC_OK && rc_kill != 1)
		fail("kill -> %d", rc_kill);
	else if ((rc_wakeup != 1000 && rc_wakeup != KSYNC_OK && rc_wakeup != KSYNC_ESRCH) ||
		 (rc_resume != 1000 && rc_resume != KSYNC_OK && rc_resume != KSYNC_ESRCH))
		fail("wakeup -> %d, resume -> %d", rc_wakeup, rc_resume);
	else if (!(word(0) & SCHED_DEAD) || reaps[0] != 1)
		fail("T0 killed but not DEAD and reaped once (0x%llx, %u reaps)",
		     (unsigned long long)word(0), reaps[0]);
}

/* d: the wakeup is not lost: T0's sched_sleep returned, with the condition (consumed). */
static void outcome_sleep_wakeup(void)
{
	uint64_t s = word(0);

	if (rc_wakeup != KSYNC_OK)
		fail("wakeup -> %d", rc_wakeup);
	else if (!sleep_done)
		fail("lost wakeup: T0's sleep never returned (0x%llx)", (unsigned long long)s);
	else if (got_sleep != COND || (s & COND) || !(s & SCHED_READY))
		fail("T0's sleep returned 0x%llx, state 0x%llx", (unsigned long long)got_sleep,
		     (unsigned long long)s);
}

/* d': woken while being suspended and resumed: it ran again and its sleep returned */
static void outcome_wakeup_suspend_resume(void)
{
	outcome_suspend_resume();
	if (!violated)
		outcome_sleep_wakeup();
}

/* e: the operator's calls returned what they may, the kill ended it */
static void outcome_mix(void)
{
	if ((rc_wakeup != KSYNC_OK && rc_wakeup != KSYNC_ESRCH) || rc_suspend != KSYNC_OK ||
	    rc_resume != KSYNC_OK || (rc_kill != KSYNC_OK && rc_kill != 1) ||
	    !(word(0) & SCHED_DEAD))
		fail("wakeup -> %d, suspend -> %d, resume -> %d, kill -> %d, state 0x%llx",
		     rc_wakeup, rc_suspend, rc_resume, rc_kill, (unsigned long long)word(0));
}

/* f: the level requests returned OK (T0 never DEAD while asked), the level requested last
 * is T0's (check()), and the wakeup was not lost */
static void outcome_level(void)
{
	if (rc_level != KSYNC_OK)
		fail("set_level -> %d", rc_level);
}

static void outcome_level_sleep(void)
{
	outcome_level();
	if (!violated)
		outcome_sleep_wakeup();
}

static void outcome_level_kill(void)
{
	if (rc_level != KSYNC_OK && rc_level != KSYNC_ESRCH)
		fail("set_level -> %d", rc_level);
	else
		outcome_kill();
}

static void outcome_level_mix(void)
{
	outcome_level();
	if (!violated)
		outcome_wakeup_suspend_resume();
}

/* The three-coroutine scenarios at preemption bound 3; 2 in the sanitizer builds (TSan
 * costs ~10x per step and adds nothing on one OS thread; ASan ~3x, and it looks for
 * memory errors, which the smaller bound reaches as well): make test's time budget. */
#if defined(__SANITIZE_ADDRESS__)
#define KX_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KX_SANITIZED 1
#endif
#endif
#ifndef KX_SANITIZED
#define KX_SANITIZED KX_TSAN
#endif
#define BOUND3 (KX_SANITIZED ? 2 : 3)
/* the two-coroutine scenarios: bound 4, 3 under TSan */
#define BOUND4 (KX_TSAN ? 3 : 4)
/* The level scenarios (f) run longer executions (a level change is an unlink and an
 * insert more): three coroutines at bound 2 (1 in the sanitizer builds), the two-coroutine
 * one at BOUND3, a random sample of 30 000 - make test's budget; a longer run by hand:
 * docs/explorer.md. */
#define BOUND2 (KX_SANITIZED ? 1 : 2)
/* Coroutines 0 and 1 are CPUs 0 and 1; a third is an operator (its CPU id 2 is no CPU's). */
static const struct scenario sc_race = {
	.name = "sched-two-dispatchers", .ncoro = 2, .prog = { cpu_twice, cpu_twice },
	.nthr = 1, .check = outcome_race, .bound = BOUND4,
};
static const struct scenario sc_race2 = {
	.name = "sched-two-dispatchers-two-threads", .ncoro = 2,
	.prog = { cpu_twice, cpu_twice_preempted }, .nthr = 2, .home = { 0, 1 },
	.check = outcome_race, .bound = 3,
};
static const struct scenario sc_suspend = {
	.name = "sched-suspend-resume", .ncoro = 2, .prog = { cpu_twice, op_suspend_resume },
	.nthr = 1, .check = outcome_suspend_resume, .bound = BOUND4,
};
static const struct scenario sc_suspend3 = {
	.name = "sched-suspend-resume-two-cpus", .ncoro = 3,
	.prog = { cpu_twice, cpu_twice, op_suspend_resume }, .nthr = 1,
	.check = outcome_suspend_resume, .bound = BOUND3,
};
static const struct scenario sc_kill = {
	.name = "sched-kill", .ncoro = 2, .prog = { cpu_twice, op_kill }, .nthr = 1,
	.check = outcome_kill, .bound = BOUND4,
};
static const struct scenario sc_kill3 = {
	.name = "sched-kill-two-cpus", .ncoro = 3, .prog = { cpu_twice, cpu_twice, op_kill },
	.nthr = 1, .check = outcome_kill, .bound = BOUND3,
};
static const struct scenario sc_sleep = {
	.name = "sched-sleep-wakeup", .ncoro = 2, .prog = { cpu_twice, cpu_wakeup_dispatch },
	.nthr = 1, .sleeper = true, .check = outcome_sleep_wakeup, .bound = BOUND4,
};
static const struct scenario sc_sleep3 = {
	.name = "sched-sleep-wakeup-two-cpus", .ncoro = 3,
	.prog = { cpu_twice, cpu_twice, op_wakeup }, .nthr = 1, .sleeper = true,
	.check = outcome_sleep_wakeup, .bound = BOUND3,
};
static const struct scenario sc_wakeup_kill = {
	.name = "sched-wakeup-kill", .ncoro = 3,
	.prog = { cpu_twice, cpu_wakeup_dispatch, op_kill }, .nthr = 1, .sleeper = true,
	.check = outcome_kill, .bound = BOUND3, .start = ASLEEP,
};
static const struct scenario sc_resume_kill = {
	.name = "sched-resume-kill", .ncoro = 3,
	.prog = { cpu_twice, cpu_resume_dispatch, op_kill }, .nthr = 1,
	.check = outcome_kill, .bound = BOUND3, .start = STOPPED,
};
static const struct scenario sc_wakeup_suspend = {
	.name = "sched-wakeup-suspend-resume", .ncoro = 3,
	.prog = { cpu_twice, cpu_wakeup_dispatch, op_suspend_resume }, .nthr = 1,
	.sleeper = true, .check = outcome_wakeup_suspend_resume, .bound = BOUND3,
	.start = ASLEEP,
};
static const struct scenario sc_mix = {
	.name = "sched-mix-random", .ncoro = 3,
	.prog = { cpu_twice, cpu_twice, op_wakeup_suspend_resume_kill }, .nthr = 1,
	.sleeper = true, .check = outcome_mix, .bound = BOUND4,
	.random = KX_SANITIZED ? 10000 : 100000,
};

/* f: a level change racing the insert of a wakeup (asleep at the start: the request is
 * applied by the inserter, or between its insert and LINKED it takes its bit back) and
 * the dispatches and releases after it */
static const struct scenario sc_level_wakeup = {
	.name = "sched-level-wakeup", .levels = true, .ncoro = 3,
	.prog = { cpu_twice, cpu_wakeup_dispatch, op_level }, .nthr = 1, .sleeper = true,
	.check = outcome_level_sleep, .bound = BOUND2, .start = ASLEEP,
};
/* f: a level change of a queued thread (marked by the requester and released by it)
 * racing two dispatchers, one releasing as preempted (the binding kept) */
static const struct scenario sc_level_queued = {
	.name = "sched-level-queued", .levels = true, .ncoro = 3,
	.prog = { cpu_twice, cpu_twice_preempted, op_level }, .nthr = 2, .home = { 0, 1 },
	.check = outcome_level, .bound = BOUND2,
};
/* f: the running thread changes its own level each time it runs (the self path), while
 * the operator asks for one too and two CPUs dispatch */
static const struct scenario sc_level_self = {
	.name = "sched-level-self", .levels = true, .ncoro = 3,
	.prog = { cpu_twice, cpu_twice, op_level }, .nthr = 1, .self_level = true,
	.check = outcome_level, .bound = BOUND2,
};
/* f: the self path alone, two CPUs: the level it asked for last is its own */
static const struct scenario sc_level_self2 = {
	.name = "sched-level-self-two-cpus", .levels = true, .ncoro = 2,
	.prog = { cpu_twice, cpu_twice_preempted }, .nthr = 1, .self_level = true,
	.bound = BOUND3,
};
/* g: the running thread narrows its mask to the other CPU each time it runs (its release
 * must queue it there), two CPUs dispatching, one releasing as preempted (that one stays
 * bound where it was preempted) */
static const struct scenario sc_affinity = {
	.name = "sched-affinity-self", .ncoro = 2, .prog = { cpu_twice, cpu_twice_preempted },
	.nthr = 1, .self_affinity = true, .bound = BOUND3,
};
static const struct scenario sc_affinity2 = {
	.name = "sched-affinity-self-two-threads", .ncoro = 2, .prog = { cpu_twice, cpu_twice },
	.nthr = 2, .home = { 0, 1 }, .self_affinity = true, .bound = BOUND3,
};
/* f: a level change racing a kill (the requester may find it marked to be removed and
 * release it to DEAD itself: it reaps) */
static const struct scenario sc_level_kill = {
	.name = "sched-level-kill", .levels = true, .ncoro = 3,
	.prog = { cpu_twice, cpu_twice, op_level_kill }, .nthr = 1,
	.check = outcome_level_kill, .bound = BOUND2,
};
/* f: the sleeper woken, moved, suspended, resumed and moved back while two CPUs
 * dispatch (sampled) */
static const struct scenario sc_level_mix = {
	.name = "sched-level-mix-random", .levels = true, .ncoro = 3,
	.prog = { cpu_twice_preempted, cpu_twice, op_wakeup_level_suspend_resume }, .nthr = 1,
	.sleeper = true, .check = outcome_level_mix, .bound = BOUND4, .start = ASLEEP,
	.random = KX_SANITIZED ? 5000 : 30000,
};

static int explore(struct ktest_ctx *kt, const struct scenario *sc, struct kx_result *r)
{
	struct kx_config cfg = {
		.name = sc->name,
		.nthreads = sc->ncoro,
		.thread = { coro, coro, coro },
		.setup = setup,
		.teardown = teardown,
		.check = check,
		.spec = &op_names,
		.preemption_bound = sc->bound,
		.max_steps = 2000,
		.step_limit_is_violation = true,
		.random_schedules = sc->random,
	};
	int rc;

	cur_sc = sc;
	rc = kx_explore(&cfg, r, kt);
	cur_x = NULL;
	if (rc != 0 && (violated || panicked))
		kt_diag(kt, "%s: %s%s%s%s", sc->name, violated ? why : "",
			violated && panicked ? "; " : "", panicked ? "rq-lockfree.c panicked: " : "",
			panicked ? panic_msg : "");
	return rc;
}

static void run(struct ktest_ctx *kt, const struct scenario *sc)
{
	struct kx_result r;

	mutant = MUTANT_NONE;
	KT_EXPECT_EQ(explore(kt, sc, &r), 0);
	KT_EXPECT_EQ(r.step_limit_hits, 0);
	KT_EXPECT(r.exhausted || sc->random > 0);
	KT_EXPECT(r.schedules > 100);
}

/* a: two dispatchers race for one READY thread (and for two, one released as preempted) */
KTEST(explore_sched_two_dispatchers)
{
	run(kt, &sc_race);
	run(kt, &sc_race2);
}

/* b: a dispatcher (or two) racing suspend then resume */
KTEST(explore_sched_suspend_resume)
{
	run(kt, &sc_suspend);
	run(kt, &sc_suspend3);
}

/* c: a dispatcher (or two) racing kill */
KTEST(explore_sched_kill)
{
	run(kt, &sc_kill);
	run(kt, &sc_kill3);
}

/* d: sleep_prepare racing wakeup (Hohmuth & Haertig Fig. 3) */
KTEST(explore_sched_sleep_wakeup)
{
	run(kt, &sc_sleep);
	run(kt, &sc_sleep3);
}

/* the inserts of wakeup and resume racing kill, wakeup racing suspend and resume, from a
 * sleeping or stopped start */
KTEST(explore_sched_insert_races)
{
	run(kt, &sc_wakeup_kill);
	run(kt, &sc_resume_kill);
	run(kt, &sc_wakeup_suspend);
}

/* e: the sleeper woken, suspended, resumed and killed while two CPUs dispatch (sampled) */
KTEST(explore_sched_mix_random)
{
	run(kt, &sc_mix);
}

/* f: thread_set_level racing wakeup, dispatch, release, preemption, kill, suspend */
KTEST(explore_sched_level)
{
	run(kt, &sc_level_wakeup);
	run(kt, &sc_level_queued);
	run(kt, &sc_level_self);
	run(kt, &sc_level_self2);
	run(kt, &sc_level_kill);
}

KTEST(explore_sched_level_mix_random)
{
	run(kt, &sc_level_mix);
}

/* A seeded bug (SCHED_MUTANT) explored on sc must be found: the checks can fail. */
static void expect_found(struct ktest_ctx *kt, int which, const struct scenario *sc)
{
	struct kx_result r;

	mutant = which;
	KT_EXPECT_EQ(explore(kt, sc, &r), 1);
	KT_EXPECT(r.violations >= 1);
	mutant = MUTANT_NONE;
}

/* g: a thread that left its CPU's mask is queued on a CPU of it */
KTEST(explore_sched_affinity)
{
	run(kt, &sc_affinity);
	run(kt, &sc_affinity2);
}

/* A release that leaves a thread that left its CPU's mask on that CPU's queue (as before
 * sched_setaffinity moved threads: SCHED_MUTANT(AFFINITY_HOME)) must be found: the
 * thread is then queued on a CPU outside its mask. */
KTEST(explore_sched_finds_release_to_a_cpu_outside_the_mask)
{
	expect_found(kt, MUTANT_AFFINITY_HOME, &sc_affinity);
}

/* The seeded bugs must be found: the checks above can fail. */
KTEST(explore_sched_finds_marking_by_plain_store)
{
	expect_found(kt, MUTANT_PLAIN_MARK, &sc_race);
}

KTEST(explore_sched_finds_lost_wakeup)
{
	expect_found(kt, MUTANT_SLEEP_STORE, &sc_sleep);
}

/* A level changed with the thread's bit still on the old level's queue (the unlink
 * skipped: SCHED_MUTANT(LEVEL_LINKED)) must be found: the bit is then on a queue its
 * level does not name, and the next unlink panics. */
KTEST(explore_sched_finds_level_change_without_unlink)
{
	expect_found(kt, MUTANT_LEVEL_LINKED, &sc_level_queued);
	expect_found(kt, MUTANT_LEVEL_LINKED, &sc_level_wakeup);
}
