"""The document: the report of whatever results exist, assembled from the report modules.

``PARTS`` lists them in the order of the document's tables: one entry per paper or
experiment, each giving its tables, findings, figures and run facts from the results
(``Results``: prims.json, irq.json, hosted.json, sprite.json, fiasco.json, any of them
missing). Adding an experiment = a report module and one entry here. The findings come first
in the document, in the papers' order (``FINDINGS_ORDER``).

Public API: ``results_document``, ``render_results_doc``, ``render_results``,
``all_findings``, ``write_figures``, ``attach_figures``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import (fiascoreport, findings, hostedreport, irqfigures, irqreport, peers, pireport, report,
               schedreport, smclaims, spritereport)
from .base import Document, Figure, Finding, Table, cap_first
from .hosteddata import HOSTED_JSON, load_hosted
from .irqdata import IRQ_JSON, PRIMS_JSON, IrqIndex, load_irq
from .util import KsyncError, display_path


@dataclass
class Results:
    prims: dict | None = None
    irq: dict | None = None
    hosted: dict | None = None
    sprite: dict | None = None
    fiasco: dict | None = None


def _none(r: Results) -> list:
    return []


def _no_figures(r: Results, out_dir: Path) -> dict[str, list[Figure]]:
    return {}


@dataclass(frozen=True)
class Part:
    name: str
    tables: Callable[[Results], list[Table]] = _none
    findings: Callable[[Results], list[Finding]] = _none
    figures: Callable[[Results, Path], dict[str, list[Figure]]] = _no_figures


# ---------------------------------------------------------------------------------------
# each part: which module's functions, on which results


def _cmp(r: Results) -> tuple[list[dict], dict | None] | None:
    if isinstance(r.prims, dict) and r.prims.get("cmp"):
        return r.prims["cmp"], (r.prims.get("sides") or {}).get("hosted")
    return None


def _peer_tables(r: Results) -> list[Table]:
    c = _cmp(r)
    return peers.cmp_tables(*c) if c else []


def _peer_findings(r: Results) -> list[Finding]:
    c = _cmp(r)
    return peers.peer_findings(*c) if c else []


def _peer_figures(r: Results, out_dir: Path) -> dict[str, list[Figure]]:
    c = _cmp(r)
    out: dict[str, list[Figure]] = {}
    for fig in peers.peer_figure(*c, out_dir) if c else []:
        # peers-latency.png under the latency table, peers-throughput.png under the other
        metric = "latency" if "latency" in fig.src else "throughput"
        out.setdefault(f"libksync vs Concurrency Kit and liburcu: {metric}", []).append(fig)
    return out


def _sm_findings(r: Results) -> list[Finding]:
    """Small & Manley 1997: Table 5's gaps, the hosted gap, the other observations, Table 6
    and the data loss."""
    ix = IrqIndex(r.irq if isinstance(r.irq, dict) else None)
    out: list[Finding] = []
    if (r.prims is not None or r.irq is not None
            or (r.hosted is None and r.sprite is None and r.fiasco is None)):
        out += findings.table5_findings(r.prims, ix)
    out += hostedreport.hosted_findings(r.hosted)
    if r.irq is not None or r.hosted is not None:
        out += smclaims.sm_claim_findings(ix, r.hosted)
    if r.irq is not None:
        out += findings.table6_findings(ix)
        out.append(findings.loss_finding(ix))
    return out


def _sm_figures(r: Results, out_dir: Path) -> dict[str, list[Figure]]:
    ix = IrqIndex(r.irq if isinstance(r.irq, dict) else None)
    out: dict[str, list[Figure]] = {}
    t5 = irqfigures.table5_figure(r.prims, ix, out_dir)
    if t5:
        out["Table 5:" if r.irq is not None else "Ratios of medians"] = t5
    if r.irq is not None:
        out["Table 6:"] = irqfigures.table6_figure(ix, out_dir)
        out["Table 7:"] = irqfigures.latency_figure(ix, out_dir)
        out["Loss map"] = irqfigures.lossmap_figure(ix, out_dir)
    return out


def _mp_findings(r: Results) -> list[Finding]:
    return (findings.mp_findings(r.prims) + findings.mp_kernel_findings(r.hosted)
            + findings.mp_2t_findings(r.prims) + findings.spsc_ends_finding(r.prims))


def _hosted_tables(r: Results) -> list[Table]:
    return hostedreport.hosted_tables(r.hosted, irqreport.hosted_load_tables(r.hosted))


PARTS: list[Part] = [
    Part("primitive costs", tables=lambda r: report.prims_tables(r.prims) if r.prims else [],
         findings=_mp_findings),
    Part("libksync against its peers", tables=_peer_tables, findings=_peer_findings,
         figures=_peer_figures),
    Part("interrupt-masking schemes",
         tables=lambda r: irqreport.irq_tables(r.irq) if r.irq is not None else [],
         findings=_sm_findings, figures=_sm_figures),
    Part("the hosted kernel", tables=_hosted_tables),
    Part("threads and schedulers", tables=lambda r: schedreport.sched_tables(r.prims, r.hosted),
         findings=lambda r: schedreport.sched_findings(r.prims, r.hosted),
         figures=lambda r, d: {"Dispatches per second":
                               schedreport.dispatch_figure(r.prims, r.hosted, d)}),
    Part("Sprite's locks", tables=lambda r: spritereport.sprite_tables(r.sprite),
         findings=lambda r: spritereport.sprite_findings(r.sprite),
         figures=lambda r, d: spritereport.sprite_figures(r.sprite, d)),
    Part("helping locks and lateness", tables=lambda r: fiascoreport.fiasco_tables(r.fiasco),
         findings=lambda r: fiascoreport.fiasco_findings(r.fiasco),
         figures=lambda r, d: fiascoreport.fiasco_figures(r.fiasco, d)),
    Part("priority inversion", tables=lambda r: pireport.pi_tables(r.prims, r.hosted),
         findings=lambda r: pireport.pi_findings(r.prims, r.hosted),
         figures=lambda r, d: pireport.pi_figures(r.prims, r.hosted, d)),
]
# the findings in the papers' order: Small & Manley, Massalin & Pu (costs, libksync's peers,
# threads), Hartman & Ousterhout, Hohmuth & Härtig; a part not named here follows in PARTS
# order
FINDINGS_ORDER = ("interrupt-masking schemes", "primitive costs", "libksync against its peers",
                  "threads and schedulers", "Sprite's locks", "helping locks and lateness",
                  "priority inversion")


def _in_papers_order() -> list[Part]:
    named = [p for n in FINDINGS_ORDER for p in PARTS if p.name == n]
    return named + [p for p in PARTS if p not in named]


# ---------------------------------------------------------------------------------------
# the document


def all_findings(prims: dict | None, irq: dict | None,
                 hosted: dict | None = None, sprite: dict | None = None,
                 fiasco: dict | None = None) -> list[Finding]:
    """Every finding the results support, in the papers' order."""
    r = Results(prims, irq, hosted, sprite, fiasco)
    out = [f for p in _in_papers_order() for f in p.findings(r)]
    for f in out:
        f.note = cap_first(f.note)
    return out


