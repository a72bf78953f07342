"""Sprite's benchmarks as user programs on ksync (tools/ksync/spriteuser.py,
spriteuserreport.py; the program's own checks on the host: test_sprite_user_prog.py):
every benchmark runs on ksync with the kernel's lock statistics read around it, and the
report's ratios and verdicts follow the runs' spreads. The Linux guest's runs boot Debian's
kernel (packages fetched on first use): KSYNC_SLOW=1 runs them."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ksync import base, dynlibs, linuxguest, spriteuser, userprogs
from ksync import spriteuserreport as rep

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def exe() -> Path:
    if not userprogs.have_musl():
        pytest.fail("musl (Debian musl-tools) is missing: run scripts/deps.sh")
    return spriteuser.build(ROOT)


def _expected_ops(bench: str, copies: int, scale: int) -> int | None:
    per = {"fork": scale, "fexec": scale, "cswitch": scale, "pdevtest": scale,
           "pdevtestInd": scale, "troff": scale}
    return per[bench] * copies if bench in per else None


def test_every_benchmark_runs_on_ksync_with_its_locks(exe):
    r = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "kernel"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rec = spriteuser.run_ksync(ROOT, exe, 2, mult=0.05, timeout=400)
    assert rec["ok"], rec["reason"] + "\n" + "\n".join(rec["errors"])
    # Debian's hackbench after the nine, in the same boot (rt-tests: scripts/deps.sh)
    hb = rec["rows"].pop("hackbench", None)
    assert (hb is not None) == dynlibs.have_rt_tests()
    assert hb is None or (hb["elapsed_ns"] > 0 and hb["args"] == "-p -g 4 -l 200")
    assert list(rec["rows"]) == list(spriteuser.BENCHES)
    for bench, row in rec["rows"].items():
        assert row["copies"] == spriteuser.copies(bench, 2), (bench, row)
        assert row["elapsed_ns"] > 0 and row["ops"] > 0, (bench, row)
        want = _expected_ops(bench, row["copies"], row["scale"])
        assert want is None or row["ops"] == want, (bench, row)
    # /proc/ksync-lockstat read around each timed part: the kernel's real locks counted
    assert set(rec["locks"]) == set(spriteuser.BENCHES)
    for bench, classes in rec["locks"].items():
        assert classes.pop("_mode") == "counts" and classes.pop("_tsc_hz") > 0
        assert classes and all(d["hits"] >= 0 and d["misses"] >= 0 for d in classes.values())
    # the pipe benchmarks go through the pipes' monitor, fork through the process table
    assert rec["locks"]["cswitch"]["pipe"]["hits"] > 0
    assert any(d["hits"] > 0 for c, d in rec["locks"]["fork"].items() if "proc" in c)


@pytest.mark.skipif(not os.environ.get("KSYNC_SLOW"), reason="boots Debian's Linux: KSYNC_SLOW=1")
def test_every_benchmark_runs_on_linux(exe):
    image = linuxguest.prepare("std", ROOT / linuxguest.DEFAULT_CACHE)
    rec = spriteuser.run_linux(image, exe, 2, mult=0.05, work=ROOT / "build" / "user-bench")
    assert rec["ok"], rec["reason"]
    assert list(rec["rows"]) == [*spriteuser.BENCHES, "hackbench"] and rec["locks"] == {}


def _run(kernel: str, smp: int, rnd: int, secs: dict[str, float], locks=None) -> dict:
    return {"kernel": kernel, "smp": smp, "round": rnd, "env": "tcg", "ok": True, "reason": "",
            "rows": {b: {"copies": smp, "scale": 1, "ops": smp, "elapsed_ns": int(s * 1e9)}
                     for b, s in secs.items()},
            "locks": locks or {}, "errors": [], "wall_s": 1.0}


def _data(k1: float, k2: float, l1: float, l2: float, jitter: float = 0.01) -> dict:
    runs = []
    for rnd in range(3):
        j = 1 + jitter * (rnd - 1)
        runs.append(_run("ksync", 1, rnd, {b: k1 * j for b in rep.BENCHES}))
        runs.append(_run("linux-std", 1, rnd, {b: l1 * j for b in rep.BENCHES}))
        lk = {"cswitch": {"pipe": {"hits": 1000, "misses": 50, "kind": "monitor"},
                          "fdtable": {"hits": 5000, "misses": 5, "kind": "monitor"},
                          "rare": {"hits": 10, "misses": 9, "kind": "master"}}}
        runs.append(_run("ksync", 2, rnd, {b: k2 * j for b in rep.BENCHES}, lk))
        runs.append(_run("linux-std", 2, rnd, {b: l2 * j for b in rep.BENCHES}))
    return {"schema": rep.SCHEMA, "meta": {}, "options": {"accel": "tcg", "mult": 1,
                                                          "scales": {"fork": 150}},
            "runs": runs}


def test_hackbench_time_is_a_row():
    rows, locks, errors = spriteuser.parse("KSYNC-SPRITE {\"bench\":\"fork\",\"copies\":1,"
                                           "\"scale\":1,\"ops\":1,\"elapsed_ns\":5}\n"
                                           "Running in process mode with 4 groups\nTime: 1.25\n"
                                           "sprite: fork: fork: Resource busy\n")
    assert rows["hackbench"]["elapsed_ns"] == 1_250_000_000 and rows["fork"]["ops"] == 1
    assert errors == ["sprite: fork: fork: Resource busy"] and locks == {}


def test_ratio_is_figure_2s_with_the_runs_extremes():
    d = _data(1.0, 1.5, 1.0, 1.0)
    r = rep.ratio(d, "ksync", 2, "fork")
    assert r.mid == pytest.approx(1.5)
    assert r.lo == pytest.approx(1.5 * 0.99 / 1.01) and r.hi == pytest.approx(1.5 * 1.01 / 0.99)
    assert rep.ratio(d, "ksync", 4, "fork") is None


@pytest.mark.parametrize("k2,l2,verdict", [(0.5, 1.0, "holds"), (2.0, 1.0, "reversed"),
                                           (1.0, 1.005, "within noise")])
def test_verdict_against_linux_follows_the_spreads(k2, l2, verdict):
    fs = rep.user_findings(_data(1.0, k2, 1.0, l2))
    f = next(f for f in fs if "at most" in f.claim)
    assert f.verdict == verdict and f.env == "tcg, 2 CPUs"
    bar = next(f for f in fs if "pmake" in f.claim)
    assert bar.verdict == verdict
    assert not any("hackbench" in f.claim for f in fs)     # no hackbench rows: no claim


def test_locks_table_names_the_highest_miss_ratio_with_enough_hits():
    rows = rep._lock_rows(_data(1.0, 1.0, 1.0, 1.0), 2)
    cs = next(r for r in rows if r["bench"] == "cswitch")
    assert cs["class"] == "pipe" and cs["ratio"] == pytest.approx(0.05)   # "rare" < 100 hits
    assert next(r for r in rows if r["bench"] == "fork")["class"] == ""


def test_tables_and_figure_render(tmp_path):
    d = _data(1.0, 1.2, 1.0, 1.1)
    d["runs"].append({"kernel": "ksync", "smp": 2, "round": 3, "env": "tcg", "ok": False,
                      "reason": "timed out after 900 s", "rows": {}, "locks": {},
                      "errors": [], "wall_s": 900})
    tables = rep.user_tables(d)
    assert tables[0].title.startswith(rep.TITLE_TIME)
    assert len(tables[0].rows) == len(rep.BENCHES) * 2
    assert any("timed out after 900 s" in n for n in tables[0].notes_below)
    assert tables[1].title.startswith(rep.TITLE_LOCKS)
    figs = rep.user_figures(d, tmp_path)
    f = figs[rep.TITLE_TIME][0]
    assert (tmp_path / f.src).stat().st_size > 0 and (tmp_path / f.svg).exists()
    assert all(isinstance(f, base.Finding) for f in rep.user_findings(d))


def test_a_file_of_another_kind_is_refused(tmp_path):
    p = tmp_path / rep.SPRITEUSER_JSON
    p.write_text('{"schema": "ksync-osprims-1", "runs": []}')
    with pytest.raises(Exception, match="not a spriteuser results file"):
        rep.load_spriteuser(p)


@pytest.mark.parametrize("sprite,verdict", [(2.0, "holds"), (0.5, "reversed"),
                                            (1.005, "within noise")])
def test_figure_9_finding_compares_the_two_monitor_configurations(sprite, verdict):
    d = _data(1.0, 1.0, 1.0, 1.0)
    for r in list(d["runs"]):
        if r["kernel"] == "ksync":
            r["kernel"] = "ksync-sprite-fix"
            s = dict(r, kernel="ksync-sprite",
                     rows={b: dict(row, elapsed_ns=int(row["elapsed_ns"] * sprite))
                           for b, row in r["rows"].items()})
            d["runs"].append(s)
    assert rep.ksyncs(d) == ["ksync-sprite", "ksync-sprite-fix"]
    f = next(f for f in rep.user_findings(d) if f.claim.startswith("Figure 9"))
    assert f.verdict == verdict
    # one verdict against Linux per configuration, the table's lock rows per configuration
    assert sum("elapsed time at most" in f.claim for f in rep.user_findings(d)) == 2
    kernels = {r["kernel"] for r in rep._lock_rows(d, 2, "ksync-sprite")}
    assert kernels == {"ksync-sprite"}


def test_the_kernel_refuses_a_lock_configuration_it_does_not_build(exe):
    for locks, extra, why in (("fiasco", ("sched=locked",), "sched=locked was given"),
                              ("bogus", (), "unknown configuration"),
                              ("sprite", ("sched=lockfree",), "sched=lockfree was given")):
        rec = spriteuser.run_ksync(ROOT, exe, 1, mult=0.05, timeout=120, locks=locks,
                                   benches=("fork",), append=("lockstat=counts", *extra))
        assert not rec["ok"] and rec["kernel"] == f"ksync-{locks}"
        assert f"locks={locks} refused" in rec["reason"] and why in rec["reason"], rec["reason"]


@pytest.mark.parametrize("locks", spriteuser.LOCK_CONFIGS)
def test_each_lock_configuration_queues_monitor_waiters_where_it_says(exe, locks):
    """Figure 9: under sprite a monitor's miss queues under sched_Mutex, never its own
    interlock (mon_interlock); sprite-fix and synthesis use their own interlocks, and
    synthesis has no sched_Mutex at all (the lock-free run queues). Under fiasco the
    monitors' locks are helping locks: their contenders never sleep (only condition waits
    do, queued under the own interlock), and there is no sched_Mutex either."""
    # one CPU: a client that wrote its request reads its reply pipe before the server
    # (woken, not preempting it) ran, so it waits on the pipe's condition variable, which
    # queues it under the monitor's interlock (or sched_Mutex) - 600 times. (At 2 CPUs
    # beside the other make-test worker this boot took 13-16 s: the locked scheduler's
    # ticket lock convoys when the emulated CPUs outnumber free host cores.)
    rec = spriteuser.run_ksync(ROOT, exe, 1, mult=0.05, timeout=300, locks=locks,
                               benches=("pdevtest",))
    assert rec["ok"], rec["reason"]
    lk = rec["locks"]["pdevtest"]
    interlock = lk.get("mon_interlock", {}).get("hits", 0)
    sched = lk.get("sched_Mutex", {}).get("hits", 0)
    if locks == "sprite":
        assert interlock == 0 and sched > 0, lk
    elif locks == "sprite-fix":
        assert interlock > 0 and sched > 0, lk
    else:
        assert interlock > 0 and sched == 0, lk
    if locks == "fiasco":
        # the pipe's monitor: no sleep on the lock itself; its condition variables slept
        pipe = lk.get("pipe", {})
        assert pipe.get("hits", 0) > 0 and pipe.get("sleeps", 0) == 0, lk
        assert sum(v.get("sleeps", 0) for k, v in lk.items() if k.startswith("pipe_")) > 0, lk


def test_sched_mutex_is_top_only_when_its_range_clears_every_other():
    d = _data(1.0, 1.0, 1.0, 1.0)
    for r in d["runs"]:
        if r["kernel"] == "ksync":
            r["kernel"] = "ksync-sprite"
            if r["smp"] == 2:
                j = r["round"]
                r["locks"] = {
                    "fork": {"sched_Mutex": {"hits": 1000, "misses": 300 + j, "kind": "master"},
                             "heap": {"hits": 1000, "misses": 10, "kind": "master"}},
                    "fexec": {"sched_Mutex": {"hits": 1000, "misses": 10 + j, "kind": "master"},
                              "uproc-table": {"hits": 1000, "misses": 200, "kind": "master"}},
                    "mem": {"sched_Mutex": {"hits": 1000, "misses": 100 + 50 * j, "kind": "master"},
                            "heap": {"hits": 1000, "misses": 120, "kind": "master"},
                            "pipe": {"hits": 1000, "misses": 900, "kind": "monitor"}}}
    assert rep.sched_mutex_top(d, "ksync-sprite", 2) == {"fork": "top", "fexec": "not top",
                                                         "mem": "within noise"}
    f = next(f for f in rep.user_findings(d) if f.claim.startswith("Figures 8 and 10"))
    assert f.verdict == "within noise" and "highest in 1 of 3" in f.today


def test_one_run_a_side_gives_no_verdict():
    d = _data(1.0, 0.5, 1.0, 1.0)
    d["runs"] = [r for r in d["runs"] if r["round"] == 0]
    fs = rep.user_findings(d)
    assert fs and all(f.verdict == "not measurable here" for f in fs), \
        [(f.claim, f.verdict) for f in fs]


def test_gain_is_figure_4s_and_judged_against_one_cpu():
    d = _data(1.0, 1.0, 1.0, 2.0)       # ksync: 2 copies in the time of 1; Linux: in twice
    g = rep.gain(d, "ksync", 2, "troff")
    assert g.mid == pytest.approx(1.0) and g.lo < 1.0 < g.hi
    assert rep.gain(d, "linux-std", 2, "troff").mid == pytest.approx(0.0)
    assert rep.gain(d, "ksync", 2, "pmake").mid == pytest.approx(0.0)   # fixed work
    fs = {f.claim.split(":")[0]: f.verdict for f in rep.user_findings(d)
          if f.claim.startswith("Figure 4")}
    assert fs == {"Figure 4 on ksync": "within noise", "Figure 4 on linux-std": "reversed"}


def test_gain_and_miss_figures_are_drawn(tmp_path):
    d = _data(1.0, 1.2, 1.0, 1.1)
    for r in d["runs"]:
        if r["kernel"] == "ksync":
            r["locks"] = {"fork": {"uproc-table": {"hits": 1000, "misses": 100 * r["smp"],
                                                   "kind": "master"},
                                   "pipe": {"hits": 500, "misses": 5, "kind": "monitor"}}}
    figs = rep.user_figures(d, tmp_path)[rep.TITLE_TIME]
    assert [f.src for f in figs] == ["spriteuser_fig2.png", "spriteuser_fig4.png",
                                     "spriteuser_fig6.png"]
    assert all((tmp_path / f.src).stat().st_size > 0 for f in figs)
    assert rep.top_ratio(d, "ksync", 2, "fork", "master")[0] == "uproc-table"


# ---- the saturation projection from the real locks (timing boots) ----------------------
HZ = 1_000_000_000


def _timing_run(smp: int, rnd: int, secs: float, holds: dict[str, float],
                created: dict[str, int] | None = None) -> dict:
    """A timing boot of ksync-sprite: every macro benchmark did `smp` units in `secs`,
    each class held `holds[c]` seconds per unit (at 1 GHz ticks)."""
    r = _run("ksync-sprite", smp, rnd, {b: secs for b in rep.BENCHES})
    r["lockstat"] = "timing"
    for b in rep.MACRO:
        r["locks"][b] = {"_mode": "timing", "_tsc_hz": HZ,
                         **{c: {"hits": 1000, "misses": 0, "kind": "master",
                                "hold_ticks": int(h * smp * HZ),
                                "created": (created or {}).get(c, 0)}
                            for c, h in holds.items()}}
    return r


def _proj_data(first_heavy: str = "sched_Mutex", top_secs: float = 1.25) -> dict:
    # 1 CPU: 1 unit a second; sched_Mutex (or heap) held 0.2 s a unit, the other 0.1;
    # proc-mm, a lock per object, 0.5 s a unit (think time, not a queue)
    other = "heap" if first_heavy == "sched_Mutex" else "sched_Mutex"
    holds = {first_heavy: 0.2, other: 0.1, "proc-mm": 0.5}
    runs = []
    for rnd in range(3):
        runs.append(_timing_run(1, rnd, 1.0, holds, {"proc-mm": 40, "heap": 1}))
        runs.append(_timing_run(2, rnd, top_secs, holds, {"proc-mm": 80, "heap": 1}))
        runs.append(_run("ksync-sprite", 1, rnd, {b: 7.0 for b in rep.BENCHES}))
        runs.append(_run("ksync-sprite", 2, rnd, {b: 7.0 for b in rep.BENCHES}))
    return {"schema": rep.SCHEMA, "meta": {}, "options": {"accel": "tcg", "mult": 1},
            "runs": runs}


def test_projection_from_the_timing_boots_alone():
    from ksync.base import mva
    d = _proj_data()
    p = rep.projection(d, "ksync-sprite", "pmake")
    assert p["first"] == "sched_Mutex" and p["per_object"] == ["proc-mm"]
    assert p["knee"].mid == pytest.approx(5.0) and p["share"] == pytest.approx(0.2)
    assert p["obj_share"] == pytest.approx(0.5)
    curve = mva([0.1, 0.2], 0.7, 2)          # heap and sched_Mutex; 1 - 0.3 think
    assert p["pred"] == pytest.approx(curve[1] / curve[0])
    # measured: 2 units in 1.25 s against 1 in 1 s
    assert p["meas"].mid == pytest.approx(1.6) and p["err"] == pytest.approx(
        abs(p["pred"] - 1.6) / 1.6)
    # the timing boots never reach the elapsed-time tables (7 s in the ordinary runs)
    assert rep.elapsed(d, "ksync-sprite", 1, "pmake").mid == pytest.approx(7.0)
    t = next(t for t in rep.user_tables(d) if t.title.startswith(rep.TITLE_PROJ))
    assert {r[1] for r in t.rows} == set(rep.MACRO)
    f = [x for x in rep.user_findings(d) if "saturate first" in x.claim]
    assert [x.verdict for x in f] == ["holds"], f
    assert "sched_Mutex first in 9 of 9 runs" in f[0].today
    f = [x for x in rep.user_findings(_proj_data("heap")) if "saturate first" in x.claim]
    assert [x.verdict for x in f] == ["reversed"], f
    # a single-instance class used but never timed (a helping-lock monitor): no ranking
    d = _proj_data()
    for r in d["runs"]:
        for b in rep.MACRO:
            if b in r["locks"]:
                r["locks"][b]["ramfs"] = {"hits": 500, "misses": 0, "kind": "monitor",
                                          "hold_ticks": 0, "created": 1}
    assert rep.projection(d, "ksync-sprite", "pmake")["untimed"] == ["ramfs"]
    f = [x for x in rep.user_findings(d) if "saturate first" in x.claim]
    assert [x.verdict for x in f] == ["not measurable here"] and "ramfs" in f[0].today


def test_projection_figure_is_drawn(tmp_path):
    figs = rep.user_figures(_proj_data(), tmp_path)
    (fig,) = figs[rep.TITLE_PROJ]
    assert (tmp_path / fig.src).stat().st_size > 0


def test_a_timing_boot_reports_hold_times_and_instances(exe):
    rec = spriteuser.run_ksync(ROOT, exe, 1, mult=0.05, timeout=120, locks="sprite",
                               benches=("fork",), append=("lockstat=timing",))
    assert rec["ok"] and rec["lockstat"] == "timing", rec["reason"]
    lk = rec["locks"]["fork"]
    assert lk.pop("_mode") == "timing" and lk.pop("_tsc_hz") > 0
    assert lk["sched_Mutex"]["hold_ticks"] > 0
    # a file table per process: the kernel created more than one; the process table one
    assert lk["fdtable"]["created"] > 1 and lk["uproc-table"]["created"] <= 1, lk
