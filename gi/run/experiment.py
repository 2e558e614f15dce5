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
baseline (its reference evaluation in gi/run/original.py), where edits are steered
(gi/run/steering.py), which operators and which search.
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

from gi.algorithms import ALGORITHMS, Search, SearchSettings
from gi.config import Config
from gi.config.diversity import grid_settings, island_plan
from gi.config.sections import AUTO_NEIGHBOURHOOD
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.engine.held_out import HeldOut, configure_held_out
from gi.engine.oracle import Oracle
from gi.engine.oracle_feedback import OracleFeedback
from gi.engine.progress import Progress, ProgressCallback
from gi.engine.project import pytest_setup
from gi.engine.recorded import Measurements, as_is
from gi.engine.sandbox.bubblewrap import isolation
from gi.engine.sandbox.limits import Limits, sandbox_limits
from gi.engine.service import BackendChoice, EvaluationService
from gi.engine.storage import RunStorage
from gi.engine.store import RunStore
from gi.engine.summary import RunSetup, SummaryBuilder
from gi.engine.timing import OriginalTiming, workload_settings
from gi.engine.warm import disagreement, third_party_imports, warm_unsafe
from gi.fitness.objectives import measures_read, objective_values, reference_point
from gi.fitness.outcomes import hung_limits, hung_tests, one_test_limit, per_test_limits
from gi.fitness.pytest_diagnosis import READ_ONLY
from gi.model.errors import ConfigError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation
from gi.mutators import CROSSOVERS, Feedback, Operator
from gi.populations import hypervolume
from gi.reports.document import write_report_or_warn
from gi.run.loop import RunLoop
from gi.run.operators import run_operators
from gi.run.original import reference_evaluation
from gi.run.steady import SteadyLoop
from gi.run.steering import Steering

#: Where `gi replay` writes a replay of a run: a folder inside the recorded run's folder.
REPLAY_FOLDER = "replay"

