/*
 * monitor.pml - the monitor lock's protocol (kernel/lock/monitor.c, kernel/include/monitor.h;
 * Hartman & Ousterhout, Sprite, sections 2-4 and Figure 9): a hit is a test-and-set of the
 * monitor's own word, only a miss takes the interlock, marks the word, retries, queues and
 * sleeps; a release clears the word and takes the interlock only when the mark is set.
 * pan-cc-flags: -DSAFETY
 * pan-run-flags: -m100000
 * tested-by: tests/test_spin_monitor.py (both release policies, the cycle check, the mutants)
 *
 * The word: bit 0 LOCKED, bit 1 WAITERS; every access is one atomic step (the C code's
 * RMWs: fetch_or, fetch_and, CAS). The interlock is a lock of its own (il, taken by a
 * blocking atomic test). The wait queue is an array (FIFO), changed only under il.
 * Sleep and wakeup are the scheduler's condition flags (sched_sleep/sched_wakeup): a wake
 * sets flag[t]; a sleep blocks until its flag is set and consumes it - a wake before the
 * sleep is kept.
 *
 *   lock:   TAS; hit -> owner. Miss: take il; mark (WAITERS); TAS again; got it -> clear
 *           the mark if nobody is queued, release il, owner. Else queue, release il, sleep.
 *           Woken: granted (hand-off) -> owner; else (broadcast) start over with a TAS.
 *   unlock: CAS LOCKED -> 0; done. Else (the mark is set):
 *           broadcast: clear LOCKED (RMW); if the mark was still set: take il, detach the
 *             queue, clear the mark, release il, wake each detached waiter;
 *           hand-off: take il; a waiter queued -> dequeue the first, clear the mark if the
 *             queue is now empty, grant it (the word stays LOCKED); none -> clear LOCKED
 *             and the mark; release il; wake the granted waiter.
 *
 * NT threads (2 or 3), each ROUNDS times: lock; critical section; unlock. HANDOFF=0 is
 * Sprite's broadcast release, HANDOFF=1 the FIFO hand-off.
 *
 * Checked:
 *   - mutual exclusion: one thread at a time in the critical section (ghost incs);
 *   - no thread asleep for ever: no `end` labels, so a thread blocked in its sleep (or on
 *     il) when nothing else can move is an invalid end state - a lost wakeup leaves its
 *     thread there with every other thread finished and the lock free; the state graph
 *     has no cycle either (`pan -l` on a -DNP build), so every run ends;
 *   - at the end: the word is 0 (free, no mark), the queue empty, no wake flag or grant
 *     left unconsumed (each queued waiter was woken exactly once).
 *
 * Seeded bugs (-DMUTANT=k; tests/test_spin_monitor.py requires pan to report each):
 *   1  (HANDOFF=0) the release reads the waiters mark, then clears the lock bit (two steps): a miss
 *      that marks and retries in between is queued and never woken (invalid end state)
 *   2  the miss path does not retry the test-and-set under the interlock: a release
 *      between the first attempt and the mark saw no mark, and the waiter sleeps with
 *      the lock free (invalid end state)
 *   3  (HANDOFF=1) the hand-off also frees the word: the granted waiter enters with the
 *      word free, so a thread that arrives wins the test-and-set beside it (the
 *      assertion that the word is locked inside the critical section fails first)
 *   4  the miss marks after its retry instead of before: the release falls between the
 *      retry and the mark (invalid end state)
 *
 *   spin -a monitor.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -DHANDOFF=1 -a monitor.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -a monitor.pml && gcc -O2 -DNP -o pan pan.c && ./pan -l -m200000   (no cycles)
 *   spin -DMUTANT=2 -a monitor.pml && gcc -O0 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -DMUTANT=2 -t -p -g monitor.pml                  (its counterexample)
 */

#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef NT
#define NT 3
#endif
#ifndef ROUNDS
#define ROUNDS 2
#endif
#ifndef HANDOFF
#define HANDOFF 0
#endif

