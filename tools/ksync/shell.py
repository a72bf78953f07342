"""The interactive shell: ``./ksync sh`` without -c (``make shell``).

QEMU boots the kernel with ``mode=user ushell=1`` (kernel/proc/ushell.c: Debian's busybox
``sh -i`` on the serial console, its input from COM1's receive interrupt through the
kernel's tty line discipline). The serial line is QEMU's ``-chardev stdio,signal=off``
(``-serial chardev:...``): QEMU turns no byte into a signal, so ^C and ^\\ reach the
guest's tty, which signals its foreground process group. This tool sits between the
user's terminal and QEMU's stdin/stdout:

- the terminal (when stdin is one) is put in raw mode for the session and restored after
  (``tty.setraw``; the terminal's own ^C, ^Z and ^\\ are then bytes for the guest);
- every byte the user types goes to the guest, from the start line on (keys typed during
  the boot wait in the terminal), except ``^]`` (0x1d), the way out of a guest that
  hangs: it kills QEMU (status 130). (A stdin that is not a terminal never gets here:
  run.py runs what it holds as a script, as ``sh < file`` does on Linux.)
- the boot's own serial lines are kept in the log (build/logs) but not shown: the screen
  shows the guest from the line after ``KSYNC {"kind":"shell_start"}`` on (a boot that
  ends before it prints the log's tail instead);
- the kernel's ``KSYNC {"kind":"shell_exit","status":N}`` line (after a carriage return)
  is taken out of what is shown, and N becomes this tool's exit status.

Public API: ``run_shell(cfg, banner)``, ``OutFilter`` (the marker filter, tested on its own).
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import termios
import time
import tty
from datetime import datetime
from pathlib import Path

from . import procrun, qemu
from .util import SetupError, display_path

START = b'KSYNC {"kind":"shell_start"}'
EXIT = b'KSYNC {"kind":"shell_exit"'
ESCAPE = 0x1d     # ^]
EXIT_GRACE_S = 10.0   # QEMU's own exit after the exit line


class OutFilter:
    """The guest's serial bytes -> what the user sees. Before the start line nothing;
    after it everything but a line (at the start of a line: after CR or LF) that begins
    with the exit marker, which is parsed for ``status``. A line start that could still
    become the marker is held back until it cannot (at most len(EXIT) bytes)."""

    def __init__(self) -> None:
        self.started = False
        self.status: int | None = None
        self.exit_obj: dict | None = None
        self._pre = b""          # before the start line: the current partial line
        self._hold = b""         # a line start that may be the marker
        self._at_start = True
        self._marker = False     # inside the marker line
        self._line = b""

    def feed(self, data: bytes) -> bytes:
        out = bytearray()
        if not self.started:
            self._pre += data
            i = self._pre.find(START)
            if i < 0:
                self._pre = self._pre[-len(START):]
                return b""
            j = self._pre.find(b"\n", i)
            if j < 0:
                self._pre = self._pre[i:]
                return b""
            self.started = True
            data, self._pre = self._pre[j + 1:], b""
        for b in data:
            c = bytes((b,))
            if self.status is not None:
                break                      # after the exit line: the kernel's, not shown
            if self._marker:
                if c == b"\n":
                    self._end_marker()
                else:
                    self._line += c
                continue
            if self._hold or self._at_start:
                cand = self._hold + c
                if EXIT.startswith(cand) or cand.startswith(EXIT):
                    self._hold = cand
                    self._at_start = False
                    if cand == EXIT:
                        self._marker, self._line, self._hold = True, cand, b""
                    continue
                out += self._hold
                self._hold = b""
            out += c
            self._at_start = c in b"\r\n"
        return bytes(out)

    def _end_marker(self) -> None:
        self._marker = False
        text = self._line.decode("utf-8", errors="replace").strip()
        try:
            obj = json.loads(text[len("KSYNC "):])
            self.exit_obj = obj
            self.status = int(obj["status"])
        except (ValueError, KeyError, TypeError):
            self.status = 1


def shell_qemu_command(cmd: list[str]) -> list[str]:
    """qemu.qemu_command's line with the serial on ``-chardev stdio,signal=off``."""
    out = list(cmd)
    i = out.index("-serial")
    out[i:i + 2] = ["-chardev", "stdio,id=ksyncsh,signal=off", "-serial", "chardev:ksyncsh"]
    return out


