/* read-only files of the root file system: open, read, lseek, fstat, errors */
#include "ut.h"
#include <fcntl.h>
#include <sys/stat.h>
int main(void)
{
	int fd = open("t/data.txt", O_RDONLY);
	printf("open ok=%d\n", fd >= 0);
	char buf[128] = {0};
	SHOW("read 10", read(fd, buf, 10));
	printf("got [%s]\n", buf);
	SHOW("lseek 4", lseek(fd, 4, SEEK_SET));
	memset(buf, 0, sizeof buf);
	SHOW("read rest", read(fd, buf, sizeof buf - 1));
	printf("got [%s]\n", buf);
	SHOW("read at eof", read(fd, buf, 10));
	SHOW("lseek end", lseek(fd, 0, SEEK_END));
	SHOW("lseek negative", lseek(fd, -100, SEEK_SET));
	SHOW("lseek bad whence", lseek(fd, 0, 7));
	struct stat st;
	SHOW("fstat", fstat(fd, &st));
	printf("regular=%d size=%lld\n", S_ISREG(st.st_mode), (long long)st.st_size);
	SHOW("write read-only", write(fd, "x", 1));
	SHOW("close", close(fd));
	SHOW("open missing", open("t/missing", O_RDONLY));
	SHOW("open bad address", open((char *)0x100000, O_RDONLY));
	SHOW("stat", stat("t/data.txt", &st));
	printf("stat size=%lld\n", (long long)st.st_size);
	SHOW("stat missing", stat("/nope/nope", &st));
	return 0;
}
