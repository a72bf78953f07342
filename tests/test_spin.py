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


# lf_fifo_mpmc_word.pml: the strictly lock-free MPMC queue of 8-byte words
# (include/ksync/lf_fifo_mpmc_word.h), capacity N = 1 or 2, producers and consumers doing
# one or two operations each; -DHALT=1 (=2) lets producer (consumer) 0 stop for ever before
# any of its steps.  Small searches are compiled at -O0 (compiling at -O2 costs ~3 s, more
# than it saves); the two largest (2+2 processes, two operations each: ~26 M states, ~30 s,
# ~1.2 GB with -DCOLLAPSE) run only with --run-stress (make stress).
WORD = ROOT / "spin" / "lf_fifo_mpmc_word.pml"
# (name, -D options, long-only)
WORD_CONFIGS = [
    ("2p2c_1op_2cells", ["-DN=2", "-DOPS=1"], False),
    ("2p2c_1op_1cell", ["-DN=1", "-DOPS=1"], False),
    ("2p2c_2enq_1deq_2cells", ["-DN=2", "-DPOPS=2", "-DCOPS=1"], False),
    ("2p2c_2enq_1deq_1cell", ["-DN=1", "-DPOPS=2", "-DCOPS=1"], False),
    ("2p2c_1enq_2deq_2cells", ["-DN=2", "-DPOPS=1", "-DCOPS=2"], False),
    ("2p2c_1enq_2deq_1cell", ["-DN=1", "-DPOPS=1", "-DCOPS=2"], False),
    ("2p1c_2ops_2cells", ["-DN=2", "-DNCONS=1", "-DOPS=2"], False),
    ("2p1c_2ops_1cell", ["-DN=1", "-DNCONS=1", "-DOPS=2"], False),
    ("1p2c_2ops_2cells", ["-DN=2", "-DNPROD=1", "-DOPS=2"], False),
    ("1p2c_2ops_1cell", ["-DN=1", "-DNPROD=1", "-DOPS=2"], False),
    ("2p2c_2ops_2cells", ["-DN=2", "-DOPS=2"], True),
    ("2p2c_2ops_1cell", ["-DN=1", "-DOPS=2"], True),
]
# configurations with a process that may stop for ever: checked for safety (the others
# finish, init drains: no invalid end state) and for cycles (pan -l on a -DNP build)
WORD_HALT_CONFIGS = [
    ("halt_producer_2p2c_1op_2cells", ["-DN=2", "-DOPS=1", "-DHALT=1"], False),
    ("halt_consumer_2p2c_1op_2cells", ["-DN=2", "-DOPS=1", "-DHALT=2"], False),
    ("halt_producer_2p2c_1op_1cell", ["-DN=1", "-DOPS=1", "-DHALT=1"], False),
    ("halt_consumer_2p2c_1op_1cell", ["-DN=1", "-DOPS=1", "-DHALT=2"], False),
    ("halt_producer_2p1c_2ops_2cells", ["-DN=2", "-DNCONS=1", "-DOPS=2", "-DHALT=1"], False),
    ("halt_consumer_1p2c_2ops_2cells", ["-DN=2", "-DNPROD=1", "-DOPS=2", "-DHALT=2"], False),
    ("halt_producer_2p2c_2enq_1deq_2cells",
     ["-DN=2", "-DPOPS=2", "-DCOPS=1", "-DHALT=1"], True),
    ("halt_consumer_2p2c_1enq_2deq_2cells",
     ["-DN=2", "-DPOPS=1", "-DCOPS=2", "-DHALT=2"], True),
]
# (name, MUTANT, -D options, cycle search?, what pan must report)
WORD_MUTANTS = [
    ("enqueue_cas_as_read_then_write", 1, ["-DN=2", "-DOPS=1"], False,
     "assertion violated (t==genq)"),
    ("dequeue_reads_value_after_cas", 2, ["-DN=1", "-DOPS=1"], False,
     "assertion violated (val==exp)"),
    ("full_test_off_by_one_ring", 3, ["-DN=2", "-DOPS=1"], False,
     "assertion violated wasfull"),
    ("dequeue_cas_does_not_free_for_next_ring", 4, ["-DN=2", "-DOPS=1"], False,
     "assertion violated (stamp[(gi%2)]==(2*gi))"),
    ("dequeue_jump_forgets_the_ring", 5, ["-DN=2", "-DOPS=1"], False,
     "assertion violated ((lo>=(2*(h+2)))"),
    ("enqueue_waits_for_tail_hint", 6, ["-DN=2", "-DOPS=1", "-DHALT=1"], False,
     "invalid end state"),
    ("enqueue_restarts_from_tail_hint", 7, ["-DN=2", "-DOPS=1"], True,
     "non-progress cycle"),
    ("enqueue_takes_a_hint_behind_the_walk", 8, ["-DN=2", "-DOPS=1"], True,
     "non-progress cycle"),
    ("hint_plain_store_moves_back", 9, ["-DN=2", "-DOPS=1"], False,
     "assertion violated (tail<(t+1))"),
]


