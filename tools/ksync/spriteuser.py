"""Sprite's benchmarks as user programs (the papers' experiments on real programs): one static binary
(bench/user/sprite.c, musl) run unchanged on ksync and on Debian's Linux in the same QEMU
configuration, at each CPU count, the kernels interleaved round by round.

Hartman & Ousterhout ran each benchmark at 1..N processors with the work scaled to the
system (n processors run n copies; pmake's job is fixed and runs 2 jobs per processor);
their Figure 2 is the ratio of the n-processor elapsed time to the uniprocessor one. The
runs here are shaped the same way: at ``smp`` CPUs every benchmark runs ``smp`` copies
(pmake: ``2 * smp`` job slots over one tree), each at the same per-copy scale.

* ``build(repo)`` builds the program (build/user-bench/sprite).
* ``commands(smp, mult)`` the program's command lines for one boot, one per benchmark.
* ``run_ksync(...)`` boots ksync in user mode (``lockstat=counts``: Sprite kept its lock
  statistics on) with the program and the commands as /t/list; ``locks`` names the
  kernel's lock configuration (``LOCK_CONFIGS``, docs/locks.md; the record's kernel is then
  ``ksync-<locks>``), None the build's default (``ksync``).
* ``run_linux(...)`` boots a Linux guest image (``linuxguest``) with the same QEMU machine
  options and an /init that runs the commands (``osprimsrun.linux_boot``).
* ``parse(text)`` reads the program's ``KSYNC-SPRITE`` lines (bench -> row) and its
  ``KSYNC-SPRITE-LOCKS`` lines (bench -> lock class -> the counts the benchmark added: the
  program prints ksync's /proc/ksync-lockstat before and after its timed part; Linux has no
  such file, so its runs have none).
* ``collect(...)`` runs the rounds and returns the results record (``SPRITEUSER_JSON``)
  that ``spriteuserreport`` turns into tables, a figure and findings; with ``timing`` the
  named configurations boot once more per round and CPU count with ``lockstat=timing``
  (records marked ``"lockstat":"timing"``), the saturation projection's hold times only.

After the nine, the same boot runs Debian's ``hackbench -p`` (rt-tests: the same dynamically
linked binary on both kernels) with a fixed workload (``HB_ARGS``), as the OS-primitives
comparison's sweep over the CPU counts: its ``Time:`` is the row ``hackbench`` (ideal ratio 1/n, as
pmake's). Left out where rt-tests is not installed (the record's ``rows`` lack it).

Inputs of the workload (not measured): the per-copy scales (``SCALES``), the pmake tree's
size and the compile step's work (the program's own), the formatter's text.
Every run record: kernel (``ksync`` / ``linux-std`` / ``linux-rt``), smp, round, env, ok,
reason, rows, locks, wall_s. A run that fails is recorded with its reason, never raised.
"""
from __future__ import annotations

import json
import stat
import time
from pathlib import Path
from typing import Callable

from . import dynlibs, linuxguest, osprimsrun, qemu, userprogs
from .cpio import Entry, write_newc
from .util import write_atomic

SRC = Path("bench/user/sprite.c")
EXE = Path("build/user-bench/sprite")
SPRITEUSER_JSON = "spriteuser.json"
SCHEMA = "ksync-spriteuser-1"
BENCHES = ("fork", "fexec", "mem", "cswitch", "pdevtest", "pdevtestInd", "pmake", "pmakeInd",
           "troff")
MACRO = ("pmake", "pmakeInd", "troff")      # the paper's macro-benchmarks (Figures 2, 4)
FIXED = ("pmake", "hackbench")              # workload not scaled with the CPUs
# Debian's hackbench over pipes, fixed work: 4 groups of 20 senders and 20 receivers,
# 200 messages each (about a second under TCG at 1 CPU)
HB_ARGS = ["-p", "-g", "4", "-l", "200"]
# per-copy scale of each benchmark at mult=1: about half a second of one copy on ksync
# under TCG at 1 CPU (measured on the 2-core AMD EPYC guest: fork 0.27 ms, fexec 0.85 ms,
# a mem round 1.8 ms, a pipe round trip 43 us, a compile 11 ms, a troff pass 4 ms)
SCALES = {"fork": 2000, "fexec": 600, "mem": 250, "cswitch": 12000, "pdevtest": 12000,
          "pdevtestInd": 12000, "pmake": 2, "pmakeInd": 2, "troff": 120}
