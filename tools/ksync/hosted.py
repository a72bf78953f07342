"""Run a hosted (Linux user-mode) ksync program that prints KTAP + KSYNC lines.

Public API: ``HOSTED_PRIMS``, ``HostedResult``, ``run_program(path, timeout, log_dir)``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from . import ktap as ktapmod
from .ktap import KsyncObjects, KtapResult
from .schemes import OPTIMISTIC, scheme_id
from .util import SetupError, display_path

HOSTED_PRIMS = Path("build/hosted/bench/prims")
HOSTED_CMP = Path("build/hosted/bench/cmp_peers")
# Linux's own switch / wakeup costs beside the hosted kernel's sched_ops rows (issue 10)
HOSTED_SCHED_PEERS = Path("build/hosted/bench/sched_peers")
# the Massalin & Pu cost-table programs; each prints KSYNC prim rows like prims
HOSTED_COST = (Path("build/hosted/bench/lf_stack_cost"), Path("build/hosted/bench/lf_fifo_cost"),
               Path("build/hosted/bench/mwcas_cost"))
# the kernel's spl.h fast paths of the optimistic schemes, in user mode (issue 4's bar)
HOSTED_SPL_FAST = {s: Path(f"build/hosted/bench/spl_fast_{scheme_id(s)}") for s in OPTIMISTIC}


@dataclass
class HostedResult:
    passed: bool
    reason: str | None
    exit_code: int | None
    elapsed: float
    log_path: Path
    lines: list[str] = field(default_factory=list)
    stderr: str = ""
    ktap: KtapResult = field(default_factory=KtapResult)
    objects: KsyncObjects = field(default_factory=KsyncObjects)

    def tail(self, n: int = 30) -> list[str]:
        return self.lines[-n:]


def run_program(path: Path, timeout: float, log_dir: Path, args: list[str] | None = None
                ) -> HostedResult:
    path = Path(path)
    if not path.is_file() or not os.access(path, os.X_OK):
        raise SetupError(f"{display_path(path)} not found or not executable; build it with "
                         "`make bench-hosted` (or drop --no-build)")
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    log_path = log_dir / f"{stamp}-hosted-{path.name}.log"
    i = 1
    while log_path.exists():
        log_path = log_dir / f"{stamp}-hosted-{path.name}-{i}.log"
        i += 1
    start = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.Popen([str(path), *(args or [])], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        raise SetupError(f"cannot run {display_path(path)}: {e.strerror or e}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        raise
    elapsed = time.monotonic() - start
    text = out.decode("utf-8", errors="replace")
    errtext = err.decode("utf-8", errors="replace")
    lines = [ktapmod.clean_line(l) for l in text.splitlines()]
    kt = ktapmod.parse(lines)
    objects = ktapmod.parse_ksync(lines)
    code = None if timed_out else proc.returncode
    if timed_out:
        passed, reason = False, f"timeout after {timeout:g}s"
    elif code != 0:
        if code is not None and code < 0:
            try:
                sig = signal.Signals(-code).name
            except ValueError:
                sig = str(-code)
            reason = f"{path.name} killed by signal {sig}"
        else:
            reason = f"{path.name} exited with code {code}"
        problem = kt.problem()
        if problem:
            reason += f": {problem}"
        passed = False
    else:
        problem = kt.problem()
        passed, reason = problem is None, problem
    with open(log_path, "w", encoding="utf-8") as log:
        log.write(f"# ksync hosted log: {path}\n# started: {stamp}  timeout: {timeout:g}s\n")
        for l in lines:
            log.write(l + "\n")
        for l in errtext.splitlines():
            log.write(f"[stderr] {l}\n")
        log.write(f"# exit: {code if code is not None else 'killed'}  elapsed: {elapsed:.1f}s\n")
        log.write("# verdict: PASS\n" if passed else f"# verdict: FAIL: {reason}\n")
    return HostedResult(passed=passed, reason=reason, exit_code=code, elapsed=elapsed,
                        log_path=log_path, lines=lines, stderr=errtext, ktap=kt, objects=objects)
