"""Classic operators reach into a function the model rewrote whole."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gi.model.describe import describe
from gi.model.edits import ReplaceFunction
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators import OPERATORS
from gi.mutators.rewritten import in_rewritten, rewritten_share

SOURCE = """\
def total(items):
    result = 0
    for item in items:
        result = result + item
    return result


def double(values):
    return [value * 2 for value in values]
"""

REWRITE = "def total(items):\n    result = 0\n    result += sum(items)\n    result = int(result)\n    return result\n"


def test_a_statement_operator_edits_the_rewritten_function_and_its_rewrite_supersedes(
    make_program: Callable[[str], Program],
) -> None:
    program = make_program(SOURCE)
    total = program.sites_of(SiteKind.FUNCTION)[0].location
    patch = Patch((ReplaceFunction(total, REWRITE, model="scripted"),))
    assert 0 < rewritten_share(program, patch) < 1 and rewritten_share(program, Patch()) == 0
    edit = in_rewritten(OPERATORS.get("statement_delete"), program, patch, np.random.default_rng(2))
    assert isinstance(edit, ReplaceFunction) and edit.target == total and edit.mode == "classic"
    # One statement of the rewrite deleted, the others as the model wrote them.
    lines = edit.source.splitlines()
    assert len(lines) == len(REWRITE.splitlines()) - 1 and all(line in REWRITE.splitlines() for line in lines)
    variant = apply(program, patch.appended(edit))
    assert variant.effective == (False, True)
    assert variant.sources["mod.py"].startswith(edit.source)
    assert describe(edit, program) == "mod.py:1 edit the rewritten function total() with statement_delete"
    assert in_rewritten(OPERATORS.get("statement_delete"), program, Patch(), np.random.default_rng(2)) is None
