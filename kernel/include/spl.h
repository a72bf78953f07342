/*
 * spl.h - interrupt priority levels and critical sections, one scheme per kernel build.
 *
 * Small & Manley 1997, "A Revisitation of Kernel Synchronization Schemes", sections 3
 * (the four schemes, their pseudo-code), 5 (the cost model, Table 2) and 7.1 (their
 * proposal cli-spl-pessim); Stodolsky et al. 1993 for the optimistic idea; NetBSD's amd64
 * spl.S for the lazy level with pending bits lowered by one cmpxchg.
 *
 * Interface (every scheme):
 *   levels IPL_NONE < IPL_SOFT < IPL_NET < IPL_BIO < IPL_TTY < IPL_CLOCK < IPL_HIGH;
 *   spl_t s = splraise(level)   raise to max(current, level); returns a cookie for splx.
 *   splx(s)                     return to the level the cookie recorded. Lowering only:
 *                               a cookie above the current level is a bug and panics.
 *   spl_t s = splhigh()         splraise(IPL_HIGH).
 *   crit_enter() / crit_leave() the paper's crit_sec_enter/leave: splhigh, nestable.
 * A section at level L holds back every source whose level is <= L (the cli schemes hold
 * back every source at any level above IPL_NONE). Per CPU: a level protects this CPU's
 * data from this CPU's handlers; data shared between CPUs needs a lock as well.
 *
 * The scheme is fixed at build time (make SCHEME=name -> -DKSYNC_SCHEME_<NAME>); its fast
 * path below is inline: no indirect call, no branch on a scheme variable. The slow paths
 * and the interrupt entry live in kernel/spl/<name>.c, whose top comment specifies nested
 * handlers, nested critical sections and replay order for that scheme.
 *
 * Per-CPU state (struct spl_cpu) is written only by its own CPU, by single instructions
 * or an unlocked cmpxchg: an interrupt on the same CPU sees each update whole, and no
 * other CPU reads it while it changes (statistics are read after the CPU has stopped).
 */
#ifndef KSYNC_SPL_H
#define KSYNC_SPL_H

#include "kernel.h"

enum ipl { IPL_NONE, IPL_SOFT, IPL_NET, IPL_BIO, IPL_TTY, IPL_CLOCK, IPL_HIGH, IPL_COUNT };

typedef uint32_t spl_t;		/* cookie: level in bits 0..7, SPL_COOKIE_IF if IF was on */
#define SPL_COOKIE_IF 0x100u
#define SPL_LEVEL(s) ((s) & 0xffu)

/* Pending bits: source slot k of level L is bit 4L+k, so a higher bit never has a lower
 * level and "highest first" is "highest bit first". Bits 28..30 are free; bit 31 is the
 * tpr-optim "CR8 raised by a deferral" marker. */
#define SPL_SLOTS_PER_LEVEL 4
#define SPL_BIT(level, k) ((level) * SPL_SLOTS_PER_LEVEL + (k))
/* Pending bits a level does not hold back: every bit of a strictly higher level. */
#define SPL_ABOVE(level) ((level) >= IPL_HIGH ? 0u : (~0u << (((level) + 1) * SPL_SLOTS_PER_LEVEL)))
#define SPL_TPR_RAISED (1u << 31)
/* Pending bits that may run once the level is `level`: the cli schemes run nothing until
 * the level is back at IPL_NONE (any level holds every source); the others run every
 * strictly higher level. */
#if defined(KSYNC_SCHEME_CLI_PESSIM) || defined(KSYNC_SCHEME_CLI_OPTIM)
#define SPL_RUNNABLE(level) ((level) == IPL_NONE ? ~0u : 0u)
#else
#define SPL_RUNNABLE(level) SPL_ABOVE(level)
#endif

