/*
 * pipe.c - pipes (pipe2): a 64 KiB ring per pipe, a blocking reader and writer on the
 * kernel's condition variables, writes of at most PIPE_BUF (4096) bytes atomic.
 *
 * Hartman & Ousterhout (Sprite) section 2: monitor locks and Mesa condition variables
 * ("wait releases the monitor and sleeps ... a woken waiter ... must test its condition
 * again"); section 5: Sprite's cswitch benchmark is two processes passing a byte through a
 * pair of pipes, and its bottleneck was the one monitor every pipe access took (the file
 * handle table's); here each pipe has its own monitor (class "pipe") and two condition
 * variables (classes "pipe_readable", "pipe_writable"), and a pipe access takes no other
 * lock (the descriptor table's monitor only to find the file: vfs.c).
 *
 * Linux semantics (pipe(7)): a read returns what is there (at least one byte), 0 when no
 * writer is left and the ring is empty, -EAGAIN if O_NONBLOCK and empty; a write of n <=
 * PIPE_BUF bytes waits until n bytes are free and copies them in one piece (never
 * interleaved with another writer's), a larger write copies what fits and waits for more
 * (it may interleave); -EPIPE (after the fs_sigpipe hook) when no reader is left; a
 * non-blocking write of n <= PIPE_BUF that does not fit: -EAGAIN; a larger one writes what
 * fits or -EAGAIN if nothing does. Waits return -EINTR (or the count so far) if a signal
 * is pending (fs_cv_wait).
 *
 * Shared state: everything in struct pipe under its monitor `mon`, except refs (atomic:
 * the two files and fs_interrupt's temporary holds) and the constants.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

LOCK_CLASS(fs_pipe_class, "pipe", LOCK_MONITOR, LOCK_DATA);
LOCK_CLASS(fs_pipe_readable_class, "pipe_readable", LOCK_CONDVAR, LOCK_DATA);
LOCK_CLASS(fs_pipe_writable_class, "pipe_writable", LOCK_CONDVAR, LOCK_DATA);

#define PIPE_SIZE 65536u	/* Linux's default capacity */

struct pipe {
	struct monitor mon;
	struct condvar readable, writable;	/* mon */
	uint8_t *buf;				/* constant; the bytes: mon */
	unsigned head, len;			/* mon: first byte, bytes held */
	unsigned readers, writers;		/* mon: open ends */
	unsigned refs;				/* atomic */
	struct inode *inode;			/* constant (its refs: ramfs_mon) */
};

static void pipe_get(void *obj)
{
	struct pipe *p = obj;
	/* relaxed: the caller holds a path to a live reference (fs_interrupt: under
	 * fs_wait_lock, while the registered waiter holds its file); pipe_put orders */
	__atomic_fetch_add(&p->refs, 1, __ATOMIC_RELAXED);
}

static void pipe_put(void *obj)
{
	struct pipe *p = obj;
	/* acq_rel: every holder's use happens-before the free */
	if (__atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	cv_destroy(&p->readable);
	cv_destroy(&p->writable);
	mon_destroy(&p->mon);
	kfree(p->buf);
	kfree(p);
}

/* The object's state changed (mon held): wake pollers outside, if any wait. */
static bool poll_wanted(void) { return fs_wait_wanted(); }

static int pipe_wait(struct pipe *p, struct condvar *cv)
{
	struct fs_cvwait w = { .mon = &p->mon, .cv = { cv, NULL }, .obj = p,
			       .get = pipe_get, .put = pipe_put };
	return fs_cv_wait(&w);
}

static long pipe_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	(void)pos;
	struct pipe *p = f->priv;
	if (n == 0)
		return 0;
	mon_lock(&p->mon);
	while (p->len == 0) {
		if (p->writers == 0) {
			mon_unlock(&p->mon);
			return 0;
		}
		/* relaxed: O_NONBLOCK is read once per test, ordering nothing */
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & LX_O_NONBLOCK) {
			mon_unlock(&p->mon);
			return -LX_EAGAIN;
		}
		int rc = pipe_wait(p, &p->readable);
		if (rc < 0 && p->len == 0) {
			mon_unlock(&p->mon);
			return rc;
		}
	}
	size_t k = n < p->len ? n : p->len;
	for (size_t done = 0; done < k;) {
		size_t run = PIPE_SIZE - p->head;
		if (run > k - done)
			run = k - done;
		memcpy((uint8_t *)buf + done, p->buf + p->head, run);
		p->head = (p->head + (unsigned)run) % PIPE_SIZE;
		done += run;
	}
	p->len -= (unsigned)k;
	cv_broadcast(&p->writable);
	bool notify = poll_wanted();
	mon_unlock(&p->mon);
	if (notify)
		fs_wait_notify();
	return (long)k;
}

