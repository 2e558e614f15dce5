"""Where a run's operators edit: the lines the training tests execute, the suspicious lines of a
failing original, the workload's hot functions, and the functions never to edit.

Each is measured once on the original and recorded in the run's measurements, so a resumed run
and a replay steer the same way. `Steering.context` gathers them into the `MutationContext`
every operator reads; what it found goes into summary.json through the run's setup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gi.config import Config
from gi.engine.evaluation import Evaluator
from gi.engine.progress import Progress
from gi.engine.recorded import Measurements, as_is
from gi.engine.timing import workload_functions
from gi.fitness.pytest_diagnosis import cannot_run
from gi.fitness.selection import Coverage
from gi.model.errors import ProgramError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation
from gi.model.sites import Location
from gi.mutators import Feedback, MutationContext
from gi.mutators.base import unexecuted_sites

#: The outcomes of a test in the coverage run whose coverage is known: it ran to its end.
MEASURED_OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")


def test_texts(config: Config, program: Program) -> list[str]:
    """The text of every test file of the training and held-out paths."""
    texts = []
    for path in config.test_paths():
        folder = program.root / path
        files = [folder] if folder.is_file() else sorted(folder.rglob("*.py")) if folder.is_dir() else []
        texts += [file.read_text(encoding="utf-8", errors="replace") for file in files]
    return texts


class Steering:
    """What a run learns about the original before its search, to steer the operators' edits.

    `protected` (the workload's own functions in editable files) is known at once; the rest
    (`hot`, `suspicious`, `unexecuted`, `sites`) once `context` has run on the baseline."""

    def __init__(
        self,
        config: Config,
        program: Program,
        evaluator: Evaluator,
        measurements: Measurements,
        progress: Progress,
        phase: Callable[[str], None],
    ) -> None:
        self.config = config
        self.program = program
        self.evaluator = evaluator
        self.measurements = measurements
        self.progress = progress
        self.phase = phase
        self.suspicious: dict[tuple[str, int], float] = {}
        self.hot: dict[str, float] = {}
        #: The sites no training test executes (their locations), and the counts summary.json gives.
        self.unexecuted: frozenset[Location] = frozenset()
        self.sites: dict[str, int] | None = None
        #: The text of every test file, read once: the warm path's safety check reads it too.
        self.test_texts = test_texts(config, program)
        self.protected = self._workload_functions()

    def context(
        self, baseline: Evaluation, hot: dict[str, float], feedback: Callable[[Variant], Feedback | None]
    ) -> MutationContext:
        """Where operators should edit: the workload's `hot` functions, the suspicious lines of
        fault localisation when the original fails tests, and only lines the training tests
        execute (unless mutators.untested)."""
        self.hot = hot
        self.suspicious = self._suspicious_lines(baseline)
        executed: dict[str, frozenset[int]] | None = None
        tested: dict[str, frozenset[int]] = {}
        recorded = self.measurements.lookup("coverage") is not None
        count = len(self.evaluator.baseline_tests or {})
        what = "coverage of the original by its training tests"
        self.phase(f"{what}: recorded" if recorded else f"{what} ({count} tests, a coverage.py context each)")
        coverage = self.evaluator.coverage = self.coverage()
        if coverage is None:
            self.progress.warn("coverage of the original could not be read: every site may be edited")
            self.phase(self.progress.phase)  # shows the warning at once
        else:
            unexecuted = unexecuted_sites(self.program, coverage.executed_lines(), coverage.tested_lines())
            self.unexecuted = frozenset(unexecuted)
            count = sum(site.location in unexecuted for site in self.program.sites)
            self.sites = {"total": len(self.program.sites), "unexecuted": count,
                          "left_out": 0 if self.config.mutators.untested else count}  # fmt: skip
            if not self.config.mutators.untested:
                executed, tested = coverage.executed_lines(), coverage.tested_lines()
        return MutationContext(
            executed_lines=executed,
            tested_lines=tested,
            feedback=feedback,
            excluded_functions=self.protected,
            # Module-level code (constants, imports) is not in the profile and keeps weight 1:
            # a constant there may well steer the hot loop.
            site_weights=self.hot,
            line_weights=self.suspicious,
            # Lines no failing test runs keep a little weight, so the search may still go there.
            line_floor=0.05 * max(self.suspicious.values(), default=0.0),
        )

    def coverage(self) -> Coverage | None:
        """The original's coverage by the training tests, a context per test (recorded, so a
        resumed run and a replay keep it): for leaving out the sites no training test executes
        (unless mutators.untested) and for running a variant's tests that execute an edited line
        first (tests.fail_fast). None when coverage could not be read."""
        sources = self.program.sources

        def measure() -> dict[str, Any]:
            run, lines = self.evaluator.line_coverage(apply(self.program, Patch()))
            if run.foreign_imports:
                problem = cannot_run(run, self.config.tests.train, self.evaluator.settings.pytest.python, 0)
                raise ProgramError(f"{self.config.source}: {problem}")
            # A test's coverage holds up to where it stopped (a failing test's too), unless a
            # time limit cut it short: coverage.py's slower run is not the original's.
            measured = sorted(test for test, outcome in run.outcomes.items() if outcome in MEASURED_OUTCOMES)
            return {"lines": Coverage.of(lines, sources).to_json() if lines else None, "tests": measured}

        recorded = self.measurements.get("coverage", measure, encode=as_is, decode=as_is)
        if recorded["lines"] is None:
            return None
        return Coverage.from_json(recorded["lines"], sources, recorded.get("tests"))

    def _workload_functions(self) -> frozenset[str]:
        """The workload's entry point (and what only it calls) when it lives in an editable
        file: never edited, and said so once."""
        workload = self.config.workload
        texts = "\n".join(self.test_texts)
        protected = workload_functions(self.program, workload.call if workload else None, texts)
        if protected:
            self.progress.warn(
                f"the workload {workload.call if workload else ''} lives in an editable file; gi never edits"
                f" {', '.join(sorted(protected))} (editing what is timed would fake a speed-up)"
            )
        return protected

    def _suspicious_lines(self, baseline: Evaluation) -> dict[tuple[str, int], float]:
        """Suspiciousness of the lines (mutators.suspiciousness), when fault localisation is on
        (stored for resuming)."""
        wanted = self.config.mutators.fault_localisation
        if wanted is False or (wanted == "auto" and baseline.measures.get("failed_tests", 0) == 0):
            return {}
        self.phase("fault localisation: the lines the failing tests execute")
        formula = self.config.mutators.suspiciousness
        return self.measurements.get(
            "suspiciousness" if formula == "ochiai" else f"suspiciousness:{formula}",
            lambda: self.evaluator.suspiciousness(apply(self.program, Patch()), formula),
            encode=lambda found: [[file, line, score] for (file, line), score in sorted(found.items())],
            decode=lambda rows: {(file, int(line)): float(score) for file, line, score in rows},
        )
