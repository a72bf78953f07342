"""Unmodified static Linux x86-64 binaries in ring 3 on ksync.

The differential suite: every program of tests/user/ (built with musl: static-pie, and
one plain static ET_EXEC) runs on the host Linux and on ksync (one QEMU boot per
configuration runs them all, kernel/proc/urun.c, results as KTAP: 1, 2 and 4 CPUs and the
locked scheduler every case; the other interrupt-masking schemes the short set, each
program's first case); stdout+stderr and the wait status must be identical. Nothing is
normalised: the programs print relations (pid != ppid), never pids, times or addresses.

Also: the cpio writer, the kernel's refusal messages for bad ELF files, the ENOSYS
counts, the crash line, and that every user page is unmapped when the programs are done.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ksync import cpio, qemu, userprogs
from ksync.util import write_atomic

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "user"
OUT = ROOT / "build" / "user"

# (argv) - argv[0] is the program's path in the initramfs and on the host (relative:
# both run from the directory that holds t/)
CASES = [
    ["t/hello"], ["t/args"], ["t/args", "a", "bb", "ccc"], ["t/args", "x"], ["t/auxv"],
    ["t/brk"], ["t/mmap"], ["t/mprotect"], ["t/fork_wait"], ["t/fork_many"], ["t/wnohang"],
    ["t/segv"], ["t/efault"], ["t/enosys"], ["t/tls"], ["t/getrandom"], ["t/clock"],
    ["t/uname"], ["t/ids"], ["t/execve"], ["t/vfork"], ["t/dup"], ["t/files"],
    ["t/signals"], ["t/writev"], ["t/fpu"], ["t/bigmem"], ["t/exitcodes"], ["t/nested"],
    ["t/forkstorm"],
]
# the file calls through kernel/fs (each program takes the case to run as argv[1])
FS_CASES = {
    "fs_files": ["create", "rw", "lseek", "pread", "trunc", "append", "sendfile", "stat",
                 "sendfile_kill"],
    "fs_dirs": ["mkdir", "getdents", "rmdir", "unlink", "rename", "link", "symlink", "at"],
    "fs_errors": ["ebadf", "enoent", "eexist", "enotdir", "eisdir", "enotempty", "efault",
                  "toolong"],
    "fs_dup": ["dup", "fcntl"],
    "fs_pipe": ["fork", "sigpipe", "epipe", "nonblock", "poll", "kill"],
}
CASES += [[f"t/{prog}", case] for prog, cases in FS_CASES.items() for case in cases]
CASES += [["t/fs_exec"], ["t/fs_cwd"]]
# an ordinary static ET_EXEC at 0x400000 (plain musl-gcc -static): run directly and by execve
CASES += [["t/hello-low"], ["t/exec_low"]]
# the calls busybox added to the list (prctl's name, time)
CASES += [["t/prctl"]]
# a program's data pages are its own copies (exec maps the file's pages copy-on-write)
CASES += [["t/exec_data"]]
# signals (kernel/proc/signal.c): handlers, frames, sigreturn, interrupted calls, SIGCHLD,
# fault signals, process groups, bad rt_sigreturn frames
SIG_CASES = {
    "sig_handler": ["basic", "mask", "nodefer", "resethand", "pending", "ignore", "norestorer",
                    "badhandler", "default"],
    "sig_regs": ["ud2", "syscall", "modify", "xmm"],
    "sig_wait": ["eintr", "restart", "wait", "nanosleep", "pause", "sigsuspend", "timedwait"],
    "sig_chld": ["exit", "killed", "ign", "nocldwait"],
    "sig_fault": ["null", "accerr", "fixup", "fpe", "ill", "trap", "gp", "blocked", "badstack",
                  "altstack"],
    "sig_pgrp": ["setpgid", "setsid", "killpg", "kill0", "waitpg"],
    "sig_sigreturn": ["bad", "random"],
    "sig_stop": ["stop", "tstp", "nocldstop", "kill"],
    "sig_storm": ["200"],
}
CASES += [[f"t/{prog}", case] for prog, cases in SIG_CASES.items() for case in cases]
# the ABI's corners (issue 24's list: success and error paths the programs above leave out)
ABI_CASES = {
    "abi_io": ["readv", "pio", "lseek", "append", "trunc", "excl", "dev"],
    "abi_fd": ["setfl", "dupfd", "cloexec", "notty", "fionread"],
    "abi_pipe": ["pipe2", "pollhup", "pipebuf", "eagain", "eintr", "sigpipe_blocked", "eof"],
    "abi_proc": ["echild", "clocks", "nanosleep", "yield", "prlimit", "getrandom", "sigexec",
                 "getcpu"],
    "abi_path": ["fstatat", "getdents", "eloop", "dirs_at", "rename", "umask", "cwd",
                 "readlink", "link"],
    "abi_mm": ["mmap_err", "munmap_part", "mprotect_segv", "brk", "steps"],
}
CASES += [[f"t/{prog}", case] for prog, cases in ABI_CASES.items() for case in cases]
# user threads and futexes (issue 25: clone with CLONE_THREAD, kernel/proc/futex.c)
THR_CASES = {
    "thr_pthread": ["create", "detach", "mutex", "condvar", "barrier", "rwlock", "tls", "sem",
                    "many", "mmap", "forkcow", "mainexit"],
    "thr_futex": ["errors", "wake", "bitset", "requeue", "wakeop", "eintr", "cleartid"],
    "thr_signal": ["tgkill", "procsig", "mask", "sigwait", "fatal", "stop"],
    "thr_exit": ["group", "kill", "exec", "robust", "proc"],
    # 8 threads x 2000 mutex increments and 4 pairs x 2000 condvar hand-offs (make stress:
    # 100000, test_thread_stress)
    "thr_stress": ["2000"],
}
# the same thread programs through glibc's pthreads (tools/ksync/userprogs.py GLIBC_PROGS:
# gcc -static -pthread; clone3 answers ENOSYS and glibc falls back to clone)
THR_CASES.update({f"{p}-glibc": THR_CASES[p] for p in userprogs.GLIBC_PROGS})
CASES += [[f"t/{prog}", case] for prog, cases in THR_CASES.items() for case in cases]
# ksync-only cases and what they must print (the host's answer differs by design)
KSYNC_ONLY = {
    "t/exec_high": (b"execve t/bad-highva: errno 8\n", 0),
    "t/sig_core": (b"limit 0 sig 3: signaled=1 sig=3 core=0\n"
                   b"limit 1048576 sig 3: signaled=1 sig=3 core=1\n"
                   b"limit 1048576 sig 15: signaled=1 sig=15 core=0\n", 0),
}
# the short set every other interrupt-masking scheme runs: each program's first case, and
# the ksync-only ones (t/short in the initramfs, and on the host so /t lists alike)
SHORT = [a for i, a in enumerate(CASES) if all(b[0] != a[0] for b in CASES[:i])]
SHORT_LISTING = "".join(" ".join(a) + "\n" for a in SHORT + [[k] for k in KSYNC_ONLY])
# the thread stress alone (musl and glibc builds), for the (CPUs, scheduler) pairs the
# full configurations below leave out: with them, 1, 2 and 4 CPUs under both schedulers
STRESS = [a for a in CASES if a[0].startswith("t/thr_stress")]
STRESS_LISTING = "".join(" ".join(a) + "\n" for a in STRESS)
EXTRA = {"data.txt": (SRC / "data.txt").read_bytes(), "short": SHORT_LISTING.encode(),
         "stress": STRESS_LISTING.encode()}
# (smp, scheduler or lock configuration): 1 and 2 CPUs under the default (lock-free)
# scheduler, 4 under the fiasco configuration (the lock-free scheduler with the file layer's
# monitors on helping locks: docs/locks.md), 2 under the locked scheduler (Sprite's master
# lock); each is one boot running every program
CONFIGS = [(1, None), (2, None), (4, "locks=fiasco"), (2, "locked")]
# and -smp 2 under every other interrupt-masking scheme (the build's kernel-<scheme>;
# tests/test_schemes.py builds them too), the short set
from ksync import schemes as _schemes
SCHEME_CONFIGS = [(2, None, s) for s in _schemes.SCHEMES if s != _schemes.DEFAULT_SCHEME]
# and the thread stress (STRESS) under the locked scheduler at 1 and 4 CPUs
STRESS_CONFIGS = [(1, "locked"), (4, "locked")]


@pytest.fixture(scope="module")
def progs():
    if not userprogs.have_musl():
        pytest.fail("musl (Debian musl-tools) is missing: run scripts/deps.sh")
    return userprogs.build(SRC, OUT)


@pytest.fixture(scope="module")
def host_results(progs, tmp_path_factory):
    root = tmp_path_factory.mktemp("userroot")
    userprogs.host_tree(progs, EXTRA, root)
    res = {}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for argv in CASES:
            res[" ".join(argv)] = userprogs.run_on_host(Path(argv[0]), argv)  # relative: AT_EXECFN
    finally:
        os.chdir(cwd)
    return res


@pytest.fixture(scope="module")
def initrd(progs):
    listing = "".join(" ".join(a) + "\n" for a in CASES + [[k] for k in KSYNC_ONLY])
    path = OUT / "initrd.cpio"
    write_atomic(path, userprogs.initramfs(progs, EXTRA, listing))
    return path


_boots: dict = {}


@pytest.fixture(scope="module")
def boot_user(initrd):
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr

    def boot(smp: int, sched: str | None = None, scheme: str | None = None,
             listing: str | None = None):
        key = (smp, sched, scheme, listing)
        if key not in _boots:
            if scheme:
                r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", f"SCHEME={scheme}",
                                    "kernel"], cwd=ROOT, capture_output=True, text=True, timeout=900)
                assert r.returncode == 0, r.stdout + r.stderr
            words = [f"user=@/t/{listing or ('short' if scheme else 'list')}",
                     "epoch=1700000000"] + (_sched_words(sched) if sched else [])
            cfg = qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=240, scheme=scheme,
                                  initrd=initrd, append=words)
            _boots[key] = qemu.boot(cfg)
        return _boots[key]
    return boot


def _sched_words(sched: str) -> list[str]:
    """A configuration's scheduler word: sched=NAME, or a whole locks=CONFIG."""
    return [sched] if sched.startswith("locks=") else [f"sched={sched}"]


