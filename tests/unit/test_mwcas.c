/*
 * test_mwcas.c - single-threaded semantics of include/ksync/mwcas.h, every variant
 * (soft, irq, lock) through the same cases: success and failure for n = 1..8 (failure
 * leaves every word unchanged, whichever word differs), bad input (KSYNC_EINVAL, nothing
 * written), ksync_cas2, slots; then the soft variant's machinery driven deterministically
 * through KSYNC_MWCAS_TEST_HOOK: an interfering change between the read and the install
 * CAS (exactly one retry of the caller's loop), helping an operation stopped halfway,
 * and reading words that hold descriptor references.  Last, an informational cost row
 * (TSC ticks, no assertion on time).
 * Hohmuth & Härtig 2001 §2.1, §3.2; Harris, Fraser & Pratt 2002.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>

/* The interference point of the soft variant: runs `hook_fn` once if set. */
static void (*hook_fn)(uint64_t *addr);
static int hook_calls;
#define KSYNC_MWCAS_TEST_HOOK(addr)                                                   \
	do {                                                                          \
		hook_calls++;                                                         \
		if (hook_fn) {                                                        \
			void (*f_)(uint64_t *) = hook_fn;                             \
			hook_fn = 0;                                                  \
			f_(addr);                                                     \
		}                                                                     \
	} while (0)

/* Count the irq hooks to show the irq variant brackets its work with them. */
static int irq_saves, irq_restores, irq_depth;
#define KSYNC_IRQ_KEY_T int
#define KSYNC_IRQ_SAVE() (irq_saves++, irq_depth++)
#define KSYNC_IRQ_RESTORE(k) ((void)(k), irq_restores++, irq_depth--)

#include <ksync/errors.h>
#include <ksync/ktest.h>
#include <ksync/measure.h>
#include <ksync/mwcas.h>

typedef int (*mwcas_fn)(struct ksync_mwcas_op *, unsigned);
typedef uint64_t (*read_fn)(const uint64_t *);

struct variant {
	const char *name;
	mwcas_fn mwcas;
	read_fn read;
};

static const struct variant variants[] = {
	{ "soft", ksync_mwcas_soft, ksync_mwcas_read_soft },
	{ "irq", ksync_mwcas_irq, ksync_mwcas_read_irq },
	{ "lock", ksync_mwcas_lock, ksync_mwcas_read_lock },
};

#define V(x) KSYNC_MWCAS_VAL(x)

static uint64_t words[16] __attribute__((aligned(64)));

static void fill(unsigned n, uint64_t base)
{
	for (unsigned i = 0; i < n; i++)
		words[i] = V(base + i);
}

static void semantics(struct ktest_ctx *kt, const struct variant *v)
{
	struct ksync_mwcas_op ops[KSYNC_MWCAS_MAX];

	for (unsigned n = 1; n <= KSYNC_MWCAS_MAX; n++) {
		/* success: every word swapped; ops given in descending address order */
		fill(n, 100);
		for (unsigned i = 0; i < n; i++) {
			unsigned w = n - 1 - i;

			ops[i] = (struct ksync_mwcas_op){ &words[w], V(100 + w), V(200 + w) };
		}
		KT_EXPECT_EQ(v->mwcas(ops, n), KSYNC_OK);
		for (unsigned i = 0; i < n; i++) {
			KT_EXPECT_EQ(words[i], V(200 + i));
			KT_EXPECT_EQ(v->read(&words[i]), V(200 + i));
		}
		/* failure: any one word differing leaves all n unchanged */
		for (unsigned bad = 0; bad < n; bad++) {
			fill(n, 300);
			for (unsigned i = 0; i < n; i++)
				ops[i] = (struct ksync_mwcas_op){ &words[i],
								  V(300 + i + (i == bad)),
								  V(400 + i) };
			KT_EXPECT_EQ(v->mwcas(ops, n), KSYNC_EBUSY);
			for (unsigned i = 0; i < n; i++)
				KT_EXPECT_EQ(v->read(&words[i]), V(300 + i));
		}
		/* expected == desired: succeeds, changes nothing (a validated snapshot) */
		fill(n, 500);
		for (unsigned i = 0; i < n; i++)
			ops[i] = (struct ksync_mwcas_op){ &words[i], V(500 + i), V(500 + i) };
		KT_EXPECT_EQ(v->mwcas(ops, n), KSYNC_OK);
		for (unsigned i = 0; i < n; i++)
			KT_EXPECT_EQ(words[i], V(500 + i));
	}
	/* full-range values (bit 0 clear) and zero */
	words[0] = 0;
	words[1] = UINT64_MAX - 1;
	ops[0] = (struct ksync_mwcas_op){ &words[0], 0, UINT64_MAX - 1 };
	ops[1] = (struct ksync_mwcas_op){ &words[1], UINT64_MAX - 1, 0 };
	KT_EXPECT_EQ(v->mwcas(ops, 2), KSYNC_OK);
	KT_EXPECT(v->read(&words[0]) == UINT64_MAX - 1);
	KT_EXPECT_EQ(v->read(&words[1]), 0);
	/* ops is not modified */
	KT_EXPECT(ops[0].addr == &words[0] && ops[0].expected == 0 &&
		  ops[0].desired == UINT64_MAX - 1);
}

