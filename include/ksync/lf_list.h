/*
 * lf_list.h - lock-free singly linked list of intrusive nodes: insert at the head,
 * append at the tail through a tail hint, remove the first node, remove any node (by
 * pointer or by predicate) by marking it deleted and then unlinking it, and traverse.
 *
 * Papers: Massalin & Pu 1991, "General linked lists" (insert/delete at the head by CAS;
 * at the tail with a tail pointer; delete in the middle in two steps: mark the node
 * deleted, then take it out; traversal while nodes disappear is the hard part) and the
 * cost table's "linked list insert / delete" rows; Hohmuth & Haertig 2001, section 2.1
 * (Valois's CAS-only lists; type-stable memory as the precondition).  Marking in the
 * next field as in T. Harris, "A pragmatic implementation of non-blocking linked lists",
 * DISC 2001, with M. Michael's restart rule (SPAA 2002).
 *
 *   struct item { struct lf_list_node link; int key; };
 *   static struct lf_list l = LF_LIST_INITIALIZER;
 *   lf_list_insert_head_mpmc(&l, &a->link);
 *   lf_list_insert_tail_mpmc(&l, &b->link);
 *   struct lf_list_node *n;
 *   if (lf_list_remove_if_mpmc(&l, key_is, &k, &n) == KSYNC_OK)
 *           lf_epoch_retire(rec, &lf_list_entry(n, struct item, link)->retire, free_item);
 *
 * Operations (every one may run concurrently with every other, any number of threads):
 *   lf_list_init(l)                       before sharing
 *   lf_list_insert_head_mpmc(l, n)        lock-free; one CAS on head
 *   lf_list_insert_tail_mpmc(l, n)        lock-free; one CAS on the last node's next plus
 *                                         one cmpxchg16b on the tail hint; walks from the
 *                                         hint (O(1) when it is current) or, when the
 *                                         hint's node was removed, from the head (O(n))
 *   lf_list_pop_head_mpmc(l, &n)          lock-free; removes the first live node;
 *                                         KSYNC_EEMPTY if there is none
 *   lf_list_remove_mpmc(l, n)             lock-free; removes n; KSYNC_ENOENT if another
 *                                         thread removed it first; walks from the head to
 *                                         unlink it (O(n))
 *   lf_list_remove_if_mpmc(l, f, a, &n)   lock-free; removes the first live node with
 *                                         f(node, a) != 0; KSYNC_ENOENT if none
 *   lf_list_find(l, f, a, &n)             lock-free read-only walk; first live node with
 *                                         f(node, a) != 0, else KSYNC_ENOENT
 *   lf_list_first(l), lf_list_next(n)     iteration over live nodes (NULL at the end)
 *   lf_list_count(l, &k)                  live nodes seen by one walk
 *   lf_list_linked(l, n)                  1 if n is physically reachable from the head
 *                                         (deleted or not), else 0 (tests, debugging)
 * "Live" = not marked deleted.  Linearization: insert_head and insert_tail at their
 * successful CAS; pop_head, remove and remove_if at the CAS that marks the node.  When
 * remove / remove_if / pop_head return, the node is unlinked (not reachable from the
 * head), no longer the tail hint, and can never become reachable again: the caller owns
 * it (subject to the reclamation rule).  find and remove_if see every node that stays
 * live for the whole call; nodes inserted or removed during the call may or may not be
 * seen.  Bad input: NULL list, node, predicate or result, or a node that is not 8-byte
 * aligned -> KSYNC_EINVAL, nothing changed.  Preconditions (not checked): a node is in
 * at most one list at a time; remove(n) only for an n that was inserted into l.
 *
 * Reclamation rule (the precondition of every lock-free list): a thread walking the list
 * may hold a pointer to a node that another thread is removing.
 *   - Hosted: call every operation, and use every node pointer it returns, inside
 *     lf_epoch_enter() / lf_epoch_exit() of one lf_epoch domain (include/ksync/
 *     lf_epoch.h), and hand each node that remove / remove_if / pop_head returned to
 *     lf_epoch_retire(), which frees it after two epoch advances, when no thread can
 *     still hold it.  The same grace period is needed before a removed node is inserted
 *     again.
 *   - Kernel: nodes live in type-stable memory (pools that are never returned to a
 *     general allocator), so a stale pointer always reads a list node; and a removed
 *     node is inserted again only after a grace period (every CPU that might have been
 *     walking when it was removed has left the list code).  Type-stability alone makes
 *     stale reads safe but not immediate reuse: unlinking compares addresses, so a node
 *     re-inserted while another CPU still holds its old successor would be an ABA.
 *   We chose epochs over the reference counts that Massalin & Pu (after Herlihy) and
 *   Valois use: a count costs two atomic read-modify-writes per node visited; an epoch
 *   costs one fence per walk.
 *
 * Representation.  Each node's next word holds the successor's address and three flags
 * in its low bits - pointer-bit stealing of bits 0-2, safe because a struct lf_list_node
 * is 8-byte aligned (the header rejects other addresses); the high bits are never used,
 * so 57-bit addresses and top-byte tags are fine:
 *   bit 0  DEL     the node is logically deleted; its next word never changes again
 *   bit 1  POP     (with DEL) it was deleted by pop_head, not by remove
 *   bit 2  TAILED  it was appended by insert_tail, so it may be the tail hint
 * The head word holds the first node's address and bit 0 FROZEN: a pop_head is taking
 * the first node.  The tail hint is {lo: address or 0 = unknown, hi: generation},
 * changed only by cmpxchg16b.
 *
 * The algorithms.
 *   Deletion (Harris): mark the node (CAS next: s -> s | DEL), then unlink it (CAS on
 *     the predecessor's link: node -> s).  A marked next cannot change, so nothing can
 *     be inserted after a deleted node, and a CAS on the link of a deleted predecessor
 *     fails.  Every walk that meets a marked node unlinks it (helping), and restarts
 *     from the head when a CAS fails.  remove walks from the head until it has unlinked
 *     its node or reached the end without seeing it.
 *   pop_head must remove the node that is first at its linearization point, although
 *     insert_head may put new nodes in front of it at any time.  So it freezes the head
 *     first (CAS head: x -> x | FROZEN; only possible if x is live), then marks x with
 *     DEL | POP, then unfreezes the head to x's successor.  While the head is frozen,
 *     every operation that needs the head helps to finish (mark, swing) instead of
 *     waiting, so a popper stopped half-way stops nobody.  If remove marked x first
 *     (DEL without POP), the helpers still unlink x (it is deleted) and the pop tries
 *     again on the next node.
 *   insert_tail walks from the tail hint over live nodes to the last node and CASes its
 *     next from 0 to the new node; it then swings the hint to the new node with a
 *     cmpxchg16b that expects the {hint, generation} read before the append.  Every
 *     removal of a TAILED node bumps the generation after the node is unlinked, and
 *     clears the hint if it names the node.  So the hint never names a node whose
 *     remover has returned: an append that read the generation before the removal fails
 *     its swing, and one whose swing came first has it cleared.  A walk from the hint
 *     follows only unmarked links, so it never leaves the list; if the hint is 0 or its
 *     node is deleted, the append walks from the head instead.
 *
 * Memory order: every CAS is acq_rel, every load of a link acquire: a node's contents
 * written before its insertion are visible to any thread that reaches it.  x86: the
 * CASes are locked instructions, the loads plain movs.
 *
 * Shared fields: head, tail.lo, tail.hi and every node's next are accessed only through
 * atomic.h wrappers.
 *
 * Interference injection: LF_LIST_TEST_HOOK(op, l) runs just before each CAS attempt;
 * op is the bare token insert_head, append, swing (the tail hint's cmpxchg16b), unlink,
 * mark, freeze or pop_mark, or frozen (after pop_head froze the head and before it
 * marks: a test stops the popper there and shows other operations finishing its work).
 * Empty unless defined before this header.
 * Model: spin/lf_list.pml checks deletion, pop_head, the tail hint and epoch safety over
 * every interleaving of three bounded scenarios (3 threads x 2 operations, 4 nodes).
 */
