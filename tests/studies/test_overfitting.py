"""Studying overfitting on the grading example (dead branches; held-out tests for the range
check the training tests miss): the generalisation gap per generation, proof that held-out
tests never steer selection, and minimisation of front members to 1-minimal patches."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from gi.algorithms.variation import operator_of_label
from gi.cli.main import main
from gi.fitness.outcomes import overfits
from gi.model.edits import DeleteStatement, ReplaceOperator, ReplaceStatement
from gi.model.patch import Patch
from gi.model.sites import Location
from gi.reports import plots
from gi.studies.ablation import DESCRIPTION_WIDTH, ablate, ablation_table
from gi.studies.minimize import kept_of, minimize_patch
from gi.studies.rerun import FinishedRun
from tests.runs import assert_one_minimal

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
GRADING = EXPERIMENTS / "programs" / "grading"

RANGE_CHECK = DeleteStatement(Location("grading.py", "body[1].body.body[1]"))  # behaviour only held-out tests see
DOCSTRING = DeleteStatement(Location("grading.py", "body[1].body.body[0]"))  # changes no objective but size
DEAD_BRANCH = DeleteStatement(Location("grading.py", "body[1].body.body[6]"))  # `if score > 100` after the check
DEAD_PRINT = DeleteStatement(Location("grading.py", "body[2].body.body[7].body.body[0]"))  # inside `if verbose:`


def grading_config(tmp_path: Path, name: str, *, holdout: bool) -> Path:
    """The grading example at 8 x 4 (seed 1), with or without its held-out tests."""
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{GRADING}"')
    text = text.replace('output = "runs"', f'output = "{tmp_path / name}"')
    text = text.replace("population = 20", "population = 8").replace("generations = 10", "generations = 4")
    if not holdout:
        text = text.replace('holdout = ["holdout"]', "")
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def selection(store: Path) -> dict[str, Any]:
    """Everything the search chose, from a run store: each generation's population and archive
    ids and generator state, every individual's patch, lineage and objective measures."""
    with sqlite3.connect(store) as db:
        checkpoints = db.execute("SELECT generation, population, archive, rng FROM checkpoints ORDER BY generation")
        individuals = db.execute(
            "SELECT i.id, i.generation, i.tree_hash, i.patch, i.parents, i.operator, e.evaluation"
            " FROM individuals i JOIN evaluations e ON e.tree_hash = i.tree_hash ORDER BY i.id"
        )
        objectives = ("failed_tests", "complexity", "size")
        return {
            "checkpoints": [tuple(row) for row in checkpoints],
            "individuals": [
                (*row[:6], {name: json.loads(row[6])["measures"].get(name) for name in objectives})
                for row in individuals
            ],
        }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """The same seed run twice: with the held-out tests and without them (run folders)."""
    tmp_path = tmp_path_factory.mktemp("holdout")
    folders = {}
    for holdout in (True, False):
        name = "with" if holdout else "without"
        assert main(["run", str(grading_config(tmp_path, name, holdout=holdout)), "--quiet"]) == 0
        folders[holdout] = tmp_path / name / "grading-simplify-seed1"
    return folders


