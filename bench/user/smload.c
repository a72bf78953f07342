/*
 * smload.c - the two real workloads of Small & Manley, "A Revisitation of Kernel
 * Synchronization Schemes" (USENIX ATC 1997, section 5.1 and Tables 3-4; the project's
 * shared/papers/small-manley-1997-revisitation-kernel-sync.txt): the Modified Andrew
 * Benchmark run on a local file system (Ousterhout 1990, after Howard et al. 1988) and a
 * WebStone-like web load (SGI's WebStone 2.0 against Apache 1.1.1 with 50 clients), as one
 * static binary run unchanged on ksync and on Linux.
 *
 * Usage: smload andrew DIR SCALE              the five phases, a line each, then a total
 *        smload webstone CLIENTS REQUESTS DIR  one line
 *        smload --cc SRC OUT                  one compile (andrew's make phase; internal)
 *        smload --andrew-tree DIR SCALE       andrew's generated source tree made under
 *                                             DIR/src and left there (internal: the test
 *                                             counts it)
 * SCALE 1..1000, CLIENTS 1..64, REQUESTS 1..1000000, DIR a writable directory (created if
 * missing) under which everything is made and from which it is removed at the end. andrew
 * execs this program by argv[0], which must then be an absolute path.
 *
 * andrew: first, untimed, a source tree DIR/src: SCALE groups g0.. of 4 subdirectories
 * s0..s3, each with 10 C files c0.c..c9.c of 2-6 KiB of generated C-like text and 2 headers
 * h0.h h1.h (the C files name them in #include "hN.h" lines); the same SCALE, the same
 * bytes. Then the five phases of Howard et al., each timed (CLOCK_MONOTONIC) and printed as
 *   KSYNC-SMLOAD {"load":"andrew","phase":"copy","ops":48,"elapsed_ns":123456}
 *   mkdir  directories made: DIR/dst and its groups and subdirectories (MakeDir)
 *   copy   files copied: src walked (getdents64), every file copied into dst by open, read
 *          and write of 4 KiB, close (Copy)
 *   stat   entries lstat'ed: dst walked twice, every entry lstat'ed, dst itself included
 *          (ScanDir examines each file's status)
 *   read   bytes read: dst walked, every byte of every file read (ReadAll)
 *   make   files compiled: dst walked, every C file compiled one at a time (Andrew's Make
 *          is sequential) by fork+execve of `smload --cc SRC OUT`, which reads the source
 *          and the headers it includes, tokenizes them, interns the identifiers and folds
 *          the tokens over several passes (~1-2 ms of CPU natively), and writes a 2 KiB
 *          object (OUT.tmp, then renamed to OUT, beside the source) (Make)
 * then, once both trees are removed,
 *   KSYNC-SMLOAD {"load":"andrew","phase":"total","ops":40,"elapsed_ns":<the five summed>}
 * with the files compiled as its ops. Every phase's count is checked against the tree's
 * (a walk that loses or repeats an entry fails the run), the bytes copied and read against
 * the bytes generated. A phase's line is printed when it ends: a failure leaves the lines
 * of the phases done, and no total.
 *
 * webstone: first, untimed, a document tree DIR/www of 40 files in WebStone's size classes
 * (its standard file list's mix; its rare 5 MB class folded into the largest here):
 *   512 B (14 files, 35% of the requests), 5 KiB (20 files, 50%),
 *   50 KiB (5 files, 14%), 500 KiB (1 file, 1%).
 * Then one server process and CLIENTS client processes, each client with a socketpair
 * (AF_UNIX, SOCK_STREAM) of its own to the server. A client sends "GET /NAME\n" and reads
 * the whole reply before its next request: the class by the mix above, the file in it
 * uniformly, by a fixed-seed PRNG of its own (runs are repeatable); every 100th request
 * names a file that is not there. The server, without poll, takes the clients in turn and
 * reads one request from each (a blocking read), opens the file, fstats it, writes
 * "200 SIZE\n" and the file's bytes (8 KiB at a time, the header in the first write),
 * closes it; a missing file gets "404 0\n". A client checks every reply's status and
 * length against the file it asked for. The server ends when every client has closed its
 * end. The time runs from the start signal (every process ready, then the start pipe's
 * write end closed: every read of it sees EOF at once) until the last client is reaped:
 *   KSYNC-SMLOAD {"load":"webstone","clients":4,"requests":8000,"bytes":N,
 *                 "not_found":80,"elapsed_ns":T}
 * requests and bytes (the bodies') summed over the clients; each client and the server
 * report their counts through a pipe at the end and the two sides must agree.
 *
 * On ksync, where /proc/ksync-critsec exists (the kernel's critical-section census, spl.h:
 * real figures in a KSYNC_WINDOWS build, "census":false in others), each andrew phase and
 * the webstone run also print the file's text before and after the timed part (Small &
 * Manley's Tables 3-4 and Figure 1 under these loads; the host has no such file and
 * prints no such line):
 *   KSYNC-SMLOAD-CRITSEC {"load":"andrew","phase":"copy","before":{...},"after":{...},
 *                         "serial_before":{...},"serial_after":{...}}
 * with /proc/ksync-serial's line around the same part where the kernel has that file (the
 * serial line at 115.2 kbit/s as a load beside these, serial_load=115200: characters
 * arrived, read, lost, interrupts; {"serial":false} when it does not run).
 *
 * Not as in the paper: the NFS run of Andrew is not made (ksync has no network file
 * system); WebStone's clients ran on another machine and reached Apache's pool of
 * processes over TCP, here they are local processes talking to one server process
 * through socketpairs (ksync has no bind/connect/listen), and the bad path every 100
 * requests is this program's, to exercise the not-found path.
 *
 * Errors: bad arguments: a reason naming the value on stderr, exit 2. A failing system
 * call: "smload: LOAD: what: strerror(errno)" on stderr, exit 1; a child's failure (a
 * nonzero status or a signal) is reported by its parent with the child's status and fails
 * the load (the other processes are killed, the files made so far removed where possible).
 * A reply of the wrong status or length fails, naming the file and both lengths.
 *
 * System calls used (strace -f -c of `smload andrew DIR 1` and `smload webstone 3 300 DIR`
 * on Linux, musl 1.2.3): fork, execve, wait4, exit_group, pipe, socketpair, read, write,
 * writev (stdio's), open, close, mkdir, rmdir, unlink, rename, stat, fstat, lstat,
 * getdents64, getpid, ioctl (musl's stdout: TIOCGWINSZ), arch_prctl and set_tid_address
 * (musl's start-up), gettid and rt_sigprocmask (musl's fork), clock_gettime (Linux answers
 * it in the vDSO; a kernel without one gets the system call), and kill (SIGKILL to the
 * other processes, on a failure only). No brk or mmap (static buffers only; no malloc, no
 * opendir), no threads, poll/select/epoll, bind/connect/listen, lseek or signal handlers.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXSCALE	1000L
#define MAXCLIENTS	64
#define MAXREQUESTS	1000000L
#define PATHMAX		4096
#define DIRMAX		(PATHMAX - 64)	/* room for the names the loads add */
#define NSUB		4		/* andrew: subdirectories per group */
#define NCFILE		10		/* andrew: C files per subdirectory */
#define NHFILE		2		/* andrew: headers per subdirectory */
#define SRC_MIN		2048		/* andrew: a C file's size, about: 2..6 KiB */
#define SRC_SPREAD	3840		/* (the last function may pass the size drawn) */
#define COPY_BUF	4096		/* andrew: copy and read buffers */
#define OBJ_BYTES	2048		/* andrew: an object file's size */
#define CC_PASSES	600		/* andrew: the compile's folding passes (~1.3 ms) */
#define WWW_FILES	40		/* webstone: documents */
#define SRV_BUF		8192		/* webstone: the server's read/write unit */
#define BAD_EVERY	100		/* webstone: every 100th request names no file */

