/* identity calls: relations only (the ids differ between the host and ksync) */
#include "ut.h"
#include <sys/wait.h>
int main(void)
{
	printf("uid==euid=%d gid==egid=%d\n", getuid() == geteuid(), getgid() == getegid());
	pid_t me = getpid();
	printf("pid>0=%d ppid!=pid=%d gettid==pid=%d\n", me > 0, getppid() != me,
	       (pid_t)syscall(SYS_gettid) == me);
	printf("set_tid_address==pid=%d\n", (pid_t)syscall(SYS_set_tid_address, NULL) == me);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		printf("child: ppid==parent=%d pid!=parent=%d\n", getppid() == me, getpid() != me);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	printf("fork returned the child's pid=%d\n", c > 0 && c != me);
	return 0;
}
