/*
 * lf_dlist.h - doubly linked ring list whose every link change is one multi-word
 * compare-and-swap (include/ksync/mwcas.h): the shape of Fiasco's ready and present
 * lists - double-linked rings with a sentinel (Fiasco's idle thread) as start and end.
 *
 * Papers: Hohmuth & Härtig 2001, §3.2 ("other global data (like double-linked lists)
 * ... implemented in a lock-free fashion, based on a software implementation of
 * MWCAS"), §4.2 (Fiasco's present, ready and sender lists, synchronized by a simulated
 * MWCAS with interrupts disabled); Massalin & Pu 1991, "General linked lists" (CAS2
 * makes a doubly linked list update atomic).
 *
 *   static struct lf_dlist ready;                  // lf_dlist_init(&ready) once
 *   struct thread { struct lf_dlist_node rq; ... };  // lf_dlist_node_init(&t->rq)
 *   lf_dlist_push_back(&ready, &t->rq);            // enqueue at the tail
 *   struct lf_dlist_node *n;
 *   if (lf_dlist_pop_front(&ready, &n) == KSYNC_OK)
 *           t = lf_dlist_entry(n, struct thread, rq);
 *   lf_dlist_remove(&ready, &t->rq);               // dequeue from anywhere
 *
 * Operations (every one may run concurrently with every other, from any number of
 * threads - the _mpmc contract, which is the only one this list has; the progress of
 * the writers is that of the MWCAS build: lock-free with KSYNC_MWCAS_IMPL=soft,
 * blocking with lock, wait-free per attempt on one CPU with irq):
 *   lf_dlist_init(l)                       before sharing: empty ring (head <-> head)
 *   lf_dlist_node_init(n)                  before first use: n is off every list
 *   lf_dlist_insert_after(l, pos, n)       n goes right after pos (pos may be &l->head)
 *   lf_dlist_insert_before(l, pos, n)      n goes right before pos
 *   lf_dlist_push_front(l, n) / push_back  after / before the head
 *   lf_dlist_remove(l, n)                  takes n out wherever it is
 *   lf_dlist_pop_front(l, &n)              removes and returns the first node
 *   lf_dlist_first/last/next/prev          traversal (lock-free reads, see below)
 *   lf_dlist_empty(l), lf_dlist_on_list(n)
 * Writers: lock-free retry loops (read the links, one 4-word MWCAS, retry if a link
 * changed meanwhile).  Returns: KSYNC_OK; KSYNC_ENOENT (remove: n is not on a list;
 * insert: pos is not on a list); KSYNC_EBUSY (insert: n is already on a list);
 * KSYNC_EEMPTY (pop_front: empty); KSYNC_EINVAL (NULL list or node, a node not 8-byte
 * aligned, n == pos, or the head where a member node is required); KSYNC_ENOMEM from
 * the soft MWCAS if the thread can get no descriptor slot.  Bad input changes nothing.
 *
 * The algorithm.  A node's next and prev are MWCAS words holding node addresses; an
 * off-list node has next == prev == 0 (so "on a list" is part of the state that every
 * MWCAS compares).  Invariant: for every node a on the ring, a->next->prev == a.
 *   insert n after pos:  x = pos->next;  MWCAS { pos->next: x -> n, x->prev: pos -> n,
 *                                                n->next: 0 -> x,   n->prev: 0 -> pos }
 *   remove n:            p = n->prev, x = n->next;
 *                        MWCAS { p->next: n -> x, x->prev: n -> p,
 *                                n->next: x -> 0, n->prev: p -> 0 }
 * Each MWCAS compares every link it changes, including the moved node's own (so a
 * concurrent removal of a neighbour, which changes n->prev or n->next, makes it fail),
 * and keeps the invariant in one atomic step; a failed MWCAS means some other MWCAS on
 * one of these words succeeded, so the retry loop is lock-free when the MWCAS is.
 * ABA is harmless: an MWCAS that finds all four words as read describes the current
 * neighbourhood exactly.
 *
 * Readers: lf_dlist_next etc. read one link with ksync_mwcas_read.  A traversal is not
 * a snapshot: it sees each link as it is when read, may miss nodes inserted behind it,
 * and ends early (NULL) if the node it stands on is removed.  Every node it returns was
 * on the list when its link was read.
 *
 * Memory: nodes must stay type-stable (not freed or reused for other data) while any
 * operation or traversal may still touch them - a remover reads its neighbours' links,
 * a traverser a removed node's next.  Kernel: nodes live in thread descriptors and
 * fixed pools; hosted: free through epoch-based reclamation or keep a pool.
 * Node addresses are MWCAS values, so they must be even (any 8-byte-aligned node is).
 *
 * Shared fields: next and prev of every node and of the head, changed only by
 * LF_DLIST_MWCAS and read only by LF_DLIST_READ (see below); never plain accesses
 * once the node or list is shared.
 *
 * Choosing the MWCAS: LF_DLIST_MWCAS(ops, n) and LF_DLIST_READ(addr) default to
 * ksync_mwcas/ksync_mwcas_read, i.e. the build's KSYNC_MWCAS_IMPL (soft, irq or lock);
 * a translation unit may define both before including this header (tests use this to
 * run one binary over several implementations; the explorer to give each coroutine its
 * own descriptor slot).  All users of one list must use the same implementation.
 *
 * Interference injection: LF_DLIST_TEST_HOOK(op, l, n) runs after the links are read
 * and just before each MWCAS attempt (op: the bare token insert or remove).  Empty
 * unless defined before this header is included.
 */
