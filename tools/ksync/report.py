"""Result tables: a small general renderer (text / Markdown / HTML) and the primitive-cost
table of issue 2 (docs/protocol.md section 4) built on it.

General part (reuse it for later tables):

* ``ColumnSpec(header, cell, align)`` -- ``cell(item) -> str``
* ``build_table(title, items, columns, notes_above=(), notes_below=()) -> Table``
* ``Table.images``: ``Figure(src, caption)`` list shown under the table (an ``<img>`` in
  HTML, ``![caption](src)`` in Markdown, a ``figure:`` line in text); ``src`` is relative
  to the report's directory
* ``Document(title, meta, tables)`` (the model: base.py); ``render_text``,
  ``render_markdown``, ``render_html``;
  ``write_document(doc, out_dir)`` writes report.md and report.html

The interrupt-scheme tables of issue 4 live in irqreport.py and use this renderer.

Primitive costs:

* ``PRIM_ROWS`` (list of ``PrimRow``), ``REF_1997``
* ``make_prims_data(kernel_rows, hosted_rows, kernel_side, hosted_side, meta) -> dict``
  (what ``prims.json`` holds)
* ``load_prims(path) -> dict``, ``prims_tables(data)``, ``prims_meta(data)``,
  ``prims_document(data) -> Document``,
  ``write_reports(data, out_dir) -> list[Path]``
"""
from __future__ import annotations

import html
import json
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from .util import KsyncError
from .base import (ColumnSpec, DASH, Document, Finding, TEXT_WIDTH, Table, UNJUDGED,
                   build_table, fmt_hz, fmt_ratio, fmt_ticks)

SCHEMA = "ksync-prims/1"

# ---------------------------------------------------------------------------------------
# general tables


_SEP = "  "


def _pad(text: str, width: int, align: str) -> str:
    return text.rjust(width) if align == "r" else text.ljust(width)


