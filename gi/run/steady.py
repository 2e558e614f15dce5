"""The steady-state loop (search.steady_state): a candidate is bred as soon as an evaluator is
free and each result is taken in as it arrives, with no generation barrier.

The search breeds one candidate at a time (`gi.algorithms.steady.ask_one`, keeping up to a
population of offspring waiting on a model's answer, as a generational batch does, so its
requests are in flight while evaluators work) and is told each result on its own
(`gi.algorithms.steady.tell_one`). Its batch is an `ArrivalBatch`: of the offspring waiting on a
model, the one whose answer came first becomes a candidate first, so a slow reply holds up no
other. It breeds when an evaluator is free, and also when an answer is in while every evaluator
is busy (up to a candidate waiting per evaluator), so that answers taken make room for new
requests and a freed evaluator starts at once. Every `population` results make a generation:
the operators learn from them, the held-out tests run on the front's new members, the islands
migrate, and a checkpoint is written. The checkpoint holds the candidates still being
evaluated, to be evaluated again on resume, and the offspring still waiting on a model's
answer, their requests left in flight: each operator says what it keeps of a proposal
(`Operator.suspend`) and asks again for the same one on resume (`Operator.resume`: the reply
cache has the answer if it came before the run stopped). An operator that cannot keep one
makes the generation's close wait for the answers, as an older gi always did (a run it began
has no meta key CARRY_META, and goes on so).

What the search does depends on the order in which it breeds, takes the model's answers and
takes results in, which the speed of the model and the evaluators decides. That order is
recorded as it happens: the run store's `arrivals` are its events ("bred": a call of `ask_one`,
how many candidates it made and the order in which it took answers, as each one's place among
the offspring waiting then; "topped": offspring made ahead, likewise; "told": whose result was
taken in, committed with its evaluation; "settled": the order of the answers a closing
generation waited for, where it waited). A resumed run restores its last checkpoint and follows
the events recorded after it (the generator and the operators' state are the checkpoint's, a
model's replies come from the reply cache, results from the store), then goes on live; `gi replay`
follows the recorded run's events from the start, offline. A run begun by an older gi, which
took the answers oldest first and recorded no order (its store lacks the meta key
ANSWER_ORDER_META), goes on taking them oldest first, resumed or replayed. So one seed and the
recorded order fix a run: it resumes exactly wherever it was killed, and its replay reaches the
same front.
"""

from __future__ import annotations

import collections
import queue
from collections.abc import Callable
from typing import Any

from gi.algorithms.steady import ask_one, settle, start_with_told, tell_one, top_up
from gi.algorithms.variation import ArrivalBatch, Batch, Candidate, OrderError
from gi.config.sections import SearchSection
from gi.engine.backends.base import Result
from gi.engine.held_out import front_members
from gi.engine.store import RunStore
from gi.model.errors import StoreError
from gi.model.results import Evaluation
from gi.populations import Individual
from gi.run.in_flight import AnswerBell, Flight, answer_in, resumed, suspended
from gi.run.loop import RunLoop

#: The store's meta key of the loop's state at the last checkpoint.
STEADY = "steady_state"
#: The store's meta key saying how the run takes a model's answers ("arrival": as they arrive).
ANSWER_ORDER_META = "steady_order"
#: The store's meta key saying that a generation's close keeps the model's requests in flight
#: (in its checkpoint) rather than waiting for their answers.
CARRY_META = "steady_carry"


