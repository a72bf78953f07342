/*
 * test_lib.c - kernel printf formatting and the command-line parser.
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
