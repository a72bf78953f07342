"""Bad input from user space: the kernel must never panic (issue 24).

One boot at -smp 2 with 128M of guest memory (kernel/proc/urun.c) runs, one after another:

- ``t/fuzz SEED 4 2000``: four processes making 2000 random system calls each (random
  numbers, arguments from a pool of bad values: kernel and non-canonical addresses,
  unmapped, misaligned and read-only pointers, huge lengths, closed descriptors; the
  program's top comment says what it draws and what it leaves out). A child killed by a
  signal is allowed (reported); a panic or a hang (the boot's timeout) is the failure.
- ``t/nproc``: a fork bomb stops at RLIMIT_NPROC with EAGAIN (fork, vfork, clone), the
  children are killed and reaped; a lower limit set by setrlimit gives exactly 4
  children. ksync only: Linux does not apply RLIMIT_NPROC to root, and every ksync
  process is uid 0.
- ``t/oom``: a child touching memory until no page is left is killed with SIGKILL (the
  console's "Out of memory: Killed process N (oom)"), its parent sees it and goes on.
- ``t/oom kernel``: memory filled through the kernel (read into a huge mapping), then
  fork, pipe, a file write, mmap and execve with no page left: errors, no panic; all
  work again after munmap.
- ``t/hello``: the system goes on (the same output and status as every other boot).

Then: no panic, every user page unmapped, and every physical page back in the free pool
except what the kernel keeps on purpose (urun.c's pmm_pages object: the heap's size-class
pages, the KVA region's page tables, ramfs file data), with no heap block, inode or
thread stack left over. ``make stress`` runs a longer fuzz at -smp 4.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from ksync import qemu, userprogs

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tests" / "user"
# its own build directory and only the programs it runs (test_user.py builds every
# program into build/user, maybe at the same time on another xdist worker)
OUT = ROOT / "build" / "user-bad"
PROGS = ["fuzz.c", "nproc.c", "oom.c", "hello.c", "ut.h"]


def _progs():
    src = OUT / "src"
    src.mkdir(parents=True, exist_ok=True)
    for name in PROGS:
        link = src / name
        if not link.is_symlink():
            link.symlink_to(SRC / name)
    return userprogs.build(src, OUT)

SEED = 20261127
LIST = [f"t/fuzz {SEED} 4 2000", "t/nproc", "t/oom", "t/oom kernel", "t/hello"]
# the boot's guest memory: less than the suite's 512M, so that filling it is quick (the
# kernel-side fill copies every page twice, and TCG's rep movsb is slow)
MEMORY = "128M"
NPROC_OUT = (
    "default limit 224/224, below the table (256): 1\n"
    "bomb: stopped with errno 11 (EAGAIN 11), children > 0: 1, children < limit: 1\n"
    "vfork at the limit: -1 errno 11\n"
    "clone at the limit: -11\n"
    "killed and reaped all: 1\n"
    "setrlimit 5: 0\n"
    "prlimit64 reads back: 1\n"
    "soft above hard: -1 errno 22\n"
    "limit 5: 4 children, then errno 11\n"
    "killed and reaped all: 1\n"
    "fork after the kills: exit 7\n")


def _boot(progs, tmp_path: Path, listing: list[str], smp: int, timeout: int, memory: str = "512M"):
    rd = tmp_path / "bad.cpio"
    rd.write_bytes(userprogs.initramfs(progs, {}, "".join(c + "\n" for c in listing)))
    return qemu.boot(qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=timeout,
                                     initrd=rd, append=["user=@/t/list"], memory=memory))


@pytest.fixture(scope="module")
def bad_boot(tmp_path_factory):
    if not userprogs.have_musl():
        pytest.fail("musl (Debian musl-tools) is missing: run scripts/deps.sh")
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    progs = _progs()
    res = _boot(progs, tmp_path_factory.mktemp("bad"), LIST, 2, 240, MEMORY)
    return res, {" ".join(c.argv): c for c in userprogs.parse_user_ktap(res.lines)}


def _fuzz_ok(c, children: int) -> list[str]:
    """What is wrong with a fuzz run's report (empty: nothing)."""
    out = c.out.decode("utf-8", "replace")
    bad = []
    if not c.ok or c.status != 0:
        bad.append(f"status {c.status} {c.note}")
    for k in range(children):
        if not re.search(rf"^child {k}: (exit 0|killed by signal \d+)$", out, re.M):
            bad.append(f"child {k} did not end cleanly")
    if "fuzz: done\n" not in out:
        bad.append("no 'fuzz: done'")
    return bad + ([out] if bad else [])


