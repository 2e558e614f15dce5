"""Adaptive operator selection: shares follow recent success, never starve an operator, and
come back the same from a checkpoint."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gi.algorithms import ALGORITHMS, Search, SearchSettings
from gi.algorithms.adaptive import FLOOR, WINDOW, OperatorSelection
from gi.algorithms.variation import Candidate, operator_name
from gi.fitness.objectives import OBJECTIVES, Constraint
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.mutators import CROSSOVERS, OPERATORS
from gi.mutators.llm import LLMClient, LLMOperator, LLMSettings
from tests.llm_server import Action, ScriptedModel, serve

NAMES = ("negate", "constant", "statement_delete", "comparison_operator")


def test_uniform_selection_draws_as_before() -> None:
    """Uniform is `rng.integers` over the operators: runs without adaptive selection are unchanged."""
    selection = OperatorSelection(NAMES)
    drawn = [selection.choose(np.random.default_rng(5)) for _ in range(3)]
    assert drawn == [int(np.random.default_rng(5).integers(len(NAMES)))] * 3
    selection.credit("negate", True)
    assert selection.shares() == dict.fromkeys(NAMES, 0.25)


def test_the_successful_operator_gains_and_none_is_starved() -> None:
    selection = OperatorSelection(NAMES, adaptive=True)
    for _ in range(10):
        selection.credit("constant", True)
        for name in ("negate", "statement_delete", "comparison_operator"):
            selection.credit(name, False)
    shares = selection.shares()
    assert shares["constant"] > 0.6
    assert min(shares.values()) >= FLOOR / len(NAMES) - 1e-4
    assert sum(shares.values()) == pytest.approx(1.0, abs=1e-3)
    rng = np.random.default_rng(0)
    drawn = [NAMES[selection.choose(rng)] for _ in range(400)]
    assert drawn.count("constant") > 220


def test_the_window_forgets_old_successes() -> None:
    selection = OperatorSelection(NAMES, adaptive=True)
    for _ in range(20):
        selection.credit("negate", True)
    for _ in range(WINDOW):
        selection.credit("constant", True)
        selection.credit("negate", False)
    shares = selection.shares()
    assert shares["constant"] > shares["negate"]


def test_an_operator_never_used_is_rated_at_the_mean() -> None:
    selection = OperatorSelection(NAMES, adaptive=True)
    for _ in range(5):
        selection.credit("negate", True)
        selection.credit("constant", False)
    shares = selection.shares()
    assert shares["negate"] > shares["statement_delete"] == shares["comparison_operator"] > shares["constant"]


def test_state_round_trips_as_json() -> None:
    selection = OperatorSelection(NAMES, adaptive=True)
    for index in range(30):
        selection.credit(NAMES[index % 4], index % 3 == 0)
    again = OperatorSelection(NAMES, adaptive=True)
    again.restore(json.loads(json.dumps(selection.state())))
    assert again.shares() == selection.shares()


SOURCE = """\
def price(amount, rate):
    total = amount * rate
    if total > 100:
        total = total - 10
    return total
