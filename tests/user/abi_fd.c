/* descriptors' corners (issue 24, differential): fcntl F_SETFL (O_NONBLOCK on a pipe,
 * O_APPEND on a file, the bits it ignores), F_DUPFD/F_DUPFD_CLOEXEC errors, FD_CLOEXEC
 * across execve (the program execs itself as "cloexec-child" to look), dup2/dup3 errors,
 * ioctl on what is not a terminal (ENOTTY: a file, a pipe, /dev/null - the test's stdin
 * and stdout are /dev/null and a pipe on both kernels) and FIONREAD.
 * Usage: abi_fd CASE. */
#include "ut.h"
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))
#define FL(fd) (fcntl(fd, F_GETFL) & (O_ACCMODE | O_APPEND | O_NONBLOCK))

static void c_setfl(void)
{
	int p[2];
	pipe(p);
	char b[4];
	SHOW("GETFL read end", FL(p[0]));
	SHOW("GETFL write end", FL(p[1]));
	SHOW("SETFL O_NONBLOCK", fcntl(p[0], F_SETFL, O_NONBLOCK));
	SHOW("read empty", read(p[0], b, 4));
	SHOW("the write end stays blocking", FL(p[1]));
	int d = dup(p[0]);
	SHOW("a dup shares it", FL(d));
	SHOW("SETFL 0 via the dup", fcntl(d, F_SETFL, 0));
	SHOW("GETFL read end", FL(p[0]));
	SHOW("SETFL ignores O_CREAT|O_TRUNC|O_EXCL", fcntl(p[1], F_SETFL, O_CREAT | O_TRUNC | O_EXCL | O_NONBLOCK));
	SHOW("GETFL write end", FL(p[1]));
	int fd = open("afd_setfl", O_CREAT | O_RDWR | O_TRUNC, 0644);
	SHOW("GETFL O_RDWR", FL(fd));
	SHOW("SETFL O_APPEND", fcntl(fd, F_SETFL, O_APPEND));
	write(fd, "ab", 2);
	lseek(fd, 0, SEEK_SET);
	SHOW("appends", write(fd, "c", 1) == 1 && lseek(fd, 0, SEEK_CUR) == 3);
	SHOW("SETFL O_WRONLY ignored", fcntl(fd, F_SETFL, O_WRONLY));
	SHOW("GETFL", FL(fd));
	SHOW("still readable", pread(fd, b, 3, 0));
	SHOW("SETFL bad fd", fcntl(99, F_SETFL, O_NONBLOCK));
	SHOW("GETFL bad fd", fcntl(-1, F_GETFL));
	close(fd);
	close(d);
	close(p[0]);
	close(p[1]);
	unlink("afd_setfl");
}

static void c_dupfd(void)
{
	int fd = open("afd_dupfd", O_CREAT | O_RDWR | O_TRUNC, 0644);
	SHOW("F_DUPFD -1", fcntl(fd, F_DUPFD, -1));
	SHOW("F_DUPFD_CLOEXEC -1", fcntl(fd, F_DUPFD_CLOEXEC, -1));
	SHOW("F_DUPFD bad fd", fcntl(77, F_DUPFD, 0));
	int a = fcntl(fd, F_DUPFD, 0);
	printf("F_DUPFD 0 lowest=%d\n", a == fd + 1);
	int b = fcntl(fd, F_DUPFD, 30);
	int c = fcntl(fd, F_DUPFD, 30);
	printf("F_DUPFD 30 twice: %d %d\n", b, c);
	close(b);
	int e = fcntl(fd, F_DUPFD_CLOEXEC, 30);
	printf("F_DUPFD_CLOEXEC reuses 30: %d flags %d\n", e, fcntl(e, F_GETFD));
	SHOW("F_SETFD other bits", fcntl(e, F_SETFD, 0xfe));
	SHOW("F_GETFD", fcntl(e, F_GETFD));
	SHOW("F_SETFD 3", fcntl(e, F_SETFD, 3));
	SHOW("F_GETFD", fcntl(e, F_GETFD));
	SHOW("dup2 to -1", dup2(fd, -1));
	SHOW("dup2 from -1", dup2(-1, 40));
	SHOW("dup3 O_CLOEXEC|O_NONBLOCK", dup3(fd, 40, O_CLOEXEC | O_NONBLOCK));
	SHOW("dup3 to -1", dup3(fd, -1, 0));
	SHOW("dup3 bad old", dup3(55, 40, 0));
	SHOW("dup3 same bad", dup3(55, 55, 0));
	SHOW("dup3 0", dup3(fd, 40, 0));
	SHOW("its F_GETFD", fcntl(40, F_GETFD));
	SHOW("dup3 cloexec over it", dup3(fd, 40, O_CLOEXEC));
	SHOW("its F_GETFD", fcntl(40, F_GETFD));
	SHOW("dup2 over a cloexec one clears it", dup2(fd, 40));
	SHOW("its F_GETFD", fcntl(40, F_GETFD));
	close(40);
	close(a);
	close(c);
	close(e);
	close(fd);
	unlink("afd_dupfd");
}

