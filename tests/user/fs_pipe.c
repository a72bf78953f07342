/* pipes through kernel/fs (issue 24): a parent writes, its child reads (end of file when
 * the last writer closed), EPIPE with SIGPIPE when no reader is left (the default action
 * kills: the parent's wait4 sees WIFSIGNALED), EPIPE alone with SIGPIPE ignored,
 * O_NONBLOCK's EAGAIN, poll, kill of a blocked reader. Usage: fs_pipe CASE. */
#include "ut.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void status(const char *what, int st)
{
	if (WIFEXITED(st))
		printf("%s: exited %d\n", what, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		printf("%s: killed by signal %d\n", what, WTERMSIG(st));
	else
		printf("%s: status 0x%x\n", what, st);
}

static void c_fork(void)
{
	int p[2];
	SHOW("pipe", pipe(p));
	pid_t c = fork();
	if (c == 0) {
		close(p[1]);
		char buf[100];
		long total = 0, r, reads = 0;
		unsigned sum = 0;
		while ((r = read(p[0], buf, sizeof buf)) > 0) {
			for (long i = 0; i < r; i++)
				sum = sum * 31 + (unsigned char)buf[i];
			total += r;
			reads++;
		}
		printf("child: read %ld bytes, sum %u, last read %ld errno %d\n", total, sum, r,
		       r < 0 ? errno : 0);
		fflush(stdout);
		_exit(reads > 0 ? 7 : 1);
	}
	close(p[0]);
	static char data[20000];
	for (unsigned i = 0; i < sizeof data; i++)
		data[i] = (char)(i * 13 + 1);
	long w = 0;
	for (unsigned i = 0; i < sizeof data; i += 1000)	/* blocks when the pipe is full */
		w += write(p[1], data + i, 1000);
	printf("parent: wrote %ld\n", w);
	fflush(stdout);
	close(p[1]);
	int st;
	SHOW("wait", waitpid(c, &st, 0) == c);
	status("child", st);
}

static void c_sigpipe(void)
{
	int p[2];
	pipe(p);
	close(p[0]);
	pid_t c = fork();
	if (c == 0) {
		write(p[1], "x", 1);	/* SIGPIPE ends it here */
		printf("child: still alive\n");
		_exit(0);
	}
	close(p[1]);
	int st;
	waitpid(c, &st, 0);
	status("writer", st);
}

static void c_epipe(void)
{
	signal(SIGPIPE, SIG_IGN);
	int p[2];
	pipe(p);
	close(p[0]);
	SHOW("write no reader", write(p[1], "x", 1));
	SHOW("writev no reader", writev(p[1], &(struct iovec){"y", 1}, 1));
	/* a reader that exits: its end closes with it */
	int q[2];
	pipe(q);
	pid_t c = fork();
	if (c == 0)
		_exit(0);	/* holds q[0] and q[1] until it exits */
	close(q[0]);
	waitpid(c, NULL, 0);
	SHOW("write after reader exited", write(q[1], "z", 1));
}

static void c_nonblock(void)
{
	int p[2];
	SHOW("pipe2", pipe2(p, O_NONBLOCK));
	char b[4096];
	SHOW("read empty", read(p[0], b, 1));
	memset(b, 'x', sizeof b);
	long total = 0, r;
	while ((r = write(p[1], b, sizeof b)) > 0)
		total += r;
	printf("filled: %d, stop errno %d\n", total >= 4096, errno);
	long got = 0;
	while ((r = read(p[0], b, sizeof b)) > 0)
		got += r;
	printf("drained all: %d, stop errno %d\n", got == total, errno);
	close(p[1]);
	SHOW("read at eof", read(p[0], b, 1));
	int q[2];
	pipe(q);
	SHOW("set nonblock", fcntl(q[0], F_SETFL, O_NONBLOCK));
	SHOW("read empty", read(q[0], b, 1));
	SHOW("write", write(q[1], "ab", 2));
	SHOW("read", read(q[0], b, 10));
	SHOW("lseek pipe", lseek(q[0], 0, SEEK_CUR));
	struct stat st;
	fstat(q[0], &st);
	printf("fifo=%d\n", S_ISFIFO(st.st_mode));
	SHOW("read write end", read(q[1], b, 1));
	SHOW("write read end", write(q[0], b, 1));
}

/* a reader blocked on an empty pipe (its writer alive) is ended by kill: the signal
 * must wake the wait, not only mark itself pending */
static void c_kill(void)
{
	int p[2];
	pipe(p);
	pid_t c = fork();
	if (c == 0) {
		char b;
		read(p[0], &b, 1);	/* blocks: the parent keeps the write end */
		printf("reader: read returned\n");
		fflush(stdout);
		_exit(0);
	}
	struct timespec ts = {0, 20000000};
	nanosleep(&ts, NULL);	/* (blocked by now or not: both end the same way) */
	SHOW("kill", kill(c, SIGTERM));
	int st;
	waitpid(c, &st, 0);
	status("reader", st);
	close(p[1]);
}

static void c_poll(void)
{
	int p[2];
	pipe(p);
	struct pollfd f[3] = { {p[0], POLLIN, 0}, {p[1], POLLOUT, 0}, {99, POLLIN, 0} };
	SHOW("poll", poll(f, 3, 0));
	printf("revents %x %x %x\n", f[0].revents, f[1].revents, f[2].revents);
	write(p[1], "hi", 2);
	SHOW("poll after write", poll(f, 2, 0));
	printf("revents %x %x\n", f[0].revents, f[1].revents);
	close(p[1]);
	f[1].fd = -1;
	SHOW("poll after close", poll(f, 2, 0));
	printf("revents %x %x\n", f[0].revents, f[1].revents);
	char b[4];
	read(p[0], b, 4);
	SHOW("poll drained", poll(f, 1, 0));
	printf("revents %x\n", f[0].revents);
	SHOW("poll none", poll(NULL, 0, 0));
	/* a child writes while the parent sleeps in poll */
	int q[2];
	pipe(q);
	pid_t c = fork();
	if (c == 0) {
		write(q[1], "later", 5);
		_exit(0);
	}
	struct pollfd g = { q[0], POLLIN, 0 };
	SHOW("poll waits", poll(&g, 1, -1));
	printf("revents %x\n", g.revents);
	waitpid(c, NULL, 0);
	int r[2];
	pipe(r);
	struct timespec ts = {0, 1000000};
	struct pollfd h = { r[0], POLLIN, 0 };
	SHOW("ppoll timeout", ppoll(&h, 1, &ts, NULL));
	printf("revents %x\n", h.revents);
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"fork", c_fork}, {"sigpipe", c_sigpipe}, {"epipe", c_epipe},
		{"nonblock", c_nonblock}, {"poll", c_poll}, {"kill", c_kill},
	};
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
