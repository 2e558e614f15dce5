"""Budgets users think in: evaluations, seconds, and a stop when nothing new is left; the
summary says which stopped the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gi.config import load_config
from gi.engine.store import RunStore
from gi.run.experiment import run_experiment

SOURCE = '''\
def clip(value, low, high):
    """value, at least low and at most high."""
    if value < low:
        return low
    if value > high:
        return high
    return value + 0
'''
TESTS = """\
from clip import clip


def test_inside():
    assert clip(5, 0, 10) == 5


def test_low():
    assert clip(-3, 0, 10) == 0


def test_high():
    assert clip(12, 0, 10) == 10
"""
CONFIG = """\
[experiment]
name = "budget"
seed = 1
output = "runs"

[program]
root = "program"
files = ["clip.py"]

[tests]
train = ["tests"]

[objectives]
minimize = ["failed_tests", "size"]
constraint = "none"

[search]
population = 6
generations = 8
{search}
[mutators]
operators = {operators}
"""


def project(folder: Path, search: str, operators: str = '"all"') -> Path:
    (folder / "program" / "tests").mkdir(parents=True)
    (folder / "program" / "clip.py").write_text(SOURCE)
    (folder / "program" / "tests" / "test_clip.py").write_text(TESTS)
    config = folder / "budget.toml"
    config.write_text(CONFIG.format(search=search, operators=operators))
    return config


def test_a_run_stops_at_its_budget_of_evaluations(tmp_path: Path) -> None:
    summary = run_experiment(load_config(project(tmp_path, "max_evaluations = 15\n"))).summary
    assert summary["stopped"]["reason"] == "max_evaluations"
    assert summary["evaluations"] == summary["stopped"]["evaluations"] == 15
    assert summary["stopped"]["generation"] < 8


def test_a_run_stops_when_nothing_new_is_left(tmp_path: Path) -> None:
    """One edit is all `negate` can make here: once the rings have it, the search finds nothing new."""
    config = project(tmp_path, 'algorithm = "neighbourhood"\npatience = 2\n', '["negate"]')
    summary = run_experiment(load_config(config)).summary
    assert summary["stopped"]["reason"] == "nothing new"
    assert summary["stopped"]["generation"] < 8
    store = RunStore(tmp_path / "runs" / "budget-seed1" / "store.sqlite", read_only=True)
    try:
        assert len(store.evaluations()) == summary["evaluations"] + 1
    finally:
        store.close()


@pytest.mark.slow
def test_a_time_budget_stops_a_run_and_its_replay_at_the_same_generation(tmp_path: Path) -> None:
    """The time decision is recorded per generation: the replay stops where the run stopped,
    however fast it goes."""
    from gi.cli.main import main

    config = project(tmp_path, "max_seconds = 0.001\n")
    summary = run_experiment(load_config(config)).summary
    assert summary["stopped"] == {"reason": "max_seconds", "generation": 0, "evaluations": summary["evaluations"]}
    assert main(["replay", str(config), "--quiet"]) == 0
    replayed = load_config(config)
    again = json.loads((tmp_path / "runs" / "budget-seed1" / "replay" / "summary.json").read_text())
    assert again["stopped"] == summary["stopped"]
    assert again["replay"] == {"history": True, "front": True}
    assert replayed.search.max_seconds == 0.001