static void c_cloexec(const char *self)
{
	int keep = open("afd_cloexec", O_CREAT | O_RDWR | O_TRUNC, 0644);
	int gone = open("afd_cloexec", O_RDONLY | O_CLOEXEC);
	int set = dup(keep);
	fcntl(set, F_SETFD, FD_CLOEXEC);
	int cleared = fcntl(keep, F_DUPFD_CLOEXEC, 0);
	fcntl(cleared, F_SETFD, 0);
	int p[2];
	pipe2(p, O_CLOEXEC);
	dup2(keep, 50);
	dup3(keep, 51, O_CLOEXEC);
	write(keep, "data", 4);
	char args[9][12];
	int fds[8] = { keep, gone, set, cleared, p[0], p[1], 50, 51 };
	char *av[12] = { (char *)self, "cloexec-child" };
	for (int i = 0; i < 8; i++) {
		snprintf(args[i], sizeof args[i], "%d", fds[i]);
		av[2 + i] = args[i];
	}
	av[10] = NULL;
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		execv(self, av);
		printf("execv errno %d\n", errno);
		_exit(1);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	SHOW("parent's still open", fcntl(gone, F_GETFD));
	unlink("afd_cloexec");
}

static void cloexec_child(int argc, char **argv)
{
	static const char *names[8] = { "plain", "O_CLOEXEC", "F_SETFD", "F_DUPFD_CLOEXEC cleared",
					 "pipe2 read", "pipe2 write", "dup2", "dup3 O_CLOEXEC" };
	for (int i = 2; i < argc && i < 10; i++) {
		int fd = atoi(argv[i]);
		errno = 0;
		int r = fcntl(fd, F_GETFD);
		printf("after exec %s: %s\n", names[i - 2], r < 0 ? (errno == EBADF ? "closed" : "?") : "open");
	}
	off_t pos = lseek(atoi(argv[2]), 0, SEEK_CUR);
	printf("shared offset %ld\n", (long)pos);
	exit(3);
}

static void c_notty(void)
{
	struct termios t;
	struct winsize w;
	int fd = open("afd_notty", O_CREAT | O_RDWR | O_TRUNC, 0644);
	RAW("TCGETS file", SYS_ioctl, fd, TCGETS, (long)&t, 0, 0, 0);
	RAW("TCSETS file", SYS_ioctl, fd, TCSETS, (long)&t, 0, 0, 0);
	RAW("TIOCGWINSZ file", SYS_ioctl, fd, TIOCGWINSZ, (long)&w, 0, 0, 0);
	RAW("TIOCGPGRP file", SYS_ioctl, fd, TIOCGPGRP, (long)&w, 0, 0, 0);
	RAW("unknown file", SYS_ioctl, fd, 0x12345678, 0, 0, 0, 0);
	int p[2];
	pipe(p);
	RAW("TCGETS pipe", SYS_ioctl, p[0], TCGETS, (long)&t, 0, 0, 0);
	RAW("TIOCGWINSZ pipe", SYS_ioctl, p[1], TIOCGWINSZ, (long)&w, 0, 0, 0);
	RAW("TIOCSPGRP pipe", SYS_ioctl, p[1], TIOCSPGRP, (long)&w, 0, 0, 0);
	RAW("TCGETS stdin (/dev/null)", SYS_ioctl, 0, TCGETS, (long)&t, 0, 0, 0);
	RAW("TCGETS stdout (a pipe)", SYS_ioctl, 1, TCGETS, (long)&t, 0, 0, 0);
	RAW("TIOCGWINSZ stderr (a pipe)", SYS_ioctl, 2, TIOCGWINSZ, (long)&w, 0, 0, 0);
	RAW("TCGETS closed fd", SYS_ioctl, 77, TCGETS, (long)&t, 0, 0, 0);
	errno = 0;
	int tty = isatty(0);
	printf("isatty 0 %d errno %d\n", tty, errno);
	mkdir("afd_notty_d", 0755);
	int d = open("afd_notty_d", O_RDONLY);
	RAW("TCGETS directory", SYS_ioctl, d, TCGETS, (long)&t, 0, 0, 0);
	close(d);
	rmdir("afd_notty_d");
	close(fd);
	close(p[0]);
	close(p[1]);
	unlink("afd_notty");
}

static void c_fionread(void)
{
	int p[2];
	pipe(p);
	int n = -1;
	SHOW("FIONREAD empty pipe", ioctl(p[0], FIONREAD, &n));
	printf("n %d\n", n);
	write(p[1], "hello", 5);
	SHOW("FIONREAD pipe", ioctl(p[0], FIONREAD, &n));
	printf("n %d\n", n);
	char b[8];
	read(p[0], b, 2);
	SHOW("FIONREAD after read 2", ioctl(p[0], FIONREAD, &n));
	printf("n %d\n", n);
	SHOW("FIONREAD write end", ioctl(p[1], FIONREAD, &n));
	printf("n %d\n", n);
	RAW("FIONREAD bad pointer", SYS_ioctl, p[0], FIONREAD, 0x1000, 0, 0, 0);
	int fd = open("afd_fionread", O_CREAT | O_RDWR | O_TRUNC, 0644);
	write(fd, "0123456789", 10);
	lseek(fd, 3, SEEK_SET);
	SHOW("FIONREAD file", ioctl(fd, FIONREAD, &n));
	printf("n %d\n", n);
	close(fd);
	unlink("afd_fionread");
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "cloexec-child"))
		cloexec_child(argc, argv);
	umask(022);
	if (argc < 2 || !strcmp(argv[1], "setfl"))
		c_setfl();
	if (argc < 2 || !strcmp(argv[1], "dupfd"))
		c_dupfd();
	if (argc < 2 || !strcmp(argv[1], "cloexec"))
		c_cloexec(argv[0]);
	if (argc < 2 || !strcmp(argv[1], "notty"))
		c_notty();
	if (argc < 2 || !strcmp(argv[1], "fionread"))
		c_fionread();
	return 0;
}
