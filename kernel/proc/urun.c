/*
 * urun.c - the kernel's program runner (boot mode `mode=user`, issue 24): runs the
 * user programs the command line names, one after another, each as a fresh process,
 * and reports each as KTAP on the serial line:
 *
 *   ktap: # user: <the command>
 *   ktap: # out: <its stdout+stderr as hex, 64 bytes a line>
 *   ktap: ok N <path> # status=0x<wait status>
 *
 * "ok" means the program ran and its parent (the runner) saw it end; the host tool
 * compares the output and the status with the same binary's on Linux
 * (tests/test_user.py). A program that could not be started is "not ok".
 *
 * The programs' files are kernel/fs's: at start fs_init, then the initramfs (the first
 * boot module) unpacked into the RAM file system (a corrupt archive is refused with the
 * unpacker's message). Each program runs as its host twin does under test_user.py: fd 0
 * is /dev/null, fd 1 and 2 the write end of one pipe (kernel/fs), which the runner drains
 * into its buffer until end of file (every writer, the program and any child that kept
 * it, closed it) - as Python's subprocess.run reads the twin's stdout - and then waits
 * for the program's status. So fstat/isatty on fd 0..2 answer as on the host.
 *
 * Command line: user=@/t/list (a file of the initramfs: one command a line, words split
 * by spaces) or user=/t/a,/t/b (no arguments); ushell=1 instead runs the interactive
 * shell on the console (ushell.c). epoch=<unix seconds> sets CLOCK_REALTIME.
 * serial_load=BAUD[:BITS] runs the modelled 16550 receiver for as long as the programs run
 * (kernel/dev/serial_load.c; /proc/ksync-serial shows its totals); a stream that did not
 * end or whose driver counted other than the model fails the boot.
 * At the end: the ENOSYS counts (syscall_report), the user pages still mapped and the
 * free pages before and after (every page must return).
 */
#include "kernel.h"
#include "boot.h"
#include "mm.h"
#include "proc.h"
#include "thread.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"
#include "monitor.h"
#include "serial_load.h"
#include <ksync/errors.h>

extern uint64_t syscall_boot_epoch;
__attribute__((noreturn)) void ushell_run(struct fs_ctx *ctx);	/* ushell.c */
#define MAX_CMDS 256
/* a command's output kept for the log: cyclictest's histogram and spike lines under a
 * wide latency spread passed 64 KiB (its exit code then went unseen) */
#define OUT_CAP (512u << 10)
#define MAX_WORDS 16

static struct fs_ctx *ctx;	/* the runner's (cwd "/"): set once before the programs */
static long fs_err;		/* set once at start: the initramfs was refused (-LX_EINVAL) */
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

/* The runner's descriptor table: 0 = /dev/null, 1 = 2 = a pipe's write end, 3 = its read
 * end (close-on-exec: proc_spawn closes it in the child). 0 or -LX_E*. */
static long stdio_table(struct fdtable *t)
{
	int p[2];
	long rc = vfs_pipe2(t, p, LX_O_CLOEXEC);	/* 0 = read end, 1 = write end */
	if (rc)
		return rc;
	if ((rc = vfs_dup3(t, 0, 3, LX_O_CLOEXEC)) < 0 || (rc = vfs_close(t, 0)) < 0)
		return rc;
	if ((rc = vfs_openat(t, ctx, LX_AT_FDCWD, "/dev/null", LX_O_RDONLY, 0)) != 0)
		return rc < 0 ? rc : -LX_EBADF;
	if ((rc = vfs_fcntl(t, 1, LX_F_SETFD, 0)) < 0 || (rc = vfs_dup2(t, 1, 2)) < 0)
		return rc;
	return 0;
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
	struct fdtable *t = fs_err ? NULL : fdtable_new();
	long pid = fs_err ? fs_err : t ? stdio_table(t) : -LX_ENOMEM;
	if (!pid)
		pid = proc_spawn(argv[0], argv, envp, t, false);
	if (t) {
		/* only the read end stays ours: end of file once every writer closed */
		for (int fd = 0; fd < 3; fd++)
			vfs_close(t, fd);
		static char spill[512];	/* the runner's only: past OUT_CAP, read and dropped */
		for (;;) {
			long r = len < OUT_CAP ? vfs_read(t, 3, out + len, OUT_CAP - len)
					       : vfs_read(t, 3, spill, sizeof spill);
			if (r <= 0)
				break;
			if (len < OUT_CAP)
				len += (size_t)r;
			else
				over = true;
		}
		fdtable_put(t);
	}
	int st = pid > 0 ? proc_wait_kernel((int)pid) : 0;
	print_hex_out(out, len, over);
	if (pid < 0) {
		kprintf("ktap: not ok %u %s # could not start: errno %ld\n", n, argv[0], -pid);
		return 1;
	}
	kprintf("ktap: ok %u %s # status=0x%x\n", n, argv[0], st);
	return 0;
}

