/*
 * lf_epoch.c - epoch-based reclamation (hosted only); interface and rule in
 * include/ksync/lf_epoch.h.  K. Fraser, "Practical lock-freedom", 2004, section 5.2.3.
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdlib.h>

#include <ksync/lf_epoch.h>
#include <ksync/platform.h>

int lf_epoch_init(struct lf_epoch *d)
{
	if (!d)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL domain");
	ksync_store_relaxed_u64(&d->epoch, 0);
	ksync_store_relaxed_ptr(&d->records, NULL);
	ksync_store_relaxed_ptr(&d->orphans, NULL);
	return KSYNC_OK;
}

int lf_epoch_register(struct lf_epoch *d, struct lf_epoch_record **out)
{
	struct lf_epoch_record *r, *head;
	uint32_t free_ = 0;

	if (!d || !out)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL domain or result");
	/* Reuse a released record.  acquire: the previous owner's release of in_use
	 * (after it emptied its limbo) happens before we take the record over. */
	for (r = ksync_load_acquire_ptr(&d->records); r; r = r->next) {
		free_ = 0;
		if (ksync_load_relaxed_u32(&r->in_use) == 0 &&
		    ksync_cas_strong_acq_rel_u32(&r->in_use, &free_, 1)) {
			*out = r;
			return KSYNC_OK;
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return KSYNC_ENOMEM;
	r->in_use = 1;
	r->domain = d;
	head = ksync_load_relaxed_ptr(&d->records);
	do {
		r->next = head;
		/* release: r's fields are initialized before advancers walk to it */
	} while (!ksync_cas_weak_release_ptr(&d->records, &head, r));
	*out = r;
	return KSYNC_OK;
}

/* Run and unlink every entry of the chain *headp whose epoch + 2 <= now; the chain is
 * in retirement order, so the due entries are a prefix.  Returns how many ran. */
static size_t run_due(struct lf_epoch_entry **headp, struct lf_epoch_entry **tailp,
		      uint64_t now)
{
	struct lf_epoch_entry *e = *headp, *next;
	size_t n = 0;

	while (e && e->epoch + 2 <= now) {
		next = e->next;
		e->fn(e);
		n++;
		e = next;
	}
	*headp = e;
	if (!e && tailp)
		*tailp = NULL;
	return n;
}

/* Push the chain first..last (already linked) onto d->orphans. */
static void push_orphans(struct lf_epoch *d, struct lf_epoch_entry *first,
			 struct lf_epoch_entry *last)
{
	struct lf_epoch_entry *head = ksync_load_relaxed_ptr(&d->orphans);

	do {
		last->next = head;
		/* release: the entries' contents are visible to the collector */
	} while (!ksync_cas_weak_release_ptr(&d->orphans, &head, first));
}

/* Advance the global epoch from e to e + 1 if every thread inside a section announces
 * e.  Returns the epoch after the attempt. */
static uint64_t try_advance(struct lf_epoch *d)
{
	uint64_t e, s;
	struct lf_epoch_record *r;

	e = ksync_load_acquire_u64(&d->epoch);
	/* full fence: pairs with the one in lf_epoch_enter - either we see a thread's
	 * announcement or it sees every unlink that happened before this scan */
	ksync_fence_seq_cst();
	for (r = ksync_load_acquire_ptr(&d->records); r; r = r->next) {
		/* acquire: pairs with the release stores in enter/exit, so everything a
		 * thread did in sections it has left happens before our frees */
		s = ksync_load_acquire_u64(&r->state);
		if ((s & 1) && (s >> 1) != e)
			return e;
	}
	/* acq_rel; losing means another thread advanced it (from e) */
	if (ksync_cas_strong_acq_rel_u64(&d->epoch, &e, e + 1))
		return e + 1;
	return e;
}

/* Free the orphans that are due; push the rest back. */
static size_t collect_orphans(struct lf_epoch *d, uint64_t now)
{
	struct lf_epoch_entry *chain, *last;
	size_t n;

	if (!ksync_load_relaxed_ptr(&d->orphans))
		return 0;
	/* acquire: pairs with push_orphans' release */
	chain = ksync_exchange_acq_rel_ptr(&d->orphans, NULL);
	/* Orphan chains are pushed whole and may interleave epochs: sort them out one
	 * by one instead of relying on order. */
	n = 0;
	struct lf_epoch_entry *keep = NULL, *keep_last = NULL, *e, *next;
	for (e = chain; e; e = next) {
		next = e->next;
		if (e->epoch + 2 <= now) {
			e->fn(e);
			n++;
		} else {
			e->next = keep;
			if (!keep)
				keep_last = e;
			keep = e;
		}
	}
	if (keep) {
		last = keep_last;
		push_orphans(d, keep, last);
	}
	return n;
}

int lf_epoch_collect(struct lf_epoch_record *r)
{
	uint64_t now;
	size_t n;

	if (!r)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record");
	now = try_advance(r->domain);
	n = run_due(&r->limbo_head, &r->limbo_tail, now);
	r->limbo_count -= n;
	n += collect_orphans(r->domain, now);
	r->since_collect = 0;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int lf_epoch_retire(struct lf_epoch_record *r, struct lf_epoch_entry *e,
		    void (*fn)(struct lf_epoch_entry *e))
{
	if (!r || !e || !fn)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record, entry or callback");
	e->fn = fn;
	e->next = NULL;
	/* seq_cst: ordered after the unlink that made e unreachable (the caller's CAS),
	 * so the epoch recorded is at least that of any thread that could reach e */
	e->epoch = ksync_load_seq_cst_u64(&r->domain->epoch);
	if (r->limbo_tail)
		r->limbo_tail->next = e;
	else
		r->limbo_head = e;
	r->limbo_tail = e;
	r->limbo_count++;
	if (++r->since_collect >= LF_EPOCH_COLLECT_EVERY)
		(void)lf_epoch_collect(r);
	return KSYNC_OK;
}

int lf_epoch_barrier(struct lf_epoch_record *r)
{
	if (!r)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record");
	if (r->nest)
		KSYNC_BAD_INPUT(KSYNC_EBUSY, "inside a section: would wait for itself");
	while (r->limbo_head) {
		(void)lf_epoch_collect(r);
		if (r->limbo_head)
			sched_yield();
	}
	return KSYNC_OK;
}

int lf_epoch_pending(const struct lf_epoch_record *r, size_t *count)
{
	if (!r || !count)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record or result");
	*count = r->limbo_count;
	return KSYNC_OK;
}

int lf_epoch_unregister(struct lf_epoch_record *r)
{
	if (!r)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL record");
	if (r->nest)
		KSYNC_BAD_INPUT(KSYNC_EBUSY, "inside a section");
	(void)lf_epoch_collect(r);
	if (r->limbo_head)
		push_orphans(r->domain, r->limbo_head, r->limbo_tail);
	r->limbo_head = r->limbo_tail = NULL;
	r->limbo_count = 0;
	r->since_collect = 0;
	ksync_store_relaxed_u64(&r->state, 0);
	/* release: the record's private fields are reset before a new owner claims it */
	ksync_store_release_u32(&r->in_use, 0);
	return KSYNC_OK;
}

int lf_epoch_destroy(struct lf_epoch *d)
{
	struct lf_epoch_record *r, *next;
	struct lf_epoch_entry *e, *en;

	if (!d)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "NULL domain");
	for (r = ksync_load_acquire_ptr(&d->records); r; r = r->next)
		if (ksync_load_acquire_u32(&r->in_use))
			KSYNC_BAD_INPUT(KSYNC_EBUSY, "a record is still registered");
	/* No thread is inside a section: everything retired is unreachable. */
	for (e = ksync_exchange_acq_rel_ptr(&d->orphans, NULL); e; e = en) {
		en = e->next;
		e->fn(e);
	}
	for (r = ksync_exchange_acq_rel_ptr(&d->records, NULL); r; r = next) {
		next = r->next;
		free(r);
	}
	return KSYNC_OK;
}
