"""Shared pytest setup: the ksync tool package lives in tools/ksync."""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tools") not in sys.path:
    sys.path.insert(0, str(ROOT / "tools"))


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


# make test runs the suites on two workers (pytest-xdist, --dist loadgroup): the modules whose
# tests take longest start first, so that no long test is left to run alone at the end
# (longest-first scheduling). Only the order changes; every test still runs.
LONG_FIRST = ("test_spin.py", "test_kernel.py", "test_hosted.py", "test_schemes.py",
              "test_hosted_kernel.py", "test_spin_sched.py", "test_stress.py",
              "test_hosted_port.py", "test_hosted_kdev.py", "test_fiasco_windows.py",
              "test_sprite_tool.py", "test_spin_fifo.py", "test_spin_monitor.py")


# The modules that boot kernels (QEMU or the hosted port) with several vCPUs and check
# timing-bound behaviour: one worker runs them one after another (xdist_group, make
# test's --dist loadgroup), as a serial run did. Two such kernels side by side on the 2
# cores, each believing it had both, failed timing-bound checks (hlock_priority_inversion_
# bounded's hog bound and remote help: 2 in 60 runs of two hosted kernels side by side,
# 0 in 40 alone; spl_sched_resched_waits_for_section_end's held tick).
KERNEL_BOOTS = ("test_kernel.py", "test_schemes.py", "test_hosted_kernel.py",
                "test_hosted_port.py", "test_hosted_kdev.py", "test_fiasco_windows.py",
                "test_sprite_tool.py", "test_user.py", "test_busybox.py", "test_lock_misuse.py")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(LONG_FIRST)))
    for it in items:
        if it.path.name in KERNEL_BOOTS:
            it.add_marker(pytest.mark.xdist_group("kernel-boots"))
