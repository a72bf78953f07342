/* thread-local storage through the FS base musl sets with arch_prctl(ARCH_SET_FS) */
#include "ut.h"
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#include <pthread.h>
#include <sys/wait.h>
static __thread int tv = 7;
static __thread char tbuf[100];
int main(void)
{
	printf("tls initial %d\n", tv);
	tv = 41;
	strcpy(tbuf, "thread-local");
	unsigned long fs = 0;
	long r = rawsys(SYS_arch_prctl, ARCH_GET_FS, (long)&fs, 0, 0, 0, 0);
	printf("get_fs=%ld fs==pthread_self=%d\n", r, fs == (unsigned long)pthread_self());
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		printf("child tls %d %s\n", tv + 1, tbuf);
		fflush(stdout);
		_exit(0);
	}
	waitpid(c, NULL, 0);
	printf("parent tls %d\n", tv);
	printf("cet probe 0x3001: %ld\n", rawsys(SYS_arch_prctl, 0x3001, 0, 0, 0, 0, 0));
	printf("bad code: %ld\n", rawsys(SYS_arch_prctl, 0x9999, 0, 0, 0, 0, 0));
	printf("set_fs noncanonical: %ld\n", rawsys(SYS_arch_prctl, ARCH_SET_FS, 0x800000000000L, 0, 0, 0, 0));
	printf("tls still %d\n", tv);
	return 0;
}
