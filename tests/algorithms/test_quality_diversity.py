"""MAP-Elites, islands and steady-state asking and telling on the tiny problem of
test_algorithms.py: synthetic evaluations fed to the algorithms, no pytest runs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence

import numpy as np
import pytest

from gi.algorithms import Islands, MapElites, Search
from gi.algorithms.steady import ask_one, settle, tell_one
from gi.algorithms.strategies import IslandPlan, IslandSettings, RandomMigration, RingMigration, RoundRobin
from gi.algorithms.variation import Candidate, operator_of_label
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.populations import Individual
from tests.algorithms.test_algorithms import SOURCE, make_search, run, synthetic


@pytest.fixture
def program(make_program: Callable[[str], Program]) -> Program:
    return make_program(SOURCE)


def test_map_elites_keeps_the_best_program_of_each_cell_and_breeds_from_the_elites(program: Program) -> None:
    search = make_search(program, "map_elites")
    assert isinstance(search, MapElites) and search.grid is not None and search.grid_settings is not None
    told: list[Individual] = []
    for _ in range(6):
        elites = {elite.id for elite in search.grid.elites.values()}
        batch = search.ask()
        if search.generation >= 0:
            assert all(set(c.parents) <= elites for c in batch), "every parent is an elite of the grid"
        told += search.tell(batch, [synthetic(c) for c in batch])
    features = search.grid_settings.features
    assert search.population == search.grid.members()
    assert 1 < len(search.grid.elites) < search.grid.cells
    for cell, elite in search.grid.elites.items():
        assert features.cell(elite.features) == cell
        rivals = [i for i in told if i.fitness.feasible and features.cell(i.features) == cell]
        assert not any(rival.fitness.dominates(elite.fitness) for rival in rivals)
    assert search.diversity() == {"qd_score": search.grid.qd_score(), "coverage": search.grid.coverage()}


def test_every_algorithm_with_features_keeps_the_grid_of_what_it_evaluated(program: Program) -> None:
    """Not only MAP-Elites: with features, NSGA-II's grid holds a program of every cell any
    feasible program it was told of fell in, whether or not its population kept one."""
    search = make_search(program, "nsga2", grid=True)
    assert search.grid is not None and search.grid_settings is not None
    told: list[Individual] = []
    for _ in range(5):
        batch = search.ask()
        told += search.tell(batch, [synthetic(c) for c in batch])
    features = search.grid_settings.features
    cells = {features.cell(i.features) for i in told if i.fitness.feasible}
    assert set(search.grid.elites) == cells
    assert search.diversity() == {"qd_score": search.grid.qd_score(), "coverage": len(cells) / search.grid.cells}


def plan(*islands: IslandSettings, migration: object = None, interval: int = 2) -> IslandPlan:
    return IslandPlan(tuple(islands), interval=interval, migration=migration or RingMigration())  # type: ignore[arg-type]


STATEMENTS = ("statement_delete", "statement_swap", "statement_copy")
NUMBERS = ("comparison_operator", "constant")


def islands_search(program: Program, island_plan: IslandPlan, seed: int = 1) -> Islands:
    search = make_search(program, "nsga2", seed=seed)  # for its arguments
    return Islands(
        program, search.objectives, search.constraint, search.variation.operators, search.variation.crossovers,
        search.settings.__class__(population=6, islands=island_plan), np.random.default_rng(seed),
        reference=search.reference, test_count=search.test_count,
    )  # fmt: skip


def test_islands_breed_in_turn_each_with_its_own_operators(program: Program) -> None:
    search = islands_search(program, plan(IslandSettings("nsga2", 3, STATEMENTS), IslandSettings("nsga2", 3, NUMBERS)))
    run(search, 1)
    first, second = search.islands
    assert first.population and second.population
    bred = []
    for _ in range(3):
        batch = search.ask()
        bred += [c.island for c in batch]
        for candidate in batch:
            made = {operator_of_label(part) for part in candidate.operator.split("+")} - {"drop"}
            allowed = set(STATEMENTS if candidate.island == 0 else NUMBERS) | {"concatenation", "uniform", "one_point"}
            assert made <= allowed, (candidate.island, candidate.operator)
        search.tell(batch, [synthetic(c) for c in batch])
        own = {c.id for c in batch if c.island == 1}
        assert {m.id for m in second.population if m.generation == search.generation} <= own
    assert abs(bred.count(0) - bred.count(1)) <= 2, "in turn: equal shares (a failed try passes a turn)"


class Recording(RingMigration):
    """The ring, noting when it is asked and whom it sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, list[str]]] = []

    def emigrants(self, island: object, count: int, rng: np.random.Generator) -> list[Individual]:
        chosen = super().emigrants(island, count, rng)  # type: ignore[arg-type]
        self.sent.append((len(self.sent), [member.id for member in chosen]))
        return chosen


