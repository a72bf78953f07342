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
	/* a huge sparse mapping (1 TiB, four pages touched): mprotect and munmap of the whole
	 * range walk only the page tables that exist (uvm.c walk_next; one step per page
	 * took 33 s under TCG) and still reach every touched page */
	size_t big = 1ull << 40;
	char *h = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (h == MAP_FAILED) {
		printf("1 TiB mmap failed errno=%d\n", errno);
		return 0;
	}
	size_t at[4] = { 0, (1ull << 30) + 5 * 4096, (512ull << 30) - 4096, big - 4096 };
	for (int i = 0; i < 4; i++)
		h[at[i]] = (char)(10 + i);
	SHOW("mprotect 1 TiB read-only", mprotect(h, big, PROT_READ));
	printf("read back %d %d %d %d\n", h[at[0]], h[at[1]], h[at[2]], h[at[3]]);
	SHOW("mprotect 1 TiB read-write", mprotect(h, big, PROT_READ | PROT_WRITE));
	SHOW("munmap all but the first and last page", munmap(h + 4096, big - 8192));
	char *n1 = mmap(h + at[1], 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	char *n2 = mmap(h + at[2], 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	printf("remapped fresh: %d %d, first/last kept %d %d\n", n1 == h + at[1] && n1[0] == 0,
	       n2 == h + at[2] && n2[0] == 0, h[at[0]], h[at[3]]);
	SHOW("munmap 1 TiB", munmap(h, big));
	return 0;
}
