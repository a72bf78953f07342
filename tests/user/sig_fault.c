/* fault signals to handlers (kernel/proc/signal.c kernel_user_trap): SIGSEGV (si_addr,
 * SEGV_MAPERR/ACCERR, trapno/err/cr2 in the context), SIGFPE, SIGILL, SIGTRAP, #GP; a
 * handler that siglongjmps out, one that fixes the page and returns; a blocked fault
 * signal and a fault with an unusable stack kill with SIGSEGV; sigaltstack. Case as
 * argv[1]. */
#include "ut.h"
#include <signal.h>
#include <setjmp.h>
#include <ucontext.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <stdint.h>
static sigjmp_buf jb;
static volatile int hits;
static siginfo_t last;
static long trapno, err, cr2;
static volatile char *page;
static int fix, onalt;
static char altbuf[65536];
static void h(int s, siginfo_t *si, void *ucv)
{
	(void)s;
	ucontext_t *uc = ucv;
	hits++;
	last = *si;
	trapno = uc->uc_mcontext.gregs[REG_TRAPNO];
	err = uc->uc_mcontext.gregs[REG_ERR];
	cr2 = uc->uc_mcontext.gregs[REG_CR2];
	char local;
	onalt = &local >= altbuf && &local < altbuf + sizeof altbuf;
	if (fix) {
		mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);
		return;
	}
	if (s == SIGTRAP)
		return;		/* int3 is a trap: rip is past it */
	siglongjmp(jb, 1);
}
static void install(int sig, int flags)
{
	struct sigaction sa = {0};
	sa.sa_sigaction = h;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}
static void show(const char *what)
{
	printf("%s: hits=%d signo=%d code=%d trapno=%ld\n", what, hits, last.si_signo,
	       last.si_code, trapno);
}
static int child(int how)
{
	fflush(stdout);
	pid_t k = fork();
	if (k == 0) {
		install(SIGSEGV, 0);
		if (how == 0) {		/* SIGSEGV blocked: the fault kills anyway */
			sigset_t b;
			sigemptyset(&b);
			sigaddset(&b, SIGSEGV);
			sigprocmask(SIG_BLOCK, &b, NULL);
			*(volatile int *)0 = 1;
		} else {		/* no stack to deliver on */
			__asm__ volatile("movq $16, %%rsp; movq $0, (%%rsp)" ::: "memory");
		}
		_exit(0);
	}
	int st;
	waitpid(k, &st, 0);
	return st;
}
int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "null";
	page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!strcmp(c, "null")) {
		install(SIGSEGV, 0);
		if (!sigsetjmp(jb, 1))
			*(volatile int *)0 = 1;
		show("null write");
		printf("addr=%lx err&7=%ld cr2=%lx\n", (long)last.si_addr, err & 7, cr2);
		/* the mask came back with siglongjmp: a second fault is delivered too */
		if (!sigsetjmp(jb, 1))
			*(volatile int *)8 = 1;
		show("again");
		printf("addr=%lx\n", (long)last.si_addr);
	} else if (!strcmp(c, "accerr")) {
		install(SIGSEGV, 0);
		if (!sigsetjmp(jb, 1))
			page[16] = 1;
		show("read-only write");
		printf("addr is the byte=%d err&7=%ld\n", (char *)last.si_addr == page + 16, err & 7);
	} else if (!strcmp(c, "fixup")) {
		install(SIGSEGV, 0);
		fix = 1;
		page[100] = 42;
		show("fixed");
		printf("value=%d\n", page[100]);
	} else if (!strcmp(c, "fpe")) {
		install(SIGFPE, 0);
		volatile int z = 0, r = 0;
		if (!sigsetjmp(jb, 1))
			r = 7 / z;
		(void)r;
		show("divide");
		printf("addr set=%d\n", last.si_addr != 0);
	} else if (!strcmp(c, "ill")) {
		install(SIGILL, 0);
		uintptr_t at = 0;
		if (!sigsetjmp(jb, 1))
			__asm__ volatile("leaq 1f(%%rip), %0; movq %0, %1; 1: ud2" : "=&r"(at), "=m"(at) :: "memory");
		show("ud2");
		printf("addr is the ud2=%d\n", (uintptr_t)last.si_addr == at);
	} else if (!strcmp(c, "trap")) {
		install(SIGTRAP, 0);
		__asm__ volatile("int3");
		show("int3");
	} else if (!strcmp(c, "gp")) {
		install(SIGSEGV, 0);
		if (!sigsetjmp(jb, 1))
			__asm__ volatile("hlt");
		show("hlt");
		printf("addr=%lx\n", (long)last.si_addr);
	} else if (!strcmp(c, "blocked")) {
		int st = child(0);
		printf("signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(c, "badstack")) {
		int st = child(1);
		printf("signaled=%d sig=%d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	} else if (!strcmp(c, "altstack")) {
		stack_t ss = { .ss_sp = altbuf, .ss_size = sizeof altbuf, .ss_flags = 0 }, o;
		SHOW("sigaltstack", sigaltstack(&ss, &o));
		printf("old disabled=%d\n", o.ss_flags == SS_DISABLE);
		install(SIGSEGV, SA_ONSTACK);
		if (!sigsetjmp(jb, 1))
			*(volatile int *)0 = 1;
		show("on altstack");
		printf("handler on altstack=%d\n", onalt);
		SHOW("query", sigaltstack(NULL, &o));
		printf("size=%d flags=%d\n", o.ss_size == sizeof altbuf, o.ss_flags);
		ss.ss_size = 100;
		SHOW("too small", sigaltstack(&ss, NULL));
		ss.ss_flags = 99;
		SHOW("bad flags", sigaltstack(&ss, NULL));
	}
	return 0;
}
