"""ksync CLI: argument validation, user errors, env, and `ksync run` end to end (fakes)."""
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import tool_env
from test_tool_runner import BOOT, make_fake


def run_cli(*args, env=None, cwd=None, timeout=60):
    return subprocess.run([sys.executable, "-m", "ksync", *args], env=env or tool_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, cwd=cwd)


def assert_one_line_error(p, code=2, contains=None):
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("ksync: error: "), lines[0]
    if contains:
        assert contains in lines[0]


@pytest.mark.parametrize("args,contains", [
    (["test", "--smp", "0"], "--smp"),
    (["test", "--smp", "300"], "--smp"),
    (["test", "--smp", "x"], "--smp"),
    (["run", "--smp", "65"], "--smp"),
    (["run", "--repeat", "0"], "--repeat"),
    (["run", "--repeat", "21"], "--repeat"),
    (["test", "--accel", "foo"], "--accel"),
    (["test", "--timeout", "0"], "--timeout"),
    (["test", "--timeout", "-5"], "--timeout"),
    (["test", "--timeout", "soon"], "--timeout"),
    (["test", "--filter", ""], "--filter"),
    (["test", "--filter", "a b"], "--filter"),
    (["test", "--bogus"], "--bogus"),
    (["boot", "--mode", "fast"], "--mode"),
    (["run", "--threads", "2,1"], "ascending"),
    (["run", "--threads", "1,1"], "ascending"),
    (["run", "--threads", "0"], "--threads"),
    (["run", "--threads", "65"], "--threads"),
    (["run", "--threads", "1,x"], "--threads"),
    (["run", "--threads", "1,2,3,4,5,6,7,8,9"], "at most 8"),
    (["run", "--threads", str(len(os.sched_getaffinity(0)) + 1)], "usable CPUs"),
    (["run", "fiasco", "--threads", "1"], "peer comparison"),
    (["run", "--no-peers", "--threads", "1"], "peer comparison"),
    (["frobnicate"], None),
    ([], None),
])
def test_bad_input(args, contains):
    assert_one_line_error(run_cli(*args), contains=contains)


def test_iso_with_filter_rejected(tmp_path):
    p = run_cli("test", "--iso", "--filter", "x", "--no-build", "--repo", str(tmp_path),
                "--qemu", sys.executable)
    assert_one_line_error(p, contains="--iso")


def test_help_lists_commands():
    p = run_cli("--help")
    assert p.returncode == 0
    for c in ("test", "boot", "run", "env", "report"):
        assert c in p.stdout


def test_missing_qemu_path(tmp_path):
    (tmp_path / "build/kernel").mkdir(parents=True)
    (tmp_path / "build/kernel/ksync.elf32").write_bytes(b"x")
    p = run_cli("test", "--no-build", "--repo", str(tmp_path), "--qemu",
                str(tmp_path / "no-such-qemu"))
    assert p.returncode != 0
    assert "apt-get install qemu-system-x86" in p.stderr
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_missing_qemu_not_executable(tmp_path):
    f = tmp_path / "qemu"
    f.write_text("not a program")
    f.chmod(0o644)
    p = run_cli("test", "--no-build", "--repo", str(tmp_path), "--qemu", str(f))
    assert p.returncode != 0 and "apt-get install qemu-system-x86" in p.stderr


def test_missing_qemu_on_path(tmp_path):
    env = tool_env()
    env["PATH"] = str(tmp_path)  # nothing in it
    p = run_cli("test", "--no-build", "--repo", str(tmp_path), env=env)
    assert p.returncode != 0
    assert p.stderr.strip() == ("ksync: qemu-system-x86_64 not found; install it: "
                                "apt-get install qemu-system-x86")


def test_build_failure_shows_make_output(tmp_path):
    (tmp_path / "Makefile").write_text("kernel:\n\t@echo 'kernel/main.c:1: error: boom' >&2"
                                       "; exit 1\n")
    fake = make_fake(tmp_path, exit=33)
    p = run_cli("test", "--repo", str(tmp_path), "--qemu", str(fake))
    assert p.returncode == 1
    assert "kernel/main.c:1: error: boom" in p.stderr
    assert "build failed: make kernel" in p.stderr
    assert "Traceback" not in p.stderr