#: Seconds between two reports of how far a test run before generation 0 is.
PROGRESS_SECONDS = 10.0

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
        self.steering = Steering(config, self.program, self.evaluator, self.measurements, self.progress, self.phase)
        self.evaluator.protected = self.steering.protected
        self.engine, self.engine_reason = self._engine()
        self.timing = OriginalTiming(config, self.program, self.evaluator, self.measurements)
        section = config.evaluation
        self.evaluations = EvaluationService(
            self.evaluator, self.store, self.measurements, self.timing, self.objectives, self.progress,
            self.on_progress, BackendChoice(section.backend, section.scheduler, section.workers),
        )  # fmt: skip
        self.operators: list[Operator] = []
        self._phase_said = (self.progress.phase, 0.0)
        self.evaluator.on_test = self._tests_done
        #: The held-out tests, run on the front's new members each generation (never for selection).
        self.held_out = (
            HeldOut(self.evaluator, self.measurements, one_test_limit(config.tests.test_timeout, config.tests.timeout))
            if config.tests.holdout or config.tests.holdout_fraction or config.tests.differential or self._feedback_on
            else None
        )

    @property
    def _feedback_on(self) -> bool:
        """Whether the oracle's counterexamples join the held-out tests during the run."""
        return self.config.tests.oracle_feedback and self.config.tests.oracle != "off"

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
            spare_pages=None if section.spare_pages == "auto" else section.spare_pages,
            exclude=tuple(path for path in inside if path.is_relative_to(self.program.root)),
            secrets=_secrets(config),
            fail_fast=config.tests.fail_fast,
            first_failure=config.tests.fail_fast and section.shortcuts,
            select=config.tests.select == "coverage",
            pytest=self.pytest,
            measures=measures_read(self.objectives),
            **workload_settings(config),
        )

    # --- the baseline ---------------------------------------------------------------------

    def _baseline(self) -> Evaluation:
        original = apply(self.program, Patch())
        if self.config.tests.holdout or self.config.tests.holdout_fraction or self.config.tests.differential:
            self.phase("setting up the held-out tests")
        for warning in configure_held_out(self.config, self.evaluator, self.measurements, original):
            self.progress.warn(warning)
        if not (self.evaluator.settings.holdout or self.evaluator.settings.holdout_ids or self._feedback_on):
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
            evaluation = reference_evaluation(self.config, self.evaluator, self.progress, original)
            self.evaluations.keep(evaluation, individual="baseline", generation=-1)
        self.evaluator.baseline_tests = evaluation.tests
        limits = per_test_limits(evaluation.durations, self.evaluator.settings.test_timeout)
        hung = hung_limits(hung_tests(evaluation.tests), self.config.tests.timeout) if evaluation.ok else {}
        self.evaluator.test_limits = {
            **limits,
            **{test: min(limit, limits.get(test, limit)) for test, limit in hung.items()},
        }
        self._check_warm(original, evaluation)
        if self.held_out is not None:
            if self.engine == "warm":
                self.phase("checking that the warm path gives the original the cold path's held-out outcomes")
            self.held_out.check_warm()
        return self._with_own_measures(original)

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

    def _engine(self) -> tuple[str, str]:
        """Which path the training tests take ("warm" or "cold"), and why."""
        wanted = self.config.evaluation.engine
        if wanted == "cold":
            return "cold", "evaluation.engine = 'cold'"
        texts = self.steering.test_texts
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
        self._phase_said = (text, time.monotonic())
        self.on_progress(self.progress, False)

    def _tests_done(self, count: int) -> None:
        """How far a long test run before generation 0 is (the original's, its coverage's):
        said again with the tests finished, every PROGRESS_SECONDS."""
        phase, said = self._phase_said
        if not phase or time.monotonic() - said < PROGRESS_SECONDS:
            return
        self.progress.phase = f"{phase}: {count} tests done"
        self._phase_said = (phase, time.monotonic())
        self.on_progress(self.progress, False)

    def _check_warm(self, original: Variant, baseline: Evaluation) -> None:
        """The warm path must give the original the outcomes the cold path gave it; if not, the
        run goes cold and says why. The verdict is recorded: a resumed run and a replay keep it."""
        if self.engine != "warm":
            return
        self.phase("checking that the warm path gives the original the cold path's outcomes")

        def agrees() -> dict[str, Any]:
            warm = self.evaluator.warm_training(original)
            writes = bool(READ_ONLY.search(warm.failure_report()))
            how = disagreement(baseline.tests, warm)
            return {"agrees": not how, "writes": writes, "how": how}

        check = self.measurements.get("warm_check", agrees, encode=as_is, decode=as_is)
        if not check["agrees"]:
            self.evaluator.close()
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine="cold")
            why = "the warm path gave the original other outcomes than the cold"
            if check.get("writes"):
                why += " (its tests write where they stand: the warm workers' copy is read-only, a cold one is not)"
            elif check.get("how"):
                why += f" ({check['how']})"
            self.engine, self.engine_reason = "cold", why
            self.progress.warnings.append(f"evaluation.engine: {self.engine_reason}; the run uses the cold path")

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
        weights = [objective.weight for objective in self.objectives]
        worst = [o.from_minimised(r) for o, r in zip(self.objectives, reference, strict=True)]
        unit = hypervolume([objective_values(self.objectives, baseline.measures, worst)], reference, weights)
        folder, source = self.config.source.parent, self.config.source
        grid = grid_settings(settings, apply(self.program, Patch()), baseline, unit, folder, source)
        islands = (
            island_plan(settings.islands, settings.population, folder, source)
            if settings.algorithm == "islands"
            else None
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
                islands,
            ),
            np.random.default_rng(self.config.experiment.seed),
            reference=reference,
            test_count=test_count,
            context=self.steering.context(baseline, self.timing.hot_functions(), self._feedback),
            grid=grid,
        )

    # --- the run ----------------------------------------------------------------------------

    def measure(self, variants: Sequence[Variant], label: str) -> list[Evaluation]:
        """Evaluate programs after the search (minimisation, ablation); see `EvaluationService.measure`."""
        return self.evaluations.measure(variants, label)

    def oracle(self, baseline: Evaluation) -> Oracle | None:
        """The behaviour oracle of the run's front (None: tests.oracle is off); in a repair (the
        original fails training tests) it leaves out the functions the failing tests reach."""
        if self.config.tests.oracle == "off":
            return None
        repairing = baseline.measures.get("failed_tests", 0) > 0
        return Oracle(self.evaluator, self.measurements, seconds=self.config.tests.oracle_seconds,
                      repairing=repairing, seed=self.config.experiment.seed)  # fmt: skip

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
        self.evaluator.on_test = None
        oracle = self.oracle(baseline)
        feedback = (
            OracleFeedback(oracle, self.held_out, self.measurements)
            if oracle is not None and self.held_out is not None and self._feedback_on
            else None
        )
        loop = (SteadyLoop if self.config.search.steady_state else RunLoop)(
            search, self.evaluations, self.storage, self.timing, self.held_out, self.operators, self.on_progress,
            replay_of=self.replay_of, feedback=feedback,
        )  # fmt: skip
        loop.run(self.config.search, baseline, lambda: elapsed_before + time.perf_counter() - started)
        self.store.set_meta("wall_seconds", elapsed_before + time.perf_counter() - started)
        steering = self.steering
        setup = RunSetup(
            steering.suspicious,
            steering.hot,
            steering.protected,
            self.engine,
            self.engine_reason,
            self.isolation.description,
            unexecuted=steering.unexecuted if self.config.mutators.untested else frozenset(),
            sites=steering.sites,
            stopped=loop.stopped,
        )
        builder = SummaryBuilder(
            self.config, self.program, self.objectives, self.storage, self.evaluations, self.timing, self.held_out,
            self.operators, setup, oracle,
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
