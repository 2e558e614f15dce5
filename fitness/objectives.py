"""Objectives: named numbers with a direction, computed from an evaluation's raw measures.

Direction is settled here and only here: DEAP weights are -1.0 for minimise and +1.0 for
maximise, and `minimised` turns any value into the "smaller is better" form used for
hypervolume and reference points.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gi.model.registry import Registry


class Direction(enum.StrEnum):
    MINIMIZE = "minimize"
    MAXIMIZE = "maximize"


@dataclass(frozen=True)
class Objective:
    """One objective: its name, direction, the measure it reads, and what it means."""

    name: str
    direction: Direction
    description: str

    @property
    def weight(self) -> float:
        """DEAP's weight: negative to minimise, positive to maximise."""
        return -1.0 if self.direction is Direction.MINIMIZE else 1.0

    def minimised(self, value: float) -> float:
        """The value in "smaller is better" form."""
        return value if self.direction is Direction.MINIMIZE else -value

    def from_minimised(self, value: float) -> float:
        return value if self.direction is Direction.MINIMIZE else -value


OBJECTIVES: Registry[Objective] = Registry("objective")
for _objective in (
    Objective("failed_tests", Direction.MINIMIZE, "training tests that do not pass"),
    Objective("passed_tests", Direction.MAXIMIZE, "training tests that pass"),
    Objective("complexity", Direction.MINIMIZE, "total cyclomatic complexity of the edited files (radon)"),
    Objective("maintainability", Direction.MAXIMIZE, "mean maintainability index of the edited files (radon)"),
    Objective("halstead_volume", Direction.MINIMIZE, "total Halstead volume of the edited files (radon)"),
    Objective("style", Direction.MINIMIZE, "PEP 8 violations in the edited files (pycodestyle)"),
    Objective("size", Direction.MINIMIZE, "edits of the patch that take effect"),
    Objective("diff_lines", Direction.MINIMIZE, "lines the patch adds or removes"),
    Objective("runtime", Direction.MINIMIZE, "workload time over the original's, measured with pyperf"),
):
    OBJECTIVES.add(_objective.name, _objective)


class Constraint(enum.StrEnum):
    """What makes a variant feasible. Infeasible variants lose to feasible ones (Deb's rule)."""

    TRAIN_PASS = "train_pass"  # every training test passes
    NONE = "none"  # any variant that runs; for repair, where the original fails tests


def violation(constraint: Constraint, measures: Mapping[str, float], *, ok: bool, test_count: int) -> float:
    """How far a variant is from feasible (0 when feasible); a broken variant is worst of all."""
    if not ok:
        return float(test_count + 1)
    # A workload that fails, or returns other than the original did, breaks the behaviour.
    broken_workload = measures.get("workload_failed", 0.0) + measures.get("output_differs", 0.0)
    if constraint is Constraint.TRAIN_PASS:
        return float(measures.get("failed_tests", test_count + 1)) + broken_workload
    return broken_workload


def reference_point(
    objectives: Sequence[Objective], baseline: Mapping[str, float], *, test_count: int, max_edits: int
) -> tuple[float, ...]:
    """A point, in minimised form, worse than any variant worth keeping; taken from the baseline.

    Bounded measures use their worst value plus one; unbounded ones the baseline plus 10%
    and one, so that a variant no better than the original adds no hypervolume there.
    """
    bounded = {
        "failed_tests": float(test_count + 1),
        "passed_tests": 1.0,  # minimised: -passed, worst -0
        "maintainability": 1.0,  # minimised: -MI, worst -0
        "size": float(max_edits + 1),
        "diff_lines": float(max(1.0, baseline.get("source_lines", 0.0)) * 2 + 1),
    }
    point = []
    for objective in objectives:
        if objective.name in bounded:
            point.append(bounded[objective.name])
        else:
            base = objective.minimised(baseline[objective.name])
            point.append(base + abs(base) * 0.1 + 1.0)
    return tuple(point)


def objective_values(
    objectives: Sequence[Objective], measures: Mapping[str, float], worst: Sequence[float]
) -> tuple[float, ...]:
    """The objective vector of a variant; a measure not taken (a variant that failed the tests
    is not timed) counts as the worst value, given in each objective's own direction."""
    return tuple(
        float(measures[objective.name]) if objective.name in measures else bad
        for objective, bad in zip(objectives, worst, strict=True)
    )
