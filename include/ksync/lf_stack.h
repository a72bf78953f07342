/*
 * lf_stack.h - lock-free LIFO stack (Treiber) of intrusive nodes, ABA-safe by a full
 * 64-bit removal generation stored next to the top pointer and updated together with
 * it by `lock cmpxchg16b` (ksync_cas128).  No pointer bits are stolen, so 57-bit
 * (5-level paging) addresses and hardware memory tagging (LAM / top-byte tags) are safe.
 *
 * Papers: Massalin & Pu 1991, "LIFO stacks" (push/pop by CAS, the Synthesis kernel's
 * free lists); Hohmuth & Haertig 2001, sections 2.1 and 3.2 (stacks need only CAS plus
 * type-stable memory); R. K. Treiber, IBM RJ 5118, 1986.
 *
 *   struct item { struct lf_stack_node link; int payload; };
 *   static struct lf_stack s = LF_STACK_INITIALIZER;
 *   lf_stack_push_mpmc(&s, &it->link);            // 1 if the stack was empty before
 *   struct lf_stack_node *n;
 *   if (lf_stack_pop_mpmc(&s, &n) >= 0)
 *           it = lf_stack_entry(n, struct item, link);
 *
 * Operations (all may run concurrently with all others, from any number of threads):
 *   lf_stack_init(s)                 before the stack is shared
 *   lf_stack_push_mpmc(s, n)         lock-free; returns LF_STACK_WAS_EMPTY (1) if the
 *                                    stack was empty just before n went on (the Synthesis
 *                                    "became non-empty" boundary), else 0
 *   lf_stack_pop_mpmc(s, &n)         lock-free; returns LF_STACK_NOW_EMPTY (1) if n was
 *                                    the last node ("became empty"), 0 if nodes remain,
 *                                    KSYNC_EEMPTY if the stack was empty (n = NULL)
 *   lf_stack_pop_all_mpmc(s, &n)     lock-free; detaches the whole stack: n = the former
 *                                    top, a NULL-terminated chain in LIFO order through
 *                                    ->next (walk it with lf_stack_next); KSYNC_EEMPTY if
 *                                    empty
 *   lf_stack_reverse(n)              reverses a detached chain (FIFO order); private data
 *   lf_stack_next(n)                 successor in a detached chain
 *   lf_stack_empty(s)                wait-free snapshot: 1 empty, 0 not
 *   lf_stack_push_hint_mpmc(s, &h, n), lf_stack_pop_hint_mpmc(s, &h, &n)
 *                                    the same push and pop, guided by a caller-private
 *                                    hint instead of a load of the top (below);
 *                                    lock-free
 * Bad input (NULL stack, hint, node or result pointer; a node not 8-byte aligned)
 * returns KSYNC_EINVAL and changes nothing.
 *
 * Hints (the fast path for a stack used mostly by one thread or CPU, such as a per-CPU
 * free list).  A plain push or pop first loads the top word, which the previous
 * operation's locked instruction has just written; that load waits for the locked
 * write (here: a CAS whose expected value is loaded that way costs ~28 TSC ticks
 * against ~17 with the value in a register - see bench/lf_stack_cost.c), and push+pop
 * pays it twice.  A struct lf_stack_hint is the caller's private copy of the top as its
 * last operation left it; the _hint operations use it as the CAS's expected value
 * without loading the top at all, and update it from the CAS's result.  Uncontended,
 * the guess is right and each operation is one locked instruction; a wrong guess costs
 * one failed CAS, which returns the true top, and the operation retries from it.
 * Why a guess is as safe as a load: every value a hint holds is either a state {t, g}
 * the stack really was in at some moment before the caller reads t->next (the result
 * of a CAS, or the hi-then-lo read), or a pair whose generation was already out of date
 * (after a push, {n, old generation}: if a removal had bumped the generation, the pair
 * can never be current again and the pop's cmpxchg16b fails).  The argument for pop
 * above then holds as it is.  The price: a hint keeps a node address across calls, and
 * a pop dereferences it (t->next) before the CAS can say it is stale.  The _hint
 * operations are therefore only for stacks whose nodes are never freed while the stack
 * is in use (type-stable pools: the kernel's free lists; hosted, static or pooled
 * nodes) - not for nodes reclaimed through lf_epoch.  Initialize a hint with
 * LF_STACK_HINT_INITIALIZER or lf_stack_hint_init; one hint per thread (or CPU) and
 * stack; plain and _hint operations mix freely.
 *
 * The algorithm.  top = {lo: address of the top node, hi: generation}, 16-byte aligned.
 *   push: n->next = top.lo; CAS the 8-byte top.lo from that value to n (lock cmpxchg).
 *   pop:  read top.hi then top.lo (acquire); read t->next; cmpxchg16b top from {t, g}
 *         to {t->next, g + 1}.
 *   pop_all: cmpxchg16b top from {t, g} to {NULL, g + 1}.
 * Why only removals bump the generation: the generation changes on every removal and
 * never goes back, and a push can only put on a node that is not in the stack.  So if
 * a pop's cmpxchg16b finds {t, g} again, nothing was removed since it read g, hence t
 * stayed in the stack, hence (no push can place t anywhere) nothing was pushed either:
 * the stack is unchanged and the t->next it read is still t's successor.  Reading hi
 * before lo makes a torn read harmless: if the pair read never existed, g is older than
 * the generation at the time lo was read and the cmpxchg16b must fail.  A push needs no
 * generation: its CAS succeeds only if top still holds the node that n->next names, and
 * an ABA there (t popped and pushed back) is harmless because n->next = t is then right
 * again.  A push therefore costs one `lock cmpxchg` and a pop one `lock cmpxchg16b`.
 * The 8-byte CAS and the 16-byte one meet on the same 16-byte-aligned line; x86 locked
 * operations are atomic with respect to each other whatever their width.
 * Wrap-around: 2^64 removals at one per nanosecond take 584 years; not a concern.
 *
 * Why the pop stays a cmpxchg16b (an 8-byte tagged top was weighed and refused).  An
 * 8-byte CAS would need the generation beside the pointer in one word: with 8-aligned
 * nodes and 48-bit canonical addresses that leaves 64 - 45 = 19 generation bits (10
 * with 5-level paging's 57-bit addresses, none with LAM's top-byte tags).  ABA then
 * needs only 2^19 removals while one pop sits between its read of the top and its CAS:
 * at ~10 ns per uncontended removal (hosted) that is ~5 ms, one preemption of the
 * popper - a real window, not a 584-year one; lf_istack.h keeps >= 32 bits only because
 * its indices are small.  Nor would it buy the cost bar it was weighed for (push + pop
 * within 1.5x two uncontended lock cmpxchg): hosted, AMD EPYC 2-vCPU KVM guest, 3 runs
 * each, medians: two lock cmpxchg 10.26-10.77 TSC ticks; this stack's push + pop 25.29
 * (all runs; 2.35-2.47x); a prototype with the 19-bit tagged 8-byte top, same measure.h
 * method, 17.1-18.4 (~1.7x); lock cmpxchg16b alone 9.34 against lock cmpxchg 5.48
 * (bench/prims), so the pair's two locked instructions alone are 14.8 (1.4x) before any
 * load of the top.  Concurrency Kit pays the same (ck_stack_pop_mpmc is a cmpxchg16b on
 * {head, generation}; its _upmc pop is ABA-unsafe), liburcu's lfstack pop needs a mutex
 * or an RCU grace period.  Where nodes come from one pool, lf_istack.h is the 8-byte
 * path (push + pop 15.64-15.74 in the same runs, 1.5x).
 * What any 8-byte-CAS stack can reach (issue 27; common/lf_cost_rows.h, rows
 * ref_2x_lock_cmpxchg_loaded and ref_treiber_pair_floor; hosted AMD EPYC, 5 runs,
 * medians per run): two lock cmpxchg 10.66-10.77 TSC ticks; the same two on one word,
 * each expecting a fresh load of it, 11.88; that plus the push's store of the link
 * (whose data is the top just loaded) and the pop's load of the top's link (whose
 * address is), with no generation and no checks, 15.23-15.34 (1.41-1.43x; one run
 * 12.59, and 12.5-13.8 in 3 of 8 later runs: bimodal with the machine's state): the
 * floor of any Treiber pair here, before its first ALU instruction.
 * lf_istack's push + pop is 15.84-16.15 (1.47-1.52x, median 1.48: at that floor, and at
 * the 1.5x bar within noise); its hinted pair, which loads neither top, 12.09-12.49
 * (1.12-1.17x).  The same runs: this stack 25.19-26.20 (2.34-2.46x), its hinted pair
 * 21.53-21.94.  In the peers
 * harness (bench/cmp_peers.c, push + pop through one indirect call each): see
 * docs/paper-map.md, the peers row.
 *
 * Memory (the precondition of every lock-free stack without hazard pointers): a pop
 * may read n->next of a node that another CPU has just popped.  Nodes must therefore be
 * type-stable while any pop may be running: in the kernel they come from fixed pools
 * and are never returned to a general allocator; hosted users free popped nodes through
 * lf_epoch (include/ksync/lf_epoch.h: pop inside lf_epoch_enter/exit, lf_epoch_retire
 * the node) or keep them in a pool.  Reusing (re-pushing) a popped node at once is safe:
 * that is what the generation is for.
 * A node may be in at most one stack once; pushing a node that is already in a stack
 * corrupts both (not checked: it would cost a walk).
 *
 * Memory order: a push is a release (everything the pusher wrote to the node and its
 * container before the push is visible to the CPU that pops it); a pop and pop_all are
 * acquire (and full barriers on x86, being locked instructions).
 *
 * Shared fields: top.lo / top.hi and every node's next are read and written only with
 * atomic.h wrappers (next: relaxed; a stale pop may read it while its owner rewrites it).
 *
 * Contention: a push or pop whose CAS fails backs off (include/ksync/backoff.h: 1, 2,
 * 4 .. 64 pause instructions) before it retries; bounded, so still lock-free.
 *
 * Interference injection (tests, benchmarks): LF_STACK_TEST_HOOK(op, s, exp) runs after
 * the top is read and just before each CAS attempt; op is the bare token push, pop or
 * pop_all; exp points to the value the CAS will compare with: a uint64_t (top.lo) for
 * push, a struct ksync_u128 for pop and pop_all.  Empty unless defined before this
 * header is included.  A test defines it to count attempts and to change the stack (or
 * *exp) once, forcing exactly one retry.
 */
