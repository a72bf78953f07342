/* POSIX threads through musl (issue 25: clone with CLONE_THREAD, futexes): create/join,
 * detach, mutexes, condition variables, barriers, rwlocks, thread-local storage,
 * semaphores, many threads, pthread_exit of the main thread. Prints only relations and
 * counts, never tids, addresses or times. Case as argv[1]. */
#include "ut.h"
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>

#define N 6
static void *ret_arg(void *a) { return (void *)((uintptr_t)a * 3); }

static pid_t main_tid;
static void *ids(void *a)
{
	(void)a;
	pid_t t = (pid_t)syscall(SYS_gettid);
	printf("thread: getpid==main pid %d, gettid!=pid %d, tid!=main tid %d\n",
	       getpid() == main_tid, t != getpid(), t != main_tid);
	fflush(stdout);
	return NULL;
}

static void c_create(void)
{
	main_tid = (pid_t)syscall(SYS_gettid);
	printf("main: gettid==getpid %d\n", main_tid == getpid());
	pthread_t t[N];
	for (uintptr_t i = 0; i < N; i++)
		if (pthread_create(&t[i], NULL, ret_arg, (void *)i))
			printf("create %d failed\n", (int)i);
	uintptr_t sum = 0;
	for (int i = 0; i < N; i++) {
		void *r;
		int e = pthread_join(t[i], &r);
		if (e)
			printf("join %d: %d\n", i, e);
		sum += (uintptr_t)r;
	}
	printf("joined %d, sum %lu\n", N, (unsigned long)sum);
	pthread_t x;
	pthread_create(&x, NULL, ids, NULL);
	pthread_join(x, NULL);
}

