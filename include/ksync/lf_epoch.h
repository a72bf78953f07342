/*
 * lf_epoch.h - epoch-based reclamation for hosted (Linux) users of the lock-free
 * objects: a node taken out of a lock-free structure is freed only after every thread
 * that might still hold a pointer to it has left its read-side section.  Hosted only
 * (lib/hosted/lf_epoch.c: records are malloc'd and free callbacks run in user threads);
 * the kernel relies on type-stable memory instead (see lf_list.h and lf_stack.h).
 *
 * Papers: Massalin & Pu 1991, "General linked lists" (nodes disappear while another
 * thread traverses them: the reason a reclamation rule is needed); Hohmuth & Haertig
 * 2001, section 2.1 (lock-free synchronization presumes type-stable memory).  Algorithm:
 * K. Fraser, "Practical lock-freedom", PhD thesis, Cambridge 2004, section 5.2.3
 * (epoch-based reclamation), as used by crossbeam-epoch.
 *
 *   static struct lf_epoch dom = LF_EPOCH_INITIALIZER;
 *   struct lf_epoch_record *me;
 *   lf_epoch_register(&dom, &me);                 // once per thread
 *   lf_epoch_enter(me);                           // read-side section
 *   ... lf_list_remove_if_mpmc(&l, f, a, &n) ...
 *   lf_epoch_retire(me, &item->retire, free_item); // freed two advances later
 *   lf_epoch_exit(me);
 *   lf_epoch_unregister(me);                      // thread exit
 *
 * The rule.  A global epoch E counts up.  A thread inside a section announces the epoch
 * it saw on entry.  E may advance from e to e + 1 only when every thread inside a
 * section announces e.  A node unlinked and then retired while E = e is freed once
 * E >= e + 2: every thread that could have reached it entered before it was unlinked,
 * announced at most e, and must have left before E could pass e + 1.  Hence: retire a
 * node only after it is unreachable from every shared pointer, and only use pointers
 * obtained inside the current section.
 *
 * Operations:
 *   lf_epoch_init(d)                  KSYNC_OK / KSYNC_EINVAL
 *   lf_epoch_register(d, &r)          a record for the calling thread (reuses a released
 *                                     one, else malloc): lock-free; KSYNC_ENOMEM
 *   lf_epoch_unregister(r)            release the record; its pending retired nodes move
 *                                     to the domain (any thread's collect frees them).
 *                                     KSYNC_EBUSY inside a section.  Lock-free
 *   lf_epoch_enter(r) / lf_epoch_exit(r)   nestable read-side section; wait-free (enter
 *                                     is one store and one full fence)
 *   lf_epoch_retire(r, e, fn)         queue fn(e) to run after two advances; every 64
 *                                     retirements it tries to advance and collects.
 *                                     Inside or outside a section.  Lock-free
 *   lf_epoch_collect(r)               try to advance once, run what is due; returns the
 *                                     number of callbacks run.  Lock-free
 *   lf_epoch_barrier(r)               outside a section: advance and collect until every
 *                                     node r retired has been freed.  Blocking (waits for
 *                                     threads that sit inside sections)
 *   lf_epoch_pending(r)               how many of r's retired nodes are still queued
 *   lf_epoch_destroy(d)               after every record is unregistered: run every
 *                                     pending callback, free the records; KSYNC_EBUSY if
 *                                     a record is still registered
 * Each record is used by one thread at a time (its owner); records are never freed
 * before lf_epoch_destroy, so stale readers of the registry stay safe.  Free callbacks
 * run on whichever thread collects, outside no lock, possibly inside that thread's
 * section; they must not call lf_epoch functions on the same record.
 * Bad input: NULL domain / record / entry / callback / result -> KSYNC_EINVAL.
 *
 * Shared fields: d->epoch (CAS to advance), d->records (push-only list, CAS),
 * d->orphans (CAS), r->state (written by the owner, read by advancers), r->in_use (CAS
 * to claim a released record).  Everything else in a record is the owner's.
 */
#ifndef KSYNC_LF_EPOCH_H
#define KSYNC_LF_EPOCH_H

#ifdef KSYNC_KERNEL
#error "lf_epoch is hosted-only: kernel users rely on type-stable memory"
#endif

#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/errors.h>

/* Embed in each retirable object (like Linux's rcu_head). */
struct lf_epoch_entry {
	struct lf_epoch_entry *next;		/* limbo chain: owner's, or orphans' */
	void (*fn)(struct lf_epoch_entry *e);	/* called once, to free the object */
	uint64_t epoch;				/* global epoch when retired */
};

struct lf_epoch_record {
	uint64_t state;		/* 0 outside a section, else (epoch << 1) | 1; owner stores,
				 * advancers load */
	uint32_t in_use;	/* 1 while a thread owns the record; CAS 0 -> 1 to claim */
	uint32_t nest;		/* owner only: section nesting depth */
	struct lf_epoch_record *next;	/* registry link, immutable once published */
	struct lf_epoch *domain;	/* immutable once published */
	/* Owner only: nodes retired and not yet freed, oldest first. */
	struct lf_epoch_entry *limbo_head, *limbo_tail;
	size_t limbo_count;
	uint32_t since_collect;
};

struct lf_epoch {
	uint64_t epoch;				/* global epoch, CAS e -> e + 1 */
	struct lf_epoch_record *records;	/* every record ever registered */
	struct lf_epoch_entry *orphans;		/* retired by unregistered records */
};

#define LF_EPOCH_INITIALIZER { 0, NULL, NULL }
#define LF_EPOCH_COLLECT_EVERY 64	/* retirements between automatic collects */

int lf_epoch_init(struct lf_epoch *d);
int lf_epoch_register(struct lf_epoch *d, struct lf_epoch_record **out);
int lf_epoch_unregister(struct lf_epoch_record *r);
int lf_epoch_retire(struct lf_epoch_record *r, struct lf_epoch_entry *e,
		    void (*fn)(struct lf_epoch_entry *e));
int lf_epoch_collect(struct lf_epoch_record *r);
int lf_epoch_barrier(struct lf_epoch_record *r);
int lf_epoch_pending(const struct lf_epoch_record *r, size_t *count);
int lf_epoch_destroy(struct lf_epoch *d);

/* Enter a read-side section (nestable).  Wait-free. */
static inline int lf_epoch_enter(struct lf_epoch_record *r)
{
	uint64_t e;

	if (!r)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record");
	if (r->nest++ == 0) {
		/* relaxed: a stale epoch only holds the next advance back */
		e = ksync_load_relaxed_u64(&r->domain->epoch);
		/* release: our earlier sections' accesses happen before any advancer
		 * that reads this announcement (which then frees what they touched) */
		ksync_store_release_u64(&r->state, (e << 1) | 1);
		/* full fence: the announcement is visible before any pointer we load
		 * next (store -> load order, the one x86 does not give for free) */
		ksync_fence_seq_cst();
	}
	return KSYNC_OK;
}

/* Leave a read-side section.  Wait-free.  KSYNC_EINVAL if not inside. */
static inline int lf_epoch_exit(struct lf_epoch_record *r)
{
	if (!r || r->nest == 0)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record or not inside a section");
	if (--r->nest == 0)
		/* release: every access of the section happens before an advancer that
		 * sees us outside */
		ksync_store_release_u64(&r->state, 0);
	return KSYNC_OK;
}

#endif /* KSYNC_LF_EPOCH_H */
