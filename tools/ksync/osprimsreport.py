"""The OS-primitives table: ksync against Linux in the same QEMU configuration, the same
static binary (bench/user/osprims.c) on both, in the manner of lmbench; from osprims.json
(``osprimsrun.collect``).

Each row's figure per run is the median of the program's batches; over the rounds the
table gives the median of the runs' figures and their range (``Spread``: "N runs"; one run:
the range of its batches). A row's verdict on the bar "ksync's time at most Linux's" is
``met`` when ksync's whole range lies below Linux's, ``not met`` when above, else ``within
noise``; pipe_bw is a rate (MB/s): there the time ratio is Linux's rate over ksync's;
hackbench is one run's seconds (its range: the runs'). Under
TCG both columns are what the emulator makes the kernels' code cost: compare ratios.

Public API: ``OSPRIMS_JSON``, ``ROWS``, ``load_osprims``, ``row_spreads``, ``os_tables``,
``os_findings``.
"""
from __future__ import annotations

import statistics
from pathlib import Path

from .base import (ColumnSpec, Finding, Spread, Table, build_table, compare_greater,
                   fmt_ratio, fmt_sig)
from .util import load_runs_file

OSPRIMS_JSON = "osprims.json"
SCHEMA = "ksync-osprims-1"
PAPER = "ksync against Linux"
# (name, what it measures), in the table's order
ROWS = (
    ("getppid", "null system call (getppid)"),
    ("read_zero", "read 1 byte of /dev/zero"),
    ("write_null", "write 1 byte to /dev/null"),
    ("open_close", "open + close"),
    ("stat", "stat"),
    ("fork_exit", "fork + exit + wait"),
    ("fork_execve", "fork + execve + wait"),
    ("sh_c_true", "sh -c true"),
    ("pipe_rtt", "pipe round trip, two processes"),
    ("ctx_yield", "context switch (two processes yielding on one CPU)"),
    ("pipe_bw", "pipe bandwidth, 64 KiB writes"),
    ("page_fault", "page fault on fresh anonymous memory"),
    ("sig_install", "signal handler install (sigaction)"),
    ("sig_deliver", "signal delivery to the process itself"),
    ("hackbench", "Debian's hackbench -p -g 2 -l 300 (80 processes over pipes), seconds"),
)
BAR = "ksync's time at most Linux's on every row (aim 0.8x)"


def load_osprims(path: Path) -> dict:
    return load_runs_file(path, SCHEMA, "an osprims")


def _figure(row: dict | None) -> float | None:
    b = [x for x in (row or {}).get("batches") or [] if isinstance(x, (int, float))]
    return statistics.median(b) if b and not (row or {}).get("error") else None


def row_spreads(data: dict, kernel: str, smp: int) -> dict[str, Spread]:
    """name -> the row's spread over the ok runs of one kernel at one CPU count."""
    runs = [r for r in data.get("runs", []) if r.get("ok") and r.get("kernel") == kernel
            and r.get("smp") == smp]
    out: dict[str, Spread] = {}
    for name, _ in ROWS:
        rows = [(r.get("rows") or {}).get(name) for r in runs]
        figs = [f for f in (_figure(x) for x in rows) if f is not None]
        if len(figs) >= 2:
            out[name] = Spread(min(figs), statistics.median(figs), max(figs), f"{len(figs)} runs")
        elif len(figs) == 1:
            b = [x for x in rows if _figure(x) is not None][0]["batches"]
            out[name] = Spread(min(b), figs[0], max(b), "batches")
    return out


def _unit(data: dict, name: str) -> str:
    for r in data.get("runs", []):
        u = ((r.get("rows") or {}).get(name) or {}).get("unit")
        if u:
            return u
    return "ns"


def _verdict(k: Spread, l: Spread, rate: bool) -> str:
    """the bar "ksync's time <= Linux's": met / not met / within noise."""
    v = compare_greater(k, l) if rate else compare_greater(l, k)
    return {"holds": "met", "reversed": "not met"}.get(v, "within noise")


def _pairs(data: dict) -> list[tuple[str | None, int]]:
    """(Linux kernel, smp) for every CPU count with Linux runs; (None, smp) for a CPU count
    that has ksync's alone (--linux none, or no guest)."""
    out: list[tuple[str | None, int]] = []
    for r in data.get("runs", []):
        k, n = r.get("kernel"), r.get("smp")
        if isinstance(k, str) and k.startswith("linux") and (k, n) not in out:
            out.append((k, n))
    for r in data.get("runs", []):
        n = r.get("smp")
        if r.get("kernel") == "ksync" and isinstance(n, int) \
                and not any(p[1] == n for p in out):
            out.append((None, n))
    return sorted(out, key=lambda p: (p[1], p[0] or ""))


def _env(data: dict, smp: int) -> str:
    accel = (data.get("options") or {}).get("accel") or "tcg"
    return f"{accel}, {smp} CPU{'s' if smp != 1 else ''}"


