/*
 * test_sysfile.c - the file system calls' handlers (kernel/syscall/sysfile.c) called as a
 * process calls them, by several kernel threads at once on shared files and pipes
 * (issue 24: "the system-call handlers on kernel buffers also run in the hosted port's
 * kernel tests under ThreadSanitizer"; docs/userspace.md "Tests").
 *
 * Massalin & Pu 1991 (Synthesis) "Kernel calls", "Input/output"; Hartman & Ousterhout
 * (Sprite) §2: the handlers take no lock of their own, kernel/fs's monitors (fdtable,
 * ramfs, pipe) serialise what the threads share - the TSan build sees every access.
 *
 * Only where the port's user copies reach the kernel thread's own memory
 * (ARCH_UCOPY_OWN_MEMORY: the hosted port); on x86_64 user space is a process's lower
 * half, which a kernel thread does not have, and tests/test_user.py runs the same
 * handlers from ring 3.
 *
 * Shared state: each case's struct sysf_ctx (its fdtable and fs_ctx, locked by kernel/fs)
 * and the worker arguments: written by the case before thread_create, by the worker
 * before its release store of `finished`, read by the case after the acquire load.
 */
#include "kernel.h"
#include "thread.h"
#include "fs/vfs.h"
#include "syscall/linux_abi.h"
#include "syscall/sysfile.h"
#include <ksync/ktest.h>
#include <ksync/errors.h>

typedef long (*sysf_fn)(const struct sysf_ctx *x, const uint64_t a[6]);

/* one call with its six arguments as a process passes them */
static long call(sysf_fn h, const struct sysf_ctx *x, uint64_t a0, uint64_t a1, uint64_t a2,
		 uint64_t a3)
{
	const uint64_t a[6] = { a0, a1, a2, a3, 0, 0 };
	return h(x, a);
}
#define U(p) ((uint64_t)(uintptr_t)(p))
#define AT ((uint64_t)(int64_t)LX_AT_FDCWD)
/* a pointer no copy may take: the kernel half */
#define BAD 0xffff800000000000ull

static uint64_t ms_ticks(uint64_t ms) { return arch_tsc_hz() / 1000 * ms; }

/* `fs_scale=N` on the command line (make stress, as test_fs.c's cases) multiplies the
 * rounds */
static unsigned scale(void)
{
	char buf[16];
	return cmdline_uint(cmdline_get("fs_scale", buf, sizeof buf), 1);
}

#define REC 64		/* a file record: REC bytes of one letter, written by one writev */
#define PREC 512	/* a pipe record (<= PIPE_BUF: never torn) */

struct worker {
	const struct sysf_ctx *x;
	unsigned iters, id;
	int fd;			/* the pipe end, for the pipe workers */
	long bad;		/* calls that answered what they must not */
	uint64_t bytes, torn;
	int finished;		/* release store at the end; acquire load by the case */
};

/* appends records to the shared file through its own descriptor (O_APPEND), reads one
 * back with pread64, dups and closes on the shared table, lists the directory */
static void file_worker(void *arg)
{
	struct worker *w = arg;
	const struct sysf_ctx *x = w->x;
	long fd = call(sysf_openat, x, AT, U("shared"), LX_O_WRONLY | LX_O_APPEND, 0);
	long rd = call(sysf_openat, x, AT, U("shared"), LX_O_RDONLY, 0);
	if (fd < 0 || rd < 0) {
		w->bad++;
		goto out;
	}
	char rec[REC], back[REC];
	memset(rec, 'a' + (int)w->id, REC);
	struct lx_iovec v[2] = { { U(rec), REC / 4 }, { U(rec + REC / 4), REC - REC / 4 } };
	char dents[512];
	for (unsigned i = 0; i < w->iters; i++) {
		if (call(sysf_writev, x, (uint64_t)fd, U(v), 2, 0) != REC)
			w->bad++;
		long at = call(sysf_lseek, x, (uint64_t)fd, 0, LX_SEEK_CUR, 0);
		if (at < REC || at % REC)
			w->bad++;
		/* the record just written is whole wherever it is now (appends never tear) */
		if (call(sysf_pread64, x, (uint64_t)rd, U(back), REC, (uint64_t)(at - REC)) != REC)
			w->bad++;
		else
			for (unsigned k = 1; k < REC; k++)
				w->torn += back[k] != back[0];
		long d = call(sysf_dup, x, (uint64_t)fd, 0, 0, 0);
		if (d < 0 || call(sysf_close, x, (uint64_t)d, 0, 0, 0) != 0)
			w->bad++;
		if (i % 8 == 0) {
			long dd = call(sysf_openat, x, AT, U("."), LX_O_RDONLY | LX_O_DIRECTORY, 0);
			if (dd < 0 || call(sysf_getdents64, x, (uint64_t)dd, U(dents), sizeof dents, 0) <= 0)
				w->bad++;
			if (dd >= 0)
				call(sysf_close, x, (uint64_t)dd, 0, 0, 0);
		}
		w->bytes += REC;
	}
out:
	if (fd >= 0)
		call(sysf_close, x, (uint64_t)fd, 0, 0, 0);
	if (rd >= 0)
		call(sysf_close, x, (uint64_t)rd, 0, 0, 0);
	__atomic_store_n(&w->finished, 1, __ATOMIC_RELEASE);
}

