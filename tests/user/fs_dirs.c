/* directories and names through kernel/fs (issue 24): mkdir, getdents64 (names sorted
 * here before printing: the order is the file system's), rmdir, unlink, rename, hard
 * links, symbolic links, readlink, the *at calls with a directory descriptor.
 * Usage: fs_dirs CASE (each case makes and removes its own tree in the cwd). */
#include "ut.h"
#include <fcntl.h>
#include <dirent.h>
#include <sys/stat.h>

struct d64 { unsigned long long ino; long long off; unsigned short reclen; unsigned char type; char name[]; };

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* the names in dir, sorted (d_type is left out: some host file systems answer
 * DT_UNKNOWN) */
static void list(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		printf("list %s: errno %d\n", dir, errno);
		return;
	}
	static char buf[512], names[64][80];
	char *ptr[64];
	unsigned n = 0;
	for (;;) {
		long r = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (r <= 0)
			break;
		for (long o = 0; o < r;) {
			struct d64 *d = (struct d64 *)(buf + o);
			if (n < 64) {
				snprintf(names[n], sizeof names[n], "%s", d->name);
				ptr[n] = names[n];
				n++;
			}
			o += d->reclen;
		}
	}
	close(fd);
	qsort(ptr, n, sizeof ptr[0], cmp);
	printf("%s:", dir);
	for (unsigned i = 0; i < n; i++)
		printf(" %s", ptr[i]);
	printf("\n");
}

static void touch(const char *p, const char *text)
{
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (text)
		write(fd, text, strlen(text));
	close(fd);
}

static void c_mkdir(void)
{
	SHOW("mkdir", mkdir("fd_mk", 0750));
	SHOW("mkdir again", mkdir("fd_mk", 0750));
	SHOW("mkdir nested", mkdir("fd_mk/a", 0777));
	SHOW("mkdir missing parent", mkdir("fd_mk/x/y", 0777));
	struct stat st;
	stat("fd_mk", &st);
	printf("dir=%d mode=%o\n", S_ISDIR(st.st_mode), (unsigned)(st.st_mode & 07777));
	stat("fd_mk/a", &st);
	printf("nested mode=%o\n", (unsigned)(st.st_mode & 07777));
	int d = open("fd_mk", O_RDONLY | O_DIRECTORY);
	SHOW("mkdirat", mkdirat(d, "b", 0700));
	list("fd_mk");
	SHOW("rmdir a", rmdir("fd_mk/a"));
	SHOW("unlinkat dir", unlinkat(d, "b", AT_REMOVEDIR));
	close(d);
	SHOW("rmdir", rmdir("fd_mk"));
}

static void c_getdents(void)
{
	mkdir("fd_ls", 0755);
	char p[64];
	for (int i = 0; i < 30; i++) {	/* more than one small getdents buffer */
		snprintf(p, sizeof p, "fd_ls/file_%02d", i);
		touch(p, NULL);
	}
	mkdir("fd_ls/sub", 0755);
	symlink("file_00", "fd_ls/link");
	list("fd_ls");
	int fd = open("fd_ls", O_RDONLY | O_DIRECTORY);
	char tiny[8];
	SHOW("getdents tiny buffer", syscall(SYS_getdents64, fd, tiny, sizeof tiny));
	SHOW("getdents bad buffer", syscall(SYS_getdents64, fd, (void *)16, 4096));
	close(fd);
	int f = open("fd_ls/file_00", O_RDONLY);
	char buf[256];
	SHOW("getdents on a file", syscall(SYS_getdents64, f, buf, sizeof buf));
	close(f);
	SHOW("getdents bad fd", syscall(SYS_getdents64, 99, buf, sizeof buf));
	for (int i = 0; i < 30; i++) {
		snprintf(p, sizeof p, "fd_ls/file_%02d", i);
		unlink(p);
	}
	unlink("fd_ls/link");
	rmdir("fd_ls/sub");
	list("fd_ls");
	SHOW("rmdir", rmdir("fd_ls"));
}

static void c_rmdir(void)
{
	mkdir("fd_rm", 0755);
	touch("fd_rm/f", "x");
	SHOW("rmdir not empty", rmdir("fd_rm"));
	SHOW("rmdir a file", rmdir("fd_rm/f"));
	SHOW("rmdir dot", rmdir("fd_rm/."));
	SHOW("rmdir missing", rmdir("fd_rm/none"));
	SHOW("unlink", unlink("fd_rm/f"));
	SHOW("rmdir empty", rmdir("fd_rm"));
	SHOW("rmdir again", rmdir("fd_rm"));
}

static void c_unlink(void)
{
	touch("fd_un", "data");
	int fd = open("fd_un", O_RDONLY);
	SHOW("unlink open file", unlink("fd_un"));
	char b[8] = {0};
	SHOW("read after unlink", read(fd, b, 7));
	printf("got [%s]\n", b);
	struct stat st;
	fstat(fd, &st);
	printf("nlink after unlink %lu\n", (unsigned long)st.st_nlink);
	close(fd);
	SHOW("unlink again", unlink("fd_un"));
	mkdir("fd_und", 0755);
	SHOW("unlink a dir", unlink("fd_und"));
	SHOW("unlinkat bad flag", unlinkat(AT_FDCWD, "fd_und", 0x1));
	rmdir("fd_und");
}

