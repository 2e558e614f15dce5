"""What an evaluator is told: the tests, their limits, the sandbox's limits, the workload and
its timing settings, and how the project's tests run (gi.engine.evaluation)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gi.engine.sandbox.limits import Limits
from gi.fitness.runtime import (
    RIGOROUS,
    SCREENING,
    TimingSettings,
    Workload,
)
from gi.fitness.tests import DEFAULT_SETUP, PytestSetup


@dataclass(frozen=True)
class EvaluationSettings:
    train: tuple[str, ...]
    holdout: tuple[str, ...] = ()
    #: Test ids split off the training paths (tests.holdout_fraction) within their files: held
    #: out, and out of the training copies' files (`training_files`).
    holdout_ids: tuple[str, ...] = ()
    #: Files written into every training copy over the project's (relative path, text): the
    #: test files that hold `holdout_ids`, without those tests.
    training_files: tuple[tuple[str, str], ...] = ()
    #: Files gi writes into held-out copies only (relative path, text): the differential checks,
    #: a suite `gi validate` brings; their paths are in `holdout`.
    holdout_files: tuple[tuple[str, str], ...] = ()
    #: Seconds for one whole test run (the backstop), and for one test in the original's run
    #: (a variant's test gets gi.fitness.outcomes.per_test_limits of the original's times, at most this).
    timeout: float = 60.0
    test_timeout: float = 10.0
    limits: Limits = field(default_factory=Limits)
    workers: int = 1
    #: evaluation.spare_pages: whether warm workers' spare children copy ahead the memory a test
    #: run writes (None: where the workers leave a core free, `spare_pages`).
    spare_pages: bool | None = None
    workload: Workload | None = None
    check_output: bool = True
    #: Time variants that fail training tests too (repair runs); else only passing ones.
    time_failing: bool = False
    workload_timeout: float = 120.0
    screening: TimingSettings = SCREENING
    rigorous: TimingSettings = RIGOROUS
    #: Folders never copied into a workspace (absolute): the run folder and the reply cache,
    #: when they lie inside the project.
    exclude: tuple[Path, ...] = ()
    #: Text that must never reach a report or a prompt (the API key, say).
    secrets: tuple[str, ...] = ()
    #: "warm": training tests in warm workers (gi.engine.warm); "cold": a fresh copy and process each.
    engine: str = "cold"
    #: "warm": held-out tests in warm workers of their own, once their run of the original
    #: agreed with the cold one (gi.engine.held_out.HeldOut.check_warm); "cold": a fresh copy each.
    holdout_engine: str = "cold"
    #: Third-party modules the warm workers import once.
    preload: tuple[str, ...] = ()
    #: tests.fail_fast: a variant failing any training test scores as failing one (how many is
    #: not measured), so its run may stop at the first failure.
    fail_fast: bool = False
    #: Stop each variant's training tests at the first failure, the tests that failed most
    #: recently first (fail_fast with evaluation.shortcuts); the score is the same without.
    first_failure: bool = False
    #: tests.select = "coverage": a variant's training run in the search takes only the tests
    #: that can see its edits (`gi.engine.suite_runs.SuiteRuns.selection`), once the original's
    #: coverage is known.
    select: bool = False
    #: How the project's tests run: its interpreter, what gi adds to its pytest settings, the
    #: copy's import roots (gi.engine.project).
    pytest: PytestSetup = DEFAULT_SETUP
    #: The static measures taken of each variant (`gi.fitness.objectives.measures_read` of the
    #: run's objectives); None: every registered one.
    measures: frozenset[str] | None = None
