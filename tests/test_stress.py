"""Hosted stress programs (tests/stress/stress_*.c) in the plain, ASan/UBSan and TSan builds.

Each program is a KTAP test whose size comes from KSYNC_STRESS_OPS (operations in total
per case). `make test` runs the short size; `make stress` (pytest --run-stress) runs the
long one: >= 10^8 operations per object in the plain build, fewer under the sanitizers,
whose runtime slows every access 5-20x.
"""
import os
import subprocess
from pathlib import Path

import pytest

from ksync import ktap

ROOT = Path(__file__).resolve().parent.parent
FLAVOURS = ("plain", "asan", "tsan")
PROGRAMS = sorted(p.stem for p in (ROOT / "tests" / "stress").glob("stress_*.c"))
SHORT = {"plain": 400_000, "asan": 100_000, "tsan": 50_000}
LONG = {"plain": 100_000_000, "asan": 4_000_000, "tsan": 2_000_000}
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer", "runtime error:")


@pytest.fixture(scope="session")
def stress_bins() -> Path:
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "hosted-tests"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"make hosted-tests failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}",
                    pytrace=False)
    return ROOT / "build" / "hosted" / "stress"


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_stress(stress_bins: Path, flavour: str, name: str, request):
    long = request.config.getoption("--run-stress")
    ops = (LONG if long else SHORT)[flavour]
    exe = stress_bins / flavour / name
    assert exe.is_file(), f"{exe} was not built by `make hosted-tests`"
    env = dict(os.environ, KSYNC_STRESS_OPS=str(ops))
    env.setdefault("TSAN_OPTIONS", "halt_on_error=1")
    env.setdefault("ASAN_OPTIONS", "halt_on_error=1:detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    timeout = 3600 if long else 300
    try:
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout,
                           env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{exe} (KSYNC_STRESS_OPS={ops}) timed out after {timeout} s", pytrace=False)
    out = r.stdout + r.stderr
    result = ktap.parse(r.stdout.splitlines())
    bad = [m for m in SANITIZER_MARKERS if m in out]
    if r.returncode != 0 or not result.passed or bad:
        pytest.fail(f"{exe} KSYNC_STRESS_OPS={ops}: exit {r.returncode}, "
                    f"complete={result.complete}, sanitizer={bad}\n{out[-6000:]}", pytrace=False)


def test_stress_istack_catches_a_narrow_generation(stress_bins: Path, tmp_path: Path):
    """Seeded mutant (issue 27): stress_lf_istack built with -DSTRESS_GEN_BITS=2, a model
    of a 2-bit generation (the CAS succeeds whenever the real generation moved by a
    multiple of 4), must fail: the stress widens the ABA window enough to outrun a
    generation that narrow.  (Measured on a 2-vCPU AMD EPYC guest at 400,000 operations:
    1 and 2 bits failed 3 of 3 runs, 4 bits 2 of 3, 8 and 16 bits never; the real
    generation has >= 32.)  Up to 5 runs, as a race decides each."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs for the threads to race")
    lib = stress_bins.parent / "libksync.a"
    main = stress_bins.parent / "obj" / "plain" / "lib" / "hosted" / "ktest_main.o"
    exe = tmp_path / "stress_lf_istack_gen2"
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2",
                        f"-I{ROOT / 'include'}", f"-I{ROOT / 'common'}", "-DSTRESS_GEN_BITS=2",
                        "-o", str(exe), str(ROOT / "tests" / "stress" / "stress_lf_istack.c"),
                        str(main), str(lib), "-pthread"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, KSYNC_STRESS_OPS=str(SHORT["plain"]))
    outs = []
    for _ in range(5):
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, env=env)
        result = ktap.parse(r.stdout.splitlines())
        assert result.complete, r.stdout[-3000:]      # ran to the end: failed, not crashed
        if not result.passed:
            return
        outs.append(r.stdout[-500:])
    pytest.fail("the 2-bit generation survived 5 stress runs:\n" + "\n".join(outs))


@pytest.mark.parametrize("smp", (1, 2, 4))
@pytest.mark.parametrize("flavour", ("plain", "asan", "tsan"))
def test_sched_sleep_wakeup_million(flavour: str, smp: int, request):
    """Hohmuth & Haertig Fig. 3 on the hosted kernel: 10^6 sleep/wakeup races per CPU count
    and per scheduler (lockfree, locked), every wakeup counted (issue 10 item 5).
    make stress only: make test runs 3000 per scheduler in every kernel suite."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("make stress only (10^6 races per CPU count; make test runs 3000)")
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "hosted-kernel"], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    from ksync import schemes
    exe = ROOT / "build" / "hosted-kernel" / flavour / schemes.DEFAULT_SCHEME / "ksync"
    races = 1_000_000 if flavour == "plain" else 200_000
    r = subprocess.run([str(exe), "-smp", str(smp), "-watchdog", "60", "-append",
                        f"mode=test filter=sched_sleep_wakeup_race sched_races={races}"],
                       capture_output=True, text=True, timeout=1800, cwd=ROOT)
    out = r.stdout + r.stderr
    result = ktap.parse(r.stdout.splitlines())
    assert r.returncode == 0 and result.passed, out[-4000:]
    assert out.count(f"{races} sleep/wakeup races") == 2, out[-4000:]