def test_env_runs():
    p = run_cli("env")
    assert p.returncode == 0, p.stderr
    for key in ("host CPU model", "host CPUs", "KVM", "--accel auto picks", "QEMU", "commit"):
        assert key in p.stdout
    j = run_cli("env", "--json")
    info = json.loads(j.stdout)
    assert info["auto_accel"] in ("tcg", "kvm")
    assert isinstance(info["host_cpus"], int)


def test_report_missing_json(tmp_path):
    p = run_cli("report", "--out", str(tmp_path))
    assert p.returncode != 0
    assert "prims.json" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


# ---------------------------------------------------------------------------------------
# ksync run with a fake QEMU and a fake hosted prims program

def prim(name, median, **kw):
    row = {"kind": "prim", "name": name, "detail": kw.pop("detail", ""), "unit": "tsc_ticks",
           "batches": 200, "ops_per_batch": 256, "min": median * 0.9, "median": median,
           "p99": median * 1.5, "max": median * 3, "empty": 0.5}
    row.update(kw)
    return "KSYNC " + json.dumps(row)


KERNEL_LINES = [
    "ktap: KTAP version 1", BOOT, "ktap: 1..1",
    prim("cli_sti", 40.0), prim("pushf_cli_popf", 60.0), prim("cr8_raise_restore", 80.0),
    prim("pic_imr_write_restore", 580.0), prim("ioapic_mask_unmask", 900.0),
    prim("lapic_tpr_write", 300.0, detail="xapic-mmio"), prim("flag_set_clear", 8.0),
    prim("lock_cmpxchg", 20.0), prim("lock_xadd", 20.0), prim("cmpxchg16b", 30.0),
    "ktap: ok 1 prims", 'KSYNC {"kind":"done","mode":"bench"}',
]

HOSTED_PRIMS = '''#!{python}
import json
def prim(name, median):
    print("KSYNC " + json.dumps({{"kind": "prim", "name": name, "unit": "tsc_ticks",
          "batches": 200, "ops_per_batch": 256, "min": median, "median": median,
          "p99": median, "max": median, "empty": 0.3}}))
print("ktap: KTAP version 1")
print("ktap: 1..1")
print('KSYNC {{"kind":"hosted_boot","tsc_hz":2800000000,"tsc_source":"cpuid15","cpus":2}}')
for n, m in [("flag_set_clear", 1.0), ("pushf_popf", 12.5), ("lock_cmpxchg", 7.0),
             ("lock_xadd", 7.0), ("cmpxchg16b", 9.0), ("mfence", 15.0)]:
    prim(n, m)
print("ktap: ok 1 prims")
'''


@pytest.fixture
def run_repo(tmp_path):
    r = tmp_path / "repo"
    (r / "build/kernel").mkdir(parents=True)
    (r / "build/kernel/ksync.elf32").write_bytes(b"x")
    return r


def write_prims(tmp_path, body=HOSTED_PRIMS):
    p = tmp_path / "prims"
    p.write_text(body.format(python=sys.executable))
    p.chmod(0o755)
    return p


def flat(text: str) -> str:
    """Text with every run of whitespace (line breaks, wrap indents) made one space: prose
    is searched in this form, so where a renderer wraps a sentence (it depends on the host
    CPU's name and may depend on the terminal width) does not matter."""
    return " ".join(text.split())