#ifndef KSYNC_LF_STACK_H
#define KSYNC_LF_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/backoff.h>
#include <ksync/errors.h>

#ifndef LF_STACK_TEST_HOOK
#define LF_STACK_TEST_HOOK(op, s, exp) ((void)0)
#endif

/* Embed in the stacked object.  next: atomic.h wrappers only (see above). */
struct lf_stack_node {
	struct lf_stack_node *next;
};

struct lf_stack {
	/* lo: top node address (0 = empty); hi: removal generation.  lo is changed by a
	 * push's 8-byte CAS, both halves by a pop's or pop_all's cmpxchg16b. */
	struct ksync_u128 top;
};

#define LF_STACK_INITIALIZER { { 0, 0 } }

/* A caller-private guess of a stack's {top, generation} for the _hint operations.
 * Never shared: read and written with plain accesses by its one owner. */
struct lf_stack_hint {
	struct ksync_u128 seen;
};

#define LF_STACK_HINT_INITIALIZER { { 0, 0 } }

/* Non-negative results of push and pop. */
#define LF_STACK_WAS_EMPTY 1	/* push: the stack was empty before this node */
#define LF_STACK_NOW_EMPTY 1	/* pop: this node was the last one */

/* The object containing node `n` (whose struct lf_stack_node member is `member`). */
#define lf_stack_entry(n, type, member)                                                \
	((type *)(void *)((char *)(n) - offsetof(type, member)))

