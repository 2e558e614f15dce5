"""Breeding one candidate at a time, for a steady-state search (gi/run/steady.py).

Any `Search` breeds this way with its own makers: until the initial population is told, the
original and one-edit patches (`Search.initial_maker`), then the algorithm's offspring
(`Search.maker`). A batch holds the candidates bred since the last generation closed and the
offspring still waiting on an operator's answer (a model's). A `Batch` takes those in the order
they were made, so what is bred depends only on the calls made and what was told between them;
an `ArrivalBatch` (the steady-state loop's) takes the first answered, and lists its choices, so
that what is bred depends on that order too, which the loop records.
"""

from __future__ import annotations

from collections.abc import Callable

from gi.algorithms.base import Search
from gi.algorithms.variation import BREEDING_TRIES, Batch, Candidate, Offspring
from gi.model.patch import Patch
from gi.model.results import Evaluation
from gi.populations import Individual


def ask_one(search: Search, batch: Batch, ahead: int = 0) -> list[Candidate]:
    """Breed until `batch` holds one candidate more, keeping up to `ahead` offspring waiting on an
    operator's answer; the new candidates (several when waiting ones came in together, none when
    tries ran out). The first is the original."""
    before = len(batch.candidates)
    if not search.started and batch.generation == 0 and not batch.candidates and not batch.waiting:
        batch.offer(Offspring(Patch(), (), "original", None))
    else:
        search.fill(batch, _maker(search, batch), before + 1, ahead)
    return batch.candidates[before:]


def top_up(search: Search, batch: Batch, ahead: int) -> list[Candidate]:
    """Make offspring until `ahead` of them wait in `batch` on an operator's answer, waiting for
    none (a model's requests stay in flight while every evaluator is busy); stops at the first
    offspring that needs no answer, which becomes a candidate at once when none waits before it
    (in an `ArrivalBatch`, always). The new candidates."""
    before = len(batch.candidates)
    make = _maker(search, batch)
    tries = 0
    while batch.waiting < ahead and len(batch.candidates) == before and tries < BREEDING_TRIES * ahead:
        tries += 1
        offspring = make()
        if offspring is not None:
            batch.offer(offspring)
            if offspring.later is None:
                break
    return batch.candidates[before:]


def settle(batch: Batch) -> list[Candidate]:
    """Wait for every offspring `batch` still holds for an operator's answer; the candidates they
    made."""
    before = len(batch.candidates)
    while batch.waiting:
        batch.settle_one()
    return batch.candidates[before:]


def tell_one(search: Search, candidate: Candidate, evaluation: Evaluation, generation: int) -> Individual:
    """Take one evaluation as it arrives; `generation` is the one the candidate was bred in. The
    initial population is taken whole once `population` of it are told (the search's generation
    becomes 0); later ones join it one by one, by the algorithm's survival."""
    child = search.individual(candidate, evaluation, generation)
    if not search.started:
        search.initial = [*(search.initial or []), (child, evaluation)]
        if len(search.initial) >= search.settings.population:
            start_with_told(search)
        return child
    search.take([child], [evaluation])
    return child


def start_with_told(search: Search) -> None:
    """Take the initial population as far as it was told (a search that stops before a
    population of results came in)."""
    if not search.started and search.initial:
        children, evaluations = zip(*search.initial, strict=True)
        search.initial = None
        search.generation = 0
        search.take(list(children), list(evaluations), initial=True)


def _maker(search: Search, batch: Batch) -> Callable[[], Offspring | None]:
    """The search's maker for `batch`: the initial population's until it is told."""
    return search.initial_maker() if not search.started and batch.generation == 0 else search.maker(batch.generation)
