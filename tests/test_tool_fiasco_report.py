"""ksync.fiascoreport (issue 12): Hohmuth & Härtig's Table 2 and Table 1 regenerated from
fiasco.json, the issue's performance bars, the runs, the findings and the lateness figures.

Fixtures: tests/fixtures/fiasco_hosted_small.json (a real hosted-only run: three hosted boots,
Table 2 in the first; the host's cyclictest missing) and tests/fixtures/fiasco_synth.json (a
synthetic run in the same format: 5 tcg pairs with Table 2 in the first, one tcg-icount pair,
the three real hosted boots; Linux PREEMPT_RT under tcg and tcg-icount with one run failed,
standard Linux missing (linux_missing), the host's cyclictest beside the hosted boots).
Made-up runs (``make``) check the arithmetic of the bars and the findings."""
import copy
import json
import statistics
from pathlib import Path

import pytest

from ksync import fiascoreport as fr, irqreport, report, schemes
from ksync.report import DASH
from ksync.irqreport import fmt_sig
from ksync.util import KsyncError

FIXTURES = Path(__file__).parent / "fixtures"
SYNTH = FIXTURES / "fiasco_synth.json"
HOSTED = FIXTURES / "fiasco_hosted_small.json"
AR = "helping lock acquire+release, uncontended"
SWITCH = "context switch (thread_yield, two threads, one CPU)"
SERVER = "counter, single server, requester donates (one switch each way)"


@pytest.fixture(scope="module")
def synth():
    return fr.load_fiasco(SYNTH)


@pytest.fixture(scope="module")
def hosted():
    return fr.load_fiasco(HOSTED)


def table(tables, key):
    return next(t for t in tables if t.title == fr.TITLES[key])


def rows_by_key(t):
    return {r[0]: dict(zip(t.headers, r)) for r in t.rows}


def bar_rows(data):
    return {b.key: b for b in fr.bars(data)}


def finding(data, words, env=None):
    got = [f for f in fr.fiasco_findings(data) if words in f.claim
           and (env is None or f.env.startswith(env))]
    assert len(got) == 1, [f.claim for f in fr.fiasco_findings(data)]
    return got[0]


# ---------------------------------------------------------------------------------------
# made-up runs


def cost(row, med, sched="-", lo=None, hi=None):
    return {"kind": "fiasco_cost", "row": row, "sched": sched, "method": "batch",
            "scheme": "spl-optim", "cpus": 2, "unit": "tsc_ticks", "n": 200,
            "min": med if lo is None else lo, "median": med, "p99": med if hi is None else hi,
            "max": med if hi is None else hi}


def lat(config, p999, mx, samples=8000, missed=0, expected=8000, hist=None, overflow=0):
    return {"kind": "lateness", "config": config, "sched": "lockfree", "scheme": "spl-optim",
            "period_us": 250, "seconds": 2, "section_us": 100, "cpus": 2,
            "expected": expected, "samples": samples, "missed": missed, "unit": "us",
            "min": 10.0, "p50": 20.0, "p99": 30.0, "p999": p999, "max": mx, "irq_max": mx,
            "hist": hist if hist is not None else [[20, samples - overflow]],
            "overflow": overflow}


def rec(env, pair, rows, status="ok", reason=None, oversubscribed=False):
    return {"platform": "hosted" if env == "hosted" else "qemu", "env": env, "pair": pair,
            "status": status, "reason": reason, "log": f"build/logs/{env}-{pair}.log",
            "cmdline": "mode=bench", "rows": rows,
            "side": {"cpus": 2, "cpu_model": "x86", "guest_cpu_model": "x86",
                     "tsc_hz": 1_000_000_000, "oversubscribed": oversubscribed,
                     "host_cores": 2, "scheme": None, "sched": None}}


def lin(flavour, env, pair, p999, mx, ok=True, reason=None, other=()):
    return {"ok": ok, "reason": reason, "flavour": flavour, "env": env, "pair": pair,
            "kernel": "Linux (none) 6.1.0-28-rt-amd64 #1 SMP PREEMPT_RT Debian x86_64 GNU/Linux",
            "threads": 2, "samples": 16000 if ok else None, "min_us": 5 if ok else None,
            "avg_us": 9.0 if ok else None, "max_us": mx, "overflows": 0,
            "hist_us": {"8": 15990, str(int(p999)): 10} if ok else {}, "p50_us": 9 if ok else
            None, "p99_us": 12 if ok else None, "p999_us": p999, "p50_overflow": False,
            "p99_overflow": False, "p999_overflow": False, "boot_s": 4.2, "wall_s": 9.0,
            "other_qemu": list(other), "buckets": 2000, "log": f"build/logs/linux-{flavour}.log"}


