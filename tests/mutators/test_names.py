"""The expression operators' choices that are closed under inversion: what a bug of one kind
does, the same operator can undo."""

from __future__ import annotations

from collections.abc import Callable

from gi.model.edits import ReplaceName
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, MutationContext

CALLS = """\
def apply_fee(total, fee):
    return total - fee


def longest(words):
    return max(words, key=len)


def settle(total):
    return apply_fee(total, 2)


def width(text):
    return longest(text)


def shadowed(values):
    sum = 0
    return longest(values) + sum
"""


def _call_options(program: Program) -> dict[int, set[str]]:
    """Per line, the names call_replace may call instead of the function called there."""
    operator = OPERATORS.get("call_replace")
    found: dict[int, set[str]] = {}
    for site in operator.sites(program, MutationContext()):
        for edit in operator.neighbourhood(program, site, MutationContext()):
            assert isinstance(edit, ReplaceName)
            found.setdefault(site.line, set()).add(edit.name)
    return found


def test_a_function_of_the_program_may_become_a_common_builtin_that_takes_as_many(
    make_program: Callable[[str], Program],
) -> None:
    """`round(total, 2)` made `apply_fee(total, 2)` (a bug call_replace can make) is undone by
    call_replace itself; a builtin a local name shadows is never offered."""
    options = _call_options(make_program(CALLS))
    assert options[10] == {"max", "min", "round", "sum"}  # apply_fee(total, 2): two arguments
    # longest(text): the program's functions of one argument, and the builtins
    assert options[14] == {"settle", "shadowed", "width", "abs", "len", "max", "min", "round", "sorted", "sum"}
    assert "sum" not in options[19] and "len" in options[19]  # `sum` is a local there
    assert 6 not in options  # max(words, key=len): a call with keywords is left alone


RETURNS = """\
def dedupe(values):
    seen = set()
    result = []
    for value in values:
        if value not in seen:
            seen.add(value)
            result.append(value)
    return len(values)


def count(values):
    return len(values) + 1
"""


def test_a_return_may_give_back_a_variable_the_function_reads(make_program: Callable[[str], Program]) -> None:
    """Returning the list a function builds (`return result` for `return len(values)`), besides
    the values returned elsewhere; each once, none from another function."""
    program = make_program(RETURNS)
    operator = OPERATORS.get("return_replace")
    [site] = [site for site in operator.sites(program, MutationContext()) if site.line == 8]
    returned = [
        apply(program, Patch((edit,))).sources["mod.py"].splitlines()[7].strip()
        for edit in operator.neighbourhood(program, site, MutationContext())
    ]
    assert sorted(returned) == sorted(
        ["return len(values) + 1", "return values", "return value", "return seen", "return result"]
    )
