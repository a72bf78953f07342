/*
 * fmap.c - the pages of a regular file for mmap and exec (kernel/proc/mmfile.c maps them
 * MAP_SHARED, or copy-on-write for MAP_PRIVATE; kernel/proc/exec.c maps a program's).
 *
 * A regular file's data pages are pmm pages with a reference count (fs_page_hold/
 * release: the port's page counts on x86_64, kernel/proc/mmfile.c): the file holds one
 * per page, each mapping its own, so a page stays while it is mapped even if the file
 * is truncated or removed (Linux would give SIGBUS past the new end: a known difference,
 * docs/userspace.md "Dynamic programs").
 *
 * Locks: ramfs_mon around the page lookup and allocation; no other.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

int vfs_mmap_pages(struct fdtable *t, int fd, uint64_t first, size_t n, void **pages)
{
	struct file *f = fdtable_file(t, fd);
	if (!f)
		return -LX_EBADF;
	int rc;
	ramfs_lock();
	if (!IS_REG(f->inode) || f->inode->procfs)
		rc = -LX_ENODEV;
	else if (first > (1ull << 28) || n > (1ull << 28))
		rc = -LX_ENOSPC;
	else
		rc = ramfs_pages_hold(f->inode, (size_t)first, n, pages);
	ramfs_unlock();
	file_put(f);
	return rc;
}
