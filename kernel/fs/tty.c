/*
 * tty.c - the console terminal (/dev/console, /dev/tty): Linux's line discipline, enough
 * for an interactive shell.
 *
 * Massalin & Pu 1991, "Input and output", terminal: "the terminal driver receives
 * interrupts [and] passes characters [to the] tty", which is "a finite state machine
 * [that] converts editing commands, escape characters [and] newline"; Synthesis calls
 * the stages as synchronous procedure calls. So here: the serial driver's handler calls
 * tty_receive(c), which edits the line in place (canonical mode: erase, kill, EOF, newline
 * complete a line; ISIG: ^C, ^\ and ^Z call fs_tty_signal), echoes, and wakes readers; a
 * read takes one complete line (canonical) or what is there (raw). Output goes through
 * the kernel console (kwrite) with OPOST/ONLCR; the echo too.
 *
 * Shared state: everything in struct tty under tty.lock, a master lock (class "tty")
 * taken inside the interrupt scheme's critical section (mlock_lock: crit_enter, the level
 * that holds back every source): tty_receive runs in the serial interrupt handler, a
 * scheme source (ushell.c), held back on this CPU while a section runs;
 * out_fn: atomic (set by tests); flow_fn: see "Flow control" below. Echo is gathered under the lock and written after it is
 * released (the console has its own lock). Readers sleep on the fs wait channel (wait.c):
 * a handler cannot signal a condition variable.
 */
#include "fs_internal.h"
#include <ksync/errors.h>

LOCK_CLASS(fs_tty_class, "tty", LOCK_MASTER, LOCK_DATA);

#define TTY_IN 4096		/* input ready for readers */
#define TTY_LINE 4096		/* the line being edited (Linux's N_TTY_BUF_SIZE) */
#define TTY_LINES 256		/* complete lines (and EOFs) waiting */

struct tty {
	struct mlock lock;
	struct lx_termios tio;
	struct lx_winsize ws;
	int pgrp;
	char line[TTY_LINE];
	unsigned llen;
	char in[TTY_IN];
	unsigned ihead, ilen;
	unsigned lines[TTY_LINES];	/* canonical: lengths of the lines in in[], 0 = EOF */
	unsigned lhead, nlines;
	uint64_t dropped;		/* characters lost to a full queue */
	/* flow(true) was called, flow(false) not yet: written under tty.lock (relaxed
	 * atomic stores), read by the driver's handler without it (tty_throttled, relaxed:
	 * a stale false costs one more byte queued, a stale true one interrupt later) */
	bool throttled;
};

/* Flow control (Linux's tty_throttle/tty_unthrottle): the driver's hook, called with
 * tty.lock held when the queue of complete input passes TTY_HIGH bytes or TTY_LINES - 16
 * lines (true: stop taking input - the UART keeps it, and the emulator or the line
 * behind it waits) and when a read brought it under half of both (false). Set once
 * before input starts (tty_set_flow); read under tty.lock. */
#define TTY_HIGH (TTY_IN - 512)
static void (*flow_fn)(bool stop);

static const struct lx_termios tio_default = {
	.c_iflag = LX_ICRNL | 02000 /* IXON */,
	.c_oflag = LX_OPOST | LX_ONLCR,
	.c_cflag = 0000017 | 0000060 | 0000200 | 0002000,	/* B38400 CS8 CREAD HUPCL */
	.c_lflag = LX_ISIG | LX_ICANON | LX_ECHO | LX_ECHOE | LX_ECHOK | 01000 /* ECHOCTL */ |
		   04000 /* ECHOKE */ | 0100000 /* IEXTEN */,
	.c_line = 0,
	.c_cc = { 003, 034, 0177, 025, 004, 0, 1, 0, 021, 023, 032, 0, 022, 017, 027, 026, 0 },
};

static struct tty tty = {
	.lock = MLOCK_INIT(fs_tty_class, MLOCK_TICKET),
	.tio = tio_default,
	.ws = { 24, 80, 0, 0 },
};
LOCKSTAT_STATIC_AS(tty_lock, tty.lock);	/* on its class's list of instances */

/* atomic (release store, acquire load: what the function uses is set before); NULL: kwrite */
static void (*out_fn)(const char *s, size_t n);

