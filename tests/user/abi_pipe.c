/* pipes' corners (issue 24, differential): pipe2's flags (O_CLOEXEC, O_NONBLOCK, EINVAL,
 * EFAULT), poll's POLLIN/POLLOUT/POLLHUP/POLLERR/POLLNVAL at timeout 0, PIPE_BUF
 * atomicity (four writers, the reader sees whole records), EAGAIN of a full non-blocking
 * pipe, EINTR of a blocked write and of a poll by a handler, EPIPE with SIGPIPE blocked
 * (the signal stays pending). Usage: abi_pipe CASE. */
#include "ut.h"
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))

static void c_pipe2(void)
{
	int p[2];
	SHOW("pipe2 0", pipe2(p, 0));
	printf("FD %d %d FL %d %d\n", fcntl(p[0], F_GETFD), fcntl(p[1], F_GETFD),
	       fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK), fcntl(p[1], F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	close(p[0]);
	close(p[1]);
	SHOW("pipe2 O_CLOEXEC", pipe2(p, O_CLOEXEC));
	printf("FD %d %d FL %d %d\n", fcntl(p[0], F_GETFD), fcntl(p[1], F_GETFD),
	       fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK), fcntl(p[1], F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	close(p[0]);
	close(p[1]);
	SHOW("pipe2 O_NONBLOCK", pipe2(p, O_NONBLOCK));
	printf("FD %d %d FL %d %d\n", fcntl(p[0], F_GETFD), fcntl(p[1], F_GETFD),
	       fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK), fcntl(p[1], F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	close(p[0]);
	close(p[1]);
	int q[2] = { -7, -7 };
	SHOW("pipe2 O_APPEND", pipe2(q, O_APPEND));
	SHOW("pipe2 O_RDWR", pipe2(q, O_RDWR));
	SHOW("pipe2 O_CREAT", pipe2(q, O_CREAT));
	SHOW("pipe2 -1", pipe2(q, -1));
	printf("untouched %d %d\n", q[0], q[1]);
	RAW("pipe2 NULL", SYS_pipe2, 0, 0, 0, 0, 0, 0);
	RAW("pipe2 kernel pointer", SYS_pipe2, (long)0xffffffff81000000ul, 0, 0, 0, 0, 0);
	int a = open("/dev/null", O_RDONLY);
	close(a);
	RAW("pipe2 bad pointer", SYS_pipe2, 0x1000, 0, 0, 0, 0, 0);
	int b = open("/dev/null", O_RDONLY);
	printf("no descriptor leaked %d\n", a == b);
	close(b);
}

static void pr(const char *what, struct pollfd *f, int n, long r)
{
	printf("%s = %ld:", what, r);
	for (int i = 0; i < n; i++)
		printf(" %x", f[i].revents);
	printf("\n");
}

static void c_pollhup(void)
{
	int p[2];
	pipe(p);
	struct pollfd f[4] = { {p[0], POLLIN | POLLOUT, 0}, {p[1], POLLIN | POLLOUT, 0},
			       {-1, POLLIN, 7}, {p[0], 0, 0} };
	pr("empty", f, 4, poll(f, 4, 0));
	write(p[1], "x", 1);
	pr("one byte", f, 4, poll(f, 4, 0));
	close(p[1]);
	f[1].fd = -5;
	pr("writer gone, data left", f, 4, poll(f, 4, 0));
	char c;
	read(p[0], &c, 1);
	pr("writer gone, drained", f, 4, poll(f, 4, 0));
	close(p[0]);
	pr("both closed (POLLNVAL)", f, 4, poll(f, 4, 0));
	pipe(p);
	close(p[0]);
	struct pollfd g = { p[1], POLLOUT, 0 };
	pr("reader gone", &g, 1, poll(&g, 1, 0));
	g.events = 0;
	pr("reader gone, no events asked", &g, 1, poll(&g, 1, 0));
	close(p[1]);
	RAW("poll negative timeout with nothing", SYS_poll, 0, 0, 0, 0, 0, 0);
	struct timespec ts = { 0, 0 };
	pipe(p);
	struct pollfd h = { p[1], POLLOUT, 0 };
	RAW("ppoll zero timeout", SYS_ppoll, (long)&h, 1, (long)&ts, 0, 8, 0);
	struct timespec bad = { 0, 1000000000 };
	RAW("ppoll bad nsec", SYS_ppoll, (long)&h, 1, (long)&bad, 0, 8, 0);
	RAW("ppoll bad sigsetsize", SYS_ppoll, (long)&h, 1, (long)&ts, (long)&ts, 4, 0);
	close(p[0]);
	close(p[1]);
}

#define WRITERS 4
#define ROUNDS 100
static void c_pipebuf(void)
{
	int p[2];
	pipe(p);
	fflush(stdout);
	pid_t kids[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		kids[w] = fork();
		if (kids[w] == 0) {
			close(p[0]);
			static char rec[PIPE_BUF];
			/* writer w's records are PIPE_BUF >> w bytes of its letter */
			size_t len = PIPE_BUF >> w;
			memset(rec, 'a' + w, len);
			for (int i = 0; i < ROUNDS; i++)
				if (write(p[1], rec, len) != (long)len)
					_exit(1);
			_exit(0);
		}
	}
	close(p[1]);
	/* parse the stream: each run of one letter must be a whole number of its records */
	static char buf[3000];
	long n, total = 0, recs[WRITERS] = {0}, run = 0, torn = 0;
	int cur = -1;
	while ((n = read(p[0], buf, sizeof buf)) > 0) {
		for (long i = 0; i < n; i++) {
			int w = buf[i] - 'a';
			if (w != cur) {
				if (cur >= 0)
					torn += run % (PIPE_BUF >> cur) != 0;
				cur = w;
				run = 0;
			}
			if (w < 0 || w >= WRITERS) {
				torn++;
				continue;
			}
			if (++run % (PIPE_BUF >> w) == 0)
				recs[w]++;
		}
		total += n;
	}
	torn += cur >= 0 && run % (PIPE_BUF >> cur) != 0;
	int ok = 1;
	for (int w = 0; w < WRITERS; w++) {
		int st;
		waitpid(kids[w], &st, 0);
		ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	printf("PIPE_BUF %d, writers ok %d, bytes %ld, torn %ld, records %ld %ld %ld %ld\n",
	       PIPE_BUF, ok, total, torn, recs[0], recs[1], recs[2], recs[3]);
}

static void c_eagain(void)
{
	int p[2];
	pipe2(p, O_NONBLOCK);
	static char b[PIPE_BUF];
	memset(b, 'q', sizeof b);
	long total = 0, r;
	while ((r = write(p[1], b, PIPE_BUF)) > 0)	/* whole records, then single bytes */
		total += r;
	while ((r = write(p[1], b, 1)) == 1)
		total++;
	printf("filled %d errno %d\n", total >= PIPE_BUF, errno);
	SHOW("write 1 more", write(p[1], b, 1));
	SHOW("write PIPE_BUF more", write(p[1], b, PIPE_BUF));
	SHOW("write 0 bytes", write(p[1], b, 0));
	long got = 0;
	while ((r = read(p[0], b, sizeof b)) > 0)
		got += r;
	printf("read back all %d errno %d\n", got == total, errno);
	SHOW("write PIPE_BUF now", write(p[1], b, PIPE_BUF));
	/* a blocking read end over it: only the non-blocking write end says EAGAIN */
	int d = dup(p[0]);
	SHOW("read end still non-blocking", fcntl(d, F_GETFL) & O_NONBLOCK);
	close(d);
	close(p[0]);
	close(p[1]);
}

static volatile sig_atomic_t got;
static void on_usr1(int s) { got = s; }

/* a child signals its parent (the caller) after a short sleep, then exits */
static pid_t poke_later(void)
{
	pid_t parent = getpid();
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		struct timespec t = { 0, 50 * 1000 * 1000 };
		nanosleep(&t, NULL);
		kill(parent, SIGUSR1);
		_exit(0);
	}
	return c;
}

static void c_eintr(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;		/* no SA_RESTART */
	sigaction(SIGUSR1, &sa, NULL);
	int p[2];
	pipe(p);
	/* fill it (non-blocking), then a blocking write of one byte sleeps */
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	static char b[PIPE_BUF];
	while (write(p[1], b, PIPE_BUF) > 0)
		;
	while (write(p[1], b, 1) == 1)
		;
	fcntl(p[1], F_SETFL, 0);
	pid_t c = poke_later();
	SHOW("blocked write", write(p[1], b, 1));
	printf("handler ran %d\n", got == SIGUSR1);
	waitpid(c, NULL, 0);
	got = 0;
	int q[2];
	pipe(q);
	struct pollfd f = { q[0], POLLIN, 0 };
	c = poke_later();
	SHOW("blocked poll", poll(&f, 1, -1));
	printf("handler ran %d revents %x\n", got == SIGUSR1, f.revents);
	waitpid(c, NULL, 0);
	/* with SA_RESTART the poll is not restarted: EINTR still */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	got = 0;
	c = poke_later();
	SHOW("blocked poll, SA_RESTART", poll(&f, 1, -1));
	printf("handler ran %d\n", got == SIGUSR1);
	waitpid(c, NULL, 0);
	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

static void c_sigpipe_blocked(void)
{
	sigset_t s, pend;
	sigemptyset(&s);
	sigaddset(&s, SIGPIPE);
	sigprocmask(SIG_BLOCK, &s, NULL);
	int p[2];
	pipe(p);
	close(p[0]);
	SHOW("write, no reader", write(p[1], "x", 1));
	sigpending(&pend);
	printf("SIGPIPE pending %d\n", sigismember(&pend, SIGPIPE));
	SHOW("write 0 bytes, no reader", write(p[1], "x", 0));
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigpending(&pend);
	printf("SIG_IGN discards it %d\n", !sigismember(&pend, SIGPIPE));
	SHOW("write again", write(p[1], "x", 1));
	sigpending(&pend);
	printf("pending now %d\n", sigismember(&pend, SIGPIPE));
	close(p[1]);
}

static void c_eof(void)
{
	int p[2];
	pipe(p);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {		/* the child's copy of the write end keeps the pipe open */
		close(p[0]);
		struct timespec t = { 0, 30 * 1000 * 1000 };
		nanosleep(&t, NULL);
		write(p[1], "late", 4);
		_exit(0);
	}
	write(p[1], "early", 5);
	close(p[1]);
	char b[16] = {0};
	SHOW("read the parent's bytes", read(p[0], b, sizeof b - 1));
	printf("[%s]\n", b);
	memset(b, 0, sizeof b);
	SHOW("read waits for the child's", read(p[0], b, sizeof b - 1));
	printf("[%s]\n", b);
	SHOW("then end of file", read(p[0], b, sizeof b));
	SHOW("and again", read(p[0], b, sizeof b));
	waitpid(c, NULL, 0);
	int q[2];
	pipe(q);
	int d = dup(q[1]);
	close(q[1]);
	write(d, "x", 1);
	close(d);
	SHOW("a dup was the last writer: data", read(q[0], b, sizeof b));
	SHOW("then end of file", read(q[0], b, sizeof b));
	close(q[0]);
	pipe(q);
	write(q[1], "abcdefg", 7);
	char x[4] = {0}, y[8] = {0};
	struct iovec v[2] = { {x, 3}, {y, 7} };
	SHOW("readv of a pipe fills segments", readv(q[0], v, 2));
	printf("[%s] [%s]\n", x, y);
	close(q[1]);
	close(p[0]);
	close(q[0]);
	SHOW("read of a closed end", read(q[0], b, 1));
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"pipe2", c_pipe2}, {"pollhup", c_pollhup}, {"pipebuf", c_pipebuf},
		{"eagain", c_eagain}, {"eintr", c_eintr}, {"sigpipe_blocked", c_sigpipe_blocked},
		{"eof", c_eof},
	};
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
