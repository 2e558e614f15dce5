"""Test selection by coverage (tests.select = "coverage"): a variant runs only the training tests
that execute a line its edits change, the others keep the original's outcomes, and whatever
would join the front is confirmed by every training test first. Real pytest runs, real coverage,
a real run store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.config import load_config
from gi.engine.evaluation import Evaluator
from gi.engine.evaluation_settings import EvaluationSettings
from gi.fitness.selection import Coverage
from gi.model.edits import DeleteStatement, ReplaceStatement, SwapStatements
from gi.model.patch import Patch, Variant, apply
from gi.model.program import Program
from gi.model.sites import SiteKind
from gi.run.experiment import run_experiment

PROGRAM = """\
TOTAL = []


def add(x):
    TOTAL.append(x)
    return x


def double(x):
    return 2 * x
"""

# test_total reads what test_add left behind without executing a line of tally.py itself: an
# edit of add's append is seen by test_add's coverage only, and only the full run catches it.
TESTS = """\
import tally


def test_add():
    assert tally.add(3) == 3


def test_total():
    assert sum(tally.TOTAL) == 3


def test_double():
    assert tally.double(2) == 4


def test_double_zero():
    assert tally.double(0) == 0
"""

ADD, TOTAL, DOUBLE, DOUBLE_ZERO = (
    f"tests/test_tally.py::test_{name}" for name in ("add", "total", "double", "double_zero")
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "tally"
    (folder / "tests").mkdir(parents=True)
    (folder / "tally.py").write_text(PROGRAM)
    (folder / "tests" / "test_tally.py").write_text(TESTS)
    return folder


def deletion(program: Program, text: str) -> Variant:
    """The variant without the statement whose source starts with `text`."""
    lines = program.sources["tally.py"].splitlines()
    [site] = [s for s in program.sites_of(SiteKind.STATEMENT) if lines[s.line - 1].strip().startswith(text)]
    return apply(program, Patch((DeleteStatement(site.location),)))


@pytest.mark.parametrize("engine", ["cold", "warm"])
def test_a_variant_runs_only_the_tests_that_execute_its_edits(project: Path, engine: str) -> None:
    program = Program.load(project, ["tally.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60, engine=engine, select=True))
    try:
        original = apply(program, Patch())
        baseline = evaluator.evaluate(original)
        assert baseline.measures["failed_tests"] == 0 and baseline.measures["tests_run"] == 4
        evaluator.baseline_tests = baseline.tests
        run, lines = evaluator.line_coverage(original)
        evaluator.coverage = Coverage.of(lines, program.sources, run.outcomes)

        broken = evaluator.evaluate(deletion(program, "return 2 * x"))  # double returns None
        assert broken.partial and broken.measures["tests_run"] == 2
        assert set(broken.durations) == {DOUBLE, DOUBLE_ZERO}, "only double's tests ran"
        assert broken.tests == {DOUBLE: "failed", DOUBLE_ZERO: "failed", ADD: "passed", TOTAL: "passed"}
        assert broken.measures["failed_tests"] == 2

        # Module level runs at import, outside any test: every test runs.
        module_level = evaluator.evaluate(deletion(program, "TOTAL = []"))
        assert not module_level.partial and module_level.measures["tests_run"] == 4

        # The full run sees what the selection cannot: test_total depends on add's append.
        unseen = deletion(program, "TOTAL.append")
        selected = evaluator.evaluate(unseen)
        assert selected.partial and set(selected.durations) == {ADD}
        assert selected.measures["failed_tests"] == 0
        full = evaluator.evaluate(unseen, every_test=True)
        assert not full.partial and full.tests[TOTAL] == "failed" and full.measures["failed_tests"] == 1
    finally:
        evaluator.close()


GRADE = '''\
def grade(score):
    """The letter for a score."""
    if score > 100:  # never: no test gives one
        return "A+"
    return "A" if score >= 90 else "B"
'''


def test_an_edit_where_coverage_sees_no_statement_runs_the_tests_that_reach_its_place(tmp_path: Path) -> None:
    """A docstring never shows in coverage, and an unreached `return` is run by no test: yet
    either put in the other's place changes what every call of the function does."""
    folder = tmp_path / "grade"
    (folder / "tests").mkdir(parents=True)
    (folder / "grade.py").write_text(GRADE)
    (folder / "tests" / "test_grade.py").write_text(
        "from grade import grade\n\n\ndef test_a():\n    assert grade(95) == 'A'\n\n\n"
        "def test_b():\n    assert grade(80) == 'B'\n"
    )
    program = Program.load(folder, ["grade.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60, select=True))
    try:
        original = apply(program, Patch())
        evaluator.baseline_tests = evaluator.evaluate(original).tests
        run, lines = evaluator.line_coverage(original)
        evaluator.coverage = Coverage.of(lines, program.sources, run.outcomes)
        statements = {program.sources["grade.py"].splitlines()[s.line - 1].strip(): s.location
                      for s in program.sites_of(SiteKind.STATEMENT)}  # fmt: skip
        docstring, unreached = statements['"""The letter for a score."""'], statements['return "A+"']
        for patch in (Patch((SwapStatements(docstring, other=unreached),)),
                      Patch((ReplaceStatement(docstring, ingredient=unreached),))):  # fmt: skip
            evaluation = evaluator.evaluate(apply(program, patch))
            assert evaluation.measures["tests_run"] == 2, patch
            assert evaluation.measures["failed_tests"] == 2, patch
    finally:
        evaluator.close()


def write_config(folder: Path, select: str, search: str = "") -> Path:
    """The tally experiment; `search`, more lines of its [search] section."""
    config = folder.parent / f"{select}.toml"
    config.write_text(f"""\
[experiment]
name = "tally-{select}"
seed = 3
output = "runs"

[program]
root = "tally"
files = ["tally.py"]

[tests]
train = ["tests"]
timeout = 30
select = "{select}"

[objectives]
minimize = ["failed_tests"]
maximize = ["maintainability"]
constraint = "train_pass"

[search]
population = 8
generations = 1
neighbourhood = 1.0
{search}
[mutators]
operators = ["statement_delete"]
""")
    return config


def front(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(m["id"], m["edits"], m["objectives"], m["training"]) for m in summary["front"]]


def confirmations(run: Path) -> dict[str, dict[str, Any]]:
    with sqlite3.connect(run / "store.sqlite") as db:
        rows = db.execute("SELECT key, value FROM measurements WHERE key LIKE 'confirmation:%'").fetchall()
    return {key.partition(":")[2]: json.loads(value) for key, value in rows}


@pytest.mark.slow
def test_selection_reaches_the_front_of_every_test_and_confirms_what_joins_it(project: Path) -> None:
    selected = run_experiment(load_config(write_config(project, "coverage")))
    everything = run_experiment(load_config(write_config(project, "all")))
    program = Program.load(project, ["tally.py"], protected=["tests"])
    unseen = deletion(program, "TOTAL.append").tree_hash

    # The deletion of add's append passed the tests that execute it, and would have joined the
    # front on its better maintainability: every test ran on it first, and it failed test_total.
    logged = {
        row["tree_hash"]: row
        for row in map(json.loads, (selected.folder / "evaluations.jsonl").read_text().splitlines())
    }
    assert logged[unseen]["partial"] and logged[unseen]["measures"]["failed_tests"] == 0
    confirmed = confirmations(selected.folder)[unseen]
    assert confirmed["measures"]["failed_tests"] == 1 and confirmed["tests"][TOTAL] == "failed"
    assert logged[unseen]["confirmation"]["measures"]["failed_tests"] == 1

    assert front(selected.summary) == front(everything.summary)
    assert all(not member["edits"] for member in selected.summary["front"]), "no deletion keeps every test"
    tests = selected.summary["tests"]
    assert tests["select"] == "coverage" and tests["confirmed"] >= 1 and tests["overturned"] >= 1
    assert tests["run_per_evaluation"] < tests["training"]
    assert everything.summary["tests"]["run_per_evaluation"] == everything.summary["tests"]["training"]
    assert not confirmations(everything.folder)


@pytest.mark.slow
def test_a_steady_state_map_elites_run_confirms_what_would_join_its_front_or_grid(project: Path) -> None:
    """Told one at a time, a result that ran only the tests seeing its edits is confirmed by every
    test before it joins the front or becomes an elite of the grid, as a generational batch is."""
    steady = 'algorithm = "map_elites"\nsteady_state = true\n[search.grid]\nfeatures = ["size"]\n'
    config = write_config(project, "coverage", steady)
    config.write_text(config.read_text().replace("population = 8\ngenerations = 1", "population = 2\ngenerations = 2"))
    run = run_experiment(load_config(config))
    program = Program.load(project, ["tally.py"], protected=["tests"])
    unseen = deletion(program, "TOTAL.append").tree_hash
    confirmed = confirmations(run.folder)[unseen]
    assert confirmed["measures"]["failed_tests"] == 1 and confirmed["tests"][TOTAL] == "failed"
    assert all(not member["edits"] for member in run.summary["front"]), "no deletion keeps every test"
    elites = run.summary["quality_diversity"]["elites"]
    assert [elite["id"] for elite in elites] == ["original"], elites


@pytest.mark.slow
def test_a_replay_measures_neither_the_coverage_nor_a_confirmation_again(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(project, "coverage")
    assert main(["run", str(config), "--quiet"]) == 0
    run = project.parent / "runs" / "tally-coverage-seed3"
    made = json.loads((run / "summary.json").read_text())
    assert made["measurements"]["measured"]["coverage"] == 1 and made["measurements"]["measured"]["confirmation"] >= 1

    assert main(["replay", str(config), "--quiet"]) == 0
    replay = json.loads((run / "replay" / "summary.json").read_text())
    assert replay["replay"] == {"front": True, "history": True}
    assert replay["measurements"]["measured"] == {}, replay["measurements"]
    assert replay["measurements"]["replayed"]["coverage"] == 1

    # Run again, the finished run rewrites its report from its store: the coverage is recorded.
    capsys.readouterr()
    assert main(["run", str(config)]) == 0
    said = capsys.readouterr().out
    assert "coverage of the original by its training tests: recorded" in said


def test_the_projects_coverage_settings_do_not_hide_its_coverage(project: Path) -> None:
    """A project's own coverage.py settings (python-slugify's: `source`, `parallel`,
    `relative_files`) would leave gi without per-test coverage, so without selection: gi's
    coverage run reads its own settings alone."""
    (project / "pyproject.toml").write_text(
        '[tool.coverage.run]\nsource = ["elsewhere"]\nparallel = true\nrelative_files = true\nbranch = true\n'
    )
    program = Program.load(project, ["tally.py"], protected=["tests"])
    evaluator = Evaluator(program, EvaluationSettings(train=("tests",), timeout=60))
    run, lines = evaluator.line_coverage(apply(program, Patch()))
    assert run.passed == 4
    add = program.sources["tally.py"].splitlines().index("    TOTAL.append(x)") + 1
    assert lines["tally.py"][add] == {ADD}