void tty_set_flow(void (*fn)(bool stop))
{
	mlock_lock(&tty.lock);
	flow_fn = fn;
	__atomic_store_n(&tty.throttled, false, __ATOMIC_RELAXED);
	mlock_unlock(&tty.lock);
}

bool tty_throttled(void)
{
	return __atomic_load_n(&tty.throttled, __ATOMIC_RELAXED);
}

/* tty.lock held: throttle above the high marks, unthrottle under half of both. */
static void flow_check(void)
{
	if (!flow_fn)
		return;
	bool full = tty.ilen >= TTY_HIGH || tty.nlines >= TTY_LINES - 16;
	bool low = tty.ilen < TTY_IN / 2 && tty.nlines < TTY_LINES / 2;
	if (full && !tty.throttled) {
		__atomic_store_n(&tty.throttled, true, __ATOMIC_RELAXED);
		flow_fn(true);
	} else if (low && tty.throttled) {
		__atomic_store_n(&tty.throttled, false, __ATOMIC_RELAXED);
		flow_fn(false);
	}
}

void tty_set_output(void (*fn)(const char *s, size_t n))
{
	__atomic_store_n(&out_fn, fn, __ATOMIC_RELEASE);
}

int tty_fg_pgrp(void)
{
	mlock_lock(&tty.lock);
	int p = tty.pgrp;
	mlock_unlock(&tty.lock);
	return p;
}

void tty_set_fg_pgrp(int pgrp)
{
	mlock_lock(&tty.lock);
	tty.pgrp = pgrp;
	mlock_unlock(&tty.lock);
}

void tty_reset(void)
{
	mlock_lock(&tty.lock);
	tty.tio = tio_default;
	tty.ws = (struct lx_winsize){ 24, 80, 0, 0 };
	tty.pgrp = 0;
	tty.llen = tty.ihead = tty.ilen = tty.lhead = tty.nlines = 0;
	tty.dropped = 0;
	if (tty.throttled && flow_fn)
		flow_fn(false);
	__atomic_store_n(&tty.throttled, false, __ATOMIC_RELAXED);
	mlock_unlock(&tty.lock);
}

/* Output with OPOST/ONLCR (no lock held). The kernel console (kwrite) already writes
 * "\r\n" for "\n" (arch_console_write), so ONLCR is left to it there: a newline is one
 * CR LF on the line, not CR CR LF. Without ONLCR the console still adds its CR - a known
 * difference from Linux that only a raw-mode program printing a bare LF could see. */
static void emit(const char *s, size_t n, uint32_t oflag)
{
	void (*fn)(const char *, size_t) = __atomic_load_n(&out_fn, __ATOMIC_ACQUIRE);
	bool console = !fn;
	if (!fn)
		fn = kwrite;
	bool crlf = !console && (oflag & LX_OPOST) && (oflag & LX_ONLCR);
	char buf[256];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k + 2 > sizeof buf) {
			fn(buf, k);
			k = 0;
		}
		if (crlf && s[i] == '\n')
			buf[k++] = '\r';
		buf[k++] = s[i];
	}
	if (k)
		fn(buf, k);
}

/* ---- input (tty.lock held) ------------------------------------------------------------------- */

struct echo {
	char b[64];
	size_t n;
};

static void echo_c(struct echo *e, char c)
{
	if (e->n < sizeof e->b)
		e->b[e->n++] = c;
}

static void echo_ctl(struct echo *e, char c)
{
	echo_c(e, '^');
	echo_c(e, c == 0177 ? '?' : (char)(c + 64));
}

/* Queue a complete line (canonical; len 0 = EOF) or raw bytes. */
static bool push_in(const char *s, unsigned n, bool line)
{
	if (tty.ilen + n > TTY_IN || (line && tty.nlines == TTY_LINES)) {
		tty.dropped += n ? n : 1;
		return false;
	}
	for (unsigned i = 0; i < n; i++)
		tty.in[(tty.ihead + tty.ilen + i) % TTY_IN] = s[i];
	tty.ilen += n;
	if (line) {
		tty.lines[(tty.lhead + tty.nlines) % TTY_LINES] = n;
		tty.nlines++;
	}
	return true;
}

static bool readable(void)
{
	return (tty.tio.c_lflag & LX_ICANON) ? tty.nlines > 0 : tty.ilen > 0;
}

