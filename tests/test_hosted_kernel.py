"""The portable kernel on the hosted port (arch/hosted, a Linux process): the kernel's own
test suites (mode=test) and the bad-input paths of build/hosted-kernel/<flavour>/<scheme>/
ksync (mk/hosted-kernel.mk; docs/hosted-port.md "The kernel on the hosted port").

Pass = exit status 0 AND a complete KTAP plan AND no `not ok` (tools/ksync/hosted.py
run_program applies the same verdict rules as the tool). Suites: the default scheme at
-smp 1, 2 and 4 in the plain, ASan+UBSan and TSan builds (4 vCPUs on a 2-core machine
are oversubscribed and the boot object must say so), the hard-mask build at -smp 2, and
every other scheme whose `hosted` column is 1 at -smp 2; the interrupt storm
(arch/hosted/ktest_storm.c) at 100 and 1000 us in the three builds; the scheduler and
lock suites with 4 vCPUs pinned to one host core (no scheduler case may skip there). A
sanitizer report fails the run (halt_on_error). KSYNC_HOSTED_FIFO=0: no SCHED_FIFO
spinning on a shared machine.
"""
import fcntl
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ksync import disk as diskmod
from ksync import hosted
from ksync.schemes import DEFAULT_SCHEME, HOSTED_SCHEMES
from test_hosted import SANITIZER_ENV, SANITIZER_MARKERS

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "hosted-kernel"
TIMEOUT = 180   # a bound that turns a hang into a failure: a loaded 2-core host took ~60 s for a TSan suite that takes ~18 s alone
EX_USAGE, EXIT_PANIC, EXIT_HANG = 64, 2, 3


def _exe(flavour: str, scheme: str = DEFAULT_SCHEME) -> Path:
    return OUT / flavour / scheme / "ksync"


@pytest.fixture(scope="session")
def hk_bins() -> Path:
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "-j2", "hosted-kernel"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"make hosted-kernel failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}",
                    pytrace=False)
    return OUT


TSAN_SUPPRESSIONS = ROOT / "arch" / "hosted" / "tsan.supp"   # each entry with its reason


@pytest.fixture
def host_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSYNC_HOSTED_FIFO", "0")
    for key, value in SANITIZER_ENV.items():
        if key not in os.environ:
            monkeypatch.setenv(key, value)
    tsan = os.environ.get("TSAN_OPTIONS", "")
    monkeypatch.setenv("TSAN_OPTIONS", f"{tsan}:suppressions={TSAN_SUPPRESSIONS}".lstrip(":"))


def _objects(result: hosted.HostedResult) -> list[dict]:
    return [json.loads(l[len("KSYNC "):]) for l in result.lines if l.startswith("KSYNC {")]


def _boot(result: hosted.HostedResult) -> dict:
    boots = [o for o in _objects(result) if o.get("kind") == "boot"]
    assert len(boots) == 1, "one KSYNC boot object per run"
    return boots[0]


