/*
 * lf_list.pml - Promela model of include/ksync/lf_list.h: marked deletion + unlinking
 * (Harris, with helping and restart from the head), pop_head's frozen-head protocol,
 * and the tail hint {lo, hi} with its generation.  Massalin & Pu 1991, "General linked
 * lists"; Harris DISC 2001.
 *
 * Three worker processes run two list operations each (insert_head, insert_tail,
 * pop_head, and remove by pointer of a node that a lookup in the same section found,
 * as the C callers do); which ones is chosen non-deterministically by init
 * among the scenarios below, so one verification run covers them all.  Every shared
 * access of the C code is one atomic step here, each CAS one atomic compare-and-set of
 * the whole word (a node's {next, DEL, POP, TAILED}, the head's {first, FROZEN}, the
 * tail's {lo, hi}); private computation is folded into the steps around it.
 *
 * Node states: FREE (never inserted), LIVE (from its insert's successful CAS), DELETED
 * (from the CAS that marks it), RETIRED (its remover or popper has returned: from then
 * on, the caller may hand it to lf_epoch_retire).
 *
 * Checked in every reachable state (monitor) and at the end (init):
 *   - no lost node: every LIVE node is reachable from the head;
 *   - no node both reachable and freed: no RETIRED (or FREE) node is reachable, and the
 *     tail hint never names a RETIRED node;
 *   - no reinsertion of a deleted node: once a deleted node is unreachable it never
 *     becomes reachable again;
 *   - the list never has a cycle;
 *   - pop_head marks only the node the frozen head names (it was first at that moment);
 *   - epoch safety: an operation never reads a node that was retired before the
 *     operation began (every operation is one lf_epoch read-side section, so such a
 *     node may already be freed);
 *   - at the end: no DELETED node remains (every remove/pop finished), and the nodes
 *     reachable from the head are exactly the LIVE ones; the hint is 0 or reachable.
 *
 * Seeded bugs (-DMUTANT=n; 0, the default, is the algorithm as in C).  Each must make
 * pan report an error; tests/test_spin.py checks each in the smallest scenario that
 * exposes it (-DSCENARIO=k):
 *   1  tail_fix does not bump the generation (a stale swing re-installs a retired hint)
 *   2  remove does not fix the tail hint when the node was the tail (TAILED)
 *   3  remove marks the node but skips its unlinking walk (search)
 *   4  the walk does not restart after a failed unlink CAS: it goes on as if unlinked
 *   5  pop_head does not freeze the head: it marks the first node it read directly
 *   6  pop_head claims a node that a remove deleted (DEL without POP counts as its own)
 *
 * Run (about 10 s here):  spin -a lf_list.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan
 * pan-cc-flags: -DSAFETY -DCOLLAPSE
 * pan-run-flags: -m200000
 */

#define N 4		/* nodes 1..N; 0 is NIL */

#ifndef MUTANT
#define MUTANT 0
#endif

#define FREE 0
#define LIVE 1
#define DELETED 2
#define RETIRED 3

#define NOP 0
#define INS_HEAD 1
#define INS_TAIL 2
#define POP 3
#define REMOVE 4

/* node words: successor and the flags DEL (dl), POP (pp), TAILED (tg) */
byte nx[N + 1];
bit dl[N + 1];
bit pp[N + 1];
bit tg[N + 1];
/* head word: first node and FROZEN */
byte head;
bit frz;
/* tail hint */
byte tlo;
byte thi;
/* bookkeeping for the checks (not part of the algorithm) */
byte st[N + 1];
byte retired;		/* bit i: node i is RETIRED */
bit gone[N + 1];	/* deleted and seen unreachable */

/* Epoch safety: the operation (one read-side section) began with the nodes in
 * `mystart` (a bit mask) already retired, so possibly freed: it must not touch them. */
#define SAFE(x) assert(((mystart >> (x)) & 1) == 0)

/* One atomic load of node x's word into c_*, checking epoch safety first. */
inline load_node(x)
{
	atomic {
		SAFE(x);
		c_nx = nx[x]; c_dl = dl[x]; c_pp = pp[x]; c_tg = tg[x]
	}
}

inline retire(x)
{
	atomic {
		assert(st[x] == DELETED);
		retired = retired | (1 << (x));
		st[x] = RETIRED
	}
}

