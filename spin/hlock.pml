/*
 * hlock.pml - the word protocol of the wait-free lock with helping
 * (kernel/include/hlock.h; Hohmuth & Haertig 2001, sections 3.3 and 4.3), modelled
 * before the C code (kernel/lock/hlock.c) so the code follows a checked protocol.
 * pan-cc-flags: -DSAFETY
 * pan-run-flags: -m100000
 * tested-by: tests/test_spin.py (both configurations, the cycle check, the mutants)
 *
 * The whole lock is one word changed only by CAS: the owner (thread id + 1, 0 = free),
 * the top of the helper stack (thread id + 1, 0 = empty) and INVALID.  The stack's links
 * are the helpers' `hnext` (id + 1 of the helper below, 0 = none), each written by its
 * thread before the CAS that pushes it.  Only the owner pops, at release, by one CAS
 * that hands the lock to the top: {owner = top, top = hnext[top]}.
 *   lock:       load; INVALID -> EINVAL; owner == me -> OK (handed to us); free and not
 *               pushed -> CAS(w, w | me); held and not pushed -> hnext = top, CAS(w,
 *               {owner, top = me}); pushed -> help the owner, load again.
 *   unlock:     load; no helper -> CAS(w, 0); else CAS(w, {top, hnext[top]}).
 *   invalidate: (the owner) CAS(w, INVALID); every helper, pushed or pushing, returns
 *               EINVAL at its next load, and so does every later lock.  A thread that
 *               gets EINVAL never touches the lock again.
 * Each shared access is one step (load, store, the read of hnext, CAS); a CAS is one
 * atomic compare-and-set of the whole word.
 *
 * Helping is abstracted: a pushed helper that is not the owner waits until the word
 * differs from the value it loaded ("help until something changes"), then loads again.
 * Its help steps change no shared state, so this drops only stuttering; in exchange a
 * helper whose hand-off never comes is BLOCKED, not spinning, and the safety search
 * reports it as an invalid end state.  No `end` labels: the only valid end of a thread
 * is its closing brace, so a thread left in lock() (or in its critical section) when
 * nothing else can move is an error.
 *
 * NT = 3 threads (ids 0..2), each ROUNDS times: lock; critical section; unlock.  With
 * -DINVAL=1 thread 0 invalidates instead of unlocking in its last round.
 *
 * Checked (assertions; the ghost state stk, below[], incs, invalidated, gotinval[],
 * done[] is bookkeeping, not part of the algorithm):
 *   - mutual exclusion: at most one thread in the critical section, and it is the
 *     word's owner (incs == 1 at entry, owner == me at entry and at exit);
 *   - no lost hand-off: every lock() returns (no invalid end state: a thread stuck in
 *     lock() is a deadlock; the state graph has no cycles either - `pan -l` on a -DNP
 *     build finds none - so every run ends, under any scheduling), and at the end every
 *     thread did all its rounds or got EINVAL, the word is 0 (or INVALID) and the stack
 *     is empty;
 *   - a hand-off goes only to a thread on the stack: the pop's CAS finds the top on the
 *     ghost stack, and lock() returns "handed to us" only in a thread that pushed itself;
 *   - the stack never holds a thread twice: a push CAS finds the pusher off the ghost
 *     stack; after every CAS (stack_check) the stack the word names - its top, then
 *     the link each helper pushed on - has no repeat, is exactly the ghost stack, and
 *     does not hold the owner; a thread that takes the lock from free by CAS is on no
 *     stack (no entry is left behind);
 *   - hnext is read only while its thread is on the stack, and the value the popper
 *     reads is the link its thread pushed on (below[], recorded by the push CAS);
 *   - invalidate: only the owner invalidates; after it nobody enters the critical
 *     section, every lock() returns EINVAL (and EINVAL only after it), and every helper
 *     on the stack at that moment returns.
 *
 * Seeded bugs (-DMUTANT=k; each must make pan report an error, tests/test_spin.py):
 *   1  unlock with no helper releases by a plain store of 0 (load, then store) instead
 *      of CAS: a push between the two is lost and its helper waits forever (invalid
 *      end state)
 *   2  a push writes hnext after its CAS instead of before: the popper reads a stale
 *      link (assertion)
 *   3  a pushed helper also tries CAS(free -> me), made reachable by an unlock that
 *      frees the word and leaves the helpers stacked when it has some (the "release
 *      and let the helpers compete" design): the helper becomes owner while still on
 *      the stack (assertion)
 *   4  the literal form of 3, with the correct unlock: an EQUIVALENT mutant.  A pushed
 *      helper never loads a free valid word (the hand-off keeps top != 0 -> owner != 0),
 *      so the guard "not pushed" on the acquire by CAS is redundant: pan verifies this
 *      switch clean with the same states and transitions as MUTANT=0.
 *
 * Sizes (spin 6.5.2, pan at -O0, 2-core host): 572,179 states (INVAL=0) and 528,748
 * (INVAL=1), ~0.5 s each; the cycle search (-DNP, -l) 1.14 M and 1.05 M states, ~2.5 s
 * each; the mutants stop after 243 / 6,261 / 249 states.  -DROUNDS=3: 4.7 M states,
 * ~2.7 s at -O2, 0.48 GB.
 *
 *   spin -a hlock.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -DINVAL=1 -a hlock.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -a hlock.pml && gcc -O2 -DNP -o pan pan.c && ./pan -l -m200000   (no cycles)
 *   spin -DMUTANT=2 -a hlock.pml && gcc -O0 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -DMUTANT=2 -t -p -g hlock.pml                   (its counterexample)
 */

