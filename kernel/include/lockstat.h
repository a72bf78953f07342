/*
 * lockstat.h - lock classes and their statistics (issue 11).
 *
 * Hartman & Ousterhout, "Performance Measurements of a Multiprocessor Sprite Kernel",
 * section 4: every lock counts its hits (successful acquisitions) and misses (unsuccessful
 * attempts); the counts are kept per lock *type* so that transient locks (created and
 * destroyed at run time, e.g. one per process control block) add up; two system calls
 * clear the counts and copy them out. Misses follow the paper's definitions: a master
 * lock has at most one miss per hit (spinning then getting it is one miss followed by a
 * hit); a monitor lock counts a miss each time a woken waiter fails to get the lock, so
 * its misses can exceed its hits.
 *
 * Beyond the paper (Linux lock_stat, FreeBSD LOCK_PROFILING): spin iterations, sleeps,
 * wait and hold times (total, min, max, log2 histogram), time with interrupts masked for
 * master locks, acquisitions whose previous holder ran on another CPU, futile wakeups of
 * condition variables (woken, condition still false), the longest wait queue, the call
 * sites with the most wait, and instance counts (created, destroyed, live).
 *
 * A class is a static `struct lock_class` (LOCK_CLASS below) placed in the linker section
 * "ksync_lockcls", so the kernel knows every class without registering any. Each lock
 * instance points at its class.
 *
 * Counters: one shard per (CPU, class), written only by its CPU with interrupts masked
 * (inside a master lock's section or a monitor's interlock; lockstat_note_* mask
 * themselves), under a sequence count; a reader merges the shards and retries a shard
 * that changed while it read it, so each shard - and hence each class total - is a state
 * the counters really had: a class's histogram buckets sum to its counts, its hits and
 * misses belong to the same instants. A master lock's hit (with its miss, spins, wait and
 * hold) is committed at its release, after the lock word is released and before the mask
 * is lifted, and a monitor's after its interlock is released: a saturated lock's hold time
 * does not grow by the statistics' own work. Counts are recorded at the event, not when an
 * instance is destroyed: a class's totals include its live instances (Sprite's added
 * transient locks to the type only at destruction); after a destruction the class holds
 * exactly the sum of its instances' own counts (kernel/tests/test_lock.c checks it).
 *
 * Modes: LOCKSTAT=0 at build time compiles every statistics path out (the fast path is the
 * lock and the mask only: tests/test_lock_code.py checks the object code); otherwise the
 * run-time mode is off, counts (hits, misses, spins, sleeps, migrations, futile wakeups,
 * queue lengths, sites by count) or timing (counts plus wait, hold and masked times from
 * the TSC). Reset (lockstat_reset) is an epoch: each shard zeroes itself at its next
 * update and a reader ignores shards of an older epoch, so a reset in the middle of a run
 * is exact and needs no cross-CPU call.
 */
#ifndef KSYNC_LOCKSTAT_H
#define KSYNC_LOCKSTAT_H

#include "kernel.h"
#include "spl.h"	/* struct kcpu: this CPU's shards */

#ifndef LOCKSTAT
#define LOCKSTAT 1		/* 0: statistics compiled out (make LOCKSTAT=0) */
#endif

enum lock_kind { LOCK_MASTER, LOCK_MONITOR, LOCK_CONDVAR, LOCK_HELPING /* hlock.h */ };
enum lock_use { LOCK_CODE, LOCK_DATA };	/* Sprite section 2: a code lock or a data lock */
enum lockstat_mode { LOCKSTAT_OFF, LOCKSTAT_COUNTS, LOCKSTAT_TIMING };

struct lock_class {
	const char *name;
	uint8_t kind;		/* enum lock_kind */
	uint8_t use;		/* enum lock_use */
	const char *file;	/* where the class is defined (its init site) */
	int line;
} __attribute__((aligned(32)));

/* Define a class (file scope). Other files see it through LOCK_CLASS_DECLARE. */
#define LOCK_CLASS(var, name_, kind_, use_)                                           \
	const struct lock_class var __attribute__((used, section("ksync_lockcls"),   \
						   aligned(32))) =                    \
		{ (name_), (kind_), (use_), __FILE__, __LINE__ }
#define LOCK_CLASS_DECLARE(var) extern const struct lock_class var

/* A call site: a string literal "file:line", passed by the lock macros. */
#define LOCK_STR2_(x) #x
#define LOCK_STR_(x) LOCK_STR2_(x)
#define LOCK_SITE (__FILE__ ":" LOCK_STR_(__LINE__))

#define LOCKSTAT_HIST 32	/* log2 buckets of TSC ticks: [0], [1], [2,4), ..., [2^30, inf) */
#define LOCKSTAT_SITES 6	/* call sites kept per shard (space-saving: the least replaced) */

struct lockstat_time {
	uint64_t n, total, min, max;
	uint64_t hist[LOCKSTAT_HIST];
};

struct lockstat_site {
	const char *site;	/* "file:line" of the acquire that waited */
	uint64_t n;		/* misses there */
	uint64_t wait;		/* TSC ticks waited there (timing mode) */
};

/* One CPU's counters for one class. Every field: written by its CPU only, interrupts
 * masked, under `seq` (odd while it changes); read by any CPU with relaxed atomics. */
