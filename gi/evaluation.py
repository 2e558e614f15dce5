"""The evaluator: runs the measures on variants, each in its own scratch copy, in parallel.

`evaluate` never raises: a variant that does not compile, loops forever or crashes pytest
comes back as an `Evaluation` with that status. Results are cached by tree hash, so a
program that several patches make is measured once.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fitness import complexity, size, style
from fitness.tests import TestRun, count_failed, run_tests
from gi.patch import Variant
from gi.program import Program
from gi.results import Evaluation, Status
from gi.sandbox import LimitedRunner, Limits, scratch_copy


@dataclass(frozen=True)
class EvaluationSettings:
    train: tuple[str, ...]
    holdout: tuple[str, ...] = ()
    timeout: float = 60.0
    limits: Limits = field(default_factory=Limits)
    workers: int = 1


def static_measures(variant: Variant) -> dict[str, float]:
    """Measures read from the source alone: complexity, maintainability, Halstead, style, size."""
    sources = {file: variant.sources[file] for file in variant.program.files}
    diff = variant.diff()
    return {
        "complexity": complexity.cyclomatic(sources),
        "maintainability": complexity.maintainability(sources),
        "halstead_volume": complexity.halstead_volume(sources),
        "style": style.violations(sources),
        "size": float(variant.effective_size),
        "diff_lines": size.diff_lines(diff),
        "source_lines": float(sum(text.count("\n") + 1 for text in sources.values())),
    }


def _status(run: TestRun) -> Status:
    if run.timed_out:
        return Status.TIMED_OUT
    if run.exit_status in (-1, 3, 4):  # killed, pytest internal error, usage error
        return Status.CRASHED
    return Status.OK


class Evaluator:
    """Measures variants of one program; remembers the baseline's test outcomes."""

    def __init__(self, program: Program, settings: EvaluationSettings, scratch: Path | None = None) -> None:
        self.program = program
        self.settings = settings
        self.scratch = scratch
        self.baseline_tests: Mapping[str, str] | None = None
        self.baseline_holdout: Mapping[str, str] | None = None

    def _run(self, variant: Variant, paths: Sequence[str]) -> TestRun:
        with scratch_copy(self.program.root, variant.sources, parent=self.scratch) as workdir:
            runner = LimitedRunner(self.settings.limits, workdir.parent)
            return run_tests(workdir, paths, timeout=self.settings.timeout, runner=runner)

    @property
    def isolated(self) -> bool:
        return LimitedRunner(self.settings.limits, Path("/")).isolated

    def evaluate(self, variant: Variant) -> Evaluation:
        """Measure one variant; any failure becomes the evaluation's status, never an exception."""
        started = time.perf_counter()
        tree_hash = variant.tree_hash
        try:
            if variant.syntax_error is not None:
                return Evaluation(Status.UNPARSEABLE, tree_hash, detail=variant.syntax_error,
                                  seconds=time.perf_counter() - started)  # fmt: skip
            measures = static_measures(variant)
            run = self._run(variant, self.settings.train)
            measures["failed_tests"] = float(count_failed(run, self.baseline_tests))
            measures["passed_tests"] = float(run.passed)
            measures["test_count"] = float(len(run.outcomes))
            status = _status(run)
            detail = "" if status is Status.OK and not run.failing() else run.output_tail
            if status is Status.TIMED_OUT:
                detail = f"the training tests ran past the {self.settings.timeout:g} s limit\n{detail}"
            return Evaluation(status, tree_hash, measures, dict(run.outcomes), detail,
                              time.perf_counter() - started)  # fmt: skip
        except Exception:  # a broken variant is a result, not a crash of the search
            return Evaluation(Status.CRASHED, tree_hash, detail=traceback.format_exc()[-4000:],
                              seconds=time.perf_counter() - started)  # fmt: skip

    def evaluate_many(
        self, variants: Sequence[Variant], on_done: Callable[[Evaluation], None] | None = None
    ) -> list[Evaluation]:
        """Evaluate in parallel (threads: each evaluation is a subprocess); results keep input order."""
        if self.settings.workers <= 1 or len(variants) <= 1:
            results = []
            for variant in variants:
                results.append(self.evaluate(variant))
                if on_done:
                    on_done(results[-1])
            return results
        with ThreadPoolExecutor(max_workers=self.settings.workers) as pool:
            futures = [pool.submit(self.evaluate, variant) for variant in variants]
            results = []
            for future in futures:
                results.append(future.result())
                if on_done:
                    on_done(results[-1])
            return results

    def holdout(self, variant: Variant) -> TestRun:
        """Run the held-out tests on a variant (only ever on the final front and the original)."""
        return self._run(variant, self.settings.holdout)