@pytest.fixture(scope="module")
def seed2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seed 2 (8 x 4), whose search builds on the deletion of the range check: some programs
    inherit their overfit from a parent, others bring it in."""
    tmp_path = tmp_path_factory.mktemp("seed2")
    assert main(["run", str(grading_config(tmp_path, "seed2", holdout=True)), "--seed", "2", "--quiet"]) == 0
    return tmp_path / "seed2" / "grading-simplify-seed2"


def store_overfits(folder: Path) -> tuple[dict[str, tuple[str, list[str], str]], dict[str, str], dict[str, bool]]:
    """From a run store alone: every individual (tree hash, parents, operator label), the
    individual that first made each program, and whether each feasible program that ran the
    held-out tests overfits (by the one definition)."""
    with sqlite3.connect(folder / "store.sqlite") as db:
        individuals = {
            row[0]: (row[1], json.loads(row[2]), row[3])
            for row in db.execute("SELECT id, tree_hash, parents, operator FROM individuals")
        }
        evaluations = {
            tree_hash: (individual, json.loads(text))
            for tree_hash, individual, text in db.execute("SELECT tree_hash, individual, evaluation FROM evaluations")
        }
        held = {
            key.partition(":")[2]: json.loads(value)["outcomes"]
            for key, value in db.execute("SELECT key, value FROM measurements WHERE key LIKE 'holdout:%'")
        }
    [(original_hash, (_, original))] = [(h, e) for h, e in evaluations.items() if e[0] == "baseline"]
    flags = {}
    for tree_hash, (_, evaluation) in evaluations.items():
        feasible = evaluation["status"] == "ok" and evaluation["measures"]["failed_tests"] == 0
        if feasible and tree_hash != original_hash and tree_hash in held:
            flags[tree_hash] = overfits(evaluation["tests"], original["tests"], held[tree_hash], held[original_hash])
    first = {tree_hash: individual for tree_hash, (individual, _) in evaluations.items()}
    return individuals, first, flags


@pytest.mark.slow
def test_gi_validate_tells_introduced_overfits_from_inherited_ones(
    seed2: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(seed2)]) == 0
    figures = json.loads((seed2 / "summary.json").read_text())["validation"]
    individuals, first, flags = store_overfits(seed2)
    expected: dict[str, dict[str, int]] = {}
    for tree_hash, flag in flags.items():
        if first[tree_hash] not in individuals:  # evaluated, never kept as an individual
            continue
        _, parents, label = individuals[first[tree_hash]]
        inherited = any(flags.get(individuals[parent][0], False) for parent in parents)
        row = expected.setdefault(operator_of_label(label), {"checked": 0, "introduced": 0, "inherited": 0})
        row["checked"] += 1
        row["clean_parents"] = row.get("clean_parents", 0) + (not inherited)
        row["introduced" if inherited is False else "inherited"] += flag
    got = {
        name: {key: share[key] for key in ("checked", "introduced", "inherited", "clean_parents")}
        for name, share in figures["operators"].items()
    }
    assert got == expected
    feasible = figures["feasible"]
    assert feasible["introduced"] > 0 and feasible["inherited"] > 0, "this run has both kinds"
    assert feasible["introduced"] + feasible["inherited"] == feasible["overfit"]
    assert figures["groups"]["classic"]["introduced"] == feasible["introduced"]
    assert feasible["introduced_rate"] == round(feasible["introduced"] / feasible["clean_parents"], 4)
    capsys.readouterr()
    assert main(["show", str(seed2)]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines() if "every feasible program" in line]
    introduced = f"{feasible['introduced']} of {feasible['clean_parents']} ({feasible['introduced_rate']:.0%})"
    assert introduced in row and row.rstrip(" │").endswith(str(feasible["inherited"]))
    assert main(["report", str(seed2)]) == 0
    markdown = (seed2 / "report.md").read_text()
    assert "## Revalidation" in markdown
    cells = (feasible["checked"], f"{feasible['overfit']} ({feasible['rate']:.0%})", introduced, feasible["inherited"])
    assert "| every feasible program | {} | {} | {} | {} |".format(*cells) in markdown
    assert "(report-images/" in markdown and "Revalidation" in (seed2 / "report.html").read_text()


@pytest.mark.slow
def test_held_out_tests_leave_selection_untouched(runs: dict[bool, Path]) -> None:
    with_holdout, without = (selection(runs[flag] / "store.sqlite") for flag in (True, False))
    assert len(with_holdout["checkpoints"]) == 5
    assert with_holdout == without
    summary = json.loads((runs[True] / "summary.json").read_text())
    assert sum(row["checked"] for row in summary["generalisation_gap"]) > 0, "no member ran the held-out tests"
    assert json.loads((runs[False] / "summary.json").read_text())["generalisation_gap"] == []


@pytest.mark.slow
def test_the_gap_counts_every_overfitting_front_member(runs: dict[bool, Path]) -> None:
    summary = json.loads((runs[True] / "summary.json").read_text())
    gap = summary["generalisation_gap"]
    assert [row["generation"] for row in gap] == [0, 1, 2, 3, 4]
    with sqlite3.connect(runs[True] / "store.sqlite") as db:
        flagged = {
            m for (text,) in db.execute("SELECT record FROM generalisation") for m in json.loads(text)["overfitting"]
        }
    overfitting = {member["id"] for member in summary["front"] if member["overfits"]}
    # The seed-1 run of this size finds the deletion of the range check (see docs/guides/overfitting.md): it overfits.
    assert overfitting, "expected an overfitting member on this front"
    assert overfitting <= flagged, "a front member that overfits was not flagged when it joined the front"
    for row in gap:
        assert 0 <= row["overfit"] <= row["checked"]
        assert row["rate"] == (round(row["overfit"] / row["checked"], 4) if row["checked"] else None)
    # The original is no patch: it is on the front from generation 0 on, and never checked.
    with sqlite3.connect(runs[True] / "store.sqlite") as db:
        records = [json.loads(text) for (text,) in db.execute("SELECT record FROM generalisation")]
    checked = [member for record in records for member in record["members"]]
    assert "g0-i0" not in checked and gap[0]["checked"] == 0, "generation 0's front holds only the original"
    assert any(row["checked"] == 0 for row in gap), "a generation that checked nothing is needed to test its rate"


@pytest.mark.slow
def test_the_overfitting_rate_leaves_the_original_out(runs: dict[bool, Path]) -> None:
    summary = json.loads((runs[True] / "summary.json").read_text())
    patches = [member for member in summary["front"] if member["edits"]]
    assert len(patches) < len(summary["front"]), "the original is on this front (size is an objective)"
    assert patches and all(member["overfits"] for member in patches)
    assert summary["overfitting_rate"] == 1.0, "every patch on the front overfits: 100%, whatever the original does"


@pytest.mark.slow
def test_a_generation_that_checked_nothing_reads_as_no_rate(
    runs: dict[bool, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = json.loads((runs[True] / "summary.json").read_text())
    unchecked = [row["generation"] for row in summary["generalisation_gap"] if row["checked"] == 0]
    checked = [row for row in summary["generalisation_gap"] if row["checked"]]
    assert unchecked and checked
    assert plots.gap_points(summary["generalisation_gap"]) == (
        [row["generation"] for row in checked],
        [row["rate"] for row in checked],
    ), "the plot draws only the generations that checked a member"
    # A run folder of an older gi wrote 0 for "nothing checked": it reads as "-" too.
    old = tmp_path / "old"
    shutil.copytree(runs[True], old)
    gap = [{**row, "rate": row["rate"] if row["checked"] else 0.0} for row in summary["generalisation_gap"]]
    (old / "summary.json").write_text(json.dumps({**summary, "generalisation_gap": gap}))
    for folder in (runs[True], old):
        capsys.readouterr()
        assert main(["report", str(folder)]) == 0
        markdown = (folder / "report.md").read_text()
        for generation in unchecked:
            assert f"| grading-simplify | {generation} | 0 | 0 | - |" in markdown
        for row in checked:
            cells = (row["generation"], row["checked"], row["overfit"], f"{row['rate']:.0%}")
            assert "| grading-simplify | {} | {} | {} | {} |".format(*cells) in markdown
        assert main(["show", str(folder)]) == 0
        shown = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
        rows = {cells[1]: cells for cells in shown if len(cells) == 9 and cells[1].isdigit()}
        assert all(rows[str(generation)][7] == "-" for generation in unchecked)


@pytest.mark.slow
def test_show_prints_the_gap(runs: dict[bool, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(runs[True])]) == 0
    out = capsys.readouterr().out
    assert "Generalisation gap" in out
    assert main(["show", str(runs[False])]) == 0
    assert "Generalisation gap" not in capsys.readouterr().out


@pytest.mark.slow
def test_minimised_patch_of_dead_branch_deletions_is_one_minimal(runs: dict[bool, Path]) -> None:
    found = Patch((DOCSTRING, RANGE_CHECK, DEAD_PRINT, DEAD_BRANCH))
    with FinishedRun(runs[True]) as run:
        kept = kept_of(run, found)
        assert dict(zip(run.names, kept.values, strict=True))["complexity"] == 9
        smaller, passes, kept_itself = minimize_patch(run, found, kept)
        assert kept_itself
        assert smaller.edits == (RANGE_CHECK, DEAD_BRANCH)
        # It deletes the range check that only the held-out tests exercise: it overfits.
        assert run.experiment.held_out is not None
        held_out = run.experiment.held_out
        [(variant, evaluation)] = run.evaluate([found], "test")
        [outcomes] = held_out.outcomes([variant])
        assert overfits(evaluation.tests, run.baseline.tests, outcomes, held_out.baseline)
        assert sum(passes.counts.values()) > 0
        assert_one_minimal(run, smaller, kept)


@pytest.mark.slow
def test_gi_minimize_puts_the_minimal_patch_beside_the_found_one(
    runs: dict[bool, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = runs[True]
    assert main(["minimize", str(folder)]) == 0
    summary = json.loads((folder / "summary.json").read_text())
    assert any(member["edits"] for member in summary["front"]), "the front holds no patch to minimise"
    for member in summary["front"]:
        minimal = member["minimal"]
        assert len(minimal["edits"]) <= len(member["edits"])
        assert minimal["removed"] == len(member["edits"]) - len(minimal["edits"])
        if minimal["diff"]:
            assert (folder / minimal["diff"]).read_text().startswith("--- a/grading.py")
    # A finished run run again rewrites its report from the store: the minimal patches stay.
    assert main(["run", str(folder.parents[1] / "with.toml"), "--quiet"]) == 0
    again = json.loads((folder / "summary.json").read_text())
    assert [m["minimal"] for m in again["front"]] == [m["minimal"] for m in summary["front"]]
    capsys.readouterr()
    assert main(["minimize", str(folder), "g9-i9"]) == 2
    assert capsys.readouterr().err.startswith("gi: error: ")


@pytest.mark.slow
def test_ablation_names_the_edit_that_deletes_held_out_behaviour(runs: dict[bool, Path]) -> None:
    found = Patch((DOCSTRING, RANGE_CHECK, DEAD_PRINT, DEAD_BRANCH))
    with FinishedRun(runs[True]) as run:
        records = ablate(run, found)
    by_edit = {found.edits[record["edit"]]: record for record in records}
    rejects = {
        "holdout/test_grading_holdout.py::test_rejects_negative_scores",
        "holdout/test_grading_holdout.py::test_rejects_scores_over_100",
    }
    assert set(by_edit[RANGE_CHECK]["holdout_causes"]) == rejects
    assert by_edit[RANGE_CHECK]["overfits_without"] is False, "without the deletion, nothing overfits"
    assert {edit for edit, record in by_edit.items() if record["holdout_causes"]} == {RANGE_CHECK}
    assert all(record["overfits_without"] for edit, record in by_edit.items() if edit != RANGE_CHECK)
    complexity = {edit: record["contribution"]["complexity"] for edit, record in by_edit.items()}
    assert complexity == {RANGE_CHECK: -2, DEAD_BRANCH: -1, DOCSTRING: 0, DEAD_PRINT: 0}
    assert all(record["feasible_without"] for record in records)


@pytest.mark.slow
def test_the_ablation_table_shows_what_each_edit_breaks_alone(runs: dict[bool, Path]) -> None:
    """Two edits that each break the range check's tests on their own: neither causes a failure
    (the other breaks the same tests without it), so only what each breaks alone tells."""
    never = ReplaceOperator(Location("grading.py", "body[1].body.body[1].test"), "And")  # `or` -> `and`
    no_raise = ReplaceStatement(  # the raise becomes a copy of `return "F"`
        Location("grading.py", "body[1].body.body[1].body.body[0]"), Location("grading.py", "body[1].body.body[7]")
    )
    with FinishedRun(runs[True]) as run:
        records = ablate(run, Patch((never, no_raise)))
        names = list(run.names)
    rejects = [
        "holdout/test_grading_holdout.py::test_rejects_negative_scores",
        "holdout/test_grading_holdout.py::test_rejects_scores_over_100",
    ]
    assert [record["holdout_causes"] for record in records] == [[], []]
    assert [record["holdout_alone"] for record in records] == [rejects, rejects]
    console = Console(width=250, record=True)
    console.print(ablation_table({"id": "two", "ablation": records}, names))
    rows = [line for line in console.export_text().splitlines() if line.startswith("│")]
    assert len(rows) == 2
    for row, record in zip(rows, records, strict=True):
        assert row.count("test_rejects_negative_scores, test_rejects_scores_over_100") == 1
        shown = row.split("│")[2].strip()
        if len(record["description"]) > DESCRIPTION_WIDTH:
            assert shown.endswith("…") and len(shown) <= DESCRIPTION_WIDTH
            assert record["description"].startswith(shown[:-1].rstrip())
        else:
            assert shown == record["description"]
    assert any(len(record["description"]) > DESCRIPTION_WIDTH for record in records), "no description is cut"


@pytest.mark.slow
def test_gi_ablate_then_show_prints_each_edits_share(
    runs: dict[bool, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = runs[True]
    assert main(["ablate", str(folder)]) == 0
    summary = json.loads((folder / "summary.json").read_text())
    overfitting = [member for member in summary["front"] if member["overfits"]]
    assert overfitting
    for member in overfitting:  # some edit of an overfitting member causes its held-out failures
        causes = {test for record in member["ablation"] for test in record["holdout_causes"]}
        assert causes and causes <= set(member["holdout"]["regressions"])
    capsys.readouterr()
    assert main(["show", str(folder), overfitting[0]["id"]]) == 0
    assert "Ablation of" in capsys.readouterr().out


@pytest.mark.slow
def test_gi_validate_under_the_training_suite_finds_no_overfitting(runs: dict[bool, Path], tmp_path: Path) -> None:
    suite = tmp_path / "again"
    suite.mkdir()
    (suite / "test_again.py").write_text((GRADING / "tests" / "test_grading.py").read_text())
    assert main(["validate", str(runs[True]), "--tests", str(suite)]) == 0
    summary = json.loads((runs[True] / "summary.json").read_text())
    figures = summary["validation"]
    # The suite really ran on the original: it passes every test it passes in training.
    assert figures["baseline"] == {**summary["baseline"]["training"], "skipped": 0}
    assert figures["baseline"]["passed"] > 0
    assert figures["feasible"]["checked"] > 0 and figures["feasible"]["overfit"] == 0
    assert figures["front"]["overfit"] == 0


@pytest.mark.slow
def test_gi_validate_under_the_held_out_suite_flags_the_range_check_deletions(
    runs: dict[bool, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = runs[True]
    assert main(["validate", str(folder), "--tests", str(GRADING / "holdout")]) == 0
    summary = json.loads((folder / "summary.json").read_text())
    figures = summary["validation"]
    assert figures["baseline"] == {"passed": 3, "failed": 0, "skipped": 0}
    rejects = {"test_rejects_negative_scores", "test_rejects_scores_over_100"}
    for member in summary["front"]:
        result = figures["members"][member["id"]]
        diff = (folder / member["diff"]).read_text() if member["diff"] else ""
        removes_check = '-        raise ValueError(f"score out of range: {score}")' in diff
        assert result["overfits"] is removes_check, member["descriptions"]
        assert {test.split("::")[-1] for test in result["regressions"]} == (rejects if removes_check else set())
    assert figures["front"]["overfit"] == figures["front"]["checked"] == 1, "the original is in no rate"
    capsys.readouterr()
    assert main(["show", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "the original under this suite: 3 passed, 0 failed, 0 skipped" in out


@pytest.mark.slow
def test_gi_validate_refuses_a_suite_the_original_fails(
    runs: dict[bool, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = runs[True]
    assert main(["validate", str(folder)]) == 0
    before = json.loads((folder / "summary.json").read_text())["validation"]
    suite = tmp_path / "broken"
    suite.mkdir()
    (suite / "test_broken.py").write_text(
        "import grading\n\n\ndef test_a():\n    assert False\n\n\ndef test_b():\n    assert grading.nothing\n"
    )
    capsys.readouterr()
    assert main(["validate", str(folder), "--tests", str(suite)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("gi: error:")]
    assert errors == [
        f"gi: error: {suite}: the original program passes none of its 2 tests (2 failed, 0 skipped), so no"
        " program can overfit them; the stored figures are left as they were"
    ]
    assert json.loads((folder / "summary.json").read_text())["validation"] == before
    with sqlite3.connect(folder / "store.sqlite") as db:
        [(stored,)] = db.execute("SELECT value FROM meta WHERE key = 'validation'")
    assert json.loads(stored) == before


@pytest.mark.slow
def test_gi_validate_on_the_runs_own_held_out_tests_agrees_with_the_run(
    runs: dict[bool, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(runs[True])]) == 0
    summary = json.loads((runs[True] / "summary.json").read_text())
    figures = summary["validation"]
    assert {m["id"]: m["overfits"] for m in summary["front"]} == {
        member: row["overfits"] for member, row in figures["members"].items()
    }
    assert figures["front"]["overfit"] == sum(m["overfits"] for m in summary["front"]) > 0
    by_operator = figures["operators"].values()
    assert sum(share["checked"] for share in by_operator) == figures["feasible"]["checked"]
    assert sum(share["overfit"] for share in by_operator) == figures["feasible"]["overfit"] > 0
    assert figures["groups"]["model"]["checked"] == 0, "no language model in this run"
    capsys.readouterr()
    assert main(["show", str(runs[True])]) == 0
    assert "every feasible program" in capsys.readouterr().out
    assert main(["validate", str(runs[True]), "--tests", "/nowhere/tests"]) == 2
    assert capsys.readouterr().err.strip() == "gi: error: --tests /nowhere/tests: no such file or folder"


@pytest.mark.slow
def test_studies_measure_apart_from_the_run(runs: dict[bool, Path]) -> None:
    """What `gi validate` and `gi ablate` run on the held-out tests is theirs: summary.json's
    `measurements` keep saying what the run measured."""
    folder = runs[True]
    config = folder.parents[1] / "with.toml"
    assert main(["run", str(config), "--quiet"]) == 0  # a finished run rewrites its report
    measured = json.loads((folder / "summary.json").read_text())["measurements"]["measured"]
    assert measured["holdout"] > 0
    assert main(["validate", str(folder)]) == 0
    assert main(["ablate", str(folder)]) == 0
    assert main(["run", str(config), "--quiet"]) == 0
    again = json.loads((folder / "summary.json").read_text())["measurements"]
    assert again["measured"] == measured
    feasible = json.loads((folder / "summary.json").read_text())["validation"]["feasible"]["checked"]
    assert again["studies"]["holdout"] > 0 and again["studies"]["holdout"] + measured["holdout"] >= feasible


@pytest.mark.slow
def test_a_run_folder_copied_elsewhere_is_studied_with_its_config(
    runs: dict[bool, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The sharing case: a run folder and its config copied to another machine, where the path
    summary.json names for the config does not exist."""
    folder = runs[True]
    shared = tmp_path / "shared"
    copy = shared / "grading-simplify-seed1"
    shutil.copytree(folder, copy)
    summary = json.loads((copy / "summary.json").read_text())
    summary["experiment"]["config"] = "/home/someone/experiments/grading.toml"
    (copy / "summary.json").write_text(json.dumps(summary))
    config = shared / "grading.toml"
    shutil.copyfile(folder.parents[1] / "with.toml", config)
    original = (folder / "summary.json").read_text()
    capsys.readouterr()

    assert main(["validate", str(copy)]) == 2
    [error] = capsys.readouterr().err.splitlines()
    assert error.startswith(f"gi: error: {copy}: the run's config cannot be read: ") and "--config CONFIG" in error

    assert main(["validate", str(copy), "--config", str(config)]) == 0
    assert json.loads((copy / "summary.json").read_text())["validation"]["front"]["checked"] == 1
    assert main(["ablate", str(copy), "--config", str(config)]) == 0
    assert main(["minimize", str(copy), "--config", str(config)]) == 0
    studied = json.loads((copy / "summary.json").read_text())
    assert all("minimal" in member for member in studied["front"])
    assert (folder / "summary.json").read_text() == original, "the run the folder was copied from is untouched"

    other = shared / "other.toml"
    other.write_text(config.read_text().replace("population = 8", "population = 9"))
    capsys.readouterr()
    assert main(["validate", str(copy), "--config", str(other)]) == 2
    [error] = capsys.readouterr().err.splitlines()
    assert error == (
        f"gi: error: {copy}: no run of {other} made this run folder (the config changed, or it is another"
        " experiment's); pass the config the run was made with: --config CONFIG"
    )
    for command in ("minimize", "ablate"):
        assert main([command, str(copy), "original", "--config", str(config)]) == 2
        [error] = capsys.readouterr().err.splitlines()
        assert error.startswith(f"gi: error: {copy}: the original has no edits, so there is nothing to ")


