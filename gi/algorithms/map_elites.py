"""MAP-Elites (Mouret and Clune 2015): one elite per cell of a feature grid, parents from the elites.

The grid's dimensions are search.grid.features (gi/algorithms/features.py: complexity, patch
size, runtime, the kind of edit, a user's function); within a cell the objectives decide who
stays (populations/grid.py: Deb's constrained domination, then the larger hypervolume; a user's
rule by dotted path in search.grid.insertion). Each offspring comes from elites drawn uniformly,
by crossover of two and/or mutation of one, as the other algorithms breed. The population is
the elites; the Pareto archive, as in every algorithm, is the front of the whole run.
"""

from __future__ import annotations

from typing import Any

from gi.algorithms.base import Evolutionary
from gi.populations import Individual, nsga2_survivors


class MapElites(Evolutionary):
    """A grid of elites over feature dimensions; offspring of uniformly drawn elites."""

    name = "map_elites"
    description = (
        "MAP-Elites: keeps the best program of each cell of a grid over search.grid.features (complexity,"
        " size, ...), the objectives deciding within a cell; parents drawn uniformly from the elites"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.grid is None:
            raise ValueError("map_elites needs the grid's features (search.grid)")

    def _parent(self) -> Individual:
        """An elite drawn uniformly (a member of the archive, or of the population, while the grid
        is empty: no program of the run was feasible yet)."""
        assert self.grid is not None
        elites = self.grid.members() or self.archive.members or self.population
        return elites[int(self.rng.integers(len(elites)))]

    def _tournament(self) -> Individual:
        return self._parent()  # never asked for: every parent is an elite drawn uniformly

    def _survive(self, children: list[Individual]) -> None:
        # The children are in the grid already (`Search._illuminate`); the elites go on. While
        # no program is feasible the grid is empty: NSGA-II keeps the least infeasible.
        assert self.grid is not None
        elites = self.grid.members()
        self.population = elites or nsga2_survivors(self.population + children, self.settings.population)
