"""The host tool's layering (tools/ksync), read from its imports with ``ast``:

* no circle in the import graph of the package's modules;
* no module imports another module's private name (``from .x import _y``, ``x._y``): what
  two modules share is public, in the base layer;
* no function-local import of a project module (a dodge around a circle);
* a report module (one per paper or experiment: its results JSON to tables, findings,
  figures) imports no other report module, only the base layer; the document
  (document.py) is the one module that assembles them.

Each failure names the file and the import.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "tools" / "ksync"
MODULES = {p.stem: p for p in sorted(PKG.glob("*.py"))}
# the base layer: shared by every report module, importing no report module
BASE = {"base", "plots", "irqdata", "hosteddata", "schemes", "util"}
# one module per paper or experiment
REPORTS = {"report", "irqreport", "irqfigures", "findings", "smclaims", "hostedreport",
           "schedreport", "spritereport", "fiascoreport", "pireport", "peers", "osprimsreport",
           "spriteuserreport", "cyclicuserreport", "smuserreport"}


def _targets(node: ast.AST, module: str) -> list[tuple[str, list[str]]]:
    """(project module, names taken from it) of one import statement; [] for others."""
    out = []
    if isinstance(node, ast.ImportFrom):
        pkg = node.level == 1 or (node.level == 0 and (node.module or "").split(".")[0] == "ksync")
        if not pkg:
            return []
        mod = node.module or ""
        if node.level == 0:
            mod = mod.split(".", 1)[1] if "." in mod else ""
        if mod:
            out.append((mod, [a.name for a in node.names]))
        else:                       # from . import a, b: modules
            out += [(a.name, []) for a in node.names if a.name in MODULES]
    elif isinstance(node, ast.Import):
        for a in node.names:
            parts = a.name.split(".")
            if parts[0] == "ksync" and len(parts) > 1:
                out.append((parts[1], []))
    return [(m, names) for m, names in out if m in MODULES and m != module]


def _parse(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"), str(MODULES[name]))


def _where(name: str, node: ast.AST) -> str:
    return f"tools/ksync/{name}.py:{node.lineno}: {ast.unparse(node)}"


def graph() -> dict[str, dict[str, ast.AST]]:
    """module -> {imported project module: the first statement importing it}, top level."""
    out: dict[str, dict[str, ast.AST]] = {}
    for name in MODULES:
        edges: dict[str, ast.AST] = {}
        for node in _parse(name).body:
            for mod, _ in _targets(node, name):
                edges.setdefault(mod, node)
        out[name] = edges
    return out


def test_no_circle():
    g = graph()
    state: dict[str, int] = {}
    stack: list[str] = []
    found: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in g[m]:
            if state.get(n) == 1:
                cyc = stack[stack.index(n):] + [n]
                found.append(" -> ".join(cyc) + "\n    " + "\n    ".join(
                    _where(a, g[a][b]) for a, b in zip(cyc, cyc[1:])))
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert not found, "import circle(s):\n" + "\n".join(found)


def test_no_private_name_from_another_module():
    bad = []
    for name in MODULES:
        tree = _parse(name)
        aliases: dict[str, str] = {}        # local name -> project module
        for node in ast.walk(tree):
            for mod, names in _targets(node, name):
                bad += [_where(name, node) for n in names if n.startswith("_")]
                if isinstance(node, ast.ImportFrom) and not names:
                    for a in node.names:
                        if a.name == mod:
                            aliases[a.asname or a.name] = mod
                elif isinstance(node, ast.ImportFrom):
                    for a in node.names:
                        if a.name in MODULES and a.name not in names:
                            aliases[a.asname or a.name] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and isinstance(node.value, ast.Name)
                    and node.value.id in aliases):
                bad.append(f"tools/ksync/{name}.py:{node.lineno}: {ast.unparse(node)}")
    assert not bad, "private names of another module:\n" + "\n".join(bad)


def test_no_function_local_import_of_a_project_module():
    bad = []
    for name in MODULES:
        tree = _parse(name)
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top \
                    and _targets(node, name):
                bad.append(_where(name, node))
    assert not bad, "function-local imports of project modules:\n" + "\n".join(bad)


def test_report_modules_import_only_the_base():
    g = graph()
    bad = [_where(m, node) for m in sorted(REPORTS) for dep, node in g[m].items()
           if dep in REPORTS]
    assert not bad, "a report module imports another report module:\n" + "\n".join(bad)
    bad = [_where(m, node) for m in sorted(BASE) for dep, node in g[m].items()
           if dep not in BASE]
    assert not bad, "a base-layer module imports above the base:\n" + "\n".join(bad)


def test_the_layers_name_real_modules():
    assert BASE | REPORTS <= set(MODULES), sorted((BASE | REPORTS) - set(MODULES))
    unlisted = [m for m in MODULES if m.endswith("report") and m not in REPORTS]
    assert not unlisted, f"report modules not in REPORTS: {unlisted}"
