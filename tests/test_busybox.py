"""Debian's busybox-static on ksync and on the host Linux: the same /bin/busybox file, the
same arguments, the same input tree; stdout+stderr and the wait status must be identical.

Each configuration is one boot (mode=user, kernel/proc/urun.c) that runs every case one
after another from /t/list; the host runs the same cases in the same order with a
temporary directory as its working directory (ksync's is "/"), where tools/ksync/
busybox.py has made the same t/ tree. Paths in the cases are relative, so both sides
name the same files. A shell command line travels as a script file (t/sh/<case>.sh: the
runner splits its list at spaces), run by `busybox sh`. Nothing is normalised: the cases
print no times, inode numbers, user names or pids (the issue's `ls -l` line, which does,
is test_ls_l_pipeline_like_linux's, with its normalisation stated there).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ksync import busybox, qemu, userprogs

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "user"
BB = "/bin/busybox"

# name -> argv after "busybox" (the applet and its arguments; no spaces in a word)
ARGV_CASES: dict[str, list[str]] = {
    "echo": ["echo", "hello", "world"],
    "true": ["true"],
    "false": ["false"],
    "cat": ["cat", "t/tree/fruit.txt", "t/tree/a/one.txt"],
    "cat_missing": ["cat", "t/tree/nope"],
    "wc": ["wc", "t/tree/fruit.txt", "t/tree/words.txt", "t/tree/empty"],
    "head": ["head", "-n", "3", "t/tree/nums.txt"],
    "tail": ["tail", "-n", "2", "t/tree/nums.txt"],
    "sort": ["sort", "t/tree/fruit.txt"],
    "sort_nr": ["sort", "-n", "-r", "t/tree/nums.txt"],
    "cut": ["cut", "-d", ",", "-f", "1,3", "t/tree/table.csv"],
    "md5sum": ["md5sum", "t/tree/fruit.txt", "t/tree/a/one.txt"],
    "sha256sum": ["sha256sum", "t/tree/words.txt"],
    "ls": ["ls", "t/tree"],
    "ls_R": ["ls", "-R", "t/tree"],
    "grep_n": ["grep", "-n", "apple", "t/tree/fruit.txt"],
    "grep_ci": ["grep", "-c", "-i", "the", "t/tree/words.txt"],
    "grep_none": ["grep", "kiwi", "t/tree/fruit.txt"],
    "sed": ["sed", "s/apple/APPLE/g;3d", "t/tree/fruit.txt"],
    "expr": ["expr", "6", "*", "7"],
    "seq": ["seq", "1", "3", "10"],
    "basename": ["basename", "/a/b/c.txt", ".txt"],
    "dirname": ["dirname", "/a/b/c.txt"],
    "nl": ["nl", "t/tree/fruit.txt"],
}
# name -> a shell script run by `busybox sh t/sh/<name>.sh`
SH_CASES: dict[str, str] = {
    "arith": "echo $((6*7))\n",
    "vars": "a=1; b=$((a+41)); echo $b\n",
    "uniq_c": "sort t/tree/fruit.txt | uniq -c\n",
    "tr": "tr a-z A-Z < t/tree/words.txt\n",
    "pipeline": "cat t/tree/words.txt | tr ' ' '\\n' | sort | uniq | wc -l\n",
    "awk": "awk -F, 'NR>1 {s+=$2*$3} END {printf \"%.2f\\n\", s}' t/tree/table.csv\n",
    "printf": "printf '%05d|%s|%x\\n' 42 x 255\n",
    "find": "find t/tree -name '*.txt' | sort\n",
    "find_dirs": "find t/tree -type d | sort\n",
    "xargs": "find t/tree -name '*.txt' | sort | xargs wc -l\n",
    "grep_rl": "grep -rl o t/tree | sort\n",
    "redirect": "echo one > w.txt; echo two >> w.txt; cat < w.txt; wc -c < w.txt; rm w.txt;"
                " cat w.txt 2>/dev/null || echo gone\n",
    "tree_ops": "mkdir -p w/x/y && cp -r t/tree w/x/y/ && ls -R w && rm -rf w &&"
                " ls w 2>/dev/null; echo status $?\n",
    "subst": "x=$(echo hi | tr a-z A-Z); (echo sub $x); echo ${#x}\n",
    "status": "false; echo $?; true && echo and; false || echo or\n",
    "loop": "for i in 1 2 3; do echo n$i; done\n",
    "test": "if [ -d t/tree ]; then echo dir; fi; test -f t/tree/empty && echo file;"
            " [ -s t/tree/empty ] || echo empty\n",
    "read": "while read l; do echo \"<$l>\"; done < t/tree/a/b/two.txt\n",
    "exit": "echo before; exit 7\n",
}
CASES: list[tuple[str, list[str]]] = (
    [(n, [BB] + a) for n, a in ARGV_CASES.items()]
    + [(n, [BB, "sh", f"t/sh/{n}.sh"]) for n in SH_CASES])
# the done-when line, as a script; compared after normalising ls -l (see below)
LSL = "busybox ls -l /bin | busybox head -3; echo $((6*7))\n"
CONFIGS = [1, 2]


@pytest.fixture(scope="module")
def scripts():
    if not busybox.have_busybox():
        pytest.fail("Debian's busybox-static (/bin/busybox) is missing: run scripts/deps.sh")
    return dict(SH_CASES, lsl=LSL)


@pytest.fixture(scope="module")
def host_results(scripts, tmp_path_factory):
    root = tmp_path_factory.mktemp("bbroot")
    busybox.host_tree(root, scripts)
    res = {}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        for name, argv in CASES:
            res[name] = userprogs.run_on_host(Path(BB), argv)
    finally:
        os.chdir(cwd)
    return res


@pytest.fixture(scope="module")
def boot_bb(scripts):
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    OUT.mkdir(parents=True, exist_ok=True)
    listing = "".join(" ".join(argv) + "\n" for _, argv in CASES)
    listing += f"{BB} sh t/sh/lsl.sh\n"
    rd = OUT / "busybox.cpio"
    rd.write_bytes(busybox.initramfs(listing, scripts))
    boots = {}

    def boot(smp: int):
        if smp not in boots:
            cfg = qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=240, initrd=rd,
                                  append=["user=@/t/list", "epoch=1700000000"])
            boots[smp] = qemu.boot(cfg)
        return boots[smp]
    return boot


def _show(b: bytes) -> str:
    return b.decode("utf-8", "replace")


@pytest.mark.parametrize("smp", CONFIGS, ids=lambda s: f"smp{s}")
def test_busybox_matches_linux(boot_bb, host_results, smp):
    res = boot_bb(smp)
    assert res.passed, qemu.failure_report(res)
    got = userprogs.parse_user_ktap(res.lines)
    assert len(got) == len(CASES) + 1, [" ".join(c.argv) for c in got]
    bad = []
    for (name, argv), c in zip(CASES, got):
        assert c.argv == argv, (c.argv, argv)
        out, st = host_results[name]
        if not c.ok or c.out != out or c.status != st:
            bad.append(f"--- {name} ({' '.join(argv[1:])}): host status 0x{st:x}, ksync "
                       f"{'0x%x' % c.status if c.status is not None else c.note}\n"
                       f"host:\n{_show(out)}ksync:\n{_show(c.out)}")
    assert not bad, f"{len(bad)} of {len(CASES)} differ:\n" + "\n".join(bad)
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    assert pg and pg[0]["user_pages_live"] == 0, pg


def _host_in_chroot(root: Path, argv: list[str]) -> tuple[bytes, int]:
    """argv in a chroot of root made like ksync's initramfs (/bin/busybox, the applet
    links, /proc/self/exe, /t), as an unprivileged user namespace's root (unshare -r):
    the host twin of a command that names absolute paths such as /bin."""
    unshare, chroot = shutil.which("unshare"), shutil.which("chroot")
    if not unshare or not chroot:
        pytest.skip("no unshare(1)/chroot(1) (util-linux, coreutils) for the host twin")
    probe = subprocess.run([unshare, "-r", chroot, str(root), BB, "true"],
                           capture_output=True)
    if probe.returncode:
        pytest.skip(f"no user namespace for the host twin: {probe.stderr.decode()[-200:]}")
    env = {k: userprogs.ENV[k] for k in userprogs.ENV_ORDER}
    r = subprocess.run([unshare, "-r", chroot, str(root)] + argv, env=env,
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    rc = r.returncode
    return r.stdout, ((rc & 0xff) << 8) if rc >= 0 else (-rc & 0x7f)


def test_ls_l_pipeline_like_linux(boot_bb, scripts, tmp_path):
    """The issue's done-when line, `busybox ls -l /bin | busybox head -3; echo $((6*7))`:
    on ksync (the initramfs's /bin) and on the host in a chroot holding the same files
    with the same times (the cpio's mtime 0) and owner (0, no /etc/passwd in either).
    Compared byte for byte except the `total` line (blocks: each file system allocates
    its own) - nothing else is normalised."""
    root = tmp_path / "root"
    busybox.host_tree(root, scripts, with_bin=True)
    want, wst = _host_in_chroot(root, [BB, "sh", "t/sh/lsl.sh"])
    res = boot_bb(1)
    assert res.passed, qemu.failure_report(res)
    c = userprogs.parse_user_ktap(res.lines)[-1]
    assert c.argv == [BB, "sh", "t/sh/lsl.sh"], c.argv

    def norm(b: bytes) -> str:
        return re.sub(r"^total \d+$", "total N", b.decode(), flags=re.M)
    assert (norm(c.out), c.status) == (norm(want), wst), (c.out, want)


def test_ksync_sh_runs_a_command_line(boot_bb, tmp_path):
    """`./ksync sh -c CMD --add LOCAL:PATH`: busybox sh runs CMD on ksync; its output is
    ours and its exit status our exit status; without -c, a stdin that is not a terminal
    is the script (the interactive shell: tests/test_shell.py)."""
    boot_bb(1)                  # (the fixture built the kernel)
    data = tmp_path / "data.txt"
    data.write_bytes(b"from the host\n")
    r = subprocess.run([str(ROOT / "ksync"), "sh", "--no-build", "--smp", "1", "--add",
                        f"{data}:/in/data.txt", "-c",
                        "echo $((6*7)); busybox cat /in/data.txt | busybox tr a-z A-Z; exit 5"],
                       cwd=ROOT, capture_output=True, timeout=300)
    assert (r.stdout, r.returncode) == (b"42\nFROM THE HOST\n", 5), r.stderr.decode()[-2000:]
    # without -c and with stdin not a terminal: stdin is the script (as `sh < file`)
    r = subprocess.run([str(ROOT / "ksync"), "sh", "--no-build", "--smp", "1"], cwd=ROOT,
                       input=b"echo piped $((1+2))\nexit 4\n", capture_output=True,
                       timeout=300)
    assert (r.stdout, r.returncode) == (b"piped 3\n", 4), r.stderr.decode()[-2000:]
