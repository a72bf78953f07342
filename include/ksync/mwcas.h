/*
 * mwcas.h - multi-word compare-and-swap (CAS2 / MWCAS) behind one API, with the three
 * implementations Hohmuth & Härtig discuss, chosen per build.
 *
 * Papers: Hohmuth & Härtig 2001, "Pragmatic nonblocking synchronization for real-time
 * systems": §2.1 (x86 has no CAS2; software MWCAS [Harris et al. and others] is costly;
 * on a uniprocessor the usual technique is to disable interrupts during the update;
 * Bershad's note that on a multiprocessor even readers must take the lock, "otherwise
 * readers can see intermediate states"), §3.2 (global data beyond counters, stacks and
 * queues - e.g. double-linked lists - "implemented in a lock-free fashion, based on a
 * software implementation of MWCAS"; in a kernel protect the update by disabling
 * interrupts; on multiprocessors "use spin locks to protect very short critical
 * sections"), §4.2 (Fiasco's ready, present and sender lists use exactly that
 * simulated MWCAS).  Soft variant: Harris, Fraser & Pratt, "A practical multi-word
 * compare-and-swap operation", DISC 2002 (RDCSS + MCAS descriptors with helping), with
 * the descriptor reuse of Arbel-Raviv & Brown, "Reuse, don't recycle", DISC 2017 (two
 * descriptors per thread, sequence numbers instead of garbage collection).  Gkmz
 * variant: Guerraoui, Kogan, Marathe & Zablotchi, "Efficient Multi-word Compare and
 * Swap", DISC 2020 (arXiv 2008.02527): k + 1 CAS for k words, references left in the
 * words after the operation, with descriptor reuse of our own (see "gkmz" below).
 *
 *   struct ksync_mwcas_op ops[2] = {
 *           { &a, old_a, new_a },
 *           { &b, old_b, new_b },
 *   };
 *   if (ksync_mwcas(ops, 2) == KSYNC_OK) ...      // both swapped, atomically
 *   uint64_t v = ksync_mwcas_read(&a);            // a's logical value
 *
 * ---- the API (identical for every implementation) --------------------------------------
 *
 * int ksync_mwcas(struct ksync_mwcas_op *ops, unsigned n)
 *     If *ops[i].addr == ops[i].expected for every i, write every ops[i].desired and
 *     return KSYNC_OK; otherwise write nothing and return KSYNC_EBUSY.  Atomic
 *     (linearizable) with respect to every other ksync_mwcas and ksync_mwcas_read.
 *     Bad input returns KSYNC_EINVAL and writes nothing: ops NULL, n == 0 or
 *     n > KSYNC_MWCAS_MAX, an addr NULL or not 8-byte aligned, the same addr twice, an
 *     expected or desired value with a reserved bit set (see below).  The soft variant
 *     returns KSYNC_ENOMEM if the calling thread cannot get a descriptor slot
 *     (more than KSYNC_MWCAS_MAX_THREADS threads using it at once); the gkmz
 *     variant too, and also when every descriptor of the caller's pool is still pinned
 *     (see "gkmz"; nothing is written, the caller may retry).  `ops` is not
 *     modified.  On failure it does not say which word differed (read them).
 * uint64_t ksync_mwcas_read(const uint64_t *addr)
 *     The logical value of a word that ksync_mwcas may be changing (for the soft variant
 *     a word can transiently hold a descriptor reference; this returns the value it
 *     stands for).  Precondition: addr non-NULL, 8-byte aligned.
 * int ksync_cas2(a1, o1, n1, a2, o2, n2)
 *     Two-word convenience form (CAS2 as Massalin & Pu's 68030 had it, on two
 *     independent words).
 *
 * Reserved bit: bit 0 of every value (KSYNC_MWCAS_RESERVED).  Values must be even:
 * pointers to 2-byte-aligned objects, or integers shifted left by one
 * (KSYNC_MWCAS_VAL(x) / KSYNC_MWCAS_UNVAL(v)).  Only the soft variant needs the bit (an
 * odd word is a descriptor reference; gkmz too), but every variant rejects odd values with
 * KSYNC_EINVAL, so a program tested with one build behaves the same with the others.
 *
 * Words: while shared, a word must be changed only through ksync_mwcas (never by a
 * plain store or another CAS) and read only through ksync_mwcas_read (a plain load may
 * see a descriptor reference).  Before a word is shared, initialise it with any store.
 * All words given to one variant must be used with that variant only.
 * Gkmz words outlive the operation in one more way: a finished operation's reference
 * stays in the word, and the thread that ran it touches the word again (a load, maybe
 * a CAS) when it retires that descriptor, up to KSYNC_MWCAS_GKMZ_POOL operations later
 * (or at ksync_mwcas_gkmz_flush, or when it gives its slot back: thread exit, hosted).
 * A gkmz word must therefore stay valid memory until every thread that changed it has
 * flushed, run POOL further operations or exited (a descriptor pinned at that moment
 * is retired by the slot's next holder); a plain
 * load of it shows a reference long after the last operation (read it with
 * ksync_mwcas_read_gkmz, or flush first).
 *
 * ---- choosing the implementation -----------------------------------------------------
 *
 * -DKSYNC_MWCAS_IMPL=soft|irq|lock|gkmz (default soft) maps ksync_mwcas/ksync_mwcas_read to
 * one of the functions below at compile time (no indirect call, no run-time branch).
 * The choice must be the same in every translation unit that shares words.  Every
 * variant can also be called by its own name (ksync_mwcas_soft, ...), which is how the
 * tests check all three in one binary.
 *
 *   soft  ksync_mwcas_soft / ksync_mwcas_read_soft: lock-free on SMP.  Harris-Fraser-
 *         Pratt: phase 1 installs a reference to the operation's descriptor into each
 *         word in address order, each by an RDCSS ("restricted double-compare single-
 *         swap": install only while the descriptor is still UNDECIDED); one CAS on the
 *         descriptor's status decides SUCCEEDED or FAILED (the linearization point);
 *         phase 2 replaces the references by the new (or old) values.  A thread that
 *         meets another operation's reference helps it to its decision first, so a
 *         preempted thread never stops the others.  Cost uncontended: 3n+1 CAS
 *         (per word an RDCSS install and its completion, the decision, per word a
 *         clean-up).
 *         mwcas: lock-free.  read: lock-free (never writes; it interprets a reference
 *         through the descriptor, retrying only if that descriptor was reused).
 *   irq   ksync_mwcas_irq / ksync_mwcas_read_irq: Hohmuth & Härtig §2.1, §4.2 (Fiasco):
 *         KSYNC_IRQ_SAVE(); compare all words; write all words; KSYNC_IRQ_RESTORE(k).
 *         Correct on ONE CPU only (or for words only one CPU touches, as Fiasco's
 *         per-CPU ready lists).  mwcas: wait-free (n loads + n stores, no loop).
 *         read: wait-free (one load).
 *   lock  ksync_mwcas_lock / ksync_mwcas_read_lock: Hohmuth & Härtig §3.2 on SMP: a
 *         spin lock around the same compare-and-write, with interrupts disabled through
 *         KSYNC_IRQ_SAVE (a no-op hosted) so a handler on the same CPU cannot spin on a
 *         lock its CPU holds.  Striped: KSYNC_MWCAS_STRIPES cache-line-sized locks, a word
 *         maps to a stripe by a hash of its address; an operation takes its stripes in
 *         ascending order (no deadlock), a read takes the word's stripe (§2.1: readers on
 *         SMP must lock too, or a reader of two words could see half an update).
 *         mwcas: blocking.  read: blocking.
 *   gkmz  ksync_mwcas_gkmz / ksync_mwcas_read_gkmz: lock-free on SMP (with the
 *         KSYNC_ENOMEM exception below).  Guerraoui-Kogan-Marathe-Zablotchi: install a
 *         reference to the operation's descriptor into each word in address order by
 *         one CAS each (expecting exactly what was read: a value, or a reference to a
 *         finished operation, whose logical value is that operation's new or old
 *         value); one CAS on the status decides (the linearization point).  No phase 2:
 *         the words keep the reference; readers and later operations resolve it
 *         through the descriptor.  A thread that meets an UNDECIDED reference helps
 *         that operation first.  Cost uncontended, counted by tests/unit/
 *         test_mwcas_gkmz.c: k + 1 CAS for a success, and nothing else locked - no
 *         exchange, no fetch_add, no mfence.  The clean-up moves to the next use of the
 *         descriptor (a per-thread pool of KSYNC_MWCAS_GKMZ_POOL): a load per word of
 *         the retired operation, plus one CAS per word that still holds its reference
 *         (none when later operations replaced them, e.g. a counter; up to k when the
 *         thread's operations touch always different words: then k + 1 + k_old).  A
 *         failure costs the installs done so far + 1.  Reads cost more than soft's on
 *         clean words: a word nearly always holds a reference (3 loads + the status).
 *         mwcas: lock-free.  read: lock-free (never writes, never helps).
 *
 * ---- interrupt hooks -----------------------------------------------------------------
 *
 * KSYNC_IRQ_KEY_T, KSYNC_IRQ_SAVE() (returns a key) and KSYNC_IRQ_RESTORE(key): defined
 * before this header is included to override.  Kernel builds (KSYNC_KERNEL) default to
 * ksync_irq_key_t / ksync_irq_save() / ksync_irq_restore() from the platform hook
 * header (include/ksync/platform.h -> the kernel's ksync_platform_kernel.h).  The
 * hosted default does nothing: the irq variant is then SINGLE-THREADED ONLY (a stand-in
 * with the kernel's structure, for tests and single-threaded programs); a hosted
 * program may define the hooks (e.g. to block signals) before including this header.
 *
 * ---- the soft variant in detail ------------------------------------------------------
 *
 * A word holding an odd value is a reference: bit 1 says RDCSS (1) or MWCAS (0)
 * descriptor, bits 2..9 the owner's slot, bits 10..63 the descriptor's sequence number.
 *
 * Descriptor reclamation (Arbel-Raviv & Brown): there is no allocation and no garbage
 * collection.  Each slot s (0 <= s < KSYNC_MWCAS_MAX_THREADS) owns exactly one MWCAS
 * descriptor and one RDCSS descriptor in the type-stable arrays of lib/mwcas.c, reused
 * for every operation of the thread holding the slot.  Each reuse increments the
 * descriptor's sequence number before the fields are rewritten (the MWCAS descriptor's
 * sequence number shares a word with its status).  A reference carries the sequence
 * number it was made for, so
 *   - a helper copies the fields, then re-reads the sequence number (seqlock order:
 *     fields, acquire fence, sequence number); a changed number means that operation
 *     is over and every reference to it is gone from memory, so the helper has nothing
 *     to do;
 *   - a late CAS that expects a stale reference fails (the references differ);
 *   - the decision CAS expects (sequence number, UNDECIDED), so a late helper cannot
 *     decide a reused descriptor.
 * The owner reuses its MWCAS descriptor only after its phase 2 has removed every
 * reference: for each word it loops until the word holds neither its reference nor an
 * RDCSS reference that would still install it (a helper that read UNDECIDED just before
 * the decision may complete its RDCSS after the owner's first clean-up CAS - the one
 * change to Harris-Fraser-Pratt, which relies on a garbage collector for this case).
 * The owner of an RDCSS descriptor reuses it only after the reference is out of the
 * word (its own completing CAS, or a helper's, replaced it).  The interleaving explorer
 * checks this (tests/unit/test_explore_mwcas.c): every schedule up to 2 preemptions of
 * its scenarios is linearizable and leaves no reference, and with the original phase 2
 * it finds the stale reference.
 *
 * Slots (what bounds the number of threads): at most KSYNC_MWCAS_MAX_THREADS (128)
 * threads hold a slot at once.  Hosted: a thread gets a slot on its first soft MWCAS
 * and gives it back when it exits (a pthread key destructor) or calls
 * ksync_mwcas_thread_exit(); ksync_mwcas_soft returns KSYNC_ENOMEM when all are taken.
 * Kernel: slot = CPU index (< 64 = MAX_CPUS), and the operation runs with interrupts
 * disabled (KSYNC_IRQ_SAVE) so no other code on that CPU uses the slot meanwhile.
 * Callers with their own thread numbering (and the interleaving explorer, whose
 * coroutines share one OS thread) use __ksync_mwcas_soft(slot, ops, n) with a slot from
 * ksync_mwcas_slot_claim(): the `__` says the caller guarantees that no two threads use
 * one slot at the same time.
 *
 * Memory orders: every access to a user word and to a descriptor's status word is
 * seq_cst, except the owner's store of a new sequence number (relaxed: only the owner
 * writes it, and the seqlock fence orders it).  Phase 2 needs seq_cst: the owner's decision (a CAS) and its later load of a word,
 * against a helper's install CAS on that word and its later load of the status, is the
 * store-buffer pattern; seq_cst forbids both loads reading the old values.  On x86-64
 * these are plain loads and lock cmpxchg, as acq_rel would be.  Descriptor fields are
 * relaxed atomics in seqlock order (owner: sequence number, release fence, fields,
 * then the publishing CAS; helper: fields, acquire fence, sequence number).
 *
 * ---- the gkmz variant in detail ------------------------------------------------------
 *
 * References.  An odd word is a reference: bits 2..9 the owner's slot, 10..11 the pool
 * descriptor, 12..14 the entry (word j of an operation holds the reference with entry j:
 * GKMZ's word descriptor, so resolving reads one entry), 15..63 the descriptor's
 * sequence number.  A word holding one has the logical value new_j if that instance
 * SUCCEEDED, else old_j (UNDECIDED and FAILED).  Instance = (descriptor, seq); a
 * reference value is never reused (49-bit seq per descriptor).
 *
 * Descriptors (ksync__gk_descs[slot][KSYNC_MWCAS_GKMZ_POOL], type-stable, no
 * allocation).  state = (seq << 2) | status.  seq: written only by the slot's holder,
 * which starts an instance (relaxed store; seqlock write order: state, release fence,
 * fields n and e[], then the first install CAS publishes them).  status: CASed from
 * UNDECIDED by anyone holding a reference with that seq (first CAS wins: owner,
 * helper).  Fields: holder-only writes; everyone else reads them in seqlock order
 * (fields relaxed, acquire fence, state) and discards them if the seq changed
 * ("over").  The pool is used round robin; reusing a descriptor first RETIRES its
 * previous instance.
 *
 * Invariants (I1-I3), and what keeps them:
 *   I1  While an instance is UNDECIDED its reference, once in a word, stays there: an
 *       installer that reads an UNDECIDED reference helps instead of replacing it, and
 *       the clean-up touches only finished instances.
 *   I2  Every install CAS that succeeds happens while its instance is UNDECIDED (no
 *       "late install").  Then an instance decided SUCCEEDED held all its words at the
 *       decision (with I1), so its new values are the words' values at that instant,
 *       and a FAILED instance's reference reads as the old value, which the installer
 *       had read as the word's value.  An installer reads the word (content c), reads
 *       the status UNDECIDED, then CASes c -> ref; the CAS is late only if the
 *       instance was decided in between - then (I1) the reference had been installed
 *       by someone else over c and later replaced, and the word holds c again.  A
 *       reference c never comes back (unique; an install of c is itself not late, and
 *       c's instance is decided before anyone replaces it).  A plain value c comes back
 *       only by a retire-time clean-up writing c.  So I2 holds if no clean-up writes c
 *       into a word while an installer that read c there is still before its CAS -
 *       the guard below.
 *   I3  No word holds a reference to an instance that is over (so a reader's retry
 *       terminates): retire cleans every word still holding the old reference, and no
 *       installer can install it afterwards (guard, and installers check the status).
 *
 * Announcements and the guard.  ksync__gk_danger counts (a) helpers in flight: a helper
 * stores the instance in its slot's `help` (relaxed) and then increments danger (seq_cst
 * RMW: a full barrier, so the announcement is visible before its first read of the
 * instance or a word; release part publishes `help`), and undoes both (release store of
 * 0, seq_cst decrement) after its last install CAS; (b) owners that may still be
 * installing while a helper decided their instance: a helper that decides someone
 * else's instance first stores it in the owner slot's `ostale` and increments danger,
 * then CASes the status (decrementing again if its CAS lost); the owner, learning that
 * someone else decided, decrements once it has stopped installing.  An owner needs no
 * announcement of its own otherwise: it can be late only if a helper decided its
 * instance, which (b) records before the decision.  Retiring instance Q at word w with
 * final value X (ksync__gk_reusable): if danger (seq_cst load) is 0, no installer can
 * be in flight before a CAS that expects a value that a clean-up writes back;
 * otherwise for every slot, Q is pinned if `help` or `ostale` names Q (an installer of
 * Q may still be late), or names a SUCCEEDED instance A with an entry at w, A.old == X,
 * while w still holds Q's reference (a stale installer of A may hold c = X).  Why that
 * suffices: a late installer S of A read X at w before A's reference was installed
 * there, which precedes A's decision, Q's install at w and Q's decision, all before the
 * retire's load of danger; S's announcement (or the helper's `ostale` record for an
 * owner S) came before S's read, and all of these are seq_cst, so in the single total
 * order the retire sees danger > 0 and then the announcement.  An installer that
 * announces after that reads w after it too: it sees Q's reference (which never comes
 * back) or the cleaned value (legitimately current).  A FAILED A needs no pin at w (a
 * late install of A reads as A.old = X, the value; the stray reference is A's owner's
 * to clean, and A is pinned for it by the same announcement).  The explorer shows the
 * guard matters (tests/unit/test_explore_mwcas.c: without it a 2-preemption schedule
 * leaves a wrong value / a reference to a reused descriptor).
 *
 * Progress.  Installs, helping (chains, not recursion, in address order as soft) and
 * reads are lock-free.  Retiring never waits: a pinned descriptor is skipped for the
 * next one in the pool; if all KSYNC_MWCAS_GKMZ_POOL are pinned the operation returns
 * KSYNC_ENOMEM without writing.  Pins exist only while another thread is inside a
 * helping pass, or is an owner stopped between a read and an install CAS of an
 * instance a helper decided - so ENOMEM needs POOL such threads stopped at once on
 * this thread's recent instances; the stress test counts none.  This is weaker than
 * soft (which never returns ENOMEM once it has a slot): a thread stopped forever at the
 * wrong point pins up to two descriptors (its `help` and its `ostale` instance) for
 * good.  __ksync_mwcas_gkmz_flush / ksync_mwcas_gkmz_flush retire the whole pool now.
 *
 * Memory orders (gkmz).  Word loads, install CASes, status loads and CASes, danger
 * RMWs and the retire's loads are seq_cst: the guard argument above is stated in the
 * single total order of seq_cst operations (on x86-64: plain loads and lock cmpxchg /
 * lock xadd).  Descriptor fields: relaxed in seqlock order (owner: state, release
 * fence, fields, publishing CAS; readers: fields, acquire fence, state).  `help` and
 * `ostale` stores are relaxed, published by the seq_cst RMW on danger that follows
 * them; `help` is cleared by a release store after the helper's last install CAS.
 * The owner's round-robin cursor `next` is holder-only (plain).
 *
 * Slots: as soft (the same slot table and per-thread slot; kernel: CPU index with
 * interrupts disabled).
 *
 * Test hook: KSYNC_MWCAS_TEST_HOOK(addr) runs in the soft and gkmz variants just before
 * each install CAS (between reading a word and CASing it), empty unless defined before this
 * header is included; tests use it to change a word at exactly that point.
 * KSYNC_MWCAS_TEST_ORIGINAL_PHASE2 (test only, default 0) seeds the bug described
 * under "Descriptor reclamation", for the explorer's test to find.
 */
