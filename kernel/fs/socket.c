/*
 * socket.c - socketpair(AF_UNIX, SOCK_STREAM): a pair of connected byte streams, what
 * hackbench's default mode passes its messages through (docs/userspace.md "Sockets").
 *
 * Each direction is a pipe (pipe.c: a 64 KiB ring under the pipe's monitor and its two
 * condition variables): end A reads pipe 1 and writes pipe 2, end B reads pipe 2 and
 * writes pipe 1. A socket file holds the read end of one pipe and the write end of the
 * other (struct sock_end, constant after creation) and passes read, write, FIONREAD and
 * poll to them; closing the last descriptor of an end closes both of its pipe ends, so
 * the peer reads end of file and its writes fail with EPIPE (and SIGPIPE), as Linux's
 * unix sockets do. poll: POLLIN when bytes wait (or the peer is gone: POLLIN|POLLRDHUP|
 * POLLHUP, Linux's unix_poll), POLLOUT while there is room (also after the peer left:
 * the write then fails).
 *
 * Not built: socket(), bind/connect/listen/accept, SOCK_DGRAM and SOCK_SEQPACKET
 * (-ESOCKTNOSUPPORT here; Linux has them), sendmsg/recvmsg and descriptor passing,
 * shutdown(2), other families (-EAFNOSUPPORT). The socket file's O_NONBLOCK is copied
 * to the pipe end before each call.
 *
 * Locks: none of its own (the two pipes' monitors, one at a time; fd table and ramfs as
 * for pipes: vfs.c's order fdtable -> ramfs -> pipe).
 */
#include "fs_internal.h"
#include <ksync/errors.h>

#define LX_SOCK_TYPE_MASK 0xf
#define LX_SOCK_MAX 11
#define LX_ESOCKTNOSUPPORT 94
#define LX_POLLRDNORM 0x040
#define LX_POLLWRNORM 0x100
#define LX_POLLRDHUP 0x2000

struct sock_end {
	struct file *rx, *tx;		/* constant: a pipe's read end, the other's write end */
};

/* the socket file's O_NONBLOCK onto the pipe end it is about to use (relaxed: a flag
 * read once per call, as the pipe reads it) */
static struct file *with_flags(struct file *s, struct file *end)
{
	uint32_t nb = __atomic_load_n(&s->flags, __ATOMIC_RELAXED) & LX_O_NONBLOCK;
	uint32_t old = __atomic_load_n(&end->flags, __ATOMIC_RELAXED);
	if ((old & LX_O_NONBLOCK) != nb)
		__atomic_store_n(&end->flags, (old & ~(uint32_t)LX_O_NONBLOCK) | nb, __ATOMIC_RELAXED);
	return end;
}

static long sock_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	struct sock_end *e = f->priv;
	struct file *rx = with_flags(f, e->rx);
	return rx->ops->read(rx, buf, n, pos);
}

static long sock_write(struct file *f, const void *buf, size_t n, uint64_t *pos)
{
	struct sock_end *e = f->priv;
	struct file *tx = with_flags(f, e->tx);
	return tx->ops->write(tx, buf, n, pos);
}

static long sock_ioctl(struct file *f, unsigned cmd, void *arg)
{
	struct sock_end *e = f->priv;
	return e->rx->ops->ioctl(e->rx, cmd, arg);
}

static unsigned sock_poll(struct file *f)
{
	struct sock_end *e = f->priv;
	unsigned r = e->rx->ops->poll(e->rx), w = e->tx->ops->poll(e->tx), out = 0;
	if (r & LX_POLLIN)
		out |= LX_POLLIN | LX_POLLRDNORM;
	if (r & LX_POLLHUP)	/* the peer closed: end of file, and a hang-up */
		out |= LX_POLLIN | LX_POLLRDNORM | LX_POLLRDHUP | LX_POLLHUP;
	if ((w & LX_POLLOUT) || (w & LX_POLLERR))
		out |= LX_POLLOUT | LX_POLLWRNORM;
	return out;
}

static void sock_release(struct file *f)
{
	struct sock_end *e = f->priv;
	file_put(e->rx);
	file_put(e->tx);
	kfree(e);
	inode_put(f->inode);
}

static const struct file_ops sock_ops = {
	.read = sock_read,
	.write = sock_write,
	.ioctl = sock_ioctl,
	.poll = sock_poll,
	.release = sock_release,
};

int vfs_socketpair(struct fdtable *t, int domain, int type, int protocol, int fds[2])
{
	/* Linux's order (__sys_socketpair, __sock_create, unix_create) */
	int flags = type & ~LX_SOCK_TYPE_MASK;
	if (flags & ~(LX_SOCK_CLOEXEC | LX_SOCK_NONBLOCK))
		return -LX_EINVAL;
	type &= LX_SOCK_TYPE_MASK;
	if (domain < 0 || domain >= 46 /* NPROTO */)
		return -LX_EAFNOSUPPORT;
	if (type < 0 || type >= LX_SOCK_MAX)
		return -LX_EINVAL;
	if (domain == 2 || domain == 10)
		return -LX_EOPNOTSUPP;		/* AF_INET, AF_INET6: no socketpair on Linux */
	if (domain != LX_AF_UNIX)
		return -LX_EAFNOSUPPORT;	/* no other family is built */
	if (protocol && protocol != LX_AF_UNIX)
		return -LX_EPROTONOSUPPORT;
	if (type != LX_SOCK_STREAM)
		return -LX_ESOCKTNOSUPPORT;	/* Linux has DGRAM and SEQPACKET: not built */
	struct file *r1, *w1, *r2, *w2;
	int rc = pipe_create(&r1, &w1, 0);
	if (rc)
		return rc;
	rc = pipe_create(&r2, &w2, 0);
	if (rc) {
		file_put(r1);
		file_put(w1);
		return rc;
	}
	struct sock_end *a = kmalloc(sizeof *a), *b = kmalloc(sizeof *b);
	ramfs_lock();
	struct inode *i = a && b ? ramfs_new(LX_S_IFSOCK | 0777) : NULL;
	if (i)
		i->refs = 2;	/* the two files */
	ramfs_unlock();
	struct file *fa = NULL, *fb = NULL;
	if (i) {
		a->rx = r1;
		a->tx = w2;
		b->rx = r2;
		b->tx = w1;
		uint32_t nb = (uint32_t)flags & LX_SOCK_NONBLOCK;
		fa = file_new(i, &sock_ops, LX_O_RDWR | nb, a);
		fb = file_new(i, &sock_ops, LX_O_RDWR | nb, b);
	}
	if (!fa || !fb) {
		kfree(fa);
		kfree(fb);
		kfree(a);
		kfree(b);
		if (i) {
			ramfs_lock();
			i->refs = 0;
			ramfs_maybe_free(i);
			ramfs_unlock();
		}
		file_put(r1);
		file_put(w1);
		file_put(r2);
		file_put(w2);
		return -LX_ENOMEM;
	}
	bool cx = flags & LX_SOCK_CLOEXEC;
	int x = fdtable_install(t, fa, 0, cx);	/* a failed install drops the file */
	if (x < 0) {
		file_put(fb);
		return x;
	}
	int y = fdtable_install(t, fb, 0, cx);
	if (y < 0) {
		vfs_close(t, x);
		return y;
	}
	fds[0] = x;
	fds[1] = y;
	return 0;
}
