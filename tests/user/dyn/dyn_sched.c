/* dyn_sched: the scheduling calls cyclictest and hackbench make (sched_setscheduler and its
 * family, affinity, mlockall, /dev/cpu_dma_latency): results and errno values, the error
 * paths (EINVAL for a bad policy or priority, ESRCH for no such process, EFAULT), what a
 * fork child inherits (SCHED_RESET_ON_FORK). The caller is root on both
 * kernels. Usage: dyn_sched CASE. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW(name, expr) do { errno = 0; long r_ = (long)(expr); \
	if (r_ == -1) \
		printf("%s = -1 errno %d\n", name, errno); \
	else \
		printf("%s = %ld\n", name, r_); \
	fflush(stdout); } while (0)

static long raw(long nr, long a, long b, long c, long d)
{
	long r = syscall(nr, a, b, c, d);
	return r == -1 ? -errno : r;
}

struct attr { uint32_t size, policy; uint64_t flags; int32_t nice; uint32_t prio;
	      uint64_t rt, dl, per; };

/* What a fork child gets of the caller's policy, reported by itself (SCHED_RESET_ON_FORK
 * resets a real-time policy, and is not kept). (A thread is not asked here: glibc's
 * pthread_create tries clone3 and madvise, which ksync answers ENOSYS, and this suite
 * counts those.) */
