"""The evaluation service of a run: the cache, the backend, and each candidate's own measures.

Programs are evaluated once: the cache holds the search's evaluations by tree hash (what a
program measure depends on). A candidate takes the measures of its own patch and text on top
(`gi.engine.measures`). A replay takes the recorded run's evaluations instead of measuring.

With tests.select = "coverage" a variant's evaluation runs only the training tests that can
see its edits (`Evaluation.partial`); `confirm` runs every training test on a program before
anything counts it as passing (the front, a report), and records that run as a measurement of
its own (`confirmation:<tree hash>`), so the search's partial evaluation stays what it was, a
resumed run and a replay find the confirmation, and the cache holds the confirmed one.
Studies after the search (minimisation, ablation) evaluate through the same backend, kept apart
from the search's evaluations; with an objective measured against the run's timing of the
original (`Basis.TIMING`), a study measures every program itself, against its own timing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from gi.algorithms.variation import Candidate
from gi.engine.evaluation import Evaluator
from gi.engine.measures import RunMeasures
from gi.engine.progress import Progress
from gi.engine.recorded import Measurements
from gi.engine.store import RunStore
from gi.engine.timing import OriginalTiming
from gi.fitness.measures import Basis
from gi.fitness.objectives import Objective
from gi.fitness.outcomes import FailureOrder
from gi.model.patch import Variant
from gi.model.results import Evaluation, Status

if TYPE_CHECKING:
    from gi.engine.backends.base import Backend, Result


#: The measurement key (with `:<tree hash>`) of a program's run of every training test.
CONFIRMATION = "confirmation"
#: What the workload's runs measure of a variant (gi.engine.workload_runs): a confirmation keeps them.
TIMING_MEASURES = frozenset({"runtime", "runtime_seconds", "output_differs", "workload_failed"})


def _verdict(evaluation: Evaluation) -> tuple[str, float | None]:
    """What a confirmation may overturn: the status and the failed tests."""
    return evaluation.status.value, evaluation.measures.get("failed_tests")


@dataclasses.dataclass(frozen=True)
class BackendChoice:
    """Where batches are evaluated (the [evaluation] section's backend keys)."""

    backend: str = "local"
    scheduler: str | None = None
    workers: int = 1


class EvaluationService:
    """Evaluates a run's candidates through its backend, each program once."""

    def __init__(
        self,
        evaluator: Evaluator,
        store: RunStore,
        measurements: Measurements,
        timing: OriginalTiming,
        objectives: Sequence[Objective],
        progress: Progress,
        on_progress: Callable[[Progress, bool], None],
        choice: BackendChoice = BackendChoice(),
    ) -> None:
        self.evaluator = evaluator
        self.store = store
        self.measurements = measurements
        self.timing = timing
        self.objectives = tuple(objectives)
        self.progress = progress
        self.on_progress = on_progress
        self.choice = choice
        checkpoint = store.last_checkpoint()
        last = -1 if checkpoint is None else checkpoint.generation
        #: The search's evaluations, by tree hash: those of the checkpointed generations (a program's
        #: confirmation in place of its partial evaluation).
        self.cache: dict[str, Evaluation] = store.evaluations(through=last)
        #: Evaluations a run killed after storing a generation's batch and before its checkpoint
        #: made of that batch: the generation, run again, takes each as just made (counted as
        #: evaluated, new to its operator), as the uninterrupted run did, not as a cache hit.
        self.unfinished: dict[str, Evaluation] = store.evaluations(after=last)
        #: The measures of the run's objectives beyond the registered ones (a user's function).
        self.own_measures = RunMeasures(self.objectives)
        #: The training tests that failed most recently first (for runs that stop at the first
        #: failure), from the stored evaluations in the order they were made.
        self.failure_order = FailureOrder()
        for evaluation in self.cache.values():
            self.failure_order.note(evaluation.tests)
        for key, data in store.measurements(f"{CONFIRMATION}:").items():
            if (tree_hash := key.partition(":")[2]) in self.cache:  # else the generation runs again
                self.cache[tree_hash] = Evaluation.from_json(data)
        #: Confirmations started while their batch runs, by tree hash (`evaluate`'s `early`).
        self._early: dict[str, Future[Evaluation]] = {}
        self._early_pool: ThreadPoolExecutor | None = None
        #: Seconds the backend's evaluators spent on the search's evaluations (each evaluation's own
        #: time, taken where it ran), in this session.
        self.busy_seconds = 0.0
        #: Evaluations made after the search (minimisation, ablation), by tree hash; read when first needed.
        self.studied: dict[str, Evaluation] | None = None
        self._backend: Backend | None = None

    def backend(self) -> Backend:
        """Where batches are evaluated (evaluation.backend), started at the first batch."""
        if self._backend is None:
            if self.choice.backend == "dask":
                from gi.engine.backends.cluster import DaskBackend

                self._backend = DaskBackend(self.evaluator, self.choice.scheduler, workers=self.choice.workers)
            else:
                from gi.engine.backends.base import LocalBackend

                self._backend = LocalBackend(self.evaluator)
        return self._backend

    def measured(self, variant: Variant) -> Evaluation | None:
        """The evaluation of the program `variant` makes (None if it was never evaluated), with
        the measures of its own patch and text (size, diff lines, style, maintainability, the
        run's own measures) rather than those of whichever patch made that program first."""
        evaluation = self.cache.get(variant.tree_hash)
        return None if evaluation is None else self._own(evaluation, variant)

    def _own(self, evaluation: Evaluation, variant: Variant) -> Evaluation:
        """`evaluation` of the program, with the measures of `variant`'s own patch and text."""
        if not evaluation.ok:
            return evaluation
        return dataclasses.replace(evaluation, measures={**evaluation.measures, **self.own_measures.own(variant)})

    def keep(self, evaluation: Evaluation, *, individual: str, generation: int) -> None:
        """Store an evaluation of the search (the original's, say) and cache it."""
        self.store.put_evaluation(evaluation, individual=individual, generation=generation)
        self.cache[evaluation.tree_hash] = evaluation

    def evaluate(
        self,
        candidates: Iterable[Candidate],
        generation: int,
        expected: int,
        early: Callable[[Candidate, Evaluation], bool] | None = None,
        islands: bool = False,
    ) -> tuple[list[Candidate], list[Evaluation]]:
        """Evaluate a batch (of about `expected` candidates, for the display), each candidate as
        soon as `candidates` yields it, skipping programs already measured; a replay takes the
        recorded run's evaluations. With `islands`, each island's candidates go to a worker of
        its own where the backend has several. Returns the batch and its evaluations (each with
        its candidate's own measures), in the batch's order.

        A partial evaluation `early` says may join the front starts its confirmation by every
        test at once, beside the rest of the batch (`confirm` takes it; `settle` waits for
        those it did not take)."""
        batch: list[Candidate] = []
        measured: list[Candidate] = []
        recorded: dict[str, Evaluation] = {}
        where: dict[str, int] = {}
        progress = self.progress
        progress.batch_size = expected
        progress.done_in_generation = 0
        if self.evaluator.settings.fail_fast:  # fixed for the batch, whatever finishes first
            self.evaluator.test_order = self.failure_order.order(list(self.evaluator.baseline_tests or {}))

        bred: dict[str, Candidate] = {}

        def done(evaluation: Evaluation, measured_here: bool = True) -> None:
            self.busy_seconds += evaluation.seconds if measured_here else 0.0
            progress.evaluations += 1
            progress.timed_out += evaluation.status is Status.TIMED_OUT or "timed_out" in evaluation.tests.values()
            progress.done_in_generation += 1
            self.on_progress(progress, False)
            candidate = bred.get(evaluation.tree_hash)
            if early is None or candidate is None or not evaluation.partial:
                return
            if early(candidate, self._own(evaluation, candidate.variant)):
                self._confirm_early(candidate.variant)

        def to_measure() -> Iterator[Variant]:
            for candidate in candidates:
                batch.append(candidate)
                tree_hash = candidate.variant.tree_hash
                if tree_hash in self.cache:
                    progress.cache_hits += 1
                    progress.done_in_generation += 1
                elif (evaluation := self._unfinished_or_recorded(tree_hash)) is not None:
                    recorded[tree_hash] = evaluation
                    done(evaluation, measured_here=False)
                else:
                    measured.append(candidate)
                    bred.setdefault(tree_hash, candidate)
                    if islands and candidate.island is not None:
                        where[tree_hash] = candidate.island
                    yield candidate.variant

        results = self.backend().evaluate_many(to_measure(), on_done=done, where=where if islands else None)
        new = recorded | {c.variant.tree_hash: e for c, e in zip(measured, results, strict=True)}
        with self.store.transaction():
            for candidate in batch:
                if (evaluation := new.pop(candidate.variant.tree_hash, None)) is not None:  # once a program
                    self.cache[evaluation.tree_hash] = evaluation
                    self.store.put_evaluation(evaluation, individual=candidate.id, generation=generation)
                    self.failure_order.note(evaluation.tests)
        progress.batch_size = len(batch)
        return batch, [self._own(self.cache[c.variant.tree_hash], c.variant) for c in batch]

    def confirm(self, variants: Sequence[Variant]) -> list[Evaluation]:
        """Every training test on each program (once a program), for a partial evaluation that
        would count as passing: the evaluation that replaces it in the cache, with each variant's
        own measures. Recorded (`confirmation:<tree hash>`) and found again on a resume or replay."""
        found: dict[str, Evaluation] = {}
        fresh: dict[str, Variant] = {}
        for variant in variants:
            recorded = self.measurements.found(f"{CONFIRMATION}:{variant.tree_hash}")
            if recorded is not None:
                found[variant.tree_hash] = Evaluation.from_json(recorded)
            else:
                fresh.setdefault(variant.tree_hash, variant)
        started = {tree_hash: self._early.pop(tree_hash) for tree_hash in list(fresh) if tree_hash in self._early}
        others = [variant for tree_hash, variant in fresh.items() if tree_hash not in started]
        confirmed = self.backend().evaluate_many(others, every_test=True, measured=False) if others else []
        for evaluation in [*confirmed, *(future.result() for future in started.values())]:
            found[evaluation.tree_hash] = self._record(evaluation)
        self.cache.update(found)
        return [self._own(found[variant.tree_hash], variant) for variant in variants]

    def _record(self, confirmation: Evaluation) -> Evaluation:
        """Record a confirmation, with the search's static measures of the program and, when the
        verdict stands, its timing (neither is taken again: a confirmation runs only the tests)."""
        before = self.cache.get(confirmation.tree_hash)
        if before is not None:
            same = _verdict(before) == _verdict(confirmation)
            kept = {
                name: value
                for name, value in before.measures.items()
                if name not in confirmation.measures and (same or name not in TIMING_MEASURES)
            }
            confirmation = dataclasses.replace(confirmation, measures={**kept, **confirmation.measures})
        self.measurements.record(f"{CONFIRMATION}:{confirmation.tree_hash}", confirmation.to_json())
        return confirmation

    def _confirm_early(self, variant: Variant) -> None:
        """Start every training test on `variant` in a thread of its own, on this machine's
        evaluator (with a Dask backend, confirmations wait for the batch)."""
        tree_hash = variant.tree_hash
        if tree_hash in self._early or self.choice.backend == "dask":
            return
        if self.measurements.lookup(f"{CONFIRMATION}:{tree_hash}") is not None:
            return  # a resumed run's or a replay's: recorded
        if self._early_pool is None:
            self._early_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gi-confirming")
        self._early[tree_hash] = self._early_pool.submit(
            self.evaluator.evaluate, variant, every_test=True, measured=False
        )

    def settle(self) -> None:
        """Wait for the confirmations started early that `confirm` did not take (a candidate
        that would have joined the front alone, but another of its batch came first), and
        record them: which ones start depends on the batch alone, so a resumed run and a replay
        find the same."""
        while self._early:
            tree_hash, future = next(iter(self._early.items()))
            self.cache[tree_hash] = self._record(future.result())
            del self._early[tree_hash]

    def _unfinished_or_recorded(self, tree_hash: str) -> Evaluation | None:
        """The evaluation of a program made in the generation a killed run did not checkpoint, or
        the recorded run's (a replay), taken as if just made."""
        unfinished = self.unfinished.pop(tree_hash, None)
        return unfinished if unfinished is not None else self.measurements.recorded_evaluation(tree_hash)

    # --- one candidate at a time (a steady-state search) -------------------------------------

    def known(self, candidate: Candidate) -> Evaluation | None:
        """The evaluation of the candidate's program without measuring it: the search's (those a
        killed run stored after its last checkpoint too), or in a replay the recorded run's; None
        when it must be measured."""
        tree_hash = candidate.variant.tree_hash
        found = self.cache.get(tree_hash) or self.unfinished.get(tree_hash)
        return found if found is not None else self.measurements.recorded_evaluation(tree_hash)

    def submit(self, candidate: Candidate, done: Callable[[Result], None]) -> None:
        """Evaluate one candidate's program on the backend (its island's worker, where the backend
        has several); `done` gets the result, to be taken in with `arrived`."""
        self.backend().submit(candidate.variant, done, candidate.island)

    def arrived(self, candidate: Candidate, evaluation: Evaluation, generation: int, event: int | None) -> Evaluation:
        """Take in one evaluation as it arrives: a new program's evaluation stored, with the
        steady-state event `event` (None: the store has it), in one transaction. Returns it with
        the candidate's own measures."""
        new = evaluation.tree_hash not in self.cache
        with self.store.transaction():
            if new:
                self.store.put_evaluation(evaluation, individual=candidate.id, generation=generation)
            if event is not None:
                self.store.put_arrival(event, "told", candidate.id)
        if new:
            self.cache[evaluation.tree_hash] = evaluation
            self.failure_order.note(evaluation.tests)
        return self._own(self.cache[evaluation.tree_hash], candidate.variant)

    def timed(self) -> bool:
        """Whether an objective of the run is measured against the run's timing of the original."""
        return any(objective.basis is Basis.TIMING for objective in self.objectives)

    def measure(self, variants: Sequence[Variant], label: str) -> list[Evaluation]:
        """Evaluate programs after the search (minimisation, ablation) through the run's backend,
        each with its patch's own measures. They are kept apart from the search's evaluations
        (the run's figures stay the search's), in the store under `label`, and reused.

        With an objective measured against the run's timing of the original (runtime), a study
        measures every program itself, even one the search evaluated, against the original
        timed again for it: the search's screening ratio was taken at another time, under other
        load, and a study compares its programs' ratios with one another (a noisy early
        measurement of an edit alone would make minimisation keep an edit the speed-up does not
        need). The original stays the unit, ratio 1."""
        timed = self.timed()
        if self.studied is None:
            self.studied = self.store.study_evaluations()
            if timed:
                self.timing.restudy()
        if timed:
            original = self.evaluator.program.tree_hash
            known = {**self.studied, **({original: self.cache[original]} if original in self.cache else {})}
        else:
            known = {**self.studied, **{tree_hash: e for tree_hash, e in self.cache.items() if not e.partial}}
        fresh = list({v.tree_hash: v for v in variants if v.tree_hash not in known}.values())
        results = self.backend().evaluate_many(fresh, every_test=True)  # a study's verdicts are every test's
        with self.store.transaction():
            for evaluation in results:
                known[evaluation.tree_hash] = self.studied[evaluation.tree_hash] = evaluation
                self.store.put_study_evaluation(evaluation, label)
        return [self._own(known[variant.tree_hash], variant) for variant in variants]

    def close(self) -> None:
        """Stop the backend and the evaluator's warm workers (and confirmations under way)."""
        if self._early_pool is not None:
            self._early_pool.shutdown(wait=True, cancel_futures=True)
            self._early_pool = None
        if self._backend is not None:
            self._backend.close()
        self._backend = None
        self.evaluator.close()