@pytest.mark.parametrize("period_us", (1, 10, 100, 1000))
@pytest.mark.parametrize("flavour", ("plain", "asan", "tsan"))
def test_hosted_interrupt_storm_long(flavour: str, period_us: int, request, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch):
    """The hosted kernel's interrupt storm (arch/hosted/ktest_storm.c) for 3 s per
    scheduler at each period, 1 us included (faster than the host delivers: the excess
    is coalesced and counted), at 2 and 4 vCPUs. make stress only: make test runs the 100
    and 1000 us storms for 0.3 s."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("make stress only (make test runs the 100 and 1000 us storms, 0.3 s)")
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "hosted-kernel"], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    from ksync import schemes
    from test_hosted import SANITIZER_ENV
    from test_hosted_kernel import TSAN_SUPPRESSIONS, storm_run
    exe = ROOT / "build" / "hosted-kernel" / flavour / schemes.DEFAULT_SCHEME / "ksync"
    monkeypatch.setenv("KSYNC_HOSTED_FIFO", "0")
    for key, value in SANITIZER_ENV.items():
        if key not in os.environ:
            monkeypatch.setenv(key, value)
    tsan = os.environ.get("TSAN_OPTIONS", "")
    monkeypatch.setenv("TSAN_OPTIONS", f"{tsan}:suppressions={TSAN_SUPPRESSIONS}".lstrip(":"))
    for smp in (2, 4):
        storm_run(exe, smp, period_us, 3000, tmp_path / f"logs{smp}", timeout=300)


FS_CASES = "fs_pipe_*,fs_fdtable_shared*,fs_namespace*"


@pytest.mark.parametrize("smp", (2, 4))
@pytest.mark.parametrize("flavour", ("plain", "asan", "tsan"))
def test_fs_threads_long(flavour: str, smp: int, request):
    """kernel/fs under threads at 20 times make test's sizes (fs_scale=20; issue 24): a
    12 MB checksummed pipe stream, 9000 PIPE_BUF records from three writers, 60000
    dup2/close-vs-read races on one descriptor table, 24000 name-space operations, under
    both schedulers. make stress only: make test runs fs_scale=1 in every kernel suite."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("make stress only (fs_scale=20; make test runs fs_scale=1)")
    from ksync import schemes
    exe = Path("build") / "hosted-kernel" / flavour / schemes.DEFAULT_SCHEME / "ksync"
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "-j2", str(exe)], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    env = dict(os.environ, KSYNC_HOSTED_FIFO="0",
               TSAN_OPTIONS=f"halt_on_error=1:suppressions={ROOT}/arch/hosted/tsan.supp",
               ASAN_OPTIONS="halt_on_error=1:detect_leaks=1",
               UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    r = subprocess.run([str(ROOT / exe), "-smp", str(smp), "-watchdog", "120", "-append",
                        f"mode=test filter={FS_CASES} fs_scale=20"],
                       capture_output=True, text=True, timeout=3600, cwd=ROOT, env=env)
    out = r.stdout + r.stderr
    result = ktap.parse(r.stdout.splitlines())
    bad = [m for m in SANITIZER_MARKERS if m in out]
    assert r.returncode == 0 and result.passed and not bad, out[-4000:]
    assert out.count("12000000 bytes through a pipe") == 2, out[-4000:]
