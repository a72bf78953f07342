"""ksync.report: table rendering from a canned prims.json."""
import json

import pytest

from ksync import peers
from ksync import report


def row(side, name, median, env, **kw):
    r = {"kind": "prim", "name": name, "detail": "", "unit": "tsc_ticks", "batches": 200,
         "ops_per_batch": 256, "min": median / 2, "median": median, "p99": median * 2,
         "max": median * 4, "empty": 1.0, "side": side, "env": env}
    r.update(kw)
    return r


@pytest.fixture
def data():
    kernel = [row("kernel", "cli_sti", 40.0, "tcg"),
              row("kernel", "pushf_cli_popf", 55.25, "tcg"),
              row("kernel", "pic_imr_write_restore", 580.0, "tcg"),
              row("kernel", "lapic_tpr_write", 1234.0, "tcg", detail="x2apic-msr"),
              row("kernel", "flag_set_clear", 8.0, "tcg"),
              row("kernel", "lock_cmpxchg", 20.0, "tcg")]
    hosted = [row("hosted", "flag_set_clear", 0.0, "hosted"),
              row("hosted", "pushf_popf", 12.5, "hosted"),
              row("hosted", "mfence", 33.0, "hosted")]
    return {
        "schema": report.SCHEMA, "timestamp": "2025-01-01T00:00:00Z", "commit": "abc123def456",
        "host_cpu_model": "Intel(R) Xeon(R) Processor @ 2.80GHz", "host_cpus": 2,
        "qemu_version": "7.2.22",
        "sides": {
            "kernel": {"env": "tcg", "cpus": 2, "cpu_model": "Intel(R) Xeon(R) Processor @ 2.80GHz",
                       "tsc_hz": 2596000000, "tsc_source": "pit"},
            "hosted": {"env": "hosted", "cpus": 2,
                       "cpu_model": "Intel(R) Xeon(R) Processor @ 2.80GHz",
                       "tsc_hz": 2800000000, "tsc_source": "cpu model name (nominal)"},
        },
        "rows": kernel + hosted,
    }


def table_rows(doc, title):
    t = next(t for t in doc.tables if t.title == title)
    return t, {r[0].split("  (")[0]: r for r in t.rows}


def test_row_order_and_cells(data):
    doc = report.prims_document(data)
    t, rows = table_rows(doc, "Primitive costs")
    labels = [r[0] for r in t.rows]
    assert labels == ["cli_sti", "pushf; cli; popf  (hosted: pushf; popf)",
                      "cr8_raise_restore", "pic_imr_write_restore", "ioapic_mask_unmask",
                      "lapic_tpr_write (x2apic-msr)", "flag_set_clear", "lock_cmpxchg",
                      "lock_xadd", "cmpxchg16b", "mfence"]
    assert t.headers[1] == "kernel [tcg, 2 CPUs]"
    assert t.headers[2] == "hosted [hosted, 2 CPUs]"
    assert t.headers[3] == "1997 Table 5 (cycles)"
    by = {r[0]: r for r in t.rows}
    assert by["cli_sti"][1] == "20.00 / 40.00 / 80.00"
    assert by["cli_sti"][2] == report.DASH
    assert by["cli_sti"][3].startswith("21")
    assert by["pic_imr_write_restore"][1] == "290.0 / 580.0 / 1160"
    assert by["pic_imr_write_restore"][3].startswith("304")
    assert by["flag_set_clear"][3].startswith("6")
    assert by["pushf; cli; popf  (hosted: pushf; popf)"][2] == "6.25 / 12.50 / 25.00"
    assert by["lapic_tpr_write (x2apic-msr)"][1] == "617.0 / 1234 / 2468"
    assert by["mfence"][1] == report.DASH and by["mfence"][2] == "16.50 / 33.00 / 66.00"
    assert by["cr8_raise_restore"][1] == report.DASH
    assert by["lock_cmpxchg"][3] == ""


def test_env_lines(data):
    doc = report.prims_document(data)
    t = doc.tables[0]
    text = " ".join(" ".join(t.notes_above).split())     # wrapping-independent
    assert "kernel figures are QEMU TCG emulator costs, not hardware costs" in text
    assert "TSC ticks" in text
    assert "2.596 GHz" in text and "2.800 GHz" in text


def test_no_tcg_warning_for_kvm(data):
    data["sides"]["kernel"]["env"] = "kvm"
    text = " ".join(" ".join(report.prims_document(data).tables[0].notes_above).split())
    assert "emulator costs" not in text


def test_ratios(data):
    doc = report.prims_document(data)
    t = next(t for t in doc.tables if t.title == "Ratios of medians")
    off_on, on_flag = t.rows
    assert off_on[1] == "14.5"          # 580 / 40
    assert off_on[2] == "n/a"
    assert any("user mode cannot reach the interrupt controller" in n for n in t.notes_below)
    assert off_on[3] == "14.5"          # 304 / 21
    assert on_flag[1] == "5"            # 40 / 8
    assert on_flag[2] == report.DASH    # hosted flag median is 0
    assert on_flag[3] == "3.5"          # 21 / 6
    assert any("median is 0" in n and "hosted" in n for n in t.notes_below)