#ifndef KSYNC_MWCAS_H
#define KSYNC_MWCAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>
#include <ksync/errors.h>
#include <ksync/platform.h>

/* ---- limits and the value encoding ----------------------------------------------- */

#define KSYNC_MWCAS_MAX 8		/* most words per operation */
#define KSYNC_MWCAS_MAX_THREADS 128	/* soft: descriptor slots (<= 256: 8 bits in a ref) */
#define KSYNC_MWCAS_CPU_SLOTS 64	/* kernel: slots 0..63 are the CPUs' (MAX_CPUS) */
#define KSYNC_MWCAS_GKMZ_POOL 4	/* gkmz: descriptors per slot (a power of two, <= 4) */
#define KSYNC_MWCAS_STRIPES 64		/* lock: number of stripe locks (a power of two) */
#define KSYNC__MWCAS_STRIPE_BITS 6	/* log2(KSYNC_MWCAS_STRIPES) */
#define KSYNC_MWCAS_RESERVED 1ull	/* the bit every value must leave clear */
#define KSYNC_MWCAS_VAL(x) ((uint64_t)(x) << 1)	/* integer -> storable value */
#define KSYNC_MWCAS_UNVAL(v) ((uint64_t)(v) >> 1)	/* stored value -> integer */

struct ksync_mwcas_op {
	uint64_t *addr;		/* the word: 8-byte aligned, distinct within one call */
	uint64_t expected;	/* compared with the word's logical value; bit 0 clear */
	uint64_t desired;	/* written if every word matched; bit 0 clear */
};

