"""Boot the ksync kernel under QEMU, stream its serial console, decide the verdict.

docs/protocol.md is the contract: serial lines (section 1), kernel command line
(section 2), isa-debug-exit codes (section 3: 33 pass, 35 fail, 0 triple fault).
A run passes only if QEMU exits 33 *and* the KTAP plan is complete with no ``not ok``.

Issue 4 adds two things to every boot (docs/protocol.md section 5): the kernel image of an
interrupt-masking scheme (``BootConfig.scheme``, see schemes.py; None = the default build in
build/kernel/) and the IDE disk (``BootConfig.disk``, see disk.py; the CLI attaches
<repo>/build/disk.img unless --no-disk or the user's --qemu-arg already names a disk).

Public API: ``BootConfig``, ``BootResult``, ``boot(cfg, echo=None)``, ``precheck(cfg)``,
``require_qemu``, ``resolve_accel``, ``kernel_cmdline``, ``qemu_command``, ``drive_arg``,
``kernel_image``, ``qemu_kernel_cmdline`` / ``host_cpu_words`` (``host_cpus=M`` when -smp
exceeds the host CPUs), ``user_gives_disk``, ``verdict``, ``failure_report``, ``Symbolizer``,
``EXIT_PASS``, ``EXIT_FAIL``, ``DISK_IMAGE``; issue 8: ``disk_args``, ``machine_type``,
``MACHINES`` (``BootConfig.machine``, pc or q35), ``owned_option``/``OWNED_OPTIONS`` (the
QEMU options a --qemu-arg may not set), ``filter_problem`` (``BootResult.bad_filter``: the
filter matched nothing).
"""
from __future__ import annotations

import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable

from . import disk as diskmod
from . import envdetect
from . import ktap as ktapmod
from . import procrun
from . import schemes
from .ktap import KsyncObjects, KtapResult
from .util import SetupError, UsageError, display_path

EXIT_PASS = 33
EXIT_FAIL = 35
MODES = ("test", "bench", "idle", "user")
KTAP_MODES = ("test", "bench", "user")
KERNEL_ELF32 = Path("build/kernel/ksync.elf32")
KERNEL_ELF = Path("build/kernel/ksync.elf")
ISO_IMAGE = Path("build/ksync.iso")
DISK_IMAGE = Path("build/disk.img")   # attached by the CLI on every boot unless --no-disk
# QEMU options that attach a disk: when the user's --qemu-arg has one, the default disk is
# left out (two drives at IDE index 0, or the same image opened twice, make QEMU fail)
DISK_OPTIONS = ("-drive", "-hda", "-blockdev")
# Machine types the tool boots (--machine).  On pc the disk goes on the board's PIIX3 IDE
# (legacy ports 0x1f0/IRQ 14, where kernel's ATA driver looks); q35's `if=ide` drive sits on
# its AHCI controller instead, so on q35 the tool adds a PIIX3 IDE controller for it.
MACHINES = ("pc", "q35")
# QEMU options the tool sets itself: given again in --qemu-arg they would make the guest
# differ from what the summary, the logs and the results say.  Value: what to use instead.
OWNED_OPTIONS = {
    "-smp": "use --smp N",
    "-m": "the tool gives the guest 512M (BootConfig.memory), which the kernel is tested with",
    "-accel": "use --accel tcg|kvm|auto",
    "-enable-kvm": "use --accel kvm",
    "-cpu": "the CPU model follows --accel (tcg: -cpu max, kvm: -cpu host)",
    "-machine": "use --machine pc|q35[,OPTIONS]",
    "-M": "use --machine pc|q35[,OPTIONS]",
}
LOG_DIR = Path("build/logs")
TAIL_LINES = 30

KVM_PVM_REFUSAL = ("KVM on this host is kvm_pvm: guest ring-0 code is interpreted and "
                   "cmpxchg16b fails; use --accel tcg, or --allow-pvm to try anyway")
STDERR_FATAL = ("emulation failure", "KVM internal error")
EOF_GRACE_S = 5.0     # stdout closed but QEMU still running this long -> no verdict
EXIT_GRACE_S = 2.0    # QEMU exited but something still holds its pipes this long
FATAL_DRAIN_S = 0.5   # after a fatal stderr line, keep reading this long (register dump)


