/*
 * panic.c - the kernel's fatal-error path: print the CPU, the reason and a backtrace on
 * the console (bypassing a console lock this CPU may hold), then leave QEMU with the
 * failure code so the host runner reports the run as failed.
 */
#include "kernel.h"
#include "thread.h"

extern bool console_panicking;
void arch_backtrace(void);

void panic(const char *fmt, ...)
{
	arch_irq_disable();
	__atomic_store_n(&console_panicking, true, __ATOMIC_RELAXED);	/* printf.c says why relaxed */
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct thread *t = thread_self();
	kprintf("PANIC on cpu %u: %s\n", arch_cpu_id(), msg);
	kprintf("  in thread '%s'\n", t ? thread_name(t) : "none (scheduler not started)");
	arch_backtrace();
	kprintf("ksync: kernel panic; exiting with failure\n");
	arch_exit(false);
}