static const char *self = "";		/* argv[0]: andrew's exec target */
static const char *load = "smload";	/* the load running, for messages */
static pid_t main_pid;			/* the process that prints the lines */
static void (*on_failure)(void);	/* the main process's tidy-up when it fails */
static char dir[PATHMAX];		/* DIR */
static long scale;			/* andrew: SCALE */
static int clients;			/* webstone: CLIENTS */
static long requests;			/* webstone: REQUESTS per client */

#define UBENCH_PROG "smload"	/* ubench_io.h: the messages' prefix ... */
#define UBENCH_PART load	/* ... and the part running */

static noreturn void usage(const char *why)
{
	if (why)
		fprintf(stderr, "smload: %s\n", why);
	fprintf(stderr,
		"usage: smload andrew DIR SCALE\n"
		"       smload webstone CLIENTS REQUESTS DIR\n"
		"SCALE 1..%ld, CLIENTS 1..%d, REQUESTS 1..%ld, DIR a writable directory (created "
		"if missing)\n", MAXSCALE, MAXCLIENTS, MAXREQUESTS);
	exit(2);
}

#include "ubench_io.h"	/* the wrappers shared with the other program */


static void flush_stdout(void)
{
	if (fflush(stdout))
		die("write stdout");
}

/* generated text (deterministic): rnd, struct text, tprintf, text_write - ubench_io.h */

/* ---- andrew: the source tree ---- */

static const char *const cw[] = {
	"vol", "fid", "cell", "cache", "vnode", "dir", "acl", "rpc", "call", "conn", "lock",
	"cb", "fetch", "store", "stat", "name", "link", "page", "buf", "chunk", "srv", "user",
	"token", "quota", "dump", "scan", "hash", "queue", "time", "err",
};
#define NCW (sizeof cw / sizeof cw[0])

static void c_ident(struct text *t, uint32_t a, uint32_t b)
{
	text_ident(t, cw, NCW, a, b);
}

static uint32_t seed(uint32_t kind, long g, int s, int i)
{
	uint32_t x = kind ^ (uint32_t)(g + 1) * 2654435761u ^ (uint32_t)(s + 1) * 2246822519u ^
		     (uint32_t)(i + 1) * 3266489917u;
	return x ? x : 1;
}

/* header h of subdirectory (g, s): macros, prototypes, a struct */
static void gen_header(struct text *t, long g, int s, int h)
{
	rng = seed(0x9e3779b9u, g, s, h);
	tprintf(t, "/* h%d.h - generated header for the Andrew benchmark */\n", h);
	tprintf(t, "#ifndef H%d_H\n#define H%d_H\n\n", h, h);
	for (int i = 0; i < 14; i++)
		tprintf(t, "#define %s_%s_%d %u\n", cw[rnd(NCW)], cw[rnd(NCW)], h, rnd(4096));
	tprintf(t, "\n");
	for (int i = 0; i < 12; i++) {
		tprintf(t, "extern int ");
		c_ident(t, (uint32_t)(h * 7 + i), (uint32_t)i * 3 + (uint32_t)h);
		tprintf(t, "(int a, int b);\n");
	}
	tprintf(t, "struct %s_%d { int %s; int %s; char *%s; };\n\n#endif\n", cw[rnd(NCW)], h,
		cw[rnd(NCW)], cw[rnd(NCW)], cw[rnd(NCW)]);
}

/* C file i of subdirectory (g, s): one or both headers, a table, functions up to a size
 * of 2..6 KiB */
