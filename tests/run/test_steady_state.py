"""Steady-state runs of the grading example: killed with SIGKILL mid-generation and after a
checkpoint, a run resumes exactly (with one evaluator, to the front and history of a run never
stopped; with two, keeping every event it recorded), and `gi replay` follows the recorded order
of arrivals offline to the same front and history."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from tests.runs import checkpoints

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
RUN = "grading-simplify-seed1"


def write_config(tmp_path: Path, output: str, workers: int) -> Path:
    text = (EXPERIMENTS / "grading.toml").read_text()
    text = text.replace('root = "programs/grading"', f'root = "{EXPERIMENTS / "programs" / "grading"}"')
    text = text.replace("timeout = 10 ", "timeout = 60 ")  # the original's tests on a loaded machine
    text = text.replace('output = "runs"', f'output = "{tmp_path / output}"')
    text = text.replace("population = 20\ngenerations = 10", "population = 4\ngenerations = 2\nsteady_state = true")
    assert "steady_state = true" in text
    text += f"\n[evaluation]\nworkers = {workers}\n"
    path = tmp_path / f"{output}.toml"
    path.write_text(text)
    return path


def events(store: Path) -> list[tuple[str, str, int]]:
    try:
        with sqlite3.connect(store) as db:
            return [tuple(row) for row in db.execute("SELECT kind, individual, count FROM arrivals ORDER BY seq")]
    except sqlite3.Error:
        return []


def kill_when(config: Path, store: Path, *, told: int = 0, saved: int = 0) -> list[tuple[str, str, int]]:
    """Start `gi run`, SIGKILL it once its store holds `told` results or `saved` checkpoints, and
    return the events it had recorded."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        found = events(store)
        if (told and sum(kind == "told" for kind, _, _ in found) >= told) or (saved and checkpoints(store) >= saved):
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    return events(store)


def summary_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    return data


def front(summary: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(m["id"], m["edits"], m["objectives"]) for m in summary["front"]]


def history(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in ("evaluations", "cache_hits")} for row in summary["generations"]]


# Exhaustive: test_a_steady_state_run_killed_mid_generation_keeps_its_events_and_replays_to_its_front (this
# file).
@pytest.mark.slow
@pytest.mark.exhaustive
def test_with_one_evaluator_a_killed_steady_state_run_resumes_to_the_uninterrupted_front(tmp_path: Path) -> None:
    """With one evaluator the order of arrivals is the order of breeding: the seed alone fixes
    the run, so a run killed mid-generation and again after a checkpoint must finish where a run
    never stopped does."""
    assert main(["run", str(write_config(tmp_path, "whole", 1)), "--quiet"]) == 0
    expected = summary_of(tmp_path / "whole" / RUN)
    assert expected["stopped"]["reason"] == "generations"
    assert len(expected["generations"]) == 3 and expected["evaluators"]["workers"] == 1

    config = write_config(tmp_path, "killed", 1)
    store = tmp_path / "killed" / RUN / "store.sqlite"
    first = kill_when(config, store, told=3)  # in the initial population: no checkpoint yet
    second = kill_when(config, store, saved=2)
    assert second[: len(first)] == first, "the resumed run did again what the killed one recorded"
    command = [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"]
    again = subprocess.run(command, capture_output=True, check=False)
    assert again.returncode == 0, again.stderr
    resumed = summary_of(store.parent)
    assert events(store)[: len(second)] == second
    assert events(store) == events(tmp_path / "whole" / RUN / "store.sqlite")
    assert front(resumed) == front(expected)
    assert history(resumed) == history(expected)


@pytest.mark.slow
def test_a_steady_state_run_killed_mid_generation_keeps_its_events_and_replays_to_its_front(tmp_path: Path) -> None:
    """With two evaluators the order of arrivals is the machine's: the resumed run keeps every
    event recorded before the kill, and its replay, offline, follows them all to its front."""
    config = write_config(tmp_path, "two", 2)
    store = tmp_path / "two" / RUN / "store.sqlite"
    recorded = kill_when(config, store, told=6)  # mid-way through generation 1
    assert checkpoints(store) == 1
    assert main(["run", str(config), "--quiet"]) == 0
    finished = events(store)
    assert finished[: len(recorded)] == recorded
    assert sum(kind == "told" for kind, _, _ in finished) == 4 * 3, "every candidate bred is told"
    summary = summary_of(store.parent)
    assert summary["stopped"]["reason"] == "generations" and summary["evaluators"]["busy"] > 0

    assert main(["replay", str(config), "--quiet"]) == 0
    replayed = summary_of(store.parent / "replay")
    assert replayed["replay"] == {"history": True, "front": True}
    assert replayed["measurements"]["measured"] == {}, "nothing measured anew"
    assert front(replayed) == front(summary)
    assert events(store.parent / "replay" / "store.sqlite") == finished
