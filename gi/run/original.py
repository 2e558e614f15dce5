"""The original program's reference evaluation: what every variant of a run is compared with.

The original's training tests run on the cold path (the reference, whatever engine the search
uses); a test that hangs is limited and counts as failing rather than stopping the run. An
original gi cannot start from (its tests do not run, collect nothing, forge their report, or fail
under a constraint no variant could then meet) stops the run with one line naming why.
"""

from __future__ import annotations

import dataclasses

from gi.config import Config
from gi.engine.evaluation import Evaluator
from gi.engine.progress import Progress
from gi.fitness.objectives import Constraint
from gi.fitness.outcomes import TEST_SHARE, hung_limits, hung_tests, one_test_limit
from gi.fitness.pytest_diagnosis import cannot_run
from gi.fitness.tests import NOT_FAILING
from gi.model.errors import ProgramError
from gi.model.patch import Variant
from gi.model.results import Evaluation, Status


def reference_evaluation(config: Config, evaluator: Evaluator, progress: Progress, original: Variant) -> Evaluation:
    """The original's training tests on the cold path, checked to be a start gi can search from;
    its runtime is 1.0, the unit its variants are timed in."""
    engine = evaluator.settings.engine
    evaluator.settings = dataclasses.replace(evaluator.settings, engine="cold")
    evaluation = _run_with_hung_tests_limited(config, evaluator, progress, original)
    evaluator.settings = dataclasses.replace(evaluator.settings, engine=engine)
    if evaluation.status is Status.TAMPERED:
        raise ProgramError(
            f"{config.program_root}: gi cannot trust the original program's test report:"
            f" {evaluation.detail.strip().splitlines()[0]}"
        )
    if evaluation.status is not Status.OK or not evaluation.tests:
        _check_tests_run(config, evaluator, original)  # names why, as gi init does
    if evaluation.status is not Status.OK:
        raise ProgramError(
            f"{config.program_root}: the original program's training tests do not run"
            f" ({evaluation.status.value}; tests.timeout = {config.tests.timeout:g}):"
            f" {evaluation.detail.strip().splitlines()[-1] if evaluation.detail.strip() else ''}"
        )
    if not evaluation.tests:
        raise ProgramError(f"{config.source}: tests.train collects no test in {config.program_root}")
    failed = evaluation.measures.get("failed_tests", 0)
    if failed and config.objectives.constraint is Constraint.TRAIN_PASS:
        failing = [test for test, outcome in sorted(evaluation.tests.items()) if outcome not in NOT_FAILING]
        raise ProgramError(
            f"{config.source}: objectives.constraint = 'train_pass', but the original program fails"
            f" {failed:g} training test(s) ({', '.join(failing[:3])}{', ...' if len(failing) > 3 else ''}),"
            ' so no variant could be feasible; for a repair use constraint = "none"'
        )
    if "runtime" in evaluation.measures:
        evaluation = dataclasses.replace(evaluation, measures={**evaluation.measures, "runtime": 1.0})
    return evaluation


def limits_warning(config: Config, evaluator: Evaluator, progress: Progress) -> None:
    """One line when the configured limits contradict: a test may not take longer than
    TEST_SHARE of the whole run (so one that hangs cannot stop it)."""
    tests = config.tests
    if "test_timeout" in tests.model_fields_set and tests.test_timeout > one_test_limit(
        tests.test_timeout, tests.timeout
    ):
        progress.warn(
            f"{config.source}: tests.test_timeout = {tests.test_timeout:g} is more than {TEST_SHARE:.0%} of"
            f" tests.timeout = {tests.timeout:g}: each test gets at most {evaluator.settings.test_timeout:g} s"
        )


def _run_with_hung_tests_limited(
    config: Config, evaluator: Evaluator, progress: Progress, original: Variant
) -> Evaluation:
    """The original's training tests. A run the limit on the whole run (tests.timeout) cut
    off is run again with the tests it hung in limited (`hung_limits`: together at most
    TEST_SHARE of the whole run), until it finishes or hangs in no new test: a test that
    loops forever counts as failing (a repair may fix it), it does not stop the run."""
    limits_warning(config, evaluator, progress)
    evaluation = evaluator.evaluate(original)
    hung: set[str] = set()
    while evaluation.status is Status.TIMED_OUT and (new := hung_tests(evaluation.tests) - hung):
        hung |= new
        evaluator.test_limits = hung_limits(hung, config.tests.timeout)
        evaluation = evaluator.evaluate(original)
    evaluator.test_limits = {}
    hung |= hung_tests(evaluation.tests)
    if evaluation.ok and hung:
        progress.warn(
            f"the original ran past its time limit in {len(hung)} training test(s) ({', '.join(sorted(hung)[:3])}"
            f"{', ...' if len(hung) > 3 else ''}): they count as failing"
        )
    return evaluation


def _check_tests_run(config: Config, evaluator: Evaluator, original: Variant) -> None:
    """The original's training tests must run: else one line naming why and the fix, as `gi
    init` gives it."""
    run = evaluator.training_run(original)
    problem = cannot_run(run, config.tests.train, str(config.python_path()), config.tests.timeout)
    if problem is not None:
        raise ProgramError(f"{config.source}: the original's training tests cannot run: {problem}")
