"""Where operators edit: profile and fault-localisation weights, and functions never edited."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.sites import Location, SiteKind
from gi.mutators import OPERATORS, MutationContext, choose_site
from gi.mutators.base import UnboundContextError, function_spans

SHOP = """\
class Shop:
    def hot(self, items):
        total = 0
        for item in items:
            total += item
        return total

    def cold(self):
        return 1


def helper():
    return 2
"""

BENCH = """\
LIMIT = 10


def work(values):
    total = 0
    for value in values:
        if value > LIMIT and not value % 2:
            total += value * 2
        else:
            total -= 1
    return total


def run():
    data = list(range(6000))
    for _ in range(3):
        work(data)
    if len(data) > 1:
        data.pop()
    return len(data)


def spread(low, high):
    if low < high:
        return max(high - low, 0)
    return divmod(low, high)
"""


def name_of(program: Program, location: Location) -> str:
    return function_spans(program)[location].name


def chosen_functions(program: Program, context: MutationContext, draws: int = 60) -> set[str]:
    """The qualified names of the function sites `choose_site` picks over many draws."""
    rng = np.random.default_rng(0)
    names = set()
    for _ in range(draws):
        site = choose_site(program.sites_of(SiteKind.FUNCTION), rng, context)
        assert site is not None
        names.add(name_of(program, site.location))
    return names


def test_a_function_site_weighs_by_its_own_name_in_the_profile(make_program: Callable[[str], Program]) -> None:
    program = make_program(SHOP)
    context = MutationContext(site_weights={"Shop.hot": 1.0}, default_weight=0.0).bind(program)
    assert chosen_functions(program, context) == {"Shop.hot"}
    context = MutationContext(site_weights={"helper": 1.0, "Shop": 5.0}, default_weight=0.0).bind(program)
    assert chosen_functions(program, context) == {"helper"}


def test_a_function_site_weighs_by_its_most_suspicious_line(make_program: Callable[[str], Program]) -> None:
    program = make_program(SHOP)
    spans = {span.name: span for span in function_spans(program).values()}
    assert (spans["Shop.hot"].first, spans["Shop.hot"].last) == (2, 6)
    # Only a line in the middle of hot's body is suspicious: neither its def line nor cold's.
    context = MutationContext(line_weights={("mod.py", 5): 0.9}, line_floor=0.0).bind(program)
    assert chosen_functions(program, context) == {"Shop.hot"}
    # With a floor, the others may still be chosen, less often.
    context = MutationContext(line_weights={("mod.py", 5): 0.9}, line_floor=0.05).bind(program)
    weights = {name_of(program, site.location): context.weight(site) for site in program.sites_of(SiteKind.FUNCTION)}
    assert weights == {"Shop.hot": pytest.approx(0.9), "Shop.cold": 0.05, "helper": 0.05}


def test_statement_sites_keep_their_enclosing_function_and_line(make_program: Callable[[str], Program]) -> None:
    program = make_program(SHOP)
    context = MutationContext(site_weights={"Shop.hot": 2.0}, line_weights={("mod.py", 5): 0.5}).bind(program)
    by_line = {site.line: context.weight(site) for site in program.sites_of(SiteKind.STATEMENT)}
    assert by_line[5] == pytest.approx(1.0) and by_line[3] == 0.0 and by_line[9] == 0.0


def test_an_unbound_context_refuses_questions_it_cannot_answer(make_program: Callable[[str], Program]) -> None:
    program = make_program(SHOP)
    function = program.sites_of(SiteKind.FUNCTION)[0]
    with pytest.raises(UnboundContextError):
        MutationContext(site_weights={"Shop.hot": 1.0}).weight(function)
    with pytest.raises(UnboundContextError):
        MutationContext(excluded_functions=frozenset({"run"})).allows(function)
    assert MutationContext().weight(function) == 1.0 and MutationContext().allows(function)


def run_location(program: Program) -> Location:
    return next(loc for loc, span in function_spans(program).items() if span.name == "run")


def run_dump(source: str) -> str:
    return next(ast.dump(n) for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "run")


@pytest.mark.parametrize("name", sorted(OPERATORS.names()))
def test_no_operator_edits_an_excluded_function(name: str, make_program: Callable[[str], Program]) -> None:
    program = make_program(BENCH)
    run = run_location(program)
    context = MutationContext(excluded_functions=frozenset({"run"})).bind(program)
    operator = OPERATORS.get(name)
    rng = np.random.default_rng(1)
    proposed = 0
    for _ in range(150):
        edit = operator.propose(program, Patch(), rng, context)
        if edit is None:
            continue
        proposed += 1
        edited = (*edit.anchors(), *edit.positions(), *edit.removes(), *edit.rewrites())
        assert not any(run.contains(loc) or loc.contains(run) for loc in edited), edit
        assert run_dump(apply(program, Patch((edit,))).sources["mod.py"]) == run_dump(BENCH), edit
    assert proposed > 0, "the operator still finds sites outside run"


def test_no_operator_edits_a_line_the_tests_never_execute() -> None:
    """Coverage of the original: Shop.hot ran in a test; Shop.cold and helper were only defined
    (their `def` lines ran at import). Every operator, many draws: no edit lands outside hot."""
    program = Program(Path("/project"), {"shop.py": SHOP})
    executed = frozenset({1, 2, 3, 4, 5, 6, 8, 12})  # class, defs (at import) and hot's body
    tested = frozenset({3, 4, 5, 6})
    context = MutationContext(executed_lines={"shop.py": executed}, tested_lines={"shop.py": tested}).bind(program)
    left_out = {program.site(location, kind) for location in context.unexecuted for kind in SiteKind}
    assert {site.function for site in left_out if site is not None} >= {"Shop.cold", "helper"}
    rng = np.random.default_rng(1)
    lines = set()
    for name in OPERATORS.names():
        for _ in range(30):
            edit = OPERATORS.get(name).propose(program, Patch(), rng, context)
            if edit is not None:
                site = next(s for s in program.sites if s.location == edit.target)
                lines.add(site.line)
    assert lines and lines <= {1, 2, 3, 4, 5, 6}, lines
    with pytest.raises(UnboundContextError):
        MutationContext(executed_lines={"shop.py": executed}).allows(program.sites[0])
