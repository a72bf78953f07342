/* the path calls' corners (issue 24, differential): newfstatat's AT_SYMLINK_NOFOLLOW /
 * AT_EMPTY_PATH / bad flags, getdents64's small buffers and non-directories, symlink
 * loops (ELOOP), mkdirat/unlinkat with dirfds and AT_REMOVEDIR, rmdir of ".", ".." and
 * "/", renameat over files and directories, umask's effect on the modes made, chdir and
 * getcwd (ERANGE; only the tail of the path is printed: the host's cwd is a temporary
 * directory, ksync's "/"), readlink's buffer rules. Usage: abi_path CASE. */
#include "ut.h"
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#define RAW(name, ...) printf("%s %ld\n", name, rawsys(__VA_ARGS__))

static void st(const char *what, int dirfd, const char *path, int flags)
{
	struct stat s;
	errno = 0;
	if (fstatat(dirfd, path, &s, flags)) {
		printf("%s: errno %d\n", what, errno);
		return;
	}
	/* (a directory's size is each file system's own) */
	printf("%s: type %o mode %o size %lld nlink %lu\n", what, (unsigned)(s.st_mode & S_IFMT) >> 12,
	       (unsigned)(s.st_mode & 07777), S_ISDIR(s.st_mode) ? 0LL : (long long)s.st_size,
	       (unsigned long)s.st_nlink);
}

static void c_fstatat(void)
{
	int fd = open("ap_st", O_CREAT | O_WRONLY | O_TRUNC, 0640);
	write(fd, "12345", 5);
	symlink("ap_st", "ap_st_link");
	symlink("ap_st_missing", "ap_st_dangling");
	mkdir("ap_st_d", 0750);
	st("file", AT_FDCWD, "ap_st", 0);
	st("link followed", AT_FDCWD, "ap_st_link", 0);
	st("link NOFOLLOW", AT_FDCWD, "ap_st_link", AT_SYMLINK_NOFOLLOW);
	st("dangling followed", AT_FDCWD, "ap_st_dangling", 0);
	st("dangling NOFOLLOW", AT_FDCWD, "ap_st_dangling", AT_SYMLINK_NOFOLLOW);
	st("EMPTY_PATH fd", fd, "", AT_EMPTY_PATH);
	st("empty path without the flag", fd, "", 0);
	struct stat cs;		/* (the cwd: only the result, its attributes are the host's) */
	SHOW("EMPTY_PATH AT_FDCWD", fstatat(AT_FDCWD, "", &cs, AT_EMPTY_PATH));
	st("EMPTY_PATH bad fd", 99, "", AT_EMPTY_PATH);
	st("EMPTY_PATH with a name", AT_FDCWD, "ap_st_d", AT_EMPTY_PATH);
	st("bad flag", AT_FDCWD, "ap_st", 0x1);
	st("flag 0x8000", AT_FDCWD, "ap_st", 0x8000);
	int d = open("ap_st_d", O_RDONLY | O_DIRECTORY);
	close(open("ap_st_d/in", O_CREAT | O_WRONLY, 0600));
	st("dirfd relative", d, "in", 0);
	struct stat rs;
	SHOW("dirfd absolute ignores it", fstatat(fd, "/", &rs, 0));
	st("file as dirfd", fd, "in", 0);
	st("directory", AT_FDCWD, "ap_st_d", 0);
	st("trailing slash on link to file", AT_FDCWD, "ap_st_link/", AT_SYMLINK_NOFOLLOW);
	unlink("ap_st_d/in");
	close(d);
	rmdir("ap_st_d");
	unlink("ap_st_link");
	unlink("ap_st_dangling");
	close(fd);
	unlink("ap_st");
}

