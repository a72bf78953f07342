/*
 * futex.c - Linux futexes for user threads (issue 25; docs/userspace.md "Threads and
 * futexes"): FUTEX_WAIT, FUTEX_WAKE, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET,
 * FUTEX_REQUEUE, FUTEX_CMP_REQUEUE, FUTEX_WAKE_OP and their _PRIVATE forms; the robust
 * list walked at a thread's end and CLONE_CHILD_CLEARTID's wake. The PI operations answer
 * ENOSYS (docs/userspace.md says why).
 *
 * A futex is a 32-bit word of user memory; the kernel keeps only the waiters. A waiter is
 * keyed by (address space, user address): ksync has no memory shared between address
 * spaces (fork copies, MAP_SHARED of anonymous memory is private), so a "shared" futex
 * is the same key as a private one. Waiters hang in a hash of FUTEX_BUCKETS buckets; each
 * bucket is a master lock of the lock class "futex-bucket" (Hartman & Ousterhout, Sprite
 * section 2: every shared structure behind a named lock whose statistics - hits, misses,
 * spin time - the lock_stat table shows per class; a hot futex shows up as contention on
 * this class, as Sprite's per-lock-type figures showed its hot monitors).
 *
 * The sleep (Hohmuth & Haertig's condition flags, thread.h): a waiter reads the user word
 * and queues itself in ONE section of its bucket's lock (word_read_locked: the page is
 * found, or faulted in, under mm's lock inside it), and sleeps with PROC_COND_FUTEX until a
 * waker took it off the queue (woken set) - a wakeup between the unlock and the sleep
 * leaves the flag set, so none is lost. The word's writer (the user's atomic instruction,
 * then FUTEX_WAKE, whose scan takes the same lock) either scanned before that section -
 * its store happens-before the unlock the waiter's lock acquires, so the waiter reads the
 * new value (EAGAIN) - or after it, and finds the waiter. As on Linux, a waiter another
 * thread can see queued (FUTEX_REQUEUE's count) has passed its check: it was queued
 * first and read the word afterwards until t/thr_futex's wakeop case showed the
 * difference once in a make test (-smp 2, locked scheduler): a waiter counted queued read
 * the word after the wake-op's add, left the queue before the wake-op's scan and answered
 * EAGAIN, so the wake-op woke 1 where Linux wakes 2.
 *
 * Timeouts: a timed wait sleeps with the scheduler's timer (kernel/sched/timer.c,
 * sched_sleep_until): the clock tick at or after the deadline wakes it (1 ms resolution at
 * SCHED_HZ), as a FUTEX_WAKE or a signal does.
 *
 * Shared state: the buckets (each its own lock, below); a waiter's fields say which lock
 * guards them. Everything else is the calling thread's.
 */
#include "kernel.h"
#include "proc.h"
#include "thread.h"
#include "mlock.h"
#include "syscall/linux_abi.h"

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_FD 2
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_LOCK_PI 6
#define FUTEX_UNLOCK_PI 7
#define FUTEX_TRYLOCK_PI 8
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_WAIT_REQUEUE_PI 11
#define FUTEX_CMP_REQUEUE_PI 12
#define FUTEX_LOCK_PI2 13
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_BITSET_MATCH_ANY 0xffffffffu
#define FUTEX_WAITERS 0x80000000u
#define FUTEX_OWNER_DIED 0x40000000u
#define FUTEX_TID_MASK 0x3fffffffu
#define ROBUST_LIST_LIMIT 2048	/* Linux's: a list longer (or a cycle) is not walked further */

#define FUTEX_BUCKETS 64

LOCK_CLASS(futex_bucket_class, "futex-bucket", LOCK_MASTER, LOCK_DATA);

