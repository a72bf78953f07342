/*
 * mlock.c - master locks' slow paths: spinning, statistics, hand-off, errors (issue 11).
 *
 * Hartman & Ousterhout, Sprite, section 2 (master locks: spin locks with interrupts
 * disabled) and section 4 (hits and misses; a master lock's miss is "spins until the lock
 * is free, then locks it": one miss followed by one hit). Test-and-test-and-set, ticket
 * (Mellor-Crummey & Scott 1991, section 2.2) and MCS (ibid., section 2.4, Algorithm 5),
 * chosen per lock. The fast paths are inline in kernel/include/mlock.h.
 *
 * The master locks sit below the scheduler (it takes them): the messages name a holder by
 * CPU and resolve the thread running there through panic_thread_on (kernel.h), whose
 * namer the scheduler registers - this file calls nothing of kernel/sched/.
 */
#include "mlock.h"
#include <ksync/errors.h>

/* Each CPU's MCS queue nodes, one per master lock it may hold at once (kcpu.mcs_used says
 * which are in use; written by their CPU with interrupts masked, `locked` by the
 * predecessor at hand-off). */
struct mcs_node mlock_mcs_nodes[MAX_CPUS][MLOCK_NEST_MAX];

/* Each CPU's statistics of the master locks it holds, by depth (mlock.h). */
struct mlock_hstat_row mlock_hstat[MAX_CPUS];

static const char *const algo_names[MLOCK_NALGOS] = { "tas", "ticket", "mcs" };

static int holder_cpu(const struct mlock *l);

/* The holder's acquire site (its CPU's slot; recorded only while statistics are on; read
 * racily from another CPU: for a message). */
static const char *held_site(const struct mlock *l)
{
	int c = holder_cpu(l);
	const char *s = NULL;
	if (c >= 0) {
		const struct kcpu *kc = kcpu_of((unsigned)c);
		for (unsigned i = 0; i < MLOCK_NEST_MAX && i < kc->mlock_depth; i++)
			if (__atomic_load_n(&kc->mlock_held[i], __ATOMIC_RELAXED) == l)
				s = __atomic_load_n(&mlock_hstat[c].s[i].site, __ATOMIC_RELAXED);
	}
	return lockstat_on() && s ? s : "? (sites are recorded while statistics are on)";
}


const char *mlock_algo_name(unsigned algo)
{
	return algo < MLOCK_NALGOS ? algo_names[algo] : "?";
}

int mlock_algo_parse(const char *name)
{
	for (unsigned i = 0; name && i < MLOCK_NALGOS; i++)
		if (!strcmp(name, algo_names[i]))
			return (int)i;
	return KSYNC_EINVAL;
}

int mlock_init_at(struct mlock *l, const struct lock_class *c, unsigned algo, const char *site)
{
	if (!l || !c || algo >= MLOCK_NALGOS)
		return KSYNC_EINVAL;
	memset(l, 0, sizeof *l);
	l->algo = (uint8_t)algo;
	l->cls = c;
	l->init_site = site;
	lockstat_inst_add(c, &l->st);
	return KSYNC_OK;
}

/* The CPU whose held list has l, or -1. Another CPU's list changes under us: good
 * enough for a message or an assertion about a lock the caller expects to be quiet. */
static int holder_cpu(const struct mlock *l)
{
	for (unsigned c = 0; c < arch_ncpus(); c++) {
		const struct kcpu *kc = kcpu_of(c);
		unsigned d = __atomic_load_n(&kc->mlock_depth, __ATOMIC_RELAXED);
		for (unsigned i = 0; i < d && i < MLOCK_NEST_MAX; i++)
			if (__atomic_load_n(&kc->mlock_held[i], __ATOMIC_RELAXED) == l)
				return (int)c;
	}
	return -1;
}

bool mlock_held(const struct mlock *l)
{
	const struct kcpu *kc = kcpu_this();
	for (unsigned i = 0; i < kc->mlock_depth; i++)
		if (kc->mlock_held[i] == l)
			return true;
	return false;
}

void mlock_destroy(struct mlock *l)
{
	int h = holder_cpu(l);
	if (h >= 0)
		panic("mlock_destroy: master lock of class '%s' (init %s) is held by cpu %d (acquired at %s)",
		      l->cls->name, l->init_site, h, held_site(l));
	lockstat_inst_del(&l->st);	/* its hits and migrations fold into the class */
}

