/* futex(2) made raw (kernel/proc/futex.c, issue 25): WAIT/WAKE, the bitset forms with
 * absolute timeouts on both clocks, REQUEUE/CMP_REQUEUE, WAKE_OP, the error paths
 * (EAGAIN for a changed word, ETIMEDOUT, EINVAL for a misaligned address or a bad
 * timeout, EFAULT, ENOSYS), a wait interrupted by a signal (EINTR; made again under
 * SA_RESTART when untimed), CLONE_CHILD_CLEARTID's wake and clone's flag checks.
 * Waiters are threads; "n waiters queued" is asked with FUTEX_REQUEUE of the word onto
 * itself (it answers the number it moved), so no result depends on timing. Prints
 * results as -errno names and counts. Case as argv[1]. */
#include "ut.h"
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <limits.h>
#include <sys/mman.h>
#include <time.h>

/* <linux/futex.h>'s values (musl's include path has no kernel headers) */
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define FUTEX_REQUEUE 3
#define FUTEX_CMP_REQUEUE 4
#define FUTEX_WAKE_OP 5
#define FUTEX_WAIT_BITSET 9
#define FUTEX_WAKE_BITSET 10
#define FUTEX_PRIVATE_FLAG 128
#define FUTEX_CLOCK_REALTIME 256
#define FUTEX_WAIT_PRIVATE (FUTEX_WAIT | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_PRIVATE (FUTEX_WAKE | FUTEX_PRIVATE_FLAG)
#define FUTEX_REQUEUE_PRIVATE (FUTEX_REQUEUE | FUTEX_PRIVATE_FLAG)
#define FUTEX_CMP_REQUEUE_PRIVATE (FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_OP_PRIVATE (FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAIT_BITSET_PRIVATE (FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG)
#define FUTEX_WAKE_BITSET_PRIVATE (FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG)
#define FUTEX_BITSET_MATCH_ANY 0xffffffff
#define FUTEX_OP_SET 0
#define FUTEX_OP_ADD 1
#define FUTEX_OP_OR 2
#define FUTEX_OP_ANDN 3
#define FUTEX_OP_XOR 4
#define FUTEX_OP_OPARG_SHIFT 8
#define FUTEX_OP_CMP_EQ 0
#define FUTEX_OP_CMP_NE 1
#define FUTEX_OP_CMP_LT 2
#define FUTEX_OP_CMP_LE 3
#define FUTEX_OP_CMP_GT 4
#define FUTEX_OP_CMP_GE 5
#define FUTEX_OP(op, oparg, cmp, cmparg) \
	((((op) & 0xf) << 28) | (((cmp) & 0xf) << 24) | (((oparg) & 0xfff) << 12) | ((cmparg) & 0xfff))

static long fx(volatile int *u, int op, int val, long t, volatile int *u2, int v3)
{
	return rawsys(SYS_futex, (long)u, op, val, t, (long)u2, v3);
}
static const char *en(long r)
{
	static char b[32];
	switch (r) {
	case -EAGAIN: return "EAGAIN";
	case -ETIMEDOUT: return "ETIMEDOUT";
	case -EINVAL: return "EINVAL";
	case -EFAULT: return "EFAULT";
	case -ENOSYS: return "ENOSYS";
	case -EINTR: return "EINTR";
	case -EPERM: return "EPERM";
	}
	snprintf(b, sizeof b, "%ld", r);
	return b;
}
#define P(name, expr) do { long r_ = (expr); printf("%s: %s\n", name, en(r_)); fflush(stdout); } while (0)