/* creates, renames and removes its own names in the shared directory */
static void name_worker(void *arg)
{
	struct worker *w = arg;
	const struct sysf_ctx *x = w->x;
	char a[16] = "n0_a", b[16] = "n0_b";
	a[1] = b[1] = (char)('0' + w->id);
	for (unsigned i = 0; i < w->iters; i++) {
		long fd = call(sysf_openat, x, AT, U(a), LX_O_CREAT | LX_O_EXCL | LX_O_WRONLY, 0644);
		if (fd < 0) {
			w->bad++;
			continue;
		}
		if (call(sysf_write, x, (uint64_t)fd, U("xyz"), 3, 0) != 3)
			w->bad++;
		call(sysf_close, x, (uint64_t)fd, 0, 0, 0);
		if (call(sysf_renameat, x, AT, U(a), AT, U(b)) != 0)
			w->bad++;
		struct lx_stat st;
		if (call(sysf_newfstatat, x, AT, U(b), U(&st), 0) != 0 || st.st_size != 3)
			w->bad++;
		if (call(sysf_unlinkat, x, AT, U(b), 0, 0) != 0)
			w->bad++;
		if (call(sysf_unlinkat, x, AT, U(b), 0, 0) != -LX_ENOENT)
			w->bad++;
	}
	__atomic_store_n(&w->finished, 1, __ATOMIC_RELEASE);
}

static void pipe_writer(void *arg)
{
	struct worker *w = arg;
	char rec[PREC];
	memset(rec, 'A' + (int)w->id, PREC);
	for (unsigned i = 0; i < w->iters; i++) {
		if (call(sysf_write, w->x, (uint64_t)w->fd, U(rec), PREC, 0) != PREC)
			w->bad++;
		w->bytes += PREC;
	}
	__atomic_store_n(&w->finished, 1, __ATOMIC_RELEASE);
}

/* reads the pipe with readv until end of file: every run of one letter a whole number
 * of records */
static void pipe_reader(void *arg)
{
	struct worker *w = arg;
	char a[300], b[700];
	struct lx_iovec v[2] = { { U(a), sizeof a }, { U(b), sizeof b } };
	char cur = 0;
	uint64_t run = 0;
	long n;
	while ((n = call(sysf_readv, w->x, (uint64_t)w->fd, U(v), 2, 0)) > 0) {
		for (long i = 0; i < n; i++) {
			char c = i < (long)sizeof a ? a[i] : b[i - (long)sizeof a];
			if (c != cur) {
				w->torn += run % PREC != 0;
				cur = c;
				run = 0;
			}
			run++;
		}
		w->bytes += (uint64_t)n;
	}
	w->torn += run % PREC != 0;
	if (n != 0)
		w->bad++;
	__atomic_store_n(&w->finished, 1, __ATOMIC_RELEASE);
}

