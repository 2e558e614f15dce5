"""Objectives own their measures: one added from outside the engine, and a user's function named
by dotted path in a config, run end to end on a tiny real project."""

from __future__ import annotations

import ast
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from gi.cli.main import main
from gi.fitness.measures import MEASURES, Basis, Measure
from gi.fitness.objectives import OBJECTIVES, Direction, Objective, UserFunction
from gi.model.patch import Variant
from tests.daily import PROGRAM, write_config, write_project

IFS_IN_PROGRAM = 4  # the four `if`s of tests/daily.py's chain.py
LINES_IN_PROGRAM = PROGRAM.count("\n")


def summary_of(output: Path) -> dict[str, object]:
    return json.loads((output / "chain-seed1" / "summary.json").read_text())  # type: ignore[no-any-return]


def use_objectives(config: Path, names: list[str]) -> None:
    text = config.read_text()
    config.write_text(text.replace('minimize = ["failed_tests", "complexity", "size"]', f"minimize = {names!r}"))


class IfCounter:
    """A measure of the program (its `if` statements), counting the programs it is asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, variant: Variant) -> float:
        with self.lock:
            self.asked.append(variant.tree_hash)
        return float(sum(isinstance(node, ast.If) for node in ast.walk(ast.parse(variant.sources["chain.py"]))))


@pytest.fixture
def if_statements() -> Iterator[IfCounter]:
    """An objective registered as a plugin would register it: a measure and an objective, no
    edit of the engine; unregistered after."""
    counter = IfCounter()
    measure = MEASURES.add("if_statements", Measure("if_statements", Basis.PROGRAM, "if statements", counter))
    OBJECTIVES.add("if_statements", Objective("if_statements", Direction.MINIMIZE, "if statements", measure))
    try:
        yield counter
    finally:
        OBJECTIVES.remove("if_statements")
        MEASURES.remove("if_statements")


def test_an_objective_added_outside_the_engine_steers_the_search_and_is_measured_once_a_program(
    tmp_path: Path, if_statements: IfCounter
) -> None:
    project = write_project(tmp_path / "project")
    config = write_config(tmp_path, project, tmp_path / "runs", population=6, generations=3)
    use_objectives(config, ["failed_tests", "if_statements"])
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path / "runs")
    assert [entry["name"] for entry in summary["objectives"]] == ["failed_tests", "if_statements"]  # type: ignore[index, union-attr]
    assert summary["baseline"]["objectives"]["if_statements"] == IFS_IN_PROGRAM  # type: ignore[index]
    # Deleting an `if` (each returns early for a value no training test uses) keeps every
    # training test passing: the search finds fewer ifs than the original has.
    passing = [m["objectives"] for m in summary["front"] if m["objectives"]["failed_tests"] == 0]  # type: ignore[index, union-attr]
    assert min(values["if_statements"] for values in passing) < IFS_IN_PROGRAM
    # A measure of the program is taken once a program (the evaluation cache is by tree hash).
    assert len(if_statements.asked) == len(set(if_statements.asked))
    assert len(if_statements.asked) == summary["evaluations"] + 1  # type: ignore[operator]  # and the original's


USER_OBJECTIVES = """\
def line_count(variant):
    return sum(text.count("\\n") for text in variant.sources.values())


def fragile(variant):
    if 'return "two"' not in variant.sources["chain.py"]:
        raise ValueError("no two")
    return 1.0
