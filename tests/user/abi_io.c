/* the I/O calls' corners (issue 24, differential): readv's iovec rules (EINVAL counts and
 * lengths, EFAULT vectors and bases, a fault after a first whole segment), pread64/
 * pwrite64 on pipes and with bad offsets, lseek's SEEK_END/SEEK_CUR/EINVAL/ESPIPE and
 * devices, O_APPEND with lseek, O_TRUNC (also with O_RDONLY), O_EXCL's cases.
 * Usage: abi_io CASE (each case makes and removes its own files in the cwd). */
#include "ut.h"
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))

static int mkfile(const char *p, const char *data)
{
	int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
	if (data)
		write(fd, data, strlen(data));
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static void c_readv(void)
{
	int fd = mkfile("aio_readv", "0123456789abcdefghij");
	char a[3] = {0}, b[5] = {0}, c[40] = {0};
	struct iovec v[4] = { {a, 2}, {NULL, 0}, {b, 4}, {c, sizeof c} };
	SHOW("readv 3 segments", readv(fd, v, 4));
	printf("got [%s] [%s] [%s]\n", a, b, c);
	SHOW("readv at eof", readv(fd, v, 4));
	lseek(fd, 0, SEEK_SET);
	SHOW("readv count 0", readv(fd, v, 0));
	RAW("readv count -1", SYS_readv, fd, (long)v, -1, 0, 0, 0);
	RAW("readv count 1025", SYS_readv, fd, (long)v, 1025, 0, 0, 0);
	RAW("readv count 1024 bad vector", SYS_readv, fd, 16, 1024, 0, 0, 0);
	struct iovec huge[2] = { {a, 2}, {b, (size_t)-1} };
	RAW("readv negative length", SYS_readv, fd, (long)huge, 2, 0, 0, 0);
	struct iovec big[2] = { {a, 2}, {b, 0x7ffffffffffffffful} };
	RAW("readv sum overflows", SYS_readv, fd, (long)big, 2, 0, 0, 0);
	RAW("readv vector unmapped", SYS_readv, fd, 0x1000, 1, 0, 0, 0);
	RAW("readv vector in kernel", SYS_readv, fd, (long)0xffffffff81000000ul, 1, 0, 0, 0);
	printf("pos %ld\n", (long)lseek(fd, 0, SEEK_CUR));
	struct iovec bad[1] = { {(void *)0x1000, 4} };
	RAW("readv base unmapped", SYS_readv, fd, (long)bad, 1, 0, 0, 0);
	printf("pos %ld\n", (long)lseek(fd, 0, SEEK_CUR));
	char *m = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(m + 4096, 4096);
	struct iovec half[2] = { {a, 2}, {m + 4096, 4} };
	RAW("readv second base unmapped", SYS_readv, fd, (long)half, 2, 0, 0, 0);
	printf("pos %ld got [%s]\n", (long)lseek(fd, 0, SEEK_CUR), a);
	struct iovec w[2] = { {"xy", 2}, {m + 4096, 4} };
	RAW("writev second base unmapped", SYS_writev, fd, (long)w, 2, 0, 0, 0);
	RAW("writev count -1", SYS_writev, fd, (long)w, -1, 0, 0, 0);
	struct stat st;
	fstat(fd, &st);
	printf("size %lld\n", (long long)st.st_size);
	int wo = open("aio_readv", O_WRONLY);
	RAW("readv write-only fd", SYS_readv, wo, (long)v, 1, 0, 0, 0);
	close(wo);
	close(fd);
	unlink("aio_readv");
}

static void c_pio(void)
{
	int p[2];
	pipe(p);
	char b[8] = {0};
	RAW("pread64 pipe", SYS_pread64, p[0], (long)b, 1, 0, 0, 0);
	RAW("pwrite64 pipe", SYS_pwrite64, p[1], (long)"x", 1, 0, 0, 0);
	RAW("pread64 pipe bad offset", SYS_pread64, p[0], (long)b, 1, -1, 0, 0);
	RAW("pread64 0 bytes pipe", SYS_pread64, p[0], (long)b, 0, 0, 0, 0);
	int fd = mkfile("aio_pio", "abcdef");
	RAW("pwrite64 negative offset", SYS_pwrite64, fd, (long)"x", 1, -5, 0, 0);
	RAW("pread64 negative offset", SYS_pread64, fd, (long)b, 1, -1, 0, 0);
	RAW("pread64 0 bytes at -1", SYS_pread64, fd, (long)b, 0, -1, 0, 0);
	RAW("pwrite64 far", SYS_pwrite64, fd, (long)"Z", 1, 10000, 0, 0);
	struct stat st;
	fstat(fd, &st);
	printf("size %lld pos %ld\n", (long long)st.st_size, (long)lseek(fd, 0, SEEK_CUR));
	int ro = open("aio_pio", O_RDONLY);
	RAW("pwrite64 read-only fd", SYS_pwrite64, ro, (long)"x", 1, 0, 0, 0);
	int wo = open("aio_pio", O_WRONLY);
	RAW("pread64 write-only fd", SYS_pread64, wo, (long)b, 1, 0, 0, 0);
	close(ro);
	close(wo);
	/* pwrite on an O_APPEND descriptor: Linux appends whatever the offset says */
	int ap = open("aio_pio", O_WRONLY | O_APPEND);
	RAW("pwrite64 O_APPEND at 0", SYS_pwrite64, ap, (long)"END", 3, 0, 0, 0);
	RAW("pread64 start", SYS_pread64, fd, (long)b, 6, 0, 0, 0);
	printf("start [%s]\n", b);
	memset(b, 0, sizeof b);
	RAW("pread64 tail", SYS_pread64, fd, (long)b, 3, 10001, 0, 0);
	printf("tail [%s]\n", b);
	close(ap);
	mkdir("aio_pio_d", 0755);
	int d = open("aio_pio_d", O_RDONLY | O_DIRECTORY);
	RAW("pread64 directory", SYS_pread64, d, (long)b, 1, 0, 0, 0);
	RAW("read into the kernel half at eof", SYS_read, fd, (long)0xffff800000000000ul, 4, 0, 0, 0);
	RAW("read into the kernel half, 0 bytes", SYS_read, fd, (long)0xffff800000000000ul, 0, 0, 0, 0);
	RAW("write from the kernel half on a read-only fd", SYS_write, d,
	    (long)0xffff800000000000ul, 4, 0, 0, 0);
	RAW("read into the kernel half, bad fd", SYS_read, 99, (long)0xffff800000000000ul, 4, 0, 0, 0);
	RAW("write from the kernel half", SYS_write, fd, (long)0xffff800000000000ul, 4, 0, 0, 0);
	close(d);
	rmdir("aio_pio_d");
	close(fd);
	unlink("aio_pio");
	close(p[0]);
	close(p[1]);
}

static void c_lseek(void)
{
	int fd = mkfile("aio_lseek", "0123456789");
	SHOW("SEEK_END 0", lseek(fd, 0, SEEK_END));
	SHOW("SEEK_END +5", lseek(fd, 5, SEEK_END));
	SHOW("SEEK_END -10", lseek(fd, -10, SEEK_END));
	SHOW("SEEK_END -11", lseek(fd, -11, SEEK_END));
	SHOW("pos kept", lseek(fd, 0, SEEK_CUR));
	SHOW("SEEK_CUR +7", lseek(fd, 7, SEEK_CUR));
	SHOW("SEEK_CUR -7", lseek(fd, -7, SEEK_CUR));
	SHOW("SEEK_CUR -1", lseek(fd, -1, SEEK_CUR));
	SHOW("whence 3 (SEEK_DATA) past end", lseek(fd, 100, 3));
	SHOW("whence 5", lseek(fd, 0, 5));
	SHOW("whence -1", lseek(fd, 0, -1));
	SHOW("whence 4 (SEEK_HOLE) at 3", lseek(fd, 3, 4));
	SHOW("whence 3 (SEEK_DATA) at 3", lseek(fd, 3, 3));
	SHOW("whence 4 (SEEK_HOLE) at the end", lseek(fd, 10, 4));
	SHOW("whence 3 (SEEK_DATA) negative", lseek(fd, -1, 3));
	int p[2];
	pipe(p);
	SHOW("pipe read end", lseek(p[0], 0, SEEK_SET));
	SHOW("pipe write end", lseek(p[1], 5, SEEK_CUR));
	SHOW("pipe bad whence", lseek(p[1], 0, 9));
	int n = open("/dev/null", O_RDWR);
	SHOW("/dev/null", lseek(n, 100, SEEK_SET));
	SHOW("/dev/null SEEK_END", lseek(n, 0, SEEK_END));
	int z = open("/dev/zero", O_RDONLY);
	SHOW("/dev/zero", lseek(z, 4096, SEEK_SET));
	close(n);
	close(z);
	mkdir("aio_lseek_d", 0755);
	int d = open("aio_lseek_d", O_RDONLY | O_DIRECTORY);
	SHOW("directory rewind", lseek(d, 0, SEEK_SET));
	close(d);
	rmdir("aio_lseek_d");
	close(p[0]);
	close(p[1]);
	close(fd);
	unlink("aio_lseek");
}

static void c_append(void)
{
	int fd = open("aio_append", O_CREAT | O_RDWR | O_APPEND | O_TRUNC, 0644);
	SHOW("write", write(fd, "abc", 3));
	SHOW("seek 0", lseek(fd, 0, SEEK_SET));
	SHOW("write goes to the end", write(fd, "def", 3));
	SHOW("pos after", lseek(fd, 0, SEEK_CUR));
	SHOW("seek 1", lseek(fd, 1, SEEK_SET));
	char b[12] = {0};
	SHOW("read from 1", read(fd, b, 2));
	printf("got [%s]\n", b);
	SHOW("write again", write(fd, "g", 1));
	SHOW("pos", lseek(fd, 0, SEEK_CUR));
	int other = open("aio_append", O_WRONLY);
	SHOW("plain fd writes at 0", write(other, "A", 1));
	SHOW("append fd still appends", write(fd, "h", 1));
	memset(b, 0, sizeof b);
	pread(fd, b, 8, 0);
	printf("file [%s]\n", b);
	SHOW("clear O_APPEND", fcntl(fd, F_SETFL, 0));
	lseek(fd, 0, SEEK_SET);
	SHOW("now writes at 0", write(fd, "B", 1));
	SHOW("pos", lseek(fd, 0, SEEK_CUR));
	memset(b, 0, sizeof b);
	pread(fd, b, 8, 0);
	printf("file [%s]\n", b);
	close(other);
	close(fd);
	unlink("aio_append");
}

static void c_trunc(void)
{
	struct stat st;
	close(mkfile("aio_trunc", "0123456789"));
	int fd = open("aio_trunc", O_RDONLY | O_TRUNC);
	fstat(fd, &st);
	printf("O_RDONLY|O_TRUNC: ok=%d size %lld\n", fd >= 0, (long long)st.st_size);
	close(fd);
	close(mkfile("aio_trunc", "0123456789"));
	fd = open("aio_trunc", O_WRONLY | O_TRUNC | O_APPEND);
	SHOW("write", write(fd, "xy", 2));
	fstat(fd, &st);
	printf("O_WRONLY|O_TRUNC|O_APPEND size %lld\n", (long long)st.st_size);
	int keep = open("aio_trunc", O_RDONLY);
	close(open("aio_trunc", O_RDWR | O_TRUNC));
	char b[4];
	SHOW("read after another open truncated", read(keep, b, 4));
	close(keep);
	close(fd);
	SHOW("O_TRUNC of /dev/null", close(open("/dev/null", O_WRONLY | O_TRUNC)));
	mkdir("aio_trunc_d", 0755);
	SHOW("O_TRUNC of a directory", open("aio_trunc_d", O_RDONLY | O_TRUNC));
	rmdir("aio_trunc_d");
	unlink("aio_trunc");
}

static void c_excl(void)
{
	close(mkfile("aio_excl", "x"));
	SHOW("O_EXCL without O_CREAT", close(open("aio_excl", O_RDONLY | O_EXCL)));
	SHOW("O_CREAT|O_EXCL existing", open("aio_excl", O_CREAT | O_EXCL | O_RDWR, 0644));
	symlink("aio_nowhere", "aio_excl_dangling");
	SHOW("O_CREAT|O_EXCL dangling symlink", open("aio_excl_dangling", O_CREAT | O_EXCL | O_WRONLY, 0644));
	struct stat st;
	SHOW("target still absent", stat("aio_nowhere", &st));
	int fd = open("aio_excl_dangling", O_CREAT | O_WRONLY, 0600);
	SHOW("O_CREAT through dangling symlink", fd >= 0);
	close(fd);
	SHOW("target made", stat("aio_nowhere", &st));
	printf("mode %o\n", (unsigned)(st.st_mode & 07777));
	symlink("aio_excl", "aio_excl_link");
	SHOW("O_CREAT|O_EXCL symlink to file", open("aio_excl_link", O_CREAT | O_EXCL | O_WRONLY, 0644));
	SHOW("O_NOFOLLOW symlink", open("aio_excl_link", O_RDONLY | O_NOFOLLOW));
	SHOW("O_NOFOLLOW file", close(open("aio_excl", O_RDONLY | O_NOFOLLOW)));
	SHOW("O_CREAT trailing slash", open("aio_excl_new/", O_CREAT | O_WRONLY, 0644));
	SHOW("O_CREAT|O_EXCL trailing slash", open("aio_excl/", O_CREAT | O_EXCL | O_WRONLY, 0644));
	unlink("aio_excl_link");
	unlink("aio_excl_dangling");
	unlink("aio_nowhere");
	unlink("aio_excl");
}

static void c_dev(void)
{
	static const char *devs[] = { "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random" };
	for (unsigned i = 0; i < sizeof devs / sizeof devs[0]; i++) {
		struct stat s;
		stat(devs[i], &s);
		printf("%s: chr %d rdev %u,%u mode %o\n", devs[i], S_ISCHR(s.st_mode),
		       (unsigned)((s.st_rdev >> 8) & 0xfff), (unsigned)(s.st_rdev & 0xff),
		       (unsigned)(s.st_mode & 07777));
	}
	char b[300];
	memset(b, 7, sizeof b);
	int n = open("/dev/null", O_RDWR);
	SHOW("read /dev/null", read(n, b, sizeof b));
	SHOW("write /dev/null", write(n, b, sizeof b));
	SHOW("pwrite /dev/null", pwrite(n, b, 5, 100));
	struct iovec v[2] = { {b, 3}, {b, 4} };
	SHOW("writev /dev/null", writev(n, v, 2));
	close(n);
	int z = open("/dev/zero", O_RDWR);
	SHOW("read /dev/zero", read(z, b, sizeof b));
	int all = 1;
	for (unsigned i = 0; i < sizeof b; i++)
		all &= b[i] == 0;
	printf("zeros %d\n", all);
	SHOW("write /dev/zero", write(z, b, 10));
	memset(b, 7, sizeof b);
	SHOW("readv /dev/zero", readv(z, v, 2));
	printf("%d %d\n", b[0], b[3]);
	close(z);
	int u = open("/dev/urandom", O_RDONLY);
	SHOW("read /dev/urandom", read(u, b, sizeof b));
	SHOW("write to read-only /dev/urandom", write(u, b, 1));
	close(u);
	SHOW("O_DIRECTORY /dev/null", open("/dev/null", O_RDONLY | O_DIRECTORY));
	SHOW("O_CREAT|O_EXCL /dev/null", open("/dev/null", O_CREAT | O_EXCL | O_WRONLY, 0644));
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"readv", c_readv}, {"pio", c_pio}, {"lseek", c_lseek}, {"append", c_append},
		{"trunc", c_trunc}, {"excl", c_excl}, {"dev", c_dev},
	};
	umask(022);
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
