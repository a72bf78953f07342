/* dyn_sock: socketpair(AF_UNIX, SOCK_STREAM), what hackbench's default mode uses: both
 * directions, poll, end of file and EPIPE after the peer closed, non-blocking EAGAIN,
 * across fork, and the error paths. Usage: dyn_sock CASE. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW(name, expr) do { errno = 0; long r_ = (long)(expr); \
	if (r_ == -1) \
		printf("%s = -1 errno %d\n", name, errno); \
	else \
		printf("%s = %ld\n", name, r_); \
	fflush(stdout); } while (0)

static int pollone(int fd, short ev)
{
	struct pollfd p = { fd, ev, 0 };
	int n = poll(&p, 1, 0);
	return n < 0 ? -1 : p.revents;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "rw";
	int sv[2];
	if (!strcmp(c, "rw")) {
		SHOW("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		struct stat st;
		fstat(sv[0], &st);
		printf("a socket %d\n", S_ISSOCK(st.st_mode));
		printf("poll empty: 0x%x\n", pollone(sv[0], POLLIN | POLLOUT));
		SHOW("write a->b", write(sv[0], "hello", 5));
		printf("poll b: 0x%x\n", pollone(sv[1], POLLIN | POLLOUT));
		char b[64] = { 0 };
		SHOW("read b", read(sv[1], b, sizeof b));
		printf("got %s\n", b);
		SHOW("write b->a", write(sv[1], "world!", 6));
		memset(b, 0, sizeof b);
		SHOW("read a", read(sv[0], b, sizeof b));
		printf("got %s\n", b);
		int n;
		write(sv[0], "xyz", 3);
		SHOW("FIONREAD", ioctl(sv[1], FIONREAD, &n));
		printf("bytes %d\n", n);
		fflush(stdout);
		pid_t k = fork();
		if (k == 0) {
			close(sv[0]);
			char m[8] = { 0 };
			read(sv[1], m, 3);
			write(sv[1], "from child", 10);
			_exit(m[0] == 'x' ? 0 : 1);
		}
		close(sv[1]);
		memset(b, 0, sizeof b);
		SHOW("read from child", read(sv[0], b, sizeof b));
		printf("got %s\n", b);
		int st2;
		waitpid(k, &st2, 0);
		printf("child exit %d\n", WEXITSTATUS(st2));
		printf("poll after the peer left: 0x%x\n", pollone(sv[0], POLLIN | POLLOUT));
		SHOW("read at end", read(sv[0], b, sizeof b));
	} else if (!strcmp(c, "epipe")) {
		socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
		signal(SIGPIPE, SIG_IGN);
		SHOW("write before", write(sv[0], "ab", 2));
		close(sv[1]);
		SHOW("write after close", write(sv[0], "ab", 2));
		signal(SIGPIPE, SIG_DFL);
		fflush(stdout);
		pid_t k = fork();
		if (k == 0) {
			write(sv[0], "ab", 2);
			_exit(0);
		}
		int st;
		waitpid(k, &st, 0);
		printf("child killed by %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(c, "nonblock")) {
		SHOW("socketpair nonblock", socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv));
		printf("flags nonblock %d cloexec %d\n", (fcntl(sv[0], F_GETFL) & O_NONBLOCK) != 0,
		       fcntl(sv[1], F_GETFD) == FD_CLOEXEC);
		char b[8];
		SHOW("read empty", read(sv[0], b, sizeof b));
		fcntl(sv[0], F_SETFL, 0);
		printf("flags now %d\n", (fcntl(sv[0], F_GETFL) & O_NONBLOCK) != 0);
		write(sv[1], "q", 1);
		SHOW("blocking read with data", read(sv[0], b, sizeof b));
	} else if (!strcmp(c, "errors")) {
		SHOW("AF_INET", socketpair(AF_INET, SOCK_STREAM, 0, sv));
		SHOW("family 12345", socketpair(12345, SOCK_STREAM, 0, sv));
		SHOW("type 99", socketpair(AF_UNIX, 99, 0, sv));
		SHOW("bad flag", socketpair(AF_UNIX, SOCK_STREAM | 0x100, 0, sv));
		SHOW("protocol 7", socketpair(AF_UNIX, SOCK_STREAM, 7, sv));
		errno = 0;
		long r = syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, (long)16);
		printf("bad vector %ld errno %d\n", r, errno);
		/* no descriptor leaked by the failed call: the next is the lowest free one */
		int d = dup(0);
		printf("next descriptor %d\n", d);
	} else {
		printf("unknown case\n");
		return 2;
	}
	return 0;
}
