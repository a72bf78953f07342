/*
 * test_optimistic.c - include/ksync/optimistic.h: the version protocol step by step
 * (even/odd, +2 per write, cancel restores), readers' validation, the Massalin-Pu
 * commit (write_begin_if), the copy helpers, bad input, interference injection forcing
 * exactly one reader retry and one failed commit, and a short two-thread run in which
 * the reader never sees a torn multi-word state (clean under TSan).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <ksync/atomic.h>

struct lf_opt;
static void test_hook(const char *op, const struct lf_opt *o);
#define LF_OPT_TEST_HOOK(op, o) test_hook(#op, (o))

#include <ksync/ktest.h>
#include <ksync/optimistic.h>

static int hook_on;			/* set only while single-threaded */
static int read_hooks, commit_hooks;
static void (*interference)(void);

static void test_hook(const char *op, const struct lf_opt *o)
{
	void (*f)(void) = interference;

	(void)o;
	if (!hook_on)
		return;
	if (op[0] == 'r')
		read_hooks++;
	else
		commit_hooks++;
	if (f) {
		interference = NULL;
		f();
	}
}

static struct lf_opt ver = LF_OPT_INITIALIZER;
static uint64_t data[4];

KTEST(optimistic_version_protocol)
{
	uint64_t v, v2;

	KT_ASSERT_EQ(lf_opt_init(&ver), KSYNC_OK);
	KT_EXPECT_EQ(lf_opt_read_begin(&ver, &v), KSYNC_OK);
	KT_EXPECT_EQ(v, 0);
	KT_EXPECT_EQ(lf_opt_read_validate(&ver, v), 1);

	KT_EXPECT_EQ(lf_opt_write_begin(&ver), KSYNC_OK);
	KT_EXPECT_EQ(ver.version, 1);				/* odd: writer inside */
	KT_EXPECT_EQ(lf_opt_read_try_begin(&ver, &v2), KSYNC_EBUSY);
	KT_EXPECT_EQ(v2, 1);
	KT_EXPECT_EQ(lf_opt_write_try_begin(&ver), KSYNC_EBUSY);	/* one writer */
	KT_EXPECT_EQ(lf_opt_write_begin_if(&ver, 0), KSYNC_EBUSY);
	KT_EXPECT_EQ(lf_opt_read_validate(&ver, v), 0);		/* v=0 overlapped */
	KT_EXPECT_EQ(lf_opt_read_validate(&ver, 1), 0);		/* odd never valid */
	lf_opt_store_u64(&data[0], 5);
	KT_EXPECT_EQ(lf_opt_write_end(&ver), KSYNC_OK);
	KT_EXPECT_EQ(ver.version, 2);
	KT_EXPECT_EQ(lf_opt_read_validate(&ver, v), 0);		/* still changed */
	KT_EXPECT_EQ(lf_opt_read_try_begin(&ver, &v2), KSYNC_OK);
	KT_EXPECT_EQ(v2, 2);
	KT_EXPECT_EQ(lf_opt_load_u64(&data[0]), 5);

	/* cancel: a writer that wrote nothing restores the version */
	KT_EXPECT_EQ(lf_opt_write_try_begin(&ver), KSYNC_OK);
	KT_EXPECT_EQ(ver.version, 3);
	KT_EXPECT_EQ(lf_opt_write_cancel(&ver), KSYNC_OK);
	KT_EXPECT_EQ(ver.version, 2);
	KT_EXPECT_EQ(lf_opt_read_validate(&ver, v2), 1);	/* reader need not retry */

	/* end / cancel without a writer inside: refused, version unchanged */
	KT_EXPECT_EQ(lf_opt_write_end(&ver), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write_cancel(&ver), KSYNC_EINVAL);
	KT_EXPECT_EQ(ver.version, 2);

	/* pointers through the helpers */
	void *p = NULL;
	lf_opt_store_ptr(&p, &v);
	KT_EXPECT(lf_opt_load_ptr(&p) == &v);
}

/* The Massalin-Pu cycle: read, compute out of line, commit only if unchanged. */
KTEST(optimistic_commit_if_unchanged)
{
	uint64_t v, x;

	lf_opt_init(&ver);
	hook_on = 1;
	commit_hooks = 0;
	lf_opt_store_u64(&data[0], 10);
	lf_opt_read_begin(&ver, &v);
	x = lf_opt_load_u64(&data[0]);
	KT_EXPECT_EQ(lf_opt_read_validate(&ver, v), 1);
	KT_EXPECT_EQ(lf_opt_write_begin_if(&ver, v), KSYNC_OK);
	lf_opt_store_u64(&data[0], x + 1);
	lf_opt_write_end(&ver);
	KT_EXPECT_EQ(data[0], 11);
	/* a stale version (the write above happened since v) is refused */
	KT_EXPECT_EQ(lf_opt_write_begin_if(&ver, v), KSYNC_EBUSY);
	KT_EXPECT_EQ(ver.version, 2);
	KT_EXPECT_EQ(commit_hooks, 2);
	hook_on = 0;
}