/* ---- interrupt hooks (see the top) ----------------------------------------------- */

#ifndef KSYNC_IRQ_SAVE
#ifdef KSYNC_KERNEL
/* the platform hook header (ksync_platform_kernel.h) provides the kernel's masking */
#define KSYNC_IRQ_KEY_T ksync_irq_key_t
#define KSYNC_IRQ_SAVE() ksync_irq_save()
#define KSYNC_IRQ_RESTORE(k) ksync_irq_restore(k)
#else
/* Hosted stand-in: provides NO exclusion.  The irq variant is single-threaded only. */
#define KSYNC_IRQ_KEY_T unsigned long
#define KSYNC_IRQ_SAVE() (ksync_compiler_barrier(), 0ul)
#define KSYNC_IRQ_RESTORE(k) ((void)(k), ksync_compiler_barrier())
#endif
#endif
#ifndef KSYNC_IRQ_KEY_T
#define KSYNC_IRQ_KEY_T unsigned long
#endif

#ifndef KSYNC_MWCAS_TEST_HOOK
#define KSYNC_MWCAS_TEST_HOOK(addr) ((void)0)
#endif
/* Test only: how many of the KSYNC_MWCAS_GKMZ_POOL descriptors gkmz uses (1 reuses the
 * descriptor at every operation, which the explorer needs), and (a seeded bug) non-zero
 * NO_GUARD skips the reuse check ksync__gk_reusable.  May be run-time expressions. */
#ifndef KSYNC_MWCAS_GKMZ_TEST_POOL
#define KSYNC_MWCAS_GKMZ_TEST_POOL KSYNC_MWCAS_GKMZ_POOL
#endif
#ifndef KSYNC_MWCAS_GKMZ_TEST_NO_GUARD
#define KSYNC_MWCAS_GKMZ_TEST_NO_GUARD 0
#endif
/* Test only: runs in gkmz each time a thread starts helping another operation. */
#ifndef KSYNC_MWCAS_GKMZ_TEST_ON_HELP
#define KSYNC_MWCAS_GKMZ_TEST_ON_HELP() ((void)0)
#endif
/* Test only (a seeded bug): non-zero makes the owner's phase 2 Harris-Fraser-Pratt's
 * original single CAS per word, which with reused descriptors can leave a stale
 * reference behind (tests/unit/test_explore_mwcas.c shows the explorer finding it).
 * May be a run-time expression in a test. */
#ifndef KSYNC_MWCAS_TEST_ORIGINAL_PHASE2
#define KSYNC_MWCAS_TEST_ORIGINAL_PHASE2 0
#endif

/* ---- shared state (lib/mwcas.c) -------------------------------------------------- */

/* One word of an operation, as a descriptor stores it (addr as an integer so that the
 * u64 atomics can read it). */
struct ksync__mwcas_ent {
	uint64_t addr, old, new_;
};

/* MWCAS descriptor of one slot.  state = (seq << 2) | status: the owner alone stores a
 * new seq (starting an operation); anyone CASes the status from UNDECIDED with the seq
 * it holds a reference for.  n and e[] are written by the owner after the seq, before
 * the first reference is published, and read by helpers in seqlock order. */
struct ksync__mwcas_desc {
	uint64_t state;
	uint64_t n;
	struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];	/* sorted by addr */
} __attribute__((aligned(64)));

/* RDCSS descriptor of one slot: "if *addr == old and the MWCAS named by new_ is still
 * UNDECIDED, *addr = new_".  seq is bumped by the owner before rewriting the fields. */
struct ksync__rdcss_desc {
	uint64_t seq;
	uint64_t addr, old, new_;
} __attribute__((aligned(64)));

/* gkmz: one pool descriptor is a struct ksync__mwcas_desc too (the same fields, the same
 * seqlock snapshot, ksync__desc_snapshot).  state = (seq << 2) | status: the owner alone
 * stores a new seq (retiring the previous instance, which no word references any more
 * and no installer can still install); anyone CASes the status from UNDECIDED with the
 * seq it holds.  n and e[] are written by the owner after the seq (seqlock write) and
 * read by helpers and readers in seqlock order. */

/* gkmz: per-slot announcements, read by cleaners (see "gkmz" at the top).
 *   help    the instance this slot's thread is helping (0: none).  Written only by the
 *           slot's holder: relaxed store then the seq_cst increment of ksync__gk_danger
 *           (whose release part publishes it), cleared by a release store.
 *   ostale  an instance of THIS slot that a helper decided while the owner may still be
 *           between a read and an install CAS.  Written by such helpers (relaxed store
 *           before their seq_cst increment of ksync__gk_danger) and zeroed by the owner
 *           at its next operation; a leftover value only makes cleaners more careful.
 *   next    the holder's round-robin cursor into its pool (holder only, plain). */
struct ksync__gk_slot {
	uint64_t help;
	uint64_t ostale;
	unsigned next;
} __attribute__((aligned(64)));

struct ksync__mwcas_stripe {
	uint32_t lock;	/* 0 free, 1 held; exchange-acquire to take, store-release to drop */
} __attribute__((aligned(64)));

extern struct ksync__mwcas_desc ksync__mwcas_descs[KSYNC_MWCAS_MAX_THREADS];
extern struct ksync__rdcss_desc ksync__rdcss_descs[KSYNC_MWCAS_MAX_THREADS];
extern struct ksync__mwcas_stripe ksync__mwcas_stripes[KSYNC_MWCAS_STRIPES];
extern struct ksync__mwcas_desc ksync__gk_descs[KSYNC_MWCAS_MAX_THREADS][KSYNC_MWCAS_GKMZ_POOL];
extern struct ksync__gk_slot ksync__gk_slots[KSYNC_MWCAS_MAX_THREADS];
/* gkmz: number of announced helpers plus owners counted as possibly stale (see the
 * top); changed only by seq_cst RMWs, read seq_cst by cleaners. */
extern uint64_t ksync__gk_danger;

/*
 * Claim a free slot (returns 0..KSYNC_MWCAS_MAX_THREADS-1) or KSYNC_ENOMEM; give it
 * back with ksync_mwcas_slot_release once the thread has finished its operations.
 * Wait-free (one pass over the slot table).  In the kernel, slots below 64 belong to
 * the CPUs and are never handed out.  Release also retires the slot's gkmz instances
 * (__ksync_mwcas_gkmz_flush: touches their words; lock-free).
 */
