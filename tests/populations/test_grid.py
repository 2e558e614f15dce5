"""The MAP-Elites grid: who keeps a cell, QD-score and coverage, and where a program falls."""

from __future__ import annotations

import pytest

from gi.algorithms.features import EDIT_KINDS, Feature, Features, edit_family, edit_kind
from gi.model.edits import DeleteStatement, ReplaceOperator
from gi.model.edits.written import WriteStatement
from gi.model.patch import Patch
from gi.model.sites import Location
from gi.populations import Grid, Individual, ParetoFitness

#: Two objectives, both minimised, and the reference point: the box a point dominates is
#: (4 - first) * (10 - second).
WEIGHTS = (-1.0, -1.0)
REFERENCE = (4.0, 10.0)


def member(name: str, first: float, second: float, violation: float = 0.0) -> Individual:
    fitness = ParetoFitness(WEIGHTS, (first, second), violation)
    return Individual(name, Patch(), f"hash-{name}", 0, fitness, objectives=(first, second))


def test_a_dominating_newcomer_takes_the_cell_and_an_infeasible_one_never_enters() -> None:
    grid = Grid((2, 2), REFERENCE, WEIGHTS)
    first = member("a", 2.0, 5.0)
    assert grid.insert(first, (0, 1))
    assert not grid.insert(member("b", 3.0, 6.0), (0, 1)), "dominated: the incumbent stays"
    assert not grid.insert(member("c", 0.0, 0.0, violation=1.0), (1, 1)), "infeasible programs never enter"
    assert not grid.insert(member("d", 0.0, 0.0), None), "a program without features has no cell"
    better = member("e", 1.0, 5.0)
    assert grid.insert(better, (0, 1))
    assert grid.elites == {(0, 1): better}


def test_between_non_dominated_programs_the_larger_hypervolume_wins() -> None:
    grid = Grid((1,), REFERENCE, WEIGHTS)
    grid.insert(member("a", 1.0, 8.0), (0,))  # (4 - 1) * (10 - 8) = 6
    assert not grid.insert(member("b", 3.0, 5.0), (0,))  # (4 - 3) * (10 - 5) = 5
    assert grid.insert(member("c", 2.0, 6.0), (0,))  # 2 * 4 = 8
    assert grid.elites[(0,)].id == "c"


def test_qd_score_adds_each_elites_own_hypervolume_in_units_of_the_original() -> None:
    grid = Grid((2, 3), REFERENCE, WEIGHTS, unit=4.0)  # the original's box: say 2 * 2
    grid.insert(member("a", 2.0, 8.0), (0, 0))  # 2 * 2 = 4
    grid.insert(member("b", 1.0, 5.0), (1, 2))  # 3 * 5 = 15
    grid.insert(member("c", 5.0, 5.0), (1, 1))  # beyond the reference: 0
    assert grid.qd_score() == pytest.approx((4 + 15 + 0) / 4.0)
    assert grid.coverage() == pytest.approx(3 / 6)
    with pytest.raises(ValueError, match="outside"):
        grid.insert(member("d", 1.0, 1.0), (2, 0))


def test_a_users_insertion_rule_decides() -> None:
    class Newest:
        def replaces(self, incumbent: Individual, newcomer: Individual, grid: Grid) -> bool:
            return True

    grid = Grid((1,), REFERENCE, WEIGHTS, insertion=Newest())
    grid.insert(member("a", 0.0, 0.0), (0,))
    grid.insert(member("b", 3.0, 9.0), (0,))
    assert grid.elites[(0,)].id == "b"


def test_a_value_falls_in_its_bin_and_outside_values_in_the_end_bins() -> None:
    feature = Feature("complexity", 0.0, 20.0, 4, lambda variant, evaluation: None)
    assert [feature.bin(value) for value in (-3.0, 0.0, 4.99, 5.0, 14.9, 15.0, 20.0, 99.0)] == [0, 0, 0, 1, 2, 3, 3, 3]
    assert feature.edges() == [0.0, 5.0, 10.0, 15.0, 20.0]
    features = Features((feature, Feature("size", 0.0, 6.0, 6, lambda variant, evaluation: None)))
    assert features.shape == (4, 6)
    assert features.cell((12.0, 2.0)) == (2, 2)
    assert features.cell(None) is None


def test_edit_kind_is_the_kind_most_edits_make() -> None:
    here = Location("mod.py", "body[0].body.body[0]")
    delete, replace = DeleteStatement(here), ReplaceOperator(here, "Sub")
    written = WriteStatement(here, "x = 1\n")
    assert [edit_family(edit) for edit in (delete, replace, written)] == ["statements", "operators", "model"]
    assert EDIT_KINDS[edit_kind([])] == "none"
    assert EDIT_KINDS[edit_kind([delete, replace, replace])] == "operators"
    assert EDIT_KINDS[edit_kind([replace, delete])] == "statements", "a tie goes to the kind listed first"
    assert EDIT_KINDS[edit_kind([written, written, delete])] == "model"