static void after(struct timespec *ts, clockid_t c, long ns)
{
	clock_gettime(c, ts);
	ts->tv_nsec += ns;
	while (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

/* the number of waiters queued on u (FUTEX_REQUEUE onto itself moves them in place) */
static long queued(volatile int *u) { return fx(u, FUTEX_REQUEUE_PRIVATE, 0, INT_MAX, u, 0); }
static void until_queued(volatile int *u, long n)
{
	while (queued(u) != n)
		sched_yield();
}

/* ---- errors ---- */
static void c_errors(void)
{
	static int w = 1;
	struct timespec rel = { 0, 20000000 }, bad = { 0, 1000000000 }, neg = { -1, 0 }, abs;
	P("wait on a changed word", fx(&w, FUTEX_WAIT, 0, 0, NULL, 0));
	P("wait private on a changed word", fx(&w, FUTEX_WAIT_PRIVATE, 0, 0, NULL, 0));
	P("wait 20 ms", fx(&w, FUTEX_WAIT_PRIVATE, 1, (long)&rel, NULL, 0));
	P("wait 20 ms, realtime flag (relative)", fx(&w, FUTEX_WAIT_PRIVATE | FUTEX_CLOCK_REALTIME, 1, (long)&rel, NULL, 0));
	after(&abs, CLOCK_MONOTONIC, 20000000);
	P("wait_bitset monotonic deadline", fx(&w, FUTEX_WAIT_BITSET_PRIVATE, 1, (long)&abs, NULL, FUTEX_BITSET_MATCH_ANY));
	after(&abs, CLOCK_REALTIME, 20000000);
	P("wait_bitset realtime deadline", fx(&w, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 1, (long)&abs, NULL, 1));
	struct timespec past = { 1, 0 };
	P("wait_bitset deadline passed", fx(&w, FUTEX_WAIT_BITSET, 1, (long)&past, NULL, 1));
	P("wait_bitset deadline passed, word changed", fx(&w, FUTEX_WAIT_BITSET, 0, (long)&past, NULL, 1));
	P("wait_bitset bitset 0", fx(&w, FUTEX_WAIT_BITSET_PRIVATE, 1, 0, NULL, 0));
	P("wake_bitset bitset 0", fx(&w, FUTEX_WAKE_BITSET_PRIVATE, 1, 0, NULL, 0));
	P("wait nsec 1e9", fx(&w, FUTEX_WAIT_PRIVATE, 1, (long)&bad, NULL, 0));
	P("wait negative seconds", fx(&w, FUTEX_WAIT_PRIVATE, 1, (long)&neg, NULL, 0));
	char *al = (char *)&w;
	P("wait misaligned", fx((int *)(al + 1), FUTEX_WAIT_PRIVATE, 1, 0, NULL, 0));
	P("wake misaligned", fx((int *)(al + 2), FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	P("wake shared misaligned", fx((int *)(al + 3), FUTEX_WAKE, 1, 0, NULL, 0));
	int *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	munmap(gone, 4096);
	P("wait unmapped", fx(gone, FUTEX_WAIT_PRIVATE, 0, 0, NULL, 0));
	P("wait shared unmapped", fx(gone, FUTEX_WAIT, 0, 0, NULL, 0));
	P("wake private unmapped (not looked up)", fx(gone, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	P("wake shared unmapped", fx(gone, FUTEX_WAKE, 1, 0, NULL, 0));
	P("wait kernel address", fx((int *)0xffff800000001000ul, FUTEX_WAIT_PRIVATE, 0, 0, NULL, 0));
	P("wait NULL", fx(NULL, FUTEX_WAIT_PRIVATE, 0, 0, NULL, 0));
	P("wait, timeout pointer unmapped", fx(&w, FUTEX_WAIT_PRIVATE, 1, (long)gone, NULL, 0));
	P("wake_op uaddr2 unmapped", fx(&w, FUTEX_WAKE_OP_PRIVATE, 1, 1, gone, FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0)));
	int *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	P("wait on a read-only page", fx(ro, FUTEX_WAIT_PRIVATE, 0, (long)&rel, NULL, 0));
	P("wake_op uaddr2 read-only", fx(&w, FUTEX_WAKE_OP_PRIVATE, 1, 1, ro, FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0)));
	P("wake_op bad op", fx(&w, FUTEX_WAKE_OP_PRIVATE, 1, 1, &w, 7 << 28));
	static int opw = 3;
	P("wake_op bad cmp", fx(&w, FUTEX_WAKE_OP_PRIVATE, 1, 1, &opw, (1 << 28) | (9 << 24) | (4 << 12)));
	printf("the operation was done: %d\n", opw);
	P("requeue negative count", fx(&w, FUTEX_REQUEUE_PRIVATE, -1, 1, &w, 0));
	P("cmp_requeue word differs", fx(&w, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &w, 5));
	P("wake, realtime flag", fx(&w, FUTEX_WAKE_PRIVATE | FUTEX_CLOCK_REALTIME, 1, 0, NULL, 0));
	P("unknown op 99", fx(&w, 99, 0, 0, NULL, 0));
	P("wake nobody", fx(&w, FUTEX_WAKE_PRIVATE, 5, 0, NULL, 0));
	P("wake 0", fx(&w, FUTEX_WAKE_PRIVATE, 0, 0, NULL, 0));
}

/* ---- wake and bitsets ---- */
struct wa {
	volatile int *u;
	int val;
	unsigned bits;
	long ts_ns;
	long r;
};
static void *waiter(void *a)
{
	struct wa *w = a;
	if (w->ts_ns) {
		struct timespec t = { w->ts_ns / 1000000000, w->ts_ns % 1000000000 };
		w->r = fx(w->u, FUTEX_WAIT_PRIVATE, w->val, (long)&t, NULL, 0);
	} else if (w->bits) {
		w->r = fx(w->u, FUTEX_WAIT_BITSET_PRIVATE, w->val, 0, NULL, (int)w->bits);
	} else {
		w->r = fx(w->u, FUTEX_WAIT_PRIVATE, w->val, 0, NULL, 0);
	}
	return NULL;
}
static pthread_t start(struct wa *w)
{
	pthread_t t;
	pthread_create(&t, NULL, waiter, w);
	return t;
}

static void c_wake(void)
{
	static int u;
	struct wa a = { &u, 0, 0, 0, 1 };
	pthread_t t = start(&a);
	until_queued(&u, 1);
	P("wake one waiter", fx(&u, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	pthread_join(t, NULL);
	P("the waiter's result", a.r);
	/* a shared (not _PRIVATE) wait woken by a private wake: the same key here, as on
	 * Linux for an anonymous private page */
	struct wa s = { &u, 0, 0, 0, 1 };
	t = start(&s);
	until_queued(&u, 1);
	P("wake 10, one waits", fx(&u, FUTEX_WAKE_PRIVATE, 10, 0, NULL, 0));
	pthread_join(t, NULL);
	P("its result", s.r);
	/* three waiters, wake 2 then the last */
	struct wa w[3];
	pthread_t th[3];
	for (int i = 0; i < 3; i++) {
		w[i] = (struct wa){ &u, 0, 0, 0, 1 };
		th[i] = start(&w[i]);
	}
	until_queued(&u, 3);
	P("wake 2 of 3", fx(&u, FUTEX_WAKE_PRIVATE, 2, 0, NULL, 0));
	P("still queued", queued(&u));
	P("wake the rest", fx(&u, FUTEX_WAKE_PRIVATE, INT_MAX, 0, NULL, 0));
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	printf("results %ld %ld %ld\n", w[0].r, w[1].r, w[2].r);
	/* a timed waiter woken before its deadline */
	struct wa tw = { &u, 0, 0, 5000000000L, 1 };
	t = start(&tw);
	until_queued(&u, 1);
	P("wake a timed waiter", fx(&u, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	pthread_join(t, NULL);
	P("its result", tw.r);
}

static void c_bitset(void)
{
	static int u;
	struct wa a = { &u, 0, 1, 0, 1 }, b = { &u, 0, 2, 0, 1 }, c = { &u, 0, 6, 0, 1 };
	pthread_t ta = start(&a), tb = start(&b), tc = start(&c);
	until_queued(&u, 3);
	P("wake_bitset 2 (b and c match)", fx(&u, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, 0, NULL, 2));
	pthread_join(tb, NULL);
	pthread_join(tc, NULL);
	P("left", queued(&u));
	P("wake_bitset 4 (none match)", fx(&u, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, 0, NULL, 4));
	P("plain wake (matches any)", fx(&u, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	pthread_join(ta, NULL);
	printf("results %ld %ld %ld\n", a.r, b.r, c.r);
}

static void c_requeue(void)
{
	static int A, B = 7;
	struct wa w[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		w[i] = (struct wa){ &A, 0, 0, 0, 1 };
		t[i] = start(&w[i]);
	}
	until_queued(&A, 4);
	P("cmp_requeue, word differs", fx(&A, FUTEX_CMP_REQUEUE_PRIVATE, 1, 1, &B, 1));
	P("cmp_requeue wake 1 move 2", fx(&A, FUTEX_CMP_REQUEUE_PRIVATE, 1, 2, &B, 0));
	P("on A", queued(&A));
	P("on B", queued(&B));
	P("requeue B to A, wake 0 move all", fx(&B, FUTEX_REQUEUE_PRIVATE, 0, INT_MAX, &A, 0));
	P("on A", queued(&A));
	P("wake A 1", fx(&A, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	P("requeue A to B, wake 1 move 0", fx(&A, FUTEX_REQUEUE_PRIVATE, 1, 0, &B, 0));
	P("wake B (nobody)", fx(&B, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	P("wake A, the last", fx(&A, FUTEX_WAKE_PRIVATE, INT_MAX, 0, NULL, 0));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("results %ld %ld %ld %ld\n", w[0].r, w[1].r, w[2].r, w[3].r);
}

static void c_wakeop(void)
{
	static int A, B;
	struct wa a = { &A, 0, 0, 0, 1 }, b = { &B, 0, 0, 0, 1 };
	pthread_t ta = start(&a), tb = start(&b);
	until_queued(&A, 1);
	until_queued(&B, 1);
	/* B += 5 (old 0), old == 0: wake A's one and B's one */
	P("wake_op add, cmp eq true", fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, 1, &B, FUTEX_OP(FUTEX_OP_ADD, 5, FUTEX_OP_CMP_EQ, 0)));
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	printf("B %d, results %ld %ld\n", B, a.r, b.r);
	struct wa c = { &B, 5, 0, 0, 1 };
	pthread_t tc = start(&c);
	until_queued(&B, 1);
	/* B |= 8 (old 5), old > 5 false: B's waiter stays */
	P("wake_op or, cmp gt false", fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, 1, &B, FUTEX_OP(FUTEX_OP_OR, 8, FUTEX_OP_CMP_GT, 5)));
	printf("B %d, queued on B %ld\n", B, queued(&B));
	/* B = 1 << 4 (OPARG_SHIFT; old 13), old >= -2 (a negative cmparg) true */
	P("wake_op set shifted, cmp ge -2 true", fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, 1, &B, FUTEX_OP(FUTEX_OP_SET | FUTEX_OP_OPARG_SHIFT, 4, FUTEX_OP_CMP_GE, 0xffe)));
	pthread_join(tc, NULL);
	printf("B %d, result %ld\n", B, c.r);
	B = 0xff;
	P("wake_op andn, cmp ne", fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, 1, &B, FUTEX_OP(FUTEX_OP_ANDN, 0x0f, FUTEX_OP_CMP_NE, 0xff)));
	printf("B %d\n", B);
	P("wake_op xor, cmp lt", fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, 1, &B, FUTEX_OP(FUTEX_OP_XOR, 0x3, FUTEX_OP_CMP_LT, 0x100)));
	P("wake_op cmp le", fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, 1, &B, FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_LE, 0)));
	printf("B %d\n", B);
}

/* ---- signals ---- */
static volatile int hits;
static void h(int s) { (void)s; hits++; }
static void install(int flags)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}
static void c_eintr(void)
{
	static int u;
	install(0);
	struct wa a = { &u, 0, 0, 0, 1 };
	pthread_t t = start(&a);
	until_queued(&u, 1);
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	printf("no SA_RESTART: %s, handler ran %d\n", en(a.r), hits);
	install(SA_RESTART);
	struct wa b = { &u, 0, 0, 0, 1 };
	t = start(&b);
	until_queued(&u, 1);
	pthread_kill(t, SIGUSR1);
	while (hits < 2)
		sched_yield();
	until_queued(&u, 1);	/* made again after the handler */
	P("SA_RESTART: waits again, woken", fx(&u, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	pthread_join(t, NULL);
	printf("its result %s\n", en(b.r));
	struct wa c = { &u, 0, 0, 5000000000L, 1 };
	t = start(&c);
	until_queued(&u, 1);
	pthread_kill(t, SIGUSR1);
	pthread_join(t, NULL);
	printf("timed wait, SA_RESTART: %s, handler ran %d\n", en(c.r), hits);
	/* a signal blocked in the waiting thread does not interrupt it */
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &m, NULL);	/* inherited by the next thread */
	struct wa d = { &u, 0, 0, 0, 1 };
	t = start(&d);
	until_queued(&u, 1);
	pthread_kill(t, SIGUSR2);
	for (int i = 0; i < 20; i++)
		sched_yield();
	P("blocked SIGUSR2: still queued", queued(&u));
	P("wake", fx(&u, FUTEX_WAKE_PRIVATE, 1, 0, NULL, 0));
	pthread_join(t, NULL);	/* SIGUSR2 stays pending on that thread, which ended */
	printf("its result %s\n", en(d.r));
}

/* ---- clone: CLONE_CHILD_CLEARTID and the flag checks ---- */
static long raw_clone(unsigned long flags, char *stack_top, volatile int *ptid, volatile int *ctid,
		      void (*fn)(void *), void *arg)
{
	unsigned long *sp = (unsigned long *)((unsigned long)stack_top & ~15ul);
	*--sp = (unsigned long)arg;
	*--sp = (unsigned long)fn;
	long ret;
	register long r10 __asm__("r10") = (long)ctid;
	register long r8 __asm__("r8") = 0;
	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 "pop %%rax\n\t"
			 "pop %%rdi\n\t"
			 "call *%%rax\n\t"
			 "mov $60, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall\n\t"
			 "hlt\n"
			 "1:"
			 : "=a"(ret)
			 : "a"(SYS_clone), "D"(flags), "S"(sp), "d"(ptid), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}
static volatile int child_tid_seen, child_ran;
/* the child: raw calls only (it shares the parent's thread pointer: no libc) */
static void child_fn(void *a)
{
	(void)a;
	child_tid_seen = (int)rawsys(SYS_gettid, 0, 0, 0, 0, 0, 0);
	for (int i = 0; i < 10; i++)
		rawsys(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	child_ran = 1;
}
#define TFLAGS (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM)
static void c_cleartid(void)
{
	static char stack[65536] __attribute__((aligned(16)));
	static volatile int tidw;
	long r = raw_clone(TFLAGS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID, stack + sizeof stack,
			   &tidw, &tidw, child_fn, NULL);
	int seen = tidw;
	printf("clone > 0 %d, parent_settid == result %d, != pid %d\n", r > 0, seen == r || seen == 0,
	       r != getpid());
	for (;;) {
		int v = tidw;
		if (!v)
			break;
		long w = fx(&tidw, FUTEX_WAIT, v, 0, NULL, 0);	/* shared: the tid word */
		if (w && w != -EAGAIN)
			printf("wait: %s\n", en(w));
	}
	printf("tid word cleared, child ran %d, its gettid == clone's result %d\n", child_ran,
	       child_tid_seen == r);
	/* CLONE_CHILD_SETTID: the child's tid stored at ctid by the kernel */
	static volatile int ct;
	child_ran = 0;
	r = raw_clone(TFLAGS | CLONE_CHILD_SETTID, stack + sizeof stack, NULL, &ct, child_fn, NULL);
	while (!child_ran)
		sched_yield();
	printf("child_settid == result %d\n", ct == r);
	for (int i = 0; i < 20; i++)
		sched_yield();	/* it is ending: its stack is reused below only after */
	while (rawsys(SYS_tgkill, getpid(), r, 0, 0, 0, 0) == 0)
		sched_yield();
	P("CLONE_THREAD without CLONE_SIGHAND", rawsys(SYS_clone, CLONE_VM | CLONE_THREAD, (long)(stack + 4096), 0, 0, 0, 0));
	P("CLONE_SIGHAND without CLONE_VM", rawsys(SYS_clone, CLONE_SIGHAND, (long)(stack + 4096), 0, 0, 0, 0));
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "errors";
	if (!strcmp(c, "errors")) c_errors();
	else if (!strcmp(c, "wake")) c_wake();
	else if (!strcmp(c, "bitset")) c_bitset();
	else if (!strcmp(c, "requeue")) c_requeue();
	else if (!strcmp(c, "wakeop")) c_wakeop();
	else if (!strcmp(c, "eintr")) c_eintr();
	else if (!strcmp(c, "cleartid")) c_cleartid();
	else { printf("unknown case %s\n", c); return 2; }
	return 0;
}
