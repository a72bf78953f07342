"""spin model of dispatch by marking with the thread operations (spin/sched_mark.pml;
docs/sched.md section 2, the protocol issue 10's kernel/sched/ code will follow).

Each configuration is checked exhaustively (safety: assertions and invalid end states):
`spin -a`, `cc -O2 -DSAFETY -DCOLLAPSE pan.c`, `./pan`, and must report "errors: 0".
Four seeded bugs (marking by a plain store; resume re-inserting without the STOPPED check;
STOPPED published before the thread is off the queue; wakeup inserting a thread still on
a CPU) must each be found, which shows that the checks can fail.  The larger
configurations (~25 s / 1.1 GB and ~90 s / 2.5 GB) run only with --run-stress
(make stress).  Skipped, with the reason, if spin is not installed.
"""
import shutil
from pathlib import Path

import pytest

import spin_util

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "spin" / "sched_mark.pml"
SPIN = shutil.which("spin")

# (name, -D options, long-only): 2 dispatchers, NT threads, two operator processes
CONFIGS = [
    ("2thr_2steps_1op", ["-DSTEPS=2", "-DNOPS=1"], False),
    ("2thr_3steps_1op", ["-DSTEPS=3", "-DNOPS=1"], True),
    ("2thr_3steps_2ops", ["-DSTEPS=3", "-DNOPS=2"], True),
    # with the dispatchers' wake-and-take of a sleeper (sched_wake_help, issue 27): ~19 s
    ("2thr_2steps_1op_wake_take", ["-DSTEPS=2", "-DNOPS=1", "-DWAKE_TAKE=1"], True),
]
MUTANTS = [
    ("mark_by_plain_store", ["-DMUTANT=1"]),
    ("resume_inserts_without_stopped_check", ["-DMUTANT=2"]),
    ("stopped_before_unlink", ["-DMUTANT=3"]),
    ("wakeup_inserts_oncpu_thread", ["-DMUTANT=4"]),
    ("wake_take_ignores_oncpu", ["-DMUTANT=5", "-DWAKE_TAKE=1"]),
]

pytestmark = pytest.mark.skipif(SPIN is None, reason="spin is not installed "
                                "(Debian package `spin`; the Makefile's deps target installs it)")


def run_pan(tmp_path: Path, defines: list, opt: str = "-O2") -> str:
    """Generate, compile and run the verifier; return pan's output. MEMLIM: a search that
    outgrows 4 GB stops with a message instead of swapping."""
    return spin_util.run_pan(SPIN, MODEL, tmp_path, defines,
                             cc_flags=("-DSAFETY", "-DCOLLAPSE", "-DMEMLIM=4000"),
                             run_flags=("-m100000",), opt=opt)


@pytest.mark.parametrize("name,defines,long_only", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_spin_sched_mark(tmp_path: Path, request, name: str, defines: list, long_only: bool):
    if long_only and not request.config.getoption("--run-stress"):
        pytest.skip("long configuration: runs with --run-stress (make stress)")
    out = run_pan(tmp_path, defines)
    assert "errors: 0" in out, f"spin found a violation ({name}):\n{out[-4000:]}"


@pytest.mark.parametrize("name,defines", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_spin_sched_finds_seeded_bug(tmp_path: Path, name: str, defines: list):
    out = run_pan(tmp_path, ["-DSTEPS=2", "-DNOPS=1", *defines], opt="-O0")
    assert "errors: 0" not in out and "assertion violated" in out, \
        f"the seeded bug {name} was not found:\n{out[-4000:]}"
