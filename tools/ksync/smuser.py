"""Small & Manley's Tables 3 and 4 and Figure 1 under real programs: the
Andrew-like and WebStone-like loads (bench/user/smload.c, one static musl binary) on ksync,
its critical sections counted by the kernel itself under each interrupt-masking scheme.

* The kernel: each scheme's KSYNC_WINDOWS build (``make WINDOWS=1 SCHEME=<s> kernel``),
  whose critical-section census (kernel/include/spl.h) counts every outermost
  crit_enter..crit_leave section on every CPU - how many, their TSC ticks, a log2 histogram
  of their durations, and those during which a scheme source's interrupt arrived (deferred
  by an optimistic section, held by the hardware in a pessimistic one) - and shows the
  totals in /proc/ksync-critsec. The kernel's master locks of the process, memory, file and
  tty layers take that section (mlock_lock), as BSD's spl sections did (docs/locks.md).
* The program: smload reads /proc/ksync-critsec before and after each timed part (Andrew's
  five phases, WebStone's run) and prints both (``KSYNC-SMLOAD-CRITSEC``); a part's figures
  are the differences, its rate is per second of the part's own elapsed time (the
  program's CLOCK_MONOTONIC).
* ``collect(...)`` boots each scheme ``rounds`` times, the schemes interleaved round by
  round, and returns the results record (``SMUSER_JSON``) that ``smuserreport`` turns into
  the tables, the figure and the findings.

Inputs (not measured): the loads' sizes (Andrew's SCALE; WebStone's clients and requests),
the CPU count (1: the paper's uniprocessor), ksync's clock (1000 Hz, its only periodic
interrupt here; the console's serial line is quiet). Not built: the serial line at
115.2 kbit/s during the loads (the paper's fourth workload), and Table 6's model against a
measured synchronization time. Under TCG a duration is what the emulator makes the
section's code cost (the census's two rdtsc included): compare the schemes' ratios, not
the paper's microseconds.
"""
from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path
from typing import Callable

from . import qemu, schemes, userprogs
from .cpio import Entry, write_newc
from .util import UsageError, write_atomic

SMUSER_JSON = "smuser.json"
SCHEMA = "ksync-smuser-1"
SRC = Path("bench") / "user" / "smload.c"
EXE = Path("build") / "user-bench" / "smload"
ROW = "KSYNC-SMLOAD "
CENSUS = "KSYNC-SMLOAD-CRITSEC "
# the paper's Table 3 kernel (cli-pessim) and Table 4 kernel (spl-optim) first
DEFAULT_SCHEMES = ("spl-optim", "cli-pessim")
ANDREW_SCALE = 2
WEB_CLIENTS, WEB_REQUESTS = 4, 400


def check_schemes(names: list[str]) -> list[str]:
    bad = [s for s in names if s not in schemes.SCHEMES]
    if bad:
        raise UsageError(f"unknown scheme(s) {', '.join(bad)}: the schemes are "
                         + ", ".join(schemes.SCHEMES))
    return list(dict.fromkeys(names))


def build(repo: Path, names: list[str], log: Callable[[str], None] = print) -> None:
    """Each scheme's census kernel (KSYNC_WINDOWS build) and the program."""
    for s in names:
        log(f"ksync sm-user: make WINDOWS=1 SCHEME={s} kernel")
        r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "WINDOWS=1",
                            f"SCHEME={s}", "kernel"], cwd=repo, capture_output=True, text=True)
        if r.returncode:
            raise UsageError(f"make WINDOWS=1 SCHEME={s} kernel failed:\n"
                             + (r.stdout + r.stderr)[-2000:])


def commands(scale: int, clients: int, requests: int) -> list[list[str]]:
    return [["andrew", "/tmp/a", str(scale)], ["webstone", str(clients), str(requests), "/tmp/w"]]


def census_delta(before: dict, after: dict) -> dict | None:
    """A part's census: the differences of two /proc/ksync-critsec readings; None if the
    kernel has no census (``"census": false``) or the readings do not fit."""
    if not (isinstance(before, dict) and isinstance(after, dict)) or \
            not before.get("census") or not after.get("census"):
        return None
    try:
        d = {k: int(after[k]) - int(before[k]) for k in ("sections", "ticks", "interrupted")}
        d["hist_log2"] = [int(a) - int(b) for a, b in zip(after["hist_log2"],
                                                           before["hist_log2"])]
        d["tsc_hz"] = int(after["tsc_hz"])
    except (KeyError, TypeError, ValueError):
        return None
    if min(d["sections"], d["ticks"], d["interrupted"], *d["hist_log2"]) < 0:
        return None     # a counter went back: not one boot's readings
    return d