struct futex_waiter {
	struct futex_waiter *next;	/* its bucket's lock */
	struct mm *mm;			/* the key: its bucket's lock (requeue changes it */
	uint64_t uaddr;			/*   holding the old and the new bucket's locks) */
	unsigned bucket;		/* the bucket it is queued on: as the key */
	uint32_t bitset;		/* constant while queued */
	struct thread *t;		/* constant: the waiting thread */
	/* 1 once a waker took it off its queue: stored (release) under the bucket lock;
	 * the waiter loads it (acquire) without the lock - after that it owns the struct
	 * again (it lives on the waiter's stack) and the waker touches it no more */
	int woken;
};

struct futex_bucket {
	struct mlock lock;		/* class futex-bucket; a master lock in the scheme's critical section, short */
	struct futex_waiter *head;	/* lock: FIFO, the oldest first */
};
static struct futex_bucket buckets[FUTEX_BUCKETS];	/* each its own lock */
static bool futex_ready;	/* set once by futex_init before any process runs */

void futex_init(void)
{
	for (unsigned i = 0; i < FUTEX_BUCKETS; i++)
		mlock_init(&buckets[i].lock, &futex_bucket_class, MLOCK_TICKET);
	futex_ready = true;
}

/* ktime_ns's clock (syscall.c: the TSC since boot in ns), computed here the same way so
 * that this file takes nothing from kernel/syscall (tests/test_layout.py: no circle) */
static uint64_t now_ns(void)
{
	uint64_t c = arch_cycles(), hz = arch_tsc_hz();
	return c / hz * 1000000000ull + c % hz * 1000000000ull / hz;
}

static unsigned hash_of(struct mm *mm, uint64_t uaddr)
{
	uint64_t h = ((uint64_t)(uintptr_t)mm >> 6) ^ (uaddr >> 2);
	h *= 0x9e3779b97f4a7c15ull;
	return (unsigned)(h >> 58) % FUTEX_BUCKETS;
}

/* ---- the queue ----------------------------------------------------------------------- */
static void queue_locked(struct futex_bucket *b, struct futex_waiter *w)
{
	struct futex_waiter **pp = &b->head;
	while (*pp)
		pp = &(*pp)->next;
	w->next = NULL;
	*pp = w;
}

static bool unlink_locked(struct futex_bucket *b, struct futex_waiter *w)
{
	for (struct futex_waiter **pp = &b->head; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			return true;
		}
	return false;
}

/* The waiter leaves its queue (a timeout, a signal, a changed word). true: it was
 * still queued; false: a waker took it first (it counts as woken). */
static bool unqueue(struct futex_waiter *w)
{
	for (;;) {
		/* relaxed: a hint which lock to take; re-checked under it (requeue moves a
		 * waiter only while holding both buckets' locks) */
		unsigned bi = __atomic_load_n(&w->bucket, __ATOMIC_RELAXED);
		struct futex_bucket *b = &buckets[bi];
		mlock_lock(&b->lock);
		if (w->bucket != bi) {
			mlock_unlock(&b->lock);
			continue;
		}
		bool was = !w->woken && unlink_locked(b, w);
		mlock_unlock(&b->lock);
		return was;
	}
}

/* Take up to n waiters of (mm, uaddr) whose bitset meets bits off b (locked) into
 * out[] (their threads, to wake after the unlock); the count. */
