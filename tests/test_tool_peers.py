"""The peer comparison (bench/cmp_peers.c, tools/ksync/peers.py): verdicts computed from
the spreads, the tables, the findings, the figures, and the rows the benchmark prints."""
import os
import json
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from ksync import document
from ksync import base
from ksync import cli, peers, report

ROOT = Path(__file__).resolve().parent.parent
CMP = ROOT / "build" / "hosted" / "bench" / "cmp_peers"


def row(structure, impl, metric, values, threads=None, **extra):
    """A cmp row as the benchmark prints it, from its run values."""
    r = {"kind": "cmp", "structure": structure, "impl": impl, "metric": metric,
         "unit": "tsc_ticks" if metric == "latency" else "Mpairs/s",
         "threads": threads or 1, "runs": len(values), "run_ms": 200, "min_cpu_share": 0.5,
         "values": list(values), "median": statistics.median(values),
         "lo": min(values), "hi": max(values), "spread": "min..max"}
    r.update(extra)
    return r


def comparison(rows, structure, metric, threads=1, impl="ksync"):
    return next(c for c in peers.comparisons(rows)
                if (c.ours.structure, c.ours.metric, c.ours.threads, c.ours.impl)
                == (structure, metric, threads, impl))


def test_overlapping_spreads_are_within_noise():
    rows = [row("stack", "ksync", "latency", [40, 42, 44, 41, 43]),
            row("stack", "ck", "latency", [43, 45, 47, 44, 46]),   # 43..47 meets 40..44
            row("stack", "urcu", "latency", [60, 61, 62, 63, 64])]
    c = comparison(rows, "stack", "latency")
    assert c.verdict == peers.WITHIN_NOISE
    assert c.peer.impl == "ck"                       # the better median among the peers
    assert c.ratio == pytest.approx(45 / 42)         # > 1: libksync faster
    assert c.ratio_lo == pytest.approx(43 / 44) and c.ratio_hi == pytest.approx(47 / 40)
    assert c.ratio_lo <= 1 <= c.ratio_hi


def test_clear_win_latency_and_throughput_orientation():
    rows = [row("stack", "ksync", "latency", [20, 21, 22, 21, 20]),
            row("stack", "ck", "latency", [30, 31, 32, 31, 30]),
            row("stack", "urcu", "latency", [40, 40, 40, 40, 40]),
            row("mpmc", "ksync", "throughput", [50, 52, 51, 53, 50], threads=2),
            row("mpmc", "ck", "throughput", [30, 31, 32, 31, 30], threads=2),
            row("mpmc", "urcu", "throughput", [10, 11, 12, 11, 10], threads=2)]
    lat = comparison(rows, "stack", "latency")
    assert lat.verdict == peers.OURS_BETTER and lat.peer.impl == "ck"
    assert lat.ratio == pytest.approx(31 / 21) and lat.ratio_lo > 1
    tput = comparison(rows, "mpmc", "throughput", threads=2)
    assert tput.verdict == peers.OURS_BETTER and tput.peer.impl == "ck"
    assert tput.ratio == pytest.approx(51 / 31)
    assert tput.ratio_lo == pytest.approx(50 / 32) and tput.ratio_hi == pytest.approx(53 / 30)


def test_clear_loss():
    rows = [row("mpmc", "ksync", "throughput", [10, 11, 12, 11, 10], threads=1),
            row("mpmc", "ksync-nobackoff", "throughput", [9, 9, 9, 9, 9], threads=1),
            row("mpmc", "ck", "throughput", [30, 31, 32, 31, 30], threads=1),
            row("mpmc", "urcu", "throughput", [20, 21, 22, 21, 20], threads=1)]
    c = comparison(rows, "mpmc", "throughput")
    assert c.verdict == peers.PEER_BETTER and c.peer.impl == "ck"
    assert c.ratio < 1 and c.ratio_hi < 1
    nb = comparison(rows, "mpmc", "throughput", impl="ksync-nobackoff")
    assert nb.verdict == peers.PEER_BETTER and nb.ratio == pytest.approx(9 / 31)


