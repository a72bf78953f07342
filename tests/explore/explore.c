/*
 * explore.c - the deterministic interleaving explorer (see explore.h).  Hosted,
 * x86-64 Linux, test-only: included once by each explorer test (mk/lib.mk builds only
 * tests/unit/test_*.c, so it is not compiled on its own).
 *
 * Coroutines: a hand-written context switch (callee-saved registers and the stack
 * pointer; no signal mask, so no system call per switch), one 256 KiB stack per
 * thread.  ASan is told about every stack switch (__sanitizer_*_switch_fiber) and the
 * stacks are unpoisoned before each execution (an execution cut at the step bound
 * abandons frames); TSan gets one fiber per thread (__tsan_switch_to_fiber), made anew
 * for each execution.
 *
 * Search: stateless depth-first search over schedules with replay (Godefroid's
 * VeriSoft; the preemption bound is Musuvathi & Qadeer's CHESS, PLDI 2007).  A
 * scheduling point is every moment at which more than one thread can take the next
 * atomic step.  The first execution runs each thread to completion in turn (no
 * preemption); afterwards the deepest point with an untried thread whose choice keeps
 * the preemptions within the bound is switched to it, and the execution is replayed
 * from setup() up to that point.  A preemption is a switch away from a thread that
 * could have continued.
 */
#include "explore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ksync/ktest.h>

#if defined(__SANITIZE_ADDRESS__)
#define KX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KX_ASAN 1
#endif
#endif
#ifndef KX_ASAN
#define KX_ASAN 0
#endif

#if KX_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if KX_TSAN
#include <sanitizer/tsan_interface.h>
/* The trampoline and the yield are not instrumented, so a thread that ran to its end
 * leaves nothing on its fiber's shadow call stack and the fiber can be reused (making
 * one costs ~0.3 ms); a thread cut at the step bound gets a new fiber. */
#define KX_NO_TSAN __attribute__((no_sanitize_thread))
#else
#define KX_NO_TSAN
#endif

#define KX_STACK_SIZE (256 * 1024)
#define KX_MAX_POINTS 8192	/* scheduling points per execution */
#define KX_MAX_LOG 8192		/* logged steps per execution */
#define KX_MAX_NAMES 64

enum { KX_T_RUNNABLE = 1, KX_T_DONE = 2 };

struct kx_point {
	uint8_t chosen;		/* the thread run at this point */
	uint8_t enabled;	/* threads that could run (mask) */
	uint8_t done;		/* choices already explored or ruled out (mask) */
	int8_t prev;		/* the thread that ran before, -1 at the start */
	int preempt;		/* preemptions before this point */
	const char *op;		/* the chosen thread's step (replay must see the same) */
};

struct kx_step {
	int8_t tid;
	const char *op;		/* the atomic step performed ("start" for the first run) */
	const void *addr;
};

struct kx_oprec {
	int tid, op;
	uint64_t arg, result;
	int inv, resp;		/* event numbers; resp -1 while pending */
};

struct kx_thread {
	void *sp;		/* saved stack pointer while switched out */
	char *stack;
	int state;
	const char *next_op;	/* the atomic step it will take when resumed */
	const void *next_addr;
	void *asan_fake;
	void *tsan_fiber;
};

struct kx {
	const struct kx_config *cfg;
	int cur;		/* running thread, -1 on the scheduler's stack */
	void *sched_sp;
	struct kx_thread th[KX_MAX_THREADS];
	const void *main_bottom;	/* ASan: the scheduler's stack */
	size_t main_size;
	void *main_fake;
	void *main_fiber;	/* TSan */

	struct kx_point pts[KX_MAX_POINTS];
	int npts;		/* points of the last execution */
	int replay;		/* points to replay from pts[] */
	int preempt;		/* preemptions so far in this execution */
	long steps;
	bool nondet;

	uint64_t rng;		/* random mode */
	int change[8];		/* random mode: the points where this execution preempts */
	int horizon;		/* random mode: the most points seen in one execution */

	struct kx_step log[KX_MAX_LOG];
	int nlog;

	struct kx_oprec ops[KX_MAX_OPS];
	int nops, events;
	bool ops_overflow;

	struct kx_name_ent {
		const void *addr;
		const char *name;
	} names[KX_MAX_NAMES];
	int nnames;

