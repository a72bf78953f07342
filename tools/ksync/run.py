"""What each ksync command does, once cli.py has parsed it: build, boot (QEMU or the hosted
port), measure, collect the results JSON and render the report.

``cmd_run`` orchestrates a results run: the primitive costs (``_run_prims``), the
interrupt-scheme runs (``_run_irq``), the hosted column (``_run_hosted_column``), Sprite's
locks (``_run_sprite``), the Fiasco experiments (``_run_fiasco``) and the report
(document.render_results_doc). ``cmd_test``, ``cmd_boot``, ``cmd_lockstat``, ``cmd_env``,
``cmd_report`` and ``cmd_mkdisk`` are the other commands.
"""
from __future__ import annotations

import dataclasses
import json
import os
import stat
import sys
from datetime import datetime
from pathlib import Path

from . import (cyclicuser, cyclicuserreport, disk, document, envdetect, fiascorun, hkernel, hosted, hosteddata, irqdata,
               linuxguest, osprimsreport, osprimsrun, peers, qemu, report, schemes, smuser,
               smuserreport, spriteuser, spriteuserreport,
               spritereport, spriterun)
from . import busybox, cpio, dynlibs, shell, userprogs
from .util import KsyncError, Progress, UsageError, display_path, make, utc_timestamp

DEFAULT_TIMEOUT = 300.0



@dataclasses.dataclass(frozen=True)
class RunSet:
    """What ``ksync run --set NAME`` measures for every option the user does not give."""
    name: str
    kernel_set: str     # the kernel's experiment set (set= word): default | all
    repeat: int         # --repeat: kernel and hosted prims runs
    irq_seconds: str    # --irq-seconds: the kernel's irq_seconds= per workload case
    loss_repeats: int   # --loss-repeats: the kernel's irq_loss_repeats= per loss cell
    timeout: float      # --timeout: per boot (an irq boot of the bench set takes minutes)



# `make run` is "default"; `make bench` is "bench": the longer set (more repeats, longer
# workload and loss runs, the kernel's `all` experiments).
RUN_SETS = {
    "default": RunSet("default", "default", repeat=3, irq_seconds="1", loss_repeats=3,
                      timeout=DEFAULT_TIMEOUT),
    "bench": RunSet("bench", "all", repeat=7, irq_seconds="5", loss_repeats=7,
                    timeout=1800.0),
}



def _boot_config(args, repo: Path, mode: str, filt: str | None = None,
                 set_: str | None = None, iso: bool = False,
                 smp: int | None = None) -> qemu.BootConfig:
    if iso and args.append:
        raise UsageError("--append cannot be used with --iso (GRUB's menu entry fixes the "
                         "kernel command line)")
    scheme = getattr(args, "scheme", None)
    if iso and scheme not in (None, schemes.DEFAULT_SCHEME):
        raise UsageError(f"--scheme {scheme} cannot be used with --iso (the ISO holds the "
                         f"default scheme's kernel, {schemes.DEFAULT_SCHEME})")
    return qemu.BootConfig(repo=repo, mode=mode, smp=smp or args.smp[0], accel=args.accel,
                           timeout=args.timeout if args.timeout is not None else DEFAULT_TIMEOUT,
                           iso=iso, filter=filt, set=set_,
                           qemu=args.qemu, allow_pvm=args.allow_pvm,
                           append=list(args.append), qemu_args=list(args.qemu_arg),
                           scheme=scheme, machine=args.machine,
                           disk=None if args.no_disk or qemu.user_gives_disk(args.qemu_arg)
                           else repo / qemu.DISK_IMAGE)



def _build_kernel(args, repo: Path, progress, iso: bool = False) -> None:
    scheme = getattr(args, "scheme", None)
    if iso:
        make(repo, "iso", progress, what="kernel ISO")
    else:
        make(repo, "kernel", progress,
             what="kernel" + (f", scheme {scheme}" if scheme else ""),
             variables=schemes.make_vars(scheme))



def _scheme_words(cfg: qemu.BootConfig) -> str:
    return f", scheme {cfg.scheme}" if cfg.scheme else ""