/* lf_list__help_pop: finish the pop that froze the head on node hx. */
inline help_pop(hx)
{
	atomic {
		SAFE(hx);
		h_nx = nx[hx]; h_dl = dl[hx]; h_pp = pp[hx]; h_tg = tg[hx]
	}
	do
	:: h_dl -> break
	:: else ->
		atomic {
			if
			:: (nx[hx] == h_nx && dl[hx] == 0 && pp[hx] == h_pp && tg[hx] == h_tg) ->
				assert(head == hx && frz == 1);	/* hx is first right now */
				assert(st[hx] == LIVE);
				dl[hx] = 1; pp[hx] = 1; h_dl = 1; h_pp = 1;
				st[hx] = DELETED
			:: else ->
				h_nx = nx[hx]; h_dl = dl[hx]; h_pp = pp[hx]; h_tg = tg[hx]
			fi
		}
	od;
	atomic {
		if
		:: (head == hx && frz == 1) -> head = h_nx; frz = 0	/* hx is deleted: unlink */
		:: else -> skip
		fi;
		h_nx = 0; h_dl = 0; h_pp = 0; h_tg = 0
	}
}

/* lf_list__tail_fix: bump the generation, clear the hint if it names x. */
inline tail_fix(x)
{
	/* The C code reads the halves separately; a torn pair only makes the first
	 * cmpxchg16b fail and return the true pair, which is what this one-step read
	 * gives. */
	atomic { t_hi = thi; t_lo = tlo; ok = 0 };
	do
	:: ok -> break
	:: else ->
		atomic {
			if
			:: (tlo == t_lo && thi == t_hi) ->
				if
				:: tlo == x -> tlo = 0
				:: else -> skip
				fi;
#if MUTANT != 1
				thi = thi + 1;
#endif
				ok = 1; t_lo = 0; t_hi = 0
			:: else -> t_lo = tlo; t_hi = thi
			fi
		}
	od;
	ok = 0
}

/*
 * lf_list__search(target): walk from the head unlinking deleted nodes; restart on a
 * failed CAS or a frozen head.  s_res = 1: this walk unlinked target.  s_res = 0: the
 * end; p is the last link (0 = head) and w_* its value.
 */
inline search(target)
{
	s_done = 0;
	do
	:: s_done -> break
	:: else ->
		atomic {
			p = 0; w_nx = head; w_fz = frz;
			w_dl = 0; w_pp = 0; w_tg = 0; s_restart = 0
		};
		do
		:: (s_restart || s_done) -> break
		:: else ->
			if
			:: (p == 0 && w_fz) -> help_pop(w_nx); s_restart = 1
			:: (p != 0 && w_dl) -> s_restart = 1
			:: else ->
				cur = w_nx;
				if
				:: cur == 0 -> s_done = 1; s_res = 0
				:: else ->
					load_node(cur);
					if
					:: c_dl ->
						/* unlink cur: CAS(p, w, c_nx | (w & TAILED)) */
						atomic {
							if
							:: p == 0 ->
								if
								:: (head == w_nx && frz == 0) -> head = c_nx; ok = 1
								:: else -> ok = 0
								fi
							:: else ->
								SAFE(p);
								if
								:: (nx[p] == w_nx && dl[p] == w_dl && pp[p] == w_pp && tg[p] == w_tg) ->
									nx[p] = c_nx; ok = 1
								:: else -> ok = 0
								fi
							fi;
							if
#if MUTANT == 4
							:: !ok -> w_nx = c_nx	/* go on as if unlinked */
#else
							:: !ok -> s_restart = 1
#endif
							:: (ok && cur == target) -> s_done = 1; s_res = 1
							:: (ok && cur != target) -> w_nx = c_nx
							fi;
							ok = 0
						}
					:: else ->
						p = cur;
						w_nx = c_nx; w_dl = c_dl; w_pp = c_pp; w_tg = c_tg
					fi
				fi
			fi
		od
	od;
	s_restart = 0; cur = 0; c_nx = 0; c_dl = 0; c_pp = 0; c_tg = 0
}

inline insert_head(n)
{
	/* n is private until the CAS: its stores are folded into the next step */
	atomic { nx[n] = 0; dl[n] = 0; pp[n] = 0; tg[n] = 0; h = head; fz = frz };
	do
	:: fz -> help_pop(h); atomic { h = head; fz = frz }
	:: else ->
		atomic {
			nx[n] = h;
			if
			:: (head == h && frz == 0) -> head = n; st[n] = LIVE; ok = 1
			:: else -> h = head; fz = frz; ok = 0
			fi
		};
		if
		:: ok -> ok = 0; h = 0; fz = 0; break
		:: else -> skip
		fi
	od
}