void tty_receive(char c)
{
	struct echo e = { .n = 0 };
	int sig = 0;
	mlock_lock(&tty.lock);
	const struct lx_termios *t = &tty.tio;
	bool echo = t->c_lflag & LX_ECHO;
	if ((t->c_iflag & LX_ICRNL) && c == '\r')
		c = '\n';
	/* c != 0: a c_cc entry of 0 is disabled (_POSIX_VDISABLE) */
	bool isig = (t->c_lflag & LX_ISIG) && c &&
		    (c == (char)t->c_cc[LX_VINTR] || c == (char)t->c_cc[LX_VQUIT] ||
		     c == (char)t->c_cc[LX_VSUSP]);
	if (isig) {
		sig = c == (char)t->c_cc[LX_VINTR] ? LX_SIGINT :
		      c == (char)t->c_cc[LX_VQUIT] ? LX_SIGQUIT : LX_SIGTSTP;
		if (!(t->c_lflag & LX_NOFLSH))	/* Linux's isig: the line and the queue go */
			tty.llen = tty.ihead = tty.ilen = tty.lhead = tty.nlines = 0;
		if (echo)
			echo_ctl(&e, c);
	} else if (t->c_lflag & LX_ICANON) {
		if (c == (char)t->c_cc[LX_VERASE]) {
			if (tty.llen) {
				tty.llen--;
				if (echo && (t->c_lflag & LX_ECHOE)) {
					echo_c(&e, '\b');
					echo_c(&e, ' ');
					echo_c(&e, '\b');
				}
			}
		} else if (c == (char)t->c_cc[LX_VKILL]) {
			while (tty.llen) {
				tty.llen--;
				if (echo && (t->c_lflag & LX_ECHOE)) {
					echo_c(&e, '\b');
					echo_c(&e, ' ');
					echo_c(&e, '\b');
				}
			}
		} else if (c == (char)t->c_cc[LX_VEOF]) {
			push_in(tty.line, tty.llen, true);	/* empty: an end of file */
			tty.llen = 0;
		} else if (c == '\n') {
			tty.line[tty.llen++] = '\n';	/* room kept for it */
			push_in(tty.line, tty.llen, true);
			tty.llen = 0;
			if (echo || (t->c_lflag & LX_ECHONL))
				echo_c(&e, '\n');
		} else if (tty.llen < TTY_LINE - 1) {
			tty.line[tty.llen++] = c;
			if (echo) {
				if ((unsigned char)c < 32 && c != '\t')
					echo_ctl(&e, c);
				else
					echo_c(&e, c);
			}
		} else {
			tty.dropped++;
		}
	} else {
		push_in(&c, 1, false);
		if (echo)
			echo_c(&e, c);
	}
	flow_check();
	bool notify = readable() && fs_wait_wanted();
	uint32_t oflag = t->c_oflag;
	mlock_unlock(&tty.lock);
	if (e.n)
		emit(e.b, e.n, oflag);
	if (notify)
		fs_wait_notify();
	if (sig)
		fs_tty_sig(sig);
}

/* ---- the file operations --------------------------------------------------------------------- */

/* Take input (tty.lock held): bytes, 0 at an end of file, -LX_EAGAIN if nothing yet. */
static long take(char *buf, size_t n)
{
	if (tty.tio.c_lflag & LX_ICANON) {
		if (!tty.nlines)
			return -LX_EAGAIN;
		unsigned *len = &tty.lines[tty.lhead];
		if (*len == 0) {		/* EOF: consumed by this read */
			tty.lhead = (tty.lhead + 1) % TTY_LINES;
			tty.nlines--;
			return 0;
		}
		size_t k = n < *len ? n : *len;
		for (size_t i = 0; i < k; i++)
			buf[i] = tty.in[(tty.ihead + i) % TTY_IN];
		tty.ihead = (tty.ihead + (unsigned)k) % TTY_IN;
		tty.ilen -= (unsigned)k;
		*len -= (unsigned)k;
		if (*len == 0) {
			tty.lhead = (tty.lhead + 1) % TTY_LINES;
			tty.nlines--;
		}
		return (long)k;
	}
	if (!tty.ilen)
		return tty.tio.c_cc[LX_VMIN] == 0 ? 0 : -LX_EAGAIN;
	size_t k = n < tty.ilen ? n : tty.ilen;
	for (size_t i = 0; i < k; i++)
		buf[i] = tty.in[(tty.ihead + i) % TTY_IN];
	tty.ihead = (tty.ihead + (unsigned)k) % TTY_IN;
	tty.ilen -= (unsigned)k;
	return (long)k;
}