#ifndef KSYNC_LF_DLIST_H
#define KSYNC_LF_DLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/errors.h>
#include <ksync/mwcas.h>

#ifndef LF_DLIST_MWCAS
#define LF_DLIST_MWCAS(ops, n) ksync_mwcas((ops), (n))
#endif
#ifndef LF_DLIST_READ
#define LF_DLIST_READ(addr) ksync_mwcas_read(addr)
#endif
#ifndef LF_DLIST_TEST_HOOK
#define LF_DLIST_TEST_HOOK(op, l, n) ((void)0)
#endif

struct lf_dlist_node {
	uint64_t next;	/* MWCAS word: address of the next node; 0 = off every list */
	uint64_t prev;	/* MWCAS word: address of the previous node; 0 = off every list */
};

struct lf_dlist {
	struct lf_dlist_node head;	/* the sentinel: start and end of the ring */
};

/* The object containing node `n` (whose struct lf_dlist_node member is `member`). */
#define lf_dlist_entry(n, type, member)                                                \
	((type *)(void *)((char *)(n) - offsetof(type, member)))

static inline uint64_t lf_dlist__u(const struct lf_dlist_node *n)
{
	return (uint64_t)(uintptr_t)n;
}

static inline struct lf_dlist_node *lf_dlist__p(uint64_t v)
{
	return (struct lf_dlist_node *)(uintptr_t)v;
}

static inline bool lf_dlist__bad(const struct lf_dlist_node *n)
{
	return n == NULL || ((uintptr_t)n & 7) != 0;
}

/* Before the list is shared.  Wait-free. */
static inline int lf_dlist_init(struct lf_dlist *l)
{
	if (l == NULL || lf_dlist__bad(&l->head))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL or misaligned list");
	/* relaxed: the list is not shared yet; whatever publishes it orders these */
	ksync_store_relaxed_u64(&l->head.next, lf_dlist__u(&l->head));
	ksync_store_relaxed_u64(&l->head.prev, lf_dlist__u(&l->head));
	return KSYNC_OK;
}

/* Before a node's first use (it is then off every list).  Wait-free. */
static inline int lf_dlist_node_init(struct lf_dlist_node *n)
{
	if (lf_dlist__bad(n))
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL or misaligned node");
	/* relaxed: the node is private until an insert publishes it */
	ksync_store_relaxed_u64(&n->next, 0);
	ksync_store_relaxed_u64(&n->prev, 0);
	return KSYNC_OK;
}

/* True if n is on a list (as of the read).  Progress: that of LF_DLIST_READ. */
static inline bool lf_dlist_on_list(const struct lf_dlist_node *n)
{
	return LF_DLIST_READ(&n->next) != 0;
}

/*
 * Insert n right after pos.  pos: &l->head or a node on l.  Precondition: n is not on
 * any list (else KSYNC_EBUSY), n != pos.  Lock-free (soft MWCAS).
 */
static inline int lf_dlist_insert_after(struct lf_dlist *l, struct lf_dlist_node *pos,
					struct lf_dlist_node *n)
{
	if (l == NULL || lf_dlist__bad(pos) || lf_dlist__bad(n) || n == pos || n == &l->head)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL/misaligned list or node, n == pos or head");
	for (;;) {
		uint64_t x = LF_DLIST_READ(&pos->next);
		struct lf_dlist_node *xn = lf_dlist__p(x);
		int r;

		if (x == 0)
			return KSYNC_ENOENT;	/* pos is off the list */
		if (LF_DLIST_READ(&n->next) != 0)
			return KSYNC_EBUSY;	/* n is on a list */
		LF_DLIST_TEST_HOOK(insert, l, n);
		{
			struct ksync_mwcas_op ops[4] = {
				{ &pos->next, x, lf_dlist__u(n) },
				{ &xn->prev, lf_dlist__u(pos), lf_dlist__u(n) },
				{ &n->next, 0, x },
				{ &n->prev, 0, lf_dlist__u(pos) },
			};

			r = LF_DLIST_MWCAS(ops, 4);
		}
		if (r != KSYNC_EBUSY)
			return r;	/* KSYNC_OK, or the MWCAS's own error */
	}
}

/*
 * Insert n right before pos (pos == &l->head: at the tail).  As insert_after.
 * Lock-free (soft MWCAS).
 */
