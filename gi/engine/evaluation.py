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
import re
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from gi.engine.measures import static_measures
from gi.engine.verdict import model_code_uses
from gi.engine.workload_runs import WorkloadRuns
from gi.fitness.outcomes import count_failed, first_failing
from gi.fitness.tests import TestRun
from gi.model.errors import EvaluationError
from gi.model.patch import Variant
from gi.model.results import Evaluation, Status


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


class Evaluator(WorkloadRuns):
    """Measures variants of one program, each into an `Evaluation`: its test runs (`SuiteRuns`),
    its workload's (`WorkloadRuns`) and its static measures."""

    # --- one variant --------------------------------------------------------------------------

    def evaluate(self, variant: Variant, *, every_test: bool = False, measured: bool = True) -> Evaluation:
        """Measure one variant; whatever the variant does becomes the evaluation's status, never
        an exception. An exception is gi's own failure (a full disk, no more open files, a
        measure that broke): raised as EvaluationError, it stops the run, and scores nothing.

        With tests.select = "coverage", only the training tests that can see the variant's
        edits run (`selection`), unless `every_test`; the evaluation is then `partial`. Without
        `measured`, only the tests run: neither the workload nor the program's static measures are
        taken (a confirmation by every test keeps the search's, `EvaluationService.confirm`)."""
        return self._evaluate(variant, None if every_test else self.selection(variant), measured)

    def _evaluate(self, variant: Variant, selected: frozenset[str] | None, measured: bool = True) -> Evaluation:
        """`evaluate`, running only the `selected` training tests when given (the others take
        the original's outcomes)."""
        started = time.perf_counter()
        tree_hash = variant.tree_hash

        def result(status: Status, detail: str, measures: dict[str, float] | None = None,
                   run: TestRun | None = None) -> Evaluation:  # fmt: skip
            return Evaluation(status, tree_hash, measures or {}, dict(run.outcomes) if run else {},
                              self.redact(detail), time.perf_counter() - started,
                              dict(run.durations) if run else {}, partial=selected is not None)  # fmt: skip

        try:
            if variant.syntax_error is not None:
                return result(Status.UNPARSEABLE, variant.syntax_error)
            refused = self.refusal(variant)
            if refused is not None:
                return result(Status.TAMPERED, refused)
            measures = static_measures(variant, names=self.settings.measures) if measured else {}
            checks = self._checks(variant)
            if selected is not None and checks.canaries:  # a canary is the clone of a test that runs
                selected = selected | set(checks.canaries)
            with ExitStack() as stack:
                run: TestRun | None = None
                if selected is not None and not selected:
                    run = TestRun({}, exit_status=0)  # no training test executes what the edits change
                elif self.settings.engine == "warm":
                    run = self.warm_training(variant, selected, checks)
                    if run.started_without_variant:
                        run = None  # a process it started ran the original: the cold path runs it
                if run is None:
                    sandbox = stack.enter_context(self._sandbox(variant))
                    run = self._run_tests(
                        sandbox,
                        self.settings.train,
                        self.test_limits,
                        training=True,
                        variant=variant,
                        checks=checks,
                        selected=selected,
                    )
                measures["tests_run"] = float(sum(outcome != "not_run" for outcome in run.outcomes.values()))
                if selected is not None:
                    run = self._with_original_outcomes(run, selected)
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
                if status is Status.OK and self.settings.workload is not None and wanted and measured:
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

    def _with_original_outcomes(self, run: TestRun, selected: frozenset[str]) -> TestRun:
        """A run of the `selected` training tests, with the original's outcomes for the others
        (after those that ran, in the original's order)."""
        others = {test: outcome for test, outcome in (self.baseline_tests or {}).items() if test not in selected}
        return dataclasses.replace(run, outcomes={**run.outcomes, **others})

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

    def evaluate_many(
        self,
        variants: Iterable[Variant],
        on_done: Callable[[Evaluation], None] | None = None,
        *,
        every_test: bool = False,
        measured: bool = True,
    ) -> list[Evaluation]:
        """Evaluate in parallel (threads: each evaluation is a subprocess), each variant as soon
        as `variants` yields it; results keep input order. `every_test` and `measured` as for
        `evaluate`."""
        if self.settings.workers <= 1:
            results = []
            for variant in variants:
                results.append(self.evaluate(variant, every_test=every_test, measured=measured))
                if on_done:
                    on_done(results[-1])
            return results
        pool = ThreadPoolExecutor(max_workers=self.settings.workers)
        try:
            futures = [
                pool.submit(self.evaluate, variant, every_test=every_test, measured=measured) for variant in variants
            ]
            results = []
            for future in futures:
                results.append(future.result())
                if on_done:
                    on_done(results[-1])
            return results
        finally:
            # On Ctrl-C or SIGTERM, drop the queued variants instead of evaluating them first.
            pool.shutdown(wait=True, cancel_futures=True)

    def evaluate_sources(
        self, sources: Mapping[str, str], selected: Iterable[str] | None = None, measured: bool = True
    ) -> Evaluation:
        """`evaluate` the program that `sources` (editable file -> text; a file left out keeps the
        original's text) make: for a backend that ships sources, not patches. The variant's patch
        is empty, so `size` is 0; the engine takes the patch's own measures (gi.engine.measures).
        `selected`: the training tests to run (the host's `selection`, which has the patch);
        None: every test."""
        from gi.model.patch import Patch

        unknown = sorted(set(sources) - set(self.program.files))
        if unknown:
            raise ValueError(f"not editable files of the program: {', '.join(unknown)}")
        variant = Variant(self.program, Patch(), {**self.program.sources, **sources}, ())
        return self._evaluate(variant, None if selected is None else frozenset(selected), measured)