def test_ratio_missing_row(data):
    data["rows"] = [r for r in data["rows"] if r["name"] != "cli_sti"]
    t = report.prims_document(data).tables[1]
    assert t.rows[0][1] == report.DASH and t.rows[1][1] == report.DASH
    assert any("no cli_sti row" in n for n in t.notes_below)


def test_unknown_rows_kept(data):
    data["rows"].append(row("kernel", "wbinvd", 5000.0, "tcg"))
    labels = [r[0] for r in report.prims_document(data).tables[0].rows]
    assert labels[-1] == "wbinvd"


def test_format_numbers():
    assert report.fmt_ticks(1.234) == "1.23"
    assert report.fmt_ticks(99.994) == "99.99"
    assert report.fmt_ticks(123.45) == "123.5"
    assert report.fmt_ticks(1234.4) == "1234"
    assert report.fmt_ticks(None) == "?"
    assert report.fmt_ratio(304 / 21) == "14.5"
    assert report.fmt_ratio(21 / 6) == "3.5"
    assert report.fmt_ratio(2.0) == "2"


def test_renderers(data, tmp_path):
    doc = report.prims_document(data)
    text = report.render_text(doc)
    assert "Primitive costs" in text and "Ratios of medians" in text
    # the table's header line (or the first of its column groups) starts with the key column
    header = next(l for l in text.splitlines() if l.startswith("primitive "))
    assert "kernel [tcg, 2 CPUs]" in header
    md = report.render_markdown(doc)
    assert md.startswith("# ksync primitive costs")
    assert "| primitive | kernel [tcg, 2 CPUs] |" in md
    assert "- **commit**: abc123def456" in md
    html = report.render_html(doc)
    assert "<table>" in html and "</html>" in html and "<style>" in html
    written = report.write_reports(data, tmp_path)
    assert [p.name for p in written] == ["prims.json", "report.md", "report.html"]
    assert json.loads((tmp_path / "prims.json").read_text()) == data
    assert report.load_prims(tmp_path / "prims.json") == data


def test_general_table_builder():
    cols = [report.ColumnSpec("name", lambda x: x[0], "l"),
            report.ColumnSpec("value", lambda x: f"{x[1]:.1f}")]
    t = report.build_table("Demo", [("a|b", 1.0), ("c", 22.5)], cols, notes_below=["note"])
    doc = report.Document("Demo doc", tables=[t])
    assert "a\\|b" in report.render_markdown(doc)
    text = report.render_text(doc)
    assert " 1.0" in text and "22.5" in text and "note" in text
    assert "<td class=\"r\">22.5</td>" in report.render_html(doc)


def test_make_prims_data_records():
    meta = {"timestamp": "t", "commit": "c", "host_cpu_model": "m", "host_cpus": 4,
            "qemu_version": "q"}
    d = report.make_prims_data([{"kind": "prim", "name": "cli_sti", "median": 1}], [],
                               {"env": "tcg", "cpus": 2, "tsc_hz": 5}, None, meta)
    r = d["rows"][0]
    assert (r["side"], r["env"], r["cpus"], r["host_cpu_model"], r["tsc_hz"], r["commit"],
            r["qemu_version"], r["timestamp"]) == ("kernel", "tcg", 2, "m", 5, "c", "q", "t")
    assert "hosted" not in d["sides"]
    text = " ".join(report.render_text(report.prims_document(d)).split())
    assert "hosted: not run" in text


def test_middle_run_rows_picks_middle_median_and_keeps_spread():
    runs = [
        [{"name": "a", "median": 5.0, "min": 1}, {"name": "b", "median": 1.0}],
        [{"name": "a", "median": 9.0, "min": 2}, {"name": "b", "median": 3.0}],
        [{"name": "a", "median": 7.0, "min": 3}, {"name": "b", "median": 2.0}],
    ]
    rows = {r["name"]: r for r in report.middle_run_rows(runs)}
    assert rows["a"]["median"] == 7.0 and rows["a"]["min"] == 3
    assert rows["a"]["run_medians"] == [5.0, 9.0, 7.0]
    assert rows["b"]["median"] == 2.0
    # even count: the lower middle
    two = report.middle_run_rows(runs[:2])
    assert {r["name"]: r["median"] for r in two} == {"a": 5.0, "b": 1.0}


def test_spread_table_rendered_when_runs_recorded(data):
    for r in data["rows"]:
        r["run_medians"] = [r["median"], r["median"] + 1]
    doc = report.prims_document(data)
    t = next(t for t in doc.tables if t.title == "Run-to-run spread of the medians")
    by = {r[0]: r for r in t.rows}
    assert by["cli_sti"][1].endswith("(2 runs)")
    assert "mfence" in by and by["mfence"][1] == "—"