__attribute__((noreturn)) static void bad_release(const struct mlock *l, const char *site)
{
	unsigned me = arch_cpu_id();
	int h = holder_cpu(l);
	if (h < 0)
		panic("mlock: master lock of class '%s' (init %s) released at %s by cpu %u thread '%s', "
		      "but nobody holds it", l->cls->name, l->init_site, site, me, panic_thread_on(me));
	panic("mlock: master lock of class '%s' (init %s) released at %s by cpu %u thread '%s', "
	      "but its holder is cpu %d thread '%s' (acquired at %s)", l->cls->name, l->init_site,
	      site, me, panic_thread_on(me), h, panic_thread_on((unsigned)h), held_site(l));
}

void mlock_too_deep(const struct mlock *l, const char *site)
{
	unsigned me = arch_cpu_id();
	panic("mlock: cpu %u thread '%s' holds %u master locks and asks for class '%s' at %s "
	      "(innermost held: '%s', acquired at %s)", me, panic_thread_on(me), MLOCK_NEST_MAX,
	      l->cls->name, site, kcpus[me].mlock_held[MLOCK_NEST_MAX - 1]->cls->name,
	      mlock_hstat[me].s[MLOCK_NEST_MAX - 1].site ? mlock_hstat[me].s[MLOCK_NEST_MAX - 1].site : "?");
}

/* Released out of order: take l out of the held list wherever it is (its statistics slot
 * with it: the slots follow the list). */
void mlock_unheld_slow(struct kcpu *kc, const struct mlock *l, const char *site,
		       struct mlock_hstat *hs)
{
	unsigned d = kc->mlock_depth;
	struct mlock_hstat *row = mlock_hstat[kc - kcpus].s;
	for (unsigned i = d; i-- > 0;) {
		if (kc->mlock_held[i] != l)
			continue;
		*hs = row[i];
		for (unsigned j = i; j + 1 < d; j++) {
			__atomic_store_n(&kc->mlock_held[j], kc->mlock_held[j + 1], __ATOMIC_RELAXED);
			row[j] = row[j + 1];
		}
		__atomic_store_n(&kc->mlock_depth, d - 1, __ATOMIC_RELAXED);
		return;
	}
	bad_release(l, site);
}

void mlock_assert_none_slow(const char *what, const char *site)
{
	unsigned me = arch_cpu_id();
	struct kcpu *kc = kcpu_this();
	const struct mlock *l = kc->mlock_held[kc->mlock_depth - 1];
	panic("%s at %s: cpu %u thread '%s' would sleep holding master lock of class '%s' "
	      "(init %s, acquired at %s; %u held)", what, site, me, panic_thread_on(me), l->cls->name,
	      l->init_site, held_site(l), kc->mlock_depth);
}

/* ---- statistics ------------------------------------------------------------------------ */

/* A contended acquisition (inside the section, the holder): its figures for the release
 * to commit, in this CPU's slot - nothing in the lock (mlock.h). t0: the TSC at the failed
 * attempt (0 unless the mode times waits); in timing mode the acquisition's stamp is both
 * the wait's end and the hold's start. */
static void missed_stat(unsigned me, unsigned mode, uint64_t t0, uint64_t spins)
{
	struct mlock_hstat *hs = &mlock_hstat[me - 1].s[kcpus[me - 1].mlock_depth];
	hs->missed = 1;
	hs->spins = spins;
	uint64_t now = t0 ? arch_cycles() : 0;
	hs->wait = now - t0;
	if (mode == LOCKSTAT_TIMING) {
		hs->t_mask = t0;	/* the mask's start: the failed attempt, near enough */
		hs->t_acq = now;
	}
}

/* The rare parts of a release's commit: a miss, timing (interrupts masked: this CPU's
 * shard). */
void mlock_commit_slow(const struct lock_class *c, const struct mlock_ev *ev)
{
	struct lockstat_shard *s = lockstat_open(c);
	if (ev->hit) {		/* a waiter spun on the lock's line (mlock_release_) */
		LOCKSTAT_ADD(s->hits, 1);
		if (ev->migrated)
			LOCKSTAT_ADD(s->migrations, 1);
	}
	if (ev->missed) {
		LOCKSTAT_ADD(s->misses, 1);
		LOCKSTAT_ADD(s->spins, ev->spins);
		if (ev->wait)
			lockstat_time_add(&s->wait, ev->wait);
		lockstat_site_add(s, ev->site, ev->wait);
	}
	if (ev->hold) {
		lockstat_time_add(&s->hold, ev->hold);
		lockstat_time_add(&s->irqoff, ev->irqoff);
	}
	lockstat_close(s);
}

