"""Hosted C unit tests (tests/unit/test_*.c) in the plain, ASan/UBSan and TSan builds.

`make -s hosted-tests` builds build/hosted/tests/{plain,asan,tsan}/<name> once per session;
each binary in each build is one test case here.  A case passes if the program exits 0,
its KTAP plan (parsed with ksync.ktap) is complete with no `not ok`, and no sanitizer
reported anything.  On failure the program's whole output is shown.
"""
import os
import subprocess
from pathlib import Path

import pytest

from ksync import ktap

ROOT = Path(__file__).resolve().parent.parent
FLAVOURS = ("plain", "asan", "tsan")
TESTS = sorted(p.stem for p in (ROOT / "tests" / "unit").glob("test_*.c"))
TIMEOUT = 300

# Stop at the first sanitizer report with a non-zero exit; keep a caller's own settings.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    "TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1",
}
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer", "runtime error:")


@pytest.fixture(scope="session")
def hosted_bins() -> Path:
    """Build every hosted test binary once, through the top-level Makefile."""
    r = subprocess.run(["make", "-C", str(ROOT), "-s", "hosted-tests"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"make hosted-tests failed (exit {r.returncode}):\n"
                    f"{r.stdout}\n{r.stderr}", pytrace=False)
    return ROOT / "build" / "hosted" / "tests"


def _env() -> dict:
    env = dict(os.environ)
    for key, value in SANITIZER_ENV.items():
        env.setdefault(key, value)
    return env


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", TESTS)
def test_hosted(hosted_bins: Path, flavour: str, name: str):
    exe = hosted_bins / flavour / name
    assert exe.is_file(), f"{exe} was not built by `make hosted-tests`"
    try:
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=TIMEOUT,
                           env=_env(), cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        pytest.fail(f"{exe} timed out after {TIMEOUT} s; output so far:\n{out or ''}",
                    pytrace=False)

    result = ktap.parse(r.stdout)
    shown = f"--- {exe} (exit {r.returncode})\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    reports = [m for m in SANITIZER_MARKERS if m in r.stderr]
    assert not reports, f"sanitizer report ({', '.join(reports)}):\n{shown}"
    assert r.returncode == 0, f"exit status {r.returncode}:\n{shown}"
    assert result.complete, f"KTAP plan incomplete:\n{shown}"
    assert result.passed, (f"failed: {', '.join(c.name for c in result.failed)}\n{shown}")
    assert result.results, f"no test cases ran:\n{shown}"
