"""Where a function stands in a variant: found through a marker the same `apply` puts above it.

Sites are locations in the original program; a patch may have moved, changed or removed the
function since. The operator asks the model about the function as the variant has it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import libcst as cst

from gi.model.edits import Edit, RewritePlan
from gi.model.patch import Patch, apply, effective_edits
from gi.model.program import Program
from gi.model.sites import Location

#: The name of the marker statement that finds a function in a variant.
MARK = "__gi_function_here__"


@dataclass(frozen=True, slots=True)
class _Mark(Edit):
    """Not an edit of the search: a marker statement put just above a function, to find the
    function in the variant a patch makes."""

    def anchors(self) -> tuple[Location, ...]:
        return ()

    def positions(self) -> tuple[Location, ...]:
        return (self.target,)

    def contribute(self, plan: RewritePlan, program: Program) -> None:
        plan.insert_before(self.target, cst.parse_statement(f"{MARK}\n"))


class _MarkFinder(cst.CSTVisitor):
    """Finds the statement right after the marker."""

    def __init__(self) -> None:
        super().__init__()
        self.found: cst.CSTNode | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Module, cst.IndentedBlock)):
            for first, second in itertools.pairwise(node.body):
                if _is_mark(first):
                    self.found = second
        return self.found is None


def _is_mark(statement: cst.CSTNode) -> bool:
    """Whether `statement` is the marker's line alone (libcst.matchers would say so too, and
    costs a quarter of a second to import)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    line = statement.body[0]
    return isinstance(line, cst.Expr) and isinstance(line.value, cst.Name) and line.value.value == MARK


def removals(patch: Patch) -> list[tuple[Edit, Location]]:
    """The subtrees of the original whose content the effective edits of `patch` take away,
    with the edit that takes each."""
    effective = effective_edits(patch)
    return [(edit, gone) for edit, took in zip(patch.edits, effective, strict=True) if took for gone in edit.removes()]


def gone(location: Location, taken: list[tuple[Edit, Location]]) -> bool:
    """Whether the function at `location` is gone with what `removals` took: a function written
    anew whole (by an edit that supersedes it) is still there."""
    return any(
        subtree.contains(location) and not (subtree == location and location in edit.supersedes())
        for edit, subtree in taken
    )


def function_in_variant(
    program: Program, patch: Patch, location: Location
) -> tuple[cst.Module, cst.FunctionDef, list[str]] | None:
    """The function at `location` as it stands in the variant `patch` makes (its module, its
    node, the lines above it), or None if the patch took it away. A function the patch rewrote
    is found as rewritten.

    The same `apply` puts a marker just above it, so it is found wherever the patch moved it
    and whatever names it shares with its neighbours (a property's getter and setter).
    """
    if gone(location, removals(patch)):
        return None
    source = apply(program, patch.appended(_Mark(location))).sources[location.file]
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    finder = _MarkFinder()
    module.visit(finder)
    function = finder.found
    if not isinstance(function, cst.FunctionDef):
        return None
    lines = source.splitlines()
    above = lines[: next(i for i, line in enumerate(lines) if line.strip() == MARK)]
    whole = module.code_for_node(function)
    leading = whole[: len(whole) - len(module.code_for_node(function.with_changes(leading_lines=())))]
    return module, function, above + leading.splitlines()
