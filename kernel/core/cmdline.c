/*
 * cmdline.c - the kernel command line: space-separated key=value words (protocol.md §2); when a key repeats, the last word wins.
 * Set once by kernel_entry before anything reads it.
 */
#include "kernel.h"

static const char *cmdline = "";

void cmdline_set(const char *s) { cmdline = s; }
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
