"""Plausible patches ranked against overfitting: the least change of behaviour first.

A patch that passes every training test may still be wrong (it overfits the tests). Tan et
al. ("Anti-patterns in search-based program repair", FSE 2016) name the shapes such patches
take; a patch that shows none of them, and changes fewer lines, is more often right. So among
plausible patches gi presents first the one with the fewest anti-patterns, then the smallest
diff, then the fewest edits, then the fewest tokens changed (the syntactic distance S3 ranks
by: `+` for `%` before a whole expression copied over it), then the one that edits the most
suspicious line (fault localisation's score, as PraPR and TBar order their candidates: the same
edit at the line the failing tests point to is likelier the fix than one elsewhere that happens
to pass), then the earliest found:

- *deletes a statement*: any statement removed (Qi et al.'s Kali: most plausible patches of
  GenProg and its kin delete functionality);
- *deletes an exit*: a `return`, `raise`, `break` or `continue` removed or replaced;
- *deletes control*: an `if`, loop, `try` or `with` removed or replaced;
- *empties a block*: the only statement of a block removed (it becomes `pass`);
- *deletes an update*: an assignment to an attribute or an item, or a loop's counter update
  (`x += ...` in a loop), removed or replaced;
- *adds an early exit*: a `return`, `break` or `continue` inserted where it always runs (work
  after it is skipped; a guard's exit runs only when its check holds, and is none);
- *trivial condition*: a condition replaced, extended or made constant with `True`/`False`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from gi.model.edits import (
    AddCheck,
    DeleteStatement,
    Edit,
    ExtendCondition,
    InsertControl,
    InsertGuard,
    InsertStatement,
    ReplaceExpression,
    ReplaceStatement,
)
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import Location, SiteKind

_EXITS = (cst.Return, cst.Raise, cst.Break, cst.Continue)
_CONTROL = (cst.If, cst.For, cst.While, cst.Try, cst.With)
_SKIPS = ("return", "break", "continue")


@dataclass(frozen=True)
class Ranked:
    """A plausible patch with what ranks it: its anti-patterns and the lines its diff changes."""

    patch: Patch
    anti_patterns: tuple[str, ...]
    diff_lines: int
    #: The code's tokens it changes (gi.fitness.size.tokens_changed).
    tokens: int
    #: Its place among the patches as given (the order the search found them in).
    found: int
    #: The highest suspiciousness of a line its edits change (0 without fault localisation).
    suspiciousness: float = 0.0

    @property
    def key(self) -> tuple[int, int, int, int, float, int]:
        return (
            len(self.anti_patterns),
            self.diff_lines,
            len(self.patch),
            self.tokens,
            -self.suspiciousness,
            self.found,
        )


def rank(
    program: Program,
    patches: Sequence[tuple[Patch, int, int]],
    suspicious: Mapping[tuple[str, int], float] | None = None,
) -> list[Ranked]:
    """`patches` (each with the lines and the tokens it changes), the least change of behaviour
    first; `suspicious` scores lines (file, line) by fault localisation."""
    ranked = [
        Ranked(
            patch,
            anti_patterns(program, patch),
            lines,
            tokens,
            found,
            edited_suspiciousness(program, patch, suspicious),
        )
        for found, (patch, lines, tokens) in enumerate(patches)
    ]
    return sorted(ranked, key=lambda entry: entry.key)


def edited_suspiciousness(program: Program, patch: Patch, suspicious: Mapping[tuple[str, int], float] | None) -> float:
    """The highest suspiciousness of the first line of a site an edit of `patch` changes."""
    if not suspicious:
        return 0.0
    scores = [0.0]
    for edit in patch.edits:
        sites = (program.site(edit.target, kind) for kind in SiteKind)
        site = next((found for found in sites if found is not None), None)
        if site is not None:
            scores.append(suspicious.get((edit.target.file, site.line), 0.0))
    return max(scores)


def anti_patterns(program: Program, patch: Patch) -> tuple[str, ...]:
    """The anti-patterns each edit of `patch` shows (see the module's docstring), in edit order."""
    found: list[str] = []
    for edit in patch.edits:
        found += _of_edit(program, edit)
    return tuple(found)


def _of_edit(program: Program, edit: Edit) -> list[str]:
    if isinstance(edit, (DeleteStatement, ReplaceStatement)):
        found = ["deletes a statement"] if isinstance(edit, DeleteStatement) else []
        found += _removed(program, edit.target)
        if isinstance(edit, ReplaceStatement) and _inserts_exit(program, edit.ingredient):
            found.append("adds an early exit")
        return found
    if isinstance(edit, InsertControl):
        return ["adds an early exit"] if edit.keyword in _SKIPS else []
    if isinstance(edit, InsertGuard):
        return ["trivial condition"] if edit.condition in ("True", "False") else []
    if isinstance(edit, InsertStatement):
        return ["adds an early exit"] if _inserts_exit(program, edit.ingredient) else []
    if isinstance(edit, AddCheck) and edit.check in ("True", "False"):
        return ["trivial condition"]
    if isinstance(edit, (ReplaceExpression, ExtendCondition)) and program.code(edit.ingredient) in ("True", "False"):
        return ["trivial condition"]
    return []


def _statement(program: Program, location: Location) -> cst.CSTNode:
    node = program.node(location)
    if isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1:
        return node.body[0]
    return node


def _inserts_exit(program: Program, location: Location) -> bool:
    statement = _statement(program, location)
    return isinstance(statement, (cst.Return, cst.Break, cst.Continue))


def _removed(program: Program, location: Location) -> list[str]:
    """What removing the statement at `location` removes, as anti-patterns."""
    found = []
    statement = _statement(program, location)
    if isinstance(statement, _EXITS):
        found.append("deletes an exit")
    if isinstance(statement, _CONTROL):
        found.append("deletes control")
    if _only_statement(program, location):
        found.append("empties a block")
    if _is_update(program, location, statement):
        found.append("deletes an update")
    return found


def _only_statement(program: Program, location: Location) -> bool:
    """Is the statement at `location` the only one of its block (not at module level)?"""
    head, _, step = location.path.rpartition(".")
    if not head or not step.startswith("body["):
        return False
    siblings = [f"{head}.body[{index}]" for index in (0, 1)]
    return step == "body[0]" and program.site(Location(location.file, siblings[1]), SiteKind.STATEMENT) is None


def _is_update(program: Program, location: Location, statement: cst.CSTNode) -> bool:
    """An assignment to an attribute or an item (state outside the function), or an augmented
    assignment inside a loop (its counter)."""
    if isinstance(statement, cst.Assign):
        return any(isinstance(target.target, (cst.Attribute, cst.Subscript)) for target in statement.targets)
    if isinstance(statement, cst.AugAssign):
        return isinstance(statement.target, (cst.Attribute, cst.Subscript)) or _in_loop(program, location)
    return False


def _in_loop(program: Program, location: Location) -> bool:
    site = program.site(location, SiteKind.STATEMENT)
    return site is not None and site.context is not None and site.context.in_loop
