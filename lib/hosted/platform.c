/*
 * platform.c - hosted (Linux user-mode) half of include/ksync/platform.h: ksync_cpu_id
 * via sched_getcpu, and ksync_printf/ksync_vprintf via vprintf + fflush(stdout), with a
 * test-only sink that captures output instead (ksync_hosted_set_print_sink).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <ksync/platform.h>

/*
 * The word every ksync_fence_* updates in ThreadSanitizer builds instead of a fence
 * (include/ksync/atomic.h explains why); accessed only by __atomic read-modify-writes.
 * Defined in every hosted build so that TSan and plain objects link together.
 */
unsigned long ksync__tsan_fence_word;

unsigned ksync_cpu_id(void)
{
	int cpu = sched_getcpu();

	return cpu < 0 ? 0u : (unsigned)cpu;
}

/*
 * The installed sink and its argument.  Set only while no other thread prints (see
 * platform.h); the release/acquire pair still orders sink_arg's store before the
 * printing thread's use of it, and keeps ThreadSanitizer informed.
 */
static ksync_print_sink_fn sink_fn;
static void *sink_arg;

void ksync_hosted_set_print_sink(ksync_print_sink_fn sink, void *arg)
{
	__atomic_store_n(&sink_arg, arg, __ATOMIC_RELAXED);
	/* release: publishes sink_arg (above) to a thread that acquires sink_fn */
	__atomic_store_n(&sink_fn, sink, __ATOMIC_RELEASE);
}

void ksync_vprintf(const char *fmt, va_list ap)
{
	/* acquire: pairs with the release in ksync_hosted_set_print_sink (sink_arg) */
	ksync_print_sink_fn sink = __atomic_load_n(&sink_fn, __ATOMIC_ACQUIRE);

	if (sink) {
		char buf[1024];
		int n = vsnprintf(buf, sizeof(buf), fmt, ap);

		if (n < 0)
			return;
		if ((size_t)n >= sizeof(buf))
			n = (int)sizeof(buf) - 1;
		sink(buf, (size_t)n, __atomic_load_n(&sink_arg, __ATOMIC_RELAXED));
		return;
	}
	vprintf(fmt, ap);
	fflush(stdout);
}

void ksync_printf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ksync_vprintf(fmt, ap);
	va_end(ap);
}
