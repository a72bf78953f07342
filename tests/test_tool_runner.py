"""ksync QEMU runner and verdict logic, driven by a FAKE qemu (no real QEMU needed; the
test_real_* cases boot the real kernel when QEMU is installed)."""
import json
import os
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import tool_env
from ksync import ktap, qemu

FAKE_QEMU = '''#!{python}
import json, os, sys, time
spec = json.loads({spec!r})
if sys.argv[1:2] == ["--version"]:
    print("QEMU emulator version 9.9.9 (fake)")
    sys.exit(0)
if spec.get("argv_file"):
    with open(spec["argv_file"], "w") as f:
        json.dump(sys.argv[1:], f)
if spec.get("pid_file"):
    with open(spec["pid_file"] + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(spec["pid_file"] + ".tmp", spec["pid_file"])
for l in spec.get("stderr", []):
    sys.stderr.write(l + "\\n"); sys.stderr.flush()
for l in spec.get("lines", []):
    sys.stdout.write(l + spec.get("eol", "\\n")); sys.stdout.flush()
if spec.get("close_stdout"):
    os.close(1)
if spec.get("sleep"):
    time.sleep(spec["sleep"])
if spec.get("end_file"):
    open(spec["end_file"], "w").close()
sys.exit(spec.get("exit", 33))
'''

# The fakes that must print before a --timeout ends them (test_timeout, the idle boot) are
# shell scripts: a Python fake's start took over 2 s on a loaded 2-core host (make test runs
# two workers beside QEMU), so those tests waited 10 s each; /bin/sh starts in
# milliseconds, and 3 s leaves it a wide margin.
FAKE_START_S = 3
FAKE_SH = """#!/bin/sh
# fake QEMU: print the lines, record the pid, sleep (the tool must kill the group)
[ "$1" = --version ] && {{ echo "QEMU emulator version 9.9.9 (fake)"; exit 0; }}
{pid}printf '%s\\n' {lines}
sleep 3600
{end}exit 33
"""


def make_sh_fake(tmp_path: Path, lines: list[str], pid_file: Path | None = None,
                 end_file: Path | None = None) -> Path:
    """A fake QEMU in sh that prints `lines` and sleeps an hour (then writes end_file)."""
    q = lambda x: "'" + str(x).replace("'", "'\\''") + "'"
    pid = f"echo $$ > {q(pid_file)}.tmp && mv {q(pid_file)}.tmp {q(pid_file)}\n" if pid_file else ""
    end = f": > {q(end_file)}\n" if end_file else ""
    path = tmp_path / "fake-qemu-sh"
    path.write_text(FAKE_SH.format(pid=pid, lines=" ".join(q(l) for l in lines), end=end))
    path.chmod(0o755)
    return path


BOOT = ('KSYNC {"kind":"boot","cpus":2,"cpus_online":2,"tsc_hz":2596000000,'
        '"tsc_source":"pit","hypervisor":"TCGTCGTCGTCG","cpu_model":"QEMU TCG CPU"}')
PASSING = ["SeaBIOS noise", "ktap: KTAP version 1", BOOT, "ktap: 1..3", "ktap: ok 1 alpha",
           "ktap: ok 2 beta", "ktap: ok 3 gamma # SKIP no x2apic"]


def make_fake(tmp_path: Path, name="fake-qemu", **spec) -> Path:
    path = tmp_path / name
    path.write_text(FAKE_QEMU.format(python=sys.executable, spec=json.dumps(spec)))
    path.chmod(0o755)
    return path


@pytest.fixture
def repo(tmp_path):
    """A throw-away 'repo' with a (dummy) kernel image so --no-build can boot it."""
    r = tmp_path / "repo"
    (r / "build" / "kernel").mkdir(parents=True)
    (r / "build" / "kernel" / "ksync.elf32").write_bytes(b"\x7fELF dummy")
    (r / "build" / "ksync.iso").write_bytes(b"dummy iso")
    return r