static int take_locked(struct futex_bucket *b, struct mm *mm, uint64_t uaddr, int n,
		       uint32_t bits, struct thread **out)
{
	int got = 0;
	struct futex_waiter **pp = &b->head;
	while (*pp && got < n) {
		struct futex_waiter *w = *pp;
		if (w->mm != mm || w->uaddr != uaddr || !(w->bitset & bits)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		out[got++] = w->t;
		/* release: the unlink happens-before the waiter's return (it reuses the
		 * struct's stack); the waker reads nothing of w after this */
		__atomic_store_n(&w->woken, 1, __ATOMIC_RELEASE);
	}
	return got;
}

long futex_wake(struct mm *mm, uint64_t uaddr, int n, uint32_t bits)
{
	if (!futex_ready || n <= 0)
		return 0;
	struct futex_bucket *b = &buckets[hash_of(mm, uaddr)];
	struct thread *t[PROC_MAX];	/* every waiter is a thread of the table */
	mlock_lock(&b->lock);
	int got = take_locked(b, mm, uaddr, n < PROC_MAX ? n : PROC_MAX, bits, t);
	mlock_unlock(&b->lock);
	for (int i = 0; i < got; i++)
		sched_wakeup(t[i], PROC_COND_FUTEX);
	return got;
}

/* ---- user words ------------------------------------------------------------------------ */
static bool uaddr_ok(uint64_t a) { return a >= USER_VA_MIN && a + 4 <= USER_VA_END && a + 4 > a; }

/* The word at uaddr as a kernel pointer (the direct map of its page), mm's lock held by
 * the caller: its area must allow `need` (ARCH_PROT_READ or ARCH_PROT_WRITE); the page is
 * found or faulted in as the fault path does (made private for a write). NULL: no such
 * area, or no page left (EFAULT). */
static uint32_t *word_at(struct mm *mm, uint64_t uaddr, unsigned need)
{
	struct vma *v = mm->vmas;
	while (v && !(v->start <= uaddr && uaddr < v->end))
		v = v->next;
	uint64_t pa = v && (v->prot & need) ?
		arch_as_page(mm->as, uaddr, v->prot, need == ARCH_PROT_WRITE) : 0;
	return pa ? (uint32_t *)(uintptr_t)(P2V(pa & ~4095ull) + (uaddr & 4095)) : NULL;
}

/* The word at uaddr, with mm's lock held so that the page stays (munmap and the fault
 * path take it): for an atomic read-modify-write, as the user's own locked instructions
 * do it. NULL (nothing held) when the word is not in a writable area or no page is left:
 * EFAULT. */
static uint32_t *word_lock(struct mm *mm, uint64_t uaddr)
{
	if (!uaddr_ok(uaddr))
		return NULL;
	mlock_lock(&mm->lock);
	uint32_t *w = word_at(mm, uaddr, ARCH_PROT_WRITE);
	if (!w)
		mlock_unlock(&mm->lock);
	return w;
}

/* The word at uaddr, read while the caller holds a bucket's lock (Linux's
 * get_futex_value_locked), under mm's lock (order: bucket, then mm; nothing takes a
 * bucket while holding mm's lock). A word in no readable area: -EFAULT. */
static long word_read_locked(struct mm *mm, uint64_t uaddr, uint32_t *out)
{
	mlock_lock(&mm->lock);
	uint32_t *w = word_at(mm, uaddr, ARCH_PROT_READ);
	if (w)	/* relaxed: the bucket's lock orders it against the waker's scan (top) */
		*out = __atomic_load_n(w, __ATOMIC_RELAXED);
	mlock_unlock(&mm->lock);
	return w ? 0 : -LX_EFAULT;
}

/* ---- the calls ------------------------------------------------------------------------- */
struct fkey {
	struct mm *mm;
	uint64_t uaddr;
};

/* Linux's get_futex_key: a misaligned address is EINVAL; an address outside user space
 * EFAULT; a shared futex must be mapped (a private one is not looked up). */
static long key_of(struct process *p, uint64_t uaddr, bool private, struct fkey *key)
{
	if (uaddr & 3)
		return -LX_EINVAL;
	if (!uaddr_ok(uaddr))
		return -LX_EFAULT;
	if (!private) {
		uint32_t v;
		if (copy_from_user(&v, (const void *)uaddr, 4))
			return -LX_EFAULT;
	}
	key->mm = p->mm;
	key->uaddr = uaddr;
	return 0;
}

/* FUTEX_WAIT(_BITSET): deadline_ns is on ktime_ns's clock (0: none) */
static long futex_wait(struct process *p, uint64_t uaddr, bool private, uint32_t val,
		       uint64_t deadline_ns, uint32_t bitset)
{
	struct fkey key;
	long rc = key_of(p, uaddr, private, &key);
	if (rc)
		return rc;
	struct futex_waiter w = { .mm = key.mm, .uaddr = uaddr, .bitset = bitset,
				  .t = thread_self(), .woken = 0 };
	w.bucket = hash_of(key.mm, uaddr);
	struct futex_bucket *b = &buckets[w.bucket];
	/* the word read and the waiter queued in one section of the bucket's lock (top) */
	uint32_t cur = 0;
	mlock_lock(&b->lock);
	rc = word_read_locked(key.mm, uaddr, &cur);
	if (!rc && cur == val)
		queue_locked(b, &w);
	mlock_unlock(&b->lock);
	if (rc)
		return rc;
	if (cur != val)
		return -LX_EAGAIN;
	for (;;) {
		/* acquire: pairs with take_locked's release */
		if (__atomic_load_n(&w.woken, __ATOMIC_ACQUIRE))
			return 0;
		if (deadline_ns && now_ns() >= deadline_ns) {
			if (!unqueue(&w))
				return 0;
			return -LX_ETIMEDOUT;
		}
		if (proc_sig_any_acts(p)) {
			if (!unqueue(&w))
				return 0;
			/* Linux: an untimed wait is made again after a SA_RESTART handler
			 * (ERESTARTSYS); a timed one answers EINTR after any handler
			 * (ERESTART_RESTARTBLOCK) and, without one, is made again (with its
			 * whole relative timeout here: Linux's restart block keeps the
			 * deadline - a known difference) */
			return deadline_ns ? -LX_ERESTART_RESTARTBLOCK : -LX_ERESTARTSYS;
		}
		sched_sleep_until(PROC_COND_FUTEX | PROC_COND_SIG,
				  deadline_ns ? sched_tsc_of_ns(deadline_ns) : 0);
	}
}


/* The keys of the two words a requeue or a wake-op names (each checked as key_of). */
static long keys_of(struct process *p, uint64_t uaddr, uint64_t uaddr2, bool private,
		    struct fkey *k1, struct fkey *k2)
{
	long rc = key_of(p, uaddr, private, k1);
	return rc ? rc : key_of(p, uaddr2, private, k2);
}

/* FUTEX_REQUEUE / FUTEX_CMP_REQUEUE: wake nwake waiters of uaddr, move up to nreq of
 * the rest to uaddr2; woken + moved. (Every waiter is a thread of the table: at most
 * PROC_MAX of them, so one pass takes them all.) */
static long futex_requeue(struct process *p, uint64_t uaddr, uint64_t uaddr2, bool private,
			  int nwake, int nreq, bool cmp, uint32_t val3)
{
	if (nwake < 0 || nreq < 0)
		return -LX_EINVAL;
	struct fkey k1, k2;
	long rc = keys_of(p, uaddr, uaddr2, private, &k1, &k2);
	if (rc)
		return rc;
	uint32_t cur = 0;
	if (cmp && copy_from_user(&cur, (const void *)uaddr, 4))
		return -LX_EFAULT;
	unsigned i1 = hash_of(k1.mm, uaddr), i2 = hash_of(k2.mm, uaddr2);
	struct futex_bucket *b1 = &buckets[i1], *b2 = &buckets[i2];
	/* the two locks in index order (one when they are the same bucket) */
	struct futex_bucket *lo = i1 <= i2 ? b1 : b2, *hi = i1 <= i2 ? b2 : b1;
	struct thread *t[PROC_MAX];
	mlock_lock(&lo->lock);
	if (hi != lo)
		mlock_lock(&hi->lock);
	/* Linux reads the word with both locks held; the read may fault, so here it is read
	 * before them: a waiter that queued in between read the word after queueing and
	 * compared it itself, so the answer is for the state the caller saw */
	int got = 0;
	long moved = 0;
	if (!cmp || cur == val3) {
		got = take_locked(b1, k1.mm, uaddr, nwake < PROC_MAX ? nwake : PROC_MAX,
				  FUTEX_BITSET_MATCH_ANY, t);
		struct futex_waiter **pp = &b1->head;
		while (*pp && moved < nreq) {
			struct futex_waiter *w = *pp;
			if (w->mm != k1.mm || w->uaddr != uaddr) {
				pp = &w->next;
				continue;
			}
			moved++;
			if (b1 == b2) {	/* the same bucket: only the key changes */
				w->mm = k2.mm;
				w->uaddr = uaddr2;
				pp = &w->next;
				continue;
			}
			*pp = w->next;
			w->mm = k2.mm;
			w->uaddr = uaddr2;
			/* relaxed: unqueue re-checks it under the new bucket's lock, and both
			 * buckets' locks are held here */
			__atomic_store_n(&w->bucket, i2, __ATOMIC_RELAXED);
			queue_locked(b2, w);
		}
	}
	if (hi != lo)
		mlock_unlock(&hi->lock);
	mlock_unlock(&lo->lock);
	if (cmp && cur != val3)
		return -LX_EAGAIN;
	for (int i = 0; i < got; i++)
		sched_wakeup(t[i], PROC_COND_FUTEX);
	return got + moved;
}

/* FUTEX_WAKE_OP: *uaddr2 = *uaddr2 OP oparg atomically (its old value kept), wake n
 * waiters of uaddr and, if (old CMP cmparg), n2 of uaddr2. */
static long futex_wake_op(struct process *p, uint64_t uaddr, uint64_t uaddr2, bool private,
			  int n, int n2, uint32_t enc)
{
	struct fkey k1, k2;
	long rc = keys_of(p, uaddr, uaddr2, private, &k1, &k2);
	if (rc)
		return rc;
	unsigned op = (enc >> 28) & 7, cmpop = (enc >> 24) & 15;
	int oparg = (int)((enc >> 12) & 0xfff), cmparg = (int)(enc & 0xfff);
	if (oparg & 0x800)
		oparg -= 0x1000;	/* sign_extend32(..., 11) */
	if (cmparg & 0x800)
		cmparg -= 0x1000;
	if (enc & (8u << 28))
		oparg = (int)(1u << (oparg & 31));	/* FUTEX_OP_OPARG_SHIFT */
	if (op > 4)
		return -LX_ENOSYS;	/* before the word is touched */
	uint32_t *w = word_lock(k2.mm, uaddr2);
	if (!w)
		return -LX_EFAULT;
	uint32_t old;
	/* seq_cst: the user's own atomics on the word are locked instructions (full
	 * barriers): the kernel's step is one of them */
	switch (op) {
	case 0: old = __atomic_exchange_n(w, (uint32_t)oparg, __ATOMIC_SEQ_CST); break;
	case 1: old = __atomic_fetch_add(w, (uint32_t)oparg, __ATOMIC_SEQ_CST); break;
	case 2: old = __atomic_fetch_or(w, (uint32_t)oparg, __ATOMIC_SEQ_CST); break;
	case 3: old = __atomic_fetch_and(w, ~(uint32_t)oparg, __ATOMIC_SEQ_CST); break;
	default: old = __atomic_fetch_xor(w, (uint32_t)oparg, __ATOMIC_SEQ_CST); break;
	}
	mlock_unlock(&k2.mm->lock);
	int o = (int)old;
	bool c;
	if (cmpop > 5)
		return -LX_ENOSYS;	/* Linux: after the operation was done */
	switch (cmpop) {
	case 0: c = o == cmparg; break;
	case 1: c = o != cmparg; break;
	case 2: c = o < cmparg; break;
	case 3: c = o <= cmparg; break;
	case 4: c = o > cmparg; break;
	default: c = o >= cmparg; break;
	}
	/* Linux's loops count a wake before they compare with the number: 0 or less wakes
	 * one */
	long woke = futex_wake(k1.mm, uaddr, n > 0 ? n : 1, FUTEX_BITSET_MATCH_ANY);
	if (c)
		woke += futex_wake(k2.mm, uaddr2, n2 > 0 ? n2 : 1, FUTEX_BITSET_MATCH_ANY);
	return woke;
}

/* A timeout argument into a deadline on ktime_ns's clock (0: none). Relative for
 * FUTEX_WAIT; absolute on CLOCK_MONOTONIC (or CLOCK_REALTIME: realtime_base_ns, the boot
 * epoch, plus it) for FUTEX_WAIT_BITSET. */
static long deadline_of(uint64_t utime, bool absolute, bool realtime, uint64_t realtime_base_ns,
			uint64_t *out)
{
	*out = 0;
	if (!utime)
		return 0;
	struct lx_timespec ts;
	if (copy_from_user(&ts, (const void *)utime, sizeof ts))
		return -LX_EFAULT;
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000)
		return -LX_EINVAL;
	uint64_t want = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t now = now_ns();
	if (!absolute) {
		*out = now + want;
		return 0;
	}
	/* the clock's "now": CLOCK_MONOTONIC is ktime_ns; CLOCK_REALTIME the boot epoch
	 * plus it (syscall.c's clock_read). A deadline passed already: now (the word is
	 * compared first, then ETIMEDOUT, as Linux's expired timer) */
	uint64_t cnow = realtime ? realtime_base_ns + now : now;
	*out = now + (want > cnow ? want - cnow : 0);
	if (!*out)
		*out = 1;
	return 0;
}

