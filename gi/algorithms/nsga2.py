"""NSGA-II (Deb et al. 2002): elitist survival by front, then crowding distance."""

from __future__ import annotations

from typing import Any

from gi.algorithms.base import Evolutionary
from gi.populations import Individual, crowded_tournament, nsga2_survivors, rank_and_crowd


class NSGA2(Evolutionary):
    """NSGA-II with constrained domination, elitism and a Pareto archive."""

    name = "nsga2"
    description = (
        "NSGA-II: survivors by non-dominated front, then crowding distance; parents from the archive"
        " or a crowded binary tournament (the default; 2-3 objectives)"
    )

    def _tournament(self) -> Individual:
        return crowded_tournament(self.population, 1, self.rng)[0]

    def _survive(self, children: list[Individual]) -> None:
        if self.initialising:
            self.population = children
            rank_and_crowd(self.population)
        else:
            self.population = nsga2_survivors(self.population + children, self.settings.population)

    def _restored(self, state: dict[str, Any]) -> None:
        rank_and_crowd(self.population)