	/* the first failing execution, kept for printing */
	struct kx_step flog[KX_MAX_LOG];
	int fnlog;
	struct kx_oprec fops[KX_MAX_OPS];
	int fnops;
	const char *freason;
	int order[KX_MAX_OPS];
};

static struct kx *kx_cur;

/* ---- context switch -------------------------------------------------------------- */

/* kx__switch(save, to): push the callee-saved registers, store rsp in *save, load rsp
 * from `to`, pop the registers saved there, return into that context. */
void kx__switch(void **save_sp, void *new_sp);
__asm__(".text\n"
	".globl kx__switch\n"
	".hidden kx__switch\n"
	".type kx__switch,@function\n"
	"kx__switch:\n"
	"\tpushq %rbp\n"
	"\tpushq %rbx\n"
	"\tpushq %r12\n"
	"\tpushq %r13\n"
	"\tpushq %r14\n"
	"\tpushq %r15\n"
	"\tmovq %rsp, (%rdi)\n"
	"\tmovq %rsi, %rsp\n"
	"\tpopq %r15\n"
	"\tpopq %r14\n"
	"\tpopq %r13\n"
	"\tpopq %r12\n"
	"\tpopq %rbx\n"
	"\tpopq %rbp\n"
	"\tret\n"
	".size kx__switch, .-kx__switch\n");

/* Leave thread t for the scheduler; returns when the scheduler resumes t. */
KX_NO_TSAN static void kx__yield(struct kx *x, int t, bool final)
{
	struct kx_thread *th = &x->th[t];

#if KX_ASAN
	__sanitizer_start_switch_fiber(final ? NULL : &th->asan_fake, x->main_bottom,
				       x->main_size);
#else
	(void)final;
#endif
#if KX_TSAN
	__tsan_switch_to_fiber(x->main_fiber, 0);
#endif
	kx__switch(&th->sp, x->sched_sp);
#if KX_ASAN
	__sanitizer_finish_switch_fiber(th->asan_fake, &x->main_bottom, &x->main_size);
#endif
}

KX_NO_TSAN static void kx__trampoline(void)
{
	struct kx *x = kx_cur;
	int t = x->cur;

#if KX_ASAN
	__sanitizer_finish_switch_fiber(NULL, &x->main_bottom, &x->main_size);
#endif
	x->cfg->thread[t](x, t, x->cfg->arg);
	x->th[t].state = KX_T_DONE;
	kx__yield(x, t, true);
	abort();	/* a finished thread is never resumed */
}

/* Run thread t until its next hook (or its end). */
static void kx__resume(struct kx *x, int t)
{
	struct kx_thread *th = &x->th[t];

	x->cur = t;
#if KX_ASAN
	__sanitizer_start_switch_fiber(&x->main_fake, th->stack, KX_STACK_SIZE);
#endif
#if KX_TSAN
	__tsan_switch_to_fiber(th->tsan_fiber, 0);
#endif
	kx__switch(&x->sched_sp, th->sp);
#if KX_ASAN
	__sanitizer_finish_switch_fiber(x->main_fake, NULL, NULL);
#endif
	x->cur = -1;
}

/* A fresh context for thread t: kx__switch pops six zero registers and returns into
 * kx__trampoline with the stack aligned as at a function entry (rsp = 8 mod 16). */
static void kx__reset_thread(struct kx *x, int t)
{
	struct kx_thread *th = &x->th[t];
	uintptr_t top = ((uintptr_t)th->stack + KX_STACK_SIZE) & ~(uintptr_t)15;
	void **ret = (void **)(top - 16);	/* 16-aligned slot of the return address */

#if KX_ASAN
	__asan_unpoison_memory_region(th->stack, KX_STACK_SIZE);
#endif
#if KX_TSAN
	if (th->tsan_fiber == NULL || th->state != KX_T_DONE) {
		if (th->tsan_fiber)
			__tsan_destroy_fiber(th->tsan_fiber);
		th->tsan_fiber = __tsan_create_fiber(0);
	}
#endif
	ret[0] = (void *)kx__trampoline;
	ret[1] = NULL;
	for (int i = 1; i <= 6; i++)
		ret[-i] = NULL;
	th->sp = ret - 6;
	th->state = KX_T_RUNNABLE;
	th->next_op = "start";
	th->next_addr = NULL;
	th->asan_fake = NULL;
}

/* ---- the hook and the recording API ---------------------------------------------- */

