/* signal handlers (kernel/proc/signal.c): the handler runs and returns, its siginfo,
 * the mask while it runs, SA_NODEFER, SA_RESETHAND, pending and ignored signals, a
 * handler without SA_RESTORER. Run with the case as argv[1]. */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
static volatile int hits, depth, maxdepth;
static siginfo_t last;
static sigset_t inmask;
static void act(int s, siginfo_t *si, void *uc)
{
	(void)s; (void)uc;
	hits++;
	depth++;
	if (depth > maxdepth)
		maxdepth = depth;
	last = *si;
	sigprocmask(SIG_BLOCK, NULL, &inmask);
	if (depth == 1 && hits < 3)
		raise(SIGUSR1);	/* nested: runs now only under SA_NODEFER */
	depth--;
}
static void install(int sig, int flags, int masked)
{
	struct sigaction sa = {0};
	sa.sa_sigaction = act;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	if (masked)
		sigaddset(&sa.sa_mask, masked);
	sigaction(sig, &sa, NULL);
}
static int child_status(void (*fn)(void))
{
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		fn();
		_exit(0);
	}
	int st;
	waitpid(c, &st, 0);
	return st;
}
static void twice(void)
{
	install(SIGUSR2, SA_RESETHAND, 0);
	raise(SIGUSR2);
	struct sigaction o;
	sigaction(SIGUSR2, NULL, &o);
	printf("child: hits=%d handler now default=%d\n", hits, o.sa_handler == SIG_DFL);
	fflush(stdout);
	raise(SIGUSR2);
	printf("not reached\n");
}
static void norestorer(void)
{
	/* the raw call: a handler without SA_RESTORER (x86-64 Linux cannot build its frame) */
	struct { void *h; unsigned long flags; void *restorer; unsigned long mask; } k =
		{ (void *)act, SA_SIGINFO, 0, 0 };
	printf("rt_sigaction = %ld\n", rawsys(SYS_rt_sigaction, SIGUSR1, (long)&k, 0, 8, 0, 0));
	fflush(stdout);
	raise(SIGUSR1);
	printf("not reached\n");
}
static void badhandler(void)
{
	/* a handler address that is not canonical: the return to it cannot happen */
	extern void __restore_rt(void);
	struct { unsigned long h; unsigned long flags; void *restorer; unsigned long mask; } k =
		{ 0x8000000000000000ul, SA_SIGINFO | 0x04000000 /* SA_RESTORER */, (void *)__restore_rt, 0 };
	printf("rt_sigaction = %ld\n", rawsys(SYS_rt_sigaction, SIGUSR1, (long)&k, 0, 8, 0, 0));
	fflush(stdout);
	raise(SIGUSR1);
	printf("not reached\n");
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "basic";
	if (!strcmp(c, "basic")) {
		install(SIGUSR1, 0, 0);
		SHOW("raise", raise(SIGUSR1));
		printf("hits=%d signo=%d code=%d pid_self=%d uid=%d maxdepth=%d\n", hits,
		       last.si_signo, last.si_code, last.si_pid == getpid(), (int)last.si_uid, maxdepth);
		SHOW("kill", kill(getpid(), SIGUSR1));
		printf("hits=%d signo=%d code=%d pid_self=%d\n", hits, last.si_signo, last.si_code,
		       last.si_pid == getpid());
	} else if (!strcmp(c, "mask")) {
		install(SIGUSR1, 0, SIGUSR2);
		raise(SIGUSR1);
		sigset_t now;
		sigprocmask(SIG_BLOCK, NULL, &now);
		printf("in handler: usr1=%d usr2=%d term=%d; after: usr1=%d usr2=%d; hits=%d maxdepth=%d\n",
		       sigismember(&inmask, SIGUSR1), sigismember(&inmask, SIGUSR2),
		       sigismember(&inmask, SIGTERM), sigismember(&now, SIGUSR1),
		       sigismember(&now, SIGUSR2), hits, maxdepth);
	} else if (!strcmp(c, "nodefer")) {
		install(SIGUSR1, SA_NODEFER, 0);
		raise(SIGUSR1);
		printf("in handler usr1 blocked=%d hits=%d maxdepth=%d\n",
		       sigismember(&inmask, SIGUSR1), hits, maxdepth);
	} else if (!strcmp(c, "resethand")) {
		int st = child_status(twice);
		printf("child signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(c, "pending")) {
		install(SIGUSR1, 0, 0);
		sigset_t b, p;
		sigemptyset(&b);
		sigaddset(&b, SIGUSR1);
		sigprocmask(SIG_BLOCK, &b, NULL);
		raise(SIGUSR1);
		raise(SIGUSR1);		/* not queued: one delivery */
		sigpending(&p);
		printf("pending usr1=%d usr2=%d hits=%d\n", sigismember(&p, SIGUSR1),
		       sigismember(&p, SIGUSR2), hits);
		sigprocmask(SIG_UNBLOCK, &b, NULL);
		sigpending(&p);
		printf("after unblock hits=%d pending=%d\n", hits, sigismember(&p, SIGUSR1));
	} else if (!strcmp(c, "ignore")) {
		signal(SIGUSR1, SIG_IGN);
		SHOW("raise ignored", raise(SIGUSR1));
		install(SIGUSR2, 0, 0);
		sigset_t b, p;
		sigemptyset(&b);
		sigaddset(&b, SIGUSR2);
		sigprocmask(SIG_BLOCK, &b, NULL);
		raise(SIGUSR2);
		signal(SIGUSR2, SIG_IGN);	/* discards the pending one */
		sigpending(&p);
		printf("pending after SIG_IGN=%d\n", sigismember(&p, SIGUSR2));
		install(SIGUSR2, 0, 0);
		sigprocmask(SIG_UNBLOCK, &b, NULL);
		printf("hits=%d\n", hits);
	} else if (!strcmp(c, "norestorer")) {
		int st = child_status(norestorer);
		printf("child signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(c, "badhandler")) {
		int st = child_status(badhandler);
		printf("child signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(c, "default")) {
		/* default actions: terminate, ignore (SIGCHLD, SIGURG, SIGWINCH, SIGCONT) */
		static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGABRT, SIGUSR2, SIGALRM,
					    SIGTERM, SIGCHLD, SIGURG, SIGWINCH, SIGCONT, SIGSYS, 40 };
		for (unsigned i = 0; i < sizeof sigs / sizeof *sigs; i++) {
			fflush(stdout);
			pid_t k = fork();
			if (k == 0) {
				raise(sigs[i]);
				_exit(3);
			}
			int st;
			waitpid(k, &st, 0);
			printf("sig %d: exited=%d code=%d signaled=%d sig=%d\n", sigs[i], WIFEXITED(st),
			       WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st),
			       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
		}
	}
	return 0;
}
