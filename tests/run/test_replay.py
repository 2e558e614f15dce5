"""Replaying a speed run: recorded timings and cached replies, no measuring and no model."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.mutators.llm.cache import request_key
from tests.llm_server import Action, ModelServer, ScriptedModel, serve
from tests.run.test_llm_runs import LINEAR, PROGRAM, TESTS

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


@dataclass
class Recorded:
    """A finished speed run of the pairs experiment, made once for this module: its folder (the
    config, the program and runs/), the scripted model and its server, still serving, and the
    requests the run made."""

    folder: Path
    scripted: ScriptedModel
    server: ModelServer
    requests: list[dict[str, Any]]

    @property
    def config(self) -> Path:
        return self.folder / "pairs.toml"

    def copy(self, tmp_path: Path) -> Path:
        """A copy of the experiment with its recorded run (without replays of it), for one test
        to change; its config. (summary.json names the folders of the run that wrote it, so a
        replay is compared with its recorded run in the recorded folder itself.)"""
        shutil.copytree(self.folder, tmp_path / "experiment", ignore=shutil.ignore_patterns("replay"))
        return tmp_path / "experiment" / "pairs.toml"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recorded]:
    scripted = ScriptedModel(default=Action(reply=LINEAR))
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("GI_TEST_KEY", "sk-test")
        for server in serve(scripted):
            folder = tmp_path_factory.mktemp("recorded")
            assert main(["run", str(write_speed_experiment(folder, server.base_url)), "--quiet"]) == 0
            yield Recorded(folder, scripted, server, list(scripted.requests))


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    scripted = ScriptedModel(default=Action(reply=LINEAR))
    for server in serve(scripted):
        yield scripted, server


def summary(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return data


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """summary.json without what a replay does not reproduce: time taken, tokens spent and the
    oracle's recording."""
    operators = {
        name: {k: v for k, v in row.items() if k not in ("seconds", "tokens", "cost")}
        for name, row in summary["operators"].items()
    }
    # `evaluators`: the seconds the evaluators and the loop took (a replay evaluates nothing).
    skipped = ("wall_seconds", "evaluators", "measurements", "replay", "llm")
    kept = {k: v for k, v in summary.items() if k not in skipped}
    # The oracle's verdicts are replayed; its recording of the tests' calls is not made again, so
    # the replay reports no recording and no seconds spent.
    not_redone = ("seconds", "recording_seconds", "functions_recorded", "tests_recorded")
    if kept.get("oracle"):
        kept["oracle"] = {k: v for k, v in kept["oracle"].items() if k not in not_redone}
    return {**kept, "operators": operators}


@pytest.mark.slow
def test_a_speed_run_replays_offline_to_the_same_front(recorded: Recorded) -> None:
    config = recorded.config
    run = config.parent / "runs" / "pairs-seed5"
    made = summary(run)
    assert recorded.requests, "the model was never asked: the test would not test replies"
    assert made["measurements"]["replayed"] == {} and made["measurements"]["measured"]["timing"] == 3
    assert any(m.get("speedup") for m in made["front"])

    # The model's rewrite is what makes this a test of replayed replies: it is on the front.
    assert any(edit.get("model") for member in made["front"] for edit in member["edits"]), made["front"]

    asked = len(recorded.scripted.requests)
    assert main(["replay", str(config), "--quiet"]) == 0
    replay = summary(run / "replay")
    assert replay["replay"] == {"front": True, "history": True}
    assert replay["measurements"]["measured"] == {}, replay["measurements"]
    assert replay["measurements"]["replayed"]["evaluation"] == made["evaluations"]
    # No request reached the server (it records every one), every reply came from the cache.
    assert len(recorded.scripted.requests) == asked
    assert replay["llm"]["requests"] == 0 and replay["llm"]["failures"] == 0, replay["llm"]
    assert replay["llm"]["cache_hits"] >= 1
    # Everything else summary.json says is the recorded run's (front, speed-ups, held-out
    # verdicts, per-generation statistics, drift, operator counts, warnings), but for clock
    # time and the model's usage: a replay spends no tokens.
    assert comparable(replay) == comparable(made)
    # The recorded run's own folder is untouched by its replay.
    assert summary(run) == made


