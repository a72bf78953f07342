"""spin model of an idle CPU's poll and the wakers' hints (spin/idle_poll.pml;
kernel/sched/thread.c idle_loop, poll_hinted, sched_kick, thread_start's sched_lowered).

A waker makes a higher-priority thread and then a lower one ready on an idle CPU that
polls: checked exhaustively, no choice passes over the higher thread when it was queued
before the choice began, and the lower one's first instruction comes after the higher
one's unless the higher one's IPI is still to be taken. Two seeded bugs (the two halves
of the fix for hlock_priority_inversion_bounded's flake) must each be found. A few
seconds. Skipped, with the reason, if spin is not installed.
"""
import re
import shutil
from pathlib import Path

import pytest

import spin_util

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "spin" / "idle_poll.pml"
SPIN = shutil.which("spin")

# (name, MUTANT, what pan must report)
MUTANTS = [
    ("no_pick_after_poll_on", 1, "nm==3"),
    ("start_ignores_resched", 2, "ran[1]"),
]

pytestmark = pytest.mark.skipif(SPIN is None, reason="spin is not installed "
                                "(Debian package `spin`; the Makefile's deps target installs it)")


def _pan(tmp_path: Path, defines: list) -> str:
    return spin_util.run_pan(SPIN, MODEL, tmp_path, defines, cc_flags=("-DSAFETY",),
                             run_flags=("-m100000",), opt="-O0")


def test_idle_poll_verifies(tmp_path: Path):
    out = _pan(tmp_path, [])
    assert re.search(r"\berrors: 0\b", out), f"spin found a violation:\n{out[-4000:]}"


def test_idle_poll_mutants_are_switches():
    text = MODEL.read_text()
    for name, n, _ in MUTANTS:
        assert re.search(rf"#if MUTANT [!=]= {n}\b", text), f"MUTANT={n} ({name}) switches nothing"
        assert re.search(rf"^ \*\s+{n}\s", text, re.M), f"MUTANT={n} is not described"


@pytest.mark.parametrize("name,mutant,report", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_idle_poll_finds_seeded_bug(tmp_path: Path, name: str, mutant: int, report: str):
    out = _pan(tmp_path, [f"-DMUTANT={mutant}"])
    assert "assertion violated" in out and report in out, \
        f"the seeded bug {name} (MUTANT={mutant}) was not found:\n{out[-4000:]}"
