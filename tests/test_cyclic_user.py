"""cyclictest as a user program on ksync beside Linux (tools/ksync/cyclicuser.py,
cyclicuserreport.py): ksync runs the Linux guest's load and cyclictest command, its output
reads through linuxguest's parser, and the report's verdicts follow the spreads (a censored
percentile gives none). The Linux runs boot Debian's kernels: KSYNC_SLOW=1."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ksync import busybox, cyclicuser, dynlibs, linuxguest
from ksync import cyclicuserreport as rep
from ksync.util import UsageError

ROOT = Path(__file__).resolve().parent.parent


def test_ksync_runs_the_linux_guests_load_and_command():
    s = cyclicuser.ksync_script(5, 250, 1000, True)
    assert cyclicuser.load_block(s) == cyclicuser.load_block(linuxguest.INIT_SCRIPT)
    want = "cyclictest -m -S -p 95 -i \"$interval\" -D \"$seconds\" -q -h \"$buckets\""
    assert want in s and want in linuxguest.INIT_SCRIPT
    assert "seconds=5 interval=250 buckets=1000" in s and "load=1" in s and "@" not in s


def test_late_periods_counts_samples_a_period_late_and_valueless_overflows():
    res = {"samples": 10, "hist_us": {"3": 5, "249": 2, "250": 1, "900": 1},
           "overflows": 3, "overflow_values": 1}
    assert cyclicuser.late_periods(res, 250) == 2 + 2
    assert cyclicuser.late_periods({"samples": 0, "hist_us": {}}, 250) is None


@pytest.mark.skipif(not (busybox.have_busybox() and dynlibs.have_rt_tests()),
                    reason="busybox-static and rt-tests: scripts/deps.sh")
def test_cyclictest_under_load_on_ksync():
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    res = cyclicuser.run_ksync(ROOT, 2, 2, locks="sprite-fix", hz=1000)
    assert res["ok"], res["reason"]
    # two threads (-S: one per CPU), at most 2 s of 250 us periods each; fewer where a
    # wakeup came periods late (cyclictest skips the periods it missed: at hz=1000 ksync
    # wakes at the 1 ms tick)
    assert res["threads"] == 2 and 0 < res["samples"] <= 2 * 8001, res["samples"]
    # a percentile past the histogram is the spike list's value, which cyclictest rounds
    # apart from its Max line by up to 1 us (seen: p99.9 464053 with Max 464052)
    assert 0 <= res["p50_us"] <= res["p99_us"] <= res["p999_us"] <= res["max_us"] + 1
    assert res["late_periods"] is not None and res["kernel"] == "ksync-sprite-fix (hz=1000)"


@pytest.mark.skipif(not (busybox.have_busybox() and dynlibs.have_rt_tests()),
                    reason="busybox-static and rt-tests: scripts/deps.sh")
def test_cyclictest_in_virtual_time_on_ksync():
    """The -icount part: one CPU, the fiasco configuration, QEMU's guest clock counting
    instructions (the same boot path the Linux guests take with ksync_qemu_base)."""
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    res = cyclicuser.run_ksync(ROOT, 1, 1, locks="fiasco", hz=1000, icount=cyclicuser.ICOUNT)
    assert res["ok"], res["reason"]
    assert res["env"] == "tcg-icount" and res["icount"] == cyclicuser.ICOUNT
    assert res["threads"] == 1 and 0 < res["samples"] <= 4001, res["samples"]
    assert res["kernel"] == "ksync-fiasco (hz=1000)"


def test_icount_runs_one_cpu_under_tcg_only():
    cyclicuser.check_icount(1, "tcg", cyclicuser.ICOUNT)
    cyclicuser.check_icount(2, "tcg", None)
    with pytest.raises(UsageError, match="one CPU"):
        cyclicuser.check_icount(2, "tcg", 4)
    with pytest.raises(UsageError, match="tcg"):
        cyclicuser.check_icount(1, "kvm", 4)
    assert cyclicuser.icount_spec(4) == "shift=4" and cyclicuser.icount_spec(None) is None
    assert cyclicuser.env_name("tcg", 4) == "tcg-icount" and cyclicuser.env_name("tcg", None) == "tcg"


@pytest.mark.skipif(not os.environ.get("KSYNC_SLOW"), reason="boots Debian's Linux: KSYNC_SLOW=1")
def test_cyclictest_under_load_on_linux():
    image = linuxguest.prepare("rt", ROOT / linuxguest.DEFAULT_CACHE)
    res = cyclicuser.run_linux(image, 2, 2, log_dir=ROOT / "build" / "logs")
    assert res["ok"], res["reason"]
    assert res["flavour"] == "linux-rt" and res["late_periods"] is not None


def _run(kernel: str, rnd: int, p999: float, mx: float, over: bool = False) -> dict:
    return {"flavour": kernel, "round": rnd, "ok": True, "reason": None, "smp": 2,
            "kernel": "Linux ksync 6.1.0-57-rt-amd64 #1" if kernel.startswith("linux") else kernel,
            "hz": 4000 if kernel.startswith("ksync") else None, "samples": 1000,
            "p50_us": 10.0, "p99_us": 50.0, "p999_us": p999, "max_us": mx,
            "p999_overflow": over, "late_periods": 1}


def _data(k999, kmax, l999, lmax, over=False) -> dict:
    runs = []
    for i in range(3):
        j = 1 + 0.01 * (i - 1)
        runs.append(_run("ksync-sprite", i, k999 * j, kmax * j))
        runs.append(_run("linux-rt", i, l999 * j, lmax * j, over))
    return {"schema": rep.SCHEMA, "options": {"smp": 2, "accel": "tcg", "hz": 4000,
                                              "interval_us": 250, "seconds": 10}, "runs": runs}


@pytest.mark.parametrize("k,l,verdict", [((100, 200), (300, 400), "holds"),
                                         ((300, 400), (100, 200), "reversed"),
                                         ((100, 400), (300, 200), "within noise")])
def test_verdict_needs_both_p999_and_max(k, l, verdict):
    fs = rep.cyc_findings(_data(*k, *l))
    f = next(f for f in fs if "ksync-sprite" in f.claim)
    assert f.verdict == verdict
    bar = next(f for f in fs if "fiasco" in f.claim)
    assert bar.verdict == "not measurable here" and "did not run" in bar.today


@pytest.mark.parametrize("k,verdict", [((100, 200), "holds"), ((300, 400), "reversed")])
def test_the_bar_is_the_fiasco_configurations_row(k, verdict):
    d = _data(100, 200, 200, 300)
    for i in range(3):
        j = 1 + 0.01 * (i - 1)
        d["runs"].append(_run("ksync-fiasco", i, k[0] * j, k[1] * j))
    bars = [f for f in rep.cyc_findings(d) if f.claim.startswith("Bar for real programs")]
    assert len(bars) == 1 and "ksync-fiasco" in bars[0].claim
    assert bars[0].verdict == verdict


def test_a_censored_percentile_gives_no_verdict():
    fs = rep.cyc_findings(_data(100, 200, 300, 400, over=True))
    assert next(f for f in fs if "ksync-sprite" in f.claim).verdict == "not measurable here"
    t = rep.cyc_tables(_data(100, 200, 300, 400, over=True))[0]
    assert any("censored" in c for row in t.rows for c in row)


def test_table_rows_per_kernel_and_failed_runs_named():
    d = _data(100, 200, 300, 400)
    d["runs"].append(dict(_run("ksync-synthesis", 0, 1, 1), ok=False,
                          reason="cyclictest exited 1: boom"))
    t = rep.cyc_tables(d)[0]
    assert [r[0].split()[0] for r in t.rows] == ["ksync-sprite", "ksync-synthesis", "linux-rt"]
    assert any("boom" in n for n in t.notes_below)


def test_a_merged_record_gives_each_qemu_configuration_its_table_and_findings():
    wall = _data(100, 200, 300, 400)
    virt = _data(300, 400, 100, 200)
    for r in virt["runs"]:
        r.update(smp=1, env="tcg-icount", icount="shift=4,align=off,sleep=on")
    virt["options"] = dict(virt["options"], smp=1, icount="shift=4,align=off,sleep=on")
    both = cyclicuser.merge(wall, virt)
    assert len(both["runs"]) == len(wall["runs"]) + len(virt["runs"])
    ts = rep.cyc_tables(both)
    assert len(ts) == 2 and "tcg, 2 CPUs" in ts[0].title and "tcg-icount, 1 CPU" in ts[1].title
    assert any("-icount shift=4" in n for n in ts[1].notes_above)
    assert not any("-icount" in n for n in ts[0].notes_above)
    fs = [f for f in rep.cyc_findings(both) if "ksync-sprite" in f.claim]
    # each configuration judged on its own runs: opposite verdicts here
    assert [(f.env, f.verdict) for f in fs] == [("tcg, 2 CPUs", "holds"),
                                                ("tcg-icount, 1 CPU", "reversed")]
    # a record of one configuration is its own single part
    assert rep.groups(wall) == [wall]
