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
    _pin_xdist_worker()


def _pin_xdist_worker() -> None:
    """Under pytest-xdist (make test: one worker per host CPU) each worker runs on host
    CPUs of its own, and so do its children. Two workers' kernels then never share a core
    behind the kernels' backs: a kernel booted here sees (sched_getaffinity: the tool's
    host_cpus=, the hosted runtime's core count) exactly the cores it has, so its
    timing-bound checks know when they are oversubscribed. Unpinned, two hosted kernels of
    2 vCPUs each ran on 2 cores while each believed it had both: a waiter's vCPU sat out
    host slices and the hog bound of hlock_priority_inversion_bounded, the held tick of
    spl_sched_resched_waits_for_section_end, ... failed about once in 25-60 runs."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count < 2:
        return
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < count:
        return      # more workers than CPUs: nothing to divide
    mine = cpus[int(worker[2:]) % count::count]
    os.sched_setaffinity(0, mine)


# make test runs the suites on two workers (pytest-xdist, --dist load): the modules whose
# tests take longest start first, so that no long test is left to run alone at the end
# (longest-first scheduling). Only the order changes; every test still runs.
LONG_FIRST = ("test_spin.py", "test_kernel.py", "test_hosted.py", "test_schemes.py",
              "test_hosted_kernel.py", "test_spin_sched.py", "test_stress.py",
              "test_hosted_port.py", "test_hosted_kdev.py", "test_fiasco_windows.py",
              "test_sprite_tool.py", "test_spin_fifo.py", "test_spin_monitor.py")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda it: rank.get(it.path.name, len(LONG_FIRST)))
