/*
 * lf_cost_rows.h - the rows of the Massalin & Pu cost table ("Lock-free synchronization
 * overhead": each operation with no synchronization, lock-free without interference, and
 * lock-free when interference forces exactly one retry), shared by the hosted
 * bench/lf_stack_cost.c and the kernel's lf_cost experiment (kernel/exp/lf_cost.c), so
 * both sides measure exactly the same code. Freestanding: ksync headers only.
 *
 * How a retry is forced without a second CPU: the objects' test hooks (defined below,
 * before the headers) run between the read and the CAS.  When `force` is set, the hook
 * spoils the value the CAS expects (the expected top / generation / word, by one plain
 * store), so the CAS fails exactly as if another CPU had changed the word, returns the
 * current value, and the operation goes round its loop once more.  The cost measured
 * is therefore the retry path itself (failed locked CAS + recompute + second CAS),
 * without the interfering CPU's own work - the quantity of Massalin & Pu's "opt retry"
 * column.  In the lf rows `force` stays 0: the hooks cost one load and a predicted
 * branch, included in those rows.
 *
 * The same operations under a lock (the Massalin & Pu claim is that lock-free costs less
 * than locking): the includer may define LF_COST_LOCKS() as a list of
 * LF_COST_LOCKED_ROWS(tag, what, LOCK, UNLOCK) - the kernel its master lock, the hosted
 * bench a spin lock and a pthread mutex.  Each prints mp_<op>_<tag> rows: the nosync
 * operation with LOCK before and UNLOCK after it (a push + pop pair takes the lock
 * twice, as the lock-free pair does two CAS), measured by the same ROW in the same
 * function as the nosync and lf rows of that operation.
 *
 * Include once per program, before any other ksync object header (the hooks must be
 * defined first); call lf_cost_rows() to print one KSYNC prim line per row and the
 * ratio diagnostics.
 */
#ifndef KSYNC_BENCH_LF_COST_ROWS_H
#define KSYNC_BENCH_LF_COST_ROWS_H

#include <ksync/atomic.h>

static int force;	/* 1: the next CAS attempt of the measured operation must fail */