def _wrap(note: str, width: int = TEXT_WIDTH, indent: str = "  ") -> list[str]:
    """``note`` wrapped at ``width`` columns; a word longer than a line (a path) is broken
    rather than overflowing."""
    return textwrap.wrap(note, width=width, subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [""]


def _grid_lines(headers: list[str], rows: list[list[str]], align: list[str]) -> list[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    out = [_SEP.join(_pad(h, widths[i], align[i]) for i, h in enumerate(headers)).rstrip(),
           _SEP.join("-" * w for w in widths)]
    for row in rows:
        out.append(_SEP.join(_pad(c, widths[i], align[i]) for i, c in enumerate(row)).rstrip())
    return out


def _col_widths(t: Table) -> list[int]:
    widths = [len(h) for h in t.headers]
    for row in t.rows:
        for i, cell in enumerate(row[:len(widths)]):
            widths[i] = max(widths[i], len(cell))
    return widths


def column_groups(t: Table, width: int = TEXT_WIDTH) -> list[list[int]] | None:
    """How a table wider than ``width`` is split for the terminal: lists of column indices,
    each starting with the key column 0 and fitting in ``width``; None when some column
    does not fit beside the key even alone (the table is then shown as records)."""
    widths = _col_widths(t)
    if sum(widths) + len(_SEP) * (len(widths) - 1) <= width:
        return [list(range(len(widths)))]
    groups: list[list[int]] = []
    cur, used = [0], widths[0]
    for i in range(1, len(widths)):
        need = len(_SEP) + widths[i]
        if widths[0] + need > width:
            return None
        if used + need > width:
            groups.append(cur)
            cur, used = [0], widths[0]
        cur.append(i)
        used += need
    groups.append(cur)
    return groups


def _record_lines(t: Table, width: int) -> list[str]:
    """A table too wide even for column groups: one block per row, ``header: value``."""
    out = []
    for row in t.rows:
        out += _wrap(f"{t.headers[0]}: {row[0]}", width, indent="    ")
        for h, c in zip(t.headers[1:], row[1:]):
            out += _wrap(f"  {h}: {c}", width, indent="      ")
    return out


def render_table_text(t: Table, width: int = TEXT_WIDTH) -> str:
    """The table as terminal text no wider than ``width`` columns: a wider table is split
    into column groups that repeat the first (key) column, or shown as one record per row
    when a single column is too wide; the Markdown and HTML reports keep the full width."""
    out = _wrap(t.title, width, indent="")
    out.append("=" * min(len(t.title), width))
    for n in t.notes_above:
        out += _wrap(n, width)
    if t.notes_above:
        out.append("")
    groups = column_groups(t, width)
    if groups is None:
        out.append(f"(shown as one record per row: too wide for {width} columns)")
        out += _record_lines(t, width)
    elif len(groups) == 1:
        out += _grid_lines(t.headers, t.rows, t.align)
    else:
        for gi, g in enumerate(groups):
            if gi:
                out.append("")
            cols = f"column {g[1] + 1}" if len(g) == 2 else f"columns {g[1] + 1}-{g[-1] + 1}"
            out.append(f"({t.headers[0]} and {cols} of {len(t.headers)}; "
                       f"part {gi + 1} of {len(groups)})")
            out += _grid_lines([t.headers[i] for i in g], [[r[i] for i in g] for r in t.rows],
                               [t.align[i] for i in g])
    if t.notes_below:
        out.append("")
        for n in t.notes_below:
            out += _wrap(n, width)
    if t.images:
        out.append("")
        for f in t.images:
            out += _wrap(f"figure: {f.src}" + (f" (and {f.svg})" if f.svg else "")
                         + f" - {f.caption}", width)
    return "\n".join(out)


FINDINGS_TITLE = "Findings"
RUN_TITLE = "The run"
FINDINGS_INTRO = ("One line per claim of a paper that this run measured: the 1990s figure, "
                  "today's figure with its environment, and a verdict computed from the data "
                  "(holds / reversed / within noise / not measurable here; input of the model: "
                  "the quantity is a parameter of the experiment, shown but not judged).")


def _finding_sentence(f: Finding, note: bool = True) -> str:
    return (f"{f.paper}: {f.claim}. Then: {f.then}. Today: {f.today} [{f.env}]."
            + (f" {f.note}" if f.note and note else ""))


def render_findings_text(findings: Sequence[Finding], width: int = TEXT_WIDTH) -> str:
    out = [FINDINGS_TITLE, "=" * len(FINDINGS_TITLE)]
    out += _wrap(FINDINGS_INTRO, width)
    out.append("")
    if not findings:
        out.append("(no claim of a paper was measured by this run)")
    for f in findings:
        # the terminal keeps it short: the note (how the verdict was computed) is in
        # report.md / report.html, except why a claim is not measurable here
        out += _wrap(f"* [{f.verdict}] "
                     f"{_finding_sentence(f, note=f.verdict in UNJUDGED)}",
                     width, indent="    ")
    if findings:
        out += [""] + _wrap("How each verdict was computed: the notes in report.md / "
                            "report.html.", width)
    return "\n".join(out)


SUMMARY_TITLE = "Summary"
TOP_TITLE = "The findings that matter most"


def _summary_text(doc: Document, width: int) -> str:
    s = doc.summary
    out = _wrap(doc.title, width, indent="") + ["#" * min(len(doc.title), width), "",
                                                 SUMMARY_TITLE, "=" * len(SUMMARY_TITLE)]
    for k, v in s.facts:
        out += _wrap(f"{k}: {v}", width)
    out += _wrap("verdicts: " + (", ".join(f"{v} {n}" for v, n in s.counts) or "none"), width)
    out += ["", TOP_TITLE + ":"]
    if not s.top:
        out.append("(no claim got a verdict in this run)")
    for f in s.top:
        out += _wrap(f"* [{f.verdict}] {f.paper}: {f.claim} ({f.today} [{f.env}])", width,
                     indent="    ")
    out += [""] + _wrap(s.rule, width)
    out += ["", "Chapters:"] + [f"  {c.title}" for c in doc.chapters]
    return "\n".join(out)


def render_text(doc: Document, width: int = TEXT_WIDTH) -> str:
    if doc.summary is not None:
        parts = [_summary_text(doc, width)]
        for c in doc.chapters:
            head = _wrap(c.title, width, indent="") + ["#" * min(len(c.title), width)]
            if c.findings:
                head += ["", render_findings_text(c.findings, width)]
            parts.append("\n".join(head))
            parts += [render_table_text(tb, width) for tb in c.tables]
        return "\n\n".join(parts) + "\n"
    parts = []
    if doc.findings:
        parts.append(render_findings_text(doc.findings, width))
    parts += [render_table_text(t, width) for t in doc.tables]
    return "\n\n".join(parts) + "\n"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|") if text else " "


def _md_findings(findings: Sequence[Finding], level: str) -> list[str]:
    out = [f"{level} {FINDINGS_TITLE}", "", FINDINGS_INTRO, "",
           "| verdict | paper | claim | 1990s | today | environment | note |",
           "|:---|:---|:---|:---|:---|:---|:---|"]
    for f in findings:
        out.append("| " + " | ".join(_md_cell(c) for c in (
            f"**{f.verdict}**", f.paper, f.claim, f.then, f.today, f.env, f.note)) + " |")
    return out + [""]


def _md_table(t: Table, level: str, anchor: str) -> list[str]:
    out = [f'{level} <a id="{anchor}"></a>{t.title}', ""]
    for n in t.notes_above:
        out += [n, ""]
    out.append("| " + " | ".join(_md_cell(h) for h in t.headers) + " |")
    out.append("|" + "|".join("---:" if a == "r" else ":---" for a in t.align) + "|")
    for row in t.rows:
        out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    out.append("")
    for n in t.notes_below:
        out += [n, ""]
    for f in t.images:
        out += [f"![{f.caption.replace(']', ')')}]({f.src})", "",
                f"*{f.caption}*" + (f" ([SVG]({f.svg}))" if f.svg else ""), ""]
    return out


def _render_markdown_chapters(doc: Document) -> str:
    s = doc.summary
    out = [f"# {doc.title}", "", f'## <a id="summary"></a>{SUMMARY_TITLE}', ""]
    out += [f"- **{k}**: {v}" for k, v in s.facts]
    out += ["- **verdicts**: " + (", ".join(f"{v} {n}" for v, n in s.counts) or "none"), "",
            f"**{TOP_TITLE}:**", ""]
    out += [f"- **{f.verdict}** — {f.paper}: {f.claim} ({f.today} [{f.env}])"
            for f in s.top] or ["- (no claim got a verdict in this run)"]
    out += ["", s.rule, "", '## <a id="contents"></a>Contents', "",
            f"- [{SUMMARY_TITLE}](#summary)"]
    if doc.meta:
        out.append(f"- [{RUN_TITLE}](#run)")
    i = 0
    for n, c in enumerate(doc.chapters, 1):
        out.append(f"- [{c.title}](#c{n})")
        for tb in c.tables:
            i += 1
            out.append(f"  - [{tb.title}](#{_anchor(i - 1)})")
    out.append("")
    if doc.meta:
        out += [f'## <a id="run"></a>{RUN_TITLE}', ""]
        out += [f"- **{k}**: {v}" for k, v in doc.meta] + [""]
    i = 0
    for n, c in enumerate(doc.chapters, 1):
        out += [f'## <a id="c{n}"></a>{c.title}', ""]
        if c.findings:
            out += _md_findings(c.findings, "###")
        for tb in c.tables:
            out += _md_table(tb, "###", _anchor(i))
            i += 1
    return "\n".join(out).rstrip() + "\n"


def render_markdown(doc: Document) -> str:
    if doc.summary is not None:
        return _render_markdown_chapters(doc)
    out = [f"# {doc.title}", ""]
    if doc.findings:
        out += [f"## {FINDINGS_TITLE}", "", FINDINGS_INTRO, "",
                "| verdict | paper | claim | 1990s | today | environment | note |",
                "|:---|:---|:---|:---|:---|:---|:---|"]
        for f in doc.findings:
            out.append("| " + " | ".join(_md_cell(c) for c in (
                f"**{f.verdict}**", f.paper, f.claim, f.then, f.today, f.env, f.note)) + " |")
        out.append("")
    if doc.meta:
        out += [f"## {RUN_TITLE}", ""] if doc.findings else []
        for k, v in doc.meta:
            out.append(f"- **{k}**: {v}")
        out.append("")
    for t in doc.tables:
        out += [f"## {t.title}", ""]
        for n in t.notes_above:
            out += [n, ""]
        out.append("| " + " | ".join(_md_cell(h) for h in t.headers) + " |")
        out.append("|" + "|".join("---:" if a == "r" else ":---" for a in t.align) + "|")
        for row in t.rows:
            out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
        out.append("")
        for n in t.notes_below:
            out += [n, ""]
        for f in t.images:
            out += [f"![{f.caption.replace(']', ')')}]({f.src})", "",
                    f"*{f.caption}*" + (f" ([SVG]({f.svg}))" if f.svg else ""), ""]
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 80em; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
div.scroll { max-width: 100%; overflow-x: auto; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #bbb; padding: 0.3em 0.7em; }
th { background: #eee; } td.r { text-align: right; font-variant-numeric: tabular-nums;
     white-space: nowrap; } td.l { text-align: left; }
tr:nth-child(even) td { background: #f7f7f7; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dl.meta dt { font-weight: bold; } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
p.note { margin: 0.3em 0; overflow-wrap: anywhere; } p.below { color: #444; }
nav.toc > ol { columns: 2; list-style: none; padding-left: 0; }
nav.toc li { overflow-wrap: anywhere; }
nav.toc ol ol { font-size: 0.9em; padding-left: 1.2em; }
h3 { font-size: 1.05em; margin-top: 1.6em; }
section.summary { border: 1px solid #bbb; padding: 0 1em 0.5em; background: #fafafa; }
figure { margin: 1em 0; max-width: 100%; }
figure img { max-width: 100%; height: auto; border: 1px solid #bbb; }
figcaption { font-size: 0.9em; color: #444; }
table.findings td { vertical-align: top; }
.v-holds { background: #e3f4e3 !important; } .v-reversed { background: #f8e0e0 !important; }
.v-noise { background: #f4f0d8 !important; } .v-na { background: #eee !important; }
""".strip()

_VERDICT_CLASS = {"holds": "v-holds", "reversed": "v-reversed", "within noise": "v-noise",
                  "not measurable here": "v-na", "input of the model": "v-na"}


def _anchor(i: int) -> str:
    return f"t{i + 1}"


def _html_findings(findings: Sequence[Finding], level: str, anchor: str) -> list[str]:
    e = html.escape
    out = [f'<{level} id="{anchor}">{FINDINGS_TITLE}</{level}>',
           f'<p class="note">{e(FINDINGS_INTRO)}</p>',
           '<div class="scroll"><table class="findings">',
           "<thead><tr>" + "".join(f"<th>{h}</th>" for h in (
               "verdict", "paper", "claim", "1990s", "today", "environment", "note"))
           + "</tr></thead><tbody>"]
    for f in findings:
        out.append(f'<tr><td class="l {_VERDICT_CLASS[f.verdict]}"><b>{e(f.verdict)}</b>'
                   "</td>" + "".join(f'<td class="l">{e(c)}</td>' for c in (
                       f.paper, f.claim, f.then, f.today, f.env, f.note)) + "</tr>")
    return out + ["</tbody></table></div>"]


def _html_table(t: Table, level: str, anchor: str) -> list[str]:
    e = html.escape
    out = [f'<{level} id="{anchor}">{e(t.title)}</{level}>']
    for n in t.notes_above:
        out.append(f'<p class="note">{e(n)}</p>')
    out.append('<div class="scroll"><table>')
    out.append("<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in t.headers)
               + "</tr></thead>")
    out.append("<tbody>")
    for row in t.rows:
        out.append("<tr>" + "".join(f'<td class="{t.align[i]}">{e(c)}</td>'
                                    for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table></div>")
    for n in t.notes_below:
        out.append(f'<p class="note below">{e(n)}</p>')
    for f in t.images:
        svg = f' (<a href="{e(f.svg)}">SVG</a>)' if f.svg else ""
        out.append(f'<figure><a href="{e(f.src)}"><img src="{e(f.src)}" '
                   f'alt="{e(f.caption)}"></a><figcaption>{e(f.caption)}{svg}'
                   "</figcaption></figure>")
    return out


def _render_html_chapters(doc: Document) -> str:
    e = html.escape
    s = doc.summary
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(doc.title)}</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>",
           f"<h1>{e(doc.title)}</h1>",
           f'<section class="summary"><h2 id="summary">{SUMMARY_TITLE}</h2>',
           '<dl class="meta">']
    out += [f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in s.facts]
    out.append("<dt>verdicts</dt><dd>" + (", ".join(
        f'<span class="{_VERDICT_CLASS[v]}">{e(v)} {n}</span>' for v, n in s.counts)
        or "none") + "</dd></dl>")
    out.append(f"<h3>{TOP_TITLE}</h3><ul>")
    out += [f'<li><b class="{_VERDICT_CLASS[f.verdict]}">{e(f.verdict)}</b> {e(f.paper)}: '
            f"{e(f.claim)} ({e(f.today)} [{e(f.env)}])</li>" for f in s.top] \
        or ["<li>no claim got a verdict in this run</li>"]
    out += ["</ul>", f'<p class="note">{e(s.rule)}</p>', "</section>"]
    out.append('<nav class="toc"><h2 id="contents">Contents</h2><ol>')
    out.append(f'<li><a href="#summary">{SUMMARY_TITLE}</a></li>')
    if doc.meta:
        out.append(f'<li><a href="#run">{RUN_TITLE}</a></li>')
    i = 0
    for n, c in enumerate(doc.chapters, 1):
        out.append(f'<li><a href="#c{n}">{e(c.title)}</a><ol>')
        if c.findings:
            out.append(f'<li><a href="#c{n}-findings">{FINDINGS_TITLE}</a></li>')
        for tb in c.tables:
            out.append(f'<li><a href="#{_anchor(i)}">{e(tb.title)}</a></li>')
            i += 1
        out.append("</ol></li>")
    out.append("</ol></nav>")
    if doc.meta:
        out += [f'<h2 id="run">{RUN_TITLE}</h2>', '<dl class="meta">']
        out += [f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in doc.meta] + ["</dl>"]
    i = 0
    for n, c in enumerate(doc.chapters, 1):
        out.append(f'<h2 id="c{n}">{e(c.title)}</h2>')
        if c.findings:
            out += _html_findings(c.findings, "h3", f"c{n}-findings")
        for tb in c.tables:
            out += _html_table(tb, "h3", _anchor(i))
            i += 1
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


def render_html(doc: Document) -> str:
    if doc.summary is not None:
        return _render_html_chapters(doc)
    e = html.escape
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(doc.title)}</title>", f"<style>\n{_CSS}\n</style>", "</head>", "<body>",
           f"<h1>{e(doc.title)}</h1>"]
    out.append('<nav class="toc"><h2 id="contents">Contents</h2><ol>')
    if doc.findings:
        out.append(f'<li><a href="#findings">{FINDINGS_TITLE}</a></li>')
    if doc.meta:
        out.append(f'<li><a href="#run">{RUN_TITLE}</a></li>')
    for i, t in enumerate(doc.tables):
        out.append(f'<li><a href="#{_anchor(i)}">{e(t.title)}</a></li>')
    out.append("</ol></nav>")
    if doc.findings:
        out.append(f'<h2 id="findings">{FINDINGS_TITLE}</h2>')
        out.append(f'<p class="note">{e(FINDINGS_INTRO)}</p>')
        out.append('<div class="scroll"><table class="findings">')
        out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in (
            "verdict", "paper", "claim", "1990s", "today", "environment", "note"))
            + "</tr></thead><tbody>")
        for f in doc.findings:
            out.append(f'<tr><td class="l {_VERDICT_CLASS[f.verdict]}"><b>{e(f.verdict)}</b>'
                       "</td>" + "".join(f'<td class="l">{e(c)}</td>' for c in (
                           f.paper, f.claim, f.then, f.today, f.env, f.note)) + "</tr>")
        out.append("</tbody></table></div>")
    if doc.meta:
        out.append(f'<h2 id="run">{RUN_TITLE}</h2>')
        out.append('<dl class="meta">')
        for k, v in doc.meta:
            out.append(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>")
        out.append("</dl>")
    for i, t in enumerate(doc.tables):
        out.append(f'<h2 id="{_anchor(i)}">{e(t.title)}</h2>')
        for n in t.notes_above:
            out.append(f'<p class="note">{e(n)}</p>')
        out.append('<div class="scroll"><table>')
        out.append("<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in t.headers)
                   + "</tr></thead>")
        out.append("<tbody>")
        for row in t.rows:
            out.append("<tr>" + "".join(f'<td class="{t.align[i]}">{e(c)}</td>'
                                        for i, c in enumerate(row)) + "</tr>")
        out.append("</tbody></table></div>")
        for n in t.notes_below:
            out.append(f'<p class="note below">{e(n)}</p>')
        for f in t.images:
            svg = f' (<a href="{e(f.svg)}">SVG</a>)' if f.svg else ""
            out.append(f'<figure><a href="{e(f.src)}"><img src="{e(f.src)}" '
                       f'alt="{e(f.caption)}"></a><figcaption>{e(f.caption)}{svg}'
                       "</figcaption></figure>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------------------
# number formatting


# ---------------------------------------------------------------------------------------
# primitive costs (issue 2)


@dataclass(frozen=True)
class PrimRow:
    key: str
    label: str
    kernel: str | None          # kernel row name
    hosted: str | None          # hosted row name
    ref1997: str | None = None  # "304 (off-chip)" ...
    show_detail: bool = False


REF_1997 = {"off-chip": 304, "on-chip": 21, "flag": 6}

PRIM_ROWS: list[PrimRow] = [
    PrimRow("cli_sti", "cli_sti", "cli_sti", None, f"{REF_1997['on-chip']} (on-chip)"),
    PrimRow("pushf_cli_popf", "pushf; cli; popf  (hosted: pushf; popf)", "pushf_cli_popf",
            "pushf_popf"),
    PrimRow("cr8_raise_restore", "cr8_raise_restore", "cr8_raise_restore", None),
    PrimRow("pic_imr_write_restore", "pic_imr_write_restore", "pic_imr_write_restore", None,
            f"{REF_1997['off-chip']} (off-chip)"),
    PrimRow("ioapic_mask_unmask", "ioapic_mask_unmask", "ioapic_mask_unmask", None),
    PrimRow("lapic_tpr_write", "lapic_tpr_write", "lapic_tpr_write", None, show_detail=True),
    PrimRow("flag_set_clear", "flag_set_clear", "flag_set_clear", "flag_set_clear",
            f"{REF_1997['flag']} (flag)"),
    PrimRow("lock_cmpxchg", "lock_cmpxchg", "lock_cmpxchg", "lock_cmpxchg"),
    PrimRow("lock_xadd", "lock_xadd", "lock_xadd", "lock_xadd"),
    PrimRow("cmpxchg16b", "cmpxchg16b", "cmpxchg16b", "cmpxchg16b"),
    PrimRow("mfence", "mfence", "mfence", "mfence"),
]

REF_HEADER = "1997 Table 5 (cycles)"  # the note above the table names the machine
RECORD_FIELDS = ("side", "env", "cpus", "host_cpu_model", "tsc_hz", "tsc_source", "commit",
                 "scheme", "qemu_version", "timestamp")


def annotate_rows(rows: Iterable[dict], side: str, side_info: dict, meta: dict) -> list[dict]:
    """Copy prim rows and attach side/env and the run facts every result record carries."""
    out = []
    for r in rows:
        rec = dict(r)
        rec["side"] = side
        rec["env"] = side_info.get("env")
        rec["cpus"] = side_info.get("cpus")
        rec["host_cpu_model"] = meta.get("host_cpu_model")
        rec["tsc_hz"] = side_info.get("tsc_hz")
        rec["tsc_source"] = side_info.get("tsc_source")
        rec["commit"] = meta.get("commit")
        rec["scheme"] = side_info.get("scheme")
        rec["qemu_version"] = meta.get("qemu_version")
        rec["timestamp"] = meta.get("timestamp")
        out.append(rec)
    return out


def middle_run_rows(runs: list[list[dict]]) -> list[dict]:
    """Combine repeated runs of one side: per row name, keep the run whose median is the
    middle one (lower middle for an even count) and record every run's median in
    ``run_medians`` so the report can show the run-to-run spread."""
    by_name: dict[str, list[dict]] = {}
    order: list[str] = []
    for rows in runs:
        for r in rows:
            name = str(r.get("name"))
            if name not in by_name:
                by_name[name] = []
                order.append(name)
            by_name[name].append(r)
    out = []
    for name in order:
        rs = by_name[name]
        ranked = sorted(rs, key=lambda r: (_median(r) is None, _median(r) or 0.0))
        pick = dict(ranked[(len(ranked) - 1) // 2])
        pick["run_medians"] = [_median(r) for r in rs]
        out.append(pick)
    return out


def make_prims_data(kernel_rows: Iterable[dict], hosted_rows: Iterable[dict],
                    kernel_side: dict | None, hosted_side: dict | None, meta: dict,
                    cmp_rows: Iterable[dict] | None = None) -> dict:
    """The ``prims.json`` document.

    ``meta``: timestamp, commit, host_cpu_model, host_cpus, qemu_version.
    ``*_side``: env, cpus, cpu_model, tsc_hz, tsc_source, log, ... (None: side not run).
    """
    sides = {}
    rows: list[dict] = []
    if kernel_side is not None:
        sides["kernel"] = kernel_side
        rows += annotate_rows(kernel_rows, "kernel", kernel_side, meta)
    if hosted_side is not None:
        sides["hosted"] = hosted_side
        rows += annotate_rows(hosted_rows, "hosted", hosted_side, meta)
    data = {"schema": SCHEMA, **meta, "sides": sides, "rows": rows}
    if cmp_rows:
        data["cmp"] = [dict(r, env="hosted", commit=meta.get("commit")) for r in cmp_rows]
    return data


def load_prims(path: Path) -> dict:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KsyncError(f"{path} not found; run `ksync run` first (or pass --out DIR)",
                         exit_code=2) from None
    except (OSError, ValueError) as e:
        raise KsyncError(f"cannot read {path}: {e}", exit_code=2) from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise KsyncError(f"{path}: not a ksync prims.json (no \"rows\" list)", exit_code=2)
    return data


def _index(data: dict, side: str) -> dict[str, dict]:
    idx: dict[str, dict] = {}
    for r in data.get("rows", []):
        if isinstance(r, dict) and r.get("side") == side and r.get("kind", "prim") == "prim":
            idx.setdefault(str(r.get("name")), r)
    return idx


def _stats_cell(row: dict | None) -> str:
    if row is None:
        return DASH
    return f"{fmt_ticks(row.get('min'))} / {fmt_ticks(row.get('median'))} / " \
           f"{fmt_ticks(row.get('p99'))}"


def _median(row: dict | None) -> float | None:
    if row is None:
        return None
    try:
        return float(row.get("median"))
    except (TypeError, ValueError):
        return None


def _side_header(side: str, info: dict | None) -> str:
    if side == "kernel":
        env = (info or {}).get("env", "?")
        return f"kernel [{env}, {(info or {}).get('cpus', '?')} CPUs]"
    # the CPU model is printed in the column notes above the table; keep the header short
    return f"hosted [hosted, {(info or {}).get('cpus', '?')} CPUs]"


def _ratio(num: dict | None, den: dict | None, num_name: str, den_name: str, side: str,
           notes: list[str]) -> str:
    if num is None or den is None:
        missing = num_name if num is None else den_name
        notes.append(f"{side} {num_name}/{den_name}: {DASH} because there is no {missing} row "
                     f"on the {side} side.")
        return DASH
    n, d = _median(num), _median(den)
    if n is None or d is None:
        notes.append(f"{side} {num_name}/{den_name}: {DASH} because a median is missing.")
        return DASH
    if d == 0:
        notes.append(f"{side} {num_name}/{den_name}: {DASH} because the {den_name} median is "
                     "0 ticks (at or below the empty-loop cost), so the ratio is undefined.")
        return DASH
    return fmt_ratio(n / d)


def _env_lines(data: dict) -> list[str]:
    sides = data.get("sides", {})
    k, h = sides.get("kernel"), sides.get("hosted")
    lines = []
    if k:
        env = k.get("env", "?")
        what = {"tcg": "guest kernel under QEMU TCG (software emulation)",
                "kvm": "guest kernel under QEMU/KVM (hardware virtualization)",
                "kvm-pvm": "guest kernel under QEMU/KVM-PVM (paravirtual: ring-0 code is "
                           "interpreted)",
                "bare-metal": "kernel on bare metal"}.get(env, f"kernel ({env})")
        qv = data.get("qemu_version")
        line = (f"{_side_header('kernel', k)}: {what}"
                + (f", QEMU {qv}" if qv and env != "bare-metal" else "")
                + f", host CPU {k.get('cpu_model') or data.get('host_cpu_model', '?')}"
                + (f", guest CPU \"{k['guest_cpu_model']}\"" if k.get("guest_cpu_model") else "")
                + f"; TSC {fmt_hz(k.get('tsc_hz'))} (seen by the kernel, source: "
                  f"{k.get('tsc_source') or 'unknown'}).")
        if env == "tcg":
            line += " Note: kernel figures are QEMU TCG emulator costs, not hardware costs."
        elif env == "kvm-pvm":
            line += (" Note: kernel figures are KVM-PVM interpreter costs (guest ring-0 code is "
                     "interpreted), not hardware costs.")
        lines.append(line)
    else:
        lines.append(f"kernel: not run ({DASH} in its column).")
    if h:
        lines.append(f"{_side_header('hosted', h)}: Linux user-mode process on real cores; "
                     f"TSC {fmt_hz(h.get('tsc_hz'))} (source: "
                     f"{h.get('tsc_source') or 'unknown'}).")
    else:
        lines.append(f"hosted: not run ({DASH} in its column).")
    lines.append(f"{REF_HEADER}: Small & Manley 1997, Pentium 120 MHz, core cycles per set+unset pair "
                 "(not TSC ticks); off-chip = interrupt-controller mask, on-chip = cli/sti, "
                 "flag = software flag.")
    batches = {(r.get("batches"), r.get("ops_per_batch")) for r in data.get("rows", [])
               if isinstance(r, dict)}
    method = ""
    if len(batches) == 1:
        b, o = next(iter(batches))
        if b and o:
            method = f" over {b} batches of {o} operations"
    lines.append("Unit: TSC ticks per operation, empty-loop cost subtracted; each cell is "
                 f"min / median / p99{method}. TSC ticks are not core cycles.")
    return lines


def sweep_table(data: dict) -> Table | None:
    """An --smp sweep (issue 9): the kernel's prim medians at every CPU count, one column
    per (platform, scheme, cpus); the other tables show the first count."""
    sweep = [s for s in data.get("kernel_sweep") or [] if isinstance(s, dict)]
    if len(sweep) < 2:
        return None
    names: list[str] = []
    cols = []
    for s in sweep:
        med = {}
        for r in s.get("rows") or []:
            if isinstance(r, dict) and r.get("name") is not None:
                med[str(r["name"])] = r.get("median")
                if str(r["name"]) not in names:
                    names.append(str(r["name"]))
        cols.append(med)
    envs = sorted({str((s.get("side") or {}).get("env") or "?") for s in sweep})
    headers = ["primitive"] + [f"{s.get('platform', 'qemu')} {s.get('scheme', '?')} "
                               f"{s.get('requested_cpus') or s.get('cpus')} CPUs"
                               for s in sweep]
    rows = [[n] + [fmt_ticks(c.get(n)) if c.get(n) is not None else DASH for c in cols]
            for n in names]
    return Table(title=f"Kernel primitive costs by CPU count [{', '.join(envs)}]",
                 headers=headers, rows=rows, align=["l"] + ["r"] * len(sweep),
                 notes_above=["Medians in TSC ticks of the kernel's prims, lf_cost and "
                              "lf_fifo_cost rows at each --smp value; the other tables show "
                              "the first." + (" Under tcg these are the emulator's costs, "
                                              "not hardware costs." if "tcg" in envs else "")])


def prims_tables(data: dict) -> list[Table]:
    sides = data.get("sides", {})
    kidx, hidx = _index(data, "kernel"), _index(data, "hosted")

    specs = list(PRIM_ROWS)
    known_k = {s.kernel for s in specs if s.kernel}
    known_h = {s.hosted for s in specs if s.hosted}
    # rows nobody told the table about still get shown, at the end (cost-table rows
    # have a table of their own)
    for name in kidx:
        if name.startswith(COST_PREFIXES):
            continue
        if name not in known_k:
            specs.append(PrimRow(name, name, name, name if name in hidx else None))
            if name in hidx:
                known_h.add(name)
    for name in hidx:
        if name.startswith(COST_PREFIXES):
            continue
        if name not in known_h and name not in known_k:
            specs.append(PrimRow(name, name, None, name))

    def label(spec: PrimRow) -> str:
        if spec.show_detail:
            detail = (kidx.get(spec.kernel or "") or {}).get("detail")
            if detail:
                return f"{spec.label} ({detail})"
        return spec.label

    columns = [
        ColumnSpec("primitive", label, "l"),
        ColumnSpec(_side_header("kernel", sides.get("kernel")),
                   lambda s: _stats_cell(kidx.get(s.kernel) if s.kernel else None)),
        ColumnSpec(_side_header("hosted", sides.get("hosted")),
                   lambda s: _stats_cell(hidx.get(s.hosted) if s.hosted else None)),
        ColumnSpec(REF_HEADER, lambda s: s.ref1997 or ""),
    ]
    main = build_table("Primitive costs", specs, columns, notes_above=_env_lines(data))

    # ratios on medians
    notes: list[str] = []
    k_off_on = _ratio(kidx.get("pic_imr_write_restore"), kidx.get("cli_sti"),
                      "pic_imr_write_restore", "cli_sti", "kernel", notes)
    k_on_flag = _ratio(kidx.get("cli_sti"), kidx.get("flag_set_clear"),
                       "cli_sti", "flag_set_clear", "kernel", notes)
    h_on_flag = _ratio(hidx.get("pushf_popf"), hidx.get("flag_set_clear"),
                       "pushf_popf", "flag_set_clear", "hosted", notes)
    r_off_on = fmt_ratio(REF_1997["off-chip"] / REF_1997["on-chip"])
    r_on_flag = fmt_ratio(REF_1997["on-chip"] / REF_1997["flag"])
    ratio_rows = [
        ["off-chip / on-chip", k_off_on, "n/a", r_off_on],
        ["on-chip / flag", k_on_flag, h_on_flag, r_on_flag],
    ]
    defs = [
        "off-chip / on-chip = kernel: pic_imr_write_restore / cli_sti; hosted: n/a "
        f"{DASH} user mode cannot reach the interrupt controller; 1997: 304 / 21.",
        "on-chip / flag = kernel: cli_sti / flag_set_clear; hosted: pushf_popf / "
        "flag_set_clear (pushf; popf stands in for cli; sti, which user mode cannot run); "
        "1997: 21 / 6.",
    ]
    ratios = Table(title="Ratios of medians", headers=["ratio", "kernel", "hosted", "1997"],
                   rows=ratio_rows, align=["l", "r", "r", "r"],
                   notes_above=["Each side's ratio uses its own medians, measured in the same "
                                "run on the same machine."],
                   notes_below=defs + notes)
    tables = [main, ratios]
    spread = _spread_table(specs, kidx, hidx, sides)
    if spread:
        tables.append(spread)
    cost = cost_table(kidx, hidx, sides)
    if cost:
        tables.append(cost)
    mw = mwcas_table(hidx, sides)
    if mw:
        tables.append(mw)
    sweep = sweep_table(data)
    if sweep:
        tables.append(sweep)
    return tables


# ---- the Massalin & Pu cost table (common/lf_cost_rows.h, bench/lf_fifo_cost.c) --------

COST_PREFIXES = ("mp_", "ref_", "fifo_", "bytes_", "mwcas_")
MWCAS_IMPLS = (("soft", "Harris-Fraser-Pratt (RDCSS)", "3k+1"),
               ("gkmz", "Guerraoui-Kogan-Marathe-Zablotchi", "k+1"))


def mwcas_table(hidx: dict, sides: dict) -> Table | None:
    """Issue 13 item 3: one row per k = 1..8, the uncontended k-word MWCAS of each software
    implementation and a read of one of its words (bench/mwcas_cost.c, hosted, one run:
    the implementations interleaved per k)."""
    ks = sorted({int(n.rsplit("_k", 1)[1]) for n in hidx
                 if n.startswith("mwcas_") and n.rsplit("_k", 1)[-1].isdigit()})
    if not ks:
        return None
    def cell(row: dict | None) -> str:
        """The median of the run the table shows, and lo..hi of every run's median."""
        if not row or _median(row) is None:
            return DASH
        meds = [m for m in row.get("run_medians") or [] if m is not None]
        if len(meds) < 2:
            return fmt_ticks(_median(row))
        return f"{fmt_ticks(_median(row))} ({fmt_ticks(min(meds))}..{fmt_ticks(max(meds))})"

    rows = []
    nruns = 1
    for k in ks:
        upd = {i: hidx.get(f"mwcas_{i}_k{k}") for i, _, _ in MWCAS_IMPLS}
        rd = {i: hidx.get(f"mwcas_read_{i}_k{k}") for i, _, _ in MWCAS_IMPLS}
        ms = {i: _median(upd[i]) if upd[i] else None for i in upd}
        nruns = max([nruns] + [len(r.get("run_medians") or []) for r in upd.values() if r])
        # per run (the two implementations ran interleaved in each): its ratio; the
        # median of those, with their range
        rs_ = (upd["soft"] or {}).get("run_medians") or []
        rg_ = (upd["gkmz"] or {}).get("run_medians") or []
        per = [g / f for f, g in zip(rs_, rg_) if f and g]
        if not per and ms.get("gkmz") and ms.get("soft"):
            per = [ms["gkmz"] / ms["soft"]]
        per.sort()
        ratio = DASH if not per else fmt_ratio(per[(len(per) - 1) // 2]) + (
            f" ({fmt_ratio(per[0])}..{fmt_ratio(per[-1])})" if len(per) > 1 else "")
        rows.append([str(k)] + [cell(upd[i]) for i, _, _ in MWCAS_IMPLS] + [ratio]
                    + [cell(rd[i]) for i, _, _ in MWCAS_IMPLS])
    return Table(
        title="MWCAS: k+1 CAS (Guerraoui et al. 2020) against Harris-Fraser-Pratt, per k",
        headers=["k words", "HFP update (3k+1 CAS)", "GKMZ update (k+1 CAS)", "GKMZ / HFP",
                 "HFP read", "GKMZ read"],
        rows=rows, align=["r", "r", "r", "r", "r", "r"],
        notes_above=[f"{_side_header('hosted', sides.get('hosted'))}: median TSC ticks per "
                     "uncontended successful ksync_mwcas of k words, and per "
                     "ksync_mwcas_read of one of them (200 batches of 256, empty loop "
                     "subtracted; bench/mwcas_cost.c, both implementations interleaved per "
                     "k in one process). The CAS counts are counted by tests/unit/"
                     "test_mwcas_gkmz.c (exactly k+1 for GKMZ's success path); GKMZ leaves "
                     "its descriptor in the words and cleans them when the descriptor is "
                     "reused, so a read resolves through a descriptor more often. GKMZ / HFP: "
                     "per run (both ran interleaved in it) the ratio of the medians, then the "
                     "median of those ratios (below 1: GKMZ cheaper). In brackets: lowest.."
                     f"highest median over the {nruns} repeated runs - on the shared VM this "
                     "program's medians move by up to 2x between runs, so a ratio whose "
                     "brackets overlap decides nothing."])


def cost_table(kidx: dict, hidx: dict, sides: dict) -> Table | None:
    """Each libksync operation with no synchronization, lock-free uncontended and with
    exactly one forced retry, kernel and hosted side by side (medians)."""
    names: list[str] = []
    for idx in (hidx, kidx):
        for n in idx:
            if n.startswith(COST_PREFIXES) and not n.startswith("mwcas_") and n not in names:
                names.append(n)
    if not names:
        return None
    rows = []
    for n in names:
        k, h = kidx.get(n), hidx.get(n)
        detail = (h or k or {}).get("detail") or ""
        rows.append([n, detail,
                     fmt_ticks(_median(k)) if k else DASH,
                     fmt_ticks(_median(h)) if h else DASH])
    return Table(
        title="Massalin & Pu cost table: no sync / lock-free / one forced retry",
        headers=["row", "operation", _side_header("kernel", sides.get("kernel")),
                 _side_header("hosted", sides.get("hosted"))],
        rows=rows, align=["l", "l", "r", "r"],
        notes_above=["Median TSC ticks per operation (200 batches of 256, empty loop "
                     "subtracted). Suffixes: _nosync = plain loads and stores, what one CPU "
                     "alone would do; _lf = the libksync operation, uncontended; _retry1 = "
                     "the same with exactly one failed CAS forced between its read and its "
                     "CAS (Massalin & Pu's retry column; it includes the bounded backoff's "
                     "first wait, one pause instruction, include/ksync/backoff.h); _hint = "
                     "stack operations that "
                     "keep a private guess of the top; _spin, _mutex (hosted: a TTAS spin "
                     "lock, a pthread mutex) and _mlock (kernel: the master lock) = the "
                     "nosync operation with that lock taken and released around it, what "
                     "lock-free is judged against (ref_2x_lock_cmpxchg is no lock: a "
                     "release is a plain store); _2t = two threads (hosted) or two CPUs "
                     "(kernel) on one object, ticks per operation of each; mp_astack = the Synthesis array "
                     "stack (lf_astack.h). The kernel column runs the same "
                     "source (common/lf_cost_rows.h, common/lf_fifo_rows.h) on one CPU with "
                     "interrupts off; under "
                     "TCG it is the emulator's cost.",
                     "mp_optimistic_read4_nosync copies the 4 words with plain loads and "
                     "stores. It used to call memcpy, which in the kernel (built "
                     "-ffreestanding) is kernel/lib.c's rep movsb, run by TCG one byte at a "
                     "time: 200 TSC ticks under tcg against 49 for lf_opt_read, which made "
                     "the unsynchronized copy look dearer than the synchronized one; hosted, "
                     "gcc inlines memcpy (1.4 ticks)."])


def _spread_cell(row: dict | None) -> str:
    meds = [m for m in (row or {}).get("run_medians") or [] if m is not None]
    if not meds:
        return DASH
    if len(meds) == 1:
        return f"{fmt_ticks(meds[0])} (1 run)"
    return f"{fmt_ticks(min(meds))} .. {fmt_ticks(max(meds))} ({len(meds)} runs)"


def _spread_table(specs, kidx: dict, hidx: dict, sides: dict) -> Table | None:
    """Run-to-run spread of the medians, when the rows carry run_medians."""
    if not any(r.get("run_medians") for r in list(kidx.values()) + list(hidx.values())):
        return None
    rows = []
    for s in specs:
        k = kidx.get(s.kernel) if s.kernel else None
        h = hidx.get(s.hosted) if s.hosted else None
        if k is None and h is None:
            continue
        rows.append([s.label, _spread_cell(k) if k else DASH, _spread_cell(h) if h else DASH])
    return Table(title="Run-to-run spread of the medians",
                 headers=["primitive", _side_header("kernel", sides.get("kernel")),
                          _side_header("hosted", sides.get("hosted"))],
                 rows=rows, align=["l", "r", "r"],
                 notes_above=["Lowest .. highest median over the repeated runs (TSC ticks per "
                              "operation); the table above shows the run with the middle median."])


def prims_meta(data: dict) -> list[tuple[str, str]]:
    """The run facts of prims.json: commit, host, QEMU, each side's environment."""
    sides = data.get("sides", {})
    meta = [
        ("commit", str(data.get("commit", "unknown"))),
        ("timestamp", str(data.get("timestamp", "unknown"))),
        ("host CPU", str(data.get("host_cpu_model", "unknown"))),
        ("host CPUs", str(data.get("host_cpus", "unknown"))),
        ("QEMU", str(data.get("qemu_version", "unknown"))),
        ("set", f"{data.get('set') or 'not recorded'}, {data.get('repeat') or '?'} runs per "
                "side (make run: default; make bench: bench)"),
    ]
    for side in ("kernel", "hosted"):
        info = sides.get(side)
        if info:
            meta.append((f"{side} environment",
                         f"{info.get('env', '?')}, {info.get('cpus', '?')} CPUs, TSC "
                         f"{fmt_hz(info.get('tsc_hz'))} ({info.get('tsc_source') or 'unknown'})"))
            if info.get("log"):
                meta.append((f"{side} log", str(info["log"])))
    return meta


def prims_document(data: dict) -> Document:
    """The primitive costs alone (``write_reports``); libksync's peers are a part of the
    whole document (document.py)."""
    return Document(title="ksync primitive costs", meta=prims_meta(data),
                    tables=prims_tables(data))


def write_document(doc: Document, out_dir: Path) -> list[Path]:
    """report.md and report.html of ``doc`` in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    p = out_dir / "report.md"
    p.write_text(render_markdown(doc), encoding="utf-8")
    written.append(p)
    p = out_dir / "report.html"
    p.write_text(render_html(doc), encoding="utf-8")
    written.append(p)
    return written


def write_reports(data: dict, out_dir: Path, write_json: bool = True) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    doc = prims_document(data)
    written = []
    if write_json:
        p = out_dir / "prims.json"
        p.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
        written.append(p)
    p = out_dir / "report.md"
    p.write_text(render_markdown(doc), encoding="utf-8")
    written.append(p)
    p = out_dir / "report.html"
    p.write_text(render_html(doc), encoding="utf-8")
    written.append(p)
    return written
