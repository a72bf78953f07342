/*
 * sched_mark.pml - dispatch by marking with suspend, resume, kill, sleep and wakeup on
 * one thread state word (docs/sched.md section 2; the plan of issue 10, modelled BEFORE
 * the C code so the code follows a checked protocol).
 *
 * Papers: Massalin & Pu 1991, "Scheduling and dispatching" (threads stay on the run
 * queue; a dispatcher acquires a thread by marking it with compare-and-swap and moves on
 * when it is already marked) and "Thread operations" (mark the intended operation, do
 * it, check whether the situation changed, retry; suspend sets a flag and the scheduler
 * that meets the flagged thread removes it from the queue and sets "stopped"; resume
 * re-inserts only a thread that was removed; kill marks and the dispatcher removes);
 * Hohmuth & Haertig 2001, Figure 3 (the ready-to-run flag and the condition flags in one
 * word: a sleeper clears "ready" by CAS only while its condition is unset).
 *
 * Abstraction: the run queue's list operations are one atomic step each (lf_list.pml
 * checks the list itself); `inlist[i]` counts how often thread i is physically on the
 * queue. The state word is one int changed only by CAS. Two dispatchers (CPUs) walk the
 * queue and run threads for a few steps; two operator processes suspend, resume, kill
 * and wake threads in every order. A running thread may end its quantum or sleep. With
 * -DWAKE_TAKE=1 a dispatcher may also wake a sleeping thread and mark it for
 * itself in one CAS, never queueing it (ops->wake_take, sched_wake_help: the single
 * server's donating client, issue 27 item 2); its release then handles a runnable,
 * unlinked thread as after a re-home.
 *
 * Checked (assertions): no thread runs on two CPUs at once; no thread is inserted twice
 * (inlist <= 1) or removed when absent; a killed thread is never dispatched again; a
 * sleep returns only after a wakeup set its condition; at the end (every process done,
 * every CPU released its thread): LINKED <-> on the queue, nothing ready and not
 * suspended is lost (READY && !SUSPEND && !DEAD -> on the queue), a stopped thread is off
 * the queue, a killed thread is DEAD or still queued for its dispatcher.
 *
 * Seeded bugs (-DMUTANT=k; each must make pan report an assertion violation):
 *   1  the dispatcher marks by a plain read-then-store instead of CAS
 *   2  resume re-inserts whenever it clears SUSPEND, without checking STOPPED
 *   3  release publishes STOPPED (and drops ONCPU) before the thread is off the queue
 *   4  wakeup inserts a thread that is still ONCPU (its owner re-inserts it too)
 *   5  (with -DWAKE_TAKE=1) wake-and-take does not check ONCPU (a thread that slept "ready-less" while still on
 *      its CPU, before its release, is taken by a second CPU)
 *
 * pan-cc-flags: -DSAFETY -DCOLLAPSE
 * pan-run-flags: -m100000 (default: -DSTEPS=3 -DNOPS=2, ~90 s, 2.5 GB; make test runs -DSTEPS=2 -DNOPS=1)
 * -DWAKE_TAKE=1 -DSTEPS=2 -DNOPS=1: 7.5 M states, ~19 s (make stress)
 * tested-by: tests/test_spin_sched.py
 */

#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef WAKE_TAKE
#define WAKE_TAKE 0	/* 1: dispatchers may also wake-and-take a sleeper (sched_wake_help) */
#endif

#ifndef NT
#define NT 2		/* threads */
#endif
#ifndef NOPS
#define NOPS 2		/* operations per operator process */
#endif
#ifndef STEPS
#define STEPS 3	/* dispatcher steps */
#endif
#define NONE 255

#define READY	1
#define ONCPU	2
#define LINKED	4
#define SUSPEND	8
#define STOPPED	16
#define KILL	32
#define DEAD	64
#define COND	128
#define INS	256	/* an inserter reserved the insert; LINKED follows the insert */
#define OWN1	512	/* owner cpu + 1 in bits 9..10 */
#define OWNMASK	1536

int st[NT];
byte inlist[NT];
byte running[NT];
bit killed[NT];		/* kill's CAS succeeded */
bit sleeping[NT];	/* the thread cleared READY in sleep and has not returned from it */

inline CAS(i, old, new, ok)
{
	atomic {
		if
		:: st[i] == old -> st[i] = new; ok = 1
		:: else -> ok = 0
		fi
	}
}

inline ins(i) { atomic { assert(inlist[i] == 0); inlist[i] = 1 } }
inline unl(i) { atomic { assert(inlist[i] == 1); inlist[i] = 0 } }

/* An inserter that is not the ONCPU holder (wakeup, resume) reserves the insert with INS
 * in its CAS, inserts, and only then sets LINKED: a dispatcher that reached the node by a
 * stale walk must not mark (and later unlink) a thread that is not on the queue yet. */
