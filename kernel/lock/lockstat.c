/*
 * lockstat.c - lock classes' per-CPU statistics: shards, reset, consistent reads, output
 * (issue 11). Hartman & Ousterhout, Sprite, section 4 (per-type hit and miss counts, the
 * two system calls that clear and copy them out); the definitions are in lockstat.h.
 *
 * Shards: lockstat_init carves, for each CPU, one shard per class (the classes are the
 * linker section "ksync_lockcls") out of the memory its caller hands it at kernel init
 * (kernel_entry: whole pages from the page pool, before anything else allocates), and
 * hangs the CPU's array from its struct kcpu. The statistics allocate nothing after that:
 * lockstat.c calls no allocator, so the page pool and the heap, whose own locks count
 * here, stay above it. A shard is written only by its CPU with interrupts masked, under a
 * sequence count (odd while it changes); readers retry a shard whose count was odd or
 * moved.
 *
 * Instances (issue 27): a lock's hits and migrations are counters in the lock (struct
 * lockstat_inst), summed over its class's list of live instances when read and folded
 * into the class when the lock is destroyed - Sprite's per-type totals of transient locks
 * (Hartman & Ousterhout section 4). The list, the reset marks and the folded totals are
 * under the class's raw spin lock (interrupts masked), which no acquire or release takes.
 */
#include "lockstat.h"
#include <ksync/errors.h>

unsigned lockstat_mode_;	/* relaxed atomic: any CPU reads it on every lock operation */
uint32_t lockstat_epoch_ = 1;	/* relaxed atomic: a shard of an older epoch reads as zero */
static unsigned nclasses;	/* set by lockstat_init */

unsigned lockstat_nclasses(void)
{
	return (unsigned)(__stop_ksync_lockcls - __start_ksync_lockcls);
}

const struct lock_class *lockstat_class(unsigned i)
{
	return i < lockstat_nclasses() ? &__start_ksync_lockcls[i] : NULL;
}

const struct lock_class *lockstat_find(const char *name)
{
	for (unsigned i = 0; name && i < lockstat_nclasses(); i++)
		if (!strcmp(__start_ksync_lockcls[i].name, name))
			return &__start_ksync_lockcls[i];
	return NULL;
}

const char *lock_kind_name(unsigned kind)
{
	return kind == LOCK_MASTER ? "master" : kind == LOCK_MONITOR ? "monitor" :
	       kind == LOCK_CONDVAR ? "condvar" : kind == LOCK_HELPING ? "helping" : "?";
}

const char *lock_use_name(unsigned use) { return use == LOCK_CODE ? "code" : "data"; }

static const char *const mode_names[LOCKSTAT_NMODES] = { "off", "counts", "contested",
							    "timing" };

const char *lockstat_mode_name(unsigned mode)
{
	return mode < LOCKSTAT_NMODES ? mode_names[mode] : "?";
}

int lockstat_mode_parse(const char *name)
{
	for (unsigned m = 0; name && m < LOCKSTAT_NMODES; m++)
		if (!strcmp(name, mode_names[m]))
			return (int)m;
	return KSYNC_EINVAL;
}

int lockstat_set_mode_name(const char *name, char *why, size_t n)
{
	int m = lockstat_mode_parse(name);
	if (m < 0) {
		ksnprintf(why, n, "unknown lock statistics mode '%s' (off, counts, contested, "
			  "timing)", name ? name : "");
		return m;
	}
	int rc = lockstat_set_mode((unsigned)m);
	if (rc == KSYNC_ENOTSUP)
		ksnprintf(why, n, "lock statistics mode '%s' refused: this kernel was built with "
			  "LOCKSTAT=0, which compiles the statistics out (only 'off' is possible; "
			  "rebuild with LOCKSTAT=1)", name);
	else if (rc != KSYNC_OK)
		ksnprintf(why, n, "lock statistics mode '%s' refused: %s", name, ksync_strerror(rc));
	return rc;
}

size_t lockstat_bytes(unsigned ncpus)
{
	return LOCKSTAT ? (size_t)ncpus * lockstat_nclasses() * sizeof(struct lockstat_shard) : 0;
}

/* ---- instances: the classes' lists ------------------------------------------------------ */

extern const struct lockstat_static __start_ksync_lockinst[] __attribute__((weak));
extern const struct lockstat_static __stop_ksync_lockinst[] __attribute__((weak));

static void list_add(struct lockstat_cls *st, struct lockstat_inst *i)
{
	i->prev = NULL;
	i->next = st->head;
	if (st->head)
		st->head->prev = i;
	st->head = i;
	st->live++;
}