static inline int lf_dlist_insert_before(struct lf_dlist *l, struct lf_dlist_node *pos,
					 struct lf_dlist_node *n)
{
	if (l == NULL || lf_dlist__bad(pos) || lf_dlist__bad(n) || n == pos || n == &l->head)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL/misaligned list or node, n == pos or head");
	for (;;) {
		uint64_t p = LF_DLIST_READ(&pos->prev);
		struct lf_dlist_node *pn = lf_dlist__p(p);
		int r;

		if (p == 0)
			return KSYNC_ENOENT;
		if (LF_DLIST_READ(&n->next) != 0)
			return KSYNC_EBUSY;
		LF_DLIST_TEST_HOOK(insert, l, n);
		{
			struct ksync_mwcas_op ops[4] = {
				{ &pn->next, lf_dlist__u(pos), lf_dlist__u(n) },
				{ &pos->prev, p, lf_dlist__u(n) },
				{ &n->next, 0, lf_dlist__u(pos) },
				{ &n->prev, 0, p },
			};

			r = LF_DLIST_MWCAS(ops, 4);
		}
		if (r != KSYNC_EBUSY)
			return r;
	}
}

static inline int lf_dlist_push_front(struct lf_dlist *l, struct lf_dlist_node *n)
{
	if (l == NULL)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list");
	return lf_dlist_insert_after(l, &l->head, n);
}

static inline int lf_dlist_push_back(struct lf_dlist *l, struct lf_dlist_node *n)
{
	if (l == NULL)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list");
	return lf_dlist_insert_before(l, &l->head, n);
}

/*
 * Take n off the list.  KSYNC_ENOENT if n is not on a list (e.g. another thread removed
 * it first: exactly one of several concurrent removers of n gets KSYNC_OK).  n must not
 * be the head.  Lock-free (soft MWCAS).
 */
static inline int lf_dlist_remove(struct lf_dlist *l, struct lf_dlist_node *n)
{
	if (l == NULL || lf_dlist__bad(n) || n == &l->head)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL/misaligned list or node, or the head");
	for (;;) {
		uint64_t x = LF_DLIST_READ(&n->next), p;
		int r;

		if (x == 0)
			return KSYNC_ENOENT;
		p = LF_DLIST_READ(&n->prev);
		if (p == 0)
			continue;	/* removed between the two reads: next reads 0 */
		LF_DLIST_TEST_HOOK(remove, l, n);
		{
			struct ksync_mwcas_op ops[4] = {
				{ &lf_dlist__p(p)->next, lf_dlist__u(n), x },
				{ &lf_dlist__p(x)->prev, lf_dlist__u(n), p },
				{ &n->next, x, 0 },
				{ &n->prev, p, 0 },
			};

			r = LF_DLIST_MWCAS(ops, 4);
		}
		if (r != KSYNC_EBUSY)
			return r;
	}
}

/* Remove the first node into *out; KSYNC_EEMPTY (and *out = NULL) if the list is
 * empty.  Lock-free (soft MWCAS). */
static inline int lf_dlist_pop_front(struct lf_dlist *l, struct lf_dlist_node **out)
{
	if (l == NULL || out == NULL)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL list or result");
	for (;;) {
		struct lf_dlist_node *n = lf_dlist__p(LF_DLIST_READ(&l->head.next));
		int r;

		if (n == &l->head) {
			*out = NULL;
			return KSYNC_EEMPTY;
		}
		r = lf_dlist_remove(l, n);
		if (r == KSYNC_OK) {
			*out = n;
			return KSYNC_OK;
		}
		if (r != KSYNC_ENOENT)
			return r;	/* an MWCAS error */
		/* someone else took n first: look again */
	}
}

/* True if the list was empty when read.  Progress: that of LF_DLIST_READ. */
static inline bool lf_dlist_empty(struct lf_dlist *l)
{
	return LF_DLIST_READ(&l->head.next) == lf_dlist__u(&l->head);
}

/* Traversal (see "Readers" at the top): NULL at the end of the ring or if n has been
 * removed.  Progress: that of LF_DLIST_READ. */
static inline struct lf_dlist_node *lf_dlist_next(struct lf_dlist *l,
						   struct lf_dlist_node *n)
{
	uint64_t x = LF_DLIST_READ(&n->next);

	return x == 0 || x == lf_dlist__u(&l->head) ? NULL : lf_dlist__p(x);
}

static inline struct lf_dlist_node *lf_dlist_prev(struct lf_dlist *l,
						   struct lf_dlist_node *n)
{
	uint64_t p = LF_DLIST_READ(&n->prev);

	return p == 0 || p == lf_dlist__u(&l->head) ? NULL : lf_dlist__p(p);
}

static inline struct lf_dlist_node *lf_dlist_first(struct lf_dlist *l)
{
	return lf_dlist_next(l, &l->head);
}

static inline struct lf_dlist_node *lf_dlist_last(struct lf_dlist *l)
{
	return lf_dlist_prev(l, &l->head);
}

#endif /* KSYNC_LF_DLIST_H */