#ifndef KSYNC_LF_LIST_H
#define KSYNC_LF_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/errors.h>

#ifndef LF_LIST_TEST_HOOK
#define LF_LIST_TEST_HOOK(op, l) ((void)0)
#endif

/* Embed in the listed object (8-byte aligned).  next: atomic.h wrappers only. */
struct lf_list_node {
	uint64_t next;		/* successor address | DEL | POP | TAILED */
};

struct lf_list {
	struct ksync_u128 tail;	/* lo: hint (node address or 0), hi: generation; cmpxchg16b */
	uint64_t head;		/* first node address | FROZEN; CAS */
};

#define LF_LIST_INITIALIZER { { 0, 0 }, 0 }

/* The object containing node `n` (whose struct lf_list_node member is `member`). */
#define lf_list_entry(n, type, member)                                                 \
	((type *)(void *)((char *)(n) - offsetof(type, member)))

/* Predicate for find / remove_if: nonzero = this node. */
typedef int (*lf_list_match_fn)(const struct lf_list_node *n, void *arg);

#define LF_LIST__DEL ((uint64_t)1)
#define LF_LIST__POP ((uint64_t)2)
#define LF_LIST__TAILED ((uint64_t)4)
#define LF_LIST__FLAGS ((uint64_t)7)
#define LF_LIST__FROZEN ((uint64_t)1)

