/*
 * ushell.c - the interactive shell (boot mode `mode=user ushell=1`, issue 24 item 4;
 * `./ksync sh` without -c, `make shell`): Debian's busybox sh on the serial console.
 *
 * Massalin & Pu 1991, "Input and output", terminal: the interrupt and the line discipline
 * are stages called as procedures. The console UART's receive interrupt (ISA line
 * ARCH_CONSOLE_IRQ: COM1, IRQ 4) is an spl source at IPL_TTY like the experiments'
 * devices (kernel/exp/irq.c), so every interrupt-masking scheme delivers, defers and
 * replays it by its own rules; its handler reads each received byte
 * (arch_console_rx_byte: RBR while LSR.DR) and calls tty_receive (kernel/fs/tty.c), which
 * edits the line, echoes, wakes the reader and, for ^C / ^\ / ^Z, signals the tty's foreground
 * process group (fshooks.c -> proc.c). A full input queue turns the receive interrupt off
 * until a read makes room (console_flow: Linux's throttle), so a paste waits in the UART
 * and QEMU instead of being dropped. The handler takes only master locks (tty's,
 * fs_wait's, the console's, proc_table_lock through the signal) and never sleeps.
 *
 * The shell: /bin/busybox with argv "sh -i", fds 0, 1, 2 on /dev/console, a session and
 * group leader (proc_spawn gives every kernel-started process its own) whose group is made
 * the tty's foreground group before its first instruction (busybox's job control compares
 * tcgetpgrp with its group at once). When it ends (exit N, ^D on an empty line) the kernel
 * prints `KSYNC {"kind":"shell_exit","status":N,...}` (N: the exit status, 128 + the
 * signal for a killed shell) after a carriage return, so the host tool finds it at the
 * start of a line, and powers off. `KSYNC {"kind":"shell_start"}` precedes the shell: the
 * host tool hides the boot's lines before it.
 *
 * The receive source is established and the UART's interrupt enabled only here: no other
 * boot mode turns COM1's receive interrupt on, so the serial-loss model (kernel/dev/
 * serial_model.c, which reads COM1's line status register as its device read) and the
 * other experiments never run beside it.
 *
 * Shared state: console_src is written by the boot thread before intr_establish and after
 * intr_disestablish only (intr.h: constant while established).
 */
#include "kernel.h"
#include "intr.h"
#include "proc.h"
#include "syscall/linux_abi.h"
#include "fs/vfs.h"
#include <ksync/errors.h>

static struct intr_source console_src;

/* The receive handler (IPL_TTY, the scheme's rules): every byte the UART holds. The FIFO
 * holds 16; the bound only keeps a stuck status bit from holding the CPU. */
static void console_rx(void *arg)
{
	(void)arg;
	int c;
	for (unsigned i = 0; i < 4096 && !tty_throttled() && (c = arch_console_rx_byte()) >= 0; i++)
		tty_receive((char)c);
}

/* The tty's flow control (tty.lock held): a full queue turns the receive interrupt off,
 * so the UART keeps what comes next and QEMU holds the rest (Linux's throttle); a read
 * that made room turns it back on, and the UART's data-ready condition interrupts at
 * once. */
static void console_flow(bool stop)
{
	arch_console_rx_enable(!stop);
}

/* TERM from the command line's term= (the host's $TERM when it is a plain name), else
 * vt100; anything but [A-Za-z0-9._+-] is refused. */
static void term_env(char *out, size_t n)
{
	char v[40];
	const char *t = cmdline_get("term", v, sizeof v);
	bool ok = t && *t;
	for (const char *s = t; ok && *s; s++)
		ok = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		     *s == '.' || *s == '_' || *s == '+' || *s == '-';
	ksnprintf(out, n, "TERM=%s", ok ? t : "vt100");
}

__attribute__((noreturn)) void ushell_run(struct fs_ctx *ctx);
void ushell_run(struct fs_ctx *ctx)
{
	static char term[48];
	term_env(term, sizeof term);
	char *envp[] = { "HOME=/", "PATH=/bin:/t", term, NULL };
	char *argv[] = { "sh", "-i", NULL };

	struct fdtable *t = fdtable_new();
	KASSERT(t);
	long rc = vfs_openat(t, ctx, LX_AT_FDCWD, "/dev/console", LX_O_RDWR, 0);
	if (rc != 0 || vfs_dup2(t, 0, 1) != 1 || vfs_dup2(t, 0, 2) != 2) {
		kprintf("ksync: shell: /dev/console as fds 0..2: errno %ld\n", rc < 0 ? -rc : 0L);
		arch_exit(false);
	}
	/* the host terminal's size (rows= cols=), as TIOCSWINSZ; 24x80 without them */
	char b[12];
	unsigned rows = cmdline_uint(cmdline_get("rows", b, sizeof b), 0);
	unsigned cols = cmdline_uint(cmdline_get("cols", b, sizeof b), 0);
	if (rows && cols && rows < 10000 && cols < 10000) {
		struct lx_winsize ws = { (unsigned short)rows, (unsigned short)cols, 0, 0 };
		vfs_ioctl(t, 0, LX_TIOCSWINSZ, &ws);
	}

	console_src = (struct intr_source){
		.name = "console", .kind = INTR_ISA, .irq = ARCH_CONSOLE_IRQ, .level = IPL_TTY,
		.fn = console_rx,
	};
	tty_set_flow(console_flow);
	int e = intr_establish(&console_src);
	if (e == KSYNC_OK && (e = arch_console_rx_enable(true)) != KSYNC_OK)
		intr_disestablish(&console_src);
	if (e != KSYNC_OK) {
		kprintf("ksync: shell: no console input: %s\n", ksync_strerror(e));
		arch_exit(false);
	}

	kprintf("KSYNC {\"kind\":\"shell_start\"}\n");
	long pid = proc_spawn("/bin/busybox", argv, envp, t, true);
	fdtable_put(t);
	int st = 127 << 8;	/* as a shell's "command not found" */
	if (pid < 0)
		kprintf("ksync: shell: /bin/busybox: errno %ld\n", -pid);
	else
		st = proc_wait_kernel((int)pid);
	tty_set_flow(NULL);
	arch_console_rx_enable(false);
	intr_disestablish(&console_src);
	int status = (st & 0x7f) == 0 ? (st >> 8) & 0xff : 128 + (st & 0x7f);
	kprintf("\rKSYNC {\"kind\":\"shell_exit\",\"status\":%d,\"wstatus\":%d}\n", status, st);
	syscall_report();	/* the calls the session found missing (the host's log) */
	arch_exit(true);
}
