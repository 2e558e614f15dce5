"""The model's modes in whole runs, against a scripted server that answers by the prompt's content.

Each mode's edit reaches the front where only that mode's reply improves the program; requests
are in flight while candidates are evaluated, and how fast replies come changes no front; a
request budget holds across an interruption; a run that used every mode replays offline; an
honest import and helper beside a rewrite pass the tamper guard and are evaluated.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from tests.llm_server import Action, ModelServer, ScriptedModel, serve
from tests.run.test_llm_runs import LINEAR, PROGRAM, TESTS

#: A diff that makes the inner loop start after i: no pair is counted twice, no `i != j` test.
DIFF = """\
The inner loop can start after i:

<<<<<<< SEARCH
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
=======
        for j in range(i + 1, len(values)):
            if values[i] + values[j] == target:
>>>>>>> REPLACE
"""

#: A merge of two versions (the crossover's reply).
MERGED = """\
```python
def has_pair_with_sum(values, target):
    \"\"\"True if two different entries of values add up to target.\"\"\"
    return any(target - value in values[i + 1 :] for i, value in enumerate(values))
```
"""

#: A rewrite that changes the function without improving it (a partner for crossover).
PADDED = """\
```python
def has_pair_with_sum(values, target):
    \"\"\"True if two different entries of values add up to target.\"\"\"
    values = list(values)
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
                return True
    return False
```
"""

UNCHANGED = f"```python\n{PROGRAM}```"


def mode_of(body: dict[str, Any]) -> str:
    """Which mode asked: the prompts say it."""
    text = json.dumps(body)
    if "SEARCH/REPLACE" in text:
        return "diff"
    if "combines the strengths of both" in text:
        return "crossover"
    return "rewrite"


def answering(replies: dict[str, str], delay: float = 0.0) -> Callable[[dict[str, Any]], Action]:
    def respond(body: dict[str, Any]) -> Action:
        return Action(reply=replies.get(mode_of(body), UNCHANGED), delay=delay)

    return respond


def write_experiment(
    tmp_path: Path, base_url: str, *, llm: str = "", search: str = "", objectives: str = ""
) -> Path:  # fmt: skip
    program = tmp_path / "pairs"
    (program / "tests").mkdir(parents=True, exist_ok=True)
    (program / "pairs.py").write_text(PROGRAM)
    (program / "tests" / "test_pairs.py").write_text(TESTS)
    config = tmp_path / "pairs.toml"
    config.write_text(f"""\
[experiment]
name = "pairs"
seed = 3
output = "runs"

[program]
root = "pairs"
files = ["pairs.py"]

[tests]
train = ["tests"]
timeout = 20

[evaluation]
workers = 2

[objectives]
minimize = {objectives or '["failed_tests", "complexity", "size"]'}

[search]
population = 6
generations = 3
{search}

[mutators]
operators = ["statement_delete", "constant"]
llm = 1.0

