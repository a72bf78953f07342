"""ksync command line: ``ksync test|boot|run|sh|env|report|mkdisk`` (also ``python -m ksync``).

Issue 4 (Small & Manley 1997 interrupt-masking schemes) adds ``--scheme`` to test/boot,
``--no-disk`` to every boot (the IDE disk build/disk.img is attached by default),
``ksync run [all|prims|irq]`` with ``--schemes``, ``--irq-seconds``, ``--irq-quick``, and
``ksync mkdisk``; see docs/protocol.md section 5.

User errors print one line ``ksync: error: <reason>`` and exit 2; a failed verdict exits 1;
nothing a user can cause prints a Python traceback.  Issue 8: a --filter that matches
nothing, an unusable ``run --out`` and a --qemu-arg setting what the tool sets (-smp, -m,
-accel, -enable-kvm, -cpu, -machine: use --smp, --accel, --machine) are user errors;
SIGTERM and SIGHUP stop every child (QEMU, make, hosted programs) and exit 128+signal,
as Ctrl-C does with 130.

This module parses the command line and dispatches (``COMMANDS``); what each command does
is run.py's.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import __version__, disk, envdetect, hkernel, hosted, peers, qemu, run, schemes, smuser, spriterun
from .util import (KsyncError, Terminated, UsageError, find_repo, install_signal_handlers,
                   restore_signal_handlers)

MAX_SMP = 64          # MAX_CPUS of the kernel (kernel/include: one limit, static asserts)


SERIAL_BITS = (8, 10)   # --serial-bits: the paper's section 6.4 arithmetic, 8N1 (default)


class Parser(argparse.ArgumentParser):
    """argparse that reports errors as one line and exits 2 (subparsers inherit it)."""

    def error(self, message: str):  # type: ignore[override]
        message = " ".join(message.split())
        sys.stderr.write(f"ksync: error: {message}\n")
        raise SystemExit(2)


# ---------------------------------------------------------------------------------------
# argument types


def smp_type(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an integer from 1 to {MAX_SMP} (got {text!r})") from None
    if not 1 <= n <= MAX_SMP:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to {MAX_SMP} (got {n})")
    return n


def smp_list_type(text: str) -> list[int]:
    """``--smp 2`` or a sweep ``--smp 1,2,4``: distinct CPU counts from 1 to MAX_CPUS, in
    the order given."""
    out: list[int] = []
    for word in text.split(","):
        try:
            n = smp_type(word.strip())
        except argparse.ArgumentTypeError as e:
            raise argparse.ArgumentTypeError(
                f"{e} (one CPU count or a comma list such as 1,2,4; limit MAX_CPUS = "
                f"{MAX_SMP})") from None
        if n not in out:
            out.append(n)
    return out


def platforms_type(text: str) -> list[str]:
    try:
        return hkernel.check_platforms(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def platform_type(text: str) -> str:
    p = platforms_type(text)
    if len(p) != 1:
        raise argparse.ArgumentTypeError(f"takes one platform ({', '.join(hkernel.PLATFORMS)}; "
                                         f"got {text!r})")
    return p[0]


def threads_type(text: str) -> list[int]:
    """``--threads 1,2,4,8``: the peer comparison's throughput thread counts, ascending,
    distinct, each 1..64, at most 8 of them."""
    out: list[int] = []
    for part in text.split(","):
        try:
            n = int(part.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"must be a comma list of thread counts such as 1,2,4 (got {text!r})") from None
        if not 1 <= n <= peers.MAX_THREADS:
            raise argparse.ArgumentTypeError(
                f"each thread count must be from 1 to {peers.MAX_THREADS} (got {n})")
        if out and n <= out[-1]:
            raise argparse.ArgumentTypeError(
                f"thread counts must be ascending and distinct (got {text!r})")
        out.append(n)
    if len(out) > peers.MAX_THREAD_COUNTS:
        raise argparse.ArgumentTypeError(
            f"at most {peers.MAX_THREAD_COUNTS} thread counts (got {len(out)})")
    return out


def repeat_type(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 20 (got {text!r})") from None
    if not 1 <= n <= 20:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 20 (got {n})")
    return n


def int_range_type(lo: int, hi: int):
    """argparse type: an integer from lo to hi."""
    def parse(text: str) -> int:
        try:
            n = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer from {lo} to {hi} "
                                             f"(got {text!r})") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer from {lo} to {hi} (got {n})")
        return n
    return parse


def timeout_type(text: str) -> float:
    try:
        t = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 (got {text!r})") \
            from None
    if not t > 0 or t != t or t == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds > 0 (got {text!r})")
    return t


def filter_type(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (comma-separated globs, e.g. "
                                         "'spin*,queue_*')")
    if any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(
            f"must not contain spaces (comma-separated globs; got {text!r})")
    parts = text.split(",")
    if any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"has an empty glob between commas (got {text!r})")
    return text


def words_type(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty (kernel command-line words)")
    return text


def scheme_type(text: str) -> str:
    try:
        return schemes.check_scheme(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def schemes_type(text: str) -> list[str]:
    try:
        return schemes.parse_schemes(text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def serial_list_type(text: str) -> tuple[int, ...]:
    """argparse type for sm-user --serial: comma-separated serial-line rates, each 0 (a
    quiet boot) or a baud 9600..921600 (the kernel's serial_load= range), no repeats."""
    out = []
    for w in text.split(","):
        try:
            n = int(w.strip(), 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{w.strip()!r} is not a number: give rates "
                                             "like 0,115200 (0: quiet)") from None
        if n != 0 and not 9600 <= n <= 921600:
            raise argparse.ArgumentTypeError(f"{n}: a rate is 0 (quiet) or 9600..921600 "
                                             "bit/s")
        if n in out:
            raise argparse.ArgumentTypeError(f"{n} is given twice")
        out.append(n)
    return tuple(out)


def irq_seconds_type(text: str) -> str:
    """A duration for the kernel's irq_seconds= word: 0 < S <= 600, at most 3 decimals;
    returned in the form the kernel gets ("1", "0.5")."""
    try:
        t = float(text)
    except ValueError:
        t = float("nan")
    if not 0 < t <= 600 or round(t, 3) != t:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds > 0 and <= 600 with at most 3 decimals (got {text!r})")
    return f"{t:.3f}".rstrip("0").rstrip(".")


def mib_type(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        n = 0
    if not 1 <= n <= disk.MAX_MIB:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to {disk.MAX_MIB} "
                                         f"(got {text!r})")
    return n


def machine_type(text: str) -> str:
    if qemu.machine_type(text) not in qemu.MACHINES or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(
            f"must be {' or '.join(qemu.MACHINES)}, optionally followed by QEMU machine "
            f"options (e.g. q35,acpi=off; got {text!r})")
    return text


def port_type(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        n = 0
    if not 1 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"must be a TCP port 1..65535 (got {text!r})")
    return n


# ---------------------------------------------------------------------------------------
# parser


def _real_program_args(p, accel_help: str) -> None:
    """The options every real-programs command shares (osprims, sprite-user, cyclic-user,
    sm-user): the guests' accelerator, no build, the results directory."""
    p.add_argument("--accel", choices=("tcg", "kvm", "auto"), default="tcg",
                   help=f"{accel_help} (default tcg)")
    p.add_argument("--no-build", action="store_true", help="do not run make first")
    p.add_argument("--out", metavar="DIR", help="results directory (default <repo>/results)")


def build_parser() -> Parser:
    p = Parser(prog="ksync",
               description="Host-side tool for the ksync research kernel: build, boot under "
                           "QEMU, check KTAP verdicts, measure and report.")
    p.add_argument("--version", action="version", version=f"ksync {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    repo = Parser(add_help=False)
    repo.add_argument("--repo", metavar="DIR",
                      help="ksync source tree (default: the tree this tool lives in)")

    vm = Parser(add_help=False)
    vm.add_argument("--smp", type=smp_list_type, default=[2], metavar="N[,N...]",
                    help=f"number of CPUs, 1..{MAX_SMP} (default 2); test and run take a "
                         "comma list (1,2,4): a sweep, one run per value")
    vm.add_argument("--accel", choices=("tcg", "kvm", "auto"), default="tcg",
                    help="accelerator: tcg (default), kvm, or auto (kvm only with hardware "
                         "virtualization)")
    vm.add_argument("--timeout", type=timeout_type, default=None, metavar="S",
                    help=f"wall-clock limit in seconds (default {run.DEFAULT_TIMEOUT:g}; "
                         f"ksync run --set bench: {run.RUN_SETS['bench'].timeout:g})")
    vm.add_argument("--no-build", action="store_true", help="do not run make first")
    vm.add_argument("--verbose", "-v", action="store_true",
                    help="echo the serial console live")
    vm.add_argument("--qemu", metavar="PATH", help="QEMU binary (default: "
                    f"{envdetect.QEMU_BINARY} on PATH)")
    vm.add_argument("--allow-pvm", action="store_true",
                    help="allow --accel kvm on a kvm_pvm host (guest ring-0 is interpreted)")
    vm.add_argument("--append", action="append", default=[], type=words_type, metavar="WORDS",
                    help="extra kernel command-line words, e.g. crash=pf (repeatable)")
    vm.add_argument("--machine", type=machine_type, default="pc", metavar="TYPE",
                    help="QEMU machine: pc (default, i440FX) or q35, optionally with machine "
                         "options (q35,acpi=off); on q35 the IDE disk goes on an added PIIX3 "
                         "IDE controller (q35's own IDE is AHCI, which the kernel does not "
                         "drive)")
    vm.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                    help="extra QEMU argument, appended last; use --qemu-arg=-d "
                         "--qemu-arg=int (repeatable). The options the tool sets are refused: "
                         "-smp (use --smp), -accel/-enable-kvm/-cpu (--accel), -machine "
                         "(--machine), -m")
    vm.add_argument("--no-disk", action="store_true",
                    help=f"do not attach the IDE disk {qemu.DISK_IMAGE} (attached by default, "
                         "unless a --qemu-arg gives -drive/-hda/-blockdev; created with the "
                         "sector-number pattern if missing)")

    plat = Parser(add_help=False)
    plat.add_argument("--flavour", choices=hkernel.FLAVOURS, default=None,
                      help="hosted kernel build: plain (default, every scheme the hosted port "
                           "builds), asan (ASan+UBSan), tsan (ThreadSanitizer), hard "
                           "(pthread_sigmask masking); the last three for the default scheme "
                           "only; --platform hosted only")

    sch = Parser(add_help=False)
    sch.add_argument("--scheme", type=scheme_type, metavar="NAME",
                     help="interrupt-masking scheme of the kernel build: "
                          + ", ".join(schemes.SCHEMES) + f" (default {schemes.DEFAULT_SCHEME}, "
                          "in build/kernel/; others in build/kernel-NAME/, built with "
                          "make SCHEME=NAME kernel)")

    t = sub.add_parser("test", parents=[repo, vm, sch, plat],
                       help="boot mode=test and check the verdict",
                       description="Build the kernel, boot it in test mode and pass only if "
                                   "the KTAP plan is complete with no 'not ok' and the exit "
                                   "status is the pass status (QEMU 33, hosted kernel 0); "
                                   "with --platform and --smp lists, every (platform, CPU "
                                   "count) must pass.")
    t.add_argument("--platform", type=platforms_type, default=["qemu"], metavar="P[,P]",
                   help="qemu (default: the x86_64 kernel under QEMU), hosted (the portable "
                        "kernel as a Linux process, build/hosted-kernel/), or qemu,hosted; "
                        "every (platform, CPU count) must pass")
    t.add_argument("--iso", action="store_true",
                   help="boot build/ksync.iso through GRUB (make iso) instead of -kernel")
    t.add_argument("--filter", type=filter_type, metavar="GLOBS",
                   help="run only tests matching these comma-separated globs")

    b = sub.add_parser("boot", parents=[repo, vm, sch, plat],
                       help="boot and stream the serial console",
                       description="Boot the kernel and stream its serial console to stdout. "
                                   "Exit status is the verdict in test/bench mode.")
    b.add_argument("--platform", type=platform_type, default="qemu", metavar="P",
                   help="qemu (default) or hosted (the portable kernel as a Linux process)")
    b.add_argument("--mode", choices=qemu.MODES, default="test", help="kernel mode "
                   "(default test)")
    b.add_argument("--iso", action="store_true", help="boot build/ksync.iso (mode=test only)")
    b.add_argument("--filter", type=filter_type, metavar="GLOBS",
                   help="comma-separated globs of tests/experiments to run")
    b.add_argument("--set", choices=("default", "all"), help="experiment set (bench mode)")
    b.add_argument("--gdb", type=port_type, metavar="PORT",
                   help="start QEMU's gdb stub on localhost:PORT and wait for gdb (-S)")

    shp = sub.add_parser("sh", parents=[repo, vm, sch],
                         help="a busybox shell on ksync: interactive, or -c CMD",
                         description="Boot the kernel in mode=user with Debian's busybox-static "
                                     "in the initramfs (/bin and its applet links). Without "
                                     "-c: an interactive `busybox sh -i` on the serial "
                                     "console, on this terminal in raw mode (^C and ^Z go "
                                     "to the guest's foreground job; exit N or ^D on an "
                                     "empty line powers off and ksync sh exits N; ^] kills "
                                     "QEMU; the boot's own lines go to the log only; "
                                     "--timeout does not apply). With -c CMD, or without "
                                     "it when stdin is not a terminal (CMD = what stdin "
                                     "holds): run `busybox sh` on CMD (working directory /), "
                                     "print its output and exit with its exit status (128+N "
                                     "for a signal N).")
    shp.add_argument("-c", metavar="CMD", help="run this command line instead of the "
                     "interactive shell")
    shp.add_argument("-q", "--quiet", action="store_true",
                     help="interactive: no banner line before the prompt")
    shp.add_argument("--add", action="append", default=[], metavar="LOCAL[:PATH]",
                     help="put the local file LOCAL at PATH in the initramfs (default "
                          "/<its name>; repeatable)")

    r = sub.add_parser("run", parents=[repo, vm], help="measure (primitive costs, interrupt "
                       "schemes) and write the report",
                       description="prims: boot mode=bench filter=prims, run the hosted "
                                   "programs, write <out>/prims.json. irq: for each scheme "
                                   "build it, boot mode=bench filter=irq* with the IDE disk, "
                                   "write <out>/irq.json and the figures (lossmap.png, ...). all (the "
                                   "default): both. Then print the tables and write "
                                   "report.md and report.html from every results JSON in "
                                   "<out>.")
    r.add_argument("--platform", type=platforms_type, default=["qemu", "hosted"],
                   metavar="P[,P]",
                   help="qemu,hosted (default: the tcg tables and the hosted kernel column), "
                        "qemu or hosted. The hosted column runs the plain hosted kernel of "
                        "each scheme the port builds at every --smp value (mode=bench "
                        "set=default) and build/hosted-port/costs(-hard)")
    r.add_argument("what", nargs="?",
                   choices=("all", "prims", "irq", "sprite", "fiasco", "osprims", "sprite-user",
                            "cyclic-user", "sm-user"),
                   default="all",
                   help="what to measure: all (default), prims, irq, sprite (the Sprite "
                        "benchmarks and lock statistics alone), fiasco, or osprims (the "
                        "OS-primitives table against Debian's Linux, --repeat rounds at each "
                        "--smp); the report is rendered from every results JSON in <out>")
    r.add_argument("--sprite-smp", type=smp_type, default=None, metavar="N",
                   help="sprite: CPUs of the QEMU boot whose sweep is 1,2,4,..,N (default: "
                        "the host's cores up to 2; bench set twice the host's cores up to 8; "
                        "more than the host's cores is the emulator's scaling and slow); the "
                        "hosted sweep uses the host's cores")
    r.add_argument("--schemes", type=schemes_type, metavar="LIST",
                   help="irq: comma-separated schemes to measure (default all: "
                        + ",".join(schemes.SCHEMES) + ")")
    r.add_argument("--irq-seconds", type=irq_seconds_type, default=None, metavar="S",
                   help="irq: the kernel's workload duration per case, passed as "
                        "irq_seconds=S (default 1)")
    r.add_argument("--irq-quick", action="store_true",
                   help="irq: smaller loss grid (passes irq_quick=1)")
    r.add_argument("--out", metavar="DIR", help="results directory (default <repo>/results)")
    r.add_argument("--loss-repeats", type=repeat_type, default=None, metavar="N",
                   help="irq: runs per loss cell, the least loss kept (1..20, passed as "
                        "irq_loss_repeats=N; default 3, bench set 7)")
    r.add_argument("--serial-bits", type=int, choices=SERIAL_BITS, default=None,
                   help="irq: bits per character of the serial model: 10 = 8N1 (default), "
                        "8 = the paper's section 6.4 arithmetic (passed as irq_serial_bits=N)")
    r.add_argument("--repeat", type=repeat_type, default=None, metavar="N",
                   help="measure each side N times (1..20, default 3, bench set 7); the table "
                        "shows, per row, the run with the middle median and the spread of the "
                        "medians")
    r.add_argument("--no-peers", action="store_true",
                   help="skip the libksync vs Concurrency Kit / liburcu comparison")
    r.add_argument("--threads", type=threads_type, default=None, metavar="LIST",
                   help="the peer comparison's throughput thread counts, e.g. 1,2,4,8,16 "
                        "(default 1, 2, 4 .. and the usable CPUs); each thread is pinned to "
                        "a CPU of its own, so a count above the usable CPUs is refused")
    r.add_argument("--peer-ms", type=int_range_type(1, 10000), default=None, metavar="MS",
                   help="length of each peer-comparison run in ms (default 200; 500 with "
                        "--set bench)")
    r.add_argument("--peer-runs", type=int_range_type(1, 100), default=None, metavar="N",
                   help="interleaved runs per peer-comparison cell (default 5; 9 with --set "
                        "bench)")
    r.add_argument("--set", choices=tuple(run.RUN_SETS), default="default",
                   help="default (make run), or bench (make bench: --repeat 7, --irq-seconds "
                        "5, --loss-repeats 7, --timeout 1800, longer peer runs, the kernel's "
                        "`all` experiments); options given explicitly win")
    r.add_argument("--hosted-prims", metavar="PATH",
                   help=f"hosted prims program (default <repo>/{hosted.HOSTED_PRIMS})")

    ls = sub.add_parser("lockstat", parents=[repo, vm, sch, plat],
                        help="run one Sprite benchmark and print its lock statistics",
                        description="Boot the kernel (mode=bench filter=sprite) with one Sprite "
                                    "benchmark in one configuration on K CPUs and print the "
                                    "lock_stat table of the run: one row per lock class, "
                                    "sorted by total wait. --every MS also prints snapshots "
                                    "taken in the middle of the run (and --reset zeroes the "
                                    "statistics after each: the paper's two system calls); "
                                    "the snapshot thread shares CPU 0 with the benchmark.")
    ls.add_argument("--platform", type=platform_type, default="qemu", metavar="P",
                    help="qemu (default) or hosted")
    ls.add_argument("--bench", choices=spriterun.BENCHES, default="cswitch",
                    help="the benchmark (default cswitch)")
    ls.add_argument("--config", choices=spriterun.CONFIGS, default="sprite",
                    help="sprite (locked scheduler, Figure 9), sprite-fix or synthesis "
                         "(lock-free scheduler); default sprite")
    ls.add_argument("--cpus", type=smp_type, default=None, metavar="K",
                    help="CPUs the benchmark uses (default: all of --smp)")
    ls.add_argument("--scale", type=int_range_type(1, 10000), default=None, metavar="P",
                    help="percent of the default iteration counts (default 100; qemu 25)")
    ls.add_argument("--mode", choices=spriterun.LOCKSTAT_MODES, default="timing",
                    help="the statistics mode of the run: off, counts, contested (FreeBSD "
                         "LOCK_PROFILING's contested-only: waits per call site, nothing but "
                         "the hit on an uncontended acquisition) or timing (default: counts "
                         "plus wait, hold and masked times). A kernel built with LOCKSTAT=0 "
                         "refuses every mode but off, saying so")
    ls.add_argument("--every", type=int_range_type(1, 100000), default=None, metavar="MS",
                    help="snapshots every MS milliseconds during the run")
    ls.add_argument("--reset", action="store_true",
                    help="with --every: reset the statistics after each snapshot")
    ls.add_argument("--format", choices=("text", "md", "html", "json"), default="text",
                    help="output format (default text)")

    op = sub.add_parser("osprims", parents=[repo],
                        help="OS primitives, ksync against Linux in the same QEMU configuration",
                        description="Run one static binary (bench/user/osprims.c: null system "
                                    "call, 1-byte read/write, open+close, stat, fork, fork+exec, "
                                    "sh -c true, pipe round trip and bandwidth, context switch, "
                                    "page fault, signals) on ksync and on Debian's Linux (a "
                                    "guest image fetched from Debian's packages) with the same "
                                    "QEMU options, the rounds interleaved; write osprims.json "
                                    "and the report, print the table. Under TCG the figures "
                                    "are the emulator's: compare ratios.")
    op.add_argument("--smp", type=smp_list_type, default=[1, 2], metavar="N[,N...]",
                    help="CPU counts (default 1,2)")
    op.add_argument("--rounds", type=int_range_type(1, 50), default=3, metavar="R",
                    help="boots per kernel and CPU count, interleaved (default 3)")
    op.add_argument("--linux", default="std", metavar="K[,K]",
                    help="Linux guests: std (Debian's standard kernel, default), rt "
                         "(PREEMPT_RT), std,rt (a column each), or none (ksync only)")
    op.add_argument("--batches", type=int_range_type(1, 32), default=5, metavar="B",
                    help="batches per row in each run (default 5)")
    op.add_argument("--scale", type=int_range_type(1, 1000), default=1, metavar="S",
                    help="multiply every row's operation count (default 1)")
    _real_program_args(op, "accelerator of both guests")

    su = sub.add_parser("sprite-user", parents=[repo],
                        help="Sprite's nine benchmarks as user programs, ksync beside Linux",
                        description="Run Hartman & Ousterhout's nine benchmarks (fork, fexec, "
                                    "mem, cswitch, pdevtest, pdevtestInd, pmake, pmakeInd, "
                                    "troff) as one static binary (bench/user/sprite.c) on ksync "
                                    "and on Debian's Linux guests with the same QEMU options, "
                                    "n copies at n CPUs, the rounds interleaved; write "
                                    "spriteuser.json and the report (Figure 2 redrawn, the lock "
                                    "each benchmark met most). Under TCG the figures are the "
                                    "emulator's: compare ratios.")
    su.add_argument("--smp", type=smp_list_type, default=[1, 2], metavar="N[,N...]",
                    help="CPU counts (default 1,2; include 1: the ratios are to it)")
    su.add_argument("--rounds", type=int_range_type(1, 50), default=3, metavar="R",
                    help="boots per kernel and CPU count, interleaved (default 3)")
    su.add_argument("--linux", default="std", metavar="K[,K]",
                    help="Linux guests: std, rt, std,rt, or none (default std)")
    su.add_argument("--locks", default="default", metavar="C[,C...]",
                    help="ksync's lock configurations (docs/locks.md): default (the build's), "
                         "sprite, sprite-fix, synthesis, fiasco; several interleave (default: default)")
    su.add_argument("--timing", default="sprite", metavar="C[,C...]",
                    help="lock configurations booted once more per round and CPU count with "
                         "lockstat=timing, for the saturation projection from the real locks' "
                         "hold times (default sprite; none for no such boots)")
    su.add_argument("--mult", type=float, default=1.0, metavar="X",
                    help="multiply every benchmark's per-copy scale (default 1; 0.05..20)")
    _real_program_args(su, "accelerator of every guest")

    cu = sub.add_parser("cyclic-user", parents=[repo],
                        help="cyclictest under load on ksync and Linux (Table 1, user-mode)",
                        description="Run Debian's cyclictest (the same binary) under the same "
                                    "load (hackbench and dd loops) on ksync under each lock "
                                    "configuration and on Debian's Linux guests with the same "
                                    "QEMU options, rounds interleaved; write cyclicuser.json and "
                                    "the report (Hohmuth & Härtig's Table 1 with a user-mode "
                                    "handler). ksync's timed sleeps wake at its clock tick "
                                    "(--hz, an input). Under TCG the figures are the emulator's.")
    cu.add_argument("--smp", type=int_range_type(1, 8), default=2, metavar="N",
                    help="CPUs of every guest (default 2)")
    cu.add_argument("--rounds", type=int_range_type(1, 50), default=3, metavar="R",
                    help="boots per kernel, interleaved (default 3)")
    cu.add_argument("--seconds", type=int_range_type(1, 3600), default=10, metavar="S",
                    help="cyclictest's duration per boot (default 10)")
    cu.add_argument("--hz", type=int_range_type(100, 100000), default=4000, metavar="HZ",
                    help="ksync's clock rate, its timed sleeps' resolution (default 4000)")
    cu.add_argument("--locks", default="sprite,sprite-fix,synthesis,fiasco", metavar="C[,C...]",
                    help="ksync's lock configurations: default, sprite, sprite-fix, synthesis, "
                         "fiasco (default the four)")
    cu.add_argument("--linux", default="rt,std", metavar="K[,K]",
                    help="Linux guests: rt, std, rt,std (default) or none")
    cu.add_argument("--no-load", action="store_true", help="no hackbench/dd load")
    cu.add_argument("--icount-hz", type=int_range_type(100, 100000), default=20000, metavar="HZ",
                    help="ksync's clock rate in the -icount part (default 20000: a 50 us tick "
                         "costs instructions there, not host time; at 20000 under wall-clock "
                         "TCG ksync missed most periods)")
    cu.add_argument("--icount", nargs="?", const="default", default=None, metavar="SPEC",
                    help="also run every guest under QEMU -icount (virtual time; one CPU: "
                         "Debian's Linux hangs bringing up CPU 1 under it), SPEC QEMU's value "
                         "or N for shift=N (default shift=4,align=off,sleep=on); both parts go "
                         "to cyclicuser.json, each with its own table")
    _real_program_args(cu, "accelerator of every guest")

    sm = sub.add_parser("sm-user", parents=[repo],
                        help="Small & Manley's Tables 3-4 and Figure 1 under real programs",
                        description="Run the Andrew-like and WebStone-like loads (one static "
                                    "binary, bench/user/smload.c) on ksync's census kernels "
                                    "(make WINDOWS=1, one per interrupt-masking scheme), the "
                                    "schemes interleaved round by round; the kernel counts its "
                                    "own critical sections (how many, their durations, those an "
                                    "interrupt arrived in). Write smuser.json and the report. "
                                    "Under TCG the durations are the emulator's.")
    sm.add_argument("--schemes", type=schemes_type, default=None, metavar="LIST",
                    help="comma-separated schemes (default " + ",".join(smuser.DEFAULT_SCHEMES)
                         + "; all: " + ",".join(schemes.SCHEMES) + ")")
    sm.add_argument("--rounds", type=int_range_type(1, 50), default=3, metavar="R",
                    help="boots per scheme, interleaved (default 3)")
    sm.add_argument("--smp", type=int_range_type(1, 8), default=1, metavar="N",
                    help="CPUs (default 1: the paper's uniprocessor)")
    sm.add_argument("--scale", type=int_range_type(1, 100), default=smuser.ANDREW_SCALE,
                    metavar="S", help=f"andrew's SCALE (default {smuser.ANDREW_SCALE})")
    sm.add_argument("--clients", type=int_range_type(1, 64), default=smuser.WEB_CLIENTS,
                    metavar="C", help=f"webstone's clients (default {smuser.WEB_CLIENTS})")
    sm.add_argument("--requests", type=int_range_type(1, 100000), default=smuser.WEB_REQUESTS,
                    metavar="Q", help="webstone's requests per client (default "
                                      f"{smuser.WEB_REQUESTS})")
    sm.add_argument("--serial", type=serial_list_type, default=smuser.DEFAULT_SERIAL,
                    metavar="LIST", help="serial-line rates to boot each scheme with, bit/s, "
                    "0 = quiet (default " + ",".join(map(str, smuser.DEFAULT_SERIAL))
                    + ": each round a quiet boot and one with the modelled 16550 receiving "
                    "beside the loads)")
    sm.add_argument("--icount", default=smuser.ICOUNT, metavar="VALUE",
                    help="QEMU -icount value for one more boot of each serial configuration "
                         "(guest time = instructions run: the emulator's host stalls excluded), "
                         "or none (default " + smuser.ICOUNT + ")")
    _real_program_args(sm, "accelerator")

    e = sub.add_parser("env", parents=[repo], help="print the detected environment")
    e.add_argument("--qemu", metavar="PATH", help="QEMU binary to ask for its version")
    e.add_argument("--json", action="store_true", help="print JSON")

    rp = sub.add_parser("report", parents=[repo], help="re-render the report from "
                        "the results JSON files (prims, irq, hosted, sprite)")
    rp.add_argument("--out", metavar="DIR",
                    help="results directory holding prims.json, irq.json, hosted.json and/or "
                         "sprite.json (default <repo>/results)")

    mk = sub.add_parser("mkdisk", parents=[repo], help="create the IDE disk image",
                        description="Write a raw disk image whose sector n holds the 8-byte "
                                    "little-endian value n repeated 64 times (the pattern the "
                                    "kernel's ATA test checks). Left alone if it already has "
                                    "the right size and pattern.")
    mk.add_argument("path", nargs="?", metavar="PATH",
                    help=f"image file (default <repo>/{qemu.DISK_IMAGE})")
    mk.add_argument("--mib", type=mib_type, default=disk.DEFAULT_MIB, metavar="N",
                    help=f"size in MiB (default {disk.DEFAULT_MIB})")
    return p


# ---------------------------------------------------------------------------------------
# commands


COMMANDS = {"test": run.cmd_test, "boot": run.cmd_boot, "run": run.cmd_run, "sh": run.cmd_sh,
            "env": run.cmd_env, "report": run.cmd_report, "mkdisk": run.cmd_mkdisk,
            "lockstat": run.cmd_lockstat, "osprims": run.cmd_osprims,
            "sprite-user": run.cmd_sprite_user, "cyclic-user": run.cmd_cyclic_user,
            "sm-user": run.cmd_sm_user}


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    repo = find_repo(getattr(args, "repo", None))
    return COMMANDS[args.command](args, repo)


def main(argv: list[str] | None = None) -> int:
    try:
        saved = install_signal_handlers()
    except ValueError:
        saved = {}  # not the main thread (an embedding program): its signals stay its own
    try:
        return _handled(argv)
    finally:
        restore_signal_handlers(saved)   # a caller in-process gets its own handlers back


def _handled(argv) -> int:
    try:
        return _main(argv)
    except UsageError as e:
        print(f"ksync: error: {e}", file=sys.stderr)
        return e.exit_code
    except KsyncError as e:
        sys.stdout.flush()
        if e.details:
            print(e.details, file=sys.stderr)
        print(f"ksync: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("ksync: interrupted", file=sys.stderr)
        return 130
    except Terminated as e:
        # the children (QEMU, make, hosted programs) were stopped on the way here
        print(f"ksync: terminated by {e.name}; stopped its child processes", file=sys.stderr)
        return 128 + e.signum
    except BrokenPipeError:
        # stdout went away (e.g. `ksync boot | head`): stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 1
    except OSError as e:
        where = f"{e.filename}: " if e.filename else ""
        print(f"ksync: {where}{e.strerror or e}", file=sys.stderr)
        return 1