inline insert_tail(n)
{
	/* the two halves of the hint, read separately as in C (a torn pair only fails
	 * the swing; the order does not matter) */
	atomic { nx[n] = 0; dl[n] = 0; pp[n] = 0; tg[n] = 1; t_hi = thi };
	atomic { t_lo = tlo; appended = 0; cur = t_lo };
	if
	:: cur != 0 ->
		load_node(cur);
		do
		:: c_dl -> break
		:: (!c_dl && c_nx != 0) -> cur = c_nx; load_node(cur)
		:: (!c_dl && c_nx == 0) ->
			atomic {
				if
				:: (nx[cur] == 0 && dl[cur] == 0 && pp[cur] == c_pp && tg[cur] == c_tg) ->
					nx[cur] = n; st[n] = LIVE; appended = 1
				:: else ->
					c_nx = nx[cur]; c_dl = dl[cur]; c_pp = pp[cur]; c_tg = tg[cur]
				fi
			};
			if
			:: appended -> break
			:: else -> skip
			fi
		od
	:: else -> skip
	fi;
	do
	:: appended -> break
	:: else ->
		search(0);
		atomic {
			if
			:: p == 0 ->
				if
				:: (head == w_nx && frz == 0) -> head = n; st[n] = LIVE; appended = 1
				:: else -> skip
				fi
			:: else ->
				if
				:: (nx[p] == w_nx && dl[p] == w_dl && pp[p] == w_pp && tg[p] == w_tg) ->
					nx[p] = n; st[n] = LIVE; appended = 1
				:: else -> skip
				fi
			fi
		}
	od;
	/* swing: one cmpxchg16b expecting the pair read before the append */
	atomic {
		if
		:: (tlo == t_lo && thi == t_hi) -> tlo = n
		:: else -> skip
		fi;
		appended = 0; t_lo = 0; t_hi = 0; cur = 0; p = 0;
		w_nx = 0; w_dl = 0; w_pp = 0; w_tg = 0; w_fz = 0;
		c_nx = 0; c_dl = 0; c_pp = 0; c_tg = 0
	}
}

inline pop_head()
{
	res = 0;
	done = 0;
	do
	:: done -> break
	:: else ->
		atomic { h = head; fz = frz };
		if
		:: fz -> help_pop(h)
		:: (!fz && h == 0) -> done = 1		/* KSYNC_EEMPTY */
		:: (!fz && h != 0) ->
			load_node(h);
			if
			:: c_dl ->
				atomic {
					if
					:: (head == h && frz == 0) -> head = c_nx
					:: else -> skip
					fi
				}
			:: else ->
#if MUTANT == 5
				/* no freeze: CAS the first node's word to DEL|POP, then unlink it
				 * from the head if it is still first */
				atomic {
					if
					:: (nx[h] == c_nx && dl[h] == 0 && pp[h] == c_pp && tg[h] == c_tg) ->
						assert(st[h] == LIVE);
						dl[h] = 1; pp[h] = 1; st[h] = DELETED; ok = 1
					:: else -> ok = 0
					fi
				};
				if
				:: ok ->
					atomic {
						if
						:: (head == h && frz == 0) -> head = nx[h]
						:: else -> skip
						fi
					};
					load_node(h);
					if
					:: c_pp ->
#else
				atomic {
					if
					:: (head == h && frz == 0) -> frz = 1; ok = 1
					:: else -> ok = 0
					fi
				};
				if
				:: ok ->
					help_pop(h);
					load_node(h);
					if
#if MUTANT == 6
					:: c_dl ->	/* DEL set by a remove counts as our POP */
#else
					:: c_pp ->
#endif
#endif
						if
						:: c_tg -> tail_fix(h)
						:: else -> skip
						fi;
						done = 1;
						res = h
					:: else -> skip
					fi
				:: else -> skip
				fi;
				ok = 0
			fi
		fi
	od;
	if
	:: res != 0 -> retire(res)
	:: else -> skip
	fi;
	res = 0; done = 0; h = 0; fz = 0; c_nx = 0; c_dl = 0; c_pp = 0; c_tg = 0
}

/* lf_list_find by identity: a read-only walk over live nodes; ok = 1 if n is seen. */
inline find_node(n)
{
	ok = 0;
	atomic { cur = head };
	do
	:: cur == 0 -> break
	:: else ->
		load_node(cur);
		if
		:: (cur == n && !c_dl) -> ok = 1; break
		:: else -> cur = c_nx
		fi
	od;
	cur = 0; c_nx = 0; c_dl = 0; c_pp = 0; c_tg = 0
}

/* lf_list_remove_mpmc(n), for an n that this section found by a lookup (a pointer
 * from an earlier section may be freed: that would be the caller's error). */
inline remove(n)
{
	res = 0;
	load_node(n);
	do
	:: c_dl -> break			/* KSYNC_ENOENT: removed by another */
	:: else ->
		atomic {
			if
			:: (nx[n] == c_nx && dl[n] == 0 && pp[n] == c_pp && tg[n] == c_tg) ->
				assert(st[n] == LIVE);
				dl[n] = 1; st[n] = DELETED; res = 1
			:: else ->
				c_nx = nx[n]; c_dl = dl[n]; c_pp = pp[n]; c_tg = tg[n]
			fi
		};
		if
		:: res -> break
		:: else -> skip
		fi
	od;
	if
	:: res ->
		m_tg = c_tg;
#if MUTANT != 3
		search(n);
#endif
#if MUTANT != 2
		if
		:: m_tg -> tail_fix(n)
		:: else -> skip
		fi;
#endif
		retire(n)
	:: else -> skip
	fi;
	res = 0; m_tg = 0; s_res = 0; p = 0;
	w_nx = 0; w_dl = 0; w_pp = 0; w_tg = 0; w_fz = 0;
	c_nx = 0; c_dl = 0; c_pp = 0; c_tg = 0
}

