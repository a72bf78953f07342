/*
 * panic.c - the kernel's fatal-error path: print the CPU, the reason and a backtrace on
 * the console (bypassing a console lock this CPU may hold), then leave QEMU with the
 * failure code so the host runner reports the run as failed.
 */
#include "kernel.h"
#include "spl.h"	/* struct kcpu: the thread each CPU runs */

extern bool console_panicking;
void arch_backtrace(void);

/* The scheduler's namer: set by the scheduler before it makes a thread current (the same
 * function every time), read by messages on any CPU. Relaxed: it orders nothing - the
 * function is code, and a reader that sees NULL prints "?". */
static thread_namer_fn *thread_namer;

void panic_set_thread_namer(thread_namer_fn *fn)
{
	__atomic_store_n(&thread_namer, fn, __ATOMIC_RELAXED);
}

const char *panic_thread_name(const struct thread *t)
{
	thread_namer_fn *fn = __atomic_load_n(&thread_namer, __ATOMIC_RELAXED);
	return !t ? "(no thread)" : fn ? fn(t) : "?";
}

const char *panic_thread_on(unsigned cpu)
{
	return panic_thread_name(kcpu_of(cpu)->sched_cur);
}

void panic(const char *fmt, ...)
{
	arch_irq_disable();
	__atomic_store_n(&console_panicking, true, __ATOMIC_RELAXED);	/* printf.c says why relaxed */
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const struct thread *t = kcpu_this()->sched_cur;
	kprintf("PANIC on cpu %u: %s\n", arch_cpu_id(), msg);
	kprintf("  in thread '%s'\n", t ? panic_thread_name(t) : "none (scheduler not started)");
	arch_backtrace();
	kprintf("ksync: kernel panic; exiting with failure\n");
	arch_exit(false);
}
