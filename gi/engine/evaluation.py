"""The evaluator: runs the measures on variants, each in its own scratch copy, in parallel.

`evaluate` never raises: a variant that does not compile, loops forever or crashes pytest
comes back as an `Evaluation` with that status. Results are cached by tree hash (by the
engine), so a program that several patches make is measured once.

With a workload, variants that pass the training tests are also timed (screening, with
pyperf) against the original's most recent measurement; timings never overlap each other,
so two workers do not compete for the same core while the clock runs.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import filelock

from fitness.differential import record_cases
from fitness.faults import LineCoverage, covered_test_run, ochiai
from fitness.runtime import (
    RIGOROUS,
    SCREENING,
    BehaviourCheck,
    SpeedUp,
    Timing,
    TimingSettings,
    Workload,
    WorkloadError,
    answered_differently,
    behaviour_of,
    compare,
    interleaved,
    measure,
    output_of,
    profile,
    timed_answers,
)
from fitness.selection import Coverage, first_tests
from fitness.tests import DEFAULT_SETUP, NO_CHECKS, Checks, PytestSetup, TestRun, count_failed, first_failing, run_tests
from gi.engine.measures import static_measures
from gi.engine.sandbox.bubblewrap import Isolation, isolation, loadable_files
from gi.engine.sandbox.limits import Limits
from gi.engine.sandbox.runner import Sandbox
from gi.engine.sandbox.workspace import workspace
from gi.engine.verdict import CanaryTests, SecondRun, model_code_uses, second_run
from gi.engine.warm import WarmPool
from gi.model.errors import EvaluationError
from gi.model.patch import Variant
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.model.sites import Location


@dataclass(frozen=True)
class EvaluationSettings:
    train: tuple[str, ...]
    holdout: tuple[str, ...] = ()
    #: Test ids split off the training paths (tests.holdout_fraction): held out, though their
    #: files stay in the training copies (the training tests beside them need them).
    holdout_ids: tuple[str, ...] = ()
    #: Files gi writes into held-out copies only (relative path, text): the differential checks,
    #: a suite `gi validate` brings; their paths are in `holdout`.
    holdout_files: tuple[tuple[str, str], ...] = ()
    #: Seconds for one whole test run (the backstop), and for one test in the original's run
    #: (a variant's test gets fitness.tests.per_test_limits of the original's times, at most this).
    timeout: float = 60.0
    test_timeout: float = 10.0
    limits: Limits = field(default_factory=Limits)
    workers: int = 1
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
    #: Third-party modules the warm workers import once.
    preload: tuple[str, ...] = ()
    #: tests.fail_fast: a variant failing any training test scores as failing one (how many is
    #: not measured), so its run may stop at the first failure.
    fail_fast: bool = False
    #: Stop each variant's training tests at the first failure, the tests that failed most
    #: recently first (fail_fast with evaluation.shortcuts); the score is the same without.
    first_failure: bool = False
    #: How the project's tests run: its interpreter, what gi adds to its pytest settings, the
    #: copy's import roots (gi.engine.project).
    pytest: PytestSetup = DEFAULT_SETUP


def timing_lock_name() -> str:
    """The name of the lock every timing on this machine holds: its host name, or GI_TIMING_HOST
    (set it alike for containers that share one machine's cores)."""
    return f"gi-timing-{os.environ.get('GI_TIMING_HOST') or socket.gethostname()}"


def machine_timing_lock() -> filelock.FileLock:
    """The lock a timing holds: a file lock, so that no two timings on this machine overlap,
    whether they come from threads of one run or from other gi processes (runs side by side,
    test processes). Two timings at once share the pinned core and each measures the other."""
    return filelock.FileLock(Path(tempfile.gettempdir()) / f"{timing_lock_name()}.lock")


def _status(run: TestRun) -> Status:
    if run.forged:
        return Status.TAMPERED
    if run.resource:
        return Status.RESOURCE
    if run.timed_out:
        return Status.TIMED_OUT
    if run.exit_status in (-1, 3, 4):  # killed, pytest internal error, usage error
        return Status.CRASHED
    return Status.OK


#: Errors of the machine, not of gi's code, and what to do about them.
_MACHINE = {
    errno.ENOSPC: "free space there",
    errno.EDQUOT: "free space there",
    errno.EMFILE: "raise the limit on open files (ulimit -n)",
    errno.ENFILE: "the system ran out of open files; fewer evaluation.workers may help",
    errno.ENOMEM: "the machine ran out of memory; fewer evaluation.workers may help",
}


def _gi_failure(error: Exception) -> str:
    """One line for an error of gi's while it evaluated a variant: what failed, where in gi, and
    what to do; the variant is not scored and the run stops (it resumes where it stopped)."""
    frames = traceback.extract_tb(error.__traceback__)
    where = next((f"{frame.filename.rpartition('/')[2]}:{frame.lineno}" for frame in reversed(frames)
                  if "/gi/" in frame.filename or "/fitness/" in frame.filename), "gi")  # fmt: skip
    text = str(error).strip()
    code = error.errno if isinstance(error, OSError) else None
    if code is None and (found := re.search(r"\[Errno (\d+)\] ([^'\]\n]*)", text)):  # shutil.Error lists them
        code, text = int(found.group(1)), found.group(0)
    what = f"{type(error).__name__}: {text.splitlines()[0][:200] if text else ''}"
    cure = _MACHINE.get(code) if code is not None else None
    advice = f"{cure}, then" if cure else "this is a bug of gi's (please report it with this line);"
    return (f"evaluating a variant failed in gi itself ({what}, in {where}): no variant was scored for it;"
            f" {advice} run the same command again to resume")  # fmt: skip


def _retried(run: Callable[[], TestRun]) -> TestRun:
    """A test run; one cut off by the limit on the whole run is tried once more (a loaded
    machine, not the variant, may be why)."""
    first = run()
    return run() if first.timed_out else first


class Evaluator:
    """Measures variants of one program; remembers the original's tests, output and timing."""

    def __init__(self, program: Program, settings: EvaluationSettings, scratch: Path | None = None) -> None:
        self.program = program
        self.settings = settings
        self.scratch = scratch
        self.baseline_tests: Mapping[str, str] | None = None
        #: Each training test's time limit, from the original's durations (set with the baseline).
        self.test_limits: Mapping[str, float] = {}
        #: The order a run stopping at the first failure gives the training tests (set by the
        #: engine each generation, from `fitness.tests.FailureOrder`).
        self.test_order: tuple[str, ...] = ()
        #: The original's coverage by the training tests (set by the engine): a variant's tests
        #: that execute an edited line run first when its run may stop at the first failure.
        self.coverage: Coverage | None = None
        self._site_lines: dict[Location, tuple[int, int]] | None = None
        #: Functions gi never edits (the workload's own, in an editable file): the behaviour
        #: check records what the editable code returns to them.
        self.protected: frozenset[str] = frozenset()
        self._warm: WarmPool | None = None
        self._warm_lock = threading.Lock()
        self.baseline_output: str | None = None
        #: The training tests' calls of editable functions, replayed by every behaviour check,
        #: untimed and in the timed processes (set with the original's output).
        self.behaviour_cases: tuple[tuple[str, str, str], ...] = ()
        #: Whether the original's timed processes answered as its untimed check did: only then
        #: is a variant whose timed answers differ scored as tampered.
        self.timed_check = False
        #: The original's latest screening timing; variants are timed with its loop count.
        self.baseline_timing: Timing | None = None
        self._timing_lock: AbstractContextManager[Any] = machine_timing_lock()
        #: The training tests whose canaries fail on the original (`learn_canaries`), and the
        #: types the original returns to the tests (for the front's second run).
        self.canaries = CanaryTests(editable=tuple(program.files))
        self.original_types: dict[str, str] = {}
        #: Set on a worker whose host judged each variant's code before sending its sources.
        self.judged = False
        self._canary_lock = threading.Lock()

    @property
    def isolation(self) -> Isolation:
        """Whether commands get bubblewrap's isolation, or process limits only."""
        return isolation(self.settings.limits)

    @contextmanager
    def _sandbox(self, variant: Variant, *, holdout: bool = False, tests: bool = True) -> Iterator[Sandbox]:
        """A fresh workspace for the variant, and a sandbox to run commands in it.

        During the search (holdout=False) the held-out tests are not in the copy, so no
        variant can read what it will be judged on at the end. A copy for test runs (`tests`)
        is writable, so tests may write beside themselves; one for the workload is read-only,
        and never one a test run used: a module planted beside the code (a `pyperf.py` that
        times with a clock of its own, a cache of answers) would be imported by the timing.
        """
        hidden = self.settings.exclude if holdout else self._training_exclude()
        sources = {**variant.sources, **dict(self.settings.holdout_files)} if holdout else variant.sources
        with workspace(self.program.root, sources, parent=self.scratch, exclude=hidden,
                       encodings=self.program.encodings) as space:  # fmt: skip
            yield Sandbox(dataclasses.replace(self.settings.limits, writable_program=tests), space)

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
    ) -> TestRun:
        """One cold test run, each test under its own limit (see `_retried`); a variant's training
        run stops at its first failure when the settings say so; the plugin makes the `checks`."""
        order, first_failure = self._stop_plan(variant) if training else ((), False)
        before = loadable_files(sandbox.workdir)
        run = _retried(lambda: run_tests(paths, timeout=self.settings.timeout, runner=sandbox, limits=limits,
                                         setup=self.settings.pytest, default_limit=self.settings.test_timeout,
                                         order=order, first_failure=first_failure, checks=checks))  # fmt: skip
        planted = sorted(loadable_files(sandbox.workdir) - before)
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
            order = first_tests(self.coverage.tests_for(self.edited_lines(variant)), order)
        return order, self.settings.first_failure

    def edited_lines(self, variant: Variant) -> list[tuple[str, int]]:
        """The lines of the original that the variant's edits change or insert before: each
        edit's target and insertion points, over the whole site."""
        if self._site_lines is None:
            spans: dict[Location, tuple[int, int]] = {}
            for site in self.program.sites:
                first, last = spans.get(site.location, (site.line, site.line))
                spans[site.location] = (min(first, site.line), max(last, site.last_line, site.line))
            self._site_lines = spans
        lines: list[tuple[str, int]] = []
        for edit in variant.patch.edits:
            for location in (edit.target, *edit.positions()):
                first, last = self._site_lines.get(location, (0, -1))
                lines += [(location.file, line) for line in range(first, last + 1)]
        return lines

    def _training_exclude(self) -> tuple[Path, ...]:
        """What never enters a training workspace: the run folder, the reply cache, and the
        held-out tests, so no variant can read what it will be judged on at the end."""
        return self.settings.exclude + tuple(self.program.root / path.split("::")[0] for path in self.settings.holdout)

    def warm_training(self, variant: Variant) -> TestRun:
        """The training tests on a variant in a warm worker (the engine's fast path)."""
        with self._warm_lock:
            if self._warm is None:
                self._warm = WarmPool(self.program, self.settings.limits, self.settings.workers,
                                      preload=self.settings.preload, exclude=self._training_exclude(),
                                      scratch=self.scratch, setup=self.settings.pytest)  # fmt: skip
        warm, settings, limits = self._warm, self.settings, self.test_limits
        order, first_failure = self._stop_plan(variant)
        checks = self._checks(variant)
        return _retried(lambda: warm.run_tests(variant.sources, settings.train, timeout=settings.timeout,
                                               limits=limits, default_limit=settings.test_timeout, order=order,
                                               first_failure=first_failure, checks=checks))  # fmt: skip

    @property
    def warm_started(self) -> int:
        """The warm worker processes this evaluator started, replacements included."""
        pool = self._warm
        return pool.started if pool else 0

    def close(self) -> None:
        """Stop the warm workers, if any."""
        with self._warm_lock:
            if self._warm is not None:
                self._warm.close()
                self._warm = None

    def training_run(self, variant: Variant) -> TestRun:
        """The training tests on a variant, cold, in a sandboxed copy without the held-out tests,
        each test under its limit (before a baseline is set, as for the original: `test_timeout`
        each, run to the end); the whole report, collection errors and exit status included,
        for `gi init`'s check of a project's tests."""
        with self._sandbox(variant) as sandbox:
            return self._run_tests(sandbox, self.settings.train, self.test_limits, training=True, variant=variant)

    def _tests(self, variant: Variant, paths: Sequence[str], limits: Mapping[str, float]) -> TestRun:
        with self._sandbox(variant, holdout=True) as sandbox:
            return self._run_tests(sandbox, paths, limits)

    # --- one variant --------------------------------------------------------------------------

    def evaluate(self, variant: Variant) -> Evaluation:
        """Measure one variant; whatever the variant does becomes the evaluation's status, never
        an exception. An exception is gi's own failure (a full disk, no more open files, a
        measure that broke): raised as EvaluationError, it stops the run, and scores nothing."""
        started = time.perf_counter()
        tree_hash = variant.tree_hash

        def result(status: Status, detail: str, measures: dict[str, float] | None = None,
                   run: TestRun | None = None) -> Evaluation:  # fmt: skip
            return Evaluation(status, tree_hash, measures or {}, dict(run.outcomes) if run else {},
                              self.redact(detail), time.perf_counter() - started,
                              dict(run.durations) if run else {})  # fmt: skip

        try:
            if variant.syntax_error is not None:
                return result(Status.UNPARSEABLE, variant.syntax_error)
            refused = self.refusal(variant)
            if refused is not None:
                return result(Status.TAMPERED, refused)
            measures = static_measures(variant)
            warm = self.settings.engine == "warm"
            with ExitStack() as stack:
                if warm:
                    run = self.warm_training(variant)
                else:
                    sandbox = stack.enter_context(self._sandbox(variant))
                    run = self._run_tests(
                        sandbox,
                        self.settings.train,
                        self.test_limits,
                        training=True,
                        variant=variant,
                        checks=self._checks(variant),
                    )
                failed = count_failed(run, self.baseline_tests)
                measures["failed_tests"] = float(failed)
                measures["passed_tests"] = float(run.passed)
                measures["test_count"] = float(len(run.outcomes))
                status = _status(run)
                detail = (
                    run.forged
                    or run.resource
                    or ("" if status is Status.OK and not run.failing() else run.failure_report())
                )
                if status is Status.TIMED_OUT:
                    detail = f"the training tests ran past the {self.settings.timeout:g} s limit\n{detail}"
                if self.settings.fail_fast and failed:
                    status, detail = self._fails(run, status, detail, measures)
                wanted = self.settings.time_failing or measures["failed_tests"] == 0
                if status is Status.OK and self.settings.workload is not None and wanted:
                    # The behaviour check and the timings run cold, in a read-only copy of their
                    # own: nothing the test run wrote in its copy reaches them.
                    sandbox = stack.enter_context(self._sandbox(variant, tests=False))
                    trouble, tampered = self._workload_measures(sandbox, measures)
                    detail += trouble
                    if tampered:
                        status, detail = Status.TAMPERED, tampered
            return result(status, detail, measures, run)
        except Exception as error:  # a broken variant is a result, never an exception: this is gi's
            raise EvaluationError(_gi_failure(error)) from error

    def refusal(self, variant: Variant) -> str | None:
        """Why the variant is scored tampered without running, or None: its model-written code
        uses what the original does not (gi.engine.verdict.model_code_uses)."""
        uses = [] if self.judged else model_code_uses(self.program, variant)
        return "new code reaches beyond what the original uses: " + "; ".join(uses) if uses else None

    @staticmethod
    def _fails(run: TestRun, status: Status, detail: str, measures: dict[str, float]) -> tuple[Status, str]:
        """tests.fail_fast's verdict on a run with a failure: the variant fails, as its first
        failing test (in the order the tests ran) says; how many fail is not measured, nor what
        happened after that test. So the score is the same whether the run stopped there or went
        on (evaluation.shortcuts = false), and crashed or ran out of time later."""
        measures["failed_tests"] = 1.0
        measures.pop("passed_tests", None)
        first = first_failing(run.outcomes)
        # Nothing failed by itself (nothing ran), the report is not trusted, or the crash or time
        # limit struck in that very test (it never finished): what happened stands.
        if first is None or status is Status.TAMPERED or first not in run.durations:
            return status, detail
        return Status.OK, run.failure_report(only=first)

    def _workload_measures(self, sandbox: Sandbox, measures: dict[str, float]) -> tuple[str, str]:
        """Check the workload's output and time it; adds to `measures`, returns what went wrong
        and why the timing was tampered with ("" when it was not: see `answered_differently`)."""
        workload = self.settings.workload
        assert workload is not None
        try:
            untimed = None
            if self.settings.check_output and self.baseline_output is not None:
                untimed = self._output(sandbox)
                measures["output_differs"] = float(behaviour_of(untimed) != behaviour_of(self.baseline_output))
            if self.baseline_timing is not None:
                audited = untimed is not None and self.timed_check
                with self._timing_lock:
                    timing = measure(
                        workload, self.settings.screening, runner=sandbox, timeout=self.settings.workload_timeout,
                        loops=self.baseline_timing.loops, check=self._behaviour_check() if audited else None,
                    )  # fmt: skip
                measures["runtime_seconds"] = timing.median
                measures["runtime"] = timing.median / self.baseline_timing.median
                if audited and untimed is not None:
                    timed = timed_answers(sandbox)
                    why = answered_differently(untimed, timed, self.settings.screening.processes)
                    if why:
                        return "", f"it answers differently when it is timed: {why}"
        except WorkloadError as error:
            if "timed out" not in str(error):
                measures["workload_failed"] = 1.0
            return f"\n{error}", ""
        return "", ""

    def _behaviour_check(self) -> BehaviourCheck:
        """What the behaviour check looks at: the editable files' returns to the workload and the
        training tests' recorded calls (`behaviour_cases`), replayed."""
        return BehaviourCheck(tuple(self.program.files), tuple(sorted(self.protected)), self.behaviour_cases)

    def evaluate_many(
        self, variants: Iterable[Variant], on_done: Callable[[Evaluation], None] | None = None
    ) -> list[Evaluation]:
        """Evaluate in parallel (threads: each evaluation is a subprocess), each variant as soon
        as `variants` yields it; results keep input order."""
        if self.settings.workers <= 1:
            results = []
            for variant in variants:
                results.append(self.evaluate(variant))
                if on_done:
                    on_done(results[-1])
            return results
        pool = ThreadPoolExecutor(max_workers=self.settings.workers)
        try:
            futures = [pool.submit(self.evaluate, variant) for variant in variants]
            results = []
            for future in futures:
                results.append(future.result())
                if on_done:
                    on_done(results[-1])
            return results
        finally:
            # On Ctrl-C or SIGTERM, drop the queued variants instead of evaluating them first.
            pool.shutdown(wait=True, cancel_futures=True)

    def evaluate_sources(self, sources: Mapping[str, str]) -> Evaluation:
        """`evaluate` the program that `sources` (editable file -> text; a file left out keeps the
        original's text) make: for a backend that ships sources, not patches. The variant's patch
        is empty, so `size` is 0; the engine takes the patch's own measures (gi.engine.measures)."""
        from gi.model.patch import Patch

        unknown = sorted(set(sources) - set(self.program.files))
        if unknown:
            raise ValueError(f"not editable files of the program: {', '.join(unknown)}")
        return self.evaluate(Variant(self.program, Patch(), {**self.program.sources, **sources}, ()))

    # --- the original and the front -------------------------------------------------------------

    def holdout(self, variant: Variant, limits: Mapping[str, float] | None = None) -> TestRun:
        """Run the held-out tests on a variant (only on front members and the original);
        `limits` are per-test limits from the original's held-out run."""
        paths = (*self.settings.holdout, *self.settings.holdout_ids)
        if not paths:  # pytest would collect the whole project, training tests included
            return TestRun({}, exit_status=5)
        return self._tests(variant, paths, limits or {})

    def differential_cases(self, variant: Variant, listed: Mapping[str, Sequence[Sequence[object]]]) -> list[list[str]]:
        """The differential checks' cases, recorded on `variant` (the original) from its training
        tests; raises DifferentialError."""
        with self._sandbox(variant) as sandbox:
            return record_cases(self.settings.train, self.program.files, listed, runner=sandbox,
                                timeout=self.settings.timeout * 3)  # fmt: skip

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
            )

    def suspiciousness(self, variant: Variant) -> dict[tuple[str, int], float]:
        """Ochiai suspiciousness of the lines of the editable files, from the training tests."""
        run, coverage = self.line_coverage(variant)
        return ochiai(coverage, run.outcomes)

    def _workload(self) -> Workload:
        if self.settings.workload is None:
            raise ValueError("no workload is configured")
        return self.settings.workload

    def timing(self, variant: Variant, *, loops: int | None = None) -> Timing:
        """A screening timing of one variant (the original, to set the baseline); raises WorkloadError."""
        with self._sandbox(variant, tests=False) as sandbox, self._timing_lock:
            return measure(self._workload(), self.settings.screening, runner=sandbox,
                           timeout=self.settings.workload_timeout, loops=loops)  # fmt: skip

    def audited_timing(self, variant: Variant, untimed: str, *, loops: int | None = None) -> tuple[Timing, str]:
        """A screening timing whose timed processes make the behaviour check: the timing, and why
        they answered otherwise than `untimed` ("" when they did not); raises WorkloadError."""
        with self._sandbox(variant, tests=False) as sandbox, self._timing_lock:
            timing = measure(self._workload(), self.settings.screening, runner=sandbox, loops=loops,
                             timeout=self.settings.workload_timeout, check=self._behaviour_check())  # fmt: skip
            why = answered_differently(untimed, timed_answers(sandbox), self.settings.screening.processes)
            return timing, why

    def output(self, variant: Variant) -> str:
        """What the workload gives on a variant, for the behaviour check (see `output_of`)."""
        with self._sandbox(variant, tests=False) as sandbox:
            return self._output(sandbox)

    def _output(self, sandbox: Sandbox) -> str:
        return output_of(self._workload(), runner=sandbox, timeout=self.settings.workload_timeout,
                         check=self._behaviour_check())  # fmt: skip

    def profile(self, variant: Variant) -> dict[tuple[str, int], float]:
        """Cumulative time of each function of the editable files in the workload, by (file, line)."""
        with self._sandbox(variant, tests=False) as sandbox:
            return profile(self._workload(), self.program.files, runner=sandbox,
                           timeout=self.settings.workload_timeout)  # fmt: skip

    def rigorous(self, original: Variant, member: Variant, *, loops: int, seed: int = 0) -> SpeedUp:
        """The speed-up of `member` over `original` from a rigorous, interleaved session."""
        return compare(*self.rigorous_timings(original, member, loops=loops), seed=seed)

    def rigorous_timings(self, original: Variant, member: Variant, *, loops: int) -> tuple[Timing, Timing]:
        """The rigorous protocol on both programs (pinned workers), interleaved two processes at a
        time. The member's timed processes make the behaviour check, as in the search: the
        rigorous protocol calls the workload more often in a process than screening does, so a
        member that answers otherwise after that many calls raises WorkloadError here."""
        settings = self.settings.rigorous
        rounds = max(1, settings.processes // 2)
        pair = TimingSettings(processes=2, values=settings.values, warmups=settings.warmups,
                              min_time=settings.min_time)  # fmt: skip
        audited = self.settings.check_output and self.baseline_output is not None and self.timed_check
        with (
            self._sandbox(original, tests=False) as first,
            self._sandbox(member, tests=False) as second,
            self._timing_lock,
        ):
            untimed = self._output(second) if audited else None

            def timer(sandbox: Sandbox, check: BehaviourCheck | None = None) -> Callable[[], Timing]:
                return lambda: measure(self._workload(), pair, runner=sandbox, check=check,
                                       timeout=self.settings.workload_timeout, loops=loops)  # fmt: skip

            check = self._behaviour_check() if untimed is not None else None
            timings = interleaved(timer(first), timer(second, check), rounds)
            if untimed is not None:  # the last round's timed processes (each round clears the last's)
                why = answered_differently(untimed, timed_answers(second), pair.processes)
                if why:
                    raise WorkloadError(f"it answers differently when it is timed: {why}")
            return timings