def test_missing_peer_and_missing_spread():
    rows = [row("spsc", "ksync", "throughput", [5, 6, 7], threads=2),
            # a row of the old format: a median, no run values, no lo/hi
            {"kind": "cmp", "structure": "stack", "impl": "ksync", "metric": "latency",
             "threads": 1, "median": 40.0},
            {"kind": "cmp", "structure": "stack", "impl": "ck", "metric": "latency",
             "threads": 1, "median": 60.0}]
    assert comparison(rows, "spsc", "throughput", threads=2).verdict == peers.NO_PEER
    old = comparison(rows, "stack", "latency")
    assert old.verdict == peers.NO_SPREAD and old.ratio == pytest.approx(1.5)
    t = peers.cmp_table(rows, None, "throughput")
    spsc = next(r for r in t.rows if r[0] == "spsc")
    assert spsc[-2:] == [report.DASH, report.DASH]
    f = {x.claim.split(" (")[0]: x for x in peers.peer_findings(rows, None)}
    assert f["spsc queue: enqueue + dequeue"].verdict == "not measurable here"
    assert f["LIFO stack: push + pop"].verdict == "not measurable here"


def test_one_run_gives_no_verdict():
    rows = [row("stack", "ksync", "latency", [10]), row("stack", "ck", "latency", [50])]
    assert comparison(rows, "stack", "latency").verdict == peers.NO_SPREAD


def full_rows(cpu="AMD EPYC"):
    """Every cell bench/cmp_peers.c prints on 2 CPUs, libksync clearly faster in
    latency, within noise in throughput."""
    rows = [{"kind": "cmp_setup", "cpu_model": cpu, "cpus": 2, "run_ms": 200, "runs": 5,
             "loadavg_1min": 4.5},
            {"kind": "cmp_end", "elapsed_s": 37.2, "loadavg_1min": 3.3}]
    for st, ps in peers.CMP_PEERS.items():
        ours = [i for i in peers.CMP_KSYNC if (st == "mpmc" or not i.endswith("-word"))
                and (st == "stack" or i != "ksync-index")]
        impls = (ours if st != "spsc" else ["ksync"]) + ps
        for k, impl in enumerate(impls):
            base = 1234.5 if impl.startswith("ksync") else 4321.25
            rows.append(row(st, impl, "latency", [base, base + 1, base + 2, base + 3, base + 4]))
            for t in ([1, 2] if st != "spsc" else [2]):
                v = 123.456 + k
                rows.append(row(st, impl, "throughput", [v - 50, v, v + 1, v + 2, v + 60],
                                threads=t))
    return rows


@pytest.mark.parametrize("cpu", ["X", "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz with a "
                                      "rather long brand string"])
def test_tables_split_per_metric_and_fit(cpu):
    rows = full_rows(cpu)
    tables = peers.cmp_tables(rows, None)
    assert [t.title.split(": ")[1].split(",")[0] for t in tables] == ["latency", "throughput"]
    for t in tables:
        assert all(len(r) == len(t.headers) == len(t.align) for r in t.rows)
        assert max(len(line) for line in report.render_table_text(t).splitlines()) <= 120
    lat, tput = tables
    # a line per implementation; libksync's carry the ratio and the verdict
    by = {(r[0] or None, r[1]): r for r in lat.rows}
    stack = next(r for r in lat.rows if r[0] == "stack")
    assert stack[1] == "libksync" and stack[-1] == peers.OURS_BETTER
    assert stack[-2].endswith(" vs ck") and stack[-2].startswith("3.5 (")
    assert any(r[1] == "libksync, no backoff" for r in lat.rows)
    assert by[(None, "ck_stack (CK)")][-2:] == ["", ""]
    assert {r[-1] for r in tput.rows if r[2] == "libksync"} == {peers.WITHIN_NOISE}
    # the combined table has a metric column and every line
    one = peers.cmp_table(rows, None)
    assert one.headers[1] == "metric" and len(one.rows) == len(lat.rows) + len(tput.rows)
    # the load the benchmark recorded is told beside the spreads (unwrapped note text)
    assert any("4.5 -> 3.3" in n and "37 s" in n and "50%..50%" in n for n in lat.notes_above)
    # the report's alias still gives the combined table
    assert peers.cmp_table(rows, None).rows == one.rows


