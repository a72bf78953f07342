"""The Linux half of the lateness comparison (tools/ksync/linuxguest.py): cyclictest's
histogram and percentiles, the one-line reasons when a package cannot be had, the
initramfs writer, the QEMU options and the serial-line handling of run() (with a fake
QEMU).  Nothing here needs the network or QEMU, except the boot at the end, which runs
only with KSYNC_SLOW=1."""
import gzip
import json
import lzma
import math
import os
import shutil
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from ksync import linuxguest as lg

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "cyclictest_rt.txt"
SLOW = os.environ.get("KSYNC_SLOW") == "1"


def fixture_lines():
    return FIXTURE.read_text().splitlines()


def expand(hist, overflows, buckets):
    """Every sample as a value: a bucket's samples at the bucket, overflows above all."""
    out = []
    for b in sorted(hist):
        out += [b] * hist[b]
    return out + [buckets] * overflows


# ---------------------------------------------------------------------------------------
# cyclictest's output


def test_parse_real_capture():
    """A real capture (PREEMPT_RT guest under load, TCG, -smp 2, 10 s, -h 2000): the
    per-thread histogram sums agree with cyclictest's own "# Total" line, and the summary
    lines are read."""
    p = lg.parse_cyclictest(fixture_lines())
    assert p["threads"] == 2
    assert [sum(h.values()) for h in p["hist"]] == p["total"] == [8978, 9333]
    assert p["min"] == [32, 33]
    assert p["avg"] == [828, 792]
    assert p["max"] == [20784, 25755]
    assert p["overflows"] == [1545, 1545]


def test_summarize_real_capture():
    s = lg.summarize(lg.parse_cyclictest(fixture_lines()), buckets=2000)
    assert s["threads"] == 2
    assert s["samples"] == 8978 + 9333 + 1545 + 1545       # histogram + overflows
    assert s["overflows"] == 3090
    assert s["min_us"] == 32 and s["max_us"] == 25755
    assert s["avg_us"] == pytest.approx((828 * 10523 + 792 * 10878) / 21401, abs=0.01)
    assert sum(s["hist_us"].values()) == 8978 + 9333
    assert all(0 <= b < 2000 for b in s["hist_us"])
    # 14.4% of the samples overflowed: p99 and p99.9 are among them, p50 is not
    assert s["p50_overflow"] is False
    assert s["p99_us"] == 2000 and s["p99_overflow"] is True
    assert s["p999_us"] == 2000 and s["p999_overflow"] is True
    values = expand(s["hist_us"], s["overflows"], 2000)
    assert s["p50_us"] == values[math.ceil(0.5 * len(values)) - 1] + 1
    assert s["per_thread"]["samples"] == [10523, 10878]


def test_parse_ignores_noise_and_zero_rows():
    """The guest leaves out all-zero rows; cyclictest on the host prints them.  Both, and
    console noise (kernel messages, carriage returns), parse to the same figures."""
    lines = fixture_lines()
    p = lg.parse_cyclictest(lines)
    full = []
    rows = {int(l.split()[0]): l for l in lines if l[:1].isdigit()}
    for b in range(2000):
        full.append(rows.get(b, f"{b:06d} 000000\t000000"))
    head = [l for l in lines if l.startswith("#") and "Total" not in l][:2]
    tail = [l for l in lines if l.startswith("# ") and l not in head]
    noisy = (head + [r + "\r" for r in full[:1000]]
             + ["[   12.345678] sched: RT throttling activated", "random text 12"]
             + full[1000:] + tail)
    q = lg.parse_cyclictest(noisy)
    assert q == p


def test_parse_three_threads_and_empty():
    out = ["# Histogram", "000000 000001\t000002\t000003", "000005 000000\t000000\t000004",
           "# Total: 000000001 000000002 000000007", "# Min Latencies: 00000 00000 00000",
           "# Avg Latencies: 00000 00000 00003", "# Max Latencies: 00000 00000 00009",
           "# Histogram Overflows: 00000 00000 00001"]
    s = lg.summarize(lg.parse_cyclictest(out), buckets=6)
    assert s["threads"] == 3
    assert s["hist_us"] == {0: 6, 5: 4}
    assert s["samples"] == 11 and s["overflows"] == 1 and s["max_us"] == 9
    empty = lg.summarize(lg.parse_cyclictest([]), buckets=100)
    assert empty["threads"] == 0 and empty["samples"] == 0 and empty["p50_us"] is None


