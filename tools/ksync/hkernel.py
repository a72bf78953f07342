"""Run the portable kernel on the hosted port (issue 9): a Linux process, not a QEMU guest.

The binary (built by ``make hosted-kernel``, arch/hosted, DESIGN.md "Hosted port") is
``build/hosted-kernel/<flavour>/<scheme>/ksync [-smp N] [-m MiB] [-disk PATH] [-append
"k=v ..."]``.  It prints on stdout the lines the QEMU kernel prints on its serial console
(boot text, ``KSYNC {json}``, ``ktap: `` KTAP); its boot object adds ``"port":"hosted"``,
``"sched"`` (``SCHED_FIFO`` or ``best-effort scheduling``) and ``"oversubscribed"``.

Verdict (the same rules as qemu.verdict: a complete KTAP plan, no ``not ok``, the pass
exit status): exit 0 pass, 1 fail, 2 panic (panic text on stderr/stdout), 3 hang (the
runtime's watchdog printed per-vCPU state), 64 bad arguments.  The tool's own timeout
sends SIGQUIT (the runtime prints what each vCPU was last doing), waits
``SIGQUIT_GRACE_S`` and then SIGKILLs the process group.  Core dumps are switched off
(RLIMIT_CORE 0) so a fault leaves nothing in the tree.

Flavours: plain (every scheme in schemes.HOSTED_SCHEMES), asan (ASan+UBSan), tsan
(ThreadSanitizer) and hard (pthread_sigmask masking) - the last three for the default
scheme only.

Public API: ``PLATFORMS``, ``FLAVOURS``, ``ENV``, ``check_platforms``, ``check_hosted``,
``binary_path``, ``HostedBootConfig``, ``command``, ``verdict``, ``boot``, ``boot_labels``,
``HOSTED_COSTS``.
"""
from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from . import disk as diskmod
from . import ktap as ktapmod
from . import procrun
from . import schemes
from .ktap import KtapResult
from .qemu import BootResult, KTAP_MODES, MODES, LOG_DIR, filter_problem, kernel_cmdline
from .util import SetupError, UsageError, display_path

PLATFORMS = ("qemu", "hosted")
FLAVOURS = ("plain", "asan", "tsan", "hard")
DEFAULT_FLAVOUR = "plain"
ENV = "hosted"                      # the environment label of every hosted figure
HOSTED_KERNEL_DIR = Path("build/hosted-kernel")
# the hosted port's cost program (arch/hosted/costs.c) and its pthread_sigmask build
HOSTED_COSTS = (Path("build/hosted-port/costs"), Path("build/hosted-port/costs-hard"))
EXIT_PASS, EXIT_FAIL, EXIT_PANIC, EXIT_HANG, EXIT_USAGE = 0, 1, 2, 3, 64
SIGQUIT_GRACE_S = 2.0    # after SIGQUIT, this long for the runtime's per-vCPU report
EXIT_GRACE_S = 2.0       # the process exited but something still holds its pipes
MEMORY_MIB = 512         # the QEMU guest's memory (qemu.BootConfig.memory)
BEST_EFFORT = "best-effort scheduling"


def check_platforms(text: str) -> list[str]:
    """``"qemu,hosted"`` -> ["qemu", "hosted"]; UsageError listing the platforms."""
    words = [w.strip() for w in text.split(",")]
    bad = [w for w in words if w not in PLATFORMS]
    if not text.strip() or bad:
        shown = ", ".join(repr(w) for w in bad) if bad and any(bad) else repr(text)
        raise UsageError(f"unknown platform {shown} (platforms: {', '.join(PLATFORMS)}; a "
                         "comma list such as qemu,hosted runs both)")
    out: list[str] = []
    for w in words:
        if w not in out:
            out.append(w)
    return out


def check_hosted(scheme: str | None, flavour: str | None) -> tuple[str, str]:
    """(scheme, flavour) of a hosted run, or UsageError: the scheme must be one the hosted
    port builds, a flavour other than plain exists for the default scheme only."""
    scheme = schemes.check_scheme(scheme)
    flavour = flavour or DEFAULT_FLAVOUR
    if flavour not in FLAVOURS:
        raise UsageError(f"unknown flavour {flavour!r} ({', '.join(FLAVOURS)})")
    if scheme not in schemes.HOSTED_SCHEMES:
        raise UsageError(f"the hosted port does not build scheme {scheme} (it builds "
                         f"{', '.join(schemes.HOSTED_SCHEMES)})")
    if flavour != DEFAULT_FLAVOUR and scheme != schemes.DEFAULT_SCHEME:
        raise UsageError(f"--flavour {flavour} exists for the default scheme "
                         f"{schemes.DEFAULT_SCHEME} only (scheme {scheme} has plain)")
    return scheme, flavour


def binary_path(repo: Path, scheme: str | None, flavour: str | None) -> Path:
    scheme, flavour = check_hosted(scheme, flavour)
    return Path(repo) / HOSTED_KERNEL_DIR / flavour / scheme / "ksync"


