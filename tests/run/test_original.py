"""The original program has one id, `original`, and one operator label, `none`, wherever
summary.json names it: as a front member and as a parent, whatever id the search gave it;
the search's id (`g0-i0`) still works on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from gi.cli.main import main
from gi.config import load_config
from gi.engine.measures import static_measures
from gi.engine.summary import write_report
from gi.fitness.objectives import OBJECTIVES
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.mutators import OPERATORS, MutationContext
from gi.populations.individual import Individual, ParetoFitness
from tests.daily import write_config, write_project

NAMES = ["failed_tests", "complexity", "size"]
TESTS = {"tests/test_chain.py::test_many": "passed", "tests/test_chain.py::test_twice": "passed"}


def evaluation(variant: Variant) -> Evaluation:
    return Evaluation(Status.OK, variant.tree_hash, {**static_measures(variant), "failed_tests": 0.0}, dict(TESTS))


def individual(identifier: str, variant: Variant, parents: tuple[str, ...], operator: str) -> Individual:
    measures = evaluation(variant).measures
    values = [measures[name] for name in NAMES]
    fitness = ParetoFitness((-1.0, -1.0, -1.0), values)
    generation = int(identifier[1 : identifier.index("-")])
    return Individual(
        identifier, variant.patch, variant.tree_hash, generation, fitness, parents, operator, tuple(values)
    )


def write_run(tmp_path: Path, front: list[tuple[str, Variant, tuple[str, ...], str]], original_ids: set[str]) -> Path:
    """A run folder written by gi's own report writer, for a front of (id, variant, parents, operator)."""
    project = write_project(tmp_path / "chain")
    config = load_config(write_config(tmp_path, project, tmp_path / "runs"))
    folder = tmp_path / "run"
    folder.mkdir()
    original = apply(Program.load(project, ["chain.py"], protected=["tests", "holdout"]), Patch())
    entries = []
    for identifier, variant, parents, operator in front:
        member = individual(identifier, variant, parents, operator)
        objectives = dict(zip(NAMES, member.objectives or (), strict=True))
        entries.append(
            {"member": member, "variant": variant, "evaluation": evaluation(variant), "objectives": objectives}
        )
    write_report(
        folder,
        config=config,
        objectives=[OBJECTIVES.get(name) for name in NAMES],
        baseline=evaluation(original),
        baseline_objectives={name: evaluation(original).measures[name] for name in NAMES},
        baseline_holdout=None,
        front=entries,
        history=[],
        evaluation_log=[],
        evaluations=len(front),
        cache_hits=0,
        wall_seconds=1.0,
        sandbox="none (a test)",
        extra={},
        original_ids=original_ids,
    )
    return folder


@pytest.fixture
def variants(tmp_path: Path) -> tuple[Variant, Variant]:
    """The original program and a one-edit variant of it (a real statement deletion)."""
    program = Program.load(write_project(tmp_path / "project"), ["chain.py"], protected=["tests", "holdout"])
    rng = np.random.default_rng(1)
    edit = OPERATORS.get("statement_delete").propose(program, Patch(), rng, MutationContext().bind(program))
    assert edit is not None
    return apply(program, Patch()), apply(program, Patch((edit,)))


def test_the_original_is_original_as_member_and_as_parent(
    tmp_path: Path, variants: tuple[Variant, Variant], capsys: pytest.CaptureFixture[str]
) -> None:
    original, child = variants
    folder = write_run(
        tmp_path, [("g0-i0", original, (), "original"), ("g1-i3", child, ("g0-i0",), "statement_delete")], {"g0-i0"}
    )
    text = (folder / "summary.json").read_text()
    summary = json.loads(text)
    assert [(m["id"], m["operator"], m["parents"]) for m in summary["front"]] == [
        ("original", "none", []),
        ("g1-i3", "statement_delete", ["original"]),
    ]
    assert summary["baseline"]["individuals"] == ["g0-i0"]
    assert text.count("g0-i0") == 1, "only where the search's id is kept for the command line"

    assert main(["show", str(folder), "--json"]) == 0
    assert [m["id"] for m in json.loads(capsys.readouterr().out)["front"]] == ["original", "g1-i3"]
    shown = {}
    for typed in ("original", "g0-i0"):
        assert main(["show", str(folder), typed, "--json"]) == 0
        shown[typed] = json.loads(capsys.readouterr().out)
    assert shown["g0-i0"] == shown["original"]
    assert (shown["original"]["id"], shown["original"]["operator"]) == ("original", "none")
    assert main(["show", str(folder)]) == 0
    assert "g0-i0" not in capsys.readouterr().out
    assert main(["report", str(folder)]) == 0
    for name in ("report.html", "report.md"):
        page = (folder / name).read_text()
        assert "g0-i0" not in page and "g1-i3" in page


def test_the_original_off_the_front_answers_to_both_ids(
    tmp_path: Path, variants: tuple[Variant, Variant], capsys: pytest.CaptureFixture[str]
) -> None:
    """Its search id is known from the run's individuals even when it is not a member; as a
    parent it is `original` too, and an unknown id is still refused."""
    _, child = variants
    folder = write_run(tmp_path, [("g1-i3", child, ("g0-i0", "g0-i2"), "uniform+statement_delete")], {"g0-i0"})
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["front"][0]["parents"] == ["original", "g0-i2"]
    shown = {}
    for typed in ("original", "g0-i0"):
        assert main(["show", str(folder), typed, "--json"]) == 0
        shown[typed] = json.loads(capsys.readouterr().out)
    assert shown["g0-i0"] == shown["original"] and shown["original"]["operator"] == "none"
    assert main(["show", str(folder), "g0-i2"]) == 2
    assert "no front member 'g0-i2'" in capsys.readouterr().err


def test_a_member_that_changes_nothing_is_the_original_whatever_its_id(
    tmp_path: Path, variants: tuple[Variant, Variant]
) -> None:
    original, _ = variants
    folder = write_run(tmp_path, [("g4-i1", original, ("g3-i0",), "drop")], set())
    summary = json.loads((folder / "summary.json").read_text())
    assert [(m["id"], m["operator"]) for m in summary["front"]] == [("original", "none")]
    assert summary["baseline"]["individuals"] == ["g4-i1"]
