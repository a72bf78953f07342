/* The ends of threads and of multi-threaded processes (issue 25): exit_group from a
 * thread ends every thread; exit (SYS_exit) of the main thread leaves the others running,
 * and the process's status is the last thread's when every thread leaves by exit;
 * the parent's wait4 reports only once every thread is gone; SIGKILL of a multi-threaded
 * process; execve from a thread (the others end, the process keeps its id); a robust
 * mutex whose owner thread ended gives EOWNERDEAD to the next locker (the kernel's walk
 * of the robust list for a raw exit, musl's own for pthread_exit); /proc's thread count.
 * Case as argv[1]. */
#include "ut.h"
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>
#include <fcntl.h>

static void raw_exit(int code)
{
	for (;;)
		rawsys(SYS_exit, code, 0, 0, 0, 0, 0);
}
static void *forever(void *a)
{
	(void)a;
	for (;;)
		pause();
	return NULL;
}
static void report(const char *what, pid_t c)
{
	int st;
	pid_t w = waitpid(c, &st, 0);
	if (WIFEXITED(st))
		printf("%s: reaped %d, exited %d\n", what, w == c, WEXITSTATUS(st));
	else
		printf("%s: reaped %d, signaled %d\n", what, w == c, WTERMSIG(st));
	fflush(stdout);
}

static void *group_exiter(void *a)
{
	int how = (int)(uintptr_t)a;
	for (int i = 0; i < 5; i++)
		sched_yield();
	if (how == 0)
		exit(7);		/* exit_group after atexit/stdio */
	_exit(9);			/* exit_group at once */
}
static volatile pid_t late_tid;
/* 1 until the main thread has left: its clear_child_tid (set_tid_address), which the
 * kernel clears and wakes at its exit */
static volatile int main_word = 1;
static void *late_exit(void *a)
{
	int code = (int)(uintptr_t)a;
	late_tid = (pid_t)syscall(SYS_gettid);
	if (code == 5)
		while (main_word)
			syscall(SYS_futex, &main_word, 0 /* FUTEX_WAIT */, 1, NULL, NULL, 0);
	for (int i = 0; i < 20; i++)
		sched_yield();
	printf("the last thread runs after the main thread's exit\n");
	fflush(stdout);
	raw_exit(code);		/* exit, not exit_group: the last thread */
	return NULL;
}
static void c_group(void)
{
	for (int how = 0; how < 2; how++) {
		fflush(stdout);
		pid_t c = fork();
		if (c == 0) {
			pthread_t t[4];
			for (int i = 0; i < 3; i++)
				pthread_create(&t[i], NULL, forever, NULL);
			pthread_create(&t[3], NULL, group_exiter, (void *)(uintptr_t)how);
			pthread_join(t[0], NULL);	/* never: the group exit ends it */
			_exit(1);
		}
		report(how ? "_exit(9) in a thread" : "exit(7) in a thread", c);
	}
	/* the main thread leaves by exit(3); the other by exit(5): the process's status is
	 * the last thread's (what the host's Linux 6.x reports) */
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		pthread_t t;
		syscall(SYS_set_tid_address, &main_word);
		pthread_create(&t, NULL, late_exit, (void *)5);
		raw_exit(3);
	}
	report("main exit(3), last thread exit(5)", c);
	/* both by exit, the main thread last */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		pthread_t t;
		pthread_create(&t, NULL, late_exit, (void *)6);
		while (!late_tid)
			sched_yield();
		/* (not pthread_join: musl's join waits for its own pthread_exit's store) */
		while (syscall(SYS_tgkill, getpid(), late_tid, 0) == 0)
			sched_yield();
		printf("main saw the thread gone\n");
		fflush(stdout);
		raw_exit(4);
	}
	report("thread exit(6), main exit(4)", c);
}

static void c_kill(void)
{
	int p[2];
	pipe(p);
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, forever, NULL);
		write(p[1], "r", 1);
		for (;;)
			sched_yield();
	}
	char b;
	read(p[0], &b, 1);
	kill(c, SIGKILL);
	report("SIGKILL of a process of 5 threads", c);
	fflush(stdout);
	c = fork();
	if (c == 0) {
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, forever, NULL);
		write(p[1], "r", 1);
		pthread_join(t[0], NULL);
		_exit(0);
	}
	read(p[0], &b, 1);
	kill(c, SIGTERM);
	report("SIGTERM of a process of 3 threads blocked in join and pause", c);
}