static volatile int detached_done;
static void *det(void *a)
{
	(void)a;
	__atomic_add_fetch(&detached_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}
static void c_detach(void)
{
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < 20; i++) {
		pthread_t t;
		if (pthread_create(&t, &at, det, NULL))
			printf("create failed\n");
	}
	pthread_t t;
	pthread_create(&t, NULL, det, NULL);
	printf("pthread_detach: %d\n", pthread_detach(t));
	while (__atomic_load_n(&detached_done, __ATOMIC_SEQ_CST) < 21)
		sched_yield();
	printf("detached threads ran: %d\n", detached_done);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
#define ITER 20000
static void *inc(void *a)
{
	(void)a;
	for (int i = 0; i < ITER; i++) {
		pthread_mutex_lock(&mu);
		long v = counter;
		if ((i & 255) == 0)
			sched_yield();	/* hold it across a switch now and then */
		counter = v + 1;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}
static void c_mutex(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, inc, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("counter %ld (want %d)\n", counter, 4 * ITER);
	pthread_mutexattr_t ma;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_t em;
	pthread_mutex_init(&em, &ma);
	pthread_mutex_lock(&em);
	printf("errorcheck relock: %d, trylock: %d\n", pthread_mutex_lock(&em) == EDEADLK,
	       pthread_mutex_trylock(&em) == EBUSY);
	pthread_mutex_unlock(&em);
	printf("errorcheck unlock unlocked: %d\n", pthread_mutex_unlock(&em) == EPERM);
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_t rm;
	pthread_mutex_init(&rm, &ma);
	pthread_mutex_lock(&rm);
	pthread_mutex_lock(&rm);
	printf("recursive: %d %d\n", pthread_mutex_unlock(&rm), pthread_mutex_unlock(&rm));
}

/* a bounded queue with two condition variables: producers and consumers hand off
 * items, every item counted once */
#define QN 4
static pthread_cond_t notempty = PTHREAD_COND_INITIALIZER, notfull = PTHREAD_COND_INITIALIZER;
static int q[QN], qh, qt, qc;
static long consumed_sum;
static void *producer(void *a)
{
	int base = (int)(uintptr_t)a;
	for (int i = 1; i <= 2000; i++) {
		pthread_mutex_lock(&mu);
		while (qc == QN)
			pthread_cond_wait(&notfull, &mu);
		q[qt] = base + i;
		qt = (qt + 1) % QN;
		qc++;
		pthread_cond_signal(&notempty);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}
static void *consumer(void *a)
{
	(void)a;
	long s = 0;
	for (int i = 0; i < 2000; i++) {
		pthread_mutex_lock(&mu);
		while (qc == 0)
			pthread_cond_wait(&notempty, &mu);
		s += q[qh];
		qh = (qh + 1) % QN;
		qc--;
		pthread_cond_signal(&notfull);
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_lock(&mu);
	consumed_sum += s;
	pthread_mutex_unlock(&mu);
	return NULL;
}
static int ready;
static void *bwaiter(void *a)
{
	(void)a;
	pthread_mutex_lock(&mu);
	ready++;
	while (ready > 0)
		pthread_cond_wait(&notempty, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}
static void c_condvar(void)
{
	pthread_t p[3], c[3];
	for (int i = 0; i < 3; i++) {
		pthread_create(&p[i], NULL, producer, (void *)(uintptr_t)(i * 100000));
		pthread_create(&c[i], NULL, consumer, NULL);
	}
	for (int i = 0; i < 3; i++) {
		pthread_join(p[i], NULL);
		pthread_join(c[i], NULL);
	}
	long want = 0;
	for (int i = 0; i < 3; i++)
		want += 2000L * i * 100000 + 2000L * 2001 / 2;
	printf("handed off: sum ok %d, left %d\n", consumed_sum == want, qc);
	/* broadcast wakes every waiter */
	pthread_t w[5];
	for (int i = 0; i < 5; i++)
		pthread_create(&w[i], NULL, bwaiter, NULL);
	for (;;) {
		pthread_mutex_lock(&mu);
		int r = ready;
		if (r == 5)
			ready = -1;
		pthread_mutex_unlock(&mu);
		if (r == 5)
			break;
		sched_yield();
	}
	pthread_cond_broadcast(&notempty);
	for (int i = 0; i < 5; i++)
		pthread_join(w[i], NULL);
	printf("broadcast woke 5\n");
	/* a timed wait that times out (a relative 30 ms from the realtime clock) */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 30000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&mu);
	int e = pthread_cond_timedwait(&notempty, &mu, &ts);
	pthread_mutex_unlock(&mu);
	printf("timedwait: %s\n", e == ETIMEDOUT ? "ETIMEDOUT" : strerror(e));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_t mc;
	pthread_cond_init(&mc, &ca);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += 20000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&mu);
	e = pthread_cond_timedwait(&mc, &mu, &ts);
	pthread_mutex_unlock(&mu);
	printf("timedwait monotonic: %s\n", e == ETIMEDOUT ? "ETIMEDOUT" : strerror(e));
}

static pthread_barrier_t bar;
static int phase_seen[4][3];
static int phase;
static void *bthread(void *a)
{
	int id = (int)(uintptr_t)a;
	for (int ph = 0; ph < 3; ph++) {
		phase_seen[id][ph] = __atomic_load_n(&phase, __ATOMIC_SEQ_CST);
		int r = pthread_barrier_wait(&bar);
		if (r == PTHREAD_BARRIER_SERIAL_THREAD)
			__atomic_add_fetch(&phase, 1, __ATOMIC_SEQ_CST);
		pthread_barrier_wait(&bar);
	}
	return NULL;
}
static void c_barrier(void)
{
	pthread_barrier_init(&bar, NULL, 4);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, bthread, (void *)(uintptr_t)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	int ok = 1;
	for (int i = 0; i < 4; i++)
		for (int ph = 0; ph < 3; ph++)
			ok &= phase_seen[i][ph] == ph;
	printf("barrier phases in step: %d, final %d\n", ok, phase);
}

static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static long shared_a, shared_b;
static int torn;
static void *reader(void *x)
{
	(void)x;
	for (int i = 0; i < 5000; i++) {
		pthread_rwlock_rdlock(&rw);
		if (shared_a != shared_b)
			torn++;
		pthread_rwlock_unlock(&rw);
	}
	return NULL;
}
static void *writer(void *x)
{
	(void)x;
	for (int i = 0; i < 2000; i++) {
		pthread_rwlock_wrlock(&rw);
		shared_a++;
		if ((i & 63) == 0)
			sched_yield();
		shared_b++;
		pthread_rwlock_unlock(&rw);
	}
	return NULL;
}
static void c_rwlock(void)
{
	pthread_t t[5];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, reader, NULL);
	for (int i = 3; i < 5; i++)
		pthread_create(&t[i], NULL, writer, NULL);
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	printf("rwlock: torn %d, a %ld b %ld\n", torn, shared_a, shared_b);
	pthread_rwlock_rdlock(&rw);
	printf("tryrdlock while read-held: %d, trywrlock: %d\n", pthread_rwlock_tryrdlock(&rw),
	       pthread_rwlock_trywrlock(&rw) == EBUSY);
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_unlock(&rw);
}

static __thread int tlsv = 7;
static __thread char tlsbuf[64];
static pthread_key_t key;
static int dtor_runs;
static void dtor(void *v) { (void)v; __atomic_add_fetch(&dtor_runs, 1, __ATOMIC_SEQ_CST); }
static void *tls_thread(void *a)
{
	int id = (int)(uintptr_t)a;
	int first = tlsv;
	tlsv = 100 + id;
	snprintf(tlsbuf, sizeof tlsbuf, "thread %d", id);
	pthread_setspecific(key, (void *)(uintptr_t)(id + 1));
	sched_yield();
	int ok = tlsv == 100 + id && (uintptr_t)pthread_getspecific(key) == (uintptr_t)(id + 1);
	char want[64];
	snprintf(want, sizeof want, "thread %d", id);
	ok &= !strcmp(tlsbuf, want);
	return (void *)(uintptr_t)(first == 7 && ok);
}
static void c_tls(void)
{
	pthread_key_create(&key, dtor);
	tlsv = 1;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, tls_thread, (void *)(uintptr_t)i);
	int good = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		good += (int)(uintptr_t)r;
	}
	printf("tls: initial image and own copies in %d of 4, main's %d, destructors %d\n", good,
	       tlsv, dtor_runs);
}

