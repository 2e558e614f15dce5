"""The MAP-Elites grid: one elite per cell of a feature space, and its QD-score and coverage.

A cell is a tuple of bin indices, one per feature dimension; where an individual falls is
decided outside (gi.algorithms.features). Which of two individuals keeps a cell is an
`Insertion` (by default, `DominationInsertion`: Deb's constrained domination, then the larger
hypervolume of the single point); only feasible individuals enter. The QD-score is the sum over
the filled cells of the hypervolume each elite dominates on its own (against the run's
reference point), in units of the original program's, so a grid of cells each as good as the
original scores its number of cells; coverage is the share of cells filled.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from typing import Protocol

from gi.populations.archive import hypervolume
from gi.populations.individual import Individual

Cell = tuple[int, ...]


class Insertion(Protocol):
    """Whether a newcomer takes a cell from its incumbent (a user's may be named by dotted path
    in search.grid.insertion)."""

    def replaces(self, incumbent: Individual, newcomer: Individual, grid: Grid) -> bool: ...


class DominationInsertion:
    """The newcomer takes the cell when it dominates the incumbent (Deb's constrained domination),
    or when neither dominates the other and its own hypervolume is larger; an equal one never
    displaces the earlier."""

    def replaces(self, incumbent: Individual, newcomer: Individual, grid: Grid) -> bool:
        if newcomer.fitness.dominates(incumbent.fitness):
            return True
        if incumbent.fitness.dominates(newcomer.fitness):
            return False
        return grid.quality(newcomer) > grid.quality(incumbent)


class Grid:
    """Elites by cell, over `shape` (bins per dimension), scored against `reference`."""

    def __init__(
        self,
        shape: Sequence[int],
        reference: Sequence[float],
        directions: Sequence[float],
        *,
        unit: float = 1.0,
        insertion: Insertion | None = None,
    ) -> None:
        """`unit`: the hypervolume that counts as 1 (the original's), so QD-scores read in originals."""
        self.shape = tuple(shape)
        self.reference = tuple(reference)
        self.directions = tuple(directions)
        self.unit = unit if unit > 0 and math.isfinite(unit) else 1.0
        self.insertion: Insertion = insertion or DominationInsertion()
        self.elites: dict[Cell, Individual] = {}

    @property
    def cells(self) -> int:
        return math.prod(self.shape)

    def quality(self, individual: Individual) -> float:
        """The hypervolume the individual dominates on its own, in units of the original's; 0 for
        an infeasible or broken one."""
        if not individual.fitness.feasible or individual.objectives is None:
            return 0.0
        return hypervolume([individual.objectives], self.reference, self.directions) / self.unit

    def insert(self, individual: Individual, cell: Cell | None) -> bool:
        """Offer `individual` for `cell` (None: it has no place, its features unmeasured);
        True when it became the cell's elite."""
        if cell is None or not individual.fitness.feasible or individual.objectives is None:
            return False
        if len(cell) != len(self.shape) or any(
            not 0 <= index < bins for index, bins in zip(cell, self.shape, strict=True)
        ):
            raise ValueError(f"cell {cell} is outside a grid of shape {self.shape}")
        incumbent = self.elites.get(cell)
        if incumbent is None or (
            incumbent.tree_hash != individual.tree_hash and self.insertion.replaces(incumbent, individual, self)
        ):
            self.elites[cell] = individual
            return True
        return False

    def trial(self) -> Grid:
        """A copy to offer individuals to, leaving this grid's elites as they are."""
        other = copy.copy(self)
        other.elites = dict(self.elites)
        return other

    def members(self) -> list[Individual]:
        """The elites, cell by cell in index order."""
        return [self.elites[cell] for cell in sorted(self.elites)]

    def qd_score(self) -> float:
        return sum(self.quality(elite) for elite in self.elites.values())

    def coverage(self) -> float:
        return len(self.elites) / self.cells if self.cells else 0.0

    def restore(self, placed: Iterable[tuple[Cell, Individual]]) -> None:
        """Put elites back where a checkpoint had them (no insertion rule: they won there)."""
        self.elites = {tuple(cell): individual for cell, individual in placed}
