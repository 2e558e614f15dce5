"""Experiment wiring: from a validated config to a finished run folder.

    config ─► Program ─► baseline evaluation ─► search.algorithm's ask/evaluate/tell per generation
           ─► checkpoint in the run store after each generation
           ─► validate the front (minimal patches, held-out tests) ─► summary.json, diffs, log

A run folder belongs to one config: running the same config again resumes it from its
last checkpoint (a finished run just rewrites its report); `fresh=True` starts over. The
original's timings (first timing, drift, hot functions, the front's rigorous re-measurement)
are gi/engine/timing.py's.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import queue
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from fitness.objectives import OBJECTIVES, Constraint, Objective, objective_values, reference_point
from fitness.tests import NOT_FAILING, FailureOrder, overfits, per_test_limits, regressions, test_counts
from gi.algorithms import ALGORITHMS, Search, SearchSettings
from gi.algorithms.variation import Candidate
from gi.config import Config
from gi.engine.accounting import count_by_operator
from gi.engine.evaluation import EvaluationSettings, Evaluator
from gi.engine.held_out import HeldOut, configure_held_out, front_members, generalisation_gap
from gi.engine.recorded import Measurements, as_is, open_recorded, replay_comparison
from gi.engine.run_folder import ORIGINAL, STORE_NAME
from gi.engine.sandbox.bubblewrap import isolation
from gi.engine.sandbox.limits import sandbox_limits
from gi.engine.sandbox.runner import hide_environment
from gi.engine.source_measures import variant_measures
from gi.engine.store import VERSIONS, Checkpoint, IndividualRecord, RunStore, tool_versions, version_problems
from gi.engine.summary import write_report
from gi.engine.timing import OriginalTiming, workload_functions, workload_settings
from gi.engine.warm import third_party_imports, warm_unsafe
from gi.model.errors import ConfigError, LLMError, ProgramError, StoreError
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.reports.compare import holm
from gi.reports.document import write_report_or_warn
from mutators import CROSSOVERS, OPERATORS, Feedback, MutationContext
from mutators.llm import LLMClient, LLMOperator, LLMSettings, OfflineMissError, Prompts
from populations import Individual

if TYPE_CHECKING:
    from gi.engine.backends.base import Backend

#: Where `gi replay` writes a replay of a run: a folder inside the recorded run's folder.
REPLAY_FOLDER = "replay"

#: Words in an environment variable's name that mark its value as a secret to redact.
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")


@dataclass
class Progress:
    """What the engine reports to a display after each evaluation and each generation."""

    generation: int = 0
    generations: int = 0
    evaluations: int = 0
    cache_hits: int = 0
    #: Evaluations of this session a time limit decided (the whole run's, or one test's).
    timed_out: int = 0
    done_in_generation: int = 0
    batch_size: int = 0
    best: dict[str, float] = field(default_factory=dict)
    hypervolume: float = 0.0
    front_size: int = 0
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunResult:
    folder: Path
    summary: dict[str, Any]


ProgressCallback = Callable[[Progress, bool], None]


def _rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return dict(rng.bit_generator.state)


class Experiment:
    """One run of one config with its seed."""

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
        if folder is not None:
            self.folder = folder
        else:
            self.folder = config.run_folder if replay_of is None else replay_into or replay_of / REPLAY_FOLDER
        self.on_progress = on_progress or (lambda progress, generation_done: None)
        #: Said at the start of the run: the stored run was made by another gi (gi.engine.store).
        self.version_warnings: list[str] = []
        self.objectives: list[Objective] = [OBJECTIVES.get(name) for name in config.objectives.names()]
        self.program = Program.load(config.program_root, config.program.files, protected=config.test_paths())
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(
                f"{config.source}: experiment.output: cannot make the run folder {self.folder}"
                f" ({error.strerror or error})"
            ) from None
        self._lock = lock_run_folder(self.folder)
        try:
            self._open(config, fresh)
            recorded = None if replay_of is None else open_recorded(replay_of, config.fingerprint())
            if recorded is not None:
                refused, warning = version_problems(recorded.get_meta(VERSIONS), "replay it")
                if refused:
                    recorded.close()
                    raise StoreError(f"{replay_of}: {refused}")
                if warning:
                    self.version_warnings.append(warning)
        except BaseException:
            os.close(self._lock)
            raise
        self.measurements = Measurements(self.store, recorded)
        self.cache: dict[str, Evaluation] = self.store.evaluations()
        #: The training tests that failed most recently first (for runs that stop at the first
        #: failure), from the stored evaluations in the order they were made.
        self.failure_order = FailureOrder()
        for evaluation in self.cache.values():
            self.failure_order.note(evaluation.tests)
        self.progress = Progress(generations=config.search.generations)
        self.progress.warnings += self.version_warnings
        self.suspicious: dict[tuple[str, int], float] = {}
        self.hot: dict[str, float] = {}
        self.protected = self._workload_functions()
        self.evaluator.protected = self.protected
        self.engine, self.engine_reason = self._engine()
        self.timing = OriginalTiming(config, self.program, self.evaluator, self.measurements)
        self.llm: LLMOperator | None = None
        self.backend: Backend | None = None
        #: Evaluations made after the search (minimisation, ablation), by tree hash; read when first needed.
        self.studied: dict[str, Evaluation] | None = None
        #: The held-out tests, run on the front's new members each generation (never for selection).
        self.held_out = (
            HeldOut(self.evaluator, self.measurements, config.tests.test_timeout)
            if config.tests.holdout or config.tests.holdout_fraction or config.tests.differential
            else None
        )

    def _open(self, config: Config, fresh: bool) -> None:
        """Open the run store (emptied with `fresh`, or when it holds a run that never got past
        its first generation) and set up the evaluator."""
        if fresh:
            _empty(self.folder)
        self.store = RunStore(self.folder / STORE_NAME)
        fingerprint = self.store.get_meta("config")
        if fingerprint is not None and fingerprint != config.fingerprint():
            if self.store.last_checkpoint() is not None:
                self.store.close()
                raise StoreError(
                    f"{self.folder} holds a run of a different config; rerun with --fresh to replace it,"
                    " or change experiment.name or experiment.output"
                )
            # The earlier run never finished its first generation (its baseline failed, say):
            # nothing is lost by starting over with the corrected config.
            self.store.close()
            _empty(self.folder)
            self.store = RunStore(self.folder / STORE_NAME)
        self.store.set_meta("config", config.fingerprint())
        if self.store.last_checkpoint() is None:
            self.store.clear_measurements()  # nothing was built on them; the program may have changed
        else:
            refused, warning = version_problems(self.store.get_meta(VERSIONS), "resume it")
            if refused:
                self.store.close()
                raise StoreError(f"{self.folder}: {refused}, or start afresh with --fresh")
            if warning:
                self.version_warnings.append(warning)
        self.store.set_meta(VERSIONS, tool_versions())
        section = config.evaluation
        limits = sandbox_limits(config)
        self.isolation = isolation(limits)
        inside = [self.folder, config.run_folder, config.llm_cache]
        self.evaluator = Evaluator(
            self.program,
            EvaluationSettings(
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
            ),
        )

    # --- the baseline ---------------------------------------------------------------------

    def _baseline(self) -> Evaluation:
        original = apply(self.program, Patch())
        for warning in configure_held_out(self.config, self.evaluator, self.measurements, original):
            if warning not in self.progress.warnings:
                self.progress.warnings.append(warning)
        if not (self.evaluator.settings.holdout or self.evaluator.settings.holdout_ids):
            self.held_out = None  # tests.differential found nothing to check, and nothing else is held out
        self.timing.start(original)
        self.progress.warnings += [warning for warning in self.timing.warnings if warning not in self.progress.warnings]
        evaluation = self.cache.get(original.tree_hash)
        if evaluation is None and self.measurements.replaying:
            evaluation = self.measurements.recorded_evaluation(original.tree_hash)
            if evaluation is not None:
                self.store.put_evaluation(evaluation, individual="baseline", generation=-1)
                self.cache[original.tree_hash] = evaluation
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
            self.store.put_evaluation(evaluation, individual="baseline", generation=-1)
            self.cache[original.tree_hash] = evaluation
        self.evaluator.baseline_tests = evaluation.tests
        self.evaluator.test_limits = per_test_limits(evaluation.durations, self.config.tests.test_timeout)
        self._check_warm(original, evaluation)
        return evaluation

    # --- the loop ---------------------------------------------------------------------------

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
            if warning not in self.progress.warnings:
                self.progress.warnings.append(warning)
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
        evaluation = self.cache.get(variant.tree_hash)
        if evaluation is None:
            return None
        objectives = {o.name: evaluation.measures[o.name] for o in self.objectives if o.name in evaluation.measures}
        failing = evaluation.measures.get("failed_tests", 0) > 0 or not evaluation.ok
        return Feedback(objectives, evaluation.detail if failing else "")

    def _llm_operator(self, baseline: Evaluation) -> LLMOperator | None:
        """The language-model operator, if the config asks for one; its goal follows the objectives."""
        section = self.config.llm
        if section is None or self.config.mutators.llm <= 0:
            return None
        if not self.isolation.sandboxed:
            if not self.config.evaluation.llm_without_sandbox:
                raise ConfigError(
                    f"{self.config.source}: mutators.llm = {self.config.mutators.llm:g}, but the sandbox does not"
                    f" work here ({self.isolation.description}); the model's code would run with your rights."
                    " Install bubblewrap, or set evaluation.llm_without_sandbox = true to accept that"
                )
            hide_environment()
        goal = section.goal
        if goal == "auto":
            names = self.config.objectives.names()
            repairing = baseline.measures.get("failed_tests", 0) > 0
            goal = "faster" if "runtime" in names else "repair" if repairing else "simpler"
        # The [llm] keys are LLMSettings' fields; goal, cache and prompts are the run's to settle.
        settings = LLMSettings(
            **section.model_dump(exclude={"goal", "cache", "prompts"}),
            cache=self.config.llm_cache,
            offline=self.offline,
        )
        prompts = Prompts(section.prompts.chat_system, section.prompts.chat_user, section.prompts.completion)
        operator = LLMOperator(LLMClient(settings), goal, prompts)
        saved = self.store.get_meta("llm_state")
        if saved is not None:  # resuming: the same prompts must take the same next samples
            operator.restore(saved)
        missing = operator.client.key_missing
        if missing:
            self.progress.warnings.append(f"{missing} (llm.api_key_env) is not set: requests go without an API key")
        return operator

    def _search(self, baseline: Evaluation) -> Search:
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
            [OPERATORS.get(name) for name in self.config.mutators.names()],
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
            llm=self.llm,
            llm_share=self.config.mutators.llm,
        )

    def _evaluate(self, candidates: Iterable[Candidate], generation: int) -> tuple[list[Candidate], list[Evaluation]]:
        """Evaluate the batch, each candidate as soon as `candidates` yields it, skipping programs
        already measured (the cache is by tree hash); a replay takes the recorded run's
        evaluations. Returns the batch and its evaluations, in the batch's order."""
        batch: list[Candidate] = []
        measured: list[Candidate] = []
        recorded: dict[str, Evaluation] = {}
        self.progress.batch_size = self.config.search.population
        self.progress.done_in_generation = 0
        if self.evaluator.settings.fail_fast:  # fixed for the batch, whatever finishes first
            self.evaluator.test_order = self.failure_order.order(list(self.evaluator.baseline_tests or {}))

        def done(evaluation: Evaluation) -> None:
            self.progress.evaluations += 1
            self.progress.timed_out += evaluation.status is Status.TIMED_OUT or "timed_out" in evaluation.tests.values()
            self.progress.done_in_generation += 1
            self.on_progress(self.progress, False)

        def to_measure() -> Iterator[Variant]:
            for candidate in candidates:
                batch.append(candidate)
                tree_hash = candidate.variant.tree_hash
                if tree_hash in self.cache:
                    self.progress.cache_hits += 1
                    self.progress.done_in_generation += 1
                elif (evaluation := self.measurements.recorded_evaluation(tree_hash)) is not None:
                    recorded[tree_hash] = evaluation
                    done(evaluation)
                else:
                    measured.append(candidate)
                    yield candidate.variant

        results = self._backend().evaluate_many(to_measure(), on_done=done)
        new = recorded | {c.variant.tree_hash: e for c, e in zip(measured, results, strict=True)}
        with self.store.transaction():
            for candidate in batch:
                if (evaluation := new.pop(candidate.variant.tree_hash, None)) is not None:  # once a program
                    self.cache[evaluation.tree_hash] = evaluation
                    self.store.put_evaluation(evaluation, individual=candidate.id, generation=generation)
                    self.failure_order.note(evaluation.tests)
        self.progress.batch_size = len(batch)
        return batch, [self._measured(c.variant) for c in batch]

    def _breed_and_evaluate(self, search: Search, generation: int) -> tuple[list[Candidate], list[Evaluation]]:
        """The generation's batch and its evaluations. With the language model, breeding runs in
        a thread of its own and each candidate is evaluated as soon as it is bred, so the
        model's replies are awaited while earlier candidates run. The batch is bred in one
        thread in a fixed order and results are taken in its order, so the search does not
        depend on which finishes first."""
        if self.llm is None:  # breeding takes milliseconds: nothing to overlap
            return self._evaluate(self._ask(search, generation), generation)
        bred: queue.SimpleQueue[Candidate | BaseException | None] = queue.SimpleQueue()
        stop = threading.Event()

        def hand_over(candidate: Candidate) -> None:
            if stop.is_set():  # evaluation failed or was interrupted: breed no further
                raise _BreedingStoppedError
            bred.put(candidate)

        def breed() -> None:
            try:
                self._ask(search, generation, on_candidate=hand_over)
                bred.put(None)
            except BaseException as error:  # handed to the evaluating thread, which raises it
                bred.put(error)

        def arriving() -> Iterator[Candidate]:
            while (item := bred.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item

        breeder = threading.Thread(target=breed, name="gi-breeding", daemon=True)
        breeder.start()
        try:
            return self._evaluate(arriving(), generation)
        finally:
            # Never leave breeding running (asking the model, drawing from the generator)
            # after the generation: it ends at its next candidate, or its current request.
            stop.set()
            breeder.join()

    def _ask(
        self, search: Search, generation: int, on_candidate: Callable[[Candidate], None] | None = None
    ) -> list[Candidate]:
        """The search's next batch; a reply the offline cache lacks is a clear error."""
        try:
            return search.ask(on_candidate)
        except OfflineMissError as error:
            if self.replay_of is not None:
                raise LLMError(
                    f"replay of {self.replay_of}, generation {generation}: the recorded run's replies do not"
                    f" cover what the replay asks ({error}); is this the reply cache it ran with (llm.cache)?"
                ) from None
            raise LLMError(str(error)) from None

    def measure(self, variants: Sequence[Variant], label: str) -> list[Evaluation]:
        """Evaluate programs after the search (minimisation, ablation) through the run's backend,
        each with its patch's own measures. They are kept apart from the search's evaluations
        (the run's figures stay the search's), in the store under `label`, and reused.

        With a runtime objective, a study measures every program itself, even one the search
        evaluated, against the original timed again for it: the search's screening ratio was
        taken at another time, under other load, and a study compares its programs' ratios with
        one another (a noisy early measurement of an edit alone would make minimisation keep an
        edit the speed-up does not need). The original stays the unit, ratio 1."""
        timed = "runtime" in self.config.objectives.names()
        if self.studied is None:
            self.studied = self.store.study_evaluations()
            if timed:
                self.timing.restudy()
        if timed:
            original = self.program.tree_hash
            known = {**self.studied, **({original: self.cache[original]} if original in self.cache else {})}
        else:
            known = {**self.studied, **self.cache}
        fresh = list({v.tree_hash: v for v in variants if v.tree_hash not in known}.values())
        results = self._backend().evaluate_many(fresh)
        with self.store.transaction():
            for evaluation in results:
                known[evaluation.tree_hash] = self.studied[evaluation.tree_hash] = evaluation
                self.store.put_study_evaluation(evaluation, label)
        measured = []
        for variant in variants:
            evaluation = known[variant.tree_hash]
            own = {**evaluation.measures, **variant_measures(variant)} if evaluation.ok else evaluation.measures
            measured.append(dataclasses.replace(evaluation, measures=own))
        return measured

    def reopen(self) -> Evaluation:
        """Set the evaluator up as a run's start does (the original's tests, limits and timing)
        and return the original's evaluation: for studies of a finished run."""
        return self._baseline()

    def _measured(self, variant: Variant) -> Evaluation:
        """The evaluation of the program `variant` makes, with the measures of its own patch and
        text (size, diff lines, style, maintainability) rather than those of whichever patch
        made that program first."""
        evaluation = self.cache[variant.tree_hash]
        if not evaluation.ok:
            return evaluation
        return dataclasses.replace(evaluation, measures={**evaluation.measures, **variant_measures(variant)})

    def _restore(self, search: Search, checkpoint: Checkpoint) -> None:
        records = {r.id: r for r in self.store.individuals(checkpoint.population + checkpoint.archive)}
        rebuilt: dict[str, Individual] = {}
        for identifier, record in records.items():
            patch = Patch.from_json(record.patch)
            patch.check(self.program)
            variant = apply(self.program, patch)
            if variant.tree_hash not in self.cache or variant.tree_hash != record.tree_hash:
                raise StoreError(f"{self.store.path}: individual {identifier} does not match its evaluation")
            candidate = Candidate(identifier, patch, variant, record.parents, record.operator)
            rebuilt[identifier] = search.individual(candidate, self._measured(variant), record.generation)
        search.restore(
            checkpoint.generation,
            [rebuilt[i] for i in checkpoint.population],
            [rebuilt[i] for i in checkpoint.archive],
            self.store.get_meta("search_state"),
        )
        search.rng.bit_generator.state = checkpoint.rng
        search.accounting = self.store.get_meta("accounting") or {}
        self.progress.evaluations = int(checkpoint.stats.get("evaluations", 0))
        self.progress.cache_hits = int(checkpoint.stats.get("cache_hits", 0))

    def _backend(self) -> Backend:
        """Where batches are evaluated (evaluation.backend), started at the first batch."""
        if self.backend is None:
            section = self.config.evaluation
            if section.backend == "dask":
                from gi.engine.backends.cluster import DaskBackend

                self.backend = DaskBackend(self.evaluator, section.scheduler, workers=section.workers)
            else:
                self.backend = self.evaluator
        return self.backend

    def close(self) -> None:
        """Stop the backend and the warm workers, close the run store and release the lock."""
        if self.backend is not None and self.backend is not self.evaluator:
            self.backend.close()
        self.backend = None
        self.evaluator.close()
        self.measurements.close()
        self.store.close()
        if self._lock >= 0:
            os.close(self._lock)
            self._lock = -1

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
        self.llm = self._llm_operator(baseline)
        if self.llm is not None and not self.measurements.replaying:  # a model's variants run with canaries
            self.evaluator.learn_canaries()
        search = self._search(baseline)
        checkpoint = self.store.last_checkpoint()
        if checkpoint is not None:
            self._restore(search, checkpoint)
        while search.generation < self.config.search.generations:
            before = {member.tree_hash for member in front_members(search.archive.members)}
            generation = search.generation + 1
            self.progress.generation = generation
            if generation > 0:
                self.timing.remeasure(generation)
            candidates, evaluations = self._breed_and_evaluate(search, generation)
            self._note_llm_stop()
            children = search.tell(candidates, evaluations)
            gap = None
            if self.held_out is not None:  # after tell: what the search chose is already settled
                new = [m for m in front_members(search.archive.members) if m.tree_hash not in before]
                gap = self.held_out.generation(search.generation, new, self.cache, baseline.tests)
            self._checkpoint(search, children, gap)
            self.on_progress(self.progress, True)
        self.store.set_meta("wall_seconds", elapsed_before + time.perf_counter() - started)
        summary = self._finish(search, baseline, elapsed_before + time.perf_counter() - started)
        if (warning := write_report_or_warn(self.folder)) is not None:
            self.progress.warnings.append(warning)
            self.on_progress(self.progress, False)
        return RunResult(self.folder, summary)

    def _note_llm_stop(self) -> None:
        if self.llm is None or not self.llm.stopped:
            return
        warning = f"the language model stopped: {self.llm.stopped}; the run goes on with classic operators"
        if warning not in self.progress.warnings:
            self.progress.warnings.append(warning)

    def _checkpoint(self, search: Search, children: list[Individual], gap: dict[str, Any] | None = None) -> None:
        self.progress.best = search.best()
        self.progress.hypervolume = search.hypervolume()
        self.progress.front_size = len(search.archive.members)
        stats = {
            "generation": search.generation,
            "evaluations": self.progress.evaluations,
            "cache_hits": self.progress.cache_hits,
            "offspring": len(children),
            "feasible": sum(individual.fitness.feasible for individual in search.population),
            "front_size": self.progress.front_size,
            "hypervolume": self.progress.hypervolume,
            "best": self.progress.best,
        }
        with self.store.transaction():
            for child in children:
                self.store.put_individual(
                    IndividualRecord(
                        child.id,
                        child.generation,
                        child.tree_hash,
                        child.patch.to_json(),
                        child.parents,
                        child.operator,
                    )
                )
            self.store.set_meta("accounting", search.accounting)
            self.store.set_meta("search_state", search.state())
            if self.llm is not None:
                self.store.set_meta("llm_state", self.llm.state())
            if gap is not None:
                self.store.put_generalisation(search.generation, gap)
            self.store.checkpoint(
                Checkpoint(
                    search.generation,
                    [individual.id for individual in search.population],
                    [individual.id for individual in search.archive.members],
                    _rng_state(search.rng),
                    stats,
                )
            )

    # --- after the loop ---------------------------------------------------------------------

    def _timed_out_share(self, original: str) -> float:
        """The share of evaluations a time limit decided (the whole run's, or one test's); warned
        about past 10%: the limits may be too tight for this machine's load."""
        judged = [e for tree_hash, e in self.cache.items() if tree_hash != original]
        hit = sum(e.status is Status.TIMED_OUT or "timed_out" in e.tests.values() for e in judged)
        share = hit / len(judged) if judged else 0.0
        if share > 0.1:
            self.progress.warnings.append(
                f"{share:.0%} of the evaluations ran into a time limit (tests.timeout, tests.test_timeout):"
                " if the variants do not loop forever, the limits are too tight for this machine"
            )
        return share

    def _llm_summary(self, accounting: Mapping[str, float] | None) -> dict[str, Any] | None:
        """The model's settings (the key's variable name, never its value), usage and verdict.

        `parse_rate` is the share of replies that parsed; `pass_rate` the share of the model's
        evaluated variants that passed every training test.
        """
        if self.llm is None:
            return None
        settings, usage, stats = self.llm.client.settings, self.llm.client.usage, self.llm.stats
        return {
            "base_url": settings.base_url,
            "model": settings.model,
            "api": settings.api,
            "api_key_env": settings.api_key_env,
            "goal": self.llm.goal,
            "requests": usage.requests,
            "cache_hits": usage.cache_hits,
            "failures": usage.failures,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost": round(usage.cost, 6),
            "seconds": round(usage.seconds, 3),
            "proposals": stats.proposals,
            "edits": stats.edits,
            "replies": stats.replies,
            "parse_rate": round(stats.parse_rate, 4) if stats.parse_rate is not None else None,
            "pass_rate": (
                round(accounting["passing"] / accounting["evaluated"], 4)
                if accounting and accounting["evaluated"]
                else None
            ),
            "stopped": usage.stopped,
            "errors": usage.errors[:10],
            "rejected": stats.rejected[:10],
        }

    def _finish(self, search: Search, baseline: Evaluation, wall_seconds: float) -> dict[str, Any]:
        """Validate the front (minimal patches, held-out tests) and write the run folder."""
        members = front_members(search.archive.members)
        original = apply(self.program, Patch())
        holdout_baseline = self.held_out.baseline if self.held_out is not None else None
        names = [objective.name for objective in self.objectives]
        variants = []
        for member in members:
            variant = apply(self.program, member.patch)
            minimal = apply(self.program, variant.minimal())
            variants.append(minimal if minimal.tree_hash == variant.tree_hash else variant)
        held = self.held_out.outcomes(variants) if self.held_out is not None else [{} for _ in variants]
        minimised = self.store.get_meta("minimised") or {}
        ablated = self.store.get_meta("ablation") or {}
        # Every individual that made the original program: the summary calls it `original`.
        originals = {
            identifier
            for identifier, _, _, made in self.store.lineage()
            if made is not None and made["tree_hash"] == original.tree_hash
        }
        front = []
        for member, variant, outcomes in zip(members, variants, held, strict=True):
            evaluation = self.cache[member.tree_hash]
            entry: dict[str, Any] = {
                "member": member,
                "variant": variant,
                "evaluation": evaluation,
                "objectives": dict(zip(names, member.objectives, strict=True)) if member.objectives else {},
            }
            # The studies keep their results by the summary's id (`original` for the original).
            known_as = ORIGINAL if member.id in originals or not variant.changed_files else member.id
            smaller = minimised.get(known_as, minimised.get(member.id))
            if smaller is not None and smaller["of_edits"] == variant.patch.to_json():  # see gi/studies/minimize.py
                entry["minimal"] = {key: value for key, value in smaller.items() if key != "of_edits"}
                entry["minimal_diff"] = apply(self.program, Patch.from_json(smaller["edits"])).diff()
            ablation = ablated.get(known_as, ablated.get(member.id))
            if ablation is not None and ablation["of_edits"] == variant.patch.to_json():  # see gi/studies/ablation.py
                entry["ablation"] = ablation["edits"]
            if variant.changed_files and evaluation.ok and self.evaluator.written_by_model(variant):
                checked = self.evaluator.second_run(variant, evaluation.tests)
                entry["second_run"] = checked.to_json()
                if not checked.agrees:
                    self.progress.warnings.append(f"front member {member.id}: {checked.detail}: its scores are forged")
            if self.timing.active and member.fitness.feasible and variant.changed_files:
                entry["speedup"] = self.timing.speedup(original, variant)
            if holdout_baseline is not None:
                entry["holdout"] = {
                    **test_counts(outcomes),
                    "failing": sorted(test for test, outcome in outcomes.items() if outcome not in NOT_FAILING),
                    "regressions": regressions(outcomes, holdout_baseline),
                }
                entry["overfits"] = overfits(evaluation.tests, baseline.tests, outcomes, holdout_baseline)
            front.append(entry)
        _correct_for_many(front)
        timed_out = self._timed_out_share(original.tree_hash)
        baseline_objectives = objective_values(self.objectives, baseline.measures, search.worst())
        operators = count_by_operator(search.accounting, self.store.lineage(), [m.id for m in members], self.llm)
        return write_report(
            self.folder,
            config=self.config,
            objectives=self.objectives,
            baseline=baseline,
            baseline_objectives=dict(zip(names, baseline_objectives, strict=True)),
            baseline_holdout=holdout_baseline,
            front=front,
            history=self.store.history(),
            evaluation_log=self.store.evaluation_log(),
            original_ids=originals,
            evaluations=len(self.cache) - 1,  # every program measured, but the original
            cache_hits=self.progress.cache_hits,
            wall_seconds=wall_seconds,
            sandbox=self.isolation.description,
            extra={
                "fault_localisation": [
                    {"file": file, "line": line, "ochiai": round(score, 4)}
                    for (file, line), score in sorted(self.suspicious.items(), key=lambda item: (-item[1], item[0]))[
                        :10
                    ]
                ],
                "hot_functions": {name: round(share, 4) for name, share in sorted(self.hot.items())},
                "protected_functions": sorted(self.protected),
                "timed_out_share": round(timed_out, 4),
                "engine": {
                    "training_tests": self.engine,
                    "why": self.engine_reason,
                    "backend": self.config.evaluation.backend,
                },
                "runtime_drift": self.timing.drift,
                "measurements": self.measurements.provenance(
                    {h: e for h, e in self.cache.items() if h != original.tree_hash}
                ),
                "replay": (
                    replay_comparison(self.measurements.recorded, self.store)
                    if self.measurements.recorded is not None
                    else None
                ),
                "operators": operators,
                "generalisation_gap": generalisation_gap(self.store.generalisation()),
                "holdout_split": self.measurements.found("holdout_split"),
                "differential_checks": len(self.measurements.found("differential_cases") or []),
                "validation": self.store.get_meta("validation"),  # from `gi validate`
                "llm": self._llm_summary(operators.get("llm")),
                "warnings": self.progress.warnings,
            },
        )


def _correct_for_many(front: list[dict[str, Any]]) -> None:
    """Every front member's speed-up is a test of its own: their p-values are adjusted by Holm's
    method over the members measured (as `gi compare` adjusts its pairs), and a speed-up is
    significant only when its adjusted p is below 0.05 and its interval excludes 1."""
    measured = [entry for entry in front if "p_value" in entry.get("speedup", {})]
    p_values = [float(entry["speedup"]["p_value"]) for entry in measured]
    for entry, adjusted in zip(measured, holm(p_values), strict=True):
        speedup = entry["speedup"]
        excludes_one = speedup["low"] > 1.0 or speedup["high"] < 1.0
        entry["speedup"] = {**speedup, "p_holm": float(f"{adjusted:.4g}"),
                            "significant": adjusted < 0.05 and excludes_one}  # fmt: skip


class _BreedingStoppedError(Exception):
    """Raised in the breeding thread when the generation's evaluation has stopped."""


def lock_run_folder(folder: Path) -> int:
    """Hold an exclusive lock on the run folder for as long as this process lives (or until the
    descriptor is closed); a second `gi run` of the same folder is refused, not interleaved."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise StoreError(f"{folder}: another gi run is using this run folder; wait for it or stop it") from None
    return descriptor


def _empty(folder: Path) -> None:
    """Delete what a run folder holds, keeping the folder (and its lock)."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


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