struct lockstat_shard {
	uint32_t seq;
	uint32_t epoch;		/* lockstat_reset's epoch these counters belong to */
	uint64_t hits, misses, spins, sleeps, wakeups, futile, migrations;
	uint64_t created, destroyed, max_queue;
	struct lockstat_time wait, hold, irqoff;
	struct lockstat_site sites[LOCKSTAT_SITES];
} __attribute__((aligned(64)));

/* A class's totals (lockstat_read). */
struct lockstat_snap {
	const struct lock_class *cls;
	uint64_t hits, misses, spins, sleeps, wakeups, futile, migrations;
	uint64_t created, destroyed, max_queue;
	struct lockstat_time wait, hold, irqoff;
	struct lockstat_site sites[LOCKSTAT_SITES];	/* merged, most wait (then misses) first */
	unsigned retries;	/* shard reads repeated because the shard changed meanwhile */
};

/* ---- the fast-path hooks the lock implementations use ---------------------------------- */

extern unsigned lockstat_mode_;		/* enum lockstat_mode; 0 until lockstat_init */
extern uint32_t lockstat_epoch_;	/* bumped by lockstat_reset */
extern const struct lock_class __start_ksync_lockcls[], __stop_ksync_lockcls[];

/* The run-time mode (one relaxed load; 0 when compiled out, so `if (lockstat_on())`
 * removes the statistics code). */
static inline unsigned lockstat_on(void)
{
	return LOCKSTAT ? __atomic_load_n(&lockstat_mode_, __ATOMIC_RELAXED) : 0;
}

/* Open this CPU's shard of c for an update (interrupts masked on this CPU until
 * lockstat_close). Zeroes a shard left from before a reset. */
struct lockstat_shard *lockstat_open_slow(struct lockstat_shard *s, uint32_t epoch);
static inline struct lockstat_shard *lockstat_open(const struct lock_class *c)
{
	struct lockstat_shard *s = kcpu_this()->lockstat + (c - __start_ksync_lockcls);
	uint32_t e = __atomic_load_n(&lockstat_epoch_, __ATOMIC_RELAXED);
	if (__builtin_expect(__atomic_load_n(&s->epoch, __ATOMIC_RELAXED) != e, 0))
		return lockstat_open_slow(s, e);
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	/* the odd count is visible before any counter it guards changes: every counter
	 * store is a release store (LOCKSTAT_ADD), which orders this store before it (no
	 * fence: ThreadSanitizer does not model fences; on x86 all of these are plain movs) */
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);
	return s;
}
static inline void lockstat_close(struct lockstat_shard *s)
{
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	/* release: the counters' new values are visible before the even count */
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELEASE);
}
/* A counter of an open shard (its CPU is the only writer: load + store, no lock prefix).
 * Release: the shard's odd count is visible before the new value (lockstat_open). */
#define LOCKSTAT_SET(field, v) __atomic_store_n(&(field), (v), __ATOMIC_RELEASE)
#define LOCKSTAT_ADD(field, v) \
	LOCKSTAT_SET(field, __atomic_load_n(&(field), __ATOMIC_RELAXED) + (v))
#define LOCKSTAT_MAX(field, v) do { \
	uint64_t v_ = (v); \
	if (v_ > __atomic_load_n(&(field), __ATOMIC_RELAXED)) \
		LOCKSTAT_SET(field, v_); \
} while (0)

void lockstat_time_add(struct lockstat_time *t, uint64_t ticks);	/* open shard */
void lockstat_site_add(struct lockstat_shard *s, const char *site, uint64_t wait);

/* Events that happen outside a masked section (each masks interrupts itself). */
void lockstat_note_created(const struct lock_class *c);
void lockstat_note_destroyed(const struct lock_class *c);
void lockstat_note_futile(const struct lock_class *c);	/* a condvar wakeup found false */

/* ---- control and reading (any context that may print; the paper's two calls) ------------ */

/* The memory the shards of ncpus CPUs take: one struct lockstat_shard (1152 bytes as built) per
 * (CPU, class); 0 when compiled out. */
size_t lockstat_bytes(unsigned ncpus);
/* Once, at kernel init, before any lock is counted: hang every CPU's shards in `mem`
 * (at least lockstat_bytes(arch_ncpus()) bytes, 64-byte aligned, owned by the statistics
 * from then on; kernel_entry takes whole pages from the page pool), set the build's
 * default mode (counts). The statistics allocate nothing afterwards. Panics if mem is
 * short or misaligned. */
void lockstat_init(void *mem, size_t bytes);
unsigned lockstat_nclasses(void);
const struct lock_class *lockstat_class(unsigned i);
const struct lock_class *lockstat_find(const char *name);	/* NULL if none */
/* KSYNC_EINVAL for a mode above LOCKSTAT_TIMING; KSYNC_ENOTSUP when compiled out. */
int lockstat_set_mode(unsigned mode);
unsigned lockstat_mode(void);
const char *lockstat_mode_name(unsigned mode);
/* Zero every class's counters from now on (exact: see the top comment). */
void lockstat_reset(void);
/* A consistent snapshot of class c's totals. */
void lockstat_read(const struct lock_class *c, struct lockstat_snap *out);
/* Print one KSYNC {"kind":"lockstat",...} line per class with any activity (every class
 * if `all`), tagged with `tag` (a JSON object body without braces, e.g. "\"bench\":\"fork\"",
 * or NULL), and `elapsed_ticks` (the interval the counts cover, 0 if unknown). */
void lockstat_emit(const char *tag, uint64_t elapsed_ticks, bool all);
const char *lock_kind_name(unsigned kind);
const char *lock_use_name(unsigned use);

#endif
