"""The OS-primitives table's runs: one static binary (bench/user/osprims.c, musl) on ksync
and on Debian's Linux in the same QEMU configuration, interleaved round by round.

* ``build(repo)`` builds the program (build/user-bench/osprims).
* ``run_ksync(repo, exe, smp, ...)`` boots ksync in user mode with the program (and
  Debian's busybox as /bin/sh, for the ``sh -c true`` row) in its initramfs.
* ``run_linux(image, exe, smp, ...)`` boots a Linux guest image of ``linuxguest`` with the
  same machine options (``linuxguest.ksync_qemu_base``): the image's own initramfs with a
  second archive appended (Linux unpacks concatenated archives, later files replacing
  earlier ones) holding the program and an ``/init`` that runs it and powers off.
* ``parse(text)`` reads the program's ``OSPRIM`` lines; ``hackbench_row(text)`` the
  ``Time:`` line of Debian's hackbench (rt-tests: the same binary on both kernels, run
  after the program: ``hackbench -p -g HB_GROUPS -l HB_LOOPS``), as one more row.
* ``collect(...)`` runs the rounds and returns the results record (``OSPRIMS_JSON``) that
  ``osprimsreport`` turns into the table and its finding.

Every run record: kernel (``ksync`` or ``linux-std`` / ``linux-rt``), smp, round, ok,
reason, rows (name -> the program's row), wall_s, env (``tcg`` / ``kvm``). A run that fails
is recorded with its reason, never raised.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import busybox, dynlibs, linuxguest, qemu, userprogs
from .cpio import Entry, write_newc
from .util import write_atomic

SRC = Path("bench/user/osprims.c")
EXE = Path("build/user-bench/osprims")
OSPRIMS_JSON = "osprims.json"
SCHEMA = "ksync-osprims-1"
# hackbench in process mode over pipes: 2 groups of 20 senders and 20 receivers, 100
# messages each (about a second under TCG)
HB_GROUPS, HB_LOOPS = 2, 300
HB_ARGS = ["-p", "-g", str(HB_GROUPS), "-l", str(HB_LOOPS)]
MARK_BEGIN = "KSYNC-OSPRIMS-BEGIN"
MARK_END = "KSYNC-OSPRIMS-END"
# the guest's /init for this run: the program from /, its output between the markers
LINUX_INIT = r"""#!/bin/sh
export PATH=/bin:/usr/bin
mount -t proc proc /proc
mount -t devtmpfs devtmpfs /dev 2>/dev/null
batches=5 scale=1
for w in $(cat /proc/cmdline); do
	case "$w" in
	kt.batches=*) batches=${w#kt.batches=} ;;
	kt.scale=*) scale=${w#kt.scale=} ;;
	esac
done
echo "KSYNC-LINUX-UNAME $(uname -a)"
cd /
echo KSYNC-OSPRIMS-BEGIN
/osprims "$batches" "$scale"
echo "KSYNC-OSPRIMS-RC $?"
[ -x /usr/bin/hackbench ] && /usr/bin/hackbench @HB_ARGS@ 2>&1
echo KSYNC-OSPRIMS-END
poweroff -f
""".replace("@HB_ARGS@", " ".join(HB_ARGS))


def build(repo: Path) -> Path:
    """The program, built with musl (Debian's musl-tools) into build/user-bench/."""
    if not userprogs.have_musl():
        raise RuntimeError("musl (Debian musl-tools) is missing: run scripts/deps.sh")
    return userprogs.build_program(repo / SRC, repo / EXE)


def parse(text: str) -> dict[str, dict]:
    """name -> the program's row ({unit, n, batches} or {error}), from its OSPRIM lines;
    a line that does not parse is left out (the row is then missing)."""
    rows: dict[str, dict] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("OSPRIM {"):
            continue
        try:
            row = json.loads(line[len("OSPRIM "):])
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("name"), str):
            rows[row.pop("name")] = row
    return rows


def hackbench_row(text: str) -> dict | None:
    """hackbench's ``Time: S`` as a row (seconds), None without one."""
    for line in text.splitlines():
        if line.startswith("Time:"):
            try:
                return {"unit": "s", "n": 1, "batches": [float(line.split()[1])],
                        "args": " ".join(HB_ARGS)}
            except (IndexError, ValueError):
                return None
    return None


def _complete(text: str) -> bool:
    return "OSPRIM-END" in text


def ksync_initrd(exe: Path, out: Path, batches: int, scale: int) -> Path:
    """/t/osprims, /bin/sh (busybox: its sh applet by name), Debian's hackbench with its
    libraries and loader (when rt-tests is installed) and /t/list running both."""
    listing = f"t/osprims {batches} {scale}\n"
    rt = dynlibs.rt_tests_entries()
    if rt:
        listing += "/usr/bin/hackbench " + " ".join(HB_ARGS) + "\n"
    entries = [Entry("t", stat.S_IFDIR | 0o755), Entry("bin", stat.S_IFDIR | 0o755),
               Entry("t/osprims", stat.S_IFREG | 0o755, exe.read_bytes()),
               Entry("t/list", stat.S_IFREG | 0o644, listing.encode())]
    if busybox.have_busybox():
        entries.append(Entry("bin/sh", stat.S_IFREG | 0o755,
                             Path(busybox.BUSYBOX).read_bytes()))
    entries += [e for e in rt if e.name != "bin/sh"]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, write_newc(entries))
    return out


