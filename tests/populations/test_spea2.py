"""SPEA2: strength fitness, topping up by fitness, and archive truncation."""

from __future__ import annotations

import random

from deap import tools

from gi.model.patch import Patch
from gi.populations import Individual, ParetoFitness
from gi.populations.spea2 import spea2_fitness, spea2_survivors, truncate

WEIGHTS = (-1.0, -1.0)


def individual(name: str, values: tuple[float, float], violation: float = 0.0) -> Individual:
    return Individual(name, Patch(), name, 0, ParetoFitness(WEIGHTS, values, violation), objectives=values)


#: A front from (0, 10) to (10, 0) with two crowded pairs.
FRONT = [
    individual("a", (0.0, 10.0)),
    individual("b", (2.0, 8.0)),
    individual("b2", (2.2, 7.8)),
    individual("c", (5.0, 5.0)),
    individual("d", (8.0, 2.0)),
    individual("d2", (8.1, 1.9)),
    individual("e", (10.0, 0.0)),
]


def test_truncation_removes_the_most_crowded_and_keeps_the_extremes() -> None:
    kept = truncate(FRONT, 5)
    names = [m.id for m in kept]
    assert names[0] == "a" and names[-1] == "e"
    assert "c" in names
    assert len({"b", "b2"} & set(names)) == 1 and len({"d", "d2"} & set(names)) == 1
    assert [m.id for m in truncate(FRONT, 3)] == ["a", "c", "e"]


def test_truncation_matches_deaps_where_deap_needs_no_random_choice() -> None:
    """On a non-dominated pool larger than k, DEAP's selSPEA2 truncates without drawing; both
    scale the same here (equal ranges), so they must agree."""
    for k in range(1, len(FRONT)):
        ours = {m.id for m in spea2_survivors(FRONT, k)}
        state = random.getstate()
        theirs = {m.id for m in tools.selSPEA2(list(FRONT), k)}
        assert random.getstate() == state
        assert ours == theirs, k


def test_fitness_of_dominated_and_non_dominated() -> None:
    pool = [*FRONT[:3], individual("x", (3.0, 9.0)), individual("y", (6.0, 10.0)), individual("z", (1.0, 1.0), 2)]
    fitness = dict(zip([m.id for m in pool], spea2_fitness(pool), strict=True))
    assert all(fitness[name] < 1 for name in ("a", "b", "b2"))
    # x is dominated by b and b2; y by everything feasible but x: more, and stronger, dominators.
    assert 1 <= fitness["x"] < fitness["y"] < fitness["z"], fitness


def test_too_few_non_dominated_are_topped_up_by_fitness() -> None:
    pool = [individual("a", (0.0, 10.0)), individual("x", (3.0, 11.0)), individual("broken", (0.0, 0.0), 1)]
    assert [m.id for m in spea2_survivors(pool, 2)] == ["a", "x"]
    assert [m.id for m in spea2_survivors(pool, 3)] == ["a", "x", "broken"]
