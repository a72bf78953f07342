/* writev/readv with several buffers */
#include "ut.h"
#include <sys/uio.h>
int main(void)
{
	struct iovec v[3] = { { "one ", 4 }, { "", 0 }, { "two three\n", 10 } };
	SHOW("writev", writev(1, v, 3));
	struct iovec bad[1] = { { (void *)0x100000, 10 } };
	SHOW("writev bad", writev(1, bad, 1));
	SHOW("readv stdin eof", readv(0, v, 1));
	return 0;
}