static char self_path[256];
static void *execer(void *a)
{
	char pid[32];
	snprintf(pid, sizeof pid, "%d", (int)(intptr_t)a);
	for (int i = 0; i < 5; i++)
		sched_yield();
	execl(self_path, self_path, "after_exec", pid, (char *)NULL);
	printf("execl failed: %d\n", errno);
	return NULL;
}
static void c_exec(void)
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		pthread_t t[3];
		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, forever, NULL);
		pthread_create(&t[2], NULL, execer, (void *)(intptr_t)getpid());
		pthread_join(t[0], NULL);	/* never: the exec ends this thread */
		_exit(1);
	}
	report("execve from a thread", c);
	/* execve from a thread of a process whose main thread already left by exit */
	fflush(stdout);
	c = fork();
	if (c == 0) {
		pthread_t t;
		pthread_create(&t, NULL, execer, (void *)(intptr_t)getpid());
		raw_exit(0);
	}
	report("execve from the only thread left", c);
}
static void after_exec(const char *want)
{
	pid_t me = getpid();
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	int n = fd >= 0 ? (int)read(fd, buf, sizeof buf - 1) : -1;
	buf[n > 0 ? n : 0] = 0;
	char *th = strstr(buf, "Threads:");
	int threads = th ? atoi(th + 8) : -1;
	printf("after exec: pid kept %d, gettid == pid %d, threads %d\n", me == atoi(want),
	       (pid_t)syscall(SYS_gettid) == me, threads);
	fflush(stdout);
}

static pthread_mutex_t rm;
static volatile int owner_ready;
static void *owner(void *a)
{
	int how = (int)(uintptr_t)a;
	pthread_mutex_lock(&rm);
	owner_ready = 1;
	if (how == 0)
		raw_exit(0);	/* the kernel walks the robust list */
	return NULL;		/* pthread_exit: musl walks it itself */
}
static void c_robust(void)
{
	/* musl keeps the kernel's robust list for process-shared robust mutexes only (a
	 * private one it releases itself in pthread_exit): the raw exit's case is shared */
	pthread_mutexattr_t ma, mp;
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_init(&mp);
	pthread_mutexattr_setrobust(&mp, PTHREAD_MUTEX_ROBUST);
	pthread_mutexattr_setpshared(&mp, PTHREAD_PROCESS_SHARED);
	for (int how = 0; how < 2; how++) {
		pthread_mutex_init(&rm, how ? &ma : &mp);
		owner_ready = 0;
		pthread_t t;
		pthread_create(&t, NULL, owner, (void *)(uintptr_t)how);
		while (!owner_ready)
			sched_yield();
		if (how == 1)
			pthread_join(t, NULL);
		int e = pthread_mutex_lock(&rm);	/* waits until the owner is gone */
		printf("%s: lock %s\n", how ? "owner returned" : "owner raw exit",
		       e == EOWNERDEAD ? "EOWNERDEAD" : strerror(e));
		int r1 = pthread_mutex_consistent(&rm);
		int r2 = pthread_mutex_unlock(&rm);
		int r3 = pthread_mutex_lock(&rm);
		int r4 = pthread_mutex_unlock(&rm);
		printf("consistent %d, unlock %d, relock %d, unlock %d\n", r1, r2, r3, r4);
		pthread_mutex_destroy(&rm);
	}
	/* EOWNERDEAD, then unlocked without pthread_mutex_consistent: not recoverable */
	pthread_mutex_init(&rm, &mp);
	owner_ready = 0;
	pthread_t t;
	pthread_create(&t, NULL, owner, (void *)0);
	while (!owner_ready)
		sched_yield();
	int e = pthread_mutex_lock(&rm);
	pthread_mutex_unlock(&rm);
	int e2 = pthread_mutex_lock(&rm);
	printf("lock %s, then %s\n", e == EOWNERDEAD ? "EOWNERDEAD" : strerror(e),
	       e2 == ENOTRECOVERABLE ? "ENOTRECOVERABLE" : strerror(e2));
	/* set_robust_list's length check */
	long r = rawsys(SYS_set_robust_list, 0, 23, 0, 0, 0, 0);
	printf("set_robust_list len 23: %ld\n", r);
}

static volatile int go;
static void *spin_until(void *a)
{
	(void)a;
	while (!go)
		sched_yield();
	return NULL;
}
static int threads_line(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	int n = fd >= 0 ? (int)read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	char *th = strstr(buf, "Threads:");
	return th ? atoi(th + 8) : -1;
}
static void c_proc(void)
{
	printf("threads %d\n", threads_line());
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, spin_until, NULL);
	printf("threads %d\n", threads_line());
	go = 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	int n;
	for (int k = 0; k < 1000 && (n = threads_line()) != 1; k++)
		sched_yield();	/* a joined thread may still be leaving on Linux */
	printf("threads %d\n", threads_line());
	char self[64], tid[64];
	snprintf(self, sizeof self, "/proc/%d", getpid());
	int fd = open(self, O_RDONLY | O_DIRECTORY);
	printf("/proc/<pid> opens %d\n", fd >= 0);
	(void)tid;
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "group";
	snprintf(self_path, sizeof self_path, "%s", argv[0]);
	if (!strcmp(c, "group")) c_group();
	else if (!strcmp(c, "kill")) c_kill();
	else if (!strcmp(c, "exec")) c_exec();
	else if (!strcmp(c, "after_exec")) after_exec(argc > 2 ? argv[2] : "0");
	else if (!strcmp(c, "robust")) c_robust();
	else if (!strcmp(c, "proc")) c_proc();
	else { printf("unknown case %s\n", c); return 2; }
	return 0;
}
