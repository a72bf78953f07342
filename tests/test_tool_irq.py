"""Host side of issue 4 (Small & Manley 1997 interrupt-masking schemes), without QEMU.

What is tested: the scheme names and image paths (tools/ksync/schemes.py), the IDE disk
image (disk.py) and its -drive on the QEMU command line, the `--scheme` / `--no-disk` /
`ksync run irq` / `ksync mkdisk` command line (cli.py, with a fake QEMU that prints
synthetic irq_* rows, docs/protocol.md section 5), the Table 2 cost model on hand-computed
inputs, the report tables (Tables 3-7, data loss) next to the 1997 figures, tolerance of
missing rows, and the loss-map figure (plots.py, matplotlib).  All kernel figures here are
synthetic: they test arithmetic and rendering, not the kernel.
"""
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import tool_env
from ksync import irqfigures
from ksync import irqdata
from ksync import disk, irqreport, qemu, report, schemes
from ksync.util import UsageError

DASH = report.DASH
HZ = 1_000_000_000          # 1 tick = 1 ns: keeps the hand arithmetic readable


def run_cli(*args, env=None, timeout=120):
    return subprocess.run([sys.executable, "-m", "ksync", *args], env=env or tool_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          timeout=timeout)


# ---------------------------------------------------------------------------------------
# synthetic kernel rows (docs/protocol.md section 5)

PRIM_TICKS = {"offchip": 500.0, "onchip": 50.0, "flag": 5.0, "cr8": 100.0}
CRIT_TICKS = {"spl-pessim": 510.0, "spl-optim": 6.0, "cli-pessim": 52.0, "cli-optim": 8.0,
              "cli-spl-pessim": 52.0, "tpr-pessim": 104.0, "tpr-optim": 6.5}
# workload -> (E crit/s, I interrupted/s)
LOAD = {"andrew-local": (10000.0, 100.0), "andrew-nfs": (20000.0, 50.0),
        "webstone": (5000.0, 200.0), "serial-115.2": (40000.0, 400.0)}


def prim_row(scheme, name, median):
    return {"kind": "irq_prim", "scheme": scheme, "name": name, "detail": "", "unit": "tsc_ticks",
            "min": median * 0.9, "median": median, "p99": median * 1.2, "max": median * 2,
            "empty": 1.0}


def load_row(scheme, workload, e, i, sync_pct):
    return {"kind": "irq_load", "scheme": scheme, "workload": workload, "seconds": 1.0,
            "window_s": 0.1, "target_per_s": e, "target_mean_us": 3.1,
            "crit": {"n": int(e), "per_s_mean": e, "per_s_std": e * 0.25, "per_s_max": e * 2,
                     "dur_mean": 3100.0, "dur_median": 3000.0, "dur_max": 9000.0,
                     "hist_edges": [0, 1000, 10000], "hist": [10, 20]},
            "interrupted": int(i), "interrupted_per_s": i, "interrupted_pct": 100.0 * i / e,
            "sync_ticks": 1, "busy_ticks": 1, "sync_pct": sync_pct,
            "deferred": 3, "replayed": 3,
            "masked": {"max": 100, "mean": 10, "hist_edges": [0, 100], "hist": [5]},
            "check_errors": 0}


def source_row(scheme, workload, source, level, irqs, mean):
    return {"kind": "irq_source", "scheme": scheme, "workload": workload, "source": source,
            "level": level, "irqs": irqs, "per_s": float(irqs),
            "handler": {"min": mean / 2, "mean": mean, "median": mean, "max": mean * 3,
                        "std": mean * 0.1},
            "latency": {"n": irqs, "mean": 800.0, "median": 700.0, "max": 5000.0,
                        "hist_edges": [0, 1000], "hist": [irqs]}, "deferred": 0}


def loss_row(scheme, baud, sectors, chars, lost):
    return {"kind": "irq_loss", "scheme": scheme, "baud": baud, "trigger": 8,
            "pio_sectors": sectors, "pio_handler_mean": 1000.0 * (sectors + 1),
            "chars": chars, "lost": lost, "packets": 1000, "dropped": sectors, "seconds": 1.0}


def scheme_rows(scheme):
    rows = [{"kind": "irq_scheme", "scheme": scheme, "cpus": 2}]
    for name, t in PRIM_TICKS.items():
        rows.append(prim_row(scheme, name, t))
    rows.append(prim_row(scheme, "crit_enter_leave", CRIT_TICKS[scheme]))
    rows.append(prim_row(scheme, "splraise_splx", 520.0))
    for w, (e, i) in LOAD.items():
        rows.append(load_row(scheme, w, e, i, sync_pct=0.5))
        rows.append(source_row(scheme, w, "disk", "bio", 300, 150000.0))
        rows.append(source_row(scheme, w, "serial", "tty", 1400, 2000.0))
    lossy = scheme.startswith("cli") and scheme != "cli-spl-pessim"
    for baud in (115200, 921600):
        for sectors in (0, 16):
            lost = 250 if (lossy and baud == 921600 and sectors == 16) else 0
            rows.append(loss_row(scheme, baud, sectors, 1000, lost))
    return rows


def record(scheme, rows=None, status="ok", env="tcg", reason=None):
    return {"scheme": scheme, "status": status, "reason": reason, "note": None,
            "log": f"build/logs/x-{scheme}.log", "env": env, "cpus": 2, "tsc_hz": HZ,
            "tsc_source": "pit", "elapsed": 12.5,
            "boot": {"kind": "boot", "tsc_hz": HZ}, "rows": scheme_rows(scheme) if rows is None
            else rows}


