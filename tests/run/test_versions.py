"""A run records the versions of gi and libcst that made it; resuming or replaying it under
another libcst is refused (its stored locations are paths of libcst's field names), under
another gi it goes on with a warning (its evaluations stand as that gi made them)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from gi.cli.main import main
from gi.engine.store import tool_versions
from tests.hostile.attacks import CALC, TRAINING

CONFIG = """\
[experiment]
name = "ledger"
seed = 1
output = "runs"

[program]
root = "ledger"
files = ["calc.py"]

[tests]
train = ["tests"]

[objectives]
minimize = ["failed_tests", "size"]
constraint = "none"

[search]
population = 4
generations = 1

[mutators]
operators = ["constant", "expression_replace"]

[evaluation]
workers = 1
engine = "cold"
"""


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    """A finished one-generation run; its config."""
    (tmp_path / "ledger" / "tests").mkdir(parents=True)
    (tmp_path / "ledger" / "calc.py").write_text(CALC)
    (tmp_path / "ledger" / "tests" / "test_calc.py").write_text(TRAINING)
    config = tmp_path / "ledger.toml"
    config.write_text(CONFIG)
    assert main(["run", str(config), "--quiet"]) == 0
    return config


def made_by(config: Path, **versions: str) -> None:
    """Say in the run's store that other versions made it."""
    with sqlite3.connect(config.parent / "runs" / "ledger-seed1" / "store.sqlite") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'versions'", (json.dumps({**tool_versions(), **versions}),))


def test_a_run_records_the_versions_that_made_it(finished: Path) -> None:
    with sqlite3.connect(finished.parent / "runs" / "ledger-seed1" / "store.sqlite") as db:
        [(value,)] = db.execute("SELECT value FROM meta WHERE key = 'versions'").fetchall()
    assert json.loads(value) == tool_versions() and set(tool_versions()) == {"gi", "libcst"}


def test_resuming_or_replaying_under_another_libcst_is_refused(
    finished: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    made_by(finished, libcst="0.0.1")
    assert main(["run", str(finished), "--quiet"]) == 2
    assert "made with libcst 0.0.1" in capsys.readouterr().err
    assert main(["replay", str(finished), "--from", str(finished.parent / "runs" / "ledger-seed1"), "--quiet"]) == 2
    assert "libcst==0.0.1" in capsys.readouterr().err


def test_resuming_under_another_gi_goes_on_and_says_so(finished: Path) -> None:
    made_by(finished, gi="0.0.1")
    assert main(["run", str(finished), "--quiet"]) == 0
    summary = json.loads((finished.parent / "runs" / "ledger-seed1" / "summary.json").read_text())
    assert any("made by gi 0.0.1" in warning for warning in summary["warnings"]), summary["warnings"]