static void bad_input(struct ktest_ctx *kt, const struct variant *v)
{
	struct ksync_mwcas_op ops[KSYNC_MWCAS_MAX + 1];

	fill(KSYNC_MWCAS_MAX + 1, 10);
	for (unsigned i = 0; i <= KSYNC_MWCAS_MAX; i++)
		ops[i] = (struct ksync_mwcas_op){ &words[i], V(10 + i), V(20 + i) };

	KT_EXPECT_EQ(v->mwcas(NULL, 1), KSYNC_EINVAL);
	KT_EXPECT_EQ(v->mwcas(ops, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(v->mwcas(ops, KSYNC_MWCAS_MAX + 1), KSYNC_EINVAL);

	ops[1].addr = NULL;
	KT_EXPECT_EQ(v->mwcas(ops, 2), KSYNC_EINVAL);
	ops[1].addr = (uint64_t *)((char *)&words[1] + 4);	/* misaligned */
	KT_EXPECT_EQ(v->mwcas(ops, 2), KSYNC_EINVAL);
	ops[1].addr = &words[0];				/* duplicate */
	KT_EXPECT_EQ(v->mwcas(ops, 2), KSYNC_EINVAL);
	ops[1].addr = &words[1];
	ops[1].expected |= 1;					/* reserved bit */
	KT_EXPECT_EQ(v->mwcas(ops, 2), KSYNC_EINVAL);
	ops[1].expected &= ~1ull;
	ops[1].desired |= 1;
	KT_EXPECT_EQ(v->mwcas(ops, 2), KSYNC_EINVAL);
	ops[1].desired &= ~1ull;
	/* duplicate far apart in a full-size call */
	ops[7].addr = &words[2];
	KT_EXPECT_EQ(v->mwcas(ops, KSYNC_MWCAS_MAX), KSYNC_EINVAL);

	/* nothing was written by any of them */
	for (unsigned i = 0; i <= KSYNC_MWCAS_MAX; i++)
		KT_EXPECT_EQ(words[i], V(10 + i));
	/* and the valid call still works */
	ops[7].addr = &words[7];
	KT_EXPECT_EQ(v->mwcas(ops, KSYNC_MWCAS_MAX), KSYNC_OK);
	KT_EXPECT_EQ(words[7], V(27));
}

KTEST(mwcas_semantics_soft)
{
	semantics(kt, &variants[0]);
}

KTEST(mwcas_semantics_irq)
{
	int s0 = irq_saves;

	semantics(kt, &variants[1]);
	/* every call bracketed by one save and one restore, balanced */
	KT_EXPECT(irq_saves > s0);
	KT_EXPECT_EQ(irq_saves, irq_restores);
	KT_EXPECT_EQ(irq_depth, 0);
}

KTEST(mwcas_semantics_lock)
{
	semantics(kt, &variants[2]);
	KT_EXPECT_EQ(irq_saves, irq_restores);
	/* every stripe free afterwards */
	for (unsigned i = 0; i < KSYNC_MWCAS_STRIPES; i++)
		KT_EXPECT_EQ(ksync__mwcas_stripes[i].lock, 0);
}

KTEST(mwcas_bad_input_soft)
{
	bad_input(kt, &variants[0]);
}

KTEST(mwcas_bad_input_irq)
{
	bad_input(kt, &variants[1]);
}

KTEST(mwcas_bad_input_lock)
{
	bad_input(kt, &variants[2]);
}

KTEST(mwcas_default_impl_and_cas2)
{
	uint64_t a = V(1), b = V(2);

	/* this file does not set KSYNC_MWCAS_IMPL: soft is the default */
	KT_EXPECT(KSYNC_MWCAS_IMPL_NAME[0] == 's');
	KT_EXPECT_EQ(ksync_cas2(&a, V(1), V(3), &b, V(2), V(4)), KSYNC_OK);
	KT_EXPECT(a == V(3) && b == V(4));
	KT_EXPECT_EQ(ksync_cas2(&a, V(3), V(5), &b, V(2), V(6)), KSYNC_EBUSY);
	KT_EXPECT(a == V(3) && b == V(4));
	KT_EXPECT_EQ(ksync_cas2(&a, V(3), V(5), &a, V(3), V(6)), KSYNC_EINVAL);
	KT_EXPECT_EQ(ksync_mwcas_read(&a), V(3));
	KT_EXPECT_EQ(KSYNC_MWCAS_UNVAL(ksync_mwcas_read(&b)), 4);
}

KTEST(mwcas_slots)
{
	int s[3];
	struct ksync_mwcas_op op = { &words[0], 0, V(1) };

	for (int i = 0; i < 3; i++) {
		s[i] = ksync_mwcas_slot_claim();
		KT_ASSERT(s[i] >= 0 && s[i] < KSYNC_MWCAS_MAX_THREADS);
		for (int j = 0; j < i; j++)
			KT_EXPECT(s[i] != s[j]);
	}
	/* the calling thread's own slot (claimed by the soft tests above) is not handed
	 * out again */
	KT_EXPECT(ksync__mwcas_tls_slot >= 0);
	for (int i = 0; i < 3; i++)
		KT_EXPECT(s[i] != ksync__mwcas_tls_slot);
	words[0] = 0;
	KT_EXPECT_EQ(__ksync_mwcas_soft((unsigned)s[1], &op, 1), KSYNC_OK);
	KT_EXPECT_EQ(__ksync_mwcas_soft(KSYNC_MWCAS_MAX_THREADS, &op, 1), KSYNC_EINVAL);
	for (int i = 0; i < 3; i++)
		ksync_mwcas_slot_release((unsigned)s[i]);
	/* released slots come back */
	KT_EXPECT_EQ(ksync_mwcas_slot_claim(), s[0]);
	ksync_mwcas_slot_release((unsigned)s[0]);

	/* giving the thread's slot back and using the API again claims one anew */
	ksync_mwcas_thread_exit();
	KT_EXPECT_EQ(ksync__mwcas_tls_slot, -1);
	words[0] = 0;
	KT_EXPECT_EQ(ksync_mwcas_soft(&op, 1), KSYNC_OK);
	KT_EXPECT(ksync__mwcas_tls_slot >= 0);
}

/* ---- the soft variant, driven through the test hook ------------------------------ */

static unsigned other_slot;
static uint64_t hook_seen_a, hook_seen_b;

/* Interference: another thread's MWCAS changes word 0 between our read and our CAS. */
static void interfere(uint64_t *addr)
{
	struct ksync_mwcas_op op = { addr, ksync_mwcas_read_soft(addr),
				     ksync_mwcas_read_soft(addr) + V(1000) };

	(void)__ksync_mwcas_soft(other_slot, &op, 1);
}

/* A "move one unit" caller: read both words, MWCAS, retry on KSYNC_EBUSY. */
static int move_unit(uint64_t *from, uint64_t *to, int *attempts)
{
	for (;;) {
		uint64_t f = ksync_mwcas_read_soft(from), t = ksync_mwcas_read_soft(to);
		struct ksync_mwcas_op ops[2] = { { from, f, f - V(1) }, { to, t, t + V(1) } };
		int r;

		++*attempts;
		r = ksync_mwcas_soft(ops, 2);
		if (r != KSYNC_EBUSY)
			return r;
	}
}

KTEST(mwcas_soft_forced_retry)
{
	int attempts = 0, s = ksync_mwcas_slot_claim();

	KT_ASSERT(s >= 0);
	other_slot = (unsigned)s;
	words[0] = V(10);
	words[1] = V(20);
	/* no interference: one attempt */
	KT_EXPECT_EQ(move_unit(&words[0], &words[1], &attempts), KSYNC_OK);
	KT_EXPECT_EQ(attempts, 1);
	/* interference once, at the first install CAS: exactly one retry */
	attempts = 0;
	hook_fn = interfere;
	KT_EXPECT_EQ(move_unit(&words[0], &words[1], &attempts), KSYNC_OK);
	KT_EXPECT_EQ(attempts, 2);
	KT_EXPECT(hook_fn == NULL);
	/* both moves and the interfering +1000 are all there, nothing else */
	KT_EXPECT_EQ(ksync_mwcas_read_soft(&words[0]), V(10 - 2 + 1000));
	KT_EXPECT_EQ(ksync_mwcas_read_soft(&words[1]), V(20 + 2));
	ksync_mwcas_slot_release(other_slot);
}

/*
 * Helping: our operation on words 0..2 is interrupted just before installing word 1
 * (word 0 already holds our reference).  Another thread then runs an MWCAS on word 0:
 * it finds our reference and must finish our operation (install words 1 and 2, decide,
 * clean up) before its own compare - so it sees our new value of word 0.  While our
 * reference sits in word 0, reads return the old value.
 */
static void helper_runs(uint64_t *addr)
{
	struct ksync_mwcas_op op = { &words[0], V(100), V(555) };

	(void)addr;
	/* word 0 holds a reference (an odd word), which stands for the old value */
	hook_seen_a = words[0];
	hook_seen_b = ksync_mwcas_read_soft(&words[0]);
	/* expects our NEW value: succeeds only if it helped us first */
	hook_seen_b |= (uint64_t)(__ksync_mwcas_soft(other_slot, &op, 1) == KSYNC_OK) << 63;
}

static void helping_stage1(uint64_t *addr)
{
	(void)addr;
	hook_fn = helper_runs;	/* runs at our next install CAS: word 1 */
}

KTEST(mwcas_soft_helping)
{
	struct ksync_mwcas_op ops[3] = {
		{ &words[0], V(1), V(100) },
		{ &words[1], V(2), V(200) },
		{ &words[2], V(3), V(300) },
	};
	int s = ksync_mwcas_slot_claim();

	KT_ASSERT(s >= 0);
	other_slot = (unsigned)s;
	words[0] = V(1);
	words[1] = V(2);
	words[2] = V(3);
	/* the hook runs before each install CAS: the first call (word 0) only arms
	 * helper_runs for the second (word 1) */
	hook_fn = helping_stage1;
	KT_EXPECT_EQ(ksync_mwcas_soft(ops, 3), KSYNC_OK);
	KT_EXPECT(hook_seen_a & 1);				/* a reference was there */
	KT_EXPECT_EQ(hook_seen_b & ~(1ull << 63), V(1));	/* read as the old value */
	KT_EXPECT(hook_seen_b >> 63);				/* the helper's op succeeded */
	KT_EXPECT_EQ(words[0], V(555));
	KT_EXPECT_EQ(words[1], V(200));
	KT_EXPECT_EQ(words[2], V(300));
	for (int i = 0; i < 3; i++)
		KT_EXPECT_EQ(words[i] & 1, 0);			/* no reference left */
	ksync_mwcas_slot_release(other_slot);
}

/*
 * A failed operation leaves no reference: our operation installs word 0, then (hook)
 * another thread changes word 1, so ours fails at word 1 and must put word 0 back.
 */
static void change_word1(uint64_t *addr)
{
	struct ksync_mwcas_op op = { &words[1], V(2), V(22) };

	(void)addr;
	(void)__ksync_mwcas_soft(other_slot, &op, 1);
}

static void fail_stage1(uint64_t *addr)
{
	(void)addr;
	hook_fn = change_word1;
}

KTEST(mwcas_soft_failure_cleans_up)
{
	struct ksync_mwcas_op ops[3] = {
		{ &words[0], V(1), V(100) },
		{ &words[1], V(2), V(200) },
		{ &words[2], V(3), V(300) },
	};
	int s = ksync_mwcas_slot_claim();

	KT_ASSERT(s >= 0);
	other_slot = (unsigned)s;
	words[0] = V(1);
	words[1] = V(2);
	words[2] = V(3);
	/* the first hook (before word 0's install) arms change_word1, which runs in the
	 * hook of our install of word 1 and changes that word: our CAS there fails */
	hook_fn = fail_stage1;
	KT_EXPECT_EQ(ksync_mwcas_soft(ops, 3), KSYNC_EBUSY);
	KT_EXPECT_EQ(words[0], V(1));
	KT_EXPECT_EQ(words[1], V(22));
	KT_EXPECT_EQ(words[2], V(3));
	ksync_mwcas_slot_release(other_slot);
}

/* ---- cost, informational --------------------------------------------------------- */

#define COST_BATCHES 101
#define COST_OPS 256

static uint64_t cost_words[2] __attribute__((aligned(64)));

KTEST(mwcas_cost_uncontended)
{
	static uint64_t t[COST_BATCHES], e[COST_BATCHES];
	struct ksync_stats se, st;
	uint64_t x;

	hook_fn = NULL;
	KSYNC_MEASURE(e, COST_BATCHES, COST_OPS, (void)0);
	se = ksync_stats_compute(e, COST_BATCHES);
	KSYNC_MEASURE(t, COST_BATCHES, COST_OPS, {
		x = ksync_load_relaxed_u64(&cost_words[0]);
		(void)ksync_cas_strong_seq_cst_u64(&cost_words[0], &x, x + 2);
		x = ksync_load_relaxed_u64(&cost_words[1]);
		(void)ksync_cas_strong_seq_cst_u64(&cost_words[1], &x, x + 2);
	});
	st = ksync_stats_compute(t, COST_BATCHES);
	kt_diag(kt, "two lock cmpxchg: median %llu ticks/op (batch of %d, empty %llu)",
		(unsigned long long)((st.median - se.median) / COST_OPS), COST_OPS,
		(unsigned long long)(se.median / COST_OPS));
	for (unsigned v = 0; v < 3; v++) {
		const struct variant *var = &variants[v];

		KSYNC_MEASURE(t, COST_BATCHES, COST_OPS, {
			uint64_t a = var->read(&cost_words[0]), b = var->read(&cost_words[1]);
			struct ksync_mwcas_op ops[2] = { { &cost_words[0], a, a + 2 },
							 { &cost_words[1], b, b + 2 } };
			(void)var->mwcas(ops, 2);
		});
		st = ksync_stats_compute(t, COST_BATCHES);
		kt_diag(kt, "2-word read+mwcas %s: min %llu median %llu ticks/op", var->name,
			(unsigned long long)((st.min - se.median) / COST_OPS),
			(unsigned long long)((st.median - se.median) / COST_OPS));
	}
	KT_EXPECT(cost_words[0] == cost_words[1]);
}