/* the single-threaded part: results and errors a process would see */
static void sequential(struct ktest_ctx *kt, const struct sysf_ctx *x)
{
	long fd = call(sysf_openat, x, AT, U("seq"), LX_O_CREAT | LX_O_RDWR | LX_O_TRUNC, 0640);
	KT_ASSERT(fd >= 0);
	KT_EXPECT_EQ(call(sysf_write, x, (uint64_t)fd, U("0123456789"), 10, 0), 10);
	char a[4] = {0}, b[8] = {0};
	struct lx_iovec v[2] = { { U(a), 3 }, { U(b), 7 } };
	KT_EXPECT_EQ(call(sysf_lseek, x, (uint64_t)fd, 0, LX_SEEK_SET, 0), 0);
	KT_EXPECT_EQ(call(sysf_readv, x, (uint64_t)fd, U(v), 2, 0), 10);
	KT_EXPECT(memcmp(a, "012", 3) == 0 && memcmp(b, "3456789", 7) == 0);
	KT_EXPECT_EQ(call(sysf_readv, x, (uint64_t)fd, U(v), (uint64_t)-1, 0), -LX_EINVAL);
	KT_EXPECT_EQ(call(sysf_readv, x, (uint64_t)fd, BAD, 1, 0), -LX_EFAULT);
	/* at the end of the file, nothing to copy: still EFAULT (Linux's access_ok) */
	KT_EXPECT_EQ(call(sysf_read, x, (uint64_t)fd, BAD, 4, 0), -LX_EFAULT);
	KT_EXPECT_EQ(call(sysf_pread64, x, (uint64_t)fd, BAD, 4, 0), -LX_EFAULT);
	KT_EXPECT_EQ(call(sysf_write, x, (uint64_t)fd, BAD, 4, 0), -LX_EFAULT);
	KT_EXPECT_EQ(call(sysf_lseek, x, (uint64_t)fd, 3, LX_SEEK_DATA, 0), 3);
	KT_EXPECT_EQ(call(sysf_lseek, x, (uint64_t)fd, 3, LX_SEEK_HOLE, 0), 10);
	KT_EXPECT_EQ(call(sysf_lseek, x, (uint64_t)fd, 0, 9, 0), -LX_EINVAL);
	KT_EXPECT_EQ(call(sysf_openat, x, AT, BAD, LX_O_RDONLY, 0), -LX_EFAULT);
	KT_EXPECT_EQ(call(sysf_openat, x, AT, U(""), LX_O_RDONLY, 0), -LX_ENOENT);
	KT_EXPECT_EQ(call(sysf_dup3, x, (uint64_t)fd, (uint64_t)fd, 0, 0), -LX_EINVAL);
	int p[2] = { -1, -1 };
	KT_EXPECT_EQ(call(sysf_pipe2, x, U(p), LX_O_APPEND, 0, 0), -LX_EINVAL);
	KT_EXPECT_EQ(call(sysf_pipe2, x, BAD, 0, 0, 0), -LX_EFAULT);
	KT_EXPECT_EQ(call(sysf_pipe2, x, U(p), LX_O_NONBLOCK | LX_O_CLOEXEC, 0, 0), 0);
	KT_EXPECT_EQ(call(sysf_fcntl, x, (uint64_t)p[0], LX_F_GETFD, 0, 0), LX_FD_CLOEXEC);
	KT_EXPECT_EQ(call(sysf_read, x, (uint64_t)p[0], U(a), 1, 0), -LX_EAGAIN);
	KT_EXPECT_EQ(call(sysf_lseek, x, (uint64_t)p[0], 0, LX_SEEK_SET, 0), -LX_ESPIPE);
	KT_EXPECT_EQ(call(sysf_close, x, (uint64_t)p[0], 0, 0, 0), 0);
	KT_EXPECT_EQ(call(sysf_close, x, (uint64_t)p[1], 0, 0, 0), 0);
	char cwd[64];
	KT_EXPECT_EQ(call(sysf_getcwd, x, U(cwd), sizeof cwd, 0, 0), 8);	/* with the NUL */
	KT_EXPECT(strcmp(cwd, "/t_sysf") == 0 || (kt_diag(kt, "cwd %s", cwd), 0));
	KT_EXPECT_EQ(call(sysf_close, x, (uint64_t)fd, 0, 0, 0), 0);
	KT_EXPECT_EQ(call(sysf_close, x, (uint64_t)fd, 0, 0, 0), -LX_EBADF);
	KT_EXPECT_EQ(call(sysf_unlinkat, x, AT, U("seq"), 0, 0), 0);
}

#define NFILE 2
#define NNAME 2
#define NPIPE 2

