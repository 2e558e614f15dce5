"""The measures gi takes in its own process, each cached by what it declares it depends on.

The evaluator takes the registered static measures (`gi.fitness.measures.MEASURES`) the run's
objectives read (`gi.fitness.objectives.measures_read`; every one when it is not told) of the
program it evaluates, and the evaluation is cached by tree hash. A candidate then takes the
measures of its own patch and text (`Basis.PATCH`, `Basis.TEXT`): two patches can make one
program, and comments and layout are not in the tree hash. `RunMeasures` adds the run's own
objectives' measures (a user's function), cached by the key their basis names.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence

from gi.fitness.measures import MEASURES, Basis, Measure
from gi.fitness.objectives import Objective, measures_read
from gi.model.patch import Variant

#: The bases of what a candidate measures of itself, not taken from the evaluation of its program.
OWN = frozenset({Basis.PATCH, Basis.TEXT})
#: Values `RunMeasures` keeps before it forgets the oldest.
KEPT = 4096


def _taken(measures: Sequence[Measure], variant: Variant) -> dict[str, float]:
    values: dict[str, float] = {}
    for measure in measures:
        value = measure.take(variant)
        if value is not None:
            values[measure.name] = value
    return values


def static_measures(
    variant: Variant, bases: Collection[Basis] = tuple(Basis), names: Collection[str] | None = None
) -> dict[str, float]:
    """The registered measures gi computes from the source alone (of the given bases; those
    `names` lists, or every one), in registration order."""
    wanted = [m for m in MEASURES.values() if m.static and m.basis in bases and (names is None or m.name in names)]
    return _taken(wanted, variant)


def program_measures(variant: Variant, names: Collection[str] | None = None) -> dict[str, float]:
    """The static measures of the program (its syntax tree): cached with the evaluation by tree hash."""
    return static_measures(variant, {Basis.PROGRAM}, names)


def variant_measures(variant: Variant, names: Collection[str] | None = None) -> dict[str, float]:
    """The static measures of this patch and this text, not of the program: patch size and diff
    lines, style, the maintainability index, lines (those `names` lists, or every one). Taken
    for every candidate, never from the cache by tree hash (text measures are cached per file's text)."""
    return static_measures(variant, OWN, names)


def cache_key(basis: Basis, variant: Variant) -> str:
    """What a value of this basis is cached by, for this variant."""
    if basis is Basis.PATCH:
        return variant.patch.key()
    if basis is Basis.TEXT:
        digest = hashlib.sha256()
        for file in variant.program.files:
            digest.update(file.encode() + b"\0" + variant.sources[file].encode() + b"\0")
        return digest.hexdigest()
    return variant.tree_hash  # the program; a timing's key is the evaluation cache's own


class RunMeasures:
    """The measures a run's objectives add to the registered ones (a user's function), taken in
    gi's process for every candidate and cached by the key each one's basis names."""

    def __init__(self, objectives: Sequence[Objective]) -> None:
        #: The registered measures the objectives read, taken of every candidate.
        self.read = measures_read(objectives)
        self.measures = [
            objective.measure
            for objective in objectives
            if objective.measure.static and objective.measure.name not in MEASURES
        ]
        self._values: OrderedDict[tuple[str, str], float | None] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, variant: Variant) -> dict[str, float]:
        """The variant's values of the run's own measures (one that gives none is left out)."""
        values: dict[str, float] = {}
        for measure in self.measures:
            key = (measure.name, cache_key(measure.basis, variant))
            with self._lock:
                known = key in self._values
                value = self._values.get(key)
            if not known:
                value = measure.take(variant)
                with self._lock:
                    self._values[key] = value
                    while len(self._values) > KEPT:
                        self._values.popitem(last=False)
            if value is not None:
                values[measure.name] = value
        return values

    def own(self, variant: Variant) -> dict[str, float]:
        """Everything a candidate measures of itself: the registered patch and text measures the
        run's objectives read, and the run's own."""
        return {**variant_measures(variant, self.read), **self(variant)}
