/*
 * lf_fifo_mpmc_word.pml - spin model of the strictly lock-free MPMC queue of 8-byte
 * words (include/ksync/lf_fifo_mpmc_word.h): n cells {stamp, value}, stamp 2p = free
 * for position p, 2p + 1 = holds the element of position p; enqueue at t = one 16-byte
 * CAS {2t, *} -> {2t + 1, v}; dequeue at h = load stamp, load value, one CAS of the
 * stamp 2h + 1 -> 2(h + n); head and tail are hints advanced after the CAS by a load
 * and a CAS that only moves them forward (lf_fifo__word_hint); an operation walks or
 * jumps forward from its hint; FULL / EMPTY are read off one stamp.
 * pan-cc-flags: -DSAFETY
 * tested-by: tests/test_spin.py (the configurations, the cycle check, the mutants)
 *
 * Every shared access of the C code is one atomic step here: the hint load, the stamp
 * load, the value load, the CAS (16-byte for the enqueue: compares stamp AND value,
 * as ksync_cas128; on failure it returns the cell), the hint's filtering load and its
 * CAS (each try), and the hint reload after a walk step (lf_fifo__word_taken; its backoff is
 * local and no step).  Everything between two shared accesses is local and folded into the step.
 * Positions and stamps are small integers (no 2^64 wrap: ABA needs 2^63 operations);
 * the C code's unsigned d = stamp - 2t and its `d >> 1` are only correct when d >= 0
 * (or d is the FULL value 1 - 2n), so the model asserts that before every jump.
 * Memory is sequentially consistent: the acquire/release argument of the header (x86
 * TSO, C11 orders) is not modelled; only the interleavings of the atomic steps are.
 *
 * Processes: NPROD producers (2) doing POPS enqueues each (value = producer * POPS +
 * seq + 1; a FULL enqueue is not retried, its item is simply not enqueued), NCONS
 * consumers (2) doing COPS dequeues each (an EMPTY dequeue is not retried); -DOPS=k
 * sets both (1).  The queue has N cells (1 or 2; 2 by default), starts empty.
 * With -DHALT=1 producer 0, with -DHALT=2 consumer 0, may stop for ever before any of
 * its shared steps (a nondeterministic halt: its operation is left half-done, its hint
 * possibly unwritten).  When every other process has finished, init drains the queue
 * with dequeues (from the hints as they were left) until EMPTY.
 *
 * Checked (ghost state: genq / gdeq = positions enqueued / dequeued so far, gval[p] =
 * the value enqueued at p, updated in the same atomic step as the linearization point):
 *   - linearizable FIFO with exact capacity: the successful enqueue CAS is at position
 *     t == genq with genq - gdeq < N (positions enqueued in order, never more than N
 *     present); the successful dequeue CAS is at h == gdeq < genq, and the value the
 *     dequeue returns is gval[h] (the oldest element at its linearization point);
 *   - FULL only if N elements were present, EMPTY only if none, at the step that read
 *     the deciding stamp (the stamp load, or the failed CAS that returned it);
 *   - no loss, no duplication: each value is returned at most once; at the end the
 *     queue is empty and every value whose enqueue succeeded was dequeued exactly once
 *     and returned (except by a halted consumer that stopped after its CAS);
 *   - per-producer FIFO as each consumer sees it;
 *   - stamps: after every CAS the cells are exactly the abstract queue - position p in
 *     [gdeq, genq) has stamp 2p + 1, p in [genq, gdeq + N) has stamp 2p (so stamps only
 *     grow and each cell's stamp is of one of its own positions); every stamp a walk
 *     reads is of the cell's own positions and not behind the hint's promise (d >= 0
 *     for a jump); a dequeue's failed CAS sees the stamp past 2h + 1;
 *   - hints: tail <= genq and head <= gdeq whenever stored (the promise "every
 *     position below was enqueued / dequeued"), and a hint never moves back (each
 *     write stores a position above the hint's value at that step);
 *   - progress: no invalid end state (init's drain needs every non-halted process to
 *     finish), and, with pan -l on a -DNP build, no cycle at all: every run ends, so no
 *     operation can go on for ever, whoever halted (lock-freedom with finitely many
 *     operations).  Positions stay below MAXWALK (asserted), so the model's byte
 *     arithmetic never wraps.
 *
 * Seeded bugs (-DMUTANT=k; each must make pan report an error, tests/test_spin.py):
 *   1  the enqueue's 16-byte CAS replaced by a read (compare) then a write: two producers
 *      at the same position both write it, one element is lost (assertion t == genq)
 *   2  the dequeue loads the value after its CAS instead of before: an enqueue of
 *      position h + n may overwrite the cell in between, the dequeue returns the newer
 *      element (assertion val == gval[h])
 *   3  the full test off by one ring: FULL when the stamp is 2t + 1 (t itself already
 *      enqueued, a stale tail) instead of 2(t - n) + 1 (assertion: FULL with fewer than
 *      N elements present)
 *   4  the dequeue's CAS installs 2h instead of 2(h + n): the cell is not freed for the
 *      next ring (check_cells right after the CAS: stamp[gi % N] == 2 * gi; with
 *      -DCELLS=0, the next walk that reads the cell finds a stamp behind its position,
 *      where C's unsigned jump would leap ~2^63 positions)
 *   5  the dequeue's jump forgets the ring: h += (d >> 1) + 1 instead of + 1 - n, so a
 *      dequeue that met a stamp of h + n skips positions h + 1 .. h + n; the next cell
 *      it reads has a stamp behind its (overshot) h, the walk's assertion fails (in C
 *      the unsigned jump would leap ~2^63 positions, or report EMPTY / skip elements)
 *   6  an enqueue waits for the tail hint to reach its position before storing t + 1
 *      (a "publish the tail in order" design): a producer halted between its CAS and
 *      its hint store blocks the next one for ever (invalid end state, HALT=1)
 *   7  an enqueue that finds its position taken reloads the tail hint instead of
 *      walking on: while the producer that took it has not stored the hint (stopped or
 *      just slow), the other spins for ever (a cycle: pan -l on a -DNP build)
 *   8  after its walk step an enqueue takes the tail hint even when the hint is behind
 *      the walk (lf_fifo__word_taken without its "only forward"): the same cycle as 7
 *   9  the hint update stores its position with a plain store after the load that found
 *      the hint behind (the update before it became a CAS): a producer stopped between
 *      the two stores, later, a position behind the one another producer stored
 *      meanwhile - the hint moves back (assertion H < pos at the store), which made
 *      every later operation walk the lagging positions one cell at a time
 *
 * Sizes and times (spin 6.5.2, pan at -O2, 2-core host shared with other jobs; more in
 * spin/README.md): 2+2 processes with one operation each 191 K states, 0.24 s; two
 * enqueues per producer 2.26 M, 1.7 s; two operations each 21.9 M states, ~32 s,
 * 1.06 GB with -DCOLLAPSE (with the hint's CAS; 26.0 M with the plain store it
 * replaced); the mutants stop after 89 - 55,841 states.
 *
 *   spin -a -DN=2 lf_fifo_mpmc_word.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *   spin -a -DHALT=1 lf_fifo_mpmc_word.pml && gcc -O2 -DNP -o pan pan.c && ./pan -l -m100000
 *   spin -DMUTANT=2 -t -p -g -l lf_fifo_mpmc_word.pml     (replay a trail)
 */
