"""The rings of the original: ring 1 best first, each program once; ring 2 pairs partial repairs."""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pytest

from gi.algorithms import ALGORITHMS, Search, SearchSettings
from gi.algorithms.variation import Candidate
from gi.fitness.objectives import OBJECTIVES, Constraint
from gi.model.patch import Patch, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.mutators import CROSSOVERS, OPERATORS, MutationContext
from gi.mutators.neighbourhood import walk

SOURCE = """\
def shipping(weight, express):
    cost = 5
    if weight > 10:
        cost = cost + 2
    if express:
        cost = cost * 2
    return cost
"""
OPERATOR_NAMES = ("comparison_operator", "constant", "binary_operator", "negate", "statement_delete")
#: The original fails t_heavy (the `> 10` should be `>= 10`) and t_express (`* 2` should be `* 3`).
TESTS = ("t_light", "t_heavy", "t_express")


def make_search(program: Program, algorithm: str = "neighbourhood", seed: int = 1, **settings: float) -> Search:
    return ALGORITHMS.get(algorithm)(
        program,
        [OBJECTIVES.get("failed_tests"), OBJECTIVES.get("size")],
        Constraint.NONE,
        [OPERATORS.get(name) for name in OPERATOR_NAMES],
        [CROSSOVERS.get(name) for name in CROSSOVERS],
        SearchSettings(population=5, generations=9, **settings),  # type: ignore[arg-type]
        np.random.default_rng(seed),
        reference=(4.0, 11.0),
        test_count=3,
    )


def outcomes(candidate: Candidate) -> Evaluation:
    """The tests' verdicts by what the program says: `weight >= 10` fixes t_heavy, `cost * 3`
    fixes t_express, and without `return cost` t_light fails."""
    source = candidate.variant.sources["mod.py"]
    failing = set()
    if "weight > 10" in source or "weight >" not in source:
        failing.add("t_heavy")
    if "cost * 3" not in source:
        failing.add("t_express")
    if "return cost" not in source:
        failing.add("t_light")
    tests = {test: "failed" if test in failing else "passed" for test in TESTS}
    measures = {"failed_tests": float(len(failing)), "size": float(len(candidate.patch))}
    return Evaluation(Status.OK, candidate.variant.tree_hash, measures, tests=tests)


def run(search: Search, generations: int) -> list[list[Candidate]]:
    asked = []
    for _ in range(generations):
        batch = search.ask()
        asked.append(batch)
        search.tell(batch, [outcomes(c) for c in batch])
    return asked


@pytest.fixture
def program(make_program: Callable[[str], Program]) -> Program:
    return make_program(SOURCE)


def test_ring_one_comes_in_walk_order_each_program_once(program: Program) -> None:
    search = make_search(program)
    batches = run(search, 3)
    asked = [c.patch for batch in batches for c in batch]
    assert asked[0] == Patch(), "generation 0 starts from the original"
    singles = [patch for patch in asked[1:] if len(patch) == 1]
    context = MutationContext().bind(program)
    expected: list[Patch] = []
    seen = {program.tree_hash}
    for neighbour in walk(program, search.variation.operators, context):
        made = apply(program, Patch((neighbour.edit,)))
        if made.tree_hash not in seen:
            seen.add(made.tree_hash)
            expected.append(Patch((neighbour.edit,)))
    assert singles == expected[: len(singles)]
    hashes = [c.variant.tree_hash for batch in batches for c in batch]
    assert len(hashes) == len(set(hashes)), "no program twice"


def test_partial_repairs_are_paired_into_a_repair(program: Program) -> None:
    """Each bug is one edit away; neither edit alone passes every test, the pair does."""
    search = make_search(program)
    batches = run(search, 10)
    repairs = [c for batch in batches for c in batch if outcomes(c).measures["failed_tests"] == 0]
    assert repairs, "the two partial repairs were combined"
    assert all(len(c.patch) == 2 for c in repairs)
    found_at = next(i for i, batch in enumerate(batches) if any(c in repairs for c in batch))
    express = next(
        i
        for i, batch in enumerate(batches)
        for c in batch
        if len(c.patch) == 1 and outcomes(c).tests["t_express"] == "passed"
    )
    heavy = next(
        i
        for i, batch in enumerate(batches)
        for c in batch
        if len(c.patch) == 1 and outcomes(c).tests["t_heavy"] == "passed"
    )
    assert found_at == max(express, heavy) + 1, "the pair is tried in the batch after its second half was found"


def test_without_a_neighbourhood_share_nsga2_is_unchanged(program: Program) -> None:
    """neighbourhood = 0 (the default) draws exactly what NSGA-II drew before the rings."""
    plain = [[json.dumps(c.patch.to_json()) for c in batch] for batch in run(make_search(program, "nsga2"), 3)]
    zero = [
        [json.dumps(c.patch.to_json()) for c in batch]
        for batch in run(make_search(program, "nsga2", neighbourhood=0.0), 3)
    ]
    assert plain == zero
    assert make_search(program, "nsga2").rings is None


def test_nsga2_walks_the_rings_for_its_share_then_breeds(program: Program) -> None:
    search = make_search(program, "nsga2", neighbourhood=0.3)  # 3 of 10 generations
    batches = run(search, 5)
    assert all(not c.parents for batch in batches[:3] for c in batch), "the rings have no parents"
    assert any(c.parents for batch in batches[3:] for c in batch), "then NSGA-II breeds"


@pytest.mark.parametrize(("algorithm", "share"), [("neighbourhood", 1.0), ("nsga2", 0.5), ("spea2", 0.5)])
def test_a_restored_search_walks_on_exactly(program: Program, algorithm: str, share: float) -> None:
    """What a checkpoint keeps (population and archive ids, state as JSON, the generator's
    state) continues the rings, and the pairs waiting, as if never stopped."""
    settings = {} if algorithm == "neighbourhood" else {"neighbourhood": share}
    expected = [[c.patch for c in batch] for batch in run(make_search(program, algorithm, **settings), 10)]

    first = make_search(program, algorithm, **settings)
    scored: dict[str, tuple[Candidate, Evaluation, int]] = {}
    before = []
    for _ in range(6):
        batch = first.ask()
        before.append([c.patch for c in batch])
        evaluations = [outcomes(c) for c in batch]
        scored.update({c.id: (c, e, first.generation + 1) for c, e in zip(batch, evaluations, strict=True)})
        first.tell(batch, evaluations)
    population = [i.id for i in first.population]
    archive = [i.id for i in first.archive.members]
    state = json.loads(json.dumps(first.state()))
    rng = json.loads(json.dumps(dict(first.rng.bit_generator.state)))

    second = make_search(program, algorithm, seed=99, **settings)
    rebuilt = {identifier: second.individual(*scored[identifier]) for identifier in {*population, *archive}}
    second.restore(first.generation, [rebuilt[i] for i in population], [rebuilt[i] for i in archive], state)
    second.rng.bit_generator.state = rng
    after = [[c.patch for c in batch] for batch in run(second, 4)]
    assert before + after == expected