def costs(cas=6.0, ar=11.0, switch=200.0, server=390.0, hlock=None):
    return [cost("counter, CAS", cas), cost(AR, ar),
            cost("counter, helping lock", hlock if hlock is not None else ar + 0.5),
            cost(SWITCH, switch, "lockfree"), cost(SERVER, server, "lockfree")]


def make(hosted_costs=None, tcg_costs=None, tcg_lat=None, rt=None, missing=None):
    """One hosted boot (Table 2) and tcg boots with lateness rows ``tcg_lat`` (a list per boot
    of {config: (p999, max)}) beside Linux-RT results ``rt`` (a list of (p999, max))."""
    runs = []
    if hosted_costs is not None:
        runs.append(rec("hosted", 0, hosted_costs + [lat(c, 50.0, 90.0)
                                                     for c in fr.LAT_CONFIGS]))
    for i, boot in enumerate(tcg_lat or []):
        rows = (tcg_costs or []) if i == 0 else []
        runs.append(rec("tcg", i, rows + [lat(c, p, m) for c, (p, m) in boot.items()]))
    linux = [lin("rt", "tcg", i, p, m) for i, (p, m) in enumerate(rt or [])]
    return {"meta": {"commit": "c", "timestamp": "t", "host_cpu_model": "x86", "host_cpus": 2,
                     "qemu_version": "7.2", "set": "default"},
            "plan": {"pairs": 2, "seconds": 2, "section_us": 100, "icount_pairs": 0,
                     "icount_shift": 4, "hosted_pairs": 1, "timeout": 300.0},
            "runs": runs, "linux": linux,
            "linux_missing": missing or {"rt": None, "std": None, "host": None},
            "other_qemu": []}


def tcg_boots(helping=(100.0, 5000.0), irqoff=(300.0, 6000.0), n=3):
    return [{"noload": (40.0, 60.0), "helping": (helping[0] + i, helping[1] + i),
             "master-irqoff": (irqoff[0] + i, irqoff[1] + i), "monitor": (150.0, 400.0)}
            for i in range(n)]


# ---------------------------------------------------------------------------------------
# loading, nothing to report


def test_missing_data():
    assert fr.fiasco_tables(None) == []
    assert fr.fiasco_findings(None) == []
    assert fr.fiasco_figures(None, Path("/nonexistent")) == {}
    empty = {"meta": {}, "runs": [], "linux": []}
    assert fr.fiasco_tables(empty) == [] and fr.fiasco_findings(empty) == []


