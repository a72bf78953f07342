"""Test by difference: ksync's VFS and RAM file system against the host Linux.

One script of file operations (kernel/tests/fs_diff_ops.inc: success and error paths of
open/read/write/lseek/ftruncate/stat/rename/link/symlink/readlink/chmod/getdents/fcntl/
dup/chdir/getcwd/pipe2) runs on ksync's VFS in the hosted port's kernel (the case
fs_diff_script of kernel/tests/test_fs.c) and with the host's real system calls in a
fresh directory (tests/fs_diff_host.py, on tmpfs when /dev/shm is writable). The two
transcripts - every return value or errno, the stat fields that must match (type, mode
bits, nlink, size of files and links), the name sets of directories, the data read,
F_GETFL - must be equal line for line. Where the host's file system counts directory
links differently (btrfs says 1), directories' nlink is left out on both sides.
"""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ksync.schemes import DEFAULT_SCHEME

ROOT = Path(__file__).resolve().parent.parent
OPS = ROOT / "kernel" / "tests" / "fs_diff_ops.inc"
HOST = Path(__file__).resolve().parent / "fs_diff_host.py"
EXE = Path("build") / "hosted-kernel" / "plain" / DEFAULT_SCHEME / "ksync"
LINE = re.compile(r"^ktap: # fsdiff (\d+ .*)$")


@pytest.fixture(scope="module")
def ksync_transcript() -> list[str]:
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "-j2", str(EXE)], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, f"make {EXE} failed:\n{r.stdout}\n{r.stderr}"
    env = dict(os.environ, KSYNC_HOSTED_FIFO="0")
    r = subprocess.run([str(ROOT / EXE), "-smp", "1", "-append", "mode=test filter=fs_diff_script"],
                       capture_output=True, text=True, timeout=120, env=env)
    out = r.stdout.splitlines()
    assert r.returncode == 0 and "ktap: ok 1 fs_diff_script" in out, \
        f"exit {r.returncode}\n" + "\n".join(out[-30:]) + "\n" + r.stderr[-2000:]
    return [m.group(1) for l in out if (m := LINE.match(l))]


def host_transcript(where: Path) -> tuple[bool, list[str]]:
    r = subprocess.run([sys.executable, str(HOST), str(OPS)], cwd=where, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    return lines[0] == "nlink-classic yes", lines[1:]


def scratch_dir(tmp_path: Path) -> Path:
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return Path(tempfile.mkdtemp(prefix="ksync-fsdiff-", dir=shm))
    return tmp_path


def drop_dir_nlink(line: str) -> str:
    return re.sub(r"=> dir (\d{4}) nlink=\d+", r"=> dir \1 nlink=?", line)


def test_fs_script_matches_host_linux(ksync_transcript: list[str], tmp_path: Path):
    where = scratch_dir(tmp_path)
    try:
        classic, host = host_transcript(where)
    finally:
        if where != tmp_path:
            subprocess.run(["rm", "-rf", str(where)], check=False)
    mine = ksync_transcript
    if not classic:
        host = [drop_dir_nlink(l) for l in host]
        mine = [drop_dir_nlink(l) for l in mine]
    assert len(mine) == len(host) > 100
    diff = [f"ksync: {a}\nlinux: {b}" for a, b in zip(mine, host) if a != b]
    assert not diff, "\n".join(diff)


def test_fs_script_covers_errno_paths(ksync_transcript: list[str]):
    """The script exercises the error paths it claims to (so that an equal transcript
    means something): each of these errno values is some operation's answer."""
    seen = {m.group(1) for l in ksync_transcript if (m := re.search(r"=> E(\d+)$", l))}
    want = {"2", "9", "11", "17", "20", "21", "22", "29", "32", "39", "40", "1"}
    assert want <= seen, want - seen