static inline int lf_stack_init(struct lf_stack *s)
{
	if (!s)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack");
	ksync_store_relaxed_u64(&s->top.lo, 0);
	ksync_store_relaxed_u64(&s->top.hi, 0);
	return KSYNC_OK;
}

/*
 * Push n.  Lock-free: a failed CAS means another push or pop succeeded.
 * Returns LF_STACK_WAS_EMPTY if the stack was empty just before, 0 otherwise.
 * Precondition: n is not in any stack.
 */
static inline int lf_stack_push_mpmc(struct lf_stack *s, struct lf_stack_node *n)
{
	uint64_t t;
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;

	if (!s || !n || ((uintptr_t)n & 7))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack or node, or node not 8-aligned");
	/* relaxed: a push only links to what it reads; the CAS checks it */
	t = ksync_load_relaxed_u64(&s->top.lo);
	for (;;) {
		/* relaxed: n is private until the CAS; the CAS's release publishes it */
		ksync_store_relaxed_ptr(&n->next, (void *)(uintptr_t)t);
		LF_STACK_TEST_HOOK(push, s, &t);
		/* release: n->next and the caller's writes to n's container happen before
		 * a popper's acquire reads n.  On failure t = current top. */
		if (ksync_cas_strong_release_u64(&s->top.lo, &t, (uint64_t)(uintptr_t)n))
			return t == 0 ? LF_STACK_WAS_EMPTY : 0;
		ksync_backoff(&b);	/* bounded: still lock-free */
	}
}