#ifndef NPROD
#define NPROD 2
#endif
#ifndef NCONS
#define NCONS 2
#endif
#ifndef OPS
#define OPS 1
#endif
#ifndef POPS
#define POPS OPS
#endif
#ifndef COPS
#define COPS OPS
#endif
#ifndef N
#define N 2
#endif
#ifndef HALT
#define HALT 0
#endif
#ifndef MUTANT
#define MUTANT 0
#endif
#ifndef CELLS
#define CELLS 1		/* 0: no check_cells (to see what the other checks catch) */
#endif

#define TOTAL (NPROD * POPS)
#define MAXWALK 16		/* bound on positions (asserted) */
#define R_OK 1
#define R_FULL 2
#define R_EMPTY 3

/* the queue */
byte head, tail;		/* hints */
byte stamp[N];			/* cell p % N: stamp (lo) */
byte cval[N];			/* cell p % N: value (hi) */

/* ghost state, for the checks only */
byte genq, gdeq;		/* positions enqueued / dequeued (linearization points) */
byte gval[TOTAL];		/* the value enqueued at each position */
byte enqok[TOTAL + 1];		/* value v's enqueue succeeded */
byte deqd[TOTAL + 1];		/* value v was dequeued (linearization point) */
byte count[TOTAL + 1];		/* value v returned by a dequeue */
byte limbo;			/* value a halted consumer took but never returned */
byte ndone;			/* processes that finished (halted ones never do) */
hidden byte gi;

/* a halting process (halter) may stop for ever before any shared step */
#if HALT
#define STEP	if :: halter -> goto halted :: true -> skip fi
#else
#define STEP	skip
#endif

