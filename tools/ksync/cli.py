"""ksync command line: ``ksync test|boot|run|env|report`` (also ``python -m ksync``).

User errors print one line ``ksync: error: <reason>`` and exit 2; a failed verdict exits 1;
nothing a user can cause prints a Python traceback.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import __version__, envdetect, hosted, qemu, report
from .util import (KsyncError, Progress, SetupError, UsageError, display_path, find_repo,
                   make, utc_timestamp)

MAX_SMP = 64


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


def repeat_type(text: str) -> int:
    try:
        n = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 20 (got {text!r})") from None
    if not 1 <= n <= 20:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to 20 (got {n})")
    return n


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
    vm.add_argument("--smp", type=smp_type, default=2, metavar="N",
                    help=f"number of CPUs, 1..{MAX_SMP} (default 2)")
    vm.add_argument("--accel", choices=("tcg", "kvm", "auto"), default="tcg",
                    help="accelerator: tcg (default), kvm, or auto (kvm only with hardware "
                         "virtualization)")
    vm.add_argument("--timeout", type=timeout_type, default=300.0, metavar="S",
                    help="wall-clock limit in seconds (default 300)")
    vm.add_argument("--no-build", action="store_true", help="do not run make first")
    vm.add_argument("--verbose", "-v", action="store_true",
                    help="echo the serial console live")
    vm.add_argument("--qemu", metavar="PATH", help="QEMU binary (default: "
                    f"{envdetect.QEMU_BINARY} on PATH)")
    vm.add_argument("--allow-pvm", action="store_true",
                    help="allow --accel kvm on a kvm_pvm host (guest ring-0 is interpreted)")
    vm.add_argument("--append", action="append", default=[], type=words_type, metavar="WORDS",
                    help="extra kernel command-line words, e.g. crash=pf (repeatable)")
    vm.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                    help="extra QEMU argument, appended last; use --qemu-arg=-machine "
                         "--qemu-arg=acpi=off (repeatable)")

    t = sub.add_parser("test", parents=[repo, vm], help="boot mode=test and check the verdict",
                       description="Build the kernel, boot it in test mode and pass only if "
                                   "QEMU exits 33 and the KTAP plan is complete with no "
                                   "'not ok'.")
    t.add_argument("--iso", action="store_true",
                   help="boot build/ksync.iso through GRUB (make iso) instead of -kernel")
    t.add_argument("--filter", type=filter_type, metavar="GLOBS",
                   help="run only tests matching these comma-separated globs")

    b = sub.add_parser("boot", parents=[repo, vm], help="boot and stream the serial console",
                       description="Boot the kernel and stream its serial console to stdout. "
                                   "Exit status is the verdict in test/bench mode.")
    b.add_argument("--mode", choices=qemu.MODES, default="test", help="kernel mode "
                   "(default test)")
    b.add_argument("--iso", action="store_true", help="boot build/ksync.iso (mode=test only)")
    b.add_argument("--filter", type=filter_type, metavar="GLOBS",
                   help="comma-separated globs of tests/experiments to run")
    b.add_argument("--set", choices=("default", "all"), help="experiment set (bench mode)")
    b.add_argument("--gdb", type=port_type, metavar="PORT",
                   help="start QEMU's gdb stub on localhost:PORT and wait for gdb (-S)")

    r = sub.add_parser("run", parents=[repo, vm], help="measure primitive costs (kernel + "
                       "hosted) and write the report",
                       description="Boot mode=bench filter=prims, run the hosted prims "
                                   "program, print the table and write <out>/prims.json, "
                                   "report.md and report.html.")
    r.add_argument("--out", metavar="DIR", help="results directory (default <repo>/results)")
    r.add_argument("--repeat", type=repeat_type, default=3, metavar="N",
                   help="measure each side N times (1..20, default 3); the table shows, per "
                        "row, the run with the middle median and the spread of the medians")
    r.add_argument("--no-peers", action="store_true",
                   help="skip the libksync vs Concurrency Kit / liburcu comparison")
    r.add_argument("--peer-pairs", type=int, default=400000, metavar="N",
                   help="operation pairs per thread in each peer-comparison run (default 400000)")
    r.add_argument("--set", choices=("default", "all"), default="default",
                   help="experiment set (default: default)")
    r.add_argument("--hosted-prims", metavar="PATH",
                   help=f"hosted prims program (default <repo>/{hosted.HOSTED_PRIMS})")

    e = sub.add_parser("env", parents=[repo], help="print the detected environment")
    e.add_argument("--qemu", metavar="PATH", help="QEMU binary to ask for its version")
    e.add_argument("--json", action="store_true", help="print JSON")

    rp = sub.add_parser("report", parents=[repo], help="re-render the report from prims.json")
    rp.add_argument("--out", metavar="DIR",
                    help="results directory holding prims.json (default <repo>/results)")
    return p


# ---------------------------------------------------------------------------------------
# commands


def _boot_config(args, repo: Path, mode: str, filt: str | None = None,
                 set_: str | None = None, iso: bool = False) -> qemu.BootConfig:
    if iso and args.append:
        raise UsageError("--append cannot be used with --iso (GRUB's menu entry fixes the "
                         "kernel command line)")
    return qemu.BootConfig(repo=repo, mode=mode, smp=args.smp, accel=args.accel,
                           timeout=args.timeout, iso=iso, filter=filt, set=set_,
                           qemu=args.qemu, allow_pvm=args.allow_pvm,
                           append=list(args.append), qemu_args=list(args.qemu_arg))


def _echo_stdout(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _summary(cmd: str, res: qemu.BootResult) -> str:
    where = f"smp={res.smp} {res.env}  {res.elapsed:.1f}s  log: {display_path(res.log_path)}"
    if res.passed and res.mode not in qemu.KTAP_MODES and res.timed_out:
        return f"ksync {cmd}: {res.mode} kernel stopped at the {res.elapsed:.0f}s timeout  {where}"
    if res.passed:
        if res.mode in qemu.KTAP_MODES:
            kt = res.ktap
            skipped = f" ({len(kt.skipped)} skipped)" if kt.skipped else ""
            return f"ksync {cmd}: PASS  {kt.ok_count}/{kt.plan} ok{skipped}  {where}"
        return f"ksync {cmd}: PASS  {where}"
    return f"ksync {cmd}: FAIL  {res.reason}  {where}"


def cmd_test(args, repo: Path) -> int:
    if args.iso and args.filter:
        raise UsageError("--filter cannot be used with --iso (the ISO's GRUB entry boots "
                         "plain mode=test)")
    cfg = _boot_config(args, repo, "test", args.filter, iso=args.iso)
    env = qemu.precheck(cfg)
    progress = Progress()
    if not args.no_build:
        target = "iso" if args.iso else "kernel"
        make(repo, target, progress, what="kernel ISO" if args.iso else "kernel")
    progress(f"booting kernel: test, smp={cfg.smp}, {env}"
             + (f", filter={cfg.filter}" if cfg.filter else "") + (", iso" if cfg.iso else ""))
    res = qemu.boot(cfg, echo=_echo_stdout if args.verbose else None)
    if not res.passed:
        print(qemu.failure_report(res), flush=True)
    print(_summary("test", res), flush=True)
    return 0 if res.passed else 1


def cmd_boot(args, repo: Path) -> int:
    if args.iso and (args.mode != "test" or args.filter or args.set):
        raise UsageError("--iso boots the ISO's default GRUB entry (mode=test); --mode, "
                         "--filter and --set need a -kernel boot (drop --iso)")
    cfg = _boot_config(args, repo, args.mode, args.filter, args.set, iso=args.iso)
    cfg.gdb_port = args.gdb
    env = qemu.precheck(cfg)
    progress = Progress()
    if not args.no_build:
        make(repo, "iso" if args.iso else "kernel", progress,
             what="kernel ISO" if args.iso else "kernel")
    progress(f"booting kernel: {cfg.mode}, smp={cfg.smp}, {env}"
             + (f", cmdline '{qemu.kernel_cmdline(cfg)}'" if not cfg.iso else ", iso")
             + f", timeout {cfg.timeout:g}s")
    if cfg.gdb_port:
        progress(f"QEMU waits for gdb on localhost:{cfg.gdb_port} (guest halted until gdb "
                 "continues)")
    res = qemu.boot(cfg, echo=_echo_stdout)
    print(_summary("boot", res), file=sys.stderr, flush=True)
    return 0 if res.passed else 1


def _hosted_facts(objects) -> dict:
    """The hosted program's own facts object (e.g. ``{"kind":"hosted_boot","tsc_hz":...}``)."""
    for o in objects:
        if o.get("kind") != "prim" and o.get("tsc_hz"):
            return o
    return {}