/*
 * Pop the top node into *out.  Lock-free: a failed cmpxchg16b means a push or pop
 * succeeded.  Returns LF_STACK_NOW_EMPTY if *out was the last node, 0 if nodes remain,
 * KSYNC_EEMPTY (and *out = NULL) if the stack was empty.
 */
static inline int lf_stack_pop_mpmc(struct lf_stack *s, struct lf_stack_node **out)
{
	struct ksync_u128 exp, des;
	struct lf_stack_node *t;
	struct ksync_backoff b = KSYNC_BACKOFF_INIT;

	if (!s || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack or result");
	/* acquire, hi before lo: a torn pair can only make the cmpxchg16b fail (see the
	 * top of the file); lo's acquire pairs with the push's release, so t->next is
	 * the value its pusher wrote. */
	exp.hi = ksync_load_acquire_u64(&s->top.hi);
	exp.lo = ksync_load_acquire_u64(&s->top.lo);
	for (;;) {
		t = (struct lf_stack_node *)(uintptr_t)exp.lo;
		if (!t) {
			*out = NULL;
			return KSYNC_EEMPTY;
		}
		/* may be stale if t was popped meanwhile: then the cmpxchg16b fails */
		des.lo = (uint64_t)(uintptr_t)ksync_load_relaxed_ptr(&t->next);
		des.hi = exp.hi + 1;
		LF_STACK_TEST_HOOK(pop, s, &exp);
		/* full barrier (acquire for us); on failure exp = current {top, gen},
		 * read atomically */
		if (ksync_cas128(&s->top, &exp, des)) {
			*out = t;
			return des.lo == 0 ? LF_STACK_NOW_EMPTY : 0;
		}
		ksync_backoff(&b);	/* bounded: still lock-free */
	}
}

/*
 * Detach every node: *out = former top, a NULL-terminated LIFO chain (walk with
 * lf_stack_next; the nodes are the caller's now).  Lock-free.  KSYNC_EEMPTY (and
 * *out = NULL) if the stack was empty.  The generation is bumped as by a pop, so a
 * node popped this way may be pushed back at once.
 */
static inline int lf_stack_pop_all_mpmc(struct lf_stack *s, struct lf_stack_node **out)
{
	struct ksync_u128 exp, des;

	if (!s || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack or result");
	exp.hi = ksync_load_acquire_u64(&s->top.hi);
	exp.lo = ksync_load_acquire_u64(&s->top.lo);
	for (;;) {
		if (exp.lo == 0) {
			*out = NULL;
			return KSYNC_EEMPTY;
		}
		des.lo = 0;
		des.hi = exp.hi + 1;
		LF_STACK_TEST_HOOK(pop_all, s, &exp);
		if (ksync_cas128(&s->top, &exp, des)) {
			*out = (struct lf_stack_node *)(uintptr_t)exp.lo;
			return KSYNC_OK;
		}
	}
}

static inline int lf_stack_hint_init(struct lf_stack_hint *h)
{
	if (!h)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL hint");
	h->seen.lo = 0;
	h->seen.hi = 0;
	return KSYNC_OK;
}

/*
 * Push n, expecting the top the hint names (no load of the top).  Lock-free.  Results
 * as lf_stack_push_mpmc.  Precondition: nodes are never freed (see Hints).
 */
static inline int lf_stack_push_hint_mpmc(struct lf_stack *s, struct lf_stack_hint *h,
					  struct lf_stack_node *n)
{
	uint64_t t;

	if (!s || !h || !n || ((uintptr_t)n & 7))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack, hint or node, or node not 8-aligned");
	t = h->seen.lo;
	for (;;) {
		ksync_store_relaxed_ptr(&n->next, (void *)(uintptr_t)t);
		LF_STACK_TEST_HOOK(push, s, &t);
		/* acq_rel: release as in push; acquire on failure, because the top it
		 * returns goes into the hint and a later pop reads that node's next */
		if (ksync_cas_strong_acq_rel_u64(&s->top.lo, &t, (uint64_t)(uintptr_t)n)) {
			/* {n, old generation}: the current state, or out of date */
			h->seen.lo = (uint64_t)(uintptr_t)n;
			return t == 0 ? LF_STACK_WAS_EMPTY : 0;
		}
		/* t = the true top: link to it and try again */
	}
}

/*
 * Pop, expecting the {top, generation} the hint names (no load of the top unless the
 * hint says empty: emptiness is always confirmed by reading the stack).  Lock-free.
 * Results as lf_stack_pop_mpmc.  Precondition: nodes are never freed (see Hints).
 */
static inline int lf_stack_pop_hint_mpmc(struct lf_stack *s, struct lf_stack_hint *h,
					 struct lf_stack_node **out)
{
	struct ksync_u128 exp, des;
	struct lf_stack_node *t;

	if (!s || !h || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack, hint or result");
	exp = h->seen;
	if (!exp.lo) {
		exp.hi = ksync_load_acquire_u64(&s->top.hi);	/* as in pop */
		exp.lo = ksync_load_acquire_u64(&s->top.lo);
	}
	for (;;) {
		t = (struct lf_stack_node *)(uintptr_t)exp.lo;
		if (!t) {
			h->seen = exp;
			*out = NULL;
			return KSYNC_EEMPTY;
		}
		des.lo = (uint64_t)(uintptr_t)ksync_load_relaxed_ptr(&t->next);
		des.hi = exp.hi + 1;
		LF_STACK_TEST_HOOK(pop, s, &exp);
		if (ksync_cas128(&s->top, &exp, des)) {
			h->seen = des;
			*out = t;
			return des.lo == 0 ? LF_STACK_NOW_EMPTY : 0;
		}
		/* exp = the true state, read atomically with a full barrier */
	}
}

/* Successor of n in a chain detached by pop_all (NULL at the end).  n must be the
 * caller's: taken from the stack and not pushed again.  relaxed: a stale popper on
 * another CPU may read the same word. */
static inline struct lf_stack_node *lf_stack_next(const struct lf_stack_node *n)
{
	return n ? (struct lf_stack_node *)ksync_load_relaxed_ptr(&n->next) : NULL;
}

/* Reverse a detached chain (LIFO -> FIFO order) and return its new first node. */
static inline struct lf_stack_node *lf_stack_reverse(struct lf_stack_node *n)
{
	struct lf_stack_node *prev = NULL, *next;

	while (n) {
		next = (struct lf_stack_node *)ksync_load_relaxed_ptr(&n->next);
		ksync_store_relaxed_ptr(&n->next, prev);
		prev = n;
		n = next;
	}
	return prev;
}

/* 1 if the stack was empty at the moment of the read, 0 if not.  Wait-free. */
static inline int lf_stack_empty(const struct lf_stack *s)
{
	if (!s)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL stack");
	return ksync_load_acquire_u64(&s->top.lo) == 0;
}

#endif /* KSYNC_LF_STACK_H */