static void put_bytes(struct pipe *p, const uint8_t *src, size_t k)
{
	for (size_t done = 0; done < k;) {
		unsigned tail = (p->head + p->len) % PIPE_SIZE;
		size_t run = PIPE_SIZE - tail;
		if (run > k - done)
			run = k - done;
		memcpy(p->buf + tail, src + done, run);
		p->len += (unsigned)run;
		done += run;
	}
}

static long pipe_write(struct file *f, const void *buf, size_t n, uint64_t *pos)
{
	(void)pos;
	struct pipe *p = f->priv;
	const uint8_t *src = buf;
	size_t done = 0;
	bool atomic = n <= LX_PIPE_BUF;
	long rc = 0;
	if (n == 0)
		return 0;
	mon_lock(&p->mon);
	while (done < n) {
		if (p->readers == 0) {
			rc = -LX_EPIPE;
			break;
		}
		unsigned room = PIPE_SIZE - p->len;
		if (room == 0 || (atomic && room < n)) {
			if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & LX_O_NONBLOCK) {
				rc = -LX_EAGAIN;
				break;
			}
			if (done) {	/* let readers see the part already written */
				cv_broadcast(&p->readable);
			}
			int w = pipe_wait(p, &p->writable);
			if (w < 0) {
				rc = w;
				break;
			}
			continue;
		}
		size_t k = n - done < room ? n - done : room;
		put_bytes(p, src + done, k);
		done += k;
	}
	if (done)
		cv_broadcast(&p->readable);
	bool notify = done && poll_wanted();
	mon_unlock(&p->mon);
	if (notify)
		fs_wait_notify();
	if (rc == -LX_EPIPE && !done)
		fs_sigpipe();
	return done ? (long)done : rc;
}

static unsigned pipe_poll(struct file *f)
{
	struct pipe *p = f->priv;
	unsigned r = 0;
	mon_lock(&p->mon);
	if (acc_of(f) == LX_O_RDONLY) {
		if (p->len)
			r |= LX_POLLIN;
		if (p->writers == 0)
			r |= LX_POLLHUP;
	} else {
		if (PIPE_SIZE - p->len >= LX_PIPE_BUF)
			r |= LX_POLLOUT;
		if (p->readers == 0)
			r |= LX_POLLERR;
	}
	mon_unlock(&p->mon);
	return r;
}

static long pipe_ioctl(struct file *f, unsigned cmd, void *arg)
{
	struct pipe *p = f->priv;
	if (cmd != LX_FIONREAD)
		return -LX_ENOTTY;
	mon_lock(&p->mon);
	*(int32_t *)arg = (int32_t)p->len;
	mon_unlock(&p->mon);
	return 0;
}

static void pipe_release(struct file *f)
{
	struct pipe *p = f->priv;
	mon_lock(&p->mon);
	if (acc_of(f) == LX_O_RDONLY) {
		p->readers--;
		cv_broadcast(&p->writable);	/* writers: EPIPE */
	} else {
		p->writers--;
		cv_broadcast(&p->readable);	/* readers: EOF */
	}
	bool notify = poll_wanted();
	mon_unlock(&p->mon);
	if (notify)
		fs_wait_notify();
	inode_put(f->inode);	/* each end's file holds one reference */
	pipe_put(p);
}

static const struct file_ops pipe_ops = {
	.read = pipe_read,
	.write = pipe_write,
	.ioctl = pipe_ioctl,
	.poll = pipe_poll,
	.release = pipe_release,
};

int pipe_create(struct file **rd, struct file **wr, int flags)
{
	struct pipe *p = kzalloc(sizeof *p);
	if (!p)
		return -LX_ENOMEM;
	p->buf = kmalloc(PIPE_SIZE);
	if (!p->buf || mon_init(&p->mon, &fs_pipe_class, fs_monitor_flags()) != KSYNC_OK) {
		kfree(p->buf);
		kfree(p);
		return -LX_ENOMEM;
	}
	cv_init(&p->readable, &fs_pipe_readable_class, &p->mon);
	cv_init(&p->writable, &fs_pipe_writable_class, &p->mon);
	p->readers = p->writers = 1;
	p->refs = 2;
	ramfs_lock();
	struct inode *i = ramfs_new(LX_S_IFIFO | 0600);
	if (i) {
		i->u.pipe = p;
		i->refs = 2;	/* the two files */
	}
	ramfs_unlock();
	if (!i) {
		p->refs = 1;
		pipe_put(p);
		return -LX_ENOMEM;
	}
	p->inode = i;
	unsigned nb = (unsigned)flags & LX_O_NONBLOCK;
	*rd = file_new(i, &pipe_ops, LX_O_RDONLY | nb, p);
	*wr = file_new(i, &pipe_ops, LX_O_WRONLY | nb, p);
	if (!*rd || !*wr) {
		/* file_new failed: undo by hand (no release ran) */
		kfree(*rd);
		kfree(*wr);
		ramfs_lock();
		i->refs = 0;
		ramfs_maybe_free(i);
		ramfs_unlock();
		p->refs = 1;
		pipe_put(p);
		return -LX_ENOMEM;
	}
	return 0;
}