static void gen_source(struct text *t, long g, int s, int i)
{
	rng = seed(0x85ebca6bu, g, s, i);
	size_t target = SRC_MIN + rnd(SRC_SPREAD);
	tprintf(t, "/* c%d.c - generated source for the Andrew benchmark */\n", i);
	if (i % 3 != 2)
		tprintf(t, "#include \"h0.h\"\n");
	if (i % 3 != 0)
		tprintf(t, "#include \"h1.h\"\n");
	tprintf(t, "\nstatic int tbl_%d[16] = {", i);
	for (int k = 0; k < 16; k++)
		tprintf(t, "%s%u", k ? ", " : " ", rnd(1000));
	tprintf(t, " };\n\n");
	for (int f = 0; t->len < target - 300; f++) {
		tprintf(t, "int ");
		c_ident(t, rnd(NCW), rnd(NCW));
		tprintf(t, "_%d_%d(int a, int b)\n{\n\tint x = a * %u + b, y = %u;\n", i, f,
			rnd(97), rnd(50));
		int stmts = 3 + (int)rnd(5);
		for (int k = 0; k < stmts; k++) {
			int h = (i % 3 == 2) ? 1 : (i % 3 == 0) ? 0 : (int)rnd(2);
			switch (rnd(5)) {
			case 0:
				tprintf(t, "\tx = x * %u + ", rnd(31) + 1);
				c_ident(t, (uint32_t)(h * 7) + rnd(12), rnd(12) * 3 + (uint32_t)h);
				tprintf(t, "(a, y);\n");
				break;
			case 1:
				tprintf(t, "\tif (x > %u) {\n\t\ty = x - tbl_%d[%u];\n\t\tx >>= 1;\n"
					"\t}\n", rnd(1000), i, rnd(16));
				break;
			case 2:
				tprintf(t, "\twhile (y-- > 0)\n\t\tx ^= y << %u;\n", rnd(8));
				break;
			case 3:
				tprintf(t, "\ty += (x & 0x%x) != 0 ? a : b;\n", rnd(256));
				break;
			default:
				tprintf(t, "\tfor (int i = 0; i < %u; i++)\n\t\ttbl_%d[i & 15] += "
					"x + i;\n", rnd(20) + 1, i);
				break;
			}
		}
		tprintf(t, "\treturn x ^ y;\n}\n\n");
	}
	if (t->len + 8 <= target) {	/* a closing comment to the size drawn */
		size_t n = target - t->len - 7;
		tprintf(t, "/* ");
		for (size_t k = 0; k < n; k++)
			t->buf[t->len++] = k % 64 == 63 ? '\n' : "andrew"[k % 6];
		tprintf(t, " */\n");
	}
}

static char gen_buf[4 * (SRC_MIN + SRC_SPREAD)];
static char src_root[PATHMAX], dst_root[PATHMAX];
static bool src_made, dst_made;		/* made by this run: ours to remove */
static long tree_files, tree_bytes;	/* what the source tree holds */

/* DIR/src: made by this run (a leftover one is not ours: mkdir's EEXIST fails the run) */
static void tree_make(void)
{
	char path[PATHMAX];
	struct text t = { gen_buf, 0, sizeof gen_buf };
	xmkdir(src_root);
	src_made = true;
	tree_files = tree_bytes = 0;
	for (long g = 0; g < scale; g++) {
		mkpath(path, "%s/g%ld", src_root, g);
		xmkdir(path);
		for (int s = 0; s < NSUB; s++) {
			mkpath(path, "%s/g%ld/s%d", src_root, g, s);
			xmkdir(path);
			for (int h = 0; h < NHFILE; h++) {
				t.len = 0;
				gen_header(&t, g, s, h);
				mkpath(path, "%s/g%ld/s%d/h%d.h", src_root, g, s, h);
				text_write(path, &t, O_EXCL);
				tree_files++;
				tree_bytes += (long)t.len;
			}
			for (int i = 0; i < NCFILE; i++) {
				t.len = 0;
				gen_source(&t, g, s, i);
				mkpath(path, "%s/g%ld/s%d/c%d.c", src_root, g, s, i);
				text_write(path, &t, O_EXCL);
				tree_files++;
				tree_bytes += (long)t.len;
			}
		}
	}
}

/* a tree's files and directories, by the names this program gives them (anything else in
 * it makes a strict removal fail: rmdir's ENOTEMPTY); objs: the make phase's objects too,
 * and when not strict (a failure's tidy-up) a compile's unrenamed one */
static void tree_remove(const char *root, bool objs, bool strict)
{
	static const char *const ext[] = { "c", "o", "o.tmp" };
	const size_t next = objs ? (strict ? 2 : 3) : 1;
	char path[PATHMAX];
	for (long g = 0; g < scale; g++) {
		for (int s = 0; s < NSUB; s++) {
			for (int i = 0; i < NCFILE; i++)
				for (size_t e = 0; e < next; e++) {
					mkpath(path, "%s/g%ld/s%d/c%d.%s", root, g, s, i, ext[e]);
					rm(path, false, strict);
				}
			for (int h = 0; h < NHFILE; h++) {
				mkpath(path, "%s/g%ld/s%d/h%d.h", root, g, s, h);
				rm(path, false, strict);
			}
			mkpath(path, "%s/g%ld/s%d", root, g, s);
			rm(path, true, strict);
		}
		mkpath(path, "%s/g%ld", root, g);
		rm(path, true, strict);
	}
	rm(root, true, strict);
}

static void trees_remove(bool strict)
{
	if (dst_made)
		tree_remove(dst_root, true, strict);
	if (src_made)
		tree_remove(src_root, false, strict);
	dst_made = src_made = false;
}

static void trees_tidy(void)
{
	trees_remove(false);
}

/* ---- andrew: walking a tree (getdents64) ---- */

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

#define ARENA		(256 * 1024)
/* the names listed of the directories being walked: type, name, NUL */
static char arena[ARENA];
static size_t arena_top;
static char dents[16384];	/* getdents64's buffer (the directory closed before descending) */