static long tty_read(struct file *f, void *buf, size_t n, uint64_t *pos)
{
	(void)pos;
	if (n == 0)
		return 0;
	uint64_t gen = fs_wait_begin();
	long r;
	for (;;) {
		mlock_lock(&tty.lock);
		r = take(buf, n);
		flow_check();
		mlock_unlock(&tty.lock);
		if (r != -LX_EAGAIN)
			break;
		if (__atomic_load_n(&f->flags, __ATOMIC_RELAXED) & LX_O_NONBLOCK)
			break;
		int w = fs_wait_sleep(&gen);
		if (w < 0) {
			r = w;
			break;
		}
	}
	fs_wait_end();
	return r;
}

static long tty_write(struct file *f, const void *buf, size_t n, uint64_t *pos)
{
	(void)f, (void)pos;
	mlock_lock(&tty.lock);
	uint32_t oflag = tty.tio.c_oflag;
	mlock_unlock(&tty.lock);
	emit(buf, n, oflag);
	return (long)n;
}

static unsigned tty_poll(struct file *f)
{
	(void)f;
	mlock_lock(&tty.lock);
	unsigned r = LX_POLLOUT | (readable() ? LX_POLLIN : 0);
	mlock_unlock(&tty.lock);
	return r;
}

/* ICANON changed (tty.lock held): what is queued stays readable, as Linux's
 * n_tty_set_termios. Into raw mode: the complete lines are plain bytes and the line
 * being edited joins them; into canonical mode: unread bytes are one complete line. A
 * shell switches at every prompt (busybox's line editor reads raw), so lines typed ahead
 * while a command ran must survive both switches. */
static void mode_switched(uint32_t was_canon)
{
	uint32_t canon = tty.tio.c_lflag & LX_ICANON;
	if (was_canon && !canon) {
		unsigned n = tty.llen;
		tty.llen = 0;
		tty.lhead = tty.nlines = 0;
		push_in(tty.line, n, false);
	} else if (!was_canon && canon) {
		tty.lhead = tty.nlines = 0;
		if (tty.ilen) {
			tty.lines[0] = tty.ilen;
			tty.nlines = 1;
		}
	}
}

static long tty_ioctl(struct file *f, unsigned cmd, void *arg)
{
	(void)f;
	long rc = 0;
	uint32_t was_canon;
	bool notify = false;
	mlock_lock(&tty.lock);
	switch (cmd) {
	case LX_TCGETS:
		memcpy(arg, &tty.tio, sizeof tty.tio);
		break;
	case LX_TCSETSF:
		tty.llen = tty.ihead = tty.ilen = tty.lhead = tty.nlines = 0;
		/* fall through */
	case LX_TCSETS:
	case LX_TCSETSW:	/* output is written synchronously: nothing to drain */
		was_canon = tty.tio.c_lflag & LX_ICANON;
		memcpy(&tty.tio, arg, sizeof tty.tio);
		mode_switched(was_canon);
		notify = readable() && fs_wait_wanted();
		break;
	case LX_TIOCGWINSZ:
		memcpy(arg, &tty.ws, sizeof tty.ws);
		break;
	case LX_TIOCSWINSZ:
		memcpy(&tty.ws, arg, sizeof tty.ws);
		break;
	case LX_TIOCGPGRP:
		*(int32_t *)arg = tty.pgrp;
		break;
	case LX_TIOCSPGRP:
		if (*(int32_t *)arg < 0)
			rc = -LX_EINVAL;
		else
			tty.pgrp = *(int32_t *)arg;
		break;
	case LX_FIONREAD:
		*(int32_t *)arg = (int32_t)tty.ilen;
		break;
	default:
		rc = -LX_ENOTTY;
	}
	flow_check();
	mlock_unlock(&tty.lock);
	if (notify)
		fs_wait_notify();
	return rc;
}

static void tty_release(struct file *f) { inode_put(f->inode); }

const struct file_ops tty_ops = {
	.read = tty_read,
	.write = tty_write,
	.ioctl = tty_ioctl,
	.poll = tty_poll,
	.release = tty_release,
};
