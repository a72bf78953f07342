/*
 * test_lf_epoch.c - include/ksync/lf_epoch.h + lib/hosted/lf_epoch.c: a retired node
 * is freed exactly after two epoch advances; a record inside a section holds the
 * advance back (nested sections too); records are reused; an unregistering thread's
 * pending nodes are adopted (orphans) and freed by others or by destroy; the automatic
 * collect; barrier; bad input; and a pthread run in which readers dereference objects a
 * writer keeps replacing and retiring (ASan turns any early free into a failure).
 */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include <ksync/ktest.h>
#include <ksync/lf_epoch.h>

struct obj {
	struct lf_epoch_entry retire;
	uint64_t magic;
	int *freed_counter;
};

#define MAGIC 0x0b1ec7ull

static void free_obj(struct lf_epoch_entry *e)
{
	struct obj *o = (struct obj *)(void *)((char *)e - offsetof(struct obj, retire));

	if (o->freed_counter)
		ksync_fetch_add_relaxed_u32((uint32_t *)(void *)o->freed_counter, 1);
	o->magic = 0;
	free(o);
}

static struct obj *new_obj(int *counter)
{
	struct obj *o = calloc(1, sizeof(*o));

	if (o) {
		o->magic = MAGIC;
		o->freed_counter = counter;
	}
	return o;
}

KTEST(lf_epoch_two_advances_then_free)
{
	struct lf_epoch d;
	struct lf_epoch_record *r;
	int freed = 0;
	size_t pending = 9;

	KT_ASSERT_EQ(lf_epoch_init(&d), KSYNC_OK);
	KT_ASSERT_EQ(lf_epoch_register(&d, &r), KSYNC_OK);
	KT_EXPECT_EQ(lf_epoch_enter(r), KSYNC_OK);
	KT_EXPECT_EQ(lf_epoch_retire(r, &new_obj(&freed)->retire, free_obj), KSYNC_OK);
	KT_EXPECT_EQ(lf_epoch_exit(r), KSYNC_OK);
	lf_epoch_pending(r, &pending);
	KT_EXPECT_EQ(pending, 1);
	KT_EXPECT_EQ(lf_epoch_collect(r), 0);	/* epoch 0 -> 1: not yet */
	KT_EXPECT_EQ(d.epoch, 1);
	KT_EXPECT_EQ(freed, 0);
	KT_EXPECT_EQ(lf_epoch_collect(r), 1);	/* 1 -> 2: retired at 0, freed now */
	KT_EXPECT_EQ(d.epoch, 2);
	KT_EXPECT_EQ(freed, 1);
	lf_epoch_pending(r, &pending);
	KT_EXPECT_EQ(pending, 0);
	KT_EXPECT_EQ(lf_epoch_unregister(r), KSYNC_OK);
	KT_EXPECT_EQ(lf_epoch_destroy(&d), KSYNC_OK);
}