proctype worker(byte op1; byte a1; byte op2; byte a2)
{
	byte k, op, arg, mystart;
	byte c_nx, h_nx, w_nx, cur, p, h, t_lo, t_hi, res;
	bit c_dl, c_pp, c_tg, h_dl, h_pp, h_tg, w_dl, w_pp, w_tg, w_fz;
	bit ok, fz, appended, done, m_tg, s_done, s_restart, s_res;

	do
	:: k == 2 -> break
	:: else ->
		if
		:: k == 0 -> op = op1; arg = a1
		:: else -> op = op2; arg = a2
		fi;
		mystart = retired;	/* lf_epoch_enter */
		if
		:: op == INS_HEAD -> insert_head(arg)
		:: op == INS_TAIL -> insert_tail(arg)
		:: op == POP -> pop_head()
		:: op == REMOVE ->
			find_node(arg);
			if
			:: ok -> ok = 0; remove(arg)
			:: else -> skip
			fi
		:: op == NOP -> skip
		fi;
		op = 0; arg = 0; mystart = 0;	/* lf_epoch_exit */
		k++
	od
}

/* Checks every invariant in every state (one indivisible step, at any point). */
active proctype monitor()
{
	byte i, x, steps;
	bit r[N + 1];

end:	do
	:: d_step {
		i = 1;
		do
		:: i <= N -> r[i] = 0; i++
		:: else -> break
		od;
		x = head;
		steps = 0;
		do
		:: (x != 0 && steps <= N) -> r[x] = 1; x = nx[x]; steps++
		:: else -> break
		od;
		assert(x == 0);				/* no cycle */
		i = 1;
		do
		:: i <= N ->
			assert(!(st[i] == LIVE && !r[i]));	/* no lost node */
			assert(!(st[i] == RETIRED && r[i]));	/* reachable and freed */
			assert(!(st[i] == FREE && r[i]));
			assert(!(st[i] == RETIRED && tlo == i));	/* hint names freed */
			if
			:: (st[i] >= DELETED && !r[i]) -> gone[i] = 1
			:: else -> skip
			fi;
			assert(!(gone[i] && r[i]));		/* never linked again */
			r[i] = 0;	/* scratch: leave no trace in the state */
			i++
		:: else -> break
		od;
		i = 0; x = 0; steps = 0
	}
	od
}

init
{
	byte i, x;
	bit r[N + 1];

	atomic {
		/* initial list: head -> 1 -> 2; 1 inserted at the head, 2 appended (the hint) */
		head = 1; nx[1] = 2; st[1] = LIVE;
		nx[2] = 0; tg[2] = 1; st[2] = LIVE;
		tlo = 2; thi = 0;
		if
#if !defined(SCENARIO) || SCENARIO == 1
		:: /* appends vs a removal of the hint's node and pops */
			run worker(INS_TAIL, 3, INS_TAIL, 4);
			run worker(REMOVE, 2, POP, 0);
			run worker(POP, 0, NOP, 0)
#endif
#if !defined(SCENARIO) || SCENARIO == 2
		:: /* head inserts vs frozen pops vs an interior removal */
			run worker(INS_HEAD, 3, POP, 0);
			run worker(REMOVE, 1, POP, 0);
			run worker(POP, 0, INS_TAIL, 4)
#endif
#if !defined(SCENARIO) || SCENARIO == 3
		:: /* pops racing each other and an append; removal of an appended node */
			run worker(POP, 0, POP, 0);
			run worker(INS_TAIL, 3, REMOVE, 3);
			run worker(REMOVE, 2, NOP, 0)
#endif
		fi
	};
	(_nr_pr == 2);		/* only init and the monitor are left */
	d_step {
		i = 1;
		do
		:: i <= N -> r[i] = 0; i++
		:: else -> break
		od;
		x = head;
		do
		:: x != 0 -> r[x] = 1; x = nx[x]
		:: else -> break
		od;
		assert(frz == 0);
		i = 1;
		do
		:: i <= N ->
			assert(st[i] != DELETED);		/* every removal finished */
			assert(r[i] == (st[i] == LIVE));	/* contents = the live set */
			i++
		:: else -> break
		od;
		assert(tlo == 0 || r[tlo])
	}
}
