"""Hosted C unit tests (tests/unit/test_*.c) in the plain, ASan/UBSan and TSan builds.

`make -s hosted-tests` builds build/hosted/tests/{plain,asan,tsan}/<name> once per session;
each binary in each build is one test case here.  A case passes if the program exits 0,
its KTAP plan (parsed with ksync.ktap) is complete with no `not ok`, and no sanitizer
reported anything.  On failure the program's whole output is shown.

Also `make install` into a temporary prefix: the header layout, ksync.pc, and a program
built and linked with pkg-config against the installed library.
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ksync import ktap

ROOT = Path(__file__).resolve().parent.parent
FLAVOURS = ("plain", "asan", "tsan")
TESTS = sorted(p.stem for p in (ROOT / "tests" / "unit").glob("test_*.c"))
TIMEOUT = 300

# Stop at the first sanitizer report with a non-zero exit; keep a caller's own settings.
SANITIZER_ENV = {
    "ASAN_OPTIONS": "halt_on_error=1:detect_leaks=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
    "TSAN_OPTIONS": "halt_on_error=1:second_deadlock_stack=1",
}
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer", "runtime error:")


@pytest.fixture(scope="session")
def hosted_bins() -> Path:
    """Build every hosted test binary once, through the top-level Makefile."""
    r = subprocess.run(["make", "-C", str(ROOT), "-s", f"-j{os.cpu_count() or 1}", "hosted-tests"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0:
        pytest.fail(f"make hosted-tests failed (exit {r.returncode}):\n"
                    f"{r.stdout}\n{r.stderr}", pytrace=False)
    return ROOT / "build" / "hosted" / "tests"


def _env() -> dict:
    env = dict(os.environ)
    for key, value in SANITIZER_ENV.items():
        env.setdefault(key, value)
    return env


# The explorer's tests run their threads as coroutines on one OS thread with TSan's
# synchronizing fiber switch: TSan can report nothing there, and mk/lib.mk builds them
# plain and with ASan+UBSan only.
PAIRS = [(name, flavour) for name in TESTS for flavour in FLAVOURS
         if not (flavour == "tsan" and name.startswith("test_explore_"))]


@pytest.mark.parametrize("name,flavour", PAIRS, ids=[f"{n}-{f}" for n, f in PAIRS])
def test_hosted(hosted_bins: Path, flavour: str, name: str):
    exe = hosted_bins / flavour / name
    assert exe.is_file(), f"{exe} was not built by `make hosted-tests`"
    try:
        r = subprocess.run([str(exe)], capture_output=True, text=True, timeout=TIMEOUT,
                           env=_env(), cwd=ROOT)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout
        pytest.fail(f"{exe} timed out after {TIMEOUT} s; output so far:\n{out or ''}",
                    pytrace=False)

    result = ktap.parse(r.stdout)
    shown = f"--- {exe} (exit {r.returncode})\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}"
    reports = [m for m in SANITIZER_MARKERS if m in r.stderr]
    assert not reports, f"sanitizer report ({', '.join(reports)}):\n{shown}"
    assert r.returncode == 0, f"exit status {r.returncode}:\n{shown}"
    assert result.complete, f"KTAP plan incomplete:\n{shown}"
    assert result.passed, (f"failed: {', '.join(c.name for c in result.failed)}\n{shown}")
    assert result.results, f"no test cases ran:\n{shown}"


# ---------------------------------------------------------------------------------------
# make install: the library's API, the test harness apart, a pkg-config file that works

TESTING_HEADERS = ("ktest.h", "measure.h")

LINK_PROBE = r"""
#include <ksync/atomic.h>
#include <ksync/testing/ktest.h>
#include <stdio.h>