/* after every CAS: the cells are exactly the abstract queue */
inline check_cells()
{
#if CELLS
	assert(gdeq <= genq && genq - gdeq <= N);
	gi = gdeq;
	do
	:: gi < gdeq + N ->
		if
		:: gi < genq -> assert(stamp[gi % N] == 2 * gi + 1)
		:: else -> assert(stamp[gi % N] == 2 * gi)
		fi;
		gi++
	:: else -> break
	od;
	gi = 0
#else
	skip
#endif
}

/* linearization point of the enqueue of v at position t */
inline lin_enq(t, v)
{
	assert(t == genq);		/* in position order, never twice */
	assert(genq - gdeq < N);	/* room for it */
	gval[genq] = v;
	enqok[v] = 1;
	genq++
}

/* linearization point of the dequeue at position h; exp = the value it must return */
inline lin_deq(h, exp)
{
	assert(h == gdeq && gdeq < genq);
	exp = gval[gdeq];
	deqd[exp] = 1;
	gdeq++
}

/* lf_fifo__word_hint(&H, pos): relaxed load, then while behind a release CAS from the
 * value read (a failed CAS returns the hint now).  Checked at every write of the hint:
 * it promises no more than is true (pos <= G) and it never moves back (H < pos). */
inline hint(H, G, pos)
{
	STEP;
	x = H;
	do
	:: pos > x ->
		STEP;
#if MUTANT == 9
		/* a plain store after the load (the hint update before the CAS) */
		atomic { assert(pos <= G); assert(H < pos); H = pos };
		break
#else
		atomic {
			if
			:: H == x -> assert(pos <= G); assert(H < pos); H = pos; x = pos
			:: else -> x = H
			fi
		}
#endif
	:: else -> break
	od;
	x = 0
}

/* lf_fifo_enqueue_mpmc_word(q, v) -> res */
inline enqueue(v, res)
{
	STEP;
	t = tail;
	do
	:: STEP;
	   atomic { lo = stamp[t % N]; wasfull = (genq - gdeq == N) };		/* acquire */
	   STEP;
	   hi = cval[t % N];						/* relaxed */
	   do
	   :: lo != 2 * t -> break
	   :: else ->
		STEP;
#if MUTANT == 1
		/* read, compare ... */
		atomic {
			if
			:: stamp[t % N] == lo && cval[t % N] == hi -> ok = 1
			:: else -> lo = stamp[t % N]; hi = cval[t % N]; wasfull = (genq - gdeq == N); ok = 0
			fi
		};
		/* ... then write */
		if
		:: ok -> STEP;
			atomic { stamp[t % N] = 2 * t + 1; cval[t % N] = v; lin_enq(t, v); check_cells() }
		:: else -> skip
		fi;
#else
		atomic {	/* ksync_cas128(c, &cur, {2t + 1, v}) */
			if
			:: stamp[t % N] == lo && cval[t % N] == hi ->
				stamp[t % N] = 2 * t + 1; cval[t % N] = v;
				lin_enq(t, v); check_cells(); ok = 1
			:: else -> lo = stamp[t % N]; hi = cval[t % N]; wasfull = (genq - gdeq == N); ok = 0
			fi
		};
#endif
		if
		:: ok -> break
		:: else -> skip		/* backoff; cur is the cell now */
		fi
	   od;
	   if
	   :: ok ->
#if MUTANT == 6
		(tail == t);		/* wait for the enqueues before t to publish */
#endif
		hint(tail, genq, t + 1);
		res = R_OK;
		break
#if MUTANT == 3
	   :: !ok && lo == 2 * t + 1 ->
#else
	   :: !ok && lo + 2 * N == 2 * t + 1 ->
#endif
		assert(wasfull);	/* FULL only with N elements present */
		res = R_FULL;
		break
	   :: else ->
		/* t is taken: the stamp is of one of this cell's positions, not behind t */
		assert(lo > 2 * t && (lo / 2) % N == t % N);
#if MUTANT == 7
		STEP;
		t = tail;	/* start again from the hint instead of walking on */
#else
		if
		:: lo % 2 == 1 -> t = lo / 2 + 1
		:: else -> t = lo / 2 + 1 - N
		fi;
		/* lf_fifo__word_taken: the backoff (no shared step), then the hint if ahead */
		STEP;
		x = tail;						/* acquire */
		if
#if MUTANT == 8
		:: true -> t = x	/* the hint even when behind the walk */
#else
		:: x > t -> t = x
		:: else -> skip
#endif
		fi;
		x = 0;
#endif
		assert(t < MAXWALK)
	   fi;
	   lo = 0; hi = 0; wasfull = 0
	od;
	t = 0; lo = 0; hi = 0; wasfull = 0; ok = 0
}