static inline struct lf_list_node *lf_list__node(uint64_t w)
{
	return (struct lf_list_node *)(uintptr_t)(w & ~LF_LIST__FLAGS);
}

static inline uint64_t lf_list__addr(const struct lf_list_node *n)
{
	return (uint64_t)(uintptr_t)n;
}

static inline bool lf_list__bad_node(const struct lf_list_node *n)
{
	return !n || ((uintptr_t)n & 7);
}

static inline int lf_list_init(struct lf_list *l)
{
	if (!l)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list");
	ksync_store_relaxed_u64(&l->tail.lo, 0);
	ksync_store_relaxed_u64(&l->tail.hi, 0);
	ksync_store_relaxed_u64(&l->head, 0);
	return KSYNC_OK;
}

/*
 * Finish the pop_head that froze the head at h = x | FROZEN: mark x DEL | POP unless it
 * is already deleted, then move the head to x's successor.  x is deleted either way -
 * by this pop (POP set) or by a remove that marked it first (POP clear; its remover's
 * walk then finds it unlinked) - so unlinking it here is right in both cases.  Any
 * thread may run this; the first one to each CAS does the work.
 */
static inline void lf_list__help_pop(struct lf_list *l, uint64_t h)
{
	struct lf_list_node *x = lf_list__node(h);
	uint64_t nx = ksync_load_acquire_u64(&x->next), des;

	while (!(nx & LF_LIST__DEL)) {
		LF_LIST_TEST_HOOK(pop_mark, l);
		/* on failure nx = current: an append may have filled it, or a remove
		 * marked it */
		if (ksync_cas_strong_acq_rel_u64(&x->next, &nx,
						 nx | LF_LIST__DEL | LF_LIST__POP)) {
			nx |= LF_LIST__DEL | LF_LIST__POP;
			break;
		}
	}
	des = nx & ~LF_LIST__FLAGS;
	/* fails only if another helper already moved the head on */
	(void)ksync_cas_strong_acq_rel_u64(&l->head, &h, des);
}

/*
 * After x (TAILED) was unlinked: bump the tail generation, clearing the hint if it is
 * x.  Lock-free.  The bump makes every swing that read the generation earlier fail.
 */
static inline void lf_list__tail_fix(struct lf_list *l, const struct lf_list_node *x)
{
	struct ksync_u128 t, d;

	/* a torn pair only fails the first cmpxchg16b, which then returns the true one */
	t.hi = ksync_load_acquire_u64(&l->tail.hi);
	t.lo = ksync_load_acquire_u64(&l->tail.lo);
	do {
		d.lo = t.lo == lf_list__addr(x) ? 0 : t.lo;
		d.hi = t.hi + 1;
	} while (!ksync_cas128(&l->tail, &t, d));
}

