/*
 * uvm.c - the x86-64 port's user space (issue 24; arch_if.h "user space"): per-process
 * page tables, copy-on-write and demand-zero pages, the syscall MSRs, user threads'
 * switch state (CR3, FS base, kernel stack), user copies with an exception table, and
 * the fault glue that turns a user's bad access into a kill instead of a panic.
 *
 * Massalin & Pu 1991 (Synthesis), "Address spaces" and "Memory management": each address
 * space is its own page-table root whose kernel part is shared with all the others, and
 * it is switched with the thread (here: CR3 written at a switch only when it differs).
 * The kernel lives in the upper half: its PML4 entries (slot 256: the direct map of
 * physical memory; 257: the lock-free KVA region of paging.c, whose tables below the
 * PML4 are never freed; 511: the image) are copied into every new root, so later KVA
 * mappings appear in every space at once. User space is the whole lower half from
 * USER_VA_MIN (PML4 slots 0..255); the kernel root's boot identity map in slot 0 is
 * never copied (and is gone after boot, smp.c). Tables are reached through the direct
 * map: a table is held by its P2V address, an entry holds V2P of it.
 *
 * Concurrency. A user address space (struct arch_as and the tables below its user
 * slots) is changed only by its owner under the process's mm lock (kernel/proc) - the
 * fault path (IRQs off, on the #PF IST stack), fork, exec, mmap/munmap/mprotect/brk and
 * destroy. A changed entry is flushed with invlpg on the changing CPU; the threads of one
 * process (issue 25) may run the space on other CPUs at once: after munmap, mprotect and
 * a MAP_FIXED mmap, arch_as_shootdown makes every other CPU that has the space loaded
 * reload its root (kernel/proc calls it with no lock held: an IPI's wait with the mm
 * lock held would deadlock against a CPU spinning on it with IRQs off). A copy-on-write
 * break in the fault path (IRQs off, the lock held) marks the thread's uctx (`shoot`):
 * a fault from ring 3 is diverted to uvm_user_shoot, which shoots the space down with
 * IRQs on before the faulting instruction runs again (so no other thread reads the old
 * copy after the new one was written); a kernel copy's fault (copy_to_user into a
 * shared page) is shot down at the end of its system call - until then another thread
 * may read the page's old copy. The hardware walker reads the tables
 * concurrently with the owner's plain stores; x86 page-table stores are single 8-byte
 * writes, and a new table is zeroed before the store that links it (the same CPU: TSO).
 * Page reference counts (uref, one per frame) are shared between the spaces a fork made:
 * changed only by atomic add/sub (relaxed: a count orders nothing; the page's contents
 * are handed over by the mm lock of the space that copies them, and a page reaching
 * zero belongs to the one dropping it).
 */
#include "kernel.h"
#include "mm.h"
#include "x86.h"
#include "percpu.h"
#include "trap.h"
#include <ksync/errors.h>

extern uint64_t boot_pml4[512];
void syscall_entry(void);
void uentry_iret(uint64_t kstack_top, const struct trapframe *tf);
size_t uaccess_copy(void *dst, const void *src, size_t n);
long uaccess_strncpy(char *dst, const char *src, size_t n);
extern const uint64_t __ex_table_start[], __ex_table_end[];

#define PTE_P 0x1ull
#define PTE_RW 0x2ull
#define PTE_US 0x4ull
#define PTE_COW 0x200ull	/* software bit: read-only because shared copy-on-write */
/* software bit: a page whose area is PROT_NONE - kept (its frame, its reference) but not
 * present, so that user and kernel accesses alike fault (Linux's _PAGE_PROTNONE) */
#define PTE_NONE 0x400ull
/* software bit: a file's page mapped MAP_SHARED (arch_as_map_page): never copy-on-write,
 * fork shares it writable as it is */
#define PTE_SHARED 0x800ull
#define PTE_NX (1ull << 63)
#define PTE_ADDR 0x000ffffffffff000ull
#define USER_CS 0x23
#define USER_SS 0x1b
#define SLOT_MIN ((unsigned)(USER_VA_MIN >> 39))
#define SLOT_END ((unsigned)(USER_VA_END >> 39))

#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_FMASK 0xc0000084

struct arch_as {
	uint64_t pml4;		/* the root's direct-map address (V2P: CR3); constant */
	uint64_t npages;	/* user pages mapped: the owner's mm lock */
};

struct arch_uctx {
	struct arch_as *as;	/* the owner thread (or its creator before it runs) */
	uint64_t fsbase;	/* the owner thread (arch_prctl) */
	/* set by the owner with IRQs off in arch_user_enter; read by the switch hook of the
	 * same thread's later switch-ins (ordered by the scheduler's hand-over) */
	uint64_t kstack_top;
	struct trapframe start;	/* the first frame: written before the thread runs */
	/* the user frame of a ring-3 exception the kernel is signalling (uvm_trap ->
	 * uvm_user_trap): the owner thread, IRQs off at both ends */
	struct trapframe fault_tf;
	/* the owner thread: a copy-on-write break of its fault replaced a present
	 * translation of its space, which other CPUs running the space (its process's other
	 * threads) may still cache; shot down before the thread goes on (uvm_trap diverts a
	 * ring-3 fault to uvm_user_shoot; a kernel copy's fault waits for the end of the
	 * system call, syscall_entry_c) */
	bool shoot;
	/* the owner thread (as `shoot`): the frames its copy-on-write breaks took out of
	 * the space while other CPUs may still cache them. Their reference is dropped only
	 * after the shootdown (Linux's mmu_gather frees after the flush): dropped at the
	 * break, a frame whose other sharer (a fork child) exited at once was freed and
	 * reused while a thread on another CPU still read it through its old translation
	 * (t/thr_pthread forkcow at -smp 4: "reader saw 109670400", a free-list word). A
	 * break past UVM_DEFER_MAX frames in one system call drops at once (the window
	 * comes back for those); so does a thread's end before its shootdown
	 * (arch_uctx_destroy). */
#define UVM_DEFER_MAX 16
	uint64_t deferred[UVM_DEFER_MAX];
	unsigned ndeferred;
	void *owner;		/* the kernel's process: set at create, constant */
};

