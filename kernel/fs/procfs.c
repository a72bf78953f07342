/*
 * procfs.c - /proc: a directory of the RAM file system whose entries the walk keeps in
 * step with the process table (docs/userspace.md "/proc").
 *
 * Why entries in the ramfs, regenerated at lookup, and not a file system of its own:
 * the walk, stat, getdents, lseek, read and close of kernel/fs all work on ramfs inodes
 * under the one ramfs monitor; a second file system would need a mount table and a
 * second set of inode operations for every call. Here /proc is an ordinary directory
 * (made by fs_init) whose inodes are marked (inode.procfs) and whose contents are made
 * fresh when the walk looks a name up in it:
 *   - a lookup in /proc of a pid (or getdents of /proc from its start) first brings the
 *     <pid> directories in line with the live processes (new ones made, gone ones
 *     removed: an open file of a gone one keeps its inode, as an unlinked file);
 *   - a lookup of a file (stat, status, cmdline, meminfo, cpuinfo, uptime) writes its text
 *     anew (the generator's), so `cat /proc/meminfo` reads what was true at its open;
 *   - a lookup of a link (self, exe) sets its target: self's to the caller's pid - the
 *     walk and whatever the call does with the link happen under the ramfs monitor, so
 *     the caller sees its own.
 * A difference from Linux, knowingly: a file's text is the inode's, shared by every open
 * file; another process's open of the same name regenerates it under a reader that is
 * part-way through (Linux's seq_file keeps a buffer per open file). Sizes are the text's
 * (Linux says 0).
 *
 * Read-only as Linux's /proc answers root: opening for writing succeeds and write()
 * answers EIO (/proc's own files) or EINVAL (a process's); O_TRUNC and ftruncate change
 * nothing; a new name (open O_CREAT, mkdir, symlink, link, rename's target) is ENOENT,
 * unlink/rmdir/rename of an entry EPERM, a link or rename between /proc and another
 * directory EXDEV.
 *
 * The text comes from the process layer (kernel/proc/procfs.c) through fs_procfs_set's
 * table, set once before any process runs (kernel/fs must not call kernel/proc: no circle
 * of files, tests/test_layout.py). The generator is called with the ramfs monitor held
 * and takes the process table's lock (a master lock, so innermost: order ramfs ->
 * uproc-table) only to copy what it prints; it formats into a kernel buffer, and the
 * copy to user is the read's, long after both locks are released.
 *
 * Locks: every field here is the ramfs monitor's (inode.procfs and procfs_pid are
 * constant after the inode is made); `source` is written once (release) by
 * fs_procfs_set before any process exists and read with acquire.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

#define PROCFS_BUF 16384	/* the longest text (cpuinfo of many CPUs is cut there) */
#define PROCFS_MAXPIDS 256

static const struct procfs_source *source;	/* release/acquire, see above */

void fs_procfs_set(const struct procfs_source *s)
{
	__atomic_store_n(&source, s, __ATOMIC_RELEASE);
}

static const struct procfs_source *src(void)
{
	return __atomic_load_n(&source, __ATOMIC_ACQUIRE);
}

static const char *const root_files[] = { "cpuinfo", "meminfo", "uptime", "ksync-lockstat",
					      "ksync-critsec", "ksync-serial" };
static const char *const pid_files[] = { "cmdline", "stat", "status" };

/* A new entry name in dir (ramfs_mon held); NULL if out of memory. */
static struct inode *add(struct inode *dir, const char *name, uint32_t mode, uint8_t kind, int pid)
{
	struct inode *i = ramfs_new(mode);
	if (!i)
		return NULL;
	i->procfs = kind;
	i->procfs_pid = pid;
	return ramfs_add_new(dir, name, strlen(name), i) ? NULL : i;
}

int procfs_make(struct inode *root)
{
	struct dentry_rec *d = ramfs_find(root, "proc", 4);
	if (d)
		return d->child->procfs == PROCFS_ROOT ? 0 : -LX_EEXIST;
	struct inode *p = add(root, "proc", LX_S_IFDIR | 0555, PROCFS_ROOT, 0);
	if (!p || !add(p, "self", LX_S_IFLNK | 0777, PROCFS_LINK, -1))
		return -LX_ENOMEM;
	for (size_t k = 0; k < sizeof root_files / sizeof root_files[0]; k++)
		if (!add(p, root_files[k], LX_S_IFREG | 0444, PROCFS_FILE, 0))
			return -LX_ENOMEM;
	return 0;
}

