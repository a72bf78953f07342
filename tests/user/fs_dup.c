/* descriptors through kernel/fs (issue 24): dup, dup2, dup3, fcntl F_GETFD/F_SETFD/
 * F_GETFL/F_SETFL/F_DUPFD/F_DUPFD_CLOEXEC; dup'ed descriptors share one offset.
 * Usage: fs_dup CASE. */
#include "ut.h"
#include <fcntl.h>
#include <sys/stat.h>

static void c_dup(void)
{
	int fd = open("fdup.tmp", O_CREAT | O_RDWR | O_TRUNC, 0644);
	int d = dup(fd);
	printf("dup lowest free=%d\n", d == fd + 1);
	SHOW("write via fd", write(fd, "abc", 3));
	SHOW("pos via dup", lseek(d, 0, SEEK_CUR));
	SHOW("write via dup", write(d, "def", 3));
	SHOW("pos via fd", lseek(fd, 0, SEEK_CUR));
	SHOW("dup2 to 40", dup2(fd, 40));
	SHOW("seek via 40", lseek(40, 1, SEEK_SET));
	SHOW("pos via fd", lseek(fd, 0, SEEK_CUR));
	SHOW("dup2 over open", dup2(d, 40));
	SHOW("dup2 same", dup2(40, 40));
	SHOW("dup2 bad old", dup2(99, 41));
	SHOW("dup2 closed same", dup2(98, 98));
	SHOW("dup3 same", dup3(40, 40, 0));
	SHOW("dup3 bad flag", dup3(40, 41, 1));
	SHOW("dup3 cloexec", dup3(fd, 41, O_CLOEXEC));
	SHOW("getfd 41", fcntl(41, F_GETFD));
	SHOW("getfd 40", fcntl(40, F_GETFD));
	SHOW("close fd", close(fd));
	char b[8] = {0};
	lseek(d, 0, SEEK_SET);
	SHOW("read via dup after close", read(d, b, 7));
	printf("got [%s]\n", b);
	SHOW("close 40", close(40));
	SHOW("close 40 again", close(40));
	SHOW("dup to the freed slot", dup(d) == fd);
	close(41);
	close(d);
	unlink("fdup.tmp");
}

static void c_fcntl(void)
{
	int fd = open("fcntl.tmp", O_CREAT | O_WRONLY | O_APPEND | O_TRUNC, 0644);
	SHOW("GETFL", fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	SHOW("SETFL nonblock", fcntl(fd, F_SETFL, O_NONBLOCK));
	SHOW("GETFL", fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	SHOW("SETFL ignores access mode", fcntl(fd, F_SETFL, O_RDWR | O_APPEND));
	SHOW("GETFL", fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	SHOW("GETFD", fcntl(fd, F_GETFD));
	SHOW("SETFD", fcntl(fd, F_SETFD, FD_CLOEXEC));
	SHOW("GETFD", fcntl(fd, F_GETFD));
	int d = fcntl(fd, F_DUPFD, 50);
	printf("DUPFD >=50: %d\n", d);
	SHOW("GETFD of DUPFD", fcntl(d, F_GETFD));
	int e = fcntl(fd, F_DUPFD_CLOEXEC, 50);
	printf("DUPFD_CLOEXEC next: %d\n", e);
	SHOW("GETFD of DUPFD_CLOEXEC", fcntl(e, F_GETFD));
	SHOW("GETFL shared", fcntl(d, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	SHOW("DUPFD out of range", fcntl(fd, F_DUPFD, 1 << 30));
	SHOW("bad cmd", fcntl(fd, 9999));
	SHOW("O_CLOEXEC open", fcntl(open("fcntl.tmp", O_RDONLY | O_CLOEXEC), F_GETFD));
	int p[2];
	pipe2(p, O_NONBLOCK | O_CLOEXEC);
	SHOW("pipe2 GETFL", fcntl(p[0], F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	SHOW("pipe2 GETFL write end", fcntl(p[1], F_GETFL) & (O_ACCMODE | O_NONBLOCK));
	SHOW("pipe2 GETFD", fcntl(p[1], F_GETFD));
	unlink("fcntl.tmp");
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"dup", c_dup}, {"fcntl", c_fcntl},
	};
	umask(022);
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
