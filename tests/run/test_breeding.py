"""Breeding beside evaluation: each candidate is evaluated as soon as it is bred, and the batch
is the seed's whatever finishes first."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from gi.config import load_config
from gi.engine.progress import Progress
from gi.run.experiment import run_experiment

#: 600 small functions: libcst writes the whole module out again for each candidate and hashes
#: its tree, tens of milliseconds a candidate, as on a real project's modules (toolz: 0.25-0.38 s
#: a generation of 10).
FUNCTIONS = 600
FUNCTION = "def f{i}(x):\n    if x > {i}:\n        y = x - {i}\n        return y\n    return x + {i}\n"
MODULE = "\n\n".join(FUNCTION.format(i=i) for i in range(FUNCTIONS))
TESTS = f"""\
import big


def test_every_function():
    for i in range({FUNCTIONS}):
        assert getattr(big, f"f{{i}}")(i + 1) == 1
        assert getattr(big, f"f{{i}}")(0) == i
"""


def write_config(tmp_path: Path, name: str, workers: int) -> Path:
    program = tmp_path / "big"
    (program / "tests").mkdir(parents=True, exist_ok=True)
    (program / "big.py").write_text(MODULE)
    (program / "tests" / "test_big.py").write_text(TESTS)
    config = tmp_path / f"{name}.toml"
    config.write_text(f"""\
[experiment]
name = "{name}"
seed = 4
output = "runs"

[program]
root = "big"
files = ["big.py"]

[tests]
train = ["tests"]
timeout = 30

[evaluation]
workers = {workers}

[objectives]
minimize = ["failed_tests", "complexity", "size"]

[search]
population = 10
generations = 2

[mutators]
operators = ["statement_delete", "comparison_operator", "constant"]
""")
    return config


def evaluations(summary_folder: Path) -> list[tuple[str, str, Any]]:
    lines = (summary_folder / "evaluations.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    return [(row["tree_hash"], row["status"], row["measures"].get("failed_tests")) for row in rows]


@pytest.mark.slow
def test_candidates_are_evaluated_while_the_rest_are_bred_and_the_run_does_not_depend_on_it(tmp_path: Path) -> None:
    breeding: list[bool] = []  # at each evaluation's end: whether the generation was still being bred

    def progress(state: Progress, generation_done: bool) -> None:
        if not generation_done:
            breeding.append(any(thread.name == "gi-breeding" for thread in threading.enumerate()))

    one = run_experiment(load_config(write_config(tmp_path, "one", workers=1)), on_progress=progress)
    assert any(breeding), "every evaluation ended after its generation was bred"
    # Two workers finish the candidates in another order: the batches, their evaluations in the
    # store and the front are the seed's all the same.
    two = run_experiment(load_config(write_config(tmp_path, "two", workers=2)))
    assert evaluations(two.folder) == evaluations(one.folder)
    assert len(evaluations(one.folder)) > 10
    front = [(member["id"], member["edits"]) for member in one.summary["front"]]
    assert [(member["id"], member["edits"]) for member in two.summary["front"]] == front