def test_percentile_upper_edges():
    """pXX = the upper edge (i+1) of the first bucket whose cumulative count reaches
    ceil(XX% of the samples)."""
    hist = {0: 50, 1: 30, 5: 19, 9: 1}
    assert lg.percentile(hist, 0, 100, 0.50) == (1, False)     # 50 samples in [0,1)
    assert lg.percentile(hist, 0, 100, 0.51) == (2, False)
    assert lg.percentile(hist, 0, 100, 0.99) == (6, False)     # 99th sample in [5,6)
    assert lg.percentile(hist, 0, 100, 0.999) == (10, False)   # ceil(99.9) = the 100th
    assert lg.percentile({7: 1}, 0, 100, 0.5) == (8, False)
    assert lg.percentile({}, 0, 100, 0.5) == (None, False)


def test_percentile_in_overflow():
    """Overflows count above the last bucket; a percentile among them is reported as the
    histogram's size, flagged."""
    hist = {3: 985}
    assert lg.percentile(hist, 15, 2000, 0.50) == (4, False)
    assert lg.percentile(hist, 15, 2000, 0.985) == (4, False)
    assert lg.percentile(hist, 15, 2000, 0.99) == (2000, True)
    assert lg.percentile(hist, 15, 2000, 0.999) == (2000, True)
    assert lg.percentile({}, 5, 2000, 0.5) == (2000, True)     # everything overflowed


def test_percentile_matches_brute_force():
    import random
    rnd = random.Random(12)
    for _ in range(200):
        buckets = rnd.randint(5, 40)
        hist = {}
        for _ in range(rnd.randint(1, 300)):
            b = rnd.randrange(buckets)
            hist[b] = hist.get(b, 0) + 1
        over = rnd.choice([0, 0, 1, 3, 50])
        values = expand(hist, over, buckets)
        for frac in (0.5, 0.9, 0.99, 0.999, 1.0):
            k = math.ceil(frac * len(values))
            v = values[k - 1]
            want = (buckets, True) if v >= buckets else (v + 1, False)
            assert lg.percentile(hist, over, buckets, frac) == want


# ---------------------------------------------------------------------------------------
# packages: the one-line reasons


KPKG = "linux-image-6.1.0-99-rt-amd64"


def fake_tools(tmp_path: Path, *, unknown=(), download_fails=(), calls=None) -> Path:
    """A PATH directory with fake apt-cache, apt-get and dpkg-deb: apt-cache knows every
    package but ``unknown``; apt-get download fails for ``download_fails`` (as apt does,
    with an E: line) and writes an empty .deb for the others; apt-get update succeeds.
    Every call is appended to ``calls`` (a file)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    log = calls or tmp_path / "calls.log"
    stanza = {"linux-image-rt-amd64": f"Depends: {KPKG} (= 6.1.999-1)\n"}
    script = f"""#!{sys.executable}
import sys, os
args = sys.argv[1:]
open({str(log)!r}, "a").write(os.path.basename(sys.argv[0]) + " " + " ".join(args) + "\\n")
unknown = {list(unknown)!r}
fails = {list(download_fails)!r}
name = os.path.basename(sys.argv[0])
if name == "apt-cache":
    pkgs = [a for a in args if not a.startswith("-") and a != "show"]
    out = []
    for p in pkgs:
        if p in unknown:
            continue
        extra = {stanza!r}.get(p, "")
        out.append(f"Package: {{p}}\\nVersion: 1:2.0-1\\nArchitecture: amd64\\n{{extra}}")
    if not out:
        print("E: No packages found", file=sys.stderr)
        sys.exit(100)
    print("\\n".join(out))
elif name == "apt-get":
    if args[0] == "update":
        sys.exit(0)
    spec = args[-1]
    pkg, _, ver = spec.partition("=")
    if pkg in fails:
        print(f"E: Failed to fetch http://deb.debian.org/debian/pool/{{pkg}}.deb  404  "
              "Not Found [IP: 1.2.3.4 80]")
        sys.exit(100)
    open(f"{{pkg}}_{{ver.replace(':', '%3a')}}_amd64.deb", "wb").close()
else:
    print("dpkg-deb: error: fake", file=sys.stderr)
    sys.exit(2)
