"""Stopping at the first failure, the tests that failed most recently first: real pytest runs,
cold and in a warm worker, whose reports still pass every check of a trusted report."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.warm import WarmPool
from gi.fitness.outcomes import FailureOrder
from gi.fitness.tests import TestRun, run_tests
from gi.model.program import Program

PROGRAM = "def double(x):\n    return 2 * x\n"
BROKEN = "def double(x):\n    return 2 + x\n"

TESTS = """\
from calc import double


def test_zero():
    assert double(0) == 0


def test_two():
    assert double(2) == 4


def test_three():
    assert double(3) == 6


def test_one():
    assert double(1) == 2
"""

ZERO, TWO, THREE, ONE = (f"tests/test_calc.py::test_{name}" for name in ("zero", "two", "three", "one"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "tests").mkdir(parents=True)
    (folder / "calc.py").write_text(PROGRAM)
    (folder / "tests" / "test_calc.py").write_text(TESTS)
    return folder


def run(project: Path, engine: str, source: str, order: tuple[str, ...], first_failure: bool) -> TestRun:
    if engine == "cold":
        with workspace(project, {"calc.py": source}) as space:
            return run_tests(["tests"], timeout=60, runner=Sandbox(Limits(), space), order=order,
                             first_failure=first_failure)  # fmt: skip
    pool = WarmPool(Program.load(project, ["calc.py"]), Limits(), 1)
    try:
        return pool.run_tests({"calc.py": source}, ["tests"], timeout=60, limits={}, default_limit=0, order=order,
                              first_failure=first_failure)  # fmt: skip
    finally:
        pool.close()


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_the_run_stops_at_the_first_failure_in_the_order_given(project: Path, engine: str) -> None:
    # double(x) = 2 + x passes for 2 only: test_zero, test_three and test_one fail.
    stopped = run(project, engine, BROKEN, (THREE, TWO), first_failure=True)
    assert not stopped.forged, stopped.forged
    assert stopped.outcomes == {THREE: "failed", TWO: "not_run", ZERO: "not_run", ONE: "not_run"}
    assert stopped.exit_status == 1 and set(stopped.durations) == {THREE}
    assert "test_three failed" in stopped.failure_report() and "3 test(s) not run" in stopped.failure_report()

    passing_first = run(project, engine, BROKEN, (TWO, ONE), first_failure=True)
    assert passing_first.outcomes == {TWO: "passed", ONE: "failed", ZERO: "not_run", THREE: "not_run"}
    assert not passing_first.forged


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_without_stopping_every_test_runs_in_the_order_given(project: Path, engine: str) -> None:
    whole = run(project, engine, BROKEN, (ONE,), first_failure=False)
    assert not whole.forged
    assert whole.outcomes == {ZERO: "failed", TWO: "passed", THREE: "failed", ONE: "failed"}
    assert next(iter(whole.durations)) == ONE, "the test the order names first ran first"
    passing = run(project, engine, PROGRAM, (THREE,), first_failure=True)
    assert set(passing.outcomes.values()) == {"passed"} and len(passing.outcomes) == 4


def test_the_order_puts_the_tests_that_failed_most_recently_first() -> None:
    order = FailureOrder()
    tests = [ZERO, TWO, THREE, ONE]
    assert order.order(tests) == (ZERO, TWO, THREE, ONE)
    order.note({ZERO: "passed", THREE: "failed", ONE: "not_run"})
    assert order.order(tests) == (THREE, ZERO, TWO, ONE)
    order.note({ONE: "timed_out"})
    order.note({TWO: "error", ZERO: "skipped"})
    assert order.order(tests) == (TWO, ONE, THREE, ZERO)
    order.note({THREE: "failed"})
    assert order.order(tests) == (THREE, TWO, ONE, ZERO)
    order.note({ZERO: "failed", ONE: "failed"})
    assert order.order(tests) == (ZERO, THREE, TWO, ONE), "only the first failure is known when runs stop there"
    assert order.order([ONE, ZERO]) == (ZERO, ONE), "tests no longer run are left out"