static int pid_of(const char *name, size_t len)
{
	int v = 0;
	if (len == 0 || len > 9 || name[0] == '0')
		return -1;
	for (size_t k = 0; k < len; k++) {
		if (name[k] < '0' || name[k] > '9')
			return -1;
		v = v * 10 + (name[k] - '0');
	}
	return v;
}

static void remove_pid_dir(struct inode *proc, struct dentry_rec *d)
{
	struct inode *dir = d->child;
	while (dir->u.dir.head) {
		struct dentry_rec *e = dir->u.dir.head;
		struct inode *c = e->child;
		ramfs_del(dir, e);
		c->nlink--;
		ramfs_maybe_free(c);
	}
	ramfs_del(proc, d);
	dir->nlink = 0;
	proc->nlink--;
	ramfs_maybe_free(dir);
}

static void add_pid_dir(struct inode *proc, int pid)
{
	char name[16];
	ksnprintf(name, sizeof name, "%d", pid);
	struct inode *dir = add(proc, name, LX_S_IFDIR | 0555, PROCFS_PIDDIR, pid);
	if (!dir)
		return;		/* out of memory: the pid is missing, as if gone */
	for (size_t k = 0; k < sizeof pid_files / sizeof pid_files[0]; k++)
		(void)add(dir, pid_files[k], LX_S_IFREG | 0444, PROCFS_FILE, pid);
	(void)add(dir, "exe", LX_S_IFLNK | 0777, PROCFS_LINK, pid);
}

void procfs_refresh(struct inode *proc)
{
	const struct procfs_source *s = src();
	if (!s || proc->procfs != PROCFS_ROOT)
		return;
	int *pids = kmalloc(PROCFS_MAXPIDS * sizeof *pids);
	if (!pids)
		return;
	unsigned n = s->pids(pids, PROCFS_MAXPIDS);	/* ascending */
	/* gone: a pid directory whose process is not in the list */
	for (struct dentry_rec *d = proc->u.dir.head, *next; d; d = next) {
		next = d->next;
		if (d->child->procfs != PROCFS_PIDDIR)
			continue;
		bool live = false;
		for (unsigned k = 0; k < n && !live; k++)
			live = pids[k] == d->child->procfs_pid;
		if (!live)
			remove_pid_dir(proc, d);
	}
	/* new: appended in ascending order (pids only grow, so the list stays sorted) */
	for (unsigned k = 0; k < n; k++) {
		char name[16];
		int len = ksnprintf(name, sizeof name, "%d", pids[k]);
		if (!ramfs_find(proc, name, (size_t)len))
			add_pid_dir(proc, pids[k]);
	}
	kfree(pids);
}

/* Set link i's target (a kernel string; "" makes the walk answer ENOENT). */
static void set_target(struct inode *i, const char *t, size_t len)
{
	char *copy = kmalloc(len + 1);
	if (!copy)
		len = 0;
	else
		memcpy(copy, t, len), copy[len] = 0;
	kfree(i->u.lnk.target);
	i->u.lnk.target = copy;
	i->size = (int64_t)len;
}

static void regen(struct inode *i, const char *name, const struct procfs_source *s)
{
	if (i->procfs == PROCFS_LINK && i->procfs_pid < 0) {	/* self */
		char pid[16];
		int me = s->self();
		set_target(i, pid, me > 0 ? (size_t)ksnprintf(pid, sizeof pid, "%d", me) : 0);
		return;
	}
	char *buf = kmalloc(PROCFS_BUF);
	if (!buf)
		return;
	long n = s->gen(i->procfs_pid, name, buf, PROCFS_BUF);
	if (i->procfs == PROCFS_LINK) {
		set_target(i, buf, n > 0 ? (size_t)n : 0);
	} else if (i->procfs == PROCFS_FILE) {
		(void)ramfs_truncate(i, 0);
		if (n > 0)
			(void)ramfs_write_data(i, buf, (size_t)n, 0);
		i->mtime = i->ctime = fs_now();
	}
	kfree(buf);
}

void procfs_lookup(struct inode *dir, const char *name, size_t len)
{
	const struct procfs_source *s = src();
	if (!s)
		return;
	if (dir->procfs == PROCFS_ROOT && pid_of(name, len) > 0)
		procfs_refresh(dir);
	struct dentry_rec *d = ramfs_find(dir, name, len);
	if (d && (d->child->procfs == PROCFS_FILE || d->child->procfs == PROCFS_LINK))
		regen(d->child, d->name, s);
}