def _echo_stdout(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()



def _summary(cmd: str, res: qemu.BootResult) -> str:
    """One line per run, keyed by (platform, scheme, cpus) and naming the environment."""
    machine = "" if res.machine in ("pc", "hosted") else f" machine={res.machine}"
    flavour = f" flavour={res.flavour}" if res.platform == "hosted" else ""
    scheme = res.scheme or schemes.DEFAULT_SCHEME
    where = (f"{res.platform} {scheme} smp={res.smp}{machine}{flavour} {res.env}  "
             f"{res.elapsed:.1f}s  log: {display_path(res.log_path)}")
    if res.passed and res.mode not in qemu.KTAP_MODES and res.timed_out:
        return f"ksync {cmd}: {res.mode} kernel stopped at the {res.elapsed:.0f}s timeout  {where}"
    if res.passed:
        if res.mode in qemu.KTAP_MODES:
            kt = res.ktap
            skipped = f" ({len(kt.skipped)} skipped)" if kt.skipped else ""
            return f"ksync {cmd}: PASS  {kt.ok_count}/{kt.plan} ok{skipped}  {where}"
        return f"ksync {cmd}: PASS  {where}"
    return f"ksync {cmd}: FAIL  {res.reason}  {where}"

QEMU_ONLY = (("iso", "--iso"), ("gdb", "--gdb"), ("qemu_arg", "--qemu-arg"),
             ("qemu", "--qemu"), ("allow_pvm", "--allow-pvm"))



def check_platform_options(args, platforms: list[str]) -> None:
    """Options that make no sense for the platforms asked for are usage errors: QEMU's own
    options on a hosted-only run, --flavour without hosted, a scheme or flavour the hosted
    port does not build."""
    if "qemu" not in platforms:
        given = [opt for key, opt in QEMU_ONLY if getattr(args, key, None)]
        if args.machine != "pc":
            given.append("--machine")
        if args.accel != "tcg":
            given.append("--accel")
        if given:
            raise UsageError(f"{', '.join(given)}: QEMU option(s), not for --platform hosted")
    flavour = getattr(args, "flavour", None)
    if flavour and "hosted" not in platforms:
        raise UsageError(f"--flavour {flavour} is for --platform hosted (the QEMU kernel has "
                         "one build per scheme)")
    if "hosted" in platforms and hasattr(args, "scheme"):
        hkernel.check_hosted(args.scheme, flavour)



def _hosted_config(args, repo: Path, mode: str, smp: int, filt: str | None = None,
                   set_: str | None = None, scheme: str | None = None,
                   flavour: str | None = None, timeout: float | None = None
                   ) -> hkernel.HostedBootConfig:
    return hkernel.HostedBootConfig(
        repo=repo, mode=mode, smp=smp,
        timeout=timeout or (args.timeout if args.timeout is not None else DEFAULT_TIMEOUT),
        filter=filt, set=set_, append=list(args.append),
        scheme=scheme or getattr(args, "scheme", None),
        flavour=flavour or getattr(args, "flavour", None) or hkernel.DEFAULT_FLAVOUR,
        disk=None if args.no_disk else repo / qemu.DISK_IMAGE)



def _build_hosted(repo: Path, progress, scheme: str | None, flavour: str | None) -> None:
    scheme, flavour = hkernel.check_hosted(scheme, flavour)
    make(repo, "hosted-kernel", progress,
         what=f"hosted kernel, scheme {scheme}, flavour {flavour}",
         variables={"SCHEME": scheme, "FLAVOUR": flavour})



def _boot_any(args, repo: Path, platform: str, mode: str, smp: int, progress,
              filt: str | None = None, set_: str | None = None, iso: bool = False,
              echo=None) -> qemu.BootResult:
    """One boot on ``platform``: QEMU or the hosted kernel."""
    if platform == "hosted":
        cfg = _hosted_config(args, repo, mode, smp, filt, set_)
        progress(f"running hosted kernel: {mode}, scheme "
                 f"{schemes.check_scheme(cfg.scheme)}, smp={smp}, flavour {cfg.flavour}"
                 + (f", filter={filt}" if filt else "") + f", timeout {cfg.timeout:g}s")
        return hkernel.boot(cfg, echo=echo)
    cfg = _boot_config(args, repo, mode, filt, set_, iso=iso, smp=smp)
    cfg.gdb_port = getattr(args, "gdb", None)
    env = qemu.precheck(cfg)
    progress(f"booting kernel: {mode}{_scheme_words(cfg)}, smp={cfg.smp}, {env}"
             + (f", filter={cfg.filter}" if cfg.filter else "") + (", iso" if cfg.iso else "")
             + (f", cmdline '{qemu.qemu_kernel_cmdline(cfg)}'" if mode != "test" and not iso
                else "") + f", timeout {cfg.timeout:g}s")
    if cfg.gdb_port:
        progress(f"QEMU waits for gdb on localhost:{cfg.gdb_port} (guest halted until gdb "
                 "continues)")
    return qemu.boot(cfg, echo=echo)



def _prepare_platforms(args, repo: Path, platforms: list[str], progress,
                       iso: bool = False) -> None:
    """Check (QEMU present, ...) and build what each platform boots, before any boot."""
    if "qemu" in platforms:
        for smp in args.smp:
            qemu.precheck(_boot_config(args, repo, "test", iso=iso, smp=smp))
    if args.no_build:
        return
    if "qemu" in platforms:
        _build_kernel(args, repo, progress, iso=iso)
    if "hosted" in platforms:
        _build_hosted(repo, progress, args.scheme, args.flavour)



def cmd_test(args, repo: Path) -> int:
    if args.iso and args.filter:
        raise UsageError("--filter cannot be used with --iso (the ISO's GRUB entry boots "
                         "plain mode=test)")
    check_platform_options(args, args.platform)
    _boot_config(args, repo, "test", args.filter, iso=args.iso)   # option checks
    progress = Progress()
    _prepare_platforms(args, repo, args.platform, progress, iso=args.iso)
    results = []
    for platform in args.platform:
        for smp in args.smp:
            res = _boot_any(args, repo, platform, "test", smp, progress, args.filter,
                            iso=args.iso and platform == "qemu",
                            echo=_echo_stdout if args.verbose else None)
            if res.bad_filter:
                raise UsageError(res.reason)
            if not res.passed:
                print(qemu.failure_report(res), flush=True)
            print(_summary("test", res), flush=True)
            results.append(res)
    if len(results) > 1:
        bad = [r for r in results if not r.passed]
        print(f"ksync test: {len(results) - len(bad)} of {len(results)} runs passed"
              + (": failed " + ", ".join(f"{r.platform} {r.scheme or schemes.DEFAULT_SCHEME} "
                                         f"smp={r.smp}" for r in bad) if bad else ""),
              flush=True)
    return 0 if all(r.passed for r in results) else 1



def cmd_boot(args, repo: Path) -> int:
    if args.iso and (args.mode != "test" or args.filter or args.set):
        raise UsageError("--iso boots the ISO's default GRUB entry (mode=test); --mode, "
                         "--filter and --set need a -kernel boot (drop --iso)")
    if len(args.smp) != 1:
        raise UsageError("ksync boot takes one --smp value (a sweep is for test and run)")
    platforms = [args.platform]
    check_platform_options(args, platforms)
    _boot_config(args, repo, args.mode, args.filter, args.set, iso=args.iso)
    progress = Progress()
    _prepare_platforms(args, repo, platforms, progress, iso=args.iso)
    res = _boot_any(args, repo, args.platform, args.mode, args.smp[0], progress, args.filter,
                    args.set, iso=args.iso, echo=_echo_stdout)
    if res.bad_filter:
        raise UsageError(res.reason)
    if not res.passed and args.platform == "hosted":
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    print(_summary("boot", res), file=sys.stderr, flush=True)
    return 0 if res.passed else 1



def _sh_adds(adds: list[str]) -> list[cpio.Entry]:
    """--add LOCAL[:PATH]: the local file at PATH in the initramfs (default /<its name>)."""
    out = []
    for spec in adds:
        local, _, path = spec.partition(":")
        src = Path(local)
        if not src.is_file():
            raise UsageError(f"--add {spec}: {local} is not a file")
        path = (path or "/" + src.name).lstrip("/")
        if not path or any(part in ("", ".", "..") for part in path.split("/")):
            raise UsageError(f"--add {spec}: {path!r} is not a path in the initramfs")
        mode = 0o755 if os.access(src, os.X_OK) else 0o644
        out.append(cpio.Entry(path, stat.S_IFREG | mode, src.read_bytes()))
    return out


def cmd_sh(args, repo: Path) -> int:
    """ksync sh -c CMD: Debian's busybox sh runs CMD on ksync (mode=user, one boot; the
    initramfs of tools/ksync/busybox.py plus --add files); its output goes to stdout and
    its exit status becomes ours (128+N for a signal N). Without -c: the interactive
    shell on the terminal (tools/ksync/shell.py, kernel/proc/ushell.c), or, when stdin is
    not a terminal, what stdin holds as CMD."""
    if len(args.smp) != 1:
        raise UsageError("ksync sh takes one --smp value")
    if not busybox.have_busybox():
        raise UsageError(f"Debian's busybox-static ({busybox.BUSYBOX}) is missing: run make deps")
    # Debian's hackbench and cyclictest with their libraries (dynamic glibc), then the
    # user's --add files (last: they win)
    extra = dynlibs.rt_tests_entries() + _sh_adds(args.add)
    progress = Progress()
    if not args.no_build:
        _build_kernel(args, repo, progress)
    out = repo / "build" / "user"
    out.mkdir(parents=True, exist_ok=True)
    if args.c is None:
        if sys.stdin.isatty():
            return _interactive_sh(args, repo, out, extra)
        # stdin is a file or a pipe: a non-interactive shell reads its commands from it,
        # as `sh < file` on Linux (no prompt, no echo); they run as -c's script does
        args.c = sys.stdin.read()
    rd = out / "sh.cpio"
    rd.write_bytes(busybox.initramfs(f"{busybox.BUSYBOX} sh /t/sh/cmd.sh\n",
                                     {"cmd": args.c + "\n"}, extra))
    cfg = _boot_config(args, repo, "user")
    cfg = dataclasses.replace(cfg, initrd=rd, disk=None,
                              append=cfg.append + ["user=@/t/list",
                                                   f"epoch={int(datetime.now().timestamp())}"])
    res = qemu.boot(cfg, echo=_echo_stdout if args.verbose else None)
    cases = userprogs.parse_user_ktap(res.lines)
    if len(cases) != 1 or cases[0].status is None:
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
        return 1
    c = cases[0]
    sys.stdout.buffer.write(c.out)
    sys.stdout.flush()
    if c.truncated:
        print("ksync sh: the output was cut (the runner's limit)", file=sys.stderr, flush=True)
    st = c.status
    return (st >> 8) & 0xff if (st & 0x7f) == 0 else 128 + (st & 0x7f)


def _interactive_sh(args, repo: Path, out: Path, extra: list[cpio.Entry]) -> int:
    """``ksync sh``: busybox sh -i on the serial console, the terminal in raw mode."""
    rd = out / "shell.cpio"
    rd.write_bytes(busybox.initramfs("", {}, extra))
    cfg = _boot_config(args, repo, "user")
    cfg = dataclasses.replace(cfg, initrd=rd, disk=None,
                              append=["ushell=1", f"epoch={int(datetime.now().timestamp())}"]
                              + shell.terminal_words() + cfg.append)
    banner = (f"ksync sh: busybox sh on ksync (-smp {cfg.smp}{_scheme_words(cfg)}); "
              "exit or ^D on an empty line powers off, ^] kills QEMU; log: @LOG@")
    return shell.run_shell(cfg, None if args.quiet else banner)


def _hosted_facts(objects) -> dict:
    """The hosted program's own facts object (e.g. ``{"kind":"hosted_boot","tsc_hz":...}``)."""
    for o in objects:
        if o.get("kind") != "prim" and o.get("tsc_hz"):
            return o
    return {}



def apply_run_set(args) -> RunSet:
    """Fill every run option the user left out from ``--set``'s values; returns the set."""
    rs = RUN_SETS[args.set]
    for key in ("repeat", "irq_seconds", "loss_repeats", "timeout"):
        if getattr(args, key) is None:
            setattr(args, key, getattr(rs, key))
    if args.serial_bits is None:
        args.serial_bits = 10
    return rs



def irq_words(args, env: str) -> list[str]:
    """The kernel command-line words of an irq boot (before the user's --append)."""
    words = [f"irq_seconds={args.irq_seconds}", f"irq_loss_repeats={args.loss_repeats}",
             f"irq_serial_bits={args.serial_bits}"]
    if args.irq_quick:
        words.append("irq_quick=1")
    if env == "kvm-pvm":
        words.append("skip=cmpxchg16b")
    return words

RESULT_FILES = (irqdata.PRIMS_JSON, irqdata.IRQ_JSON, hosteddata.HOSTED_JSON,
                spriterun.SPRITE_JSON, fiascorun.FIASCO_JSON, "report.md", "report.html")



def check_out_dir(out_dir: Path) -> None:
    """Make sure the results can be written before minutes of measuring: create the
    directory, write and remove a probe file in it, and check that result files already
    there may be replaced.  UsageError (one line, exit 2) if not."""
    shown = f"--out {display_path(out_dir)}"
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{shown}: exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"{shown}: cannot create the results directory: "
                         f"{e.strerror or e}") from None
    probe = out_dir / f".ksync-write-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UsageError(f"{shown}: cannot write in the results directory: "
                         f"{e.strerror or e}") from None
    for name in RESULT_FILES:
        f = out_dir / name
        if f.exists() and (f.is_dir() or not os.access(f, os.W_OK)):
            raise UsageError(f"{shown}: {name} is there and cannot be replaced")



