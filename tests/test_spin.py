"""Spin models (spin/*.pml): exhaustive safety verification of the lock-free algorithms.

For each model: copy it into a temporary directory, generate the verifier
(`spin -a model.pml`), compile it (`cc -O2 -DSAFETY pan.c`), run it (`./pan`) and require
"errors: 0" and a complete search (no "max search depth too small").  A model may name
extra flags in its header comment, one line each:
    pan-cc-flags: -DSAFETY -DCOLLAPSE      (replaces the default -DSAFETY)
    pan-run-flags: -m200000
    tested-by: tests/test_spin_fifo.py     (a dedicated test runs its configurations and
                                            mutants; this generic one leaves it alone)
Skipped, with the reason, when spin is not installed (Debian package `spin`; `make deps`
installs it).  See spin/README.md.

The seeded bugs of lf_list.pml (-DMUTANT=1..6, listed in its header comment) must each make
pan report an assertion violation, which shows that its checks can fail.  Each runs in the
smallest scenario (-DSCENARIO=k) that exposes it; pan stops at the first error, so each
search takes under a second and the test's time is mostly compiling pan.c (at -O0).

hlock.pml (the helping lock's word protocol) has its own tests at the end: both
configurations verify (safety and, with `pan -l`, no cycle), its seeded bugs 1-3 are each
found by the check named in the table, and its MUTANT=4 (the guard that bug 3 removes, on
its own) is shown equivalent: same state space, no error.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import spin_util

ROOT = Path(__file__).resolve().parent.parent
MODELS = sorted(m for m in (ROOT / "spin").glob("*.pml")
                if "tested-by:" not in m.read_text(errors="replace")[:4000])
TIMEOUT = 900

needs_spin = pytest.mark.skipif(
    shutil.which("spin") is None,
    reason="spin is not installed (Debian package `spin`; `make deps` installs it)")


def _flags(text: str, key: str, default: list) -> list:
    m = re.search(rf"{re.escape(key)}:[ \t]*(.*)", text)
    return m.group(1).split() if m else default


def _run(cmd: list, cwd: Path, what: str) -> str:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: `{' '.join(cmd)}` timed out after {TIMEOUT} s", pytrace=False)
    out = r.stdout + r.stderr
    if r.returncode != 0:
        pytest.fail(f"{what}: `{' '.join(cmd)}` exited {r.returncode}:\n{out[-6000:]}",
                    pytrace=False)
    return out


@needs_spin
@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_spin_model(model: Path, tmp_path: Path):
    text = model.read_text()
    cc = os.environ.get("CC", "gcc")
    cc_flags = _flags(text, "pan-cc-flags", ["-DSAFETY"])
    run_flags = _flags(text, "pan-run-flags", [])
    shutil.copy(model, tmp_path / model.name)

    _run(["spin", "-a", model.name], tmp_path, f"{model.name}: spin -a")
    _run([cc, "-O2", "-w", *cc_flags, "-o", "pan", "pan.c"], tmp_path,
         f"{model.name}: compiling pan.c")
    # pan exits 0 even when it finds errors; the verdict is in its report.
    try:
        r = subprocess.run(["./pan", *run_flags], cwd=tmp_path, capture_output=True,
                           text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{model.name}: ./pan timed out after {TIMEOUT} s", pytrace=False)
    out = r.stdout + r.stderr
    shown = f"--- ./pan {' '.join(run_flags)} (exit {r.returncode})\n{out[-6000:]}"
    if (tmp_path / f"{model.name}.trail").exists():
        trail = subprocess.run(["spin", "-t", "-p", "-g", "-l", model.name], cwd=tmp_path,
                               capture_output=True, text=True, timeout=TIMEOUT)
        shown += f"\n--- counterexample (spin -t -p -g -l)\n{trail.stdout[-8000:]}"
    assert "max search depth too small" not in out, f"incomplete search:\n{shown}"
    assert re.search(r"\berrors: 0\b", out), f"spin found errors:\n{shown}"


# lf_list.pml's seeded bugs: (name, MUTANT, the scenario that exposes it fastest)
LF_LIST = ROOT / "spin" / "lf_list.pml"
LF_LIST_MUTANTS = [
    ("tail_fix_without_generation_bump", 1, 3),
    ("remove_without_tail_fix", 2, 3),
    ("remove_without_unlinking_walk", 3, 1),
    ("walk_without_restart_after_failed_unlink", 4, 3),
    ("pop_head_without_freezing", 5, 2),
    ("pop_head_claims_removed_node", 6, 3),
]


def test_lf_list_mutants_are_switches():
    """Every mutant the table checks is a switch of the model, and the model names each."""
    text = LF_LIST.read_text()
    for name, n, _ in LF_LIST_MUTANTS:
        assert re.search(rf"#if MUTANT [!=]= {n}\b", text), f"MUTANT={n} ({name}) switches nothing"
        assert re.search(rf"^ \*\s+{n}\s", text, re.M), f"MUTANT={n} is not described"
    assert sorted(n for _, n, _ in LF_LIST_MUTANTS) == list(range(1, 7))


@needs_spin
@pytest.mark.parametrize("name,mutant,scenario", LF_LIST_MUTANTS,
                         ids=[m[0] for m in LF_LIST_MUTANTS])
def test_lf_list_finds_seeded_bug(tmp_path: Path, name: str, mutant: int, scenario: int):
    text = LF_LIST.read_text()
    cc = os.environ.get("CC", "gcc")
    cc_flags = _flags(text, "pan-cc-flags", ["-DSAFETY"])
    run_flags = _flags(text, "pan-run-flags", [])
    shutil.copy(LF_LIST, tmp_path / LF_LIST.name)
    defines = [f"-DMUTANT={mutant}", f"-DSCENARIO={scenario}"]
    _run(["spin", *defines, "-a", LF_LIST.name], tmp_path, f"{name}: spin -a")
    # -O0: the search stops at the first error after a few thousand states, so compiling
    # pan.c with -O2 (~7 s of CPU) would cost far more than it saves (~1 s for all six)
    _run([cc, "-O0", "-w", *cc_flags, "-o", "pan", "pan.c"], tmp_path, f"{name}: compiling pan.c")
    try:
        r = subprocess.run(["./pan", *run_flags], cwd=tmp_path, capture_output=True,
                           text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: ./pan timed out after {TIMEOUT} s", pytrace=False)
    out = r.stdout + r.stderr
    m = re.search(r"\berrors: (\d+)\b", out)
    assert m, f"{name}: pan did not finish its search:\n{out[-4000:]}"
    assert int(m.group(1)) > 0 and "assertion violated" in out, \
        f"the seeded bug {name} (MUTANT={mutant}, SCENARIO={scenario}) was not found:\n{out[-4000:]}"


# hlock.pml: the helping lock's word protocol (kernel/include/hlock.h), three threads of two
# rounds each.  Every search here is small (<= 1.1 M states), so pan.c is compiled at -O0:
# compiling at -O2 costs ~2 s of CPU each and saves less.
HLOCK = ROOT / "spin" / "hlock.pml"
# (name, -D options): thread 0 unlocks, or invalidates, in its last round
HLOCK_CONFIGS = [
    ("unlock", ["-DINVAL=0"]),
    ("invalidate_last_round", ["-DINVAL=1"]),
]
# (name, MUTANT, what pan must report): each seeded bug with the check that catches it
HLOCK_MUTANTS = [
    ("release_by_plain_store", 1, "invalid end state"),
    ("hnext_written_after_push", 2, "assertion violated (nx==below[(h-1)])"),
    ("pushed_helper_acquires_freed_word", 3, "assertion violated ( !(ok)|| !(((stk>>me)&1)))"),
]


def _hlock_pan(tmp_path: Path, defines: list, cc_flags: tuple = ("-DSAFETY",),
               run_flags: tuple = ("-m100000",)) -> str:
    return spin_util.run_pan(shutil.which("spin"), HLOCK, tmp_path, defines,
                             cc_flags=cc_flags, run_flags=run_flags, opt="-O0")


def _stored(out: str) -> tuple:
    m = re.search(r"(\d+) states, stored.*\n(?:.*\n)*?\s*(\d+) transitions", out)
    assert m, f"no state count in pan's report:\n{out[-4000:]}"
    return int(m.group(1)), int(m.group(2))


def test_hlock_mutants_are_switches():
    """Every mutant the table checks is a switch of the model, and the model names each."""
    text = HLOCK.read_text()
    for name, n, _ in HLOCK_MUTANTS:
        assert re.search(rf"#if MUTANT [!=]= {n}\b", text), f"MUTANT={n} ({name}) switches nothing"
        assert re.search(rf"^ \*\s+{n}\s", text, re.M), f"MUTANT={n} is not described"
    assert re.search(r"^ \*\s+4\s", text, re.M) and "MUTANT == 4" in text


@needs_spin
@pytest.mark.parametrize("name,defines", HLOCK_CONFIGS, ids=[c[0] for c in HLOCK_CONFIGS])
def test_hlock_verifies(tmp_path: Path, name: str, defines: list):
    """Safety: every assertion holds and no thread is left stuck (invalid end state)."""
    out = _hlock_pan(tmp_path, defines)
    assert re.search(r"\berrors: 0\b", out), f"spin found a violation ({name}):\n{out[-4000:]}"


@needs_spin
@pytest.mark.parametrize("name,defines", HLOCK_CONFIGS, ids=[c[0] for c in HLOCK_CONFIGS])
def test_hlock_has_no_cycles(tmp_path: Path, name: str, defines: list):
    """No reachable cycle at all (`pan -l` without progress labels): every run ends, so
    with no invalid end state every lock() returns, under any scheduling."""
    out = _hlock_pan(tmp_path, defines, cc_flags=("-DNP",), run_flags=("-l", "-m200000"))
    assert re.search(r"\berrors: 0\b", out), f"a cycle ({name}):\n{out[-4000:]}"


@needs_spin
@pytest.mark.parametrize("name,mutant,report", HLOCK_MUTANTS, ids=[m[0] for m in HLOCK_MUTANTS])
def test_hlock_finds_seeded_bug(tmp_path: Path, name: str, mutant: int, report: str):
    out = _hlock_pan(tmp_path, [f"-DMUTANT={mutant}"])
    m = re.search(r"\berrors: (\d+)\b", out)
    assert m and int(m.group(1)) > 0 and report in out, \
        f"the seeded bug {name} (MUTANT={mutant}) was not found as `{report}`:\n{out[-4000:]}"


@needs_spin
def test_hlock_pushed_guard_is_redundant(tmp_path: Path):
    """MUTANT=4 drops the acquire's "not pushed" guard (the bug as first stated): with the
    hand-off unlock a pushed helper never loads a free word, so the switch changes no
    reachable state - the same states and transitions as the algorithm, no error."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    clean = _hlock_pan(tmp_path / "a", ["-DINVAL=1"])
    mutant = _hlock_pan(tmp_path / "b", ["-DINVAL=1", "-DMUTANT=4"])
    assert re.search(r"\berrors: 0\b", mutant), f"MUTANT=4 found an error:\n{mutant[-4000:]}"
    assert _stored(mutant) == _stored(clean), \
        f"MUTANT=4 changed the state space: {_stored(mutant)} vs {_stored(clean)}"
