"""Runs with the language-model operator against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gi.algorithms import NSGA2, SearchSettings
from gi.algorithms.variation import SHARE_MARGIN
from gi.cli.main import main
from gi.config import load_config
from gi.engine.progress import Progress
from gi.fitness.objectives import OBJECTIVES, Constraint
from gi.model.program import Program
from gi.model.results import Evaluation, Status
from gi.mutators import CROSSOVERS, OPERATORS
from gi.mutators.llm import LLMClient, LLMOperator, LLMSettings
from gi.run.experiment import run_experiment
from tests.llm_server import Action, ModelServer, ScriptedModel, serve

PROGRAM = '''\
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    for i in range(len(values)):
        for j in range(len(values)):
            if i != j and values[i] + values[j] == target:
                return True
    return False
'''

TESTS = """\
from pairs import has_pair_with_sum


def test_found():
    assert has_pair_with_sum([1, 4, 6, 9], 10)


def test_not_found():
    assert not has_pair_with_sum([1, 2, 3], 10)


def test_same_entry_twice_does_not_count():
    assert not has_pair_with_sum([5], 10)
    assert has_pair_with_sum([5, 5], 10)
"""

LINEAR = '''\
Here is a faster version:

```python
def has_pair_with_sum(values, target):
    """True if two different entries of values add up to target."""
    seen = set()
    for value in values:
        if target - value in seen:
            return True
        seen.add(value)
    return False
```
'''

SECRET = "sk-test-0123456789-do-not-leak"


def write_experiment(tmp_path: Path, base_url: str, *, share: float = 0.5, extra: str = "", workers: int = 2) -> Path:
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
workers = {workers}

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = 6
generations = 3

[mutators]
operators = ["statement_delete", "constant"]
llm = {share}

[llm]
base_url = "{base_url}"
model = "scripted"
api_key_env = "GI_TEST_KEY"
api = "chat"
temperature = 0.8
max_requests = 200
timeout = 2
retries = 2
price_prompt = 1.0
price_completion = 2.0
{extra}
""")
    return config


@pytest.fixture
def model() -> Iterator[tuple[ScriptedModel, ModelServer]]:
    scripted = ScriptedModel(default=Action(reply=LINEAR))
    for server in serve(scripted):
        yield scripted, server


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GI_TEST_KEY", SECRET)


def summary_of(tmp_path: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads((tmp_path / "runs" / "pairs-seed3" / "summary.json").read_text())
    return summary


def llm_members(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in summary["front"] if any(e.get("model") for e in m["edits"])]


# Exhaustive: tests/run/test_llm_modes.py brings each mode's edit to the front, the rewrite among them.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_the_linear_rewrite_reaches_the_front_and_is_accounted_for(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    scripted, server = model
    config = write_experiment(tmp_path, server.base_url)
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path)
    members = llm_members(summary)
    assert members, summary["front"]
    # The rewrite changed one statement of the function (its loop): an edit at that statement.
    edit = next(e for e in members[0]["edits"] if e.get("model"))
    assert edit["kind"] == "write_statement", edit
    assert "seen = set()" in edit["source"] and edit["model"] == "scripted" and edit["prompt_tokens"] == 100
    assert members[0]["objectives"]["complexity"] < summary["baseline"]["objectives"]["complexity"]
    row = summary["operators"]["llm.rewrite"]  # the model's rows are by mode: here only rewrites
    assert row["proposals"] >= 1 and row["evaluated"] >= 1 and row["passing"] >= 1 and row["front"] >= 1
    assert row["tokens"] == 150 * summary["llm"]["requests"]
    # Each of the 4 generations asks the model at most its share of 6 mutations, plus a margin,
    # each proposal with at most one retry that feeds its failure back (llm.feedback_retries).
    assert summary["llm"]["requests"] <= 4 * (math.ceil(6 * 0.5) + SHARE_MARGIN) * 2
    assert summary["llm"]["cost"] == pytest.approx(summary["llm"]["requests"] * (100 * 1.0 + 50 * 2.0) / 1e6)
    # The prompt carried the function and the goal, and never a held-out test.
    prompt = scripted.requests[0]["messages"][1]["content"]
    assert "def has_pair_with_sum" in prompt and "simpler" in prompt
    assert scripted.headers[0].get("authorization") == f"Bearer {SECRET}"
    # The report sets the model's edits against the classic operators', with tokens and cost.
    assert any(line.endswith('becomes "seen = set() for value in values: ..." by scripted')
               for line in members[0]["descriptions"]), members[0]["descriptions"]  # fmt: skip
    report = (tmp_path / "runs" / "pairs-seed3" / "report.md").read_text()
    model_row = next(line for line in report.splitlines() if line.startswith("| language model |"))
    assert model_row.endswith(f"| {row['tokens']:.0f} | {summary['llm']['cost']:.4g} |"), model_row
    assert "| classic |" in report

    # Replay from the cache, with the server gone: the same front, and no request made.
    server.stop()
    before = len(scripted.requests)
    assert main(["run", str(config), "--quiet", "--fresh", "--offline"]) == 0
    assert len(scripted.requests) == before
    replayed = summary_of(tmp_path)
    assert [(m["id"], m["edits"]) for m in replayed["front"]] == [(m["id"], m["edits"]) for m in summary["front"]]
    assert replayed["llm"]["requests"] == 0 and replayed["llm"]["cache_hits"] >= 1

    # The key's value appears nowhere under the run folder, nor in the cache.
    for path in (tmp_path / "runs").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_offline_with_an_empty_cache_is_a_clear_error(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], capsys: pytest.CaptureFixture[str]
) -> None:
    scripted, server = model
    config = write_experiment(tmp_path, server.base_url, share=1.0)
    assert main(["run", str(config), "--quiet", "--offline"]) == 2
    error = capsys.readouterr().err
    assert "--offline: no cached reply for request" in error and "Traceback" not in error
    assert scripted.requests == []