/*
 * Walk from the head, unlinking every deleted node met; restart from the head when an
 * unlink CAS fails or the head is frozen (after helping the pop).  Stops:
 *  - at the first live node with match(node, arg) != 0 (match may be NULL): returns it,
 *    *pp = the link that points to it, *pw = that link's value;
 *  - after this walk itself unlinked `target` (may be NULL): returns NULL, *pp = NULL;
 *  - at the end: returns NULL, *pp = the last link (head or the last live node's next),
 *    *pw = its value (address 0).
 */
static inline struct lf_list_node *lf_list__search(struct lf_list *l, lf_list_match_fn match,
						   void *arg,
						   const struct lf_list_node *target,
						   uint64_t **pp, uint64_t *pw)
{
	uint64_t *p, w, nx, des;
	struct lf_list_node *cur;

restart:
	p = &l->head;
	w = ksync_load_acquire_u64(p);
	for (;;) {
		if (p == &l->head) {
			if (w & LF_LIST__FROZEN) {
				lf_list__help_pop(l, w);
				goto restart;
			}
		} else if (w & LF_LIST__DEL) {
			goto restart;	/* the node owning p was deleted */
		}
		cur = lf_list__node(w);
		if (!cur) {
			*pp = p;
			*pw = w;
			return NULL;
		}
		nx = ksync_load_acquire_u64(&cur->next);
		if (nx & LF_LIST__DEL) {
			/* help: unlink cur, keeping the link owner's TAILED bit */
			des = (nx & ~LF_LIST__FLAGS) | (w & LF_LIST__TAILED);
			LF_LIST_TEST_HOOK(unlink, l);
			if (!ksync_cas_strong_acq_rel_u64(p, &w, des))
				goto restart;
			if (cur == target) {
				*pp = NULL;
				return NULL;
			}
			w = des;
			continue;
		}
		if (match && match(cur, arg)) {
			*pp = p;
			*pw = w;
			return cur;
		}
		p = &cur->next;
		w = nx;
	}
}

/* Insert n as the first node.  Lock-free.  Precondition: n is in no list. */
static inline int lf_list_insert_head_mpmc(struct lf_list *l, struct lf_list_node *n)
{
	uint64_t h;

	if (!l || lf_list__bad_node(n))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list, NULL or misaligned node");
	h = ksync_load_acquire_u64(&l->head);
	for (;;) {
		if (h & LF_LIST__FROZEN) {
			lf_list__help_pop(l, h);
			h = ksync_load_acquire_u64(&l->head);
			continue;
		}
		/* relaxed: n is private until the CAS (acq_rel) publishes it */
		ksync_store_relaxed_u64(&n->next, h);
		LF_LIST_TEST_HOOK(insert_head, l);
		if (ksync_cas_strong_acq_rel_u64(&l->head, &h, lf_list__addr(n)))
			return KSYNC_OK;
	}
}

