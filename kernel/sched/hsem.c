/*
 * hsem.c - the lock-free binary semaphore (Hohmuth & Haertig 2001, Figure 1) and the
 * wait-and-notify monitor on a helping lock (Figure 2); issue 12. hsem.h is the interface
 * and states the semantics; hlock.c is the helping lock.
 *
 * Paper: section 3.3 (critical sections with helping never sleep, so a monitor's wait is
 * "an unlock-sleep-lock sequence"; "Figure 2 shows a possible monitor implementation
 * that uses a simple lock-free semaphore, shown in Figure 1"), Figure 1 (down: enqueue
 * the current thread on a lock-free thread list, CAS-decrement the count; old > 0: "Own
 * the semaphore, can safely dequeue myself"; else sleep(Thread_sem_wakeup), "Have been
 * dequeued in up()". up: CAS-increment; old < 0: dequeue_first and wakeup(t,
 * Thread_sem_wakeup)), Figure 2 (enter = lock, leave = unlock, wait = unlock; down;
 * lock, signal = up; condition semaphores start at 0), Figure 3 (sleep/wakeup with
 * condition flags: thread.h sched_sleep/sched_wakeup, our flag SCHED_COND_SEM).
 *
 * ---- the count (Figure 1 as written) ---------------------------------------------------
 * count = init + ups - downs, changed only by atomic read-modify-writes (fetch_add: one
 * lock xadd, wait-free; Figure 1's CAS loop is the same RMW on a CAS-only machine). Call a
 * down with old <= 0 a DEBTOR (it must be woken), an up with old < 0 a PAYER (it must wake
 * someone). Induction over the RMWs in the count's modification order gives
 *     (I1)  #debtor downs - #payer ups = max(0, -count)   at all times,
 * (a debtor down raises both sides by one, a payer up lowers both, every other RMW leaves
 * max(0, -count) at 0), and symmetrically #downs with old > 0 = init + #ups with old >= 0
 * - max(0, count), so at most init + #ups downs ever own: mutual exclusion for init 1.
 *
 * ---- the race Figure 1 leaves open ("for single-CPU machines") and the fix --------------
 * An up dequeues the FIRST thread on the list, which need not be a debtor: threads
 * enqueue before they decrement, so the first one may still be between its enqueue and
 * its decrement, or may have decremented with old > 0 and not yet taken itself off. With
 * preemption (or a second CPU) the up can run in that window:
 *     X enqueues; Z enqueues, decrements (0 -> -1), sleeps; U ups (-1 -> 0);
 *     V ups (0 -> 1); X decrements (1 -> 0): X owns; U dequeues the first - X - and wakes
 *     X; X's self-removal finds nothing; Z sleeps for ever with count 0 (a lost wakeup).
 * (For a mutex - every up by the thread whose down owned - X cannot get old > 0 in that
 * window: V's up would need a second owner. Signalling semaphores have it; the test
 * hsem_race_owner_dequeued constructs exactly the interleaving above.)
 * The fix, a TOKEN view of wakeups: each payer up carries one token, which it hands to
 * the thread it dequeues (dequeue and wakeup are the hand-over). The dequeued thread X:
 *   - a debtor: the token pays it; it returns.
 *   - not decremented yet: it holds the token until it decrements. If old <= 0 it is a
 *     debtor already paid (it finds itself dequeued and returns without sleeping); if
 *     old > 0, as below.
 *   - an owner (old > 0) that finds itself already dequeued when it tries to take itself
 *     off: it owns by the count and ALSO holds a token meant for a debtor. It passes the
 *     token on exactly as the up would have: it dequeues the first thread on the list and
 *     wakes it (hand_over), and returns. (A passer is a payer without an increment.)
 * Why the passer (and every payer) always finds a thread on the list: let p be the payers
 * that have not dequeued yet, q the owners holding a token not yet passed, l the dequeued
 * threads holding a token and not yet decremented, and u the debtors not yet paid. Every
 * token ever created (one per payer) is paid to a debtor or is in p, q or l, so
 *     u = #debtors - #paid = #debtors - (#payers - p - q - l) = max(0, -count) + p + q + l
 * by (I1), hence u >= p + q. A debtor enqueued itself before its decrement and never
 * takes itself off (only owners do), and whoever dequeues it pays it; so the u unpaid
 * debtors are on the list. A payer or passer about to dequeue counts itself in p + q >= 1: the
 * list holds at least one thread. (hand_over panics if it ever finds it empty.) And once
 * every operation has returned, p = q = l = 0: the sleepers are exactly the -count
 * unpaid debtors - no wakeup is lost, and count and list agree.
 * The list is linearizable and the count's RMWs order it: a down's enqueue precedes its
 * decrement (release), and a payer's increment reads that decrement or a later RMW
 * (acquire: the RMWs continue the release sequence), so its dequeue sees the node.
 * FIFO: threads are dequeued in enqueue order; a token may go to a thread that has not
 * slept yet (it was first), never past one that is on the list.
 *
 * Stale wakeups. The owner that passes a token on does not wait for the up that dequeued
 * it to deliver its wakeup (that up may be preempted right there; waiting for it would
 * make down blocking); a dequeued thread that had not decremented yet likewise returns
 * without sleeping. Their SCHED_COND_SEM flag may therefore arrive (or stay set) after
 * they returned. It is harmless: every sleep here is "while my node is on a list:
 * sched_sleep(SEM)", so a stale flag costs one extra round of that loop (in this or a
 * later down), and other sleeps ignore the flag (sched_sleep returns only for the
 * conditions it was given). If the thread has exited meanwhile, the wakeup returns
 * KSYNC_ESRCH, or reaches the slot's next thread, as harmlessly.
 *
 * ---- the waiter list ---------------------------------------------------------------------
 * Figure 1 needs enqueue at the tail, dequeue of the first, and removal of one's own node
 * from anywhere. A node on the downer's stack is unsafe with any lock-free list whose
 * operations read nodes they do not own (libksync's lf_list and lf_dlist both: a walker,
 * or a dequeuer that read a stale neighbour, may still read - or, with the soft MWCAS,
 * transiently install a descriptor into - a node after its owner returned and its stack
 * was reused). Nodes therefore live in a type-stable table here, one per thread slot
 * (hsem_nodes[thread id]; a thread waits in at most one down at a time). The list is a
 * doubly linked list whose links are SLOT NUMBERS, not addresses, and every change is one
 * 4-word soft MWCAS (include/ksync/mwcas.h: lock-free on SMP) - the lf_dlist scheme,
 * with two differences that a reused per-thread node needs:
 *   - a stale link names a slot, so an operation that read it touches only the table
 *     and its own semaphore, never another semaphore's memory (lf_dlist's pop_front reads
 *     head->next and then removes that node from WHATEVER list it is on by then: with
 *     nodes that move between lists it could take a waiter off another semaphore);
 *   - dequeue_first compares the semaphore's `first` word in the same MWCAS, so it takes
 *     the node that is first on THIS semaphore at its linearization point.
 * Words (all MWCAS words, 0 = OFF, NONE = the end, VAL(slot + 2) = a slot):
 *   s->first, s->last             the ends (NONE, NONE when empty)
 *   hsem_nodes[i].next, .prev      OFF when slot i is on no list
 *   enqueue i:  l = last;   { (l ? node[l].next : first): NONE -> i,  last: l -> i,
 *                             node[i].next: OFF -> NONE,  node[i].prev: OFF -> l }
 *   remove i:   p, x = prev, next of i (x OFF: not on the list: KSYNC_ENOENT)
 *               { (p ? node[p].next : first): i -> x,  (x ? node[x].prev : last): i -> p,
 *                 node[i].next: x -> OFF,  node[i].prev: p -> OFF }
 *   dequeue:    f = first (NONE: empty), x = node[f].next
 *               { first: f -> x,  (x ? node[x].prev : last): f -> NONE,
 *                 node[f].next: x -> OFF,  node[f].prev: NONE -> OFF }
 * Each MWCAS compares every word it writes, including the moved node's own two, so it
 * succeeds only on the neighbourhood it read, which then is the current one (ABA of a
 * slot that left and came back is harmless: the words describe where it is now). Exactly
 * one of a dequeue and the owner's remove of the same node succeeds (both move its next
 * from non-OFF to OFF). A failed MWCAS means a word changed since it was read, i.e.
 * another MWCAS succeeded: each loop is lock-free. Only the owner thread enqueues and
 * removes its slot's node; dequeuers take any. After a downer returns, an operation that
 * read its slot earlier may still read its node, or (soft MWCAS) briefly install a
 * descriptor in one of its words and take it out again: harmless, the node is never
 * anything but this scheme's MWCAS words, and such an MWCAS fails (the words moved on)
 * or describes the node's position at that moment. This is what a stack node could not
 * give: nobody can promise not to touch a node that others found through a link.
 * Memory order: the soft MWCAS and its read are seq_cst throughout; a debtor that reads
 * its node OFF (acquire) synchronizes with the dequeue's write of OFF - the payer's, or a
 * helper's that read the payer's descriptor from a word the payer installed it in - so
 * the payer's critical section (before its increment, before its dequeue) happens before
 * the debtor's return.
 *
 * Progress: down and up are lock-free except for down's purpose (a debtor sleeps until an
 * up pays it); neither waits for a preempted thread. Neither holds a lock, so both may be
 * called by threads of any priority without inversion; hsem_up may be called inside a
 * helping critical section (it never sleeps).
 */