#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef NT
#define NT 3		/* threads; the word holds ids + 1 in 2 bits, so at most 3 */
#endif
#ifndef ROUNDS
#define ROUNDS 2	/* lock / unlock rounds per thread */
#endif
#ifndef INVAL
#define INVAL 0		/* 1: thread 0 invalidates instead of unlocking in its last round */
#endif

#define OWNER(w)	((w) & 3)
#define TOP(w)		(((w) >> 2) & 3)
#define INVALID		16
#define MK(o, t)	((o) | ((t) << 2))
#define ME		(me + 1)
#define ONSTK(i)	((stk >> (i)) & 1)	/* i: thread id (0-based) */

/* a pushed helper may take a free word by CAS (mutants 3 and 4) */
#if MUTANT == 3 || MUTANT == 4
#define PUSHED_ACQUIRES 1
#else
#define PUSHED_ACQUIRES 0
#endif

byte word;		/* owner | top << 2 | INVALID: CAS only (a plain store in mutant 1) */
byte hnext[NT];		/* id + 1 of the helper below thread i on the stack */

/* ghost state, for the assertions only */
byte stk;		/* bit i: thread i is on the helper stack (changed with the CASes) */
byte below[NT];		/* the top a thread's push CAS replaced: the link it pushed on */
byte incs;		/* threads in the critical section */
bit invalidated;	/* the invalidate CAS succeeded */
bit gotinval[NT];	/* lock() returned EINVAL to thread i */
byte done[NT];		/* rounds thread i completed (lock, critical section, release) */
byte ct, cn;		/* scratch of stack_check, 0 outside it */

inline CAS(old, new, ok)
{
	atomic {
		if
		:: word == old -> word = new; ok = 1
		:: else -> ok = 0
		fi
	}
}

/* Checked at the end of every CAS step (after its ghost update): the stack the word names
 * - its top, then below[] of each helper - holds each thread at most once and is exactly
 * the ghost stack, and the owner is not on it. */
inline stack_check()
{
	d_step {
		ct = TOP(word);
		cn = 0;
		do
		:: ct == 0 -> break
		:: else ->
			assert(ONSTK(ct - 1) && !((cn >> (ct - 1)) & 1));
			cn = cn | (1 << (ct - 1));
			ct = below[ct - 1]
		od;
		assert(cn == stk);
		assert(OWNER(word) == 0 || !ONSTK(OWNER(word) - 1));
		ct = 0;
		cn = 0
	}
}

