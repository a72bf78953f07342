"""Issue 11: lock statistics compiled out (LOCKSTAT=0) leave no code on the master
locks' fast path. kernel/include/mlock.h is compiled the way the hosted kernel compiles it
(its include path, -O2) with LOCKSTAT=0 and LOCKSTAT=1; the LOCKSTAT=0 functions must not
read the mode, call a statistics routine or read the TSC, and the LOCKSTAT=1 ones must (so
the check can fail)."""
import shutil
import subprocess
from pathlib import Path

import pytest

from test_spl_fast_code import asm_functions

ROOT = Path(__file__).resolve().parent.parent
PROBE = """#include "mlock.h"
void probe_lock(struct mlock *l) { mlock_lock(l); mlock_unlock(l); }
void probe_irqsave(struct mlock *l) { irqkey_t k = mlock_lock_irqsave(l); mlock_unlock_irqrestore(l, k); }
"""
STAT_MARKS = ("lockstat_mode_", "mlock_commit_slow", "lockstat_open_slow", "rdtsc")


def compile_probe(tmp_path: Path, lockstat: int) -> dict[str, str]:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc or cc) on PATH")
    src = tmp_path / "probe.c"
    src.write_text(PROBE)
    asm = tmp_path / f"probe{lockstat}.s"
    subprocess.run([cc, "-std=gnu11", "-O2", "-S", "-fno-asynchronous-unwind-tables",
                    f"-DLOCKSTAT={lockstat}", '-DKSYNC_SPL_HEADER="spl/spl-optim.h"',
                    f"-I{ROOT / 'include'}", f"-I{ROOT / 'common'}",
                    f"-I{ROOT / 'kernel' / 'include'}", f"-I{ROOT / 'arch' / 'hosted' / 'public'}",
                    "-o", str(asm), str(src)], check=True, capture_output=True, text=True)
    return {k: "\n".join(v) for k, v in asm_functions(asm.read_text()).items()}


def test_compiled_out_statistics_leave_no_code(tmp_path: Path):
    off = compile_probe(tmp_path, 0)
    on = compile_probe(tmp_path, 1)
    assert set(off) == set(on) == {"probe_lock", "probe_irqsave"}
    for fn in off:
        for mark in STAT_MARKS:
            assert mark not in off[fn], f"LOCKSTAT=0 {fn} still has {mark}:\n{off[fn]}"
        # the same functions with statistics compiled in do have them
        assert "lockstat_mode_" in on[fn] and "mlock_commit_slow" in on[fn], on[fn]
        assert len(off[fn].splitlines()) < len(on[fn].splitlines())
