"""Shared pytest setup: the ksync tool package lives in tools/ksync."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))

# No SCHED_FIFO vCPUs in the suites (every hosted kernel and kdev they start, directly or
# through the tool, inherits this). make test runs two workers: a hosted kernel run as
# root pins its vCPU threads SCHED_FIFO when every vCPU has a core of its own - it cannot
# see the other worker - and a FIFO thread spinning on a core starves whatever the other
# worker runs there. Seen: two hosted kernels started side by side with FIFO each ran at
# 95 % CPU for minutes instead of seconds (each one's vCPUs waiting for a partner the
# other's FIFO thread held off the core). A test that needs FIFO sets it back itself.
os.environ.setdefault("KSYNC_HOSTED_FIFO", "0")

# The host's answers must be a normal Linux's: a `make test` started in the background by
# a non-interactive shell (`make test &` in a script) inherits SIGINT and SIGQUIT ignored
# (POSIX: asynchronous commands without job control), an ignored signal stays ignored
# across exec, and a non-interactive sh cannot trap a signal ignored at its start - the
# host's busybox then printed no "got INT" for t/sh/trap_int.sh and every busybox and
# user-program comparison failed. Python leaves an inherited SIG_IGN in place, so put the
# defaults back here (each xdist worker imports this file too): children exec with SIG_DFL.
import signal  # noqa: E402

# `nohup make test` does the same to SIGHUP: t/sig_handler and t/abi_proc then saw the
# host's children ignore HUP and 5 comparisons failed. So every signal inherited ignored
# goes back to its default, except SIGPIPE and SIGXFSZ (Python ignores those itself and
# subprocess puts them back to SIG_DFL in every child).
for _sig in signal.valid_signals():
    if _sig in (signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ):
        continue
    try:
        if signal.getsignal(_sig) is signal.SIG_IGN:
            signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT
                          else signal.SIG_DFL)
    except (OSError, ValueError):  # signals the host reserves (glibc's RT ones)
        pass


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


def tool_env() -> dict:
    """Environment for running `python -m ksync` as a subprocess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "tools") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_ksync(*args, timeout=600) -> tuple[int, str]:
    """Run the ksync tool (`python -m ksync ARGS`) from the repository root, as a user
    would; returns (exit code, stdout + stderr)."""
    import subprocess
    r = subprocess.run([sys.executable, "-m", "ksync", *args], cwd=ROOT, env=tool_env(),
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def pytest_addoption(parser):
    parser.addoption("--run-stress", action="store_true", default=False,
                     help="run the long stress sizes (make stress)")


def pytest_configure(config):
    config.addinivalue_line("markers", "stress: long stress runs (make stress)")


# make test runs the suites on two workers (pytest-xdist, --dist load): the modules whose
# tests take longest start first, so that no long test is left to run alone at the end
# (longest-first scheduling). Only the order changes; every test still runs.
LONG_FIRST = ("test_spin.py", "test_kernel.py", "test_hosted.py", "test_schemes.py",
              "test_hosted_kernel.py", "test_spin_sched.py", "test_stress.py",
              "test_hosted_port.py", "test_hosted_kdev.py", "test_fiasco_windows.py",
              "test_sprite_tool.py", "test_busybox.py", "test_spin_fifo.py", "test_spin_monitor.py")


# Kernel boots run on both workers side by side. An earlier grouping of them on one
# worker (an xdist_group marker added here) never took effect - xdist's own hook had
# already named the groups - and the failures it was meant to stop
# (hlock_priority_inversion_bounded's hog bound) came from the scheduler, not from the
# sharing: they reproduced in one hosted kernel alone on an idle machine and stopped with
# the fix (docs/sched.md section 5, spin/idle_poll.pml).
def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(LONG_FIRST)))
