/*
 * mmfile.c - mmap of a regular file: MAP_PRIVATE (glibc's dynamic loader maps every
 * shared library this way) and MAP_SHARED (docs/userspace.md "Dynamic programs").
 *
 * A private mapping is a copy: the area is made (replacing what was there, as MAP_FIXED
 * does), then every page that holds file data is filled from the file through kernel/fs
 * (vfs_pread into a kernel buffer, then into the page under the mm lock: mm_write). The
 * pages are the process's own from then on: a write changes its copy only (never the
 * file), fork shares them copy-on-write like any other page, mprotect changes their
 * rights. The part of the last page past the file's end reads as zeros; whole pages past
 * the end are left unmapped and the area remembers where they begin (vma->bus): an
 * access there is SIGBUS (BUS_ADRERR), as on Linux.
 *
 * Not Linux's: Linux maps the page cache's pages and copies one at the first write, so
 * a page not yet written still shows later writes to the file (by write() or another
 * MAP_SHARED mapping); ksync's copy is taken at mmap time. The difference shows only to
 * a program that maps a file privately and writes the file afterwards.
 *
 * MAP_SHARED maps the file's own pages (kernel/fs/fmap.c hands them out, holes filled,
 * each with a reference; arch_as_map_page maps them never copy-on-write, also across
 * fork): writes through the mapping are the file's, write() is seen by the mapping. A
 * page is counted by the file and by every mapping (pagehooks.c), so a truncate or
 * unlink leaves a mapped page alive and mapped - where Linux gives SIGBUS past the new
 * end; and whole pages past the end at mmap time stay SIGBUS when the file grows later
 * (Linux maps them then). A descriptor not open for writing gives an area that
 * mprotect cannot make writable (EACCES, VMA_SHARED_RO).
 *
 * Cost: the loader maps each library twice over (a reservation of its whole span from
 * offset 0, then each segment MAP_FIXED over it), so a library is copied about twice at
 * each exec. Pages are copied as they are filled; no page cache.
 *
 * Locks: mm->lock (proc.h) around each page's copy (mm_write) and the shared pages'
 * mapping (mm_map_shared); kernel/fs's own (ramfs) inside vfs_pread and vfs_mmap_pages,
 * never both at once.
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"

#define CHUNK (64u << 10)

/* MAP_SHARED: the file's own pages mapped (writes reach the file, its writes the mapping;
 * every sharer, fork children too, sees one copy). */
static long map_shared(struct mm *mm, struct fdtable *t, int fd, uint64_t addr, uint64_t len,
		       unsigned prot, uint64_t off, uint64_t have, bool ro)
{
	size_t n = (size_t)(ALIGN_UP(have, PAGE_SIZE) / PAGE_SIZE);
	void **pages = n ? kmalloc(n * sizeof *pages) : NULL;
	if (n && !pages)
		return -LX_ENOMEM;
	long rc = n ? vfs_mmap_pages(t, fd, off / PAGE_SIZE, n, pages) : 0;
	if (!rc) {
		uint64_t bus = addr + n * PAGE_SIZE;
		rc = mm_map_shared(mm, addr, addr + len, prot | (ro ? VMA_SHARED_RO : 0),
				   bus < addr + len ? bus : 0, pages, n);
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
	if (shared)
		return map_shared(mm, t, fd, addr, len, prot, off, have, ro);
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
