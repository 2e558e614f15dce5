"""NSGA-III survival keeps one member near each reference direction."""

from __future__ import annotations

import random
import warnings

import numpy as np

from gi.model.patch import Patch
from gi.populations import Individual, ParetoFitness
from gi.populations.nsga3 import associate, default_divisions, normalisation, nsga3_survivors, reference_directions

WEIGHTS = (-1.0, -1.0, -1.0, -1.0)


def individual(name: str, values: np.ndarray, violation: float = 0.0) -> Individual:
    vector = tuple(float(v) for v in values)
    return Individual(name, Patch(), name, 0, ParetoFitness(WEIGHTS, vector, violation), objectives=vector)


def pool(rng: np.random.Generator) -> tuple[np.ndarray, list[Individual]]:
    """Four objectives; one point on each reference direction of the simplex, and a crowd of
    40 points near one of them. All lie on the plane sum = 1, so none dominates another."""
    directions = reference_directions(4, 2)
    members = [individual(f"d{i}", direction) for i, direction in enumerate(directions)]
    crowd = directions[4] + rng.normal(0, 0.01, size=(40, 4))
    crowd = np.clip(crowd, 0, None)
    crowd /= crowd.sum(axis=1, keepdims=True)
    members += [individual(f"c{i}", point) for i, point in enumerate(crowd)]
    return directions, members


def test_directions_and_their_number() -> None:
    directions = reference_directions(4, 2)
    assert directions.shape == (10, 4)
    assert np.allclose(directions.sum(axis=1), 1)
    assert default_divisions(4, 10) == 2 and default_divisions(4, 9) == 1 and default_divisions(3, 20) == 4


def test_nsga3_keeps_a_member_near_every_reference_direction() -> None:
    directions, members = pool(np.random.default_rng(0))
    chosen = nsga3_survivors(members, len(directions), directions, np.random.default_rng(1))
    niches, distances = associate(chosen, directions)
    assert sorted(niches.tolist()) == list(range(len(directions))), "one survivor per direction"
    assert distances.max() < 0.1
    assert sum(member.id.startswith("c") for member in chosen) <= 1, "the crowd gets one place at most"


def test_nsga2_would_not_spread_them_that_way() -> None:
    """The contrast that makes NSGA-III worth having: with 4 objectives, crowding distance keeps
    the extremes and crowd members, and misses directions."""
    from gi.populations import nsga2_survivors

    directions, members = pool(np.random.default_rng(0))
    chosen = nsga2_survivors(members, len(directions))
    niches, _ = associate(chosen, directions)
    assert len(set(niches.tolist())) < len(directions)


def test_fronts_come_first_and_infeasible_last() -> None:
    directions, members = pool(np.random.default_rng(0))
    dominated = individual("worse", np.array([2.0, 2.0, 2.0, 2.0]))
    infeasible = individual("broken", np.array([0.0, 0.0, 0.0, 0.0]), violation=1)
    chosen = nsga3_survivors([dominated, infeasible, *members], len(members), directions, np.random.default_rng(1))
    assert {m.id for m in chosen} == {m.id for m in members}
    assert all(m.fitness.rank == 0 for m in chosen)


def test_nsga3_is_fixed_by_the_generator_and_leaves_global_ones_alone() -> None:
    random.seed(5)
    np.random.seed(5)
    python_state, numpy_state = random.getstate(), np.random.get_state()[1].copy()
    directions, members = pool(np.random.default_rng(0))
    first = [m.id for m in nsga3_survivors(members, 12, directions, np.random.default_rng(3))]
    second = [m.id for m in nsga3_survivors(members, 12, directions, np.random.default_rng(3))]
    assert first == second
    assert random.getstate() == python_state
    assert np.array_equal(np.random.get_state()[1], numpy_state)


def line(shift: tuple[float, float] = (0.0, 0.0)) -> list[Individual]:
    """Eleven points on the line x + y = 10 (none dominates another), shifted by `shift`."""
    weights = (-1.0, -1.0)
    members = []
    for x in range(11):
        vector = (x + shift[0], 10 - x + shift[1])
        members.append(Individual(f"p{x}", Patch(), f"p{x}", 0, ParetoFitness(weights, vector, 0.0), objectives=vector))
    return members


def test_normalisation_is_relative_to_the_ideal_point() -> None:
    """The issue's front (25,3), (26,2), (27,1): normalised, it spans 0 to 1 on each axis."""
    points = np.array([[25.0, 3.0], [26.0, 2.0], [27.0, 1.0]])
    ideal, nadir = normalisation(points, len(points))
    assert np.allclose(ideal, [25, 1]) and np.allclose(nadir, [27, 3])
    assert np.allclose((points - ideal) / (nadir - ideal), [[0, 1], [0.5, 0.5], [1, 0]])


def test_shifting_every_point_by_a_constant_leaves_the_survivors_unchanged() -> None:
    """Keeping 5 of 11 points on a line: the same survivors, seed by seed, wherever the line
    lies (DEAP's normalisation gave 58 different choices over 200 seeds once an axis moved by 25)."""
    directions = reference_directions(2, 4)
    for shift in ((25.0, 0.0), (0.0, 7.0), (100.0, 3.5)):
        for seed in range(200):
            at_zero = nsga3_survivors(line(), 5, directions, np.random.default_rng(seed))
            shifted = nsga3_survivors(line(shift), 5, directions, np.random.default_rng(seed))
            assert [m.id for m in shifted] == [m.id for m in at_zero], (shift, seed)


def test_the_survivors_of_a_line_spread_over_it() -> None:
    """Five directions for five places, the line away from 0: one survivor near each direction
    (x = 0, 2.5, 5, 7.5, 10 on the normalised line), whatever the seed."""
    directions = reference_directions(2, 4)
    for seed in range(20):
        chosen = nsga3_survivors(line((25.0, 0.0)), 5, directions, np.random.default_rng(seed))
        xs = sorted(int(m.id[1:]) for m in chosen)
        assert xs[0] == 0 and xs[1] in (2, 3) and xs[2] == 5 and xs[3] in (7, 8) and xs[4] == 10, (seed, xs)


def test_nsga3_leaves_the_warnings_of_gi_and_the_user_heard() -> None:
    """pymoo's normalisation sets warnings.simplefilter("ignore"): it must not outlast it."""
    directions, members = pool(np.random.default_rng(0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        before = list(warnings.filters)
        nsga3_survivors(members, 12, directions, np.random.default_rng(3))
        warnings.warn("the user's warning", UserWarning, stacklevel=1)
        after = list(warnings.filters)
    assert [str(warning.message) for warning in caught] == ["the user's warning"]
    assert after == before