def _show(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _cfg_id(c):
    return f"smp{c[0]}" + (f"-{c[1]}" if c[1] else "") + (f"-{c[2]}" if len(c) > 2 else "")


@pytest.mark.parametrize("cfg", CONFIGS + SCHEME_CONFIGS, ids=_cfg_id)
def test_user_programs_match_linux(boot_user, host_results, cfg):
    res = boot_user(*cfg)
    if cfg[1]:
        assert _sched_words(cfg[1])[0] in (res.cmdline or ""), res.cmdline
    assert res.passed, qemu.failure_report(res)
    cases = {" ".join(c.argv): c for c in userprogs.parse_user_ktap(res.lines)}
    ran = SHORT if len(cfg) > 2 else CASES
    assert len(cases) == len(ran) + len(KSYNC_ONLY), sorted(cases)
    bad = []
    for argv in ran:
        key = " ".join(argv)
        out, st = host_results[key]
        c = cases[key]
        if not c.ok or c.out != out or c.status != st:
            bad.append(f"--- {key}: host status 0x{st:x}, ksync "
                       f"{'0x%x' % c.status if c.status is not None else c.note}\n"
                       f"host:\n{_show(out)}ksync:\n{_show(c.out)}")
    for key, (want, st) in KSYNC_ONLY.items():
        c = cases[key]
        if c.out != want or c.status != st:
            bad.append(f"--- {key} (ksync only): want {want!r} 0x{st:x}, got {c.out!r} {c.status}")
    assert not bad, f"{len(bad)} of {len(cases)} differ:\n" + "\n".join(bad)
    # every user page unmapped at the end (here, not in a test of its own: that one could
    # land on the other xdist worker and boot the configuration a second time)
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    assert pg and pg[0]["user_pages_live"] == 0, pg


@pytest.mark.parametrize("cfg", STRESS_CONFIGS, ids=_cfg_id)
def test_thread_stress_matches_linux(boot_user, host_results, cfg):
    """8 threads x 2000 mutex increments and 4 condition-variable pairs x 2000 hand-offs,
    musl and glibc builds, counted exactly and printed as the host prints them, at the
    configurations test_user_programs_match_linux leaves out (make stress: 10^5 at all
    six)."""
    res = boot_user(*cfg, listing="stress")
    assert f"sched={cfg[1]}" in (res.cmdline or ""), res.cmdline
    assert res.passed, qemu.failure_report(res)
    cases = {" ".join(c.argv): c for c in userprogs.parse_user_ktap(res.lines)}
    assert sorted(cases) == sorted(" ".join(a) for a in STRESS), sorted(cases)
    for argv in STRESS:
        key = " ".join(argv)
        c = cases[key]
        assert c.ok and (c.out, c.status) == host_results[key], (key, c.out, c.status,
                                                                host_results[key])
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    assert pg and pg[0]["user_pages_live"] == 0, pg


def test_bad_elf_is_refused_with_the_reason(boot_user):
    res = boot_user(1)
    text = "\n".join(res.lines)
    assert re.search(r"exec t/bad-machine: refused: wrong machine, not x86-64 \(e_machine\) \(0x3\)", text), text[-3000:]
    assert re.search(r"exec t/bad-truncated: refused: truncated", text), text[-3000:]
    assert re.search(r"exec t/bad-highva: refused: segment outside user space "
                     r"\[0x10000, 0x800000000000\) \(p_vaddr\) \(0xffff800000400000\)", text), text[-3000:]


def test_crash_line_and_signal(boot_user):
    """A crashing program: one line like Linux's (pid, fault, address, ip) on the console;
    its parent's wait4 saw WIFSIGNALED (the differential test compares that)."""
    text = "\n".join(boot_user(1).lines)
    assert re.search(r"ksync: pid \d+ \(segv\): segfault at 0x0 ip 0x[0-9a-f]+", text), text[-3000:]
    assert re.search(r"ksync: pid \d+ \(segv\): signal 4 at ip", text), text[-3000:]


@pytest.mark.parametrize("kind", ["magic", "truncated"])
def test_corrupt_initramfs_is_refused_with_the_reason(boot_user, progs, tmp_path, kind):
    """A corrupt archive: kernel/fs's unpacker says what is wrong and where, the program is
    'not ok' with EINVAL, no panic."""
    boot_user(1)        # (the fixture built the kernel)
    good = userprogs.initramfs({"hello": progs["hello"]}, {}, "t/hello\n")
    data = b"070799" + good[6:] if kind == "magic" else good[:len(good) // 2]
    rd = tmp_path / f"{kind}.cpio"
    rd.write_bytes(data)
    res = qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=1, timeout=120, initrd=rd,
                                    append=["user=/t/hello"]))
    text = "\n".join(res.lines)
    assert not res.passed and res.panic is None, qemu.failure_report(res)
    want = (r"bad magic '070799' at offset 0 \(want 070701\)" if kind == "magic"
            else r"data of 't/hello' \(\d+ bytes at offset \d+\) is truncated")
    assert re.search(r"ksync: initramfs: refused: " + want, text), text[-2000:]
    assert re.search(r"ktap: not ok 1 /t/hello # could not start: errno 22", text), text[-2000:]


