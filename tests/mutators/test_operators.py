"""Before/after tests: each operator, given a program and a seed, makes exactly this source."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.mutators import OPERATORS, MutationContext

BEFORE = """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            continue
        result += value * 2
    return -result
"""

AFTER = {
    "binary_operator": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            continue
        result += value // 2
    return -result
""",
    "boolean_operator": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit or not value % 2:
            continue
        result += value * 2
    return -result
""",
    "comparison_operator": """\
def total(values, limit):
    result = 0
    for value in values:
        if value >= limit and not value % 2:
            continue
        result += value * 2
    return -result
""",
    "constant": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 1:
            continue
        result += value * 2
    return -result
""",
    "insert_control": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            continue
            continue
        result += value * 2
    return -result
""",
    "statement_copy": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            if value > limit and not value % 2:
                continue
            continue
        result += value * 2
    return -result
""",
    "statement_delete": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            pass
        result += value * 2
    return -result
""",
    "statement_move": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            pass
        continue
        result += value * 2
    return -result
""",
    "statement_replace": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            if value > limit and not value % 2:
                continue
        result += value * 2
    return -result
""",
    "statement_swap": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            result += value * 2
        continue
    return -result
""",
    "unary_operator": """\
def total(values, limit):
    result = 0
    for value in values:
        if value > limit and not value % 2:
            continue
        result += value * 2
    return +result
""",
}


EXPRESSION_BEFORE = """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
"""

#: The expression-level operators and fix templates, on a program where each finds a site.
EXPRESSION_AFTER = {
    "argument_swap": """\
def clip(value, low, high):
    return min(max(low, value), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "call_replace": """\
def clip(value, low, high):
    return min(min(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "clamp": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(max(0, value), 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "condition_drop": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if index:
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "condition_extend": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and (not index or index):
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "expression_replace": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(limit, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "guard": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, limit)
        else:
            result -= value
            if values is None:
                continue
            values.append(value)
    if not result:
        return 0
    return result
""",
    "integer_offset": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value + 1, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "name_replace": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, value)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "negate": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and (not index):
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
    "return_replace": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, limit)
        else:
            result -= value
            values.append(value)
    if not result:
        return value
    return result
""",
    "sibling_update": """\
def clip(value, low, high):
    return min(max(value, low), high)


def total(values, limit):
    result = 0
    for index in range(len(values)):
        value = values[index]
        if value > limit and index:
            result += clip(value, 0, limit)
        else:
            result += clip(value, 0, limit)
            result -= value
            values.append(value)
    if not result:
        return 0
    return result
""",
}


CASES = {name: (BEFORE, after) for name, after in AFTER.items()} | {
    name: (EXPRESSION_BEFORE, after) for name, after in EXPRESSION_AFTER.items()
}


def test_every_operator_has_a_before_after_case() -> None:
    assert set(CASES) == set(OPERATORS.names())


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_makes_exactly_this_source(name: str, make_program: Callable[[str], Program]) -> None:
    before, after = CASES[name]
    program = make_program(before)
    edit = OPERATORS.get(name).propose(program, Patch(), np.random.default_rng(0), MutationContext())
    assert edit is not None
    assert apply(program, Patch((edit,))).sources["mod.py"] == after


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_seed_same_edit(name: str, make_program: Callable[[str], Program]) -> None:
    program = make_program(CASES[name][0])
    operator = OPERATORS.get(name)
    first = [operator.propose(program, Patch(), rng, MutationContext()) for rng in [np.random.default_rng(7)] * 5]
    second = [operator.propose(program, Patch(), rng, MutationContext()) for rng in [np.random.default_rng(7)] * 5]
    assert first == second


def test_operators_without_a_legal_site_propose_nothing(make_program: Callable[[str], Program]) -> None:
    program = make_program("import os\nx = os.sep\n")
    rng = np.random.default_rng(0)
    for name in ("insert_control", "binary_operator", "constant", "argument_swap", "call_replace", "sibling_update"):
        assert OPERATORS.get(name).propose(program, Patch(), rng, MutationContext()) is None


def test_site_weights_steer_the_choice(make_program: Callable[[str], Program]) -> None:
    program = make_program("def hot():\n    a = 1\n    b = 2\n\n\ndef cold():\n    c = 3\n")
    context = MutationContext(site_weights={"hot": 1.0}, default_weight=0.0)
    rng = np.random.default_rng(0)
    operator = OPERATORS.get("constant")
    chosen = {operator.propose(program, Patch(), rng, context).target.path for _ in range(50)}  # type: ignore[union-attr]
    assert chosen == {"body[0].body.body[0].body[0].value", "body[0].body.body[1].body[0].value"}