static void child_report(const char *tag)
{
	fflush(stdout);
	pid_t k = fork();
	if (k == 0) {
		struct sched_param q;
		sched_getparam(0, &q);
		printf("%s child: policy %d prio %d\n", tag, sched_getscheduler(0), q.sched_priority);
		fflush(stdout);
		_exit(0);
	}
	waitpid(k, NULL, 0);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "policy";
	struct sched_param sp = { 0 };
	int dead;
	pid_t k = fork();
	if (k == 0)
		_exit(0);
	waitpid(k, NULL, 0);
	dead = k;	/* reaped: no such process */
	if (!strcmp(c, "policy")) {
		SHOW("getscheduler", sched_getscheduler(0));
		SHOW("getparam", sched_getparam(0, &sp));
		printf("prio %d\n", sp.sched_priority);
		SHOW("max FIFO", sched_get_priority_max(SCHED_FIFO));
		SHOW("min FIFO", sched_get_priority_min(SCHED_FIFO));
		SHOW("max RR", sched_get_priority_max(SCHED_RR));
		SHOW("min RR", sched_get_priority_min(SCHED_RR));
		SHOW("max OTHER", sched_get_priority_max(SCHED_OTHER));
		SHOW("min BATCH", sched_get_priority_min(SCHED_BATCH));
		SHOW("max IDLE", sched_get_priority_max(SCHED_IDLE));
		SHOW("max 4", sched_get_priority_max(4));
		SHOW("min -1", sched_get_priority_min(-1));
		sp.sched_priority = 80;
		SHOW("set FIFO 80", sched_setscheduler(0, SCHED_FIFO, &sp));
		SHOW("getscheduler", sched_getscheduler(0));
		sp.sched_priority = 0;
		SHOW("getparam", sched_getparam(getpid(), &sp));
		printf("prio %d\n", sp.sched_priority);
		fflush(stdout);
		k = fork();
		if (k == 0) {
			struct sched_param q;
			sched_getparam(0, &q);
			printf("child inherits policy %d prio %d\n", sched_getscheduler(0), q.sched_priority);
			_exit(0);
		}
		waitpid(k, NULL, 0);
		sp.sched_priority = 42;
		SHOW("setparam 42", sched_setparam(0, &sp));
		sched_getparam(0, &sp);
		printf("prio %d\n", sp.sched_priority);
		sp.sched_priority = 0;
		SHOW("setparam 0 under FIFO", sched_setparam(0, &sp));
		sp.sched_priority = 5;
		SHOW("set RR 5", sched_setscheduler(0, SCHED_RR, &sp));
		SHOW("getscheduler", sched_getscheduler(0));
		sp.sched_priority = 0;
		SHOW("set OTHER 0", sched_setscheduler(0, SCHED_OTHER, &sp));
		SHOW("set BATCH 0", sched_setscheduler(0, SCHED_BATCH, &sp));
		SHOW("getscheduler", sched_getscheduler(0));
		SHOW("set OTHER 0", sched_setscheduler(0, SCHED_OTHER, &sp));
		SHOW("reset-on-fork flag", sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp));
		SHOW("getscheduler", sched_getscheduler(0));
		SHOW("set OTHER 0", sched_setscheduler(0, SCHED_OTHER, &sp));
	} else if (!strcmp(c, "fork")) {
		sp.sched_priority = 30;
		SHOW("set FIFO 30", sched_setscheduler(0, SCHED_FIFO, &sp));
		child_report("FIFO");
		SHOW("set RR 30 reset-on-fork", sched_setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, &sp));
		SHOW("getscheduler", sched_getscheduler(0));
		child_report("RR|reset");
		sp.sched_priority = 0;
		SHOW("set BATCH reset-on-fork", sched_setscheduler(0, SCHED_BATCH | SCHED_RESET_ON_FORK, &sp));
		child_report("BATCH|reset");
		SHOW("set IDLE", sched_setscheduler(0, SCHED_IDLE, &sp));
		child_report("IDLE");
		SHOW("set OTHER 0", sched_setscheduler(0, SCHED_OTHER, &sp));
		child_report("OTHER");
	} else if (!strcmp(c, "errors")) {
		sp.sched_priority = 0;
		SHOW("FIFO prio 0", sched_setscheduler(0, SCHED_FIFO, &sp));
		sp.sched_priority = 100;
		SHOW("FIFO prio 100", sched_setscheduler(0, SCHED_FIFO, &sp));
		sp.sched_priority = -1;
		SHOW("RR prio -1", sched_setscheduler(0, SCHED_RR, &sp));
		sp.sched_priority = 1;
		SHOW("OTHER prio 1", sched_setscheduler(0, SCHED_OTHER, &sp));
		SHOW("policy 4", sched_setscheduler(0, 4, &sp));
		SHOW("policy 7", sched_setscheduler(0, 7, &sp));
		SHOW("policy -1", sched_setscheduler(0, -1, &sp));
		SHOW("pid -1", sched_setscheduler(-1, SCHED_FIFO, &sp));
		SHOW("dead pid", sched_setscheduler(dead, SCHED_FIFO, &sp));
		SHOW("dead pid, bad policy", sched_setscheduler(dead, 77, &sp));
		printf("NULL param %ld\n", raw(SYS_sched_setscheduler, 0, SCHED_FIFO, 0, 0));
		printf("bad param %ld\n", raw(SYS_sched_setscheduler, 0, SCHED_FIFO, 16, 0));
		SHOW("getscheduler dead", sched_getscheduler(dead));
		SHOW("getscheduler -1", sched_getscheduler(-1));
		SHOW("getparam dead", sched_getparam(dead, &sp));
		printf("getparam NULL %ld\n", raw(SYS_sched_getparam, 0, 0, 0, 0));
		printf("getparam bad %ld\n", raw(SYS_sched_getparam, 0, 16, 0, 0));
		SHOW("setparam dead", sched_setparam(dead, &sp));
		sp.sched_priority = 3;
		SHOW("setparam 3 under OTHER", sched_setparam(0, &sp));
		SHOW("getscheduler", sched_getscheduler(0));
	} else if (!strcmp(c, "attr")) {
		struct attr a = { sizeof a, SCHED_FIFO, 0, 0, 10, 0, 0, 0 };
		printf("setattr FIFO 10 %ld\n", raw(SYS_sched_setattr, 0, (long)&a, 0, 0));
		SHOW("getscheduler", sched_getscheduler(0));
		struct attr g;
		memset(&g, 0x5a, sizeof g);
		printf("getattr %ld\n", raw(SYS_sched_getattr, 0, (long)&g, sizeof g, 0));
		printf("size %u policy %u prio %u flags %lu\n", g.size, g.policy, g.prio, (unsigned long)g.flags);
		a.prio = 0;
		printf("setattr FIFO 0 %ld\n", raw(SYS_sched_setattr, 0, (long)&a, 0, 0));
		printf("setattr flags arg %ld\n", raw(SYS_sched_setattr, 0, (long)&a, 1, 0));
		a.size = 20;
		printf("setattr small size %ld, size now %u\n", raw(SYS_sched_setattr, 0, (long)&a, 0, 0), a.size);
		a.size = sizeof a;
		a.policy = SCHED_OTHER;
		printf("setattr OTHER %ld\n", raw(SYS_sched_setattr, 0, (long)&a, 0, 0));
		printf("setattr dead %ld\n", raw(SYS_sched_setattr, dead, (long)&a, 0, 0));
		printf("setattr NULL %ld\n", raw(SYS_sched_setattr, 0, 0, 0, 0));
		SHOW("getscheduler", sched_getscheduler(0));
	} else if (!strcmp(c, "affinity")) {
		cpu_set_t s;
		CPU_ZERO(&s);
		SHOW("getaffinity", sched_getaffinity(0, sizeof s, &s) == 0 && CPU_ISSET(0, &s));
		CPU_ZERO(&s);
		CPU_SET(0, &s);
		SHOW("setaffinity cpu 0", sched_setaffinity(0, sizeof s, &s));
		SHOW("setaffinity self pid", sched_setaffinity(getpid(), sizeof s, &s));
		/* applied: the mask reads back as CPU 0 alone, the caller runs there, and a
		 * child inherits both */
		CPU_ZERO(&s);
		SHOW("getaffinity after", sched_getaffinity(0, sizeof s, &s) == 0 &&
					  CPU_COUNT(&s) == 1 && CPU_ISSET(0, &s));
		SHOW("running on cpu 0", sched_getcpu() == 0);
		pid_t ch = fork();
		if (ch == 0) {
			CPU_ZERO(&s);
			_exit(sched_getaffinity(0, sizeof s, &s) == 0 && CPU_COUNT(&s) == 1 &&
			      CPU_ISSET(0, &s) && sched_getcpu() == 0 ? 0 : 1);
		}
		int cst = -1;
		SHOW("child inherits cpu 0", waitpid(ch, &cst, 0) == ch && WIFEXITED(cst) &&
					     WEXITSTATUS(cst) == 0);
		/* another task's mask: the child, waiting in read, is moved by its parent
		 * (free to run anywhere again first) and runs on CPU 0 after the read */
		int pp[2];
		if (pipe(pp) == 0) {
			cpu_set_t all;
			CPU_ZERO(&all);
			for (int c = 0; c < 64; c++)
				CPU_SET(c, &all);
			sched_setaffinity(0, sizeof all, &all);
			ch = fork();
			if (ch == 0) {
				char b;
				if (read(pp[0], &b, 1) != 1)
					_exit(2);
				_exit(sched_getcpu() == 0 ? 0 : 1);
			}
			SHOW("setaffinity of a child", sched_setaffinity(ch, sizeof s, &s));
			SHOW("write", write(pp[1], "x", 1));
			SHOW("the child ran on cpu 0", waitpid(ch, &cst, 0) == ch && WIFEXITED(cst) &&
						       WEXITSTATUS(cst) == 0);
			close(pp[0]);
			close(pp[1]);
		}
		CPU_ZERO(&s);
		SHOW("setaffinity empty", sched_setaffinity(0, sizeof s, &s));
		CPU_SET(0, &s);
		SHOW("setaffinity dead", sched_setaffinity(dead, sizeof s, &s));
		SHOW("setaffinity -1", sched_setaffinity(-1, sizeof s, &s));
		printf("setaffinity bad mask %ld\n", raw(SYS_sched_setaffinity, 0, 8, 16, 0));
	} else if (!strcmp(c, "mlock")) {
		SHOW("mlockall", mlockall(MCL_CURRENT | MCL_FUTURE));
		SHOW("mlockall 0", mlockall(0));
		SHOW("mlockall 8", mlockall(8));
		SHOW("mlockall onfault alone", mlockall(MCL_ONFAULT));
		char buf[100];
		SHOW("mlock", mlock(buf, sizeof buf));
		SHOW("munlock", munlock(buf, sizeof buf));
		SHOW("munlockall", munlockall());
	} else if (!strcmp(c, "dma")) {
		/* cyclictest's: open, write a 32-bit 0, keep it open while it runs */
		int fd = open("/dev/cpu_dma_latency", O_RDWR);
		printf("cpu_dma_latency open %d\n", fd >= 0);
		int32_t v = 0;
		SHOW("write 0", write(fd, &v, sizeof v));
		SHOW("close", close(fd));
	} else {
		printf("unknown case\n");
		return 2;
	}
	return 0;
}