@dataclass
class HostedBootConfig:
    repo: Path
    mode: str = "test"
    smp: int = 2
    timeout: float = 300.0
    filter: str | None = None
    set: str | None = None
    append: list[str] = field(default_factory=list)
    scheme: str | None = None          # None: the default scheme
    flavour: str = DEFAULT_FLAVOUR
    disk: Path | None = None
    disk_mib: int = diskmod.DEFAULT_MIB
    memory_mib: int = MEMORY_MIB
    binary: Path | None = None         # None: binary_path(repo, scheme, flavour)
    log_dir: Path | None = None


def command(cfg: HostedBootConfig) -> list[str]:
    binary = cfg.binary or binary_path(cfg.repo, cfg.scheme, cfg.flavour)
    cmd = [str(binary), "-smp", str(cfg.smp), "-m", str(cfg.memory_mib)]
    if cfg.disk is not None:
        cmd += ["-disk", str(cfg.disk)]
    # kernel_cmdline reads mode/filter/set/append, which both configs name alike
    cmd += ["-append", kernel_cmdline(cfg)]  # type: ignore[arg-type]
    return cmd


def verdict(mode: str, exit_code: int | None, kt: KtapResult, *, timed_out: bool = False,
            timeout: float = 0, panic: str | None = None, stderr_first: str | None = None,
            bad_filter: str | None = None) -> tuple[bool, str | None]:
    """(passed, one-line reason): qemu.verdict's rules with the hosted exit statuses."""
    has_ktap = kt.plan is not None or bool(kt.results)
    ctx = f"; KTAP: {kt.summary()}" if has_ktap and (not kt.complete or kt.failed) else ""
    if bad_filter and not panic and not timed_out:
        return False, bad_filter
    if panic or exit_code == EXIT_PANIC:
        msg = re.sub(r"^PANIC\b[:\s]*", "", (panic or "").strip())
        head = "kernel panic" + ("" if msg.startswith("on ") or not msg else ":")
        code = f" (exit {exit_code})" if exit_code is not None else ""
        return False, f"{head} {msg}".rstrip() + code + ctx
    if timed_out:
        if mode not in KTAP_MODES:
            return True, None      # idle: running until stopped is the expected end
        return False, (f"timeout after {timeout:g}s (SIGQUIT for the per-vCPU report, then "
                       "SIGKILL)" + ctx)
    if exit_code is None:
        return False, "EOF without a verdict" + ctx
    if exit_code == EXIT_HANG:
        return False, "hang: the runtime's watchdog stopped the kernel (exit 3)" + ctx
    if exit_code == EXIT_USAGE:
        return False, ("the hosted kernel refused its arguments (exit 64)"
                       + (f": {stderr_first.strip()}" if stderr_first else ""))
    if exit_code == EXIT_FAIL:
        problem = kt.problem()
        return False, "kernel reported failure (exit 1)" + (f": {problem}" if problem else "")
    if exit_code == EXIT_PASS:
        if mode not in KTAP_MODES:
            return True, None
        problem = kt.problem()
        return (False, problem) if problem else (True, None)
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = str(-exit_code)
        return False, f"hosted kernel killed by signal {name}" + ctx
    reason = f"hosted kernel exited with code {exit_code}"
    if stderr_first:
        reason += f": {stderr_first.strip()}"
    return False, reason + ctx