def _record(kernel: str, smp: int, rnd: int, env: str) -> dict:
    return {"kernel": kernel, "smp": smp, "round": rnd, "env": env, "ok": False,
            "reason": "", "rows": {}, "wall_s": None}


def run_ksync(repo: Path, exe: Path, smp: int, batches: int = 5, scale: int = 1,
              accel: str = "tcg", timeout: int = 600, rnd: int = 0) -> dict:
    rec = _record("ksync", smp, rnd, accel)
    rd = ksync_initrd(exe, repo / "build" / "user-bench" / f"osprims-{smp}.cpio", batches, scale)
    t0 = time.monotonic()
    res = qemu.boot(qemu.BootConfig(repo=repo, mode="user", smp=smp, accel=accel,
                                    timeout=timeout, initrd=rd,
                                    append=["user=@/t/list", "epoch=1700000000"]))
    rec["wall_s"] = round(time.monotonic() - t0, 2)
    cases = userprogs.parse_user_ktap(res.lines)
    out = cases[0].out.decode("utf-8", "replace") if cases else ""
    rec["rows"] = parse(out)
    hb = hackbench_row(cases[1].out.decode("utf-8", "replace")) if len(cases) > 1 else None
    if hb:
        rec["rows"]["hackbench"] = hb
    if not res.passed or not _complete(out):
        rec["reason"] = (qemu.failure_report(res).splitlines() or ["no output"])[0] \
            if not res.passed else "the program's output ended early"
        return rec
    rec["ok"] = True
    return rec


def linux_initrd(image: linuxguest.GuestImage, entries: list[Entry], out: Path) -> Path:
    """The image's initramfs, then an archive of ``entries`` (this run's /init and programs)."""
    extra = write_newc(entries)
    base = Path(image.initramfs).read_bytes()
    # an uncompressed archive is looked for at a 4-byte boundary only (init/initramfs.c);
    # the zeros between are skipped
    base += b"\0" * (-len(base) % 4)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, base + extra)
    return out


