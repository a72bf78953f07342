"""Hohmuth & Härtig's Table 1 with a user-mode handler (the papers' experiments on real programs): Debian's cyclictest
(the same dynamically linked binary) on ksync under each lock configuration and on Debian's
Linux guests (PREEMPT_RT and standard), with the same options, the same load and the same
QEMU machine options, the kernels interleaved round by round.

* ``run_ksync(...)`` boots ksync in user mode with busybox, Debian's rt-tests and
  ``KSYNC_SCRIPT``: the Linux guest's /init (``linuxguest.INIT_SCRIPT``) without its mounts
  and power-off - the same load block (hackbench and dd loops at nice 19, checked equal
  by the tests), the same cyclictest command (``linuxguest.cyclictest_options``), the same
  markers - so ``linuxguest``'s parser and summary read both kernels' output.
* Linux runs are ``linuxguest.run`` with ksync's QEMU options (``ksync_qemu_base``).
* ``collect(...)`` returns the results record (``CYCLICUSER_JSON``) that
  ``cyclicuserreport`` turns into the table and its findings; ``collect(icount=ICOUNT)``
  runs every guest under QEMU's -icount (virtual time: the guest clock counts
  instructions, so host load and the host's scheduling of QEMU do not reach the figures),
  one CPU (``check_icount``). ``merge`` joins a wall-clock and an -icount record: each run
  carries its ``env`` (tcg, tcg-icount) and ``smp``, and the report gives each pair its own
  table and findings.

Inputs (not measured): the period (-i), the duration (-D), the load, and ksync's clock rate
``hz``: ksync's timed sleep wakes at its periodic tick (kernel/sched/timer.c), Linux's at a
one-shot hrtimer, so ksync's latency is bounded below by up to one tick - the table says
which ``hz`` each run used. cyclictest's -S pins a thread per CPU with sched_setaffinity,
which ksync accepts and does not apply to a live thread (docs/userspace.md): on ksync the
threads may share a CPU.
"""
from __future__ import annotations

import re
import stat
import time
from pathlib import Path
from typing import Callable

from . import busybox, dynlibs, linuxguest, qemu, userprogs
from .cpio import Entry
from .util import UsageError, write_atomic

CYCLICUSER_JSON = "cyclicuser.json"
SCHEMA = "ksync-cyclicuser-1"
LOCK_CONFIGS = ("sprite", "sprite-fix", "synthesis", "fiasco")
DEFAULT_HZ = 4000       # ksync's clock: one tick per 250 us, cyclictest's default period
# busybox applets the script runs by name, beyond busybox.APPLETS
APPLETS = ("renice", "dd", "nproc", "kill", "sleep")

_LOAD_BEGIN = 'if [ "$load" != 0 ]; then'


def load_block(script: str) -> str:
    """The script's load block: from its ``if [ "$load" != 0 ]`` line to the ``fi``."""
    i = script.index(_LOAD_BEGIN)
    j = script.index("\nfi\n", i)
    return script[i:j + 4]


# Linux's /init with ksync's differences: no mounts (ksync's /proc, /dev, /dev/shm are
# there at boot), no /proc/loadavg, no power-off (the user list ends the boot)
KSYNC_SCRIPT = r"""export PATH=/bin:/usr/bin
seconds=@SECONDS@ interval=@INTERVAL@ buckets=@BUCKETS@ spikes=@SPIKES@ load=@LOAD@
up() { read u i </proc/uptime; echo $u; }
nodes=$((spikes * $(nproc)))
echo "KSYNC-LINUX-INFO uptime=$(up) cpus=$(nproc) realtime=0 clocksource=tick" \
	"seconds=$seconds interval=$interval buckets=$buckets spike_nodes=$nodes load=$load"
""" + load_block(linuxguest.INIT_SCRIPT) + r"""echo "KSYNC-LINUX-BEGIN uptime=$(up)"
cyclictest -m -S -p 95 -i "$interval" -D "$seconds" -q -h "$buckets" \
	--spike=$((buckets - 1)) --spike-nodes=$nodes >/tmp/cyclictest.out 2>&1
rc=$?
kill -9 -1 2>/dev/null
echo "KSYNC-LINUX-STOP uptime=$(up)"
grep -v -E '^[0-9]+([[:space:]]+0+)+[[:space:]]*$' /tmp/cyclictest.out
echo "KSYNC-LINUX-RC $rc"
echo KSYNC-LINUX-END
"""


def ksync_script(seconds: int, interval_us: int, buckets: int, load: bool) -> str:
    return (KSYNC_SCRIPT.replace("@SECONDS@", str(int(seconds)))
            .replace("@INTERVAL@", str(int(interval_us)))
            .replace("@BUCKETS@", str(int(buckets)))
            .replace("@SPIKES@", str(linuxguest.spike_nodes(seconds, interval_us, buckets)))
            .replace("@LOAD@", "1" if load else "0"))