int ksync_mwcas_slot_claim(void);
void ksync_mwcas_slot_release(unsigned slot);

#ifndef KSYNC_KERNEL
/* Hosted: the calling thread's slot (-1 until its first ksync_mwcas_soft). */
extern _Thread_local int ksync__mwcas_tls_slot;
/* Claim a slot for the calling thread, remembered in ksync__mwcas_tls_slot and given
 * back at thread exit; returns it or KSYNC_ENOMEM. */
int ksync__mwcas_tls_claim(void);
/* Give the calling thread's slot back now (optional: thread exit does it). */
void ksync_mwcas_thread_exit(void);
#endif

/* ---- input check (all variants) -------------------------------------------------- */

static inline int ksync__mwcas_check(const struct ksync_mwcas_op *ops, unsigned n)
{
	if (ops == NULL)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "ops is NULL");
	if (n == 0 || n > KSYNC_MWCAS_MAX)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "n must be 1..KSYNC_MWCAS_MAX");
	for (unsigned i = 0; i < n; i++) {
		if (ops[i].addr == NULL || ((uintptr_t)ops[i].addr & 7) != 0)
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "addr NULL or not 8-byte aligned");
		if ((ops[i].expected | ops[i].desired) & KSYNC_MWCAS_RESERVED)
			KSYNC_BAD_INPUT(KSYNC_EINVAL, "value has the reserved bit 0 set");
		for (unsigned j = 0; j < i; j++)
			if (ops[j].addr == ops[i].addr)
				KSYNC_BAD_INPUT(KSYNC_EINVAL, "the same addr twice");
	}
	return KSYNC_OK;
}

/* ======================================================================================
 * soft: Harris-Fraser-Pratt MCAS with reused descriptors
 * ====================================================================================== */

enum { KSYNC__MW_UNDECIDED = 0, KSYNC__MW_SUCCEEDED = 1, KSYNC__MW_FAILED = 2 };

#define KSYNC__MW_REF 1ull		/* bit 0: a descriptor reference */
#define KSYNC__MW_RDCSS 2ull		/* bit 1: RDCSS (else MWCAS) descriptor */
#define KSYNC__MW_SLOT_SHIFT 2
#define KSYNC__MW_SEQ_SHIFT 10
#define KSYNC__MW_SEQ_MASK ((1ull << 54) - 1)

static inline uint64_t ksync__mw_ref(bool rdcss, unsigned slot, uint64_t seq)
{
	return KSYNC__MW_REF | (rdcss ? KSYNC__MW_RDCSS : 0) |
	       ((uint64_t)slot << KSYNC__MW_SLOT_SHIFT) | (seq << KSYNC__MW_SEQ_SHIFT);
}
static inline bool ksync__mw_is_mref(uint64_t v)
{
	return (v & (KSYNC__MW_REF | KSYNC__MW_RDCSS)) == KSYNC__MW_REF;
}
static inline bool ksync__mw_is_dref(uint64_t v)
{
	return (v & (KSYNC__MW_REF | KSYNC__MW_RDCSS)) == (KSYNC__MW_REF | KSYNC__MW_RDCSS);
}
static inline unsigned ksync__mw_slot(uint64_t ref)
{
	return (unsigned)(ref >> KSYNC__MW_SLOT_SHIFT) & 0xff;
}
static inline uint64_t ksync__mw_seq(uint64_t ref)
{
	return ref >> KSYNC__MW_SEQ_SHIFT;
}
/* The status word value "instance seq is undecided". */
static inline uint64_t ksync__mw_undecided(uint64_t seq)
{
	return (seq << 2) | KSYNC__MW_UNDECIDED;
}

/*
 * Copy the fields of the MWCAS instance `mref` into e[0..*n) and its status into *st.
 * False if the instance is over (its descriptor was reused): nothing to help, and no
 * word holds `mref` any more.  Seqlock read: fields (relaxed), acquire fence, state.
 */
/* ops[0..n) as descriptor entries in ascending address order (insertion sort: n <= 8):
 * the order every helper installs them in, which keeps helping free of cycles. */
static inline void ksync__mwcas_sorted(const struct ksync_mwcas_op *ops, unsigned n,
				       struct ksync__mwcas_ent *e)
{
	for (unsigned i = 0; i < n; i++) {
		unsigned j = i;

		while (j > 0 && e[j - 1].addr > (uint64_t)(uintptr_t)ops[i].addr) {
			e[j] = e[j - 1];
			j--;
		}
		e[j].addr = (uint64_t)(uintptr_t)ops[i].addr;
		e[j].old = ops[i].expected;
		e[j].new_ = ops[i].desired;
	}
}

/* The owner's seqlock write of a new instance into its descriptor: the new seq with
 * UNDECIDED first (relaxed: only the owner writes a new seq), a release fence ordering it
 * before the field stores, then n and e[]; the instance's first install CAS publishes
 * them all (ksync__desc_snapshot is the reader's side). */
static inline void ksync__desc_publish(struct ksync__mwcas_desc *d, uint64_t seq,
				       const struct ksync__mwcas_ent *e, unsigned n)
{
	ksync_store_relaxed_u64(&d->state, ksync__mw_undecided(seq));
	ksync_fence_release();
	ksync_store_relaxed_u64(&d->n, n);
	for (unsigned j = 0; j < n; j++) {
		ksync_store_relaxed_u64(&d->e[j].addr, e[j].addr);
		ksync_store_relaxed_u64(&d->e[j].old, e[j].old);
		ksync_store_relaxed_u64(&d->e[j].new_, e[j].new_);
	}
}

static inline bool ksync__desc_snapshot(struct ksync__mwcas_desc *d, uint64_t seq,
					struct ksync__mwcas_ent *e, unsigned *n, uint64_t *st)
{
	unsigned k = (unsigned)ksync_load_relaxed_u64(&d->n);
	uint64_t s;

	if (k > KSYNC_MWCAS_MAX)
		k = KSYNC_MWCAS_MAX;	/* torn by a reuse: the check below rejects it */
	for (unsigned j = 0; j < k; j++) {
		e[j].addr = ksync_load_relaxed_u64(&d->e[j].addr);
		e[j].old = ksync_load_relaxed_u64(&d->e[j].old);
		e[j].new_ = ksync_load_relaxed_u64(&d->e[j].new_);
	}
	/* orders the field loads before the state load: if any field came from a later
	 * instance, the state load sees that instance's (larger) seq */
	ksync_fence_acquire();
	s = ksync_load_seq_cst_u64(&d->state);
	if ((s >> 2) != seq)
		return false;
	*n = k;
	*st = s;
	return true;
}

static inline bool ksync__mw_snapshot(uint64_t mref, struct ksync__mwcas_ent *e,
				      unsigned *n, uint64_t *st)
{
	unsigned slot = ksync__mw_slot(mref);

	if (slot >= KSYNC_MWCAS_MAX_THREADS)
		return false;	/* not a reference we made: cannot happen */
	return ksync__desc_snapshot(&ksync__mwcas_descs[slot], ksync__mw_seq(mref), e, n, st);
}

/* Copy the fields of the RDCSS instance `dref`; false if it is over (reference gone). */
static inline bool ksync__rd_snapshot(uint64_t dref, struct ksync__rdcss_desc *out)
{
	unsigned slot = ksync__mw_slot(dref);
	struct ksync__rdcss_desc *r;

	if (slot >= KSYNC_MWCAS_MAX_THREADS)
		return false;
	r = &ksync__rdcss_descs[slot];
	out->addr = ksync_load_relaxed_u64(&r->addr);
	out->old = ksync_load_relaxed_u64(&r->old);
	out->new_ = ksync_load_relaxed_u64(&r->new_);
	ksync_fence_acquire();	/* fields before the seq (seqlock read) */
	return ksync_load_relaxed_u64(&r->seq) == ksync__mw_seq(dref);
}

/*
 * Finish the RDCSS `dref` whose fields are `f`: replace dref in the word by the MWCAS
 * reference f->new_ if that MWCAS is still UNDECIDED, else by the old value f->old.
 * Returns true if it saw the MWCAS undecided.
 */
static inline bool ksync__rd_complete(uint64_t dref, const struct ksync__rdcss_desc *f)
{
	unsigned ms = ksync__mw_slot(f->new_);
	uint64_t exp = dref, st;
	bool undecided;

	if (ms >= KSYNC_MWCAS_MAX_THREADS)
		return false;
	/* seq_cst: see "Memory orders" at the top (the store-buffer case of phase 2) */
	st = ksync_load_seq_cst_u64(&ksync__mwcas_descs[ms].state);
	undecided = st == ksync__mw_undecided(ksync__mw_seq(f->new_));
	ksync_cas_strong_seq_cst_u64((uint64_t *)(uintptr_t)f->addr, &exp,
				     undecided ? f->new_ : f->old);
	return undecided;
}

/* Help the RDCSS `dref` found in a word to completion.  If `only_for` is non-zero, help
 * only an RDCSS that installs that MWCAS reference; returns false if it did not. */