/* ---- contention ------------------------------------------------------------------------- */

__attribute__((noreturn)) static void recursion(const struct mlock *l, unsigned me, const char *site)
{
	panic("mlock: recursion: cpu %u thread '%s' asks at %s for master lock of class '%s' "
	      "(init %s) that it already holds (acquired at %s)", me - 1, panic_thread_on(me - 1), site,
	      l->cls->name, l->init_site, held_site(l));
}

void mlock_spin_slow(struct mlock *l, unsigned me, uint32_t ticket, struct mcs_node *mine,
		     const char *site, unsigned mode)
{
	/* the wait's start: the failed attempt was a few instructions ago */
	uint64_t t0 = lockstat_times_waits(mode) ? arch_cycles() : 0;
	if (mlock_held(l))
		recursion(l, me, site);
	uint64_t spins = 0;
	/* Every wait below steps through arch_cpu_relax, and the port gives an
	 * oversubscribed host core back every fixed count of steps (arch/hosted:
	 * HOSTED_RELAX_YIELD_STEPS; x86_64 under QEMU/KVM: the hypervisor's pause-loop
	 * exiting): a waiter for a holder - or, with the ticket lock, for the next ticket's
	 * owner, or with MCS for a successor still linking itself - whose vCPU the host has
	 * descheduled hands that vCPU its core instead of spinning out its time slice (the
	 * convoy: every vCPU on the ticket while the next one waits for a core). A ticket
	 * waiter keeps its ticket across the yield: FIFO order is the lock's contract, and a
	 * descheduled next-in-line needs nothing more than a core - which each of the others
	 * gives back within a bounded count of steps - since no ticket is ever skipped or
	 * abandoned (the waiter holds IRQs off: nothing of the kernel's runs it elsewhere). */
	switch (l->algo) {
	case MLOCK_TAS:
		for (;;) {
			/* test, then test-and-set: spin on a shared copy of the line */
			while (__atomic_load_n(&l->u.tas, __ATOMIC_RELAXED) != 0) {
				arch_cpu_relax();
				spins++;
			}
			/* acquire: as in the fast path */
			if (__atomic_exchange_n(&l->u.tas, 1, __ATOMIC_ACQUIRE) == 0)
				break;
		}
		break;
	case MLOCK_TICKET:
		/* acquire: the previous holder's section happens-before ours */
		while (__atomic_load_n(&l->u.tk.serving, __ATOMIC_ACQUIRE) != ticket) {
			arch_cpu_relax();
			spins++;
		}
		break;
	default:
		/* acquire: the predecessor's section (it cleared `locked` with release) */
		while (__atomic_load_n(&mine->locked, __ATOMIC_ACQUIRE) != 0) {
			arch_cpu_relax();
			spins++;
		}
		break;
	}
	if (mode) {
		/* a lock that counts its hits in itself must be on its class's list, or they
		 * are never read (a static lock without LOCKSTAT_STATIC: the process table's,
		 * fs_wait's, urandom's and the tty's were, and the Sprite user benchmarks saw
		 * misses without hits). st.cls is written once, at listing (relaxed: a
		 * listing long before any miss). Before the statistics' init mode is 0. */
		if (l->cls->st && !__atomic_load_n(&l->st.cls, __ATOMIC_RELAXED))
			panic("mlock: master lock of class '%s' (init %s) is on no instance list of "
			      "its class: its hits would never be read (a static lock needs "
			      "LOCKSTAT_STATIC, lockstat.h)", l->cls->name, l->init_site);
		missed_stat(me, mode, t0, spins);
	}
}

void mlock_mcs_handoff_slow(struct mlock *l, struct mcs_node *mine)
{
	(void)l;
	struct mcs_node *next;
	/* acquire: the successor's node is initialised (it linked itself with release) */
	while ((next = __atomic_load_n(&mine->next, __ATOMIC_ACQUIRE)) == NULL)
		arch_cpu_relax();	/* it swapped the tail and is about to link itself */
	/* release: our section happens-before the successor's */
	__atomic_store_n(&next->locked, 0, __ATOMIC_RELEASE);
}
