"""The run loop: ask, evaluate, tell, checkpoint, one generation at a time.

The loop knows the search (`gi.algorithms.Search`) and the run's services: the evaluation
service (cache, backend, measures), the storage (checkpoints), the original's timing (drift)
and the held-out tests (the generalisation gap, after `tell`, so they never steer selection).
When an operator's proposals wait on a server (the language model's), breeding runs in a thread
of its own and each candidate is evaluated as soon as it is bred.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gi.algorithms import Search
from gi.algorithms.variation import Candidate
from gi.config.sections import SearchSection
from gi.engine.held_out import HeldOut, front_members
from gi.engine.progress import Progress, ProgressCallback
from gi.engine.recorded import as_is
from gi.engine.service import EvaluationService
from gi.engine.storage import RunStorage
from gi.engine.timing import OriginalTiming
from gi.model.errors import LLMError
from gi.model.results import Evaluation
from mutators import Operator
from mutators.base import OfflineMissError
from populations import Individual


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
    ) -> None:
        self.search = search
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
            before = {member.tree_hash for member in front_members(search.archive.members)}
            generation = search.generation + 1
            self.progress.generation = generation
            if generation > 0:
                self.timing.remeasure(generation)
            evaluated = len(self.known - {original})
            search.batch_limit = None if limits.max_evaluations is None else max(1, limits.max_evaluations - evaluated)
            search.evaluated = evaluated
            candidates, evaluations = self._breed_and_evaluate(generation)
            if not candidates:
                stop = "nothing new"  # the search has no program left to propose
                break
            self._note_stops()
            children = search.tell(candidates, evaluations)
            gap = None
            if self.held_out is not None:  # after tell: what the search chose is already settled
                new = [m for m in front_members(search.archive.members) if m.tree_hash not in before]
                gap = self.held_out.generation(search.generation, new, self.evaluations.cache, baseline.tests)
            fresh = {child.tree_hash for child in children} - self.known
            self.known |= fresh
            self._checkpoint(children, gap, new_programs=len(fresh))
            self.on_progress(self.progress, True)
        self.stopped = {"reason": stop, "generation": search.generation, "evaluations": len(self.known - {original})}

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

    def _note_stops(self) -> None:
        for operator in self.operators:
            reason = operator.stopped()
            if reason:
                self.progress.warn(f"{reason}; the run goes on with the other operators")

    def _checkpoint(self, children: Sequence[Individual], gap: dict[str, Any] | None, *, new_programs: int) -> None:
        search, progress = self.search, self.progress
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
        }
        self.storage.save_generation(search, children, stats, self.operators, gap)

    def _breed_and_evaluate(self, generation: int) -> tuple[list[Candidate], list[Evaluation]]:
        """The generation's batch and its evaluations. When an operator waits on a server,
        breeding runs in a thread of its own and each candidate is evaluated as soon as it is
        bred, so the replies are awaited while earlier candidates run. The batch is bred in one
        thread in a fixed order and results are taken in its order, so the search does not
        depend on which finishes first."""
        expected = self.search.settings.population
        if not any(operator.waits for operator in self.operators):  # breeding takes milliseconds
            return self.evaluations.evaluate(self._ask(generation), generation, expected)
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
        breeder.start()
        try:
            return self.evaluations.evaluate(arriving(), generation, expected)
        finally:
            # Never leave breeding running (asking the model, drawing from the generator)
            # after the generation: it ends at its next candidate, or its current request.
            stop.set()
            breeder.join()

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


class _BreedingStoppedError(Exception):
    """Raised in the breeding thread when the generation's evaluation has stopped."""