static inline bool ksync__rd_help(uint64_t dref, uint64_t only_for)
{
	struct ksync__rdcss_desc f;

	if (!ksync__rd_snapshot(dref, &f))
		return true;	/* over: the word no longer holds dref; re-read it */
	if (only_for != 0 && f.new_ != only_for)
		return false;
	ksync__rd_complete(dref, &f);
	return true;
}

/*
 * RDCSS with the slot's own RDCSS descriptor (Harris-Fraser-Pratt §3): if *addr == old
 * and the MWCAS `mref` is UNDECIDED, *addr = mref (logically: the word keeps the value
 * old until that MWCAS is decided).  Returns the word's value before: `old` if the
 * install went ahead (*undecided then says whether it installed mref or put old back),
 * anything else if it did not.  Never returns an RDCSS reference (it helps those).
 */
static inline uint64_t ksync__rdcss(unsigned me, uint64_t *addr, uint64_t old,
				    uint64_t mref, bool *undecided)
{
	struct ksync__rdcss_desc *r = &ksync__rdcss_descs[me];
	uint64_t dref = 0, v;

	*undecided = true;
	v = ksync_load_seq_cst_u64(addr);
	for (;;) {
		if (v == old) {
			if (dref == 0) {
				/* new instance: seq first, then the fields (seqlock write) */
				uint64_t seq = (ksync_load_relaxed_u64(&r->seq) + 1) &
					       KSYNC__MW_SEQ_MASK;

				ksync_store_relaxed_u64(&r->seq, seq);
				/* orders the seq store before the field stores */
				ksync_fence_release();
				ksync_store_relaxed_u64(&r->addr, (uint64_t)(uintptr_t)addr);
				ksync_store_relaxed_u64(&r->old, old);
				ksync_store_relaxed_u64(&r->new_, mref);
				dref = ksync__mw_ref(true, me, seq);
			}
			KSYNC_MWCAS_TEST_HOOK(addr);
			/* seq_cst (see the top); publishes the fields written above */
			if (ksync_cas_strong_seq_cst_u64(addr, &v, dref)) {
				struct ksync__rdcss_desc f = { 0, (uint64_t)(uintptr_t)addr, old,
							       mref };

				*undecided = ksync__rd_complete(dref, &f);
				return old;
			}
			continue;	/* v holds the current value */
		}
		if (ksync__mw_is_dref(v)) {
			ksync__rd_help(v, 0);
			v = ksync_load_seq_cst_u64(addr);
			continue;
		}
		return v;
	}
}

static inline uint64_t ksync__mw_help_one(unsigned me, uint64_t mref);

/* Help the chain of operations that starts at the blocker `b` until one is decided. */
static inline void ksync__mw_help_chain(unsigned me, uint64_t b)
{
	while (b != 0)
		b = ksync__mw_help_one(me, b);
}

/*
 * Phase 1 and the decision for the MWCAS instance `mref` (entries e[0..n), sorted).
 * own: the caller owns it; on meeting another operation's reference it helps that one
 * and retries the entry.  Otherwise it returns that reference (the caller then helps
 * it: a chain, never a recursion).  Returns 0 once the instance is decided.
 */
static inline uint64_t ksync__mw_phase1(unsigned me, uint64_t mref,
					const struct ksync__mwcas_ent *e, unsigned n, bool own)
{
	struct ksync__mwcas_desc *d = &ksync__mwcas_descs[ksync__mw_slot(mref)];
	uint64_t seq = ksync__mw_seq(mref);
	uint64_t und = ksync__mw_undecided(seq);
	uint64_t result = KSYNC__MW_SUCCEEDED;

	if (ksync_load_seq_cst_u64(&d->state) != und)
		return 0;	/* decided already, or over */
	for (unsigned j = 0; j < n;) {
		bool undecided;
		uint64_t v = ksync__rdcss(me, (uint64_t *)(uintptr_t)e[j].addr, e[j].old, mref,
					  &undecided);

		if (v == e[j].old || v == mref) {
			if (!undecided)
				return 0;	/* someone decided it meanwhile */
			j++;
			continue;
		}
		if (ksync__mw_is_mref(v)) {
			if (!own)
				return v;
			ksync__mw_help_chain(me, v);
			continue;	/* retry entry j */
		}
		result = KSYNC__MW_FAILED;	/* the word holds another value */
		break;
	}
	/* the linearization point: the first decision CAS wins */
	ksync_cas_strong_seq_cst_u64(&d->state, &und, (seq << 2) | result);
	return 0;
}

/* Help the operation `mref` found in a word: phase 1, decision, simple phase 2.
 * Returns 0 when it is decided (or over), else the reference that blocks it. */
static inline uint64_t ksync__mw_help_one(unsigned me, uint64_t mref)
{
	struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
	unsigned n;
	uint64_t st, b;

	if (!ksync__mw_snapshot(mref, e, &n, &st))
		return 0;
	b = ksync__mw_phase1(me, mref, e, n, false);
	if (b != 0)
		return b;
	st = ksync_load_seq_cst_u64(&ksync__mwcas_descs[ksync__mw_slot(mref)].state);
	if ((st >> 2) != ksync__mw_seq(mref))
		return 0;	/* over: the owner cleaned up */
	for (unsigned j = 0; j < n; j++) {
		uint64_t exp = mref;

		ksync_cas_strong_seq_cst_u64((uint64_t *)(uintptr_t)e[j].addr, &exp,
					     (st & 3) == KSYNC__MW_SUCCEEDED ? e[j].new_
									     : e[j].old);
	}
	return 0;
}

/*
 * The soft MWCAS with an explicit descriptor slot.  Precondition: no other thread uses
 * `slot` during the call (slot from ksync_mwcas_slot_claim, or otherwise exclusive).
 * Lock-free.  Returns as ksync_mwcas; KSYNC_EINVAL also for slot out of range.
 */
static inline int __ksync_mwcas_soft(unsigned slot, struct ksync_mwcas_op *ops, unsigned n)
{
	struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
	struct ksync__mwcas_desc *d;
	uint64_t seq, mref, st;
	int r = ksync__mwcas_check(ops, n);

	if (r != KSYNC_OK)
		return r;
	if (slot >= KSYNC_MWCAS_MAX_THREADS)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "slot out of range");
	ksync__mwcas_sorted(ops, n, e);

	/* a new instance: seq first (it retires the previous instance, which left no
	 * reference behind), then the fields; the first install CAS publishes them */
	d = &ksync__mwcas_descs[slot];
	seq = ((ksync_load_relaxed_u64(&d->state) >> 2) + 1) & KSYNC__MW_SEQ_MASK;
	ksync__desc_publish(d, seq, e, n);
	mref = ksync__mw_ref(false, slot, seq);

	ksync__mw_phase1(slot, mref, e, n, true);

	/* phase 2 by the owner: leave no reference to this instance behind (see the top) */
	st = ksync_load_seq_cst_u64(&d->state);
	for (unsigned j = 0; j < n; j++) {
		uint64_t *a = (uint64_t *)(uintptr_t)e[j].addr;
		uint64_t fin = (st & 3) == KSYNC__MW_SUCCEEDED ? e[j].new_ : e[j].old;

		for (;;) {
			uint64_t v = ksync_load_seq_cst_u64(a);

			if (v == mref) {
				if (ksync_cas_strong_seq_cst_u64(a, &v, fin))
					break;
				continue;
			}
			/* an RDCSS that may still install mref: finish it (it now sees the
			 * decision and puts the old value back), then look again */
			if (!(KSYNC_MWCAS_TEST_ORIGINAL_PHASE2) && ksync__mw_is_dref(v) &&
			    ksync__rd_help(v, mref))
				continue;
			break;
		}
	}
	return (st & 3) == KSYNC__MW_SUCCEEDED ? KSYNC_OK : KSYNC_EBUSY;
}

/* Logical value of a word under the soft variant.  Lock-free; writes nothing. */
static inline uint64_t ksync_mwcas_read_soft(const uint64_t *addr)
{
	for (;;) {
		uint64_t v = ksync_load_seq_cst_u64(addr);

		if ((v & KSYNC__MW_REF) == 0)
			return v;
		if (ksync__mw_is_dref(v)) {
			/* an RDCSS in progress: the word still stands for its old value */
			struct ksync__rdcss_desc f;

			if (ksync__rd_snapshot(v, &f) && f.addr == (uint64_t)(uintptr_t)addr)
				return f.old;
		} else {
			/* an MWCAS reference: old until it is decided, then old or new */
			struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
			unsigned n;
			uint64_t st;

			if (ksync__mw_snapshot(v, e, &n, &st)) {
				for (unsigned j = 0; j < n; j++)
					if (e[j].addr == (uint64_t)(uintptr_t)addr)
						return (st & 3) == KSYNC__MW_SUCCEEDED ? e[j].new_
										       : e[j].old;
			}
		}
		/* the descriptor was reused: the word has changed since; read it again */
	}
}

/* Run `fn` (a slot's MWCAS: __ksync_mwcas_soft or __ksync_mwcas_gkmz) for the caller's
 * slot after the input checks. Kernel: the CPU's slot, interrupts disabled for the
 * duration (see the top). Hosted: the calling thread's slot, claimed on first use. */
static inline __attribute__((always_inline)) int
ksync__mwcas_in_slot(int (*fn)(unsigned, struct ksync_mwcas_op *, unsigned),
				       struct ksync_mwcas_op *ops, unsigned n)
{
	int r = ksync__mwcas_check(ops, n);