#include "sched_impl.h"
#include "hsem.h"
#include <ksync/mwcas.h>
#include <ksync/errors.h>

/* ---- the per-slot nodes and the list ---------------------------------------------------- */

/* One node per thread slot: the slot's waiting thread (if it waits in a down). Both words
 * are MWCAS words (ksync_mwcas_soft / ksync_mwcas_read_soft only). Static zero: every
 * node OFF. A line each: neighbouring waiters do not share a line. */
static struct hsem_node {
	uint64_t next, prev;
} __attribute__((aligned(64))) hsem_nodes[SCHED_MAX_THREADS];

#define Q_OFF 0ull			/* node: on no list */
#define Q_NONE HSEM_Q_NONE		/* the end; == KSYNC_MWCAS_VAL(1) */
#define Q_SLOT(i) KSYNC_MWCAS_VAL((uint64_t)(i) + 2)
#define SLOT_OF(e) ((unsigned)(KSYNC_MWCAS_UNVAL(e) - 2))
_Static_assert(HSEM_Q_NONE == KSYNC_MWCAS_VAL(1), "the end's encoding");

static inline uint64_t rd(const uint64_t *w) { return ksync_mwcas_read_soft(w); }

static inline struct hsem_node *node_of(uint64_t e)
{
	unsigned i = SLOT_OF(e);
	KASSERT(e != Q_OFF && e != Q_NONE && i < SCHED_MAX_THREADS);
	return &hsem_nodes[i];
}