/* The whole of a file of kernel/fs (the command list) into a new NUL-terminated buffer. */
static char *slurp(const char *path, size_t *len)
{
	struct fdtable *t = fdtable_new();
	KASSERT(t);
	int fd = vfs_openat(t, ctx, LX_AT_FDCWD, path, LX_O_RDONLY, 0);
	char *b = NULL;
	struct lx_stat st;
	if (fd >= 0 && vfs_fstat(t, fd, &st) == 0 && (b = kmalloc((size_t)st.st_size + 1))) {
		long r = vfs_pread(t, fd, b, (size_t)st.st_size, 0);
		*len = r > 0 ? (size_t)r : 0;
		b[*len] = 0;
	} else {
		kprintf("ksync: mode=user: %s: errno %d\n", path, fd < 0 ? -fd : LX_ENOMEM);
	}
	fdtable_put(t);
	return b;
}

/* Page accounting (issue 24's "every page returns to the free pool"): the free pages
 * before the first program and after the last, and what the kernel legitimately keeps
 * meanwhile - pages the heap carved into size classes (kept for reuse), large heap
 * blocks, page tables of the kernel's KVA region (thread stacks; never freed, paging.c),
 * the RAM file system's file data - so that free_before - free_after minus those is
 * what nobody accounts for (a leak: must be 0). Heap blocks still handed out and live
 * inodes are printed too: a kmalloc leak shows there. */
/* arch/x86_64/context.c: stacks mapped, written under its slot_lock; read here without
 * it (a count: exact once no thread is created or reclaimed) */
extern volatile uint64_t stack_slots_live;
struct pmm_account {
	size_t free, ramfs_pages, ramfs_inodes, kva_tables, stacks;
	struct heap_stats heap;
};
static void account(struct pmm_account *a)
{
	a->free = pmm_free_pages();
	heap_stats(&a->heap);
	a->ramfs_pages = fs_data_pages();
	a->ramfs_inodes = fs_live_inodes();
	a->kva_tables = vm_tables_installed;
	a->stacks = stack_slots_live;
}

static void report_account(const struct pmm_account *a0, const struct pmm_account *a1)
{
	long kept = (long)(a1->heap.slab_pages - a0->heap.slab_pages) +
		    (long)(a1->heap.big_pages - a0->heap.big_pages) +
		    (long)(a1->ramfs_pages - a0->ramfs_pages) + (long)(a1->kva_tables - a0->kva_tables);
	long unexplained = (long)a0->free - (long)a1->free - kept;
	kprintf("KSYNC {\"kind\":\"pmm_pages\",\"free_before\":%lu,\"free_after\":%lu,"
		"\"heap_slab_pages\":[%lu,%lu],\"heap_big_pages\":[%lu,%lu],"
		"\"heap_blocks_live\":[%lu,%lu],\"ramfs_pages\":[%lu,%lu],"
		"\"ramfs_inodes\":[%lu,%lu],\"kva_tables\":[%lu,%lu],\"stacks\":[%lu,%lu],\"unexplained\":%ld}\n",
		(unsigned long)a0->free, (unsigned long)a1->free,
		(unsigned long)a0->heap.slab_pages, (unsigned long)a1->heap.slab_pages,
		(unsigned long)a0->heap.big_pages, (unsigned long)a1->heap.big_pages,
		(unsigned long)a0->heap.blocks_live, (unsigned long)a1->heap.blocks_live,
		(unsigned long)a0->ramfs_pages, (unsigned long)a1->ramfs_pages,
		(unsigned long)a0->ramfs_inodes, (unsigned long)a1->ramfs_inodes,
		(unsigned long)a0->kva_tables, (unsigned long)a1->kva_tables,
		(unsigned long)a0->stacks, (unsigned long)a1->stacks, unexplained);
}

/* The kernel's lock configurations (docs/locks.md "The kernel's own locks by configuration"): which scheduler and
 * how the file layer's monitors queue their waiters. Sprite (Hartman & Ousterhout, Figure
 * 9): a monitor's miss takes the locked scheduler's sched_Mutex to queue itself, so every
 * monitor's waiters contend on the scheduler's one lock; sprite-fix, the figure caption's
 * remedy: each monitor's own interlock; synthesis (Massalin & Pu): the lock-free run queues,
 * own interlocks (the file layer's monitors are not made lock-free: documented in
 * docs/locks.md); fiasco (Hohmuth & Haertig 2001, sections 3.2 and 4.2): the global state
 * by CAS - the lock-free run queues, the threads' state words - and the local state (the
 * file layer's objects: the RAM file system, descriptor tables, pipes) under wait-free
 * locks with helping: the monitors' locks are helping locks (monitor.h MON_HELPING). The
 * process table, the futex buckets, the heap, the page
 * pool and the address spaces are master locks in every configuration (docs/locks.md). */