def _pages_ok(res) -> list[str]:
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    pm = [o for o in res.objects if o.get("kind") == "pmm_pages"]
    bad = []
    if not pg or pg[0]["user_pages_live"] != 0:
        bad.append(f"user pages still mapped: {pg}")
    if not pm:
        return bad + ["no pmm_pages object"]
    p = pm[0]
    # every page back, less what the kernel keeps on purpose (urun.c report_account)
    if p["unexplained"] != 0:
        bad.append(f"pages not accounted for: {p}")
    # and nothing of the programs' left: heap blocks, files, thread stacks
    for key in ("heap_blocks_live", "heap_big_pages", "ramfs_pages", "ramfs_inodes", "stacks"):
        if p[key][0] != p[key][1]:
            bad.append(f"{key} before/after differ: {p}")
    return bad


def test_bad_input_boot_goes_on(bad_boot):
    res, cases = bad_boot
    assert res.passed and res.panic is None, qemu.failure_report(res)
    assert list(cases) == LIST, sorted(cases)
    bad = _fuzz_ok(cases[LIST[0]], 4)
    assert not bad, "\n".join(bad)
    hello = cases["t/hello"]
    assert (hello.out, hello.status) == (b"hello from user space\n", 0x300), hello


def test_fork_bomb_stops_at_rlimit_nproc(bad_boot):
    _, cases = bad_boot
    c = cases["t/nproc"]
    assert (c.out.decode(), c.status) == (NPROC_OUT, 0), (c.out, c.status)


def test_memory_exhaustion_kills_the_faulting_process(bad_boot):
    _, cases = bad_boot
    c = cases["t/oom"]
    out = c.out.decode()
    assert c.status == 0, (out, c.status)
    assert out.startswith("child: signaled 1 sig 9\nparent goes on: 16 MiB touched"), out
    assert any(re.fullmatch(r"ksync: Out of memory: Killed process \d+ \(oom\)", k.strip())
               for k in c.kernel_lines), c.kernel_lines


def test_kernel_allocations_fail_cleanly_when_memory_is_full(bad_boot):
    """t/oom kernel: memory filled through the kernel's user copies (read into a huge
    mapping: -EFAULT or -ENOMEM, no kill), then fork, pipe, a file write, mmap and execve
    with no page left - each an errno or success, never a panic - and all work again
    once the mapping is gone."""
    res, cases = bad_boot
    c = cases["t/oom kernel"]
    out = c.out.decode()
    assert c.status == 0 and out.endswith("child: exited 1 status 0\n"), (out, c.status)
    assert re.search(r"^memory full: read stopped with errno (12|14) after more than 64 MiB: 1$",
                     out, re.M), out
    for what in ("fork", "pipe", "file write", "mmap", "execve"):
        assert re.search(rf"^{what}: while full (worked|failed), after munmap worked$", out,
                         re.M), out


def test_every_page_returns_to_the_free_pool(bad_boot):
    res, _ = bad_boot
    bad = _pages_ok(res)
    assert not bad, "\n".join(bad)


def test_fuzz_stress(request, tmp_path):
    """make stress: 8 processes x 30000 random calls at -smp 4, three seeds (one boot
    each); the same checks."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("long size: make stress (--run-stress)")
    progs = _progs()
    for seed in (1, 2, 3):
        listing = [f"t/fuzz {seed} 8 30000", "t/hello"]
        res = _boot(progs, tmp_path, listing, 4, 1200)
        assert res.passed and res.panic is None, qemu.failure_report(res)
        cases = {" ".join(c.argv): c for c in userprogs.parse_user_ktap(res.lines)}
        bad = _fuzz_ok(cases[listing[0]], 8) + _pages_ok(res)
        assert not bad, f"seed {seed}:\n" + "\n".join(bad)