[llm]
base_url = "{base_url}"
model = "scripted"
api_key_env = "GI_TEST_KEY"
timeout = 20
retries = 0
max_requests = 200
modes = {{ rewrite = 1, diff = 1, crossover = 1 }}
{llm}
""")
    return config


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    scripted = ScriptedModel()
    for server in serve(scripted):
        yield scripted, server


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GI_TEST_KEY", "sk-test")


def summary_of(tmp_path: Path, run: str = "pairs-seed3") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "runs" / run / "summary.json").read_text())
    return data


def front_modes(summary: dict[str, Any]) -> set[str]:
    """The modes of the model's edits on the front."""
    return {edit["mode"] for member in summary["front"] for edit in member["edits"] if edit.get("model")}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("mode", "replies"),
    [
        ("rewrite", {"rewrite": LINEAR}),
        ("diff", {"diff": DIFF}),
        ("crossover", {"crossover": MERGED, "rewrite": PADDED}),
    ],
)
def test_each_mode_s_edit_reaches_the_front_where_only_it_improves_the_program(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], mode: str, replies: dict[str, str]
) -> None:
    scripted, server = model
    scripted.respond = answering(replies)
    assert main(["run", str(write_experiment(tmp_path, server.base_url)), "--quiet"]) == 0
    summary = summary_of(tmp_path)
    assert mode in front_modes(summary), summary["front"]
    improved = [m for m in summary["front"] if m["objectives"]["failed_tests"] == 0 and m["id"] != "original"]
    assert any(m["objectives"]["complexity"] < summary["baseline"]["objectives"]["complexity"] for m in improved)
    counts = summary["llm"]["modes"][mode]
    assert counts["edits"] >= 1 and counts["apply_rate"] > 0 and counts["improvements"] >= 1
    assert summary["llm"]["first_improvement"]["mode"] == mode
    # (The member on the front may be a later offspring that kept the mode's edit: a drop of
    # another edit, say; the row of the mode counts the offspring it made itself.)


