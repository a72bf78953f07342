"""spin model of the mpmc FIFO queue (spin/lf_fifo_mpmc.pml; include/ksync/lf_fifo_mpmc.h).

Each configuration is checked exhaustively by spin (safety: assertions and invalid end
states) in a temporary directory: `spin -a`, `cc -O2 -DSAFETY -DCOLLAPSE pan.c`, `./pan`,
and must report "errors: 0".  Two seeded bugs (MUTANT=1: a cell returned to the free ring
before it is read; MUTANT=2: an enqueue that writes a slot of a later lap from a stale
tail) must be found, which shows that the checks can fail.  The largest configuration
(two producers and two consumers with two items each, ~30 s and ~1.3 GB) runs only with
--run-stress (make stress).  Skipped, with the reason, if spin is not installed.
"""
import shutil
from pathlib import Path

import pytest

import spin_util

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "spin" / "lf_fifo_mpmc.pml"
SPIN = shutil.which("spin")

# (name, -D options, long-only)
CONFIGS = [
    ("2p1c_3items_2cells", ["-DNCONS=1", "-DITEMS=3", "-DN=2"], False),
    ("2p1c_3items_4cells", ["-DNCONS=1", "-DITEMS=3", "-DN=4"], False),
    ("2p2c_1item_2cells", ["-DNCONS=2", "-DITEMS=1", "-DN=2"], False),
    ("2p2c_1item_4cells", ["-DNCONS=2", "-DITEMS=1", "-DN=4"], False),
    ("2p2c_2items_2cells", ["-DNCONS=2", "-DITEMS=2", "-DN=2"], True),
]
MUTANTS = [
    ("cell_returned_before_read", ["-DNCONS=1", "-DITEMS=2", "-DMUTANT=1"]),
    ("stale_tail_overwrites_later_lap", ["-DNCONS=1", "-DITEMS=3", "-DMUTANT=2"]),
]

pytestmark = pytest.mark.skipif(SPIN is None, reason="spin is not installed "
                                "(Debian package `spin`; the Makefile's deps target installs it)")


def run_pan(tmp_path: Path, defines: list) -> str:
    """Generate, compile and run the verifier; return pan's output."""
    return spin_util.run_pan(SPIN, MODEL, tmp_path, defines)


@pytest.mark.parametrize("name,defines,long_only", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_spin_mpmc(tmp_path: Path, request, name: str, defines: list, long_only: bool):
    if long_only and not request.config.getoption("--run-stress"):
        pytest.skip("long configuration: runs with --run-stress (make stress)")
    out = run_pan(tmp_path, defines)
    assert "errors: 0" in out, f"spin found a violation ({name}):\n{out[-4000:]}"


@pytest.mark.parametrize("name,defines", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_spin_mpmc_finds_seeded_bug(tmp_path: Path, name: str, defines: list):
    out = run_pan(tmp_path, defines)
    assert "errors: 0" not in out and "assertion violated" in out, \
        f"the seeded bug {name} was not found:\n{out[-4000:]}"
