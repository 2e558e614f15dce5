"""SPEA2 (Zitzler, Laumanns and Thiele 2001): strength fitness and archive truncation."""

from __future__ import annotations

from typing import Any

from gi.algorithms.base import Evolutionary
from gi.populations import Individual
from gi.populations.selection import tournament
from gi.populations.spea2 import spea2_fitness, spea2_survivors


class SPEA2(Evolutionary):
    """SPEA2: the population is SPEA2's archive of `population` members."""

    name = "spea2"
    description = (
        "SPEA2: survivors are the non-dominated (truncated by nearest-neighbour distance, or topped"
        " up by strength fitness); parents by binary tournament on that fitness"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fitness: dict[str, float] = {}

    def _tournament(self) -> Individual:
        return tournament(self.population, 1, self.rng, lambda i: (self._fitness[i.id],))[0]

    def _survive(self, children: list[Individual]) -> None:
        pool = children if self.initialising else self.population + children
        self.population = spea2_survivors(pool, self.settings.population)
        self._restored({})

    def _restored(self, state: dict[str, Any]) -> None:
        fitness = spea2_fitness(self.population)
        self._fitness = {
            individual.id: float(value) for individual, value in zip(self.population, fitness, strict=True)
        }
