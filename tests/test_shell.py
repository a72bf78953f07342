"""The interactive shell (issue 24 item 4): `./ksync sh` without -c boots busybox sh -i on
the serial console (kernel/proc/ushell.c: COM1's receive interrupt -> kernel/fs/tty.c's
line discipline -> the shell's read; tools/ksync/shell.py: the terminal in raw mode).

The tool runs on a pseudo-terminal as a user's terminal would be (os.openpty): what the
test types is written to the master, what the user would see is read from it. Every wait
is for an expected string with a deadline (no sleeps as synchronisation). Two boots:
one session that ends by `exit 3`, one that ends by ^D on an empty line.

The host's twin of an interactive session would differ in what cannot be the same
(busybox's banner and prompt are the same, but a host shell is not a fresh session on a
serial line), so these tests assert the behaviour: outputs and exit statuses.
"""
from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

import pytest

from ksync import busybox
from ksync.shell import OutFilter

ROOT = Path(__file__).resolve().parent.parent
DEADLINE_S = 60.0       # per expected string: the first includes the boot under TCG
PROMPT = b"/ # "


class Session:
    """`./ksync sh --no-build -q` on a pseudo-terminal."""

    def __init__(self, *args: str) -> None:
        self.master, slave = os.openpty()
        env = dict(os.environ, TERM="vt100")
        self.proc = subprocess.Popen([str(ROOT / "ksync"), "sh", "--no-build", "-q",
                                      "--smp", "2", *args], stdin=slave, stdout=slave,
                                     stderr=slave,
                                     cwd=ROOT, env=env, start_new_session=True)
        os.close(slave)
        self.buf = b""
        self.seen = b""

    def expect(self, what: bytes, deadline: float = DEADLINE_S) -> bytes:
        """Read until `what` appears; return everything up to and including it."""
        end = time.monotonic() + deadline
        while what not in self.buf:
            left = end - time.monotonic()
            r, _, _ = select.select([self.master], [], [], max(0.0, left))
            data = b""
            if r:
                try:
                    data = os.read(self.master, 4096)
                except OSError:     # EIO: every holder of the slave is gone
                    data = b""
            if not data:
                pytest.fail(f"no {what!r} within {deadline:g} s; the screen ended with "
                            f"{self.seen[-600:]!r}")
            self.buf += data
            self.seen += data
        i = self.buf.index(what) + len(what)
        got, self.buf = self.buf[:i], self.buf[i:]
        return got

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait(self, timeout: float = DEADLINE_S) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        os.close(self.master)


@pytest.fixture(scope="module")
def kernel():
    if not busybox.have_busybox():
        pytest.fail("Debian's busybox-static (/bin/busybox) is missing: run scripts/deps.sh")
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def session(kernel):
    s = Session()
    yield s
    s.close()


def test_interactive_shell_edits_interrupts_and_exits(session):
    """The prompt; arithmetic; a DEL that erases a typed character (busybox's editor and
    the kernel's canonical mode); lines typed ahead; ^D ending cat; ^C that ends the
    foreground job and not the shell; ^Z and fg; `exit 3` ends ksync sh with status 3."""
    s = session
    s.expect(PROMPT)
    s.type(b"echo $((6*7))\r")
    s.expect(b"\r\n42\r\n" + PROMPT)
    s.type(b"echo abX\x7fc\r")                       # busybox's line editor (raw mode)
    s.expect(b"\r\nabc\r\n" + PROMPT)
    # the kernel's canonical mode (ash restored it before running the command): ERASE
    s.type(b"echo re\"\"ady; read v; echo \"got=$v\"\r")
    s.expect(b"\r\nready\r\n")
    s.type(b"abX\x7fc\r")
    s.expect(b"abX\b \bc\r\ngot=abc\r\n" + PROMPT)
    # typed ahead while a command reads: two canonical lines, the second read by the
    # line editor in raw mode at the next prompt; then canonical again for `read`
    s.type(b"echo re\"\"ady; read v; echo \"got=$v\"\r")
    s.expect(b"\r\nready\r\n")
    s.type(b"first\recho typed$((40+2))\r")
    s.expect(b"got=first\r\n")
    s.expect(b"\r\ntyped42\r\n" + PROMPT)
    s.type(b"echo re\"\"ady; read v; echo \"got=$v\"\r")
    s.expect(b"\r\nready\r\n")
    s.type(b"zz\r")
    s.expect(b"\r\ngot=zz\r\n" + PROMPT)
    # the kernel's end of file: ^D on an empty line ends `cat` (which copies the terminal
    # with sendfile: the line is returned as read, the ^D left for the next call)
    s.type(b"echo re\"\"ady; busybox cat; echo do$((1+1))ne\r")
    s.expect(b"\r\nready\r\n")
    s.type(b"abc\r")
    s.expect(b"abc\r\nabc\r\n")
    s.type(b"\x04")
    s.expect(b"do2ne\r\n" + PROMPT)
    # the job says it runs (its own echo, after the shell made its group the foreground
    # one) and then sleeps; the quotes keep the typed line's echo from matching
    s.type(b"busybox sh -c 'echo sl\"\"eeping; exec busybox sleep 1000'\r")
    s.expect(b"\r\nsleeping\r\n")
    s.type(b"\x03")
    s.expect(PROMPT)
    s.type(b"echo status=$?\r")
    s.expect(b"\r\nstatus=130\r\n" + PROMPT)        # 128 + SIGINT: the job got the signal
    s.type(b"echo still here\r")
    s.expect(b"\r\nstill here\r\n" + PROMPT)
    # job control: ^Z stops the foreground job (SIGTSTP to its group), `fg` makes its
    # group the foreground one again and continues it (its CONT trap says so), ^C ends it
    s.type(b"busybox sh -c 'trap \"echo co\"\"nt\" CONT; echo re\"\"ady; "
           b"while :; do busybox sleep 1; done'\r")
    s.expect(b"\r\nready\r\n")
    s.type(b"\x1a")
    s.expect(b"Stopped")
    s.expect(PROMPT)
    s.type(b"fg\r")
    s.expect(b"\r\ncont\r\n")
    s.type(b"\x03")
    s.expect(PROMPT)
    s.type(b"echo status=$?\r")
    s.expect(b"\r\nstatus=130\r\n" + PROMPT)
    s.type(b"exit 3\r")
    assert s.wait() == 3, s.seen[-600:]
    assert b"KSYNC" not in s.seen and b"ktap:" not in s.seen, s.seen[-600:]


def test_interactive_shell_ends_at_eof(session):
    """^D on an empty line ends the shell: status 0."""
    s = session
    s.expect(PROMPT)
    s.type(b"true\r")
    s.expect(PROMPT)
    s.type(b"\x04")
    assert s.wait() == 0, s.seen[-600:]


def test_out_filter_hides_the_boot_and_the_exit_line():
    f = OutFilter()
    assert f.feed(b"boot chatter\r\nKSYNC {\"kind\":\"shell_st") == b""
    assert f.feed(b"art\"}\r\n/ # ") == b"/ # "
    assert f.feed(b"KSYNC is a word\r\n") == b"KSYNC is a word\r\n"
    assert f.feed(b"exit 3\r\n\rKSYNC {\"kind\":\"shell_ex") == b"exit 3\r\n\r"
    assert f.status is None
    assert f.feed(b"it\",\"status\":3,\"wstatus\":768}\r\nKSYNC {\"kind\":\"done\"}\n") == b""
    assert f.status == 3
