"""`make bench` / `ksync run --set bench` and `--serial-bits`, without booting a real kernel.

Issue 8, item 10: `make bench` must be the longer set, not the same runs as `make run`; the
report must say which set produced its tables; and the serial model's bits per character
(10 = 8N1 by default, 8 = Small & Manley's section 6.4 arithmetic) must be a run option
that reaches the kernel and labels the loss tables.

What is tested: the options each set resolves to and the kernel words the tool would pass
(run.apply_run_set, run.irq_words), that explicit options win over the set, the Makefile's
bench target (`make -n`), an irq run with a fake QEMU that records its argv (the -append
words, irq.json's options), and the report's set and serial-bits labels.  All kernel
figures here are synthetic.
"""
import json
import subprocess
from pathlib import Path

import pytest

from ksync import cli, irqreport, report, run
from test_tool_cli import KERNEL_LINES, run_repo, write_prims  # noqa: F401
from test_tool_irq import (argvs, irq_data, irq_repo, make_fake, run_cli,  # noqa: F401
                           scheme_rows)
from test_tool_runner import make_fake as make_fake_qemu

ROOT = Path(__file__).resolve().parent.parent


def resolved(*argv):
    args = cli.build_parser().parse_args(["run", *argv])
    rs = run.apply_run_set(args)
    return args, rs


def test_bench_set_differs_from_default():
    d, drs = resolved()
    b, brs = resolved("--set", "bench")
    assert (drs.name, brs.name) == ("default", "bench")
    # longer: more repeats, longer workload runs, more loss repeats, a longer boot limit
    assert b.repeat > d.repeat and (d.repeat, b.repeat) == (3, 7)
    assert float(b.irq_seconds) > float(d.irq_seconds)
    assert b.loss_repeats > d.loss_repeats
    assert b.timeout > d.timeout
    # and the kernel's `all` experiments
    assert (drs.kernel_set, brs.kernel_set) == ("default", "all")
    dw, bw = run.irq_words(d, "tcg"), run.irq_words(b, "tcg")
    assert dw != bw
    assert "irq_seconds=1" in dw and "irq_loss_repeats=3" in dw
    assert "irq_seconds=5" in bw and "irq_loss_repeats=7" in bw
    assert "irq_serial_bits=10" in dw and "irq_serial_bits=10" in bw


def test_explicit_options_win_over_the_set():
    b, _ = resolved("--set", "bench", "--repeat", "2", "--irq-seconds", "0.5",
                    "--loss-repeats", "4", "--timeout", "60", "--serial-bits", "8")
    assert (b.repeat, b.irq_seconds, b.loss_repeats, b.timeout) == (2, "0.5", 4, 60.0)
    assert run.irq_words(b, "tcg") == ["irq_seconds=0.5", "irq_loss_repeats=4",
                                       "irq_serial_bits=8"]
    q, _ = resolved("--irq-quick")
    assert run.irq_words(q, "kvm-pvm")[-2:] == ["irq_quick=1", "skip=cmpxchg16b"]


@pytest.mark.parametrize("argv", [["--serial-bits", "9"], ["--serial-bits", "x"],
                                  ["--set", "all"], ["--loss-repeats", "0"],
                                  ["--loss-repeats", "21"]])
def test_bad_run_options_refused(argv):
    p = run_cli("run", *argv)
    assert p.returncode == 2
    assert p.stderr.startswith("ksync: error:") and len(p.stderr.splitlines()) == 1
    assert argv[0] in p.stderr


@pytest.mark.parametrize("opt", [["--serial-bits", "8"], ["--loss-repeats", "3"]])
def test_irq_options_refused_for_prims(opt):
    p = run_cli("run", "prims", *opt)
    assert p.returncode == 2
    assert "are for `ksync run irq`" in p.stderr


