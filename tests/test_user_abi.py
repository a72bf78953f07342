"""kernel/syscall/linux_abi.h against the host's own headers (issue 24): the host is
Linux, so every LX_* number, errno, flag and structure layout must equal the host's.
A generated C file _Static_asserts each value (test by difference); a name the host's
headers do not have under the expected name is listed with the reason."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ABI = ROOT / "kernel" / "syscall" / "linux_abi.h"

HEADERS = """
#define _GNU_SOURCE
#include <stddef.h>
#include <sys/syscall.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <dirent.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <signal.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <asm/prctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <elf.h>
#include <linux/limits.h>
#include <unistd.h>
#include <ucontext.h>
#include <sched.h>
#include <sys/socket.h>
"""

# LX_ name -> the host's name, where it is not the name without LX_
RENAME = {"LX_NR_SYSCALLS": None, "LX_NSIG": None, "LX_MAP_FAILED": None,
          "LX_SIG_DFL": None, "LX_SIG_IGN": None, "LX_ERESTARTSYS": None,
          "LX_SA_RESTORER": None, "LX_O_LARGEFILE": None, "LX_ERESTARTNOINTR": None,
          "LX_ERESTARTNOHAND": None, "LX_ERESTART_RESTARTBLOCK": None, "LX_MINSIGSTKSZ": None,
          "LX_UC_SIGCONTEXT_SS": None, "LX_UC_STRICT_RESTORE_SS": None}
# why those have no host twin: the table size is ksync's; glibc's NSIG is 65 (signals
# 1..64 plus one) where the kernel's _NSIG is 64; MAP_FAILED, SIG_DFL and SIG_IGN are
# pointers in libc; ERESTARTSYS and SA_RESTORER are kernel-internal / asm/signal.h
# names glibc does not export (checked by value below). glibc's O_LARGEFILE is 0 on
# x86-64 (every open is large, __O_LARGEFILE 0 too); the kernel's bit is
# asm-generic/fcntl.h's 00100000, checked by value.
VALUE_ONLY = {"LX_SA_RESTORER": "0x04000000", "LX_ERESTARTSYS": "512", "LX_NSIG": "64",
              "LX_O_LARGEFILE": "00100000", "LX_ERESTARTNOINTR": "513",
              "LX_ERESTARTNOHAND": "514", "LX_ERESTART_RESTARTBLOCK": "516",
              "LX_MINSIGSTKSZ": "2048", "LX_UC_SIGCONTEXT_SS": "2",
              "LX_UC_STRICT_RESTORE_SS": "4"}
# (the restart codes are include/linux/errno.h's kernel-internal values; glibc's
# MINSIGSTKSZ may be a sysconf call under _GNU_SOURCE, the kernel's is 2048; the UC_
# flags are asm/ucontext.h's, which glibc's headers do not include)


def _names() -> list[str]:
    return re.findall(r"^#define (LX_\w+)\s+\S", ABI.read_text(), re.M)


def _host_name(lx: str) -> str | None:
    if lx in RENAME:
        return RENAME[lx]
    return lx[len("LX_"):]


def _source() -> str:
    lines = [HEADERS, '#include "linux_abi.h"']
    for lx in _names():
        if lx == "LX_W_EXITCODE":
            continue
        h = _host_name(lx)
        if h is None:
            if lx in VALUE_ONLY:
                lines.append(f'_Static_assert({lx} == {VALUE_ONLY[lx]}, "{lx}");')
            continue
        lines.append(f"#ifndef {h}\n#error host has no {h} (for {lx})\n#endif")
        lines.append(f'_Static_assert((long long){lx} == (long long){h}, "{lx} != {h}");')
    lines.append('_Static_assert(LX_W_EXITCODE(3, 0) == 0x300, "W_EXITCODE");')
    # structure layouts
    for lx, host, fields in [
        ("lx_timespec", "timespec", ["tv_sec", "tv_nsec"]),
        ("lx_timeval", "timeval", ["tv_sec", "tv_usec"]),
        ("lx_stat", "stat", ["st_dev", "st_ino", "st_nlink", "st_mode", "st_uid", "st_gid",
                             "st_rdev", "st_size", "st_blksize", "st_blocks", "st_atim",
                             "st_mtim", "st_ctim"]),
        ("lx_dirent64", "dirent64", ["d_ino", "d_off", "d_reclen", "d_type", "d_name"]),
        ("lx_iovec", "iovec", ["iov_base", "iov_len"]),
        ("lx_utsname", "utsname", ["sysname", "nodename", "release", "version", "machine",
                                   "domainname"]),
        ("lx_rlimit", "rlimit", ["rlim_cur", "rlim_max"]),
        ("lx_pollfd", "pollfd", ["fd", "events", "revents"]),
        ("lx_winsize", "winsize", ["ws_row", "ws_col", "ws_xpixel", "ws_ypixel"]),
    ]:
        if host != "dirent64":
            lines.append(f'_Static_assert(sizeof(struct {lx}) == sizeof(struct {host}), "size {lx}");')
        for f in fields:
            lines.append(f"_Static_assert(offsetof(struct {lx}, {f}) == offsetof(struct {host}, {f}),"
                         f' "{lx}.{f}");')
    # signals: siginfo_t, stack_t, the signal frame's sigcontext, fxsave image and
    # ucontext (glibc's ucontext_t agrees with the kernel's up to uc_sigmask's start)
    for f, host in [("si_signo", "si_signo"), ("si_errno", "si_errno"), ("si_code", "si_code"),
                    ("u.k.pid", "si_pid"), ("u.k.uid", "si_uid"),
                    ("u.k.status", "si_status"), ("u.k.utime", "si_utime"),
                    ("u.k.stime", "si_stime"), ("u.addr", "si_addr")]:
        lines.append(f'_Static_assert(offsetof(struct lx_siginfo, {f}) == offsetof(siginfo_t, {host}), "siginfo {f}");')
    lines.append('_Static_assert(sizeof(struct lx_siginfo) == sizeof(siginfo_t), "siginfo size");')
    for f in ["ss_sp", "ss_flags", "ss_size"]:
        lines.append(f'_Static_assert(offsetof(struct lx_stack, {f}) == offsetof(stack_t, {f}), "stack_t {f}");')
    lines.append('_Static_assert(sizeof(struct lx_stack) == sizeof(stack_t), "stack_t size");')
    for f in ["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rdi", "rsi", "rbp", "rbx",
              "rdx", "rax", "rcx", "rsp", "rip", "eflags", "cs", "gs", "fs", "err", "trapno",
              "oldmask", "cr2", "fpstate"]:
        lines.append(f'_Static_assert(offsetof(struct lx_sigcontext, {f}) == offsetof(struct sigcontext, {f}), "sigcontext {f}");')
    lines.append('_Static_assert(offsetof(struct lx_sigcontext, ss) == offsetof(struct sigcontext, __pad0), "sigcontext ss");')
    lines.append('_Static_assert(sizeof(struct lx_sigcontext) == sizeof(struct sigcontext), "sigcontext size");')
    for f, host in [("cwd", "cwd"), ("swd", "swd"), ("twd", "ftw"), ("fop", "fop"), ("rip", "rip"),
                    ("rdp", "rdp"), ("mxcsr", "mxcsr"), ("mxcsr_mask", "mxcr_mask"),
                    ("st_space", "_st"), ("xmm_space", "_xmm")]:
        lines.append(f'_Static_assert(offsetof(struct lx_fpstate, {f}) == offsetof(struct _fpstate, {host}), "fpstate {f}");')
    lines.append('_Static_assert(sizeof(struct lx_fpstate) == sizeof(struct _fpstate), "fpstate size");')
    for f in ["uc_flags", "uc_link", "uc_stack", "uc_mcontext", "uc_sigmask"]:
        lines.append(f'_Static_assert(offsetof(struct lx_ucontext, {f}) == offsetof(ucontext_t, {f}), "ucontext {f}");')
    lines.append('_Static_assert(sizeof(struct lx_rt_sigframe) == 440, "rt_sigframe");')
    # the kernel's struct termios (TCGETS) is 36 bytes; glibc's has the speeds after c_cc
    lines.append('_Static_assert(sizeof(struct lx_termios) == 36, "kernel termios");')
    lines.append('_Static_assert(offsetof(struct lx_termios, c_cc) == offsetof(struct termios, c_cc), "c_cc");')
    return "\n".join(lines) + "\n"


def test_linux_abi_matches_the_host(tmp_path):
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    src = tmp_path / "abicheck.c"
    src.write_text(_source())
    r = subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", "-Wall", "-Werror",
                        f"-I{ABI.parent}", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-4000:]


def test_the_check_catches_a_wrong_value(tmp_path):
    """The generated check fails when a value is wrong (a seeded mutant of the header)."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    bad = ABI.read_text().replace("#define LX_EFAULT 14", "#define LX_EFAULT 15")
    assert bad != ABI.read_text()
    (tmp_path / "linux_abi.h").write_text(bad)
    src = tmp_path / "abicheck.c"
    src.write_text(_source())
    r = subprocess.run(["gcc", "-fsyntax-only", "-std=gnu11", f"-I{tmp_path}", str(src)],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "LX_EFAULT" in r.stderr


def test_syscall_names_follow_the_header():
    """kernel/syscall/sysnames.h (the ENOSYS report's names) lists every LX_SYS_*."""
    names = re.findall(r"#define LX_SYS_(\w+) \d+", ABI.read_text())
    table = re.findall(r'\[LX_SYS_(\w+)\] = "(\w+)"',
                       (ROOT / "kernel" / "syscall" / "sysnames.h").read_text())
    assert [a for a, _ in table] == names and all(a == b for a, b in table)
