/* Signals racing system calls (kernel/proc/signal.c, proc.c's posting): three children
 * send SIGUSR1 to the parent as fast as they can while it sits in a pipe read that
 * SA_RESTART makes again after every handler; then each writes one byte. The parent
 * must read exactly three bytes and reap three children; signals coalesce (standard
 * signals do not queue), so only 1 <= handled <= sent is printed. argv[1]: rounds per
 * child (make stress runs a long size). */
#include "ut.h"
#include <signal.h>
#include <sys/wait.h>
static volatile long handled;
static void h(int s) { (void)s; handled++; }
int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;
	struct sigaction sa = {0};
	sa.sa_handler = h;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	int p[2];
	pipe(p);
	pid_t parent = getpid();
	fflush(stdout);
	for (int i = 0; i < 3; i++) {
		if (fork() == 0) {
			signal(SIGUSR1, SIG_DFL);
			for (long r = 0; r < rounds; r++) {
				kill(parent, SIGUSR1);
				if (r % 16 == 0)
					sched_yield();
			}
			write(p[1], "x", 1);
			_exit(0);
		}
	}
	int bytes = 0;
	char b[4];
	while (bytes < 3) {
		long n = read(p[0], b, sizeof b);
		if (n <= 0) {
			printf("read = %ld errno %d\n", n, errno);
			break;
		}
		bytes += (int)n;
	}
	int reaped = 0, st;
	while (wait(&st) > 0)
		reaped += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	printf("bytes=%d reaped=%d handled>=1=%d handled<=sent=%d\n", bytes, reaped,
	       handled >= 1, handled <= 3 * rounds);
	return 0;
}
