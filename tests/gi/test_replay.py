"""Replaying a speed run: recorded timings and cached replies, no measuring and no model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.cli import main
from tests.gi.test_llm_runs import LINEAR, PROGRAM, TESTS
from tests.llm_server import Action, ModelServer, ScriptedModel, serve

WORKLOAD = """\
from pairs import has_pair_with_sum


def run():
    values = list(range(0, 400, 3))
    return [has_pair_with_sum(values, target) for target in (5, 401, 1000)]
"""

HOLDOUT = """\
from pairs import has_pair_with_sum


def test_negative_numbers():
    assert has_pair_with_sum([-3, 7], 4)
"""


def write_speed_experiment(tmp_path: Path, base_url: str) -> Path:
    program = tmp_path / "pairs"
    for folder in ("tests", "holdout"):
        (program / folder).mkdir(parents=True, exist_ok=True)
    (program / "pairs.py").write_text(PROGRAM)
    (program / "tests" / "test_pairs.py").write_text(TESTS)
    (program / "holdout" / "test_more.py").write_text(HOLDOUT)
    (program / "workload.py").write_text(WORKLOAD)
    config = tmp_path / "pairs.toml"
    config.write_text(f"""\
[experiment]
name = "pairs"
seed = 5
output = "runs"

[program]
root = "pairs"
files = ["pairs.py"]

[tests]
train = ["tests"]
holdout = ["holdout"]
timeout = 20

[objectives]
minimize = ["failed_tests", "runtime", "size"]
constraint = "train_pass"

[search]
population = 6
generations = 2

[mutators]
operators = ["statement_delete", "constant", "comparison_operator"]
llm = 0.5

[workload]
call = "workload:run"
rigorous_processes = 4

[llm]
base_url = "{base_url}"
model = "scripted"
api_key_env = "GI_TEST_KEY"
api = "chat"
temperature = 0.8
timeout = 5
retries = 1
""")
    return config


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    scripted = ScriptedModel(default=Action(reply=LINEAR))
    for server in serve(scripted):
        yield scripted, server


def summary(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return data


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json without what a replay does not reproduce: time taken and tokens spent."""
    operators = {
        name: {k: v for k, v in row.items() if k not in ("seconds", "tokens", "cost")}
        for name, row in summary["operators"].items()
    }
    kept = {k: v for k, v in summary.items() if k not in ("wall_seconds", "measurements", "replay", "llm")}
    return {**kept, "operators": operators}


@pytest.mark.slow
def test_a_speed_run_replays_offline_to_the_same_front(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GI_TEST_KEY", "sk-test")
    scripted, server = model
    config = write_speed_experiment(tmp_path, server.base_url)
    assert main(["run", str(config), "--quiet"]) == 0
    run = tmp_path / "runs" / "pairs-seed5"
    recorded = summary(run)
    assert scripted.requests, "the model was never asked: the test would not test replies"
    assert recorded["measurements"]["replayed"] == {} and recorded["measurements"]["measured"]["timing"] == 3
    assert any(m.get("speedup") for m in recorded["front"])

    server.stop()
    asked = len(scripted.requests)
    assert main(["replay", str(config), "--quiet"]) == 0
    assert len(scripted.requests) == asked
    replay = summary(run / "replay")
    assert replay["replay"] == {"front": True, "history": True}
    assert replay["measurements"]["measured"] == {}, replay["measurements"]
    assert replay["measurements"]["replayed"]["evaluation"] == recorded["evaluations"]
    assert replay["llm"]["requests"] == 0 and replay["llm"]["cache_hits"] >= 1
    # Everything else summary.json says is the recorded run's (front, speed-ups, held-out
    # verdicts, per-generation statistics, drift, operator counts, warnings), but for clock
    # time and the model's usage: a replay spends no tokens.
    assert comparable(replay) == comparable(recorded)
    # The recorded run's own folder is untouched by its replay.
    assert summary(run) == recorded


def test_replaying_a_folder_without_a_run_is_a_clear_error(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], capsys: pytest.CaptureFixture[str]
) -> None:
    _, server = model
    config = write_speed_experiment(tmp_path, server.base_url)
    assert main(["replay", str(config), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "pairs-seed5" in error and "no run store" in error and "Traceback" not in error
