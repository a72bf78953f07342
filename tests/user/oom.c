/* oom: a child that touches anonymous memory until the kernel has no page left is
 * killed with SIGKILL (kernel/proc/signal.c: the out-of-memory kill of the process
 * whose allowed access found no page; console "ksync: Out of memory: Killed process
 * <pid> (oom)"); its parent's wait4 sees WIFSIGNALED/SIGKILL and the parent goes on:
 * it maps and touches memory itself afterwards. ksync only (on the host it would push
 * the dev machine into its own OOM killer).
 *
 * "oom kernel": the child fills memory through the kernel instead - read() of /dev/zero
 * into a huge mapping, whose copy-out faults in kernel mode: no page left is -EFAULT
 * (a user copy is not killed) - and then, with no page left, asks for more through the
 * kernel: fork (page tables, a kernel stack), pipe, a file write, mmap of a new area,
 * execve. Each must fail cleanly (an errno, never a panic); which errno depends on
 * which allocation found nothing (the heap may still hold free blocks), so only "it
 * failed or worked" is kept, and nothing is printed until the memory is given back
 * (the output pipe needs pages too). After munmap the same calls work again. */
#include "ut.h"
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <fcntl.h>

static long res[2][5];
static void kernel_calls(long *r)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	r[0] = p < 0 ? -errno : (waitpid(p, NULL, 0), 0);
	int fd[2];
	r[1] = pipe(fd) ? -errno : (close(fd[0]), close(fd[1]), 0);
	int f = open("/tmp/oomfile", O_RDWR | O_CREAT | O_TRUNC, 0644);
	char blk[4096] = { 1 };
	r[2] = f < 0 ? -errno : write(f, blk, sizeof blk) != sizeof blk ? -errno : 0;
	if (f >= 0)
		close(f);
	unlink("/tmp/oomfile");
	void *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r[3] = m == MAP_FAILED ? -errno : (munmap(m, 1 << 20), 0);
	p = vfork();
	if (p == 0) {
		char *av[] = { "t/hello", NULL };
		int nul = open("/dev/null", O_WRONLY);	/* its output is not ours */
		dup2(nul, 1);
		execve("/t/hello", av, av + 1);
		_exit(127);
	}
	int ws = 0;
	if (p > 0)
		waitpid(p, &ws, 0);
	r[4] = p < 0 ? -errno : WIFEXITED(ws) ? WEXITSTATUS(ws) : -1000;
}

static int kernel_side(void)
{
	size_t n = 1ull << 40;	/* more than the guest has: only touched pages cost */
	char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return 3;
	/* a sparse file reads as zeros, as much as asked in one call (a device gives 4 KiB) */
	int z = open("/tmp/oomsrc", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (z < 0 || ftruncate(z, 1 << 30))
		return 4;
	size_t off = 0;
	long r = 0;
	while (off < n && (r = pread(z, m + off, 1 << 30, 0)) > 0)
		off += (size_t)r;
	close(z);
	int err = r < 0 ? errno : 0;
	kernel_calls(res[0]);
	munmap(m, n);	/* 1 TiB, sparse: walks the tables that exist (uvm.c walk_next) */
	unlink("/tmp/oomsrc");	/* not before: with no page left, the path's buffer fails */
	kernel_calls(res[1]);
	printf("memory full: read stopped with errno %d after more than 64 MiB: %d\n", err,
	       off > (64u << 20));
	static const char *const what[] = { "fork", "pipe", "file write", "mmap", "execve" };
	for (int i = 0; i < 5; i++)
		printf("%s: while full %s, after munmap %s\n", what[i],
		       res[0][i] == 0 || (i == 4 && res[0][i] == 3) ? "worked" : "failed",
		       res[1][i] == 0 || (i == 4 && res[1][i] == 3) ? "worked" : "failed");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "kernel")) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			int rc = kernel_side();
			fflush(stdout);
			_exit(rc);
		}
		int ws = 0;
		waitpid(p, &ws, 0);
		printf("child: exited %d status %d\n", WIFEXITED(ws), WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws));
		return 0;
	}
	fflush(stdout);
	pid_t p = fork();
	if (p == 0) {
		for (;;) {
			char *m = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m == MAP_FAILED)
				_exit(3);	/* the address space, not memory, ran out */
			for (size_t i = 0; i < (64u << 20); i += 4096)
				m[i] = 1;
		}
	}
	int ws = 0;
	if (waitpid(p, &ws, 0) != p)
		printf("waitpid errno %d\n", errno);
	printf("child: signaled %d sig %d\n", WIFSIGNALED(ws), WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	size_t n = 16 << 20;
	unsigned char *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned sum = 0;
	for (size_t i = 0; m != MAP_FAILED && i < n; i += 4096) {
		m[i] = (unsigned char)(i >> 12);
		sum += m[i];
	}
	printf("parent goes on: 16 MiB touched, sum %u\n", sum);
	return 0;
}
