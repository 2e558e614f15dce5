"""Edits in words: the helpers every edit class's `words` uses to quote the original source.

An edit names sites by syntax-tree paths; a person reads `grading.py:23 delete "if score < 0:
raise ..."`. These quote a site's source on one line, name its line, and show what an
expression edit makes of its expression (through the same `RewritePlan` `apply` uses).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from gi.model.edits.base import Edit
from gi.model.errors import EditError
from gi.model.program import Program
from gi.model.sites import Location, SiteKind

#: The longest quote of source in a description; longer code is cut and ends in "...".
QUOTE_LENGTH = 40


def line_of(program: Program, location: Location) -> int | None:
    """The first line of the original node at a site, or None for a location that is no site."""
    for kind in SiteKind:
        site = program.site(location, kind)
        if site is not None:
            return site.line
    return None


def where(program: Program, location: Location) -> str:
    """`file:line`, or `file:path` when the location is no site of the program."""
    line = line_of(program, location)
    return f"{location.file}:{line}" if line is not None else str(location)


def quote(program: Program, location: Location, *, length: int = QUOTE_LENGTH) -> str:
    """The original source at a site on one line, cut to `length` characters, in quotes."""
    try:
        code = program.code(location)
    except KeyError:
        return "(no such site)"
    return quoted(code, length)


def quoted(code: str, length: int = QUOTE_LENGTH) -> str:
    """Source on one line, inline comments left out, cut to `length`, in quotes it does not hold."""
    stripped = (line.split("  #")[0].strip() for line in code.strip().splitlines())
    lines = [line for line in stripped if line and not line.startswith("#")]
    text = " ".join(lines[:2]) if lines else ""
    cut = len(lines) > 2 or len(text) > length
    if len(text) > length:
        text = text[: length - 3].rstrip()
    text += " ..." if cut else ""
    mark = '"' if '"' not in text else "'" if "'" not in text else "`"
    return f"{mark}{text}{mark}"


def source_line(program: Program, location: Location) -> str:
    """The original line a site starts on, quoted: the context of an operator or a number,
    whose own source says little."""
    line = line_of(program, location)
    if line is None:
        return quote(program, location)
    text = program.sources[location.file].splitlines()[line - 1]
    return quoted(text)


def line(program: Program, location: Location) -> str:
    """`line 30`, or `file.py:30` when the location is in another file than the edit's target."""
    line = line_of(program, location)
    return f"line {line}" if line is not None else str(location)


def other_place(program: Program, edit: Edit, location: Location) -> str:
    if location.file != edit.target.file:
        return where(program, location)
    return line(program, location)


class _Rewritten:
    """A `RewritePlan` that keeps what one expression edit asks for, so its wording can quote
    the expression as the edit makes it (exactly as `apply` would print it)."""

    def __init__(self) -> None:
        self.changes: list[Callable[[cst.CSTNode], cst.CSTNode]] = []
        self.inserted: list[cst.BaseStatement] = []

    def delete(self, target: Location) -> None:
        raise EditError("an expression edit deletes no statement")

    def insert_before(self, target: Location, statement: cst.BaseStatement) -> None:
        self.inserted.append(statement)

    def replace(self, target: Location, statement: cst.BaseStatement) -> None:
        raise EditError("an expression edit replaces no statement")

    def rewrite(self, target: Location, change: Callable[[cst.CSTNode], cst.CSTNode]) -> None:
        self.changes.append(change)


def new_code(edit: Edit, program: Program) -> str:
    """The source of the expression at the edit's target after the edit, on its own."""
    plan = _Rewritten()
    edit.contribute(plan, program)
    node = program.node(edit.target)
    for change in plan.changes:
        node = change(node)
    return program.modules[edit.target.file].code_for_node(node)


def becomes(edit: Edit, program: Program) -> str:
    """`"old" becomes "new" in "<line>"`: an expression and what the edit makes of it."""
    text = f"{quote(program, edit.target)} becomes {quoted(new_code(edit, program))}"
    line = source_line(program, edit.target)
    return text if line == quote(program, edit.target) else f"{text} in {line}"


def generic_words(edit: Edit, program: Program) -> str:
    """Any edit class without its own wording: its kind and the source of the site it edits,
    and for a part of a statement, the line it stands on."""
    kind = (edit.kind or type(edit).__name__).replace("_", " ")
    text = f"{kind} at {quote(program, edit.target)}"
    if not isinstance(program.node(edit.target), cst.BaseStatement):
        line = source_line(program, edit.target)
        if line != quote(program, edit.target):
            text += f" in {line}"
    return text