def cmd_run(args, repo: Path) -> int:
    out_dir = Path(args.out) if args.out else repo / "results"
    if args.what == "prims" and (args.schemes or args.irq_seconds or args.irq_quick
                                 or args.loss_repeats or args.serial_bits):
        raise UsageError("--schemes, --irq-seconds, --irq-quick, --loss-repeats and "
                         "--serial-bits are for `ksync run irq` (or `ksync run`, which runs "
                         "both)")
    check_platform_options(args, args.platform)
    if args.threads and args.threads[-1] > len(os.sched_getaffinity(0)):
        raise UsageError(f"--threads {','.join(map(str, args.threads))}: {args.threads[-1]} "
                         f"threads but {len(os.sched_getaffinity(0))} usable CPUs here (each "
                         "thread of the peer comparison is pinned to a CPU of its own)")
    if args.threads and (args.no_peers or args.what not in ("all", "prims")):
        raise UsageError("--threads is the peer comparison's (ksync run or ksync run prims, "
                         "without --no-peers)")
    on_qemu, on_hosted = "qemu" in args.platform, "hosted" in args.platform
    if not on_qemu and args.what not in ("all", "sprite", "fiasco"):
        raise UsageError(f"`ksync run {args.what}` is a qemu measurement; --platform hosted "
                         "runs the hosted column (ksync run --platform hosted)")
    run_set = apply_run_set(args)
    check_out_dir(out_dir)
    env = qemu.precheck(_boot_config(args, repo, "bench")) if on_qemu else None
    progress = Progress()
    host_model = envdetect.cpu_model()
    meta = {
        "timestamp": utc_timestamp(),
        "commit": envdetect.git_commit(repo),
        "host_cpu_model": host_model,
        "host_cpus": envdetect.cpu_count(),
        "qemu_version": envdetect.qemu_version(envdetect.find_qemu(args.qemu))
        if on_qemu else None,
        "set": run_set.name,
        "repeat": args.repeat,
    }
    prims_data = irq_data = hosted_data = None
    failed: list[dict] = []
    hosted_failed: list[str] = []
    sprite_data = None
    if on_qemu and args.what in ("all", "prims"):
        prims_data = _run_prims(args, repo, env, progress, meta, host_model)
    if on_qemu and args.what in ("all", "irq"):
        irq_data = _run_irq(args, repo, env, progress, meta)
        failed = [r for r in irq_data["schemes"] if r.get("status") != "ok"]
    if on_hosted and args.what == "all":
        hosted_data = _run_hosted_column(args, repo, progress, meta)
        hosted_failed = [f"{r['scheme']} smp={r['cpus']}" for r in hosted_data["runs"]
                         if r.get("status") != "ok"]
        hosted_failed += [c["program"] for c in hosted_data["costs"] if c.get("status") != "ok"]
    if args.what in ("all", "sprite"):
        sprite_data = _run_sprite(args, repo, env, progress, meta, host_model, on_qemu, on_hosted)
        hosted_failed += [f"sprite {r['platform']}" for r in sprite_data["runs"]
                          if r.get("status") != "ok"]
    fiasco_data = None
    if args.what in ("all", "fiasco"):
        fiasco_data = _run_fiasco(args, repo, env, progress, meta, host_model, on_qemu, on_hosted)
        hosted_failed += [f"fiasco {r['platform']} pair {r['pair']}" for r in fiasco_data["runs"]
                          if r.get("status") != "ok"]
    osprims_data = None
    if on_qemu and args.what in ("all", "osprims"):
        # the OS-primitives table: ksync against Debian's Linux, the same QEMU options; a
        # Linux guest that cannot be built leaves ksync's column alone (its reason recorded)
        if not args.no_build and args.what == "osprims":
            make(repo, "kernel", progress)
        osprims_data = osprimsrun.collect(repo, args.smp, args.repeat,
                                          ["std", "rt"] if args.set == "bench" else "std", 5, 1,
                                          args.accel, log=progress, meta=meta)
        failed_os = [f"osprims {r['kernel']} smp={r['smp']} round {r['round'] + 1}"
                     for r in osprims_data["runs"] if not r["ok"]]
        hosted_failed += failed_os
    spriteuser_data = None
    if on_qemu and args.what in ("all", "sprite-user"):
        # Sprite's nine benchmarks as user programs beside Debian's standard Linux
        if not args.no_build and args.what == "sprite-user":
            make(repo, "kernel", progress)
        # the four lock configurations and Debian's standard Linux, each benchmark about
        # a quarter second (mult 0.5: the default set's 15 minutes; a round at mult 1 took
        # 70 s on the 2-core AMD EPYC guest); the bench set runs them at full scale and
        # adds the PREEMPT_RT guest. The saturation projection's timing boots: the sprite
        # configuration (the paper's), every configuration in the bench set
        bench = args.set == "bench"
        spriteuser_data = spriteuser.collect(
            repo, _with_one(args.smp), args.repeat, ["std", "rt"] if bench else ["std"],
            1.0 if bench else 0.5, args.accel, log=progress, meta=meta,
            locks=list(spriteuser.LOCK_CONFIGS),
            timing=list(spriteuser.LOCK_CONFIGS) if bench else ["sprite"])
        hosted_failed += [f"sprite-user {r['kernel']} smp={r['smp']} round {r['round'] + 1}"
                          for r in spriteuser_data["runs"] if not r["ok"]]
    cyclicuser_data = None
    if on_qemu and (args.what == "cyclic-user" or (args.what == "all" and args.set == "bench")):
        # Table 1 with a user-mode handler: cyclictest under load on the four lock
        # configurations and both Linux guests, at the top CPU count (make bench: about
        # 20 s a boot; not in make run's default set for its time)
        if not args.no_build and args.what == "cyclic-user":
            make(repo, "kernel", progress)
        cyclicuser_data = cyclicuser.collect(
            repo, max(args.smp), args.repeat, 10, ["rt", "std"],
            list(cyclicuser.LOCK_CONFIGS), accel=args.accel, log=progress, meta=meta)
        if args.accel == "tcg":
            # and in virtual time (-icount, one CPU): host load cannot reach these figures
            cyclicuser_data = cyclicuser.merge(cyclicuser_data, cyclicuser.collect(
                repo, 1, args.repeat, 10, ["rt", "std"], list(cyclicuser.LOCK_CONFIGS),
                hz=cyclicuser.ICOUNT_HZ, accel=args.accel, log=progress, meta=meta,
                icount=cyclicuser.ICOUNT))
        hosted_failed += [f"cyclic-user {r['flavour']} round {r['round'] + 1}"
                          for r in cyclicuser_data["runs"] if not r["ok"]]

    smuser_data = None
    if on_qemu and args.what in ("all", "sm-user"):
        # Small & Manley's Tables 3-4 and Figure 1 from the kernel's own critical sections
        # under the Andrew-like and WebStone-like programs (about 1.5 s a boot, a census
        # kernel's build about 20 s), each round quiet and with the serial line beside them
        # (smuser.DEFAULT_SERIAL): the paper's Table 4 and Table 3 kernels in the default
        # set (smuser.DEFAULT_SCHEMES: make run's 15 minutes), all seven in the bench set
        names = list(schemes.SCHEMES) if args.set == "bench" else list(smuser.DEFAULT_SCHEMES)
        if not args.no_build:
            smuser.build(repo, names, progress)
        smuser_data = smuser.collect(repo, names, args.repeat, 1, log=progress, meta=meta,
                                     accel=args.accel)
        hosted_failed += [f"sm-user {r['scheme']} round {r['round'] + 1}"
                          + (f" serial {r['serial_baud']}" if r.get("serial_baud") else "")
                          + (" -icount" if r.get("icount") else "")
                          for r in smuser_data["runs"] if not r["ok"]]

    # (c) report: the JSON of what ran, then report.md/.html from every JSON in out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, data in ((irqdata.PRIMS_JSON, prims_data), (irqdata.IRQ_JSON, irq_data),
                       (hosteddata.HOSTED_JSON, hosted_data),
                       (spriterun.SPRITE_JSON, sprite_data),
                       (fiascorun.FIASCO_JSON, fiasco_data),
                       (osprimsrun.OSPRIMS_JSON, osprims_data),
                       (spriteuser.SPRITEUSER_JSON, spriteuser_data),
                       (cyclicuser.CYCLICUSER_JSON, cyclicuser_data),
                       (smuser.SMUSER_JSON, smuser_data)):
        if data is not None:
            path = out_dir / name
            path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n",
                            encoding="utf-8")
            written.append(path)
    files, doc = document.render_results_doc(out_dir, prims=prims_data, irq=irq_data,
                                              warn=progress, hosted=hosted_data,
                                              sprite=sprite_data, fiasco=fiasco_data,
                                              osprims=osprims_data,
                                              spriteuser=spriteuser_data,
                                              cyclicuser=cyclicuser_data,
                                              smuser=smuser_data)
    written += files
    print(report.render_text(doc), end="", flush=True)     # with the figures' file names
    progress("wrote " + ", ".join(display_path(p) for p in written))
    if failed:
        n = len(irq_data["schemes"])
        print(f"ksync: run irq: {len(failed)} of {n} scheme(s) failed: "
              + ", ".join(r["scheme"] for r in failed) + " (reasons above and in the table "
              f"'Interrupt-scheme runs' of {display_path(out_dir / 'report.md')})",
              file=sys.stderr, flush=True)
    if hosted_failed:
        print(f"ksync: run hosted: {len(hosted_failed)} run(s) failed: "
              + ", ".join(hosted_failed) + " (reasons above and in the table 'Hosted kernel "
              f"runs' of {display_path(out_dir / 'report.md')})", file=sys.stderr, flush=True)
    if failed or hosted_failed:
        return 1
    return 0



