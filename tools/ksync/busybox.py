"""Debian's busybox-static in ksync's initramfs (the user space, docs/userspace.md): the same
/bin/busybox file runs on the host Linux and on ksync, and tests/test_busybox.py compares
the two.

The initramfs (``initramfs``) holds:

- ``/bin/busybox``: the file /bin/busybox of Debian's ``busybox-static`` package
  (scripts/deps.sh installs it), with a symlink ``/bin/<applet> -> busybox`` for every
  applet in ``APPLETS`` (the ones the suite runs);
- no /proc: the kernel's own (kernel/fs/procfs.c) is there. Debian builds busybox with
  the standalone shell (FEATURE_SH_STANDALONE): sh runs an applet that is neither NOFORK
  nor NOEXEC by exec'ing ``/proc/self/exe``, which names /bin/busybox there;
- ``/t/tree/...``: the input tree of ``TREE`` (the host gets the same files under a
  temporary directory by ``host_tree``); ``/t/sh/<name>.sh``: the shell scripts of the
  cases (urun.c splits a command line at spaces, so a shell command line travels as a
  script file); ``/t/list``: the commands, one a line.

``ksync sh -c CMD`` (run.py's cmd_sh) boots the same initramfs with CMD as the one script.

Public API: ``BUSYBOX``, ``have_busybox()``, ``APPLETS``, ``TREE``, ``initramfs(listing,
scripts, extra)``, ``host_tree(root, scripts, with_bin)``.
"""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from .cpio import Entry, write_newc

BUSYBOX = Path("/bin/busybox")
# the applets the suite runs by name (symlinks in /bin)
APPLETS = ["sh", "echo", "true", "false", "cat", "wc", "head", "tail", "sort", "uniq", "tr",
           "cut", "md5sum", "sha256sum", "ls", "mkdir", "cp", "rm", "find", "xargs", "grep",
           "sed", "awk", "expr", "seq", "basename", "dirname", "printf", "test", "env",
           "rmdir", "mv", "ln", "touch", "tee", "od", "rev", "nl", "paste", "fold",
           # tar z runs "gzip" by PATH (execlp in a vfork child), not as an applet
           "gzip", "gunzip"]
# the input tree: relative path -> contents (None: a directory)
TREE: dict[str, bytes | None] = {
    "tree": None,
    "tree/a": None,
    "tree/a/b": None,
    "tree/a/one.txt": b"one\n",
    "tree/a/b/two.txt": b"two\nlines\n",
    "tree/fruit.txt": b"pear\napple\nfig\napple\nbanana\nfig\napple\n",
    "tree/nums.txt": b"".join(b"%d\n" % (i * 7 % 23) for i in range(1, 40)),
    "tree/words.txt": b"the quick brown fox\njumps over the lazy dog\nThe End\n",
    "tree/table.csv": b"name,qty,price\nbolt,10,0.25\nnut,200,0.05\nwasher,35,0.10\n",
    "tree/empty": b"",
}


def have_busybox() -> bool:
    """The static busybox of Debian's busybox-static is installed."""
    if not BUSYBOX.is_file():
        return False
    head = BUSYBOX.read_bytes()[:64]
    # an ELF executable (ET_EXEC) for x86-64; the dynamic busybox package's would be too,
    # but it has a PT_INTERP, which ksync refuses: look for it in the program headers
    if head[:4] != b"\x7fELF" or head[18:20] != (62).to_bytes(2, "little"):
        return False
    data = BUSYBOX.read_bytes()
    phoff, phsz, phn = (int.from_bytes(data[32:40], "little"),
                        int.from_bytes(data[54:56], "little"),
                        int.from_bytes(data[56:58], "little"))
    return all(int.from_bytes(data[phoff + i * phsz:phoff + i * phsz + 4], "little") != 3
               for i in range(phn))


def initramfs(listing: str, scripts: dict[str, str],
              extra: list[Entry] | None = None) -> bytes:
    """/bin/busybox + applet links, /t/tree, /t/sh/*.sh, /t/list, and
    the user's extra entries (``ksync sh --add``) last."""
    entries = [Entry("bin", stat.S_IFDIR | 0o755),
               Entry("bin/busybox", stat.S_IFREG | 0o755, BUSYBOX.read_bytes())]
    for a in APPLETS:
        entries.append(Entry(f"bin/{a}", stat.S_IFLNK | 0o777, b"busybox"))
    entries += [Entry("t", stat.S_IFDIR | 0o755)]
    for rel, data in TREE.items():
        if data is None:
            entries.append(Entry(f"t/{rel}", stat.S_IFDIR | 0o755))
        else:
            entries.append(Entry(f"t/{rel}", stat.S_IFREG | 0o644, data))
    entries.append(Entry("t/sh", stat.S_IFDIR | 0o755))
    for name, text in sorted(scripts.items()):
        entries.append(Entry(f"t/sh/{name}.sh", stat.S_IFREG | 0o644, text.encode()))
    entries.append(Entry("t/list", stat.S_IFREG | 0o644, listing.encode()))
    return write_newc(entries + list(extra or []))


def host_tree(root: Path, scripts: dict[str, str], with_bin: bool = False) -> None:
    """The same /t under root (the host's twin runs with root as its working directory,
    as ksync's runs with "/"); with_bin: also /bin (a copy of busybox and the applet
    links) and /proc/self/exe (the chroot has no /proc; busybox's standalone shell execs
    that name), every entry with the cpio's mtime 0, for a twin that runs in a chroot of
    root."""
    if with_bin:
        (root / "bin").mkdir(parents=True, exist_ok=True)
        (root / "proc" / "self").mkdir(parents=True, exist_ok=True)
        bb = root / "bin" / "busybox"
        shutil.copyfile(BUSYBOX, bb)
        bb.chmod(0o755)
        for a in APPLETS:
            (root / "bin" / a).symlink_to("busybox")
        (root / "proc" / "self" / "exe").symlink_to("/bin/busybox")
        for p in [bb] + [root / "bin" / a for a in APPLETS] + [root / "proc" / "self" / "exe"]:
            os.utime(p, ns=(0, 0), follow_symlinks=False)
        os.utime(root / "bin", ns=(0, 0))
    t = root / "t"
    t.mkdir(parents=True, exist_ok=True)
    for rel, data in TREE.items():
        p = t / rel
        if data is None:
            p.mkdir(parents=True, exist_ok=True)
            p.chmod(0o755)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            p.chmod(0o644)
    (t / "sh").mkdir(exist_ok=True)
    for name, text in scripts.items():
        (t / "sh" / f"{name}.sh").write_text(text)