def test_enosys_is_counted_by_name(boot_user):
    objs = boot_user(1).objects
    en = [o for o in objs if o.get("kind") == "user_enosys"]
    assert en, objs
    assert en[0]["counts"].get("nr_511", 0) >= 1, en
    assert en[0]["other"] >= 2, en          # 1000 and -1


def test_cpio_newc_round_trip():
    es = [cpio.Entry("a/b/c", stat.S_IFREG | 0o644, b"xyz"), cpio.Entry("d", stat.S_IFREG | 0o755, b"")]
    data = cpio.write_newc(es)
    back = cpio.read_newc(data)
    assert [(e.name, e.mode, e.data) for e in back] == [
        ("a", stat.S_IFDIR | 0o755, b""), ("a/b", stat.S_IFDIR | 0o755, b""),
        ("a/b/c", stat.S_IFREG | 0o644, b"xyz"), ("d", stat.S_IFREG | 0o755, b"")]
    assert data[:6] == b"070701" and len(data) % 4 == 0
    with pytest.raises(ValueError, match="bad magic"):
        cpio.read_newc(b"x" * 200)
    with pytest.raises(ValueError, match="past the end"):
        cpio.read_newc(data[:len(data) - 124 - 112 - 2])   # inside a/b/c's data


@pytest.mark.skipif(shutil.which("cpio") is None, reason="no cpio(1) to cross-check with")
def test_cpio_newc_readable_by_cpio(tmp_path):
    data = cpio.write_newc([cpio.Entry("x/y", stat.S_IFREG | 0o600, b"hi\n")])
    r = subprocess.run(["cpio", "-i", "-d", "--quiet"], input=data, cwd=tmp_path, capture_output=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "x" / "y").read_bytes() == b"hi\n"


