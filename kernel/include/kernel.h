/*
 * kernel.h - what every kernel file needs: printing, panic, assertions, small helpers.
 */
#ifndef KSYNC_KERNEL_H
#define KSYNC_KERNEL_H

#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdarg.h>
#include "cpu.h"
#include "arch_if.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((uint64_t)(a) - 1))
#define PAGE_SIZE 4096ul
/* The system-call path (entry, dispatch, the null call, read/write of a device, sigaction,
 * the return's signal check): placed together in .text.hot (the x86 linker script puts
 * it first), so that the path spans a few pages instead of one per subsystem - fewer
 * i-TLB entries on hardware, and under QEMU's TCG, where a jump or call into another
 * guest page is never chained to its target (a lookup each time), fewer such jumps. */
#define KERNEL_HOT __attribute__((section(".text.hot")))

/* printf.c: console output; each call's text reaches the console as one unit. */
__attribute__((format(printf, 1, 2))) void kprintf(const char *fmt, ...);
void kvprintf(const char *fmt, va_list ap);
void kwrite(const char *s, size_t n);	/* s[0..n) as one unit, any length */
__attribute__((format(printf, 3, 4))) int ksnprintf(char *buf, size_t n, const char *fmt, ...);
int kvsnprintf(char *buf, size_t n, const char *fmt, va_list ap);

/* panic.c: print CPU, reason, a backtrace; exit QEMU with the failure code. */
__attribute__((noreturn, format(printf, 1, 2))) void panic(const char *fmt, ...);
#define KASSERT(c) do { if (!(c)) panic("assertion failed: %s (%s:%d)", #c, __FILE__, __LINE__); } while (0)

/* panic.c: naming threads in diagnostics. Panic and the master locks' messages sit below
 * the scheduler: they hold a thread as an opaque pointer (struct kcpu's sched_cur) and
 * resolve its name, only when a message prints it, through the namer the scheduler
 * registers before it makes any thread current (kernel/sched/thread.c: thread_name). */
struct thread;
typedef const char *thread_namer_fn(const struct thread *t);
void panic_set_thread_namer(thread_namer_fn *fn);
/* t's name: "(no thread)" for NULL, "?" while no namer is registered. */
const char *panic_thread_name(const struct thread *t);
/* The name of the thread running on `cpu` (its sched_cur, read without a lock: another
 * CPU's may change under the reader; good enough for a message). */
const char *panic_thread_on(unsigned cpu);

/* lib.c: freestanding string helpers (the compiler may also emit calls to these). */
void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);

/* cmdline.c: the kernel command line (multiboot). */
const char *cmdline_get(const char *key, char *buf, size_t n);	/* NULL if absent */
/* A word's value as an unsigned decimal: dflt if s is NULL, empty or not all digits. */
unsigned cmdline_uint(const char *s, unsigned dflt);
/* Is `name` in the comma list `list` (NULL list: everything is)? */
bool cmdline_listed(const char *list, const char *name);
const char *cmdline_raw(void);

#endif
