"""The fix templates draw their ingredients near the fault: a clamp's bound, a guard's condition
and its `raise`, a condition to extend with, each from the statement or function first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np

from gi.model.edits import Clamp, InsertGuard
from gi.model.patch import Patch
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.mutators import OPERATORS, MutationContext
from gi.mutators.templates import clamp_bound

DRAWS = 400

SPEND = """\
SIZE = 10
WIDTH = 20


def far():
    return SIZE + WIDTH + SIZE * WIDTH


def spend(balance, cap):
    left = balance - cap
    return left
"""


def test_a_clamp_bound_is_drawn_near_the_value_and_far_ones_stay_possible(
    make_program: Callable[[str], Program],
) -> None:
    """For `balance - cap` the bounds its statement reads (balance, cap) come first, then
    what its function reads or binds (left, the parameters); the module's values still come."""
    program = make_program(SPEND)
    (site,) = [s for s in program.sites_of(SiteKind.EXPRESSION) if program.code(s.location) == "balance - cap"]
    rng = np.random.default_rng(0)
    drawn = Counter(clamp_bound(program, site, rng) for _ in range(DRAWS))
    near = drawn["balance"] + drawn["cap"]
    far = drawn["SIZE"] + drawn["WIDTH"] + drawn["10"] + drawn["20"]
    assert set(drawn) <= {"balance", "cap", "left", "SIZE", "WIDTH", "10", "20"}, drawn
    assert "left" not in drawn, "left is bound only after the statement"
    assert near > 0.6 * DRAWS, drawn
    assert 0 < far < near / 3, drawn


def test_a_clamp_may_bound_from_below_by_a_value_of_the_program(make_program: Callable[[str], Program]) -> None:
    program = make_program(SPEND)
    weights = {(file, 10): 1.0 for file in program.files}
    context = MutationContext(line_weights=weights).bind(program)
    rng = np.random.default_rng(0)
    clamps = {OPERATORS.get("clamp").propose(program, Patch(), rng, context) for _ in range(DRAWS)}
    shapes = {(c.function, c.bound) for c in clamps if isinstance(c, Clamp)}
    assert ("max", "0") in shapes and ("abs", "") in shapes
    assert ("max", "cap") in shapes and ("min", "cap") in shapes, shapes


CHECK = """\
def check(x, limit):
    if x > limit:
        raise ValueError("too big")
    return x


def scale(x, limit):
    y = x * 2
    return y
"""


def test_a_guard_copies_a_condition_and_a_raise_of_the_program(make_program: Callable[[str], Program]) -> None:
    """Before `y = x * 2` the guard may be `if x > limit: raise ValueError("too big")`: both
    halves copied from check(), every name bound in scale()."""
    program = make_program(CHECK)
    context = MutationContext(line_weights={("mod.py", 8): 1.0}).bind(program)
    rng = np.random.default_rng(0)
    guards = [OPERATORS.get("guard").propose(program, Patch(), rng, context) for _ in range(DRAWS)]
    shapes = Counter((g.condition, g.action) for g in guards if isinstance(g, InsertGuard))
    assert shapes[("x > limit", 'raise ValueError("too big")')] > 0, shapes
    assert {condition for condition, _ in shapes} >= {"x is None", "not x", "x < 0", "x > limit"}
    # `return y` is no option: y is bound only by the statement the guard stands before.
    assert {action for _, action in shapes} == {"return None", 'raise ValueError("too big")'}, shapes
