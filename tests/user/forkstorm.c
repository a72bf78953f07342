/* Many processes at once on every CPU: each child forks grandchildren that write their
 * copy-on-write pages and exec or exit; every status must arrive once and every copy
 * must keep its own contents. argv[1] = rounds (default 3; make stress runs more). */
#include "ut.h"
#include <sys/wait.h>
enum { KIDS = 6, GRAND = 4, PAGES = 16 };
static unsigned char area[PAGES * 4096];
static unsigned sum(void)
{
	unsigned s = 0;
	for (unsigned i = 0; i < sizeof area; i += 512)
		s = s * 31 + area[i];
	return s;
}
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3, bad = 0, seen = 0;
	for (int r = 0; r < rounds; r++) {
		memset(area, r, sizeof area);
		unsigned mine = sum();
		pid_t kids[KIDS];
		fflush(stdout);
		for (int k = 0; k < KIDS; k++) {
			kids[k] = fork();
			if (kids[k] == 0) {
				memset(area, 100 + k, sizeof area / 2);
				unsigned ks = sum();
				int gbad = 0;
				for (int g = 0; g < GRAND; g++) {
					pid_t gc = fork();
					if (gc == 0) {
						area[g * 4096] ^= 0xff;
						if (g == 0) {
							char *a[] = { "t/hello", NULL };
							execve("t/hello", a, NULL);
						}
						_exit(g + 1);
					}
				}
				for (int g = 0; g < GRAND; g++) {
					int st;
					pid_t w = wait(&st);
					int want = WEXITSTATUS(st);
					gbad |= w <= 0 || !WIFEXITED(st) || want < 1 || want > GRAND;
				}
				_exit(gbad || sum() != ks ? 99 : k + 1);
			}
		}
		int got = 0;
		for (int k = 0; k < KIDS; k++) {
			int st;
			pid_t w = waitpid(kids[k], &st, 0);
			if (w == kids[k] && WIFEXITED(st) && WEXITSTATUS(st) == k + 1)
				got++;
		}
		seen += got;
		bad |= got != KIDS || sum() != mine;
	}
	printf("rounds %d: children ok %d of %d, parent's copy intact=%d\n", rounds, seen,
	       rounds * KIDS, !bad);
	return bad;
}
