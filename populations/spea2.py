"""SPEA2 (Zitzler, Laumanns and Thiele 2001): strength fitness and archive truncation.

Each individual's fitness is its raw fitness (the summed strength, the number of
individuals each dominates, of those that dominate it; 0 for the non-dominated) plus a
density below 1 from its k-th nearest neighbour (k = sqrt(n)). The next archive holds the
non-dominated individuals; too few are topped up by fitness, too many are truncated by
removing, one at a time, the one nearest to its neighbours (ties broken by the second
nearest, and so on), which keeps the extremes and spreads the rest.

Distances are taken on objectives in minimised form, each scaled by its range in the pool.
Domination is the individuals' own (Deb's constrained domination for `ParetoFitness`).
DEAP's `selSPEA2` is not used: its density draws pivots from Python's global `random` and
measures each individual only against those after it in the list.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from gi.populations.individual import Individual

I = TypeVar("I", bound=Individual)  # noqa: E741


def _distances(individuals: Sequence[Individual]) -> np.ndarray:
    """Euclidean distances between individuals on range-scaled minimised objectives; inf on the diagonal."""
    values = -np.array([individual.fitness.wvalues for individual in individuals], dtype=float)
    spread = values.max(axis=0) - values.min(axis=0)
    scaled = values / np.where(spread > 0, spread, 1.0)
    distances: np.ndarray = np.linalg.norm(scaled[:, None, :] - scaled[None, :, :], axis=2)
    np.fill_diagonal(distances, np.inf)
    return distances


def spea2_fitness(individuals: Sequence[Individual]) -> np.ndarray:
    """SPEA2 fitness of each individual (smaller is better; below 1 means non-dominated)."""
    n = len(individuals)
    if n == 0:
        return np.zeros(0)
    dominates = np.array(
        [
            [i != j and a.fitness.dominates(b.fitness) for j, b in enumerate(individuals)]
            for i, a in enumerate(individuals)
        ],
        dtype=bool,
    ).reshape(n, n)
    strength = dominates.sum(axis=1).astype(float)
    raw: np.ndarray = (dominates * strength[:, None]).sum(axis=0)
    if n == 1:
        return raw + 0.5
    k = min(int(math.sqrt(n)), n - 1)
    kth = np.sort(_distances(individuals), axis=1)[:, k - 1]
    density: np.ndarray = raw + 1.0 / (kth + 2.0)
    return density


def truncate(individuals: Sequence[I], k: int) -> list[I]:
    """SPEA2's archive truncation: remove, one at a time, the individual whose sorted distances
    to the others are lexicographically smallest, until `k` remain (in their order)."""
    remaining = list(range(len(individuals)))
    distances = _distances(individuals)
    while len(remaining) > k:
        block = distances[np.ix_(remaining, remaining)]
        rows = np.sort(block, axis=1)
        # np.lexsort sorts by its last key first: the nearest neighbour decides, then the next.
        nearest = int(np.lexsort(rows.T[::-1])[0])
        del remaining[nearest]
    return [individuals[index] for index in remaining]


def spea2_survivors(individuals: Sequence[I], k: int) -> list[I]:
    """SPEA2 environmental selection of `k`: the non-dominated, topped up by fitness or truncated."""
    fitness = spea2_fitness(individuals)
    nondominated = [individuals[i] for i in range(len(individuals)) if fitness[i] < 1.0]
    if len(nondominated) > k:
        return truncate(nondominated, k)
    order = np.argsort(fitness, kind="stable")
    return [individuals[int(i)] for i in order[:k]]