	if (r != KSYNC_OK)
		return r;
#ifdef KSYNC_KERNEL
	KSYNC_IRQ_KEY_T k = KSYNC_IRQ_SAVE();
	unsigned cpu = ksync_cpu_id();

	r = cpu < KSYNC_MWCAS_CPU_SLOTS ? fn(cpu, ops, n) : KSYNC_ENOMEM;
	KSYNC_IRQ_RESTORE(k);
	return r;
#else
	int slot = ksync__mwcas_tls_slot;

	if (slot < 0 && (slot = ksync__mwcas_tls_claim()) < 0)
		return KSYNC_ENOMEM;
	return fn((unsigned)slot, ops, n);
#endif
}

static inline int ksync_mwcas_soft(struct ksync_mwcas_op *ops, unsigned n)
{
	return ksync__mwcas_in_slot(__ksync_mwcas_soft, ops, n);
}

/* ======================================================================================
 * gkmz: Guerraoui-Kogan-Marathe-Zablotchi MWCAS (k + 1 CAS uncontended), see the top
 * ====================================================================================== */

/* Reference: bit 0 set, bit 1 clear, bits 2..9 slot, 10..11 pool index, 12..14 entry,
 * 15..63 seq.  The instance reference has entry 0; word j of an instance holds the
 * instance reference with entry j (GKMZ's "word descriptor"), so that resolving a word
 * reads one entry, not the whole descriptor. */
#define KSYNC__GK_SLOT_SHIFT 2
#define KSYNC__GK_IDX_SHIFT 10
#define KSYNC__GK_ENT_SHIFT 12
#define KSYNC__GK_SEQ_SHIFT 15
#define KSYNC__GK_SEQ_MASK ((1ull << 49) - 1)

static inline uint64_t ksync__gk_ref(unsigned slot, unsigned idx, uint64_t seq)
{
	return KSYNC__MW_REF | ((uint64_t)slot << KSYNC__GK_SLOT_SHIFT) |
	       ((uint64_t)idx << KSYNC__GK_IDX_SHIFT) | (seq << KSYNC__GK_SEQ_SHIFT);
}
/* The reference word j of instance `iref` holds, and back. */
static inline uint64_t ksync__gk_wref(uint64_t iref, unsigned j)
{
	return iref | ((uint64_t)j << KSYNC__GK_ENT_SHIFT);
}
static inline uint64_t ksync__gk_inst(uint64_t ref)
{
	return ref & ~(7ull << KSYNC__GK_ENT_SHIFT);
}
static inline unsigned ksync__gk_ent(uint64_t ref)
{
	return (unsigned)(ref >> KSYNC__GK_ENT_SHIFT) & 7;
}
static inline unsigned ksync__gk_slot(uint64_t ref)
{
	return (unsigned)(ref >> KSYNC__GK_SLOT_SHIFT) & 0xff;
}
static inline unsigned ksync__gk_idx(uint64_t ref)
{
	return (unsigned)(ref >> KSYNC__GK_IDX_SHIFT) & (KSYNC_MWCAS_GKMZ_POOL - 1);
}
static inline uint64_t ksync__gk_seq(uint64_t ref)
{
	return ref >> KSYNC__GK_SEQ_SHIFT;
}
static inline struct ksync__mwcas_desc *ksync__gk_desc_of(uint64_t ref)
{
	return &ksync__gk_descs[ksync__gk_slot(ref) % KSYNC_MWCAS_MAX_THREADS]
			       [ksync__gk_idx(ref)];
}

/* Copy the instance `ref` (fields, then its state) into e/n/st; false if it is over
 * (the descriptor was reused: no word holds `ref` any more, no installer can still put
 * it in one).  Seqlock read: fields (relaxed), acquire fence, state. */
static inline bool ksync__gk_snapshot(uint64_t ref, struct ksync__mwcas_ent *e, unsigned *n,
				      uint64_t *st)
{
	return ksync__desc_snapshot(ksync__gk_desc_of(ref), ksync__gk_seq(ref), e, n, st);
}

/* The logical value of the word `addr` that holds the word reference `ref`: its
 * entry's new value if the instance SUCCEEDED, else its old value; *st = the state.
 * False if the instance is over (reused; the word has changed since).  Seqlock read of
 * the one entry: fields (relaxed), acquire fence, state. */
static inline bool ksync__gk_resolve(uint64_t ref, uint64_t addr, uint64_t *val, uint64_t *st)
{
	struct ksync__mwcas_desc *d = ksync__gk_desc_of(ref);
	unsigned j = ksync__gk_ent(ref);
	uint64_t a = ksync_load_relaxed_u64(&d->e[j].addr);
	uint64_t o = ksync_load_relaxed_u64(&d->e[j].old);
	uint64_t nw = ksync_load_relaxed_u64(&d->e[j].new_), s;

	/* orders the field loads before the state load (as in ksync__gk_snapshot) */
	ksync_fence_acquire();
	s = ksync_load_seq_cst_u64(&d->state);
	if ((s >> 2) != ksync__gk_seq(ref) || a != addr)
		return false;
	*val = (s & 3) == KSYNC__MW_SUCCEEDED ? nw : o;
	*st = s;
	return true;
}

static inline void ksync__gk_help_chain(unsigned me, uint64_t b);

/*
 * The install phase and the decision of instance `ref` (entries e[0..n), sorted by
 * address).  own: the caller is the owner (it helps a blocker itself, then retries the
 * entry); otherwise it returns the ACTIVE reference that blocks it (the caller helps:
 * a chain, not a recursion).  Returns 0 once the instance is decided; *decided_by_me
 * says whether this call's decision CAS made the decision.
 */
static inline uint64_t ksync__gk_run(unsigned me, uint64_t ref, const struct ksync__mwcas_ent *e,
				     unsigned n, bool own, bool *decided_by_me)
{
	struct ksync__mwcas_desc *d = ksync__gk_desc_of(ref);
	uint64_t seq = ksync__gk_seq(ref), und = ksync__mw_undecided(seq);
	uint64_t result = KSYNC__MW_SUCCEEDED;

	*decided_by_me = false;
	for (unsigned j = 0; j < n;) {
		uint64_t *a = (uint64_t *)(uintptr_t)e[j].addr;
		/* seq_cst: the cleaner's argument (see the top) orders this read before
		 * the later install CAS of another thread in one total order */
		uint64_t v = ksync_load_seq_cst_u64(a), val = v, wr = ksync__gk_wref(ref, j);

		if (v == wr) {
			j++;	/* installed already (by us or a helper) */
			continue;
		}
		if (v & KSYNC__MW_REF) {
			uint64_t bst;

			if (!ksync__gk_resolve(v, e[j].addr, &val, &bst))
				continue;	/* over: the word has changed; read it again */
			if ((bst & 3) == KSYNC__MW_UNDECIDED) {
				if (!own)
					return v;
				ksync__gk_help_chain(me, v);
				continue;
			}
		}
		if (val != e[j].old) {
			result = KSYNC__MW_FAILED;
			break;
		}
		/* still undecided?  (an install after the decision is the hazard the
		 * cleaner guards against; this check makes it need a preemption here) */
		if (ksync_load_seq_cst_u64(&d->state) != und)
			return 0;
		KSYNC_MWCAS_TEST_HOOK(a);
		/* seq_cst: publishes the descriptor fields (release part) and is a full
		 * barrier for the owner's relaxed setup (see "Memory orders" of gkmz) */
		if (ksync_cas_strong_seq_cst_u64(a, &v, wr))
			j++;
	}
	if (own) {
		/* the linearization point; the first decision CAS wins */
		*decided_by_me = ksync_cas_strong_seq_cst_u64(&d->state, &und, (seq << 2) | result);
		return 0;
	}
	/* a helper deciding someone else's instance: the owner may still be between a read
	 * and an install CAS (stale); make that visible to cleaners before deciding */
	ksync_store_relaxed_u64(&ksync__gk_slots[ksync__gk_slot(ref) % KSYNC_MWCAS_MAX_THREADS].ostale,
				ref);
	/* seq_cst RMW: its release part orders the ostale store before it; in the total
	 * order it precedes the decision, so any cleaner that sees the decision's effects
	 * sees danger > 0 */
	ksync_fetch_add_seq_cst_u64(&ksync__gk_danger, 1);
	*decided_by_me = ksync_cas_strong_seq_cst_u64(&d->state, &und, (seq << 2) | result);
	if (!*decided_by_me)
		ksync_fetch_sub_seq_cst_u64(&ksync__gk_danger, 1);	/* not ours to count */
	return 0;
}

/* Help the ACTIVE instance `b` found in a word (announced in our slot's `help` for the
 * time we may hold a read of a word for it).  Returns 0, or the reference blocking b. */