static void uref_put(uint64_t pa);
/* After the shootdown (or when no other CPU runs the space): the deferred frames'
 * references go. Owner thread. */
static void put_deferred(struct arch_uctx *u)
{
	for (unsigned i = 0; i < u->ndeferred; i++)
		uref_put(u->deferred[i]);
	u->ndeferred = 0;
}

static inline struct arch_uctx *kcpu_this_uctx(void) { return this_cpu()->cur_uctx; }

/* ---- per-CPU set-up ------------------------------------------------------------------ */
static uint64_t pte_nx;	/* PTE_NX when EFER.NXE could be enabled, else 0; set by the BSP first */

void uvm_cpu_init(void)
{
	uint32_t a, b, c, d;
	cpuid(0x80000001, 0, &a, &b, &c, &d);
	uint64_t efer = rdmsr(MSR_EFER) | 1;		/* SCE: syscall/sysret */
	if (d & (1u << 20)) {
		efer |= 1ull << 11;			/* NXE */
		pte_nx = PTE_NX;
	}
	wrmsr(MSR_EFER, efer);
	/* sysret: CS = 0x10+16 | 3 = 0x23, SS = 0x10+8 | 3 = 0x1b; syscall: CS 0x08, SS 0x10 */
	wrmsr(MSR_STAR, (0x10ull << 48) | (0x08ull << 32));
	wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
	wrmsr(MSR_FMASK, 0x40700);		/* IF, DF, TF, AC cleared on entry */
	wrmsr(MSR_KERNEL_GS_BASE, 0);		/* the user's GS base (never set by users) */
}

/* ---- page reference counts ------------------------------------------------------------ */
#define UREF_FRAMES ((3ull << 30) / PAGE_SIZE)	/* pmm.c hands out frames below 3 GiB */
static uint16_t uref[UREF_FRAMES];

static void uref_get(uint64_t pa)
{
	if (__atomic_add_fetch(&uref[pa / PAGE_SIZE], 1, __ATOMIC_RELAXED) == 0)
		panic("uvm: reference count of page 0x%lx overflowed", pa);
}

/* A reference for one more mapping of a page others map too (a file's page, a fork's
 * shared one): refused near the count's limit, so that a program mapping one file page
 * 65,536 times gets ENOMEM (as Linux's vm.max_map_count gives) instead of a panic. The
 * margin (15 below the limit) holds the other CPUs' racing adds, which undo likewise. */
#define UREF_LIMIT 0xfff0u
static bool uref_tryget(uint64_t pa)
{
	if (__atomic_add_fetch(&uref[pa / PAGE_SIZE], 1, __ATOMIC_RELAXED) <= UREF_LIMIT)
		return true;
	__atomic_sub_fetch(&uref[pa / PAGE_SIZE], 1, __ATOMIC_RELAXED);
	return false;
}

static void uref_put(uint64_t pa)
{
	uint16_t left = __atomic_sub_fetch(&uref[pa / PAGE_SIZE], 1, __ATOMIC_RELAXED);
	if (left == 0xffff)
		panic("uvm: page 0x%lx dropped more often than mapped", pa);
	if (!left)
		pmm_free(P2V(pa));
}

/* ---- address spaces ------------------------------------------------------------------ */
static inline unsigned idx(uint64_t va, int level) { return (va >> (12 + 9 * level)) & 511; }

/* A zeroed frame by its direct-map address; 0 if none. */
static uint64_t zpage(void)
{
	uint64_t pa = pmm_alloc();
	if (pa)
		memset((void *)pa, 0, PAGE_SIZE);
	return pa;
}

struct arch_as *arch_as_create(void)
{
	struct arch_as *as = kzalloc(sizeof *as);
	if (!as)
		return NULL;
	as->pml4 = zpage();
	if (!as->pml4) {
		kfree(as);
		return NULL;
	}
	uint64_t *root = (uint64_t *)as->pml4;
	/* the kernel's slots, by value: their tables below are shared and never freed. A
	 * kernel slot with no table yet gets none here: KVA mappings are only made in slot
	 * 257, which the thread stacks have populated before any process exists. */
	for (unsigned i = SLOT_END; i < 512; i++)
		root[i] = __atomic_load_n(&boot_pml4[i], __ATOMIC_ACQUIRE);
	KASSERT(root[(KVA_BASE >> 39) & 511] & PTE_P);
	return as;
}

/* The leaf entry for va, creating tables when create; NULL if absent or no memory. */
static uint64_t *walk(struct arch_as *as, uint64_t va, bool create)
{
	uint64_t *t = (uint64_t *)as->pml4;
	for (int level = 3; level > 0; level--) {
		uint64_t *e = &t[idx(va, level)];
		if (!(*e & PTE_P)) {
			if (!create)
				return NULL;
			uint64_t n = zpage();
			if (!n)
				return NULL;
			/* zeroed before linked (same CPU, TSO); US|RW at the upper levels, the
			 * leaf decides */
			*e = V2P(n) | PTE_P | PTE_RW | PTE_US;
		}
		t = (uint64_t *)P2V(*e & PTE_ADDR);
	}
	return &t[idx(va, 0)];
}

static void flush(struct arch_as *as, uint64_t va)
{
	if ((read_cr3() & PTE_ADDR) == V2P(as->pml4))
		__asm__ volatile("invlpg (%0)" :: "r"(va) : "memory");
}

