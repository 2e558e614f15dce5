"""What test outcomes say, against the original's: failures counted, regressions, overfitting;
the order a run that stops at the first failure gives the tests; each test's time limit from the
original's durations (the runs themselves: gi.fitness.tests)."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

from gi.fitness.tests import NOT_FAILING, TestRun

#: A test's limit in a variant's run is this many times its time in the original's, plus the
#: margin (seconds), so that one test that hangs fails alone and the others still count.
TEST_TIME_FACTOR = 10.0
TEST_TIME_MARGIN = 0.5


def failed_tests(outcomes: Mapping[str, str], baseline: Mapping[str, str] | None = None) -> int:
    """Tests that fail: every outcome but NOT_FAILING, and the tests the baseline knows that are
    missing here. A test the baseline skips (or expects to fail) does not count while it still
    does not run."""
    known = dict.fromkeys(baseline or {}, "missing")
    known.update(outcomes)
    failed = 0
    for test, outcome in known.items():
        if outcome == "passed":
            continue
        expected_not_to_pass = baseline is None or baseline.get(test) in ("skipped", "xfailed")
        if outcome in ("skipped", "xfailed", "missing") and expected_not_to_pass:
            continue
        failed += 1
    return failed


def count_failed(run: TestRun, baseline: Mapping[str, str] | None = None) -> int:
    """`failed_tests` of a run; when nothing was collected at all, at least one failure counts."""
    if not run.outcomes and not baseline:
        return max(1, len(run.collect_errors))  # nothing ran at all: never a perfect score
    return failed_tests(run.outcomes, baseline)


def regressions(outcomes: Mapping[str, str], baseline: Mapping[str, str]) -> list[str]:
    """The tests the baseline passes that do not pass here (missing ones included)."""
    return sorted(test for test, outcome in baseline.items() if outcome == "passed" and outcomes.get(test) != "passed")


def overfits(
    training: Mapping[str, str],
    training_baseline: Mapping[str, str],
    holdout: Mapping[str, str],
    holdout_baseline: Mapping[str, str],
) -> bool:
    """The one definition of overfitting gi uses.

    A member overfits when it keeps every training test the original passes and fails a
    held-out test the original passes. When the original fails training tests (a repair), a
    member overfits when it passes every training test and fails any held-out test. The
    original itself never overfits.
    """
    if failed_tests(training_baseline) > 0:  # a repair
        return failed_tests(training, training_baseline) == 0 and failed_tests(holdout, holdout_baseline) > 0
    return not regressions(training, training_baseline) and bool(regressions(holdout, holdout_baseline))


def test_counts(outcomes: Mapping[str, str]) -> dict[str, int]:
    """Passed, failed (every outcome but NOT_FAILING) and skipped (skipped or xfailed) tests."""
    passed = sum(outcome == "passed" for outcome in outcomes.values())
    failed = sum(outcome not in NOT_FAILING for outcome in outcomes.values())
    return {"passed": passed, "failed": failed, "skipped": len(outcomes) - passed - failed}


def merge_retry(first: TestRun, retry: TestRun) -> TestRun:
    """`first`, with each test that timed out there taking its outcome from `retry`: a timeout
    counts only when it happens twice."""
    outcomes = dict(first.outcomes)
    for test, outcome in first.outcomes.items():
        if outcome == "timed_out" and test in retry.outcomes:
            outcomes[test] = retry.outcomes[test]
    return dataclasses.replace(first, outcomes=outcomes)


def first_failing(outcomes: Mapping[str, str]) -> str | None:
    """The first test that failed, in the order the tests ran (a run's outcomes are in that
    order: those that finished, then those cut off, then those never reached), or None."""
    return next((test for test, outcome in outcomes.items() if outcome not in (*NOT_FAILING, "not_run")), None)


class FailureOrder:
    """The training tests, those that failed most recently first: the order a run that stops at
    the first failure (tests.fail_fast) gives pytest, so a failing variant is found out early.

    It is fed every new evaluation in the order the run stores them, so a resumed run that
    replays its stored evaluations into a new `FailureOrder` has the same order. Only the time
    an evaluation takes depends on it: with fail_fast, a failing variant scores the same
    whichever test failed first.
    """

    def __init__(self) -> None:
        self._recent: dict[str, None] = {}  # most recent last

    def note(self, outcomes: Mapping[str, str]) -> None:
        """Move the test that failed first in one evaluation to the front: the one test a run
        that stops at the first failure knows of, and so the same whether it stopped or not."""
        test = first_failing(outcomes)
        if test is not None:
            self._recent.pop(test, None)
            self._recent[test] = None

    def order(self, tests: Sequence[str]) -> tuple[str, ...]:
        """`tests`, those that failed most recently first, the rest in their own order."""
        known = set(tests)
        first = [test for test in reversed(self._recent) if test in known]
        chosen = set(first)
        return (*first, *(test for test in tests if test not in chosen))


#: The most of the whole run's time limit (tests.timeout) one test may take, so that a test
#: that hangs is cut off alone, as failing, and the run goes on to the others.
TEST_SHARE = 0.5


def one_test_limit(test_timeout: float, timeout: float) -> float:
    """The limit of one test: `test_timeout`, but never more than TEST_SHARE of the whole run's."""
    return min(test_timeout, TEST_SHARE * timeout)


def hung_tests(outcomes: Mapping[str, str]) -> set[str]:
    """The tests that ran out of time in a run (their own limit, or the whole run's)."""
    return {test for test, outcome in outcomes.items() if outcome == "timed_out"}


def hung_limits(hung: Collection[str], timeout: float) -> dict[str, float]:
    """The limit of each test that hung in the original's run: together they take at most
    TEST_SHARE of the whole run's limit, so they cannot stop a run of the others."""
    return {test: TEST_SHARE * timeout / len(hung) for test in hung}


def per_test_limits(durations: Mapping[str, float], cap: float) -> dict[str, float]:
    """Each test's time limit in a variant's run: TEST_TIME_FACTOR times what it took in the
    original's, plus TEST_TIME_MARGIN, at most `cap`."""
    return {test: min(cap, TEST_TIME_FACTOR * seconds + TEST_TIME_MARGIN) for test, seconds in durations.items()}