static int mwcas4(struct ksync_mwcas_op ops[4])
{
	/* the soft variant by name: lock-free on SMP whatever the build's KSYNC_MWCAS_IMPL
	 * (the irq variant would be correct on one CPU only) */
	int r = ksync_mwcas_soft(ops, 4);
	if (r != KSYNC_OK && r != KSYNC_EBUSY)
		panic("hsem: MWCAS failed: %d", r);
	return r;
}

static void q_enqueue(struct hsem *s, unsigned i)
{
	struct hsem_node *n = &hsem_nodes[i];
	if (rd(&n->next) != Q_OFF)
		panic("hsem: thread slot %u enters a down of '%s' with its node still queued: a "
		      "thread was killed while it waited in hsem_down", i, s->name);
	for (;;) {
		uint64_t l = rd(&s->last);
		uint64_t *lw = l == Q_NONE ? &s->first : &node_of(l)->next;
		struct ksync_mwcas_op ops[4] = {
			{ lw, Q_NONE, Q_SLOT(i) },
			{ &s->last, l, Q_SLOT(i) },
			{ &n->next, Q_OFF, Q_NONE },
			{ &n->prev, Q_OFF, l },
		};
		if (mwcas4(ops) == KSYNC_OK)
			return;
	}
}

/* The owner takes its node off: KSYNC_OK, or KSYNC_ENOENT if a dequeue took it first. */
static int q_remove(struct hsem *s, unsigned i)
{
	struct hsem_node *n = &hsem_nodes[i];
	for (;;) {
		uint64_t x = rd(&n->next);
		if (x == Q_OFF)
			return KSYNC_ENOENT;
		uint64_t p = rd(&n->prev);
		if (p == Q_OFF)
			continue;	/* dequeued between the two reads: next reads OFF now */
		struct ksync_mwcas_op ops[4] = {
			{ p == Q_NONE ? &s->first : &node_of(p)->next, Q_SLOT(i), x },
			{ x == Q_NONE ? &s->last : &node_of(x)->prev, Q_SLOT(i), p },
			{ &n->next, x, Q_OFF },
			{ &n->prev, p, Q_OFF },
		};
		if (mwcas4(ops) == KSYNC_OK)
			return KSYNC_OK;
	}
}