/* Append n after the last node.  Lock-free.  Precondition: n is in no list. */
static inline int lf_list_insert_tail_mpmc(struct lf_list *l, struct lf_list_node *n)
{
	struct ksync_u128 t;
	struct lf_list_node *cur;
	uint64_t nx, *p, w;

	if (!l || lf_list__bad_node(n))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list, NULL or misaligned node");
	ksync_store_relaxed_u64(&n->next, LF_LIST__TAILED);	/* private until linked */
	/* The swing below must expect a generation read before n is linked (a removal
	 * of n then bumps it past this value).  The two halves may be torn: that only
	 * fails the swing. */
	t.hi = ksync_load_acquire_u64(&l->tail.hi);
	t.lo = ksync_load_acquire_u64(&l->tail.lo);
	cur = lf_list__node(t.lo);
	if (cur) {
		/* cur cannot have been freed: the hint never names a node whose remover
		 * has returned.  Follow only unmarked links: each leads to a linked node. */
		nx = ksync_load_acquire_u64(&cur->next);
		for (;;) {
			if (nx & LF_LIST__DEL)
				break;		/* the hint's node was removed: from the head */
			if (lf_list__node(nx)) {
				cur = lf_list__node(nx);
				nx = ksync_load_acquire_u64(&cur->next);
				continue;
			}
			LF_LIST_TEST_HOOK(append, l);
			if (ksync_cas_strong_acq_rel_u64(&cur->next, &nx,
							 lf_list__addr(n) | (nx & LF_LIST__TAILED)))
				goto swing;
			/* nx = current value: walk on, or give up if cur got deleted */
		}
	}
	for (;;) {
		(void)lf_list__search(l, NULL, NULL, NULL, &p, &w);
		LF_LIST_TEST_HOOK(append, l);
		/* fails if a node was appended or p's owner was deleted meanwhile */
		if (ksync_cas_strong_acq_rel_u64(p, &w, lf_list__addr(n) | (w & LF_LIST__TAILED)))
			break;
	}
swing:
	/* one attempt: if the tail moved or a removal bumped the generation, the hint
	 * stays behind (still safe), and the next append walks */
	LF_LIST_TEST_HOOK(swing, l);
	(void)ksync_cas128(&l->tail, &t, (struct ksync_u128){ lf_list__addr(n), t.hi });
	return KSYNC_OK;
}

/* Remove the first live node into *out.  Lock-free.  KSYNC_EEMPTY (*out = NULL) if the
 * list has no live node. */