@pytest.fixture(scope="session")
def disk_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ATA disk the device tests read (the tool's image, as QEMU gets it)."""
    path = tmp_path_factory.mktemp("disk") / "disk.img"
    diskmod.ensure_disk(path, diskmod.DEFAULT_MIB)
    return path


def _suite(exe: Path, smp: int, tmp_path: Path, disk: Path | None = None,
           filt: str | None = None) -> hosted.HostedResult:
    args = ["-smp", str(smp), "-append", "mode=test" + (f" filter={filt}" if filt else "")]
    if disk is not None:
        args = ["-disk", str(disk), *args]
    result = hosted.run_program(exe, TIMEOUT, tmp_path / "logs", args)
    shown = "\n".join(result.tail(40)) + "\n--- stderr\n" + result.stderr[-4000:]
    reports = [m for m in SANITIZER_MARKERS if m in result.stderr]
    assert not reports, f"sanitizer report ({', '.join(reports)}):\n{shown}"
    assert result.exit_code == 0, f"exit status {result.exit_code}: {result.reason}\n{shown}"
    assert result.ktap.complete, f"KTAP plan incomplete:\n{shown}"
    assert not result.ktap.failed, f"not ok: {[c.name for c in result.ktap.failed]}\n{shown}"
    assert result.passed, f"{result.reason}\n{shown}"
    for case in result.ktap.results:
        if case.skipped:
            assert case.directive[len("SKIP"):].strip(), f"{case.name}: SKIP without a reason"
    # the host's context switches of every vCPU (DESIGN.md: flag preempted runs)
    sw = [o for o in _objects(result) if o.get("kind") == "host_switches"]
    assert len(sw) == 1 and len(sw[0]["involuntary"]) == smp == sw[0]["vcpus"], sw
    assert all(isinstance(n, int) and n >= 0 for n in sw[0]["involuntary"] + sw[0]["voluntary"])
    boot = _boot(result)
    assert boot["port"] == "hosted" and boot["platform"] == "hosted"
    assert boot["cpus"] == smp
    assert boot["oversubscribed"] == (smp > boot["host_cores"])
    assert boot["sched"] in ("SCHED_FIFO", "best-effort scheduling")
    return result


@pytest.mark.parametrize("smp", (1, 2, 4))
@pytest.mark.parametrize("flavour", ("plain", "asan", "tsan"))
def test_default_scheme_suite(hk_bins: Path, host_env: None, tmp_path: Path, flavour: str,
                              smp: int, disk_image: Path):
    result = _suite(_exe(flavour), smp, tmp_path, disk_image)
    skipped = {c.name: c.directive for c in result.ktap.results if c.skipped}
    # the platform devices (arch/hosted/kdev.c) and the -disk image are there: no device
    # test skips for lack of them (one may skip as "host too noisy", its own timing rule)
    missing = {n: r for n, r in skipped.items() if n.startswith("dev_")
               and ("no platform devices" in r or "no ATA disk" in r)}
    assert not missing, missing
    # the stated reasons of what the port cannot run
    for name in ("vm_map_translate_unmap", "vm_map_races_one_winner_per_entry"):
        assert "KSYNC_ENOTSUP" in skipped.get(name, ""), f"{name}: {skipped.get(name)}"
    ran = [c.name for c in result.ktap.results if not c.skipped]
    assert "pmm_lockfree_freelist_all_cpus" in ran and "mwcas_soft_all_cpus_sum_invariant" in ran


STORM_TEST = "hosted_storm_bounded_frames"


def storm_run(exe: Path, smp: int, period_us: int, ms: int, log_dir: Path,
              timeout: float = TIMEOUT) -> list[dict]:
    """The interrupt storm (arch/hosted/ktest_storm.c): one vCPU raises the last vCPU's
    clock source every period_us for ms per scheduler while threads there spin, yield and
    take locks. Returns its KSYNC storm objects (one per scheduler), checked here."""
    result = hosted.run_program(exe, timeout, log_dir,
                                ["-smp", str(smp), "-append",
                                 f"mode=test filter={STORM_TEST} storm_us={period_us} "
                                 f"storm_ms={ms}"])
    shown = "\n".join(result.tail(30)) + "\n--- stderr\n" + result.stderr[-4000:]
    reports = [m for m in SANITIZER_MARKERS if m in result.stderr]
    assert not reports, f"sanitizer report ({', '.join(reports)}):\n{shown}"
    assert result.passed and result.exit_code == 0, f"{result.reason}\n{shown}"
    assert [c.name for c in result.ktap.results if not c.skipped] == [STORM_TEST], shown
    storms = [o for o in _objects(result) if o.get("kind") == "storm"]
    assert [o["sched"] for o in storms] == ["lockfree", "locked"], shown
    for o in storms:
        assert o["period_us"] == period_us and o["cpus"] == smp
        # every raise arrived, or was coalesced (an IRR bit already set, a full host
        # queue): counted, never lost, never a crash
        # (TSan: its deferral keeps one pending signal per number and coalesces the rest
        # before any handler of ours: counted by difference, sanitizer_coalesced)
        assert o["raised"] > 0, o
        assert o["raised"] == o["delivered"] + o["coalesced"] + o["sanitizer_coalesced"], o
        assert o["sanitizer_coalesced"] == 0 or "tsan" in str(exe), o
        # the frame-call protocol's bound, and the measured stack left room for one more
        # signal frame of the largest size seen
        assert 1 <= o["sigframes_max"] <= o["sigframes_bound"] == 3, o
        assert 0 < o["stack_hwm"] and o["stack_hwm"] + o["sigframe_bytes_max"] <= o["stack_bytes"], o
    return storms


@pytest.mark.parametrize("period_us", (100, 1000))
@pytest.mark.parametrize("flavour", ("plain", "asan", "tsan"))
def test_interrupt_storm(hk_bins: Path, host_env: None, tmp_path: Path, flavour: str,
                         period_us: int):
    """A clock-source storm from another vCPU (the 1 and 10 us periods, longer: make
    stress, tests/test_stress.py)."""
    storm_run(_exe(flavour), 2, period_us, 300, tmp_path / "logs")


# Timing claims only: what may skip when the vCPUs share one host core (each case says
# why); every other scheduler and lock case must run there.
ONE_CORE_SUITES = "sched_*,spl_sched_*,lock_*,hlock_*,hsem_*,hosted_spin_*," + STORM_TEST


def test_one_core_suites_run_oversubscribed(hk_bins: Path, host_env: None, tmp_path: Path):
    """The scheduler and lock suites with 4 vCPUs pinned to ONE host core (taskset -c
    <first allowed core>): correctness holds with any number of vCPUs per core, so no
    scheduler case skips there (the TSan build's own skips are not this build's)."""
    core = min(os.sched_getaffinity(0))
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})     # this thread; the child inherits it
    try:
        result = hosted.run_program(_exe("plain"), 2 * TIMEOUT, tmp_path / "logs",
                                    ["-smp", "4", "-append", f"mode=test filter={ONE_CORE_SUITES}"])
    finally:
        os.sched_setaffinity(0, old)
    shown = "\n".join(result.tail(40)) + "\n--- stderr\n" + result.stderr[-4000:]
    assert result.passed and result.exit_code == 0, f"{result.reason}\n{shown}"
    boot = _boot(result)
    assert boot["oversubscribed"] is True and boot["host_cores"] == 1, boot
    skipped = {c.name: c.directive for c in result.ktap.results if c.skipped}
    sched_skips = {n: r for n, r in skipped.items() if n.startswith(("sched_", "spl_sched_"))}
    assert not sched_skips, sched_skips
    ran = {c.name for c in result.ktap.results if not c.skipped}
    assert {"sched_sleep_wakeup_race", "sched_preempt_spinner_every_cpu",
            "sched_shares_follow_table", "sched_serializer", STORM_TEST,
            "hosted_spin_waiter_yields_host_core"} <= ran, ran


