"""spin model of the monitor lock's protocol (spin/monitor.pml; kernel/lock/monitor.c,
Hartman & Ousterhout's Sprite, Figure 9): a hit is a test-and-set of the monitor's word,
only a miss takes the interlock, marks the word, retries and queues; a release clears the
word and takes the interlock only when the mark is set.

Both release policies (Sprite's broadcast, the FIFO hand-off) are checked exhaustively
with three threads of two rounds: mutual exclusion, no thread asleep for ever (invalid
end state), the lock free and the queue empty at the end; and with `-DNP` / `pan -l`: no
cycle, so every run ends. Four seeded bugs must each be reported, which shows the checks
can fail. Skipped, with the reason, if spin is not installed.
"""
import shutil
from pathlib import Path

import pytest

import spin_util

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "spin" / "monitor.pml"
SPIN = shutil.which("spin")

pytestmark = pytest.mark.skipif(SPIN is None, reason="spin is not installed "
                                "(Debian package `spin`; the Makefile's deps target installs it)")

POLICIES = [("broadcast", ["-DHANDOFF=0"]), ("handoff", ["-DHANDOFF=1"])]
# (name, -D options, what pan must report)
MUTANTS = [
    ("release_reads_mark_before_clearing", ["-DMUTANT=1", "-DHANDOFF=0"], "invalid end state"),
    ("miss_without_retry_broadcast", ["-DMUTANT=2", "-DHANDOFF=0"], "invalid end state"),
    ("miss_without_retry_handoff", ["-DMUTANT=2", "-DHANDOFF=1"], "invalid end state"),
    ("handoff_frees_the_word", ["-DMUTANT=3", "-DHANDOFF=1"], "assertion violated"),
    ("mark_after_retry", ["-DMUTANT=4", "-DHANDOFF=0"], "invalid end state"),
]


def _pan(tmp_path: Path, defines: list, cc_flags=("-DSAFETY",), run_flags=("-m100000",),
         opt: str = "-O2") -> str:
    return spin_util.run_pan(SPIN, MODEL, tmp_path, defines, cc_flags=cc_flags,
                             run_flags=run_flags, opt=opt)


@pytest.mark.parametrize("name,defines", POLICIES, ids=[p[0] for p in POLICIES])
def test_monitor_protocol_verifies(tmp_path: Path, name: str, defines: list):
    out = _pan(tmp_path, defines)
    assert "errors: 0" in out, f"spin found a violation ({name}):\n{out[-4000:]}"
    assert "invalid end states\t+" in out, "the end-state check must be on"


@pytest.mark.parametrize("name,defines", POLICIES, ids=[p[0] for p in POLICIES])
def test_monitor_protocol_has_no_cycles(tmp_path: Path, request, name: str, defines: list):
    # three threads' cycle search takes ~15 s (broadcast) at -O2: two threads by default
    nt = [] if request.config.getoption("--run-stress") else ["-DNT=2"]
    out = _pan(tmp_path, [*defines, *nt], cc_flags=("-DNP",), run_flags=("-l", "-m200000"))
    assert "errors: 0" in out, f"a non-progress cycle ({name}):\n{out[-4000:]}"


@pytest.mark.parametrize("name,defines,report", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_monitor_model_finds_seeded_bug(tmp_path: Path, name: str, defines: list, report: str):
    out = _pan(tmp_path, defines, opt="-O0")
    assert "errors: 0" not in out and report in out, \
        f"the seeded bug {name} was not reported as {report!r}:\n{out[-4000:]}"


# ---- a condition wait on a monitor whose lock is a helping lock (spin/monitor_cv_helping.pml;
# MON_HELPING, the fiasco configuration): queue under the interlock, release the lock, sleep
CV_MODEL = ROOT / "spin" / "monitor_cv_helping.pml"
CV_MUTANTS = [("release_before_queueing", ["-DMUTANT=1"]),
              ("wake_before_sleep_dropped", ["-DMUTANT=2"])]


def _pan_cv(tmp_path: Path, defines: list, cc_flags=("-DSAFETY",), run_flags=("-m100000",),
            opt: str = "-O2") -> str:
    return spin_util.run_pan(SPIN, CV_MODEL, tmp_path, defines, cc_flags=cc_flags,
                             run_flags=run_flags, opt=opt)


@pytest.mark.parametrize("nw", [2, 3])
def test_helping_monitor_condition_wait_verifies(tmp_path: Path, nw: int):
    out = _pan_cv(tmp_path, [f"-DNW={nw}"], run_flags=("-m200000",))
    assert "errors: 0" in out, f"spin found a violation ({nw} waiters):\n{out[-4000:]}"
    assert "invalid end states\t+" in out, "the end-state check must be on"


def test_helping_monitor_condition_wait_has_no_cycles(tmp_path: Path):
    out = _pan_cv(tmp_path, ["-DNW=2"], cc_flags=("-DNP",), run_flags=("-l", "-m200000"))
    assert "errors: 0" in out, f"a non-progress cycle:\n{out[-4000:]}"


@pytest.mark.parametrize("name,defines", CV_MUTANTS, ids=[m[0] for m in CV_MUTANTS])
def test_helping_monitor_model_finds_seeded_bug(tmp_path: Path, name: str, defines: list):
    out = _pan_cv(tmp_path, defines, opt="-O0")
    assert "errors: 0" not in out and "invalid end state" in out, \
        f"the seeded bug {name} was not reported as a lost wakeup:\n{out[-4000:]}"