#define LOCKED	1
#define WAITERS	2

byte word;		/* LOCKED | WAITERS */
bit il;			/* the interlock */
byte qa[NT];		/* the wait queue: qa[0..qn-1], FIFO (under il) */
byte qn;
bit flag[NT];		/* sched_sleep/sched_wakeup's condition flag */
bit granted[NT];	/* hand-off: written under il before the wake */

/* ghost state */
byte incs;		/* threads in the critical section */
byte ndone;		/* threads that finished all rounds */

inline il_lock() { atomic { il == 0 -> il = 1 } }
inline il_unlock() { il = 0 }

/* the test-and-set: got = the word was free */
inline tas(got) { atomic { got = ((word & LOCKED) == 0); word = word | LOCKED } }

inline enqueue(me) { qa[qn] = me; qn++ }

proctype T(byte me)
{
	byte r = 0, i, w, old, wl;
	bool got;
	do
	:: r < ROUNDS ->
		/* ---- lock ---- */
		tas(got);
		do
		:: got -> break
		:: else ->
			/* the miss */
			il_lock();
#if MUTANT == 4
			tas(got);
			word = word | WAITERS;
#elif MUTANT == 2
			word = word | WAITERS;
			got = false;
#else
			word = word | WAITERS;
			tas(got);
#endif
			if
			:: got ->
				if
				:: qn == 0 -> word = word & ~WAITERS
				:: else -> skip
				fi;
				il_unlock();
				break
			:: else ->
				enqueue(me);
				il_unlock();
				atomic { flag[me] == 1 -> flag[me] = 0 };	/* sleep */
				if
				:: granted[me] -> granted[me] = 0; got = true; break
				:: else -> tas(got)		/* broadcast: start over */
				fi
			fi
		od;
		/* ---- critical section ---- */
		atomic { incs++; assert(incs == 1); assert(word & LOCKED) };
		atomic { assert(incs == 1); incs-- };
		/* ---- unlock ---- */
		atomic {
			if
			:: word == LOCKED -> word = 0; got = true
			:: else -> got = false
			fi
		};
		if
		:: got -> skip
		:: else ->
#if HANDOFF
			il_lock();
			if
			:: qn > 0 ->
				w = qa[0];
				i = 1;
				do
				:: i < qn -> qa[i - 1] = qa[i]; i++
				:: else -> break
				od;
				qn--;
				qa[qn] = 0;
				if
				:: qn == 0 -> word = word & ~WAITERS
				:: else -> skip
				fi;
#if MUTANT == 3
				word = word & ~LOCKED;
#endif
				granted[w] = 1;
				il_unlock();
				flag[w] = 1			/* wake */
			:: else ->
				word = word & ~(LOCKED | WAITERS);
				il_unlock()
			fi
#else
#if MUTANT == 1
			old = word;
			word = word & ~LOCKED;
#else
			atomic { old = word; word = word & ~LOCKED };
#endif
			if
			:: (old & WAITERS) ->
				il_lock();
				wl = 0;
				i = 0;
				do
				:: i < qn -> wl = wl | (1 << qa[i]); qa[i] = 0; i++
				:: else -> break
				od;
				qn = 0;
				word = word & ~WAITERS;
				il_unlock();
				i = 0;
				do				/* wake the detached waiters */
				:: i < NT ->
					if
					:: (wl >> i) & 1 -> flag[i] = 1
					:: else -> skip
					fi;
					i++
				:: else -> break
				od
			:: else -> skip
			fi
#endif
		fi;
		r++
	:: else -> break
	od;
	ndone++
}

init
{
	byte i;
	atomic {
		i = 0;
		do
		:: i < NT -> run T(i); i++
		:: else -> break
		od
	};
	ndone == NT;
	assert(word == 0 && qn == 0 && il == 0 && incs == 0);
	i = 0;
	do
	:: i < NT -> assert(flag[i] == 0 && granted[i] == 0); i++
	:: else -> break
	od
}