void lockstat_inst_add(const struct lock_class *c, struct lockstat_inst *i)
{
	if (!LOCKSTAT)
		return;
	lockstat_note_created(c);
	if (!c->st)
		return;		/* a class defined outside LOCK_CLASS: no list */
	irqkey_t k = spin_lock_irqsave(&c->st->lock);
	i->hits0 = __atomic_load_n(&i->hits, __ATOMIC_RELAXED);
	i->migrations0 = __atomic_load_n(&i->migrations, __ATOMIC_RELAXED);
	i->cls = c;
	list_add(c->st, i);
	spin_unlock_irqrestore(&c->st->lock, k);
}

void lockstat_inst_del(struct lockstat_inst *i)
{
	if (!LOCKSTAT)
		return;
	const struct lock_class *c = i->cls;
	if (!c)
		return;		/* never listed (its class keeps no list) */
	lockstat_note_destroyed(c);
	struct lockstat_cls *st = c->st;
	irqkey_t k = spin_lock_irqsave(&st->lock);
	bool linked = i->prev ? i->prev->next == i : st->head == i;
	if (!linked || (i->next && i->next->prev != i)) {
		spin_unlock_irqrestore(&st->lock, k);
		panic("lockstat: an instance of class '%s' is not on its class's list (destroyed "
		      "twice, or its memory reused without a destroy)", c->name);
	}
	if (i->prev)
		i->prev->next = i->next;
	else
		st->head = i->next;
	if (i->next)
		i->next->prev = i->prev;
	st->live--;
	/* the fold: exact - the lock is not held (its destroyer checked), so its holder's
	 * last store is before this load */
	st->folded_hits += __atomic_load_n(&i->hits, __ATOMIC_RELAXED) - i->hits0;
	st->folded_migrations += __atomic_load_n(&i->migrations, __ATOMIC_RELAXED) - i->migrations0;
	i->next = i->prev = NULL;
	i->cls = NULL;
	spin_unlock_irqrestore(&st->lock, k);
}

/* The static locks (LOCKSTAT_STATIC) join their lists; their counts so far are kept. */
static void link_statics(void)
{
	for (const struct lockstat_static *s = __start_ksync_lockinst;
	     s && s < __stop_ksync_lockinst; s++) {
		const struct lock_class *c = *s->cls;
		if (!c || !c->st || s->inst->cls)
			continue;
		irqkey_t k = spin_lock_irqsave(&c->st->lock);
		s->inst->cls = c;
		list_add(c->st, s->inst);
		spin_unlock_irqrestore(&c->st->lock, k);
	}
}

/* Every live instance's counters become its new zero; the folded totals are cleared. */
static void reset_instances(void)
{
	for (unsigned n = 0; n < lockstat_nclasses(); n++) {
		struct lockstat_cls *st = __start_ksync_lockcls[n].st;
		if (!st)
			continue;
		irqkey_t k = spin_lock_irqsave(&st->lock);
		st->folded_hits = st->folded_migrations = 0;
		for (struct lockstat_inst *i = st->head; i; i = i->next) {
			/* relaxed: a value the holder's counter had during the reset */
			i->hits0 = __atomic_load_n(&i->hits, __ATOMIC_RELAXED);
			i->migrations0 = __atomic_load_n(&i->migrations, __ATOMIC_RELAXED);
		}
		spin_unlock_irqrestore(&st->lock, k);
	}
}

/* The class's instance part, added into *out (after its shards: see lockstat.h). */
static void instances_read(const struct lock_class *c, struct lockstat_snap *out)
{
	struct lockstat_cls *st = c->st;
	if (!st)
		return;
	irqkey_t k = spin_lock_irqsave(&st->lock);
	uint64_t h = st->folded_hits, m = st->folded_migrations;
	for (const struct lockstat_inst *i = st->head; i; i = i->next) {
		/* relaxed: each instance's counter at some moment of this read (the holder
		 * writes it without any ordering toward readers) */
		h += __atomic_load_n(&i->hits, __ATOMIC_RELAXED) - i->hits0;
		m += __atomic_load_n(&i->migrations, __ATOMIC_RELAXED) - i->migrations0;
	}
	out->live = st->live;
	spin_unlock_irqrestore(&st->lock, k);
	out->hits += h;
	out->migrations += m;
}

