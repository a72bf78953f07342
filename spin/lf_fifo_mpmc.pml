/*
 * lf_fifo_mpmc.pml - spin model of libksync's mpmc bounded FIFO queue
 * (include/ksync/lf_fifo_mpmc.h over the NCQ index rings of include/ksync/lf_fifo.h):
 * the NCQ ring of Nikolaev 2019 (DISC), used twice as in its indirection construction -
 * a ring of free cell indices (starts full) and a ring of used cell indices (starts
 * empty) over a data array of N cells; Massalin & Pu 1991 "FIFO queues" (multiple
 * producers, multiple consumers).
 *
 * Every shared-memory access of the C code is one atomic step here; a CAS is one
 * atomic { compare; store or reload }.  Each data-cell write is two steps (BUSY, then
 * the value), so a consumer that could read a cell while it is being written, or a
 * producer that could overwrite a cell before its consumer read it, trips an assertion.
 *
 * Checked (safety, exhaustive over all interleavings):
 *   - no duplication: each item is dequeued at most once (count[v] <= 1);
 *   - no loss: at the end (init drains what is left) every item whose enqueue got a
 *     cell was dequeued exactly once, and only such items were dequeued;
 *   - per-producer FIFO: each consumer sees each producer's items in sequence order;
 *   - cell ownership: a consumer never reads a cell that is being (re)written;
 *   - no invalid end state: every process terminates (no operation waits for another).
 * So that every run ends (a consumer waiting forever for a lost item would hide the loss
 * in a cycle, which a safety search does not report), a consumer stops when a dequeue
 * finds the queue empty after every producer had finished, and a producer stops
 * retrying KSYNC_EFULL once every consumer has stopped; init then drains what is left.
 *
 * Parameters (spin -D...): NPROD producers (2), NCONS consumers (1..2), ITEMS items per
 * producer, N cells (a power of two, 2 or 4).  MUTANT=1 returns the cell to the free
 * ring before reading it; MUTANT=2 lets an enqueue write a slot whose cycle is not
 * exactly the previous lap's (a stale tail then overwrites a later lap's element): both
 * must be caught (tests/test_spin_fifo.py).
 * tested-by: tests/test_spin_fifo.py
 *
 *   spin -a -DNCONS=2 lf_fifo_mpmc.pml && cc -O2 -DSAFETY -o pan pan.c && ./pan
 */
#ifndef NPROD
#define NPROD 2
#endif
#ifndef NCONS
#define NCONS 1
#endif
#ifndef ITEMS
#define ITEMS 2
#endif
#ifndef N
#define N 2
#endif
#ifndef MUTANT
#define MUTANT 0
#endif

#define MASK (N - 1)
#define TOTAL (NPROD * ITEMS)
#define NONE 255	/* dequeue result: ring empty */
#define BUSY 254	/* a data cell being written */
#define CYC(p) ((p) & ~MASK)

/* ring FREE: indices of unused cells; ring USED: indices of cells holding items, in
 * FIFO order.  hd[r], tl[r]: head and tail positions; sl[r * N + (p & MASK)]: slots. */
#define FREE 0
#define USED 1
byte hd[2], tl[2];
byte sl[2 * N];
/* the cells; item v = producer * ITEMS + sequence */
byte data[N];
/* ghost state for the checks */
byte published[TOTAL];	/* set once the item's enqueue has its cell */
byte count[TOTAL];	/* times the item was dequeued */
byte taken;
byte pdone, cdone;	/* producers / consumers that have finished */

/*
 * NCQ multi-producer enqueue of idx (lf_fifo__ncq_enq_mp).  The ring is never full (N
 * indices circulate), so the slot at the tail is either ready (cycle(t) - N), already
 * written (cycle(t): help the tail) or ahead (stale t: reread).
 */
inline ncq_enq(r, idx)
{
	do
	:: t = tl[r];
	   w = sl[r * N + (t & MASK)];
	   if
	   :: CYC(w) == CYC(t) ->
		atomic { if :: tl[r] == t -> tl[r] = t + 1 :: else -> skip fi }
#if MUTANT == 2
	   :: CYC(w) != CYC(t) ->
#else
	   :: CYC(w) + N == CYC(t) ->
#endif
		atomic {
			if
			:: sl[r * N + (t & MASK)] == w -> sl[r * N + (t & MASK)] = CYC(t) | idx; ok = 1
			:: else -> ok = 0
			fi
		};
		if
		:: ok == 1 ->
			atomic { if :: tl[r] == t -> tl[r] = t + 1 :: else -> skip fi };
			break
		:: else -> skip
		fi
	   :: else -> skip
	   fi
	od;
	t = 0; w = 0; ok = 0
}

