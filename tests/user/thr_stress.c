/* Threads under load (issue 25): 8 threads x N lock/unlock of one mutex around a shared
 * counter, then 4 pairs of threads handing a token back and forth N times each through a
 * mutex and a condition variable; every increment and hand-off counted exactly. make
 * test runs a small N, make stress 100000. argv[1] = N (default 2000). */
#include "ut.h"
#include <pthread.h>
#include <stdint.h>

#define T 8
static long n;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void *inc(void *a)
{
	(void)a;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&mu);
		counter++;
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

struct pair {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn;		/* 0 or 1: whose move */
	long moves[2];
};
static struct pair pairs[T / 2];
static void *player(void *a)
{
	uintptr_t v = (uintptr_t)a;
	struct pair *p = &pairs[v / 2];
	int me = (int)(v % 2);
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&p->m);
		while (p->turn != me)
			pthread_cond_wait(&p->c, &p->m);
		p->moves[me]++;
		p->turn = !me;
		pthread_cond_signal(&p->c);
		pthread_mutex_unlock(&p->m);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = argc > 1 ? atol(argv[1]) : 2000;
	pthread_t t[T];
	for (int i = 0; i < T; i++)
		pthread_create(&t[i], NULL, inc, NULL);
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
	printf("mutex: %d threads x %ld: counter %ld, exact %d\n", T, n, counter, counter == T * n);
	for (int i = 0; i < T / 2; i++) {
		pthread_mutex_init(&pairs[i].m, NULL);
		pthread_cond_init(&pairs[i].c, NULL);
	}
	for (uintptr_t i = 0; i < T; i++)
		pthread_create(&t[i], NULL, player, (void *)i);
	for (int i = 0; i < T; i++)
		pthread_join(t[i], NULL);
	long total = 0;
	int exact = 1;
	for (int i = 0; i < T / 2; i++) {
		total += pairs[i].moves[0] + pairs[i].moves[1];
		exact &= pairs[i].moves[0] == n && pairs[i].moves[1] == n && pairs[i].turn == 0;
	}
	printf("condvar: %d pairs x %ld hand-offs each way: total %ld, exact %d\n", T / 2, n, total,
	       exact);
	return 0;
}