static const struct {
	const char *name, *sched;
	unsigned mon_flags;
	/* hard priorities: the priority table {0} (the lowest non-empty level always runs),
	 * the fixed-priority preemptive scheduling Fiasco's real-time guarantees assume
	 * (Hohmuth & Haertig 3.3: "hard priorities"); the others keep Synthesis's default
	 * table, which serves every level in proportion (thread.c sched_table_default) */
	bool strict;
	/* every descriptor lookup takes the table's monitor (vfs.h fs_set_fd_lookup_locked):
	 * Sprite's handle table monitor, "grabbed each time a pipe is accessed" (section 5);
	 * the others look up in a table only one thread uses without it, as Linux does */
	bool fd_locked;
} lock_configs[] = {
	{ "sprite", "locked", MON_QSCHED, false, true },
	{ "sprite-fix", "locked", 0, false, true },
	{ "synthesis", "lockfree", 0, false, false },
	{ "fiasco", "lockfree", MON_HELPING, true, false },
};
/* set by locks_config for sched_start's caller (boot thread only) */
static bool locks_strict;

static int locks_config(const char *name, const char **sched_name, char *why, size_t n)
{
	char given[16];
	bool has_sched = cmdline_get("sched", given, sizeof given) != NULL;
	for (size_t i = 0; i < ARRAY_SIZE(lock_configs); i++) {
		if (strcmp(name, lock_configs[i].name))
			continue;
		if (has_sched && strcmp(given, lock_configs[i].sched)) {
			ksnprintf(why, n, "it runs the %s scheduler, and sched=%s was given",
				  lock_configs[i].sched, given);
			return KSYNC_EINVAL;
		}
		*sched_name = lock_configs[i].sched;
		locks_strict = lock_configs[i].strict;
		fs_set_monitor_flags(lock_configs[i].mon_flags);
		fs_set_fd_lookup_locked(lock_configs[i].fd_locked);
		unsigned mf = lock_configs[i].mon_flags;
		kprintf("ksync: locks=%s: the %s scheduler%s, the file layer's monitors %s, "
			"%s\n", name, lock_configs[i].sched,
			locks_strict ? " with hard priorities (table {0})" : "",
			mf & MON_QSCHED ? "queue under sched_Mutex (Figure 9)"
			: mf & MON_HELPING ? "on helping locks (contenders help the owner)"
					   : "queue under their own interlocks",
			lock_configs[i].fd_locked ? "every descriptor lookup under its table's monitor"
			: "a one-thread table's lookups without it");
		return KSYNC_OK;
	}
	ksnprintf(why, n, "unknown configuration (sprite, sprite-fix, synthesis, fiasco)");
	return KSYNC_EINVAL;
}