static void c_getdents(void)
{
	mkdir("ap_gd", 0755);
	close(open("ap_gd/a_rather_long_file_name_for_one_entry", O_CREAT | O_WRONLY, 0644));
	int d = open("ap_gd", O_RDONLY | O_DIRECTORY);
	char buf[4096] __attribute__((aligned(8)));
	RAW("buffer 0", SYS_getdents64, d, (long)buf, 0, 0, 0, 0);
	RAW("buffer 1", SYS_getdents64, d, (long)buf, 1, 0, 0, 0);
	RAW("buffer 23", SYS_getdents64, d, (long)buf, 23, 0, 0, 0);
	/* "." needs 24 bytes: one entry fits */
	long r = rawsys(SYS_getdents64, d, (long)buf, 24, 0, 0, 0);
	struct dirent64 *e = (struct dirent64 *)buf;
	printf("buffer 24: %ld reclen %d name %s\n", r, r > 0 ? e->d_reclen : 0, r > 0 ? e->d_name : "-");
	/* the long name does not fit 40 bytes: after ".." comes EINVAL, nothing skipped */
	int names = 0;
	while ((r = rawsys(SYS_getdents64, d, (long)buf, 40, 0, 0, 0)) > 0)
		names++;
	printf("then 40-byte reads: %d then %ld\n", names, r);
	r = rawsys(SYS_getdents64, d, (long)buf, sizeof buf, 0, 0, 0);
	e = (struct dirent64 *)buf;
	printf("a big buffer then: %ld name %s type %d\n", r > 0 ? 1L : r, r > 0 ? e->d_name : "-",
	       r > 0 ? e->d_type : -1);
	RAW("at the end", SYS_getdents64, d, (long)buf, sizeof buf, 0, 0, 0);
	RAW("bad buffer", SYS_getdents64, d, 0x1000, 4096, 0, 0, 0);
	lseek(d, 0, SEEK_SET);
	RAW("bad buffer from the start", SYS_getdents64, d, 0x1000, 4096, 0, 0, 0);
	int f = open("ap_gd/a_rather_long_file_name_for_one_entry", O_RDONLY);
	RAW("on a file", SYS_getdents64, f, (long)buf, sizeof buf, 0, 0, 0);
	RAW("bad fd", SYS_getdents64, 99, (long)buf, sizeof buf, 0, 0, 0);
	int p[2];
	pipe(p);
	RAW("on a pipe", SYS_getdents64, p[0], (long)buf, sizeof buf, 0, 0, 0);
	close(p[0]);
	close(p[1]);
	close(f);
	unlink("ap_gd/a_rather_long_file_name_for_one_entry");
	lseek(d, 0, SEEK_SET);
	r = rawsys(SYS_getdents64, d, (long)buf, sizeof buf, 0, 0, 0);
	int n = 0;
	for (long off = 0; off < r; off += ((struct dirent64 *)(buf + off))->d_reclen)
		n++;
	printf("emptied: %d entries\n", n);
	close(d);
	rmdir("ap_gd");
	RAW("removed directory still open", SYS_getdents64, d, (long)buf, sizeof buf, 0, 0, 0);
	d = open(".", O_RDONLY | O_DIRECTORY);
	mkdir("ap_gd2", 0755);
	int d2 = open("ap_gd2", O_RDONLY | O_DIRECTORY);
	rmdir("ap_gd2");
	RAW("getdents of a removed directory", SYS_getdents64, d2, (long)buf, sizeof buf, 0, 0, 0);
	close(d2);
	close(d);
}

static void c_eloop(void)
{
	symlink("ap_loop_b", "ap_loop_a");
	symlink("ap_loop_a", "ap_loop_b");
	symlink("ap_loop_self", "ap_loop_self");
	symlink("ap_loop_self/x", "ap_loop_via");
	struct stat s;
	SHOW("open a<->b", open("ap_loop_a", O_RDONLY));
	SHOW("stat a<->b", stat("ap_loop_a", &s));
	SHOW("lstat a<->b", lstat("ap_loop_a", &s));
	SHOW("open self", open("ap_loop_self", O_RDONLY));
	SHOW("open self O_CREAT", open("ap_loop_self", O_CREAT | O_WRONLY, 0644));
	SHOW("open self/x", open("ap_loop_self/x", O_RDONLY));
	SHOW("open via", open("ap_loop_via", O_RDONLY));
	SHOW("mkdir self/x", mkdir("ap_loop_self/x", 0755));
	SHOW("chdir self", chdir("ap_loop_self"));
	SHOW("O_NOFOLLOW self", open("ap_loop_self", O_RDONLY | O_NOFOLLOW));
	SHOW("O_NOFOLLOW|O_CREAT self", open("ap_loop_self", O_CREAT | O_WRONLY | O_NOFOLLOW, 0644));
	SHOW("unlink self (the link itself)", unlink("ap_loop_self"));
	char b[64] = {0};
	SHOW("readlink a", readlink("ap_loop_a", b, sizeof b));
	printf("[%s]\n", b);
	SHOW("rename a over b", rename("ap_loop_a", "ap_loop_b"));
	SHOW("stat b now", stat("ap_loop_b", &s));
	SHOW("lstat a now", lstat("ap_loop_a", &s));
	unlink("ap_loop_b");
	unlink("ap_loop_via");
}