@pytest.mark.slow
def test_gi_validate_counts_overfitting_by_counterexamples_apart(
    runs: dict[bool, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = runs[True]
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 0
    summary = json.loads((folder / "summary.json").read_text())
    figures = summary["validation"]
    judged = {member_id: member for member_id, member in figures["members"].items() if member.get("behaviour")}
    verdicts = [member["behaviour"]["verdict"] for member in judged.values()]
    behaviour = figures["behaviour"]
    assert behaviour["checked"] == verdicts.count("same") + verdicts.count("changed") >= 1
    assert behaviour["overfit"] == verdicts.count("changed")
    both = sum(m["behaviour"]["verdict"] == "changed" and m["overfits"] for m in judged.values())
    assert (behaviour["both"], behaviour["oracle_only"]) == (both, verdicts.count("changed") - both)
    for member_id, member in judged.items():  # the run's own verdicts, recorded, are the study's
        [recorded] = [m["behaviour"] for m in summary["front"] if m["id"] == member_id]
        assert member["behaviour"]["verdict"] == recorded["verdict"]
        assert (member["behaviour"]["counterexample"] is not None) == (recorded["verdict"] == "changed")
    out = capsys.readouterr().out
    assert "front, by counterexamples" in out and f"{behaviour['oracle_only']} by counterexamples only" in out