int main(void)
{
	/* ktest_filter_match lives in libksync.a: the link goes through ksync.pc */
	return ktest_filter_match("a*,b", "abc") && !ktest_filter_match("a*,b", "c") ? 0 : 1;
}
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    prefix = tmp_path_factory.mktemp("prefix")
    r = subprocess.run(["make", "-C", str(ROOT), "-s", f"-j{os.cpu_count() or 1}", "install", f"PREFIX={prefix}"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"make install failed:\n{r.stdout}\n{r.stderr}"
    return prefix


def _pc_fields(pc: Path) -> dict:
    fields = {}
    for line in pc.read_text().splitlines():
        if ":" in line and not line.startswith("#") and "=" not in line.split(":", 1)[0]:
            key, value = line.split(":", 1)
            fields[key.strip()] = value.strip()
    return fields


def test_install_layout(installed: Path):
    inc = installed / "include" / "ksync"
    api = sorted(p.name for p in inc.glob("*.h"))
    source = sorted(p.name for p in (ROOT / "include" / "ksync").glob("*.h"))
    assert api == [h for h in source if h not in TESTING_HEADERS]
    assert sorted(p.name for p in (inc / "testing").glob("*.h")) == sorted(TESTING_HEADERS)
    assert (installed / "lib" / "libksync.a").is_file()
    fields = _pc_fields(installed / "lib" / "pkgconfig" / "ksync.pc")
    assert "-lksync" in fields["Libs"].split()
    # libksync.a (static) uses a pthread key (mwcas.c): every link needs the thread
    # library, so -pthread is in Libs, which a plain `pkg-config --libs` prints
    assert "-pthread" in fields["Libs"].split()
    assert "-pthread" not in fields.get("Libs.private", "").split()
    assert fields["Cflags"].split() == ["-I${includedir}"]


def test_installed_testing_headers_name_their_path(installed: Path):
    """The harness headers are installed under ksync/testing/: the installed copies name
    that path (ktest.h's usage line), and no installed header includes them by the
    source tree's path."""
    inc = installed / "include" / "ksync"
    assert "#include <ksync/testing/ktest.h>" in (inc / "testing" / "ktest.h").read_text()
    for h in sorted(inc.rglob("*.h")):
        text = h.read_text()
        for name in TESTING_HEADERS:
            assert f"<ksync/{name}>" not in text, f"{h} names <ksync/{name}>"


@pytest.mark.parametrize("header", sorted(p.name for p in (ROOT / "include" / "ksync")
                                          .glob("*.h") if p.name not in TESTING_HEADERS))
def test_installed_api_header_stands_alone(installed: Path, tmp_path: Path, header: str):
    src = tmp_path / "probe.c"
    src.write_text(f"#include <ksync/{header}>\nint main(void) {{ return 0; }}\n")
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-c",
                        f"-I{installed / 'include'}", str(src), "-o", str(tmp_path / "p.o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config not installed")
def test_installed_pkg_config_links(installed: Path, tmp_path: Path):
    env = dict(os.environ, PKG_CONFIG_PATH=str(installed / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--static", "--cflags", "--libs", "ksync"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert flags.returncode == 0, flags.stderr
    src = tmp_path / "probe.c"
    src.write_text(LINK_PROBE)
    exe = tmp_path / "probe"
    r = subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", str(src), "-o",
                        str(exe), *flags.stdout.split()], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert subprocess.run([str(exe)], timeout=60).returncode == 0


THREADED_PROBE = r"""
#include <ksync/mwcas.h>
#include <ksync/testing/ktest.h>
#include <pthread.h>
#include <stdint.h>

/* Two threads each add 2 to a pair of words 1000 times through ksync_mwcas (values
 * must be even; the hosted slot is a pthread key in libksync.a): the pair stays equal
 * and ends at 4000. */
static uint64_t a, b;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++) {
		for (;;) {
			uint64_t va = ksync_mwcas_read(&a), vb = ksync_mwcas_read(&b);
			struct ksync_mwcas_op ops[2] = { { &a, va, va + 2 }, { &b, vb, vb + 2 } };

			if (va == vb && ksync_mwcas(ops, 2) == KSYNC_OK)
				break;
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, NULL) != 0)
			return 2;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (ksync_mwcas_read(&a) != 4000 || ksync_mwcas_read(&b) != 4000)
		return 3;
	return ktest_filter_match("a*,b", "abc") && !ktest_filter_match("a*,b", "c") ? 0 : 1;
}
"""


@pytest.mark.skipif(shutil.which("pkg-config") is None, reason="pkg-config not installed")
def test_installed_pkg_config_plain_links_threaded(installed: Path, tmp_path: Path):
    """A threaded program built with nothing but `pkg-config --cflags --libs ksync` (no
    --static): the flags carry -pthread (needed by libksync.a's pthread key, and by any
    link on a glibc before 2.34, where libpthread is apart from libc), the harness header
    is found at its installed path, and the program runs."""
    env = dict(os.environ, PKG_CONFIG_PATH=str(installed / "lib" / "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "ksync"],
                           capture_output=True, text=True, env=env, timeout=60)
    assert flags.returncode == 0, flags.stderr
    assert "-pthread" in flags.stdout.split(), flags.stdout
    src = tmp_path / "threaded.c"
    src.write_text(THREADED_PROBE)
    exe = tmp_path / "threaded"
    r = subprocess.run(["gcc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra",
                        "-Werror", str(src), "-o", str(exe), *flags.stdout.split()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout}\n{run.stderr}"
