"""Whole runs of quality diversity: NSGA-II, MAP-Elites and islands (with a user's migration by
dotted path) as arms of an experiment, compared by `gi compare` on QD-score with A12 and Holm's
p; and islands with a model mode of their own, against a scripted server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.reports.compare import compare
from tests.llm_server import ModelServer, ScriptedModel, serve
from tests.run.test_llm_modes import DIFF, answering, mode_of, write_experiment

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"

#: A user's migration: every island sends its best to island 0, and says so in a file beside it.
STRATEGY = """\
from pathlib import Path

from gi.algorithms.strategies import BestMigrants


class ToTheFirst(BestMigrants):
    def routes(self, count, rng):
        with open(Path(__file__).with_name("routes.log"), "a") as log:
            log.write(f"{count}\\n")
        return [(index, 0) for index in range(1, count)]
"""

ARMS = """
[search.grid]
features = ["edit_kind", "size"]

[[arms]]
name = "nsga2"

[[arms]]
name = "map_elites"
search = { algorithm = "map_elites" }

[[arms]]
name = "islands"
search = { algorithm = "islands", islands = { count = 2, interval = 1, migration = "strategies:ToTheFirst" } }
"""


def write_arms(tmp_path: Path) -> Path:
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{EXPERIMENTS / "programs" / "grading"}"')
    text = text.replace("timeout = 10 ", "timeout = 60 ")  # the original's tests on a loaded machine
    text = text.replace("seed = 1\n", "seeds = [1]\n")
    text = text.replace("population = 20\ngenerations = 10", "population = 4\ngenerations = 10\nmax_evaluations = 6")
    text = text.replace('name = "grading-simplify"', 'name = "qd"')
    path = tmp_path / "qd.toml"
    path.write_text(text + ARMS + "\n[evaluation]\nworkers = 2\n")
    (tmp_path / "strategies.py").write_text(STRATEGY)
    return path


@pytest.mark.slow
def test_nsga2_map_elites_and_islands_compare_on_qd_score(tmp_path: Path) -> None:
    assert main(["run", str(write_arms(tmp_path)), "--quiet"]) == 0
    folder = tmp_path / "runs" / "qd"
    runs = [path for path in folder.iterdir() if (path / "summary.json").is_file()]
    summaries = {path.name: json.loads((path / "summary.json").read_text()) for path in runs}
    assert sorted(summaries) == [f"{arm}-seed{seed}" for arm in ("islands", "map_elites", "nsga2") for seed in (1,)]
    for name, summary in summaries.items():
        grid = summary["quality_diversity"]
        assert [feature["name"] for feature in grid["features"]] == ["edit_kind", "size"], name
        assert grid["filled"] == len(grid["elites"]) >= 1 and grid["coverage"] == grid["filled"] / grid["cells"]
        assert grid["qd_score"] == pytest.approx(sum(elite["quality"] for elite in grid["elites"]), abs=1e-5)
        assert any(elite["id"] == "original" and elite["quality"] == 1.0 for elite in grid["elites"])
        scores = [row["qd_score"] for row in summary["generations"]]
        assert scores == sorted(scores), "a cell's elite only ever gives way to a better one"
    assert (folder / "map_elites-seed1" / "report-images" / "grid.png").is_file()
    assert "Quality diversity" in (folder / "map_elites-seed1" / "report.md").read_text()
    routes = (tmp_path / "routes.log").read_text().split()
    assert routes and set(routes) == {"2"}, "the user's migration chose the routes, between two islands"

    result = compare([folder])
    names = [measure["name"] for measure in result["measures"]]
    assert names[:3] == ["hypervolume", "QD-score", "coverage"]
    pairs = [row for row in result["pairs"] if row["measure"] == "QD-score"]
    assert {(row["first"], row["second"]) for row in pairs} == {
        ("nsga2", "map_elites"), ("nsga2", "islands"), ("map_elites", "islands")
    }  # fmt: skip
    assert all(0 <= row["a12"] <= 1 and row["p"] <= row["p_holm"] <= 1 for row in pairs)
    for run in result["runs"]:
        summary = summaries[Path(run["folder"]).name]
        # On the shared reference point (every run's is the same here), the run's own QD-score.
        assert run["QD-score"] == pytest.approx(summary["quality_diversity"]["qd_score"], rel=1e-4)


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    scripted = ScriptedModel()
    for server in serve(scripted):
        yield scripted, server


@pytest.mark.slow
def test_an_islands_model_modes_replace_the_sections(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """[llm] asks for rewrites only; the one island with the model asks for diffs only, and the
    other island never asks: every request is a diff."""
    monkeypatch.setenv("GI_TEST_KEY", "sk-test")
    scripted, server = model
    scripted.respond = answering({"diff": DIFF})
    search = (
        'algorithm = "islands"\n'
        "[search.islands]\ninterval = 1\n"
        '[[search.islands.island]]\noperators = ["llm", "statement_delete"]\nmodes = { diff = 1 }\n'
        '[[search.islands.island]]\noperators = ["constant"]\n'
    )
    config = write_experiment(tmp_path, server.base_url, search=search, llm="")
    text = config.read_text().replace("modes = { rewrite = 1, diff = 1, crossover = 1 }", "modes = { rewrite = 1 }")
    text = text.replace("generations = 3", "generations = 1")  # the initial population and one more
    config.write_text(text)
    assert main(["run", str(config), "--quiet"]) == 0
    modes = [mode_of(body) for body in scripted.requests]
    assert modes and set(modes) == {"diff"}
    summary: dict[str, Any] = json.loads((tmp_path / "runs" / "pairs-seed3" / "summary.json").read_text())
    assert any(edit.get("mode") == "diff" for member in summary["front"] for edit in member["edits"])