__attribute__((noreturn)) void urun_main(struct boot_info *bi);
void urun_main(struct boot_info *bi)
{
	char spec[256], ep[24], spec_locks[24];
	syscall_boot_epoch = cmdline_uint(cmdline_get("epoch", ep, sizeof ep), 0);
	bool shell = cmdline_uint(cmdline_get("ushell", ep, sizeof ep), 0) != 0;
	if (shell)
		memcpy(spec, "-", 2);	/* no command list: the interactive shell (ushell.c) */
	else if (!cmdline_get("user", spec, sizeof spec)) {
		kprintf("ksync: mode=user needs user=@/list, user=/a,/b or ushell=1\n");
		arch_exit(false);
	}
	if (bi->initrd_end <= bi->initrd_start) {
		kprintf("ksync: mode=user: no initramfs (boot module) was given\n");
		arch_exit(false);
	}
	/* hz=N: the scheduler clock's rate, which is the timed sleeps' resolution
	 * (kernel/sched/timer.c: nanosleep, futex and poll timeouts wake at its ticks) */
	if (cmdline_get("hz", ep, sizeof ep)) {
		unsigned hz = cmdline_uint(ep, 0);
		if (sched_set_clock_hz(hz) != KSYNC_OK || !hz) {
			kprintf("ksync: mode=user: hz=%s refused: the clock's rate is 100..100000 Hz\n", ep);
			arch_exit(false);
		}
	}
	/* locks=CONFIG: the kernel's locks built one paper's way (docs/locks.md "The kernel's
	 * lock configurations"); without it, the build's scheduler and own interlocks */
	const char *sched_name = NULL;
	if (cmdline_get("locks", spec_locks, sizeof spec_locks)) {
		char why[200];
		if (locks_config(spec_locks, &sched_name, why, sizeof why) != KSYNC_OK) {
			kprintf("ksync: mode=user: locks=%s refused: %s\n", spec_locks, why);
			arch_exit(false);
		}
	}
	/* kernel/fs takes monitors: the scheduler runs first */
	int rc = sched_start(sched_name);
	if (rc != KSYNC_OK) {
		kprintf("ksync: mode=user: sched_start: %s\n", ksync_strerror(rc));
		arch_exit(false);
	}
	if (locks_strict) {
		static const uint8_t hard[1] = { 0 };
		rc = sched_table_set(hard, 1);
		KASSERT(rc == KSYNC_OK);
	}
	char err[160];
	long frc = fs_init();
	if (!frc)
		frc = fs_unpack_cpio_msg((const void *)(uintptr_t)P2V(bi->initrd_start),
					 bi->initrd_end - bi->initrd_start, err, sizeof err);
	else
		ksnprintf(err, sizeof err, "fs_init: errno %ld", -frc);
	if (frc) {
		/* every command is then "not ok" with the archive's error */
		kprintf("ksync: initramfs: refused: %s\n", err);
		fs_err = frc;
		if (spec[0] == '@')
			arch_exit(false);
	}
	ctx = fs_ctx_new();
	KASSERT(ctx);
	if (shell) {
		if (frc)
			arch_exit(false);
		proc_init();
		ushell_run(ctx);
	}
	/* the commands, in one writable buffer */
	char *text;
	size_t tlen = 0;
	if (spec[0] == '@') {
		text = slurp(spec + 1, &tlen);
		if (!text)
			arch_exit(false);
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
	proc_init();
	procfs_init();	/* /proc's text (kernel/proc/procfs.c) */
	char *out = kmalloc(OUT_CAP);
	KASSERT(out);
	struct pmm_account a0, a1;
	account(&a0);
	/* serial_load=BAUD[:BITS]: the serial line as a load beside the programs */
	char sl[24];
	if (cmdline_get("serial_load", sl, sizeof sl)) {
		char why[160];
		int e = serial_load_start(sl, why, sizeof why);
		if (e != KSYNC_OK) {
			kprintf("ksync: mode=user: serial_load=%s refused: %s\n", sl, why);
			arch_exit(false);
		}
	}
	kprintf("ktap: KTAP version 1\nktap: 1..%u\n", ncmd);
	int failed = 0;
	arch_win_reset();	/* KSYNC_WINDOWS builds: this CPU's (the BSP's) windows from here */
	for (unsigned i = 0; i < ncmd; i++)
		failed += run_one(i + 1, cmds[i], out);
	if (!serial_load_end())
		failed++;
	/* KSYNC_WINDOWS builds (make kernel WINDOWS=1): the longest window that held the BSP's
	 * clock back while the commands ran (IF=0, a level at or above the clock's, a
	 * crit_enter section: the time no thread could be preempted there), with the code
	 * addresses that opened and closed it; other builds have no tracker */
	struct arch_win win;
	if (arch_win_read(&win))
		kprintf("KSYNC {\"kind\":\"user_windows\",\"cpu\":0,\"unit\":\"tsc_ticks\","
			"\"max\":%lu,\"max_open\":\"0x%lx\",\"max_close\":\"0x%lx\",\"windows\":%lu}\n",
			(unsigned long)win.max, (unsigned long)win.max_open,
			(unsigned long)win.max_close, (unsigned long)win.windows);
	syscall_report();
	/* orphans may still be running, and a dead thread's stack is freed lazily (at the
	 * next thread_create): give them a moment (bounded) before counting */
	uint64_t until = ktime_ns() + 5000000000ull;	/* 5 s: the host may be busy */
	while ((proc_pages_in_use() || stack_slots_live > a0.stacks) && ktime_ns() < until) {
		thread_reclaim();
		thread_yield();
	}
	account(&a1);
	kprintf("KSYNC {\"kind\":\"user_pages\",\"free_before\":%lu,\"free_after\":%lu,"
		"\"user_pages_live\":%lu}\n", (unsigned long)a0.free, (unsigned long)a1.free,
		(unsigned long)proc_pages_in_use());
	report_account(&a0, &a1);
	kprintf("KSYNC {\"kind\":\"done\",\"mode\":\"user\"}\n");
	arch_exit(failed == 0);
}
