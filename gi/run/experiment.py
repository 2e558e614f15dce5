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
from fitness.tests import NOT_FAILING, per_test_limits
from gi.algorithms import ALGORITHMS, Search, SearchSettings
from gi.config import Config
from gi.engine.evaluation import EvaluationSettings, Evaluator
from gi.engine.held_out import HeldOut, configure_held_out
from gi.engine.progress import Progress, ProgressCallback
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
from gi.reports.document import write_report_or_warn
from gi.run.loop import RunLoop
from gi.run.operators import run_operators
from mutators import CROSSOVERS, Feedback, MutationContext, Operator

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
        self.objectives = config.objective_list()
        self.program = Program.load(config.program_root, config.program.files, protected=config.test_paths())
        self.storage = RunStorage(
            folder, config.fingerprint(), fresh=fresh, replay_of=replay_of, config_source=config.source
        )
        try:
            limits = sandbox_limits(config)
            self.isolation = isolation(limits)
            self.evaluator = Evaluator(self.program, self._settings(limits))
        except BaseException:
            self.storage.close()
            raise
        self.progress = Progress(generations=config.search.generations)
        self.progress.warnings += self.storage.version_warnings
        self.suspicious: dict[tuple[str, int], float] = {}
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
            HeldOut(self.evaluator, self.measurements, config.tests.test_timeout)
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
            test_timeout=config.tests.test_timeout,
            limits=limits,
            workers=section.workers,
            exclude=tuple(path for path in inside if path.is_relative_to(self.program.root)),
            secrets=_secrets(config),
            fail_fast=config.tests.fail_fast,
            first_failure=config.tests.fail_fast and section.shortcuts,
            **workload_settings(config),
        )

    # --- the baseline ---------------------------------------------------------------------

    def _baseline(self) -> Evaluation:
        original = apply(self.program, Patch())
        for warning in configure_held_out(self.config, self.evaluator, self.measurements, original):
            self.progress.warn(warning)
        if not (self.evaluator.settings.holdout or self.evaluator.settings.holdout_ids):
            self.held_out = None  # tests.differential found nothing to check, and nothing else is held out
        self.timing.start(original)
        self.progress.warnings += [warning for warning in self.timing.warnings if warning not in self.progress.warnings]
        evaluation = self.evaluations.cache.get(original.tree_hash)
        if evaluation is None and self.measurements.replaying:
            evaluation = self.measurements.recorded_evaluation(original.tree_hash)
            if evaluation is not None:
                self.evaluations.keep(evaluation, individual="baseline", generation=-1)
        if evaluation is None:
            engine = self.evaluator.settings.engine
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine="cold")
            evaluation = self.evaluator.evaluate(original)  # the reference: always the cold path
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine=engine)
            if evaluation.status is Status.TAMPERED:
                raise ProgramError(
                    f"{self.config.program_root}: gi cannot trust the original program's test report:"
                    f" {evaluation.detail.strip().splitlines()[0]}"
                )
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
        self.evaluator.test_limits = per_test_limits(evaluation.durations, self.config.tests.test_timeout)
        self._check_warm(original, evaluation)
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

    # --- where edits are steered ----------------------------------------------------------

    def _context(self, baseline: Evaluation) -> MutationContext:
        """Where operators should edit: hot functions of the workload, and the suspicious lines
        of fault localisation when the original fails tests."""
        self.hot = self.timing.hot_functions()
        self.suspicious = self._suspicious_lines(baseline)
        return MutationContext(
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
        settings = dataclasses.replace(self.evaluator.settings, engine="warm",
                                       preload=tuple(third_party_imports(self.program, texts)))  # fmt: skip
        self.evaluator.settings = settings
        return "warm", "evaluation.engine = 'warm'" if wanted == "warm" else "no test starts another Python process"

    def _check_warm(self, original: Variant, baseline: Evaluation) -> None:
        """The warm path must give the original the outcomes the cold path gave it; if not, the
        run goes cold and says why. The verdict is recorded: a resumed run and a replay keep it."""
        if self.engine != "warm":
            return

        def agrees() -> dict[str, bool]:
            warm = self.evaluator.warm_training(original)
            return {"agrees": warm.outcomes == baseline.tests and not warm.forged}

        if not self.measurements.get("warm_check", agrees, encode=as_is, decode=as_is)["agrees"]:
            self.evaluator.close()
            self.evaluator.settings = dataclasses.replace(self.evaluator.settings, engine="cold")
            self.engine, self.engine_reason = "cold", "the warm path gave the original other outcomes than the cold"
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
        loop = RunLoop(
            search, self.evaluations, self.storage, self.timing, self.held_out, self.operators, self.on_progress,
            replay_of=self.replay_of,
        )  # fmt: skip
        loop.run(self.config.search.generations, baseline)
        self.store.set_meta("wall_seconds", elapsed_before + time.perf_counter() - started)
        setup = RunSetup(
            self.suspicious, self.hot, self.protected, self.engine, self.engine_reason, self.isolation.description
        )
        builder = SummaryBuilder(
            self.config, self.program, self.objectives, self.storage, self.evaluations, self.timing, self.held_out,
            self.operators, setup,
        )  # fmt: skip
        summary = builder.write(search, baseline, elapsed_before + time.perf_counter() - started)
        if (warning := write_report_or_warn(self.folder)) is not None:
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
