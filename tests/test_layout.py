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
                                "-Ikernel/include", "-Ibench/spl_shim", "-Ikernel",
                                str(f.relative_to(ROOT))],
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


# ---- the kernel's files depend one way -----------------------------------------------------
#
# The file graph: A -> B when a kernel .c file A names a function or variable that exactly
# one other kernel .c file B defines (tests excepted; what a header's inline functions call
# is charged to the header's own file, not to every includer). The bottom of the kernel -
# the console and panic (core/printf.c, core/panic.c), the lock statistics
# (lock/lockstat.c), the master locks (lock/mlock.c), the memory (mm/) - is under the
# scheduler and calls nothing above it. The only circle left is the scheduler's own
# (docs/design.md, "Layout", says why each tie is mutual).

SCHED_CIRCLE = frozenset({
    "kernel/sched/thread.c",       # the core: threads, switch, idle, preemption, start/stop
    "kernel/sched/rq-locked.c",    # a run-queue variant: the core picks its ops table,
    "kernel/sched/rq-lockfree.c",  # the table's code uses the core's per-CPU state
    "kernel/sched/hlock.c",        # every thread embeds a helping lock; helping is a switch
    "kernel/sched/timer.c",        # the core's tick fires the timers; a timed sleep sleeps
})
ALLOWED_CIRCLES = (SCHED_CIRCLE,)

_DEF = re.compile(r"^(?!static\b)(?!typedef\b)(?!extern\b)[A-Za-z_][\w \t*]*?[\s*](\w+)\s*"
                  r"\([^;{]*\)?\s*(?:\{|$)", re.M)
_VAR = re.compile(r"^(?!static\b)(?!typedef\b)(?!extern\b)(?:const\s+)?(?:struct\s+)?\w+"
                  r"[\s*]+(\w+)\s*(?:\[[^\]]*\])*\s*(?:=|;)", re.M)
_KEYWORDS = {"if", "while", "for", "switch", "return", "sizeof"}