/* Figure 1's dequeue_first: the slot that is first on s at the MWCAS, or -1 if empty. */
static int q_dequeue_first(struct hsem *s)
{
	for (;;) {
		uint64_t f = rd(&s->first);
		if (f == Q_NONE)
			return -1;
		struct hsem_node *n = node_of(f);
		uint64_t x = rd(&n->next);
		if (x == Q_OFF)
			continue;	/* f left meanwhile: s->first has changed */
		struct ksync_mwcas_op ops[4] = {
			{ &s->first, f, x },
			{ x == Q_NONE ? &s->last : &node_of(x)->prev, f, Q_NONE },
			{ &n->next, x, Q_OFF },
			{ &n->prev, Q_NONE, Q_OFF },
		};
		if (mwcas4(ops) == KSYNC_OK)
			return (int)SLOT_OF(f);
	}
}

static inline bool q_queued(unsigned i) { return rd(&hsem_nodes[i].next) != Q_OFF; }

/* ---- the semaphore ------------------------------------------------------------------------ */

/* Tests' interference hook: set by a test before it starts its threads (release; the
 * operations' acquire load sees what the test prepared). */
static void (*_Atomic hsem_hook)(enum hsem_point, struct hsem *);

void hsem_set_test_hook(void (*fn)(enum hsem_point at, struct hsem *s))
{
	atomic_store_explicit(&hsem_hook, fn, memory_order_release);
}

static inline void hook(enum hsem_point at, struct hsem *s)
{
	void (*h)(enum hsem_point, struct hsem *) =
		atomic_load_explicit(&hsem_hook, memory_order_acquire);
	if (__builtin_expect(h != NULL, 0))
		h(at, s);
}

int hsem_init(struct hsem *s, int count, const char *name)
{
	if (!s || (count != 0 && count != 1))
		return KSYNC_EINVAL;
	/* relaxed: not shared yet; whatever publishes the semaphore orders these */
	atomic_store_explicit(&s->count, count, memory_order_relaxed);
	ksync_store_relaxed_u64(&s->first, Q_NONE);
	ksync_store_relaxed_u64(&s->last, Q_NONE);
	atomic_store_explicit(&s->passes, 0, memory_order_relaxed);
	atomic_store_explicit(&s->sleeps, 0, memory_order_relaxed);
	s->name = name ? name : "hsem";
	return KSYNC_OK;
}

/* A payer's (or passer's) half of up: dequeue the first thread and wake it. */
static void hand_over(struct hsem *s)
{
	int i = q_dequeue_first(s);
	if (i < 0)	/* impossible by the token argument at the top */
		panic("hsem '%s': a wakeup is owed but no thread is queued (count %ld)", s->name,
		      (long)atomic_load_explicit(&s->count, memory_order_relaxed));
	/* the slot's thread is in its down, or has just returned from it (a stale wakeup,
	 * harmless: see the top); the slot is type-stable either way */
	(void)sched_wakeup(&sched_threads[i], SCHED_COND_SEM);
}

