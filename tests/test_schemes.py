"""Every interrupt-masking scheme (Small & Manley 1997 + the two CR8 schemes) builds, and its
kernel passes the spl tests (exclusion per level, nesting, replay, flood, random injection
across section boundaries) under TCG with -smp 1 and -smp 2 (the default scheme's in its
whole suite, tests/test_kernel.py); make stress runs every scheme's spl tests at 20 times
the sizes (spl_scale=20: 5 s floods, 10^6 random sections per CPU) at -smp 2 and 4; bad
spl use panics clearly;
an unknown scheme name is refused by make and by the tool.

Each boot goes through the ksync tool with --scheme, the path users take.
"""
import re
import os
import subprocess
from pathlib import Path

import pytest

from conftest import run_ksync
from ksync import schemes

ROOT = Path(__file__).resolve().parent.parent
# the one list (kernel/spl/schemes.txt), as the Makefile and the tool read it
SCHEMES = list(schemes.SCHEMES)


ksync = run_ksync


@pytest.fixture(scope="module")
def built():
    for s in SCHEMES:
        r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", f"SCHEME={s}", "kernel"], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
    return True


# The default scheme's kernel runs its whole suite, spl tests included, at -smp 1, 2, 4
# and 8 in tests/test_kernel.py: here the other schemes.
OTHER_SCHEMES = [s for s in SCHEMES if s != schemes.DEFAULT_SCHEME]


@pytest.mark.parametrize("smp", [1, 2])
@pytest.mark.parametrize("scheme", OTHER_SCHEMES)
def test_scheme_passes_spl_tests(built, scheme, smp):
    rc, out = ksync("test", "--scheme", scheme, "--smp", str(smp), "--no-build",
                    "--timeout", "240", "--filter", "spl_*")
    assert rc == 0, out
    assert f"# scheme {scheme}" in out or "PASS" in out, out
    m = re.search(r"(\d+)/(\d+) ok", out)
    assert m and m.group(1) == m.group(2) and int(m.group(2)) >= 9, out


@pytest.mark.parametrize("smp", [2, 4])
@pytest.mark.parametrize("scheme", SCHEMES)
def test_scheme_spl_stress(built, scheme, smp, request):
    """The long sizes (make stress): the PIT and clock floods for 5 s, 10^6 randomly
    injected sections per CPU; make test runs spl_scale=1 (250 ms, 50000)."""
    if not request.config.getoption("--run-stress"):
        pytest.skip("make stress only (spl_scale=20; make test runs spl_scale=1)")
    rc, out = ksync("test", "--scheme", scheme, "--smp", str(smp), "--no-build",
                    "--timeout", "900", "--filter", "spl_*", "--append", "spl_scale=20")
    assert rc == 0, out
    m = re.search(r"(\d+)/(\d+) ok", out)
    assert m and m.group(1) == m.group(2) and int(m.group(2)) >= 9, out


@pytest.mark.parametrize("scheme", ["spl-pessim", "cli-optim", "tpr-pessim"])
def test_splx_to_a_higher_level_panics(built, scheme):
    rc, out = ksync("boot", "--scheme", scheme, "--mode", "test", "--append", "crash=splx",
                    "--smp", "1", "--no-build", "--timeout", "120")
    assert rc != 0
    assert "splx: cookie level 4 (tty) is above the current level 0 (none)" in out, out


def test_spl_level_out_of_range_panics(built):
    rc, out = ksync("boot", "--mode", "test", "--append", "crash=spl-level", "--smp", "1",
                    "--no-build", "--timeout", "120")
    assert rc != 0
    assert "spl: level 9 is out of range" in out, out


def test_unknown_scheme_refused_by_make():
    r = subprocess.run(["make", "-s", "SCHEME=nonsense", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "unknown SCHEME 'nonsense'" in r.stderr + r.stdout
    assert "cli-spl-pessim" in r.stderr + r.stdout


def test_unknown_scheme_refused_by_tool():
    rc, out = ksync("test", "--scheme", "nonsense", "--no-build")
    assert rc == 2
    assert "unknown scheme 'nonsense'" in out and "tpr-optim" in out, out
