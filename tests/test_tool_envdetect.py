"""ksync.envdetect: KVM flavour, CPU facts, git commit, QEMU version."""
import shutil
import subprocess
import sys

import pytest

from ksync import envdetect


@pytest.fixture
def fake_host(tmp_path, monkeypatch):
    sysmod = tmp_path / "sys_module"
    sysmod.mkdir()
    dev = tmp_path / "kvm"
    monkeypatch.setattr(envdetect, "SYS_MODULE", sysmod)
    monkeypatch.setattr(envdetect, "DEV_KVM", dev)
    return sysmod, dev


def test_no_dev_kvm(fake_host):
    sysmod, dev = fake_host
    (sysmod / "kvm_intel").mkdir()
    assert envdetect.kvm_kind() is None
    assert envdetect.auto_accel() == "tcg"
    assert "absent" in envdetect.kvm_status()


def test_kvm_intel_and_amd(fake_host):
    sysmod, dev = fake_host
    dev.write_text("")
    (sysmod / "kvm_amd").mkdir()
    assert envdetect.kvm_kind() == "kvm"
    assert envdetect.auto_accel() == "kvm"


def test_kvm_pvm(fake_host):
    sysmod, dev = fake_host
    dev.write_text("")
    (sysmod / "kvm").mkdir()
    (sysmod / "kvm_pvm").mkdir()
    assert envdetect.kvm_kind() == "kvm-pvm"
    assert envdetect.auto_accel() == "tcg"
    assert "interpreted" in envdetect.kvm_status()


def test_cpu_model(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)  Processor @ 2.80GHz\n")
    assert envdetect.cpu_model(info) == "Intel(R) Xeon(R) Processor @ 2.80GHz"
    assert envdetect.cpu_model(tmp_path / "missing") == "unknown"
    assert envdetect.cpu_count() >= 1


def test_host_tsc_from_model(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("model name\t: Some CPU @ 2.60GHz\n")
    monkeypatch.setattr(envdetect, "_read",
                        lambda p: info.read_text() if p == info else None)
    assert envdetect.host_tsc_hz(info) == (2600000000, "cpu model name (nominal)")
    info.write_text("model name\t: AMD EPYC\n")
    assert envdetect.host_tsc_hz(info) == (None, "unknown")


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_git_commit(tmp_path):
    assert envdetect.git_commit(tmp_path) == "unknown"  # not a repository
    g = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(g + ["init", "-q"], check=True)
    assert envdetect.git_commit(tmp_path) == "unknown"  # no commits yet
    (tmp_path / "f").write_text("1")
    subprocess.run(g + ["add", "f"], check=True)
    subprocess.run(g + ["commit", "-q", "-m", "x"], check=True)
    c = envdetect.git_commit(tmp_path)
    assert len(c) == 12 and all(ch in "0123456789abcdef" for ch in c)
    (tmp_path / "f").write_text("2")
    assert envdetect.git_commit(tmp_path) == c + "-dirty"


def test_qemu_version(tmp_path):
    fake = tmp_path / "q"
    fake.write_text(f"#!{sys.executable}\nprint('QEMU emulator version 8.2.2 (Debian x)')\n"
                    "print('Copyright (c) 2003-2023')\n")
    fake.chmod(0o755)
    assert envdetect.qemu_version(str(fake)) == "8.2.2 (Debian x)"
    assert envdetect.find_qemu(str(fake)) == str(fake)
    assert envdetect.find_qemu(str(tmp_path / "nope")) is None
    assert envdetect.qemu_version(str(tmp_path / "nope")) == "unknown"