def test_cmp_table_ratios():
    """peers.cmp_table is an alias of peers.cmp_table (tests/test_tool_peers.py has the
    rest): the ratio to the better peer (> 1: libksync faster), a dash without a peer."""
    rows = [
        {"kind": "cmp", "structure": "stack", "impl": "ksync", "metric": "latency", "threads": 1, "median": 40.0},
        {"kind": "cmp", "structure": "stack", "impl": "ck", "metric": "latency", "threads": 1, "median": 60.0},
        {"kind": "cmp", "structure": "stack", "impl": "urcu", "metric": "latency", "threads": 1, "median": 50.0},
        {"kind": "cmp", "structure": "stack", "impl": "ksync", "metric": "throughput", "threads": 2, "median": 30.0},
        {"kind": "cmp", "structure": "stack", "impl": "ck", "metric": "throughput", "threads": 2, "median": 20.0},
        {"kind": "cmp", "structure": "mpmc", "impl": "ksync", "metric": "throughput", "threads": 2, "median": 5.0},
    ]
    t = peers.cmp_table(rows, {"cpu_model": "X"})
    ours = {(r[0], r[1]): r for r in t.rows if r[3] == "libksync"}
    # latency: better peer is urcu (50); 50/40 = 1.25; no run values: no spread, no verdict
    assert ours[("stack", "latency")][-2:] == ["1.25 vs urcu", "no spread"]
    # throughput: 30/20 = 1.5 vs ck
    assert ours[("stack", "throughput")][-2] == "1.5 vs ck"
    # no peer measured: no ratio
    assert ours[("mpmc", "throughput")][-2:] == ["—", "—"]


def test_mwcas_table_pairs_the_runs():
    """Issue 13 item 3: one row per k; the GKMZ / HFP ratio is taken per run (the two ran
    interleaved in each) and its median and range shown, not a ratio of two rows that the
    middle-run choice may have taken from different runs."""
    def row(name, meds):
        return {"kind": "prim", "name": name, "median": sorted(meds)[(len(meds) - 1) // 2],
                "run_medians": meds}
    hidx = {}
    for k in (1, 2):
        hidx[f"mwcas_soft_k{k}"] = row(f"mwcas_soft_k{k}", [100.0 * k, 200.0 * k, 110.0 * k])
        hidx[f"mwcas_gkmz_k{k}"] = row(f"mwcas_gkmz_k{k}", [90.0 * k, 100.0 * k, 99.0 * k])
        hidx[f"mwcas_read_soft_k{k}"] = row(f"mwcas_read_soft_k{k}", [5.0, 6.0, 7.0])
    t = report.mwcas_table(hidx, {})
    assert [r[0] for r in t.rows] == ["1", "2"]
    # per-run ratios 0.9, 0.5, 0.9: median 0.9, range 0.5..0.9
    assert t.rows[0][3] == "0.9 (0.5..0.9)"
    assert t.rows[0][1] == "110.0 (100.0..200.0)"
    assert t.rows[0][5] == report.DASH      # no GKMZ read row: a dash, not a gap
    assert report.mwcas_table({"other": row("x", [1.0])}, {}) is None


def test_cost_table_shows_the_array_stack_the_locked_and_the_two_thread_rows(data):
    """The Massalin & Pu cost table: the array stack beside the Treiber stack, the rows
    under a lock on each side (kernel: master lock; hosted: spin lock, mutex) and the
    two-thread rows, each in its side's column."""
    data["rows"] += [
        row("kernel", "mp_stack_push_pop_lf", 450.0, "tcg"),
        row("kernel", "mp_astack_push_pop_lf", 700.0, "tcg"),
        row("kernel", "mp_stack_push_pop_mlock", 500.0, "tcg"),
        row("hosted", "mp_stack_push_pop_lf", 25.3, "hosted"),
        row("hosted", "mp_astack_push_pop_nosync", 2.1, "hosted"),
        row("hosted", "mp_astack_push_pop_lf", 40.1, "hosted"),
        row("hosted", "mp_astack_push_pop_retry1", 193.0, "hosted"),
        row("hosted", "mp_stack_push_pop_spin", 10.6, "hosted"),
        row("hosted", "mp_stack_push_pop_mutex", 26.5, "hosted"),
        row("hosted", "mp_stack_push_pop_lf_2t", 168.0, "hosted"),
    ]
    t = next(t for t in report.prims_tables(data) if t.title.startswith("Massalin & Pu cost"))
    cells = {r[0]: r[2:] for r in t.rows}
    t_ = report.fmt_ticks
    assert cells["mp_astack_push_pop_lf"] == [t_(700.0), t_(40.1)]
    assert cells["mp_stack_push_pop_mlock"] == [t_(500.0), report.DASH]
    assert cells["mp_stack_push_pop_spin"] == [report.DASH, t_(10.6)]
    assert cells["mp_stack_push_pop_mutex"] == [report.DASH, t_(26.5)]
    assert cells["mp_stack_push_pop_lf_2t"] == [report.DASH, t_(168.0)]
    assert cells["mp_astack_push_pop_retry1"] == [report.DASH, t_(193.0)]
    notes = " ".join(t.notes_above)
    for suffix in ("_spin", "_mutex", "_mlock", "_2t", "mp_astack"):
        assert suffix in notes