@pytest.mark.slow
def test_bad_replies_are_counted_and_cost_no_evaluation(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    scripted, server = model
    scripted.actions = [
        Action(reply="```python\ndef has_pair_with_sum(values, target:\n    return\n```"),  # does not parse
        Action(reply="```python\nclass Pairs:\n    pass\n```"),  # not a function
        Action(reply="```python\ndef other(values, target):\n    return False\n```"),  # another function
        Action(reply=f"```python\n{PROGRAM}```"),  # the same function: a no-op
        Action(status=429),  # retried by the client, then answered
        Action(status=500),
        Action(reply=LINEAR, delay=3.0),  # slower than the 2 s timeout: retried
    ]
    config = write_experiment(tmp_path, server.base_url, share=1.0)
    config.write_text(config.read_text().replace("max_requests = 200", "max_requests = 40"))
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path)
    row = summary["operators"]["llm.rewrite"]
    # Once the rewrite is in a patch, asking again gives the same code back: more no-ops follow.
    assert row["unparseable"] == 1 and row["wrong_kind"] == 2 and row["no_ops"] >= 1
    assert summary["llm"]["requests"] >= 5
    assert llm_members(summary), "after the errors, the good rewrite still arrives"


@pytest.mark.slow
def test_a_server_that_dies_mid_run_leaves_the_run_to_classic_operators(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], capsys: pytest.CaptureFixture[str]
) -> None:
    scripted, server = model
    scripted.actions = [Action(reply=LINEAR), Action(reply=LINEAR), Action(die=True)]
    config = write_experiment(tmp_path, server.base_url, share=0.5)
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path)
    assert summary["llm"]["stopped"] and "in a row" in summary["llm"]["stopped"]
    assert any("the language model stopped" in warning for warning in summary["warnings"])
    assert "gi: warning: the language model stopped" in capsys.readouterr().err
    assert summary["generations"][-1]["generation"] == 3  # the run went on to the end
    classic = {name: row for name, row in summary["operators"].items() if name != "llm"}
    assert sum(row["proposals"] for row in classic.values()) > 0


def test_a_spent_request_budget_stops_the_model(tmp_path: Path, model: tuple[ScriptedModel, ModelServer]) -> None:
    _, server = model
    config = write_experiment(tmp_path, server.base_url, share=1.0)
    text = config.read_text().replace("max_requests = 200", "max_requests = 1")
    config.write_text(text.replace("generations = 3", "generations = 1"))
    assert main(["run", str(config), "--quiet"]) == 0
    summary = summary_of(tmp_path)
    assert summary["llm"]["requests"] == 1
    assert summary["llm"]["stopped"] == "the request budget is spent (1 requests)"
    assert os.environ["GI_TEST_KEY"] == SECRET


