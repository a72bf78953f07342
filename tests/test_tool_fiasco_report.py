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

from ksync import document
from ksync import base
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
                         "skipped", "lost / expected", "min (µs)", "p50 (µs)", "p99 (µs)",
                         "p99.9 (µs)", "max (µs)", "note"]
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
    lost = sum(x["expected"] - x["samples"] for x in hrows)
    assert h["lost / expected"] == f"{lost} / 40000 (0.04 %)" and lost == 16
    p999 = [x["p999"] for x in hrows]
    assert h["p99.9 (µs)"] == (f"{fmt_sig(statistics.median(p999))} "
                               f"({fmt_sig(min(p999))}..{fmt_sig(max(p999))})")
    # Linux-RT under tcg: four ok runs of five (one failed), the kernel named
    rt = rows["tcg: Linux PREEMPT_RT cyclictest"]
    assert rt["runs"] == "4" and rt["missed"] == "n/a" and rt["skipped"] == "0"
    assert rt["lost / expected"] == "0 / 64000 (0.00 %)"        # 4 runs x 2 threads x 8000
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
    # 15.31 (15.02..15.50) wholly above 2 x CAS 11.68 (11.48..12.26): min..p99 of one boot
    assert hw.verdict == "NOT MET"
    assert hw.measured == "15.31 (15.02..15.50) TSC ticks"
    assert hw.limit == "2 x 5.84 = 11.68 (11.48..12.26)"
    emu = b["helping lock acquire+release <= 2 x CAS [tcg]"]
    # 72.4 <= 82.4 by the medians, but 72.40 (69.50..81.09) overlaps 82.40 (79.10..92.28)
    assert emu.verdict == "WITHIN NOISE (emulator)"
    assert b["single server <= 2 x context switch [hosted, lockfree]"].verdict == "NOT MET"
    assert b["single server <= 2 x context switch [tcg, lockfree]"].verdict == "MET (emulator)"
    assert b["single server <= 2 x context switch [tcg, locked]"].verdict == \
        "WITHIN NOISE (emulator)"
    # lateness under tcg: p99.9 wholly below Linux-RT's; the max (three boots with a spike)
    # overlaps Linux's: within noise, not NOT MET by the medians
    assert b["lateness p99.9 < Linux PREEMPT_RT's [tcg]"].verdict == "MET"
    mx = b["lateness max < Linux PREEMPT_RT's [tcg]"]
    assert mx.verdict == "WITHIN NOISE" and "5 runs vs 4 runs" in mx.note
    assert "spreads overlap" in mx.note and "kernel thread" in mx.note
    # -icount: one boot of each side - no spread, so no verdict (the figures are shown)
    ic = b["lateness p99.9 < Linux PREEMPT_RT's [tcg-icount]"]
    assert ic.verdict == "NOT MEASURABLE HERE" and "one run" in ic.note
    t = table(fr.fiasco_tables(synth), "bars")
    verdicts = {r[0]: r[4] for r in t.rows}
    assert verdicts["helping lock acquire+release <= 2 x CAS [hosted]"] == "NOT MET"  # shown