"""
    for name in ("apt-cache", "apt-get", "dpkg-deb"):
        f = bin_dir / name
        f.write_text(script)
        f.chmod(0o755)
    return bin_dir


@pytest.fixture
def fake_path(tmp_path, monkeypatch):
    def use(**kw):
        bin_dir = fake_tools(tmp_path, **kw)
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
        return tmp_path / "calls.log"
    return use


def one_line(reason: str) -> bool:
    return "\n" not in reason and 0 < len(reason) <= 400


def test_unknown_meta_package_named(fake_path, tmp_path):
    calls = fake_path(unknown=("linux-image-rt-amd64",))
    with pytest.raises(lg.GuestMissing) as e:
        lg.prepare("rt", tmp_path / "cache", log=lambda m: None)
    msg = str(e.value)
    assert one_line(msg)
    assert msg.startswith("linux-image-rt-amd64: apt-cache show failed:"), msg
    # one apt-get update when a package cannot be resolved (as root), then the reason
    if os.geteuid() == 0:
        assert calls.read_text().count("apt-get update -qq") == 1


def test_kernel_download_failure_names_versioned_package(fake_path, tmp_path):
    fake_path(download_fails=(KPKG,))
    with pytest.raises(lg.GuestMissing) as e:
        lg.prepare("rt", tmp_path / "cache", log=lambda m: None)
    msg = str(e.value)
    assert one_line(msg)
    assert msg.startswith(f"{KPKG}: apt-get download failed: E: Failed to fetch"), msg


def test_userland_download_failure_names_package(fake_path, tmp_path):
    """The kernel is cached already (its directory exists): rt-tests is fetched next."""
    fake_path(download_fails=("rt-tests",))
    kdir = tmp_path / "cache" / f"kernel-{KPKG}_1%3a2.0-1"      # the fake's version
    kdir.mkdir(parents=True)
    (kdir / "vmlinuz").write_bytes(b"fake")
    with pytest.raises(lg.GuestMissing) as e:
        lg.prepare("rt", tmp_path / "cache", log=lambda m: None)
    msg = str(e.value)
    assert one_line(msg)
    assert msg.startswith("rt-tests: apt-get download failed:"), msg


def test_no_apt_at_all(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))          # nothing on PATH
    with pytest.raises(lg.GuestMissing) as e:
        lg.prepare("std", tmp_path / "cache", log=lambda m: None)
    assert one_line(str(e.value)) and "not found" in str(e.value)


def test_bad_flavour():
    with pytest.raises(lg.GuestMissing, match="flavour"):
        lg.prepare("hard-rt")


def test_offline_reuses_last_image(fake_path, tmp_path):
    """apt cannot resolve anything, but an image was built before: it is reused."""
    fake_path(unknown=("linux-image-rt-amd64",))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "vmlinuz").write_bytes(b"k")
    (cache / "initramfs.cpio.gz").write_bytes(b"i")
    (cache / "rt.json").write_text(json.dumps({
        "flavour": "rt", "kernel": str(cache / "vmlinuz"),
        "initramfs": str(cache / "initramfs.cpio.gz"), "kernel_package": KPKG,
        "packages": {KPKG: "6.1.1-1"}, "vmlinux": None}))
    said = []
    img = lg.prepare("rt", cache, log=said.append)
    assert img.kernel == cache / "vmlinuz" and img.kernel_version == "6.1.1-1"
    assert said and "reusing the cached rt image" in said[-1]


def test_apt_helpers():
    text = ("Package: a\nVersion: 1\nDepends: x,\n y\n\nPackage: b\nVersion: 2\n")
    st = lg.parse_stanzas(text)
    assert [s["Package"] for s in st] == ["a", "b"] and st[0]["Depends"] == "x,\ny"
    assert lg.first_depends("linux-image-6.1.0-56-rt-amd64 (= 6.1.192-2)") == \
        "linux-image-6.1.0-56-rt-amd64"
    assert lg.first_depends("initramfs-tools | linux-initramfs-tool, linux-image-6.1.0-1-amd64"
                            ) == "linux-image-6.1.0-1-amd64"
    assert lg.first_depends("foo") is None
    assert lg.deb_filename("busybox-static", "1:1.35.0-4", "amd64") == \
        "busybox-static_1%3a1.35.0-4_amd64.deb"


# ---------------------------------------------------------------------------------------
# ELF and the initramfs


def host_file(*names) -> Path:
    for n in names:
        p = Path(n)
        if p.exists():
            return p.resolve()
    pytest.skip(f"none of {names} on this host")


def fake_userland(root: Path) -> None:
    """A userland tree shaped like the extracted packages, from the host's own files: a
    dynamic program (``true``) stands in for cyclictest and hackbench."""
    prog = host_file("/usr/bin/true", "/bin/true")
    libdir = root / "lib/x86_64-linux-gnu"
    libdir.mkdir(parents=True)
    (root / "usr/bin").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "lib64").mkdir()
    shutil.copy(prog, root / "bin/busybox")
    for p in lg.PROGRAMS:
        shutil.copy(prog, root / p)
    interp, needs = lg.elf_needs(prog)
    for name in needs + ["ld-linux-x86-64.so.2", "libgcc_s.so.1"]:
        shutil.copy(host_file(f"/lib/x86_64-linux-gnu/{name}",
                              f"/usr/lib/x86_64-linux-gnu/{name}"), libdir / name)
    # as in libc6: /lib64's loader is an absolute symlink
    os.symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
               root / "lib64/ld-linux-x86-64.so.2")


def test_elf_needs_host_program():
    interp, needs = lg.elf_needs(host_file("/usr/bin/true", "/bin/true"))
    assert interp == "/lib64/ld-linux-x86-64.so.2"
    assert "libc.so.6" in needs
    with pytest.raises(ValueError):
        lg.elf_needs(FIXTURE)


def test_initramfs_writer(tmp_path):
    root = tmp_path / "root"
    fake_userland(root)
    out = lg.write_initramfs(root, tmp_path / "initramfs.cpio.gz")
    blob = out.read_bytes()
    assert blob[:2] == b"\x1f\x8b"
    ents = {e.name: e for e in lg.read_newc(blob)}
    init = ents["init"]
    assert stat.S_ISREG(init.mode) and init.mode & 0o111 == 0o111
    assert init.data.decode() == lg.INIT_SCRIPT and init.data.startswith(b"#!/bin/sh\n")
    for prog in lg.PROGRAMS + (lg.BUSYBOX,):
        e = ents[prog]
        assert stat.S_ISREG(e.mode) and e.mode & 0o111 == 0o111 and e.data[:4] == b"\x7fELF"
    assert ents["usr/bin/cyclictest"].data == host_file("/usr/bin/true", "/bin/true").read_bytes()
    for lib in ("libc.so.6", "ld-linux-x86-64.so.2", "libgcc_s.so.1"):
        assert stat.S_ISREG(ents[f"lib/x86_64-linux-gnu/{lib}"].mode)
    loader = ents["lib64/ld-linux-x86-64.so.2"]
    assert stat.S_ISLNK(loader.mode)
    assert loader.data == b"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    sh = ents["bin/sh"]
    assert stat.S_ISLNK(sh.mode) and sh.data == b"busybox"
    console = ents["dev/console"]
    assert stat.S_ISCHR(console.mode) and console.rdev == (5, 1)
    for d in ("proc", "sys", "dev", "tmp"):
        assert stat.S_ISDIR(ents[d].mode)


def test_initramfs_readable_by_cpio(tmp_path):
    """Cross-check the writer with GNU cpio where it is installed."""
    if not shutil.which("cpio"):
        pytest.skip("cpio not installed")
    root = tmp_path / "root"
    fake_userland(root)
    out = lg.write_initramfs(root, tmp_path / "i.cpio.gz")
    listing = subprocess.run(["cpio", "-itv"], input=gzip.decompress(out.read_bytes()),
                             capture_output=True, check=True).stdout.decode()
    assert " init" in listing and "usr/bin/cyclictest" in listing


def test_newc_format_details():
    """Header layout, 4-byte alignment of names and data, the trailer."""
    blob = lg.write_newc([lg.cpio_file("a", b"xyz", 0o644), lg.cpio_dir("d"),
                          lg.cpio_symlink("l", "a")])
    assert blob.startswith(b"070701") and len(blob) % 4 == 0
    assert b"TRAILER!!!\0" in blob
    hdr = blob[:110]
    assert int(hdr[6 + 8 * 6:14 + 8 * 6], 16) == 3           # filesize
    assert int(hdr[6 + 8 * 11:14 + 8 * 11], 16) == 2          # namesize "a\0"
    assert blob[110:112] == b"a\0" and blob[112:116] == b"xyz\0"   # 110+2 -> pad to 112
    ents = lg.read_newc(blob)
    assert [(e.name, stat.S_IFMT(e.mode), e.data) for e in ents] == [
        ("a", stat.S_IFREG, b"xyz"), ("d", stat.S_IFDIR, b""), ("l", stat.S_IFLNK, b"a")]


def test_missing_library_named(tmp_path):
    root = tmp_path / "root"
    fake_userland(root)
    (root / "lib/x86_64-linux-gnu/libc.so.6").unlink()
    with pytest.raises(lg.GuestMissing) as e:
        lg.initramfs_entries(root)
    assert str(e.value).startswith("libc.so.6 (needed by ")


def test_missing_program_named(tmp_path):
    root = tmp_path / "root"
    fake_userland(root)
    (root / "usr/bin/hackbench").unlink()
    with pytest.raises(lg.GuestMissing, match="usr/bin/hackbench"):
        lg.initramfs_entries(root)


def pvh_elf() -> bytes:
    """A minimal ELF64 with one PT_NOTE holding the Xen PVH entry note."""
    desc = struct.pack("<I", 0x1000000)
    note = struct.pack("<III", 4, len(desc), 18) + b"Xen\0" + desc
    ehdr = bytearray(64)
    ehdr[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", ehdr, 0x20, 64)                    # e_phoff
    struct.pack_into("<HH", ehdr, 0x36, 56, 1)                # e_phentsize, e_phnum
    phdr = struct.pack("<IIQQQQQQ", 4, 4, 64 + 56, 0, 0, len(note), len(note), 4)
    return bytes(ehdr) + phdr + note


def test_unpack_bzimage_and_pvh_note():
    elf = pvh_elf()
    assert lg.elf_has_pvh_note(elf)
    assert not lg.elf_has_pvh_note(elf.replace(b"Xen\0", b"Lnx\0"))
    payload = lzma.compress(elf, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    setup_sects = 3
    bz = bytearray((setup_sects + 1) * 512)
    bz[0x1f1] = setup_sects
    bz[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", bz, 0x206, 0x20f)
    struct.pack_into("<II", bz, 0x248, 100, len(payload))
    bz += b"\0" * 100 + payload + b"\0" * 64
    assert lg.unpack_bzimage(bytes(bz)) == elf
    gz = bytearray(bz[:(setup_sects + 1) * 512])
    gzp = gzip.compress(elf)
    struct.pack_into("<II", gz, 0x248, 0, len(gzp))
    assert lg.unpack_bzimage(bytes(gz) + gzp) == elf
    assert lg.unpack_bzimage(b"not a kernel" * 100) is None


# ---------------------------------------------------------------------------------------
# QEMU options


def test_ksync_qemu_base_is_ksyncs():
    assert lg.ksync_qemu_base(2) == ["-machine", "pc", "-m", "512M", "-smp", "2",
                                     "-cpu", "max", "-accel", "tcg,thread=multi"]
    base = lg.ksync_qemu_base(1, icount="shift=4,align=off,sleep=on")
    assert base[-2:] == ["-icount", "shift=4,align=off,sleep=on"]
    assert base[base.index("-accel") + 1] == "tcg,thread=single"
    assert lg.ksync_qemu_base(2, icount=5)[-1] == "shift=5"
    assert lg.ksync_qemu_base(2, icount="7")[-1] == "shift=7"


def test_ksync_qemu_base_follows_qemu_py():
    """The options are the ones qemu.qemu_command gives ksync's own boot."""
    from ksync import qemu
    cfg = qemu.BootConfig(repo=ROOT, smp=4, machine="q35")
    full = qemu.qemu_command(cfg, "qemu-system-x86_64", "tcg")
    base = lg.ksync_qemu_base(4, machine="q35")
    for opt, val in zip(base[::2], base[1::2]):
        assert full[full.index(opt) + 1] == val
    assert {o for o in base[::2]} == {"-machine", "-m", "-smp", "-cpu", "-accel"}


