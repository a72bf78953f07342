"""Issue 12 item 7: the masked-window tracker (make kernel WINDOWS=1, build/kernel-windows)
that bounds the -icount lateness. Its kernel tests (kernel/tests/test_windows.c) skip in
every other build; here they run on the tracker's kernel under QEMU, and the default
kernel says why it skips them. Then one short -icount lateness boot of the tracker's
kernel: every configuration's row carries the window figures the report's bound uses,
and the tool names the window's code sites."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from ksync import fiascorun, qemu  # noqa: E402
from ksync import fiascoreport as fr  # noqa: E402


@pytest.fixture(scope="module")
def windows_kernel():
    for extra in ([], ["WINDOWS=1"]):
        r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel", *extra], cwd=ROOT,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
    return True


def _boot(windows: bool, **kw) -> qemu.BootResult:
    cfg = qemu.BootConfig(repo=ROOT, smp=1, accel="tcg", timeout=240, windows=windows, **kw)
    cfg.disk = None
    return qemu.boot(cfg)


def test_tracker_tests_run_on_windows_kernel(windows_kernel):
    res = _boot(True, mode="test", filter="win_*")
    names = {c.name: c for c in res.ktap.results}
    assert res.passed, "\n".join(res.tail())
    # the tracker's four and the critical-section census (spl.h, the same builds)
    assert len(names) == 5 and not any(c.skipped for c in names.values()), names
    assert "win_census_counts_sections" in names


def test_tracker_tests_skip_with_reason_elsewhere(windows_kernel):
    res = _boot(False, mode="test", filter="win_*")
    assert res.passed, "\n".join(res.tail())
    assert all(c.skipped and "WINDOWS=1" in c.directive for c in res.ktap.results)


def test_icount_lateness_rows_carry_the_bound(windows_kernel):
    res = _boot(True, mode="bench", filter="lateness",
                append=["lat_seconds=1", "lat_section_us=100"],
                icount="shift=4,align=off,sleep=off")
    assert res.passed, "\n".join(res.tail())
    rec = fiascorun.record("qemu", "tcg-icount", res, 1, "test", 0)
    rows = {r["config"]: r for r in rec["rows"] if r["kind"] == "lateness"}
    assert set(rows) == set(fiascorun.LAT_CONFIGS)
    for cfg, r in rows.items():
        assert r["win_max"] > 0 and r["win_windows"] > 0 and r["path_max"] > 0, r
        # the mean lateness (Hohmuth & Haertig's "average lateness"), exact, in the range
        assert r["min"] <= r["mean"] <= r["max"], r
        # the tool names the window's ends (addr2line on the tracker's kernel)
        assert r["win_open_at"] and "(" in r["win_open_at"], r
    # a master-irqoff section (100 us with IRQs off) is a window at least that long
    assert rows["master-irqoff"]["win_max"] >= 100
    env = fr.Env("tcg-icount", recs=[rec], plan={"icount_shift": 4})
    parts = fr.bound_parts(env, rec, rows["helping"])
    assert parts and parts["bound"] == pytest.approx(
        parts["win"] + parts["isr"] + parts["entry"] + parts["path"])
    # the measured-path bound: its path term is this row's own measured path_max
    assert parts["path"] == rows["helping"]["path_max"]
    assert parts["delivery"] == pytest.approx(parts["bound"] - parts["path"])
    assert parts["isr"] == pytest.approx(fr.ISR_INSNS * 16 / 1000)