"""


def synthetic(candidate: Candidate) -> Evaluation:
    """Constant tweaks pass every test, other edits fail one: adaptive selection should learn it."""
    constant = any(edit.kind == "replace_number" for edit in candidate.patch.edits)
    failed = 0.0 if constant or not candidate.patch.edits else 1.0
    measures = {"failed_tests": failed, "size": float(len(candidate.patch))}
    return Evaluation(Status.OK, candidate.variant.tree_hash, measures)


def make_search(program: Program, seed: int = 1) -> Search:
    return ALGORITHMS.get("nsga2")(
        program,
        [OBJECTIVES.get("failed_tests"), OBJECTIVES.get("size")],
        Constraint.NONE,
        [OPERATORS.get(name) for name in NAMES],
        [CROSSOVERS.get(name) for name in CROSSOVERS],
        SearchSettings(population=8, generations=20, operator_selection="adaptive"),
        np.random.default_rng(seed),
        reference=(2.0, 11.0),
        test_count=1,
    )


@pytest.fixture
def program(make_program: Callable[[str], Program]) -> Program:
    return make_program(SOURCE)


def test_a_search_credits_the_operators_that_enter_the_archive(program: Program) -> None:
    search = make_search(program)
    for _ in range(8):
        batch = search.ask()
        search.tell(batch, [synthetic(c) for c in batch])
    shares = search.selection.shares()
    assert shares["constant"] == max(shares.values())


def test_a_restored_adaptive_search_continues_exactly(program: Program) -> None:
    whole = make_search(program)
    expected = []
    for _ in range(6):
        batch = whole.ask()
        expected.append([json.dumps(c.patch.to_json()) for c in batch])
        whole.tell(batch, [synthetic(c) for c in batch])

    first = make_search(program)
    scored: dict[str, tuple[Candidate, Evaluation, int]] = {}
    asked = []
    for _ in range(3):
        batch = first.ask()
        asked.append([json.dumps(c.patch.to_json()) for c in batch])
        evaluations = [synthetic(c) for c in batch]
        scored.update({c.id: (c, e, first.generation + 1) for c, e in zip(batch, evaluations, strict=True)})
        first.tell(batch, evaluations)
    population = [i.id for i in first.population]
    archive = [i.id for i in first.archive.members]
    state = json.loads(json.dumps(first.state()))
    rng = json.loads(json.dumps(dict(first.rng.bit_generator.state)))
    second = make_search(program, seed=99)
    rebuilt = {identifier: second.individual(*scored[identifier]) for identifier in {*population, *archive}}
    second.restore(first.generation, [rebuilt[i] for i in population], [rebuilt[i] for i in archive], state)
    second.rng.bit_generator.state = rng
    for _ in range(3):
        batch = second.ask()
        asked.append([json.dumps(c.patch.to_json()) for c in batch])
        second.tell(batch, [synthetic(c) for c in batch])
    assert asked == expected


def test_an_operator_with_a_share_starts_at_it_and_moves_with_its_success() -> None:
    """The language model (or any operator with a share) is one operator like the others: its
    prior is its share, and credit moves it as it moves the rest."""
    priors = {**dict.fromkeys(NAMES, 0.7 / len(NAMES)), "llm": 0.3}
    selection = OperatorSelection([*NAMES, "llm"], adaptive=True, priors=priors)
    assert selection.shares()["llm"] == pytest.approx(0.3)
    for _ in range(20):
        selection.credit("llm", True)
        selection.credit("negate", False)
    assert selection.shares()["llm"] > 0.4
    rng = np.random.default_rng(1)
    allowed = [True] * len(NAMES) + [False]
    assert all(selection.choose(rng, allowed) < len(NAMES) for _ in range(50)), "a spent share is not drawn"


#: A diff of `price` that takes another discount each time (so no reply repeats one before it).
DISCOUNT = """\
<<<<<<< SEARCH
        total = total - 10
=======
        total = total - {}
>>>>>>> REPLACE
"""


def test_the_model_is_credited_for_the_offspring_of_its_modes(program: Program, tmp_path: Path) -> None:
    """The model's offspring are labelled by mode ("llm.diff"); adaptive selection credits them
    to the model, so its share moves with its success."""
    discounts = itertools.count(11)
    scripted = ScriptedModel(respond=lambda body: Action(reply=DISCOUNT.format(next(discounts))))

    def evaluate(candidate: Candidate) -> Evaluation:
        """The model's offspring pass and are simpler than the original; every other fails a test."""
        by_model = bool(candidate.patch.edits) and operator_name(candidate.operator) == "llm"
        failed = 0.0 if by_model or not candidate.patch.edits else 1.0
        measures = {"failed_tests": failed, "complexity": 1.0 if by_model else 5.0}
        return Evaluation(Status.OK, candidate.variant.tree_hash, measures)

    for server in serve(scripted):
        settings: dict[str, Any] = {"base_url": server.base_url, "model": "scripted", "cache": tmp_path / "cache",
                                    "retries": 0, "timeout": 5}  # fmt: skip
        model = LLMOperator(LLMClient(LLMSettings(**settings)), "simpler", modes={"diff": 1.0}, share=0.3)
        search = ALGORITHMS.get("nsga2")(
            program,
            [OBJECTIVES.get("failed_tests"), OBJECTIVES.get("complexity")],
            Constraint.NONE,
            [*(OPERATORS.get(name) for name in NAMES), model],
            [],
            SearchSettings(population=8, generations=20, operator_selection="adaptive"),
            np.random.default_rng(3),
            reference=(2.0, 11.0),
            test_count=1,
        )
        labels = []
        for _ in range(5):
            batch = search.ask()
            labels += [candidate.operator for candidate in batch]
            search.tell(batch, [evaluate(c) for c in batch])
    assert any(label.endswith("llm.diff") for label in labels), labels
    assert search.selection.priors[search.selection.names.index("llm")] == pytest.approx(0.3)
    assert search.selection.shares()["llm"] > 0.5, search.selection.shares()