/* a leaf entry that holds a page: present, or kept under PROT_NONE */
static bool has_page(uint64_t e) { return e & (PTE_P | PTE_NONE); }

static uint64_t leaf_bits(unsigned prot)
{
	if (!(prot & (ARCH_PROT_READ | ARCH_PROT_WRITE | ARCH_PROT_EXEC)))
		return PTE_NONE;
	uint64_t b = PTE_P | PTE_US;
	if (prot & ARCH_PROT_WRITE)
		b |= PTE_RW;
	if (!(prot & ARCH_PROT_EXEC))
		b |= pte_nx;
	return b;
}

uint64_t arch_as_page(struct arch_as *as, uint64_t va, unsigned prot, bool write)
{
	va &= ~(PAGE_SIZE - 1);
	KASSERT(va >= USER_VA_MIN && va < USER_VA_END);
	uint64_t *pte = walk(as, va, true);
	if (!pte)
		return 0;
	uint64_t e = *pte;
	if (!has_page(e)) {			/* demand-zero */
		uint64_t z = zpage();
		if (!z)
			return 0;
		uint64_t pa = V2P(z);
		uref_get(pa);
		*pte = pa | leaf_bits(prot);
		as->npages++;
		return pa;
	}
	uint64_t pa = e & PTE_ADDR;
	if (!write || !(e & PTE_COW))
		return pa;
	/* copy-on-write: the last sharer takes the page, the others copy it */
	struct arch_uctx *me = kcpu_this_uctx();
	if (__atomic_load_n(&uref[pa / PAGE_SIZE], __ATOMIC_RELAXED) > 1) {
		uint64_t n = pmm_alloc();
		if (!n)
			return 0;
		memcpy((void *)n, (void *)P2V(pa), PAGE_SIZE);
		uref_get(V2P(n));
		if (me && me->as == as && me->ndeferred < UVM_DEFER_MAX)
			me->deferred[me->ndeferred++] = pa;	/* dropped after the shootdown */
		else
			uref_put(pa);
		pa = V2P(n);
	}
	*pte = pa | leaf_bits(prot | ARCH_PROT_WRITE);
	flush(as, va);
	if (me && me->as == as)
		me->shoot = true;	/* other CPUs: before this thread goes on */
	return pa;
}

static void free_level(uint64_t table, int level, uint64_t *npages)
{
	uint64_t *t = (uint64_t *)table;
	for (unsigned i = 0; i < 512; i++) {
		if (!(level == 0 ? has_page(t[i]) : (t[i] & PTE_P)))
			continue;
		if (level == 0) {
			uref_put(t[i] & PTE_ADDR);
			(*npages)--;
		} else {
			free_level(P2V(t[i] & PTE_ADDR), level - 1, npages);
		}
	}
	pmm_free(table);
}

void arch_as_destroy(struct arch_as *as)
{
	if (!as)
		return;
	KASSERT((read_cr3() & PTE_ADDR) != V2P(as->pml4));
	uint64_t *root = (uint64_t *)as->pml4;
	for (unsigned i = SLOT_MIN; i < SLOT_END; i++)
		if (root[i] & PTE_P)
			free_level(P2V(root[i] & PTE_ADDR), 2, &as->npages);
	KASSERT(as->npages == 0);
	pmm_free(as->pml4);
	kfree(as);
}

/* The leaf entry for va if its tables exist (NULL if not); *next = the first address
 * past va that may have one: past the whole absent table's range when a level is
 * missing, so that a walk over a huge sparse range (munmap or mprotect of 1 TiB: the
 * fuzz's huge lengths) costs the tables that exist, not one step per page. */
static uint64_t *walk_next(struct arch_as *as, uint64_t va, uint64_t *next)
{
	uint64_t *t = (uint64_t *)as->pml4;
	for (int level = 3; level > 0; level--) {
		uint64_t e = t[idx(va, level)];
		if (!(e & PTE_P)) {
			uint64_t span = 1ull << (12 + 9 * level);
			*next = (va & ~(span - 1)) + span;
			return NULL;
		}
		t = (uint64_t *)P2V(e & PTE_ADDR);
	}
	*next = va + PAGE_SIZE;
	return &t[idx(va, 0)];
}

/* A kernel page mapped at va with a reference of its own, replacing what was there;
 * bits: its kind (PTE_SHARED, or PTE_COW with prot's write right taken off). */
static uint64_t map_kernel_page(struct arch_as *as, uint64_t va, void *page, uint64_t bits)
{
	va &= ~(PAGE_SIZE - 1);
	KASSERT(va >= USER_VA_MIN && va < USER_VA_END);
	uint64_t *pte = walk(as, va, true);
	if (!pte)
		return 0;
	uint64_t pa = V2P((uint64_t)(uintptr_t)page);
	if (!uref_tryget(pa))
		return 0;
	if (has_page(*pte))
		uref_put(*pte & PTE_ADDR);
	else
		as->npages++;
	*pte = pa | bits;
	flush(as, va);
	return pa;
}

uint64_t arch_as_map_page(struct arch_as *as, uint64_t va, void *page, unsigned prot)
{
	return map_kernel_page(as, va, page, PTE_SHARED | leaf_bits(prot));
}

/* The page is shared with its file (whose reference keeps the count above one): the
 * first write to it copies it in arch_as_page, as a fork's shared page. */
uint64_t arch_as_map_page_cow(struct arch_as *as, uint64_t va, void *page, unsigned prot)
{
	return map_kernel_page(as, va, page, PTE_COW | leaf_bits(prot & ~ARCH_PROT_WRITE));
}

void arch_page_hold(void *page) { uref_get(V2P((uint64_t)(uintptr_t)page)); }
void arch_page_release(void *page) { uref_put(V2P((uint64_t)(uintptr_t)page)); }

