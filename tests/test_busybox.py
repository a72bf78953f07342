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
import stat
import subprocess
from pathlib import Path

import pytest

from ksync import busybox, cpio, qemu, userprogs
from ksync.util import write_atomic

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
    "sort_k": ["sort", "-t", ",", "-k", "2", "-n", "t/tree/table.csv"],
    "sort_u": ["sort", "-u", "t/tree/fruit.txt"],
    "od": ["od", "-c", "t/tree/a/b/two.txt"],
    "hexdump": ["hexdump", "-C", "t/tree/words.txt"],
    "sed_n": ["sed", "-n", "2,4p", "t/tree/nums.txt"],
    "grep_v": ["grep", "-v", "apple", "t/tree/fruit.txt"],
    "grep_E": ["grep", "-E", "^(fig|pear)$", "t/tree/fruit.txt"],
    "grep_o": ["grep", "-o", "[aeiou]", "t/tree/a/b/two.txt"],
    "tac": ["tac", "t/tree/fruit.txt"],
    "rev": ["rev", "t/tree/words.txt"],
    "paste": ["paste", "-d", ":", "t/tree/a/one.txt", "t/tree/a/b/two.txt"],
    "fold": ["fold", "-w", "7", "t/tree/words.txt"],
    "cut_c": ["cut", "-c", "2-4", "t/tree/fruit.txt"],
    "head_c": ["head", "-c", "10", "t/tree/words.txt"],
    "tail_plus": ["tail", "-n", "+37", "t/tree/nums.txt"],
    "wc_w": ["wc", "-w", "t/tree/words.txt"],
    "seq_s": ["seq", "-s", ",", "5"],
    "expr_len": ["expr", "length", "hello"],
    "expr_match": ["expr", "abc123", ":", "[a-z]*"],
    "sha1sum": ["sha1sum", "t/tree/fruit.txt"],
    "sha512sum": ["sha512sum", "t/tree/a/one.txt"],
    "base64": ["base64", "t/tree/words.txt"],
    "factor": ["factor", "360", "97"],
    "cat_n": ["cat", "-n", "t/tree/a/b/two.txt"],
    "ls_a": ["ls", "-a", "t/tree/a"],
    "strings": ["strings", "t/tree/words.txt"],
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
    # & and wait, traps, short sleeps
    "bg_wait": "sleep 0.1 & p=$!; echo started; wait $p; echo waited $?\n",
    "bg_many": "for i in 1 2 3; do (echo job$i > w_bg$i) & done; wait; cat w_bg1 w_bg2 w_bg3;"
               " rm w_bg1 w_bg2 w_bg3\n",
    "bg_status": "(sleep 0.1; exit 4) & a=$!; (exit 5) & b=$!; wait $b; echo b $?; wait $a;"
                 " echo a $?; wait; echo none $?\n",
    "kill_0": "sleep 0.2 & p=$!; kill -0 $p && echo alive; wait $p; kill -0 $p 2>/dev/null"
              " || echo gone\n",
    "trap_exit": "trap 'echo bye' EXIT; echo hi\n",
    "trap_int": "trap 'echo got INT' INT; kill -INT $$; echo after\n",
    "trap_usr1": "trap 'echo usr1' USR1; kill -USR1 $$; trap - USR1; echo reset\n",
    "trap_sub": "(trap 'echo sub-exit' EXIT; echo in-sub); echo main\n",
    "child_sig": "sh -c 'kill -TERM $$'; echo term $?; sh -c 'kill -9 $$'; echo kill $?\n",
    "sleep": "sleep 0.1; echo slept $?; usleep 1000; echo $?\n",
    # trees: tar, cp -r, rm -rf, mv, ln, chmod, touch
    "tar_tree": "mkdir w_tar && tar cf w_tar/t.tar t/tree && tar tf w_tar/t.tar | sort &&"
                " mkdir w_tar/x && tar xf w_tar/t.tar -C w_tar/x &&"
                " (cd t/tree && find . -type f | sort | xargs md5sum) > w_tar/a &&"
                " (cd w_tar/x/t/tree && find . -type f | sort | xargs md5sum) > w_tar/b &&"
                " cmp w_tar/a w_tar/b && cat w_tar/b; rm -rf w_tar; echo $?\n",
    "tar_gz": "tar czf - t/tree/a | tar tzf - | sort\n",
    "gzip": "gzip -c t/tree/words.txt | gunzip -c | md5sum; md5sum < t/tree/words.txt\n",
    "cp_r": "mkdir w_cp && cp -r t/tree/a w_cp/ && cp -r t/tree/a w_cp/b2 &&"
            " cp t/tree/fruit.txt w_cp/b2/ && find w_cp | sort && rm -rf w_cp && echo gone\n",
    "rm_rf": "mkdir -p w_rm/a/b/c && touch w_rm/a/f w_rm/a/b/g && rm -rf w_rm/a/b &&"
             " find w_rm | sort; rm -r w_rm; rm -rf w_rm_none; echo $?; rm w_rm_none; echo $?\n",
    "rmdir": "mkdir -p w_rd/a; rmdir w_rd; rmdir w_rd/a w_rd; ls -d w_rd; echo $?\n",
    "mv_touch": "touch w_t1; mv w_t1 w_t2; ls w_t1; ls w_t2; mkdir w_td; mv w_t2 w_td/;"
                " ls w_td; rm -r w_td\n",
    "ln_s": "ln -s t/tree/fruit.txt w_link; readlink w_link; head -n 1 w_link;"
            " [ -L w_link ] && echo link; rm w_link; ln t/tree/a/one.txt w_hard;"
            " stat -c %h w_hard; rm w_hard; stat -c %h t/tree/a/one.txt\n",
    "chmod_stat": "touch w_m; chmod 640 w_m; stat -c '%a %s %F %n' w_m; chmod u+x,g-r w_m;"
                  " stat -c %A w_m; [ -x w_m ] && echo exec; rm w_m\n",
    "truncate": "printf 12345 > w_tr; truncate -s 2 w_tr; cat w_tr; echo; truncate -s 4 w_tr;"
                " od -c w_tr; rm w_tr\n",
    # shell constructs
    "heredoc": "x=42\ncat <<EOF\nvalue $x\n$((x+1))\nEOF\ncat <<'EOF'\nraw $x\nEOF\n"
               "cat <<-EOF\n\tindented\n\tEOF\n",
    "case": "for f in a.txt b.sh c; do case $f in *.txt) echo text;; *.sh) echo shell;;"
            " *) echo other;; esac; done\n",
    "func": "f() { echo \"args $# $1 $2\"; return 3; }; f x y; echo $?\n"
            "sq() { echo $(($1*$1)); }; sq 12\n"
            "g() { local v=in; echo $v; }; v=out; g; echo $v\n",
    "set_e": "set -e; echo one; false || echo handled; if false; then :; fi; false; echo never\n",
    "params": "p=/a/b/c.tar.gz; echo ${p%.*} ${p%%.*} ${p#*/} ${p##*/}; u=;"
              " echo ${u:-def} ${#p} ${p/b/B} ${u-set}; unset u; echo ${u-unset}\n",
    "read_pipe": "echo 'a b c' | { read x y z; echo $z $y $x; }\n"
                 "echo 'k=v;x=y' | { IFS=';' read a b; echo $b $a; }\n",
    "seq_while": "seq 3 | while read n; do echo $((n*n)); done\n",
    "arith_ops": "echo $((7/2)) $((7%3)) $((2*2*2)) $((1<<4)) $((0x10)) $((-5+2)) $((3>2))\n",
    "loops": "i=0; while [ $i -lt 5 ]; do i=$((i+1)); done; echo $i;"
             " until [ $i -eq 0 ]; do i=$((i-1)); done; echo $i;"
             " for i in 1 2 3 4 5; do [ $i = 2 ] && continue; [ $i = 4 ] && break; echo $i; done\n",
    "quoting": "a='x  y'; echo $a; echo \"$a\"; set -- 1 \"2 3\" 4; echo $#;"
               " for x in \"$@\"; do echo \"[$x]\"; done\n",
    "getopts": "set -- -a -b val rest; while getopts ab: o; do echo opt $o ${OPTARG:-};"
               " done; shift $((OPTIND-1)); echo $@\n",
    "eval": "cmd='echo evald'; eval $cmd; x=y; eval \"$x=z\"; echo $y\n",
    "ifs": "IFS=:; set -- $(echo a:b:c); echo $2 $#\n",
    "glob": "echo t/tree/*.txt; echo t/tree/a/*; echo t/nomatch*\n",
    "nested_subst": "echo $(echo $(echo deep)) $(echo `echo back`); y=$( (echo nested) ); echo $y\n",
    "subshell_vars": "x=1; (x=2; echo in $x); echo out $x; { x=3; }; echo brace $x\n",
    "redirect_fd": "echo err >&2; ls nope 2>&1 >/dev/null | wc -l; exec 3>w_fd;"
                   " echo three >&3; exec 3>&-; cat w_fd; rm w_fd\n",
    "pipe_status": "false | true; echo $?; true | false; echo $?; ! false; echo $?\n",
    "exits": "for c in 0 1 2 127 255; do sh -c \"exit $c\"; echo $c:$?; done;"
             " nosuchcmd 2>/dev/null; echo $?\n",
    "sh_c_args": "sh -c 'echo $0 $1 $2' zero one two; sh -c 'exec echo replaced; echo never'\n",
    "readonly": "readonly r=5; (r=6) 2>/dev/null || echo ro; type echo; command -v sh\n",
    "echo_opts": "echo -n no-newline; echo; echo -e 'a\\tb'; printf '%b\\n' 'c\\td'\n",
    "printf2": "printf '%s-%s\\n' a b c d; printf '%5.2f|%-4s|%o\\n' 3.14159 ab 8;"
               " printf '%c%c\\n' x yz\n",
    "test_ops": "[ 3 -lt 5 ] && echo lt; [ abc = abc ] && echo eq; [ -n \"$u\" ] || echo empty;"
                " [ -e t/tree/nope ] || echo none; test 2 -ge 2 -a 1 -ne 0 && echo both;"
                " [ ! -x t/tree/fruit.txt ] && echo noexec; [ -z '' ] && echo zero\n",
    "env": "env -i A=1 B=two env; env -i X=y /bin/busybox sh -c 'echo $X'\n",
    # pipelines and filters
    "uniq_d": "sort t/tree/fruit.txt | uniq -d\n",
    "tee": "echo tee-line | tee w_tee.txt; cat w_tee.txt; echo more | tee -a w_tee.txt"
           " >/dev/null; cat w_tee.txt; rm w_tee.txt\n",
    "zero": "head -c 100000 /dev/zero | wc -c\n",
    "yes": "yes | head -n 3; yes abc | head -c 10; echo\n",
    "cmp_diff": "cmp t/tree/fruit.txt t/tree/fruit.txt && echo same;"
                " cmp t/tree/fruit.txt t/tree/words.txt; echo $?; printf 'a\\nb\\n' > w_d1;"
                " printf 'a\\nc\\n' > w_d2; diff -q w_d1 w_d2; echo $?; rm w_d1 w_d2\n",
    "xargs_n": "seq 1 7 | xargs -n 3 echo; printf 'a\\nb\\n' | xargs -I{} echo x{}y\n",
    "find_exec": "find t/tree -name '*.txt' -exec wc -c {} \\; | sort\n",
    "awk_count": "awk '{n[$1]++} END {for (k in n) print k, n[k]}' t/tree/fruit.txt | sort\n",
    "sed_multi": "sed -e 's/a/A/' -e '/fig/d' t/tree/fruit.txt\n",
    "tr_d": "tr -d aeiou < t/tree/words.txt; echo aaabbb | tr -s ab\n",
    "md5_check": "md5sum t/tree/fruit.txt > w_sum; md5sum -c w_sum; rm w_sum\n",
    "dd": "dd if=t/tree/words.txt bs=4 count=2 2>/dev/null; echo\n",
    "big_pipe": "seq 1 5000 | sort -rn | head -n 3; seq 1 5000 | md5sum\n",
    "cd": "cd t/tree/a/b && cat two.txt && cd .. && ls && cd ../.. && ls -d tree\n",
}
# ksync only: what reads /proc (or sysinfo, sched_getaffinity) cannot equal the host's;
# each prints markers that test_proc_applets checks for structure (never exact numbers
# that depend on the host or on timing)
PROC_CASES: dict[str, str] = {
    # the shell's pid, then ps: the shell's row and ps's, whose ppid is the shell
    "proc_ps": "echo $$; ps -o pid,ppid,comm,args\n",
    # free's total and /proc/meminfo's MemTotal (both the page allocator's)
    "proc_free": "free; grep -E '^(MemTotal|MemFree|MemAvailable|Cached):' /proc/meminfo\n",
    "proc_nproc": "nproc; grep -c ^processor /proc/cpuinfo\n",
    # the caller's own stat/status/cmdline/exe (cat's, tr's, readlink's): pid, comm, ppid
    "proc_self": "echo $$; cat /proc/self/stat; grep -E '^(Name|State|PPid):' /proc/self/status;"
                 " tr '\\0' '|' < /proc/self/cmdline; echo; readlink /proc/self/exe;"
                 " ls /proc | grep -x $$; ls /proc/$$; cat /proc/$$/cmdline | tr '\\0' ' '; echo\n",
    # uptime's line, /proc/uptime's two numbers
    "proc_uptime": "uptime; cat /proc/uptime\n",
    # read-only: as Linux answers root
    "proc_ro": "echo x > /proc/meminfo; echo $?; mkdir /proc/x; echo $?; rm /proc/meminfo;"
               " echo $?; touch /proc/new; echo $?; echo y > /proc/self/stat; echo $?\n",
}
CASES: list[tuple[str, list[str]]] = (
    [(n, [BB] + a) for n, a in ARGV_CASES.items()]
    + [(n, [BB, "sh", f"t/sh/{n}.sh"]) for n in SH_CASES])