WORKDIR = "/tmp/sprite"
# the kernel's lock configurations a run can boot (kernel/proc/urun.c locks=; fiasco is
# refused by the kernel: not built)
LOCK_CONFIGS = ("sprite", "sprite-fix", "synthesis", "fiasco")
LOCK_FIELDS = ("hits", "misses", "spins", "sleeps", "wakeups", "futile", "wait_ticks",
               "hold_ticks")
MARK_BEGIN = "KSYNC-SPRITE-BEGIN"
MARK_END = "KSYNC-SPRITE-RUN-END"
LINUX_INIT = r"""#!/bin/sh
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /tmp
echo "KSYNC-LINUX-UNAME $(uname -a)"
cd /
echo KSYNC-SPRITE-BEGIN
while read -r line; do
	$line
	echo "KSYNC-SPRITE-RC $?"
done < /sprite.list
echo KSYNC-SPRITE-RUN-END
poweroff -f
"""


def build(repo: Path) -> Path:
    """The program, built with musl (Debian's musl-tools) into build/user-bench/."""
    if not userprogs.have_musl():
        raise RuntimeError("musl (Debian musl-tools) is missing: run scripts/deps.sh")
    return userprogs.build_program(repo / SRC, repo / EXE)


def copies(bench: str, smp: int) -> int:
    return 2 * smp if bench in FIXED else smp


def commands(exe_path: str, smp: int, mult: float = 1.0,
             benches: tuple[str, ...] = BENCHES) -> list[list[str]]:
    """One command line per benchmark (the program at ``exe_path`` in the guest)."""
    return [[exe_path, "run", b, str(copies(b, smp)), str(max(1, round(SCALES[b] * mult))),
             WORKDIR] for b in benches]


def _json_after(line: str, prefix: str) -> dict | None:
    try:
        obj = json.loads(line[len(prefix):])
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def lock_delta(before: dict, after: dict) -> dict[str, dict[str, int]]:
    """class -> what the benchmark added to each counter (LOCK_FIELDS), for the classes
    whose counts changed; a class absent before counted from zero."""
    def by_class(snap: dict) -> dict[str, dict]:
        return {c.get("class"): c for c in snap.get("classes") or []
                if isinstance(c, dict) and isinstance(c.get("class"), str)}
    b, a = by_class(before or {}), by_class(after or {})
    out: dict[str, dict[str, int]] = {}
    for name, row in a.items():
        d = {f: int(row.get(f) or 0) - int((b.get(name) or {}).get(f) or 0) for f in LOCK_FIELDS}
        d["kind"], d["use"] = row.get("kind"), row.get("use")
        # instances the kernel created at run time so far (cumulative, not a difference):
        # more than one marks a lock per object; None from a kernel that does not say
        d["created"] = int(row["created"]) if isinstance(row.get("created"), int) else None
        if any(d[f] for f in LOCK_FIELDS):
            out[name] = d
    return out


def parse(text: str) -> tuple[dict[str, dict], dict[str, dict], list[str]]:
    """(bench -> its row {copies, scale, ops, elapsed_ns}, bench -> lock deltas, the
    program's error lines) from the program's output; hackbench's ``Time: S`` as the row
    ``hackbench``."""
    rows: dict[str, dict] = {}
    locks: dict[str, dict] = {}
    errors: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Time:"):
            try:
                secs = float(line.split()[1])
            except (IndexError, ValueError):
                continue
            rows["hackbench"] = {"copies": 1, "scale": 1, "ops": 1,
                                 "elapsed_ns": int(secs * 1e9), "args": " ".join(HB_ARGS)}
        elif line.startswith("KSYNC-SPRITE {"):
            row = _json_after(line, "KSYNC-SPRITE ")
            if row and isinstance(row.get("bench"), str):
                rows[row.pop("bench")] = row
        elif line.startswith("KSYNC-SPRITE-LOCKS {"):
            row = _json_after(line, "KSYNC-SPRITE-LOCKS ")
            if row and isinstance(row.get("bench"), str):
                locks[row["bench"]] = lock_delta(row.get("before") or {}, row.get("after") or {})
                if isinstance((row.get("after") or {}).get("mode"), str):
                    locks[row["bench"]]["_mode"] = row["after"]["mode"]
                if isinstance((row.get("after") or {}).get("tsc_hz"), int):
                    locks[row["bench"]]["_tsc_hz"] = row["after"]["tsc_hz"]
        elif line.startswith("sprite: "):
            errors.append(line)
    return rows, locks, errors


