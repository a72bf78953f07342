/* dyn_missing: linked against libksmissing.so, which neither the host nor the initramfs
 * has: the loader refuses to start it with its own message and status 127. */
#include <stdio.h>

int ksmissing_value(void);

int main(void)
{
	printf("never printed %d\n", ksmissing_value());
	return 0;
}