def cmd_run(args, repo: Path) -> int:
    out_dir = Path(args.out) if args.out else repo / "results"
    cfg = _boot_config(args, repo, "bench", "prims,lf_cost,lf_fifo_cost", args.set)
    env = qemu.precheck(cfg)
    progress = Progress()
    if env == "kvm-pvm":
        # kvm_pvm stops the guest at a ring-0 cmpxchg16b (QEMU then pauses): leave it out
        cfg.append = [*cfg.append, "skip=cmpxchg16b"]
        progress("kvm-pvm: the kernel leaves the cmpxchg16b row out (it stops the guest)")
    host_model = envdetect.cpu_model()
    meta = {
        "timestamp": utc_timestamp(),
        "commit": envdetect.git_commit(repo),
        "host_cpu_model": host_model,
        "host_cpus": envdetect.cpu_count(),
        "qemu_version": envdetect.qemu_version(envdetect.find_qemu(args.qemu)),
    }

    # (a) kernel
    if not args.no_build:
        make(repo, "kernel", progress)
    kruns: list[list[dict]] = []
    for i in range(args.repeat):
        progress(f"booting kernel: prims, smp={cfg.smp}, {env}, run {i + 1} of {args.repeat}, "
                 f"timeout {cfg.timeout:g}s")
        res = qemu.boot(cfg, echo=_echo_stdout if args.verbose else None)
        if not res.passed:
            print(qemu.failure_report(res), file=sys.stderr, flush=True)
            raise KsyncError(f"kernel prims run failed: {res.reason}")
        rows = res.objects.of_kind("prim")
        progress(f"kernel done in {res.elapsed:.1f}s: {len(rows)} prim rows, "
                 f"log {display_path(res.log_path)}")
        if not rows:
            raise KsyncError('kernel printed no KSYNC {"kind":"prim"} rows in mode=bench '
                             f"filter=prims; see {display_path(res.log_path)}")
        kruns.append(rows)
    krows = report.middle_run_rows(kruns)
    bootobj = res.boot or {}
    if not bootobj:
        progress('warning: kernel printed no KSYNC {"kind":"boot"} object; TSC frequency '
                 "unknown")
    kernel_side = {
        "env": res.env,
        "cpus": bootobj.get("cpus_online") or bootobj.get("cpus") or cfg.smp,
        "cpu_model": host_model,
        "guest_cpu_model": bootobj.get("cpu_model"),
        "tsc_hz": bootobj.get("tsc_hz"),
        "tsc_source": bootobj.get("tsc_source") or "unknown",
        "hypervisor": bootobj.get("hypervisor"),
        "scheme": bootobj.get("scheme"),
        "cmdline": res.cmdline,
        "log": display_path(res.log_path),
        "boot": bootobj or None,
    }

    # (b) hosted
    if not args.no_build:
        make(repo, "bench-hosted", progress, what="hosted benchmarks")
    prims = Path(args.hosted_prims) if args.hosted_prims else repo / hosted.HOSTED_PRIMS
    hruns: list[list[dict]] = []
    for i in range(args.repeat):
        progress(f"running hosted prims ({display_path(prims)}), run {i + 1} of {args.repeat}")
        h = hosted.run_program(prims, args.timeout, repo / qemu.LOG_DIR)
        if not h.passed:
            tail = h.tail()
            msg = [f"FAIL: {h.reason}"]
            if tail:
                msg += [f"--- last {len(tail)} line(s) of output ---", *tail, "---"]
            if h.stderr.strip():
                msg += ["stderr: " + " | ".join(h.stderr.strip().splitlines()[-5:])]
            msg.append(f"full log: {display_path(h.log_path)}")
            print("\n".join(msg), file=sys.stderr, flush=True)
            raise KsyncError(f"hosted prims failed: {h.reason}")
        rows = h.objects.of_kind("prim")
        progress(f"hosted done in {h.elapsed:.1f}s: {len(rows)} prim rows, "
                 f"log {display_path(h.log_path)}")
        if not rows:
            raise KsyncError(f'{display_path(prims)} printed no KSYNC {{"kind":"prim"}} rows; '
                             f"see {display_path(h.log_path)}")
        if not args.hosted_prims:
            for prog in hosted.HOSTED_COST:
                if not (repo / prog).exists():
                    continue
                c = hosted.run_program(repo / prog, args.timeout, repo / qemu.LOG_DIR)
                if not c.passed:
                    raise KsyncError(f"{display_path(repo / prog)} failed: {c.reason}; "
                                     f"see {display_path(c.log_path)}")
                rows = rows + c.objects.of_kind("prim")
            progress(f"hosted cost tables done: {len(rows)} rows in all")
        hruns.append(rows)
    hrows = report.middle_run_rows(hruns)
    facts = _hosted_facts(h.objects)
    tsc_hz, tsc_src = None, None
    try:
        tsc_hz = int(facts["tsc_hz"])
        tsc_src = str(facts.get("tsc_source") or f"reported by prims ({facts.get('kind')})")
    except (KeyError, TypeError, ValueError):
        tsc_hz, tsc_src = envdetect.host_tsc_hz()
    hosted_side = {
        "env": "hosted",
        "cpus": facts.get("cpus") or envdetect.cpu_count(),
        "cpu_model": host_model,
        "prims_cpu_model": facts.get("cpu_model"),
        "tsc_hz": tsc_hz,
        "tsc_source": tsc_src,
        "log": display_path(h.log_path),
        "facts": facts or None,
    }

    # (b2) libksync vs its peers (Concurrency Kit, liburcu), hosted
    cmp_rows: list[dict] = []
    if not args.no_peers:
        cmp_prog = repo / hosted.HOSTED_CMP
        if not cmp_prog.exists():
            progress(f"peer comparison skipped ({display_path(cmp_prog)} was not built)")
        else:
            progress(f"running libksync vs Concurrency Kit and liburcu ({display_path(cmp_prog)})")
            c = hosted.run_program(cmp_prog, args.timeout, repo / qemu.LOG_DIR,
                                   args=[str(args.peer_pairs), str(max(args.repeat, 3))])
            if not c.passed:
                print("\n".join([f"FAIL: {c.reason}", *c.tail(),
                                 f"full log: {display_path(c.log_path)}"]),
                      file=sys.stderr, flush=True)
                raise KsyncError(f"peer comparison failed: {c.reason}")
            cmp_rows = c.objects.of_kind("cmp")
            progress(f"peer comparison done in {c.elapsed:.1f}s: {len(cmp_rows)} rows, "
                     f"log {display_path(c.log_path)}")

    # (c) report
    data = report.make_prims_data(krows, hrows, kernel_side, hosted_side, meta, cmp_rows)
    written = report.write_reports(data, out_dir)
    print(report.render_text(report.prims_document(data)), end="", flush=True)
    progress("wrote " + ", ".join(display_path(p) for p in written))
    return 0