static void c_dirs_at(void)
{
	mkdir("ap_at", 0755);
	int d = open("ap_at", O_RDONLY | O_DIRECTORY);
	close(open("ap_at_f", O_CREAT | O_WRONLY, 0644));
	int f = open("ap_at_f", O_RDONLY);
	SHOW("mkdirat dirfd", mkdirat(d, "sub", 0755));
	SHOW("mkdirat again", mkdirat(d, "sub", 0755));
	SHOW("mkdirat file dirfd", mkdirat(f, "sub", 0755));
	SHOW("mkdirat bad dirfd", mkdirat(99, "sub", 0755));
	SHOW("mkdirat bad dirfd absolute", mkdirat(99, "/", 0755));
	SHOW("mkdirat trailing slashes", mkdirat(d, "sub2//", 0755));
	SHOW("mkdirat dangling symlink", (symlinkat("nowhere", d, "dl"), mkdirat(d, "dl", 0755)));
	SHOW("unlinkat AT_REMOVEDIR file", unlinkat(AT_FDCWD, "ap_at_f", AT_REMOVEDIR));
	SHOW("unlinkat dir without it", unlinkat(d, "sub", 0));
	SHOW("unlinkat bad flag", unlinkat(d, "sub", 0x100));
	SHOW("unlinkat AT_REMOVEDIR symlink", unlinkat(d, "dl", AT_REMOVEDIR));
	SHOW("unlinkat symlink", unlinkat(d, "dl", 0));
	SHOW("unlinkat AT_REMOVEDIR", unlinkat(d, "sub", AT_REMOVEDIR));
	SHOW("unlinkat AT_REMOVEDIR sub2/", unlinkat(d, "sub2/", AT_REMOVEDIR));
	SHOW("unlinkat AT_REMOVEDIR missing", unlinkat(d, "sub", AT_REMOVEDIR));
	SHOW("unlinkat file dirfd", unlinkat(f, "x", 0));
	SHOW("unlinkat file trailing slash", unlinkat(AT_FDCWD, "ap_at_f/", 0));
	mkdir("ap_at/e", 0755);
	SHOW("rmdir .", rmdir("."));
	SHOW("rmdir ap_at/e/.", rmdir("ap_at/e/."));
	SHOW("rmdir ap_at/e/..", rmdir("ap_at/e/.."));
	SHOW("rmdir ..", rmdir(".."));
	SHOW("rmdir /", rmdir("/"));
	SHOW("unlinkat AT_REMOVEDIR .", unlinkat(d, ".", AT_REMOVEDIR));
	SHOW("unlink .", unlink("."));
	SHOW("rmdir ap_at/e/", rmdir("ap_at/e/"));
	close(f);
	close(d);
	unlink("ap_at_f");
	SHOW("rmdir ap_at", rmdir("ap_at"));
}

static void show_file(const char *p)
{
	char b[16] = {0};
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		printf("%s: errno %d\n", p, errno);
		return;
	}
	read(fd, b, sizeof b - 1);
	close(fd);
	printf("%s: [%s]\n", p, b);
}

static void mk(const char *p, const char *s)
{
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	write(fd, s, strlen(s));
	close(fd);
}

