"""Classic operators inside a function the patch rewrote whole.

Sites are places in the original program, so a function that a `ReplaceFunction` edit wrote
anew has no sites of its own: no classic operator could reach its code. `in_rewritten` lets
one: the function as the patch wrote it is made a program of its own (one file holding just
it), the operator proposes one of its usual edits there, and the edited function becomes a
new `ReplaceFunction` of the same function, which supersedes the earlier one in the patch.
A search chooses this for a share of classic mutations equal to the rewritten functions'
share of the variant's statements, so that their code is as reachable as any other.
"""

from __future__ import annotations

import libcst as cst
import numpy as np

from gi.model.edits import ReplaceFunction
from gi.model.errors import EditError, ProgramError
from gi.model.patch import Patch, apply, effective_edits
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators.base import MutationContext, Operator

#: The file name the rewritten function stands in when it is made a program of its own.
ALONE = "rewritten.py"
#: The mode of a rewrite a classic operator made (its `model` names the operator).
CLASSIC = "classic"


def rewritten_functions(patch: Patch) -> list[ReplaceFunction]:
    """The function rewrites that take effect in `patch` (the last one of each function)."""
    return [
        edit
        for edit, took in zip(patch.edits, effective_edits(patch), strict=True)
        if took and isinstance(edit, ReplaceFunction)
    ]


def _statements(source: str) -> int:
    return sum(1 for line in source.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def rewritten_share(program: Program, patch: Patch) -> float:
    """The share of the variant's statement sites that lie in functions the patch rewrote (0.0
    when it rewrote none): how often a classic mutation should go there."""
    rewrites = rewritten_functions(patch)
    if not rewrites:
        return 0.0
    inside = sum(_statements(edit.source) for edit in rewrites)
    replaced = sum(
        1 for site in program.sites_of(SiteKind.STATEMENT) for edit in rewrites if edit.target.contains(site.location)
    )
    outside = len(program.sites_of(SiteKind.STATEMENT)) - replaced
    return inside / max(1, inside + outside)


def in_rewritten(
    operator: Operator, program: Program, patch: Patch, rng: np.random.Generator
) -> ReplaceFunction | None:
    """`operator`'s edit inside one of the functions `patch` rewrote (chosen in proportion to
    their statements), as a new version of that function; None when it finds nothing to do."""
    rewrites = rewritten_functions(patch)
    if not rewrites:
        return None
    sizes = np.array([_statements(edit.source) for edit in rewrites], dtype=float)
    chosen = rewrites[int(rng.choice(len(rewrites), p=sizes / sizes.sum()))]
    try:
        alone = Program(program.root, {ALONE: chosen.source})
    except ProgramError:
        return None
    edit = operator.propose(alone, Patch(), rng, MutationContext())
    if edit is None:
        return None
    try:
        source = apply(alone, Patch((edit,))).sources[ALONE]
        function = cst.parse_module(source).body
        if len(function) != 1 or not isinstance(function[0], cst.FunctionDef):
            return None
        return ReplaceFunction(chosen.target, source.strip() + "\n", model=operator.name, mode=CLASSIC)
    except (EditError, cst.ParserSyntaxError):
        return None