KTEST(lf_epoch_reader_in_section_holds_back)
{
	struct lf_epoch d = LF_EPOCH_INITIALIZER;
	struct lf_epoch_record *w, *rd;
	int freed = 0;

	lf_epoch_register(&d, &w);
	lf_epoch_register(&d, &rd);
	KT_EXPECT(w != rd);
	lf_epoch_enter(rd);			/* announces epoch 0 */
	lf_epoch_enter(rd);			/* nested */
	lf_epoch_retire(w, &new_obj(&freed)->retire, free_obj);	/* retired at 0 */
	for (int i = 0; i < 5; i++)
		lf_epoch_collect(w);
	KT_EXPECT_EQ(d.epoch, 1);		/* 0 -> 1 allowed, 1 -> 2 not */
	KT_EXPECT_EQ(freed, 0);
	lf_epoch_exit(rd);			/* still inside the outer section */
	lf_epoch_collect(w);
	KT_EXPECT_EQ(freed, 0);
	lf_epoch_exit(rd);
	KT_EXPECT_EQ(rd->state, 0);
	KT_EXPECT_EQ(lf_epoch_exit(rd), KSYNC_EINVAL);	/* not inside */
	lf_epoch_collect(w);
	KT_EXPECT_EQ(freed, 1);
	/* a reader that enters late announces the current epoch: it does not hold back
	 * nodes retired before, once two advances pass */
	lf_epoch_retire(w, &new_obj(&freed)->retire, free_obj);	/* at 2 */
	lf_epoch_enter(rd);					/* announces 2 */
	lf_epoch_collect(w);					/* 2 -> 3 */
	KT_EXPECT_EQ(freed, 1);
	lf_epoch_collect(w);					/* 3 -> 4 blocked */
	KT_EXPECT_EQ(d.epoch, 3);
	lf_epoch_exit(rd);
	lf_epoch_collect(w);
	KT_EXPECT_EQ(freed, 2);
	KT_EXPECT_EQ(lf_epoch_destroy(&d), KSYNC_EBUSY);	/* records registered */
	lf_epoch_unregister(w);
	lf_epoch_unregister(rd);
	KT_EXPECT_EQ(lf_epoch_destroy(&d), KSYNC_OK);
}

KTEST(lf_epoch_records_reused_and_orphans_adopted)
{
	struct lf_epoch d = LF_EPOCH_INITIALIZER;
	struct lf_epoch_record *a, *b, *c;
	int freed = 0;

	lf_epoch_register(&d, &a);
	lf_epoch_register(&d, &b);
	lf_epoch_enter(b);				/* holds the advance back */
	for (int i = 0; i < 3; i++)
		lf_epoch_retire(a, &new_obj(&freed)->retire, free_obj);
	KT_EXPECT_EQ(lf_epoch_unregister(a), KSYNC_OK);	/* 3 pending -> orphans */
	KT_EXPECT(d.orphans != NULL);
	KT_EXPECT_EQ(freed, 0);
	KT_EXPECT_EQ(lf_epoch_register(&d, &c), KSYNC_OK);
	KT_EXPECT(c == a);				/* the released record, reused */
	size_t pending = 9;
	lf_epoch_pending(c, &pending);
	KT_EXPECT_EQ(pending, 0);
	lf_epoch_exit(b);
	lf_epoch_collect(b);
	lf_epoch_collect(b);
	KT_EXPECT_EQ(freed, 3);				/* adopted and freed by b */
	KT_EXPECT(d.orphans == NULL);

	/* destroy runs whatever is still pending: b's last node, orphaned by its
	 * unregister (whose collect advances once: not enough) */
	lf_epoch_unregister(c);
	lf_epoch_retire(b, &new_obj(&freed)->retire, free_obj);
	lf_epoch_unregister(b);
	KT_EXPECT_EQ(freed, 3);
	KT_EXPECT(d.orphans != NULL);
	KT_EXPECT_EQ(lf_epoch_destroy(&d), KSYNC_OK);
	KT_EXPECT_EQ(freed, 4);
}

KTEST(lf_epoch_auto_collect_and_barrier)
{
	struct lf_epoch d = LF_EPOCH_INITIALIZER;
	struct lf_epoch_record *r;
	int freed = 0;
	size_t pending;

	lf_epoch_register(&d, &r);
	for (int i = 0; i < 3 * LF_EPOCH_COLLECT_EVERY; i++)
		lf_epoch_retire(r, &new_obj(&freed)->retire, free_obj);
	/* a collect every 64 retirements, one advance each: all but the last ~2 batches */
	KT_EXPECT(freed > 0);
	lf_epoch_pending(r, &pending);
	KT_EXPECT_EQ(pending + (size_t)freed, 3 * LF_EPOCH_COLLECT_EVERY);
	lf_epoch_enter(r);
	KT_EXPECT_EQ(lf_epoch_barrier(r), KSYNC_EBUSY);	/* would wait for itself */
	lf_epoch_exit(r);
	KT_EXPECT_EQ(lf_epoch_barrier(r), KSYNC_OK);
	KT_EXPECT_EQ(freed, 3 * LF_EPOCH_COLLECT_EVERY);
	lf_epoch_enter(r);
	KT_EXPECT_EQ(lf_epoch_unregister(r), KSYNC_EBUSY);
	lf_epoch_exit(r);
	lf_epoch_unregister(r);
	lf_epoch_destroy(&d);
}

