"""NSGA-III survival (Deb and Jain 2014): fronts first, then niches around reference directions.

The last front that fits only in part is filled by niching: each member is associated with
the reference direction nearest to it (perpendicular distance, after normalising by the
ideal point and the intercepts of the extreme points), and members are taken one at a time
from the direction with the fewest members so far. With four or more objectives crowding
distance stops telling members apart; reference directions keep the front spread.

DEAP's normalisation and association (`find_extreme_points`, `find_intercepts`,
`associate_to_niche`) are used as they are. Its `selNSGA3` is not: its niching shuffles
with numpy's global generator, so here niching draws from the run's `Generator`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
from deap import tools
from deap.tools.emo import associate_to_niche, find_extreme_points, find_intercepts

from populations.individual import Individual

I = TypeVar("I", bound=Individual)  # noqa: E741


def reference_directions(objectives: int, divisions: int) -> np.ndarray:
    """Das and Dennis's structured directions: every point on the unit simplex whose
    coordinates are multiples of 1/`divisions` (DEAP's `uniform_reference_points`)."""
    points: np.ndarray = tools.uniform_reference_points(objectives, divisions)
    return points


def default_divisions(objectives: int, population: int) -> int:
    """The most divisions whose directions (C(p + M - 1, M - 1) of them) do not outnumber the
    population, at least 1, so the population can hold one member per direction."""
    divisions = 1
    while math.comb(divisions + objectives, objectives - 1) <= population:
        divisions += 1
    return divisions


def _minimised(individuals: Sequence[Individual]) -> np.ndarray:
    return -np.array([individual.fitness.wvalues for individual in individuals], dtype=float)


def associate(individuals: Sequence[Individual], directions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each individual's nearest reference direction and its perpendicular distance to it,
    after normalising the objectives of `individuals` as NSGA-III does."""
    fitnesses = _minimised(individuals)
    best, worst = fitnesses.min(axis=0), fitnesses.max(axis=0)
    extremes = find_extreme_points(fitnesses, best)
    intercepts = find_intercepts(extremes, best, worst, worst)
    niches, distances = associate_to_niche(fitnesses, directions, best, intercepts)
    return np.asarray(niches), np.asarray(distances)


def nsga3_survivors(individuals: Sequence[I], k: int, directions: np.ndarray, rng: np.random.Generator) -> list[I]:
    """NSGA-III environmental selection of `k`: whole fronts while they fit, then niching in
    the last one. Sets each survivor's `fitness.rank` (its front)."""
    fronts: list[list[I]] = tools.sortNondominated(list(individuals), k)
    for rank, front in enumerate(fronts):
        for individual in front:
            individual.fitness.rank = rank
    ordered = [individual for front in fronts for individual in front]
    if len(ordered) <= k:
        return ordered
    fitnesses = _minimised(ordered)
    best, worst = fitnesses.min(axis=0), fitnesses.max(axis=0)
    extremes = find_extreme_points(fitnesses, best)
    first_worst = fitnesses[: len(fronts[0])].max(axis=0)
    intercepts = find_intercepts(extremes, best, worst, first_worst)
    niches, distances = associate_to_niche(fitnesses, directions, best, intercepts)
    last = fronts[-1]
    kept = len(ordered) - len(last)
    counts = np.bincount(niches[:kept], minlength=len(directions)).astype(np.int64)
    chosen = ordered[:kept]
    chosen += _niching(last, k - kept, niches[kept:], distances[kept:], counts, rng)
    return chosen


def _niching(
    last: Sequence[I], n: int, niches: np.ndarray, distances: np.ndarray, counts: np.ndarray, rng: np.random.Generator
) -> list[I]:
    """Deb and Jain's Algorithm 4: `n` members of the last front, one at a time from a least
    crowded direction (a random one among equals); a direction with no member yet takes its
    nearest, one with members a random one."""
    counts = counts.copy()
    available = np.ones(len(last), dtype=bool)
    selected: list[I] = []
    while len(selected) < n:
        open_niches = np.unique(niches[available])
        least = counts[open_niches].min()
        candidates = open_niches[counts[open_niches] == least]
        niche = int(candidates[int(rng.integers(len(candidates)))])
        members = np.flatnonzero((niches == niche) & available)
        if counts[niche] == 0:
            pick = int(members[int(np.argmin(distances[members]))])
        else:
            pick = int(members[int(rng.integers(len(members)))])
        available[pick] = False
        counts[niche] += 1
        selected.append(last[pick])
    return selected
