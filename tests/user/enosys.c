/* numbers no kernel implements answer ENOSYS (ksync counts them by name) */
#include "ut.h"
int main(void)
{
	printf("nr 511: %ld\n", rawsys(511, 0, 0, 0, 0, 0, 0));
	printf("nr 1000: %ld\n", rawsys(1000, 0, 0, 0, 0, 0, 0));
	printf("nr -1: %ld\n", rawsys(-1, 0, 0, 0, 0, 0, 0));
	return 0;
}
