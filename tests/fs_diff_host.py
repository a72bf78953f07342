"""The host side of the file-system differential script (kernel/tests/fs_diff_ops.inc):
run every operation with the host Linux's real system calls, in the current directory,
and print the transcript in the kernel case's format ("<n> <op> => <result>").

Run as a script by tests/test_fs_diff.py, in a fresh directory (it chdirs and sets the
umask, so it runs in a process of its own):  python fs_diff_host.py OPS_FILE

Line syntax (both executors): OP ARG..., single spaces.
  mkdir P MODE | rmdir P | unlink P | open R P FLAGS MODE | close R | write R TEXT |
  pwrite R TEXT OFF | read R N | pread R N OFF | lseek R OFF SET|CUR|END | ftruncate R LEN |
  stat P | lstat P | fstat R | rename A B | link A B | symlink TARGET P | readlink P |
  chmod P MODE | ls P | getfl R | dup R NEWR | dup2 R1 R2 | chdir P | getcwd |
  pipe R0 R1 FLAGS | openat DIRR R P FLAGS MODE | statat DIRR P (no follow) |
  mkdirat DIRR P MODE | unlinkat DIRR P 0|REMOVEDIR | setfl R FLAGS | getfd R
MODE octal; FLAGS names of O_* joined by '|' (0 for none); TEXT: '_' a space, '~' a newline.
Results: "ok" (0), a number, "fd" (a new descriptor), "E<errno>", "<n>:<data>" for reads,
"<type> <mode> nlink=<n>[ size=<n>]" for stats (size for regular files and links only),
names joined by ',' for ls, "0x<hex>" for getfl, "ROOT/..." for getcwd.
"""
import ast
import fcntl
import os
import re
import stat
import sys
from pathlib import Path

FLAGS = {n: getattr(os, "O_" + n) for n in ("RDONLY", "WRONLY", "RDWR", "CREAT", "EXCL",
                                           "TRUNC", "APPEND", "DIRECTORY", "NOFOLLOW",
                                           "NONBLOCK", "CLOEXEC")}


def load_ops(path: Path) -> list[str]:
    """The C string literals of the .inc file, one per line (comments dropped)."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            out.append(ast.literal_eval(line.rstrip(",")))
    return out


def esc(data: bytes) -> str:
    return "".join(chr(b) if 32 <= b < 127 and b != 0x5c else f"\\x{b:02x}" for b in data)


def stat_str(st: os.stat_result) -> str:
    m = st.st_mode
    kinds = ((stat.S_ISREG, "reg", True), (stat.S_ISDIR, "dir", False),
             (stat.S_ISLNK, "lnk", True), (stat.S_ISFIFO, "fifo", False),
             (stat.S_ISCHR, "chr", False))
    for test, name, size in kinds:
        if test(m):
            s = f"{name} {stat.S_IMODE(m):04o} nlink={st.st_nlink}"
            return f"{s} size={st.st_size}" if size else s
    return f"? {stat.S_IMODE(m):04o} nlink={st.st_nlink}"


def flags(s: str) -> int:
    v = 0
    for name in s.split("|"):
        v |= FLAGS.get(name, 0)
    return v


def opened(fd: int, how: str) -> int:
    """Python opens and dups every descriptor close-on-exec (PEP 446); the script's
    descriptors are close-on-exec only when it says O_CLOEXEC, as the system calls'."""
    os.set_inheritable(fd, "CLOEXEC" not in how.split("|"))
    return fd


def text(s: str) -> bytes:
    return s.replace("_", " ").replace("~", "\n").encode()