def write_figures(prims: dict | None, irq: dict | None, out_dir: Path,
                  hosted: dict | None = None, sprite: dict | None = None,
                  fiasco: dict | None = None) -> dict[str, list[Figure]]:
    """Draw every figure the results support into ``out_dir``; returns the figures keyed
    by the title prefix of the table they belong under."""
    r = Results(prims, irq, hosted, sprite, fiasco)
    out: dict[str, list[Figure]] = {}
    for p in _in_papers_order():
        for key, figs in p.figures(r, out_dir).items():
            out.setdefault(key, []).extend(figs)
    return {k: v for k, v in out.items() if v}


def attach_figures(doc: Document, figures: dict[str, list[Figure]] | None) -> Document:
    """Put each figure under the first table whose title starts with its key; figures no
    table claims go under the last table."""
    for key, figs in (figures or {}).items():
        t = next((t for t in doc.tables if t.title.startswith(key)), None)
        if t is None and doc.tables:
            t = doc.tables[-1]
        if t is not None:
            t.images.extend(f for f in figs if f not in t.images)
    return doc


def _frame(prims: dict | None, irq: dict | None, hosted: dict | None,
           sprite: dict | None) -> Document:
    """The title and the run facts (no tables yet) of the results given."""
    if prims is None and irq is None and hosted is None and sprite is None:
        doc = Document(title="ksync results: helping locks and real-time lateness (Fiasco)")
    elif prims is None and irq is None and hosted is None:
        doc = Document(title="ksync results: Sprite's locks and lock statistics")
    elif prims is None and irq is None:
        doc = Document(title="ksync results: the kernel on the hosted port")
    elif irq is None:
        doc = Document(title="ksync primitive costs", meta=report.prims_meta(prims))
    elif prims is None:
        doc = Document(title="ksync interrupt-masking schemes (Small & Manley 1997)",
                       meta=[(k.replace("interrupt schemes: ", ""), v)
                             for k, v in irqreport.irq_meta(irq)])
    else:
        doc = Document(title="ksync results: primitive costs and interrupt-masking schemes",
                       meta=[(f"primitive costs: {k}", v) for k, v in report.prims_meta(prims)]
                       + irqreport.irq_meta(irq))
    doc.meta += hostedreport.hosted_meta(hosted)
    return doc