def _no_core() -> None:
    """In the child before exec: no core file, whatever the fault."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _open_log(log_dir: Path, cfg: HostedBootConfig, scheme: str):
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{cfg.mode}-{scheme}-smp{cfg.smp}-hosted-{cfg.flavour}"
    for i in range(1000):
        path = log_dir / (f"{base}.log" if i == 0 else f"{base}-{i}.log")
        try:
            return path, open(path, "x", encoding="utf-8", errors="replace")
        except FileExistsError:
            continue
    raise SetupError(f"cannot create a log file in {log_dir}")


def prepare(cfg: HostedBootConfig) -> list[str]:
    """Check before starting: the mode, scheme/flavour, the binary; the disk image."""
    if cfg.mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)} (got {cfg.mode!r})")
    check_hosted(cfg.scheme, cfg.flavour)
    binary = cfg.binary or binary_path(cfg.repo, cfg.scheme, cfg.flavour)
    if not binary.is_file() or not os.access(binary, os.X_OK):
        raise SetupError(f"{display_path(binary)} not found or not executable; build it with "
                         "`make hosted-kernel` (or drop --no-build)")
    if cfg.disk is not None:
        diskmod.ensure_disk(cfg.disk, cfg.disk_mib)
    return command(cfg)


def boot(cfg: HostedBootConfig, echo: Callable[[str], None] | None = None) -> BootResult:
    """Run the hosted kernel once; a ``qemu.BootResult`` with env "hosted" and platform
    "hosted".  Interrupts (Ctrl-C, SIGTERM via the CLI) kill its process group."""
    cmd = prepare(cfg)
    scheme = schemes.check_scheme(cfg.scheme)
    log_path, log = _open_log(cfg.log_dir or cfg.repo / LOG_DIR, cfg, scheme)
    cmdline = kernel_cmdline(cfg)  # type: ignore[arg-type]

    def logw(text: str) -> None:
        log.write(text + "\n")
        log.flush()

    logw(f"# ksync hosted log: mode={cfg.mode} smp={cfg.smp} scheme={scheme} "
         f"flavour={cfg.flavour} cmdline={cmdline!r}")
    logw("# command: " + " ".join(cmd))
    logw(f"# started: {datetime.now().isoformat(timespec='seconds')}  timeout: {cfg.timeout:g}s")
    logw("# stdout follows; stderr lines are marked '[stderr]'")
    lines: list[str] = []
    stderr_lines: list[str] = []
    panic: str | None = None
    start = time.monotonic()
    env = None
    if cfg.flavour == "tsan":
        # the kernel's TSan suppressions, each with its reason (the same file the tests
        # use); options the user set in TSAN_OPTIONS come first and are kept
        supp = cfg.repo / "arch" / "hosted" / "tsan.supp"
        env = dict(os.environ)
        env["TSAN_OPTIONS"] = f"{env.get('TSAN_OPTIONS', '')}:suppressions={supp}".lstrip(":")
        logw(f"# TSAN_OPTIONS={env['TSAN_OPTIONS']}")

    def handle(tag: str, text: str) -> None:
        nonlocal panic
        line = ktapmod.clean_line(text)
        if panic is None and line.lstrip().startswith("PANIC"):
            panic = line.strip()
        if tag == "out":
            lines.append(line)
            logw(line)
            if echo:
                echo(line)
        else:
            stderr_lines.append(line)
            logw(f"[stderr] {line}")

    def quit_for_report() -> None:
        logw(f"# timeout after {cfg.timeout:g}s: SIGQUIT (per-vCPU report), "
             f"SIGKILL in {SIGQUIT_GRACE_S:g}s")
        procrun.signal_group(proc, signal.SIGQUIT)

    def interrupted() -> None:
        logw("# interrupted: hosted kernel killed")
        log.close()

    # the closures come first: between Popen and the stream's try (which kills the group
    # on an interrupt) only the call's arguments are evaluated
    try:
        proc = procrun.spawn(cmd, cwd=cfg.repo, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             preexec_fn=_no_core)
    except OSError as e:
        log.close()
        raise SetupError(f"cannot run {cmd[0]}: {e.strerror or e}") from None

    run = procrun.stream(proc, handle, start=start, timeout=cfg.timeout,
                         exit_grace=EXIT_GRACE_S, poll=0.1, on_timeout=quit_for_report,
                         timeout_grace=SIGQUIT_GRACE_S, on_interrupt=interrupted)
    timed_out = run.timed_out
    elapsed = time.monotonic() - start
    exit_code = None if timed_out else proc.returncode
    kt = ktapmod.parse(lines)
    objects = ktapmod.parse_ksync(lines)
    first_err = next((l for l in stderr_lines if l.strip()), None)
    bad_filter = filter_problem(cfg.mode, cfg.filter, kt, objects.first("filter_unmatched"))
    passed, reason = verdict(cfg.mode, exit_code, kt, timed_out=timed_out,
                             timeout=cfg.timeout, panic=panic, stderr_first=first_err,
                             bad_filter=bad_filter)
    logw(f"# exit: {exit_code if exit_code is not None else 'killed'}  elapsed: {elapsed:.1f}s")
    logw("# verdict: PASS" if passed else f"# verdict: FAIL: {reason}")
    log.close()
    return BootResult(passed=passed, reason=reason, exit_code=exit_code, env=ENV,
                      mode=cfg.mode, smp=cfg.smp, cmdline=cmdline, command=cmd,
                      log_path=log_path, elapsed=elapsed, lines=lines,
                      stderr_lines=stderr_lines, ktap=kt, objects=objects,
                      timed_out=timed_out, panic=panic, symbolizer=None, scheme=scheme,
                      machine="hosted", bad_filter=bool(bad_filter) and reason == bad_filter,
                      platform="hosted", flavour=cfg.flavour)


def boot_labels(boot: dict | None, host_cores: int, smp: int) -> dict:
    """What a hosted table must say about its run, from the kernel's boot object:
    ``sched`` (SCHED_FIFO or best-effort scheduling), ``oversubscribed`` (more vCPUs than
    host cores: correctness only, never a timing figure) and ``cpu_model``.  Missing facts
    are taken at their cautious value (best-effort, oversubscribed when smp > cores)."""
    b = boot or {}
    sched = b.get("sched") if b.get("sched") in ("SCHED_FIFO", BEST_EFFORT) else BEST_EFFORT
    over = b.get("oversubscribed")
    if not isinstance(over, bool):
        over = smp > host_cores
    over = over or smp > host_cores
    return {"sched": sched, "oversubscribed": over, "cpu_model": b.get("cpu_model"),
            "host_cores": host_cores}
