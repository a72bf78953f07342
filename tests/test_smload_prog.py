"""Small & Manley's two real workloads as one static user program (bench/user/smload.c),
the binary ksync runs unchanged: built with musl (userprogs.build_program,
build/user-bench/smload) and run here on the host, where it is an ordinary Linux program, at
tiny scale. andrew prints its five phases and a total with the counts of the tree it
generates (counted here from `--andrew-tree`, which makes that tree and leaves it) and
leaves DIR empty; webstone prints one line with every client's requests, the bad paths it
sent, and the same bytes on every run; bad arguments exit 2 naming the bad value; a
relative argv[0] is refused where andrew must exec it; a failing system call (in the
program or in a child it forks) exits 1 with the call and strerror, and what was made is
removed. The compile job is deterministic. Timings are not asserted."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ksync import userprogs

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "bench" / "user" / "smload.c"
EXE = ROOT / "build" / "user-bench" / "smload"
PREFIX = "KSYNC-SMLOAD "
CENSUS = "KSYNC-SMLOAD-CRITSEC "
PHASES = ["mkdir", "copy", "stat", "read", "make", "total"]
# webstone's document sizes (every one a multiple of 512 bytes)
SIZES = {512, 5 * 1024, 50 * 1024, 500 * 1024}


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


def tree_counts(root: Path) -> dict:
    """A tree's directories (root included), files, bytes and C files."""
    dirs = [root, *(p for p in root.rglob("*") if p.is_dir())]
    files = [p for p in root.rglob("*") if p.is_file()]
    return {"dirs": len(dirs), "files": len(files),
            "bytes": sum(p.stat().st_size for p in files),
            "c": sum(p.suffix == ".c" for p in files)}


