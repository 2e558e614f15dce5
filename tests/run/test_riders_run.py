"""A speed run whose front would carry junk riding on a real speed-up: a scripted model offers
one linear rewrite of a quadratic function (a real speed-up, tens of times), and the classic
operators add edits that change nothing the workload measures (constants of a tuple nothing
reads, the module's docstring deleted). A program with the rewrite and junk is as fast as the
rewrite alone, so its screening ratio is below the rewrite's about half the time, and one such
program on the search's front is the bloat of issue 28. The summary must name it in `riders`,
beside the rewrite alone it is no better than (or a smaller rider), and leave it off the front.

Whether the search's front holds such a program at all is up to timing noise: a run makes four
to eight junk programs after the rewrite, and when the rewrite's own screening happened to be
fast, none of them is screened faster and the front is the rewrite alone. That is one seed in
eight on a quiet machine (of seeds 1 to 8 only seed 1 missed), but a CI run of the whole suite
missed seeds 1, 2 and 3. The test tries the next seed until one run's front holds junk, up to
eight; each miss costs a run of about 20 seconds."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from gi.engine.store import RunStore
from tests.llm_server import Action, ModelServer, ScriptedModel, serve
from tests.run.test_llm_runs import LINEAR, TESTS
from tests.run.test_llm_runs import PROGRAM as QUADRATIC

#: test_llm_runs' quadratic function and its tests, and a tuple nothing reads: an edit there
#: changes nothing the workload measures.
PROGRAM = (
    '''\
"""Pairs of entries that add up to a target."""

LIMITS = (10, 20, 30, 40, 50, 60)


'''
    + QUADRATIC
)

#: No pair of even numbers adds up to an odd target: the quadratic version scans every pair.
WORKLOAD = """\
from pairs import has_pair_with_sum

VALUES = list(range(0, 400, 2))


def run():
    return has_pair_with_sum(VALUES, 3)
"""


def write_experiment(tmp_path: Path, base_url: str, seed: int) -> Path:
    program = tmp_path / "pairs"
    (program / "tests").mkdir(parents=True, exist_ok=True)
    (program / "pairs.py").write_text(PROGRAM)
    (program / "workload.py").write_text(WORKLOAD)
    (program / "tests" / "test_pairs.py").write_text(TESTS)
    config = tmp_path / f"pairs-{seed}.toml"
    config.write_text(f"""\
[experiment]
name = "pairs"
seed = {seed}
output = "runs"

[program]
root = "pairs"
files = ["pairs.py"]

[tests]
train = ["tests"]
timeout = 20

[objectives]
minimize = ["failed_tests", "runtime", "size"]
constraint = "train_pass"

[search]
population = 8
generations = 3

[mutators]
operators = ["statement_delete", "constant"]
llm = 0.3

[llm]
base_url = "{base_url}"
model = "scripted"
api_key_env = "GI_TEST_KEY"
api = "chat"
timeout = 5

[workload]
call = "workload:run"
rigorous_processes = 8
""")
    return config


@pytest.fixture
def model() -> Iterator[ModelServer]:
    yield from serve(ScriptedModel(default=Action(reply=LINEAR)))


def by_model(edits: list[dict[str, Any]]) -> bool:
    return any(edit.get("model") for edit in edits)


# Exhaustive: tests/engine/test_riders.py judges riders on recorded timings; this whole run with real
# timing runs alone (the other test process idles the while).
@pytest.mark.slow
@pytest.mark.exhaustive
@pytest.mark.timing
def test_junk_riding_on_a_real_speed_up_is_named_and_left_off_the_front(
    tmp_path: Path, model: ModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GI_TEST_KEY", "sk-test")
    for seed in range(1, 9):
        config = write_experiment(tmp_path, model.base_url, seed)
        assert main(["run", str(config), "--quiet"]) == 0
        run = tmp_path / "runs" / f"pairs-seed{seed}"
        summary = json.loads((run / "summary.json").read_text())
        front = {member["id"]: member for member in summary["front"]}
        # The rewrite alone is on the front, rigorously faster than the original.
        [rewrite] = [m for m in front.values() if by_model(m["edits"]) and len(m["edits"]) == 1]
        assert rewrite["speedup"]["significant"] and rewrite["speedup"]["value"] > 5, rewrite["speedup"]
        if summary["riders"]:
            break
    else:
        pytest.fail("no run's front carried junk beside the rewrite in eight seeds")

    riders = {rider["id"]: rider for rider in summary["riders"]}
    for rider in riders.values():
        assert rider["id"] not in front, "a rider is left off the front"
        # The rewrite and junk: the edits of the rewrite alone are a part of the rider's.
        assert len(rider["edits"]) > 1 and any(text.endswith("by scripted") for text in rider["edits"]), rider
        # It does no better than the rewrite alone, or than another rider whose edits are a
        # part of its own (rewrite, junk and more junk is judged beside rewrite and junk first
        # when timing noise made it look faster than the rewrite alone); each such chain ends
        # at the rewrite.
        smaller = rider
        while smaller["no_better_than"] in riders:
            larger, smaller = smaller, riders[smaller["no_better_than"]]
            assert set(smaller["edits"]) < set(larger["edits"]), (larger, smaller)
        assert smaller["no_better_than"] == rewrite["id"], (rider, smaller)
    # Judged on a rigorous session of the two side by side, recorded in the store (for a replay).
    store = RunStore(run / "store.sqlite", read_only=True)
    try:
        sessions = store.measurements("speedup:")
    finally:
        store.close()
    side_by_side = [verdict for key, verdict in sessions.items() if ":over:" in key]
    assert side_by_side and not all(verdict.get("significant") for verdict in side_by_side), sessions
    report = (run / "report.md").read_text()
    assert f"Left off the front: {summary['riders'][0]['id']}" in report