def check_run_prims(stdout: str, stderr: str, out: Path, argv_file: Path) -> None:
    """What `ksync run prims` with the fake QEMU and fake hosted program must produce."""
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-append") + 1] == "mode=bench filter=prims,lf_cost,lf_fifo_cost set=default"
    assert argv[argv.index("-smp") + 1] == "2"
    # progress lines on stderr with elapsed time
    assert "] booting kernel: prims, smp=2, tcg" in stderr
    assert "] running hosted prims" in stderr
    # table on stdout (prose searched with whitespace normalised: see flat())
    text = flat(stdout)
    assert "kernel [tcg, 2 CPUs]" in text
    assert "kernel figures are QEMU TCG emulator costs, not hardware costs" in text
    assert "lapic_tpr_write (xapic-mmio)" in text
    assert "14.5" in text and "3.5" in text  # 1997 ratios
    on_flag = next(l for l in stdout.splitlines() if l.startswith("on-chip / flag"))
    assert on_flag.split() == ["on-chip", "/", "flag", "5", "12.5", "3.5"]  # 40/8, 12.5/1
    data = json.loads((out / "prims.json").read_text())
    kern = [r for r in data["rows"] if r["side"] == "kernel"]
    host = [r for r in data["rows"] if r["side"] == "hosted"]
    assert len(kern) == 10 and len(host) == 6
    for r in data["rows"]:
        for key in ("env", "cpus", "host_cpu_model", "tsc_hz", "commit", "qemu_version",
                    "timestamp"):
            assert key in r, key
    assert kern[0]["env"] == "tcg" and kern[0]["tsc_hz"] == 2596000000
    assert kern[0]["qemu_version"] == "9.9.9 (fake)"   # the fake QEMU's, not the host's
    assert host[0]["env"] == "hosted" and host[0]["tsc_hz"] == 2800000000
    assert data["sides"]["hosted"]["tsc_source"] == "cpuid15"
    md = (out / "report.md").read_text()
    assert "| cli_sti |" in md and "304 (off-chip)" in md
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<style>" in html and "cli_sti" in html


def test_run_end_to_end(run_repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33, argv_file=str(argv_file))
    out = tmp_path / "results"
    p = run_cli("run", "prims", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--hosted-prims", str(write_prims(tmp_path)), "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    check_run_prims(p.stdout, p.stderr, out, argv_file)

    # ksync report re-renders from prims.json
    md = (out / "report.md").read_text()
    (out / "report.md").unlink()
    r = run_cli("report", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "report.md").read_text() == md
    assert "kernel [tcg, 2 CPUs]" in flat(r.stdout)


SHORT_CPU = "AMD EPYC"
LONG_CPU = "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz with a much longer marketing name"


@pytest.mark.parametrize("columns", ["40", "250"])
@pytest.mark.parametrize("cpu", [SHORT_CPU, LONG_CPU])
def test_run_renders_any_cpu_and_width(run_repo, tmp_path, monkeypatch, capsys, cpu, columns):
    """The same run in-process with a short and a long host CPU name and two terminal
    widths: the output is checked the same way (the renderers may wrap differently)."""
    from ksync import cli, envdetect
    monkeypatch.setattr(envdetect, "cpu_model", lambda cpuinfo=None: cpu)
    monkeypatch.setenv("COLUMNS", columns)
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33, argv_file=str(argv_file))
    out = tmp_path / "results"
    handler = signal.getsignal(signal.SIGTERM)
    rc = cli.main(["run", "prims", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                   "--hosted-prims", str(write_prims(tmp_path)), "--out", str(out)])
    assert signal.getsignal(signal.SIGTERM) is handler   # main() gives the caller's back
    cap = capsys.readouterr()
    assert rc == 0, cap.out + cap.err
    check_run_prims(cap.out, cap.err, out, argv_file)
    data = json.loads((out / "prims.json").read_text())
    assert {r["host_cpu_model"] for r in data["rows"]} == {cpu}


