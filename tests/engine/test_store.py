from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from gi.engine.store import Checkpoint, IndividualRecord, RunStore
from gi.model.errors import StoreError
from gi.model.results import Evaluation, Status


def test_store_round_trips_through_a_real_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    store = RunStore(path)
    evaluation = Evaluation(Status.OK, "h1", {"failed_tests": 0.0}, {"t::a": "passed"}, "", 0.5)
    rng = np.random.default_rng(3)
    rng.random()
    with store.transaction():
        store.put_evaluation(evaluation, individual="g0-i0", generation=0)
        store.put_evaluation(evaluation, individual="g0-i1", generation=0)  # same program: kept once
        store.put_individual(IndividualRecord("g0-i0", 0, "h1", [], (), "original"))
        store.checkpoint(Checkpoint(0, ["g0-i0"], ["g0-i0"], rng.bit_generator.state, {"hypervolume": 1.5}))
    store.close()

    again = RunStore(path)
    assert again.evaluations() == {"h1": evaluation}
    assert [row[1] for row in again.evaluation_log()] == ["g0-i0"]
    checkpoint = again.last_checkpoint()
    assert checkpoint is not None and checkpoint.population == ["g0-i0"]
    restored = np.random.default_rng(0)
    restored.bit_generator.state = checkpoint.rng
    assert restored.random() == rng.random()
    assert again.individuals(["g0-i0"])[0].operator == "original"
    assert again.history() == [{"hypervolume": 1.5}]


def test_a_failed_transaction_leaves_no_trace(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store.sqlite")
    with pytest.raises(RuntimeError), store.transaction():
        store.put_individual(IndividualRecord("g0-i0", 0, "h", [], (), "x"))
        raise RuntimeError("killed")
    assert store.count_individuals() == 0


def test_a_file_that_is_no_store_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a gi run store"):
        RunStore(path)


def test_a_checkpoint_naming_a_missing_individual_is_a_clear_error(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "store.sqlite")
    with pytest.raises(StoreError, match="'g9-i9', which is not stored"):
        store.individuals(["g9-i9"])


@pytest.mark.parametrize("where", ["a folder", "under a file", "under /proc"])
def test_a_store_that_cannot_be_opened_for_writing_is_a_clear_error(tmp_path: Path, where: str) -> None:
    # As root, permission bits stop nothing; no one can create a file inside a regular file or in /proc.
    if where == "under /proc" and not Path("/proc/self").exists():
        pytest.skip("no /proc on this system")
    (tmp_path / "plain").write_text("")
    path = {
        "a folder": tmp_path,
        "under a file": tmp_path / "plain" / "store.sqlite",
        "under /proc": Path("/proc/gi-store-test.sqlite"),
    }[where]
    problem = "it is a folder, not a file" if where == "a folder" else "cannot open the run store for writing"
    with pytest.raises(StoreError, match=problem) as raised:
        RunStore(path)
    assert str(raised.value).startswith(f"{path}: ")


def test_a_meta_row_that_is_not_json_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    RunStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = 'not json' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="not a gi run store"):
        RunStore(path)