#define LF_STACK_TEST_HOOK(op, s, exp)                                                 \
	do {                                                                           \
		if (__builtin_expect(force, 0)) {                                      \
			force = 0;                                                     \
			if (#op[1] == 'u') /* push: expected top */                    \
				*(uint64_t *)(void *)(exp) ^= 8;                       \
			else /* pop, pop_all: expected generation */                   \
				((struct ksync_u128 *)(void *)(exp))->hi ^= 1;         \
		}                                                                      \
	} while (0)
#define LF_ISTACK_TEST_HOOK(op, s, exp)                                                \
	do {                                                                           \
		if (__builtin_expect(force, 0)) {                                      \
			force = 0;                                                     \
			*(exp) ^= (uint64_t)1 << 63; /* generation's top bit */        \
		}                                                                      \
	} while (0)
/* The array stack: spoil the expected head's generation (its top bit); the slot
 * completions (op finish) are left alone. */
#define LF_ASTACK_TEST_HOOK(op, s, exp)                                                \
	do {                                                                           \
		if (__builtin_expect(force, 0) && #op[0] != 'f') {                     \
			force = 0;                                                     \
			(exp)->hi ^= (uint64_t)1 << 63;                                \
		}                                                                      \
	} while (0)
/* The counter hook sees only the word: the "other CPU" adds 1 with a plain store. */
#define LF_COUNTER_TEST_HOOK(op, word)                                                 \
	do {                                                                           \
		if (__builtin_expect(force, 0)) {                                      \
			force = 0;                                                     \
			ksync_store_relaxed_u64((word), ksync_load_relaxed_u64(word) + 1); \
		}                                                                      \
	} while (0)

#include <ksync/counter.h>
#include <ksync/lf_astack.h>
#include <ksync/lf_istack.h>
#include <ksync/lf_list.h>
#include <ksync/lf_stack.h>
#include <ksync/measure.h>
#include <ksync/optimistic.h>
#include <ksync/platform.h>
#include <stddef.h>

#define BATCHES KSYNC_PRIM_BATCHES
#define OPS KSYNC_PRIM_OPS_PER_BATCH

static uint64_t batch_ticks[BATCHES], empty_ticks[BATCHES];

/* Objects, each on its own cache lines. */
static struct {
	_Alignas(64) struct lf_stack stack;
	_Alignas(64) struct lf_istack istack;
	_Alignas(64) struct lf_list list;
	_Alignas(64) struct lf_counter counter;
	_Alignas(64) uint64_t plain_counter;
	_Alignas(64) struct lf_stack_node *plain_top;
	_Alignas(64) uint64_t cmpxchg_word[2];
	_Alignas(64) uint64_t floor_top;	/* the floor rows' top word: 0 or 1 (node 0) */
	_Alignas(64) uint64_t floor_link[8];	/* node k's link at [k]; only node 0 is used */
	_Alignas(64) struct lf_opt ver;
	uint64_t words[4];
	_Alignas(64) struct lf_astack astack;
	_Alignas(64) uint64_t plain_sp;		/* the unsynchronized array stack's count */
} o;

/* The array stacks' storage: capacity OPS (a batch of pushes fits). */
static _Alignas(64) struct lf_astack_slot aslots[LF_ASTACK_SLOTS(OPS)];
static _Alignas(64) uint64_t plain_arr[OPS];

static struct lf_stack_node snodes[OPS];
static struct lf_list_node lnodes[OPS];
static uint32_t ilinks[OPS];

/* ---- measurement shapes -------------------------------------------------------------- */

/* Time BODY (ops per batch) like KSYNC_MEASURE, but run CLEANUP untimed after each
 * batch (e.g. pop what a batch of pushes left).  `i` is the operation index. */
#define MEASURE_SPLIT(ticks, BODY, CLEANUP)                                            \
	do {                                                                           \
		for (size_t b_ = 0; b_ < BATCHES; b_++) {                              \
			uint64_t t0_ = ksync_cycles_begin();                           \
			for (uint64_t i = 0; i < OPS; i++) {                           \
				BODY;                                                  \
				__asm__ __volatile__("" : "+r"(i) : : "memory");       \
			}                                                              \
			(ticks)[b_] = ksync_cycles_end() - t0_;                        \
			for (uint64_t i = 0; i < OPS; i++) {                           \
				CLEANUP;                                               \
				__asm__ __volatile__("" : "+r"(i) : : "memory");       \
			}                                                              \
		}                                                                      \
	} while (0)

/* Warm up, measure the empty loop, measure, emit; remember the median for ratios. */
#define ROW(name, detail, ...)                                                         \
	do {                                                                           \
		KSYNC_MEASURE(batch_ticks, BATCHES, OPS, __VA_ARGS__);                 \
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);                     \
		KSYNC_MEASURE(batch_ticks, BATCHES, OPS, __VA_ARGS__);                 \
		emit(name, detail);                                                    \
	} while (0)

#define ROW_SPLIT(name, detail, BODY, CLEANUP)                                         \
	do {                                                                           \
		MEASURE_SPLIT(batch_ticks, BODY, CLEANUP);                             \
		/* the timed shape is KSYNC_MEASURE's; CLEANUP is untimed */           \
		KSYNC_MEASURE(empty_ticks, BATCHES, OPS, (void)0);                     \
		MEASURE_SPLIT(batch_ticks, BODY, CLEANUP);                             \
		emit(name, detail);                                                    \
	} while (0)

static uint64_t last_median_x100;

static void emit(const char *name, const char *detail)
{
	struct ksync_prim_result r =
		ksync_prim_compute(batch_ticks, BATCHES, OPS, empty_ticks, BATCHES);
	char line[KSYNC_PRIM_LINE_MAX];

	ksync_prim_format(line, sizeof(line), name, detail, &r);
	ksync_printf("%s\n", line);
	last_median_x100 = r.median_x100;
}

static void ratio(const char *what, uint64_t num_x100, uint64_t den_x100)
{
	uint64_t r = den_x100 ? (num_x100 * 100 + den_x100 / 2) / den_x100 : 0;
	char buf[24];

	ksync_fixed2_format(buf, sizeof(buf), r);
	ksync_printf("ktap: # ratio %s = %s\n", what, buf);
}

