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
 * Where each count lives (Sprite's own layout for the hits, section 4: "fields added to
 * each lock", consolidated per type, a transient lock's counts "added to the total for the
 * type when the lock is destroyed"):
 *   - hits and migrations: a counter pair in the lock itself (struct lockstat_inst), in
 *     the lock's first cache line beside its word, written by the holder only - it owns
 *     that line anyway, so counting a hit is a load and a store to a line already in this
 *     CPU's cache, no shard, no mask, no fence. Each class keeps a list of its live
 *     instances (struct lockstat_cls: a raw spin lock - spinlock.h, interrupts masked -
 *     protects the list, the instances' reset marks and the class's folded totals); a
 *     reader sums the live instances under that lock, an instance's destruction folds its
 *     counts into the class under it. Static locks (MLOCK_INIT) join their class's list
 *     through LOCKSTAT_STATIC, at lockstat_init. A master lock's release that a ticket
 *     waiter spins on counts its hit in the shard instead (mlock.h: mlock_waited_on).
 *     The class's sum is the same either way.
 *   - everything rarer (misses, spins, sleeps, wakeups, futile wakeups, queue lengths,
 *     wait / hold / masked times, call sites, created / destroyed, and the helping locks'
 *     hits, hlock.h): one shard per (CPU, class), written only by its CPU with interrupts
 *     masked (inside a master lock's section or a monitor's interlock; lockstat_note_*
 *     mask themselves), under a sequence count. A master lock's miss (with its spins,
 *     wait and hold) is committed to the shard at its release, after the lock word is
 *     released and before the mask is lifted, and a monitor's after its interlock is
 *     released: a saturated lock's hold time does not grow by the statistics' own work.
 *
 * What a reader (lockstat_read) guarantees:
 *   - each shard, hence the class's sum of shards, is a state the counters really had (a
 *     shard that changed while it was read is read again): a class's histogram buckets sum
 *     to their counts, a master lock's misses and waits belong to the same instants;
 *   - CHANGED (issue 27): hits and migrations are NOT read at the same instant as the
 *     shards, nor all instances at one instant: they are the folded totals plus each live
 *     instance's counter read (relaxed) at a slightly different moment of the read. The
 *     shards are read first, and a lock's hit is counted (in the lock) before its miss,
 *     wait and hold are committed (to the shard), so a snapshot has hits >= misses of a
 *     master lock and hits >= hold.n in timing mode - except for the acquisitions that
 *     straddle a lockstat_reset (counted in the lock before it, committed to a shard after
 *     it: at most one per CPU). They are no longer equal in the middle of a run;
 *   - exact after quiescence, and exact at destruction: an instance's counts fold into its
 *     class under the list lock, so after a destruction the class holds exactly the sum of
 *     its instances' own counts (kernel/tests/test_lock.c checks it);
 *   - a reset (lockstat_reset) zeroes the shards by an epoch (each shard zeroes itself at
 *     its next update, a reader ignores shards of an older epoch: no cross-CPU call) and
 *     the instance counters by marks: under each class's list lock it records every live
 *     instance's counters as its new zero and clears the folded totals. Hits after a reset
 *     are exact (the mark is a value the holder's counter had; the holder alone writes it).
 *
 * Modes: LOCKSTAT=0 at build time compiles every statistics path out (the fast path is the
 * lock and the mask only: tests/test_lock_code.py checks the object code), and asking for
 * any mode but off is refused with the reason (lockstat_set_mode: KSYNC_ENOTSUP; the boot
 * word lockstat=MODE stops the boot naming it). Otherwise the run-time mode is
 *   off        nothing recorded;
 *   counts     hits and migrations in the lock; misses, spins, sleeps, wakeups, futile
 *              wakeups, queue lengths, sites by count in the shards (an uncontended
 *              acquisition touches no shard);
 *   contested  FreeBSD LOCK_PROFILING's contested-only profiling: an uncontended
 *              acquisition records its hit in the lock and nothing else (no migration
 *              check, no timestamp); a contended one records its miss, spins, sleeps and
 *              its wait (TSC from the failed attempt to the acquisition) per call site;
 *   timing     counts plus wait, hold and masked times from the TSC, one timestamp per
 *              uncontended acquisition (its hold start, which also stands for the mask's
 *              start: they are the lock instruction apart) and one at its release; a
 *              contended acquisition adds one at the failed attempt (the wait's start) -
 *              its acquisition's stamp is both the wait's end and the hold's start.
 */
#ifndef KSYNC_LOCKSTAT_H
#define KSYNC_LOCKSTAT_H

#include "kernel.h"
#include "spl.h"	/* struct kcpu: this CPU's shards */
#include "spinlock.h"	/* a class's list lock: below the master locks */

#ifndef LOCKSTAT
#define LOCKSTAT 1		/* 0: statistics compiled out (make LOCKSTAT=0) */
#endif

enum lock_kind { LOCK_MASTER, LOCK_MONITOR, LOCK_CONDVAR, LOCK_HELPING /* hlock.h */ };
enum lock_use { LOCK_CODE, LOCK_DATA };	/* Sprite section 2: a code lock or a data lock */
enum lockstat_mode { LOCKSTAT_OFF, LOCKSTAT_COUNTS, LOCKSTAT_CONTESTED, LOCKSTAT_TIMING,
		    LOCKSTAT_NMODES };

/* A lock instance's own counters and its place on its class's list. The counters are
 * the holder's: it alone writes them (load + store, relaxed atomics - no lock prefix:
 * the lock it holds orders the writers), readers load them relaxed; put them in the
 * lock's first cache line. The rest is the class's list lock's (struct lockstat_cls). */
struct lockstat_inst {
	uint64_t hits;			/* the holder's: acquisitions */
	uint64_t migrations;		/* the holder's: acquisitions whose previous holder ran
					   on another CPU (counts and timing modes) */
	struct lockstat_inst *next, *prev;	/* list lock: the class's live instances */
	uint64_t hits0, migrations0;	/* list lock: the counters at the last reset */
	const struct lock_class *cls;	/* list lock: the class whose list has it, NULL if none */
};

/* A class's mutable part (LOCK_CLASS defines one beside each class). */
struct lockstat_cls {
	/* protects head, folded_*, and every listed instance's next, prev, hits0,
	 * migrations0, cls; taken with interrupts masked (spin_lock_irqsave) by init,
	 * destroy, reset and read - never by a lock's acquire or release */
	struct spinlock lock;
	struct lockstat_inst *head;	/* the live instances */
	uint64_t live;			/* how many are listed */
	uint64_t folded_hits, folded_migrations;	/* destroyed instances' counts since the
							   last reset */
};

struct lock_class {
	const char *name;
	const char *file;	/* where the class is defined (its init site) */
	struct lockstat_cls *st;	/* its live instances and folded counts; NULL: none kept */
	int line;
	uint8_t kind;		/* enum lock_kind */
	uint8_t use;		/* enum lock_use */
} __attribute__((aligned(32)));

/* Define a class (file scope). Other files see it through LOCK_CLASS_DECLARE. */
#define LOCK_CLASS(var, name_, kind_, use_)                                           \
	static struct lockstat_cls var##_lsc_ = { .lock = SPINLOCK_INIT("lockstat list") }; \
	const struct lock_class var __attribute__((used, section("ksync_lockcls"),   \
						   aligned(32))) =                    \
		{ .name = (name_), .file = __FILE__, .st = &var##_lsc_, .line = __LINE__, \
		  .kind = (kind_), .use = (use_) }
#define LOCK_CLASS_DECLARE(var) extern const struct lock_class var

/* A statically initialised lock (MLOCK_INIT) joins its class's instance list at
 * lockstat_init: LOCKSTAT_STATIC(var) at file scope after its definition. */
struct lockstat_static {
	struct lockstat_inst *inst;
	const struct lock_class *const *cls;	/* the lock's class field */
};
#define LOCKSTAT_STATIC(var) LOCKSTAT_STATIC_AS(var, var)
/* The same for a lock that is a field of a static object: LOCKSTAT_STATIC_AS(tty_lock,
 * tty.lock) (id: any name unique in the file). A master lock that was not listed panics at
 * its first miss with statistics on, naming its class (mlock_spin_slow): its hits would
 * be counted in it and never read. */
#define LOCKSTAT_STATIC_AS(id, lock)                                                  \
	static const struct lockstat_static id##_lss_                                 \
		__attribute__((used, section("ksync_lockinst"), aligned(16))) =       \
		{ &(lock).st, &(lock).cls }

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
	uint64_t live;		/* instances on the class's list when it was read */
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

/* Modes that time a contended acquisition's wait. */
static inline bool lockstat_times_waits(unsigned mode)
{
	return mode == LOCKSTAT_CONTESTED || mode == LOCKSTAT_TIMING;
}
/* Modes that look for migrations (they need the previous holder's CPU). */
static inline bool lockstat_counts_migrations(unsigned mode)
{
	return mode == LOCKSTAT_COUNTS || mode == LOCKSTAT_TIMING;
}

/* A hit, by the holder, in the lock's own counters (no shard, no mask). */
static inline void lockstat_inst_hit(struct lockstat_inst *i, bool migrated)
{
	/* relaxed: the holder is the only writer (the lock orders successive holders);
	 * readers load it relaxed and accept any value it had during their read */
	__atomic_store_n(&i->hits, __atomic_load_n(&i->hits, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	if (migrated)
		__atomic_store_n(&i->migrations,
				 __atomic_load_n(&i->migrations, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
}

/* An instance joins / leaves its class's list (init / destroy of a lock; they count
 * created / destroyed too). _del folds the instance's counts into the class and panics
 * naming the class if the instance is not on its list (destroyed twice, or never
 * initialised). Nothing of the kind when compiled out. */
void lockstat_inst_add(const struct lock_class *c, struct lockstat_inst *i);
void lockstat_inst_del(struct lockstat_inst *i);

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
void lockstat_note_created(const struct lock_class *c);	/* (instances without a list) */
void lockstat_note_destroyed(const struct lock_class *c);
void lockstat_note_futile(const struct lock_class *c);	/* a condvar wakeup found false */

/* ---- control and reading (any context that may print; the paper's two calls) ------------ */

/* The memory the shards of ncpus CPUs take: one struct lockstat_shard (1152 bytes as built) per
 * (CPU, class); 0 when compiled out. */
size_t lockstat_bytes(unsigned ncpus);
/* Once, at kernel init, before any lock is counted: hang every CPU's shards in `mem`
 * (at least lockstat_bytes(arch_ncpus()) bytes, 64-byte aligned, owned by the statistics
 * from then on; kernel_entry takes whole pages from the page pool), put the static locks
 * (LOCKSTAT_STATIC) on their classes' lists, set the build's default mode (counts). The statistics allocate nothing afterwards. Panics if mem is
 * short or misaligned. */
void lockstat_init(void *mem, size_t bytes);
unsigned lockstat_nclasses(void);
const struct lock_class *lockstat_class(unsigned i);
const struct lock_class *lockstat_find(const char *name);	/* NULL if none */
/* KSYNC_EINVAL for a mode above LOCKSTAT_TIMING; KSYNC_ENOTSUP for any mode but off
 * when compiled out (LOCKSTAT=0). */
int lockstat_set_mode(unsigned mode);
/* A mode by name (off, counts, contested, timing): the mode, or KSYNC_EINVAL. */
int lockstat_mode_parse(const char *name);
/* The boot word lockstat=NAME: set that mode, or write into why[n] the reason it is
 * refused (an unknown name; a mode the build compiled out) and return the error. */
int lockstat_set_mode_name(const char *name, char *why, size_t n);
unsigned lockstat_mode(void);
const char *lockstat_mode_name(unsigned mode);
/* Zero every class's counters from now on (see the top comment: exact for the hits; an
 * acquisition in flight may put its shard part on either side). */
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