KTEST(optimistic_copy_helpers)
{
	uint64_t in[4] = { 1, 2, 3, 4 }, out[4] = { 0 };
	int r;

	lf_opt_init(&ver);
	KT_EXPECT_EQ(lf_opt_write(&ver, data, in, 4), KSYNC_OK);
	KT_EXPECT_EQ(ver.version, 2);
	r = lf_opt_read(&ver, out, data, 4);
	KT_EXPECT_EQ(r, 0);
	for (int i = 0; i < 4; i++)
		KT_EXPECT_EQ(out[i], in[i]);
	KT_EXPECT_EQ(lf_opt_copy_out(out, data, 0), KSYNC_OK);
	KT_EXPECT_EQ(lf_opt_copy_in(data, in, 0), KSYNC_OK);
	KT_EXPECT_EQ(lf_opt_copy_out(NULL, NULL, 0), KSYNC_OK);	/* n = 0: nothing read */
	KT_EXPECT_EQ(lf_opt_write(&ver, NULL, NULL, 0), KSYNC_OK);	/* empty write */
	KT_EXPECT_EQ(ver.version, 4);
	KT_EXPECT_EQ(lf_opt_read(&ver, NULL, NULL, 0), 0);
}

KTEST(optimistic_bad_input)
{
	uint64_t v, buf[2];

	lf_opt_init(&ver);
	KT_EXPECT_EQ(lf_opt_init(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read_begin(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read_begin(&ver, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read_try_begin(NULL, &v), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read_try_begin(&ver, NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read_validate(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write_begin(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write_try_begin(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write_begin_if(NULL, 0), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write_end(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write_cancel(NULL), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_copy_out(NULL, buf, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_copy_out(buf, NULL, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_copy_in(NULL, buf, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_copy_in(buf, NULL, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read(NULL, buf, data, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_read(&ver, NULL, data, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write(NULL, data, buf, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(lf_opt_write(&ver, data, NULL, 2), KSYNC_EINVAL);
	KT_EXPECT_EQ(ver.version, 0);	/* nothing entered */
}

/* ---- interference injection ------------------------------------------------------- */

static void write_all_sevens(void)
{
	uint64_t s[4] = { 7, 7, 7, 7 };

	lf_opt_write(&ver, data, s, 4);
}

/* A writer runs between the reader's copy and its validation: exactly one retry, and
 * the snapshot returned is the writer's. */
KTEST(optimistic_read_one_forced_retry)
{
	uint64_t init[4] = { 1, 1, 1, 1 }, out[4];

	lf_opt_init(&ver);
	lf_opt_write(&ver, data, init, 4);
	hook_on = 1;
	read_hooks = 0;
	interference = write_all_sevens;
	KT_EXPECT_EQ(lf_opt_read(&ver, out, data, 4), 1);
	KT_EXPECT_EQ(read_hooks, 2);
	for (int i = 0; i < 4; i++)
		KT_EXPECT_EQ(out[i], 7);
	hook_on = 0;
}

/* A writer commits between the optimistic read and our commit: ours is refused once;
 * the retry reads the new state and commits. */
KTEST(optimistic_commit_one_forced_retry)
{
	uint64_t v, x;
	int tries = 0;

	lf_opt_init(&ver);
	lf_opt_store_u64(&data[0], 1);
	hook_on = 1;
	commit_hooks = 0;
	interference = write_all_sevens;
	for (;;) {
		tries++;
		lf_opt_read_begin(&ver, &v);
		x = lf_opt_load_u64(&data[0]);
		if (!lf_opt_read_validate(&ver, v))
			continue;
		if (lf_opt_write_begin_if(&ver, v) != KSYNC_OK)
			continue;
		lf_opt_store_u64(&data[0], x * 10);
		lf_opt_write_end(&ver);
		break;
	}
	hook_on = 0;
	KT_EXPECT_EQ(tries, 2);
	KT_EXPECT_EQ(commit_hooks, 2);
	KT_EXPECT_EQ(data[0], 70);	/* computed from the interfering write's 7 */
	KT_EXPECT_EQ(ver.version, 4);
}

/* ---- two threads: never a torn state ---------------------------------------------- */

#define WRITES 20000

static uint64_t torn;
static uint32_t done, reader_ready;

static void *writer(void *arg)
{
	uint64_t s[4];

	(void)arg;
	while (!ksync_load_acquire_u32(&reader_ready))	/* overlap with the reader */
		ksync_cpu_relax();
	for (uint64_t k = 1; k <= WRITES; k++) {
		s[0] = s[1] = s[2] = s[3] = k;
		lf_opt_write(&ver, data, s, 4);
	}
	ksync_store_release_u32(&done, 1);
	return NULL;
}

KTEST(optimistic_two_threads_no_torn_read)
{
	pthread_t th;
	uint64_t out[4], reads = 0, retries = 0, last = 0;
	uint64_t zero[4] = { 0 };

	hook_on = 0;
	lf_opt_init(&ver);
	lf_opt_copy_in(data, zero, 4);
	torn = 0;
	done = 0;
	reader_ready = 0;
	KT_ASSERT_EQ(pthread_create(&th, NULL, writer, NULL), 0);
	ksync_store_release_u32(&reader_ready, 1);
	while (!ksync_load_acquire_u32(&done)) {
		retries += (uint64_t)lf_opt_read(&ver, out, data, 4);
		reads++;
		if (out[0] != out[1] || out[1] != out[2] || out[2] != out[3] || out[0] < last)
			torn++;
		last = out[0];
	}
	KT_ASSERT_EQ(pthread_join(th, NULL), 0);
	KT_EXPECT_EQ(torn, 0);
	lf_opt_read(&ver, out, data, 4);
	KT_EXPECT_EQ(out[3], WRITES);
	KT_EXPECT_EQ(ver.version, 2 * WRITES);
	kt_diag(kt, "%llu consistent reads, %llu retries", (unsigned long long)reads,
		(unsigned long long)retries);
}
