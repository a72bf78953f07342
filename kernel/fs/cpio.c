/*
 * cpio.c - the initramfs: unpack a cpio "newc" archive (magic "070701", or "070702" with
 * checksums, which are not checked) into "/", as Linux's init/initramfs.c does.
 *
 * Each entry: a 110-byte header (the magic, then 13 fields of 8 hex digits: ino, mode,
 * uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize,
 * check), the name (namesize bytes with its NUL), padding to 4, the data (filesize
 * bytes), padding to 4; the entry named "TRAILER!!!" ends the archive. Directories
 * (existing ones keep their entries and take the archive's mode), regular files,
 * symbolic links (the data is the target) and hard links (a regular file with nlink >= 2
 * whose ino was seen before becomes a link to that name, as Linux's maybe_link; the data
 * may come with any of the names) are made; other types (device nodes, fifos, sockets)
 * are skipped and counted. The files are made through the VFS calls themselves (a
 * private descriptor table and context, umask 0), so the archive's names are walked
 * exactly as a program's would be.
 *
 * Bad input is refused, never trusted: a header cut short, a wrong magic, a field that
 * is not 8 hex digits, a name or data running past the end, a name without its NUL, no
 * trailer - each says what is wrong and at which byte offset of the archive, printed
 * ("fs: initramfs: ...") and returned in `err`. Entries before the bad one stay unpacked.
 *
 * No shared state of its own (the VFS locks what it touches).
 */
#include "fs_internal.h"
#include <ksync/errors.h>

#define CPIO_HDR 110

static const char *const field_names[13] = {
	"ino", "mode", "uid", "gid", "nlink", "mtime", "filesize", "devmajor", "devminor",
	"rdevmajor", "rdevminor", "namesize", "check",
};
enum { F_INO, F_MODE, F_UID, F_GID, F_NLINK, F_MTIME, F_SIZE, F_DEVMAJ, F_DEVMIN, F_RMAJ,
       F_RMIN, F_NAMESIZE, F_CHECK };

struct link_rec {
	uint64_t ino;
	char *name;
};

struct unpack {
	char *err;
	size_t errlen;
	struct fdtable *t;
	struct fs_ctx *c;
	struct link_rec *links;
	size_t nlinks, caplinks;
	unsigned skipped;
};

