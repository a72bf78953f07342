/*
 * ubench_io.h - the small wrappers bench/user/sprite.c and bench/user/smload.c share: a
 * bad argument (usage), a child's status, the monotonic clock, bounded paths, generated
 * text (a seeded xorshift, a bounded buffer, identifiers, files), and
 * open/close/pipe/read/write that fail with the call and strerror (die, fail), ksync's
 * one-line /proc files (read_one_line). Each
 * program includes it after its own usage(), with UBENCH_PROG (its name, the messages'
 * prefix), UBENCH_PART (the variable naming the part running), main_pid, on_failure, self
 * (argv[0]), `dir` and PATHMAX defined.
 */
#ifndef KSYNC_BENCH_UBENCH_IO_H
#define KSYNC_BENCH_UBENCH_IO_H

/* ---- failures ---- */

static noreturn void vfail(int err, const char *fmt, va_list ap)
{
	char msg[1024];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (err)
		fprintf(stderr, UBENCH_PROG ": %s: %s: %s\n", UBENCH_PART, msg, strerror(err));
	else
		fprintf(stderr, UBENCH_PROG ": %s: %s\n", UBENCH_PART, msg);
	if (getpid() == main_pid) {
		fflush(stdout);
		void (*tidy)(void) = on_failure;
		on_failure = NULL;		/* a failure while tidying just exits */
		if (tidy)
			tidy();
	}
	_exit(1);	/* children too: no stdio buffers of the parent's flushed twice */
}

/* a system call failed: what, and strerror(errno) */
static noreturn void __attribute__((format(printf, 1, 2))) die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;
	va_start(ap, fmt);
	vfail(err ? err : EIO, fmt, ap);
}

/* a failure that is not a system call's */
static noreturn void __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfail(0, fmt, ap);
}

static noreturn void __attribute__((format(printf, 1, 2))) bad_arg(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	usage(msg);
}

static bool status_ok(int st)
{
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static noreturn void status_fail(const char *who, pid_t pid, int st)
{
	if (WIFEXITED(st))
		fail("%s (pid %d) exited with status %d", who, (int)pid, WEXITSTATUS(st));
	fail("%s (pid %d) was killed by signal %d", who, (int)pid, WTERMSIG(st));
}

/* ---- small wrappers ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts))
		die("clock_gettime");
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void __attribute__((format(printf, 2, 3))) mkpath(char *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, PATHMAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATHMAX)
		fail("path too long (%s...)", dir);
}

static int xopen(const char *path, int flags)
{
	int fd = open(path, flags, 0644);
	if (fd < 0)
		die("open %s", path);
	return fd;
}

static void xclose(int fd, const char *what)
{
	if (close(fd))
		die("close %s", what);
}

static void xpipe(int p[2], const char *what)
{
	if (pipe(p))
		die("pipe (%s)", what);
}

static void write_all(int fd, const void *buf, size_t n, const char *what)
{
	const char *p = buf;
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0)
			die("write %s", what);
		if (k == 0) {
			errno = EIO;
			die("write %s (wrote nothing)", what);
		}
		p += k;
		n -= (size_t)k;
	}
}

/* read until EOF or cap bytes; the count */
static size_t read_all(int fd, void *buf, size_t cap, const char *what)
{
	size_t got = 0;
	while (got < cap) {
		ssize_t k = read(fd, (char *)buf + got, cap - got);
		if (k < 0)
			die("read %s", what);
		if (k == 0)
			break;
		got += (size_t)k;
	}
	return got;
}

/* A file of one line of text (ksync's /proc/ksync-* JSON files) into buf, its newline
 * dropped; buf holds max + 1 bytes. -1 if there is no such file (ENOENT: not ksync, or not
 * this build); a text that is empty, longer than max or of several lines fails. */
static __attribute__((unused)) long read_one_line(const char *path, char *buf, size_t max)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		if (errno == ENOENT)
			return -1;
		die("open %s", path);
	}
	size_t n = read_all(fd, buf, max + 1, path);
	xclose(fd, path);
	if (n > max)
		fail("%s: more than %zu bytes", path, max);
	if (n && buf[n - 1] == '\n')
		n--;
	if (n == 0)
		fail("%s: empty", path);
	if (memchr(buf, '\n', n))
		fail("%s: more than one line", path);
	return (long)n;
}

static void put1(int fd, int c, const char *what)
{
	unsigned char b = (unsigned char)c;
	ssize_t k = write(fd, &b, 1);
	if (k != 1) {
		if (k == 0)
			errno = EIO;
		die("write %s", what);
	}
}

/* one byte, or -1 at EOF */
static int get1(int fd, const char *what)
{
	unsigned char b;
	ssize_t k = read(fd, &b, 1);
	if (k < 0)
		die("read %s", what);
	return k ? b : -1;
}

/* execve this program (argv[0]) with args (NULL-terminated, without argv[0]) */
static noreturn void exec_self(const char *a1, const char *a2, const char *a3)
{
	char *argv[] = { (char *)self, (char *)a1, (char *)a2, (char *)a3, NULL };
	execve(self, argv, environ);
	die("execve %s", self);
}

/* remove a file or an empty directory; strict: a failure other than ENOENT fails */
static void rm(const char *path, bool is_dir, bool strict)
{
	if ((is_dir ? rmdir(path) : unlink(path)) && errno != ENOENT && strict)
		die("%s %s", is_dir ? "rmdir" : "unlink", path);
}

static void xmkdir(const char *path)
{
	if (mkdir(path, 0755))
		die("mkdir %s", path);
}

/* DIR: made if missing, else it must be a directory */
static void prepare_dir(void)
{
	struct stat st;
	if (mkdir(dir, 0755) == 0)
		return;
	if (errno != EEXIST)
		die("mkdir %s", dir);
	if (stat(dir, &st))
		die("stat %s", dir);
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		die("DIR %s", dir);
	}
}

/* ---- generated text: a seeded xorshift (rng, set by the caller) and a bounded buffer ---- */

static uint32_t rng;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng % n;
}

struct text {
	char *buf;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3))) tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->cap - t->len)
		fail("generated text larger than %zu bytes", t->cap);
	t->len += (size_t)n;
}

/* a C identifier from two of the program's words (its vocabulary: words[0..n-1]) */
static void text_ident(struct text *t, const char *const *words, size_t n, uint32_t a, uint32_t b)
{
	tprintf(t, "%s_%s", words[a % n], words[b % n]);
}

/* t into a new file at path (O_EXCL: a file already there fails) or over it (O_TRUNC) */
static void text_write(const char *path, const struct text *t, int how)
{
	int fd = xopen(path, O_WRONLY | O_CREAT | how);
	write_all(fd, t->buf, t->len, path);
	xclose(fd, path);
}

#endif