/* lock(): einval = 0 (KSYNC_OK, the caller owns the lock) or 1 (KSYNC_EINVAL) */
inline hlock_lock()
{
	pushed = 0;
	do
	:: w = word;
	   if
	   :: (w & INVALID) ->
		atomic {
			assert(invalidated);
			assert(!ONSTK(me));
			gotinval[me] = 1;
			einval = 1
		}
		break
	   :: !(w & INVALID) && OWNER(w) == ME ->	/* handed to us */
		assert(pushed && !ONSTK(me));
		einval = 0;
		break
	   :: !(w & INVALID) && OWNER(w) == 0 && (!pushed || PUSHED_ACQUIRES) ->
		atomic {
			CAS(w, w | ME, ok);
			/* a thread that takes the lock from free is on no stack */
			assert(!ok || !ONSTK(me));
			stack_check()
		}
		if
		:: ok -> einval = 0; break
		:: else -> skip
		fi
	   :: !(w & INVALID) && OWNER(w) != 0 && OWNER(w) != ME && !pushed ->
#if MUTANT != 2
		hnext[me] = TOP(w);
#endif
		atomic {
			CAS(w, MK(OWNER(w), ME), ok);
			if
			:: ok ->
				assert(!ONSTK(me));	/* never on the stack twice */
				stk = stk | (1 << me);
				below[me] = TOP(w);
				pushed = 1
			:: else -> skip
			fi;
			stack_check()
		}
#if MUTANT == 2
		if
		:: ok -> hnext[me] = TOP(w)
		:: else -> skip
		fi;
#endif
		ok = 0
	   :: !(w & INVALID) && OWNER(w) != ME && pushed && !(OWNER(w) == 0 && PUSHED_ACQUIRES) ->
		/* help the owner; load again once the word changed */
		(word != w)
	   fi
	od;
	w = 0; ok = 0; pushed = 0
}

inline hlock_unlock()
{
	do
	:: w = word;
	   assert(OWNER(w) == ME && !(w & INVALID));
	   if
	   :: TOP(w) == 0 ->
#if MUTANT == 1
		word = MK(0, 0);	/* plain store: a push since the load is lost */
		break
#else
		atomic { CAS(w, MK(0, 0), ok); stack_check() }
		if
		:: ok -> break
		:: else -> skip
		fi
#endif
	   :: TOP(w) != 0 ->
#if MUTANT == 3
		/* frees the word, the helpers stay stacked and compete */
		atomic { CAS(w, MK(0, TOP(w)), ok); stack_check() }
		if
		:: ok -> break
		:: else -> skip
		fi
#else
		h = TOP(w);
		atomic {	/* the read of the top's link */
			nx = hnext[h - 1];
			assert(ONSTK(h - 1));		/* read only while on the stack */
			assert(nx == below[h - 1])	/* the link it pushed on */
		}
		atomic {	/* pop = hand-off */
			CAS(w, MK(h, nx), ok);
			if
			:: ok ->
				assert(ONSTK(h - 1));	/* only to a thread on the stack */
				stk = stk & ~(1 << (h - 1))
			:: else -> skip
			fi;
			stack_check()
		}
		if
		:: ok -> break
		:: else -> skip
		fi
#endif
	   fi
	od;
	w = 0; h = 0; nx = 0; ok = 0
}

inline hlock_invalidate()
{
	do
	:: w = word;
	   assert(OWNER(w) == ME && !(w & INVALID));	/* the owner only */
	   atomic {
		CAS(w, INVALID, ok);
		if
		:: ok ->
			assert(incs == 0);
			invalidated = 1;
			stk = 0		/* the helpers return EINVAL, their entries are void */
		:: else -> skip
		fi;
		stack_check()
	   }
	   if
	   :: ok -> break
	   :: else -> skip
	   fi
	od;
	w = 0; ok = 0
}

proctype thread(byte me)
{
	byte w, h, nx, r;
	bit pushed, ok, einval;

	do
	:: r < ROUNDS ->
		hlock_lock();
		if
		:: einval -> break	/* never touches the lock again */
		:: else -> skip
		fi;
		atomic {	/* enter the critical section */
			incs++;
			assert(incs == 1);
			assert(OWNER(word) == ME && !(word & INVALID));
			assert(!invalidated)
		}
		atomic {	/* leave it */
			assert(OWNER(word) == ME);
			incs--
		}
		if
		:: INVAL && me == 0 && r == ROUNDS - 1 -> hlock_invalidate()
		:: else -> hlock_unlock()
		fi;
		done[me]++;
		r++
	:: else -> break
	od
}

init
{
	byte i;

	atomic {
		for (i : 0 .. NT - 1) {
			run thread(i)
		}
	}
	(_nr_pr == 1);
	assert(incs == 0 && stk == 0);
	assert(word == (INVAL -> INVALID : 0));
	for (i : 0 .. NT - 1) {
		assert(done[i] == ROUNDS || gotinval[i]);
		assert(INVAL || !gotinval[i])
	}
}