# Exhaustive: tests/run/test_llm_runs.py holds a reply until an evaluation ends, and compares the fronts.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_requests_fly_while_candidates_are_evaluated_and_reply_speed_changes_no_front(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """`concurrency = 8` against a server that takes a while: the requests of a generation are in
    the air together, and the front is the one `concurrency = 1` finds (benchmarks/llm_speed.py
    times the two side by side)."""
    scripted, server = model
    replies = {"rewrite": LINEAR, "diff": DIFF, "crossover": MERGED}
    scripted.respond = answering(replies, delay=0.5)
    search = "crossover_rate = 0.0"
    fast = write_experiment(tmp_path / "eight", server.base_url, llm="concurrency = 8", search=search)
    assert main(["run", str(fast), "--quiet"]) == 0
    arrivals = sorted(scripted.arrivals)
    # Several requests arrived within one reply's delay of each other: they were in flight together.
    assert any(later - earlier < 0.25 for earlier, later in zip(arrivals, arrivals[3:], strict=False))
    slow = write_experiment(tmp_path / "one", server.base_url, llm="concurrency = 1", search=search)
    assert main(["run", str(slow), "--quiet"]) == 0
    eight, one = summary_of(tmp_path / "eight"), summary_of(tmp_path / "one")
    assert [(m["id"], m["edits"]) for m in eight["front"]] == [(m["id"], m["edits"]) for m in one["front"]]
    assert eight["generations"] == one["generations"]
    assert eight["llm"]["requests"] == one["llm"]["requests"]


@pytest.mark.slow
def test_a_request_budget_holds_across_an_interruption_and_a_resume(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    scripted, server = model
    budget = 6
    scripted.respond = answering({"rewrite": LINEAR, "diff": DIFF, "crossover": MERGED}, delay=0.4)
    config = write_experiment(tmp_path, server.base_url, llm=f"max_requests = {budget}\nconcurrency = 2")
    config.write_text(config.read_text().replace("max_requests = 200\n", ""))
    environment = {**os.environ, "GI_TEST_KEY": "sk-test"}
    process = subprocess.Popen(
        [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"],
        cwd=tmp_path, env=environment, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(scripted.requests) < 3 and time.monotonic() < deadline:  # killed with requests in flight
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = len(scripted.requests)
    assert 3 <= before <= budget
    assert main(["run", str(config), "--quiet"]) == 0  # resumes
    summary = summary_of(tmp_path)
    assert len(scripted.requests) <= budget, f"{len(scripted.requests)} requests reached the server"
    assert summary["llm"]["requests"] >= len(scripted.requests) - before
    assert summary["llm"]["stopped"] == f"the request budget is spent ({budget} requests)"


@pytest.mark.slow
def test_a_run_that_used_every_mode_replays_offline_to_its_front(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], capsys: pytest.CaptureFixture[str]
) -> None:
    scripted, server = model
    helper = LINEAR.replace("    seen = set()\n", "    seen = _empty()\n").replace(
        "```python\n", "```python\ndef _empty():\n    return set()\n\n\n"
    )
    scripted.respond = answering({"rewrite": helper, "diff": DIFF, "crossover": MERGED})
    config = write_experiment(tmp_path, server.base_url, llm="inspirations = 2\nreviewer = false")
    assert main(["run", str(config), "--quiet"]) == 0
    made = summary_of(tmp_path)
    kinds = {edit["kind"] for member in made["front"] for edit in member["edits"]}
    used = {mode for mode, counts in made["llm"]["modes"].items() if counts["edits"]}
    assert used == {"rewrite", "diff", "crossover"}, made["llm"]["modes"]
    assert "add_definition" in kinds or made["llm"]["modes"]["rewrite"]["edits"], kinds
    # gi show and the report set the modes side by side, with what improving cost.
    folder = tmp_path / "runs" / "pairs-seed3"
    capsys.readouterr()
    assert main(["show", str(folder)]) == 0
    shown = capsys.readouterr().out
    assert "Language model" in shown and all(mode in shown for mode in ("rewrite", "diff", "crossover"))
    report = (folder / "report.md").read_text()
    assert "### Language model" in report and "| model scripted |" in report
    assert f"{made['llm']['improvements']} improvement(s) on the original" in report
    asked = len(scripted.requests)
    server.stop()
    assert main(["replay", str(config), "--quiet"]) == 0
    assert len(scripted.requests) == asked, "a replay asks the model nothing"
    replay = summary_of(tmp_path, "pairs-seed3/replay")
    assert replay["replay"] == {"front": True, "history": True}
    assert [(m["id"], m["edits"]) for m in replay["front"]] == [(m["id"], m["edits"]) for m in made["front"]]


#: A rewrite that needs a plain standard-library import and a helper of its own.
IMPORT_AND_HELPER = '''\
```python
import itertools


def _pair_sums(values):
    return {a + b for a, b in itertools.combinations(values, 2)}


def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    return target in _pair_sums(values)
```
'''


@pytest.mark.slow
def test_an_honest_import_and_helper_pass_the_guard_and_reach_the_front(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """Plain standard-library code beside the function passes the tamper guard twice (the
    operator's check of the reply, the engine's of the variant): the import and the helper
    are each an edit of their own that is evaluated, passes the tests and stays on the front."""
    scripted, server = model
    scripted.respond = answering({"rewrite": IMPORT_AND_HELPER})
    assert main(["run", str(write_experiment(tmp_path, server.base_url)), "--quiet"]) == 0
    summary = summary_of(tmp_path)
    kept = [
        member for member in summary["front"]
        if {"add_import", "add_definition"} <= {edit["kind"] for edit in member["edits"]}
    ]  # fmt: skip
    assert kept, summary["front"]
    assert all(member["objectives"]["failed_tests"] == 0 for member in kept)
    assert summary["llm"]["modes"]["rewrite"]["tampering"] == 0
    assert summary["operators"]["llm.rewrite"]["passing"] >= 1


#: A rewrite that fails a training test (infeasible): the model hears so in the next generation.
ALWAYS_FALSE = """\
```python
def has_pair_with_sum(values, target):
    \"\"\"True if two different entries of values add up to target.\"\"\"
    return False
```
"""

#: Runs `gi` (its arguments), killed with SIGKILL as generation KILL_AT's checkpoint is about to be
#: written: after the generation's batch is stored, before the checkpoint.
KILLED_BEFORE_CHECKPOINT = """\
import os
import signal
import sys

from gi.engine.storage import RunStorage

save = RunStorage.save_generation