void kx_hook(const char *op, const void *addr)
{
	struct kx *x = kx_cur;
	int t;

	if (x == NULL || x->cur < 0)
		return;	/* setup, teardown, or not exploring: runs straight through */
	t = x->cur;
	x->th[t].next_op = op;
	x->th[t].next_addr = addr;
	kx__yield(x, t, false);
}

int kx_op_begin(struct kx *x, int op, uint64_t arg)
{
	struct kx_oprec *r;

	if (x->nops >= KX_MAX_OPS) {
		x->ops_overflow = true;
		return -1;
	}
	r = &x->ops[x->nops];
	*r = (struct kx_oprec){ x->cur, op, arg, 0, x->events++, -1 };
	return x->nops++;
}

void kx_op_end(struct kx *x, int idx, uint64_t result)
{
	if (idx < 0 || idx >= x->nops)
		return;
	x->ops[idx].result = result;
	x->ops[idx].resp = x->events++;
}

int kx_tid(const struct kx *x)
{
	return x->cur;
}

void kx_name(struct kx *x, const void *addr, const char *name)
{
	for (int i = 0; i < x->nnames; i++)
		if (x->names[i].addr == addr) {
			x->names[i].name = name;
			return;
		}
	if (x->nnames < KX_MAX_NAMES)
		x->names[x->nnames++] = (struct kx_name_ent){ addr, name };
}

/* ---- built-in specifications ----------------------------------------------------- */

struct kx_seq {
	unsigned n;
	uint64_t v[64];
};

static void kx_seq_init(void *s)
{
	memset(s, 0, sizeof(struct kx_seq));
}

static const char *kx_builtin_op_name(int op)
{
	switch (op) {
	case KX_PUSH: return "push";
	case KX_POP: return "pop";
	case KX_ENQ: return "enq";
	case KX_DEQ: return "deq";
	default: return "op";
	}
}

static bool kx_stack_apply(void *state, int op, uint64_t arg, uint64_t result)
{
	struct kx_seq *s = state;

	if (op == KX_PUSH) {
		if (result == KX_FULL)
			return true;
		if (result != KX_OK || s->n == 64)
			return false;
		s->v[s->n++] = arg;
		return true;
	}
	if (op == KX_POP) {
		if (s->n == 0)
			return result == KX_EMPTY;
		if (result != s->v[s->n - 1])
			return false;
		s->n--;
		return true;
	}
	return false;
}

static bool kx_queue_apply(void *state, int op, uint64_t arg, uint64_t result)
{
	struct kx_seq *s = state;

	if (op == KX_ENQ) {
		if (result == KX_FULL)
			return true;
		if (result != KX_OK || s->n == 64)
			return false;
		s->v[s->n++] = arg;
		return true;
	}
	if (op == KX_DEQ) {
		if (s->n == 0)
			return result == KX_EMPTY;
		if (result != s->v[0])
			return false;
		memmove(&s->v[0], &s->v[1], (s->n - 1) * sizeof(s->v[0]));
		s->n--;
		return true;
	}
	return false;
}

const struct kx_spec kx_spec_stack = { "stack", sizeof(struct kx_seq), kx_seq_init,
				       kx_stack_apply, kx_builtin_op_name };
const struct kx_spec kx_spec_queue = { "queue", sizeof(struct kx_seq), kx_seq_init,
				       kx_queue_apply, kx_builtin_op_name };

/* ---- linearizability (Wing & Gong: search for a legal sequential witness) -------- */

static bool kx__lin(struct kx *x, const void *state, uint32_t done, uint32_t all, int depth)
{
	const struct kx_spec *spec = x->cfg->spec;

	if (done == all)
		return true;
	for (int i = 0; i < x->nops; i++) {
		unsigned char next[KX_SPEC_STATE_MAX];
		bool minimal = true;

		if (done & (1u << i))
			continue;
		/* i can go next only if no other remaining op responded before i began */
		for (int j = 0; j < x->nops && minimal; j++)
			if (j != i && !(done & (1u << j)) && x->ops[j].resp < x->ops[i].inv)
				minimal = false;
		if (!minimal)
			continue;
		memcpy(next, state, spec->state_size);
		if (!spec->apply(next, x->ops[i].op, x->ops[i].arg, x->ops[i].result))
			continue;
		x->order[depth] = i;
		if (kx__lin(x, next, done | (1u << i), all, depth + 1))
			return true;
	}
	return false;
}