def linux_boot(image: linuxguest.GuestImage, entries: list[Entry], append: str, smp: int,
               accel: str, timeout: int, tag: str, work: Path) -> tuple[str, str, str]:
    """Boot the guest image with ``entries`` appended to its initramfs, with ksync's QEMU
    machine options (``linuxguest.ksync_qemu_base``); returns (serial output, reason or
    "", the serial log's path). The log is kept under build/logs as every boot's is."""
    qemu_bin = shutil.which("qemu-system-x86_64")
    if not qemu_bin:
        return "", "qemu-system-x86_64 not found", ""
    rd = linux_initrd(image, entries, Path(work) / f"{tag}-linux-{image.flavour}.cpio")
    kernel = image.vmlinux or image.kernel
    cmd = [qemu_bin, *linuxguest.ksync_qemu_base(smp, accel), "-kernel", str(kernel),
           "-initrd", str(rd), "-append", f"{linuxguest.KERNEL_ARGS} {append}".strip(),
           *linuxguest.CONSOLE_OPTIONS]
    reason = ""
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           errors="replace", timeout=timeout)
        out = r.stdout
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        reason = f"timed out after {timeout} s"
    log = Path(work).parent / "logs" / \
        f"{time.strftime('%Y%m%d-%H%M%S')}-{tag}-linux-{image.flavour}-smp{smp}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("# " + " ".join(cmd) + "\n" + out)
    return out, reason, str(log)


def kernel_release(out: str) -> str | None:
    """The guest's ``uname -a`` line (the init scripts print it), None without one."""
    for line in out.splitlines():
        if line.startswith(linuxguest.MARK_UNAME + " "):
            return line.split(maxsplit=1)[1].strip()
    return None


def run_linux(image: linuxguest.GuestImage, exe: Path, smp: int, batches: int = 5,
              scale: int = 1, accel: str = "tcg", timeout: int = 600, rnd: int = 0,
              work: Path = Path("build/user-bench")) -> dict:
    rec = _record(f"linux-{image.flavour}", smp, rnd, accel)
    entries = [Entry("init", stat.S_IFREG | 0o755, LINUX_INIT.encode()),
               Entry("osprims", stat.S_IFREG | 0o755, exe.read_bytes())]
    t0 = time.monotonic()
    out, rec["reason"], log = linux_boot(image, entries,
                                         f"kt.batches={batches} kt.scale={scale}", smp,
                                         accel, timeout, "osprims", work)
    rec["wall_s"] = round(time.monotonic() - t0, 2)
    rec["log"] = log
    body = out.split(MARK_BEGIN, 1)[1] if MARK_BEGIN in out else ""
    body = body.split(MARK_END, 1)[0]
    rec["rows"] = parse(body)
    hb = hackbench_row(body)
    if hb:
        rec["rows"]["hackbench"] = hb
    release = kernel_release(out)
    if release:
        rec["kernel_release"] = release
    if not rec["reason"] and not _complete(body):
        rec["reason"] = f"the guest's output has no complete OSPRIM run (serial log: {log})"
    rec["ok"] = not rec["reason"]
    return rec


def collect(repo: Path, smps: list[int], rounds: int, linux: str | list[str] | None,
            batches: int, scale: int, accel: str = "tcg", log: Callable[[str], None] = print,
            meta: dict | None = None) -> dict:
    """The runs, interleaved: for each round and CPU count, ksync then each Linux guest
    (``linux``: a flavour, a list of them - std, rt - or None)."""
    exe = build(repo)
    flavours = [linux] if isinstance(linux, str) else list(linux or [])
    images, missing = linuxguest.prepare_each(flavours, repo / linuxguest.DEFAULT_CACHE, log,
                                              "ksync osprims")
    runs = []
    for rnd in range(rounds):
        for smp in smps:
            log(f"ksync osprims: round {rnd + 1}/{rounds}, {smp} CPU(s): ksync")
            runs.append(run_ksync(repo, exe, smp, batches, scale, accel, rnd=rnd))
            for flavour, image in images.items():
                log(f"ksync osprims: round {rnd + 1}/{rounds}, {smp} CPU(s): linux-{flavour}")
                runs.append(run_linux(image, exe, smp, batches, scale, accel, rnd=rnd,
                                      work=repo / "build" / "user-bench"))
    return {"schema": SCHEMA, "meta": dict(meta or {}),
            "options": {"smp": smps, "rounds": rounds, "linux": flavours or None,
                        "batches": batches, "scale": scale, "accel": accel,
                        "linux_missing": "; ".join(f"{k}: {v}" for k, v in missing.items()) or None},
            "runs": runs}
