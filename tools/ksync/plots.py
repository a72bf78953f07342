"""The report's figure helpers: matplotlib (Agg backend, imported on first use, so that
importing the report costs nothing until a figure is drawn), the shared style and one way
to save a figure as PNG and SVG next to report.html (DESIGN.md, "The report").

Every figure has a title, axis labels with units and the environment of its figures (tcg /
hosted, CPUs, host CPU model) in a subtitle; the paper's figure is drawn beside ours where
the paper has one. Output is deterministic: a fixed ``svg.hashsalt``, no date or software
version in the files' metadata.

Public API: ``plt`` and ``np`` (matplotlib.pyplot and numpy, loaded when first used),
``RC``, ``save_figure(fig, out_dir, stem, caption) -> Figure``, ``suptitle``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .base import Figure

RC = {"svg.hashsalt": "ksync", "font.size": 9, "axes.titlesize": 10,
      "figure.titlesize": 12, "figure.dpi": 100, "savefig.dpi": 110}
PNG_META: dict[str, Any] = {"Software": None}
SVG_META: dict[str, Any] = {"Date": None, "Creator": None}


def _load(name: str) -> Any:
    """matplotlib.pyplot (Agg backend) or numpy, imported on first use."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot
    import numpy
    return {"plt": matplotlib.pyplot, "np": numpy}[name]


def __getattr__(name: str) -> Any:
    if name in ("plt", "np"):
        return _load(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def save_figure(fig, out_dir: Path, stem: str, caption: str) -> Figure:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_dir / f"{stem}.png", metadata=PNG_META)
    # The PNG's draw placed every axes (constrained layout); the SVG keeps those places
    # instead of solving the layout again (the solve is most of a figure's cost).
    fig.set_layout_engine("none")
    fig.savefig(out_dir / f"{stem}.svg", metadata=SVG_META)
    _load("plt").close(fig)
    return Figure(f"{stem}.png", caption, f"{stem}.svg")


def suptitle(fig, title: str, env: str) -> None:
    fig.suptitle(f"{title}\n{env}", fontsize=11)
