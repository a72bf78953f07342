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

* The serial line (the paper's fourth workload, section 5.1, and its section 6.4): each
  round boots every scheme twice, once quiet and once with ``serial_load=115200``
  (kernel/dev/serial_load.c: the modelled 16550 receiving 11,520 characters a second, its
  interrupt the PIT at IPL_TTY through the scheme, trigger level 8), the two interleaved.
  smload reads /proc/ksync-serial beside the census, so each part also has the characters
  that arrived, were read and were lost, and the serial interrupts; the kernel's
  ``KSYNC {"kind":"serial_load"}`` row at the end carries the totals and the driver's
  check (gaps seen == lost), which a run must pass. The serial boots run once more under
  -icount (``ICOUNT``): guest time is then the instructions run, so the emulator's host
  stalls, which delay interrupts in wall-clock time, cannot lose characters there; a loss
  or a long window that remains is the kernel's own code.

Inputs (not measured): the loads' sizes (Andrew's SCALE; WebStone's clients and requests),
the CPU count (1: the paper's uniprocessor), ksync's clock (1000 Hz, its only periodic
interrupt in a quiet boot), the serial line's rate, character size and trigger level.
Modelled: the UART's arrival schedule and FIFO (the interrupt, its latency and the
per-character register read are real). Under TCG a duration is what the emulator makes
the section's code cost (the census's two rdtsc included): compare the schemes' ratios,
not the paper's microseconds.
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
SERIAL_BAUD = 115200    # the paper's serial-115.2 (8N1: 10 bits a character)
DEFAULT_SERIAL = (0, SERIAL_BAUD)   # each round: quiet, then the serial line running
# the serial boots once more under -icount (16 ns an instruction: 62.5 M a second, about
# half the paper's 120 MHz Pentium): guest time is then the instructions run, so a host
# stall of the emulator delays no interrupt in guest time - what remains is the kernel's
ICOUNT = "shift=4,align=off,sleep=on"


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


def serial_delta(before, after) -> dict | None:
    """A part's serial-line figures: the differences of two /proc/ksync-serial readings
    (characters arrived, read, lost; interrupts and those that found the FIFO overrun);
    None when the line was not running or the readings do not fit."""
    if not (isinstance(before, dict) and isinstance(after, dict)) or \
            not before.get("serial") or not after.get("serial"):
        return None
    try:
        d = {k: int(after[k]) - int(before[k])
             for k in ("arrived", "chars", "lost", "irqs", "lossy_irqs")}
        d["baud"], d["bits"] = int(after["baud"]), int(after["bits"])
        d["latency_max_tsc"] = int(after["latency_max_tsc"])    # since the line started
    except (KeyError, TypeError, ValueError):
        return None
    if min(d["arrived"], d["chars"], d["lost"], d["irqs"], d["lossy_irqs"]) < 0:
        return None
    return d


def parse_output(text: str) -> tuple[list[dict], list[str]]:
    """The parts of one smload run's output: each timed part's row (load, phase, ops,
    elapsed_ns) with its census (``census_delta``) when the kernel printed one, and its
    serial line's figures (``serial_delta``, None when the line did not run); and the
    problems found (a row without its census, a census without its row, bad JSON)."""
    rows, census, serial, problems = [], {}, {}, []
    for line in text.splitlines():
        try:
            if line.startswith(CENSUS):
                c = json.loads(line[len(CENSUS):])
                key = (c.get("load"), c.get("phase"))
                census[key] = census_delta(c.get("before"), c.get("after"))
                serial[key] = serial_delta(c.get("serial_before"), c.get("serial_after"))
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
                "elapsed_ns": r.get("elapsed_ns"), "census": census.pop(key, None),
                "serial": serial.pop(key, None)}
        if part["census"] is None:
            problems.append(f"{key[0]} {key[1]}: no census (is this a WINDOWS=1 build?)")
        parts.append(part)
    problems += [f"{k[0]} {k[1]}: a census without its row" for k in census]
    return parts, problems