void lockstat_init(void *mem, size_t bytes)
{
	if (!LOCKSTAT)
		return;
	nclasses = lockstat_nclasses();
	size_t need = lockstat_bytes(arch_ncpus());
	if (need && (!mem || bytes < need || (uintptr_t)mem % _Alignof(struct lockstat_shard)))
		panic("lockstat_init: %u classes' shards on %u CPUs need %lu bytes, 64-byte aligned; "
		      "given %lu at %p", nclasses, arch_ncpus(), (unsigned long)need,
		      (unsigned long)bytes, mem);
	struct lockstat_shard *s = mem;
	if (need)
		memset(s, 0, need);
	for (unsigned c = 0; c < arch_ncpus() && nclasses; c++, s += nclasses) {
		for (unsigned i = 0; i < nclasses; i++)
			s[i].epoch = lockstat_epoch_;
		kcpu_of(c)->lockstat = s;
	}
	link_statics();
	/* release: the shard pointers are visible before any CPU sees the mode on */
	__atomic_store_n(&lockstat_mode_, nclasses ? LOCKSTAT_COUNTS : LOCKSTAT_OFF, __ATOMIC_RELEASE);
}

int lockstat_set_mode(unsigned mode)
{
	if (mode >= LOCKSTAT_NMODES)
		return KSYNC_EINVAL;
	if (!LOCKSTAT)
		return mode == LOCKSTAT_OFF ? KSYNC_OK : KSYNC_ENOTSUP;
	if (!kcpu_of(0)->lockstat)
		return KSYNC_EBUSY;	/* before lockstat_init */
	__atomic_store_n(&lockstat_mode_, mode, __ATOMIC_RELEASE);
	return KSYNC_OK;
}

unsigned lockstat_mode(void) { return lockstat_on(); }

void lockstat_reset(void)
{
	if (!LOCKSTAT)
		return;
	/* relaxed: each CPU's next update sees the new epoch or the old; either is a
	 * moment of the reset's interval */
	__atomic_fetch_add(&lockstat_epoch_, 1, __ATOMIC_RELAXED);
	reset_instances();
}

/* ---- the writer's side ------------------------------------------------------------------ */

struct lockstat_shard *lockstat_open_slow(struct lockstat_shard *s, uint32_t epoch)
{
	uint32_t q = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&s->seq, q + 1, __ATOMIC_RELAXED);	/* as lockstat_open */
	/* zero every counter word-wise with release stores (as LOCKSTAT_SET) */
	uint64_t *w = &s->hits;
	uint64_t *end = (uint64_t *)(s + 1);
	for (; w < end; w++)
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->epoch, epoch, __ATOMIC_RELEASE);
	return s;
}

static unsigned bucket(uint64_t ticks)
{
	unsigned b = ticks ? 64u - (unsigned)__builtin_clzll(ticks) : 0;
	return b < LOCKSTAT_HIST ? b : LOCKSTAT_HIST - 1;
}

void lockstat_time_add(struct lockstat_time *t, uint64_t ticks)
{
	uint64_t n = __atomic_load_n(&t->n, __ATOMIC_RELAXED);
	if (n == 0 || ticks < __atomic_load_n(&t->min, __ATOMIC_RELAXED))
		LOCKSTAT_SET(t->min, ticks);
	LOCKSTAT_MAX(t->max, ticks);
	LOCKSTAT_SET(t->n, n + 1);
	LOCKSTAT_ADD(t->total, ticks);
	LOCKSTAT_ADD(t->hist[bucket(ticks)], 1);
}

/* Space-saving top-k: an unseen site replaces the entry with the least wait (then the
 * fewest misses), so the heaviest sites stay. */
void lockstat_site_add(struct lockstat_shard *s, const char *site, uint64_t wait)
{
	struct lockstat_site *victim = &s->sites[0];
	for (unsigned i = 0; i < LOCKSTAT_SITES; i++) {
		struct lockstat_site *e = &s->sites[i];
		const char *name = __atomic_load_n(&e->site, __ATOMIC_RELAXED);
		if (name == site) {
			LOCKSTAT_ADD(e->n, 1);
			LOCKSTAT_ADD(e->wait, wait);
			return;
		}
		if (!name) {
			victim = e;
			break;
		}
		uint64_t vw = __atomic_load_n(&victim->wait, __ATOMIC_RELAXED);
		uint64_t ew = __atomic_load_n(&e->wait, __ATOMIC_RELAXED);
		if (ew < vw || (ew == vw && __atomic_load_n(&e->n, __ATOMIC_RELAXED) <
					     __atomic_load_n(&victim->n, __ATOMIC_RELAXED)))
			victim = e;
	}
	LOCKSTAT_SET(victim->site, site);
	LOCKSTAT_SET(victim->n, 1);
	LOCKSTAT_SET(victim->wait, wait);
}