def _run_prims(args, repo: Path, env: str, progress, meta: dict, host_model: str) -> dict:
    """Primitive costs: kernel boots, hosted programs, peers -> prims.json data.
    An --smp sweep: the first CPU count makes the tables and findings as before;
    each further count's kernel rows go to ``kernel_sweep``, keyed (platform, scheme, cpus)."""
    if not args.no_build:
        make(repo, "kernel", progress)
    # the threads and schedulers (one boot; its failure is recorded, not fatal)
    sched = _kernel_sched(args, repo, env, progress, host_model, args.smp[0])
    krows, kernel_side = _kernel_prims(args, repo, env, progress, host_model, args.smp[0])
    sweep = []
    for n in args.smp[1:]:
        rows, side = _kernel_prims(args, repo, env, progress, host_model, n)
        sweep.append({"platform": "qemu", "scheme": side.get("scheme") or
                      schemes.DEFAULT_SCHEME, "cpus": side["cpus"], "requested_cpus": n,
                      "side": side, "rows": rows})
    data = _hosted_prims(args, repo, progress, meta, host_model, krows, kernel_side)
    data["sched"] = sched
    if sweep:
        first = {"platform": "qemu", "scheme": kernel_side.get("scheme") or
                 schemes.DEFAULT_SCHEME, "cpus": kernel_side["cpus"],
                 "requested_cpus": args.smp[0], "side": kernel_side, "rows": krows}
        data["kernel_sweep"] = [first, *sweep]
    return data



def _kernel_prims(args, repo: Path, env: str, progress, host_model: str, smp: int
                  ) -> tuple[list[dict], dict]:
    """The kernel's prim rows at ``smp`` CPUs (the middle of --repeat runs) and its side."""
    cfg = _boot_config(args, repo, "bench", "prims,lf_cost,lf_fifo_cost",
                       RUN_SETS[args.set].kernel_set, smp=smp)
    if env == "kvm-pvm":
        # kvm_pvm stops the guest at a ring-0 cmpxchg16b (QEMU then pauses): leave it out
        cfg.append = [*cfg.append, "skip=cmpxchg16b"]
        progress("kvm-pvm: the kernel leaves the cmpxchg16b row out (it stops the guest)")
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
        "machine": cfg.machine,
        "log": display_path(res.log_path),
        "boot": bootobj or None,
    }
    return krows, kernel_side



def _kernel_sched(args, repo: Path, env: str, progress, host_model: str, smp: int) -> dict:
    """The threads and schedulers: one boot with filter=sched_ops (kernel/exp/sched_exp.c), its sched_op and
    sched_dispatch rows for the report's tcg columns (schedreport.py), with the pi_wait rows
    of kernel/exp/pi.c (pireport.py). A failure is recorded with its reason and log, never
    fatal to the run."""
    cfg = _boot_config(args, repo, "bench", "sched_ops,pi", RUN_SETS[args.set].kernel_set,
                       smp=smp)
    out: dict = {"status": "failed", "reason": None, "log": None, "side": None, "rows": []}
    progress(f"booting kernel: sched_ops (threads, both schedulers) and pi, smp={cfg.smp}, "
             f"{env}, timeout {cfg.timeout:g}s")
    try:
        res = qemu.boot(cfg, echo=_echo_stdout if args.verbose else None)
    except KsyncError as e:
        out["reason"] = str(e)
        progress(f"kernel sched_ops: FAILED: {e}")
        return out
    bootobj = res.boot or {}
    rows = [dict(o) for o in res.objects
            if o.get("kind") in ("sched_op", "sched_dispatch", "pi_wait")]
    out.update(status="ok" if res.passed and rows else "failed",
               reason=res.reason if not res.passed else (None if rows else
                                                         "no sched_op rows printed"),
               log=display_path(res.log_path), rows=rows,
               side={"env": res.env, "cpus": bootobj.get("cpus_online") or cfg.smp,
                     "cpu_model": host_model, "guest_cpu_model": bootobj.get("cpu_model"),
                     "tsc_hz": bootobj.get("tsc_hz"), "log": display_path(res.log_path)})
    if not res.passed:
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    progress(f"kernel sched_ops: {len(rows)} rows in {res.elapsed:.1f}s"
             + ("" if out["status"] == "ok" else f", FAILED: {out['reason']}")
             + f", log {display_path(res.log_path)}")
    return out



def _run_sched_peers(args, repo: Path, progress) -> dict:
    """Linux's futex / pipe / sched_yield rows (bench/sched_peers.c) beside the
    hosted kernel's yield and wakeup rows."""
    prog = repo / hosted.HOSTED_SCHED_PEERS
    out: dict = {"program": str(hosted.HOSTED_SCHED_PEERS), "status": "failed", "reason": None,
                 "log": None, "facts": None, "rows": []}
    if not args.no_build:
        try:
            make(repo, str(hosted.HOSTED_SCHED_PEERS), progress, what="Linux scheduler peers")
        except KsyncError as e:
            out["reason"] = f"build failed: {e}"
            progress(f"sched_peers: build FAILED: {e}")
            return out
    progress(f"running {display_path(prog)} (Linux futex, pipe, sched_yield)")
    try:
        h = hosted.run_program(prog, args.timeout, repo / qemu.LOG_DIR)
    except KsyncError as e:
        out["reason"] = str(e)
        progress(f"sched_peers: FAILED: {e}")
        return out
    out.update(status="ok" if h.passed else "failed", reason=h.reason,
               log=display_path(h.log_path), facts=_hosted_facts(h.objects) or None,
               rows=[dict(o, env="hosted") for o in h.objects.of_kind("sched_peer")])
    if not h.passed:
        progress(f"sched_peers: FAILED: {h.reason}; see {display_path(h.log_path)}")
    return out



def _hosted_prims(args, repo: Path, progress, meta: dict, host_model: str, krows: list[dict],
                  kernel_side: dict) -> dict:
    """The hosted programs and the peer comparison of prims.json."""
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
            long = args.set == "bench"
            ms = args.peer_ms or (500 if long else 200)
            nruns = args.peer_runs or (9 if long else 5)
            usable = len(os.sched_getaffinity(0))
            threads = args.threads      # checked against the usable CPUs in cmd_run
            plan = peers.planned_seconds(ms, nruns, usable, threads)
            progress(f"running libksync vs Concurrency Kit and liburcu ({display_path(cmp_prog)}): "
                     f"{nruns} interleaved runs of {ms} ms per cell, throughput at "
                     f"{', '.join(map(str, threads or peers.thread_counts(usable)))} threads, "
                     f"about {plan:.0f}s")
            c = hosted.run_program(cmp_prog, max(args.timeout, 3 * plan + 60),
                                   repo / qemu.LOG_DIR,
                                   args=[str(ms), str(nruns),
                                         *([",".join(map(str, threads))] if threads else [])])
            if not c.passed:
                print("\n".join([f"FAIL: {c.reason}", *c.tail(),
                                 f"full log: {display_path(c.log_path)}"]),
                      file=sys.stderr, flush=True)
                raise KsyncError(f"peer comparison failed: {c.reason}")
            cmp_rows = [*c.objects.of_kind("cmp_setup"), *c.objects.of_kind("cmp"),
                        *c.objects.of_kind("cmp_end")]
            progress(f"peer comparison done in {c.elapsed:.1f}s: "
                     f"{len(c.objects.of_kind('cmp'))} cells, "
                     f"log {display_path(c.log_path)}")

    return report.make_prims_data(krows, hrows, kernel_side, hosted_side, meta, cmp_rows)