int hsem_down(struct hsem *s)
{
	if (!s)
		return KSYNC_EINVAL;
	struct thread *self = thread_self();
	KASSERT(self && !self->idle && self->id < SCHED_MAX_THREADS);
	if (thread_locks_held(self))
		panic("hsem: thread '%s' downs '%s' holding %u helping lock(s): it may sleep, and "
		      "helping critical sections must not (Hohmuth & Haertig 3.3; a monitor waits "
		      "only outside every other monitor)", self->name, s->name,
		      thread_locks_held(self));
	unsigned me = self->id;
	q_enqueue(s, me);		/* Figure 1: d_q.enqueue(current()) */
	hook(HSEM_AT_ENQUEUED, s);
	/* acq_rel: release - our enqueue before the decrement, for the payer that reads it;
	 * acquire - the previous owner's section (its up's release) before ours */
	int64_t old = atomic_fetch_sub_explicit(&s->count, 1, memory_order_acq_rel);
	hook(HSEM_AT_DECREMENTED, s);
	if (old > 0) {
		/* "Own the semaphore, can safely dequeue myself" - unless an up already did */
		if (q_remove(s, me) == KSYNC_OK)
			return KSYNC_OK;
		/* dequeued for a wakeup meant for a debtor: pass the token on (the top) */
		atomic_fetch_add_explicit(&s->passes, 1, memory_order_relaxed);
		hand_over(s);
		return KSYNC_OK;
	}
	/* a debtor: sleep until a payer dequeued us ("Have been dequeued in up()"); the
	 * flag makes a wakeup between the check and the sleep count; a stale flag costs a
	 * round */
	if (q_queued(me)) {
		atomic_fetch_add_explicit(&s->sleeps, 1, memory_order_relaxed);
		do
			(void)sched_sleep(SCHED_COND_SEM);
		while (q_queued(me));
	}
	return KSYNC_OK;
}

int hsem_up(struct hsem *s)
{
	if (!s)
		return KSYNC_EINVAL;
	/* acq_rel: release - our section before the next owner's decrement (acquire) or the
	 * debtor's read of its dequeued node; acquire - the debtors' enqueues before our
	 * dequeue */
	int64_t old = atomic_fetch_add_explicit(&s->count, 1, memory_order_acq_rel);
	hook(HSEM_AT_INCREMENTED, s);
	if (old < 0)
		hand_over(s);
	return KSYNC_OK;
}

int64_t hsem_count(const struct hsem *s)
{
	return s ? atomic_load_explicit(&((struct hsem *)s)->count, memory_order_relaxed) : 0;
}

unsigned hsem_queued(const struct hsem *s)
{
	if (!s)
		return 0;
	unsigned n = 0;
	uint64_t e = rd(&s->first);
	while (e != Q_NONE && e != Q_OFF && n < SCHED_MAX_THREADS) {
		n++;
		e = rd(&node_of(e)->next);
	}
	return n;
}

uint64_t hsem_passes(const struct hsem *s)
{
	return s ? atomic_load_explicit(&((struct hsem *)s)->passes, memory_order_relaxed) : 0;
}

uint64_t hsem_sleeps(const struct hsem *s)
{
	return s ? atomic_load_explicit(&((struct hsem *)s)->sleeps, memory_order_relaxed) : 0;
}

/* ---- the monitor (Figure 2) ------------------------------------------------------------------ */

int hmon_init(struct hmon *m, const struct lock_class *cls)
{
	if (!m || !cls || cls->kind != LOCK_HELPING)
		return KSYNC_EINVAL;
	hlock_init(&m->lock, cls, NULL);
	return KSYNC_OK;
}

int hmon_enter(struct hmon *m)
{
	if (!m)
		return KSYNC_EINVAL;
	return hlock_lock(&m->lock);	/* locking with helping */
}

int hmon_leave(struct hmon *m)
{
	if (!m)
		return KSYNC_EINVAL;
	hlock_unlock(&m->lock);
	return KSYNC_OK;
}

int hmon_wait(struct hmon *m, struct hsem *cond)
{
	if (!m || !cond)
		return KSYNC_EINVAL;
	/* unlock first: the down may sleep, a helping critical section must not */
	hlock_unlock(&m->lock);
	(void)hsem_down(cond);
	return hlock_lock(&m->lock);	/* locking with helping */
}

int hmon_signal(struct hmon *m, struct hsem *cond)
{
	if (!m || !cond)
		return KSYNC_EINVAL;
	return hsem_up(cond);
}