/* lf_fifo_dequeue_mpmc_word(q, &val) -> res; exp = the value it must return */
inline dequeue(res, val, exp)
{
	STEP;
	h = head;
	do
	:: STEP;
	   atomic { lo = stamp[h % N]; wasempty = (genq == gdeq) };		/* acquire */
#if MUTANT != 2
	   STEP;
	   val = cval[h % N];						/* relaxed */
#endif
	   if
	   :: lo == 2 * h + 1 ->
		STEP;
		atomic {	/* ksync_cas_strong_acq_rel_u64(&c->lo, &stamp, 2(h + n)) */
			if
			:: stamp[h % N] == lo ->
#if MUTANT == 4
				stamp[h % N] = 2 * h;
#else
				stamp[h % N] = 2 * (h + N);
#endif
				lin_deq(h, exp); check_cells(); ok = 1
			:: else -> lo = stamp[h % N]; wasempty = (genq == gdeq); ok = 0;
				assert(lo > 2 * h + 1)	/* only another dequeue of h moves it */
			fi
		}
	   :: else -> skip
	   fi;
	   if
	   :: ok ->
#if MUTANT == 2
		STEP;
		val = cval[h % N];		/* too late: the cell is free for h + n */
#endif
		hint(head, gdeq, h + 1);
		res = R_OK;
		break
	   :: !ok && lo == 2 * h ->
		assert(wasempty);		/* EMPTY only with no element present */
		res = R_EMPTY;
		break
	   :: else ->
		/* h was dequeued: the stamp is of h + kn, k >= 1 */
		assert(lo >= 2 * (h + N) && (lo / 2) % N == h % N);
#if MUTANT == 5
		h = lo / 2 + 1;
#else
		h = lo / 2 + 1 - N;
#endif
		/* lf_fifo__word_taken: the backoff (no shared step), then the hint if ahead */
		STEP;
		x = head;						/* acquire */
		if
		:: x > h -> h = x
		:: else -> skip
		fi;
		x = 0;
		assert(h < MAXWALK)
	   fi;
	   lo = 0; wasempty = 0; val = 0
	od;
	h = 0; lo = 0; wasempty = 0; ok = 0
}

proctype producer(byte me)
{
	byte k, v, res, t, lo, hi, x;
	bit ok, halter, wasfull;

	halter = (HALT == 1 && me == 0);
	do
	:: k < POPS ->
		v = me * POPS + k + 1;
		enqueue(v, res);
		assert(res == R_OK || res == R_FULL);
		k++; v = 0; res = 0
	:: else -> break
	od;
	ndone++;
	goto end_p;
halted:
	skip;
end_p:
	skip
}

/* one dequeue with the checks; res = its result */
inline take(res)
{
	dequeue(res, val, exp);
	if
	:: res == R_OK ->
		assert(val == exp);		/* the oldest element at its LP */
		assert(val >= 1 && val <= TOTAL);
		assert(last[(val - 1) / POPS] < (val - 1) % POPS + 1);	/* per-producer FIFO */
		last[(val - 1) / POPS] = (val - 1) % POPS + 1;
		atomic { count[val]++; assert(count[val] == 1) }
	:: else -> assert(res == R_EMPTY)
	fi;
	val = 0; exp = 0
}

proctype consumer(byte me)
{
	byte last[NPROD];
	byte k, res, val, exp, h, lo, x;
	bit ok, halter, wasempty;

	halter = (HALT == 2 && me == 0);
	do
	:: k < COPS -> take(res); k++; res = 0
	:: else -> break
	od;
	ndone++;
	goto end_c;
halted:
	limbo = exp;	/* took it (its CAS succeeded) but never returned it */
end_c:
	skip
}

init
{
	byte last[NPROD];
	byte k, res, val, exp, h, lo, x;
	bit ok, halter, wasempty;

	atomic {
		k = 0;
		do
		:: k < N -> stamp[k] = 2 * k; cval[k] = 0; k++	/* free for position k */
		:: else -> break
		od;
		k = 0;
		do
		:: k < NPROD -> run producer(k); k++
		:: else -> break
		od;
		k = 0;
		do
		:: k < NCONS -> run consumer(k); k++
		:: else -> break
		od;
		k = 0
	};
	/* every process that did not halt has finished: drain what is left */
	(_nr_pr == 1);
	do
	:: take(res);
	   if
	   :: res == R_EMPTY -> break
	   :: else -> skip
	   fi
	od;
	assert(genq == gdeq);
	k = 1;
	do
	:: k <= TOTAL ->
		assert(deqd[k] == enqok[k]);
		assert(count[k] == deqd[k] || k == limbo);
		k++
	:: else -> break
	od;
	assert(ndone + (HALT != 0) >= NPROD + NCONS);
halted:
	skip
}