static void c_rename(void)
{
	mk("ap_rn_a", "AAA");
	mk("ap_rn_b", "BBB");
	int keep = open("ap_rn_b", O_RDONLY);
	SHOW("file over file", rename("ap_rn_a", "ap_rn_b"));
	show_file("ap_rn_a");
	show_file("ap_rn_b");
	char b[8] = {0};
	read(keep, b, 7);
	printf("the replaced file, still open: [%s]\n", b);
	close(keep);
	SHOW("onto itself", rename("ap_rn_b", "ap_rn_b"));
	link("ap_rn_b", "ap_rn_h");
	SHOW("onto a hard link of itself", rename("ap_rn_b", "ap_rn_h"));
	show_file("ap_rn_b");
	show_file("ap_rn_h");
	mkdir("ap_rn_d", 0755);
	mkdir("ap_rn_e", 0755);
	mk("ap_rn_d/f", "in d");
	SHOW("dir over empty dir", rename("ap_rn_d", "ap_rn_e"));
	show_file("ap_rn_e/f");
	struct stat s;
	SHOW("old dir gone", stat("ap_rn_d", &s));
	SHOW("dir over file", rename("ap_rn_e", "ap_rn_b"));
	SHOW("file over dir", rename("ap_rn_b", "ap_rn_e"));
	mkdir("ap_rn_e/sub", 0755);
	SHOW("dir into itself", rename("ap_rn_e", "ap_rn_e/sub/x"));
	SHOW("dir onto its child", rename("ap_rn_e", "ap_rn_e/sub"));
	SHOW("child over its parent", rename("ap_rn_e/sub", "ap_rn_e"));
	SHOW("missing source", rename("ap_rn_zz", "ap_rn_yy"));
	SHOW("into a missing dir", rename("ap_rn_b", "ap_rn_zz/b"));
	SHOW("into a file", rename("ap_rn_b", "ap_rn_h/b"));
	SHOW("file with trailing slash", rename("ap_rn_b/", "ap_rn_c"));
	SHOW("dir with trailing slash", rename("ap_rn_e/", "ap_rn_g/"));
	SHOW("rename .", rename(".", "ap_rn_dot"));
	SHOW("rename onto .", rename("ap_rn_g", "."));
	SHOW("renameat dirfds", renameat(AT_FDCWD, "ap_rn_b", open("ap_rn_g", O_RDONLY), "moved"));
	show_file("ap_rn_g/moved");
	SHOW("renameat bad dirfd", renameat(99, "x", AT_FDCWD, "y"));
	symlink("ap_rn_h", "ap_rn_l");
	SHOW("symlink renamed, not its target", rename("ap_rn_l", "ap_rn_l2"));
	char t[32] = {0};
	readlink("ap_rn_l2", t, sizeof t);
	printf("link now says [%s]\n", t);
	unlink("ap_rn_l2");
	unlink("ap_rn_h");
	unlink("ap_rn_g/moved");
	unlink("ap_rn_g/f");
	rmdir("ap_rn_g/sub");
	rmdir("ap_rn_g");
}

static void modes(const char *what)
{
	struct stat s;
	close(open("ap_um_f", O_CREAT | O_WRONLY, 0777));
	mkdir("ap_um_d", 0777);
	stat("ap_um_f", &s);
	printf("%s: file %o", what, (unsigned)(s.st_mode & 07777));
	stat("ap_um_d", &s);
	printf(" dir %o", (unsigned)(s.st_mode & 07777));
	int fd = open("ap_um_f", O_CREAT | O_WRONLY, 0000);
	fstat(fd, &s);
	printf(" existing %o\n", (unsigned)(s.st_mode & 07777));
	close(fd);
	unlink("ap_um_f");
	rmdir("ap_um_d");
}

static void c_umask(void)
{
	umask(022);
	printf("old %o\n", (unsigned)umask(077));
	modes("077");
	printf("old %o\n", (unsigned)umask(0));
	modes("0");
	printf("old %o\n", (unsigned)umask(0777 | 01000));
	modes("0777");
	printf("old (the high bits dropped) %o\n", (unsigned)umask(027));
	modes("027");
	SHOW("chmod is not masked", (close(open("ap_um_c", O_CREAT | O_WRONLY, 0600)),
				      chmod("ap_um_c", 0777)));
	struct stat s;
	stat("ap_um_c", &s);
	printf("mode %o\n", (unsigned)(s.st_mode & 07777));
	unlink("ap_um_c");
	fflush(stdout);
	if (fork() == 0) {
		printf("child's umask %o\n", (unsigned)umask(0));
		exit(0);
	}
	wait(NULL);
	symlink("x", "ap_um_l");
	lstat("ap_um_l", &s);
	printf("symlink mode %o\n", (unsigned)(s.st_mode & 07777));
	unlink("ap_um_l");
}