void arch_as_unmap(struct arch_as *as, uint64_t va, uint64_t len)
{
	(void)arch_as_unmap_some(as, va, va + len < va ? ~0ull : va + len, 0);
}

/* A step over the present leaf entries of [va, end): each unmapped (unmap) or given prot.
 * At most max_pages of them, and 4 * max_pages entries or absent tables looked at (a
 * sparse range's walk is work too); max_pages 0: the whole range. Returns where the next
 * step starts (end when done). */
static uint64_t leaf_step(struct arch_as *as, uint64_t va, uint64_t end, unsigned max_pages,
			  bool unmap, unsigned prot)
{
	unsigned pages = 0, looks = 0;
	uint64_t a = va, next;
	for (; a < end && a >= va && (!max_pages || (pages < max_pages && looks < 4 * max_pages));
	     a = next) {
		looks++;
		uint64_t *pte = walk_next(as, a, &next);
		if (!pte || !has_page(*pte))
			continue;	/* (empty tables stay until destroy) */
		uint64_t e = *pte, pa = e & PTE_ADDR, cow = e & PTE_COW, sh = e & PTE_SHARED;
		if (unmap) {
			*pte = 0;
			flush(as, a);
			uref_put(pa);
			as->npages--;
		} else {
			/* a shared page stays read-only; the write fault will copy it */
			*pte = pa | cow | sh | leaf_bits(cow ? prot & ~ARCH_PROT_WRITE : prot);
			flush(as, a);
		}
		pages++;
	}
	return a < end && a >= va ? a : end;
}

uint64_t arch_as_unmap_some(struct arch_as *as, uint64_t va, uint64_t end, unsigned max_pages)
{
	return leaf_step(as, va, end, max_pages, true, 0);
}

uint64_t arch_as_protect_some(struct arch_as *as, uint64_t va, uint64_t end, unsigned prot,
			      unsigned max_pages)
{
	return leaf_step(as, va, end, max_pages, false, prot);
}

void arch_as_protect(struct arch_as *as, uint64_t va, uint64_t len, unsigned prot)
{
	(void)arch_as_protect_some(as, va, va + len < va ? ~0ull : va + len, prot, 0);
}

/* arch_as_fork's walk restricted to [lo, hi) and to a budget: the entries of table pt
 * (its first address base, level as in fork_level) whose span meets the range; a child
 * table made by an earlier call is reused. A copied page costs one of c->budget (the
 * walk then stops after it), and so do FORK_VISITS entries looked at (a sparse range's
 * empty entries are work too: the walk then stops before the entry, which is not yet
 * looked into); c->stop is where the next call resumes, every entry below it done. */
#define FORK_VISITS 32u
struct fork_cursor {
	uint64_t lo, hi, stop;
	unsigned budget, visits;
	uint64_t *npages;
};

static int fork_range_level(uint64_t *pt, uint64_t *ct, int level, uint64_t base,
			    struct fork_cursor *c)
{
	uint64_t span = 1ull << (12 + 9 * level);
	/* only the entries that meet [lo, hi): a scan of all 512 at each level was most of
	 * a short step's time */
	unsigned first = c->lo > base ? (unsigned)((c->lo - base) / span) : 0;
	uint64_t last = (c->hi - base + span - 1) / span;	/* hi > base: the caller's */
	unsigned end = last < 512 ? (unsigned)last : 512;
	for (unsigned i = first; i < end && !c->stop; i++) {
		uint64_t a = base + i * span;
		if (c->budget && ++c->visits >= FORK_VISITS && a > c->lo) {
			c->visits = 0;
			if (--c->budget == 0) {
				c->stop = a;	/* resume at this entry: the ones before it are done */
				break;
			}
		}
		uint64_t e = pt[i];
		if (!(level == 0 ? has_page(e) : (e & PTE_P)))
			continue;
		if (level == 0) {
			/* as fork_level: every private page copy-on-write in both */
			if (!(e & PTE_SHARED) && (e & (PTE_RW | PTE_COW)) != PTE_COW) {
				e = (e & ~PTE_RW) | PTE_COW;
				pt[i] = e;	/* the parent's TLB: flushed by arch_as_fork_range */
			}
			if (!uref_tryget(e & PTE_ADDR))
				return KSYNC_ENOMEM;
			ct[i] = e;
			(*c->npages)++;
			if (c->budget && --c->budget == 0)
				c->stop = a + span;
			continue;
		}
		uint64_t n;
		if (ct[i] & PTE_P) {
			n = (uint64_t)P2V(ct[i] & PTE_ADDR);
		} else {
			n = zpage();
			if (!n)
				return KSYNC_ENOMEM;
			ct[i] = V2P(n) | (e & ~PTE_ADDR);
		}
		int rc = fork_range_level((uint64_t *)P2V(e & PTE_ADDR), (uint64_t *)n, level - 1, a, c);
		if (rc)
			return rc;
	}
	return KSYNC_OK;
}