def test_findings_one_per_structure_and_metric():
    rows = full_rows()
    fs = peers.peer_findings(rows, {"cpu_model": "ignored: the setup row names the CPU"})
    # per structure and metric, plus the mpmc word queue's two and the index stack's two
    assert len(fs) == 10
    word = [f for f in fs if "8-byte words" in f.claim]
    assert len(word) == 2 and all(f.claim.startswith("mpmc queue") for f in word)
    index = [f for f in fs if "index stack" in f.claim]
    assert len(index) == 2 and all(f.claim.startswith("LIFO stack") for f in index)
    assert all("ck_stack (CK)" in f.today or "lfstack (urcu)" in f.today for f in index)
    assert all(f.verdict in base.VERDICTS and f.then == report.DASH for f in fs)
    lat = [f for f in fs if "latency" in f.claim]
    tput = [f for f in fs if "throughput" in f.claim]
    assert {f.verdict for f in lat} == {"holds"}
    assert {f.verdict for f in tput} == {"within noise"}
    assert all("2 threads" in f.env and f.env.startswith("hosted, AMD EPYC") for f in tput)
    stack = next(f for f in lat if f.claim.startswith("LIFO stack"))
    assert "no backoff" in stack.today and "ck_stack (CK)" in stack.today


def test_findings_reversed_when_a_peer_is_faster_beyond_the_spread():
    rows = [row("stack", "ksync", "throughput", [10, 11, 12], threads=4),
            row("stack", "ck", "throughput", [20, 21, 22], threads=4),
            row("stack", "ksync", "throughput", [90, 91, 92], threads=1),
            row("stack", "ck", "throughput", [20, 21, 22], threads=1)]
    (f,) = peers.peer_findings(rows, None)
    assert f.verdict == "reversed" and "4 threads" in f.claim     # the most threads


def test_figures_written(tmp_path):
    figs = peers.peer_figure(full_rows(), None, tmp_path)
    assert [f.src for f in figs] == ["peers-latency.png", "peers-throughput.png"]
    for f in figs:
        png = tmp_path / f.src
        svg = png.with_suffix(".svg")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert svg.stat().st_size > 0 and b"<svg" in svg.read_bytes()[:2000]
        assert "hosted, AMD EPYC" in f.caption
    assert peers.peer_figure([], None, tmp_path / "none") == []


def test_planned_seconds_matches_the_benchmark_plan():
    assert peers.thread_counts(1) == [1]
    assert peers.thread_counts(2) == [1, 2]
    assert peers.thread_counts(6) == [1, 2, 4, 6]
    assert peers.planned_seconds(200, 5, 2) == pytest.approx(36.0)   # (13 + 20 + 3) cells
    # a --threads list replaces the default counts: 13 + 10 x 4 + 3 cells
    assert peers.planned_seconds(200, 5, 2, [1, 2, 4, 8]) == pytest.approx(56.0)


def test_cli_run_length_options():
    p = cli.build_parser()
    a = p.parse_args(["run", "--peer-ms", "300", "--peer-runs", "7"])
    assert (a.peer_ms, a.peer_runs) == (300, 7)
    for bad in (["--peer-ms", "0"], ["--peer-runs", "101"], ["--peer-ms", "x"]):
        with pytest.raises(SystemExit):
            p.parse_args(["run", *bad])


# ---- the benchmark itself -------------------------------------------------------------

