"""The hosted port's platform devices (arch/hosted/kdev.c, issue 9): behaviour of
build/hosted-kdev/<flavour>/kdev_test, one scenario per run, in the plain, ASan+UBSan and
TSan builds of mk/hosted-kdev.mk.

The test program is its own port: its hosted_isa_raise counts raises per irq and a handler
thread plays the BSP (rtc_ack, ata_intr). Each scenario prints `check <name> <got> <want>
ok|FAIL` lines (and `range <name> <got> <lo> <hi> ok|FAIL` for the few sanity bounds on
counts of periodic interrupts, which are wide on purpose: at most one per elapsed period,
at least a tenth of them) and exits with the verdict. Disk images are made here with the
pattern of tools/ksync/disk.py (sector n = the 8-byte little-endian n, 64 times); the C
side checks every byte it read against that pattern.
"""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ksync.disk import SECTOR, sector_bytes
from test_hosted import SANITIZER_ENV, SANITIZER_MARKERS

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "hosted-kdev"
FLAVOURS = ("plain", "asan", "tsan")
TIMEOUT = 60
IMAGE_SECTORS = 300          # > ATA_MAX_COUNT, so one request reads 256 sectors
CHECK = re.compile(r"^check (\S+) (-?\d+) (-?\d+) (ok|FAIL)$", re.M)
RANGE = re.compile(r"^range (\S+) (-?\d+) (-?\d+) (-?\d+) (ok|FAIL)$", re.M)

SCENARIOS = ["convert", "pit-oneshot", "pit-periodic", "pit-restart", "rtc", "rtc-noack",
             "nodisk", "ata", "ata-errors"]


@pytest.fixture(scope="session")
def kdev_bins() -> Path:
    r = subprocess.run(["make", "-C", str(ROOT), "-s", f"-j{os.cpu_count() or 1}", "hosted-kdev"],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        pytest.fail(f"make hosted-kdev failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}",
                    pytrace=False)
    return OUT


def _image(path: Path, sectors: int, tail: int = 0, corrupt: int | None = None) -> Path:
    """An image of `sectors` pattern sectors plus `tail` bytes of a partial sector."""
    with open(path, "wb") as f:
        for n in range(sectors):
            data = sector_bytes(n)
            if n == corrupt:
                data = data[:100] + b"\xff" + data[101:]
            f.write(data)
        f.write(b"\x00" * tail)
    return path


def _run(exe: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    for key, value in SANITIZER_ENV.items():
        env.setdefault(key, value)
    return subprocess.run([str(exe), *args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=cwd)


def _shown(r: subprocess.CompletedProcess) -> str:
    return f"--- exit {r.returncode}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"


def _args(name: str, tmp_path: Path) -> list[str]:
    if name in ("ata", "ata-errors"):
        # a partial last sector is not a sector: the probe must say IMAGE_SECTORS
        img = _image(tmp_path / "disk.img", IMAGE_SECTORS, tail=SECTOR // 2)
        return [name, str(img)] + ([str(IMAGE_SECTORS)] if name == "ata" else [])
    return [name]


def _failed(stdout: str) -> list:
    checks = CHECK.findall(stdout)
    ranges = RANGE.findall(stdout)
    bad = [c for c in checks if c[1] != c[2] or c[3] != "ok"]
    bad += [c for c in ranges if not int(c[2]) <= int(c[1]) <= int(c[3]) or c[4] != "ok"]
    return bad


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario(kdev_bins: Path, tmp_path: Path, flavour: str, name: str):
    r = _run(kdev_bins / flavour / "kdev_test", _args(name, tmp_path), tmp_path)
    reports = [m for m in SANITIZER_MARKERS if m in r.stderr]
    assert not reports, f"sanitizer report ({', '.join(reports)}):\n{_shown(r)}"
    assert CHECK.findall(r.stdout), f"no checks ran:\n{_shown(r)}"
    failed = _failed(r.stdout)
    assert not failed, f"failed checks {failed}:\n{_shown(r)}"
    assert r.returncode == 0, _shown(r)


def test_ata_reads_exact_bytes(kdev_bins: Path, tmp_path: Path):
    """The reads are checked against the image, not merely completed: one wrong byte in
    sector 7 of the image fails the reads that cover it (and only the size check passes)."""
    img = _image(tmp_path / "bad.img", IMAGE_SECTORS, corrupt=7)
    r = _run(kdev_bins / "plain" / "kdev_test", ["ata", str(img), str(IMAGE_SECTORS)], tmp_path)
    assert r.returncode == 1, _shown(r)
    names = {c[0] for c in _failed(r.stdout)}
    # pi1/pi4/pi16 read sectors 5..41, pi16_full 0..255: all cover sector 7
    assert names == {"pi1_pattern_errors", "pi4_pattern_errors", "pi16_pattern_errors",
                     "pi16_full_pattern_errors"}, _shown(r)


def test_ata_probe_size(kdev_bins: Path, tmp_path: Path):
    """The probe's sector count follows the image's size."""
    img = _image(tmp_path / "small.img", 257)
    r = _run(kdev_bins / "plain" / "kdev_test", ["ata", str(img), "257"], tmp_path)
    assert ("probe_sectors", "257", "257", "ok") in CHECK.findall(r.stdout), _shown(r)
    assert r.returncode == 0, _shown(r)


def test_bad_usage(kdev_bins: Path, tmp_path: Path):
    r = _run(kdev_bins / "plain" / "kdev_test", ["nonsense"], tmp_path)
    assert r.returncode == 2, _shown(r)


def test_lateness_row(kdev_bins: Path, tmp_path: Path):
    """The lateness measurement runs and emits its row (the figures are reported in
    docs/hosted-port.md, never asserted)."""
    r = _run(kdev_bins / "plain" / "kdev_test", ["late", "1"], tmp_path)
    assert r.returncode == 0, _shown(r)
    rows = [json.loads(line[len("KSYNC "):]) for line in r.stdout.splitlines()
            if line.startswith("KSYNC ")]
    assert len(rows) == 1 and rows[0]["kind"] == "hosted_dev_late", _shown(r)
    row = rows[0]
    assert row["samples"] > 0, _shown(r)
    assert row["median_ns"] <= row["p99_ns"] <= row["max_ns"], _shown(r)