static const char *kx__check(struct kx *x)
{
	if (x->ops_overflow)
		return "more than KX_MAX_OPS operations recorded";
	if (x->cfg->spec) {
		unsigned char state[KX_SPEC_STATE_MAX];
		uint32_t all = x->nops == 32 ? UINT32_MAX : (1u << x->nops) - 1;

		for (int i = 0; i < x->nops; i++)
			if (x->ops[i].resp < 0)
				return "an operation did not complete";
		x->cfg->spec->init(state);
		if (!kx__lin(x, state, 0, all, 0))
			return "history not linearizable";
	}
	if (x->cfg->check && !x->cfg->check(x, x->cfg->arg))
		return "final-state check failed";
	return NULL;
}

/* ---- one execution --------------------------------------------------------------- */

static int kx__ctz(unsigned m)
{
	return __builtin_ctz(m);
}

static uint64_t kx__rand(struct kx *x)
{
	/* xorshift64* */
	x->rng ^= x->rng >> 12;
	x->rng ^= x->rng << 25;
	x->rng ^= x->rng >> 27;
	return x->rng * 0x2545F4914F6CDD1Dull;
}

/* A uniformly random member of the mask m (non-empty). */
static int kx__pick(struct kx *x, unsigned m)
{
	int k = (int)(kx__rand(x) % (uint64_t)__builtin_popcount(m));

	while (k-- > 0)
		m &= m - 1;
	return kx__ctz(m);
}

/* Random mode: the thread to run at point `pt`. */
static int kx__random_choice(struct kx *x, int pt, int prev, unsigned enabled)
{
	if (prev < 0 || !(enabled & (1u << prev)))
		return kx__pick(x, enabled);	/* free switch */
	for (int i = 0; i < x->cfg->preemption_bound && i < 8; i++)
		if (x->change[i] == pt && (enabled & ~(1u << prev)))
			return kx__pick(x, enabled & ~(1u << prev));
	return prev;
}

/* Returns true if the execution completed (every thread finished). */
static bool kx__run_one(struct kx *x)
{
	const struct kx_config *cfg = x->cfg;
	int max_steps = cfg->max_steps > 0 ? cfg->max_steps : KX_DEFAULT_STEPS;
	int npts = 0, prev = -1;

	x->nops = 0;
	x->events = 0;
	x->ops_overflow = false;
	x->nlog = 0;
	x->steps = 0;
	x->preempt = 0;
	x->nnames = 0;
	x->cur = -1;
	if (cfg->random_schedules > 0) {
		x->replay = 0;
		/* the first execution (horizon unknown) runs without preemption */
		for (int i = 0; i < 8; i++)
			x->change[i] = x->horizon ? (int)(kx__rand(x) % (uint64_t)x->horizon) : -1;
	}
	cfg->setup(x, cfg->arg);
	for (int t = 0; t < cfg->nthreads; t++)
		kx__reset_thread(x, t);

	for (;;) {
		unsigned enabled = 0;
		int t;

		for (int i = 0; i < cfg->nthreads; i++)
			if (x->th[i].state == KX_T_RUNNABLE)
				enabled |= 1u << i;
		if (enabled == 0)
			break;
		if (x->steps >= max_steps || npts >= KX_MAX_POINTS) {
			x->npts = npts;
			return false;
		}
		if ((enabled & (enabled - 1)) == 0) {
			t = kx__ctz(enabled);
		} else {
			struct kx_point *p = &x->pts[npts];

			if (npts < x->replay) {
				/* replaying: the same threads must be able to run, about to
				 * take the same steps, as when this point was first reached */
				t = p->chosen;
				if (p->op == NULL)
					p->op = x->th[t].next_op;
				if (p->enabled != enabled || p->prev != prev ||
				    p->preempt != x->preempt || p->op != x->th[t].next_op)
					x->nondet = true;
				if (!(enabled & (1u << t)))
					t = kx__ctz(enabled);
			} else if (cfg->random_schedules > 0) {
				t = kx__random_choice(x, npts, prev, enabled);
				*p = (struct kx_point){ (uint8_t)t, (uint8_t)enabled,
							(uint8_t)(1u << t), (int8_t)prev,
							x->preempt, x->th[t].next_op };
			} else {
				t = prev >= 0 && (enabled & (1u << prev)) ? prev : kx__ctz(enabled);
				*p = (struct kx_point){ (uint8_t)t, (uint8_t)enabled,
							(uint8_t)(1u << t), (int8_t)prev,
							x->preempt, x->th[t].next_op };
			}
			npts++;
		}
		if (prev >= 0 && (enabled & (1u << prev)) && t != prev)
			x->preempt++;
		if (x->nlog < KX_MAX_LOG)
			x->log[x->nlog++] = (struct kx_step){ (int8_t)t, x->th[t].next_op,
							      x->th[t].next_addr };
		kx__resume(x, t);
		x->steps++;
		prev = t;
	}
	if (npts < x->replay)
		x->nondet = true;	/* ended before the replayed prefix did */
	x->npts = npts;
	if (cfg->teardown)
		cfg->teardown(x, cfg->arg);
	return true;
}

