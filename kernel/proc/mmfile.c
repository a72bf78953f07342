/*
 * mmfile.c - mmap of a regular file: MAP_PRIVATE (glibc's dynamic loader maps every
 * shared library this way) and MAP_SHARED (docs/userspace.md "Dynamic programs").
 *
 * A private mapping maps the file's own pages copy-on-write, as Linux maps the page
 * cache's (kernel/fs/fmap.c hands them out, holes filled, each with a reference;
 * arch_as_map_page_cow maps them read-only, marked copy-on-write): reads and execution
 * use the file's page in place, the first write to a page copies it (the file never
 * changes through the mapping), fork shares the pages copy-on-write like any other,
 * mprotect changes their rights. A page not yet written shows later writes to the file
 * (by write() or a MAP_SHARED mapping), as on Linux. The part of the last page past the
 * file's end reads as zeros (ramfs keeps a page's tail past the end zeroed); whole pages
 * past the end are left unmapped and the area remembers where they begin (vma->bus): an
 * access there is SIGBUS (BUS_ADRERR), as on Linux. A regular file whose file system
 * hands out no pages (-LX_ENODEV: /proc's) is copied instead, page by page at the call
 * (vfs_pread into a kernel buffer, then mm_write under the mm lock).
 *
 * MAP_SHARED maps the file's own pages (arch_as_map_page maps them never copy-on-write,
 * also across fork): writes through the mapping are the file's, write() is seen by the
 * mapping. A page is counted by the file and by every mapping (pagehooks.c), so a
 * truncate or unlink leaves a mapped page alive and mapped - where Linux gives SIGBUS
 * past the new end; and whole pages past the end at mmap time stay SIGBUS when the file
 * grows later (Linux maps them then); both hold for private mappings' unwritten pages
 * too. A descriptor not open for writing gives a shared area that mprotect cannot make
 * writable (EACCES, VMA_SHARED_RO).
 *
 * Cost: the loader maps each library twice over (a reservation of its whole span from
 * offset 0, then each segment MAP_FIXED over it): two walks over the page tables, no
 * copy (each page was copied, twice, until the private mapping shared the file's pages:
 * glibc's 2 MB libc.so at every exec of a dynamic program).
 *
 * Locks: mm->lock (proc.h) around the pages' mapping (mm_map_private, mm_map_shared) and
 * each page's copy (mm_write); kernel/fs's own (ramfs) inside vfs_pread and
 * vfs_mmap_pages, never both at once.
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"

#define CHUNK (64u << 10)

/* The file's own pages mapped: MAP_SHARED (writes reach the file, its writes the
 * mapping; every sharer, fork children too, sees one copy) or MAP_PRIVATE (shared
 * copy-on-write). -LX_ENODEV: the file system hands out no pages. */
static long map_pages(struct mm *mm, struct fdtable *t, int fd, uint64_t addr, uint64_t len,
		      unsigned prot, uint64_t off, uint64_t have, bool shared, bool ro)
{
	size_t n = (size_t)(ALIGN_UP(have, PAGE_SIZE) / PAGE_SIZE);
	void **pages = n ? kmalloc(n * sizeof *pages) : NULL;
	if (n && !pages)
		return -LX_ENOMEM;
	long rc = n ? vfs_mmap_pages(t, fd, off / PAGE_SIZE, n, pages) : 0;
	if (!rc) {
		uint64_t bus = addr + n * PAGE_SIZE;
		bus = bus < addr + len ? bus : 0;
		rc = shared ? mm_map_shared(mm, addr, addr + len, prot | (ro ? VMA_SHARED_RO : 0),
					    bus, pages, n)
			    : mm_map_private(mm, addr, addr + len, prot, bus, pages, n);
		for (size_t i = 0; i < n; i++)
			fs_page_release(pages[i]);	/* the mapping holds its own */
	}
	kfree(pages);
	return rc;
}

long mm_mmap_file(struct mm *mm, struct fdtable *t, int fd, uint64_t addr, uint64_t len,
		  unsigned prot, uint64_t off, bool shared, bool ro)
{
	struct lx_stat st;
	long rc = vfs_fstat(t, fd, &st);
	if (rc)
		return rc;
	if ((st.st_mode & LX_S_IFMT) != LX_S_IFREG)
		return -LX_ENODEV;
	uint64_t size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	/* the file's data in the area: [addr, addr + have) */
	uint64_t have = size > off ? size - off : 0;
	if (have > len)
		have = len;
	rc = map_pages(mm, t, fd, addr, len, prot, off, have, shared, ro);
	if (shared || rc != -LX_ENODEV)
		return rc;
	/* MAP_PRIVATE of a file system that hands out no pages: a copy */
	uint64_t bus = addr + ALIGN_UP(have, PAGE_SIZE);
	rc = mm_map_bus(mm, addr, addr + len, prot, bus < addr + len ? bus : 0);
	if (rc)
		return rc;
	if (!have)
		return 0;
	uint8_t *buf = kmalloc(CHUNK);
	if (!buf)
		return -LX_ENOMEM;
	for (uint64_t done = 0; done < have && !rc;) {
		size_t n = have - done < CHUNK ? (size_t)(have - done) : CHUNK;
		long got = vfs_pread(t, fd, buf, n, (int64_t)(off + done));
		if (got < 0) {
			rc = got;
			break;
		}
		if (got == 0)
			break;	/* truncated meanwhile: the rest reads as zeros */
		rc = mm_write(mm, addr + done, buf, (size_t)got);
		done += (uint64_t)got;
	}
	/* pages of the area below the boundary that no data reached (a file cut short
	 * meanwhile) stay demand-zero, as the rest of the last page */
	kfree(buf);
	return rc;
}