def results_document(prims: dict | None, irq: dict | None,
                     figures: dict[str, list[Figure]] | None = None,
                     hosted: dict | None = None, sprite: dict | None = None,
                     fiasco: dict | None = None) -> Document:
    """The report of whatever results exist, the findings first, then every part's tables
    in PARTS order. ``figures`` (write_figures) are attached under their tables."""
    if prims is None and irq is None and hosted is None and sprite is None and fiasco is None:
        raise KsyncError("no results to report (neither prims.json nor irq.json nor "
                         "hosted.json nor sprite.json nor fiasco.json)", exit_code=2)
    r = Results(prims, irq, hosted, sprite, fiasco)
    doc = _frame(prims, irq, hosted, sprite)
    doc.tables = [t for p in PARTS for t in p.tables(r)]
    doc.findings = all_findings(prims, irq, hosted, sprite, fiasco)
    return attach_figures(doc, figures)



def render_results(out_dir: Path, prims: dict | None = None, irq: dict | None = None,
                   strict: bool = False, warn=None) -> list[Path]:
    """``render_results_doc`` without the document: the files written."""
    return render_results_doc(out_dir, prims, irq, strict, warn)[0]



def render_results_doc(out_dir: Path, prims: dict | None = None, irq: dict | None = None,
                       strict: bool = False, warn=None, hosted: dict | None = None,
                       sprite: dict | None = None, fiasco: dict | None = None
                       ) -> tuple[list[Path], Document]:
    """Write report.md / report.html and the figures (PNG + SVG) from ``prims`` / ``irq`` or,
    for the ones not given, from prims.json / irq.json in ``out_dir`` when they exist.

    ``strict``: a JSON file that exists but cannot be read is an error (``ksync report``);
    otherwise it is skipped with a ``warn`` message (after ``ksync run``).
    """
    out_dir = Path(out_dir)

    def load(name, loader):
        path = out_dir / name
        if not path.exists():
            return None
        try:
            return loader(path)
        except KsyncError as e:
            if strict:
                raise
            if warn:
                warn(f"{display_path(path)} left out of the report: {e}")
            return None

    if prims is None:
        prims = load(PRIMS_JSON, report.load_prims)
    if irq is None:
        irq = load(IRQ_JSON, load_irq)
    if hosted is None:
        hosted = load(HOSTED_JSON, load_hosted)
    if sprite is None:
        sprite = load(spritereport.SPRITE_JSON, spritereport.load_sprite)
    if fiasco is None:
        fiasco = load(fiascoreport.FIASCO_JSON, fiascoreport.load_fiasco)
    if prims is None and irq is None and hosted is None and sprite is None and fiasco is None:
        raise KsyncError(f"{out_dir / PRIMS_JSON} not found (nor {IRQ_JSON}, "
                         f"{HOSTED_JSON}, {spritereport.SPRITE_JSON}, "
                         f"{fiascoreport.FIASCO_JSON}); run "
                         "`ksync run` first (or pass --out DIR)", exit_code=2)
    figures = write_figures(prims, irq, out_dir, hosted, sprite, fiasco)
    doc = results_document(prims, irq, figures, hosted, sprite, fiasco)
    written = report.write_document(doc, out_dir)
    for figs in figures.values():
        for f in figs:
            written += [out_dir / f.src] + ([out_dir / f.svg] if f.svg else [])
    return written, doc
