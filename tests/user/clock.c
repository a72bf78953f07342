/* clocks: monotonic never goes back, sleeps last at least what was asked */
#include "ut.h"
#include <time.h>
#include <sys/time.h>
static long long ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(void)
{
	long long prev = ns(CLOCK_MONOTONIC);
	int back = 0;
	for (int i = 0; i < 2000; i++) {
		long long t = ns(CLOCK_MONOTONIC);
		back |= t < prev;
		prev = t;
	}
	printf("monotonic went back=%d\n", back);
	struct timespec t;
	SHOW("realtime", clock_gettime(CLOCK_REALTIME, &t));
	printf("realtime after 2020=%d\n", t.tv_sec > 1577836800);
	SHOW("bad clock", clock_gettime(12345, &t));
	struct timeval tv;
	SHOW("gettimeofday", gettimeofday(&tv, NULL));
	printf("usec in range=%d\n", tv.tv_usec >= 0 && tv.tv_usec < 1000000);
	long long a = ns(CLOCK_MONOTONIC);
	struct timespec d = { 0, 30 * 1000 * 1000 };
	SHOW("nanosleep 30ms", nanosleep(&d, NULL));
	long long b = ns(CLOCK_MONOTONIC);
	printf("slept at least 30ms=%d\n", b - a >= 30000000LL);
	struct timespec abs;
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += 20 * 1000 * 1000;
	if (abs.tv_nsec >= 1000000000) { abs.tv_sec++; abs.tv_nsec -= 1000000000; }
	printf("clock_nanosleep abs=%d\n", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL));
	printf("reached the deadline=%d\n", ns(CLOCK_MONOTONIC) >= abs.tv_sec * 1000000000LL + abs.tv_nsec);
	struct timespec bad = { 0, 2000000000 };
	SHOW("nanosleep bad nsec", nanosleep(&bad, NULL));
	return 0;
}