def _record(kernel: str, smp: int, rnd: int, env: str) -> dict:
    return {"kernel": kernel, "smp": smp, "round": rnd, "env": env, "ok": False,
            "reason": "", "rows": {}, "locks": {}, "errors": [], "wall_s": None}


def _finish(rec: dict, text: str, benches: tuple[str, ...]) -> dict:
    rec["rows"], rec["locks"], rec["errors"] = parse(text)
    missing = [b for b in benches if b not in rec["rows"]]
    if not rec["reason"] and missing:
        rec["reason"] = (f"no result for {', '.join(missing)}"
                         + (f" ({rec['errors'][0]})" if rec["errors"] else ""))
    rec["ok"] = not rec["reason"]
    return rec


def ksync_initrd(exe: Path, out: Path, cmds: list[list[str]]) -> Path:
    """/t/sprite, /t/list (the commands, then hackbench when rt-tests is installed) and
    Debian's hackbench with its libraries and loader."""
    rt = dynlibs.rt_tests_entries()
    if rt:
        cmds = [*cmds, ["/usr/bin/hackbench", *HB_ARGS]]
    entries = [Entry("t", stat.S_IFDIR | 0o755), Entry("tmp", stat.S_IFDIR | 0o777),
               Entry("t/sprite", stat.S_IFREG | 0o755, exe.read_bytes()),
               Entry("t/list", stat.S_IFREG | 0o644,
                     "".join(" ".join(c) + "\n" for c in cmds).encode())]
    entries += [e for e in rt if not e.name.startswith(("t/", "tmp"))]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, write_newc(entries))
    return out


def kernel_name(locks: str | None) -> str:
    return f"ksync-{locks}" if locks else "ksync"


def run_ksync(repo: Path, exe: Path, smp: int, mult: float = 1.0, accel: str = "tcg",
              timeout: int = 900, rnd: int = 0, benches: tuple[str, ...] = BENCHES,
              append: tuple[str, ...] = ("lockstat=counts",), locks: str | None = None) -> dict:
    rec = _record(kernel_name(locks), smp, rnd, accel)
    # the statistics' mode of this boot: "timing" boots feed the saturation projection
    # only (their clock reads lengthen the sections they measure), never the elapsed tables
    rec["lockstat"] = next((w.split("=", 1)[1] for w in append if w.startswith("lockstat=")),
                           None)
    if locks:
        append = (*append, f"locks={locks}")
    cmds = commands("/t/sprite", smp, mult, benches)
    rd = ksync_initrd(exe, repo / "build" / "user-bench" / f"sprite-{smp}.cpio", cmds)
    want = (*benches, "hackbench") if dynlibs.have_rt_tests() else benches
    t0 = time.monotonic()
    res = qemu.boot(qemu.BootConfig(repo=repo, mode="user", smp=smp, accel=accel,
                                    timeout=timeout, initrd=rd,
                                    append=["user=@/t/list", "epoch=1700000000", *append]))
    rec["wall_s"] = round(time.monotonic() - t0, 2)
    cases = userprogs.parse_user_ktap(res.lines)
    text = "\n".join(c.out.decode("utf-8", "replace") for c in cases)
    if not res.passed:
        # the kernel's own word first (a refused command-line word: "ksync: mode=user: ...")
        said = [ln.strip() for ln in res.lines if ln.strip().startswith("ksync: mode=user: ")]
        rec["reason"] = said[-1] if said else \
            (qemu.failure_report(res).splitlines() or ["no output"])[0]
    return _finish(rec, text, want)