def _compare(data: dict, linux: str | None, smp: int) -> list[dict]:
    ks = row_spreads(data, "ksync", smp)
    ls = row_spreads(data, linux, smp) if linux else {}
    out = []
    for name, label in ROWS:
        k, l = ks.get(name), ls.get(name)
        rate = _unit(data, name) == "MB/s"
        ratio = None
        if k and l and k.mid > 0 and l.mid > 0:
            ratio = l.mid / k.mid if rate else k.mid / l.mid
        out.append({"name": name, "label": label, "unit": _unit(data, name), "ksync": k,
                    "linux": l, "ratio": ratio,
                    "verdict": _verdict(k, l, rate) if k and l else "no data"})
    return out


def _row_errors(runs: list[dict]) -> list[str]:
    """'kernel name: error' for each row a run reported instead of measuring, once each."""
    out: list[str] = []
    for r in runs:
        for name, row in (r.get("rows") or {}).items():
            err = (row or {}).get("error")
            text = f"{r.get('kernel')} {name}: {err}"
            if err and text not in out:
                out.append(text)
    return out


def _ok(runs: list[dict], kernel: str) -> int:
    return sum(1 for r in runs if r.get("ok") and r.get("kernel") == kernel)


def _cell(s: Spread | None) -> str:
    return f"{fmt_sig(s.mid)} ({fmt_sig(s.lo)}..{fmt_sig(s.hi)})" if s else "—"


def os_tables(data: dict | None) -> list[Table]:
    if not data:
        return []
    tables = []
    for linux, smp in _pairs(data):
        rows = _compare(data, linux, smp)
        kr = [r for r in data["runs"] if r.get("kernel") == linux and r.get("kernel_release")]
        words = kr[0]["kernel_release"].split() if kr else []
        release = words[2] if len(words) > 2 else (linux or "not run")
        cols = [ColumnSpec("primitive", lambda r: r["name"], "l"),
                ColumnSpec("unit", lambda r: r["unit"], "l"),
                ColumnSpec("ksync", lambda r: _cell(r["ksync"])),
                ColumnSpec(f"Linux {release}", lambda r: _cell(r["linux"])),
                ColumnSpec("ksync/Linux", lambda r: f"{fmt_ratio(r['ratio'])}x"
                           if r["ratio"] is not None else "—"),
                ColumnSpec("bar <= 1.0x", lambda r: r["verdict"], "l")]
        ran = [r for r in data["runs"] if r.get("smp") == smp]
        failed = [f"{r['kernel']} round {r.get('round', 0) + 1}: {r.get('reason')}"
                  for r in ran if not r.get("ok")]
        against = f"against Linux ({linux})" if linux else "(no Linux guest run)"
        tables.append(build_table(
            f"OS primitives: ksync {against}, the same QEMU configuration [{_env(data, smp)}]",
            rows, cols,
            notes_above=[f"The same static binary (bench/user/osprims.c, musl) on both kernels, "
                         f"{_ok(ran, 'ksync')} ok runs of ksync"
                         + (f" and {_ok(ran, linux)} of Linux, interleaved" if linux else "")
                         + "; each "
                         "cell: the median of the runs' batch medians (their range; one run: "
                         "of its batches); ksync/Linux is the time ratio (pipe_bw: Linux's "
                         "rate over ksync's). Emulator costs: compare ratios, not times."],
            notes_below=["Rows: " + "; ".join(f"{n}: {label}" for n, label in ROWS) + "."]
            + (["Rows that did not run: " + "; ".join(_row_errors(ran))] if _row_errors(ran)
               else [])
            + (["Failed runs: " + "; ".join(failed)] if failed else [])))
    return tables


def os_findings(data: dict | None) -> list[Finding]:
    if not data:
        return []
    out = []
    for linux, smp in _pairs(data):
        if linux is None:
            continue
        rows = [r for r in _compare(data, linux, smp) if r["verdict"] != "no data"]
        if not rows:
            continue
        met = [r["name"] for r in rows if r["verdict"] == "met"]
        not_met = [r["name"] for r in rows if r["verdict"] == "not met"]
        noise = [r["name"] for r in rows if r["verdict"] == "within noise"]
        verdict = "reversed" if not_met else "within noise" if noise else "holds"
        ratios = sorted(r["ratio"] for r in rows if r["ratio"] is not None)
        today = (f"{len(met)} of {len(rows)} rows below Linux's time, {len(not_met)} above"
                 + (f" ({', '.join(not_met)})" if not_met else "")
                 + f", {len(noise)} within noise; median ratio "
                 f"{fmt_ratio(statistics.median(ratios))}x" if ratios else "")
        out.append(Finding(PAPER, BAR, "Asterinas (a Linux-ABI kernel) publishes 1.0-1.4x "
                           "Linux's time on such rows", today, _env(data, smp), verdict,
                           "per row: ksync's range of runs wholly below Linux's (met), above "
                           "(not met) or overlapping (within noise); the claim holds only if "
                           f"every row is met. Against {linux}, the same QEMU options."))
    return out
