/*
 * exec.c - execve of ELF executables: static (ET_EXEC, static-pie: ET_DYN without
 * PT_INTERP) and dynamic ones (PT_INTERP: the interpreter, glibc's ld-linux-x86-64.so.2,
 * loaded below the mmap top and entered first, AT_BASE its base, AT_ENTRY the program's
 * entry), with the System V x86-64 initial stack: argc, argv, envp, the auxiliary
 * vector glibc and musl need (AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_BASE, AT_ENTRY,
 * AT_RANDOM, AT_UID/EUID/GID/EGID, AT_EXECFN, AT_HWCAP, AT_CLKTCK, AT_SECURE), the
 * stack pointer 16-byte aligned at argc (SysV ABI AMD64 supplement, 3.4.1).
 *
 * Massalin & Pu 1991 (Synthesis) "Address spaces": the new image is built in a fresh
 * address space before the old one is let go, so a refused or failing exec leaves the
 * caller as it was (Linux also returns errors up to its point of no return).
 *
 * A bad file is refused with a console line naming what is wrong (truncated header,
 * wrong class/byte order/machine, a segment outside the file or outside user space, a
 * bad PT_INTERP path) and -ENOEXEC, as Linux's binfmt_elf answers; a missing
 * interpreter is the open's error (-ENOENT), one that is not an x86-64 ELF -ELIBBAD.
 *
 * The file is opened through kernel/fs (vfs_openat, vfs_fstat), so a program another
 * program wrote at run time can be executed; the file must be a regular file with an
 * execute bit (else -EACCES). Its pages are taken from the file system (vfs_mmap_pages,
 * a reference each) and every whole page of a segment's file part that no other segment
 * shares is mapped from the file copy-on-write (mm_place_cow), as Linux's binfmt_elf maps
 * the page cache: text is executed in the file's own pages, data copied at its first
 * write. The rest - a segment's first and last partial pages, a page two segments share
 * - is copied into fresh pages (whose bytes outside the segment's file part stay zero);
 * a file system that hands out no pages has the whole file read into a kernel buffer
 * (vfs_pread) and every segment copied. Before, every exec copied the whole file twice
 * (a buffer, then the pages): busybox's 1.9 MB, 20 ms per exec under TCG.
 */
#include "kernel.h"
#include "mm.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"
#include <ksync/errors.h>

struct elf64_ehdr {
	uint8_t ident[16];
	uint16_t type, machine;
	uint32_t version;
	uint64_t entry, phoff, shoff;
	uint32_t flags;
	uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};
struct elf64_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, paddr, filesz, memsz, align;
};
#define PT_LOAD 1
#define PT_INTERP 3
#define PT_PHDR 6
#define PF_X 1
#define PF_W 2
#define PF_R 4
#define ET_EXEC 2
#define ET_DYN 3
#define EM_X86_64 62
#define PIE_BASE 0x555555554000ull	/* where Linux puts a PIE without randomisation */
#define MAX_ARGS 256
#define MAX_ARG_BYTES (64u << 10)

/* The executable's bytes: the file's pages (each with a reference) or, where the file
 * system hands out none, a copy of the whole file. Read by ximg_read only. */
struct ximg {
	uint64_t size;		/* the file's size at the open */
	void **pages;		/* ALIGN_UP(size, PAGE_SIZE) / PAGE_SIZE pages, or NULL */
	uint8_t *flat;		/* the copy, or NULL */
};

static long ximg_open(struct fdtable *t, struct fs_ctx *c, const char *path, struct ximg *x);
static void ximg_close(struct ximg *x);

/* n bytes from offset off (off + n <= x->size: the caller checked) */
static void ximg_read(const struct ximg *x, uint64_t off, void *dst, size_t n)
{
	if (x->flat) {
		memcpy(dst, x->flat + off, n);
		return;
	}
	uint8_t *d = dst;
	while (n) {
		size_t in = (size_t)(off & (PAGE_SIZE - 1)), k = PAGE_SIZE - in;
		if (k > n)
			k = n;
		memcpy(d, (const uint8_t *)x->pages[off / PAGE_SIZE] + in, k);
		d += k;
		off += k;
		n -= k;
	}
}