def run_linux(image: linuxguest.GuestImage, exe: Path, smp: int, mult: float = 1.0,
              accel: str = "tcg", timeout: int = 900, rnd: int = 0,
              work: Path = Path("build/user-bench"),
              benches: tuple[str, ...] = BENCHES) -> dict:
    rec = _record(f"linux-{image.flavour}", smp, rnd, accel)
    cmds = commands("/sprite", smp, mult, benches) + [["/usr/bin/hackbench", *HB_ARGS]]
    entries = [Entry("init", stat.S_IFREG | 0o755, LINUX_INIT.encode()),
               Entry("sprite", stat.S_IFREG | 0o755, exe.read_bytes()),
               Entry("sprite.list", stat.S_IFREG | 0o644,
                     "".join(" ".join(c) + "\n" for c in cmds).encode())]
    t0 = time.monotonic()
    out, rec["reason"], rec["log"] = osprimsrun.linux_boot(image, entries, "", smp, accel,
                                                           timeout, "sprite", work)
    rec["wall_s"] = round(time.monotonic() - t0, 2)
    release = osprimsrun.kernel_release(out)
    if release:
        rec["kernel_release"] = release
    body = out.split(MARK_BEGIN, 1)[1] if MARK_BEGIN in out else ""
    if not rec["reason"] and MARK_END not in body:
        rec["reason"] = f"the guest's output ended before the last benchmark (serial log: {rec['log']})"
    return _finish(rec, body.split(MARK_END, 1)[0], (*benches, "hackbench"))


def collect(repo: Path, smps: list[int], rounds: int, linux: list[str], mult: float = 1.0,
            accel: str = "tcg", log: Callable[[str], None] = print,
            meta: dict | None = None, benches: tuple[str, ...] = BENCHES,
            locks: list[str | None] | None = None,
            timing: list[str | None] | None = None) -> dict:
    """The runs, interleaved: for each round and CPU count, ksync under each lock
    configuration (``locks``; [None]: the build's default), then each Linux; then, for the
    saturation projection, ksync under each configuration in ``timing`` once more with
    ``lockstat=timing`` (the locks' hold times)."""
    configs = locks or [None]
    exe = build(repo)
    images, missing = linuxguest.prepare_each(linux, repo / linuxguest.DEFAULT_CACHE, log,
                                              "ksync sprite-user")
    runs = []
    for rnd in range(rounds):
        for smp in smps:
            for cfg in configs:
                log(f"ksync sprite-user: round {rnd + 1}/{rounds}, {smp} CPU(s): "
                    f"{kernel_name(cfg)}")
                runs.append(run_ksync(repo, exe, smp, mult, accel, rnd=rnd, benches=benches,
                                      locks=cfg))
            for flavour, image in images.items():
                log(f"ksync sprite-user: round {rnd + 1}/{rounds}, {smp} CPU(s): linux-{flavour}")
                runs.append(run_linux(image, exe, smp, mult, accel, rnd=rnd,
                                      work=repo / "build" / "user-bench", benches=benches))
            for cfg in timing or []:
                log(f"ksync sprite-user: round {rnd + 1}/{rounds}, {smp} CPU(s): "
                    f"{kernel_name(cfg)}, lockstat=timing (the projection's hold times)")
                runs.append(run_ksync(repo, exe, smp, mult, accel, rnd=rnd, benches=benches,
                                      locks=cfg, append=("lockstat=timing",)))
    return {"schema": SCHEMA, "meta": dict(meta or {}),
            "options": {"smp": smps, "rounds": rounds, "linux": linux, "mult": mult,
                        "accel": accel, "scales": {b: SCALES[b] for b in benches},
                        "benches": list(benches), "linux_missing": missing,
                        "locks": [kernel_name(c) for c in configs],
                        "timing": [kernel_name(c) for c in timing or []]},
            "runs": runs}
