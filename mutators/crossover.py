"""Crossover on patches (the genome is a list of edits): concatenation, uniform, one-point."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gi.model.patch import Patch
from gi.model.registry import Registry

CrossoverFunction = Callable[[Patch, Patch, np.random.Generator], Patch]


@dataclass(frozen=True)
class Crossover:
    name: str
    description: str
    combine: CrossoverFunction


CROSSOVERS: Registry[Crossover] = Registry("crossover")


def concatenation(first: Patch, second: Patch, rng: np.random.Generator) -> Patch:
    """All edits of the first parent, then all edits of the second."""
    return first + second


def uniform(first: Patch, second: Patch, rng: np.random.Generator) -> Patch:
    """Each edit of either parent kept with probability 1/2, in parent order."""
    kept = [edit for edit in (*first.edits, *second.edits) if rng.random() < 0.5]
    return Patch(tuple(kept))


def one_point(first: Patch, second: Patch, rng: np.random.Generator) -> Patch:
    """A prefix of the first parent followed by a suffix of the second."""
    cut_first = int(rng.integers(len(first) + 1))
    cut_second = int(rng.integers(len(second) + 1))
    return Patch(first.edits[:cut_first] + second.edits[cut_second:])


for _crossover in (
    Crossover("concatenation", "all edits of one parent followed by all edits of the other", concatenation),
    Crossover("uniform", "keep each edit of either parent with probability 1/2", uniform),
    Crossover("one_point", "a prefix of one parent followed by a suffix of the other", one_point),
):
    CROSSOVERS.add(_crossover.name, _crossover)
