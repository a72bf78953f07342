/* getcwd, chdir, fchdir through kernel/fs (issue 24): relative paths follow the cwd; a
 * child inherits it. The host's twin starts in a temporary directory, so only what
 * follows from the program's own chdir calls is printed. */
#include "ut.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

static void show_cwd(const char *what)
{
	char b[4096];
	if (!getcwd(b, sizeof b)) {
		printf("%s: getcwd errno %d\n", what, errno);
		return;
	}
	const char *tail = strrchr(b, '/');
	printf("%s: last component [%s]\n", what, tail ? tail + 1 : b);
}

int main(void)
{
	umask(022);
	SHOW("mkdir", mkdir("fc_dir", 0755));
	SHOW("mkdir sub", mkdir("fc_dir/sub", 0755));
	int top = open(".", O_RDONLY | O_DIRECTORY);
	SHOW("chdir", chdir("fc_dir"));
	show_cwd("in fc_dir");
	SHOW("create relative", close(open("here", O_CREAT | O_WRONLY, 0644)));
	SHOW("chdir sub", chdir("sub"));
	show_cwd("in sub");
	SHOW("see parent's file", access("../here", F_OK));
	SHOW("chdir ..", chdir(".."));
	show_cwd("back");
	SHOW("chdir missing", chdir("nope"));
	SHOW("chdir file", chdir("here"));
	SHOW("chdir empty", chdir(""));
	char small[3];
	SHOW("getcwd too small", getcwd(small, sizeof small) ? 0 : -1);
	SHOW("getcwd raw size 0", syscall(SYS_getcwd, small, 0));
	pid_t c = fork();
	if (c == 0) {
		show_cwd("child");
		chdir("sub");
		show_cwd("child moved");
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	show_cwd("parent unmoved");
	SHOW("fchdir top", fchdir(top));
	SHOW("back at top", access("fc_dir/here", F_OK));
	SHOW("chdir /", chdir("/"));
	char b[64];
	printf("root cwd [%s]\n", getcwd(b, sizeof b));
	SHOW("chdir /tmp", chdir("/tmp"));
	SHOW("chdir . stays", chdir("."));
	fchdir(top);
	unlink("fc_dir/here");
	rmdir("fc_dir/sub");
	SHOW("rmdir", rmdir("fc_dir"));
	return 0;
}
