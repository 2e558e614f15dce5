"""A repair run with the rings first and adaptive operators, killed with SIGKILL part-way, resumes
to the front an uninterrupted run reaches; and `gi replay` of it reaches the same front and
history from its recorded measurements."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gi.cli.main import main
from tests.runs import checkpoints, start_run

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"


def write_config(tmp_path: Path, program: Path, output: Path) -> Path:
    """The windows repair, every operator, the rings for half the generations, adaptive operators."""
    text = (EXPERIMENTS / "windows.toml").read_text()
    text = text.replace('root = "programs/windows"', f'root = "{program}"')
    text = text.replace('output = "runs"', f'output = "{output}"')
    settings = 'population = 6\ngenerations = 6\nneighbourhood = 0.5\noperator_selection = "adaptive"'
    text = text.replace("population = 20\ngenerations = 10", settings)
    assert 'operators = "all"' in text and settings in text
    path = tmp_path / f"{output.name}.toml"
    path.write_text(text)
    return path


def front(summary: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(m["id"], m["edits"], m["objectives"]) for m in summary["front"]]


def history(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per generation, what a resumed run must reach too (not its counts of work done)."""
    return [{k: v for k, v in row.items() if k not in ("evaluations", "cache_hits")} for row in summary["generations"]]


# Exhaustive: tests/run/test_experiment.py resumes a killed run to the same front, and the rings and
# adaptive operator selection are tested in tests/algorithms.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_a_killed_run_with_rings_and_adaptive_operators_resumes_and_replays_the_same(tmp_path: Path) -> None:
    program = EXPERIMENTS / "programs" / "windows"
    whole = write_config(tmp_path, program, tmp_path / "whole")
    assert main(["run", str(whole), "--quiet"]) == 0
    expected = json.loads((tmp_path / "whole" / "windows-repair-seed1" / "summary.json").read_text())
    assert expected["operators"], "the run made offspring"
    # By generation 5, where the second kill falls, the operators' successes have moved their shares.
    shares = next(row["operator_shares"] for row in expected["generations"] if row["generation"] == 5)
    assert len(set(shares.values())) > 1, shares

    # Killed twice: in the rings (generations 0-3 walk them, ceil(0.5 * 7) of 7), and again after
    # generation 5, once adaptive selection has credited operators in NSGA-II's generations.
    killed = write_config(tmp_path, program, tmp_path / "killed")
    store = tmp_path / "killed" / "windows-repair-seed1" / "store.sqlite"
    for checkpoint in (3, 6):
        process = start_run(killed, store, checkpoint)
        assert process.poll() is None, f"the run ended before it could be killed at checkpoint {checkpoint}"
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        assert checkpoints(store) == checkpoint or checkpoints(store) == checkpoint + 1
    command = [sys.executable, "-m", "gi.cli", "run", str(killed), "--quiet"]
    again = subprocess.run(command, check=False, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    resumed = json.loads((store.parent / "summary.json").read_text())
    assert front(resumed) == front(expected)
    assert history(resumed) == history(expected)
    assert resumed["plausible"] == expected["plausible"]

    assert main(["replay", str(whole), "--quiet"]) == 0
    replayed = json.loads((tmp_path / "whole" / "windows-repair-seed1" / "replay" / "summary.json").read_text())
    assert replayed["replay"] == {"history": True, "front": True}
    assert front(replayed) == front(expected)