def test_islands_send_their_best_along_the_ring_every_interval(program: Program) -> None:
    migration = Recording()
    # The second island's population has room for all: what it receives, it keeps.
    islands = (IslandSettings("nsga2", 3, STATEMENTS), IslandSettings("nsga2", 40, NUMBERS))
    search = islands_search(program, plan(*islands, migration=migration))
    run(search, 2)  # generations 0 and 1: no migration yet
    assert migration.sent == []
    before = {m.tree_hash for m in search.islands[1].population}
    run(search, 1)  # generation 2: each island sends to the other, after taking its children
    assert len(migration.sent) == 2
    first_front = {m.id: m for m in search.islands[0].front}
    sent = [first_front[identifier] for identifier in migration.sent[0][1]]
    assert (sent and all(m.fitness.feasible for m in sent)) or not any(m.fitness.feasible for m in first_front.values())
    kept = {m.tree_hash for m in search.islands[1].population}
    assert {m.tree_hash for m in sent} <= kept
    assert {m.tree_hash for m in sent} - before, "a migrant the island did not have"
    run(search, 1)  # generation 3: none
    assert len(migration.sent) == 2


def test_the_built_in_routes_and_island_choices() -> None:
    rng = np.random.default_rng(5)
    assert RingMigration().routes(3, rng) == [(0, 1), (1, 2), (2, 0)]
    assert RingMigration().routes(1, rng) == []
    for _ in range(20):
        assert all(sender != receiver for sender, receiver in RandomMigration().routes(4, rng))
    turns = RoundRobin()
    assert [turns.choose([object()] * 3, rng) for _ in range(5)] == [0, 1, 2, 0, 1]  # type: ignore[list-item]
    again = RoundRobin()
    again.restore(json.loads(json.dumps(turns.state())))
    assert again.choose([object()] * 3, rng) == 2  # type: ignore[list-item]


# --- steady state -----------------------------------------------------------------------------------


def steady(search: Search, order: Sequence[int], total: int, ahead: int = 0) -> list[tuple[str, str]]:
    """Breed and tell one at a time: keep `len(order)`-ish in flight, and tell the in-flight
    candidate at position `order[k % len(order)]` each time. Returns (id, patch) as bred."""
    bred: list[tuple[str, str]] = []
    flying: list[tuple[Candidate, int]] = []
    batch = search.batch(0)
    step = 0
    while len(bred) < total:
        while len(flying) < 3 and len(bred) < total:
            made = ask_one(search, batch, ahead)
            assert made, "the tiny program always has a new candidate"
            for candidate in made:
                flying.append((candidate, batch.generation))
                bred.append((candidate.id, json.dumps(candidate.patch.to_json())))
        candidate, generation = flying.pop(order[step % len(order)] % len(flying))
        step += 1
        tell_one(search, candidate, synthetic(candidate), generation)
        if search.started and search.generation == batch.generation and len(bred) > 6:
            settle(batch)
            search.generation += 1
            batch = search.batch(search.generation)
    return bred


@pytest.mark.parametrize("algorithm", ["nsga2", "map_elites", "local_search", "islands"])
def test_one_seed_and_one_order_of_arrivals_fix_a_steady_state_search(program: Program, algorithm: str) -> None:
    first = steady(make_search(program, algorithm), [0, 2, 1], 30)
    assert first == steady(make_search(program, algorithm), [0, 2, 1], 30)
    assert first[0][1] == "[]", "the original comes first"
    assert first != steady(make_search(program, algorithm), [2, 0, 0, 1], 30), "another order, another search"


def test_the_initial_population_is_taken_once_a_population_of_it_is_told(program: Program) -> None:
    search = make_search(program, "nsga2")
    batch = search.batch(0)
    candidates = [c for _ in range(8) for c in ask_one(search, batch)]
    assert all(c.id.startswith("g0-") for c in candidates) and candidates[0].patch.edits == ()
    assert all(len(c.patch) == 1 for c in candidates[1:]), "one-edit patches, as every initial generation"
    for index, candidate in enumerate(candidates[:6]):
        assert not search.started
        tell_one(search, candidate, synthetic(candidate), 0)
        assert search.started == (index == 5)
    assert len(search.population) == 6 and search.generation == 0
    tell_one(search, candidates[6], synthetic(candidates[6]), 0)
    assert len(search.population) == 6, "later ones join by survival"


def test_a_result_that_would_take_a_cell_of_the_grid_joins_though_the_front_dominates_it(program: Program) -> None:
    """`joining` names what a confirmation by every test must settle first (tests.select): the
    grid's elites count (the QD-score) as the front's members do."""
    search = make_search(program, "map_elites")
    run(search, 2)
    assert search.grid is not None
    features = search.grid_settings.features  # type: ignore[union-attr]
    candidate = search.ask()[0]
    # Complex and large: dominated by the original, in a cell no program reached.
    measures = next(
        {"failed_tests": 0.0, "complexity": 15.5, "size": size}
        for size in (1.0, 3.0, 6.0, 9.0)
        if features.cell((15.5, size)) not in search.grid.elites
    )
    costly = Evaluation(Status.OK, candidate.variant.tree_hash, measures)
    child = search.individual(candidate, costly, search.generation + 1)
    assert any(member.fitness.dominates(child.fitness) for member in search.archive.members)
    assert search.joining([candidate], [costly]) == [0]
    elites = dict(search.grid.elites)
    assert search.joining([candidate], [dataclasses.replace(costly, measures={**measures, "failed_tests": 1.0})]) == []
    assert search.grid.elites == elites, "nothing changes"
