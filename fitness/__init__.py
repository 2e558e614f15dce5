"""The measures: tests (pytest), complexity (radon), style (pycodestyle), size, and objectives."""

from gi.fitness.objectives import OBJECTIVES, Constraint, Direction, Objective, reference_point, violation
from gi.fitness.outcomes import count_failed
from gi.fitness.tests import TestRun, run_tests

__all__ = [
    "OBJECTIVES",
    "Constraint",
    "Direction",
    "Objective",
    "TestRun",
    "count_failed",
    "reference_point",
    "run_tests",
    "violation",
]