"""


def test_a_config_names_a_users_objective_by_dotted_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project = write_project(tmp_path / "project")
    config = write_config(tmp_path, project, tmp_path / "runs", population=6, generations=3)
    (tmp_path / "my_objectives.py").write_text(USER_OBJECTIVES)  # beside the config
    use_objectives(config, ["failed_tests", "my_objectives:line_count", "my_objectives:fragile"])
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path / "runs")
    names = [entry["name"] for entry in summary["objectives"]]  # type: ignore[union-attr]
    assert names == ["failed_tests", "my_objectives:line_count", "my_objectives:fragile"]
    assert summary["baseline"]["objectives"]["my_objectives:line_count"] == LINES_IN_PROGRAM  # type: ignore[index]
    front = summary["front"]
    # The function runs on each variant's text: a deletion that keeps the tests is shorter.
    assert any(
        m["objectives"]["my_objectives:line_count"] < LINES_IN_PROGRAM and m["objectives"]["failed_tests"] == 0
        for m in front  # type: ignore[union-attr]
    )
    # A variant the function raises on is no crash: it takes the objective's worst value,
    # worse than the original's (1.0, unbounded: 10% and one worse).
    values = {m["objectives"]["my_objectives:fragile"] for m in front}  # type: ignore[union-attr]
    assert values <= {1.0, 2.1}
    folder = str(tmp_path / "runs" / "chain-seed1")
    assert "my_objectives:line_count" in (Path(folder) / "report.html").read_text()  # its plot and table
    assert main(["show", folder]) == 0  # the table reads the summary back
    capsys.readouterr()
    assert main(["show", folder, "--json"]) == 0
    assert [entry["name"] for entry in json.loads(capsys.readouterr().out)["objectives"]] == names


def test_a_users_objective_that_does_not_import_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = write_project(tmp_path / "project")
    config = write_config(tmp_path, project, tmp_path / "runs")
    use_objectives(config, ["failed_tests", "nowhere:line_count"])
    assert main(["run", str(config), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert f"{config}: objectives.minimize: cannot import 'nowhere' from {tmp_path}" in error.replace("\n", "")
    assert "Traceback" not in error
    use_objectives(config, ["failed_tests", "nowhere line count"])
    assert main(["run", str(config), "--quiet"]) == 2
    assert "objectives.minimize" in capsys.readouterr().err


def test_a_users_function_that_raises_or_gives_no_number_gives_no_value() -> None:
    def broken(variant: Variant) -> object:
        raise RuntimeError("boom")

    function = UserFunction("m:broken", broken)
    assert function(None) is None  # type: ignore[arg-type]
    assert function.problem == "raised RuntimeError: boom"
    for bad in ("7", float("nan"), True):
        assert UserFunction("m:bad", lambda variant, bad=bad: bad)(None) is None  # type: ignore[misc, arg-type]
    assert UserFunction("m:fine", lambda variant: 3)(None) == 3.0  # type: ignore[arg-type]


def test_a_users_module_named_like_one_of_gis_parts_or_the_standard_library_wins_from_the_configs_folder(
    tmp_path: Path,
) -> None:
    """`fitness:score` beside the config is the user's fitness.py, not gi's part of that name (and
    `json:score` is the user's json.py), while the standard library's json stays json."""
    project = write_project(tmp_path / "project")
    config = write_config(tmp_path, project, tmp_path / "runs", population=4, generations=1)
    (tmp_path / "fitness.py").write_text(
        "from helpers import lines\n\ndef score(variant):\n    return lines(variant)\n"
    )
    (tmp_path / "helpers.py").write_text(USER_OBJECTIVES.replace("def line_count", "def lines"))
    (tmp_path / "json.py").write_text("def score(variant):\n    return 7.0\n")
    use_objectives(config, ["failed_tests", "fitness:score", "json:score"])
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path / "runs")
    assert summary["baseline"]["objectives"]["fitness:score"] == LINES_IN_PROGRAM  # type: ignore[index]
    assert summary["baseline"]["objectives"]["json:score"] == 7.0  # type: ignore[index]
    assert sys.modules["json"] is json and Path(json.__file__).parent != tmp_path


@pytest.mark.timeout(300)  # (it used to hang: NSGA-III's default divisions for one objective)
def test_a_one_objective_nsga3_run_ends(tmp_path: Path) -> None:
    project = write_project(tmp_path / "project")
    config = write_config(tmp_path, project, tmp_path / "runs", population=4, generations=2)
    use_objectives(config, ["complexity"])
    config.write_text(config.read_text().replace("[search]\n", '[search]\nalgorithm = "nsga3"\n'))
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path / "runs")
    assert [row["generation"] for row in summary["generations"]] == [0, 1, 2]  # type: ignore[union-attr]
    # One objective: the front is the least complex feasible program found (deleting an `if`).
    [best] = summary["front"]  # type: ignore[misc]
    assert best["objectives"]["complexity"] < summary["baseline"]["objectives"]["complexity"]  # type: ignore[index]
