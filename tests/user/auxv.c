/* the auxiliary vector musl and glibc need, and the SysV initial stack alignment */
#include "ut.h"
#include <sys/auxv.h>
#include <elf.h>
int main(int argc, char **argv)
{
	printf("pagesz=%lu\n", getauxval(AT_PAGESZ));
	printf("phent=%lu\n", getauxval(AT_PHENT));
	const Elf64_Phdr *ph = (const Elf64_Phdr *)getauxval(AT_PHDR);
	unsigned long n = getauxval(AT_PHNUM), loads = 0;
	for (unsigned long i = 0; ph && i < n; i++)
		loads += ph[i].p_type == PT_LOAD;
	printf("phnum>0=%d loads>0=%d\n", n > 0, loads > 0);
	printf("entry!=0=%d\n", getauxval(AT_ENTRY) != 0);
	const unsigned char *r = (const unsigned char *)getauxval(AT_RANDOM);
	int nz = 0;
	for (int i = 0; r && i < 16; i++)
		nz |= r[i];
	printf("random=%s\n", r && nz ? "16 bytes, not all zero" : "missing");
	printf("uid==getuid:%d euid==geteuid:%d gid==getgid:%d egid==getegid:%d\n",
	       getauxval(AT_UID) == getuid(), getauxval(AT_EUID) == geteuid(),
	       getauxval(AT_GID) == getgid(), getauxval(AT_EGID) == getegid());
	printf("secure=%lu\n", getauxval(AT_SECURE));
	printf("clktck=%lu\n", getauxval(AT_CLKTCK));
	const char *fn = (const char *)getauxval(AT_EXECFN);
	printf("execfn=%s same-as-argv0=%d\n", fn ? fn : "(none)", fn && !strcmp(fn, argv[0]));
	/* argc sits at the initial stack pointer, which the ABI makes 16-byte aligned */
	printf("argc-slot-aligned=%d\n", (int)((((unsigned long)argv) - 8) % 16 == 0));
	return argc == 1 ? 0 : 1;
}
