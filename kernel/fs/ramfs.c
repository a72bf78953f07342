/*
 * ramfs.c - the RAM file system: directories, regular files, symbolic links, hard links,
 * character-device nodes; inodes freed when no name (nlink) and no holder (refs) is left.
 *
 * Massalin & Pu 1991, "Input and output", file system: a pipeline of disk driver, file
 * mapper and a file buffer that "implements unix style file level unix read write seek";
 * ramfs is the file buffer alone (there is no disk under it): a regular file is an array
 * of page-sized chunks taken from the page allocator (kernel/mm/pmm.c) as they are first
 * written, holes read as zeros.
 *
 * ONE lock for the whole file system: the monitor ramfs_mon (class "ramfs", a Sprite
 * monitor lock: Hartman & Ousterhout section 2), not one per inode. Why: rename, link,
 * unlink and the path walk touch two or more directories and the inodes they name; with
 * per-inode locks they need a global rename lock and an ordering rule (Linux's
 * s_vfs_rename_mutex and parent-before-child), and a walk needs references on every step
 * against concurrent unlinks. One monitor makes each call atomic with respect to every
 * other, which is what the differential tests check against Linux, and its statistics
 * (lockstat) say how much it costs: Sprite's lesson (section 5: "Each time a pipe is
 * accessed a monitor lock around the file handle table ... is grabbed ... causing a
 * bottleneck") is measured, not assumed. Pipes and the tty do not take it on their data
 * path (their own locks: pipe.c, tty.c); descriptor tables have their own (vfs.c).
 * The monitor is held while copying file data (kernel buffers only: no fault can occur).
 *
 * Shared state: every inode field and every directory entry (fs_internal.h), next_ino,
 * live_inodes and data_pages (atomic, read by tests without the lock) - ramfs_mon.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

LOCK_CLASS(fs_ramfs_class, "ramfs", LOCK_MONITOR, LOCK_DATA);

struct monitor ramfs_mon;
static struct inode *root;		/* ramfs_mon (set once, under it) */
static uint64_t next_ino = 1;		/* ramfs_mon */
static uint64_t live_inodes, data_pages;	/* atomic (relaxed): statistics */
/* 0 none, 1 being initialised, 2 ready. acquire/release: the monitor's and root's
 * initialisation happens-before any use by a thread that saw 2. */
static unsigned ready;

uint64_t fs_live_inodes(void) { return __atomic_load_n(&live_inodes, __ATOMIC_RELAXED); }
uint64_t fs_data_pages(void) { return __atomic_load_n(&data_pages, __ATOMIC_RELAXED); }

struct lx_timespec fs_now(void)
{
	/* seconds since boot (there is no wall clock yet) */
	uint64_t hz = arch_tsc_hz(), c = arch_cycles();
	struct lx_timespec ts = { 0, 0 };
	if (hz) {
		ts.tv_sec = (int64_t)(c / hz);
		ts.tv_nsec = (int64_t)((c % hz) * 1000000000ull / hz);
	}
	return ts;
}

struct inode *ramfs_new(uint32_t mode)
{
	struct inode *i = kzalloc(sizeof *i);
	if (!i)
		return NULL;
	i->ino = next_ino++;
	i->mode = mode;
	i->atime = i->mtime = i->ctime = fs_now();
	if (IS_DIR(i))
		i->u.dir.next_cookie = 2;
	__atomic_fetch_add(&live_inodes, 1, __ATOMIC_RELAXED);
	return i;
}

static void free_pages_from(struct inode *i, size_t first)
{
	for (size_t p = first; p < i->u.reg.cap; p++) {
		if (i->u.reg.pages[p]) {
			fs_page_release(i->u.reg.pages[p]);	/* a MAP_SHARED mapping may hold it */
			i->u.reg.pages[p] = NULL;
			__atomic_fetch_sub(&data_pages, 1, __ATOMIC_RELAXED);
		}
	}
}

void ramfs_maybe_free(struct inode *i)
{
	if (i->nlink || i->refs || i == root)
		return;
	if (IS_REG(i)) {
		free_pages_from(i, 0);
		kfree(i->u.reg.pages);
	} else if (IS_LNK(i)) {
		kfree(i->u.lnk.target);
	} else if (IS_DIR(i)) {
		/* an empty directory (rmdir checks); entries of a removed one are gone */
		struct dentry_rec *d = i->u.dir.head;
		while (d) {
			struct dentry_rec *n = d->next;
			kfree(d);
			d = n;
		}
	}
	kfree(i);
	__atomic_fetch_sub(&live_inodes, 1, __ATOMIC_RELAXED);
}

void inode_ref(struct inode *i) { i->refs++; }

void inode_unref(struct inode *i)
{
	KASSERT(i->refs > 0);
	i->refs--;
	ramfs_maybe_free(i);
}