def cmd_env(args, repo: Path) -> int:
    info = envdetect.describe(repo, args.qemu)
    info["repo"] = str(repo)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    tsc = report.fmt_hz(info["host_tsc_hz"])
    rows = [
        ("host CPU model", info["host_cpu_model"]),
        ("host CPUs", str(info["host_cpus"])),
        ("host TSC", f"{tsc} (source: {info['host_tsc_source']})"),
        ("KVM", info["kvm_status"]),
        ("--accel auto picks", info["auto_accel"]),
        ("QEMU", f"{info['qemu'] or 'not found'}"
                 + (f", version {info['qemu_version']}" if info["qemu"] else
                    f" ({envdetect.QEMU_INSTALL_HINT})")),
        ("commit", info["commit"]),
        ("repo", info["repo"]),
    ]
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k.ljust(w)} : {v}")
    return 0


def cmd_report(args, repo: Path) -> int:
    out_dir = Path(args.out) if args.out else repo / "results"
    data = report.load_prims(out_dir / "prims.json")
    written = report.write_reports(data, out_dir, write_json=False)
    print(report.render_text(report.prims_document(data)), end="", flush=True)
    print("wrote " + ", ".join(display_path(p) for p in written), file=sys.stderr)
    return 0


COMMANDS = {"test": cmd_test, "boot": cmd_boot, "run": cmd_run, "env": cmd_env,
            "report": cmd_report}


def _main(argv) -> int:
    args = build_parser().parse_args(argv)
    repo = find_repo(getattr(args, "repo", None))
    return COMMANDS[args.command](args, repo)


def main(argv: list[str] | None = None) -> int:
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
