"""KTAP v1 and KSYNC-line parsing (docs/protocol.md section 1).

Both the kernel (on its serial console) and the hosted C test programs (on stdout) print
flat KTAP v1 with every line prefixed by ``ktap: `` so it can be told apart from log noise,
and results/facts as ``KSYNC {json}`` lines.  This module is pure: it never raises on bad
input, it only records what it could not use.

Public API (other code relies on it, keep it stable):

* ``PREFIX``, ``KSYNC_PREFIX``
* ``parse(lines) -> KtapResult`` with ``version_seen``, ``plan``, ``results`` (``Case``),
  ``diagnostics`` and the properties ``complete``, ``passed``, ``failed``, ``skipped``
* ``parse_ksync(lines, bad_lines=None) -> KsyncObjects`` (a ``list`` of dicts with a
  ``bad_lines`` attribute)

``lines`` may be an iterable of lines, or one ``str``/``bytes`` blob (e.g. a program's
whole stdout), which is split into lines.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Iterable, Union

PREFIX = "ktap: "
KSYNC_PREFIX = "KSYNC "

# ANSI/VT100 escape sequences (firmware sometimes clears the screen on the serial line
# just before the kernel's first line) and stray carriage returns / NULs.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[c()][0-9A-Za-z]?|\x1b")
_VERSION = re.compile(r"^(?:KTAP|TAP) version (\d+)\s*$")
_PLAN = re.compile(r"^(\d+)\.\.(\d+)(?:\s*#.*)?$")
_RESULT = re.compile(r"^(not ok|ok)\s+(\d+)\b\s*(?:-\s+)?(.*)$")

Lines = Union[str, bytes, Iterable[Union[str, bytes]]]


def _iter_lines(lines: Lines):
    if isinstance(lines, bytes):
        lines = lines.decode("utf-8", errors="replace")
    if isinstance(lines, str):
        lines = lines.splitlines()
    for line in lines:
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        yield clean_line(line)


def clean_line(line: str) -> str:
    """Drop the line terminator (``\\n``, ``\\r\\n``, stray ``\\r``), NULs and escape codes."""
    line = line.rstrip("\r\n")
    if "\x1b" in line:
        line = _ESCAPES.sub("", line)
    if "\r" in line or "\x00" in line:
        # a carriage return inside a line: keep what a terminal would show last
        line = line.replace("\x00", "")
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
    return line


@dataclass
class Case:
    ok: bool
    number: int
    name: str
    directive: str | None = None  # text after " # ", e.g. "SKIP no x2apic"

    @property
    def skipped(self) -> bool:
        return bool(self.directive) and self.directive.upper().startswith("SKIP")

    @property
    def todo(self) -> bool:
        return bool(self.directive) and self.directive.upper().startswith("TODO")

    @property
    def failed(self) -> bool:
        """``not ok`` that is not excused by a SKIP or TODO directive."""
        return not self.ok and not self.skipped and not self.todo


@dataclass
class KtapResult:
    version_seen: bool = False
    plan: int | None = None
    results: list[Case] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    plan_lines: int = 0                      # how many plan lines were seen
    unparsed: list[str] = field(default_factory=list)  # prefixed lines we did not understand

    @property
    def numbers(self) -> list[int]:
        return [c.number for c in self.results]

    @property
    def duplicates(self) -> list[int]:
        seen: set[int] = set()
        dups: list[int] = []
        for n in self.numbers:
            if n in seen and n not in dups:
                dups.append(n)
            seen.add(n)
        return dups

    @property
    def complete(self) -> bool:
        """One plan line seen and results numbered 1..plan, each exactly once."""
        if self.plan is None or self.plan_lines != 1:
            return False
        nums = self.numbers
        return len(nums) == self.plan and set(nums) == set(range(1, self.plan + 1))

    @property
    def failed(self) -> list[Case]:
        return [c for c in self.results if c.failed]

    @property
    def skipped(self) -> list[Case]:
        return [c for c in self.results if c.skipped]

    @property
    def ok_count(self) -> int:
        return sum(1 for c in self.results if not c.failed)

    @property
    def passed(self) -> bool:
        """Complete and no ``not ok`` (SKIP counts as ok)."""
        return self.complete and not self.failed

    def summary(self) -> str:
        """e.g. "7 of 22 results, 1 not ok: ioapic_routes" (for failure context)."""
        plan = "?" if self.plan is None else str(self.plan)
        text = f"{len(self.results)} of {plan} results"
        if self.failed:
            text += f", {len(self.failed)} not ok: " + ", ".join(
                c.name or f"#{c.number}" for c in self.failed)
        return text

    def problem(self) -> str | None:
        """One line saying why the plan does not pass, or None if it passes."""
        if self.failed:
            names = ", ".join(c.name or f"#{c.number}" for c in self.failed)
            return f"{len(self.failed)} test(s) failed: {names}"
        if self.plan is None:
            if not self.results:
                return "KTAP plan incomplete: no KTAP output"
            return f"KTAP plan incomplete: no plan line ({len(self.results)} results)"
        if self.plan_lines > 1:
            return f"KTAP plan incomplete: {self.plan_lines} plan lines (restarted run?)"
        if self.duplicates:
            return ("KTAP plan incomplete: duplicate result number(s) "
                    + ", ".join(str(n) for n in self.duplicates))
        if not self.complete:
            return f"KTAP plan incomplete: {len(self.results)} of {self.plan} results"
        return None


def parse(lines: Lines) -> KtapResult:
    """Parse the ``ktap: `` lines among ``lines``; everything else is ignored."""
    res = KtapResult()
    for line in _iter_lines(lines):
        if not line.startswith(PREFIX):
            continue
        body = line[len(PREFIX):].strip()
        if not body:
            continue
        if _VERSION.match(body):
            res.version_seen = True
            continue
        m = _PLAN.match(body)
        if m:
            res.plan_lines += 1
            if res.plan is None:
                res.plan = int(m.group(2))
            continue
        m = _RESULT.match(body)
        if m:
            ok = m.group(1) == "ok"
            number = int(m.group(2))
            rest = m.group(3)
            directive = None
            if " # " in f" {rest}":
                idx = f" {rest}".index(" # ")
                name = f" {rest}"[:idx].strip()
                directive = f" {rest}"[idx + 3:].strip() or None
            elif rest.endswith("#"):
                name = rest[:-1].strip()
            else:
                name = rest.strip()
            res.results.append(Case(ok=ok, number=number, name=name, directive=directive))
            continue
        if body.startswith("#"):
            res.diagnostics.append(body[1:].strip())
            continue
        res.unparsed.append(body)
    return res


class KsyncObjects(list):
    """A list of KSYNC objects (dicts) that also remembers the lines it could not use."""

    def __init__(self, *args):
        super().__init__(*args)
        self.bad_lines: list[str] = []

    def of_kind(self, kind: str) -> list[dict]:
        return [o for o in self if o.get("kind") == kind]

    def first(self, kind: str) -> dict | None:
        for o in self:
            if o.get("kind") == kind:
                return o
        return None


def parse_ksync_line(line: str) -> dict | None:
    """The object on one ``KSYNC {json}`` line, or None (not such a line, or malformed)."""
    line = clean_line(line)
    if not line.startswith(KSYNC_PREFIX):
        return None
    try:
        obj = json.loads(line[len(KSYNC_PREFIX):])
    except ValueError:
        return None
    if not isinstance(obj, dict) or "kind" not in obj:
        return None
    return obj


def parse_ksync(lines: Lines, bad_lines: list | None = None) -> KsyncObjects:
    """All ``KSYNC {json}`` objects among ``lines`` in order.

    Lines that start with ``KSYNC `` but do not carry a JSON object with a ``"kind"`` are
    skipped and recorded in the result's ``bad_lines`` (and appended to ``bad_lines`` if
    one is given).  Never raises on bad input.
    """
    out = KsyncObjects()
    for line in _iter_lines(lines):
        if not line.startswith(KSYNC_PREFIX):
            continue
        obj = parse_ksync_line(line)
        if obj is None:
            out.bad_lines.append(line)
            if bad_lines is not None:
                bad_lines.append(line)
        else:
            out.append(obj)
    return out