static void c_rename(void)
{
	touch("fd_ra", "A");
	touch("fd_rb", "B");
	SHOW("rename over", rename("fd_ra", "fd_rb"));
	char b[4] = {0};
	int fd = open("fd_rb", O_RDONLY);
	read(fd, b, 3);
	close(fd);
	printf("fd_rb has [%s]\n", b);
	SHOW("old gone", access("fd_ra", F_OK));
	SHOW("rename missing", rename("fd_ra", "fd_rc"));
	mkdir("fd_rd", 0755);
	mkdir("fd_re", 0755);
	touch("fd_re/x", NULL);
	SHOW("rename dir over non-empty", rename("fd_rd", "fd_re"));
	SHOW("rename dir over file", rename("fd_rd", "fd_rb"));
	SHOW("rename file over dir", rename("fd_rb", "fd_rd"));
	SHOW("rename into itself", rename("fd_re", "fd_re/sub"));
	SHOW("rename same", rename("fd_rb", "fd_rb"));
	SHOW("rename into dir", rename("fd_rb", "fd_re/moved"));
	int d = open("fd_re", O_RDONLY | O_DIRECTORY);
	SHOW("renameat", renameat(d, "moved", AT_FDCWD, "fd_back"));
	close(d);
	list("fd_re");
	unlink("fd_back");
	unlink("fd_re/x");
	SHOW("rename dir over empty dir", rename("fd_re", "fd_rd"));
	SHOW("rmdir", rmdir("fd_rd"));
}

static void c_link(void)
{
	touch("fd_l1", "linked");
	SHOW("link", link("fd_l1", "fd_l2"));
	struct stat st;
	stat("fd_l1", &st);
	printf("nlink %lu\n", (unsigned long)st.st_nlink);
	SHOW("link exists", link("fd_l1", "fd_l2"));
	SHOW("link missing", link("fd_nope", "fd_l3"));
	mkdir("fd_ld", 0755);
	SHOW("link a dir", link("fd_ld", "fd_ld2"));
	rmdir("fd_ld");
	SHOW("unlink one", unlink("fd_l1"));
	stat("fd_l2", &st);
	printf("nlink %lu size %lld\n", (unsigned long)st.st_nlink, (long long)st.st_size);
	SHOW("linkat", linkat(AT_FDCWD, "fd_l2", AT_FDCWD, "fd_l4", 0));
	unlink("fd_l2");
	unlink("fd_l4");
}

static void c_symlink(void)
{
	touch("fd_target", "via link");
	SHOW("symlink", symlink("fd_target", "fd_sl"));
	SHOW("symlink exists", symlink("x", "fd_sl"));
	char b[64] = {0};
	SHOW("readlink", readlink("fd_sl", b, sizeof b));
	printf("target [%s]\n", b);
	memset(b, 0, sizeof b);
	SHOW("readlink short", readlink("fd_sl", b, 4));
	printf("target [%s]\n", b);
	SHOW("readlink a file", readlink("fd_target", b, sizeof b));
	SHOW("readlink zero size", readlink("fd_sl", b, 0));
	struct stat st;
	SHOW("lstat", lstat("fd_sl", &st));
	printf("lnk=%d size=%lld\n", S_ISLNK(st.st_mode), (long long)st.st_size);
	SHOW("stat follows", stat("fd_sl", &st));
	printf("reg=%d size=%lld\n", S_ISREG(st.st_mode), (long long)st.st_size);
	int fd = open("fd_sl", O_RDONLY);
	memset(b, 0, sizeof b);
	read(fd, b, sizeof b - 1);
	close(fd);
	printf("read through [%s]\n", b);
	SHOW("O_NOFOLLOW", open("fd_sl", O_RDONLY | O_NOFOLLOW));
	SHOW("dangling", symlink("fd_nowhere", "fd_dang"));
	SHOW("open dangling", open("fd_dang", O_RDONLY));
	SHOW("loop a", symlink("fd_loopb", "fd_loopa"));
	SHOW("loop b", symlink("fd_loopa", "fd_loopb"));
	SHOW("open loop", open("fd_loopa", O_RDONLY));
	SHOW("readlinkat", readlinkat(AT_FDCWD, "fd_dang", b, sizeof b));
	mkdir("fd_sdir", 0755);
	touch("fd_sdir/in", "inside");
	symlink("fd_sdir", "fd_sdl");
	SHOW("path through dir link", access("fd_sdl/in", F_OK));
	unlink("fd_sdir/in");
	rmdir("fd_sdir");
	unlink("fd_sdl");
	unlink("fd_sl");
	unlink("fd_dang");
	unlink("fd_loopa");
	unlink("fd_loopb");
	unlink("fd_target");
}

static void c_at(void)
{
	mkdir("fd_at", 0755);
	int d = open("fd_at", O_RDONLY | O_DIRECTORY);
	int f = openat(d, "file", O_CREAT | O_WRONLY, 0644);
	SHOW("openat", f >= 0);
	write(f, "at", 2);
	close(f);
	struct stat st;
	SHOW("fstatat", fstatat(d, "file", &st, 0));
	printf("size %lld\n", (long long)st.st_size);
	SHOW("absolute ignores dirfd", fstatat(99, "/", &st, 0));
	SHOW("bad dirfd", fstatat(99, "file", &st, 0));
	int g = open("fd_at/file", O_RDONLY);
	SHOW("dirfd not a dir", openat(g, "x", O_RDONLY));
	close(g);
	SHOW("symlinkat", symlinkat("file", d, "sl"));
	SHOW("fchmodat", fchmodat(d, "file", 0600, 0));
	fstatat(d, "file", &st, 0);
	printf("mode %o\n", (unsigned)(st.st_mode & 07777));
	list("fd_at");
	unlinkat(d, "sl", 0);
	unlinkat(d, "file", 0);
	close(d);
	SHOW("rmdir", rmdir("fd_at"));
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"mkdir", c_mkdir}, {"getdents", c_getdents}, {"rmdir", c_rmdir},
		{"unlink", c_unlink}, {"rename", c_rename}, {"link", c_link},
		{"symlink", c_symlink}, {"at", c_at},
	};
	umask(022);
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
