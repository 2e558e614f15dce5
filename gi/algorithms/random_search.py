"""Random search: random patches that never look at a measurement; the baseline of GI papers.

Each generation after the first is `population` patches made from nothing by uniformly
chosen operators, of the sizes an evolutionary search reaches by then: a size drawn
uniformly from 1 to generation + 1 edits (at most `max_edits`), since each generation of
mutation adds at most one edit to a patch. Generation 0 is every algorithm's: the original
and one-edit patches. Only the Pareto archive, the report's front, sees the evaluations.
"""

from __future__ import annotations

from collections.abc import Callable

from gi.algorithms.base import Search
from gi.algorithms.variation import Offspring
from gi.populations import Individual


class RandomSearch(Search):
    """Random patches of growing size; fitness is never consulted."""

    name = "random"
    description = (
        "random search: each generation, patches of 1 to generation+1 random edits (at most"
        " search.max_edits), made without looking at any evaluation; the baseline for the others"
    )

    def _random(self) -> Offspring | None:
        largest = min(self.generation + 2, self.settings.max_edits)
        size = int(self.rng.integers(1, largest + 1))
        return self.variation.random_patch(size)

    def maker(self, generation: int) -> Callable[[], Offspring | None]:
        return self._random

    def _survive(self, children: list[Individual]) -> None:
        # The population is just the last batch: it only keeps the next one from repeating it.
        self.population = children