int arch_as_fork_range(struct arch_as *parent, struct arch_as *child, uint64_t lo, uint64_t hi,
		       unsigned max_pages, uint64_t *next)
{
	uint64_t *pr = (uint64_t *)parent->pml4, *cr = (uint64_t *)child->pml4;
	struct fork_cursor c = { lo, hi, 0, max_pages, 0, &child->npages };	/* 0: no budget */
	int rc = KSYNC_OK;
	unsigned first = (unsigned)(lo >> 39), end = (unsigned)((hi + (1ull << 39) - 1) >> 39);
	first = first > SLOT_MIN ? first : SLOT_MIN;
	if (end > SLOT_END)
		end = SLOT_END;
	for (unsigned i = first; i < end && rc == KSYNC_OK && !c.stop; i++) {
		uint64_t a = (uint64_t)i << 39;
		if (!(pr[i] & PTE_P))
			continue;
		uint64_t n;
		if (cr[i] & PTE_P) {
			n = (uint64_t)P2V(cr[i] & PTE_ADDR);
		} else {
			n = zpage();
			if (!n) {
				rc = KSYNC_ENOMEM;
				break;
			}
			cr[i] = V2P(n) | (pr[i] & ~PTE_ADDR);
		}
		rc = fork_range_level((uint64_t *)P2V(pr[i] & PTE_ADDR), (uint64_t *)n, 2, a, &c);
	}
	/* the pages the parent could write are read-only now: flush its TLB here, before the
	 * caller's lock is released (no CPU keeps a writable entry of them) */
	if ((read_cr3() & PTE_ADDR) == V2P(parent->pml4))
		__asm__ volatile("mov %0, %%cr3" :: "r"(V2P(parent->pml4)) : "memory");
	*next = c.stop && c.stop < hi ? c.stop : hi;
	return rc;
}

int arch_as_fork(struct arch_as *parent, struct arch_as *child)
{
	uint64_t next;
	return arch_as_fork_range(parent, child, USER_VA_MIN, USER_VA_END, 0, &next);
}

uint64_t arch_as_npages(const struct arch_as *as) { return as->npages; }

/* an IPI handler: reload the root if the space is still the one loaded here */
static void shoot_here(void *arg)
{
	struct arch_as *as = arg;
	if ((read_cr3() & PTE_ADDR) == V2P(as->pml4))
		__asm__ volatile("mov %0, %%cr3" :: "r"(V2P(as->pml4)) : "memory");
}

void arch_as_shootdown(struct arch_as *as)
{
	/* seq_cst: the caller's entry stores before the reads of the other CPUs' current
	 * spaces - a CPU that loads the space after this read reads the new entries (its
	 * CR3 write flushed the TLB), one that had it loaded is called */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* every CPU, this one too: the caller may have moved since its own flushes, onto a
	 * CPU that ran another thread of the space without reloading the same root. The
	 * calls are posted to all of them first and waited for after (one round trip, not
	 * one per CPU: under an emulator with more vCPUs than host cores each round trip
	 * can cost a host time slice - thr_pthread's mmap case at -smp 4 on 2 cores spent
	 * 1.9 s in them when they went one by one). */
	_Static_assert(MAX_CPUS <= 64, "the posted set is one word");
	uint64_t posted = 0;		/* the CPUs called */
	bool self = false;
	for (unsigned c = 0; c < arch_ncpus(); c++) {
		/* relaxed: a hint; the handler checks its own CR3 */
		struct arch_uctx *u = __atomic_load_n(&cpus[c].cur_uctx, __ATOMIC_RELAXED);
		if (!u || u->as != as)
			continue;
		if (c == arch_cpu_id()) {
			self = true;
		} else {
			arch_call_post(c, shoot_here, as);
			posted |= 1ull << c;
		}
	}
	if (self) {
		irqkey_t k = arch_irq_save();
		shoot_here(as);
		arch_irq_restore(k);
	}
	for (unsigned c = 0; posted; c++, posted >>= 1)
		if (posted & 1)
			arch_call_wait(c);
}

bool arch_as_mapped(struct arch_as *as, uint64_t va, unsigned prot)
{
	uint64_t *pte = walk(as, va & ~(PAGE_SIZE - 1), false);
	if (!pte || !(*pte & PTE_P))
		return false;
	if ((prot & ARCH_PROT_WRITE) && !(*pte & PTE_RW))
		return false;
	if ((prot & ARCH_PROT_EXEC) && (*pte & PTE_NX))
		return false;
	return true;
}

/* ---- user threads ---------------------------------------------------------------------- */
struct arch_uctx *arch_uctx_create(struct arch_as *as, void *owner)
{
	struct arch_uctx *u = kzalloc(sizeof *u);
	if (u) {
		u->as = as;
		u->owner = owner;
	}
	return u;
}

void *arch_uctx_owner(const struct arch_uctx *u) { return u->owner; }
void arch_uctx_set_start_sp(struct arch_uctx *u, uint64_t sp) { u->start.rsp = sp; }

void arch_uctx_destroy(struct arch_uctx *u)
{
	put_deferred(u);	/* a thread that ended before its shootdown: dropped now */
	kfree(u);
}
struct arch_as *arch_uctx_as(const struct arch_uctx *u) { return u->as; }

/* Switch to the root whose direct-map (or, for boot_pml4, image) address is root. */
static void load_cr3(uint64_t root)
{
	uint64_t pa = V2P(root);
	if ((read_cr3() & PTE_ADDR) != pa)
		__asm__ volatile("mov %0, %%cr3" :: "r"(pa) : "memory");
}

void arch_uctx_set_as(struct arch_uctx *u, struct arch_as *as)
{
	irqkey_t k = arch_irq_save();
	u->as = as;
	if (kcpu_this_uctx() == u)
		load_cr3(as ? as->pml4 : (uint64_t)boot_pml4);
	arch_irq_restore(k);
}

void arch_uctx_start_exec(struct arch_uctx *u, uint64_t entry, uint64_t sp)
{
	arch_uregs_exec(&u->start, entry, sp);
}

void arch_uctx_start_fork(struct arch_uctx *u, const struct trapframe *parent)
{
	u->start = *parent;
	u->start.rax = 0;		/* fork's result in the child */
	u->start.vector = 0x100;
	u->start.error = 0;
}