def killed(self, search, *args, **kwargs):
    if search.generation == int(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return save(self, search, *args, **kwargs)


RunStorage.save_generation = killed
from gi.cli.main import main

sys.exit(main(sys.argv[1:]))
"""


# Exhaustive: test_a_request_budget_holds_across_an_interruption_and_a_resume (this file) kills a model's run
# and resumes it.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_a_model_run_killed_between_a_batch_and_its_checkpoint_resumes_to_the_uninterrupted_front(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """The model's first rewrite fails a test; told so in the next generation (a follow-up), it
    answers with the linear version. A run killed after generation 0's batch was stored and before
    its checkpoint runs generation 0 again from the store: its offspring count as evaluated, the
    model hears of the failure, and the run reaches the uninterrupted run's front and history."""
    scripted, server = model

    def respond(body: dict[str, Any]) -> Action:
        told = "with this version the tests fail" in json.dumps(body)
        return Action(reply=LINEAR if told else ALWAYS_FALSE)

    scripted.respond = respond

    def rewrites_only(folder: Path) -> Path:
        config = write_experiment(folder, server.base_url, search="crossover_rate = 0.0")
        config.write_text(config.read_text().replace("modes = { rewrite = 1, diff = 1, crossover = 1 }", ""))
        return config

    whole = rewrites_only(tmp_path / "whole")
    assert main(["run", str(whole), "--quiet", "--generations", "2", "--population", "4"]) == 0
    expected = summary_of(tmp_path / "whole")
    assert any("seen = set()" in edit.get("source", "") for member in expected["front"] for edit in member["edits"]), (
        "the follow-up's linear version is on the front"
    )

    killed = rewrites_only(tmp_path / "killed")
    store = tmp_path / "killed" / "runs" / "pairs-seed3" / "store.sqlite"
    (tmp_path / "kill.py").write_text(KILLED_BEFORE_CHECKPOINT)
    command = [sys.executable, str(tmp_path / "kill.py"), "run", str(killed), "--quiet", "--generations", "2",
               "--population", "4"]  # fmt: skip
    environment = {**os.environ, "GI_TEST_KEY": "sk-test", "KILL_AT": "0"}
    process = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, check=False)
    assert process.returncode == -signal.SIGKILL, process.stderr
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0] == 0
        assert db.execute("SELECT COUNT(*) FROM evaluations WHERE generation = 0").fetchone()[0] >= 2
    assert main(["run", str(killed), "--quiet", "--generations", "2", "--population", "4"]) == 0
    resumed = summary_of(tmp_path / "killed")
    assert [(m["id"], m["edits"]) for m in resumed["front"]] == [(m["id"], m["edits"]) for m in expected["front"]]
    assert resumed["generations"] == expected["generations"]
    assert resumed["llm"]["requests"] == expected["llm"]["requests"]


@pytest.mark.slow
def test_a_run_whose_overseer_stepped_in_replays_offline_to_the_same_front(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """The overseer counts the model's requests since an offspring last entered the archive; a
    replay asks as the recorded run's session, so the cached replies count as the requests they
    were, and the overseer re-plans and stops the model where it did in the run."""
    scripted, server = model
    scripted.respond = answering({"rewrite": PADDED, "diff": DIFF.replace("i + 1", "i + 0")})
    config = write_experiment(tmp_path, server.base_url, llm="patience = 2")
    assert main(["run", str(config), "--quiet"]) == 0
    recorded = summary_of(tmp_path)
    assert any("the overseer stopped it" in warning for warning in recorded["warnings"]), recorded["warnings"]
    assert main(["replay", str(config), "--quiet"]) == 0
    replayed = summary_of(tmp_path, "pairs-seed3/replay")
    assert replayed["replay"] == {"history": True, "front": True}
    assert any("the overseer stopped it" in warning for warning in replayed["warnings"]), replayed["warnings"]
    # Nothing was sent: the recorded run's requests are the replay's cache hits.
    assert replayed["llm"]["requests"] == 0 and replayed["llm"]["cache_hits"] >= recorded["llm"]["requests"]
