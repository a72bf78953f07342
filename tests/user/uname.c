/* uname: what libc feature checks read (the release differs by kernel: not printed) */
#include "ut.h"
#include <sys/utsname.h>
int main(void)
{
	struct utsname u;
	SHOW("uname", uname(&u));
	printf("sysname=%s machine=%s release-nonempty=%d\n", u.sysname, u.machine, u.release[0] != 0);
	return 0;
}