/* Next schedule: the deepest point with an untried choice within the bound. */
static bool kx__backtrack(struct kx *x)
{
	int bound = x->cfg->preemption_bound;

	for (int d = x->npts - 1; d >= 0; d--) {
		struct kx_point *p = &x->pts[d];
		unsigned avail = p->enabled & ~p->done;

		while (avail) {
			int t = kx__ctz(avail);
			int cost = p->preempt +
				   (p->prev >= 0 && (p->enabled & (1u << p->prev)) && t != p->prev);

			avail &= avail - 1;
			p->done |= (uint8_t)(1u << t);
			if (bound < 0 || cost <= bound) {
				p->chosen = (uint8_t)t;
				p->op = NULL;	/* learnt when the replay reaches it */
				x->replay = d + 1;
				return true;
			}
		}
	}
	return false;
}

/* ---- printing -------------------------------------------------------------------- */

static void kx__addr_name(const struct kx *x, const void *addr, char *buf, size_t cap)
{
	const char *best = NULL;
	uintptr_t best_off = 0;

	if (addr == NULL) {
		snprintf(buf, cap, "-");
		return;
	}
	/* exact name, or "name+off" for an address within 256 bytes after a named one */
	for (int i = 0; i < x->nnames; i++) {
		uintptr_t a = (uintptr_t)x->names[i].addr, b = (uintptr_t)addr;

		if (b >= a && b - a < 256 && (best == NULL || b - a < best_off)) {
			best = x->names[i].name;
			best_off = b - a;
		}
	}
	if (best && best_off == 0)
		snprintf(buf, cap, "%s", best);
	else if (best)
		snprintf(buf, cap, "%s+%lu", best, (unsigned long)best_off);
	else
		snprintf(buf, cap, "%p", addr);
}

static void kx__print_failure(struct kx *x, struct ktest_ctx *kt)
{
	const struct kx_spec *spec = x->cfg->spec;
	char line[512];
	size_t len = 0;
	int run_tid = -2;

	kt_diag(kt, "%s: failing schedule (T<n>: atomic steps in order; a new line = a "
		    "switch):", x->cfg->name);
	for (int i = 0; i < x->fnlog; i++) {
		const struct kx_step *s = &x->flog[i];
		char an[96];

		/* a long (livelocked) schedule: its first and last 200 steps */
		if (x->fnlog > 400 && i == 200) {
			if (len)
				kt_diag(kt, "%s", line);
			kt_diag(kt, "  ... %d steps ...", x->fnlog - 400);
			len = 0;
			run_tid = -2;
			i = x->fnlog - 200;
			s = &x->flog[i];
		}

		if (s->tid != run_tid || len > 400) {
			if (len)
				kt_diag(kt, "%s", line);
			len = (size_t)snprintf(line, sizeof(line), "  T%d:", s->tid);
			run_tid = s->tid;
		}
		kx__addr_name(x, s->addr, an, sizeof(an));
		if (strcmp(s->op, "start") == 0)
			len += (size_t)snprintf(line + len, sizeof(line) - len, " start");
		else
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %s(%s)", s->op,
						an);
	}
	if (len)
		kt_diag(kt, "%s", line);
	if (x->fnops == 0)
		return;
	kt_diag(kt, "%s: history (T-1 = setup/teardown; [invocation, response] event "
		    "numbers):", x->cfg->name);
	for (int i = 0; i < x->fnops; i++) {
		const struct kx_oprec *o = &x->fops[i];
		const char *name = spec && spec->op_name ? spec->op_name(o->op) : "op";
		char res[32];

		if (o->result == KX_EMPTY)
			snprintf(res, sizeof(res), "EMPTY");
		else if (o->result == KX_FULL)
			snprintf(res, sizeof(res), "FULL");
		else if ((int64_t)o->result < 0 && (int64_t)o->result > -4096)
			snprintf(res, sizeof(res), "%lld", (long long)(int64_t)o->result);
		else
			snprintf(res, sizeof(res), "%llu", (unsigned long long)o->result);
		kt_diag(kt, "  T%d %s(%llu) -> %s  [%d, %d]", o->tid, name,
			(unsigned long long)o->arg, res, o->inv, o->resp);
	}
}

