"""The differential user programs (tests/user/*.c): build them with musl for
the host and for ksync (the same binary runs on both), build the initramfs that carries
them, run them on the host, and decode the kernel runner's KTAP (kernel/proc/urun.c).

Programs are static-pie (ET_DYN without PT_INTERP), linked by hand against musl's rcrt1.o
(Debian's musl-gcc wrapper links non-PIE only), except ``hello-low``: tests/user/hello.c
built by plain ``musl-gcc -static`` (ET_EXEC linked at 0x400000), which ksync loads where
it asks since its kernel lives in the upper half. ``bad-highva`` is hello-low with its
first PT_LOAD moved into the kernel half (exec must refuse it), and two corrupt ELF
files (bad-machine, bad-truncated) test the loader's other messages.

Public API: ``MUSL_DIR``, ``have_musl()``, ``build(src_dir, out_dir) -> dict[str, Path]``,
``build_program(src, exe)`` (one benchmark program),
``initramfs(progs, extra) -> bytes``, ``ENV``, ``run_on_host(path, argv)``,
``parse_user_ktap(lines) -> list[UserCase]``.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .cpio import Entry, write_newc

MUSL_DIR = Path("/usr/lib/x86_64-linux-musl")
MUSL_INC = Path("/usr/include/x86_64-linux-musl")
# the environment every program gets, on ksync (urun.c's envp) and on the host
ENV = {"HOME": "/", "PATH": "/bin:/t", "TERM": "dumb"}
ENV_ORDER = ["HOME", "PATH", "TERM"]


def have_musl() -> bool:
    return (MUSL_DIR / "rcrt1.o").is_file() and (MUSL_INC / "stdio.h").is_file() \
        and shutil.which("gcc") is not None


def _gcc_file(name: str) -> str:
    return subprocess.run(["gcc", f"-print-file-name={name}"], capture_output=True,
                          text=True, check=True).stdout.strip()


def _link(objs: list[Path], out: Path, pie: bool) -> None:
    libgcc = subprocess.run(["gcc", "-print-libgcc-file-name"], capture_output=True,
                            text=True, check=True).stdout.strip()
    if pie:
        cmd = ["gcc", "-nostdlib", "-static-pie", "-o", str(out), str(MUSL_DIR / "rcrt1.o"),
               str(MUSL_DIR / "crti.o"), _gcc_file("crtbeginS.o"), *map(str, objs),
               f"-L{MUSL_DIR}", "-lc", libgcc, _gcc_file("crtendS.o"), str(MUSL_DIR / "crtn.o")]
    else:
        cmd = ["gcc", "-nostdlib", "-static", "-no-pie", "-o", str(out),
               str(MUSL_DIR / "crt1.o"), str(MUSL_DIR / "crti.o"), _gcc_file("crtbegin.o"),
               *map(str, objs), f"-L{MUSL_DIR}", "-lc", libgcc, _gcc_file("crtend.o"),
               str(MUSL_DIR / "crtn.o")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def _compile(src: Path, obj: Path, pie: bool, opt: str = "-O1") -> None:
    cmd = ["gcc", "-nostdinc", "-isystem", str(MUSL_INC), "-isystem", _gcc_file("include"),
           "-std=gnu11", opt, "-Wall", "-fno-stack-protector",
           "-fPIE" if pie else "-fno-pie", "-c", str(src), "-o", str(obj)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"compiling {src}: {r.stderr}")


def _fresh(out: Path, deps: list[Path]) -> bool:
    return out.is_file() and all(out.stat().st_mtime >= d.stat().st_mtime for d in deps)


def build_program(src: Path, exe: Path, opt: str = "-O2") -> Path:
    """One C file as a static-pie musl binary at exe (rebuilt when src or a header beside
    it changed: bench/user/cc_front.h is shared); the benchmark programs (bench/user/).
    One build of exe at a time (the lock beside it)."""
    exe.parent.mkdir(parents=True, exist_ok=True)
    with open(exe.parent / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _fresh(exe, [src, *sorted(src.parent.glob("*.h"))]):
            obj = exe.with_suffix(".o")
            _compile(src, obj, pie=True, opt=opt)
            _link([obj], exe, pie=True)
    return exe


def build(src_dir: Path, out_dir: Path) -> dict[str, Path]:
    """Every tests/user/*.c as a static-pie binary in out_dir, plus hello-low (musl-gcc
    -static: ET_EXEC at 0x400000), bad-highva, bad-machine and bad-truncated, and the
    GLIBC_PROGS again with glibc (gcc -static -pthread) as <name>-glibc. Returns name ->
    path (rebuilds only what changed). One build of out_dir at a time: make test's two
    pytest-xdist workers each set up tests/test_user.py's module fixture, and two builds
    at once linked an object the other was still writing (a fresh clone's make test:
    `gcc ... -o build/user/uname` failed, 12 errors)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)    # released when the file closes
        return _build_locked(src_dir, out_dir)


def _build_locked(src_dir: Path, out_dir: Path) -> dict[str, Path]:
    header = src_dir / "ut.h"
    progs = {}
    for src in sorted(src_dir.glob("*.c")):
        exe = out_dir / src.stem
        if not _fresh(exe, [src, header]):
            obj = out_dir / (src.stem + ".o")
            _compile(src, obj, pie=True)
            _link([obj], exe, pie=True)
        progs[src.stem] = exe
    hello = src_dir / "hello.c"
    exe = out_dir / "hello-low"
    if not _fresh(exe, [hello, header]):
        # the plain musl-gcc -static of a user: non-PIE ET_EXEC at 0x400000
        r = subprocess.run(["musl-gcc", "-static", "-std=gnu11", "-O1", "-Wall",
                            "-fno-stack-protector", "-o", str(exe), str(hello)],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"musl-gcc -static {hello}: {r.stderr}")
    progs["hello-low"] = exe
    low = bytearray(exe.read_bytes())
    if low[16:18] != (2).to_bytes(2, "little"):
        raise RuntimeError(f"{exe}: musl-gcc -static made no ET_EXEC (e_type {low[16]})")
    phoff, phentsize, phnum = (int.from_bytes(low[32:40], "little"),
                               int.from_bytes(low[54:56], "little"),
                               int.from_bytes(low[56:58], "little"))
    for i in range(phnum):
        ph = phoff + i * phentsize
        if int.from_bytes(low[ph:ph + 4], "little") == 1:     # the first PT_LOAD
            va = int.from_bytes(low[ph + 16:ph + 24], "little")
            high = (0xffff800000000000 + va).to_bytes(8, "little")
            low[ph + 16:ph + 24] = high                         # p_vaddr
            low[ph + 24:ph + 32] = high                         # p_paddr
            break
    (out_dir / "bad-highva").write_bytes(bytes(low))
    img = progs["hello"].read_bytes()
    bad = bytearray(img)
    bad[18:20] = (3).to_bytes(2, "little")        # e_machine = EM_386
    (out_dir / "bad-machine").write_bytes(bytes(bad))
    (out_dir / "bad-truncated").write_bytes(img[:200])   # the header, half its phdrs
    for name in ("bad-machine", "bad-truncated", "bad-highva"):
        (out_dir / name).chmod(0o755)
        progs[name] = out_dir / name
    # the thread programs also through glibc's pthreads (clone3 then clone, its futex
    # use, set_robust_list, rseq): gcc -static -pthread, ET_EXEC at 0x400000
    for stem in GLIBC_PROGS:
        src = src_dir / f"{stem}.c"
        if not src.is_file():
            continue    # a src_dir of other programs (tests/test_user_bad.py's)
        exe = out_dir / f"{stem}-glibc"
        if not _fresh(exe, [src, header]):
            r = subprocess.run(["gcc", "-static", "-pthread", "-std=gnu11", "-O1", "-Wall",
                                "-o", str(exe), str(src)], capture_output=True, text=True)
            if r.returncode:
                raise RuntimeError(f"gcc -static -pthread {src}: {r.stderr}")
        progs[f"{stem}-glibc"] = exe
    return progs


# tests/user programs built a second time against glibc (static), as <name>-glibc
GLIBC_PROGS = ("thr_pthread", "thr_stress")


def initramfs(progs: dict[str, Path], extra: dict[str, bytes], listing: str) -> bytes:
    """/t/<name> for every program, /t/<file> for every extra file, /t/list."""
    entries = [Entry("t", stat.S_IFDIR | 0o755)]
    for name, path in sorted(progs.items()):
        entries.append(Entry(f"t/{name}", stat.S_IFREG | 0o755, path.read_bytes()))
    for name, data in sorted(extra.items()):
        entries.append(Entry(f"t/{name}", stat.S_IFREG | 0o644, data))
    entries.append(Entry("t/list", stat.S_IFREG | 0o644, listing.encode()))
    return write_newc(entries)


def host_tree(progs: dict[str, Path], extra: dict[str, bytes], root: Path) -> None:
    """The same files under root/t, for the host's twins (which see /t through a chroot-
    free path rewrite: they get their own absolute path as argv[0])."""
    (root / "t").mkdir(parents=True, exist_ok=True)
    for name, path in progs.items():
        dst = root / "t" / name
        shutil.copy2(path, dst)
    for name, data in extra.items():
        (root / "t" / name).write_bytes(data)


@dataclass
class UserCase:
    number: int
    argv: list[str]
    ok: bool
    status: int | None
    out: bytes = b""
    truncated: bool = False
    note: str = ""
    kernel_lines: list[str] = field(default_factory=list)


def parse_user_ktap(lines: list[str]) -> list[UserCase]:
    """The runner's report: per program '# user: ARGV', '# out: HEX'..., 'ok N path #
    status=0x..' (or 'not ok'); console lines in between (the kernel's own messages, like
    a crash's) are kept with the case they came in."""
    cases, cur_argv, out, trunc, klines = [], None, bytearray(), False, []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line.startswith("ktap: "):
            if cur_argv is not None and line.strip():
                klines.append(line)
            continue
        body = line[len("ktap: "):]
        if body.startswith("# user: "):
            cur_argv, out, trunc, klines = body[len("# user: "):].split(" "), bytearray(), False, []
        elif body.startswith("# out: "):
            out += bytes.fromhex(body[len("# out: "):].strip())
        elif body.startswith("# out-truncated"):
            trunc = True
        elif (body.startswith("ok ") or body.startswith("not ok ")) and cur_argv is not None:
            ok = body.startswith("ok ")
            num = int(body.split()[1 if ok else 2])
            status = None
            if "status=0x" in body:
                status = int(body.split("status=0x", 1)[1].split()[0], 16)
            cases.append(UserCase(num, cur_argv, ok, status, bytes(out), trunc,
                                  body.split("#", 1)[1].strip() if "#" in body else "", klines))
            cur_argv, klines = None, []
    return cases


def run_on_host(path: Path, argv: list[str], timeout: float = 60) -> tuple[bytes, int]:
    """Run the binary with argv (argv[0] as given), ENV, stdin from /dev/null, stdout and
    stderr into one pipe (as urun.c gives the program on ksync); (output, wait status)."""
    env = {k: ENV[k] for k in ENV_ORDER}
    r = subprocess.run(argv, executable=str(path), env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    rc = r.returncode
    status = ((rc & 0xff) << 8) if rc >= 0 else (-rc & 0x7f)
    return r.stdout, status