static void note(const struct lock_class *c, unsigned what)
{
	if (!lockstat_on())
		return;
	irqkey_t k = arch_irq_save();
	struct lockstat_shard *s = lockstat_open(c);
	if (what == 0)
		LOCKSTAT_ADD(s->created, 1);
	else if (what == 1)
		LOCKSTAT_ADD(s->destroyed, 1);
	else
		LOCKSTAT_ADD(s->futile, 1);
	lockstat_close(s);
	arch_irq_restore(k);
}

void lockstat_note_created(const struct lock_class *c) { note(c, 0); }
void lockstat_note_destroyed(const struct lock_class *c) { note(c, 1); }
void lockstat_note_futile(const struct lock_class *c) { note(c, 2); }

/* ---- the reader's side ----------------------------------------------------------------- */

/* acquire: a counter load is not reordered after the shard's re-read of its count (no
 * fence: see lockstat_open) */
#define LD(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)

static void time_merge(struct lockstat_time *into, const struct lockstat_time *t)
{
	uint64_t n = LD(t->n);
	if (!n)
		return;
	uint64_t mn = LD(t->min), mx = LD(t->max);
	if (!into->n || mn < into->min)
		into->min = mn;
	if (mx > into->max)
		into->max = mx;
	into->n += n;
	into->total += LD(t->total);
	for (unsigned i = 0; i < LOCKSTAT_HIST; i++)
		into->hist[i] += LD(t->hist[i]);
}

static void site_merge(struct lockstat_site *all, unsigned *nall, unsigned cap,
		       const struct lockstat_site *e)
{
	const char *name = LD(e->site);
	if (!name)
		return;
	for (unsigned i = 0; i < *nall; i++) {
		if (all[i].site == name) {
			all[i].n += LD(e->n);
			all[i].wait += LD(e->wait);
			return;
		}
	}
	if (*nall < cap)
		all[(*nall)++] = (struct lockstat_site){ name, LD(e->n), LD(e->wait) };
}

/* One shard's consistent copy, added into *out (sites into all[]). Returns retries. */
static unsigned shard_read(const struct lockstat_shard *s, uint32_t epoch, struct lockstat_snap *out,
			   struct lockstat_site *all, unsigned *nall, unsigned cap)
{
	struct lockstat_snap one;
	struct lockstat_site sites[LOCKSTAT_SITES];
	unsigned retries = 0;
	for (;;) {
		/* acquire: the counters read below are at least as new as this count */
		uint32_t q0 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (q0 & 1) {
			retries++;
			arch_cpu_relax();
			continue;
		}
		if (LD(s->epoch) != epoch)
			return retries;		/* zero since the reset: nothing to add */
		memset(&one, 0, sizeof one);
		one.hits = LD(s->hits);
		one.misses = LD(s->misses);
		one.spins = LD(s->spins);
		one.sleeps = LD(s->sleeps);
		one.wakeups = LD(s->wakeups);
		one.futile = LD(s->futile);
		one.migrations = LD(s->migrations);
		one.created = LD(s->created);
		one.destroyed = LD(s->destroyed);
		one.max_queue = LD(s->max_queue);
		time_merge(&one.wait, &s->wait);
		time_merge(&one.hold, &s->hold);
		time_merge(&one.irqoff, &s->irqoff);
		for (unsigned i = 0; i < LOCKSTAT_SITES; i++)
			sites[i] = (struct lockstat_site){ LD(s->sites[i].site), LD(s->sites[i].n),
							   LD(s->sites[i].wait) };
		/* the counter loads above were acquire loads: they come before this re-read */
		if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == q0)
			break;
		retries++;
	}
	out->hits += one.hits;
	out->misses += one.misses;
	out->spins += one.spins;
	out->sleeps += one.sleeps;
	out->wakeups += one.wakeups;
	out->futile += one.futile;
	out->migrations += one.migrations;
	out->created += one.created;
	out->destroyed += one.destroyed;
	if (one.max_queue > out->max_queue)
		out->max_queue = one.max_queue;
	time_merge(&out->wait, &one.wait);
	time_merge(&out->hold, &one.hold);
	time_merge(&out->irqoff, &one.irqoff);
	for (unsigned i = 0; i < LOCKSTAT_SITES; i++)
		site_merge(all, nall, cap, &sites[i]);
	return retries;
}