PROC_RUN = [(n, [BB, "sh", f"t/sh/{n}.sh"]) for n in PROC_CASES]
# the done-when line, as a script; compared after normalising ls -l (see below)
LSL = "busybox ls -l /bin | busybox head -3; echo $((6*7))\n"
# the short set the other interrupt-masking schemes run (t/short): the first ten cases
# (argv applets) and ten shell constructs (pipelines, & and wait, traps, tar), and /proc
SHORT_NAMES = ([n for n, _ in CASES[:10]] + ["pipeline", "xargs", "tree_ops", "subst",
               "bg_wait", "bg_many", "trap_int", "child_sig", "tar_tree", "heredoc"])
SHORT = [c for c in CASES if c[0] in SHORT_NAMES]
SHORT_PROC = [c for c in PROC_RUN if c[0] in ("proc_ps", "proc_self")]
# (smp, scheduler): 1, 2 and 4 CPUs under the default scheduler (every case); the short
# set (a 3-tuple: smp, scheduler, scheme) at -smp 2 under the locked scheduler and under
# every other interrupt-masking scheme. (The full list under the locked scheduler costs
# a boot of ~30 s of make test's budget; tests/test_user.py runs its whole suite there,
# and `make stress` this one's, test_busybox_locked_full.)
from ksync import schemes as _schemes
CONFIGS = [(1, None), (2, None), (4, None)]
SCHEME_CONFIGS = [(2, "locked", None)] + [(2, None, s) for s in _schemes.SCHEMES
                                          if s != _schemes.DEFAULT_SCHEME]