static long refuse(const char *path, const char *why, uint64_t v)
{
	kprintf("ksync: exec %s: refused: %s (0x%lx)\n", path, why, v);
	return -LX_ENOEXEC;
}

static unsigned prot_of(uint32_t f)
{
	return (f & PF_R ? ARCH_PROT_READ : 0) | (f & PF_W ? ARCH_PROT_WRITE : 0) |
	       (f & PF_X ? ARCH_PROT_EXEC : 0);
}

#define INTERP_TOP 0x7ffff7fff000ull	/* the interpreter ends here (mm.c's mmap top) */
#define INTERP_MAX 4096		/* PT_INTERP's path, its NUL included (PATH_MAX) */

/* Whether another PT_LOAD than segment `self` reaches into the page at p (its area,
 * page-rounded): such a page gets the union of both segments' rights and both their
 * bytes, so it is copied, never the file's own. */
static bool page_shared(const struct ximg *x, const struct elf64_ehdr *eh, unsigned self,
			uint64_t base, uint64_t p)
{
	for (unsigned j = 0; j < eh->phnum; j++) {
		struct elf64_phdr ph;
		ximg_read(x, eh->phoff + j * sizeof ph, &ph, sizeof ph);
		if (j == self || ph.type != PT_LOAD || !ph.memsz)
			continue;
		uint64_t s = ALIGN_DOWN(base + ph.vaddr, PAGE_SIZE);
		uint64_t e = ALIGN_UP(base + ph.vaddr + ph.memsz, PAGE_SIZE);
		if (s < p + PAGE_SIZE && p < e)
			return true;
	}
	return false;
}

/* Validate and map every PT_LOAD; *entry, *phdr_va, *brk_start out. interp: NULL for
 * the interpreter itself (an ET_DYN goes just below INTERP_TOP; a PT_INTERP of its own
 * is refused), else INTERP_MAX bytes that receive the PT_INTERP path ("" if none); *base
 * out: where an ET_DYN went (0 for ET_EXEC). */