static inline int lf_list_pop_head_mpmc(struct lf_list *l, struct lf_list_node **out)
{
	uint64_t h, nx;
	struct lf_list_node *x;

	if (!l || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list or result");
	for (;;) {
		h = ksync_load_acquire_u64(&l->head);
		if (h & LF_LIST__FROZEN) {
			lf_list__help_pop(l, h);
			continue;
		}
		x = lf_list__node(h);
		if (!x) {
			*out = NULL;
			return KSYNC_EEMPTY;
		}
		nx = ksync_load_acquire_u64(&x->next);
		if (nx & LF_LIST__DEL) {
			/* x was removed but is still first: unlink it and look again */
			LF_LIST_TEST_HOOK(unlink, l);
			(void)ksync_cas_strong_acq_rel_u64(&l->head, &h, nx & ~LF_LIST__FLAGS);
			continue;
		}
		LF_LIST_TEST_HOOK(freeze, l);
		if (!ksync_cas_strong_acq_rel_u64(&l->head, &h, h | LF_LIST__FROZEN))
			continue;
		LF_LIST_TEST_HOOK(frozen, l);
		lf_list__help_pop(l, h | LF_LIST__FROZEN);
		/* x's next is marked now; POP says the pop (ours: we froze it) won */
		nx = ksync_load_acquire_u64(&x->next);
		if (nx & LF_LIST__POP) {
			if (nx & LF_LIST__TAILED)
				lf_list__tail_fix(l, x);
			*out = x;
			return KSYNC_OK;
		}
	}
}

/* Remove n.  Lock-free (walks from the head to unlink it).  KSYNC_ENOENT if n was
 * already deleted by another operation.  Precondition: n was inserted into l. */
static inline int lf_list_remove_mpmc(struct lf_list *l, struct lf_list_node *n)
{
	uint64_t nx, *p, w;

	if (!l || lf_list__bad_node(n))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list, NULL or misaligned node");
	nx = ksync_load_acquire_u64(&n->next);
	for (;;) {
		if (nx & LF_LIST__DEL)
			return KSYNC_ENOENT;
		LF_LIST_TEST_HOOK(mark, l);
		if (ksync_cas_strong_acq_rel_u64(&n->next, &nx, nx | LF_LIST__DEL))
			break;
	}
	(void)lf_list__search(l, NULL, NULL, n, &p, &w);
	if (nx & LF_LIST__TAILED)
		lf_list__tail_fix(l, n);
	return KSYNC_OK;
}

/* Remove the first live node with match(node, arg) != 0 into *out.  Lock-free.
 * KSYNC_ENOENT (*out = NULL) if the walk found none. */
static inline int lf_list_remove_if_mpmc(struct lf_list *l, lf_list_match_fn match, void *arg,
					 struct lf_list_node **out)
{
	struct lf_list_node *cur;
	uint64_t *p, w, nx;
	bool claimed;

	if (!l || !match || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list, predicate or result");
	for (;;) {
		cur = lf_list__search(l, match, arg, NULL, &p, &w);
		if (!cur) {
			*out = NULL;
			return KSYNC_ENOENT;
		}
		nx = ksync_load_acquire_u64(&cur->next);
		claimed = false;
		while (!(nx & LF_LIST__DEL)) {
			LF_LIST_TEST_HOOK(mark, l);
			if (ksync_cas_strong_acq_rel_u64(&cur->next, &nx, nx | LF_LIST__DEL)) {
				claimed = true;
				break;
			}
		}
		if (!claimed)
			continue;	/* another thread deleted it first: search again */
		/* one unlink attempt through the link we found it by, else a full walk */
		LF_LIST_TEST_HOOK(unlink, l);
		if (!ksync_cas_strong_acq_rel_u64(p, &w, (nx & ~LF_LIST__FLAGS) |
							    (w & LF_LIST__TAILED)))
			(void)lf_list__search(l, NULL, NULL, cur, &p, &w);
		if (nx & LF_LIST__TAILED)
			lf_list__tail_fix(l, cur);
		*out = cur;
		return KSYNC_OK;
	}
}

/* First live node reachable from link value w, or NULL. */
static inline struct lf_list_node *lf_list__live_from(uint64_t w)
{
	struct lf_list_node *cur;
	uint64_t nx;

	while ((cur = lf_list__node(w))) {
		nx = ksync_load_acquire_u64(&cur->next);
		if (!(nx & LF_LIST__DEL))
			return cur;
		w = nx;		/* a deleted node's next still leads on (and is frozen) */
	}
	return NULL;
}

/* First live node, or NULL (also for a NULL list). */
static inline struct lf_list_node *lf_list_first(struct lf_list *l)
{
	return l ? lf_list__live_from(ksync_load_acquire_u64(&l->head)) : NULL;
}

/* Next live node after n (which may have been deleted since it was reached), or NULL. */
static inline struct lf_list_node *lf_list_next(const struct lf_list_node *n)
{
	return n ? lf_list__live_from(ksync_load_acquire_u64(&n->next)) : NULL;
}

/* First live node with match(node, arg) != 0.  Read-only walk; lock-free. */
static inline int lf_list_find(struct lf_list *l, lf_list_match_fn match, void *arg,
			       struct lf_list_node **out)
{
	struct lf_list_node *cur;

	if (!l || !match || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list, predicate or result");
	for (cur = lf_list_first(l); cur; cur = lf_list_next(cur)) {
		if (match(cur, arg)) {
			*out = cur;
			return KSYNC_OK;
		}
	}
	*out = NULL;
	return KSYNC_ENOENT;
}

/* Number of live nodes one walk saw (exact when nothing runs concurrently). */
static inline int lf_list_count(struct lf_list *l, size_t *count)
{
	size_t k = 0;

	if (!l || !count)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list or result");
	for (struct lf_list_node *cur = lf_list_first(l); cur; cur = lf_list_next(cur))
		k++;
	*count = k;
	return KSYNC_OK;
}

/* 1 if n is physically reachable from the head (deleted or not), 0 if not. */
static inline int lf_list_linked(struct lf_list *l, const struct lf_list_node *n)
{
	struct lf_list_node *cur;
	uint64_t w;

	if (!l || !n)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list or node");
	w = ksync_load_acquire_u64(&l->head);
	while ((cur = lf_list__node(w))) {
		if (cur == n)
			return 1;
		w = ksync_load_acquire_u64(&cur->next);
	}
	return 0;
}

#endif /* KSYNC_LF_LIST_H */
