"""NSGA-III survival (Deb and Jain 2014): fronts first, then niches around reference directions.

The last front that fits only in part is filled by niching: each member is associated with
the reference direction nearest to it (perpendicular distance, after normalising every
objective by the ideal point and the intercepts of the hyperplane through the extreme
points), and members are taken one at a time from the direction with the fewest members so
far. With four or more objectives crowding distance stops telling members apart; reference
directions keep the front spread.

The fronts are DEAP's (`sortNondominated`, which knows gi's constrained domination); the
normalisation, the association and the niching are pymoo's (`HyperplaneNormalization`,
`associate_to_niches`, `niching`), with niching drawing from the run's `Generator`. DEAP's
own normalisation is not used: its `find_intercepts` returns intercepts relative to the ideal
point on its main path and absolute ones on its fall-backs, and `associate_to_niche` subtracts
the ideal again, so any objective whose best value is not 0 (complexity, style, runtime
always) was normalised wrongly and the survivors depended on where the front lay, not on its
shape.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
from deap import tools
from pymoo.algorithms.moo.nsga3 import HyperplaneNormalization, associate_to_niches, calc_niche_count, niching

from gi.populations.individual import Individual

I = TypeVar("I", bound=Individual)  # noqa: E741


def reference_directions(objectives: int, divisions: int) -> np.ndarray:
    """Das and Dennis's structured directions: every point on the unit simplex whose
    coordinates are multiples of 1/`divisions` (DEAP's `uniform_reference_points`)."""
    points: np.ndarray = tools.uniform_reference_points(objectives, divisions)
    return points


def default_divisions(objectives: int, population: int) -> int:
    """The most divisions whose directions (C(p + M - 1, M - 1) of them) do not outnumber the
    population, at least 1, so the population can hold one member per direction. One objective
    has one direction however it is divided: 1."""
    if objectives <= 1:
        return 1
    divisions = 1
    while math.comb(divisions + objectives, objectives - 1) <= population:
        divisions += 1
    return divisions


def _minimised(individuals: Sequence[Individual]) -> np.ndarray:
    return -np.array([individual.fitness.wvalues for individual in individuals], dtype=float)


def normalisation(fitnesses: np.ndarray, first_front: int) -> tuple[np.ndarray, np.ndarray]:
    """The ideal and nadir points NSGA-III normalises by: the best value of each objective,
    and the intercepts of the hyperplane through the extreme points of the first front (its
    first `first_front` rows), falling back to the worst of the front, then of all, where
    the plane is degenerate. Shifting every point by a constant shifts both by it."""
    normalise = HyperplaneNormalization(fitnesses.shape[1])
    # pymoo calls warnings.simplefilter("ignore") on its way (to divide by a plane's zero
    # coefficient quietly), which would mute every warning of the process from then on.
    with warnings.catch_warnings():
        normalise.update(fitnesses, nds=np.arange(first_front))
    ideal: np.ndarray = normalise.ideal_point
    nadir: np.ndarray = normalise.nadir_point
    return ideal, nadir


def associate(
    individuals: Sequence[Individual], directions: np.ndarray, first_front: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each individual's nearest reference direction and its perpendicular distance to it,
    after normalising the objectives of `individuals` as NSGA-III does (the first front: the
    first `first_front` of them; all by default)."""
    fitnesses = _minimised(individuals)
    ideal, nadir = normalisation(fitnesses, len(individuals) if first_front is None else first_front)
    niches, distances, _ = associate_to_niches(fitnesses, directions, ideal, nadir)
    return np.asarray(niches), np.asarray(distances)


def nsga3_survivors(individuals: Sequence[I], k: int, directions: np.ndarray, rng: np.random.Generator) -> list[I]:
    """NSGA-III environmental selection of `k`: whole fronts while they fit, then niching in
    the last one (Deb and Jain's Algorithm 4, drawing from `rng`). Sets each survivor's
    `fitness.rank` (its front)."""
    fronts: list[list[I]] = tools.sortNondominated(list(individuals), k)
    for rank, front in enumerate(fronts):
        for individual in front:
            individual.fitness.rank = rank
    ordered = [individual for front in fronts for individual in front]
    if len(ordered) <= k:
        return ordered
    niches, distances = associate(ordered, directions, first_front=len(fronts[0]))
    last = fronts[-1]
    kept = len(ordered) - len(last)
    counts = calc_niche_count(len(directions), niches[:kept])
    chosen = niching(np.arange(len(last)), k - kept, counts, niches[kept:], distances[kept:], random_state=rng)
    return ordered[:kept] + [last[int(index)] for index in chosen]
