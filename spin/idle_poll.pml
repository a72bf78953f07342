/*
 * idle_poll.pml - an idle CPU's poll and the hints of the wakers that rely on it
 * (kernel/sched/thread.c idle_loop, poll_hinted, sched_kick, thread_start's
 * sched_lowered; the lock-free scheduler's pick, kernel/sched/rq-lockfree.c lf_pick).
 * pan-cc-flags: -DSAFETY
 * pan-run-flags: -m100000
 * tested-by: tests/test_spin_idle_poll.py (the model and its two mutants)
 *
 * Papers: Hohmuth & Haertig 2001 (a thread of higher priority that became ready runs
 * before one of lower priority: the bound on lateness rests on it) and Massalin & Pu 1991
 * (a dispatcher any CPU's waker may feed without a lock: the queue is a lock-free object
 * and the pick a scan of it, not a snapshot).
 *
 * One idle CPU with strict priorities (the table {0}) and a waker on another CPU that makes
 * two threads ready there, one after the other: HI (level 1), then LO (level 2) - as
 * sched_idle_poll_keeps_level_order does. Every step is one atomic step of the C code
 * (seq_cst words: Spin's interleavings are sequentially consistent).
 *   waker:  insert HI (its queue bit), kick; insert LO, kick. The kick: load idle_waiting
 *           and the running level; not idle and running a level as good -> nothing.
 *           Idle: while the poll is on, CAS it ON -> "named HI/LO", or a name -> MANY
 *           (MANY: nothing to do); the poll off (NONE) or not idle -> an IPI.
 *   IPI:    sent (in flight), latched at the target at any later moment, taken at the
 *           target's next IRQ window: its handler asks for a reschedule (resched).
 *   idler:  clear resched; idle_waiting = 1; pick; found -> run it. Else poll: ON,
 *           [the pick after ON], steps (IRQ window; a named thread not tried before:
 *           take it; else pick), then exchange the poll to NONE (was), pick if nothing
 *           yet, resched if the found thread is not the one named (was is a name or MANY);
 *           nothing: halt until an IPI. The pick scans HI's bit, then LO's (two loads: no
 *           snapshot), and marks what it finds (the bit cleared).
 *   run:    idle_waiting = 0, the running level set; the thread's start turns IRQs on (a
 *           latched IPI is taken there and preempts it: the thread goes back to its queue
 *           and the pick runs again) and [takes a reschedule asked before the switch
 *           likewise]; then its first instruction.
 * Checked:
 *   - a choice (a pick, or a take by a name) never passes over HI when HI was queued
 *     before the choice began (the pick's first load, the take's look);
 *   - LO's first instruction runs after HI's, unless HI's IPI has not been taken yet (in
 *     flight - a LAPIC message on x86 - or latched: it preempts LO at its first
 *     instruction boundary with IRQs on). That is the one inversion left: the idle loop's
 *     first pick read HI's level before HI was inserted and LO's after LO was; its
 *     length is the IPI's flight. Every other way to an inversion is closed by the code
 *     itself.
 * Seeded bugs (-DMUTANT=n), each must be found (tests/test_spin_idle_poll.py):
 *   1  no pick after the poll is turned on: HI, queued by a waker that saw the poll off
 *      (it sent an IPI, no name), is passed over by a take of LO by its name;
 *   2  the thread's start does not take a reschedule asked before the switch: LO runs
 *      first although the idler's end-of-poll look (LO found, HI named or MANY) asked
 *      for one.
 */
#ifndef MUTANT
#define MUTANT 0
#endif

#define NONE 0
#define ON 1
#define NAMED_HI 2
#define NAMED_LO 3
#define MANY 4

#define HI 1
#define LO 2
#define IDLE 3		/* the running level when idle (SCHED_LEVELS) */

bit q[3];		/* q[HI], q[LO]: the threads' queue bits (linked, not marked) */
byte polling = NONE;
bit idle_waiting = 0;
byte cur = IDLE;	/* the level running on the idle CPU */
byte ipi = 0;		/* 0 none, 1 in flight, 2 latched at the target */
bit resched = 0;
bit ran[3];		/* ghost: each thread's first instruction ran */
bit waker_done = 0;

