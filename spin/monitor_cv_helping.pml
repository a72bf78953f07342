/*
 * monitor_cv_helping.pml - a condition wait on a monitor whose lock is a helping lock
 * (kernel/lock/monitor.c MON_HELPING, the kernel's fiasco configuration; Hohmuth &
 * Haertig 2001 section 3.3 and Figure 2: "the wait operation would then be implemented as
 * an unlock-sleep-lock sequence"), with Mesa condition variables (Lampson & Redell 1980).
 * pan-cc-flags: -DSAFETY
 * pan-run-flags: -m100000
 * tested-by: tests/test_spin_monitor.py (the model, its cycle check and its two mutants)
 *
 *   cv_wait (the caller holds M): take the interlock il; queue itself on the condition's
 *           FIFO; release il; release M (the helping lock); sleep on its condition flag;
 *           take M again.
 *   cv_signal (the caller holds M): take il; take the first waiter off the queue, if
 *           any; release il; wake it (set its flag).
 * Sleep and wakeup are the scheduler's condition flags: a wake sets flag[t]; a sleep
 * blocks until its flag is set and consumes it, so a wake that comes before the sleep is
 * kept. M is modelled as a plain lock: which contender the helping lock lets in next is
 * a matter of priority (hlock.pml checks the helping protocol itself), not of this
 * protocol's safety.
 *
 * NW waiters each lock M, wait while no token is there (Mesa: re-test after each wake),
 * take one token and unlock; one signaller, NW times, locks M, adds a token, signals and
 * unlocks.
 *
 * Checked: mutual exclusion under M; no thread asleep or waiting for ever (no `end`
 * labels: a lost wakeup leaves its waiter blocked when nothing else can move, an invalid
 * end state); at the end every token taken, the queue empty, no flag left set.
 *
 * Seeded bugs (-DMUTANT=k; the test requires pan to report each as an invalid end state):
 *   1  cv_wait releases M before it queues itself: a signaller that takes M in between
 *      finds nobody queued, and the waiter then sleeps for ever;
 *   2  a wake that finds its thread not asleep yet is dropped (a sleep without the
 *      condition flag's memory).
 */
#ifndef NW
#define NW 2
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

bit M = 0;		/* the monitor's (helping) lock */
bit il = 0;		/* the monitor's interlock: the queue's lock */
byte q[NW];		/* the condition's waiters, thread + 1, FIFO; il */
byte qlen = 0;		/* il */
bit flag[NW];		/* condition flags */
bit asleep[NW];		/* for MUTANT 2 only */
byte tokens = 0;	/* the condition; M */
byte inside = 0;	/* ghost: threads holding M */
byte done = 0;

inline lock_m() {
	atomic { M == 0 -> M = 1 };
	inside++;
	assert(inside == 1)
}
inline unlock_m() { inside--; M = 0 }
inline lock_il() { atomic { il == 0 -> il = 1 } }
inline unlock_il() { il = 0 }

inline sleep_on(me) {
	asleep[me] = 1;
	atomic { flag[me] == 1 -> flag[me] = 0; asleep[me] = 0 }
}

inline wake(t) {
#if MUTANT == 2
	if
	:: asleep[t] -> flag[t] = 1
	:: else -> skip
	fi
#else
	flag[t] = 1
#endif
}

inline enqueue(me) {
	lock_il();
	q[qlen] = me + 1;
	qlen++;
	unlock_il()
}

inline cv_wait(me) {
#if MUTANT == 1
	unlock_m();
	enqueue(me);
#else
	enqueue(me);
	unlock_m();
#endif
	sleep_on(me);
	lock_m()
}

inline cv_signal() {
	lock_il();
	if
	:: qlen > 0 ->
		w = q[0];
		j = 0;
		do
		:: j + 1 < qlen -> q[j] = q[j + 1]; j++
		:: else -> break
		od;
		qlen--;
		q[qlen] = 0
	:: else -> w = 0
	fi;
	unlock_il();
	if
	:: w > 0 -> wake(w - 1)
	:: else -> skip
	fi
}

proctype waiter(byte me) {
	lock_m();
	do
	:: tokens > 0 -> break
	:: else -> cv_wait(me)
	od;
	tokens--;
	unlock_m();
	atomic { done++ }
}

proctype signaller() {
	byte i = 0, w = 0, j = 0;
	do
	:: i < NW ->
		lock_m();
		tokens++;
		cv_signal();
		unlock_m();
		i++
	:: else -> break
	od;
	/* everyone finished: nothing left behind */
	(done == NW);
	assert(tokens == 0 && qlen == 0 && M == 0 && il == 0);
	byte k = 0;
	do
	:: k < NW -> assert(flag[k] == 0); k++
	:: else -> break
	od
}

init {
	atomic {
		byte n = 0;
		do
		:: n < NW -> run waiter(n); n++
		:: else -> break
		od;
		run signaller()
	}
}