static long load_elf(struct mm *mm, const char *path, const struct ximg *x,
		     char *interp, uint64_t *entry, uint64_t *phdr_va, uint16_t *phnum,
		     uint64_t *brk_start, uint64_t *base_out)
{
	const uint64_t size = x->size;
	if (interp)
		interp[0] = 0;
	uint8_t magic[4] = { 0, 0, 0, 0 };
	if (size >= 4)
		ximg_read(x, 0, magic, 4);
	if (size < 4 || magic[0] != 0x7f || magic[1] != 'E' || magic[2] != 'L' || magic[3] != 'F')
		return refuse(path, "not an ELF file (no \\x7fELF magic)", size);
	if (size < sizeof(struct elf64_ehdr))
		return refuse(path, "truncated ELF header (file size)", size);
	struct elf64_ehdr eh;
	ximg_read(x, 0, &eh, sizeof eh);
	if (eh.ident[4] != 2)
		return refuse(path, "not a 64-bit ELF (EI_CLASS)", eh.ident[4]);
	if (eh.ident[5] != 1)
		return refuse(path, "not little-endian (EI_DATA)", eh.ident[5]);
	if (eh.machine != EM_X86_64)
		return refuse(path, "wrong machine, not x86-64 (e_machine)", eh.machine);
	if (eh.type != ET_EXEC && eh.type != ET_DYN)
		return refuse(path, "not an executable (e_type)", eh.type);
	if (eh.phentsize != sizeof(struct elf64_phdr) || eh.phnum == 0 || eh.phnum > 64)
		return refuse(path, "bad program header table (e_phnum)", eh.phnum);
	if (eh.phoff > size || (uint64_t)eh.phnum * sizeof(struct elf64_phdr) > size - eh.phoff)
		return refuse(path, "truncated: program headers beyond the end of the file (e_phoff)",
			      eh.phoff);
	uint64_t base = eh.type == ET_DYN ? PIE_BASE : 0;
	if (!interp && eh.type == ET_DYN) {
		/* the interpreter: its span ends at INTERP_TOP (Linux puts it at the top of
		 * the mmap area; the loader's own mmaps go below it) */
		uint64_t l = ~0ull, h = 0;
		for (unsigned i = 0; i < eh.phnum; i++) {
			struct elf64_phdr ph;
			ximg_read(x, eh.phoff + i * sizeof ph, &ph, sizeof ph);
			if (ph.type != PT_LOAD || !ph.memsz)
				continue;
			if (ph.vaddr < l)
				l = ph.vaddr;
			if (ph.vaddr + ph.memsz > h)
				h = ph.vaddr + ph.memsz;
		}
		l = ALIGN_DOWN(l, PAGE_SIZE);
		if (h > l && h - l < (1ull << 32))
			base = ALIGN_DOWN(INTERP_TOP - ALIGN_UP(h - l, PAGE_SIZE), PAGE_SIZE) - l;
	}
	uint64_t lo = ~0ull, hi = 0, phva = 0;
	for (unsigned i = 0; i < eh.phnum; i++) {
		struct elf64_phdr ph;
		ximg_read(x, eh.phoff + i * sizeof ph, &ph, sizeof ph);
		if (ph.type == PT_INTERP) {
			if (!interp)
				return refuse(path, "the interpreter has an interpreter (PT_INTERP)", i);
			if (ph.offset > size || ph.filesz > size - ph.offset || ph.filesz < 2 ||
			    ph.filesz > INTERP_MAX)
				return refuse(path, "bad interpreter path (PT_INTERP)", ph.filesz);
			ximg_read(x, ph.offset, interp, ph.filesz);
			if (interp[ph.filesz - 1] != 0) {
				interp[0] = 0;
				return refuse(path, "bad interpreter path (PT_INTERP)", ph.filesz);
			}
			continue;
		}
		if (ph.type == PT_PHDR)
			phva = base + ph.vaddr;
		if (ph.type != PT_LOAD)
			continue;
		if (ph.offset > size || ph.filesz > size - ph.offset)
			return refuse(path, "truncated: a segment beyond the end of the file (p_offset)",
				      ph.offset);
		if (ph.filesz > ph.memsz)
			return refuse(path, "segment with p_filesz > p_memsz", ph.filesz);
		uint64_t va = base + ph.vaddr;
		if (va < USER_VA_MIN || va >= USER_VA_END || ph.memsz > USER_VA_END - va)
			return refuse(path, "segment outside user space [0x10000, 0x800000000000) "
				      "(p_vaddr)", va);
		if ((ph.vaddr - ph.offset) & (PAGE_SIZE - 1))
			return refuse(path, "segment not page-aligned with its offset (p_vaddr)", ph.vaddr);
		if (va < lo)
			lo = va;
		if (va + ph.memsz > hi)
			hi = va + ph.memsz;
	}
	if (hi == 0)
		return refuse(path, "no loadable segment (PT_LOAD)", 0);
	/* map, then fill: the areas first, so that overlapping pages of two segments get
	 * the union of their rights (the loader writes through the physical pages) */
	for (unsigned i = 0; i < eh.phnum; i++) {
		struct elf64_phdr ph;
		ximg_read(x, eh.phoff + i * sizeof ph, &ph, sizeof ph);
		if (ph.type != PT_LOAD || !ph.memsz)
			continue;
		uint64_t va = base + ph.vaddr;
		uint64_t s = ALIGN_DOWN(va, PAGE_SIZE), e = ALIGN_UP(va + ph.memsz, PAGE_SIZE);
		unsigned prot = prot_of(ph.flags);
		/* a page shared with the previous segment gets both rights (the fresh mm is
		 * this loader's alone, so reading its list needs no lock) */
		for (struct vma *v = mm->vmas; v; v = v->next)
			if (v->start < e && s < v->end)
				prot |= v->prot;
		long rc = mm_map(mm, s, e, prot);
		if (rc)
			return rc;
	}
	uint8_t *bounce = x->flat ? NULL : kmalloc(PAGE_SIZE);
	if (!x->flat && !bounce)
		return -LX_ENOMEM;
	long rc = 0;
	for (unsigned i = 0; i < eh.phnum && !rc; i++) {
		struct elf64_phdr ph;
		ximg_read(x, eh.phoff + i * sizeof ph, &ph, sizeof ph);
		if (ph.type != PT_LOAD || !ph.filesz)
			continue;
		uint64_t va = base + ph.vaddr, fend = va + ph.filesz;
		for (uint64_t p = ALIGN_DOWN(va, PAGE_SIZE); p < fend && !rc; p += PAGE_SIZE) {
			uint64_t lo = p > va ? p : va, hi = p + PAGE_SIZE < fend ? p + PAGE_SIZE : fend;
			/* a whole page of the file part that no other segment touches: the file's
			 * page (offset and address agree modulo the page size, checked above; the
			 * bytes before the segment's start in its first page are the file's, as
			 * Linux maps them) */
			if (x->pages && hi == p + PAGE_SIZE && !page_shared(x, &eh, i, base, p)) {
				uint64_t foff = ph.offset - (va - p);
				rc = mm_place_cow(mm, p, x->pages[foff / PAGE_SIZE]);
				continue;
			}
			uint64_t foff = ph.offset + (lo - va);
			if (x->flat) {
				rc = mm_write(mm, lo, x->flat + foff, (size_t)(hi - lo));
			} else {
				ximg_read(x, foff, bounce, (size_t)(hi - lo));
				rc = mm_write(mm, lo, bounce, (size_t)(hi - lo));
			}
		}
		/* the rest up to memsz (.bss) stays zero: fresh pages are zeroed */
	}
	kfree(bounce);
	if (rc)
		return rc;
	if (!phva) {
		/* no PT_PHDR: the headers are in the first segment when it maps offset 0 */
		phva = lo + eh.phoff;
	}
	*entry = base + eh.entry;
	*phdr_va = phva;
	*phnum = eh.phnum;
	*brk_start = ALIGN_UP(hi, PAGE_SIZE);
	*base_out = base;
	return 0;
}

