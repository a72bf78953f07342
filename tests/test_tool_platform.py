"""Issue 9 items 5/6 (the tool): --platform qemu|hosted, --smp sweeps, --flavour, the hosted
kernel's verdict rules, the hosted column of the report.

No QEMU boot: the hosted kernel is a FAKE binary written here (a Python script printing the
agreed lines and exit codes: build/hosted-kernel/<flavour>/<scheme>/ksync, DESIGN.md "Hosted
port"), so every rule is checked against a binary that can fail it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import tool_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from ksync import hosteddata
from ksync import document
from ksync import findings, hkernel, hostedreport, irqreport, qemu, report, schemes  # noqa: E402

FAKE = r'''#!{python}
# fake hosted kernel: behaviour from $FAKE_HK ("pass" by default), or FAKE_HK_<smp>
import json, os, signal, sys, time
argv = sys.argv[1:]
opts = {{}}
i = 0
while i < len(argv):
    opts[argv[i]] = argv[i + 1]
    i += 2
smp = int(opts.get("-smp", "1"))
words = dict(w.split("=", 1) for w in opts.get("-append", "").split() if "=" in w)
how = os.environ.get(f"FAKE_HK_{{smp}}") or os.environ.get("FAKE_HK", "pass")
cores = int(os.environ.get("FAKE_CORES", "2"))
scheme = os.path.basename(os.path.dirname(os.path.abspath(sys.argv[0])))
flavour = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0]))))
def out(s):
    print(s, flush=True)
def ksync(o):
    out("KSYNC " + json.dumps(o))
if how == "badargs":
    print("ksync: -smp: must be 1..64", file=sys.stderr)
    sys.exit(64)
out("ksync hosted port booting")
boot = {{"kind": "boot", "port": "hosted", "cpus": smp, "tsc_hz": 2000000000,
        "cpu_model": "Fake CPU 9000", "scheme": scheme, "flavour": flavour,
        "sched": os.environ.get("FAKE_SCHED", "best-effort scheduling"),
        "oversubscribed": smp > cores, "argv": argv}}
ksync(boot)
if how == "hang":
    def report(sig, frame):
        print("watchdog: vcpu 0 last in spin_lock(&big) since 812 ms", file=sys.stderr,
              flush=True)
        print("watchdog: vcpu 1 last in idle", file=sys.stderr, flush=True)
    signal.signal(signal.SIGQUIT, report)
    open(os.environ["FAKE_PIDFILE"], "w").write(str(os.getpid()))
    while True:
        time.sleep(0.05)
if how == "panic":
    print("PANIC on vcpu 1: SIGSEGV at fault address 0x0", file=sys.stderr, flush=True)
    print("  bt: kernel_main+0x12", file=sys.stderr, flush=True)
    sys.exit(2)
if how == "abort":
    os.abort()
bench = words.get("mode") == "bench"
names = ["irq_prims", "lf_cost", "irq_load"] if bench else ["t_one", "t_two"]
if bench and words.get("filter") == "sprite":      # issue 11's boot: an empty sweep
    names = ["sprite"]
if bench and words.get("filter") in ("fiasco,lateness", "lateness"):    # issue 12's boots
    names = words["filter"].split(",")
if how != "noplan":
    out(f"ktap: 1..{{len(names)}}")
for n, name in enumerate(names, 1):
    if name == "irq_prims":
        for row, med in (("crit_enter_leave", 3.0 + smp), ("splraise_splx", 5.0),
                         ("onchip", 2.0), ("offchip", 900.0), ("flag", 0.5)):
            ksync({{"kind": "irq_prim", "scheme": scheme, "name": row, "median": med,
                   "min": med, "p99": med * 1.1, "unit": "tsc_ticks"}})
    if name == "lf_cost":
        for row, med in (("mp_stack_push_pop_lf", 40.0), ("mp_stack_push_pop_nosync", 10.0),
                         ("ref_2x_lock_cmpxchg", 50.0)):
            ksync({{"kind": "prim", "name": row, "median": med, "min": med, "p99": med,
                   "unit": "tsc_ticks"}})
    if name == "sprite":
        ksync({{"kind": "sprite_setup", "scale": 1, "reps": 1, "cpus": smp, "benches": 0}})
        ksync({{"kind": "sprite_end", "runs": 0, "failures": 0}})
    if name == "fiasco":
        for row, med in (("counter, CAS", 6.0), ("helping lock acquire+release, uncontended", 12.0)):
            ksync({{"kind": "fiasco_cost", "row": row, "sched": "-", "method": "batch",
                   "unit": "tsc_ticks", "n": 200, "min": med, "median": med, "p99": med,
                   "max": med}})
    if name == "lateness":
        for cfg in ("noload", "helping", "master-irqoff", "master-scheme", "monitor",
                    "helping-sprite"):
            ksync({{"kind": "lateness", "config": cfg, "period_us": 250, "seconds": 2,
                   "section_us": 100, "cpus": smp, "expected": 8000, "samples": 8000,
                   "missed": 0, "unit": "us", "min": 10.0, "p50": 20.0, "p99": 30.0,
                   "p999": 40.0, "max": 50.0, "irq_max": 45.0, "hist": [[10, 8000]],
                   "overflow": 0, "hist_truncated": False}})
    if name == "irq_load":
        out(f"ktap: ok {{n}} irq_load # SKIP the hosted devices are not there yet")
        continue
    bad = how == "notok" and n == 2
    out(f"ktap: {{'not ok' if bad else 'ok'}} {{n}} {{name}}")
ksync({{"kind": "done"}})
sys.exit(1 if how == "exit1" else 0)
'''

COSTS = r'''#!{python}
import json
print("KSYNC " + json.dumps({{"kind": "hosted_boot", "tsc_hz": 2000000000,
                             "cpu_model": "Fake CPU 9000", "cpus": 2}}))
for name, med in {rows}:
    print("KSYNC " + json.dumps({{"kind": "prim", "name": name, "median": med, "min": med,
                                 "p99": med * 2, "unit": "tsc_ticks"}}))
print("ktap: 1..1")
print("ktap: ok 1 costs")
'''


def _exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture
def fake_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    script = FAKE.format(python=sys.executable)
    for s in schemes.HOSTED_SCHEMES:
        _exe(repo / hkernel.HOSTED_KERNEL_DIR / "plain" / s / "ksync", script)
    for f in ("asan", "tsan", "hard"):
        _exe(repo / hkernel.HOSTED_KERNEL_DIR / f / schemes.DEFAULT_SCHEME / "ksync", script)
    _exe(repo / hkernel.HOSTED_COSTS[0], COSTS.format(python=sys.executable, rows=repr((
        ("hosted_soft_irq_pair", 1.5), ("hosted_sigmask_pair", 300.0),
        ("hosted_signal_self", 2500.0), ("hosted_signal_cross", 9000.0),
        ("hosted_ipi_round_trip", 12000.0)))))
    _exe(repo / hkernel.HOSTED_COSTS[1], COSTS.format(python=sys.executable, rows=repr((
        ("hosted_hard_irq_pair", 310.0),))))
    return repo


def run_cli(*args, env_extra=None, timeout=120):
    env = tool_env()
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "ksync", *args], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


def one_line_error(p, *contains):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ksync: error: "), p.stderr
    for c in contains:
        assert c in lines[0], lines[0]


# ---------------------------------------------------------------------------------------
# bad input


def test_unknown_platform_lists_the_platforms(fake_repo):
    for cmd in ("test", "run"):
        p = run_cli(cmd, "--repo", str(fake_repo), "--no-build", "--platform", "nonsense")
        one_line_error(p, "nonsense", *hkernel.PLATFORMS)
    one_line_error(run_cli("boot", "--repo", str(fake_repo), "--platform", "qemu,hosted"))


@pytest.mark.parametrize("smp", ["65", "0", "1,99", "two", "1,,2"])
def test_smp_outside_the_limit_is_a_usage_error(fake_repo, smp):
    p = run_cli("test", "--repo", str(fake_repo), "--no-build", "--platform", "hosted",
                "--smp", smp)
    one_line_error(p, "64")


def test_flavour_rules(fake_repo):
    base = ("test", "--repo", str(fake_repo), "--no-build", "--no-disk")
    one_line_error(run_cli(*base, "--flavour", "asan"), "--flavour", "hosted")   # qemu default
    one_line_error(run_cli(*base, "--platform", "hosted", "--flavour", "tsan", "--scheme",
                           "cli-optim"), schemes.DEFAULT_SCHEME)
    one_line_error(run_cli(*base, "--platform", "hosted", "--flavour", "nonsense"))


def test_a_scheme_the_hosted_port_does_not_build_names_the_ones_it_does(fake_repo):
    missing = [s for s in schemes.SCHEMES if s not in schemes.HOSTED_SCHEMES]
    assert missing, "every scheme is hosted: nothing to refuse"
    p = run_cli("test", "--repo", str(fake_repo), "--no-build", "--platform", "hosted",
                "--scheme", missing[0])
    one_line_error(p, missing[0], *schemes.HOSTED_SCHEMES)


def test_qemu_options_on_a_hosted_run(fake_repo, tmp_path):
    base = ("test", "--repo", str(fake_repo), "--no-build", "--platform", "hosted")
    one_line_error(run_cli(*base, "--iso"), "--iso")
    one_line_error(run_cli(*base, "--accel", "kvm"), "--accel")
    one_line_error(run_cli(*base, "--qemu-arg=-d"), "--qemu-arg")
    one_line_error(run_cli("boot", "--repo", str(fake_repo), "--platform", "hosted",
                           "--smp", "1,2"), "--smp")
    one_line_error(run_cli("run", "prims", "--repo", str(fake_repo), "--no-build",
                           "--platform", "hosted", "--out", str(tmp_path / "o")), "prims")


# ---------------------------------------------------------------------------------------
# the verdict on hosted


def _boot(repo: Path, how: str, monkeypatch, mode="test", timeout=60.0, **env) -> qemu.BootResult:
    monkeypatch.setenv("FAKE_HK", how)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cfg = hkernel.HostedBootConfig(repo=repo, mode=mode, smp=2, timeout=timeout,
                                   log_dir=repo / "logs")
    return hkernel.boot(cfg)


def test_hosted_pass_and_the_command_line(fake_repo, monkeypatch):
    res = _boot(fake_repo, "pass", monkeypatch)
    assert res.passed and res.reason is None and res.exit_code == 0
    assert res.platform == "hosted" and res.env == "hosted" and res.smp == 2
    argv = res.boot["argv"]
    assert argv[argv.index("-smp") + 1] == "2"
    assert "mode=test" in argv[argv.index("-append") + 1].split()
    assert res.ktap.complete and res.ktap.ok_count == 2


@pytest.mark.parametrize("how,code", [("noplan", 0), ("notok", 0), ("exit1", 1),
                                      ("badargs", 64)])
def test_hosted_verdict_rules(fake_repo, monkeypatch, how, code):
    res = _boot(fake_repo, how, monkeypatch)
    assert not res.passed and res.reason
    assert res.exit_code == code
    if how == "notok":
        assert [c.number for c in res.ktap.failed] == [2]
    if how == "noplan":
        assert res.ktap.plan is None


def test_hosted_panic_shows_the_panic_text(fake_repo, monkeypatch):
    res = _boot(fake_repo, "panic", monkeypatch)
    assert not res.passed and res.exit_code == 2
    assert res.panic and "SIGSEGV" in res.panic
    text = qemu.failure_report(res)
    assert "kernel_main+0x12" in text and str(res.log_path.name) in text


def test_a_fault_leaves_no_core_dump(fake_repo, monkeypatch):
    res = _boot(fake_repo, "abort", monkeypatch)
    assert not res.passed and res.exit_code == -6         # SIGABRT
    assert not [p for p in fake_repo.rglob("core*") if p.is_file()]


def test_hang_is_killed_with_the_per_vcpu_report(fake_repo, monkeypatch, tmp_path):
    pidfile = tmp_path / "pid"
    res = _boot(fake_repo, "hang", monkeypatch, timeout=1.0, FAKE_PIDFILE=str(pidfile))
    assert not res.passed and res.timed_out and res.exit_code is None
    text = qemu.failure_report(res)
    assert "vcpu 0 last in spin_lock(&big)" in text     # printed on SIGQUIT
    assert "full log: " in text
    assert "vcpu 1 last in idle" in res.log_path.read_text()
    pid = int(pidfile.read_text())
    with pytest.raises(ProcessLookupError):              # SIGKILLed, then reaped
        os.kill(pid, 0)


def test_hang_from_the_cli_exits_nonzero(fake_repo):
    # --timeout 10, not 1: the fake hosted kernel (a Python script) must print its report
    # before the timeout, and its start took over 2 s on a loaded 2-core host
    p = run_cli("test", "--repo", str(fake_repo), "--no-build", "--no-disk", "--platform",
                "hosted", "--timeout", "10", env_extra={"FAKE_HK": "hang",
                                                       "FAKE_PIDFILE": str(fake_repo / "pid")})
    assert p.returncode == 1, p.stdout + p.stderr
    assert "vcpu 0 last in spin_lock(&big)" in p.stdout


# ---------------------------------------------------------------------------------------
# sweeps


def test_test_sweep_one_summary_per_platform_scheme_cpus(fake_repo):
    p = run_cli("test", "--repo", str(fake_repo), "--no-build", "--no-disk", "--platform",
                "hosted", "--smp", "1,2,4", "--scheme", "cli-optim")
    assert p.returncode == 0, p.stdout + p.stderr
    summaries = [l for l in p.stdout.splitlines() if l.startswith("ksync test: PASS")]
    assert len(summaries) == 3
    for n, line in zip((1, 2, 4), summaries):
        assert f"hosted cli-optim smp={n} " in line


def test_test_sweep_fails_when_one_cpu_count_fails(fake_repo):
    p = run_cli("test", "--repo", str(fake_repo), "--no-build", "--no-disk", "--platform",
                "hosted", "--smp", "1,4", env_extra={"FAKE_HK_4": "notok"})
    assert p.returncode == 1, p.stdout + p.stderr
    fails = [l for l in p.stdout.splitlines() if l.startswith("ksync test: FAIL")]
    assert len(fails) == 1 and f"hosted {schemes.DEFAULT_SCHEME} smp=4 " in fails[0]
    assert p.stdout.strip().splitlines()[-1].endswith(f"smp=4")


def test_flavour_picks_the_binary(fake_repo):
    p = run_cli("boot", "--repo", str(fake_repo), "--no-build", "--no-disk", "--platform",
                "hosted", "--flavour", "tsan", "--mode", "test")
    assert p.returncode == 0, p.stdout + p.stderr
    boot = json.loads(next(l for l in p.stdout.splitlines()
                           if l.startswith('KSYNC {"kind": "boot"'))[6:])
    assert boot["flavour"] == "tsan" and boot["scheme"] == schemes.DEFAULT_SCHEME


def test_run_hosted_column_keys_and_report(fake_repo, tmp_path):
    out = tmp_path / "results"
    p = run_cli("run", "--repo", str(fake_repo), "--no-build", "--no-disk", "--platform",
                "hosted", "--smp", "1,4", "--out", str(out), "--no-peers",
                env_extra={"FAKE_CORES": "2"})
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((out / hosteddata.HOSTED_JSON).read_text())
    keys = [(r["platform"], r["scheme"], r["cpus"]) for r in data["runs"]]
    assert sorted(keys) == sorted(("hosted", s, n) for s in schemes.HOSTED_SCHEMES
                                  for n in (1, 4))
    assert all(r["status"] == "ok" for r in data["runs"])
    over = {r["cpus"]: r["oversubscribed"] for r in data["runs"]}
    assert over == {1: False, 4: True}
    argv = data["runs"][0]["boot"]["argv"]
    assert argv[argv.index("-append") + 1].split()[:2] == ["mode=bench", "set=default"]
    # the refused experiment is recorded with its reason
    assert data["runs"][0]["refused"] == [{"name": "irq_load", "reason":
                                           "SKIP the hosted devices are not there yet"}]
    assert {c["status"] for c in data["costs"]} == {"ok"}
    md = (out / "report.md").read_text()
    assert "Hosted kernel runs" in md and "Signal delivery latency" in md
    # the report can be rendered again from the JSON alone
    p2 = run_cli("report", "--repo", str(fake_repo), "--out", str(out))
    assert p2.returncode == 0, p2.stderr


# ---------------------------------------------------------------------------------------
# labels, findings, rendering from fixture records


def _rec(scheme, cpus, over, crit=4.0, on=2.0, off=900.0, sched="best-effort scheduling",
         flag=1.0):
    r = hosteddata.run_record(scheme, cpus)
    rows = [{"kind": "irq_prim", "scheme": scheme, "name": n, "median": m, "min": m,
             "p99": m * 1.05} for n, m in (("crit_enter_leave", crit), ("splraise_splx", 6.0),
                                           ("onchip", on), ("offchip", off), ("flag", flag))]
    rows.append({"kind": "prim", "name": "mp_stack_push_pop_lf", "median": 30.0, "p99": 33.0})
    r.update(status="ok", oversubscribed=over, host_cores=2, cpu_model="Fake CPU 9000",
             tsc_hz=2_000_000_000, sched=sched, rows=rows)
    return r


def _data(runs, costs=()):
    return hosteddata.make_hosted_data(list(runs), list(costs),
                                         {"commit": "abc", "host_cpu_model": "Fake CPU 9000"})


def test_boot_labels_take_the_cautious_value():
    lab = hkernel.boot_labels({}, host_cores=2, smp=4)
    assert lab["sched"] == "best-effort scheduling" and lab["oversubscribed"] is True
    lab = hkernel.boot_labels({"sched": "SCHED_FIFO", "oversubscribed": False}, 2, 2)
    assert lab["sched"] == "SCHED_FIFO" and lab["oversubscribed"] is False
    # the boot object cannot talk a run out of being oversubscribed
    assert hkernel.boot_labels({"oversubscribed": False}, 2, 3)["oversubscribed"] is True


def test_oversubscribed_runs_stay_out_of_findings_and_comparisons():
    data = _data([_rec(s, 4, True) for s in schemes.HOSTED_SCHEMES])
    fs = hostedreport.hosted_findings(data)
    assert [f.verdict for f in fs] == ["not measurable here"]
    assert hostedreport.gap_table(data) is None
    assert hostedreport.mp_table(data) is None
    crit = hostedreport.crit_tables(data)
    assert len(crit) == 1 and "oversubscribed (4 vCPUs on 2 cores)" in crit[0].title
    # never a timing table: no figure of the run appears in it
    cells = {c for r in crit[0].rows for c in r[2:]}
    assert report.fmt_ticks(4.0) not in cells and cells == {"not a timing"}
    # the same figures from a pinned run are judged
    data = _data([_rec(schemes.DEFAULT_SCHEME, 2, False), _rec(schemes.DEFAULT_SCHEME, 4, True,
                                                               off=1.0)])
    fs = hostedreport.hosted_findings(data)
    assert [f.verdict for f in fs] == ["holds"] and "2 vCPUs" in fs[0].env
    # reversed figures are reversed: the verdict is computed
    fs = hostedreport.hosted_findings(_data([_rec(schemes.DEFAULT_SCHEME, 2, False, on=50.0,
                                                  off=5.0)]))
    assert [f.verdict for f in fs] == ["reversed"]


def test_hosted_crit_table_judges_the_optimistic_bar():
    """The hosted kernel's crit_enter+crit_leave against the flag of the same boot: the
    bar (within 2 ticks) is judged for the optimistic schemes only, from the figures."""
    runs = [_rec("spl-optim", 2, False, crit=2.9, flag=1.0),     # 1.9 above: met
            _rec("cli-optim", 2, False, crit=3.5, flag=1.0),     # 2.5 above: not met
            _rec("spl-pessim", 2, False, crit=9.0, flag=1.0)]    # not the bar's scheme
    (crit,) = hostedreport.crit_tables(_data(runs))
    by = {r[0]: r for r in crit.rows}
    assert by["spl-optim"][6:] == [report.fmt_ticks(1.0), report.fmt_ticks(1.9), "met"]
    assert by["cli-optim"][7:] == [report.fmt_ticks(2.5), "not met"]
    assert by["spl-pessim"][8] == hostedreport.DASH


def test_hosted_column_renders_from_fixture_records():
    costs = [{"program": "build/hosted-port/costs", "status": "ok", "log": "x.log",
              "facts": {"tsc_hz": 2_000_000_000, "cpu_model": "Fake CPU 9000", "cpus": 2},
              "rows": [{"kind": "prim", "name": n, "median": m, "p99": m * 2}
                       for n, m in (("hosted_soft_irq_pair", 1.5), ("hosted_sigmask_pair", 300.0),
                                    ("hosted_signal_self", 2000.0),
                                    ("hosted_signal_cross", 8000.0))],
              "sched": hosteddata.placement_sched(
                  ["hosted: 2 vCPUs on 2 host cores, pinned, SCHED_FIFO"])},
             {"program": "build/hosted-port/costs-hard", "status": "ok", "facts": {},
              "rows": [{"kind": "prim", "name": n, "median": m}
                       for n, m in (("hosted_hard_irq_pair", 310.0),
                                    ("hosted_sigmask_pair", 320.0))]}]
    runs = [_rec(s, 2, False, crit=float(i + 3)) for i, s in enumerate(schemes.HOSTED_SCHEMES)]
    data = _data(runs, costs)
    doc = document.results_document(None, None, None, data)
    titles = [t.title for t in doc.tables]
    crit = next(t for t in doc.tables if t.title.startswith("Table 5b, hosted kernel"))
    assert "hosted, Fake CPU 9000, 2 vCPUs, best-effort scheduling" in crit.title
    assert [r[0] for r in crit.rows] == list(schemes.HOSTED_SCHEMES)
    assert [r[2] for r in crit.rows] == [report.fmt_ticks(float(i + 3))
                                         for i in range(len(schemes.HOSTED_SCHEMES))]
    gap = next(t for t in doc.tables if t.title.startswith("Table 5, hosted"))
    ratio_1997 = f"{report.fmt_ratio(irqreport.CYCLES_1997['offchip'] / irqreport.CYCLES_1997['onchip'])}x"
    costs_row = next(r for r in gap.rows if r[0] == "costs (soft flag)")
    assert costs_row[4] == f"{report.fmt_ratio(300.0 / 1.5)}x" and costs_row[5] == ratio_1997
    assert "SCHED_FIFO" in costs_row[1]          # the program's placement line, not a guess
    hard_row = next(r for r in gap.rows if r[0] == "costs-hard (hard mask)")
    assert hard_row[2] == report.fmt_ticks(310.0) and hard_row[3] == report.fmt_ticks(320.0)
    sig = next(t for t in doc.tables if t.title.startswith("Signal delivery latency"))
    assert [r[1] for r in sig.rows] == ["hosted_signal_self", "hosted_signal_cross"]
    assert sig.rows[0][3] == "1000"              # 2000 ticks at 2 GHz = 1000 ns
    assert any(t.startswith("Massalin & Pu 1991 rows in kernel context") for t in titles)
    assert any(f.env.startswith("hosted") and f.paper == findings.SM for f in doc.findings)
    # every hosted table says hosted
    for t in doc.tables:
        assert "hosted" in t.title
    text = report.render_text(doc)
    assert "Hosted kernel runs" in text


def test_a_run_that_did_not_start_is_not_labelled_a_timing():
    rec = hosteddata.run_record(schemes.DEFAULT_SCHEME, 2, host_cores=2)
    rec["reason"] = "binary missing"
    label = hostedreport.run_label(rec)
    assert "did not run" in label and "oversubscribed" not in label
    assert hostedreport.timing_runs(_data([rec])) == []
    assert hosteddata.placement_sched(["hosted: 4 vCPUs on 2 host cores, oversubscribed, "
                                         "best-effort scheduling"]) == "best-effort scheduling"
    assert hosteddata.placement_sched(["no such line"]) is None


def test_run_irq_sweep_on_qemu_keys_every_run(tmp_path):
    """--smp 1,2 on qemu: every scheme boots at both counts; irq.json keys the runs by
    (platform, scheme, cpus); the tables index the first count, the sweep table shows all."""
    from test_tool_irq import make_fake
    repo = tmp_path / "repo"
    for s in schemes.SCHEMES:
        img = schemes.scheme_image(repo, s)
        img.parent.mkdir(parents=True, exist_ok=True)
        img.write_bytes(b"\x7fELF dummy")
    fake = make_fake(tmp_path)
    out = tmp_path / "results"
    p = run_cli("run", "irq", "--repo", str(repo), "--no-build", "--qemu", str(fake),
                "--out", str(out), "--schemes", "spl-optim,cli-optim", "--smp", "1,2",
                "--platform", "qemu")
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((out / "irq.json").read_text())
    keys = sorted((r["platform"], r["scheme"], r["requested_cpus"]) for r in data["schemes"])
    assert keys == sorted(("qemu", s, n) for s in ("spl-optim", "cli-optim") for n in (1, 2))
    seen = sorted(int(a[a.index("-smp") + 1]) for a in
                  (json.loads(f.read_text()) for f in tmp_path.glob("argv-*.json")))
    assert seen == [1, 1, 2, 2]
    ix = irqreport.IrqIndex(data)
    assert {ix.run(s)["requested_cpus"] for s in ("spl-optim", "cli-optim")} == {1}
    t = irqreport.sweep_table(data)
    assert sorted((r[1], r[2]) for r in t.rows) == sorted(
        (s, str(n)) for s in ("spl-optim", "cli-optim") for n in (1, 2))
    assert "Interrupt schemes by CPU count" in (out / "report.md").read_text()


def test_prims_sweep_table_has_a_column_per_cpus():
    def side(n):
        return {"platform": "qemu", "scheme": "spl-optim", "cpus": n, "requested_cpus": n,
                "side": {"env": "tcg"}, "rows": [{"name": "cli_sti", "median": 10.0 * n}]}
    t = report.sweep_table({"kernel_sweep": [side(1), side(4)]})
    assert t.headers[1:] == ["qemu spl-optim 1 CPUs", "qemu spl-optim 4 CPUs"]
    assert t.rows == [["cli_sti", report.fmt_ticks(10.0), report.fmt_ticks(40.0)]]
    assert "tcg" in t.title
    assert report.sweep_table({"kernel_sweep": [side(2)]}) is None


def test_host_switches_column_flags_a_preempted_run():
    from ksync import hostedreport as hr
    row = {"kind": "host_switches", "vcpus": 2, "involuntary": [0, 3], "voluntary": [4, 5]}
    assert hr.host_switches({"rows": [row]}) == "0,3 (preempted)"
    assert hr.host_switches({"rows": [dict(row, involuntary=[0, 0])]}) == "0,0"
    assert hr.host_switches({"rows": []}) == hr.DASH


def test_hosted_load_tables_render_the_hosted_schemes_only():
    """Small & Manley Tables 3/4/7 and the loss table from the hosted kernel's rows: titled
    'hosted kernel', no rows or columns for schemes the hosted port does not build, and
    an oversubscribed run contributes nothing."""
    from ksync import hostedreport as hr
    from ksync.report import render_text, Document

    def run(scheme, cpus=2, oversub=False, rate=1000):
        load = {"kind": "irq_load", "scheme": scheme, "workload": "andrew-local",
                "seconds": 1.0, "window_s": 0.1,
                "crit": {"n": rate, "per_s_mean": rate, "per_s_std": 10, "per_s_max": rate + 5,
                         "dur_mean": 2596},
                "interrupted": 10, "interrupted_per_s": 10.0, "interrupted_pct": 1.0}
        return {"platform": "hosted", "scheme": scheme, "cpus": cpus, "status": "ok",
                "oversubscribed": oversub, "host_cores": 2, "tsc_hz": 2596000000,
                "boot": {"tsc_hz": 2596000000}, "rows": [load]}
    data = {"runs": [run("spl-optim"), run("cli-pessim"), run("spl-pessim", 4, True, 7)],
            "costs": []}
    tables = irqreport.hosted_load_tables(data)
    assert tables and all("hosted kernel" in t.title for t in tables)
    text = render_text(Document("t", tables=tables))
    for absent in ("tpr-optim", "cli-spl-pessim", "spl-pessim"):
        assert absent not in text, absent        # not built on hosted / oversubscribed
    assert "spl-optim" in text and "cli-pessim" in text
    assert irqreport.hosted_load_tables({"runs": [run("spl-optim", 4, True)], "costs": []}) == []


def test_massalin_pu_kernel_code_against_the_master_lock():
    """The hosted kernel's lf_cost rows (a real boot of this port, AMD EPYC, TSC ticks):
    lock-free against the same operation under the master lock, per operation; only
    operations with both rows get a line; the spread is min..p99 of the one boot."""
    from ksync import findings
    r = _rec("spl-optim", 2, over=False)
    r["rows"] = [x for x in r["rows"] if x.get("kind") != "prim"]
    for name, lo, med, p99 in (("mp_counter_inc_lf", 5.48, 5.59, 5.69),
                               ("mp_counter_inc_mlock", 8.84, 8.94, 8.94),
                               ("mp_astack_push_pop_lf", 43.57, 43.67, 43.88),
                               ("mp_astack_push_pop_mlock", 43.0, 44.89, 44.99),
                               ("mp_stack_push_pop_lf", 25.29, 25.39, 25.70)):
        r["rows"].append({"kind": "prim", "name": name, "min": lo, "median": med, "p99": p99})
    fs = findings.mp_kernel_findings(_data([r]))
    got = {f.claim: f for f in fs}
    c = got["in kernel code, lock-free counter increment costs less than the same operation "
            "under the master lock"]
    assert c.verdict == "holds" and "spl-optim" in c.env and "mp_counter_inc_mlock" in c.note
    a = got["in kernel code, lock-free array stack push + pop costs less than the same "
            "operation under the master lock"]
    assert a.verdict == "within noise"          # 43.57..43.88 inside 43.0..44.99
    assert len(fs) == 2                         # the stack has no mlock row here
    # two CPUs (a real boot: lf 53.49..54.24 against the master lock 322.7..458.2)
    r["rows"] += [{"kind": "prim", "name": "mp_stack_push_pop_lf_2t", "min": 53.49,
                   "median": 53.84, "p99": 54.24},
                  {"kind": "prim", "name": "mp_stack_push_pop_mlock_2t", "min": 322.70,
                   "median": 409.52, "p99": 458.18}]
    two = [f for f in findings.mp_kernel_findings(_data([r])) if "two CPUs" in f.claim]
    assert len(two) == 1 and two[0].verdict == "holds"
    assert "mp_stack_push_pop_mlock_2t" in two[0].today
    # an oversubscribed run is no timing: no line
    assert findings.mp_kernel_findings(_data([_rec("spl-optim", 4, over=True)])) == []
    # and all_findings carries them
    assert any(f.claim == c.claim for f in document.all_findings(None, None, _data([r])))