void arch_uctx_switch(struct arch_uctx *prev, struct arch_uctx *next)
{
	(void)prev;	/* nothing to save: FS base changes only through arch_prctl */
	/* relaxed: arch_as_shootdown reads it as a hint */
	__atomic_store_n(&this_cpu()->cur_uctx, next, __ATOMIC_RELAXED);
	if (!next) {
		/* a kernel thread runs on the kernel's root, so a dying space is loaded nowhere */
		load_cr3((uint64_t)boot_pml4);
		return;
	}
	load_cr3(next->as ? next->as->pml4 : (uint64_t)boot_pml4);
	wrmsr(MSR_FS_BASE, next->fsbase);
	struct cpu *c = this_cpu();
	if (next->kstack_top) {
		c->kstack_sys = next->kstack_top;
		c->tss.rsp[0] = next->kstack_top;
	}
}

void arch_user_enter(struct arch_uctx *u)
{
	arch_irq_disable();
	/* the kernel stack from here down serves every entry from ring 3; what is above
	 * (this call's callers) is abandoned */
	uint64_t top = ALIGN_DOWN((uint64_t)__builtin_frame_address(0), 16) - 64;
	u->kstack_top = top;
	struct cpu *c = this_cpu();
	c->kstack_sys = top;
	c->tss.rsp[0] = top;
	load_cr3(u->as->pml4);
	wrmsr(MSR_FS_BASE, u->fsbase);
	uentry_iret(top, &u->start);
	__builtin_unreachable();
}

bool arch_uctx_set_fs(struct arch_uctx *u, uint64_t base)
{
	if (base >= USER_VA_END)
		return false;
	irqkey_t k = arch_irq_save();
	u->fsbase = base;
	if (kcpu_this_uctx() == u)
		wrmsr(MSR_FS_BASE, base);
	arch_irq_restore(k);
	return true;
}

uint64_t arch_uctx_get_fs(const struct arch_uctx *u) { return u->fsbase; }

/* ---- the system-call frame ---------------------------------------------------------------- */
uint64_t arch_sys_nr(const struct trapframe *tf) { return tf->rax; }

KERNEL_HOT uint64_t arch_sys_args(const struct trapframe *tf, uint64_t a[6])
{
	a[0] = tf->rdi;
	a[1] = tf->rsi;
	a[2] = tf->rdx;
	a[3] = tf->r10;
	a[4] = tf->r8;
	a[5] = tf->r9;
	return tf->rax;
}

void arch_uregs_exec(struct trapframe *tf, uint64_t entry, uint64_t sp)
{
	memset(tf, 0, sizeof *tf);
	tf->vector = 0x100;
	tf->rip = entry;
	tf->cs = USER_CS;
	tf->rflags = RFLAGS_IF | 0x2;
	tf->rsp = sp;
	tf->ss = USER_SS;
}

uint64_t arch_uregs_ip(const struct trapframe *tf) { return tf->rip; }

/* ---- signal frames (kernel/proc/signal.c; arch_if.h) ------------------------------------
 * Linux's arch/x86/kernel/signal_64.c: the sigcontext holds every general register, rip,
 * eflags and the selectors; restore_sigcontext keeps cs/ss user and takes only the flags
 * FIX_EFLAGS names. A frame restored from user memory leaves by iretq (vector
 * UENTRY_VEC_SIGRETURN: uentry.S's sysret path takes only UENTRY_VEC_SYSCALL frames),
 * since sysret would clobber rcx and r11. */
#include "syscall/linux_abi.h"
#define UENTRY_VEC_SYSCALL 0x100
#define UENTRY_VEC_SIGRETURN 0x101
/* AC OF DF TF SF ZF AF PF CF RF: what user space may set (Linux's FIX_EFLAGS) */
#define FIX_EFLAGS (0x40000ull | 0x800 | 0x400 | 0x100 | 0x80 | 0x40 | 0x10 | 0x4 | 0x1 | 0x10000)

void arch_uregs_to_sigcontext(const struct trapframe *tf, uint64_t fault_addr,
			      struct lx_sigcontext *sc)
{
	memset(sc, 0, sizeof *sc);
	sc->r8 = tf->r8; sc->r9 = tf->r9; sc->r10 = tf->r10; sc->r11 = tf->r11;
	sc->r12 = tf->r12; sc->r13 = tf->r13; sc->r14 = tf->r14; sc->r15 = tf->r15;
	sc->rdi = tf->rdi; sc->rsi = tf->rsi; sc->rbp = tf->rbp; sc->rbx = tf->rbx;
	sc->rdx = tf->rdx; sc->rax = tf->rax; sc->rcx = tf->rcx; sc->rsp = tf->rsp;
	sc->rip = tf->rip;
	sc->eflags = tf->rflags;
	sc->cs = (uint16_t)tf->cs;
	sc->ss = (uint16_t)tf->ss;
	if (tf->vector < 32) {
		sc->trapno = tf->vector;
		sc->err = tf->error;
		if (tf->vector == 14) {
			sc->cr2 = fault_addr;
			/* as Linux tells user space: below user space (ksync's low kernel map)
			 * nothing is mapped for it; above, every access is a protection
			 * fault (Linux hides its kernel page-table layout the same way) */
			if (fault_addr < USER_VA_MIN)
				sc->err &= ~1ull;
			else if (fault_addr >= USER_VA_END)
				sc->err |= 1;
		}
	}
}

bool arch_uregs_from_sigcontext(struct trapframe *tf, const struct lx_sigcontext *sc)
{
	if (sc->rip >= USER_VA_END)
		return false;	/* iretq to a non-canonical rip would fault in ring 0 */
	tf->r8 = sc->r8; tf->r9 = sc->r9; tf->r10 = sc->r10; tf->r11 = sc->r11;
	tf->r12 = sc->r12; tf->r13 = sc->r13; tf->r14 = sc->r14; tf->r15 = sc->r15;
	tf->rdi = sc->rdi; tf->rsi = sc->rsi; tf->rbp = sc->rbp; tf->rbx = sc->rbx;
	tf->rdx = sc->rdx; tf->rax = sc->rax; tf->rcx = sc->rcx; tf->rsp = sc->rsp;
	tf->rip = sc->rip;
	tf->rflags = (tf->rflags & ~FIX_EFLAGS) | (sc->eflags & FIX_EFLAGS) | RFLAGS_IF | 0x2;
	tf->cs = USER_CS;
	tf->ss = USER_SS;
	tf->vector = UENTRY_VEC_SIGRETURN;
	tf->error = 0;
	return true;
}