@pytest.fixture(scope="module")
def scripts():
    if not busybox.have_busybox():
        pytest.fail("Debian's busybox-static (/bin/busybox) is missing: run scripts/deps.sh")
    return dict(SH_CASES, **PROC_CASES, lsl=LSL)


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
    listing = "".join(" ".join(argv) + "\n" for _, argv in CASES + PROC_RUN)
    listing += f"{BB} sh t/sh/lsl.sh\n"
    short = "".join(" ".join(argv) + "\n" for _, argv in SHORT + SHORT_PROC)
    rd = OUT / "busybox.cpio"
    write_atomic(rd, busybox.initramfs(listing, scripts, [
        cpio.Entry("t/short", stat.S_IFREG | 0o644, short.encode())]))
    boots = {}

    def boot(smp: int, sched: str | None = None, *short_scheme: str | None):
        """A 3-tuple config (smp, sched, scheme) runs the short set (t/short)."""
        short = bool(short_scheme)
        scheme = short_scheme[0] if short else None
        key = (smp, sched, short, scheme)
        if key not in boots:
            if scheme:
                r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", f"SCHEME={scheme}",
                                    "kernel"], cwd=ROOT, capture_output=True, text=True, timeout=900)
                assert r.returncode == 0, r.stdout + r.stderr
            words = ["user=@/t/short" if short else "user=@/t/list",
                     "epoch=1700000000"] + ([f"sched={sched}"] if sched else [])
            # 135 commands: about 25 s on an idle host, 300 s seen on one shared by 15 jobs
            cfg = qemu.BootConfig(repo=ROOT, mode="user", smp=smp, timeout=900, scheme=scheme,
                                  initrd=rd, append=words)
            boots[key] = qemu.boot(cfg)
        return boots[key]
    return boot


