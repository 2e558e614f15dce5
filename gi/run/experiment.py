"""Experiment wiring: from a validated config to a finished run folder.

    config ─► Program ─► the run's services (storage, evaluation, timing, held-out tests)
           ─► baseline evaluation ─► operators and search ─► the loop (gi/run/loop.py):
              ask, evaluate, tell, checkpoint per generation
           ─► the summary builder validates the front ─► summary.json, diffs, log, report

A run folder belongs to one config: running the same config again resumes it from its
last checkpoint (a finished run just rewrites its report); `fresh=True` starts over. The
services are the engine's: the run store and recorded measurements (gi/engine/storage.py), the
evaluation service (gi/engine/service.py), the original's timings (gi/engine/timing.py), the
summary builder (gi/engine/summary.py). What is left here is what only a run decides: the
baseline, where edits are steered, which operators and which search.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fitness.objectives import Constraint, reference_point
from fitness.outcomes import TEST_SHARE, hung_limits, hung_tests, one_test_limit, per_test_limits
from fitness.pytest_diagnosis import READ_ONLY, cannot_run
from fitness.selection import Coverage
from fitness.tests import NOT_FAILING
from gi.algorithms import ALGORITHMS, Search, SearchSettings
from gi.config import Config
from gi.config.sections import AUTO_NEIGHBOURHOOD
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import HeldOut, configure_held_out
from gi.engine.progress import Progress, ProgressCallback
from gi.engine.project import pytest_setup
from gi.engine.recorded import Measurements, as_is
from gi.engine.sandbox.bubblewrap import isolation
from gi.engine.sandbox.limits import Limits, sandbox_limits
from gi.engine.service import BackendChoice, EvaluationService
from gi.engine.storage import RunStorage
from gi.engine.store import RunStore
from gi.engine.summary import RunSetup, SummaryBuilder
from gi.engine.timing import OriginalTiming, workload_functions, workload_settings
from gi.engine.warm import third_party_imports, warm_unsafe
from gi.model.errors import ConfigError, ProgramError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.model.sites import Location
from gi.reports.document import write_report_or_warn
from gi.run.loop import RunLoop
from gi.run.operators import run_operators
from mutators import CROSSOVERS, Feedback, MutationContext, Operator
from mutators.base import unexecuted_sites

#: Where `gi replay` writes a replay of a run: a folder inside the recorded run's folder.
REPLAY_FOLDER = "replay"

#: Words in an environment variable's name that mark its value as a secret to redact.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


@dataclass(frozen=True)
class RunResult:
    folder: Path
    summary: dict[str, Any]


class Experiment:
    """One run of one config with its seed: its services, its baseline, its operators and
    search, and the loop over them."""

    def __init__(
        self,
        config: Config,
        *,
        fresh: bool = False,
        offline: bool = False,
        on_progress: ProgressCallback | None = None,
        replay_of: Path | None = None,
        replay_into: Path | None = None,
        folder: Path | None = None,
    ) -> None:
        """`folder`: the run folder when it is not the config's (a study of a run folder that was
        copied elsewhere); a replay goes to `replay_into`, by default inside `replay_of`."""
        self.config = config
        self.offline = offline or replay_of is not None
        self.replay_of = replay_of
        if folder is None:
            folder = config.run_folder if replay_of is None else replay_into or replay_of / REPLAY_FOLDER
        self.folder = folder
        self.on_progress = on_progress or (lambda progress, generation_done: None)
        self.progress = Progress(generations=config.search.generations)
        self.objectives = config.objective_list()
        files = ", ".join(config.program.files[:3]) + (", ..." if len(config.program.files) > 3 else "")
        self.phase(f"reading the editable files ({files}): parsing them and indexing their sites")
        self.program = Program.load(config.program_root, config.program.files, protected=config.test_paths(),
                                    progress=self.phase)  # fmt: skip
        megabytes = sum(len(text) for text in self.program.sources.values()) / 1e6
        self.phase(f"{len(self.program.files)} files ({megabytes:.2g} MB), {len(self.program.sites)} sites;"
                   f" asking {config.python_path()} about itself")  # fmt: skip
        self.storage = RunStorage(
            folder, config.fingerprint(), fresh=fresh, replay_of=replay_of, config_source=config.source
        )
        try:
            self.pytest, interpreter = pytest_setup(self.program, config.python_path())
            limits = sandbox_limits(config)
            limits = dataclasses.replace(limits, read_only=(*limits.read_only, *map(Path, interpreter.folders)))
            self.isolation = isolation(limits)
            self.evaluator = Evaluator(self.program, self._settings(limits))
        except BaseException:
            self.storage.close()
            raise
        self.progress.warnings += self.storage.version_warnings
        self.suspicious: dict[tuple[str, int], float] = {}
        #: The sites no training test executes (their locations), and the counts summary.json gives.
        self.unexecuted: frozenset[Location] = frozenset()
        self.sites: dict[str, int] | None = None
        self.hot: dict[str, float] = {}
        self.protected = self._workload_functions()
        self.evaluator.protected = self.protected
        self.engine, self.engine_reason = self._engine()
        self.timing = OriginalTiming(config, self.program, self.evaluator, self.measurements)
        section = config.evaluation
        self.evaluations = EvaluationService(
            self.evaluator, self.store, self.measurements, self.timing, self.objectives, self.progress,
            self.on_progress, BackendChoice(section.backend, section.scheduler, section.workers),
        )  # fmt: skip
        self.operators: list[Operator] = []
        #: The held-out tests, run on the front's new members each generation (never for selection).
        self.held_out = (
            HeldOut(self.evaluator, self.measurements, one_test_limit(config.tests.test_timeout, config.tests.timeout))
            if config.tests.holdout or config.tests.holdout_fraction or config.tests.differential
            else None
        )

    @property
    def store(self) -> RunStore:
        return self.storage.store

    @property
    def measurements(self) -> Measurements:
        return self.storage.measurements

    @property
    def cache(self) -> dict[str, Evaluation]:
        """The search's evaluations, by tree hash."""
        return self.evaluations.cache

    def _settings(self, limits: Limits) -> EvaluationSettings:
        """How the evaluator runs the training tests and the workload, from the config."""
        config, section = self.config, self.config.evaluation
        inside = [self.folder, config.run_folder, config.llm_cache]
        return EvaluationSettings(
            train=tuple(config.tests.train),
            holdout=tuple(config.tests.holdout),
            timeout=config.tests.timeout,
            test_timeout=one_test_limit(config.tests.test_timeout, config.tests.timeout),
            limits=limits,
            workers=section.workers,
            exclude=tuple(path for path in inside if path.is_relative_to(self.program.root)),
            secrets=_secrets(config),
            fail_fast=config.tests.fail_fast,
            first_failure=config.tests.fail_fast and section.shortcuts,
            pytest=self.pytest,
            **workload_settings(config),
        )

    # --- the baseline ---------------------------------------------------------------------

    def _baseline(self) -> Evaluation:
        original = apply(self.program, Patch())
        if self.config.tests.holdout or self.config.tests.holdout_fraction or self.config.tests.differential:
            self.phase("setting up the held-out tests")
        for warning in configure_held_out(self.config, self.evaluator, self.measurements, original):
            self.progress.warn(warning)
        if not (self.evaluator.settings.holdout or self.evaluator.settings.holdout_ids):
            self.held_out = None  # tests.differential found nothing to check, and nothing else is held out
        if self.config.workload is not None:
            self.phase("timing the original's workload and profiling it")
        self.timing.start(original)
        self.progress.warnings += [warning for warning in self.timing.warnings if warning not in self.progress.warnings]
        evaluation = self.evaluations.cache.get(original.tree_hash)
        if evaluation is None and self.measurements.replaying:
            evaluation = self.measurements.recorded_evaluation(original.tree_hash)
            if evaluation is not None:
                self.evaluations.keep(evaluation, individual="baseline", generation=-1)
        if evaluation is None:
            self.phase(f"running the original's training tests ({', '.join(self.config.tests.train)})")
            engine = self.evaluator.settings.engine
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine="cold")
            evaluation = self._run_original(original)  # the reference: always the cold path
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine=engine)
            if evaluation.status is Status.TAMPERED:
                raise ProgramError(
                    f"{self.config.program_root}: gi cannot trust the original program's test report:"
                    f" {evaluation.detail.strip().splitlines()[0]}"
                )
            if evaluation.status is not Status.OK or not evaluation.tests:
                self._check_tests_run(original)  # names why, as gi init does
            if evaluation.status is not Status.OK:
                raise ProgramError(
                    f"{self.config.program_root}: the original program's training tests do not run"
                    f" ({evaluation.status.value}; tests.timeout = {self.config.tests.timeout:g}):"
                    f" {evaluation.detail.strip().splitlines()[-1] if evaluation.detail.strip() else ''}"
                )
            if not evaluation.tests:
                raise ProgramError(f"{self.config.source}: tests.train collects no test in {self.config.program_root}")
            failed = evaluation.measures.get("failed_tests", 0)
            if failed and self.config.objectives.constraint is Constraint.TRAIN_PASS:
                failing = [test for test, outcome in sorted(evaluation.tests.items()) if outcome not in NOT_FAILING]
                raise ProgramError(
                    f"{self.config.source}: objectives.constraint = 'train_pass', but the original program fails"
                    f" {failed:g} training test(s) ({', '.join(failing[:3])}{', ...' if len(failing) > 3 else ''}),"
                    ' so no variant could be feasible; for a repair use constraint = "none"'
                )
            if "runtime" in evaluation.measures:  # the original is the unit its variants are timed in
                evaluation = dataclasses.replace(evaluation, measures={**evaluation.measures, "runtime": 1.0})
            self.evaluations.keep(evaluation, individual="baseline", generation=-1)
        self.evaluator.baseline_tests = evaluation.tests
        limits = per_test_limits(evaluation.durations, self.evaluator.settings.test_timeout)
        hung = hung_limits(hung_tests(evaluation.tests), self.config.tests.timeout) if evaluation.ok else {}
        self.evaluator.test_limits = {
            **limits,
            **{test: min(limit, limits.get(test, limit)) for test, limit in hung.items()},
        }
        self._check_warm(original, evaluation)
        return self._with_own_measures(original)

    def _limits_warning(self) -> None:
        """One line when the configured limits contradict: a test may not take longer than
        TEST_SHARE of the whole run (so one that hangs cannot stop it)."""
        tests = self.config.tests
        if "test_timeout" in tests.model_fields_set and tests.test_timeout > one_test_limit(
            tests.test_timeout, tests.timeout
        ):
            self.progress.warn(
                f"{self.config.source}: tests.test_timeout = {tests.test_timeout:g} is more than {TEST_SHARE:.0%} of"
                f" tests.timeout = {tests.timeout:g}: each test gets at most {self.evaluator.settings.test_timeout:g} s"
            )

    def _run_original(self, original: Variant) -> Evaluation:
        """The original's training tests. A run the limit on the whole run (tests.timeout) cut
        off is run again with the tests it hung in limited (`hung_limits`: together at most
        TEST_SHARE of the whole run), until it finishes or hangs in no new test: a test that
        loops forever counts as failing (a repair may fix it), it does not stop the run."""
        self._limits_warning()
        evaluation = self.evaluator.evaluate(original)
        hung: set[str] = set()
        while evaluation.status is Status.TIMED_OUT and (new := hung_tests(evaluation.tests) - hung):
            hung |= new
            self.evaluator.test_limits = hung_limits(hung, self.config.tests.timeout)
            evaluation = self.evaluator.evaluate(original)
        self.evaluator.test_limits = {}
        hung |= hung_tests(evaluation.tests)
        if evaluation.ok and hung:
            self.progress.warn(
                f"the original ran past its time limit in {len(hung)} training test(s) ({', '.join(sorted(hung)[:3])}"
                f"{', ...' if len(hung) > 3 else ''}): they count as failing"
            )
        return evaluation

    def _with_own_measures(self, original: Variant) -> Evaluation:
        """The original's evaluation with the run's own measures (a user's objective), which
        must give the original a number."""
        evaluation = self.evaluations.measured(original)
        assert evaluation is not None
        for objective in self.objectives:
            if objective.measure.static and objective.name not in evaluation.measures:
                problem = getattr(objective.measure.compute, "problem", None) or "no number"
                raise ConfigError(
                    f"{self.config.source}: objectives: {objective.name} gives the original program"
                    f" no value ({problem})"
                )
        return evaluation

    # --- where edits are steered ----------------------------------------------------------

    def _coverage(self) -> Coverage | None:
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
            return {"lines": Coverage.of(lines, sources).to_json() if lines else None}

        recorded = self.measurements.get("coverage", measure, encode=as_is, decode=as_is)
        return None if recorded["lines"] is None else Coverage.from_json(recorded["lines"], sources)

    def _context(self, baseline: Evaluation) -> MutationContext:
        """Where operators should edit: hot functions of the workload, the suspicious lines of
        fault localisation when the original fails tests, and only lines the training tests
        execute (unless mutators.untested)."""
        self.hot = self.timing.hot_functions()
        self.suspicious = self._suspicious_lines(baseline)
        executed: dict[str, frozenset[int]] | None = None
        tested: dict[str, frozenset[int]] = {}
        self.phase("coverage of the original by its training tests")
        coverage = self.evaluator.coverage = self._coverage()
        if coverage is None:
            self.progress.warn("coverage of the original could not be read: every site may be edited")
            self.on_progress(self.progress, False)
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
            feedback=self._feedback,
            excluded_functions=self.protected,
            # Module-level code (constants, imports) is not in the profile and keeps weight 1:
            # a constant there may well steer the hot loop.
            site_weights=self.hot,
            line_weights=self.suspicious,
            # Lines no failing test runs keep a little weight, so the search may still go there.
            line_floor=0.05 * max(self.suspicious.values(), default=0.0),
        )

    def _test_texts(self) -> list[str]:
        """The text of every test file of the training and held-out paths."""
        texts = []
        for path in self.config.test_paths():
            folder = self.program.root / path
            files = [folder] if folder.is_file() else sorted(folder.rglob("*.py")) if folder.is_dir() else []
            texts += [file.read_text(encoding="utf-8", errors="replace") for file in files]
        return texts

    def _engine(self) -> tuple[str, str]:
        """Which path the training tests take ("warm" or "cold"), and why."""
        wanted = self.config.evaluation.engine
        if wanted == "cold":
            return "cold", "evaluation.engine = 'cold'"
        texts = self._test_texts()
        unsafe = warm_unsafe(self.program, texts)
        if unsafe and wanted == "auto":
            return "cold", unsafe
        preload = third_party_imports(self.program, texts, self.pytest.import_roots)
        settings = dataclasses.replace(self.evaluator.settings, engine="warm", preload=tuple(preload))
        self.evaluator.settings = settings
        return (
            "warm",
            "evaluation.engine = 'warm'" if wanted == "warm" else "no test reads the editable files by itself",
        )

    def phase(self, text: str) -> None:
        """Say what the run does before its first generation: each phase, as it starts."""
        self.progress.phase = text
        self.on_progress(self.progress, False)

    def _check_tests_run(self, original: Variant) -> None:
        """The original's training tests must run: else one line naming why and the fix, as `gi
        init` gives it."""
        run = self.evaluator.training_run(original)
        problem = cannot_run(run, self.config.tests.train, str(self.config.python_path()), self.config.tests.timeout)
        if problem is not None:
            raise ProgramError(f"{self.config.source}: the original's training tests cannot run: {problem}")

    def _check_warm(self, original: Variant, baseline: Evaluation) -> None:
        """The warm path must give the original the outcomes the cold path gave it; if not, the
        run goes cold and says why. The verdict is recorded: a resumed run and a replay keep it."""
        if self.engine != "warm":
            return
        self.phase("checking that the warm path gives the original the cold path's outcomes")

        def agrees() -> dict[str, bool]:
            warm = self.evaluator.warm_training(original)
            writes = bool(READ_ONLY.search(warm.failure_report()))
            return {"agrees": warm.outcomes == baseline.tests and not warm.forged, "writes": writes}

        check = self.measurements.get("warm_check", agrees, encode=as_is, decode=as_is)
        if not check["agrees"]:
            self.evaluator.close()
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine="cold")
            why = "the warm path gave the original other outcomes than the cold"
            if check.get("writes"):
                why += " (its tests write where they stand: the warm workers' copy is read-only, a cold one is not)"
            self.engine, self.engine_reason = "cold", why
            self.progress.warnings.append(f"evaluation.engine: {self.engine_reason}; the run uses the cold path")

    def _workload_functions(self) -> frozenset[str]:
        """The workload's entry point (and what only it calls) when it lives in an editable
        file: never edited, and said so once."""
        workload = self.config.workload
        protected = workload_functions(self.program, workload.call if workload else None, "\n".join(self._test_texts()))
        if protected:
            warning = (
                f"the workload {workload.call if workload else ''} lives in an editable file; gi never edits"
                f" {', '.join(sorted(protected))} (editing what is timed would fake a speed-up)"
            )
            self.progress.warn(warning)
        return protected

    def _suspicious_lines(self, baseline: Evaluation) -> dict[tuple[str, int], float]:
        """Ochiai scores of the lines, when fault localisation is on (stored for resuming)."""
        wanted = self.config.mutators.fault_localisation
        if wanted is False or (wanted == "auto" and baseline.measures.get("failed_tests", 0) == 0):
            return {}
        self.phase("fault localisation: the lines the failing tests execute")
        return self.measurements.get(
            "suspiciousness",
            lambda: self.evaluator.suspiciousness(apply(self.program, Patch())),
            encode=lambda found: [[file, line, score] for (file, line), score in sorted(found.items())],
            decode=lambda rows: {(file, int(line)): float(score) for file, line, score in rows},
        )

    def _feedback(self, variant: Variant) -> Feedback | None:
        """What the run measured on a variant, for the language model's prompt."""
        evaluation = self.evaluations.cache.get(variant.tree_hash)
        if evaluation is None:
            return None
        objectives = {o.name: evaluation.measures[o.name] for o in self.objectives if o.name in evaluation.measures}
        failing = evaluation.measures.get("failed_tests", 0) > 0 or not evaluation.ok
        return Feedback(objectives, evaluation.detail if failing else "")

    def _search_defaults(self, baseline: Evaluation) -> tuple[float, str]:
        """search.neighbourhood and search.operator_selection, their "auto" settled: the rings
        first and adaptive operators in a repair (the original fails training tests), where
        benchmarks/repair.py measured them to help; neither otherwise, where it did not measure."""
        settings = self.config.search
        repairing = baseline.measures.get("failed_tests", 0) > 0
        share = settings.neighbourhood
        selection = settings.operator_selection
        if share == "auto":
            share = AUTO_NEIGHBOURHOOD if repairing else 0.0
        if selection == "auto":
            selection = "adaptive" if repairing else "uniform"
        return share, selection

    def _search(self, baseline: Evaluation, operators: Sequence[Operator]) -> Search:
        """The config's algorithm (search.algorithm), seeded from experiment.seed."""
        settings = self.config.search
        test_count = len(baseline.tests)
        reference = reference_point(
            self.objectives, baseline.measures, test_count=test_count, max_edits=settings.max_edits
        )
        return ALGORITHMS.get(settings.algorithm)(
            self.program,
            self.objectives,
            self.config.objectives.constraint,
            operators,
            [CROSSOVERS.get(name) for name in settings.crossovers],
            SearchSettings(
                settings.population,
                settings.generations,
                settings.crossover_rate,
                settings.mutation_rate,
                settings.max_edits,
                settings.archive_parents,
                None if settings.reference_divisions == "auto" else settings.reference_divisions,
                *self._search_defaults(baseline),
                settings.max_evaluations,
            ),
            np.random.default_rng(self.config.experiment.seed),
            reference=reference,
            test_count=test_count,
            context=self._context(baseline),
        )

    # --- the run ----------------------------------------------------------------------------

    def measure(self, variants: Sequence[Variant], label: str) -> list[Evaluation]:
        """Evaluate programs after the search (minimisation, ablation); see `EvaluationService.measure`."""
        return self.evaluations.measure(variants, label)

    def reopen(self) -> Evaluation:
        """Set the evaluator up as a run's start does (the original's tests, limits and timing)
        and return the original's evaluation: for studies of a finished run."""
        return self._baseline()

    def close(self) -> None:
        """Stop the backend and the warm workers, close the run store and release the lock."""
        self.evaluations.close()
        self.storage.close()

    def run(self) -> RunResult:
        """Run (or resume) the search, then validate the front and write the report."""
        try:
            return self._run()
        finally:
            self.close()

    def _run(self) -> RunResult:
        started = time.perf_counter()
        elapsed_before = float(self.store.get_meta("wall_seconds") or 0.0)
        baseline = self._baseline()
        self.operators = run_operators(
            self.config, baseline, self.isolation, self.storage, self.progress, offline=self.offline
        )
        if any(operator.writes_code for operator in self.operators) and not self.measurements.replaying:
            self.evaluator.learn_canaries()  # a model's variants run with canaries
        search = self._search(baseline, self.operators)
        checkpoint = self.store.last_checkpoint()
        if checkpoint is not None:
            self.storage.restore(search, checkpoint, self.program, self.evaluations.measured)
            self.progress.evaluations = int(checkpoint.stats.get("evaluations", 0))
            self.progress.cache_hits = int(checkpoint.stats.get("cache_hits", 0))
        self.phase(f"generation 0: {self.config.search.population} programs, the original among them")
        self.progress.phase = ""
        loop = RunLoop(
            search, self.evaluations, self.storage, self.timing, self.held_out, self.operators, self.on_progress,
            replay_of=self.replay_of,
        )  # fmt: skip
        loop.run(self.config.search, baseline, lambda: elapsed_before + time.perf_counter() - started)
        self.store.set_meta("wall_seconds", elapsed_before + time.perf_counter() - started)
        setup = RunSetup(
            self.suspicious,
            self.hot,
            self.protected,
            self.engine,
            self.engine_reason,
            self.isolation.description,
            unexecuted=self.unexecuted if self.config.mutators.untested else frozenset(),
            sites=self.sites,
            stopped=loop.stopped,
        )
        builder = SummaryBuilder(
            self.config, self.program, self.objectives, self.storage, self.evaluations, self.timing, self.held_out,
            self.operators, setup,
        )  # fmt: skip
        summary = builder.write(search, baseline, elapsed_before + time.perf_counter() - started)
        if self.config.experiment.report and (warning := write_report_or_warn(self.folder)) is not None:
            self.progress.warnings.append(warning)
            self.on_progress(self.progress, False)
        return RunResult(self.folder, summary)


def _secrets(config: Config) -> tuple[str, ...]:
    """Values that must never reach a report or a prompt: the API key, and any variable of
    gi's environment whose name says it holds a secret."""
    names = {config.llm.api_key_env} if config.llm is not None else set()
    names |= {name for name in os.environ if any(word in name.upper() for word in SECRET_WORDS)}
    return tuple(sorted({os.environ[name] for name in names if len(os.environ.get(name, "")) >= 8}))


def run_experiment(
    config: Config,
    *,
    fresh: bool = False,
    offline: bool = False,
    on_progress: ProgressCallback | None = None,
    replay_of: Path | None = None,
    replay_into: Path | None = None,
) -> RunResult:
    """Run one config end to end, or replay the run recorded in `replay_of`; see `Experiment`."""
    return Experiment(
        config, fresh=fresh, offline=offline, on_progress=on_progress, replay_of=replay_of, replay_into=replay_into
    ).run()
