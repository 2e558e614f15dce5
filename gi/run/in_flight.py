"""What a steady-state run (gi/run/steady.py) has in flight, and how its checkpoint keeps it: the
candidates bred and not yet taken in (`Flight`: evaluated again on resume), and the offspring
still waiting on an operator's answer (a model's), kept with their requests left in flight
(`suspended`) and asked for again on resume (`resumed`); and the bell that wakes the loop when
one of those answers comes (`AnswerBell`)."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from gi.algorithms.base import Search
from gi.algorithms.variation import Candidate, Later, Offspring
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.mutators.base import arrival


@dataclass
class Flight:
    """A candidate bred and not yet taken in: the generation it was bred in, and whether it was
    handed to the evaluators (or found evaluated) in this session."""

    candidate: Candidate
    generation: int
    dispatched: bool = False

    def to_json(self) -> dict[str, Any]:
        """The flight as a checkpoint holds it (to be evaluated again on resume)."""
        candidate = self.candidate
        return {
            "id": candidate.id,
            "generation": self.generation,
            "patch": candidate.patch.to_json(),
            "parents": list(candidate.parents),
            "operator": candidate.operator,
            "edits": Patch(candidate.edits).to_json(),
            "island": candidate.island,
        }

    @classmethod
    def from_json(cls, entry: dict[str, Any], program: Program) -> Flight:
        """A candidate a checkpoint had in evaluation, made again from its patch on `program`."""
        patch = Patch.from_json(entry["patch"])
        patch.check(program)
        edits = Patch.from_json(entry["edits"]).edits
        candidate = Candidate(
            entry["id"], patch, apply(program, patch), tuple(entry["parents"]), entry["operator"], edits,
            entry.get("island"),
        )  # fmt: skip
        return cls(candidate, int(entry["generation"]))


def suspended(waiting: Iterable[Offspring]) -> list[dict[str, Any]] | None:
    """The offspring waiting on an operator's answer, as a checkpoint keeps them (each operator
    keeps its proposal, `Operator.suspend`), in order; None when an operator cannot keep one:
    the generation's close then waits for the answers."""
    kept = []
    for offspring in waiting:
        later = offspring.later
        suspend = None if later is None else getattr(later.operator, "suspend", None)
        saved = None if later is None or suspend is None else suspend(later.deferred)
        if later is None or saved is None:
            return None
        kept.append({
            "base": later.base.to_json(), "index": later.index, "parents": list(offspring.parents),
            "label": offspring.operator, "island": offspring.island, "operator": later.operator.name,
            "deferred": saved,
        })  # fmt: skip
    return kept


def resumed(kept: list[dict[str, Any]], search: Search) -> list[Offspring]:
    """The offspring a checkpoint kept waiting, their operators asked again in the order the run
    asked them (`Operator.resume`); one whose operator cannot (a budget spent, say) is lost."""
    program, found = search.program, []
    for entry in kept:
        base = Patch.from_json(entry["base"])
        base.check(program)
        operator = search.variation.by_name.get(entry["operator"])
        resume = None if operator is None else getattr(operator, "resume", None)
        deferred = None if operator is None or resume is None else resume(entry["deferred"], program, base)
        if operator is None or deferred is None:
            continue
        later = Later(operator, deferred, base, entry["index"])
        found.append(Offspring(base, tuple(entry["parents"]), entry["label"], None, (), later, entry["island"]))
    return found


def answer_in(waiting: Iterable[Offspring]) -> bool:
    """Whether the answer of one of the waiting offspring is in (one without the `Arriving`
    hook counts as in)."""
    for offspring in waiting:
        future = None if offspring.later is None else arrival(offspring.later.deferred)
        if future is None or future.done():
            return True
    return False


class AnswerBell:
    """Calls `ring` when the answer of an offspring it was shown comes (once per answer)."""

    def __init__(self, ring: Callable[[], None]) -> None:
        self.ring = ring
        self._heard: weakref.WeakSet[Future[Any]] = weakref.WeakSet()

    def ring_on(self, waiting: Iterable[Offspring]) -> None:
        """Ring when each of these offspring's answers comes (at once for one in already)."""
        for offspring in waiting:
            future = None if offspring.later is None else arrival(offspring.later.deferred)
            if future is not None and future not in self._heard:
                self._heard.add(future)
                future.add_done_callback(lambda _: self.ring())