def test_single_threaded_rewrite():
    args, changed = lg._single_threaded(["-accel", "tcg,thread=multi", "-icount", "shift=4"])
    assert changed and args[1] == "tcg,thread=single"
    args, changed = lg._single_threaded(["-accel", "tcg,thread=single"])
    assert not changed
    args, changed = lg._single_threaded(["-accel", "tcg"])
    assert changed and args[1] == "tcg,thread=single"


# ---------------------------------------------------------------------------------------
# run() on a fake QEMU: what the guest prints, the verdict


def guest_transcript(body_lines, rc=0) -> list[str]:
    return (["SeaBIOS (version 1.16.2-debian-1.16.2-1)",
             "KSYNC-LINUX-UNAME Linux (none) 6.1.0-56-rt-amd64 #1 SMP PREEMPT_RT Debian "
             "6.1.192-2 (2026-11-16) x86_64 GNU/Linux",
             "KSYNC-LINUX-INFO uptime=3.52 cpus=2 realtime=1 clocksource=hpet seconds=10 "
             "interval=250 buckets=2000 load=1",
             "KSYNC-LINUX-BEGIN uptime=3.60",
             "KSYNC-LINUX-STOP uptime=14.03 loadavg=3.17 runnable=45/149"]
            + body_lines + [f"KSYNC-LINUX-RC {rc}", "KSYNC-LINUX-END",
                            "[   14.9] reboot: Power down"])