def _run_hosted_column(args, repo: Path, progress, meta: dict) -> dict:
    """The hosted column.  For each scheme the hosted port builds (and
    --schemes names) and each --smp value: the plain hosted kernel, mode=bench set=default;
    then build/hosted-port/costs and costs-hard.  A failed run is recorded with its reason
    and log; the others still run.  Returns the hosted.json data."""
    names = [s for s in (args.schemes or schemes.SCHEMES) if s in schemes.HOSTED_SCHEMES]
    cores = envdetect.cpu_count()
    kernel_set = RUN_SETS[args.set].kernel_set
    runs: list[dict] = []
    for i, s in enumerate(names):
        if not args.no_build:
            try:
                _build_hosted(repo, progress, s, hkernel.DEFAULT_FLAVOUR)
            except KsyncError as e:
                for n in args.smp:
                    rec = hosteddata.run_record(s, n, host_cores=cores)
                    rec["reason"] = f"build failed: {e}"
                    runs.append(rec)
                progress(f"hosted kernel {s}: build FAILED: {e}")
                continue
        for n in args.smp:
            rec = hosteddata.run_record(s, n, host_cores=cores)
            runs.append(rec)
            cfg = _hosted_config(args, repo, "bench", n, set_=kernel_set, scheme=s,
                                 flavour=hkernel.DEFAULT_FLAVOUR)
            # the Sprite and Fiasco boots are their own (_run_sprite, _run_fiasco)
            cfg.append = [*cfg.append, "sprite=off", "fiasco=off"]
            progress(f"running hosted kernel: bench set={kernel_set}, scheme {s} ({i + 1} of "
                     f"{len(names)}), smp={n}, timeout {cfg.timeout:g}s")
            try:
                res = hkernel.boot(cfg, echo=_echo_stdout if args.verbose else None)
            except KsyncError as e:
                rec["reason"] = str(e)
                progress(f"hosted kernel {s} smp={n}: FAILED: {e}")
                continue
            labels = hkernel.boot_labels(res.boot, cores, n)
            hosteddata.fill_record(rec, res, labels)
            if not res.passed:
                print(qemu.failure_report(res), file=sys.stderr, flush=True)
            for x in rec["refused"]:
                progress(f"hosted kernel {s} smp={n}: {x['name']} refused: {x['reason']}")
            progress(f"hosted kernel {s} smp={n}: "
                     + (f"{len(rec['rows'])} rows in {res.elapsed:.1f}s"
                        if rec["status"] == "ok" else f"FAILED: {rec['reason']}")
                     + f" [{hosteddata.run_label(rec)}], log {display_path(res.log_path)}")
    costs: list[dict] = []
    if not args.no_build:
        try:
            make(repo, "hosted-port", progress, what="hosted port cost programs")
        except KsyncError as e:
            progress(f"hosted port cost programs: build FAILED: {e}")
    for prog in hkernel.HOSTED_COSTS:
        c = {"program": str(prog), "status": "failed", "reason": None, "log": None,
             "facts": None, "sched": None, "placement": None, "rows": []}
        costs.append(c)
        progress(f"running {display_path(repo / prog)}")
        try:
            h = hosted.run_program(repo / prog, args.timeout, repo / qemu.LOG_DIR)
        except KsyncError as e:
            c["reason"] = str(e)
            progress(f"{prog}: FAILED: {e}")
            continue
        c.update(status="ok" if h.passed else "failed", reason=h.reason,
                 log=display_path(h.log_path), facts=_hosted_facts(h.objects) or None,
                 sched=hosteddata.placement_sched(h.lines),
                 placement=next((l for l in h.lines if l.startswith("hosted: ")), None),
                 rows=[dict(o, env="hosted") for o in h.objects.of_kind("prim")])
        if not h.passed:
            progress(f"{prog}: FAILED: {h.reason}; see {display_path(h.log_path)}")
    data = hosteddata.make_hosted_data(runs, costs, meta)
    data["sched_peers"] = _run_sched_peers(args, repo, progress)
    return data



def _run_sprite(args, repo: Path, env: str | None, progress, meta: dict, host_model: str,
                on_qemu: bool, on_hosted: bool) -> dict:
    """The Sprite benchmarks under the three configurations at 1..N CPUs, one
    QEMU boot (tcg: emulated CPUs) and one hosted boot (the default scheme, the host's
    cores). A failed boot is recorded with its reason; the other still runs."""
    plan = spriterun.plans(args.set, envdetect.cpu_count())
    records: list[dict] = []
    if on_qemu:
        p = plan["qemu"]
        if args.sprite_smp:
            p = dataclasses.replace(p, smp=args.sprite_smp)
        if not args.no_build and args.what == "sprite":
            make(repo, "kernel", progress)
        cfg = _boot_config(args, repo, "bench", "sprite", RUN_SETS[args.set].kernel_set,
                           smp=p.smp)
        cfg.append = [*spriterun.words(p), *cfg.append]
        cfg.timeout = max(cfg.timeout, p.timeout)
        progress(f"booting kernel: sprite (Sprite benchmarks, 3 configurations, CPUs "
                 f"{spriterun.cpu_words(p.smp)[0].split('=')[1]}), smp={p.smp}, {env}, "
                 f"timeout {cfg.timeout:g}s")
        rec = spriterun.boot_qemu(cfg, host_model, _echo_stdout if args.verbose else None)
        records.append(rec)
        progress(f"kernel sprite: {spriterun.summary(rec)}, log {spriterun.log_name(rec)}")
    if on_hosted:
        p = plan["hosted"]
        if not args.no_build:
            try:
                _build_hosted(repo, progress, None, hkernel.DEFAULT_FLAVOUR)
            except KsyncError as e:
                records.append(spriterun.failed_record("hosted", "hosted", f"build failed: {e}"))
                p = None
        if p is not None:
            cfg = _hosted_config(args, repo, "bench", p.smp, "sprite",
                                 RUN_SETS[args.set].kernel_set,
                                 flavour=hkernel.DEFAULT_FLAVOUR, timeout=p.timeout)
            cfg.append = [*spriterun.words(p), *cfg.append]
            progress(f"running hosted kernel: sprite, smp={p.smp}, timeout {cfg.timeout:g}s")
            rec = spriterun.boot_hosted(cfg, host_model, _echo_stdout if args.verbose else None)
            records.append(rec)
            progress(f"hosted sprite: {spriterun.summary(rec)}, log {spriterun.log_name(rec)}")
    return spriterun.make_data(records, meta)