@dataclass
class BootConfig:
    repo: Path
    mode: str = "test"
    smp: int = 2
    accel: str = "tcg"            # requested: tcg | kvm | auto
    timeout: float = 300.0
    iso: bool = False
    filter: str | None = None
    set: str | None = None
    qemu: str | None = None       # path/name of qemu-system-x86_64 (None: search PATH)
    allow_pvm: bool = False
    memory: str = "512M"
    machine: str = "pc"           # QEMU -machine value: pc or q35, optionally ",options"
    log_dir: Path | None = None   # default <repo>/build/logs
    gdb_port: int | None = None   # QEMU gdb stub on localhost:<port>, guest starts halted
    append: list[str] = field(default_factory=list)     # extra kernel command-line words
    qemu_args: list[str] = field(default_factory=list)  # extra QEMU arguments, appended last
    scheme: str | None = None     # interrupt-masking scheme's kernel (None: default build)
    disk: Path | None = None      # raw image attached as the IDE primary master (None: no disk)
    disk_mib: int = diskmod.DEFAULT_MIB   # size ensure_disk() gives a missing/wrong image
    # QEMU -icount value (e.g. "shift=4,align=off,sleep=off"): guest time advances by
    # instructions executed; TCG only, and single-threaded (QEMU 7.2 has no icount with
    # MTTCG). None: real time (the default).
    icount: str | None = None
    # the kernel built with the masked-window tracker (make WINDOWS=1 kernel,
    # build/kernel[-<scheme>]-windows): its lateness lines carry win_max (Fiasco -icount)
    windows: bool = False
    # issue 24: the initramfs (cpio newc, tools/ksync/cpio.py) given to QEMU as -initrd,
    # the kernel's first multiboot module (mode=user runs programs from it)
    initrd: Path | None = None


@dataclass
class BootResult:
    passed: bool
    reason: str | None
    exit_code: int | None
    env: str                       # tcg | kvm | kvm-pvm
    mode: str
    smp: int
    cmdline: str | None
    command: list[str]
    log_path: Path
    elapsed: float
    lines: list[str] = field(default_factory=list)
    stderr_lines: list[str] = field(default_factory=list)
    ktap: KtapResult = field(default_factory=KtapResult)
    objects: KsyncObjects = field(default_factory=KsyncObjects)
    timed_out: bool = False
    panic: str | None = None       # the PANIC line, if the kernel panicked
    symbolizer: "Symbolizer | None" = None
    scheme: str | None = None      # the BootConfig's scheme (None: default build)
    machine: str = "pc"            # the BootConfig's QEMU machine
    bad_filter: bool = False       # failed because the filter matched nothing (a user error)
    platform: str = "qemu"         # issue 9: qemu, or hosted (hkernel.boot)
    flavour: str | None = None     # hosted: plain | asan | tsan | hard

    @property
    def boot(self) -> dict | None:
        """The kernel's ``{"kind":"boot",...}`` object, if it printed one."""
        return self.objects.first("boot")

    def tail(self, n: int = TAIL_LINES) -> list[str]:
        lines = self.lines[-n:]
        if self.symbolizer:
            lines = [self.symbolizer.symbolize(l) for l in lines]
        return lines


# ---------------------------------------------------------------------------------------
# configuration -> command line


def resolve_accel(requested: str, allow_pvm: bool = False) -> tuple[str, str]:
    """(QEMU accelerator, environment label) for ``--accel``; raises SetupError if refused."""
    if requested == "tcg":
        return "tcg", "tcg"
    if requested == "auto":
        return ("kvm", "kvm") if envdetect.auto_accel() == "kvm" else ("tcg", "tcg")
    if requested != "kvm":
        raise UsageError(f"--accel must be tcg, kvm or auto (got {requested!r})")
    if not envdetect.DEV_KVM.exists():
        raise SetupError(f"--accel kvm: {envdetect.DEV_KVM} does not exist on this host; "
                         "use --accel tcg")
    if not envdetect.dev_kvm_usable():
        raise SetupError(f"--accel kvm: {envdetect.DEV_KVM} is not read/writable by this "
                         "user; use --accel tcg or get access (group kvm)")
    kind = envdetect.kvm_kind()
    if kind == "kvm-pvm":
        if not allow_pvm:
            raise SetupError(KVM_PVM_REFUSAL)
        return "kvm", "kvm-pvm"
    return "kvm", "kvm"