def test_replies_that_repeat_programs_are_not_asked_for_endlessly(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer], make_program: Callable[[str], Program]
) -> None:
    scripted, server = model  # every reply is the same rewrite
    client = LLMClient(LLMSettings(base_url=server.base_url, model="scripted", cache=tmp_path / "cache", retries=0))
    population, share = 6, 1.0
    model_operator = LLMOperator(client, "faster", share=share)
    search = NSGA2(
        make_program(PROGRAM),
        [OBJECTIVES.get("failed_tests"), OBJECTIVES.get("size")],
        Constraint.TRAIN_PASS,
        [OPERATORS.get("statement_delete"), OPERATORS.get("constant"), model_operator],
        [CROSSOVERS.get("uniform")],
        SearchSettings(population=population),
        np.random.default_rng(0),
        reference=(4.0, 11.0),
        test_count=3,
    )
    # Its share of the mutations plus a margin, each with one retry that feeds its failure back.
    most = (math.ceil(population * share) + SHARE_MARGIN) * 2
    for generation in range(3):
        before = len(scripted.requests)
        batch = search.ask()
        assert len(scripted.requests) - before <= most, f"generation {generation}"
        if generation == 0:
            assert len(batch) == population, "classic operators fill the slots the model cannot"
        evaluations = [
            Evaluation(Status.OK, c.variant.tree_hash, {"failed_tests": 0.0, "size": float(len(c.patch))})
            for c in batch
        ]
        search.tell(batch, evaluations)
    # The same rewrite again is not evaluated: the operator knows it (novelty), or the batch does.
    rewrite = model_operator.stats.modes["rewrite"]
    assert rewrite.not_novel + search.accounting.get("llm.rewrite", {}).get("duplicates", 0) >= 1


@pytest.mark.slow
def test_candidates_are_evaluated_while_the_model_is_asked_and_the_front_does_not_depend_on_it(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    scripted, server = model
    # The first request's reply is held until an evaluation finishes (a minute at most): a loop
    # that waited for the reply before evaluating anything would leave it held the whole minute.
    evaluated = threading.Event()
    held: list[threading.Event] = []

    def hold_the_first(body: dict[str, Any]) -> Action | None:
        if held:
            return None
        held.append(evaluated)
        return Action(reply=LINEAR, hold=evaluated, delay=60.0)

    scripted.respond = hold_the_first
    scripted.default = Action(reply=LINEAR)
    config = load_config(write_experiment(tmp_path, server.base_url, workers=1))

    def progress(state: Progress, generation_done: bool) -> None:
        if not generation_done and held:
            evaluated.set()

    slow = run_experiment(config, on_progress=progress).summary
    assert scripted.requests
    # An evaluation finished while the model was asked: the generation's other candidates ran
    # while the request waited for its reply.
    assert scripted.released == [True]

    scripted.respond = None
    scripted.default = Action(reply=LINEAR)  # the same replies, at once; the cache is emptied
    shutil.rmtree(config.llm_cache)
    fast = run_experiment(config, fresh=True).summary
    assert [(m["id"], m["edits"]) for m in fast["front"]] == [(m["id"], m["edits"]) for m in slow["front"]]
    assert fast["generations"] == slow["generations"]


# Exhaustive: tests/run/test_replay.py replays a model's run offline from the reply cache.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_two_seeds_draw_replies_of_their_own_from_a_sampling_model_and_each_replays_its_own(
    tmp_path: Path, model: tuple[ScriptedModel, ModelServer]
) -> None:
    """A sampling model answers one prompt with another reply each time it is asked. Two seeds of
    one config share the reply cache: the second seed is answered by the model, not by the first
    seed's draws (runs of several seeds are independent samples); a replay of the first seed,
    the server gone, takes its own replies from the cache and reaches its front."""
    scripted, server = model
    drawn = iter(range(1000))
    scripted.respond = lambda body: Action(reply=LINEAR.replace("seen", f"seen_{next(drawn)}"))
    config = write_experiment(tmp_path, server.base_url, share=1.0)
    assert main(["run", str(config), "--quiet", "--generations", "0", "--population", "4"]) == 0
    first = summary_of(tmp_path)
    asked = len(scripted.requests)
    assert first["llm"]["requests"] == asked >= 2
    assert main(["run", str(config), "--quiet", "--generations", "0", "--population", "4", "--seed", "4"]) == 0
    second: dict[str, Any] = json.loads((tmp_path / "runs" / "pairs-seed4" / "summary.json").read_text())
    assert second["llm"]["cache_hits"] == 0, "the second seed took the first seed's draws"
    assert second["llm"]["requests"] == len(scripted.requests) - asked >= 2

    server.stop()
    assert main(["run", str(config), "--quiet", "--generations", "0", "--population", "4", "--fresh", "--offline"]) == 0
    replayed = summary_of(tmp_path)
    assert [(m["id"], m["edits"]) for m in replayed["front"]] == [(m["id"], m["edits"]) for m in first["front"]]
    assert replayed["llm"]["requests"] == 0 and replayed["llm"]["cache_hits"] == first["llm"]["requests"]
