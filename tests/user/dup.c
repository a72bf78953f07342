/* dup, dup2, dup3, fcntl on the output descriptor */
#include "ut.h"
#include <fcntl.h>
int main(void)
{
	int d = dup(1);
	printf("dup>2=%d\n", d > 2);
	fflush(stdout);
	SHOW("write via dup", write(d, "through dup\n", 12));
	SHOW("dup2 to 20", dup2(1, 20));
	SHOW("write via 20", write(20, "through 20\n", 11));
	SHOW("dup2 same", dup2(20, 20));
	SHOW("dup3 same", dup3(20, 20, 0));
	SHOW("dup3 cloexec", dup3(1, 21, O_CLOEXEC));
	SHOW("getfd 21", fcntl(21, F_GETFD));
	SHOW("getfd 20", fcntl(20, F_GETFD));
	SHOW("setfd 20", fcntl(20, F_SETFD, FD_CLOEXEC));
	SHOW("getfd 20 again", fcntl(20, F_GETFD));
	SHOW("dupfd from 30", fcntl(1, F_DUPFD, 30));
	SHOW("close 20", close(20));
	SHOW("write closed", write(20, "x", 1));
	SHOW("close closed", close(20));
	SHOW("dup bad", dup(99));
	SHOW("dup2 bad new", dup2(1, 100000));
	SHOW("fcntl bad fd", fcntl(77, F_GETFL));
	SHOW("read bad fd", read(55, (char[4]){0}, 4));
	SHOW("lseek on stdout", lseek(1, 0, SEEK_CUR) == -1 && errno == ESPIPE);
	return 0;
}