def kernel_name(locks: str | None) -> str:
    return f"ksync-{locks}" if locks else "ksync"


def late_periods(res: dict, interval_us: int) -> int | None:
    """Samples at least one period late (latency >= the period: the next wakeup was due
    before this one ran), from the histogram with the overflows' values."""
    hist = res.get("hist_us")
    if not isinstance(hist, dict) or not res.get("samples"):
        return None
    late = sum(int(c) for b, c in hist.items() if int(b) >= int(interval_us))
    # overflows without a value (spike list full) are past the histogram: late too
    return late + max(0, int(res.get("overflows") or 0) - int(res.get("overflow_values") or 0))


# QEMU's -icount value for the virtual-time runs (docs/fiasco.md: the value linuxguest's
# measurements found to boot Debian's Linux, one CPU; host load does not reach the figures)
ICOUNT = "shift=4,align=off,sleep=on"
# ksync's clock in the -icount part: its timed sleeps wake at the tick, and under -icount a
# 50 us tick costs instructions, not host time (under wall-clock TCG at 20000 Hz ksync
# missed most periods: 9-18 thousand samples of 80 thousand, 2 CPUs)
ICOUNT_HZ = 20000


def icount_spec(icount: str | int | None) -> str | None:
    """QEMU's -icount value: None (wall-clock), an int N (shift=N) or the value itself."""
    if icount is None:
        return None
    return f"shift={icount}" if str(icount).isdigit() else str(icount)


def env_name(accel: str, icount: str | int | None) -> str:
    """A run's QEMU configuration as the report names it: tcg, tcg-icount, kvm."""
    return f"{accel}-icount" if icount is not None else accel


def check_icount(smp: int, accel: str, icount: str | int | None) -> None:
    """-icount needs TCG and one CPU: QEMU 7.2 has no icount with multi-threaded TCG, and
    Debian's Linux 6.1 hangs bringing up CPU 1 under it (linuxguest.py's notes)."""
    if icount is None:
        return
    if accel != "tcg":
        raise UsageError(f"-icount needs the tcg accelerator (asked: {accel})")
    if smp != 1:
        raise UsageError(f"-icount runs one CPU (asked: {smp}): Debian's Linux 6.1 hangs "
                         "bringing up CPU 1 under -icount, and both kernels run the same QEMU "
                         "configuration")


def run_ksync(repo: Path, smp: int, seconds: int, interval_us: int = 250,
              buckets: int = linuxguest.BUCKETS, load: bool = True, locks: str | None = None,
              hz: int = DEFAULT_HZ, accel: str = "tcg", timeout: int | None = None,
              rnd: int = 0, icount: str | None = None) -> dict:
    res = linuxguest.empty_result(kernel_name(locks), seconds=seconds,
                                   interval_us=interval_us, buckets=buckets, load=bool(load),
                                   notes=[], hz=hz, smp=smp, round=rnd,
                                   env=env_name(accel, icount))
    res["kernel"] = f"{kernel_name(locks)} (hz={hz})"
    res["icount"] = icount_spec(icount)
    if not busybox.have_busybox() or not dynlibs.have_rt_tests():
        res["reason"] = "busybox-static and rt-tests are needed (scripts/deps.sh)"
        return res
    extra = dynlibs.rt_tests_entries() + [Entry(f"bin/{a}", stat.S_IFLNK | 0o777, b"busybox")
                                          for a in APPLETS if a not in busybox.APPLETS]
    rd = repo / "build" / "user-bench" / f"cyclic-{smp}.cpio"
    rd.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(rd, busybox.initramfs(f"{busybox.BUSYBOX} sh /t/sh/rt.sh\n",
                                       {"rt": ksync_script(seconds, interval_us, buckets, load)},
                                       extra))
    append = ["user=@/t/list", "epoch=1700000000", f"hz={int(hz)}"] + \
        ([f"locks={locks}"] if locks else [])
    t0 = time.monotonic()
    boot = qemu.boot(qemu.BootConfig(repo=repo, mode="user", smp=smp, accel=accel,
                                     timeout=timeout or int(60 + 3 * seconds), initrd=rd,
                                     append=append, icount=icount_spec(icount)))
    res["wall_s"] = round(time.monotonic() - t0, 2)
    cases = userprogs.parse_user_ktap(boot.lines)
    lines = cases[0].out.decode("utf-8", "replace").splitlines() if cases else []
    for line in lines:
        if line.startswith(linuxguest.MARK_INFO + " "):
            res["info"] = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
        elif line.startswith(linuxguest.MARK_RC + " "):
            try:
                res["cyclictest_rc"] = int(line.split()[1])
            except (IndexError, ValueError):
                pass
    body = linuxguest.between(lines, linuxguest.MARK_BEGIN, linuxguest.MARK_END)
    if body:
        res.update(linuxguest.summarize(linuxguest.parse_cyclictest(body), buckets))
    said = [ln.strip() for ln in boot.lines if ln.strip().startswith("ksync: mode=user: ")]
    cut = [ln.strip() for ln in boot.lines if "out-truncated" in ln]
    if said:
        res["reason"] = said[-1]
    elif cut:
        res["reason"] = ("the script's output passed ksync's capture of a command's output "
                         f"(kernel/proc/urun.c OUT_CAP: {cut[0].split('out-truncated:')[-1].strip()})")
    elif not boot.passed and not body:
        res["reason"] = (qemu.failure_report(boot).splitlines() or ["no output"])[0]
    elif res.get("cyclictest_rc") != 0:
        res["reason"] = f"cyclictest exited {res.get('cyclictest_rc')}: " + \
            " / ".join(l for l in body if not re.match(r"^\d", l))[:300]
    elif not res.get("samples"):
        res["reason"] = "cyclictest printed no histogram"
    res["late_periods"] = late_periods(res, interval_us)
    res["ok"] = res["reason"] is None
    return res


