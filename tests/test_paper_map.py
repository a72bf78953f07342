"""docs/paper-map.md names only what exists: every path it cites is a file or directory of
the tree, and every test, experiment or row name in its test and experiment columns occurs
in the sources (outside docs/). A row left behind by a rename or a removal fails here."""
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "paper-map.md"
SOURCE_DIRS = ("arch", "bench", "common", "include", "kernel", "lib", "mk", "scripts", "spin",
               "tests", "tools")
SOURCE_FILES = ("Makefile",)
SUFFIXES = {".c", ".h", ".S", ".py", ".pml", ".txt", ".mk", ".sh", ".md", ".json", ".ld",
            ".pc", ".in", ""}
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def rows():
    """(line number, cells) of every table row of the map, header rows left out."""
    out = []
    for n, line in enumerate(MAP.read_text(encoding="utf-8").splitlines(), 1):
        if not line.startswith("|") or line.startswith("|---") or line.startswith("| mechanism"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        out.append((n, cells))
    return out


def ticked(cell):
    return [t.replace("\\|", "|") for t in re.findall(r"`([^`]+)`", cell)]


GENERATED = ("results/", "build/")      # what a run or a build writes: not in the tree


@lru_cache(maxsize=1)
def basenames():
    return {f.name for d in SOURCE_DIRS for f in (ROOT / d).rglob("*")}


def resolve(path):
    """A cited path: as written from the repository's root, or a bare file name (``spl.h``,
    ``test_sched.c``: the map's shorthand once the directory was named) found under the
    source directories. Placeholders (<scheme>, *) match by glob."""
    p = path.split("::", 1)[0].rstrip("/")
    if any(ch in p for ch in "<*{"):
        pat = re.sub(r"<[^>]*>|\{[^}]*\}", "*", p)
        return any(ROOT.glob(pat))
    if "/" not in p:
        return p in basenames()
    return (ROOT / p).exists()


def is_path(part):
    """A path from the root (its first part a directory of the tree) or a file name with
    an extension; not ``a_start/stop`` (two names) or an output of a run."""
    if "=" in part or part.startswith(("-", "http")) or part.startswith(GENERATED):
        return False
    if "/" in part:
        return (ROOT / part.split("/", 1)[0]).is_dir()
    return re.match(r"^[\w.+-]+\.(c|h|S|py|pml|md|txt|mk)$", part) is not None


def path_tokens(cell):
    out = []
    for t in ticked(cell):
        for part in re.split(r",\s*|\s+", t):
            part = part.strip("()`;")
            if part and is_path(part):
                out.append(part)
    return out


@lru_cache(maxsize=1)
def corpus():
    texts = []
    for d in SOURCE_DIRS:
        for f in (ROOT / d).rglob("*"):
            if f.is_file() and f.suffix in SUFFIXES and "__pycache__" not in f.parts:
                try:
                    texts.append(f.read_text(encoding="utf-8", errors="replace"))
                except OSError:
                    pass
    for name in SOURCE_FILES:
        texts.append((ROOT / name).read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


def name_tokens(cell):
    """Test / experiment / row names; ``_faa`` after ``mp_counter_inc_nosync`` is the map's
    shorthand for ``mp_counter_inc_faa`` (never after a private name: ``_f_a``, ``_f_b`` are two
    names)."""
    out = []
    prev = None
    for t in ticked(cell):
        if "::" in t:
            t = t.split("::", 1)[1]
        if (t.startswith("_") and not t.startswith("__") and prev and not prev.startswith("_")
                and IDENT.match(t)):
            t = prev.rsplit("_", 1)[0] + t
        if IDENT.match(t) and "_" in t.strip("_"):
            out.append(t)
            prev = t
    return out


def test_the_map_has_rows_of_six_cells():
    assert len(rows()) > 50
    bad = [n for n, cells in rows() if len(cells) != 6]
    assert not bad, f"rows without the six columns (mechanism .. status) at lines {bad}"


@pytest.mark.parametrize("col", [2, 3, 4], ids=["file", "test", "experiment"])
def test_every_cited_path_exists(col):
    missing = [f"line {n}: {p}" for n, cells in rows() if len(cells) > col
               for p in path_tokens(cells[col]) if not resolve(p)]
    assert not missing, "paths cited in docs/paper-map.md that are not in the tree:\n" + \
        "\n".join(missing)


@pytest.mark.parametrize("col", [2, 3, 4], ids=["file", "test", "experiment"])
def test_every_cited_name_exists(col):
    text = corpus()
    missing = []
    for n, cells in rows():
        if len(cells) <= col:
            continue
        for name in name_tokens(cells[col]):
            if "*" in name:
                rx = re.compile(r"\b" + re.escape(name).replace(r"\*", r"\w*") + r"\b")
                found = rx.search(text) is not None
            else:
                found = re.search(r"\b" + re.escape(name) + r"\b", text) is not None
            if not found:
                missing.append(f"line {n}: {name}")
    assert not missing, "names cited in docs/paper-map.md found nowhere in the sources:\n" + \
        "\n".join(missing)


def test_checker_catches_a_stale_path_and_name():
    assert not resolve("kernel/no/such_file.c")
    assert resolve("kernel/spl/<scheme>.c")
    assert resolve("tests/test_tool_irq.py::test_x")
    assert path_tokens("`arch/x86_64/pic.c`, `Makefile` (`SCHEME=`)") == ["arch/x86_64/pic.c"]
    assert name_tokens("`pic_imr_reads_back`, `tests/test_spin.py`") == ["pic_imr_reads_back"]
    assert name_tokens("`mp_counter_inc_nosync`, `_faa`") == ["mp_counter_inc_nosync",
                                                             "mp_counter_inc_faa"]
    assert not is_path("lockstat_note_created/destroyed") and is_path("spl.h")
    assert not resolve("no_such_header.h")
    assert not re.search(r"\bno_such_test_name_zz\b", corpus())
