"""The test runs an evaluator makes: each variant's training tests (cold, in a scratch copy, or in
a warm worker), in the order and with the stop that tests.fail_fast and the original's coverage
give them; the canaries and the front's second run; the held-out tests, the differential checks'
cases and the original's coverage runs.

`SuiteRuns` is the base class of `gi.engine.evaluation.Evaluator`: `WorkloadRuns` adds the
workload's runs, `Evaluator` the scoring of a variant from both.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.sandbox.bubblewrap import Isolation, bytecode_of_its_source, isolation, loadable_files
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.verdict import CanaryTests, SecondRun, second_run
from gi.engine.warm import WarmPool
from gi.fitness.faults import LineCoverage, covered_test_run, suspiciousness
from gi.fitness.oracle.record import record_calls
from gi.fitness.selection import Coverage, EditedLines, first_tests
from gi.fitness.tests import NO_CHECKS, Checks, TestRun, run_tests
from gi.model.patch import Variant
from gi.model.program import Program


def _retried(run: Callable[[], TestRun]) -> TestRun:
    """A test run; one cut off by the limit on the whole run is tried once more (a loaded
    machine, not the variant, may be why)."""
    first = run()
    return run() if first.timed_out else first


class SuiteRuns:
    """Runs the project's tests on variants of one program; remembers what the original's runs
    said (its outcomes, durations, coverage and canaries)."""

    def __init__(self, program: Program, settings: EvaluationSettings, scratch: Path | None = None) -> None:
        self.program = program
        self.settings = settings
        self.scratch = scratch
        self.baseline_tests: Mapping[str, str] | None = None
        #: Each training test's time limit, from the original's durations (set with the baseline).
        self.test_limits: Mapping[str, float] = {}
        #: The order a run stopping at the first failure gives the training tests (set by the
        #: engine each generation, from `gi.fitness.outcomes.FailureOrder`).
        self.test_order: tuple[str, ...] = ()
        #: The original's coverage by the training tests (set by the engine): a variant's tests
        #: that execute an edited line run first when its run may stop at the first failure.
        self.coverage: Coverage | None = None
        self._edited: EditedLines | None = None
        self._warm: WarmPool | None = None
        #: The held-out tests' warm workers (`holdout_engine`), in copies that hold them.
        self._warm_holdout: WarmPool | None = None
        self._warm_lock = threading.Lock()
        #: The training tests whose canaries fail on the original (`learn_canaries`), and the
        #: types the original returns to the tests (for the front's second run).
        self.canaries = CanaryTests(editable=tuple(program.files))
        self.original_types: dict[str, str] = {}
        #: Set on a worker whose host judged each variant's code before sending its sources.
        self.judged = False
        #: Told how many tests of a cold run have finished, as they finish (the run's start shows it).
        self.on_test: Callable[[int], None] | None = None
        self._canary_lock = threading.Lock()
        #: The recorder's findings on the original, by the inputs listed for it (see `record_calls`).
        self._recorded: dict[str, dict[str, Any]] = {}

    @property
    def isolation(self) -> Isolation:
        """Whether commands get bubblewrap's isolation, or process limits only."""
        return isolation(self.settings.limits)

    @contextmanager
    def _sandbox(
        self, variant: Variant, *, holdout: bool = False, tests: bool = True, files: Mapping[str, str] | None = None
    ) -> Iterator[Sandbox]:
        """A fresh workspace for the variant, and a sandbox to run commands in it.

        During the search (holdout=False) the held-out tests are not in the copy, so no
        variant can read what it will be judged on at the end. A copy for test runs (`tests`)
        is writable, so tests may write beside themselves; one for the workload is read-only,
        and never one a test run used: a module planted beside the code (a `pyperf.py` that
        times with a clock of its own, a cache of answers) would be imported by the timing.
        `files` (relative path -> text) are written into the copy too.
        """
        hidden = self.settings.exclude if holdout else self._training_exclude()
        extra = self.settings.holdout_files if holdout else self.settings.training_files
        sources = {**variant.sources, **dict(extra)}
        sources.update(files or {})
        with workspace(self.program.root, sources, parent=self.scratch, exclude=hidden,
                       encodings=self.program.encodings) as space:  # fmt: skip
            yield Sandbox(dataclasses.replace(self.settings.limits, writable_program=tests), space)

    def oracle_copy(self, variant: Variant) -> AbstractContextManager[Sandbox]:
        """A fresh read-only copy of the variant without the held-out tests, and a sandbox to run
        the behaviour oracle's worker in (gi.engine.oracle)."""
        return self._sandbox(variant, tests=False)

    def test_file(self, variant: Variant, path: str, text: str) -> TestRun:
        """One test file of gi's (a counterexample) at `path` in a fresh copy of the variant, run
        with the plugin's signed report, each test under the default per-test limit."""
        with self._sandbox(variant, files={path: text}) as sandbox:
            return self._run_tests(sandbox, [path], {})

    def redact(self, text: str) -> str:
        """`text` without the secrets gi knows of, for everything that is stored or sent."""
        for secret in self.settings.secrets:
            if secret:
                text = text.replace(secret, "[redacted]")
        return text

    def _run_tests(
        self,
        sandbox: Sandbox,
        paths: Sequence[str],
        limits: Mapping[str, float],
        *,
        training: bool = False,
        variant: Variant | None = None,
        checks: Checks = NO_CHECKS,
        selected: frozenset[str] | None = None,
    ) -> TestRun:
        """One cold test run, each test under its own limit (see `_retried`); a variant's training
        run stops at its first failure when the settings say so, and runs only the `selected`
        tests when given; the plugin makes the `checks`."""
        order, first_failure = self._stop_plan(variant) if training else ((), False)
        before = loadable_files(sandbox.workdir)
        run = _retried(lambda: run_tests(paths, timeout=self.settings.timeout, runner=sandbox, limits=limits,
                                         setup=self.settings.pytest, default_limit=self.settings.test_timeout,
                                         order=order, first_failure=first_failure, checks=checks,
                                         selected=self._in_order(selected), on_test=self.on_test))  # fmt: skip
        added = loadable_files(sandbox.workdir) - before
        planted = sorted(file for file in added if not bytecode_of_its_source(sandbox.workdir, file))
        if planted and not run.forged:  # the copy was writable: what pytest would load must be the project's
            run = dataclasses.replace(run, forged=f"the test run added {', '.join(planted[:3])} to the project's copy")
        return run

    def written_by_model(self, variant: Variant) -> bool:
        """Whether a language model wrote some of the variant's code (an edit that does not only
        recombine the original's); on a worker, which gets no patch, whether the host said so."""
        if not variant.patch.edits:
            return self.judged and self.canaries.learned
        return not all(edit.recombines for edit in variant.patch.edits)

    def _checks(self, variant: Variant | None) -> Checks:
        """The canaries of a variant's training run: only for code a model wrote (the classic
        operators' recombinations forge nothing), learned on the original the first time."""
        if variant is None or self.baseline_tests is None or not self.written_by_model(variant):
            return NO_CHECKS
        self.learn_canaries()
        return self.canaries.checks()

    def learn_canaries(self) -> None:
        """Clone every training test on the original, once: those whose clones fail can be
        canaries. The same run notes the types the original returns to the tests."""
        with self._canary_lock:
            if self.canaries.learned:
                return
            from gi.model.patch import Patch, apply

            with self._sandbox(apply(self.program, Patch())) as sandbox:
                run = self._run_tests(sandbox, self.settings.train, {}, checks=self.canaries.learning())
            self.original_types = dict(run.returned)
            self.canaries.learn(run)

    def second_run(self, variant: Variant, searched: Mapping[str, str]) -> SecondRun:
        """A front member's second run (gi.engine.verdict.second_run), cold, one test file a process."""
        by_file: dict[str, list[str]] = {}
        for test in searched:
            by_file.setdefault(test.split("::")[0], []).append(test)

        def run(paths: Sequence[str], checks: Checks) -> TestRun:
            with self._sandbox(variant) as sandbox:
                return self._run_tests(sandbox, by_file[paths[0]], self.test_limits, checks=checks)

        return second_run(searched, run, sorted(by_file), self.canaries, self.original_types)

    def _stop_plan(self, variant: Variant | None) -> tuple[tuple[str, ...], bool]:
        """The training tests' order (tests.fail_fast) and whether to stop at the first failure
        (and the shortcuts). The tests that execute a line the variant edits come first (the
        original's coverage), then the rest; each group those that failed most recently first.
        The original's run (no baseline yet) runs as collected, to the end: its outcomes and
        durations are the reference."""
        if not self.settings.fail_fast or self.baseline_tests is None:
            return (), False
        order = self.test_order or tuple(self.baseline_tests)
        if self.coverage is not None and variant is not None and variant.patch.edits:
            lines = self.edited_lines(variant)
            order = first_tests(None if lines is None else self.coverage.tests_for(lines), order)
        return order, self.settings.first_failure

    def training_order(self, variant: Variant) -> tuple[str, ...]:
        """The order a variant's training tests run in (`_stop_plan`), for a backend whose
        workers get the variant's sources but not its patch, so cannot tell its edited lines."""
        return self._stop_plan(variant)[0]

    def selection(self, variant: Variant) -> frozenset[str] | None:
        """The training tests that judge the variant in the search with tests.select = "coverage"
        (`gi.fitness.selection.Coverage.selected`: those that can see its edits); None when every
        test runs: selection is off, the original's coverage is unknown, an edit changes what
        runs at import, or every test can see the edits."""
        baseline = self.baseline_tests
        if not self.settings.select or self.coverage is None or baseline is None or not variant.patch.edits:
            return None
        lines = self.edited_lines(variant)
        selected = None if lines is None else self.coverage.selected(lines, baseline)
        return None if selected is None or len(selected) == len(baseline) else selected

    def _in_order(self, selected: frozenset[str] | None) -> tuple[str, ...] | None:
        """The `selected` training tests in the original's order (what pytest is given to collect)."""
        if selected is None:
            return None
        return tuple(test for test in self.baseline_tests or () if test in selected)

    def edited_lines(self, variant: Variant) -> list[tuple[str, int]] | None:
        """The lines of the original that the variant's edits change (`gi.fitness.selection.EditedLines`)."""
        if self._edited is None:
            self._edited = EditedLines(self.program)
        return self._edited.of(variant.patch)

    def _training_exclude(self) -> tuple[Path, ...]:
        """What never enters a training workspace: the run folder, the reply cache, and the
        held-out tests, so no variant can read what it will be judged on at the end."""
        return self.settings.exclude + tuple(self.program.root / path.split("::")[0] for path in self.settings.holdout)

    def _new_pool(self, exclude: Sequence[Path], files: Mapping[str, str]) -> WarmPool:
        """Warm workers for this program as the settings say, in copies without `exclude` and
        with `files` written over the project's."""
        settings = self.settings
        return WarmPool(self.program, settings.limits, settings.workers, preload=settings.preload, exclude=exclude,
                        scratch=self.scratch, setup=settings.pytest, files=files,
                        spare_pages=settings.spare_pages)  # fmt: skip

    def _warm_pool(self) -> WarmPool:
        with self._warm_lock:
            if self._warm is None:
                self._warm = self._new_pool(self._training_exclude(), dict(self.settings.training_files))
            return self._warm

    def warm_training(
        self, variant: Variant, selected: frozenset[str] | None = None, checks: Checks = NO_CHECKS
    ) -> TestRun:
        """The training tests on a variant in a warm worker (the engine's fast path): only the
        `selected` ones when given."""
        warm, settings, limits = self._warm_pool(), self.settings, self.test_limits
        order, first_failure = self._stop_plan(variant)
        return _retried(lambda: warm.run_tests(variant.sources, settings.train, timeout=settings.timeout,
                                               limits=limits, default_limit=settings.test_timeout, order=order,
                                               first_failure=first_failure, checks=checks,
                                               selected=self._in_order(selected)))  # fmt: skip

    @property
    def warm_started(self) -> int:
        """The warm worker processes this evaluator started, replacements included."""
        pool = self._warm
        return pool.started if pool else 0

    def _holdout_pool(self) -> WarmPool:
        """The held-out tests' warm workers: in copies of the project without the run folder and the
        reply cache only, so they hold the held-out tests (and the files gi adds to them); started
        again when those files change (tests added during the run)."""
        files = dict(self.settings.holdout_files)
        with self._warm_lock:
            if self._warm_holdout is not None and self._warm_holdout.files != files:
                self._warm_holdout.close()
                self._warm_holdout = None
            if self._warm_holdout is None:
                self._warm_holdout = self._new_pool(self.settings.exclude, files)
            return self._warm_holdout

    def warm_holdout(self, variant: Variant, limits: Mapping[str, float] | None = None) -> TestRun:
        """The held-out tests on a variant in a warm worker of their own (`holdout` runs them so
        once `settings.holdout_engine` is "warm")."""
        warm, settings = self._holdout_pool(), self.settings
        paths = (*settings.holdout, *settings.holdout_ids)
        return _retried(lambda: warm.run_tests(variant.sources, paths, timeout=settings.timeout, limits=limits or {},
                                               default_limit=settings.test_timeout))  # fmt: skip

    @property
    def warm_holdout_started(self) -> int:
        """The held-out tests' warm worker processes this evaluator started, replacements included."""
        pool = self._warm_holdout
        return pool.started if pool else 0

    def close_holdout(self) -> None:
        """Stop the held-out tests' warm workers, if any."""
        with self._warm_lock:
            pool, self._warm_holdout = self._warm_holdout, None
        if pool is not None:
            pool.close()

    def close(self) -> None:
        """Stop the warm workers, if any."""
        self.close_holdout()
        with self._warm_lock:
            pool, self._warm = self._warm, None
        if pool is not None:
            pool.close()

    def training_run(self, variant: Variant) -> TestRun:
        """The training tests on a variant, cold, in a sandboxed copy without the held-out tests,
        each test under its limit (before a baseline is set, as for the original: `test_timeout`
        each, run to the end); the whole report, collection errors and exit status included,
        for `gi init`'s check of a project's tests."""
        with self._sandbox(variant) as sandbox:
            return self._run_tests(sandbox, self.settings.train, self.test_limits, training=True, variant=variant)

    def collected(self, variant: Variant) -> TestRun:
        """The training tests pytest collects on a variant (the original), cold and without running
        them (`--collect-only`): each `not_run`, and the collection errors."""
        setup = dataclasses.replace(self.settings.pytest, options=(*self.settings.pytest.options, "--collect-only"))
        with self._sandbox(variant) as sandbox:
            return run_tests(self.settings.train, timeout=self.settings.timeout, runner=sandbox, setup=setup)

    def _tests(self, variant: Variant, paths: Sequence[str], limits: Mapping[str, float]) -> TestRun:
        with self._sandbox(variant, holdout=True) as sandbox:
            return self._run_tests(sandbox, paths, limits)

    def holdout(self, variant: Variant, limits: Mapping[str, float] | None = None) -> TestRun:
        """Run the held-out tests on a variant (only on front members and the original);
        `limits` are per-test limits from the original's held-out run."""
        settings = self.settings
        paths = (*settings.holdout, *settings.holdout_ids)
        if not paths:  # pytest would collect the whole project, training tests included
            return TestRun({}, exit_status=5)
        if settings.holdout_engine == "warm":
            run = self.warm_holdout(variant, limits)
            if not run.started_without_variant:
                return run  # else a process it started ran the original: the cold path runs it
        # Cold, in a copy that holds them: no training worker's copy does (its variants are trained).
        return self._tests(variant, paths, limits or {})

    def record_calls(
        self,
        variant: Variant,
        listed: Mapping[str, Sequence[Sequence[object]]] | None = None,
        only: Sequence[str] | None = None,
        watch: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """The training tests' calls of the editable functions (`only` those tests, when given;
        until the `watch` functions have theirs, when given), recorded on `variant` (the original)
        once per evaluator, `listed` inputs and tests (gi.fitness.oracle.record); raises
        RecordingError."""
        key = json.dumps(
            [listed or {}, None if only is None else sorted(only), None if watch is None else sorted(watch)],
            sort_keys=True,
            default=repr,
        )
        if key not in self._recorded:
            with self._sandbox(variant) as sandbox:
                self._recorded[key] = record_calls(self.settings.train, self.program.files, runner=sandbox,
                                                   timeout=self.settings.timeout * 3,
                                                   test_limit=self.settings.test_timeout * 3,
                                                   setup=self.settings.pytest, listed=listed, only=only,
                                                   watch=watch)  # fmt: skip
        return self._recorded[key]

    def differential_cases(self, variant: Variant, listed: Mapping[str, Sequence[Sequence[object]]]) -> list[list[str]]:
        """The differential checks' cases, recorded on `variant` (the original) from its training
        tests; raises RecordingError."""
        return [list(case) for case in self.record_calls(variant, listed)["cases"]]

    def line_coverage(self, variant: Variant) -> tuple[TestRun, LineCoverage]:
        """The training tests on a variant (the original) under coverage.py, a context per test:
        their outcomes, and per line of the editable files the tests that executed it ("" for
        a line run outside any test)."""
        with self._sandbox(variant) as sandbox:
            return covered_test_run(
                self.settings.train,
                self.program.files,
                timeout=self.settings.timeout * 3,
                runner=sandbox,
                default_limit=self.settings.test_timeout * 3,
                setup=self.settings.pytest,
                on_test=self.on_test,
            )

    def suspiciousness(self, variant: Variant, formula: str = "ochiai") -> dict[tuple[str, int], float]:
        """Suspiciousness (`gi.fitness.faults.FORMULAS`) of the lines of the editable files, from the training tests."""
        run, coverage = self.line_coverage(variant)
        return suspiciousness(coverage, run.outcomes, formula)