def test_cost_bars_met_and_not_met():
    met = bar_rows(make(hosted_costs=costs(cas=6.0, ar=12.0, switch=200.0, server=400.0)))
    assert met["helping lock acquire+release <= 2 x CAS [hosted]"].verdict == "MET"  # 12 <= 12
    assert met["single server <= 2 x context switch [hosted, lockfree]"].verdict == "MET"
    notmet = bar_rows(make(hosted_costs=costs(cas=6.0, ar=12.1, switch=200.0, server=401.0)))
    b = notmet["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert b.verdict == "NOT MET" and b.note == "ratio 2.02x"
    assert notmet["single server <= 2 x context switch [hosted, lockfree]"].verdict == "NOT MET"


def test_hlock_bar_names_its_floor():
    """With the floor row (two CAS on one word: the acquire's and the release's locked
    instructions alone) the helping-lock bar says what the lock adds and whether the floor
    itself fits the bar on this host; without the row, nothing is said (old runs)."""
    rows = costs(cas=5.5, ar=11.7) + [cost(fr.ROW_HLOCK_FLOOR, 11.6)]
    b = bar_rows(make(hosted_costs=rows))["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert b.verdict == "NOT MET"
    assert ("the floor, two CAS on one word and nothing else, is 11.60 ticks = 2.11x a CAS; "
            "the lock adds 0.10 ticks to it: above the 2x bar on this host by itself") in b.note
    ok = bar_rows(make(hosted_costs=costs(cas=6.0, ar=11.0) + [cost(fr.ROW_HLOCK_FLOOR, 10.0)]))
    n = ok["helping lock acquire+release <= 2 x CAS [hosted]"].note
    assert "is 10.00 ticks = 1.67x a CAS; the lock adds 1.00 ticks" in n and "above" not in n
    plain = bar_rows(make(hosted_costs=costs()))["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert "floor" not in plain.note


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
    assert all(f.verdict in base.VERDICTS for f in fs) and all(f.paper == fr.HH for f in fs)
    f = finding(synth, "costs more than a CAS")
    assert f.verdict == "holds" and f.env.startswith("hosted")
    assert "2.67x" in f.today and "18.8x" in f.today            # ours vs the paper's 245/13
    f = finding(synth, "single server (scheduler lockfree)")
    assert f.verdict == "holds" and "36.2x" in f.today and "2.56x" in f.today
    irq = {e: finding(synth, "interrupt-disabling", env=e) for e in ("hosted", "tcg (", "tcg-icount")}
    assert irq["tcg ("].verdict == "holds"
    # -icount: one boot a side, no spread: the figures without a verdict
    assert irq["tcg-icount"].verdict == "not measurable here" and "one run" in irq["tcg-icount"].note
    # hosted: master-irqoff lost 6.9 % and helping 6.4 % of their periods (> 0.1 %)
    assert irq["hosted"].verdict == "not measurable here"
    assert "helping 1540 of 24000 periods (6.4 %)" in irq["hosted"].note
    assert "helping lost 6.4 % of its periods, more than the p99.9's limit" in irq["hosted"].note
    assert "largest max: helping itself" in irq["tcg ("].today
    assert "within noise" in irq["tcg ("].note                  # the max, beside the verdict
    rt = finding(synth, "Linux PREEMPT_RT cyclictest", env="tcg (")
    assert rt.verdict == "holds" and "p99.9 ksync 322 µs" in rt.today
    assert "emulated machine" in rt.note and "kernel thread" in rt.note
    host = finding(synth, "the host's cyclictest")       # ksync lost 6.4 % of its periods
    assert host.verdict == "not measurable here" and "ksync lost 1540" in host.note


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
    # master-irqoff made less late than helping under tcg (few periods lost there); on
    # the hosted port the same change gives no verdict: both lost 6-7 % of their periods
    data = copy.deepcopy(synth)
    for r in data["runs"]:
        for x in r["rows"]:
            if r["env"] in ("tcg", "hosted") and x.get("config") == "master-irqoff":
                x["p999"] = 10.0
    assert finding(data, "interrupt-disabling", env="tcg (").verdict == "reversed"
    assert finding(data, "interrupt-disabling", env="hosted").verdict == "not measurable here"


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


# ---------------------------------------------------------------------------------------
# verdicts that follow from the data (each of these failed on the medians-only report)


def test_overlapping_lateness_spreads_are_never_met():
    # ksync's p99.9 median 200 below Linux's 210, but 100..300 overlaps 150..250
    data = make(tcg_lat=[{"helping": (p, 500.0)} for p in (100.0, 200.0, 300.0)],
                rt=[(150.0, 900.0), (210.0, 950.0), (250.0, 1000.0)])
    p = bar_rows(data)["lateness p99.9 < Linux PREEMPT_RT's [tcg]"]
    assert p.verdict == "WITHIN NOISE" and "spreads overlap" in p.note
    f = finding(data, "Linux PREEMPT_RT cyclictest", env="tcg")
    assert f.verdict == "within noise"
    # the max, 500 vs 900..1000: apart, MET
    assert bar_rows(data)["lateness max < Linux PREEMPT_RT's [tcg]"].verdict == "MET"
    # one run each: no spread, no verdict either way (equal or not)
    for k in (200.0, 100.0):
        data = make(tcg_lat=[{"helping": (k, 500.0)}], rt=[(200.0, 500.0)])
        one = bar_rows(data)["lateness p99.9 < Linux PREEMPT_RT's [tcg]"]
        assert one.verdict == "NOT MEASURABLE HERE" and "one run" in one.note


def test_cost_bar_decides_on_the_spreads():
    # medians 11 <= 2 x 6 = 12, but one boot's min..p99 (10..13) overlaps 2 x (5.8..6.2)
    data = make(hosted_costs=[cost("counter, CAS", 6.0, lo=5.8, hi=6.2),
                              cost(AR, 11.0, lo=10.0, hi=13.0),
                              cost(SWITCH, 200.0, "lockfree"), cost(SERVER, 390.0, "lockfree")])
    b = bar_rows(data)["helping lock acquire+release <= 2 x CAS [hosted]"]
    assert b.verdict == "WITHIN NOISE" and b.measured == "11.00 (10.00..13.00) TSC ticks"
    assert b.limit == "2 x 6.00 = 12.00 (11.60..12.40)"
    assert b.verdict in fr.BAR_VERDICTS


def test_censored_linux_percentile_is_not_compared():
    """cyclictest's p99.9 among the samples past its histogram is a lower bound: shown with
    ≥, and no verdict compares it as a figure (the old report said NOT MET / reversed:
    ksync's 3000 µs against a censored 2000)."""
    data = make(tcg_lat=tcg_boots(helping=(3000.0, 5000.0)),
                rt=[(2000.0, 9000.0), (2000.0, 9500.0), (2000.0, 9900.0)])
    for x in data["linux"]:
        x.update(p999_overflow=True, p99_us=2000, p99_overflow=True, overflows=20,
                 hist_us={"8": 15980})
    b = bar_rows(data)
    p = b["lateness p99.9 < Linux PREEMPT_RT's [tcg]"]
    assert p.verdict == "NOT MEASURABLE HERE"
    assert p.limit.startswith("Linux PREEMPT_RT ≥2000")
    assert "p99.9 is censored" in p.note and "only ≥ 2000 µs is known" in p.note
    f = finding(data, "Linux PREEMPT_RT cyclictest", env="tcg")
    assert f.verdict == "not measurable here" and "censored" in f.note
    assert "(a lower bound)" in f.today
    # cyclictest's max is exact: that bar still decides (5002 vs 9000..9900)
    assert b["lateness max < Linux PREEMPT_RT's [tcg]"].verdict == "MET"
    rows = rows_by_key(table(fr.fiasco_tables(data), "t1"))
    assert rows["tcg: Linux PREEMPT_RT cyclictest"]["p99.9 (µs)"].startswith("≥2000")
    assert "lower bound" in rows["tcg: Linux PREEMPT_RT cyclictest"]["note"]


def test_side_that_lost_most_periods_gets_no_verdict():
    # the reviewed tcg run: ksync 24831 of 40000 periods lost; here 5000 of 8000 per boot
    boots = [{"helping": (100.0 + i, 300.0 + i)} for i in range(3)]
    data = make(tcg_lat=boots, rt=[(900.0, 2900.0), (910.0, 3000.0), (920.0, 3100.0)])
    for r in data["runs"]:
        for x in r["rows"]:
            x.update(samples=3000, hist=[[20, 3000]])
    b = bar_rows(data)
    for key in ("lateness p99.9 < Linux PREEMPT_RT's [tcg]",
                "lateness max < Linux PREEMPT_RT's [tcg]"):
        assert b[key].verdict == "NOT MEASURABLE HERE", b[key]   # medians alone said MET
        assert "ksync lost 15000 of 24000 periods (62 %)" in b[key].note
        assert "ksync lost 62 % of its periods, more than the" in b[key].note
    f = finding(data, "Linux PREEMPT_RT cyclictest", env="tcg")
    assert f.verdict == "not measurable here" and "ksync lost 15000" in f.note
    # Linux's side: 4000 of its 16000 periods (2 threads x 2 s / 250 µs) per run
    data = make(tcg_lat=tcg_boots(helping=(100.0, 300.0)),
                rt=[(900.0, 2900.0), (910.0, 3000.0), (920.0, 3100.0)])
    for x in data["linux"]:
        x.update(samples=4000, per_thread={"samples": [2000, 2000]})
    p = bar_rows(data)["lateness p99.9 < Linux PREEMPT_RT's [tcg]"]
    assert p.verdict == "NOT MEASURABLE HERE"
    assert "Linux 36000 of 48000 periods (75 %)" in p.note
    assert "Linux lost 75 % of its periods, more than the p99.9's limit (0.10 %)" in p.note
    t1 = rows_by_key(table(fr.fiasco_tables(data), "t1"))
    lx = t1["tcg: Linux PREEMPT_RT cyclictest"]
    assert lx["skipped"] == "36000" and lx["lost / expected"] == "36000 / 48000 (75 %)"
    assert t1["tcg: ksync helping"]["lost / expected"] == "0 / 24000 (0.00 %)"


def test_lost_limits_per_figure():
    """The limit is the figure's own tail: 0.1 % of the periods for p99.9, 1 % for the max."""
    def verdicts(lost):
        data = make(tcg_lat=[{"helping": (100.0, 300.0)}] * 2, rt=[(900.0, 2900.0)] * 2)
        for r in data["runs"]:          # both boots lost the same periods
            if r["env"] == "tcg":
                r["rows"][0].update(samples=8000 - lost, hist=[[20, 8000 - lost]])
        b = bar_rows(data)
        return (b["lateness p99.9 < Linux PREEMPT_RT's [tcg]"].verdict,
                b["lateness max < Linux PREEMPT_RT's [tcg]"].verdict)
    assert verdicts(8) == ("MET", "MET")                      # 0.1 %: at the limit
    assert verdicts(9) == ("NOT MEASURABLE HERE", "MET")      # past p99.9's, not the max's
    assert verdicts(81) == ("NOT MEASURABLE HERE", "NOT MEASURABLE HERE")
    assert fr.LOST_LIMIT["p999"] == 0.001 and fr.LOST_LIMIT["max"] == 0.01


def test_linux_periods_from_duration_and_interval():
    x = {"seconds": 2, "interval_us": 250, "threads": 2, "samples": 15900,
         "per_thread": {"samples": [8000, 7900]}}
    assert fr.linux_periods(x) == (16000, 100)
    x["per_thread"] = {"samples": [8003, 7897]}       # a thread's surplus hides no loss
    assert fr.linux_periods(x) == (16000, 103)
    del x["per_thread"]
    assert fr.linux_periods(x) == (16000, 100)
    assert fr.linux_periods({"threads": 1, "samples": 10}, {"seconds": 1}) == (4000, 3990)
    assert fr.linux_periods({"threads": 1, "samples": 10}) == (None, None)
    # the reviewed run: PREEMPT_RT under tcg, 4216 samples of 16000 periods
    real = fr.load_fiasco(FIXTURES / "fiasco_small.json")
    rt0 = next(x for x in real["linux"] if x["env"] == "tcg" and x["flavour"] == "rt")
    assert fr.linux_periods(rt0) == (16000, 16000 - 4216)


def test_icount_bound_not_met_is_reachable():
    """The measured-path bound: window + isr.S + idle entry + this run's own path_max; a
    max past it (a delivery later than the tracked windows allow) is NOT MET."""
    def icount_rec(mx, irq_max):
        rows = [dict(lat(c, 20.0, m), win_max=20.0, win_windows=100, path_max=23.0,
                     irq_min=5.0, irq_max=i, win_open="0x1", win_close="0x2")
                for c, m, i in (("noload", 26.0, 5.5), ("helping", mx, irq_max))]
        return rec("tcg-icount", 0, rows)
    data = make()
    data["plan"]["icount_shift"] = 4
    data["runs"] = [icount_rec(28.8, 5.5)]
    b = {x.where: x for x in fr.bars(data) if x.bar == fr.BOUND_BAR}
    ok = b["helping"]
    assert ok.verdict == "MET" and ok.limit == "bound 48.7 µs"      # 20 + 0.72 + 5 + 23
    assert "measured wakeup/switch path (path_max) 23" in ok.note
    assert "irq_max 5.5 µs vs 25.7" in ok.note
    data["runs"] = [icount_rec(80.0, 57.0)]         # delivered 57 µs late: past the windows
    bad = {x.where: x for x in fr.bars(data) if x.bar == fr.BOUND_BAR}["helping"]
    assert bad.verdict == "NOT MET" and bad.measured == "max 80 µs"
    assert fr.BOUND_BAR == "icount max <= measured-path bound"


def test_every_linux_comparison_says_kernel_thread_vs_user_process(synth):
    data = fr.load_fiasco(FIXTURES / "fiasco_small.json")
    for d in (synth, data):
        lb = [b for b in fr.bars(d) if b.bar.startswith("lateness ") and b.verdict != "NO DATA"]
        assert lb and all(fr.ASYM in b.note for b in lb), lb
        lf = [f for f in fr.fiasco_findings(d) if "real-time kernel's" in f.claim]
        assert lf and all("kernel thread" in f.note and "user process" in f.note for f in lf)
    t = table(fr.fiasco_tables(synth), "bars")
    assert any("kernel thread" in n for n in t.notes_above)
    assert any("kernel thread" in n for n in table(fr.fiasco_tables(synth), "t1").notes_above)


def test_the_reviewed_tcg_run_has_no_lateness_verdict():
    """tests/fixtures/fiasco_small.json (make run, 2-core Intel Xeon): under tcg ksync lost
    24831 of 40000 periods and Linux's p99.9 was censored at 2000 µs; its -icount pair was one
    boot a side, so that cannot decide either."""
    data = fr.load_fiasco(FIXTURES / "fiasco_small.json")
    b = bar_rows(data)
    for words in ("p99.9", "max"):
        tcg = b[f"lateness {words} < Linux PREEMPT_RT's [tcg]"]
        assert tcg.verdict == "NOT MEASURABLE HERE" and "ksync lost 24831 of" in tcg.note
        # -icount decided on one boot a side before; one run has no spread: no verdict
        ic = b[f"lateness {words} < Linux PREEMPT_RT's [tcg-icount]"]
        assert ic.verdict == "NOT MEASURABLE HERE" and "one run" in ic.note
    assert "censored" in b["lateness p99.9 < Linux PREEMPT_RT's [tcg]"].note
    assert finding(data, "Linux PREEMPT_RT cyclictest", env="tcg (").verdict == \
        "not measurable here"
    f_ic = finding(data, "Linux PREEMPT_RT cyclictest", env="tcg-icount")
    assert f_ic.verdict == "not measurable here" and "one run" in f_ic.note
    t1 = rows_by_key(table(fr.fiasco_tables(data), "t1"))
    assert t1["tcg: ksync helping"]["lost / expected"] == "24831 / 40000 (62 %)"
    assert t1["tcg: Linux PREEMPT_RT cyclictest"]["lost / expected"] == "62197 / 80000 (78 %)"


def test_average_lateness_finding():
    """§5.1's "average lateness below 1 µs": a line in every report; only bare metal
    decides it, and the mean comes from ksync's histogram (lower..upper bucket edges)."""
    data = make(tcg_lat=tcg_boots(), rt=[(500.0, 900.0)] * 3)
    f = finding(data, "average lateness")
    assert f.verdict == "not measurable here" and "under tcg" in f.note
    assert f.today.startswith("mean lateness tcg: ksync 20.5 µs (20..21)")   # bucket [20, 21)
    assert "Linux PREEMPT_RT cyclictest 9 µs" in f.today and "kernel thread" in f.note
    # bare metal decides: on the kernel's exact mean, else on the range the histogram
    # allows (a sample in bucket [0, 1) may be 0.99 µs: never "holds" from buckets alone)
    for bucket, mean, verdict in ((0, 0.4, "holds"), (0, None, "within noise"),
                                  (20, None, "reversed"), (1, 1.2, "reversed")):
        d = make(tcg_lat=tcg_boots(), rt=[(500.0, 900.0)])
        for r in d["runs"]:
            r["env"] = "bare-metal"
            for x in r["rows"]:
                x["hist"] = [[bucket, x["samples"]]]
                if mean is not None:
                    x["mean"] = mean
        f = finding(d, "average lateness")
        assert f.verdict == verdict, (bucket, mean, f)
        assert f.env.startswith("bare-metal")
    real = finding(fr.load_fiasco(FIXTURES / "fiasco_small.json"), "average lateness")
    assert real.verdict == "not measurable here"
    assert "hosted: ksync" in real.today and "tcg-icount: ksync" in real.today
    assert "POSIX timer signal" in real.note and "instruction" in real.note


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
    """The whole render path once: document.render_results_doc with fiasco= only."""
    out = tmp_path_factory.mktemp("fiasco-report")
    written, doc = document.render_results_doc(out, fiasco=synth)
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
    assert md.index("## Findings") < md.index("</a>" + fr.TITLES["t2"])
    assert doc.title == document.TITLE and [c.title for c in doc.chapters] == [
        "1. Hohmuth & Härtig 2001: helping locks and real-time lateness"]
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
    written, doc = document.render_results_doc(tmp_path, strict=True)
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
    # every table fits a terminal as column groups (the bars' long notes go below)
    for t in tables:
        assert "shown as one record per row" not in report.render_table_text(t), t.title