def run_linux(image: linuxguest.GuestImage, smp: int, seconds: int, interval_us: int = 250,
              buckets: int = linuxguest.BUCKETS, load: bool = True, accel: str = "tcg",
              rnd: int = 0, log_dir: Path | None = linuxguest.DEFAULT_LOG_DIR,
              icount: str | None = None) -> dict:
    res = linuxguest.run(image, linuxguest.ksync_qemu_base(smp, accel, icount_spec(icount)),
                         seconds, interval_us, buckets, load, log_dir=log_dir)
    res.update(smp=smp, round=rnd, env=env_name(accel, icount), hz=None,
               icount=icount_spec(icount))
    res["late_periods"] = late_periods(res, interval_us)
    res["flavour"] = f"linux-{image.flavour}"
    return res


def collect(repo: Path, smp: int, rounds: int, seconds: int, linux: list[str],
            locks: list[str | None], hz: int = DEFAULT_HZ, interval_us: int = 250,
            load: bool = True, accel: str = "tcg", log: Callable[[str], None] = print,
            meta: dict | None = None, icount: str | None = None) -> dict:
    """The runs, interleaved: for each round, ksync under each configuration, then each
    Linux guest. icount: QEMU's -icount value for every guest (``ICOUNT``; one CPU only:
    ``check_icount``), or None for wall-clock TCG."""
    check_icount(smp, accel, icount)
    env = env_name(accel, icount)
    images, missing = linuxguest.prepare_each(linux, repo / linuxguest.DEFAULT_CACHE, log,
                                              "ksync cyclic-user")
    runs = []
    for rnd in range(rounds):
        for cfg in locks:
            log(f"ksync cyclic-user: round {rnd + 1}/{rounds}: {kernel_name(cfg)}, hz={hz}, {env}")
            r = run_ksync(repo, smp, seconds, interval_us, load=load, locks=cfg, hz=hz,
                          accel=accel, rnd=rnd, icount=icount)
            r["flavour"] = kernel_name(cfg)
            runs.append(r)
        for flavour, image in images.items():
            log(f"ksync cyclic-user: round {rnd + 1}/{rounds}: linux-{flavour}, {env}")
            runs.append(run_linux(image, smp, seconds, interval_us, load=load, accel=accel,
                                  rnd=rnd, log_dir=repo / linuxguest.DEFAULT_LOG_DIR,
                                  icount=icount))
    return {"schema": SCHEMA, "meta": dict(meta or {}),
            "options": {"smp": smp, "rounds": rounds, "seconds": seconds, "hz": hz,
                        "interval_us": interval_us, "load": load, "accel": accel,
                        "icount": icount_spec(icount),
                        "linux": linux, "linux_missing": missing,
                        "locks": [kernel_name(c) for c in locks]},
            "runs": runs}


def merge(*records: dict) -> dict:
    """Several collect() records (e.g. wall-clock and -icount) as one: the first record's
    options, every record's runs (each names its env and smp), and each record's options
    under ``options["parts"]``."""
    recs = [r for r in records if r]
    if not recs:
        raise ValueError("merge: no record")
    out = dict(recs[0])
    out["options"] = dict(recs[0]["options"], parts=[r["options"] for r in recs])
    out["runs"] = [run for r in recs for run in r["runs"]]
    return out