void inode_put(struct inode *i)
{
	ramfs_lock();
	inode_unref(i);
	ramfs_unlock();
}

int ramfs_ensure(void)
{
	unsigned s = __atomic_load_n(&ready, __ATOMIC_ACQUIRE);
	while (s != 2) {
		unsigned zero = 0;
		if (s == 0 && __atomic_compare_exchange_n(&ready, &zero, 1, false, __ATOMIC_ACQUIRE,
							  __ATOMIC_ACQUIRE)) {
			int rc = mon_init(&ramfs_mon, &fs_ramfs_class, fs_monitor_flags());
			if (rc != KSYNC_OK) {
				__atomic_store_n(&ready, 0, __ATOMIC_RELEASE);
				return -LX_ENOMEM;
			}
			mon_lock(&ramfs_mon);
			root = ramfs_new(LX_S_IFDIR | 0755);
			if (root) {
				root->nlink = 2;
				root->u.dir.parent = root;
			}
			mon_unlock(&ramfs_mon);
			if (!root)
				panic("ramfs: no memory for /");
			/* release: the monitor and "/" are initialised before anyone sees 2 */
			__atomic_store_n(&ready, 2, __ATOMIC_RELEASE);
			return 0;
		}
		thread_yield();
		s = __atomic_load_n(&ready, __ATOMIC_ACQUIRE);
	}
	return 0;
}

void ramfs_lock(void)
{
	if (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) != 2)
		(void)ramfs_ensure();
	mon_lock(&ramfs_mon);
}

void ramfs_unlock(void) { mon_unlock(&ramfs_mon); }

struct inode *ramfs_root(void) { return root; }