def fake_qemu(tmp_path: Path, lines, exit_code=0, stderr="", hang=False) -> str:
    out = tmp_path / "serial.txt"
    out.write_text("\r\n".join(lines) + "\r\n")
    script = tmp_path / "qemu-system-x86_64"
    script.write_text(f"""#!/bin/sh
echo "$@" > {tmp_path}/argv
cat {out}
[ -n "{stderr}" ] && echo "{stderr}" >&2
{"sleep 30" if hang else ""}
exit {exit_code}
""")
    script.chmod(0o755)
    return str(script)


def image(tmp_path: Path) -> lg.GuestImage:
    return lg.GuestImage(flavour="rt", kernel=tmp_path / "vmlinuz",
                         initramfs=tmp_path / "initramfs.cpio.gz",
                         kernel_package="linux-image-6.1.0-56-rt-amd64",
                         packages={"linux-image-6.1.0-56-rt-amd64": "6.1.192-2"},
                         vmlinux=tmp_path / "vmlinux")


def test_run_parses_serial(tmp_path):
    q = fake_qemu(tmp_path, guest_transcript(fixture_lines()))
    base = lg.ksync_qemu_base(2)
    r = lg.run(image(tmp_path), base, 10, qemu=q, log_dir=tmp_path / "logs")
    assert r["ok"], r["reason"]
    for k in lg.RESULT_KEYS:
        assert k in r
    assert r["kernel"].startswith("Linux (none) 6.1.0-56-rt-amd64") and "PREEMPT_RT" in r["kernel"]
    assert r["threads"] == 2 and r["samples"] == 21401 and r["max_us"] == 25755
    assert r["p99_overflow"] and r["p99_us"] == 2000
    assert r["info"]["realtime"] == "1" and r["guest_load"]["runnable"] == 45
    assert r["guest_uptime_s"] == {"begin": 3.6, "stop": 14.03}
    assert r["boot_protocol"] == "pvh" and r["cyclictest_rc"] == 0
    assert set(r["timeline_s"]) == {"init", "begin", "stop", "end", "exit"}
    assert r["boot_s"] is not None and r["wall_s"] >= r["boot_s"]
    assert isinstance(r["other_qemu"], list)
    argv = (tmp_path / "argv").read_text().split()
    assert argv[:10] == base
    assert argv[argv.index("-kernel") + 1].endswith("vmlinux")
    assert "kt.seconds=10" in argv and "kt.interval=250" in argv and "kt.load=1" in argv
    assert "console=ttyS0" in argv and "-no-reboot" in argv
    json.dumps(r)          # the CLI prints it
    assert Path(r["log"]).read_text().count("KSYNC-LINUX-END") == 1


