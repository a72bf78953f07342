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
 * The scheme is fixed at build time (make SCHEME=name -> -DKSYNC_SPL_HEADER="spl/<name>.h";
 * the names are kernel/spl/schemes.txt's): its header kernel/include/spl/<name>.h holds
 * its inline fast path and its 0/1 properties, used with `if (X)`:
 *   SPL_OPTIMISTIC        a critical section only sets a flag (paper section 3.2)
 *   SPL_REPLAY_ORDERED    what a section held back runs highest level first when it ends
 *   SPL_HANDLERS_NEST     a handler can be interrupted by a higher-level source
 *   SPL_HOLDS_ALL         any level above IPL_NONE holds back every source (cli schemes)
 *   SPL_RUN_AT_NONE_ONLY  held sources run only once the level is back at IPL_NONE
 *   SPL_USES_TPR          the levels are local APIC priority classes (tpr schemes)
 * No indirect call, no branch on a scheme variable. The slow paths and the interrupt
 * entry live in kernel/spl/<name>.c, whose top comment specifies nested handlers, nested
 * critical sections and replay order for that scheme.
 *
 * Per-CPU state (struct spl_cpu) is written only by its own CPU, by single instructions
 * or an unlocked cmpxchg: an interrupt on the same CPU sees each update whole, and no
 * other CPU reads it while it changes (statistics are read after the CPU has stopped).
 */
#ifndef KSYNC_SPL_H
#define KSYNC_SPL_H

#include "kernel.h"
#include <ksync/atomic.h>	/* ksync_compiler_barrier: orders against this CPU's handlers only */

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
#define SPL_RUNNABLE(level) (SPL_RUN_AT_NONE_ONLY ? ((level) == IPL_NONE ? ~0u : 0u) : SPL_ABOVE(level))

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
	volatile uint32_t crit_flag;	/* optimistic schemes: nonzero in a crit_enter section (the
					   paper's in_crit_sec), 1 + the sections nested inside */
	uint32_t pad3;
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
	uint64_t clock_stale;	/* clock deliveries after clock_stop (an expiry latched before
				   the stop): dropped, the body does not run */
} __attribute__((aligned(64)));

/* struct kcpu (this CPU's structure, spl at offset 0), kcpu_this(), spl_self() */
#include "kcpu.h"


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

/* ---- the critical-section census (KSYNC_WINDOWS builds only, beside the masked-window
 * tracker: make WINDOWS=1) ----------------------------------------------------------------
 * Small & Manley 1997 section 4 (Table 3: critical sections per second and their mean
 * duration; Table 4: the fraction of sections during which an interrupt arrived; Figure
 * 1: the distribution of their durations), counted from the kernel's own crit_enter /
 * crit_leave sections under real load (issue 26 item 3). Per CPU, only its own CPU
 * writes, every update with IF off (the hooks clear it themselves) so that its own
 * handlers never see half an update; read by /proc/ksync-critsec (kernel/proc/procfs.c)
 * as a snapshot that may lag by the sections in progress.
 *   - a section is an outermost crit_enter..crit_leave; its duration runs from the
 *     enter's masking to the leave's start (before the unmask or the replay), in TSC
 *     ticks, and includes the census's own rdtsc;
 *   - interrupted: a scheme source's interrupt arrived inside it (spl_intr_entry):
 *     deferred by an optimistic section, held by the hardware in a pessimistic one - that
 *     one is taken at the leave's unmask, which `closing` covers (an arrival while it is
 *     set counts the section that just closed; it is cleared once the lowering is done,
 *     before any reschedule);
 *   - a section opened while one is live (a raw IPI's call inside a section: tests only)
 *     counts as part of the outer one (`nest`). */