struct dentry_rec *ramfs_find(struct inode *dir, const char *name, size_t len)
{
	for (struct dentry_rec *d = dir->u.dir.head; d; d = d->next)
		if (d->len == len && memcmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

const struct dentry_rec *ramfs_name_of(const struct inode *dir, const struct inode *child)
{
	for (const struct dentry_rec *d = dir->u.dir.head; d; d = d->next)
		if (d->child == child)
			return d;
	return NULL;
}

int ramfs_add(struct inode *dir, const char *name, size_t len, struct inode *child)
{
	struct dentry_rec *d = kmalloc(sizeof *d + len + 1);
	if (!d)
		return -LX_ENOMEM;
	d->next = NULL;
	d->child = child;
	d->cookie = dir->u.dir.next_cookie++;
	d->len = (uint16_t)len;
	memcpy(d->name, name, len);
	d->name[len] = 0;
	if (dir->u.dir.tail)
		dir->u.dir.tail->next = d;
	else
		dir->u.dir.head = d;
	dir->u.dir.tail = d;
	dir->u.dir.nent++;
	dir->mtime = dir->ctime = fs_now();
	return 0;
}

int ramfs_add_new(struct inode *dir, const char *name, size_t len, struct inode *i)
{
	if (ramfs_add(dir, name, len, i)) {
		ramfs_maybe_free(i);
		return -LX_ENOMEM;
	}
	if (IS_DIR(i)) {
		i->nlink = 2;
		i->u.dir.parent = dir;
		dir->nlink++;
	} else {
		i->nlink = 1;
	}
	return 0;
}

void ramfs_del(struct inode *dir, struct dentry_rec *d)
{
	struct dentry_rec **pp = &dir->u.dir.head, *prev = NULL;
	while (*pp && *pp != d) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	KASSERT(*pp == d);
	*pp = d->next;
	if (dir->u.dir.tail == d)
		dir->u.dir.tail = prev;
	dir->u.dir.nent--;
	dir->mtime = dir->ctime = fs_now();
	kfree(d);
}

/* ---- file data --------------------------------------------------------------------------- */

static int grow_slots(struct inode *i, size_t need)
{
	if (need <= i->u.reg.cap)
		return 0;
	size_t cap = i->u.reg.cap ? i->u.reg.cap : 4;
	while (cap < need)
		cap *= 2;
	uint8_t **p = kzalloc(cap * sizeof *p);
	if (!p)
		return -LX_ENOSPC;
	if (i->u.reg.pages)
		memcpy(p, i->u.reg.pages, i->u.reg.cap * sizeof *p);
	kfree(i->u.reg.pages);
	i->u.reg.pages = p;
	i->u.reg.cap = cap;
	return 0;
}

long ramfs_read_data(struct inode *i, void *buf, size_t n, uint64_t off)
{
	if (off >= (uint64_t)i->size)
		return 0;
	if (n > (uint64_t)i->size - off)
		n = (size_t)((uint64_t)i->size - off);
	size_t done = 0;
	while (done < n) {
		uint64_t o = off + done;
		size_t pg = (size_t)(o / PAGE_SIZE), in = (size_t)(o % PAGE_SIZE);
		size_t k = PAGE_SIZE - in;
		if (k > n - done)
			k = n - done;
		uint8_t *page = pg < i->u.reg.cap ? i->u.reg.pages[pg] : NULL;
		if (page)
			memcpy((uint8_t *)buf + done, page + in, k);
		else
			memset((uint8_t *)buf + done, 0, k);
		done += k;
	}
	i->atime = fs_now();
	return (long)done;
}

#define RAMFS_MAX_SIZE (1ull << 40)

long ramfs_write_data(struct inode *i, const void *buf, size_t n, uint64_t off)
{
	if (n == 0)
		return 0;
	if (off >= RAMFS_MAX_SIZE || n > RAMFS_MAX_SIZE - off)
		return -LX_EFBIG;
	uint64_t end = off + n;
	if (grow_slots(i, (size_t)((end + PAGE_SIZE - 1) / PAGE_SIZE)))
		return -LX_ENOSPC;
	size_t done = 0;
	while (done < n) {
		uint64_t o = off + done;
		size_t pg = (size_t)(o / PAGE_SIZE), in = (size_t)(o % PAGE_SIZE);
		size_t k = PAGE_SIZE - in;
		if (k > n - done)
			k = n - done;
		if (!i->u.reg.pages[pg]) {
			uint64_t pa = pmm_alloc();
			if (!pa)
				break;
			memset((void *)(uintptr_t)pa, 0, PAGE_SIZE);
			fs_page_hold((void *)(uintptr_t)pa);	/* the file's reference */
			i->u.reg.pages[pg] = (uint8_t *)(uintptr_t)pa;
			__atomic_fetch_add(&data_pages, 1, __ATOMIC_RELAXED);
		}
		memcpy(i->u.reg.pages[pg] + in, (const uint8_t *)buf + done, k);
		done += k;
	}
	if (done == 0)
		return -LX_ENOSPC;
	if ((int64_t)(off + done) > i->size)
		i->size = (int64_t)(off + done);
	i->mtime = i->ctime = fs_now();
	return (long)done;
}

int ramfs_pages_hold(struct inode *i, size_t first, size_t n, void **out)
{
	if (grow_slots(i, first + n))
		return -LX_ENOSPC;
	for (size_t k = 0; k < n; k++) {
		uint8_t **slot = &i->u.reg.pages[first + k];
		if (!*slot) {
			uint64_t pa = pmm_alloc();
			if (!pa) {
				while (k--)
					fs_page_release(out[k]);
				return -LX_ENOSPC;
			}
			memset((void *)(uintptr_t)pa, 0, PAGE_SIZE);
			fs_page_hold((void *)(uintptr_t)pa);	/* the file's reference */
			*slot = (uint8_t *)(uintptr_t)pa;
			__atomic_fetch_add(&data_pages, 1, __ATOMIC_RELAXED);
		}
		fs_page_hold(*slot);			/* the caller's */
		out[k] = *slot;
	}
	return 0;
}

int ramfs_truncate(struct inode *i, uint64_t len)
{
	if (len > RAMFS_MAX_SIZE)
		return -LX_EFBIG;
	if (len < (uint64_t)i->size) {
		size_t keep = (size_t)((len + PAGE_SIZE - 1) / PAGE_SIZE);
		free_pages_from(i, keep);
		size_t in = (size_t)(len % PAGE_SIZE);
		if (in && keep - 1 < i->u.reg.cap && i->u.reg.pages[keep - 1])
			memset(i->u.reg.pages[keep - 1] + in, 0, PAGE_SIZE - in);
	} else if (len > (uint64_t)i->size) {
		if (grow_slots(i, (size_t)((len + PAGE_SIZE - 1) / PAGE_SIZE)))
			return -LX_ENOSPC;
	}
	i->size = (int64_t)len;
	i->mtime = i->ctime = fs_now();
	return 0;
}

void ramfs_stat(const struct inode *i, struct lx_stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_dev = IS_FIFO(i) ? 0xc : 0x1a;	/* ramfs and the pipe pseudo-fs */
	st->st_ino = i->ino;
	st->st_nlink = IS_FIFO(i) ? 1 : i->nlink;	/* a pipe: Linux's pipefs says 1 */
	st->st_mode = i->mode;
	st->st_uid = i->uid;
	st->st_gid = i->gid;
	st->st_rdev = i->rdev;
	st->st_size = IS_DIR(i) ? 4096 : IS_FIFO(i) ? 0 : i->size;
	st->st_blksize = 4096;
	if (IS_REG(i)) {
		int64_t pages = 0;
		for (size_t p = 0; p < i->u.reg.cap; p++)
			pages += i->u.reg.pages[p] != NULL;
		st->st_blocks = pages * 8;
	} else if (IS_DIR(i)) {
		st->st_blocks = 8;
	}
	st->st_atim = i->atime;
	st->st_mtim = i->mtime;
	st->st_ctim = i->ctime;
}
