"""The document: the report of whatever results exist, assembled from the report modules.

``PARTS`` lists them: one entry per paper or experiment, each giving its chapter and its
tables, findings and figures from the results (``Results``: prims.json, irq.json,
hosted.json, sprite.json, fiasco.json, osprims.json, any of them missing). Adding an experiment = a report
module and one entry here. The document opens with a summary (what ran, where, when and how
long; the verdict counts; the findings that matter most, chosen by ``TOP_RULE``), then one
chapter per paper in ``CHAPTERS`` order (Small & Manley, Massalin & Pu, Hartman &
Ousterhout, Hohmuth & Härtig, then libksync against its peers and ksync against Linux's
primitives), each with its findings first, then its tables and figures.

Public API: ``results_document``, ``render_results_doc``, ``render_results``,
``all_findings``, ``write_figures``, ``attach_figures``, ``PARTS``, ``CHAPTERS``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import (fiascoreport, findings, hostedreport, irqfigures, irqreport, osprimsreport, peers,
               pireport, report, schedreport, smclaims, smuserreport, spritereport,
               spriteuserreport, cyclicuserreport)
from .base import Chapter, Document, Figure, Finding, Summary, Table, cap_first
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
    osprims: dict | None = None
    spriteuser: dict | None = None
    cyclicuser: dict | None = None
    smuser: dict | None = None


def _none(r: Results) -> list:
    return []


def _no_figures(r: Results, out_dir: Path) -> dict[str, list[Figure]]:
    return {}


@dataclass(frozen=True)
class Part:
    name: str
    chapter: str                          # a key of CHAPTERS
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


MP_TABLES = ("Massalin & Pu", "MWCAS")   # prims.json's Massalin & Pu tables, by title


def _prims_tables(r: Results, mp: bool) -> list[Table]:
    return [t for t in (report.prims_tables(r.prims) if r.prims else [])
            if t.title.startswith(MP_TABLES) == mp]


def _hosted_sm_tables(r: Results) -> list[Table]:
    h = r.hosted
    if not h:
        return []
    return [t for t in (hostedreport.status_table(h), *hostedreport.crit_tables(h),
                        hostedreport.gap_table(h), *irqreport.hosted_load_tables(h),
                        hostedreport.signal_table(h)) if t is not None]


def _hosted_mp_tables(r: Results) -> list[Table]:
    t = hostedreport.mp_table(r.hosted) if r.hosted else None
    return [t] if t is not None else []


CHAPTERS = {
    "sm": "Small & Manley 1997: interrupt masking",
    "mp": "Massalin & Pu 1991: lock-free synchronization and threads",
    "ho": "Hartman & Ousterhout: Sprite's locks",
    "hh": "Hohmuth & Härtig 2001: helping locks and real-time lateness",
    "peers": "libksync against its peers",
    "linux": "ksync against Linux: operating-system primitives",
}

PARTS: list[Part] = [
    Part("masking primitive costs", "sm", tables=lambda r: _prims_tables(r, mp=False),
         findings=_sm_findings, figures=_sm_figures),
    Part("interrupt-masking schemes", "sm",
         tables=lambda r: irqreport.irq_tables(r.irq) if r.irq is not None else []),
    Part("the hosted kernel", "sm", tables=_hosted_sm_tables),
    Part("critical sections under real programs", "sm",
         tables=lambda r: smuserreport.sm_tables(r.smuser, r.irq),
         findings=lambda r: smuserreport.sm_findings(r.smuser, r.irq),
         figures=lambda r, d: smuserreport.sm_figures(r.smuser, d)),
    Part("lock-free costs", "mp",
         tables=lambda r: _prims_tables(r, mp=True) + _hosted_mp_tables(r),
         findings=_mp_findings),
    Part("threads and schedulers", "mp",
         tables=lambda r: schedreport.sched_tables(r.prims, r.hosted),
         findings=lambda r: schedreport.sched_findings(r.prims, r.hosted),
         figures=lambda r, d: {"Dispatches per second":
                               schedreport.dispatch_figure(r.prims, r.hosted, d)}),
    Part("Sprite's locks", "ho", tables=lambda r: spritereport.sprite_tables(r.sprite),
         findings=lambda r: spritereport.sprite_findings(r.sprite),
         figures=lambda r, d: spritereport.sprite_figures(r.sprite, d)),
    Part("Sprite's benchmarks as user programs", "ho",
         tables=lambda r: spriteuserreport.user_tables(r.spriteuser),
         findings=lambda r: spriteuserreport.user_findings(r.spriteuser),
         figures=lambda r, d: spriteuserreport.user_figures(r.spriteuser, d)),
    Part("helping locks and lateness", "hh",
         tables=lambda r: fiascoreport.fiasco_tables(r.fiasco),
         findings=lambda r: fiascoreport.fiasco_findings(r.fiasco),
         figures=lambda r, d: fiascoreport.fiasco_figures(r.fiasco, d)),
    Part("cyclictest as a user program", "hh",
         tables=lambda r: cyclicuserreport.cyc_tables(r.cyclicuser),
         findings=lambda r: cyclicuserreport.cyc_findings(r.cyclicuser)),
    Part("priority inversion", "hh", tables=lambda r: pireport.pi_tables(r.prims, r.hosted),
         findings=lambda r: pireport.pi_findings(r.prims, r.hosted),
         figures=lambda r, d: pireport.pi_figures(r.prims, r.hosted, d)),
    Part("libksync against its peers", "peers", tables=_peer_tables, findings=_peer_findings,
         figures=_peer_figures),
    Part("OS primitives", "linux", tables=lambda r: osprimsreport.os_tables(r.osprims),
         findings=lambda r: osprimsreport.os_findings(r.osprims)),
]


def _in_papers_order() -> list[Part]:
    """PARTS by chapter (CHAPTERS order), PARTS order within a chapter."""
    order = list(CHAPTERS)
    return sorted(PARTS, key=lambda p: order.index(p.chapter))


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
                  fiasco: dict | None = None, spriteuser: dict | None = None,
                  smuser: dict | None = None) -> dict[str, list[Figure]]:
    """Draw every figure the results support into ``out_dir``; returns the figures keyed
    by the title prefix of the table they belong under."""
    r = Results(prims, irq, hosted, sprite, fiasco, spriteuser=spriteuser, smuser=smuser)
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


TITLE = "ksync results: 1990s synchronization papers re-measured"
TOP_N = 5
TOP_RULE = ("The findings above are chosen by a fixed rule: the claims with a verdict (holds or "
            "reversed) first, in the papers' order (the chapters' order), reversed before "
            "holds within a paper and at most two per paper; then the claims within noise; "
            f"at most {TOP_N} in all. Every finding is in its paper's chapter.")
VERDICT_ORDER = ("holds", "reversed", "within noise", "not measurable here",
                 "input of the model")


def _meta(prims: dict | None, irq: dict | None, hosted: dict | None) -> list[tuple[str, str]]:
    """The run facts of each results file."""
    if prims is not None and irq is not None:
        meta = ([(f"primitive costs: {k}", v) for k, v in report.prims_meta(prims)]
                + irqreport.irq_meta(irq))
    elif prims is not None:
        meta = report.prims_meta(prims)
    elif irq is not None:
        meta = [(k.replace("interrupt schemes: ", ""), v) for k, v in irqreport.irq_meta(irq)]
    else:
        meta = []
    return meta + hostedreport.hosted_meta(hosted)


FILES = (("prims", "primitive costs (prims.json)"),
         ("irq", "interrupt-masking schemes (irq.json)"),
         ("hosted", "the kernel on the hosted port (hosted.json)"),
         ("sprite", "Sprite's locks (sprite.json)"),
         ("fiasco", "Fiasco's experiments (fiasco.json)"),
         ("osprims", "OS primitives against Linux (osprims.json)"),
         ("spriteuser", "Sprite's benchmarks as user programs (spriteuser.json)"),
         ("cyclicuser", "cyclictest under load on ksync and Linux (cyclicuser.json)"),
         ("smuser", "critical sections under real programs (smuser.json)"))


def _records(data: dict | None) -> list[dict]:
    d = data or {}
    recs = d.get("schemes") or d.get("runs") or []
    return [x for x in recs if isinstance(x, dict)] if isinstance(recs, list) else []


def _first(r: Results, *keys: str) -> str | None:
    for data in (r.prims, r.irq, r.hosted, r.sprite, r.fiasco, r.osprims, r.spriteuser,
                 r.cyclicuser, r.smuser):
        for src in (data or {}, (data or {}).get("meta") or {}):
            for k in keys:
                v = src.get(k) if isinstance(src, dict) else None
                if v:
                    return str(v)
    return None


def summary(r: Results, findings: list[Finding]) -> Summary:
    ran = [words for key, words in FILES if getattr(r, key) is not None]
    facts = [("what ran", "; ".join(ran))]
    envs = sorted({f.env.split(",")[0].split(" (")[0].strip() for f in findings
                   if f.env and f.env != "no data"})
    where = _first(r, "host_cpu_model") or "unknown host CPU"
    facts.append(("where", where + (f"; environments: {', '.join(envs)}" if envs else "")))
    when = _first(r, "timestamp")
    commit = _first(r, "commit")
    facts.append(("when", (when or "not recorded") + (f", commit {commit}" if commit else "")))
    secs = [x.get("elapsed") for d in (r.irq, r.hosted, r.sprite, r.fiasco)
            for x in _records(d)]
    secs = [float(s) for s in secs if isinstance(s, (int, float)) and not isinstance(s, bool)]
    facts.append(("how long", f"{sum(secs):.0f} s over {len(secs)} recorded boots"
                  if secs else "not recorded in these results"))
    counts = [(v, n) for v in VERDICT_ORDER if (n := sum(f.verdict == v for f in findings))]
    papers = list(dict.fromkeys(f.paper for f in findings))      # in chapter order
    judged = sorted((f for f in findings if f.verdict in ("reversed", "holds")),
                    key=lambda f: (papers.index(f.paper), f.verdict != "reversed"))
    top: list[Finding] = []
    for f in judged:
        if sum(x.paper == f.paper for x in top) < 2:
            top.append(f)
    top += [f for f in findings if f.verdict == "within noise"]
    return Summary(facts, counts, top[:TOP_N], TOP_RULE)


def results_document(prims: dict | None, irq: dict | None,
                     figures: dict[str, list[Figure]] | None = None,
                     hosted: dict | None = None, sprite: dict | None = None,
                     fiasco: dict | None = None, osprims: dict | None = None,
                     spriteuser: dict | None = None,
                     cyclicuser: dict | None = None,
                     smuser: dict | None = None) -> Document:
    """The report of whatever results exist: the summary, then one chapter per paper with
    results (its findings, then its tables). ``figures`` (write_figures) are attached under
    their tables."""
    if prims is None and irq is None and hosted is None and sprite is None and fiasco is None \
            and osprims is None and spriteuser is None and cyclicuser is None \
            and smuser is None:
        raise KsyncError("no results to report (neither prims.json nor irq.json nor "
                         "hosted.json nor sprite.json nor fiasco.json nor osprims.json)",
                         exit_code=2)
    r = Results(prims, irq, hosted, sprite, fiasco, osprims, spriteuser, cyclicuser, smuser)
    chapters = {key: Chapter(title) for key, title in CHAPTERS.items()}
    for p in _in_papers_order():
        chapters[p.chapter].findings += p.findings(r)
        chapters[p.chapter].tables += p.tables(r)
    shown = [c for c in chapters.values() if c.findings or c.tables]
    for n, c in enumerate(shown, 1):
        c.title = f"{n}. {c.title}"
        for f in c.findings:
            f.note = cap_first(f.note)
    doc = Document(title=TITLE, meta=_meta(prims, irq, hosted), chapters=shown,
                   tables=[t for c in shown for t in c.tables],
                   findings=[f for c in shown for f in c.findings])
    doc.summary = summary(r, doc.findings)
    return attach_figures(doc, figures)


def render_results(out_dir: Path, prims: dict | None = None, irq: dict | None = None,
                   strict: bool = False, warn=None) -> list[Path]:
    """``render_results_doc`` without the document: the files written."""
    return render_results_doc(out_dir, prims, irq, strict, warn)[0]



def render_results_doc(out_dir: Path, prims: dict | None = None, irq: dict | None = None,
                       strict: bool = False, warn=None, hosted: dict | None = None,
                       sprite: dict | None = None, fiasco: dict | None = None,
                       osprims: dict | None = None,
                       spriteuser: dict | None = None,
                       cyclicuser: dict | None = None,
                       smuser: dict | None = None) -> tuple[list[Path], Document]:
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
    if osprims is None:
        osprims = load(osprimsreport.OSPRIMS_JSON, osprimsreport.load_osprims)
    if spriteuser is None:
        spriteuser = load(spriteuserreport.SPRITEUSER_JSON, spriteuserreport.load_spriteuser)
    if cyclicuser is None:
        cyclicuser = load(cyclicuserreport.CYCLICUSER_JSON, cyclicuserreport.load_cyclicuser)
    if smuser is None:
        smuser = load(smuserreport.SMUSER_JSON, smuserreport.load_smuser)
    if prims is None and irq is None and hosted is None and sprite is None and fiasco is None \
            and osprims is None and spriteuser is None and cyclicuser is None and smuser is None:
        raise KsyncError(f"{out_dir / PRIMS_JSON} not found (nor {IRQ_JSON}, "
                         f"{HOSTED_JSON}, {spritereport.SPRITE_JSON}, "
                         f"{fiascoreport.FIASCO_JSON}, {osprimsreport.OSPRIMS_JSON}); run "
                         "`ksync run` first (or pass --out DIR)", exit_code=2)
    figures = write_figures(prims, irq, out_dir, hosted, sprite, fiasco, spriteuser, smuser)
    doc = results_document(prims, irq, figures, hosted, sprite, fiasco, osprims, spriteuser,
                           cyclicuser, smuser)
    written = report.write_document(doc, out_dir)
    for figs in figures.values():
        for f in figs:
            written += [out_dir / f.src] + ([out_dir / f.svg] if f.svg else [])
    return written, doc