def _long_run(progs, argv: list[str], tmp_path: Path) -> tuple[tuple[bytes, int], Path]:
    """One long command for make stress: its host twin's (output, status), run in a tree
    like the guest's, and an initramfs whose list holds only that command."""
    root = tmp_path / "root"
    userprogs.host_tree(progs, EXTRA, root)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        want = userprogs.run_on_host(Path(argv[0]), argv, timeout=600)
    finally:
        os.chdir(cwd)
    rd = tmp_path / "long.cpio"
    rd.write_bytes(userprogs.initramfs(progs, EXTRA, " ".join(argv) + "\n"))
    return want, rd


def test_sig_storm_stress(progs, request, tmp_path):
    """make stress: sig_storm at 20000 signals per child (60000 kills racing a restarted
    pipe read and the handler's frames) at -smp 4 and -smp 2 under the locked scheduler;
    the output equal to the host's, no page left mapped."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("long size: make stress (--run-stress)")
    want, rd = _long_run(progs, ["t/sig_storm", "20000"], tmp_path)
    for smp, sched in [(4, None), (2, "locked")]:
        words = ["user=@/t/list"] + ([f"sched={sched}"] if sched else [])
        res = qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=1200,
                                        initrd=rd, append=words))
        assert res.passed, qemu.failure_report(res)
        (c,) = userprogs.parse_user_ktap(res.lines)
        assert (c.out, c.status) == want, (smp, sched, c.out, c.status, want)
        pg = [o for o in res.objects if o.get("kind") == "user_pages"]
        assert pg and pg[0]["user_pages_live"] == 0, pg


@pytest.mark.parametrize("prog", ["thr_stress", "thr_stress-glibc"])
def test_thread_stress(progs, request, tmp_path, prog):
    """make stress: thr_stress at 100000 (8 threads x 10^5 mutex lock/unlock around one
    counter, 4 pairs x 10^5 condition-variable hand-offs each way, counted exactly) at 1,
    2 and 4 CPUs under both schedulers, musl and glibc builds; the output equal to the
    host's."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("long size: make stress (--run-stress)")
    want, rd = _long_run(progs, [f"t/{prog}", "100000"], tmp_path)
    for smp, sched in [(s, k) for k in (None, "locked") for s in (1, 2, 4)]:
        words = ["user=@/t/list"] + ([f"sched={sched}"] if sched else [])
        res = qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=1800,
                                        initrd=rd, append=words))
        assert res.passed, qemu.failure_report(res)
        (c,) = userprogs.parse_user_ktap(res.lines)
        assert (c.out, c.status) == want, (smp, sched, c.out, c.status, want)
        pg = [o for o in res.objects if o.get("kind") == "user_pages"]
        assert pg and pg[0]["user_pages_live"] == 0, pg


def test_user_stress(progs, initrd, request, tmp_path):
    """make stress: forkstorm at a long size (200 rounds: 1200 children, 4800 grandchildren,
    1200 execs) at -smp 4 - every status once, every copy intact, no page left mapped;
    the output equal to the host's."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("long size: make stress (--run-stress)")
    want, rd = _long_run(progs, ["t/forkstorm", "200"], tmp_path)
    cfg = qemu.BootConfig(repo=ROOT, mode="user", smp=4, timeout=1200, initrd=rd,
                          append=["user=@/t/list"])
    res = qemu.boot(cfg)
    assert res.passed, qemu.failure_report(res)
    (c,) = userprogs.parse_user_ktap(res.lines)
    assert (c.out, c.status) == want, (c.out[-500:], c.status, want[0][-500:], want[1])
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    assert pg and pg[0]["user_pages_live"] == 0, pg