def run_ksync(repo: Path, scheme: str, smp: int = 1, scale: int = ANDREW_SCALE,
              clients: int = WEB_CLIENTS, requests: int = WEB_REQUESTS, accel: str = "tcg",
              rnd: int = 0, timeout: int = 600, serial_baud: int = 0,
              icount: str | None = None) -> dict:
    """One boot of a scheme's census kernel running both loads; with ``serial_baud`` the
    serial line runs beside them (``serial_load=BAUD``); with ``icount`` the guest's clock
    is QEMU's instruction count (-icount: the host's stalls do not pass guest time)."""
    res = {"scheme": scheme, "round": rnd, "smp": smp, "env": accel, "ok": False,
           "reason": None, "parts": [], "serial_baud": serial_baud, "icount": icount}
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
                                     timeout=timeout, initrd=rd, windows=True, icount=icount,
                                     scheme=None if scheme == schemes.DEFAULT_SCHEME else scheme,
                                     append=["user=@/t/list", "epoch=1700000000"]
                                     + ([f"serial_load={serial_baud}"] if serial_baud else [])))
    res["wall_s"] = round(time.monotonic() - t0, 2)
    cases = userprogs.parse_user_ktap(boot.lines)
    problems = []
    for case, cmd in zip(cases, cmds):
        if case.status != 0:
            problems.append(f"smload {' '.join(cmd)} exited {case.status}")
        parts, bad = parse_output(case.out.decode("utf-8", "replace"))
        res["parts"] += parts
        problems += bad
        if serial_baud:
            problems += [f"{p['load']} {p['phase']}: no serial-line figures"
                         for p in parts if p["serial"] is None]
    # the longest window that held the BSP's clock (and any ISA line) back while the
    # programs ran, with the code that opened it (urun.c; the census builds track it)
    res["windows"] = next((o for o in boot.objects if o.get("kind") == "user_windows"), None)
    if serial_baud:
        # the kernel's totals at the end and the driver's check (kernel/dev/serial_load.c)
        tot = next((o for o in boot.objects if o.get("kind") == "serial_load"), None)
        res["serial_total"] = tot
        if tot is None:
            problems.append("no serial_load row (the line's totals) at the end")
        elif tot.get("check") != "ok":
            problems.append(f"the serial line's check failed: {json.dumps(tot)[:300]}")
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
            log: Callable[[str], None] = print, meta: dict | None = None,
            serial: tuple[int, ...] = DEFAULT_SERIAL, icount: str | None = ICOUNT) -> dict:
    """Every scheme's boot, round by round (the schemes interleaved), each once per serial
    configuration (0: quiet; a baud: the serial line beside the loads), and with ``icount``
    each serial configuration once more under -icount."""
    names = check_schemes(names)
    confs = [(b, None) for b in serial] + ([(b, icount) for b in serial if b] if icount else [])
    runs = []
    for rnd in range(rounds):
        for baud, ic in confs:
            for s in names:
                line = (f", serial line {baud} bit/s" if baud else "") + \
                    (f", -icount {ic}" if ic else "")
                log(f"ksync sm-user: round {rnd + 1}/{rounds}: {s}, {smp} CPU(s), {accel}{line}")
                runs.append(run_ksync(repo, s, smp, scale, clients, requests, accel, rnd,
                                      serial_baud=baud, icount=ic))
                if not runs[-1]["ok"]:
                    log(f"ksync sm-user: {s} round {rnd + 1}{line} failed: "
                        f"{runs[-1]['reason']}")
    return {"schema": SCHEMA, "meta": dict(meta or {}),
            "options": {"schemes": names, "rounds": rounds, "smp": smp, "accel": accel,
                        "andrew_scale": scale, "web_clients": clients,
                        "web_requests": requests, "serial": list(serial), "icount": icount},
            "runs": runs}
