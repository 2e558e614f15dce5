"""NSGA-III (Deb and Jain 2014): survival by front, then niches around reference directions."""

from __future__ import annotations

from typing import Any

import numpy as np

from gi.algorithms.base import Evolutionary
from gi.populations import Individual
from gi.populations.nsga3 import default_divisions, nsga3_survivors, reference_directions
from gi.populations.selection import rank_tournament


class NSGA3(Evolutionary):
    """NSGA-III with constrained domination and a Pareto archive."""

    name = "nsga3"
    description = (
        "NSGA-III: survivors by non-dominated front, then one per reference direction (Das-Dennis,"
        " search.reference_divisions); for 4 or more objectives, where crowding distance fails"
    )

    @property
    def directions(self) -> np.ndarray:
        """The reference directions, one per point of the simplex grid."""
        divisions = self.settings.reference_divisions or default_divisions(
            len(self.objectives), self.settings.population
        )
        return reference_directions(len(self.objectives), divisions)

    def _tournament(self) -> Individual:
        return rank_tournament(self.population, 1, self.rng)[0]

    def _survive(self, children: list[Individual]) -> None:
        pool = children if self.initialising else self.population + children
        self.population = nsga3_survivors(pool, min(len(pool), self.settings.population), self.directions, self.rng)

    def _restored(self, state: dict[str, Any]) -> None:
        # Ranks among the survivors, as the tournament reads them.
        nsga3_survivors(self.population, len(self.population), self.directions, self.rng)