/* the entries of path (but . and ..) appended to the arena */
static void list_dir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		die("open %s", path);
	for (;;) {
		long n = syscall(SYS_getdents64, fd, dents, sizeof dents);
		if (n < 0)
			die("getdents64 %s", path);
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			const struct linux_dirent64 *d = (const struct linux_dirent64 *)(dents + off);
			if (d->d_reclen == 0 || off + d->d_reclen > n)
				fail("getdents64 %s: a record of %u bytes at %ld of %ld", path,
				     d->d_reclen, off, n);
			off += d->d_reclen;
			const char *nm = d->d_name;
			if (!strcmp(nm, ".") || !strcmp(nm, ".."))
				continue;
			size_t len = strlen(nm);
			if (arena_top + len + 2 > ARENA)
				fail("%s: the walk's names are more than %d bytes", path, ARENA);
			arena[arena_top] = (char)d->d_type;
			memcpy(arena + arena_top + 1, nm, len + 1);
			arena_top += len + 2;
		}
	}
	xclose(fd, path);
}

/* visit(full path, name, is_dir) for every entry under path (not path itself), depth first,
 * an entry before what is under it; the type from lstat (by_lstat) or from getdents64's
 * d_type (lstat only where the file system does not say). A directory's names are read
 * whole and it is closed before they are visited. */
typedef void visit_fn(const char *path, const char *name, bool is_dir);