static void c_cwd(void)
{
	char base[4096], b[4096];
	getcwd(base, sizeof base);
	size_t bl = strcmp(base, "/") ? strlen(base) : 0;	/* print what follows it */
	mkdir("ap_cwd", 0755);
	mkdir("ap_cwd/deeper", 0755);
	close(open("ap_cwd/f", O_CREAT | O_WRONLY, 0644));
	SHOW("chdir", chdir("ap_cwd/deeper"));
	getcwd(b, sizeof b);
	printf("cwd ends with [%s]\n", b + bl);
	long need = (long)strlen(b) + 1;
	long r = rawsys(SYS_getcwd, (long)b, need, 0, 0, 0, 0);
	printf("getcwd exact size: returns the length with NUL %d\n", r == need);
	RAW("getcwd one short", SYS_getcwd, (long)b, need - 1, 0, 0, 0, 0);
	RAW("getcwd size 1", SYS_getcwd, (long)b, 1, 0, 0, 0, 0);
	RAW("getcwd size 0", SYS_getcwd, (long)b, 0, 0, 0, 0, 0);
	RAW("getcwd NULL", SYS_getcwd, 0, 100, 0, 0, 0, 0);
	SHOW("chdir ..", chdir(".."));
	getcwd(b, sizeof b);
	printf("cwd ends with [%s]\n", b + bl);
	SHOW("chdir file", chdir("f"));
	SHOW("chdir file/", chdir("f/"));
	SHOW("chdir missing", chdir("missing"));
	SHOW("chdir missing/x", chdir("missing/x"));
	SHOW("chdir f/x", chdir("f/x"));
	SHOW("chdir empty", chdir(""));
	RAW("chdir NULL", SYS_chdir, 0, 0, 0, 0, 0, 0);
	SHOW("chdir deeper/.", chdir("deeper/."));
	getcwd(b, sizeof b);
	printf("cwd ends with [%s]\n", b + bl);
	/* a removed cwd */
	chdir("..");
	rmdir("deeper");
	mkdir("gone", 0755);
	chdir("gone");
	rmdir("../gone");
	errno = 0;
	char *g = getcwd(b, sizeof b);
	printf("getcwd in a removed dir: %s errno %d\n", g ? "ok" : "fail", errno);
	SHOW("create in a removed dir", open("x", O_CREAT | O_WRONLY, 0644));
	SHOW("chdir .. from it", chdir(".."));
	getcwd(b, sizeof b);
	printf("cwd ends with [%s]\n", b + bl);
	int d = open(".", O_RDONLY);
	chdir("..");
	SHOW("fchdir back", fchdir(d));
	getcwd(b, sizeof b);
	printf("cwd ends with [%s]\n", b + bl);
	close(d);
	chdir("..");
	unlink("ap_cwd/f");
	SHOW("cleaned", rmdir("ap_cwd"));
}

static void c_readlink(void)
{
	symlink("some/target/path", "ap_rl");
	char b[32];
	memset(b, '#', sizeof b);
	SHOW("readlink", readlink("ap_rl", b, sizeof b));
	printf("no NUL added: [%.20s]\n", b);
	memset(b, '#', sizeof b);
	SHOW("readlink 4", readlink("ap_rl", b, 4));
	printf("truncated: [%.6s]\n", b);
	RAW("readlink size 0", SYS_readlink, (long)"ap_rl", (long)b, 0, 0, 0, 0);
	RAW("readlink size -1", SYS_readlink, (long)"ap_rl", (long)b, -1, 0, 0, 0);
	close(open("ap_rl_f", O_CREAT | O_WRONLY, 0644));
	SHOW("readlink of a file", readlink("ap_rl_f", b, sizeof b));
	SHOW("readlink of a dir", readlink(".", b, sizeof b));
	SHOW("readlink missing", readlink("ap_rl_missing", b, sizeof b));
	SHOW("readlink trailing slash", readlink("ap_rl/", b, sizeof b));
	int d = open(".", O_RDONLY);
	SHOW("readlinkat dirfd", readlinkat(d, "ap_rl", b, sizeof b));
	SHOW("readlinkat empty path", readlinkat(d, "", b, sizeof b));
	close(d);
	SHOW("symlink empty target", symlink("", "ap_rl_e"));
	SHOW("symlink to a long target", symlink("a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z", "ap_rl_long"));
	char big[128] = {0};
	SHOW("readlink long", readlink("ap_rl_long", big, sizeof big));
	unlink("ap_rl_long");
	unlink("ap_rl");
	unlink("ap_rl_f");
}