def test_make_bench_runs_the_bench_set():
    r = subprocess.run(["make", "-n", "-C", str(ROOT), "bench"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    run = [ln for ln in r.stdout.splitlines() if " run " in f" {ln} " and "ksync" in ln]
    assert run, r.stdout
    assert "--set bench" in run[-1]
    r = subprocess.run(["make", "-n", "-C", str(ROOT), "run"], capture_output=True,
                       text=True, timeout=60)
    run = [ln for ln in r.stdout.splitlines() if " run " in f" {ln} " and "ksync" in ln]
    assert run and "--set bench" not in run[-1]


def test_run_irq_bench_passes_and_records_the_set(irq_repo, tmp_path):
    rows = [dict(r, serial_bits=8) if r["kind"] == "irq_loss" else r
            for r in scheme_rows("spl-optim")]
    fake = make_fake(tmp_path, rows={"spl-optim": rows})
    out = tmp_path / "results"
    p = run_cli("run", "irq", "--repo", str(irq_repo), "--no-build", "--qemu", str(fake),
                "--out", str(out), "--schemes", "spl-optim", "--set", "bench",
                "--serial-bits", "8")
    assert p.returncode == 0, p.stdout + p.stderr
    (argv,) = argvs(tmp_path)
    words = argv[argv.index("-append") + 1].split()
    assert words[:6] == ["mode=bench", "filter=irq*", "set=all", "irq_seconds=5",
                         "irq_loss_repeats=7", "irq_serial_bits=8"]
    data = json.loads((out / "irq.json").read_text())
    o = data["options"]
    assert (o["set"], o["irq_seconds"], o["irq_loss_repeats"], o["serial_bits"]) == \
        ("bench", 5.0, 7, 8)
    assert o["timeout"] == run.RUN_SETS["bench"].timeout
    assert data["set"] == "bench"
    md = (out / "report.md").read_text()
    assert "set bench" in md
    assert "8 bits per character" in md


def test_run_prims_bench_boots_seven_times_with_set_all(run_repo, tmp_path):
    argv_file = tmp_path / "argv.json"
    fake = make_fake_qemu(tmp_path, lines=KERNEL_LINES, exit=33, argv_file=str(argv_file))
    out = tmp_path / "results"
    p = run_cli("run", "prims", "--repo", str(run_repo), "--no-build", "--qemu", str(fake),
                "--hosted-prims", str(write_prims(tmp_path)), "--out", str(out), "--no-peers",
                "--set", "bench")
    assert p.returncode == 0, p.stdout + p.stderr
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("-append") + 1].split()[-1] == "set=all"
    assert "run 7 of 7" in p.stderr and "run 8 of" not in p.stderr
    data = json.loads((out / "prims.json").read_text())
    assert (data["set"], data["repeat"]) == ("bench", 7)
    assert all(len(r["run_medians"]) == 7 for r in data["rows"])
    assert "bench, 7 runs per side" in (out / "report.md").read_text()


def test_report_labels_serial_bits_from_the_kernel_rows():
    data = irq_data()
    # options say 10, the kernel's rows say 8: the rows win (they are what ran)
    data["options"]["serial_bits"] = 10
    for rec in data["schemes"]:
        for r in rec["rows"]:
            if r["kind"] == "irq_loss":
                r["serial_bits"] = 8
    tables = irqreport.irq_tables(data)
    for t in tables:
        if t.title.startswith(("Data loss", "Loss map")):
            notes = " ".join(t.notes_above)
            assert "Serial model: 8 bits per character" in notes, t.title
    # an old irq.json (no serial_bits anywhere) ran 8N1
    old = irq_data()
    t = next(t for t in irqreport.irq_tables(old) if t.title.startswith("Data loss"))
    assert "Serial model: 10 bits per character" in " ".join(t.notes_above)
    meta = dict(irqreport.irq_meta(old))
    assert "set not recorded" in meta["interrupt schemes: run"]


def test_prims_report_names_the_set():
    meta = {"timestamp": "t", "commit": "c", "host_cpu_model": "X", "host_cpus": 2,
            "qemu_version": "q", "set": "bench", "repeat": 7}
    data = report.make_prims_data([], [], None, None, meta)
    doc = report.prims_document(data)
    assert dict(doc.meta)["set"].startswith("bench, 7 runs per side")
    del data["set"]
    assert dict(report.prims_document(data).meta)["set"].startswith("not recorded")