uint64_t arch_uregs_sp(const struct trapframe *tf) { return tf->rsp; }

int arch_uregs_trapno(const struct trapframe *tf) { return tf->vector < 32 ? (int)tf->vector : -1; }

void arch_uregs_call(struct trapframe *tf, uint64_t ip, uint64_t sp, uint64_t a0,
		     uint64_t a1, uint64_t a2)
{
	tf->rip = ip;
	tf->rsp = sp;
	tf->rdi = a0;
	tf->rsi = a1;
	tf->rdx = a2;
	tf->rax = 0;	/* Linux: for handlers declared without a prototype */
	tf->rflags &= ~(0x400ull | 0x100 | 0x10000);	/* DF, TF, RF */
	tf->cs = USER_CS;
	tf->ss = USER_SS;
}

KERNEL_HOT uint64_t arch_sys_result(const struct trapframe *tf) { return tf->rax; }
KERNEL_HOT void arch_sys_set_result(struct trapframe *tf, long v) { tf->rax = (uint64_t)v; }

void arch_sys_restart(struct trapframe *tf, uint64_t nr)
{
	tf->rip -= 2;	/* `syscall` is 0f 05 */
	tf->rax = nr;
}

/* fxsave/fxrstor of the live registers: the thread's FP state is switched eagerly
 * (switch.S), so in its own thread context they are the user's; a preemption between
 * this and the return to ring 3 saves and restores what is loaded. The kernel itself
 * is built without SSE/x87 code (-mgeneral-regs-only). */
void arch_fpu_store(void *fx512)
{
	uint8_t buf[512 + 16];
	uint8_t *a = (uint8_t *)ALIGN_UP((uintptr_t)buf, 16);
	__asm__ volatile("fxsave64 (%0)" :: "r"(a) : "memory");
	memcpy(fx512, a, 512);
	memset((uint8_t *)fx512 + 464, 0, 48);	/* sw_reserved: a plain fxsave frame */
}

void arch_fpu_load(const void *fx512)
{
	uint8_t buf[512 + 16], cur[512 + 16];
	uint8_t *a = (uint8_t *)ALIGN_UP((uintptr_t)buf, 16);
	uint8_t *c = (uint8_t *)ALIGN_UP((uintptr_t)cur, 16);
	__asm__ volatile("fxsave64 (%0)" :: "r"(c) : "memory");
	uint32_t mask;
	memcpy(&mask, c + 28, 4);	/* MXCSR_MASK; 0 means the default 0xffbf */
	if (!mask)
		mask = 0xffbf;
	if (fx512) {
		memcpy(a, fx512, 512);
	} else {
		memset(a, 0, 512);
		uint16_t fcw = 0x37f;	/* fninit's control word */
		memcpy(a, &fcw, 2);
		uint32_t m = 0x1f80;
		memcpy(a + 24, &m, 4);
	}
	uint32_t mx;
	memcpy(&mx, a + 24, 4);
	mx &= mask;			/* a reserved MXCSR bit would #GP in fxrstor */
	memcpy(a + 24, &mx, 4);
	__asm__ volatile("fxrstor64 (%0)" :: "r"(a) : "memory");
}

/* uentry.S: the C half of a system call, IRQs on, on the thread's kernel stack */
void syscall_entry_c(struct trapframe *tf);
/* A copy-on-write break by a user copy of the kernel's (a system call, a signal frame)
 * shot down before the thread returns to ring 3; thread context, IRQs on. */
KERNEL_HOT void uvm_shoot_pending(void)
{
	struct arch_uctx *u = kcpu_this_uctx();
	if (!u)
		return;
	if (u->shoot) {
		u->shoot = false;
		arch_as_shootdown(u->as);
	}
	if (u->ndeferred)
		put_deferred(u);
}

KERNEL_HOT void syscall_entry_c(struct trapframe *tf)
{
	tf->rax = (uint64_t)kernel_syscall(tf);
	uvm_shoot_pending();
}

/* ---- user copies --------------------------------------------------------------------------- */
static bool user_range(uint64_t a, size_t n)
{
	return a >= USER_VA_MIN && a <= USER_VA_END && n <= USER_VA_END - a;
}

KERNEL_HOT long copy_from_user(void *dst, const void *usrc, size_t n)
{
	if (!user_range((uint64_t)usrc, n))
		return -14;
	return uaccess_copy(dst, usrc, n) ? -14 : 0;
}

KERNEL_HOT long copy_to_user(void *udst, const void *src, size_t n)
{
	if (!user_range((uint64_t)udst, n))
		return -14;
	return uaccess_copy(udst, src, n) ? -14 : 0;
}

long strncpy_from_user(char *dst, const char *usrc, size_t n)
{
	uint64_t a = (uint64_t)usrc;
	if (a < USER_VA_MIN || a >= USER_VA_END)
		return -14;
	if (n > USER_VA_END - a)
		n = USER_VA_END - a;
	long r = uaccess_strncpy(dst, usrc, n);
	if (r < 0)
		return -14;
	if ((size_t)r == n)
		return -36;
	return r;
}

/* ---- faults ------------------------------------------------------------------------------- */
static uint64_t extable_fixup(uint64_t rip)
{
	for (const uint64_t *e = __ex_table_start; e < __ex_table_end; e += 2)
		if (e[0] == rip)
			return e[1];
	return 0;
}