class SteadyLoop(RunLoop):
    """A steady-state search: breed while an evaluator is free, take results as they arrive."""

    #: The results told in the generation under way: candidate, evaluation, individual.
    told_now: list[tuple[Candidate, Evaluation, Individual]]
    #: The generation's batch: the candidates bred in it, and the offspring waiting on an answer.
    batch: Batch

    def run(self, limits: SearchSection, baseline: Evaluation, elapsed: Callable[[], float]) -> None:
        search, store = self.search, self.storage.store
        saved: dict[str, Any] = store.get_meta(STEADY) or {}
        if saved.get("stopped"):  # a finished run run again: its report is rewritten
            self.stopped = dict(saved["stopped"])
            return
        recorded = self.storage.measurements.recorded
        self.limits, self.baseline, self.elapsed = limits, baseline, elapsed
        self.population = search.settings.population
        self.slots = max(1, self.evaluations.choice.workers)
        # Offspring waiting on a model's answer: as many as a generational batch lets wait.
        default = self.population if any(operator.waits for operator in self.operators) else 0
        self.ahead = int(saved.get("ahead", (_steady(recorded) or {}).get("ahead", default)))
        self.event = int(saved.get("events", 0))  # events before the checkpoint
        self.logged = store.count_arrivals()  # events this store holds
        self.bred, self.told = int(saved.get("bred", 0)), int(saved.get("told", 0))
        self.original = search.program.tree_hash
        self.known = store.individual_hashes()  # programs of the checkpointed generations
        #: Programs told so far (what `_teach` calls new), and bred so far (the budget).
        self.programs = self.known | {self.original}
        self.flights: dict[str, Flight] = {}
        for entry in saved.get("in_flight", []):
            flight = Flight.from_json(entry, search.program)
            self.flights[flight.candidate.id] = flight
        self.bred_programs = self.programs | {f.candidate.variant.tree_hash for f in self.flights.values()}
        #: Results as they come (and, with no result, a model's answer coming in: `_room`).
        self.arrivals: queue.SimpleQueue[tuple[str, Result | None]] = queue.SimpleQueue()
        self.bell = AnswerBell(lambda: self.arrivals.put(("", None)))
        #: Programs being evaluated, with the candidates (after the first) that wait for them.
        self.evaluating: dict[str, list[str]] = {}
        self.stopping: str | None = None
        self.scripted = True
        #: Whether the generation closing now follows a recorded "settled" event.
        self.settled_recorded = False
        #: Whether the batch takes a model's answers as they arrive (an `ArrivalBatch`), or the
        #: oldest first (a `Batch`), as the older gi that began this run (or the recorded one) did.
        self.by_arrival = _by_arrival(store, recorded)
        #: Whether a generation's close keeps the offspring waiting on a model's answer (written
        #: into its checkpoint, asked again on resume) or, as an older gi did, waits for them.
        self.carries = _carries(store, recorded)
        if search.started:
            self._next_generation()
            self.batch.queue.extend(resumed(saved.get("waiting", []), search))
        else:
            self.batch = self._new_batch(0)
            self._open_generation()
        self.script = collections.deque((recorded or store).arrivals(self.event))
        while self.script:
            kind, individual, count = self.script.popleft()
            self._follow(kind, individual, count)
        if recorded is not None and not self.stopping:
            raise StoreError(
                f"{self.replay_of}: the recorded run's events end before its search did (an unfinished run?)"
            )
        self.scripted = False
        self._order(None)  # from here, the answers' arrival decides
        for flight in list(self.flights.values()):
            if not flight.dispatched:
                self._dispatch(flight)
        self._live()
        self._finish()

    # --- following recorded events, then live ---------------------------------------------

    def _follow(self, kind: str, individual: str, count: int) -> None:
        """Do again what the recorded event says, with the evaluation the store holds and the
        model's answers taken in the recorded order."""
        where = self.replay_of or self.storage.store.path
        otherwise = f"{where}: the search bred otherwise than the run recorded (another gi or program?)"
        if kind in ("bred", "topped"):
            self._order(individual)
            try:
                made = self._breed() if kind == "bred" else self._top_up()
            except OrderError:
                raise StoreError(otherwise) from None
            if len(made) != count or _left_over(self.batch):
                raise StoreError(otherwise)
            return
        if kind == "settled":  # a told event that closed a generation takes it first
            raise StoreError(otherwise)
        flight = self.flights.get(individual)
        evaluation = None if flight is None else self.evaluations.known(flight.candidate)
        if flight is None or evaluation is None:
            raise StoreError(f"{where}: the recorded arrival of {individual} matches nothing the search bred")
        settled = self.script[0] if self.script and self.script[0][0] == "settled" else None
        if settled is not None:  # the order of the answers the generation this result closes waited for
            self.script.popleft()
        self._order(settled[1] if settled else "", lenient=settled is None)
        self.settled_recorded = settled is not None
        batch = self.batch
        try:
            self._take(flight, evaluation)
        except OrderError:
            raise StoreError(otherwise) from None
        if _left_over(batch):
            raise StoreError(otherwise)  # answers the run took that this one did not wait for
        self.settled_recorded = False

    def _live(self) -> None:
        """Breed while an evaluator is free (or a model's answer is in, see `_room`) and no limit
        says stop, keep a model's requests in flight, and take each result in."""
        while True:
            while self.stopping is None and self._room():
                if not self._breed():
                    break  # tries ran out: wait for a result that changes the search
            if self.stopping is None and self.ahead and self.flights:
                self._top_up()
            if not self.flights:
                return
            self.bell.ring_on(self.batch.queue)
            identifier, result = self.arrivals.get()
            if result is not None:
                self._take(self.flights[identifier], result())

    def _room(self) -> bool:
        """Whether to breed now: an evaluator is free, or an answer the batch waits for is in and
        fewer than `slots` candidates wait for an evaluator. Taking answers while every evaluator
        is busy keeps the model's requests in flight (an answer taken makes room for a request),
        and a freed evaluator starts on a waiting candidate at once."""
        if len(self.flights) < self.slots:
            return True
        return len(self.flights) < 2 * self.slots and answer_in(self.batch.queue)

    # --- breeding and evaluating ------------------------------------------------------------

    def _breed(self) -> list[Candidate]:
        """One call of `ask_one`, recorded, its candidates handed on; then whether a limit says
        to breed no more (search.generations: as many candidates as a generational run's;
        search.max_evaluations; nothing new to breed and nothing in evaluation). Decided here,
        by what was bred, so a resumed run and a replay decide alike."""
        made = ask_one(self.search, self.batch, self.ahead)
        self._record("bred", self._taken(), count=len(made))
        for candidate in made:
            self._fly(candidate)
        self._limits(made)
        return made

    def _limits(self, made: list[Candidate]) -> None:
        budget = self.limits.max_evaluations
        if self.bred >= self.population * (self.limits.generations + 1):
            self.stopping = self.stopping or "generations"
        elif budget is not None and len(self.bred_programs - {self.original}) >= budget:
            self.stopping = self.stopping or "max_evaluations"
        elif not made and not self.flights:
            self.stopping = self.stopping or "nothing new"

    def _top_up(self) -> list[Candidate]:
        """Offspring made ahead, recorded (a candidate it makes is handed on; limits as `_breed`)."""
        made = top_up(self.search, self.batch, self.ahead)
        self._record("topped", self._taken(), count=len(made))
        for candidate in made:
            self._fly(candidate)
        self._limits(made)
        return made

    def _record(self, kind: str, individual: str = "", count: int = 0) -> int | None:
        """Number the next event, and store it unless the store has it; the number to store a
        told event under with its evaluation (None: the store has it)."""
        number, self.event = self.event, self.event + 1
        if number < self.logged:
            return None
        if kind == "told":
            return number
        self.storage.store.put_arrival(number, kind, individual, count)
        return None

    def _fly(self, candidate: Candidate) -> None:
        self.bred += 1
        self.bred_programs.add(candidate.variant.tree_hash)
        flight = self.flights[candidate.id] = Flight(candidate, self.batch.generation)
        if not self.scripted:
            self._dispatch(flight)

    def _dispatch(self, flight: Flight) -> None:
        """Hand a candidate to the evaluators, unless its program is evaluated (or being)."""
        flight.dispatched = True
        candidate = flight.candidate
        tree_hash = candidate.variant.tree_hash
        known = self.evaluations.known(candidate)
        if known is not None:
            self.arrivals.put((candidate.id, lambda: known))
        elif tree_hash in self.evaluating:
            self.evaluating[tree_hash].append(candidate.id)
        else:
            self.evaluating[tree_hash] = []
            self.evaluations.submit(candidate, lambda result: self.arrivals.put((candidate.id, result)))

    def _take(self, flight: Flight, evaluation: Evaluation) -> None:
        """Take one result in: store it with its event, tell the search, close a generation
        every `population` results."""
        candidate = flight.candidate
        del self.flights[candidate.id]
        tree_hash = candidate.variant.tree_hash
        if tree_hash not in self.evaluations.cache and not self.scripted and not self.storage.measurements.replaying:
            self.evaluations.busy_seconds += evaluation.seconds  # measured in this session
        own = self.evaluations.arrived(candidate, evaluation, flight.generation, self._record("told", candidate.id))
        for waiting in self.evaluating.pop(tree_hash, []):  # the same program, bred again meanwhile
            self.arrivals.put((waiting, lambda: self.evaluations.cache[tree_hash]))
        new = tree_hash not in self.programs
        self.programs.add(tree_hash)
        self.progress.evaluations += new
        self.progress.cache_hits += not new
        self.progress.done_in_generation += 1
        self.on_progress(self.progress, False)
        own = self._judged(candidate, own)
        child = tell_one(self.search, candidate, own, flight.generation)
        self.told_now.append((candidate, own, child))
        self.told += 1
        if self.search.started and self.told % self.population == 0:
            self._close_generation()

    def _judged(self, candidate: Candidate, own: Evaluation) -> Evaluation:
        """The result to tell: confirmed by every training test first when it ran only those that
        see its edits (tests.select) and would join the front or the grid, as a generational
        run's batch is (`RunLoop._confirmed`). The initial population is told whole: its front is
        confirmed when its last result comes in. A confirmation is recorded, so a resumed run
        and a replay find it where the run made it."""
        if self.search.started:
            return self._confirmed([candidate], [own])[0]
        if len(self.search.initial or []) + 1 < self.population:
            return own
        return self._confirm_initial([(candidate, own)])[-1]

    def _confirm_initial(self, more: list[tuple[Candidate, Evaluation]]) -> list[Evaluation]:
        """Confirm the front of the initial population told so far and `more` (about to be told),
        the individuals told already scored again by their confirmations; the evaluations of `more`."""
        search = self.search
        told = [(candidate, evaluation) for candidate, evaluation, _ in self.told_now]
        pairs = [*told, *more]
        confirmed = self._confirmed([c for c, _ in pairs], [e for _, e in pairs])
        initial = search.initial or []
        search.initial = [
            (search.individual(c, e, child.generation), e)
            for (c, _), e, (child, _) in zip(told, confirmed[: len(told)], initial, strict=True)
        ] or None
        self.told_now = [(c, e, child) for (c, _), (child, e) in zip(told, search.initial or [], strict=True)]
        return confirmed[len(told) :]

    # --- generations ------------------------------------------------------------------------

    def _open_generation(self) -> None:
        """Start counting a generation: its results, and what was known at its start."""
        self.told_now = []
        self.programs_before = set(self.programs)
        self.counted_before = self.progress.evaluations
        self.front_before = {member.tree_hash for member in front_members(self.search.archive.members)}
        self.progress.generation = self.search.generation + (0 if self.search.started else 1)
        self.progress.batch_size = self.population
        self.progress.done_in_generation = 0
        self._start_clock()

    def _close_generation(self, stop: dict[str, Any] | None = None) -> None:
        """End a generation (`stop`: the last, partial one): keep the offspring waiting on an
        answer for the checkpoint (or else wait for their answers), migrate, teach the operators,
        run the held-out tests, checkpoint, and decide whether to go on."""
        search = self.search
        waiting = suspended(self.batch.queue) if self.carries and self.stopping is None else None
        if self.stopping is None and waiting is None:  # each candidate to the evaluators as its answer comes
            while self.batch.waiting:
                before = len(self.batch.candidates)
                self.batch.settle_one()
                for candidate in self.batch.candidates[before:]:
                    self._fly(candidate)
            taken = self._taken()
            # Following a record that has no "settled" event here (its run was killed before it
            # could write one), the answers were taken oldest first and no event numbers them.
            if taken and (not self.scripted or self.settled_recorded):
                self._record("settled", taken, count=len(taken.split()))
        search.generation_done()
        candidates = [candidate for candidate, _, _ in self.told_now]
        evaluations = [evaluation for _, evaluation, _ in self.told_now]
        children = [child for _, _, child in self.told_now]
        self._note_stops()
        self._teach(candidates, evaluations, children, self.baseline, self.programs_before, self.counted_before)
        gap = None
        if self.held_out is not None:
            new = [m for m in front_members(search.archive.members) if m.tree_hash not in self.front_before]
            if self.feedback is not None:  # counterexamples join the held-out tests first
                self.feedback.generation(new, self.evaluations.cache, self.baseline)
            gap = self.held_out.generation(search.generation, new, self.evaluations.cache, self.baseline.tests)
        fresh = {child.tree_hash for child in children} - self.known
        self.known |= fresh
        state = {
            "ahead": self.ahead,
            "events": self.event,
            "bred": self.bred,
            "told": self.told,
            "in_flight": [flight.to_json() for flight in self.flights.values()],
            "waiting": waiting or [],
            "stopped": stop,
        }
        self._checkpoint(children, gap, new_programs=len(fresh), meta={STEADY: state})
        self.on_progress(self.progress, True)
        if stop is None:
            self.stopping = self.stopping or self._stop_between()
            if self.stopping is not None and not self.flights:
                self._mark_stopped()  # that was the last generation
            else:
                carried = self.batch.queue if self.carries else ()
                self._next_generation()
                self.batch.queue.extend(carried)

    def _next_generation(self) -> None:
        """The next generation's batch, and the original timed again for it (drift)."""
        search = self.search
        search.generation += 1
        self.batch = self._new_batch(search.generation)
        self.timing.remeasure(search.generation)
        search.evaluated = len(self.known - {self.original})
        if self.evaluations.evaluator.settings.fail_fast:  # for the evaluations started from here
            baseline = list(self.evaluations.evaluator.baseline_tests or {})
            self.evaluations.evaluator.test_order = self.evaluations.failure_order.order(baseline)
        self._open_generation()

    def _new_batch(self, generation: int) -> Batch:
        """The batch of `generation`, holding the offspring made ahead too; while the run follows
        its record, it takes the answers in the recorded order (`_follow` gives it)."""
        batch = self.search.batch(generation, mutations=self.population + self.ahead, arrivals=self.by_arrival)
        if isinstance(batch, ArrivalBatch):
            batch.recorded_order = collections.deque() if self.scripted else None
        return batch

    def _order(self, recorded: str | None, lenient: bool = False) -> None:
        """Have the batch take the model's answers in the `recorded` order ("2 0"; past its end,
        oldest first where `lenient`, else the run has gone otherwise), or as they arrive (None)."""
        if isinstance(self.batch, ArrivalBatch):
            self.batch.recorded_order = None if recorded is None else collections.deque(_picks(recorded))
            self.batch.lenient = lenient

    def _taken(self) -> str:
        """The order the batch took the model's answers in since last asked, to record."""
        return _picks_text(self.batch.take_picked()) if isinstance(self.batch, ArrivalBatch) else ""

    def _stop_between(self) -> str | None:
        """Why to breed no more after this generation (search.patience, search.max_seconds)."""
        reason = self._stop(self.limits, self.elapsed())
        return reason if reason in ("nothing new", "max_seconds") else None

    def _finish(self) -> None:
        """Wait for the answers still awaited (never used: their requests go into the reply cache,
        so a replay, which makes the same requests, finds them); close the last, partial
        generation, if results came in after the last checkpoint, and say in the store why the
        search stopped. They are taken oldest first, as no event records their order."""
        self._order("", lenient=True)
        settle(self.batch)
        if (self.storage.store.get_meta(STEADY) or {}).get("stopped"):
            self.stopped = dict((self.storage.store.get_meta(STEADY) or {})["stopped"])
            return
        search = self.search
        if not search.started:  # fewer results than a population: the initial one is what came
            self._confirm_initial([])
            start_with_told(search)
        if search.started and self.told_now:
            self._close_generation(stop=self._why_stopped())
        self._mark_stopped()

    def _why_stopped(self) -> dict[str, Any]:
        return {
            "reason": self.stopping or "nothing new",
            "generation": max(self.search.generation, 0),
            "evaluations": len(self.known - {self.original}),
        }

    def _mark_stopped(self) -> None:
        """Say in the store, after the last checkpoint, why the search stopped: a finished run
        run again does not search again."""
        self.stopped = self._why_stopped()
        store = self.storage.store
        state = dict(store.get_meta(STEADY) or {})
        state["stopped"] = self.stopped
        store.set_meta(STEADY, state)