void lockstat_read(const struct lock_class *c, struct lockstat_snap *out)
{
	memset(out, 0, sizeof *out);
	out->cls = c;
	if (!LOCKSTAT || !kcpu_of(0)->lockstat)
		return;
	uint32_t epoch = __atomic_load_n(&lockstat_epoch_, __ATOMIC_RELAXED);
	unsigned idx = (unsigned)(c - __start_ksync_lockcls);
	struct lockstat_site all[LOCKSTAT_SITES * 4];
	unsigned nall = 0;
	for (unsigned cpu = 0; cpu < arch_ncpus(); cpu++)
		out->retries += shard_read(kcpu_of(cpu)->lockstat + idx, epoch, out, all, &nall,
					   ARRAY_SIZE(all));
	/* after the shards: a hit is counted in its lock before its miss, wait and hold
	 * reach a shard, so this order reads hits >= those (lockstat.h) */
	instances_read(c, out);
	/* most wait first, then most misses */
	for (unsigned i = 0; i < nall; i++)
		for (unsigned j = i + 1; j < nall; j++)
			if (all[j].wait > all[i].wait ||
			    (all[j].wait == all[i].wait && all[j].n > all[i].n)) {
				struct lockstat_site t = all[i];
				all[i] = all[j];
				all[j] = t;
			}
	for (unsigned i = 0; i < nall && i < LOCKSTAT_SITES; i++)
		out->sites[i] = all[i];
}

/* ---- output ----------------------------------------------------------------------------- */

/* One line is built here, then written whole (kwrite): other CPUs' lines cannot split it.
 * One emitter at a time (the experiment's or test's thread). */
static char line[4096];
static size_t len;

__attribute__((format(printf, 1, 2))) static void put(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = kvsnprintf(line + len, sizeof line - len, fmt, ap);
	va_end(ap);
	len += (size_t)n;
	if (len >= sizeof line)
		panic("lockstat_emit: a line outgrew its %lu-byte buffer", (unsigned long)sizeof line);
}

static void emit_time(const char *name, const struct lockstat_time *t)
{
	put(",\"%s\":{\"n\":%lu,\"total\":%lu,\"min\":%lu,\"max\":%lu,\"hist\":[", name,
	    (unsigned long)t->n, (unsigned long)t->total, (unsigned long)t->min,
	    (unsigned long)t->max);
	unsigned top = LOCKSTAT_HIST;
	while (top > 0 && t->hist[top - 1] == 0)
		top--;
	for (unsigned i = 0; i < top; i++)
		put("%s%lu", i ? "," : "", (unsigned long)t->hist[i]);
	put("]}");
}

void lockstat_emit(const char *tag, uint64_t elapsed_ticks, bool all)
{
	static struct lockstat_snap snap;
	unsigned n = lockstat_nclasses();
	for (unsigned i = 0; i < n; i++) {
		const struct lock_class *c = &__start_ksync_lockcls[i];
		lockstat_read(c, &snap);
		if (!all && !snap.hits && !snap.misses && !snap.created && !snap.futile &&
		    !snap.wakeups)
			continue;
		len = 0;
		put("KSYNC {\"kind\":\"lockstat\",%s%s\"class\":\"%s\",\"lock_kind\":\"%s\","
		    "\"use\":\"%s\",\"defined\":\"%s:%d\",\"mode\":\"%s\",\"cpus\":%u,"
		    "\"elapsed_ticks\":%lu,\"hits\":%lu,\"misses\":%lu,\"spins\":%lu,"
		    "\"sleeps\":%lu,\"wakeups\":%lu,\"futile\":%lu,\"migrations\":%lu,"
		    "\"created\":%lu,\"destroyed\":%lu,\"live\":%lu,\"max_queue\":%lu,\"retries\":%u",
		    tag ? tag : "", tag && *tag ? "," : "", c->name, lock_kind_name(c->kind),
		    lock_use_name(c->use), c->file, c->line, lockstat_mode_name(lockstat_on()),
		    arch_ncpus(), (unsigned long)elapsed_ticks, (unsigned long)snap.hits,
		    (unsigned long)snap.misses, (unsigned long)snap.spins,
		    (unsigned long)snap.sleeps, (unsigned long)snap.wakeups,
		    (unsigned long)snap.futile, (unsigned long)snap.migrations,
		    (unsigned long)snap.created, (unsigned long)snap.destroyed,
		    (unsigned long)snap.live, (unsigned long)snap.max_queue, snap.retries);
		emit_time("wait", &snap.wait);
		emit_time("hold", &snap.hold);
		emit_time("irqoff", &snap.irqoff);
		put(",\"sites\":[");
		for (unsigned s = 0; s < LOCKSTAT_SITES && snap.sites[s].site; s++)
			put("%s{\"site\":\"%s\",\"n\":%lu,\"wait\":%lu}", s ? "," : "",
			    snap.sites[s].site, (unsigned long)snap.sites[s].n,
			    (unsigned long)snap.sites[s].wait);
		put("]}\n");
		kwrite(line, len);
	}
}
