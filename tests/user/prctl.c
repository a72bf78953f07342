/* prctl(PR_SET_NAME/PR_GET_NAME) and time(2): what glibc's busybox calls at every start */
#include "ut.h"
#include <sys/prctl.h>
#include <time.h>
int main(void)
{
	char name[32];
	memset(name, 'x', sizeof name);
	SHOW("get", prctl(PR_GET_NAME, name));
	printf("name %s\n", name);
	SHOW("set", prctl(PR_SET_NAME, "applet"));
	SHOW("get", prctl(PR_GET_NAME, name));
	printf("name %s\n", name);
	SHOW("set long", prctl(PR_SET_NAME, "a-name-longer-than-fifteen"));
	memset(name, 'x', sizeof name);
	SHOW("get", prctl(PR_GET_NAME, name));
	printf("name %s len %zu byte16 %c\n", name, strlen(name), name[16]);
	SHOW("set bad pointer", prctl(PR_SET_NAME, (char *)8));
	SHOW("get bad pointer", prctl(PR_GET_NAME, (char *)8));
	SHOW("bad option", prctl(-1, 0, 0, 0, 0));
	long t0 = rawsys(SYS_time, 0, 0, 0, 0, 0, 0);
	long t1 = 0;
	long r = rawsys(SYS_time, (long)&t1, 0, 0, 0, 0, 0);
	printf("time agrees %d\n", r == t1 && t1 >= t0 && t1 - t0 <= 1);
	printf("time near clock %d\n", labs(t1 - (long)time(NULL)) <= 1);
	printf("time bad pointer %ld\n", rawsys(SYS_time, 8, 0, 0, 0, 0, 0));
	return 0;
}