def kernel_cmdline(cfg: BootConfig, tool_words: list[str] | None = None) -> str:
    """mode, filter and set, then ``tool_words`` (what the tool itself adds), then the
    ``append`` words last: the kernel takes the last of a repeated key, so the user's
    --append overrides."""
    words = [f"mode={cfg.mode}"]
    if cfg.filter:
        words.append(f"filter={cfg.filter}")
    if cfg.set:
        words.append(f"set={cfg.set}")
    words += tool_words or []
    for extra in cfg.append:
        words += extra.split()
    return " ".join(words)


def host_cpu_words(smp: int, host_cpus: int | None = None) -> list[str]:
    """``host_cpus=M`` when QEMU's -smp N asks for more vCPUs than the M host CPUs this
    process (and so QEMU, which inherits its affinity) may run on, else nothing.  Every
    vCPU is a host thread, so past M they wait for host time slices; the guest cannot see
    the host, so the kernel learns it from this word (its boot facts' ``oversubscribed``
    and ``host_cores``; timing verdicts are skipped there, correctness ones stay).
    ``host_cpus``: M (default: ``os.sched_getaffinity``)."""
    m = envdetect.cpu_count() if host_cpus is None else host_cpus
    return [f"host_cpus={m}"] if smp > m else []


def qemu_kernel_cmdline(cfg: BootConfig) -> str:
    """The command line QEMU's -append carries: ``kernel_cmdline`` with the host's CPU
    count when the boot is oversubscribed (``host_cpu_words``)."""
    return kernel_cmdline(cfg, host_cpu_words(cfg.smp))


def kernel_image(cfg: BootConfig) -> Path:
    """What QEMU boots: the ISO, or the ELF32 of the configured scheme."""
    if cfg.iso:
        return cfg.repo / ISO_IMAGE
    return schemes.scheme_image(cfg.repo, cfg.scheme, cfg.windows)


def disk_args(disk: Path, machine: str = "pc") -> list[str]:
    """QEMU arguments attaching ``disk`` where the kernel's ATA driver finds it: the
    primary master of a PIIX3 IDE controller (legacy ports 0x1f0/0x3f6, IRQ 14).  pc has
    that controller on board (``if=ide``); on q35 ``if=ide`` would land on AHCI, so a PIIX3
    IDE controller is added and the disk put on it."""
    if machine_type(machine) != "q35":
        return ["-drive", drive_arg(disk)]
    return ["-drive", drive_arg(disk, interface="none", drive_id="ksyncdisk"),
            "-device", "piix3-ide,id=ksyncide",
            "-device", "ide-hd,drive=ksyncdisk,bus=ksyncide.0"]


def drive_arg(disk: Path, interface: str = "ide", drive_id: str | None = None) -> str:
    """``-drive`` value for the IDE disk (commas in the path doubled, as QEMU wants).

    ``snapshot=on``: QEMU opens the image read-only (guest writes go to a throw-away
    overlay), so the sector pattern can never be damaged and several boots (make test while
    make run, two users) can share build/disk.img; without it the second QEMU fails with
    'Failed to get "write" lock'."""
    opts = [f"if={interface}", f"file={str(disk).replace(',', ',,')}", "format=raw"]
    if interface == "ide":
        opts.append("index=0")
    opts += ["media=disk", "snapshot=on"]
    if drive_id:
        opts.append(f"id={drive_id}")
    return ",".join(opts)


def _option_name(arg: str) -> str:
    """``--smp=3`` / ``-smp`` -> ``-smp`` (QEMU takes one or two dashes)."""
    name = arg.split("=", 1)[0]
    return name[1:] if name.startswith("--") else name


def owned_option(qemu_args: list[str]) -> str | None:
    """The one-line refusal for the first extra QEMU argument that sets something the tool
    owns (CPUs, memory, accelerator, CPU model, machine type), or None."""
    for a in qemu_args:
        name = _option_name(a)
        if name in OWNED_OPTIONS:
            return f"--qemu-arg {a}: the tool sets {name} itself; {OWNED_OPTIONS[name]}"
    return None


