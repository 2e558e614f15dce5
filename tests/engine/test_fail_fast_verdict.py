"""tests.fail_fast's verdict through the real evaluator: the same score, status and detail
whether the run stops at the first failure or goes on, and crashes, after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status

PROGRAM = "def double(x):\n    return 2 * x\n"

TESTS = """\
import os

from calc import double


def test_one():
    assert double(1) == 2


def test_two_or_the_process_dies():
    if double(2) != 4:
        os._exit(3)  # the suite itself crashes on this bug


def test_three():
    assert double(3) == 6
"""

ONE, TWO, THREE = (f"tests/test_calc.py::test_{name}" for name in ("one", "two_or_the_process_dies", "three"))


@pytest.fixture
def program(tmp_path: Path) -> Program:
    (tmp_path / "tests").mkdir()
    (tmp_path / "calc.py").write_text(PROGRAM)
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    return Program.load(tmp_path, ["calc.py"], protected=["tests"])


def evaluate(program: Program, source: str, order: tuple[str, ...], *, stop: bool, engine: str) -> Evaluation:
    settings = EvaluationSettings(train=("tests",), timeout=60, engine=engine, fail_fast=True, first_failure=stop)
    evaluator = Evaluator(program, settings)
    try:
        baseline = evaluator.evaluate(apply(program, Patch()))
        assert baseline.ok and baseline.measures["failed_tests"] == 0
        evaluator.baseline_tests = baseline.tests
        evaluator.test_order = order
        sources = {**program.sources, "calc.py": source}
        return evaluator.evaluate_sources(sources)
    finally:
        evaluator.close()


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_a_crash_after_the_first_failure_does_not_change_the_verdict(program: Program, engine: str) -> None:
    broken = "def double(x):\n    return 3 * x\n"  # fails test_one, crashes test_two, fails test_three
    stopped = evaluate(program, broken, (), stop=True, engine=engine)
    went_on = evaluate(program, broken, (), stop=False, engine=engine)
    assert stopped.tests == {ONE: "failed", TWO: "not_run", THREE: "not_run"}
    assert went_on.tests == {ONE: "failed", TWO: "error", THREE: "not_run"}, "the process died in test two"
    for evaluation in (stopped, went_on):
        assert evaluation.status is Status.OK
        assert evaluation.measures["failed_tests"] == 1.0 and "passed_tests" not in evaluation.measures
        assert evaluation.detail.startswith(f"{ONE} failed") and TWO not in evaluation.detail
    assert stopped.detail == went_on.detail


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_a_crash_in_the_first_failing_test_stands(program: Program, engine: str) -> None:
    broken = "def double(x):\n    return 3 * x\n"
    for stop in (True, False):
        crashed = evaluate(program, broken, (TWO, ONE), stop=stop, engine=engine)
        assert crashed.status is Status.CRASHED, (stop, crashed.status, crashed.tests)
        assert crashed.measures["failed_tests"] == 1.0
        assert next(iter(crashed.tests)) == TWO


def test_without_fail_fast_every_failure_counts(program: Program) -> None:
    settings = EvaluationSettings(train=("tests",), timeout=60, engine="cold")
    evaluator = Evaluator(program, settings)
    evaluator.baseline_tests = evaluator.evaluate(apply(program, Patch())).tests
    wrong = evaluator.evaluate_sources({"calc.py": "def double(x):\n    return 2 * x + (x == 3)\n"})
    assert wrong.status is Status.OK and wrong.measures["failed_tests"] == 1.0 and wrong.measures["passed_tests"] == 2
    both = evaluator.evaluate_sources({"calc.py": "def double(x):\n    return 2 * x + (x != 2)\n"})
    assert both.measures["failed_tests"] == 2.0 and both.tests[TWO] == "passed"
