"""The measures: tests (pytest), complexity (radon), style (pycodestyle), size, and objectives."""

from fitness.objectives import OBJECTIVES, Constraint, Direction, Objective, reference_point, violation
from fitness.outcomes import count_failed
from fitness.tests import TestRun, run_tests

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