def machine_type(machine: str) -> str:
    """The machine type of a --machine value (``q35,acpi=off`` -> ``q35``)."""
    return machine.split(",", 1)[0]


def user_gives_disk(qemu_args: list[str]) -> bool:
    """True if the extra QEMU arguments attach a disk themselves (``-drive``, ``-hda``,
    ``-blockdev``, also in the ``-drive=...`` spelling)."""
    return any(a.split("=", 1)[0] in DISK_OPTIONS for a in qemu_args)


def qemu_command(cfg: BootConfig, qemu: str, accel: str) -> list[str]:
    cmd = [qemu, "-machine", cfg.machine, "-m", cfg.memory, "-smp", str(cfg.smp)]
    if accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host,-arch-capabilities"]
    elif cfg.icount:
        cmd += ["-cpu", "max", "-accel", "tcg,thread=single", "-icount", cfg.icount]
    else:
        cmd += ["-cpu", "max", "-accel", "tcg,thread=multi"]
    cmd += ["-display", "none", "-vga", "none", "-no-reboot", "-monitor", "none",
            "-serial", "stdio", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if cfg.gdb_port:
        cmd += ["-gdb", f"tcp:localhost:{cfg.gdb_port}", "-S"]
    if cfg.iso:
        cmd += ["-cdrom", str(cfg.repo / ISO_IMAGE), "-boot", "d"]
    else:
        cmd += ["-kernel", str(kernel_image(cfg)), "-append", qemu_kernel_cmdline(cfg)]
        if cfg.initrd is not None:
            cmd += ["-initrd", str(cfg.initrd)]
    if cfg.disk is not None:
        cmd += disk_args(cfg.disk, cfg.machine)
    cmd += list(cfg.qemu_args)
    return cmd


# ---------------------------------------------------------------------------------------
# panic symbolization

_HEX = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]{16}\b")


def wants_symbols(line: str) -> bool:
    return "RIP=" in line or line.startswith("  bt:")