def run_cli(*args, timeout=60, cpus=None):
    """The tool as a subprocess; ``cpus``: the host CPUs it (and its QEMU) may run on."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus is not None else None
    return subprocess.run([sys.executable, "-m", "ksync", *args], env=tool_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout, preexec_fn=pin)


def ksync_test(repo, fake, *extra, timeout=60, cpus=None):
    return run_cli("test", "--repo", str(repo), "--no-build", "--qemu", str(fake), *extra,
                   timeout=timeout, cpus=cpus)


# ---------------------------------------------------------------------------------------
# through the CLI


def test_pass(repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    p = ksync_test(repo, fake, "--smp", "4", "--filter", "spin*,queue_*")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = p.stdout.strip().splitlines()[-1]
    assert summary.startswith("ksync test: PASS  3/3 ok")
    assert "smp=4 tcg" in summary and "log: " in summary
    assert "Traceback" not in p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-smp") + 1] == "4"
    # -smp 4 on a host with fewer CPUs than that also tells the kernel how many it has
    host = len(os.sched_getaffinity(0))
    assert argv[argv.index("-append") + 1] == \
        "mode=test filter=spin*,queue_*" + (f" host_cpus={host}" if 4 > host else "")
    assert argv[argv.index("-kernel") + 1] == str(repo / "build/kernel/ksync.elf32")
    for want in (["-machine", "pc"], ["-m", "512M"], ["-cpu", "max"],
                 ["-accel", "tcg,thread=multi"], ["-serial", "stdio"], ["-monitor", "none"],
                 ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]):
        i = argv.index(want[0])
        assert argv[i:i + 2] == want
    assert "-no-reboot" in argv and "-display" in argv
    # the log holds the serial lines
    logs = list((repo / "build" / "logs").glob("*-test-smp4-tcg.log"))
    assert len(logs) == 1
    text = logs[0].read_text()
    assert "ktap: ok 2 beta" in text and "# verdict: PASS" in text


@pytest.mark.parametrize("smp,words", [
    (1, "mode=test"),                   # a vCPU per host CPU: nothing to say
    (2, "mode=test host_cpus=1"),       # more vCPUs than host CPUs: the kernel is told
    (4, "mode=test host_cpus=1"),
])
def test_host_cpus_word_iff_more_vcpus_than_host_cpus(repo, tmp_path, smp, words):
    """The tool pinned to one host CPU (as `taskset -c`): -append carries host_cpus=1
    exactly when -smp exceeds it; the boot log's command line is the one QEMU got."""
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    one = {min(os.sched_getaffinity(0))}
    p = ksync_test(repo, fake, "--smp", str(smp), cpus=one)
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-smp") + 1] == str(smp)
    assert argv[argv.index("-append") + 1] == words
    log = next((repo / "build" / "logs").glob("*.log")).read_text()
    assert f"cmdline={words!r}" in log


def test_host_cpus_word_user_append_overrides(repo, tmp_path):
    """The tool's word comes before the user's --append, so the user's host_cpus=
    (the kernel takes the last) wins; the ISO boot has no -append at all."""
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    one = {min(os.sched_getaffinity(0))}
    p = run_cli("boot", "--repo", str(repo), "--no-build", "--qemu", str(fake), "--smp", "3",
                "--append", "host_cpus=8", cpus=one)
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-append") + 1] == "mode=test host_cpus=1 host_cpus=8"


def test_host_cpu_words():
    assert qemu.host_cpu_words(4, host_cpus=2) == ["host_cpus=2"]
    assert qemu.host_cpu_words(3, host_cpus=2) == ["host_cpus=2"]
    assert qemu.host_cpu_words(2, host_cpus=2) == []
    assert qemu.host_cpu_words(1, host_cpus=2) == []
    assert qemu.host_cpu_words(64, host_cpus=64) == []
    cfg = qemu.BootConfig(repo=Path("/r"), smp=4, filter="hlock_*", append=["x=1"])
    with_host = qemu.kernel_cmdline(cfg, qemu.host_cpu_words(cfg.smp, host_cpus=2))
    assert with_host == "mode=test filter=hlock_* host_cpus=2 x=1"


def test_pass_crlf(repo, tmp_path):
    fake = make_fake(tmp_path, lines=PASSING, exit=33, eol="\r\n")
    p = ksync_test(repo, fake)
    assert p.returncode == 0, p.stdout + p.stderr


