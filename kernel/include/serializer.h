/*
 * serializer.h - the single-server serializer (issue 10 item 6): the operations on one
 * object are sent as requests through a lock-free structure to one server thread, which
 * executes them one at a time; so the object itself needs no synchronization.
 *
 * Papers: Massalin & Pu 1991 (the "single server" approach to shared objects: requests
 * queued to the one thread that owns the object), Hohmuth & Haertig 2001 section 4.4
 * (single-server synchronization; Fiasco's variant kept the requests on a stack so
 * the most recent, possibly most urgent, request is served first).
 *
 *   SER_QUEUE  requests in a lock-free MPSC FIFO (lf_fifo_mpsc): served in the order
 *              their enqueues linearized.
 *   SER_STACK  requests on a lock-free stack (lf_stack): the newest first.
 *   SER_DONATE Hohmuth & Haertig section 4.4 revisited: the request stack, and a client
 *              that waits does not sleep: it donates its CPU to the server (sched_help:
 *              the server runs on the client's time and priority) until its request is
 *              done - the design Fiasco had before helping locks ("helping an owner was
 *              as simple as repeatedly switching to the owner until ... the owner had
 *              completed the request"). One context switch to the server and one back
 *              per request on one CPU.
 * ser_call(s, r, op, arg, wait): r is the caller's request record (it must live until
 * the request is done: on the caller's stack when wait is true; for wait == false the
 * caller keeps it until ser_done(r)). op(obj, arg) runs on the server thread. wait: the
 * caller sleeps (Fig. 3 flag SCHED_COND_REPLY) until op returned, and gets its result.
 * Errors: KSYNC_EINVAL (NULL, a request still in flight), KSYNC_EBUSY (stopping).
 * Blocking for the caller that waits; lock-free for the sending itself (a full queue
 * makes the sender yield and retry).
 */
#ifndef KSYNC_SERIALIZER_H
#define KSYNC_SERIALIZER_H

#include "thread.h"
#include <ksync/lf_stack.h>
#include <ksync/lf_fifo_mpsc.h>
#include <stdatomic.h>

enum ser_kind { SER_QUEUE, SER_STACK, SER_DONATE };
#define SER_QUEUE_CAP 256

struct ser_req {
	struct lf_stack_node link;	/* SER_STACK */
	long (*op)(void *obj, void *arg);
	void *arg;
	struct thread *client;		/* woken when done if it waits */
	bool wait;
	bool donated;			/* SER_DONATE: the client lent its CPU (sched_help) */
	long result;			/* written by the server before `done` */
	_Atomic int done;		/* 0 in flight, 1 done: release by the server */
};

struct serializer {
	enum ser_kind kind;
	void *obj;
	struct thread *server;
	struct lf_fifo_mpsc q;		/* SER_QUEUE */
	void *qmem;
	struct lf_stack st;		/* SER_STACK */
	_Atomic bool stopping;		/* set by ser_destroy (release) */
	_Atomic uint64_t sent, served;	/* requests, relaxed counters */
};

int ser_init(struct serializer *s, enum ser_kind kind, void *obj, unsigned level, const char *name);
/* The same with the server's affinity (a CPU mask): a cost measured on one CPU. */
int ser_init_affine(struct serializer *s, enum ser_kind kind, void *obj, unsigned level,
		    uint64_t affinity, const char *name);
int ser_call(struct serializer *s, struct ser_req *r, long (*op)(void *obj, void *arg), void *arg,
	     bool wait);
static inline bool ser_done(const struct ser_req *r)
{
	return __atomic_load_n((const int *)&r->done, __ATOMIC_ACQUIRE) != 0;
}
/* Serves what was sent, stops the server and joins it. */
int ser_destroy(struct serializer *s);

#endif