#ifdef KSYNC_WINDOWS
#define SPL_CENSUS 1
#define SPL_CENSUS_BUCKETS 40	/* bucket b: durations in [2^(b-1), 2^b) ticks, b = 0 for 0 */
struct spl_census {
	uint64_t sections, ticks, interrupted;	/* completed sections */
	uint64_t hist[SPL_CENSUS_BUCKETS];
	uint64_t t0;		/* the live section's start */
	uint32_t live, nest;	/* inside a section; sections opened inside it */
	uint32_t hit, closing;	/* an interrupt arrived inside; a section just closed */
} __attribute__((aligned(64)));
extern struct spl_census spl_census_cpu[MAX_CPUS];
/* the counters other CPUs read (procfs): relaxed atomic load and store by the owner, no
 * lock prefix (one writer); t0, live, nest, hit and closing are the owner's alone */
#define SPL_CENSUS_ADD(x, v) \
	__atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)
static inline struct spl_census *spl_census_self(void) { return &spl_census_cpu[arch_cpu_id()]; }
static inline void spl_census_open(void)
{
	irqkey_t k = arch_irq_save();
	struct spl_census *z = spl_census_self();
	if (z->live) {
		z->nest++;
	} else {
		z->live = 1;
		z->hit = 0;
		z->closing = 0;
		z->t0 = arch_cycles();
	}
	arch_irq_restore(k);
}
static inline void spl_census_close(bool held_to_unmask)
{
	irqkey_t k = arch_irq_save();
	struct spl_census *z = spl_census_self();
	if (z->nest) {
		z->nest--;
	} else if (z->live) {
		uint64_t d = arch_cycles() - z->t0;
		unsigned b = d ? 64u - (unsigned)__builtin_clzll(d) : 0u;
		z->live = 0;
		SPL_CENSUS_ADD(z->sections, 1);
		SPL_CENSUS_ADD(z->ticks, d);
		SPL_CENSUS_ADD(z->hist[b < SPL_CENSUS_BUCKETS ? b : SPL_CENSUS_BUCKETS - 1], 1);
		if (z->hit)
			SPL_CENSUS_ADD(z->interrupted, 1);
		else if (held_to_unmask)
			z->closing = 1;	/* a held interrupt taken at the unmask counts it */
	}
	arch_irq_restore(k);
}
/* after the pessimistic leave's unmask (and in every scheme's lowering slow path, before
 * the reschedule it may make): what the section held has been taken */
static inline void spl_census_unmasked(void)
{
	irqkey_t k = arch_irq_save();
	spl_census_self()->closing = 0;
	arch_irq_restore(k);
}
/* a scheme source's interrupt entry (IF off) */
static inline void spl_census_arrival(void)
{
	struct spl_census *z = spl_census_self();
	if (z->live) {
		z->hit = 1;
	} else if (z->closing) {
		z->closing = 0;
		SPL_CENSUS_ADD(z->interrupted, 1);
	}
}
#else
#define SPL_CENSUS 0
static inline void spl_census_open(void) {}
static inline void spl_census_close(bool held_to_unmask) { (void)held_to_unmask; }
static inline void spl_census_unmasked(void) {}
static inline void spl_census_arrival(void) {}
#endif

#ifndef KSYNC_SPL_HEADER
#error "no interrupt scheme selected: build with make SCHEME=<name> (see docs/irq-schemes.md)"
#endif
#include KSYNC_SPL_HEADER
#ifdef KSYNC_LIST_OPTIMISTIC
_Static_assert(SPL_OPTIMISTIC == KSYNC_LIST_OPTIMISTIC,
	       "kernel/spl/schemes.txt's optimistic column matches the scheme's header");
#endif

/* The level in force on this CPU (IPL_HIGH inside crit_enter). */
static inline unsigned spl_level(void) { return spl_effective(spl_self()); }

/* Whether a section at `level` (entered from thread context) holds back a source of
 * level `src` in this scheme: the rule the tests check. */
static inline bool spl_holds(unsigned level, unsigned src)
{
	if (SPL_HOLDS_ALL)
		return level > IPL_NONE;
	return src <= level;
}

#endif