inline finish_ins(i)
{
	do
	:: s = st[i];
	   assert(s & INS);
	   CAS(i, s, (s & ~INS) | LINKED, ok);
	   if :: ok -> break :: else -> skip fi
	od
}

/* The ONCPU holder gives the thread back: off the queue if it is killed, suspended or
 * not ready, else on the queue; ONCPU is dropped last, so only one party ever inserts. */
inline release(i)
{
	do
	:: s = st[i];
	   assert(s & ONCPU);
	   if
	   :: (s & KILL) && (s & LINKED) ->
		CAS(i, s, s & ~LINKED, ok);
		if :: ok -> unl(i) :: else -> skip fi
	   :: (s & KILL) && !(s & LINKED) ->
		CAS(i, s, (s & ~(ONCPU | OWNMASK | READY | SUSPEND)) | DEAD, ok);
		if :: ok -> break :: else -> skip fi
	   :: !(s & KILL) && ((s & SUSPEND) || !(s & READY)) && (s & LINKED) ->
#if MUTANT == 3
		CAS(i, s, (s & ~(LINKED | ONCPU | OWNMASK)) | ((s & SUSPEND) -> STOPPED : 0), ok);
		if :: ok -> unl(i); break :: else -> skip fi
#else
		CAS(i, s, s & ~LINKED, ok);
		if :: ok -> unl(i) :: else -> skip fi
#endif
	   :: !(s & KILL) && ((s & SUSPEND) || !(s & READY)) && !(s & LINKED) ->
		CAS(i, s, (s & ~(ONCPU | OWNMASK)) | ((s & SUSPEND) -> STOPPED : 0), ok);
		if :: ok -> break :: else -> skip fi
	   :: !(s & KILL) && !(s & SUSPEND) && (s & READY) && !(s & LINKED) ->
		CAS(i, s, s | LINKED, ok);
		if :: ok -> ins(i) :: else -> skip fi
	   :: !(s & KILL) && !(s & SUSPEND) && (s & READY) && (s & LINKED) ->
		CAS(i, s, s & ~(ONCPU | OWNMASK), ok);
		if :: ok -> break :: else -> skip fi
	   fi
	od
}

proctype dispatcher(byte d)
{
	byte cur = d, r = NONE, steps = 0;
	int s;
	bit ok;

	do
	:: steps < STEPS ->
		steps++;
		if
		:: r != NONE ->
			if
			:: running[r] = 0; release(r); r = NONE	/* quantum end */
			:: /* r sleeps on COND (Fig. 3) */
				do
				:: s = st[r];
				   if
				   :: (s & COND) -> CAS(r, s, s & ~COND, ok);	/* occurred: consume */
					if :: ok -> break :: else -> skip fi
				   :: !(s & COND) -> CAS(r, s, s & ~READY, ok);
					if
					:: ok -> sleeping[r] = 1; running[r] = 0; release(r); r = NONE; break
					:: else -> skip
					fi
				   fi
				od
			fi
		:: r == NONE ->
			cur = (cur + 1) % NT;
			if
#if WAKE_TAKE
			:: /* sched_wake_help (ops->wake_take, issue 27): a sleeping thread woken
			    * and marked for this CPU in one CAS, never queued; it runs here */
			   s = st[cur];
#if MUTANT == 5
			   if
			   :: !(s & (READY | LINKED | INS | SUSPEND | STOPPED | KILL | DEAD)) ->
#else
			   if
			   :: !(s & (READY | ONCPU | LINKED | INS | SUSPEND | STOPPED | KILL | DEAD)) ->
#endif
				atomic {
					CAS(cur, s, s | READY | COND | ONCPU | (OWN1 * (d + 1)), ok);
					if
					:: ok -> assert(running[cur] == 0); assert(!killed[cur]);
						running[cur] = 1
					:: else -> skip
					fi
				}
				if
				:: ok -> r = cur;
					if
					:: sleeping[r] -> sleeping[r] = 0
					:: else -> skip
					fi
				:: else -> skip
				fi
			   :: else -> skip
			   fi
#endif
			:: inlist[cur] ->
				s = st[cur];
				if
				:: (s & ONCPU) || !(s & LINKED) -> skip	/* marked or stale: move on */
				:: else ->
					/* the marking CAS; when it takes a runnable thread, "running"
					 * is claimed in the same step (a kill after it is legal) */
					atomic {
#if MUTANT == 1
						/* plain store: another dispatcher may mark in between */
						st[cur] = s | ONCPU | (OWN1 * (d + 1)); ok = 1;
#else
						CAS(cur, s, s | ONCPU | (OWN1 * (d + 1)), ok);
#endif
						if
						:: ok && !(s & (KILL | SUSPEND)) && (s & READY) ->
							assert(running[cur] == 0);
							assert(!killed[cur]);
							running[cur] = 1
						:: else -> skip
						fi
					}
					if
					:: ok && ((s & (KILL | SUSPEND)) || !(s & READY)) -> release(cur)
					:: ok && !(s & (KILL | SUSPEND)) && (s & READY) ->
						r = cur;
						if	/* a sleeper returns from sleep: only a wakeup readied it */
						:: sleeping[r] -> assert(st[r] & COND); sleeping[r] = 0
						:: else -> skip
						fi
					:: !ok -> skip
					fi
				fi
			:: else -> skip
			fi
		fi
	:: steps >= STEPS -> break
	od;
	if
	:: r != NONE -> running[r] = 0; release(r)
	:: else -> skip
	fi
}