@pytest.fixture(scope="module")
def cmp_prog() -> Path:
    r = subprocess.run(["make", "-C", str(ROOT), "-s", f"-j{os.cpu_count() or 1}", "bench-hosted"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"make bench-hosted failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}",
                    pytrace=False)
    assert CMP.is_file()
    return CMP


@pytest.fixture(scope="module")
def bench_rows(cmp_prog):
    """A tiny run: 2 runs of 2 ms per cell (the default is 5 of 200)."""
    r = subprocess.run([str(cmp_prog), "2", "2"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ktap: ok 2 throughput" in r.stdout
    return [json.loads(line[len("KSYNC "):]) for line in r.stdout.splitlines()
            if line.startswith("KSYNC ")]


def test_benchmark_rows_carry_what_the_renderer_needs(bench_rows):
    setup = [r for r in bench_rows if r["kind"] == "cmp_setup"]
    assert len(setup) == 1 and setup[0]["runs"] == 2 and setup[0]["run_ms"] == 2
    assert setup[0]["cpus"] >= 1 and "loadavg_1min" in setup[0]
    assert [r["kind"] for r in bench_rows][-1] == "cmp_end"
    cmp_rows = [r for r in bench_rows if r["kind"] == "cmp"]
    assert cmp_rows
    for r in cmp_rows:
        for k in ("structure", "impl", "metric", "unit", "threads", "runs", "run_ms",
                  "min_run_ms", "min_cpu_share", "values", "median", "lo", "hi", "spread"):
            assert k in r, (k, r)
        assert r["runs"] == len(r["values"]) == 2 and r["spread"] == "min..max"
        assert r["lo"] == pytest.approx(min(r["values"]), abs=1e-3)
        assert r["hi"] == pytest.approx(max(r["values"]), abs=1e-3)
        assert r["median"] == pytest.approx(statistics.median(r["values"]), abs=1e-3)
    keys = {(r["structure"], r["metric"], r["impl"]) for r in cmp_rows}
    for st in ("stack", "mpmc"):
        for impl in ("ksync", "ksync-nobackoff", "ck", "urcu"):
            assert (st, "latency", impl) in keys and (st, "throughput", impl) in keys
    # the index stack: stack only, and it does not back off
    assert ("stack", "latency", "ksync-index") in keys
    assert ("stack", "throughput", "ksync-index") in keys
    assert not any(k[0] != "stack" and k[2] == "ksync-index" for k in keys)
    for impl in ("ksync-word", "ksync-nobackoff-word"):     # the word queue: mpmc only
        assert ("mpmc", "latency", impl) in keys and ("mpmc", "throughput", impl) in keys
        assert ("stack", "latency", impl) not in keys
    backoff = {(r["structure"], r["impl"]): r.get("backoff_max") for r in cmp_rows}
    assert backoff[("stack", "ksync-nobackoff")] == 0 and backoff[("stack", "ksync")] > 0
    assert backoff[("stack", "ck")] is None and backoff[("stack", "ksync-index")] is None
    # every row renders, and every libksync cell gets a comparison
    assert len(peers.comparisons(bench_rows)) == sum(
        1 for r in cmp_rows if r["impl"] in peers.CMP_KSYNC)
    for t in peers.cmp_tables(bench_rows, None):
        report.render_table_text(t)


def test_ck_stack_is_16_byte_aligned(cmp_prog):
    """ck_stack_pop_mpmc is a cmpxchg16b on the ck_stack_t: its alignment is declared,
    not left to the link layout (the program also checks it at start)."""
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) not installed")
    out = subprocess.run(["nm", str(cmp_prog)], capture_output=True, text=True).stdout
    addrs = [int(line.split()[0], 16) for line in out.splitlines()
             if line.split()[-1:] == ["cks"]]
    assert addrs and all(a % 16 == 0 for a in addrs)


def test_report_carries_peer_findings_and_figures(tmp_path):
    """The results document: the peer findings sit in the Findings section and each peer
    figure under its own metric's table (document.write_figures + document.results_document)."""
    from ksync import findings, irqreport, plots
    prims = {"cmp": full_rows(), "sides": {"hosted": {"cpu_model": "AMD EPYC"}}}
    fs = document.all_findings(prims, None)
    assert sum(1 for f in fs if "libksync" in f.claim or "Concurrency Kit" in f.today
               or f.then == report.DASH) >= 6
    figs = document.write_figures(prims, None, tmp_path)
    placed = {k: [f.src for f in v] for k, v in figs.items() if k.startswith("libksync vs")}
    assert placed == {"libksync vs Concurrency Kit and liburcu: latency": ["peers-latency.png"],
                      "libksync vs Concurrency Kit and liburcu: throughput":
                          ["peers-throughput.png"]}
    tables = peers.cmp_tables(prims["cmp"], None)
    peer_figs = {k: v for k, v in figs.items() if k.startswith("libksync vs")}
    doc = document.attach_figures(report.Document("t", tables=tables), peer_figs)
    assert [[f.src for f in t.images] for t in doc.tables] == [["peers-latency.png"],
                                                              ["peers-throughput.png"]]


def test_benchmark_takes_a_thread_list(cmp_prog):
    """ksync run --threads: the third argument replaces the default thread counts; a
    malformed list or one above the usable CPUs is refused with the reason."""
    r = subprocess.run([str(cmp_prog), "2", "2", "1"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [json.loads(line[len("KSYNC "):]) for line in r.stdout.splitlines()
            if line.startswith("KSYNC ")]
    tput = {r["threads"] for r in rows if r.get("kind") == "cmp"
            and r["metric"] == "throughput" and r["structure"] != "spsc"}
    assert tput == {1}
    too_many = str(len(os.sched_getaffinity(0)) + 1)
    for bad in ("2,1", "0", "1,x", too_many):
        p = subprocess.run([str(cmp_prog), "2", "2", bad], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 2 and "usable CPUs" in p.stderr, (bad, p.stderr)
