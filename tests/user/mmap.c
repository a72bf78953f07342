/* anonymous mmap/munmap and their errors */
#include "ut.h"
#include <sys/mman.h>
int main(void)
{
	size_t len = 5 * 4096 + 7;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("mmap ok=%d aligned=%d\n", p != MAP_FAILED, ((unsigned long)p & 4095) == 0);
	int zero = 1;
	for (size_t i = 0; i < len; i++)
		zero &= p[i] == 0;
	printf("zero-filled=%d\n", zero);
	memset(p, 7, len);
	printf("p[len-1]=%d\n", p[len - 1]);
	SHOW("munmap middle page", munmap(p + 4096, 4096));
	printf("p[0]=%d p[2*4096]=%d\n", p[0], p[2 * 4096]);
	SHOW("munmap rest", munmap(p, len));
	SHOW("mmap len 0", (long)mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	SHOW("mmap no type", (long)mmap(NULL, 4096, PROT_READ, MAP_ANONYMOUS, -1, 0));
	SHOW("munmap unaligned", munmap((char *)p + 1, 4096));
	SHOW("mmap fd -1 not anon", (long)mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, -1, 0));
	char *q = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	q[0] = 1;
	char *r = mmap(q + 4096, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	printf("fixed at requested=%d q[0]=%d r[0]=%d\n", r == q + 4096, q[0], r[0]);
	errno = 0;
	void *s = mmap(q, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	printf("noreplace over a mapping: failed=%d errno=%d\n", s == MAP_FAILED, errno);
	/* many mappings */
	int ok = 1;
	for (int i = 0; i < 100; i++) {
		char *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) { ok = 0; break; }
		m[8191] = (char)i;
		ok &= m[8191] == (char)i;
		munmap(m, 8192);
	}
	printf("100 map/unmap ok=%d\n", ok);
	return 0;
}