def test_run_bzimage_and_icount_args(tmp_path):
    q = fake_qemu(tmp_path, guest_transcript(fixture_lines()))
    args = ["-machine", "pc", "-smp", "2", "-accel", "tcg,thread=multi", "-icount", "shift=4"]
    r = lg.run(image(tmp_path), args, 3, qemu=q, log_dir=None, boot="bzimage", load=False,
               buckets=500, interval_us=100)
    assert r["ok"] and r["boot_protocol"] == "bzimage"
    argv = (tmp_path / "argv").read_text().split()
    assert argv[argv.index("-accel") + 1] == "tcg,thread=single"
    assert argv[argv.index("-kernel") + 1].endswith("vmlinuz")
    assert "kt.load=0" in argv and "kt.buckets=500" in argv and "kt.interval=100" in argv
    assert any("thread=single" in n for n in r["notes"])


def test_run_kernel_panic(tmp_path):
    q = fake_qemu(tmp_path, ["Linux version 6.1.0", "Kernel panic - not syncing: VFS: Unable "
                             "to mount root fs on unknown-block(0,0)", "---[ end Kernel panic"],
                  hang=True)
    r = lg.run(image(tmp_path), [], 3, qemu=q, log_dir=None, timeout=20)
    assert not r["ok"] and r["wall_s"] < 10
    assert r["reason"].startswith("boot failed: Kernel panic - not syncing: VFS")
    assert one_line(r["reason"])


def test_run_qemu_refuses(tmp_path):
    q = fake_qemu(tmp_path, [], exit_code=1,
                  stderr="qemu-system-x86_64: -accel tcg,thread=multi: "
                         "No MTTCG when icount is enabled")
    r = lg.run(image(tmp_path), [], 3, qemu=q, log_dir=None)
    assert not r["ok"]
    assert r["reason"] == ("QEMU exited with code 1: qemu-system-x86_64: -accel "
                           "tcg,thread=multi: No MTTCG when icount is enabled")


def test_run_timeout_before_init(tmp_path):
    q = fake_qemu(tmp_path, ["SeaBIOS", "Booting from ROM.."], hang=True)
    r = lg.run(image(tmp_path), [], 3, qemu=q, log_dir=None, timeout=1.5)
    assert not r["ok"] and r["reason"].startswith("boot failed: no /init output within 1.5s")
    assert "Booting from ROM" in r["reason"]


def test_run_cyclictest_fails(tmp_path):
    lines = guest_transcript(["# /dev/cpu_dma_latency set to 0us",
                              "mlockall failed: Cannot allocate memory"], rc=255)
    r = lg.run(image(tmp_path), [], 3, qemu=fake_qemu(tmp_path, lines), log_dir=None)
    assert not r["ok"]
    assert r["reason"] == "cyclictest exited with 255: # /dev/cpu_dma_latency set to 0us"


def test_run_no_pvh_image(tmp_path):
    img = image(tmp_path)
    img.vmlinux = None
    q = fake_qemu(tmp_path, guest_transcript(fixture_lines()))
    assert lg.run(img, [], 3, qemu=q, log_dir=None)["boot_protocol"] == "bzimage"
    r = lg.run(img, [], 3, qemu=q, log_dir=None, boot="pvh")
    assert not r["ok"] and "pvh" in r["reason"]


# ---------------------------------------------------------------------------------------
# the host


