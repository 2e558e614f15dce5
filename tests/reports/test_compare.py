"""`gi compare`'s statistics and figures, on numbers worked out by hand."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from scipy.stats import mannwhitneyu

from gi.cli.main import main
from gi.fitness.statistics import holm
from gi.reports.compare import RunData, a12, figures, mann_whitney, measures_of
from tests.daily import PROGRAM, write_config, write_project


def test_a12_counts_wins_and_half_ties_in_the_direction_of_better() -> None:
    assert a12([1, 2, 3], [4, 5, 6], larger_is_better=False) == 1.0
    assert a12([1, 2, 3], [4, 5, 6], larger_is_better=True) == 0.0
    assert a12([1, 1], [1, 1], larger_is_better=False) == 0.5
    # (1 vs 1: tie, 1 vs 2: win, 3 vs 1: loss, 3 vs 2: loss) -> (1 + 0.5) / 4
    assert a12([1, 3], [1, 2], larger_is_better=False) == pytest.approx(0.375)


def test_holm_on_a_worked_example() -> None:
    # Sorted 0.01, 0.03, 0.04: times 3, 2, 1 = 0.03, 0.06, 0.04 -> kept monotone: 0.06.
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_mann_whitney_is_scipys_two_sided_test() -> None:
    first, second = [9.0, 9.0, 10.0, 9.0, 8.0], [11.0, 11.0, 10.0, 11.0, 12.0]
    u, p = mann_whitney(first, second)
    expected = mannwhitneyu(first, second, alternative="two-sided")
    assert (u, p) == (float(expected.statistic), float(expected.pvalue)) and p < 0.05
    assert mann_whitney([0.0] * 5, [0.0] * 5) == (12.5, 1.0)
    # Five seeds each, complete separation, no ties: the exact p is 2 / C(10, 5).
    assert mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])[1] == pytest.approx(2 / 252)


def run_data(log: list[dict[str, Any]], front: list[dict[str, Any]], rate: float | None = 0.5) -> RunData:
    summary = {
        "experiment": {"name": "x", "seed": 3},
        "objectives": [
            {"name": "failed_tests", "direction": "minimize"},
            {"name": "complexity", "direction": "minimize"},
        ],
        "constraint": "train_pass",
        "baseline": {"measures": {"failed_tests": 0.0, "complexity": 10.0}, "training": {"passed": 4, "failed": 0}},
        "front": front,
        "overfitting_rate": rate,
    }
    return RunData(Path("run"), summary, {"arm": "ls", "search": {"max_edits": 5}}, log)


def entry(individual: str, status: str, failed: float, complexity: float) -> dict[str, Any]:
    return {"individual": individual, "status": status, "measures": {"failed_tests": failed, "complexity": complexity}}


def test_figures_of_a_run() -> None:
    log = [
        entry("baseline", "ok", 0, 10),
        entry("g0-i1", "ok", 1, 6),  # fails a test: infeasible, however simple
        entry("g0-i2", "crashed", 0, 0),
        entry("g0-i3", "ok", 0, 9),
        entry("g1-i0", "ok", 0, 8),
        entry("g1-i1", "ok", 0, 8),
    ]
    front = [{"objectives": {"failed_tests": 0, "complexity": 8}, "feasible": True}]
    run = run_data(log, front)
    assert run.arm == "ls" and run.seed == 3 and run.test_count == 4
    reference = run.reference()
    assert reference == (5.0, 12.0)  # failed_tests: tests + 1; complexity: 10 + 10% + 1
    values = figures(run, reference).values
    assert values["best failed_tests"] == 0 and values["evaluations to best failed_tests"] == 0
    assert values["best complexity"] == 8 and values["evaluations to best complexity"] == 4
    assert values["hypervolume"] == pytest.approx(5 * 4)
    assert values["overfitting rate"] == 0.5
    assert [m.name for m in measures_of(run.objectives)] == [
        "hypervolume", "best failed_tests", "best complexity", "evaluations to best failed_tests",
        "evaluations to best complexity", "overfitting rate",
    ]  # fmt: skip


def test_a_run_with_no_feasible_variant_has_no_best() -> None:
    run = run_data([entry("baseline", "ok", 2, 10), entry("g0-i1", "ok", 1, 9)], [], rate=None)
    values = figures(run, run.reference()).values
    assert values["best complexity"] is None and values["evaluations to best complexity"] is None
    assert values["hypervolume"] == 0.0 and values["overfitting rate"] is None


def tiny_run(tmp_path: Path, name: str, program: str, objectives: str) -> Path:
    """A run of generation 0 alone on the daily project with `program` as chain.py and
    `objectives` (the user's `mine:lines` among them, if named); its folder."""
    project = write_project(tmp_path / name / "project")
    (project / "chain.py").write_text(program)
    config = write_config(tmp_path / name, project, tmp_path / name / "runs", population=2, generations=0)
    config.write_text(config.read_text().replace('minimize = ["failed_tests", "complexity", "size"]', objectives))
    (config.parent / "mine.py").write_text("def lines(variant):\n    return variant.sources['chain.py'].count('\\n')\n")
    assert main(["run", str(config), "--quiet"]) == 0
    return tmp_path / name / "runs" / "chain-seed1"


def test_compare_refuses_runs_of_another_program_or_on_other_objectives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objectives = 'minimize = ["failed_tests", "mine:lines"]'
    first = tiny_run(tmp_path, "first", PROGRAM, objectives)
    again = tmp_path / "again" / "chain-seed1"
    shutil.copytree(first, again)  # the same program's run, in another folder
    other = tiny_run(tmp_path, "other", PROGRAM.replace('return "three"', 'return "3"'), objectives)
    turned = tiny_run(tmp_path, "turned", PROGRAM, 'minimize = ["failed_tests"]\nmaximize = ["mine:lines"]')
    capsys.readouterr()
    assert main(["compare", str(first), str(again), "--output", str(tmp_path / "out")]) == 0
    assert main(["compare", str(first), str(other), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.replace("\n", "")
    assert f"{other}: a run of another program than {first} (chain.py differ)" in error
    assert main(["compare", str(first), str(turned), "--output", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err.replace("\n", "")
    assert "mine:lines (maximize)" in error and "mine:lines (minimize)" in error
    assert "only runs on the same objectives can be compared" in error and "Traceback" not in error