struct spl_cpu {
	union {
		volatile uint64_t istate;	/* both halves, for the lowering cmpxchg */
		struct {
			volatile uint32_t pending;	/* deferred sources and soft interrupts */
			volatile uint32_t ipl;		/* current level */
		};
	};
	uint32_t hwlevel;	/* level the controller mask implements (spl-pessim,
				   cli-spl-pessim, spl-optim's deferral masks: see each file) */
	volatile uint32_t crit_depth;	/* crit_enter nesting (pessimistic schemes) */
	volatile uint32_t crit_flag;	/* optimistic schemes: in a crit_enter section (the paper's
					   in_crit_sec); crit_nest counts the nested ones inside */
	volatile uint32_t crit_nest;
	spl_t crit_saved;	/* cookie of the outermost crit_enter */
	uint32_t intr_depth;	/* handlers running on this CPU (nested ones count) */
	uint16_t deferral_mask;	/* spl-optim: 8259A lines masked by a deferral */
	uint16_t pad;
	uint32_t pad2;
	/* counters, this CPU only */
	uint64_t deferred;	/* interrupts recorded pending instead of handled */
	uint64_t replayed;	/* pending interrupts run (or re-raised) at lowering */
	uint64_t violations;	/* an interrupt arrived that the level should have held */
	uint64_t handlers;	/* handler invocations on this CPU */
	uint64_t handler_ticks;	/* TSC ticks spent inside handler bodies */
	uint64_t clock_recovered; /* clock expiries found while masked, re-raised by software */
	uint64_t clock_late;	/* clock interrupts accepted just before the LVT mask (spl-pessim,
				   cli-spl-pessim): left to the unmask's re-raise */
	uint64_t clock_early;	/* clock handler runs more than half a period before the
				   deadline: a tick delivered twice (must stay 0) */
} __attribute__((aligned(64)));

extern struct spl_cpu spl_cpus[];

static inline struct spl_cpu *spl_self(void) { return &spl_cpus[arch_cpu_id()]; }


/* Slow paths and checks (kernel/spl/intr.c and kernel/spl/<scheme>.c). */
__attribute__((noreturn)) void spl_bad_level(unsigned level);
__attribute__((noreturn)) void spl_bad_splx(spl_t s, unsigned cur);
void spl_lower_slow(struct spl_cpu *c, spl_t s);	/* lower to s, running what is pending */
const char *spl_scheme_name(void);
const char *ipl_name(unsigned level);
/* The local APIC priority class of each level (tpr-* schemes; the clock's vector class). */
extern const uint8_t spl_tpr_class[IPL_COUNT];

#define SPL_CHECK_RAISE(level) do { if ((unsigned)(level) >= IPL_COUNT) spl_bad_level(level); } while (0)
#define SPL_CHECK_LOWER(c, s) do { if (SPL_LEVEL(s) > (c)->ipl) spl_bad_splx((s), (c)->ipl); } while (0)

/* ---------------------------------------------------------------------------------- */
/* The controller mask for a level (8259A IMR bits + the LAPIC timer's LVT mask), for the
 * schemes that mask by level (kernel/spl/intr_hw.c). IF off. */
void spl_mask_setlevel(struct spl_cpu *c, unsigned level);

#if defined(KSYNC_SCHEME_SPL_PESSIM)
#define KSYNC_SCHEME "spl-pessim"
/* Every raise and every lower writes the off-chip controller's mask (with IF off around
 * the update, as the BSD spl implementations did: the mask is several registers). */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		/* IF off while the mask and the level change, so a handler never sees (or
		 * restores) one without the other; mask first, then the level */
		irqkey_t k = arch_irq_save();
		spl_mask_setlevel(c, level);
		c->ipl = level;
		arch_irq_restore(k);
	}
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	if (s < c->ipl) {
		irqkey_t k = arch_irq_save();
		c->ipl = s;
		spl_mask_setlevel(c, s);
		arch_irq_restore(k);		/* what the mask held arrives here */
		if (c->pending & SPL_RUNNABLE(s))
			spl_lower_slow(c, s);
	}
}