def test_host_without_rt_tests(monkeypatch):
    monkeypatch.setattr(lg.shutil, "which", lambda name: None)
    r = lg.host_cyclictest(1)
    assert not r["ok"] and one_line(r["reason"])
    assert r["reason"].startswith("cyclictest: not found") and "rt-tests" in r["reason"]
    for k in lg.RESULT_KEYS:
        assert k in r


def test_host_fake_cyclictest(tmp_path, monkeypatch):
    """Same dict shape from the host's cyclictest output; the load is killed at the end."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ct = bin_dir / "cyclictest"
    ct.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/argv\nsleep 1\ncat {FIXTURE}\n")
    hb = bin_dir / "hackbench"
    hb.write_text(f"#!/bin/sh\necho $$ >> {tmp_path}/hackbench.pids\nexec sleep 600\n")
    for f in (ct, hb):
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    r = lg.host_cyclictest(2, buckets=2000)
    assert r["ok"], r["reason"]
    assert r["threads"] == 2 and r["samples"] == 21401
    # the samples past the histogram keep their values: --spike (and room for all of them)
    nodes = lg.spike_nodes(2, 250, 2000, os.cpu_count() or 1)
    assert (tmp_path / "argv").read_text().split() == [
        "-m", "-S", "-p", "95", "-i", "250", "-D", "2", "-q", "-h", "2000", "--spike=1999",
        f"--spike-nodes={nodes}"]
    for pid in (tmp_path / "hackbench.pids").read_text().split():
        assert not Path(f"/proc/{pid}").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"


# ---------------------------------------------------------------------------------------
# samples past the histogram: cyclictest's --spike list gives them their values

SPIKES = ROOT / "tests" / "fixtures" / "cyclictest_host_spikes.txt"


def test_spike_list_makes_percentiles_exact():
    """A real capture (this host, cyclictest 2.4 as root, -S -p 95 -i 250 -D 1 -q -h 60
    --spike=59 --spike-nodes=2000, no load): 30 samples past the 60 µs histogram, each in
    the spike list with its value; p99.9 (0.1 % of 7383 = the 8th latest) falls among them."""
    p = lg.parse_cyclictest(SPIKES.read_text().splitlines())
    assert len(p["spikes"]) == 30 and p["spikes_total"] == 30
    assert p["spikes"][0] == (1, 63) and (0, 50096) in p["spikes"]
    assert p["overflows"] == [8, 22]
    s = lg.summarize(p, buckets=60)
    assert s["samples"] == 3409 + 3944 + 30 and s["overflows"] == 30
    assert s["overflow_values"] == 30 and s["max_us"] == 50096
    assert s["p999_us"] == 150 and s["p999_overflow"] is False      # exact, past 60 µs
    assert max(s["hist_us"]) == 50096 and sum(s["hist_us"].values()) == s["samples"]
    values = sorted(v for b, c in s["hist_us"].items() for v in [b] * c)
    assert s["p999_us"] == values[math.ceil(0.999 * len(values)) - 1] + 1
    # the same capture without the spike list: p99.9 only known to be >= 60 µs
    p["spikes"] = []
    s = lg.summarize(p, buckets=60)
    assert s["p999_us"] == 60 and s["p999_overflow"] is True and s["overflow_values"] == 0


def test_spike_list_that_ran_out_leaves_a_lower_bound():
    """Fewer spike lines than overflows (cyclictest's list was full: "spikes = N" counts
    them all): the samples without a value keep the percentiles past the histogram
    censored, however large the recorded ones are."""
    lines = ["000005 000990", "T: 0 Spike:    9000: TS:   1", "T: 0 Spike:    9100: TS:   2",
             "spikes = 10", "# Total: 000000990", "# Max Latencies: 09999",
             "# Histogram Overflows: 00010"]
    s = lg.summarize(lg.parse_cyclictest(lines), buckets=100)
    assert s["samples"] == 1000 and s["overflows"] == 10 and s["overflow_values"] == 2
    assert s["spikes_total"] == 10
    assert s["p99_us"] == 6 and s["p99_overflow"] is False
    assert s["p999_us"] == 100 and s["p999_overflow"] is True
    # spikes below the histogram's end (a lower trigger) are already in it: not counted twice
    lines[1] = "T: 0 Spike:      50: TS:   1"
    s = lg.summarize(lg.parse_cyclictest(lines), buckets=100)
    assert s["overflow_values"] == 1 and sum(s["hist_us"].values()) == 991


def test_percentile_with_values_past_the_histogram_matches_brute_force():
    import random
    rnd = random.Random(7)
    for _ in range(300):
        buckets = rnd.randint(5, 40)
        values = [rnd.choice([rnd.randrange(buckets), rnd.randrange(buckets, 5 * buckets)])
                  for _ in range(rnd.randint(1, 200))]
        past = [v for v in values if v >= buckets]
        known = rnd.randint(0, len(past))           # the spike list held this many
        hist = {}
        for v in [v for v in values if v < buckets] + past[:known]:
            hist[v] = hist.get(v, 0) + 1
        without = len(past) - known
        order = sorted(values)
        for frac in (0.5, 0.9, 0.99, 0.999, 1.0):
            v = order[math.ceil(frac * len(order)) - 1]
            got = lg.percentile(hist, without, buckets, frac)
            if without and v >= buckets:
                assert got == (buckets, True)          # a lower bound, flagged
            elif not without:
                assert got == (v + 1, False)           # exact, also past the histogram
            else:                                      # below the end: exact
                assert got == (v + 1, False) or (got[1] and got[0] == buckets)


def test_spike_nodes_hold_every_overflow():
    """cyclictest moves the next deadline past every period a late wakeup missed, so a
    thread cannot have more samples past the histogram than spike_nodes allows: simulated
    with cyclictest's own loop and the worst case, every wakeup just past the histogram."""
    for seconds, interval, buckets in ((2, 250, 10000), (10, 250, 10000), (1, 250, 60),
                                       (2, 1000, 2000), (1, 250, 20)):
        nxt, stop, n = interval, seconds * 1_000_000, 0
        while True:
            now = nxt + buckets                   # every sample overflows, as early as it can
            n += 1
            if now >= stop:
                break
            nxt += interval
            while now > nxt:
                nxt += interval
        assert n <= lg.spike_nodes(seconds, interval, buckets), (seconds, interval, buckets)
    assert lg.spike_nodes(2, 250, 10000, threads=4) == 4 * lg.spike_nodes(2, 250, 10000)


