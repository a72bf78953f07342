/*
 * dev.c - the character devices /dev/null (1,3), /dev/zero (1,5), /dev/urandom (1,9),
 * /dev/cpu_dma_latency (10,259) and the console tty (5,1; tty.c), and fs_init, which makes
 * "/" with /dev (and /dev/shm), /tmp and /proc.
 *
 * /dev/urandom is NOT cryptographic: xoshiro256** seeded from the TSC at first use and
 * mixed with the TSC at every read (for getrandom and AT_RANDOM it gives varied bytes,
 * not secret ones). Its state is per CPU slot and protected by urandom_lock (a master
 * lock, class "urandom"); the other devices have no state.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

LOCK_CLASS(fs_urandom_class, "urandom", LOCK_MASTER, LOCK_DATA);

static long null_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	(void)f, (void)buf, (void)n, (void)pos;
	return 0;
}

KERNEL_HOT static long sink_write(struct file *f, const void *buf, size_t n, uint64_t *pos)
{
	(void)f, (void)buf, (void)pos;
	return (long)n;
}

KERNEL_HOT static long zero_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	(void)f, (void)pos;
	memset(buf, 0, n);
	return (long)n;
}

static unsigned always_ready(struct file *f)
{
	(void)f;
	return LX_POLLIN | LX_POLLOUT;
}

static void dev_release(struct file *f) { inode_put(f->inode); }

static const struct file_ops null_ops = {
	.read = null_read, .write = sink_write, .poll = always_ready, .release = dev_release,
};
static const struct file_ops zero_ops = {
	.read = zero_read, .write = sink_write, .poll = always_ready, .release = dev_release,
};

/* xoshiro256** (Blackman & Vigna), not cryptographic */
static struct mlock urandom_lock = MLOCK_INIT(fs_urandom_class, MLOCK_TICKET);
LOCKSTAT_STATIC(urandom_lock);	/* on its class's list of instances (lockstat.h) */
static uint64_t rng[4];		/* urandom_lock */
static bool rng_seeded;		/* urandom_lock */

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_next(void)
{
	uint64_t r = rotl(rng[1] * 5, 7) * 9, t = rng[1] << 17;
	rng[2] ^= rng[0];
	rng[3] ^= rng[1];
	rng[1] ^= rng[2];
	rng[0] ^= rng[3];
	rng[2] ^= t;
	rng[3] = rotl(rng[3], 45);
	return r;
}

static long urandom_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	(void)f, (void)pos;
	uint8_t *b = buf;
	for (size_t done = 0; done < n;) {
		uint64_t words[32];
		size_t k = n - done < sizeof words ? n - done : sizeof words;
		mlock_lock(&urandom_lock);
		uint64_t s = arch_cycles();
		if (!rng_seeded) {
			for (int i = 0; i < 4; i++)
				rng[i] = splitmix(&s);
			rng_seeded = true;
		}
		rng[0] ^= s;	/* the TSC's low bits vary between reads */
		for (size_t w = 0; w < (k + 7) / 8; w++)
			words[w] = rng_next();
		mlock_unlock(&urandom_lock);
		memcpy(b + done, words, k);
		done += k;
	}
	return (long)n;
}

static const struct file_ops urandom_ops = {
	.read = urandom_read, .write = sink_write, .poll = always_ready, .release = dev_release,
};

/* /dev/cpu_dma_latency (10,259): cyclictest writes the latency it tolerates (a 32-bit
 * value, 0: none) and keeps the file open. ksync puts no CPU into a deep idle state it
 * would have to forbid: a write is accepted and ignored, a read gives Linux's default
 * (PM_QOS_CPU_LATENCY_DEFAULT_VALUE, 2000 s in microseconds) as 4 bytes. */
static long qos_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	(void)f;
	int32_t v = 2000000000;
	if (*pos >= sizeof v)
		return 0;
	size_t k = sizeof v - *pos < n ? sizeof v - (size_t)*pos : n;
	memcpy(buf, (const uint8_t *)&v + *pos, k);
	*pos += k;
	return (long)k;
}

static const struct file_ops qos_ops = {
	.read = qos_read, .write = sink_write, .poll = always_ready, .release = dev_release,
};

const struct file_ops *dev_ops(uint64_t rdev)
{
	if (rdev == FS_MKDEV(1, 3))
		return &null_ops;
	if (rdev == FS_MKDEV(1, 5))
		return &zero_ops;
	if (rdev == FS_MKDEV(1, 9) || rdev == FS_MKDEV(1, 8))
		return &urandom_ops;
	if (rdev == FS_MKDEV(5, 1) || rdev == FS_MKDEV(5, 0))
		return &tty_ops;
	if (rdev == FS_MKDEV(10, 259))
		return &qos_ops;
	return NULL;
}

/* ---- fs_init ------------------------------------------------------------------------------ */

/* Make the node name in dir if it is not there (ramfs_mon held). */
static struct inode *make_node(struct inode *dir, const char *name, uint32_t mode, uint64_t rdev)
{
	size_t len = strlen(name);
	struct dentry_rec *d = ramfs_find(dir, name, len);
	if (d)
		return d->child;
	struct inode *i = ramfs_new(mode);
	if (!i)
		return NULL;
	i->rdev = rdev;
	return ramfs_add_new(dir, name, len, i) ? NULL : i;
}

int fs_init(void)
{
	int rc = ramfs_ensure();
	if (rc)
		return rc;
	ramfs_lock();
	struct inode *root = ramfs_root();
	struct inode *dev = make_node(root, "dev", LX_S_IFDIR | 0755, 0);
	struct inode *tmp = make_node(root, "tmp", LX_S_IFDIR | 01777, 0);
	bool ok = dev && tmp &&
		make_node(dev, "null", LX_S_IFCHR | 0666, FS_MKDEV(1, 3)) &&
		make_node(dev, "zero", LX_S_IFCHR | 0666, FS_MKDEV(1, 5)) &&
		make_node(dev, "urandom", LX_S_IFCHR | 0666, FS_MKDEV(1, 9)) &&
		make_node(dev, "random", LX_S_IFCHR | 0666, FS_MKDEV(1, 8)) &&
		make_node(dev, "console", LX_S_IFCHR | 0600, FS_MKDEV(5, 1)) &&
		make_node(dev, "tty", LX_S_IFCHR | 0666, FS_MKDEV(5, 0)) &&
		make_node(dev, "cpu_dma_latency", LX_S_IFCHR | 0600, FS_MKDEV(10, 259)) &&
		make_node(dev, "shm", LX_S_IFDIR | 01777, 0) &&
		procfs_make(root) == 0;
	ramfs_unlock();
	return ok ? 0 : -LX_ENOMEM;
}