inline suspend(i)
{
	do
	:: s = st[i];
	   if
	   :: (s & (DEAD | SUSPEND)) -> break
	   :: else ->
		/* off the queue and off every CPU (a sleeper): stopped at once */
		CAS(i, s, s | SUSPEND | ((!(s & (ONCPU | LINKED | INS))) -> STOPPED : 0), ok);
		if :: ok -> break :: else -> skip fi	/* (IPI to the owner CPU if ONCPU) */
	   fi
	od
}

inline resume(i)
{
	do
	:: s = st[i];
	   if
	   :: (s & DEAD) || !(s & SUSPEND) -> break
	   :: else ->
#if MUTANT == 2
		doins = (s & READY) != 0;
#else
		doins = (s & STOPPED) && (s & READY);	/* only a removed, ready thread */
#endif
		CAS(i, s, (s & ~(SUSPEND | STOPPED)) | (doins -> INS : 0), ok);
		if :: ok -> if :: doins -> ins(i); finish_ins(i) :: else -> skip fi; break :: else -> skip fi
	   fi
	od
}

inline kill(i)
{
	do
	:: s = st[i];
	   if
	   :: (s & (DEAD | KILL)) -> break
	   :: !(s & (ONCPU | LINKED | INS)) ->	/* stopped or sleeping: the killer finishes */
		atomic {
			CAS(i, s, (s & ~(READY | SUSPEND | STOPPED)) | KILL | DEAD, ok);
			if :: ok -> killed[i] = 1 :: else -> skip fi
		}
		if :: ok -> break :: else -> skip fi
	   :: else ->		/* queued, on a CPU or being inserted: a dispatcher removes it */
		atomic {
			CAS(i, s, s | KILL, ok);
			if :: ok -> killed[i] = 1 :: else -> skip fi
		}
		if :: ok -> break :: else -> skip fi
	   fi
	od
}

inline wakeup(i)
{
	do
	:: s = st[i];
	   if
	   :: (s & (DEAD | KILL)) -> break
	   :: else ->
#if MUTANT == 4
		doins = !(s & (LINKED | INS | STOPPED));
#else
		doins = !(s & (ONCPU | LINKED | INS | STOPPED));
#endif
		CAS(i, s, s | READY | COND | (doins -> INS : 0), ok);
		if :: ok -> if :: doins -> ins(i); finish_ins(i) :: else -> skip fi; break :: else -> skip fi
	   fi
	od
}

proctype operator(byte nops)
{
	int s;
	bit ok, doins;
	byte n = 0, i;

	do
	:: n < nops ->
		n++;
		select(i : 0 .. NT - 1);
		if
		:: suspend(i)
		:: resume(i)
		:: kill(i)
		:: wakeup(i)
		fi
	:: n >= nops -> break
	od
}

init
{
	byte i;

	atomic {
		for (i : 0 .. NT - 1) {
			st[i] = READY | LINKED;
			inlist[i] = 1;
		}
		run dispatcher(0);
		run dispatcher(1);
		run operator(NOPS);
		run operator(NOPS);
	}
	(_nr_pr == 1);
	for (i : 0 .. NT - 1) {
		assert(!(st[i] & (ONCPU | INS)) && running[i] == 0);
		assert(((st[i] & LINKED) != 0) == (inlist[i] == 1));
		assert(!(st[i] & DEAD) || inlist[i] == 0);
		assert(!(st[i] & STOPPED) || (inlist[i] == 0 && (st[i] & SUSPEND)));
		/* nothing lost: ready, not suspended, alive -> on the queue */
		assert(!((st[i] & READY) && !(st[i] & SUSPEND) && !(st[i] & (DEAD | KILL))) ||
		       inlist[i] == 1);
		/* a killed thread is dead or still queued for its dispatcher */
		assert(!killed[i] || (st[i] & DEAD) || inlist[i] == 1);
	}
}