def _show(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _cfg_id(c):
    return f"smp{c[0]}" + (f"-{c[1]}" if c[1] else "") + (f"-{c[2]}" if len(c) > 2 and c[2] else "")


# every case under the locked scheduler: make stress (the `stress` parameter below)
STRESS_CONFIGS = [pytest.param((2, "locked"), id="smp2-locked-full", marks=pytest.mark.stress)]


@pytest.mark.parametrize("cfg", CONFIGS + SCHEME_CONFIGS + STRESS_CONFIGS,
                         ids=[_cfg_id(c) for c in CONFIGS + SCHEME_CONFIGS] + [None])
def test_busybox_matches_linux(boot_bb, host_results, cfg, request):
    if request.node.get_closest_marker("stress") and not request.config.getoption("--run-stress"):
        pytest.skip("long size: make stress (--run-stress)")
    res = boot_bb(*cfg)
    if cfg[1]:
        assert f"sched={cfg[1]}" in (res.cmdline or ""), res.cmdline
    assert res.passed, qemu.failure_report(res)
    got = userprogs.parse_user_ktap(res.lines)
    ran = SHORT if len(cfg) > 2 else CASES
    extra = len(SHORT_PROC) if len(cfg) > 2 else len(PROC_RUN) + 1
    assert len(got) == len(ran) + extra, [" ".join(c.argv) for c in got]
    bad = []
    for (name, argv), c in zip(ran, got):
        assert c.argv == argv, (c.argv, argv)
        out, st = host_results[name]
        if not c.ok or c.out != out or c.status != st:
            bad.append(f"--- {name} ({' '.join(argv[1:])}): host status 0x{st:x}, ksync "
                       f"{'0x%x' % c.status if c.status is not None else c.note}\n"
                       f"host:\n{_show(out)}ksync:\n{_show(c.out)}")
    assert not bad, f"{len(bad)} of {len(ran)} differ:\n" + "\n".join(bad)
    pg = [o for o in res.objects if o.get("kind") == "user_pages"]
    assert pg and pg[0]["user_pages_live"] == 0, pg
    _check_proc_applets(res, cfg)


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
    # hz= sets the clock of the timed sleeps (kernel/sched/timer.c); a rate outside
    # 100..100000 Hz is refused with the reason, before any program runs
    r = subprocess.run([str(ROOT / "ksync"), "sh", "--no-build", "--smp", "1", "--append",
                        "hz=50", "-c", "echo never"], cwd=ROOT, capture_output=True, timeout=300)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode != 0 and b"never" not in r.stdout, out[-2000:]
    assert "hz=50 refused: the clock's rate is 100..100000 Hz" in out, out[-2000:]


def _proc_problems(name: str, out: str, smp: int) -> list[str]:
    """What is wrong with PROC_CASES[name]'s output on ksync at smp CPUs (structure only:
    relations between pids, totals against the boot's memory, counts against -smp)."""
    lines = out.splitlines()
    bad = []

    def want(cond, what):
        if not cond:
            bad.append(what)
    if name == "proc_ps":
        sh = int(lines[0])
        rows = [ln.split(None, 3) for ln in lines[2:]]
        want(lines[1].split()[:3] == ["PID", "PPID", "COMMAND"], "ps header")
        shrow = [r for r in rows if int(r[0]) == sh]
        want(len(shrow) == 1 and "t/sh/proc_ps.sh" in shrow[0][3], f"the shell {sh}'s row")
        ps = [r for r in rows if r[2] == "ps"]
        want(len(ps) == 1 and int(ps[0][1]) == sh and int(ps[0][0]) != sh,
             "ps's row: its own pid, the shell its parent")
    elif name == "proc_free":
        mem = [ln.split() for ln in lines if ln.startswith("Mem:")][0]
        kv = {ln.split(":")[0]: int(ln.split()[1]) for ln in lines if ln.startswith(("MemT", "MemF", "MemA", "Cach"))}
        total, used, free = int(mem[1]), int(mem[2]), int(mem[3])
        m = qemu.BootConfig(repo=ROOT).memory      # "512M"
        boot_kb = int(m[:-1]) * (1024 if m[-1] == "M" else 1024 * 1024)
        want(total == kv["MemTotal"], "free's total is /proc/meminfo's MemTotal")
        # the page allocator's pages: the boot's memory less the kernel's image, the
        # low megabyte and its own tables (a few percent)
        want(0.9 * boot_kb < total <= boot_kb, f"total {total} kB of the boot's {boot_kb}")
        want(used + free <= total and kv["MemFree"] <= kv["MemTotal"], "used + free <= total")
    elif name == "proc_nproc":
        want(lines == [str(smp), str(smp)], f"nproc and /proc/cpuinfo's processors = {smp}")
    elif name == "proc_self":
        sh = int(lines[0])
        st = lines[1].split()
        want(len(st) == 52 and st[2] == "R", "stat: 52 fields, running")
        want(int(st[0]) != sh and st[1] == "(cat)" and int(st[3]) == sh,
             "stat: cat's own pid, comm, the shell its parent")
        want(lines[2:5] == ["Name:\tgrep", "State:\tR (running)", f"PPid:\t{sh}"], "status")
        # tr is a NOEXEC applet: the standalone shell forks and runs it without exec, so
        # its cmdline is the shell's argv (as on Linux); an exec'd one would be tr's
        want(lines[5] in ("/bin/busybox|sh|t/sh/proc_self.sh|", ) or lines[5].startswith("tr|"),
             "cmdline: argv, NUL-separated")
        want(lines[6] == "/bin/busybox", "exe")
        want(lines[7] == str(sh), "/proc lists the shell's pid")
        want(lines[8:12] == ["cmdline", "exe", "stat", "status"], "/proc/<pid>'s entries")
        want(lines[12] == "/bin/busybox sh t/sh/proc_self.sh ", "the shell's cmdline")
    elif name == "proc_uptime":
        want(re.search(r"up \d+ min,\s+0 users,\s+load average: 0\.00, 0\.00, 0\.00$", lines[0])
             is not None, "uptime's line")
        want(re.fullmatch(r"\d+\.\d\d 0\.00", lines[1]) is not None, "/proc/uptime")
    elif name == "proc_ro":
        want(out == PROC_RO_OUT, f"read-only answers:\n{out}")
    return bad


# Linux's answers to root for the same calls (the host's /proc, checked by hand: open for
# writing succeeds and write() fails with EIO for /proc's own files, EINVAL for a
# process's; a new name is ENOENT, unlink EPERM)
PROC_RO_OUT = ("sh: write error: Input/output error\n1\n"
               "mkdir: can't create directory '/proc/x': No such file or directory\n1\n"
               "rm: can't remove '/proc/meminfo': Operation not permitted\n1\n"
               "touch: /proc/new: No such file or directory\n1\n"
               "sh: write error: Invalid argument\n1\n")


def _check_proc_applets(res, cfg):
    """ps, free, nproc, uptime and /proc's files on ksync: the structure (pid relations,
    the memory total against the boot's, the CPU count against -smp, Linux's formats and
    read-only answers). The other schemes run ps and /proc/self only. Checked by
    test_busybox_matches_linux on the same boot (a test of its own could land on the
    other xdist worker and boot the configuration a second time)."""
    got = {c.argv[2].split("/")[-1][:-3]: c for c in userprogs.parse_user_ktap(res.lines)
           if len(c.argv) == 3 and c.argv[2].startswith("t/sh/proc_")}
    ran = SHORT_PROC if len(cfg) > 2 else PROC_RUN
    assert sorted(got) == sorted(n for n, _ in ran), sorted(got)
    bad = []
    for name, c in got.items():
        out = _show(c.out)
        try:
            probs = _proc_problems(name, out, cfg[0])
        except (IndexError, ValueError, KeyError) as e:
            probs = [f"unparsable: {e!r}"]
        if probs or c.status != 0:
            bad.append(f"--- {name} (status {c.status}): {probs}\n{out}")
    assert not bad, "\n".join(bad)