static void never(struct lf_epoch_entry *e)
{
	(void)e;
}

KTEST(lf_epoch_bad_input)
{
	struct lf_epoch d = LF_EPOCH_INITIALIZER;
	struct lf_epoch_record *r;
	struct lf_epoch_entry e;
	size_t n;

	KT_EXPECT_EQ(lf_epoch_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_register(NULL, &r), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_register(&d, NULL), KSYNC_EINVAL);
	KT_ASSERT_EQ(lf_epoch_register(&d, &r), KSYNC_OK);
	KT_EXPECT_EQ(lf_epoch_enter(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_exit(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_exit(r), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_retire(NULL, &e, never), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_retire(r, NULL, never), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_retire(r, &e, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_collect(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_barrier(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_pending(NULL, &n), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_pending(r, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_unregister(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_epoch_destroy(NULL), KSYNC_EINVAL);
	lf_epoch_pending(r, &n);
	KT_EXPECT_EQ(n, 0);
	lf_epoch_unregister(r);
	lf_epoch_destroy(&d);
}

/* ---- threads: readers use what a writer keeps replacing ---------------------------- */

#define READERS 2
#define REPLACEMENTS 20000

static struct lf_epoch dom = LF_EPOCH_INITIALIZER;
static struct obj *current;		/* atomic.h wrappers only */
static uint32_t stop;
static uint64_t bad;

static void *reader(void *arg)
{
	struct lf_epoch_record *r;
	uint64_t local_bad = 0;

	(void)arg;
	if (lf_epoch_register(&dom, &r) != KSYNC_OK)
		return (void *)1;
	while (!ksync_load_acquire_u32(&stop)) {
		lf_epoch_enter(r);
		struct obj *o = ksync_load_acquire_ptr(&current);
		/* the object may already be retired, but cannot be freed while we are in
		 * the section: ASan would report a use after free, the magic a reuse */
		if (o && ksync_load_relaxed_u64(&o->magic) != MAGIC)
			local_bad++;
		lf_epoch_exit(r);
	}
	lf_epoch_unregister(r);
	ksync_fetch_add_relaxed_u64(&bad, local_bad);
	return NULL;
}

/* free_obj writes magic plainly; readers read it atomically: the free-side write and
 * the reads are ordered by the epoch protocol, which is what TSan checks here. */
KTEST(lf_epoch_threads_no_early_free)
{
	pthread_t th[READERS];
	struct lf_epoch_record *w;
	int freed = 0;

	lf_epoch_init(&dom);
	stop = 0;
	bad = 0;
	current = new_obj(&freed);
	for (int i = 0; i < READERS; i++)
		KT_ASSERT_EQ(pthread_create(&th[i], NULL, reader, NULL), 0);
	KT_ASSERT_EQ(lf_epoch_register(&dom, &w), KSYNC_OK);
	for (int i = 0; i < REPLACEMENTS; i++) {
		struct obj *o = new_obj(&freed);

		KT_ASSERT(o != NULL);
		o = ksync_exchange_acq_rel_ptr(&current, o);	/* unlink the old one */
		lf_epoch_retire(w, &o->retire, free_obj);
	}
	ksync_store_release_u32(&stop, 1);
	for (int i = 0; i < READERS; i++)
		KT_ASSERT_EQ(pthread_join(th[i], NULL), 0);
	KT_EXPECT_EQ(bad, 0);
	lf_epoch_barrier(w);
	KT_EXPECT_EQ(freed, REPLACEMENTS);
	lf_epoch_unregister(w);
	KT_EXPECT_EQ(lf_epoch_destroy(&dom), KSYNC_OK);
	free(current);
}
