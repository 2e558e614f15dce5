"""The run loop: ask, evaluate, tell, checkpoint, one generation at a time.

The loop knows the search (`gi.algorithms.Search`) and the run's services: the evaluation
service (cache, backend, measures), the storage (checkpoints), the original's timing (drift)
and the held-out tests (the generalisation gap, after `tell`, so they never steer selection).
Breeding runs in a thread of its own and each candidate is evaluated as soon as it is bred (but
in a run that times its variants, unless an operator's proposals wait on a server).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gi.algorithms import Search
from gi.algorithms.variation import Candidate, operator_name
from gi.config.sections import SearchSection
from gi.engine.held_out import HeldOut, front_members
from gi.engine.oracle_feedback import OracleFeedback
from gi.engine.progress import Progress, ProgressCallback
from gi.engine.recorded import as_is
from gi.engine.service import EvaluationService
from gi.engine.storage import RunStorage
from gi.engine.timing import OriginalTiming
from gi.fitness.objectives import objective_values
from gi.model.errors import LLMError
from gi.model.results import Evaluation
from gi.mutators import Operator
from gi.mutators.base import Member, OfflineMissError, Outcome
from gi.populations import Individual

#: The store's meta key of the evaluators' busy and the generations' wall seconds.
EVALUATORS = "evaluators"
#: Seconds a thread holds the interpreter before another that waits may take it, while a
#: generation breeds beside its evaluations (`sys.setswitchinterval`).
SWITCH_INTERVAL = 0.0005


class RunLoop:
    """The generations of one run, from where its search stands to `generations`."""

    def __init__(
        self,
        search: Search,
        evaluations: EvaluationService,
        storage: RunStorage,
        timing: OriginalTiming,
        held_out: HeldOut | None,
        operators: Sequence[Operator],
        on_progress: ProgressCallback,
        *,
        replay_of: Path | None = None,
        feedback: OracleFeedback | None = None,
    ) -> None:
        """`feedback`: the oracle whose counterexamples join the held-out tests each generation
        (tests.oracle_feedback)."""
        self.search = search
        self.feedback = feedback
        self.evaluations = evaluations
        self.storage = storage
        self.timing = timing
        self.held_out = held_out
        self.operators = tuple(operators)
        self.on_progress = on_progress
        self.replay_of = replay_of
        #: The programs (tree hashes) of the checkpointed generations' individuals.
        self.known: set[str] = set()
        #: Why the search stopped (reason, generation, programs evaluated), for the summary.
        self.stopped: dict[str, Any] = {}
        #: When the current generation started, and the evaluators' busy seconds then.
        self._clock = (time.perf_counter(), 0.0)

    @property
    def progress(self) -> Progress:
        return self.evaluations.progress

    def run(self, limits: SearchSection, baseline: Evaluation, elapsed: Callable[[], float]) -> None:
        """Run generations, each ending in a checkpoint, until one of the search's limits says
        stop (`_stop`); `elapsed` gives the run's seconds so far, earlier sessions included."""
        search = self.search
        original = search.program.tree_hash
        self.known = self.storage.store.individual_hashes()  # programs of earlier generations
        while (stop := self._stop(limits, elapsed())) is None:
            self._start_clock()
            before = {member.tree_hash for member in front_members(search.archive.members)}
            generation = search.generation + 1
            self.progress.generation = generation
            if generation > 0:
                self.timing.remeasure(generation)
            evaluated = len(self.known - {original})
            search.batch_limit = None if limits.max_evaluations is None else max(1, limits.max_evaluations - evaluated)
            search.evaluated = evaluated
            cached, counted = set(self.evaluations.cache), self.progress.evaluations
            candidates, evaluations = self._breed_and_evaluate(generation)
            if not candidates:
                stop = "nothing new"  # the search has no program left to propose
                break
            self._note_stops()
            evaluations = self._confirmed(candidates, evaluations)
            children = search.tell(candidates, evaluations)
            self._teach(candidates, evaluations, children, baseline, cached, counted)
            gap = None
            if self.held_out is not None:  # after tell: what the search chose is already settled
                new = [m for m in front_members(search.archive.members) if m.tree_hash not in before]
                if self.feedback is not None:  # counterexamples join the held-out tests first
                    self.feedback.generation(new, self.evaluations.cache, baseline)
                gap = self.held_out.generation(search.generation, new, self.evaluations.cache, baseline.tests)
            fresh = {child.tree_hash for child in children} - self.known
            self.known |= fresh
            self._checkpoint(children, gap, new_programs=len(fresh))
            self.on_progress(self.progress, True)
        self.stopped = {"reason": stop, "generation": search.generation, "evaluations": len(self.known - {original})}

    def _confirmed(self, candidates: Sequence[Candidate], evaluations: Sequence[Evaluation]) -> list[Evaluation]:
        """The batch's evaluations, those that would make a candidate a feasible member of the
        archive (the front) run again with every training test first when they ran only the
        tests that can see its edits (tests.select): no verdict on the front rests on the
        selection. A confirmation that fails lets another candidate join: it is confirmed too."""
        evaluations = list(evaluations)
        while waiting := [i for i in self.search.joining(candidates, evaluations) if evaluations[i].partial]:
            self.evaluations.confirm([candidates[i].variant for i in waiting])
            evaluations = [
                self.evaluations.measured(c.variant) or e for c, e in zip(candidates, evaluations, strict=True)
            ]
        self.evaluations.settle()
        # Every program the batch confirmed counts by its confirmation, as when the run resumes.
        return [self.evaluations.measured(c.variant) or e for c, e in zip(candidates, evaluations, strict=True)]

    def _would_join(self, candidate: Candidate, evaluation: Evaluation) -> bool:
        """Whether the candidate would join the front were it the only one of its batch: its
        confirmation may start while the batch runs (`EvaluationService.evaluate`)."""
        return bool(self.search.joining([candidate], [evaluation]))

    def _stop(self, limits: SearchSection, elapsed: float) -> str | None:
        """Why the run stops before its next generation, or None: its generations are done
        (search.generations), it evaluated search.max_evaluations programs, it is
        search.max_seconds into the run (after the initial generation; decided once per
        generation and recorded, so a resumed run and a replay stop where it stopped), or
        search.patience generations in a row brought no program that no earlier generation had."""
        search = self.search
        if search.generation >= limits.generations:
            return "generations"
        evaluated = len(self.known - {search.program.tree_hash})
        if limits.max_evaluations is not None and evaluated >= limits.max_evaluations:
            return "max_evaluations"
        stale = 0
        for stats in reversed(self.storage.store.history()):
            if stats.get("new_programs", 1) != 0:
                break
            stale += 1
        if stale >= limits.patience:
            return "nothing new"
        limit = limits.max_seconds
        if (
            limit is not None
            and search.generation >= 0
            and self.storage.measurements.get(
                f"out_of_time:{search.generation}", lambda: elapsed >= limit, encode=as_is, decode=as_is
            )
        ):
            return "max_seconds"
        return None

    def _teach(
        self,
        candidates: Sequence[Candidate],
        evaluations: Sequence[Evaluation],
        children: Sequence[Individual],
        baseline: Evaluation,
        known: set[str],
        counted: int,
    ) -> None:
        """Tell each operator what became of the offspring of its edits (evaluated, passing, in
        the archive, better than the original, the failing tests' output) and how the archive
        and the population stand: the model learns from them (its prompts, its bandit, its
        overseer). Held-out results never reach an operator."""
        search = self.search
        in_archive = {member.id for member in search.archive.members}
        original = objective_values(search.objectives, baseline.measures, search.worst()) if baseline.ok else None
        outcomes: dict[str, list[Outcome]] = {}
        for candidate, evaluation, child in zip(candidates, evaluations, children, strict=True):
            name = operator_name(candidate.operator)
            new = candidate.variant.tree_hash not in known
            if new:
                known.add(candidate.variant.tree_hash)
                counted += 1
            passing = evaluation.ok and evaluation.measures.get("failed_tests", 1) == 0
            entered = child.id in in_archive
            improved = entered and child.fitness.feasible and passing and _better(search, child, original)
            failures = "" if passing else evaluation.detail
            outcomes.setdefault(name, []).append(
                Outcome(candidate.operator, candidate.edits, new, passing, entered, improved, failures, counted)
            )
        members = {member.id: member for member in (*search.archive.members, *search.population)}
        seen = [_member(search, member) for member in members.values()]
        for operator in self.operators:
            operator.learn(outcomes.get(operator.name, []), seen)
            for warning in operator.warnings():  # what it learnt to say (the overseer's re-plan)
                self.progress.warn(warning)

    def _note_stops(self) -> None:
        for operator in self.operators:
            reason = operator.stopped()
            if reason:
                self.progress.warn(f"{reason}; the run goes on with the other operators")

    def _start_clock(self) -> None:
        """Mark the start of a generation: its wall time and its evaluators' busy time count from here."""
        self._clock = (time.perf_counter(), self.evaluations.busy_seconds)

    def _checkpoint(
        self,
        children: Sequence[Individual],
        gap: dict[str, Any] | None,
        *,
        new_programs: int,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        search, progress = self.search, self.progress
        started, busy = self._clock
        progress.best = search.best()
        progress.hypervolume = search.hypervolume()
        progress.front_size = len(search.archive.members)
        stats = {
            "generation": search.generation,
            "evaluations": progress.evaluations,
            "cache_hits": progress.cache_hits,
            "offspring": len(children),
            "new_programs": new_programs,
            # The chance each operator has to make the next edit (adaptive selection).
            "operator_shares": search.selection.shares() if search.selection.adaptive else None,
            "feasible": sum(individual.fitness.feasible for individual in search.population),
            "front_size": progress.front_size,
            "hypervolume": progress.hypervolume,
            "best": progress.best,
            **(search.diversity() or {}),
        }
        # How busy the evaluators were: their seconds evaluating and the generations' wall seconds,
        # added up over the run's sessions (a generation cut short by a kill is not counted).
        spent = dict(self.storage.store.get_meta(EVALUATORS) or {})
        spent["loop_seconds"] = round(float(spent.get("loop_seconds", 0.0)) + time.perf_counter() - started, 3)
        spent["busy_seconds"] = round(float(spent.get("busy_seconds", 0.0)) + self.evaluations.busy_seconds - busy, 3)
        meta = {**(meta or {}), EVALUATORS: spent}
        self.storage.save_generation(search, children, stats, self.operators, gap, meta)

    def _breed_and_evaluate(self, generation: int) -> tuple[list[Candidate], list[Evaluation]]:
        """The generation's batch and its evaluations. Breeding runs in a thread of its own and
        each candidate is evaluated as soon as it is bred: a model's replies are awaited while
        earlier candidates run, and so is the breeding itself (libcst's code of each edited
        module and its tree hash: on toolz, 0.25-0.38 s a generation of 10 with the machine
        quiet, 12% of a warm generation's wall time when it came first). The batch is bred in
        one thread in a fixed order and results are taken in its order, so the search does not
        depend on which finishes first. A run that times its variants breeds first, unless an
        operator waits on a server: gi's own work would compete with a timing for the cores."""
        expected = self.search.settings.population
        islands = self.search.name == "islands"
        if self.timing.active and not any(operator.waits for operator in self.operators):
            return self.evaluations.evaluate(self._ask(generation), generation, expected, self._would_join, islands)
        bred: queue.SimpleQueue[Candidate | BaseException | None] = queue.SimpleQueue()
        stop = threading.Event()

        def hand_over(candidate: Candidate) -> None:
            if stop.is_set():  # evaluation failed or was interrupted: breed no further
                raise _BreedingStoppedError
            bred.put(candidate)

        def breed() -> None:
            try:
                self._ask(generation, on_candidate=hand_over)
                bred.put(None)
            except BaseException as error:  # handed to the evaluating thread, which raises it
                bred.put(error)

        def arriving() -> Iterator[Candidate]:
            while (item := bred.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                yield item

        breeder = threading.Thread(target=breed, name="gi-breeding", daemon=True)
        # While breeding holds the interpreter, the evaluating thread waits for it each time a
        # worker answers, up to the switch interval (5 ms by default): a warm evaluation's wait
        # for its answer took as long as its tests.
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, SWITCH_INTERVAL))
        breeder.start()
        try:
            return self.evaluations.evaluate(arriving(), generation, expected, self._would_join, islands)
        finally:
            # Never leave breeding running (asking the model, drawing from the generator)
            # after the generation: it ends at its next candidate, or its current request.
            stop.set()
            breeder.join()
            sys.setswitchinterval(interval)

    def _ask(self, generation: int, on_candidate: Callable[[Candidate], None] | None = None) -> list[Candidate]:
        """The search's next batch; a reply the offline cache lacks is a clear error."""
        try:
            return self.search.ask(on_candidate)
        except OfflineMissError as error:
            if self.replay_of is not None:
                raise LLMError(
                    f"replay of {self.replay_of}, generation {generation}: the recorded run's replies do not"
                    f" cover what the replay asks ({error}); is this the reply cache it ran with (llm.cache)?"
                ) from None
            raise LLMError(str(error)) from None


def _better(search: Search, child: Individual, original: Sequence[float] | None) -> bool:
    """Whether the child beats the original in an objective other than patch size (a broken
    original is beaten by any child that passes)."""
    if original is None:
        return True
    if child.objectives is None:
        return False
    return any(
        objective.minimised(value) < objective.minimised(before)
        for objective, value, before in zip(search.objectives, child.objectives, original, strict=True)
        if objective.name != "size"
    )


def _member(search: Search, individual: Individual) -> Member:
    values = individual.objectives
    named = None if values is None else {o.name: v for o, v in zip(search.objectives, values, strict=True)}
    minimised = tuple(o.minimised(v) for o, v in zip(search.objectives, values or search.worst(), strict=True))
    return Member(individual.id, individual.patch, named, minimised)


class _BreedingStoppedError(Exception):
    """Raised in the breeding thread when the generation's evaluation has stopped."""
