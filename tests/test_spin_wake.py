"""spin model of a wakeup handed to a polling idle CPU (spin/wake_handoff.pml;
kernel/sched/thread.c wake_handoff / wake_take / wake_req_drop, issue 27 item 2).

Both scenarios (two wakers racing the end of the poll; one waker, the poll and the freer of
the thread's slot) are checked exhaustively: every wakeup happens exactly once, none is
performed after the slot was freed. Four seeded bugs must each be found, which shows the
checks can fail. A few seconds in all. Skipped, with the reason, if spin is not installed.
"""
import re
import shutil
from pathlib import Path

import pytest

import spin_util

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "spin" / "wake_handoff.pml"
SPIN = shutil.which("spin")

SCENARIOS = [("two_wakers", ["-DSCENARIO=1"]), ("waker_and_freer", ["-DSCENARIO=2"])]
# (name, MUTANT, scenario, what pan must report)
MUTANTS = [
    ("waker_skips_poll_check", 1, 1, "performed[1]"),
    ("poll_end_skips_request", 2, 1, "performed["),
    ("freer_drops_busy_request", 3, 2, "freed"),
    ("waker_checks_poll_before_cas", 4, 1, "performed[1]"),
]

pytestmark = pytest.mark.skipif(SPIN is None, reason="spin is not installed "
                                "(Debian package `spin`; the Makefile's deps target installs it)")


def _pan(tmp_path: Path, defines: list, opt: str = "-O0") -> str:
    # -O0: the model is a few thousand states; compiling pan.c is the time
    return spin_util.run_pan(SPIN, MODEL, tmp_path, defines, cc_flags=("-DSAFETY",),
                             run_flags=("-m100000",), opt=opt)


@pytest.mark.parametrize("name,defines", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_wake_handoff_verifies(tmp_path: Path, name: str, defines: list):
    out = _pan(tmp_path, defines)
    assert re.search(r"\berrors: 0\b", out), f"spin found a violation ({name}):\n{out[-4000:]}"


def test_wake_handoff_mutants_are_switches():
    text = MODEL.read_text()
    for name, n, _, _ in MUTANTS:
        assert re.search(rf"#if MUTANT [!=]= {n}\b|MUTANT != {n}\b|MUTANT == {n}\b", text), \
            f"MUTANT={n} ({name}) switches nothing"
        assert re.search(rf"^ \*\s+{n}\s", text, re.M), f"MUTANT={n} is not described"


@pytest.mark.parametrize("name,mutant,scenario,report", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_wake_handoff_finds_seeded_bug(tmp_path: Path, name: str, mutant: int, scenario: int,
                                       report: str):
    out = _pan(tmp_path, [f"-DMUTANT={mutant}", f"-DSCENARIO={scenario}"])
    assert "assertion violated" in out and report in out, \
        f"the seeded bug {name} (MUTANT={mutant}) was not found:\n{out[-4000:]}"
