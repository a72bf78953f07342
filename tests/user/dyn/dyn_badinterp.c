/* dyn_badinterp: execve of a dynamic program whose interpreter (PT_INTERP) is missing, is
 * not an ELF file, or is an ELF of another machine: the errno Linux's binfmt_elf answers
 * (ENOENT, ELIBBAD) and the caller goes on; the kernel does not crash. The program is a
 * copy of t/dyn_hello with its PT_INTERP path rewritten (same length). Usage:
 * dyn_badinterp. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned char img[1 << 20];

static void try(const char *exe, const char *interp, const void *ldata, size_t llen)
{
	int fd = open("t/dyn_hello", O_RDONLY);
	ssize_t n = read(fd, img, sizeof img);
	close(fd);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_INTERP) {
			memset(img + ph[i].p_offset, 0, ph[i].p_filesz);
			memcpy(img + ph[i].p_offset, interp, strlen(interp));
		}
	fd = open(exe, O_CREAT | O_WRONLY | O_TRUNC, 0755);
	write(fd, img, n);
	close(fd);
	if (ldata) {
		fd = open(interp, O_CREAT | O_WRONLY | O_TRUNC, 0755);
		write(fd, ldata, llen);
		close(fd);
	}
	fflush(stdout);
	pid_t k = fork();
	if (k == 0) {
		char *av[] = { (char *)exe, NULL };
		execv(exe, av);
		printf("%s: execve errno %d\n", interp, errno);
		fflush(stdout);
		_exit(1);
	}
	int st;
	waitpid(k, &st, 0);
	printf("%s: child %s %d\n", interp, WIFSIGNALED(st) ? "signal" : "exit",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	unlink(exe);
	if (ldata)
		unlink(interp);
}

int main(void)
{
	static char junk[256];
	memset(junk, 'j', sizeof junk);
	try("w_bi1", "w_noldxx", NULL, 0);
	try("w_bi2", "w_junkld", junk, sizeof junk);
	/* an ELF header of another machine (EM_386) */
	static unsigned char other[256];
	int fd = open("t/dyn_hello", O_RDONLY);
	read(fd, other, sizeof other);
	close(fd);
	other[18] = 3;
	other[19] = 0;
	try("w_bi3", "w_i386ld", other, sizeof other);
	printf("still running\n");
	return 0;
}