static void walk(const char *path, bool by_lstat, visit_fn *visit)
{
	char sub[PATHMAX];
	size_t start = arena_top;
	list_dir(path);
	size_t end = arena_top;
	for (size_t p = start; p < end;) {
		unsigned char type = (unsigned char)arena[p];
		const char *name = arena + p + 1;
		p += strlen(name) + 2;
		mkpath(sub, "%s/%s", path, name);
		if (by_lstat || type == DT_UNKNOWN) {
			struct stat st;
			if (lstat(sub, &st))
				die("lstat %s", sub);
			type = S_ISDIR(st.st_mode) ? DT_DIR :
			       S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		if (type != DT_DIR && type != DT_REG)
			fail("%s: neither a directory nor a regular file (type %u)", sub, type);
		visit(sub, name, type == DT_DIR);
		if (type == DT_DIR)
			walk(sub, by_lstat, visit);
	}
	arena_top = start;
}

/* ---- andrew: the five phases ---- */

static long ph_ops, copied_bytes;
static char io_buf[COPY_BUF];

static void ph_mkdir(void)
{
	char path[PATHMAX];
	xmkdir(dst_root);
	dst_made = true;
	ph_ops = 1;
	for (long g = 0; g < scale; g++) {
		mkpath(path, "%s/g%ld", dst_root, g);
		xmkdir(path);
		ph_ops++;
		for (int s = 0; s < NSUB; s++) {
			mkpath(path, "%s/g%ld/s%d", dst_root, g, s);
			xmkdir(path);
			ph_ops++;
		}
	}
}

static void visit_copy(const char *path, const char *name, bool is_dir)
{
	char to[PATHMAX];
	(void)name;
	if (is_dir)
		return;			/* made by the mkdir phase */
	mkpath(to, "%s%s", dst_root, path + strlen(src_root));
	int in = xopen(path, O_RDONLY);
	int out = xopen(to, O_WRONLY | O_CREAT | O_TRUNC);
	for (;;) {
		ssize_t n = read(in, io_buf, sizeof io_buf);
		if (n < 0)
			die("read %s", path);
		if (n == 0)
			break;
		write_all(out, io_buf, (size_t)n, to);
		copied_bytes += n;
	}
	xclose(out, to);
	xclose(in, path);
	ph_ops++;
}

static void ph_copy(void)
{
	ph_ops = copied_bytes = 0;
	walk(src_root, false, visit_copy);
}

static void visit_count(const char *path, const char *name, bool is_dir)
{
	(void)path;
	(void)name;
	(void)is_dir;
	ph_ops++;		/* walk lstat'ed it */
}

static void ph_stat(void)
{
	struct stat st;
	ph_ops = 0;
	for (int pass = 0; pass < 2; pass++) {
		if (lstat(dst_root, &st))
			die("lstat %s", dst_root);
		ph_ops++;
		walk(dst_root, true, visit_count);
	}
}

static void visit_read(const char *path, const char *name, bool is_dir)
{
	(void)name;
	if (is_dir)
		return;
	int fd = xopen(path, O_RDONLY);
	for (;;) {
		ssize_t n = read(fd, io_buf, sizeof io_buf);
		if (n < 0)
			die("read %s", path);
		if (n == 0)
			break;
		ph_ops += n;
	}
	xclose(fd, path);
}

static void ph_read(void)
{
	ph_ops = 0;
	walk(dst_root, false, visit_read);
}

static void visit_make(const char *path, const char *name, bool is_dir)
{
	char obj[PATHMAX], who[PATHMAX + 32];
	size_t n = strlen(name);
	if (is_dir || n < 3 || strcmp(name + n - 2, ".c"))
		return;
	mkpath(obj, "%.*so", (int)strlen(path) - 1, path);
	pid_t p = fork();
	if (p < 0)
		die("fork (compile of %s)", path);
	if (p == 0) {
		on_failure = NULL;
		exec_self("--cc", path, obj);
	}
	int st;
	if (waitpid(p, &st, 0) != p)
		die("waitpid (compile of %s)", path);
	if (!status_ok(st)) {
		snprintf(who, sizeof who, "the compile of %s", path);
		status_fail(who, p, st);
	}
	ph_ops++;
}

static void ph_make(void)
{
	ph_ops = 0;
	walk(dst_root, false, visit_make);
}

/* ---- the critical-section census (/proc/ksync-critsec on ksync; absent on Linux) and
 * the serial line's totals (/proc/ksync-serial: {"serial":false} unless the kernel runs
 * the serial load, serial_load=BAUD) ---- */
#define CRITSEC "/proc/ksync-critsec"
#define SERIAL "/proc/ksync-serial"
#define CRITSEC_MAX 2048
static char cs_before[CRITSEC_MAX + 1], cs_after[CRITSEC_MAX + 1];
static char sl_before[CRITSEC_MAX + 1], sl_after[CRITSEC_MAX + 1];
static long cs_before_n = -1;	/* -1: no file (or not read) */
static long sl_before_n = -1;	/* -1: no file (a kernel without it) */

/* The file's one line (ubench_io.h read_one_line); -1 if there is no such file. */
static long critsec_read(char *buf)
{
	return read_one_line(CRITSEC, buf, CRITSEC_MAX);
}

static void critsec_begin(void)
{
	cs_before_n = critsec_read(cs_before);
	sl_before_n = cs_before_n < 0 ? -1 : read_one_line(SERIAL, sl_before, CRITSEC_MAX);
}

static void critsec_end(const char *load, const char *phase)
{
	if (cs_before_n < 0)
		return;
	long n = critsec_read(cs_after);
	if (n < 0)
		fail("%s: gone since the run started", CRITSEC);
	long sn = sl_before_n < 0 ? -1 : read_one_line(SERIAL, sl_after, CRITSEC_MAX);
	if (sl_before_n >= 0 && sn < 0)
		fail("%s: gone since the run started", SERIAL);
	printf("KSYNC-SMLOAD-CRITSEC {\"load\":\"%s\",\"phase\":\"%s\",\"before\":%.*s,"
	       "\"after\":%.*s", load, phase, (int)cs_before_n, cs_before, (int)n, cs_after);
	if (sn >= 0)
		printf(",\"serial_before\":%.*s,\"serial_after\":%.*s", (int)sl_before_n,
		       sl_before, (int)sn, sl_after);
	printf("}\n");
	cs_before_n = sl_before_n = -1;
	flush_stdout();
}

static void andrew_line(const char *phase, long ops, uint64_t ns)
{
	printf("KSYNC-SMLOAD {\"load\":\"andrew\",\"phase\":\"%s\",\"ops\":%ld,"
	       "\"elapsed_ns\":%llu}\n", phase, ops, (unsigned long long)ns);
	flush_stdout();
}

static void andrew_main(void)
{
	static const struct {
		const char *name;
		void (*run)(void);
	} phases[] = {
		{ "mkdir", ph_mkdir }, { "copy", ph_copy }, { "stat", ph_stat },
		{ "read", ph_read }, { "make", ph_make },
	};
	const long dirs = 1 + scale * (1 + NSUB), files = scale * NSUB * (NCFILE + NHFILE);
	uint64_t total = 0;
	long compiled = 0;
	mkpath(src_root, "%s/src", dir);
	mkpath(dst_root, "%s/dst", dir);
	on_failure = trees_tidy;
	tree_make();
	for (size_t i = 0; i < sizeof phases / sizeof phases[0]; i++) {
		critsec_begin();
		uint64_t t0 = now_ns();
		phases[i].run();
		uint64_t ns = now_ns() - t0;
		critsec_end("andrew", phases[i].name);
		long want = i == 0 ? dirs : i == 1 ? files : i == 2 ? 2 * (dirs + files) :
			    i == 3 ? tree_bytes : scale * NSUB * NCFILE;
		if (ph_ops != want)
			fail("%s: %ld %s, the tree has %ld", phases[i].name, ph_ops,
			     i == 3 ? "bytes read" : "done", want);
		if (i == 1 && copied_bytes != tree_bytes)
			fail("copy: %ld bytes copied, the tree has %ld", copied_bytes, tree_bytes);
		andrew_line(phases[i].name, ph_ops, ns);
		total += ns;
		compiled = ph_ops;
	}
	trees_remove(true);
	on_failure = NULL;
	andrew_line("total", compiled, total);
}

/* --andrew-tree DIR SCALE: the source tree alone, left in DIR/src */
static void andrew_tree_main(void)
{
	mkpath(src_root, "%s/src", dir);
	on_failure = trees_tidy;
	tree_make();
	on_failure = NULL;
	src_made = false;
}

/* ---- --cc SRC OUT: the compiler-shaped job ---- */

#include "cc_front.h"	/* the compile's front end, shared with the other program */

/* --cc SRC OUT: the compile (cc_front.h cc_compile), its object written to OUT.tmp and
 * renamed to OUT */
static int cc_main(const char *src, const char *out)
{
	static unsigned char obj[OBJ_BYTES];
	char tmp[PATHMAX];
	load = "cc";
	cc_compile(src, obj);
	mkpath(tmp, "%s.tmp", out);
	int fd = xopen(tmp, O_WRONLY | O_CREAT | O_TRUNC);
	write_all(fd, obj, sizeof obj, tmp);
	xclose(fd, tmp);
	if (rename(tmp, out))
		die("rename %s to %s", tmp, out);
	return 0;
}

/* ---- webstone: the documents ---- */

static const struct {
	const char *tag;	/* in the file names */
	long size;		/* bytes */
	int files;		/* in the tree */
	int permille;		/* of the requests */
} classes[] = {
	{ "500b", 512, 14, 350 },
	{ "5k", 5 * 1024, 20, 500 },
	{ "50k", 50 * 1024, 5, 140 },
	{ "500k", 500 * 1024, 1, 10 },
};
#define NCLASS ((int)(sizeof classes / sizeof classes[0]))

static char www_root[PATHMAX];
static int www_made = -1;	/* files made so far (-1: none, not even the directory) */

/* a document's name: "/file<tag>-<k>.html" */
static void doc_name(char *out, size_t cap, int c, int k)
{
	snprintf(out, cap, "/file%s-%02d.html", classes[c].tag, k);
}

static void www_remove(bool strict)
{
	char name[64], path[PATHMAX];
	int n = 0;
	if (www_made < 0)
		return;
	for (int c = 0; c < NCLASS; c++)
		for (int k = 0; k < classes[c].files; k++, n++)
			if (n < www_made) {
				doc_name(name, sizeof name, c, k);
				mkpath(path, "%s%s", www_root, name);
				rm(path, false, strict);
			}
	rm(www_root, true, strict);
	www_made = -1;
}

static void www_tidy(void)
{
	www_remove(false);
}

static char srv_buf[SRV_BUF];

/* the documents: HTML-ish lines that name the file, to the class's size */
static void www_make(void)
{
	char name[64], path[PATHMAX];
	mkpath(www_root, "%s/www", dir);
	www_made = -1;
	xmkdir(www_root);
	www_made = 0;
	for (int c = 0; c < NCLASS; c++)
		for (int k = 0; k < classes[c].files; k++) {
			doc_name(name, sizeof name, c, k);
			mkpath(path, "%s%s", www_root, name);
			int fd = xopen(path, O_WRONLY | O_CREAT | O_EXCL);
			www_made++;
			long left = classes[c].size;
			for (long line = 0; left > 0; ) {
				size_t n = 0;
				while (n < sizeof srv_buf - 80) {
					n += (size_t)snprintf(srv_buf + n, sizeof srv_buf - n,
						"<p>%s line %06ld: the quick brown fox.</p>\n",
						name, line++);
				}
				if ((long)n > left)
					n = (size_t)left;
				write_all(fd, srv_buf, n, path);
				left -= (long)n;
			}
			xclose(fd, path);
		}
	if (www_made != WWW_FILES)
		fail("the document tree has %d files, not %d", www_made, WWW_FILES);
}

/* ---- webstone: the processes, started together ---- */

static int start_rd = -1, ready_wr = -1;	/* in a process: its ends of the group's pipes */

/* in a process: ready, then wait for the start (the write end's close: EOF) */
static void await_start(void)
{
	put1(ready_wr, 'r', "ready pipe");
	xclose(ready_wr, "ready pipe");
	ready_wr = -1;
	if (get1(start_rd, "start pipe") != -1)
		fail("start pipe: a byte where the start's EOF was expected");
	xclose(start_rd, "start pipe");
	start_rd = -1;
}

static const char *proc_name(int k)
{
	return k < clients ? "client" : "server";
}

/* Reap the n processes (pid[i] > 0); the time the last of the first timed ones was reaped
 * (0 if none is timed). The first that fails has the others killed and, once all are
 * reaped, fails the load. aborting: a process ended before it was ready while the others
 * wait for the start: the first one reaped (that one) has the others killed, whatever its
 * status. */
static uint64_t group_reap(pid_t *pid, int n, int timed, bool aborting)
{
	pid_t bad = 0;
	int bad_st = 0, bad_k = 0, left = 0, timed_left = timed;
	uint64_t t = 0;
	for (int i = 0; i < n; i++)
		left += pid[i] > 0;
	while (left) {
		int st;
		pid_t p = waitpid(-1, &st, 0);
		if (p < 0)
			die("waitpid (%s)", load);
		int i = 0;
		while (i < n && pid[i] != p)
			i++;
		if (i == n)
			continue;		/* not one of them (none expected) */
		pid[i] = 0;
		left--;
		if (i < timed && --timed_left == 0)
			t = now_ns();
		if (!bad && (!status_ok(st) || aborting)) {
			bad = p;
			bad_st = st;
			bad_k = i;
			for (int j = 0; j < n; j++)
				if (pid[j] > 0)
					kill(pid[j], SIGKILL);
		}
	}
	if (bad && !status_ok(bad_st)) {
		char who[32];
		snprintf(who, sizeof who, "%s %d", proc_name(bad_k), bad_k);
		if (bad_k == clients)
			snprintf(who, sizeof who, "the server");
		status_fail(who, bad, bad_st);
	}
	if (aborting)
		fail("a process ended before it was ready");
	return t;
}

/* Run n processes fn(k, arg), k = 0..n-1; after_fork(arg) in the parent once all are forked
 * (it closes what only they use). The time from the start signal until the last of the
 * first timed ones is reaped, in ns. */
static uint64_t group_run(int n, int timed, void (*fn)(int k, void *arg),
			  void (*after_fork)(void *arg), void *arg)
{
	int start[2], ready[2];
	pid_t pid[MAXCLIENTS + 1];
	xpipe(start, "start");
	xpipe(ready, "ready");
	fflush(stdout);
	for (int k = 0; k < n; k++) {
		pid_t p = fork();
		if (p < 0) {
			int err = errno;
			for (int j = 0; j < k; j++) {	/* the forked ones wait for the start */
				int st;
				kill(pid[j], SIGKILL);
				waitpid(pid[j], &st, 0);
			}
			errno = err;
			die("fork (%s %d of %d)", proc_name(k), k, n);
		}
		if (p == 0) {
			on_failure = NULL;
			close(start[1]);
			close(ready[0]);
			start_rd = start[0];
			ready_wr = ready[1];
			fn(k, arg);
			_exit(0);
		}
		pid[k] = p;
	}
	if (after_fork)
		after_fork(arg);
	xclose(start[0], "start pipe");
	xclose(ready[1], "ready pipe");
	char buf[MAXCLIENTS + 2];
	size_t got = read_all(ready[0], buf, (size_t)n, "ready pipe");
	xclose(ready[0], "ready pipe");
	if (got < (size_t)n)
		group_reap(pid, n, 0, true);	/* the start pipe still closed to them */
	uint64_t t0 = now_ns();
	xclose(start[1], "start pipe");		/* the start signal */
	return group_reap(pid, n, timed, false) - t0;
}

/* ---- webstone: server and clients ---- */

struct tally {			/* a process's counts, through the results pipe at its end */
	int32_t who;		/* 0..CLIENTS-1 a client, CLIENTS the server */
	int32_t pad;
	int64_t requests, bytes, not_found;
};

struct web {
	int sock[MAXCLIENTS][2];	/* [k][0] the server's end, [k][1] client k's */
	int results[2];
};

static void send_tally(struct web *w, int k, long reqs, long bytes, long nf)
{
	struct tally t = { .who = k, .requests = reqs, .bytes = bytes, .not_found = nf };
	write_all(w->results[1], &t, sizeof t, "results pipe");
	xclose(w->results[1], "results pipe");
}

/* one request line from client k into line (NUL for the newline); 0 at EOF before any
 * byte: the client has closed */
static size_t read_request(int fd, int k, char *line, size_t cap)
{
	size_t got = 0;
	for (;;) {
		ssize_t n = read(fd, line + got, cap - 1 - got);
		if (n < 0)
			die("server: read (client %d)", k);
		if (n == 0) {
			if (got)
				fail("server: client %d closed in the middle of a request", k);
			return 0;
		}
		got += (size_t)n;
		char *nl = memchr(line, '\n', got);
		if (nl) {
			if (nl != line + got - 1)
				fail("server: client %d sent more than one request at once", k);
			*nl = '\0';
			return got;
		}
		if (got == cap - 1)
			fail("server: client %d's request is longer than %zu bytes", k, cap - 2);
	}
}

static void serve(int fd, int k, const char *req, long *bytes, long *nf)
{
	char path[PATHMAX];
	const char *name = req + 4;
	if (strncmp(req, "GET /", 5) || strstr(name, "..") || strchr(name, ' '))
		fail("server: a bad request from client %d: '%s'", k, req);
	mkpath(path, "%s%s", www_root, name);
	int f = open(path, O_RDONLY);
	if (f < 0) {
		if (errno != ENOENT)
			die("server: open %s", path);
		write_all(fd, "404 0\n", 6, "reply");
		++*nf;
		return;
	}
	struct stat st;
	if (fstat(f, &st))
		die("server: fstat %s", path);
	size_t h = (size_t)snprintf(srv_buf, sizeof srv_buf, "200 %lld\n", (long long)st.st_size);
	long sent = 0;
	for (;;) {
		ssize_t n = read(f, srv_buf + h, sizeof srv_buf - h);
		if (n < 0)
			die("server: read %s", path);
		if (n == 0 && h == 0)
			break;
		write_all(fd, srv_buf, h + (size_t)n, "reply");
		sent += n;
		if (n == 0)
			break;
		h = 0;
	}
	xclose(f, path);
	if (sent != (long)st.st_size)
		fail("server: %s: sent %ld bytes, fstat said %lld", name, sent,
		     (long long)st.st_size);
	*bytes += sent;
}

/* the clients in turn, a request from each (blocking), until all have closed */
static void server(struct web *w)
{
	char line[256];
	int fd[MAXCLIENTS], open_n = clients;
	long served = 0, bytes = 0, nf = 0;
	for (int k = 0; k < clients; k++)
		fd[k] = w->sock[k][0];
	await_start();
	while (open_n) {
		for (int k = 0; k < clients; k++) {
			if (fd[k] < 0)
				continue;
			if (read_request(fd[k], k, line, sizeof line) == 0) {
				xclose(fd[k], "server's socket");
				fd[k] = -1;
				open_n--;
				continue;
			}
			serve(fd[k], k, line, &bytes, &nf);
			served++;
		}
	}
	send_tally(w, clients, served, bytes, nf);
}

static char cl_buf[65536];

/* REQUESTS requests by the mix, every reply checked */
static void client(struct web *w, int k)
{
	int fd = w->sock[k][1];
	char name[64], req[96];
	long bytes = 0, nf = 0;
	rng = 0x2545f491u ^ (uint32_t)(k + 1) * 2654435761u;
	await_start();
	for (long i = 0; i < requests; i++) {
		long want;
		bool bad = i % BAD_EVERY == BAD_EVERY - 1;
		if (bad) {
			snprintf(name, sizeof name, "/missing-%d-%ld.html", k, i);
			want = -1;
		} else {
			int c = 0, r = (int)rnd(1000);
			while (c < NCLASS - 1 && r >= classes[c].permille) {
				r -= classes[c].permille;
				c++;
			}
			doc_name(name, sizeof name, c, (int)rnd((uint32_t)classes[c].files));
			want = classes[c].size;
		}
		int rn = snprintf(req, sizeof req, "GET %s\n", name);
		write_all(fd, req, (size_t)rn, "request");
		/* the header line, and what came with it of the body */
		size_t got = 0;
		char *nl = NULL;
		while (!nl) {
			ssize_t n = read(fd, cl_buf + got, sizeof cl_buf - got);
			if (n < 0)
				die("client %d: read (reply to GET %s)", k, name);
			if (n == 0)
				fail("client %d: the server closed before its reply to GET %s", k,
				     name);
			got += (size_t)n;
			nl = memchr(cl_buf, '\n', got < 32 ? got : 32);
			if (!nl && got >= 32)
				fail("client %d: a reply to GET %s without a header line", k, name);
		}
		*nl = '\0';
		long size = -2;
		char *end;
		if (!strncmp(cl_buf, "200 ", 4)) {
			size = strtol(cl_buf + 4, &end, 10);
			if (*end || size < 0)
				size = -2;
		} else if (!strcmp(cl_buf, "404 0")) {
			size = -1;
		}
		if (size == -2 || (size < 0) != (want < 0))
			fail("client %d: the reply to GET %s: '%s', expected %s", k, name, cl_buf,
			     want < 0 ? "'404 0'" : "'200 SIZE'");
		if (size < 0) {
			if (got != (size_t)(nl - cl_buf) + 1)
				fail("client %d: GET %s: bytes after the 404 header", k, name);
			nf++;
			continue;
		}
		long body = (long)got - (long)(nl - cl_buf) - 1;
		while (body < size) {
			size_t cap = sizeof cl_buf;
			if ((long)cap > size - body)
				cap = (size_t)(size - body);
			ssize_t n = read(fd, cl_buf, cap);
			if (n < 0)
				die("client %d: read (reply to GET %s)", k, name);
			if (n == 0)
				break;
			body += n;
		}
		if (size != want || body != size)
			fail("client %d: GET %s: %ld bytes (header said %ld), the file has %ld", k,
			     name, body, size, want);
		bytes += body;
	}
	xclose(fd, "client's socket");
	send_tally(w, k, requests, bytes, nf);
}

/* process k: client k, or (k == CLIENTS) the server; each keeps its socket ends only */
static void web_proc(int k, void *arg)
{
	struct web *w = arg;
	xclose(w->results[0], "results pipe");
	for (int j = 0; j < clients; j++) {
		if (k != clients)
			xclose(w->sock[j][0], "socket");
		if (k != j)
			xclose(w->sock[j][1], "socket");
	}
	if (k == clients)
		server(w);
	else
		client(w, k);
}

static void web_parent_close(void *arg)
{
	struct web *w = arg;
	for (int j = 0; j < clients; j++) {
		xclose(w->sock[j][0], "socket");
		xclose(w->sock[j][1], "socket");
	}
	xclose(w->results[1], "results pipe");
}

static void webstone_main(void)
{
	static struct web w;
	struct tally t[MAXCLIENTS + 2];
	on_failure = www_tidy;
	www_make();
	xpipe(w.results, "results");
	for (int j = 0; j < clients; j++)
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, w.sock[j]))
			die("socketpair (client %d)", j);
	critsec_begin();
	uint64_t ns = group_run(clients + 1, clients, web_proc, web_parent_close, &w);
	critsec_end("webstone", "run");
	size_t got = read_all(w.results[0], t, sizeof t, "results pipe");
	xclose(w.results[0], "results pipe");
	if (got != (size_t)(clients + 1) * sizeof t[0])
		fail("results pipe: %zu bytes, expected %zu", got,
		     (size_t)(clients + 1) * sizeof t[0]);
	long reqs = 0, bytes = 0, nf = 0;
	bool seen[MAXCLIENTS + 1] = { false };
	const struct tally *srv = NULL;
	for (int i = 0; i <= clients; i++) {
		if (t[i].who < 0 || t[i].who > clients || seen[t[i].who])
			fail("results pipe: a second record, or one from process %d", t[i].who);
		seen[t[i].who] = true;
		if (t[i].who == clients) {
			srv = &t[i];
			continue;
		}
		reqs += t[i].requests;
		bytes += t[i].bytes;
		nf += t[i].not_found;
	}
	if (srv->requests != reqs || srv->bytes != bytes || srv->not_found != nf)
		fail("the server served %lld requests (%lld bytes, %lld not found), the clients "
		     "had %ld (%ld bytes, %ld not found)", (long long)srv->requests,
		     (long long)srv->bytes, (long long)srv->not_found, reqs, bytes, nf);
	if (reqs != clients * requests || nf != clients * (requests / BAD_EVERY))
		fail("%ld requests (%ld not found), expected %ld (%ld)", reqs, nf,
		     clients * requests, clients * (requests / BAD_EVERY));
	www_remove(true);
	on_failure = NULL;
	printf("KSYNC-SMLOAD {\"load\":\"webstone\",\"clients\":%d,\"requests\":%ld,\"bytes\":%ld,"
	       "\"not_found\":%ld,\"elapsed_ns\":%llu}\n", clients, reqs, bytes, nf,
	       (unsigned long long)ns);
	flush_stdout();
}

