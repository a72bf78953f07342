/*
 * heap.c - kmalloc/kfree. Eight size classes (16..2048 bytes, powers of two) carved from
 * pages into per-class free lists; larger blocks are whole contiguous pages. Each block
 * carries a 16-byte header {magic, class or page count} so kfree needs no size and can
 * catch a bad or double free. The free lists are protected by heap_lock.
 *
 * Blocks of two and three pages (a 4096-byte buffer with its header: every path and every
 * file call's bounce buffer, kernel/syscall/sysfile.c; two paths: the lookup's buffer,
 * kernel/fs/vfs.c) are kept on free lists of their own when freed, up to BIG_KEEP of each
 * size, instead of going back to the page pool each time: the pool's next-fit search
 * handed each call the pages after the last ones, walking through all of memory, and
 * under QEMU each fresh guest page is a host page fault when first touched (a THP's 2 MiB
 * zeroed): a 1-byte read, an open or a stat cost 17-50 us instead of 2-7 in a new guest
 * (tcg). Kept blocks count as pages the heap holds (heap_stats' slab_pages), as slab
 * pages do.
 */
#include "kernel.h"
#include "mm.h"
#include "mlock.h"

#define NCLASS 8
#define HDR 16
#define MAGIC_USED 0x6b73796e63a110c5ull
#define MAGIC_FREE 0x6b73796e63f4eeeeull

struct hdr { uint64_t magic, info; };	/* info: class index, or 0x100 | npages */
struct freeblk { struct hdr h; struct freeblk *next; };

static struct freeblk *freelist[NCLASS];	/* heap_lock */
#define BIG_KEEP 4
#define BIG_KEPT_MAX 3				/* pages of the largest block kept */
static struct freeblk *big_free[BIG_KEPT_MAX + 1];	/* heap_lock: freed blocks by pages */
static size_t big_kept[BIG_KEPT_MAX + 1];		/* heap_lock: how many of each */
/* statistics (heap_stats; urun.c's page accounting): pages carved into size classes
 * (kept by the heap for ever) and size-class blocks handed out - heap_lock; pages of the
 * large blocks handed out - atomic (relaxed: a count, orders nothing) */
static size_t slab_pages, blocks_live;
static uint64_t big_pages;
LOCK_CLASS(heap_class, "heap", LOCK_MASTER, LOCK_DATA);
static struct mlock heap_lock __attribute__((aligned(64))) =
	MLOCK_INIT(heap_class, MLOCK_TICKET);
LOCKSTAT_STATIC(heap_lock);	/* on its class's list of instances (lockstat.h) */

void heap_init(void) {}

static int class_of(size_t n)
{
	for (int c = 0; c < NCLASS; c++)
		if (n <= (16u << c))
			return c;
	return -1;
}

static size_t class_size(int c) { return (16u << c) + HDR; }

void *kmalloc(size_t n)
{
	if (!n)
		n = 1;
	int c = class_of(n);
	if (c < 0) {
		size_t pages = (n + HDR + PAGE_SIZE - 1) / PAGE_SIZE;
		uint64_t pa = 0;
		if (pages >= 2 && pages <= BIG_KEPT_MAX) {
			mlock_lock(&heap_lock);
			struct freeblk *b = big_free[pages];
			if (b) {
				pa = (uint64_t)b;
				big_free[pages] = b->next;
				big_kept[pages]--;
				slab_pages -= pages;
			}
			mlock_unlock(&heap_lock);
		}
		if (!pa)
			pa = pmm_alloc_contig(pages);
		if (!pa)
			return NULL;
		struct hdr *h = (struct hdr *)pa;
		h->magic = MAGIC_USED;
		h->info = 0x100 | pages << 9;
		__atomic_fetch_add(&big_pages, pages, __ATOMIC_RELAXED);
		return (uint8_t *)h + HDR;
	}
	mlock_lock(&heap_lock);
	if (!freelist[c]) {
		uint64_t pa = pmm_alloc();
		if (!pa) {
			mlock_unlock(&heap_lock);
			return NULL;
		}
		size_t sz = class_size(c);
		slab_pages++;
		for (size_t off = 0; off + sz <= PAGE_SIZE; off += sz) {
			struct freeblk *b = (struct freeblk *)(pa + off);
			b->h.magic = MAGIC_FREE;
			b->h.info = (uint64_t)c;
			b->next = freelist[c];
			freelist[c] = b;
		}
	}
	struct freeblk *b = freelist[c];
	freelist[c] = b->next;
	blocks_live++;
	mlock_unlock(&heap_lock);
	KASSERT(b->h.magic == MAGIC_FREE);
	b->h.magic = MAGIC_USED;
	return (uint8_t *)b + HDR;
}

void *kzalloc(size_t n)
{
	void *p = kmalloc(n);
	if (p)
		memset(p, 0, n);
	return p;
}

size_t kmalloc_usable(const void *p)
{
	const struct hdr *h = (const struct hdr *)((const uint8_t *)p - HDR);
	if (h->info & 0x100)
		return (h->info >> 9) * PAGE_SIZE - HDR;
	return 16u << h->info;
}

void kfree(void *p)
{
	if (!p)
		return;
	struct hdr *h = (struct hdr *)((uint8_t *)p - HDR);
	if (h->magic != MAGIC_USED)
		panic("kfree(%p): %s", p, h->magic == MAGIC_FREE ? "double free" : "not a kmalloc block");
	if (h->info & 0x100) {
		size_t pages = h->info >> 9;
		__atomic_fetch_sub(&big_pages, pages, __ATOMIC_RELAXED);
		if (pages >= 2 && pages <= BIG_KEPT_MAX) {
			struct freeblk *b = (struct freeblk *)h;
			b->h.magic = MAGIC_FREE;
			mlock_lock(&heap_lock);
			bool keep = big_kept[pages] < BIG_KEEP;
			if (keep) {
				b->next = big_free[pages];
				big_free[pages] = b;
				big_kept[pages]++;
				slab_pages += pages;
			}
			mlock_unlock(&heap_lock);
			if (keep)
				return;
		}
		h->magic = 0;
		pmm_free_contig((uint64_t)h, pages);
		return;
	}
	struct freeblk *b = (struct freeblk *)h;
	b->h.magic = MAGIC_FREE;
	mlock_lock(&heap_lock);
	b->next = freelist[b->h.info];
	freelist[b->h.info] = b;
	blocks_live--;
	mlock_unlock(&heap_lock);
}

void heap_stats(struct heap_stats *st)
{
	mlock_lock(&heap_lock);
	st->slab_pages = slab_pages;
	st->blocks_live = blocks_live;
	mlock_unlock(&heap_lock);
	st->big_pages = __atomic_load_n(&big_pages, __ATOMIC_RELAXED);
}