def _word_pan(tmp_path: Path, defines: list, long_only: bool, cycles: bool = False) -> str:
    if cycles:
        cc_flags = ("-DNP", "-DCOLLAPSE") if long_only else ("-DNP",)
        run_flags = ("-l", "-m1000000")
    else:
        cc_flags = ("-DSAFETY", "-DCOLLAPSE") if long_only else ("-DSAFETY",)
        run_flags = ("-m1000000",)
    return spin_util.run_pan(shutil.which("spin"), WORD, tmp_path, defines, cc_flags=cc_flags,
                             run_flags=run_flags, opt="-O2" if long_only else "-O0")


def _word_skip_long(request, long_only: bool):
    if long_only and not request.config.getoption("--run-stress"):
        pytest.skip("long configuration: runs with --run-stress (make stress)")


def test_mpmc_word_mutants_are_switches():
    """Every mutant the table checks is a switch of the model, and the model names each."""
    text = WORD.read_text()
    for name, n, *_ in WORD_MUTANTS:
        assert re.search(rf"#if MUTANT [!=]= {n}\b", text), f"MUTANT={n} ({name}) switches nothing"
        assert re.search(rf"^ \*\s+{n}\s", text, re.M), f"MUTANT={n} is not described"
    assert sorted(m[1] for m in WORD_MUTANTS) == list(range(1, 10))


@needs_spin
@pytest.mark.parametrize("name,defines,long_only", WORD_CONFIGS + WORD_HALT_CONFIGS,
                         ids=[c[0] for c in WORD_CONFIGS + WORD_HALT_CONFIGS])
def test_mpmc_word_verifies(tmp_path: Path, request, name: str, defines: list,
                            long_only: bool):
    """Safety: every assertion holds (linearizable FIFO with exact capacity, FULL / EMPTY
    only when true, no loss or duplication, the stamps and hints' invariants) and no
    process is left stuck (invalid end state)."""
    _word_skip_long(request, long_only)
    out = _word_pan(tmp_path, defines, long_only)
    assert re.search(r"\berrors: 0\b", out), f"spin found a violation ({name}):\n{out[-4000:]}"
    if name == "2p2c_2enq_1deq_2cells":
        # this one configuration reaches every statement of both operations (every
        # branch: CAS success and failure, FULL, EMPTY, each kind of jump, both hint paths)
        assert re.search(r"unreached in proctype producer\n\s*\(0 of", out), \
            f"a producer statement is unreachable:\n{out[-4000:]}"
        m = re.search(r"unreached in proctype consumer\n((?:\t.*\n)*?)\s*\((\d+) of", out)
        assert m and m.group(2) == "1" and "limbo = exp" in m.group(1), \
            f"a consumer statement is unreachable:\n{out[-4000:]}"


@needs_spin
@pytest.mark.parametrize("name,defines,long_only", WORD_HALT_CONFIGS,
                         ids=[c[0] for c in WORD_HALT_CONFIGS])
def test_mpmc_word_has_no_cycles(tmp_path: Path, request, name: str, defines: list,
                                 long_only: bool):
    """No reachable cycle (`pan -l` without progress labels): every run ends, whether or
    not the halting process stops, so no operation can go on for ever (lock-free with a
    stopped process: the others finish)."""
    _word_skip_long(request, long_only)
    out = _word_pan(tmp_path, defines, long_only, cycles=True)
    assert re.search(r"\berrors: 0\b", out), f"a cycle ({name}):\n{out[-4000:]}"


@needs_spin
@pytest.mark.parametrize("name,mutant,defines,cycles,report", WORD_MUTANTS,
                         ids=[m[0] for m in WORD_MUTANTS])
def test_mpmc_word_finds_seeded_bug(tmp_path: Path, name: str, mutant: int, defines: list,
                                    cycles: bool, report: str):
    out = _word_pan(tmp_path, [f"-DMUTANT={mutant}", *defines], False, cycles=cycles)
    m = re.search(r"\berrors: (\d+)\b", out)
    assert m and int(m.group(1)) > 0 and report in out, \
        f"the seeded bug {name} (MUTANT={mutant}) was not found as `{report}`:\n{out[-4000:]}"
