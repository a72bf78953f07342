/*
 * printf.c - kernel formatted output.
 *
 * Supports the subset protocol.md §6 promises: %s %c %d %i %u %x %X %p %%, length l ll z,
 * flags 0 and -, a field width. kprintf formats into a stack buffer and hands the text to
 * the console under console_lock, so lines from different CPUs never interleave mid-line.
 * It also implements libksync's ksync_printf/ksync_vprintf hooks.
 *
 * The console sits below the locks: console_lock is a raw ticket spin lock (spinlock.h),
 * with no lock class and no statistics, so the master locks, their statistics and their
 * panics can all print without the console depending on them.
 */
#include "kernel.h"
#include "spinlock.h"

/* The console: held with the CPU's own mask (printing happens in every context,
 * handlers included); it protects the port's console device (arch_console_write). */
static struct spinlock console_lock = SPINLOCK_INIT("console");

struct outbuf { char *p; size_t n, len; };

static void put(struct outbuf *o, char c)
{
	if (o->len + 1 < o->n)
		o->p[o->len] = c;
	o->len++;
}

static void put_num(struct outbuf *o, uint64_t v, bool neg, unsigned base, bool upper,
		    int width, bool zero, bool left)
{
	char tmp[24];
	int i = 0;
	const char *dig = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	do {
		tmp[i++] = dig[v % base];
		v /= base;
	} while (v);
	int len = i + (neg ? 1 : 0);
	if (!left && !zero)
		for (; width > len; width--)
			put(o, ' ');
	if (neg)
		put(o, '-');
	if (!left && zero)
		for (; width > len; width--)
			put(o, '0');
	while (i)
		put(o, tmp[--i]);
	if (left)
		for (; width > len; width--)
			put(o, ' ');
}

int kvsnprintf(char *buf, size_t n, const char *fmt, va_list ap)
{
	struct outbuf o = { buf, n, 0 };
	for (; *fmt; fmt++) {
		if (*fmt != '%') {
			put(&o, *fmt);
			continue;
		}
		fmt++;
		bool zero = false, left = false;
		for (;; fmt++) {
			if (*fmt == '0') zero = true;
			else if (*fmt == '-') left = true;
			else break;
		}
		int width = 0;
		while (*fmt >= '0' && *fmt <= '9')
			width = width * 10 + (*fmt++ - '0');
		int lng = 0;
		while (*fmt == 'l') { lng++; fmt++; }
		if (*fmt == 'z') { lng = 2; fmt++; }
		switch (*fmt) {
		case 'd': case 'i': {
			int64_t v = lng ? va_arg(ap, int64_t) : va_arg(ap, int);
			put_num(&o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0, 10, false, width, zero, left);
			break;
		}
		case 'u': case 'x': case 'X': {
			uint64_t v = lng ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
			put_num(&o, v, false, *fmt == 'u' ? 10 : 16, *fmt == 'X', width, zero, left);
			break;
		}
		case 'p':
			put(&o, '0'); put(&o, 'x');
			put_num(&o, (uint64_t)(uintptr_t)va_arg(ap, void *), false, 16, false, 16, true, false);
			break;
		case 'c': put(&o, (char)va_arg(ap, int)); break;
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s) s = "(null)";
			int len = (int)strlen(s);
			if (!left) for (int w = width; w > len; w--) put(&o, ' ');
			while (*s) put(&o, *s++);
			if (left) for (int w = width; w > len; w--) put(&o, ' ');
			break;
		}
		case '%': put(&o, '%'); break;
		case 0: fmt--; break;
		default: put(&o, '%'); put(&o, *fmt); break;
		}
	}
	if (n)
		buf[o.len < n ? o.len : n - 1] = 0;
	return (int)o.len;
}

int ksnprintf(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = kvsnprintf(buf, n, fmt, ap);
	va_end(ap);
	return r;
}

/* Set by panic (and the port's fatal-trap path), never cleared: from then on output
 * bypasses the lock if it cannot be had quickly. Relaxed atomic: it orders nothing, a CPU
 * that reads it late only waits its turn for the lock. */
bool console_panicking;

void kwrite(const char *s, size_t n)
{
	if (__atomic_load_n(&console_panicking, __ATOMIC_RELAXED)) {
		irqkey_t k = arch_irq_save();
		bool got = spin_trylock_bounded(&console_lock, 10000000);
		arch_console_write(s, n);
		if (got)
			spin_unlock(&console_lock);
		arch_irq_restore(k);
		return;
	}
	irqkey_t k = spin_lock_irqsave(&console_lock);
	arch_console_write(s, n);
	spin_unlock_irqrestore(&console_lock, k);
}

void kvprintf(const char *fmt, va_list ap)
{
	char buf[1024];
	int len = kvsnprintf(buf, sizeof buf, fmt, ap);
	if (len > (int)sizeof buf - 1)
		len = sizeof buf - 1;
	kwrite(buf, (size_t)len);
}

void kprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
}

/* libksync's console hooks (include/ksync/platform.h) */
void ksync_vprintf(const char *fmt, va_list ap) { kvprintf(fmt, ap); }
void ksync_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
}