KTEST(sysfile_handlers_shared_files_and_pipes_threads)
{
	if (!ARCH_UCOPY_OWN_MEMORY)
		KT_SKIP("the port's user copies take user space only (tests/test_user.py runs "
			"these handlers from ring 3)");
	static const char *const scheds[] = { "lockfree", "locked" };
	for (unsigned si = 0; si < 2; si++) {
		KT_ASSERT_EQ(sched_start(scheds[si]), KSYNC_OK);
		KT_ASSERT_EQ(fs_init(), 0);
		uint64_t inodes0 = fs_live_inodes();
		struct sysf_ctx ctx = { fdtable_new(), fs_ctx_new() };
		const struct sysf_ctx *x = &ctx;
		KT_ASSERT(ctx.fdt && ctx.fs);
		KT_ASSERT_EQ(call(sysf_mkdirat, x, AT, U("/t_sysf"), 0755, 0), 0);
		KT_ASSERT_EQ(call(sysf_chdir, x, U("/t_sysf"), 0, 0, 0), 0);
		/* one thread: its lookups without the table's monitor (vfs.h solo), as a
		 * one-thread process's; the threads below share the table, so not solo */
		fdtable_set_solo(ctx.fdt, true);
		sequential(kt, x);
		fdtable_set_solo(ctx.fdt, false);
		long sh = call(sysf_openat, x, AT, U("shared"), LX_O_CREAT | LX_O_WRONLY, 0644);
		KT_ASSERT(sh >= 0);
		call(sysf_close, x, (uint64_t)sh, 0, 0, 0);
		int p[2];
		KT_ASSERT_EQ(call(sysf_pipe2, x, U(p), 0, 0, 0), 0);

		unsigned it = 100 * scale();
		struct worker w[NFILE + NNAME + NPIPE + 1];
		struct thread *th[NFILE + NNAME + NPIPE + 1];
		memset(w, 0, sizeof w);
		unsigned n = 0;
		for (unsigned i = 0; i < NFILE; i++, n++) {
			w[n] = (struct worker){ .x = x, .iters = it, .id = i };
			KT_ASSERT_EQ(thread_create(&th[n], file_worker, &w[n], 0, SCHED_AFFINITY_ANY,
						   "sf-file", 0), KSYNC_OK);
		}
		for (unsigned i = 0; i < NNAME; i++, n++) {
			w[n] = (struct worker){ .x = x, .iters = it, .id = i };
			KT_ASSERT_EQ(thread_create(&th[n], name_worker, &w[n], 0, SCHED_AFFINITY_ANY,
						   "sf-name", 0), KSYNC_OK);
		}
		unsigned first_writer = n;
		for (unsigned i = 0; i < NPIPE; i++, n++) {
			w[n] = (struct worker){ .x = x, .iters = it, .id = i, .fd = p[1] };
			KT_ASSERT_EQ(thread_create(&th[n], pipe_writer, &w[n], 0, SCHED_AFFINITY_ANY,
						   "sf-pwr", 0), KSYNC_OK);
		}
		unsigned reader = n++;
		w[reader] = (struct worker){ .x = x, .id = 0, .fd = p[0] };
		KT_ASSERT_EQ(thread_create(&th[reader], pipe_reader, &w[reader], 0, SCHED_AFFINITY_ANY,
					   "sf-prd", 0), KSYNC_OK);
		/* the writers' end closes once they are done: then the reader sees end of file */
		uint64_t t0 = arch_cycles();
		bool wrote = false;
		while (!wrote && arch_cycles() - t0 < ms_ticks(60000)) {
			wrote = true;
			for (unsigned i = first_writer; i < first_writer + NPIPE; i++)
				wrote &= __atomic_load_n(&w[i].finished, __ATOMIC_ACQUIRE) == 1;
			if (!wrote)
				thread_yield();
		}
		KT_ASSERT(wrote);
		KT_EXPECT_EQ(call(sysf_close, x, (uint64_t)p[1], 0, 0, 0), 0);
		bool all = false;
		while (!all && arch_cycles() - t0 < ms_ticks(60000)) {
			all = true;
			for (unsigned i = 0; i < n; i++)
				all &= __atomic_load_n(&w[i].finished, __ATOMIC_ACQUIRE) == 1;
			if (!all)
				thread_yield();
		}
		KT_ASSERT(all);
		for (unsigned i = 0; i < n; i++) {
			KT_EXPECT_EQ(thread_join(th[i]), KSYNC_OK);
			KT_EXPECT_EQ(w[i].bad, 0);
			KT_EXPECT_EQ(w[i].torn, 0u);
		}
		KT_EXPECT_EQ(w[reader].bytes, (uint64_t)NPIPE * it * PREC);
		struct lx_stat st;
		KT_EXPECT_EQ(call(sysf_newfstatat, x, AT, U("shared"), U(&st), 0), 0);
		KT_EXPECT_EQ(st.st_size, (int64_t)NFILE * it * REC);
		KT_EXPECT_EQ(call(sysf_close, x, (uint64_t)p[0], 0, 0, 0), 0);
		KT_EXPECT_EQ(fdtable_count(ctx.fdt), 0u);
		KT_EXPECT_EQ(call(sysf_unlinkat, x, AT, U("shared"), 0, 0), 0);
		KT_EXPECT_EQ(call(sysf_chdir, x, U("/"), 0, 0, 0), 0);
		KT_EXPECT_EQ(call(sysf_unlinkat, x, AT, U("/t_sysf"), LX_AT_REMOVEDIR, 0), 0);
		fdtable_put(ctx.fdt);
		fs_ctx_put(ctx.fs);
		KT_EXPECT_EQ(fs_live_inodes(), inodes0);
		kt_diag(kt, "%s: %u threads, %u rounds each: file, name, pipe calls clean", scheds[si], n, it);
		KT_EXPECT_EQ(sched_stop(), KSYNC_OK);
	}
}
