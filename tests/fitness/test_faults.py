"""Suspiciousness formulas on a spectrum worked by hand: two failing tests, three passing."""

from __future__ import annotations

import math

import pytest

from gi.fitness.faults import DSTAR_PERFECT, LineCoverage, suspiciousness

OUTCOMES = {"f1": "failed", "f2": "error", "p1": "passed", "p2": "passed", "p3": "passed", "s": "skipped"}
COVERAGE: LineCoverage = {
    "m.py": {
        1: {"f1", "f2", "p1", "p2", "p3", ""},  # everything runs it: the import, say
        2: {"f1", "f2"},  # only the failing tests: the bug's line
        3: {"f1", "p1"},  # one failing test and one passing test
        4: {"p1", "p2", "s"},  # no failing test: not suspicious at all
    }
}


def test_ochiai_is_failed_over_the_root_of_failing_times_all_that_run_the_line() -> None:
    scores = suspiciousness(COVERAGE, OUTCOMES, "ochiai")
    assert scores == pytest.approx({("m.py", 1): 2 / math.sqrt(2 * 5), ("m.py", 2): 1.0, ("m.py", 3): 1 / 2})


def test_dstar_squares_the_failing_and_divides_by_the_evidence_against() -> None:
    scores = suspiciousness(COVERAGE, OUTCOMES, "dstar")
    # Line 1: 2² / (3 passing + 0 failing tests that miss it); line 3: 1² / (1 + 1).
    assert scores[("m.py", 1)] == pytest.approx(4 / 3)
    assert scores[("m.py", 3)] == pytest.approx(1 / 2)
    # Nothing speaks against line 2: its zero denominator counts as DSTAR_PERFECT.
    assert scores[("m.py", 2)] == pytest.approx(4 / DSTAR_PERFECT)
    assert ("m.py", 4) not in scores


def test_dstar_sets_the_bugs_line_further_apart_than_ochiai_does() -> None:
    """What the rings use it for: the share of the lines' weight the bug's line gets."""
    shares = {}
    for formula in ("ochiai", "dstar"):
        scores = suspiciousness(COVERAGE, OUTCOMES, formula)
        shares[formula] = scores[("m.py", 2)] / sum(scores.values())
    assert shares["ochiai"] == pytest.approx(1 / (1 + 2 / math.sqrt(10) + 1 / 2))  # under a half
    assert shares["dstar"] == pytest.approx(8 / (8 + 4 / 3 + 1 / 2))  # over four fifths


def test_no_failing_test_no_suspicion() -> None:
    assert suspiciousness(COVERAGE, {"f1": "passed", "f2": "passed"}, "dstar") == {}