def irq_data(records=None, env="tcg"):
    recs = records if records is not None else [record(s, env=env) for s in schemes.SCHEMES]
    meta = {"timestamp": "2026-01-01T00:00:00Z", "commit": "abc123", "host_cpu_model": "X",
            "host_cpus": 2, "qemu_version": "7.2.22"}
    return irqdata.make_irq_data(recs, meta, {"smp": 2, "irq_seconds": 1.0,
                                                "irq_quick": False, "disk": True})


def table(tables, prefix):
    return next(t for t in tables if t.title.startswith(prefix))


def by_first(t):
    return {r[0]: r for r in t.rows}


# ---------------------------------------------------------------------------------------
# schemes


def test_scheme_names_and_images(tmp_path):
    # the paper's four, its proposal and the two CR8 schemes, from kernel/spl/schemes.txt
    paper = {"spl-pessim", "spl-optim", "cli-pessim", "cli-optim"}     # Table 1
    assert paper | {"cli-spl-pessim"} | {"tpr-pessim", "tpr-optim"} == set(schemes.SCHEMES)
    assert schemes.DEFAULT_SCHEME == "spl-optim"
    assert schemes.OPTIMISTIC == tuple(s for s in schemes.SCHEMES if s.endswith("-optim"))
    assert schemes.scheme_image(tmp_path, "spl-optim") == tmp_path / "build/kernel/ksync.elf32"
    assert schemes.scheme_elf(tmp_path, "spl-optim") == tmp_path / "build/kernel/ksync.elf"
    assert schemes.scheme_image(tmp_path, None) == tmp_path / "build/kernel/ksync.elf32"
    assert schemes.scheme_image(tmp_path, "cli-pessim") == \
        tmp_path / "build/kernel-cli-pessim/ksync.elf32"
    assert schemes.scheme_elf(tmp_path, "tpr-optim") == tmp_path / "build/kernel-tpr-optim/ksync.elf"
    assert schemes.make_vars(None) == {}
    assert schemes.make_vars("cli-optim") == {"SCHEME": "cli-optim"}


def test_check_scheme_error_lists_names():
    with pytest.raises(UsageError) as e:
        schemes.check_scheme("x")
    assert str(e.value) == f"unknown scheme 'x' ({', '.join(schemes.SCHEMES)})"
    assert schemes.parse_schemes("cli-optim,spl-pessim,cli-optim") == ["cli-optim", "spl-pessim"]
    assert schemes.parse_schemes("all") == list(schemes.SCHEMES)
    with pytest.raises(UsageError):
        schemes.parse_schemes("spl-optim,,cli-optim")


@pytest.mark.parametrize("args", [["test", "--scheme", "nonsense"],
                                  ["boot", "--scheme", "nonsense"],
                                  ["run", "irq", "--schemes", "spl-optim,nonsense"]])