/* ---- the driver ------------------------------------------------------------------ */

int kx_explore(const struct kx_config *cfg, struct kx_result *res, struct ktest_ctx *kt)
{
	struct kx *x;
	struct kx_result r = { 0 };
	int rc = 0;

	if (cfg == NULL || cfg->setup == NULL || cfg->nthreads < 1 ||
	    cfg->nthreads > KX_MAX_THREADS ||
	    (cfg->spec && cfg->spec->state_size > KX_SPEC_STATE_MAX))
		return -1;
	for (int t = 0; t < cfg->nthreads; t++)
		if (cfg->thread[t] == NULL)
			return -1;
	x = calloc(1, sizeof(*x));
	if (x == NULL)
		return -1;
	x->cfg = cfg;
	x->rng = cfg->seed ? cfg->seed : 0x9E3779B97F4A7C15ull;
	x->horizon = 0;
	for (int t = 0; t < cfg->nthreads; t++) {
		x->th[t].stack = malloc(KX_STACK_SIZE);
		if (x->th[t].stack == NULL) {
			rc = -1;
			goto out;
		}
	}
#if KX_TSAN
	x->main_fiber = __tsan_get_current_fiber();
#endif
	kx_cur = x;

	for (;;) {
		bool complete = kx__run_one(x);
		const char *why = NULL;

		r.schedules++;
		if (x->npts > r.max_points)
			r.max_points = x->npts;
		if (x->steps > r.max_steps_seen)
			r.max_steps_seen = x->steps;
		if (x->nondet) {
			if (kt)
				kt_diag(kt, "%s: nondeterministic replay (setup must reset all "
					    "state) at schedule %ld", cfg->name, r.schedules);
			rc = -1;
			break;
		}
		if (!complete) {
			r.step_limit_hits++;
			if (cfg->step_limit_is_violation)
				why = "no progress: execution cut at the step bound";
		} else {
			why = kx__check(x);
		}
		if (why) {
			if (r.violations++ == 0) {
				memcpy(x->flog, x->log, sizeof(x->log[0]) * (size_t)x->nlog);
				x->fnlog = x->nlog;
				memcpy(x->fops, x->ops, sizeof(x->ops[0]) * (size_t)x->nops);
				x->fnops = x->nops;
				x->freason = why;
				r.preemptions = x->preempt;
			}
			rc = 1;
			if (!cfg->keep_going)
				break;
		}
		if (cfg->random_schedules > 0) {
			if (x->npts > x->horizon)
				x->horizon = x->npts;
			if (r.schedules >= cfg->random_schedules)
				break;
			continue;
		}
		if (!kx__backtrack(x)) {
			r.exhausted = true;
			break;
		}
		if (cfg->max_schedules > 0 && r.schedules >= cfg->max_schedules)
			break;
	}

	if (kt) {
		kt_diag(kt, "%s: %ld schedules explored (%s), preemption bound %d, up to %d "
			    "scheduling points and %ld atomic steps per execution, %ld cut at "
			    "the step bound, %ld violations",
			cfg->name, r.schedules,
			cfg->random_schedules > 0 ? "random sample"
			: r.exhausted		  ? "all within the bound"
						  : "stopped early",
			cfg->preemption_bound, r.max_points, r.max_steps_seen, r.step_limit_hits,
			r.violations);
		if (r.violations) {
			kt_diag(kt, "%s: first violation: %s (%d preemptions)", cfg->name,
				x->freason, r.preemptions);
			if (!cfg->quiet)
				kx__print_failure(x, kt);
		}
	}
out:
	kx_cur = NULL;
	for (int t = 0; t < cfg->nthreads; t++) {
#if KX_TSAN
		if (x->th[t].tsan_fiber)
			__tsan_destroy_fiber(x->th[t].tsan_fiber);
#endif
		free(x->th[t].stack);
	}
	free(x);
	if (res)
		*res = r;
	return rc;
}
