"""The process runner under every launcher (tools/ksync/procrun.py): whatever interrupts
the stream - even while its reader threads start - kills the child's process group; a
drain asked for as a number wins over a later, longer one; close_wait lets an exiting
child finish before it counts as killed."""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ksync import procrun


def _child(script: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_interrupt_while_readers_start_kills_the_group(monkeypatch):
    """A Ctrl-C that lands while the stream starts its readers (right after the launcher's
    Popen) still kills the child: it is inside the stream's try."""
    p = _child("import time; time.sleep(3600)")
    real_start = threading.Thread.start
    calls = []

    def start_then_interrupt(self):
        calls.append(self)
        if len(calls) == 1:
            raise KeyboardInterrupt
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
    interrupted = []
    try:
        with pytest.raises(KeyboardInterrupt):
            procrun.stream(p, lambda tag, text: None, start=time.monotonic(), timeout=60,
                           exit_grace=1, poll=0.05, on_interrupt=lambda: interrupted.append(1))
    finally:
        monkeypatch.undo()
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert interrupted == [1]
    assert p.returncode == -signal.SIGKILL


def test_numeric_drain_earliest_wins():
    """fatal() returning seconds: the run stops that long after the line, and a later,
    longer drain does not extend it."""
    p = _child("import sys, time\n"
               "print('end', flush=True)\n"
               "for i in range(400):\n"
               "    print('more', i, flush=True); time.sleep(0.05)\n")
    seen = []
    t0 = time.monotonic()
    res = procrun.stream(p, lambda tag, text: seen.append(text.strip()), start=t0,
                         timeout=60, exit_grace=1, poll=0.05,
                         fatal=lambda: (0.5 if seen and seen[0] == "end" else None)
                         if len(seen) < 3 else 30.0)
    assert res.killed and not res.timed_out
    # read on for ~0.5 s (about 10 lines), then stopped: not at once, not after 20 s
    assert seen[0] == "end" and 3 <= len(seen) < 100, seen


def test_close_wait_lets_an_exiting_child_finish():
    """Both streams closed, the child still finishing: with close_wait it exits on its own
    and is not counted as killed."""
    p = _child("import os, time\nos.close(1); os.close(2)\ntime.sleep(0.3)\n")
    res = procrun.stream(p, lambda tag, text: None, start=time.monotonic(), timeout=60,
                         exit_grace=5, poll=0.05, close_wait=10)
    assert not res.killed and p.returncode == 0
    assert _gone(p.pid)


STOP_DURING_SPAWN = r"""
import os, signal, subprocess, sys, time
from ksync import procrun
signal.signal(signal.SIGINT, signal.default_int_handler)
p = procrun.spawn([sys.executable, "-c", "import time; time.sleep(3600)"],
                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
print("child", p.pid, flush=True)
os.kill(os.getpid(), signal.SIGINT)     # pending: spawn holds it
time.sleep(0.2)                         # unheld, it would be raised here
try:
    procrun.stream(p, lambda tag, text: None, start=time.monotonic(), timeout=60,
                   exit_grace=1, poll=0.05, on_interrupt=lambda: print("on_interrupt"))
except KeyboardInterrupt:
    print("raised in stream", p.returncode == -signal.SIGKILL, flush=True)
print("SIGINT blocked after:", signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, []))
"""


def test_stop_signal_during_spawn_is_raised_inside_the_stream(tmp_path):
    """SIGINT sent right after spawn() returned (the child already running) is held and
    raised inside stream's try: the child's group is killed, on_interrupt runs, the mask is
    the caller's again. Without the hold the KeyboardInterrupt would come out before the
    stream and leave the child running. (In a process of its own: signals go to the main
    thread, and a test worker may run tests in another.)"""
    from conftest import tool_env
    r = subprocess.run([sys.executable, "-c", STOP_DURING_SPAWN], env=tool_env(),
                       capture_output=True, text=True, timeout=60)
    child = int(r.stdout.split()[1]) if r.stdout.startswith("child") else None
    try:
        assert "on_interrupt\nraised in stream True\n" in r.stdout, r.stdout + r.stderr
        assert "SIGINT blocked after: False" in r.stdout, r.stdout
    finally:
        if child is not None:
            try:
                os.killpg(child, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_child_dies_with_the_tool_even_by_sigkill():
    """A tool killed by SIGKILL cannot kill the group it started (its child is in a
    session of its own): the child's PR_SET_PDEATHSIG does. The tool here is a Python
    process that spawns `sleep` through procrun.spawn, prints its pid and waits."""
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
    tool = _child("import sys, time; sys.path.insert(0, %r)\n"
                  "from ksync import procrun\n"
                  "p = procrun.spawn(['sleep', '600'])\n"
                  "print(p.pid, flush=True); time.sleep(600)\n" % tools)
    try:
        pid = int(tool.stdout.readline())
        os.kill(pid, 0)                      # the child runs
        tool.kill()
        tool.wait()
        assert _gone(pid), "the child outlived the tool's SIGKILL"
    finally:
        tool.kill()
        tool.wait()
        tool.stdout.close()
        tool.stderr.close()
