/*
 * ufile.c - the files a descriptor can name in this slice, behind ONE function table
 * (proc.h struct ufile_ops), so that kernel/fs's VFS replaces them without a change in
 * the system calls: the console (fd 0, 1, 2 of every spawned process) and read-only
 * files of the initramfs.
 *
 * Console: write goes to the serial line (kwrite: one unit per call), or, while the
 * runner (urun.c) captures the programs' output, into its buffer; read answers end of
 * file (the runner's programs run with no input, as the host's twins run with stdin
 * from /dev/null). The terminal ioctls answer ENOTTY for the same reason (the host's
 * stdout is a pipe), so libc buffers stdout the same way on both.
 *
 * Locks: a ufile's refs are atomic; its pos belongs to the one process that has it
 * (descriptors are shared only with fork children, which in this slice do not read a
 * shared regular file concurrently - kernel/fs's open-file objects bring the lock).
 * The capture buffer is the runner's, written under cap_lock (a master lock: a write is
 * short and never sleeps).
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "syscall/linux_abi.h"

LOCK_CLASS(console_cap_class, "console-capture", LOCK_MASTER, LOCK_DATA);
static struct mlock cap_lock = MLOCK_INIT(console_cap_class, MLOCK_TICKET);
static char *cap_buf;		/* cap_lock */
static size_t cap_cap, *cap_len;
static bool *cap_over;

void ufile_console_capture(char *buf, size_t cap, size_t *len, bool *overflow)
{
	irqkey_t k = mlock_lock_irqsave(&cap_lock);
	cap_buf = buf;
	cap_cap = cap;
	cap_len = len;
	cap_over = overflow;
	mlock_unlock_irqrestore(&cap_lock, k);
}

static long con_write(struct ufile *f, const void *kbuf, size_t n)
{
	(void)f;
	irqkey_t k = mlock_lock_irqsave(&cap_lock);
	if (cap_buf) {
		size_t room = cap_cap - *cap_len, c = n < room ? n : room;
		memcpy(cap_buf + *cap_len, kbuf, c);
		*cap_len += c;
		if (c < n)
			*cap_over = true;
		mlock_unlock_irqrestore(&cap_lock, k);
		return (long)n;
	}
	mlock_unlock_irqrestore(&cap_lock, k);
	kwrite(kbuf, n);
	return (long)n;
}

static long con_read(struct ufile *f, void *kbuf, size_t n)
{
	(void)f;
	(void)kbuf;
	(void)n;
	return 0;
}

static void con_stat(struct ufile *f, uint32_t *mode, uint64_t *size)
{
	(void)f;
	*mode = LX_S_IFCHR | 0620;
	*size = 0;
}

static const struct ufile_ops console_ops = {
	.name = "console", .read = con_read, .write = con_write, .stat = con_stat,
};

struct ufile *ufile_console(void)
{
	struct ufile *f = kzalloc(sizeof *f);
	if (!f)
		return NULL;
	f->ops = &console_ops;
	f->refs = 1;
	f->flags = LX_O_RDWR;
	return f;
}

void ufile_get(struct ufile *f)
{
	__atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);	/* the caller holds one */
}

void ufile_put(struct ufile *f)
{
	/* acq_rel: the last dropper sees every other holder's use before it frees */
	if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL))
		return;
	if (f->ops->release)
		f->ops->release(f);
	kfree(f);
}

/* ---- initramfs files ------------------------------------------------------------------ */
static long rf_read(struct ufile *f, void *kbuf, size_t n)
{
	if (f->pos >= f->size)
		return 0;
	uint64_t left = f->size - f->pos;
	if (n > left)
		n = left;
	memcpy(kbuf, f->data + f->pos, n);
	f->pos += n;
	return (long)n;
}

static long rf_write(struct ufile *f, const void *kbuf, size_t n)
{
	(void)f;
	(void)kbuf;
	(void)n;
	return -LX_EBADF;	/* opened read-only: the initramfs is read-only */
}

static long rf_lseek(struct ufile *f, int64_t off, int whence)
{
	int64_t base = whence == LX_SEEK_SET ? 0 : whence == LX_SEEK_CUR ? (int64_t)f->pos :
		       whence == LX_SEEK_END ? (int64_t)f->size : -1;
	if (base < 0 || (off < 0 && -off > base))
		return -LX_EINVAL;
	f->pos = (uint64_t)(base + off);
	return (long)f->pos;
}

static void rf_stat(struct ufile *f, uint32_t *mode, uint64_t *size)
{
	*mode = f->mode;
	*size = f->size;
}

static const struct ufile_ops initramfs_ops = {
	.name = "initramfs", .read = rf_read, .write = rf_write, .lseek = rf_lseek,
	.stat = rf_stat,
};

long ufile_open_initramfs(const char *path, int flags, struct ufile **out)
{
	const uint8_t *data;
	uint64_t size;
	uint32_t mode;
	long rc = initramfs_lookup(path, &data, &size, &mode);
	if (rc)	/* (a directory answers EISDIR: directories come with kernel/fs) */
		return (flags & LX_O_CREAT) && rc == -LX_ENOENT ? -LX_EROFS : rc;
	if ((flags & LX_O_ACCMODE) != LX_O_RDONLY || (flags & LX_O_TRUNC))
		return -LX_EROFS;
	if (flags & LX_O_DIRECTORY)
		return -LX_ENOTDIR;
	struct ufile *f = kzalloc(sizeof *f);
	if (!f)
		return -LX_ENOMEM;
	f->ops = &initramfs_ops;
	f->refs = 1;
	f->flags = (unsigned)flags;
	f->data = data;
	f->size = size;
	f->mode = mode;
	*out = f;
	return 0;
}
