"""Issue 9 items 1 and 2: kernel/include/arch_if.h is the only door from the kernel to a
port, and the interrupt schemes are listed once (kernel/spl/schemes.txt).

The door: no file under kernel/ includes anything under arch/, a port's private header
(arch/<port>/include/*.h) or the port's arch_impl.h directly (only arch_if.h does), uses
``../`` in an include, or contains inline asm; and the build compiles kernel objects with
the port's public directory only. The list: no file of the build, the tool, the tests or
the benchmarks writes out all the scheme names as a list of its own.
"""
import re
import subprocess
from pathlib import Path

import pytest

from ksync import schemes

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / "kernel"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
ASM = re.compile(r"\b(?:__asm__|__asm|asm)\b\s*(?:volatile|__volatile__|goto|inline)?\s*\(")


def kernel_sources() -> list[Path]:
    return sorted(p for p in KERNEL.rglob("*") if p.suffix in (".c", ".h", ".S", ".s"))


def strip_comments(text: str) -> str:
    """C text without /* */ and // comments (string literals are kept)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def port_private_headers() -> set[str]:
    return {p.name for p in ROOT.glob("arch/*/include/*.h")}


def door_violations(path: Path, text: str, private: set[str]) -> list[str]:
    """What in one kernel file reaches past arch_if.h (empty list: nothing)."""
    out = []
    if path.suffix in (".S", ".s"):
        out.append("assembly source under kernel/")
    code = strip_comments(text)
    for inc in INCLUDE.findall(code):
        if "../" in inc:
            out.append(f"includes by relative path: {inc}")
        if inc.startswith("arch/") or "/arch/" in inc:
            out.append(f"includes a port file: {inc}")
        if Path(inc).name in private:
            out.append(f"includes a port-private header: {inc}")
        if Path(inc).name == "arch_impl.h" and path.name != "arch_if.h":
            out.append("includes arch_impl.h directly (only arch_if.h may)")
    if ASM.search(code):
        out.append("contains inline asm")
    return out


def test_kernel_reaches_ports_only_through_arch_if():
    private = port_private_headers()
    assert {"x86.h", "percpu.h", "trap.h"} <= private   # the check knows what to look for
    bad = {}
    for p in kernel_sources():
        v = door_violations(p, p.read_text(errors="replace"), private)
        if v:
            bad[str(p.relative_to(ROOT))] = v
    assert not bad, bad


@pytest.mark.parametrize("snippet, what", [
    ('#include "x86.h"\n', "port-private"),
    ('#include "../bench/rows.h"\n', "relative path"),
    ('#include <arch/x86_64/include/trap.h>\n', "port file"),
    ('#include "arch_impl.h"\n', "arch_impl.h directly"),
    ('void f(void) { __asm__ volatile("cli"); }\n', "inline asm"),
    ('void f(void) { asm("hlt"); }\n', "inline asm"),
])
def test_door_check_catches(snippet, what):
    v = door_violations(Path("kernel/core/x.c"), snippet, {"x86.h", "trap.h"})
    assert any(what in s for s in v), v


def test_door_check_ignores_comments():
    text = '/* asm("cli") and #include "x86.h" in prose */\n// __asm__("hlt")\nint x;\n'
    assert door_violations(Path("kernel/core/x.c"), text, {"x86.h"}) == []


def test_kernel_objects_see_only_the_public_port_headers():
    """make's compile line for a kernel object has the port's public/ directory and not
    its private include/; a port file gets both."""
    def line(obj: str) -> str:
        r = subprocess.run(["make", "-n", "-B", obj], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        cmd = [ln for ln in r.stdout.splitlines() if f"-o {obj}" in ln]
        assert cmd, r.stdout
        return cmd[0]
    k = line("build/kernel/kernel/core/main.o")
    assert "-Iarch/x86_64/public" in k and "-Iarch/x86_64/include" not in k, k
    a = line("build/kernel/arch/x86_64/start.o")
    assert "-Iarch/x86_64/include" in a, a


def list_pattern(names: tuple[str, ...]) -> re.Pattern:
    """All the names, each quoted or bare, with only separators between them."""
    sep = r"""[\s,'"()\[\]{}]*"""
    alts = "|".join(re.escape(n) for n in names)
    return re.compile(rf"(?<![\w-])(?:{alts})(?![\w-])(?:{sep}(?<![\w-])(?:{alts})(?![\w-])){{{len(names) - 1}}}")


def scheme_lists(text: str, names: tuple[str, ...]) -> list[str]:
    """Runs of len(names) scheme names that cover every name (a written-out list)."""
    found = []
    word = re.compile("|".join(rf"(?<![\w-]){re.escape(n)}(?![\w-])" for n in names))
    for m in list_pattern(names).finditer(text):
        if set(word.findall(m.group(0))) == set(names):
            found.append(m.group(0))
    return found


def test_one_scheme_list():
    names = schemes.SCHEMES
    assert len(names) >= 7
    files = [ROOT / "Makefile", *ROOT.glob("mk/*"), *ROOT.glob("tools/ksync/*.py"),
             *ROOT.glob("tests/**/*.py"), *ROOT.glob("tests/**/*.c"), *ROOT.glob("bench/**/*"),
             *ROOT.glob("common/*"), *(p for p in kernel_sources())]
    bad = {}
    for p in files:
        if p.is_file() and p.suffix != ".pyc":
            hits = scheme_lists(p.read_text(errors="replace"), names)
            if hits:
                bad[str(p.relative_to(ROOT))] = hits
    assert not bad, bad


def test_scheme_list_check_catches():
    names = schemes.SCHEMES
    assert scheme_lists(repr(list(names)), names)
    assert scheme_lists(" ".join(names), names)
    # a dict of values per scheme is data, not a list of names
    assert not scheme_lists(repr({n: 1.0 for n in names}), names)


def test_make_and_tool_read_the_same_list():
    r = subprocess.run(["make", "-s", "print-schemes"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    listed, default = r.stdout.strip().split(" / ")
    assert tuple(listed.split()) == schemes.SCHEMES
    assert default == schemes.DEFAULT_SCHEME


def test_scheme_files_follow_the_list():
    """One kernel/spl/<name>.c per scheme, no spl_spl_ stutter anywhere in the tree."""
    for s in schemes.SCHEMES:
        assert (KERNEL / "spl" / f"{s}.c").is_file(), s
    stutter = [str(p) for p in ROOT.rglob("*spl_spl_*")
               if ".git" not in p.parts and "build" not in p.parts and ".venv" not in p.parts]
    assert not stutter, stutter


def test_parse_scheme_list_refuses_bad_lines():
    ok = "a 1 0 onchip - 1\nb 0 1 flag offchip 0\n"
    got = schemes.parse_scheme_list(ok)
    assert [s.name for s in got] == ["a", "b"] and got[1].interrupted == "offchip"
    assert got[0].hosted and not got[1].hosted
    for bad in ("a 1 0 onchip 1\n", "a 1 0 onchip -\n", "a 1 0 onchip - 1\na 0 0 onchip - 1\n",
                "a 0 0 onchip - 1\n", "a 1 0 onchip - 1\nb 1 0 onchip - 1\n",
                "a 2 0 onchip - 1\n", "a 1 0 onchip - 2\n"):
        with pytest.raises(ValueError):
            schemes.parse_scheme_list(bad)


def test_kernel_compiles_against_a_second_public_port_header():
    """Every file under kernel/ compiles (syntax and types, -Wall -Wextra -Werror) with
    bench/spl_shim/arch_impl.h as the port's public header in place of x86_64's, in every
    scheme: kernel/ needs nothing of a port beyond arch_if.h's inline hooks (the
    out-of-line ones are declarations only until link)."""
    import shutil
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler (gcc or cc) on PATH")
    shared = [p for p in sorted(KERNEL.rglob("*.c")) if p.parent != KERNEL / "spl"]
    shared += [KERNEL / "spl" / "intr.c", KERNEL / "spl" / "intr_hw.c"]
    bad = {}
    for s in schemes.SCHEMES:
        files = [KERNEL / "spl" / f"{s}.c"] + (shared if s == schemes.DEFAULT_SCHEME else [])
        for f in files:
            r = subprocess.run([cc, "-fsyntax-only", "-std=c11", "-ffreestanding", "-Wall",
                                "-Wextra", "-Werror", "-DKSYNC_KERNEL",
                                f'-DKSYNC_SPL_HEADER="spl/{s}.h"', "-Iinclude", "-Icommon",
                                "-Ikernel/include", "-Ibench/spl_shim", str(f.relative_to(ROOT))],
                               cwd=ROOT, capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                bad[f"{s}: {f.relative_to(ROOT)}"] = r.stderr[-600:]
    assert not bad, bad


def test_no_per_scheme_macro_survives():
    """The build defines KSYNC_SPL_HEADER and nothing else per scheme: a leftover
    `#if defined(KSYNC_SCHEME_...)` would silently take its #else branch in every build
    (one did, in intr.h, after the merge that introduced the scheme headers)."""
    dirs = [ROOT / d for d in ("kernel", "arch", "common", "bench", "include", "lib")]
    hits = [f"{p.relative_to(ROOT)}"
            for d in dirs for p in sorted(d.rglob("*")) if p.suffix in (".c", ".h", ".S")
            and "KSYNC_SCHEME_" in strip_comments(p.read_text(errors="replace"))]
    assert hits == [], "per-scheme macros the build no longer defines: " + ", ".join(hits)