#elif defined(KSYNC_SCHEME_SPL_OPTIM) || defined(KSYNC_SCHEME_TPR_OPTIM) || defined(KSYNC_SCHEME_CLI_OPTIM)
#if defined(KSYNC_SCHEME_SPL_OPTIM)
#define KSYNC_SCHEME "spl-optim"
#elif defined(KSYNC_SCHEME_TPR_OPTIM)
#define KSYNC_SCHEME "tpr-optim"
#else
#define KSYNC_SCHEME "cli-optim"
#endif
#if defined(KSYNC_SCHEME_SPL_OPTIM)
/* Raise: one xor of the level field, 8 bytes wide like the splx below that reads the
 * whole word (a 4-byte store followed by an 8-byte load would miss store forwarding and
 * stall). A single instruction, so this CPU's interrupts see the word before or after;
 * a handler leaves the level as it found it, so the field is still s at the xor, and
 * pending bits a deferral set meanwhile are kept. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		uint64_t x = (uint64_t)(s ^ level) << 32;
		__asm__ volatile("xorq %1, %0" : "+m"(c->istate) : "r"(x) : "memory", "cc");
	}
	return s;
}
#else
/* Raise: one store of the logical level. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s)
		c->ipl = level;
	return s;
}
#endif
#if defined(KSYNC_SCHEME_SPL_OPTIM)
/* Lower only if nothing pending above the new level, in one step (NetBSD's cmpxchg8b on
 * ci_istate): an unlocked cmpxchg is atomic with respect to this CPU's interrupts, so a
 * deferral cannot slip in between the check and the store. Otherwise the slow path. */
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	uint64_t old = c->istate;
	for (;;) {
		if ((uint32_t)old & SPL_RUNNABLE(s)) {
			spl_lower_slow(c, s);
			return;
		}
		uint64_t want = ((uint64_t)s << 32) | (uint32_t)old;
		uint64_t seen = old;
		/* no lock prefix: only this CPU (and its interrupts) writes istate */
		__asm__ volatile("cmpxchgq %2, %1" : "+a"(seen), "+m"(c->istate) : "r"(want) : "memory", "cc");
		if (seen == old)
			return;
		old = seen;
	}
}
#else
/* Store, then check. Safe here without the cmpxchg: once something is pending, nothing
 * at or below the level that deferred it can arrive (cli-optim resumed the section with
 * IF clear; tpr-optim raised CR8), so no deferral can fall between the store and the
 * check, and an interrupt that arrives after the store sees the new level. */
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	c->ipl = s;
	__asm__ volatile("" ::: "memory");	/* the check reads pending after the store */
	if (c->pending & SPL_RUNNABLE(s))
		spl_lower_slow(c, s);
}
#endif

#elif defined(KSYNC_SCHEME_CLI_PESSIM)
#define KSYNC_SCHEME "cli-pessim"
/* IF is off exactly when the level is above IPL_NONE (handlers run at IPL_HIGH with IF
 * off), so the level doubles as the saved IF state and nesting needs no pushf. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		if (s == IPL_NONE)
			arch_irq_disable();
		c->ipl = level;
	}
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	if (s < c->ipl) {
		if (c->pending & SPL_RUNNABLE(s)) {
			spl_lower_slow(c, s);
			return;
		}
		c->ipl = s;
		if (s == IPL_NONE)
			arch_irq_enable();
	}
}

#elif defined(KSYNC_SCHEME_CLI_SPL_PESSIM)
#define KSYNC_SCHEME "cli-spl-pessim"
/* Critical sections: cli/sti (the cookie carries IF); handlers: the controller mask. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	if (level == IPL_NONE)			/* holds nothing: no cli */
		return c->ipl | (arch_irq_enabled() ? SPL_COOKIE_IF : 0);
	irqkey_t k = arch_irq_save();
	spl_t s = c->ipl | (arch_irqkey_on(k) ? SPL_COOKIE_IF : 0);
	if (level > c->ipl)
		c->ipl = level;
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	c->ipl = SPL_LEVEL(s);
	if (c->pending & SPL_RUNNABLE(SPL_LEVEL(s))) {
		spl_lower_slow(c, s);
		return;
	}
	if (s & SPL_COOKIE_IF)
		arch_irq_enable();
}

#elif defined(KSYNC_SCHEME_TPR_PESSIM)
#define KSYNC_SCHEME "tpr-pessim"
/* The level is the x86 task priority (CR8): prioritised masking at on-chip cost. */
static inline spl_t splraise(unsigned level)
{
	SPL_CHECK_RAISE(level);
	struct spl_cpu *c = spl_self();
	spl_t s = c->ipl;
	if (level > s) {
		arch_tpr_set(spl_tpr_class[level]);
		c->ipl = level;
	}
	return s;
}
static inline void splx(spl_t s)
{
	struct spl_cpu *c = spl_self();
	SPL_CHECK_LOWER(c, s);
	if (s < c->ipl) {
		c->ipl = s;
		if (c->pending & SPL_RUNNABLE(s)) {
			spl_lower_slow(c, s);
			return;
		}
		arch_tpr_set(spl_tpr_class[s]);
	}
}

#else
#error "no interrupt scheme selected: build with make SCHEME=<name> (see docs/irq-schemes.md)"
#endif

static inline spl_t splhigh(void) { return splraise(IPL_HIGH); }

