/* Signals and threads (issue 25): tgkill/tkill reach the named thread; a process-directed
 * signal goes to a thread that does not block it (all but one block it); masks and
 * pending sets are per thread, the process's pending set shared (sigpending of any
 * thread shows it); sigwait in one thread takes a signal every thread blocks; a fatal
 * signal taken by one thread ends the process; SIGSTOP stops every thread. Prints
 * relations only. Case as argv[1]. */
#include "ut.h"
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>

static volatile pid_t handler_tid;
static volatile int hits;
static void h(int s)
{
	(void)s;
	handler_tid = (pid_t)syscall(SYS_gettid);
	__atomic_add_fetch(&hits, 1, __ATOMIC_SEQ_CST);
}
static void install(int sig)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}
static void block(int sig, int how)
{
	sigset_t m;
	sigemptyset(&m);
	sigaddset(&m, sig);
	pthread_sigmask(how, &m, NULL);
}

#define NT 3
static volatile pid_t tids[NT];
static volatile int stop, unblock_me = -1, started;
static void *worker(void *a)
{
	int id = (int)(uintptr_t)a;
	tids[id] = (pid_t)syscall(SYS_gettid);
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	while (!stop) {
		if (unblock_me == id) {
			unblock_me = -1;
			block(SIGUSR1, SIG_UNBLOCK);
		}
		sched_yield();
	}
	return NULL;
}
static pthread_t th[NT];
static void start_workers(void)
{
	for (int i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	while (started < NT)
		sched_yield();
}
static void stop_workers(void)
{
	stop = 1;
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
}
static void wait_hits(int n)
{
	while (__atomic_load_n(&hits, __ATOMIC_SEQ_CST) < n)
		sched_yield();
}

static void c_tgkill(void)
{
	install(SIGUSR1);
	start_workers();
	for (int i = 0; i < NT; i++) {
		long r = syscall(SYS_tgkill, getpid(), tids[i], SIGUSR1);
		wait_hits(i + 1);
		printf("tgkill thread %d: %ld, handler ran in it %d\n", i, r, handler_tid == tids[i]);
	}
	long r = syscall(SYS_tkill, tids[1], SIGUSR1);
	wait_hits(NT + 1);
	printf("tkill thread 1: %ld, handler ran in it %d\n", r, handler_tid == tids[1]);
	r = pthread_kill(th[2], SIGUSR1);
	wait_hits(NT + 2);
	printf("pthread_kill thread 2: %ld, in it %d\n", r, handler_tid == tids[2]);
	errno = 0;
	r = syscall(SYS_tgkill, getpid() + 100000, tids[0], SIGUSR1);
	printf("tgkill wrong tgid: %ld errno %d\n", r, errno);
	errno = 0;
	r = syscall(SYS_tgkill, getpid(), tids[0], 0);
	printf("tgkill sig 0: %ld\n", r);
	errno = 0;
	r = syscall(SYS_tgkill, getpid(), tids[0], 65);
	printf("tgkill sig 65: %ld errno %d\n", r, errno);
	errno = 0;
	r = syscall(SYS_tgkill, getpid(), 0, SIGUSR1);
	printf("tgkill tid 0: %ld errno %d\n", r, errno);
	stop_workers();
	printf("hits %d\n", hits);
}

static void c_procsig(void)
{
	install(SIGUSR1);
	block(SIGUSR1, SIG_BLOCK);	/* inherited: every worker blocks it too */
	start_workers();
	unblock_me = 1;
	while (unblock_me != -1)
		sched_yield();
	for (int k = 0; k < 5; k++) {
		kill(getpid(), SIGUSR1);
		wait_hits(k + 1);
	}
	printf("5 kills, each handled by the one thread that does not block it: %d\n",
	       handler_tid == tids[1]);
	/* the pending set is the process's: every thread sees it (thread 1 blocks again
	 * first, the others never unblocked) */
	stop_workers();
	sigset_t p;
	kill(getpid(), SIGUSR1);
	sigpending(&p);
	printf("all block it: pending in main %d, handled %d\n", sigismember(&p, SIGUSR1), hits);
	block(SIGUSR1, SIG_UNBLOCK);
	printf("unblocked in main: handled %d, in main %d\n", hits, handler_tid == getpid());
}

static volatile int tpend_seen = -1;
static void *pend_thread(void *a)
{
	(void)a;
	block(SIGUSR2, SIG_BLOCK);
	__atomic_store_n(&started, 1, __ATOMIC_SEQ_CST);
	while (!stop)
		sched_yield();
	sigset_t p;
	sigpending(&p);
	tpend_seen = sigismember(&p, SIGUSR2);
	return NULL;	/* ends with SIGUSR2 pending: it goes with the thread */
}
static void c_mask(void)
{
	install(SIGUSR2);
	started = 0;
	stop = 0;
	pthread_t t;
	pthread_create(&t, NULL, pend_thread, NULL);
	while (!started)
		sched_yield();
	sigset_t m;
	pthread_sigmask(SIG_BLOCK, NULL, &m);
	printf("the thread's block is not main's: %d\n", !sigismember(&m, SIGUSR2));
	pthread_kill(t, SIGUSR2);
	sigset_t p;
	sigpending(&p);
	printf("thread-directed: pending in main %d\n", sigismember(&p, SIGUSR2));
	stop = 1;
	pthread_join(t, NULL);
	printf("pending in the thread %d, handled %d\n", tpend_seen, hits);
}

static volatile int sw_sig = -1;
static void *sigwaiter(void *a)
{
	(void)a;
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	int sig;
	__atomic_store_n(&started, 1, __ATOMIC_SEQ_CST);
	sigwait(&s, &sig);
	sw_sig = sig;
	return NULL;
}
static void c_sigwait(void)
{
	install(SIGUSR1);
	block(SIGUSR1, SIG_BLOCK);
	started = 0;
	pthread_t t;
	pthread_create(&t, NULL, sigwaiter, NULL);
	while (!started)
		sched_yield();
	for (int i = 0; i < 10; i++)
		sched_yield();
	kill(getpid(), SIGUSR1);
	pthread_join(t, NULL);
	printf("sigwait in a thread took SIGUSR1: %d, handler ran %d\n", sw_sig == SIGUSR1, hits);
}

static void *killer(void *a)
{
	int how = (int)(uintptr_t)a;
	for (int i = 0; i < 5; i++)
		sched_yield();
	if (how == 0)
		raise(SIGTERM);		/* tkill to itself: thread-directed */
	else if (how == 1)
		kill(getpid(), SIGTERM);
	else
		*(volatile int *)8 = 1;	/* SIGSEGV in this thread */
	return NULL;
}
static void *sleeper(void *a)
{
	(void)a;
	for (;;)
		pause();
	return NULL;
}
static void c_fatal(void)
{
	for (int how = 0; how < 3; how++) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			pthread_t s1, s2, k;
			pthread_create(&s1, NULL, sleeper, NULL);
			pthread_create(&s2, NULL, sleeper, NULL);
			pthread_create(&k, NULL, killer, (void *)(uintptr_t)how);
			pthread_join(s1, NULL);
			_exit(0);
		}
		int st;
		pid_t w = waitpid(c, &st, 0);
		printf("case %d: reaped %d, signaled %d sig %d\n", how, w == c, WIFSIGNALED(st),
		       WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	}
}

