/*
 * test_lib.c - kernel printf formatting, the command-line parser, and the string
 * primitives (the port's memcpy/memset: byte steps below 64 bytes, quadwords above).
 */
#include "kernel.h"
#include <ksync/ktest.h>

KTEST(ksnprintf_formats)
{
	char b[64];
	ksnprintf(b, sizeof b, "%d|%i|%u|%x|%X", -42, 7, 3000000000u, 0xbeefu, 0xbeefu);
	KT_EXPECT(!strcmp(b, "-42|7|3000000000|beef|BEEF"));
	ksnprintf(b, sizeof b, "%ld|%lu|%lx|%llu", -9000000000l, 18000000000000000000ul, 0xdeadbeefcafeul, 1ull);
	KT_EXPECT(!strcmp(b, "-9000000000|18000000000000000000|deadbeefcafe|1"));
	ksnprintf(b, sizeof b, "[%5d][%-5d][%05d][%3s][%-3s]", 42, 42, 42, "a", "b");
	KT_EXPECT(!strcmp(b, "[   42][42   ][00042][  a][b  ]"));
	ksnprintf(b, sizeof b, "%s %c %% %p", "x", 'y', (void *)0x10);
	KT_EXPECT(!strcmp(b, "x y % 0x0000000000000010"));
	int n = ksnprintf(b, 4, "abcdef");
	KT_EXPECT_EQ(n, 6);
	KT_EXPECT(!strcmp(b, "abc"));
}

void cmdline_set(const char *s);

KTEST(cmdline_key_value)
{
	char saved[256];
	size_t n = strlen(cmdline_raw());
	KT_ASSERT(n < sizeof saved);
	memcpy(saved, cmdline_raw(), n + 1);
	char buf[16];
	cmdline_set("kernel.elf mode=test mode=bench  filter=a*,b set=all x=");
	KT_EXPECT(cmdline_get("mode", buf, sizeof buf) && !strcmp(buf, "bench"));	/* last wins */
	KT_EXPECT(cmdline_get("filter", buf, sizeof buf) && !strcmp(buf, "a*,b"));
	KT_EXPECT(cmdline_get("set", buf, sizeof buf) && !strcmp(buf, "all"));
	KT_EXPECT(cmdline_get("nope", buf, sizeof buf) == NULL);
	KT_EXPECT(cmdline_get("mod", buf, sizeof buf) == NULL);
	KT_EXPECT(cmdline_get("x", buf, sizeof buf) && buf[0] == 0);	/* present, empty */
	cmdline_set(saved);
}

/* memcpy and memset at every length around the byte/quadword switch (0..80 and longer
 * ones with odd tails), every source and destination offset within a quadword: each byte
 * of the range right, none outside it touched (guards of 0xa5 on both sides). Called
 * through volatile pointers so that the compiler cannot expand them inline. */
KTEST(string_memcpy_memset_every_length_and_offset)
{
	static const size_t lens[] = { 129, 135, 200, 255 };
	static uint8_t src[320], dst[320];
	void *(*volatile cp)(void *, const void *, size_t) = memcpy;
	void *(*volatile set)(void *, int, size_t) = memset;
	unsigned bad = 0;
	for (size_t li = 0; li < 81 + sizeof lens / sizeof lens[0]; li++) {
		size_t n = li < 81 ? li : lens[li - 81];
		for (size_t so = 0; so < 8; so++)
			for (size_t d = 0; d < 8; d++) {
				for (size_t i = 0; i < sizeof src; i++) {
					src[i] = (uint8_t)(i * 7 + 3 + n);
					dst[i] = 0xa5;
				}
				if (cp(dst + 16 + d, src + so, n) != dst + 16 + d)
					bad++;
				for (size_t i = 0; i < sizeof dst; i++) {
					bool in = i >= 16 + d && i < 16 + d + n;
					if (dst[i] != (in ? src[so + i - 16 - d] : 0xa5))
						bad++;
				}
				if (so)
					continue;	/* memset: the destination offsets only */
				if (set(dst + 16 + d, 0x15a, n) != dst + 16 + d)	/* (uint8_t)0x15a */
					bad++;
				for (size_t i = 0; i < sizeof dst; i++) {
					bool in = i >= 16 + d && i < 16 + d + n;
					if (dst[i] != (in ? 0x5a : 0xa5))
						bad++;
				}
			}
	}
	KT_EXPECT(bad == 0);
}