#if defined(KSYNC_SCHEME_SPL_OPTIM) || defined(KSYNC_SCHEME_TPR_OPTIM) || defined(KSYNC_SCHEME_CLI_OPTIM)
#define SPL_OPTIMISTIC 1
/* The paper's crit_sec_enter/leave in the optimistic schemes: the flag itself (its
 * in_crit_sec) beside the level - every source is held while it is set (the interrupt
 * entries defer as if the level were IPL_HIGH). Leave: clear the flag, then check the
 * pending bits. No deferral can fall between the two:
 * what the count held is already pending (and held by the fallback - spl-optim masked
 * its line, cli-optim cleared IF, tpr-optim raised CR8 - so it cannot arrive again), and
 * anything arriving after the clearing sees the flag clear. (Unlike splx in spl-optim,
 * a new interrupt of a level between the current one and a pending one may run first in
 * that one-instruction window; splx keeps the atomic lowering.) */
void spl_crit_slow(struct spl_cpu *c);	/* run what became runnable at the current level */
/* The flag is only stored and the nesting count only touched when sections nest: the
 * loads feed predicted branches, not the stores, so no read-modify-write chain runs
 * through memory on the common path (two stores and three loads). */
static inline void crit_enter(void)
{
	struct spl_cpu *c = spl_self();
	if (__builtin_expect(c->crit_flag != 0, 0))
		c->crit_nest++;
	else
		c->crit_flag = 1;
	__asm__ volatile("" ::: "memory");	/* the section's accesses stay after the flag */
}
static inline void crit_leave(void)
{
	struct spl_cpu *c = spl_self();
	__asm__ volatile("" ::: "memory");	/* ... and before its clearing */
	if (__builtin_expect(c->crit_nest != 0, 0)) {
		c->crit_nest--;
		return;
	}
	KASSERT(c->crit_flag);
	c->crit_flag = 0;
	__asm__ volatile("" ::: "memory");	/* the check reads pending after the store */
	if (c->pending & SPL_RUNNABLE(c->ipl))
		spl_crit_slow(c);
}
/* The level that holds sources back now: IPL_HIGH inside crit_enter. */
static inline unsigned spl_effective(struct spl_cpu *c) { return c->crit_flag ? IPL_HIGH : c->ipl; }
#else
#define SPL_OPTIMISTIC 0
/* The paper's crit_sec_enter/leave: splhigh, nestable by a depth count. */
static inline void crit_enter(void)
{
	spl_t s = splhigh();
	struct spl_cpu *c = spl_self();
	if (c->crit_depth++ == 0)
		c->crit_saved = s;
}
static inline void crit_leave(void)
{
	struct spl_cpu *c = spl_self();
	KASSERT(c->crit_depth > 0);
	if (--c->crit_depth == 0)
		splx(c->crit_saved);
}
static inline unsigned spl_effective(struct spl_cpu *c) { return c->ipl; }
#endif

/* The level in force on this CPU (IPL_HIGH inside crit_enter). */
static inline unsigned spl_level(void) { return spl_effective(spl_self()); }

/* Whether what a section held back runs highest level first when it ends. The soft-level
 * schemes replay in software from the pending bits (highest bit first) and the tpr
 * schemes let the local APIC deliver by priority class; the 8259A schemes leave the order
 * to the controllers (the 8259A's fixed line priority against the LAPIC timer), which the
 * kernel does not choose. */
#if defined(KSYNC_SCHEME_SPL_OPTIM) || \
    defined(KSYNC_SCHEME_TPR_PESSIM) || defined(KSYNC_SCHEME_TPR_OPTIM)
#define SPL_REPLAY_ORDERED 1
#else
#define SPL_REPLAY_ORDERED 0
#endif

/* Whether a handler can be interrupted by a higher-level source (IF on in handlers):
 * every scheme but cli-pessim and cli-optim, whose handlers run with IF off. */
#if defined(KSYNC_SCHEME_CLI_PESSIM) || defined(KSYNC_SCHEME_CLI_OPTIM)
#define SPL_HANDLERS_NEST 0
#else
#define SPL_HANDLERS_NEST 1
#endif

/* Whether a section at `level` (entered from thread context) holds back a source of
 * level `src` in this scheme: the rule the tests check. */
static inline bool spl_holds(unsigned level, unsigned src)
{
#if defined(KSYNC_SCHEME_CLI_PESSIM) || defined(KSYNC_SCHEME_CLI_OPTIM) || defined(KSYNC_SCHEME_CLI_SPL_PESSIM)
	(void)src;
	return level > IPL_NONE;
#else
	return src <= level;
#endif
}

#endif
