"""Hartman & Ousterhout's nine Sprite benchmarks as one static user program
(bench/user/sprite.c), the binary ksync runs unchanged: built with musl
(userprogs.build_program, build/user-bench/sprite) and run here on the host, where it is an
ordinary Linux program, at tiny scale. Every benchmark prints one parseable line with its
own arguments and the operation count its workload fixes, and leaves DIR as it found it;
`all` prints the nine in order and the end marker; bad arguments exit 2 naming the bad
value; a failing system call (in the program or in a child it forks) exits 1 with the
call and strerror. The compile job is deterministic and troff's lines fit 65 columns.
Timings are not asserted. /proc/ksync-lockstat is absent on Linux: no LOCKS lines."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ksync import userprogs

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "bench" / "user" / "sprite.c"
EXE = ROOT / "build" / "user-bench" / "sprite"
BENCHES = ["fork", "fexec", "mem", "cswitch", "pdevtest", "pdevtestInd", "pmake", "pmakeInd",
           "troff"]
SCALE = {"fork": 3, "fexec": 3, "mem": 2, "cswitch": 5, "pdevtest": 5, "pdevtestInd": 5,
         "pmake": 1, "pmakeInd": 1, "troff": 2}
PREFIX = "KSYNC-SPRITE "


def expected_ops(bench: str, copies: int, scale: int) -> int:
    if bench == "pmake":                # a fixed tree: COPIES are job slots
        return 32 * scale
    per = {"mem": 256, "pmakeInd": 32}.get(bench, 1)    # pages; files compiled
    return copies * scale * per


@pytest.fixture(scope="module")
def exe() -> Path:
    if not userprogs.have_musl():
        pytest.fail("musl (Debian musl-tools) is missing: scripts/deps.sh installs it")
    return userprogs.build_program(SRC, EXE)


def run(exe: Path, *args, argv0: str | None = None, timeout: float = 60):
    return subprocess.run([argv0 or str(exe), *map(str, args)], executable=str(exe),
                          capture_output=True, text=True, timeout=timeout)


def rows(stdout: str) -> list[dict]:
    out = []
    for line in stdout.splitlines():
        assert line.startswith(PREFIX), line
        out.append(json.loads(line[len(PREFIX):]))
    return out


def check_row(row: dict, bench: str, copies: int, scale: int) -> None:
    assert list(row) == ["bench", "copies", "scale", "ops", "elapsed_ns"], row
    assert (row["bench"], row["copies"], row["scale"]) == (bench, copies, scale), row
    assert row["ops"] == expected_ops(bench, copies, scale), row
    assert isinstance(row["elapsed_ns"], int) and row["elapsed_ns"] > 0, row


def test_builds_without_warnings(tmp_path):
    """The flags the program is written for: musl-gcc -static -O2 -Wall -Wextra -Werror."""
    if shutil.which("musl-gcc") is None:
        pytest.fail("musl-gcc (Debian musl-tools) is missing: scripts/deps.sh installs it")
    r = subprocess.run(["musl-gcc", "-static", "-O2", "-std=c11", "-Wall", "-Wextra",
                        "-Werror", "-o", str(tmp_path / "sprite"), str(SRC)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and not r.stderr, r.stderr


@pytest.mark.parametrize("copies", [1, 2])
@pytest.mark.parametrize("bench", BENCHES)
def test_each_benchmark_one_line(exe, tmp_path, bench, copies):
    d = tmp_path / "work"               # made by the program
    r = run(exe, "run", bench, copies, SCALE[bench], d)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    [row] = rows(r.stdout)
    check_row(row, bench, copies, SCALE[bench])
    assert d.is_dir() and sorted(p.name for p in d.iterdir()) == []


def test_all_nine_then_the_end_marker(exe, tmp_path):
    d = tmp_path / "work"
    d.mkdir()
    r = run(exe, "all", 2, 1, d, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "KSYNC-SPRITE-END" and len(lines) == 10, r.stdout
    got = rows("\n".join(lines[:-1]))
    assert [g["bench"] for g in got] == BENCHES
    for g in got:
        check_row(g, g["bench"], 2, 1)
    assert list(d.iterdir()) == []


def test_exit_mode(exe):
    r = run(exe, "--exit")
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")


@pytest.mark.parametrize("args,needle", [
    ([], "usage: sprite run"),
    (["frob"], "'frob'"),
    (["run", "nope", 1, 1, "D"], "unknown benchmark 'nope'"),
    (["run", "fork", 0, 1, "D"], "COPIES must be 1..64, not '0'"),
    (["run", "fork", 65, 1, "D"], "COPIES must be 1..64, not '65'"),
    (["run", "fork", "two", 1, "D"], "COPIES must be 1..64, not 'two'"),
    (["run", "fork", 1, 0, "D"], "SCALE must be 1..1000000, not '0'"),
    (["run", "fork", 1, 1000001, "D"], "SCALE must be 1..1000000, not '1000001'"),
    (["run", "fork", 1, "-3", "D"], "SCALE must be 1..1000000, not '-3'"),
    (["run", "fork", 1, 1], "run takes BENCH COPIES SCALE DIR"),
    (["all", 1, 1], "all takes COPIES SCALE DIR"),
    (["all", 1, 1, ""], "DIR must not be empty"),
    (["--cc", "x.c"], "--cc takes SRC OUT"),
    (["--mem", 0, 256], "REMAINING must be 1..1000000, not '0'"),
])
def test_bad_input_exits_2_with_the_reason(exe, tmp_path, args, needle):
    args = [str(tmp_path / "d") if a == "D" else a for a in args]
    r = run(exe, *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr and r.stdout == ""
    assert not (tmp_path / "d").exists()        # refused before anything was made


@pytest.mark.parametrize("bench", ["fexec", "mem", "pmake", "pmakeInd"])
def test_relative_argv0_refused_where_it_is_execed(exe, tmp_path, bench):
    r = run(exe, "run", bench, 1, 1, tmp_path / "d", argv0="sprite")
    assert r.returncode == 2
    assert "not an absolute path: 'sprite'" in r.stderr and bench in r.stderr
    r = run(exe, "all", 1, 1, tmp_path / "d", argv0="sprite")
    assert r.returncode == 2 and r.stdout == ""
    # the benchmarks that do not exec themselves do not need it
    r = run(exe, "run", "fork", 1, 1, tmp_path / "d", argv0="sprite")
    assert r.returncode == 0, r.stderr


def test_dir_that_cannot_be_made_fails(exe, tmp_path):
    f = tmp_path / "plain"
    f.write_text("a regular file\n")
    r = run(exe, "run", "fork", 1, 1, f / "sub")
    assert r.returncode == 1 and r.stdout == ""
    assert f"sprite: fork: mkdir {f / 'sub'}: Not a directory" in r.stderr
    r = run(exe, "all", 1, 1, f)
    assert r.returncode == 1
    assert f"sprite: all: DIR {f}: Not a directory" in r.stderr


@pytest.mark.parametrize("bench", ["fexec", "mem", "pmake"])
def test_a_childs_failure_is_the_benchmarks(exe, tmp_path, bench):
    """argv[0] names no file: the exec in a child fails; its parent reports the status."""
    d = tmp_path / "work"
    r = run(exe, "run", bench, 2, 2, d, argv0="/nonexistent/sprite")
    assert r.returncode == 1 and r.stdout == ""
    assert f"sprite: {bench}: execve /nonexistent/sprite: No such file or directory" \
        in r.stderr, r.stderr
    assert f"sprite: {bench}: instance (pid " in r.stderr and "exited with status 1" \
        in r.stderr
    assert list(d.iterdir()) == []          # pmake's tree removed on the failure too


def test_cc_is_deterministic(exe, tmp_path):
    (tmp_path / "h1.h").write_text("#define LIMIT 42\nextern int helper(int a, int b);\n")
    src = tmp_path / "c.c"
    src.write_text('/* test */\n#include "h1.h"\n\nint f(int a, int b)\n{\n'
                   '\tint x = a * 3 + helper(a, b);\n\treturn x > LIMIT ? x : b;\n}\n')
    objs = []
    for name in ("a.o", "b.o"):
        r = run(exe, "--cc", src, tmp_path / name)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
        objs.append((tmp_path / name).read_bytes())
    assert objs[0] == objs[1] and len(objs[0]) == 2048
    assert objs[0][:4] == b"SOBJ"
    src.write_text(src.read_text().replace("a * 3", "a * 4"))
    r = run(exe, "--cc", src, tmp_path / "c.o")
    assert r.returncode == 0 and (tmp_path / "c.o").read_bytes() != objs[0]
    # a header it names that is not there: the stat's failure
    src.write_text('#include "h9.h"\nint g;\n')
    r = run(exe, "--cc", src, tmp_path / "d.o")
    assert r.returncode == 1
    assert f"sprite: cc: stat {tmp_path / 'h9.h'}: No such file or directory" in r.stderr


def test_troff_fills_and_justifies_to_65_columns(exe, tmp_path):
    out, d = tmp_path / "out.txt", tmp_path / "work"
    r = run(exe, "--troff-to", out, d)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    assert list(d.iterdir()) == []              # its input removed
    lines = out.read_text().splitlines()
    assert len(lines) > 500
    assert all(len(l) <= 65 for l in lines), max(lines, key=len)
    assert all(l == l.rstrip() for l in lines)
    assert "\\" not in out.read_text()           # every escape interpreted
    # .TH: the header across the page; .SH: headings at the margin, the text indented
    assert lines[0].startswith("CSH(1)") and lines[0].endswith("CSH(1)") \
        and "User Commands" in lines[0] and len(lines[0]) == 65
    assert "DESCRIPTION" in lines and "SYNOPSIS" in lines
    body = [l for l in lines if l.startswith("       ")]
    assert len(body) > 0.9 * len([l for l in lines if l and l != l.upper()])
    # filled and justified: most body lines reach the right margin, with spread spaces
    full = [l for l in body if len(l) == 65]
    assert len(full) > len(body) / 2 and any("  " in l.strip() for l in full)