static __attribute__((noreturn)) void uvm_user_trap(int sig, uint64_t addr);

static int signal_of(unsigned v)
{
	switch (v) {
	case 0: case 16: case 19: return 8;	/* SIGFPE */
	case 6: return 4;			/* SIGILL */
	case 1: case 3: return 5;		/* SIGTRAP */
	case 17: return 7;			/* SIGBUS */
	default: return 11;			/* SIGSEGV */
	}
}

/* trap.c, for every exception before it panics: true when the exception was the user
 * space's and is dealt with (resolved, fixed up, or the thread redirected to its kill). */
/* Where uvm_trap sends a ring-3 thread whose fault broke a copy-on-write page that
 * other CPUs may cache: on the thread's kernel stack, IRQs off; the user frame is its
 * uctx's fault_tf (the faulting instruction, run again after the shootdown). */
static __attribute__((noreturn, used)) void uvm_user_shoot(void)
{
	struct arch_uctx *u = kcpu_this_uctx();	/* this thread's, wherever it runs */
	arch_irq_enable();
	if (u->shoot) {
		u->shoot = false;
		arch_as_shootdown(u->as);
	}
	put_deferred(u);
	arch_irq_disable();
	uentry_iret(u->kstack_top, &u->fault_tf);	/* copied below the top, iretq */
	__builtin_unreachable();
}

/* The resolved fault's frame returns into uvm_user_shoot (as uvm_trap does for
 * uvm_user_trap below) when another CPU runs the space; else the flag just clears. */
static bool divert_shoot(struct trapframe *tf)
{
	struct arch_uctx *u = kcpu_this_uctx();
	bool elsewhere = false;
	unsigned me = arch_cpu_id();
	for (unsigned c = 0; c < arch_ncpus() && !elsewhere; c++) {
		/* relaxed: a hint; a CPU that loads the space later reads the new entry */
		struct arch_uctx *o = __atomic_load_n(&cpus[c].cur_uctx, __ATOMIC_RELAXED);
		elsewhere = c != me && o && o->as == u->as;
	}
	if (!elsewhere) {
		u->shoot = false;	/* a CPU that loads the space later starts with no entry */
		put_deferred(u);
		return true;
	}
	struct cpu *c = this_cpu();
	u->fault_tf = *tf;
	tf->rip = (uint64_t)uvm_user_shoot;
	tf->cs = 0x08;
	tf->ss = 0x10;
	tf->rsp = c->kstack_sys - 8;
	tf->rflags = 0x2;		/* IRQs off; uvm_user_shoot enables them */
	tf->rbp = 0;
	return true;
}

bool uvm_trap(struct trapframe *tf, unsigned v)
{
	bool user = (tf->cs & 3) != 0, oom = false, bus = false;
	if (v == 2 || v == 8 || v == 18)
		return false;			/* NMI, #DF, #MC: the machine's */
	if (v == 14) {
		uint64_t cr2 = read_cr2();
		bool in_user = cr2 >= USER_VA_MIN && cr2 < USER_VA_END;
		/* RSVD set means a broken table, never the process's fault to resolve */
		if (in_user && !(tf->error & 8) && kcpu_this_uctx()) {
			int fr = kernel_user_fault(cr2, tf->error & 2, tf->error & 16, user);
			if (fr == 0 && user && kcpu_this_uctx()->shoot)
				return divert_shoot(tf);
			if (fr == 0)
				return true;
			oom = fr == KERNEL_FAULT_OOM;
			bus = fr == KERNEL_FAULT_BUS;
		}
		if (!user) {
			uint64_t fix = extable_fixup(tf->rip);
			if (!fix)
				return false;	/* a kernel bug: panic */
			tf->rip = fix;
			return true;
		}
	} else if (!user) {
		return false;
	}
	/* ring 3 cannot go on by itself: the kernel sends it a signal. This frame may be
	 * on the #PF IST stack, which must not sleep or switch, and the trap path's own
	 * calls run just below it: the user frame is kept in the thread's uctx, and this
	 * frame returns into uvm_user_trap at the top of the thread's kernel stack (as
	 * after a call: rsp + 8 16-byte aligned), which calls the kernel with IRQs on
	 * and leaves through the kept frame. */
	struct cpu *c = this_cpu();
	struct arch_uctx *u = kcpu_this_uctx();
	u->fault_tf = *tf;
	tf->rdi = oom ? 9 /* SIGKILL: kernel_user_trap's out-of-memory kill */
		  : bus ? 7 /* SIGBUS: past a mapped file's end */ : (uint64_t)signal_of(v);
	tf->rsi = v == 14 ? read_cr2() : tf->rip;
	tf->rip = (uint64_t)uvm_user_trap;
	tf->cs = 0x08;
	tf->ss = 0x10;
	tf->rsp = c->kstack_sys - 8;
	tf->rflags = 0x2;		/* IRQs off; uvm_user_trap enables them */
	tf->rbp = 0;
	return true;
}

/* Where uvm_trap sends a ring-3 thread whose exception it could not resolve: on the
 * thread's kernel stack, IRQs off; the user frame is its uctx's fault_tf. */
static __attribute__((noreturn, used)) void uvm_user_trap(int sig, uint64_t addr)
{
	struct arch_uctx *u = kcpu_this_uctx();	/* this thread's, wherever it runs */
	struct trapframe ut = u->fault_tf;
	arch_irq_enable();
	kernel_user_trap(&ut, sig, addr);	/* may end the process */
	uvm_shoot_pending();	/* the signal frame's copy may have broken a shared page */
	arch_irq_disable();
	u->fault_tf = ut;
	uentry_iret(u->kstack_top, &u->fault_tf);	/* copied below the top, iretq */
	__builtin_unreachable();
}