def _by_arrival(store: RunStore, recorded: RunStore | None) -> bool:
    """Whether the run takes a model's answers as they arrive: a new run does, and says so in its
    store (meta ANSWER_ORDER_META); a run begun, or recorded, by a gi that took the oldest first
    goes on so."""
    fresh = recorded is None and not store.count_arrivals()
    by_arrival = fresh or (recorded or store).get_meta(ANSWER_ORDER_META) == "arrival"
    if by_arrival:
        store.set_meta(ANSWER_ORDER_META, "arrival")
    return by_arrival


def _carries(store: RunStore, recorded: RunStore | None) -> bool:
    """Whether a generation's close keeps the model's requests in flight: a new run does, and
    says so in its store (meta CARRY_META); a run begun, or recorded, by a gi that waited for
    them goes on waiting."""
    fresh = recorded is None and not store.count_arrivals()
    carries = fresh or bool((recorded or store).get_meta(CARRY_META))
    if carries:
        store.set_meta(CARRY_META, True)
    return carries


def _left_over(batch: Batch) -> bool:
    """Whether the batch was given a recorded order of answers it did not take."""
    return isinstance(batch, ArrivalBatch) and bool(batch.recorded_order)


def _picks(text: str) -> list[int]:
    """The recorded order of answers ("2 0": the third offspring waiting, then the first)."""
    return [int(place) for place in text.split()]


def _picks_text(picks: list[int]) -> str:
    return " ".join(str(place) for place in picks)


def _steady(store: RunStore | None) -> dict[str, Any] | None:
    return None if store is None else store.get_meta(STEADY)
