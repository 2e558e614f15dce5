"""The individual: a patch with its identity, lineage and DEAP fitness.

No `deap.creator`: `ParetoFitness` is an ordinary module-level class whose weights are set
per instance, so individuals are plain objects that type checkers and pickling understand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deap import base

from gi.model.patch import Patch


class ParetoFitness(base.Fitness):  # type: ignore[misc]
    """A DEAP fitness with per-instance weights and Deb's constrained domination.

    A variant with a smaller constraint violation dominates one with a larger violation;
    between equal violations (feasible variants have 0), ordinary Pareto dominance decides.
    """

    def __init__(self, weights: Sequence[float], values: Sequence[float] = (), violation: float = 0.0) -> None:
        self.weights = tuple(weights)
        base.Fitness.__init__(self, tuple(values))
        self.violation = float(violation)
        self.crowding_dist = 0.0
        self.rank = 0

    def dominates(self, other: ParetoFitness, obj: slice = slice(None)) -> bool:
        if self.violation != other.violation:
            return self.violation < other.violation
        return bool(base.Fitness.dominates(self, other, obj))

    def __hash__(self) -> int:
        return hash((self.wvalues, self.violation))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ParetoFitness) and self.wvalues == other.wvalues and self.violation == other.violation

    @property
    def feasible(self) -> bool:
        return self.violation == 0.0


@dataclass(eq=False)
class Individual:
    """One member of the population: a patch, the program it makes, and how it scored."""

    id: str
    patch: Patch
    tree_hash: str
    generation: int
    fitness: ParetoFitness
    parents: tuple[str, ...] = ()
    operator: str = ""
    #: The measured objective values in their own direction (None for a broken variant).
    objectives: tuple[float, ...] | None = None
    #: Where it stands on the quality-diversity grid's feature dimensions (None: not measured,
    #: or the run keeps no grid).
    features: tuple[float, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