static uint64_t rnd_state;

/* 16 bytes for AT_RANDOM: the TSC mixed (splitmix64); not cryptographic. */
static void random16(uint8_t out[16])
{
	for (int w = 0; w < 2; w++) {
		uint64_t z = __atomic_add_fetch(&rnd_state, 0x9e3779b97f4a7c15ull ^ arch_cycles(),
						__ATOMIC_RELAXED);
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		z ^= z >> 31;
		memcpy(out + 8 * w, &z, 8);
	}
}

static long count_strings(char *const v[], unsigned *n, size_t *bytes)
{
	*n = 0;
	for (; v && v[*n]; (*n)++) {
		if (*n >= MAX_ARGS)
			return -LX_E2BIG;
		*bytes += strlen(v[*n]) + 1;
		if (*bytes > MAX_ARG_BYTES)
			return -LX_E2BIG;
	}
	return 0;
}

#define EXEC_MAX_FILE (64ull << 20)	/* a bigger file is refused (-ENOMEM) */

/* The file at path: its pages (vfs_mmap_pages, a reference each), or - a file system
 * that hands out none - the whole file read into a kmalloc'd buffer. */
static long ximg_open(struct fdtable *t, struct fs_ctx *c, const char *path, struct ximg *x)
{
	x->size = 0;
	x->pages = NULL;
	x->flat = NULL;
	int fd = vfs_openat(t, c, LX_AT_FDCWD, path, LX_O_RDONLY | LX_O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	struct lx_stat st;
	long rc = vfs_fstat(t, fd, &st);
	if (!rc && ((st.st_mode & LX_S_IFMT) != LX_S_IFREG || !(st.st_mode & 0111)))
		rc = -LX_EACCES;
	if (!rc && (uint64_t)st.st_size > EXEC_MAX_FILE)
		rc = -LX_ENOMEM;
	uint64_t size = rc ? 0 : (uint64_t)st.st_size;
	size_t n = (size_t)(ALIGN_UP(size, PAGE_SIZE) / PAGE_SIZE);
	if (!rc && n) {
		x->pages = kmalloc(n * sizeof *x->pages);
		if (!x->pages)
			rc = -LX_ENOMEM;
		else
			rc = vfs_mmap_pages(t, fd, 0, n, x->pages);
		if (rc) {
			kfree(x->pages);
			x->pages = NULL;
		}
		if (rc == -LX_ENODEV)
			rc = 0;		/* no pages to be had: the copy below */
	}
	if (!rc && !x->pages) {
		x->flat = kmalloc(size ? (size_t)size : 1);
		if (!x->flat)
			rc = -LX_ENOMEM;
		uint64_t got = 0;
		while (!rc && got < size) {
			long k = vfs_pread(t, fd, x->flat + got, (size_t)(size - got), (int64_t)got);
			if (k < 0)
				rc = k;
			else if (k == 0)
				break;	/* truncated meanwhile: load_elf judges what is there */
			else
				got += (uint64_t)k;
		}
		size = got;
	}
	vfs_close(t, fd);
	x->size = size;
	if (rc)
		ximg_close(x);
	return rc;
}

static void ximg_close(struct ximg *x)
{
	if (x->pages) {
		size_t n = (size_t)(ALIGN_UP(x->size, PAGE_SIZE) / PAGE_SIZE);
		for (size_t i = 0; i < n; i++)
			fs_page_release(x->pages[i]);	/* each mapping holds its own */
	}
	kfree(x->pages);
	kfree(x->flat);
	x->pages = NULL;
	x->flat = NULL;
}

long exec_load(struct mm *mm, struct fdtable *t, struct fs_ctx *c, const char *path,
	       char *const argv[], char *const envp[], uint64_t *entry_out, uint64_t *sp_out)
{
	struct ximg x;
	long rc = ximg_open(t, c, path, &x);
	if (rc)
		return rc;
	uint64_t entry, phdr, brk, base;
	uint16_t phnum;
	char *interp = kmalloc(INTERP_MAX);
	if (!interp) {
		ximg_close(&x);
		return -LX_ENOMEM;
	}
	rc = load_elf(mm, path, &x, interp, &entry, &phdr, &phnum, &brk, &base);
	ximg_close(&x);
	/* a dynamic program (PT_INTERP): the interpreter (glibc's ld-linux-x86-64.so.2) is
	 * loaded too and entered first; it finds the program by AT_PHDR/AT_ENTRY and itself
	 * by AT_BASE. As Linux's binfmt_elf: a missing interpreter is the open's error
	 * (ENOENT, EACCES), a file that is not an ELF of this machine -ELIBBAD. */
	uint64_t ld_base = 0, ld_entry = 0;
	if (!rc && interp[0]) {
		struct ximg lx;
		rc = ximg_open(t, c, interp, &lx);
		if (!rc) {
			struct elf64_ehdr le;
			if (lx.size < sizeof le)
				rc = -LX_ELIBBAD;
			else
				ximg_read(&lx, 0, &le, sizeof le);
			if (!rc && (memcmp(le.ident, "\x7f" "ELF", 4) || le.ident[4] != 2 ||
				    le.machine != EM_X86_64)) {
				kprintf("ksync: exec %s: refused: interpreter %s is not an x86-64 ELF\n",
					path, interp);
				rc = -LX_ELIBBAD;
			}
			uint64_t lphdr, lbrk;
			uint16_t lphnum;
			if (!rc)
				rc = load_elf(mm, interp, &lx, NULL, &ld_entry, &lphdr, &lphnum,
					      &lbrk, &ld_base);
			ximg_close(&lx);
		}
	}
	kfree(interp);
	if (rc)
		return rc;
	mm->brk_start = mm->brk = brk;

	/* the stack: an 8 MiB area below MM_STACK_TOP, filled from the top */
	rc = mm_map(mm, MM_STACK_TOP - MM_STACK_SIZE, MM_STACK_TOP,
		    ARCH_PROT_READ | ARCH_PROT_WRITE);
	if (rc)
		return rc;
	unsigned argc, envc;
	size_t bytes = 0;
	rc = count_strings(argv, &argc, &bytes);
	if (!rc)
		rc = count_strings(envp, &envc, &bytes);
	if (rc)
		return rc;
	uint64_t sp = MM_STACK_TOP - 16;		/* 16 bytes of end marker space */
	uint8_t rnd[16];
	random16(rnd);
	sp -= 16;
	uint64_t rnd_va = sp;
	if ((rc = mm_write(mm, rnd_va, rnd, 16)))
		return rc;
	size_t plen = strlen(path) + 1;
	sp -= plen;
	uint64_t execfn = sp;
	if ((rc = mm_write(mm, execfn, path, plen)))
		return rc;
	/* the strings, then the pointer block built in a kernel buffer */
	uint64_t *vec = kmalloc((argc + envc + 2 + 2 * 20 + 1) * sizeof(uint64_t));
	if (!vec)
		return -LX_ENOMEM;
	size_t k = 0;
	vec[k++] = argc;
	for (unsigned i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;
		sp -= n;
		if ((rc = mm_write(mm, sp, argv[i], n)))
			goto out;
		vec[k++] = sp;
	}
	vec[k++] = 0;
	for (unsigned i = 0; i < envc; i++) {
		size_t n = strlen(envp[i]) + 1;
		sp -= n;
		if ((rc = mm_write(mm, sp, envp[i], n)))
			goto out;
		vec[k++] = sp;
	}
	vec[k++] = 0;
#define AUX(t, v) do { vec[k++] = (t); vec[k++] = (v); } while (0)
	AUX(LX_AT_PHDR, phdr);
	AUX(LX_AT_PHENT, sizeof(struct elf64_phdr));
	AUX(LX_AT_PHNUM, phnum);
	AUX(LX_AT_PAGESZ, PAGE_SIZE);
	AUX(LX_AT_BASE, ld_base);
	AUX(LX_AT_FLAGS, 0);
	AUX(LX_AT_ENTRY, entry);
	AUX(LX_AT_UID, 0);
	AUX(LX_AT_EUID, 0);
	AUX(LX_AT_GID, 0);
	AUX(LX_AT_EGID, 0);
	AUX(LX_AT_SECURE, 0);
	AUX(LX_AT_HWCAP, 0x178bfbff);	/* CPUID.1 EDX of the baseline x86-64 (fpu..sse2) */
	AUX(LX_AT_CLKTCK, 100);
	AUX(LX_AT_RANDOM, rnd_va);
	AUX(LX_AT_EXECFN, execfn);
	AUX(LX_AT_NULL, 0);
#undef AUX
	sp = ALIGN_DOWN(sp, 16);
	if (k & 1)
		sp -= 8;		/* argc lands 16-byte aligned */
	sp -= k * sizeof(uint64_t);
	rc = mm_write(mm, sp, vec, k * sizeof(uint64_t));
	KASSERT((sp & 15) == 0);
	*entry_out = ld_entry ? ld_entry : entry;
	*sp_out = sp;
out:
	kfree(vec);
	return rc;
}