/* ---- the command line ---- */

static long number(const char *name, const char *s, long lo, long hi)
{
	long v = 0;
	bool ok = *s != '\0';
	for (const char *p = s; *p && ok; p++) {
		ok = *p >= '0' && *p <= '9';
		if (ok && v <= hi)
			v = v * 10 + (*p - '0');
	}
	if (!ok || v < lo || v > hi)
		bad_arg("%s must be %ld..%ld, not '%s'", name, lo, hi, s);
	return v;
}

static void set_dir(const char *d)
{
	if (!*d)
		bad_arg("DIR must not be empty");
	if (strlen(d) > DIRMAX)
		bad_arg("DIR is longer than %d characters", DIRMAX);
	strcpy(dir, d);
}

int main(int argc, char **argv)
{
	if (argc > 0 && argv[0])
		self = argv[0];
	if (argc < 2)
		usage(NULL);
	const char *mode = argv[1];
	if (!strcmp(mode, "--cc")) {
		if (argc != 4)
			usage("--cc takes SRC OUT");
		return cc_main(argv[2], argv[3]);
	}
	if (!strcmp(mode, "andrew") || !strcmp(mode, "--andrew-tree")) {
		bool tree_only = mode[0] == '-';
		if (argc != 4)
			usage(tree_only ? "--andrew-tree takes DIR SCALE" : "andrew takes DIR SCALE");
		set_dir(argv[2]);
		scale = number("SCALE", argv[3], 1, MAXSCALE);
		if (!tree_only && self[0] != '/')
			bad_arg("andrew execs this program by argv[0], which is not an absolute "
				"path: '%s'", self);
		load = "andrew";
		main_pid = getpid();	/* the process that tidies up on a failure */
		prepare_dir();
		if (tree_only)
			andrew_tree_main();
		else
			andrew_main();
		return 0;
	}
	if (!strcmp(mode, "webstone")) {
		if (argc != 5)
			usage("webstone takes CLIENTS REQUESTS DIR");
		clients = (int)number("CLIENTS", argv[2], 1, MAXCLIENTS);
		requests = number("REQUESTS", argv[3], 1, MAXREQUESTS);
		set_dir(argv[4]);
		load = "webstone";
		main_pid = getpid();
		prepare_dir();
		webstone_main();
		return 0;
	}
	bad_arg("unknown command '%s'", mode);
}