def parse_output(text: str) -> tuple[list[dict], list[str]]:
    """The parts of one smload run's output: each timed part's row (load, phase, ops,
    elapsed_ns) with its census (``census_delta``) when the kernel printed one; and the
    problems found (a row without its census, a census without its row, bad JSON)."""
    rows, census, problems = [], {}, []
    for line in text.splitlines():
        try:
            if line.startswith(CENSUS):
                c = json.loads(line[len(CENSUS):])
                census[(c.get("load"), c.get("phase"))] = census_delta(c.get("before"),
                                                                       c.get("after"))
            elif line.startswith(ROW):
                rows.append(json.loads(line[len(ROW):]))
        except json.JSONDecodeError:
            problems.append(f"not JSON: {line[:120]}")
    parts = []
    for r in rows:
        phase = r.get("phase") or "run"
        if phase == "total":
            continue
        key = (r.get("load"), phase)
        part = {"load": r.get("load"), "phase": phase, "ops": r.get("ops"),
                "elapsed_ns": r.get("elapsed_ns"), "census": census.pop(key, None)}
        if part["census"] is None:
            problems.append(f"{key[0]} {key[1]}: no census (is this a WINDOWS=1 build?)")
        parts.append(part)
    problems += [f"{k[0]} {k[1]}: a census without its row" for k in census]
    return parts, problems


def run_ksync(repo: Path, scheme: str, smp: int = 1, scale: int = ANDREW_SCALE,
              clients: int = WEB_CLIENTS, requests: int = WEB_REQUESTS, accel: str = "tcg",
              rnd: int = 0, timeout: int = 600) -> dict:
    res = {"scheme": scheme, "round": rnd, "smp": smp, "env": accel, "ok": False,
           "reason": None, "parts": []}
    exe = userprogs.build_program(repo / SRC, repo / EXE)
    cmds = commands(scale, clients, requests)
    rd = repo / "build" / "user-bench" / "smuser.cpio"
    write_atomic(rd, write_newc([
        Entry("t", stat.S_IFDIR | 0o755), Entry("tmp", stat.S_IFDIR | 0o777),
        Entry("t/smload", stat.S_IFREG | 0o755, exe.read_bytes()),
        Entry("t/list", stat.S_IFREG | 0o644,
              "".join("/t/smload " + " ".join(c) + "\n" for c in cmds).encode())]))
    t0 = time.monotonic()
    boot = qemu.boot(qemu.BootConfig(repo=repo, mode="user", smp=smp, accel=accel,
                                     timeout=timeout, initrd=rd, windows=True,
                                     scheme=None if scheme == schemes.DEFAULT_SCHEME else scheme,
                                     append=["user=@/t/list", "epoch=1700000000"]))
    res["wall_s"] = round(time.monotonic() - t0, 2)
    cases = userprogs.parse_user_ktap(boot.lines)
    problems = []
    for case, cmd in zip(cases, cmds):
        if case.status != 0:
            problems.append(f"smload {' '.join(cmd)} exited {case.status}")
        parts, bad = parse_output(case.out.decode("utf-8", "replace"))
        res["parts"] += parts
        problems += bad
    if len(cases) != len(cmds):
        problems.append(f"{len(cases)} of {len(cmds)} commands reported"
                        + ("" if boot.passed else ": "
                           + (qemu.failure_report(boot).splitlines() or ["no output"])[0]))
    res["reason"] = "; ".join(problems) or None
    res["ok"] = res["reason"] is None
    return res


def collect(repo: Path, names: list[str], rounds: int, smp: int = 1,
            scale: int = ANDREW_SCALE, clients: int = WEB_CLIENTS,
            requests: int = WEB_REQUESTS, accel: str = "tcg",
            log: Callable[[str], None] = print, meta: dict | None = None) -> dict:
    """Every scheme's boot, round by round (the schemes interleaved)."""
    names = check_schemes(names)
    runs = []
    for rnd in range(rounds):
        for s in names:
            log(f"ksync sm-user: round {rnd + 1}/{rounds}: {s}, {smp} CPU(s), {accel}")
            runs.append(run_ksync(repo, s, smp, scale, clients, requests, accel, rnd))
            if not runs[-1]["ok"]:
                log(f"ksync sm-user: {s} round {rnd + 1} failed: {runs[-1]['reason']}")
    return {"schema": SCHEMA, "meta": dict(meta or {}),
            "options": {"schemes": names, "rounds": rounds, "smp": smp, "accel": accel,
                        "andrew_scale": scale, "web_clients": clients,
                        "web_requests": requests},
            "runs": runs}
