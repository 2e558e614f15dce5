"""Helpers for tests of whole runs: stopping a `gi run` subprocess part-way to resume it, and
checking a minimised patch on a finished run."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from gi.model.patch import Patch
from gi.studies.minimize import Kept
from gi.studies.rerun import FinishedRun


def checkpoints(store: Path) -> int:
    """How many generations a run store has checkpointed (0 before it exists)."""
    try:
        with sqlite3.connect(store) as db:
            return int(db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0])
    except sqlite3.Error:
        return 0


def start_run(config: Path, store: Path, count: int, *, timeout: float = 300, **popen: object) -> subprocess.Popen[str]:
    """Start `gi run CONFIG --quiet` in its own session and return once its store holds `count`
    checkpoints (or the run ended, or `timeout` passed: the caller checks it still runs)."""
    process: subprocess.Popen[str] = subprocess.Popen(  # type: ignore[call-overload]
        [sys.executable, "-m", "gi.cli", "run", str(config), "--quiet"],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        text=True,
        **{"stderr": subprocess.DEVNULL, **popen},
    )
    deadline = time.monotonic() + timeout
    while checkpoints(store) < count and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return process


def assert_one_minimal(run: FinishedRun, smaller: Patch, kept: Kept) -> None:
    """The minimised patch keeps the member's values, and removing any one of its edits loses them."""
    [(_, evaluation)] = run.evaluate([smaller], "test")
    assert kept(*run.scores(evaluation))
    for index in range(len(smaller)):
        without = Patch(smaller.edits[:index] + smaller.edits[index + 1 :])
        [(_, evaluation)] = run.evaluate([without], "test")
        assert not kept(*run.scores(evaluation)), f"{smaller.edits[index].describe()} could go"
