/* execve of a file written at run time (issue 24): the program copies its own binary to
 * /tmp through read/write, makes it executable, and a child execs the copy; exec of a
 * file without an execute bit and of a directory is refused (EACCES); close-on-exec
 * descriptors are gone in the new image. Usage: fs_exec [child FD] */
#include "ut.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "child")) {
		int fd = atoi(argv[2]);
		printf("copy running: argv[0] is %s\n", strcmp(argv[0], "copy") ? "other" : "copy");
		printf("cloexec fd %s\n", fcntl(fd, F_GETFD) == -1 && errno == EBADF ? "closed" : "open");
		printf("plain fd %s\n", fcntl(fd + 1, F_GETFD) == 0 ? "open" : "closed");
		return 42;
	}
	umask(022);
	char path[64];
	snprintf(path, sizeof path, "/tmp/ksync_fs_exec_%d", (int)getpid());
	int in = open(argv[0], O_RDONLY);
	int out = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
	printf("open self ok=%d copy ok=%d\n", in >= 0, out >= 0);
	char buf[3000];	/* an odd size: the copy crosses pages unaligned */
	long r, total = 0;
	while ((r = read(in, buf, sizeof buf)) > 0)
		total += write(out, buf, (size_t)r);
	struct stat a, b;
	fstat(in, &a);
	fstat(out, &b);
	printf("copied all=%d\n", total == a.st_size && b.st_size == a.st_size);
	close(in);
	close(out);
	char *cargv[] = { "copy", "child", "20", NULL };
	SHOW("exec without x bit", execve(path, cargv, NULL));
	SHOW("chmod 755", chmod(path, 0755));
	SHOW("exec a directory", execve("/tmp", cargv, NULL));
	fflush(stdout);
	int fd = open(path, O_RDONLY);
	dup3(fd, 20, O_CLOEXEC);
	dup2(fd, 21);
	close(fd);
	pid_t c = fork();
	if (c == 0) {
		execve(path, cargv, NULL);
		_exit(99);
	}
	int st;
	waitpid(c, &st, 0);
	printf("child exited=%d status=%d\n", WIFEXITED(st), WEXITSTATUS(st));
	SHOW("unlink copy", unlink(path));
	return 0;
}