static inline uint64_t ksync__gk_help_one(unsigned me, uint64_t b)
{
	struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
	struct ksync__gk_slot *s = &ksync__gk_slots[me];
	unsigned n;
	uint64_t st, r = 0;
	bool mine;

	KSYNC_MWCAS_GKMZ_TEST_ON_HELP();
	b = ksync__gk_inst(b);	/* found in a word: its entry bits name that word */
	ksync_store_relaxed_u64(&s->help, b);
	/* seq_cst RMW: orders the announcement before our reads of b's state and words
	 * (store-load: a full barrier), and a cleaner that reads danger > 0 then sees it */
	ksync_fetch_add_seq_cst_u64(&ksync__gk_danger, 1);
	if (ksync__gk_snapshot(b, e, &n, &st) && (st & 3) == KSYNC__MW_UNDECIDED)
		r = ksync__gk_run(me, b, e, n, false, &mine);
	/* release: our install CASes for b happen before a cleaner that reads 0 here */
	ksync_store_release_u64(&s->help, 0);
	ksync_fetch_sub_seq_cst_u64(&ksync__gk_danger, 1);
	return r;
}

static inline void ksync__gk_help_chain(unsigned me, uint64_t b)
{
	while (b != 0)
		b = ksync__gk_help_one(me, b);
}

/*
 * May the finished instance `ref` (entries e[0..n), final state st) of our own pool be
 * cleaned and reused now?  False if an installer may still put `ref` into a word
 * (someone announces it), or if writing a final value back could let a stale install
 * of another, successfully decided, instance succeed (see "Announcements and the
 * guard" at the top).
 */
static inline bool ksync__gk_reusable(uint64_t ref, const struct ksync__mwcas_ent *e, unsigned n,
				      uint64_t st)
{
	/* seq_cst: after our decision and our words' installs in the total order; 0 means
	 * no helper is announced and no owner is stale (see the top) */
	if (ksync_load_seq_cst_u64(&ksync__gk_danger) == 0)
		return true;
	for (unsigned s = 0; s < KSYNC_MWCAS_MAX_THREADS; s++) {
		uint64_t ann[2];

		/* acquire (seq_cst): pairs with the announcer's release/RMW */
		ann[0] = ksync_load_seq_cst_u64(&ksync__gk_slots[s].help);
		ann[1] = ksync_load_seq_cst_u64(&ksync__gk_slots[s].ostale);
		for (int i = 0; i < 2; i++) {
			struct ksync__mwcas_ent ae[KSYNC_MWCAS_MAX];
			unsigned an;
			uint64_t ast;

			if (ann[i] == 0)
				continue;
			if (ann[i] == ref)
				return false;	/* an installer of ours may be late */
			if (!ksync__gk_snapshot(ann[i], ae, &an, &ast) ||
			    (ast & 3) != KSYNC__MW_SUCCEEDED)
				continue;	/* over, or a late install would not change a value */
			for (unsigned j = 0; j < an; j++)
				for (unsigned q = 0; q < n; q++) {
					uint64_t fin = (st & 3) == KSYNC__MW_SUCCEEDED ? e[q].new_
										       : e[q].old;

					if (e[q].addr == ae[j].addr && ae[j].old == fin &&
					    ksync_load_seq_cst_u64((uint64_t *)(uintptr_t)e[q].addr) ==
						    ksync__gk_wref(ref, q))
						return false;
				}
		}
	}
	return true;
}

/*
 * Retire the finished instance in pool descriptor `idx` of `slot` (the caller holds the
 * slot): if ksync__gk_reusable allows, replace its reference in every word that still
 * holds it by the word's final value (the clean-up GKMZ leave to later: this is where
 * it happens) and return true; the descriptor may then be rewritten.  False: pinned.
 * Touches the old instance's words: they must still be valid memory (see the top).
 */
static inline bool ksync__gk_retire(unsigned slot, unsigned idx)
{
	struct ksync__mwcas_ent oe[KSYNC_MWCAS_MAX];
	struct ksync__mwcas_desc *c = &ksync__gk_descs[slot][idx];
	/* relaxed: only the slot's holder writes the state's seq and the fields */
	uint64_t ost = ksync_load_relaxed_u64(&c->state), oref;
	unsigned on = (unsigned)ksync_load_relaxed_u64(&c->n);
	uint64_t danger;
	bool dirty = false;

	if ((ost >> 2) == 0 || on == 0)
		return true;	/* never used, or flushed (no words) */
	if (on > KSYNC_MWCAS_MAX)
		on = KSYNC_MWCAS_MAX;
	oref = ksync__gk_ref(slot, idx, ost >> 2);
	/* the usual case first: no helper or stale owner anywhere (danger 0) and later
	 * operations replaced every reference: then addresses and one load per word.
	 * seq_cst, and BEFORE the word loads: danger 0 here means every installer counted
	 * before our decision has finished its CASes, so the word loads below see them
	 * (a late install of oref after the word loads is then impossible) */
	danger = ksync_load_seq_cst_u64(&ksync__gk_danger);
	for (unsigned j = 0; j < on; j++) {
		oe[j].addr = ksync_load_relaxed_u64(&c->e[j].addr);
		/* seq_cst: see "Announcements and the guard" at the top */
		dirty |= ksync_load_seq_cst_u64((uint64_t *)(uintptr_t)oe[j].addr) ==
			 ksync__gk_wref(oref, j);
	}
	if (!dirty && danger == 0)
		return true;
	for (unsigned j = 0; j < on; j++) {
		oe[j].old = ksync_load_relaxed_u64(&c->e[j].old);
		oe[j].new_ = ksync_load_relaxed_u64(&c->e[j].new_);
	}
	if (!KSYNC_MWCAS_GKMZ_TEST_NO_GUARD && !ksync__gk_reusable(oref, oe, on, ost))
		return false;
	for (unsigned j = 0; j < on; j++) {
		uint64_t *a = (uint64_t *)(uintptr_t)oe[j].addr;
		/* seq_cst: see "Announcements and the guard" at the top */
		uint64_t v = ksync_load_seq_cst_u64(a);

		if (v == ksync__gk_wref(oref, j))	/* else replaced; it never comes back */
			ksync_cas_strong_seq_cst_u64(a, &v,
						     (ost & 3) == KSYNC__MW_SUCCEEDED ? oe[j].new_
										      : oe[j].old);
	}
	return true;
}

/*
 * Retire every finished instance of `slot`'s pool now (the caller holds the slot), so
 * that no word references them and no later operation of this slot touches their
 * words.  Returns KSYNC_OK, or KSYNC_EBUSY if some descriptor is pinned (a helper or a
 * stale owner elsewhere is still in flight: call again).  Lock-free.
 */
static inline int __ksync_mwcas_gkmz_flush(unsigned slot)
{
	int r = KSYNC_OK;

	if (slot >= KSYNC_MWCAS_MAX_THREADS)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "slot out of range");
	for (unsigned i = 0; i < KSYNC_MWCAS_GKMZ_POOL; i++) {
		struct ksync__mwcas_desc *c = &ksync__gk_descs[slot][i];
		uint64_t st = ksync_load_relaxed_u64(&c->state);

		if (!ksync__gk_retire(slot, i)) {
			r = KSYNC_EBUSY;
			continue;
		}
		if ((st >> 2) == 0 || ksync_load_relaxed_u64(&c->n) == 0)
			continue;
		/* a new, empty instance (seq + 1, FAILED, n = 0): references to the old one
		 * are over; seqlock write order as for an operation */
		ksync_store_relaxed_u64(&c->state, ((((st >> 2) + 1) & KSYNC__GK_SEQ_MASK) << 2) |
							   KSYNC__MW_FAILED);
		ksync_fence_release();
		ksync_store_relaxed_u64(&c->n, 0);
	}
	return r;
}

/*
 * The gkmz MWCAS with an explicit slot (precondition as __ksync_mwcas_soft).  Lock-free
 * except KSYNC_ENOMEM (see the top).  Returns as ksync_mwcas.
 */
static inline int __ksync_mwcas_gkmz(unsigned slot, struct ksync_mwcas_op *ops, unsigned n)
{
	struct ksync__mwcas_ent e[KSYNC_MWCAS_MAX];
	struct ksync__gk_slot *me;
	struct ksync__mwcas_desc *d = NULL;
	unsigned idx = 0;
	uint64_t seq, ref, st;
	bool mine;
	int r = ksync__mwcas_check(ops, n);

	if (r != KSYNC_OK)
		return r;
	if (slot >= KSYNC_MWCAS_MAX_THREADS)
		KSYNC_BAD_INPUT(KSYNC_EINVAL, "slot out of range");
	me = &ksync__gk_slots[slot];
	ksync__mwcas_sorted(ops, n, e);
	/* a stale-owner note about our previous instance is obsolete now */
	if (ksync_load_relaxed_u64(&me->ostale) != 0)
		ksync_store_relaxed_u64(&me->ostale, 0);

	/* pick a pool descriptor whose finished instance can be retired (round robin) */
	for (unsigned t = 0; t < (unsigned)(KSYNC_MWCAS_GKMZ_TEST_POOL); t++) {
		unsigned cand = (me->next + 1 + t) % (unsigned)(KSYNC_MWCAS_GKMZ_TEST_POOL);

		if (ksync__gk_retire(slot, cand)) {
			d = &ksync__gk_descs[slot][cand];
			idx = cand;
			break;
		}
	}
	if (d == NULL)
		return KSYNC_ENOMEM;
	me->next = idx;	/* the slot holder's own round-robin cursor (not shared) */

	seq = ((ksync_load_relaxed_u64(&d->state) >> 2) + 1) & KSYNC__GK_SEQ_MASK;
	if (seq == 0)
		seq = 1;
	ksync__desc_publish(d, seq, e, n);
	ref = ksync__gk_ref(slot, idx, seq);

	ksync__gk_run(slot, ref, e, n, true, &mine);
	st = ksync_load_seq_cst_u64(&d->state);
	if (!mine)
		/* decided by a helper, which counted us as a possibly stale owner: we have
		 * stopped installing now */
		ksync_fetch_sub_seq_cst_u64(&ksync__gk_danger, 1);
	return (st & 3) == KSYNC__MW_SUCCEEDED ? KSYNC_OK : KSYNC_EBUSY;
}