def test_replaying_a_folder_without_a_run_is_a_clear_error(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], capsys: pytest.CaptureFixture[str]
) -> None:
    _, server = model
    config = write_speed_experiment(tmp_path, server.base_url)
    assert main(["replay", str(config), "--quiet"]) == 2
    error = capsys.readouterr().err
    assert "pairs-seed5" in error and "no run store" in error and "Traceback" not in error
    # A recorded folder that does not exist: one line, before anything starts (no sandbox or
    # progress line), and no folder made for the replay.
    nowhere = tmp_path / "nowhere"
    assert main(["replay", str(config), "--from", str(nowhere)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"gi: error: --from {nowhere}: no such folder; give the folder of the run to replay"]
    assert not nowhere.exists()


def request_keys(body: dict[str, Any], base_url: str, samples: int = 20) -> set[str]:
    """The reply cache's file names a request the server got can have been stored under (one per
    sample index): the cache keys a request by its content, the run's seed and sample index."""
    request = {key: body[key] for key in ("model", "messages", "temperature", "max_tokens")}
    request["base_url"] = base_url
    request["seed"] = 5  # the config's
    return {f"{request_key({**request, 'api': 'chat', 'sample': index})}.json" for index in range(samples)}


# Exhaustive: test_a_speed_run_replays_offline_to_the_same_front (this file) answers every request from the
# cache.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_a_fresh_speed_run_asks_only_for_replies_not_in_the_cache(tmp_path: Path, recorded: Recorded) -> None:
    """Another machine's run of the same speed config: it measures anew (timings steer it
    elsewhere) and asks the model only what the reply cache cannot answer."""
    config = recorded.copy(tmp_path)
    cache = config.parent / "runs" / "llm-cache"
    before = {path.name for path in cache.rglob("*.json")}
    first = recorded.requests
    assert first and all(request_keys(body, recorded.server.base_url) & before for body in first), (
        "the cache keys are not understood"
    )

    earlier = len(recorded.scripted.requests)
    # The fewest rigorous processes: this run is about the reply cache, not its speed-ups.
    assert main(["run", str(config), "--fresh", "--quiet", "--set", "workload.rigorous_processes=2"]) == 0
    fresh = summary(config.parent / "runs" / "pairs-seed5")
    asked = recorded.scripted.requests[earlier:]
    new = {path.name for path in cache.rglob("*.json")} - before
    assert fresh["measurements"]["replayed"] == {} and fresh["measurements"]["measured"]["timing"] == 3
    assert fresh["llm"]["cache_hits"] >= 1, "the warm cache answered nothing"
    assert fresh["llm"]["requests"] == len(asked)
    # Each request the server got stored a reply under a key the cache did not hold: none asked
    # for what was cached (it would have overwritten a file, not added one).
    assert len(new) == len(asked)
    assert all(request_keys(body, recorded.server.base_url) & new for body in asked)


@pytest.mark.slow
def test_a_replay_of_a_changed_record_says_it_did_not_reach_it(
    tmp_path: Path, recorded: Recorded, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run folder where gi replay takes the config: one line saying which goes where.
    made = recorded.folder / "runs" / "pairs-seed5"
    assert main(["replay", str(made)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"gi: error: {made}: a folder; gi replay takes the experiment's config file, and --from the recorded run"
        f" folder: gi replay {recorded.config} --from {made}"
    ]
    config = recorded.copy(tmp_path)
    run = config.parent / "runs" / "pairs-seed5"
    # Tamper with the record: a program of the last generation now reads as much the fastest.
    with sqlite3.connect(run / "store.sqlite") as db:
        [(seq, text)] = db.execute(
            "SELECT seq, evaluation FROM evaluations WHERE generation = 2 AND evaluation LIKE '%\"ok\"%'"
            " ORDER BY seq LIMIT 1"
        ).fetchall()
        evaluation = json.loads(text)
        evaluation["measures"] = {**evaluation["measures"], "failed_tests": 0, "runtime": 0.0001}
        db.execute("UPDATE evaluations SET evaluation = ? WHERE seq = ?", (json.dumps(evaluation), seq))
    asked = len(recorded.scripted.requests)
    assert main(["replay", str(config), "--quiet"]) == 1
    assert len(recorded.scripted.requests) == asked, "a replay asks the model nothing"
    out = capsys.readouterr().out
    assert f"replay of {run}: did not reach the recorded front and history" in " ".join(out.split())
    assert summary(run / "replay")["replay"] == {"front": False, "history": False}