__attribute__((format(printf, 2, 3))) static int refuse(struct unpack *u, const char *fmt, ...)
{
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	kprintf("fs: initramfs: %s\n", buf);
	if (u->err && u->errlen) {
		size_t n = strlen(buf);
		if (n >= u->errlen)
			n = u->errlen - 1;
		memcpy(u->err, buf, n);
		u->err[n] = 0;
	}
	return -LX_EINVAL;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static const char *link_of(struct unpack *u, uint64_t ino)
{
	for (size_t i = 0; i < u->nlinks; i++)
		if (u->links[i].ino == ino)
			return u->links[i].name;
	return NULL;
}

static void remember_link(struct unpack *u, uint64_t ino, const char *name)
{
	if (u->nlinks == u->caplinks) {	/* "where cheap": no memory, no link */
		size_t cap = u->caplinks ? u->caplinks * 2 : 16;
		struct link_rec *l = kmalloc(cap * sizeof *l);
		if (!l)
			return;
		if (u->links)
			memcpy(l, u->links, u->nlinks * sizeof *l);
		kfree(u->links);
		u->links = l;
		u->caplinks = cap;
	}
	size_t n = strlen(name);
	char *copy = kmalloc(n + 1);
	if (!copy)
		return;
	memcpy(copy, name, n + 1);
	u->links[u->nlinks].ino = ino;
	u->links[u->nlinks++].name = copy;
}

/* Remove what path names if it is not of type `type` (0: whatever it is), as Linux's
 * clean_path: an archive laid over an existing tree replaces its entries. */
static void clean(struct unpack *u, const char *path, uint32_t type)
{
	struct lx_stat st;
	if (vfs_fstatat(u->t, u->c, LX_AT_FDCWD, path, &st, LX_AT_SYMLINK_NOFOLLOW) != 0)
		return;
	if (type && (st.st_mode & LX_S_IFMT) == type)
		return;
	vfs_unlinkat(u->t, u->c, LX_AT_FDCWD, path,
		     (st.st_mode & LX_S_IFMT) == LX_S_IFDIR ? LX_AT_REMOVEDIR : 0);
}

/* Make one entry. name: relative to "/" ("" for "/" itself). */
static int make(struct unpack *u, size_t off, const char *name, const uint32_t *h,
		const uint8_t *data)
{
	uint32_t mode = h[F_MODE], type = mode & LX_S_IFMT;
	const char *path = name[0] ? name : "/";
	int rc = 0;
	switch (type) {
	case LX_S_IFDIR:
		if (name[0])
			clean(u, path, type);
		rc = vfs_mkdirat(u->t, u->c, LX_AT_FDCWD, path, mode & 07777);
		if (rc == -LX_EEXIST)
			rc = 0;
		if (rc == 0)
			rc = vfs_fchmodat(u->t, u->c, LX_AT_FDCWD, path, mode & 07777);
		break;
	case LX_S_IFREG: {
		bool linked = false;
		if (h[F_NLINK] >= 2) {
			const char *old = link_of(u, h[F_INO]);
			if (old) {
				clean(u, path, 0);
				rc = vfs_linkat(u->t, u->c, LX_AT_FDCWD, old, LX_AT_FDCWD, path, 0);
				if (rc < 0)
					break;
				linked = true;
			} else {
				remember_link(u, h[F_INO], path);
			}
		}
		if (!linked)
			clean(u, path, type);
		int fd = vfs_openat(u->t, u->c, LX_AT_FDCWD, path,
				    LX_O_WRONLY | LX_O_CREAT | (linked ? 0 : LX_O_TRUNC), mode & 07777);
		if (fd < 0) {
			rc = fd;
			break;
		}
		for (size_t done = 0; done < h[F_SIZE];) {
			long w = vfs_write(u->t, fd, data + done, h[F_SIZE] - done);
			if (w <= 0) {
				rc = w < 0 ? (int)w : -LX_ENOSPC;
				break;
			}
			done += (size_t)w;
		}
		vfs_close(u->t, fd);
		if (rc == 0)
			rc = vfs_fchmodat(u->t, u->c, LX_AT_FDCWD, path, mode & 07777);
		break;
	}
	case LX_S_IFLNK:
		if (h[F_SIZE] == 0 || h[F_SIZE] >= LX_PATH_MAX)
			return refuse(u, "symbolic link '%s' at offset %lu has a target of %u bytes",
				      name, (unsigned long)off, h[F_SIZE]);
	{
		char *target = kmalloc(h[F_SIZE] + 1);	/* not 4 KiB on a kernel stack */
		if (!target)
			return refuse(u, "no memory for the link target of '%s'", name);
		memcpy(target, data, h[F_SIZE]);
		target[h[F_SIZE]] = 0;
		clean(u, path, 0);
		rc = vfs_symlinkat(u->t, u->c, target, LX_AT_FDCWD, path);
		kfree(target);
		break;
	}
	default:
		u->skipped++;	/* device nodes, fifos, sockets */
		return 0;
	}
	if (rc < 0)
		return refuse(u, "cannot make '%s' (entry at offset %lu): error %d", name,
			      (unsigned long)off, -rc);
	return 0;
}

static int unpack(struct unpack *u, const uint8_t *a, size_t len)
{
	size_t off = 0;
	for (;;) {
		if (len - off < CPIO_HDR)
			return off == len
				? refuse(u, "no TRAILER!!! entry: the archive ends at offset %lu",
					 (unsigned long)off)
				: refuse(u, "truncated header at offset %lu (%lu bytes left, a header "
					 "takes %d)", (unsigned long)off, (unsigned long)(len - off),
					 CPIO_HDR);
		if (memcmp(a + off, "07070", 5) != 0 || (a[off + 5] != '1' && a[off + 5] != '2')) {
			char m[7];
			for (int i = 0; i < 6; i++)
				m[i] = a[off + i] >= 32 && a[off + i] < 127 ? (char)a[off + i] : '?';
			m[6] = 0;
			return refuse(u, "bad magic '%s' at offset %lu (want 070701)", m,
				      (unsigned long)off);
		}
		uint32_t h[13];
		for (int f = 0; f < 13; f++) {
			uint32_t v = 0;
			for (int d = 0; d < 8; d++) {
				size_t at = off + 6 + (size_t)f * 8 + (size_t)d;
				int x = hexval((char)a[at]);
				if (x < 0)
					return refuse(u, "non-hex digit in field %s at offset %lu",
						      field_names[f], (unsigned long)at);
				v = v << 4 | (uint32_t)x;
			}
			h[f] = v;
		}
		size_t ns = h[F_NAMESIZE], name_at = off + CPIO_HDR;
		if (ns == 0 || ns > LX_PATH_MAX)
			return refuse(u, "name size %lu at offset %lu is out of range",
				      (unsigned long)ns, (unsigned long)off);
		if (ns > len - name_at)
			return refuse(u, "name of %lu bytes at offset %lu runs past the end of the "
				      "archive (%lu bytes)", (unsigned long)ns, (unsigned long)name_at,
				      (unsigned long)len);
		const char *name = (const char *)a + name_at;
		if (name[ns - 1] != 0 || strlen(name) != ns - 1)
			return refuse(u, "name at offset %lu is not one NUL-terminated string of %lu "
				      "bytes", (unsigned long)name_at, (unsigned long)ns);
		size_t data_at = ALIGN_UP(name_at + ns, 4);
		if (strcmp(name, "TRAILER!!!") == 0)
			return 0;
		if (data_at > len || h[F_SIZE] > len - data_at)
			return refuse(u, "data of '%s' (%u bytes at offset %lu) is truncated: the "
				      "archive ends at %lu", name, h[F_SIZE], (unsigned long)data_at,
				      (unsigned long)len);
		/* names are relative to "/": drop "./" and leading slashes */
		while (name[0] == '/' || (name[0] == '.' && name[1] == '/'))
			name += name[0] == '/' ? 1 : 2;
		if (strcmp(name, ".") == 0)
			name = "";
		int rc = make(u, off, name, h, a + data_at);
		if (rc)
			return rc;
		off = ALIGN_UP(data_at + h[F_SIZE], 4);
		if (off > len)
			off = len;
	}
}

int fs_unpack_cpio_msg(const void *buf, size_t len, char *err, size_t errlen)
{
	struct unpack u = { .err = err, .errlen = errlen };
	if (err && errlen)
		err[0] = 0;
	if (!buf)
		return refuse(&u, "no archive");
	int rc = fs_init();
	if (rc)
		return rc;
	u.t = fdtable_new();
	u.c = fs_ctx_new();
	if (!u.t || !u.c) {
		rc = -LX_ENOMEM;
	} else {
		fs_umask(u.c, 0);
		rc = unpack(&u, buf, len);
	}
	if (u.t)
		fdtable_put(u.t);
	if (u.c)
		fs_ctx_put(u.c);
	for (size_t i = 0; i < u.nlinks; i++)
		kfree(u.links[i].name);
	kfree(u.links);
	if (rc == 0 && u.skipped)
		kprintf("fs: initramfs: %u entries of other types (device nodes, fifos) skipped\n",
			u.skipped);
	return rc;
}

int fs_unpack_cpio(const void *buf, size_t len)
{
	return fs_unpack_cpio_msg(buf, len, NULL, 0);
}