/* SIGSTOP stops every thread of a process (Linux's group stop): the parent's WUNTRACED
 * wait returns once all have stopped - one writing to a pipe, one in pthread_join - and
 * no byte comes while it is stopped; SIGCONT lets the writer go on. */
static int stop_pipe[2];
static void *stop_writer(void *a)
{
	(void)a;
	for (;;) {
		write(stop_pipe[1], "a", 1);
		sched_yield();
	}
	return NULL;
}
static void c_stop(void)
{
	pipe(stop_pipe);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		pthread_t t;
		pthread_create(&t, NULL, stop_writer, NULL);
		pthread_join(t, NULL);
		_exit(0);
	}
	char b[4096];
	read(stop_pipe[0], b, 1);	/* the writer runs */
	kill(c, SIGSTOP);
	int st;
	pid_t w = waitpid(c, &st, WUNTRACED);
	printf("stopped: %d sig %d\n", w == c && WIFSTOPPED(st), WIFSTOPPED(st) ? WSTOPSIG(st) : 0);
	fcntl(stop_pipe[0], F_SETFL, O_NONBLOCK);
	while (read(stop_pipe[0], b, sizeof b) > 0)
		;
	struct timespec ts = { 0, 100000000 };
	nanosleep(&ts, NULL);
	long n = read(stop_pipe[0], b, sizeof b);
	printf("bytes while stopped: %ld (errno %s)\n", n > 0 ? n : 0L,
	       n < 0 && errno == EAGAIN ? "EAGAIN" : "-");
	kill(c, SIGCONT);
	w = waitpid(c, &st, WCONTINUED);
	printf("continued: %d\n", w == c && WIFCONTINUED(st));
	fcntl(stop_pipe[0], F_SETFL, 0);
	n = read(stop_pipe[0], b, 1);
	printf("the writer goes on: %d\n", n == 1);
	kill(c, SIGKILL);
	w = waitpid(c, &st, 0);
	printf("killed: %d sig %d\n", w == c && WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "tgkill";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(c, "tgkill")) c_tgkill();
	else if (!strcmp(c, "procsig")) c_procsig();
	else if (!strcmp(c, "mask")) c_mask();
	else if (!strcmp(c, "sigwait")) c_sigwait();
	else if (!strcmp(c, "fatal")) c_fatal();
	else if (!strcmp(c, "stop")) c_stop();
	else { printf("unknown case %s\n", c); return 2; }
	return 0;
}
