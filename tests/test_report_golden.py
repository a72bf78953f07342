"""The report does not change under a refactoring: every fixture the tests use, rendered
through the whole document (terminal text at a fixed width, report.md, report.html), equals
the golden copy under tests/golden/ (written by tests/golden_render.py).

A commit that means to change the document regenerates the golden files and says so."""
import difflib
from pathlib import Path

import pytest

import golden_render as gr
from ksync import plots

CASES = gr.cases()


# The "all" case is every paper's results in one document: its figures are the ones the
# single-paper cases above draw from the same fixtures, so here they are built but not
# rasterized (a stub of plots.save_figure writes empty files under the same names and
# closes the figure): the text, the names and the order are what this case checks, and
# rasterizing ~30 figures a second time was ~16 CPU-s of make test.
def _save_unrasterized(fig, out_dir, stem, caption):
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{stem}.png").write_bytes(b"")
    (out_dir / f"{stem}.svg").write_bytes(b"")
    plots.plt.close(fig)
    return plots.Figure(f"{stem}.png", caption, f"{stem}.svg")


@pytest.mark.parametrize("name", sorted(CASES))
def test_report_unchanged(name, tmp_path, monkeypatch):
    if name == "all":
        monkeypatch.setattr(plots, "save_figure", _save_unrasterized)
    got = gr.render(CASES[name], tmp_path)
    for ext, text in got.items():
        path = gr.GOLDEN / f"{name}.{ext}"
        want = path.read_text()
        if text != want:
            diff = "".join(difflib.unified_diff(
                want.splitlines(True), text.splitlines(True), str(path), "rendered", n=2))
            pytest.fail(f"{path.name} differs from the rendered report:\n{diff[:6000]}")