def _run_fiasco(args, repo: Path, env: str | None, progress, meta: dict, host_model: str,
                on_qemu: bool, on_hosted: bool) -> dict:
    """Hohmuth & Härtig's Table 2 and Table 1 (lateness of a 250 us handler) under QEMU, interleaved
    with Debian's PREEMPT_RT and standard Linux running cyclictest in the same QEMU
    configuration (pair i: ksync, Linux-RT, Linux), the same under -icount with one vCPU,
    and on the hosted port beside the host's own cyclictest. A Linux half that cannot be
    built (a package missing, no network) is recorded with its one-line reason; ksync's
    half still runs."""
    plan = fiascorun.plans(args.set)
    runs: list[dict] = []
    linux: list[dict] = []
    missing: dict[str, str | None] = {"rt": None, "std": None, "host": None}
    other = linuxguest.other_qemu()
    kernel_set = RUN_SETS[args.set].kernel_set
    echo = _echo_stdout if args.verbose else None
    qemu_base: dict[str, list[str]] = {}     # env -> the QEMU options both guests got
    sweep: list[dict] = []                   # the lateness under every interrupt scheme
    if on_qemu:
        if not args.no_build and args.what == "fiasco":
            make(repo, "kernel", progress)
        if not args.no_build:   # the -icount boots' kernel: the masked-window tracker in
            make(repo, "kernel", progress, what="kernel, masked-window tracker",
                 variables={"WINDOWS": "1"})
        images = {}
        for fl in ("rt", "std"):
            try:
                progress(f"linux guest {fl}: preparing (Debian packages, cached in build/linux-guest)")
                images[fl] = linuxguest.prepare(fl, cache_dir=repo / "build" / "linux-guest")
            except linuxguest.GuestMissing as e:
                missing[fl] = str(e)
                progress(f"linux guest {fl}: MISSING: {e}; the ksync half runs alone")
        smp = args.smp[0]
        for icount in (None, f"shift={plan.icount_shift},align=off,sleep=off"):
            n = plan.pairs if icount is None else plan.icount_pairs
            cpus = smp if icount is None else 1
            env_name = env if icount is None else f"{env}-icount"
            try:
                base = linuxguest.ksync_qemu_base(cpus, args.accel, icount, machine=args.machine,
                                                  allow_pvm=args.allow_pvm)
            except KsyncError as e:
                progress(f"fiasco: {env_name}: {e}")
                runs.append(fiascorun.failed_record("qemu", env_name, f"not run: {e}", 0))
                continue
            qemu_base[env_name] = base
            for i in range(n):
                first = i == 0 and icount is None
                cfg = _boot_config(args, repo, "bench", fiascorun.filt(first), kernel_set, smp=cpus)
                cfg.disk = None         # the Linux guest has none either
                cfg.icount = icount
                cfg.windows = icount is not None    # win_max: the bound of the -icount runs
                cfg.append = [*fiascorun.words(plan, first), *cfg.append]
                cfg.timeout = max(cfg.timeout, plan.timeout)
                progress(f"booting kernel: fiasco{' + Table 2' if first else ''}, lateness "
                         f"{plan.seconds}s x {len(fiascorun.LAT_CONFIGS)} configurations, "
                         f"smp={cpus}, {env_name}, pair {i + 1} of {n}")
                rec = fiascorun.boot_qemu(cfg, host_model, i, env_name, echo)
                runs.append(rec)
                progress(f"kernel fiasco: {fiascorun.summary(rec)}, log {rec['log']}")
                for fl, img in images.items():
                    progress(f"booting Linux {fl}: cyclictest {plan.seconds}s, smp={cpus}, "
                             f"{env_name}, pair {i + 1} of {n}")
                    res = linuxguest.run(img, base, plan.seconds,
                                         log_dir=repo / "build" / "logs")
                    res.update(pair=i, env=env_name, flavour=fl)
                    linux.append(res)
                    progress(f"linux {fl}: {fiascorun.linux_summary(res)}")
        sweep = _fiasco_scheme_sweep(args, repo, env, plan, kernel_set, host_model, progress,
                                     echo)
    if on_hosted:
        try:
            if not args.no_build:
                _build_hosted(repo, progress, None, hkernel.DEFAULT_FLAVOUR)
            ok = True
        except KsyncError as e:
            runs.append(fiascorun.failed_record("hosted", "hosted", f"build failed: {e}", 0))
            ok = False
        if ok:
            hsmp = max(1, min(envdetect.cpu_count(), 16))
            for i in range(plan.hosted_pairs):
                cfg = _hosted_config(args, repo, "bench", hsmp, fiascorun.filt(i == 0), kernel_set,
                                     flavour=hkernel.DEFAULT_FLAVOUR, timeout=plan.timeout)
                cfg.append = [*fiascorun.words(plan, i == 0), *cfg.append]
                progress(f"running hosted kernel: fiasco, smp={hsmp}, pair {i + 1} of "
                         f"{plan.hosted_pairs}")
                rec = fiascorun.boot_hosted(cfg, host_model, i, echo)
                runs.append(rec)
                progress(f"hosted fiasco: {fiascorun.summary(rec)}, log {rec['log']}")
                progress(f"host cyclictest: {plan.seconds}s, pair {i + 1} of {plan.hosted_pairs}")
                res = linuxguest.host_cyclictest(plan.seconds)
                res.update(pair=i, env="host", flavour="host")
                if not res.get("ok") and missing["host"] is None:
                    missing["host"] = res.get("reason")
                linux.append(res)
                progress(f"host cyclictest: {fiascorun.linux_summary(res)}")
    return {"meta": meta, "plan": {**dataclasses.asdict(plan), "qemu_base": qemu_base},
            "runs": runs, "linux": linux, "linux_missing": missing, "other_qemu": other,
            "scheme_sweep": sweep}



def _fiasco_scheme_sweep(args, repo: Path, env: str, plan, kernel_set, host_model: str,
                         progress, echo) -> list[dict]:
    """The lateness under every interrupt scheme: one -icount boot of each scheme's kernel
    (fiascorun.SWEEP_CONFIGS, SWEEP_SECONDS each). A scheme whose build or boot fails is
    recorded with its reason; the others still run."""
    out = []
    icount = f"shift={plan.icount_shift},align=off,sleep=off"
    names = list(schemes.SCHEMES)
    for k, name in enumerate(names):
        env_name = f"{env}-icount"
        try:
            if not args.no_build:
                make(repo, "kernel", None, variables=schemes.make_vars(name))
        except KsyncError as e:
            rec = fiascorun.failed_record("qemu", env_name, f"build failed: {e}", 0)
            rec["scheme"] = name
            out.append(rec)
            progress(f"fiasco scheme sweep: {name}: build failed")
            continue
        cfg = _boot_config(args, repo, "bench", "lateness", kernel_set, smp=1)
        cfg.disk = None
        cfg.icount = icount
        cfg.scheme = name
        cfg.append = [*fiascorun.sweep_words(plan), *cfg.append]
        cfg.timeout = max(cfg.timeout, plan.timeout)
        progress(f"booting kernel: lateness under scheme {name} ({k + 1} of {len(names)}), "
                 f"{'/'.join(fiascorun.SWEEP_CONFIGS)} {fiascorun.SWEEP_SECONDS}s, smp=1, "
                 f"{env_name}")
        rec = fiascorun.boot_qemu(cfg, host_model, 0, env_name, echo)
        rec["scheme"] = name
        out.append(rec)
        progress(f"kernel lateness {name}: {fiascorun.summary(rec)}")
    return out



def _run_irq(args, repo: Path, env: str, progress, meta: dict) -> dict:
    """Interrupt schemes: per scheme build, boot mode=bench filter=irq*, collect
    the irq_* rows.  A scheme that fails is recorded with its reason and log; the others
    still run.  Returns the irq.json data."""
    names = args.schemes or list(schemes.SCHEMES)
    seconds = args.irq_seconds
    runs = []
    for n in args.smp:       # a sweep: every scheme at each CPU count; the first is the tables'
        cfg = _boot_config(args, repo, "bench", "irq*", RUN_SETS[args.set].kernel_set, smp=n)
        cfg.append = irq_words(args, env) + cfg.append   # the user's --append comes last
        for i, s in enumerate(names):
            rec = _run_irq_scheme(args, repo, cfg, s, env, progress, i + 1, len(names),
                                  build=n == args.smp[0])
            rec["platform"], rec["requested_cpus"] = "qemu", n
            runs.append(rec)
    cfg = _boot_config(args, repo, "bench", "irq*", RUN_SETS[args.set].kernel_set)
    options = {"smp": cfg.smp, "smp_sweep": list(args.smp), "accel": args.accel,
               "machine": cfg.machine,
               "irq_seconds": float(seconds),
               "irq_quick": bool(args.irq_quick), "disk": cfg.disk is not None,
               "timeout": cfg.timeout, "schemes": names, "set": args.set,
               "irq_loss_repeats": args.loss_repeats, "serial_bits": args.serial_bits}
    data = irqdata.make_irq_data(runs, meta, options)
    data["hosted"] = _run_spl_fast(args, repo, progress, names)
    return data



def _run_spl_fast(args, repo: Path, progress, names: list[str]) -> dict:
    """The optimistic schemes' crit_enter+crit_leave on the real CPU (the kernel's spl.h
    in user mode, bench/spl_fast.h): hosted irq_prim rows beside the flag, for the bar."""
    out: dict = {"env": "hosted", "facts": None, "rows": [], "failed": []}
    progs = {s: p for s, p in hosted.HOSTED_SPL_FAST.items() if s in names}
    if not progs:
        return out
    if not args.no_build:
        make(repo, "bench-hosted", progress, what="hosted benchmarks")
    for s, prog in progs.items():
        progress(f"running hosted spl fast path ({display_path(prog)})")
        try:
            h = hosted.run_program(repo / prog, args.timeout, repo / qemu.LOG_DIR)
        except KsyncError as e:		# not built (--no-build), not runnable
            out["failed"].append({"scheme": s, "reason": str(e)})
            progress(f"hosted spl fast path {s}: FAILED: {e}")
            continue
        if not h.passed:
            out["failed"].append({"scheme": s, "reason": h.reason})
            progress(f"hosted spl fast path {s}: FAILED: {h.reason}")
            continue
        out["facts"] = out["facts"] or _hosted_facts(h.objects)
        for o in h.objects:
            if o.get("kind") == "irq_prim":
                r = dict(o)
                r["env"] = "hosted"
                out["rows"].append(r)
    return out