def run_shell(cfg: qemu.BootConfig, banner: str | None = None) -> int:
    """One interactive session; the shell's exit status (1 when the boot failed, 130 when
    ^] ended it)."""
    _q, _accel, env, cmd = qemu.prepare(cfg)
    cmd = shell_qemu_command(cmd)
    log_path, log = qemu.open_log(cfg.log_dir or cfg.repo / qemu.LOG_DIR, "shell", cfg.smp,
                                   env, cfg.scheme)
    log.write(f"# ksync shell log: smp={cfg.smp} accel={env}"
              + (f" scheme={cfg.scheme}" if cfg.scheme else "")
              + f" cmdline={qemu.qemu_kernel_cmdline(cfg)!r}\n")
    log.write("# command: " + " ".join(procrun.shquote(c) for c in cmd) + "\n")
    log.write(f"# started: {datetime.now().isoformat(timespec='seconds')}\n")
    log.flush()
    if banner:
        sys.stderr.write(banner.replace("@LOG@", display_path(log_path)) + "\n")
        sys.stderr.flush()

    stdin = sys.stdin.fileno()
    stdout = sys.stdout.fileno()
    saved = None
    if os.isatty(stdin):
        saved = termios.tcgetattr(stdin)
        tty.setraw(stdin)
    try:
        parent = os.getpid()
        proc = subprocess.Popen(cmd, cwd=cfg.repo, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True,
                                preexec_fn=lambda: procrun.die_with_parent(parent))
    except OSError as e:
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        log.close()
        raise SetupError(f"cannot start {cmd[0]}: {e.strerror or e}") from None
    filt = OutFilter()
    tail: list[bytes] = []
    escaped = False
    try:
        escaped = _pump(proc, filt, stdin, stdout, log, tail)
    finally:
        if proc.poll() is None and (escaped or filt.status is None):
            procrun.kill_group(proc)     # ^], or an exception (the CLI's SIGTERM)
        try:
            proc.wait(timeout=EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            procrun.kill_group(proc)
            proc.wait()
        if saved is not None:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
        log.write(f"# exit: {proc.returncode}  shell status: {filt.status}\n")
        log.close()
    if escaped:
        sys.stderr.write("\nksync sh: ^]: QEMU killed\n")
        return 130
    if filt.status is None:
        sys.stderr.write("\nksync sh: the kernel ended without the shell's exit line "
                         f"(QEMU exit {proc.returncode}); the last lines:\n")
        for ln in b"".join(tail).decode("utf-8", errors="replace").splitlines()[-20:]:
            sys.stderr.write("  " + ln.rstrip("\r") + "\n")
        sys.stderr.write(f"log: {display_path(log_path)}\n")
        return 1
    return filt.status


def _pump(proc: subprocess.Popen, filt: OutFilter, stdin: int, stdout: int, log,
          tail: list[bytes]) -> bool:
    """Copy until QEMU's stdout closes (or the exit line was seen and QEMU had time to
    leave). True when the user typed ^]."""
    qin, qout, qerr = proc.stdin.fileno(), proc.stdout.fileno(), proc.stderr.fileno()
    # QEMU reads its stdin only as fast as the guest's UART takes bytes: what it has not
    # taken yet waits here (a long paste), and this loop goes on copying its output
    os.set_blocking(qin, False)
    pending = b""
    reading = {qout, qerr}
    user_open = True
    deadline = None
    while reading:
        # the user's input waits (in the terminal) until the shell is about to start: a
        # byte the UART took before the kernel set it up would be lost at its reset; and
        # while QEMU has not taken the last input (at most 64 KiB are read ahead)
        take = user_open and filt.started and len(pending) < 65536
        fds = list(reading) + ([stdin] if take else [])
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        r, w, _ = select.select(fds, [qin] if pending else [], [], timeout)
        if not r and not w and deadline is not None:
            break
        if w:
            try:
                pending = pending[os.write(qin, pending):]
            except BlockingIOError:
                pass
            except OSError:            # QEMU is gone: its output's end ends the loop
                pending, user_open = b"", False
        for fd in r:
            if fd == stdin:
                data = os.read(stdin, 4096)
                if not data:
                    user_open = False      # (a terminal gives ^D as a byte, not an end)
                    continue
                if ESCAPE in data:
                    return True
                pending += data
                continue
            data = os.read(fd, 65536)
            if not data:
                reading.discard(fd)
                continue
            if fd == qerr:
                log.write("[qemu stderr] " + data.decode("utf-8", errors="replace"))
                log.flush()
                tail.append(data)
                continue
            log.write(data.decode("utf-8", errors="replace"))
            log.flush()
            tail.append(data)
            del tail[:-64]
            shown = filt.feed(data)
            if shown:
                _write_all(stdout, shown)
            if filt.status is not None and deadline is None:
                deadline = time.monotonic() + EXIT_GRACE_S
                user_open = False
    return False


def _write_all(fd: int, data: bytes) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        data = data[n:]


def terminal_words() -> list[str]:
    """Kernel command-line words for the user's terminal: term= (a plain $TERM), rows=
    and cols= (its size) - the shell's TERM and TIOCGWINSZ."""
    words = []
    term = os.environ.get("TERM", "")
    if term and all(c.isalnum() or c in "._+-" for c in term) and len(term) < 32:
        words.append(f"term={term}")
    try:
        size = os.get_terminal_size(sys.stdin.fileno())
        if size.lines > 0 and size.columns > 0:
            words += [f"rows={size.lines}", f"cols={size.columns}"]
    except OSError:
        pass
    return words

