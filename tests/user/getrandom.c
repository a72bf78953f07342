/* getrandom: bytes, bad flags, bad buffer */
#include "ut.h"
#include <sys/random.h>
int main(void)
{
	unsigned char a[32] = {0}, b[32] = {0};
	SHOW("getrandom 32", getrandom(a, 32, 0));
	SHOW("getrandom 32 again", getrandom(b, 32, 0));
	printf("differ=%d\n", memcmp(a, b, 32) != 0);
	SHOW("getrandom 0", getrandom(a, 0, 0));
	SHOW("bad flags", getrandom(a, 8, 0x100));
	SHOW("bad buffer", getrandom((void *)0x100000, 8, 0));
	return 0;
}