class Symbolizer:
    """Appends `` <function at file:line>`` to hex addresses on RIP= / bt: lines."""

    def __init__(self, elf: Path, addr2line: str | None = None, repo: Path | None = None):
        self.elf = Path(elf)
        self.addr2line = addr2line or shutil.which("addr2line")
        self.repo = repo
        self.cache: dict[str, str | None] = {}

    @property
    def usable(self) -> bool:
        return bool(self.addr2line) and self.elf.is_file()

    def _lookup(self, addrs: list[str]) -> None:
        todo = [a for a in addrs if a not in self.cache]
        if not todo:
            return
        for a in todo:
            self.cache[a] = None
        try:
            p = subprocess.run([self.addr2line, "-f", "-e", str(self.elf), *todo],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               stdin=subprocess.DEVNULL, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return
        out = p.stdout.splitlines()
        for i, a in enumerate(todo):
            if 2 * i + 1 >= len(out):
                break
            func, loc = out[2 * i].strip(), out[2 * i + 1].strip()
            path, _, line = loc.partition(" ")[0].rpartition(":")
            if path.startswith("??") or not line.isdigit() or line == "0":
                continue  # no line info: a stack or data address, not code
            if self.repo:
                path, sep, rest = loc.rpartition(":")
                try:
                    path = str(Path(path).resolve().relative_to(self.repo.resolve()))
                    loc = f"{path}{sep}{rest}"
                except (ValueError, OSError):
                    pass
            self.cache[a] = f"{func or '??'} at {loc}"

    def symbolize(self, line: str) -> str:
        if not wants_symbols(line) or not self.usable:
            return line
        addrs = [m.group(0) for m in _HEX.finditer(line)]
        if not addrs:
            return line
        norm = [a if a.lower().startswith("0x") else "0x" + a for a in addrs]
        self._lookup(norm)
        notes = [f" <{self.cache[a]}>" for a in norm if self.cache.get(a)]
        return line + "".join(notes)


# ---------------------------------------------------------------------------------------
# verdict


def filter_problem(mode: str, filt: str | None, kt: KtapResult,
                   unmatched: dict | None = None) -> str | None:
    """Why a run's filter is an error, or None.  The kernel reports a filter that matches
    nothing with ``{"kind":"filter_unmatched","what":...,"set":...,"names":[...]}``
    (docs/protocol.md section 1); the reason lists those names.  A kernel that does not
    (an older build) shows it as an empty plan, 1..0, which is not a pass either."""
    if unmatched is not None:
        names = sorted(str(n) for n in unmatched.get("names") or [])
        what = str(unmatched.get("what") or "tests")
        where = f" of set {unmatched['set']}" if unmatched.get("set") else ""
        shown = unmatched.get("filter") or filt
        return (f"--filter {shown} matches none of the {len(names)} {what}{where}: "
                + ", ".join(names))
    if filt and mode in KTAP_MODES and kt.plan == 0 and not kt.results:
        return (f"--filter {filt} matches no test or experiment (the kernel ran an empty "
                "plan, 1..0)")
    return None


def verdict(mode: str, exit_code: int | None, kt: KtapResult, *, timed_out: bool = False,
            timeout: float = 0, panic: str | None = None, fatal: str | None = None,
            eof_without_exit: bool = False, stderr_first: str | None = None,
            bad_filter: str | None = None) -> tuple[bool, str | None]:
    """(passed, one-line reason) from everything the run produced.  ``bad_filter``: the
    ``filter_problem`` of the run, if any."""
    has_ktap = kt.plan is not None or bool(kt.results)
    ctx = f"; KTAP: {kt.summary()}" if has_ktap and (not kt.complete or kt.failed) else ""

    def with_exit(reason: str) -> str:
        if timed_out:
            return f"{reason} (then timeout after {timeout:g}s)"
        if exit_code is not None and exit_code >= 0:
            return f"{reason} (exit {exit_code})"
        return reason

    if fatal:
        return False, (f"QEMU: {fatal} (QEMU pauses the guest instead of exiting; killed)"
                       + ctx)
    if bad_filter and not panic and not timed_out:
        return False, bad_filter
    if panic:
        msg = re.sub(r"^PANIC\b[:\s]*", "", panic.strip())
        head = "kernel panic" + ("" if msg.startswith("on cpu") or not msg else ":")
        return False, with_exit(f"{head} {msg}".rstrip()) + ctx
    if mode not in KTAP_MODES:
        # idle: no KTAP; running until the watchdog is the expected end
        if timed_out or exit_code == EXIT_PASS:
            return True, None
    if timed_out:
        return False, f"timeout after {timeout:g}s" + ctx
    if eof_without_exit or exit_code is None:
        return False, "EOF without a verdict" + ctx
    if exit_code == 0:
        return False, "triple fault or reset (QEMU exit 0)" + ctx
    if exit_code == EXIT_FAIL:
        problem = kt.problem()
        return False, "kernel reported failure (exit 35)" + (f": {problem}" if problem else "")
    if exit_code == EXIT_PASS:
        if mode not in KTAP_MODES:
            return True, None
        problem = kt.problem()
        if problem:
            return False, problem
        return True, None
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = str(-exit_code)
        return False, f"QEMU killed by signal {name}" + ctx
    reason = f"QEMU exited with code {exit_code}"
    if stderr_first:
        reason += f": {stderr_first.strip()}"
    return False, reason + ctx


# ---------------------------------------------------------------------------------------
# running


KTAP_RESULT = re.compile(r"^ktap: (not )?ok \d+ ")


def open_log(log_dir: Path, mode: str, smp: int, env: str, scheme: str | None = None):
    log_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = f"{stamp}-{mode}-" + (f"{scheme}-" if scheme else "") + f"smp{smp}-{env}"
    for i in range(1000):
        path = log_dir / (f"{base}.log" if i == 0 else f"{base}-{i}.log")
        try:
            return path, open(path, "x", encoding="utf-8", errors="replace")
        except FileExistsError:
            continue
    raise SetupError(f"cannot create a log file in {log_dir}")


def require_qemu(explicit: str | None = None) -> str:
    """Path of the QEMU binary, or SetupError with the install hint."""
    qemu = envdetect.find_qemu(explicit)
    if not qemu:
        if explicit:
            raise SetupError(f"{explicit}: not found or not executable; "
                             + envdetect.QEMU_INSTALL_HINT)
        raise SetupError(envdetect.QEMU_INSTALL_HINT)
    return qemu


def _check_config(cfg: BootConfig) -> None:
    if cfg.mode not in MODES:
        raise UsageError(f"--mode must be one of {', '.join(MODES)} (got {cfg.mode!r})")
    if machine_type(cfg.machine) not in MACHINES:
        raise UsageError(f"--machine must be one of {', '.join(MACHINES)}, optionally with "
                         f"QEMU machine options (got {cfg.machine!r})")
    refusal = owned_option(cfg.qemu_args)
    if refusal:
        raise UsageError(refusal)
    if cfg.scheme is not None:
        schemes.check_scheme(cfg.scheme)
        if cfg.iso and cfg.scheme != schemes.DEFAULT_SCHEME:
            raise UsageError(f"--scheme {cfg.scheme} cannot be used with --iso (the ISO holds "
                             f"the default scheme's kernel, {schemes.DEFAULT_SCHEME})")


def precheck(cfg: BootConfig) -> str:
    """Fail early (before a build) on QEMU/KVM problems; return the environment label."""
    _check_config(cfg)
    require_qemu(cfg.qemu)
    return resolve_accel(cfg.accel, cfg.allow_pvm)[1]


def prepare(cfg: BootConfig) -> tuple[str, str, str, list[str]]:
    """Check everything before starting QEMU: (qemu path, accel, env label, command).

    Creates (or repairs) the disk image when one is configured."""
    _check_config(cfg)
    qemu = require_qemu(cfg.qemu)
    accel, env = resolve_accel(cfg.accel, cfg.allow_pvm)
    image = kernel_image(cfg)
    if not image.is_file():
        if cfg.iso:
            target = "make iso"
        else:
            target = ("make " + (f"SCHEME={cfg.scheme} " if cfg.scheme is not None else "")
                      + ("WINDOWS=1 " if cfg.windows else "") + "kernel")
        raise SetupError(f"{display_path(image)} not found; build it with `{target}` "
                         "(or drop --no-build)")
    if cfg.disk is not None:
        diskmod.ensure_disk(cfg.disk, cfg.disk_mib)
    return qemu, accel, env, qemu_command(cfg, qemu, accel)


def boot(cfg: BootConfig, echo: Callable[[str], None] | None = None) -> BootResult:
    """Boot once and return the result.  ``echo`` gets every serial line as it arrives.

    Raises SetupError/UsageError before QEMU starts if it cannot run at all.
    KeyboardInterrupt kills QEMU (the log is finished) and propagates.
    """
    qemu, accel, env, cmd = prepare(cfg)
    repo = cfg.repo
    elf = repo / KERNEL_ELF if cfg.iso else schemes.scheme_elf(repo, cfg.scheme, cfg.windows)
    symbolizer = Symbolizer(elf, repo=repo)
    log_path, log = open_log(cfg.log_dir or repo / LOG_DIR, cfg.mode, cfg.smp, env,
                              cfg.scheme)
    cmdline = None if cfg.iso else qemu_kernel_cmdline(cfg)

    def logw(text: str) -> None:
        log.write(text + "\n")
        log.flush()

    logw(f"# ksync boot log: mode={cfg.mode} smp={cfg.smp} machine={cfg.machine} accel={env}"
         + (f" scheme={cfg.scheme}" if cfg.scheme else "")
         + (f" disk={display_path(cfg.disk)}" if cfg.disk is not None else " no-disk")
         + (" iso" if cfg.iso else f" cmdline={cmdline!r}"))
    logw("# command: " + " ".join(procrun.shquote(c) for c in cmd))
    logw(f"# started: {datetime.now().isoformat(timespec='seconds')}  timeout: {cfg.timeout:g}s")
    logw("# serial output follows; QEMU's stderr lines are marked '[qemu stderr]'")

    lines: list[str] = []
    stderr_lines: list[str] = []
    panic: str | None = None
    fatal: str | None = None
    start = time.monotonic()

    def handle(tag: str, text: str) -> None:
        nonlocal panic, fatal
        line = ktapmod.clean_line(text)
        if tag == "out":
            lines.append(line)
            logw(line)
            if KTAP_RESULT.match(line):	# when each test ended: where a slow suite spends
                logw(f"[ksync +{time.monotonic() - start:.1f} s]")
            if panic is None and line.startswith("PANIC"):
                panic = line
            if echo:
                echo(symbolizer.symbolize(line))
        else:
            stderr_lines.append(line)
            logw(f"[qemu stderr] {line}")
            if fatal is None and any(s in line for s in STDERR_FATAL):
                fatal = line.strip()

    def interrupted() -> None:
        logw("# interrupted: QEMU killed")
        log.close()

    # the closures come first: between Popen and the stream's try (which kills the group
    # on an interrupt) only the call's arguments are evaluated
    try:
        proc = procrun.spawn(cmd, cwd=repo, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    except OSError as e:
        log.close()
        raise SetupError(f"cannot start {qemu}: {e.strerror or e}") from None

    # from here on an interrupt (Ctrl-C, or SIGTERM/SIGHUP turned into Terminated by the
    # CLI) kills QEMU's process group before it propagates
    run = procrun.stream(proc, handle, start=start, timeout=cfg.timeout,
                         exit_grace=EXIT_GRACE_S, poll=0.2, eof_grace=EOF_GRACE_S,
                         fatal=lambda: fatal is not None, fatal_drain=FATAL_DRAIN_S,
                         on_interrupt=interrupted)
    timed_out, eof_without_exit, killed = run.timed_out, run.eof_without_exit, run.killed
    elapsed = time.monotonic() - start
    exit_code = proc.returncode
    if killed and (timed_out or fatal or eof_without_exit):
        exit_code = None

    kt = ktapmod.parse(lines)
    objects = ktapmod.parse_ksync(lines)
    first_err = next((l for l in stderr_lines if l.strip()), None)
    bad_filter = filter_problem(cfg.mode, cfg.filter, kt, objects.first("filter_unmatched"))
    passed, reason = verdict(cfg.mode, exit_code, kt, timed_out=timed_out, timeout=cfg.timeout,
                             panic=panic, fatal=fatal, eof_without_exit=eof_without_exit,
                             stderr_first=first_err, bad_filter=bad_filter)
    logw(f"# exit: {exit_code if exit_code is not None else 'killed'}  elapsed: {elapsed:.1f}s")
    if objects.bad_lines:
        logw(f"# {len(objects.bad_lines)} malformed KSYNC line(s) ignored")
    if panic and symbolizer.usable:
        logw("# symbolized panic lines:")
        for l in lines:
            if wants_symbols(l):
                logw(symbolizer.symbolize(l))
    logw("# verdict: PASS" if passed else f"# verdict: FAIL: {reason}")
    log.close()
    return BootResult(passed=passed, reason=reason, exit_code=exit_code, env=env,
                      mode=cfg.mode, smp=cfg.smp, cmdline=cmdline, command=cmd,
                      log_path=log_path, elapsed=elapsed, lines=lines,
                      stderr_lines=stderr_lines, ktap=kt, objects=objects,
                      timed_out=timed_out, panic=panic, symbolizer=symbolizer,
                      scheme=cfg.scheme, machine=cfg.machine,
                      bad_filter=bool(bad_filter) and reason == bad_filter)


def failure_report(res: BootResult, n: int = TAIL_LINES) -> str:
    """The reason, the last ``n`` serial lines (symbolized) and the log path."""
    out = [f"FAIL: {res.reason}"]
    tail = res.tail(n)
    if tail:
        where = "output" if res.platform == "hosted" else "serial"
        out.append(f"--- last {len(tail)} {where} line(s) ---")
        out.extend(tail)
        out.append("---")
    else:
        out.append("(no output)" if res.platform == "hosted" else "(no serial output)")
    if res.stderr_lines and res.platform == "hosted":
        # the hosted kernel's panic text and the runtime's per-vCPU report go to stderr
        err = [l for l in res.stderr_lines if l.strip()][-n:]
        out.append(f"--- last {len(err)} stderr line(s) ---")
        out.extend(err)
        out.append("---")
    elif res.stderr_lines:
        out.append("QEMU stderr: " + " | ".join(l for l in res.stderr_lines[:5] if l.strip()))
    out.append(f"full log: {display_path(res.log_path)}")
    return "\n".join(out)