/* Logical value of a word under gkmz.  Lock-free; writes nothing; never helps (a word
 * holding an ACTIVE instance reads as that instance's old value). */
static inline uint64_t ksync_mwcas_read_gkmz(const uint64_t *addr)
{
	for (;;) {
		uint64_t v = ksync_load_seq_cst_u64(addr), val, st;

		if ((v & KSYNC__MW_REF) == 0)
			return v;
		if (ksync__gk_resolve(v, (uint64_t)(uintptr_t)addr, &val, &st))
			return val;
		/* the instance is over: the word has changed since; read it again */
	}
}

static inline int ksync_mwcas_gkmz(struct ksync_mwcas_op *ops, unsigned n)
{
	return ksync__mwcas_in_slot(__ksync_mwcas_gkmz, ops, n);
}

#ifdef KSYNC_KERNEL
/* __ksync_mwcas_gkmz_flush for this CPU's slot, interrupts disabled. */
static inline int ksync_mwcas_gkmz_flush(void)
{
	KSYNC_IRQ_KEY_T k = KSYNC_IRQ_SAVE();
	unsigned cpu = ksync_cpu_id();
	int r = cpu < KSYNC_MWCAS_CPU_SLOTS ? __ksync_mwcas_gkmz_flush(cpu) : KSYNC_OK;

	KSYNC_IRQ_RESTORE(k);
	return r;
}
#else
/* __ksync_mwcas_gkmz_flush for the calling thread's slot (KSYNC_OK if it has none). */
static inline int ksync_mwcas_gkmz_flush(void)
{
	int slot = ksync__mwcas_tls_slot;

	return slot < 0 ? KSYNC_OK : __ksync_mwcas_gkmz_flush((unsigned)slot);
}
#endif

/* ======================================================================================
 * irq: Hohmuth & Härtig's uniprocessor MWCAS (interrupts off around compare + write)
 * ====================================================================================== */

static inline int ksync_mwcas_irq(struct ksync_mwcas_op *ops, unsigned n)
{
	KSYNC_IRQ_KEY_T k;
	int r = ksync__mwcas_check(ops, n);

	if (r != KSYNC_OK)
		return r;
	/* with interrupts off nothing else runs on this CPU: the loads and stores need no
	 * order beyond program order (the hooks are compiler barriers) */
	k = KSYNC_IRQ_SAVE();
	for (unsigned i = 0; i < n; i++) {
		if (ksync_load_relaxed_u64(ops[i].addr) != ops[i].expected) {
			KSYNC_IRQ_RESTORE(k);
			return KSYNC_EBUSY;
		}
	}
	for (unsigned i = 0; i < n; i++)
		ksync_store_relaxed_u64(ops[i].addr, ops[i].desired);
	KSYNC_IRQ_RESTORE(k);
	return KSYNC_OK;
}

/* One aligned load is atomic on one CPU. */
static inline uint64_t ksync_mwcas_read_irq(const uint64_t *addr)
{
	return ksync_load_relaxed_u64(addr);
}

/* ======================================================================================
 * lock: striped spin locks (Hohmuth & Härtig §3.2 on SMP)
 * ====================================================================================== */

static inline unsigned ksync__mwcas_stripe(const void *addr)
{
	/* Fibonacci hashing of the word index: neighbouring words land on different
	 * stripes */
	uint64_t x = ((uint64_t)(uintptr_t)addr >> 3) * 0x9E3779B97F4A7C15ull;

	return (unsigned)(x >> (64 - KSYNC__MWCAS_STRIPE_BITS));
}

static inline void ksync__mwcas_stripe_lock(unsigned i)
{
	uint32_t *l = &ksync__mwcas_stripes[i].lock;

	/* acquire: the words read and written under the lock stay after taking it */
	while (ksync_exchange_acquire_u32(l, 1) != 0)
		while (ksync_load_relaxed_u32(l) != 0)	/* spin on a shared line */
			ksync_cpu_relax();
}

static inline void ksync__mwcas_stripe_unlock(unsigned i)
{
	/* release: the words written under the lock are visible to the next holder */
	ksync_store_release_u32(&ksync__mwcas_stripes[i].lock, 0);
}

static inline int ksync_mwcas_lock(struct ksync_mwcas_op *ops, unsigned n)
{
	unsigned s[KSYNC_MWCAS_MAX], ns = 0;
	KSYNC_IRQ_KEY_T k;
	int r = ksync__mwcas_check(ops, n);

	if (r != KSYNC_OK)
		return r;
	/* the distinct stripes, ascending: a global lock order, so no deadlock */
	for (unsigned i = 0; i < n; i++) {
		unsigned x = ksync__mwcas_stripe(ops[i].addr), j = ns;
		bool dup = false;

		for (unsigned q = 0; q < ns; q++)
			dup |= s[q] == x;
		if (dup)
			continue;
		while (j > 0 && s[j - 1] > x) {
			s[j] = s[j - 1];
			j--;
		}
		s[j] = x;
		ns++;
	}
	k = KSYNC_IRQ_SAVE();
	for (unsigned i = 0; i < ns; i++)
		ksync__mwcas_stripe_lock(s[i]);
	/* relaxed: the stripe locks order these accesses (every access to the words goes
	 * through a stripe lock) */
	r = KSYNC_OK;
	for (unsigned i = 0; i < n && r == KSYNC_OK; i++)
		if (ksync_load_relaxed_u64(ops[i].addr) != ops[i].expected)
			r = KSYNC_EBUSY;
	if (r == KSYNC_OK)
		for (unsigned i = 0; i < n; i++)
			ksync_store_relaxed_u64(ops[i].addr, ops[i].desired);
	for (unsigned i = ns; i-- > 0;)
		ksync__mwcas_stripe_unlock(s[i]);
	KSYNC_IRQ_RESTORE(k);
	return r;
}

/* Readers lock too (§2.1): a read is then atomic with respect to every operation that
 * writes the word.  Blocking. */
static inline uint64_t ksync_mwcas_read_lock(const uint64_t *addr)
{
	unsigned s = ksync__mwcas_stripe(addr);
	KSYNC_IRQ_KEY_T k = KSYNC_IRQ_SAVE();
	uint64_t v;

	ksync__mwcas_stripe_lock(s);
	v = ksync_load_relaxed_u64(addr);
	ksync__mwcas_stripe_unlock(s);
	KSYNC_IRQ_RESTORE(k);
	return v;
}

/* ======================================================================================
 * the build's choice
 * ====================================================================================== */

#ifndef KSYNC_MWCAS_IMPL
#define KSYNC_MWCAS_IMPL soft
#endif
#define KSYNC__MWCAS_IS_soft 1
#define KSYNC__MWCAS_IS_irq 1
#define KSYNC__MWCAS_IS_lock 1
#define KSYNC__MWCAS_IS_gkmz 1
#define KSYNC__MWCAS_PASTE(a, b) a##b
#define KSYNC__MWCAS_XPASTE(a, b) KSYNC__MWCAS_PASTE(a, b)
#define KSYNC__MWCAS_STR(x) #x
#define KSYNC__MWCAS_XSTR(x) KSYNC__MWCAS_STR(x)
#if !KSYNC__MWCAS_XPASTE(KSYNC__MWCAS_IS_, KSYNC_MWCAS_IMPL)
#error "KSYNC_MWCAS_IMPL must be soft, irq, lock or gkmz"
#endif

/* The implementation's name as a string ("soft", "irq", "lock", "gkmz"), for reports. */
#define KSYNC_MWCAS_IMPL_NAME KSYNC__MWCAS_XSTR(KSYNC_MWCAS_IMPL)

/* See the top.  Progress: that of the chosen implementation. */
static inline int ksync_mwcas(struct ksync_mwcas_op *ops, unsigned n)
{
	return KSYNC__MWCAS_XPASTE(ksync_mwcas_, KSYNC_MWCAS_IMPL)(ops, n);
}

static inline uint64_t ksync_mwcas_read(const uint64_t *addr)
{
	return KSYNC__MWCAS_XPASTE(ksync_mwcas_read_, KSYNC_MWCAS_IMPL)(addr);
}

/* CAS2 on two independent words: ksync_mwcas of {a1, o1, n1}, {a2, o2, n2}. */
static inline int ksync_cas2(uint64_t *a1, uint64_t o1, uint64_t n1, uint64_t *a2,
			     uint64_t o2, uint64_t n2)
{
	struct ksync_mwcas_op ops[2] = { { a1, o1, n1 }, { a2, o2, n2 } };

	return ksync_mwcas(ops, 2);
}

#endif /* KSYNC_MWCAS_H */
