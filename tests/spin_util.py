"""Shared by the spin model tests (tests/test_spin_fifo.py, tests/test_spin_sched.py):
generate a model's verifier, compile it, run it, return pan's output."""
import subprocess
from pathlib import Path


def run_pan(spin: str, model: Path, tmp_path: Path, defines: list,
            cc_flags: tuple = ("-DSAFETY", "-DCOLLAPSE"), run_flags: tuple = ("-m2000000",),
            opt: str = "-O2") -> str:
    """`spin -a` with `defines`, `cc <opt> <cc_flags> pan.c`, `./pan <run_flags>`; asserts
    that each step worked and that the search finished untruncated. opt="-O0" for a
    seeded-mutant search that stops at its first error: compiling is then most of the
    time."""
    r = subprocess.run([spin, *defines, "-a", str(model)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and (tmp_path / "pan.c").is_file(), \
        f"spin -a failed:\n{r.stdout}\n{r.stderr}"
    r = subprocess.run(["cc", opt, *cc_flags, "-w", "-o", "pan", "pan.c"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"cc pan.c failed:\n{r.stdout}\n{r.stderr}"
    r = subprocess.run(["./pan", *run_flags], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    out = r.stdout + r.stderr
    assert "errors:" in out, f"pan did not finish its search:\n{out[-4000:]}"
    assert "max search depth too small" not in out, f"search truncated:\n{out[-4000:]}"
    assert "out of memory" not in out, f"search ran out of memory:\n{out[-4000:]}"
    return out