/*
 * NCQ multi-consumer dequeue (lf_fifo__ncq_deq_mc): res = the index at the head, or
 * NONE if position h was never written.
 */
inline ncq_deq(r, res)
{
	h = hd[r];
	do
	:: w = sl[r * N + (h & MASK)];
	   if
	   :: CYC(w) == CYC(h) ->
		atomic {
			if
			:: hd[r] == h -> hd[r] = h + 1; ok = 1
			:: else -> h = hd[r]; ok = 0
			fi
		};
		if
		:: ok == 1 -> res = w & MASK; break
		:: else -> skip
		fi
	   :: CYC(w) + N == CYC(h) -> res = NONE; break
	   :: else -> h = hd[r]
	   fi
	od;
	h = 0; w = 0; ok = 0
}

proctype producer(byte p)
{
	byte s, i, res, t, w, h, ok;

	do
	:: s < ITEMS ->
		ncq_deq(FREE, res);		/* claim a free cell */
		if
		:: res == NONE ->		/* KSYNC_EFULL: try again ... */
			if
			:: cdone == NCONS -> break	/* ... unless nobody consumes */
			:: else -> skip
			fi
		:: else ->
			i = res;
			data[i] = BUSY;		/* the copy, in two steps */
			data[i] = p * ITEMS + s;
			/* ghost: once it has a cell, the enqueue will publish (ncq_enq
			 * always ends), so the item counts as enqueued from here */
			published[p * ITEMS + s] = 1;
			ncq_enq(USED, i);	/* publish */
			s++
		fi;
		res = 0; i = 0
	:: else -> break
	od;
	pdone++
}

/* Take one item from the used ring (as lf_fifo_dequeue_mpmc) and check it; res = NONE
 * if the ring was empty. */
inline take(res)
{
	ncq_deq(USED, res);			/* claim the oldest item */
	if
	:: res != NONE ->
		i = res;
#if MUTANT == 1
		ncq_enq(FREE, i);		/* return the cell too early */
#endif
		v = data[i];			/* the copy out */
		assert(v != BUSY);
		assert(v < TOTAL);
		assert(published[v] == 1);
		assert(last[v / ITEMS] == NONE || v % ITEMS > last[v / ITEMS]);
		last[v / ITEMS] = v % ITEMS;
		atomic { count[v]++; taken++ };
		assert(count[v] == 1);
#if MUTANT != 1
		ncq_enq(FREE, i);		/* return the cell */
#endif
		v = 0; i = 0
	:: else -> skip
	fi
}

proctype consumer(byte c)
{
	byte last[NPROD];
	byte i, res, v, t, w, h, ok, pd;

	do
	:: i < NPROD -> last[i] = NONE; i++
	:: else -> break
	od;
	i = 0;
	do
	:: taken == TOTAL -> break
	:: else ->
		pd = pdone;
		take(res);
		if
		:: res == NONE && pd == NPROD -> break	/* all published, all taken */
		:: else -> skip			/* KSYNC_EEMPTY: try again */
		fi;
		res = 0; pd = 0
	od;
	cdone++
}

init
{
	byte k;
	byte last[NPROD];
	byte i, res, v, t, w, h, ok;

	atomic {
		/* free ring full of 0..N-1: head = N, tail = 2N, slot k = cycle(N) | k;
		 * used ring empty: head = tail = N, slots hold cycle 0 = cycle(N) - N */
		hd[FREE] = N;
		tl[FREE] = 2 * N;
		hd[USED] = N;
		tl[USED] = N;
		k = 0;
		do
		:: k < N -> sl[FREE * N + k] = N | k; sl[USED * N + k] = 0; k++
		:: else -> break
		od;
		k = 0;
		do
		:: k < NPROD -> last[k] = NONE; run producer(k); k++
		:: else -> break
		od;
		k = 0;
		do
		:: k < NCONS -> run consumer(k); k++
		:: else -> break
		od
	};
	/* when everyone has finished, drain what is left, as one more consumer */
	(_nr_pr == 1);
	do
	:: take(res);
	   if
	   :: res == NONE -> break
	   :: else -> skip
	   fi
	od;
	/* nothing lost, nothing duplicated: every published item was dequeued once */
	k = 0;
	do
	:: k < TOTAL -> assert(count[k] == published[k]); k++
	:: else -> break
	od;
	/* and the rings are consistent: used ring empty, free ring holds all N cells */
	assert(hd[USED] == tl[USED] && tl[FREE] - hd[FREE] == N)
}