/* p, iw: the caller's locals */
inline kick(id)
{
	atomic { iw = idle_waiting; p = cur };
	if
	:: !iw && p <= id -> goto kicked
	:: else -> skip
	fi;
	if
	:: iw ->
		p = polling;
		do
		:: p == NONE -> break
		:: p == MANY -> goto kicked
		:: else ->
			atomic {
				if
				:: polling == p ->
					polling = (p == ON -> (id == HI -> NAMED_HI : NAMED_LO) : MANY);
					p = 255
				:: else -> p = polling
				fi
			};
			if
			:: p == 255 -> goto kicked
			:: else -> skip
			fi
		od
	:: else -> skip
	fi;
	atomic { if :: ipi == 0 -> ipi = 1 :: else -> skip fi };
kicked:
	skip
}

proctype Waker()
{
	byte p;
	bit iw;
	q[HI] = 1;
	kick(HI);
	q[LO] = 1;
	kick(LO);
	waker_done = 1
}

proctype Lapic()
{
	do
	:: atomic { ipi == 1 -> ipi = 2 }
	:: atomic { ran[HI] && ran[LO] && ipi != 1 -> break }
	od
}

/* an IRQ window: a latched IPI's handler asks for a reschedule */
inline irq_window()
{
	atomic { if :: ipi == 2 -> ipi = 0; resched = 1 :: else -> skip fi }
}

/* the lock-free pick: HI's bit, then LO's (two loads); marks what it finds */
/* snap: the caller's local */
inline pick(t)
{
	snap = q[HI];	/* ghost: HI queued when the choice began */
	atomic { if :: q[HI] -> q[HI] = 0; t = HI :: else -> skip fi };
	if
	:: t == 0 -> atomic { if :: q[LO] -> q[LO] = 0; t = LO :: else -> skip fi }
	:: else -> skip
	fi;
	assert(!(t == LO && snap))
}

proctype Idler()
{
	byte t, was, tried, nm;
	bit snap;
top:
	t = 0;
	tried = 0;
	resched = 0;
	idle_waiting = 1;
	pick(t);
	if
	:: t -> goto dispatch
	:: else -> skip
	fi;
	polling = ON;
#if MUTANT != 1
	pick(t);
#endif
	do
	:: t == 0 ->
		irq_window();
		nm = polling;
		if
		:: (nm == NAMED_HI || nm == NAMED_LO) && nm != tried ->
			atomic {
				/* the take: marks the named thread if it is queued */
				assert(!(nm == NAMED_LO && q[HI]));
				if
				:: nm == NAMED_HI && q[HI] -> q[HI] = 0; t = HI
				:: nm == NAMED_LO && q[LO] -> q[LO] = 0; t = LO
				:: else -> tried = nm
				fi
			}
		:: else -> skip
		fi;
		if
		:: t == 0 -> pick(t)
		:: else -> skip
		fi
	:: break
	od;
	atomic { was = polling; polling = NONE };
	if
	:: t == 0 -> pick(t)
	:: else -> skip
	fi;
	if
	:: t && was != ON && was != NONE && !(was == NAMED_HI && t == HI) && !(was == NAMED_LO && t == LO) ->
		resched = 1
	:: else -> skip
	fi;
	if
	:: t -> goto dispatch
	:: else -> skip
	fi;
	/* halt until an interrupt, or the end */
	if
	:: atomic { ipi == 2 -> ipi = 0; resched = 1 }; goto top
	:: ran[HI] && ran[LO] -> goto end
	fi;
dispatch:
	atomic { idle_waiting = 0; cur = t };
	/* the thread's start turns IRQs on: a latched IPI is taken there, in the thread's
	 * context, and its exit preempts (sched_intr_exit) whatever the mutant */
	if
	:: atomic { ipi == 2 -> ipi = 0 }; goto preempt
	:: else -> skip
	fi;
#if MUTANT != 2
	/* sched_lowered: a reschedule asked before the switch (the end-of-poll look, an IPI
	 * taken in the idle thread) preempts before the first instruction */
	if
	:: resched -> goto preempt
	:: else -> skip
	fi;
#endif
	/* the first instruction */
	assert(ran[t] || t == HI || ran[HI] || ipi != 0);
	ran[t] = 1;
	/* it runs: a latched IPI preempts it at once */
	if
	:: atomic { ipi == 2 -> ipi = 0 }; goto preempt
	:: else -> skip
	fi;
	/* it ends: back to the idle loop */
	atomic { cur = IDLE };
	if
	:: ran[HI] && ran[LO] && waker_done -> goto end
	:: else -> goto top
	fi;
preempt:
	/* back on its queue (PREEMPTED, bound here), and the pick again */
	resched = 0;
	atomic { q[t] = 1; cur = IDLE; t = 0 };
	pick(t);
	assert(t != 0);
	goto dispatch;
end:
	skip
}

init
{
	atomic {
		run Idler();
		run Waker();
		run Lapic()
	}
}