long futex_syscall(struct process *p, uint64_t uaddr, int op, uint32_t val, uint64_t utime,
		   uint64_t uaddr2, uint32_t val3, uint64_t realtime_base_ns)
{
	bool private = op & FUTEX_PRIVATE_FLAG;
	bool realtime = op & FUTEX_CLOCK_REALTIME;
	int cmd = op & ~(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
	/* FUTEX_CLOCK_REALTIME only with the calls that take an absolute time (the host's
	 * Linux answers ENOSYS for FUTEX_WAIT with it too) */
	if (realtime && cmd != FUTEX_WAIT_BITSET && cmd != FUTEX_WAIT_REQUEUE_PI &&
	    cmd != FUTEX_LOCK_PI2)
		return -LX_ENOSYS;
	uint64_t deadline;
	long rc;
	switch (cmd) {
	case FUTEX_WAIT:
		rc = deadline_of(utime, false, false, 0, &deadline);
		return rc ? rc : futex_wait(p, uaddr, private, val, deadline, FUTEX_BITSET_MATCH_ANY);
	case FUTEX_WAIT_BITSET:
		if (!val3)
			return -LX_EINVAL;
		rc = deadline_of(utime, true, realtime, realtime_base_ns, &deadline);
		return rc ? rc : futex_wait(p, uaddr, private, val, deadline, val3);
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET: {
		uint32_t bits = cmd == FUTEX_WAKE ? FUTEX_BITSET_MATCH_ANY : val3;
		if (!bits)
			return -LX_EINVAL;
		struct fkey key;
		rc = key_of(p, uaddr, private, &key);
		if (rc)
			return rc;
		/* Linux's loop counts a wake before it compares: 0 (or less) wakes one */
		return futex_wake(key.mm, uaddr, (int)val > 0 ? (int)val : 1, bits);
	}
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
		/* the fourth argument is nr_requeue (an int), not a timeout */
		return futex_requeue(p, uaddr, uaddr2, private, (int)val, (int)(uint32_t)utime,
				     cmd == FUTEX_CMP_REQUEUE, val3);
	case FUTEX_WAKE_OP:
		return futex_wake_op(p, uaddr, uaddr2, private, (int)val, (int)(uint32_t)utime, val3);
	default:
		/* FUTEX_LOCK_PI, UNLOCK_PI, TRYLOCK_PI, WAIT_REQUEUE_PI, CMP_REQUEUE_PI,
		 * LOCK_PI2 (priority inheritance: not built, docs/userspace.md), FUTEX_FD
		 * (gone from Linux since 2.6.26) */
		return -LX_ENOSYS;
	}
}

/* ---- a thread's end --------------------------------------------------------------------- */
/* Linux's handle_futex_death: the word names the dead thread as owner - mark it
 * FUTEX_OWNER_DIED (keeping FUTEX_WAITERS) and wake one waiter if there are any. */
static bool futex_death(struct process *p, uint64_t uaddr, uint32_t tid, bool pending)
{
	if ((uaddr & 3) || !uaddr_ok(uaddr))
		return false;
	uint32_t *w = word_lock(p->mm, uaddr);
	if (!w)
		return false;
	/* seq_cst: as the user's lock cmpxchg on the same word */
	uint32_t uval = __atomic_load_n(w, __ATOMIC_SEQ_CST);
	bool wake = false;
	for (;;) {
		if (pending && uval == 0) {
			/* Linux: a lock being taken when the owner died, still 0: wake one
			 * so that the waiter retries */
			wake = true;
			break;
		}
		if ((uval & FUTEX_TID_MASK) != tid)
			break;
		uint32_t nv = (uval & FUTEX_WAITERS) | FUTEX_OWNER_DIED;
		if (__atomic_compare_exchange_n(w, &uval, nv, false, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST)) {
			wake = uval & FUTEX_WAITERS;
			break;
		}
	}
	mlock_unlock(&p->mm->lock);
	if (wake)
		futex_wake(p->mm, uaddr, 1, FUTEX_BITSET_MATCH_ANY);
	return true;	/* the page was made writable (a copy-on-write break, maybe) */
}

void futex_thread_exit(struct process *p, bool others)
{
	if (!p->mm)
		return;
	uint32_t tid = (uint32_t)p->pid;
	bool touched = false;	/* a page of the space written: maybe a copy-on-write break */
	if (p->robust_list) {
		/* struct robust_list_head { list.next; long futex_offset; list_op_pending } */
		uint64_t head[3];
		if (!copy_from_user(head, (const void *)p->robust_list, sizeof head)) {
			uint64_t entry = head[0], pending = head[2];
			int64_t off = (int64_t)head[1];
			unsigned limit = ROBUST_LIST_LIMIT;
			while (entry && entry != p->robust_list && limit--) {
				uint64_t next;
				if (copy_from_user(&next, (const void *)(entry & ~1ull), 8))
					break;
				/* bit 0 of an entry: a PI futex (Linux); ksync has no PI: skip */
				if (entry != pending && !(entry & 1))
					touched |= futex_death(p, (entry & ~1ull) + (uint64_t)off, tid, false);
				entry = next;
			}
			if (pending && !(pending & 1))
				touched |= futex_death(p, pending + (uint64_t)off, tid, true);
		}
		p->robust_list = 0;
	}
	if (p->clear_child_tid) {
		/* Linux's mm_release: only while others share the space */
		if (others) {
			uint32_t zero = 0;
			if (!copy_to_user((void *)p->clear_child_tid, &zero, 4)) {
				touched = true;
				futex_wake(p->mm, p->clear_child_tid, 1, FUTEX_BITSET_MATCH_ANY);
			}
		}
		p->clear_child_tid = 0;
	}
	/* a copy-on-write break by these writes: the other threads' CPUs forget the old
	 * copy now (the port's own check at a system call's end never comes for a thread
	 * that is ending) */
	if (touched && others)
		arch_as_shootdown(p->mm->as);
}
