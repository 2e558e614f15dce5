"""Selection on DEAP: NSGA-II survival and binary tournaments for parents.

DEAP's own tournament draws from Python's global `random`; ours take the run's
`numpy.random.Generator`, so one seed fixes every choice. NSGA-III and SPEA2 survival are
in `gi.populations.nsga3` and `gi.populations.spea2`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np
from deap import tools
from deap.tools.emo import assignCrowdingDist

from gi.populations.individual import Individual

I = TypeVar("I", bound=Individual)  # noqa: E741


def rank_and_crowd(individuals: Sequence[Individual]) -> list[list[Individual]]:
    """Sort into non-dominated fronts; set each fitness's `rank` and `crowding_dist`."""
    fronts: list[list[Individual]] = tools.sortNondominated(list(individuals), len(individuals))
    for rank, front in enumerate(fronts):
        assignCrowdingDist(front)
        for individual in front:
            individual.fitness.rank = rank
    return fronts


def nsga2_survivors(individuals: Sequence[I], k: int) -> list[I]:
    """NSGA-II environmental selection (elitist): the best `k` by front, then crowding."""
    chosen: list[I] = tools.selNSGA2(list(individuals), k)
    rank_and_crowd(chosen)
    return chosen


def tournament(
    individuals: Sequence[I], k: int, rng: np.random.Generator, key: Callable[[I], tuple[float, ...]]
) -> list[I]:
    """`k` binary tournaments between two distinct individuals drawn uniformly: the smaller
    `key` wins, a coin decides a tie."""
    if len(individuals) < 2:
        return [individuals[0]] * k if individuals else []
    winners: list[I] = []
    for _ in range(k):
        first, second = (individuals[int(i)] for i in rng.choice(len(individuals), size=2, replace=False))
        a, b = key(first), key(second)
        if a < b:
            winners.append(first)
        elif b < a:
            winners.append(second)
        else:
            winners.append(first if rng.random() < 0.5 else second)
    return winners


def crowded_tournament(individuals: Sequence[I], k: int, rng: np.random.Generator) -> list[I]:
    """`k` binary tournaments: lower front rank wins, then larger crowding distance, then a coin.

    Needs `rank_and_crowd` (or `nsga2_survivors`) to have run on `individuals`.
    """
    return tournament(individuals, k, rng, lambda i: (i.fitness.rank, -i.fitness.crowding_dist))


def rank_tournament(individuals: Sequence[I], k: int, rng: np.random.Generator) -> list[I]:
    """`k` binary tournaments on front rank alone (a coin between equals): NSGA-III's mating
    selection with Deb's constraint handling, since infeasible variants sit in later fronts."""
    return tournament(individuals, k, rng, lambda i: (float(i.fitness.rank),))
