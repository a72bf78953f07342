"""ksync.pireport: the priority-inversion table, its findings (helping lock vs monitor, one
CPU and two) and its figure, from made-up pi_wait rows of kernel/exp/pi.c."""
import copy

from ksync import hosteddata
from ksync import document
from ksync import hostedreport, irqreport, pireport, report
from ksync.document import all_findings

HZ = 2_000_000_000     # 2000 ticks per µs
META = {"timestamp": "2026-01-01T00:00:00Z", "commit": "abc123", "host_cpu_model": "AMD EPYC",
        "host_cpus": 2, "qemu_version": "7.2.22"}


def pi_row(case, lock, waits_us, done=None, missed=0, cpus=2):
    waits = [round(w * HZ / 1e6) for w in waits_us]
    s = sorted(waits)
    return {"kind": "pi_wait", "case": case, "lock": lock, "sched": "lockfree",
            "scheme": "spl-optim", "cpus": cpus, "unit": "tsc_ticks", "tsc_hz": HZ,
            "section_us": 100, "medium_us": 1000, "section_ticks": 100 * 2000,
            "medium_ticks": 1000 * 2000, "n": len(s), "min": s[0], "median": s[len(s) // 2],
            "p99": s[-1], "max": s[-1], "missed": missed, "waits": waits,
            "medium_done_pct": done if done is not None else
            [0 if lock == "helping" else 100] * len(s)}


def pi_rows(cpus=2, help2=(105, 110, 120, 400), mon2=(900, 1100, 1200, 1300)):
    rows = [pi_row("1cpu", "helping", (101, 102, 103, 180), cpus=cpus),
            pi_row("1cpu", "monitor", (1100, 1105, 1110, 1300), cpus=cpus)]
    if cpus >= 2:
        rows += [pi_row("2cpu", "helping", help2, missed=1),
                 pi_row("2cpu", "monitor", mon2)]
    return rows


def hosted_data(rows=None, oversubscribed=False, cpus=2):
    rec = hosteddata.run_record("spl-optim", cpus, host_cores=1 if oversubscribed else 2)
    rec.update(status="ok", boot={"kind": "boot", "tsc_hz": HZ}, sched="SCHED_FIFO",
               cpu_model="AMD EPYC", tsc_hz=HZ,
               rows=rows if rows is not None else pi_rows(cpus=cpus))
    return hosteddata.make_hosted_data([rec], [], META)


def prims_data(rows):
    data = report.make_prims_data([], [], {"env": "tcg", "cpus": 2, "tsc_hz": HZ}, None, META)
    data["sched"] = {"status": "ok", "reason": None, "log": "build/logs/x.log",
                     "side": {"env": "tcg", "cpus": 2, "cpu_model": "AMD EPYC", "tsc_hz": HZ},
                     "rows": rows}
    return data


def findings(prims=None, hosted=None):
    return {f.claim.rsplit(" - ", 1)[1].split(" (")[0]: f
            for f in pireport.pi_findings(prims, hosted)}


def test_table_rows_in_microseconds_with_medium_done_and_missed():
    [t] = pireport.pi_tables(None, hosted_data())
    assert t.title == pireport.TITLE
    assert t.headers == ["environment", "case", "lock", "high's wait", "medium done", "trials"]
    hl, mon = "helping lock (inheritance by helping)", "monitor (no inheritance)"
    assert [r[1:3] for r in t.rows] == [["one CPU", hl], ["one CPU", mon],
                                        ["two CPUs", hl], ["two CPUs", mon]]
    # ticks -> µs at the row's TSC rate: median (min..max)
    assert t.rows[0][3] == "103 (101..180) µs"
    assert t.rows[1][3] == "1110 (1100..1300) µs"
    assert t.rows[0][4].startswith("0 %") and t.rows[1][4].startswith("100 %")
    assert t.rows[2][5] == "4 (1 missed)" and t.rows[3][5] == "4"
    notes = " ".join(t.notes_above)
    assert "low's section 100 µs" in notes and "medium thread's run 1000 µs" in notes


def test_findings_holds_when_apart_within_noise_when_overlapping():
    # one CPU: helping 101..180 µs, monitor 1100..1300 µs: apart -> holds
    # two CPUs: helping 105..400, monitor 300..1300: overlap -> within noise
    f = findings(hosted=hosted_data(pi_rows(mon2=(300, 1100, 1200, 1300))))
    assert f["one CPU"].verdict == "holds"
    assert f["one CPU"].paper == "Hohmuth & Härtig 2001"
    assert "helping 103 (101..180) µs vs monitor 1110 (1100..1300) µs" in f["one CPU"].today
    assert f["two CPUs"].verdict == "within noise"
    assert "medium thread's run 1000 µs" in f["one CPU"].note


def test_findings_reversed_when_helping_waits_longer():
    f = findings(hosted=hosted_data(pi_rows(help2=(2000, 2100, 2200), mon2=(900, 1000))))
    assert f["two CPUs"].verdict == "reversed"


def test_missing_data_not_measurable():
    # one CPU run: no 2cpu rows -> the two-CPU finding is not measurable here
    f = findings(hosted=hosted_data(cpus=1))
    assert f["one CPU"].verdict == "holds"
    assert f["two CPUs"].verdict == "not measurable here"
    assert "one CPU" in f["two CPUs"].note
    # a monitor row with no timed trial (every trial missed): not measurable
    rows = pi_rows()
    rows[1] = {"kind": "pi_wait", "case": "1cpu", "lock": "monitor", "cpus": 2, "n": 0,
               "missed": 15, "skipped": "no trial timed an inversion"}
    f = findings(hosted=hosted_data(rows))
    assert f["one CPU"].verdict == "not measurable here"
    [t] = pireport.pi_tables(None, hosted_data(rows))
    assert t.rows[1][3] == "skipped: no trial timed an inversion"
    # no pi rows at all: no table, no finding
    assert pireport.pi_tables(None, hosted_data(rows=[])) == []
    assert pireport.pi_findings(None, hosted_data(rows=[])) == []


def test_oversubscribed_never_a_timing():
    h = hosted_data(oversubscribed=True)
    f = findings(hosted=h)
    assert {x.verdict for x in f.values()} == {"not measurable here"}
    [t] = pireport.pi_tables(None, h)
    assert {r[3] for r in t.rows} == {pireport.NOT_TIMING}


def test_tcg_rows_labelled_emulator_and_hosted_decides():
    tcg = [dict(r, tsc_hz=HZ) for r in pi_rows(mon2=(300, 1100, 1200, 1300))]
    [t] = pireport.pi_tables(prims_data(tcg), hosted_data())
    assert [r[0] for r in t.rows] == ["hosted"] * 4 + ["tcg"] * 4
    assert pireport.TCG_NOTE in t.notes_above
    # hosted has both rows: it decides (two CPUs apart there, overlapping under tcg)
    f = findings(prims_data(tcg), hosted_data())
    assert f["two CPUs"].env.startswith("hosted") and f["two CPUs"].verdict == "holds"
    # tcg alone: verdict computed from its rows, the note says they are the emulator's
    f = findings(prims_data(tcg), None)
    assert f["two CPUs"].env.startswith("tcg") and f["two CPUs"].verdict == "within noise"
    assert "emulator" in f["two CPUs"].note


def test_whole_report_with_figure_and_finding(tmp_path):
    hosted = hosted_data()
    files, doc = document.render_results_doc(tmp_path, hosted=copy.deepcopy(hosted))
    assert (tmp_path / "pi-wait.png").stat().st_size > 0
    assert (tmp_path / "pi-wait.svg").exists()
    t = next(t for t in doc.tables if t.title == pireport.TITLE)
    assert any(img.src == "pi-wait.png" for img in t.images)
    claims = [f.claim for f in all_findings(None, None, hosted)]
    assert sum("priority inheritance" in c for c in claims) == 2
    md = (tmp_path / "report.md").read_text()
    assert pireport.TITLE in md


def test_two_cpu_finding_says_what_it_measures():
    f = findings(hosted=hosted_data())
    assert "remote donation" in f["two CPUs"].note and "bound to CPU 1" in f["two CPUs"].note
    assert "remote donation" not in f["one CPU"].note
