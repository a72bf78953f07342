/*
 * wake_handoff.pml - a wakeup handed to an idle CPU that polls (kernel/sched/thread.c
 * wake_handoff / wake_take / wake_req_drop and idle_loop's poll; issue 27 item 2).
 * pan-cc-flags: -DSAFETY
 * pan-run-flags: -m100000
 * tested-by: tests/test_spin_wake.py (the model, the scenario with a freer, the mutants)
 *
 * Papers: Massalin & Pu 1991 (the wakeup is a scheduler operation any CPU may do) and
 * Hohmuth & Haertig 2001 Fig. 3 (its effect, a condition flag in the state word, is the
 * same whoever performs it); the hand-off only moves WHO performs ops->wakeup: the
 * sleeper's home CPU, idle and polling, whose cache holds the lines the wakeup writes.
 *
 * Shared words (per idle CPU): polling (1 while the idle loop polls, 0 after its
 * exchange to NONE) and wake_req (0, or a request naming a waker, with BUSY while the
 * idler performs it). Every step below is one atomic step of the C code; Spin's
 * interleavings are sequentially consistent, as the C code's seq_cst accesses on these
 * two words.
 *   waker:  CAS(wake_req, 0, me); fail -> the usual path (it wakes itself).
 *           load polling: != 0 -> handed off (done). == 0 -> CAS(wake_req, me, 0): won ->
 *           the usual path; lost -> the idler took it (or a freer dropped it): done.
 *   idler:  any number of poll steps, each: r = fetch_or(wake_req, BUSY); r -> perform
 *           r; store(wake_req, 0). Then the poll's end: exchange(polling, 0), then one
 *           more such step.
 *   freer:  (SCENARIO 2) once the waker's call returned (sched_wakeup's caller keeps the
 *           thread alive across the call), before the thread's slot is freed: while wake_req
 *           names it: BUSY -> wait; else CAS(wake_req, r, 0) (dropped: the thread is dead,
 *           its wakeup moot). Then the slot is free ("freed").
 * Checked:
 *   - every wakeup happens exactly once: performed by the idler, or by its waker on the
 *     usual path, or dropped by the freer (SCENARIO 2) - never twice, never lost (at the
 *     end of every run: the idler has finished, so a request still in wake_req is lost);
 *   - no wakeup handed over for a thread is performed after its slot was freed (the
 *     slot's next thread would get it);
 *   - the idler never sees BUSY in its own fetch_or (only it sets BUSY).
 * SCENARIO 1: two wakers and the idler; SCENARIO 2: one waker, the idler and the freer.
 * Seeded bugs (-DMUTANT=n), each must be found (tests/test_spin_wake.py):
 *   1  the waker does not look at polling after its CAS (always "handed off"): a request
 *      posted after the poll's last look is lost;
 *   2  the poll's end does not look at wake_req after its exchange: lost likewise;
 *   3  the freer drops a request in progress (ignores BUSY): performed after the free;
 *   4  the waker looks at polling BEFORE its CAS only (the Dekker's order reversed):
 *      lost.
 */
#ifndef SCENARIO
#define SCENARIO 1
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define BUSY 8		/* the flag; requests are waker ids 1..2 */
#if SCENARIO == 1
#define NWAKERS 2
#else
#define NWAKERS 1
#endif

byte polling = 1;
byte wake_req = 0;
byte performed[3];	/* ghost: by the idler, per waker */
byte usual[3];		/* ghost: by the waker itself, per waker */
byte dropped[3];	/* ghost: by the freer */
bool freed = false;	/* ghost: waker 1's slot freed (SCENARIO 2) */
byte wakers_done = 0;
bool idler_done = false;
bool freer_done = false;

inline take_step(r)
{
	atomic { r = wake_req; wake_req = wake_req | BUSY };
	assert(!(r & BUSY));
	if
	:: r != 0 ->
		assert(!(r == 1 && freed));	/* the freed slot's next thread would get it */
		performed[r]++
	:: else -> skip
	fi;
	wake_req = 0
}

proctype Waker(byte me)
{
	bool won = false;
#if MUTANT == 4
	if
	:: polling == 0 -> goto usual_path
	:: else -> skip
	fi;
#endif
	atomic { if :: wake_req == 0 -> wake_req = me; won = true :: else -> skip fi };
	if
	:: !won -> goto usual_path
	:: else -> skip
	fi;
#if MUTANT != 1 && MUTANT != 4
	if
	:: polling != 0 -> goto done
	:: else -> skip
	fi;
	won = false;
	atomic { if :: wake_req == me -> wake_req = 0; won = true :: else -> skip fi };
	if
	:: won -> goto usual_path
	:: else -> goto done	/* taken by the idler or dropped by the freer */
	fi;
#else
	goto done;
#endif
usual_path:
	usual[me]++;
done:
	atomic { wakers_done++ }
}

proctype Idler()
{
	byte r;
	do
	:: take_step(r)
	:: break
	od;
	polling = 0;
#if MUTANT != 2
	take_step(r);
#endif
	idler_done = true
}

proctype Freer()
{
	byte r;
	/* the thread died and is being joined; its waker's call has returned (a caller keeps
	 * the thread alive across sched_wakeup: a wakeup racing with the free itself is the
	 * caller's bug with or without the hand-off) */
	(wakers_done == NWAKERS);
	do
	:: atomic { r = wake_req };
		if
		:: (r & ~BUSY) != 1 -> break
		:: else -> skip
		fi;
#if MUTANT != 3
		if
		:: r & BUSY -> (wake_req != r)	/* in progress: wait for its end */
		:: else ->
#else
		if
		:: true ->
#endif
			atomic {
				if
				:: wake_req == r -> wake_req = 0; dropped[1]++
				:: else -> skip
				fi
			}
		fi
	od;
	freed = true;
	freer_done = true
}

init
{
	atomic {
		run Idler();
		run Waker(1);
#if SCENARIO == 1
		run Waker(2);
#else
		run Freer();
#endif
	}
	(wakers_done == NWAKERS && idler_done
#if SCENARIO == 2
	 && freer_done
#endif
	);
	/* exactly once each */
	assert(performed[1] + usual[1] + dropped[1] == 1);
#if SCENARIO == 1
	assert(performed[2] + usual[2] + dropped[2] == 1);
#endif
	assert(wake_req == 0)
}
