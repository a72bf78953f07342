"""The report does not change under a refactoring: every fixture the tests use, rendered
through the whole document (terminal text at a fixed width, report.md, report.html), equals
the golden copy under tests/golden/ (written by tests/golden_render.py).

A commit that means to change the document regenerates the golden files and says so."""
import difflib

import pytest

import golden_render as gr

CASES = gr.cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_unchanged(name, tmp_path):
    got = gr.render(CASES[name], tmp_path)
    for ext, text in got.items():
        path = gr.GOLDEN / f"{name}.{ext}"
        want = path.read_text()
        if text != want:
            diff = "".join(difflib.unified_diff(
                want.splitlines(True), text.splitlines(True), str(path), "rendered", n=2))
            pytest.fail(f"{path.name} differs from the rendered report:\n{diff[:6000]}")