def test_oversubscribed_is_said(hk_bins: Path, host_env: None, tmp_path: Path):
    cores = len(os.sched_getaffinity(0))
    result = _suite(_exe("plain"), cores + 1, tmp_path)
    assert _boot(result)["oversubscribed"] is True
    assert any("oversubscribed" in line for line in result.lines[:3])


FIFO_LOCK = Path("/tmp/ksync-hosted-fifo.lock")


def test_second_fifo_kernel_runs_best_effort(hk_bins: Path, host_env: None, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch):
    """While another hosted kernel holds the machine's FIFO lock (here: this test), a
    kernel that would use SCHED_FIFO runs best-effort and says why: two FIFO kernels on
    the same cores livelock (each one's spinner holds a core its own other vCPU needs)."""
    monkeypatch.delenv("KSYNC_HOSTED_FIFO")
    cores = len(os.sched_getaffinity(0))
    fd = os.open(FIFO_LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pytest.skip(f"a hosted kernel with SCHED_FIFO vCPUs runs on this machine ({FIFO_LOCK})")
        result = _suite(_exe("plain"), min(2, cores), tmp_path, filt="dev_*")
    finally:
        os.close(fd)
    assert _boot(result)["sched"] == "best-effort scheduling"
    assert any(str(FIFO_LOCK) in line and "best-effort" in line for line in result.lines[:3])


def test_hard_mask_suite(hk_bins: Path, host_env: None, tmp_path: Path, disk_image: Path):
    _suite(_exe("hard"), 2, tmp_path, disk_image)


@pytest.mark.parametrize("scheme", [s for s in HOSTED_SCHEMES if s != DEFAULT_SCHEME])
def test_other_hosted_schemes(hk_bins: Path, host_env: None, tmp_path: Path, scheme: str,
                              disk_image: Path):
    _suite(_exe("plain", scheme), 2, tmp_path, disk_image)


def test_without_disk_the_ata_tests_skip_with_the_reason(hk_bins: Path, host_env: None,
                                                          tmp_path: Path):
    result = _suite(_exe("plain"), 2, tmp_path, filt="dev_*")     # the device tests
    skipped = {c.name: c.directive for c in result.ktap.results if c.skipped}
    assert "dev_ata_probe_finds_disk" in skipped and "-disk" in skipped["dev_ata_probe_finds_disk"]
    assert "dev_pit_oneshot_fires_once" not in skipped


def test_bench_mode_runs_every_experiment(hk_bins: Path, host_env: None, tmp_path: Path,
                                           disk_image: Path):
    """mode=bench with the platform devices and a disk: every experiment of the default
    set runs on the hosted port (the clock and the devices are real signal sources) and
    prints its rows; the plan completes and passes."""
    # the short form of every experiment (irq_quick, 0.2 s windows, one loss repeat, 1 s
    # per lateness configuration): this checks that they run on the port; make run measures
    result = hosted.run_program(_exe("plain"), TIMEOUT, tmp_path / "logs",
                                ["-smp", "2", "-disk", str(disk_image), "-append",
                                 "mode=bench irq_quick=1 irq_seconds=0.2 irq_loss_repeats=1 "
                                 "sprite_scale=5 sprite_reps=1 sprite_perturb=cswitch "
                                 "lat_seconds=1"])
    assert result.passed, f"{result.reason}\n" + "\n".join(result.tail(30))
    assert not [c.name for c in result.ktap.results if c.skipped]
    kinds = {o.get("kind") for o in _objects(result)}
    assert {"irq_prim", "irq_load", "irq_loss", "prim", "done", "sprite_run", "lockstat",
            "lock_cost", "sprite_end", "lateness"} <= kinds


def test_pi_experiment_emits_its_rows(hk_bins: Path, host_env: None, tmp_path: Path):
    """Experiment pi (kernel/exp/pi.c) at -smp 2: one pi_wait row per case (one CPU, two
    CPUs) and lock (helping, monitor), each accounting for every trial; on one CPU, where
    the order is the scheduler's alone, the medium thread never ran before the high thread
    got the helping lock (inheritance) and always ran to its end first under the monitor."""
    trials = 3
    result = hosted.run_program(_exe("plain"), TIMEOUT, tmp_path / "logs",
                                ["-smp", "2", "-append",
                                 f"mode=bench filter=pi pi_trials={trials}"])
    assert result.passed, f"{result.reason}\n" + "\n".join(result.tail(30))
    assert [c.name for c in result.ktap.results] == ["pi"]
    rows = {(o["case"], o["lock"]): o for o in _objects(result) if o.get("kind") == "pi_wait"}
    assert set(rows) == {(c, l) for c in ("1cpu", "2cpu") for l in ("helping", "monitor")}
    for key, r in rows.items():
        assert r["n"] + r["missed"] == trials, key
        assert len(r["waits"]) == len(r["medium_done_pct"]) == r["n"], key
        assert r["unit"] == "tsc_ticks" and r["tsc_hz"] > 0 and r["cpus"] == 2
        assert r["section_us"] == 100 and r["medium_us"] == 1000
        if r["n"]:
            assert r["min"] <= r["median"] <= r["max"] and sorted(r["waits"])[0] == r["min"]
    assert rows[("1cpu", "helping")]["n"] == rows[("1cpu", "monitor")]["n"] == trials
    assert set(rows[("1cpu", "helping")]["medium_done_pct"]) == {0}
    assert set(rows[("1cpu", "monitor")]["medium_done_pct"]) == {100}
    assert rows[("1cpu", "helping")]["helps_local"] >= trials
    assert rows[("2cpu", "helping")]["helps_remote"] > 0 or rows[("2cpu", "helping")]["n"] == 0


def test_fiasco_rows_all_subtract_their_empty_form_and_count_dropped(hk_bins: Path,
                                                                     host_env: None,
                                                                     tmp_path: Path):
    """Experiment fiasco (kernel/exp/fiasco.c, Table 2): batch rows and single-operation
    rows alike subtract the empty form of their own timing (and say how much), and every
    row accounts for its samples - the IPC row's kept plus dropped are its 400 attempts."""
    result = hosted.run_program(_exe("plain"), TIMEOUT, tmp_path / "logs",
                                ["-smp", "1", "-append", "mode=bench filter=fiasco"])
    assert result.passed, f"{result.reason}\n" + "\n".join(result.tail(30))
    rows = [o for o in _objects(result) if o.get("kind") == "fiasco_cost"]
    assert {r["method"] for r in rows} == {"batch", "single"}
    for r in rows:
        assert isinstance(r.get("dropped"), int) and r["dropped"] >= 0, r["row"]
        if r.get("skipped"):
            continue
        assert r["empty_subtracted"] is True, r["row"]
        assert r["empty_per_op"] > 0, r["row"]
    ipc = [r for r in rows if r["row"].startswith("IPC one-way")]
    assert {r["sched"] for r in ipc} == {"lockfree", "locked"}
    for r in ipc:
        assert r["n"] + r["dropped"] == 400, r


def _raw(exe: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=TIMEOUT,
                          cwd=cwd, env=env)


def _no_core(*dirs: Path) -> None:
    for d in dirs:
        cores = [p.name for p in d.iterdir() if p.name == "core" or p.name.startswith("core.")]
        assert not cores, f"core file(s) left in {d}: {cores}"


@pytest.mark.parametrize("how,signame,addr", [("pf", "SIGSEGV", "0xdeadbeef000"),
                                              ("ud", "SIGILL", None),
                                              ("null", "SIGSEGV", "0x0")])
def test_crash_panics(hk_bins: Path, host_env: None, tmp_path: Path, how: str, signame: str,
                      addr: str | None):
    r = _raw(_exe("plain"), ["-smp", "2", "-append", f"crash={how}"], tmp_path)
    shown = f"--- exit {r.returncode}\n{r.stdout}\n--- stderr\n{r.stderr}"
    assert r.returncode == EXIT_PANIC, shown
    assert f"PANIC: vCPU 0: signal {signame}" in r.stderr, shown
    assert "at fault address 0x" in r.stderr, shown
    if addr:
        assert f"at fault address {addr}" in r.stderr, shown
    assert "backtrace:" in r.stderr and "kernel_main" in r.stderr, shown
    if how == "null":
        # a jump to 0 leaves backtrace() nothing past the handler: the panic names the
        # interrupted rip and, from the words at rsp, the caller (symbolized by addr2line)
        assert "interrupted at rip 0x0," in r.stderr, shown
        assert re.search(r"crash at \S*kernel/core/main\.c:\d+", r.stderr), shown
    _no_core(tmp_path, ROOT)


def test_crash_stack_overflow_names_the_thread(hk_bins: Path, host_env: None, tmp_path: Path):
    """A kernel thread recursing into its stack's guard page (PROT_NONE): the fault panic
    names the thread and the guard page (issue 10, bad input: stack exhaustion)."""
    r = _raw(_exe("plain"), ["-smp", "2", "-append", "crash=stack"], tmp_path)
    shown = f"--- exit {r.returncode}\n{r.stdout}\n--- stderr\n{r.stderr}"
    assert r.returncode == EXIT_PANIC, shown
    assert "signal SIGSEGV" in r.stderr, shown
    assert "in thread 'overflow'" in r.stderr and "guard page" in r.stderr, shown
    _no_core(tmp_path, ROOT)


def test_crash_hang_ends_by_watchdog(hk_bins: Path, host_env: None, tmp_path: Path):
    r = _raw(_exe("plain"), ["-smp", "2", "-watchdog", "2", "-append", "crash=hang"], tmp_path)
    shown = f"--- exit {r.returncode}\n{r.stdout}\n--- stderr\n{r.stderr}"
    assert r.returncode == EXIT_HANG, shown
    assert "WATCHDOG" in r.stderr, shown
    assert "vCPU 0: STUCK, last activity: halted" in r.stderr, shown
    assert "vCPU 1:" in r.stderr, shown


def test_sigquit_reports_each_vcpu(hk_bins: Path, host_env: None, tmp_path: Path):
    """The tool's timeout sends SIGQUIT: the runtime answers with what each vCPU was last
    doing and the hang status, also with the watchdog's limit off."""
    import signal
    import time
    p = subprocess.Popen([str(_exe("plain")), "-smp", "2", "-watchdog", "0", "-append",
                          "crash=hang"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + TIMEOUT
        line = ""
        while "deliberate crash" not in line and time.monotonic() < deadline:
            line = p.stdout.readline()      # the kernel says it is about to hang
            if not line and p.poll() is not None:
                break
        p.send_signal(signal.SIGQUIT)
        out, err = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
    shown = f"--- exit {p.returncode}\n{out}\n--- stderr\n{err}"
    assert p.returncode == EXIT_HANG, shown
    # each vCPU's line (what the BSP was last doing depends on how far it got when the
    # signal came: the watchdog test checks the "halted" activity)
    assert "SIGQUIT" in err and "vCPU 0:" in err and "vCPU 1:" in err, shown
    _no_core(tmp_path)


def test_crash_triple_unsupported(hk_bins: Path, host_env: None, tmp_path: Path):
    r = _raw(_exe("plain"), ["-smp", "1", "-append", "crash=triple"], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "crash=triple" in r.stdout and "(hosted)" in r.stdout


@pytest.mark.parametrize("args", [["-smp", "65"], ["-smp", "0"], ["-smp", "two"],
                                  ["-m", "0"], ["-bogus", "1"], ["-smp"]])
def test_bad_options_exit_64(hk_bins: Path, host_env: None, tmp_path: Path, args: list[str]):
    r = _raw(_exe("plain"), args, tmp_path)
    assert r.returncode == EX_USAGE, r.stdout + r.stderr
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.strip(), r.stderr