def test_load_errors(tmp_path):
    with pytest.raises(KsyncError, match="not found"):
        fr.load_fiasco(tmp_path / "fiasco.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(KsyncError, match="cannot read"):
        fr.load_fiasco(bad)
    bad.write_text('{"meta": {}}')
    with pytest.raises(KsyncError, match="runs"):
        fr.load_fiasco(bad)


# ---------------------------------------------------------------------------------------
# the synthetic fixture: every table's rows and columns


def test_synth_titles_in_order(synth):
    titles = [t.title for t in fr.fiasco_tables(synth)]
    assert titles == [fr.TITLES[k] for k in ("t2", "bars", "t1", "runs")]


def test_synth_table2(synth):
    t = table(fr.fiasco_tables(synth), "t2")
    assert t.headers[:4] == ["row (ksync) [scheduler]", "paper's row (Table 2)",
                             "paper cycles P5 / P-II", "paper / CAS"]
    assert t.headers[4:] == ["hosted (real CPU): median TSC ticks", "hosted: / CAS",
                             "tcg (emulator): median TSC ticks", "tcg: / CAS"]
    rows = rows_by_key(t)
    cas, hl = rows["counter, CAS"], rows["counter, helping lock"]
    assert cas["paper cycles P5 / P-II"] == "13 / 12" and cas["hosted: / CAS"] == "1x"
    assert cas["hosted (real CPU): median TSC ticks"] == "5.84"
    assert hl["paper's row (Table 2)"] == "counter, Fiasco thread lock"
    assert hl["paper cycles P5 / P-II"] == "245 / 245"
    assert hl["paper / CAS"] == "18.8x / 20.4x"             # 245/13, 245/12
    assert hl["hosted (real CPU): median TSC ticks"] == "15.60"
    assert hl["hosted: / CAS"] == "2.67x"                    # 15.60 / 5.84
    assert hl["tcg (emulator): median TSC ticks"] == "76.90"
    assert hl["tcg: / CAS"] == "1.87x"                       # 76.9 / 41.2
    # the rows with switches, per scheduler; the paper's Massalin-Pu row beside ours
    for s in ("lockfree", "locked"):
        assert f"{SWITCH} [{s}]" in rows
        assert rows[f"{SERVER} [{s}]"]["paper cycles P5 / P-II"] == "627 / 607"
        assert rows[f"IPC one-way (hipc_send to a waiting receiver, switch hint) [{s}]"][
            "paper cycles P5 / P-II"] == "653 / 810"
    assert rows[f"{SERVER} [locked]"]["hosted (real CPU): median TSC ticks"] == "637.0"
    # L4/x86's IPC: the paper's reference lines, no ksync figure
    ref = rows["(paper only) IPC, L4/x86"]
    assert ref["paper cycles P5 / P-II"] == "398 / 438"
    assert ref["hosted (real CPU): median TSC ticks"] == report.DASH
    assert any("not core cycles" in n for n in t.notes_above)
    assert any(n.startswith("tcg:") and "not hardware costs" in n for n in t.notes_above)


def test_synth_table2_several_boots_give_min_max(synth):
    data = copy.deepcopy(synth)
    # a second tcg boot with Table 2: the cell becomes the median of the boots' medians
    second = next(r for r in data["runs"] if r["env"] == "tcg" and r["pair"] == 1)
    first = next(r for r in data["runs"] if r["env"] == "tcg" and r["pair"] == 0)
    extra = [dict(r) for r in first["rows"] if r["kind"] == "fiasco_cost"]
    for r in extra:
        r["median"] = r["median"] * 2
    second["rows"] = extra + second["rows"]
    rows = rows_by_key(table(fr.fiasco_tables(data), "t2"))
    cas = rows["counter, CAS"]["tcg (emulator): median TSC ticks"]
    assert cas == "61.80 (41.20..82.40)"                     # median of 41.2 and 82.4


def test_synth_table1(synth):
    t = table(fr.fiasco_tables(synth), "t1")
    assert t.headers == ["environment: system", "environment", "runs", "samples", "missed",
                         "skipped", "min (µs)", "p50 (µs)", "p99 (µs)", "p99.9 (µs)",
                         "max (µs)", "note"]
    rows = rows_by_key(t)
    keys = list(rows)
    # the paper's maxima first, then tcg, tcg-icount, hosted
    assert [rows[k]["max (µs)"] for k in keys[:3]] == ["65", "541", "58"]
    assert keys[3:11] == ["tcg: ksync noload", "tcg: ksync helping", "tcg: ksync master-irqoff",
                          "tcg: ksync master-scheme", "tcg: ksync monitor",
                          "tcg: ksync helping-sprite",
                          "tcg: Linux PREEMPT_RT cyclictest", "tcg: Linux standard cyclictest"]
    # a configuration the fixture's boots did not run: a row that says so, not a gap
    assert rows["tcg: ksync helping-sprite"]["runs"] == "0"
    assert "no helping-sprite row" in rows["tcg: ksync helping-sprite"]["note"]
    assert keys.index("tcg-icount: ksync helping") < keys.index("hosted: ksync helping")
    assert keys[-1] == "hosted: host cyclictest"
    # ksync, tcg, helping: sums and medians over the five boots computed from the fixture
    boots = [r for r in synth["runs"] if r["env"] == "tcg"]
    hrows = [x for r in boots for x in r["rows"] if x.get("config") == "helping"]
    h = rows["tcg: ksync helping"]
    assert h["environment"] == "tcg, 2 CPUs (emulator)"
    assert h["runs"] == "5"
    assert h["samples"] == str(sum(x["samples"] for x in hrows))
    assert h["missed"] == str(sum(x["missed"] for x in hrows))
    assert h["skipped"] == str(sum(x["expected"] - x["samples"] - x["missed"] for x in hrows))
    p999 = [x["p999"] for x in hrows]
    assert h["p99.9 (µs)"] == (f"{fmt_sig(statistics.median(p999))} "
                               f"({fmt_sig(min(p999))}..{fmt_sig(max(p999))})")
    # Linux-RT under tcg: four ok runs of five (one failed), the kernel named
    rt = rows["tcg: Linux PREEMPT_RT cyclictest"]
    assert rt["runs"] == "4" and rt["missed"] == "n/a" and rt["skipped"] == "n/a"
    ok = [x for x in synth["linux"] if x["env"] == "tcg" and x["ok"]]
    assert rt["samples"] == str(sum(x["samples"] for x in ok))
    assert rt["max (µs)"].startswith(fmt_sig(statistics.median(x["max_us"] for x in ok)))
    assert "PREEMPT_RT" in rt["note"]
    # standard Linux: missing, with linux_missing's reason
    std = rows["tcg: Linux standard cyclictest"]
    assert std["runs"] == "0" and std["note"].startswith("no data: missing: linux-image-amd64")
    assert any("404 Not Found" in n for n in t.notes_below)
    # one run under -icount: no bracket
    assert rows["tcg-icount: ksync helping"]["runs"] == "1"
    assert "(" not in rows["tcg-icount: ksync helping"]["p99.9 (µs)"]
    assert rows["hosted: host cyclictest"]["runs"] == "3"
    assert any("emulator's own scheduling noise" in n for n in t.notes_above)
    assert any("instruction" in n for n in t.notes_above)


def test_skipped_never_negative(hosted):
    # hosted pair 2's noload row has 8001 samples of 8000 expected (one extra tick)
    rows = rows_by_key(table(fr.fiasco_tables(hosted), "t1"))
    noload = [x for r in hosted["runs"] for x in r["rows"] if x.get("config") == "noload"]
    want = sum(max(0, x["expected"] - x["samples"] - x["missed"]) for x in noload)
    assert rows["hosted: ksync noload"]["skipped"] == str(want) == "3"


def test_synth_runs_table(synth):
    t = table(fr.fiasco_tables(synth), "runs")
    assert t.headers == ["run (environment, pair)", "status", "reason", "kernel", "boot (s)",
                         "wall (s)", "log", "other QEMU seen"]
    keys = [r[0] for r in t.rows]
    assert len(keys) == len(synth["runs"]) + len(synth["linux"])
    # the interleaving: ksync, then Linux-RT, pair by pair
    assert keys[:4] == ["#1 ksync + Table 2 (tcg, pair 0)", "#2 Linux PREEMPT_RT (tcg, pair 0)",
                        "#3 ksync (tcg, pair 1)", "#4 Linux PREEMPT_RT (tcg, pair 1)"]
    rows = rows_by_key(t)
    bad = rows["#6 Linux PREEMPT_RT (tcg, pair 2)"]
    assert bad["status"] == "failed" and bad["reason"].startswith("timeout after 132s")
    assert bad["log"] == "build/logs/20261125-180230-linux-rt.log"
    assert bad["kernel"].startswith("6.1.0-28-rt-amd64") and "PREEMPT_RT" in bad["kernel"]
    assert rows["#4 Linux PREEMPT_RT (tcg, pair 1)"]["other QEMU seen"] == "1: pid 31337"
    host = rows["#14 host cyclictest (hosted, pair 0)"]
    assert host["boot (s)"] == "n/a" and host["status"] == "ok"
    assert any(n.startswith("Other QEMU processes on the host before the runs (1): 31337")
               for n in t.notes_above)
    assert any(n.startswith("Linux standard cyclictest missing") for n in t.notes_above)


def test_failed_ksync_boot_reported(synth):
    data = copy.deepcopy(synth)
    data["runs"].append(rec("kvm", 0, [], status="failed", reason="boot failed: no KTAP plan"))
    tables = fr.fiasco_tables(data)
    run = rows_by_key(table(tables, "runs"))["#19 ksync (kvm, pair 0)"]
    assert run["status"] == "failed" and run["reason"] == "boot failed: no KTAP plan"
    assert run["log"] == "build/logs/kvm-0.log"
    t1 = rows_by_key(table(tables, "t1"))
    assert t1["kvm: ksync helping"]["note"] == ("no data: 1 of 1 ksync boots failed: boot "
                                                "failed: no KTAP plan")


# ---------------------------------------------------------------------------------------
# the bars


def test_synth_bars(synth):
    b = bar_rows(synth)
    hw = b["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert hw.verdict == "NOT MET"                           # 15.31 > 2 x 5.84
    assert hw.measured == "helping lock acquire+release 15.31 TSC ticks"
    assert hw.limit == "2 x CAS 5.84 = 11.68 TSC ticks"
    emu = b["helping lock acquire+release <= 2 x CAS [tcg]"]
    assert emu.verdict == "MET (emulator)"                   # 72.4 <= 82.4, the emulator's
    assert b["single server <= 2 x context switch [hosted, lockfree]"].verdict == "NOT MET"
    assert b["single server <= 2 x context switch [tcg, lockfree]"].verdict == "MET (emulator)"
    assert b["single server <= 2 x context switch [tcg, locked]"].verdict == "NOT MET (emulator)"
    # lateness under tcg: p99.9 below Linux-RT's, the max above it (three boots with a spike)
    assert b["lateness p99.9 < Linux PREEMPT_RT's [tcg]"].verdict == "MET"
    mx = b["lateness max < Linux PREEMPT_RT's [tcg]"]
    assert mx.verdict == "NOT MET" and "5 vs 4 runs" in mx.note and "spreads overlap" in mx.note
    assert b["lateness p99.9 < Linux PREEMPT_RT's [tcg-icount]"].verdict == "MET"
    t = table(fr.fiasco_tables(synth), "bars")
    verdicts = {r[0]: r[4] for r in t.rows}
    assert verdicts["lateness max < Linux PREEMPT_RT's [tcg]"] == "NOT MET"   # shown, not hidden


def test_cost_bars_met_and_not_met():
    met = bar_rows(make(hosted_costs=costs(cas=6.0, ar=12.0, switch=200.0, server=400.0)))
    assert met["helping lock acquire+release <= 2 x CAS [hosted]"].verdict == "MET"  # 12 <= 12
    assert met["single server <= 2 x context switch [hosted, lockfree]"].verdict == "MET"
    notmet = bar_rows(make(hosted_costs=costs(cas=6.0, ar=12.1, switch=200.0, server=401.0)))
    b = notmet["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert b.verdict == "NOT MET" and b.note == "ratio 2.02x"
    assert notmet["single server <= 2 x context switch [hosted, lockfree]"].verdict == "NOT MET"


def test_cost_bars_without_hosted_say_why():
    data = make(tcg_costs=costs(), tcg_lat=tcg_boots(), rt=[(500.0, 9000.0)] * 3)
    b = bar_rows(data)
    h = b["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert h.verdict == "NO DATA" and h.note == "no hosted boot in this fiasco.json"
    assert b["helping lock acquire+release <= 2 x CAS [tcg]"].verdict == "MET (emulator)"


def test_lateness_bars_met_and_not_met():
    data = make(tcg_lat=tcg_boots(helping=(100.0, 5000.0)),
                rt=[(200.0, 3000.0), (210.0, 3100.0), (190.0, 2900.0)])
    b = bar_rows(data)
    p = b["lateness p99.9 < Linux PREEMPT_RT's [tcg]"]
    assert p.verdict == "MET" and p.measured == "ksync (helping) 101 µs (100..102)"
    assert p.limit == "Linux PREEMPT_RT 200 µs (190..210)"
    m = b["lateness max < Linux PREEMPT_RT's [tcg]"]
    assert m.verdict == "NOT MET" and m.measured.startswith("ksync (helping) 5001 µs")


def test_missing_linux_half_is_no_data_with_reason(synth):
    data = copy.deepcopy(synth)
    data["linux"] = [x for x in data["linux"] if x["flavour"] != "rt"]
    data["linux_missing"]["rt"] = "linux-image-rt-amd64: no such package (apt-cache show)"
    b = bar_rows(data)
    for key in ("lateness p99.9 < Linux PREEMPT_RT's [tcg]",
                "lateness max < Linux PREEMPT_RT's [tcg]",
                "lateness p99.9 < Linux PREEMPT_RT's [tcg-icount]"):
        assert b[key].verdict == "NO DATA"
        assert "Linux PREEMPT_RT half: missing: linux-image-rt-amd64: no such package" in b[key].note
        assert b[key].measured.startswith("ksync (helping)")   # the half that exists is shown
    f = finding(data, "Linux PREEMPT_RT cyclictest", env="tcg (")
    assert f.verdict == "not measurable here" and "no such package" in f.note
    t = table(fr.fiasco_tables(data), "bars")
    assert any("no such package" in n for n in t.notes_below + [r[5] for r in t.rows])
    # all runs of a flavour failed (no linux_missing entry): the runs' reason
    data2 = copy.deepcopy(synth)
    for x in data2["linux"]:
        if x["flavour"] == "rt" and x["env"] == "tcg-icount":
            x.update(ok=False, reason="boot failed: Kernel panic - not syncing")
    bi = bar_rows(data2)["lateness max < Linux PREEMPT_RT's [tcg-icount]"]
    assert bi.verdict == "NO DATA" and "1 of 1 runs failed: boot failed: Kernel panic" in bi.note


def test_hosted_only_fixture(hosted):
    tables = fr.fiasco_tables(hosted)
    assert [t.title for t in tables] == [fr.TITLES[k] for k in ("t2", "bars", "t1", "runs")]
    b = bar_rows(hosted)
    assert b["helping lock acquire+release <= 2 x CAS [hosted]"].verdict == "NOT MET"
    q = b["lateness p99.9 < Linux PREEMPT_RT's [QEMU]"]
    assert q.verdict == "NO DATA" and "no QEMU lateness runs" in q.note
    t1 = rows_by_key(table(tables, "t1"))
    host = t1["hosted: host cyclictest"]
    assert host["runs"] == "0" and "cyclictest: not found on the host" in host["note"]
    assert t1["hosted: ksync master-irqoff"]["runs"] == "3"
    f = finding(hosted, "the host's cyclictest")
    assert f.verdict == "not measurable here" and "cyclictest: not found" in f.note
    f = finding(hosted, "Linux PREEMPT_RT cyclictest")
    assert f.verdict == "not measurable here" and f.env == "no data"
    runs = rows_by_key(table(tables, "runs"))
    assert runs["#2 host cyclictest (hosted, pair 0)"]["status"] == "failed"


def test_oversubscribed_hosted_is_not_a_timing():
    data = make(hosted_costs=costs())
    data["runs"][0]["side"]["oversubscribed"] = True
    b = bar_rows(data)
    h = b["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert h.verdict == "NO DATA" and "oversubscribed" in h.note
    runs = table(fr.fiasco_tables(data), "runs")
    assert "not a timing" in runs.rows[0][1]


# ---------------------------------------------------------------------------------------
# the findings, computed from the data


def test_synth_findings(synth):
    fs = fr.fiasco_findings(synth)
    assert all(f.verdict in report.VERDICTS for f in fs) and all(f.paper == fr.HH for f in fs)
    f = finding(synth, "costs more than a CAS")
    assert f.verdict == "holds" and f.env.startswith("hosted")
    assert "2.67x" in f.today and "18.8x" in f.today            # ours vs the paper's 245/13
    f = finding(synth, "single server (scheduler lockfree)")
    assert f.verdict == "holds" and "36.2x" in f.today and "2.56x" in f.today
    irq = {e: finding(synth, "interrupt-disabling", env=e) for e in ("hosted", "tcg (", "tcg-icount")}
    assert all(f.verdict == "holds" for f in irq.values())
    assert "largest max: helping itself" in irq["tcg ("].today
    assert "within noise" in irq["tcg ("].note                  # the max, beside the verdict
    rt = finding(synth, "Linux PREEMPT_RT cyclictest", env="tcg (")
    assert rt.verdict == "holds" and "p99.9 ksync 322 µs" in rt.today
    assert "emulated machine" in rt.note
    assert finding(synth, "the host's cyclictest").verdict == "reversed"


def test_findings_flip_with_the_numbers(synth):
    # Linux-RT's p99.9 under tcg made lower than ksync's: the finding reverses
    data = copy.deepcopy(synth)
    for x in data["linux"]:
        if x["env"] == "tcg" and x["ok"]:
            x["p999_us"] = 20
    assert finding(data, "Linux PREEMPT_RT cyclictest", env="tcg (").verdict == "reversed"
    # overlapping spreads: within noise
    data = copy.deepcopy(synth)
    vals = iter([250, 260, 330, 340])
    for x in data["linux"]:
        if x["env"] == "tcg" and x["ok"]:
            x["p999_us"] = next(vals)
    assert finding(data, "Linux PREEMPT_RT cyclictest", env="tcg (").verdict == "within noise"
    # master-irqoff made less late than helping on the hosted port
    data = copy.deepcopy(synth)
    for r in data["runs"]:
        for x in r["rows"]:
            if r["env"] == "hosted" and x.get("config") == "master-irqoff":
                x["p999"] = 10.0
    assert finding(data, "interrupt-disabling", env="hosted").verdict == "reversed"


def test_cost_findings_both_ways_and_tcg_only():
    f = finding(make(hosted_costs=costs(cas=6.0, hlock=120.0)), "costs more than a CAS")
    assert f.verdict == "holds" and f.today.endswith("20x (paper 18.8x P5, 20.4x P-II)")
    f = finding(make(hosted_costs=costs(cas=6.0, hlock=5.0)), "costs more than a CAS")
    assert f.verdict == "reversed"
    f = finding(make(hosted_costs=costs(hlock=11.0, server=21.0)), "single server")
    assert f.verdict == "reversed"                  # 21 < 2 x 11: not more than twofold
    f = finding(make(hosted_costs=costs(hlock=11.0, server=23.0)), "single server")
    assert f.verdict == "holds"
    # a cost claim measured only under tcg: not measurable here, the figures still shown
    f = finding(make(tcg_costs=costs(cas=6.0, hlock=120.0), tcg_lat=tcg_boots()),
                "costs more than a CAS")
    assert f.verdict == "not measurable here" and f.env.startswith("tcg")
    assert "20x" in f.today and "emulator" in f.note
    f = finding(make(tcg_lat=tcg_boots()), "costs more than a CAS")
    assert f.verdict == "not measurable here" and f.today == report.DASH


def test_irqoff_finding_largest_config():
    data = make(tcg_lat=tcg_boots(helping=(100.0, 500.0), irqoff=(1000.0, 9000.0)))
    f = finding(data, "interrupt-disabling", env="tcg")
    assert f.verdict == "holds"
    assert "Largest p99.9 under load: master-irqoff (9.91x helping's)" in f.today   # 1001 / 101
    data = make(tcg_lat=tcg_boots(helping=(500.0, 5000.0), irqoff=(100.0, 900.0)))
    f = finding(data, "interrupt-disabling", env="tcg")
    assert f.verdict == "reversed" and "Largest p99.9 under load: helping itself" in f.today


# ---------------------------------------------------------------------------------------
# lateness details


def test_cyclictest_overflow_is_a_lower_bound(synth):
    data = copy.deepcopy(synth)
    for x in data["linux"]:
        if x["env"] == "tcg-icount":
            x.update(p999_us=2000, p999_overflow=True)
    rows = rows_by_key(table(fr.fiasco_tables(data), "t1"))
    rt = rows["tcg-icount: Linux PREEMPT_RT cyclictest"]
    assert rt["p99.9 (µs)"] == "≥2000" and "lower bound" in rt["note"]


def test_incomplete_kernel_histogram_is_flagged(synth):
    data = copy.deepcopy(synth)
    r = next(r for r in data["runs"] if r["env"] == "tcg-icount")
    row = next(x for x in r["rows"] if x["config"] == "monitor")
    row["hist"] = row["hist"][:5]               # the kernel's 4 KiB line cut the list short
    rows = rows_by_key(table(fr.fiasco_tables(data), "t1"))
    assert "histogram incomplete" in rows["tcg-icount: ksync monitor"]["note"]
    assert rows["tcg-icount: ksync helping"]["note"] == ""


def test_ccdf_and_log_bins():
    xs, ys = fr._ccdf({10: 1, 20: 1}, 0, 5000)
    assert xs == [10.0, 11.0, 21.0] and ys == [1.0, 0.5, 0.5]
    xs, ys = fr._ccdf({10: 3}, 1, 5000)         # an overflow sample, drawn at the edge
    assert xs[-1] == 5001.0 and ys[-2] == pytest.approx(0.25)
    edges, counts = fr._log_bins({0: 2, 9: 1, 99: 4}, 1, 5000)
    assert sum(counts) == 8 and edges[0] == 1.0 and edges[-1] >= 5001
    assert len(edges) == len(counts) + 1


# ---------------------------------------------------------------------------------------
# figures and the whole report


@pytest.fixture(scope="module")
def rendered(synth, tmp_path_factory):
    """The whole render path once: irqreport.render_results_doc with fiasco= only."""
    out = tmp_path_factory.mktemp("fiasco-report")
    written, doc = irqreport.render_results_doc(out, fiasco=synth)
    return out, written, doc


def test_figures_written(rendered, hosted, tmp_path):
    out, written, doc = rendered
    figs = {t.title: t.images for t in doc.tables if t.images}
    assert set(figs) == {fr.TITLES["t2"], fr.TITLES["t1"]}     # each under its table
    names = [f.src for f in figs[fr.TITLES["t1"]]]
    assert names == ["fiasco-lateness-tcg.png", "fiasco-lateness-tcg-icount.png",
                     "fiasco-lateness-hosted.png"]
    assert [f.src for f in figs[fr.TITLES["t2"]]] == ["fiasco-table2-ratios.png"]
    for f in (f for v in figs.values() for f in v):
        assert (out / f.src).stat().st_size > 0 and (out / f.svg).stat().st_size > 0
        assert out / f.src in written and out / f.svg in written
        assert "µs" in f.caption or "CAS" in f.caption
    tcg = figs[fr.TITLES["t1"]][0]
    assert "scheduling noise" in tcg.caption and "Linux standard cyclictest" in tcg.caption
    # straight from fiasco_figures: the hosted-only run, its missing cyclictest named
    hf = fr.fiasco_figures(hosted, tmp_path)
    assert set(hf) == {fr.TITLES["t2"], fr.TITLES["t1"]}
    assert [f.src for f in hf[fr.TITLES["t1"]]] == ["fiasco-lateness-hosted.png"]
    assert "cyclictest: not found" in hf[fr.TITLES["t1"]][0].caption
    assert (tmp_path / "fiasco-lateness-hosted.svg").exists()


def test_render_results_doc(rendered):
    """report.md / report.html from fiasco.json alone: the tables, the findings first."""
    out, written, doc = rendered
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    for key, title in fr.TITLES.items():     # the synthetic data has no scheme sweep
        assert (title in md) == (key != "schemes"), key
    assert "fiasco-lateness-hosted.png" in md and "fiasco-table2-ratios.png" in html
    assert "Härtig 2001" in html and "NOT MET" in html
    assert md.index("## Findings") < md.index(fr.TITLES["t2"])
    assert doc.title == "ksync results: helping locks and real-time lateness (Fiasco)"
    assert [f.claim for f in doc.findings] == [f.claim for f in
                                               fr.fiasco_findings(fr.load_fiasco(SYNTH))]
    assert [t.title for t in doc.tables] == [fr.TITLES[k] for k in ("t2", "bars", "t1", "runs")]
    assert all(p.exists() for p in written)
    text = report.render_text(doc)
    assert max(len(line) for line in text.splitlines()) <= report.TEXT_WIDTH
    # the terminal tables are column groups (key column repeated), not one record per row
    assert "shown as one record per row" not in text


def test_fiasco_json_round_trip(hosted, tmp_path):
    # what `ksync report` reads from a results directory (the real hosted-only run)
    (tmp_path / fr.FIASCO_JSON).write_text(json.dumps(hosted), encoding="utf-8")
    written, doc = irqreport.render_results_doc(tmp_path, strict=True)
    assert [t.title for t in doc.tables] == [fr.TITLES[k] for k in ("t2", "bars", "t1", "runs")]
    assert (tmp_path / "fiasco-lateness-hosted.png").exists()
    text = report.render_text(doc)
    assert max(len(line) for line in text.splitlines()) <= report.TEXT_WIDTH
    assert "shown as one record per row" not in text


# ---------------------------------------------------------------------------------------
# a real `ksync run fiasco` (QEMU tcg 5 pairs with Linux PREEMPT_RT and standard, tcg-icount
# 1 pair, hosted 3 pairs with the host's cyclictest; tests/fixtures/fiasco_small.json)

def test_real_run_renders_every_environment():
    data = fr.load_fiasco(FIXTURES / "fiasco_small.json")
    tables = fr.fiasco_tables(data)
    t1 = rows_by_key(table(tables, "t1"))
    for env in ("tcg", "tcg-icount", "hosted"):
        for cfg in fr.LAT_CONFIGS:
            row = t1[f"{env}: ksync {cfg}"]
            assert int(row["runs"]) >= 1 and int(row["samples"]) > 0, row
    for key in ("tcg: Linux PREEMPT_RT cyclictest", "tcg: Linux standard cyclictest",
                "tcg-icount: Linux PREEMPT_RT cyclictest", "hosted: host cyclictest"):
        assert int(t1[key]["samples"]) > 0, t1[key]
    # every bar has a verdict computed from the data (no NO DATA: both halves ran)
    verdicts = {b.key: b.verdict for b in fr.bars(data)}
    assert verdicts and all(not v.startswith("NO DATA") for v in verdicts.values()), verdicts
    # the -icount bound: one bar per configuration, each with its terms from the data
    bound = {b.where: b for b in fr.bars(data) if b.bar == fr.BOUND_BAR}
    assert set(bound) == set(fr.LAT_CONFIGS)
    for cfg, b in bound.items():
        assert b.verdict in ("MET", "NOT MET") and "longest masked window" in b.note, b
    # the scheme sweep: one row per scheme, both swept configurations with figures
    sw = table(tables, "schemes")
    assert [r[0] for r in sw.rows] == list(schemes.SCHEMES)
    assert all(r[-1] == "ok" and DASH not in r[1:-1] for r in sw.rows), sw.rows
    # the icount rows: ksync's lateness is the emulated machine's own, one sample per period
    icount = [r for run in data["runs"] if run["env"].endswith("-icount")
              for r in run["rows"] if r["kind"] == "lateness"]
    assert {r["config"] for r in icount} == set(fr.LAT_CONFIGS)
    assert all(r["samples"] + r["missed"] >= r["expected"] - 1 for r in icount)
