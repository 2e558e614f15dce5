"""Feature dimensions of the quality-diversity grid: where a program falls, cell by cell.

A feature is a number taken of a variant: a registered measure (complexity, size, runtime,
diff_lines, ...: the evaluation's value when the run measured it, else gi's own from the source),
the kind of edit the patch mostly makes (`edit_kind`: statements, operators, expressions, fix
templates or code a model wrote; the original is `none`), or a user's function of the variant
named `module:function`. Each has a range cut into bins; a value outside it goes to the nearest
end bin. `GridSettings` is what a search needs to keep a grid: the features, the unit of
quality (the original's hypervolume) and the insertion rule.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from gi.fitness.measures import MEASURES
from gi.model.edits import Edit
from gi.model.patch import Variant
from gi.model.results import Evaluation
from gi.populations.grid import Cell, DominationInsertion, Insertion

#: The name of the categorical feature of edit kinds, and its categories in bin order.
EDIT_KIND = "edit_kind"
EDIT_KINDS = ("none", "statements", "operators", "expressions", "templates", "model")
#: Bins per feature when the config does not say.
DEFAULT_BINS = 8
#: The features map_elites uses when search.grid.features does not name any.
DEFAULT_FEATURES = ("complexity", "size")

FeatureValue = Callable[[Variant, Evaluation], "float | None"]


def edit_family(edit: Edit) -> str:
    """The kind of an edit: code a model wrote, or the module of the classic edit's class."""
    if not edit.recombines:
        return "model"
    family = type(edit).__module__.rpartition(".")[2]
    return family if family in EDIT_KINDS else "statements"


def edit_kind(patch_edits: Sequence[Edit]) -> int:
    """The bin of the kind most of the edits are (ties: the earlier in EDIT_KINDS); 0 for none."""
    if not patch_edits:
        return 0
    counts = collections.Counter(edit_family(edit) for edit in patch_edits)
    return max(range(1, len(EDIT_KINDS)), key=lambda index: (counts[EDIT_KINDS[index]], -index))


@dataclass(frozen=True)
class Feature:
    """One dimension: its name, range, bins and how it is taken of a variant (None: not taken)."""

    name: str
    low: float
    high: float
    bins: int
    value: FeatureValue
    #: The category of each bin, for a categorical feature (edit_kind).
    labels: tuple[str, ...] | None = None

    def bin(self, value: float) -> int:
        """The bin of `value`: its place in the range, the end bins taking what falls outside."""
        if self.labels is not None:
            return min(max(int(value), 0), self.bins - 1)
        share = (value - self.low) / (self.high - self.low)
        return min(max(math.floor(share * self.bins), 0), self.bins - 1)

    def edges(self) -> list[float]:
        """The bins' boundaries, low to high."""
        return [self.low + (self.high - self.low) * index / self.bins for index in range(self.bins + 1)]


@dataclass(frozen=True)
class Features:
    """The grid's dimensions, in order."""

    dimensions: tuple[Feature, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(feature.bins for feature in self.dimensions)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(feature.name for feature in self.dimensions)

    def values(self, variant: Variant, evaluation: Evaluation) -> tuple[float, ...] | None:
        """Each feature's value of a variant, or None when one is not taken (a broken variant)."""
        if not evaluation.ok:
            return None
        found = []
        for feature in self.dimensions:
            value = feature.value(variant, evaluation)
            if value is None or not math.isfinite(value):
                return None
            found.append(float(value))
        return tuple(found)

    def cell(self, values: Sequence[float] | None) -> Cell | None:
        if values is None:
            return None
        return tuple(feature.bin(value) for feature, value in zip(self.dimensions, values, strict=True))

    def describe(self) -> list[dict[str, object]]:
        """The dimensions as summary.json gives them."""
        return [
            {"name": f.name, "low": f.low, "high": f.high, "bins": f.bins, "labels": list(f.labels or [])}
            for f in self.dimensions
        ]


@dataclass(frozen=True)
class GridSettings:
    """What a search needs to keep a grid: its features, the hypervolume that counts as one (the
    original's) and who keeps a cell."""

    features: Features
    unit: float = 1.0
    insertion: Insertion = field(default_factory=DominationInsertion)


def measure_feature(name: str) -> FeatureValue:
    """A registered measure as a feature: the evaluation's value, else gi's own from the source."""
    measure = MEASURES.get(name)

    def value(variant: Variant, evaluation: Evaluation) -> float | None:
        if name in evaluation.measures:
            return float(evaluation.measures[name])
        if measure.static:
            return measure.take(variant)
        return None

    return value


def _of_variant(function: Callable[[Variant], float | None]) -> FeatureValue:
    """A user's function of the variant as a feature."""

    def value(variant: Variant, evaluation: Evaluation) -> float | None:
        return function(variant)

    return value


def kind_feature(variant: Variant, evaluation: Evaluation) -> float:
    """`edit_kind` of the edits that took effect."""
    return float(edit_kind([edit for edit, took in zip(variant.patch.edits, variant.effective, strict=True) if took]))


def default_range(name: str, original: Mapping[str, float], max_edits: int) -> tuple[float, float]:
    """A measure's range when the config gives none: patch size from 0 to the most edits a patch
    may have, runtime (a ratio to the original's) from 0 to 2, any other from 0 to twice the
    original's value (to 1 when the original's is 0)."""
    if name == "size":
        return 0.0, float(max_edits)
    if name == "runtime":
        return 0.0, 2.0
    value = float(original.get(name, 0.0))
    return (0.0, 2.0 * value) if value > 0 else (0.0, 1.0)


def build_features(
    names: Sequence[str],
    *,
    bins: int | Mapping[str, int],
    ranges: Mapping[str, tuple[float, float]],
    original: Mapping[str, float],
    max_edits: int,
    user: Mapping[str, Callable[[Variant], float | None]],
) -> Features:
    """The grid's features by name: `edit_kind`, a registered measure (its range from `ranges`,
    else `default_range` of the `original` measures), or a user's function from `user` (its
    range must be in `ranges`; ValueError otherwise)."""
    dimensions = []
    for name in names:
        count = bins.get(name, DEFAULT_BINS) if isinstance(bins, Mapping) else bins
        if name == EDIT_KIND:
            dimensions.append(Feature(name, 0.0, float(len(EDIT_KINDS)), len(EDIT_KINDS), kind_feature, EDIT_KINDS))
            continue
        if name in user:
            if name not in ranges:
                raise ValueError(f"{name} is a user's function: give its range in search.grid.ranges")
            low, high = ranges[name]
            dimensions.append(Feature(name, low, high, count, _of_variant(user[name])))
            continue
        low, high = ranges.get(name) or default_range(name, original, max_edits)
        dimensions.append(Feature(name, low, high, count, measure_feature(name)))
    return Features(tuple(dimensions))