def test_append_and_qemu_args(repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    p = run_cli("boot", "--repo", str(repo), "--no-build", "--qemu", str(fake), "--append",
                "crash=pf", "--append", "a=1 b=2", "--qemu-arg=-rtc",
                "--qemu-arg=base=localtime")
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-append") + 1] == "mode=test crash=pf a=1 b=2"
    assert argv[-2:] == ["-rtc", "base=localtime"]


@pytest.mark.parametrize("qemu_args,own", [
    (["--qemu-arg=-smp", "--qemu-arg=3"], "--smp"),
    (["--qemu-arg=--smp=3"], "--smp"),
    (["--qemu-arg=-m", "--qemu-arg=1G"], "512M"),
    (["--qemu-arg=-accel", "--qemu-arg=kvm"], "--accel"),
    (["--qemu-arg=-enable-kvm"], "--accel"),
    (["--qemu-arg=-cpu", "--qemu-arg=host"], "--accel"),
    (["--qemu-arg=-machine", "--qemu-arg=q35"], "--machine"),
    (["--qemu-arg=-M", "--qemu-arg=q35"], "--machine"),
])
@pytest.mark.parametrize("command", [["test"], ["boot", "--mode", "idle"], ["run", "prims"]])
def test_qemu_arg_owned_by_the_tool_refused(repo, tmp_path, command, qemu_args, own):
    """--qemu-arg may not set what the tool sets (the summary would say otherwise): a
    one-line error naming the tool's own option, exit 2, before anything boots."""
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    p = run_cli(*command, "--repo", str(repo), "--no-build", "--qemu", str(fake), *qemu_args)
    assert p.returncode == 2, p.stdout + p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ksync: error: --qemu-arg "), p.stderr
    assert own in lines[0]
    assert not argv_file.exists()   # QEMU never started


def test_machine_q35_puts_the_disk_on_a_piix3_ide(repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    p = ksync_test(repo, fake, "--machine", "q35")
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-machine") + 1] == "q35"
    drive = argv[argv.index("-drive") + 1].split(",")
    assert "if=none" in drive and "id=ksyncdisk" in drive and "snapshot=on" in drive
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    assert "piix3-ide,id=ksyncide" in devices
    assert "ide-hd,drive=ksyncdisk,bus=ksyncide.0" in devices
    assert "machine=q35" in p.stdout.strip().splitlines()[-1]


def test_machine_pc_keeps_the_board_ide(repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    p = ksync_test(repo, fake, "--machine", "pc,acpi=off")
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-machine") + 1] == "pc,acpi=off"
    assert "if=ide" in argv[argv.index("-drive") + 1].split(",")
    assert not any(a.startswith("piix3-ide") for a in argv)


@pytest.mark.parametrize("value", ["isapc", "q35 ", "microvm,x=1", ""])
def test_machine_bad_value(repo, tmp_path, value):
    p = ksync_test(repo, make_fake(tmp_path, exit=33), "--machine", value)
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "--machine" in lines[0]


def test_iso_command_line(repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake(tmp_path, lines=PASSING, exit=33, argv_file=str(argv_file))
    p = ksync_test(repo, fake, "--iso")
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert "-kernel" not in argv and "-append" not in argv
    assert argv[argv.index("-cdrom") + 1] == str(repo / "build/ksync.iso")
    assert argv[argv.index("-boot") + 1] == "d"


def test_exit33_incomplete_plan_fails(repo, tmp_path):
    lines = ["ktap: KTAP version 1", "ktap: 1..12", "ktap: ok 1 a", "ktap: ok 2 b",
             "ktap: ok 3 c"]
    fake = make_fake(tmp_path, lines=lines, exit=33)
    p = ksync_test(repo, fake)
    assert p.returncode == 1
    assert "KTAP plan incomplete: 3 of 12 results" in p.stdout
    assert "ksync test: FAIL" in p.stdout


def test_exit33_not_ok_fails(repo, tmp_path):
    lines = ["ktap: 1..3", "ktap: ok 1 a", "ktap: not ok 2 b", "ktap: not ok 3 c"]
    p = ksync_test(repo, make_fake(tmp_path, lines=lines, exit=33))
    assert p.returncode == 1
    assert "2 test(s) failed: b, c" in p.stdout


def test_exit35_fails(repo, tmp_path):
    lines = ["ktap: 1..2", "ktap: ok 1 a", "ktap: not ok 2 spin_fair"]
    p = ksync_test(repo, make_fake(tmp_path, lines=lines, exit=35))
    assert p.returncode == 1
    assert "kernel reported failure (exit 35)" in p.stdout
    assert "1 test(s) failed: spin_fair" in p.stdout
    # the failure report: reason, last serial lines, log path
    assert "ktap: not ok 2 spin_fair" in p.stdout
    assert "full log: " in p.stdout


def test_exit0_is_triple_fault(repo, tmp_path):
    p = ksync_test(repo, make_fake(tmp_path, lines=PASSING[:4], exit=0))
    assert p.returncode == 1
    assert "triple fault or reset (QEMU exit 0)" in p.stdout


def test_other_exit_code(repo, tmp_path):
    fake = make_fake(tmp_path, stderr=["qemu: could not load kernel"], exit=1)
    p = ksync_test(repo, fake)
    assert p.returncode == 1
    assert "QEMU exited with code 1: qemu: could not load kernel" in p.stdout
    assert "(no serial output)" in p.stdout


def _killed_before_its_end(pid_file: Path, end_file: Path) -> None:
    """The fake QEMU (which would sleep for an hour, then write end_file) was killed by
    the tool: it started, it is gone now that the tool has returned, and it never reached
    its end."""
    assert pid_file.exists(), "the fake QEMU never started"
    pid = int(pid_file.read_text())
    assert _gone(pid), f"the fake QEMU (pid {pid}) outlived the tool"
    assert not end_file.exists(), "the fake QEMU ran to its end: the tool waited for it"


def test_timeout(repo, tmp_path):
    """--timeout 2 against a QEMU that would run for an hour: the tool stops it and says
    why. The hang guard is the subprocess timeout (a tool that waited would hit it)."""
    pid_file, end_file = tmp_path / "qemu.pid", tmp_path / "qemu.end"
    fake = make_sh_fake(tmp_path, ["booting...", "ktap: 1..5"], pid_file, end_file)
    p = ksync_test(repo, fake, "--timeout", str(FAKE_START_S), timeout=120)
    assert p.returncode == 1
    assert f"timeout after {FAKE_START_S}s" in p.stdout
    assert "booting..." in p.stdout  # last serial lines shown
    _killed_before_its_end(pid_file, end_file)


def test_last_30_lines_shown(repo, tmp_path):
    lines = [f"line {i}" for i in range(100)]
    p = ksync_test(repo, make_fake(tmp_path, lines=lines, exit=0))
    assert "line 99" in p.stdout and "line 70" in p.stdout
    assert "line 69" not in p.stdout


FAKE_ADDR2LINE = """#!{python}
import sys
args = sys.argv[1:]
for a in args[args.index("-e") + 2:]:
    if a == "0xffffffff80101234":
        print("spin_lock"); print("/src/kernel/spin.c:42")
    else:
        print("??"); print("??:0")
"""


def test_panic(repo, tmp_path):
    lines = ["ktap: 1..2", "ktap: ok 1 a", "PANIC on cpu 1: page fault at 0x0",
             "  RIP=0xffffffff80101234 RSP=0xffffffff80200000",
             "  bt: 0xffffffff80101234", "  bt: 0xffffffff80100abc"]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    a2l = bindir / "addr2line"
    a2l.write_text(FAKE_ADDR2LINE.format(python=sys.executable))
    a2l.chmod(0o755)
    (repo / "build/kernel/ksync.elf").write_bytes(b"\x7fELF")
    env = tool_env()
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    p = subprocess.run([sys.executable, "-m", "ksync", "test", "--repo", str(repo),
                        "--no-build", "--qemu", str(make_fake(tmp_path, lines=lines, exit=35))],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    assert p.returncode == 1
    assert "kernel panic on cpu 1: page fault at 0x0 (exit 35)" in p.stdout
    assert ("  RIP=0xffffffff80101234 RSP=0xffffffff80200000 "
            "<spin_lock at /src/kernel/spin.c:42>") in p.stdout
    assert "  bt: 0xffffffff80101234 <spin_lock at /src/kernel/spin.c:42>" in p.stdout
    assert "  bt: 0xffffffff80100abc\n" in p.stdout  # unknown: left alone
    log = next((repo / "build" / "logs").glob("*.log")).read_text()
    assert "# symbolized panic lines:" in log


def test_kvm_internal_error_killed(repo, tmp_path):
    """QEMU pauses the guest on a KVM internal error instead of exiting: the tool must kill
    it on the stderr line, not wait for its own --timeout (an hour here, so only the
    detection can end the run; the subprocess timeout is the hang guard)."""
    pid_file, end_file = tmp_path / "qemu.pid", tmp_path / "qemu.end"
    fake = make_fake(tmp_path, lines=["ktap: 1..1"],
                     stderr=["KVM internal error. Suberror: 1", "emulation failure"],
                     sleep=3600, pid_file=str(pid_file), end_file=str(end_file))
    p = ksync_test(repo, fake, "--timeout", "3600", timeout=120)
    assert p.returncode == 1
    # the stated reason: the stderr line, QEMU killed for it (not the tool's timeout)
    assert "QEMU: KVM internal error. Suberror: 1 (QEMU pauses the guest" in p.stdout
    assert "killed" in p.stdout and "timeout after" not in p.stdout
    _killed_before_its_end(pid_file, end_file)
    log = next((repo / "build" / "logs").glob("*.log")).read_text()
    assert "[qemu stderr] KVM internal error. Suberror: 1" in log


def test_boot_streams_serial(repo, tmp_path):
    p = run_cli("boot", "--repo", str(repo), "--no-build", "--qemu",
                str(make_fake(tmp_path, lines=PASSING, exit=33)), "--mode", "bench")
    assert p.returncode == 0, p.stderr
    assert "SeaBIOS noise" in p.stdout and "ktap: ok 1 alpha" in p.stdout
    assert "ksync boot: PASS" in p.stderr


def test_boot_idle_timeout_is_not_failure(repo, tmp_path):
    fake = make_sh_fake(tmp_path, ["idle: halted"])
    p = run_cli("boot", "--repo", str(repo), "--no-build", "--qemu", str(fake), "--mode",
                "idle", "--timeout", str(FAKE_START_S))
    assert p.returncode == 0, p.stderr
    assert "idle: halted" in p.stdout


def test_missing_kernel_image(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    p = run_cli("test", "--repo", str(empty), "--no-build", "--qemu",
                str(make_fake(tmp_path, exit=33)))
    assert p.returncode == 2
    assert "build/kernel/ksync.elf32 not found" in p.stderr
    assert "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------------
# in-process


def test_boot_in_process_eof_without_verdict(repo, tmp_path, monkeypatch):
    monkeypatch.setattr(qemu, "EOF_GRACE_S", 0.5)
    fake = make_fake(tmp_path, lines=["ktap: 1..1"], close_stdout=True, sleep=3600)
    cfg = qemu.BootConfig(repo=repo, qemu=str(fake), timeout=30)
    seen = []
    res = qemu.boot(cfg, echo=seen.append)
    assert not res.passed
    assert res.reason.startswith("EOF without a verdict")
    assert seen == ["ktap: 1..1"]
    assert res.log_path.exists()


def test_boot_in_process_result(repo, tmp_path):
    fake = make_fake(tmp_path, lines=PASSING, exit=33)
    res = qemu.boot(qemu.BootConfig(repo=repo, qemu=str(fake), mode="test", smp=3))
    assert res.passed and res.exit_code == 33
    assert res.boot["tsc_hz"] == 2596000000
    assert res.ktap.plan == 3
    assert res.env == "tcg" and res.smp == 3
    assert res.log_path.name.endswith("-test-smp3-tcg.log")


@pytest.mark.parametrize("mode,code,lines,ok,reason", [
    ("test", 33, ["ktap: 1..1", "ktap: ok 1 a"], True, None),
    ("test", 33, ["ktap: 1..2", "ktap: ok 1 a"], False, "KTAP plan incomplete: 1 of 2 results"),
    ("test", 33, [], False, "KTAP plan incomplete: no KTAP output"),
    ("test", 35, ["ktap: 1..1", "ktap: ok 1 a"], False, "kernel reported failure (exit 35)"),
    ("test", 0, ["ktap: 1..1", "ktap: ok 1 a"], False, "triple fault or reset (QEMU exit 0)"),
    ("test", 1, [], False, "QEMU exited with code 1"),
    ("test", None, [], False, "EOF without a verdict"),
    ("idle", 0, [], False, "triple fault or reset (QEMU exit 0)"),
])
def test_verdict_table(mode, code, lines, ok, reason):
    assert qemu.verdict(mode, code, ktap.parse(lines)) == (ok, reason)


def test_verdict_timeout_and_panic():
    kt = ktap.parse([])
    assert qemu.verdict("test", None, kt, timed_out=True, timeout=2) == \
        (False, "timeout after 2s")
    ok, reason = qemu.verdict("test", 35, kt, panic="PANIC: boom")
    assert not ok and reason == "kernel panic: boom (exit 35)"
    ok, reason = qemu.verdict("test", None, kt, panic="PANIC", timed_out=True, timeout=5)
    assert reason.startswith("kernel panic") and "timeout after 5s" in reason
    assert qemu.verdict("idle", None, kt, timed_out=True, timeout=5) == (True, None)
    ok, reason = qemu.verdict("test", 35, kt, panic="PANIC on cpu 1: exception 14 (#PF)")
    assert reason == "kernel panic on cpu 1: exception 14 (#PF) (exit 35)"


def test_verdict_adds_ktap_context():
    kt = ktap.parse(["ktap: 1..22"] + [f"ktap: ok {i} t{i}" for i in range(1, 7)]
                    + ["ktap: not ok 7 ioapic"])
    ok, reason = qemu.verdict("test", 0, kt)
    assert reason == ("triple fault or reset (QEMU exit 0); KTAP: 7 of 22 results, "
                      "1 not ok: ioapic")
    ok, reason = qemu.verdict("test", None, kt, timed_out=True, timeout=9)
    assert reason.startswith("timeout after 9s; KTAP: 7 of 22")


def test_gdb_command_line():
    cfg = qemu.BootConfig(repo=Path("/r"), mode="idle", gdb_port=1234)
    cmd = qemu.qemu_command(cfg, "qemu", "tcg")
    i = cmd.index("-gdb")
    assert cmd[i:i + 3] == ["-gdb", "tcp:localhost:1234", "-S"]


def test_symbolizer_with_fake_addr2line(tmp_path):
    a2l = tmp_path / "addr2line"
    a2l.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
addrs = args[args.index("-e") + 2:]
for a in addrs:
    if a == "0xffffffff80101234":
        print("spin_lock"); print("/src/kernel/spin.c:42")
    else:
        print("??"); print("??:0")
""")
    a2l.chmod(0o755)
    elf = tmp_path / "ksync.elf"
    elf.write_bytes(b"\x7fELF")
    s = qemu.Symbolizer(elf, addr2line=str(a2l))
    assert s.symbolize("  RIP=0xffffffff80101234 RSP=0x10") == \
        "  RIP=0xffffffff80101234 RSP=0x10 <spin_lock at /src/kernel/spin.c:42>"
    assert s.symbolize("  bt: 0xffffffff80101234 0x1") == \
        "  bt: 0xffffffff80101234 0x1 <spin_lock at /src/kernel/spin.c:42>"
    assert s.symbolize("other 0xffffffff80101234") == "other 0xffffffff80101234"
    missing = qemu.Symbolizer(tmp_path / "nope.elf", addr2line=str(a2l))
    assert missing.symbolize("  RIP=0xffffffff80101234") == "  RIP=0xffffffff80101234"


def test_kernel_cmdline():
    cfg = qemu.BootConfig(repo=Path("/r"), mode="bench", filter="prims", set="all")
    assert qemu.kernel_cmdline(cfg) == "mode=bench filter=prims set=all"
    assert qemu.kernel_cmdline(qemu.BootConfig(repo=Path("/r"))) == "mode=test"


def test_kvm_command_line():
    cmd = qemu.qemu_command(qemu.BootConfig(repo=Path("/r")), "qemu", "kvm")
    i = cmd.index("-accel")
    assert cmd[i:i + 4] == ["-accel", "kvm", "-cpu", "host,-arch-capabilities"]
    assert "max" not in cmd


def test_resolve_accel_pvm(monkeypatch, tmp_path):
    from ksync import envdetect
    from ksync.util import SetupError
    sysmod = tmp_path / "sys"
    (sysmod / "kvm_pvm").mkdir(parents=True)
    dev = tmp_path / "kvm"
    dev.write_text("")
    monkeypatch.setattr(envdetect, "SYS_MODULE", sysmod)
    monkeypatch.setattr(envdetect, "DEV_KVM", dev)
    with pytest.raises(SetupError) as e:
        qemu.resolve_accel("kvm")
    assert "kvm_pvm" in str(e.value) and "--allow-pvm" in str(e.value)
    assert qemu.resolve_accel("kvm", allow_pvm=True) == ("kvm", "kvm-pvm")
    assert qemu.resolve_accel("auto") == ("tcg", "tcg")
    monkeypatch.setattr(envdetect, "DEV_KVM", tmp_path / "absent")
    with pytest.raises(SetupError) as e:
        qemu.resolve_accel("kvm")
    assert "does not exist" in str(e.value)
    (sysmod / "kvm_pvm").rmdir()
    (sysmod / "kvm_intel").mkdir()
    monkeypatch.setattr(envdetect, "DEV_KVM", dev)
    assert qemu.resolve_accel("auto") == ("kvm", "kvm")


# ---------------------------------------------------------------------------------------
# the tool's children die with it (SIGTERM, SIGHUP, and SIGINT as before)

def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 30) -> int:
    end = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, seconds: float = 10) -> bool:
    """True once ``pid`` no longer exists (or is a zombie nobody waits for)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _kill_if_alive(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 128 + signal.SIGTERM),
                                      (signal.SIGHUP, 128 + signal.SIGHUP),
                                      (signal.SIGINT, 130)])
def test_signal_kills_qemu(repo, tmp_path, sig, code):
    """`ksync boot --mode idle` with a QEMU that would run for an hour: a signal to the
    tool ends the tool with a non-zero status and QEMU with it."""
    pid_file = tmp_path / "qemu.pid"
    fake = make_fake(tmp_path, lines=["idle: halted"], sleep=3600, pid_file=str(pid_file))
    # SIGINT at its default in the tool: started from a non-interactive shell's background
    # job (`make test &`), pytest and every child inherit SIGINT ignored (POSIX), Python
    # then installs no KeyboardInterrupt handler, and the tool rightly ignores the signal
    tool = subprocess.Popen([sys.executable, "-m", "ksync", "boot", "--repo", str(repo),
                             "--no-build", "--qemu", str(fake), "--mode", "idle",
                             "--timeout", "3600"], env=tool_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    qemu_pid = _wait_for(pid_file, tool)
    try:
        tool.send_signal(sig)
        out, err = tool.communicate(timeout=30)
        assert tool.returncode == code, err
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1].startswith("ksync: ")
        assert _gone(qemu_pid), f"QEMU (pid {qemu_pid}) outlived the tool"
    finally:
        _kill_if_alive(qemu_pid)
        if tool.poll() is None:
            tool.kill()
            tool.wait()


SLOW_MAKEFILE = """kernel:
\t@sleep 3600 & echo $$! > {pid}.tmp && mv {pid}.tmp {pid}; wait
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_stops_the_build(tmp_path, sig):
    """A signal during `make` stops make and what it started (here a long `sleep`)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    pid_file = tmp_path / "recipe.pid"
    (repo / "Makefile").write_text(SLOW_MAKEFILE.format(pid=pid_file))
    fake = make_fake(tmp_path, exit=33)
    tool = subprocess.Popen([sys.executable, "-m", "ksync", "test", "--repo", str(repo),
                             "--qemu", str(fake)], env=tool_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    child = _wait_for(pid_file, tool)
    try:
        tool.send_signal(sig)
        out, err = tool.communicate(timeout=30)
        assert tool.returncode == 128 + sig, err
        assert "Traceback" not in err
        assert _gone(child), f"make's child (pid {child}) outlived the tool"
    finally:
        _kill_if_alive(child)
        if tool.poll() is None:
            tool.kill()
            tool.wait()


# ---------------------------------------------------------------------------------------
# a filter that matches nothing is an error that lists what exists

def _unmatched(what, names, set_=None, filt="zzz_*"):
    return "KSYNC " + json.dumps({"kind": "filter_unmatched", "what": what, "set": set_,
                                  "filter": filt, "names": names})


@pytest.mark.parametrize("command", [["test"], ["boot"], ["boot", "--mode", "test"]])
def test_filter_matching_nothing_lists_the_tests(repo, tmp_path, command):
    lines = ["ktap: KTAP version 1", BOOT, _unmatched("tests", ["gamma", "alpha", "beta"]),
             "ktap: # filter=zzz_* matches none of the 3 tests"]
    fake = make_fake(tmp_path, lines=lines, exit=35)
    p = run_cli(*command, "--repo", str(repo), "--no-build", "--qemu", str(fake),
                "--filter", "zzz_*")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "PASS" not in p.stdout + p.stderr
    err = p.stderr.strip().splitlines()
    assert err[-1] == ("ksync: error: --filter zzz_* matches none of the 3 tests: "
                       "alpha, beta, gamma")
    assert [l for l in err if l.startswith("ksync")] == [err[-1]]   # no summary line too


def test_filter_matching_no_experiment_names_the_set(repo, tmp_path):
    lines = [BOOT, _unmatched("experiments", ["prims", "irq_load"], "default"),
             'KSYNC {"kind":"done","mode":"bench"}']
    fake = make_fake(tmp_path, lines=lines, exit=35)
    p = run_cli("boot", "--repo", str(repo), "--no-build", "--qemu", str(fake), "--mode",
                "bench", "--filter", "zzz_*")
    assert p.returncode == 2, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        "ksync: error: --filter zzz_* matches none of the 2 experiments of set default: "
        "irq_load, prims")


def test_filter_empty_plan_is_not_a_pass(repo, tmp_path):
    """A kernel that does not report the unmatched filter runs an empty plan: still an
    error, not `PASS 0/0`."""
    fake = make_fake(tmp_path, lines=["ktap: KTAP version 1", "ktap: 1..0"], exit=33)
    p = ksync_test(repo, fake, "--filter", "zzz_*")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "PASS" not in p.stdout
    lines = p.stderr.strip().splitlines()
    assert lines[-1].startswith("ksync: error: --filter zzz_* matches no test")


def test_empty_plan_without_filter_still_passes(repo, tmp_path):
    fake = make_fake(tmp_path, lines=["ktap: KTAP version 1", "ktap: 1..0"], exit=33)
    p = ksync_test(repo, fake)
    assert p.returncode == 0, p.stdout + p.stderr


def test_filter_problem():
    kt0 = ktap.parse(["ktap: 1..0"])
    assert qemu.filter_problem("test", None, kt0) is None
    assert qemu.filter_problem("idle", "x", kt0) is None
    assert qemu.filter_problem("test", "x*", ktap.parse(["ktap: 1..1", "ktap: ok 1 x1"])) \
        is None
    assert qemu.filter_problem("bench", "x*", kt0).startswith("--filter x* matches no")
    obj = {"kind": "filter_unmatched", "what": "tests", "set": None, "filter": "q",
           "names": ["b", "a"]}
    assert qemu.filter_problem("test", "q", ktap.parse([]), obj) == \
        "--filter q matches none of the 2 tests: a, b"


needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                                reason="qemu-system-x86_64 not installed")


@needs_qemu
@pytest.mark.parametrize("mode,what", [("test", "tests"), ("bench", "experiments")])
def test_real_kernel_reports_unmatched_filter(mode, what):
    """The real kernel (built by the tool) lists its tests / experiments."""
    from conftest import run_ksync
    code, out = run_ksync("boot", "--mode", mode, "--filter", "zzz_*", "--timeout", "120")
    assert code == 2, out
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"ksync: error: --filter zzz_* matches none of the "), last
    names = last.split(": ", 3)[-1].split(", ")
    assert f" {what}" in last and len(names) >= 2
    assert names == sorted(names)
    assert ("prims" in names) if mode == "bench" else ("tsc_frequency_found" in names)