def test_cyclictest_command_lines():
    opts = lg.cyclictest_options(250, 2, 10000, 404)
    assert opts == ["-m", "-S", "-p", "95", "-i", "250", "-D", "2", "-q", "-h", "10000",
                    "--spike=9999", "--spike-nodes=404"]
    with pytest.raises(lg.UsageError):
        lg.cyclictest_options(250, 2, 1, 10)        # --spike=0 would switch the list off
    # the guest's /init passes the same options (the spike list before its size, as
    # cyclictest 2.4 reads them) with its CPU count times kt.spikes
    assert ('-h "$buckets" \\\n\t--spike=$((buckets - 1)) --spike-nodes=$nodes'
            in lg.INIT_SCRIPT)
    assert "nodes=$((spikes * $(nproc)))" in lg.INIT_SCRIPT
    append = lg.kernel_append(10, 250, 10000, True)
    assert f"kt.spikes={lg.spike_nodes(10, 250, 10000)}" in append.split()


def test_run_reads_the_guests_bucket_count(tmp_path):
    """The percentiles use the histogram size /init reports (its INFO line), not the
    caller's default."""
    lines = guest_transcript(SPIKES.read_text().splitlines())
    lines = [l.replace("buckets=2000", "buckets=60") for l in lines]
    r = lg.run(image(tmp_path), lg.ksync_qemu_base(2), 1, qemu=fake_qemu(tmp_path, lines),
               log_dir=None)
    assert r["ok"], r["reason"]
    assert r["buckets"] == 60 and r["overflow_values"] == 30 and r["p999_us"] == 150
    assert not r["p999_overflow"]
    argv = (tmp_path / "argv").read_text().split()
    assert f"kt.buckets={lg.BUCKETS}" in argv and any(a.startswith("kt.spikes=") for a in argv)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("cyclictest"),
                    reason="the host's cyclictest needs root and rt-tests")
def test_host_cyclictest_accepts_the_options():
    """The real cyclictest takes the options (1 s, no load, a 20 µs histogram so that
    samples pass it) and its spike list gives every one of them a value."""
    r = lg.host_cyclictest(1, buckets=20, load=False)
    assert r["ok"], r["reason"]
    assert r["command"][-2:] == ["--spike=19", f"--spike-nodes={r['spike_nodes']}"]
    assert r["overflow_values"] == r["overflows"]
    assert r["overflows"] == 0 or (r["spikes_total"] == r["overflows"]
                                    and max(r["hist_us"]) == r["max_us"])
    assert not r["p999_overflow"]


# ---------------------------------------------------------------------------------------
# a real boot (slow: downloads the packages once, boots QEMU)


@pytest.mark.skipif(not SLOW, reason="boots Linux under QEMU; set KSYNC_SLOW=1")
def test_real_rt_guest_boots():
    img = lg.prepare("rt", ROOT / lg.DEFAULT_CACHE, log=lambda m: None)
    r = lg.run(img, lg.ksync_qemu_base(2), 3, log_dir=ROOT / lg.DEFAULT_LOG_DIR)
    assert r["ok"], r["reason"]
    assert "PREEMPT_RT" in r["kernel"] and r["info"]["realtime"] == "1"
    assert r["threads"] == 2 and r["samples"] > 1000
    assert r["guest_load"]["runnable"] > 2          # hackbench ran
