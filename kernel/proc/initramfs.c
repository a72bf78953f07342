/*
 * initramfs.c - the root file system of this slice: the cpio "newc" archive QEMU (-initrd)
 * or GRUB (`module`) loads as the first multiboot module, read in place (boot.h; pmm.c
 * keeps its pages). A lookup walks the archive's records; nothing is unpacked.
 *
 * kernel/fs (issue 24's VFS, RAM file system) replaces this file: its fs_unpack_cpio
 * builds a RAM file system from the same bytes, and exec/openat then go through
 * vfs_openat. Until then the initramfs is read-only and flat (no symlinks followed).
 *
 * newc record (cpio(5), "New ASCII Format"): "070701", 13 fields of 8 hex digits (ino,
 * mode, uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor,
 * namesize, check), the name (namesize bytes with its NUL), padding to 4, the data,
 * padding to 4; the last record is named "TRAILER!!!".
 *
 * The archive is written once at boot (initramfs_init, before any process) and read
 * only afterwards: no lock.
 */
#include "kernel.h"
#include "proc.h"
#include "syscall/linux_abi.h"

static const uint8_t *arch_base;	/* written once at boot */
static size_t arch_len;

void initramfs_init(const void *base, size_t len)
{
	arch_base = base;
	arch_len = len;
}

bool initramfs_present(void) { return arch_base != NULL; }

static bool hex8(const uint8_t *p, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 8; i++) {
		uint8_t c = p[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return false;
		v = v << 4 | d;
	}
	*out = v;
	return true;
}

/* "/a//b/" and "a/b" name the archive's "a/b" */
static bool same_path(const char *want, const char *name, size_t nlen)
{
	while (*want == '/')
		want++;
	if (nlen >= 2 && name[0] == '.' && name[1] == '/') {
		name += 2;
		nlen -= 2;
	}
	size_t i = 0;
	for (; *want; want++) {
		if (*want == '/' && (want[1] == '/' || want[1] == 0))
			continue;
		if (i >= nlen || name[i] != *want)
			return false;
		i++;
	}
	return i == nlen;
}

long initramfs_lookup(const char *path, const uint8_t **data, uint64_t *size, uint32_t *mode)
{
	if (!arch_base)
		return -LX_ENOENT;
	size_t off = 0;
	while (off + 110 <= arch_len) {
		const uint8_t *h = arch_base + off;
		if (memcmp(h, "070701", 6)) {
			kprintf("ksync: initramfs: bad record magic at offset %lu (not cpio newc)\n",
				(unsigned long)off);
			return -LX_EINVAL;
		}
		uint32_t f[13];
		for (int i = 0; i < 13; i++)
			if (!hex8(h + 6 + 8 * i, &f[i])) {
				kprintf("ksync: initramfs: bad hex field %d at offset %lu\n", i,
					(unsigned long)off);
				return -LX_EINVAL;
			}
		uint32_t fmode = f[1], fsize = f[6], nsize = f[11];
		size_t name_off = off + 110, data_off = ALIGN_UP(name_off + nsize, 4);
		if (nsize == 0 || data_off > arch_len || fsize > arch_len - data_off) {
			kprintf("ksync: initramfs: record at offset %lu runs past the archive's end "
				"(truncated)\n", (unsigned long)off);
			return -LX_EINVAL;
		}
		const char *name = (const char *)arch_base + name_off;
		size_t nlen = nsize - 1;
		if (nlen == 10 && !memcmp(name, "TRAILER!!!", 10))
			break;
		if (same_path(path, name, nlen)) {
			*data = arch_base + data_off;
			*size = fsize;
			*mode = fmode;
			return (fmode & LX_S_IFMT) == LX_S_IFDIR ? -LX_EISDIR : 0;
		}
		off = ALIGN_UP(data_off + fsize, 4);
	}
	return -LX_ENOENT;
}
