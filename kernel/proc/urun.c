/*
 * urun.c - the kernel's program runner (boot mode `mode=user`, issue 24): runs the
 * user programs the command line names, one after another, each as a fresh process
 * with fd 0/1/2 on the console, and reports each as KTAP on the serial line:
 *
 *   ktap: # user: <the command>
 *   ktap: # out: <its stdout+stderr as hex, 64 bytes a line>
 *   ktap: ok N <path> # status=0x<wait status>
 *
 * "ok" means the program ran and its parent (the runner) saw it end; the host tool
 * compares the output and the status with the same binary's on Linux
 * (tests/test_user.py). A program that could not be started is "not ok".
 *
 * Command line: user=@/t/list (a file of the initramfs: one command a line, words split
 * by spaces) or user=/t/a,/t/b (no arguments). epoch=<unix seconds> sets CLOCK_REALTIME.
 * At the end: the ENOSYS counts (syscall_report), the user pages still mapped and the
 * free pages before and after (every page must return).
 */
#include "kernel.h"
#include "boot.h"
#include "mm.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include <ksync/errors.h>

extern uint64_t syscall_boot_epoch;
#define MAX_CMDS 256
#define OUT_CAP (64u << 10)
#define MAX_WORDS 16

static char *const envp[] = { "HOME=/", "PATH=/bin:/t", "TERM=dumb", NULL };

static void print_hex_out(const char *buf, size_t len, bool over)
{
	static const char hx[] = "0123456789abcdef";
	char line[2 * 64 + 1];
	for (size_t i = 0; i < len; i += 64) {
		size_t n = len - i < 64 ? len - i : 64;
		for (size_t j = 0; j < n; j++) {
			line[2 * j] = hx[(uint8_t)buf[i + j] >> 4];
			line[2 * j + 1] = hx[(uint8_t)buf[i + j] & 15];
		}
		line[2 * n] = 0;
		kprintf("ktap: # out: %s\n", line);
	}
	if (over)
		kprintf("ktap: # out-truncated: more than %u bytes\n", OUT_CAP);
}

static int run_one(unsigned n, char *cmd, char *out)
{
	char *argv[MAX_WORDS + 1];
	unsigned argc = 0;
	for (char *s = cmd; *s && argc < MAX_WORDS;) {
		while (*s == ' ')
			*s++ = 0;
		if (!*s)
			break;
		argv[argc++] = s;
		while (*s && *s != ' ')
			s++;
	}
	argv[argc] = NULL;
	if (!argc)
		return 0;
	kprintf("ktap: # user:");
	for (unsigned i = 0; i < argc; i++)
		kprintf(" %s", argv[i]);
	kprintf("\n");
	size_t len = 0;
	bool over = false;
	ufile_console_capture(out, OUT_CAP, &len, &over);
	long pid = proc_spawn(argv[0], argv, envp);
	int st = pid > 0 ? proc_wait_kernel((int)pid) : 0;
	ufile_console_capture(NULL, 0, NULL, NULL);
	print_hex_out(out, len, over);
	if (pid < 0) {
		kprintf("ktap: not ok %u %s # could not start: errno %ld\n", n, argv[0], -pid);
		return 1;
	}
	kprintf("ktap: ok %u %s # status=0x%x\n", n, argv[0], st);
	return 0;
}

__attribute__((noreturn)) void urun_main(struct boot_info *bi);
void urun_main(struct boot_info *bi)
{
	char spec[256], ep[24];
	if (bi->initrd_end > bi->initrd_start)
		initramfs_init((const void *)(uintptr_t)bi->initrd_start,
			       bi->initrd_end - bi->initrd_start);
	syscall_boot_epoch = cmdline_uint(cmdline_get("epoch", ep, sizeof ep), 0);
	if (!cmdline_get("user", spec, sizeof spec)) {
		kprintf("ksync: mode=user needs user=@/list or user=/a,/b\n");
		arch_exit(false);
	}
	if (!initramfs_present()) {
		kprintf("ksync: mode=user: no initramfs (boot module) was given\n");
		arch_exit(false);
	}
	/* the commands, in one writable buffer */
	char *text;
	size_t tlen;
	if (spec[0] == '@') {
		const uint8_t *d;
		uint64_t sz;
		uint32_t mode;
		long rc = initramfs_lookup(spec + 1, &d, &sz, &mode);
		if (rc) {
			kprintf("ksync: mode=user: %s: errno %ld\n", spec + 1, -rc);
			arch_exit(false);
		}
		text = kmalloc(sz + 1);
		KASSERT(text);
		memcpy(text, d, sz);
		tlen = sz;
	} else {
		tlen = strlen(spec);
		text = kmalloc(tlen + 1);
		KASSERT(text);
		memcpy(text, spec, tlen);
		for (size_t i = 0; i < tlen; i++)
			if (text[i] == ',')
				text[i] = '\n';
	}
	text[tlen] = 0;
	char *cmds[MAX_CMDS];
	unsigned ncmd = 0;
	for (char *s = text; *s && ncmd < MAX_CMDS;) {
		char *e = strchr(s, '\n');
		if (e)
			*e = 0;
		if (*s && *s != '#')
			cmds[ncmd++] = s;
		if (!e)
			break;
		s = e + 1;
	}
	int rc = sched_start(NULL);
	if (rc != KSYNC_OK) {
		kprintf("ksync: mode=user: sched_start: %s\n", ksync_strerror(rc));
		arch_exit(false);
	}
	proc_init();
	char *out = kmalloc(OUT_CAP);
	KASSERT(out);
	size_t free0 = pmm_free_pages();
	kprintf("ktap: KTAP version 1\nktap: 1..%u\n", ncmd);
	int failed = 0;
	for (unsigned i = 0; i < ncmd; i++)
		failed += run_one(i + 1, cmds[i], out);
	syscall_report();
	/* orphans may still be running: give them a moment (bounded) before counting */
	for (unsigned w = 0; w < 200 && proc_pages_in_use(); w++)
		thread_yield();
	size_t free1 = pmm_free_pages();
	kprintf("KSYNC {\"kind\":\"user_pages\",\"free_before\":%lu,\"free_after\":%lu,"
		"\"user_pages_live\":%lu}\n", (unsigned long)free0, (unsigned long)free1,
		(unsigned long)proc_pages_in_use());
	kprintf("KSYNC {\"kind\":\"done\",\"mode\":\"user\"}\n");
	arch_exit(failed == 0);
}