def _run_irq_scheme(args, repo: Path, cfg: qemu.BootConfig, scheme: str, env: str, progress,
                    i: int, n: int, build: bool = True) -> dict:
    rec: dict = {"scheme": scheme, "status": "failed", "reason": None, "note": None,
                 "log": None, "env": env, "cpus": None, "tsc_hz": None, "tsc_source": None,
                 "guest_cpu_model": None, "hypervisor": None, "cmdline": None,
                 "elapsed": None, "boot": None, "rows": []}
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    build_log = repo / qemu.LOG_DIR / f"{stamp}-build-{scheme}.log"
    try:
        if build and not args.no_build:
            make(repo, "kernel", progress, what=f"kernel, scheme {scheme} ({i} of {n})",
                 variables={"SCHEME": scheme}, log_path=build_log)
        c = dataclasses.replace(cfg, scheme=scheme, append=list(cfg.append))
        progress(f"booting kernel: irq, scheme {scheme} ({i} of {n}), smp={c.smp}, {env}, "
                 f"timeout {c.timeout:g}s")
        res = qemu.boot(c, echo=_echo_stdout if args.verbose else None)
    except KsyncError as e:
        rec["reason"] = str(e)
        if build_log.exists():
            rec["log"] = display_path(build_log)
        if e.details:
            tail = e.details.splitlines()[-30:]
            print("\n".join(tail), file=sys.stderr, flush=True)
        progress(f"scheme {scheme}: FAILED: {e}")
        return rec
    boot = res.boot or {}
    rows = [dict(o) for o in res.objects
            if isinstance(o.get("kind"), str) and o["kind"].startswith("irq_")]
    reported = {str(r.get("scheme")) for r in rows if r.get("scheme") is not None}
    for r in rows:
        r.setdefault("scheme", scheme)
        r["env"] = res.env
        r["tsc_hz"] = boot.get("tsc_hz")
    rec.update(log=display_path(res.log_path), env=res.env,
               cpus=boot.get("cpus_online") or boot.get("cpus") or c.smp,
               tsc_hz=boot.get("tsc_hz"), tsc_source=boot.get("tsc_source") or "unknown",
               guest_cpu_model=boot.get("cpu_model"), hypervisor=boot.get("hypervisor"),
               cmdline=res.cmdline, elapsed=round(res.elapsed, 2), boot=boot or None,
               rows=rows)
    if not res.passed:
        rec["reason"] = res.reason
        print(qemu.failure_report(res), file=sys.stderr, flush=True)
    elif not rows:
        rec["reason"] = ('kernel printed no KSYNC {"kind":"irq_*"} rows in mode=bench '
                         "filter=irq*")
    elif reported - {scheme}:
        rec["reason"] = (f"kernel rows name scheme {', '.join(sorted(reported))}, "
                         f"expected {scheme} (was it built with make SCHEME={scheme} kernel?)")
    else:
        rec["status"] = "ok"
        if not any(r.get("kind") == "irq_scheme" for r in rows):
            rec["note"] = 'no {"kind":"irq_scheme"} row: scheme not confirmed by the kernel'
        if not boot.get("tsc_hz"):
            rec["note"] = ((rec["note"] + "; ") if rec["note"] else "") + \
                "no boot record: TSC frequency unknown (µs/ns cells are —)"
    if rec["status"] == "ok":
        progress(f"scheme {scheme}: {len(rows)} irq rows in {res.elapsed:.1f}s, "
                 f"log {display_path(res.log_path)}")
    else:
        progress(f"scheme {scheme}: FAILED: {rec['reason']}")
    return rec



def cmd_lockstat(args, repo: Path) -> int:
    """One benchmark run's lock statistics (and snapshots) as a lock_stat table."""
    if args.reset and not args.every:
        raise UsageError("--reset needs --every (it resets after each snapshot)")
    smp = args.smp[0]
    cpus = args.cpus or smp
    if cpus > smp:
        raise UsageError(f"--cpus {cpus} is more than --smp {smp}")
    check_platform_options(args, [args.platform])
    scale = args.scale or (25 if args.platform == "qemu" else 100)
    words = [f"sprite_bench={args.bench}", f"sprite_configs={args.config}",
             f"sprite_cpus={cpus}", "sprite_reps=1", "sprite_perturb=0", "sprite_overhead=0",
             "sprite_costs=0", f"sprite_scale={scale}",
             f"lockstat={args.mode}", f"sprite_lockstat={args.mode}"]
    if args.every:
        words.append(f"sprite_snap_ms={args.every}")
        if args.reset:
            words.append("sprite_snap_reset=1")
    progress = Progress()
    host_model = envdetect.cpu_model()
    if args.platform == "qemu":
        cfg = _boot_config(args, repo, "bench", "sprite", "default")
        cfg.append = [*words, *cfg.append]
        env = qemu.precheck(cfg)
        if not args.no_build:
            _build_kernel(args, repo, progress)
        progress(f"booting kernel: sprite {args.bench} ({args.config}) on {cpus} of {smp} CPUs, "
                 f"{env}")
        rec = spriterun.boot_qemu(cfg, host_model, _echo_stdout if args.verbose else None)
    else:
        if not args.no_build:
            _build_hosted(repo, progress, getattr(args, "scheme", None), args.flavour)
        cfg = _hosted_config(args, repo, "bench", smp, "sprite", "default")
        cfg.append = [*words, *cfg.append]
        progress(f"running hosted kernel: sprite {args.bench} ({args.config}) on {cpus} of "
                 f"{smp} vCPUs")
        rec = spriterun.boot_hosted(cfg, host_model, _echo_stdout if args.verbose else None)
    if rec["status"] != "ok":
        raise KsyncError(f"lockstat: the run failed: {rec['reason']}; log {rec['log']}")
    side = rec["side"] or {}
    env_label = spriterun.env_label(rec)
    groups: list[tuple[str, list[dict]]] = []
    snaps: dict[int, list[dict]] = {}
    final: list[dict] = []
    for r in rec["rows"]:
        if r.get("kind") != "lockstat":
            continue
        if "snapshot" in r:
            snaps.setdefault(int(r["snapshot"]), []).append(r)
        elif "run" in r:
            final.append(r)
    for i in sorted(snaps):
        ms = snaps[i][0].get("since_start_ticks", 0) / (side.get("tsc_hz") or 1) * 1000
        groups.append((f"Snapshot {i} of {args.bench} ({args.config}, {cpus} CPUs) at {ms:.1f} ms"
                       + (" (since the previous snapshot's reset)" if args.reset and i else ""),
                       snaps[i]))
    groups.append((f"Lock statistics of {args.bench} ({args.config}, {cpus} CPUs)"
                   + (", after the last snapshot's reset" if args.reset and snaps else ""), final))
    if args.format == "json":
        out = [{"title": t, "env": env_label,
                "classes": spritereport.lockstat_records(rows, side.get("tsc_hz"), cpus)}
               for t, rows in groups]
        print(json.dumps(out, indent=2))
        return 0
    tables = [spritereport.lockstat_table(rows, t, env_label, side.get("tsc_hz"), cpus)
              for t, rows in groups]
    doc = report.Document(title=f"ksync lockstat: {args.bench}, {args.config}, {cpus} CPUs "
                                f"[{env_label}]", tables=tables,
                          meta=[("environment", env_label), ("log", rec["log"] or "-")])
    if args.format == "md":
        print(report.render_markdown(doc), end="")
    elif args.format == "html":
        print(report.render_html(doc), end="")
    else:
        print(report.render_text(doc), end="")
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
    prims = irq = None
    others = (irqdata.IRQ_JSON, hosteddata.HOSTED_JSON, spriterun.SPRITE_JSON,
              fiascorun.FIASCO_JSON, osprimsreport.OSPRIMS_JSON,
              spriteuserreport.SPRITEUSER_JSON, cyclicuserreport.CYCLICUSER_JSON)
    # prims.json is required only when no other results file is there (the error names it)
    if (out_dir / irqdata.PRIMS_JSON).exists() or not any((out_dir / n).exists() for n in others):
        prims = report.load_prims(out_dir / irqdata.PRIMS_JSON)
    if (out_dir / irqdata.IRQ_JSON).exists():
        irq = irqdata.load_irq(out_dir / irqdata.IRQ_JSON)
    hosted_data = None
    if (out_dir / hosteddata.HOSTED_JSON).exists():
        hosted_data = hosteddata.load_hosted(out_dir / hosteddata.HOSTED_JSON)
    written, doc = document.render_results_doc(out_dir, prims=prims, irq=irq, strict=True,
                                                hosted=hosted_data)
    print(report.render_text(doc), end="", flush=True)
    print("wrote " + ", ".join(display_path(p) for p in written), file=sys.stderr)
    return 0



