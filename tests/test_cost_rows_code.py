"""Placement of the cost rows a finding compares (common/lf_fifo_rows.h): every enqueue +
dequeue pair that a Massalin & Pu finding sets against another - the unsynchronized pair,
the spsc pair, the spsc pair through ends, the unsynchronized pair under each lock - must
be timed in a function of its own, so that no side gets a placement (registers, code
layout) the other does not. This compiles bench/lf_fifo_cost.c as mk/lib.mk does (-O2)
to assembly and finds, for each row name, the functions that pass it."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMPARED = ("mp_fifo_enq_deq_nosync", "mp_fifo_spsc_enq_deq_lf", "mp_fifo_spsc_ends_put_get_lf",
            "mp_fifo_enq_deq_spin", "mp_fifo_enq_deq_mutex")


def row_functions(asm: str) -> dict[str, set[str]]:
    """Row name ("mp_..."/"ref_...") -> the functions whose code references its string."""
    strings: dict[str, str] = {}
    label = None
    for line in asm.splitlines():
        m = re.match(r"^(\.LC\d+):$", line)
        if m:
            label = m.group(1)
            continue
        m = re.match(r'^\s*\.string\s+"((?:mp|ref)_[a-z0-9_]+)"$', line)
        if m and label:
            strings[label] = m.group(1)
        label = None
    out: dict[str, set[str]] = {}
    fn = None
    for line in asm.splitlines():
        m = re.match(r"^([A-Za-z_][\w.]*):$", line)
        if m and not line.startswith(".L"):
            fn = m.group(1)
            continue
        if re.match(r"^\.LC\d+:$", line):     # a string's own label, not a use of it
            continue
        for lab in re.findall(r"\.LC\d+", line):
            if fn and lab in strings:
                out.setdefault(strings[lab], set()).add(fn)
    return out


@pytest.fixture(scope="module")
def fifo_asm(tmp_path_factory) -> str:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc or cc) on PATH")
    out = tmp_path_factory.mktemp("asm") / "lf_fifo_cost.s"
    subprocess.run([cc, "-std=c11", "-O2", "-S", f"-I{ROOT / 'include'}",
                    f"-I{ROOT / 'common'}", "-o", str(out), str(ROOT / "bench" / "lf_fifo_cost.c")],
                   check=True, capture_output=True, text=True)
    return out.read_text()


def test_each_compared_fifo_pair_is_timed_in_a_function_of_its_own(fifo_asm):
    rows = row_functions(fifo_asm)
    assert len(rows) > len(COMPARED)        # the parse found the other rows too
    owners = {}
    for name in COMPARED:
        fns = rows.get(name)
        assert fns and len(fns) == 1, f"{name}: referenced from {fns}"
        owners[name] = next(iter(fns))
    assert len(set(owners.values())) == len(COMPARED), owners
    for name, fn in owners.items():
        others = sorted(n for n, fs in rows.items() if fn in fs and n != name)
        assert not others, f"{name} shares {fn} with {others}"
