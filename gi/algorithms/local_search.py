"""First-improvement local search over patches: one current patch, accept not-worse.

Magpie's default search, batched: each generation is `population` neighbours of the
current patch (an edit appended, replaced or dropped), evaluated together; the walk moves
to the first of them, in the order they were proposed, that is not worse than the current
patch, i.e. that the current patch does not dominate (Deb's constrained domination: an
infeasible neighbour of a feasible patch is worse). An equal neighbour is accepted, so the
walk can cross plateaus. The walk never steps back onto a program it stood on, and does not
propose again a neighbour of the current patch it already tried.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gi.algorithms.base import Search
from gi.algorithms.variation import Offspring
from gi.populations import Individual


class LocalSearch(Search):
    """A single current patch; neighbours by mutation; first not-worse neighbour accepted."""

    name = "local_search"
    description = (
        "first-improvement local search (Magpie's default): one current patch, a batch of its"
        " neighbours per generation, moves to the first that is not worse (not dominated by it)"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Programs the walk has stood on, and neighbours of the current patch already tried.
        self.visited: list[str] = []
        self.tried: list[str] = []

    @property
    def current(self) -> Individual:
        return self.population[0]

    def _seen(self) -> set[str]:
        return {*self.visited, *self.tried, *(individual.tree_hash for individual in self.population)}

    def _neighbour(self) -> Offspring | None:
        return self.variation.neighbour(self.current.patch, self.current.id)

    def maker(self, generation: int) -> Callable[[], Offspring | None]:
        return self._neighbour

    def accepts(self, neighbour: Individual) -> bool:
        """Whether the walk may move to `neighbour`: the current patch does not dominate it."""
        return not self.current.fitness.dominates(neighbour.fitness)

    def _survive(self, children: list[Individual]) -> None:
        if self.initialising:
            # The walk starts at the original, the generation's empty patch.
            start = next((child for child in children if not child.patch.edits), children[0])
            self.population = [start]
            self.visited = [start.tree_hash]
            children = [child for child in children if child is not start]
        self.tried += [child.tree_hash for child in children]
        for child in children:
            if child.tree_hash not in self.visited and self.accepts(child):
                self.population = [child]
                self.visited.append(child.tree_hash)
                self.tried = []
                return

    def state(self) -> dict[str, Any]:
        return {**super().state(), "visited": list(self.visited), "tried": list(self.tried)}

    def _restored(self, state: dict[str, Any]) -> None:
        self.visited = [str(value) for value in state.get("visited", [self.current.tree_hash])]
        self.tried = [str(value) for value in state.get("tried", [])]
