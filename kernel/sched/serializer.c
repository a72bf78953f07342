/*
 * serializer.c - the single-server serializer (serializer.h; Massalin & Pu 1991, Hohmuth
 * & Haertig 2001 section 4.4). The server sleeps on SCHED_COND_REQ (Fig. 3 flags: a
 * request sent between its last empty check and its sleep sets the flag, so the sleep
 * returns at once - no lost request); a waiting client sleeps on SCHED_COND_REPLY until
 * its request's `done` is set. A server whose last request came from a donating client
 * (SER_DONATE) sleeps straight back to that client (sched_sleep_to), as Fiasco's switch
 * hint hands the CPU back to the locker: one dispatcher walk fewer per request (issue 27
 * item 2: the request cost 2.6x a context switch on AMD EPYC, hosted).
 */
#include "serializer.h"
#include "mm.h"
#include <ksync/errors.h>

static struct ser_req *take(struct serializer *s)
{
	if (s->kind == SER_QUEUE) {
		struct ser_req *r;	/* SER_STACK and SER_DONATE: the stack below */
		return lf_fifo_dequeue_mpsc(&s->q, &r) == KSYNC_OK ? r : NULL;
	}
	struct lf_stack_node *n;
	return lf_stack_pop_mpmc(&s->st, &n) >= 0 ? lf_stack_entry(n, struct ser_req, link) : NULL;
}

/* Runs r; returns its client if it lent the server its CPU (SER_DONATE), else NULL. */
static struct thread *serve(struct serializer *s, struct ser_req *r)
{
	r->result = r->op(s->obj, r->arg);
	struct thread *c = r->client;
	bool wait = r->wait, donated = r->donated;
	/* the server alone writes `served`: a load and a store, no locked instruction */
	atomic_store_explicit(&s->served, atomic_load_explicit(&s->served, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	/* release: the result before `done`; after this store r may be gone (the client
	 * returns), so read what we need first */
	__atomic_store_n((int *)&r->done, 1, __ATOMIC_RELEASE);
	if (wait)
		sched_wakeup(c, SCHED_COND_REPLY);
	return donated ? c : NULL;
}

static void server_main(void *arg)
{
	struct serializer *s = arg;
	/* the client whose lent CPU served the last request: the sleep goes back to it
	 * directly (sched_sleep_to) instead of through the scheduler's walk of the queues -
	 * section 4.3's switch hint to the locker, here to the donor */
	struct thread *back = NULL;
	for (;;) {
		struct ser_req *r = take(s);
		if (r) {
			back = serve(s, r);
			continue;
		}
		/* acquire: a stop is seen after every request sent before it was taken */
		if (atomic_load_explicit(&s->stopping, memory_order_seq_cst) &&
		    atomic_load_explicit(&s->served, memory_order_relaxed) ==
			    atomic_load_explicit(&s->sent, memory_order_seq_cst))
			return;
		sched_sleep_to(SCHED_COND_REQ, back);
		back = NULL;
	}
}

int ser_init(struct serializer *s, enum ser_kind kind, void *obj, unsigned level, const char *name)
{
	return ser_init_affine(s, kind, obj, level, SCHED_AFFINITY_ANY, name);
}

int ser_init_affine(struct serializer *s, enum ser_kind kind, void *obj, unsigned level,
		    uint64_t affinity, const char *name)
{
	if (!s || (kind != SER_QUEUE && kind != SER_STACK && kind != SER_DONATE))
		return KSYNC_EINVAL;
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->obj = obj;
	if (kind == SER_QUEUE) {
		size_t n = lf_fifo_storage_size_mpsc(SER_QUEUE_CAP, sizeof(struct ser_req *));
		s->qmem = kmalloc(n);
		if (!s->qmem)
			return KSYNC_ENOMEM;
		int rc = lf_fifo_init_mpsc(&s->q, s->qmem, n, SER_QUEUE_CAP, sizeof(struct ser_req *), NULL);
		if (rc != KSYNC_OK) {
			kfree(s->qmem);
			return rc;
		}
	} else {
		lf_stack_init(&s->st);
	}
	int rc = thread_create(&s->server, server_main, s, level, affinity, name, 0);
	if (rc != KSYNC_OK && s->qmem)
		kfree(s->qmem);
	return rc;
}

int ser_call(struct serializer *s, struct ser_req *r, long (*op)(void *, void *), void *arg, bool wait)
{
	if (!s || !r || !op)
		return KSYNC_EINVAL;
	/* Dekker with ser_destroy/server_main: count the request, then look for a stop
	 * (seq_cst both); the server looks at the stop, then at the count */
	atomic_fetch_add_explicit(&s->sent, 1, memory_order_seq_cst);
	if (atomic_load_explicit(&s->stopping, memory_order_seq_cst)) {
		atomic_fetch_sub_explicit(&s->sent, 1, memory_order_seq_cst);
		sched_wakeup(s->server, SCHED_COND_REQ);	/* it may wait for this count */
		return KSYNC_EBUSY;
	}
	bool donate = s->kind == SER_DONATE && wait;
	r->op = op;
	r->arg = arg;
	r->client = thread_self();
	r->wait = wait && !donate;	/* a donating client is not woken: it never sleeps */
	r->donated = donate;
	r->result = 0;
	__atomic_store_n((int *)&r->done, 0, __ATOMIC_RELAXED);
	if (s->kind == SER_QUEUE) {
		while (lf_fifo_enqueue_mpsc(&s->q, &r) == KSYNC_EFULL)
			thread_yield();	/* the server drains it */
	} else {
		lf_stack_push_mpmc(&s->st, &r->link);	/* SER_STACK, SER_DONATE */
	}
	/* a donating client whose server sleeps wakes it onto this CPU in one step (no
	 * queue insert now, no unlink at its next sleep); else the wakeup as always */
	if (!donate || sched_wake_help(s->server, SCHED_COND_REQ) != SCHED_HELP_RAN)
		sched_wakeup(s->server, SCHED_COND_REQ);
	if (donate) {
		/* section 4.4: lend the server our CPU (and priority) until it is done; when
		 * it sleeps again (its stack empty) the scheduler comes back to us */
		while (!ser_done(r))
			if (sched_help(s->server) != SCHED_HELP_RAN)
				arch_cpu_relax();	/* it runs elsewhere: done soon */
	} else if (wait) {
		while (!ser_done(r))
			sched_sleep(SCHED_COND_REPLY);
	}
	return KSYNC_OK;
}

int ser_destroy(struct serializer *s)
{
	if (!s || !s->server)
		return KSYNC_EINVAL;
	atomic_store_explicit(&s->stopping, true, memory_order_seq_cst);
	sched_wakeup(s->server, SCHED_COND_REQ);
	int rc = thread_join(s->server);
	s->server = NULL;
	if (s->qmem)
		kfree(s->qmem);
	s->qmem = NULL;
	return rc;
}