def test_run_kernel_failure(run_repo, tmp_path):
    fake = make_fake(tmp_path, lines=["ktap: 1..1", "ktap: not ok 1 prims"], exit=35)
    p = run_cli("run", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--hosted-prims", str(write_prims(tmp_path)), "--out", str(tmp_path / "o"))
    assert p.returncode == 1
    assert "kernel prims run failed: kernel reported failure (exit 35)" in p.stderr
    assert not (tmp_path / "o" / "prims.json").exists()
    assert "Traceback" not in p.stderr


def test_run_hosted_failure(run_repo, tmp_path):
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33)
    bad = write_prims(tmp_path, "#!{python}\nprint('ktap: 1..1')\n"
                                "print('ktap: not ok 1 prims')\nraise SystemExit(1)\n")
    p = run_cli("run", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--hosted-prims", str(bad), "--out", str(tmp_path / "o"))
    assert p.returncode == 1
    assert "hosted prims failed: prims exited with code 1" in p.stderr
    assert "Traceback" not in p.stderr


def test_run_missing_hosted_program(run_repo, tmp_path):
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33)
    p = run_cli("run", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--out", str(tmp_path / "o"))
    assert p.returncode != 0
    assert "build/hosted/bench/prims not found" in p.stderr
    assert "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------------
# ./ksync, the wrapper a user types (runs .venv/bin/python -m ksync of its own repository)

ROOT = Path(__file__).resolve().parent.parent
WRAPPER = ROOT / "ksync"
needs_venv = pytest.mark.skipif(not (ROOT / ".venv/bin/python").exists(),
                                reason="no .venv in the repository (make creates it)")


def run_wrapper(wrapper, *args, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KSYNC_REPO")}
    return subprocess.run([str(wrapper), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=60)


def test_wrapper_is_executable_posix_sh():
    assert os.access(WRAPPER, os.X_OK)
    assert WRAPPER.read_text().startswith("#!/bin/sh\n")


@needs_venv
def test_wrapper_from_another_directory(tmp_path):
    from ksync import __version__
    p = run_wrapper(WRAPPER, "--version", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["ksync", __version__]
    h = run_wrapper(WRAPPER, "--help", cwd=tmp_path)
    assert h.returncode == 0, h.stderr
    assert h.stdout.startswith("usage: ksync")
    # it runs this repository's tool: `env --json` names this repository
    e = run_wrapper(WRAPPER, "env", "--json", cwd=tmp_path)
    assert e.returncode == 0, e.stderr
    assert Path(json.loads(e.stdout)["repo"]) == ROOT.resolve()


@needs_venv
def test_wrapper_through_a_symlink(tmp_path):
    link = tmp_path / "bin" / "ksync"
    link.parent.mkdir()
    link.symlink_to(WRAPPER)
    p = run_wrapper(link, "--version", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("ksync ")


def test_wrapper_without_venv_says_run_make(tmp_path):
    copy = tmp_path / "ksync"
    copy.write_text(WRAPPER.read_text())
    copy.chmod(0o755)
    p = run_wrapper(copy, "--version", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "make" in lines[0] and str(tmp_path) in lines[0]


# ---------------------------------------------------------------------------------------
# run --out that cannot take the results: refused before anything is measured

def _refused_before_measuring(p, argv_file):
    assert_one_line_error(p, code=2, contains="--out")
    assert not argv_file.exists()   # QEMU never started


@pytest.mark.parametrize("where", ["a file", "below a file", "a results file that is a dir"])
def test_run_out_unusable_refused_at_once(run_repo, tmp_path, where):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33, argv_file=str(argv_file))
    f = tmp_path / "somefile"
    f.write_text("x")
    if where == "a file":
        out = f
    elif where == "below a file":
        out = f / "results"
    else:
        out = tmp_path / "res"
        (out / "report.md").mkdir(parents=True)
    p = run_cli("run", "prims", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--hosted-prims", str(write_prims(tmp_path)), "--out", str(out))
    _refused_before_measuring(p, argv_file)
    assert f.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in a read-only directory")
def test_run_out_read_only_dir_refused_at_once(run_repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33, argv_file=str(argv_file))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        p = run_cli("run", "prims", "--repo", str(run_repo), "--no-build", "--qemu",
                    str(fake), "--hosted-prims", str(write_prims(tmp_path)), "--out",
                    str(ro / "results"))
    finally:
        ro.chmod(0o755)
    _refused_before_measuring(p, argv_file)


@pytest.mark.skipif(not Path("/sys/kernel").is_dir(), reason="no sysfs")
def test_run_out_in_sysfs_refused_at_once(run_repo, tmp_path):
    """/sys takes no new directories, not even from root."""
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=KERNEL_LINES, exit=33, argv_file=str(argv_file))
    p = run_cli("run", "prims", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--hosted-prims", str(write_prims(tmp_path)), "--out", "/sys/ksync-results")
    _refused_before_measuring(p, argv_file)


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_plain_make_creates_the_venv(tmp_path):
    """`make` (the default goal) builds the environment ./ksync needs (dry run into a
    VENV that does not exist: the venv recipe is among what make would run)."""
    venv = tmp_path / "venv"
    p = subprocess.run(["make", "-C", str(ROOT), "-n", f"VENV={venv}"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"scripts/venv.sh {venv}" in p.stdout.splitlines()