/* ---- plain (no synchronization) versions ---------------------------------------------- */

static inline void plain_push(struct lf_stack_node *n)
{
	n->next = o.plain_top;
	o.plain_top = n;
}

static inline struct lf_stack_node *plain_pop(void)
{
	struct lf_stack_node *n = o.plain_top;

	if (n)
		o.plain_top = n->next;
	return n;
}

/* The unsynchronized array stack: the Synthesis stack without its CAS/CAS2, with the same
 * full / empty checks as lf_astack. */
static inline int plain_apush(uint64_t v)
{
	if (o.plain_sp == OPS)
		return KSYNC_EFULL;
	plain_arr[o.plain_sp++] = v;
	return 0;
}

static inline int plain_apop(uint64_t *v)
{
	if (o.plain_sp == 0)
		return KSYNC_EEMPTY;
	*v = plain_arr[--o.plain_sp];
	return 0;
}

/* The nosync operations under the includer's lock: see the top of the file. */
#define LF_COST_LOCKED_ROWS(tag, what, LOCK, UNLOCK)                                   \
	do {                                                                           \
		ROW("mp_counter_inc_" tag, "plain increment under " what,              \
		    { LOCK; o.plain_counter++; UNLOCK; });                             \
		ROW("mp_stack_push_pop_" tag, "plain push, plain pop, each under " what, { \
			LOCK; plain_push(&snodes[0]); UNLOCK;                          \
			LOCK; (void)plain_pop(); UNLOCK;                               \
		});                                                                    \
		ROW("mp_list_insert_delete_" tag,                                      \
		    "plain insert at head, delete at head, each under " what, {        \
			LOCK; plain_push(&snodes[0]); UNLOCK;                          \
			LOCK; (void)plain_pop(); UNLOCK;                               \
		});                                                                    \
		ROW("mp_astack_push_pop_" tag,                                         \
		    "plain array push, plain array pop, each under " what, {           \
			LOCK; (void)plain_apush(1); UNLOCK;                            \
			LOCK; (void)plain_apop(&av); UNLOCK;                           \
		});                                                                    \
	} while (0)