def test_builds_without_warnings(tmp_path):
    """The flags the program is written for: musl-gcc -static -O2 -Wall -Wextra -Werror."""
    if shutil.which("musl-gcc") is None:
        pytest.fail("musl-gcc (Debian musl-tools) is missing: scripts/deps.sh installs it")
    r = subprocess.run(["musl-gcc", "-static", "-O2", "-std=c11", "-Wall", "-Wextra",
                        "-Werror", "-o", str(tmp_path / "smload"), str(SRC)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and not r.stderr, r.stderr


@pytest.mark.parametrize("scale", [1, 2])
def test_andrew_tree_shape(exe, tmp_path, scale):
    """SCALE groups of 4 subdirectories, each 10 C files of 2-6 KiB and 2 headers they
    include; the same SCALE, the same bytes."""
    trees = []
    for name in ("a", "b"):
        d = tmp_path / name
        r = run(exe, "--andrew-tree", d, scale)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
        trees.append({p.relative_to(d): p.read_bytes() for p in d.rglob("*") if p.is_file()})
    assert trees[0] == trees[1]
    src = tmp_path / "a" / "src"
    assert tree_counts(src) == {"dirs": 1 + 5 * scale, "files": 48 * scale,
                                "bytes": tree_counts(src)["bytes"], "c": 40 * scale}
    for sub in (p for p in src.glob("g*/s*")):
        names = sorted(p.name for p in sub.iterdir())
        assert names == sorted([f"c{i}.c" for i in range(10)] + ["h0.h", "h1.h"])
        for i in range(10):
            text = (sub / f"c{i}.c").read_text()
            assert 2000 <= len(text) <= 6144, (sub, i, len(text))
            incs = [l for l in text.splitlines() if l.startswith("#include")]
            assert incs and set(incs) <= {'#include "h0.h"', '#include "h1.h"'}


def test_andrew_six_lines_with_the_trees_counts(exe, tmp_path):
    ref = tmp_path / "ref"
    assert run(exe, "--andrew-tree", ref, 1).returncode == 0
    n = tree_counts(ref / "src")
    d = tmp_path / "work"               # made by the program
    r = run(exe, "andrew", d, 1)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    got = rows(r.stdout)
    assert [g["phase"] for g in got] == PHASES
    for g in got:
        assert list(g) == ["load", "phase", "ops", "elapsed_ns"], g
        assert g["load"] == "andrew"
        assert isinstance(g["elapsed_ns"], int) and g["elapsed_ns"] > 0, g
    ops = {g["phase"]: g["ops"] for g in got}
    assert ops == {"mkdir": n["dirs"], "copy": n["files"], "stat": 2 * (n["dirs"] + n["files"]),
                   "read": n["bytes"], "make": n["c"], "total": n["c"]}
    assert (n["dirs"], n["files"], n["c"]) == (6, 48, 40)
    assert got[-1]["elapsed_ns"] == sum(g["elapsed_ns"] for g in got[:-1])
    assert d.is_dir() and list(d.iterdir()) == []


def test_andrew_relative_dir(exe, tmp_path):
    """A relative DIR: the compiles, exec'd in the same working directory, find it."""
    r = subprocess.run([str(exe), "andrew", "rel", "1"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert [g["phase"] for g in rows(r.stdout)] == PHASES
    assert list((tmp_path / "rel").iterdir()) == []


@pytest.mark.parametrize("clients", [1, 3])
def test_webstone_one_line(exe, tmp_path, clients):
    requests = 250                      # two bad paths a client
    d = tmp_path / "work"
    lines = []
    for _ in range(2):
        r = run(exe, "webstone", clients, requests, d)
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        [row] = rows(r.stdout)
        assert list(row) == ["load", "clients", "requests", "bytes", "not_found",
                             "elapsed_ns"], row
        assert (row["load"], row["clients"], row["requests"], row["not_found"]) == \
            ("webstone", clients, clients * requests, clients * (requests // 100)), row
        ok = clients * requests - row["not_found"]
        assert ok * 512 <= row["bytes"] <= ok * max(SIZES) and row["bytes"] % 512 == 0
        assert isinstance(row["elapsed_ns"], int) and row["elapsed_ns"] > 0
        lines.append(row)
        assert d.is_dir() and list(d.iterdir()) == []
    assert lines[0]["bytes"] == lines[1]["bytes"]     # the fixed-seed PRNGs


def test_webstone_fewer_than_100_requests_has_no_bad_path(exe, tmp_path):
    r = run(exe, "webstone", 2, 99, tmp_path / "d")
    assert r.returncode == 0, r.stderr
    [row] = rows(r.stdout)
    assert (row["requests"], row["not_found"]) == (198, 0) and row["bytes"] > 0


@pytest.mark.parametrize("args,needle", [
    ([], "usage: smload andrew DIR SCALE"),
    (["frob"], "unknown command 'frob'"),
    (["andrew", "D", 0], "SCALE must be 1..1000, not '0'"),
    (["andrew", "D", 1001], "SCALE must be 1..1000, not '1001'"),
    (["andrew", "D", "x1"], "SCALE must be 1..1000, not 'x1'"),
    (["andrew", "D"], "andrew takes DIR SCALE"),
    (["andrew", "", 1], "DIR must not be empty"),
    (["webstone", 0, 10, "D"], "CLIENTS must be 1..64, not '0'"),
    (["webstone", 65, 10, "D"], "CLIENTS must be 1..64, not '65'"),
    (["webstone", "-1", 10, "D"], "CLIENTS must be 1..64, not '-1'"),
    (["webstone", 1, 0, "D"], "REQUESTS must be 1..1000000, not '0'"),
    (["webstone", 1, 1000001, "D"], "REQUESTS must be 1..1000000, not '1000001'"),
    (["webstone", 1, "ten", "D"], "REQUESTS must be 1..1000000, not 'ten'"),
    (["webstone", 1, 10], "webstone takes CLIENTS REQUESTS DIR"),
    (["--cc", "x.c"], "--cc takes SRC OUT"),
    (["--andrew-tree", "D", 0], "SCALE must be 1..1000, not '0'"),
])
def test_bad_input_exits_2_with_the_reason(exe, tmp_path, args, needle):
    args = [str(tmp_path / "d") if a == "D" else a for a in args]
    r = run(exe, *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr and r.stdout == ""
    assert not (tmp_path / "d").exists()        # refused before anything was made


def test_relative_argv0_refused_for_andrew(exe, tmp_path):
    r = run(exe, "andrew", tmp_path / "d", 1, argv0="smload")
    assert r.returncode == 2 and r.stdout == ""
    assert "not an absolute path: 'smload'" in r.stderr and "andrew" in r.stderr
    assert not (tmp_path / "d").exists()
    # webstone does not exec itself: it does not need one
    r = run(exe, "webstone", 1, 5, tmp_path / "d", argv0="smload")
    assert r.returncode == 0, r.stderr


def test_dir_that_cannot_be_made_fails(exe, tmp_path):
    f = tmp_path / "plain"
    f.write_text("a regular file\n")
    for args, load in (((1, 5, f / "sub"), "webstone"), ((f / "sub", 1), "andrew")):
        r = run(exe, load, *args)
        assert r.returncode == 1 and r.stdout == ""
        assert f"smload: {load}: mkdir {f / 'sub'}: Not a directory" in r.stderr
    r = run(exe, "andrew", f, 1)
    assert r.returncode == 1
    assert f"smload: andrew: DIR {f}: Not a directory" in r.stderr
    assert f.read_text() == "a regular file\n"


def test_a_leftover_tree_is_not_ours(exe, tmp_path):
    """DIR/src (DIR/www) already there: mkdir's EEXIST fails the load, the tree untouched."""
    for load, args, sub in (("andrew", (1,), "src"), ("webstone", (1, 5), "www")):
        d = tmp_path / load
        (d / sub).mkdir(parents=True)
        (d / sub / "keep").write_text("mine\n")
        r = run(exe, load, *args, d) if load == "webstone" else run(exe, load, d, *args)
        assert r.returncode == 1 and r.stdout == ""
        assert f"smload: {load}: mkdir {d / sub}: File exists" in r.stderr
        assert (d / sub / "keep").read_text() == "mine\n"


def test_a_compiles_failure_is_andrews(exe, tmp_path):
    """argv[0] names no file: the exec in the make phase's child fails; the parent reports
    its status, and both trees are removed."""
    d = tmp_path / "work"
    r = run(exe, "andrew", d, 1, argv0="/nonexistent/smload")
    assert r.returncode == 1
    assert "smload: andrew: execve /nonexistent/smload: No such file or directory" \
        in r.stderr, r.stderr
    assert "smload: andrew: the compile of " in r.stderr and "exited with status 1" \
        in r.stderr
    assert [g["phase"] for g in rows(r.stdout)] == PHASES[:4]   # no make, no total
    assert list(d.iterdir()) == []


def test_cc_is_deterministic(exe, tmp_path):
    (tmp_path / "h0.h").write_text("#define LIMIT 42\nextern int helper(int a, int b);\n")
    src = tmp_path / "c.c"
    src.write_text('/* test */\n#include "h0.h"\n\nint f(int a, int b)\n{\n'
                   '\tint x = a * 3 + helper(a, b);\n\treturn x > LIMIT ? x : b;\n}\n')
    objs = []
    for name in ("a.o", "b.o"):
        r = run(exe, "--cc", src, tmp_path / name)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
        objs.append((tmp_path / name).read_bytes())
    assert objs[0] == objs[1] and len(objs[0]) == 2048
    assert objs[0][:4] == b"SOBJ"
    assert not list(tmp_path.glob("*.tmp"))         # written aside, then renamed
    src.write_text(src.read_text().replace("a * 3", "a * 4"))
    r = run(exe, "--cc", src, tmp_path / "c.o")
    assert r.returncode == 0 and (tmp_path / "c.o").read_bytes() != objs[0]
    # a header it names that is not there: the stat's failure
    src.write_text('#include "h9.h"\nint g;\n')
    r = run(exe, "--cc", src, tmp_path / "d.o")
    assert r.returncode == 1
    assert f"smload: cc: stat {tmp_path / 'h9.h'}: No such file or directory" in r.stderr
    assert not (tmp_path / "d.o").exists()


def test_ksync_runs_both_loads_as_the_host_does(exe, tmp_path):
    """The same binary on ksync (mode=user, 2 CPUs): andrew's counts and webstone's
    requests, bad paths and bytes (fixed seeds) equal the host's run of the same
    commands - the Small & Manley workloads' kernel paths work on ksync."""
    import os
    import stat
    from ksync import qemu
    from ksync.cpio import Entry, write_newc
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    cmds = [["andrew", "/tmp/a", "1"], ["webstone", "3", "300", "/tmp/w"]]
    rd = tmp_path / "sm.cpio"
    rd.write_bytes(write_newc([
        Entry("t", stat.S_IFDIR | 0o755), Entry("tmp", stat.S_IFDIR | 0o777),
        Entry("t/smload", stat.S_IFREG | 0o755, exe.read_bytes()),
        Entry("t/list", stat.S_IFREG | 0o644,
              "".join("/t/smload " + " ".join(c) + "\n" for c in cmds).encode())]))
    res = qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=2, timeout=300, initrd=rd,
                                    append=["user=@/t/list", "epoch=1700000000"]))
    cases = userprogs.parse_user_ktap(res.lines)
    assert res.passed and [c.status for c in cases] == [0, 0], res.lines[-20:]
    for case, cmd in zip(cases, cmds):
        host = run(exe, *[str(tmp_path / a[5:]) if a.startswith("/tmp/") else a for a in cmd])
        assert host.returncode == 0, host.stderr
        strip = lambda rs: [{k: v for k, v in x.items() if k != "elapsed_ns"} for x in rs]
        out = case.out.decode().splitlines()
        census = [json.loads(ln[len(CENSUS):]) for ln in out if ln.startswith(CENSUS)]
        assert strip(rows("\n".join(ln for ln in out if not ln.startswith(CENSUS)))) == \
            strip(rows(host.stdout)), cmd
        # ksync has /proc/ksync-critsec: one census line per timed part, this build's
        # ("census":false: the default kernel has no census compiled in)
        assert [c["phase"] for c in census] == \
            (PHASES[:-1] if cmd[0] == "andrew" else ["run"]), cmd
        assert all(c["before"]["census"] is False and c["after"] == c["before"]
                   for c in census), census