static sem_t sem;
static void *sem_post_thread(void *a)
{
	(void)a;
	for (int i = 0; i < 1000; i++)
		sem_post(&sem);
	return NULL;
}
static void c_sem(void)
{
	sem_init(&sem, 0, 0);
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, sem_post_thread, NULL);
	for (int i = 0; i < 2000; i++)
		sem_wait(&sem);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	int v;
	sem_getvalue(&sem, &v);
	int tr = sem_trywait(&sem);
	int te = errno;
	printf("sem: took 2000, left %d, trywait %d errno %d\n", v, tr, te);
}

static void *nop(void *a) { return a; }
static void c_many(void)
{
	/* 300 threads created and joined in waves of 20: slots and stacks come back */
	int ok = 0;
	for (int w = 0; w < 15; w++) {
		pthread_t t[20];
		for (int i = 0; i < 20; i++)
			if (!pthread_create(&t[i], NULL, nop, (void *)(uintptr_t)(i + 1)))
				ok++;
		for (int i = 0; i < 20; i++)
			pthread_join(t[i], NULL);
	}
	printf("created and joined %d\n", ok);
}

/* threads mapping, writing, checking and unmapping at once: each gets its own pages
 * (mmap's gap found and mapped under one lock) and sees only its own data (the other
 * CPUs' translations of an unmapped page shot down) */
static void *mapper(void *a)
{
	int id = (int)(uintptr_t)a, bad = 0;
	for (int i = 0; i < 300; i++) {
		size_t len = 4096 * (1 + (i + id) % 3);
		unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			bad++;
			continue;
		}
		memset(p, id + 1, len);
		if ((i & 7) == 0)
			sched_yield();
		for (size_t k = 0; k < len; k += 512)
			bad += p[k] != id + 1;
		munmap(p, len);
	}
	return (void *)(uintptr_t)bad;
}
static void c_mmap(void)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, mapper, (void *)i);
	uintptr_t bad = 0;
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(t[i], &r);
		bad += (uintptr_t)r;
	}
	printf("4 threads x 300 mmap/write/check/munmap: bad %lu\n", (unsigned long)bad);
}

/* fork while another thread reads a word, then the parent writes it: the write breaks the
 * copy-on-write page, and the reader (on another CPU) must see the new copy, not the old
 * one through a stale translation (the kernel shoots the space down before the writer
 * goes on) */
static volatile int cow_page[1024] __attribute__((aligned(4096)));
static volatile int reader_up, reader_saw;
static void *cow_reader(void *a)
{
	(void)a;
	reader_up = 1;
	while (!cow_page[0])
		sched_yield();
	reader_saw = cow_page[0];
	return NULL;
}
static void c_forkcow(void)
{
	for (int round = 0; round < 20; round++) {
		cow_page[0] = 0;
		reader_up = 0;
		pthread_t t;
		pthread_create(&t, NULL, cow_reader, NULL);
		while (!reader_up)
			sched_yield();
		for (int i = 0; i < 5; i++)
			sched_yield();	/* the reader has read the word (cached it) */
		fflush(stdout);
		pid_t c = fork();
		if (c == 0)
			_exit(cow_page[0]);
		cow_page[0] = round + 1;	/* the copy-on-write break */
		pthread_join(t, NULL);
		int st;
		waitpid(c, &st, 0);
		if (reader_saw != round + 1 || WEXITSTATUS(st) != 0)
			printf("round %d: reader saw %d, child %d\n", round, reader_saw, WEXITSTATUS(st));
	}
	printf("20 forks with a reading thread: the reader saw each write, the children none\n");
}

static volatile int main_printed;
static void *late(void *a)
{
	(void)a;
	while (!main_printed)
		sched_yield();
	for (int i = 0; i < 5; i++)
		sched_yield();
	printf("the other thread runs after main's pthread_exit\n");
	fflush(stdout);
	return NULL;	/* the last thread: the process exits 0 */
}
static void c_mainexit(void)
{
	pthread_t t;
	pthread_create(&t, NULL, late, NULL);
	printf("main calls pthread_exit\n");
	fflush(stdout);
	main_printed = 1;
	pthread_exit(NULL);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "create";
	if (!strcmp(c, "create")) c_create();
	else if (!strcmp(c, "detach")) c_detach();
	else if (!strcmp(c, "mutex")) c_mutex();
	else if (!strcmp(c, "condvar")) c_condvar();
	else if (!strcmp(c, "barrier")) c_barrier();
	else if (!strcmp(c, "rwlock")) c_rwlock();
	else if (!strcmp(c, "tls")) c_tls();
	else if (!strcmp(c, "sem")) c_sem();
	else if (!strcmp(c, "many")) c_many();
	else if (!strcmp(c, "mmap")) c_mmap();
	else if (!strcmp(c, "forkcow")) c_forkcow();
	else if (!strcmp(c, "mainexit")) c_mainexit();
	else { printf("unknown case %s\n", c); return 2; }
	return 0;
}
