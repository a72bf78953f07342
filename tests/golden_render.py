"""The whole report of every fixture the tests use, rendered for tests/test_report_golden.py.

Each case is a set of results (prims / irq / hosted / sprite / fiasco, any of them None) built
from tests/report_fixtures.py, tests/fixtures/*.json and the sched / pi tests' synthetic
runs. ``render(case, out_dir)`` writes the report (figures included, so the page names them)
and returns {file name: text}: the terminal text at a fixed width, report.md and report.html.

Run as a script to (re)write the golden files under tests/golden/:

    .venv/bin/python tests/golden_render.py

Only a change that means to change the document does that, and its commit says so.
"""
from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
FIXTURES = HERE / "fixtures"
for p in (str(HERE.parent / "tools"), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import report_fixtures as fx  # noqa: E402
import test_tool_pi_report as pi  # noqa: E402
import test_tool_sched_report as sched  # noqa: E402
from ksync import document
from ksync import fiascoreport, report, spritereport  # noqa: E402

WIDTH = 100      # the terminal text's width: fixed, not the test host's terminal


def _json(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def cases() -> dict[str, dict]:
    """name -> keyword arguments of the document builder (prims, irq, hosted, sprite,
    fiasco)."""
    sprite = spritereport.load_sprite(FIXTURES / "sprite_small.json")
    prims_all = fx.prims_data()
    prims_all["sched"] = sched.prims_data()["sched"]
    return {
        "prims": dict(prims=fx.prims_data()),
        "prims-long-cpu-kvm": dict(prims=fx.prims_data(fx.LONG_CPU, kernel_env="kvm")),
        "irq": dict(irq=fx.irq_data()),
        "irq-two-schemes": dict(irq=fx.irq_data(only=("spl-pessim", "cli-optim"))),
        "prims-irq": dict(prims=fx.prims_data(), irq=fx.irq_data()),
        "hosted-sm-claims": dict(hosted=_json("hosted_sm_claims.json")),
        "hosted-sched": dict(prims=sched.prims_data(), hosted=sched.hosted_data()),
        "hosted-pi": dict(hosted=pi.hosted_data()),
        "sprite": dict(sprite=sprite),
        "fiasco-small": dict(fiasco=fiascoreport.load_fiasco(FIXTURES / "fiasco_small.json")),
        "fiasco-synth": dict(fiasco=fiascoreport.load_fiasco(FIXTURES / "fiasco_synth.json")),
        "fiasco-hosted": dict(fiasco=fiascoreport.load_fiasco(
            FIXTURES / "fiasco_hosted_small.json")),
        "all": dict(prims=prims_all, irq=fx.irq_data(), hosted=_json("hosted_sm_claims.json"),
                    sprite=sprite,
                    fiasco=fiascoreport.load_fiasco(FIXTURES / "fiasco_small.json")),
    }


def _render_doc(out_dir: Path, kw: dict):
    """The document and its files through the tool's one entry point for a report."""
    return document.render_results_doc(out_dir, **kw)


def render(kw: dict, out_dir: Path) -> dict[str, str]:
    _, doc = _render_doc(out_dir, copy.deepcopy(kw))
    return {"txt": report.render_text(doc, WIDTH),
            "md": (out_dir / "report.md").read_text(),
            "html": (out_dir / "report.html").read_text()}


def write_all() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, kw in cases().items():
        with tempfile.TemporaryDirectory() as d:
            for ext, text in render(kw, Path(d)).items():
                (GOLDEN / f"{name}.{ext}").write_text(text)
        print(name)


if __name__ == "__main__":
    write_all()
