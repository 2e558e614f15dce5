from __future__ import annotations

import numpy as np
import pytest

from gi.fitness.objectives import OBJECTIVES
from gi.model.patch import Patch
from gi.populations import (
    Individual,
    ParetoArchive,
    ParetoFitness,
    crowded_tournament,
    hypervolume,
    nsga2_survivors,
    rank_and_crowd,
)

MINIMISE = OBJECTIVES.get("complexity").weight
MAXIMISE = OBJECTIVES.get("passed_tests").weight


def individual(name: str, values: tuple[float, ...], weights: tuple[float, ...], violation: float = 0.0) -> Individual:
    return Individual(name, Patch(), name, 0, ParetoFitness(weights, values, violation), objectives=values)


def test_weights_follow_the_direction_of_each_objective() -> None:
    assert MINIMISE == -1.0 and MAXIMISE == 1.0
    assert OBJECTIVES.get("maintainability").minimised(70.0) == -70.0
    assert OBJECTIVES.get("size").minimised(3.0) == 3.0


def test_minimising_prefers_smaller_values() -> None:
    small = ParetoFitness((MINIMISE,), (1.0,))
    large = ParetoFitness((MINIMISE,), (2.0,))
    assert small.dominates(large) and not large.dominates(small)


def test_maximising_prefers_larger_values() -> None:
    small = ParetoFitness((MAXIMISE,), (1.0,))
    large = ParetoFitness((MAXIMISE,), (2.0,))
    assert large.dominates(small) and not small.dominates(large)


def test_constrained_domination() -> None:
    weights = (MINIMISE, MINIMISE)
    feasible_bad = ParetoFitness(weights, (9.0, 9.0), violation=0)
    infeasible_good = ParetoFitness(weights, (0.0, 0.0), violation=2)
    less_infeasible = ParetoFitness(weights, (5.0, 5.0), violation=1)
    assert feasible_bad.dominates(infeasible_good)
    assert less_infeasible.dominates(infeasible_good)
    assert not infeasible_good.dominates(less_infeasible)
    trade_a = ParetoFitness(weights, (1.0, 2.0))
    trade_b = ParetoFitness(weights, (2.0, 1.0))
    assert not trade_a.dominates(trade_b) and not trade_b.dominates(trade_a)
    assert hash(ParetoFitness(weights, (1.0, 1.0), 1)) != hash(ParetoFitness(weights, (1.0, 1.0), 0))


def test_nsga2_keeps_fronts_in_order_and_feasible_first() -> None:
    weights = (MINIMISE, MINIMISE)
    pool = [
        individual("a", (1, 5), weights),
        individual("b", (5, 1), weights),
        individual("c", (3, 3), weights),
        individual("d", (4, 4), weights),  # dominated by c
        individual("e", (0, 0), weights, violation=3),  # infeasible
        individual("f", (6, 6), weights),
    ]
    chosen = nsga2_survivors(pool, 4)
    assert [i.id for i in chosen[:3]] == ["a", "b", "c"]
    assert chosen[3].id == "d"
    assert all(i.id != "e" for i in chosen)
    assert [i.fitness.rank for i in chosen] == [0, 0, 0, 1]


def test_tournament_is_fixed_by_the_generator() -> None:
    weights = (MINIMISE, MINIMISE)
    pool = [individual(str(i), (i, 10 - i), weights) for i in range(10)] + [individual("bad", (20, 20), weights)]
    rank_and_crowd(pool)
    first = [i.id for i in crowded_tournament(pool, 30, np.random.default_rng(5))]
    second = [i.id for i in crowded_tournament(pool, 30, np.random.default_rng(5))]
    assert first == second
    assert "bad" not in first or first.count("bad") < 3  # the dominated one rarely wins


def test_archive_keeps_the_first_front_once_per_program() -> None:
    weights = (MINIMISE, MINIMISE)
    archive = ParetoArchive()
    archive.update([individual("a", (1, 5), weights), individual("b", (3, 3), weights)])
    archive.update([individual("c", (2, 2), weights), individual("a-again", (1, 5), weights)])
    assert [m.id for m in archive.members] == ["a", "c"]
    twin = individual("twin", (1, 5), weights)
    twin.tree_hash = "a"
    archive.update([twin])
    assert [m.id for m in archive.members] == ["a", "c"]


def test_hypervolume_of_known_points() -> None:
    # Two points in a 2-D minimisation, reference (4, 4): union of [1,4]x[3,4] and [3,4]x[1,4].
    assert hypervolume([(1, 3), (3, 1)], (4, 4), (MINIMISE, MINIMISE)) == pytest.approx(3 + 3 - 1)
    # A maximised objective is negated: passed tests 5 against the reference -0 + 1.
    assert hypervolume([(5.0,)], (1.0,), (MAXIMISE,)) == pytest.approx(6.0)
    assert hypervolume([(9, 9)], (4, 4), (MINIMISE, MINIMISE)) == 0.0


def test_a_shorter_patch_to_the_same_program_replaces_the_longer_one() -> None:
    weights = (MINIMISE, MINIMISE)  # (complexity, size)
    archive = ParetoArchive()
    longer = individual("longer", (3, 2), weights)
    archive.update([longer])
    shorter = individual("shorter", (3, 1), weights)
    shorter.tree_hash = longer.tree_hash  # the same program, by a patch with one edit fewer
    archive.update([shorter])
    assert [m.id for m in archive.members] == ["shorter"]