static void c_link(void)
{
	mk("ap_ln_a", "data");
	mkdir("ap_ln_d", 0755);
	SHOW("link", link("ap_ln_a", "ap_ln_b"));
	st("a", AT_FDCWD, "ap_ln_a", 0);
	SHOW("link over an existing name", link("ap_ln_a", "ap_ln_b"));
	SHOW("link a directory", link("ap_ln_d", "ap_ln_d2"));
	SHOW("link a missing file", link("ap_ln_zz", "ap_ln_c"));
	SHOW("link into a missing dir", link("ap_ln_a", "ap_ln_zz/c"));
	SHOW("link with trailing slash", link("ap_ln_a/", "ap_ln_c"));
	SHOW("link to trailing slash", link("ap_ln_a", "ap_ln_c/"));
	symlink("ap_ln_a", "ap_ln_s");
	SHOW("linkat a symlink (the link itself)", linkat(AT_FDCWD, "ap_ln_s", AT_FDCWD, "ap_ln_s2", 0));
	st("s2", AT_FDCWD, "ap_ln_s2", AT_SYMLINK_NOFOLLOW);
	SHOW("linkat AT_SYMLINK_FOLLOW", linkat(AT_FDCWD, "ap_ln_s", AT_FDCWD, "ap_ln_f", AT_SYMLINK_FOLLOW));
	st("f", AT_FDCWD, "ap_ln_f", AT_SYMLINK_NOFOLLOW);
	SHOW("linkat bad flag", linkat(AT_FDCWD, "ap_ln_a", AT_FDCWD, "ap_ln_g", 0x1));
	int d = open("ap_ln_d", O_RDONLY);
	SHOW("linkat into a dirfd", linkat(AT_FDCWD, "ap_ln_a", d, "in", 0));
	st("a", AT_FDCWD, "ap_ln_a", 0);
	SHOW("unlink a", unlink("ap_ln_a"));
	show_file("ap_ln_b");
	st("b", AT_FDCWD, "ap_ln_b", 0);
	int fd = open("ap_ln_b", O_RDONLY);
	unlink("ap_ln_b");
	unlink("ap_ln_f");
	unlinkat(d, "in", 0);
	struct stat s;
	fstat(fd, &s);
	printf("every name gone, still open: nlink %lu size %lld\n", (unsigned long)s.st_nlink,
	       (long long)s.st_size);
	SHOW("linkat AT_EMPTY_PATH of it", linkat(fd, "", AT_FDCWD, "ap_ln_back", AT_EMPTY_PATH));
	close(fd);
	close(d);
	unlink("ap_ln_back");
	unlink("ap_ln_s");
	unlink("ap_ln_s2");
	rmdir("ap_ln_d");
}

int main(int argc, char **argv)
{
	static const struct { const char *name; void (*fn)(void); } cs[] = {
		{"fstatat", c_fstatat}, {"getdents", c_getdents}, {"eloop", c_eloop},
		{"dirs_at", c_dirs_at}, {"rename", c_rename}, {"umask", c_umask}, {"cwd", c_cwd},
		{"readlink", c_readlink}, {"link", c_link},
	};
	umask(022);
	for (unsigned i = 0; i < sizeof cs / sizeof cs[0]; i++)
		if (argc < 2 || !strcmp(argv[1], cs[i].name))
			cs[i].fn();
	return 0;
}