def strip_code(text: str) -> str:
    """C text without comments, string literals or character constants."""
    text = strip_comments(text)
    text = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(?:\\.|[^'\\\n])*'", "''", text)


def file_graph(sources: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """{file: {file it depends on: the names it takes}} for C sources {path: text}."""
    code = {p: strip_code(t) for p, t in sources.items()}
    owners: dict[str, set[str]] = {}
    for p, t in code.items():
        for n in (set(_DEF.findall(t)) | set(_VAR.findall(t))) - _KEYWORDS:
            owners.setdefault(n, set()).add(p)
    graph: dict[str, dict[str, set[str]]] = {p: {} for p in code}
    for p, t in code.items():
        for name in set(re.findall(r"\b[A-Za-z_]\w*\b", t)):
            own = owners.get(name, set())
            if len(own) == 1 and p not in own:
                graph[p].setdefault(next(iter(own)), set()).add(name)
    return graph


def circles(graph: dict[str, dict[str, set[str]]]) -> list[set[str]]:
    """The strongly connected components of more than one file (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, {})))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(comp)
    return out


def kernel_c_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(errors="replace")
            for p in sorted(KERNEL.rglob("*.c")) if "tests" not in p.relative_to(KERNEL).parts}


def test_kernel_files_have_no_circle_but_the_schedulers():
    graph = file_graph(kernel_c_sources())
    # the graph sees what it must: mlock.c takes from lockstat.c, the scheduler from panic
    assert "lockstat_site_add" in graph["kernel/lock/mlock.c"]["kernel/lock/lockstat.c"]
    assert "panic" in graph["kernel/sched/thread.c"]["kernel/core/panic.c"]
    bad = []
    for c in circles(graph):
        if not any(c <= ok for ok in ALLOWED_CIRCLES):
            ties = {f"{a} -> {b}": sorted(graph[a][b])[:6] for a in sorted(c)
                    for b in sorted(graph[a]) if b in c}
            bad.append(ties)
    assert not bad, bad


def test_circle_check_catches():
    src = {
        "kernel/core/printf.c": "void kwrite(void) { mlock_lock_at(0); }\n",
        "kernel/lock/mlock.c": "void mlock_lock_at(int x)\n{\n\tkwrite();\n}\n",
        "kernel/mm/pmm.c": "int pmm_total;\nvoid pmm_alloc(void) { mlock_lock_at(pmm_total); }\n",
        "kernel/sched/x.c": "/* kwrite() in prose */ static void f(void) { puts(\"pmm_alloc()\"); }\n",
    }
    g = file_graph(src)
    assert g["kernel/core/printf.c"] == {"kernel/lock/mlock.c": {"mlock_lock_at"}}
    assert g["kernel/sched/x.c"] == {}      # comments and strings name nothing
    assert circles(g) == [{"kernel/core/printf.c", "kernel/lock/mlock.c"}]


# The back-arrows that made the old 12-file circle, one rule each: a file, what it must not
# include, what it must not call, and why.
BACK_ARROWS = [
    ("kernel/core/printf.c", {"mlock.h", "lockstat.h", "monitor.h", "hlock.h", "thread.h"},
     r"\b(?:mlock|lockstat|mon|cv|hlock|thread|sched)_\w+\s*\(|\bLOCK_CLASS\b|\bMLOCK_INIT\b",
     "the console is a raw spin lock below the locks, which print through it"),
    ("kernel/core/panic.c", {"thread.h", "mlock.h"},
     r"\b(?:thread|sched|mlock)_\w+\s*\(",
     "panic names the thread through the namer the scheduler registers"),
    ("kernel/lock/lockstat.c", {"mm.h"},
     r"\b(?:pmm_\w+|heap_\w+|kmalloc|kzalloc|kfree)\s*\(",
     "the statistics get their memory once at init; the pool and heap are counted by them"),
    ("kernel/lock/mlock.c", {"thread.h", "sched_impl.h", "monitor.h", "mm.h"},
     r"\b(?:thread|sched|pmm|mon|cv)_\w+\s*\(|\bk[mz]alloc\s*\(",
     "the master locks sit below the scheduler: holders are named through panic_thread_on"),
]


def back_arrows(path: str, text: str) -> list[str]:
    out = []
    for file, headers, calls, why in BACK_ARROWS:
        if path != file:
            continue
        code = strip_code(text)
        for inc in INCLUDE.findall(strip_comments(text)):
            if Path(inc).name in headers:
                out.append(f"{path} includes {inc}: {why}")
        for m in sorted(set(re.findall(calls, code))):
            out.append(f"{path} uses {m.strip()}: {why}")
    return out


def test_no_back_arrow_under_the_scheduler():
    bad = []
    for file, *_ in BACK_ARROWS:
        bad += back_arrows(file, (ROOT / file).read_text())
    assert bad == [], bad


@pytest.mark.parametrize("path, snippet, what", [
    ("kernel/core/printf.c", '#include "mlock.h"\n', "includes mlock.h"),
    ("kernel/core/printf.c", "static struct mlock l = MLOCK_INIT(c, 1);\n", "MLOCK_INIT"),
    ("kernel/core/printf.c", "void f(void) { mlock_lock_irqsave(&l); }\n", "mlock_lock_irqsave"),
    ("kernel/core/panic.c", "void f(void) { thread_name(thread_self()); }\n", "thread_name"),
    ("kernel/lock/lockstat.c", "void f(void) { pmm_alloc_contig(2); }\n", "pmm_alloc_contig"),
    ("kernel/lock/lockstat.c", "void f(void) { kmalloc(2); }\n", "kmalloc"),
    ("kernel/lock/mlock.c", "const char *f(void *t) { return thread_name(t); }\n", "thread_name"),
    ("kernel/lock/mlock.c", '#include "thread.h"\n', "includes thread.h"),
])
def test_back_arrow_check_catches(path, snippet, what):
    v = back_arrows(path, snippet)
    assert any(what in s for s in v), v
    # and prose or a message naming it is no arrow
    assert back_arrows(path, f"/* {snippet} */\nconst char *m = \"{what}()\";\n") == []


# ---- a port takes nothing of the benchmarks ----------------------------------------------

def port_reaches_bench(path: Path, text: str, bench_only: set[str]) -> list[str]:
    """Includes of a file under arch/ that reach into bench/ (by path, or by the name of a
    header that only bench/ has)."""
    out = []
    for inc in INCLUDE.findall(strip_comments(text)):
        if "bench/" in inc or inc.startswith("bench"):
            out.append(f"{path}: includes {inc}")
        elif Path(inc).name in bench_only:
            out.append(f"{path}: includes {inc}, a header only bench/ has")
    return out


def bench_only_headers() -> set[str]:
    bench = {p.name for p in (ROOT / "bench").rglob("*.h")}
    elsewhere = {p.name for d in ("common", "include", "kernel", "arch", "lib")
                 for p in (ROOT / d).rglob("*.h")}
    return bench - elsewhere


def test_ports_include_nothing_of_bench():
    bench_only = bench_only_headers()
    assert "cmp_peers.h" in bench_only     # the check knows what to look for
    bad = []
    for p in sorted((ROOT / "arch").rglob("*")):
        if p.suffix in (".c", ".h", ".S"):
            bad += port_reaches_bench(p.relative_to(ROOT), p.read_text(errors="replace"),
                                      bench_only)
    mk = (ROOT / "mk" / "hosted-port.mk").read_text()
    bad += [f"mk/hosted-port.mk: {ln.strip()}" for ln in mk.splitlines()
            if "bench/" in ln and not ln.lstrip().startswith("#")]
    assert bad == [], bad


def test_hosted_env_is_shared_from_common_and_not_the_kernels():
    assert (ROOT / "common" / "hosted_env.h").is_file()
    assert not (ROOT / "bench" / "hosted_env.h").exists()
    users = [p for p in kernel_sources() if "hosted_env.h" in strip_comments(p.read_text())]
    assert users == [], users


@pytest.mark.parametrize("snippet", ['#include "../../bench/hosted_env.h"\n',
                                     '#include "bench/cmp_peers.h"\n',
                                     '#include "cmp_peers.h"\n'])
def test_bench_reach_check_catches(snippet):
    assert port_reaches_bench(Path("arch/hosted/costs.c"), snippet, {"cmp_peers.h"})
