/*
 * cmdline.c - the kernel command line: space-separated key=value words (protocol.md §2); when a key repeats, the last word wins.
 * Set once by kernel_entry before anything reads it.
 */
#include "kernel.h"

static const char *cmdline = "";
/* The kernel's own copy: the port's string may live on its boot stack (hosted: the BSP
 * vCPU's), which threads' switches and the sanitizers' fiber bookkeeping must not reach
 * (ASan reported a stack-buffer-underflow reading it after the scheduler tests). */
static char cmdline_copy[1024];

void cmdline_set(const char *s)
{
	size_t i = 0;
	for (; s && s[i] && i + 1 < sizeof cmdline_copy; i++)
		cmdline_copy[i] = s[i];
	cmdline_copy[i] = 0;
	cmdline = cmdline_copy;
}
const char *cmdline_raw(void) { return cmdline; }

/* The last word "key=value" wins, so appended options override earlier ones. */
const char *cmdline_get(const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	const char *p = cmdline, *found = NULL;
	while (*p) {
		while (*p == ' ')
			p++;
		const char *w = p;
		while (*p && *p != ' ')
			p++;
		if ((size_t)(p - w) > kl && !strncmp(w, key, kl) && w[kl] == '=') {
			size_t vl = (size_t)(p - w) - kl - 1;
			if (vl >= n)
				vl = n - 1;
			memcpy(buf, w + kl + 1, vl);
			buf[vl] = 0;
			found = buf;
		}
	}
	return found;
}

unsigned cmdline_uint(const char *s, unsigned dflt)
{
	if (!s || !*s)
		return dflt;
	unsigned v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (unsigned)(*s - '0');
	return *s ? dflt : v;
}

bool cmdline_listed(const char *list, const char *name)
{
	if (!list)
		return true;
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		if (!e)
			break;
		p = e + 1;
	}
	return false;
}
