"""The process runner under every launcher (QEMU: qemu.py, the hosted kernel: hkernel.py, the
Linux guest: linuxguest.py): a child in a process group of its own, its stdout and stderr
read line by line by two threads into one queue, a deadline, and the group killed however
the run ends (a verdict, a timeout, Ctrl-C or SIGTERM turned into an exception by the CLI).

``spawn(cmd, ...)`` starts the child (in a session of its own, the stop signals held until
the stream takes over); ``stream(proc, handle, ...)`` is the loop each launcher's boot shares: it feeds every line
to ``handle(tag, text)`` ("out" / "err") until both streams close, the deadline passes, the
process has exited but something holds its pipes, or the launcher's own stop condition
(stdout closed while the process runs on, a fatal line) says so; then it kills the group,
drains what was read and returns what happened (``Streamed``). The launcher turns that and
its lines into a verdict (qemu.verdict).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Callable


def read_stream(stream, tag: str, q: queue.Queue) -> None:
    try:
        for raw in iter(stream.readline, b""):
            q.put((tag, raw.decode("utf-8", errors="replace")))
    except (OSError, ValueError):
        pass
    finally:
        q.put((tag, None))


def signal_group(proc: subprocess.Popen, sig: int) -> None:
    """``sig`` to the process group of ``proc`` (or to ``proc`` when the group is gone)."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


def kill_group(proc: subprocess.Popen) -> None:
    signal_group(proc, signal.SIGKILL)


# prctl(PR_SET_PDEATHSIG, SIGKILL): the kernel kills the child when the tool dies, however
# it dies - a SIGKILL gives the tool no chance to kill the group it started (a test that
# killpg's the tool's own group with SIGKILL left QEMU, in a session of its own, running).
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def die_with_parent(parent: int) -> None:
    """In a child between fork and exec: SIGKILL when the parent (pid ``parent``) dies; if
    it is already gone (reparented before the prctl took effect), exit at once."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


# The signals that stop the tool (Ctrl-C; SIGTERM and SIGHUP, which the CLI turns into an
# exception): held from before a launcher's Popen until stream() is inside its try.
STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP})


def spawn(cmd: list[str], preexec_fn: Callable[[], None] | None = None,
          **popen_kw) -> subprocess.Popen:
    """``subprocess.Popen(cmd, start_new_session=True, ...)``, the child killed when the
    tool dies (``die_with_parent``), with the stop signals held
    until ``stream(proc, ...)`` takes over. A stop signal that arrives while the child
    starts (inside Popen, which returns only after the child's exec - on a loaded host the
    child may already run and be seen running) is then raised inside stream's try, which
    kills the child's group; without the hold it would propagate from Popen and leave the
    child running. The child starts with the caller's own mask. The caller calls stream()
    next (spawn's OSError leaves the mask as it was)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    parent = os.getpid()

    def child() -> None:
        die_with_parent(parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        if preexec_fn is not None:
            preexec_fn()

    try:
        proc = subprocess.Popen(cmd, start_new_session=True, preexec_fn=child, **popen_kw)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        raise
    proc.ksync_sigmask = old    # restored by stream()
    return proc


def shquote(s: str) -> str:
    if s and re.fullmatch(r"[A-Za-z0-9_./,=:+@%-]+", s):
        return s
    return "'" + s.replace("'", "'\\''") + "'"


@dataclass
class Streamed:
    timed_out: bool = False
    eof_without_exit: bool = False   # stdout closed, the process still running (eof_grace)
    killed: bool = False             # still running when the loop ended: killed


def stream(proc: subprocess.Popen, handle: Callable[[str, str], None], *, start: float,
           timeout: float, exit_grace: float, poll: float,
           on_timeout: Callable[[], None] | None = None, timeout_grace: float = 0.0,
           eof_grace: float | None = None, fatal: Callable[[], bool] = lambda: False,
           fatal_drain: float = 0.0, on_interrupt: Callable[[], None] = lambda: None,
           close_wait: float = 0.0) -> Streamed:
    """Read ``proc``'s two streams into ``handle`` until they close or a stop condition:

    * the deadline (``start + timeout``): without ``on_timeout`` the loop stops there; with
      it, ``on_timeout()`` is called once (e.g. SIGQUIT for a report) and the loop stops
      ``timeout_grace`` seconds later;
    * the process exited ``exit_grace`` seconds ago and something still holds its pipes;
    * ``eof_grace``: stdout closed that long ago while the process runs on;
    * ``fatal()`` true after a line: the loop reads on for ``fatal_drain`` seconds; a number
      instead of True is the drain itself (the earliest drain asked for wins);
    * both streams closed: the process is given ``close_wait`` seconds to exit on its own
      before it counts as ``killed``.

    On any exception (Ctrl-C, Terminated) the group is killed, ``on_interrupt()`` runs and
    the exception propagates. Afterwards the group is killed (anything the process left
    behind), the readers joined and the lines still queued handled."""
    res = Streamed()
    q: queue.Queue = queue.Queue()
    readers: list[threading.Thread] = []
    deadline = start + timeout
    open_streams = {"out", "err"}
    out_eof_at = exited_at = kill_at = quit_at = None
    # everything from here is inside the try, the readers' start too: an interrupt that
    # lands while they start (a signal right after the launcher's Popen, on a loaded host)
    # must kill the group as well
    try:
        old_mask = getattr(proc, "ksync_sigmask", None)
        if old_mask is not None:    # spawn() held the stop signals: deliver them here
            proc.ksync_sigmask = None
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        readers += [threading.Thread(target=read_stream, args=(proc.stdout, "out", q),
                                     daemon=True),
                    threading.Thread(target=read_stream, args=(proc.stderr, "err", q),
                                     daemon=True)]
        for t in readers:
            t.start()
        while open_streams:
            now = time.monotonic()
            if kill_at is not None and now >= kill_at:
                break
            if quit_at is None and now >= deadline:
                res.timed_out = True
                if on_timeout is None:
                    break
                quit_at = now
                on_timeout()
            if quit_at is not None and now - quit_at >= timeout_grace:
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > exit_grace:
                break  # a child holds the pipes open
            if (eof_grace is not None and out_eof_at is not None and exited_at is None
                    and now - out_eof_at > eof_grace):
                res.eof_without_exit = True
                break
            wait = poll if quit_at is not None else min(poll, max(0.0, deadline - now))
            try:
                tag, text = q.get(timeout=wait)
            except queue.Empty:
                continue
            if text is None:
                open_streams.discard(tag)
                if tag == "out":
                    out_eof_at = time.monotonic()
                continue
            handle(tag, text)
            stop = fatal()
            if stop is not False and stop is not None:
                end = time.monotonic() + (fatal_drain if stop is True else float(stop))
                kill_at = end if kill_at is None else min(kill_at, end)
    except BaseException:
        kill_group(proc)
        proc.wait()
        on_interrupt()
        raise
    if not open_streams and close_wait > 0:
        try:                # the streams closed: the process is exiting, let it finish
            proc.wait(timeout=close_wait)
        except subprocess.TimeoutExpired:
            pass
    res.killed = proc.poll() is None
    kill_group(proc)    # the process, or anything it left behind
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    for t in readers:
        t.join(timeout=2)
    while True:
        try:
            tag, text = q.get_nowait()
        except queue.Empty:
            break
        if text is not None:
            handle(tag, text)
    return res
