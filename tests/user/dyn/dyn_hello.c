/* dyn_hello: a plain `gcc` program (dynamic glibc: ld-linux-x86-64.so.2 and libc.so.6 from
 * the initramfs) printing what it was given; the same binary on the host and on ksync. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char *s = malloc(64);
	snprintf(s, 64, "%d argument%s", argc - 1, argc == 2 ? "" : "s");
	printf("hello from dynamic glibc: %s\n", s);
	for (int i = 1; i < argc; i++)
		printf("argv[%d] = %s (%zu bytes)\n", i, argv[i], strlen(argv[i]));
	printf("getenv(PATH) %s\n", getenv("PATH") ? "set" : "unset");
	free(s);
	return 3;
}