def run(ops: list[str], root: str) -> list[str]:
    regs: dict[str, int] = {}
    out = []
    for i, line in enumerate(ops):
        t = line.split(" ")
        op = t[0]
        fd = regs.get(t[1], 1000) if len(t) > 1 else 1000
        try:
            r = None
            if op == "mkdir":
                os.mkdir(t[1], int(t[2], 8))
            elif op == "rmdir":
                os.rmdir(t[1])
            elif op == "unlink":
                os.unlink(t[1])
            elif op == "open":
                regs[t[1]] = opened(os.open(t[2], flags(t[3]), int(t[4], 8)), t[3])
                r = "fd"
            elif op == "close":
                regs[t[1]] = -1
                os.close(fd)
            elif op == "write":
                r = os.write(fd, text(t[2]))
            elif op == "pwrite":
                r = os.pwrite(fd, text(t[2]), int(t[3]))
            elif op in ("read", "pread"):
                d = os.read(fd, int(t[2])) if op == "read" else os.pread(fd, int(t[2]), int(t[3]))
                r = f"{len(d)}:{esc(d)}"
            elif op == "lseek":
                r = os.lseek(fd, int(t[2]), {"SET": 0, "CUR": 1, "END": 2}[t[3]])
            elif op == "ftruncate":
                os.ftruncate(fd, int(t[2]))
            elif op in ("stat", "lstat"):
                r = stat_str(os.stat(t[1], follow_symlinks=op == "stat"))
            elif op == "fstat":
                r = stat_str(os.fstat(fd))
            elif op == "rename":
                os.rename(t[1], t[2])
            elif op == "link":
                os.link(t[1], t[2])	# link(2): the last component is not followed
            elif op == "symlink":
                os.symlink(t[1], t[2])
            elif op == "readlink":
                r = esc(os.fsencode(os.readlink(t[1])))
            elif op == "chmod":
                os.chmod(t[1], int(t[2], 8))
            elif op == "ls":
                r = ",".join(sorted(os.listdir(t[1])))
            elif op == "getfl":
                r = f"0x{fcntl.fcntl(fd, fcntl.F_GETFL):x}"
            elif op == "dup":
                regs[t[2]] = opened(os.dup(fd), "")
                r = "fd"
            elif op == "dup2":
                os.dup2(fd, regs.get(t[2], 1001))
            elif op == "openat":
                regs[t[2]] = opened(os.open(t[3], flags(t[4]), int(t[5], 8), dir_fd=fd), t[4])
                r = "fd"
            elif op == "statat":
                r = stat_str(os.stat(t[2], dir_fd=fd, follow_symlinks=False))
            elif op == "mkdirat":
                os.mkdir(t[2], int(t[3], 8), dir_fd=fd)
            elif op == "unlinkat":
                (os.rmdir if t[3] == "REMOVEDIR" else os.unlink)(t[2], dir_fd=fd)
            elif op == "setfl":
                fcntl.fcntl(fd, fcntl.F_SETFL, flags(t[2]))
            elif op == "getfd":
                r = fcntl.fcntl(fd, fcntl.F_GETFD)
            elif op == "chdir":
                os.chdir(t[1])
            elif op == "getcwd":
                r = "ROOT" + os.getcwd()[len(root):]
            elif op == "pipe":
                regs[t[1]], regs[t[2]] = os.pipe2(flags(t[3]))
            else:
                raise SystemExit(f"line {i}: unknown operation {line!r}")
            if r is None or r == 0:
                r = "ok"
        except OSError as e:
            r = f"E{e.errno}"
        out.append(f"{i} {line} => {r}")
    return out


def nlink_classic() -> bool:
    """Does this file system count a directory's links as Linux's classic ones (2 + its
    subdirectories)? (tmpfs and ext4 do; btrfs says 1.)"""
    os.mkdir("probe")
    os.mkdir("probe/sub")
    n = os.stat("probe").st_nlink
    os.rmdir("probe/sub")
    os.rmdir("probe")
    return n == 3


if __name__ == "__main__":
    os.umask(0o022)
    root = os.getcwd()
    print(f"nlink-classic {'yes' if nlink_classic() else 'no'}")
    for row in run(load_ops(Path(sys.argv[1])), root):
        print(row)
