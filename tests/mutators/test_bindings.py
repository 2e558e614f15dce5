"""Edits of the expression operators and fix templates keep every name they touch bound.

Each case is a program where an edit the operator could once propose leaves a name without
its binding when the code runs: a copied name that is a local of the function assigned only
later (UnboundLocalError), an operand dropped with the `:=` that binds a name the rest reads
(NameError), an update copied from a sibling branch that reads a name only that branch binds.
Every distinct edit among many draws is applied and the variant's function is called for real.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from gi.model.edits import Edit
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, MutationContext

DRAWS = 300


def distinct_edits(program: Program, operator: str) -> list[Edit]:
    rng = np.random.default_rng(0)
    drawn = {OPERATORS.get(operator).propose(program, Patch(), rng, MutationContext()) for _ in range(DRAWS)}
    return sorted((edit for edit in drawn if edit is not None), key=str)


def run(source: str, function: str, *arguments: Any) -> BaseException | None:
    """Call `function` of the module `source` with `arguments`: the NameError it raises
    (UnboundLocalError is one), or None when it raises none."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "mod.py", "exec"), namespace)  # the variant under test
    try:
        namespace[function](*arguments)
    except NameError as error:
        return error
    except Exception:  # a wrong value is no unbound name
        return None
    return None


CASES = {
    # A later local `LIMIT` shadows the module's: copying it above its assignment is unbound.
    "name_replace": (
        "LIMIT = 10\n\n\ndef clip(value):\n    low = value\n    LIMIT = value * 2\n    return min(low, LIMIT)\n",
        "clip",
        (3,),
    ),
    # dataclasses.py:914 `base_fields = type` with `type` a local assigned later.
    "expression_replace": (
        "def fields(cls):\n    base = cls.start\n    seen = base\n    type = cls.kind\n    return seen, type\n",
        "fields",
        (type("C", (), {"start": 1, "kind": 2}),),
    ),
    # `max` is a local assigned later: min -> max reads it unbound.
    "call_replace": (
        "def spread(values):\n    low = min(values)\n    max = low + 1\n    return low, max\n",
        "spread",
        ([3, 1],),
    ),
    # traceback.py:614: keeping `ch in ")#"` drops the `:=` that binds ch.
    "condition_drop": (
        'def closes(segment, i):\n    return (ch := segment[i]).isspace() or ch in ")#"\n',
        "closes",
        ("a)", 1),
    ),
    # dataclasses.py:1419: `defaults[name] = spec` copied into the branch where spec is unbound.
    "sibling_update": (
        "def defaults_of(items):\n"
        "    defaults = {}\n"
        "    for item in items:\n"
        "        if len(item) == 2:\n"
        "            name, tp = item\n"
        "            seen = name\n"
        "        else:\n"
        "            name, tp, spec = item\n"
        "            defaults[name] = spec\n"
        "    return defaults\n",
        "defaults_of",
        ([("a", int), ("b", int, 3)],),
    ),
}


@pytest.mark.parametrize("operator", sorted(CASES))
def test_no_edit_leaves_a_name_unbound_when_the_code_runs(
    operator: str, make_program: Callable[[str], Program]
) -> None:
    source, function, arguments = CASES[operator]
    program = make_program(source)
    assert run(source, function, *arguments) is None
    edits = distinct_edits(program, operator)
    assert edits, f"{operator} proposed nothing"
    failures = {
        str(edit): repr(error)
        for edit in edits
        if (error := run(apply(program, Patch((edit,))).sources["mod.py"], function, *arguments)) is not None
    }
    assert not failures, failures


def test_condition_drop_still_keeps_the_operand_that_binds(make_program: Callable[[str], Program]) -> None:
    """The walrus case is refused on one side only: keeping the binding operand is fine."""
    source, _, _ = CASES["condition_drop"]
    program = make_program(source)
    variants = {apply(program, Patch((edit,))).sources["mod.py"] for edit in distinct_edits(program, "condition_drop")}
    assert variants == {"def closes(segment, i):\n    return (ch := segment[i]).isspace()\n"}


def test_sibling_update_still_copies_an_update_whose_names_are_bound(make_program: Callable[[str], Program]) -> None:
    """`seen = name` reads only `name`, bound in both branches: it may be copied across;
    `defaults[name] = spec` may not (spec is bound only in its own branch)."""
    source, _, _ = CASES["sibling_update"]
    program = make_program(source)
    copied = {program.code(edit.ingredients()[0]) for edit in distinct_edits(program, "sibling_update")}
    assert "seen = name\n" in copied
    assert "defaults[name] = spec\n" not in copied