def test_bad_scheme_exits_2_with_names(args):
    p = run_cli(*args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ksync: error: ")
    assert "unknown scheme 'nonsense'" in lines[0]
    assert ", ".join(schemes.SCHEMES) in lines[0]
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("args,contains", [
    (["run", "everything"], "invalid choice"),
    (["run", "irq", "--irq-seconds", "0"], "--irq-seconds"),
    (["run", "irq", "--irq-seconds", "1.23456"], "--irq-seconds"),
    (["run", "irq", "--irq-seconds", "soon"], "--irq-seconds"),
    (["mkdisk", "x.img", "--mib", "0"], "--mib"),
])
def test_bad_irq_options(args, contains):
    p = run_cli(*args)
    assert p.returncode == 2 and contains in p.stderr and "Traceback" not in p.stderr


def test_irq_options_rejected_for_prims(tmp_path):
    p = run_cli("run", "prims", "--irq-quick", "--repo", str(tmp_path), "--qemu",
                sys.executable)
    assert p.returncode == 2 and "ksync run irq" in p.stderr


def test_scheme_with_iso_rejected(tmp_path):
    p = run_cli("test", "--iso", "--scheme", "cli-pessim", "--no-build", "--repo",
                str(tmp_path), "--qemu", sys.executable)
    assert p.returncode == 2 and "--iso" in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------------
# disk


def test_disk_pattern(tmp_path):
    img = tmp_path / "d" / "disk.img"
    assert disk.ensure_disk(img, mib=1) is True
    data = img.read_bytes()
    assert len(data) == 1024 * 1024
    for n in (0, 1, 2, 1000, 2047):
        sector = data[n * 512:(n + 1) * 512]
        assert sector == struct.pack("<Q", n) * 64
    assert struct.unpack_from("<Q", data, 5 * 512 + 8 * 63) == (5,)
    assert disk.check_disk(img, 1, full=True)
    assert disk.ensure_disk(img, mib=1) is False          # already right: left alone
    assert disk.ensure_disk(img, mib=2) is True           # wrong size: rewritten
    assert img.stat().st_size == 2 * 1024 * 1024
    with open(img, "r+b") as f:                           # damaged sector 1: repaired
        f.seek(512)
        f.write(b"\0" * 8)
    assert disk.ensure_disk(img, mib=2) is True
    assert disk.check_disk(img, 2, full=True)


def test_mkdisk_command(tmp_path):
    img = tmp_path / "x.img"
    p = run_cli("mkdisk", str(img), "--mib", "1")
    assert p.returncode == 0, p.stderr
    assert "wrote" in p.stdout and "2048 sectors" in p.stdout
    assert disk.check_disk(img, 1, full=True)
    p = run_cli("mkdisk", str(img), "--mib", "1")
    assert p.returncode == 0 and "left alone" in p.stdout


def test_qemu_command_drive():
    cfg = qemu.BootConfig(repo=Path("/r"), disk=Path("/r/build/disk.img"),
                          qemu_args=["-machine", "acpi=off"])
    cmd = qemu.qemu_command(cfg, "qemu", "tcg")
    i = cmd.index("-drive")
    assert cmd[i + 1] == \
        "if=ide,file=/r/build/disk.img,format=raw,index=0,media=disk,snapshot=on"
    assert cmd[-2:] == ["-machine", "acpi=off"]         # extra args still last
    assert "-drive" not in qemu.qemu_command(qemu.BootConfig(repo=Path("/r")), "qemu", "tcg")
    odd = qemu.BootConfig(repo=Path("/r"), disk=Path("/a,b/disk.img"))
    assert "file=/a,,b/disk.img," in qemu.qemu_command(odd, "qemu", "tcg")[-1]


def test_qemu_command_scheme_image():
    cfg = qemu.BootConfig(repo=Path("/r"), scheme="tpr-pessim")
    cmd = qemu.qemu_command(cfg, "qemu", "tcg")
    assert cmd[cmd.index("-kernel") + 1] == "/r/build/kernel-tpr-pessim/ksync.elf32"
    cfg = qemu.BootConfig(repo=Path("/r"), scheme="spl-optim")
    cmd = qemu.qemu_command(cfg, "qemu", "tcg")
    assert cmd[cmd.index("-kernel") + 1] == "/r/build/kernel/ksync.elf32"


FAKE_QEMU = '''#!{python}
import json, os, sys
if sys.argv[1:2] == ["--version"]:
    print("QEMU emulator version 9.9.9 (fake)"); sys.exit(0)
argv = sys.argv[1:]
spec = json.loads({spec!r})
with open(os.path.join(spec["dir"], "argv-%d.json" % os.getpid()), "w") as f:
    json.dump(argv, f)
kernel = argv[argv.index("-kernel") + 1] if "-kernel" in argv else ""
d = os.path.basename(os.path.dirname(kernel))
scheme = d[len("kernel-"):] if d.startswith("kernel-") else "spl-optim"
print("ktap: KTAP version 1")
print('KSYNC {{"kind":"boot","cpus":2,"cpus_online":2,"tsc_hz":1000000000,"tsc_source":"pit"}}')
print("ktap: 1..1")
if scheme in spec.get("fail", []):
    print("ktap: not ok 1 irq_load"); sys.exit(35)
for row in spec["rows"].get(scheme, []):
    print("KSYNC " + json.dumps(row))
print("ktap: ok 1 irq_load")
sys.exit(33)
'''


def make_fake(tmp_path, fail=(), rows=None):
    path = tmp_path / "fake-qemu"
    spec = {"dir": str(tmp_path), "fail": list(fail),
            "rows": rows or {s: scheme_rows(s) for s in schemes.SCHEMES}}
    path.write_text(FAKE_QEMU.format(python=sys.executable, spec=json.dumps(spec)))
    path.chmod(0o755)
    return path


@pytest.fixture
def irq_repo(tmp_path):
    r = tmp_path / "repo"
    for s in schemes.SCHEMES:
        img = schemes.scheme_image(r, s)
        img.parent.mkdir(parents=True, exist_ok=True)
        img.write_bytes(b"\x7fELF dummy")
    return r


def argvs(tmp_path):
    return [json.loads(p.read_text()) for p in sorted(tmp_path.glob("argv-*.json"))]


def test_test_command_scheme_and_disk(irq_repo, tmp_path):
    fake = make_fake(tmp_path)
    p = run_cli("test", "--repo", str(irq_repo), "--no-build", "--qemu", str(fake),
                "--scheme", "cli-pessim")
    assert p.returncode == 0, p.stdout + p.stderr
    (argv,) = argvs(tmp_path)
    assert argv[argv.index("-kernel") + 1] == str(irq_repo / "build/kernel-cli-pessim/ksync.elf32")
    disk_img = irq_repo / "build/disk.img"
    assert argv[argv.index("-drive") + 1] == \
        f"if=ide,file={disk_img},format=raw,index=0,media=disk,snapshot=on"
    assert disk.check_disk(disk_img, disk.DEFAULT_MIB, full=True)
    assert list((irq_repo / "build/logs").glob("*-test-cli-pessim-smp2-tcg.log"))


def test_no_disk(irq_repo, tmp_path):
    fake = make_fake(tmp_path)
    p = run_cli("boot", "--mode", "bench", "--repo", str(irq_repo), "--no-build", "--qemu",
                str(fake), "--no-disk")
    assert p.returncode == 0, p.stdout + p.stderr
    (argv,) = argvs(tmp_path)
    assert "-drive" not in argv
    assert not (irq_repo / "build/disk.img").exists()


def test_user_drive_replaces_default_disk(irq_repo, tmp_path):
    """A disk given with --qemu-arg (as docs told before --no-disk existed) is the only one:
    two drives at IDE index 0 would make QEMU fail."""
    fake = make_fake(tmp_path)
    mine = tmp_path / "mine.img"
    p = run_cli("test", "--repo", str(irq_repo), "--no-build", "--qemu", str(fake),
                "--qemu-arg=-drive", f"--qemu-arg=if=ide,file={mine},format=raw")
    assert p.returncode == 0, p.stdout + p.stderr
    (argv,) = argvs(tmp_path)
    assert argv.count("-drive") == 1 and argv[-1] == f"if=ide,file={mine},format=raw"
    assert not (irq_repo / "build/disk.img").exists()
    assert qemu.user_gives_disk(["-hda", "x"]) and qemu.user_gives_disk(["-drive=file=x"])
    assert not qemu.user_gives_disk(["-machine", "acpi=off"])


def test_missing_scheme_image(tmp_path):
    r = tmp_path / "repo"
    (r / "build/kernel").mkdir(parents=True)
    (r / "build/kernel/ksync.elf32").write_bytes(b"x")
    p = run_cli("test", "--repo", str(r), "--no-build", "--qemu", str(make_fake(tmp_path)),
                "--scheme", "tpr-optim")
    assert p.returncode == 2
    assert "build/kernel-tpr-optim/ksync.elf32 not found" in p.stderr
    assert "make SCHEME=tpr-optim kernel" in p.stderr


def test_build_uses_scheme_variable(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    (r / "Makefile").write_text("kernel:\n\t@echo \"SCHEME is [$(SCHEME)]\" >&2; exit 1\n")
    p = run_cli("test", "--repo", str(r), "--qemu", str(make_fake(tmp_path)), "--scheme",
                "cli-optim")
    assert p.returncode == 1
    assert "SCHEME is [cli-optim]" in p.stderr
    assert "build failed: make SCHEME=cli-optim kernel" in p.stderr


def test_run_irq_end_to_end(irq_repo, tmp_path):
    fake = make_fake(tmp_path)
    out = tmp_path / "results"
    p = run_cli("run", "irq", "--repo", str(irq_repo), "--no-build", "--qemu", str(fake),
                "--out", str(out), "--irq-seconds", "0.5", "--irq-quick", "--smp", "1",
                "--append", "irq_seconds=2")
    assert p.returncode == 0, p.stdout + p.stderr
    runs = argvs(tmp_path)
    assert len(runs) == len(schemes.SCHEMES)
    kernels = sorted(a[a.index("-kernel") + 1] for a in runs)
    assert kernels == sorted(str(schemes.scheme_image(irq_repo, s)) for s in schemes.SCHEMES)
    for a in runs:
        # our words first, the user's --append last (the kernel takes the last one)
        assert a[a.index("-append") + 1] == \
            "mode=bench filter=irq* set=default irq_seconds=0.5 irq_loss_repeats=3 " \
            "irq_serial_bits=10 irq_quick=1 irq_seconds=2"
        assert "-drive" in a and a[a.index("-smp") + 1] == "1"
    data = json.loads((out / "irq.json").read_text())
    assert data["schema"] == irqdata.SCHEMA
    assert [r["scheme"] for r in data["schemes"]] == list(schemes.SCHEMES)
    assert all(r["status"] == "ok" and r["tsc_hz"] == HZ for r in data["schemes"])
    assert data["options"]["irq_seconds"] == 0.5 and data["options"]["irq_quick"] is True
    row = data["schemes"][0]["rows"][1]
    assert row["env"] == "tcg" and row["scheme"] == "spl-pessim"
    assert (out / "lossmap.png").read_bytes().startswith(PNG_SIGNATURE)
    assert (out / "lossmap.svg").read_text().lstrip().startswith("<?xml")
    assert "Table 3: critical sections per second [tcg, 2 CPUs]" in " ".join(p.stdout.split())
    html = (out / "report.html").read_text()
    assert '<img src="lossmap.png"' in html
    # the terminal names the figures it wrote, under their tables
    assert "figure: lossmap.png" in p.stdout
    assert not (out / "prims.json").exists()
    # ksync report re-renders the irq tables from irq.json
    md = (out / "report.md").read_text()
    (out / "report.md").unlink()
    (out / "lossmap.png").unlink()
    r = run_cli("report", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "report.md").read_text() == md
    assert (out / "lossmap.png").exists()
    assert "Table 6: synchronization overhead" in " ".join(r.stdout.split())
    assert "figure: lossmap.png" in r.stdout


def test_run_irq_keeps_going_after_a_failure(irq_repo, tmp_path):
    rows = {s: scheme_rows(s) for s in schemes.SCHEMES}
    rows["tpr-optim"] = [dict(r, scheme="cli-optim") for r in rows["tpr-optim"]]
    fake = make_fake(tmp_path, fail=["cli-optim"], rows=rows)
    out = tmp_path / "results"
    (schemes.scheme_image(irq_repo, "tpr-pessim")).unlink()
    p = run_cli("run", "irq", "--repo", str(irq_repo), "--no-build", "--qemu", str(fake),
                "--out", str(out), "--schemes", "spl-optim,cli-optim,tpr-pessim,tpr-optim")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "3 of 4 scheme(s) failed: cli-optim, tpr-pessim, tpr-optim" in p.stderr
    data = json.loads((out / "irq.json").read_text())
    st = {r["scheme"]: r for r in data["schemes"]}
    assert st["spl-optim"]["status"] == "ok"
    assert st["cli-optim"]["status"] == "failed"
    assert "kernel reported failure (exit 35)" in st["cli-optim"]["reason"]
    assert st["cli-optim"]["log"].endswith(".log")
    assert "ksync.elf32 not found" in st["tpr-pessim"]["reason"]
    assert "expected tpr-optim" in st["tpr-optim"]["reason"]
    status = by_first(table(irqreport.irq_tables(data), "Interrupt-scheme runs"))
    assert status["cli-optim"][1] == "failed" and "(not used)" in status["cli-optim"][2]
    assert "log build/logs/" in status["cli-optim"][7] or "log " in status["cli-optim"][7]
    assert (out / "report.md").exists()


def test_report_with_prims_and_irq(tmp_path):
    meta = {"timestamp": "t", "commit": "c", "host_cpu_model": "m", "host_cpus": 2,
            "qemu_version": "q"}
    prims = report.make_prims_data([{"kind": "prim", "name": "cli_sti", "median": 40.0}], [],
                                   {"env": "tcg", "cpus": 2, "tsc_hz": HZ}, None, meta)
    (tmp_path / "prims.json").write_text(json.dumps(prims))
    (tmp_path / "irq.json").write_text(json.dumps(irq_data()))
    p = run_cli("report", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "Primitive costs" in out and "Table 7: interrupt sources" in out
    md = (tmp_path / "report.md").read_text()
    assert md.startswith("# ksync results: 1990s synchronization papers re-measured")
    assert "](lossmap.png)" in md and "(lossmap.svg)" in md
    # only irq.json: still renders; a broken irq.json is an error for `ksync report`
    (tmp_path / "prims.json").unlink()
    assert run_cli("report", "--out", str(tmp_path)).returncode == 0
    (tmp_path / "irq.json").write_text("{")
    p = run_cli("report", "--out", str(tmp_path))
    assert p.returncode == 2 and "irq.json" in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------------------------------
# the model (Table 2) on hand-computed inputs


def test_model_arithmetic():
    c = {"offchip": 500e-9, "onchip": 50e-9, "flag": 5e-9, "cr8": 100e-9}
    E, I = 10000.0, 100.0
    # E x off = 1e4 * 5e-7 s = 5e-3 s per second = 0.5 %
    assert irqreport.model_pct("spl-pessim", E, I, c) == pytest.approx(0.5)
    # E x flag + I x off = 5e-5 + 5e-5 = 1e-4 -> 0.01 %
    assert irqreport.model_pct("spl-optim", E, I, c) == pytest.approx(0.01)
    assert irqreport.model_pct("cli-pessim", E, I, c) == pytest.approx(0.05)
    # E x flag + I x on = 5e-5 + 5e-6 -> 0.0055 %
    assert irqreport.model_pct("cli-optim", E, I, c) == pytest.approx(0.0055)
    assert irqreport.model_pct("cli-spl-pessim", E, I, c) == \
        irqreport.model_pct("cli-pessim", E, I, c)
    assert irqreport.model_pct("tpr-pessim", E, I, c) == pytest.approx(0.1)
    # E x flag + I x cr8 = 5e-5 + 1e-5 -> 0.006 %
    assert irqreport.model_pct("tpr-optim", E, I, c) == pytest.approx(0.006)
    # pessimistic formulas do not need I; optimistic ones do
    assert irqreport.model_pct("spl-pessim", E, None, c) == pytest.approx(0.5)
    assert irqreport.model_pct("spl-optim", E, None, c) is None
    assert irqreport.model_pct("tpr-pessim", E, I, irqreport.COSTS_1997) is None
    assert irqreport.model_pct("nonsense", E, I, c) is None


def test_model_reproduces_1997_table6():
    """All 16 cells of the paper's Table 6 from its own inputs: E from Table 3 in every
    row, I from Table 4, Table 5's printed µs (2.5 / 0.18 / 0.05), at the paper's printed
    precision (one decimal). Two cells match only with the paper's rounding (to hundredths
    first, then tenths): cli-pessim Andrew local 0.649 % -> 0.65 -> 0.7 and spl-optim
    WebStone 0.247 % -> 0.25 -> 0.3; rounded once they would print 0.6 and 0.2."""
    assert irqreport.COSTS_1997 == pytest.approx({"offchip": 2.5e-6, "onchip": 0.18e-6,
                                                  "flag": 0.05e-6})
    once_off = []
    for s, printed in irqreport.T6_1997.items():
        for i, w in enumerate(irqreport.WORKLOADS):
            v = irqreport.model_1997(s, w)
            assert irqreport.paper_round(v) == printed[i], (s, w, v)
            if irqreport.round_half_up(v, 1) != printed[i]:
                once_off.append((s, w))
    assert sorted(once_off) == [("cli-pessim", "andrew-local"), ("spl-optim", "webstone")]
    # the inputs by hand: 36048 x 2.5 µs = 0.09012 s per second; 36048 x 0.18 µs
    assert irqreport.model_1997("spl-pessim", "andrew-local") == pytest.approx(9.012)
    assert irqreport.model_1997("cli-pessim", "andrew-local") == pytest.approx(0.648864)
    # spl-optim WebStone: Table 3's E 34468 x 0.05 + Table 4's I 300 x 2.5 = 2473.4 µs
    assert irqreport.model_1997("spl-optim", "webstone") == pytest.approx(0.24734)
    # with Table 4's E (33890) it would be 0.24445 %, which no rounding prints as 0.3
    alt = irqreport.model_pct("spl-optim", 33890, 300, irqreport.COSTS_1997)
    assert alt == pytest.approx(0.24445) and irqreport.paper_round(alt) == 0.2
    assert irqreport.round_half_up(0.25, 1) == 0.3 and irqreport.round_half_up(0.649, 2) == 0.65


def test_table6_repro_table():
    t = irqreport.table6_repro()
    rows = by_first(t)
    assert set(rows) == set(irqreport.T6_1997)
    assert rows["spl-pessim"][1] == "E (T3) x 2.5 µs"
    assert rows["spl-optim"][1] == "E (T3) x 0.05 µs + I (T4) x 2.5 µs"
    assert rows["spl-pessim"][2] == "9.012% -> 9.0% (9.0%)"
    assert rows["spl-optim"][4] == "0.247% -> 0.3% (0.3%)"
    assert not any("MISMATCH" in c for r in t.rows for c in r)
    note = " ".join(t.notes_above)
    assert "cli-pessim Andrew local 0.649% -> 0.65 -> 0.7" in note
    assert "spl-optim WebStone 0.247% -> 0.25 -> 0.3" in note


def parts_record():
    """spl-optim, 1 s busy at 1 GHz, flag 5 / offchip 500 ticks, E 10000, I 100, and a sync
    total that is the model, every term and 50000 ticks nobody explains."""
    rows = [prim_row("spl-optim", "flag", 5.0), prim_row("spl-optim", "offchip", 500.0)]
    ld = load_row("spl-optim", "andrew-local", 10000.0, 100.0, sync_pct=0.0776)
    ld["busy_ticks"] = 1_000_000_000
    ld["sync_ticks"] = 776_000
    ld["sync_parts"] = {
        "pair": 20, "pair_load_median": 25, "pair_load_n": 10000, "pair_load_sum": 250000,
        "quiet_n": 9900, "quiet_ticks": 9900 * 60, "intr_n": 100,
        "intr_enter_ticks": 100 * 50, "intr_leave_ticks": 600000,
        "handlers_in_enter": 0, "handlers_in_leave": 150, "clamped_ticks": 1000,
        "cal_quiet": 40, "cal_enter": 15, "cal_leave": 25,
        "handlers_by_source": {"clock": 10, "disk": 100, "serial": 0, "net": 20, "soft": 20},
        "cal_by_source": {"clock": 0, "disk": 1000, "serial": 500, "net": 800, "soft": 100},
        "cal_n_by_source": {"clock": 0, "disk": 90, "serial": 120, "net": 80, "soft": 1000}}
    rows.append(ld)
    return record("spl-optim", rows=rows)


def test_table6_parts_arithmetic():
    ix = irqreport.IrqIndex(irq_data([parts_record()]))
    d = irqreport.sync_parts(ix, "spl-optim", "andrew-local")
    # model: 10000 x 5 + 100 x 500 = 100000 ticks of 1e9 = 0.01 %
    assert d["model"] == pytest.approx(0.01)
    assert d["measured"] == pytest.approx(0.0776)
    assert d["counts"] == pytest.approx(0.0, abs=1e-12)          # exact counts = the model's
    assert d["code"] == pytest.approx(10000 * (40 - 5) / 1e7)       # 0.035 pp
    assert d["load"] == pytest.approx(9900 * (60 - 40 - 2 * 5) / 1e7)
    # interrupted sections' crit_enter: 50 ticks each against 15 + the pair's extra 5
    assert d["enter"] == pytest.approx(100 * (50 - 15 - 5) / 1e7)
    # the clock has no calibration: charged at the serial's 500; less the model's I x off
    dispatch = 10 * 500 + 100 * 1000 + 20 * 800 + 20 * 100 - 100 * 500
    assert d["dispatch"] == pytest.approx(dispatch / 1e7)
    assert d["timing"] == pytest.approx(2 * 10000 * 5 / 1e7)
    assert d["clamp"] == pytest.approx(1000 / 1e7)
    # the residual is the planted 50000 ticks, not zero by construction
    assert d["residual"] == pytest.approx(50000 / 1e7)
    t = table(irqreport.irq_tables(irq_data([parts_record()])), "Table 6d")
    row = t.rows[0]
    assert row[:2] == ["spl-optim", "Andrew local"]
    assert row[-2] == "+0.005"
    assert row[-1] == "7.4%"                                        # 0.005 of a 0.0676 pp gap
    assert "the largest part is (i) code (0.035 pp" in t.notes_below[0]
    units = by_first(table(irqreport.irq_tables(irq_data([parts_record()])), "Table 6e"))
    assert "disk 100 x 1000" in units["spl-optim"][10]
    assert "clock 10 x 500.0" in units["spl-optim"][10]


def test_table6_parts_uncalibrated_source_goes_to_the_residual():
    rec = parts_record()
    sp = next(r for r in rec["rows"] if r["kind"] == "irq_load")["sync_parts"]
    sp["cal_n_by_source"]["disk"] = 0               # the disk calibration found no sample
    d = irqreport.sync_parts(irqreport.IrqIndex(irq_data([rec])), "spl-optim", "andrew-local")
    assert d["units"]["uncalibrated"] == 100
    assert d["residual"] == pytest.approx((50000 + 100 * 1000) / 1e7)


def test_table6_parts_missing_inputs_leave_the_row_out():
    rec = parts_record()
    del next(r for r in rec["rows"] if r["kind"] == "irq_load")["sync_parts"]["cal_enter"]
    ix = irqreport.IrqIndex(irq_data([rec]))
    assert irqreport.sync_parts(ix, "spl-optim", "andrew-local") is None
    # no row with its parts (or a kernel before them): no Table 6d, not an exception
    for data in (irq_data([rec]), irq_data()):
        titles = [t.title for t in irqreport.irq_tables(data)]
        assert not any(t.startswith(("Table 6d", "Table 6e")) for t in titles)
        assert any(t.startswith("Table 6:") for t in titles)


# ---------------------------------------------------------------------------------------
# tables


def test_tables_have_1997_numbers_and_env():
    tables = irqreport.irq_tables(irq_data())
    text = " ".join(report.render_text(report.Document("t", tables=tables)).split())
    for n in ("36048 (60%)", "72521", "47762 (0.05%)", "31904 (69%)", "300 (0.9%)",
              "1997: ide disk", "1519 (7%)", "2003", "1997: serial-115 (64K)", "1410",
              "1997: ethernet-large", "487 (8%)", "1194", "304", "0.18", "11.9%"):
        assert n in text, n
    for t in tables[1:]:
        assert "[tcg, 2 CPUs]" in t.title or t.title.startswith(("Table 6c", "Table 6r")), \
            t.title
    assert "not hardware costs" in text


def test_table3_and_4_cells():
    tables = irqreport.irq_tables(irq_data())
    t3 = by_first(table(tables, "Table 3"))
    # cli-pessim, andrew-local: E 10000, std 25 %, max 20000, dur 3100 ticks at 1 GHz = 3.1 µs
    assert t3["Andrew local"][1:4] == ["10000 (25%)", "20000", "3.1"]
    assert t3["Andrew local"][4:] == ["36048 (60%)", "72521", "3.1"]
    t4 = by_first(table(tables, "Table 4:"))
    # spl-optim, webstone: 5000/s, 200 interrupted/s = 4 %
    assert t4["WebStone"][1:3] == ["5000 (25%)", "200 (4%)"]
    assert t4["WebStone"][3:] == ["33890 (33%)", "300 (0.9%)"]
    t4b = by_first(table(tables, "Table 4b"))
    assert t4b["tpr-optim"][1] == "1% (100/s)"


def test_table5_cells_and_bars():
    tables = irqreport.irq_tables(irq_data())
    t5 = by_first(table(tables, "Table 5:"))
    off = t5["off-chip (8259A IMR write + restore)"]
    assert off[1] == "500.0" and off[3] == "500" and off[4] == "304" and off[5] == "2.5"
    assert t5["CR8 (raise + restore)"][4] == DASH
    t5b = table(tables, "Table 5b")
    rows = by_first(t5b)
    assert rows["spl-optim"][5] == "1.00" and rows["spl-optim"][6] == "met"      # 6 - 5
    assert rows["cli-optim"][5] == "3.00" and rows["cli-optim"][6] == "not met"  # 8 - 5
    assert rows["tpr-optim"][5] == "1.50" and rows["tpr-optim"][6] == ""
    assert rows["cli-pessim"][5].startswith("n/a")
    note = t5b.notes_below[0]
    assert "tpr-pessim / cli-pessim crit_enter_leave = 2" in note   # 104 / 52
    assert "tcg" in note and "not judged" in note


def test_tpr_bar_judged_under_kvm():
    note = irqreport.tpr_cli_verdict(irqreport.IrqIndex(irq_data(env="kvm")))
    assert "= 2 " in note and "bar met" in note


def test_table6_model_measured_and_1997():
    tables = irqreport.irq_tables(irq_data())
    t6 = table(tables, "Table 6:")
    rows = by_first(t6)
    # spl-pessim andrew-local: 10000 x 500 ns = 0.5 %; measured 0.5 % -> deviation 0
    assert rows["spl-pessim"][2] == "0.5% / 0.5% (+0%)"
    assert rows["spl-pessim"][3] == "9.0%"
    # spl-optim andrew-local: 0.01 % model; measured 0.5 % -> +4900 %
    assert rows["spl-optim"][2] == "0.01% / 0.5% (+4900%)"
    assert rows["tpr-pessim"][3] == DASH                   # no 1997 figure
    t6b = by_first(table(tables, "Table 6b"))
    # 1997 costs as the paper printed them: 10000 x 2.5 µs = 2.5 %
    assert t6b["spl-pessim"][1] == "2.5%"
    assert t6b["tpr-pessim"][1] == DASH
    rank = by_first(table(tables, "Table 6c"))
    today = rank["Andrew local"][1].split(" < ")
    assert today[0] == "cli-optim" and today[-1] == "spl-pessim" and "tpr-optim" in today
    old = rank["Andrew local"][2].split(" < ")
    assert "tpr-optim" not in old and old[-1] == "spl-pessim"
    assert rank["Andrew local"][4] == "spl-optim < cli-optim < cli-pessim < spl-pessim"


def test_table7_and_loss():
    tables = irqreport.irq_tables(irq_data())
    t7 = by_first(table(tables, "Table 7:"))
    disk_row = t7["Andrew local: disk (bio)"]
    # 300 irqs in 1 s, mean 150000 ticks = 150 µs (std 10 %), min 75, max 450, latency 5 µs
    assert disk_row[1:] == ["1", "300", "300", "150 (10%)", "75", "150", "450", "5"]
    t7b = by_first(table(tables, "Table 7b"))
    assert t7b["Serial 115.2: serial"][1:] == ["2"] * 7
    loss = by_first(table(tables, "Data loss"))
    # worst case = 921600 baud, 16 sectors; cli-pessim lost 250 of 1000
    assert loss["cli-pessim"][1:8] == ["921600", "16", "17", "1000", "250", "20%", "1000"]
    assert loss["spl-optim"][6] == "0%"
    lm = table(tables, "Loss map")
    rows = [r for r in lm.rows if r[0] == "cli-pessim"]
    assert rows == [["cli-pessim", "115200", "0%", "0%"], ["cli-pessim", "921600", "0%", "20%"]]


def test_missing_rows_give_dashes():
    recs = [record("spl-optim", rows=[{"kind": "irq_scheme", "scheme": "spl-optim"},
                                      {"kind": "irq_load", "workload": "webstone",
                                       "crit": "garbage", "interrupted_per_s": "x"},
                                      {"kind": "irq_prim", "name": "flag", "median": None},
                                      {"kind": "irq_loss", "baud": 9600},
                                      {"kind": "irq_source"}, "not a dict"]),
            record("cli-pessim", status="failed", reason="timeout after 120s"),
            {"scheme": 42}, "junk"]
    data = irq_data(recs)
    tables = irqreport.irq_tables(data)
    text = report.render_text(report.Document("t", tables=tables))
    assert "Table 3" in text and "Table 7" in text
    t3 = by_first(table(tables, "Table 3"))
    assert t3["Andrew local"][1:4] == [DASH, DASH, DASH]      # cli-pessim failed: unused
    t6 = by_first(table(tables, "Table 6:"))
    assert t6["spl-optim"][2] == f"{DASH} / {DASH} ({DASH})"
    status = by_first(table(tables, "Interrupt-scheme runs"))
    assert status["cli-pessim"][1] == "failed" and "timeout" in status["cli-pessim"][7]
    # nothing at all
    empty = irqreport.irq_tables(irq_data([]))
    assert all(isinstance(t, report.Table) for t in empty)
    assert report.render_html(irqreport.irq_document(irq_data([])))
    # not even a schemes list
    assert irqreport.irq_tables({})


# ---------------------------------------------------------------------------------------
# the loss-map figure (matplotlib)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_lossmap_figure_one_panel_per_scheme(tmp_path):
    from ksync import plots
    figs = irqfigures.lossmap_figure(irqreport.IrqIndex(irq_data()), tmp_path)
    assert [(f.src, f.svg) for f in figs] == [("lossmap.png", "lossmap.svg")]
    assert (tmp_path / "lossmap.png").read_bytes().startswith(PNG_SIGNATURE)
    svg = (tmp_path / "lossmap.svg").read_text()
    # one panel per scheme, titled with its name; the axes and the colour bar labelled
    for s in schemes.SCHEMES:
        assert f"<!-- {s} -->" in svg, s
    for label in ("serial line rate (kbit/s)", "sectors per PIO interrupt",
                  "characters lost (%)"):
        assert f"<!-- {label} -->" in svg, label
    # cli-pessim's worst cell (921.6 kbit/s, 16 sectors) lost 250 of 1250: 20 % written in it
    assert "<!-- 20 -->" in svg
    # no data: no figure
    assert irqfigures.lossmap_figure(irqreport.IrqIndex(irq_data([])), tmp_path / "x") == []


def test_hosted_fast_path_table_judges_the_bar():
    """Table 5c: the optimistic schemes' hosted crit cost against the flag and the
    nestable-flag floor; a failed program is shown, not dropped."""
    from ksync import irqreport

    def prim(scheme, name, med):
        return {"kind": "irq_prim", "scheme": scheme, "name": name, "median": med,
                "env": "hosted"}
    data = {"schemes": [], "hosted": {
        "facts": {"tsc_hz": 2_000_000_000, "cpu_model": "Test CPU"},
        "rows": [prim("spl-optim", "crit_enter_leave", 10.0), prim("spl-optim", "flag", 0.5),
                 prim("spl-optim", "flag_incdec", 9.0),
                 prim("cli-optim", "crit_enter_leave", 2.0), prim("cli-optim", "flag", 0.5),
                 prim("cli-optim", "flag_incdec", 9.0)],
        "failed": [{"scheme": "tpr-optim", "reason": "exit 1"}]}}
    t = irqreport.table5_hosted(irqreport.IrqIndex(data))
    rows = {r[0]: r for r in t.rows}
    assert rows["spl-optim"][-1] == "not met"
    assert rows["spl-optim"][7] == "1.00"		# crit - inc/dec, for scale
    assert rows["cli-optim"][-1] == "met"
    assert rows["tpr-optim"][-1] == "failed: exit 1"
    assert "Test CPU" in " ".join(t.notes_above)
    assert irqreport.table5_hosted(irqreport.IrqIndex({"schemes": []})) is None


def test_hosted_table_explains_equal_crit_rows():
    """Item 9c: spl-optim and tpr-optim measure the same crit code; equal figures are said
    to be that, and the splraise_splx column is where they part."""
    def prim(scheme, name, med):
        return {"kind": "irq_prim", "scheme": scheme, "name": name, "median": med,
                "env": "hosted"}

    def data(tpr_crit):
        rows = []
        for s, crit, spl in (("spl-optim", 2.0, 6.0), ("tpr-optim", tpr_crit, 1.5)):
            rows += [prim(s, "crit_enter_leave", crit), prim(s, "splraise_splx", spl),
                     prim(s, "flag", 0.5), prim(s, "flag_incdec", 9.0)]
        return {"schemes": [], "hosted": {"facts": {"tsc_hz": 2e9}, "rows": rows,
                                           "failed": []}}
    t = irqreport.table5_hosted(irqreport.IrqIndex(data(2.0)))
    rows = {r[0]: r for r in t.rows}
    assert rows["spl-optim"][3] == "6.00" and rows["tpr-optim"][3] == "1.50"
    note = t.notes_above[-1]
    assert "equal crit_enter_leave figures (2.00 ticks)" in note and "6.00 vs 1.50" in note
    t2 = irqreport.table5_hosted(irqreport.IrqIndex(data(2.5)))
    assert "2.00 vs 2.50" in t2.notes_above[-1]
    assert "equal" not in t2.notes_above[-1]