def _qemu_meta(repo: Path) -> dict:
    """The run facts a real-programs results file records (when, which commit, where)."""
    return {"timestamp": utc_timestamp(), "commit": envdetect.git_commit(repo),
            "host_cpu_model": envdetect.cpu_model(), "host_cpus": envdetect.cpu_count(),
            "qemu_version": envdetect.qemu_version(envdetect.find_qemu(None))}


def _experiment_done(out_dir: Path, name: str, data: dict, doc_key: str, findings, tables,
                     tag: str, run_name, missing_lines: list[str]) -> int:
    """The end of a real-programs command: the results file, each failed run with its
    reason, the report rendered, the findings and tables printed, what was written, the
    Linux guests that could not be had; exit 1 when a run failed or none ran."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / name
    path.write_text(json.dumps(data, indent=1) + "\n")
    failed = [r for r in data["runs"] if not r["ok"]]
    for r in failed:
        print(f"{tag}: {run_name(r)} round {r['round'] + 1}: {r['reason']}", file=sys.stderr)
    written, _doc = document.render_results_doc(
        out_dir, warn=lambda m: print(f"ksync: {m}", file=sys.stderr), **{doc_key: data})
    for f in findings(data):
        print(f"{f.verdict}: {f.claim} [{f.env}]: {f.today}")
    for t in tables(data):
        print(report.render_table_text(t))
    print("wrote " + ", ".join(display_path(p) for p in [path, *written]), file=sys.stderr)
    for line in missing_lines:
        print(f"{tag}: {line}", file=sys.stderr)
    return 1 if failed or not data["runs"] else 0


def cmd_osprims(args, repo: Path) -> int:
    """The OS-primitives table: the same static binary on ksync and on Debian's Linux in the
    same QEMU configuration, rounds interleaved; osprims.json and the report in --out."""
    out_dir = Path(args.out) if args.out else repo / "results"
    check_out_dir(out_dir)
    if not args.no_build:
        make(repo, "kernel")
    meta = _qemu_meta(repo)
    linux = None if args.linux == "none" else [x.strip() for x in args.linux.split(",")]
    if linux and any(x not in linuxguest.FLAVOURS for x in linux):
        raise UsageError(f"--linux {args.linux}: each of std, rt (or none)")
    data = osprimsrun.collect(repo, args.smp, args.rounds, linux, args.batches, args.scale,
                              args.accel, log=lambda s: print(s, file=sys.stderr, flush=True),
                              meta=meta)
    why = data["options"].get("linux_missing")
    return _experiment_done(out_dir, osprimsrun.OSPRIMS_JSON, data, "osprims",
                            osprimsreport.os_findings, osprimsreport.os_tables, "ksync osprims",
                            lambda r: f"{r['kernel']} smp={r['smp']}",
                            [f"no Linux column: {why}"] if why else [])


def _with_one(smps: list[int]) -> list[int]:
    """The CPU counts with 1 among them: Figure 2's ratios are to the uniprocessor run."""
    return sorted(set(smps) | {1})


def cmd_sprite_user(args, repo: Path) -> int:
    """Sprite's nine benchmarks as user programs on ksync and Linux guests, the same QEMU
    configuration, rounds interleaved; spriteuser.json and the report in --out."""
    out_dir = Path(args.out) if args.out else repo / "results"
    check_out_dir(out_dir)
    linux = [] if args.linux == "none" else [x.strip() for x in args.linux.split(",")]
    bad = [x for x in linux if x not in linuxguest.FLAVOURS]
    if bad or not 0.05 <= args.mult <= 20:
        raise UsageError(f"--linux {args.linux}: each of std, rt (or none)" if bad else
                         f"--mult {args.mult}: 0.05..20")
    locks = _locks_arg(args.locks, spriteuser.LOCK_CONFIGS)
    timing = [] if args.timing == "none" else _locks_arg(args.timing, spriteuser.LOCK_CONFIGS,
                                                         "--timing")
    if not args.no_build:
        make(repo, "kernel")
    meta = _qemu_meta(repo)
    data = spriteuser.collect(repo, _with_one(args.smp), args.rounds, linux, args.mult,
                              args.accel, log=lambda s: print(s, file=sys.stderr, flush=True),
                              meta=meta, locks=locks, timing=timing)
    return _experiment_done(out_dir, spriteuser.SPRITEUSER_JSON, data, "spriteuser",
                            spriteuserreport.user_findings, spriteuserreport.user_tables,
                            "ksync sprite-user", lambda r: f"{r['kernel']} smp={r['smp']}",
                            [f"no linux-{k} column: {v}" for k, v in
                             (data["options"].get("linux_missing") or {}).items()])


def _locks_arg(text: str, known: tuple[str, ...], opt: str = "--locks") -> list[str | None]:
    locks = [x.strip() for x in text.split(",")]
    bad = [x for x in locks if x != "default" and x not in known]
    if bad:
        raise UsageError(f"{opt} {text}: each of default, {', '.join(known)}")
    return [None if x == "default" else x for x in dict.fromkeys(locks)]


def cmd_cyclic_user(args, repo: Path) -> int:
    """cyclictest under load on ksync's lock configurations and Linux guests, the same QEMU
    configuration, rounds interleaved; cyclicuser.json and the report in --out."""
    out_dir = Path(args.out) if args.out else repo / "results"
    check_out_dir(out_dir)
    linux = [] if args.linux == "none" else [x.strip() for x in args.linux.split(",")]
    if any(x not in linuxguest.FLAVOURS for x in linux):
        raise UsageError(f"--linux {args.linux}: each of rt, std (or none)")
    locks = _locks_arg(args.locks, cyclicuser.LOCK_CONFIGS)
    if not args.no_build:
        make(repo, "kernel")
    meta = _qemu_meta(repo)
    icount = None if args.icount is None else \
        cyclicuser.ICOUNT if args.icount == "default" else args.icount
    if icount is not None:
        cyclicuser.check_icount(1, args.accel, icount)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)
    data = cyclicuser.collect(repo, args.smp, args.rounds, args.seconds, linux, locks,
                              hz=args.hz, load=not args.no_load, accel=args.accel,
                              log=log, meta=meta)
    if icount is not None:
        # the same kernels under -icount, one CPU (cyclicuser.check_icount)
        data = cyclicuser.merge(data, cyclicuser.collect(
            repo, 1, args.rounds, args.seconds, linux, locks, hz=args.icount_hz,
            load=not args.no_load, accel=args.accel, log=log, meta=meta, icount=icount))
    return _experiment_done(out_dir, cyclicuser.CYCLICUSER_JSON, data, "cyclicuser",
                            cyclicuserreport.cyc_findings, cyclicuserreport.cyc_tables,
                            "ksync cyclic-user", lambda r: str(r["flavour"]),
                            [f"no linux-{k} rows: {v}" for k, v in
                             (data["options"].get("linux_missing") or {}).items()])


def cmd_sm_user(args, repo: Path) -> int:
    """Small & Manley's Tables 3-4 and Figure 1 under real programs: smload on each scheme's
    census kernel, rounds interleaved; smuser.json and the report in --out."""
    out_dir = Path(args.out) if args.out else repo / "results"
    check_out_dir(out_dir)
    names = smuser.check_schemes(args.schemes or list(smuser.DEFAULT_SCHEMES))

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)
    if not args.no_build:
        smuser.build(repo, names, log)
    data = smuser.collect(repo, names, args.rounds, args.smp, args.scale, args.clients,
                          args.requests, args.accel, log=log, meta=_qemu_meta(repo),
                          serial=args.serial, icount=None if args.icount == "none" else args.icount)
    return _experiment_done(out_dir, smuser.SMUSER_JSON, data, "smuser",
                            smuserreport.sm_findings, smuserreport.sm_tables, "ksync sm-user",
                            lambda r: str(r["scheme"]) + (f" (serial {r['serial_baud']})"
                                                          if r.get("serial_baud") else "")
                            + (" -icount" if r.get("icount") else ""), [])


def cmd_mkdisk(args, repo: Path) -> int:
    path = Path(args.path) if args.path else repo / qemu.DISK_IMAGE
    wrote = disk.ensure_disk(path, args.mib, full_check=True)
    sectors = args.mib * 1024 * 1024 // disk.SECTOR
    if wrote:
        print(f"wrote {display_path(path)}: {args.mib} MiB, {sectors} sectors, sector n = "
              "the 8-byte little-endian n repeated 64 times")
    else:
        print(f"{display_path(path)} already holds the pattern ({args.mib} MiB, {sectors} "
              "sectors); left alone")
    return 0
