"""Dynamically linked glibc programs on ksync, unmodified (issue 25, items 3 and 4).

The programs of tests/user/dyn/ are built with plain ``gcc`` (no -static: PT_INTERP
/lib64/ld-linux-x86-64.so.2, libc.so.6 by DT_NEEDED); the initramfs carries them, the
host's loader, the libraries ``ldd`` names and /etc/ld.so.cache (tools/ksync/dynlibs.py),
and Debian's /usr/bin/hackbench (rt-tests). One QEMU boot per configuration runs every
case (kernel/proc/urun.c, KTAP); each differential case must print what the same binary
prints on the host, with the same wait status (test by difference; nothing normalised).

- dyn_hello: the loader, libc, argv and environment;
- dyn_mmap: file-backed mmap (MAP_PRIVATE: data, offsets, MAP_FIXED over mappings,
  mprotect of a mapped range, writes that never reach the file, fork's copy, SIGBUS past
  the file's end, /dev/zero, refusals; MAP_SHARED: writes both ways, a second mapping,
  a fork child's writes, a read-only descriptor's EACCES);
- dyn_sched: sched_setscheduler and its family's results and error paths, what a fork
  child inherits (SCHED_RESET_ON_FORK), affinity, mlockall,
  /dev/cpu_dma_latency (compared with root's host output when the host's needs a
  privilege this run lacks);
- dyn_sock: socketpair(AF_UNIX, SOCK_STREAM): both directions, poll, EOF, EPIPE/SIGPIPE,
  O_NONBLOCK, errors;
- dyn_missing: a missing shared library, refused by the loader with its own message
  (status 127);
- dyn_badinterp: execve of a program whose interpreter is missing or corrupt (ENOENT,
  ELIBBAD; the caller goes on).

And hackbench (process mode, pipes and the default socketpairs) on ksync, checked for its
normal output's structure (its times are not compared).
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from ksync import cpio, dynlibs, qemu, userprogs
from ksync.util import write_atomic

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "user" / "dyn"
OUT = ROOT / "build" / "user-dyn"

CASES = [["t/dyn_hello"], ["t/dyn_hello", "one", "two-words"]]
CASES += [["t/dyn_mmap", c] for c in ["private", "offset", "fixed", "mprotect", "cow",
                                       "sigbus", "shared", "devzero"]]
CASES += [["t/dyn_sched", c] for c in ["policy", "fork", "errors", "attr", "affinity", "mlock",
                                        "dma"]]
# /dev/cpu_dma_latency needs root on the host: without it, ksync's output is compared with
# what root's host prints
DMA_WANT = (b"cpu_dma_latency open 1\nwrite 0 = 4\nclose = 0\n", 0)
CASES += [["t/dyn_sock", c] for c in ["rw", "epipe", "nonblock", "errors"]]
CASES += [["t/dyn_missing"], ["t/dyn_badinterp"]]
# Debian's rt-tests hackbench: process mode over pipes (-p) and over socketpairs (default)
HACKBENCH = [["/usr/bin/hackbench", "-p", "-g", "2", "-l", "20"],
             ["/usr/bin/hackbench", "-g", "1", "-l", "10"]]
CONFIGS = [(1, None), (2, None), (2, "locked")]


def _gcc(args: list[str]) -> None:
    r = subprocess.run(["gcc", "-O1", "-Wall", *args], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"gcc {' '.join(args)}: {r.stderr}")


def build() -> dict[str, Path]:
    """tests/user/dyn/*.c with plain gcc (dynamic glibc); dyn_missing against
    libksmissing.so, which is then left out of every tree."""
    OUT.mkdir(parents=True, exist_ok=True)
    progs = {}
    # one build at a time, and only what changed: make test's two workers both set this
    # module up, and a relink by one while the other packed its initramfs put an empty
    # t/dyn_badinterp in it once ("not an ELF file (no \\x7fELF magic) (0x0)")
    with open(OUT / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lib = OUT / "libksmissing.so"
        if not _fresh(lib, SRC / "libksmissing.c"):
            _gcc(["-shared", "-fPIC", "-o", str(lib), str(SRC / "libksmissing.c")])
        for src in sorted(SRC.glob("dyn_*.c")):
            exe = OUT / src.stem
            extra = [f"-L{OUT}", "-lksmissing"] if src.stem == "dyn_missing" else []
            if not _fresh(exe, src):
                _gcc(["-o", str(exe), str(src), *extra])
            progs[src.stem] = exe
    return progs


def _fresh(out: Path, src: Path) -> bool:
    return out.is_file() and out.stat().st_mtime >= src.stat().st_mtime


@pytest.fixture(scope="module")
def progs():
    if shutil.which("gcc") is None or shutil.which("ldd") is None:
        pytest.fail("gcc and ldd are needed: run scripts/deps.sh")
    if not dynlibs.have_rt_tests():
        pytest.fail("Debian's rt-tests (hackbench, cyclictest) is missing: run scripts/deps.sh")
    return build()


@pytest.fixture(scope="module")
def host_results(progs, tmp_path_factory):
    root = tmp_path_factory.mktemp("dynroot")
    (root / "t").mkdir()
    for name, path in progs.items():
        shutil.copy2(path, root / "t" / name)
    res = {}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for argv in CASES:
            res[" ".join(argv)] = userprogs.run_on_host(Path(argv[0]), argv)
        if not os.access("/dev/cpu_dma_latency", os.W_OK):
            res["t/dyn_sched dma"] = DMA_WANT
    finally:
        os.chdir(cwd)
    return res


@pytest.fixture(scope="module")
def initrd(progs):
    hb = dynlibs.RT_TESTS["hackbench"]
    es = [cpio.Entry("t", stat.S_IFDIR | 0o755)]
    for name, path in sorted(progs.items()):
        es.append(cpio.Entry(f"t/{name}", stat.S_IFREG | 0o755, path.read_bytes()))
    es += dynlibs.entries(list(progs.values()) + [hb])
    es.append(cpio.Entry("usr/bin/hackbench", stat.S_IFREG | 0o755, hb.read_bytes()))
    listing = "".join(" ".join(a) + "\n" for a in CASES + HACKBENCH)
    es.append(cpio.Entry("t/list", stat.S_IFREG | 0o644, listing.encode()))
    path = OUT / "initrd.cpio"
    write_atomic(path, cpio.write_newc(es))
    return path


_boots: dict = {}


@pytest.fixture(scope="module")
def boot(initrd):
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr

    def run(smp: int, sched: str | None = None):
        key = (smp, sched)
        if key not in _boots:
            words = ["user=@/t/list", "epoch=1700000000"] + ([f"sched={sched}"] if sched else [])
            _boots[key] = qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=300,
                                                    initrd=initrd, append=words))
        return _boots[key]
    return run


def _cfg_id(c):
    return f"smp{c[0]}" + (f"-{c[1]}" if c[1] else "")


def _cases(res) -> dict[str, userprogs.UserCase]:
    return {" ".join(c.argv): c for c in userprogs.parse_user_ktap(res.lines)}


@pytest.mark.parametrize("cfg", CONFIGS, ids=_cfg_id)
def test_dynamic_programs_match_linux(boot, host_results, cfg):
    res = boot(*cfg)
    assert res.passed, qemu.failure_report(res)
    cases = _cases(res)
    assert len(cases) == len(CASES) + len(HACKBENCH), sorted(cases)
    bad = []
    for argv in CASES:
        key = " ".join(argv)
        out, st = host_results[key]
        c = cases[key]
        if not c.ok or c.out != out or c.status != st:
            bad.append(f"--- {key}: host status 0x{st:x}, ksync "
                       f"{'0x%x' % c.status if c.status is not None else c.note}\n"
                       f"host:\n{out.decode(errors='replace')}"
                       f"ksync:\n{c.out.decode(errors='replace')}")
    assert not bad, f"{len(bad)} of {len(CASES)} differ:\n" + "\n".join(bad)
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    assert pg and pg[0]["user_pages_live"] == 0, pg
    # the loader, libc and hackbench need no call ksync lacks but rseq (glibc goes on
    # without it)
    en = [o for o in res.objects if o.get("kind") == "user_enosys"]
    assert en and set(en[0]["counts"]) <= {"rseq"} and en[0]["other"] == 0, en


@pytest.mark.parametrize("cfg", CONFIGS, ids=_cfg_id)
def test_hackbench_prints_its_summary(boot, cfg):
    """Debian's unmodified hackbench in process mode: its three lines, status 0 (the time
    is the only number not checked)."""
    cases = _cases(boot(*cfg))
    for argv in HACKBENCH:
        c = cases[" ".join(argv)]
        text = c.out.decode(errors="replace")
        g, l = int(argv[argv.index("-g") + 1]), int(argv[argv.index("-l") + 1])
        want = (rf"Running in process mode with {g} groups using 40 file descriptors each "
                rf"\(== {40 * g} tasks\)\nEach sender will pass {l} messages of 100 bytes\n"
                rf"Time: \d+\.\d+\n")
        assert c.ok and c.status == 0 and re.fullmatch(want, text), (argv, c.status, text)


def test_bad_interpreter_is_refused_with_the_reason(boot):
    text = "\n".join(boot(1).lines)
    assert re.search(r"ksync: exec w_bi2: refused: interpreter w_junkld is not an x86-64 ELF", text), text[-3000:]


def test_initramfs_holds_the_loader_and_libraries(progs):
    es = {e.name: e for e in dynlibs.entries([progs["dyn_hello"], dynlibs.RT_TESTS["hackbench"]])}
    assert stat.S_ISLNK(es["lib64/ld-linux-x86-64.so.2"].mode)
    assert es["lib64/ld-linux-x86-64.so.2"].data == b"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    assert stat.S_ISREG(es["lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"].mode)
    assert "lib/x86_64-linux-gnu/libc.so.6" in es and "etc/ld.so.cache" in es
    assert dynlibs.interp_of(progs["dyn_hello"]) == "/lib64/ld-linux-x86-64.so.2"


def test_ksync_sh_runs_hackbench(boot):
    """The issue's command line: ``./ksync sh -c 'hackbench -p -g 2 -l 20'`` (busybox sh
    finds /bin/hackbench, a link to Debian's /usr/bin/hackbench, in the initramfs
    tools/ksync/dynlibs.py adds) prints hackbench's normal output and exits 0."""
    boot(2)             # (the fixture built the kernel)
    r = subprocess.run([str(ROOT / "ksync"), "sh", "--no-build", "--smp", "2", "-c",
                        "hackbench -p -g 2 -l 20"], cwd=ROOT, capture_output=True, text=True,
                       timeout=600)
    want = (r"Running in process mode with 2 groups using 40 file descriptors each "
            r"\(== 80 tasks\)\nEach sender will pass 20 messages of 100 bytes\nTime: \d+\.\d+\n")
    assert r.returncode == 0 and re.fullmatch(want, r.stdout), (r.returncode, r.stdout, r.stderr[-2000:])


def test_hackbench_long(progs, request, tmp_path):
    """make stress: hackbench at the issue's size (-p -g 4 -l 200: 160 processes over pipes)
    and over socketpairs (-g 4 -l 100) at -smp 4 and -smp 2 under the locked scheduler:
    its summary, no user page left mapped."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("long size: make stress (--run-stress)")
    hb = dynlibs.RT_TESTS["hackbench"]
    runs = [["/usr/bin/hackbench", "-p", "-g", "4", "-l", "200"],
            ["/usr/bin/hackbench", "-g", "4", "-l", "100"]]
    es = dynlibs.entries([hb]) + [
        cpio.Entry("usr/bin/hackbench", stat.S_IFREG | 0o755, hb.read_bytes()),
        cpio.Entry("t/list", stat.S_IFREG | 0o644, "".join(" ".join(a) + "\n" for a in runs).encode())]
    rd = tmp_path / "hb.cpio"
    rd.write_bytes(cpio.write_newc(es))
    for smp, sched in [(4, None), (2, "locked")]:
        words = ["user=@/t/list"] + ([f"sched={sched}"] if sched else [])
        res = qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=1200,
                                        initrd=rd, append=words))
        assert res.passed, qemu.failure_report(res)
        got = userprogs.parse_user_ktap(res.lines)
        assert len(got) == len(runs), got
        for c, argv in zip(got, runs):
            l = int(argv[argv.index("-l") + 1])
            want = (r"Running in process mode with 4 groups using 40 file descriptors each "
                    rf"\(== 160 tasks\)\nEach sender will pass {l} messages of 100 bytes\n"
                    r"Time: \d+\.\d+\n")
            assert c.status == 0 and re.fullmatch(want, c.out.decode()), (smp, sched, argv, c.out)
        pg = [o for o in res.objects if o.get("kind") == "user_pages"]
        assert pg and pg[0]["user_pages_live"] == 0, pg


def test_ksync_sh_runs_cyclictest(boot):
    """Debian's unmodified cyclictest (threads, SCHED_FIFO, mlockall, clock_nanosleep
    TIMER_ABSTIME, /dev/cpu_dma_latency) runs its loops and prints its normal summary
    line: the thread's line with the count of loops asked for (the latencies are
    numbers only: the sleep is still a yield until the deadline, docs/userspace.md)."""
    boot(2)             # (the fixture built the kernel)
    r = subprocess.run([str(ROOT / "ksync"), "sh", "--no-build", "--smp", "2", "-c",
                        "cyclictest -m -p 90 -i 250 -l 1000 -q"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    want = (r"# /dev/cpu_dma_latency set to 0us\n"
            r"T: 0 \(\s*\d+\) P:90 I:250 C:\s+1000 Min:\s+\d+ Act:\s+\d+ Avg:\s+\d+ Max:\s+\d+\n")
    assert r.returncode == 0 and re.fullmatch(want, r.stdout), (r.returncode, r.stdout, r.stderr[-2000:])