/* Print every row (one KSYNC prim line each) and the ratio lines. */
static void lf_cost_rows(void)
{
	uint64_t ref2, ref2_loaded, floor, pp_lf, pp_nosync, pp_hint, pp_ilf, pp_ihint;
	struct lf_stack_hint shint = LF_STACK_HINT_INITIALIZER;
	struct lf_istack_hint ihint = LF_ISTACK_HINT_INITIALIZER;
	struct lf_stack_node *sn;
	struct lf_list_node *ln;
	uint32_t idx;
	uint64_t tmp4[4] = { 0 }, av = 0;

	lf_stack_init(&o.stack);
	lf_istack_init(&o.istack, ilinks, OPS);
	lf_list_init(&o.list);
	lf_counter_init(&o.counter, 0);
	lf_opt_init(&o.ver);
	lf_astack_init(&o.astack, aslots, OPS);

	/* reference: two lock cmpxchg (the 1.5x bar's denominator). Not a lock: a release
	 * is a plain store, so the locked rows (LF_COST_LOCKS) are what lock-free is
	 * judged against. */
	ROW("ref_2x_lock_cmpxchg", "two uncontended lock cmpxchgq that succeed", {
		uint64_t e0 = 0, e1 = 0;

		__asm__ __volatile__("lock cmpxchgq %[n], %[m]"
				     : [m] "+m"(o.cmpxchg_word[0]), "+a"(e0)
				     : [n] "r"((uint64_t)0)
				     : "cc");
		__asm__ __volatile__("lock cmpxchgq %[n], %[m]"
				     : [m] "+m"(o.cmpxchg_word[1]), "+a"(e1)
				     : [n] "r"((uint64_t)0)
				     : "cc");
	});
	ref2 = last_median_x100;
	/* The floor of any stack whose push and pop are each one 8-byte CAS (Treiber's, with
	 * or without a generation): what the pair must do besides the two locked
	 * instructions.  loaded: each CAS expects the value a load of the word has just
	 * read, and that load follows the previous locked write of the same word.  floor:
	 * that, plus the push's store of the node's link (its data: the top just read) before
	 * its CAS, and the pop's load of the top node's link (its address: from the top just
	 * read) before its.  No generation, no checks: those are ALU work beside this chain. */
	ROW("ref_2x_lock_cmpxchg_loaded", "two lock cmpxchgq on one word, each expecting a fresh load of it", {
		uint64_t e = ksync_load_relaxed_u64(&o.floor_top);

		(void)ksync_cas_strong_release_u64(&o.floor_top, &e, e + 1);
		e = ksync_load_acquire_u64(&o.floor_top);
		(void)ksync_cas_strong_acquire_u64(&o.floor_top, &e, e - 1);
	});
	ref2_loaded = last_median_x100;
	ROW("ref_treiber_pair_floor",
	    "load top, store link, lock cmpxchg; load top, load its link, lock cmpxchg", {
		uint64_t e = ksync_load_relaxed_u64(&o.floor_top), nx;

		ksync_store_relaxed_u64(&o.floor_link[0], e);		/* push node 0 */
		(void)ksync_cas_strong_release_u64(&o.floor_top, &e, 1);
		e = ksync_load_acquire_u64(&o.floor_top);		/* pop: e = 1 */
		nx = ksync_load_relaxed_u64(&o.floor_link[(e - 1) & 7]);
		(void)ksync_cas_strong_acquire_u64(&o.floor_top, &e, nx);
	});
	floor = last_median_x100;

	/* ---- counter increment ---- */
	ROW("mp_counter_inc_nosync", "plain load, add, store of a 64-bit word", {
		o.plain_counter++;
	});
	ROW("mp_counter_inc_faa", "lf_counter_add_relaxed: lock xadd", {
		(void)lf_counter_add_relaxed(&o.counter, 1, NULL);
	});
	ROW("mp_counter_inc_lf", "lf_counter_add_cas_relaxed: read, lock cmpxchg, no retry", {
		(void)lf_counter_add_cas_relaxed(&o.counter, 1, NULL);
	});
	ROW("mp_counter_inc_retry1", "lf_counter_add_cas_relaxed with exactly one failed CAS", {
		force = 1;
		(void)lf_counter_add_cas_relaxed(&o.counter, 1, NULL);
	});

	/* ---- stack push + pop pair ---- */
	ROW("mp_stack_push_pop_nosync", "plain singly linked push then pop", {
		plain_push(&snodes[0]);
		__asm__ __volatile__("" : : : "memory");	/* no folding across */
		(void)plain_pop();
	});
	pp_nosync = last_median_x100;
	ROW("mp_stack_push_pop_lf", "lf_stack push (lock cmpxchg) + pop (lock cmpxchg16b)", {
		(void)lf_stack_push_mpmc(&o.stack, &snodes[0]);
		(void)lf_stack_pop_mpmc(&o.stack, &sn);
	});
	pp_lf = last_median_x100;
	ROW("mp_stack_push_pop_hint", "lf_stack push_hint + pop_hint: no load of the top", {
		(void)lf_stack_push_hint_mpmc(&o.stack, &shint, &snodes[0]);
		(void)lf_stack_pop_hint_mpmc(&o.stack, &shint, &sn);
	});
	pp_hint = last_median_x100;
	ROW("mp_stack_push_pop_retry1", "lf_stack push + pop, each with one failed CAS", {
		force = 1;
		(void)lf_stack_push_mpmc(&o.stack, &snodes[0]);
		force = 1;
		(void)lf_stack_pop_mpmc(&o.stack, &sn);
	});

	/* ---- push alone, pop alone (256 per batch; the other half untimed) ---- */
	ROW_SPLIT("mp_stack_push_nosync", "plain push (batch of 256; popped untimed)",
		  plain_push(&snodes[i]), (void)plain_pop());
	ROW_SPLIT("mp_stack_push_lf", "lf_stack_push_mpmc: one lock cmpxchg",
		  (void)lf_stack_push_mpmc(&o.stack, &snodes[i]),
		  (void)lf_stack_pop_mpmc(&o.stack, &sn));
	ROW_SPLIT("mp_stack_push_retry1", "lf_stack_push_mpmc with one failed CAS",
		  (force = 1, (void)lf_stack_push_mpmc(&o.stack, &snodes[i])),
		  (void)lf_stack_pop_mpmc(&o.stack, &sn));
	for (int k = 0; k < OPS; k++)
		plain_push(&snodes[k]);
	ROW_SPLIT("mp_stack_pop_nosync", "plain pop (batch of 256; pushed back untimed)",
		  (void)plain_pop(), plain_push(&snodes[i]));
	while (plain_pop())
		;
	for (int k = 0; k < OPS; k++)
		lf_stack_push_mpmc(&o.stack, &snodes[k]);
	ROW_SPLIT("mp_stack_pop_lf", "lf_stack_pop_mpmc: one lock cmpxchg16b",
		  (void)lf_stack_pop_mpmc(&o.stack, &sn),
		  (void)lf_stack_push_mpmc(&o.stack, &snodes[i]));
	ROW_SPLIT("mp_stack_pop_retry1", "lf_stack_pop_mpmc with one failed cmpxchg16b",
		  (force = 1, (void)lf_stack_pop_mpmc(&o.stack, &sn)),
		  (void)lf_stack_push_mpmc(&o.stack, &snodes[i]));
	while (lf_stack_pop_mpmc(&o.stack, &sn) >= 0)
		;

	/* ---- index stack ---- */
	ROW("mp_istack_push_pop_lf", "lf_istack push + pop: two lock cmpxchg", {
		(void)lf_istack_push_mpmc(&o.istack, 0);
		(void)lf_istack_pop_mpmc(&o.istack, &idx);
	});
	pp_ilf = last_median_x100;
	ROW("mp_istack_push_pop_hint", "lf_istack push_hint + pop_hint: no load of the top", {
		(void)lf_istack_push_hint_mpmc(&o.istack, &ihint, 0);
		(void)lf_istack_pop_hint_mpmc(&o.istack, &ihint, &idx);
	});
	pp_ihint = last_median_x100;
	ROW("mp_istack_push_pop_retry1", "lf_istack push + pop, each with one failed CAS", {
		force = 1;
		(void)lf_istack_push_mpmc(&o.istack, 0);
		force = 1;
		(void)lf_istack_pop_mpmc(&o.istack, &idx);
	});

	/* ---- array stack (Synthesis: CAS2 push of SP and slot; lf_astack.h) ---- */
	ROW("mp_astack_push_pop_nosync", "plain array push then pop (count, full/empty checks)", {
		(void)plain_apush(1);
		__asm__ __volatile__("" : : : "memory");	/* no folding across */
		(void)plain_apop(&av);
	});
	ROW("mp_astack_push_pop_lf", "lf_astack push + pop: 2 lock cmpxchg16b each (head, slot)", {
		(void)lf_astack_push_mpmc(&o.astack, 1);
		(void)lf_astack_pop_mpmc(&o.astack, &av);
	});
	ROW("mp_astack_push_pop_retry1", "lf_astack push + pop, each head CAS failing once", {
		force = 1;
		(void)lf_astack_push_mpmc(&o.astack, 1);
		force = 1;
		(void)lf_astack_pop_mpmc(&o.astack, &av);
	});
	ROW_SPLIT("mp_astack_push_nosync", "plain array push (batch of 256; popped untimed)",
		  (void)plain_apush(i), (void)plain_apop(&av));
	ROW_SPLIT("mp_astack_push_lf", "lf_astack_push_mpmc (batch of 256; popped untimed)",
		  (void)lf_astack_push_mpmc(&o.astack, i), (void)lf_astack_pop_mpmc(&o.astack, &av));
	ROW_SPLIT("mp_astack_push_retry1", "lf_astack_push_mpmc with one failed head CAS",
		  (force = 1, (void)lf_astack_push_mpmc(&o.astack, i)),
		  (void)lf_astack_pop_mpmc(&o.astack, &av));
	for (int k = 0; k < OPS; k++)
		(void)plain_apush((uint64_t)k);
	ROW_SPLIT("mp_astack_pop_nosync", "plain array pop (batch of 256; pushed back untimed)",
		  (void)plain_apop(&av), (void)plain_apush(i));
	o.plain_sp = 0;
	for (int k = 0; k < OPS; k++)
		(void)lf_astack_push_mpmc(&o.astack, (uint64_t)k);
	ROW_SPLIT("mp_astack_pop_lf", "lf_astack_pop_mpmc (batch of 256; pushed back untimed)",
		  (void)lf_astack_pop_mpmc(&o.astack, &av), (void)lf_astack_push_mpmc(&o.astack, i));
	ROW_SPLIT("mp_astack_pop_retry1", "lf_astack_pop_mpmc with one failed head CAS",
		  (force = 1, (void)lf_astack_pop_mpmc(&o.astack, &av)),
		  (void)lf_astack_push_mpmc(&o.astack, i));
	while (lf_astack_pop_mpmc(&o.astack, &av) >= 0)
		;

	/* ---- linked list at the head (insert + delete) ---- */
	ROW("mp_list_insert_delete_nosync", "plain insert at head then delete at head", {
		plain_push(&snodes[0]);
		__asm__ __volatile__("" : : : "memory");
		(void)plain_pop();
	});
	ROW("mp_list_insert_delete_lf",
	    "lf_list insert_head (1 CAS) + pop_head (freeze, mark, unlink: 3 CAS)", {
		(void)lf_list_insert_head_mpmc(&o.list, &lnodes[0]);
		(void)lf_list_pop_head_mpmc(&o.list, &ln);
	});
	ROW("mp_list_append_delete_lf",
	    "lf_list insert_tail (CAS + cmpxchg16b swing) + pop_head (3 CAS + cmpxchg16b fix)", {
		(void)lf_list_insert_tail_mpmc(&o.list, &lnodes[0]);
		(void)lf_list_pop_head_mpmc(&o.list, &ln);
	});

	/* ---- optimistic section over 4 words ---- */
	/* Four plain word loads and stores, not memcpy: the kernel is built -ffreestanding,
	 * so memcpy there is a call to kernel/lib.c's `rep movsb`, which TCG emulates one
	 * byte per iteration - the row measured that (tcg: 200 ticks for the memcpy call,
	 * 178 for an inline rep movsb of 32 bytes, 22 for four word moves; hosted, where
	 * gcc inlines the memcpy: 1.4, 10.8, 0.2) and stood above the synchronized copy it
	 * is the baseline of (tcg 49). The lf row copies word by word too. */
	ROW("mp_optimistic_read4_nosync", "copy 4 words: 4 plain loads and stores", {
		tmp4[0] = o.words[0];
		tmp4[1] = o.words[1];
		tmp4[2] = o.words[2];
		tmp4[3] = o.words[3];
		__asm__ __volatile__("" : : "r"(tmp4) : "memory");
	});
	ROW("mp_optimistic_read4_lf", "lf_opt_read of 4 words: version, 4 loads, validate", {
		(void)lf_opt_read(&o.ver, tmp4, o.words, 4);
		__asm__ __volatile__("" : : "r"(tmp4) : "memory");
	});
	ROW("mp_optimistic_write4_lf", "lf_opt_write of 4 words: lock cmpxchg, 4 stores, store", {
		(void)lf_opt_write(&o.ver, o.words, tmp4, 4);
	});

	/* ---- the nosync operations under the includer's locks ---- */
#ifdef LF_COST_LOCKS
	LF_COST_LOCKS();
#endif
	(void)av;

	ratio("stack push+pop / 2x lock cmpxchg (bar: <= 1.50)", pp_lf, ref2);
	ratio("stack push+pop with hint / 2x lock cmpxchg (bar: <= 1.50)", pp_hint, ref2);
	ratio("istack push+pop / 2x lock cmpxchg (bar: <= 1.50)", pp_ilf, ref2);
	ratio("istack push+pop with hint / 2x lock cmpxchg (bar: <= 1.50)", pp_ihint, ref2);
	ratio("2x lock cmpxchg on one word, each after a load of it / 2x lock cmpxchg", ref2_loaded,
	      ref2);
	ratio("8-byte Treiber pair floor / 2x lock cmpxchg", floor, ref2);
	ratio("istack push+pop / 8-byte Treiber pair floor", pp_ilf, floor);
	ratio("stack push+pop lf / nosync", pp_lf, pp_nosync);
}

#endif /* KSYNC_BENCH_LF_COST_ROWS_H */
